/*
 * src/engine/engine.h - what the grace-period engine (src/engine/epoch.c,
 * src/engine/callbacks.c, src/engine/fork.c) offers the layers built on it
 * inside the library (the tables: src/table/table.c, src/table/resize.c,
 * src/table/autoresize.c), beyond the public <relhash/epoch.h>.
 *
 * The dependency runs one way: the layers above include this header and
 * call the engine; the engine never names them, and calls up only through
 * hooks they register here (doc/DESIGN.md section 2, "Layers";
 * tests/test-layers.sh checks).  What the engine's own files share is in
 * src/engine/epoch_internal.h.
 */
#ifndef RELHASH_ENGINE_H
#define RELHASH_ENGINE_H

#include <stdbool.h>

#include "list.h"

/* The calling thread's small registry number (for per-thread counter
 * slots), registering the thread on first use. */
unsigned rh_thread_index(void);

/*
 * May the calling thread wait for something that itself waits for grace
 * periods (a resize thread)?  Not inside a read-side section (those grace
 * periods would wait for us) nor inside a callback (the callback thread
 * would stop running callbacks, whose back-pressure may hold up an updater
 * that the resizer's grace periods wait for).
 */
bool rh_may_wait_for_grace_periods(void);

/*
 * fork(2) hooks of a layer above the engine, in the spirit of liburcu's
 * struct urcu_atfork.  The engine's pthread_atfork() handlers
 * (src/engine/fork.c) run every registered prepare hook before taking the
 * engine's own locks, and every parent or child hook after releasing (or, in
 * the child, renewing) them: a layer's locks come before the engine's in the
 * lock order, as they do when a layer holds its locks while it waits for a
 * grace period.  Like pthread_atfork(), prepare hooks run in the reverse order
 * of registration, parent and child hooks in that order.
 *
 * prepare may wait for the layer's own threads, boundedly, and must leave
 * every lock that those threads or the layer's callers may hold taken;
 * parent releases them; child makes the layer usable by the child's only
 * thread (its other threads are gone).  None of them may call the engine.
 */
struct rh_fork_hooks {
	void (*prepare)(void);
	void (*parent)(void);
	void (*child)(void);
	struct rh_list link; /* the engine's: in its list of hooks */
};

/* Register hooks, which must live as long as the library: best from a
 * constructor, before any thread of the layer exists. */
void rh_fork_hooks_register(struct rh_fork_hooks *hooks);

#endif /* RELHASH_ENGINE_H */
