/*
 * examples/conn-table.c - a table of network connections keyed by their
 * address tuple, which sizes itself as connections come and go.
 *
 * Shows: a struct key compared with memcmp (its padding zeroed, since
 * memcmp compares every byte); RELHASH_AUTO_RESIZE, under which the table
 * grows while two threads open 100,000 connections and shrinks back to
 * min_size after they close them, with no thread ever waiting for a
 * resize; lookups that find every open connection while the table
 * resizes.
 *
 * Exits 1 if a connection is not found, if the table did not grow to keep
 * its load at most 75 %, or did not shrink back after the connections
 * closed (within 10 s).
 */
#include <pthread.h>
#include <relhash.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define NTHREADS 2
#define PER_THREAD 50000

struct conn_key {
	uint32_t saddr, daddr;
	uint16_t sport, dport;
	uint8_t proto;
	uint8_t pad[3];        /* explicit, and zero: the key is 16 bytes */
};

struct conn {
	struct conn_key key;
	struct relhash_node node;
	/* ... and whatever a connection needs */
};

static const struct relhash_params params = {
	.node_offset = offsetof(struct conn, node),
	.key_offset = offsetof(struct conn, key),
	.key_len = sizeof(struct conn_key),
	.min_size = 64,  /* do not shrink below the size it starts with */
	.flags = RELHASH_AUTO_RESIZE,
};

static struct relhash_table *conns;
static bool failed;

static struct conn_key tuple(unsigned thread, unsigned i)
{
	struct conn_key k = { 0 }; /* zeroes the padding too */

	k.saddr = 0x0a000000u | thread; /* 10.0.0.thread */
	k.daddr = 0xc0a80001u;          /* 192.168.0.1 */
	k.sport = (uint16_t)(1024 + i); /* i < 50,000 */
	k.dport = 443;
	k.proto = 6;
	return k;
}

static bool is_open(const struct conn_key *k)
{
	bool found;

	relhash_read_lock();
	found = relhash_lookup_fast(conns, k, params) != NULL;
	relhash_read_unlock();
	return found;
}

static void fail(const char *what)
{
	fprintf(stderr, "conn-table: %s\n", what);
	__atomic_store_n(&failed, true, __ATOMIC_RELAXED);
}

/* Each thread owns PER_THREAD connections. */
static struct conn *open_conns[NTHREADS][PER_THREAD];

static void *open_all(void *arg)
{
	unsigned thread = (unsigned)(uintptr_t)arg, i;

	for (i = 0; i < PER_THREAD; i++) {
		struct conn *c = calloc(1, sizeof(*c));

		if (!c) {
			fail("out of memory");
			break;
		}
		c->key = tuple(thread, i);
		if (relhash_insert(conns, &c->node) != 0) {
			fail("not inserted");
			free(c);
			break;
		}
		open_conns[thread][i] = c;
		/* The other thread's insertions resize the table meanwhile. */
		if (!is_open(&c->key))
			fail("not found after opening");
	}
	return NULL;
}

static void *close_all(void *arg)
{
	unsigned thread = (unsigned)(uintptr_t)arg, i;

	for (i = 0; i < PER_THREAD && open_conns[thread][i]; i++) {
		struct conn *c = open_conns[thread][i];

		if (!is_open(&c->key))
			fail("not found before closing");
		if (relhash_remove(conns, &c->node) != 0)
			fail("not removed");
		relhash_defer_free(c); /* a reader may still hold it */
	}
	return NULL;
}

static void run_threads(void *(*fn)(void *))
{
	pthread_t th[NTHREADS];
	unsigned i;

	for (i = 0; i < NTHREADS; i++)
		if (pthread_create(&th[i], NULL, fn, (void *)(uintptr_t)i) != 0)
			fail("no thread");
	for (i = 0; i < NTHREADS; i++)
		pthread_join(th[i], NULL);
}

/* Resizes run on a library thread: wait up to 10 s for the one due. */
static size_t settle(bool (*settled)(size_t count, size_t size))
{
	struct timespec ms = { 0, 1000000 };
	int i;

	for (i = 0; i < 10000; i++) {
		if (settled(relhash_count(conns), relhash_size(conns)))
			break;
		nanosleep(&ms, NULL);
	}
	return relhash_size(conns);
}

static bool load_at_most_75(size_t count, size_t size)
{
	return count * 4 <= size * 3;
}

static bool at_min_size(size_t count, size_t size)
{
	(void)count;
	return size == params.min_size;
}

int main(void)
{
	struct relhash_table_stats st = { .size = sizeof(st) };
	size_t start, grown, shrunk;

	conns = relhash_create(&params);
	if (!conns)
		return 1;
	start = relhash_size(conns);
	run_threads(open_all);
	grown = settle(load_at_most_75);
	printf("conn-table: %zu connections open in %zu buckets "
	       "(%zu at the start)\n", relhash_count(conns), grown, start);
	if (relhash_count(conns) != NTHREADS * PER_THREAD ||
	    !load_at_most_75(relhash_count(conns), grown))
		fail("the table did not grow to a load under 75 %");

	run_threads(close_all);
	shrunk = settle(at_min_size);
	relhash_table_stats(conns, &st);
	printf("conn-table: all closed: %zu buckets after %llu resizes\n",
	       shrunk, (unsigned long long)st.resizes);
	if (shrunk != params.min_size)
		fail("the table did not shrink back to min_size");

	relhash_destroy(conns, NULL, NULL);
	relhash_barrier(); /* run the pending frees before exiting */
	return failed ? 1 : 0;
}
