/*
 * src/engine/epoch.c - the grace-period engine: thread registry, the slow
 * halves of the read side, and relhash_synchronize().
 *
 * Design (doc/DESIGN.md, "Grace periods", has the full argument).
 *
 * A global epoch starts at 1 and is incremented at the start of every grace
 * period; relhash__gp.ctr holds it as (epoch << 16) | 1.  A reader entering
 * its outermost section stores that word into its thread's record (the low
 * 16 bits count nesting); leaving, it stores 0.  A grace period with target
 * T (the incremented epoch) waits until every registered reader is
 * quiescent (depth 0) or entered at an epoch >= T: an earlier epoch belongs
 * to a section that may have begun before the grace period, a later one to a
 * section that began after it and already sees every update made before it.
 * The epoch has 48 bits and compares modulo 2^48 (rh_epoch_before()), so
 * it never runs out, and there is no need for the two-phase flip of
 * 1-bit-parity RCU implementations.
 *
 * The read side has no fence.  membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED),
 * issued by the grace period after the increment and again after the scan,
 * executes a full barrier on every CPU running one of our threads; it turns
 * the readers' compiler barriers into the fences they would otherwise need.
 * Where membarrier is missing (or RELHASH_NO_MEMBARRIER=1), readers run in
 * fence mode: their slow paths issue the fences, and the writer's
 * "membarrier" is an ordinary fence.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef HAVE_SYS_SYSCALL_H
#include <sys/syscall.h>
#endif
#include <time.h>
#include <unistd.h>
#if defined(HAVE_LINUX_MEMBARRIER_H) && defined(SYS_membarrier)
#include <linux/membarrier.h>
#define RH_HAVE_MEMBARRIER 1
#else
#define RH_HAVE_MEMBARRIER 0
#endif

#include <relhash/epoch.h>

#include "atomics.h"
#include "debug.h"
#include "engine.h"
#include "epoch_internal.h"
#include "futex.h"
#include "pthread_checked.h"
#include "util.h"

/* Starts with the slow flag: a thread's first read_lock registers it. */
__thread struct relhash__reader relhash__self
	__attribute__((tls_model("initial-exec"))) = { .ctr = RELHASH__SLOW };
struct relhash__gp relhash__gp = { .ctr = RELHASH__EPOCH_ONE | 1 };

/* Initial-exec like relhash__self: one instruction to reach, no
 * __tls_get_addr call on the update and callback paths. */
static __thread struct rh_thread self_state
	__attribute__((tls_model("initial-exec")));

/* Spin this many rounds over the straggling readers before sleeping. */
#define GP_SPIN_ROUNDS 200
/* Sleep at most this long at a time (stall checks, and a safety net). */
#define GP_SLEEP_NS 100000000ull
#define DEFAULT_STALL_TIMEOUT_MS 10000

static struct {
	pthread_once_t once;
	pthread_key_t exit_key;
	bool use_membarrier;

	pthread_mutex_t registry_lock;
	struct rh_list registry; /* struct rh_thread.link */
	unsigned next_index;

	pthread_mutex_t gp_lock; /* one grace period at a time */
	_Atomic uint64_t gp_done; /* target of the last completed grace
	                             period */
	_Atomic uint32_t gp_futex; /* bumped by a reader waking the waiter */

	_Atomic uint64_t stall_timeout_ns;
	_Atomic uint64_t grace_periods;
	_Atomic uint64_t stall_warnings;
} ep = {
	.once = PTHREAD_ONCE_INIT,
	.registry_lock = PTHREAD_MUTEX_INITIALIZER,
	.registry = { &ep.registry, &ep.registry },
	.gp_lock = PTHREAD_MUTEX_INITIALIZER,
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * Fence mode unless membarrier(2) answers, registers us, and then runs the
 * command itself: a seccomp filter (containers, sandboxes) may pass the
 * query and the registration and refuse the command by its argument, and
 * gVisor or rr may not implement it at all (EPERM, ENOSYS, EINVAL).  The
 * command is tried here, before any thread runs a read-side section in
 * membarrier mode, because later there is no way back: readers in that
 * mode order nothing themselves (doc/DESIGN.md, "Grace periods").
 */
static bool membarrier_register(void)
{
#if RH_HAVE_MEMBARRIER
	long cmds = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);

	if (cmds < 0 || !(cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED))
		return false;
	if (syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED,
	            0, 0) != 0)
		return false;
	if (RH_TEST_BUG(NO_MEMBARRIER_PROBE))
		return true;
	return syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0,
	               0) == 0;
