/*
 * bench-hash.c - relhash-bench's choice of hash (--hash) and what one hash
 * costs (--hash-cost).
 *
 * --hash=NAME picks the function every backend hashes with: "default"
 * (relhash_hash(), which relhash's inline lookup inlines), "siphash"
 * (relhash_siphash(), a call) or "replaced" (the construction the default
 * replaced, inlined: for measuring the default's cost only).  The relhash
 * backends pass it as their params.hashfn; the peers, which all take a
 * hash value, get it from bench_hash().
 *
 * --hash-cost[=SIZES] times each function on keys of each size (default
 * 8, 16 and 64 bytes), BENCH_HASH_COST_ITERS hashes per measurement, one
 * measurement per round, and prints the median of the rounds in ns of
 * the thread's CPU time per hash (so that time spent descheduled on a busy
 * machine does not count): "independent" hashes distinct keys one after another (throughput:
 * the CPU may overlap consecutive hashes), "chained" feeds each hash into
 * the next key's first word (latency, plus a store-to-load forwarding of
 * the key, the same for every function).  Under callgrind, each
 * function's inclusive instruction count divided by the calls printed is
 * the instructions per hash.
 */
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Hashes per measurement. */
#define BENCH_HASH_COST_ITERS (1u << 20)
/* Distinct keys the independent loop cycles through (16 KiB of 64-byte
 * keys: they stay in the L1 cache). */
#define BENCH_HASH_COST_KEYS 256u
#define BENCH_HASH_COST_MAX_LEN 4096u
#define BENCH_HASH_COST_MAX_SIZES 16u
/* relhash-bench takes at most 100 --rounds. */
#define BENCH_HASH_COST_MAX_ROUNDS 100u

enum bench_hash bench_hash_kind = BENCH_HASH_DEFAULT;

const char *bench_hash_name(enum bench_hash h)
{
	static const char *const names[] = {
		[BENCH_HASH_DEFAULT] = "default",
		[BENCH_HASH_SIPHASH] = "siphash",
		[BENCH_HASH_REPLACED] = "replaced",
	};
	return names[h];
}

/* What the peers' bench_hash() computes, as a call. */
uint64_t bench_hash_call(uint64_t key)
{
	if (bench_hash_kind == BENCH_HASH_SIPHASH)
		return relhash_siphash(&key, sizeof(key), BENCH_SEED);
	if (bench_hash_kind == BENCH_HASH_REPLACED)
		return bench_hash_replaced(&key, sizeof(key), BENCH_SEED);
	return relhash_hash(&key, sizeof(key), BENCH_SEED);
}

/* ---------------------------------------------------------------------- */
/* --hash-cost                                                            */

static unsigned char *cost_keys; /* BENCH_HASH_COST_KEYS keys of max_len */
static size_t cost_stride;

/* Inlined into each loop below: the default hash as relhash's inline
 * lookup computes it, or a call of an exported function. */
static BENCH_ALWAYS_INLINE uint64_t cost_hash(int which, const void *key,
                                              size_t len)
{
	switch (which) {
	case 0:
#ifndef RELHASH_NO_INLINE
		return relhash__hash_inline(key, len, BENCH_SEED);
#endif
	case 1:
		return relhash_hash(key, len, BENCH_SEED);
	default:
		return relhash_siphash(key, len, BENCH_SEED);
	}
}

/* For people, and for CSV. */
static const char *const cost_names[] = { "default, inline",
                                          "default, relhash_hash()",
                                          "siphash, relhash_siphash()" };
static const char *const cost_ids[] = { "default-inline", "default-call",
                                        "siphash-call" };
#define COST_NFN 3

static BENCH_ALWAYS_INLINE double cost_independent(int which, size_t len)
{
	uint64_t i, sum = 0, t0 = bench_thread_cpu_ns();

	for (i = 0; i < BENCH_HASH_COST_ITERS; i++)
		sum += cost_hash(which, cost_keys + (i % BENCH_HASH_COST_KEYS) *
		                                    cost_stride, len);
	__asm__ volatile("" : : "r"(sum));
	return (double)(bench_thread_cpu_ns() - t0) / BENCH_HASH_COST_ITERS;
}

static BENCH_ALWAYS_INLINE double cost_chained(int which, size_t len)
{
	unsigned char *key = cost_keys;
	uint64_t i, h = 0, t0 = bench_thread_cpu_ns();

	for (i = 0; i < BENCH_HASH_COST_ITERS; i++) {
		memcpy(key, &h, sizeof(h));
		h = cost_hash(which, key, len);
	}
	__asm__ volatile("" : : "r"(h));
	return (double)(bench_thread_cpu_ns() - t0) / BENCH_HASH_COST_ITERS;
}

