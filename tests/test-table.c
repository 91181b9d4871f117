/*
 * tests/test-table.c - single-threaded semantics of relhash tables
 * (<relhash/table.h>) against a model.
 *
 * The core is random_ops: seeded random sequences of insert, remove,
 * replace, resize (valid sizes and refusals), refused calls of every kind,
 * and operations wrapped in read-side sections, on tables of many key kinds
 * (4/5/8/16/24-byte keys, user hashfn, user cmpfn, aliasing cmpfn, string
 * keys with key_len 0, and weak hashes that build long chains).  After every
 * operation check_table() compares the whole table with the model: size,
 * count, relhash_lookup and relhash_lookup_fast of every key (present and
 * absent), and one iteration that must return each present object exactly
 * once.  A refused call must leave all of that unchanged.
 *
 * Reproduce a failure with RELHASH_TEST_SEED=<base seed printed in the
 * message>; RELHASH_TABLE_STEPS (default 1500) and RELHASH_TABLE_RUNS (3)
 * set the number of steps per run and of runs per variant.
 *
 * The rest are targeted tests: relhash_create parameter checking and size
 * clamping, seeds, cmpfn/hashfn use, one-bucket tables, automatic resizing,
 * relhash_destroy and its free_fn, destroy racing an automatic resize, and
 * (in --enable-debug builds) allocation failures.
 */
#include "common.h"

#include <inttypes.h>
#include <stdatomic.h>

#include <sys/mman.h>

#include <relhash.h>

#define NKEYS 256       /* model key space: keys 0 .. NKEYS-1 */
#define NABSENT 32      /* keys NKEYS .. NKEYS+NABSENT-1 are never inserted */
#define SLOTS 3         /* objects per key (for replace and recycling) */
#define OBJ_MAGIC 0x6f626a2d6d616769ull

/* Object states in the model. */
enum { S_FREE, S_IN, S_RETIRED };

struct tobj {
	uint64_t magic;
	unsigned char kb[24];     /* key bytes (key_len 4, 5, 8, 16 or 24) */
	const char *name;         /* string key (key_len 0 tables) */
	char namebuf[32];
	struct relhash_node node; /* deliberately not first */
	unsigned idx;             /* model key index */
	int state;                /* S_* */
	bool ever_inserted;
	unsigned freed;           /* free_fn calls */
};

static uint64_t base_seed;

/* ---------------------------------------------------------------------- */
/* Keys and hash functions                                                 */

static uint32_t ld32(const void *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
}

/* The 32-bit value that identifies key i: a bijection of i. */
static uint32_t key_tail(unsigned i)
{
	return (uint32_t)i * 0x9e3779b1u + 0x7f4a7c15u;
}

/* key_len bytes of key i: a constant head (so comparisons must look at the
 * tail) and key_tail(i) in the last 4 bytes. */
static void key_bytes(size_t len, unsigned i, unsigned char *b)
{
	uint32_t tail = key_tail(i);

	memset(b, 0xc3 ^ (int)len, len);
	memcpy(b + len - 4, &tail, 4);
}

static void key_name(unsigned i, char *buf, size_t n)
{
	/* Varying lengths, shared prefixes. */
	snprintf(buf, n, "key-%u%.*s", i, (int)(i % 7), "xxxxxxx");
}

/* Seeds and lengths the user callbacks were called with. */
static uint64_t cb_seed;          /* last seed seen by a hash callback */
static unsigned cb_seed_changes;  /* times it changed */
static size_t cb_expect_len;      /* key_len the table was created with */
static unsigned cb_bad_len;       /* hashfn calls with another key_len */
/* Calls of the user callbacks, which the library's resize thread makes
 * too (a rehash's probe of the hash): atomic. */
static unsigned long cmp_calls;
static unsigned long hash_calls;

static void cb_note(size_t len, uint64_t seed)
{
	tst_inc(&hash_calls);
	if (seed != cb_seed) {
		cb_seed = seed;
		cb_seed_changes++;
	}
	if (len != cb_expect_len)
		cb_bad_len++;
}

static uint64_t fnv(const unsigned char *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;

	while (n--) {
		h ^= *p++;
		h *= 0x100000001b3ull;
	}
	return h;
}

static uint64_t hf_mix(const void *key, size_t len, uint64_t seed)
{
	cb_note(len, seed);
	return tst_mix64(fnv(key, len) ^ seed);
}

/* Hash and compare only the last 4 bytes: keys that differ only in their
 * head are equal. */
static uint64_t hf_tail32(const void *key, size_t len, uint64_t seed)
{
	cb_note(len, seed);
	return tst_mix64(ld32((const char *)key + len - 4) ^ seed);
}

static int cmp_tail32(const void *key, const void *obj)
{
	const struct tobj *o = obj;

	tst_inc(&cmp_calls);
	return ld32((const char *)key + 4) != ld32(o->kb + 4);
}

/* memcmp, counting calls (for a table with the default hash). */
static int cmp_count8(const void *key, const void *obj)
{
	const struct tobj *o = obj;

	tst_inc(&cmp_calls);
	return memcmp(key, o->kb, 8);
}

/* Weak hashes: long chains and heavy interleaving during resizes. */
static uint64_t hf_mod3(const void *key, size_t len, uint64_t seed)
{
	(void)seed;
	tst_inc(&hash_calls);
	return ld32((const char *)key + len - 4) % 3;
}

static uint64_t hf_high(const void *key, size_t len, uint64_t seed)
{
	/* Only the top 3 bits vary: every key in bucket 0 at every size. */
	(void)seed;
	tst_inc(&hash_calls);
	return (uint64_t)(ld32((const char *)key + len - 4) % 8) << 61;
}

static uint64_t hf_const(const void *key, size_t len, uint64_t seed)
{
	(void)key, (void)len, (void)seed;
	tst_inc(&hash_calls);
	return 0x5555;
}

static uint64_t hf_low6(const void *key, size_t len, uint64_t seed)
{
	(void)seed;
	tst_inc(&hash_calls);
	return ld32((const char *)key + len - 4) & 63;
}

/* String keys: the key is a pointer to a `const char *`. */
static uint64_t hs_str(const char *s, uint64_t seed)
{
	return tst_mix64(fnv((const unsigned char *)s, strlen(s)) ^ seed);
}

static uint64_t hs_key(const void *key, size_t len, uint64_t seed)
{
	cb_note(len, seed);
	return hs_str(*(const char *const *)key, seed);
}

static uint64_t hs_obj(const void *obj, uint64_t seed)
{
	cb_note(0, seed);
	return hs_str(((const struct tobj *)obj)->name, seed);
}

static int cs_str(const void *key, const void *obj)
{
	tst_inc(&cmp_calls);
	return strcmp(*(const char *const *)key, ((const struct tobj *)obj)->name);
}

/* ---------------------------------------------------------------------- */
/* Variants                                                                */

struct variant {
	const char *name;
	size_t key_len;
	uint64_t (*hashfn)(const void *, size_t, uint64_t);
	uint64_t (*obj_hashfn)(const void *, uint64_t);
	int (*cmpfn)(const void *, const void *);
	bool string_keys;
};

static const struct variant variants[] = {
	{ "k8-default", 8, NULL, NULL, NULL, false },
	{ "k4-default", 4, NULL, NULL, NULL, false },
	{ "k5-default", 5, NULL, NULL, NULL, false },
	{ "k16-default", 16, NULL, NULL, NULL, false },
	{ "k24-default", 24, NULL, NULL, NULL, false },
	{ "k8-hashfn", 8, hf_mix, NULL, NULL, false },
	{ "k8-cmpfn", 8, NULL, NULL, cmp_count8, false },
	{ "k8-hashfn-cmpfn-tail32", 8, hf_tail32, NULL, cmp_tail32, false },
	{ "string-keylen0", 0, hs_key, hs_obj, cs_str, true },
	{ "weak-mod3", 8, hf_mod3, NULL, NULL, false },
	{ "weak-high-bits", 8, hf_high, NULL, NULL, false },
	{ "weak-constant", 8, hf_const, NULL, NULL, false },
	{ "weak-low6", 8, hf_low6, NULL, NULL, false },
};
#define NVARIANTS ((int)(sizeof(variants) / sizeof(variants[0])))
#define V_K8 0
#define V_K8_HASHFN 5
#define V_K8_CMPFN 6
#define V_TAIL32 7
#define V_STRING 8
#define V_WEAK_FIRST 9

static struct relhash_params variant_params(const struct variant *v)
{
	struct relhash_params p;

	memset(&p, 0, sizeof(p));
	p.node_offset = offsetof(struct tobj, node);
	p.key_offset = v->string_keys ? offsetof(struct tobj, name)
	                              : offsetof(struct tobj, kb);
	p.key_len = v->key_len;
	p.hashfn = v->hashfn;
	p.obj_hashfn = v->obj_hashfn;
	p.cmpfn = v->cmpfn;
	return p;
}

/* A lookup key for key i, built apart from any object. */
struct keybuf {
	unsigned char b[24];
	char s[32];
	const char *sp;
};

static const void *key_make(const struct variant *v, unsigned i,
                            struct keybuf *k)
{
	if (v->string_keys) {
		key_name(i, k->s, sizeof(k->s));
		k->sp = k->s;
		return &k->sp;
	}
	key_bytes(v->key_len, i, k->b);
	return k->b;
}

static void obj_init(const struct variant *v, struct tobj *o, unsigned i)
{
	/* Garbage in the node: nothing may rely on it being zero. */
	memset(o, 0xa5, sizeof(*o));
	o->magic = OBJ_MAGIC;
	key_bytes(v->key_len ? v->key_len : 8, i, o->kb);
	key_name(i, o->namebuf, sizeof(o->namebuf));
	o->name = o->namebuf;
	o->idx = i;
	o->state = S_FREE;
	o->ever_inserted = false;
	o->freed = 0;
}

/* ---------------------------------------------------------------------- */
/* The model                                                               */

struct ctx {
	const struct variant *v;
	struct relhash_params p;
	struct relhash_table *t;
	struct tobj *objs;             /* NKEYS * SLOTS */
	struct tobj *strangers;        /* NKEYS, never inserted */
	struct tobj *model[NKEYS];
	size_t nmodel;
	size_t size, min, max;         /* max: SIZE_MAX when unlimited */
	uint64_t seed, rng;
	unsigned step;
	char op[200];
	unsigned char seen[NKEYS];
};

#define CK(c, cond, ...)                                                     \
	do {                                                                 \
		if (!(cond)) {                                               \
			char m_[512];                                        \
			snprintf(m_, sizeof(m_), __VA_ARGS__);               \
			ck_abort_msg("variant %s, base seed %llu (run seed "  \
			             "%llu), step %u, op [%s]: %s",           \
			             (c)->v->name,                           \
			             (unsigned long long)base_seed,          \
			             (unsigned long long)(c)->seed, (c)->step, \
			             (c)->op, m_);                           \
		}                                                            \
	} while (0)

