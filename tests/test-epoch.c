/*
 * tests/test-epoch.c - unit tests of the grace-period engine
 * (<relhash/epoch.h>): read-side sections, relhash_synchronize(),
 * relhash_call(), relhash_defer_free(), relhash_barrier(), registration,
 * back-pressure and stall warnings.
 *
 * Every test runs twice: in tcase "membarrier" (the default mode; expected
 * whenever the kernel offers MEMBARRIER_CMD_PRIVATE_EXPEDITED) and in tcase
 * "fence", whose fixture sets RELHASH_NO_MEMBARRIER=1 before the library's
 * first use.  That works because Check runs each test in a fresh child
 * process (CK_FORK, the default) and the library picks its mode on first use
 * in a process; the fixture asserts the mode really is the expected one.
 * With CK_FORK=no only the membarrier tcase runs.
 *
 * Timing: every wait is bounded (TST_WAIT_FOR, timed joins).  A blocked
 * relhash_synchronize() or relhash_barrier() runs in a helper thread, so a
 * hang becomes a failure that names what did not return.  Assertions about
 * "this did not happen yet" use waits of 100-300 ms, and readers that must
 * stay inside are released by the test, never by a timer, except as a
 * safety bound (then the test fails, saying so).
 *
 * Each test says what bug it catches.  They were checked against library
 * builds with one deliberate bug each (no wait, off-by-one epoch compare,
 * sharing an in-flight grace period, callbacks without a grace period,
 * batches dropped at exit or unregister, a barrier that does not collect
 * batches, no or too much back-pressure, LIFO batches, no futex wake,
 * repeated stall warnings, nesting ignored at unlock, no grace-period
 * sharing): every one makes at least one test here fail.  Memory-ordering
 * bugs (a missing fence on the read side or in place of membarrier) are
 * beyond these tests, and beyond 5-second torture runs on 2 CPUs too: they
 * need a model checker or litmus tests.
 */
#include "common.h"

#include <signal.h>
#include <stdatomic.h>
#include <sys/syscall.h>

#include <relhash/epoch.h>

/* Longest any helper may take before the test gives up on it. */
#define HANG_MS 5000u

static pid_t gettid_(void)
{
	return (pid_t)syscall(SYS_gettid);
}

static struct relhash_epoch_stats stats_now(void)
{
	struct relhash_epoch_stats s = { .size = sizeof(s) };

	relhash_epoch_stats(&s);
	return s;
}

/* ---------------------------------------------------------------------- */
/* Modes and fixtures                                                      */

/*
 * The fixtures are common.h's, plus a check of the byte the inline read-side
 * fast path takes the mode from (test-epoch tests that ABI; the torture test
 * does not need to).
 */
static void assert_reader_mode(void)
{
#ifndef RELHASH_NO_INLINE
	/* The inline fast path takes its branch from this byte (ABI). */
	ck_assert_msg(relhash__self.mode == (tst_expected_membarrier ?
	                                     RELHASH__MODE_MEMBARRIER :
	                                     RELHASH__MODE_FENCE),
	              "%s mode: registered thread has reader mode %d",
	              tst_mode_name, relhash__self.mode);
#endif
}

static void setup_membarrier(void)
{
	tst_setup_membarrier();
	assert_reader_mode();
}

static void setup_fence(void)
{
	tst_setup_fence();
	assert_reader_mode();
}

/* ---------------------------------------------------------------------- */
/* A reader thread that holds a section until told to leave                */

struct reader {
	pthread_t thr;
	/* Parameters. */
	unsigned depth;        /* read_lock nesting depth (>= 1) */
	unsigned pre_unlocks;  /* inner unlocks before announcing "inside" */
	unsigned post_unlocks; /* inner unlocks when release_inner is set */
	bool use_functions;    /* (relhash_read_lock)() etc., not the inline */
	unsigned max_ms;       /* safety bound on the stay (then: timed_out) */
	const void *watch;     /* optional: bytes to verify while inside... */
	size_t watch_len;
	unsigned char watch_byte; /* ...all equal to this */
	unsigned watch_after_ms;  /* wait this long inside before verifying */
	/* Set by the test. */
	int release_inner;
	int release;
	int exit;      /* may exit (until then it lingers, registered) */
	/* Set by the reader. */
	pid_t tid;
	int inside;
	int inner_left;
	int leaving;
	int left;
	int timed_out;
	int watch_ok;  /* 1 intact, -1 changed while inside */
	uint64_t t_leave;
};

static void r_lock(const struct reader *r)
{
	if (r->use_functions)
		(relhash_read_lock)();
	else
		relhash_read_lock();
}

static void r_unlock(const struct reader *r)
{
	if (r->use_functions)
		(relhash_read_unlock)();
	else
		relhash_read_unlock();
}

static bool r_ongoing(const struct reader *r)
{
	return r->use_functions ? (relhash_read_ongoing)()
	                        : relhash_read_ongoing();
}

static void *reader_main(void *arg)
{
	struct reader *r = arg;
	struct tst_deadline d = tst_deadline_ms(r->max_ms);
	unsigned held = r->depth;

	r->tid = gettid_();
	for (unsigned i = 0; i < r->depth; i++)
		r_lock(r);
	for (unsigned i = 0; i < r->pre_unlocks; i++, held--)
		r_unlock(r);
	TST_THREAD_CHECK(r_ongoing(r), "reader: read_ongoing() false at "
	                 "depth %u", held);
	tst_store(&r->inside, 1);

	if (r->watch) {
		const volatile unsigned char *p = r->watch;
		int ok = 1;

		tst_sleep_ms(r->watch_after_ms);
		for (size_t i = 0; i < r->watch_len; i++)
			if (p[i] != r->watch_byte)
				ok = -1;
		tst_store(&r->watch_ok, ok);
	}
	if (r->post_unlocks) {
		while (!tst_load(&r->release_inner) && !tst_load(&r->release) &&
		       !tst_expired(&d))
			tst_sleep_us(200);
		for (unsigned i = 0; i < r->post_unlocks; i++, held--)
			r_unlock(r);
		TST_THREAD_CHECK(r_ongoing(r), "reader: read_ongoing() false "
		                 "after leaving inner sections (depth %u)", held);
		tst_store(&r->inner_left, 1);
	}
	while (!tst_load(&r->release) && !tst_expired(&d))
		tst_sleep_us(200);
	if (!tst_load(&r->release))
		tst_store(&r->timed_out, 1);

	r->t_leave = tst_now_ns();
	tst_store(&r->leaving, 1);
	for (; held; held--)
		r_unlock(r);
	TST_THREAD_CHECK(!r_ongoing(r), "reader: read_ongoing() true after "
	                 "the outermost unlock");
	tst_store(&r->left, 1);
	/* Linger: a thread's exit (unregistration) could wake a waiting
	 * grace period and hide a missing wake-up from the unlock. */
	while (!tst_load(&r->exit) && !tst_expired(&d))
		tst_sleep_us(200);
	return NULL;
}

static void reader_start(struct reader *r)
{
	if (!r->depth)
		r->depth = 1;
	if (!r->max_ms)
		r->max_ms = HANG_MS;
	tst_thread_start(&r->thr, reader_main, r);
	TST_ASSERT_WAIT(tst_load(&r->inside), HANG_MS,
	                "reader thread did not enter its section");
}

static void reader_release(struct reader *r)
{
	tst_store(&r->release, 1);
}

static void reader_join(struct reader *r)
{
	reader_release(r);
	tst_store(&r->exit, 1);
	TST_JOIN(r->thr, HANG_MS, "reader thread did not finish");
	ck_assert_msg(!r->timed_out, "reader left its section on its safety "
	              "timeout (%u ms) instead of when the test released it: "
	              "the test ran too slowly to prove anything", r->max_ms);
}

/* ---------------------------------------------------------------------- */
/* A helper thread that calls relhash_synchronize() or relhash_barrier()   */

struct waiter {
	pthread_t thr;
	int (*fn)(void);
	int started;
	int done;
	int ret;
	uint64_t t_start, t_end;
	uint64_t count_at_return; /* cb_count right after fn returned */
};

