/*
 * src/table/table.c - creating and destroying tables, lookups, updates,
 * counting and iteration.  Resizing is in src/table/resize.c.
 *
 * Updates under a resize.  A resize step moves a table from one bucket array
 * to another whose size differs by a power of two.  While it runs, the
 * objects whose hashes agree on the bits of the smaller mask form a FAMILY:
 * one bucket of the smaller array and its 2^k counterparts in the larger
 * one, all sharing chains.  One update lock covers a whole family (the lock
 * index takes no more bits than the smaller mask).  An update finds, under
 * that lock, which arrays it must keep right (rh_view_get()) and keeps the
 * invariants of src/table/table_internal.h in every one of them: I1 and I2 hold
 * after it, and it changes pointers only as I3 allows.  Insertion places
 * the node in split order within its bucket's clean prefix, or, while the
 * family spans two arrays, at the heads, where every array's readers of
 * its bucket will pass; removal and replacement redirect EVERY pointer to
 * the node, since in a zipped family a node can have two predecessors,
 * and may thereby leave a head pointing into the sibling bucket (I1).
 * Neither ever makes a reader skip a node other than the one being
 * removed (I3), which is what lets them run between two unzip passes
 * (doc/DESIGN.md section 6).
 */
#include "config.h"

#include "debug.h"
#ifdef RELHASH_DEBUG
/* Race widening at every node of relhash_lookup()'s walk (debug builds). */
#define RELHASH__LOOKUP_STEP_HOOK() rh_debug_yield()
#endif

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <relhash/epoch.h>
#include <relhash/table.h>

#include "alloc.h"
#include "atomics.h"
#include "engine.h"
#include "hash.h"
#include "rehash.h"
#include "table_internal.h"
#include "util.h"

#define DEFAULT_INITIAL_SIZE 64
#define DEFAULT_MIN_SIZE 4
#define LIMIT_MAX_SIZE ((size_t)1 << 31)
#define LOCKS_PER_CPU 32
#define MAX_LOCKS 1024

static size_t min_size_t(size_t a, size_t b)
{
	return a < b ? a : b;
}

struct relhash__buckets *rh_buckets_alloc(size_t nbuckets, uint64_t seed,
                                          size_t rehashes)
{
	struct relhash__buckets *b;

	if (nbuckets > (SIZE_MAX - sizeof(*b)) / sizeof(struct relhash_node *))
		return NULL;
	b = rh_calloc_huge(sizeof(*b) +
	                   nbuckets * sizeof(struct relhash_node *));
	/* seed is never 0 (relhash_create(), new_seed()): walk_seed 0 means
	 * "not walked inline". */
	if (b) {
		b->mask = nbuckets - 1;
		b->seed = seed;
		b->walk_seed = seed;
		b->rehashes = rehashes;
	}
	return b;
}

/* ------------------------------------------------------------------ */
/* Creation and destruction                                            */

/* A node the update functions may link: x86 alone forgives a misaligned
 * atomic link (an object in a packed structure or at an odd offset of a
 * buffer). */
static bool node_ok(const struct relhash_node *n)
{
	return n && (uintptr_t)n % _Alignof(struct relhash_node) == 0;
}

static int check_params(const struct relhash_params *p, size_t *min,
                        size_t *max, size_t *initial)
{
	if (!p)
		return -EINVAL;
	if (p->key_len == 0 && (!p->hashfn || !p->obj_hashfn || !p->cmpfn))
		return -EINVAL;
	if (p->flags & ~(RELHASH_AUTO_RESIZE | RELHASH_DUPLICATES))
		return -EINVAL;
	/* Objects are at least as aligned as the node they embed, so a
	 * misaligned offset would put the node's atomic link off its
	 * alignment: x86 forgives that, other processors fault or lose the
	 * atomicity.  Keys need no check: they are read with memcpy (the
	 * default hash and key compare) or by the caller's callbacks. */
	if (p->node_offset % _Alignof(struct relhash_node))
		return -EINVAL;
	*max = p->max_size ? p->max_size : LIMIT_MAX_SIZE;
	/* An unset min_size defaults to at most max_size. */
	*min = p->min_size ? p->min_size : min_size_t(DEFAULT_MIN_SIZE, *max);
	*initial = p->initial_size ? p->initial_size : DEFAULT_INITIAL_SIZE;
	if (!rh_is_pow2(*min) || !rh_is_pow2(*max) || !rh_is_pow2(*initial) ||
	    *min > *max || *max > LIMIT_MAX_SIZE)
		return -EINVAL;
	if (*initial < *min)
		*initial = *min;
	if (*initial > *max)
		*initial = *max;
	return 0;
}

static size_t default_nlocks(size_t max_size)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	size_t n = 1;

	while (n < (size_t)(cpus > 0 ? cpus : 1) * LOCKS_PER_CPU && n < MAX_LOCKS)
		n <<= 1;
	return min_size_t(n, max_size);
}