#define OP(c, ...) snprintf((c)->op, sizeof((c)->op), __VA_ARGS__)

static unsigned rnd(struct ctx *c, unsigned n)
{
	return (unsigned)(tst_rand(&c->rng) % n);
}

static struct tobj *obj_at(struct ctx *c, unsigned i, unsigned s)
{
	return &c->objs[i * SLOTS + s];
}

/* The index of o in objs, or -1 when o is not one of our objects. */
static long obj_index(struct ctx *c, const void *o)
{
	uintptr_t base = (uintptr_t)c->objs, p = (uintptr_t)o;

	if (p < base || p >= base + NKEYS * SLOTS * sizeof(struct tobj) ||
	    (p - base) % sizeof(struct tobj))
		return -1;
	return (long)((p - base) / sizeof(struct tobj));
}

/* Free every retired object: after a grace period nobody can see them. */
static void recycle(struct ctx *c)
{
	unsigned i;

	ck_assert_int_eq(relhash_synchronize(), 0);
	for (i = 0; i < NKEYS * SLOTS; i++)
		if (c->objs[i].state == S_RETIRED)
			c->objs[i].state = S_FREE;
}

static struct tobj *free_slot(struct ctx *c, unsigned i)
{
	unsigned s, pass;

	for (pass = 0; pass < 2; pass++) {
		unsigned start = rnd(c, SLOTS);

		for (s = 0; s < SLOTS; s++) {
			struct tobj *o = obj_at(c, i, (start + s) % SLOTS);

			if (o->state == S_FREE)
				return o;
		}
		/* ensure_free() runs before steps inside sections. */
		ck_assert_msg(!relhash_read_ongoing(), "test bug: recycling inside "
		              "a read-side section");
		recycle(c);
	}
	ck_abort_msg("no free object for key %u", i);
	return NULL;
}

/* Before a step: every key has a free object (recycling needs a grace
 * period, which cannot pass inside a read-side section). */
static void ensure_free(struct ctx *c)
{
	unsigned i, s;

	for (i = 0; i < NKEYS; i++) {
		for (s = 0; s < SLOTS; s++)
			if (obj_at(c, i, s)->state == S_FREE)
				break;
		if (s == SLOTS) {
			recycle(c);
			return;
		}
	}
}

/* An object of key i that is not in the table and is not except: retired
 * (removed or replaced earlier), free (maybe inserted long ago), or a
 * never-inserted stranger. */
static struct tobj *non_member(struct ctx *c, unsigned i,
                               const struct tobj *except, const char **what)
{
	unsigned s, start = rnd(c, SLOTS);

	if (rnd(c, 3) == 0) {
		*what = "never-inserted object";
		return &c->strangers[i];
	}
	for (s = 0; s < SLOTS; s++) {
		struct tobj *o = obj_at(c, i, (start + s) % SLOTS);

		if (o->state == S_RETIRED && o != except) {
			*what = "removed object";
			return o;
		}
	}
	for (s = 0; s < SLOTS; s++) {
		struct tobj *o = obj_at(c, i, (start + s) % SLOTS);

		if (o->state == S_FREE && o != except) {
			*what = o->ever_inserted ? "object removed long ago"
			                         : "never-inserted object";
			return o;
		}
	}
	*what = "never-inserted object";
	return &c->strangers[i];
}

/* Compare the whole table with the model. */
static void check_table(struct ctx *c)
{
	struct relhash_table_stats st = { .size = sizeof(st) };
	struct relhash_iter it;
	struct keybuf k;
	size_t n = 0, size = relhash_size(c->t);
	unsigned i;
	void *o, *got, *fast;

	CK(c, size == c->size, "relhash_size %zu, expected %zu", size, c->size);
	relhash_table_stats(c->t, &st);
	CK(c, st.nbuckets == c->size, "stats.nbuckets %zu, expected %zu",
	   st.nbuckets, c->size);
	CK(c, relhash_count(c->t) == c->nmodel, "relhash_count %zu, expected %zu",
	   relhash_count(c->t), c->nmodel);

	relhash_read_lock();
	for (i = 0; i < NKEYS + NABSENT; i++) {
		void *exp = i < NKEYS ? c->model[i] : NULL;
		const void *key = key_make(c->v, i, &k);

		got = relhash_lookup(c->t, key);
		CK(c, got == exp, "relhash_lookup(key %u%s) = %p (index %ld), "
		   "expected %p", i, i >= NKEYS ? ", never inserted" : "", got,
		   obj_index(c, got), exp);
		fast = relhash_lookup_fast(c->t, key, c->p);
		CK(c, fast == exp, "relhash_lookup_fast(key %u) = %p, expected %p",
		   i, fast, exp);
	}
	relhash_read_unlock();

	memset(c->seen, 0, sizeof(c->seen));
	relhash_read_lock();
	for (o = relhash_iter_first(c->t, &it); o; o = relhash_iter_next(&it)) {
		long idx = obj_index(c, o);
		struct tobj *to = o;

		CK(c, idx >= 0, "iteration returned %p, not one of the test's "
		   "objects (stranger or garbage)", o);
		CK(c, to->state == S_IN && c->model[to->idx] == to,
		   "iteration returned object %ld (key %u, state %d), which is "
		   "not in the model", idx, to->idx, to->state);
		CK(c, !c->seen[to->idx], "iteration returned key %u twice",
		   to->idx);
		c->seen[to->idx] = 1;
		CK(c, ++n <= c->nmodel, "iteration returned more than the %zu "
		   "objects in the table", c->nmodel);
	}
	CK(c, relhash_iter_next(&it) == NULL,
	   "relhash_iter_next after the end returned an object");
	relhash_read_unlock();
	if (n != c->nmodel)
		for (i = 0; i < NKEYS; i++)
			CK(c, !c->model[i] || c->seen[i], "iteration returned %zu "
			   "of %zu objects; missing key %u", n, c->nmodel, i);
	CK(c, n == c->nmodel, "iteration returned %zu objects, expected %zu", n,
	   c->nmodel);
}

static size_t expected_size(size_t initial, size_t min, size_t max)
{
	size_t mn = min ? min : 4, mx = max ? max : ((size_t)1 << 31);
	size_t s = initial ? initial : 64;

	if (s < mn)
		s = mn;
	if (s > mx)
		s = mx;
	return s;
}

static void ctx_init(struct ctx *c, const struct variant *v, uint64_t seed,
                     size_t initial, size_t min, size_t max)
{
	unsigned i, s;

	memset(c, 0, sizeof(*c));
	c->v = v;
	c->seed = seed;
	c->rng = seed ? seed : 1;
	c->p = variant_params(v);
	c->p.initial_size = initial;
	c->p.min_size = min;
	c->p.max_size = max;
	OP(c, "create initial %zu min %zu max %zu", initial, min, max);
	c->objs = malloc(NKEYS * SLOTS * sizeof(struct tobj));
	c->strangers = malloc(NKEYS * sizeof(struct tobj));
	ck_assert(c->objs && c->strangers);
	for (i = 0; i < NKEYS; i++) {
		for (s = 0; s < SLOTS; s++)
			obj_init(v, obj_at(c, i, s), i);
		obj_init(v, &c->strangers[i], i);
		if (i & 1) /* some with a zeroed node */
			memset(&c->strangers[i].node, 0,
			       sizeof(c->strangers[i].node));
	}
	cb_expect_len = v->key_len;
	c->t = relhash_create(&c->p);
	CK(c, c->t != NULL, "relhash_create failed: %s", strerror(errno));
	c->min = min ? min : 4;
	c->max = max ? max : SIZE_MAX;
	c->size = expected_size(initial, min, max);
	check_table(c);
}

/* A context on the heap, initialised as by ctx_init(). */
static struct ctx *ctx_new(const struct variant *v, uint64_t seed,
                           size_t initial, size_t min, size_t max)
{
	struct ctx *c = malloc(sizeof(*c));

	ck_assert(c);
	ctx_init(c, v, seed, initial, min, max);
	return c;
}

static void free_fn_count(void *obj, void *arg)
{
	struct tobj *o = obj;

	ck_assert_ptr_eq(arg, (void *)&base_seed);
	ck_assert_uint_eq(o->magic, OBJ_MAGIC);
	o->freed++;
}

/* Destroy: free_fn exactly once for each object in the table. */
static void ctx_destroy(struct ctx *c)
{
	unsigned i;

	OP(c, "relhash_destroy with free_fn");
	relhash_destroy(c->t, free_fn_count, &base_seed);
	for (i = 0; i < NKEYS * SLOTS; i++) {
		struct tobj *o = &c->objs[i];

		CK(c, o->freed == (o->state == S_IN ? 1u : 0u),
		   "free_fn called %u times for object %u (key %u, %s)", o->freed,
		   i, o->idx, o->state == S_IN ? "in the table" : "not in the table");
	}
	for (i = 0; i < NKEYS; i++)
		CK(c, c->strangers[i].freed == 0,
		   "free_fn called for never-inserted object of key %u", i);
	free(c->objs);
	free(c->strangers);
}

/* ctx_destroy(), and the context's own memory. */
static void ctx_free(struct ctx *c)
{
	ctx_destroy(c);
	free(c);
}

/* Insert keys 0 .. n-1 into c's table (model updated). */
static void fill_keys(struct ctx *c, unsigned n)
{
	unsigned i;

	for (i = 0; i < n; i++) {
		struct tobj *o = free_slot(c, i);

		OP(c, "insert key %u", i);
		CK(c, relhash_insert(c->t, &o->node) == 0, "insert failed");
		o->state = S_IN;
		o->ever_inserted = true;
		c->model[i] = o;
		c->nmodel++;
	}
}

/* ---------------------------------------------------------------------- */
/* Operations                                                              */

static void op_insert(struct ctx *c)
{
	unsigned i = rnd(c, NKEYS);
	struct tobj *o;
	int r;

	if (c->model[i]) {
		unsigned char kb[24];

		if (rnd(c, 2)) {
			o = c->model[i];
			OP(c, "insert key %u: the node already in the table", i);
		} else {
			o = rnd(c, 2) ? free_slot(c, i) : &c->strangers[i];
			OP(c, "insert key %u: a second object with that key", i);
		}
		memcpy(kb, o->kb, sizeof(kb));
		r = relhash_insert(c->t, &o->node);
		CK(c, r == -EEXIST, "returned %d, expected -EEXIST", r);
		CK(c, memcmp(kb, o->kb, sizeof(kb)) == 0 && o->magic == OBJ_MAGIC,
		   "refused insert changed the caller's object");
		return;
	}
	o = free_slot(c, i);
	OP(c, "insert key %u (object %ld)", i, obj_index(c, o));
	r = relhash_insert(c->t, &o->node);
	CK(c, r == 0, "returned %d, expected 0", r);
	o->state = S_IN;
	o->ever_inserted = true;
	c->model[i] = o;
	c->nmodel++;
}