#else
	return false;
#endif
}

/*
 * A full memory barrier on every CPU that runs one of our threads, and on
 * ours ("smp_mb_master" in liburcu's terms).  In fence mode, readers fence
 * for themselves and this is an ordinary fence.
 */
void rh_barrier_all_threads(void)
{
#if RH_HAVE_MEMBARRIER
	if (ep.use_membarrier) {
		if (syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED,
		            0, 0) == 0)
			return;
		/* It worked at start-up (membarrier_register()), so the
		 * process changed since: most likely a seccomp filter
		 * installed after relhash's first use.  Readers in
		 * membarrier mode cannot be ordered any more; going on
		 * could free what they still read. */
		fprintf(stderr, "relhash: membarrier(2) failed after it "
		        "worked at start-up: %s (a seccomp filter installed "
		        "later? set RELHASH_NO_MEMBARRIER=1)\n",
		        strerror(errno));
		abort();
	}
#endif
	rh_smp_mb();
}

static void thread_exit(void *arg);

/* ms == 0: the default.  Capped so that the nanoseconds fit. */
static void store_stall_timeout(uint64_t ms)
{
	if (!ms)
		ms = DEFAULT_STALL_TIMEOUT_MS;
	if (ms > UINT32_MAX)
		ms = UINT32_MAX;
	rh_store(&ep.stall_timeout_ns, ms * 1000000u);
}

static void epoch_init(void)
{
	ep.use_membarrier = rh_env_u64("RELHASH_NO_MEMBARRIER", 0) == 0 &&
	                    membarrier_register();
	store_stall_timeout(rh_env_u64("RELHASH_STALL_TIMEOUT_MS", 0));
	if (pthread_key_create(&ep.exit_key, thread_exit) != 0 ||
	    !rh_fork_handlers_registered()) {
		fprintf(stderr, "relhash: pthread_key_create or pthread_atfork "
		        "failed\n");
		abort();
	}
}

/* A thread that cannot be registered can neither read nor update: there is
 * no error to return from relhash_read_lock(). */
static void cannot_register(const char *call, int err)
{
	fprintf(stderr, "relhash: cannot register a thread: %s: %s\n", call,
	        strerror(err));
	abort();
}

static void register_self(struct rh_thread *ts)
{
	int err;

	rh_once(&ep.once, epoch_init);
	if (!ts->cb_lock_ready) {
		/* Cannot fail on Linux (glibc, musl), but POSIX allows it. */
		err = pthread_mutex_init(&ts->cb_lock, NULL);
		if (err)
			cannot_register("pthread_mutex_init()", err);
		ts->batch.tail = &ts->batch.head;
		ts->cb_lock_ready = true;
	}
	/* The key's destructor unregisters us at thread exit; without it
	 * the registry would keep a record in freed thread-local storage.
	 * May allocate (ENOMEM): before anything else changes. */
	err = pthread_setspecific(ep.exit_key, ts);
	if (err)
		cannot_register("pthread_setspecific()", err);
	ts->reader = &relhash__self;
	ts->tid = rh_gettid();
	rh_list_init(&ts->wait_link);

	rh_mutex_lock(&ep.registry_lock);
	rh_list_add_tail(&ep.registry, &ts->link);
	ts->index = ep.next_index++;
	rh_mutex_unlock(&ep.registry_lock);

	ts->registered = true;
	/* Not inside a section (the first read_lock registers before it
	 * begins): quiescent, and in membarrier mode the inline paths from
	 * now on.  Relaxed: a waiter sees a quiescent word before and after
	 * the store. */
	if (ep.use_membarrier) {
		relhash__self.mode = RELHASH__MODE_MEMBARRIER;
		rh_store(&relhash__self.ctr, 0);
	} else {
		relhash__self.mode = RELHASH__MODE_FENCE;
	}
}

struct rh_thread *rh_thread_self(void)
{
	struct rh_thread *ts = &self_state;

