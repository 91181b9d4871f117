/*
 * tests/test-stall.c - a reader that stalls inside a read-side critical
 * section while writers insert and remove.
 *
 * Checks: exactly one stall warning appears (and names the reader's
 * thread); the pending callbacks stay bounded by the back-pressure limit;
 * writers outside any section that pass the limit wait (they cannot finish
 * while the reader stalls), a writer inside a section does not; when the
 * reader leaves, everything drains, relhash_barrier() returns, nothing is
 * lost and nothing was freed while the reader could still see it.
 */
#include "common.h"

#include <fcntl.h>
#include <sys/syscall.h>

#include <relhash.h>

#define LIMIT 200        /* back-pressure limit for this test */
#define STALL_MS 1200    /* how long the reader stays inside */
#define TIMEOUT_MS 300   /* stall warning timeout */
#define NWRITERS 8        /* four per CPU on the 2-CPU CI machine */
#define KEYS_PER_WRITER 4096
#define IN_SECTION_CALLS 2000
#define BATCH 60         /* src/engine/callbacks.c BATCH_MAX */

struct item {
	struct relhash_node node;
	uint64_t key;
	uint64_t live; /* LIVE until freed; then poisoned */
	struct relhash_head rh;
};

#define LIVE 0x11fe11fe11fe11feull

static const struct relhash_params params = {
	.node_offset = offsetof(struct item, node),
	.key_offset = offsetof(struct item, key),
	.key_len = sizeof(uint64_t),
	.initial_size = 16384,
};

static struct relhash_table *table;
static uint64_t frees, removes, writer_done[NWRITERS], reader_left;
static uint64_t pending_max;
static pid_t reader_tid;
static bool stop_monitor;

static void free_item(struct relhash_head *h)
{
	struct item *it = (struct item *)(void *)((char *)h -
	                                           offsetof(struct item, rh));

	tst_poison(it, sizeof(*it));
	free(it);
	tst_inc(&frees);
}

static void free_obj(void *obj, void *arg)
{
	(void)arg;
	free(obj);
}

static struct item *new_item(uint64_t key)
{
	struct item *it = malloc(sizeof(*it));

	ck_assert_ptr_nonnull(it);
	it->key = key;
	it->live = LIVE;
	return it;
}

/* Holds the objects of keys 0..63 across the stall, then checks them. */
static void *stalling_reader(void *arg)
{
	struct tst_barrier *start = arg;
	struct item *held[64];
	uint64_t k;

	tst_store(&reader_tid, (pid_t)syscall(SYS_gettid));
	relhash_read_lock();
	for (k = 0; k < 64; k++) {
		held[k] = relhash_lookup(table, &k);
		TST_THREAD_CHECK(held[k], "stable key %llu missing",
		                 (unsigned long long)k);
	}
	tst_barrier_wait(start, 5000);
	tst_sleep_ms(STALL_MS);
	for (k = 0; k < 64; k++)
		TST_THREAD_CHECK(held[k] && held[k]->live == LIVE &&
		                 held[k]->key == k,
		                 "object of key %llu freed while a reader held it",
		                 (unsigned long long)k);
	tst_store(&reader_left, tst_now_ns());
	relhash_read_unlock();
	return NULL;
}

/* Writer w: churn its own keys, outside any read-side section. */
static void *writer(void *arg)
{
	uintptr_t w = (uintptr_t)arg;
	uint64_t base = 1000000 * (w + 1), k;

	for (int round = 0; round < 2; round++)
		for (k = base; k < base + KEYS_PER_WRITER; k++) {
			struct item *it = new_item(k);

			TST_THREAD_CHECK(!relhash_read_ongoing(),
			                 "writer inside a section");
			TST_THREAD_CHECK(relhash_insert(table, &it->node) == 0,
			                 "insert %llu", (unsigned long long)k);
			TST_THREAD_CHECK(relhash_remove(table, &it->node) == 0,
			                 "remove %llu", (unsigned long long)k);
			tst_inc(&removes);
			relhash_call(&it->rh, free_item);
		}
	tst_store(&writer_done[w], tst_now_ns());
	return NULL;
}

/* Samples the pending callbacks until told to stop. */
static void *monitor(void *arg)
{
	struct relhash_epoch_stats st = { .size = sizeof(st) };

	(void)arg;
	while (!tst_load(&stop_monitor)) {
		relhash_epoch_stats(&st);
		if (st.callbacks_pending > tst_load(&pending_max))
			tst_store(&pending_max, st.callbacks_pending);
		tst_sleep_us(500);
	}
	return NULL;
}

/* What the test thread saw, for the report and the verdict. */
struct stall_run {
	struct relhash_epoch_stats before, after;
	uint64_t pending_outside;  /* pending callbacks before the in-section
	                              writer queued any */
	uint64_t t_in_section;     /* ns the in-section writer took */
	char log[4096];            /* the captured stderr */
};

/* Back-pressure limit, stall timeout, and the table with keys 0..63. */
static void stall_setup(void)
{
	uint64_t k;

	relhash_set_callback_limit(LIMIT);
	relhash_set_stall_timeout_ms(TIMEOUT_MS);
	table = relhash_create(&params);
	ck_assert_ptr_nonnull(table);
	for (k = 0; k < 64; k++)
		ck_assert_int_eq(relhash_insert(table, &new_item(k)->node), 0);
}

/* A writer inside a section never waits on back-pressure: queue
 * IN_SECTION_CALLS callbacks in one section; returns how long it took. */
