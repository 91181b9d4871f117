/*
 * bench.h - what the parts of relhash-bench share.
 *
 *   relhash-bench.c    options, the run (rounds, threads, resizer,
 *                      verification) and main()
 *   bench-output.c     text and CSV reports
 *   bench-util.c       clock, latency histograms, small helpers
 *   bench-epoch.c      --epoch: grace-period micro-benchmarks
 *   bench-hash.c       --hash: the hash every backend uses; --hash-cost
 *   bench-limit.c      the machine's limit for lookups (loads a second)
 *   bench-relhash.c    the relhash backends (inline, call-based and bulk
 *                      lookups)
 *   bench-chained.c    the chained-table peers (rwlock, unsynchronized)
 *   bench-urcu.h       liburcu's rculfhash, written once for any flavor and
 *   bench-urcu-*.c     instantiated per flavor (QSBR, memb)
 *   bench-ck.c         Concurrency Kit's ck_ht (SPMC, ck_epoch)
 *   bench-cuckoo.cc    libcuckoo's cuckoohash_map (C++)
 *   bench-tbb.cc       TBB's concurrent_hash_map (C++)
 *   bench-dpdk.c       DPDK's rte_hash (lock-free readers, RCU QSBR)
 *   bench-cds.cc       libcds's split-ordered map over its RCU (C++)
 *
 * The peers after liburcu are each built into a library of their own when
 * configure finds their package (HAVE_CK, HAVE_LIBCUCKOO, HAVE_TBB,
 * HAVE_DPDK, HAVE_LIBCDS); the C++ ones implement the same C interface
 * (extern "C").
 *
 * Every backend implements struct bench_table_ops, so the workload, the
 * model of which keys are present and the verification exist once.  The hot
 * loop is the exception: bench_worker_loop() is an always-inline template
 * that each backend instantiates with its own lookup, so that lookups are
 * compiled into the loop (relhash's inline fast path must not be reached
 * through a function pointer, and no peer pays for one either).
 */
#ifndef RELHASH_BENCH_H
#define RELHASH_BENCH_H

/*
 * The benchmark is built like a user's program, from the public headers
 * alone: never the library's private config.h.  The one build setting it
 * needs, HAVE_URCU (liburcu is there to compare with), comes from
 * Makefile.am on the command line.
 */
#include <errno.h>
#include <pthread.h>
#include <stdalign.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <relhash.h>

