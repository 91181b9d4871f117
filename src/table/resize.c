/*
 * src/table/resize.c - resizing a relativistic hash table while lookups and
 * updates go on.  The thread that resizes tables automatically is in
 * src/table/autoresize.c.
 *
 * The algorithm is from Josh Triplett, Paul E. McKenney and Jonathan
 * Walpole, "Resizable, Scalable, Concurrent Hash Tables via Relativistic
 * Programming", USENIX ATC 2011 (explained for the Linux kernel's version in
 * Jonathan Corbet, "Relativistic hash tables, part 1: Algorithms", LWN,
 * 2014).  Its premise: a lookup compares keys anyway, so a chain may hold
 * nodes of other buckets for a while, as long as it holds every node of its
 * own.  Sizes change by powers of two with the same hash (bucket = hash &
 * mask), so old bucket i splits into new buckets i and i + N, and merging
 * goes the other way.
 *
 * SHRINK, any factor, one grace period (shrink_step()).  For each new bucket
 * j, under j's family lock: point it at the first non-empty old chain among
 * j, j + M, j + 2M, ..., and splice each following old chain onto the tail
 * of the previous one, in split order (splice_family()).  Readers of the
 * old table walking old chain j now run on into chains of other old
 * buckets: harmless, their own nodes are all still before.  Publish the
 * new array, wait one grace period (no reader still uses the old array),
 * free it.
 *
 *      old:  [j] -> a1 -> a2          new: [j] -> a1 -> a2 -> b1 -> b2
 *            [j+M] -> b1 -> b2                          ^
 *                                       old [j+M] ------'
 *
 * EXPAND, by doubling (expand_step(); a factor 2^k repeats the step).  For
 * each old bucket f, under its family lock: point new buckets f and f + N at
 * the first node of each in old chain f.  The chains are now "zipped": each
 * new bucket's chain holds its own nodes and, interleaved, its sibling's.
 * Publish, and wait one grace period, after which no reader uses the old
 * array.  Then UNZIP in passes.  In each pass, every family whose chains
 * still cross gets exactly one `next` pointer changed, then one grace period
 * passes before the next pass, unless every patch of the pass left its
 * family clean: nothing then needs the grace period (doc/DESIGN.md section
 * 8, "No grace period after the last patch"), so chains in split order
 * (one crossing each) cost a doubling only its publication's.
 *
 *   zipped:   [f]   -> a1 -> b1 -> a2 -> b2        (a: bucket f, b: f + N)
 *             [f+N] --------^
 *   pass 1:   a1->next = a2       [f] -> a1 -> a2 -> b2 ; [f+N] -> b1 -> a2
 *   pass 2:   b1->next = b2       [f+N] -> b1 -> b2
 *   pass 3:   a2->next = NULL     clean
 *
 * Which pointer (unzip_family()): walk each bucket's clean prefix, the run
 * of its own nodes from its head.  Where a prefix ends at a foreign node F,
 * that is a crossing P -> F.  The chains merge where one crossing leads into
 * the other bucket's clean prefix; that crossing is the one to patch: P is
 * unreachable for the other bucket's readers (they reach F through their own
 * nodes, never through P), so pointing P past the foreign run, at the next
 * node of P's own bucket, changes nothing any reader of the skipped nodes
 * could be traversing.  A reader of P's bucket standing on P follows either
 * the old pointer (and walks the foreign run to the same next node) or the
 * new one.
 *
 * Why one change per family per grace period: with a1 -> b1 -> a2 -> b2, a
 * reader of bucket a can read a1->next (= b1) just before pass 1 changes it
 * and then stand on b1.  If b1->next changed to b2 in the same grace period,
 * that reader would skip a2, a node of its own bucket.  After a grace period
 * no reader can still be standing where the previous change left it, so the
 * set of positions a reader can occupy is again exactly what the current
 * pointers reach, and the argument above applies afresh.  Which crossing to
 * patch is decided afresh under the lock at every pass, because updates in
 * between insert and remove nodes; what a pass remembers across the grace
 * period is only each bucket's cursor, a node of its clean prefix from
 * which the next pass walks on, kept valid by the updates (I5, and
 * doc/DESIGN.md section 8, "Cursors").
 *
 * Updates during a step keep the invariants of src/table/table_internal.h (I1
 * to I3, and I5 through move_cursor() in src/table/table.c); the unzipper
 * keeps I4, and I1, I2 and I5 with each change it makes.  A shrunk family
 * accepts updates as soon as it is spliced, an expanded one as soon as its new
 * heads are set; unzipping takes each family's lock for one pass, so removals
 * never race with a patch.  The resizer never holds a lock across a grace
 * period, and no updater waits for one (back-pressure, in
 * src/table/autoresize.c, waits for the resize thread, outside sections).
 *
 * Lock striping: the lock of a family is hash & lock_mask, with lock_mask
 * no wider than the smallest array in use, so one lock covers a bucket and
 * every bucket it splits into or merges with.  Shrinking below the number of
 * locks narrows the mask first, growing widens it after; both hold every
 * lock for the instant of the change.
 */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include <relhash/epoch.h>
