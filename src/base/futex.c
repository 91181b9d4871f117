/*
 * src/base/futex.c - the portable implementation of src/futex.h, for platforms
 * without futex(2) and for builds configured with --disable-futex.
 *
 * The idea is that of a parking lot (the table of wait queues hashed by
 * address behind Linux futexes themselves, and WebKit's ParkingLot): a
 * fixed array of mutex and condition-variable pairs, the pair of a word
 * chosen by its address.  Words that share a pair only cost each other
 * spurious wakes.
 */
#include "config.h"

#if !RELHASH_USE_FUTEX

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include "atomics.h"
#include "futex.h"
#include "pthread_checked.h"

#define PAIRS 64 /* a power of two */

static struct pair {
	pthread_mutex_t lock;
	pthread_cond_t cond;
} __attribute__((aligned(64))) pairs[PAIRS];

static clockid_t pairs_clock = CLOCK_REALTIME;
static pthread_once_t pairs_once = PTHREAD_ONCE_INIT;
static bool pairs_ready; /* written once, by pairs_init() */

/* Every pair afresh, its condition variable on pairs_clock. */
static void pairs_init_all(void)
{
	pthread_condattr_t attr;
	unsigned i;

	rh_pthread_checked(pthread_condattr_init(&attr));
#if defined(_POSIX_CLOCK_SELECTION) && _POSIX_CLOCK_SELECTION > 0
	if (pairs_clock != CLOCK_REALTIME)
		rh_pthread_checked(pthread_condattr_setclock(&attr,
		                                             pairs_clock));
#endif
	for (i = 0; i < PAIRS; i++) {
		/* With default attributes these fail only without memory,
		 * which Linux, the BSDs and macOS never report for them. */
		rh_pthread_checked(pthread_mutex_init(&pairs[i].lock, NULL));
		rh_pthread_checked(pthread_cond_init(&pairs[i].cond, &attr));
	}
	rh_pthread_checked(pthread_condattr_destroy(&attr));
}

/* Waits measure their timeouts on the monotonic clock where condition
 * variables can use it, so that setting the time moves no deadline. */
static void pairs_init(void)
{
#if defined(_POSIX_CLOCK_SELECTION) && _POSIX_CLOCK_SELECTION > 0 && \
	defined(_POSIX_MONOTONIC_CLOCK) && _POSIX_MONOTONIC_CLOCK >= 0
	pthread_condattr_t attr;

	if (pthread_condattr_init(&attr) == 0) {
		if (pthread_condattr_setclock(&attr, CLOCK_MONOTONIC) == 0)
			pairs_clock = CLOCK_MONOTONIC;
		pthread_condattr_destroy(&attr);
	}
#endif
	pairs_init_all();
	pairs_ready = true;
}

/* At load, like src/fork.c's handlers: a fork cannot then land inside the
 * pthread_once() (which would never finish in the child). */
__attribute__((constructor)) static void pairs_init_at_load(void)
{
	rh_once(&pairs_once, pairs_init);
}

static struct pair *pair_of(_Atomic uint32_t *word)
{
	uintptr_t a = (uintptr_t)word;

	/* Done at load; kept for a call from another constructor. */
	rh_once(&pairs_once, pairs_init);
	/* Words are 4-byte aligned and often in different cache lines:
	 * fold the line number's bits together. */
	return &pairs[((a >> 6) ^ (a >> 12) ^ (a >> 2)) & (PAIRS - 1)];
}

static void deadline_after(struct timespec *ts, uint64_t ns)
{
	clock_gettime(pairs_clock, ts);
	ns += (uint64_t)ts->tv_nsec;
	ts->tv_sec += (time_t)(ns / 1000000000u);
	ts->tv_nsec = (long)(ns % 1000000000u);
}

void rh_futex_wait(_Atomic uint32_t *word, uint32_t expected,
                   uint64_t timeout_ns)
{
	struct pair *p = pair_of(word);
	struct timespec deadline;

	if (timeout_ns)
		deadline_after(&deadline, timeout_ns);
	rh_mutex_lock(&p->lock);
	/* Relaxed: the waker changed the word before it took this mutex,
	 * and our caller orders what it reads after waking itself, as it
	 * does after a futex(2) wait. */
	if (rh_load(word) == expected) {
		/* One wait: a wake, a timeout or a spurious return all
		 * end it, and the caller re-checks its condition. */
		if (timeout_ns)
			(void)rh_cond_timedwait(&p->cond, &p->lock,
			                        &deadline);
		else
			rh_cond_wait(&p->cond, &p->lock);
	}
	rh_mutex_unlock(&p->lock);
}

void rh_futex_wake_all(_Atomic uint32_t *word)
{
	struct pair *p = pair_of(word);

	rh_mutex_lock(&p->lock);
	rh_cond_broadcast(&p->cond);
	rh_mutex_unlock(&p->lock);
}

void rh_futex_fork_child(void)
{
	/* Only this thread exists: a mutex a parent thread held, or a
	 * condition variable that counts parent threads as waiters, is
	 * replaced (POSIX leaves reusing them undefined). */
	if (pairs_ready)
		pairs_init_all();
}

#endif /* !RELHASH_USE_FUTEX */
