/*
 * relhash-bench - run a concurrent workload on a relhash table and on its
 * peers, report throughput, latency and resizing, and verify that nothing
 * was lost or invented along the way.
 *
 * A run of one backend: start the workers (and the resizer) on a populated
 * table, let them go for their share of --seconds, stop them, and verify
 * the table against the model.  Within a round every backend runs once, in
 * turn, so that the slow drifts of a noisy machine spread over all of them;
 * reports use the median of the rounds.  Backends with the same table code
 * run one after the other on the same table (see struct table_slot).
 *
 * The model is exact because keys are partitioned: keys [0, stable) are
 * never updated and must always be found; every other key is updated by
 * exactly one worker, which keeps present[key] up to date; keys >= keys are
 * never inserted and must never be found.
 */
#include "bench.h"

#include <errno.h>
#include <getopt.h>
#ifdef HAVE_MALLINFO2
#include <malloc.h>
#endif
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* How long the progress display sleeps between updates. */
#define PROGRESS_NS 250000000u
/* Waiting for the resizer after the deadline: how often to look, and
 * after how long to tell the user. */
#define RESIZER_POLL_NS 10000000u
#define RESIZER_NOTICE_NS 3000000000u
/* The shortest slot that still measures something. */
#define MIN_SLOT_SECONDS 0.1

static const char usage[] =
	"Usage: relhash-bench [OPTION]...\n"
	"Run a concurrent workload on a relhash table, report throughput and\n"
	"latency, and verify the table's contents at the end (exit status 1 if\n"
	"anything was wrong, 2 on usage or setup errors).  Lookups use the\n"
	"inline fast path (relhash_lookup_fast); the \"relhash-call\" line does\n"
	"the same through the exported functions.  Removed objects are freed by\n"
	"the removing thread (relhash_defer_local); \"relhash-defer\", run only\n"
	"when --backends names it, frees them on the callback thread instead\n"
	"(relhash_defer).\n"
	"\n"
	"  --threads=N       worker threads (default: one per online CPU)\n"
	"  --keys=N          keys in the set (default 1048576)\n"
	"  --update-pct=P    percent of operations that insert or remove\n"
	"                    (default 10; the rest are lookups).  With updates,\n"
	"                    half of the keys are never updated, and lookups\n"
	"                    of those must always succeed\n"
	"  --hit-pct=P       percent of lookups for keys of the set; the rest look\n"
	"                    for keys never inserted (default 90)\n"
	"  --resize=MODE     none; toggle (default: a thread resizes between half\n"
	"                    and double the initial size, continuously); wide\n"
	"                    (between 4 and 65536 buckets); auto (the tables'\n"
	"                    automatic resizing, no resizer thread); grow (each\n"
	"                    round, a fresh table of 8 buckets with automatic\n"
	"                    resizing: the threads insert every key, timed, then\n"
	"                    look keys up; implies --update-pct=0)\n"
	"  --prealloc        with --resize=grow: each thread allocates the\n"
	"                    objects of its keys before the fill's clock starts,\n"
	"                    so that the fill times the tables' own inserts\n"
	"                    (tables that copy keys and values into nodes of\n"
	"                    their own still allocate those, timed)\n"
	"  --seconds=S       measured time of the whole run (default 10), split\n"
	"                    evenly over backends and rounds\n"
	"  --rounds=N        rounds; each backend runs once per round, reports\n"
	"                    give the median (default 3)\n"
	"  --compare         run the peers too (the default): liburcu's\n"
	"                    rculfhash (QSBR and memb flavors, when built with\n"
	"                    liburcu), a chained table behind a pthread_rwlock,\n"
	"                    and the same table unsynchronized (no resizes;\n"
	"                    updates with one thread only); and those of ck_ht,\n"
	"                    libcuckoo, TBB, libcds and DPDK's rte_hash this\n"
	"                    build has (the report's legend names them)\n"
	"  --backends=LIST   run only these backends, in this order (names\n"
	"                    separated by commas, as the reports print them,\n"
	"                    e.g. relhash,unsync, or relhash,relhash-call for\n"
	"                    relhash alone); ratios are to the first\n"
	"  --bulk=N          also run relhash-bulk: lookups in groups of N keys\n"
	"                    (1 to 256), one relhash_lookup_bulk_fast() call\n"
	"                    and one read-side section per group (default 16\n"
	"                    when --backends names it); and dpdk-bulk, when\n"
	"                    built, in groups of up to 64\n"
	"  --epoch           grace-period micro-benchmarks instead: read_lock +\n"
	"                    read_unlock, synchronize latency and callback\n"
	"                    throughput with --threads busy readers\n"
	"  --section-ns=N    --epoch: readers stay about N ns inside each\n"
	"                    read-side section (default 0: empty sections)\n"
	"  --hash=NAME       the hash every backend uses: default (relhash_hash(),\n"
	"                    inline), siphash (relhash_siphash(): relhash's\n"
	"                    params.hashfn, and the peers' hash) or replaced\n"
	"                    (the construction the default replaced, which\n"
	"                    anyone can flood: for measuring the default's cost)\n"
	"  --hash-cost[=SIZES]  ns per hash instead, for keys of these sizes in\n"
	"                    bytes (default 8,16,64): the default inline, as\n"
	"                    relhash_hash() and relhash_siphash(); --rounds rounds\n"
	"  --format=F        text (default) or csv\n"
	"  -h, --help        this text\n"
	"  --version         print relhash's version\n"
	"\n"
	"Every table starts with the smallest power-of-two number of buckets at\n"
	"which the keys fill at most 75 % (grow: 8), and hashes with\n"
	"relhash_hash() (--hash).\n";

const char *bench_resize_name(enum bench_resize r)
{
	static const char *const names[] = {
		[BENCH_RESIZE_NONE] = "none",
		[BENCH_RESIZE_TOGGLE] = "toggle",
		[BENCH_RESIZE_WIDE] = "wide",
		[BENCH_RESIZE_AUTO] = "auto",
		[BENCH_RESIZE_GROW] = "grow",
	};
	return names[r];
}

