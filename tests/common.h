/*
 * tests/common.h - small helpers shared by relhash's Check test programs.
 *
 * Include it first (it defines _GNU_SOURCE for pthread_timedjoin_np).
 * Everything here is generic: clocks and deadlines, bounded waits, thread
 * start/join with a time limit, a start barrier, failure reporting from
 * worker threads (Check's ck_assert must only fail on the test's own
 * thread), stderr capture, a reader held inside its section, a poison
 * pattern, fixtures for the two
 * grace-period modes, a tiny PRNG, a 64-bit mixer, and a main() helper;
 * and, through debug-hooks.h, the library's hooks for tests.
 *
 * Rule for every test: never wait without a deadline.  A hang must become a
 * failure that says what did not happen, not a Check timeout.
 */
#ifndef RELHASH_TESTS_COMMON_H
#define RELHASH_TESTS_COMMON_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif

#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sys/syscall.h>
#ifdef __linux__
#include <linux/membarrier.h>
#endif

#include <relhash/epoch.h>

#include "debug-hooks.h"
#include "hashfns.h"

#define TST_UNUSED __attribute__((unused))

/* Sequentially consistent loads and stores of flags shared by test threads. */
#define tst_load(p) __atomic_load_n((p), __ATOMIC_SEQ_CST)
#define tst_store(p, v) __atomic_store_n((p), (v), __ATOMIC_SEQ_CST)
#define tst_inc(p) __atomic_add_fetch((p), 1, __ATOMIC_SEQ_CST)

/* ---------------------------------------------------------------------- */
/* Time                                                                    */

static inline uint64_t tst_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Milliseconds from t0 (a tst_now_ns() value) to t1. */
static inline double tst_ms(uint64_t t0, uint64_t t1)
{
	return t1 >= t0 ? (double)(t1 - t0) / 1e6 : -(double)(t0 - t1) / 1e6;
}

static inline double tst_ms_since(uint64_t t0)
{
	return tst_ms(t0, tst_now_ns());
}

static inline void tst_sleep_us(unsigned us)
{
	struct timespec ts = { .tv_sec = us / 1000000u,
		               .tv_nsec = (long)(us % 1000000u) * 1000 };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static inline void tst_sleep_ms(unsigned ms)
{
	tst_sleep_us(ms * 1000u);
}

/* ---------------------------------------------------------------------- */
/* Deadlines and bounded waits                                             */

struct tst_deadline {
	uint64_t end_ns;
};

static inline struct tst_deadline tst_deadline_ms(unsigned ms)
{
	struct tst_deadline d = { tst_now_ns() + (uint64_t)ms * 1000000u };
	return d;
}

static inline bool tst_expired(const struct tst_deadline *d)
{
	return tst_now_ns() >= d->end_ns;
}

/*
 * Poll cond (every 100 us) until it holds or ms milliseconds have passed.
 * Evaluates to the final value of cond (true: it happened in time).
 */
#define TST_WAIT_FOR(cond, ms)                                               \
	({                                                                   \
		struct tst_deadline tst_d_ = tst_deadline_ms(ms);            \
		bool tst_ok_;                                                \
		while (!(tst_ok_ = (cond)) && !tst_expired(&tst_d_))         \
			tst_sleep_us(100);                                   \
		tst_ok_;                                                     \
	})

/* Fail the test with the message when cond does not hold within ms. */
#define TST_ASSERT_WAIT(cond, ms, ...) \
	ck_assert_msg(TST_WAIT_FOR(cond, ms), __VA_ARGS__)

/* ---------------------------------------------------------------------- */
/* Threads                                                                 */

static inline void tst_thread_start(pthread_t *t, void *(*fn)(void *),
                                    void *arg)
{
	int e = pthread_create(t, NULL, fn, arg);

	ck_assert_msg(e == 0, "pthread_create failed: %s", strerror(e));
}

/* Join t if it ends within ms; false (and t still running) otherwise. */
static inline bool tst_thread_join_ms(pthread_t t, unsigned ms, void **ret)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += ms / 1000u;
	ts.tv_nsec += (long)(ms % 1000u) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	return pthread_timedjoin_np(t, ret, &ts) == 0;
}

