/*
 * src/base/futex.h - sleeping on a 32-bit word (Linux futex(2)).
 *
 * The words are _Atomic uint32_t, which the library changes with atomic
 * read-modify-writes; the kernel reads them as plain 32-bit integers.  That
 * is the same memory: an _Atomic uint32_t has the size and alignment of a
 * uint32_t (asserted below) and, being lock-free, no hidden lock, so the
 * kernel's aligned 32-bit load sees what the atomics wrote.
 */
#ifndef RELHASH_FUTEX_H
#define RELHASH_FUTEX_H

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>
#include <linux/futex.h>
#include <sys/syscall.h>

#include <stdatomic.h>

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

#endif /* RELHASH_FUTEX_H */