/* ---------------------------------------------------------------------- */
/* Options                                                                */

static uint64_t parse_uint(const char *opt, const char *arg, uint64_t min,
                           uint64_t max)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(arg, &end, 10);
	if (errno || end == arg || *end || arg[0] == '-' || v < min || v > max)
		bench_die("--%s: '%s' is not a number from %llu to %llu", opt,
		          arg, (unsigned long long)min, (unsigned long long)max);
	return v;
}

static double parse_seconds(const char *arg)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(arg, &end);
	if (errno || end == arg || *end || !(v > 0 && v <= 86400))
		bench_die("--seconds: '%s' is not a duration in seconds", arg);
	return v;
}

static unsigned parse_choice(const char *opt, const char *arg,
                             const char *const *choices, unsigned n)
{
	unsigned i;

	for (i = 0; i < n; i++)
		if (strcmp(arg, choices[i]) == 0)
			return i;
	bench_die("--%s: unknown value '%s' (see --help)", opt, arg);
}

enum { OPT_THREADS = 256, OPT_KEYS, OPT_UPDATE_PCT, OPT_HIT_PCT, OPT_RESIZE,
       OPT_SECONDS, OPT_ROUNDS, OPT_FORMAT, OPT_COMPARE, OPT_BACKENDS,
       OPT_BULK, OPT_EPOCH, OPT_SECTION_NS, OPT_VERSION, OPT_HASH,
       OPT_HASH_COST, OPT_PREALLOC };

static void default_config(struct bench_config *cfg)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

	*cfg = (struct bench_config){
		.threads = ncpu > 0 ? (unsigned)ncpu : 1,
		.keys = 1u << 20,
		.update_pct = 10,
		.hit_pct = 90,
		.seconds = 10,
		.rounds = 3,
		.resize = BENCH_RESIZE_TOGGLE,
		.format = BENCH_TEXT,
		.bulk = 16,
	};
}

/* One option from getopt_long() (c, with its argument arg) into cfg;
 * --epoch sets *epoch. */
static void apply_option(int c, char *arg, struct bench_config *cfg,
                         bool *epoch)
{
	static const char *const resizes[] = { "none", "toggle", "wide", "auto",
	                                       "grow" };
	static const char *const formats[] = { "text", "csv" };
	static const char *const hashes[] = { "default", "siphash", "replaced" };

	switch (c) {
	case OPT_THREADS:
		cfg->threads = parse_uint("threads", arg, 1, 1024);
		break;
	case OPT_KEYS:
		cfg->keys = parse_uint("keys", arg, 1, BENCH_MAX_KEYS);
		break;
	case OPT_UPDATE_PCT:
		cfg->update_pct = parse_uint("update-pct", arg, 0, 100);
		break;
	case OPT_HIT_PCT:
		cfg->hit_pct = parse_uint("hit-pct", arg, 0, 100);
		break;
	case OPT_RESIZE:
		cfg->resize = parse_choice("resize", arg, resizes, 5);
		break;
	case OPT_PREALLOC:
		cfg->prealloc = true;
		break;
	case OPT_SECONDS:
		cfg->seconds = parse_seconds(arg);
		break;
	case OPT_ROUNDS:
		cfg->rounds = parse_uint("rounds", arg, 1, 100);
		break;
	case OPT_FORMAT:
		cfg->format = parse_choice("format", arg, formats, 2);
		break;
	case OPT_COMPARE:
		/* The default (a first run shows what relhash is for: the
		 * comparison); accepted for scripts. */
		break;
	case OPT_BACKENDS:
		cfg->backends = arg;
		break;
	case OPT_BULK:
		cfg->bulk = parse_uint("bulk", arg, 1, BENCH_MAX_BULK);
		cfg->bulk_given = true;
		break;
	case OPT_EPOCH:
		*epoch = true;
		break;
	case OPT_SECTION_NS:
		cfg->section_ns = parse_uint("section-ns", arg, 0, 1000000000);
		break;
	case OPT_HASH:
		cfg->hash = parse_choice("hash", arg, hashes, BENCH_NHASH);
		break;
	case OPT_HASH_COST:
		cfg->hash_cost = arg ? arg : "8,16,64";
		break;
	case 'h':
		fputs(usage, stdout);
		exit(0);
	case OPT_VERSION:
		printf("relhash-bench (relhash) %s\n", RELHASH_VERSION);
		exit(0);
	default:
		fputs("Try 'relhash-bench --help'.\n", stderr);
		exit(2);
	}
}

/* What follows from the options: the stable keys, the initial table size,
 * the thresholds the workers compare with. */
static void derive_config(struct bench_config *cfg)
{
	/* grow: the fill is the update phase; lookups follow alone. */
	if (cfg->resize == BENCH_RESIZE_GROW)
		cfg->update_pct = 0;
	else if (cfg->prealloc)
		bench_die("--prealloc is for the fill of --resize=grow");
	cfg->stable = cfg->update_pct ? cfg->keys / 2 : cfg->keys;
	if (cfg->update_pct && cfg->keys - cfg->stable < cfg->threads)
		bench_die("with updates, --keys must be at least twice --threads "
		          "(every thread updates keys of its own)");
	cfg->nbuckets = BENCH_GROW_INITIAL;
	while (cfg->resize != BENCH_RESIZE_GROW &&
	       cfg->nbuckets * 3 < cfg->keys * 4)
		cfg->nbuckets *= 2;
	cfg->update_below = cfg->update_pct * 65536u / 100;
	cfg->hit_below = cfg->hit_pct * 65536u / 100;
	cfg->progress = isatty(STDERR_FILENO);
	bench_hash_kind = cfg->hash;
}

