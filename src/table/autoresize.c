/*
 * src/table/autoresize.c - RELHASH_AUTO_RESIZE: the library thread that keeps
 * each table's load within its band, the lock-free way updaters ask it for
 * a resize, and the back-pressure that keeps a burst of insertions from
 * outrunning it (doc/DESIGN.md section 10).  The resizing itself is
 * src/table/resize.c's.
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <time.h>

#include <relhash/table.h>

#include "atomics.h"
#include "engine.h"
#include "futex.h"
#include "pthread_checked.h"
#include "table_internal.h"
#include "util.h"

/* Load band for RELHASH_AUTO_RESIZE, in percent. */
#define GROW_ABOVE_PCT 75
#define SHRINK_BELOW_PCT 30
/* Back-pressure (doc/DESIGN.md, "Back-pressure"): above this load an
 * insertion outside any read-side section waits for the pending expansion,
 * at most THROTTLE_MAX_NS per stall of the resize thread. */
#define HARD_LOAD_PCT 100
#define THROTTLE_MAX_NS 100000000u

/*
 * The size the load band asks for: double while above GROW_ABOVE_PCT, halve
 * while below SHRINK_BELOW_PCT, within [shrink floor, max_size].  Doubling
 * from above 75 % leaves more than 37.5 %, halving from below 30 % leaves
 * less than 60 %: each move lands well inside the band (hysteresis).
 */
static size_t wanted_size(const struct relhash_table *t, size_t count,
                          size_t size)
{
	size_t floor = rh_load(&t->shrink_floor);

	while (size < t->max_size && count * 100 > size * GROW_ABOVE_PCT)
		size <<= 1;
	while (size > floor && count * 100 < size * SHRINK_BELOW_PCT)
		size >>= 1;
	return size;
}

bool rh_load_out_of_band(struct relhash_table *t, size_t count, size_t size)
{
	size_t floor = rh_load(&t->shrink_floor);

	/* The size hint has served its purpose once the table has held the
	 * load it was sized for (doc/DESIGN.md, "The size hint").  Relaxed:
	 * a resize thread that reads the old floor stops shrinking there,
	 * and a later sampled update asks again. */
	if (floor > t->min_size && count * 100 >= floor * GROW_ABOVE_PCT)
		rh_store(&t->shrink_floor, t->min_size);
	return wanted_size(t, count, size) != size;
}

bool rh_load_over_hard_limit(const struct relhash_table *t, size_t count,
                             size_t size)
{
	return size < t->max_size && count * 100 > size * HARD_LOAD_PCT;
}

static struct {
	pthread_mutex_t lock;
	pthread_cond_t work;  /* the resize thread waits for tables */
	pthread_cond_t done;  /* destroy waits for a running resize */
	struct rh_list queue; /* struct relhash_table.auto_link */
	/* Written under the lock, so relaxed loads suffice under it; also
	 * read without it (rh_autoresize_request()). */
	_Atomic bool running;
	struct relhash_table *current; /* being resized by the thread */
	/* Forks under way: start no table.  Written under the lock; the
	 * resizer also reads it without the lock between steps, relaxed:
	 * a hint to stop early, and the forking thread waits under the lock
	 * (done) for the stop, so a stale read costs one more step. */
	_Atomic unsigned fork_holds;
} autoresize = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.work = PTHREAD_COND_INITIALIZER,
	.done = PTHREAD_COND_INITIALIZER,
	.queue = { &autoresize.queue, &autoresize.queue },
};

/*
 * Resize t to the size its load asks for, one step at a time, stopping
 * early when destroy begins.  An allocation failure leaves the table at its
 * current size; the next update outside the band asks again.
 */
static void autoresize_table(struct relhash_table *t)
{
	size_t size, want;

	/* Pairs with the fence in rh_autoresize_request(): a requester that
	 * found the table still queued (and so did not queue it) made its
	 * count visible before our dequeue, or we see its count below. */
	rh_smp_mb();
	rh_lock_take(&t->resize_lock);
	/* A rehash first: it leaves the size as it was. */
	if (!rh_load(&autoresize.fork_holds))
		rh_heal_locked(t);
	/* A fork waits for us: stop, the thread queues t again.  A table
	 * without RELHASH_AUTO_RESIZE comes here only to be rehashed. */
	while ((t->params.flags & RELHASH_AUTO_RESIZE) &&
	       !rh_load(&t->dying) && !rh_load(&autoresize.fork_holds)) {
		/* Relaxed: only resizes store it, under resize_lock (ours). */
		size = rh_load(&t->pub.buckets)->mask + 1;
		want = wanted_size(t, relhash_count(t), size);
		if (want == size)
			break;
		if (rh_resize_locked(t, want > size ? size << 1 : want) != 0)
			break;
	}
	/* One wait for the whole run of steps, not one per step. */
	rh_resize_release(t);
	rh_lock_release(&t->resize_lock);
}

