/*
 * tests/fuzz/fuzz-ops.c - differential fuzzing of relhash against a plain
 * model.
 *
 * The input is decoded into a sequence of operations on one table at a time
 * (created with fuzzed parameters, some invalid), run against the library and
 * against a model: an array of FZ_NKEYS slots, the object each key maps to.
 * Any divergence (a return value, an errno, a lookup result, the set an
 * iteration returns, the count, the size of a table that does not resize by
 * itself) aborts.  Objects leave the table through relhash_defer_free() or
 * relhash_call(); the end of every input destroys the table with a free_fn
 * and waits with relhash_barrier(), so LeakSanitizer sees every object freed.
 *
 * Fault injection: librelhash exports relhash__debug_fail_alloc(n) (the
 * nth allocation from now fails; disarming tells whether it fired).  The
 * input sometimes arms it before a create, a resize or a
 * relhash_defer_free(): a call whose allocation failed must fail cleanly
 * (-ENOMEM, or NULL with errno ENOMEM, or the documented fallback), one
 * whose allocations all succeeded must succeed, and the table must still
 * equal the model and keep working.
 *
 * insert_or_get and the bulk and hashed lookups are checked against the
 * model too (-EEXIST must hand back the model's object).
 *
 * Input format (all little-endian; an exhausted input reads as zeros and
 * ends the run):
 *   create parameters (6 bytes, as for op_create() below), then
 *   repeated: op byte (op % NOPS: the table ops[] below) and its operands.
 * FUZZ_TRACE=1 prints the decoded operations.
 */
/* The model's sizes (what relhash_size() may return) and this input's
 * budgets, next to fuzz-common.h's fields of M. */
#define FZ_MODEL_FIELDS                                                     \
	bool autoresize;                                                    \
	size_t min, max, size;                                              \
	unsigned resizes, creates;

#include "fuzz-common.h"

#define MAX_OPS 2000
#define MAX_RESIZES 48
#define MAX_CREATES 12
#define SIZE_CAP ((size_t)1 << 16) /* never allocate more buckets */
#define LIMIT_MAX ((size_t)1 << 31)  /* "no max (2^31 in practice)" */
#define MAX_DEPTH 3

static bool is_pow2(size_t n)
{
	return n && !(n & (n - 1));
}

/* ---------------------------------------------------------------------- */
/* Grace periods                                                           */

struct marker {
	struct relhash_head head;
	int ran;
};

static void marker_cb(struct relhash_head *h)
{
	__atomic_store_n(&((struct marker *)(void *)h)->ran, 1, __ATOMIC_RELEASE);
}

/* ---------------------------------------------------------------------- */
/* Checks                                                                  */

static void do_read_lock(void)
{
	relhash_read_lock();
	M.depth++;
	FZ_CHECK(relhash_read_ongoing());
}

static void do_read_unlock(void)
{
	FZ_CHECK(M.depth > 0 && relhash_read_ongoing());
	fz_read_unlock();
	FZ_CHECK(relhash_read_ongoing() == (M.depth != 0));
}

static void unlock_all(void)
{
	while (M.depth)
		do_read_unlock();
}

/* The size: exact, unless the table resizes by itself. */
static void check_size(void)
{
	if (!M.autoresize) {
		size_t s = relhash_size(M.t);
		if (s != M.size)
			fz_fail(__LINE__, "relhash_size = %zu, model %zu", s, M.size);
	} else {
		size_t s = relhash_size(M.t);
		if (!is_pow2(s) || s < M.min || s > M.max)
			fz_fail(__LINE__, "relhash_size = %zu outside [%zu, %zu]", s,
			        M.min, M.max);
	}
}

static void check_count(void)
{
	fz_check_count();
	check_size();
}

/* Everything: every key, the iteration, the count, the size. */
static void verify_all(void)
{
	fz_verify_all();
	check_size();
}

/* ---------------------------------------------------------------------- */
/* Create and destroy                                                      */

static const size_t size_choices[] = {
	0, 1, 2, 3, 4, 6, 8, 16, 32, 64, 128, 256, 512, 1024, 4096, 65536,
	(size_t)1 << 17, (size_t)1 << 20, (size_t)1 << 30, (size_t)1 << 31,
	(size_t)1 << 32, SIZE_MAX, (size_t)1 << 63, 24, 2, 4, 8, 16, 32, 64,
	128, 256,
};
#define NSIZE_CHOICES (sizeof(size_choices) / sizeof(size_choices[0]))