/* Parse the command line into cfg; returns true for --epoch. */
static bool parse_options(int argc, char **argv, struct bench_config *cfg)
{
	static const struct option options[] = {
		{ "threads", required_argument, NULL, OPT_THREADS },
		{ "keys", required_argument, NULL, OPT_KEYS },
		{ "update-pct", required_argument, NULL, OPT_UPDATE_PCT },
		{ "hit-pct", required_argument, NULL, OPT_HIT_PCT },
		{ "resize", required_argument, NULL, OPT_RESIZE },
		{ "prealloc", no_argument, NULL, OPT_PREALLOC },
		{ "seconds", required_argument, NULL, OPT_SECONDS },
		{ "rounds", required_argument, NULL, OPT_ROUNDS },
		{ "format", required_argument, NULL, OPT_FORMAT },
		{ "compare", no_argument, NULL, OPT_COMPARE },
		{ "backends", required_argument, NULL, OPT_BACKENDS },
		{ "bulk", required_argument, NULL, OPT_BULK },
		{ "epoch", no_argument, NULL, OPT_EPOCH },
		{ "section-ns", required_argument, NULL, OPT_SECTION_NS },
		{ "hash", required_argument, NULL, OPT_HASH },
		{ "hash-cost", optional_argument, NULL, OPT_HASH_COST },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, OPT_VERSION },
		{ NULL, 0, NULL, 0 },
	};
	bool epoch = false;
	int c;

	default_config(cfg);
	while ((c = getopt_long(argc, argv, "h", options, NULL)) != -1)
		apply_option(c, optarg, cfg, &epoch);
	if (optind < argc)
		bench_die("unexpected argument '%s' (see --help)", argv[optind]);
	derive_config(cfg);
	return epoch;
}

/* The live progress line on a terminal (stderr), replaced by each call
 * (an empty message clears it); nothing when stderr is not a terminal. */
