/*
 * relhash/epoch.h - the grace-period engine: an RCU of relhash's own.
 *
 * One process-wide reclamation domain.  A thread registers itself the first
 * time it uses any function below and is unregistered when it exits;
 * relhash_thread_register() and relhash_thread_unregister() are optional.
 *
 * Read side.  relhash_read_lock() ... relhash_read_unlock() brackets a
 * read-side critical section.  Sections nest.  Inside one, pointers loaded
 * from relhash tables (and from the caller's own structures, if their
 * updaters use the functions below) stay valid until the outermost unlock.
 * The fast path is a thread-local access, one load of the global epoch, a
 * plain store and compiler barriers, inlined into the caller; writers force
 * the ordering with membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED).  Where the
 * kernel lacks it, or RELHASH_NO_MEMBARRIER=1 is in the environment at the
 * first use, readers use a full fence instead.
 *
 * Write side.  relhash_synchronize() waits for a grace period: until every
 * read-side section that had begun when it was called has ended.
 * relhash_call(), relhash_defer() and relhash_defer_free() queue work to
 * run after a grace period on a library thread, without waiting;
 * relhash_defer_local() queues work that the calling thread runs itself.
 *
 * fork(): the child carries on with the forking thread; tables that another
 * thread was updating or resizing at the fork are unusable in it, and the
 * callback running at the fork does not run there (doc/DESIGN.md section 14).
 *
 * None of these functions may be called from a signal handler.
 */
#ifndef RELHASH_EPOCH_H
#define RELHASH_EPOCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <relhash/config.h>
#include <relhash/types.h>

RELHASH_BEGIN_DECLS

/* ==================================================================== */
/* Read side                                                            */
/* ==================================================================== */

/*
 * Ordering between a section and a grace period (relhash_synchronize(),
 * the wait before a callback runs, a polled cookie that is done): a
 * section that had begun when the grace period started has ended, with
 * all its loads done, before the grace period ends; a section that the
 * grace period does not wait for sees every store that happened before
 * the grace period began (doc/DESIGN.md section 3).  The lock and unlock
 * are not acquire or release operations on the caller's data: they order
 * nothing between two readers.
 */

/*
 * Begin a read-side critical section.  Nestable (to a depth of 32,767:
 * deeper aborts the process, as does an unlock without a lock); never
 * blocks, never fails.
 * The first call in a thread registers it (one mutex acquisition).
 * Read-side section: may be called inside or outside one (it nests).
 * Ordering: as above; in the common case a load of the global epoch and a
 * plain store, ordered against grace periods by their membarrier (fence
 * mode: a full fence after the store).
 */
RELHASH_API void relhash_read_lock(void);

/* End the innermost read-side critical section.
 * Read-side section: must be called inside one.
 * Ordering: the end of the outermost section is what a grace period waits
 * for: every load of the section is done before that grace period ends. */
RELHASH_API void relhash_read_unlock(void);

/* true when the calling thread is inside a read-side critical section.
 * Read-side section: may be called anywhere.
 * Ordering: none (reads the calling thread's own record). */
RELHASH_API bool relhash_read_ongoing(void);

/* ==================================================================== */
/* Waiting for readers: synchronize, barrier, polled grace periods      */
/* ==================================================================== */

/*
 * Wait until every read-side critical section that began before the call has
 * ended (a grace period).  Concurrent callers share grace periods.  Waits by
 * spinning briefly, then sleeping on a futex that the last straggling reader
 * wakes.
 * Returns 0, or -EDEADLK when called inside a read-side critical section (in
 * which case it waits for nothing).
 * Read-side section: must not be called inside one.
 * Ordering: every store the caller made before the call is visible to every
 * section that begins after the call returns, and every section that was
 * waited for has finished all its loads: what the caller unlinked before the
 * call may be freed after it returns.
 */
RELHASH_API int relhash_synchronize(void);

/*
 * Wait until every callback queued before the call, by any thread (including
 * threads that have since exited), has run.  Returns 0, or -EDEADLK inside a
 * read-side critical section or on the callback thread itself.
 * Read-side section: must not be called inside one, nor from a callback.
 * Ordering: "queued before" means that the relhash_call(), relhash_defer()
 * or relhash_defer_free() happens before the barrier; everything those
 * callbacks did happens before it returns (release/acquire through the
 * barrier's marker).  It is not itself a grace period for the caller's own
 * updates: use relhash_synchronize() for those.
 */
RELHASH_API int relhash_barrier(void);