/* Join or fail the test naming what did not finish. */
#define TST_JOIN(t, ms, ...) \
	ck_assert_msg(tst_thread_join_ms((t), (ms), NULL), __VA_ARGS__)

/*
 * A start barrier with a time limit: n parties (threads, and the test's own
 * thread if it takes part) call tst_barrier_wait(); all return together, or
 * any that waited longer than ms returns false.
 */
struct tst_barrier {
	unsigned n;
	unsigned arrived;
	unsigned generation;
};

static inline void tst_barrier_init(struct tst_barrier *b, unsigned n)
{
	b->n = n;
	b->arrived = 0;
	b->generation = 0;
}

static inline bool tst_barrier_wait(struct tst_barrier *b, unsigned ms)
{
	unsigned gen = tst_load(&b->generation);
	struct tst_deadline d = tst_deadline_ms(ms);
	unsigned spins = 0;

	if (tst_inc(&b->arrived) == b->n) {
		tst_store(&b->arrived, 0);
		tst_store(&b->generation, gen + 1);
		return true;
	}
	while (tst_load(&b->generation) == gen) {
		if (tst_expired(&d))
			return false;
		if (++spins < 1000)
			sched_yield();
		else
			tst_sleep_us(50);
	}
	return true;
}

/* ---------------------------------------------------------------------- */
/* Failures seen by worker threads                                         */

/*
 * ck_assert from a thread other than the test's own is unreliable, so worker
 * threads record what went wrong with TST_THREAD_CHECK and the test thread
 * calls tst_assert_no_thread_failures() after joining them.
 */
static struct {
	pthread_mutex_t lock;
	unsigned count;
	char first[768];
} tst_failures TST_UNUSED = { PTHREAD_MUTEX_INITIALIZER, 0, "" };

static TST_UNUSED __attribute__((format(printf, 3, 4))) void
tst_thread_fail(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&tst_failures.lock);
	if (tst_failures.count++ == 0) {
		int n = snprintf(tst_failures.first, sizeof(tst_failures.first),
		                 "%s:%d: ", file, line);
		va_start(ap, fmt);
		vsnprintf(tst_failures.first + n,
		          sizeof(tst_failures.first) - (size_t)n, fmt, ap);
		va_end(ap);
	}
	pthread_mutex_unlock(&tst_failures.lock);
}

#define TST_THREAD_CHECK(cond, ...)                                     \
	do {                                                             \
		if (!(cond))                                             \
			tst_thread_fail(__FILE__, __LINE__, __VA_ARGS__); \
	} while (0)

static inline void tst_reset_thread_failures(void)
{
	pthread_mutex_lock(&tst_failures.lock);
	tst_failures.count = 0;
	tst_failures.first[0] = '\0';
	pthread_mutex_unlock(&tst_failures.lock);
}

static inline void tst_assert_no_thread_failures(void)
{
	unsigned n;
	char first[sizeof(tst_failures.first)];

	pthread_mutex_lock(&tst_failures.lock);
	n = tst_failures.count;
	memcpy(first, tst_failures.first, sizeof(first));
	pthread_mutex_unlock(&tst_failures.lock);
	ck_assert_msg(n == 0, "%u failure(s) in worker threads; first: %s", n,
	              first);
}

/* ---------------------------------------------------------------------- */
/* Capturing stderr (the library's warnings)                               */

struct tst_capture {
	int saved;
	FILE *tmp;
};

/* From now on, what is written to file descriptor 2 goes to a temporary
 * file, until tst_capture_end(). */
static inline void tst_capture_stderr(struct tst_capture *c)
{
	fflush(stderr);
	c->tmp = tmpfile();
	ck_assert_ptr_nonnull(c->tmp);
	c->saved = dup(2);
	ck_assert_int_ge(c->saved, 0);
	ck_assert_int_ge(dup2(fileno(c->tmp), 2), 0);
}