__attribute__((format(printf, 2, 3)))
static void progress(const struct bench_config *cfg, const char *fmt, ...)
{
	va_list ap;

	if (!cfg->progress)
		return;
	fputs("\r\033[K", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fflush(stderr);
}

/* ---------------------------------------------------------------------- */
/* Workers and the resizer                                                */

void bench_fail(struct bench_failures *f, enum bench_failure kind,
                uint64_t key)
{
	if (f->count[kind]++ == 0)
		f->key[kind] = key;
}

static void thread_enter(const struct bench_table_ops *ops)
{
	if (ops->thread_enter)
		ops->thread_enter();
}

static void thread_leave(const struct bench_table_ops *ops)
{
	if (ops->thread_leave)
		ops->thread_leave();
}

void bench_worker_begin(struct bench_worker *w)
{
	thread_enter(w->run->backend->ops);
	pthread_barrier_wait(&w->run->start);
	w->cpu_ns = bench_thread_cpu_ns();
}

void bench_worker_end(struct bench_worker *w)
{
	w->cpu_ns = bench_thread_cpu_ns() - w->cpu_ns;
	thread_leave(w->run->backend->ops);
}

/* Insert or remove (whichever the model says is possible) one of the keys
 * this worker owns. */
void bench_update(struct bench_worker *w, uint32_t r)
{
	struct bench_run *run = w->run;
	const struct bench_table_ops *ops = run->backend->ops;
	uint64_t key = w->first_owned + bench_scale(r, w->owned);
	int err;

	if (run->present[key]) {
		err = ops->remove(run->table, key);
		if (!err) {
			run->present[key] = 0;
			w->removes++;
		}
	} else {
		err = ops->insert(run->table, key);
		if (!err) {
			run->present[key] = 1;
			w->inserts++;
		}
	}
	if (RELHASH_UNLIKELY(err)) {
		if (w->failures.count[BENCH_FAIL_UPDATE] == 0)
			w->failures.update_err = err;
		bench_fail(&w->failures, BENCH_FAIL_UPDATE, key);
	}
}

struct resizer {
	struct bench_run *run;
	pthread_t thread;
	size_t size;    /* the table's size: set by the last call */
	uint64_t calls; /* resize calls completed */
	int err;        /* the first failed call's error */
	size_t err_size;
	int done;       /* set when the thread is about to exit */
};

/* Resize back and forth between two sizes until told to stop, starting
 * with the one the table does not have.  A resize call cannot be
 * interrupted: the last one may end after the deadline (reported as the
 * resizer's overrun). */
static void *resizer_main(void *arg)
{
	struct resizer *rs = arg;
	struct bench_run *run = rs->run;
	const struct bench_config *cfg = run->cfg;
	const struct bench_table_ops *ops = run->backend->ops;
	size_t sizes[2];

	if (cfg->resize == BENCH_RESIZE_TOGGLE) {
		sizes[0] = cfg->nbuckets * 2;
		sizes[1] = cfg->nbuckets / 2;
	} else {
		sizes[0] = BENCH_WIDE_MIN;
		sizes[1] = BENCH_WIDE_MAX;
	}
	thread_enter(ops);
	pthread_barrier_wait(&run->start);
	while (!__atomic_load_n(&run->stop, __ATOMIC_RELAXED)) {
		size_t size = rs->size == sizes[0] ? sizes[1] : sizes[0];
		int err;

		__atomic_store_n(&run->resizing, 1, __ATOMIC_RELAXED);
		err = ops->resize(run->table, size);
		__atomic_store_n(&run->resizing, 0, __ATOMIC_RELAXED);
		if (err) {
			rs->err = err;
			rs->err_size = size;
			break;
		}
		rs->size = size;
		rs->calls++;
	}
	thread_leave(ops);
	__atomic_store_n(&rs->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/*
 * Join the resizer after the deadline; returns how long that took (s).  A
 * resize call can take long (an expansion needs a grace period per unzip
 * pass but the last): say what we are waiting for after a while.
 */
static double join_resizer(const struct bench_config *cfg,
                           const struct bench_result *res, struct resizer *rs,
                           uint64_t stopped)
{
	uint64_t now, shown = stopped;
	bool told = false;

	while (!__atomic_load_n(&rs->done, __ATOMIC_ACQUIRE)) {
		bench_sleep_ns(RESIZER_POLL_NS);
		now = bench_now_ns();
		if (now - stopped < RESIZER_NOTICE_NS)
			continue;
		if (cfg->progress && now - shown >= PROGRESS_NS) {
			progress(cfg, "%-14s waiting for the last resize call to "
			         "return (%.0f s)", res->backend->name,
			         (double)(now - stopped) / 1e9);
			shown = now;
		} else if (!cfg->progress && !told) {
			fprintf(stderr, "relhash-bench: %s: waiting for the last "
			        "resize call to return\n", res->backend->name);
			told = true;
		}
	}
	pthread_join(rs->thread, NULL);
	return (double)(bench_now_ns() - stopped) / 1e9;
}

/* ---------------------------------------------------------------------- */
/* Tables and runs                                                        */

/*
 * A populated table and its model.  Populating a table of a million keys
 * takes longer than a run, so each table lives for all rounds, and
 * backends with the same table code (relhash and relhash-call, rwlock and
 * unsync) share one; the model goes on from one run to the next.
 */
struct table_slot {
	const struct bench_table_ops *ops;
	void *table;
	size_t size;          /* buckets, as far as the resizer knows */
	uint8_t *present;     /* the model: see struct bench_run */
	double bytes_per_key; /* heap growth of create + populate, per key
	                         inserted */
};

/* Bytes the heap hands out (all arenas, mmapped chunks included); 0
 * where the C library cannot tell (mallinfo2() is glibc's, since 2.33):
 * the per-key heap column then reads 0. */
static size_t heap_in_use(void)
{
#ifdef HAVE_MALLINFO2
	struct mallinfo2 mi = mallinfo2();

	return mi.uordblks + mi.hblkhd;
#else
	return 0;
#endif
}

/*
 * Create a table for backend b and insert the stable keys and every other
 * updated key.  Updates insert absent keys and remove present ones, so half
 * of the updated keys present is where the table stays: inserts and
 * removes are balanced from the start.
 */
static void open_table(const struct bench_config *cfg,
                       const struct bench_backend *b, struct table_slot *ts)
{
	uint8_t *present = bench_xcalloc(cfg->keys, 1);
	size_t heap0 = heap_in_use();
	uint64_t key, inserted = 0;

	progress(cfg, "%-14s populating the table", b->name);
	ts->present = present;
	ts->size = cfg->nbuckets;
	ts->ops = b->ops;
	ts->table = b->ops->create(cfg);
	if (!ts->table)
		bench_die("%s: creating the table failed: %s", b->name,
		          strerror(errno));
	if (cfg->resize == BENCH_RESIZE_GROW)
		return; /* fill_table() inserts the keys */
	thread_enter(ts->ops);
	for (key = 0; key < cfg->keys; key++) {
		int err;

		present[key] = key < cfg->stable || (key - cfg->stable) % 2 == 0;
		if (!present[key])
			continue;
		err = ts->ops->insert(ts->table, key);
		if (err)
			bench_die("%s: populating the table: inserting key %llu: "
			          "%s", b->name, (unsigned long long)key,
			          strerror(-err));
		inserted++;
	}
	thread_leave(ts->ops);
	ts->bytes_per_key = ((double)heap_in_use() - (double)heap0) /
	                    (double)inserted;
}

static void close_table(struct table_slot *ts)
{
	if (ts->table)
		ts->ops->destroy(ts->table);
	free(ts->present);
}

/* ---------------------------------------------------------------------- */
/* --resize=grow: the fill, and how long the table takes to settle         */

struct filler {
	struct bench_run *run;
	unsigned index;
	/* --prealloc: the objects of this thread's keys, in the order of
	 * its inserts; NULL where the table took one. */
	void **objs;
	uint64_t nobjs;
	uint64_t start_ns; /* when this thread passed the start barrier */
	uint64_t end_ns;  /* when this thread's last insert returned */
	int err;          /* the first failed insert's error */
	uint64_t err_key;
	pthread_t thread;
};

/* --prealloc, before the clock starts: the objects of this filler's
 * keys (index, index + threads, ...). */
static void alloc_objects(struct filler *f)
{
	const struct bench_config *cfg = f->run->cfg;
	const struct bench_table_ops *ops = f->run->backend->ops;
	uint64_t i;

	if (f->index >= cfg->keys)
		return;
	f->nobjs = (cfg->keys - f->index - 1) / cfg->threads + 1;
	f->objs = bench_xcalloc(f->nobjs, sizeof(*f->objs));
	for (i = 0; i < f->nobjs; i++) {
		uint64_t key = f->index + i * cfg->threads;

		f->objs[i] = ops->alloc_object(key);
		if (!f->objs[i])
			bench_die("%s: allocating the object of key %llu: out "
			          "of memory", f->run->backend->name,
			          (unsigned long long)key);
	}
}

/* After the fill: free the objects the table does not own (copied, or
 * not inserted) and their array. */
static void free_objects(struct filler *f)
{
	const struct bench_table_ops *ops = f->run->backend->ops;
	uint64_t i;

	for (i = 0; i < f->nobjs; i++)
		if (f->objs[i])
			ops->free_object(f->objs[i]);
	free(f->objs);
}

/* Insert the i-th key of this filler: with --prealloc, its object. */
static inline int fill_insert(struct filler *f, uint64_t i, uint64_t key)
{
	struct bench_run *run = f->run;
	const struct bench_table_ops *ops = run->backend->ops;
	int err;

	if (!run->cfg->prealloc)
		return ops->insert(run->table, key);
	err = ops->insert_object(run->table, f->objs[i]);
	if (!err && !ops->object_copied)
		f->objs[i] = NULL;
	return err;
}

/* Insert keys index, index + threads, ...: the threads' keys interleave,
 * as a burst of requests would. */
static void *filler_main(void *arg)
{
	struct filler *f = arg;
	struct bench_run *run = f->run;
	const struct bench_table_ops *ops = run->backend->ops;
	uint64_t key, i = 0;

	if (run->cfg->prealloc)
		alloc_objects(f);
	thread_enter(ops);
	pthread_barrier_wait(&run->start);
	f->start_ns = bench_now_ns();
	for (key = f->index; key < run->cfg->keys;
	     key += run->cfg->threads, i++) {
		int err = fill_insert(f, i, key);

		if (err && !f->err) {
			f->err = err;
			f->err_key = key;
		}
		/* QSBR: one quiescent state per insert, as a server would
		 * announce one per request.  Every 64 inserts, as the lookup
		 * loop does, starved rculfhash's resizes on a busy machine
		 * (a 130 s fill of 1,048,576 keys). */
		if (ops->quiescent_state)
			ops->quiescent_state();
	}
	f->end_ns = bench_now_ns();
	thread_leave(ops);
	if (run->cfg->prealloc)
		free_objects(f);
	return NULL;
}

/*
 * Fill ts's fresh table with every key from cfg->threads threads at once;
 * returns when the last insert returned, in ns (bench_now_ns()).  Records
 * the fill time and the table's and engine's counters during the fill.
 */
static uint64_t fill_table(const struct bench_config *cfg,
                           struct bench_result *res, unsigned round,
                           struct table_slot *ts)
{
	const struct bench_table_ops *ops = ts->ops;
	struct bench_run run = { .cfg = cfg, .backend = res->backend,
	                         .table = ts->table };
	struct bench_engine_stats e0 = { 0 }, e1 = { 0 };
	struct bench_table_stats t1 = { 0 };
	struct filler *f = bench_xcalloc(cfg->threads, sizeof(*f));
	/* Before the fillers start: with --prealloc the growth counts the
	 * objects they allocate beforehand, as it counts insert's (and not
	 * what they free before they return: copied objects, arrays). */
	size_t heap0 = heap_in_use();
	uint64_t start = UINT64_MAX, end = 0;
	unsigned i;

	progress(cfg, "%-14s round %u/%u  filling", res->backend->name,
	         round + 1, cfg->rounds);
	if (ops->engine_stats)
		ops->engine_stats(&e0);
	pthread_barrier_init(&run.start, NULL, cfg->threads + 1);
	for (i = 0; i < cfg->threads; i++) {
		f[i].run = &run;
		f[i].index = i;
		if (pthread_create(&f[i].thread, NULL, filler_main, &f[i]))
			bench_die("cannot create filler threads");
	}
	pthread_barrier_wait(&run.start);
	/* The fill starts when the first filler does: on a busy machine the
	 * fillers may all be done before this thread runs again. */
	for (i = 0; i < cfg->threads; i++) {
		pthread_join(f[i].thread, NULL);
		if (f[i].start_ns < start)
			start = f[i].start_ns;
		if (f[i].end_ns > end)
			end = f[i].end_ns;
		if (f[i].err)
			bench_die("%s: filling: inserting key %llu: %s",
			          res->backend->name,
			          (unsigned long long)f[i].err_key,
			          strerror(-f[i].err));
	}
	pthread_barrier_destroy(&run.start);
	free(f);
	memset(ts->present, 1, cfg->keys);
	ts->bytes_per_key = ((double)heap_in_use() - (double)heap0) /
	                    (double)cfg->keys;
	res->fill_s[round] = (double)(end - start) / 1e9;
	/* The fresh table's counters are the fill's (and, read later, the
	 * settling's: run_backend() adds those of the lookup phase). */
	if (ops->table_stats)
		ops->table_stats(ts->table, &t1);
	if (ops->engine_stats)
		ops->engine_stats(&e1);
	res->table.resizes += t1.resizes;
	res->table.grace_periods += t1.grace_periods;
	res->engine.grace_periods += e1.grace_periods - e0.grace_periods;
	res->engine.callbacks += e1.callbacks - e0.callbacks;
	res->engine.seconds += res->fill_s[round];
	return end;
}

/* How long after the fill the table's load came down to
 * BENCH_SETTLED_LOAD_PCT, watched while the lookups run (and after them,
 * up to SETTLE_LIMIT_NS from the last insert). */
struct settle_watch {
	const struct bench_table_ops *ops;
	void *table;
	uint64_t since;   /* the fill's last insert */
	double seconds;   /* < 0 until settled */
	pthread_t thread;
};

#define SETTLE_POLL_NS 1000000u
#define SETTLE_LIMIT_NS 5000000000u

static void *settle_main(void *arg)
{
	struct settle_watch *sw = arg;

	thread_enter(sw->ops);
	while (bench_now_ns() - sw->since < SETTLE_LIMIT_NS) {
		uint64_t count = sw->ops->count(sw->table);
		size_t nbuckets = sw->ops->nbuckets(sw->table);

		if (count * 100 <= nbuckets * BENCH_SETTLED_LOAD_PCT) {
			sw->seconds = (double)(bench_now_ns() - sw->since) / 1e9;
			break;
		}
		bench_sleep_ns(SETTLE_POLL_NS);
	}
	thread_leave(sw->ops);
	return NULL;
}

struct iter_check {
	uint64_t keys;
	uint8_t *seen;
	struct bench_failures *failures;
};

static void iter_visit(uint64_t key, void *arg)
{
	struct iter_check *ic = arg;

	if (key >= ic->keys)
		bench_fail(ic->failures, BENCH_FAIL_ITER_UNEXPECTED, key);
	else if (ic->seen[key] < UINT8_MAX)
		ic->seen[key]++;
}

/*
 * After the workers are gone: the table's count equals the model's, and
 * iteration returns every present key once and nothing else.
 */
static uint64_t verify_contents(const struct bench_config *cfg,
                                const struct bench_table_ops *ops,
                                void *table, const uint8_t *present,
                                struct bench_failures *failures)
{
	struct iter_check ic = {
		.keys = cfg->keys,
		.seen = bench_xcalloc(cfg->keys, 1),
		.failures = failures,
	};
	uint64_t key, model = 0, count;

	thread_enter(ops);
	count = ops->count(table);
	ops->for_each(table, iter_visit, &ic);
	thread_leave(ops);

	for (key = 0; key < cfg->keys; key++) {
		model += present[key];
		if (present[key] && ic.seen[key] == 0)
			bench_fail(failures, BENCH_FAIL_ITER_MISSING, key);
		else if (ic.seen[key] > 1)
			bench_fail(failures, BENCH_FAIL_ITER_DUPLICATE, key);
		else if (!present[key] && ic.seen[key])
			bench_fail(failures, BENCH_FAIL_ITER_UNEXPECTED, key);
	}
	if (count != model) {
		fprintf(stderr, "relhash-bench: the table counts %llu objects, "
		        "the model %llu\n", (unsigned long long)count,
		        (unsigned long long)model);
		bench_fail(failures, BENCH_FAIL_COUNT, count);
	}
	free(ic.seen);
	return count;
}

static void add_failures(struct bench_failures *into,
                         const struct bench_failures *f)
{
	unsigned k;

	for (k = 0; k < BENCH_NFAIL; k++) {
		if (f->count[k] && into->count[k] == 0) {
			into->key[k] = f->key[k];
			if (k == BENCH_FAIL_UPDATE)
				into->update_err = f->update_err;
		}
		into->count[k] += f->count[k];
	}
}

static uint64_t total_progress(const struct bench_worker *w, unsigned n)
{
	uint64_t sum = 0;
	unsigned i;

	for (i = 0; i < n; i++)
		sum += __atomic_load_n(&w[i].progress, __ATOMIC_RELAXED);
	return sum;
}

/* Start the threads, let them run for `seconds`, stop them.  Returns the
 * measured time (from the start to the stop signal) in seconds. */
static double run_threads(const struct bench_config *cfg,
                          struct bench_result *res, unsigned round,
                          struct bench_run *run, struct bench_worker *w,
                          struct resizer *rs, double seconds)
{
	bool resizer = cfg->resize == BENCH_RESIZE_TOGGLE ||
	               cfg->resize == BENCH_RESIZE_WIDE;
	uint64_t start, deadline, now, last_ops = 0, last = 0, stopped;
	unsigned i;

	pthread_barrier_init(&run->start, NULL, cfg->threads + resizer + 1);
	for (i = 0; i < cfg->threads; i++)
		if (pthread_create(&w[i].thread, NULL, res->backend->worker, &w[i]))
			bench_die("cannot create worker threads");
	if (resizer && pthread_create(&rs->thread, NULL, resizer_main, rs))
		bench_die("cannot create the resizer thread");

	pthread_barrier_wait(&run->start);
	start = last = bench_now_ns();
	deadline = start + (uint64_t)(seconds * 1e9);
	while ((now = bench_now_ns()) < deadline) {
		bench_sleep_ns(deadline - now < PROGRESS_NS ? deadline - now
		                                             : PROGRESS_NS);
		if (cfg->progress) {
			uint64_t ops = total_progress(w, cfg->threads);

			now = bench_now_ns();
			progress(cfg, "%-14s round %u/%u  %8.2f Mops/s  %5.1f s left",
			         res->backend->name, round + 1, cfg->rounds,
			         (double)(ops - last_ops) / (double)(now - last) * 1e3,
			         now < deadline ? (double)(deadline - now) / 1e9 : 0);
			last_ops = ops;
			last = now;
		}
	}
	__atomic_store_n(&run->stop, 1, __ATOMIC_RELAXED);
	stopped = bench_now_ns();
	for (i = 0; i < cfg->threads; i++)
		pthread_join(w[i].thread, NULL);
	if (resizer) {
		double overrun = join_resizer(cfg, res, rs, stopped);

		if (overrun > res->resize_overrun)
			res->resize_overrun = overrun;
	}
	pthread_barrier_destroy(&run->start);
	return (double)(stopped - start) / 1e9;
}

/* The workers of one run.  Each updates a contiguous range of the keys >=
 * stable, so that workers do not share lines of present[]. */
static struct bench_worker *workers_new(const struct bench_config *cfg,
                                        struct bench_run *run, unsigned round)
{
	uint64_t updated = cfg->keys - cfg->stable;
	struct bench_worker *w;
	unsigned i;

	w = aligned_alloc(BENCH_CACHELINE, cfg->threads * sizeof(*w));
	if (!w)
		bench_die("out of memory");
	memset(w, 0, cfg->threads * sizeof(*w));
	for (i = 0; i < cfg->threads; i++) {
		uint64_t first = updated * i / cfg->threads;

		w[i].run = run;
		w[i].first_owned = cfg->stable + first;
		w[i].owned = updated * (i + 1) / cfg->threads - first;
		w[i].rng = 0x9e3779b97f4a7c15ull * (round * 1024 + i + 1);
	}
	return w;
}

/* The workers' counts of a run of `elapsed` seconds into res (its
 * throughput for this round) and their failures into *failures. */
static void collect_workers(const struct bench_config *cfg,
                            struct bench_result *res, unsigned round,
                            const struct bench_worker *w, double elapsed,
                            struct bench_failures *failures)
{
	uint64_t lookups = 0, inserts = 0, removes = 0, cpu_ns = 0;
	unsigned i;

	for (i = 0; i < cfg->threads; i++) {
		lookups += w[i].lookups;
		inserts += w[i].inserts;
		removes += w[i].removes;
		cpu_ns += w[i].cpu_ns;
		res->stable_lookups += w[i].stable_lookups;
		res->absent_lookups += w[i].absent_lookups;
		bench_hist_merge(&res->latency[0], &w[i].latency[0]);
		bench_hist_merge(&res->latency[1], &w[i].latency[1]);
		add_failures(failures, &w[i].failures);
	}
	res->lookups += lookups;
	res->mops[round] = (double)(lookups + inserts + removes) / elapsed / 1e6;
	res->lookup_mops[round] = (double)lookups / elapsed / 1e6;
	res->insert_mops[round] = (double)inserts / elapsed / 1e6;
	res->remove_mops[round] = (double)removes / elapsed / 1e6;
	res->cpu_share[round] = (double)cpu_ns / 1e9 / elapsed / cfg->threads;
	res->cpu_mops[round] = res->mops[round] / res->cpu_share[round];
}

static void print_round_failures(const struct bench_result *res,
                                 unsigned round,
                                 const struct bench_failures *failures)
{
	unsigned i;

	for (i = 0; i < BENCH_NFAIL; i++)
		if (failures->count[i])
			fprintf(stderr, "relhash-bench: %s, round %u: FAILED: %s: "
			        "%llu times (%s %llu)\n",
			        res->backend->name, round + 1,
			        bench_failure_text(i),
			        (unsigned long long)failures->count[i],
			        bench_failure_detail(i),
			        (unsigned long long)failures->key[i]);
}

/* Run one backend on ts's table for `seconds`, then verify the table. */
static void run_backend(const struct bench_config *cfg,
                        struct bench_result *res, unsigned round,
                        double seconds, struct table_slot *ts)
{
	const struct bench_table_ops *ops = res->backend->ops;
	struct bench_run run = {
		.cfg = cfg,
		.backend = res->backend,
		.table = ts->table,
		.present = ts->present,
	};
	struct bench_engine_stats engine0 = { 0 }, engine1 = { 0 };
	struct bench_table_stats table0 = { 0 }, table1 = { 0 };
	struct bench_failures failures = { 0 };
	struct resizer rs = { .run = &run, .size = ts->size };
	struct bench_worker *w = workers_new(cfg, &run, round);
	double elapsed;

	if (ops->engine_stats)
		ops->engine_stats(&engine0);
	if (ops->table_stats)
		ops->table_stats(run.table, &table0);
	elapsed = run_threads(cfg, res, round, &run, w, &rs, seconds);
	/* Free this run's garbage now, not during the next backend's run
	 * (nor its heap measurement). */
	if (ops->barrier)
		ops->barrier();
	if (ops->engine_stats)
		ops->engine_stats(&engine1);
	if (ops->table_stats)
		ops->table_stats(run.table, &table1);

	collect_workers(cfg, res, round, w, elapsed, &failures);
	free(w);
	res->resize_calls += rs.calls;
	ts->size = rs.size;
	res->table.resizes += table1.resizes - table0.resizes;
	res->table.grace_periods += table1.grace_periods - table0.grace_periods;
	res->engine.grace_periods += engine1.grace_periods - engine0.grace_periods;
	res->engine.callbacks += engine1.callbacks - engine0.callbacks;
	res->engine.seconds += elapsed;
	res->bytes_per_key = ts->bytes_per_key;
	if (rs.err)
		fprintf(stderr, "relhash-bench: %s: resizing to %zu buckets "
		        "failed: %s\n", res->backend->name, rs.err_size,
		        strerror(-rs.err));

	progress(cfg, "%-14s verifying", res->backend->name);
	res->final_count = verify_contents(cfg, ops, run.table, ts->present,
	                                   &failures);
	progress(cfg, "%s", "");
	res->rounds_done++;
	print_round_failures(res, round, &failures);
	add_failures(&res->failures, &failures);
}

/* One round of --resize=grow for res's backend: a fresh table, filled,
 * then the lookup run while the table settles. */
static void run_grow(const struct bench_config *cfg, struct bench_result *res,
                     unsigned round, double seconds)
{
	struct table_slot ts = { 0 };
	struct settle_watch sw = { .seconds = -1 };
	bool watch = res->backend->ops->nbuckets != NULL;

	open_table(cfg, res->backend, &ts);
	sw.ops = ts.ops;
	sw.table = ts.table;
	sw.since = fill_table(cfg, res, round, &ts);
	if (watch && pthread_create(&sw.thread, NULL, settle_main, &sw))
		bench_die("cannot create the settle watcher");
	run_backend(cfg, res, round, seconds, &ts);
	if (watch) {
		pthread_join(sw.thread, NULL);
		res->final_buckets = ts.ops->nbuckets(ts.table);
	}
	res->settle_s[round] = sw.seconds;
	close_table(&ts);
}

/* The table backend i runs on: that of the first backend with its ops. */
static struct table_slot *slot_of(const struct bench_result *res,
                                  struct table_slot *slots, unsigned i)
{
	unsigned j = 0;

	while (res[j].backend->ops != res[i].backend->ops)
		j++;
	return &slots[j];
}

/* How long the machine-limit probe runs after each round (bench-limit.c). */
#define LIMIT_SECONDS 0.25

/* The machine's limit over a buffer the size of the first backend's table
 * (its heap growth while populated), after a round; text reports only. */
static void probe_limit(const struct bench_config *cfg,
                        const struct bench_result *res, unsigned nres,
                        struct bench_limit *limit)
{
	unsigned i;

	if (cfg->format != BENCH_TEXT)
		return;
	for (i = 0; i < nres; i++) {
		if (res[i].skipped || res[i].bytes_per_key <= 0)
			continue;
		bench_limit_probe(limit, (size_t)(res[i].bytes_per_key *
		                                  (double)cfg->keys),
		                  cfg->rounds, LIMIT_SECONDS);
		return;
	}
}

/* Every backend in every round, in turn within a round, each round
 * followed by the machine-limit probe. */
static void run_rounds(const struct bench_config *cfg,
                       struct bench_result *res, unsigned nres,
                       struct bench_limit *limit)
{
	struct table_slot *slots = bench_xcalloc(nres, sizeof(*slots));
	unsigned i, round, nrun = 0;
	double seconds;

	for (i = 0; i < nres; i++)
		nrun += !res[i].skipped;
	seconds = cfg->seconds / (cfg->rounds * nrun);
	if (seconds < MIN_SLOT_SECONDS)
		seconds = MIN_SLOT_SECONDS;

	for (round = 0; round < cfg->rounds; round++) {
		for (i = 0; i < nres; i++) {
			struct table_slot *ts = slot_of(res, slots, i);

			if (res[i].skipped)
				continue;
			if (cfg->resize == BENCH_RESIZE_GROW) {
				run_grow(cfg, &res[i], round, seconds);
				continue;
			}
			if (!ts->table)
				open_table(cfg, res[i].backend, ts);
			run_backend(cfg, &res[i], round, seconds, ts);
		}
		probe_limit(cfg, res, nres, limit);
	}
	for (i = 0; i < nres; i++)
		close_table(&slots[i]);
	free(slots);
}

/* ---------------------------------------------------------------------- */

static const struct bench_backend *const all_backends[] = {
	&bench_relhash_backend,
	&bench_relhash_call_backend,
#ifdef HAVE_URCU
	&bench_urcu_qsbr_backend,
	&bench_urcu_memb_backend,
#endif
#ifdef HAVE_CK
	&bench_ck_backend,
#endif
#ifdef HAVE_LIBCUCKOO
	&bench_cuckoo_backend,
#endif
#ifdef HAVE_TBB
	&bench_tbb_backend,
#endif
#ifdef HAVE_LIBCDS
	&bench_cds_backend,
#endif
#ifdef HAVE_DPDK
	&bench_dpdk_backend,
	&bench_dpdk_bulk_backend,
#endif
	&bench_rwlock_backend,
	&bench_unsync_backend,
	&bench_relhash_bulk_backend,
	&bench_relhash_defer_backend,
};
#define NBACKENDS (sizeof(all_backends) / sizeof(all_backends[0]))

/* The backend called name (len bytes, not terminated); dies if none is. */
static const struct bench_backend *find_backend(const char *name, size_t len)
{
	unsigned i;

	for (i = 0; i < NBACKENDS; i++)
		if (strlen(all_backends[i]->name) == len &&
		    memcmp(all_backends[i]->name, name, len) == 0)
			return all_backends[i];
	bench_die("--backends: no backend '%.*s' in this build (see --help)",
	          (int)len, name);
}

/* The backends of this run, with the reason for those that are skipped. */
static unsigned choose_backends(const struct bench_config *cfg,
                                struct bench_result *res)
{
	unsigned i, n = 0;

	if (cfg->backends) {
		const char *p = cfg->backends;

		for (;;) {
			size_t len = strcspn(p, ",");

			if (n == NBACKENDS)
				bench_die("--backends: more than %u names",
				          (unsigned)NBACKENDS);
			res[n++].backend = find_backend(p, len);
			if (!p[len])
				break;
			p += len + 1;
		}
	} else {
		for (i = 0; i < NBACKENDS; i++)
			if ((!all_backends[i]->bulk || cfg->bulk_given) &&
			    !all_backends[i]->on_request)
				res[n++].backend = all_backends[i];
	}
	for (i = 0; i < n; i++) {
		if (res[i].backend->unsynchronized &&
		    ((cfg->update_pct && cfg->threads > 1) ||
		     cfg->resize != BENCH_RESIZE_NONE))
			res[i].skipped = "no resizes, and updates with one "
			                 "thread only";
		else if (res[i].backend->cannot_run)
			res[i].skipped = res[i].backend->cannot_run(cfg);
		if (!res[i].skipped && cfg->prealloc &&
		    !res[i].backend->ops->insert_object)
			res[i].skipped = "no insert of an object allocated "
			                 "beforehand (--prealloc)";
		res[i].mops = bench_xcalloc(cfg->rounds, sizeof(double));
		res[i].lookup_mops = bench_xcalloc(cfg->rounds, sizeof(double));
		res[i].insert_mops = bench_xcalloc(cfg->rounds, sizeof(double));
		res[i].remove_mops = bench_xcalloc(cfg->rounds, sizeof(double));
		res[i].cpu_share = bench_xcalloc(cfg->rounds, sizeof(double));
		res[i].cpu_mops = bench_xcalloc(cfg->rounds, sizeof(double));
		res[i].fill_s = bench_xcalloc(cfg->rounds, sizeof(double));
		res[i].settle_s = bench_xcalloc(cfg->rounds, sizeof(double));
	}
	return n;
}

static void free_results(struct bench_result *res, unsigned n)
{
	unsigned i;

	for (i = 0; i < n; i++) {
		free(res[i].mops);
		free(res[i].lookup_mops);
		free(res[i].insert_mops);
		free(res[i].remove_mops);
		free(res[i].cpu_share);
		free(res[i].cpu_mops);
		free(res[i].fill_s);
		free(res[i].settle_s);
	}
}

/* The peers hash with bench_hash(); it must be what relhash uses. */
static void check_hash(void)
{
	uint64_t key;

	for (key = 0; key < 1000; key++)
		if (bench_hash(key) != bench_hash_call(key))
			bench_die("bench_hash() differs from the --hash function");
}

int main(int argc, char **argv)
{
	struct bench_config cfg;
	struct bench_result res[NBACKENDS];
	struct bench_epoch_result epoch[BENCH_EPOCH_FLAVORS];
	struct bench_limit limit = { 0 };
	unsigned i, nres, nepoch;
	bool failed = false;

	if (parse_options(argc, argv, &cfg)) {
		nepoch = bench_epoch_run_all(cfg.threads, cfg.section_ns, false,
		                             epoch);
		bench_print_epoch(&cfg, epoch, nepoch);
		for (i = 0; i < nepoch; i++)
			failed |= epoch[i].calls != epoch[i].calls_queued;
		return failed;
	}
	if (cfg.hash_cost)
		return bench_hash_cost(&cfg);
	bench_clock_init();
	check_hash();

	memset(res, 0, sizeof(res));
	nres = choose_backends(&cfg, res);
	run_rounds(&cfg, res, nres, &limit);

	/* The read-side cost is cheap to measure: always show it. */
	nepoch = bench_epoch_run_all(cfg.threads, 0, true, epoch);
	bench_print_results(&cfg, res, nres, epoch, nepoch, &limit);
	bench_limit_free(&limit);
	for (i = 0; i < nres; i++)
		failed |= bench_result_failed(&res[i]);
	free_results(res, nres);
	return failed;
}
