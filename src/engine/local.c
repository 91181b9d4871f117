/*
 * src/engine/local.c - relhash_defer_local() and relhash_reclaim_local():
 * calls run after a grace period by the thread that queued them, so that
 * no single thread runs every free of the process, and each writer frees
 * into its own allocator cache (doc/DESIGN.md, "Reclaiming on the calling
 * thread").
 *
 * A thread's calls go into blocks of LOCAL_BLOCK_MAX in its record
 * (struct rh_local_queue), which only the thread touches: no atomics, no
 * locks.  A full block is closed with a grace-period cookie taken after
 * its last call; a closed block runs, oldest first, once its cookie is
 * done.  The thread checks on closing a block, asks the callback thread
 * for a grace period when it has no request outstanding, and waits for one
 * only when its closed blocks hold more than the callback limit, outside
 * any read-side section.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>

#include <relhash/epoch.h>

#include "alloc.h"
#include "atomics.h"
#include "debug.h"
#include "epoch_internal.h"

/* Calls per block: as for relhash_defer() blocks (src/engine/callbacks.c,
 * BATCH_MAX), a block stays under 1,000 bytes, a small allocation. */
#define LOCAL_BLOCK_MAX 60

struct rh_local_block {
	struct rh_local_block *next;   /* the next closed block */
	uint64_t cookie;               /* set when closed */
	unsigned count;
	struct rh_deferred_call calls[LOCAL_BLOCK_MAX];
};

_Static_assert(sizeof(struct rh_local_block) <= 1000,
               "a relhash_defer_local() block must stay a small allocation");

/*
 * The statistics, for every thread, counted a block at a time (an atomic
 * add per 60 calls, not per call).  Each thread adds a block's calls to
 * queued before it adds them to done, and done's adds are releases: a
 * reader that loads done with acquire, then queued, never finds more done
 * than queued.
 */
static struct {
	_Atomic uint64_t queued;
	_Atomic uint64_t done;
} local_counts;

/* The first use of q: an empty list. */
static void queue_init(struct rh_local_queue *q)
{
	if (!q->tail)
		q->tail = &q->head;
}

/* An empty block for the open one: the spare, or a new one (NULL without
 * memory). */
static struct rh_local_block *new_block(struct rh_local_queue *q)
{
	struct rh_local_block *b = q->spare;

	if (b)
		q->spare = NULL;
	else if (!(b = rh_malloc(sizeof(*b))))
		return NULL;
	b->next = NULL;
	b->count = 0;
	return b;
}

/*
 * Close the open block: its cookie is taken after its last call, so a
 * grace period that makes it done began after every call in the block.
 * Asks for such a grace period unless a request is outstanding (then the
 * next block closed after that one is done asks): one request, which takes
 * the callback thread's lock, per thread and grace period.  A request that
 * stays outstanding for REQUEST_RETRY_BLOCKS closes is made again: it may
 * have been lost (the callback thread could not start, or the request was
 * made in a parent process before a fork).
 */
#define REQUEST_RETRY_BLOCKS 256

static void close_open_block(struct rh_local_queue *q)
{
	struct rh_local_block *b = q->open;

	if (!b || !b->count)
		return;
	if (RH_TEST_BUG(LOCAL_NO_REQUEST) ||
	    (q->requested && !relhash_gp_poll_state(q->request) &&
	     ++q->closes_since_request < REQUEST_RETRY_BLOCKS)) {
		b->cookie = relhash_gp_get_state();
	} else {
		b->cookie = relhash_gp_start_poll();
		q->request = b->cookie;
		q->requested = true;
		q->closes_since_request = 0;
	}
	q->open = NULL;
	*q->tail = b;
	q->tail = &b->next;
	q->closed_calls += b->count;
	rh_add_relaxed(&local_counts.queued, b->count);
}

/*
 * Detach the oldest closed block, run its calls, keep it as the spare.  A
 * func may queue local calls: they go to the open block, and run later; it
 * runs none itself (the callers check q->running).  A func may also
 * unregister the thread: rh_local_thread_exit() then counts the calls
 * begun as done, hands over the rest of this block and frees it, which
 * q->running tells us (doc/DESIGN.md, "Reclaiming on the calling thread",
 * on a func that ends the thread and never returns here).
 */
static unsigned run_oldest(struct rh_local_queue *q)
{
	struct rh_local_block *b = q->head;
	unsigned i, n = b->count;

	q->head = b->next;
	if (!q->head)
		q->tail = &q->head;
	q->closed_calls -= n;
	q->running = b;
	for (i = 0; i < n; i++) {
		q->running_next = i + 1;
		b->calls[i].func(b->calls[i].ptr);
		if (q->running != b)
			return i + 1;
	}
	rh_add_release(&local_counts.done, n);
	q->running = NULL;
	if (q->spare)
		rh_free(b);
	else
		q->spare = b;
	return n;
}

/* Run the closed blocks whose cookies are done, oldest first, stopping
 * at the first that is not; the number of calls run.  The poll is an
 * acquire load, paired with the release store that ends a grace period:
 * the loads of the readers it waited for are done before a func writes. */
static size_t run_done(struct rh_local_queue *q)
{
	size_t n = 0;

	while (q->head && (relhash_gp_poll_state(q->head->cookie) ||
	                   RH_TEST_BUG(LOCAL_EARLY)))
		n += run_oldest(q);
	return n;
}