/* Restore stderr; buf (len bytes) receives what was captured, cut short
 * and always terminated. */
static inline void tst_capture_end(struct tst_capture *c, char *buf,
                                   size_t len)
{
	size_t n;

	fflush(stderr);
	dup2(c->saved, 2);
	close(c->saved);
	rewind(c->tmp);
	n = fread(buf, 1, len - 1, c->tmp);
	buf[n] = '\0';
	fclose(c->tmp);
}

/* ---------------------------------------------------------------------- */
/* Hash functions                                                          */

/* ---------------------------------------------------------------------- */
/* Destroying tables                                                       */

/* relhash_destroy()'s free_fn for objects from malloc(). */
static inline void tst_free_obj(void *obj, void *arg)
{
	(void)arg;
	free(obj);
}

/* ---------------------------------------------------------------------- */
/* A reader held inside its section                                        */

/* A thread that stays inside one read-side section from
 * tst_section_holder_start() until tst_section_holder_stop(): no grace
 * period that began meanwhile can end. */
struct tst_section_holder {
	int entered, release;
	pthread_t tid;
};

static inline void *tst_section_holder_main(void *arg)
{
	struct tst_section_holder *h = arg;

	relhash_read_lock();
	tst_store(&h->entered, 1);
	while (!tst_load(&h->release))
		tst_sleep_us(200);
	relhash_read_unlock();
	return NULL;
}

/* Returns once the holder is inside its section. */
static inline void tst_section_holder_start(struct tst_section_holder *h)
{
	memset(h, 0, sizeof(*h));
	tst_thread_start(&h->tid, tst_section_holder_main, h);
	TST_ASSERT_WAIT(tst_load(&h->entered), 10000,
	                "the section holder did not enter its section");
}

static inline void tst_section_holder_stop(struct tst_section_holder *h)
{
	tst_store(&h->release, 1);
	TST_JOIN(h->tid, 10000, "the section holder did not leave");
}

/* ---------------------------------------------------------------------- */
/* Poison                                                                  */

/* The byte freed objects are overwritten with (Linux's POISON_FREE). */
#define TST_POISON_BYTE 0x6b

static inline void tst_poison(void *p, size_t n)
{
	memset(p, TST_POISON_BYTE, n);
}

static inline bool tst_is_poisoned(const void *p, size_t n)
{
	const unsigned char *c = (const unsigned char *)p;

	for (size_t i = 0; i < n; i++)
		if (c[i] != TST_POISON_BYTE)
			return false;
	return true;
}

/* ---------------------------------------------------------------------- */
/* Grace-period modes                                                      */

/*
 * Tests of the grace-period engine run in both of its modes: membarrier
 * (the default, whenever the kernel offers MEMBARRIER_CMD_PRIVATE_EXPEDITED)
 * and the fence fallback (RELHASH_NO_MEMBARRIER=1).  The library picks its
 * mode on first use in a process, so tst_setup_membarrier() and
 * tst_setup_fence() are Check fixtures: they run in each test's fresh child
 * process (CK_FORK, the default) before the test uses the library, and
 * assert that the mode really is the expected one.
 */
static const char *tst_mode_name TST_UNUSED = "?";
static int tst_expected_membarrier TST_UNUSED;

static inline bool tst_kernel_has_membarrier(void)
{
#if defined(__linux__) && defined(SYS_membarrier)
	long cmds = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);

	/* As the library decides (src/engine/epoch.c): listed, registered, and
	 * the command itself allowed (a seccomp filter, gVisor or rr may
	 * refuse it alone).  Registering twice is harmless. */
	return cmds >= 0 && (cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED) &&
	       syscall(SYS_membarrier,
	               MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0 &&
	       syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0,
	               0) == 0;
#else
	return false;
#endif
}

/* Register the calling thread; fail unless the library is in the mode the
 * fixture expects. */
