/*
 * src/table/table_internal.h - the private half of struct relhash_table, its
 * invariants, and the chain helpers that src/table/table.c (updates),
 * src/table/resize.c (resizing) and src/table/autoresize.c (the automatic
 * resize thread) share.
 *
 * A FAMILY is the set of buckets whose hashes agree on the bits of the
 * smallest mask in use (doc/DESIGN.md section 6): during a resize step, one
 * bucket of the smaller array and its counterparts in the larger one, which
 * share chains.  The VIEW of a family is the arrays an update of it must
 * keep right (rh_view_get()).  The invariants, cited by name wherever code
 * relies on them (doc/DESIGN.md, "Views and invariants", uses the same):
 *
 *   I1  Chains hold their family.  Every chain of a family, in every array
 *       of its view, holds only nodes of that family and ends in NULL.  At
 *       rest (a view of one array, not being unzipped) a chain holds only
 *       nodes of its own bucket: a head is NULL or points to a node of its
 *       bucket.  While the family is zipped or spans two arrays, a head or
 *       next may point to a node of another bucket of the family; in
 *       particular a removal may leave a head pointing into the sibling
 *       bucket (I3), which the unzipper later patches like any crossing.
 *   I2  Reachability.  In every array of the view, every node of a bucket
 *       is reachable from that bucket's head.
 *   I3  Updates only add or skip.  An update changes a chain pointer only
 *       to add a node (at the heads while the family spans two arrays,
 *       else within its bucket's clean prefix) or to skip the node it
 *       removes (or point at its replacement), and changes every pointer
 *       to that node: a reader can still reach whatever it could reach
 *       before, except the removed node.  A removal never moves a head
 *       past nodes of the sibling bucket: that would be an unzip patch
 *       outside I4.
 *   I4  One unzip patch per family per grace period, at the crossing that
 *       leads into the other bucket's clean prefix (the run of a bucket's
 *       own nodes from its head).
 *   I5  Cursors.  While a family is being unzipped, the cursor of each of
 *       its buckets (t->unzip_cursors) is NULL or a node of that bucket's
 *       clean prefix.
 *
 * Debug builds (RELHASH_DEBUG) check I1, I2 and I5 (src/table/table_check.c) on
 * the family after each update, and after the resizer links or unzips it,
 * and on the whole table after each resize step (the resizer's checks on a
 * bounded sample of the families of a large table).  I3
 * and I4 constrain changes rather than states: the spin model
 * (tests/model) and the negative controls check them.
 *
 * Locking rules (doc/DESIGN.md, "Update locking"):
 * - A chain pointer (bucket head or node->next) that readers can reach is
 *   written only with rh_publish(), and only by a thread holding the update
 *   lock of its family.  Readers load chain pointers with rh_deref().
 * - Under the family lock, chain pointers of that family are loaded with
 *   rh_chain_load(): every writer of them held the same lock.  Debug
 *   builds assert there that the caller holds it.
 * - t->pub.buckets is written by the resizer only, resize_lock held
 *   (rh_resize_locked() asserts it in debug builds).
 * - t->future, t->linked, t->zip_mask are written by the resizer and read by
 *   updaters under a family lock; why that is consistent is in rh_view_get().
 * - t->unzip_cursors[i] is written under bucket i's family lock, by the
 *   resizer and by updaters that remove or replace the cursor node, and
 *   read under it, except by the resizer's prefetch (resize.c,
 *   prefetch_family()), which reads without it: all accesses are atomic.
 * - t->lock_mask changes only while the resizer holds every update lock.
 */
#ifndef RELHASH_TABLE_INTERNAL_H
#define RELHASH_TABLE_INTERNAL_H

#include <sys/types.h>
#include <stdbool.h>
#include <stdint.h>

#include <relhash/inline.h>
#include <relhash/table.h>

#include "atomics.h"
#include "list.h"
#include "lock.h"

#define RH_CACHELINE 64

struct rh_unzip_pass; /* resize.c */
struct rh_rehash;     /* rehash.h */

/* A chain pointer: a bucket head or a node's next (<relhash/types.h>). */
typedef _Atomic(struct relhash_node *) rh_link;