static uint64_t cb_count;

static void *waiter_main(void *arg)
{
	struct waiter *w = arg;

	w->t_start = tst_now_ns();
	tst_store(&w->started, 1);
	w->ret = w->fn();
	w->count_at_return = tst_load(&cb_count);
	w->t_end = tst_now_ns();
	tst_store(&w->done, 1);
	return NULL;
}

static int do_synchronize(void)
{
	return relhash_synchronize();
}

static int do_barrier(void)
{
	return relhash_barrier();
}

static void waiter_start(struct waiter *w, int (*fn)(void))
{
	w->fn = fn;
	tst_thread_start(&w->thr, waiter_main, w);
	TST_ASSERT_WAIT(tst_load(&w->started), HANG_MS,
	                "helper thread did not start");
}

static void waiter_join(struct waiter *w, const char *what)
{
	TST_JOIN(w->thr, HANG_MS, "%s did not return within %u ms", what,
	         HANG_MS);
	ck_assert_msg(w->ret == 0, "%s returned %d", what, w->ret);
}

/*
 * relhash_barrier() from a helper thread, bounded.  Returns cb_count as the
 * helper saw it the moment the barrier returned (callbacks that a broken
 * barrier left behind may still be running).
 */
static uint64_t barrier_bounded(void)
{
	struct waiter w = { 0 };

	waiter_start(&w, do_barrier);
	waiter_join(&w, "relhash_barrier()");
	return w.count_at_return;
}

/* relhash_synchronize() from a helper thread, bounded. */
static void synchronize_bounded(void)
{
	struct waiter w = { 0 };

	waiter_start(&w, do_synchronize);
	waiter_join(&w, "relhash_synchronize()");
}

/* ---------------------------------------------------------------------- */
/* Counting callbacks                                                      */

static pid_t cb_last_tid;

static void count_cb(struct relhash_head *h)
{
	(void)h;
	tst_store(&cb_last_tid, gettid_());
	tst_inc(&cb_count);
}

/* Callback that frees a malloc'ed head. */
static void count_free_cb(struct relhash_head *h)
{
	tst_inc(&cb_count);
	free(h);
}

/* The same, slowly (2 ms): a barrier that returns too early shows. */
static void slow_count_free_cb(struct relhash_head *h)
{
	tst_sleep_ms(2);
	count_free_cb(h);
}

static void queue_counted_cb(unsigned n, void (*cb)(struct relhash_head *))
{
	for (unsigned i = 0; i < n; i++) {
		struct relhash_head *h = malloc(sizeof(*h));

		ck_assert_ptr_nonnull(h);
		relhash_call(h, cb);
	}
}

static void queue_counted(unsigned n)
{
	queue_counted_cb(n, count_free_cb);
}

/* ====================================================================== */
/* relhash_read_ongoing and nesting                                        */

START_TEST(read_ongoing_tracks_nesting)
{
	ck_assert_msg(!relhash_read_ongoing(), "ongoing before any lock");
	relhash_read_lock();
	ck_assert_msg(relhash_read_ongoing(), "not ongoing inside a section");
	relhash_read_lock();
	ck_assert_msg(relhash_read_ongoing(), "not ongoing at depth 2");
	relhash_read_unlock();
	ck_assert_msg(relhash_read_ongoing(),
	              "not ongoing after lock, lock, unlock (still at depth 1)");
	relhash_read_unlock();
	ck_assert_msg(!relhash_read_ongoing(), "ongoing after the last unlock");

	/* The exported functions and the inline paths share one state. */
	(relhash_read_lock)();
	ck_assert_msg(relhash_read_ongoing(),
	              "inline read_ongoing() false after (relhash_read_lock)()");
	ck_assert_msg((relhash_read_ongoing)(),
	              "(relhash_read_ongoing)() false inside a section");
	relhash_read_lock();
	(relhash_read_unlock)();
	ck_assert_msg((relhash_read_ongoing)(), "left too early when mixing "
	              "inline lock and exported unlock");
	relhash_read_unlock();
	ck_assert_msg(!(relhash_read_ongoing)() && !relhash_read_ongoing(),
	              "still ongoing after mixed inline/exported unlocks");

	/* Deep nesting. */
	for (int i = 0; i < 100; i++)
		relhash_read_lock();
	for (int i = 0; i < 99; i++)
		relhash_read_unlock();
	ck_assert_msg(relhash_read_ongoing(), "not ongoing at depth 1 of 100");
	relhash_read_unlock();
	ck_assert_msg(!relhash_read_ongoing(), "ongoing after 100 unlocks");

	/* The deepest nesting allowed (the depth has 15 bits). */
	for (int i = 0; i < 32767; i++)
		relhash_read_lock();
	ck_assert_msg(relhash_read_ongoing(), "not ongoing at depth 32,767");
	for (int i = 0; i < 32766; i++)
		relhash_read_unlock();
	ck_assert_msg(relhash_read_ongoing(), "not ongoing at depth 1 of 32,767");
	relhash_read_unlock();
	ck_assert_msg(!relhash_read_ongoing(), "ongoing after 32,767 unlocks");

	/* Nothing blocks a grace period now. */
	synchronize_bounded();
}
END_TEST

/*
 * One level deeper than the maximum aborts: the depth would carry into the
 * flag bit (or, in fence mode, into the epoch) and the reader would look
 * quiescent to grace periods while still inside.  An unlock without a lock
 * aborts too, rather than leaving a word that blocks every grace period.
 * Catches: a nested lock or unlock without its range check.
 */
START_TEST(nesting_too_deep_aborts)
{
	for (int i = 0; i < 32767; i++)
		relhash_read_lock();
	relhash_read_lock();
}
END_TEST

START_TEST(unlock_without_lock_aborts)
{
	relhash_read_lock();
	relhash_read_unlock();
	relhash_read_unlock();
}
END_TEST

/* ====================================================================== */
/* relhash_synchronize waits for every pre-existing reader                 */

/*
 * A reader enters (depth, then pre_unlocks inner unlocks: still inside),
 * then synchronize starts.  If post_unlocks, the reader leaves its inner
 * sections 100 ms later and stays in the outermost one.  Synchronize must
 * not return until the reader's outermost unlock.
 * Catches: synchronize not waiting at all, a scan that misses a registered
 * reader, nesting counted wrongly (inner unlock ending the section).
 */
static void check_sync_waits(unsigned depth, unsigned pre, unsigned post,
                             bool use_functions)
{
	struct reader r = { .depth = depth, .pre_unlocks = pre,
		            .post_unlocks = post,
		            .use_functions = use_functions };
	struct waiter s = { 0 };
	uint64_t t_release;

	reader_start(&r);
	waiter_start(&s, do_synchronize);
	tst_sleep_ms(150);
	ck_assert_msg(!tst_load(&s.done), "relhash_synchronize() returned "
	              "(after %.1f ms) while a reader (depth %u, then %u inner "
	              "unlocks) that entered before the call was still inside",
	              tst_ms(s.t_start, s.t_end), depth, pre);
	if (post) {
		tst_store(&r.release_inner, 1);
		TST_ASSERT_WAIT(tst_load(&r.inner_left), HANG_MS,
		                "reader did not leave its inner sections");
		tst_sleep_ms(150);
		ck_assert_msg(!tst_load(&s.done), "relhash_synchronize() "
		              "returned after the reader left %u inner sections "
		              "but was still inside its outermost one", post);
	}
	t_release = tst_now_ns();
	reader_release(&r);
	waiter_join(&s, "relhash_synchronize() (after the reader left)");
	reader_join(&r);
	ck_assert_msg(tst_load(&r.leaving) && s.t_end >= r.t_leave,
	              "relhash_synchronize() returned %.1f ms before the "
	              "reader's outermost unlock", tst_ms(s.t_end, r.t_leave));
	ck_assert_msg(tst_ms(s.t_start, s.t_end) >= 140.0,
	              "relhash_synchronize() took only %.1f ms although the "
	              "reader stayed >= 150 ms", tst_ms(s.t_start, s.t_end));
	printf("[%s] synchronize depth %u/%u/%u%s: %.1f ms, returned %.2f ms "
	       "after the reader was released\n", tst_mode_name, depth, pre,
	       post, use_functions ? " (exported functions)" : "",
	       tst_ms(s.t_start, s.t_end), tst_ms(t_release, s.t_end));
	tst_assert_no_thread_failures();
}

