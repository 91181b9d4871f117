/*
 * tests/test-gp-poll.c - polled grace periods.
 *
 * A cookie from relhash_gp_get_state() or relhash_gp_start_poll() is done
 * once a full grace period has elapsed after the call:
 * - never early: a reader that entered its section before the cookie was
 *   taken, and is still inside, keeps the cookie not done, however many
 *   grace periods other threads try to run meanwhile (they wait for the
 *   reader too); once it leaves, the cookie becomes done;
 * - eventually: after relhash_gp_start_poll() with no other activity in the
 *   process (no synchronize, no callbacks), the cookie becomes done;
 * - relhash_gp_cond_synchronize() returns 0 at once for a done cookie (also
 *   inside a section), -EDEADLK for a pending one inside a section, and
 *   otherwise waits until the cookie is done;
 * - relhash_gp_poll_state() is cheap: the test prints ns per call.
 *
 * Every test runs in both grace-period modes.  The deliberate bug
 * RH_BUG_POLL_EARLY (a cookie naming the current epoch) must fail
 * never_early (tests/negative-controls.sh).
 */
#include "common.h"

#include <relhash.h>

#define HANG_MS 10000u

static void *synchronizer_main(void *arg)
{
	int *calls = arg;

	(void)relhash_synchronize();
	tst_inc(calls);
	return NULL;
}

START_TEST(never_early)
{
	struct tst_section_holder h;
	pthread_t sync_tid;
	int synced = 0;
	uint64_t got, polled, t0;
	unsigned i;

	/* Some grace periods first, so that the last completed one is the
	 * current epoch. */
	for (i = 0; i < 3; i++)
		ck_assert_int_eq(relhash_synchronize(), 0);
	tst_section_holder_start(&h);
	got = relhash_gp_get_state();
	polled = relhash_gp_start_poll();
	ck_assert_msg(!relhash_gp_poll_state(got) && !relhash_gp_poll_state(polled),
	              "[%s] a cookie is done at once with a reader inside",
	              tst_mode_name);
	/* Another thread runs a grace period: it must wait for the reader,
	 * and so must our cookies, while the callback thread's grace period
	 * (from start_poll) runs too. */
	tst_thread_start(&sync_tid, synchronizer_main, &synced);
	t0 = tst_now_ns();
	while (tst_ms_since(t0) < 200) {
		ck_assert_msg(!relhash_gp_poll_state(got) &&
		              !relhash_gp_poll_state(polled),
		              "[%s] cookie done after %.1f ms with a reader "
		              "inside since before it was taken", tst_mode_name,
		              tst_ms_since(t0));
		ck_assert_int_eq(tst_load(&synced), 0);
		tst_sleep_us(500);
	}
	tst_section_holder_stop(&h);
	TST_JOIN(sync_tid, HANG_MS, "synchronize did not return");
	TST_ASSERT_WAIT(relhash_gp_poll_state(got) && relhash_gp_poll_state(polled),
	                HANG_MS, "[%s] cookies not done after the reader left "
	                "and a grace period ran", tst_mode_name);
}
END_TEST

/* Inside a section that began before the cookie: cond_synchronize cannot
 * wait (-EDEADLK), and the cookie is not done (our own section holds it
 * up). */
START_TEST(cond_synchronize_rules)
{
	uint64_t c, t0;
	double ms;

	relhash_read_lock();
	c = relhash_gp_start_poll();
	ck_assert_int_eq(relhash_gp_cond_synchronize(c), -EDEADLK);
	tst_sleep_ms(50);
	ck_assert_msg(!relhash_gp_poll_state(c), "[%s] done with our own "
	              "section still open", tst_mode_name);
	relhash_read_unlock();

	/* Outside: waits until done. */
	ck_assert_int_eq(relhash_gp_cond_synchronize(c), 0);
	ck_assert(relhash_gp_poll_state(c));

	/* A done cookie: at once, inside a section too, without a grace
	 * period. */
	relhash_read_lock();
	t0 = tst_now_ns();
	for (int i = 0; i < 1000; i++)
		ck_assert_int_eq(relhash_gp_cond_synchronize(c), 0);
	ms = tst_ms_since(t0);
	relhash_read_unlock();
	ck_assert_msg(ms < 100, "1000 cond_synchronize of a done cookie took "
	              "%.1f ms", ms);

	/* A fresh cookie outside any section: cond_synchronize waits for
	 * its grace period, and afterwards it is done. */
	c = relhash_gp_get_state();
	ck_assert_int_eq(relhash_gp_cond_synchronize(c), 0);
	ck_assert(relhash_gp_poll_state(c));
}
END_TEST

/* start_poll alone, with nothing else going on, gets the cookie done. */
START_TEST(start_poll_completes)
{
	struct relhash_epoch_stats before = { .size = sizeof(before) };
	struct relhash_epoch_stats after = { .size = sizeof(after) };
	uint64_t got = relhash_gp_get_state(), c;

	relhash_epoch_stats(&before);
	c = relhash_gp_start_poll();
	TST_ASSERT_WAIT(relhash_gp_poll_state(c), HANG_MS, "[%s] cookie from "
	                "relhash_gp_start_poll() not done after %u ms",
	                tst_mode_name, HANG_MS);
	/* An earlier cookie is done too. */
	ck_assert(relhash_gp_poll_state(got));
	relhash_epoch_stats(&after);
	ck_assert_uint_gt(after.grace_periods, before.grace_periods);

	/* A cookie from get_state alone starts nothing: it stays pending
	 * until someone runs a grace period. */
	c = relhash_gp_get_state();
	tst_sleep_ms(20);
	ck_assert(!relhash_gp_poll_state(c));
	ck_assert_int_eq(relhash_synchronize(), 0);
	ck_assert(relhash_gp_poll_state(c));
}
END_TEST

/* The cost of polling, reported, against that of taking a cookie (one
 * atomic read-modify-write) in the same run: a loose bound that catches a
 * lock or a system call in the poll, whatever the machine's speed (under
 * an emulator, everything is ten times slower). */
START_TEST(poll_cost)
{
	enum { N = 2000000 };
	uint64_t c = relhash_gp_get_state(), t0, sum = 0;
	unsigned done = 0;
	double ns, ns_get;

	ck_assert_int_eq(relhash_synchronize(), 0);
	t0 = tst_now_ns();
	for (int i = 0; i < N; i++)
		done += relhash_gp_poll_state(c + (uint64_t)(i & 1));
	ns = (double)(tst_now_ns() - t0) / N;
	t0 = tst_now_ns();
	for (int i = 0; i < N; i++)
		sum += relhash_gp_get_state();
	ns_get = (double)(tst_now_ns() - t0) / N;
	printf("[%s] relhash_gp_poll_state: %.2f ns per call; "
	       "relhash_gp_get_state: %.2f ns\n", tst_mode_name, ns, ns_get);
	ck_assert_uint_eq(done, N);
	ck_assert_uint_ne(sum, 0);
	ck_assert_msg(ns < 4 * ns_get + 20, "poll_state costs %.1f ns, "
	              "get_state %.1f ns", ns, ns_get);
}
END_TEST

static Suite *gp_poll_suite(void)
{
	Suite *s = suite_create("gp-poll");
	const TTest *tests[] = {
		never_early,
		cond_synchronize_rules,
		start_poll_completes,
		poll_cost,
	};

	tst_add_mode_tcases(s, 60, tests, TST_COUNT(tests));
	return s;
}

int main(void)
{
	return tst_run(srunner_create(gp_poll_suite()));
}
