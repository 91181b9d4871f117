/*
 * tests/test-fast.c - the inline fast paths (doc/DESIGN.md section 13).
 *
 * relhash_lookup_fast(t, key, PARAMS), with PARAMS a static const struct
 * (so that the compiler can inline hashfn, cmpfn and the key comparison),
 * must return exactly what relhash_lookup(t, key) returns: on tables with
 * 4-, 8- and 16-byte keys, a user cmpfn, a user hashfn, custom (string)
 * keys, a weak hash, unaligned key pointers, present and absent keys, across
 * resizes, and while another thread resizes the table and updates other
 * keys.
 *
 * &relhash_read_lock, &relhash_read_unlock and &relhash_read_ongoing must be
 * real functions (the names are function-like macros over inline code in
 * normal builds), sharing their state with the inline forms: sections
 * entered one way and left the other nest correctly and hold off
 * relhash_synchronize().
 *
 * The hashed and bulk lookups must agree with relhash_lookup too, in the
 * same places: relhash_lookup_hashed(t, key, relhash_hash_key(t, key)),
 * relhash_lookup_bulk() and relhash_lookup_bulk_fast() (with the constant
 * params) in groups of 1 to 40 keys (objs[n] never written, the count
 * returned right); relhash_lookup_hashed() with a wrong hash returns NULL
 * or the key's own object, never another.
 *
 * The Makefile builds this file twice: tests/test-fast (inline fast paths)
 * and tests/test-fast-noinline (-DRELHASH_NO_INLINE: every fast path is a
 * call into the library).
 */
#include "common.h"

#include <relhash.h>

#if defined(RELHASH_NO_INLINE) && defined(relhash_read_lock)
#error "RELHASH_NO_INLINE, but relhash_read_lock is still a macro"
#endif

#ifdef RELHASH_NO_INLINE
#define BUILD "noinline"
#else
#define BUILD "inline"
#endif

#define HANG_MS 5000u

struct fobj {
	uint32_t k4;
	uint64_t k8;
	unsigned char k16[16];
	char name[32];
	struct relhash_node node;
	uint64_t magic;
};

/* ---------------------------------------------------------------------- */
/* Callbacks                                                               */

static uint64_t ld64(const void *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return v;
}

static uint64_t hash_mix8(const void *key, size_t len, uint64_t seed)
{
	(void)len;
	return tst_mix64(ld64(key) ^ seed);
}

/* Only 8 distinct values: long chains. */
static uint64_t hash_weak8(const void *key, size_t len, uint64_t seed)
{
	(void)len, (void)seed;
	return ld64(key) & 7;
}

/* 8 values from the first key byte, for any key_len: equal hashes for
 * keys that differ elsewhere, so the fixed-size key comparison decides. */
static uint64_t hash_weak_first(const void *key, size_t len, uint64_t seed)
{
	(void)len, (void)seed;
	return *(const unsigned char *)key & 7;
}

static int cmp_k8(const void *key, const void *obj)
{
	return ld64(key) != ((const struct fobj *)obj)->k8;
}

static uint64_t hash_str(const void *key, size_t len, uint64_t seed)
{
	const unsigned char *s = key;
	uint64_t h = 0xcbf29ce484222325ull ^ seed;

	(void)len;
	while (*s) {
		h ^= *s++;
		h *= 0x100000001b3ull;
	}
	return tst_mix64(h);
}

static uint64_t hash_str_obj(const void *obj, uint64_t seed)
{
	return hash_str(((const struct fobj *)obj)->name, 0, seed);
}

static int cmp_str(const void *key, const void *obj)
{
	return strcmp(key, ((const struct fobj *)obj)->name);
}

/* ---------------------------------------------------------------------- */
/* The parameter sets, as constants                                        */

#define NODE_OFF offsetof(struct fobj, node)