START_TEST(sync_waits_for_reader)
{
	check_sync_waits(1, 0, 0, false);
}
END_TEST

START_TEST(sync_waits_for_reader_functions)
{
	check_sync_waits(1, 0, 0, true);
}
END_TEST

START_TEST(sync_waits_for_nested_reader)
{
	/* lock, lock, unlock: still inside. */
	check_sync_waits(2, 1, 0, false);
}
END_TEST

START_TEST(sync_waits_for_outermost_section)
{
	/* Three deep; the inner two end while synchronize waits. */
	check_sync_waits(3, 0, 2, false);
}
END_TEST

/*
 * Three readers leave one at a time; synchronize must outlast the last one.
 * Catches: waiting only for the first straggler, or returning when some
 * reader (not all) has left.
 */
START_TEST(sync_waits_for_all_readers)
{
	struct reader r[3] = { { .depth = 1 }, { .depth = 2 }, { .depth = 1 } };
	struct waiter s = { 0 };

	for (int i = 0; i < 3; i++)
		reader_start(&r[i]);
	waiter_start(&s, do_synchronize);
	for (int i = 0; i < 2; i++) {
		tst_sleep_ms(80);
		reader_release(&r[i]);
		TST_ASSERT_WAIT(tst_load(&r[i].left), HANG_MS,
		                "reader %d did not leave", i);
		tst_sleep_ms(80);
		ck_assert_msg(!tst_load(&s.done), "relhash_synchronize() "
		              "returned when readers 0..%d had left but reader "
		              "%d (which entered before the call) was inside", i,
		              2);
	}
	reader_release(&r[2]);
	waiter_join(&s, "relhash_synchronize()");
	ck_assert_msg(s.t_end >= r[2].t_leave, "synchronize returned before "
	              "the last reader left");
	for (int i = 0; i < 3; i++)
		reader_join(&r[i]);
	tst_assert_no_thread_failures();
}
END_TEST

/*
 * synchronize does not wait for readers that began after it was called.
 * R1 is inside; S calls synchronize; once that grace period has started,
 * R2 enters and stays until S returns (at most 2 s).  R1 leaves: S must
 * return while R2 is still inside.
 * Catches: a grace period that waits for every reader it finds (no epoch
 * comparison), which with overlapping readers never ends (starvation).
 */
START_TEST(sync_ignores_later_readers)
{
	struct reader r1 = { .depth = 1 };
	struct reader r2 = { .depth = 1, .max_ms = 2000 };
	struct waiter s = { 0 };
	bool saw_start = false;
#ifndef RELHASH_NO_INLINE
	uint64_t e0;
#endif

	reader_start(&r1);
#ifndef RELHASH_NO_INLINE
	e0 = atomic_load(&relhash__gp.ctr);
#endif
	waiter_start(&s, do_synchronize);
#ifndef RELHASH_NO_INLINE
	/* The epoch is incremented at the start of a grace period (ABI,
	 * inline.h): wait for it, so that R2 surely begins after S's call. */
	saw_start = TST_WAIT_FOR(atomic_load(&relhash__gp.ctr) != e0, 1000);
#endif
	tst_sleep_ms(50);
	ck_assert_msg(!tst_load(&s.done), "synchronize returned while R1 "
	              "(which entered before it) was inside");

	/* R2 begins after the call, and stays until S returns (or 2 s). */
	reader_start(&r2);
	reader_release(&r1);
	TST_ASSERT_WAIT(tst_load(&s.done) || tst_load(&r2.timed_out), 3000,
	                "neither synchronize returned nor R2 timed out");
	ck_assert_msg(tst_load(&s.done) && !tst_load(&r2.leaving),
	              "relhash_synchronize() waited for reader R2, which began "
	              "after the call (R2 stayed %u ms; grace-period start %s): "
	              "a grace period must only wait for sections that began "
	              "before it", r2.max_ms,
	              saw_start ? "observed" : "not observed");
	reader_release(&r2);
	tst_store(&r2.exit, 1);
	tst_store(&r1.exit, 1);
	TST_JOIN(r2.thr, HANG_MS, "R2 did not finish");
	TST_JOIN(r1.thr, HANG_MS, "R1 did not finish");
	waiter_join(&s, "relhash_synchronize()");
	ck_assert_msg(s.t_end >= r1.t_leave, "synchronize returned before R1 "
	              "left");
	tst_assert_no_thread_failures();
}
END_TEST

/*
 * A waiting synchronize is woken promptly by the last reader's unlock (the
 * futex wake), not by a polling timer.  Median of 9 runs, to ride out noise.
 * Catches: a lost wake-up (the waiter then only notices on its safety-net
 * timeout, tens of ms later).
 */
static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

START_TEST(sync_woken_promptly)
{
	double lat[9];

	for (int i = 0; i < 9; i++) {
		struct reader r = { .depth = 1 };
		struct waiter s = { 0 };

		reader_start(&r);
		waiter_start(&s, do_synchronize);
		tst_sleep_ms(20 + 5 * i);
		reader_release(&r);
		waiter_join(&s, "relhash_synchronize()");
		reader_join(&r);
		lat[i] = tst_ms(r.t_leave, s.t_end);
	}
	qsort(lat, 9, sizeof(lat[0]), cmp_double);
	printf("[%s] synchronize wake-up latency after the last unlock: "
	       "min %.3f ms, median %.3f ms, max %.3f ms\n", tst_mode_name,
	       lat[0], lat[4], lat[8]);
	ck_assert_msg(lat[4] < 20.0, "synchronize returned a median %.1f ms "
	              "after the last reader left (min %.1f, max %.1f): the "
	              "unlock does not wake the waiter", lat[4], lat[0], lat[8]);
}
END_TEST

/* ====================================================================== */
/* Refusals and non-waiting calls inside a section                         */

struct inside_calls {
	int sync_ret, sync_ret_nested, barrier_ret;
	double sync_ms, barrier_ms, call_ms, call_outside_ms;
	bool still_inside;
	struct relhash_head heads[20];
};

static void *inside_calls_main(void *arg)
{
	struct inside_calls *c = arg;
	uint64_t t;

	/* Something for a barrier to wait for. */
	relhash_call(&c->heads[0], count_cb);

	relhash_read_lock();
	t = tst_now_ns();
	c->sync_ret = relhash_synchronize();
	c->sync_ms = tst_ms_since(t);
	t = tst_now_ns();
	c->barrier_ret = relhash_barrier();
	c->barrier_ms = tst_ms_since(t);
	relhash_read_lock();
	c->sync_ret_nested = relhash_synchronize();
	relhash_read_unlock();
	c->still_inside = relhash_read_ongoing();

	/* relhash_call and relhash_defer_free inside: never wait. */
	t = tst_now_ns();
	for (int i = 1; i < 10; i++)
		relhash_call(&c->heads[i], count_cb);
	for (int i = 0; i < 10; i++)
		relhash_defer_free(malloc(32));
	c->call_ms = tst_ms_since(t);
	relhash_read_unlock();

	/* Outside, under the callback limit: no waiting either. */
	t = tst_now_ns();
	for (int i = 10; i < 20; i++)
		relhash_call(&c->heads[i], count_cb);
	c->call_outside_ms = tst_ms_since(t);
	return NULL;
}

/*
 * Inside a section, synchronize and barrier return -EDEADLK at once; call
 * and defer_free return at once even though another thread's long section
 * holds up every grace period.
 * Catches: synchronize/barrier waiting on the caller's own section
 * (self-deadlock: the helper never returns), or on the other reader;
 * relhash_call waiting for a grace period.
 */
