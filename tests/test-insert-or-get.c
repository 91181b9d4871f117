/*
 * tests/test-insert-or-get.c - relhash_insert_or_get() is one atomic step.
 *
 * race_exactly_once: racer threads go through the same fresh keys in the
 * same order, round after round, each with objects of its own, while a
 * resizer thread resizes the table all the time.  After each round: every
 * key was inserted by exactly one racer, every other racer got -EEXIST with
 * the winner's object, and the table holds the winner.  The winners are
 * then removed and freed with poison after a grace period.
 *
 * existing_outlives_removal: racers call insert_or_get on random keys
 * while a remover takes objects out and frees them with poison after a
 * grace period (and a resizer runs).  A racer that gets -EEXIST holds the
 * object it got until its read-side section ends, re-checking it: it must
 * never be poisoned and must have the key asked for.
 *
 * Plus the refused calls and the NULL existing pointer.  The deliberate bug
 * RH_BUG_GET_SPLIT (lookup, then insert) must fail race_exactly_once
 * (tests/negative-controls.sh).
 *
 * Environment: RELHASH_GET_MS (run time per test, default 600).
 */
#include "common.h"

#include <relhash.h>

#define HANG_MS 20000u
#define NRACERS 3u
#define NKEYS 256u
#define MAGIC 0x6f722d676574ull

struct gobj {
	uint64_t key;
	struct relhash_node node;
	uint64_t magic;
};

static const struct relhash_params params = {
	.node_offset = offsetof(struct gobj, node),
	.key_offset = offsetof(struct gobj, key),
	.key_len = 8,
	.min_size = 4,
};

static struct gobj *gobj_new(uint64_t key)
{
	struct gobj *o = calloc(1, sizeof(*o));

	ck_assert(o);
	o->key = key;
	o->magic = MAGIC;
	return o;
}

static void poison_free(void *p)
{
	tst_poison(p, sizeof(struct gobj));
	free(p);
}

static bool gobj_live(const struct gobj *o, uint64_t key)
{
	return o->magic == MAGIC && o->key == key;
}

/* ---------------------------------------------------------------------- */
/* A resizer, for both tests                                               */

struct resizer {
	struct relhash_table *t;
	int stop;
	uint64_t resizes;
};

static void *resizer_main(void *arg)
{
	static const size_t seq[] = { 64, 4, 1024, 16, 4096, 8, 256, 32 };
	struct resizer *rz = arg;
	unsigned k = 0;

	while (!tst_load(&rz->stop) && !tst_load(&tst_failures.count)) {
		size_t n = seq[k++ % (sizeof(seq) / sizeof(seq[0]))];
		int r = relhash_resize(rz->t, n);

		TST_THREAD_CHECK(r == 0, "resize to %zu: %d", n, r);
		tst_inc(&rz->resizes);
	}
	return NULL;
}

/* ---------------------------------------------------------------------- */
/* Exactly one winner per key                                              */

struct round_state {
	struct relhash_table *t;
	struct tst_barrier start, end;
	int stop;
	uint64_t first_key;           /* this round's keys: first_key + i */
	int ret[NRACERS][NKEYS];
	struct gobj *mine[NRACERS][NKEYS];
	void *got[NRACERS][NKEYS];    /* own object, or *existing */
};

struct racer {
	struct round_state *rs;
	unsigned id;
	pthread_t tid;
};

static void *racer_main(void *arg)
{
	struct racer *r = arg;
	struct round_state *rs = r->rs;

	for (;;) {
		unsigned i;

		if (!tst_barrier_wait(&rs->start, HANG_MS)) {
			TST_THREAD_CHECK(false, "racer %u: start barrier", r->id);
			return NULL;
		}
		if (tst_load(&rs->stop))
			return NULL;
		for (i = 0; i < NKEYS; i++) {
			/* Odd racers go backwards half the time, so that
			 * they meet the others mid-way too. */
			unsigned k = (r->id & 1) && (rs->first_key & NKEYS)
			             ? NKEYS - 1 - i : i;
			struct gobj *o = gobj_new(rs->first_key + k);
			void *existing = NULL;

			relhash_read_lock();
			rs->ret[r->id][k] = relhash_insert_or_get(rs->t, &o->node,
			                                          &existing);
			if (rs->ret[r->id][k] == 0) {
				rs->got[r->id][k] = o;
			} else {
				/* Still inside the section: it must be live. */
				TST_THREAD_CHECK(existing &&
				                 gobj_live(existing, o->key),
				                 "racer %u, key %llu: -EEXIST "
				                 "with object %p", r->id,
				                 (unsigned long long)o->key,
				                 existing);
				rs->got[r->id][k] = existing;
			}
			relhash_read_unlock();
			rs->mine[r->id][k] = o;
		}
		if (!tst_barrier_wait(&rs->end, HANG_MS)) {
			TST_THREAD_CHECK(false, "racer %u: end barrier", r->id);
			return NULL;
		}
	}
}

/* After a round: one winner per key, every loser got it, the table has
 * it.  Removes the winners (freed with poison after a grace period) and
 * frees the losers' objects, which were never in the table. */