#include <relhash/table.h>

#include "alloc.h"
#include "atomics.h"
#include "debug.h"
#include "futex.h"
#include "table_internal.h"
#include "util.h"

void rh_wait_grace_period(struct relhash_table *t)
{
	relhash_synchronize();
	rh_add_relaxed(&t->stat_grace_periods, 1);
}

/*
 * Wake the inserters that back-pressure holds (rh_autoresize_throttle()):
 * the size or the resize thread's state changed, or there is unzip work
 * they can help with.  The increment follows
 * the change (release), and a throttled inserter reads the word before it
 * looks at the state: it either sees the change, or its futex wait finds
 * the word changed and returns at once.
 */
void rh_announce_growth(struct relhash_table *t)
{
	rh_fetch_add(&t->growth_seq, 1);
	rh_futex_wake_all(&t->growth_seq);
}

/*
 * A pass over families is bound by memory latency: each family's first
 * node is a cache miss at a random address.  Starting the load of the
 * node PREFETCH_AHEAD families ahead keeps several misses in flight
 * (prefetching a NULL or stale pointer is harmless: a prefetch never
 * faults, and the pass re-reads every pointer under the family's lock).
 */
#define PREFETCH_AHEAD 8

static inline void prefetch_node(const struct relhash_node *n)
{
	__builtin_prefetch(n);
}

void rh_lock_all(struct relhash_table *t)
{
	size_t i;

	for (i = 0; i < t->nlocks; i++)
		rh_lock_index(t, i);
}

void rh_unlock_all(struct relhash_table *t)
{
	size_t i;

	for (i = t->nlocks; i-- > 0;)
		rh_unlock(t, i);
}

void rh_set_lock_mask(struct relhash_table *t, size_t nbuckets)
{
	size_t i;

	for (i = 0; i < t->nlocks; i++)
		rh_assert_held(&t->locks[i]);
	rh_store(&t->lock_mask, (t->nlocks < nbuckets ? t->nlocks : nbuckets) - 1);
}

/* Use min(nlocks, nbuckets) locks. */
static void set_lock_span(struct relhash_table *t, size_t nbuckets)
{
	size_t mask = (t->nlocks < nbuckets ? t->nlocks : nbuckets) - 1;

	/* Relaxed: only holders of resize_lock (ours) store it. */
	if (rh_load(&t->lock_mask) == mask)
		return;
	rh_lock_all(t);
	rh_set_lock_mask(t, nbuckets);
	rh_unlock_all(t);
}

/*
 * The part of a step that shrinking and expanding share: link each of the
 * nfamilies families of new to the chains of the current array (link, under
 * the family's lock, advancing `linked` so updaters keep both arrays right
 * from then on), publish new, wait one grace period so that no reader or
 * updater still uses the old array, and free it.
 */