	if (RELHASH_UNLIKELY(!ts->registered))
		register_self(ts);
	return ts;
}

unsigned rh_thread_index(void)
{
	return rh_thread_self()->index;
}

static void unregister_self(struct rh_thread *ts)
{
	struct relhash__reader *r = &relhash__self;

	/* Relaxed: only this thread writes its word. */
	if (rh_load(&r->ctr) & RELHASH__NEST_MASK) {
		fprintf(stderr, "relhash: thread %d unregistered inside a "
		        "read-side critical section; ending it\n", (int)ts->tid);
		rh_store_release(&r->ctr, rh_load(&r->ctr) & RELHASH__SLOW);
	}
	rh_local_thread_exit(ts);
	rh_callbacks_thread_exit(ts);

	rh_mutex_lock(&ep.registry_lock);
	rh_list_del(&ts->link);
	if (ts->waiting) {
		/* A grace period waits on us: let it see we are gone. */
		rh_list_del(&ts->wait_link);
		ts->waiting = false;
		rh_fetch_add(&ep.gp_futex, 1);
		rh_futex_wake_all(&ep.gp_futex);
	}
	rh_mutex_unlock(&ep.registry_lock);

	ts->registered = false;
	r->mode = RELHASH__MODE_UNREGISTERED;
	/* The next read_lock registers.  Relaxed: quiescent before and
	 * after, and we are off the registry already. */
	rh_store(&r->ctr, RELHASH__SLOW);
}

static void thread_exit(void *arg)
{
	unregister_self(arg);
}

void rh_registry_for_each(void (*fn)(struct rh_thread *ts, void *arg), void *arg)
{
	struct rh_list *pos, *tmp;

	rh_mutex_lock(&ep.registry_lock);
	rh_list_for_each_safe(pos, tmp, &ep.registry)
		fn(rh_container_of(pos, struct rh_thread, link), arg);
	rh_mutex_unlock(&ep.registry_lock);
}

/* Registry lock held: the body of rh_registry_handshake(). */
static void handshake_locked(bool (*mark)(struct rh_thread *ts),
                             void (*take)(struct rh_thread *ts))
{
	struct rh_list *pos, *tmp;
	bool any = false;

	rh_list_for_each_safe(pos, tmp, &ep.registry)
		any |= mark(rh_container_of(pos, struct rh_thread, link));
	/* Every owner has either seen its mark or made its appending flag
	 * visible to take() (doc/DESIGN.md, "Queueing without a lock"). */
	if (any)
		rh_barrier_all_threads();
	rh_list_for_each_safe(pos, tmp, &ep.registry)
		take(rh_container_of(pos, struct rh_thread, link));
}

void rh_registry_handshake(bool (*mark)(struct rh_thread *ts),
                           void (*take)(struct rh_thread *ts))
{
	/* No pthread_once: a thread in the registry has run epoch_init()
	 * before taking the registry lock, and with none, nothing is
	 * marked. */
	rh_mutex_lock(&ep.registry_lock);
	handshake_locked(mark, take);
	rh_mutex_unlock(&ep.registry_lock);
}

/* ------------------------------------------------------------------ */
/* fork(2): the registry's part (src/engine/fork.c has the whole protocol) */

bool rh_running_callbacks(void)
{
	return self_state.running_callbacks;
}

bool rh_may_wait_for_grace_periods(void)
{
	return !relhash__read_ongoing_inline() && !rh_running_callbacks();
}

/* Every batch whole in the child: claimed, and no owner's window open.
 * Waiting for the windows is safe here: a window waits for no other
 * thread (in --enable-debug builds it may sleep a moment, on its own). */
void rh_registry_fork_prepare(void)
{
	rh_mutex_lock(&ep.registry_lock);
	handshake_locked(rh_batch_claim, rh_batch_await);
}

void rh_registry_fork_parent(void)
{
	struct rh_list *pos, *tmp;

	rh_list_for_each_safe(pos, tmp, &ep.registry)
		rh_batch_release(rh_container_of(pos, struct rh_thread, link));
	rh_mutex_unlock(&ep.registry_lock);
}

