/*
 * bench-relhash.c - relhash as relhash-bench drives it, written the way the
 * README tells users to: a static const struct relhash_params, lookups with
 * relhash_lookup_fast() between the inline relhash_read_lock() and
 * relhash_read_unlock(), removed objects freed after a grace period by the
 * removing thread itself (relhash_defer_local(), which its documentation
 * recommends for high removal rates), so that objects carry no
 * relhash_head: 32 bytes, the size of the chained table's.
 *
 * Three backends share the table code and differ in their lookup: "relhash"
 * (the inline fast path), "relhash-call" (the exported functions, named
 * in parentheses so that the inline macros do not apply) and
 * "relhash-bulk" (relhash_lookup_bulk_fast() in groups of --bulk keys).
 * A fourth, "relhash-defer", is "relhash" with removed objects freed by
 * the callback thread (relhash_defer()), for measuring the difference.
 * Also the grace-period flavor for --epoch.
 *
 * --hash: the table's hashfn is relhash_siphash() (siphash) or
 * bench_hash_replaced() (replaced), and every relhash_lookup_fast() gets
 * that hash's entry of rh_params[]; each lookup loop is compiled once per
 * hash, so the default's loop is the same as without --hash.
 */
#include "bench.h"

#include <errno.h>
#include <stdlib.h>

struct rh_obj {
	struct relhash_node node;
	uint64_t key;
	uint64_t value;
};

/* What relhash_create() and every relhash_lookup_fast() get, per --hash.
 * Indexed by constants in the lookup loops, so that each entry's hashfn
 * inlines (or is called) as a user's static const params would. */
#define RH_PARAMS(fn)                                     \
	{                                                 \
		.node_offset = offsetof(struct rh_obj, node), \
		.key_offset = offsetof(struct rh_obj, key),   \
		.key_len = sizeof(uint64_t),                  \
		.hashfn = (fn),                               \
		.seed = BENCH_SEED,                           \
		.min_size = BENCH_WIDE_MIN,                   \
	}
static const struct relhash_params rh_params[BENCH_NHASH] = {
	[BENCH_HASH_DEFAULT] = RH_PARAMS(NULL),
	[BENCH_HASH_SIPHASH] = RH_PARAMS(relhash_siphash),
	[BENCH_HASH_REPLACED] = RH_PARAMS(bench_hash_replaced),
};

/*
 * Run stmt with RH_HASH the --hash in use, a constant in each copy, so
 * that rh_params[RH_HASH]'s hashfn inlines (or is called) in each as a
 * user's static const params would: one switch per call, not per lookup.
 */
#define RH_WITH_HASH(stmt)                                            \
	do {                                                          \
		switch (bench_hash_kind) {                            \
		case BENCH_HASH_SIPHASH: {                            \
			enum { RH_HASH = BENCH_HASH_SIPHASH };        \
			stmt;                                         \
			break;                                        \
		}                                                     \
		case BENCH_HASH_REPLACED: {                           \
			enum { RH_HASH = BENCH_HASH_REPLACED };       \
			stmt;                                         \
			break;                                        \
		}                                                     \
		default: {                                            \
			enum { RH_HASH = BENCH_HASH_DEFAULT };        \
			stmt;                                         \
		}                                                     \
		}                                                     \
	} while (0)

/* The inline lookup with the parameters of the table's hash. */
static inline void *rh_find(void *table, uint64_t key)
{
	RH_WITH_HASH(return relhash_lookup_fast(table, &key,
	                                            rh_params[RH_HASH]));
	return NULL;
}

static void *rh_create(const struct bench_config *cfg)
{
	/* Only the size and the flags differ from rh_params; the fields the
	 * inline lookup reads (offsets, key length, hash, compare) are the
	 * same. */
	struct relhash_params p = rh_params[bench_hash_kind];

	p.initial_size = cfg->nbuckets;
	if (bench_auto_resize(cfg->resize))
		p.flags |= RELHASH_AUTO_RESIZE;
	return relhash_create(&p);
}

static void rh_free_obj(void *obj, void *arg)
{
	(void)arg;
	free(obj);
}

static void rh_destroy(void *table)
{
	/* Every relhash_defer() of the run has run, and those of the local
	 * calls that exited workers handed over; this thread's own too. */
	relhash_reclaim_local(true);
	relhash_barrier();
	relhash_destroy(table, rh_free_obj, NULL);
}