static void switch_arrays(struct relhash_table *t, struct relhash__buckets *new,
                          size_t nfamilies,
                          void (*link)(const struct relhash_table *t,
                                       struct relhash__buckets *old,
                                       struct relhash__buckets *new, size_t f))
{
	/* Relaxed: only resizes store it, under resize_lock (ours). */
	struct relhash__buckets *old = rh_load(&t->pub.buckets);
	size_t f, lock;

	rh_store(&t->linked, 0);
	/* Release: an updater that sees this array also sees linked reset
	 * (and, when expanding, the zip mask set). */
	rh_store_release(&t->future, new);
	rh_debug_yield();
	for (f = 0; f < nfamilies; f++) {
		if (f + PREFETCH_AHEAD <= old->mask)
			prefetch_node(rh_load(&relhash__heads(old)[f + PREFETCH_AHEAD]));
		lock = rh_lock_family(t, f);
		link(t, old, new, f);
		rh_store(&t->linked, f + 1);
		rh_check_resized_family(t, f, nfamilies);
		rh_unlock(t, lock);
		rh_debug_yield();
	}
	/* Release: readers that load the new array see its heads. */
	rh_publish(&t->pub.buckets, new);
	rh_announce_growth(t);
	rh_debug_yield();
	/* Updaters run inside read-side sections, so after this none looks
	 * at the old array either. */
	rh_wait_grace_period(t);
	rh_store(&t->future, NULL);
	rh_free(old);
}

/* ------------------------------------------------------------------ */
/* Shrink                                                              */

/*
 * The next old chain, as an index r < 2^k (old bucket j + r * M), to
 * splice after chain r: r counts in bit-reversed order (add one at the
 * top bit, carrying downwards), and returns to 0 after the last.
 */
static size_t next_in_split_order(size_t r, size_t k_top)
{
	size_t bit = k_top;

	if (RH_TEST_BUG(SPLICE_IN_INDEX_ORDER))
		return (r + 1) & (2 * k_top - 1);
	for (; r & bit; bit >>= 1)
		r ^= bit;
	return r | bit;
}

/*
 * Splice old buckets j + r * M (r < 2^k = N / M) into new bucket j, each
 * old chain onto the previous one's tail, in split order: r in
 * bit-reversed order.  The new chain then holds first every node whose
 * hash bit log2(M) is 0, then those where it is 1, and within each half
 * the same by the next bit, and so on (doc/DESIGN.md section 7, "Split
 * order"): a later doubling finds the chain unzipped but for one crossing.
 * Family lock held.
 */
static void splice_family(const struct relhash_table *t,
                          struct relhash__buckets *old,
                          struct relhash__buckets *new, size_t j)
{
	rh_link *old_heads = relhash__heads(old);
	struct relhash_node *last = NULL, *n;
	size_t m = new->mask + 1, k_top = (old->mask + 1) / m / 2, r = 0;

	do {
		n = rh_chain_load(t, j, &old_heads[j + r * m]);
		if (!n)
			continue;
		if (last)
			/* Old readers reach this tail: publish. */
			rh_publish(&last->next, n);
		else
			/* Not yet published: the release of the array's
			 * publication covers this store. */
			rh_store(&relhash__heads(new)[j], n);
		/* The family is at rest between steps: old chain i holds
		 * only bucket i's nodes and ends in NULL (I1). */
		for (last = n; (n = rh_chain_load(t, j, &last->next)); last = n)
			;
	} while ((r = next_in_split_order(r, k_top)) != 0);
}

static void shrink_step(struct relhash_table *t, struct relhash__buckets *new)
{
	set_lock_span(t, new->mask + 1);
	switch_arrays(t, new, new->mask + 1, splice_family);
	rh_add_relaxed(&t->stat_resizes, 1);
	rh_check_table(t);
}

/* ------------------------------------------------------------------ */
/* Expand                                                              */

/* Point new buckets f and f + N into old chain f, which holds every node
 * of both (I2 in the old array): I2 holds in the new one.  Family lock
 * held. */
