/*
 * bench-ck.c - Concurrency Kit's ck_ht as a relhash-bench backend, used the
 * way CK documents it for many readers and one writer (SPMC): lookups with
 * ck_ht_get_spmc() inside a ck_epoch section and no lock; writers take one
 * mutex, so that there is only ever one; objects removed, and the arrays
 * ck_ht replaces when it grows, are freed through ck_epoch_call() once no
 * section can still see them.
 *
 * ck_ht is open addressing in direct mode here: an entry holds the key and
 * a pointer to the object (the key plus one: CK reserves key 0 for empty
 * slots).  It grows by itself when it fills up and has no call to shrink,
 * so the workloads that resize on request (toggle, wide) do not run.
 */
#include "bench.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <ck_epoch.h>
#include <ck_ht.h>

struct ck_obj {
	uint64_t key;
	uint64_t value;
	ck_epoch_entry_t epoch_entry; /* for ck_epoch_call() after removal */
};

struct ck_table {
	ck_ht_t ht;
	pthread_mutex_t writer; /* SPMC: one writer at a time */
	uint64_t polls;         /* removes since the last ck_epoch_poll() */
};

/* One epoch for every table; each thread has a record, and the writer
 * (whoever holds a table's mutex) one of its own for deferred frees. */
static ck_epoch_t ck_epoch;
static ck_epoch_record_t ck_writer_record;
static pthread_once_t ck_once = PTHREAD_ONCE_INIT;
static _Thread_local ck_epoch_record_t *ck_record;

/* Poll the writer's callbacks every this many removes (each poll looks at
 * every record, so not on every remove). */
#define CK_POLL_EVERY 32

static void ck_init_once(void)
{
	ck_epoch_init(&ck_epoch);
	ck_epoch_register(&ck_epoch, &ck_writer_record, NULL);
}

/* ---------------------------------------------------------------------- */
/* Memory for ck_ht's arrays: deferred frees wait for a grace period.      */

/* A header in front of each block, for ck_epoch_call(); 16 bytes, so the
 * block keeps malloc's alignment. */
struct ck_block {
	ck_epoch_entry_t entry;
};

CK_EPOCH_CONTAINER(struct ck_block, entry, ck_block_of)

static void *ck_block_malloc(size_t size)
{
	struct ck_block *b = malloc(sizeof(*b) + size);

	return b ? b + 1 : NULL;
}

static void ck_block_free_now(ck_epoch_entry_t *entry)
{
	free(ck_block_of(entry));
}

/* ck_ht calls this with its writer: the table's mutex is held (or the
 * table is being created or destroyed, by one thread). */
static void ck_block_free(void *p, size_t size, bool defer)
{
	struct ck_block *b = (struct ck_block *)p - 1;

	(void)size;
	if (!p)
		return;
	if (defer)
		ck_epoch_call(&ck_writer_record, &b->entry, ck_block_free_now);
	else
		free(b);
}

static void *ck_block_realloc(void *p, size_t old, size_t size, bool defer)
{
	void *q = ck_block_malloc(size);

	if (q && p) {
		memcpy(q, p, old < size ? old : size);
		ck_block_free(p, old, defer);
	}
	return q;
}

static struct ck_malloc ck_allocator = {
	.malloc = ck_block_malloc,
	.realloc = ck_block_realloc,
	.free = ck_block_free,
};

/* ---------------------------------------------------------------------- */
/* The table                                                              */

/* ck_ht's hash callback (it calls it when it rehashes): the stored key is
 * the benchmark's key plus one. */
static void ck_hash_cb(ck_ht_hash_t *h, const void *key, size_t len,
                       uint64_t seed)
{
	uintptr_t stored;

	(void)len;
	(void)seed;
	memcpy(&stored, key, sizeof(stored));
	h->value = bench_hash(stored - 1);
}