static size_t pick_size(uint8_t b)
{
	return size_choices[b % NSIZE_CHOICES];
}

/* For create: mostly the default (0). */
static size_t pick_param_size(uint8_t b)
{
	return b < 128 ? 0 : pick_size(b);
}

/*
 * What relhash/table.h says relhash_create() does with p: -EINVAL, or 0 and the
 * effective sizes.  From include/relhash/table.h: "Sizes must be powers of
 * two, min_size <= max_size; initial_size is clamped to [min_size,
 * max_size].  Defaults: initial 64 buckets, min 4, no max (2^31 in
 * practice)."  A default minimum is lowered to an explicit smaller maximum
 * (what check_params() in src/table/table.c means to do; see FZ_KNOWN below).
 */
static int model_params(const struct relhash_params *p, size_t *min,
                        size_t *max, size_t *initial, bool *min_follows_max)
{
	*min_follows_max = false;
	if (!p)
		return -EINVAL;
	if (p->key_len == 0 && (!p->hashfn || !p->obj_hashfn || !p->cmpfn))
		return -EINVAL;
	if (p->flags & ~RELHASH_AUTO_RESIZE)
		return -EINVAL;
	*min = p->min_size ? p->min_size : 4;
	*max = p->max_size ? p->max_size : LIMIT_MAX;
	*initial = p->initial_size ? p->initial_size : 64;
	if (!is_pow2(*min) || !is_pow2(*max) || !is_pow2(*initial) ||
	    *max > LIMIT_MAX)
		return -EINVAL;
	if (!p->min_size && *min > *max) {
		*min = *max;
		*min_follows_max = true;
	}
	if (*min > *max)
		return -EINVAL;
	if (*initial < *min)
		*initial = *min;
	if (*initial > *max)
		*initial = *max;
	return 0;
}

static uint8_t destroy_seen[FZ_NKEYS];
static size_t destroy_n;

static void destroy_free(void *obj, void *arg)
{
	struct fz_obj *o = obj;

	FZ_CHECK(arg == (void *)&destroy_n);
	if (o->id >= FZ_NKEYS || M.present[o->id] != o)
		fz_fail(__LINE__, "relhash_destroy passed %p (key %u), not in the "
		        "model", obj, o->id);
	if (destroy_seen[o->id]++)
		fz_fail(__LINE__, "relhash_destroy passed key %u twice", o->id);
	destroy_n++;
	fz_obj_poison_free(o);
}

static void teardown(void)
{
	unlock_all();
	if (!M.t)
		return;
	verify_all();
	memset(destroy_seen, 0, sizeof(destroy_seen));
	destroy_n = 0;
	fz_log("destroy (free_fn on %zu objects)", M.count);
	relhash_destroy(M.t, destroy_free, &destroy_n);
	if (destroy_n != M.count)
		fz_fail(__LINE__, "relhash_destroy freed %zu objects, model %zu",
		        destroy_n, M.count);
	M.t = NULL;
	memset(M.present, 0, sizeof(M.present));
	M.count = 0;
}

static void adopt(struct relhash_table *t, unsigned set, size_t min,
                  size_t max, size_t initial, bool autoresize)
{
	M.t = t;
	M.set = set;
	M.min = min;
	M.max = max;
	M.size = initial;
	M.autoresize = autoresize;
	/* Fresh and empty: its size is exact even with AUTO_RESIZE. */
	if (relhash_size(t) != initial)
		fz_fail(__LINE__, "new table has %zu buckets, expected %zu",
		        relhash_size(t), initial);
	check_count();
}

/* A table that must be creatable: the set with a fixed seed, defaults. */
static void create_fallback(unsigned set)
{
	struct relhash_params p = *fz_set(set);
	struct relhash_table *t;

	p.seed = 0x5eed;
	fz_log("create fallback: set %u (%s), seed 0x5eed, default sizes", set,
	       fz_set_name(set));
	t = relhash_create(&p);
	if (!t)
		fz_fail(__LINE__, "relhash_create(valid params) failed: errno %d",
		        errno);
	adopt(t, set, 4, LIMIT_MAX, 64, false);
}

/* What model_params() says of a create's parameters. */
struct create_model {
	int want;                  /* 0 or -EINVAL */
	size_t min, max, initial;  /* the effective sizes */
	bool min_follows_max;
};

