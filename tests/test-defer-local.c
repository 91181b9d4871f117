/*
 * tests/test-defer-local.c - relhash_defer_local() and
 * relhash_reclaim_local(): calls run after a grace period by the thread
 * that queued them (doc/DESIGN.md, "Reclaiming on the calling thread").
 *
 * - never_early: while a reader that entered before the calls stays in
 *   its section, none runs, whatever the caller does; once it leaves they
 *   all run, in order, on the calling thread;
 * - runs_unprompted: a thread that only queues (nothing else in the
 *   process runs grace periods) sees its calls run, well under the limit;
 * - bounded: outside a section a thread holds at most about the callback
 *   limit; inside one it never waits;
 * - reclaim_rules: -EDEADLK for a wait inside a section (nothing runs), a
 *   poll that runs nothing early, a wait that runs everything;
 * - funcs_may_queue: a func that queues local calls; they run later, all
 *   in order;
 * - exit_hands_over: a thread's pending calls run after it exits, in
 *   order (relhash_barrier() covers them then), and a thread with none
 *   leaves no block behind; also when a func unregisters the thread, or
 *   ends it from the thread's own call (unregister_inside_func);
 * - callback_thread_runs_its_own: local calls queued by callbacks run;
 * - stats_count_blocks: relhash_epoch_stats() counts local calls a block
 *   at a time, as done once run or handed over (exit_hands_over checks
 *   that nothing stays pending after an exit); stats_count_threads: the
 *   same with eight threads queueing, running and handing over at once,
 *   sampled meanwhile.
 * (tests/test-fork.c: a fork's child runs its local calls.)
 *
 * Every test runs in both grace-period modes.  The deliberate bugs
 * RH_BUG_LOCAL_EARLY, RH_BUG_LOCAL_NO_REQUEST, RH_BUG_LOCAL_UNBOUNDED and
 * RH_BUG_LOCAL_SPARE_LEAKED must fail never_early, runs_unprompted,
 * bounded and exit_hands_over (tests/negative-controls.sh).
 */
#include "common.h"

#include <relhash.h>

#define HANG_MS 10000u

/* What the funcs record: how many ran, whether in order, on which thread. */
struct record {
	unsigned ran;
	unsigned next;       /* the sequence number expected next */
	bool out_of_order;
	bool other_thread;
	pthread_t owner;
};

static struct record rec;

struct call {
	unsigned seq;
};

static void record_call(void *ptr)
{
	struct call *c = ptr;

	if (c->seq != rec.next)
		rec.out_of_order = true;
	rec.next = c->seq + 1;
	if (!pthread_equal(pthread_self(), rec.owner))
		rec.other_thread = true;
	tst_inc(&rec.ran);
	free(c);
}

static void record_reset(void)
{
	memset(&rec, 0, sizeof(rec));
	rec.owner = pthread_self();
}

/* Queue n calls numbered from first. */
static void queue_calls(unsigned first, unsigned n)
{
	unsigned i;

	for (i = 0; i < n; i++) {
		struct call *c = malloc(sizeof(*c));

		ck_assert_ptr_nonnull(c);
		c->seq = first + i;
		relhash_defer_local(record_call, c);
	}
}

static struct relhash_epoch_stats stats_now(void)
{
	struct relhash_epoch_stats s = { .size = sizeof(s) };

	ck_assert_int_eq(relhash_epoch_stats(&s), 0);
	ck_assert_uint_le(s.local_calls_done, s.local_calls_queued);
	ck_assert_uint_eq(s.local_calls_pending,
	                  s.local_calls_queued - s.local_calls_done);
	return s;
}

static void *synchronizer_main(void *arg)
{
	(void)arg;
	(void)relhash_synchronize();
	return NULL;
}

START_TEST(never_early)
{
	enum { N = 6000 };
	struct tst_section_holder h;
	pthread_t sync_tid;
	uint64_t t0;
	int n;

	record_reset();
	tst_section_holder_start(&h);
	/* Grace periods are asked for and attempted meanwhile: by the
	 * closing blocks, by another thread, by our polls. */
	tst_thread_start(&sync_tid, synchronizer_main, NULL);
	t0 = tst_now_ns();
	queue_calls(0, N);
	while (tst_ms_since(t0) < 200) {
		ck_assert_int_eq(relhash_reclaim_local(false), 0);
		ck_assert_msg(tst_load(&rec.ran) == 0, "[%s] %u calls ran with "
		              "a reader inside since before they were queued",
		              tst_mode_name, tst_load(&rec.ran));
		tst_sleep_us(500);
	}
	tst_section_holder_stop(&h);
	TST_JOIN(sync_tid, HANG_MS, "synchronize did not return");
	n = relhash_reclaim_local(true);
	ck_assert_int_eq(n, N);
	ck_assert_uint_eq(rec.ran, N);
	ck_assert_msg(!rec.out_of_order, "calls ran out of order");
	ck_assert_msg(!rec.other_thread, "a call ran on another thread");
}
END_TEST