START_TEST(calls_inside_section_do_not_wait)
{
	struct reader r = { .depth = 1 };
	struct inside_calls c = { 0 };
	pthread_t t;

	tst_store(&cb_count, 0);
	reader_start(&r);
	tst_thread_start(&t, inside_calls_main, &c);
	TST_JOIN(t, 3000, "a thread inside a section calling synchronize, "
	         "barrier, call and defer_free did not finish within 3 s "
	         "(one of them waited)");
	ck_assert_msg(c.sync_ret == -EDEADLK && c.sync_ret_nested == -EDEADLK,
	              "relhash_synchronize() inside a section returned %d "
	              "(nested: %d), expected -EDEADLK (%d)", c.sync_ret,
	              c.sync_ret_nested, -EDEADLK);
	ck_assert_msg(c.barrier_ret == -EDEADLK, "relhash_barrier() inside a "
	              "section returned %d, expected -EDEADLK", c.barrier_ret);
	ck_assert_msg(c.sync_ms < 100.0 && c.barrier_ms < 100.0,
	              "refusals took %.1f ms (synchronize) and %.1f ms "
	              "(barrier): they must not wait", c.sync_ms, c.barrier_ms);
	ck_assert_msg(c.still_inside, "the section ended after a refused "
	              "synchronize/barrier");
	ck_assert_msg(c.call_ms < 100.0, "10 relhash_call + 10 "
	              "relhash_defer_free inside a section took %.1f ms while "
	              "another reader held a section", c.call_ms);
	ck_assert_msg(c.call_outside_ms < 100.0, "10 relhash_call outside a "
	              "section (under the limit) took %.1f ms while another "
	              "reader held a section", c.call_outside_ms);
	ck_assert_msg(tst_load(&cb_count) == 0, "%llu callbacks ran while a "
	              "reader that entered before they were queued was inside",
	              (unsigned long long)tst_load(&cb_count));
	ck_assert_msg(!tst_load(&r.leaving), "reader left early");
	reader_join(&r);
	barrier_bounded();
	ck_assert_msg(tst_load(&cb_count) == 20, "after relhash_barrier(), "
	              "%llu of 20 callbacks have run",
	              (unsigned long long)tst_load(&cb_count));
	tst_assert_no_thread_failures();
}
END_TEST

/* ====================================================================== */
/* Callbacks                                                               */

/*
 * A callback never runs before a grace period: not while a reader that was
 * inside when it was queued is still inside, and not while the queuing
 * thread itself is inside.
 * Catches: callbacks run immediately or after a grace period that began
 * before they were queued and did not wait for the reader.
 */
START_TEST(callback_waits_for_grace_period)
{
	struct reader r = { .depth = 1 };
	struct relhash_head h1, h2;
	pid_t me = gettid_();

	tst_store(&cb_count, 0);
	reader_start(&r);
	relhash_call(&h1, count_cb);
	tst_sleep_ms(150);
	ck_assert_msg(tst_load(&cb_count) == 0, "a callback ran 150 ms after "
	              "relhash_call() while a reader that was inside when it "
	              "was queued was still inside");
	ck_assert_msg(!tst_load(&r.leaving), "reader left early");
	reader_release(&r);
	barrier_bounded();
	ck_assert_msg(tst_load(&cb_count) == 1, "callback did not run by "
	              "relhash_barrier() (count %llu)",
	              (unsigned long long)tst_load(&cb_count));
	ck_assert_msg(tst_load(&cb_last_tid) != me, "callback ran on the "
	              "thread that queued it, not on a library thread");
	reader_join(&r);

	/* The queuing thread is itself inside. */
	relhash_read_lock();
	relhash_call(&h2, count_cb);
	tst_sleep_ms(100);
	ck_assert_msg(tst_load(&cb_count) == 1, "a callback queued inside a "
	              "section ran while that section was still open");
	relhash_read_unlock();
	barrier_bounded();
	ck_assert_msg(tst_load(&cb_count) == 2, "second callback did not run "
	              "by relhash_barrier()");
	tst_assert_no_thread_failures();
}
END_TEST

/* Threads that queue K callbacks and then exit or park. */
struct queuer {
	pthread_t thr;
	unsigned k;
	bool park;          /* stay alive until released */
	bool unregister;    /* relhash_thread_unregister() after queuing */
	bool slow;          /* slow callbacks (2 ms each) */
	int queued;
	int release;
	int timed_out;
};

static void *queuer_main(void *arg)
{
	struct queuer *q = arg;

	queue_counted_cb(q->k, q->slow ? slow_count_free_cb : count_free_cb);
	if (q->unregister)
		relhash_thread_unregister();
	tst_store(&q->queued, 1);
	if (q->park) {
		/* Parked: no library calls while the test runs barrier. */
		if (!TST_WAIT_FOR(tst_load(&q->release), HANG_MS))
			tst_store(&q->timed_out, 1);
	}
	return NULL;
}

/*
 * Callbacks queued by threads that have exited still run, and barrier
 * covers them.  3 per thread is below any sensible batch size, so they sit
 * in per-thread batches when the threads exit.
 * Catches: per-thread batches lost at thread exit, or not reached by
 * relhash_barrier().
 */
START_TEST(barrier_covers_exited_threads)
{
	enum { N = 8, K = 3 };
	struct queuer q[N];

	uint64_t ran;

	memset(q, 0, sizeof(q));
	tst_store(&cb_count, 0);
	for (int i = 0; i < N; i++) {
		q[i].k = K;
		q[i].slow = true;
		tst_thread_start(&q[i].thr, queuer_main, &q[i]);
	}
	for (int i = 0; i < N; i++)
		TST_JOIN(q[i].thr, HANG_MS, "queuing thread %d did not exit", i);
	ran = barrier_bounded();
	ck_assert_msg(ran == N * K, "relhash_barrier() returned with %llu of "
	              "%d callbacks (queued by %d threads that exited, %d each) "
	              "run", (unsigned long long)ran, N * K, N, K);
}
END_TEST

/*
 * The same, without anyone calling relhash_barrier(): the callbacks of
 * exited threads must run on their own ("they are not lost").
 */
START_TEST(exited_threads_callbacks_run_eventually)
{
	enum { N = 8, K = 3 };
	struct queuer q[N];
	bool ran;

	memset(q, 0, sizeof(q));
	tst_store(&cb_count, 0);
	for (int i = 0; i < N; i++) {
		q[i].k = K;
		tst_thread_start(&q[i].thr, queuer_main, &q[i]);
	}
	for (int i = 0; i < N; i++)
		TST_JOIN(q[i].thr, HANG_MS, "queuing thread %d did not exit", i);
	ran = TST_WAIT_FOR(tst_load(&cb_count) == N * K, 3000);
	ck_assert_msg(ran, "3 s after %d threads queued %d callbacks each and "
	              "exited, only %llu of %d had run (no barrier called)",
	              N, K, (unsigned long long)tst_load(&cb_count), N * K);
}
END_TEST

/*
 * Barrier covers callbacks queued by threads that are still alive but idle
 * (parked, making no library calls).  To make sure their callbacks are
 * still in per-thread batches when the barrier is called, a reader first
 * holds up a grace period that the library's callback processing waits for
 * (a callback queued by the test), the threads queue while it waits, and
 * the barrier starts before the reader leaves.
 * Catches: per-thread batches that only reach the queue when they fill up
 * or when their thread exits, or that a barrier does not collect before
 * placing its own marker.
 */
START_TEST(barrier_covers_idle_threads)
{
	enum { N = 4, K = 3 };
	struct queuer q[N];
	struct reader r = { .depth = 1 };
	struct waiter b = { 0 };
	uint64_t ran;

	memset(q, 0, sizeof(q));
	tst_store(&cb_count, 0);
	reader_start(&r);
	queue_counted(1);
	tst_sleep_ms(50);
	for (int i = 0; i < N; i++) {
		q[i].k = K;
		q[i].park = true;
		q[i].slow = true;
		tst_thread_start(&q[i].thr, queuer_main, &q[i]);
	}
	for (int i = 0; i < N; i++)
		TST_ASSERT_WAIT(tst_load(&q[i].queued), HANG_MS,
		                "thread %d did not queue its callbacks", i);
	waiter_start(&b, do_barrier);
	tst_sleep_ms(50);
	ck_assert_msg(!tst_load(&b.done) && tst_load(&cb_count) == 0,
	              "callbacks ran (%llu) or barrier returned while a reader "
	              "that was inside when they were queued was inside",
	              (unsigned long long)tst_load(&cb_count));
	reader_join(&r);
	waiter_join(&b, "relhash_barrier()");
	ran = b.count_at_return;
	for (int i = 0; i < N; i++)
		tst_store(&q[i].release, 1);
	for (int i = 0; i < N; i++) {
		TST_JOIN(q[i].thr, HANG_MS, "parked thread %d did not exit", i);
		ck_assert_msg(!q[i].timed_out, "thread %d was not released "
		              "in time", i);
	}
	ck_assert_msg(ran == N * K + 1, "relhash_barrier() returned with "
	              "%llu of %d callbacks run; %d were queued by %d live, "
	              "idle threads (%d each)", (unsigned long long)ran,
	              N * K + 1, N * K, N, K);
}
END_TEST