/*
 * Outside any section: wait until every closed block is done (one grace
 * period, for the newest cookie) and run them all.  Through run_done(): a
 * func may close newer blocks meanwhile, whose grace periods have not
 * ended, or unregister the thread.
 */
static size_t run_all_closed(struct rh_local_queue *q)
{
	struct rh_local_block *newest;

	if (!q->head)
		return 0;
	newest = rh_container_of(q->tail, struct rh_local_block, next);
	if (relhash_gp_cond_synchronize(newest->cookie))
		return 0;
	return run_done(q);
}

/* A block was closed: run what is done; past the limit, wait where the
 * caller may. */
static void after_close(struct rh_local_queue *q)
{
	run_done(q);
	if (q->closed_calls > rh_callbacks_limit() &&
	    !RH_TEST_BUG(LOCAL_UNBOUNDED) &&
	    !relhash__read_ongoing_inline() && !rh_running_callbacks())
		run_all_closed(q);
}

/*
 * No memory for a block (so none is open).  Outside a section (and not
 * from one of our funcs, whose block is detached and half run): wait for a
 * grace period that began after this call, run every closed block in
 * order, then func(ptr).  Otherwise nothing may wait, or run out of order:
 * relhash_defer() keeps the grace period (its own fallback drops the call,
 * with a warning, only inside a section and out of memory too), not the
 * order with earlier local calls.
 */
static void defer_local_without_memory(struct rh_local_queue *q,
                                       void (*func)(void *ptr), void *ptr)
{
	uint64_t after_call;

	if (relhash__read_ongoing_inline() || q->running) {
		relhash_defer(func, ptr);
		return;
	}
	after_call = relhash_gp_get_state();
	run_all_closed(q);
	relhash_gp_cond_synchronize(after_call);
	func(ptr);
}

void relhash_defer_local(void (*func)(void *ptr), void *ptr)
{
	struct rh_local_queue *q = &rh_thread_self()->local;
	struct rh_local_block *b = q->open;

	if (RELHASH_UNLIKELY(!b)) {
		queue_init(q); /* the first call has no block open */
		b = new_block(q);
		if (!b) {
			defer_local_without_memory(q, func, ptr);
			return;
		}
		q->open = b;
	}
	b->calls[b->count].func = func;
	b->calls[b->count].ptr = ptr;
	if (RELHASH_LIKELY(++b->count < LOCAL_BLOCK_MAX))
		return;
	close_open_block(q);
	if (!q->running)
		after_close(q);
}

int relhash_reclaim_local(bool wait)
{
	struct rh_local_queue *q = &rh_thread_self()->local;
	size_t n;

	queue_init(q);
	if (q->running)
		return 0;
	if (!wait) {
		n = run_done(q);
	} else {
		if (relhash__read_ongoing_inline())
			return -EDEADLK;
		close_open_block(q);
		n = run_all_closed(q);
	}
	return n > INT_MAX ? INT_MAX : (int)n;
}

/* Hand calls [from, count) of a detached block, in order, to
 * relhash_defer(), and free the block. */
static void hand_over(struct rh_local_block *b, unsigned from)
{
	unsigned i;

	for (i = from; i < b->count; i++)
		relhash_defer(b->calls[i].func, b->calls[i].ptr);
	rh_add_release(&local_counts.done, b->count - from);
	rh_free(b);
}

/*
 * The thread leaves (at exit, or in relhash_thread_unregister(), possibly
 * from inside one of its funcs).  What is done runs; every other call goes,
 * in order, to relhash_defer(), which begins after the call, so its grace
 * period holds.  The queue is emptied before anything is handed over: a
 * func that relhash_defer() runs itself (out of memory) may queue local
 * calls, which the next round hands over too.
 */
void rh_local_thread_exit(struct rh_thread *ts)
{
	struct rh_local_queue *q = &ts->local;

	queue_init(q);
	if (!q->running)
		run_done(q);
	while (q->running || q->head || q->open) {
		struct rh_local_queue old = *q;
		struct rh_local_block *b;

		*q = (struct rh_local_queue){ .tail = &q->head,
		                              .spare = old.spare };
		if (old.running) {
			/* Inside one of the block's funcs, which may never
			 * return to run_oldest() (pthread_exit()): count the
			 * calls begun as done here. */
			rh_add_release(&local_counts.done, old.running_next);
			hand_over(old.running, old.running_next);
		}
		while ((b = old.head)) {
			old.head = b->next;
			hand_over(b, 0);
		}
		if (old.open) {
			/* Never closed, so not yet counted. */
			rh_add_relaxed(&local_counts.queued, old.open->count);
			hand_over(old.open, 0);
		}
	}
	/* Also when nothing was pending: the block kept by run_oldest(). */
	if (!RH_TEST_BUG(LOCAL_SPARE_LEAKED))
		rh_free(q->spare);
	q->spare = NULL;
}

void rh_local_callback_thread_step(void)
{
	struct rh_local_queue *q = &rh_thread_self()->local;

	queue_init(q);
	if (q->running)
		return;
	close_open_block(q);
	run_done(q);
	/* The next loop of the callback thread runs a grace period that
	 * begins after this request, hence after the newest cookie. */
	if (q->head)
		rh_callbacks_request_gp();
}

void rh_local_stats(struct relhash_epoch_stats *stats)
{
	/* Acquire, then queued: see local_counts. */
	uint64_t done = rh_load_acquire(&local_counts.done);

	stats->local_calls_queued = rh_load(&local_counts.queued);
	stats->local_calls_done = done;
	stats->local_calls_pending = stats->local_calls_queued - done;
}