static void *rh_alloc_object(uint64_t key)
{
	return BENCH_NEW_OBJECT(struct rh_obj, key);
}

static int rh_insert_object(void *table, void *obj)
{
	return relhash_insert(table, &((struct rh_obj *)obj)->node);
}

static int rh_insert(void *table, uint64_t key)
{
	return bench_insert_new(table, key, rh_alloc_object, rh_insert_object,
	                        bench_free_object);
}

/* After a grace period: poison the value (a reader that still sees the
 * object reports it as corrupt), then free. */
static void rh_poison_free(void *ptr)
{
	struct rh_obj *obj = ptr;

	__atomic_store_n(&obj->value, BENCH_POISON, __ATOMIC_RELAXED);
	free(obj);
}

/* Remove the object of key; defer(rh_poison_free, obj) frees it. */
static BENCH_ALWAYS_INLINE int
rh_remove_with(void *table, uint64_t key,
               void (*defer)(void (*func)(void *ptr), void *ptr))
{
	struct rh_obj *obj;
	int err = -ENOENT;

	relhash_read_lock();
	obj = rh_find(table, key);
	if (obj)
		err = relhash_remove(table, &obj->node);
	relhash_read_unlock();
	if (!err)
		defer(rh_poison_free, obj);
	return err;
}

static int rh_remove(void *table, uint64_t key)
{
	return rh_remove_with(table, key, relhash_defer_local);
}

static int rh_remove_defer(void *table, uint64_t key)
{
	return rh_remove_with(table, key, relhash_defer);
}

static void rh_barrier(void)
{
	relhash_barrier();
}

static int rh_resize(void *table, size_t nbuckets)
{
	return relhash_resize(table, nbuckets);
}

static uint64_t rh_count(void *table)
{
	return relhash_count(table);
}

static void rh_for_each(void *table, void (*fn)(uint64_t key, void *arg),
                        void *arg)
{
	struct relhash_iter it;
	struct rh_obj *obj;

	relhash_read_lock();
	for (obj = relhash_iter_first(table, &it); obj;
	     obj = relhash_iter_next(&it))
		fn(obj->key, arg);
	relhash_read_unlock();
}

static void rh_table_stats(void *table, struct bench_table_stats *st)
{
	struct relhash_table_stats s = { .size = sizeof(s) };

	relhash_table_stats(table, &s);
	st->resizes = s.resizes;
	st->grace_periods = s.grace_periods;
}

static size_t rh_nbuckets(void *table)
{
	return relhash_size(table);
}

static void rh_engine_stats(struct bench_engine_stats *st)
{
	struct relhash_epoch_stats s = { .size = sizeof(s) };

	relhash_epoch_stats(&s);
	st->grace_periods = s.grace_periods;
	st->callbacks = s.callbacks_run;
}

/* The table's operations, with removed objects freed by remove_fn's
 * way (relhash-defer has its own table, as its frees differ). */
#define RH_OPS(remove_fn)                                \
	{                                                \
		.object_size = sizeof(struct rh_obj),    \
		.create = rh_create,                     \
		.destroy = rh_destroy,                   \
		.insert = rh_insert,                     \
		.alloc_object = rh_alloc_object,         \
		.insert_object = rh_insert_object,       \
		.free_object = bench_free_object,        \
		.remove = remove_fn,                     \
		.resize = rh_resize,                     \
		.barrier = rh_barrier,                   \
		.count = rh_count,                       \
		.for_each = rh_for_each,                 \
		.table_stats = rh_table_stats,           \
		.nbuckets = rh_nbuckets,                 \
		.engine_stats = rh_engine_stats,         \
	}

static const struct bench_table_ops rh_ops = RH_OPS(rh_remove);
static const struct bench_table_ops rh_defer_ops = RH_OPS(rh_remove_defer);

/*
 * The inline fast path: no call into the library.  The value is copied out
 * inside the section (reading it there is what the poison check verifies)
 * and checked after it, as RCU readers copy what they need; checking it
 * inside kept a three-way result alive across the unlock's compiler barrier.
 */
