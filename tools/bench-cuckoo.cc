/*
 * bench-cuckoo.cc - libcuckoo's cuckoohash_map as a relhash-bench backend,
 * behind the benchmark's C interface.
 *
 * libcuckoo is concurrent cuckoo hashing with fine-grained locks (Li,
 * Andersen, Kaminsky and Freedman, "Algorithmic improvements for fast
 * concurrent cuckoo hashing", EuroSys 2014): a lookup locks the two
 * buckets its key can be in, and copies the value out under the locks.
 * Keys and values live in the table's slots, so nothing is freed after a
 * grace period (and no poison can be seen).  The table grows by itself
 * when an insert finds no free slot; reserve() resizes it on request, in
 * both directions, with every lock taken.
 */
#include "bench.h"

#include <cerrno>
#include <new>
#include <stdexcept>

#include <unistd.h>

#include <libcuckoo/cuckoohash_map.hh>

namespace {

struct bench_hasher {
	size_t operator()(uint64_t key) const
	{
		return bench_hash(key);
	}
};

typedef libcuckoo::cuckoohash_map<uint64_t, uint64_t, bench_hasher> cuckoo_map;

cuckoo_map *map_of(void *table)
{
	return static_cast<cuckoo_map *>(table);
}

/* Table sizes are in slots (4 a bucket), the unit of relhash's buckets
 * here: a slot holds one key. */
void *cuckoo_create(const struct bench_config *cfg)
{
	try {
		return new cuckoo_map(cfg->nbuckets);
	} catch (const std::exception &) {
		errno = ENOMEM;
		return nullptr;
	}
}

void cuckoo_destroy(void *table)
{
	delete map_of(table);
}

struct cuckoo_put {
	bool operator()(void *table, uint64_t key, uint64_t value) const
	{
		return map_of(table)->insert(key, value);
	}
};

/* The key and value go into the table's slots: with --prealloc, what the
 * caller prepares is only them (bench.h, object_copied); the table's own
 * allocations, when it grows, stay in the timed fill. */
typedef bench_copying_insert<cuckoo_put> cuckoo_inserts;

int cuckoo_remove(void *table, uint64_t key)
{
	return map_of(table)->erase(key) ? 0 : -ENOENT;
}

/* reserve(n) makes room for n keys: it grows, or shrinks to the smallest
 * size that holds n and the keys present. */
int cuckoo_resize(void *table, size_t nbuckets)
{
	try {
		map_of(table)->reserve(nbuckets);
		return 0;
	} catch (const std::exception &) {
		return -ENOMEM;
	}
}

uint64_t cuckoo_count(void *table)
{
	return map_of(table)->size();
}

void cuckoo_for_each(void *table, void (*fn)(uint64_t key, void *arg),
                     void *arg)
{
	auto locked = map_of(table)->lock_table();

	for (const auto &kv : locked)
		fn(kv.first, arg);
}

size_t cuckoo_nbuckets(void *table)
{
	return map_of(table)->capacity();
}

const struct bench_table_ops cuckoo_ops = {
	.object_size = sizeof(std::pair<uint64_t, uint64_t>),
	.create = cuckoo_create,
	.destroy = cuckoo_destroy,
	.thread_enter = nullptr,
	.thread_leave = nullptr,
	.insert = cuckoo_inserts::insert,
	.alloc_object = bench_kv_alloc,
	.insert_object = cuckoo_inserts::insert_object,
	.free_object = bench_free_object,
	.object_copied = true,
	.remove = cuckoo_remove,
	.resize = cuckoo_resize,
	.barrier = nullptr,
	.count = cuckoo_count,
	.for_each = cuckoo_for_each,
	.table_stats = nullptr,
	.nbuckets = cuckoo_nbuckets,
	.quiescent_state = nullptr,
	.engine_stats = nullptr,
};

inline enum bench_found cuckoo_lookup(void *table, uint64_t key)
{
	uint64_t value;

	if (!map_of(table)->find(key, value))
		return BENCH_MISSING;
	return bench_check_value(value, key);
}

void *cuckoo_worker(void *w)
{
	bench_worker_loop(static_cast<struct bench_worker *>(w), cuckoo_lookup,
	                  bench_no_quiescent_state);
	return nullptr;
}

/* libcuckoo 0.3.1 crashes inside its own insert while the table grows by
 * itself when more threads than CPUs fill it (a segfault in its resize, in
 * about 6 runs of 15 at 8 threads on 2 CPUs; none in 20 at 2 threads):
 * grow runs without it there. */
const char *cuckoo_cannot_run(const struct bench_config *cfg)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

	if (cfg->resize == BENCH_RESIZE_GROW && ncpu > 0 &&
	    cfg->threads > (unsigned long)ncpu)
		return "crashes while growing itself with more threads than "
		       "CPUs (libcuckoo 0.3.1)";
	return nullptr;
}

} // namespace

const struct bench_backend bench_cuckoo_backend = {
	.name = "libcuckoo",
	.description = "libcuckoo " BENCH_LIBCUCKOO_VERSION " cuckoohash_map: "
	               "striped bucket locks, values in the table",
	.ops = &cuckoo_ops,
	.worker = cuckoo_worker,
	.unsynchronized = false,
	.bulk = false,
	.cannot_run = cuckoo_cannot_run,
	.on_request = false,
};