static void op_remove(struct ctx *c)
{
	unsigned i = rnd(c, NKEYS);
	struct tobj *o = c->model[i];
	const char *what;
	int r;

	if (o && rnd(c, 4)) {
		OP(c, "remove key %u (object %ld)", i, obj_index(c, o));
		r = relhash_remove(c->t, &o->node);
		CK(c, r == 0, "returned %d, expected 0", r);
		o->state = S_RETIRED;
		c->model[i] = NULL;
		c->nmodel--;
		return;
	}
	o = non_member(c, i, NULL, &what);
	OP(c, "remove key %u: %s (key %s)", i, what,
	   c->model[i] ? "present" : "absent");
	r = relhash_remove(c->t, &o->node);
	CK(c, r == -ENOENT, "returned %d, expected -ENOENT", r);
}

static void op_replace(struct ctx *c)
{
	unsigned i = rnd(c, NKEYS), j;
	struct tobj *old = c->model[i], *new;
	const char *what;
	int r;

	if (old) {
		switch (rnd(c, 8)) {
		case 0:
			OP(c, "replace key %u with itself", i);
			r = relhash_replace(c->t, &old->node, &old->node);
			CK(c, r == -EINVAL, "returned %d, expected -EINVAL", r);
			return;
		case 1:
			j = (i + 1 + rnd(c, NKEYS - 1)) % NKEYS;
			new = c->model[j] && rnd(c, 2) ? c->model[j] : free_slot(c, j);
			OP(c, "replace key %u with an object of key %u (%s)", i, j,
			   new->state == S_IN ? "in the table" : "not in the table");
			r = relhash_replace(c->t, &old->node, &new->node);
			CK(c, r == -EINVAL, "returned %d, expected -EINVAL", r);
			return;
		case 2:
			OP(c, "replace key %u: NULL new node, then NULL old node", i);
			r = relhash_replace(c->t, &old->node, NULL);
			CK(c, r == -EINVAL, "NULL new: returned %d, expected -EINVAL", r);
			r = relhash_replace(c->t, NULL, &free_slot(c, i)->node);
			CK(c, r == -EINVAL, "NULL old: returned %d, expected -EINVAL", r);
			return;
		case 3:
			/* A stale old node and the current one as new: must
			 * not touch the current node. */
			new = non_member(c, i, NULL, &what);
			OP(c, "replace key %u: old = %s, new = the object in the table",
			   i, what);
			r = relhash_replace(c->t, &new->node, &old->node);
			CK(c, r == -ENOENT, "returned %d, expected -ENOENT", r);
			return;
		case 4:
			new = free_slot(c, i);
			old = non_member(c, i, new, &what);
			OP(c, "replace key %u (present): old = %s", i, what);
			r = relhash_replace(c->t, &old->node, &new->node);
			CK(c, r == -ENOENT, "returned %d, expected -ENOENT", r);
			return;
		default:
			new = free_slot(c, i);
			OP(c, "replace key %u: object %ld with object %ld", i,
			   obj_index(c, old), obj_index(c, new));
			r = relhash_replace(c->t, &old->node, &new->node);
			CK(c, r == 0, "returned %d, expected 0", r);
			old->state = S_RETIRED;
			new->state = S_IN;
			new->ever_inserted = true;
			c->model[i] = new;
			if (rnd(c, 3) == 0) {
				check_table(c);
				OP(c, "remove key %u: the node replaced just before", i);
				r = relhash_remove(c->t, &old->node);
				CK(c, r == -ENOENT, "returned %d, expected -ENOENT", r);
			}
			return;
		}
	}
	new = free_slot(c, i);
	old = non_member(c, i, new, &what);
	OP(c, "replace key %u (absent): old = %s", i, what);
	r = relhash_replace(c->t, &old->node, &new->node);
	CK(c, r == -ENOENT, "returned %d, expected -ENOENT", r);
}

/* A random power of two in [min, min(max, 4096)]. */
static size_t random_size(struct ctx *c)
{
	size_t hi = c->max < 4096 ? c->max : 4096, s = c->min;
	unsigned steps = 0, k;

	while ((s << steps) < hi)
		steps++;
	k = rnd(c, steps + 1);
	return s << k;
}

static void op_resize(struct ctx *c)
{
	size_t n;
	int r;

	switch (rnd(c, 4)) {
	case 0: {
		/* Refusals. */
		size_t bad[8];
		unsigned nbad = 0, b;

		bad[nbad++] = 0;
		bad[nbad++] = 3;
		bad[nbad++] = c->size * 3;
		bad[nbad++] = SIZE_MAX;
		if (c->size > 2)
			bad[nbad++] = c->size + 1;
		if (c->min > 1)
			bad[nbad++] = c->min / 2;
		if (c->max != SIZE_MAX)
			bad[nbad++] = c->max * 2;
		else
			bad[nbad++] = (size_t)1 << 40;
		b = rnd(c, nbad);
		OP(c, "resize to %zu (invalid: min %zu, max %zu)", bad[b], c->min,
		   c->max);
		r = relhash_resize(c->t, bad[b]);
		CK(c, r == -EINVAL, "returned %d, expected -EINVAL", r);
		return;
	}
	case 1:
		n = random_size(c);
		if (n == c->size)
			n = n == c->min ? (c->max > n ? n * 2 : n) : c->min;
		if (n == c->size)
			return; /* min == max */
		OP(c, "resize to %zu inside a read-side section (size %zu)", n,
		   c->size);
		relhash_read_lock();
		r = relhash_resize(c->t, n);
		relhash_read_unlock();
		CK(c, r == -EDEADLK, "returned %d, expected -EDEADLK", r);
		return;
	default:
		n = random_size(c);
		OP(c, "resize %zu -> %zu", c->size, n);
		r = relhash_resize(c->t, n);
		CK(c, r == 0, "returned %d, expected 0", r);
		c->size = n;
		return;
	}
}

static unsigned steps_per_run(void)
{
	/* RELHASH_DEBUG_YIELD=1 (--enable-debug builds) makes every lookup
	 * and update sleep now and then: far fewer steps. */
	unsigned def = tst_env_unsigned("RELHASH_DEBUG_YIELD", 0) ? 150 : 1500;

	return tst_env_unsigned("RELHASH_TABLE_STEPS", def);
}

static void random_run(const struct variant *v, uint64_t seed,
                       unsigned nsteps)
{
	static const size_t mins[] = { 0, 1, 2, 4, 8 };
	static const size_t maxs[] = { 0, 8, 16, 64, 512, 4096 };
	static const size_t inits[] = { 0, 1, 2, 16, 64, 1024, 8192 };
	struct ctx *c;
	size_t min, max, init;
	unsigned step;
	uint64_t r0 = seed;

	min = mins[tst_rand(&r0) % 5];
	do
		max = maxs[tst_rand(&r0) % 6];
	while (max && max < (min ? min : 4));
	init = inits[tst_rand(&r0) % 7];
	c = ctx_new(v, seed, init, min, max);

	for (step = 1; step <= nsteps; step++) {
		unsigned what = rnd(c, 100);
		bool in_section = rnd(c, 4) == 0;

		c->step = step;
		ensure_free(c);
		if (in_section)
			relhash_read_lock();
		if (what < 35)
			op_insert(c);
		else if (what < 60)
			op_remove(c);
		else if (what < 85)
			op_replace(c);
		if (in_section)
			relhash_read_unlock();
		if (what >= 85 && what < 95)
			op_resize(c);
		else if (what >= 95) {
			OP(c, "read-only step");
		}
		check_table(c);
		/* Now and then, empty the table or fill it. */
		if (rnd(c, 500) == 0) {
			unsigned i;
			bool fill = rnd(c, 2);

			for (i = 0; i < NKEYS; i++) {
				if (fill && !c->model[i]) {
					struct tobj *o = free_slot(c, i);

					OP(c, "fill: insert key %u", i);
					CK(c, relhash_insert(c->t, &o->node) == 0,
					   "insert failed");
					o->state = S_IN;
					o->ever_inserted = true;
					c->model[i] = o;
					c->nmodel++;
				} else if (!fill && c->model[i]) {
					OP(c, "empty: remove key %u", i);
					CK(c, relhash_remove(c->t, &c->model[i]->node) == 0,
					   "remove failed");
					c->model[i]->state = S_RETIRED;
					c->model[i] = NULL;
					c->nmodel--;
				}
			}
			check_table(c);
		}
	}
	ctx_free(c);
}

/* Each variant: a few runs with seeds derived from the base seed. */
START_TEST(random_ops)
{
	const struct variant *v = &variants[_i];
	unsigned run, runs = tst_env_unsigned("RELHASH_TABLE_RUNS", 3);
	/* Weak hashes make every check quadratic: fewer steps. */
	unsigned steps = steps_per_run() / (_i >= V_WEAK_FIRST ? 3 : 1);
	uint64_t t0 = tst_now_ns();

	for (run = 0; run < runs; run++)
		random_run(v,
		           tst_mix64(base_seed + (uint64_t)_i * 1000 + run) | 1,
		           steps);
	printf("random_ops %-24s %u runs of %u steps in %.0f ms\n", v->name,
	       runs, steps, tst_ms_since(t0));
}
END_TEST

/* ---------------------------------------------------------------------- */
/* Weak hashes: long chains through resizes both ways                      */

START_TEST(weak_hash_resizes)
{
	static const size_t sizes[] = { 1, 4096, 1, 2, 64, 8, 1024, 2, 256, 1, 16 };
	const struct variant *v = &variants[V_WEAK_FIRST + _i];
	struct ctx *c;
	unsigned i, k;

	c = ctx_new(v, base_seed, 16, 1, 4096);
	for (i = 0; i < NKEYS; i++) {
		struct tobj *o = free_slot(c, i);

		OP(c, "insert key %u", i);
		CK(c, relhash_insert(c->t, &o->node) == 0, "insert failed");
		o->state = S_IN;
		c->model[i] = o;
		c->nmodel++;
	}
	check_table(c);
	for (k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		c->step = k;
		OP(c, "resize %zu -> %zu with %zu keys", c->size, sizes[k], c->nmodel);
		CK(c, relhash_resize(c->t, sizes[k]) == 0, "resize failed");
		c->size = sizes[k];
		check_table(c);
		/* Remove every third key, then put them back, at this size. */
		for (i = k % 3; i < NKEYS; i += 3) {
			OP(c, "remove key %u at size %zu", i, c->size);
			CK(c, relhash_remove(c->t, &c->model[i]->node) == 0,
			   "remove failed");
			c->model[i]->state = S_RETIRED;
			c->model[i] = NULL;
			c->nmodel--;
		}
		check_table(c);
		for (i = k % 3; i < NKEYS; i += 3) {
			struct tobj *o = free_slot(c, i);

			OP(c, "re-insert key %u at size %zu", i, c->size);
			CK(c, relhash_insert(c->t, &o->node) == 0, "insert failed");
			o->state = S_IN;
			c->model[i] = o;
			c->nmodel++;
		}
		check_table(c);
	}
	ctx_free(c);
}
END_TEST