/*
 * Apply a create's flags byte fl (see op_create()) to p; returns what it
 * dropped, for the log.  *null_params: pass NULL instead of p.
 */
static const char *create_flags(struct relhash_params *p, uint8_t setb,
                                uint8_t fl, bool *null_params)
{
	const char *dropped = "";

	p->seed = (fl & 1) ? 0x5eed0000u + setb : 0;
	p->flags = (fl & 2) ? RELHASH_AUTO_RESIZE : 0;
	if ((fl & 0x0c) == 0x0c)
		p->flags |= 0x80;
	if (p->key_len == 0) {
		switch ((fl >> 4) & 3) {
		case 1: p->hashfn = NULL; dropped = " hashfn=NULL"; break;
		case 2: p->obj_hashfn = NULL; dropped = " obj_hashfn=NULL"; break;
		case 3: p->cmpfn = NULL; dropped = " cmpfn=NULL"; break;
		}
	} else if ((fl & 0x60) == 0x60) {
		p->key_len = 0; /* custom keys without obj_hashfn */
		dropped = " key_len=0";
	}
	*null_params = (fl & 0xe0) == 0xe0;
	return dropped;
}

/*
 * relhash_create(pp) with the fail_n-th allocation failing (0: none): it
 * must do what the model e says, or fail with ENOMEM where an allocation
 * failed.  The new table (or, where there is none, a fallback) becomes the
 * table of the run.
 */
static void create_checked(const struct relhash_params *pp, unsigned set,
                           long fail_n, const struct create_model *e)
{
	struct relhash_table *t;
	bool fired;
	int err;

	if (fail_n)
		relhash__debug_fail_alloc(fail_n);
	errno = 0;
	t = relhash_create(pp);
	err = errno;
	/* No other thread allocates now (no table of ours auto-resizes). */
	fired = fail_n && relhash__debug_fail_alloc(0) == 0;

	if (e->want) {
		if (t || err != EINVAL)
			fz_fail(__LINE__, "relhash_create(invalid params) = %p, "
			        "errno %d; expected NULL, EINVAL", (void *)t, err);
		create_fallback(set);
		return;
	}
	if (!t) {
		if (fired && err == ENOMEM) {
			fz_log("  -> NULL, ENOMEM (injected failure)");
			create_fallback(set);
			return;
		}
		fz_fail(__LINE__, "relhash_create(valid params%s) = NULL, errno "
		        "%d%s", e->min_follows_max ? ", default min_size above "
		        "max_size" : "", err, fired ? " (an allocation failed)" :
		        " (no allocation failed)");
	}
	if (fired)
		fz_fail(__LINE__, "relhash_create succeeded although one of its "
		        "allocations failed (fail_alloc(%ld))", fail_n);
	fz_log("  -> ok, %zu buckets%s", relhash_size(t),
	       fail_n ? " (armed failure not reached)" : "");
	adopt(t, set, e->min, e->max, e->initial,
	      pp->flags & RELHASH_AUTO_RESIZE);
}

/*
 * Create operands: set, flags, initial, min, max, fault.
 * flags: bit0 fixed seed; bit1 AUTO_RESIZE; bits 2+3 both: an unknown flag;
 * bits 4-5 (custom-key set): drop hashfn / obj_hashfn / cmpfn; bit6 with
 * bit5: key_len 0 on a fixed-length set; bit7 with bit6 and bit5: NULL.
 * fault >= 0xc0: the (1 + fault % 8)th allocation fails.
 */