static uint64_t write_in_section(void)
{
	uint64_t t0 = tst_now_ns(), k;

	relhash_read_lock();
	for (k = 0; k < IN_SECTION_CALLS; k++) {
		struct item *it = new_item(k + 1);

		tst_inc(&removes);
		relhash_call(&it->rh, free_item);
	}
	relhash_read_unlock();
	return tst_now_ns() - t0;
}

/* The stall itself: the reader stalls, the outside writers run into the
 * limit, a writer queues inside a section; then everything drains. */
static void run_stall(struct stall_run *r)
{
	pthread_t reader, writers[NWRITERS], mon;
	struct relhash_epoch_stats mid = { .size = sizeof(mid) };
	struct tst_barrier start;

	tst_barrier_init(&start, 2);
	tst_thread_start(&reader, stalling_reader, &start);
	ck_assert(tst_barrier_wait(&start, 5000));
	tst_thread_start(&mon, monitor, NULL);
	for (uintptr_t w = 0; w < NWRITERS; w++)
		tst_thread_start(&writers[w], writer, (void *)w);

	/* Let the outside writers run into the limit, and note how far the
	 * pending callbacks got before anyone queues inside a section. */
	TST_WAIT_FOR((relhash_epoch_stats(&mid),
	              mid.backpressure_waits - r->before.backpressure_waits >=
	                      NWRITERS), STALL_MS / 2);
	r->pending_outside = tst_load(&pending_max);
	r->t_in_section = write_in_section();

	TST_JOIN(reader, STALL_MS + 10000, "stalled reader did not finish");
	for (int w = 0; w < NWRITERS; w++)
		TST_JOIN(writers[w], 60000, "writer %d did not finish", w);
	ck_assert_int_eq(relhash_barrier(), 0);
	tst_store(&stop_monitor, true);
	TST_JOIN(mon, 5000, "monitor did not stop");
	r->after.size = sizeof(r->after);
	relhash_epoch_stats(&r->after);
}

static unsigned count_warnings(const char *log)
{
	unsigned n = 0;

	for (const char *l = strstr(log, "stalled"); l; l = strstr(l + 1, "stalled"))
		n++;
	return n;
}

static bool names_reader(const char *log)
{
	char tid[32];

	snprintf(tid, sizeof(tid), "thread %d", (int)reader_tid);
	return strstr(log, tid) != NULL;
}

static void assert_stall_outcome(const struct stall_run *r)
{
	unsigned warnings = count_warnings(r->log);

	printf("stall: %u warning(s) (\"%.*s\"), pending max %llu (limit %d) "
	       "before the in-section writer, %llu after, "
	       "%llu back-pressure waits, in-section writer queued %d in %.1f ms\n",
	       warnings, (int)strcspn(r->log, "\n"), r->log,
	       (unsigned long long)r->pending_outside, LIMIT,
	       (unsigned long long)pending_max,
	       (unsigned long long)(r->after.backpressure_waits -
	                            r->before.backpressure_waits),
	       IN_SECTION_CALLS, (double)r->t_in_section / 1e6);

	ck_assert_msg(warnings == 1, "expected exactly 1 stall warning, got %u: "
	              "%s", warnings, r->log);
	ck_assert_msg(names_reader(r->log), "the warning does not name the "
	              "reader (thread %d): %s", (int)reader_tid, r->log);
	ck_assert_msg(r->after.stall_warnings - r->before.stall_warnings == 1,
	              "stall_warnings counted %llu",
	              (unsigned long long)(r->after.stall_warnings -
	                                   r->before.stall_warnings));
	ck_assert_msg(r->after.backpressure_waits > r->before.backpressure_waits,
	              "no writer waited on back-pressure");
	for (int w = 0; w < NWRITERS; w++)
		ck_assert_msg(writer_done[w] > reader_left,
		              "writer %d finished %.1f ms before the stalled reader "
		              "left: it did not wait", w,
		              tst_ms(writer_done[w], reader_left));
	/* Writers outside sections exceed the limit by at most the 60 each
	 * announced last, plus the 59 or fewer each has not announced. */
	ck_assert_msg(r->pending_outside <= LIMIT + 2 * BATCH * NWRITERS,
	              "pending callbacks reached %llu (limit %d)",
	              (unsigned long long)r->pending_outside, LIMIT);
	ck_assert_msg(r->t_in_section < (uint64_t)STALL_MS * 1000000 / 2,
	              "the in-section writer waited (%.1f ms)",
	              (double)r->t_in_section / 1e6);
	ck_assert_msg(r->after.callbacks_pending == 0, "%llu callbacks still "
	              "pending after the barrier",
	              (unsigned long long)r->after.callbacks_pending);
	ck_assert_msg(tst_load(&frees) == tst_load(&removes),
	              "%llu objects retired, %llu freed",
	              (unsigned long long)removes, (unsigned long long)frees);
	ck_assert_uint_eq(relhash_count(table), 64);
}

START_TEST(stalled_reader)
{
	struct stall_run r = { 0 };
	struct tst_capture cap;

	stall_setup();
	r.before.size = sizeof(r.before);
	relhash_epoch_stats(&r.before);
	tst_capture_stderr(&cap); /* for the warning */
	run_stall(&r);
	tst_capture_end(&cap, r.log, sizeof(r.log));
	tst_assert_no_thread_failures();
	assert_stall_outcome(&r);

	relhash_set_callback_limit(0);
	relhash_set_stall_timeout_ms(0);
	relhash_destroy(table, free_obj, NULL);
}
END_TEST

int main(void)
{
	const TTest *tests[] = { stalled_reader };

	return tst_run_tests("stall", 120, tests, TST_COUNT(tests));
}
