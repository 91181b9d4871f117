/*
 * tests/test-fork.c - fork(2) in a program whose other threads use relhash.
 *
 * Each test forks while the parent's threads are in states that, without
 * the fork handlers (src/engine/fork.c), leave the child stuck or short of
 * callbacks, and checks in the child, within a time limit:
 * - a reader inside a section in the parent does not hold up the child's
 *   grace periods;
 * - callbacks queued in the parent (in another thread's batch, in a cycle
 *   waiting for its grace period) all run in the child, exactly once;
 * - the child starts its own callback thread, also when its first
 *   callback goes into a batch that was open at the fork;
 * - a barrier that another thread of the parent was waiting in does not
 *   leave the child a marker in a dead thread's stack;
 * - a fork inside a read-side section, from inside a callback, or while
 *   the callback thread runs a callback that waits for the forking thread,
 *   does not deadlock (and the child runs the callbacks after that one);
 * - a table that the automatic resize thread was resizing stays usable;
 * - forks while other threads queue callbacks as fast as they can (the
 *   fork handler waits for their lock-free appends, doc/DESIGN.md
 *   "Queueing without a lock") leave every batch whole in the child: all
 *   the callbacks queued before the fork run there, once and in order;
 * - local calls (relhash_defer_local()) go on running in a child forked
 *   while their grace-period request was outstanding.
 */
#include "common.h"

#include <signal.h>
#include <sys/wait.h>

#include <relhash.h>

/*
 * Sanitizer runtimes whose own locks are not made safe across fork: TSan
 * does not support threads after a multithreaded fork (die_after_fork),
 * and GCC 12's ASan allocator has no fork handlers, so a child can hang in
 * malloc when a parent thread held its lock (seen in CI: the child's new
 * callback thread stuck in calloc inside the ASan allocator).
 */
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define TST_FORK_UNSUPPORTED 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define TST_FORK_UNSUPPORTED 1
#endif
#endif

#define CHILD_MS 20000 /* a child that takes longer is stuck */
#define NCALLS 40      /* fewer than a batch (60): they stay in it */

/*
 * Run fn() in a child; its exit status, or -1 if it died of a signal or
 * was still running after CHILD_MS (then it is killed).
 */
