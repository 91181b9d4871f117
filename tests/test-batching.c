/*
 * tests/test-batching.c - the callback thread batches grace periods
 * (doc/DESIGN.md, "Batching grace periods").
 *
 * Checks: callbacks that trickle in share grace periods (about one per
 * batching delay, not one per callback); a barrier does not wait out the
 * delay; a writer far over a small callback limit is not held up by it
 * either, nor are callbacks announced past three quarters of the limit
 * (doc/DESIGN.md, "Announcing full batches"); every callback runs.
 *
 * Catches (tests/negative-controls.sh): a callback thread that does not
 * batch (RH_BUG_NO_BATCHING), a barrier that leaves its marker to the
 * delay (RH_BUG_LAZY_BARRIER), announcements that do not end the delay
 * (RH_BUG_NO_EARLY_WAKE).
 */
#include "common.h"

#include <relhash.h>

#define DELAY_MS 10        /* src/engine/callbacks.c BATCH_DELAY_MS */
#define TRICKLE_CALLS 2000
#define TRICKLE_GAP_US 100
#define BARRIERS 30
#define FLOOD_LIMIT 100
#define FLOOD_CALLS 20000
#define MARK_LIMIT 150     /* three quarters: 113 */
#define MARK_CALLS 120     /* two announcements; not over the limit */
#define MARK_TRIES 30

static uint64_t runs;

static void count_run(void *arg)
{
	(void)arg;
	tst_inc(&runs);
}

static uint64_t grace_periods(void)
{
	struct relhash_epoch_stats st = { .size = sizeof(st) };

	relhash_epoch_stats(&st);
	return st.grace_periods;
}

/* Start the callback thread and let it go idle. */
static void settle(void)
{
	relhash_defer(count_run, NULL);
	ck_assert_int_eq(relhash_barrier(), 0);
}

/*
 * One callback every 100 us for 2000 calls: a callback thread that runs a
 * cycle whenever work arrives uses up to one grace period per callback;
 * batching, one per delay.  Twice that rate is allowed for scheduling noise
 * (the work may arrive just after a cycle took the queue).
 */
START_TEST(trickle_shares_grace_periods)
{
	uint64_t gp0, gps, t0, runs0;
	double ms;
	unsigned i, allowed;

	relhash_set_callback_limit(0);
	settle();
	runs0 = tst_load(&runs);
	gp0 = grace_periods();
	t0 = tst_now_ns();
	for (i = 0; i < TRICKLE_CALLS; i++) {
		relhash_defer(count_run, NULL);
		tst_sleep_us(TRICKLE_GAP_US);
	}
	ms = tst_ms_since(t0);
	TST_ASSERT_WAIT(tst_load(&runs) - runs0 == TRICKLE_CALLS, 5000,
	                "only %llu of %u callbacks ran within 5 s",
	                (unsigned long long)(tst_load(&runs) - runs0),
	                TRICKLE_CALLS);
	gps = grace_periods() - gp0;
	allowed = 2 + (unsigned)(ms / (DELAY_MS / 2.0));
	ck_assert_msg(gps <= allowed, "%u callbacks over %.0f ms used %llu "
	              "grace periods; batching allows at most %u",
	              TRICKLE_CALLS, ms, (unsigned long long)gps, allowed);
}
END_TEST

static int compare_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/*
 * 30 barriers, each after one callback: the median barrier takes well under
 * one delay (a lazy barrier takes at least one each time; the median, not
 * the sum, so that a few barriers slowed by a busy machine do not count).
 */
START_TEST(barrier_does_not_wait_out_the_delay)
{
	double ms[BARRIERS];
	unsigned i;

	settle();
	for (i = 0; i < BARRIERS; i++) {
		uint64_t before = tst_load(&runs), t0 = tst_now_ns();

		relhash_defer(count_run, NULL);
		ck_assert_int_eq(relhash_barrier(), 0);
		ms[i] = tst_ms_since(t0);
		ck_assert_msg(tst_load(&runs) == before + 1,
		              "the barrier returned before the callback ran");
	}
	qsort(ms, BARRIERS, sizeof(ms[0]), compare_double);
	ck_assert_msg(ms[BARRIERS / 2] < DELAY_MS / 2.0, "the median of %u "
	              "barriers took %.1f ms: they waited for the batching "
	              "delay", BARRIERS, ms[BARRIERS / 2]);
}
END_TEST

