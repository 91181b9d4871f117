/*
 * bench-epoch.c - grace-period micro-benchmarks (--epoch), run the same way
 * for each flavor (relhash's engine, liburcu-memb):
 *
 *   - read_lock + read_unlock: ns per pair in one thread, inline and (where
 *     available) through the exported functions;
 *   - synchronize latency while `readers` threads enter and leave read-side
 *     sections in a tight loop;
 *   - callback throughput under the same readers: queue many callbacks, wait
 *     for all of them (barrier), callbacks per second.
 */
#include "bench.h"

#include <stdlib.h>
#include <string.h>

#define LOCK_PAIRS 20000000u    /* at most, per measurement of read_lock+unlock */
#define LOCK_MEASURE_NS 40000000u /* at least, per measurement, when fewer pairs do */
#define LOCK_REPEATS 3          /* best of, to shed scheduler noise */
#define SYNC_SECONDS 1.0        /* how long to call synchronize */
#define SYNC_MAX_CALLS 20000u
#define CALLBACKS 1000000u

struct epoch_reader {
	const struct bench_epoch_flavor *flavor;
	const int *stop;
	uint64_t section_ns;
	pthread_t thread;
};

static void flavor_enter(const struct bench_epoch_flavor *f)
{
	if (f->thread_enter)
		f->thread_enter();
}

static void flavor_leave(const struct bench_epoch_flavor *f)
{
	if (f->thread_leave)
		f->thread_leave();
}

static void *epoch_reader_main(void *arg)
{
	struct epoch_reader *r = arg;

	flavor_enter(r->flavor);
	r->flavor->read_spin(r->stop, r->section_ns);
	flavor_leave(r->flavor);
	return NULL;
}

/*
 * The best of LOCK_REPEATS measurements of LOCK_PAIRS pairs each, or of
 * fewer where fewer take LOCK_MEASURE_NS: a sanitizer build makes a pair
 * a hundred times dearer, and the figure is only shown, never checked.
 */
static double best_of(double (*measure)(uint64_t n))
{
	uint64_t pairs = LOCK_PAIRS / 100;
	double best = measure(pairs); /* and warm up */
	unsigned i;

	while (pairs < LOCK_PAIRS && best * (double)pairs < LOCK_MEASURE_NS) {
		pairs = pairs * 4 < LOCK_PAIRS ? pairs * 4 : LOCK_PAIRS;
		best = measure(pairs);
	}
	for (i = 0; i < LOCK_REPEATS; i++) {
		double ns = measure(pairs);

		if (ns < best)
			best = ns;
	}
	return best;
}

static void epoch_measure(const struct bench_epoch_flavor *f, unsigned readers,
                          uint64_t section_ns, bool quick,
                          struct bench_epoch_result *out)
{
	struct epoch_reader *rd;
	int stop = 0;
	uint64_t t0, deadline;
	unsigned i;

	memset(out, 0, sizeof(*out));
	out->name = f->name;
	out->lock_unlock_call_ns = -1;
	out->call_rate = -1;

	flavor_enter(f);
	out->lock_unlock_inline_ns = best_of(f->lock_unlock_inline);
	if (f->lock_unlock_call)
		out->lock_unlock_call_ns = best_of(f->lock_unlock_call);
	if (quick) {
		flavor_leave(f);
		return;
	}

	out->readers = readers;
	out->section_ns = section_ns;
	rd = bench_xcalloc(readers, sizeof(*rd));
	for (i = 0; i < readers; i++) {
		rd[i].flavor = f;
		rd[i].stop = &stop;
		rd[i].section_ns = section_ns;
		if (pthread_create(&rd[i].thread, NULL, epoch_reader_main, &rd[i]))
			bench_die("cannot create a reader thread");
	}
	bench_sleep_ns(50000000); /* let the readers start */

	deadline = bench_now_ns() + (uint64_t)(SYNC_SECONDS * 1e9);
	for (i = 0; i < SYNC_MAX_CALLS && bench_now_ns() < deadline; i++) {
		t0 = bench_now_ns();
		f->synchronize();
		bench_hist_add(&out->synchronize_ns, bench_now_ns() - t0);
	}

	t0 = bench_now_ns();
	out->calls_queued = CALLBACKS;
	out->calls = f->call_and_barrier(CALLBACKS);
	out->call_rate = (double)CALLBACKS / ((double)(bench_now_ns() - t0) / 1e9);

	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (i = 0; i < readers; i++)
		pthread_join(rd[i].thread, NULL);
	free(rd);
	flavor_leave(f);
}

/* Every flavor this build has, relhash first. */
static const struct bench_epoch_flavor *const flavors[] = {
	&bench_relhash_epoch,
#ifdef HAVE_URCU
	&bench_urcu_memb_epoch,
#endif
};

unsigned bench_epoch_run_all(unsigned readers, uint64_t section_ns, bool quick,
                             struct bench_epoch_result *out)
{
	unsigned i, n = sizeof(flavors) / sizeof(flavors[0]);

	for (i = 0; i < n; i++)
		epoch_measure(flavors[i], readers, section_ns, quick, &out[i]);
	return n;
}
