/*
 * bench-output.c - relhash-bench's reports: text for people, CSV (one row
 * per backend, the same columns for every run, so that rows of many runs
 * can be concatenated).  Everything goes to stdout.
 */
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
	const char *text;   /* text report and error messages */
	const char *detail; /* what bench_failures.key holds */
} failure_names[BENCH_NFAIL] = {
	[BENCH_FAIL_STABLE_MISS] = {
		"a lookup missed a key that is never removed", "first key" },
	[BENCH_FAIL_FALSE_HIT] = {
		"a lookup found a key that was never inserted", "first key" },
	[BENCH_FAIL_CORRUPT] = {
		"a lookup returned an object with a wrong or poisoned value "
		"(freed too early?)", "first key" },
	[BENCH_FAIL_UPDATE] = {
		"an insert or remove disagreed with the model", "first key" },
	[BENCH_FAIL_COUNT] = {
		"the table's count differs from the model's",
		"first wrong count" },
	[BENCH_FAIL_ITER_MISSING] = {
		"iteration missed a present key", "first key" },
	[BENCH_FAIL_ITER_DUPLICATE] = {
		"iteration returned a key more than once", "first key" },
	[BENCH_FAIL_ITER_UNEXPECTED] = {
		"iteration returned a key that is not in the table",
		"first key" },
};

const char *bench_failure_text(enum bench_failure kind)
{
	return failure_names[kind].text;
}

const char *bench_failure_detail(enum bench_failure kind)
{
	return failure_names[kind].detail;
}

static uint64_t total_failures(const struct bench_result *r)
{
	uint64_t n = 0;
	unsigned k;

	for (k = 0; k < BENCH_NFAIL; k++)
		n += r->failures.count[k];
	return n;
}

bool bench_result_failed(const struct bench_result *r)
{
	return total_failures(r) != 0;
}

static const char *status(const struct bench_result *r)
{
	if (r->skipped)
		return "skipped";
	return bench_result_failed(r) ? "FAILED" : "ok";
}

/* Median Mops/s of a backend's rounds. */
static double median_mops(const struct bench_result *r)
{
	return bench_median(r->mops, r->rounds_done);
}

static double range(const double *v, unsigned n, bool want_max)
{
	double x = n ? v[0] : 0;
	unsigned i;

	for (i = 1; i < n; i++)
		if (want_max ? v[i] > x : v[i] < x)
			x = v[i];
	return x;
}

static double median_cpu_mops(const struct bench_result *r)
{
	return bench_median(r->cpu_mops, r->rounds_done);
}

static double median_cpu_share(const struct bench_result *r)
{
	return bench_median(r->cpu_share, r->rounds_done);
}

/*
 * Throughput relative to the first backend (res[0]), or 0 when it is not
 * known: the median over rounds of the ratio within each round.  The
 * backends of a round run one after the other, seconds apart, so pairing
 * them cancels most of a shared machine's slow drifts, which a ratio of
 * medians would not.
 */
static double ratio_of(const double *(*per_round)(const struct bench_result *),
                       const struct bench_result *res,
                       const struct bench_result *r)
{
	const double *base = per_round(&res[0]), *v = per_round(r);
	unsigned i, n = 0, rounds = r->rounds_done;
	double *ratios, m;

	if (r->skipped || res[0].skipped)
		return 0;
	if (res[0].rounds_done < rounds)
		rounds = res[0].rounds_done;
	ratios = bench_xcalloc(rounds ? rounds : 1, sizeof(*ratios));
	for (i = 0; i < rounds; i++)
		if (base[i] > 0)
			ratios[n++] = v[i] / base[i];
	m = bench_median(ratios, n);
	free(ratios);
	return m;
}

static const double *mops_of(const struct bench_result *r)
{
	return r->mops;
}

static const double *cpu_mops_of(const struct bench_result *r)
{
	return r->cpu_mops;
}

static double ratio(const struct bench_result *res, const struct bench_result *r)
{
	return ratio_of(mops_of, res, r);
}

static double cpu_ratio(const struct bench_result *res,
                        const struct bench_result *r)
{
	return ratio_of(cpu_mops_of, res, r);
}

static const double *fill_s_of(const struct bench_result *r)
{
	return r->fill_s;
}

/* --resize=grow: fill time relative to the first backend's, paired. */
static double fill_ratio(const struct bench_result *res,
                         const struct bench_result *r)
{
	return ratio_of(fill_s_of, res, r);
}

