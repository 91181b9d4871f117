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

/*
 * Create a table.  Keys: with key_len > 0 the key is key_len bytes at
 * key_offset, hashed by hashfn (default relhash_hash()) and compared with
 * memcmp unless cmpfn is given.  With key_len == 0, hashfn, obj_hashfn and
 * cmpfn are all required, and the key of an object (for duplicate checks) is
 * the address obj + key_offset.  Sizes must be powers of two, min_size <=
 * max_size; initial_size is clamped to [min_size, max_size].  Defaults:
 * initial 64 buckets, min 4, no max (2^31 in practice).
 * Returns NULL with errno EINVAL (bad params) or ENOMEM.
 */
RELHASH_API struct relhash_table *relhash_create(const struct relhash_params *params);

/*
 * Destroy a table.  No other thread may use it any more, and the caller must
 * not be inside a read-side section.  Waits for (never deadlocks with) an
 * automatic resize in progress.  Calls free_fn(obj, arg) on each remaining
 * object when free_fn is not NULL, directly (no grace period: nobody else can
 * reach them).
 */
RELHASH_API void relhash_destroy(struct relhash_table *t,
                                 void (*free_fn)(void *obj, void *arg), void *arg);

/*
 * The object with this key, or NULL.  Call inside a read-side critical
 * section; the object stays valid until that section ends.  Wait-free.
 */
RELHASH_API void *relhash_lookup(struct relhash_table *t, const void *key);

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
 * rest ensures (newest first).  Wait-free; ordering as relhash_lookup().
 */
RELHASH_API void *relhash_lookup_next(struct relhash_table *t, const void *obj);

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
 */
RELHASH_API int relhash_insert(struct relhash_table *t, struct relhash_node *node);

/*
 * Remove an object.  0, -ENOENT when this node is not in the table, -EINVAL
 * for a NULL argument.  After 0 the caller owns the object, but must let a
 * grace period pass before freeing or reusing it.
 */
RELHASH_API int relhash_remove(struct relhash_table *t, struct relhash_node *node);

/*
 * Atomically swap old_node for new_node, whose key must equal old_node's.  A
 * concurrent lookup sees one of the two objects, never neither.  0, -EINVAL
 * (keys differ, NULL, or new_node == old_node), -ENOENT (old_node is not in
 * the table), -EEXIST (with RELHASH_DUPLICATES: new_node is in the table
 * already).  Grace-period rule for old_node as for relhash_remove().
 */
RELHASH_API int relhash_replace(struct relhash_table *t, struct relhash_node *old_node,
                                struct relhash_node *new_node);

/*
 * Set the number of buckets to nbuckets, a power of two in [min_size,
 * max_size], and return when done: 0, -EINVAL, -ENOMEM (the table is
 * unchanged), or -EDEADLK inside a read-side section.  Lookups and updates
 * go on meanwhile.  Shrinking by any factor splices chains and waits one
 * grace period; expanding doubles repeatedly, each doubling publishing a
 * zipped table and unzipping one link per chain per grace period.
 * Concurrent resizes (explicit or automatic) are serialized.
 */
RELHASH_API int relhash_resize(struct relhash_table *t, size_t nbuckets);

/* Number of objects; exact when no update is in flight. */
RELHASH_API size_t relhash_count(struct relhash_table *t);

/* Number of buckets of the table readers currently use. */
RELHASH_API size_t relhash_size(struct relhash_table *t);

/*
 * Iteration, inside one read-side critical section: every object that stays
 * in the table for the whole walk is returned exactly once, even while the
 * table resizes; objects inserted or removed meanwhile may or may not be.
 * Both return NULL at the end.
 */
RELHASH_API void *relhash_iter_first(struct relhash_table *t, struct relhash_iter *it);
RELHASH_API void *relhash_iter_next(struct relhash_iter *it);

/*
 * Beyond the core calls: the default hash and statistics (doc/DESIGN.md,
 * "Additions to the API", says why each exists).
 */

/* The library's keyed hash, the default hashfn: fast, and with a secret
 * seed no keys are known to collide; not a PRF (relhash_hash(3) says what
 * it does and does not protect against). */
RELHASH_API uint64_t relhash_hash(const void *key, size_t key_len, uint64_t seed);

/*
 * SipHash-1-3 (Aumasson and Bernstein, INDOCRYPT 2012) keyed by the seed: a
 * pseudo-random function, for tables whose keys an attacker chooses (pass
 * it as relhash_params.hashfn).  The secret is the seed's 64 bits.  Slower
 * than relhash_hash(), which is fast but no PRF (relhash_hash(3)).
 */
RELHASH_API uint64_t relhash_siphash(const void *key, size_t key_len, uint64_t seed);

/* Counters of one table (resizes done, grace periods waited, ...). */
RELHASH_API void relhash_table_stats(struct relhash_table *t,
                                     struct relhash_table_stats *stats);

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
 */
RELHASH_API int relhash_insert_or_get(struct relhash_table *t,
                                      struct relhash_node *node,
                                      void **existing);

/*
 * The hash the table uses for key: its hashfn (or relhash_hash()) with its
 * seed.  For callers that hash a key once and look it up several times.
 * A table keeps its seed for its whole life, so the hash stays valid as
 * long as the table does.  A pure function of key and the table; may be
 * called anywhere.
 */
RELHASH_API uint64_t relhash_hash_key(struct relhash_table *t, const void *key);

/*
 * relhash_lookup() with the key's hash given.  With
 * hash == relhash_hash_key(t, key) it returns exactly what
 * relhash_lookup(t, key) returns; with any other hash, NULL or the object
 * with this key, never another object.  Same rules as relhash_lookup().
 */
RELHASH_API void *relhash_lookup_hashed(struct relhash_table *t, const void *key,
                                        uint64_t hash);

/*
 * Look up n keys at once: objs[i] becomes what relhash_lookup(t, keys[i])
 * returns (NULL when absent); objs[n] and beyond are not written.  Returns
 * how many were found.  Call inside a read-side critical section; the
 * objects stay valid until it ends.  Faster than n lookups on tables that
 * do not fit in the cache: the memory accesses of up to 16 keys overlap.
 */
RELHASH_API size_t relhash_lookup_bulk(struct relhash_table *t,
                                       const void *const keys[], size_t n,
                                       void *objs[]);

/*
 * The inline lookup (doc/DESIGN.md section 13).  Pass the same params
 * as to relhash_create(), as a constant: the compiler then inlines hashfn,
 * cmpfn and the fixed-size key comparison, and a non-zero seed folds into
 * the hash.  The fields read are node_offset, key_offset, key_len, hashfn,
 * cmpfn and seed; they must be those the table was created with (with seed
 * 0, the table's random seed is used).  Returns exactly what
 * relhash_lookup() returns; same rules.
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
 * returns. */
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

RELHASH_END_DECLS

#endif /* RELHASH_TABLE_H */