static void link_family(const struct relhash_table *t,
                        struct relhash__buckets *old,
                        struct relhash__buckets *new, size_t f)
{
	struct relhash_node *chain = rh_chain_load(t, f, &relhash__heads(old)[f]);
	rh_link *heads = relhash__heads(new);
	size_t n = old->mask + 1;

	/* Not yet published: the array's publication covers these. */
	rh_store(&heads[f], rh_first_in(t, chain, new->mask, f));
	rh_store(&heads[f + n], rh_first_in(t, chain, new->mask, f + n));
}

/*
 * Walk bucket i's clean prefix, the run of its own nodes from its head,
 * starting from *cursor, a node of that prefix found by an earlier pass
 * (NULL: from the head).  Leaves *cursor at the prefix's last node and
 * *link at the pointer that leads out of it: the head itself when the
 * prefix is empty (a removal can leave a head pointing at a node of the
 * sibling bucket), else the last node's next.  Returns the foreign node
 * that pointer leads to, or NULL when the whole chain is clean.
 *
 * The cursor stays valid across grace periods (I5): updates add nodes only
 * at heads or within the clean prefix, which stays clean and only grows,
 * and remove nodes only by skipping them (I3), and a removal or
 * replacement of the cursor node itself resets or moves the cursor
 * (move_cursor() in table.c).  Without it every pass would walk
 * every prefix again: quadratic in the chain length.  Family lock held.
 */
static struct relhash_node *clean_prefix(const struct relhash_table *t,
                                         rh_link *heads, size_t mask,
                                         size_t i, rh_link *cursor,
                                         rh_link **link)
{
	struct relhash_node *n, *last = rh_load(cursor);

	rh_assert_family_locked(t, i);
	*link = last ? &last->next : &heads[i];
	for (n = rh_chain_load(t, i, *link); n && rh_node_in(n, mask, i);
	     n = rh_chain_load(t, i, *link)) {
		last = n;
		*link = &n->next;
	}
	/* Atomic: prefetch_family() reads cursors without the lock. */
	rh_store(cursor, last);
	return n;
}

/* What one unzip pass did to a family (unzip_family()). */
enum rh_unzip_result {
	UNZIP_CLEAN,       /* nothing to change: the family was clean */
	UNZIP_PATCHED,     /* one pointer changed, crossings remain */
	UNZIP_LAST_PATCH,  /* one pointer changed, and now it is clean */
};

/*
 * One unzip pass over family {a, b} of array arr: change at most one
 * pointer (I4).  Family lock held.  The caller waits a grace period before
 * the next pass over a family that UNZIP_PATCHED leaves zipped; a family
 * that the last patch left clean needs none (doc/DESIGN.md section 8, "No
 * grace period after the last patch").
 */
static enum rh_unzip_result unzip_family(const struct relhash_table *t,
                                         struct relhash__buckets *arr,
                                         size_t a, size_t b,
                                         rh_link *cursors)
{
	rh_link *heads = relhash__heads(arr);
	rh_link *link_a, *link_b;
	struct relhash_node *cross_a, *cross_b, *next_a, *next_b;
	bool last;

	cross_a = clean_prefix(t, heads, arr->mask, a, &cursors[a], &link_a);
	cross_b = clean_prefix(t, heads, arr->mask, b, &cursors[b], &link_b);
	if (!cross_a && !cross_b)
		return UNZIP_CLEAN;
	/*
	 * Exactly one crossing leads into the other bucket's clean prefix
	 * (I4; doc/DESIGN.md, "Unzipping: which pointer").  a's does iff the
	 * run of b-nodes from cross_a ends where b's prefix ends, at cross_b:
	 * if cross_a came after cross_b on b's chain, that run could not reach
	 * cross_b without a cycle.  The run is the one the patch skips anyway,
	 * so the test costs nothing.
	 */
	if (cross_a && (next_a = rh_first_in(t, cross_a, arr->mask, a)) == cross_b) {
		rh_publish(link_a, next_a);
		/* Clean now iff a's chain ends after its prefix; then b's
		 * had no crossing either (cross_b == next_a == NULL). */
		last = !next_a;
	} else {
		next_b = rh_first_in(t, cross_b, arr->mask, b);
		rh_publish(link_b, next_b);
		/* next_b is where a's prefix ends (cross_a): the second test
		 * is implied, and kept as the plain statement of "clean". */
		last = !next_b && !cross_a;
	}
	/* The deliberate bug: every patch taken for the last. */
	if (RH_TEST_BUG(LAST_PATCH_EARLY))
		last = true;
	return last ? UNZIP_LAST_PATCH : UNZIP_PATCHED;
}

