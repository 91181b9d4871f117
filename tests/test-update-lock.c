/*
 * tests/test-update-lock.c - the update lock of a family excludes, and
 * wakes those who sleep on it (src/base/lock.h, doc/DESIGN.md "Families and
 * locks").
 *
 * A table of one bucket has one family and one lock.  Four threads per CPU
 * (holders are preempted with waiters spinning and sleeping, as in a
 * server's thread pool) insert and remove keys of a small set at random.
 * The test keeps, per key, which thread's object the table should hold:
 * an insertion that succeeds claims the key, and must find it unclaimed;
 * only the claimant removes it, after giving up the claim, and the removal
 * must find the object.  Two holders at once would link two objects of one
 * key or lose one of two links made at the same place; a release that
 * forgets a sleeper leaves it asleep, and the join's time limit fails the
 * test (a lost wake that a later waiter's wake repairs goes unseen).  At
 * the end the table must hold exactly the claimed objects.  The test
 * cannot see whether a thread slept; that some do is shown by negative
 * control 24 below, which hangs only then.  Under TSan (make check in a
 * TSan build) it also checks the lock's memory order: the objects' fields
 * are plain.
 *
 * Catches (tests/negative-controls.sh): a take that loads, then stores
 * (RH_BUG_LOCK_TEST_THEN_SET), and a release that stores 0 without looking
 * for sleepers (RH_BUG_LOCK_STORE_RELEASE).
 *
 * Environment: RELHASH_TORTURE_MS (run time, default 1000).
 */
#include "common.h"

#include <relhash.h>

#define THREADS_PER_CPU 4u
#define NKEYS 16u
#define HANG_MS 20000u

struct lobj {
	uint64_t key;
	struct relhash_node node;
};

static const struct relhash_params params = {
	.node_offset = offsetof(struct lobj, node),
	.key_offset = offsetof(struct lobj, key),
	.key_len = 8,
	.max_size = 1,
};

struct shared {
	struct relhash_table *t;
	unsigned ms;
	struct lobj *claimed[NKEYS]; /* the object the table should hold */
};

struct worker {
	struct shared *sh;
	unsigned id;
	pthread_t tid;
	uint64_t ops;
};

static void remove_claimed(struct shared *sh, unsigned id, unsigned k,
                           struct lobj *o)
{
	int ret;

	/* Give up the claim first: from here on another thread's insertion
	 * may succeed as soon as ours is undone. */
	tst_store(&sh->claimed[k], NULL);
	ret = relhash_remove(sh->t, &o->node);
	TST_THREAD_CHECK(ret == 0, "thread %u: removing its key %u: %d", id, k,
	                 ret);
	if (ret == 0)
		relhash_defer(free, o);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct shared *sh = w->sh;
	struct lobj *mine[NKEYS] = { NULL };
	uint64_t rng = 0x9e3779b97f4a7c15ull * (w->id + 1);
	uint64_t t0 = tst_now_ns();

	while (tst_ms_since(t0) < sh->ms && !tst_load(&tst_failures.count)) {
		unsigned k = (unsigned)(tst_rand(&rng) % NKEYS);
		struct lobj *o, *expected = NULL;
		int ret;

		w->ops++;
		if (mine[k]) {
			remove_claimed(sh, w->id, k, mine[k]);
			mine[k] = NULL;
			continue;
		}
		o = calloc(1, sizeof(*o));
		TST_THREAD_CHECK(o, "out of memory");
		if (!o)
			return NULL;
		o->key = k;
		ret = relhash_insert(sh->t, &o->node);
		if (ret == 0) {
			TST_THREAD_CHECK(__atomic_compare_exchange_n(
			                 &sh->claimed[k], &expected, o, false,
			                 __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST),
			                 "thread %u inserted key %u, which %p "
			                 "already held", w->id, k, (void *)expected);
			mine[k] = o;
		} else {
			TST_THREAD_CHECK(ret == -EEXIST, "thread %u: inserting "
			                 "key %u: %d", w->id, k, ret);
			free(o);
		}
	}
	return NULL;
}

START_TEST(one_family_many_threads)
{
	struct shared sh = { .ms = tst_env_unsigned("RELHASH_TORTURE_MS", 1000) };
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned n = THREADS_PER_CPU * (unsigned)(cpus > 2 ? cpus : 2), i, k;
	struct worker *w = calloc(n, sizeof(*w));
	uint64_t ops = 0;
	size_t held = 0;

	ck_assert_ptr_nonnull(w);
	sh.t = relhash_create(&params);
	ck_assert_ptr_nonnull(sh.t);
	for (i = 0; i < n; i++) {
		w[i].sh = &sh;
		w[i].id = i;
		tst_thread_start(&w[i].tid, worker_main, &w[i]);
	}
	for (i = 0; i < n; i++) {
		TST_JOIN(w[i].tid, sh.ms + HANG_MS,
		         "thread %u still waits: a sleeper was not woken", i);
		ops += w[i].ops;
	}
	tst_assert_no_thread_failures();
	relhash_read_lock();
	for (k = 0; k < NKEYS; k++) {
		uint64_t key = k;

		ck_assert_ptr_eq(relhash_lookup(sh.t, &key), sh.claimed[k]);
		held += sh.claimed[k] != NULL;
	}
	relhash_read_unlock();
	ck_assert_uint_eq(relhash_count(sh.t), held);
	printf("one_family_many_threads: %u threads, %llu updates\n", n,
	       (unsigned long long)ops);
	relhash_destroy(sh.t, tst_free_obj, NULL);
	relhash_barrier();
	free(w);
}
END_TEST

int main(void)
{
	const TTest *tests[] = { one_family_many_threads };
	/* The run, the join's limit, and room for a slow sanitizer build. */
	double limit_s = tst_env_unsigned("RELHASH_TORTURE_MS", 1000) / 1e3 +
	                 HANG_MS / 1e3 + 30;

	return tst_run_tests("update-lock", limit_s, tests, TST_COUNT(tests));
}
