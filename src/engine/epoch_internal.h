/*
 * src/engine/epoch_internal.h - what the files of the grace-period engine
 * share: src/engine/epoch.c (registry, read side, grace periods),
 * src/engine/callbacks.c (deferred callbacks), src/engine/local.c (calls
 * reclaimed by their own thread) and src/engine/fork.c (fork handlers).  What the engine offers the layers above it is in
 * src/engine/engine.h.
 */
#ifndef RELHASH_EPOCH_INTERNAL_H
#define RELHASH_EPOCH_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <relhash/epoch.h>
/* The library always sees the shared layouts, even when configured with
 * --disable-inline (which only hides them from users). */
#include <relhash/inline.h>

#include "atomics.h"
#include "list.h"

struct rh_defer_block;
struct rh_local_block;

/* One deferred func(ptr): an entry of a relhash_defer() block or of a
 * relhash_defer_local() block. */
struct rh_deferred_call {
	void (*func)(void *ptr);
	void *ptr;
};

/*
 * A thread's relhash_defer_local() calls (src/engine/local.c), touched by
 * the thread alone (doc/DESIGN.md, "Reclaiming on the calling thread").
 */
struct rh_local_queue {
	struct rh_local_block *head;   /* closed blocks, oldest first */
	struct rh_local_block **tail;  /* &head when there are none */
	struct rh_local_block *open;   /* taking calls; NULL: none yet */
	struct rh_local_block *spare;  /* a run block kept for reuse */
	/* The block whose calls are running (detached from the list), and
	 * the index of the next one; NULL when none runs. */
	struct rh_local_block *running;
	unsigned running_next;
	size_t closed_calls;           /* calls in the closed blocks */
	uint64_t request;              /* cookie of the last grace period asked for */
	unsigned closes_since_request; /* blocks closed since then */
	bool requested;                /* request holds one */
};

/* A thread's queued callbacks, not yet handed to the callback thread. */
struct rh_cb_batch {
	struct relhash_head *head;
	struct relhash_head **tail;
	/* Callbacks, counting each relhash_defer() call.  Also read without
	 * the handshake (statistics, a collector's emptiness check). */
	_Atomic size_t count;
	/* How many of count the owner has announced (doc/DESIGN.md,
	 * "Announcing full batches"): count rounded down to a multiple of
	 * BATCH_MAX, kept so that the owner's test needs no division.  Only
	 * whoever holds the batch touches it, so it is a plain field. */
	size_t announced;
	/* The batch's last entry, when it is a block of relhash_defer()
	 * calls that has room: the next call goes there.  NULL otherwise. */
	struct rh_defer_block *open_block;
};

/* struct rh_thread.collecting: not marked; marked by a collector; marked
 * by a collector that sleeps until the owner's window closes. */
#define RH_COLLECT_NONE 0u
#define RH_COLLECT_MARKED 1u
#define RH_COLLECT_WAITING 2u

/*
 * Per-thread library state, in thread-local storage next to the public
 * struct relhash__reader.  Lives from registration until the thread exits
 * (or calls relhash_thread_unregister()).
 */
struct rh_thread {
	struct relhash__reader *reader; /* &relhash__self of this thread */
	struct rh_list link;      /* in the registry; registry lock */
	struct rh_list wait_link; /* in a grace period's waiting list */
	bool waiting;             /* on a waiting list; registry lock */
	bool registered;          /* owner only */
	bool cb_lock_ready;       /* owner only */
	bool running_callbacks;   /* owner only: inside a callback cycle */
	pid_t tid;                /* for stall warnings */
	unsigned index;           /* small per-thread number (counters) */
	/*
	 * batch belongs to its owner while the owner's window is open
	 * (appending), to whoever holds cb_lock otherwise; a collector holds
	 * cb_lock and marks the batch (collecting) before it waits for the
	 * window to close (doc/DESIGN.md, "Queueing without a lock").
	 */
	pthread_mutex_t cb_lock;
	/* 0 or 1, written by the owner alone; a collector sleeps on it
	 * (futex) */
	_Atomic uint32_t appending;
	/* RH_COLLECT_*, written under cb_lock alone */
	_Atomic uint32_t collecting;
	struct rh_cb_batch batch;
	struct rh_local_queue local;   /* owner only */
};

/*
 * Did epoch word a begin before epoch word b?  Both are reader or global
 * words (epoch in bits 63..16); the flag and depth bits are ignored.  The
 * difference is taken modulo 2^64 of the shifted epochs, so it stays right
 * across wrap-around as long as the two are less than 2^47 grace periods
 * apart (a reader's word is at most one grace period older than the
 * global one, plus the grace periods that passed between its load and its
 * store of the global word).
 */
