/*
 * relhash/inline.h - the fast paths compiled into the caller, and the memory
 * layout they read.
 *
 * EVERYTHING IN THIS FILE IS ABI.  The inline read-side critical section and
 * the inline lookup read the per-thread reader record, the global epoch, the
 * head of struct relhash_table, the bucket array and struct relhash_node
 * directly.  Any change to these layouts or to the protocol below must bump
 * the libtool -version-info "current" (and reset "age") in Makefile.am.
 *
 * Users never include this file themselves: <relhash/epoch.h> and
 * <relhash/table.h> do, unless RELHASH_NO_INLINE is defined (or relhash was
 * configured with --disable-inline), in which case every fast path is an
 * ordinary call into librelhash and no layout is shared.
 *
 * Names with a double underscore (relhash__*) are internal: exported only
 * because inline code needs them.
 *
 * Memory ordering.  The fields that other threads write are atomic:
 * RELHASH__ATOMIC(T) (<relhash/common.h>) is _Atomic(T) in C and
 * std::atomic<T> in C++, and the accesses below go through a small
 * vocabulary with the same meaning in both languages: <stdatomic.h>'s
 * atomic_*_explicit in C, std::atomic's member functions in C++.  The
 * library itself uses <stdatomic.h> (src/base/atomics.h).  Under
 * ThreadSanitizer (which does not model membarrier(2)) the unlock store
 * becomes a release store, so that TSan sees the reader-to-reclaimer
 * happens-before edge that membarrier provides in real builds.
 */
#ifndef RELHASH_INLINE_H
#define RELHASH_INLINE_H

#include <stdint.h>
#include <string.h>

#include <relhash/types.h>

RELHASH_BEGIN_DECLS

#if defined(__SANITIZE_THREAD__)
#define RELHASH__TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define RELHASH__TSAN 1
#endif
#endif

/* Accesses to RELHASH__ATOMIC fields, and a compiler-only barrier. */
#ifdef __cplusplus
#define RELHASH__RELAXED std::memory_order_relaxed
#define RELHASH__ACQUIRE std::memory_order_acquire
#define RELHASH__RELEASE std::memory_order_release
#define RELHASH__LOAD(p, order) ((p)->load(order))
#define RELHASH__STORE(p, v, order) ((p)->store((v), (order)))
#define RELHASH__COMPILER_BARRIER() \
	std::atomic_signal_fence(std::memory_order_seq_cst)
#else
#define RELHASH__RELAXED memory_order_relaxed
#define RELHASH__ACQUIRE memory_order_acquire
#define RELHASH__RELEASE memory_order_release
#define RELHASH__LOAD(p, order) atomic_load_explicit((p), (order))
#define RELHASH__STORE(p, v, order) atomic_store_explicit((p), (v), (order))
#define RELHASH__COMPILER_BARRIER() atomic_signal_fence(memory_order_seq_cst)
#endif

#ifdef RELHASH__TSAN
#define RELHASH__UNLOCK_ORDER RELHASH__RELEASE
#else
#define RELHASH__UNLOCK_ORDER RELHASH__RELAXED
#endif

/* ---------------------------------------------------------------------- */
/* Read-side critical sections                                             */

/*
 * The reader's word, relhash__reader.ctr:
 *
 *   bits 63..16  the epoch its outermost section began in
 *   bit  15      RELHASH__SLOW: take the out-of-line path (a thread not yet
 *                registered, or every thread in fence mode)
 *   bits 14..0   nesting depth; 0 = quiescent
 *
 * In membarrier mode a quiescent registered thread's word is exactly 0, so
 * the outermost lock is "load the word, test it, store the global word":
 * one branch, no flag to check.  The global word relhash__gp.ctr holds
 * (epoch << 16) | 1, the value an outermost lock stores.  Epochs compare
 * modulo 2^48 (doc/DESIGN.md, "The reader's word").
 */
#define RELHASH__NEST_MASK 0x7fffu
#define RELHASH__SLOW 0x8000u
#define RELHASH__EPOCH_SHIFT 16
#define RELHASH__EPOCH_ONE (1ull << RELHASH__EPOCH_SHIFT)
#define RELHASH__EPOCH_MASK (~(RELHASH__EPOCH_ONE - 1))