static void op_create(struct fz_in *in)
{
	uint8_t setb = fz_u8(in), fl = fz_u8(in);
	size_t initial = pick_param_size(fz_u8(in));
	size_t min = pick_param_size(fz_u8(in));
	size_t max = pick_param_size(fz_u8(in));
	uint8_t fault = fz_u8(in);
	unsigned set = setb % FZ_NSETS;
	struct relhash_params p = *fz_set(set);
	struct create_model e = { 0 };
	long fail_n = fault >= 0xc0 ? 1 + (fault & 7) : 0;
	const char *dropped;
	bool null_params;

	teardown();
	M.creates++;
	dropped = create_flags(&p, setb, fl, &null_params);
	p.initial_size = initial;
	p.min_size = min;
	p.max_size = max;
	e.want = model_params(null_params ? NULL : &p, &e.min, &e.max,
	                      &e.initial, &e.min_follows_max);
	fz_log("create: set %u (%s)%s seed %#llx flags %#x%s initial %zu min %zu "
	       "max %zu%s -> model: %s (min %zu max %zu initial %zu)%s",
	       set, fz_set_name(set), null_params ? " params=NULL" : "",
	       (unsigned long long)p.seed, p.flags,
	       (p.flags & RELHASH_AUTO_RESIZE) ? " (AUTO_RESIZE)" : "", initial,
	       min, max, dropped, e.want ? "EINVAL" : "ok", e.min, e.max,
	       e.initial, fail_n ? " [fail allocation]" : "");
	if (fail_n)
		fz_log("  arm fail_alloc(%ld)", fail_n);
	if (!e.want && e.initial > SIZE_CAP) {
		fz_log("  (skipped: %zu buckets is over the fuzzer's cap)",
		       e.initial);
		create_fallback(set);
		return;
	}
	create_checked(null_params ? NULL : &p, set, fail_n, &e);
}

/* ---------------------------------------------------------------------- */
/* Updates                                                                 */

static void do_remove(uint32_t k, unsigned how)
{
	struct fz_obj *o = M.present[k];
	int r;

	if (!o) {
		/* A node that was never in the table. */
		struct fz_obj *x = fz_obj_new(M.set, k);

		r = relhash_remove(M.t, &x->node);
		FZ_EXPECT_RET(r, -ENOENT, "relhash_remove(never inserted)");
		fz_obj_poison_free(x);
		return;
	}
	fz_remove(k, how & 2);
	if (how & 4) {
		/* Replacing a removed node: -ENOENT, nothing published. */
		struct fz_obj *x = fz_obj_new(M.set, k);

		r = relhash_replace(M.t, &o->node, &x->node);
		FZ_EXPECT_RET(r, -ENOENT, "relhash_replace(removed old node)");
		fz_obj_poison_free(x);
	}
	fz_retire(o, how >> 3);
}

/* Remove another object with a key that is in the table. */
static void do_remove_other(uint32_t k)
{
	struct fz_obj *x = fz_obj_new(M.set, k);
	int r;

	if (!M.present[k]) {
		fz_obj_poison_free(x);
		return;
	}
	/* Same key, never inserted: identity decides, not the key. */
	r = relhash_remove(M.t, &x->node);
	FZ_EXPECT_RET(r, -ENOENT, "relhash_remove(other object, same key)");
	fz_obj_poison_free(x);
}

static void do_replace(uint32_t k, unsigned how)
{
	int r;

	if (!M.present[k]) {
		/* old_node was never in the table: -ENOENT (relhash/table.h). */
		struct fz_obj *n = fz_obj_new(M.set, k);
		struct fz_obj *x = fz_obj_new(M.set, k);

		r = relhash_replace(M.t, &x->node, &n->node);
		FZ_EXPECT_RET(r, -ENOENT, "relhash_replace(old never inserted, "
		              "same key)");
		fz_obj_poison_free(x);
		fz_obj_poison_free(n);
		return;
	}
	fz_replace(k, how);
}

/* Refused calls: nothing may change. */
static void do_bad_calls(uint32_t k, uint32_t k2)
{
	struct fz_obj *o = M.present[k];
	struct fz_obj *x;
	int r;

	x = fz_obj_new(M.set, k);
	FZ_EXPECT_RET(relhash_insert(M.t, NULL), -EINVAL, "relhash_insert(NULL)");
	FZ_EXPECT_RET(relhash_insert(NULL, &x->node), -EINVAL,
	              "relhash_insert(NULL table)");
	FZ_EXPECT_RET(relhash_remove(NULL, &x->node), -EINVAL,
	              "relhash_remove(NULL table)");
	fz_obj_poison_free(x);
	FZ_EXPECT_RET(relhash_remove(M.t, NULL), -EINVAL, "relhash_remove(NULL)");
	FZ_EXPECT_RET(relhash_resize(NULL, 64), -EINVAL, "relhash_resize(NULL)");
	if (!o)
		return;
	FZ_EXPECT_RET(relhash_replace(M.t, &o->node, &o->node), -EINVAL,
	              "relhash_replace(old, old)");
	FZ_EXPECT_RET(relhash_replace(M.t, &o->node, NULL), -EINVAL,
	              "relhash_replace(old, NULL)");
	FZ_EXPECT_RET(relhash_replace(M.t, NULL, &o->node), -EINVAL,
	              "relhash_replace(NULL, new)");
	if (k2 != k) {
		x = fz_obj_new(M.set, k2);
		r = relhash_replace(M.t, &o->node, &x->node);
		FZ_EXPECT_RET(r, -EINVAL, "relhash_replace(keys differ)");
		fz_obj_poison_free(x);
		if (M.present[k2]) {
			/* Both in the table, keys differ. */
			r = relhash_replace(M.t, &o->node, &M.present[k2]->node);
			FZ_EXPECT_RET(r, -EINVAL, "relhash_replace(two objects in "
			              "the table, keys differ)");
		}
	}
	/* old not in the table, new_node in it: refused before anything
	 * is written (new_node stays where it is). */
	x = fz_obj_new(M.set, k);
	r = relhash_replace(M.t, &x->node, &o->node);
	FZ_EXPECT_RET(r, -ENOENT, "relhash_replace(old not in the table, new "
	              "in it)");
	fz_obj_poison_free(x);
	fz_check_lookup(k, false);
	fz_check_lookup(k2, true);
}

