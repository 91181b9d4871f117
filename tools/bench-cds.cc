/*
 * bench-cds.cc - libcds's split-ordered map over its user-space RCU as a
 * relhash-bench backend, behind the benchmark's C interface.
 *
 * The split-ordered list (Shalev and Shavit, "Split-ordered lists:
 * lock-free extensible hash tables", JACM 2006) keeps every object in one
 * lock-free list (Michael's, here) sorted by bit-reversed hash; the bucket
 * table only holds shortcuts into it, and grows by itself as the load
 * rises, without moving an object, up to the capacity given when the map
 * is made (its expected item count): it never shrinks, has no resize call,
 * and cannot grow from 8 buckets to the keys' size, so toggle, wide and
 * grow do not run (grow, tried, filled 200,000 keys in 274 s: lists
 * thousands of objects long).  Removed nodes go to libcds's
 * general_buffered RCU, whose buffer, when full, waits for a grace period
 * in the thread that removes.  Lookups take libcds's RCU read lock inside
 * find(); values live in the nodes, which libcds frees (no poison).
 */
#include "bench.h"

#include <cerrno>
#include <functional>
#include <mutex>
#include <stdexcept>

#include <cds/init.h>
#include <cds/urcu/general_buffered.h>
#include <cds/container/michael_list_rcu.h>
#include <cds/container/split_list_map_rcu.h>
#include <cds/version.h>

namespace {

typedef cds::urcu::gc<cds::urcu::general_buffered<>> cds_rcu;

struct bench_hasher {
	size_t operator()(uint64_t key) const
	{
		return bench_hash(key);
	}
};

struct cds_traits : public cds::container::split_list::traits {
	typedef cds::container::michael_list_tag ordered_list;
	typedef bench_hasher hash;
	typedef cds::atomicity::item_counter item_counter;
	struct ordered_list_traits : public cds::container::michael_list::traits {
		typedef std::less<uint64_t> less;
	};
};

typedef cds::container::SplitListMap<cds_rcu, uint64_t, uint64_t, cds_traits>
	cds_map;

/* libcds and its RCU singleton, made once and kept for the process. */
std::once_flag cds_once;

void cds_start()
{
	std::call_once(cds_once, [] {
		cds::Initialize();
		new cds_rcu();
	});
}

cds_map *map_of(void *table)
{
	return static_cast<cds_map *>(table);
}

/* A load factor of 1: a bucket shortcut for every key, as relhash's
 * tables start at one bucket a key or more. */
void *cds_create(const struct bench_config *cfg)
{
	cds_map *map = nullptr;

	cds_start();
	/* The constructor takes the RCU read lock: attach meanwhile. */
	cds::threading::Manager::attachThread();
	try {
		map = new cds_map(cfg->nbuckets, 1);
	} catch (const std::exception &) {
		errno = ENOMEM;
	}
	cds::threading::Manager::detachThread();
	return map;
}

void cds_thread_enter()
{
	cds::threading::Manager::attachThread();
}

void cds_thread_leave()
{
	cds::threading::Manager::detachThread();
}

/* The caller is attached (destroy is called after thread_leave). */
void cds_destroy(void *table)
{
	cds::threading::Manager::attachThread();
	delete map_of(table);
	cds_rcu::force_dispose();
	cds::threading::Manager::detachThread();
}

struct cds_put {
	bool operator()(void *table, uint64_t key, uint64_t value) const
	{
		return map_of(table)->insert(key, value);
	}
};

/* insert allocates the list node, a cost of the table's that stays in
 * --prealloc's timed fill: what the caller prepares is only the key and
 * value (bench.h, object_copied). */
typedef bench_copying_insert<cds_put> cds_inserts;

int cds_remove(void *table, uint64_t key)
{
	return map_of(table)->erase(key) ? 0 : -ENOENT;
}

void cds_barrier()
{
	cds::threading::Manager::attachThread();
	cds_rcu::force_dispose();
	cds::threading::Manager::detachThread();
}

uint64_t cds_count(void *table)
{
	return map_of(table)->size();
}

/* Iterators need the RCU read lock held. */
void cds_for_each(void *table, void (*fn)(uint64_t key, void *arg), void *arg)
{
	cds_map::rcu_lock lock;

	for (auto it = map_of(table)->begin(); it != map_of(table)->end(); ++it)
		fn(it->first, arg);
}

const struct bench_table_ops cds_ops = {
	/* A node: the pair, its hash and the list link. */
	.object_size = sizeof(cds_map::value_type) + 2 * sizeof(void *),
	.create = cds_create,
	.destroy = cds_destroy,
	.thread_enter = cds_thread_enter,
	.thread_leave = cds_thread_leave,
	.insert = cds_inserts::insert,
	.alloc_object = bench_kv_alloc,
	.insert_object = cds_inserts::insert_object,
	.free_object = bench_free_object,
	.object_copied = true,
	.remove = cds_remove,
	.resize = nullptr,
	.barrier = cds_barrier,
	.count = cds_count,
	.for_each = cds_for_each,
	.table_stats = nullptr,
	.nbuckets = nullptr,
	.quiescent_state = nullptr,
	.engine_stats = nullptr,
};

inline enum bench_found cds_lookup(void *table, uint64_t key)
{
	uint64_t value = 0;

	/* find() takes the RCU read lock around the functor. */
	if (!map_of(table)->find(key, [&value](cds_map::value_type &item) {
		    value = item.second;
	    }))
		return BENCH_MISSING;
	return bench_check_value(value, key);
}

void *cds_worker(void *w)
{
	bench_worker_loop(static_cast<struct bench_worker *>(w), cds_lookup,
	                  bench_no_quiescent_state);
	return nullptr;
}

const char *cds_cannot_run(const struct bench_config *cfg)
{
	if (cfg->resize == BENCH_RESIZE_GROW)
		return "the bucket table's capacity is fixed when the map is "
		       "made: it cannot grow from 8 buckets";
	return bench_cannot_shrink(cfg);
}

} // namespace

const struct bench_backend bench_cds_backend = {
	.name = "libcds",
	.description = "libcds " CDS_VERSION_STRING " SplitListMap over "
	               "MichaelList, general_buffered user-space RCU",
	.ops = &cds_ops,
	.worker = cds_worker,
	.unsynchronized = false,
	.bulk = false,
	.cannot_run = cds_cannot_run,
	.on_request = false,
};