/*
 * relhash_thread_unregister() keeps the thread's pending callbacks, and the
 * thread can use the library again afterwards (re-registering).
 */
struct unreg_state {
	int phase;     /* 1: queued 3 and unregistered; 3: done */
	int go;        /* test -> thread: go on */
	uint64_t seen; /* cb_count after the thread's own barrier */
	int barrier_ret;
	bool ongoing_after;
};

static void *unreg_main(void *arg)
{
	struct unreg_state *u = arg;

	queue_counted_cb(3, slow_count_free_cb);
	relhash_thread_unregister();
	relhash_thread_unregister(); /* twice is harmless */
	tst_store(&u->phase, 1);
	if (!TST_WAIT_FOR(tst_load(&u->go), HANG_MS))
		return NULL;
	/* Re-registers on first use. */
	relhash_read_lock();
	relhash_read_unlock();
	queue_counted(2);
	u->barrier_ret = relhash_barrier();
	u->seen = tst_load(&cb_count);
	u->ongoing_after = relhash_read_ongoing();
	relhash_thread_unregister();
	tst_store(&u->phase, 3);
	return NULL;
}

START_TEST(unregister_keeps_callbacks)
{
	struct unreg_state u = { 0 };
	pthread_t t;
	uint64_t ran;

	tst_store(&cb_count, 0);
	tst_thread_start(&t, unreg_main, &u);
	TST_ASSERT_WAIT(tst_load(&u.phase) == 1, HANG_MS,
	                "thread did not queue and unregister");
	ran = barrier_bounded();
	ck_assert_msg(ran == 3, "relhash_barrier() returned with %llu of 3 "
	              "callbacks run, queued by a thread that then called "
	              "relhash_thread_unregister() and is alive",
	              (unsigned long long)ran);
	tst_store(&u.go, 1);
	TST_JOIN(t, HANG_MS, "thread did not finish after re-registering");
	ck_assert_int_eq(u.phase, 3);
	ck_assert_msg(u.barrier_ret == 0 && u.seen == 5, "after unregister, "
	              "re-register and 2 more callbacks, the thread's own "
	              "barrier returned %d with %llu of 5 callbacks run",
	              u.barrier_ret, (unsigned long long)u.seen);
	ck_assert(!u.ongoing_after);
}
END_TEST

/*
 * relhash_defer_free: the memory stays intact while a reader that was
 * inside when it was queued stays inside; NULL is accepted; everything is
 * freed by relhash_barrier() (ASan/LeakSanitizer builds check the frees).
 * The held blocks include one of 256 KiB (beyond malloc's mmap threshold):
 * freed too early, it is unmapped and the reader's check crashes the test.
 * Catches: defer_free freeing at once or before a grace period.
 */
START_TEST(defer_free_waits_and_frees)
{
	const size_t sizes[] = { 24, 64, 4096, 256 * 1024 };
	struct reader r[4];

	memset(r, 0, sizeof(r));
	relhash_defer_free(NULL);
	barrier_bounded();
	for (int i = 0; i < 4; i++) {
		void *p = malloc(sizes[i]);

		ck_assert_ptr_nonnull(p);
		memset(p, 0xa5, sizes[i]);
		r[i].depth = 1;
		r[i].watch = p;
		r[i].watch_len = sizes[i];
		r[i].watch_byte = 0xa5;
		r[i].watch_after_ms = 150;
		reader_start(&r[i]);
		relhash_defer_free(p);
	}
	relhash_defer_free(NULL);
	for (int i = 0; i < 4; i++) {
		TST_ASSERT_WAIT(tst_load(&r[i].watch_ok) != 0, HANG_MS,
		                "reader %d did not check its block", i);
		ck_assert_msg(tst_load(&r[i].watch_ok) == 1,
		              "a %zu-byte block passed to relhash_defer_free() "
		              "changed (was freed) while a reader that was inside "
		              "when it was queued was still inside", sizes[i]);
	}
	for (int i = 0; i < 4; i++)
		reader_join(&r[i]);
	/* Plenty more, of mixed sizes, for the leak checker. */
	for (int i = 0; i < 200; i++)
		relhash_defer_free(malloc((size_t)(i * 37 % 3000) + 1));
	barrier_bounded();
	tst_assert_no_thread_failures();
}
END_TEST

/*
 * Statistics count exactly what the API says: callbacks_queued counts
 * relhash_call/relhash_defer_free, callbacks_run the callbacks that have
 * run, and callbacks_pending is 0 once a barrier has returned and nobody
 * queues.  Once relhash_barrier() has returned, the callbacks it covered
 * have run, so callbacks_run must already include them.
 */
START_TEST(stats_count_callbacks)
{
	enum { N = 300 };
	struct relhash_epoch_stats s0, s1, s2;
	struct relhash_head *h = calloc(N, sizeof(*h));
	uint64_t ran;

	ck_assert_ptr_nonnull(h);
	tst_store(&cb_count, 0);
	barrier_bounded();
	s0 = stats_now();
	for (int i = 0; i < N - 2; i++)
		relhash_call(&h[i], count_cb);
	relhash_defer_free(malloc(16));
	relhash_defer_free(malloc(16));
	relhash_defer_free(NULL);
	s1 = stats_now();
	ck_assert_msg(s1.callbacks_queued - s0.callbacks_queued == N,
	              "callbacks_queued grew by %llu after %d relhash_call and "
	              "2 relhash_defer_free", (unsigned long long)
	              (s1.callbacks_queued - s0.callbacks_queued), N - 2);
	ran = barrier_bounded();
	s2 = stats_now();
	ck_assert_msg(ran == N - 2, "relhash_barrier() returned with %llu of "
	              "%d callbacks run", (unsigned long long)ran, N - 2);
	ck_assert_msg(s2.callbacks_run - s0.callbacks_run >= N &&
	              s2.callbacks_pending == 0,
	              "relhash_barrier() has returned, so all %d callbacks have "
	              "run, but callbacks_run grew by only %llu and "
	              "callbacks_pending is %llu", N, (unsigned long long)
	              (s2.callbacks_run - s0.callbacks_run),
	              (unsigned long long)s2.callbacks_pending);
	ck_assert_msg(s2.callbacks_queued - s0.callbacks_queued == N &&
	              s2.callbacks_run - s0.callbacks_run == N,
	              "after a barrier: callbacks_queued +%llu, callbacks_run "
	              "+%llu; expected +%d, +%d (%d relhash_call, 2 "
	              "relhash_defer_free; barriers are not callbacks)",
	              (unsigned long long)(s2.callbacks_queued -
	                                   s0.callbacks_queued),
	              (unsigned long long)(s2.callbacks_run - s0.callbacks_run),
	              N, N, N - 2);
	free(h);
}
END_TEST

/*
 * Callbacks run in the order each thread queued them: per-thread FIFO,
 * with no loss and no duplicate, across batch boundaries, while four
 * threads queue at once (enough in total to hit the default back-pressure
 * limit).  Each thread mixes relhash_call() and relhash_defer(), in runs of
 * 100 defers (more than a block holds), alternating ones, and runs of 100
 * calls: the two share one order.
 * Catches: a defer added to a block that a later call already follows, a
 * block still filled after its batch was handed off, lost block entries.
 */