/* The slowest settling of the rounds, or < 0 if one never settled. */
static double worst_settle_s(const struct bench_result *r)
{
	unsigned i;
	double worst = 0;

	for (i = 0; i < r->rounds_done; i++) {
		if (r->settle_s[i] < 0)
			return -1;
		if (r->settle_s[i] > worst)
			worst = r->settle_s[i];
	}
	return worst;
}

/* Below this share of CPU time the machine was busy with other work. */
#define BUSY_CPU_SHARE 0.9

static const double quantiles[] = { 0.5, 0.99, 0.999 };
#define NQUANTILES (sizeof(quantiles) / sizeof(quantiles[0]))

static double latency(const struct bench_hist *h, unsigned q)
{
	return bench_latency_ns(q < NQUANTILES ? bench_hist_quantile(h, quantiles[q])
	                                       : h->max);
}

/* Resizing as the resizer thread sees it: the two sizes, for the header. */
static void describe_resize(const struct bench_config *cfg, char *buf,
                            size_t size)
{
	switch (cfg->resize) {
	case BENCH_RESIZE_TOGGLE:
		snprintf(buf, size, "toggle, %zu <-> %zu buckets",
		         cfg->nbuckets / 2, cfg->nbuckets * 2);
		break;
	case BENCH_RESIZE_WIDE:
		snprintf(buf, size, "wide, %u <-> %u buckets", BENCH_WIDE_MIN,
		         BENCH_WIDE_MAX);
		break;
	case BENCH_RESIZE_AUTO:
		snprintf(buf, size, "auto, by each table");
		break;
	case BENCH_RESIZE_GROW:
		snprintf(buf, size, "grow: filled by every thread%s, then "
		         "lookups; automatic resizing", cfg->prealloc ?
		         " (objects allocated beforehand)" : "");
		break;
	case BENCH_RESIZE_NONE:
		snprintf(buf, size, "none");
		break;
	}
}

/* ---------------------------------------------------------------------- */
/* Text                                                                   */

static void text_epoch_short(const struct bench_epoch_result *e, unsigned n)
{
	unsigned i;

	printf("read_lock + read_unlock:");
	for (i = 0; i < n; i++) {
		printf("%s %s %.2f ns inline", i ? ";" : "", e[i].name,
		       e[i].lock_unlock_inline_ns);
		if (e[i].lock_unlock_call_ns >= 0)
			printf(", %.2f ns call", e[i].lock_unlock_call_ns);
	}
	printf("\n");
}

/* --resize=grow: the fill, and how soon the load came down after it. */
static void text_growth(const struct bench_result *res, unsigned n)
{
	unsigned i;

	printf("\nfill from %u buckets (seconds: median, min..max; ratio: "
	       "median of the ratios to %s within each round); settled: "
	       "load <= %u %% after the last insert, slowest round\n",
	       BENCH_GROW_INITIAL, res[0].backend->name, BENCH_SETTLED_LOAD_PCT);
	printf("%-14s %9s %19s %7s %11s %12s\n", "backend", "fill s",
	       "min..max", "ratio", "settled s", "buckets");
	for (i = 0; i < n; i++) {
		const struct bench_result *r = &res[i];
		double settle = worst_settle_s(r);

		if (r->skipped)
			continue;
		printf("%-14s %9.3f %9.3f..%-9.3f %6.2fx", r->backend->name,
		       bench_median(r->fill_s, r->rounds_done),
		       range(r->fill_s, r->rounds_done, false),
		       range(r->fill_s, r->rounds_done, true), fill_ratio(res, r));
		if (!r->backend->ops->nbuckets)
			printf(" %11s %12s\n", "-", "-");
		else if (settle < 0)
			printf(" %11s %12zu\n", "> 5", r->final_buckets);
		else
			printf(" %11.3f %12zu\n", settle, r->final_buckets);
	}
}

/* How often the engine's grace periods came and how many callbacks each
 * carried: the figures batching is about (doc/DESIGN.md, section 4). */
static double grace_periods_per_s(const struct bench_engine_stats *e)
{
	return e->seconds > 0 ? (double)e->grace_periods / e->seconds : 0;
}

static double callbacks_per_grace_period(const struct bench_engine_stats *e)
{
	return e->grace_periods ? (double)e->callbacks /
	                          (double)e->grace_periods : 0;
}

static void print_engine_stats(const struct bench_result *r)
{
	printf("%s's grace-period engine during the runs: %llu grace periods "
	       "(%.0f/s), %llu callbacks run (%.1f per grace period)\n",
	       r->backend->name, (unsigned long long)r->engine.grace_periods,
	       grace_periods_per_s(&r->engine),
	       (unsigned long long)r->engine.callbacks,
	       callbacks_per_grace_period(&r->engine));
}

