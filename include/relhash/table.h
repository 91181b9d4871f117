/*
 * relhash/table.h - relativistic hash tables.
 *
 * An intrusive, resizable hash table after Triplett, McKenney and Walpole,
 * "Resizable, Scalable, Concurrent Hash Tables via Relativistic Programming"
 * (USENIX ATC 2011).  Users embed a struct relhash_node in each object; the
 * table never allocates or frees objects.
 *
 * Readers: relhash_lookup() and iteration run inside a read-side critical
 * section (relhash_read_lock()), take no lock, do no atomic read-modify-write
 * and never retry, also while the table resizes.
 *
 * Updaters: insert, remove and replace take one per-bucket lock (a striped
 * lock array whose stripe also covers the buckets a bucket splits into or
 * merges with), never a table-wide lock, and never wait for a grace period
 * or a resize, with one exception (back-pressure, see relhash_insert()).
 * They may be called inside or outside a read-side section.
 *
 * Reclamation: after relhash_remove() or relhash_replace() returns 0, the
 * removed object may still be referenced by concurrent readers: free or
 * reuse it only after a grace period (relhash_defer_free(), relhash_call(),
 * relhash_synchronize()).
 *
 * Errors are negative errno values; relhash_create() returns NULL and sets
 * errno.  A refused call changes nothing.
 */
#ifndef RELHASH_TABLE_H
#define RELHASH_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include <relhash/config.h>
#include <relhash/types.h>

RELHASH_BEGIN_DECLS

struct relhash_table;

/* ==================================================================== */
/* Lifecycle                                                            */
/* ==================================================================== */

/*
 * Create a table.  Keys: with key_len > 0 the key is key_len bytes at
 * key_offset, hashed by hashfn (default relhash_hash()) and compared with
 * memcmp unless cmpfn is given.  With key_len == 0, hashfn, obj_hashfn and
 * cmpfn are all required, and the key of an object (for duplicate checks) is
 * the address obj + key_offset.  Sizes must be powers of two, min_size <=
 * max_size; initial_size is clamped to [min_size, max_size].  Defaults:
 * initial 64 buckets, min 4, no max (2^31 in practice).
 * Returns NULL with errno EINVAL (bad params) or ENOMEM.
 * Read-side section: may be called inside or outside one.
 * Ordering: none of its own: the table is complete when the call returns;
 * hand the pointer to other threads with synchronization of your own (a
 * mutex, a release store, creating the thread).
 */
RELHASH_API struct relhash_table *relhash_create(const struct relhash_params *params);

/*
 * Destroy a table.  No other thread may use it any more, and the caller must
 * not be inside a read-side section.  Waits for (never deadlocks with) an
 * automatic resize in progress.  Calls free_fn(obj, arg) on each remaining
 * object when free_fn is not NULL, directly (no grace period: nobody else can
 * reach them).
 * Read-side section: must not be called inside one (it aborts the process).
 * Ordering: every other thread's use of t must happen before the call (join
 * those threads, or hand over through a lock); the call synchronizes with
 * the table's resize thread itself.
 */
RELHASH_API void relhash_destroy(struct relhash_table *t,
                                 void (*free_fn)(void *obj, void *arg), void *arg);

/* ==================================================================== */
/* Hash functions (relhash_params.hashfn)                               */
/* ==================================================================== */

/* The library's keyed hash, the default hashfn: fast, and with a secret
 * seed no keys are known to collide; not a PRF (relhash_hash(3) says what
 * it does and does not protect against).
 * Read-side section: may be called anywhere.  Ordering: none (a pure
 * function of its arguments). */
RELHASH_API uint64_t relhash_hash(const void *key, size_t key_len, uint64_t seed);

/*
 * SipHash-1-3 (Aumasson and Bernstein, INDOCRYPT 2012) keyed by the seed: a
 * pseudo-random function, for tables whose keys an attacker chooses (pass
 * it as relhash_params.hashfn).  The secret is the seed's 64 bits.  Slower
 * than relhash_hash(), which is fast but no PRF (relhash_hash(3)).
 * Read-side section: may be called anywhere.  Ordering: none (a pure
 * function of its arguments).
 */
