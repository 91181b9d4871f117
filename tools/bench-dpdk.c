/*
 * bench-dpdk.c - DPDK's rte_hash as a relhash-bench backend, set up as DPDK
 * documents for lock-free readers: RTE_HASH_EXTRA_FLAGS_RW_CONCURRENCY_LF
 * (readers take no lock; writers, MULTI_WRITER_ADD, take the table's own),
 * EXT_TABLE (an insert never fails while there is room), and the table's
 * RCU QSBR integration (rte_hash_rcu_qsbr_add(), defer-queue mode): a
 * removed key's slot and its object are freed once every registered
 * reader has reported a quiescent state since.
 *
 * Two backends: "dpdk" looks keys up one at a time, "dpdk-bulk" in groups
 * of --bulk keys (at most RTE_HASH_LOOKUP_BULK_MAX) with one
 * rte_hash_lookup_with_hash_bulk_data() call, as relhash-bulk does.  Both
 * pass the hash they compute inline (bench_hash()), as relhash's lookups do.
 *
 * rte_hash has a fixed capacity, chosen at creation: it does not resize,
 * so only --resize=none runs.  The EAL is started once, the first time a
 * table is made, without hugepages, devices, shared files or telemetry.
 */
#define _GNU_SOURCE 1 /* pthread_getaffinity_np */
#include "bench.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_hash.h>
#include <rte_lcore.h>
#include <rte_rcu_qsbr.h>

struct dpdk_obj {
	uint64_t key;
	uint64_t value;
};

/* Registered readers at most: workers, and the main thread. */
#define DPDK_MAX_THREADS 1040
/* Slots beyond the keys (see dpdk_new_hash()). */
#define DPDK_SLACK 4096
/* How long an insert waits for a full table's defer queue (dpdk_add()). */
#define DPDK_FULL_WAIT_NS 1000000000u
/* The EAL's memory, MiB, at least; bigger tables get more (see below). */
#define DPDK_MIN_MEM_MB 512

static struct rte_rcu_qsbr *dpdk_qsbr;
static pthread_mutex_t dpdk_lock = PTHREAD_MUTEX_INITIALIZER;
static bool dpdk_started;
static uint8_t dpdk_ids[DPDK_MAX_THREADS]; /* QSBR thread ids in use */
static unsigned dpdk_tables;               /* for unique table names */
static _Thread_local int dpdk_id = -1;     /* this thread's QSBR id */

static uint32_t dpdk_hash_func(const void *key, uint32_t len, uint32_t seed)
{
	uint64_t k;

	(void)len;
	(void)seed;
	memcpy(&k, key, sizeof(k));
	return (uint32_t)bench_hash(k);
}

/*
 * Start the EAL (once) and make the QSBR variable every table shares.
 * rte_eal_init() pins the calling thread to lcore 0's CPU: give it back
 * its affinity, or every thread the benchmark starts would share one CPU.
 * Under dpdk_lock.
 */
static int dpdk_start(const struct bench_config *cfg)
{
	char mem[32];
	char *argv[] = { "relhash-bench", "--no-huge", "--no-pci", "-l", "0",
	                 "-m", mem, "--no-shconf",
	                 "--no-telemetry", "--log-level=lib.eal:error", NULL };
	uint64_t mb = cfg->keys / 8192; /* about 128 bytes a key */
	cpu_set_t cpus;
	size_t qsize;

	if (dpdk_started)
		return 0;
	snprintf(mem, sizeof(mem), "%llu", (unsigned long long)
	         (mb > DPDK_MIN_MEM_MB ? mb : DPDK_MIN_MEM_MB));
	pthread_getaffinity_np(pthread_self(), sizeof(cpus), &cpus);
	if (rte_eal_init((int)(sizeof(argv) / sizeof(argv[0])) - 1, argv) < 0) {
		fprintf(stderr, "relhash-bench: dpdk: rte_eal_init: %s\n",
		        rte_strerror(rte_errno));
		return -ENODEV;
	}
	pthread_setaffinity_np(pthread_self(), sizeof(cpus), &cpus);
	qsize = rte_rcu_qsbr_get_memsize(DPDK_MAX_THREADS);
	dpdk_qsbr = aligned_alloc(RTE_CACHE_LINE_SIZE, qsize);
	if (!dpdk_qsbr || rte_rcu_qsbr_init(dpdk_qsbr, DPDK_MAX_THREADS))
		return -ENOMEM;
	dpdk_started = true;
	return 0;
}

