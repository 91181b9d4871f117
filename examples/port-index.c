/*
 * examples/port-index.c - connections indexed by destination port, a key
 * that many connections share.
 *
 * Shows: RELHASH_DUPLICATES (any number of objects per key), walking one
 * key's objects with relhash_lookup() and relhash_lookup_next() inside one
 * read-side section, and removing one particular connection of a port with
 * relhash_remove() while a thread keeps opening and closing others, and
 * the table grows and shrinks (RELHASH_AUTO_RESIZE).
 *
 * Port 443 has 1,000 long-lived connections; a churn thread opens and
 * closes short-lived ones on ports 80 and 443.  Every walk of port 443
 * must see all 1,000 long-lived ones exactly once, and only port 443.
 * Exits 1 otherwise.
 */
#include <pthread.h>
#include <relhash.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#define LONG_LIVED 1000
#define CHURN 20000

struct conn {
	uint16_t dport;    /* the key: shared by many connections */
	bool long_lived;
	int fd;
	struct relhash_node node;
};

static const struct relhash_params params = {
	.node_offset = offsetof(struct conn, node),
	.key_offset = offsetof(struct conn, dport),
	.key_len = sizeof(uint16_t),
	.flags = RELHASH_DUPLICATES | RELHASH_AUTO_RESIZE,
};

static struct relhash_table *by_port;
static _Atomic bool done;

static struct conn *open_conn(uint16_t dport, int fd, bool long_lived)
{
	struct conn *c = calloc(1, sizeof(*c));

	if (!c)
		abort();
	c->dport = dport;
	c->fd = fd;
	c->long_lived = long_lived;
	/* Never -EEXIST: the port may have any number of connections. */
	if (relhash_insert(by_port, &c->node) != 0)
		abort();
	return c;
}

/* Open short-lived connections, and close each soon after. */
static void *churn(void *arg)
{
	struct conn *recent[64] = { NULL };

	(void)arg;
	for (int i = 0; i < CHURN; i++) {
		struct conn **slot = &recent[i % 64];

		if (*slot && relhash_remove(by_port, &(*slot)->node) == 0)
			relhash_defer_free(*slot); /* readers may still see it */
		*slot = open_conn(i & 1 ? 80 : 443, 10000 + i, false);
	}
	for (int i = 0; i < 64; i++)
		if (recent[i] && relhash_remove(by_port, &recent[i]->node) == 0)
			relhash_defer_free(recent[i]);
	done = true;
	return NULL;
}

/* Count port 443's connections; false if a walk went wrong. */
static bool walk_443(void)
{
	uint16_t port = 443;
	int long_lived = 0;
	bool ok = true;

	relhash_read_lock();
	for (struct conn *c = relhash_lookup_fast(by_port, &port, params); c;
	     c = relhash_lookup_next(by_port, c)) {
		ok &= c->dport == 443;
		long_lived += c->long_lived;
	}
	relhash_read_unlock();
	return ok && long_lived == LONG_LIVED;
}

int main(void)
{
	static struct conn *keep[LONG_LIVED];
	unsigned long walks = 0;
	pthread_t tid;
	bool ok = true;

	by_port = relhash_create(&params);
	if (!by_port)
		return 1;
	for (int i = 0; i < LONG_LIVED; i++)
		keep[i] = open_conn(443, i, true);
	if (pthread_create(&tid, NULL, churn, NULL) != 0)
		return 1;
	while (!done) {
		ok &= walk_443();
		walks++;
	}
	pthread_join(tid, NULL);

	/* Close one particular long-lived connection of port 443. */
	if (relhash_remove(by_port, &keep[7]->node) != 0)
		ok = false;
	relhash_defer_free(keep[7]);
	printf("%lu walks of port 443 while %d connections came and went; "
	       "%zu connections left\n", walks, CHURN, relhash_count(by_port));
	ok &= relhash_count(by_port) == LONG_LIVED - 1;
	relhash_barrier();
	relhash_destroy(by_port, NULL, NULL);
	for (int i = 0; i < LONG_LIVED; i++)
		if (i != 7)
			free(keep[i]);
	return ok ? 0 : 1;
}
