/*
 * src/engine/callbacks.c - relhash_call(), relhash_defer(),
 * relhash_defer_free(), relhash_barrier() and the callback thread.
 *
 * Each thread queues callbacks into its own batch (struct rh_thread.batch)
 * with plain stores inside a window that it marks with its appending flag;
 * a collector (a cycle, a barrier, the fork handler) holds the batch's
 * mutex, marks the batch and waits for the window to close.  The
 * handshake between the two is doc/DESIGN.md, "Queueing without a lock",
 * in src/engine/batch.c and src/engine/batch.h; the owner takes the mutex
 * only when it finds the mark.  A batch goes to the global FIFO queue when
 * a collector takes it (the callback thread collects every thread's batch
 * at the start of each cycle, so a thread that queues three callbacks and
 * goes idle does not keep them forever) or when its thread exits.  Every BATCH_MAX entries the owner announces them
 * (cb.announced), so that they count toward the limit while they stay in
 * its batch (doc/DESIGN.md, "Announcing full batches").
 *
 * Batching (doc/DESIGN.md, "Batching grace periods"): woken by work, the
 * callback thread first lets it accumulate for up to BATCH_DELAY_MS, so
 * that one grace period (two process-wide membarriers) serves many
 * callbacks.  It goes at once when three quarters of the callback limit are
 * in the queue or announced, or when someone waits for it (cb.urgent: a
 * barrier, a back-pressured writer).
 *
 * One cycle of the callback thread: collect every batch into the queue, take
 * the whole queue, wait for one grace period (shared with concurrent
 * relhash_synchronize() callers), run the callbacks in order, in slices of
 * SLICE, reporting progress after each slice (so back-pressured callers can
 * go on, and so that a large batch of frees is not one burst).
 *
 * relhash_defer() records its calls in blocks of up to BATCH_MAX (function,
 * pointer) pairs, so that objects need no embedded relhash_head.  A block is
 * one entry of its thread's batch and takes calls while it is the batch's
 * last entry and has room (batch.open_block); a collector taking the
 * batch, a relhash_call() appended after it, or a full block closes it.  A
 * block therefore holds consecutive calls of one thread, and each thread's
 * callbacks keep their order.
 *
 * relhash_barrier() collects every batch itself, appends a marker to the
 * queue and waits until the marker has run: the queue is FIFO, so every
 * callback queued before the barrier has run by then.
 *
 * Back-pressure: when a thread announces BATCH_MAX callbacks and more than
 * the limit are pending (announced ones included), it waits (outside
 * read-side sections only, and never from inside a callback) until the
 * callback thread brings them under the limit.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <relhash/epoch.h>

#include "alloc.h"
#include "atomics.h"
#include "batch.h"
#include "debug.h"
#include "epoch_internal.h"
#include "futex.h"
#include "pthread_checked.h"
#include "util.h"

/*
 * Callbacks per batch, and calls per relhash_defer() block.  60 keeps a
 * block under 1,000 bytes: glibc serves such requests from its per-thread
 * cache and small bins, whereas at 64 (1,048 bytes) every block allocation
 * was a "large" request that first consolidated the fast bins, which the
 * callback thread's frees keep filling: about 5,000 instructions per block
 * under callgrind (doc/PERFORMANCE.md, "Where an update's time goes").
 */
#define BATCH_MAX 60
/* count_one(): the first callback of a batch is never its announcement. */
_Static_assert(BATCH_MAX > 1, "a batch announces more than one callback");
#define SLICE 64
/* At 10,000 the 90/10 benchmark (4,096 keys, 2 threads) ran 290-320 grace
 * periods a second, at 32,768 120-125, and faster (doc/PERFORMANCE.md,
 * "Why these constants"). */
#define DEFAULT_CALLBACK_LIMIT 32768
/* How long the callback thread lets work accumulate before a cycle. */
#define BATCH_DELAY_MS 10