/* After a grace period (the defer queue's reclaim): poison, then free. */
static void dpdk_poison_free(void *p, void *data)
{
	struct dpdk_obj *obj = data;

	(void)p;
	/* Relaxed: a reader that could still see obj would be the bug the
	 * poison is there to show, not something to order against. */
	__atomic_store_n(&obj->value, BENCH_POISON, __ATOMIC_RELAXED);
	free(obj);
}

/* A table for every key (keys at most are ever present), and room for
 * the slots that wait in the defer queue for their grace period: a
 * quarter more, and DPDK_SLACK for small tables, where a few quiescent
 * states late are many slots. */
static struct rte_hash *dpdk_new_hash(const struct bench_config *cfg)
{
	char name[RTE_HASH_NAMESIZE];
	uint64_t entries = cfg->keys + cfg->keys / 4 + DPDK_SLACK;
	struct rte_hash_parameters params = {
		.name = name,
		.entries = (uint32_t)entries,
		.key_len = sizeof(uint64_t),
		.hash_func = dpdk_hash_func,
		.socket_id = SOCKET_ID_ANY,
		.extra_flag = RTE_HASH_EXTRA_FLAGS_RW_CONCURRENCY_LF |
		              RTE_HASH_EXTRA_FLAGS_MULTI_WRITER_ADD |
		              RTE_HASH_EXTRA_FLAGS_EXT_TABLE,
	};
	struct rte_hash_rcu_config rcu = {
		.v = dpdk_qsbr,
		.mode = RTE_HASH_QSBR_MODE_DQ,
		.free_key_data_func = dpdk_poison_free,
	};
	struct rte_hash *h;

	snprintf(name, sizeof(name), "relhash-bench-%u", dpdk_tables++);
	h = rte_hash_create(&params);
	if (!h)
		return NULL;
	if (rte_hash_rcu_qsbr_add(h, &rcu)) {
		rte_hash_free(h);
		return NULL;
	}
	return h;
}

static void *dpdk_create(const struct bench_config *cfg)
{
	struct rte_hash *h = NULL;
	int err;

	if (cfg->keys > RTE_HASH_ENTRIES_MAX / 2) {
		errno = EINVAL;
		return NULL;
	}
	pthread_mutex_lock(&dpdk_lock);
	err = dpdk_start(cfg);
	if (!err)
		h = dpdk_new_hash(cfg);
	pthread_mutex_unlock(&dpdk_lock);
	if (!h)
		errno = err ? -err : rte_errno;
	return h;
}

/* Every thread: an lcore id (the table's per-lcore caches of free slots
 * index by it; threads the EAL did not start have none) and a QSBR id. */
static void dpdk_thread_enter(void)
{
	unsigned id;

	if (rte_lcore_id() == LCORE_ID_ANY && rte_thread_register())
		bench_die("dpdk: rte_thread_register: %s (more threads than "
		          "RTE_MAX_LCORE?)", rte_strerror(rte_errno));
	pthread_mutex_lock(&dpdk_lock);
	for (id = 0; id < DPDK_MAX_THREADS && dpdk_ids[id]; id++)
		;
	if (id == DPDK_MAX_THREADS)
		bench_die("dpdk: more than %u threads", DPDK_MAX_THREADS);
	dpdk_ids[id] = 1;
	pthread_mutex_unlock(&dpdk_lock);
	dpdk_id = (int)id;
	rte_rcu_qsbr_thread_register(dpdk_qsbr, id);
	rte_rcu_qsbr_thread_online(dpdk_qsbr, id);
}

static void dpdk_thread_leave(void)
{
	unsigned id = (unsigned)dpdk_id;

	rte_rcu_qsbr_thread_offline(dpdk_qsbr, id);
	rte_rcu_qsbr_thread_unregister(dpdk_qsbr, id);
	pthread_mutex_lock(&dpdk_lock);
	dpdk_ids[id] = 0;
	pthread_mutex_unlock(&dpdk_lock);
	dpdk_id = -1;
	/* The EAL's main thread keeps its lcore. */
	if (rte_lcore_id() != rte_get_main_lcore())
		rte_thread_unregister();
}

static inline void dpdk_quiescent_state(void)
{
	rte_rcu_qsbr_quiescent(dpdk_qsbr, (unsigned)dpdk_id);
}

