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
 *   1. hold the automatic resize thread between two steps, waiting for its
 *      current step (src/resize.c);
 *   2. wait for a callback cycle that is running callbacks (src/callbacks.c):
 *      half-run, they cannot be handed to the child.  A cycle still waiting
 *      for its grace period is not waited for: the child queues its
 *      callbacks again;
 *   3. the registry lock, every registered thread's batch lock, the
 *      callback queue's lock: the order in which collect_all() takes them;
 *   4. the resize queue's lock.
 * Steps 1 and 2 wait for library threads, whose grace periods would wait
 * for the forking thread if it were inside a read-side section, and which
 * it is itself if a callback forks: then they are skipped (rh_fork_may_wait)
 * and the child may lose the rest of that cycle or that table.  So a fork
 * outside a section waits at most for one resize step's grace periods and
 * for callbacks that are running.  Step 1 comes before 2 because a resize
 * step may wait for callbacks to run (back-pressure); 2 before 3 because a
 * cycle takes the locks of 3 while running callbacks; the holders of the
 * locks of 3 and 4 wait for nothing else while holding them.
 *
 * With C libraries that hold their own fork lock across the prepare
 * handlers (glibc before 2.36, musl), two threads forking at once can
 * deadlock when one of them is a callback or a reader: the other's prepare
 * waits for it while it waits for the C library.  glibc 2.36 (Debian 12)
 * runs the handlers without that lock.
 *
 * parent: everything is released.
 * child: the other threads' records leave the registry and their batches
 * go to the callback queue, as at their exit; the callback and resize
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
	rh_callbacks_fork_prepare_cycle();
	rh_registry_fork_prepare();
	rh_callbacks_fork_prepare_queue();
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