static void free_table(struct relhash_table *t)
{
	size_t i;

	for (i = 0; i < t->nlocks; i++)
		rh_debug_check(rh_load(&t->locks[i].mutex.word) == 0,
		               "a table lock held at destroy");
	rh_debug_check(rh_load(&t->resize_lock.mutex.word) == 0,
	               "the resize lock held at destroy");
	rh_free(t->locks);
	rh_free(t->counters);
	/* Every holder of resize_lock releases before it unlocks. */
	rh_debug_check(!t->retired_cursors, "retired cursors left at destroy");
	rh_free(rh_load(&t->pub.buckets));
	rh_free(t);
}

struct relhash_table *relhash_create(const struct relhash_params *params)
{
	struct relhash_table *t;
	size_t min, max, initial, nlocks;
	int err = check_params(params, &min, &max, &initial);

	if (err) {
		errno = -err;
		return NULL;
	}
	t = rh_calloc(1, sizeof(*t));
	if (!t) {
		errno = ENOMEM;
		return NULL;
	}
	t->params = *params;
	/* The first array's seed; a rehash replaces it (doc/DESIGN.md
	 * section 12, "Healing"). */
	t->params.seed = params->seed ? params->seed : rh_random_seed();
	t->min_size = min;
	t->max_size = max;
	rh_init(&t->zip_mask, SIZE_MAX);
	rh_init(&t->shrink_floor, RH_TEST_BUG(NO_SIZE_HINT) ? min : initial);
	rh_list_init(&t->auto_link);

	nlocks = default_nlocks(max);
	/* Cache-line aligned types: calloc() guarantees only 16 bytes. */
	t->locks = rh_calloc_aligned(RH_CACHELINE, nlocks, sizeof(*t->locks));
	t->counters = rh_calloc_aligned(RH_CACHELINE, RH_COUNTER_SLOTS,
	                                sizeof(*t->counters));
	rh_init(&t->pub.buckets, rh_buckets_alloc(initial, t->params.seed, 0));
	rh_init(&t->pub.seed_hint, t->params.seed);
	/* The locks are free: their words are 0 (src/base/lock.h). */
	if (!t->locks || !t->counters || !rh_load(&t->pub.buckets)) {
		free_table(t);
		errno = ENOMEM;
		return NULL;
	}
	t->nlocks = nlocks;
	rh_init(&t->lock_mask, min_size_t(t->nlocks, initial) - 1);
	return t;
}

void relhash_destroy(struct relhash_table *t,
                     void (*free_fn)(void *obj, void *arg), void *arg)
{
	struct relhash__buckets *b;
	struct relhash_node *n, *next;
	size_t i;

	if (!t)
		return;
	if (relhash_read_ongoing()) {
		/* Waiting for the resizer inside a section could deadlock. */
		fprintf(stderr, "relhash: relhash_destroy() called inside a "
		        "read-side critical section\n");
		abort();
	}
	rh_autoresize_cancel(t);
	/* Resizes finish before returning, so one clean array remains. */
	b = rh_load(&t->pub.buckets); /* relaxed: no other user is left */
	if (free_fn)
		for (i = 0; i <= b->mask; i++)
			for (n = rh_load(&relhash__heads(b)[i]); n; n = next) {
				next = rh_load(&n->next);
				free_fn(rh_obj(t, n), arg);
			}
	free_table(t);
}

/* ------------------------------------------------------------------ */
/* Lookups                                                             */

void *relhash_lookup(struct relhash_table *t, const void *key)
{
	rh_debug_yield();
	return relhash__lookup_inline(t, key, &t->params);
}

uint64_t relhash_hash_key(struct relhash_table *t, const void *key)
{
	uint64_t h;

	/* The array's header is read inside a section: a rehash frees it
	 * after a grace period. */
	relhash_read_lock();
	h = relhash__hash_key_inline(key, relhash__buckets_load(t)->seed,
	                             &t->params);
	relhash_read_unlock();
	return h;
}

void *relhash_lookup_hashed(struct relhash_table *t, const void *key,
                            uint64_t hash)
{
	rh_debug_yield();
	return relhash__lookup_hashed_inline(t, key, hash, &t->params);
}

size_t relhash_lookup_bulk(struct relhash_table *t, const void *const keys[],
                           size_t n, void *objs[])
{
	rh_debug_yield();
	return relhash__lookup_bulk_inline(t, keys, n, objs, &t->params);
}

/*
 * The next object after obj with obj's key: the walk of the lookup that
 * found obj, resumed at obj's successor (doc/DESIGN.md, "Duplicate
 * keys").  obj's hash and key do not change while it can be reached.
 */