static void *autoresize_thread(void *arg)
{
	struct relhash_table *t;

	(void)arg;
	rh_mutex_lock(&autoresize.lock);
	for (;;) {
		while (rh_list_empty(&autoresize.queue) ||
		       rh_load(&autoresize.fork_holds))
			rh_cond_wait(&autoresize.work, &autoresize.lock);
		t = rh_container_of(autoresize.queue.next, struct relhash_table,
		                    auto_link);
		rh_list_del(&t->auto_link);
		/* Atomic: rh_autoresize_request() reads auto_queued
		 * without the lock (its fast path). */
		t->auto_running = true;
		rh_store(&t->auto_queued, false);
		autoresize.current = t;
		rh_mutex_unlock(&autoresize.lock);

		autoresize_table(t);

		rh_mutex_lock(&autoresize.lock);
		autoresize.current = NULL;
		/* Asked again while we ran (the load may have left the band
		 * after our last look), or stopped early for a fork. */
		if ((rh_load(&t->auto_again) || rh_load(&autoresize.fork_holds)) &&
		    !rh_load(&t->dying)) {
			rh_list_add_tail(&autoresize.queue, &t->auto_link);
			rh_store(&t->auto_queued, true);
		}
		rh_store(&t->auto_again, false);
		t->auto_running = false;
		rh_announce_growth(t);
		rh_cond_broadcast(&autoresize.done);
	}
	return NULL;
}

/* Start the resize thread (autoresize.lock held); false if impossible. */
static bool start_thread_locked(void)
{
	if (rh_load(&autoresize.running))
		return true;
	rh_store(&autoresize.running,
	         rh_start_library_thread(autoresize_thread) == 0);
	return rh_load(&autoresize.running);
}

void rh_autoresize_request(struct relhash_table *t)
{
	/*
	 * Asked already and not yet looked at: nothing to do, and no lock
	 * for the many updaters that sample a table while it is far over
	 * its load.  The fence pairs with the one in autoresize_table(), a
	 * store-buffering pair: our count update is before it; the thread
	 * clears auto_queued before its fence and reads the counts after.
	 * If we still see the table queued, the thread will see our count.
	 * The thread must exist for that: in the child of a fork it does
	 * not (running is reset), and the lock path starts it.
	 */
	rh_smp_mb();
	if ((rh_load(&t->auto_queued) && rh_load(&autoresize.running)) ||
	    rh_load(&t->auto_again))
		return;
	rh_mutex_lock(&autoresize.lock);
	if (t->auto_running) {
		rh_store(&t->auto_again, true);
	} else if (!rh_load(&t->dying) && start_thread_locked()) {
		/* Queued already, perhaps in the parent of a fork, whose
		 * resize thread this process does not have: started now. */
		if (!rh_load(&t->auto_queued)) {
			rh_list_add_tail(&autoresize.queue, &t->auto_link);
			rh_store(&t->auto_queued, true);
		}
		rh_cond_signal(&autoresize.work);
	}
	rh_mutex_unlock(&autoresize.lock);
}

/*
 * Is a resize of t queued or running?  Under the lock: the thread changes
 * the two flags together, and no order of two unlocked reads sees both
 * the dequeue and the requeue right.  A table queued while no thread runs
 * (the child of a fork) is not pending: nothing would announce it.
 */
static bool resize_pending(const struct relhash_table *t)
{
	bool pending;

	rh_mutex_lock(&autoresize.lock);
	pending = t->auto_running ||
	          (rh_load(&t->auto_queued) && rh_load(&autoresize.running));
	rh_mutex_unlock(&autoresize.lock);
	return pending;
}

