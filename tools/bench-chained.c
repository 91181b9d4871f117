/*
 * bench-chained.c - the simplest peers: a chained hash table (same hash,
 * same cached-hash-then-key comparison as relhash) behind one
 * pthread_rwlock, and the same table with no synchronization at all.
 *
 * "rwlock": lookups take the read lock; updates and resizes take the write
 * lock, and a resize rehashes every object into a new bucket array while
 * holding it.  The lock prefers writers, or continuous readers would starve
 * the resizer.  With --resize=auto the table grows past 75 % load and
 * shrinks under 30 % (relhash's thresholds) inside the update that crossed
 * the threshold.
 *
 * "unsync": the lookups of the rwlock table without the lock: the floor
 * that no synchronized table can beat.  Read-only workloads, or updates
 * with one thread: updates, populating and verifying still go through the
 * (then uncontended) lock, and free at once.
 */
#define _GNU_SOURCE 1 /* pthread_rwlockattr_setkind_np */
#include "bench.h"

#include <errno.h>
#include <stdlib.h>

struct chain_obj {
	struct chain_obj *next;
	uint64_t hash;
	uint64_t key;
	uint64_t value;
};

struct chain_table {
	pthread_rwlock_t lock;
	struct chain_obj **heads;
	size_t mask;  /* buckets - 1 */
	uint64_t count;
	size_t min_size;
	bool auto_resize;
};