static BENCH_ALWAYS_INLINE enum bench_found
rh_lookup_with(void *table, uint64_t key, const struct relhash_params params)
{
	const struct rh_obj *obj;
	uint64_t value = 0;

	relhash_read_lock();
	obj = relhash_lookup_fast(table, &key, params);
	if (obj)
		value = obj->value;
	relhash_read_unlock();
	return obj ? bench_check_value(value, key) : BENCH_MISSING;
}

static inline enum bench_found rh_lookup_fast(void *table, uint64_t key)
{
	return rh_lookup_with(table, key, rh_params[BENCH_HASH_DEFAULT]);
}

static inline enum bench_found rh_lookup_fast_siphash(void *table, uint64_t key)
{
	return rh_lookup_with(table, key, rh_params[BENCH_HASH_SIPHASH]);
}

static inline enum bench_found rh_lookup_fast_replaced(void *table,
                                                       uint64_t key)
{
	return rh_lookup_with(table, key, rh_params[BENCH_HASH_REPLACED]);
}

/* The lookup loops' functions, per --hash. */
static enum bench_found (*const rh_lookups_fast[BENCH_NHASH])(void *,
                                                              uint64_t) = {
	[BENCH_HASH_DEFAULT] = rh_lookup_fast,
	[BENCH_HASH_SIPHASH] = rh_lookup_fast_siphash,
	[BENCH_HASH_REPLACED] = rh_lookup_fast_replaced,
};

/* The same through the exported functions: three calls per lookup. */
static inline enum bench_found rh_lookup_call(void *table, uint64_t key)
{
	const struct rh_obj *obj;
	uint64_t value = 0;

	(relhash_read_lock)();
	obj = relhash_lookup(table, &key);
	if (obj)
		value = obj->value;
	(relhash_read_unlock)();
	return obj ? bench_check_value(value, key) : BENCH_MISSING;
}

static void *rh_worker_fast(void *w)
{
	RH_WITH_HASH(bench_worker_loop(w, rh_lookups_fast[RH_HASH],
	                                   bench_no_quiescent_state));
	return NULL;
}

static void *rh_worker_call(void *w)
{
	bench_worker_loop(w, rh_lookup_call, bench_no_quiescent_state);
	return NULL;
}

/*
 * relhash-bulk: lookups in groups of cfg->bulk keys, one
 * relhash_lookup_bulk_fast() call and one read-side section per group.
 * Updates drawn meanwhile run at once; the group is looked up when full.
 * Latency samples are a group's time (checks included) divided by its
 * size.
 */
struct rh_group {
	uint64_t keys[BENCH_MAX_BULK];
	const void *key_ptrs[BENCH_MAX_BULK];
	void *objs[BENCH_MAX_BULK];
};

/* Shared with the other bulk backends (bench.h). */
unsigned bench_gather_lookups(struct bench_worker *w, uint64_t *keys,
                              unsigned n, uint64_t *ops)
{
	const struct bench_config *cfg = w->run->cfg;
	unsigned k = 0;

	while (k < n && !__atomic_load_n(&w->run->stop, __ATOMIC_RELAXED)) {
		uint64_t r = bench_rand(&w->rng);
		uint64_t idx = bench_scale((uint32_t)(r >> 32), cfg->keys);

		if ((uint16_t)r < cfg->update_below) {
			bench_update(w, (uint32_t)(r >> 32));
			++*ops;
			continue;
		}
		keys[k++] = (uint16_t)(r >> 16) < cfg->hit_below ? idx
		                                                 : cfg->keys + idx;
	}
	return k;
}

/* Look the group up and check every result, inside one section (the
 * values must be read inside it; checking them there too saves a pass). */
static void rh_lookup_group(struct bench_worker *w, struct rh_group *g,
                            unsigned n)
{
	const struct bench_config *cfg = w->run->cfg;
	unsigned i;

	relhash_read_lock();
	RH_WITH_HASH(relhash_lookup_bulk_fast(w->run->table, g->key_ptrs,
	                                          n, g->objs,
	                                          rh_params[RH_HASH]));
	for (i = 0; i < n; i++) {
		const struct rh_obj *obj = g->objs[i];
		uint64_t key = g->keys[i];

		bench_lookup_done(w, key < cfg->keys, key < cfg->stable, key,
		                  obj ? bench_check_value(obj->value, key)
		                      : BENCH_MISSING);
	}
	relhash_read_unlock();
}

