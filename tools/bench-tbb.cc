/*
 * bench-tbb.cc - oneTBB's concurrent_hash_map as a relhash-bench backend,
 * behind the benchmark's C interface.
 *
 * concurrent_hash_map is chained, with a reader-writer lock per bucket and
 * per element: a lookup holds a const_accessor (the element's read lock)
 * while it reads the value.  An erased element is freed when its last
 * accessor lets go, so no grace period is involved.  The table doubles its
 * buckets by itself as it fills, one segment at a time, and never shrinks;
 * rehash() only grows, so toggle and wide do not run.
 */
#include "bench.h"

#include <cerrno>
#include <memory>
#include <new>
#include <stdexcept>

#include <tbb/concurrent_hash_map.h>

namespace {

struct bench_compare {
	size_t hash(uint64_t key) const
	{
		return bench_hash(key);
	}
	bool equal(uint64_t a, uint64_t b) const
	{
		return a == b;
	}
};

/* With the C++ allocator (malloc), as every other backend, rather than
 * TBB's default scalable allocator: the heap figures then count the table,
 * and no backend gets a different malloc. */
typedef tbb::concurrent_hash_map<uint64_t, uint64_t, bench_compare,
	std::allocator<std::pair<const uint64_t, uint64_t>>> tbb_map;

tbb_map *map_of(void *table)
{
	return static_cast<tbb_map *>(table);
}

void *tbb_create(const struct bench_config *cfg)
{
	try {
		return new tbb_map(cfg->nbuckets);
	} catch (const std::exception &) {
		errno = ENOMEM;
		return nullptr;
	}
}

void tbb_destroy(void *table)
{
	delete map_of(table);
}

struct tbb_put {
	bool operator()(void *table, uint64_t key, uint64_t value) const
	{
		return map_of(table)->insert(std::make_pair(key, value));
	}
};

/* insert allocates the element's node, a cost of the table's that stays
 * in --prealloc's timed fill: what the caller prepares is only the key
 * and value (bench.h, object_copied). */
typedef bench_copying_insert<tbb_put> tbb_inserts;

int tbb_remove(void *table, uint64_t key)
{
	return map_of(table)->erase(key) ? 0 : -ENOENT;
}

uint64_t tbb_count(void *table)
{
	return map_of(table)->size();
}

/* Not safe with concurrent updates; the verification runs alone. */
void tbb_for_each(void *table, void (*fn)(uint64_t key, void *arg), void *arg)
{
	for (const auto &kv : *map_of(table))
		fn(kv.first, arg);
}

size_t tbb_nbuckets(void *table)
{
	return map_of(table)->bucket_count();
}

const struct bench_table_ops tbb_ops = {
	.object_size = sizeof(tbb_map::value_type),
	.create = tbb_create,
	.destroy = tbb_destroy,
	.thread_enter = nullptr,
	.thread_leave = nullptr,
	.insert = tbb_inserts::insert,
	.alloc_object = bench_kv_alloc,
	.insert_object = tbb_inserts::insert_object,
	.free_object = bench_free_object,
	.object_copied = true,
	.remove = tbb_remove,
	.resize = nullptr,
	.barrier = nullptr,
	.count = tbb_count,
	.for_each = tbb_for_each,
	.table_stats = nullptr,
	.nbuckets = tbb_nbuckets,
	.quiescent_state = nullptr,
	.engine_stats = nullptr,
};

inline enum bench_found tbb_lookup(void *table, uint64_t key)
{
	tbb_map::const_accessor acc;

	if (!map_of(table)->find(acc, key))
		return BENCH_MISSING;
	return bench_check_value(acc->second, key);
}

void *tbb_worker(void *w)
{
	bench_worker_loop(static_cast<struct bench_worker *>(w), tbb_lookup,
	                  bench_no_quiescent_state);
	return nullptr;
}

} // namespace

const struct bench_backend bench_tbb_backend = {
	.name = "tbb",
	.description = "oneTBB " BENCH_TBB_VERSION " concurrent_hash_map: "
	               "per-bucket and per-element reader-writer locks",
	.ops = &tbb_ops,
	.worker = tbb_worker,
	.unsynchronized = false,
	.bulk = false,
	.cannot_run = bench_cannot_shrink,
	.on_request = false,
};
