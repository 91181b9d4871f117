/*
 * examples/rcu-config.c - RCU-protected data of your own beside a table: a
 * configuration pointer that readers follow with no lock while a writer
 * swaps in new versions.
 *
 * Shows: the same read-side critical section protecting a table lookup and
 * the caller's own pointer; publishing with a release store and reading
 * with an acquire load (rcu_assign_pointer and rcu_dereference in
 * C11 terms); freeing the old version either after relhash_synchronize()
 * (the writer waits) or from a relhash_call() callback (it does not).
 * Each old version is poisoned just before it is freed, so a reader that
 * could still see it would notice.
 *
 * Exits 1 if a reader ever sees a poisoned or inconsistent configuration,
 * or misses the table entry.
 */
#include <pthread.h>
#include <relhash.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NREADERS 3
#define NVERSIONS 2000
#define POISON 0xdeadu

struct config {
	unsigned version;
	unsigned timeout_ms;      /* always version * 10 */
	struct relhash_head rcu;  /* for relhash_call() */
};

struct route {
	uint32_t dest;
	uint32_t port;
	struct relhash_node node;
};

static const struct relhash_params params = {
	.node_offset = offsetof(struct route, node),
	.key_offset = offsetof(struct route, dest),
	.key_len = sizeof(uint32_t),
};

static struct config *current;   /* the RCU-protected pointer */
static struct relhash_table *routes;
static unsigned started; /* readers running */
static bool done, failed;

static void *reader(void *arg)
{
	uint32_t dest = 7;
	unsigned long reads = 0;

	(void)arg;
	__atomic_add_fetch(&started, 1, __ATOMIC_RELAXED);
	while (!__atomic_load_n(&done, __ATOMIC_RELAXED)) {
		relhash_read_lock();
		/* Acquire: pairs with the writer's release store, so the
		 * fields of the version we see are initialised. */
		struct config *c = __atomic_load_n(&current, __ATOMIC_ACQUIRE);
		struct route *r = relhash_lookup_fast(routes, &dest, params);
		bool ok = c->version != POISON &&
		          c->timeout_ms == c->version * 10 && r && r->port == 53;
		relhash_read_unlock();
		if (!ok)
			__atomic_store_n(&failed, true, __ATOMIC_RELAXED);
		reads++;
	}
	return (void *)reads;
}

static void poison_and_free(struct config *c)
{
	c->version = c->timeout_ms = POISON;
	free(c);
}

static void free_config_cb(struct relhash_head *head)
{
	poison_and_free((struct config *)((char *)head -
	                                  offsetof(struct config, rcu)));
}

/* Publish version v; returns the version it replaced. */
static struct config *publish(unsigned v)
{
	struct config *c = calloc(1, sizeof(*c));

	if (!c)
		abort();
	c->version = v;
	c->timeout_ms = v * 10;
	/* Release: readers that load c see the stores above. */
	return __atomic_exchange_n(&current, c, __ATOMIC_ACQ_REL);
}

int main(void)
{
	static struct route dns = { .dest = 7, .port = 53 };
	pthread_t th[NREADERS];
	unsigned long reads = 0;
	unsigned v, i;

	routes = relhash_create(&params);
	if (!routes || relhash_insert(routes, &dns.node) != 0)
		return 1;
	publish(1);
	for (i = 0; i < NREADERS; i++)
		if (pthread_create(&th[i], NULL, reader, NULL) != 0)
			return 1;
	while (__atomic_load_n(&started, __ATOMIC_RELAXED) < NREADERS)
		; /* updates while every reader runs */

	for (v = 2; v <= NVERSIONS; v++) {
		struct config *old = publish(v);

		if (v % 2) {
			/* Wait until no reader can hold old, then free it. */
			if (relhash_synchronize() != 0)
				return 1;
			poison_and_free(old);
		} else {
			/* Let the library free it after a grace period. */
			relhash_call(&old->rcu, free_config_cb);
		}
	}
	__atomic_store_n(&done, true, __ATOMIC_RELAXED);
	for (i = 0; i < NREADERS; i++) {
		void *n;

		pthread_join(th[i], &n);
		reads += (unsigned long)n;
	}

	relhash_barrier(); /* every callback has run */
	free(current);
	relhash_destroy(routes, NULL, NULL);
	printf("rcu-config: %d versions published, half freed after "
	       "relhash_synchronize(), half by relhash_call(); %lu reads: %s\n",
	       NVERSIONS, reads,
	       failed ? "FAILED" : "no reader saw a freed or torn version");
	return failed ? 1 : 0;
}