/* Remove with relhash_defer_free()'s allocation failing: it must fall back
 * to waiting for a grace period (outside a read-side section). */
static void do_remove_defer_oom(uint32_t k)
{
	struct fz_obj *o = M.present[k];

	if (!o)
		return;
	FZ_EXPECT_RET(relhash_remove(M.t, &o->node), 0, "relhash_remove");
	M.present[k] = NULL;
	M.count--;
	o->magic = FZ_RETIRED;
	if (M.depth) {
		relhash_defer_free(o);
		return;
	}
	/* The barrier closes this thread's open block, so that the next
	 * call must allocate. */
	FZ_EXPECT_RET(relhash_barrier(), 0, "relhash_barrier");
	relhash__debug_fail_alloc(1);
	relhash_defer_free(o); /* falls back to a barrier and free() */
	if (relhash__debug_fail_alloc(0) != 0)
		fz_fail(__LINE__, "relhash_defer_free did not allocate");
}

/* ---------------------------------------------------------------------- */
/* Resize, grace periods                                                   */

/* May a rehash allocate on the resize thread meanwhile?  Only once an
 * insertion walked more than 16 distinct keys in one chain (doc/DESIGN.md
 * section 12, "Healing"), which the statistics record. */
static bool rehash_may_allocate(void)
{
	struct relhash_table_stats st = { .size = sizeof(st) };

	return relhash_table_stats(M.t, &st) != 0 || st.longest_chain > 16;
}

static void do_resize(size_t n, uint8_t fault)
{
	long fail_n = fault >= 0xa0 ? 1 + (fault & 3) : 0;
	bool valid = is_pow2(n) && n >= M.min && n <= M.max;
	bool fired;
	int r;

	if (!valid) {
		r = relhash_resize(M.t, n);
		fz_log("  -> %d (model: EINVAL)", r);
		if (r == -EDEADLK && M.depth)
			return; /* the API does not order the two */
		FZ_EXPECT_RET(r, -EINVAL, "relhash_resize(invalid size)");
		return;
	}
	if (M.depth) {
		r = relhash_resize(M.t, n);
		fz_log("  -> %d (model: EDEADLK)", r);
		FZ_EXPECT_RET(r, -EDEADLK, "relhash_resize inside a read-side "
		              "section");
		return;
	}
	if (n > SIZE_CAP) {
		fz_log("  (skipped: over the fuzzer's cap)");
		return;
	}
	if (M.resizes++ >= MAX_RESIZES) {
		fz_log("  (skipped: resize budget spent)");
		return;
	}
	if (fail_n) {
		fz_log("  arm fail_alloc(%ld)", fail_n);
		relhash__debug_fail_alloc(fail_n);
	}
	r = relhash_resize(M.t, n);
	fired = fail_n && relhash__debug_fail_alloc(0) == 0;
	fz_log("  -> %d%s", r, fired ? " (an allocation failed)" : "");
	/*
	 * The injected failure surfaces as -ENOMEM, unless the resize
	 * thread (an automatic resize, or a rehash) took it; nothing else
	 * fails.
	 */
	if (r == -ENOMEM && fired) {
		/* Refused: nothing changed, and the table works. */
		verify_all();
		return;
	}
	FZ_EXPECT_RET(r, 0, fired ? "relhash_resize (an allocation failed)" :
	              "relhash_resize");
	if (fired && !M.autoresize && !rehash_may_allocate())
		fz_fail(__LINE__, "relhash_resize(%zu) from %zu succeeded although "
		        "one of its allocations failed (fail_alloc(%ld))", n,
		        M.size, fail_n);
	M.size = n;
	if (!M.autoresize && relhash_size(M.t) != n)
		fz_fail(__LINE__, "relhash_size = %zu after relhash_resize(%zu)",
		        relhash_size(M.t), n);
	if (fail_n)
		verify_all();
}