#define FIFO_THREADS 4
#define FIFO_PER_THREAD 4000

struct fifo_item {
	struct relhash_head head;
	unsigned thread;
	unsigned seq;
};

static struct fifo_item *fifo_items;
static unsigned fifo_next[FIFO_THREADS];
static unsigned fifo_errors;

static void fifo_cb(struct relhash_head *h)
{
	struct fifo_item *it = (struct fifo_item *)(void *)h;
	unsigned expect = tst_load(&fifo_next[it->thread]);

	TST_THREAD_CHECK(it->seq == expect, "thread %u's callback #%u ran "
	                 "when #%u was due (per-thread FIFO broken, or a "
	                 "callback lost/duplicated)", it->thread, it->seq,
	                 expect);
	if (it->seq != expect)
		tst_inc(&fifo_errors);
	tst_store(&fifo_next[it->thread], it->seq + 1);
}

static void fifo_defer_cb(void *ptr)
{
	fifo_cb(&((struct fifo_item *)ptr)->head);
}

/* Item i of a thread: queued with relhash_defer() or relhash_call()? */
static bool fifo_deferred(unsigned i)
{
	switch (i / 100 % 3) {
	case 0:
		return true;
	case 1:
		return i % 2;
	default:
		return false;
	}
}

struct fifo_thread {
	pthread_t thr;
	unsigned id;
	unsigned unregister_every; /* 0: never */
	struct tst_barrier *start;
};

static void *fifo_main(void *arg)
{
	struct fifo_thread *f = arg;
	struct fifo_item *mine = fifo_items + (size_t)f->id * FIFO_PER_THREAD;

	if (f->start && !tst_barrier_wait(f->start, HANG_MS))
		return NULL;
	for (unsigned i = 0; i < FIFO_PER_THREAD; i++) {
		mine[i].thread = f->id;
		mine[i].seq = i;
		if (fifo_deferred(i))
			relhash_defer(fifo_defer_cb, &mine[i]);
		else
			relhash_call(&mine[i].head, fifo_cb);
		if (f->unregister_every && i % f->unregister_every ==
		    f->unregister_every - 1)
			relhash_thread_unregister();
		if (i % 97 == 0)
			sched_yield();
	}
	return NULL;
}

static void check_fifo(unsigned nthreads, unsigned unregister_every)
{
	struct fifo_thread f[FIFO_THREADS];
	struct tst_barrier start;

	fifo_items = calloc((size_t)FIFO_THREADS * FIFO_PER_THREAD,
	                    sizeof(*fifo_items));
	ck_assert_ptr_nonnull(fifo_items);
	memset(fifo_next, 0, sizeof(fifo_next));
	tst_store(&fifo_errors, 0);
	tst_barrier_init(&start, nthreads);
	for (unsigned i = 0; i < nthreads; i++) {
		f[i] = (struct fifo_thread){ .id = i, .start = &start,
			.unregister_every = unregister_every };
		tst_thread_start(&f[i].thr, fifo_main, &f[i]);
	}
	for (unsigned i = 0; i < nthreads; i++)
		TST_JOIN(f[i].thr, 10000, "queuing thread %u did not finish "
		         "%u relhash_call()s within 10 s", i, FIFO_PER_THREAD);
	barrier_bounded();
	tst_assert_no_thread_failures();
	for (unsigned i = 0; i < nthreads; i++)
		ck_assert_msg(fifo_next[i] == FIFO_PER_THREAD, "after a barrier, "
		              "thread %u's callbacks ran up to #%u of %u", i,
		              fifo_next[i], FIFO_PER_THREAD);
	free(fifo_items);
	fifo_items = NULL;
}

START_TEST(callbacks_fifo_per_thread)
{
	check_fifo(FIFO_THREADS, 0);
}
END_TEST

/* The same thread, unregistering (and so re-registering) every 150. */
START_TEST(callbacks_fifo_across_unregister)
{
	check_fifo(2, 150);
}
END_TEST

/*
 * A callback may queue callbacks (rcutorture re-queues each object several
 * times), even when more than the limit are pending: the callback thread
 * must not wait on back-pressure for itself.
 */
#define REQUEUE_OBJS 100
#define REQUEUE_TIMES 3

struct requeue_obj {
	struct relhash_head head;
	unsigned left;
};

static void requeue_cb(struct relhash_head *h)
{
	struct requeue_obj *o = (struct requeue_obj *)(void *)h;

	tst_inc(&cb_count);
	if (o->left) {
		o->left--;
		relhash_call(&o->head, requeue_cb);
	}
}

static struct requeue_obj requeue_objs[REQUEUE_OBJS];

static void *requeue_queuer(void *arg)
{
	(void)arg;
	relhash_read_lock(); /* inside: no back-pressure for this thread */
	for (int i = 0; i < REQUEUE_OBJS; i++) {
		requeue_objs[i].left = REQUEUE_TIMES;
		relhash_call(&requeue_objs[i].head, requeue_cb);
	}
	relhash_read_unlock();
	return NULL;
}

START_TEST(callback_may_queue_callbacks)
{
	pthread_t t;
	bool done;

	tst_store(&cb_count, 0);
	relhash_set_callback_limit(10);
	tst_thread_start(&t, requeue_queuer, NULL);
	TST_JOIN(t, 2000, "queuing %d callbacks inside a section (limit 10) "
	         "did not finish in 2 s", REQUEUE_OBJS);
	done = TST_WAIT_FOR(tst_load(&cb_count) ==
	                    REQUEUE_OBJS * (REQUEUE_TIMES + 1), HANG_MS);
	ck_assert_msg(done, "callbacks that queue callbacks (limit 10, %d "
	              "objects, each re-queued %d times): only %llu of %d ran "
	              "in %u ms", REQUEUE_OBJS, REQUEUE_TIMES,
	              (unsigned long long)tst_load(&cb_count),
	              REQUEUE_OBJS * (REQUEUE_TIMES + 1), HANG_MS);
	relhash_set_callback_limit(0);
	barrier_bounded();
}
END_TEST

/* relhash_barrier() from a callback returns -EDEADLK (and does not hang). */
static int barrier_in_cb_ret = 1;

static void barrier_in_cb(struct relhash_head *h)
{
	(void)h;
	tst_store(&barrier_in_cb_ret, relhash_barrier());
}

START_TEST(barrier_in_callback_refused)
{
	struct relhash_head h;

	relhash_call(&h, barrier_in_cb);
	barrier_bounded();
	ck_assert_msg(tst_load(&barrier_in_cb_ret) == -EDEADLK,
	              "relhash_barrier() on the callback thread returned %d, "
	              "expected -EDEADLK", tst_load(&barrier_in_cb_ret));
}
END_TEST

/* ====================================================================== */
/* Sharing grace periods                                                   */

/*
 * Eight callers are inside relhash_synchronize() at once, all held up by
 * one reader.  When it leaves, they need at most two grace periods: the one
 * in flight (which began before some of them called) and one more that
 * began after all of them had called.
 * Catches: every caller running its own grace period (8).
 */
START_TEST(sync_callers_share_grace_periods)
{
	enum { N = 8 };
	struct reader r = { .depth = 1 };
	struct waiter s[N];
	struct relhash_epoch_stats s0, s1;
	uint64_t delta;

	memset(s, 0, sizeof(s));
	barrier_bounded(); /* no callbacks left that need grace periods */
	reader_start(&r);
	s0 = stats_now();
	for (int i = 0; i < N; i++)
		waiter_start(&s[i], do_synchronize);
	tst_sleep_ms(150);
	for (int i = 0; i < N; i++)
		ck_assert_msg(!tst_load(&s[i].done), "synchronize %d returned "
		              "while the reader was inside", i);
	reader_release(&r);
	for (int i = 0; i < N; i++)
		waiter_join(&s[i], "relhash_synchronize()");
	reader_join(&r);
	s1 = stats_now();
	delta = s1.grace_periods - s0.grace_periods;
	printf("[%s] %d synchronize callers waiting together used %llu grace "
	       "period(s)\n", tst_mode_name, N, (unsigned long long)delta);
	ck_assert_msg(delta >= 1 && delta <= 2, "%d concurrent synchronize "
	              "callers, all waiting on one reader, used %llu grace "
	              "periods; sharing needs at most 2", N,
	              (unsigned long long)delta);
}
END_TEST