void *relhash_lookup_next(struct relhash_table *t, const void *obj)
{
	const struct relhash__buckets *b;
	const struct relhash_node *node;
	void *next;

	if (!t || !obj || !(t->params.flags & RELHASH_DUPLICATES))
		return NULL;
	rh_debug_yield();
	node = rh_node_of(t, obj);
	/* First the array: in MID mode a member's next and hash are the
	 * relink's to rewrite, and its successors are in the SET. */
	b = relhash__buckets_load(t);
	if (b->rehash)
		return rh_rehash_lookup_next(t, b, node);
	/* Relaxed: only whether a rehash runs; rh_rehash_left_behind()
	 * loads it again with acquire.  A walk that needs it loaded MID
	 * after its release store, and GP2 keeps the clear after the walk's
	 * section. */
	if (RELHASH_UNLIKELY(rh_load(&t->rehashing)) &&
	    rh_rehash_left_behind(t, b, node, &next))
		return next;
	if (RH_TEST_BUG(NEXT_BY_HASH)) {
		/* The deliberate bug: the next object with obj's hash. */
		struct relhash_node *n = rh_deref(&node->next);

		while (n && n->hash != node->hash)
			n = rh_deref(&n->next);
		return n ? rh_obj(t, n) : NULL;
	}
	return relhash__chain_find(rh_deref(&node->next), rh_obj_key(t, obj),
	                           node->hash, &t->params);
}

/* ------------------------------------------------------------------ */
/* Update locks and views                                              */

/*
 * The view of the family of hash h (src/table/table_internal.h).  Family lock
 * held.
 *
 * Why the resizer's fields read consistently here: the resizer sets future
 * (and zip_mask) before it links any family, links family f and advances
 * linked past f while holding f's lock, and publishes pub.buckets only after
 * linking every family.  So with f's lock held:
 * - f < linked means f was linked under this lock, before we took it: we
 *   also see future and f's heads in it;
 * - f >= linked means the resizer has not touched f (it would need our
 *   lock): the family is still a plain family of the current array.
 * After publication pub.buckets == future, and the old array needs no more
 * care: its readers began before publication, so they may miss later
 * insertions, and nodes removed later are freed only after a grace period
 * that waits for them.
 */
void rh_view_get(struct relhash_table *t, uint64_t h, struct rh_view *v)
{
	struct relhash__buckets *cur = rh_deref(&t->pub.buckets);
	/* Acquire, pairing with the resizer's release store of future: if we
	 * see this step's array we also see linked reset for this step (the
	 * lock alone orders us only after the previous step's stores). */
	struct relhash__buckets *fut = rh_load_acquire(&t->future);

	rh_assert_family_locked(t, h);
	if (fut && fut != cur) {
		size_t small = min_size_t(cur->mask, fut->mask);

		if ((h & small) < rh_load(&t->linked)) {
			v->arr[0] = cur->mask == small ? cur : fut;
			v->arr[1] = cur->mask == small ? fut : cur;
			v->narr = 2;
			v->fmask = small;
			return;
		}
	}
	v->arr[0] = cur;
	v->narr = 1;
	v->fmask = min_size_t(cur->mask, rh_load(&t->zip_mask));
}

/* Is old reachable from the family of hash h?  Family lock held. */
static bool chain_contains(const struct relhash_table *t,
                           const struct rh_view *v, uint64_t h,
                           const struct relhash_node *old)
{
	const struct relhash__buckets *b = v->arr[0];
	struct relhash_node *n;

	/* The bucket of h in the smallest array reaches every node of h's
	 * bucket in the view (I2). */
	for (n = rh_chain_load(t, h, &relhash__heads(b)[h & b->mask]); n;
	     n = rh_chain_load(t, h, &n->next))
		if (n == old)
			return true;
	return false;
}

/*
 * Redirect every pointer to old within the family, head or next: to repl
 * when replacing, to old's successor when removing (repl == NULL).  Nothing
 * else is skipped (I3): a head may thus come to point at a node of another
 * bucket (I1), which lookups walk past and the unzipper later patches, one
 * change per grace period (skipping foreign nodes here would be an unzip
 * patch outside I4).  h is old's hash.  Returns whether old was found.
 * Family lock held.
 */
static bool chain_redirect(const struct relhash_table *t,
                           const struct rh_view *v, uint64_t h,
                           struct relhash_node *old, struct relhash_node *repl)
{
	struct relhash_node *after = rh_chain_load(t, h, &old->next);
	bool found = false;
	unsigned a;