/*
 * Polled grace periods (in the manner of Linux's get_state_synchronize_rcu()
 * family and liburcu's start_poll_synchronize_rcu()).  A cookie is "done"
 * once a full grace period has elapsed after the call that returned it:
 * every read-side section that had begun when the call was made has ended,
 * and what relhash_synchronize() says about memory ordering holds between
 * the call and a relhash_gp_poll_state() that returns true.  Once done, a
 * cookie stays done (for 2^47 grace periods: epochs wrap modulo 2^48).
 *
 * relhash_gp_get_state(): a cookie; starts nothing.
 * relhash_gp_start_poll(): a cookie, and makes sure a grace period that
 *   makes it done starts soon (on the library's callback thread, within
 *   about 10 ms), without waiting for it.  May be called inside a section.  If the callback
 *   thread cannot be created, that grace period waits for the next
 *   relhash_synchronize(), callback or poll that starts one.
 * relhash_gp_poll_state(): whether the cookie is done.  Never blocks, takes
 *   no lock; may be called anywhere, also inside a section.
 * relhash_gp_cond_synchronize(): 0 at once when the cookie is done (also
 *   inside a section); otherwise waits until it is, like
 *   relhash_synchronize(), and returns 0, or -EDEADLK inside a read-side
 *   section (waiting for nothing).
 *
 * Read-side section: get_state, start_poll and poll_state may be called
 * inside or outside one; cond_synchronize must not be called inside one
 * unless the cookie is done.
 * Ordering: taking a cookie is a sequentially consistent read-modify-write
 * of the global epoch; a poll that returns true is an acquire load pairing
 * with the release store that ends the grace period.  A caller that finds
 * the cookie done (true, or 0 from cond_synchronize) therefore has
 * relhash_synchronize()'s guarantee, as if that had been called where the
 * cookie was taken and had returned before the poll.
 */
RELHASH_API uint64_t relhash_gp_get_state(void);
RELHASH_API uint64_t relhash_gp_start_poll(void);
RELHASH_API bool relhash_gp_poll_state(uint64_t cookie);
RELHASH_API int relhash_gp_cond_synchronize(uint64_t cookie);

/* ==================================================================== */
/* Deferring work past a grace period: call, defer, defer_free          */
/* ==================================================================== */

/*
 * Queue func(head) to run after a grace period, on the library's callback
 * thread (started on first use).  Never waits for a grace period; may be
 * called inside a read-side critical section.  Outside one, if more than the
 * callback limit (relhash_set_callback_limit()) are pending, the caller
 * waits until the callback thread has brought them under it: memory stays
 * bounded even when a reader stalls.  Callbacks queued by a thread that
 * exits still run.  Callbacks run in the order each thread queued them.
 *
 * Latency: the callback thread lets callbacks accumulate so that one grace
 * period serves many of them.  A callback runs up to about 10 ms plus one
 * grace period after it was queued; sooner when three quarters of the
 * callback limit are pending or when relhash_barrier() (or a caller
 * held by back-pressure) waits for it.
 * Memory: at most the limit pending, plus up to 59 in each thread's own
 * batch, plus whatever callers inside read-side sections or callbacks queue
 * (they never wait).
 *
 * Read-side section: may be called inside or outside one (inside, it never
 * waits).
 * Ordering: everything the caller did before the call happens before
 * func runs (release/acquire through the hand-off of its thread's batch),
 * and func runs after a grace period that began after the call: every
 * section that had begun when the call was made has ended, so func may
 * free what such sections could reach.  One thread's callbacks
 * (relhash_call(), relhash_defer(), relhash_defer_free()) run in the order
 * it queued them; callbacks of different threads have no promised order.
 */
RELHASH_API void relhash_call(struct relhash_head *head,
                              void (*func)(struct relhash_head *head));

/*
 * Queue func(ptr) to run after a grace period, on the callback thread.
 * Same rules and ordering as relhash_call() (the two keep one order per
 * thread), but the object needs no embedded relhash_head: the library
 * records the call in a per-thread block (16 bytes a call, one allocation
 * per 60 calls).  If that allocation fails, the caller waits as
 * relhash_barrier() does and then runs func(ptr) itself, which keeps the
 * order (inside a callback: waits for a grace period only, and the call
 * may run before callbacks queued earlier from callbacks); inside a
 * read-side section it cannot wait, and the call is dropped with a
 * one-time warning on stderr.
 * Read-side section: may be called inside or outside one.
 * Ordering: as relhash_call().
 */
RELHASH_API void relhash_defer(void (*func)(void *ptr), void *ptr);

/*
 * free(ptr) after a grace period: relhash_defer(free, ptr).  ptr may be NULL.
 * Read-side section: may be called inside or outside one.
 * Ordering: as relhash_call().
 */
RELHASH_API void relhash_defer_free(void *ptr);

