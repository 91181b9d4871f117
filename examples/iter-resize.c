/*
 * examples/iter-resize.c - walking a table while another thread resizes
 * it, back and forth between 8 and 65,536 buckets.
 *
 * Shows: relhash_iter_first()/relhash_iter_next() inside one read-side
 * critical section return every object that stays in the table exactly
 * once, even when a new bucket array is published, or chains are unzipped,
 * in the middle of the walk; and relhash_resize() going on meanwhile.
 *
 * Exits 1 if a walk misses an object or returns one twice, or if no walk
 * overlapped a resize within 10 s (then it would have shown nothing).
 */
#include <pthread.h>
#include <relhash.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define NOBJS 10000
#define WANTED_OVERLAPS 20

struct obj {
	uint32_t id;
	struct relhash_node node;
};

static const struct relhash_params params = {
	.node_offset = offsetof(struct obj, node),
	.key_offset = offsetof(struct obj, id),
	.key_len = sizeof(uint32_t),
	.max_size = 65536,
};

static struct relhash_table *table;
static bool stop;

static void *resizer(void *arg)
{
	size_t n = 65536;

	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		if (relhash_resize(table, n) != 0)
			return "relhash_resize failed";
		n = n == 8 ? 65536 : 8;
	}
	return NULL;
}

static uint64_t unzip_passes(void)
{
	struct relhash_table_stats st = { .size = sizeof(st) };

	relhash_table_stats(table, &st);
	return st.unzip_passes;
}

/* One walk; true if it saw each object once.  *overlapped: the table
 * changed under the walk (a new array, or an unzip pass). */
static bool walk_once(bool *overlapped)
{
	static unsigned char seen[NOBJS];
	struct relhash_iter it;
	struct obj *o;
	size_t size_before, size_after;
	uint64_t passes_before;
	bool ok = true;
	unsigned i;

	memset(seen, 0, sizeof(seen));
	relhash_read_lock();
	size_before = relhash_size(table);
	passes_before = unzip_passes();
	for (o = relhash_iter_first(table, &it); o; o = relhash_iter_next(&it))
		seen[o->id]++;
	size_after = relhash_size(table);
	*overlapped = size_after != size_before || unzip_passes() != passes_before;
	relhash_read_unlock();

	for (i = 0; i < NOBJS; i++)
		if (seen[i] != 1) {
			fprintf(stderr, "iter-resize: object %u seen %u times\n",
			        i, seen[i]);
			ok = false;
		}
	return ok;
}

int main(void)
{
	static struct obj objs[NOBJS];
	struct timespec t0, now;
	unsigned i, walks = 0, overlaps = 0;
	pthread_t th;
	void *res;
	bool ok = true;

	table = relhash_create(&params);
	if (!table)
		return 1;
	for (i = 0; i < NOBJS; i++) {
		objs[i].id = i;
		if (relhash_insert(table, &objs[i].node) != 0)
			return 1;
	}
	if (pthread_create(&th, NULL, resizer, NULL) != 0)
		return 1;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		bool overlapped;

		ok = walk_once(&overlapped) && ok;
		walks++;
		overlaps += overlapped;
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (overlaps < WANTED_OVERLAPS && now.tv_sec - t0.tv_sec < 10);

	__atomic_store_n(&stop, true, __ATOMIC_RELAXED);
	pthread_join(th, &res);
	relhash_destroy(table, NULL, NULL);

	printf("iter-resize: %u walks of %d objects, %u of them while the "
	       "table changed under them: %s\n", walks, NOBJS, overlaps,
	       ok ? "every object seen exactly once in every walk"
	          : "FAILED");
	if (res)
		fprintf(stderr, "iter-resize: %s\n", (const char *)res);
	return ok && overlaps > 0 && !res ? 0 : 1;
}