/* Nothing else in the process runs grace periods: the blocks' own
 * requests must get them run, long before the limit forces a wait. */
START_TEST(runs_unprompted)
{
	enum { PER_MS = 60, MAX_CALLS = 120000 };
	unsigned queued = 0;
	uint64_t t0 = tst_now_ns();

	record_reset();
	relhash_set_callback_limit(1u << 20);
	while (tst_load(&rec.ran) == 0 && queued < MAX_CALLS &&
	       tst_ms_since(t0) < HANG_MS) {
		queue_calls(queued, PER_MS);
		queued += PER_MS;
		tst_sleep_ms(1);
	}
	ck_assert_msg(tst_load(&rec.ran) > 0, "[%s] none of %u calls ran in "
	              "%.0f ms", tst_mode_name, queued, tst_ms_since(t0));
	printf("[%s] the first local calls ran after %u were queued, %.1f ms\n",
	       tst_mode_name, queued, tst_ms_since(t0));
	ck_assert_int_ge(relhash_reclaim_local(true), 0);
	ck_assert_uint_eq(rec.ran, queued);
	ck_assert(!rec.out_of_order);
}
END_TEST

START_TEST(bounded)
{
	enum { LIMIT = 600, BLOCK = 60, N = 3000 * BLOCK };
	unsigned i, most = 0;

	record_reset();
	relhash_set_callback_limit(LIMIT);
	for (i = 0; i < N; i += BLOCK) {
		queue_calls(i, BLOCK);
		if (i + BLOCK - tst_load(&rec.ran) > most)
			most = i + BLOCK - tst_load(&rec.ran);
	}
	printf("[%s] limit %u: at most %u local calls pending\n",
	       tst_mode_name, LIMIT, most);
	/* The closed blocks past the limit, plus the block that crossed it
	 * and the open one. */
	ck_assert_msg(most <= LIMIT + 2 * BLOCK, "[%s] %u calls pending, "
	              "limit %u", tst_mode_name, most, LIMIT);

	/* Inside a section: never waits (it would wait for itself). */
	relhash_read_lock();
	queue_calls(N, 4 * LIMIT);
	relhash_read_unlock();
	ck_assert_int_ge(relhash_reclaim_local(true), 0);
	ck_assert_uint_eq(rec.ran, N + 4 * LIMIT);
	ck_assert(!rec.out_of_order);
}
END_TEST

START_TEST(reclaim_rules)
{
	record_reset();
	relhash_read_lock();
	queue_calls(0, 200);
	ck_assert_int_eq(relhash_reclaim_local(true), -EDEADLK);
	/* Our own section holds the grace period up. */
	ck_assert_int_eq(relhash_reclaim_local(false), 0);
	ck_assert_uint_eq(rec.ran, 0);
	relhash_read_unlock();

	ck_assert_int_eq(relhash_reclaim_local(true), 200);
	ck_assert_uint_eq(rec.ran, 200);
	ck_assert_int_eq(relhash_reclaim_local(true), 0);
	ck_assert_int_eq(relhash_reclaim_local(false), 0);
	ck_assert(!rec.out_of_order);
}
END_TEST

/* A func that queues a follower: generation g of the chains holds the
 * sequence numbers g * 1000 + i, queued in that order, so the calls run in
 * increasing order whatever each wait happens to cover (a block closed by
 * a func runs once its own grace period has ended, in the same round or a
 * later one). */
struct link {
	unsigned seq;
	unsigned left;
};

static unsigned chain_ran, chain_next;
static bool chain_disorder, chain_nested_ran;

static void run_link(void *ptr)
{
	struct link *l = ptr;

	if (l->seq < chain_next)
		chain_disorder = true;
	chain_next = l->seq + 1;
	chain_ran++;
	if (l->left) {
		struct link *f = malloc(sizeof(*f));

		ck_assert_ptr_nonnull(f);
		*f = (struct link){ .seq = l->seq + 1000, .left = l->left - 1 };
		relhash_defer_local(run_link, f);
		/* Nested: runs nothing. */
		if (relhash_reclaim_local(true) != 0)
			chain_nested_ran = true;
	}
	free(l);
}