RELHASH_API uint64_t relhash_siphash(const void *key, size_t key_len, uint64_t seed);

/* ==================================================================== */
/* Lookups                                                              */
/* ==================================================================== */

/*
 * Every lookup below (relhash_hash_key() is no lookup) must be called
 * inside a read-side critical section and returns objects that stay valid
 * until that section ends.  Ordering: each chain pointer is loaded with
 * acquire (C11's spelling of rcu_dereference), pairing with the release
 * store that published it: an object found is seen with the contents it
 * had when it was inserted (relhash_insert()) or swapped in
 * (relhash_replace()).
 * A lookup orders nothing else (no fence, no read-modify-write, no lock),
 * and an update concurrent with it may or may not be seen.
 */

/*
 * The object with this key, or NULL.  Call inside a read-side critical
 * section; the object stays valid until that section ends.  Wait-free.
 * Read-side section: must be called inside one.
 * Ordering: as above.
 */
RELHASH_API void *relhash_lookup(struct relhash_table *t, const void *key);

/*
 * The hash the table uses for key now: its hashfn (or relhash_hash()) with
 * its current seed.  For callers that hash a key once and look it up
 * several times.  The hash is valid until the table next rehashes with a
 * new seed, which a table does by itself when a chain grows longer than
 * chance allows (doc/DESIGN.md section 12, "Healing");
 * relhash_lookup_hashed() stays correct with a stale hash, at the cost of
 * hashing the key again on a miss.
 * Read-side section: may be called inside or outside one.
 * Ordering: none.
 */
RELHASH_API uint64_t relhash_hash_key(struct relhash_table *t, const void *key);

/*
 * relhash_lookup() with the key's hash given.  With
 * hash == relhash_hash_key(t, key) it returns exactly what
 * relhash_lookup(t, key) returns; with any other hash, NULL or the object
 * with this key, never another object.  Same rules as relhash_lookup().
 * Read-side section: must be called inside one.
 * Ordering: as relhash_lookup().
 */
RELHASH_API void *relhash_lookup_hashed(struct relhash_table *t, const void *key,
                                        uint64_t hash);

/*
 * Look up n keys at once: objs[i] becomes what relhash_lookup(t, keys[i])
 * returns (NULL when absent); objs[n] and beyond are not written.  Returns
 * how many were found.  Call inside a read-side critical section; the
 * objects stay valid until it ends.  Faster than n lookups on tables that
 * do not fit in the cache: the memory accesses of up to 16 keys overlap.
 * Read-side section: must be called inside one.
 * Ordering: as relhash_lookup(), for each key.
 */
RELHASH_API size_t relhash_lookup_bulk(struct relhash_table *t,
                                       const void *const keys[], size_t n,
                                       void *objs[]);

/*
 * With RELHASH_DUPLICATES: the next object after obj with obj's key, or
 * NULL; NULL on a table without the flag.  Call inside the read-side
 * critical section in which obj was found (by any lookup, or by this
 * call); the object stays valid until it ends.  Walking a key's objects
 * from relhash_lookup() with relhash_lookup_next() visits every object with
 * that key that is in the table for the whole walk exactly once, and no
 * object with another key, also while the table resizes and while objects
 * of the same key are inserted and removed; objects inserted or removed
 * during the walk may or may not be visited.  The walk continues the
 * lookup's walk of one chain: k objects cost k steps more than one lookup
 * when they are together in their chain, which insertion into a table at
 * rest ensures (newest first).  Wait-free.
 * Read-side section: must be called inside the one in which obj was found.
 * Ordering: as relhash_lookup(), for each object returned.
 */
RELHASH_API void *relhash_lookup_next(struct relhash_table *t, const void *obj);

/*
 * The inline lookup (doc/DESIGN.md section 13).  Pass the same params
 * as to relhash_create(), as a constant: the compiler then inlines hashfn,
 * cmpfn and the fixed-size key comparison.  The fields read are
 * node_offset, key_offset, key_len, hashfn and cmpfn; they must be those
 * the table was created with.  The seed is the table's current one, not
 * params.seed (a rehash replaces it).  Returns exactly what
 * relhash_lookup() returns; same rules.
 * Read-side section: must be called inside one.
 * Ordering: as relhash_lookup().
 */