/* Where the next unzip pass over family {f, f + n} starts reading. */
static void prefetch_family(const struct relhash__buckets *arr, size_t f,
                            size_t n, const rh_link *cursors)
{
	const struct relhash_node *c;

	c = rh_load(&cursors[f]);
	prefetch_node(c ? c : rh_load(&relhash__heads(arr)[f]));
	c = rh_load(&cursors[f + n]);
	prefetch_node(c ? c : rh_load(&relhash__heads(arr)[f + n]));
}

/* ------------------------------------------------------------------ */
/* Unzip passes, shared with throttled inserters                       */

/*
 * One unzip pass: each family in dirty[0, ndirty) gets one call of
 * unzip_family(), and those still zipped after it are appended to kept,
 * the next pass's list; npatched counts the families it changed.  The
 * workers, the resizer and the inserters that back-pressure holds
 * (rh_help_unzip()), claim chunks of UNZIP_CHUNK entries through next
 * (doc/DESIGN.md, "Helping").  The resizer writes the fields other than
 * next, nkept and npatched while no helper is registered; helpers read
 * them after registering (see rh_help_unzip() for why they see them).
 */
#define UNZIP_CHUNK 64

struct rh_unzip_pass {
	struct relhash__buckets *arr;  /* the array being unzipped */
	size_t n;                      /* its families: buckets f, f + n */
	rh_link *cursors;              /* per bucket (clean_prefix()) */
	const size_t *dirty;           /* the families of this pass */
	size_t ndirty;
	size_t *kept;                  /* the families of the next pass */
	_Atomic size_t nkept;          /* entries of kept taken */
	_Atomic size_t npatched;       /* families changed in this pass */
	_Atomic size_t next;           /* first entry not claimed */
};

/* t->help_state: helpers may register, and how many are registered. */
#define HELP_OPEN 0x80000000u

/* Chunks a helper does per call (4,096 families), so that its caller can
 * keep to the time bound of back-pressure between calls. */
#define HELP_MAX_CHUNKS 64

/* The first entry of the next unclaimed chunk, or >= ndirty: none left. */
static size_t claim_chunk(struct rh_unzip_pass *p)
{
	/* Relaxed: the read-modify-write alone makes each chunk one
	 * worker's; what the work reads was written before the pass
	 * opened (or is read under family locks). */
	return rh_add_fetch_relaxed(&p->next, UNZIP_CHUNK) - UNZIP_CHUNK;
}

