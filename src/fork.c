/*
 * src/fork.c - fork(2): the handlers pthread_atfork() runs around it.
 *
 * In the child only the forking thread exists.  Without these handlers it
 * would inherit the records of the parent's other threads (one left inside
 * a read-side section would stall every grace period), their queued
 * callbacks with no thread to run them, and locks that nobody will release.
 * With them, the child can use the grace-period engine, deferred callbacks
 * and every table that no thread of the parent was updating or resizing by
 * hand at the moment of the fork (doc/DESIGN.md, "fork()").
 *
 * prepare, in this order:
 *   1. hold the automatic resize thread between two steps, waiting (at most
 *      a second) for its current step (src/autoresize.c);
 *   2. the registry lock, every registered thread's batch (its lock, and
 *      the end of any window in which its owner appends without the lock,
 *      doc/DESIGN.md "Queueing without a lock"), the callback queue's
 *      lock: the order in which collect_all() takes them;
 *   3. the resize queue's lock.
 * The holders of the locks of 2 and 3, and an owner inside its window,
 * wait for nothing else meanwhile (the window's rh_debug_yield() may
 * sleep in --enable-debug builds, but for no other thread), so waiting for
 * them cannot deadlock.  Waiting for other threads to make progress
 * could: their progress may need a lock that another fork handler (run
 * before ours) or the forking thread itself holds.  So nothing waits for
 * the callback thread: the callbacks its cycle took and has not begun
 * are published (src/callbacks.c, cycle.rest) and the child queues them
 * again; the one entry it was running at the fork is lost to the child.
 * Step 1 waits, boundedly, because a table mid-step would be unusable in
 * the child, and not at all inside a read-side section or a callback (the
 * step's grace periods would wait for the forking thread).
 *
 * With C libraries that hold their own fork lock across the prepare
 * handlers (glibc before 2.36, musl), step 1's wait can last its full
 * second when the step waits for a reader that is itself calling fork().
 * An allocator whose fork handlers run before ours (registered after
 * relhash was loaded) would deadlock in step 2 against a relhash thread
 * that allocates while holding a batch or queue lock; allocators normally
 * register at their first allocation, before libraries are initialised.
 *
 * parent: everything is released.
 * child: the other threads' records leave the registry; every thread's
 * batch goes to the callback queue, as at an exit; the callback and resize
 * threads are marked absent (the next use starts them again); locks that a
 * thread of the parent may have held and condition variables that its
 * waiters may have left are initialised afresh.
 */
#include "config.h"

#include <pthread.h>

#include "epoch_internal.h"
#include "table_internal.h"

static void fork_prepare(void)
{
	rh_autoresize_fork_prepare();
	rh_registry_fork_prepare();
	rh_callbacks_fork_prepare();
	rh_autoresize_fork_prepare_lock();
}

static void fork_parent(void)
{
	rh_autoresize_fork_parent();
	rh_registry_fork_parent();
	rh_callbacks_fork_parent();
}

static void fork_child(void)
{
	rh_autoresize_fork_child();
	/* The registry's part runs inside, with the queue's lock held. */
	rh_callbacks_fork_child();
}

/*
 * Registered when the library is loaded rather than when the engine starts:
 * a fork landing inside the engine's pthread_once() would run it again in
 * the child and register the handlers twice.  The handlers take only
 * statically initialised locks, so they are safe before any use (and cheap
 * in a program that never uses relhash).
 */
static int atfork_error = -1;

__attribute__((constructor)) static void register_fork_handlers(void)
{
	atfork_error = pthread_atfork(fork_prepare, fork_parent, fork_child);
}

bool rh_fork_handlers_registered(void)
{
	return atfork_error == 0;
}