static void *rh_worker_bulk(void *arg)
{
	struct bench_worker *w = arg;
	struct bench_run *run = w->run;
	struct rh_group *g = bench_xcalloc(1, sizeof(*g));
	unsigned i, n;
	uint64_t ops = 0, reported = 0;

	for (i = 0; i < BENCH_MAX_BULK; i++)
		g->key_ptrs[i] = &g->keys[i];
	bench_worker_begin(w);
	while ((n = bench_gather_lookups(w, g->keys, run->cfg->bulk,
	                                 &ops)) > 0) {
		bool timed = w->lookups / BENCH_SAMPLE_EVERY !=
		             (w->lookups + n) / BENCH_SAMPLE_EVERY;
		uint64_t t0 = timed ? bench_ticks() : 0;

		rh_lookup_group(w, g, n);
		if (timed)
			bench_hist_add(&w->latency[__atomic_load_n(&run->resizing,
			                                           __ATOMIC_RELAXED)],
			               (bench_ticks() - t0) / n);
		w->lookups += n;
		ops += n;
		if (ops - reported >= BENCH_BATCH) {
			__atomic_store_n(&w->progress, ops, __ATOMIC_RELAXED);
			reported = ops;
		}
	}
	bench_worker_end(w);
	free(g);
	return NULL;
}

const struct bench_backend bench_relhash_backend = {
	.name = "relhash",
	.description = "relhash, inline read_lock + lookup_fast",
	.ops = &rh_ops,
	.worker = rh_worker_fast,
};

const struct bench_backend bench_relhash_call_backend = {
	.name = "relhash-call",
	.description = "relhash, exported read_lock + lookup calls",
	.ops = &rh_ops,
	.worker = rh_worker_call,
};

const struct bench_backend bench_relhash_defer_backend = {
	.name = "relhash-defer",
	.description = "relhash, removed objects freed by the callback thread",
	.ops = &rh_defer_ops,
	.worker = rh_worker_fast,
	.on_request = true,
};

const struct bench_backend bench_relhash_bulk_backend = {
	.name = "relhash-bulk",
	.description = "relhash, inline read_lock + lookup_bulk_fast (--bulk)",
	.ops = &rh_ops,
	.worker = rh_worker_bulk,
	.bulk = true,
};

/* ---------------------------------------------------------------------- */
/* --epoch                                                                */

static double rh_lock_unlock_inline(uint64_t n)
{
	uint64_t i, t0 = bench_now_ns();

	for (i = 0; i < n; i++) {
		relhash_read_lock();
		relhash_read_unlock();
	}
	return (double)(bench_now_ns() - t0) / (double)n;
}

static double rh_lock_unlock_call(uint64_t n)
{
	uint64_t i, t0 = bench_now_ns();

	for (i = 0; i < n; i++) {
		(relhash_read_lock)();
		(relhash_read_unlock)();
	}
	return (double)(bench_now_ns() - t0) / (double)n;
}

static void rh_read_spin(const int *stop, uint64_t section_ns)
{
	while (!__atomic_load_n(stop, __ATOMIC_RELAXED)) {
		relhash_read_lock();
		bench_section_work(section_ns);
		relhash_read_unlock();
	}
}

static void rh_synchronize(void)
{
	relhash_synchronize();
}

struct rh_callback {
	struct relhash_head head;
};

static uint64_t rh_callbacks_run;

static void rh_count_callback(struct relhash_head *head)
{
	(void)head;
	__atomic_fetch_add(&rh_callbacks_run, 1, __ATOMIC_RELAXED);
}

static uint64_t rh_call_and_barrier(uint64_t n)
{
	struct rh_callback *cb = bench_xcalloc(n, sizeof(*cb));
	uint64_t i;

	__atomic_store_n(&rh_callbacks_run, 0, __ATOMIC_RELAXED);
	for (i = 0; i < n; i++)
		relhash_call(&cb[i].head, rh_count_callback);
	relhash_barrier();
	free(cb);
	return __atomic_load_n(&rh_callbacks_run, __ATOMIC_RELAXED);
}

const struct bench_epoch_flavor bench_relhash_epoch = {
	.name = "relhash",
	.lock_unlock_inline = rh_lock_unlock_inline,
	.lock_unlock_call = rh_lock_unlock_call,
	.read_spin = rh_read_spin,
	.synchronize = rh_synchronize,
	.call_and_barrier = rh_call_and_barrier,
};