static int run_in_child(int (*fn)(void))
{
	struct tst_deadline d = tst_deadline_ms(CHILD_MS);
	pid_t pid = fork();
	int status;

	ck_assert_msg(pid >= 0, "fork failed");
	if (pid == 0)
		_exit(fn());
	while (waitpid(pid, &status, WNOHANG) == 0) {
		if (tst_expired(&d)) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			return -1;
		}
		tst_sleep_ms(1);
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* ---------------------------------------------------------------------- */
/* Callbacks and readers of the parent                                     */

static struct relhash_head heads[NCALLS];
static uint64_t calls_run;
static int release; /* set by the test thread after the fork */
static int reader_inside, calls_queued;

static void count_call(struct relhash_head *h)
{
	(void)h;
	tst_inc(&calls_run);
}

static void wait_release(void)
{
	while (!tst_load(&release))
		tst_sleep_ms(1);
}

/* Stays inside a read-side section until released. */
static void *reader(void *arg)
{
	(void)arg;
	relhash_read_lock();
	tst_store(&reader_inside, 1);
	wait_release();
	relhash_read_unlock();
	return NULL;
}

/* Queues NCALLS callbacks, then stays alive (its batch is not handed off
 * by an exit) until released. */
static void *queuer(void *arg)
{
	unsigned i;

	(void)arg;
	for (i = 0; i < NCALLS; i++)
		relhash_call(&heads[i], count_call);
	tst_store(&calls_queued, 1);
	wait_release();
	return NULL;
}

static int in_barrier;

/* Waits in relhash_barrier() across the fork: its marker is in the queue
 * the child inherits. */
static void *barrier_waiter(void *arg)
{
	(void)arg;
	tst_store(&in_barrier, 1);
	relhash_barrier();
	return NULL;
}

/* Uses its stack: in the child, new threads get the stacks of the
 * parent's threads that are gone. */
static void *stack_user(void *arg)
{
	volatile unsigned char buf[128 * 1024];

	(void)arg;
	memset((void *)buf, 0xab, sizeof(buf));
	return NULL;
}

static uint64_t calls_expected;

static int child_uses_engine(void)
{
	if (relhash_synchronize() != 0)
		return 10;
	if (relhash_barrier() != 0)
		return 11;
	if (tst_load(&calls_run) != calls_expected) {
		fprintf(stderr, "child: %llu of %llu callbacks ran\n",
		        (unsigned long long)tst_load(&calls_run),
		        (unsigned long long)calls_expected);
		return 12;
	}
	relhash_defer_free(malloc(64));
	return relhash_barrier() == 0 ? 0 : 13;
}

static struct relhash_head own_call, child_call;

/*
 * In the child: one more callback, with the thread's own batch already
 * open, runs (with all the inherited ones) without a barrier; threads that
 * reuse the parent's stacks do no harm; then the engine's checks.
 */
static int child_after_threads(void)
{
	pthread_t t[4];
	unsigned i;

	relhash_call(&child_call, count_call);
	if (!TST_WAIT_FOR(tst_load(&calls_run) == calls_expected, 5000)) {
		fprintf(stderr, "child: %llu of %llu callbacks ran without a "
		        "barrier\n", (unsigned long long)tst_load(&calls_run),
		        (unsigned long long)calls_expected);
		return 14;
	}
	for (i = 0; i < 4; i++)
		if (pthread_create(&t[i], NULL, stack_user, NULL) != 0)
			return 15;
	for (i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	return child_uses_engine();
}

/*
 * The parent's reader is inside a section, so the callback thread's cycle
 * that took the queuer's callbacks waits for its grace period (or they are
 * still in the queuer's batch), a barrier waits, and the test thread's own
 * batch holds a callback the stuck cycle cannot collect: none of it is in
 * a thread of the child.
 */
START_TEST(child_after_readers_and_callbacks)
{
	pthread_t r, q, b;
	int status;

	tst_store(&release, 0);
	tst_store(&calls_run, 0);
	calls_expected = NCALLS + 2; /* the test thread's and the child's */
	/* The callback thread exists before the fork. */
	ck_assert_int_eq(relhash_barrier(), 0);
	tst_thread_start(&r, reader, NULL);
	TST_ASSERT_WAIT(tst_load(&reader_inside), 5000, "reader not inside");
	tst_thread_start(&q, queuer, NULL);
	TST_ASSERT_WAIT(tst_load(&calls_queued), 5000, "callbacks not queued");
	tst_sleep_ms(20); /* let the callback thread take them */
	tst_store(&in_barrier, 0);
	tst_thread_start(&b, barrier_waiter, NULL);
	TST_ASSERT_WAIT(tst_load(&in_barrier), 5000, "no barrier");
	tst_sleep_ms(20); /* the barrier has collected every batch */
	relhash_call(&own_call, count_call);
	ck_assert_uint_eq(tst_load(&calls_run), 0);

	status = run_in_child(child_after_threads);

	tst_store(&release, 1);
	TST_JOIN(r, 10000, "reader");
	TST_JOIN(q, 10000, "queuer");
	TST_JOIN(b, 10000, "barrier waiter");
	ck_assert_int_eq(relhash_barrier(), 0);
	ck_assert_msg(status == 0, "child: status %d (-1: stuck or killed)",
	              status);
	/* The parent is unaffected: its callbacks ran once, here. */
	ck_assert_uint_eq(tst_load(&calls_run), NCALLS + 1);
}
END_TEST

/* ---------------------------------------------------------------------- */
/* Forks that must not wait                                                */

static int child_leaves_section(void)
{
	if (!relhash_read_ongoing())
		return 20;
	relhash_read_unlock();
	return child_uses_engine();
}

/* The forking thread's own batch holds a callback: the child runs it. */
START_TEST(fork_inside_section)
{
	int status;

	tst_store(&calls_run, 0);
	calls_expected = 1;
	relhash_call(&heads[0], count_call);
	relhash_read_lock();
	status = run_in_child(child_leaves_section);
	relhash_read_unlock();
	ck_assert_int_eq(relhash_barrier(), 0);
	ck_assert_uint_eq(tst_load(&calls_run), 1);
	ck_assert_msg(status == 0, "child: status %d (-1: stuck or killed)",
	              status);
}
END_TEST

static int block_started, holder_inside, let_go;

/* Blocks its cycle until released: in the child, where nobody releases
 * it, it must not run at all. */
static void blocking_call(struct relhash_head *h)
{
	(void)h;
	tst_store(&block_started, 1);
	wait_release();
}

static int child_after_running_callback(void)
{
	if (relhash_barrier() != 0)
		return 40;
	return tst_load(&calls_run) == calls_expected ? 0 : 41;
}

/*
 * The callback thread runs a callback that waits for the test thread,
 * which forks: the fork must not wait for it, and the child runs the
 * callbacks queued after it (not the one that was running).
 */
/* Holds a cycle in its grace period until let go. */
static void *holding_reader(void *arg)
{
	(void)arg;
	relhash_read_lock();
	tst_store(&holder_inside, 1);
	while (!tst_load(&let_go))
		tst_sleep_ms(1);
	relhash_read_unlock();
	return NULL;
}

START_TEST(fork_while_callback_runs)
{
	static struct relhash_head first, block;
	pthread_t r;
	unsigned i;
	int status;

	tst_store(&release, 0);
	tst_store(&block_started, 0);
	tst_store(&calls_run, 0);
	tst_store(&let_go, 0);
	tst_store(&holder_inside, 0);
	/* A cycle takes "first" and waits for the reader, so the next cycle
	 * takes block and the five after it together. */
	tst_thread_start(&r, holding_reader, NULL);
	TST_ASSERT_WAIT(tst_load(&holder_inside), 5000, "reader not inside");
	relhash_call(&first, count_call);
	tst_sleep_ms(20);
	relhash_call(&block, blocking_call);
	for (i = 0; i < 5; i++)
		relhash_call(&heads[i], count_call);
	tst_store(&let_go, 1);
	TST_JOIN(r, 10000, "reader");
	TST_ASSERT_WAIT(tst_load(&block_started), 5000,
	                "the blocking callback did not start");
	calls_expected = 6; /* "first" ran in the parent before the fork */

	status = run_in_child(child_after_running_callback);

	tst_store(&release, 1);
	ck_assert_int_eq(relhash_barrier(), 0);
	ck_assert_uint_eq(tst_load(&calls_run), 6);
	ck_assert_msg(status == 0, "child: status %d (-1: stuck or killed)",
	              status);
}
END_TEST

static int fork_status = -2;

static int child_synchronizes(void)
{
	return relhash_synchronize() == 0 ? 0 : 1;
}

/* Runs on the callback thread, inside a cycle. */
static void fork_from_callback(struct relhash_head *h)
{
	(void)h;
	tst_store(&fork_status, run_in_child(child_synchronizes));
}

START_TEST(fork_inside_callback)
{
	static struct relhash_head head;

	tst_store(&fork_status, -2);
	relhash_call(&head, fork_from_callback);
	ck_assert_int_eq(relhash_barrier(), 0);
	ck_assert_msg(tst_load(&fork_status) == 0,
	              "child of a callback: status %d", tst_load(&fork_status));
}
END_TEST

/* ---------------------------------------------------------------------- */
/* Tables                                                                  */

#define TABLE_KEYS 5000

struct item {
	struct relhash_node node;
	uint64_t key;
};

static const struct relhash_params auto_params = {
	.node_offset = offsetof(struct item, node),
	.key_offset = offsetof(struct item, key),
	.key_len = sizeof(uint64_t),
	.initial_size = 4,
	.flags = RELHASH_AUTO_RESIZE,
};

static struct relhash_table *table;
static struct item *items;

/* Every key present, then every key removed, the table destroyed. */
static int child_uses_table(void)
{
	uint64_t k;

	for (k = 0; k < TABLE_KEYS; k++) {
		bool found;

		relhash_read_lock();
		found = relhash_lookup(table, &k) == &items[k];
		relhash_read_unlock();
		if (!found)
			return 30;
	}
	for (k = 0; k < TABLE_KEYS; k++)
		if (relhash_remove(table, &items[k].node) != 0)
			return 31;
	if (relhash_count(table) != 0)
		return 32;
	relhash_destroy(table, NULL, NULL);
	return 0;
}

/* Inside a section for 300 ms, whoever waits. */
static void *brief_reader(void *arg)
{
	(void)arg;
	relhash_read_lock();
	tst_store(&reader_inside, 1);
	tst_sleep_ms(300);
	relhash_read_unlock();
	return NULL;
}

/*
 * Inserting TABLE_KEYS keys into a 4-bucket table sets off automatic
 * expansion; a reader inside a section makes the resize thread's first
 * step wait for its grace period, so the fork comes in the middle of a
 * step.  The fork waits for the step to end (about 250 ms); a child that
 * inherited the table in mid-step would wait forever for its resize lock.
 */
START_TEST(fork_during_auto_resize)
{
	pthread_t r;
	uint64_t k;
	int status;

	items = calloc(TABLE_KEYS, sizeof(*items));
	ck_assert(items);
	table = relhash_create(&auto_params);
	ck_assert(table);
	tst_store(&reader_inside, 0);
	tst_thread_start(&r, brief_reader, NULL);
	TST_ASSERT_WAIT(tst_load(&reader_inside), 5000, "reader not inside");
	for (k = 0; k < TABLE_KEYS; k++) {
		items[k].key = k;
		ck_assert_int_eq(relhash_insert(table, &items[k].node), 0);
	}
	tst_sleep_ms(50);

	status = run_in_child(child_uses_table);

	TST_JOIN(r, 10000, "reader");
	relhash_destroy(table, NULL, NULL);
	free(items);
	ck_assert_msg(status == 0, "child: status %d (-1: stuck or killed)",
	              status);
}
END_TEST

/* ---------------------------------------------------------------------- */
/* Forks while threads queue                                               */

#define QUEUERS 2
#define QUEUE_MAX 20000 /* calls per queuing thread, at most */
#define QUEUE_FORKS 5

struct queued_item {
	struct relhash_head head;
	unsigned thread, seq;
};

static struct queued_item queued_items[QUEUERS][QUEUE_MAX];
/* Per queuing thread: calls that returned; the next call due to run. */
static unsigned queued_calls[QUEUERS], next_due[QUEUERS];
static unsigned order_errors;
static int queuers_stop;

static void queued_item_ran(struct queued_item *it)
{
	if (it->seq != next_due[it->thread])
		tst_inc(&order_errors);
	next_due[it->thread] = it->seq + 1;
}

static void queued_call_ran(struct relhash_head *h)
{
	queued_item_ran((struct queued_item *)(void *)h);
}

static void queued_defer_ran(void *p)
{
	queued_item_ran(p);
}

/* Queues until stopped, relhash_defer() twice for each relhash_call(). */
static void *busy_queuer(void *arg)
{
	unsigned id = (unsigned)(uintptr_t)arg, i;

	for (i = 0; i < QUEUE_MAX && !tst_load(&queuers_stop); i++) {
		struct queued_item *it = &queued_items[id][i];

		it->thread = id;
		it->seq = i;
		if (i % 3)
			relhash_defer(queued_defer_ran, it);
		else
			relhash_call(&it->head, queued_call_ran);
		tst_store(&queued_calls[id], i + 1);
	}
	return NULL;
}

/*
 * In the child: every call that had returned at the fork runs (and the one
 * in progress may: its window was closed for the fork), in order, once.
 * Nothing ran in the parent (its reader holds every grace period), and no
 * callback was running at the fork, so none is lost.
 */
static int child_runs_queued(void)
{
	unsigned t, at_fork[QUEUERS];

	for (t = 0; t < QUEUERS; t++)
		at_fork[t] = tst_load(&queued_calls[t]);
	if (relhash_barrier() != 0)
		return 30;
	if (tst_load(&order_errors)) {
		fprintf(stderr, "child: %u callbacks out of order\n",
		        tst_load(&order_errors));
		return 31;
	}
	for (t = 0; t < QUEUERS; t++)
		if (next_due[t] != at_fork[t] && next_due[t] != at_fork[t] + 1) {
			fprintf(stderr, "child: thread %u had queued %u calls at "
			        "the fork; %u ran\n", t, at_fork[t], next_due[t]);
			return 32;
		}
	return 0;
}

/*
 * A reader holds the parent's grace periods (so its callback thread runs
 * nothing, and nothing is lost at a fork), the limit is out of reach (so
 * the queuers never wait), and the test forks QUEUE_FORKS times while they
 * queue.  The parent runs all of its callbacks afterwards, in order.
 */
START_TEST(fork_while_threads_queue)
{
	pthread_t r, q[QUEUERS];
	unsigned t, f;
	int status;

	tst_store(&release, 0);
	tst_store(&reader_inside, 0);
	relhash_set_callback_limit(2 * QUEUERS * QUEUE_MAX);
	ck_assert_int_eq(relhash_barrier(), 0);
	tst_thread_start(&r, reader, NULL);
	TST_ASSERT_WAIT(tst_load(&reader_inside), 5000, "reader not inside");
	for (t = 0; t < QUEUERS; t++)
		tst_thread_start(&q[t], busy_queuer, (void *)(uintptr_t)t);
	for (f = 0; f < QUEUE_FORKS; f++) {
		tst_sleep_ms(2);
		status = run_in_child(child_runs_queued);
		if (status != 0)
			break;
	}
	tst_store(&queuers_stop, 1);
	for (t = 0; t < QUEUERS; t++)
		TST_JOIN(q[t], 10000, "queuing thread %u", t);
	tst_store(&release, 1);
	TST_JOIN(r, 10000, "reader");
	ck_assert_msg(status == 0, "child %u: status %d (-1: stuck or killed)",
	              f, status);
	ck_assert_int_eq(relhash_barrier(), 0);
	ck_assert_uint_eq(tst_load(&order_errors), 0);
	for (t = 0; t < QUEUERS; t++)
		ck_assert_uint_eq(next_due[t], queued_calls[t]);
}
END_TEST

/* ---------------------------------------------------------------------- */
/* Local calls (relhash_defer_local())                                      */

static unsigned local_ran;

static void count_local(void *ptr)
{
	(void)ptr;
	local_ran++;
}

/* Queue local calls, a block a millisecond, under the limit, until one
 * runs: 0, or 1 if none ran. */
static int child_local_calls_run(void)
{
	unsigned queued;

	for (queued = 0; queued < 30000 && !local_ran; queued++) {
		relhash_defer_local(count_local, NULL);
		if (queued % 60 == 59)
			tst_sleep_ms(1);
	}
	return local_ran ? 0 : 1;
}

/*
 * Fork right after a block of local calls asked the parent's callback
 * thread for a grace period: in the child that request is lost with the
 * thread, and the child's local calls must still run, long before the
 * limit would make it wait.
 */
START_TEST(fork_keeps_local_calls_running)
{
	unsigned i;

	relhash_set_callback_limit(1u << 20);
	for (i = 0; i < 60; i++)
		relhash_defer_local(count_local, NULL);
	ck_assert_int_eq(run_in_child(child_local_calls_run), 0);
}
END_TEST

int main(void)
{
	const TTest *tests[] = {
		child_after_readers_and_callbacks,
		fork_inside_section,
		fork_while_callback_runs,
		fork_inside_callback,
		fork_during_auto_resize,
		fork_while_threads_queue,
		fork_keeps_local_calls_running,
	};

#ifdef TST_FORK_UNSUPPORTED
	return 77; /* skip: see TST_FORK_UNSUPPORTED */
#endif
	return tst_run_tests("fork", 120, tests, TST_COUNT(tests));
}
