/*
 * tests/test-faults.c - fault injection: every allocation the library
 * makes, failed in turn, must surface as a clean -ENOMEM (or the documented
 * fallback), leave the table exactly as it was and working, and leak
 * nothing (LeakSanitizer in the ASan build).
 *
 * The hook: relhash__debug_fail_alloc(n) makes the nth allocation from now
 * fail and returns the countdown it replaces (> 0: the armed failure never
 * fired, so the operation made fewer than n allocations).  Each scenario
 * fails allocation 1, 2, 3, ... until the operation succeeds without
 * reaching the armed one: every allocation it makes has then been failed
 * once.
 */
#include "common.h"

#include <relhash.h>

struct item {
	struct relhash_node node;
	uint64_t key;
};

static const struct relhash_params params = {
	.node_offset = offsetof(struct item, node),
	.key_offset = offsetof(struct item, key),
	.key_len = sizeof(uint64_t),
	.min_size = 4,
};

#define NKEYS 2000

/* The model: items[k] is in the table iff present[k]. */
static struct item items[NKEYS];
static bool present[NKEYS];

static void fill(struct relhash_table *t)
{
	for (uint64_t k = 0; k < NKEYS; k++) {
		items[k].key = k;
		present[k] = k % 3 != 0;
		if (present[k])
			ck_assert_int_eq(relhash_insert(t, &items[k].node), 0);
	}
}

/* The table holds exactly the model, and updates still work on it. */
static void check_model(struct relhash_table *t, const char *after)
{
	size_t n = 0;

	relhash_read_lock();
	for (uint64_t k = 0; k < NKEYS; k++) {
		void *got = relhash_lookup(t, &k);

		ck_assert_msg(got == (present[k] ? &items[k] : NULL),
		              "after %s: key %llu: expected %s, got %p", after,
		              (unsigned long long)k,
		              present[k] ? "its item" : "nothing", got);
		n += present[k];
	}
	relhash_read_unlock();
	ck_assert_msg(relhash_count(t) == n, "after %s: count %zu, model %zu",
	              after, relhash_count(t), n);
	/* Still working: one removal and one insertion, undone. */
	ck_assert_int_eq(relhash_remove(t, &items[1].node), 0);
	ck_assert_int_eq(relhash_insert(t, &items[1].node), 0);
}

static struct relhash_table *create_filled(void)
{
	struct relhash_table *t = relhash_create(&params);

	ck_assert_ptr_nonnull(t);
	fill(t);
	return t;
}

START_TEST(create_fails_cleanly)
{
	long n, left;
	unsigned failures = 0;

	for (n = 1;; n++) {
		struct relhash_table *t;

		relhash__debug_fail_alloc(n);
		errno = 0;
		t = relhash_create(&params);
		left = relhash__debug_fail_alloc(0);
		if (!t) {
			ck_assert_msg(errno == ENOMEM, "allocation %ld failed: "
			              "errno %d, expected ENOMEM", n, errno);
			failures++;
			continue;
		}
		fill(t);
		check_model(t, "create");
		relhash_destroy(t, NULL, NULL);
		if (left > 0)
			break; /* succeeded without reaching allocation n */
	}
	printf("create: %u allocations failed in turn, each -> NULL/ENOMEM\n",
	       failures);
	ck_assert_uint_gt(failures, 0);
}
END_TEST

/* Fail each allocation of relhash_resize(t, to) from size from. */
static void resize_fails_cleanly(size_t from, size_t to, const char *what)
{
	struct relhash_table *t = create_filled();
	unsigned failures = 0;
	long n, left;
	int ret;

	ck_assert_int_eq(relhash_resize(t, from), 0);
	for (n = 1;; n++) {
		relhash__debug_fail_alloc(n);
		ret = relhash_resize(t, to);
		left = relhash__debug_fail_alloc(0);
		if (ret == -ENOMEM) {
			ck_assert_msg(relhash_size(t) == from, "%s: allocation "
			              "%ld failed, size %zu, expected %zu unchanged",
			              what, n, relhash_size(t), from);
			check_model(t, what);
			failures++;
			continue;
		}
		ck_assert_msg(ret == 0, "%s: returned %d", what, ret);
		ck_assert_uint_eq(relhash_size(t), to);
		check_model(t, what);
		if (left > 0)
			break;
		ck_assert_int_eq(relhash_resize(t, from), 0);
	}
	printf("%s %zu -> %zu: %u allocations failed in turn, each -> -ENOMEM, "
	       "table unchanged\n", what, from, to, failures);
	ck_assert_uint_gt(failures, 0);
	relhash_destroy(t, NULL, NULL);
}

START_TEST(shrink_fails_cleanly)
{
	resize_fails_cleanly(1024, 8, "shrink");
}
END_TEST

START_TEST(expand_fails_cleanly)
{
	resize_fails_cleanly(16, 4096, "expand");
}
END_TEST

static void *register_thread(void *arg)
{
	long *left = arg;

	relhash__debug_fail_alloc(1);
	TST_THREAD_CHECK(relhash_thread_register() == 0, "register failed");
	relhash_read_lock();
	relhash_read_unlock();
	*left = relhash__debug_fail_alloc(0);
	return NULL;
}

/* Registration allocates nothing (the record is thread-local), so there is
 * nothing to fail: the armed failure must still be armed afterwards. */