static const struct relhash_params P8 = {
	.node_offset = NODE_OFF, .key_offset = offsetof(struct fobj, k8),
	.key_len = 8,
};
static const struct relhash_params P4 = {
	.node_offset = NODE_OFF, .key_offset = offsetof(struct fobj, k4),
	.key_len = 4,
};
static const struct relhash_params P16 = {
	.node_offset = NODE_OFF, .key_offset = offsetof(struct fobj, k16),
	.key_len = 16,
};
static const struct relhash_params P8_CMP = {
	.node_offset = NODE_OFF, .key_offset = offsetof(struct fobj, k8),
	.key_len = 8, .cmpfn = cmp_k8,
};
static const struct relhash_params P8_HASH = {
	.node_offset = NODE_OFF, .key_offset = offsetof(struct fobj, k8),
	.key_len = 8, .hashfn = hash_mix8, .seed = 0x5eed,
};
static const struct relhash_params P8_WEAK = {
	.node_offset = NODE_OFF, .key_offset = offsetof(struct fobj, k8),
	.key_len = 8, .hashfn = hash_weak8, .cmpfn = cmp_k8,
};
static const struct relhash_params P4_WEAK = {
	.node_offset = NODE_OFF, .key_offset = offsetof(struct fobj, k4),
	.key_len = 4, .hashfn = hash_weak_first,
};
static const struct relhash_params P8_WEAK_MEMCMP = {
	.node_offset = NODE_OFF, .key_offset = offsetof(struct fobj, k8),
	.key_len = 8, .hashfn = hash_weak_first,
};
static const struct relhash_params P16_WEAK = {
	.node_offset = NODE_OFF, .key_offset = offsetof(struct fobj, k16),
	.key_len = 16, .hashfn = hash_weak_first,
};
static const struct relhash_params PSTR = {
	.node_offset = NODE_OFF, .key_offset = offsetof(struct fobj, name),
	.key_len = 0, .hashfn = hash_str, .obj_hashfn = hash_str_obj,
	.cmpfn = cmp_str,
};

enum { K8, K4, K16, K8_CMP, K8_HASH, K8_WEAK, K4_WEAK, K8_WEAK_MEMCMP,
       K16_WEAK, KSTR, NKINDS };

/* The size of kind's key (strings: with the terminator). */
#define KEYLEN(kind, o)                                                     \
	((kind) == KSTR ? strlen((o)->name) + 1                              \
	 : (kind) == K4 || (kind) == K4_WEAK ? 4u                            \
	 : (kind) == K16 || (kind) == K16_WEAK ? 16u : 8u)

static const struct kind {
	const char *name;
	const struct relhash_params *p;
} kinds[NKINDS] = {
	[K8] = { "8-byte keys", &P8 },
	[K4] = { "4-byte keys", &P4 },
	[K16] = { "16-byte keys", &P16 },
	[K8_CMP] = { "8-byte keys, cmpfn", &P8_CMP },
	[K8_HASH] = { "8-byte keys, hashfn, seed", &P8_HASH },
	[K8_WEAK] = { "8-byte keys, weak hashfn, cmpfn", &P8_WEAK },
	[K4_WEAK] = { "4-byte keys, weak hashfn", &P4_WEAK },
	[K8_WEAK_MEMCMP] = { "8-byte keys, weak hashfn", &P8_WEAK_MEMCMP },
	[K16_WEAK] = { "16-byte keys, weak hashfn", &P16_WEAK },
	[KSTR] = { "string keys (key_len 0)", &PSTR },
};

/* relhash_lookup_fast with the constant of each kind written out, so the
 * compiler sees a constant at each call. */
static void *lookup_fast(int kind, struct relhash_table *t, const void *key)
{
	switch (kind) {
	case K8:
		return relhash_lookup_fast(t, key, P8);
	case K4:
		return relhash_lookup_fast(t, key, P4);
	case K16:
		return relhash_lookup_fast(t, key, P16);
	case K8_CMP:
		return relhash_lookup_fast(t, key, P8_CMP);
	case K8_HASH:
		return relhash_lookup_fast(t, key, P8_HASH);
	case K8_WEAK:
		return relhash_lookup_fast(t, key, P8_WEAK);
	case K4_WEAK:
		return relhash_lookup_fast(t, key, P4_WEAK);
	case K8_WEAK_MEMCMP:
		return relhash_lookup_fast(t, key, P8_WEAK_MEMCMP);
	case K16_WEAK:
		return relhash_lookup_fast(t, key, P16_WEAK);
	case KSTR:
		return relhash_lookup_fast(t, key, PSTR);
	}
	return (void *)-1;
}

#define BULK_CASE(K, P) \
	case K:         \
		return relhash_lookup_bulk_fast(t, keys, n, objs, P)

