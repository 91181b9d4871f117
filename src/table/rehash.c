/*
 * src/table/rehash.c - moving every node of a table to a new random seed
 * while lookups and updates go on, and the table's reads in MID mode.
 *
 * The protocol and its argument are in doc/DESIGN.md section 12,
 * "Healing"; src/table/rehash.h names its parts.  In short:
 *
 *   snapshot  every update lock held: OLD's chains into the SET, then
 *             publish MID (empty, new seed, pointing at the SET);
 *   GP1       no reader uses OLD after it, so members' next and hash are
 *             free to rewrite;
 *   relink    every update lock held: each live member, in SET order, to
 *             the end of its NEW bucket's list; each list then runs on into
 *             MID's chain of that bucket; publish NEW;
 *   GP2       no reader uses MID or the SET after it: free them and OLD.
 *
 * The snapshot and the relink hold every lock, so an update sees one array
 * throughout (table.c, lock_key()); lookups never wait.  The idea of
 * searching an old table, a small set in flight and a new table in that
 * order is from the healing rehash the Linux rhashtable lacks: its lookups
 * retry across tables, and its insertions fail while it rehashes.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <relhash/epoch.h>
#include <relhash/table.h>

#include "alloc.h"
#include "atomics.h"
#include "debug.h"
#include "hash.h"
#include "rehash.h"
#include "table_internal.h"
#include "util.h"

/* ------------------------------------------------------------------ */
/* The SET                                                             */

/* The first entry of old hash ho's OLD bucket, and the one past its last. */
static size_t range_begin(const struct rh_rehash *r, uint64_t ho)
{
	return r->start[ho & r->old_mask];
}

static size_t range_end(const struct rh_rehash *r, uint64_t ho)
{
	return r->start[(ho & r->old_mask) + 1];
}

/* The first live member with key, from entry i of old hash ho's range on,
 * as an object; NULL if none.  Members of other keys in the range are
 * skipped by their old hash first, as a chain walk skips by hash. */
static void *members_find(const struct relhash_table *t,
                          const struct rh_rehash *r, const void *key,
                          uint64_t ho, size_t i)
{
	size_t end = range_end(r, ho);

	for (; i < end; i++) {
		struct relhash_node *n = rh_set_live(&r->set[i]);

		if (n && r->set[i].old_hash == ho &&
		    rh_key_is(t, key, rh_obj(t, n)))
			return rh_obj(t, n);
	}
	return NULL;
}

/* The entry of node in its key's range, live or removed; end if none. */
static size_t member_index(const struct relhash_table *t,
                           const struct rh_rehash *r,
                           const struct relhash_node *node, uint64_t ho)
{
	size_t i, end = range_end(r, ho);

	/* Relaxed: only the address is compared.  It changes only when
	 * rh_rehash_forget() erases it, before the node it named is linked
	 * again: a walk that reached that node (acquire loads along the
	 * release publication) sees the erase. */
	for (i = range_begin(r, ho); i < end; i++)
		if ((rh_load(&r->set[i].node) & ~RH_SET_REMOVED) ==
		    (uintptr_t)node)
			return i;
	(void)t;
	return end;
}

struct rh_set_entry *rh_rehash_member(const struct relhash_table *t,
                                      const struct relhash__buckets *mid,
                                      const struct relhash_node *node)
{
	const struct rh_rehash *r = rh_rehash_of(mid);
	uint64_t ho = rh_hash_obj(t, rh_obj(t, node), r->old_seed);
	size_t i = member_index(t, r, node, ho);

	/* Relaxed: the removal bit is written under the lock we hold. */
	if (i == range_end(r, ho) || (rh_load(&r->set[i].node) & RH_SET_REMOVED))
		return NULL;
	return &r->set[i];
}

struct relhash_node *rh_rehash_find_member(const struct relhash_table *t,
                                           const struct relhash__buckets *mid,
                                           const void *obj)
{
	const struct rh_rehash *r = rh_rehash_of(mid);
	uint64_t ho = rh_hash_obj(t, obj, r->old_seed);
	void *found = members_find(t, r, rh_obj_key(t, obj), ho,
	                           range_begin(r, ho));

	return found ? rh_node_of(t, found) : NULL;
}

/* The rehash whose SET an update under array b must keep right: b's own
 * in MID mode; in NEW mode, until GP2 (t->rehashing), the one that
 * published b, whose walks may still consult its SET
 * (rh_rehash_left_behind()). */
