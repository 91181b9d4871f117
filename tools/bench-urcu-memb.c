/*
 * bench-urcu-memb.c - rculfhash with liburcu's memb flavor (bench-urcu.h
 * explains why each flavor has a file of its own), and memb's grace-period
 * figures for --epoch, next to relhash's.
 */
#ifdef HAVE_URCU
#define _LGPL_SOURCE
#define RCU_MEMBARRIER
#include <urcu.h>

#define BENCH_URCU_BACKEND bench_urcu_memb_backend
#define BENCH_URCU_NAME "urcu-memb"
#define BENCH_URCU_DESCRIPTION "liburcu rculfhash, memb flavor"
#include "bench-urcu.h"

/* ---------------------------------------------------------------------- */
/* --epoch                                                                */

/* With _LGPL_SOURCE liburcu's read side is inline; the exported functions
 * are not reachable under their names, so memb has no "call" figure. */
static double memb_lock_unlock_inline(uint64_t n)
{
	uint64_t i, t0 = bench_now_ns();

	for (i = 0; i < n; i++) {
		rcu_read_lock();
		rcu_read_unlock();
	}
	return (double)(bench_now_ns() - t0) / (double)n;
}

static void memb_read_spin(const int *stop, uint64_t section_ns)
{
	while (!__atomic_load_n(stop, __ATOMIC_RELAXED)) {
		rcu_read_lock();
		bench_section_work(section_ns);
		rcu_read_unlock();
	}
}

static void memb_synchronize(void)
{
	synchronize_rcu();
}

static uint64_t memb_callbacks_run;

static void memb_count_callback(struct rcu_head *head)
{
	(void)head;
	__atomic_fetch_add(&memb_callbacks_run, 1, __ATOMIC_RELAXED);
}

static uint64_t memb_call_and_barrier(uint64_t n)
{
	struct rcu_head *heads = bench_xcalloc(n, sizeof(*heads));
	uint64_t i;

	__atomic_store_n(&memb_callbacks_run, 0, __ATOMIC_RELAXED);
	for (i = 0; i < n; i++)
		call_rcu(&heads[i], memb_count_callback);
	rcu_barrier();
	free(heads);
	return __atomic_load_n(&memb_callbacks_run, __ATOMIC_RELAXED);
}

const struct bench_epoch_flavor bench_urcu_memb_epoch = {
	.name = "urcu-memb",
	.thread_enter = urcu_thread_enter,
	.thread_leave = urcu_thread_leave,
	.lock_unlock_inline = memb_lock_unlock_inline,
	.read_spin = memb_read_spin,
	.synchronize = memb_synchronize,
	.call_and_barrier = memb_call_and_barrier,
};
#endif /* HAVE_URCU */