static void do_call_barrier(void)
{
	struct marker *mk;

	if (M.depth) {
		FZ_EXPECT_RET(relhash_barrier(), -EDEADLK,
		              "relhash_barrier inside a read-side section");
		return;
	}
	mk = calloc(1, sizeof(*mk));
	if (!mk)
		abort();
	relhash_call(&mk->head, marker_cb);
	fz_check_barrier();
	if (!__atomic_load_n(&mk->ran, __ATOMIC_ACQUIRE))
		fz_fail(__LINE__, "relhash_barrier returned before a callback "
		        "queued earlier ran");
	free(mk);
}

/* ---------------------------------------------------------------------- */
/* The operation loop                                                      */

/*
 * One function per operation: it reads the operation's argument bytes (in
 * this order: the corpus depends on it), logs what it does and does it.
 */
static void op_insert(struct fz_in *in)
{
	uint32_t k = fz_u8(in);

	fz_log("insert key %u%s", k, M.present[k] ? " (present: EEXIST)" : "");
	fz_insert(k);
}

static void op_remove(struct fz_in *in)
{
	uint32_t k = fz_u8(in);
	uint8_t b = fz_u8(in);

	fz_log("remove key %u%s%s%s, retire by %s", k,
	       M.present[k] ? "" : " (absent: a never-inserted node, ENOENT)",
	       (b & 2) ? ", remove again" : "",
	       (b & 4) ? ", replace the removed node" : "",
	       (b & 8) ? "relhash_call" : "relhash_defer_free");
	do_remove(k, b);
}

static void op_remove_other(struct fz_in *in)
{
	uint32_t k = fz_u8(in);

	fz_log("remove another object with key %u", k);
	do_remove_other(k);
}

static void op_replace(struct fz_in *in)
{
	uint32_t k = fz_u8(in);
	uint8_t b = fz_u8(in);

	fz_log("replace key %u%s%s, retire by %s", k,
	       M.present[k] ? "" : " (absent: old never inserted)",
	       (b & 2) ? ", then remove the old node" : "",
	       (b & 4) ? "relhash_call" : "relhash_defer_free");
	do_replace(k, b);
}

static void op_bad(struct fz_in *in)
{
	uint32_t k = fz_u8(in), k2 = fz_u8(in);

	fz_log("refused calls on key %u (other key %u)", k, k2);
	do_bad_calls(k, k2);
}

static void op_iterate(struct fz_in *in)
{
	fz_log("iterate (model: %zu objects)", M.count);
	fz_check_iter();
}

static void op_count_size(struct fz_in *in)
{
	fz_log("count/size (model: %zu, %zu buckets%s)", M.count, M.size,
	       M.autoresize ? ", not checked: AUTO_RESIZE" : "");
	check_count();
}

static void op_resize(struct fz_in *in)
{
	size_t sz = pick_size(fz_u8(in));
	uint8_t b = fz_u8(in);

	fz_log("resize to %zu%s%s", sz, M.depth ? " (inside read lock)" : "",
	       b >= 0xa0 ? " [fail allocation]" : "");
	do_resize(sz, b);
}

static void op_synchronize(struct fz_in *in)
{
	fz_log("synchronize%s", M.depth ? " (inside read lock: EDEADLK)" : "");
	FZ_EXPECT_RET(relhash_synchronize(), M.depth ? -EDEADLK : 0,
	              "relhash_synchronize");
}

static void op_barrier(struct fz_in *in)
{
	fz_log("call + barrier%s", M.depth ? " (inside read lock: EDEADLK)" : "");
	do_call_barrier();
}