static void check_round(struct round_state *rs, unsigned round)
{
	unsigned k, i;

	for (k = 0; k < NKEYS; k++) {
		unsigned winners = 0;
		struct gobj *w = NULL;

		for (i = 0; i < NRACERS; i++)
			if (rs->ret[i][k] == 0) {
				winners++;
				w = rs->mine[i][k];
			} else {
				ck_assert_msg(rs->ret[i][k] == -EEXIST,
				              "round %u key %u racer %u: %d", round,
				              k, i, rs->ret[i][k]);
			}
		ck_assert_msg(winners == 1, "round %u, key %u: %u racers "
		              "inserted it", round, k, winners);
		for (i = 0; i < NRACERS; i++)
			ck_assert_msg(rs->got[i][k] == w, "round %u, key %u: "
			              "racer %u got %p, the winner's is %p", round,
			              k, i, rs->got[i][k], (void *)w);
		relhash_read_lock();
		ck_assert_ptr_eq(relhash_lookup(rs->t, &w->key), w);
		relhash_read_unlock();
		ck_assert_int_eq(relhash_remove(rs->t, &w->node), 0);
		relhash_defer(poison_free, w);
		for (i = 0; i < NRACERS; i++)
			if (rs->mine[i][k] != w)
				free(rs->mine[i][k]);
	}
}

START_TEST(race_exactly_once)
{
	static struct round_state rs;
	struct racer racers[NRACERS];
	struct resizer rz = { 0 };
	pthread_t rzt;
	unsigned i, round = 0;
	unsigned ms = tst_env_unsigned("RELHASH_GET_MS", 600);
	uint64_t t0 = tst_now_ns();

	memset(&rs, 0, sizeof(rs));
	rs.t = relhash_create(&params);
	ck_assert(rs.t);
	tst_barrier_init(&rs.start, NRACERS + 1);
	tst_barrier_init(&rs.end, NRACERS + 1);
	rz.t = rs.t;
	tst_thread_start(&rzt, resizer_main, &rz);
	for (i = 0; i < NRACERS; i++) {
		racers[i].rs = &rs;
		racers[i].id = i;
		tst_thread_start(&racers[i].tid, racer_main, &racers[i]);
	}
	while (tst_ms_since(t0) < ms && !tst_load(&tst_failures.count)) {
		rs.first_key = (uint64_t)round * NKEYS + 1;
		ck_assert(tst_barrier_wait(&rs.start, HANG_MS));
		ck_assert(tst_barrier_wait(&rs.end, HANG_MS));
		tst_assert_no_thread_failures();
		check_round(&rs, round++);
	}
	tst_store(&rs.stop, 1);
	ck_assert(tst_barrier_wait(&rs.start, HANG_MS));
	tst_store(&rz.stop, 1);
	for (i = 0; i < NRACERS; i++)
		TST_JOIN(racers[i].tid, HANG_MS, "racer %u did not stop", i);
	TST_JOIN(rzt, HANG_MS, "resizer did not stop");
	tst_assert_no_thread_failures();
	printf("race_exactly_once: %u rounds of %u keys x %u racers, %llu "
	       "resizes\n", round, NKEYS, NRACERS,
	       (unsigned long long)tst_load(&rz.resizes));
	ck_assert_uint_gt(round, 0);
	ck_assert_uint_eq(relhash_count(rs.t), 0);
	ck_assert_int_eq(relhash_barrier(), 0);
	relhash_destroy(rs.t, tst_free_obj, NULL);
}
END_TEST

/* ---------------------------------------------------------------------- */
/* What a loser got stays valid while its section lasts                    */

#define NHOT 64u

struct churn {
	struct relhash_table *t;
	int stop;
	uint64_t holds, inserts, removals;
};

static void *getter_main(void *arg)
{
	struct churn *c = arg;
	uint64_t rng = tst_now_ns() | 1;

	while (!tst_load(&c->stop) && !tst_load(&tst_failures.count)) {
		uint64_t key = tst_rand(&rng) % NHOT + 1;
		struct gobj *o = gobj_new(key);
		void *existing = NULL;
		unsigned spin;
		int r;

		relhash_read_lock();
		r = relhash_insert_or_get(c->t, &o->node, &existing);
		TST_THREAD_CHECK(r != -EEXIST || existing,
		                 "key %llu: -EEXIST without an object",
		                 (unsigned long long)key);
		if (r == -EEXIST && existing) {
			/* Hold it for a while, as a caller would use it;
			 * the remover frees it after a grace period only. */
			for (spin = 0; spin < 200; spin++) {
				TST_THREAD_CHECK(gobj_live(existing, key),
				                 "key %llu: object %p got from "
				                 "relhash_insert_or_get was freed "
				                 "inside the section",
				                 (unsigned long long)key, existing);
				if (spin % 50 == 0)
					sched_yield();
			}
			tst_inc(&c->holds);
		}
		relhash_read_unlock();
		if (r == -EEXIST)
			free(o); /* never in the table */
		else
			tst_inc(&c->inserts);
		TST_THREAD_CHECK(r == 0 || r == -EEXIST, "insert_or_get: %d", r);
	}
	return NULL;
}