/* relhash_lookup_bulk_fast with the constant of each kind written out. */
static size_t bulk_fast(int kind, struct relhash_table *t,
                        const void *const keys[], size_t n, void *objs[])
{
	switch (kind) {
	BULK_CASE(K8, P8);
	BULK_CASE(K4, P4);
	BULK_CASE(K16, P16);
	BULK_CASE(K8_CMP, P8_CMP);
	BULK_CASE(K8_HASH, P8_HASH);
	BULK_CASE(K8_WEAK, P8_WEAK);
	BULK_CASE(K4_WEAK, P4_WEAK);
	BULK_CASE(K8_WEAK_MEMCMP, P8_WEAK_MEMCMP);
	BULK_CASE(K16_WEAK, P16_WEAK);
	BULK_CASE(KSTR, PSTR);
	}
	return (size_t)-1;
}

/* ---------------------------------------------------------------------- */
/* The hashed and bulk forms                                               */

#define BULK_MAX 40u
#define NOT_WRITTEN ((void *)&bulk_fast)

/*
 * Look keys[0..n) up through relhash_lookup_hashed (with the right hash,
 * and with wrong ones), relhash_lookup_bulk and relhash_lookup_bulk_fast in
 * groups of random sizes; each must give exp[i].  Inside a read-side
 * section.  On a difference, false and why says what differed.
 */
static bool other_forms_agree(int kind, struct relhash_table *t,
                              const void *const keys[], size_t n,
                              void *const exp[], uint64_t *rng, char *why,
                              size_t whylen)
{
	void *objs[BULK_MAX + 1];
	size_t i, j, g, done, found, want;
	int form;

	for (i = 0; i < n; i++) {
		uint64_t h = relhash_hash_key(t, keys[i]);
		uint64_t other = relhash_hash_key(t, keys[(i + 1) % n]);
		void *got = relhash_lookup_hashed(t, keys[i], h);
		void *wrong = relhash_lookup_hashed(t, keys[i], h ^ 1);
		void *wrong2 = relhash_lookup_hashed(t, keys[i], other);

		if (got != exp[i] || (wrong && wrong != exp[i]) ||
		    (wrong2 && wrong2 != exp[i])) {
			snprintf(why, whylen, "key %zu: relhash_lookup %p, "
			         "relhash_lookup_hashed %p, with hash ^ 1 %p, "
			         "with another key's hash %p", i, exp[i], got,
			         wrong, wrong2);
			return false;
		}
	}
	for (form = 0; form < 2; form++)
		for (done = 0; done < n; done += g) {
			g = 1 + (size_t)(tst_rand(rng) % BULK_MAX);
			if (g > n - done)
				g = n - done;
			for (j = 0; j <= g; j++)
				objs[j] = NOT_WRITTEN;
			found = form ? bulk_fast(kind, t, keys + done, g, objs)
			             : relhash_lookup_bulk(t, keys + done, g, objs);
			for (j = 0, want = 0; j < g; j++) {
				want += exp[done + j] != NULL;
				if (objs[j] != exp[done + j]) {
					snprintf(why, whylen, "%s of %zu keys: key "
					         "%zu gave %p, relhash_lookup %p",
					         form ? "relhash_lookup_bulk_fast"
					              : "relhash_lookup_bulk", g,
					         done + j, objs[j], exp[done + j]);
					return false;
				}
			}
			if (found != want || objs[g] != NOT_WRITTEN) {
				snprintf(why, whylen, "%s of %zu keys: returned %zu, "
				         "%zu found; objs[n] %s", form ?
				         "relhash_lookup_bulk_fast" :
				         "relhash_lookup_bulk", g, found, want,
				         objs[g] == NOT_WRITTEN ? "untouched" :
				         "written");
				return false;
			}
		}
	return true;
}

/* ---------------------------------------------------------------------- */
/* Keys                                                                    */

#define OBJ_MAGIC 0x666173742d6f626aull

/* An object's keys: 8 and 16 bytes and the string from the 64-bit value r,
 * 4 bytes from the object's unique number id (so 4-byte keys never
 * collide by chance). */