#if !defined(RELHASH_NO_INLINE)
#include <relhash/inline.h>
static RELHASH_ALWAYS_INLINE void *relhash_lookup_fast(struct relhash_table *t, const void *key,
                                        const struct relhash_params params)
{
	return relhash__lookup_inline(t, key, &params);
}

/* The inline form of relhash_lookup_bulk(); params as for
 * relhash_lookup_fast().  Returns exactly what relhash_lookup_bulk()
 * returns.  Read-side section: must be called inside one.  Ordering: as
 * relhash_lookup(). */
static RELHASH_ALWAYS_INLINE size_t relhash_lookup_bulk_fast(struct relhash_table *t,
                                              const void *const keys[],
                                              size_t n, void *objs[],
                                              const struct relhash_params params)
{
	return relhash__lookup_bulk_inline(t, keys, n, objs, &params);
}
#else
static inline void *relhash_lookup_fast(struct relhash_table *t, const void *key,
                                        const struct relhash_params params)
{
	(void)params;
	return relhash_lookup(t, key);
}

static inline size_t relhash_lookup_bulk_fast(struct relhash_table *t,
                                              const void *const keys[],
                                              size_t n, void *objs[],
                                              const struct relhash_params params)
{
	(void)params;
	return relhash_lookup_bulk(t, keys, n, objs);
}
#endif

/* ==================================================================== */
/* Updates                                                              */
/* ==================================================================== */

/*
 * Updates of one key are serialized by the lock of its family (one bucket
 * stripe): each happens before the next update of the same key, whatever
 * the threads.
 */

/*
 * Insert an object.  0, -EEXIST when an object with an equal key is in the
 * table (nothing changes; the caller still owns its object), -EINVAL for a
 * NULL argument.  The object is visible to lookups that begin after the call
 * returns.  Takes one bucket lock; never waits for a grace period.
 *
 * Back-pressure: with RELHASH_AUTO_RESIZE, an insertion made outside any
 * read-side section and not from a callback, into a table holding more
 * objects than it has buckets while its expansion is pending, waits after
 * inserting (holding no lock) until the load is back under that limit, at
 * most 100 ms (and after a wait that timed out, none waits again until the
 * resize thread has made progress).  Inside a section it never waits.
 * Read-side section: may be called inside or outside one.
 * Ordering: the node is linked with a release store after its link and
 * cached hash are written: a reader that finds the object sees its
 * contents, and everything the inserting thread wrote before the call, as
 * they were at the call (release/acquire pairing through the published
 * pointer).  A lookup that happens after the call returns finds it, unless
 * it was removed meanwhile.
 */
RELHASH_API int relhash_insert(struct relhash_table *t, struct relhash_node *node);

/*
 * Insert node, or find the object already in the table with its key.  0:
 * inserted.  -EEXIST: an object with an equal key is in the table; nothing
 * changes, and when existing is not NULL, *existing is that object, valid
 * until the caller's read-side critical section ends (so a caller passing
 * existing must be inside one).  -EINVAL as relhash_insert().  One atomic
 * step: of racing calls with equal keys exactly one inserts, and every
 * other gets an object that was in the table when its call took effect
 * (the winner's, unless it was removed or replaced meanwhile).  Same
 * locking and visibility as relhash_insert().
 * Read-side section: must be called inside one when existing is not NULL;
 * otherwise may be called inside or outside one.
 * Ordering: an insertion as relhash_insert(); on -EEXIST the call took the
 * family lock after the insertion of *existing released it, so the caller
 * sees that object's contents as they were when it was inserted.
 */
RELHASH_API int relhash_insert_or_get(struct relhash_table *t,
                                      struct relhash_node *node,
                                      void **existing);

/*
 * Remove an object.  0, -ENOENT when this node is not in the table, -EINVAL
 * for a NULL argument.  After 0 the caller owns the object, but must let a
 * grace period pass before freeing or reusing it.
 * Read-side section: may be called inside or outside one.
 * Ordering: every pointer to the node is redirected with a release store,
 * under the family lock; the node's own link is left as it was, so a
 * reader standing on it goes on.  A lookup that happens after the call
 * returns does not find the object (unless it is inserted again); lookups
 * concurrent with it may, until their sections end.  Hence the grace
 * period: relhash_synchronize() after the call, or relhash_defer_free() or
 * relhash_call() queued after it.
 */