/*
 * With a limit of 100, every other announcement (60 callbacks, still in
 * the thread's batch) passes three quarters of it, and the grace periods
 * must follow one another without waiting out the delay: on average well
 * under one delay apart.
 */
START_TEST(small_limit_is_not_delayed)
{
	uint64_t t0, runs0, gp0, gps;
	double ms;
	unsigned i;

	settle();
	relhash_set_callback_limit(FLOOD_LIMIT);
	runs0 = tst_load(&runs);
	gp0 = grace_periods();
	t0 = tst_now_ns();
	for (i = 0; i < FLOOD_CALLS; i++)
		relhash_defer(count_run, NULL);
	ck_assert_int_eq(relhash_barrier(), 0);
	ms = tst_ms_since(t0);
	gps = grace_periods() - gp0;
	relhash_set_callback_limit(0);
	ck_assert_msg(tst_load(&runs) - runs0 == FLOOD_CALLS,
	              "%llu of %u callbacks ran",
	              (unsigned long long)(tst_load(&runs) - runs0),
	              FLOOD_CALLS);
	ck_assert_msg(gps >= FLOOD_CALLS / (2 * FLOOD_LIMIT),
	              "%u callbacks under a limit of %u used only %llu grace "
	              "periods", FLOOD_CALLS, FLOOD_LIMIT,
	              (unsigned long long)gps);
	ck_assert_msg(ms / (double)gps < DELAY_MS / 2.0, "%u callbacks under a "
	              "limit of %u took %.0f ms for %llu grace periods",
	              FLOOD_CALLS, FLOOD_LIMIT, ms, (unsigned long long)gps);
}
END_TEST

/*
 * Announcements alone end the batching delay: 120 callbacks of one thread
 * under a limit of 150 (past three quarters of it with the second
 * announcement, never over it: no back-pressure, no barrier, nothing in
 * the queue) must run well within one delay.  The first one wakes the
 * callback thread, which is given 2 ms to begin its batching wait (were
 * it slower, it would find all 120 announced when it looks); the time
 * runs from the other 119.  The median of 30 tries.
 */
START_TEST(announcements_end_the_delay)
{
	double ms[MARK_TRIES];
	unsigned i, j;

	relhash_set_callback_limit(MARK_LIMIT);
	for (i = 0; i < MARK_TRIES; i++) {
		uint64_t t0, target;

		settle();
		target = tst_load(&runs) + MARK_CALLS;
		relhash_defer(count_run, NULL);
		tst_sleep_ms(2);
		t0 = tst_now_ns();
		for (j = 1; j < MARK_CALLS; j++)
			relhash_defer(count_run, NULL);
		TST_ASSERT_WAIT(tst_load(&runs) >= target, 5000,
		                "%u callbacks did not run within 5 s", MARK_CALLS);
		ms[i] = tst_ms_since(t0);
	}
	relhash_set_callback_limit(0);
	qsort(ms, MARK_TRIES, sizeof(ms[0]), compare_double);
	printf("announcements_end_the_delay: median %.2f ms, max %.2f ms\n",
	       ms[MARK_TRIES / 2], ms[MARK_TRIES - 1]);
	ck_assert_msg(ms[MARK_TRIES / 2] < DELAY_MS / 2.0, "%u callbacks past "
	              "three quarters of a limit of %u took %.1f ms to run "
	              "(median of %u): they waited out the batching delay",
	              MARK_CALLS, MARK_LIMIT, ms[MARK_TRIES / 2], MARK_TRIES);
}
END_TEST

int main(void)
{
	const TTest *tests[] = {
		trickle_shares_grace_periods,
		barrier_does_not_wait_out_the_delay,
		small_limit_is_not_delayed,
		announcements_end_the_delay,
	};

	return tst_run_tests("batching", 60, tests, TST_COUNT(tests));
}
