/*
 * src/engine/fork.c - fork(2): the handlers pthread_atfork() runs around it.
 *
 * In the child only the forking thread exists.  Without these handlers it
 * would inherit the records of the parent's other threads (one left inside
 * a read-side section would stall every grace period), their queued
 * callbacks with no thread to run them, and locks that nobody will release.
 * With them, the child can use the grace-period engine, deferred callbacks
 * and whatever the layers above the engine make usable through the hooks
 * they register (src/engine/engine.h; doc/DESIGN.md, "fork()").
 *
 * prepare, in this order:
 *   1. the registered hooks' prepare, newest first (the table layer holds
 *      its resize thread between two steps, waiting at most a second, and
 *      keeps its queue's lock);
 *   2. the registry lock, every registered thread's batch (its lock, and
 *      the end of any window in which its owner appends without the lock,
 *      doc/DESIGN.md "Queueing without a lock"), the callback queue's
 *      lock: the order in which collect_all() takes them.
 * The holders of the locks of 2, and an owner inside its window, wait for
 * nothing else meanwhile (the window's rh_debug_yield() may sleep in
 * --enable-debug builds, but for no other thread), so waiting for them
 * cannot deadlock.  Waiting for other threads to make progress could:
 * their progress may need a lock that another fork handler (run before
 * ours) or the forking thread itself holds.  So nothing waits for the
 * callback thread: the callbacks its cycle took and has not begun
 * are published (src/engine/callbacks.c, cycle.rest) and the child queues them
 * again; the one entry it was running at the fork is lost to the child.
 * A hook may wait boundedly, and not at all inside a read-side section or
 * a callback (rh_may_wait_for_grace_periods()).
 *
 * With C libraries that hold their own fork lock across the prepare
 * handlers (glibc before 2.36, musl), a hook's wait can last its full
 * bound when what it waits for needs a reader that is itself calling
 * fork().  An allocator whose fork handlers run before ours (registered
 * after relhash was loaded) would deadlock in step 2 against a relhash
 * thread that allocates while holding a batch or queue lock; allocators
 * normally register at their first allocation, before libraries are
 * initialised.
 *
 * parent: the engine's locks are released, then the hooks' parent run.
 * child: the other threads' records leave the registry; every thread's
 * batch goes to the callback queue, as at an exit; the callback thread is
 * marked absent (the next use starts it again); locks that a thread of the
 * parent may have held and condition variables that its waiters may have
 * left are initialised afresh; then the hooks' child run.
 */
#include "config.h"

#include <pthread.h>

#include "engine.h"
#include "epoch_internal.h"
#include "futex.h"
#include "pthread_checked.h"

/* The layers' hooks; hooks.lock is held from prepare to parent or child,
 * so that a registration never lands between the two. */
static struct {
	pthread_mutex_t lock;
	struct rh_list list; /* struct rh_fork_hooks.link, oldest first */
} hooks = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.list = { &hooks.list, &hooks.list },
};

void rh_fork_hooks_register(struct rh_fork_hooks *h)
{
	rh_mutex_lock(&hooks.lock);
	rh_list_add_tail(&hooks.list, &h->link);
	rh_mutex_unlock(&hooks.lock);
}

static struct rh_fork_hooks *hooks_of(struct rh_list *pos)
{
	return rh_container_of(pos, struct rh_fork_hooks, link);
}

static void fork_prepare(void)
{
	struct rh_list *pos;

	rh_mutex_lock(&hooks.lock);
	rh_list_for_each_reverse(pos, &hooks.list)
		hooks_of(pos)->prepare();
	rh_registry_fork_prepare();
	rh_callbacks_fork_prepare();
}

static void fork_parent(void)
{
	struct rh_list *pos, *tmp;

	rh_registry_fork_parent();
	rh_callbacks_fork_parent();
	rh_list_for_each_safe(pos, tmp, &hooks.list)
		hooks_of(pos)->parent();
	rh_mutex_unlock(&hooks.lock);
}

static void fork_child(void)
{
	struct rh_list *pos, *tmp;

	/* First, for every wake and wait below (src/futex.h). */
	rh_futex_fork_child();
	/* The registry's part runs inside, with the queue's lock held. */
	rh_callbacks_fork_child();
	rh_list_for_each_safe(pos, tmp, &hooks.list)
		hooks_of(pos)->child();
	/* Held by this thread, the child's only one. */
	rh_mutex_unlock(&hooks.lock);
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