static void obj_fill(struct fobj *o, uint64_t r, uint32_t id)
{
	memset(o, 0, sizeof(*o));
	o->k4 = id * 0x9e3779b1u + 0x01234567u;
	o->k8 = r;
	memcpy(o->k16, &r, 8);
	r = tst_mix64(r);
	memcpy(o->k16 + 8, &r, 8);
	snprintf(o->name, sizeof(o->name), "s%016llx", (unsigned long long)o->k8);
	o->magic = OBJ_MAGIC;
}

/* A pointer to o's key as a lookup key, copied to buf (+1: unaligned, when
 * odd is set), so that lookups never compare an object's key with itself. */
static const void *key_of(int kind, const struct fobj *o, unsigned char *buf,
                          bool odd)
{
	unsigned char *p = buf + (odd ? 1 : 0);

	switch (kind) {
	case K4:
	case K4_WEAK:
		memcpy(p, &o->k4, 4);
		break;
	case K16:
	case K16_WEAK:
		memcpy(p, o->k16, 16);
		break;
	case KSTR:
		memcpy(p, o->name, strlen(o->name) + 1);
		break;
	default:
		memcpy(p, &o->k8, 8);
		break;
	}
	return p;
}

/* ---------------------------------------------------------------------- */
/* Single-threaded comparison                                              */

#define NOBJ 1000u

struct sample {
	unsigned n;          /* objects present or absent: n of each */
	struct fobj *objs;   /* n + n absent */
	bool *present;
	uint64_t seed;
};

/* The hashed and bulk forms against relhash_lookup, for every object
 * (present or not), keys at odd and even addresses.  Inside a section. */
static unsigned long compare_other_forms(int kind, struct relhash_table *t,
                                         struct sample *s, const char *when)
{
	size_t i, n = 2 * s->n;
	unsigned char *bufs = malloc(n * 48);
	const void **keys = malloc(n * sizeof(*keys));
	void **exp = malloc(n * sizeof(*exp));
	uint64_t rng = s->seed;
	char why[256];
	bool ok;

	ck_assert(bufs && keys && exp);
	for (i = 0; i < n; i++) {
		keys[i] = key_of(kind, &s->objs[i], bufs + i * 48, i & 1);
		exp[i] = relhash_lookup(t, keys[i]);
	}
	ok = other_forms_agree(kind, t, keys, n, exp, &rng, why, sizeof(why));
	ck_assert_msg(ok, "[%s] %s, seed %llu, %s (size %zu): %s", BUILD,
	              kinds[kind].name, (unsigned long long)s->seed, when,
	              relhash_size(t), why);
	free(bufs);
	free(keys);
	free(exp);
	return n;
}

/* Compare both lookups for every object (present or not) and some
 * near-miss keys; returns the number of comparisons. */
static unsigned long compare_all(int kind, struct relhash_table *t,
                                 struct sample *s, const char *when)
{
	unsigned char buf[48];
	unsigned long n = 0;
	unsigned i;

	relhash_read_lock();
	for (i = 0; i < 2 * s->n; i++) {
		struct fobj *o = &s->objs[i];
		void *exp = i < s->n && s->present[i] ? o : NULL;
		const void *key = key_of(kind, o, buf, i & 1);
		void *slow = relhash_lookup(t, key);
		void *fast = lookup_fast(kind, t, key);

		ck_assert_msg(slow == exp && fast == slow,
		              "[%s] %s, seed %llu, %s (size %zu): object %u (%s, "
		              "key8 %016llx): relhash_lookup %p, "
		              "relhash_lookup_fast %p, expected %p", BUILD,
		              kinds[kind].name, (unsigned long long)s->seed, when,
		              relhash_size(t), i,
		              exp ? "present" : "absent",
		              (unsigned long long)o->k8, slow, fast, exp);
		n++;
		/* A near miss: the last key byte flipped (strings: first). */
		if (kind == KSTR)
			((unsigned char *)key)[0] ^= 0x20;
		else
			((unsigned char *)key)[KEYLEN(kind, o) - 1] ^= 0x80;
		slow = relhash_lookup(t, key);
		fast = lookup_fast(kind, t, key);
		ck_assert_msg(fast == slow, "[%s] %s, seed %llu: near miss of "
		              "object %u: relhash_lookup %p, relhash_lookup_fast %p",
		              BUILD, kinds[kind].name, (unsigned long long)s->seed,
		              i, slow, fast);
		/* Usually absent; if found, it must really have that key. */
		if (slow) {
			const struct fobj *f = slow;
			long idx = f - s->objs;
			unsigned char kb[48];

			ck_assert_msg(idx >= 0 && idx < (long)s->n && s->present[idx] &&
			              memcmp(key_of(kind, f, kb, false), key,
			                     KEYLEN(kind, f)) == 0,
			              "[%s] %s, seed %llu: near miss of object %u "
			              "found object %ld, which has another key",
			              BUILD, kinds[kind].name,
			              (unsigned long long)s->seed, i, idx);
		}
		n++;
	}
	n += compare_other_forms(kind, t, s, when);
	relhash_read_unlock();
	return n;
}