void rh_registry_fork_child(void (*adopt)(struct rh_thread *ts))
{
	struct rh_thread *self = &self_state;
	struct rh_list *pos, *tmp;

	/* Only the forking thread exists here: the others' records leave
	 * the registry (no grace period may wait for a thread that is not
	 * there).  adopt() takes every thread's queued callbacks, as at an
	 * exit.  The others' memory stays mapped in the child. */
	rh_list_for_each_safe(pos, tmp, &ep.registry) {
		struct rh_thread *ts = rh_container_of(pos, struct rh_thread,
		                                       link);

		adopt(ts);
		if (ts != self)
			rh_list_del(&ts->link);
		rh_batch_release(ts);
	}
	if (self->registered)
		self->tid = rh_gettid();
	/* A grace period a parent thread was running has no thread here;
	 * neither its waiting list nor its lock is ours any more. */
	self->waiting = false;
	rh_list_init(&self->wait_link);
	rh_pthread_checked(pthread_mutex_init(&ep.gp_lock, NULL));
	rh_mutex_unlock(&ep.registry_lock);
}

/* ------------------------------------------------------------------ */
/* Read side, slow halves                                              */

/* Misuse that would otherwise corrupt the reader's word, and with it the
 * grace periods of every thread. */
static void misuse(const char *what)
{
	fprintf(stderr, "relhash: %s\n", what);
	abort();
}

/* ctr has RELHASH__SLOW (not registered yet, or fence mode), or is at the
 * maximum depth. */
void relhash__read_lock_slow(struct relhash__reader *r)
{
	uint64_t c;

	if (r->mode == RELHASH__MODE_UNREGISTERED)
		register_self(&self_state);
	c = rh_load(&r->ctr); /* relaxed: only this thread writes it */
	if ((c & RELHASH__NEST_MASK) == RELHASH__NEST_MASK)
		misuse("relhash_read_lock() nested deeper than 32,767 sections");
	if (c & RELHASH__NEST_MASK) {
		/* Nested, fence mode.  Relaxed: only the depth changes. */
		rh_store(&r->ctr, c + 1);
		return;
	}
	relhash__reader_begin(r, c & RELHASH__SLOW);
	/* Fence mode: nobody will run a barrier on our CPU, so order the
	 * epoch store before the section's loads ourselves. */
	if (r->mode == RELHASH__MODE_FENCE)
		rh_smp_mb();
}

/* ctr has RELHASH__SLOW (fence mode), or depth 0. */
void relhash__read_unlock_slow(struct relhash__reader *r)
{
	uint64_t c = rh_load(&r->ctr); /* relaxed: only this thread writes it */

	if (!(c & RELHASH__NEST_MASK))
		misuse("relhash_read_unlock() outside any read-side critical "
		       "section");
	if ((c & RELHASH__NEST_MASK) != 1) {
		/* Nested.  Relaxed: only the depth changes. */
		rh_store(&r->ctr, c - 1);
		return;
	}
	/* The section's loads complete before the store that lets a grace
	 * period end... */
	rh_smp_mb();
	rh_store_release(&r->ctr, RELHASH__SLOW);
	/* ...and the store is visible before we read wake (Dekker with the
	 * waiter, which sets wake, fences, and re-reads ctr). */
	rh_smp_mb();
	if (rh_load(&r->wake))
		relhash__reader_wake(r);
}

void relhash__reader_wake(struct relhash__reader *r)
{
	rh_store(&r->wake, 0);
	rh_fetch_add(&ep.gp_futex, 1);
	rh_futex_wake_all(&ep.gp_futex);
}

void (relhash_read_lock)(void)
{
	relhash__read_lock_inline();
}

void (relhash_read_unlock)(void)
{
	relhash__read_unlock_inline();
}

bool (relhash_read_ongoing)(void)
{
	return relhash__read_ongoing_inline();
}

int relhash_thread_register(void)
{
	rh_thread_self();
	return 0;
}

void relhash_thread_unregister(void)
{
	struct rh_thread *ts = &self_state;

	if (!ts->registered)
		return;
	unregister_self(ts);
	/* Clearing a value that was set allocates nothing: cannot fail. */
	rh_pthread_checked(pthread_setspecific(ep.exit_key, NULL));
}

/* ------------------------------------------------------------------ */
/* Grace periods                                                       */