RELHASH_API int relhash_remove(struct relhash_table *t, struct relhash_node *node);

/*
 * Atomically swap old_node for new_node, whose key must equal old_node's.  A
 * concurrent lookup sees one of the two objects, never neither.  0, -EINVAL
 * (keys differ, NULL, or new_node == old_node), -ENOENT (old_node is not in
 * the table), -EEXIST (with RELHASH_DUPLICATES: new_node is in the table
 * already).  Grace-period rule for old_node as for relhash_remove().
 * Read-side section: may be called inside or outside one.
 * Ordering: new_node is published with a release store, as
 * relhash_insert() publishes: a reader that finds it sees its contents as
 * they were at the call.  A lookup that happens after the call returns
 * finds new_node where it would have found old_node; old_node as after
 * relhash_remove().
 */
RELHASH_API int relhash_replace(struct relhash_table *t, struct relhash_node *old_node,
                                struct relhash_node *new_node);

/* ==================================================================== */
/* Resizing                                                             */
/* ==================================================================== */

/*
 * Set the number of buckets to nbuckets, a power of two in [min_size,
 * max_size], and return when done: 0, -EINVAL, -ENOMEM (the table is
 * unchanged), or -EDEADLK inside a read-side section.  Lookups and updates
 * go on meanwhile.  Shrinking by any factor splices chains and waits one
 * grace period; expanding doubles repeatedly, each doubling publishing a
 * zipped table and unzipping one link per chain per grace period.
 * Concurrent resizes (explicit or automatic) are serialized.
 * Read-side section: must not be called inside one.
 * Ordering: none for the caller's data; lookups and updates stay correct
 * throughout.  After 0, relhash_size() in the same thread returns nbuckets
 * until another resize runs.  A resize may wait for grace periods but
 * promises none (a resize to the current size waits for nothing): it does
 * not make anything safe to free.
 */
RELHASH_API int relhash_resize(struct relhash_table *t, size_t nbuckets);

/* ==================================================================== */
/* Iteration                                                            */
/* ==================================================================== */

/*
 * Iteration, inside one read-side critical section: every object that stays
 * in the table for the whole walk is returned exactly once, even while the
 * table resizes; objects inserted or removed meanwhile may or may not be.
 * Both return NULL at the end.
 * Read-side section: must be called inside one, the same for the whole
 * walk.
 * Ordering: as relhash_lookup(), for each object returned.
 */
RELHASH_API void *relhash_iter_first(struct relhash_table *t, struct relhash_iter *it);
RELHASH_API void *relhash_iter_next(struct relhash_iter *it);

/* ==================================================================== */
/* Introspection and statistics                                         */
/* ==================================================================== */

/* Number of objects; exact when no update is in flight.
 * Read-side section: may be called inside or outside one.
 * Ordering: none: a relaxed load of each of the 64 per-thread counters;
 * updates that happen before the call are counted, concurrent ones may or
 * may not be. */
RELHASH_API size_t relhash_count(struct relhash_table *t);

/* Number of buckets of the table readers currently use.
 * Read-side section: may be called inside or outside one (it enters one).
 * Ordering: the bucket array is loaded with acquire; a resize concurrent
 * with the call may or may not be seen. */
RELHASH_API size_t relhash_size(struct relhash_table *t);

/*
 * Counters of one table (resizes done, grace periods waited, ...).  Set
 * stats->size first (the size rule of <relhash/types.h>).  Returns 0, or
 * -EINVAL (stats untouched) when t or stats is NULL or stats->size is too
 * small.  (doc/DESIGN.md, "Additions to the API", says why this and the
 * hash functions exist.)
 * Read-side section: may be called inside or outside one.
 * Ordering: none: each counter is a relaxed load of its own, so the
 * figures are not one instant's.
 */
RELHASH_API int relhash_table_stats(struct relhash_table *t,
                                    struct relhash_table_stats *stats);

RELHASH_END_DECLS

#endif /* RELHASH_TABLE_H */