/*
 * Queue func(ptr) to run after a grace period on the calling thread
 * itself, during one of its later relhash_defer_local() or
 * relhash_reclaim_local() calls: each writer frees its own objects, into
 * its own allocator cache, and no single thread runs every free of the
 * process (doc/DESIGN.md, "Reclaiming on the calling thread").  Calls go
 * into per-thread blocks of 60; each full block asks for a grace period
 * (at most one request outstanding per thread) and the thread runs its
 * oldest blocks as their grace periods end.  func runs inside whatever the
 * later call's caller holds (locks, a read-side section): it must not take
 * a lock held around these calls, nor wait for a grace period; freeing is
 * the intended use.
 * Memory: outside a read-side section (and not on the callback thread,
 * nor inside one of its own funcs), a thread that holds more than the
 * callback limit (relhash_set_callback_limit()) in full blocks waits for
 * their grace period and runs them; inside a section it never waits.  Up
 * to 59 calls of the open block wait for the next call, or for
 * relhash_reclaim_local(true) (on the callback thread: for the end of its
 * cycle).
 * Without memory for a block: outside a section the caller waits for a
 * grace period and runs its pending calls and then func(ptr) itself;
 * inside one, or inside one of its funcs, the call goes to relhash_defer()
 * (its grace period holds; it is not ordered with other local calls).
 * A thread that exits or unregisters hands its pending calls, in order, to
 * relhash_defer().  In a child of fork(), other threads' pending local
 * calls never run (their memory stays allocated).
 * Read-side section: may be called inside or outside one (inside, it never
 * waits).
 * Ordering: as relhash_call() between the call and func(ptr): func runs
 * after a grace period that began after the call.  One thread's local calls
 * run in the order it queued them; they are not ordered with its
 * relhash_call(), relhash_defer() and relhash_defer_free() callbacks, and
 * relhash_barrier() does not wait for them.
 */
RELHASH_API void relhash_defer_local(void (*func)(void *ptr), void *ptr);

/*
 * Run the calling thread's local calls whose grace period has ended
 * (wait false: never blocks), or, with wait, close its open block, wait
 * for a grace period that covers every pending call and run them all.
 * Returns how many ran (at most INT_MAX), or -EDEADLK for wait inside a
 * read-side section (nothing run).  Inside one of its own local funcs it
 * runs nothing and returns 0.
 * Read-side section: wait must be false inside one.
 * Ordering: as relhash_defer_local().
 */
RELHASH_API int relhash_reclaim_local(bool wait);

/* ==================================================================== */
/* Threads                                                              */
/* ==================================================================== */

/*
 * Threads register on first use and unregister when they exit, so these
 * two calls are optional.  fork(): the child carries on with the forking
 * thread alone (see the top of this header).
 */

/* Register the calling thread now rather than at first use.  Returns 0:
 * registration allocates nothing and cannot fail.
 * Read-side section: may be called inside or outside one.
 * Ordering: none that callers rely on. */
RELHASH_API int relhash_thread_register(void);

/* Unregister the calling thread before it exits.  Its pending callbacks are
 * kept and still run.
 * Read-side section: must not be called inside one (it would end the
 * section, with a warning on stderr).
 * Ordering: its pending callbacks are handed to the callback thread under
 * its lock and keep relhash_call()'s guarantees. */
RELHASH_API void relhash_thread_unregister(void);

/* ==================================================================== */
/* Tuning and statistics                                                */
/* ==================================================================== */

/*
 * Beyond the core calls (doc/DESIGN.md, "Additions to the API", says why
 * each exists).  Each may be called inside or outside a read-side section.
 */

/* Pending-callback limit for back-pressure: 32768, or the
 * RELHASH_CALLBACK_LIMIT environment variable at first use.  0 restores
 * 32768.  Three quarters of it pending start a grace period without
 * waiting out the batching delay (relhash_call()).
 * Read-side section: may be called inside or outside one.
 * Ordering: set under the callback queue's lock: queueing calls that
 * happen after it use the new limit. */
RELHASH_API void relhash_set_callback_limit(size_t limit);

/* A reader that holds up a grace period for longer than this is reported
 * on stderr, once per grace period: 10000 ms, or RELHASH_STALL_TIMEOUT_MS
 * at first use.  0 restores 10000 ms.
 * Read-side section: may be called inside or outside one.
 * Ordering: none (a relaxed store, read by grace periods as they wait). */
RELHASH_API void relhash_set_stall_timeout_ms(unsigned ms);

/*
 * Snapshot of the engine's counters.  Set stats->size first (the size rule
 * of <relhash/types.h>).  Returns 0, or -EINVAL (stats untouched) when
 * stats is NULL or its size is too small.
 * Read-side section: may be called inside or outside one.
 * Ordering: none: each counter is read on its own (relaxed, or under its
 * lock), so the figures are not one instant's.
 */
RELHASH_API int relhash_epoch_stats(struct relhash_epoch_stats *stats);

#if !defined(RELHASH_NO_INLINE)
#include <relhash/inline.h>
/*
 * Function-like macros: a plain call expands to the inline fast path, while
 * &relhash_read_lock and (relhash_read_lock)() still name the exported
 * functions.
 */
#define relhash_read_lock() relhash__read_lock_inline()
#define relhash_read_unlock() relhash__read_unlock_inline()
#define relhash_read_ongoing() ((bool)relhash__read_ongoing_inline())
#endif

RELHASH_END_DECLS

#endif /* RELHASH_EPOCH_H */
