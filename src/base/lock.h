/*
 * src/base/lock.h - the tables' update and resize locks: a mutex of one futex
 * word, in the manner of glibc's internal lll_lock and the third mutex of
 * Drepper's "Futexes Are Tricky" (taken with a compare-and-swap, slept on
 * after an exchange to 2), released by one exchange to 0.
 *
 * An update takes its family's lock once per insert or remove, and holds it
 * for a short chain walk.  pthread_mutex_lock() and _unlock() cost 63
 * instructions a pair there, checking the mutex's type and owner on every
 * call; this lock costs one compare-and-swap to take and one exchange to
 * release when nobody waits, and sleeps in the kernel, as the default
 * pthread mutex does, when somebody does: with more threads than CPUs a
 * waiter must not spin on a holder that is not running.
 *
 * The word: 0 free, 1 held, 2 held and maybe waited for.  A waiter sets 2
 * before it sleeps, so the holder's release sees 2 and wakes one sleeper;
 * the woken thread takes the lock with 2, since others may still sleep.
 */
#ifndef RELHASH_LOCK_H
#define RELHASH_LOCK_H

#include <stdint.h>

#include "atomics.h"
#include "debug.h"
#include "futex.h"

struct rh_futex_mutex {
	_Atomic uint32_t word;
};

/* Rounds of rh_cpu_relax() a taker spins while nobody sleeps before it
 * sleeps itself: several times an update's hold on x86, where each round
 * is a pause of tens of cycles; elsewhere the hint may be shorter, and
 * waiters then sleep sooner. */
#define RH_FUTEX_MUTEX_SPINS 64

/* src/base/lock.c: the compare-and-swap found the lock held. */
void rh_futex_mutex_lock_contended(struct rh_futex_mutex *m);

static inline void rh_futex_mutex_lock(struct rh_futex_mutex *m)
{
	uint32_t free_word = 0;

	if (RH_TEST_BUG(LOCK_TEST_THEN_SET) && rh_load(&m->word) == 0) {
		/* The deliberate bug: another taker may see 0 here too.
		 * The fence stands in for the acquire (the bug is the lost
		 * atomicity, not the order). */
		rh_debug_yield();
		rh_store(&m->word, 1);
		rh_smp_mb();
		return;
	}
	/* Acquire: the critical section comes after the previous holder's,
	 * whose release exchange this pairs with. */
	if (!rh_cas_acquire(&m->word, &free_word, 1))
		rh_futex_mutex_lock_contended(m);
}

static inline void rh_futex_mutex_unlock(struct rh_futex_mutex *m)
{
	/* Release: the critical section's stores before the next holder's
	 * acquire.  An exchange, not a store: 2 says somebody may sleep. */
	if (RH_TEST_BUG(LOCK_STORE_RELEASE)) {
		/* The deliberate bug: a sleeper's 2 is overwritten unseen. */
		rh_store_release(&m->word, 0);
		return;
	}
	if (rh_exchange_release(&m->word, 0) == 2)
		rh_futex_wake_one(&m->word);
}

#endif /* RELHASH_LOCK_H */