/*
 * Add key's object.  A full table (-ENOSPC) has its free slots in the
 * defer queue, waiting for a reader that has not reported a quiescent
 * state since: one that was preempted, on a busy machine, while the other
 * threads deleted more keys than the table has room for.  Then report our
 * own quiescent state (the callers hold no reference), let the others
 * run, and try again, for at most DPDK_FULL_WAIT_NS.
 */
static int dpdk_add(void *table, uint64_t key, struct dpdk_obj *obj)
{
	hash_sig_t sig = (hash_sig_t)bench_hash(key);
	uint64_t t0 = 0;
	int err;

	while ((err = rte_hash_add_key_with_hash_data(table, &key, sig,
	                                              obj)) == -ENOSPC) {
		if (!t0)
			t0 = bench_now_ns();
		else if (bench_now_ns() - t0 > DPDK_FULL_WAIT_NS)
			break;
		dpdk_quiescent_state();
		sched_yield();
	}
	return err;
}

static void *dpdk_alloc_object(uint64_t key)
{
	return BENCH_NEW_OBJECT(struct dpdk_obj, key);
}

/* On failure obj was never published: it can be freed at once. */
static int dpdk_insert_object(void *table, void *object)
{
	struct dpdk_obj *obj = object;

	/* rte_hash replaces the data of a present key: look first.  Only
	 * this thread updates this key, so nothing changes in between. */
	if (rte_hash_lookup_with_hash(table, &obj->key,
	                              (hash_sig_t)bench_hash(obj->key)) >= 0)
		return -EEXIST;
	return dpdk_add(table, obj->key, obj);
}

static int dpdk_insert(void *table, uint64_t key)
{
	return bench_insert_new(table, key, dpdk_alloc_object,
	                        dpdk_insert_object, bench_free_object);
}

static int dpdk_remove(void *table, uint64_t key)
{
	/* With the QSBR integration the object goes to the defer queue, and
	 * dpdk_poison_free() frees it after a grace period. */
	int32_t pos = rte_hash_del_key_with_hash(table, &key,
	                                         (hash_sig_t)bench_hash(key));

	return pos >= 0 ? 0 : pos;
}

/* rte_hash_count() counts the slots waiting in the defer queue too:
 * count by iterating, which sees only keys in the table. */
static uint64_t dpdk_count(void *table)
{
	const void *key;
	void *data;
	uint32_t next = 0;
	uint64_t n = 0;

	while (rte_hash_iterate(table, &key, &data, &next) >= 0)
		n++;
	return n;
}

static void dpdk_for_each(void *table, void (*fn)(uint64_t key, void *arg),
                          void *arg)
{
	const void *key;
	void *data;
	uint32_t next = 0;

	while (rte_hash_iterate(table, &key, &data, &next) >= 0)
		fn(((const struct dpdk_obj *)data)->key, arg);
}

/* The objects still in the table, then the table: rte_hash_free() frees
 * those in the defer queue (every thread is offline by now). */
static void dpdk_destroy(void *table)
{
	const void *key;
	void *data;
	uint32_t next = 0;

	while (rte_hash_iterate(table, &key, &data, &next) >= 0)
		free(data);
	rte_hash_free(table);
}

static const char *dpdk_cannot_run(const struct bench_config *cfg)
{
	if (cfg->resize != BENCH_RESIZE_NONE)
		return "fixed capacity: no resizing (only --resize=none)";
	return NULL;
}

static const struct bench_table_ops dpdk_ops = {
	.object_size = sizeof(struct dpdk_obj),
	.create = dpdk_create,
	.destroy = dpdk_destroy,
	.thread_enter = dpdk_thread_enter,
	.thread_leave = dpdk_thread_leave,
	.insert = dpdk_insert,
	.alloc_object = dpdk_alloc_object,
	.insert_object = dpdk_insert_object,
	.free_object = bench_free_object,
	.remove = dpdk_remove,
	.count = dpdk_count,
	.for_each = dpdk_for_each,
	.quiescent_state = dpdk_quiescent_state,
};

/* QSBR: no section around the lookup; the loop reports quiescent states.
 * The value's loads (here and in dpdk_lookup_group()) are relaxed:
 * rte_hash's lookup acquires the entry that the add released after the
 * value was written; atomic only because a failed grace period races with
 * the poison's store. */