static struct {
	pthread_once_t once;
	pthread_mutex_t lock;          /* everything below */
	pthread_cond_t work;           /* the callback thread waits for work
	                                  (CLOCK_MONOTONIC) */
	pthread_cond_t progress;       /* back-pressured callers wait */
	struct relhash_head *queue;    /* handed-off callbacks, FIFO */
	struct relhash_head **queue_tail;
	/* These three are also accessed without the lock (each access says
	 * why its order suffices). */
	_Atomic bool work_hint;        /* a thread batch may hold callbacks */
	_Atomic bool thread_running;
	_Atomic bool thread_asleep;    /* the callback thread waits on work */
	bool urgent;                   /* someone waits: no batching delay */
	bool gp_wanted;                /* run a grace period, callbacks or not
	                                  (relhash_gp_start_poll()) */
	/* In the queue or being run; written under the lock, also read
	 * without it (callbacks_outstanding()). */
	_Atomic uint64_t pending;
	_Atomic uint64_t limit;        /* the same */
	uint64_t queued, run, backpressure_waits;
	uint64_t handoffs;             /* batches moved to the queue so far */
	pthread_mutex_t cycle_lock;    /* one cycle at a time */
	_Atomic uint32_t barrier_seq;  /* futex: bumped when a marker runs */
	/* Callbacks announced by their owners and still in their batches
	 * (doc/DESIGN.md, "Announcing full batches"); no lock.  On a line
	 * of its own: every thread adds to it once per BATCH_MAX calls. */
	_Atomic uint64_t announced __attribute__((aligned(64)));
} cb = {
	.once = PTHREAD_ONCE_INIT,
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.work = PTHREAD_COND_INITIALIZER,
	.progress = PTHREAD_COND_INITIALIZER,
	.queue_tail = &cb.queue,
	.cycle_lock = PTHREAD_MUTEX_INITIALIZER,
};

/*
 * The entries a cycle has taken and not yet begun to run: all of them while
 * it waits for its grace period (set under cb.lock together with the
 * taking), then those after the running one.  A fork hands them to the
 * child (src/engine/fork.c).  Written by the cycle alone, on a line of its own
 * so that the per-entry stores do not disturb the queue's users.
 */
static struct {
	_Atomic(struct relhash_head *) rest;
} cycle __attribute__((aligned(64)));

/* cb.work times out on the monotonic clock (wait_for_batch_locked()). */
static void init_work_cond(void)
{
	pthread_condattr_t attr;

	/* None of these fails on Linux (glibc, musl): checked in debug
	 * builds only. */
	rh_pthread_checked(pthread_condattr_init(&attr));
	rh_pthread_checked(pthread_condattr_setclock(&attr, CLOCK_MONOTONIC));
	rh_pthread_checked(pthread_cond_init(&cb.work, &attr));
	rh_pthread_checked(pthread_condattr_destroy(&attr));
}

static void callbacks_init(void)
{
	uint64_t limit;

	/* Nobody waits on cb.work yet: the callback thread starts later. */
	init_work_cond();
	limit = rh_env_u64("RELHASH_CALLBACK_LIMIT", DEFAULT_CALLBACK_LIMIT);
	/* Relaxed, as every store of the limit: its readers without the
	 * lock only estimate (callbacks_outstanding()). */
	rh_store(&cb.limit, limit ? limit : DEFAULT_CALLBACK_LIMIT);
}

/*
 * The callbacks that count toward the limit: those in the queue or being
 * run, and those announced in threads' batches (doc/DESIGN.md,
 * "Announcing full batches").  Without cb.lock an estimate that sees at
 * least the calling thread's own announcements, and never misses a batch
 * that a collector moves meanwhile: acquire, paired with the release of
 * the collector's withdrawal (hand_off_locked()), so that reading the
 * withdrawal means reading the pending count stored before it.
 */
static uint64_t callbacks_outstanding(void)
{
	uint64_t announced = rh_load_acquire(&cb.announced);

	return announced + rh_load(&cb.pending);
}

/* Three quarters of the limit: as many callbacks per grace period as the
 * limit allows while leaving a quarter of it for the writers to fill
 * during the grace period before they meet back-pressure (at half, the
 * 90/10 benchmark ran 220-270 grace periods a second). */
static uint64_t batch_ready_mark(void)
{
	uint64_t limit = rh_load(&cb.limit);

	return limit - limit / 4;
}

