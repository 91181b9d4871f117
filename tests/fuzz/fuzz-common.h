/*
 * tests/fuzz/fuzz-common.h - what the two libFuzzer harnesses share: the
 * test object, the fixed parameter sets (one static const struct per set, so
 * that relhash_lookup_fast() is called with a constant as the API intends),
 * key encoding, the byte reader that decodes the fuzzer's input, divergence
 * reporting and an optional trace of the decoded operations, and the model of
 * the table with the checks and updates that keep the two in step.
 *
 * Trace: FUZZ_TRACE=1 in the environment prints every decoded operation on
 * stderr, which turns a crash reproducer into a plain list of operations:
 *     FUZZ_TRACE=1 ./fuzz-ops crash-<sha1>
 */
#ifndef RELHASH_FUZZ_COMMON_H
#define RELHASH_FUZZ_COMMON_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <relhash.h>

#define FZ_UNUSED __attribute__((unused))

#include "../debug-hooks.h"
#include "../hashfns.h"

/* ---------------------------------------------------------------------- */
/* Divergence reporting and tracing                                        */

static int fz_trace = -1;
static const char *fz_harness = "fuzz";
static unsigned long fz_opno;
/* Optional: prints more of the harness's state (on stderr) after every
 * divergence report, e.g. what its other threads have done so far. */
static void (*fz_fail_context)(void);

static FZ_UNUSED bool fz_tracing(void)
{
	if (fz_trace < 0) {
		const char *s = getenv("FUZZ_TRACE");
		fz_trace = s && *s && strcmp(s, "0") != 0;
	}
	return fz_trace;
}

static FZ_UNUSED __attribute__((format(printf, 1, 2))) void
fz_log(const char *fmt, ...)
{
	va_list ap;

	if (!fz_tracing())
		return;
	va_start(ap, fmt);
	fprintf(stderr, "[%s op %lu] ", fz_harness, fz_opno);
	if (getenv("FUZZ_TRACE_TIME")) {
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		fprintf(stderr, "%ld.%06ld ", (long)ts.tv_sec % 1000,
		        ts.tv_nsec / 1000);
	}
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

static FZ_UNUSED __attribute__((noreturn, format(printf, 3, 4))) void
fz_fail_at(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "\n%s: DIVERGENCE at %s:%d (op %lu): ", fz_harness,
	        file, line, fz_opno);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	if (fz_fail_context)
		fz_fail_context();
	fflush(stderr);
	abort();
}

/* fz_fail(__LINE__, fmt, ...): report a divergence and abort. */
#define fz_fail(line, ...) fz_fail_at(__FILE__, (line), __VA_ARGS__)

