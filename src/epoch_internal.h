/*
 * src/epoch_internal.h - what the files of the grace-period engine share:
 * src/epoch.c (registry, read side, grace periods), src/callbacks.c
 * (deferred callbacks) and src/fork.c (fork handlers).  What the engine
 * offers the layers above it is in src/engine.h.
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

#include "list.h"

struct rh_defer_block;

/* A thread's queued callbacks, not yet handed to the callback thread. */
struct rh_cb_batch {
	struct relhash_head *head;
	struct relhash_head **tail;
	size_t count;   /* callbacks, counting each relhash_defer() call */
	/* The batch's last entry, when it is a block of relhash_defer()
	 * calls that has room: the next call goes there.  NULL otherwise. */
	struct rh_defer_block *open_block;
};

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
	pthread_mutex_t cb_lock;  /* protects batch */
	struct rh_cb_batch batch;
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

/* Call fn on every registered thread, with the registry lock held. */
void rh_registry_for_each(void (*fn)(struct rh_thread *ts, void *arg), void *arg);

/* fork(2): the registry lock, then every registered thread's cb_lock. */
void rh_registry_fork_prepare(void);
void rh_registry_fork_parent(void);
/* Child: adopt(ts) takes every registered thread's batch (cb.lock held);
 * the other threads' records leave the registry; all those locks are
 * released. */
void rh_registry_fork_child(void (*adopt)(struct rh_thread *ts));

/* ------------------------------------------------------------------ */
/* callbacks.c for epoch.c and fork.c                                  */

/*
 * The registry calls the callbacks in three places only: a leaving
 * thread's batch leaves with it, and relhash_gp_start_poll() and
 * relhash_epoch_stats() need the callback thread's part.
 */

/* A thread leaves; hand its batch to the callback thread. */
void rh_callbacks_thread_exit(struct rh_thread *ts);

/* Have the callback thread run a grace period soon, even with no
 * callbacks queued; never waits. */
void rh_callbacks_request_gp(void);

/* Fill the callback fields of stats. */
void rh_callbacks_stats(struct relhash_epoch_stats *stats);

/* fork(2): the queue's lock, taken after the registry's; the child's part
 * runs the registry's (rh_registry_fork_child()). */
void rh_callbacks_fork_prepare(void);
void rh_callbacks_fork_parent(void);
void rh_callbacks_fork_child(void);

/* ------------------------------------------------------------------ */
/* fork.c for epoch.c                                                  */

/* The pthread_atfork() handlers are registered when the library is
 * loaded (src/fork.c has the protocol); false if that failed. */
bool rh_fork_handlers_registered(void);

#endif /* RELHASH_EPOCH_INTERNAL_H */
