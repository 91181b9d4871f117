/*
 * bench-util.c - clock, latency histograms and small helpers for
 * relhash-bench.
 */
#include "bench.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

uint64_t bench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t bench_thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void bench_sleep_ns(uint64_t ns)
{
	struct timespec ts = {
		.tv_sec = (time_t)(ns / 1000000000u),
		.tv_nsec = (long)(ns % 1000000000u),
	};

	nanosleep(&ts, NULL);
}

static double ns_per_tick = 1.0;
static uint64_t empty_ticks; /* cost of an empty measurement */

void bench_clock_init(void)
{
	uint64_t t0, c0, t1, c1;
	unsigned i;

	/* Tick rate: ticks against the monotonic clock over 20 ms. */
	t0 = bench_now_ns();
	c0 = bench_ticks();
	bench_sleep_ns(20000000);
	t1 = bench_now_ns();
	c1 = bench_ticks();
	if (c1 > c0)
		ns_per_tick = (double)(t1 - t0) / (double)(c1 - c0);

	/* The smallest difference between two back-to-back readings. */
	empty_ticks = UINT64_MAX;
	for (i = 0; i < 1000; i++) {
		uint64_t a = bench_ticks();
		uint64_t b = bench_ticks();

		if (b - a < empty_ticks)
			empty_ticks = b - a;
	}
}

static double ticks_to_ns(uint64_t ticks)
{
	return (double)ticks * ns_per_tick;
}

double bench_latency_ns(uint64_t ticks)
{
	return ticks > empty_ticks ? ticks_to_ns(ticks - empty_ticks) : 0;
}

void bench_hist_merge(struct bench_hist *into, const struct bench_hist *h)
{
	unsigned i;

	for (i = 0; i < BENCH_HIST_BUCKETS; i++)
		into->count[i] += h->count[i];
	into->n += h->n;
	if (h->max > into->max)
		into->max = h->max;
}

/* The largest value that falls into bucket idx. */
static uint64_t hist_bucket_top(unsigned idx)
{
	unsigned e, shift;

	if (idx < BENCH_HIST_SUB)
		return idx;
	e = (idx >> BENCH_HIST_SUB_BITS) + BENCH_HIST_SUB_BITS - 1;
	shift = e - BENCH_HIST_SUB_BITS;
	return (((uint64_t)(BENCH_HIST_SUB | (idx & (BENCH_HIST_SUB - 1))) + 1)
	        << shift) - 1;
}

uint64_t bench_hist_quantile(const struct bench_hist *h, double q)
{
	uint64_t rank, seen = 0;
	unsigned i;

	if (h->n == 0)
		return 0;
	rank = (uint64_t)(q * (double)h->n);
	if (rank >= h->n)
		rank = h->n - 1;
	for (i = 0; i < BENCH_HIST_BUCKETS; i++) {
		seen += h->count[i];
		if (seen > rank) {
			uint64_t top = hist_bucket_top(i);
			return top < h->max ? top : h->max;
		}
	}
	return h->max;
}

static int compare_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

double bench_median(const double *v, unsigned n)
{
	double sorted[n ? n : 1];

	if (n == 0)
		return 0;
	memcpy(sorted, v, n * sizeof(*v));
	qsort(sorted, n, sizeof(*sorted), compare_double);
	return n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
}

void bench_die(const char *fmt, ...)
{
	va_list ap;

	fputs("relhash-bench: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

void *bench_xcalloc(size_t n, size_t size)
{
	void *p = calloc(n, size);

	if (!p)
		bench_die("out of memory (%zu x %zu bytes)", n, size);
	return p;
}

const char *bench_cannot_shrink(const struct bench_config *cfg)
{
	if (cfg->resize == BENCH_RESIZE_TOGGLE || cfg->resize == BENCH_RESIZE_WIDE)
		return "no resize call: the table only grows, by itself";
	return NULL;
}

void *bench_kv_alloc(uint64_t key)
{
	return BENCH_NEW_OBJECT(struct bench_kv, key);
}

void bench_free_object(void *obj)
{
	free(obj);
}