static const struct rh_rehash *set_of(struct relhash_table *t,
                                      const struct relhash__buckets *b)
{
	const struct rh_rehash *r;

	if (b->rehash)
		return rh_rehash_of(b);
	/* Acquire, pairing with snapshot()'s release store: the state may be
	 * a later rehash's, whose MID we have not loaded (then r->new is not
	 * b).  Under the lock: NEW is published with every lock held, after
	 * the store, so a rehash that published b is seen here. */
	r = rh_load_acquire(&t->rehashing);
	return r && r->new == b ? r : NULL;
}

void rh_rehash_forget(struct relhash_table *t, const struct relhash__buckets *b,
                      const struct relhash_node *node)
{
	const struct rh_rehash *r = set_of(t, b);
	uint64_t ho;
	size_t i;

	if (!r || RH_TEST_BUG(REHASH_NO_FORGET))
		return;
	ho = rh_hash_obj(t, rh_obj(t, node), r->old_seed);
	i = member_index(t, r, node, ho);
	/* Only a removed member's entry: a live one is node itself, in the
	 * table (the caller then links nothing).  Relaxed: the bit is
	 * written under the lock we hold.  Release, as a removal's mark, and
	 * before node's publication: a walk that reaches node sees the entry
	 * erased.  Nothing else writes the entry now: its member left the
	 * table a grace period ago at least (its memory is used again only
	 * then), and the relink reads it under every lock. */
	if (i != range_end(r, ho) &&
	    (rh_load(&r->set[i].node) & RH_SET_REMOVED))
		rh_store_release(&r->set[i].node, RH_SET_REMOVED);
}

void rh_rehash_unlink(struct rh_set_entry *e)
{
	/* Release: a removed member's replacement was linked into MID's
	 * chain before, and a reader that sees the bit walks that chain
	 * next (rh_set_live()). */
	rh_store_release(&e->node, rh_load(&e->node) | RH_SET_REMOVED);
}

/* ------------------------------------------------------------------ */
/* Reads in MID mode, and lookups the inline ones leave to the library */

/* In MID mode the key's SET range, then its MID chain; otherwise (a seed
 * hint that was not b's) b's chain under b's seed. */
void *relhash__lookup_slow(struct relhash_table *t,
                           const struct relhash__buckets *b, const void *key)
{
	uint64_t h;

	if (b->rehash) {
		const struct rh_rehash *r = rh_rehash_of(b);
		uint64_t ho = rh_hash_key(t, key, r->old_seed);
		void *obj = members_find(t, r, key, ho, range_begin(r, ho));

		if (obj)
			return obj;
	}
	h = rh_hash_key(t, key, b->seed);
	return relhash__chain_find(relhash__head_load(b, h), key, h, &t->params);
}

void *relhash__lookup_stale(struct relhash_table *t,
                            const struct relhash__buckets *b, const void *key,
                            uint64_t h)
{
	uint64_t now = rh_hash_key(t, key, b->seed);

	if (now == h)
		return NULL;
	return relhash__chain_find(relhash__head_load(b, now), key, now,
	                           &t->params);
}

/*
 * A duplicate walk in MID mode (doc/DESIGN.md section 12, "Healing"): a
 * key's objects are its live members in SET order, then its MID chain.  A
 * walker standing on a member, removed meanwhile or not, goes on from its
 * entry; on any other node (a MID node, or one removed before the
 * snapshot, whose next still leads along its OLD chain, unchanged until
 * GP1 has waited for this walk), along next.
 */
/* The objects after entry i of old hash ho's range with obj's key: the
 * rest of the range, then MID's chain. */
static void *members_after(const struct relhash_table *t,
                           const struct rh_rehash *r, const void *obj,
                           uint64_t ho, size_t i)
{
	const void *key = rh_obj_key(t, obj);
	void *next = members_find(t, r, key, ho, i + 1);
	uint64_t h;

	if (next)
		return next;
	h = rh_hash_obj(t, obj, r->mid->seed);
	return relhash__chain_find(relhash__head_load(r->mid, h), key, h,
	                           &t->params);
}

void *rh_rehash_lookup_next(struct relhash_table *t,
                            const struct relhash__buckets *mid,
                            const struct relhash_node *node)
{
	const struct rh_rehash *r = rh_rehash_of(mid);
	const void *obj = rh_obj(t, node);
	uint64_t ho = rh_hash_obj(t, obj, r->old_seed);
	size_t i = member_index(t, r, node, ho);

	if (i == range_end(r, ho))
		return relhash__chain_find(rh_deref(&node->next),
		                           rh_obj_key(t, obj), node->hash,
		                           &t->params);
	return members_after(t, r, obj, ho, i);
}

