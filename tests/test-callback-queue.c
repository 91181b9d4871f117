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
 * Catches (tests/negative-controls.sh, with race widening): a collector
 * that takes a batch without waiting for the owner's open window
 * (RH_BUG_COLLECT_NO_WAIT), an owner that appends without looking at the
 * collector's mark (RH_BUG_APPEND_IGNORES_MARK).
 *
 * Runs RELHASH_TORTURE_MS (default 1000) per mode.
 */
#include "common.h"

#include <relhash.h>

#define QUEUERS 3
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
	struct relhash_epoch_stats st0, st;
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

int main(void)
{
	Suite *s = suite_create("callback-queue");
	TCase *mb = tcase_create("membarrier"), *fence = tcase_create("fence");
	SRunner *sr;

	tcase_set_timeout(mb, 120);
	tcase_add_checked_fixture(mb, tst_setup_membarrier, NULL);
	tcase_add_test(mb, queueing_races_collection);
	suite_add_tcase(s, mb);
	sr = srunner_create(s);
	/* The fence fallback needs a fresh process per test: the library
	 * picks its mode on first use (tests/common.h). */
	if (srunner_fork_status(sr) == CK_FORK) {
		tcase_set_timeout(fence, 120);
		tcase_add_checked_fixture(fence, tst_setup_fence, NULL);
		tcase_add_test(fence, queueing_races_collection);
		suite_add_tcase(s, fence);
	}
	return tst_run(sr);
}