static void text_header(const struct bench_config *cfg)
{
	char resize[128];

	describe_resize(cfg, resize, sizeof(resize));
	printf("relhash-bench %s: %u threads, %llu keys (%llu never updated), "
	       "%u %% updates, %u %% of lookups hit the key set\n"
	       "tables start at %zu buckets; resize: %s; hash: %s; %g s in %u "
	       "round%s\n\n",
	       RELHASH_VERSION, cfg->threads, (unsigned long long)cfg->keys,
	       (unsigned long long)cfg->stable, cfg->update_pct, cfg->hit_pct,
	       cfg->nbuckets, resize, bench_hash_name(cfg->hash), cfg->seconds,
	       cfg->rounds, cfg->rounds == 1 ? "" : "s");
}

static void text_throughput(const struct bench_result *res, unsigned n)
{
	bool busy = false;
	unsigned i;

	printf("throughput, Mops/s (median of rounds; ratio: median of the "
	       "ratios to %s within each round)\n", res[0].backend->name);
	printf("%-14s %9s %9s %9s %9s %19s %7s %7s %9s\n", "backend", "all",
	       "lookups", "inserts", "removes", "all: min..max", "ratio",
	       "on CPU", "cpu ratio");
	for (i = 0; i < n; i++) {
		const struct bench_result *r = &res[i];

		if (r->skipped) {
			printf("%-14s skipped: %s\n", r->backend->name, r->skipped);
			continue;
		}
		if (median_cpu_share(r) < BUSY_CPU_SHARE)
			busy = true;
		printf("%-14s %9.2f %9.2f %9.3f %9.3f %9.2f..%-9.2f %6.2fx "
		       "%6.0f%% %8.2fx%s\n",
		       r->backend->name, median_mops(r),
		       bench_median(r->lookup_mops, r->rounds_done),
		       bench_median(r->insert_mops, r->rounds_done),
		       bench_median(r->remove_mops, r->rounds_done),
		       range(r->mops, r->rounds_done, false),
		       range(r->mops, r->rounds_done, true), ratio(res, r),
		       100 * median_cpu_share(r), cpu_ratio(res, r),
		       bench_result_failed(r) ? "  FAILED" : "");
	}
	if (busy)
		printf("The workers were on a CPU less than %.0f %% of the time: "
		       "the machine is busy.\n\"cpu ratio\" compares throughput "
		       "per CPU-second the workers got.\n",
		       100 * BUSY_CPU_SHARE);
}

static void text_latency(const struct bench_result *res, unsigned n)
{
	unsigned i, q, phase;

	printf("\nlookup latency, ns (1 in %u lookups timed)\n",
	       BENCH_SAMPLE_EVERY);
	printf("%-14s %-14s %9s %9s %9s %11s %11s\n", "backend", "while",
	       "p50", "p99", "p99.9", "max", "samples");
	for (i = 0; i < n; i++) {
		const char *name = res[i].backend->name;

		for (phase = 0; phase < 2; phase++) {
			const struct bench_hist *h = &res[i].latency[phase];

			if (res[i].skipped || h->n == 0)
				continue;
			printf("%-14s %-14s", name,
			       phase ? "resizing" : "not resizing");
			name = "";
			for (q = 0; q <= NQUANTILES; q++)
				printf(q < NQUANTILES ? " %9.0f" : " %11.0f",
				       latency(h, q));
			printf(" %11llu\n", (unsigned long long)h->n);
		}
	}
}

static void text_memory(const struct bench_result *res, unsigned n)
{
	unsigned i;

	printf("\nresizing and memory\n");
	printf("%-14s %9s %9s %12s %12s %10s %10s\n", "backend", "B/object",
	       "heap B/key", "resize calls", "size changes", "GPs waited",
	       "overrun s");
	for (i = 0; i < n; i++) {
		const struct bench_result *r = &res[i];

		if (r->skipped)
			continue;
		printf("%-14s %9zu %9.1f %12llu", r->backend->name,
		       r->backend->ops->object_size, r->bytes_per_key,
		       (unsigned long long)r->resize_calls);
		if (r->backend->ops->table_stats)
			printf(" %12llu %10llu",
			       (unsigned long long)r->table.resizes,
			       (unsigned long long)r->table.grace_periods);
		else
			printf(" %12s %10s", "-", "-");
		printf(" %10.2f\n", r->resize_overrun);
	}
	for (i = 0; i < n; i++)
		if (!res[i].skipped && res[i].backend->ops->engine_stats) {
			print_engine_stats(&res[i]);
			break; /* the engine is shared by relhash's backends */
		}
}