	for (a = 0; a < v->narr; a++) {
		const struct relhash__buckets *b = v->arr[a];
		rh_link *heads = relhash__heads(b);
		size_t i, step = v->fmask + 1;

		for (i = h & v->fmask; i <= b->mask; i += step) {
			struct relhash_node *n = rh_chain_load(t, h, &heads[i]);
			struct relhash_node *next;

			if (n == old) {
				rh_publish(&heads[i], repl ? repl : after);
				found = true;
				if (RH_TEST_BUG(FIRST_PRED))
					return true;
				continue;
			}
			for (; n; n = next) {
				next = rh_chain_load(t, h, &n->next);
				if (next == old) {
					rh_publish(&n->next, repl ? repl : after);
					found = true;
					if (RH_TEST_BUG(FIRST_PRED))
						return true;
					break;
				}
			}
		}
	}
	return found;
}

/* ------------------------------------------------------------------ */
/* Counting                                                            */

/*
 * Count an update in the calling thread's slot and say whether the load of
 * an automatically resized table should be sampled now.  Sampling (summing
 * the 64 slots) happens every Nth update of a slot, with N = size / 128
 * between 1 and 64: small tables are checked at every update, and a large
 * one can sit at most 64 updates per slot (under 1 % of its load) past a
 * threshold before its resize is asked for.  The op count is per table, so
 * updates spread over several tables still sample each of them.
 */
static bool count_update(struct relhash_table *t, int64_t d)
{
	struct rh_counter *c = &t->counters[rh_thread_index() % RH_COUNTER_SLOTS];
	size_t every;

	rh_add_relaxed(&c->value, d);
	/* Counted in every table: the rehash's budget (autoresize.c). */
	if (!(t->params.flags & RELHASH_AUTO_RESIZE)) {
		rh_add_relaxed(&c->ops, 1);
		return false;
	}
	every = relhash_size(t) / 128;
	every = every < 1 ? 1 : every > 64 ? 64 : every;
	return (rh_add_fetch_relaxed(&c->ops, 1) & (every - 1)) == 0;
}

size_t relhash_count(struct relhash_table *t)
{
	int64_t sum = 0;
	size_t i;

	for (i = 0; i < RH_COUNTER_SLOTS; i++)
		sum += rh_load(&t->counters[i].value);
	return sum > 0 ? (size_t)sum : 0;
}

size_t relhash_size(struct relhash_table *t)
{
	size_t n;

	/* The array may be replaced and freed at any time: read its size
	 * inside a read-side section. */
	relhash_read_lock();
	n = rh_deref(&t->pub.buckets)->mask + 1;
	relhash_read_unlock();
	return n;
}

/*
 * Hand the table to the resize thread when its load left the band.  An
 * insertion into a chain already LONG_CHAIN long also samples (rare below
 * 75 % load: under 1 % of insertions).  Waits only as back-pressure says.
 */
#define LONG_CHAIN 4

static void check_load(struct relhash_table *t, bool inserted)
{
	size_t count = relhash_count(t), size = relhash_size(t);

	if (!rh_load_out_of_band(t, count, size))
		return;
	rh_autoresize_request(t);
	/* Back-pressure (doc/DESIGN.md, "Back-pressure"): only where the
	 * caller's waiting cannot hold up the grace periods the resize
	 * thread waits for. */
	if (inserted && rh_load_over_hard_limit(t, count, size) &&
	    (rh_may_wait_for_grace_periods() || RH_TEST_BUG(THROTTLE_IN_SECTION)) &&
	    !RH_TEST_BUG(NO_BACKPRESSURE))
		rh_autoresize_throttle(t);
}

/* ------------------------------------------------------------------ */
/* Long chains                                                         */

/*
 * Distinct keys sharing one full 64-bit hash: by chance, two in a table of
 * a million keys happen once in 2^25 tables; WEAK_HASH_KEYS is never
 * chance.  It is a hash function that ignores its seed, or a seed known to
 * whoever chose the keys (doc/DESIGN.md, "The default hash").
 */
#define WEAK_HASH_KEYS 16

/* Raise *max to v.  Relaxed: a statistic, which no other access orders. */
static void raise_stat(_Atomic uint64_t *max, uint64_t v)
{
	uint64_t cur = rh_load(max);

	while (cur < v && !rh_cas_relaxed(max, &cur, v))
		;
}

/*
 * An insertion walked chain distinct keys (a run of one key counts once),
 * equal of them with its own hash (counting its key).  Called only past
 * LONG_CHAIN nodes or from two equal hashes on, so short chains cost
 * nothing here.  Says once per table on stderr when the keys share
 * hashes, as the stall warning does: the exchange's atomicity picks the
 * one caller that reports.  Its seq_cst order is more than that needs
 * (the flag orders nothing else), and this path is cold.
 */
static void note_chain(struct relhash_table *t, size_t chain, size_t equal)
{
	raise_stat(&t->stat_longest_chain, chain);
	rh_rehash_request(t, chain);
	if (equal < 2)
		return;
	raise_stat(&t->stat_equal_hash_keys, equal);
	if (equal >= WEAK_HASH_KEYS && !rh_exchange(&t->weak_hash_reported, true))
		fprintf(stderr, "relhash: %zu distinct keys share one 64-bit "
		        "hash in table %p: its hash function ignores the seed, "
		        "or the seed is known to whoever chose the keys "
		        "(relhash_hash(3))\n", equal, (void *)t);
}