static inline bool rh_epoch_before(uint64_t a, uint64_t b)
{
	return (int64_t)((a & RELHASH__EPOCH_MASK) - (b & RELHASH__EPOCH_MASK)) < 0;
}

/* ------------------------------------------------------------------ */
/* epoch.c (the registry) for callbacks.c and fork.c                   */

/* The calling thread's state, registering it on first use. */
struct rh_thread *rh_thread_self(void);

/* Is the calling thread running callbacks (struct rh_thread)? */
bool rh_running_callbacks(void);

/* A full memory barrier on every CPU that runs one of our threads
 * (membarrier(2)), or a fence in fence mode. */
void rh_barrier_all_threads(void);

/* Call fn on every registered thread, with the registry lock held. */
void rh_registry_for_each(void (*fn)(struct rh_thread *ts, void *arg), void *arg);

/*
 * The collector's half of the queueing handshake (doc/DESIGN.md, "Queueing
 * without a lock"), under the registry lock: mark(ts) on every registered
 * thread; if any returned true, a barrier on every CPU that runs one of our
 * threads (membarrier, or a fence in fence mode); then take(ts) on each.
 */
void rh_registry_handshake(bool (*mark)(struct rh_thread *ts),
                           void (*take)(struct rh_thread *ts));

/*
 * The owner's half: orders the calling thread's store of its appending
 * flag (opening or closing a window) before its load of the collecting
 * mark, as a collector that then issues rh_barrier_all_threads() sees
 * them (rh_registry_handshake(), or a collector going to sleep).  In
 * membarrier mode that barrier puts the fence on our CPU and a compiler
 * barrier is enough (doc/DESIGN.md, "Why a plain store is enough"); in
 * fence mode it is a fence.  The mode is the calling thread's own (set
 * when it registered).
 */
static inline void rh_handshake_fence(void)
{
	if (relhash__self.mode == RELHASH__MODE_MEMBARRIER)
		rh_barrier();
	else
		rh_smp_mb();
}

/* fork(2): the registry lock, then every registered thread's batch,
 * claimed and awaited (rh_batch_claim(), rh_batch_await()). */
void rh_registry_fork_prepare(void);
void rh_registry_fork_parent(void);
/* Child: adopt(ts) takes every registered thread's batch (cb.lock held);
 * the other threads' records leave the registry; every batch is
 * released. */
void rh_registry_fork_child(void (*adopt)(struct rh_thread *ts));

/* ------------------------------------------------------------------ */
/* batch.c and callbacks.c for epoch.c and fork.c                      */

/*
 * The registry calls the callbacks in these places only: its handshake
 * and fork handlers claim, await and release batches, a leaving thread's
 * batch leaves with it, and relhash_gp_start_poll() and
 * relhash_epoch_stats() need the callback thread's part.
 */

/* The collector's steps on one thread's batch.  claim: lock it and mark it
 * (returns true, as a handshake's mark); await: after the handshake's
 * barrier, wait until the owner's window is closed; release: unmark and
 * unlock. */
bool rh_batch_claim(struct rh_thread *ts);
void rh_batch_await(struct rh_thread *ts);
void rh_batch_release(struct rh_thread *ts);

/* A thread leaves; hand its batch to the callback thread. */
void rh_callbacks_thread_exit(struct rh_thread *ts);

/* local.c: a leaving thread runs or hands over its local calls, before
 * its batch leaves (they may go into it). */
void rh_local_thread_exit(struct rh_thread *ts);

/* local.c, for the callback thread after each of its cycles: close its
 * open block (callbacks may queue local calls), run what is done, and ask
 * for another grace period while any are left. */
void rh_local_callback_thread_step(void);

/* Have the callback thread run a grace period soon, even with no
 * callbacks queued; never waits. */
void rh_callbacks_request_gp(void);

/* The callback limit (relhash_set_callback_limit()); also bounds each
 * thread's local calls. */
size_t rh_callbacks_limit(void);

/* Fill the callback fields of stats. */
void rh_callbacks_stats(struct relhash_epoch_stats *stats);

/* local.c: fill the local-call fields of stats. */
void rh_local_stats(struct relhash_epoch_stats *stats);

/* fork(2): the queue's lock, taken after the registry's; the child's part
 * runs the registry's (rh_registry_fork_child()). */
void rh_callbacks_fork_prepare(void);
void rh_callbacks_fork_parent(void);
void rh_callbacks_fork_child(void);

/* ------------------------------------------------------------------ */
/* fork.c for epoch.c                                                  */

/* The pthread_atfork() handlers are registered when the library is
 * loaded (src/engine/fork.c has the protocol); false if that failed. */
bool rh_fork_handlers_registered(void);

#endif /* RELHASH_EPOCH_INTERNAL_H */