/* One measurement of function which on keys of len bytes. */
static void cost_measure(int which, size_t len, double *indep, double *chain)
{
	switch (which) {
	case 0:
		*indep = cost_independent(0, len);
		*chain = cost_chained(0, len);
		break;
	case 1:
		*indep = cost_independent(1, len);
		*chain = cost_chained(1, len);
		break;
	default:
		*indep = cost_independent(2, len);
		*chain = cost_chained(2, len);
		break;
	}
}

/* "8,16,64" into sizes[]; returns how many. */
static unsigned parse_sizes(const char *arg, size_t *sizes)
{
	unsigned n = 0;
	const char *p = arg;

	for (;;) {
		char *end;
		unsigned long v = strtoul(p, &end, 10);

		if (end == p || v < 1 || v > BENCH_HASH_COST_MAX_LEN ||
		    (*end && *end != ',') || n == BENCH_HASH_COST_MAX_SIZES)
			bench_die("--hash-cost: '%s' is not a list of up to %u key "
			          "sizes from 1 to %u bytes", arg,
			          BENCH_HASH_COST_MAX_SIZES, BENCH_HASH_COST_MAX_LEN);
		sizes[n++] = v;
		if (!*end)
			return n;
		p = end + 1;
	}
}

static void cost_print(const struct bench_config *cfg, size_t len, int which,
                       const double *indep, const double *chain)
{
	unsigned r = cfg->rounds;

	if (cfg->format == BENCH_CSV)
		printf("%zu,%s,%.3f,%.3f,%u\n", len, cost_ids[which],
		       bench_median(indep, r), bench_median(chain, r), r);
	else
		printf("%9zu  %-28s %11.2f %11.2f\n", len, cost_names[which],
		       bench_median(indep, r), bench_median(chain, r));
}

/* Random keys, each at the start of a 64-byte aligned slot. */
static void cost_fill_keys(const size_t *sizes, unsigned n)
{
	size_t max_len = 0, i;
	uint64_t rng = BENCH_SEED;

	for (i = 0; i < n; i++)
		if (sizes[i] > max_len)
			max_len = sizes[i];
	cost_stride = (max_len + 63) & ~(size_t)63;
	cost_keys = bench_xcalloc(BENCH_HASH_COST_KEYS, cost_stride);
	for (i = 0; i < BENCH_HASH_COST_KEYS * cost_stride; i++)
		cost_keys[i] = (unsigned char)bench_rand(&rng);
}

/* One key size: a warm-up of each function, then the rounds, each
 * function once per round (a slow drift of a busy machine spreads over
 * all of them). */
static void cost_size(const struct bench_config *cfg, size_t len)
{
	double indep[COST_NFN][BENCH_HASH_COST_MAX_ROUNDS];
	double chain[COST_NFN][BENCH_HASH_COST_MAX_ROUNDS];
	unsigned r;
	int which;

	for (which = 0; which < COST_NFN; which++)
		cost_measure(which, len, &indep[which][0], &chain[which][0]);
	for (r = 0; r < cfg->rounds; r++)
		for (which = 0; which < COST_NFN; which++)
			cost_measure(which, len, &indep[which][r],
			             &chain[which][r]);
	for (which = 0; which < COST_NFN; which++)
		cost_print(cfg, len, which, indep[which], chain[which]);
}

int bench_hash_cost(const struct bench_config *cfg)
{
	size_t sizes[BENCH_HASH_COST_MAX_SIZES];
	unsigned n = parse_sizes(cfg->hash_cost, sizes), i;
	/* Under callgrind: each function's calls per key size. */
	unsigned long long calls = 2ull * BENCH_HASH_COST_ITERS * (cfg->rounds + 1);

	cost_fill_keys(sizes, n);
	if (cfg->format == BENCH_CSV)
		printf("key_bytes,hash,independent_ns,chained_ns,rounds\n");
	else
		printf("relhash-bench %s --hash-cost: ns per hash, median of %u "
		       "rounds of %u hashes\n(each function is called %llu "
		       "times per key size, warm-up included)\n"
		       "%9s  %-28s %11s %11s\n", RELHASH_VERSION, cfg->rounds,
		       BENCH_HASH_COST_ITERS, calls, "key bytes", "hash",
		       "independent", "chained");
	for (i = 0; i < n; i++)
		cost_size(cfg, sizes[i]);
	free(cost_keys);
	return 0;
}