/* ------------------------------------------------------------------ */
/* Updates                                                             */

/*
 * Tests that need zipped chains with many crossings (tests/
 * test-resize-torture.c) switch placement off, in every build: insertions
 * then go at the heads, as before chains were kept in split order, and
 * expansions need a pass per crossing.  Exported for the tests only
 * (tests/debug-hooks.h).
 */
static _Atomic bool head_inserts;

RELHASH_API void relhash__debug_head_inserts(bool on);
void relhash__debug_head_inserts(bool on)
{
	rh_store(&head_inserts, on);
}

/*
 * Does hash a come before b, or equal it, in split order (the order of the
 * bit-reversed hashes)?  The lowest bit where they differ decides.
 */
static inline bool split_order_le(uint64_t a, uint64_t b)
{
	uint64_t differ = a ^ b;

	return !(a & differ & -differ);
}

/*
 * Does an insertion of a key already in the table join that key's objects
 * (relhash_insert() into a table with duplicate keys), rather than fail or
 * return the object found (relhash_insert_or_get() always does)?
 */
static inline bool joins_run(const struct relhash_table *t, bool or_get)
{
	return (t->params.flags & RELHASH_DUPLICATES) && !or_get;
}

/*
 * Is obj's node in the chain from n, the first node with obj's key, on?
 * If it is in the table, it is there (I2: the chain of the smallest array
 * reaches every node of the bucket).  Family lock held.
 */
static bool run_holds(const struct relhash_table *t, struct relhash_node *n,
                      const void *obj)
{
	uint64_t h = n->hash;

	for (; n; n = rh_chain_load(t, h, &n->next))
		if (rh_obj(t, n) == obj)
			return true;
	return false;
}

/* What an insertion's walk of its chain found (find_place()). */
struct rh_place {
	rh_link *at;               /* the link the node goes behind */
	struct relhash_node *same; /* a node with the key, when the
	                              insertion must not add another */
	size_t keys;  /* distinct keys walked: nodes that do not continue a
	                 run of one key */
	size_t equal; /* distinct keys with the node's hash, its own too */
};

/*
 * Walk the chain of hash h's bucket (top, in the smallest array of the
 * view) for an insertion of obj: the duplicate search, the counts of the
 * long-chain watch, and the node's place.  The place is in split order
 * within the bucket's clean prefix while placing holds, else where the
 * prefix ended; a duplicate joining its run goes in front of it: at is
 * then the link to the run's first node (doc/DESIGN.md, "Duplicate
 * keys").  The walk stops at the first node with the key.  Family lock
 * held.
 */
static void find_place(const struct relhash_table *t, rh_link *top,
                       size_t bmask, uint64_t h, const void *obj,
                       bool placing, bool or_get, struct rh_place *pl)
{
	const bool dups = t->params.flags & RELHASH_DUPLICATES;
	struct relhash_node *n, *prev = NULL;

	*pl = (struct rh_place){ .at = top, .equal = 1 };
	for (n = rh_chain_load(t, h, top); n;
	     prev = n, n = rh_chain_load(t, h, &n->next)) {
		/* Equal keys have equal hashes: only then compare keys. */
		bool run = dups && prev && n->hash == prev->hash &&
		           rh_same_key(t, rh_obj(t, prev), rh_obj(t, n));

		pl->keys += !run;
		if (n->hash == h) {
			if (rh_same_key(t, obj, rh_obj(t, n))) {
				if (!joins_run(t, or_get))
					pl->same = n;
				/* A node already in the table, inserted
				 * again, is refused: it is in its key's run. */
				else if (run_holds(t, n, obj))
					pl->same = n;
				/* The deliberate bug: a duplicate away from
				 * its run, at the heads. */
				else if (RH_TEST_BUG(DUPLICATE_AT_HEAD))
					pl->at = top;
				return;
			}
			pl->equal += !run;
		}
		if (placing && rh_node_in(n, bmask, h & bmask) &&
		    split_order_le(n->hash, h))
			pl->at = &n->next;
		else
			placing = false;
	}
}

/*
 * In MID mode, the member an insertion of node must not add to: with
 * unique keys (or insert-or-get) the first live member with its key; with
 * duplicate keys, node itself if it is a member already.  Family lock
 * held.
 */
static struct relhash_node *member_same(const struct relhash_table *t,
                                        const struct relhash__buckets *mid,
                                        struct relhash_node *node,
                                        bool or_get)
{
	if (joins_run(t, or_get))
		return rh_rehash_member(t, mid, node) ? node : NULL;
	return rh_rehash_find_member(t, mid, rh_obj(t, node));
}