START_TEST(funcs_may_queue)
{
	enum { HEADS = 1000, DEPTH = 3 };
	unsigned i, rounds = 0;

	/* Inside a section, no head runs while heads are still queued (on a
	 * slow machine a grace period could end meanwhile): then a whole
	 * generation is queued before any of it runs, and queue order is
	 * sequence order. */
	relhash_read_lock();
	for (i = 0; i < HEADS; i++) {
		struct link *l = malloc(sizeof(*l));

		ck_assert_ptr_nonnull(l);
		*l = (struct link){ .seq = i, .left = DEPTH - 1 };
		relhash_defer_local(run_link, l);
	}
	relhash_read_unlock();
	/* Each wait runs at least every block closed before it. */
	while (chain_ran < HEADS * DEPTH && rounds++ < DEPTH + 1)
		ck_assert_int_ge(relhash_reclaim_local(true), 0);
	ck_assert_uint_eq(chain_ran, HEADS * DEPTH);
	ck_assert_msg(!chain_disorder, "a chain ran out of order");
	ck_assert_msg(!chain_nested_ran, "a nested reclaim ran calls");
}
END_TEST

static void *exiting_main(void *arg)
{
	(void)arg;
	queue_calls(0, 100); /* one closed block and 40 calls open */
	return NULL;
}

/* Run main on a thread of its own, which leaves with n calls pending:
 * after it has gone, a barrier finds them all run, in order, and (in debug
 * builds, which count them) the library holds no more blocks than before:
 * none of the thread's is left behind. */
static void check_handed_over(void *(*main)(void *), unsigned n)
{
	long blocks = relhash__debug_live_blocks();
	struct relhash_epoch_stats before = stats_now(), after;
	pthread_t tid;

	record_reset();
	tst_thread_start(&tid, main, NULL);
	TST_JOIN(tid, HANG_MS, "the queueing thread did not return");
	ck_assert_int_eq(relhash_barrier(), 0);
	ck_assert_uint_eq(tst_load(&rec.ran), n);
	ck_assert_msg(!rec.out_of_order, "handed-over calls ran out of order");
	ck_assert_msg(relhash__debug_live_blocks() <= blocks,
	              "the library holds %ld blocks, %ld before the thread",
	              relhash__debug_live_blocks(), blocks);
	after = stats_now();
	ck_assert_uint_eq(after.local_calls_queued - before.local_calls_queued,
	                  n);
	ck_assert_uint_eq(after.local_calls_pending, before.local_calls_pending);
}

/* Leaves with nothing pending, its empty block kept for reuse: the exit
 * frees it (the count above, and LeakSanitizer in the sanitizer builds). */
static void *exiting_idle_main(void *arg)
{
	(void)arg;
	queue_calls(0, 120); /* two blocks, none open */
	(void)relhash_reclaim_local(true);
	return NULL;
}

START_TEST(exit_hands_over)
{
	check_handed_over(exiting_main, 100);
	check_handed_over(exiting_idle_main, 120);
}
END_TEST

/* A func that unregisters its thread: the rest of its block, and every
 * other pending call, is handed over and still runs, once each, in order,
 * and each is counted done.  Also when the func, run by the thread's own
 * call, ends the thread (which the documentation does not offer, as funcs
 * may also run where that is not survivable; doc/DESIGN.md, "Reclaiming on
 * the calling thread"): the counts stay right. */
static void unregistering_call(void *ptr)
{
	record_call(ptr);
	relhash_thread_unregister();
}

static void exiting_call(void *ptr)
{
	record_call(ptr);
	pthread_exit(NULL);
}

/* Queue 181 calls, the 31st of them leave(ptr), and run them. */
static void queue_around(void (*leave)(void *ptr))
{
	struct call *c;

	/* Inside a section: nothing runs, and nobody unregisters us, before
	 * every call is queued (a grace period may end meanwhile). */
	relhash_read_lock();
	queue_calls(0, 30);
	c = malloc(sizeof(*c));
	if (c) {
		c->seq = 30;
		relhash_defer_local(leave, c);
		queue_calls(31, 150);
	}
	relhash_read_unlock();
	/* Runs blocks until the func unregisters us, or exits. */
	(void)relhash_reclaim_local(true);
}

static void *unregistering_main(void *arg)
{
	(void)arg;
	queue_around(unregistering_call);
	return NULL;
}

static void *exiting_inside_main(void *arg)
{
	(void)arg;
	queue_around(exiting_call);
	return NULL;
}

START_TEST(unregister_inside_func)
{
	check_handed_over(unregistering_main, 181);
	check_handed_over(exiting_inside_main, 181);
}
END_TEST

/* Callbacks on the callback thread that queue local calls, fewer than a
 * block: nothing else happens in the process, and they still run. */
static void queue_from_callback(void *ptr)
{
	relhash_defer_local(record_call, ptr);
}