#ifdef __cplusplus
extern "C" {
#endif

#define BENCH_CACHELINE 64
#define BENCH_ALWAYS_INLINE inline __attribute__((always_inline))

/* Every backend hashes keys with relhash's hash and this seed. */
#define BENCH_SEED 0x243f6a8885a308d3ull

/* Lookups per timed lookup (latency sampling). */
#define BENCH_SAMPLE_EVERY 64
/* The most keys one --bulk lookup call takes. */
#define BENCH_MAX_BULK 256
/* Operations between a QSBR quiescent state and a progress update. */
#define BENCH_BATCH 64

/*
 * Keys are the integers 0 .. keys-1.  Every object stores value =
 * bench_value(key); a deferred free overwrites it with BENCH_POISON first,
 * so a reader that sees the poison read an object after its grace period.
 * Keys are < 2^32, so no valid value has the poison's high half.
 */
#define BENCH_VALUE_SALT 0xa5a5a5a5a5a5a5a5ull
#define BENCH_POISON 0xdeadbeefdeadbeefull
#define BENCH_MAX_KEYS (1ull << 31)

static inline uint64_t bench_value(uint64_t key)
{
	return key ^ BENCH_VALUE_SALT;
}

/* --hash: the function every backend hashes keys with (bench-hash.c). */
enum bench_hash {
	BENCH_HASH_DEFAULT,  /* relhash_hash(), inlined by relhash's lookup */
	BENCH_HASH_SIPHASH,  /* relhash_siphash(), a call */
	BENCH_HASH_REPLACED, /* bench_hash_replaced(), inlined */
};
#define BENCH_NHASH 3
/* Set once by main() before any other thread starts. */
extern enum bench_hash bench_hash_kind;
const char *bench_hash_name(enum bench_hash h);
/* bench_hash() as a call of the exported function, for main()'s check. */
uint64_t bench_hash_call(uint64_t key);
/* --hash-cost: ns per hash of each function and key size. */
struct bench_config;
int bench_hash_cost(const struct bench_config *cfg);

/*
 * --hash=replaced: the construction relhash_hash() replaced, for 8-byte
 * keys (relhash-bench's), as a params.hashfn that relhash's inline lookup
 * inlines.  Only to measure what the default's secret masks cost
 * (doc/DESIGN.md section 12): its public mask K1 lets anyone flood it.
 */
static inline uint64_t bench_hash_replaced(const void *key, size_t len,
                                           uint64_t seed)
{
	uint64_t k = relhash__load64((const unsigned char *)key);
	uint64_t acc = relhash__fold_mul(k ^ RELHASH__K1, k ^ seed ^ RELHASH__K0);

	return relhash__fold_mul(acc ^ RELHASH__K2, (uint64_t)len ^ RELHASH__K3);
}

/*
 * The hash all backends use: relhash_hash(&key, 8, BENCH_SEED), or with
 * --hash=siphash relhash_siphash() (--hash=replaced: the above).
 * relhash's inline lookup computes the default inline, so the peers get
 * the same inline code (the header's relhash__hash_inline, which is what
 * relhash_hash() runs) rather than paying a call that relhash does not
 * pay; relhash_siphash() is a call for every backend.  main() checks that
 * bench_hash() agrees with the call.
 */
static inline uint64_t bench_hash(uint64_t key)
{
	if (RELHASH_UNLIKELY(bench_hash_kind == BENCH_HASH_SIPHASH))
		return relhash_siphash(&key, sizeof(key), BENCH_SEED);
	if (RELHASH_UNLIKELY(bench_hash_kind == BENCH_HASH_REPLACED))
		return bench_hash_replaced(&key, sizeof(key), BENCH_SEED);
#ifdef RELHASH_NO_INLINE
	return relhash_hash(&key, sizeof(key), BENCH_SEED);
#else
	return relhash__hash_inline(&key, sizeof(key), BENCH_SEED);
#endif
}

/* ---------------------------------------------------------------------- */
/* Configuration                                                          */

enum bench_resize {
	BENCH_RESIZE_NONE,   /* fixed size */
	BENCH_RESIZE_TOGGLE, /* a thread toggles between size/2 and size*2 */
	BENCH_RESIZE_WIDE,   /* a thread resizes between 4 and 65,536 */
	BENCH_RESIZE_AUTO,   /* the table's own automatic resizing */
	BENCH_RESIZE_GROW,   /* fill a fresh, automatically resized table
	                        from its smallest size, then look up */
};

/* Does the workload create tables that resize themselves? */
static inline bool bench_auto_resize(enum bench_resize r)
{
	return r == BENCH_RESIZE_AUTO || r == BENCH_RESIZE_GROW;
}

/* --resize=grow: every table starts at this many buckets. */
#define BENCH_GROW_INITIAL 8
/* A table has settled after its fill once its load is at most this. */
#define BENCH_SETTLED_LOAD_PCT 75

#define BENCH_WIDE_MIN 4
#define BENCH_WIDE_MAX 65536

enum bench_format { BENCH_TEXT, BENCH_CSV };

struct bench_config {
	/* From the command line. */
	unsigned threads;
	uint64_t keys;
	unsigned update_pct;
	unsigned hit_pct;
	double seconds;  /* measured time of the whole run */
	unsigned rounds;
	enum bench_resize resize;
	bool prealloc;   /* --prealloc: grow's fill allocates beforehand */
	enum bench_format format;
	const char *backends; /* --backends: comma-separated names, or NULL */
	unsigned bulk;        /* keys per relhash-bulk lookup call */
	bool bulk_given;      /* --bulk: run relhash-bulk by default too */
	bool progress;   /* live progress line on stderr */
	enum bench_hash hash;  /* --hash */
	const char *hash_cost; /* --hash-cost: key sizes, or NULL */
	uint64_t section_ns; /* --epoch: time readers spend in a section */

	/* Derived. */
	uint64_t stable;  /* keys [0, stable) are never updated */
	size_t nbuckets;  /* initial size of every backend's table */
	/* Thresholds on 16 random bits (out of 65,536). */
	uint32_t update_below;
	uint32_t hit_below;
};

const char *bench_resize_name(enum bench_resize r);

/* ---------------------------------------------------------------------- */
/* Backends                                                               */

/* Engine counters, for backends that have an engine of their own. */
struct bench_engine_stats {
	uint64_t grace_periods;
	uint64_t callbacks;
	double seconds; /* summed result: how long the runs took */
};

/* Table counters beyond what the driver counts itself. */
struct bench_table_stats {
	uint64_t resizes;       /* size changes (each doubling or shrink) */
	uint64_t grace_periods; /* grace periods the resizer waited for */
};

struct bench_table_ops {
	/* Bytes of one object, as allocated. */
	size_t object_size;
	/* A table of cfg->nbuckets buckets; NULL on failure (errno set). */
	void *(*create)(const struct bench_config *cfg);
	/* After every other thread is gone: wait for deferred frees, free
	 * the remaining objects and the table. */
	void (*destroy)(void *table);
	/* Every thread calls these around its use of the table (NULL: none). */
	void (*thread_enter)(void);
	void (*thread_leave)(void);
	/* Allocate and insert the object of key: 0 or a negative errno. */
	int (*insert)(void *table, uint64_t key);
	/*
	 * Optional, all three or none: insert in two steps, for --prealloc,
	 * whose fill allocates every object before the clock starts and so
	 * times the table's own insert.  alloc_object: the object of key,
	 * allocated and initialised, not inserted; NULL on failure.
	 * insert_object: insert it: 0 or a negative errno.  On success the
	 * table owns the object, unless object_copied; the caller frees
	 * with free_object every object the table does not own.
	 */
	void *(*alloc_object)(uint64_t key);
	int (*insert_object)(void *table, void *obj);
	void (*free_object)(void *obj);
	/* insert_object copies the object into a node that the table
	 * allocates itself (tables that store keys and values by copy):
	 * the object is only what a caller prepares, a struct bench_kv, and
	 * the node's allocation is the table's cost, timed.  The caller
	 * frees the object after the fill. */
	bool object_copied;
	/* Remove the object of key and free it after a grace period: 0 or a
	 * negative errno. */
	int (*remove)(void *table, uint64_t key);
	/* Change the number of buckets: 0 or a negative errno. */
	int (*resize)(void *table, size_t nbuckets);
	/* Wait until the objects removed so far have been freed (NULL: they
	 * are freed at once). */
	void (*barrier)(void);
	/* For the verification, single-threaded after the run. */
	uint64_t (*count)(void *table);
	void (*for_each)(void *table, void (*fn)(uint64_t key, void *arg),
	                 void *arg);
	/* Optional (NULL when absent). */
	void (*table_stats)(void *table, struct bench_table_stats *st);
	size_t (*nbuckets)(void *table); /* buckets now, any thread */
	/* QSBR: announce a quiescent state (NULL: not QSBR); for loops
	 * outside bench_worker_loop(). */
	void (*quiescent_state)(void);
	void (*engine_stats)(struct bench_engine_stats *st);
};

/*
 * malloc() an object of size bytes and store key and bench_value(key) at
 * the given offsets: the start of every backend's alloc_object.  Through
 * BENCH_NEW_OBJECT(type, key), for a type with fields key and value.
 */
static inline void *bench_object_alloc(size_t size, size_t key_at,
                                       size_t value_at, uint64_t key)
{
	char *obj = (char *)malloc(size);
	uint64_t value = bench_value(key);

	if (obj) {
		memcpy(obj + key_at, &key, sizeof(key));
		memcpy(obj + value_at, &value, sizeof(value));
	}
	return obj;
}

#define BENCH_NEW_OBJECT(type, k)                                         \
	bench_object_alloc(sizeof(type), offsetof(type, key),             \
	                   offsetof(type, value), (k))

/*
 * A backend's insert made of its two steps: allocate key's object, insert
 * it, free it unless the table took it.  Always inline with the backend's
 * own functions, so that its insert stays one call, as without the steps.
 */
static BENCH_ALWAYS_INLINE int
bench_insert_new(void *table, uint64_t key, void *(*alloc_object)(uint64_t),
                 int (*insert_object)(void *, void *),
                 void (*free_object)(void *))
{
	void *obj = alloc_object(key);
	int err;

	if (!obj)
		return -ENOMEM;
	err = insert_object(table, obj);
	if (err)
		free_object(obj);
	return err;
}

/* The object of a table with object_copied: alloc_object is
 * bench_kv_alloc (bench-util.c). */
struct bench_kv {
	uint64_t key;
	uint64_t value;
};

void *bench_kv_alloc(uint64_t key);
/* free_object for objects from malloc(), as every backend's are. */
void bench_free_object(void *obj);

struct bench_backend {
	const char *name;
	const char *description;
	const struct bench_table_ops *ops;
	/* The thread function: bench_worker_loop() with this backend's
	 * lookup; its argument is a struct bench_worker. */
	void *(*worker)(void *worker);
	/* The table's lookups have no synchronization: no resizes, and
	 * updates with one thread only (they take a lock that the lookups
	 * ignore). */
	bool unsynchronized;
	/* Lookups in groups of --bulk keys: runs by default only with --bulk
	 * (or when --backends names it). */
	bool bulk;
	/* Why the backend cannot run cfg's workload (a fixed capacity, no
	 * shrinking, ...), printed where its results would be; NULL (or a
	 * NULL function): it can. */
	const char *(*cannot_run)(const struct bench_config *cfg);
	/* Runs only when --backends names it: a variant for one comparison. */
	bool on_request;
};

extern const struct bench_backend bench_relhash_backend;
extern const struct bench_backend bench_relhash_call_backend;
extern const struct bench_backend bench_relhash_bulk_backend;
extern const struct bench_backend bench_relhash_defer_backend;
extern const struct bench_backend bench_rwlock_backend;
extern const struct bench_backend bench_unsync_backend;
#ifdef HAVE_URCU
extern const struct bench_backend bench_urcu_qsbr_backend;
extern const struct bench_backend bench_urcu_memb_backend;
#endif
#ifdef HAVE_CK
extern const struct bench_backend bench_ck_backend;
#endif
#ifdef HAVE_LIBCUCKOO
extern const struct bench_backend bench_cuckoo_backend;
#endif
#ifdef HAVE_TBB
extern const struct bench_backend bench_tbb_backend;
#endif
#ifdef HAVE_LIBCDS
extern const struct bench_backend bench_cds_backend;
#endif
#ifdef HAVE_DPDK
extern const struct bench_backend bench_dpdk_backend;
extern const struct bench_backend bench_dpdk_bulk_backend;
#endif

/* cannot_run for tables that can grow, but not shrink, on request: they
 * run every workload but toggle and wide. */
const char *bench_cannot_shrink(const struct bench_config *cfg);

/* ---------------------------------------------------------------------- */
/* Clock and latency histograms (bench-util.c)                            */

/* Monotonic nanoseconds. */
uint64_t bench_now_ns(void);
/* CPU time of the calling thread, nanoseconds. */
uint64_t bench_thread_cpu_ns(void);
/* Sleep; returns early only for signals. */
void bench_sleep_ns(uint64_t ns);

/*
 * Ticks for timing single operations: the TSC on x86-64 (rdtscp, which
 * waits for earlier instructions), else nanoseconds.  bench_clock_init()
 * measures the tick rate and the cost of an empty measurement, which the
 * reports subtract.  -DBENCH_NO_TSC: nanoseconds everywhere (valgrind,
 * for counting instructions, has no rdtscp).
 */
void bench_clock_init(void);
#if (defined(__x86_64__) || defined(__i386__)) && !defined(BENCH_NO_TSC)
static BENCH_ALWAYS_INLINE uint64_t bench_ticks(void)
{
	unsigned aux;
	return __builtin_ia32_rdtscp(&aux);
}
#else
static BENCH_ALWAYS_INLINE uint64_t bench_ticks(void)
{
	return bench_now_ns();
}
#endif

/*
 * Log2-linear histogram: values below 16 exactly, then 16 linear
 * sub-buckets per power of two (at most 6.25 % relative error).
 */
#define BENCH_HIST_SUB_BITS 4
#define BENCH_HIST_SUB (1u << BENCH_HIST_SUB_BITS)
#define BENCH_HIST_BUCKETS ((64 - BENCH_HIST_SUB_BITS + 1) * BENCH_HIST_SUB)

struct bench_hist {
	uint64_t n;
	uint64_t max;
	uint64_t count[BENCH_HIST_BUCKETS];
};

static inline void bench_hist_add(struct bench_hist *h, uint64_t v)
{
	unsigned idx;

	if (v < BENCH_HIST_SUB) {
		idx = (unsigned)v;
	} else {
		unsigned e = 63 - (unsigned)__builtin_clzll(v);
		idx = ((e - BENCH_HIST_SUB_BITS + 1) << BENCH_HIST_SUB_BITS) |
		      (unsigned)((v >> (e - BENCH_HIST_SUB_BITS)) &
		                 (BENCH_HIST_SUB - 1));
	}
	h->count[idx]++;
	h->n++;
	if (v > h->max)
		h->max = v;
}

void bench_hist_merge(struct bench_hist *into, const struct bench_hist *h);
/* The value at quantile q (0..1): the upper bound of its bucket, at most
 * the maximum.  0 for an empty histogram. */
uint64_t bench_hist_quantile(const struct bench_hist *h, double q);

/* Latency of lookups in ns, from a histogram of ticks: timer cost removed. */
double bench_latency_ns(uint64_t ticks);

/* ---------------------------------------------------------------------- */
/* Small helpers (bench-util.c)                                           */

/* wyrand: one 64-bit multiply per number, plenty for choosing keys.  The
 * folded 128-bit product is the default hash's (<relhash/inline.h>), which
 * also serves targets without a 128-bit type. */
static inline uint64_t bench_rand(uint64_t *state)
{
	*state += 0xa0761d6478bd642full;
	return relhash__fold_mul(*state, *state ^ 0xe7037ed1a0b428dbull);
}

/* A uniform number in [0, n) from 32 random bits (n < 2^32). */
static inline uint64_t bench_scale(uint32_t r, uint64_t n)
{
	return ((uint64_t)r * n) >> 32;
}

void *bench_xcalloc(size_t n, size_t size);
/* The median of n values (n may be 0: 0). */
double bench_median(const double *v, unsigned n);
/* Print "relhash-bench: " and the message on stderr, and exit(2). */
__attribute__((noreturn, format(printf, 1, 2)))
void bench_die(const char *fmt, ...);

/* ---------------------------------------------------------------------- */
/* One run of one backend, and its threads                                 */

/* What the workers of one run share; written only by the driver. */
struct bench_run {
	const struct bench_config *cfg;
	const struct bench_backend *backend;
	void *table;
	/* The model: present[i] != 0 when key i is in the table.  Each
	 * updated key has one owner thread, the only one to touch its byte. */
	uint8_t *present;
	pthread_barrier_t start;
	/* Read by every lookup: keep it away from lines that are written. */
	alignas(BENCH_CACHELINE) int stop;
	/* 1 while the resizer thread is inside a resize call. */
	alignas(BENCH_CACHELINE) int resizing;
};

/* What verification can find; the first four are counted by workers. */
enum bench_failure {
	BENCH_FAIL_STABLE_MISS,   /* a never-updated key was not found */
	BENCH_FAIL_FALSE_HIT,     /* a never-inserted key was found */
	BENCH_FAIL_CORRUPT,       /* an object with a wrong or poisoned value */
	BENCH_FAIL_UPDATE,        /* insert/remove disagreed with the model */
	BENCH_FAIL_COUNT,         /* the table's count differs from the model */
	BENCH_FAIL_ITER_MISSING,  /* iteration missed a present key */
	BENCH_FAIL_ITER_DUPLICATE, /* iteration returned a key twice */
	BENCH_FAIL_ITER_UNEXPECTED, /* iteration returned an absent key */
	BENCH_NFAIL
};

/* Occurrences of each failure, with the key of the first one. */
struct bench_failures {
	uint64_t count[BENCH_NFAIL];
	uint64_t key[BENCH_NFAIL];
	int update_err; /* the errno of the first failed update */
};

/* Record a failure. */
__attribute__((cold))
void bench_fail(struct bench_failures *f, enum bench_failure kind,
                uint64_t key);

/* One worker thread's state and counters; one cache line apart. */
struct bench_worker {
	alignas(BENCH_CACHELINE) struct bench_run *run;
	uint64_t first_owned;    /* this thread updates keys first_owned .. */
	uint64_t owned;          /* .. first_owned + owned - 1 */
	uint64_t rng;
	uint64_t lookups;
	uint64_t inserts;
	uint64_t removes;
	uint64_t stable_lookups; /* lookups of keys that must be present */
	uint64_t absent_lookups; /* lookups of keys never inserted */
	struct bench_failures failures;
	uint64_t cpu_ns;         /* CPU time the thread got while running */
	pthread_t thread;
	/* Operations so far, published for the progress display. */
	alignas(BENCH_CACHELINE) uint64_t progress;
	/* Sampled lookup latency in ticks: [0] no resize, [1] during one. */
	struct bench_hist latency[2];
};

/* What a backend's lookup reports: with the object only valid inside the
 * read-side section, the lookup checks it there. */
enum bench_found { BENCH_MISSING, BENCH_FOUND, BENCH_CORRUPT };

static inline enum bench_found bench_check_value(uint64_t value, uint64_t key)
{
	return value == bench_value(key) ? BENCH_FOUND : BENCH_CORRUPT;
}

/* Bulk lookups (bench-relhash.c): draw operations until n lookups are
 * gathered into keys[] (or the run stops); returns how many were.  Updates
 * drawn meanwhile run at once and are counted in *ops.  Keys of the set
 * are below cfg->keys, keys never inserted at or above it. */
unsigned bench_gather_lookups(struct bench_worker *w, uint64_t *keys,
                              unsigned n, uint64_t *ops);

/* Insert or remove one of this worker's keys (relhash-bench.c). */
void bench_update(struct bench_worker *w, uint32_t r);
/* Called by each worker before its first and after its last operation. */
void bench_worker_begin(struct bench_worker *w);
void bench_worker_end(struct bench_worker *w);

static inline void bench_no_quiescent_state(void)
{
}

/* Check and count the outcome of one lookup of key: a key of the set or
 * one never inserted (in_set), and if of the set, one never updated
 * (stable) or not. */
static BENCH_ALWAYS_INLINE void bench_lookup_done(struct bench_worker *w,
                                                  bool in_set, bool stable,
                                                  uint64_t key,
                                                  enum bench_found found)
{
	if (RELHASH_UNLIKELY(found == BENCH_CORRUPT)) {
		bench_fail(&w->failures, BENCH_FAIL_CORRUPT, key);
	} else if (!in_set) {
		w->absent_lookups++;
		if (RELHASH_UNLIKELY(found != BENCH_MISSING))
			bench_fail(&w->failures, BENCH_FAIL_FALSE_HIT, key);
	} else if (stable) {
		w->stable_lookups++;
		if (RELHASH_UNLIKELY(found != BENCH_FOUND))
			bench_fail(&w->failures, BENCH_FAIL_STABLE_MISS, key);
	}
}

/*
 * The hot loop, instantiated by every backend: lookup(table, key) is the
 * backend's whole lookup, read-side section included, and quiescent_state()
 * is called every BENCH_BATCH operations (QSBR).  Both are compile-time
 * constants after inlining, so they are inlined into the loop.
 *
 * Each operation draws one 64-bit random number: bits 0-15 choose between
 * update and lookup, bits 16-31 between a key of the set and a key never
 * inserted, bits 32-63 the key.
 */
static BENCH_ALWAYS_INLINE void
bench_worker_loop(struct bench_worker *w,
                  enum bench_found (*lookup)(void *table, uint64_t key),
                  void (*quiescent_state)(void))
{
	struct bench_run *run = w->run;
	const struct bench_config *cfg = run->cfg;
	void *table = run->table;
	uint64_t ops = 0;

	bench_worker_begin(w);
	while (!__atomic_load_n(&run->stop, __ATOMIC_RELAXED)) {
		uint64_t r = bench_rand(&w->rng);

		if ((uint16_t)r < cfg->update_below) {
			bench_update(w, (uint32_t)(r >> 32));
		} else {
			uint64_t idx = bench_scale((uint32_t)(r >> 32), cfg->keys);
			bool in_set = (uint16_t)(r >> 16) < cfg->hit_below;
			uint64_t key = in_set ? idx : cfg->keys + idx;
			enum bench_found found;

			/* One call site, so the lookup is inlined once. */
			bool timed = ++w->lookups % BENCH_SAMPLE_EVERY == 0;
			uint64_t t0 = 0;

			if (RELHASH_UNLIKELY(timed))
				t0 = bench_ticks();
			found = lookup(table, key);
			if (RELHASH_UNLIKELY(timed)) {
				int resizing = __atomic_load_n(&run->resizing,
				                               __ATOMIC_RELAXED);

				bench_hist_add(&w->latency[resizing],
				               bench_ticks() - t0);
			}
			bench_lookup_done(w, in_set, idx < cfg->stable, key,
			                  found);
		}
		if (++ops % BENCH_BATCH == 0) {
			quiescent_state();
			__atomic_store_n(&w->progress, ops, __ATOMIC_RELAXED);
		}
	}
	bench_worker_end(w);
}

/* ---------------------------------------------------------------------- */
/* The machine's limit for lookups (bench-limit.c)                        */

/* Probed after each round, so that each round's lookups are set against
 * the machine as it was then (here the probe's rate has moved by up to a
 * third between the rounds of one run, and by 2x between runs, which
 * pairing cannot help: doc/PERFORMANCE.md, "Bulk lookups and the machine's
 * limit"). */
struct bench_limit {
	size_t bytes;        /* the buffer probed: the table's size */
	uint64_t *buf;       /* allocated and filled by the first probe */
	unsigned probes;     /* rounds probed so far; 0: not measured */
	double *loads_per_s; /* per round: independent random cache-line
	                        loads a second of one thread's CPU time */
	uint64_t sink;       /* what the loads summed to (keeps them) */
};

/* Probe for `seconds` a buffer of `bytes` (at least 4 KiB; the first
 * probe's size stays), recording the next of `rounds` rounds. */
void bench_limit_probe(struct bench_limit *l, size_t bytes, unsigned rounds,
                       double seconds);
void bench_limit_free(struct bench_limit *l);

/* ---------------------------------------------------------------------- */
/* Results and reports (bench-output.c)                                   */

/* Everything measured for one backend over all rounds. */
struct bench_result {
	const struct bench_backend *backend;
	const char *skipped;    /* why it did not run, or NULL */
	unsigned rounds_done;
	/* Per round, Mops/s: all operations, lookups, inserts, removes. */
	double *mops, *lookup_mops, *insert_mops, *remove_mops;
	/* Per round: the share of their time the workers were on a CPU (on a
	 * busy machine < 1), and mops divided by it: the throughput had every
	 * worker had a CPU of its own all the time. */
	double *cpu_share, *cpu_mops;
	struct bench_hist latency[2]; /* ticks: [0] no resize, [1] resizing */
	uint64_t resize_calls;  /* resize calls completed by the resizer */
	double resize_overrun;  /* longest wait for the resizer after the
	                           deadline, seconds */
	struct bench_table_stats table;   /* summed over rounds */
	struct bench_engine_stats engine; /* growth during the runs */
	double bytes_per_key;   /* heap growth of create + populate, per key
	                           inserted (objects and buckets) */
	uint64_t lookups, stable_lookups, absent_lookups;
	uint64_t final_count;   /* objects in the table after the last round */
	/* --resize=grow, per round: seconds from the start of the fill to
	 * the last insert, and from then until the load was at most
	 * BENCH_SETTLED_LOAD_PCT (< 0: not within 5 s, or the backend cannot
	 * tell its size); buckets at the end of the last
	 * round (0: cannot tell). */
	double *fill_s, *settle_s;
	size_t final_buckets;
	struct bench_failures failures;
};

bool bench_result_failed(const struct bench_result *r);
const char *bench_failure_text(enum bench_failure kind);
/* What the failure's key is: "first key", or for the count, the count. */
const char *bench_failure_detail(enum bench_failure kind);

/* --epoch and the short figures at the end of a default run. */
struct bench_epoch_result {
	const char *name;
	double lock_unlock_inline_ns;
	double lock_unlock_call_ns;   /* < 0: not measured */
	unsigned readers;
	uint64_t section_ns;          /* each reader section's length */
	struct bench_hist synchronize_ns;
	double call_rate;             /* callbacks per second; < 0: not run */
	uint64_t calls_queued;
	uint64_t calls;               /* how many had run after the barrier */
};

/* limit: NULL when not measured. */
void bench_print_results(const struct bench_config *cfg,
                         const struct bench_result *res, unsigned nres,
                         const struct bench_epoch_result *epoch,
                         unsigned nepoch, const struct bench_limit *limit);
void bench_print_epoch(const struct bench_config *cfg,
                       const struct bench_epoch_result *epoch, unsigned n);

/* ---------------------------------------------------------------------- */
/* Grace-period micro-benchmarks (bench-epoch.c)                          */

struct bench_epoch_flavor {
	const char *name;
	void (*thread_enter)(void);
	void (*thread_leave)(void);
	/* n read_lock + read_unlock pairs: ns per pair. */
	double (*lock_unlock_inline)(uint64_t n);
	double (*lock_unlock_call)(uint64_t n); /* NULL: not available */
	/* Enter and leave read-side sections until *stop, staying about
	 * section_ns inside each (bench_section_work()). */
	void (*read_spin)(const int *stop, uint64_t section_ns);
	void (*synchronize)(void);
	/* Queue n callbacks, then wait for them all (barrier); returns how
	 * many ran. */
	uint64_t (*call_and_barrier)(uint64_t n);
};

extern const struct bench_epoch_flavor bench_relhash_epoch;
#ifdef HAVE_URCU
extern const struct bench_epoch_flavor bench_urcu_memb_epoch;
#endif

/* Work inside a reader's section: spin until ns have passed (0: none). */
static inline void bench_section_work(uint64_t ns)
{
	uint64_t t0;

	if (!ns)
		return;
	t0 = bench_now_ns();
	while (bench_now_ns() - t0 < ns)
		;
}

/* At most how many flavors a build has (relhash, liburcu-memb). */
#define BENCH_EPOCH_FLAVORS 2

/* Measure every flavor into out[]; returns how many.  readers: threads
 * busy in read-side sections of section_ns each during the synchronize and
 * callback measurements.  quick: only read_lock + read_unlock. */
unsigned bench_epoch_run_all(unsigned readers, uint64_t section_ns, bool quick,
                             struct bench_epoch_result *out);

#ifdef __cplusplus
}

#include <stdexcept>

/*
 * The C++ peers' maps store keys and values by copy: their insert and
 * insert_object (object_copied, with bench_kv_alloc's objects) differ only
 * in where the key and value come from.  Put()(table, key, value) inserts
 * them and returns whether the key was new; it may throw.
 */
template <typename Put>
struct bench_copying_insert {
	static int put(void *table, uint64_t key, uint64_t value)
	{
		try {
			return Put()(table, key, value) ? 0 : -EEXIST;
		} catch (const std::exception &) {
			return -ENOMEM;
		}
	}

	static int insert(void *table, uint64_t key)
	{
		return put(table, key, bench_value(key));
	}

	static int insert_object(void *table, void *obj)
	{
		const struct bench_kv *kv = static_cast<struct bench_kv *>(obj);

		return put(table, kv->key, kv->value);
	}
};
#endif

#endif /* RELHASH_BENCH_H */