/* ---------------------------------------------------------------------- */
/* relhash_create                                                          */

static struct relhash_params k8_params(void)
{
	return variant_params(&variants[V_K8]);
}

static void expect_create_einval(const struct relhash_params *p,
                                 const char *what)
{
	struct relhash_table *t;

	errno = 0;
	t = relhash_create(p);
	if (t)
		relhash_destroy(t, NULL, NULL);
	ck_assert_msg(t == NULL, "relhash_create accepted %s", what);
	ck_assert_msg(errno == EINVAL, "relhash_create(%s): errno %d (%s), "
	              "expected EINVAL", what, errno, strerror(errno));
}

START_TEST(create_refuses_bad_params)
{
	struct relhash_params p;
	unsigned m;
	char what[128];

	expect_create_einval(NULL, "NULL params");

	/* key_len 0 needs all three callbacks. */
	for (m = 0; m < 7; m++) {
		p = variant_params(&variants[V_STRING]);
		if (!(m & 1))
			p.hashfn = NULL;
		if (!(m & 2))
			p.obj_hashfn = NULL;
		if (!(m & 4))
			p.cmpfn = NULL;
		snprintf(what, sizeof(what), "key_len 0 with%s%s%s",
		         p.hashfn ? " hashfn" : "", p.obj_hashfn ? " obj_hashfn" : "",
		         p.cmpfn ? " cmpfn" : "");
		expect_create_einval(&p, what);
	}

	p = k8_params();
	p.initial_size = 3;
	expect_create_einval(&p, "initial_size 3");
	p = k8_params();
	p.initial_size = 100;
	expect_create_einval(&p, "initial_size 100");
	p = k8_params();
	p.min_size = 6;
	expect_create_einval(&p, "min_size 6");
	p = k8_params();
	p.max_size = 1000;
	expect_create_einval(&p, "max_size 1000");
	p = k8_params();
	p.min_size = 64;
	p.max_size = 32;
	expect_create_einval(&p, "min_size 64 > max_size 32");
	p = k8_params();
	p.min_size = 2;
	p.max_size = 1;
	expect_create_einval(&p, "min_size 2 > max_size 1");
	p = k8_params();
	p.flags = 0x4;
	expect_create_einval(&p, "flags 0x4");
	p = k8_params();
	p.flags = RELHASH_AUTO_RESIZE | 0x80000000u;
	expect_create_einval(&p, "flags AUTO_RESIZE|0x80000000");
	/* The node's atomic link would be misaligned (x86 alone forgives
	 * that). */
	for (m = 1; m < _Alignof(struct relhash_node); m++) {
		p = k8_params();
		p.node_offset += m;
		snprintf(what, sizeof(what), "node_offset %zu", p.node_offset);
		expect_create_einval(&p, what);
	}
}
END_TEST

/* A key at an odd offset is fine: keys are read with memcpy. */
struct odd_key_obj {
	struct relhash_node node;
	unsigned char bytes[1 + sizeof(uint64_t)];
};

START_TEST(create_accepts_unaligned_key)
{
	static const struct relhash_params p = {
		.node_offset = offsetof(struct odd_key_obj, node),
		.key_offset = offsetof(struct odd_key_obj, bytes) + 1,
		.key_len = sizeof(uint64_t),
	};
	struct odd_key_obj objs[16];
	struct relhash_table *t = relhash_create(&p);
	uint64_t k;

	ck_assert_msg(t != NULL, "key_offset %zu refused: %s", p.key_offset,
	              strerror(errno));
	for (k = 0; k < 16; k++) {
		memcpy(objs[k].bytes + 1, &k, sizeof(k));
		ck_assert_int_eq(relhash_insert(t, &objs[k].node), 0);
	}
	relhash_read_lock();
	for (k = 0; k < 16; k++) {
		ck_assert_ptr_eq(relhash_lookup(t, &k), &objs[k]);
		ck_assert_ptr_eq(relhash_lookup_fast(t, &k, p), &objs[k]);
	}
	relhash_read_unlock();
	relhash_destroy(t, NULL, NULL);
}
END_TEST

START_TEST(create_accepts_custom_keys)
{
	struct relhash_params p = variant_params(&variants[V_STRING]);
	struct relhash_table *t = relhash_create(&p);

	ck_assert_msg(t != NULL, "key_len 0 with all three callbacks refused: %s",
	              strerror(errno));
	relhash_destroy(t, NULL, NULL);
}
END_TEST

START_TEST(create_clamps_initial_size)
{
	static const struct {
		size_t initial, min, max, expect;
	} cases[] = {
		{ 0, 0, 0, 64 },        /* library defaults */
		{ 0, 0, 16, 16 },       /* default initial above max */
		{ 0, 128, 0, 128 },     /* default initial below min */
		{ 0, 4, 4, 4 },
		{ 1, 0, 0, 4 },         /* below the default min */
		{ 1, 1, 0, 1 },
		{ 2, 8, 64, 8 },
		{ 1024, 0, 256, 256 },
		{ 1024, 1, 4096, 1024 },
		{ 1u << 20, 1, 1u << 12, 1u << 12 },
		{ 4, 1, 1, 1 },
		{ 32, 32, 32, 32 },
	};
	unsigned k;

	for (k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		struct relhash_params p = k8_params();
		struct relhash_table *t;

		p.initial_size = cases[k].initial;
		p.min_size = cases[k].min;
		p.max_size = cases[k].max;
		t = relhash_create(&p);
		ck_assert_msg(t, "create initial %zu min %zu max %zu failed: %s",
		              p.initial_size, p.min_size, p.max_size, strerror(errno));
		ck_assert_msg(relhash_size(t) == cases[k].expect,
		              "create initial %zu min %zu max %zu: size %zu, "
		              "expected %zu", p.initial_size, p.min_size, p.max_size,
		              relhash_size(t), cases[k].expect);
		relhash_destroy(t, NULL, NULL);
	}
}
END_TEST

/* Whether the VmFlags of the mapping that holds addr (/proc/self/smaps)
 * include flag; false also when there is no such mapping to read. */
static bool mapping_has_flag(const void *addr, const char *flag)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[512], word[8];
	uintptr_t a = (uintptr_t)addr, lo, hi;
	bool inside = false, found = false;

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " ", &lo, &hi) == 2) {
			inside = lo <= a && a < hi;
		} else if (inside && !strncmp(line, "VmFlags:", 8)) {
			const char *p = line + 8;
			int n;

			while (sscanf(p, " %7s%n", word, &n) == 1) {
				found |= !strcmp(word, flag);
				p += n;
			}
			inside = false;
		}
	}
	fclose(f);
	return found;
}

/*
 * A bucket array of 2 MiB or more is advised for transparent huge pages:
 * its mapping has the "hg" flag.  Calibrated on a buffer the test advises
 * itself: where that shows no flag (a kernel without transparent huge
 * pages, an emulator that drops the advice), there is nothing to check.
 */
START_TEST(large_bucket_arrays_advised_huge)
{
	enum { TWO_MIB = 2 << 20 };
	struct relhash_params p = k8_params();
	struct relhash_table *t;
	struct relhash__buckets *b;
	void *own;

	ck_assert_int_eq(posix_memalign(&own, TWO_MIB, 2 * TWO_MIB), 0);
	if (madvise(own, 2 * TWO_MIB, MADV_HUGEPAGE) != 0 ||
	    !mapping_has_flag(own, "hg")) {
		printf("large_bucket_arrays_advised_huge: no advice to see here\n");
		free(own);
		return;
	}
	free(own);
	p.initial_size = p.max_size = (size_t)1 << 19; /* a 4 MiB array */
	t = relhash_create(&p);
	ck_assert_ptr_nonnull(t);
	b = atomic_load(&((struct relhash__table_head *)(void *)t)->buckets);
	ck_assert_msg(mapping_has_flag(b, "hg"),
	              "a bucket array of %zu bytes is not advised for huge pages",
	              (b->mask + 1) * sizeof(void *));
	relhash_destroy(t, NULL, NULL);
}
END_TEST

/*
 * min_size 0 means the library default (4); a max_size below that must
 * still give a table (the default min is lowered to max), not EINVAL.
 */
START_TEST(create_max_below_default_min)
{
	static const size_t maxs[] = { 1, 2 };
	unsigned k;

	for (k = 0; k < 2; k++) {
		struct relhash_params p = k8_params();
		struct relhash_table *t;

		p.max_size = maxs[k];
		errno = 0;
		t = relhash_create(&p);
		ck_assert_msg(t, "create with min_size 0 (default) and max_size %zu "
		              "failed: %s", p.max_size, strerror(errno));
		ck_assert_msg(relhash_size(t) == maxs[k], "size %zu, expected %zu",
		              relhash_size(t), maxs[k]);
		relhash_destroy(t, NULL, NULL);
	}
}
END_TEST

/* ---------------------------------------------------------------------- */
/* NULL arguments and -EDEADLK                                             */

/*
 * The statistics structs' size rule (<relhash/types.h>).  The "old"
 * structs stand for a program built against headers from before the
 * later fields were appended: a prefix of today's layout.
 */
struct old_table_stats {
	size_t size;
	uint64_t resizes, grace_periods, unzip_passes;
};
struct old_epoch_stats {
	size_t size;
	uint64_t grace_periods, callbacks_queued;
};
#define STATS_POISON 0xa5

/* Do bytes [from, to) of p all hold the poison? */
static bool poisoned(const void *p, size_t from, size_t to)
{
	const unsigned char *b = p;

	for (; from < to; from++)
		if (b[from] != STATS_POISON)
			return false;
	return true;
}