/*
 * Does this reader hold up a grace period with this target?  Acquire pairs
 * with the release store of the outermost unlock under TSan; on hardware the
 * final rh_barrier_all_threads() orders the reader's loads before our
 * caller's frees.
 */
static bool reader_blocks(const struct rh_thread *ts, uint64_t target)
{
	uint64_t c = rh_load_acquire(&ts->reader->ctr);

	return (c & RELHASH__NEST_MASK) && rh_epoch_before(c, target);
}

/* Move the readers that are done off the waiting list.  Registry lock. */
static void drop_finished(struct rh_list *waiting, uint64_t target)
{
	struct rh_list *pos, *tmp;

	rh_list_for_each_safe(pos, tmp, waiting) {
		struct rh_thread *ts = rh_container_of(pos, struct rh_thread,
		                                       wait_link);

		if (!reader_blocks(ts, target)) {
			rh_list_del(&ts->wait_link);
			ts->waiting = false;
			rh_store(&ts->reader->wake, 0);
		}
	}
}

static void warn_stalled(struct rh_list *waiting, uint64_t target,
                         uint64_t waited_ns)
{
	struct rh_list *pos, *tmp;

	rh_list_for_each_safe(pos, tmp, waiting) {
		struct rh_thread *ts = rh_container_of(pos, struct rh_thread,
		                                       wait_link);

		fprintf(stderr, "relhash: grace period %llu stalled for %.1f s "
		        "by thread %d, inside a read-side critical section "
		        "since epoch %llu\n",
		        (unsigned long long)(target >> RELHASH__EPOCH_SHIFT),
		        (double)waited_ns / 1e9, (int)ts->tid,
		        (unsigned long long)(rh_load(&ts->reader->ctr) >>
		                             RELHASH__EPOCH_SHIFT));
		rh_add_relaxed(&ep.stall_warnings, 1);
	}
}

/*
 * Sleep until a waited-for reader leaves (or GP_SLEEP_NS).  Registry lock
 * held on entry and exit, dropped while asleep.
 */
static void sleep_on_readers(struct rh_list *waiting, uint64_t target)
{
	struct rh_list *pos, *tmp;
	/* Acquire: keeps the later stores of wake after this load, so a
	 * reader that sees wake bumps the word after we read it. */
	uint32_t seq = rh_load_acquire(&ep.gp_futex);

	rh_list_for_each_safe(pos, tmp, waiting)
		rh_store(&rh_container_of(pos, struct rh_thread,
		                          wait_link)->reader->wake, 1);
	/*
	 * Dekker: a reader stores epoch = 0 then reads wake; we stored wake
	 * and now re-read epoch.  The barrier runs on every reader's CPU:
	 * either the reader's store came before it (we see 0 below), or its
	 * wake load comes after it (it sees 1 and wakes us; its bump of
	 * gp_futex comes after our read of seq, so the futex wait below
	 * cannot miss it).
	 */
	rh_barrier_all_threads();
	drop_finished(waiting, target);
	if (rh_list_empty(waiting))
		return;
	rh_mutex_unlock(&ep.registry_lock);
	rh_futex_wait(&ep.gp_futex, seq, GP_SLEEP_NS);
	rh_mutex_lock(&ep.registry_lock);
}

/* One grace period.  gp_lock held. */
static void run_grace_period(void)
{
	struct rh_list waiting, *pos, *tmp;
	uint64_t target, start = 0, timeout;
	bool warned = false;
	unsigned round;

	/* seq_cst read-modify-write: readers that load the new value (with
	 * acquire) see every update that preceded this grace period. */
	target = rh_add_fetch(&relhash__gp.ctr, RELHASH__EPOCH_ONE);
	/* Every reader either has its epoch store visible to the scan below,
	 * or will see all updates that preceded the increment. */
	rh_barrier_all_threads();

	rh_list_init(&waiting);
	rh_mutex_lock(&ep.registry_lock);
	rh_list_for_each_safe(pos, tmp, &ep.registry) {
		struct rh_thread *ts = rh_container_of(pos, struct rh_thread, link);

		if (reader_blocks(ts, target)) {
			rh_list_add_tail(&waiting, &ts->wait_link);
			ts->waiting = true;
		}
	}
	for (round = 0; !rh_list_empty(&waiting); round++) {
		drop_finished(&waiting, target);
		if (rh_list_empty(&waiting))
			break;
		if (round < GP_SPIN_ROUNDS) {
			rh_cpu_relax();
			continue;
		}
		if (!start)
			start = now_ns();
		timeout = rh_load(&ep.stall_timeout_ns);
		if (!warned && now_ns() - start >= timeout) {
			warn_stalled(&waiting, target, now_ns() - start);
			warned = true;
		}
		sleep_on_readers(&waiting, target);
	}
	rh_mutex_unlock(&ep.registry_lock);

	/* The readers we waited for have finished all their loads before our
	 * caller goes on to free what they might have seen. */
	rh_barrier_all_threads();
	rh_store_release(&ep.gp_done, target);
	rh_add_relaxed(&ep.grace_periods, 1);
}