/* relhash__reader.mode: read only by the slow paths. */
#define RELHASH__MODE_UNREGISTERED 0 /* first use in this thread */
#define RELHASH__MODE_MEMBARRIER 1   /* fast path: writers use membarrier(2) */
#define RELHASH__MODE_FENCE 2        /* fallback: fences on the read side */

/*
 * One per thread, in thread-local storage with the initial-exec model (so an
 * access is one %fs-relative instruction).  Only the owning thread writes
 * ctr and mode; grace-period waiters read ctr.  wake is set by a waiter that
 * sleeps and cleared by the owner.  A new thread's record starts with
 * ctr = RELHASH__SLOW, so its first read_lock registers it.
 */
struct relhash__reader {
	RELHASH__ATOMIC(uint64_t) ctr;  /* see above */
	uint8_t mode;                   /* RELHASH__MODE_*; owner only */
	RELHASH__ATOMIC(uint8_t) wake;  /* a grace-period waiter sleeps on
	                                   this reader */
	uint8_t reserved[6];
};

extern RELHASH_API __thread struct relhash__reader relhash__self
	__attribute__((tls_model("initial-exec")));

/*
 * The global word, alone in its cache line: every outermost read_lock
 * loads it, so nothing that is written may share the line (with a copy
 * relocation the word lives in the executable's .bss, next to whatever
 * the program has there; the object's size and alignment keep those out).
 * ctr = (epoch << 16) | 1: the epoch starts at 1 and is incremented at the
 * start of each grace period.
 */
struct relhash__gp {
	RELHASH__ATOMIC(uint64_t) ctr;
	uint64_t reserved[7];
};
extern RELHASH_API struct relhash__gp relhash__gp __attribute__((aligned(64)));

/* Out-of-line halves: registration on first use, the fence fallback, and
 * waking a sleeping grace-period waiter. */
RELHASH_API void relhash__read_lock_slow(struct relhash__reader *r);
RELHASH_API void relhash__read_unlock_slow(struct relhash__reader *r);
RELHASH_API void relhash__reader_wake(struct relhash__reader *r);

/* The outermost read_lock's store, shared by the inline and slow paths;
 * flags is 0 or RELHASH__SLOW. */
static RELHASH_ALWAYS_INLINE void relhash__reader_begin(struct relhash__reader *r,
                                                        uint64_t flags)
{
	/*
	 * Acquire: a reader that sees the epoch of a grace period that has
	 * started also sees every update made before it started (the
	 * increment is a seq_cst read-modify-write).  A plain load on x86.
	 * The store needs no ordering: the writer's membarrier(2) makes it
	 * visible, or orders this section's later loads after the updates
	 * (doc/DESIGN.md, "Why a plain store is enough").
	 */
	RELHASH__STORE(&r->ctr,
	               RELHASH__LOAD(&relhash__gp.ctr, RELHASH__ACQUIRE) | flags,
	               RELHASH__RELAXED);
	/* Keep the section's loads after the store, as far as the compiler
	 * goes; membarrier(2) does the rest for the processor. */
	RELHASH__COMPILER_BARRIER();
}

static RELHASH_ALWAYS_INLINE void relhash__read_lock_inline(void)
{
	struct relhash__reader *r = &relhash__self;
	/* Relaxed: only this thread writes its word. */
	uint64_t c = RELHASH__LOAD(&r->ctr, RELHASH__RELAXED);

	if (RELHASH_LIKELY(c == 0))
		relhash__reader_begin(r, 0); /* outermost */
	else if (RELHASH_LIKELY((c & (RELHASH__SLOW | RELHASH__NEST_MASK)) <
	                        RELHASH__NEST_MASK))
		/* Nested: the depth changes, the epoch does not, so a
		 * waiter's view of this reader does not either.  (At the
		 * maximum depth the slow path aborts: one more would carry
		 * into the flag and make the reader look quiescent.) */
		RELHASH__STORE(&r->ctr, c + 1, RELHASH__RELAXED);
	else
		relhash__read_lock_slow(r);
}

