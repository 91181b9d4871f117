/*
 * tests/test-no-membarrier.c - the engine falls back to fence mode by
 * itself where membarrier(2) is refused, and keeps its guarantees there.
 *
 * Two children, each under a real seccomp filter installed before its
 * first relhash call (prctl(PR_SET_NO_NEW_PRIVS), then a classic BPF
 * program, SECCOMP_SET_MODE_FILTER):
 *
 *   all  every membarrier(2) call fails with EPERM (a container's
 *        seccomp profile; gVisor and rr refuse it similarly)
 *   cmd  only MEMBARRIER_CMD_PRIVATE_EXPEDITED fails, by its argument:
 *        the query and the registration succeed
 *
 * Each runs a short torture: readers look up every key and read the
 * published pointer inside sections, checking that what they see is not
 * yet reclaimed (reclamation poisons before it frees); updaters replace
 * objects and free the old ones with relhash_defer() and
 * relhash_defer_free(); a thread publishes and relhash_synchronize()s; a
 * thread resizes.  Then relhash_epoch_stats().uses_membarrier must be 0.
 * The negative control NO_MEMBARRIER_PROBE (src/base/debug.h) chooses
 * membarrier mode without trying the command: the "cmd" child then dies.
 *
 * Plain C, without Check, so that it also runs where Check is missing
 * (musl builds).  Exit 77 (skip) without seccomp.  RELHASH_TORTURE_MS sets
 * the run time of each child (default 1000).
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <relhash.h>

#if defined(HAVE_LINUX_SECCOMP_H) && defined(HAVE_LINUX_FILTER_H) && \
	defined(HAVE_LINUX_MEMBARRIER_H)
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <linux/filter.h>
#include <linux/membarrier.h>
#include <linux/seccomp.h>
#if defined(SYS_membarrier) && defined(PR_SET_NO_NEW_PRIVS)
#define HAVE_FILTER 1
#endif
#endif

#ifndef HAVE_FILTER
int main(void)
{
	puts("test-no-membarrier: no seccomp or membarrier headers: skipped");
	return 77;
}
#else

#define NKEYS 256
#define NREADERS 2
#define NUPDATERS 2
#define LIVE 0x4c495645u
#define DEAD 0xdeadu

struct obj {
	uint64_t key;
	_Atomic uint32_t state; /* LIVE until reclaimed */
	struct relhash_node node;
};

static const struct relhash_params params = {
	.node_offset = offsetof(struct obj, node),
	.key_offset = offsetof(struct obj, key),
	.key_len = sizeof(uint64_t),
};

static struct relhash_table *table;
static _Atomic(struct obj *) published;
static atomic_bool stop;
static _Atomic unsigned long failures, lookups, replaces, resizes, syncs;

/* ------------------------------------------------------------------ */
/* The filter                                                          */

/*
 * EPERM for membarrier(2), or (only_cmd) for its PRIVATE_EXPEDITED
 * command alone; everything else allowed.  The architecture is not
 * checked: in another system-call ABI the number may name another call,
 * which this test does not make.  args[0] is read as its low 32 bits
 * (the command is an int), at the offset of the low half on this
 * machine's byte order.
 */
static int install_filter(bool only_cmd)
{
	const unsigned arg0 = offsetof(struct seccomp_data, args[0]) +
		(__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__ ? 4 : 0);
	struct sock_filter code[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
		         offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_membarrier, 0, 2),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, arg0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
		         MEMBARRIER_CMD_PRIVATE_EXPEDITED, 1, only_cmd ? 0 : 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
	};
	struct sock_fprog prog = {
		.len = (unsigned short)(sizeof(code) / sizeof(code[0])),
		.filter = code,
	};

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		return -errno;
#ifdef SYS_seccomp
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) == 0)
		return 0;
	if (errno != ENOSYS)
		return -errno;
#endif
	return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) == 0 ?
	       0 : -errno;
}

/* Does the filter refuse what it should (and only that)? */
static bool filter_works(bool only_cmd)
{
	long q = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
	int q_err = errno;
	long c = syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0,
	                 0);

	if (c != -1 || errno != EPERM)
		return false;
	/* Under "cmd" the query passes (it may still fail where the kernel
	 * has no membarrier(2), but not with our EPERM). */
	return only_cmd ? q >= 0 || q_err != EPERM : q == -1 && q_err == EPERM;
}

