/*
 * src/base/debug.c - race widening and the deliberate bugs' switch (see
 * src/base/debug.h), and the report of a failed pthread call
 * (src/base/pthread_checked.h).  Built into every librelhash, but empty
 * unless configured with --enable-debug.
 */
#include "config.h"

#include "debug.h"

#ifdef RELHASH_DEBUG
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "atomics.h"
#include "pthread_checked.h"
#include "util.h"

#include <relhash/common.h>

int rh_test_bug;

/* Priority 101, the first an application may use: before the library's
 * other constructors, should one of them ever reach a deliberate bug. */
__attribute__((constructor(101))) static void read_test_bug(void)
{
	rh_test_bug = (int)rh_env_u64("RELHASH_TEST_BUG", 0);
	if (rh_test_bug)
		fprintf(stderr, "relhash: deliberate bug %d is on (RELHASH_TEST_BUG)\n",
		        rh_test_bug);
}

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int enabled;
static __thread uint64_t rng;
static _Atomic(void (*)(void)) yield_hook;

/*
 * Tests (tests/fuzz/fuzz-interleave.c) drive the yield points themselves:
 * with a hook set, rh_debug_yield() calls it instead of its random policy
 * (whatever RELHASH_DEBUG_YIELD says).  NULL restores the policy.
 */
RELHASH_API void relhash__debug_set_yield_hook(void (*hook)(void));
void relhash__debug_set_yield_hook(void (*hook)(void))
{
	rh_store_release(&yield_hook, hook);
}

static void init(void)
{
	enabled = rh_env_u64("RELHASH_DEBUG_YIELD", 0) != 0;
}

void rh_debug_yield(void)
{
	void (*hook)(void) = rh_load_acquire(&yield_hook);
	uint64_t x;

	if (hook) {
		hook();
		return;
	}
	rh_once(&once, init);
	if (!enabled)
		return;
	if (!rng)
		rng = (uint64_t)(uintptr_t)&rng | 1;
	/* xorshift64 */
	x = rng;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	rng = x;
	if ((x & 63) == 0) {
		struct timespec ts = { 0, (long)(10000 + (x >> 8) % 90000) };

		nanosleep(&ts, NULL);
	} else if ((x & 7) == 0) {
		sched_yield();
	}
}

void rh_debug_failed(const char *what, const char *file, int line)
{
	fprintf(stderr, "relhash: %s:%d: check failed: %s\n", file, line, what);
	abort();
}

void rh_pthread_failed(const char *call, int err, const char *file, int line)
{
	fprintf(stderr, "relhash: %s:%d: %s failed: %s\n", file, line, call,
	        strerror(err));
	abort();
}
#else
/* ISO C forbids an empty translation unit. */
typedef int rh_debug_unused;
#endif