/*
 * Only a walk that loaded MID can stand on a member removed in MID mode
 * (NEW's chains never held it), so it began before NEW's publication, and
 * the grace period after it (GP2), before which t->rehashing is not
 * cleared, waits for it.  Its next is still its OLD successor, which may
 * be freed.  Other walks may load t->rehashing too: the SET and MID are
 * freed only a grace period after it is cleared (GP3).
 */
bool rh_rehash_left_behind(struct relhash_table *t,
                           const struct relhash__buckets *b,
                           const struct relhash_node *node, void **next)
{
	/* Acquire, pairing with the release store in snapshot(): the state
	 * may be a later rehash's, whose MID we have not loaded.  A walk that
	 * sees it cleared cannot stand on a member left behind (above). */
	const struct rh_rehash *r = rh_load_acquire(&t->rehashing);
	const void *obj = rh_obj(t, node);
	uint64_t ho;
	size_t i;

	if (!r || r->new != b)
		return false;
	ho = rh_hash_obj(t, obj, r->old_seed);
	i = member_index(t, r, node, ho);
	/* Relaxed: only the bit.  Every mark happened before NEW's
	 * publication, which our caller loaded with acquire. */
	if (i == range_end(r, ho) ||
	    !(rh_load(&r->set[i].node) & RH_SET_REMOVED))
		return false;
	*next = members_after(t, r, obj, ho, i);
	return true;
}

void *rh_rehash_iter_members(struct relhash_iter *it, size_t from)
{
	const struct rh_rehash *r = rh_rehash_of(it->buckets);
	size_t i;

	for (i = from; i < r->nset; i++) {
		struct relhash_node *n = rh_set_live(&r->set[i]);

		if (n) {
			it->member = i;
			it->node = n;
			return rh_obj(it->table, n);
		}
	}
	it->member = SIZE_MAX;
	it->bucket = 0;
	return rh_iter_scan(it, rh_deref(&relhash__heads(it->buckets)[0]));
}

/* ------------------------------------------------------------------ */
/* The rehash                                                          */

static size_t rh_max_size_t(size_t a, size_t b)
{
	return a > b ? a : b;
}

static void free_rehash(struct rh_rehash *r)
{
	if (!r)
		return;
	rh_free(r->mid);
	rh_free(r->new);
	rh_free(r->start);
	rh_free(r->set);
	rh_free(r->tails);
	rh_free(r);
}

/* A seed other than old's, never 0 (0 asks relhash_create() for one). */
static uint64_t new_seed(uint64_t old)
{
	uint64_t s;

	do
		s = rh_random_seed();
	while (s == old || s == 0);
	return s;
}

/* Everything a rehash to nbuckets needs, room for cap members: all its
 * allocation happens here, before anything changes. */
static struct rh_rehash *alloc_rehash(const struct relhash__buckets *old,
                                      size_t nbuckets, size_t cap)
{
	struct rh_rehash *r = rh_calloc(1, sizeof(*r));
	uint64_t seed = new_seed(old->seed);

	if (!r)
		return NULL;
	r->old = (struct relhash__buckets *)old;
	r->old_seed = old->seed;
	r->old_mask = old->mask;
	r->mid = rh_buckets_alloc(nbuckets, seed, old->rehashes + 1);
	r->new = rh_buckets_alloc(nbuckets, seed, old->rehashes + 1);
	r->start = rh_calloc(old->mask + 2, sizeof(*r->start));
	r->tails = rh_calloc(nbuckets, sizeof(*r->tails));
	r->set = rh_calloc(cap, sizeof(*r->set));
	r->cap = cap;
	if (!r->mid || !r->new || !r->start || !r->tails || !r->set) {
		free_rehash(r);
		return NULL;
	}
	r->mid->rehash = r;
	/* MID's chains are not where its seed puts every key: no inline
	 * lookup walks them (doc/DESIGN.md section 13). */
	if (!RH_TEST_BUG(MID_WALKED))
		r->mid->walk_seed = 0;
	return r;
}