struct rh_lock {
	struct rh_futex_mutex mutex;
#ifdef RELHASH_DEBUG
	/* The holder's rh_debug_thread_id(), NULL when free, for
	 * rh_assert_held().  Atomic: another thread's assertion may read it
	 * while the holder sets it. */
	_Atomic(const void *) owner;
#endif
} __attribute__((aligned(RH_CACHELINE)));

/* Split counter of objects: one slot per thread index modulo this. */
#define RH_COUNTER_SLOTS 64

struct rh_counter {
	_Atomic int64_t value; /* objects added minus removed through this
	                          slot */
	_Atomic uint64_t ops;  /* updates through this slot (auto-resize
	                          sampling) */
} __attribute__((aligned(RH_CACHELINE)));

struct relhash_table {
	struct relhash__table_head pub; /* first: read by inline lookups */
	struct relhash_params params;   /* as given, seed resolved */
	size_t min_size, max_size;

	struct rh_lock *locks;          /* nlocks update locks */
	size_t nlocks;
	_Atomic size_t lock_mask;       /* <= min(nlocks, size in use) - 1 */

	/* Resize in progress (see rh_view_get() in table.c). */
	/* array being linked, or NULL */
	_Atomic(struct relhash__buckets *) future;
	_Atomic size_t linked;           /* families [0, linked) are linked */
	_Atomic size_t zip_mask;         /* family mask while unzipping,
	                                    else SIZE_MAX */
	/* per bucket, while unzipping (resize.c, clean_prefix()) */
	_Atomic(rh_link *) unzip_cursors;
	/* The last expansion's cursors, which updaters may still read, and
	 * the grace-period cookie after which they may not; resize_lock
	 * (resize.c, rh_resize_release()). */
	rh_link *retired_cursors;
	uint64_t retired_cursors_gp;
	/* The unzip pass open to helping inserters, and that it is open and
	 * how many are in it (resize.c, rh_help_unzip(); doc/DESIGN.md,
	 * "Helping"). */
	_Atomic(struct rh_unzip_pass *) help_pass;
	_Atomic uint32_t help_state;
	/* The process that opened the last pass: in a child of fork(2) the
	 * pass's resizer is gone and its pass with it, so helpers there
	 * refuse (resize.c, rh_help_unzip()). */
	_Atomic pid_t help_opener;
	struct rh_lock resize_lock;      /* serializes resizes */

	/* Automatic resizing (src/table/autoresize.c); auto-resize lock. */
	struct rh_list auto_link;
	/* Written under the auto-resize lock (relaxed loads suffice under
	 * it); auto_queued, auto_again and dying are also read without it. */
	_Atomic bool auto_queued;
	bool auto_running;
	_Atomic bool auto_again;         /* asked again while running */
	_Atomic bool dying;              /* destroy has begun */
	/* Bumped by the resizer after each array it publishes and each unzip
	 * pass it opens, and when the resize thread leaves the table;
	 * inserters throttled by the hard load limit
	 * sleep on it (doc/DESIGN.md, "Back-pressure"). */
	_Atomic uint32_t growth_seq;
	/* growth_seq + 1 when a throttled insertion last timed out: no
	 * insertion waits again until growth_seq moves.  0: none. */
	_Atomic uint64_t throttle_gave_up;
	/* Automatic shrinking stops here: initial_size until the table has
	 * once held the load that size is meant for, then min_size (doc/
	 * DESIGN.md, "The size hint"). */
	_Atomic size_t shrink_floor;

	struct rh_counter *counters;     /* RH_COUNTER_SLOTS */

	_Atomic uint64_t stat_resizes, stat_grace_periods, stat_unzip_passes;
	_Atomic uint64_t stat_throttled_inserts, stat_helped_chunks;
	_Atomic uint64_t stat_throttle_timeouts;
	/* Maxima seen by insertions (table.c, note_chain()); and whether the
	 * table has said once that its keys share hashes. */
	_Atomic uint64_t stat_longest_chain, stat_equal_hash_keys;
	_Atomic bool weak_hash_reported;

