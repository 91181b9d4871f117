/*
 * src/futex.h - sleeping on a 32-bit word (Linux futex(2)).
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

/*
 * Sleep while *word == expected, at most timeout_ns (0 = no limit).  May
 * return early (spurious wake, signal); callers re-check their condition.
 */
static inline void rh_futex_wait(uint32_t *word, uint32_t expected,
                                 uint64_t timeout_ns)
{
	struct timespec ts = {
		.tv_sec = (time_t)(timeout_ns / 1000000000u),
		.tv_nsec = (long)(timeout_ns % 1000000000u),
	};

	syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, expected,
	        timeout_ns ? &ts : NULL, NULL, 0);
}

/* Wake every thread sleeping on word. */
static inline void rh_futex_wake_all(uint32_t *word)
{
	syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

#endif /* RELHASH_FUTEX_H */