START_TEST(fast_equals_lookup)
{
	static const size_t sizes[] = { 4, 1, 65536, 2, 64 };
	const int kind = _i;
	struct sample s;
	struct relhash_params p = *kinds[kind].p;
	struct relhash_table *t;
	uint64_t rng, t0 = tst_now_ns();
	unsigned long n = 0;
	unsigned i, k;

	s.seed = tst_env_unsigned("RELHASH_TEST_SEED", 0);
	if (!s.seed)
		s.seed = (tst_now_ns() % 1000000007u) | 1;
	rng = s.seed;
	/* Weak hashes: 8 chains; fewer objects keep the test quick. */
	s.n = p.hashfn == hash_weak8 || p.hashfn == hash_weak_first ? NOBJ / 3
	                                                            : NOBJ;
	/* RELHASH_DEBUG_YIELD=1 makes every relhash_lookup sleep now and
	 * then (--enable-debug builds): fewer objects. */
	if (tst_env_unsigned("RELHASH_DEBUG_YIELD", 0))
		s.n /= 8;
	s.objs = calloc(2 * s.n, sizeof(*s.objs));
	s.present = calloc(s.n, sizeof(*s.present));
	ck_assert(s.objs && s.present);
	for (i = 0; i < 2 * s.n; i++) {
		uint64_t r = tst_rand(&rng);

		/* Some keys that differ only in the high bits or low bits of
		 * another one: hash comparisons alone do not separate them
		 * for a weak hash. */
		if (i >= s.n && i % 4 == 0)
			r = s.objs[i - s.n].k8 ^ (1ull << 63);
		obj_fill(&s.objs[i], r, i);
	}
	p.min_size = 1;
	t = relhash_create(&p);
	ck_assert_msg(t, "relhash_create: %s", strerror(errno));
	for (i = 0; i < s.n; i++) {
		ck_assert_int_eq(relhash_insert(t, &s.objs[i].node), 0);
		s.present[i] = true;
	}
	/* relhash_hash_key is the hash the table stored in each node (the
	 * node's layout is public, for the inline lookup); with a user hash
	 * and seed, that function with that seed. */
	for (i = 0; i < s.n; i++) {
		unsigned char kb[48];
		const void *key = key_of(kind, &s.objs[i], kb, i & 1);

		ck_assert_uint_eq(relhash_hash_key(t, key), s.objs[i].node.hash);
		if (kind == K8_HASH)
			ck_assert_uint_eq(relhash_hash_key(t, key),
			                  hash_mix8(key, 8, P8_HASH.seed));
	}
	n += compare_all(kind, t, &s, "after inserting");
	for (k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		ck_assert_int_eq(relhash_resize(t, sizes[k]), 0);
		/* Remove a third, then compare. */
		for (i = k % 3; i < s.n; i += 3)
			if (s.present[i]) {
				ck_assert_int_eq(relhash_remove(t, &s.objs[i].node), 0);
				s.present[i] = false;
			}
		n += compare_all(kind, t, &s, "after removing");
		ck_assert_int_eq(relhash_synchronize(), 0);
		for (i = k % 3; i < s.n; i += 3) {
			ck_assert_int_eq(relhash_insert(t, &s.objs[i].node), 0);
			s.present[i] = true;
		}
		n += compare_all(kind, t, &s, "after re-inserting");
	}
	printf("[%s] %-32s %lu comparisons in %.0f ms\n", BUILD,
	       kinds[kind].name, n, tst_ms_since(t0));
	relhash_destroy(t, NULL, NULL);
	free(s.objs);
	free(s.present);
}
END_TEST

/* ---------------------------------------------------------------------- */
/* During resizes                                                          */

