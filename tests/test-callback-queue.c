/*
 * tests/test-callback-queue.c - queueing callbacks without a lock while
 * collectors take the batches (doc/DESIGN.md, "Queueing without a lock").
 *
 * Checks, in both grace-period modes: threads that queue as fast as they
 * can (relhash_call() and relhash_defer() mixed, so that blocks open and
 * close), while another thread collects every batch over and over
 * (relhash_barrier()) and the callback thread runs its cycles, lose no
 * callback, run none twice, run each thread's in the order it queued them,
 * and leave the statistics consistent (queued = run, nothing pending after
 * a barrier).  The queuing threads exit with partly filled batches, whose
 * callbacks must run too.
 *
 * And that callbacks queued by threads that then stay idle run by
 * themselves, with no barrier, exit or full batch to push them
 * (idle_callbacks_run_by_themselves).
 *
 * Catches (tests/negative-controls.sh, with race widening): a collector
 * that takes a batch without waiting for the owner's open window
 * (RH_BUG_COLLECT_NO_WAIT), an owner that appends without looking at the
 * collector's mark (RH_BUG_APPEND_IGNORES_MARK), a first callback of a
 * batch that does not tell the callback thread (RH_BUG_NO_NOTIFY).
 *
 * Runs RELHASH_TORTURE_MS (default 1000) per mode.
 */
#include "common.h"

#include <relhash.h>

/* Four queuing threads per CPU on the 2-CPU CI machine: owners are
 * preempted inside their windows, as in a server's thread pool. */
#define QUEUERS 8
#define HANG_MS 20000
#define LIVE 0x5eed5eed5eed5eedull

struct item {
	struct relhash_head head;
	uint64_t live;     /* LIVE until its callback ran */
	unsigned thread;
	uint64_t seq;
};

/* Per queuing thread: how many it queued, and the next sequence number its
 * callbacks must see. */
static struct {
	uint64_t queued;
	uint64_t next;
} per[QUEUERS];
static uint64_t errors;
static bool stop;

/* Runs on the callback thread; reports the first few errors. */
static void item_ran(struct item *it)
{
	uint64_t expected;

	if (it->live != LIVE || it->thread >= QUEUERS) {
		if (tst_inc(&errors) <= 3)
			fprintf(stderr, "a callback ran on a dead item\n");
		return;
	}
	expected = tst_load(&per[it->thread].next);
	if (it->seq != expected && tst_inc(&errors) <= 3)
		fprintf(stderr, "thread %u: callback #%llu ran where #%llu was "
		        "due\n", it->thread, (unsigned long long)it->seq,
		        (unsigned long long)expected);
	tst_store(&per[it->thread].next, it->seq + 1);
	tst_poison(it, sizeof(*it));
	free(it);
}

static void call_ran(struct relhash_head *h)
{
	item_ran((struct item *)(void *)h);
}

static void defer_ran(void *p)
{
	item_ran(p);
}

/* Item i: runs of relhash_defer() (filling and closing blocks) alternate
 * with runs of relhash_call() (each of which closes the open block). */
static bool deferred(uint64_t i)
{
	return i % 97 < 70;
}

static void *queuer(void *arg)
{
	unsigned id = (unsigned)(uintptr_t)arg;
	uint64_t i;

	for (i = 0; !tst_load(&stop); i++) {
		struct item *it = malloc(sizeof(*it));

		TST_THREAD_CHECK(it, "out of memory");
		if (!it)
			break;
		*it = (struct item){ .live = LIVE, .thread = id, .seq = i };
		if (deferred(i))
			relhash_defer(defer_ran, it);
		else
			relhash_call(&it->head, call_ran);
	}
	tst_store(&per[id].queued, i);
	/* Exits with a partly filled batch, most of the time. */
	return NULL;
}

/* Collects every thread's batch, over and over. */
static void *collector(void *arg)
{
	(void)arg;
	while (!tst_load(&stop))
		TST_THREAD_CHECK(relhash_barrier() == 0, "barrier refused");
	return NULL;
}

START_TEST(queueing_races_collection)
{
	unsigned ms = tst_env_unsigned("RELHASH_TORTURE_MS", 1000);
	struct relhash_epoch_stats st0 = { .size = sizeof(st0) };
	struct relhash_epoch_stats st = { .size = sizeof(st) };
	pthread_t q[QUEUERS], c;
	uint64_t total = 0;
	unsigned i;

	relhash_epoch_stats(&st0);
	for (i = 0; i < QUEUERS; i++)
		tst_thread_start(&q[i], queuer, (void *)(uintptr_t)i);
	tst_thread_start(&c, collector, NULL);
	tst_sleep_ms(ms);
	tst_store(&stop, true);
	for (i = 0; i < QUEUERS; i++)
		TST_JOIN(q[i], HANG_MS, "queuing thread %u did not stop", i);
	TST_JOIN(c, HANG_MS, "the collecting thread did not stop");
	ck_assert_int_eq(relhash_barrier(), 0);
	tst_assert_no_thread_failures();

	ck_assert_msg(tst_load(&errors) == 0, "%llu callbacks ran out of "
	              "order, twice or on freed items",
	              (unsigned long long)tst_load(&errors));
	for (i = 0; i < QUEUERS; i++) {
		ck_assert_msg(per[i].next == per[i].queued, "thread %u queued "
		              "%llu callbacks; after a barrier, %llu had run", i,
		              (unsigned long long)per[i].queued,
		              (unsigned long long)per[i].next);
		total += per[i].queued;
	}
	ck_assert_msg(total > 1000, "only %llu callbacks queued in %u ms",
	              (unsigned long long)total, ms);
	relhash_epoch_stats(&st);
	ck_assert_uint_eq(st.callbacks_queued - st0.callbacks_queued, total);
	ck_assert_uint_eq(st.callbacks_run - st0.callbacks_run, total);
	ck_assert_uint_eq(st.callbacks_pending, 0);
}
END_TEST