START_TEST(stats_size_rule)
{
	static const struct relhash_params p = { .key_len = 8 };
	struct relhash_table *t = relhash_create(&p);
	struct relhash_table_stats now = { .size = sizeof(now) };
	union {
		struct relhash_table_stats st;
		struct relhash_epoch_stats es;
		unsigned char bytes[sizeof(struct relhash_table_stats) +
		                    sizeof(struct relhash_epoch_stats) + 32];
	} buf, before;
	const size_t old_ts = sizeof(struct old_table_stats);
	const size_t old_es = sizeof(struct old_epoch_stats);
	size_t small[] = { 0, 1, sizeof(size_t) - 1 };

	ck_assert_ptr_nonnull(t);
	ck_assert_uint_eq(old_ts, offsetof(struct relhash_table_stats, nbuckets));
	ck_assert_uint_eq(old_es,
	                  offsetof(struct relhash_epoch_stats, callbacks_run));
	ck_assert_int_eq(relhash_resize(t, 128), 0);
	ck_assert_int_eq(relhash_table_stats(t, &now), 0);
	ck_assert_uint_eq(now.size, sizeof(now));
	ck_assert_uint_eq(now.nbuckets, 128);

	/* An old caller: its fields, and not a byte past its size. */
	memset(&buf, STATS_POISON, sizeof(buf));
	buf.st.size = old_ts;
	ck_assert_int_eq(relhash_table_stats(t, &buf.st), 0);
	ck_assert_uint_eq(buf.st.size, old_ts);
	ck_assert_uint_eq(buf.st.resizes, now.resizes);
	ck_assert_uint_eq(buf.st.unzip_passes, now.unzip_passes);
	ck_assert(poisoned(&buf, old_ts, sizeof(buf)));

	/* A newer caller: the library's fields, their extent in size. */
	memset(&buf, STATS_POISON, sizeof(buf));
	buf.st.size = sizeof(buf);
	ck_assert_int_eq(relhash_table_stats(t, &buf.st), 0);
	ck_assert_uint_eq(buf.st.size, sizeof(struct relhash_table_stats));
	ck_assert_uint_eq(buf.st.nbuckets, 128);
	ck_assert(poisoned(&buf, sizeof(buf.st), sizeof(buf)));

	/* The same for the engine's struct. */
	memset(&buf, STATS_POISON, sizeof(buf));
	buf.es.size = old_es;
	ck_assert_int_eq(relhash_epoch_stats(&buf.es), 0);
	ck_assert_uint_eq(buf.es.size, old_es);
	ck_assert(!poisoned(&buf, sizeof(size_t), old_es));
	ck_assert(poisoned(&buf, old_es, sizeof(buf)));
	memset(&buf, STATS_POISON, sizeof(buf));
	buf.es.size = sizeof(buf);
	ck_assert_int_eq(relhash_epoch_stats(&buf.es), 0);
	ck_assert_uint_eq(buf.es.size, sizeof(struct relhash_epoch_stats));
	ck_assert(buf.es.uses_membarrier == 0 || buf.es.uses_membarrier == 1);
	ck_assert(poisoned(&buf, sizeof(buf.es), sizeof(buf)));

	/* Too small to hold the size field: refused, nothing written. */
	for (size_t i = 0; i < sizeof(small) / sizeof(small[0]); i++) {
		memset(&buf, STATS_POISON, sizeof(buf));
		buf.st.size = small[i];
		before = buf;
		ck_assert_int_eq(relhash_table_stats(t, &buf.st), -EINVAL);
		ck_assert(memcmp(&buf, &before, sizeof(buf)) == 0);
		ck_assert_int_eq(relhash_epoch_stats(&buf.es), -EINVAL);
		ck_assert(memcmp(&buf, &before, sizeof(buf)) == 0);
	}
	ck_assert_int_eq(relhash_table_stats(t, NULL), -EINVAL);
	ck_assert_int_eq(relhash_table_stats(NULL, &now), -EINVAL);
	ck_assert_int_eq(relhash_epoch_stats(NULL), -EINVAL);
	relhash_destroy(t, NULL, NULL);
}
END_TEST

START_TEST(null_arguments)
{
	struct relhash_node *misaligned;
	struct ctx *c;
	struct tobj *o;

	c = ctx_new(&variants[V_K8], base_seed, 16, 0, 0);
	o = free_slot(c, 5);
	ck_assert_int_eq(relhash_insert(c->t, &o->node), 0);
	o->state = S_IN;
	c->model[5] = o;
	c->nmodel = 1;

	OP(c, "NULL arguments");
	CK(c, relhash_insert(c->t, NULL) == -EINVAL, "insert(t, NULL)");
	CK(c, relhash_insert(NULL, &free_slot(c, 6)->node) == -EINVAL,
	   "insert(NULL, node)");
	CK(c, relhash_remove(c->t, NULL) == -EINVAL, "remove(t, NULL)");
	CK(c, relhash_remove(NULL, &o->node) == -EINVAL, "remove(NULL, node)");
	CK(c, relhash_replace(c->t, NULL, NULL) == -EINVAL,
	   "replace(t, NULL, NULL)");
	CK(c, relhash_replace(NULL, &o->node, &free_slot(c, 5)->node) == -EINVAL,
	   "replace(NULL, old, new)");
	CK(c, relhash_resize(NULL, 64) == -EINVAL, "resize(NULL, 64)");
	check_table(c);

	OP(c, "misaligned nodes");
	/* Never dereferenced: refused on the address alone. */
	misaligned = (struct relhash_node *)(void *)
		((char *)&free_slot(c, 6)->node + 1);
	CK(c, relhash_insert(c->t, misaligned) == -EINVAL, "insert(t, odd)");
	CK(c, relhash_remove(c->t, misaligned) == -EINVAL, "remove(t, odd)");
	CK(c, relhash_replace(c->t, &o->node, misaligned) == -EINVAL,
	   "replace(t, old, odd)");
	check_table(c);

	OP(c, "resize inside nested read-side sections");
	relhash_read_lock();
	relhash_read_lock();
	CK(c, relhash_resize(c->t, 64) == -EDEADLK, "nested: expected -EDEADLK");
	relhash_read_unlock();
	CK(c, relhash_resize(c->t, 4) == -EDEADLK, "expected -EDEADLK");
	relhash_read_unlock();
	check_table(c);
	OP(c, "resize after the sections");
	CK(c, relhash_resize(c->t, 64) == 0, "resize failed after the sections");
	c->size = 64;
	check_table(c);
	ctx_free(c);
}
END_TEST

/* ---------------------------------------------------------------------- */
/* Replace                                                                 */

START_TEST(replace_semantics)
{
	struct ctx *c;
	struct tobj *a, *b;
	struct keybuf k;
	unsigned i;

	c = ctx_new(&variants[V_K8], base_seed, 8, 0, 0);
	fill_keys(c, 64);
	for (i = 0; i < 64; i++) {
		c->step = i;
		a = c->model[i];
		b = free_slot(c, i);
		OP(c, "replace key %u", i);
		CK(c, relhash_replace(c->t, &a->node, &b->node) == 0, "failed");
		a->state = S_RETIRED;
		b->state = S_IN;
		c->model[i] = b;
		relhash_read_lock();
		CK(c, relhash_lookup(c->t, key_make(c->v, i, &k)) == b,
		   "lookup does not return the new object");
		relhash_read_unlock();
		OP(c, "remove key %u: old node after replace", i);
		CK(c, relhash_remove(c->t, &a->node) == -ENOENT, "expected -ENOENT");
		OP(c, "replace key %u: old node after replace, again", i);
		CK(c, relhash_replace(c->t, &a->node, &free_slot(c, i)->node) ==
		      -ENOENT, "expected -ENOENT");
		OP(c, "replace key %u: (old node, new node) again", i);
		CK(c, relhash_replace(c->t, &a->node, &b->node) == -ENOENT,
		   "expected -ENOENT");
		check_table(c);
		/* Replace across a resize. */
		if (i % 16 == 15) {
			OP(c, "resize to %zu", c->size * 2);
			CK(c, relhash_resize(c->t, c->size * 2) == 0, "resize failed");
			c->size *= 2;
		}
	}
	/* The replacements can be removed. */
	for (i = 0; i < 64; i++) {
		OP(c, "remove key %u: the replacement", i);
		CK(c, relhash_remove(c->t, &c->model[i]->node) == 0, "failed");
		c->model[i]->state = S_RETIRED;
		c->model[i] = NULL;
		c->nmodel--;
	}
	check_table(c);
	ctx_free(c);
}
END_TEST

/*
 * relhash_replace(old, new) where old is not in the table but a current
 * object of the same key is passed as new (a retried replace, a stale
 * pointer): -ENOENT, and the table must be unchanged.  One bucket, so the
 * stale old->next points into the same chain as the current node.
 */
START_TEST(replace_stale_old_with_current_new)
{
	struct ctx *c;
	struct tobj *a5, *c5;
	int r;

	c = ctx_new(&variants[V_K8], base_seed, 1, 1, 0);
	/* At the heads, so that the new key-5 node is not where the old
	 * one was, and a replace that skipped its check would show. */
	relhash__debug_head_inserts(true);
	fill_keys(c, 10); /* one chain: 9 8 7 6 5 4 3 2 1 0 */
	a5 = c->model[5];
	OP(c, "remove key 5");
	CK(c, relhash_remove(c->t, &a5->node) == 0, "remove failed");
	a5->state = S_RETIRED;
	c->model[5] = NULL;
	c->nmodel--;
	c5 = free_slot(c, 5);
	OP(c, "insert key 5 again (new object)");
	CK(c, relhash_insert(c->t, &c5->node) == 0, "insert failed");
	c5->state = S_IN;
	c->model[5] = c5;
	c->nmodel++;
	check_table(c);
	/* a5->next still points at key 4's node; c5 is at the head. */
	OP(c, "replace(removed key-5 node, key-5 node in the table)");
	r = relhash_replace(c->t, &a5->node, &c5->node);
	CK(c, r == -ENOENT, "returned %d, expected -ENOENT", r);
	check_table(c);
	relhash__debug_head_inserts(false);
	ctx_free(c);
}
END_TEST

/* replace with an old node that was never inserted: its private fields are
 * garbage (or zero), but its key is right, so -ENOENT (not -EINVAL). */
START_TEST(replace_never_inserted_old)
{
	struct ctx *c;
	unsigned i;
	int r;

	c = ctx_new(&variants[V_K8], base_seed, 16, 0, 0);
	fill_keys(c, 8);
	for (i = 0; i < 16; i++) {
		/* strangers[i]: node bytes 0xa5 (even i) or zero (odd i). */
		c->step = i;
		OP(c, "replace(never-inserted object of key %u (node %s), free "
		   "object of key %u); key %s", i, i & 1 ? "zeroed" : "garbage", i,
		   c->model[i] ? "present" : "absent");
		r = relhash_replace(c->t, &c->strangers[i].node,
		                    &free_slot(c, i)->node);
		CK(c, r == -ENOENT, "returned %d, expected -ENOENT", r);
		check_table(c);
	}
	ctx_free(c);
}
END_TEST

/* ---------------------------------------------------------------------- */
/* User callbacks and seeds                                                */

/* cmpfn with key_len > 0 is used: keys equal under it are duplicates, and
 * lookups with an aliased key find the object. */