/* ------------------------------------------------------------------ */
/* The torture                                                         */

static void fail(const char *what, uint64_t key)
{
	fprintf(stderr, "test-no-membarrier: %s (key %llu)\n", what,
	        (unsigned long long)key);
	atomic_fetch_add_explicit(&failures, 1, memory_order_relaxed);
}

static struct obj *new_obj(uint64_t key)
{
	struct obj *o = malloc(sizeof(*o));

	if (!o) {
		perror("malloc");
		exit(99);
	}
	o->key = key;
	/* Relaxed: published later by the table's or our release. */
	atomic_store_explicit(&o->state, LIVE, memory_order_relaxed);
	return o;
}

/* What reclamation does, a grace period after the object went away:
 * poison, then free.  A reader that still sees it sees DEAD (or freed
 * memory, which the sanitizer builds report). */
static void reclaim(void *p)
{
	struct obj *o = p;

	/* Relaxed: a reader that could see this is the bug being caught. */
	atomic_store_explicit(&o->state, DEAD, memory_order_relaxed);
	free(o);
}

static void check_live(const struct obj *o, uint64_t key, const char *what)
{
	/* Relaxed: the state is written before publication or after a
	 * grace period; any other value is the failure. */
	if (atomic_load_explicit(&o->state, memory_order_relaxed) != LIVE ||
	    o->key != key)
		fail(what, key);
}

static void *reader(void *arg)
{
	uint64_t k = (uintptr_t)arg;
	struct obj *o;

	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		relhash_read_lock();
		k = (k + 7) % NKEYS;
		o = relhash_lookup_fast(table, &k, params);
		if (!o)
			fail("key missing", k);
		else
			check_live(o, k, "lookup found a reclaimed object");
		/* Acquire: the object's fields after its publication. */
		o = atomic_load_explicit(&published, memory_order_acquire);
		sched_yield();
		check_live(o, NKEYS, "published object reclaimed in section");
		relhash_read_unlock();
		atomic_fetch_add_explicit(&lookups, 1, memory_order_relaxed);
	}
	return NULL;
}

/* Replace key k's object; the old one is reclaimed after a grace
 * period, by relhash_defer() (poisoned) or relhash_defer_free(). */
static void replace_one(uint64_t k, bool poison)
{
	struct obj *fresh = new_obj(k), *old;
	int r;

	relhash_read_lock();
	old = relhash_lookup(table, &k);
	r = old ? relhash_replace(table, &old->node, &fresh->node) : -ENOENT;
	relhash_read_unlock();
	if (r != 0) {
		/* Another updater replaced it first. */
		free(fresh);
		return;
	}
	if (poison)
		relhash_defer(reclaim, old);
	else
		relhash_defer_free(old);
	atomic_fetch_add_explicit(&replaces, 1, memory_order_relaxed);
}

static void *updater(void *arg)
{
	uint64_t k = (uintptr_t)arg * 31;
	unsigned n = 0;

	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		k = (k * 6364136223846793005ull + 1442695040888963407ull);
		replace_one((k >> 33) % NKEYS, n++ % 4 != 0);
	}
	return NULL;
}

/* Publish, wait a grace period, reclaim: the classic use of
 * relhash_synchronize(). */
static void *synchronizer(void *arg)
{
	struct obj *old;

	(void)arg;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		/* Release: the new object's fields before the pointer. */
		old = atomic_exchange_explicit(&published, new_obj(NKEYS),
		                               memory_order_release);
		if (relhash_synchronize() != 0)
			fail("relhash_synchronize failed", NKEYS);
		reclaim(old);
		atomic_fetch_add_explicit(&syncs, 1, memory_order_relaxed);
	}
	return NULL;
}

static void *resizer(void *arg)
{
	static const size_t sizes[] = { 8, 1024, 64, 4096, 16 };
	unsigned i = 0;
	int r;

	(void)arg;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		r = relhash_resize(table, sizes[i++ % 5]);
		if (r != 0)
			fail("relhash_resize failed", (uint64_t)-r);
		atomic_fetch_add_explicit(&resizes, 1, memory_order_relaxed);
	}
	return NULL;
}