#define FZ_CHECK(cond)                                                      \
	do {                                                                \
		if (!(cond))                                                \
			fz_fail(__LINE__, "%s", #cond);                     \
	} while (0)

/* An int result against the expected one. */
#define FZ_EXPECT_RET(got, want, what)                                       \
	do {                                                                 \
		long fz_got_ = (long)(got), fz_want_ = (long)(want);         \
		if (fz_got_ != fz_want_)                                     \
			fz_fail(__LINE__, "%s returned %ld, expected %ld",   \
			        (what), fz_got_, fz_want_);                  \
	} while (0)

/* ---------------------------------------------------------------------- */
/* Input                                                                   */

struct fz_in {
	const uint8_t *p;
	size_t n, i;
};

static FZ_UNUSED bool fz_more(const struct fz_in *in)
{
	return in->i < in->n;
}

/* Next byte; 0 once the input is exhausted. */
static FZ_UNUSED uint8_t fz_u8(struct fz_in *in)
{
	return in->i < in->n ? in->p[in->i++] : 0;
}

static FZ_UNUSED uint16_t fz_u16(struct fz_in *in)
{
	uint16_t lo = fz_u8(in);
	return (uint16_t)(lo | (uint16_t)fz_u8(in) << 8);
}

/* ---------------------------------------------------------------------- */
/* Objects and keys                                                        */

#define FZ_NKEYS 256 /* key space: small, so operations collide often */

#define FZ_LIVE 0x4c49564520424a4full    /* allocated, maybe in the table */
#define FZ_RETIRED 0x5245544952454421ull /* removed, waiting for a grace period */
#define FZ_POISON 0xdeadbeefdeadbeefull

struct fz_obj {
	uint64_t magic;
	struct relhash_head rcu; /* relhash_call() */
	uint32_t id;             /* key index; also the custom key (set 4) */
	uint32_t serial;
	uint64_t pad;            /* keeps node at a non-zero, odd-ish offset */
	struct relhash_node node;
	unsigned char key[16];   /* key bytes for key_len > 0 */
};

/* Key bytes of key index k: every byte depends on k through an odd
 * multiplier, so keys differ everywhere and the encoding is injective. */
static FZ_UNUSED void fz_key_bytes(uint32_t k, size_t len, unsigned char *out)
{
	size_t i;

	for (i = 0; i < len; i++)
		out[i] = (unsigned char)(0x5a ^ (i * 0x3b) ^ (k * (2 * i + 1)));
}

/* Hash functions with deliberate full-hash collisions. */
static FZ_UNUSED uint64_t fz_mix(uint64_t x)
{
	x ^= x >> 31;
	x *= 0x9e3779b97f4a7c15ull;
	x ^= x >> 29;
	return x;
}

/* Set 2: 16 distinct hashes for the 256 keys. */
static FZ_UNUSED uint64_t fz_hash_weak13(const void *key, size_t len, uint64_t seed)
{
	const unsigned char *p = key;

	(void)len;
	return fz_mix((uint64_t)(p[6] & 15) + 1) ^ seed;
}

/* Set 4: custom keys (a uint32_t id), 37 distinct hashes. */
static FZ_UNUSED uint64_t fz_hash_custom(const void *key, size_t len, uint64_t seed)
{
	uint32_t id;

	(void)len;
	memcpy(&id, key, sizeof(id));
	return fz_mix((uint64_t)(id % 37) ^ (seed * 3));
}

static FZ_UNUSED uint64_t fz_obj_hash_custom(const void *obj, uint64_t seed)
{
	const struct fz_obj *o = obj;

	return fz_hash_custom(&o->id, 0, seed);
}

static FZ_UNUSED int fz_cmp_custom(const void *key, const void *obj)
{
	uint32_t id;

	memcpy(&id, key, sizeof(id));
	return id != ((const struct fz_obj *)obj)->id;
}

/* Set 7: every key has the same hash; one chain holds everything. */
static FZ_UNUSED uint64_t fz_hash_const(const void *key, size_t len, uint64_t seed)
{
	(void)key;
	(void)len;
	return seed ^ 0x1234;
}

static FZ_UNUSED int fz_cmp8(const void *key, const void *obj)
{
	return memcmp(key, ((const struct fz_obj *)obj)->key, 8);
}

static FZ_UNUSED int fz_cmp13(const void *key, const void *obj)
{
	return memcmp(key, ((const struct fz_obj *)obj)->key, 13);
}

static FZ_UNUSED int fz_cmp4(const void *key, const void *obj)
{
	return memcmp(key, ((const struct fz_obj *)obj)->key, 4);
}

#define FZ_NODE_OFF offsetof(struct fz_obj, node)
#define FZ_KEY_OFF offsetof(struct fz_obj, key)

/* The fixed parameter sets.  Only the fields that lookups read matter for
 * relhash_lookup_fast(); create copies a set and adds seed, sizes, flags. */
static const struct relhash_params fz_p0 = {
	.node_offset = FZ_NODE_OFF, .key_offset = FZ_KEY_OFF, .key_len = 4,
};
static const struct relhash_params fz_p1 = {
	.node_offset = FZ_NODE_OFF, .key_offset = FZ_KEY_OFF, .key_len = 8,
	.cmpfn = fz_cmp8,
};
static const struct relhash_params fz_p2 = {
	.node_offset = FZ_NODE_OFF, .key_offset = FZ_KEY_OFF, .key_len = 13,
	.hashfn = fz_hash_weak13,
};
static const struct relhash_params fz_p3 = {
	.node_offset = FZ_NODE_OFF, .key_offset = FZ_KEY_OFF, .key_len = 16,
};
static const struct relhash_params fz_p4 = {
	.node_offset = FZ_NODE_OFF, .key_offset = offsetof(struct fz_obj, id),
	.key_len = 0, .hashfn = fz_hash_custom,
	.obj_hashfn = fz_obj_hash_custom, .cmpfn = fz_cmp_custom,
};
/* Set 5: the key's first 8 bytes as the hash (no mixing at all). */
static const struct relhash_params fz_p5 = {
	.node_offset = FZ_NODE_OFF, .key_offset = FZ_KEY_OFF, .key_len = 8,
	.hashfn = hashfn_identity,
};
static const struct relhash_params fz_p6 = {
	.node_offset = FZ_NODE_OFF, .key_offset = FZ_KEY_OFF, .key_len = 13,
	.cmpfn = fz_cmp13,
};
static const struct relhash_params fz_p7 = {
	.node_offset = FZ_NODE_OFF, .key_offset = FZ_KEY_OFF, .key_len = 4,
	.hashfn = fz_hash_const, .cmpfn = fz_cmp4,
};
#define FZ_NSETS 8

static FZ_UNUSED const struct relhash_params *fz_set(unsigned set)
{
	static const struct relhash_params *const sets[FZ_NSETS] = {
		&fz_p0, &fz_p1, &fz_p2, &fz_p3, &fz_p4, &fz_p5, &fz_p6, &fz_p7,
	};
	return sets[set % FZ_NSETS];
}

static FZ_UNUSED const char *fz_set_name(unsigned set)
{
	static const char *const names[FZ_NSETS] = {
		"key_len=4 default-hash memcmp",
		"key_len=8 default-hash cmpfn",
		"key_len=13 weak-hash(16 values) memcmp",
		"key_len=16 default-hash memcmp",
		"key_len=0 custom hash(37 values)/obj_hash/cmpfn",
		"key_len=8 identity-hash memcmp",
		"key_len=13 default-hash cmpfn",
		"key_len=4 constant-hash cmpfn",
	};
	return names[set % FZ_NSETS];
}

/* relhash_lookup_fast() with the set's params as a compile-time constant. */
static FZ_UNUSED void *fz_lookup_fast(unsigned set, struct relhash_table *t,
                                      const void *key)
{
	switch (set % FZ_NSETS) {
	case 0: return relhash_lookup_fast(t, key, fz_p0);
	case 1: return relhash_lookup_fast(t, key, fz_p1);
	case 2: return relhash_lookup_fast(t, key, fz_p2);
	case 3: return relhash_lookup_fast(t, key, fz_p3);
	case 4: return relhash_lookup_fast(t, key, fz_p4);
	case 5: return relhash_lookup_fast(t, key, fz_p5);
	case 6: return relhash_lookup_fast(t, key, fz_p6);
	default: return relhash_lookup_fast(t, key, fz_p7);
	}
}

/* relhash_lookup_bulk_fast() with the set's params as a constant. */
static FZ_UNUSED size_t fz_lookup_bulk_fast(unsigned set, struct relhash_table *t,
                                            const void *const keys[], size_t n,
                                            void *objs[])
{
	switch (set % FZ_NSETS) {
	case 0: return relhash_lookup_bulk_fast(t, keys, n, objs, fz_p0);
	case 1: return relhash_lookup_bulk_fast(t, keys, n, objs, fz_p1);
	case 2: return relhash_lookup_bulk_fast(t, keys, n, objs, fz_p2);
	case 3: return relhash_lookup_bulk_fast(t, keys, n, objs, fz_p3);
	case 4: return relhash_lookup_bulk_fast(t, keys, n, objs, fz_p4);
	case 5: return relhash_lookup_bulk_fast(t, keys, n, objs, fz_p5);
	case 6: return relhash_lookup_bulk_fast(t, keys, n, objs, fz_p6);
	default: return relhash_lookup_bulk_fast(t, keys, n, objs, fz_p7);
	}
}

/* A lookup key for key index k, in buf (at least 16 bytes). */
static FZ_UNUSED const void *fz_key(unsigned set, uint32_t k, unsigned char *buf)
{
	const struct relhash_params *p = fz_set(set);

	if (p->key_len == 0) {
		memcpy(buf, &k, sizeof(k));
		return buf;
	}
	fz_key_bytes(k, p->key_len, buf);
	return buf;
}

static uint32_t fz_serial;

static FZ_UNUSED struct fz_obj *fz_obj_new(unsigned set, uint32_t k)
{
	struct fz_obj *o = calloc(1, sizeof(*o));

	if (!o)
		abort();
	o->magic = FZ_LIVE;
	o->id = k;
	o->serial = ++fz_serial;
	(void)set; /* every set's key is a prefix of the 16 bytes (or o->id) */
	fz_key_bytes(k, sizeof(o->key), o->key);
	return o;
}

/* Is o an intact object of key k (not freed, not poisoned)? */
static FZ_UNUSED bool fz_obj_intact(unsigned set, const struct fz_obj *o)
{
	unsigned char kb[16];
	size_t len = fz_set(set)->key_len;

	if (o->magic != FZ_LIVE && o->magic != FZ_RETIRED)
		return false;
	if (o->id >= FZ_NKEYS)
		return false;
	if (len) {
		fz_key_bytes(o->id, len, kb);
		if (memcmp(kb, o->key, len) != 0)
			return false;
	}
	return true;
}

static FZ_UNUSED void fz_obj_poison_free(struct fz_obj *o)
{
	memset(o, 0xef, sizeof(*o));
	o->magic = FZ_POISON;
	free(o);
}

static FZ_UNUSED struct fz_obj *fz_obj_of(void *obj)
{
	return obj;
}

/* ---------------------------------------------------------------------- */
/* The model                                                               */

#define FZ_MAX_HELD 32

/* A harness adds fields of its own to M by defining this (declarations,
 * each ending in ';') before it includes this file. */
#ifndef FZ_MODEL_FIELDS
#define FZ_MODEL_FIELDS
#endif

/* Called after each object fz_check_iter() takes: a harness that chooses
 * interleavings makes it a yield point. */
#ifndef FZ_ITER_STEP_HOOK
#define FZ_ITER_STEP_HOOK() ((void)0)
#endif

/*
 * M, the model of the one table under test (a short name: it is
 * everywhere): the object each key maps to, and what the harness's main
 * thread did with it.  Only the main thread changes it; the harness clears
 * it at the start of every input.
 */
static struct {
	struct relhash_table *t;
	unsigned set;
	struct fz_obj *present[FZ_NKEYS];
	size_t count;
	unsigned depth;                   /* our read-side nesting */
	struct fz_obj *held[FZ_MAX_HELD]; /* looked up inside the current section */
	unsigned nheld;
	FZ_MODEL_FIELDS
} M;

/* ---------------------------------------------------------------------- */
/* Retiring objects                                                        */

static uint64_t fz_cb_queued; /* relhash_call()s of ours, main thread only */
static uint64_t fz_cb_ran;    /* callbacks run (callback thread; atomic) */

static FZ_UNUSED void fz_cb_free(struct relhash_head *h)
{
	struct fz_obj *o = (struct fz_obj *)(void *)((char *)h -
	                                              offsetof(struct fz_obj, rcu));

	if (o->magic != FZ_RETIRED)
		fz_fail(__LINE__, "callback on object %p with magic %llx", (void *)o,
		        (unsigned long long)o->magic);
	fz_obj_poison_free(o);
	__atomic_add_fetch(&fz_cb_ran, 1, __ATOMIC_RELEASE);
}

/* o has left the table: free it after a grace period, by relhash_call()
 * (how & 1) or relhash_defer_free().  The magic is stored atomically: a
 * reader thread (fuzz-interleave's) may be checking it. */
static FZ_UNUSED void fz_retire(struct fz_obj *o, unsigned how)
{
	__atomic_store_n(&o->magic, FZ_RETIRED, __ATOMIC_RELAXED);
	if (how & 1) {
		fz_cb_queued++;
		relhash_call(&o->rcu, fz_cb_free);
	} else {
		relhash_defer_free(o);
	}
}

/* relhash_barrier() (outside any read-side section): every callback queued
 * before it must have run when it returns. */
static FZ_UNUSED void fz_check_barrier(void)
{
	FZ_EXPECT_RET(relhash_barrier(), 0, "relhash_barrier");
	if (__atomic_load_n(&fz_cb_ran, __ATOMIC_ACQUIRE) != fz_cb_queued)
		fz_fail(__LINE__, "after relhash_barrier %llu of %llu callbacks ran",
		        (unsigned long long)fz_cb_ran,
		        (unsigned long long)fz_cb_queued);
}

/* ---------------------------------------------------------------------- */
/* Checks (main thread)                                                    */

/* Objects returned inside a read-side section of ours must stay intact
 * until the outermost section ends: note some of them. */
static FZ_UNUSED void fz_hold(struct fz_obj *o)
{
	if (M.depth && o && M.nheld < FZ_MAX_HELD)
		M.held[M.nheld++] = o;
}

static FZ_UNUSED void fz_check_held(void)
{
	unsigned i;

	for (i = 0; i < M.nheld; i++)
		if (!fz_obj_intact(M.set, M.held[i]))
			fz_fail(__LINE__, "object %p returned inside this read-side "
			        "section is no longer intact (freed before a grace "
			        "period?)", (void *)M.held[i]);
}

/* Leave one of our read-side sections; leaving the outermost, what it
 * returned must still be intact. */
static FZ_UNUSED void fz_read_unlock(void)
{
	if (M.depth == 1) {
		fz_check_held();
		M.nheld = 0;
	}
	relhash_read_unlock();
	M.depth--;
}

static FZ_UNUSED void fz_check_lookup(uint32_t k, bool fast)
{
	unsigned char kb[16];
	const void *key = fz_key(M.set, k, kb);
	struct fz_obj *r;

	relhash_read_lock();
	r = fast ? fz_lookup_fast(M.set, M.t, key) : relhash_lookup(M.t, key);
	if (r != M.present[k])
		fz_fail(__LINE__, "%s(key %u) = %p, model has %p",
		        fast ? "relhash_lookup_fast" : "relhash_lookup", k,
		        (void *)r, (void *)M.present[k]);
	if (r && !fz_obj_intact(M.set, r))
		fz_fail(__LINE__, "lookup(key %u) returned a damaged object", k);
	fz_hold(r);
	relhash_read_unlock();
}

/* The lookup operations of both harnesses: a key byte, then the check. */
static FZ_UNUSED void fz_op_lookup_either(struct fz_in *in, bool fast)
{
	uint32_t k = fz_u8(in);

	fz_log("%s key %u (model: %s)", fast ? "lookup_fast" : "lookup", k,
	       M.present[k] ? "present" : "absent");
	fz_check_lookup(k, fast);
}

static FZ_UNUSED void fz_op_lookup(struct fz_in *in)
{
	fz_op_lookup_either(in, false);
}

static FZ_UNUSED void fz_op_lookup_fast(struct fz_in *in)
{
	fz_op_lookup_either(in, true);
}

/*
 * The bulk lookup (fast: the inline form) of n keys from key index k in
 * steps of stride, and the hashed lookup of each: every result as the
 * model says, the count of those found returned, objs[n] not written.
 * Inside a read-side section of its own (nested in the caller's, if any).
 */
#define FZ_BULK_MAX 48

static FZ_UNUSED void fz_check_bulk(uint32_t k, unsigned n, unsigned stride,
                                    bool fast)
{
	static unsigned char kb[FZ_BULK_MAX][16];
	const void *keys[FZ_BULK_MAX];
	void *objs[FZ_BULK_MAX + 1];
	uint32_t ki[FZ_BULK_MAX];
	size_t found, want = 0;
	unsigned i;

	if (n > FZ_BULK_MAX)
		n = FZ_BULK_MAX;
	for (i = 0; i < n; i++) {
		ki[i] = (k + i * stride) % FZ_NKEYS;
		keys[i] = fz_key(M.set, ki[i], kb[i]);
		want += M.present[ki[i]] != NULL;
	}
	for (i = 0; i <= n; i++)
		objs[i] = &objs[i]; /* never a table object */
	relhash_read_lock();
	found = fast ? fz_lookup_bulk_fast(M.set, M.t, keys, n, objs)
	             : relhash_lookup_bulk(M.t, keys, n, objs);
	for (i = 0; i < n; i++) {
		void *h = relhash_lookup_hashed(M.t, keys[i],
		                                relhash_hash_key(M.t, keys[i]));

		if (objs[i] != M.present[ki[i]] || h != M.present[ki[i]])
			fz_fail(__LINE__, "%s: key %u (entry %u of %u) = %p, "
			        "relhash_lookup_hashed %p, model has %p",
			        fast ? "relhash_lookup_bulk_fast" :
			        "relhash_lookup_bulk", ki[i], i, n, objs[i], h,
			        (void *)M.present[ki[i]]);
		fz_hold(objs[i]);
	}
	if (found != want || objs[n] != &objs[n])
		fz_fail(__LINE__, "%s of %u keys returned %zu, model has %zu; "
		        "objs[n] %s", fast ? "relhash_lookup_bulk_fast" :
		        "relhash_lookup_bulk", n, found, want,
		        objs[n] == &objs[n] ? "untouched" : "written");
	relhash_read_unlock();
}

/* One iteration: each object of the model exactly once, nothing else. */
static FZ_UNUSED void fz_check_iter(void)
{
	static uint8_t seen[FZ_NKEYS];
	struct relhash_iter it;
	struct fz_obj *o;
	size_t n = 0;

	memset(seen, 0, sizeof(seen));
	relhash_read_lock();
	for (o = relhash_iter_first(M.t, &it); o; o = relhash_iter_next(&it)) {
		if (!fz_obj_intact(M.set, o))
			fz_fail(__LINE__, "iteration returned a damaged object %p",
			        (void *)o);
		if (M.present[o->id] != o)
			fz_fail(__LINE__, "iteration returned %p (key %u) that the "
			        "model does not hold (model: %p)", (void *)o, o->id,
			        (void *)M.present[o->id]);
		if (seen[o->id]++)
			fz_fail(__LINE__, "iteration returned key %u twice", o->id);
		n++;
		fz_hold(o);
		FZ_ITER_STEP_HOOK();
	}
	relhash_read_unlock();
	if (n != M.count) {
		uint32_t k;

		for (k = 0; k < FZ_NKEYS; k++)
			if (M.present[k] && !seen[k])
				fprintf(stderr, "  key %u missing from the iteration\n",
				        k);
		fz_fail(__LINE__, "iteration returned %zu objects, model has %zu",
		        n, M.count);
	}
}

static FZ_UNUSED void fz_check_count(void)
{
	size_t c = relhash_count(M.t);

	if (c != M.count)
		fz_fail(__LINE__, "relhash_count = %zu, model %zu", c, M.count);
}

/* Every key (relhash_lookup and relhash_lookup_fast by turns), the
 * iteration, the count. */
static FZ_UNUSED void fz_verify_all(void)
{
	uint32_t k;

	for (k = 0; k < FZ_NKEYS; k++)
		fz_check_lookup(k, k & 1);
	fz_check_iter();
	fz_check_count();
}

/* ---------------------------------------------------------------------- */
/* Updates (main thread)                                                   */

/* Insert a new object with key k: -EEXIST if the model has the key. */
static FZ_UNUSED void fz_insert(uint32_t k)
{
	struct fz_obj *o = fz_obj_new(M.set, k);
	int r = relhash_insert(M.t, &o->node);

	if (M.present[k]) {
		FZ_EXPECT_RET(r, -EEXIST, "relhash_insert(duplicate key)");
		fz_obj_poison_free(o); /* never published */
		return;
	}
	FZ_EXPECT_RET(r, 0, "relhash_insert");
	M.present[k] = o;
	M.count++;
}

/*
 * relhash_insert_or_get() of a new object with key k: 0 and inserted when
 * the model lacks the key, else -EEXIST with the model's object (when
 * with_existing; the call runs inside a read-side section then: a caller
 * passing existing must be inside one, include/relhash/table.h says).
 */
static FZ_UNUSED void fz_insert_or_get(uint32_t k, bool with_existing)
{
	struct fz_obj *o = fz_obj_new(M.set, k);
	void *existing = &existing; /* must stay untouched unless -EEXIST */
	int r;

	relhash_read_lock();
	r = relhash_insert_or_get(M.t, &o->node, with_existing ? &existing : NULL);
	if (M.present[k]) {
		FZ_EXPECT_RET(r, -EEXIST, "relhash_insert_or_get(duplicate key)");
		if (with_existing && existing != M.present[k])
			fz_fail(__LINE__, "relhash_insert_or_get(key %u) gave %p, "
			        "model has %p", k, existing,
			        (void *)M.present[k]);
		if (with_existing)
			fz_hold(existing);
		relhash_read_unlock();
		fz_obj_poison_free(o); /* never published */
		return;
	}
	relhash_read_unlock();
	FZ_EXPECT_RET(r, 0, "relhash_insert_or_get");
	if (existing != &existing)
		fz_fail(__LINE__, "relhash_insert_or_get inserted and wrote "
		        "*existing");
	M.present[k] = o;
	M.count++;
}

/* Remove the model's object of key k (there must be one) and return it,
 * not yet retired; again: then remove it once more, which must fail. */
static FZ_UNUSED struct fz_obj *fz_remove(uint32_t k, bool again)
{
	struct fz_obj *o = M.present[k];
	int r;

	r = relhash_remove(M.t, &o->node);
	FZ_EXPECT_RET(r, 0, "relhash_remove");
	M.present[k] = NULL;
	M.count--;
	if (again) {
		/* Still ours until retired: removing it again must fail. */
		r = relhash_remove(M.t, &o->node);
		FZ_EXPECT_RET(r, -ENOENT, "relhash_remove(already removed)");
	}
	return o;
}

/* Replace the model's object of key k (there must be one) with a new one;
 * how & 2: then remove the old one, which must fail; it is retired by
 * how >> 2 (fz_retire()). */
static FZ_UNUSED void fz_replace(uint32_t k, unsigned how)
{
	struct fz_obj *o = M.present[k], *n = fz_obj_new(M.set, k);
	int r;

	r = relhash_replace(M.t, &o->node, &n->node);
	FZ_EXPECT_RET(r, 0, "relhash_replace");
	M.present[k] = n;
	if (how & 2) {
		r = relhash_remove(M.t, &o->node);
		FZ_EXPECT_RET(r, -ENOENT, "relhash_remove(replaced node)");
	}
	fz_retire(o, how >> 2);
}

#endif /* RELHASH_FUZZ_COMMON_H */