/*
 * Move a thread's batch to the queue.  cb.lock held, and the batch held:
 * by its owner under ts->cb_lock, or by a collector that has claimed and
 * awaited it (or the fork child, where its owner no longer exists).
 */
static void hand_off_locked(struct rh_thread *ts)
{
	size_t count = rh_load(&ts->batch.count);
	size_t announced = ts->batch.announced;

	if (!count)
		return;
	rh_debug_check(announced == count - count % BATCH_MAX ||
	               RH_TEST_BUG(NO_ANNOUNCE),
	               "a batch's announced part is its count rounded down");
	*cb.queue_tail = ts->batch.head;
	/* An owner still appending would now link its entry into the queue
	 * behind our back, or lose it (RH_BUG_COLLECT_NO_WAIT). */
	rh_debug_yield();
	cb.queue_tail = ts->batch.tail;
	/* Pending first, then the announcement withdrawn (release, for
	 * callbacks_outstanding()): a reader without the lock may count the
	 * batch twice, never zero times.  The owner's additions to
	 * cb.announced all came before (its window's close, or its unlock,
	 * then our taking): the subtraction cannot go below 0. */
	rh_store(&cb.pending, rh_load(&cb.pending) + count);
	rh_sub_release(&cb.announced, announced);
	ts->batch.announced = 0;
	cb.queued += count;
	cb.handoffs++;
	ts->batch.head = NULL;
	ts->batch.tail = &ts->batch.head;
	rh_store(&ts->batch.count, 0);
	ts->batch.open_block = NULL;
}

/* A handshake's mark: claim the batches that hold something.  One read as
 * empty holds nothing queued before the collection (doc/DESIGN.md). */
static bool claim_if_queued(struct rh_thread *ts)
{
	if (!rh_load(&ts->batch.count))
		return false;
	return rh_batch_claim(ts);
}

/* A handshake's take: move a claimed batch to the queue. */
static void take_claimed(struct rh_thread *ts)
{
	/* Relaxed: we (under the registry lock, the only collector) wrote
	 * it in claim_if_queued(). */
	if (!rh_load(&ts->collecting))
		return;
	rh_batch_await(ts);
	rh_mutex_lock(&cb.lock);
	hand_off_locked(ts);
	rh_mutex_unlock(&cb.lock);
	rh_batch_release(ts);
}

/* Move every registered thread's batch to the queue. */
static void collect_all(void)
{
	rh_registry_handshake(claim_if_queued, take_claimed);
}

/* Inside a window or under ts->cb_lock: link head to the end of the batch. */
static void link_entry(struct rh_thread *ts, struct relhash_head *head)
{
	*ts->batch.tail = head;
	/* A collector taking the batch now (RH_BUG_APPEND_IGNORES_MARK)
	 * would leave our tail pointing into its queue. */
	rh_debug_yield();
	ts->batch.tail = &head->next;
}

/*
 * Inside a window or under ts->cb_lock: BATCH_MAX more callbacks of the
 * batch count toward the limit (doc/DESIGN.md, "Announcing full batches").
 * Relaxed: cb.announced is an estimate for its readers; the collector that
 * withdraws the announcement is ordered after it by the window's close or
 * the mutex, and an atomic addition waits for nothing.
 */
static void __attribute__((noinline)) announce_batch(struct rh_thread *ts)
{
	ts->batch.announced += BATCH_MAX;
	rh_add_relaxed(&cb.announced, BATCH_MAX);
}

/* What count_one() did, for after_queue(). */
enum rh_queued { QUEUED, QUEUED_FIRST, QUEUED_ANNOUNCED };

/* Inside a window or under ts->cb_lock: one more callback in the batch,
 * announced with the BATCH_MAX - 1 before it when they are not yet. */
static inline enum rh_queued count_one(struct rh_thread *ts)
{
	size_t n = rh_load(&ts->batch.count) + 1;

	/* Relaxed: only read alone (statistics, emptiness checks); a
	 * collector takes it with the batch, published by the window's
	 * closing store or the mutex. */
	rh_store(&ts->batch.count, n);
	if (n == 1)
		return QUEUED_FIRST;
	if (n - ts->batch.announced < BATCH_MAX ||
	    RH_TEST_BUG(NO_ANNOUNCE))
		return QUEUED;
	announce_batch(ts);
	return QUEUED_ANNOUNCED;
}