static void text_verification(const struct bench_result *res, unsigned n)
{
	unsigned i, k;

	printf("\nverification\n");
	for (i = 0; i < n; i++) {
		const struct bench_result *r = &res[i];

		if (r->skipped)
			continue;
		if (!bench_result_failed(r)) {
			printf("%-14s passed: %llu lookups of never-removed keys "
			       "all hit, %llu of never-inserted keys all missed; "
			       "count %llu = model; iteration returned each key "
			       "once\n", r->backend->name,
			       (unsigned long long)r->stable_lookups,
			       (unsigned long long)r->absent_lookups,
			       (unsigned long long)r->final_count);
			continue;
		}
		printf("%-14s FAILED\n", r->backend->name);
		for (k = 0; k < BENCH_NFAIL; k++)
			if (r->failures.count[k])
				printf("  %s: %llu times, %s %llu\n",
				       bench_failure_text(k),
				       (unsigned long long)r->failures.count[k],
				       bench_failure_detail(k),
				       (unsigned long long)r->failures.key[k]);
		if (r->failures.count[BENCH_FAIL_UPDATE])
			printf("  first failed update returned %s\n",
			       strerror(-r->failures.update_err));
	}
	printf("\n");
}

/*
 * The machine's limit (bench-limit.c) and each backend's lookups a thread
 * against it, both per CPU-second: the ceiling is half the probe's loads,
 * a lookup needing at least two dependent misses.  A backend's share is
 * the median over rounds of its lookups over the ceiling probed just
 * after that round.
 */
static double limit_share(const struct bench_config *cfg,
                          const struct bench_result *r,
                          const struct bench_limit *limit)
{
	double shares[limit->probes];
	unsigned i, n = 0;

	for (i = 0; i < r->rounds_done && i < limit->probes; i++) {
		if (r->cpu_share[i] <= 0 || limit->loads_per_s[i] <= 0)
			continue;
		shares[n++] = r->lookup_mops[i] * 1e6 / cfg->threads /
		              r->cpu_share[i] / (limit->loads_per_s[i] / 2);
	}
	return n ? bench_median(shares, n) : 0;
}

static void text_limit(const struct bench_config *cfg,
                       const struct bench_result *res, unsigned n,
                       const struct bench_limit *limit)
{
	double loads = bench_median(limit->loads_per_s, limit->probes);
	double lo = loads, hi = loads;
	unsigned i;

	for (i = 0; i < limit->probes; i++) {
		lo = limit->loads_per_s[i] < lo ? limit->loads_per_s[i] : lo;
		hi = limit->loads_per_s[i] > hi ? limit->loads_per_s[i] : hi;
	}
	printf("\nmachine limit: one thread, independent random cache-line "
	       "loads over %.1f MiB (the\ntable's size), probed after each "
	       "round: %.1f M loads/s (median; %.1f..%.1f);\na lookup needing "
	       "two dependent misses: at most %.1f M/s a thread (both per\n"
	       "CPU-second; share: median over rounds of each round's lookups "
	       "over its ceiling)\n", (double)limit->bytes / 1048576,
	       loads / 1e6, lo / 1e6, hi / 1e6, loads / 2e6);
	printf("%-14s %22s %11s\n", "backend", "lookups M/s a thread",
	       "of ceiling");
	for (i = 0; i < n; i++) {
		const struct bench_result *r = &res[i];
		double share = median_cpu_share(r), per_thread;

		if (r->skipped || share <= 0)
			continue;
		per_thread = bench_median(r->lookup_mops, r->rounds_done) * 1e6 /
		             cfg->threads / share;
		printf("%-14s %22.2f %10.0f%%\n", r->backend->name,
		       per_thread / 1e6, 100 * limit_share(cfg, r, limit));
	}
}

/* What each backend is, with the versions of the peers. */
static void text_legend(const struct bench_result *res, unsigned n)
{
	unsigned i;

	printf("\nbackends\n");
	for (i = 0; i < n; i++)
		printf("%-14s %s\n", res[i].backend->name,
		       res[i].backend->description);
}

