/*
 * src/engine/batch.c - the queueing handshake between a thread that appends
 * to its own callback batch and a collector that takes the batch
 * (doc/DESIGN.md, "Queueing without a lock").
 *
 * The owner appends with plain stores inside a window that it marks with
 * its appending flag (batch_open() and batch_close() in
 * src/engine/batch.h, inline in the callers' fast paths); a collector (a
 * cycle of the callback thread, a barrier, the fork handler) holds the
 * batch's mutex, marks the batch, and after the barrier of
 * rh_registry_handshake() waits for the window to close.  The owner takes
 * the mutex only when it finds the mark.  What the batch holds and where
 * it goes is src/engine/callbacks.c's business.
 */
#include "config.h"

#include <relhash/epoch.h>

#include "atomics.h"
#include "batch.h"
#include "debug.h"
#include "epoch_internal.h"
#include "futex.h"
#include "pthread_checked.h"

/* Rounds a collector spins on an owner's open window before it sleeps. */
#define AWAIT_SPIN_ROUNDS 200

bool rh_batch_claim(struct rh_thread *ts)
{
	rh_mutex_lock(&ts->cb_lock);
	/* Relaxed: the handshake's barrier (membarrier, or fence) orders it
	 * before our load of the owner's flag, and before the owner's load
	 * of the mark in every window that opens after the barrier. */
	rh_store(&ts->collecting, RH_COLLECT_MARKED);
	return true;
}

/*
 * The owner's window is still open after the spin: it may be preempted.
 * Sleep until its closing store, which wakes us when it finds us waiting
 * (window_closed()).  Dekker: we store WAITING, then read appending; the
 * owner stores 0, then reads collecting.  Our barrier runs on the owner's
 * CPU too: either its store of 0 came before it (we read 0 below), or its
 * load of collecting comes after it and sees WAITING.  The futex compares
 * appending with 1, so a wake before our wait does not let us sleep.  A
 * window that opens meanwhile sees the mark, stores 0 at once and wakes us
 * in turn.
 */
static void sleep_on_window(struct rh_thread *ts)
{
	/* Relaxed: the barrier orders it before our loads of appending. */
	rh_store(&ts->collecting, RH_COLLECT_WAITING);
	rh_barrier_all_threads();
	/* Acquire, as in rh_batch_await(). */
	while (rh_load_acquire(&ts->appending))
		rh_futex_wait(&ts->appending, 1, 0);
	/* Relaxed: still marked (for the owner's acquire load, the same
	 * thing); later windows need not wake us. */
	rh_store(&ts->collecting, RH_COLLECT_MARKED);
}

void rh_batch_await(struct rh_thread *ts)
{
	unsigned round;

	if (RH_TEST_BUG(COLLECT_NO_WAIT))
		return;
	/* Acquire: pairs with the owner's release store that closes (or
	 * abandons) its window, so its appends are visible from here on.
	 * A window waits for nothing and lasts tens of instructions (in
	 * --enable-debug builds rh_debug_yield() may sleep in it): spin,
	 * then sleep (the owner may be preempted, or need our CPU). */
	for (round = 0; round < AWAIT_SPIN_ROUNDS; round++) {
		if (!rh_load_acquire(&ts->appending))
			return;
		rh_cpu_relax();
	}
	sleep_on_window(ts);
}

void rh_batch_release(struct rh_thread *ts)
{
	/* Release: pairs with the acquire load of the mark in the owner's
	 * next window, which then sees the batch as we leave it. */
	rh_store_release(&ts->collecting, RH_COLLECT_NONE);
	rh_mutex_unlock(&ts->cb_lock);
}

/* Out of line, so that the windows' fast paths stay short. */
void __attribute__((noinline, cold))
rh_batch_wake_collector(struct rh_thread *ts)
{
	rh_futex_wake_all(&ts->appending);
}

/* batch_open() found the mark: leave the window, queue under the mutex. */
void __attribute__((noinline, cold))
rh_batch_open_marked(struct rh_thread *ts)
{
	/* Release, like batch_close(): a collector that reads this 0 is
	 * ordered after our earlier windows' appends.  A collector may sleep
	 * on the 1 we stored. */
	rh_store_release(&ts->appending, 0);
	window_closed(ts);
	rh_mutex_lock(&ts->cb_lock);
}
