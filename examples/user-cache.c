/*
 * examples/user-cache.c - a cache of users keyed by name, read by several
 * threads while another thread keeps updating it.
 *
 * Shows: string keys (key_len 0 with hashfn, obj_hashfn and cmpfn);
 * lookups with relhash_lookup_fast() from four threads, with no lock;
 * updates by relhash_replace() of a changed copy, which readers see as the
 * old or the new user, never neither; and the old copies freed with
 * relhash_defer_free() once no reader can hold them.
 *
 * Exits 1 if a reader ever misses a user or sees one whose fields
 * disagree.
 */
#include <pthread.h>
#include <relhash.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NUSERS 1000
#define NREADERS 4
#define NUPDATES 100000

struct user {
	char name[32];          /* the key: a NUL-terminated string */
	unsigned visits;        /* changed by updates ... */
	unsigned visits_check;  /* ... always equal to visits */
	struct relhash_node node;
};

static uint64_t hash_name(const void *key, size_t len, uint64_t seed)
{
	(void)len; /* 0: custom keys */
	return relhash_hash(key, strlen(key), seed);
}

static uint64_t hash_user(const void *obj, uint64_t seed)
{
	return hash_name(((const struct user *)obj)->name, 0, seed);
}

static int cmp_user(const void *key, const void *obj)
{
	return strcmp(key, ((const struct user *)obj)->name);
}

static const struct relhash_params params = {
	.node_offset = offsetof(struct user, node),
	.key_offset = offsetof(struct user, name),
	.hashfn = hash_name,
	.obj_hashfn = hash_user,
	.cmpfn = cmp_user,
	.initial_size = 2048,
};

static struct relhash_table *users;
static unsigned started; /* readers running */
static bool done;     /* set by the writer when it has finished */
static bool failed;   /* set by a reader that saw something wrong */

static void *reader(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg, lookups = 0;
	char name[32];

	__atomic_add_fetch(&started, 1, __ATOMIC_RELAXED);
	while (!__atomic_load_n(&done, __ATOMIC_RELAXED)) {
		bool ok;

		snprintf(name, sizeof(name), "user%u", rand_r(&seed) % NUSERS);
		relhash_read_lock();
		struct user *u = relhash_lookup_fast(users, name, params);
		ok = u && u->visits == u->visits_check;
		relhash_read_unlock();
		if (!ok) {
			fprintf(stderr, "reader: %s missing or torn\n", name);
			__atomic_store_n(&failed, true, __ATOMIC_RELAXED);
		}
		lookups++;
	}
	return (void *)(uintptr_t)lookups;
}

/* The only writer: replace a user by an updated copy. */
static int visit(struct user **slot)
{
	struct user *old = *slot, *fresh = malloc(sizeof(*fresh));

	if (!fresh)
		return -1;
	*fresh = *old;
	fresh->visits = fresh->visits_check = old->visits + 1;
	if (relhash_replace(users, &old->node, &fresh->node) != 0) {
		free(fresh);
		return -1;
	}
	*slot = fresh;
	relhash_defer_free(old); /* readers may still be looking at it */
	return 0;
}

static void free_user(void *obj, void *arg)
{
	(void)arg;
	free(obj);
}

int main(void)
{
	static struct user *current[NUSERS];
	pthread_t readers[NREADERS];
	unsigned long lookups = 0;
	unsigned i;

	users = relhash_create(&params);
	if (!users)
		return 1;
	for (i = 0; i < NUSERS; i++) {
		current[i] = calloc(1, sizeof(struct user));
		if (!current[i])
			return 1;
		snprintf(current[i]->name, sizeof(current[i]->name), "user%u", i);
		if (relhash_insert(users, &current[i]->node) != 0)
			return 1;
	}
	for (i = 0; i < NREADERS; i++)
		if (pthread_create(&readers[i], NULL, reader,
		                   (void *)(uintptr_t)(i + 1)) != 0)
			return 1;
	while (__atomic_load_n(&started, __ATOMIC_RELAXED) < NREADERS)
		; /* updates while every reader runs */

	for (i = 0; i < NUPDATES; i++)
		if (visit(&current[(i * 7919u) % NUSERS]) != 0)
			__atomic_store_n(&failed, true, __ATOMIC_RELAXED);
	__atomic_store_n(&done, true, __ATOMIC_RELAXED);

	for (i = 0; i < NREADERS; i++) {
		void *n;

		pthread_join(readers[i], &n);
		lookups += (uintptr_t)n;
	}
	relhash_destroy(users, free_user, NULL);
	relhash_barrier(); /* run the pending frees before exiting */

	printf("user-cache: %d readers made %lu lookups during %d replacements: %s\n",
	       NREADERS, lookups, NUPDATES,
	       failed ? "FAILED" : "every user was always found, never torn");
	return failed ? 1 : 0;
}