static void text_results(const struct bench_config *cfg,
                         const struct bench_result *res, unsigned n,
                         const struct bench_epoch_result *epoch,
                         unsigned nepoch, const struct bench_limit *limit)
{
	text_header(cfg);
	text_throughput(res, n);
	text_latency(res, n);
	if (cfg->resize == BENCH_RESIZE_GROW)
		text_growth(res, n);
	text_memory(res, n);
	text_verification(res, n);
	text_epoch_short(epoch, nepoch);
	if (limit && limit->probes > 0)
		text_limit(cfg, res, n, limit);
	text_legend(res, n);
}

/* ---------------------------------------------------------------------- */
/* CSV                                                                    */

/* The growth columns (empty unless --resize=grow). */
static void csv_growth(const struct bench_config *cfg,
                       const struct bench_result *res,
                       const struct bench_result *r)
{
	if (cfg->resize != BENCH_RESIZE_GROW) {
		printf(",,,,");
		return;
	}
	printf("%.4f,%.4f,%.4g,", bench_median(r->fill_s, r->rounds_done),
	       range(r->fill_s, r->rounds_done, true), fill_ratio(res, r));
	if (r->backend->ops->nbuckets)
		printf("%.4f,%zu", worst_settle_s(r), r->final_buckets);
	else
		printf(",");
}

/* The engine's columns (empty for a backend without one) and the line's
 * end. */
static void csv_engine(const struct bench_result *r)
{
	if (r->backend->ops->engine_stats)
		printf(",%.1f,%.1f\n", grace_periods_per_s(&r->engine),
		       callbacks_per_grace_period(&r->engine));
	else
		printf(",,\n");
}

static void csv_results(const struct bench_config *cfg,
                        const struct bench_result *res, unsigned n)
{
	unsigned i, q, phase;

	printf("threads,keys,update_pct,hit_pct,resize,seconds,rounds,hash,backend,"
	       "status,mops,mops_min,mops_max,lookup_mops,insert_mops,"
	       "remove_mops,ratio,cpu_share,cpu_mops,cpu_ratio,p50_ns,p99_ns,p999_ns,max_ns,"
	       "resizing_p50_ns,resizing_p99_ns,resizing_p999_ns,"
	       "resizing_max_ns,resize_calls,size_changes,grace_periods,"
	       "bytes_per_object,heap_bytes_per_key,failures,fill_s,fill_s_max,"
	       "fill_ratio,settle_s_max,final_buckets,engine_grace_periods_per_s,"
	       "engine_callbacks_per_grace_period\n");
	for (i = 0; i < n; i++) {
		const struct bench_result *r = &res[i];

		printf("%u,%llu,%u,%u,%s,%g,%u,%s,%s,%s,", cfg->threads,
		       (unsigned long long)cfg->keys, cfg->update_pct,
		       cfg->hit_pct, bench_resize_name(cfg->resize),
		       cfg->seconds, cfg->rounds, bench_hash_name(cfg->hash),
		       r->backend->name, status(r));
		if (r->skipped) {
			printf(",,,,,,,,,,,,,,,,,,,,,,,,,,,,,,\n");
			continue;
		}
		/* Ratios with 4 significant digits: a peer 1000 times slower
		 * is not 0.001x give or take 50 %. */
		printf("%.3f,%.3f,%.3f,%.3f,%.4f,%.4f,%.4g,%.3f,%.3f,%.4g",
		       median_mops(r), range(r->mops, r->rounds_done, false),
		       range(r->mops, r->rounds_done, true),
		       bench_median(r->lookup_mops, r->rounds_done),
		       bench_median(r->insert_mops, r->rounds_done),
		       bench_median(r->remove_mops, r->rounds_done),
		       ratio(res, r), median_cpu_share(r), median_cpu_mops(r),
		       cpu_ratio(res, r));
		for (phase = 0; phase < 2; phase++)
			for (q = 0; q <= NQUANTILES; q++)
				if (r->latency[phase].n)
					printf(",%.0f", latency(&r->latency[phase], q));
				else
					printf(",");
		printf(",%llu,", (unsigned long long)r->resize_calls);
		if (r->backend->ops->table_stats)
			printf("%llu,%llu", (unsigned long long)r->table.resizes,
			       (unsigned long long)r->table.grace_periods);
		else
			printf(",");
		printf(",%zu,%.1f,%llu,", r->backend->ops->object_size,
		       r->bytes_per_key, (unsigned long long)total_failures(r));
		csv_growth(cfg, res, r);
		csv_engine(r);
	}
}