START_TEST(cmpfn_defines_equality)
{
	struct ctx *c;
	struct tobj *b;
	unsigned char key[8];
	unsigned i;
	unsigned long calls;

	c = ctx_new(&variants[V_TAIL32], base_seed, 16, 0, 0);
	fill_keys(c, 32);
	for (i = 0; i < 32; i++) {
		c->step = i;
		/* Same last 4 bytes, different head: equal for cmp_tail32. */
		b = free_slot(c, i);
		b->kb[0] ^= 0xff;
		b->kb[3] ^= 0x11;
		OP(c, "insert key %u with a different head", i);
		calls = tst_load(&cmp_calls);
		CK(c, relhash_insert(c->t, &b->node) == -EEXIST,
		   "cmpfn-equal key was not a duplicate (memcmp used?)");
		CK(c, tst_load(&cmp_calls) > calls, "cmpfn not called by insert");
		memcpy(key, b->kb, 8);
		obj_init(c->v, b, i);
		OP(c, "lookup key %u with a different head", i);
		relhash_read_lock();
		calls = tst_load(&cmp_calls);
		CK(c, relhash_lookup(c->t, key) == c->model[i], "lookup failed");
		CK(c, tst_load(&cmp_calls) > calls, "cmpfn not called by relhash_lookup");
		calls = tst_load(&cmp_calls);
		CK(c, relhash_lookup_fast(c->t, key, c->p) == c->model[i],
		   "lookup_fast failed");
		CK(c, tst_load(&cmp_calls) > calls, "cmpfn not called by relhash_lookup_fast");
		relhash_read_unlock();
		OP(c, "replace key %u with an object with a different head", i);
		b->kb[1] ^= 0x5a;
		CK(c, relhash_replace(c->t, &c->model[i]->node, &b->node) == 0,
		   "replace with a cmpfn-equal key refused");
		c->model[i]->state = S_RETIRED;
		b->state = S_IN;
		c->model[i] = b;
		check_table(c);
	}
	CK(c, cb_bad_len == 0, "hashfn called with key_len != 8 (%u times)",
	   cb_bad_len);
	ctx_free(c);
}
END_TEST

/* cmpfn with the default hash; hashfn with key_len > 0 receives key_len. */
START_TEST(callbacks_are_used)
{
	struct ctx *c;
	unsigned long calls;

	c = ctx_new(&variants[V_K8_CMPFN], base_seed, 16, 0, 0);
	calls = tst_load(&cmp_calls);
	fill_keys(c, 64);
	check_table(c);
	CK(c, tst_load(&cmp_calls) > calls, "cmpfn never called");
	ctx_free(c);

	cb_bad_len = 0;
	c = ctx_new(&variants[V_K8_HASHFN], base_seed, 16, 0, 0);
	calls = tst_load(&hash_calls);
	fill_keys(c, 64);
	CK(c, tst_load(&hash_calls) >= calls + 64,
	   "hashfn called %lu times for 64 inserts",
	   tst_load(&hash_calls) - calls);
	calls = tst_load(&hash_calls);
	check_table(c); /* 2 * (NKEYS + NABSENT) lookups */
	CK(c, tst_load(&hash_calls) >= calls + 2 * (NKEYS + NABSENT),
	   "hashfn called %lu times for %u lookups",
	   tst_load(&hash_calls) - calls,
	   2 * (NKEYS + NABSENT));
	CK(c, cb_bad_len == 0, "hashfn called with key_len != 8 (%u times)",
	   cb_bad_len);
	ctx_free(c);
}
END_TEST

static uint64_t table_seed_via_hashfn(uint64_t seed)
{
	struct relhash_params p = variant_params(&variants[V_K8_HASHFN]);
	struct relhash_table *t;
	struct tobj *o = malloc(sizeof(*o));
	unsigned char key[8];
	uint64_t s1, s2;

	ck_assert(o);
	p.seed = seed;
	cb_expect_len = 8;
	t = relhash_create(&p);
	ck_assert(t);
	obj_init(&variants[V_K8_HASHFN], o, 7);
	cb_seed = 0;
	ck_assert_int_eq(relhash_insert(t, &o->node), 0);
	s1 = cb_seed;
	key_bytes(8, 7, key);
	cb_seed = 0;
	relhash_read_lock();
	ck_assert_ptr_eq(relhash_lookup(t, key), o);
	relhash_read_unlock();
	s2 = cb_seed;
	ck_assert_msg(s1 == s2, "insert hashed with seed %llx, lookup with %llx",
	              (unsigned long long)s1, (unsigned long long)s2);
	relhash_destroy(t, NULL, NULL);
	free(o);
	return s1;
}

START_TEST(seeds)
{
	uint64_t a, b, c;

	a = table_seed_via_hashfn(0x1234567890abcdefull);
	ck_assert_msg(a == 0x1234567890abcdefull, "given seed 0x1234567890abcdef,"
	              " hashfn got %llx", (unsigned long long)a);
	a = table_seed_via_hashfn(0);
	b = table_seed_via_hashfn(0);
	c = table_seed_via_hashfn(0);
	ck_assert_msg(a != 0 && b != 0 && c != 0, "seed 0 reached hashfn as 0");
	ck_assert_msg(a != b && b != c && a != c, "three tables with seed 0 got "
	              "seeds %llx %llx %llx (not random per table)",
	              (unsigned long long)a, (unsigned long long)b,
	              (unsigned long long)c);
}
END_TEST

/* With the default hash and a given seed, objects sit in bucket
 * relhash_hash(key, key_len, seed) & (size - 1): iteration (bucket by
 * bucket) returns them in that order.  With seed 0 two tables differ. */
static void iteration_order(uint64_t seed, unsigned *order, struct tobj *objs)
{
	struct relhash_params p = k8_params();
	struct relhash_table *t;
	struct relhash_iter it;
	struct tobj *o;
	uint64_t prev = 0;
	unsigned i, n = 0;

	p.seed = seed;
	p.initial_size = 64;
	t = relhash_create(&p);
	ck_assert(t);
	for (i = 0; i < 64; i++) {
		obj_init(&variants[V_K8], &objs[i], i);
		ck_assert_int_eq(relhash_insert(t, &objs[i].node), 0);
	}
	relhash_read_lock();
	for (o = relhash_iter_first(t, &it); o; o = relhash_iter_next(&it)) {
		uint64_t b = relhash_hash(o->kb, 8, seed) & 63;

		ck_assert_uint_lt(n, 64);
		if (seed)
			ck_assert_msg(b >= prev, "seed %llx: key %u in bucket %llu "
			              "after bucket %llu: the table does not use "
			              "relhash_hash with the given seed",
			              (unsigned long long)seed, o->idx,
			              (unsigned long long)b, (unsigned long long)prev);
		prev = b;
		order[n++] = o->idx;
	}
	relhash_read_unlock();
	ck_assert_uint_eq(n, 64);
	relhash_destroy(t, NULL, NULL);
}

START_TEST(default_hash_uses_seed)
{
	struct tobj *objs = malloc(64 * sizeof(*objs));
	unsigned o1[64], o2[64];

	ck_assert(objs);
	iteration_order(0xfeedbeef12345ull, o1, objs);
	iteration_order(0xfeedbeef12345ull, o2, objs);
	ck_assert_msg(memcmp(o1, o2, sizeof(o1)) == 0,
	              "same seed, same insertions, different iteration order");
	iteration_order(42, o1, objs);
	iteration_order(0, o1, objs);
	iteration_order(0, o2, objs);
	ck_assert_msg(memcmp(o1, o2, sizeof(o1)) != 0,
	              "two tables with seed 0 hash identically (seed not random)");
	free(objs);
}
END_TEST

/*
 * Known answers: the hash's values for every length class (0, 1-3, 4-7,
 * 8-16, the 16-byte loop), computed by an independent arbitrary-precision
 * model of the formula (the same on every target: the words are read
 * little-endian).
 * relhash_hash() and the inline hash that relhash_lookup_fast() compiles
 * into the caller must both give them, whichever multiplication the
 * compiler and target select (the header writes GCC's x86-64 product in
 * assembly).
 */
START_TEST(default_hash_known_values)
{
	static const struct {
		size_t len;
		uint64_t hash;
	} kat[] = {
		{ 0, 0x347ae9e91b63bdf1ull },  { 1, 0x760160b17c264048ull },
		{ 3, 0x15f68ff79b1897f5ull },  { 4, 0x97098708f3a9bfddull },
		{ 7, 0x08fa1f40232b2c8aull },  { 8, 0x38e48d494c5d3d91ull },
		{ 12, 0x765f282fd599fcaaull }, { 16, 0x678d3571eaffc954ull },
		{ 17, 0x886cbe803c3bd06cull }, { 31, 0x6c770a033dda2470ull },
		{ 32, 0x3cf3c85ad1f9d00aull }, { 33, 0x61ecea4844dfae2eull },
		{ 64, 0x855f542db07448caull },
	};
	const uint64_t seed = 0x0123456789abcdefull;
	unsigned char buf[64];
	unsigned i;

	for (i = 0; i < sizeof(buf); i++)
		buf[i] = (unsigned char)(i * 7 + 1);
	for (i = 0; i < sizeof(kat) / sizeof(kat[0]); i++) {
		ck_assert_msg(relhash_hash(buf, kat[i].len, seed) == kat[i].hash,
		              "relhash_hash, %zu bytes: %016llx", kat[i].len,
		              (unsigned long long)relhash_hash(buf, kat[i].len,
		                                               seed));
#ifndef RELHASH_NO_INLINE
		ck_assert_msg(relhash__hash_inline(buf, kat[i].len, seed) ==
		                      kat[i].hash,
		              "inline hash, %zu bytes", kat[i].len);
#endif
	}
}
END_TEST

/* ---------------------------------------------------------------------- */
/* One-bucket tables                                                       */

START_TEST(one_bucket)
{
	static const size_t sizes[] = { 1, 2, 1, 1024, 1, 4, 1 };
	struct ctx *c;
	unsigned i, k;

	c = ctx_new(&variants[V_K8], base_seed, 1, 1, 0);
	CK(c, relhash_size(c->t) == 1, "initial size %zu", relhash_size(c->t));
	for (i = 0; i < NKEYS; i += 2) {
		struct tobj *o = free_slot(c, i);

		OP(c, "insert key %u", i);
		CK(c, relhash_insert(c->t, &o->node) == 0, "failed");
		o->state = S_IN;
		c->model[i] = o;
		c->nmodel++;
	}
	check_table(c);
	for (k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		c->step = k;
		OP(c, "resize %zu -> %zu", c->size, sizes[k]);
		CK(c, relhash_resize(c->t, sizes[k]) == 0, "failed");
		c->size = sizes[k];
		check_table(c);
	}
	OP(c, "resize to 0 with min_size 1");
	CK(c, relhash_resize(c->t, 0) == -EINVAL, "expected -EINVAL");
	check_table(c);
	ctx_free(c);
}
END_TEST

/* ---------------------------------------------------------------------- */
/* Automatic resizing                                                      */

struct aobj {
	uint64_t key;
	struct relhash_node node;
	unsigned freed;
};

static const struct relhash_params auto_params = {
	.node_offset = offsetof(struct aobj, node),
	.key_offset = offsetof(struct aobj, key),
	.key_len = 8,
	.initial_size = 16,
	.min_size = 16,
	.flags = RELHASH_AUTO_RESIZE,
};

static bool load_at_most_75(struct relhash_table *t)
{
	return relhash_count(t) * 100 <= relhash_size(t) * 75;
}

static bool load_at_least_30(struct relhash_table *t, size_t min)
{
	return relhash_size(t) == min || relhash_count(t) * 100 >= relhash_size(t) * 30;
}

