/*
 * src/engine/batch.h - the owner's half of the queueing handshake
 * (doc/DESIGN.md, "Queueing without a lock"): the window in which a thread
 * appends to its own batch, inline in relhash_call() and relhash_defer().
 * The collector's half is in src/engine/batch.c (declared in
 * src/engine/epoch_internal.h, for the registry).
 */
#ifndef RELHASH_BATCH_H
#define RELHASH_BATCH_H

#include <stdbool.h>

#include "atomics.h"
#include "debug.h"
#include "epoch_internal.h"
#include "pthread_checked.h"

/* The out-of-line halves, in src/engine/batch.c. */
void rh_batch_wake_collector(struct rh_thread *ts);
void rh_batch_open_marked(struct rh_thread *ts);

/*
 * The owner has stored appending = 0: wake a collector that sleeps on the
 * window (sleep_on_window() in src/engine/batch.c has the Dekker
 * argument).  In membarrier mode
 * a compiler barrier and a plain load, as at the window's opening.
 */
static inline void window_closed(struct rh_thread *ts)
{
	rh_handshake_fence();
	/* Relaxed: rh_handshake_fence() (with the sleeping collector's
	 * barrier) orders it after our store of 0; the collector reads the
	 * window's stores through that store, not through this load. */
	if (RELHASH_UNLIKELY(rh_load(&ts->collecting) == RH_COLLECT_WAITING))
		rh_batch_wake_collector(ts);
}

/*
 * The owner's window: open it (true), or, when a collector has marked the
 * batch, take ts->cb_lock instead (false, after the collector is done).
 * Either way the caller may then change its batch until batch_close().
 */
static inline bool batch_open(struct rh_thread *ts)
{
	/* Relaxed: rh_handshake_fence() orders it before the load below. */
	rh_store(&ts->appending, 1);
	rh_handshake_fence();
	/* Acquire: pairs with rh_batch_release(), so the window sees the
	 * batch as the last collector left it. */
	if (RH_TEST_BUG(APPEND_IGNORES_MARK) ||
	    !rh_load_acquire(&ts->collecting))
		return true;
	rh_batch_open_marked(ts);
	return false;
}

static inline void batch_close(struct rh_thread *ts, bool window)
{
	if (!window) {
		rh_mutex_unlock(&ts->cb_lock);
		return;
	}
	/* Release: a collector whose acquire load reads this 0 sees every
	 * store of the window. */
	rh_store_release(&ts->appending, 0);
	window_closed(ts);
}

#endif /* RELHASH_BATCH_H */