struct rh_defer_block {
	struct relhash_head head; /* in a batch, then in the queue */
	unsigned count;
	struct rh_deferred_call calls[BATCH_MAX];
};

_Static_assert(sizeof(struct rh_defer_block) <= 1000,
               "a relhash_defer() block must stay a small allocation");

static void run_defer_block(struct relhash_head *head)
{
	struct rh_defer_block *b = (struct rh_defer_block *)(void *)head;
	unsigned i;

	for (i = 0; i < b->count; i++)
		b->calls[i].func(b->calls[i].ptr);
	rh_free(b);
}

/* How many callbacks a queue entry stands for. */
static unsigned callbacks_in(const struct relhash_head *head)
{
	if (head->func == run_defer_block)
		return ((const struct rh_defer_block *)(const void *)head)->count;
	return 1;
}

struct barrier_marker {
	struct relhash_head head;
	_Atomic bool done;
};

static void barrier_marker_run(struct relhash_head *head)
{
	struct barrier_marker *m = (struct barrier_marker *)(void *)head;

	/* Release: the waiter's acquire load sees every callback that ran
	 * before the marker.  After this store the waiter may free the
	 * marker, so wake through the global word. */
	rh_store_release(&m->done, true);
	rh_fetch_add(&cb.barrier_seq, 1);
	rh_futex_wake_all(&cb.barrier_seq);
}

/* n callbacks have run: count them and let back-pressured callers go on. */
static void report_progress(unsigned n)
{
	if (!n)
		return;
	rh_mutex_lock(&cb.lock);
	rh_store(&cb.pending, rh_load(&cb.pending) - n);
	cb.run += n;
	rh_cond_broadcast(&cb.progress);
	rh_mutex_unlock(&cb.lock);
}

/*
 * One cycle: collect, wait a grace period, run.  Returns false when there
 * was nothing to do.  Runs on the callback thread, or on a caller outside
 * any read-side section when that thread could not be started.
 */
static bool run_cycle(void)
{
	struct rh_thread *self = rh_thread_self();
	struct relhash_head *list, *next;
	unsigned n = 0;

	rh_mutex_lock(&cb.cycle_lock);
	/* Clear the hint before collecting: a callback queued after the
	 * collection passed its thread sets it again, so it is not left
	 * behind while this thread sleeps. */
	rh_mutex_lock(&cb.lock);
	rh_store(&cb.work_hint, false);
	rh_mutex_unlock(&cb.lock);
	/* Full fence: the clear above before collect_all()'s loads of the
	 * batch counts.  It pairs with the fence in notify() between an
	 * owner's store of its count and its store of the hint: either we
	 * read the count, or the owner's hint comes after our clear (the
	 * "R" pattern; an unlock and a lock do not order a store before a
	 * later load). */
	rh_smp_mb();
	collect_all();
	rh_mutex_lock(&cb.lock);
	list = cb.queue;
	cb.queue = NULL;
	cb.queue_tail = &cb.queue;
	/* This cycle carries whatever its waiters queued. */
	cb.urgent = false;
	rh_store(&cycle.rest, list);
	rh_mutex_unlock(&cb.lock);
	if (!list) {
		rh_mutex_unlock(&cb.cycle_lock);
		return false;
	}

	if (!RH_TEST_BUG(NO_GRACE))
		relhash_synchronize();

	/* Callbacks that queue callbacks must not wait on back-pressure or
	 * a barrier: both would need this very cycle to finish. */
	self->running_callbacks = true;
	for (; list; list = next) {
		/* func may free the object holding list: read next first. */
		next = list->next;
		/* A fork from here on gives the child the entries after this
		 * one, which cannot be handed over half run.  Relaxed store,
		 * then a release fence: the child sees it whenever it sees
		 * any store of func's (fork copies the memory page by page
		 * while we run, but never one of our stores without the
		 * stores ordered before it). */
		rh_store(&cycle.rest, next);
		rh_release_fence();
		if (list->func == barrier_marker_run) {
			/* Not a callback.  Count those before it first, so a
			 * barrier's caller sees them in relhash_epoch_stats(). */
			report_progress(n);
			n = 0;
		} else {
			n += callbacks_in(list);
		}
		list->func(list);
		if (n >= SLICE) {
			report_progress(n);
			n = 0;
		}
	}
	report_progress(n);
	self->running_callbacks = false;
	rh_mutex_unlock(&cb.cycle_lock);
	return true;
}