static RELHASH_ALWAYS_INLINE void relhash__read_unlock_inline(void)
{
	struct relhash__reader *r = &relhash__self;
	/* Relaxed: only this thread writes its word. */
	uint64_t c = RELHASH__LOAD(&r->ctr, RELHASH__RELAXED);

	if (RELHASH_UNLIKELY((uint16_t)c != 1)) {
		/* Depth 2..32,767 without SLOW: the low 16 bits minus 2 are
		 * at most 32,765 (0 and 1 wrap to 65,534 and 65,535). */
		if ((uint16_t)(c - 2) <= RELHASH__NEST_MASK - 2) /* nested */
			RELHASH__STORE(&r->ctr, c - 1, RELHASH__RELAXED);
		else /* fence mode, or an unlock without a lock */
			relhash__read_unlock_slow(r);
		return;
	}
	/* Compiler barrier: the section's loads stay before the store. */
	RELHASH__COMPILER_BARRIER();
	RELHASH__STORE(&r->ctr, 0, RELHASH__UNLOCK_ORDER);
	/* Compiler barrier: the wake check stays after the store.  The
	 * waiter's membarrier(2) between setting wake and re-reading ctr
	 * closes the store-load window (Dekker; doc/DESIGN.md). */
	RELHASH__COMPILER_BARRIER();
	if (RELHASH_UNLIKELY(RELHASH__LOAD(&r->wake, RELHASH__RELAXED)))
		relhash__reader_wake(r);
}

static RELHASH_ALWAYS_INLINE int relhash__read_ongoing_inline(void)
{
	return (RELHASH__LOAD(&relhash__self.ctr, RELHASH__RELAXED) &
	        RELHASH__NEST_MASK) != 0;
}

/* ---------------------------------------------------------------------- */
/* The default keyed hash                                                  */

#define RELHASH__K0 0x9e3779b97f4a7c15ull
#define RELHASH__K1 0xbf58476d1ce4e5b9ull
#define RELHASH__K2 0x94d049bb133111ebull
#define RELHASH__K3 0xd6e8feb86659fd93ull

/*
 * 64x64 -> 128-bit product, folded by xor of its halves.  On x86-64 under
 * GCC (not Clang) the product is one mulq written out: inlined into a loop
 * with many live values, GCC 12 moves the __int128 through the stack
 * (a store and a reload, about 5 cycles on the lookup's critical path, twice
 * per hash).  The result is the same either way.
 */
static RELHASH_ALWAYS_INLINE uint64_t relhash__fold_mul(uint64_t a, uint64_t b)
{
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
	uint64_t lo, hi;
	__asm__("mulq %3" : "=a"(lo), "=d"(hi) : "%0"(a), "rm"(b) : "cc");
	return lo ^ hi;
#elif defined(__SIZEOF_INT128__)
	__uint128_t p = (__uint128_t)a * b;
	return (uint64_t)p ^ (uint64_t)(p >> 64);
#else
	uint64_t al = (uint32_t)a, ah = a >> 32, bl = (uint32_t)b, bh = b >> 32;
	uint64_t ll = al * bl, lh = al * bh, hl = ah * bl, hh = ah * bh;
	uint64_t mid = (ll >> 32) + (uint32_t)lh + (uint32_t)hl;
	uint64_t lo = (mid << 32) | (uint32_t)ll;
	uint64_t hi = hh + (lh >> 32) + (hl >> 32) + (mid >> 32);
	return lo ^ hi;
#endif
}

/*
 * Little-endian loads, so that a key hashes to the same value on every
 * target (the known answers of the tests hold on big-endian machines too).
 * On a little-endian target each is one load.
 */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define RELHASH__LE64(v) __builtin_bswap64(v)
#define RELHASH__LE32(v) __builtin_bswap32(v)
#else
#define RELHASH__LE64(v) (v)
#define RELHASH__LE32(v) (v)
#endif

static RELHASH_ALWAYS_INLINE uint64_t relhash__load64(const unsigned char *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return RELHASH__LE64(v);
}

static RELHASH_ALWAYS_INLINE uint64_t relhash__load32(const unsigned char *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return RELHASH__LE32(v);
}