static void check_auto_contents(struct relhash_table *t, struct aobj *objs,
                                size_t n, const bool *present,
                                const char *when)
{
	size_t i;

	relhash_read_lock();
	for (i = 0; i < n + 100; i++) {
		uint64_t key = i;
		void *exp = i < n && present[i] ? &objs[i] : NULL;
		void *got = relhash_lookup(t, &key);

		ck_assert_msg(got == exp, "%s: lookup of key %zu returned %p, "
		              "expected %p", when, i, got, exp);
	}
	relhash_read_unlock();
}

/*
 * Chains in split order (doc/DESIGN.md section 7) expand in one unzip pass
 * per doubling, not one per crossing of a chain that alternates between
 * siblings: fill 4,096 keys (into 4 buckets, or into 65,536 and shrink to
 * 4), then expand to 65,536.  Chains of about 1,024 nodes in any other
 * order need hundreds of passes for the first doubling alone.
 */
static void expand_in_split_order(bool shrink_first)
{
	enum { NOBJ = 4096, SMALL = 4, LARGE = 65536, DOUBLINGS = 14 };
	struct relhash_params p = auto_params;
	struct relhash_table_stats st0 = { .size = sizeof(st0) };
	struct relhash_table_stats st1 = { .size = sizeof(st1) };
	struct relhash_table *t;
	struct aobj *objs = calloc(NOBJ, sizeof(*objs));
	bool present[NOBJ];
	size_t i;

	p.initial_size = shrink_first ? LARGE : SMALL;
	p.min_size = SMALL;
	p.flags = 0;
	t = relhash_create(&p);
	ck_assert_ptr_nonnull(t);
	ck_assert_ptr_nonnull(objs);
	for (i = 0; i < NOBJ; i++) {
		objs[i].key = i;
		present[i] = true;
		ck_assert_int_eq(relhash_insert(t, &objs[i].node), 0);
	}
	if (shrink_first)
		ck_assert_int_eq(relhash_resize(t, SMALL), 0);
	relhash_table_stats(t, &st0);
	ck_assert_int_eq(relhash_resize(t, LARGE), 0);
	relhash_table_stats(t, &st1);
	check_auto_contents(t, objs, NOBJ, present, "after the expansion");
	ck_assert_msg(st1.unzip_passes - st0.unzip_passes <= DOUBLINGS,
	              "expanding %d -> %d took %llu unzip passes, more than "
	              "one per doubling", SMALL, LARGE,
	              (unsigned long long)(st1.unzip_passes - st0.unzip_passes));
	/* One grace period per doubling, its publication's (a pass that
	 * leaves every family clean waits none), and the cursors' at the
	 * end of the call. */
	ck_assert_msg(st1.grace_periods - st0.grace_periods <= DOUBLINGS + 2,
	              "expanding %d -> %d waited %llu grace periods, more "
	              "than one per doubling", SMALL, LARGE,
	              (unsigned long long)(st1.grace_periods - st0.grace_periods));
	relhash_destroy(t, NULL, NULL);
	free(objs);
}

/* A shrink splices old chains in split order. */
START_TEST(expansion_after_shrink_needs_few_passes)
{
	expand_in_split_order(true);
}
END_TEST

/* Insertions place nodes in split order. */
START_TEST(expansion_after_inserts_needs_few_passes)
{
	expand_in_split_order(false);
}
END_TEST

START_TEST(auto_resize_grows_and_shrinks)
{
	/*
	 * KEEP: the load is sampled every 64th update of a thread
	 * (doc/DESIGN.md section 10), so the resize thread may size the table
	 * for a count up to a few samples above the final one.  Any count in
	 * [400, 600] asks for 1024 buckets, where 400 is inside the band.
	 */
	enum { N = 6000, KEEP = 400 };
	struct aobj *objs = calloc(N, sizeof(*objs));
	bool *present = calloc(N, sizeof(*present));
	struct relhash_table *t = relhash_create(&auto_params);
	struct relhash_table_stats st = { .size = sizeof(st) };
	uint64_t t0;
	size_t i;

	ck_assert(objs && present && t);
	for (i = 0; i < N; i++) {
		objs[i].key = i;
		ck_assert_int_eq(relhash_insert(t, &objs[i].node), 0);
		present[i] = true;
	}
	t0 = tst_now_ns();
	ck_assert_msg(TST_WAIT_FOR(load_at_most_75(t), 5000),
	              "auto-resize did not grow the table within 5 s: %zu "
	              "objects in %zu buckets", relhash_count(t), relhash_size(t));
	printf("auto_resize: grew to %zu buckets for %zu objects in %.1f ms\n",
	       relhash_size(t), relhash_count(t), tst_ms_since(t0));
	check_auto_contents(t, objs, N, present, "after growing");

	for (i = KEEP; i < N; i++) {
		ck_assert_int_eq(relhash_remove(t, &objs[i].node), 0);
		present[i] = false;
	}
	t0 = tst_now_ns();
	ck_assert_msg(TST_WAIT_FOR(load_at_least_30(t, 16), 5000),
	              "auto-resize did not shrink the table within 5 s: %zu "
	              "objects in %zu buckets", relhash_count(t), relhash_size(t));
	printf("auto_resize: shrank to %zu buckets for %zu objects in %.1f ms\n",
	       relhash_size(t), relhash_count(t), tst_ms_since(t0));
	ck_assert_msg(load_at_most_75(t), "shrank too far: %zu objects in %zu "
	              "buckets", relhash_count(t), relhash_size(t));
	check_auto_contents(t, objs, N, present, "after shrinking");
	relhash_table_stats(t, &st);
	ck_assert_msg(st.resizes >= 2, "stats.resizes %llu",
	              (unsigned long long)st.resizes);
	relhash_destroy(t, NULL, NULL);
	ck_assert_int_eq(relhash_synchronize(), 0);
	free(objs);
	free(present);
}
END_TEST

struct remover_job {
	struct relhash_table *t[2];
	struct aobj *objs[2];
	size_t from, to; /* remove keys [from, to) of each table, alternating */
};

static void *remover_main(void *arg)
{
	struct remover_job *j = arg;
	size_t i;
	unsigned k;

	for (i = j->from; i < j->to; i++)
		for (k = 0; k < 2; k++)
			if (j->t[k])
				TST_THREAD_CHECK(relhash_remove(j->t[k],
				                                &j->objs[k][i].node) == 0,
				                 "remove key %zu from table %u", i, k);
	return NULL;
}

static void run_remover(struct remover_job *j)
{
	pthread_t thr;

	/* A fresh thread: no updates counted before these. */
	tst_thread_start(&thr, remover_main, j);
	TST_JOIN(thr, 10000, "remover thread did not finish");
	tst_assert_no_thread_failures();
}

/*
 * A thread that removes fewer than 64 objects: the load drops far below
 * 30 %, the table must still shrink (no later update will come).
 */
START_TEST(auto_resize_shrinks_after_few_removals)
{
	enum { N = 96 };
	struct aobj *objs = calloc(N, sizeof(*objs));
	struct relhash_table *t = relhash_create(&auto_params);
	struct remover_job j = { { t, NULL }, { objs, NULL }, 33, N };
	size_t i;

	ck_assert(objs && t);
	for (i = 0; i < N; i++) {
		objs[i].key = i;
		ck_assert_int_eq(relhash_insert(t, &objs[i].node), 0);
	}
	ck_assert_msg(TST_WAIT_FOR(load_at_most_75(t), 5000),
	              "did not grow: %zu objects in %zu buckets", relhash_count(t),
	              relhash_size(t));
	tst_sleep_ms(50);
	ck_assert_msg(load_at_least_30(t, 16), "grew too far: %zu objects in %zu "
	              "buckets", relhash_count(t), relhash_size(t));
	run_remover(&j); /* 63 removals */
	ck_assert_msg(TST_WAIT_FOR(load_at_least_30(t, 16), 3000),
	              "after one thread removed 63 of %d objects the table "
	              "stays at %zu buckets for %zu objects (load under 30 %%; "
	              "the removals were never sampled)", N, relhash_size(t),
	              relhash_count(t));
	relhash_destroy(t, NULL, NULL);
	ck_assert_int_eq(relhash_synchronize(), 0);
	free(objs);
}
END_TEST

/*
 * One thread removes from two tables alternately.  Both must shrink: a
 * per-thread sampling counter shared by all tables would sample only one.
 */
START_TEST(auto_resize_shrinks_interleaved_tables)
{
	enum { N = 4000, KEEP = 40 };
	struct remover_job j;
	unsigned k;
	size_t i;

	memset(&j, 0, sizeof(j));
	for (k = 0; k < 2; k++) {
		j.t[k] = relhash_create(&auto_params);
		j.objs[k] = calloc(N, sizeof(struct aobj));
		ck_assert(j.t[k] && j.objs[k]);
		for (i = 0; i < N; i++) {
			j.objs[k][i].key = i;
			ck_assert_int_eq(relhash_insert(j.t[k], &j.objs[k][i].node), 0);
		}
		ck_assert_msg(TST_WAIT_FOR(load_at_most_75(j.t[k]), 5000),
		              "table %u did not grow: %zu objects in %zu buckets",
		              k, relhash_count(j.t[k]), relhash_size(j.t[k]));
	}
	j.from = KEEP;
	j.to = N;
	run_remover(&j);
	for (k = 0; k < 2; k++)
		ck_assert_msg(TST_WAIT_FOR(load_at_least_30(j.t[k], 16), 3000),
		              "table %u of 2 (updated alternately by one thread) "
		              "stays at %zu buckets for %zu objects", k,
		              relhash_size(j.t[k]), relhash_count(j.t[k]));
	for (k = 0; k < 2; k++) {
		relhash_destroy(j.t[k], NULL, NULL);
		ck_assert_int_eq(relhash_synchronize(), 0);
		free(j.objs[k]);
	}
}
END_TEST

static void free_fn_aobj(void *obj, void *arg)
{
	struct aobj *o = obj;

	(*(size_t *)arg)++;
	o->freed++;
}

struct destroy_job {
	struct relhash_table *t;
	size_t freed;
	volatile bool done;
};

static void *destroy_main(void *arg)
{
	struct destroy_job *j = arg;

	relhash_destroy(j->t, free_fn_aobj, &j->freed);
	tst_store(&j->done, true);
	return NULL;
}

/* Destroy while an automatic resize has just been requested or is running:
 * must neither deadlock nor free anything twice or leak. */
/*
 * The resize thread waits for grace periods only, never for callbacks: a
 * callback that blocks (here until released, then destroys the table) must
 * hold up neither automatic resizing nor the destroy.  With the callback
 * limit at 8, a resizer that queued its own deferred frees would soon wait
 * for the blocked callback thread under back-pressure, holding the resize
 * that relhash_destroy() then waits for.
 */
static struct {
	struct relhash_table *t;
	_Atomic bool started, go, destroyed;
} blocked_cb;