/*
 * Stress: 8 threads x 200 synchronize calls while a reader runs 1 ms
 * sections back to back.  The reader publishes a section number (odd while
 * inside); a caller that saw an odd number before calling must see it
 * changed when synchronize returns: the grace period waited for that
 * section.  (The store that changes it precedes the reader's unlock; x86
 * keeps stores in order, and the engine's final barrier orders the rest.)
 * Grace periods: never more than calls (nothing else needs any).  Fewer
 * is usual but not guaranteed: the scheduler may keep the reader off-CPU
 * between sections while callers run one by one; the ratio is reported,
 * and sync_callers_share_grace_periods tests sharing deterministically.
 */
struct sync_stress {
	struct tst_barrier *start;
	int stop;
	uint64_t section; /* 2k+1 inside section k, 2k+2 after it */
	uint64_t waited;  /* calls that began while the reader was inside */
};

static void *stress_reader(void *arg)
{
	struct sync_stress *st = arg;

	while (!tst_load(&st->stop)) {
		uint64_t t = tst_now_ns();

		relhash_read_lock();
		tst_store(&st->section, st->section + 1);
		while (tst_now_ns() - t < 1000000)
			;
		tst_store(&st->section, st->section + 1);
		relhash_read_unlock();
	}
	return NULL;
}

static void *stress_syncer(void *arg)
{
	struct sync_stress *st = arg;

	if (!tst_barrier_wait(st->start, HANG_MS))
		return NULL;
	for (int i = 0; i < 200; i++) {
		uint64_t before = tst_load(&st->section), after;

		TST_THREAD_CHECK(relhash_synchronize() == 0,
		                 "relhash_synchronize() failed");
		after = tst_load(&st->section);
		if (before & 1) {
			tst_inc(&st->waited);
			TST_THREAD_CHECK(after > before, "relhash_synchronize() "
			                 "returned while reader section %llu, "
			                 "ongoing when it was called, had not ended",
			                 (unsigned long long)before / 2);
		}
	}
	return NULL;
}

START_TEST(sync_stress_batches)
{
	enum { N = 8, CALLS = N * 200 };
	struct tst_barrier start;
	struct sync_stress st = { .start = &start };
	pthread_t rd, t[N];
	struct relhash_epoch_stats s0, s1;
	uint64_t delta, t0;

	tst_barrier_init(&start, N);
	barrier_bounded();
	s0 = stats_now();
	tst_thread_start(&rd, stress_reader, &st);
	TST_ASSERT_WAIT(tst_load(&st.section) >= 6, HANG_MS,
	                "stress reader did not run");
	t0 = tst_now_ns();
	for (int i = 0; i < N; i++)
		tst_thread_start(&t[i], stress_syncer, &st);
	for (int i = 0; i < N; i++)
		TST_JOIN(t[i], 20000, "synchronize stress thread %d did not "
		         "finish 200 calls in 20 s", i);
	tst_store(&st.stop, 1);
	TST_JOIN(rd, HANG_MS, "stress reader did not stop");
	s1 = stats_now();
	delta = s1.grace_periods - s0.grace_periods;
	printf("[%s] %d synchronize calls by %d threads (%llu began while the "
	       "reader was inside; reader: %llu sections): %llu grace periods "
	       "(%.2f per call), %.0f ms\n", tst_mode_name, CALLS, N,
	       (unsigned long long)st.waited,
	       (unsigned long long)st.section / 2, (unsigned long long)delta,
	       (double)delta / CALLS, tst_ms_since(t0));
	tst_assert_no_thread_failures();
	ck_assert_msg(delta <= CALLS, "%llu grace periods for %d synchronize "
	              "calls (nothing else queued)", (unsigned long long)delta,
	              CALLS);
}
END_TEST

/* ====================================================================== */
/* Back-pressure                                                           */

struct bp_writer {
	pthread_t thr;
	bool inside;                /* queue from inside a section */
	struct reader *reader;      /* the reader holding everything up */
	struct relhash_head *heads;
	unsigned n;
	int done;
	int reader_leaving_at_done; /* the reader's leaving flag then */
};

static void *bp_writer_main(void *arg)
{
	struct bp_writer *w = arg;

	if (w->inside)
		relhash_read_lock();
	for (unsigned i = 0; i < w->n; i++)
		relhash_call(&w->heads[i], count_cb);
	if (w->inside)
		relhash_read_unlock();
	w->reader_leaving_at_done = tst_load(&w->reader->leaving);
	tst_store(&w->done, 1);
	return NULL;
}

/*
 * With the limit at 100, a writer outside any section that queues 1000
 * callbacks while a reader blocks every grace period must wait (it cannot
 * finish before the reader leaves), and backpressure_waits counts it; a
 * writer inside a section queuing 1000 must not wait (it would deadlock).
 */
START_TEST(backpressure_bounds_pending)
{
	enum { N = 1000 };
	struct relhash_head *heads = calloc(2 * N, sizeof(*heads));
	struct reader r = { .depth = 1 }, r2 = { .depth = 1 };
	struct bp_writer w = { .heads = heads, .n = N, .reader = &r };
	struct bp_writer w2 = { .heads = heads + N, .n = N, .reader = &r2,
		                .inside = true };
	struct relhash_epoch_stats s0, s1, s2;

	ck_assert_ptr_nonnull(heads);
	tst_store(&cb_count, 0);
	barrier_bounded();
	relhash_set_callback_limit(100);
	s0 = stats_now();

	reader_start(&r);
	tst_thread_start(&w.thr, bp_writer_main, &w);
	tst_sleep_ms(300);
	s1 = stats_now();
	ck_assert_msg(!tst_load(&w.done), "a writer outside any section "
	              "queued %d callbacks with the limit at 100 while a "
	              "reader blocked every grace period (pending now %llu): "
	              "no back-pressure", N,
	              (unsigned long long)s1.callbacks_pending);
	ck_assert_msg(s1.backpressure_waits > s0.backpressure_waits,
	              "backpressure_waits did not grow (%llu) while a writer "
	              "was held at the limit",
	              (unsigned long long)s1.backpressure_waits);
	reader_release(&r);
	TST_JOIN(w.thr, HANG_MS, "back-pressured writer still blocked %u ms "
	         "after the reader left", HANG_MS);
	ck_assert_msg(w.reader_leaving_at_done, "back-pressured writer "
	              "finished before the reader left");
	reader_join(&r);

	/* Inside a section: never waits. */
	reader_start(&r2);
	tst_thread_start(&w2.thr, bp_writer_main, &w2);
	TST_JOIN(w2.thr, 2000, "a writer INSIDE a section queuing %d "
	         "callbacks with the limit at 100 did not finish in 2 s: "
	         "back-pressure must not apply inside a section", N);
	ck_assert_msg(!w2.reader_leaving_at_done, "reader left early");
	reader_join(&r2);

	barrier_bounded();
	relhash_set_callback_limit(0);
	s2 = stats_now();
	ck_assert_msg(tst_load(&cb_count) == 2 * N, "%llu of %d callbacks ran",
	              (unsigned long long)tst_load(&cb_count), 2 * N);
	printf("[%s] back-pressure: %llu waits; pending peaked near %llu "
	       "(limit 100)\n", tst_mode_name,
	       (unsigned long long)(s2.backpressure_waits -
	                            s0.backpressure_waits),
	       (unsigned long long)s1.callbacks_pending);
	free(heads);
}
END_TEST

/* ====================================================================== */
/* Stall warnings                                                          */

/* Does s contain the decimal number v as a whole token? */
static bool contains_number(const char *s, long v)
{
	char num[32];
	size_t n = (size_t)snprintf(num, sizeof(num), "%ld", v);

	for (const char *p = strstr(s, num); p; p = strstr(p + 1, num)) {
		bool before = p > s && p[-1] >= '0' && p[-1] <= '9';
		bool after = p[n] >= '0' && p[n] <= '9';

		if (!before && !after)
			return true;
	}
	return false;
}