static void *ck_create(const struct bench_config *cfg)
{
	struct ck_table *t = calloc(1, sizeof(*t));

	pthread_once(&ck_once, ck_init_once);
	if (!t)
		return NULL;
	if (!ck_ht_init(&t->ht, CK_HT_MODE_DIRECT | CK_HT_WORKLOAD_DELETE,
	                ck_hash_cb, &ck_allocator, cfg->nbuckets, BENCH_SEED)) {
		free(t);
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_init(&t->writer, NULL);
	return t;
}

static void ck_thread_enter(void)
{
	ck_epoch_record_t *r = ck_epoch_recycle(&ck_epoch, NULL);

	if (!r) {
		r = aligned_alloc(CK_MD_CACHELINE, sizeof(*r));
		if (!r)
			bench_die("out of memory");
		ck_epoch_register(&ck_epoch, r, NULL);
	}
	ck_record = r;
}

static void ck_thread_leave(void)
{
	/* The record stays on the epoch's list, free for the next thread. */
	ck_epoch_unregister(ck_record);
	ck_record = NULL;
}

static void ck_poison_free(ck_epoch_entry_t *entry)
{
	struct ck_obj *obj = (struct ck_obj *)((char *)entry -
	                                       offsetof(struct ck_obj, epoch_entry));

	/* Relaxed: a reader that could still see obj would be the bug the
	 * poison is there to show, not something to order against. */
	__atomic_store_n(&obj->value, BENCH_POISON, __ATOMIC_RELAXED);
	free(obj);
}

static void *ck_alloc_object(uint64_t key)
{
	return BENCH_NEW_OBJECT(struct ck_obj, key);
}

/* On failure obj was never published: it can be freed at once. */
static int ck_insert_object(void *table, void *object)
{
	struct ck_table *t = table;
	struct ck_obj *obj = object;
	ck_ht_entry_t entry;
	ck_ht_hash_t h = { bench_hash(obj->key) };
	bool added, exists;

	ck_ht_entry_set_direct(&entry, h, obj->key + 1, (uintptr_t)obj);
	pthread_mutex_lock(&t->writer);
	added = ck_ht_put_spmc(&t->ht, h, &entry);
	/* put fails for a present key or when growing failed. */
	exists = !added && ck_ht_get_spmc(&t->ht, h, &entry);
	pthread_mutex_unlock(&t->writer);
	if (!added)
		return exists ? -EEXIST : -ENOMEM;
	return 0;
}

static int ck_insert(void *table, uint64_t key)
{
	return bench_insert_new(table, key, ck_alloc_object, ck_insert_object,
	                        bench_free_object);
}

static int ck_remove(void *table, uint64_t key)
{
	struct ck_table *t = table;
	ck_ht_entry_t entry;
	ck_ht_hash_t h = { bench_hash(key) };
	bool removed;

	ck_ht_entry_key_set_direct(&entry, key + 1);
	pthread_mutex_lock(&t->writer);
	removed = ck_ht_remove_spmc(&t->ht, h, &entry);
	if (removed) {
		struct ck_obj *obj = (struct ck_obj *)ck_ht_entry_value_direct(&entry);

		ck_epoch_call(&ck_writer_record, &obj->epoch_entry,
		              ck_poison_free);
		/* Non-blocking: runs the callbacks whose grace period is
		 * over, if any. */
		if (++t->polls % CK_POLL_EVERY == 0)
			ck_epoch_poll(&ck_writer_record);
	}
	pthread_mutex_unlock(&t->writer);
	return removed ? 0 : -ENOENT;
}

/* Wait for every deferred free so far (no thread is in a section). */
static void ck_barrier(void)
{
	ck_epoch_barrier(&ck_writer_record);
}

static void ck_destroy(void *table)
{
	struct ck_table *t = table;
	ck_ht_iterator_t it = CK_HT_ITERATOR_INITIALIZER;
	ck_ht_entry_t *entry;

	ck_barrier();
	while (ck_ht_next(&t->ht, &it, &entry))
		free((void *)ck_ht_entry_value_direct(entry));
	ck_ht_destroy(&t->ht);
	ck_barrier();
	pthread_mutex_destroy(&t->writer);
	free(t);
}

static uint64_t ck_count(void *table)
{
	struct ck_table *t = table;

	return ck_ht_count(&t->ht);
}

static void ck_for_each(void *table, void (*fn)(uint64_t key, void *arg),
                        void *arg)
{
	struct ck_table *t = table;
	ck_ht_iterator_t it = CK_HT_ITERATOR_INITIALIZER;
	ck_ht_entry_t *entry;

	while (ck_ht_next(&t->ht, &it, &entry))
		fn(ck_ht_entry_key_direct(entry) - 1, arg);
}

static const struct bench_table_ops ck_ops = {
	.object_size = sizeof(struct ck_obj),
	.create = ck_create,
	.destroy = ck_destroy,
	.thread_enter = ck_thread_enter,
	.thread_leave = ck_thread_leave,
	.insert = ck_insert,
	.alloc_object = ck_alloc_object,
	.insert_object = ck_insert_object,
	.free_object = bench_free_object,
	.remove = ck_remove,
	.barrier = ck_barrier,
	.count = ck_count,
	.for_each = ck_for_each,
};

/* The hash is computed inline, as relhash's lookup does; ck_ht_get_spmc()
 * is CK's (a call into libck). */
static inline enum bench_found ck_lookup(void *table, uint64_t key)
{
	struct ck_table *t = table;
	ck_ht_entry_t entry;
	ck_ht_hash_t h = { bench_hash(key) };
	uint64_t value = 0;
	bool found;

	ck_ht_entry_key_set_direct(&entry, key + 1);
	ck_epoch_begin(ck_record, NULL);
	found = ck_ht_get_spmc(&t->ht, h, &entry);
	if (found) {
		const struct ck_obj *obj =
			(const struct ck_obj *)ck_ht_entry_value_direct(&entry);

		/* Relaxed: ck_ht_get_spmc() ordered the entry's load before
		 * it (the value was written before the put published it);
		 * atomic only because a failed grace period races with the
		 * poison's store. */
		value = __atomic_load_n(&obj->value, __ATOMIC_RELAXED);
	}
	ck_epoch_end(ck_record, NULL);
	return found ? bench_check_value(value, key) : BENCH_MISSING;
}

static void *ck_worker(void *w)
{
	bench_worker_loop(w, ck_lookup, bench_no_quiescent_state);
	return NULL;
}

const struct bench_backend bench_ck_backend = {
	.name = "ck-ht",
	.description = "Concurrency Kit " BENCH_CK_VERSION " ck_ht: SPMC, "
	               "writers behind a mutex, ck_epoch reclamation",
	.ops = &ck_ops,
	.worker = ck_worker,
	.cannot_run = bench_cannot_shrink,
};