/* cb.lock held: is the work big enough for a grace period right away? */
static bool batch_ready_locked(void)
{
	return cb.urgent || callbacks_outstanding() >= batch_ready_mark();
}

/* Let the work accumulate until it is worth a grace period, at most
 * BATCH_DELAY_MS.  cb.lock held. */
static void wait_for_batch_locked(void)
{
	struct timespec deadline;

	if (RH_TEST_BUG(NO_BATCHING))
		return;
	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_nsec += BATCH_DELAY_MS * 1000000L;
	if (deadline.tv_nsec >= 1000000000L) {
		deadline.tv_sec++;
		deadline.tv_nsec -= 1000000000L;
	}
	while (!batch_ready_locked())
		if (rh_cond_timedwait(&cb.work, &cb.lock, &deadline))
			break;
}

static void *callback_thread(void *arg)
{
	bool gp_wanted;

	(void)arg;
	for (;;) {
		rh_mutex_lock(&cb.lock);
		/* seq_cst store, then seq_cst load of the hint: pairs with
		 * notify()'s store of the hint and load of thread_asleep
		 * (Dekker), so either we see the hint or notify() signals. */
		rh_store_seqcst(&cb.thread_asleep, true);
		while (!rh_load_seqcst(&cb.work_hint) && !cb.queue &&
		       !cb.gp_wanted)
			rh_cond_wait(&cb.work, &cb.lock);
		rh_store(&cb.thread_asleep, false);
		wait_for_batch_locked();
		gp_wanted = cb.gp_wanted;
		cb.gp_wanted = false;
		rh_mutex_unlock(&cb.lock);
		/* A cycle with callbacks waits for a grace period too; both
		 * begin after the request was taken, as a polled cookie
		 * needs (doc/DESIGN.md, "Polled grace periods"). */
		if (!run_cycle() && gp_wanted)
			relhash_synchronize();
		rh_local_callback_thread_step();
	}
	return NULL;
}

/*
 * Tell the callback thread there is work, starting it on first use; urgent
 * when the caller is going to wait for it.  The signal wakes it from its
 * sleep, or ends its batching wait when the batch is ready (signalling on
 * every announcement would wake it for nothing every 60 callbacks).  cb.lock
 * held.  Returns false when the thread cannot be started (then the caller
 * may run a cycle itself).
 */
static bool notify_locked(bool urgent)
{
	rh_store_seqcst(&cb.work_hint, true);
	if (urgent)
		cb.urgent = true;
	if (!rh_load(&cb.thread_running)) {
		if (rh_start_library_thread(callback_thread))
			return false;
		rh_store(&cb.thread_running, true);
	}
	/* Under cb.lock, which the callback thread holds from its store of
	 * thread_asleep until it waits: relaxed is enough here. */
	if (rh_load(&cb.thread_asleep) || batch_ready_locked())
		rh_cond_signal(&cb.work);
	return true;
}

/*
 * The same, from a thread's first callback of a batch, without the lock
 * when the callback thread is busy: it collects every batch at the start of
 * its next cycle anyway.  (Taking the lock and signalling on every first
 * callback cost the update path a futex call each time.)
 */
static bool notify(void)
{
	bool ok;

	/* Full fence: our store of the batch's count (count_one()) before
	 * the hint, for run_cycle(), which clears the hint, fences and reads
	 * the counts.  A seq_cst store alone would not order the relaxed
	 * count store for C11.  Once per batch, not per call. */
	rh_smp_mb();
	rh_store_seqcst(&cb.work_hint, true);
	if (rh_load(&cb.thread_running) && !rh_load_seqcst(&cb.thread_asleep))
		return true;
	rh_mutex_lock(&cb.lock);
	ok = notify_locked(false);
	rh_mutex_unlock(&cb.lock);
	return ok;
}