/*
 * With the stall timeout at 200 ms: a reader holding a section for 60 ms
 * is not reported; one holding it for 600 ms while synchronize waits is
 * reported exactly once, on stderr, naming its thread id.
 */
START_TEST(stall_warning)
{
	struct reader quick = { .depth = 1 }, slow = { .depth = 1 };
	struct waiter s1 = { 0 }, s2 = { 0 };
	struct relhash_epoch_stats a, b, c;
	struct tst_capture cap;
	char out[4096];

	barrier_bounded();
	relhash_set_stall_timeout_ms(200);
	a = stats_now();
	tst_capture_stderr(&cap);

	reader_start(&quick);
	waiter_start(&s1, do_synchronize);
	tst_sleep_ms(60);
	reader_release(&quick);
	TST_JOIN(s1.thr, HANG_MS, "synchronize did not return");
	b = stats_now();

	reader_start(&slow);
	waiter_start(&s2, do_synchronize);
	tst_sleep_ms(600);
	reader_release(&slow);
	TST_JOIN(s2.thr, HANG_MS, "synchronize did not return");
	c = stats_now();

	tst_capture_end(&cap, out, sizeof(out));
	relhash_set_stall_timeout_ms(0);
	if (out[0])
		fprintf(stderr, "[%s] captured stderr: %s", tst_mode_name, out);
	reader_join(&quick);
	reader_join(&slow);

	ck_assert_msg(b.stall_warnings == a.stall_warnings, "a 60 ms section "
	              "with the stall timeout at 200 ms was reported (%llu "
	              "warnings)", (unsigned long long)(b.stall_warnings -
	                                                a.stall_warnings));
	ck_assert_msg(c.stall_warnings - b.stall_warnings == 1, "a reader "
	              "stalled 600 ms (timeout 200 ms) while one synchronize "
	              "waited produced %llu stall warnings, expected 1",
	              (unsigned long long)(c.stall_warnings - b.stall_warnings));
	ck_assert_msg(out[0] != '\0', "stall warning counted but nothing was "
	              "written to stderr");
	ck_assert_msg(contains_number(out, slow.tid), "the stall warning does "
	              "not name the stalled thread (tid %d): \"%s\"",
	              (int)slow.tid, out);
	ck_assert_msg(!contains_number(out, quick.tid) ||
	              quick.tid == slow.tid, "the stall warning names the "
	              "reader that was not stalled (tid %d)", (int)quick.tid);
}
END_TEST

/* ====================================================================== */
/* Thread churn                                                            */

/*
 * Short-lived threads register (read_lock), queue a callback and exit, 300
 * of them, while the test thread runs synchronize in a loop.
 * Catches: the registry keeping exited threads' records (use after free of
 * their TLS, or a grace period waiting forever on a dead thread), lost
 * callbacks at exit, races between exit and the grace-period scan.
 */
static void *churn_leaf(void *arg)
{
	(void)arg;
	relhash_read_lock();
	relhash_read_lock();
	relhash_read_unlock();
	relhash_read_unlock();
	queue_counted(1);
	return NULL;
}

struct churn {
	int stop;
	int finished; /* spawners done */
};

static void *churn_spawner(void *arg)
{
	struct churn *c = arg;

	for (int i = 0; i < 100 && !tst_load(&c->stop); i++) {
		pthread_t t;

		if (pthread_create(&t, NULL, churn_leaf, NULL) != 0) {
			TST_THREAD_CHECK(0, "pthread_create failed");
			break;
		}
		TST_THREAD_CHECK(tst_thread_join_ms(t, HANG_MS, NULL),
		                 "short-lived thread did not exit");
	}
	tst_inc(&c->finished);
	return NULL;
}

START_TEST(thread_churn)
{
	enum { SPAWNERS = 3 };
	pthread_t sp[SPAWNERS];
	struct churn c = { 0 };
	unsigned syncs = 0;
	struct tst_deadline d = tst_deadline_ms(15000);

	tst_store(&cb_count, 0);
	for (int i = 0; i < SPAWNERS; i++)
		tst_thread_start(&sp[i], churn_spawner, &c);
	while (tst_load(&c.finished) < SPAWNERS && !tst_expired(&d)) {
		synchronize_bounded();
		syncs++;
		tst_sleep_us(100);
	}
	tst_store(&c.stop, 1);
	ck_assert_msg(tst_load(&c.finished) == SPAWNERS,
	              "thread churn did not finish in 15 s");
	for (int i = 0; i < SPAWNERS; i++)
		TST_JOIN(sp[i], HANG_MS, "spawner %d did not exit", i);
	barrier_bounded();
	tst_assert_no_thread_failures();
	printf("[%s] thread churn: 300 threads, %u synchronize calls\n",
	       tst_mode_name, syncs);
	ck_assert_msg(tst_load(&cb_count) == 300, "%llu of 300 callbacks "
	              "queued by exited threads ran",
	              (unsigned long long)tst_load(&cb_count));
}
END_TEST

/* ====================================================================== */

static void add_tests(TCase *tc)
{
	tcase_add_test(tc, read_ongoing_tracks_nesting);
	tcase_add_test(tc, sync_waits_for_reader);
	tcase_add_test(tc, sync_waits_for_reader_functions);
	tcase_add_test(tc, sync_waits_for_nested_reader);
	tcase_add_test(tc, sync_waits_for_outermost_section);
	tcase_add_test(tc, sync_waits_for_all_readers);
	tcase_add_test(tc, sync_ignores_later_readers);
	tcase_add_test(tc, sync_woken_promptly);
	tcase_add_test(tc, calls_inside_section_do_not_wait);
	tcase_add_test(tc, callback_waits_for_grace_period);
	tcase_add_test(tc, barrier_covers_exited_threads);
	tcase_add_test(tc, exited_threads_callbacks_run_eventually);
	tcase_add_test(tc, barrier_covers_idle_threads);
	tcase_add_test(tc, unregister_keeps_callbacks);
	tcase_add_test(tc, defer_free_waits_and_frees);
	tcase_add_test(tc, stats_count_callbacks);
	tcase_add_test(tc, callbacks_fifo_per_thread);
	tcase_add_test(tc, callbacks_fifo_across_unregister);
	tcase_add_test(tc, callback_may_queue_callbacks);
	tcase_add_test(tc, barrier_in_callback_refused);
	tcase_add_test(tc, sync_callers_share_grace_periods);
	tcase_add_test(tc, sync_stress_batches);
	tcase_add_test(tc, backpressure_bounds_pending);
	tcase_add_test(tc, stall_warning);
	tcase_add_test(tc, thread_churn);
}

/* Tests that end in abort(): only where each test has a process. */
static void add_abort_tests(TCase *tc)
{
	tcase_add_test_raise_signal(tc, nesting_too_deep_aborts, SIGABRT);
	tcase_add_test_raise_signal(tc, unlock_without_lock_aborts, SIGABRT);
}

int main(void)
{
	Suite *s = suite_create("epoch");
	SRunner *sr = srunner_create(s);
	TCase *tc;

	/* Line-buffered: progress lines interleave sensibly with Check's. */
	setvbuf(stdout, NULL, _IOLBF, 0);

	tc = tcase_create("membarrier");
	tcase_add_checked_fixture(tc, setup_membarrier, NULL);
	tcase_set_timeout(tc, 30);
	add_tests(tc);
	if (srunner_fork_status(sr) == CK_FORK)
		add_abort_tests(tc);
	suite_add_tcase(s, tc);

	/* The fence fallback needs a fresh process per test (see above). */
	if (srunner_fork_status(sr) == CK_FORK) {
		tc = tcase_create("fence");
		tcase_add_checked_fixture(tc, setup_fence, NULL);
		tcase_set_timeout(tc, 30);
		add_tests(tc);
		add_abort_tests(tc);
		suite_add_tcase(s, tc);
	} else {
		fprintf(stderr, "test-epoch: CK_FORK=no: skipping the fence-mode "
		        "tcase (the mode is chosen once per process)\n");
	}
	return tst_run(sr);
}
