/*
 * src/base/lock.c - the slow path of src/base/lock.h's mutex.
 */
#include "config.h"

#include "lock.h"

void rh_futex_mutex_lock_contended(struct rh_futex_mutex *m)
{
	uint32_t seen;
	int spins;

	/* While the holder runs and nobody sleeps, it will likely release
	 * within the spin: take the lock then without the kernel.  Relaxed
	 * loads: the acquire is the compare-and-swap's. */
	for (spins = 0; spins < RH_FUTEX_MUTEX_SPINS; spins++) {
		seen = rh_load(&m->word);
		if (seen == 2)
			break;
		if (seen == 0 && rh_cas_acquire(&m->word, &seen, 1))
			return;
		rh_cpu_relax();
	}
	/* Mark the lock waited for, and sleep until the exchange finds it
	 * free.  Taking it with 2 may cost its next release a needless
	 * wake; taking it with 1 could leave another sleeper asleep.
	 * Acquire: the exchange that reads 0 takes the lock, after the
	 * release exchange that wrote the 0.  futex_wait() returns at once
	 * if the word is no longer 2, so a release between the exchange and
	 * the sleep is not missed. */
	while (rh_exchange_acquire(&m->word, 2) != 0)
		rh_futex_wait(&m->word, 2, 0);
}