void rh_callbacks_request_gp(void)
{
	rh_once(&cb.once, callbacks_init);
	rh_mutex_lock(&cb.lock);
	cb.gp_wanted = true;
	/* Without a callback thread the request waits for the next one
	 * started (see relhash_gp_start_poll() in <relhash/epoch.h>).  Not
	 * urgent: the grace period starts within the batching delay, with
	 * the callbacks that arrive meanwhile. */
	notify_locked(false);
	rh_mutex_unlock(&cb.lock);
}

size_t rh_callbacks_limit(void)
{
	rh_once(&cb.once, callbacks_init);
	/* Relaxed: a policy, read as an estimate, as by its other readers. */
	return rh_load(&cb.limit);
}

static bool over_limit(void)
{
	bool over;

	rh_mutex_lock(&cb.lock);
	over = callbacks_outstanding() > rh_load(&cb.limit);
	rh_mutex_unlock(&cb.lock);
	return over;
}

/* Wait until the pending callbacks are under the limit.  Outside any
 * read-side section, not on the callback thread. */
static void backpressure_wait(void)
{
	bool started;

	rh_mutex_lock(&cb.lock);
	if (callbacks_outstanding() <= rh_load(&cb.limit)) {
		rh_mutex_unlock(&cb.lock);
		return;
	}
	cb.backpressure_waits++;
	started = notify_locked(true);
	while (started && callbacks_outstanding() > rh_load(&cb.limit))
		rh_cond_wait(&cb.progress, &cb.lock);
	rh_mutex_unlock(&cb.lock);
	/* No callback thread: do its work here. */
	while (!started && over_limit() && run_cycle())
		;
}

/*
 * After an announcement (doc/DESIGN.md, "Announcing full batches"), the
 * mutex only when there is something to do: over the limit (outside
 * sections and callbacks) wait for back-pressure, which wakes the callback
 * thread itself; at three quarters of it end the thread's batching wait;
 * with no thread running, start one (a start that failed is retried here,
 * or the batch would wait for a barrier).
 */
static void __attribute__((noinline)) after_announce(struct rh_thread *ts)
{
	uint64_t outstanding = callbacks_outstanding();

	if (outstanding > rh_load(&cb.limit) &&
	    !relhash__read_ongoing_inline() && !ts->running_callbacks) {
		backpressure_wait();
		return;
	}
	/* Relaxed thread_running: a stale false costs one lock round trip,
	 * and notify_locked() reads it again under the lock. */
	if ((outstanding >= batch_ready_mark() && !RH_TEST_BUG(NO_EARLY_WAKE)) ||
	    !rh_load(&cb.thread_running)) {
		rh_mutex_lock(&cb.lock);
		notify_locked(false);
		rh_mutex_unlock(&cb.lock);
	}
}

/* After queueing, the window closed (what from count_one()): the first
 * callback of a batch tells the callback thread; an announcement (every
 * BATCH_MAX) may have more to do. */
static inline void after_queue(struct rh_thread *ts, enum rh_queued what)
{
	if (RELHASH_LIKELY(what == QUEUED))
		return;
	if (what == QUEUED_FIRST) {
		if (!RH_TEST_BUG(NO_NOTIFY))
			notify();
		return;
	}
	after_announce(ts);
}

void relhash_call(struct relhash_head *head,
                  void (*func)(struct relhash_head *head))
{
	struct rh_thread *ts = rh_thread_self();
	bool window;
	enum rh_queued what;

	rh_once(&cb.once, callbacks_init);
	head->func = func;
	head->next = NULL;

	window = batch_open(ts);
	link_entry(ts, head);
	ts->batch.open_block = NULL; /* later defers go after this call */
	what = count_one(ts);
	batch_close(ts, window);
	after_queue(ts, what);
}

/*
 * relhash_defer() could not allocate a block.  Outside a read-side section,
 * a barrier hands off this thread's batch and returns once everything the
 * thread queued before has run, after a grace period that began after this
 * call: running func(ptr) then keeps both the grace period and the thread's
 * order.  On the callback thread (where a barrier would wait for itself) a
 * grace period is all we can wait for, so the call runs ahead of callbacks
 * that callbacks queued earlier; inside a section nothing may wait.
 */