/* One chunk of pass p: entries [begin, end) of its list. */
static void unzip_chunk(struct relhash_table *t, struct rh_unzip_pass *p,
                        size_t begin, size_t end)
{
	size_t kept[UNZIP_CHUNK], nkept = 0, npatched = 0, base, k, f, lock;
	enum rh_unzip_result r;

	for (k = begin; k < end && k < begin + PREFETCH_AHEAD; k++)
		prefetch_family(p->arr, p->dirty[k], p->n, p->cursors);
	for (k = begin; k < end; k++) {
		f = p->dirty[k];
		if (k + PREFETCH_AHEAD < end)
			prefetch_family(p->arr, p->dirty[k + PREFETCH_AHEAD],
			                p->n, p->cursors);
		lock = rh_lock_family(t, f);
		if (RH_TEST_BUG(UNZIP_TWICE))
			unzip_family(t, p->arr, f, f + p->n, p->cursors);
		r = unzip_family(t, p->arr, f, f + p->n, p->cursors);
		if (r == UNZIP_PATCHED)
			kept[nkept++] = f;
		npatched += r != UNZIP_CLEAN;
		rh_check_resized_family(t, f, p->n);
		rh_unlock(t, lock);
		rh_debug_yield();
	}
	/* Relaxed: the resizer reads it once every worker has left the
	 * pass (close_pass()). */
	rh_add_relaxed(&p->npatched, npatched);
	if (!nkept)
		return;
	/* Relaxed: only the reservation must be atomic; the resizer reads
	 * kept once every worker has left the pass (close_pass()). */
	base = rh_add_fetch_relaxed(&p->nkept, nkept) - nkept;
	memcpy(&p->kept[base], kept, nkept * sizeof(*kept));
}

/* Work through chunks of p until none is left or max are done; returns
 * how many were done. */
static size_t work_pass(struct relhash_table *t, struct rh_unzip_pass *p,
                        size_t max)
{
	size_t begin, end, chunks = 0, lock;

	while (chunks < max && (begin = claim_chunk(p)) < p->ndirty) {
		end = begin + UNZIP_CHUNK < p->ndirty ? begin + UNZIP_CHUNK
		                                      : p->ndirty;
		unzip_chunk(t, p, begin, end);
		chunks++;
		if (RH_TEST_BUG(HELP_CHUNK_OVERLAP) && end < p->ndirty) {
			/* The deliberate bug: the next chunk's first family
			 * gets a patch here too. */
			lock = rh_lock_family(t, p->dirty[end]);
			unzip_family(t, p->arr, p->dirty[end], p->dirty[end] + p->n,
			             p->cursors);
			rh_unlock(t, lock);
		}
	}
	return chunks;
}

/* Let helpers into p.  No helper is registered (the last pass closed
 * with none), so nobody reads help_pass or p's fields meanwhile. */
static void open_pass(struct relhash_table *t, struct rh_unzip_pass *p)
{
	rh_store(&p->next, 0);
	rh_store(&p->nkept, 0);
	rh_store(&p->npatched, 0);
	rh_store(&t->help_pass, p);
	rh_store(&t->help_opener, getpid());
	/* Release: heads the release sequence that registering helpers
	 * read (rh_help_unzip()): they see p and what it points to. */
	rh_store_release(&t->help_state, HELP_OPEN);
	/* Inserters asleep under back-pressure: there is work. */
	rh_announce_growth(t);
}

/* Let no more helpers in, and wait for those inside to leave. */
static void close_pass(struct relhash_table *t)
{
	uint32_t state;

	/* Clears the bit (it is set; the count never reaches it).  A
	 * helper registers by a compare-and-swap that needs the bit, so
	 * every registration is ordered before or after this one: before,
	 * and we wait for it below; after, and it fails. */
	rh_fetch_add(&t->help_state, -HELP_OPEN);
	/* Acquire: every helper's work (patches, its part of kept) happens
	 * before its decrement, and so before we go on. */
	while ((state = rh_load_acquire(&t->help_state)) != 0)
		rh_futex_wait(&t->help_state, state, 0);
}