static inline void tst_assert_mode(void)
{
	struct relhash_epoch_stats s = { .size = sizeof(s) };

	ck_assert_int_eq(relhash_thread_register(), 0);
	relhash_epoch_stats(&s);
	ck_assert_msg(s.uses_membarrier == tst_expected_membarrier,
	              "%s mode: relhash_epoch_stats().uses_membarrier = %d, "
	              "expected %d (RELHASH_NO_MEMBARRIER=%s, kernel "
	              "membarrier %s)", tst_mode_name, s.uses_membarrier,
	              tst_expected_membarrier,
	              getenv("RELHASH_NO_MEMBARRIER") ?
	              getenv("RELHASH_NO_MEMBARRIER") : "(unset)",
	              tst_kernel_has_membarrier() ? "available" : "missing");
}

static inline void tst_setup_membarrier(void)
{
	tst_reset_thread_failures();
	unsetenv("RELHASH_NO_MEMBARRIER");
	tst_mode_name = "membarrier";
	tst_expected_membarrier = tst_kernel_has_membarrier();
	tst_assert_mode();
}

static inline void tst_setup_fence(void)
{
	tst_reset_thread_failures();
	setenv("RELHASH_NO_MEMBARRIER", "1", 1);
	tst_mode_name = "fence";
	tst_expected_membarrier = 0;
	tst_assert_mode();
}

/* ---------------------------------------------------------------------- */
/* Miscellany                                                              */

/* xorshift64*: a fast per-thread PRNG; state must not be 0. */
static inline uint64_t tst_rand(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545f4914f6cdd1dull;
}

/*
 * The splitmix64 finalizer: a bijection of 64 bits in which every input bit
 * affects every output bit.  For the tests' own hash functions, seeds and
 * PRNG states; it is not the library's hash (tests that need that call
 * relhash_hash()).
 */
static inline uint64_t tst_mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}

/* An unsigned from the environment, or def when unset or malformed. */
static inline unsigned tst_env_unsigned(const char *name, unsigned def)
{
	const char *s = getenv(name);
	char *end;
	unsigned long v;

	if (!s || !*s)
		return def;
	v = strtoul(s, &end, 10);
	return *end ? def : (unsigned)v;
}

#define TST_COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* Add a tcase called name to s: the n tests, each limited to timeout_s
 * seconds.  Returns it, for fixtures. */
static inline TCase *tst_add_tcase(Suite *s, const char *name,
                                   double timeout_s,
                                   const TTest *const *tests, size_t n)
{
	TCase *tc = tcase_create(name);
	size_t i;

	tcase_set_timeout(tc, timeout_s);
	for (i = 0; i < n; i++)
		tcase_add_test(tc, tests[i]);
	suite_add_tcase(s, tc);
	return tc;
}

/* Two tcases of the tests, "membarrier" and "fence", each running them in
 * that grace-period mode (tst_setup_membarrier(), tst_setup_fence()). */
static inline void tst_add_mode_tcases(Suite *s, double timeout_s,
                                       const TTest *const *tests, size_t n)
{
	tcase_add_checked_fixture(tst_add_tcase(s, "membarrier", timeout_s,
	                                        tests, n),
	                          tst_setup_membarrier, NULL);
	tcase_add_checked_fixture(tst_add_tcase(s, "fence", timeout_s, tests, n),
	                          tst_setup_fence, NULL);
}

/* Run the suites of sr (CK_VERBOSITY, CK_FORK etc. from the environment). */
static inline int tst_run(SRunner *sr)
{
	int failed;

	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* main() of a program whose n tests form one tcase, named like its suite;
 * each test is limited to timeout_s seconds. */
static inline int tst_run_tests(const char *name, double timeout_s,
                                const TTest *const *tests, size_t n)
{
	Suite *s = suite_create(name);

	tst_add_tcase(s, name, timeout_s, tests, n);
	return tst_run(srunner_create(s));
}

#endif /* RELHASH_TESTS_COMMON_H */
