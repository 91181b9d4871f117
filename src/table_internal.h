/*
 * src/table_internal.h - the private half of struct relhash_table, and the
 * chain helpers that src/table.c (updates), src/resize.c (resizing) and
 * src/autoresize.c (the automatic resize thread) share.
 *
 * Locking rules (doc/DESIGN.md, "Update locking"):
 * - A chain pointer (bucket head or node->next) that readers can reach is
 *   written only with rh_publish(), and only by a thread holding the update
 *   lock of its family.  Readers load chain pointers with rh_deref().
 * - Under the family lock, chain pointers of that family may be loaded with
 *   rh_load(): every writer of them held the same lock.
 * - t->pub.buckets is written by the resizer only (resize_lock held).
 * - t->future, t->linked, t->zip_mask are written by the resizer and read by
 *   updaters under a family lock; why that is consistent is in view_get().
 * - t->unzip_cursors[i] is written under bucket i's family lock, by the
 *   resizer and by updaters that remove or replace the cursor node, and
 *   read under it, except by the resizer's prefetch (resize.c,
 *   prefetch_family()), which reads without it: all accesses are atomic.
 * - t->lock_mask changes only while the resizer holds every update lock.
 */
#ifndef RELHASH_TABLE_INTERNAL_H
#define RELHASH_TABLE_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <relhash/inline.h>
#include <relhash/table.h>

#include "atomics.h"
#include "list.h"

#define RH_CACHELINE 64

/* A chain pointer: a bucket head or a node's next (<relhash/types.h>). */
typedef _Atomic(struct relhash_node *) rh_link;

struct rh_lock {
	pthread_mutex_t mutex;
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

	/* Resize in progress (see view_get() in table.c). */
	/* array being linked, or NULL */
	_Atomic(struct relhash__buckets *) future;
	_Atomic size_t linked;           /* families [0, linked) are linked */
	_Atomic size_t zip_mask;         /* family mask while unzipping,
	                                    else SIZE_MAX */
	/* per bucket, while unzipping (resize.c, clean_prefix()) */
	_Atomic(rh_link *) unzip_cursors;
	pthread_mutex_t resize_lock;     /* serializes resizes */

	/* Automatic resizing (src/autoresize.c); auto-resize lock. */
	struct rh_list auto_link;
	/* Written under the auto-resize lock (relaxed loads suffice under
	 * it); auto_queued, auto_again and dying are also read without it. */
	_Atomic bool auto_queued;
	bool auto_running;
	_Atomic bool auto_again;         /* asked again while running */
	_Atomic bool dying;              /* destroy has begun */
	/* Bumped by the resize thread after each array it publishes and when
	 * it leaves the table; inserters throttled by the hard load limit
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
	_Atomic uint64_t stat_throttled_inserts;
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

/* ------------------------------------------------------------------ */
/* Bucket arrays and chains                                            */

struct relhash__buckets *rh_buckets_alloc(size_t nbuckets);

static inline bool rh_node_in(const struct relhash_node *n, size_t mask,
                              size_t bucket)
{
	return (n->hash & mask) == bucket;
}

/* The first node at or after n that belongs to bucket (family lock). */
static inline struct relhash_node *rh_first_in(struct relhash_node *n,
                                               size_t mask, size_t bucket)
{
	while (n && !rh_node_in(n, mask, bucket))
		n = rh_load(&n->next);
	return n;
}

/* ------------------------------------------------------------------ */
/* Update locks                                                        */

/* Lock the family of hash h; returns the lock index for rh_unlock(). */
size_t rh_lock_family(struct relhash_table *t, uint64_t h);

static inline void rh_unlock(struct relhash_table *t, size_t idx)
{
	pthread_mutex_unlock(&t->locks[idx].mutex);
}

/* ------------------------------------------------------------------ */
/* Between table.c, resize.c and autoresize.c                          */

/* resize.c: resize to nbuckets, a power of two in [min_size, max_size];
 * resize_lock held.  0 or -ENOMEM (nothing changed). */
int rh_resize_locked(struct relhash_table *t, size_t nbuckets);

/* resize.c: a new array was published or the resize thread left the
 * table: wake inserters held by back-pressure. */
void rh_announce_growth(struct relhash_table *t);

/* autoresize.c: the update path noticed the load may call for a resize. */
void rh_autoresize_request(struct relhash_table *t);

/* autoresize.c: the table holds more objects than it has buckets while
 * an automatic expansion is pending: wait (bounded) for it
 * to catch up.  Only outside read-side sections and callbacks. */
void rh_autoresize_throttle(struct relhash_table *t);

/* autoresize.c: destroy: cancel or wait for a queued or running resize. */
void rh_autoresize_cancel(struct relhash_table *t);

/* autoresize.c, fork(2) support (src/fork.c): wait for the resize thread to stop between
 * steps and hold it; then, last before the fork, the queue's lock. */
void rh_autoresize_fork_prepare(void);
void rh_autoresize_fork_prepare_lock(void);
void rh_autoresize_fork_parent(void);
void rh_autoresize_fork_child(void);

/* autoresize.c: is the count outside the load band for the current size?
 * Also lowers the shrink floor once the count has reached the load the
 * size hint was meant for. */
bool rh_load_out_of_band(struct relhash_table *t, size_t count, size_t size);

/* autoresize.c: is the count so far over the size that inserters should wait
 * for the pending expansion? */
bool rh_load_over_hard_limit(const struct relhash_table *t, size_t count,
                             size_t size);

#endif /* RELHASH_TABLE_INTERNAL_H */
