/*
 * relhash/types.h - the types of the public API, apart from the operations
 * (in the manner of Linux's rhashtable-types.h), so that a header declaring a
 * struct that embeds a relhash_node need not pull in every prototype.
 */
#ifndef RELHASH_TYPES_H
#define RELHASH_TYPES_H

#include <stddef.h>
#include <stdint.h>

#include <relhash/common.h>

RELHASH_BEGIN_DECLS

/*
 * Embed in objects that are handed to relhash_call() to be processed after a
 * grace period.  Both fields belong to the library from relhash_call() until
 * func runs.
 */
struct relhash_head {
	struct relhash_head *next;
	void (*func)(struct relhash_head *head);
};

/*
 * Embed one in every object stored in a table.  Private: the chain link and
 * the object's cached 64-bit hash, so that resizing never calls back into
 * user code and lookups compare hashes before keys.  The layout is ABI (the
 * inline lookup in <relhash/inline.h> reads it).  In C++ next is a
 * std::atomic, so an object that embeds a node has no implicit copy
 * constructor: copy its other members (the node belongs to the table).
 */
struct relhash_node {
	RELHASH__ATOMIC(struct relhash_node *) next; /* <relhash/common.h> */
	uint64_t hash;
};

/* relhash_params.flags */
/*
 * RELHASH_AUTO_RESIZE: a library thread doubles the table while its load is
 * over 75 % and halves it while under 30 %.  It never shrinks below
 * initial_size until the table has once held 75 % of initial_size objects
 * (the load that size was chosen for), nor below min_size.  Insertions may
 * be throttled while the table is far behind (relhash_insert()).
 */
#define RELHASH_AUTO_RESIZE 0x1u

/*
 * RELHASH_DUPLICATES: the table keeps any number of objects with equal
 * keys.  relhash_insert() returns -EEXIST only for a node that is in the
 * table already: it puts the object first among its key's objects (in the
 * table's chain order);
 * relhash_lookup() returns one of them, usually the one inserted last,
 * and relhash_lookup_next() walks the rest.  relhash_insert_or_get() still
 * inserts only when no object has the key.  relhash_remove() and
 * relhash_replace() act on the node they are given.  Counts, loads and
 * iteration count objects, not keys.
 */
#define RELHASH_DUPLICATES 0x2u

struct relhash_params {
	size_t node_offset; /* offsetof(object, its struct relhash_node) */
	size_t key_offset;  /* offsetof(object, its key) */
	size_t key_len;     /* key bytes, compared with memcmp; 0 = custom keys */
	/* hash of a key; NULL = relhash_hash() (only with key_len > 0).
	 * hashfn, obj_hashfn and cmpfn are called from any thread, the
	 * library's resize thread too (a rehash with a new seed). */
	uint64_t (*hashfn)(const void *key, size_t key_len, uint64_t seed);
	/* hash of an object; custom keys only; must equal hashfn of its key */
	uint64_t (*obj_hashfn)(const void *obj, uint64_t seed);
	/* 0 when obj has key; NULL = memcmp of key_len bytes */
	int (*cmpfn)(const void *key, const void *obj);
	uint64_t seed;       /* 0 = random per table */
	size_t initial_size; /* buckets, power of two; 0 = library default;
	                        with auto-resize also a floor, see above */
	size_t min_size;     /* power of two; 0 = library default */
	size_t max_size;     /* power of two; 0 = no limit */
	unsigned flags;      /* RELHASH_AUTO_RESIZE, RELHASH_DUPLICATES */
};

/*
 * Iterator state.  Private; valid only inside the read-side critical section
 * in which relhash_iter_first() was called.  (member: the position in a
 * rehash's snapshot, doc/DESIGN.md section 12, "Healing".)
 */
struct relhash_iter {
	struct relhash_table *table;
	const void *buckets;
	size_t bucket;
	struct relhash_node *node;
	size_t member;
};