static void *remover_main(void *arg)
{
	struct churn *c = arg;
	uint64_t rng = 0x5eed;

	while (!tst_load(&c->stop) && !tst_load(&tst_failures.count)) {
		uint64_t key = tst_rand(&rng) % NHOT + 1;
		struct gobj *o;

		relhash_read_lock();
		o = relhash_lookup(c->t, &key);
		/* Only this thread removes, so o stays in the table until
		 * the removal below, and it is ours afterwards. */
		relhash_read_unlock();
		if (o && relhash_remove(c->t, &o->node) == 0) {
			relhash_defer(poison_free, o);
			tst_inc(&c->removals);
		}
	}
	return NULL;
}

START_TEST(existing_outlives_removal)
{
	struct churn c = { 0 };
	struct resizer rz = { 0 };
	pthread_t getters[2], rem, rzt;
	unsigned i, ms = tst_env_unsigned("RELHASH_GET_MS", 600);

	c.t = relhash_create(&params);
	ck_assert(c.t);
	rz.t = c.t;
	tst_thread_start(&rzt, resizer_main, &rz);
	tst_thread_start(&rem, remover_main, &c);
	for (i = 0; i < 2; i++)
		tst_thread_start(&getters[i], getter_main, &c);
	tst_sleep_ms(ms);
	tst_store(&c.stop, 1);
	tst_store(&rz.stop, 1);
	for (i = 0; i < 2; i++)
		TST_JOIN(getters[i], HANG_MS, "getter %u did not stop", i);
	TST_JOIN(rem, HANG_MS, "remover did not stop");
	TST_JOIN(rzt, HANG_MS, "resizer did not stop");
	tst_assert_no_thread_failures();
	printf("existing_outlives_removal: %llu objects held, %llu inserted, "
	       "%llu removed and freed, %llu resizes\n",
	       (unsigned long long)c.holds, (unsigned long long)c.inserts,
	       (unsigned long long)c.removals,
	       (unsigned long long)tst_load(&rz.resizes));
	ck_assert_uint_gt(c.holds, 0);
	ck_assert_uint_gt(c.removals, 0);
	ck_assert_int_eq(relhash_barrier(), 0);
	relhash_destroy(c.t, tst_free_obj, NULL);
}
END_TEST

/* ---------------------------------------------------------------------- */
/* Single-threaded semantics                                               */

START_TEST(semantics)
{
	struct relhash_table *t = relhash_create(&params);
	struct gobj a = { .key = 7, .magic = MAGIC };
	struct gobj b = { .key = 7, .magic = MAGIC };
	void *existing = &b;

	ck_assert(t);
	ck_assert_int_eq(relhash_insert_or_get(NULL, &a.node, &existing), -EINVAL);
	ck_assert_int_eq(relhash_insert_or_get(t, NULL, &existing), -EINVAL);
	ck_assert_ptr_eq(existing, &b); /* refused: unchanged */
	ck_assert_int_eq(relhash_insert_or_get(t, &a.node, &existing), 0);
	ck_assert_ptr_eq(existing, &b); /* inserted: not written */
	relhash_read_lock();
	ck_assert_int_eq(relhash_insert_or_get(t, &b.node, &existing), -EEXIST);
	ck_assert_ptr_eq(existing, &a);
	/* Without existing: -EEXIST all the same. */
	ck_assert_int_eq(relhash_insert_or_get(t, &b.node, NULL), -EEXIST);
	ck_assert_ptr_eq(relhash_lookup(t, &b.key), &a);
	relhash_read_unlock();
	ck_assert_uint_eq(relhash_count(t), 1);
	/* The same node again: -EEXIST, and it is its own existing object. */
	relhash_read_lock();
	ck_assert_int_eq(relhash_insert_or_get(t, &a.node, &existing), -EEXIST);
	ck_assert_ptr_eq(existing, &a);
	relhash_read_unlock();
	ck_assert_int_eq(relhash_remove(t, &a.node), 0);
	ck_assert_int_eq(relhash_synchronize(), 0);
	ck_assert_int_eq(relhash_insert_or_get(t, &b.node, NULL), 0);
	relhash_read_lock();
	ck_assert_ptr_eq(relhash_lookup(t, &a.key), &b);
	relhash_read_unlock();
	relhash_destroy(t, NULL, NULL);
}
END_TEST

static Suite *insert_or_get_suite(void)
{
	Suite *s = suite_create("insert-or-get");
	const TTest *tests[] = {
		semantics,
		race_exactly_once,
		existing_outlives_removal,
	};
	TCase *tc = tst_add_tcase(s, "insert-or-get", 120, tests,
	                          TST_COUNT(tests));

	tcase_add_checked_fixture(tc, tst_setup_membarrier, NULL);
	return s;
}

int main(void)
{
	return tst_run(srunner_create(insert_or_get_suite()));
}