/*
 * The library's keyed hash (exported as relhash_hash()).  Folded 64x64-bit
 * multiplication in the style of wyhash and rapidhash: 16 bytes per
 * multiplication, one more to finish.  Both operands of every
 * multiplication are masked by secrets drawn from the seed: the running
 * state (which starts at seed ^ K0) and s1 = seed * K1.  So no key makes an
 * operand zero, or swaps the two operands, without knowing the seed: the
 * zero-blinding and commutativity collisions of folded multiplication need
 * a public mask (doc/DESIGN.md, "The default hash").  Fast (about 1 ns for
 * an 8-byte key); NOT a cryptographic PRF: relhash_siphash() is.
 */
static RELHASH_ALWAYS_INLINE uint64_t relhash__hash_inline(const void *key, size_t len,
                                            uint64_t seed)
{
	const unsigned char *p = (const unsigned char *)key;
	/* The two secrets; K1 is odd, so s1 takes every value as the seed
	 * does.  With a constant seed both fold into constants. */
	uint64_t acc = seed ^ RELHASH__K0;
	const uint64_t s1 = seed * RELHASH__K1;
	uint64_t a, b;

	if (len <= 16) {
		if (len >= 8) {
			a = relhash__load64(p);
			b = relhash__load64(p + len - 8);
		} else if (len >= 4) {
			a = relhash__load32(p);
			b = relhash__load32(p + len - 4);
		} else if (len > 0) {
			a = ((uint64_t)p[0] << 16) | ((uint64_t)p[len >> 1] << 8) |
			    p[len - 1];
			b = 0;
		} else {
			a = b = 0;
		}
	} else {
		size_t n = len;
		while (n > 16) {
			acc = relhash__fold_mul(relhash__load64(p) ^ s1,
			                        relhash__load64(p + 8) ^ acc);
			p += 16;
			n -= 16;
		}
		a = relhash__load64(p + n - 16);
		b = relhash__load64(p + n - 8);
	}
	acc = relhash__fold_mul(a ^ s1, b ^ acc);
	return relhash__fold_mul(acc ^ RELHASH__K2, (uint64_t)len ^ RELHASH__K3);
}

/* ---------------------------------------------------------------------- */
/* Tables                                                                  */

/*
 * A bucket array: this header, then (mask + 1) chain heads, each a
 * RELHASH__ATOMIC(struct relhash_node *) like relhash_node.next.  Published
 * with a release store; freed only after a grace period.  The header is
 * written before publication and never after.
 */
struct relhash__buckets {
	size_t mask;        /* number of buckets - 1 */
	size_t rehashes;    /* rehashes of the table before this array: not 0,
	                       a caller's hash may be stale */
	uint64_t seed;      /* the seed of every hash in this array's chains */
	uint64_t walk_seed; /* seed, or 0 if rehash is set: the one word the
	                       inline lookup checks its seed hint against
	                       (doc/DESIGN.md section 13) */
	const void *rehash; /* while a rehash moves the table to a new seed,
	                       its state: lookups take the library's path
	                       (doc/DESIGN.md section 12, "Healing") */
};

static RELHASH_ALWAYS_INLINE RELHASH__ATOMIC(struct relhash_node *) *
relhash__heads(const struct relhash__buckets *b)
{
	return (RELHASH__ATOMIC(struct relhash_node *) *)(void *)(
		(struct relhash__buckets *)b + 1);
}

/* The first fields of struct relhash_table (the rest is private). */
struct relhash__table_head {
	/* the published array */
	RELHASH__ATOMIC(struct relhash__buckets *) buckets;
	/* The published array's seed, a hint, never 0: a lookup hashes with
	 * it while it loads the array, and leaves the lookup to the library
	 * unless it equals the array's walk_seed.  Relaxed: only the array's
	 * header counts. */
	RELHASH__ATOMIC(uint64_t) seed_hint;
};

/* The library's lookups where the inline ones leave them: of key in b
 * when b is being rehashed or a seed hint was not b's walk_seed; and of a
 * hash the caller computed before the table's last rehash (table.h's
 * rules). */
RELHASH_API void *relhash__lookup_slow(struct relhash_table *t,
                                       const struct relhash__buckets *b,
                                       const void *key);
RELHASH_API void *relhash__lookup_stale(struct relhash_table *t,
                                        const struct relhash__buckets *b,
                                        const void *key, uint64_t h);