/*
 * The target a grace period must reach to cover the caller, as seen now:
 * the next epoch.  The caller's updates must be ordered before the grace
 * period that satisfies it.  A grace period with target >= this began with
 * an increment that comes after this read-modify-write in the epoch's
 * modification order, so it is in our release sequence: a reader that
 * acquires the new epoch also sees our updates, even on machines that are
 * not multi-copy atomic (a fence and a plain load would not give that),
 * and the barriers of that grace period come after them.  It also waits
 * for every reader that is inside a section now (doc/DESIGN.md, "Sharing
 * grace periods" and "Polled grace periods").
 */
static uint64_t next_target(void)
{
	uint64_t now = rh_fetch_add(&relhash__gp.ctr, 0);

	if (RH_TEST_BUG(POLL_EARLY))
		return now;
	return now + RELHASH__EPOCH_ONE;
}

/* Wait until a grace period with target need or later has completed,
 * sharing grace periods with concurrent callers.  Outside any section. */
static void wait_for_target(uint64_t need)
{
	rh_once(&ep.once, epoch_init);
	rh_mutex_lock(&ep.gp_lock);
	/* Relaxed: gp_done is written under gp_lock, which we hold. */
	if (rh_epoch_before(rh_load(&ep.gp_done), need))
		run_grace_period();
	rh_mutex_unlock(&ep.gp_lock);
}

int relhash_synchronize(void)
{
	if (relhash__read_ongoing_inline())
		return -EDEADLK;
	wait_for_target(next_target());
	return 0;
}

/* ------------------------------------------------------------------ */
/* Polled grace periods                                                */

uint64_t relhash_gp_get_state(void)
{
	return next_target();
}

uint64_t relhash_gp_start_poll(void)
{
	uint64_t cookie = next_target();

	/* The callback thread's grace period begins after this call, so its
	 * target is at least the cookie. */
	rh_callbacks_request_gp();
	return cookie;
}

bool relhash_gp_poll_state(uint64_t cookie)
{
	/* Acquire, pairing with the release store of gp_done after the
	 * grace period's last barrier: a caller that finds the cookie done
	 * also finds the readers it waited for finished, and may free. */
	return !rh_epoch_before(rh_load_acquire(&ep.gp_done), cookie);
}

int relhash_gp_cond_synchronize(uint64_t cookie)
{
	if (relhash_gp_poll_state(cookie))
		return 0;
	if (relhash__read_ongoing_inline())
		return -EDEADLK;
	wait_for_target(cookie);
	return 0;
}

void relhash_set_stall_timeout_ms(unsigned ms)
{
	rh_once(&ep.once, epoch_init);
	store_stall_timeout(ms);
}

int relhash_epoch_stats(struct relhash_epoch_stats *stats)
{
	struct relhash_epoch_stats all = { .size = sizeof(all) };

	/* Refused before anything starts: a refused call changes nothing. */
	if (!rh_stats_ok(stats))
		return -EINVAL;
	rh_once(&ep.once, epoch_init);
	all.grace_periods = rh_load(&ep.grace_periods);
	all.stall_warnings = rh_load(&ep.stall_warnings);
	all.uses_membarrier = ep.use_membarrier;
	rh_callbacks_stats(&all);
	rh_local_stats(&all);
	return rh_stats_copy(stats, &all, sizeof(all));
}