static void setup(void)
{
	uint64_t k;

	table = relhash_create(&params);
	if (!table) {
		perror("relhash_create");
		exit(99);
	}
	for (k = 0; k < NKEYS; k++)
		if (relhash_insert(table, &new_obj(k)->node) != 0)
			fail("insert failed", k);
	atomic_store_explicit(&published, new_obj(NKEYS), memory_order_release);
}

static void free_obj(void *obj, void *arg)
{
	(void)arg;
	free(obj);
}

/* Run every thread for ms milliseconds. */
static void torture(unsigned ms)
{
	pthread_t th[NREADERS + NUPDATERS + 2];
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };
	unsigned i, n = 0;

	for (i = 0; i < NREADERS; i++)
		pthread_create(&th[n++], NULL, reader, (void *)(uintptr_t)i);
	for (i = 0; i < NUPDATERS; i++)
		pthread_create(&th[n++], NULL, updater, (void *)(uintptr_t)i);
	pthread_create(&th[n++], NULL, synchronizer, NULL);
	pthread_create(&th[n++], NULL, resizer, NULL);
	nanosleep(&ts, NULL);
	atomic_store_explicit(&stop, true, memory_order_relaxed);
	for (i = 0; i < n; i++)
		pthread_join(th[i], NULL);
}

/* The child's part: filter, torture, verdict (0 pass, 1 fail, 77 skip). */
static int child(bool only_cmd, unsigned ms)
{
	struct relhash_epoch_stats es = { .size = sizeof(es) };
	const char *name = only_cmd ? "cmd" : "all";
	int err = install_filter(only_cmd);

	if (err) {
		printf("%s: cannot install a seccomp filter: %s: skipped\n",
		       name, strerror(-err));
		return 77;
	}
	if (!filter_works(only_cmd)) {
		printf("%s: the filter does not refuse membarrier(2) as "
		       "expected\n", name);
		return 1;
	}
	setup();
	torture(ms);
	relhash_barrier();
	relhash_epoch_stats(&es);
	if (relhash_count(table) != NKEYS)
		fail("count changed", relhash_count(table));
	free(atomic_load_explicit(&published, memory_order_relaxed));
	relhash_destroy(table, free_obj, NULL);
	printf("%s: uses_membarrier=%d grace_periods=%llu lookups=%lu "
	       "replaces=%lu syncs=%lu resizes=%lu callbacks=%llu/%llu "
	       "failures=%lu\n", name, es.uses_membarrier,
	       (unsigned long long)es.grace_periods, lookups, replaces, syncs,
	       resizes, (unsigned long long)es.callbacks_run,
	       (unsigned long long)es.callbacks_queued, failures);
	if (es.uses_membarrier)
		fail("uses_membarrier is 1 under the filter", 0);
	if (!es.grace_periods || !replaces || !syncs || !resizes)
		fail("the torture did not get going", 0);
	if (es.callbacks_run != es.callbacks_queued)
		fail("callbacks left after relhash_barrier()", 0);
	return failures ? 1 : 0;
}

static int run_child(bool only_cmd, unsigned ms)
{
	pid_t pid;
	int status;

	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		perror("fork");
		return 99;
	}
	if (pid == 0) {
		status = child(only_cmd, ms);
		fflush(stdout);
		_exit(status);
	}
	if (waitpid(pid, &status, 0) != pid) {
		perror("waitpid");
		return 99;
	}
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	printf("%s: child killed by signal %d\n", only_cmd ? "cmd" : "all",
	       WTERMSIG(status));
	return 1;
}

int main(void)
{
	const char *env = getenv("RELHASH_TORTURE_MS");
	unsigned ms = env ? (unsigned)strtoul(env, NULL, 10) : 1000;
	int all = run_child(false, ms), cmd = run_child(true, ms);

	if (all == 77 && cmd == 77)
		return 77;
	if ((all != 0 && all != 77) || (cmd != 0 && cmd != 77))
		return all == 99 || cmd == 99 ? 99 : 1;
	return 0;
}
#endif /* HAVE_FILTER */