#define NSTABLE 4000u
#define NCHURN 1000u

struct mid {
	int kind;
	unsigned nstable;     /* weak hash: fewer, the chains are long */
	struct relhash_table *t;
	struct fobj *stable;  /* NSTABLE */
	struct fobj *absent;  /* NSTABLE, never inserted */
	int stop;
	uint64_t resizes, updates;
};

static void *mid_resizer(void *arg)
{
	static const size_t seq[] = { 4096, 256, 4096, 256, 65536, 4, 1024, 8,
	                              16384, 64, 65536, 16 };
	struct mid *m = arg;
	unsigned k = 0;

	while (!tst_load(&m->stop) && !tst_load(&tst_failures.count)) {
		size_t n = seq[k++ % (sizeof(seq) / sizeof(seq[0]))];
		int r = relhash_resize(m->t, n);

		TST_THREAD_CHECK(r == 0, "resize to %zu: %d", n, r);
		m->resizes++;
	}
	return NULL;
}

static void *mid_writer(void *arg)
{
	struct mid *m = arg;
	struct fobj *churn = calloc(NCHURN, sizeof(*churn));
	unsigned char *state = calloc(NCHURN, 1); /* 0 out, 1 in, 2 retired */
	uint64_t rng = 0x12345 | (uint64_t)m->kind << 32;
	unsigned i, nchurn = m->kind == K8_WEAK || m->kind == K16_WEAK
	                     ? NCHURN / 5 : NCHURN;

	TST_THREAD_CHECK(churn && state, "calloc");
	if (!churn || !state)
		return NULL;
	for (i = 0; i < NCHURN; i++)
		obj_fill(&churn[i], tst_mix64(0xc0ffee + i) | 1ull << 62,
		         2 * NSTABLE + i);
	while (!tst_load(&m->stop) && !tst_load(&tst_failures.count)) {
		int r;

		i = (unsigned)(tst_rand(&rng) % nchurn);
		if (state[i] == 1) {
			r = relhash_remove(m->t, &churn[i].node);
			TST_THREAD_CHECK(r == 0, "remove churn %u: %d", i, r);
			state[i] = 2;
		} else if (state[i] == 0) {
			r = relhash_insert(m->t, &churn[i].node);
			TST_THREAD_CHECK(r == 0, "insert churn %u: %d", i, r);
			state[i] = 1;
		}
		/* Removed objects are reused only after a grace period. */
		if ((++m->updates & 255) == 0) {
			relhash_synchronize();
			for (i = 0; i < NCHURN; i++)
				if (state[i] == 2)
					state[i] = 0;
		}
	}
	/* Take them out again before the objects go away. */
	for (i = 0; i < NCHURN; i++)
		if (state[i] == 1)
			relhash_remove(m->t, &churn[i].node);
	relhash_synchronize();
	free(churn);
	free(state);
	return NULL;
}

/* The hashed and bulk forms on MID_BATCH stable and absent keys, mixed,
 * inside the caller's section: stable ones found, absent ones not. */
#define MID_BATCH 128u

static unsigned check_other_forms_mid(struct mid *m, uint64_t *rng)
{
	static unsigned char bufs[MID_BATCH][48];
	const void *keys[MID_BATCH];
	void *exp[MID_BATCH];
	char why[256];
	unsigned i;

	for (i = 0; i < MID_BATCH; i++) {
		unsigned k = (unsigned)(tst_rand(rng) % m->nstable);
		bool absent = tst_rand(rng) & 1;
		struct fobj *o = absent ? &m->absent[k] : &m->stable[k];

		keys[i] = key_of(m->kind, o, bufs[i], i & 1);
		exp[i] = absent ? NULL : o;
	}
	if (!other_forms_agree(m->kind, m->t, keys, MID_BATCH, exp, rng, why,
	                       sizeof(why))) {
		relhash_read_unlock();
		tst_store(&m->stop, 1);
		ck_abort_msg("[%s] %s, during resizes: %s", BUILD,
		             kinds[m->kind].name, why);
	}
	return MID_BATCH;
}