bool rh_help_unzip(struct relhash_table *t)
{
	uint32_t state = rh_load(&t->help_state);
	struct rh_unzip_pass *p;
	size_t chunks;

	/* In a child of fork(2), an open pass is the parent's, on the stack
	 * of a resizer that is not here: never join it.  Relaxed: in the
	 * opener's process any pid read is the process's own. */
	if (rh_load(&t->help_opener) != getpid())
		return false;
	do {
		if (!(state & HELP_OPEN))
			return false;
	} while (!rh_cas_relaxed(&t->help_state, &state, state + 1));
	/*
	 * Acquire: this load reads our registration or a later
	 * read-modify-write of the word (no plain store happens until every
	 * helper has left), all of them in the release sequence headed by
	 * the store that opened the pass, so we see the pass it opened,
	 * never a half-built next one.
	 */
	(void)rh_load_acquire(&t->help_state);
	p = rh_load(&t->help_pass);
	chunks = work_pass(t, p, HELP_MAX_CHUNKS);
	rh_add_relaxed(&t->stat_helped_chunks, chunks);
	/* A seq_cst read-modify-write: our work happens before the wait in
	 * close_pass() ends.  The last one out of a closed pass wakes it. */
	if (rh_fetch_add(&t->help_state, (uint32_t)-1) == 1)
		rh_futex_wake_all(&t->help_state);
	return chunks > 0;
}

/*
 * Double the table into new.  lists holds two lists with room for the
 * old size's worth of family indices each, cursors the new size's worth of
 * node pointers.
 */
static void expand_step(struct relhash_table *t, struct relhash__buckets *new,
                        size_t *const lists[2], rh_link *cursors)
{
	size_t n = rh_load(&t->pub.buckets)->mask + 1, f;
	struct rh_unzip_pass pass = { .arr = new, .n = n, .cursors = cursors };
	bool grace_owed = false;
	unsigned i;

	rh_store(&t->zip_mask, n - 1);
	switch_arrays(t, new, n, link_family);

	for (f = 0; f < n; f++)
		lists[0][f] = f;
	memset(cursors, 0, 2 * n * sizeof(*cursors));
	/* Release: an updater that sees the array sees it zeroed.  No
	 * updater still uses the previous step's: that step cleared
	 * unzip_cursors, and this step's grace period in switch_arrays()
	 * has passed since. */
	rh_store_release(&t->unzip_cursors, cursors);
	pass.dirty = lists[0];
	pass.ndirty = n;
	for (i = 1; pass.ndirty; i ^= 1) {
		/* Race widening, and where tests hold the resizer before a
		 * pass (tests/test-resize-torture.c, helper_steps). */
		rh_debug_yield();
		pass.kept = lists[i];
		open_pass(t, &pass);
		/* The deliberate bug: helpers may start this pass before the
		 * last one's grace period. */
		if (RH_TEST_BUG(HELP_BEFORE_GRACE) && grace_owed)
			rh_wait_grace_period(t);
		work_pass(t, &pass, SIZE_MAX);
		close_pass(t);
		pass.dirty = pass.kept;
		pass.ndirty = rh_load(&pass.nkept);
		if (rh_load(&pass.npatched))
			rh_add_relaxed(&t->stat_unzip_passes, 1);
		/* Some family was patched and is still zipped: wait before
		 * its next patch (I4). */
		grace_owed = pass.ndirty > 0;
		if (grace_owed && !RH_TEST_BUG(HELP_BEFORE_GRACE))
			rh_wait_grace_period(t);
	}
	/* Every family is clean, and updates keep clean families clean;
	 * readers may still follow the last pass's old pointers, which
	 * nothing from here on needs to have stopped (doc/DESIGN.md section
	 * 8, "No grace period after the last patch").  Updaters may still
	 * look at the cursors until their read-side sections end:
	 * retire_cursors() keeps them for a grace period. */
	rh_store(&t->zip_mask, SIZE_MAX);
	rh_store(&t->unzip_cursors, NULL);
	rh_add_relaxed(&t->stat_resizes, 1);
	rh_check_table(t);
}

/* ------------------------------------------------------------------ */
/* Resizing to a size                                                  */

/*
 * Keep an expansion's cursors until updaters can no longer read them
 * (doc/DESIGN.md section 8, "Cursors").  An earlier expansion's are freed
 * now: this one has waited at least one grace period since they were
 * retired, so the wait costs nothing.  resize_lock held.
 */
