/*
 * src/base/futex.h - sleeping on a 32-bit word: the library's one wait/wake
 * interface.  Every sleep of the library that waits for another thread to
 * change a word goes through it (the update lock, grace periods, the
 * callback queue's handshake and barriers, resize helpers, insert
 * throttling).
 *
 * Two implementations, chosen by configure (RELHASH_USE_FUTEX):
 *
 *   Linux futex(2).  The words are _Atomic uint32_t, which the library
 *   changes with atomic read-modify-writes; the kernel reads them as plain
 *   32-bit integers.  That is the same memory: an _Atomic uint32_t has the
 *   size and alignment of a uint32_t (asserted below) and, being lock-free,
 *   no hidden lock, so the kernel's aligned 32-bit load sees what the
 *   atomics wrote.
 *
 *   Portable (src/futex.c), where <linux/futex.h> or SYS_futex is missing
 *   or with ./configure --disable-futex: a fixed table of mutex and
 *   condition-variable pairs, chosen by the word's address.  A waiter
 *   checks the word under the pair's mutex and waits on its condition
 *   variable; a waker, which changed the word before it calls, takes the
 *   same mutex to broadcast, so a waiter that saw the old value is already
 *   waiting and is woken.  Every wake wakes all waiters of the pair
 *   (callers re-check their condition, as with futex(2)).
 *
 * Both: a wait may return early (spurious wake, signal, timeout); callers
 * re-check.  A wake needs the word changed first.
 */
#ifndef RELHASH_FUTEX_H
#define RELHASH_FUTEX_H

#include <stdint.h>

#include <stdatomic.h>

#if RELHASH_USE_FUTEX

#include <errno.h>
#include <limits.h>
#include <time.h>
#include <unistd.h>
#include <linux/futex.h>
#include <sys/syscall.h>

_Static_assert(sizeof(_Atomic uint32_t) == sizeof(uint32_t) &&
               _Alignof(_Atomic uint32_t) == _Alignof(uint32_t) &&
               ATOMIC_INT_LOCK_FREE == 2 && sizeof(int) == 4,
               "futex(2) words must be laid out as plain uint32_t");

/*
 * Sleep while *word == expected, at most timeout_ns (0 = no limit).  May
 * return early (spurious wake, signal); callers re-check their condition.
 */
static inline void rh_futex_wait(_Atomic uint32_t *word, uint32_t expected,
                                 uint64_t timeout_ns)
{
	struct timespec ts = {
		.tv_sec = (time_t)(timeout_ns / 1000000000u),
		.tv_nsec = (long)(timeout_ns % 1000000000u),
	};

	syscall(SYS_futex, (void *)word, FUTEX_WAIT_PRIVATE, expected,
	        timeout_ns ? &ts : NULL, NULL, 0);
}

/* Wake one thread sleeping on word, if any. */
static inline void rh_futex_wake_one(_Atomic uint32_t *word)
{
	syscall(SYS_futex, (void *)word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* Wake every thread sleeping on word. */
static inline void rh_futex_wake_all(_Atomic uint32_t *word)
{
	syscall(SYS_futex, (void *)word, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL,
	        0);
}

/* fork(2), in the child: nothing to do, the kernel keeps no state. */
static inline void rh_futex_fork_child(void)
{
}

#else /* !RELHASH_USE_FUTEX: src/futex.c */

/* Sleep while *word == expected, at most timeout_ns (0 = no limit). */
void rh_futex_wait(_Atomic uint32_t *word, uint32_t expected,
                   uint64_t timeout_ns);
/* Wake the threads sleeping on word (all of them: see above). */
void rh_futex_wake_all(_Atomic uint32_t *word);

static inline void rh_futex_wake_one(_Atomic uint32_t *word)
{
	rh_futex_wake_all(word);
}

/* fork(2), in the child: the pairs afresh (a parent thread may have held a
 * mutex, or left itself counted as a waiter). */
void rh_futex_fork_child(void);

#endif /* RELHASH_USE_FUTEX */

#endif /* RELHASH_FUTEX_H */