/*
 * Lock the family of obj's hash in the array in force, and return the lock
 * index, with the hash in *h and the array in *b.  The hash is obj's
 * cached one when cached and the array is not in MID mode (a removal: the
 * cache is right for a node in the table, and means nothing otherwise),
 * else obj's key hashed with the array's seed (in MID mode a member's
 * cache is the old seed's, and the relink's to rewrite).  A rehash
 * publishes MID and NEW with every update lock held, so if the array
 * loaded again under the lock has the same seed and mode, it stays in
 * force until the unlock (doc/DESIGN.md section 12, "Healing"); resizes
 * change neither, and their arrays are rh_view_get()'s concern.  In a
 * read-side section.
 */
static size_t lock_key(struct relhash_table *t, const void *obj, bool cached,
                       uint64_t *h, const struct relhash__buckets **b)
{
	for (;;) {
		const struct relhash__buckets *was = relhash__buckets_load(t);
		size_t lock;

		/* A plain read of the cached hash, which the relink
		 * rewrites: either GP1 waits for our section (we loaded OLD)
		 * or we loaded NEW, published after the rewrite. */
		*h = cached && !was->rehash ? rh_node_of(t, obj)->hash
		                            : rh_hash_obj(t, obj, was->seed);
		lock = rh_lock_family(t, *h);
		*b = relhash__buckets_load(t);
		if (((*b)->seed == was->seed && (*b)->rehash == was->rehash) ||
		    RH_TEST_BUG(REHASH_NO_RECHECK))
			return lock;
		rh_unlock(t, lock);
	}
}

/*
 * relhash_insert() and relhash_insert_or_get(): the duplicate search and
 * the linking happen under one hold of the family lock, which every update
 * of an equal key also takes, so racing calls with equal keys are
 * serialized and exactly one links its node (doc/DESIGN.md, "Insert-or-get
 * is one step").  On -EEXIST, *existing (when existing is not NULL) is the
 * object found.  or_get: relhash_insert_or_get(), which never adds a
 * duplicate.
 */
static int insert_node(struct relhash_table *t, struct relhash_node *node,
                       bool or_get, void **existing)
{
	const struct relhash__buckets *b;
	struct rh_view v;
	struct rh_place pl = { 0 };
	rh_link *top;
	const void *obj;
	uint64_t h;
	size_t lock;
	unsigned a;
	bool sample = false, placing;
	int ret = 0;

	if (!t || !node_ok(node))
		return -EINVAL;
	obj = rh_obj(t, node);
	rh_debug_yield();

	relhash_read_lock();
	lock = lock_key(t, obj, false, &h, &b);
	rh_view_get(t, h, &v);
	/* In MID mode the key's members are in the SET (rehash.h). */
	pl.same = b->rehash ? member_same(t, b, node, or_get) : NULL;
	if (pl.same)
		goto found;
	/* Relaxed: whether a rehash's SET is in use; rh_rehash_forget()
	 * loads it again with acquire. */
	if (b->rehash || rh_load(&t->rehashing))
		rh_rehash_forget(t, b, node);
	/* The chain of h's bucket in the smallest array holds every node
	 * of that bucket in every array of the view (I2). */
	top = &relhash__heads(v.arr[0])[h & v.arr[0]->mask];
	/* The node goes at its place in split order within the bucket's
	 * clean prefix, its own nodes from the head; while the family spans
	 * two arrays, at the heads (I3; doc/DESIGN.md section 7, "Split
	 * order").  head_inserts relaxed: tests set it before their threads
	 * start, and either placement is correct at any time. */
	placing = (v.narr == 1 || RH_TEST_BUG(PLACE_WHILE_LINKING)) &&
	          !RH_TEST_BUG(INSERT_AT_HEAD) && !rh_load(&head_inserts);
	find_place(t, top, v.arr[0]->mask, h, obj, placing, or_get, &pl);
	if (pl.same) {
found:
		if (existing)
			*existing = rh_obj(t, pl.same);
		ret = -EEXIST;
		goto out;
	}
	node->hash = h;
	/* Not yet reachable: relaxed.  From top on, the chain holds every
	 * node of h's bucket in every array of the view (I2 in the smallest
	 * array, whose bucket contains h's bucket of every larger one). */
	rh_store(&node->next, rh_chain_load(t, h, pl.at));
	/* Release: a reader that finds node sees its fields.  In every
	 * array of the view: a reader of any of them passes here (I2). */
	if (pl.at != top)
		rh_publish(pl.at, node);
	else
		for (a = 0; a < v.narr; a++)
			rh_publish(&relhash__heads(v.arr[a])[h & v.arr[a]->mask],
			           node);
	sample = count_update(t, 1) ||
	         ((t->params.flags & RELHASH_AUTO_RESIZE) && pl.keys >= LONG_CHAIN);
out:
	rh_check_family(t, h);
	rh_unlock(t, lock);
	relhash_read_unlock();
	/* After the unlock: the report may write to stderr. */
	if (RELHASH_UNLIKELY(ret == 0 && (pl.keys >= LONG_CHAIN || pl.equal > 1)))
		note_chain(t, pl.keys, pl.equal);
	if (sample)
		check_load(t, true);
	return ret;
}