	/* Healing (rehash.c; doc/DESIGN.md section 12, "Healing").  An
	 * insertion that walked a chain too long asks for a rehash
	 * (rehash_wanted); the resize thread runs it when the budget allows
	 * (rehash.c, budget_allows()).  These flags and marks are hints and
	 * statistics, relaxed; the rehash itself is ordered by resize_lock,
	 * the update locks and its grace periods. */
	_Atomic bool rehash_wanted;
	/* The rehash under way, from before MID's publication until after
	 * the grace period that follows NEW's (rehash.c), else NULL.
	 * Release and acquire (rehash.c, snapshot(), set_of()). */
	_Atomic(struct rh_rehash *) rehashing;
	_Atomic bool rehash_stopped;     /* the hash ignores the seed */
	/* updates counted in the slots' ops at the last rehash, and the
	 * objects then: the next waits for that many more updates */
	_Atomic uint64_t rehash_ops_mark;
	_Atomic size_t rehash_count_mark;
	_Atomic uint64_t stat_rehashes;
};

/* ------------------------------------------------------------------ */
/* Objects, keys, hashes                                               */

static inline void *rh_obj(const struct relhash_table *t,
                           const struct relhash_node *n)
{
	return (char *)n - t->params.node_offset;
}

static inline const void *rh_obj_key(const struct relhash_table *t,
                                     const void *obj)
{
	return (const char *)obj + t->params.key_offset;
}

/* The node of obj. */
static inline struct relhash_node *rh_node_of(const struct relhash_table *t,
                                              const void *obj)
{
	return (struct relhash_node *)((char *)obj + t->params.node_offset);
}

/* The hash of key, and of obj's key, with seed: the table's hashfn (or
 * obj_hashfn), else the default hash. */
static inline uint64_t rh_hash_key(const struct relhash_table *t,
                                   const void *key, uint64_t seed)
{
	const struct relhash_params *p = &t->params;

	return p->hashfn ? p->hashfn(key, p->key_len, seed)
	                 : relhash__hash_inline(key, p->key_len, seed);
}

static inline uint64_t rh_hash_obj(const struct relhash_table *t,
                                   const void *obj, uint64_t seed)
{
	if (t->params.obj_hashfn)
		return t->params.obj_hashfn(obj, seed);
	return rh_hash_key(t, rh_obj_key(t, obj), seed);
}

/* Has obj the key key? */
static inline bool rh_key_is(const struct relhash_table *t, const void *key,
                             const void *obj)
{
	if (t->params.cmpfn)
		return t->params.cmpfn(key, obj) == 0;
	return relhash__key_equal(key, rh_obj_key(t, obj), t->params.key_len);
}

/* Has obj the key of key_obj? */
static inline bool rh_same_key(const struct relhash_table *t,
                               const void *key_obj, const void *obj)
{
	return rh_key_is(t, rh_obj_key(t, key_obj), obj);
}

/* ------------------------------------------------------------------ */
/* Bucket arrays and chains                                            */

/* A zeroed array of nbuckets heads, whose chains hash with seed, made
 * after rehashes rehashes of its table. */
struct relhash__buckets *rh_buckets_alloc(size_t nbuckets, uint64_t seed,
                                          size_t rehashes);

static inline bool rh_node_in(const struct relhash_node *n, size_t mask,
                              size_t bucket)
{
	return (n->hash & mask) == bucket;
}

/* ------------------------------------------------------------------ */
/* Update locks, and the consistency checks of debug builds            */

#ifdef RELHASH_DEBUG
/* src/table/table_check.c: its address is a token unique to the calling thread.
 * Initial-exec, like relhash__self: the lock assertions sit on every
 * chain step of the resizer's loops. */
extern __thread char rh_debug_thread_token
	__attribute__((tls_model("initial-exec")));

static inline const void *rh_debug_thread_id(void)
{
	return &rh_debug_thread_token;
}

static inline void rh_lock_set_owner(struct rh_lock *l, const void *owner)
{
	/* Relaxed: only the holder compares it with itself; others'
	 * assertions need atomicity only. */
	rh_store(&l->owner, owner);
}

/* Report that the caller does not hold lock l (the family lock of hash h
 * when t is not NULL), and abort. */
void rh_lock_not_held(const struct rh_lock *l, const struct relhash_table *t,
                      uint64_t h, const char *file, int line)
	__attribute__((noreturn));