static void defer_without_memory(void (*func)(void *ptr), void *ptr)
{
	static _Atomic bool warned;

	/* Both refuse (-EDEADLK) inside a section; only the barrier on the
	 * callback thread. */
	if (relhash_barrier() == 0 || relhash_synchronize() == 0) {
		func(ptr);
		return;
	}
	if (!rh_exchange(&warned, true))
		fprintf(stderr, "relhash: out of memory in relhash_defer() or "
		        "relhash_defer_free() inside a read-side critical "
		        "section: the call is dropped\n");
}

void relhash_defer(void (*func)(void *ptr), void *ptr)
{
	struct rh_thread *ts = rh_thread_self();
	struct rh_defer_block *b;
	bool window;
	enum rh_queued what;

	rh_once(&cb.once, callbacks_init);
	window = batch_open(ts);
	b = ts->batch.open_block;
	if (!b) {
		/* Allocate outside the window: a collector, or the fork
		 * handler, may be waiting for it, and it must wait for
		 * nothing. */
		batch_close(ts, window);
		b = rh_malloc(sizeof(*b));
		if (!b) {
			defer_without_memory(func, ptr);
			return;
		}
		b->head.func = run_defer_block;
		b->head.next = NULL;
		b->count = 0;
		/* Only this thread makes open_block non-NULL: it is still
		 * NULL in the new window. */
		window = batch_open(ts);
		link_entry(ts, &b->head);
		ts->batch.open_block = b;
	}
	b->calls[b->count].func = func;
	b->calls[b->count].ptr = ptr;
	if (++b->count == BATCH_MAX)
		ts->batch.open_block = NULL;
	what = count_one(ts);
	batch_close(ts, window);
	after_queue(ts, what);
}

void relhash_defer_free(void *ptr)
{
	if (ptr)
		relhash_defer(free, ptr);
}

int relhash_barrier(void)
{
	struct barrier_marker on_stack, *m;
	bool started;

	if (relhash__read_ongoing_inline() || rh_thread_self()->running_callbacks)
		return -EDEADLK;
	rh_once(&cb.once, callbacks_init);

	/* On the heap when possible: a fork can hand the marker to a child
	 * in which this thread, and its stack, do not exist; there it runs
	 * harmlessly and leaks (src/engine/fork.c). */
	m = rh_malloc(sizeof(*m));
	if (!m)
		m = &on_stack;
	m->head.next = NULL;
	m->head.func = barrier_marker_run;
	rh_init(&m->done, false);

	collect_all();
	rh_mutex_lock(&cb.lock);
	*cb.queue_tail = &m->head;
	cb.queue_tail = &m->head.next;
	/* The bug: a barrier that leaves its marker to the batching delay. */
	started = notify_locked(!RH_TEST_BUG(LAZY_BARRIER));
	rh_mutex_unlock(&cb.lock);

	while (!rh_load_acquire(&m->done)) {
		/* Acquire: the re-check of done below cannot be satisfied
		 * before this load, so a marker that runs after the re-check
		 * bumps the word after we read it (no sleep past it). */
		uint32_t seq = rh_load_acquire(&cb.barrier_seq);

		if (rh_load_acquire(&m->done))
			break;
		if (!started)
			run_cycle();
		else
			rh_futex_wait(&cb.barrier_seq, seq, 0);
	}
	if (m != &on_stack)
		rh_free(m);
	return 0;
}

void rh_callbacks_thread_exit(struct rh_thread *ts)
{
	bool any;

	rh_mutex_lock(&ts->cb_lock);
	rh_mutex_lock(&cb.lock);
	any = rh_load(&ts->batch.count) != 0;
	hand_off_locked(ts);
	if (any)
		notify_locked(false);
	rh_mutex_unlock(&cb.lock);
	rh_mutex_unlock(&ts->cb_lock);
}

/*
 * fork(2) (src/engine/fork.c).  Nothing here waits for the callback thread: the
 * entries its cycle has not begun (cycle.rest) go back to the queue in the
 * child, and the one it was running at the fork is lost there (a single
 * callback, or a block of up to 60 deferred calls).
 */