/*
 * The snapshot: OLD's chains, bucket by bucket, into the SET, then MID's
 * publication, all under every update lock.  At rest every node is in
 * exactly one chain, its bucket's (I1, I2), so in exactly one entry.
 * false, with nothing published, if the SET is too small.
 */
static bool snapshot(struct relhash_table *t, struct rh_rehash *r)
{
	const struct relhash__buckets *old = r->old;
	size_t b, n = 0;

	rh_lock_all(t);
	for (b = 0; b <= old->mask; b++) {
		struct relhash_node *x;

		r->start[b] = n;
		for (x = rh_load(&relhash__heads(old)[b]); x;
		     x = rh_load(&x->next)) {
			if (n == r->cap) {
				rh_unlock_all(t);
				return false;
			}
			/* Not yet reachable by anyone else. */
			rh_init(&r->set[n].node, (uintptr_t)x);
			r->set[n].old_hash = x->hash;
			n++;
		}
	}
	r->start[old->mask + 1] = n;
	r->nset = n;
	/* Release: a walk in NEW mode of an earlier rehash may load it
	 * before it loads MID (rh_rehash_left_behind()). */
	rh_store_release(&t->rehashing, r);
	rh_set_lock_mask(t, r->mid->mask + 1);
	/* Release: a reader or updater that loads MID sees the SET and MID's
	 * header.  Every lock held: an update that takes a lock after this
	 * sees MID (table.c, lock_key()). */
	rh_publish(&t->pub.buckets, r->mid);
	/* Relaxed: a hint, which lookups check against the array's seed. */
	rh_store(&t->pub.seed_hint, r->mid->seed);
	rh_unlock_all(t);
	rh_announce_growth(t);
	return true;
}

#define HASH_CHUNK 1024

/* The new hash of each live member, before the relink takes the locks.
 * Inside a read-side section: a member removed meanwhile is not freed
 * before it ends; one removed before it is skipped. */
static void hash_members(struct relhash_table *t, struct rh_rehash *r)
{
	size_t i;

	for (i = 0; i < r->nset; i++) {
		struct relhash_node *n;

		/* A section per HASH_CHUNK members, not one as long as the
		 * table: the grace periods of others go on meanwhile. */
		if (i % HASH_CHUNK == 0)
			relhash_read_lock();
		n = rh_set_live(&r->set[i]);
		if (n)
			r->set[i].new_hash = rh_hash_obj(t, rh_obj(t, n),
			                                 r->mid->seed);
		if (i % HASH_CHUNK == HASH_CHUNK - 1 || i == r->nset - 1)
			relhash_read_unlock();
	}
}

/* Distinct keys in NEW bucket j's members, which run from its head to
 * MID's first node of j.  Every lock held. */
static size_t members_keys(const struct relhash_table *t,
                           const struct rh_rehash *r, size_t j)
{
	struct relhash_node *n = rh_load(&relhash__heads(r->new)[j]);
	struct relhash_node *end = rh_load(&relhash__heads(r->mid)[j]);
	struct relhash_node *prev = NULL;
	size_t keys = 0;

	for (; n != end; prev = n, n = rh_load(&n->next))
		keys += !prev || prev->hash != n->hash ||
		        !rh_same_key(t, rh_obj(t, prev), rh_obj(t, n));
	return keys;
}

/*
 * The relink, under every update lock: each live member, in SET order, to
 * the end of its NEW bucket's list, with its new hash; each list then runs
 * on into MID's chain of the bucket; then NEW's publication.  No reader
 * follows a member's next or reads its hash now: OLD's readers are gone
 * (GP1), MID's use the SET, NEW's come after the publication.  So the
 * stores before it are relaxed, and its release covers them.  Returns the
 * most distinct keys in one NEW bucket's members.
 */
static size_t relink(struct relhash_table *t, struct rh_rehash *r)
{
	rh_link *heads = relhash__heads(r->new);
	size_t i, j, nb = r->new->mask + 1, longest = 0;

	rh_lock_all(t);
	memset(r->tails, 0, nb * sizeof(*r->tails));
	for (i = 0; i < r->nset; i++) {
		struct relhash_node *n = rh_set_live(&r->set[i]);

		if (!n)
			continue;
		j = r->set[i].new_hash & r->new->mask;
		n->hash = r->set[i].new_hash;
		rh_store(&n->next, NULL);
		if (r->tails[j])
			rh_store(&r->tails[j]->next, n);
		else
			rh_store(&heads[j], n);
		r->tails[j] = n;
	}
	for (j = 0; j < nb; j++) {
		struct relhash_node *mid_first =
			rh_load(&relhash__heads(r->mid)[j]);

		if (r->tails[j])
			rh_store(&r->tails[j]->next, mid_first);
		else
			rh_store(&heads[j], mid_first);
		longest = rh_max_size_t(longest, members_keys(t, r, j));
	}
	rh_publish(&t->pub.buckets, r->new);
	rh_unlock_all(t);
	rh_announce_growth(t);
	return longest;
}