/*
 * Idle threads: no barrier, no exit, no full batch.  Each round, every
 * thread queues a few callbacks (fewer than a batch, so nothing is
 * announced), in two halves a few milliseconds apart (so the second half often
 * arrives while a cycle runs), then sits idle; the callbacks must run by
 * themselves.  Only the first callback of a batch tells the callback thread
 * (asleep, or busy with a cycle that may miss the batch): a lost
 * notification leaves them queued until some later work.
 */
#define IDLE_ROUNDS 20
#define IDLE_PER_ROUND 6
#define IDLE_WAIT_MS 5000

static unsigned idle_round;    /* the round the threads may queue for */
static uint64_t idle_queued, idle_ran;
static bool idle_done;

static void idle_call_ran(struct relhash_head *h)
{
	free(h);
	tst_inc(&idle_ran);
}

static void idle_defer_ran(void *p)
{
	free(p);
	tst_inc(&idle_ran);
}

static void idle_queue(unsigned n, uint64_t i)
{
	for (; n; n--, i++) {
		struct relhash_head *h = malloc(sizeof(*h));

		TST_THREAD_CHECK(h, "out of memory");
		if (!h)
			return;
		tst_inc(&idle_queued);
		if (i % 2)
			relhash_defer(idle_defer_ran, h);
		else
			relhash_call(h, idle_call_ran);
	}
}

static void *idle_queuer(void *arg)
{
	unsigned id = (unsigned)(uintptr_t)arg, round;

	for (round = 1; round <= IDLE_ROUNDS; round++) {
		while (tst_load(&idle_round) < round)
			tst_sleep_us(200);
		idle_queue(IDLE_PER_ROUND / 2, round);
		tst_sleep_ms((round + id) % 4 * 4);
		idle_queue(IDLE_PER_ROUND - IDLE_PER_ROUND / 2, round);
	}
	/* Alive and idle: an exit would hand the batch off. */
	while (!tst_load(&idle_done))
		tst_sleep_ms(1);
	return NULL;
}

START_TEST(idle_callbacks_run_by_themselves)
{
	pthread_t q[QUEUERS];
	uint64_t want;
	unsigned i, round;

	for (i = 0; i < QUEUERS; i++)
		tst_thread_start(&q[i], idle_queuer, (void *)(uintptr_t)i);
	for (round = 1; round <= IDLE_ROUNDS; round++) {
		want = (uint64_t)round * QUEUERS * IDLE_PER_ROUND;
		tst_store(&idle_round, round);
		TST_ASSERT_WAIT(tst_load(&idle_ran) == want, IDLE_WAIT_MS,
		                "round %u: %llu of %llu callbacks queued by "
		                "idle threads ran within %u ms", round,
		                (unsigned long long)tst_load(&idle_ran),
		                (unsigned long long)want, IDLE_WAIT_MS);
	}
	tst_store(&idle_done, true);
	for (i = 0; i < QUEUERS; i++)
		TST_JOIN(q[i], HANG_MS, "idle thread %u did not stop", i);
	tst_assert_no_thread_failures();
	ck_assert_uint_eq(tst_load(&idle_queued), tst_load(&idle_ran));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("callback-queue");
	TCase *mb = tcase_create("membarrier"), *fence = tcase_create("fence");
	SRunner *sr;

	tcase_set_timeout(mb, 120);
	tcase_add_checked_fixture(mb, tst_setup_membarrier, NULL);
	tcase_add_test(mb, queueing_races_collection);
	tcase_add_test(mb, idle_callbacks_run_by_themselves);
	suite_add_tcase(s, mb);
	sr = srunner_create(s);
	/* The fence fallback needs a fresh process per test: the library
	 * picks its mode on first use (tests/common.h). */
	if (srunner_fork_status(sr) == CK_FORK) {
		tcase_set_timeout(fence, 120);
		tcase_add_checked_fixture(fence, tst_setup_fence, NULL);
		tcase_add_test(fence, queueing_races_collection);
		tcase_add_test(fence, idle_callbacks_run_by_themselves);
		suite_add_tcase(s, fence);
	}
	return tst_run(sr);
}