static uint64_t monotonic_ns(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

/*
 * The bound is per stall of the resize thread, not per call: a wait that
 * times out records the growth_seq it waited on, and no insertion waits
 * again until the word moves (the thread published an array, opened an
 * unzip pass or left the table).  Otherwise a thread that cannot make
 * progress (its grace period waits for a reader that waits for a lock the
 * inserter holds) would slow every later sampled insertion by the full
 * bound.
 */
void rh_autoresize_throttle(struct relhash_table *t)
{
	uint64_t start = monotonic_ns(), elapsed;
	bool counted = false;
	uint32_t seq;

	for (;;) {
		/* Acquire, pairing with rh_announce_growth(): the state read
		 * below is at least as new as the increment we saw. */
		seq = rh_load_acquire(&t->growth_seq);
		if (rh_load(&t->throttle_gave_up) == (uint64_t)seq + 1 ||
		    rh_load(&t->dying) || !resize_pending(t) ||
		    !rh_load_over_hard_limit(t, relhash_count(t), relhash_size(t)))
			return;
		elapsed = monotonic_ns() - start;
		if (elapsed >= THROTTLE_MAX_NS) {
			/* Relaxed: a hint (an inserter that misses it waits
			 * one more bound), and a statistic. */
			rh_store(&t->throttle_gave_up, (uint64_t)seq + 1);
			rh_add_relaxed(&t->stat_throttle_timeouts, 1);
			return;
		}
		if (!counted) {
			rh_add_relaxed(&t->stat_throttled_inserts, 1);
			counted = true;
		}
		/* Rather than sleep, do unzip work of the expansion we wait
		 * for (doc/DESIGN.md, "Helping"); sleep when there is none.
		 * Opening a pass bumps growth_seq: a sleeper wakes to help. */
		if (rh_help_unzip(t))
			continue;
		rh_futex_wait(&t->growth_seq, seq, THROTTLE_MAX_NS - elapsed);
	}
}

void rh_autoresize_cancel(struct relhash_table *t)
{
	rh_mutex_lock(&autoresize.lock);
	/* Read without the lock by the resizer between steps: atomicity
	 * is all it needs, it only decides whether to take another step. */
	rh_store(&t->dying, true);
	if (rh_load(&t->auto_queued)) {
		rh_list_del(&t->auto_link);
		rh_store(&t->auto_queued, false);
	}
	/* The running resize stops after its current step; it holds no
	 * lock we hold, and we are outside any read-side section, so its
	 * grace periods complete. */
	while (t->auto_running)
		rh_cond_wait(&autoresize.done, &autoresize.lock);
	rh_mutex_unlock(&autoresize.lock);
}

/*
 * fork(2): hooks registered with the engine (src/engine/engine.h).  A table the
 * thread is resizing holds its resize lock, which in the child would stay
 * held by a thread that is not there.  So the forking thread stops the
 * thread between two resize steps (the table is queued again) and keeps it
 * from starting another table until the fork is over.  It waits at most
 * FORK_WAIT_MS for the current step (grace periods, which wait for readers
 * that may themselves wait for something the fork holds up: other fork
 * handlers' locks), and not at all inside a read-side section or a
 * callback; a table still being resized is unusable in the child.  The
 * queue's lock stays held until the fork is over, so no queue operation is
 * half done in the child.  No holder of that lock waits for a lock of the
 * engine, which the fork handlers take next.
 */
#define FORK_WAIT_MS 1000

static void fork_prepare(void)
{
	struct timespec deadline;
	bool timed_out = false;

	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += FORK_WAIT_MS / 1000;
	rh_mutex_lock(&autoresize.lock);
	rh_store(&autoresize.fork_holds, rh_load(&autoresize.fork_holds) + 1);
	while (autoresize.current && rh_may_wait_for_grace_periods() && !timed_out)
		timed_out = rh_cond_timedwait(&autoresize.done, &autoresize.lock,
		                              &deadline);
}

static void fork_parent(void)
{
	rh_store(&autoresize.fork_holds, rh_load(&autoresize.fork_holds) - 1);
	rh_cond_signal(&autoresize.work);
	rh_mutex_unlock(&autoresize.lock);
}

static void fork_child(void)
{
	rh_store(&autoresize.fork_holds, 0);
	/* No resize thread here: the next request starts one, and it
	 * drains the queue.  The parent's waiters left nothing we need in
	 * the condition variables. */
	rh_store(&autoresize.running, false);
	autoresize.current = NULL;
	rh_pthread_checked(pthread_cond_init(&autoresize.work, NULL));
	rh_pthread_checked(pthread_cond_init(&autoresize.done, NULL));
	rh_mutex_unlock(&autoresize.lock);
}

static struct rh_fork_hooks fork_hooks = {
	.prepare = fork_prepare,
	.parent = fork_parent,
	.child = fork_child,
};

/* When the library is loaded, before any resize thread or queued table
 * exists (src/engine/engine.h). */
__attribute__((constructor)) static void register_fork_hooks(void)
{
	rh_fork_hooks_register(&fork_hooks);
}