/*
 * Rehash t with a new random seed into nbuckets buckets; resize_lock held,
 * outside read-side sections, at rest (rh_resize_release() done).  0, or
 * -ENOMEM with nothing changed.  *longest is then the most distinct keys
 * among the nodes moved into one NEW bucket.
 */
static int rehash_locked(struct relhash_table *t, size_t nbuckets,
                         size_t *longest)
{
	/* Relaxed: only resizes and rehashes store it, under resize_lock. */
	struct relhash__buckets *old = rh_load(&t->pub.buckets);
	size_t cap = relhash_count(t);
	struct rh_rehash *r;

	rh_assert_held(&t->resize_lock);
	rh_debug_check(!old->rehash && !t->retired_cursors &&
	               !rh_load(&t->future), "a rehash not at rest");
	for (;;) {
		cap += cap / 4 + 64;
		r = alloc_rehash(old, nbuckets, cap);
		if (!r)
			return -ENOMEM;
		if (snapshot(t, r))
			break;
		free_rehash(r);
	}
	rh_debug_yield();
	/* GP1: fresh, begun after MID's publication. */
	if (!RH_TEST_BUG(REHASH_NO_GP1))
		rh_wait_grace_period(t);
	hash_members(t, r);
	rh_debug_yield();
	*longest = relink(t, r);
	/* GP2: fresh, begun after NEW's publication: no reader holds OLD,
	 * or MID but through t->rehashing (rh_rehash_left_behind()). */
	rh_wait_grace_period(t);
	rh_free(old);
	/* Relaxed: GP3 orders the clear before every walk it does not wait
	 * for; those it waits for may see the state either way. */
	rh_store(&t->rehashing, NULL);
	/* GP3: no walker still holds what it loaded from t->rehashing. */
	rh_wait_grace_period(t);
	r->new = NULL; /* in use */
	free_rehash(r);
	rh_add_relaxed(&t->stat_rehashes, 1);
	return 0;
}

/* ------------------------------------------------------------------ */
/* When                                                                */

/*
 * A chain of more distinct keys than REHASH_CHAIN, and than
 * REHASH_LOAD_FACTOR times the load, asks for a rehash.  With a hash that
 * spreads the keys the longest chain of a table of a million buckets at
 * 75 % load is about 9; a table without automatic resizing may simply be
 * full, which a new seed does not help.
 */
#define REHASH_CHAIN 16
#define REHASH_LOAD_FACTOR 4

/* Is keys in one chain more than chance gives t at count objects? */
static bool too_long(struct relhash_table *t, size_t keys, size_t count)
{
	return keys > REHASH_CHAIN &&
	       keys * relhash_size(t) > REHASH_LOAD_FACTOR * count;
}

/* The updates counted in t's slots so far (table.c, count_update()). */
static uint64_t updates(const struct relhash_table *t)
{
	uint64_t sum = 0;
	size_t i;

	/* Relaxed: a budget, which a few updates either way do not
	 * change. */
	for (i = 0; i < RH_COUNTER_SLOTS; i++)
		sum += rh_load(&t->counters[i].ops);
	return sum;
}

/* May t rehash again?  Only after as many updates since its last rehash
 * as it held objects then: a flood that goes on costs O(1) per update. */
static bool budget_allows(const struct relhash_table *t)
{
	uint64_t mark = rh_load(&t->rehash_count_mark);

	return !mark || updates(t) - rh_load(&t->rehash_ops_mark) >= mark;
}

void rh_rehash_request(struct relhash_table *t, size_t keys)
{
	/* Relaxed: hints.  A request lost to a race is made again by the
	 * next insertion into the long chain. */
	if (keys <= REHASH_CHAIN || rh_load(&t->rehash_wanted) ||
	    rh_load(&t->rehash_stopped) || !too_long(t, keys, relhash_count(t)) ||
	    !budget_allows(t))
		return;
	rh_store(&t->rehash_wanted, true);
	rh_autoresize_request(t);
}