void rh_callbacks_fork_prepare(void)
{
	rh_mutex_lock(&cb.lock);
}

void rh_callbacks_fork_parent(void)
{
	rh_mutex_unlock(&cb.lock);
}

/* cb.lock held: how many callbacks the queue holds. */
static uint64_t count_queue(void)
{
	const struct relhash_head *h;
	uint64_t n = 0;

	for (h = cb.queue; h; h = h->next)
		if (h->func != barrier_marker_run)
			n += callbacks_in(h);
	return n;
}

void rh_callbacks_fork_child(void)
{
	struct relhash_head **tail, *rest = rh_load(&cycle.rest);

	/* Every thread's batch goes to the queue, as at an exit; the
	 * forking thread's too, so that its next callback, the first of a
	 * batch, starts a callback thread. */
	rh_registry_fork_child(hand_off_locked);
	rh_debug_check(rh_load(&cb.announced) == 0,
	               "every announcement withdrawn with its batch");
	if (rh_running_callbacks()) {
		/* A callback forked: the child goes on with its cycle, which
		 * runs the rest and reports them. */
	} else {
		/* The parent's cycle took these before everything in the
		 * queue: they go back in front.  The cycle lock may be held
		 * by the parent's callback thread. */
		if (rest) {
			for (tail = &rest; *tail; tail = &(*tail)->next)
				;
			*tail = cb.queue;
			if (!cb.queue)
				cb.queue_tail = tail;
			cb.queue = rest;
		}
		rh_store(&cycle.rest, NULL);
		rh_store(&cb.pending, count_queue());
		rh_pthread_checked(pthread_mutex_init(&cb.cycle_lock, NULL));
	}
	/* No callback thread here: the next callback or barrier starts one
	 * (creating threads in a fork handler is not safe).  Nobody waits on
	 * the condition variables, whatever the parent's waiters left in
	 * them: initialise them afresh. */
	rh_store(&cb.thread_running, false);
	rh_store(&cb.thread_asleep, false);
	cb.urgent = false;
	rh_store(&cb.work_hint, cb.queue != NULL);
	init_work_cond();
	rh_pthread_checked(pthread_cond_init(&cb.progress, NULL));
	rh_mutex_unlock(&cb.lock);
}

void relhash_set_callback_limit(size_t limit)
{
	rh_once(&cb.once, callbacks_init);
	rh_mutex_lock(&cb.lock);
	rh_store(&cb.limit, limit ? (uint64_t)limit : DEFAULT_CALLBACK_LIMIT);
	rh_cond_broadcast(&cb.progress);
	if (batch_ready_locked())
		rh_cond_signal(&cb.work);
	rh_mutex_unlock(&cb.lock);
}

static void count_batch(struct rh_thread *ts, void *arg)
{
	*(uint64_t *)arg += rh_load(&ts->batch.count);
}

void rh_callbacks_stats(struct relhash_epoch_stats *stats)
{
	uint64_t in_batches, handoffs;
	unsigned tries = 0;

	/*
	 * The batches are counted each with a load of its own, the queue's
	 * counters under cb.lock: a batch handed off in between would count
	 * twice.  Retry until no hand-off came between (they come with a
	 * collection, at most once per cycle and thread, or an exit); after
	 * 100 tries, under a storm of exits, the figures are approximate.
	 */
	for (;;) {
		rh_mutex_lock(&cb.lock);
		handoffs = cb.handoffs;
		rh_mutex_unlock(&cb.lock);
		in_batches = 0;
		rh_registry_for_each(count_batch, &in_batches);
		rh_mutex_lock(&cb.lock);
		if (cb.handoffs == handoffs || ++tries == 100)
			break;
		rh_mutex_unlock(&cb.lock);
	}
	stats->callbacks_queued = cb.queued + in_batches;
	stats->callbacks_run = cb.run;
	stats->callbacks_pending = rh_load(&cb.pending) + in_batches;
	stats->backpressure_waits = cb.backpressure_waits;
	rh_mutex_unlock(&cb.lock);
}