/* Does the caller hold l?  Relaxed: if it does, it wrote the owner
 * itself; if not, whatever another thread wrote is not its token. */
static inline bool rh_held(const struct rh_lock *l)
{
	return rh_load(&l->owner) == rh_debug_thread_id();
}

/* Abort unless the caller holds lock l. */
#define rh_assert_held(l) rh_assert_held_at((l), __FILE__, __LINE__)
static inline void rh_assert_held_at(const struct rh_lock *l,
                                     const char *file, int line)
{
	if (!rh_held(l))
		rh_lock_not_held(l, NULL, 0, file, line);
}
/* Abort unless the caller holds the family lock of hash h.  The mask is
 * stable while the caller holds any update lock. */
#define rh_assert_family_locked(t, h) \
	rh_assert_family_locked_at((t), (h), __FILE__, __LINE__)
static inline void rh_assert_family_locked_at(const struct relhash_table *t,
                                              uint64_t h, const char *file,
                                              int line)
{
	const struct rh_lock *l = &t->locks[h & rh_load(&t->lock_mask)];

	if (!rh_held(l))
		rh_lock_not_held(l, t, h, file, line);
}
/* Check I1, I2 and I5 on the family of hash h; its lock held. */
void rh_check_family(struct relhash_table *t, uint64_t h);
/* The same, from the resizer's loops over nfamilies families, on a
 * bounded sample of them (src/table/table_check.c).  Family f's lock held. */
void rh_check_resized_family(struct relhash_table *t, size_t f,
                             size_t nfamilies);
/* The same on every family, or a bounded sample of them, taking each
 * family's lock; resize_lock held. */
void rh_check_table(struct relhash_table *t);
#else
static inline void rh_lock_set_owner(struct rh_lock *l, const void *owner)
{
	(void)l;
	(void)owner;
}
#define rh_debug_thread_id() NULL
#define rh_assert_held(l) ((void)(l))
#define rh_assert_family_locked(t, h) ((void)(t), (void)(h))
static inline void rh_check_family(struct relhash_table *t, uint64_t h)
{
	(void)t;
	(void)h;
}
static inline void rh_check_resized_family(struct relhash_table *t,
                                           size_t f, size_t nfamilies)
{
	(void)t;
	(void)f;
	(void)nfamilies;
}
static inline void rh_check_table(struct relhash_table *t)
{
	(void)t;
}
#endif

/*
 * A chain pointer p (a head or a next) of the family of hash h, loaded
 * under that family's lock (locking rules above), after the kernel's
 * rht_dereference_bucket(): debug builds assert that the caller holds the
 * lock.  Relaxed: every writer of p held the same lock.  Any bucket index
 * of the family serves as h: the lock index takes no more bits than the
 * smallest mask in use.
 */
#define rh_chain_load(t, h, p) (rh_assert_family_locked((t), (h)), rh_load(p))

/* Take and release a lock of the table, recording its holder in debug
 * builds. */
static inline void rh_lock_take(struct rh_lock *l)
{
	/* The futex mutex would sleep forever on its own holder. */
	rh_debug_check(!rh_held(l), "taking a table lock the thread holds");
	rh_futex_mutex_lock(&l->mutex);
	rh_lock_set_owner(l, rh_debug_thread_id());
}

static inline void rh_lock_release(struct rh_lock *l)
{
	rh_debug_check(rh_held(l), "releasing a table lock the thread does "
	               "not hold");
	rh_lock_set_owner(l, NULL);
	rh_futex_mutex_unlock(&l->mutex);
}

/* Take and release update lock idx (rh_lock_family() finds the index). */
static inline void rh_lock_index(struct relhash_table *t, size_t idx)
{
	rh_lock_take(&t->locks[idx]);
}

static inline void rh_unlock(struct relhash_table *t, size_t idx)
{
	rh_lock_release(&t->locks[idx]);
}

/* Lock the family of hash h; returns the lock index for rh_unlock().
 * Inline: every update takes it. */