START_TEST(fast_equals_lookup_during_resize)
{
	static const int mid_kinds[] = { K8, K4, K16, K8_WEAK, K16_WEAK, KSTR };
	struct mid m;
	struct relhash_params p;
	pthread_t rz, wr;
	unsigned char buf[48];
	uint64_t rng = tst_now_ns() | 1, n = 0, t0;
	unsigned i, ms = tst_env_unsigned("RELHASH_FAST_MS", 600);

	memset(&m, 0, sizeof(m));
	tst_reset_thread_failures();
	m.kind = mid_kinds[_i];
	p = *kinds[m.kind].p;
	p.min_size = 4;
	m.t = relhash_create(&p);
	ck_assert(m.t);
	m.nstable = m.kind == K8_WEAK || m.kind == K16_WEAK ? NSTABLE / 5
	                                                   : NSTABLE;
	m.stable = calloc(NSTABLE, sizeof(*m.stable));
	m.absent = calloc(NSTABLE, sizeof(*m.absent));
	ck_assert(m.stable && m.absent);
	for (i = 0; i < m.nstable; i++) {
		obj_fill(&m.stable[i], tst_mix64(i + 1) & ~(1ull << 62), i);
		/* Near misses: the stable key with its top bit flipped. */
		obj_fill(&m.absent[i], m.stable[i].k8 ^ (1ull << 63), NSTABLE + i);
		ck_assert_int_eq(relhash_insert(m.t, &m.stable[i].node), 0);
	}
	tst_thread_start(&rz, mid_resizer, &m);
	tst_thread_start(&wr, mid_writer, &m);
	t0 = tst_now_ns();
	while (tst_ms_since(t0) < ms && !tst_load(&tst_failures.count)) {
		relhash_read_lock();
		for (i = 0; i < 256; i++) {
			unsigned k = (unsigned)(tst_rand(&rng) % m.nstable);
			bool odd = (k & 1) != 0;
			const void *key = key_of(m.kind, &m.stable[k], buf, odd);
			void *slow = relhash_lookup(m.t, key);
			void *fast = lookup_fast(m.kind, m.t, key);

			if (slow != &m.stable[k] || fast != slow) {
				size_t size = relhash_size(m.t);

				relhash_read_unlock();
				tst_store(&m.stop, 1);
				ck_abort_msg("[%s] %s: stable object %u: relhash_lookup "
				             "%p, relhash_lookup_fast %p, expected %p "
				             "(table size %zu, %llu resizes done)", BUILD,
				             kinds[m.kind].name, k, slow, fast,
				             (void *)&m.stable[k], size,
				             (unsigned long long)tst_load(&m.resizes));
			}
			key = key_of(m.kind, &m.absent[k], buf, !odd);
			slow = relhash_lookup(m.t, key);
			fast = lookup_fast(m.kind, m.t, key);
			if (slow || fast) {
				relhash_read_unlock();
				tst_store(&m.stop, 1);
				ck_abort_msg("[%s] %s: absent key %u: relhash_lookup %p, "
				             "relhash_lookup_fast %p", BUILD,
				             kinds[m.kind].name, k, slow, fast);
			}
			n += 2;
		}
		n += check_other_forms_mid(&m, &rng);
		relhash_read_unlock();
	}
	tst_store(&m.stop, 1);
	TST_JOIN(rz, 20000, "resizer did not stop");
	TST_JOIN(wr, 20000, "writer did not stop");
	tst_assert_no_thread_failures();
	printf("[%s] during resize, %-32s %llu comparisons, %llu resizes, %llu "
	       "updates\n", BUILD, kinds[m.kind].name, (unsigned long long)n,
	       (unsigned long long)m.resizes, (unsigned long long)m.updates);
	ck_assert_msg(m.resizes > 0, "no resize completed");
	relhash_destroy(m.t, NULL, NULL);
	free(m.stable);
	free(m.absent);
}
END_TEST

/* ---------------------------------------------------------------------- */
/* The read-side functions by address                                      */

static void (*volatile lock_fn)(void) = &relhash_read_lock;
static void (*volatile unlock_fn)(void) = &relhash_read_unlock;
static bool (*volatile ongoing_fn)(void) = &relhash_read_ongoing;