/*
 * A hook run at each node of a lookup's walk.  Empty, except inside the
 * library's own debug builds, where it widens race windows
 * (src/base/debug.h).
 */
#ifndef RELHASH__LOOKUP_STEP_HOOK
#define RELHASH__LOOKUP_STEP_HOOK() ((void)0)
#endif

static RELHASH_ALWAYS_INLINE int relhash__key_equal(const void *a, const void *b, size_t len)
{
	/* Fixed-size keys compare as integers, not through memcmp. */
	if (len == 8)
		return relhash__load64((const unsigned char *)a) ==
		       relhash__load64((const unsigned char *)b);
	if (len == 4)
		return relhash__load32((const unsigned char *)a) ==
		       relhash__load32((const unsigned char *)b);
	return memcmp(a, b, len) == 0;
}

/* The hash of key with seed: the table's hashfn (or the default hash).
 * The seed is that of the array a chain belongs to, not params.seed: a
 * rehash replaces it. */
static RELHASH_ALWAYS_INLINE uint64_t relhash__hash_key_inline(const void *key,
                                               uint64_t seed,
                                               const struct relhash_params *p)
{
	return p->hashfn ? p->hashfn(key, p->key_len, seed)
	                 : relhash__hash_inline(key, p->key_len, seed);
}

/* The published bucket array.  Acquire: pairs with the resizer's release
 * store, so the array's mask and heads are initialised when seen. */
static RELHASH_ALWAYS_INLINE const struct relhash__buckets *
relhash__buckets_load(struct relhash_table *t)
{
	const struct relhash__table_head *th =
		(const struct relhash__table_head *)(const void *)t;

	return RELHASH__LOAD(&th->buckets, RELHASH__ACQUIRE);
}

/* The head of hash h's chain in b. */
static RELHASH_ALWAYS_INLINE struct relhash_node *
relhash__head_load(const struct relhash__buckets *b, uint64_t h)
{
	return RELHASH__LOAD(&relhash__heads(b)[h & b->mask], RELHASH__ACQUIRE);
}

/*
 * The walk of a lookup, from the head n of hash h's chain: no lock, no
 * read-modify-write, no retry, one walk to the chain's end (during a resize
 * a chain can hold nodes of other buckets, which the hash comparison
 * skips).  Every pointer load is an acquire load, the C11 spelling of
 * rcu_dereference(): it pairs with the release store that published the
 * node, so the node's fields are initialised when seen.  On x86 these are
 * plain loads.
 */
static RELHASH_ALWAYS_INLINE void *relhash__chain_find(struct relhash_node *n,
                                        const void *key, uint64_t h,
                                        const struct relhash_params *p)
{
	for (; n; n = RELHASH__LOAD(&n->next, RELHASH__ACQUIRE)) {
		const char *obj;

		RELHASH__LOOKUP_STEP_HOOK();

		if (n->hash != h)
			continue;
		obj = (const char *)n - p->node_offset;
		/* Equal 64-bit hashes almost always mean equal keys. */
		if (RELHASH_LIKELY(p->cmpfn ? p->cmpfn(key, obj) == 0
		                            : relhash__key_equal(key,
		                                      obj + p->key_offset,
		                                      p->key_len)))
			return (void *)obj;
	}
	return NULL;
}

/* The lookup of key whose hash is h, computed by the caller, perhaps
 * before the table's last rehash: a miss then hashes the key again. */
static RELHASH_ALWAYS_INLINE void *relhash__lookup_hashed_inline(struct relhash_table *t,
                                                  const void *key, uint64_t h,
                                                  const struct relhash_params *p)
{
	const struct relhash__buckets *b = relhash__buckets_load(t);
	void *obj;

	if (RELHASH_UNLIKELY(b->rehash != NULL))
		return relhash__lookup_slow(t, b, key);
	obj = relhash__chain_find(relhash__head_load(b, h), key, h, p);
	if (RELHASH_UNLIKELY(!obj && b->rehashes))
		obj = relhash__lookup_stale(t, b, key, h);
	return obj;
}