static void block_then_destroy(struct relhash_head *head)
{
	(void)head;
	atomic_store(&blocked_cb.started, true);
	while (!atomic_load(&blocked_cb.go))
		tst_sleep_us(1000);
	relhash_destroy(blocked_cb.t, NULL, NULL);
	atomic_store(&blocked_cb.destroyed, true);
}

static bool wait_flag_ms(_Atomic bool *flag, unsigned ms)
{
	uint64_t t0 = tst_now_ns();

	while (!atomic_load(flag) && tst_now_ns() - t0 < ms * 1000000ull)
		tst_sleep_us(1000);
	return atomic_load(flag);
}

START_TEST(resizes_do_not_wait_for_callbacks)
{
	enum { N = 64, ROUNDS = 150 };
	struct relhash_params p = auto_params;
	static struct relhash_head head;
	struct aobj *objs = calloc(N, sizeof(*objs));
	uint64_t t0;
	size_t i;
	unsigned round;

	ck_assert(objs);
	p.initial_size = p.min_size = 4;
	relhash_set_callback_limit(8);
	blocked_cb.t = relhash_create(&p);
	ck_assert(blocked_cb.t);
	relhash_call(&head, block_then_destroy);
	ck_assert_msg(wait_flag_ms(&blocked_cb.started, 10000),
	              "the callback did not start within 10 s");
	/* Grow and shrink, 3 or so doublings and a shrink a round. */
	for (round = 0; round < ROUNDS; round++) {
		for (i = 0; i < N / 4; i++) {
			objs[i].key = i;
			ck_assert_int_eq(relhash_insert(blocked_cb.t, &objs[i].node), 0);
		}
		tst_sleep_us(1000);
		for (i = 0; i < N / 4; i++)
			ck_assert_int_eq(relhash_remove(blocked_cb.t, &objs[i].node), 0);
		tst_sleep_us(1000);
	}
	for (i = 0; i < N; i++) {
		objs[i].key = i;
		ck_assert_int_eq(relhash_insert(blocked_cb.t, &objs[i].node), 0);
	}
	t0 = tst_now_ns();
	while (relhash_size(blocked_cb.t) < 2 * N && tst_now_ns() - t0 < 5000000000ull)
		tst_sleep_us(1000);
	ck_assert_msg(relhash_size(blocked_cb.t) >= 2 * N, "%d entries, still %zu "
	              "buckets 5 s later: automatic resizing waits for the "
	              "blocked callback", N, relhash_size(blocked_cb.t));
	atomic_store(&blocked_cb.go, true);
	ck_assert_msg(wait_flag_ms(&blocked_cb.destroyed, 10000),
	              "relhash_destroy() in a callback did not return in 10 s");
	free(objs);
}
END_TEST

START_TEST(destroy_during_auto_resize)
{
	enum { N = 3000, ROUNDS = 25 };
	struct aobj *objs = malloc(N * sizeof(*objs));
	unsigned round;
	size_t i;

	ck_assert(objs);
	for (round = 0; round < ROUNDS; round++) {
		struct destroy_job j = { 0 };
		pthread_t thr;
		size_t n = 200 + (size_t)round * 113;

		memset(objs, 0, N * sizeof(*objs));
		j.t = relhash_create(&auto_params);
		ck_assert(j.t);
		for (i = 0; i < n; i++) {
			objs[i].key = i;
			ck_assert_int_eq(relhash_insert(j.t, &objs[i].node), 0);
		}
		/* Shrink requests too: remove some in odd rounds. */
		if (round & 1)
			for (i = 0; i < n / 2; i++)
				ck_assert_int_eq(relhash_remove(j.t, &objs[i].node), 0);
		if (round % 3 == 2)
			tst_sleep_us(200 * round);
		tst_thread_start(&thr, destroy_main, &j);
		TST_JOIN(thr, 10000, "round %u: relhash_destroy of a table with an "
		         "automatic resize did not return within 10 s", round);
		for (i = 0; i < n; i++) {
			unsigned exp = (round & 1) && i < n / 2 ? 0 : 1;

			ck_assert_msg(objs[i].freed == exp, "round %u: free_fn called "
			              "%u times for key %zu, expected %u", round,
			              objs[i].freed, i, exp);
		}
		ck_assert_uint_eq(j.freed, (round & 1) ? n - n / 2 : n);
		/* The removed objects may still be seen by the resizer's
		 * readers until a grace period has passed. */
		ck_assert_int_eq(relhash_synchronize(), 0);
	}
	free(objs);
}
END_TEST

/* ---------------------------------------------------------------------- */
/* relhash_destroy                                                         */

START_TEST(destroy_free_fn)
{
	/* Every size layout: free_fn once per remaining object. */
	static const size_t sizes[] = { 1, 4, 64, 1024 };
	unsigned k;

	for (k = 0; k < 4; k++) {
		struct ctx *c = ctx_new(&variants[k == 3 ? V_STRING : V_K8],
		                        base_seed + k, sizes[k], 1, 0);
		unsigned i;

		fill_keys(c, NKEYS);
		for (i = 0; i < NKEYS; i += 3) {
			ck_assert_int_eq(relhash_remove(c->t, &c->model[i]->node), 0);
			c->model[i]->state = S_RETIRED;
			c->model[i] = NULL;
			c->nmodel--;
		}
		check_table(c);
		ctx_free(c); /* checks the free_fn counts */
	}
}
END_TEST

START_TEST(destroy_null_free_fn)
{
	struct ctx *c;
	struct relhash_table *t;
	unsigned i;

	c = ctx_new(&variants[V_K8], base_seed, 64, 0, 0);
	for (i = 0; i < NKEYS; i++) {
		struct tobj *o = free_slot(c, i);

		ck_assert_int_eq(relhash_insert(c->t, &o->node), 0);
		o->state = S_IN;
	}
	relhash_destroy(c->t, NULL, NULL);
	/* The objects are ours and untouched. */
	for (i = 0; i < NKEYS * SLOTS; i++)
		ck_assert_uint_eq(c->objs[i].magic, OBJ_MAGIC);
	/* An empty table, and NULL. */
	t = relhash_create(&c->p);
	ck_assert(t);
	relhash_destroy(t, free_fn_count, &base_seed);
	relhash_destroy(NULL, NULL, NULL);
	free(c->objs);
	free(c->strangers);
	free(c);
}
END_TEST

/* ---------------------------------------------------------------------- */
/* Allocation failures (relhash__debug_fail_alloc, tests/debug-hooks.h)    */

START_TEST(allocation_failures)
{
	struct ctx *c;
	unsigned nth, enomem = 0;

	/* relhash_create: NULL and ENOMEM, for each allocation it makes. */
	for (nth = 1; nth < 20; nth++) {
		struct relhash_params p = k8_params();
		struct relhash_table *t;

		relhash__debug_fail_alloc((long)nth);
		errno = 0;
		t = relhash_create(&p);
		relhash__debug_fail_alloc(0);
		if (t) {
			relhash_destroy(t, NULL, NULL);
			break;
		}
		ck_assert_msg(errno == ENOMEM, "create with allocation %u failing: "
		              "errno %d, expected ENOMEM", nth, errno);
	}
	ck_assert_msg(nth > 1 && nth < 20, "relhash_create makes %u allocations?",
	              nth);

	/* relhash_resize: -ENOMEM leaves the table as it was. */
	c = ctx_new(&variants[V_K8], base_seed, 8, 1, 0);
	fill_keys(c, NKEYS);
	for (nth = 1; nth < 40; nth++) {
		size_t target = nth & 1 ? 1024 : 2;
		int r;

		c->step = nth;
		OP(c, "resize %zu -> %zu with allocation %u failing", c->size,
		   target, nth);
		relhash__debug_fail_alloc((long)nth);
		r = relhash_resize(c->t, target);
		relhash__debug_fail_alloc(0);
		CK(c, r == 0 || r == -ENOMEM, "returned %d", r);
		if (r == 0) {
			c->size = target;
			check_table(c);
			OP(c, "resize back to 8");
			CK(c, relhash_resize(c->t, 8) == 0, "failed");
			c->size = 8;
		} else {
			enomem++;
		}
		check_table(c);
	}
	ck_assert_msg(enomem > 0, "no resize ever failed with -ENOMEM");
	ctx_free(c);
}
END_TEST

/* ---------------------------------------------------------------------- */

static Suite *table_suite(void)
{
	Suite *s = suite_create("table");
	TCase *tc;

	tc = tcase_create("model");
	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, random_ops, 0, NVARIANTS);
	tcase_add_loop_test(tc, weak_hash_resizes, 0, NVARIANTS - V_WEAK_FIRST);
	suite_add_tcase(s, tc);

	tc = tcase_create("api");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, create_refuses_bad_params);
	tcase_add_test(tc, create_accepts_unaligned_key);
	tcase_add_test(tc, create_accepts_custom_keys);
	tcase_add_test(tc, create_clamps_initial_size);
	tcase_add_test(tc, create_max_below_default_min);
	tcase_add_test(tc, large_bucket_arrays_advised_huge);
	tcase_add_test(tc, null_arguments);
	tcase_add_test(tc, stats_size_rule);
	tcase_add_test(tc, replace_semantics);
	tcase_add_test(tc, replace_stale_old_with_current_new);
	tcase_add_test(tc, replace_never_inserted_old);
	tcase_add_test(tc, cmpfn_defines_equality);
	tcase_add_test(tc, callbacks_are_used);
	tcase_add_test(tc, seeds);
	tcase_add_test(tc, default_hash_uses_seed);
	tcase_add_test(tc, default_hash_known_values);
	tcase_add_test(tc, one_bucket);
	tcase_add_test(tc, destroy_free_fn);
	tcase_add_test(tc, destroy_null_free_fn);
	tcase_add_test(tc, allocation_failures);
	suite_add_tcase(s, tc);

	tc = tcase_create("auto-resize");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, auto_resize_grows_and_shrinks);
	tcase_add_test(tc, auto_resize_shrinks_after_few_removals);
	tcase_add_test(tc, auto_resize_shrinks_interleaved_tables);
	tcase_add_test(tc, destroy_during_auto_resize);
	tcase_add_test(tc, resizes_do_not_wait_for_callbacks);
	suite_add_tcase(s, tc);

	tc = tcase_create("resize");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, expansion_after_shrink_needs_few_passes);
	tcase_add_test(tc, expansion_after_inserts_needs_few_passes);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr;

	base_seed = tst_env_unsigned("RELHASH_TEST_SEED", 0);
	if (!base_seed)
		base_seed = (tst_now_ns() ^ ((uint64_t)getpid() << 32)) % 1000000007u;
	printf("test-table: base seed %llu (RELHASH_TEST_SEED=%llu reproduces)\n",
	       (unsigned long long)base_seed, (unsigned long long)base_seed);
	fflush(stdout);
	sr = srunner_create(table_suite());
	return tst_run(sr);
}