#define ONGOING(exp, where)                                                  \
	do {                                                                 \
		ck_assert_msg(relhash_read_ongoing() == (exp),               \
		              "[%s] %s: relhash_read_ongoing() is %d",        \
		              BUILD, where, !(exp));                          \
		ck_assert_msg(ongoing_fn() == (exp),                         \
		              "[%s] %s: (&relhash_read_ongoing)() is %d",     \
		              BUILD, where, !(exp));                          \
		ck_assert_msg((relhash_read_ongoing)() == (exp),             \
		              "[%s] %s: (relhash_read_ongoing)() is %d",      \
		              BUILD, where, !(exp));                          \
	} while (0)

START_TEST(read_side_function_pointers)
{
	ck_assert(lock_fn && unlock_fn && ongoing_fn);
	ONGOING(false, "at the start");

	lock_fn();
	ONGOING(true, "after lock by pointer");
	ck_assert_int_eq(relhash_synchronize(), -EDEADLK);
	relhash_read_lock();
	ONGOING(true, "nested inline lock");
	unlock_fn();
	ONGOING(true, "inner unlock by pointer (outer still held)");
	relhash_read_unlock();
	ONGOING(false, "outer unlock inline");
	ck_assert_int_eq(relhash_synchronize(), 0);

	relhash_read_lock();
	(relhash_read_lock)();
	lock_fn();
	ONGOING(true, "three levels, three forms");
	relhash_read_unlock();
	(relhash_read_unlock)();
	ONGOING(true, "one level left");
	ck_assert_int_eq(relhash_synchronize(), -EDEADLK);
	unlock_fn();
	ONGOING(false, "all unlocked");
	ck_assert_int_eq(relhash_synchronize(), 0);
}
END_TEST

/* A section entered through one form and left through the other holds off
 * a grace period, and releases it. */
struct holder {
	int how;     /* 0: lock by pointer, unlock inline; 1: the reverse */
	int entered; /* set by the holder */
	int release; /* set by the test */
	pthread_t thr;
};

static void *holder_main(void *arg)
{
	struct holder *h = arg;

	if (h->how == 0)
		lock_fn();
	else
		relhash_read_lock();
	tst_store(&h->entered, 1);
	TST_WAIT_FOR(tst_load(&h->release), HANG_MS);
	if (h->how == 0)
		relhash_read_unlock();
	else
		unlock_fn();
	return NULL;
}

struct syncer {
	int done;
	pthread_t thr;
};

static void *syncer_main(void *arg)
{
	struct syncer *s = arg;

	TST_THREAD_CHECK(relhash_synchronize() == 0, "synchronize failed");
	tst_store(&s->done, 1);
	return NULL;
}

START_TEST(mixed_forms_hold_grace_period)
{
	int how;

	tst_reset_thread_failures();
	for (how = 0; how < 2; how++) {
		struct holder h = { .how = how };
		struct syncer s = { 0 };
		const char *desc = how == 0 ? "entered by &relhash_read_lock, left "
		                              "inline"
		                            : "entered inline, left by "
		                              "&relhash_read_unlock";

		tst_thread_start(&h.thr, holder_main, &h);
		ck_assert_msg(TST_WAIT_FOR(tst_load(&h.entered), HANG_MS),
		              "holder did not start");
		tst_thread_start(&s.thr, syncer_main, &s);
		ck_assert_msg(!TST_WAIT_FOR(tst_load(&s.done), 200),
		              "[%s] synchronize returned while a reader (%s) was "
		              "inside its section", BUILD, desc);
		tst_store(&h.release, 1);
		ck_assert_msg(TST_WAIT_FOR(tst_load(&s.done), HANG_MS),
		              "[%s] synchronize did not return after the reader "
		              "(%s) left", BUILD, desc);
		TST_JOIN(h.thr, HANG_MS, "holder did not exit");
		TST_JOIN(s.thr, HANG_MS, "syncer did not exit");
	}
	tst_assert_no_thread_failures();
}
END_TEST

static Suite *fast_suite(void)
{
	Suite *s = suite_create("fast");
	const TTest *read_side[] = {
		read_side_function_pointers,
		mixed_forms_hold_grace_period,
	};
	TCase *tc;

	tc = tcase_create("lookup");
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, fast_equals_lookup, 0, NKINDS);
	tcase_add_loop_test(tc, fast_equals_lookup_during_resize, 0, 6);
	suite_add_tcase(s, tc);

	tst_add_tcase(s, "read-side", 30, read_side, TST_COUNT(read_side));
	return s;
}

int main(void)
{
	return tst_run(srunner_create(fast_suite()));
}