static void *chain_create(const struct bench_config *cfg)
{
	struct chain_table *t = calloc(1, sizeof(*t));
	pthread_rwlockattr_t attr;

	if (!t)
		return NULL;
	t->heads = calloc(cfg->nbuckets, sizeof(*t->heads));
	if (!t->heads) {
		free(t);
		return NULL;
	}
	t->mask = cfg->nbuckets - 1;
	t->min_size = BENCH_WIDE_MIN;
	t->auto_resize = bench_auto_resize(cfg->resize);
	pthread_rwlockattr_init(&attr);
#ifdef __GLIBC__
	pthread_rwlockattr_setkind_np(&attr,
		PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
#endif
	pthread_rwlock_init(&t->lock, &attr);
	pthread_rwlockattr_destroy(&attr);
	return t;
}

static void chain_destroy(void *table)
{
	struct chain_table *t = table;
	size_t i;

	for (i = 0; i <= t->mask; i++) {
		struct chain_obj *obj = t->heads[i], *next;

		for (; obj; obj = next) {
			next = obj->next;
			free(obj);
		}
	}
	pthread_rwlock_destroy(&t->lock);
	free(t->heads);
	free(t);
}

static inline struct chain_obj *chain_find(const struct chain_table *t,
                                           uint64_t key, uint64_t hash)
{
	struct chain_obj *obj;

	for (obj = t->heads[hash & t->mask]; obj; obj = obj->next)
		if (obj->hash == hash && obj->key == key)
			return obj;
	return NULL;
}

/* Move every object into a new array of nbuckets heads.  Write-locked. */
static int chain_rehash(struct chain_table *t, size_t nbuckets)
{
	struct chain_obj **heads = calloc(nbuckets, sizeof(*heads));
	size_t i;

	if (!heads)
		return -ENOMEM;
	for (i = 0; i <= t->mask; i++) {
		struct chain_obj *obj = t->heads[i], *next;

		for (; obj; obj = next) {
			struct chain_obj **head = &heads[obj->hash & (nbuckets - 1)];

			next = obj->next;
			obj->next = *head;
			*head = obj;
		}
	}
	free(t->heads);
	t->heads = heads;
	t->mask = nbuckets - 1;
	return 0;
}

/* --resize=auto, after an update.  Write-locked.  A failed allocation
 * leaves the table as it is, which is still correct. */
static void chain_auto_resize(struct chain_table *t)
{
	size_t size = t->mask + 1;

	if (!t->auto_resize)
		return;
	if (t->count * 4 > size * 3)
		chain_rehash(t, size * 2);
	else if (size > t->min_size && t->count * 10 < size * 3)
		chain_rehash(t, size / 2);
}

static void *chain_alloc_object(uint64_t key)
{
	return BENCH_NEW_OBJECT(struct chain_obj, key);
}

/* Hashing is the table's work: here, not in chain_alloc_object(). */
static int chain_insert_object(void *table, void *object)
{
	struct chain_table *t = table;
	struct chain_obj *obj = object;
	uint64_t key = obj->key, hash = bench_hash(key);
	int err = 0;

	obj->hash = hash;
	pthread_rwlock_wrlock(&t->lock);
	if (chain_find(t, key, hash)) {
		err = -EEXIST;
	} else {
		struct chain_obj **head = &t->heads[hash & t->mask];

		obj->next = *head;
		*head = obj;
		t->count++;
		chain_auto_resize(t);
	}
	pthread_rwlock_unlock(&t->lock);
	return err;
}

static int chain_insert(void *table, uint64_t key)
{
	return bench_insert_new(table, key, chain_alloc_object,
	                        chain_insert_object, bench_free_object);
}

static int chain_remove(void *table, uint64_t key)
{
	struct chain_table *t = table;
	uint64_t hash = bench_hash(key);
	struct chain_obj **link, *obj = NULL;

	pthread_rwlock_wrlock(&t->lock);
	for (link = &t->heads[hash & t->mask]; *link; link = &(*link)->next) {
		if ((*link)->hash == hash && (*link)->key == key) {
			obj = *link;
			*link = obj->next;
			t->count--;
			chain_auto_resize(t);
			break;
		}
	}
	pthread_rwlock_unlock(&t->lock);
	/* Readers hold the read lock while they use an object: no grace
	 * period is needed. */
	free(obj);
	return obj ? 0 : -ENOENT;
}

static int chain_resize(void *table, size_t nbuckets)
{
	struct chain_table *t = table;
	int err;

	pthread_rwlock_wrlock(&t->lock);
	err = chain_rehash(t, nbuckets);
	pthread_rwlock_unlock(&t->lock);
	return err;
}

static uint64_t chain_count(void *table)
{
	struct chain_table *t = table;
	uint64_t count;

	pthread_rwlock_rdlock(&t->lock);
	count = t->count;
	pthread_rwlock_unlock(&t->lock);
	return count;
}

static size_t chain_nbuckets(void *table)
{
	struct chain_table *t = table;
	size_t n;

	pthread_rwlock_rdlock(&t->lock);
	n = t->mask + 1;
	pthread_rwlock_unlock(&t->lock);
	return n;
}

static void chain_for_each(void *table, void (*fn)(uint64_t key, void *arg),
                           void *arg)
{
	struct chain_table *t = table;
	size_t i;

	pthread_rwlock_rdlock(&t->lock);
	for (i = 0; i <= t->mask; i++) {
		const struct chain_obj *obj;

		for (obj = t->heads[i]; obj; obj = obj->next)
			fn(obj->key, arg);
	}
	pthread_rwlock_unlock(&t->lock);
}

static const struct bench_table_ops chain_ops = {
	.object_size = sizeof(struct chain_obj),
	.create = chain_create,
	.destroy = chain_destroy,
	.insert = chain_insert,
	.alloc_object = chain_alloc_object,
	.insert_object = chain_insert_object,
	.free_object = bench_free_object,
	.remove = chain_remove,
	.resize = chain_resize,
	.count = chain_count,
	.for_each = chain_for_each,
	.nbuckets = chain_nbuckets,
};

static inline enum bench_found chain_lookup_unlocked(void *table, uint64_t key)
{
	const struct chain_obj *obj = chain_find(table, key, bench_hash(key));

	return obj ? bench_check_value(obj->value, key) : BENCH_MISSING;
}

static inline enum bench_found chain_lookup_locked(void *table, uint64_t key)
{
	struct chain_table *t = table;
	enum bench_found found;

	pthread_rwlock_rdlock(&t->lock);
	found = chain_lookup_unlocked(t, key);
	pthread_rwlock_unlock(&t->lock);
	return found;
}

static void *chain_worker_locked(void *w)
{
	bench_worker_loop(w, chain_lookup_locked, bench_no_quiescent_state);
	return NULL;
}

static void *chain_worker_unlocked(void *w)
{
	bench_worker_loop(w, chain_lookup_unlocked, bench_no_quiescent_state);
	return NULL;
}

const struct bench_backend bench_rwlock_backend = {
	.name = "rwlock",
	.description = "chained table behind a pthread_rwlock",
	.ops = &chain_ops,
	.worker = chain_worker_locked,
};

const struct bench_backend bench_unsync_backend = {
	.name = "unsync",
	.description = "the same chained table unsynchronized (the floor)",
	.ops = &chain_ops,
	.worker = chain_worker_unlocked,
	.unsynchronized = true,
};