static inline enum bench_found dpdk_lookup(void *table, uint64_t key)
{
	void *data;

	if (rte_hash_lookup_with_hash_data(table, &key,
	                                   (hash_sig_t)bench_hash(key),
	                                   &data) < 0)
		return BENCH_MISSING;
	return bench_check_value(__atomic_load_n(
		&((const struct dpdk_obj *)data)->value, __ATOMIC_RELAXED), key);
}

static void *dpdk_worker(void *w)
{
	bench_worker_loop(w, dpdk_lookup, dpdk_quiescent_state);
	return NULL;
}

/* ---------------------------------------------------------------------- */
/* dpdk-bulk                                                              */

struct dpdk_group {
	uint64_t keys[RTE_HASH_LOOKUP_BULK_MAX];
	const void *key_ptrs[RTE_HASH_LOOKUP_BULK_MAX];
	hash_sig_t sigs[RTE_HASH_LOOKUP_BULK_MAX];
	void *data[RTE_HASH_LOOKUP_BULK_MAX];
};

static void dpdk_lookup_group(struct bench_worker *w, struct dpdk_group *g,
                              unsigned n)
{
	const struct bench_config *cfg = w->run->cfg;
	uint64_t hits = 0;
	unsigned i;

	for (i = 0; i < n; i++)
		g->sigs[i] = (hash_sig_t)bench_hash(g->keys[i]);
	rte_hash_lookup_with_hash_bulk_data(w->run->table, g->key_ptrs, g->sigs,
	                                    n, &hits, g->data);
	for (i = 0; i < n; i++) {
		uint64_t key = g->keys[i];
		const struct dpdk_obj *obj = g->data[i];
		enum bench_found found = BENCH_MISSING;

		if (hits >> i & 1)
			found = bench_check_value(__atomic_load_n(&obj->value,
			                                          __ATOMIC_RELAXED),
			                          key);
		bench_lookup_done(w, key < cfg->keys, key < cfg->stable, key,
		                  found);
	}
}

/* As relhash-bulk's worker (bench-relhash.c), with a quiescent state after
 * every BENCH_BATCH operations or so. */
static void *dpdk_worker_bulk(void *arg)
{
	struct bench_worker *w = arg;
	struct bench_run *run = w->run;
	struct dpdk_group *g = bench_xcalloc(1, sizeof(*g));
	unsigned i, n, bulk = run->cfg->bulk;
	uint64_t ops = 0, reported = 0;

	if (bulk > RTE_HASH_LOOKUP_BULK_MAX)
		bulk = RTE_HASH_LOOKUP_BULK_MAX;
	for (i = 0; i < RTE_HASH_LOOKUP_BULK_MAX; i++)
		g->key_ptrs[i] = &g->keys[i];
	bench_worker_begin(w);
	while ((n = bench_gather_lookups(w, g->keys, bulk, &ops)) > 0) {
		bool timed = w->lookups / BENCH_SAMPLE_EVERY !=
		             (w->lookups + n) / BENCH_SAMPLE_EVERY;
		uint64_t t0 = timed ? bench_ticks() : 0;

		dpdk_lookup_group(w, g, n);
		if (timed)
			bench_hist_add(&w->latency[0], (bench_ticks() - t0) / n);
		w->lookups += n;
		ops += n;
		if (ops - reported >= BENCH_BATCH) {
			dpdk_quiescent_state();
			__atomic_store_n(&w->progress, ops, __ATOMIC_RELAXED);
			reported = ops;
		}
	}
	bench_worker_end(w);
	free(g);
	return NULL;
}

const struct bench_backend bench_dpdk_backend = {
	.name = "dpdk",
	.description = "DPDK " BENCH_DPDK_VERSION " rte_hash: lock-free readers "
	               "(RW_CONCURRENCY_LF), RCU QSBR defer queue",
	.ops = &dpdk_ops,
	.worker = dpdk_worker,
	.cannot_run = dpdk_cannot_run,
};

const struct bench_backend bench_dpdk_bulk_backend = {
	.name = "dpdk-bulk",
	.description = "DPDK " BENCH_DPDK_VERSION " rte_hash, "
	               "lookup_with_hash_bulk_data in groups of --bulk (<= 64)",
	.ops = &dpdk_ops,
	.worker = dpdk_worker_bulk,
	.cannot_run = dpdk_cannot_run,
	.bulk = true,
};