/*
 * The statistics structs begin with their own size, so that they can grow
 * without an ABI break (in the manner of libbpf's opts structs and the
 * size field of Linux's perf_event_attr).  The caller sets size to the
 * size of its struct before the call:
 *
 *	struct relhash_epoch_stats s = { .size = sizeof(s) };
 *
 * and the library writes only the bytes that size holds: a program built
 * against older headers, whose struct is shorter, gets the fields it
 * knows.  On return size is the number of bytes the library wrote, the
 * smaller of the caller's size and its own struct's: a program built
 * against newer headers than the library learns there which fields were
 * filled.  New fields are only ever appended.  A size too small to hold
 * the size field itself (0, say, from a struct cleared but not sized) is
 * refused with -EINVAL, and the struct is left untouched.
 */

/* Counters of the grace-period engine (relhash_epoch_stats()). */
struct relhash_epoch_stats {
	size_t size;                /* set by the caller: see above */
	uint64_t grace_periods;     /* grace periods completed */
	uint64_t callbacks_queued;  /* relhash_call/defer_free so far */
	uint64_t callbacks_run;     /* callbacks run so far */
	uint64_t callbacks_pending; /* queued and not yet run */
	uint64_t backpressure_waits; /* callers that waited on the limit */
	uint64_t stall_warnings;    /* stalled-reader warnings printed */
	int uses_membarrier;        /* 1: membarrier(2); 0: fence fallback */
	/* relhash_defer_local() calls, counted a block of 60 at a time as
	 * their thread closes it: the calls in a thread's open block are
	 * not in these, nor calls made without memory for a block. */
	uint64_t local_calls_queued;  /* in blocks closed so far */
	uint64_t local_calls_done;    /* of those, run, or handed to the
	                                 callback thread by a thread that
	                                 left (then counted as callbacks) */
	uint64_t local_calls_pending; /* queued and not yet done */
};

/* Counters of one table (relhash_table_stats()). */
struct relhash_table_stats {
	size_t size;             /* set by the caller: see above */
	uint64_t resizes;        /* completed size changes (each doubling or
	                            each shrink counts once) */
	uint64_t grace_periods;  /* grace periods the resizer waited for */
	uint64_t unzip_passes;   /* expansion passes that patched a link */
	size_t nbuckets;         /* current size */
	size_t nlocks;           /* update locks in use */
	uint64_t throttled_inserts; /* insertions held by back-pressure
	                               (relhash_insert()) */
	uint64_t helped_chunks;  /* chunks of unzip work (64 families) done
	                            by insertions held by back-pressure */
	/* The longest chain an insertion has walked, once it is 4 or more
	 * (0 before): with a hash that spreads the keys it stays near the
	 * load.  A flood of colliding keys shows here first. */
	uint64_t longest_chain;
	/* The most distinct keys an insertion found sharing one 64-bit hash
	 * (its own key included), once it is 2 or more: more than a few means
	 * the hash function ignores its seed, or the seed is known to whoever
	 * chose the keys (relhash_hash(3)). */
	uint64_t equal_hash_keys;
	/* Rehashes with a new random seed, each after an insertion walked a
	 * chain of more distinct keys than chance allows (doc/DESIGN.md
	 * section 12, "Healing"). */
	uint64_t rehashes;
	/* 1 once the table found that its hash function ignores the seed
	 * (or that obj_hashfn disagrees with hashfn under another seed): it
	 * then stopped rehashing, and said so once on stderr. */
	int rehash_stopped;
	/* Insertions held by back-pressure that waited its full bound (100
	 * ms) with the load still over the limit: the resize thread lacked a
	 * CPU, waited for a grace period that a long read-side section held
	 * up, or is more than a doubling behind.  Until its next step no
	 * insertion waits, and the load rises past the limit. */
	uint64_t throttle_timeouts;
};

RELHASH_END_DECLS

#endif /* RELHASH_TYPES_H */