static RELHASH_ALWAYS_INLINE void *relhash__lookup_inline(struct relhash_table *t,
                                           const void *key,
                                           const struct relhash_params *p)
{
	const struct relhash__table_head *th =
		(const struct relhash__table_head *)(const void *)t;
	/* The hash starts before the array is loaded: its seed is a hint.
	 * Equal to b's walk_seed, it is b's seed and b is not being
	 * rehashed (walk_seed is 0 then, a hint never): one test for both,
	 * and the rarer paths out of line, where they hold no registers
	 * (doc/DESIGN.md section 13). */
	uint64_t seed = RELHASH__LOAD(&th->seed_hint, RELHASH__RELAXED);
	uint64_t h = relhash__hash_key_inline(key, seed, p);
	const struct relhash__buckets *b = relhash__buckets_load(t);

	if (RELHASH_UNLIKELY(b->walk_seed != seed))
		return relhash__lookup_slow(t, b, key);
	return relhash__chain_find(relhash__head_load(b, h), key, h, p);
}

/*
 * The bulk lookup, in groups of RELHASH__BULK_GROUP keys, built to overlap
 * the memory accesses of a group's lookups (the way DPDK's bulk lookup
 * does).  On a table whose bucket array has at least
 * RELHASH__BULK_PREFETCH_BUCKETS heads (256 KiB: likely not all cached):
 * hash every key and prefetch its bucket head, load every head and prefetch
 * its first node, then walk each chain with the single lookup's walk.  On a
 * smaller table the prefetches cost more than they save: hash every key and
 * load its head, then walk.  Either way every head of a group is loaded
 * before the first walk, so the walks' hard-to-predict branches do not
 * hold up the next keys' loads.  One load of the bucket array
 * serves the whole call: a lookup that loaded it a little earlier, which is
 * correct while the caller's section lasts (doc/DESIGN.md, "Hashed and
 * bulk lookups").  Prefetches are hints only.
 */
#define RELHASH__BULK_GROUP 16
#define RELHASH__BULK_PREFETCH_BUCKETS ((size_t)1 << 15)

/* One group of g <= RELHASH__BULK_GROUP keys.  prefetch is a constant at
 * each of the two call sites, so each gets its own loops without a test
 * per key. */
static RELHASH_ALWAYS_INLINE size_t relhash__lookup_group(const struct relhash__buckets *b,
                                          const void *const keys[], size_t g,
                                          void *objs[],
                                          const struct relhash_params *p,
                                          const int prefetch)
{
	uint64_t h[RELHASH__BULK_GROUP];
	struct relhash_node *first[RELHASH__BULK_GROUP];
	size_t found = 0, i;

	for (i = 0; i < g; i++) {
		h[i] = relhash__hash_key_inline(keys[i], b->seed, p);
		if (prefetch)
			__builtin_prefetch(&relhash__heads(b)[h[i] & b->mask]);
		else
			first[i] = relhash__head_load(b, h[i]);
	}
	for (i = 0; prefetch && i < g; i++) {
		first[i] = relhash__head_load(b, h[i]);
		if (first[i])
			__builtin_prefetch(first[i]);
	}
	for (i = 0; i < g; i++) {
		objs[i] = relhash__chain_find(first[i], keys[i], h[i], p);
		found += objs[i] != NULL;
	}
	return found;
}

static RELHASH_ALWAYS_INLINE size_t relhash__lookup_bulk_inline(struct relhash_table *t,
                                                 const void *const keys[],
                                                 size_t n, void *objs[],
                                                 const struct relhash_params *p)
{
	const struct relhash__buckets *b = relhash__buckets_load(t);
	size_t found = 0, done, g;

	if (RELHASH_UNLIKELY(b->rehash != NULL)) {
		for (done = 0; done < n; done++) {
			objs[done] = relhash__lookup_slow(t, b, keys[done]);
			found += objs[done] != NULL;
		}
		return found;
	}
	for (done = 0; done < n; done += g) {
		g = n - done < RELHASH__BULK_GROUP ? n - done : RELHASH__BULK_GROUP;
		if (b->mask >= RELHASH__BULK_PREFETCH_BUCKETS - 1)
			found += relhash__lookup_group(b, keys + done, g,
			                               objs + done, p, 1);
		else
			found += relhash__lookup_group(b, keys + done, g,
			                               objs + done, p, 0);
	}
	return found;
}

RELHASH_END_DECLS

#endif /* RELHASH_INLINE_H */