/* Stop rehashing t for good, saying once why. */
static void stop(struct relhash_table *t, const char *why)
{
	/* The exchange picks the one thread that reports; its seq_cst order
	 * is more than that needs, on a cold path. */
	if (!rh_exchange(&t->rehash_stopped, true))
		fprintf(stderr, "relhash: table %p stops rehashing: %s "
		        "(relhash_hash(3))\n", (void *)t, why);
}

/* After a rehash whose NEW chains still hold longest distinct keys in one
 * bucket: a hash that ignores the seed cannot be healed by a new one. */
static void judge(struct relhash_table *t, size_t longest)
{
	if (too_long(t, longest, relhash_count(t)))
		stop(t, "a rehash with a new seed left as long a chain, so its "
		     "hash function ignores the seed");
}

#define PROBE_NODES 8

/*
 * Before a rehash, on the first PROBE_NODES nodes of the table: does the
 * hash change with the seed, and does obj_hashfn (if any) agree with
 * hashfn under another seed?  A hash that ignores the seed makes the
 * rehash a costly no-op; an obj_hashfn returning hashes cached under the
 * first seed would put nodes where no lookup looks.  Outside sections.
 */
static bool seed_matters(struct relhash_table *t)
{
	const struct relhash__buckets *b;
	size_t i, seen = 0, moved = 0, disagree = 0;

	relhash_read_lock();
	b = rh_deref(&t->pub.buckets);
	for (i = 0; i <= b->mask && seen < PROBE_NODES; i++) {
		const struct relhash_node *n = rh_deref(&relhash__heads(b)[i]);

		for (; n && seen < PROBE_NODES; n = rh_deref(&n->next), seen++) {
			const void *obj = rh_obj(t, n);
			uint64_t other = ~b->seed;

			moved += rh_hash_obj(t, obj, other) !=
			         rh_hash_obj(t, obj, b->seed);
			disagree += t->params.obj_hashfn &&
			            rh_hash_obj(t, obj, other) !=
			            rh_hash_key(t, rh_obj_key(t, obj), other);
		}
	}
	relhash_read_unlock();
	if (disagree)
		stop(t, "its obj_hashfn disagrees with its hashfn under another "
		     "seed");
	else if (seen && !moved)
		stop(t, "its hash function ignores the seed, and a chain is "
		     "longer than chance allows");
	return !disagree && (moved || !seen);
}

void rh_heal_locked(struct relhash_table *t)
{
	size_t longest;
	uint64_t ops = updates(t);
	size_t count = relhash_count(t);

	rh_assert_held(&t->resize_lock);
	if (!rh_load(&t->rehash_wanted) || rh_load(&t->dying))
		return;
	/* The budget counts from here; insertions into the long chains
	 * before MID's publication ask again, and find the request still
	 * pending until the rehash is done. */
	rh_store(&t->rehash_ops_mark, ops);
	rh_store(&t->rehash_count_mark, count ? count : 1);
	if (seed_matters(t)) {
		rh_resize_release(t);
		/* Relaxed: only resizes and rehashes store it, under
		 * resize_lock. */
		if (!rehash_locked(t, rh_load(&t->pub.buckets)->mask + 1,
		                   &longest))
			judge(t, longest);
	}
	rh_store(&t->rehash_wanted, false);
}

RELHASH_API int relhash__debug_rehash(struct relhash_table *t);
int relhash__debug_rehash(struct relhash_table *t)
{
	size_t longest;
	int ret;

	if (relhash_read_ongoing())
		return -EDEADLK;
	rh_lock_take(&t->resize_lock);
	rh_resize_release(t);
	ret = rehash_locked(t, rh_load(&t->pub.buckets)->mask + 1, &longest);
	rh_lock_release(&t->resize_lock);
	return ret;
}

RELHASH_API size_t relhash__debug_longest_chain(struct relhash_table *t);
size_t relhash__debug_longest_chain(struct relhash_table *t)
{
	const struct relhash__buckets *b;
	size_t longest = 0, i, n;

	relhash_read_lock();
	b = rh_deref(&t->pub.buckets);
	for (i = 0; i <= b->mask; i++) {
		const struct relhash_node *x = rh_deref(&relhash__heads(b)[i]);

		for (n = 0; x; x = rh_deref(&x->next))
			n++;
		longest = rh_max_size_t(longest, n);
	}
	relhash_read_unlock();
	return longest;
}