int relhash_insert(struct relhash_table *t, struct relhash_node *node)
{
	return insert_node(t, node, false, NULL);
}

int relhash_insert_or_get(struct relhash_table *t, struct relhash_node *node,
                          void **existing)
{
	if (RH_TEST_BUG(GET_SPLIT) && t && node) {
		/* The deliberate bug: a lookup, then an insertion, as two
		 * steps.  A racer that loses between them gets nothing. */
		void *found = relhash_lookup(t, rh_obj_key(t, rh_obj(t, node)));

		if (found) {
			if (existing)
				*existing = found;
			return -EEXIST;
		}
		return insert_node(t, node, true, NULL);
	}
	return insert_node(t, node, true, existing);
}

/*
 * While unzipping, the resizer remembers per bucket a node of its clean
 * prefix (resize.c, clean_prefix()).  If that node is removed, the walk
 * restarts from the head; if replaced, it goes on from the replacement:
 * either way I5 holds again.  Family lock held.
 */
static void move_cursor(struct relhash_table *t, const struct rh_view *v,
                        uint64_t h, const struct relhash_node *old,
                        struct relhash_node *repl)
{
	rh_link *cursors = rh_load_acquire(&t->unzip_cursors);
	size_t i;

	rh_assert_family_locked(t, h);
	if (!cursors || RH_TEST_BUG(STALE_CURSOR))
		return;
	for (i = h & v->fmask; i <= v->arr[0]->mask; i += v->fmask + 1)
		/* Atomic: the resizer's prefetch reads cursors without our
		 * lock (resize.c, prefetch_family()). */
		if (rh_load(&cursors[i]) == old)
			rh_store(&cursors[i], repl);
}

/*
 * In MID mode, remove member e (repl == NULL) or replace it by repl: repl
 * goes at the head of MID's chain of hash h first, then e is marked (a
 * reader that sees the mark finds repl in the chain it walks next).
 * Family lock held.
 */
static void unlink_member(struct relhash_table *t,
                          const struct relhash__buckets *mid, uint64_t h,
                          struct rh_set_entry *e, struct relhash_node *repl)
{
	rh_link *head = &relhash__heads(mid)[h & mid->mask];

	if (repl) {
		repl->hash = h;
		/* Not yet reachable: relaxed.  Release: a reader that finds
		 * repl sees its fields. */
		rh_store(&repl->next, rh_chain_load(t, h, head));
		rh_publish(head, repl);
	}
	if (!RH_TEST_BUG(REHASH_NO_MARK))
		rh_rehash_unlink(e);
}

/*
 * Is node in the table, in the family of hash h?  In MID mode it may be a
 * member.  Family lock held.
 */
static bool holds(const struct relhash_table *t,
                  const struct relhash__buckets *b, const struct rh_view *v,
                  uint64_t h, const struct relhash_node *node)
{
	return (b->rehash && rh_rehash_member(t, b, node)) ||
	       chain_contains(t, v, h, node);
}

/*
 * Remove old (repl == NULL) or replace it by repl.  The family is old's
 * (its cached hash, which means nothing if it is not in the table, where
 * the search then finds nothing) or, replacing, that of repl's key.
 */
static int redirect(struct relhash_table *t, struct relhash_node *old,
                    struct relhash_node *repl)
{
	const struct relhash__buckets *b;
	struct rh_set_entry *member;
	struct rh_view v;
	uint64_t h;
	size_t lock;
	bool found, repl_in;

	rh_debug_yield();
	relhash_read_lock();
	lock = lock_key(t, rh_obj(t, repl ? repl : old), !repl, &h, &b);
	/* The deliberate bug: the lock of the next family. */
	if (RH_TEST_BUG(WRONG_LOCK)) {
		rh_unlock(t, lock);
		lock = rh_lock_family(t, h + 1);
	}
	rh_view_get(t, h, &v);
	/* repl must not be touched unless old is here and repl is not: with
	 * unique keys repl in the table means old is not; with duplicate
	 * keys both may be, and linking repl again would make a cycle. */
	repl_in = repl && (t->params.flags & RELHASH_DUPLICATES) &&
	          holds(t, b, &v, h, repl);
	member = !repl_in && b->rehash ? rh_rehash_member(t, b, old) : NULL;
	/* As insert_node(): repl's memory may have been a member's.  Only
	 * when repl is linked (rh_rehash_forget() spares a live entry). */
	if (repl && (b->rehash || rh_load(&t->rehashing)) &&
	    (member || (!repl_in && chain_contains(t, &v, h, old))))
		rh_rehash_forget(t, b, repl);
	if (member) {
		unlink_member(t, b, h, member, repl);
		found = true;
	} else {
		found = !repl_in && (!repl || chain_contains(t, &v, h, old));
		if (found && repl) {
			repl->hash = h;
			/* Not yet reachable: relaxed. */
			rh_store(&repl->next, rh_chain_load(t, h, &old->next));
		}
		if (found)
			found = chain_redirect(t, &v, h, old, repl);
		if (found)
			move_cursor(t, &v, h, old, repl);
	}
	rh_check_family(t, h);
	rh_unlock(t, lock);
	relhash_read_unlock();
	return repl_in ? -EEXIST : found ? 0 : -ENOENT;
}