START_TEST(registration_allocates_nothing)
{
	pthread_t th;
	long left = 0;

	tst_reset_thread_failures();
	tst_thread_start(&th, register_thread, &left);
	TST_JOIN(th, 10000, "registering thread did not finish");
	tst_assert_no_thread_failures();
	ck_assert_msg(left == 1, "registration consumed an allocation");
}
END_TEST

/* relhash_defer_free outside a read-side section falls back to waiting for
 * a grace period and freeing at once; LeakSanitizer checks the free. */
START_TEST(defer_free_falls_back)
{
	struct relhash_epoch_stats before = { .size = sizeof(before) };
	struct relhash_epoch_stats after = { .size = sizeof(after) };
	void *p = malloc(64);

	ck_assert_ptr_nonnull(p);
	/* Closes any open block of this thread (with CK_FORK=no, earlier
	 * tests may have left one), so that the next defer allocates. */
	ck_assert_int_eq(relhash_barrier(), 0);
	relhash_epoch_stats(&before);
	relhash__debug_fail_alloc(1);
	relhash_defer_free(p);
	ck_assert_int_eq(relhash__debug_fail_alloc(0), 0);
	relhash_epoch_stats(&after);
	ck_assert_msg(after.grace_periods > before.grace_periods,
	              "the fallback did not wait for a grace period");
	ck_assert_int_eq(relhash_barrier(), 0);
}
END_TEST

/*
 * The fallback keeps the thread's order: a relhash_call() queued before a
 * relhash_defer() whose block cannot be allocated runs first.  A slow
 * callback keeps the callback thread busy, so the earlier call is still in
 * this thread's batch when the defer falls back.
 * Catches: a fallback that only waits for a grace period (B runs first).
 */
static int slow_started;
static char order[4];
static unsigned norder;

static void note_order(char c)
{
	unsigned i = __atomic_fetch_add(&norder, 1, __ATOMIC_SEQ_CST);

	if (i < sizeof(order))
		tst_store(&order[i], c);
}

static void slow_cb(struct relhash_head *h)
{
	(void)h;
	tst_store(&slow_started, 1);
	tst_sleep_ms(200);
}

static void a_cb(struct relhash_head *h)
{
	(void)h;
	note_order('A');
}

static void b_fn(void *ptr)
{
	(void)ptr;
	note_order('B');
}

START_TEST(defer_fallback_keeps_order)
{
	struct relhash_head slow, a;

	ck_assert_int_eq(relhash_barrier(), 0);
	relhash_call(&slow, slow_cb);
	TST_ASSERT_WAIT(tst_load(&slow_started), 10000,
	                "the callback thread never ran the slow callback");
	relhash_call(&a, a_cb);
	relhash__debug_fail_alloc(1);
	relhash_defer(b_fn, NULL);
	ck_assert_int_eq(relhash__debug_fail_alloc(0), 0);
	ck_assert_int_eq(relhash_barrier(), 0);
	ck_assert_msg(tst_load(&norder) == 2 && order[0] == 'A' &&
	              order[1] == 'B', "after relhash_call(A) and a "
	              "relhash_defer(B) that could not allocate, ran %.*s "
	              "(want AB)", (int)tst_load(&norder), order);
}
END_TEST

/* Has the armed failure fired?  (Peeks by disarming and re-arming.) */
static bool failure_fired(void)
{
	long left = relhash__debug_fail_alloc(0);

	if (left > 0)
		relhash__debug_fail_alloc(left);
	return left == 0;
}

/* An automatic resize that cannot allocate leaves the table as it was; a
 * later one, with memory back, succeeds. */
START_TEST(autoresize_survives_failure)
{
	struct relhash_params p = params;
	struct relhash_table *t;
	struct relhash_table_stats st = { .size = sizeof(st) };
	uint64_t k;

	p.flags = RELHASH_AUTO_RESIZE;
	p.initial_size = 4;
	t = relhash_create(&p);
	ck_assert_ptr_nonnull(t);
	relhash__debug_fail_alloc(1);
	for (k = 0; k < NKEYS; k++) {
		items[k].key = k;
		present[k] = true;
		ck_assert_int_eq(relhash_insert(t, &items[k].node), 0);
	}
	/* The resize thread tries and fails (consuming the failure). */
	TST_ASSERT_WAIT(failure_fired(), 5000,
	                "the auto-resize thread never allocated");
	check_model(t, "failed auto-resize");
	/* Memory is back: the next sampled update asks again. */
	for (k = 0; k < 256; k++) {
		ck_assert_int_eq(relhash_remove(t, &items[k].node), 0);
		ck_assert_int_eq(relhash_insert(t, &items[k].node), 0);
	}
	TST_ASSERT_WAIT(relhash_size(t) * 3 / 4 >= NKEYS, 10000,
	                "table did not grow after the failure: size %zu",
	                relhash_size(t));
	check_model(t, "auto-resize");
	relhash_table_stats(t, &st);
	printf("auto-resize: failed once, then grew to %zu buckets in %llu "
	       "resizes\n", relhash_size(t), (unsigned long long)st.resizes);
	relhash_destroy(t, NULL, NULL);
}
END_TEST

int main(void)
{
	const TTest *tests[] = {
		create_fails_cleanly,
		shrink_fails_cleanly,
		expand_fails_cleanly,
		registration_allocates_nothing,
		defer_free_falls_back,
		defer_fallback_keeps_order,
		autoresize_survives_failure,
	};

	return tst_run_tests("faults", 120, tests, TST_COUNT(tests));
}