void bench_print_results(const struct bench_config *cfg,
                         const struct bench_result *res, unsigned nres,
                         const struct bench_epoch_result *epoch,
                         unsigned nepoch, const struct bench_limit *limit)
{
	switch (cfg->format) {
	case BENCH_TEXT:
		text_results(cfg, res, nres, epoch, nepoch, limit);
		break;
	case BENCH_CSV:
		/* One flat table; the read-side cost is in --epoch's. */
		csv_results(cfg, res, nres);
		break;
	}
}

/* ---------------------------------------------------------------------- */
/* --epoch                                                                */

static void text_epoch_row(const char *label, const struct bench_epoch_result *e,
                           unsigned n, double (*value)(const struct bench_epoch_result *),
                           const char *fmt)
{
	unsigned i;

	printf("%-34s", label);
	for (i = 0; i < n; i++) {
		double v = value(&e[i]);

		if (v < 0)
			printf(" %14s", "-");
		else
			printf(fmt, v);
	}
	printf("\n");
}

static double ep_inline(const struct bench_epoch_result *e)
{
	return e->lock_unlock_inline_ns;
}

static double ep_call(const struct bench_epoch_result *e)
{
	return e->lock_unlock_call_ns;
}

static double ep_sync_p50(const struct bench_epoch_result *e)
{
	return bench_hist_quantile(&e->synchronize_ns, 0.5) / 1e3;
}

static double ep_sync_p99(const struct bench_epoch_result *e)
{
	return bench_hist_quantile(&e->synchronize_ns, 0.99) / 1e3;
}

static double ep_sync_max(const struct bench_epoch_result *e)
{
	return e->synchronize_ns.max / 1e3;
}

static double ep_sync_calls(const struct bench_epoch_result *e)
{
	return (double)e->synchronize_ns.n;
}

static double ep_call_rate(const struct bench_epoch_result *e)
{
	return e->call_rate / 1e6;
}

void bench_print_epoch(const struct bench_config *cfg,
                       const struct bench_epoch_result *e, unsigned n)
{
	unsigned i;

	switch (cfg->format) {
	case BENCH_TEXT:
		printf("relhash-bench %s --epoch: grace periods\n"
		       "synchronize and callbacks: with %u threads in tight "
		       "read_lock/read_unlock loops, %llu ns inside each "
		       "section\n\n", RELHASH_VERSION, cfg->threads,
		       (unsigned long long)cfg->section_ns);
		printf("%-34s", "");
		for (i = 0; i < n; i++)
			printf(" %14s", e[i].name);
		printf("\n");
		text_epoch_row("read_lock+read_unlock, ns: inline", e, n,
		               ep_inline, " %14.2f");
		text_epoch_row("                           call", e, n,
		               ep_call, " %14.2f");
		text_epoch_row("synchronize, us: p50", e, n, ep_sync_p50,
		               " %14.1f");
		text_epoch_row("                 p99", e, n, ep_sync_p99,
		               " %14.1f");
		text_epoch_row("                 max", e, n, ep_sync_max,
		               " %14.1f");
		text_epoch_row("                 calls", e, n, ep_sync_calls,
		               " %14.0f");
		text_epoch_row("callbacks + barrier, M/s", e, n, ep_call_rate,
		               " %14.3f");
		for (i = 0; i < n; i++)
			if (e[i].calls != e[i].calls_queued)
				printf("FAILED: %s: %llu of %llu callbacks had run "
				       "when the barrier returned\n", e[i].name,
				       (unsigned long long)e[i].calls,
				       (unsigned long long)e[i].calls_queued);
		break;
	case BENCH_CSV:
		printf("flavor,readers,lock_unlock_inline_ns,lock_unlock_call_ns,"
		       "sync_p50_us,sync_p99_us,sync_max_us,sync_calls,"
		       "callbacks_per_s,callbacks_ok,section_ns\n");
		for (i = 0; i < n; i++) {
			printf("%s,%u,%.3f,", e[i].name, e[i].readers,
			       e[i].lock_unlock_inline_ns);
			if (e[i].lock_unlock_call_ns >= 0)
				printf("%.3f", e[i].lock_unlock_call_ns);
			printf(",%.1f,%.1f,%.1f,%llu,%.0f,%s,%llu\n",
			       ep_sync_p50(&e[i]), ep_sync_p99(&e[i]),
			       ep_sync_max(&e[i]),
			       (unsigned long long)e[i].synchronize_ns.n,
			       e[i].call_rate,
			       e[i].calls == e[i].calls_queued ? "yes" : "no",
			       (unsigned long long)e[i].section_ns);
		}
		break;
	}
}