static inline size_t rh_lock_family(struct relhash_table *t, uint64_t h)
{
	for (;;) {
		size_t mask = rh_load(&t->lock_mask);
		size_t idx = h & mask;

		rh_lock_index(t, idx);
		/* The mask changes only while every lock is held: if it is
		 * unchanged now, it stays so until we unlock.  Relaxed: a
		 * resizer that held our lock before us stored it before our
		 * take (the lock orders it); one that takes it after us
		 * stores it after our load. */
		if (rh_load(&t->lock_mask) == mask)
			return idx;
		rh_unlock(t, idx);
	}
}

/* The first node at or after n that belongs to bucket, in a chain of
 * bucket's family (family lock held). */
static inline struct relhash_node *rh_first_in(const struct relhash_table *t,
                                               struct relhash_node *n,
                                               size_t mask, size_t bucket)
{
	while (n && !rh_node_in(n, mask, bucket))
		n = rh_chain_load(t, bucket, &n->next);
	return n;
}

/*
 * The arrays an update of hash h must keep right, smallest mask first, and
 * the family mask (table.c, rh_view_get()).  Family lock held.
 */
struct rh_view {
	struct relhash__buckets *arr[2];
	unsigned narr;
	size_t fmask;
};

void rh_view_get(struct relhash_table *t, uint64_t h, struct rh_view *v);

/* ------------------------------------------------------------------ */
/* Between table.c, resize.c and autoresize.c                          */

/* resize.c: resize to nbuckets, a power of two in [min_size, max_size];
 * resize_lock held.  0 or -ENOMEM (nothing changed).  Leaves memory that
 * rh_resize_release() frees: several calls in a row may share its wait. */
int rh_resize_locked(struct relhash_table *t, size_t nbuckets);

/* resize.c: free what the last rh_resize_locked() left, after waiting for
 * the grace period it needs if that has not passed yet; resize_lock held,
 * outside read-side sections. */
void rh_resize_release(struct relhash_table *t);

/* resize.c: take and release every update lock, in index order. */
void rh_lock_all(struct relhash_table *t);
void rh_unlock_all(struct relhash_table *t);

/* resize.c: use min(nlocks, nbuckets) locks; every update lock held. */
void rh_set_lock_mask(struct relhash_table *t, size_t nbuckets);

/* resize.c: a grace period, counted in the table's statistics. */
void rh_wait_grace_period(struct relhash_table *t);

/* table.c: an iteration's walk of its array's chains from node n of the
 * current bucket on. */
void *rh_iter_scan(struct relhash_iter *it, struct relhash_node *n);

/* resize.c: a new array was published, an unzip pass opened or the
 * resize thread left the table: wake inserters held by back-pressure. */
void rh_announce_growth(struct relhash_table *t);

/* resize.c: do a share (bounded) of the open unzip pass, if any, for an
 * inserter that back-pressure holds (outside sections, not in a callback,
 * no lock held).  Returns whether it did any. */
bool rh_help_unzip(struct relhash_table *t);

/* autoresize.c: the update path noticed the load may call for a resize. */
void rh_autoresize_request(struct relhash_table *t);

/* rehash.c: an insertion walked keys distinct keys in one chain: ask the
 * resize thread for a rehash if that is more than chance allows. */
void rh_rehash_request(struct relhash_table *t, size_t keys);

/* rehash.c: the resize thread's part: the rehash asked for, if the
 * budget allows; resize_lock held, outside read-side sections. */
void rh_heal_locked(struct relhash_table *t);

/* autoresize.c: the table holds more objects than it has buckets while
 * an automatic expansion is pending: wait (bounded) for it
 * to catch up.  Only outside read-side sections and callbacks. */
void rh_autoresize_throttle(struct relhash_table *t);

/* autoresize.c: destroy: cancel or wait for a queued or running resize. */
void rh_autoresize_cancel(struct relhash_table *t);

/* autoresize.c: is the count outside the load band for the current size?
 * Also lowers the shrink floor once the count has reached the load the
 * size hint was meant for. */
bool rh_load_out_of_band(struct relhash_table *t, size_t count, size_t size);

/* autoresize.c: is the count so far over the size that inserters should wait
 * for the pending expansion? */
bool rh_load_over_hard_limit(const struct relhash_table *t, size_t count,
                             size_t size);

#endif /* RELHASH_TABLE_INTERNAL_H */