static void retire_cursors(struct relhash_table *t, rh_link *cursors)
{
	/* The deliberate bug: the resize thread queues a callback, and may
	 * then wait for the callback thread under back-pressure. */
	if (RH_TEST_BUG(RETIRE_BY_CALLBACK)) {
		relhash_defer_free(cursors);
		return;
	}
	rh_resize_release(t);
	t->retired_cursors = cursors;
	/* After expand_step() cleared unzip_cursors: an updater that read
	 * the array is in a section that this cookie's grace period waits
	 * for. */
	t->retired_cursors_gp = relhash_gp_get_state();
}

void rh_resize_release(struct relhash_table *t)
{
	rh_assert_held(&t->resize_lock);
	if (!t->retired_cursors)
		return;
	if (!relhash_gp_poll_state(t->retired_cursors_gp))
		rh_wait_grace_period(t);
	rh_free(t->retired_cursors);
	t->retired_cursors = NULL;
}

/*
 * Resize to nbuckets.  resize_lock held.  Allocates everything first, so
 * -ENOMEM leaves the table as it was.
 */
int rh_resize_locked(struct relhash_table *t, size_t nbuckets)
{
	/* Relaxed: only resizes and rehashes store it, under resize_lock. */
	const struct relhash__buckets *cur = rh_load(&t->pub.buckets);
	size_t size = cur->mask + 1, steps = 0, s, i;
	struct relhash__buckets **arrays;
	rh_link *cursors;
	size_t *dirty, *lists[2];

	rh_assert_held(&t->resize_lock);
	if (nbuckets == size)
		return 0;
	if (nbuckets < size) {
		struct relhash__buckets *new =
			rh_buckets_alloc(nbuckets, cur->seed, cur->rehashes);

		if (!new)
			return -ENOMEM;
		/* After an expansion, a grace period before the splice: a
		 * reader may still stand on a node whose next the last unzip
		 * patch changed, holding the old successor, and a splice
		 * after that successor's chain could lead it back to nodes
		 * it has met (an expansion waits none after its last patch;
		 * doc/DESIGN.md section 8, "No grace period after the last
		 * patch").  Costs nothing when one has passed since.  The
		 * deliberate bug skips it. */
		if (!RH_TEST_BUG(SHRINK_NO_WAIT))
			rh_resize_release(t);
		shrink_step(t, new);
		return 0;
	}
	for (s = size; s < nbuckets; s <<= 1)
		steps++;
	arrays = rh_calloc(steps, sizeof(*arrays));
	/* Two lists of families (one pass's, the next's), for the last
	 * step's nbuckets / 2 families each. */
	dirty = rh_malloc(nbuckets * sizeof(*dirty));
	cursors = rh_malloc(nbuckets * sizeof(*cursors));
	for (i = 0, s = size; arrays && dirty && cursors && i < steps; i++) {
		s <<= 1;
		arrays[i] = rh_buckets_alloc(s, cur->seed, cur->rehashes);
		if (!arrays[i])
			break;
	}
	if (!arrays || !dirty || !cursors || i < steps) {
		for (; arrays && i-- > 0;)
			rh_free(arrays[i]);
		rh_free(arrays);
		rh_free(dirty);
		rh_free(cursors);
		return -ENOMEM;
	}
	lists[0] = dirty;
	lists[1] = dirty + nbuckets / 2;
	for (i = 0; i < steps; i++)
		expand_step(t, arrays[i], lists, cursors);
	set_lock_span(t, nbuckets);
	rh_free(arrays);
	rh_free(dirty);
	retire_cursors(t, cursors);
	return 0;
}

int relhash_resize(struct relhash_table *t, size_t nbuckets)
{
	int ret;

	if (!t || !rh_is_pow2(nbuckets) || nbuckets < t->min_size ||
	    nbuckets > t->max_size)
		return -EINVAL;
	if (relhash_read_ongoing())
		return -EDEADLK;
	rh_lock_take(&t->resize_lock);
	ret = rh_resize_locked(t, nbuckets);
	rh_resize_release(t);
	rh_lock_release(&t->resize_lock);
	return ret;
}