START_TEST(callback_thread_runs_its_own)
{
	enum { N = 10 };
	unsigned i;

	record_reset();
	for (i = 0; i < N; i++) {
		struct call *c = malloc(sizeof(*c));

		ck_assert_ptr_nonnull(c);
		c->seq = i;
		relhash_defer(queue_from_callback, c);
	}
	TST_ASSERT_WAIT(tst_load(&rec.ran) == N, HANG_MS, "[%s] %u of %u "
	                "local calls queued by callbacks ran", tst_mode_name,
	                tst_load(&rec.ran), (unsigned)N);
}
END_TEST

START_TEST(stats_count_blocks)
{
	struct relhash_epoch_stats before, inside, after;

	record_reset();
	before = stats_now();
	/* Inside a section no block's grace period can end. */
	relhash_read_lock();
	queue_calls(0, 150); /* two blocks closed, 30 calls open */
	inside = stats_now();
	relhash_read_unlock();
	ck_assert_uint_eq(inside.local_calls_queued - before.local_calls_queued,
	                  120);
	ck_assert_uint_eq(inside.local_calls_done, before.local_calls_done);
	ck_assert_uint_eq(inside.local_calls_pending -
	                  before.local_calls_pending, 120);
	/* Closes the open block, and runs all three. */
	ck_assert_int_eq(relhash_reclaim_local(true), 150);
	after = stats_now();
	ck_assert_uint_eq(after.local_calls_queued - before.local_calls_queued,
	                  150);
	ck_assert_uint_eq(after.local_calls_done - before.local_calls_done, 150);
	ck_assert_uint_eq(after.local_calls_pending, before.local_calls_pending);
}
END_TEST

#define COUNTING_THREADS 8 /* four a CPU on two-CPU machines */
#define COUNTING_CALLS 3000 /* per thread: 50 blocks */

static unsigned counted_ran;

static void count_call(void *ptr)
{
	free(ptr);
	tst_inc(&counted_ran);
}

/* Queues COUNTING_CALLS, every other block inside a section; odd-numbered
 * threads then run what they have, even-numbered ones leave it pending for
 * their exit to hand over. */
static void *counting_main(void *arg)
{
	unsigned id = (unsigned)(uintptr_t)arg, i;

	for (i = 0; i < COUNTING_CALLS; i++) {
		void *p = malloc(8);

		ck_assert_ptr_nonnull(p);
		if (i % 120 == 0)
			relhash_read_lock();
		relhash_defer_local(count_call, p);
		if (i % 120 == 59)
			relhash_read_unlock();
	}
	if (id % 2)
		(void)relhash_reclaim_local(true);
	return NULL;
}

/* More threads than CPUs queue, run and hand over at once, while this thread
 * samples the counts: done never passes queued (stats_now() checks each
 * sample), and once every thread has gone and the barrier has run what
 * they handed over, every call is counted queued and done. */
START_TEST(stats_count_threads)
{
	struct relhash_epoch_stats before = stats_now(), after;
	pthread_t tid[COUNTING_THREADS];
	struct tst_deadline d = tst_deadline_ms(HANG_MS);
	uintptr_t i;

	tst_store(&counted_ran, 0);
	for (i = 0; i < COUNTING_THREADS; i++)
		tst_thread_start(&tid[i], counting_main, (void *)i);
	while (tst_load(&counted_ran) < COUNTING_THREADS * COUNTING_CALLS / 2 &&
	       !tst_expired(&d))
		(void)stats_now();
	for (i = 0; i < COUNTING_THREADS; i++)
		TST_JOIN(tid[i], HANG_MS, "a counting thread did not return");
	ck_assert_int_eq(relhash_barrier(), 0);
	ck_assert_uint_eq(tst_load(&counted_ran),
	                  COUNTING_THREADS * COUNTING_CALLS);
	after = stats_now();
	ck_assert_uint_eq(after.local_calls_queued - before.local_calls_queued,
	                  COUNTING_THREADS * COUNTING_CALLS);
	ck_assert_uint_eq(after.local_calls_done - before.local_calls_done,
	                  COUNTING_THREADS * COUNTING_CALLS);
}
END_TEST

static Suite *defer_local_suite(void)
{
	Suite *s = suite_create("defer-local");
	const TTest *tests[] = {
		never_early, runs_unprompted, bounded,
		reclaim_rules, funcs_may_queue, exit_hands_over,
		unregister_inside_func, callback_thread_runs_its_own,
		stats_count_blocks, stats_count_threads,
	};

	tst_add_mode_tcases(s, 60, tests, TST_COUNT(tests));
	return s;
}

int main(void)
{
	return tst_run(srunner_create(defer_local_suite()));
}