int relhash_remove(struct relhash_table *t, struct relhash_node *node)
{
	int ret;

	if (!t || !node_ok(node))
		return -EINVAL;
	ret = redirect(t, node, NULL);
	if (!ret) {
		if (count_update(t, -1))
			check_load(t, false);
	}
	return ret;
}

int relhash_replace(struct relhash_table *t, struct relhash_node *old_node,
                    struct relhash_node *new_node)
{
	if (!t || !node_ok(old_node) || !node_ok(new_node) ||
	    old_node == new_node)
		return -EINVAL;
	/* Compare the objects' keys, not old_node's cached hash: that is
	 * meaningful only if old_node is in the table, which is for the
	 * search to tell (-ENOENT). */
	if (!rh_same_key(t, rh_obj(t, new_node), rh_obj(t, old_node)))
		return -EINVAL;
	return redirect(t, old_node, new_node);
}

/* ------------------------------------------------------------------ */
/* Iteration                                                           */

/*
 * Walk the array the iteration began with (it stays allocated until our
 * read-side section ends), bucket by bucket, each chain to its end, and
 * return only nodes of the bucket being walked: during a resize a chain
 * also holds nodes of other buckets, and those are returned when their own
 * bucket is walked.  Chain pointers only ever skip forward, so no node is
 * met twice in one walk.
 */
void *rh_iter_scan(struct relhash_iter *it, struct relhash_node *n)
{
	const struct relhash__buckets *b = it->buckets;

	for (;;) {
		for (; n; n = rh_deref(&n->next))
			if (rh_node_in(n, b->mask, it->bucket)) {
				it->node = n;
				return rh_obj(it->table, n);
			}
		if (it->bucket == b->mask) {
			it->node = NULL;
			return NULL;
		}
		it->bucket++;
		n = rh_deref(&relhash__heads(b)[it->bucket]);
	}
}

/*
 * In MID mode an iteration returns the SET's live members first, then
 * MID's chains, which never lead to a member (doc/DESIGN.md section 12,
 * "Healing"): it->member is the entry of the member last returned, and
 * SIZE_MAX once the chains are walked.
 */
void *relhash_iter_first(struct relhash_table *t, struct relhash_iter *it)
{
	const struct relhash__buckets *b = rh_deref(&t->pub.buckets);

	it->table = t;
	it->buckets = b;
	it->bucket = 0;
	it->member = SIZE_MAX;
	if (b->rehash)
		return rh_rehash_iter_members(it, 0);
	return rh_iter_scan(it, rh_deref(&relhash__heads(b)[0]));
}

void *relhash_iter_next(struct relhash_iter *it)
{
	if (!it->node)
		return NULL;
	if (it->member != SIZE_MAX)
		return rh_rehash_iter_members(it, it->member + 1);
	return rh_iter_scan(it, rh_deref(&it->node->next));
}

int relhash_table_stats(struct relhash_table *t, struct relhash_table_stats *stats)
{
	struct relhash_table_stats s = { .size = sizeof(s) };

	if (!t || !rh_stats_ok(stats))
		return -EINVAL;
	/* Relaxed: statistics, which no other access orders. */
	s.resizes = rh_load(&t->stat_resizes);
	s.grace_periods = rh_load(&t->stat_grace_periods);
	s.unzip_passes = rh_load(&t->stat_unzip_passes);
	s.throttled_inserts = rh_load(&t->stat_throttled_inserts);
	s.helped_chunks = rh_load(&t->stat_helped_chunks);
	s.longest_chain = rh_load(&t->stat_longest_chain);
	s.equal_hash_keys = rh_load(&t->stat_equal_hash_keys);
	s.rehashes = rh_load(&t->stat_rehashes);
	s.rehash_stopped = rh_load(&t->rehash_stopped);
	s.throttle_timeouts = rh_load(&t->stat_throttle_timeouts);
	s.nbuckets = relhash_size(t);
	s.nlocks = rh_load(&t->lock_mask) + 1;
	return rh_stats_copy(stats, &s, sizeof(s));
}