static void op_read_lock(struct fz_in *in)
{
	if (M.depth < MAX_DEPTH) {
		fz_log("read_lock (depth %u)", M.depth + 1);
		do_read_lock();
	}
}

static void op_read_unlock(struct fz_in *in)
{
	if (M.depth) {
		fz_log("read_unlock (depth %u)", M.depth - 1);
		do_read_unlock();
	}
}

/* A new table, or (past MAX_CREATES) the create's 6 bytes skipped. */
static void op_create_limited(struct fz_in *in)
{
	unsigned i;

	if (M.creates < MAX_CREATES) {
		op_create(in);
		return;
	}
	for (i = 0; i < 6; i++)
		fz_u8(in);
}

static void op_fill(struct fz_in *in)
{
	uint32_t k = fz_u8(in), n = fz_u8(in) % 64 + 1, i;

	fz_log("fill keys %u..%u", k, (k + n - 1) % FZ_NKEYS);
	for (i = 0; i < n; i++)
		fz_insert((k + i) % FZ_NKEYS);
}

static void op_drain(struct fz_in *in)
{
	uint32_t k = fz_u8(in), n = fz_u8(in) % 64 + 1, i;
	uint8_t b = fz_u8(in);

	fz_log("drain keys %u..%u, retire by %s", k, (k + n - 1) % FZ_NKEYS,
	       (b & 1) ? "relhash_call" : "relhash_defer_free");
	for (i = 0; i < n; i++)
		if (M.present[(k + i) % FZ_NKEYS])
			do_remove((k + i) % FZ_NKEYS, (b & 1) << 3);
}

static void op_defer_oom(struct fz_in *in)
{
	uint32_t k = fz_u8(in);

	fz_log("remove key %u, relhash_defer_free with its allocation "
	       "failing%s", k, M.present[k] ? "" : " (absent: nothing)");
	do_remove_defer_oom(k);
}

static void op_verify(struct fz_in *in)
{
	fz_log("verify all");
	verify_all();
}

static void op_insert_or_get(struct fz_in *in)
{
	uint32_t k = fz_u8(in);
	uint8_t b = fz_u8(in);

	fz_log("insert_or_get key %u%s%s", k,
	       M.present[k] ? " (present: EEXIST, the model's object)" : "",
	       (b & 1) ? "" : ", existing NULL");
	fz_insert_or_get(k, b & 1);
}

static void op_lookup_bulk(struct fz_in *in)
{
	uint32_t k = fz_u8(in), n = fz_u8(in) % (FZ_BULK_MAX + 1);
	uint8_t b = fz_u8(in);

	fz_log("lookup_bulk%s of %u keys from %u, stride %u",
	       (b & 1) ? "_fast" : "", n, k, (b >> 1) % 8 + 1);
	fz_check_bulk(k, n, (b >> 1) % 8 + 1, b & 1);
}

/*
 * The operations by number: an input byte selects ops[byte % NOPS].  The
 * numbers are the corpus's encoding (tests/fuzz/make-seeds.sh writes them
 * in hex): add operations at the end, never reorder.  0x00 and 0x01 both
 * insert, so inserts come twice as often as any other operation.
 */
static void (*const ops[])(struct fz_in *in) = {
	/* 0x00 */ op_insert, op_insert, op_remove, op_remove_other,
	/* 0x04 */ op_replace, op_bad, fz_op_lookup, fz_op_lookup_fast,
	/* 0x08 */ op_iterate, op_count_size, op_resize, op_synchronize,
	/* 0x0c */ op_barrier, op_read_lock, op_read_unlock, op_create_limited,
	/* 0x10 */ op_fill, op_drain, op_defer_oom, op_verify,
	/* 0x14 */ op_insert_or_get, op_lookup_bulk,
};
#define NOPS (sizeof(ops) / sizeof(ops[0]))

static void run_op(struct fz_in *in, uint8_t opb)
{
	ops[opb % NOPS](in);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_in in = { data, size, 0 };
	unsigned ops = 0;

	fz_harness = "fuzz-ops";
	memset(&M, 0, sizeof(M));
	fz_opno = 0;
	if (size < 1)
		return 0;
	op_create(&in);
	while (fz_more(&in) && ops++ < MAX_OPS) {
		fz_opno = ops;
		run_op(&in, fz_u8(&in));
	}
	fz_opno = ops + 1;
	fz_log("end of input");
	teardown();
	fz_check_barrier();
	return 0;
}
