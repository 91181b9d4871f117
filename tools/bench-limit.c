/*
 * bench-limit.c - the machine's limit for lookups: how many independent
 * random cache-line loads one thread completes a second over a buffer the
 * size of the table, with many loads in flight at once.
 *
 * A lookup of a key not in any cache costs at least two dependent misses
 * (the bucket, then the object it points to), and lookups of different
 * keys are independent, so the processor can overlap them as it overlaps
 * the probe's loads: no table does better than half the probe's loads a
 * second on one thread.  The report gives each backend as a fraction of
 * that ceiling: the median over rounds of its lookups in a round over the
 * ceiling probed just after that round.  Both sides are per CPU-second the
 * thread got, so that a busy machine affects them alike.
 */
#include "bench.h"

#include <stdlib.h>
#include <string.h>

/* Loads per batch between looks at the clock; 8 written out in the loop,
 * all independent (each address comes from the generator alone). */
#define LIMIT_BATCH 4096

/* One word of line r of n (bench_scale(): a multiply, no division). */
#define LIMIT_WORD(buf, r, n) ((buf)[bench_scale((uint32_t)(r), (n)) * 8])

static uint64_t limit_batch(const uint64_t *buf, uint64_t lines, uint64_t *rng)
{
	uint64_t sum = 0;
	unsigned i;

	for (i = 0; i < LIMIT_BATCH; i += 8) {
		uint64_t a = bench_rand(rng), b = bench_rand(rng);
		uint64_t c = bench_rand(rng), d = bench_rand(rng);
		uint64_t e = bench_rand(rng), f = bench_rand(rng);
		uint64_t g = bench_rand(rng), h = bench_rand(rng);

		sum += LIMIT_WORD(buf, a, lines) + LIMIT_WORD(buf, b, lines) +
		       LIMIT_WORD(buf, c, lines) + LIMIT_WORD(buf, d, lines) +
		       LIMIT_WORD(buf, e, lines) + LIMIT_WORD(buf, f, lines) +
		       LIMIT_WORD(buf, g, lines) + LIMIT_WORD(buf, h, lines);
	}
	return sum;
}

/* The buffer, at the first probe: `bytes` rounded to whole lines. */
static void limit_open(struct bench_limit *l, size_t bytes, unsigned rounds)
{
	uint64_t lines = (bytes + BENCH_CACHELINE - 1) / BENCH_CACHELINE;

	if (lines < 64)
		lines = 64;
	if (lines > UINT32_MAX)
		lines = UINT32_MAX;
	l->bytes = lines * BENCH_CACHELINE;
	l->buf = aligned_alloc(BENCH_CACHELINE, l->bytes);
	if (!l->buf)
		bench_die("out of memory (%llu bytes)",
		          (unsigned long long)l->bytes);
	/* Not zero: the kernel would map one shared zero page. */
	memset(l->buf, 1, l->bytes);
	l->loads_per_s = bench_xcalloc(rounds, sizeof(*l->loads_per_s));
}

void bench_limit_probe(struct bench_limit *l, size_t bytes, unsigned rounds,
                       double seconds)
{
	uint64_t lines, rng = BENCH_SEED + l->probes, sum = 0, loads = 0;
	uint64_t t0, cpu0, deadline;

	if (!l->buf)
		limit_open(l, bytes, rounds);
	if (l->probes >= rounds)
		return;
	lines = l->bytes / BENCH_CACHELINE;
	sum += limit_batch(l->buf, lines, &rng); /* warm up */
	t0 = bench_now_ns();
	cpu0 = bench_thread_cpu_ns();
	deadline = t0 + (uint64_t)(seconds * 1e9);
	do {
		sum += limit_batch(l->buf, lines, &rng);
		loads += LIMIT_BATCH;
	} while (bench_now_ns() < deadline);
	l->loads_per_s[l->probes++] =
		(double)loads / ((double)(bench_thread_cpu_ns() - cpu0) / 1e9);
	/* Keep the loads: the sum goes somewhere the compiler cannot see
	 * through. */
	__atomic_store_n(&l->sink, sum, __ATOMIC_RELAXED);
}

void bench_limit_free(struct bench_limit *l)
{
	free(l->buf);
	free(l->loads_per_s);
	*l = (struct bench_limit){ 0 };
}
