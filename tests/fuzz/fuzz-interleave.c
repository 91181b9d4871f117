/*
 * tests/fuzz/fuzz-interleave.c - updates and lookups against a model while
 * another thread resizes the table, with the interleaving chosen by the
 * fuzzer's input.
 *
 * Three threads per input:
 * - a resizer runs relhash_resize() through a list of sizes from the input,
 *   over and over, until the main thread is done (at most MAX_RESIZES);
 * - the main thread runs inserts (odd keys through insert_or_get),
 *   removals, replacements, lookups (library and inline; single, hashed
 *   and bulk in scans), iterations, counts and read-side sections from the
 *   input;
 * - a reader (unless the input turns it off) looks up keys whose state the
 *   main thread guarantees: PINNED keys, inserted before the threads start
 *   and never removed (the main thread may replace them), and NEVER keys,
 *   never inserted.  Its lookups run concurrently with the main thread's
 *   updates and the resizer's steps, which the main thread's own lookups
 *   cannot (it does not update and look up at the same time).
 * The main thread is the only updater, so its model is exact at every
 * moment: a lookup of a key the model holds must return that very object, a
 * key it lacks must miss, an iteration must return each object exactly once
 * (none is inserted or removed during the walk), the count must match.  The
 * reader's lookups of pinned keys must hit an intact object with that key
 * (the old or the new one across a replacement), of never keys must miss.
 * After the threads are joined the table must hold exactly the model and
 * have the size of the last resize.
 *
 * Interleavings.  Each thread has its own schedule, a byte string from the
 * input consumed one byte per yield point that thread passes.  A byte says:
 * run on, sched_yield(), wait (at most WAIT_NS) until another thread (which
 * one: a bit of the byte) has passed 1-8 more yield points, or sleep a
 * little.  Yield points are: between the main thread's operations, between
 * the resizer's resizes, between the reader's lookups, at every node of
 * relhash_lookup_fast()'s walk (RELHASH__LOOKUP_STEP_HOOK, in this file),
 * and, when the library has the hook (HAVE_YIELD_SOURCE, below), at every
 * rh_debug_yield() inside the library: each family linked, spliced or
 * unzipped, each publication, each library lookup (and each node it walks)
 * and each update.
 *
 * HAVE_YIELD_SOURCE: the library's debug build exports
 *     void relhash__debug_set_yield_hook(void (*hook)(void));
 * and rh_debug_yield() calls hook() (instead of its random policy) when one
 * is set.  run-fuzz.sh defines HAVE_YIELD_SOURCE when src/base/debug.c has it.
 * Without it, the library's own random yields are turned on instead
 * (RELHASH_DEBUG_YIELD=1, unless FUZZ_NO_DEBUG_YIELD=1 is set).
 *
 * Input format: set; flags (bit0 fixed seed, bit1 min_size 1, bit2 no
 * reader); initial size; R-1 and R resize sizes; the number of pinned keys;
 * the three schedule lengths and the schedules (main, resizer, reader); a
 * head-start byte; then the main thread's operations (op byte and
 * operands).  FUZZ_TRACE=1 prints them.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#include <pthread.h>
#include <sched.h>
#include <time.h>

static void fz_yield_point(void);
/* Yield at every node relhash_lookup_fast() walks (include/relhash/inline.h)
 * and at every object fz_check_iter() takes. */
#define RELHASH__LOOKUP_STEP_HOOK() fz_yield_point()
#define FZ_ITER_STEP_HOOK() fz_yield_point()

#define MAX_RESIZE_SIZES 8

/* This input's plan, next to fuzz-common.h's fields of M. */
#define FZ_MODEL_FIELDS                                                     \
	size_t initial;                                                     \
	size_t sizes[MAX_RESIZE_SIZES];                                     \
	unsigned nsizes;                                                    \
	unsigned npinned; /* keys 0, 4, ..., 4 * (npinned - 1) */           \
	uint64_t reader_seed;

#include "fuzz-common.h"

#define MAX_OPS 600
#ifndef MAX_RESIZES
#define MAX_RESIZES 40
#endif
#define MAX_READS 20000
#define MAX_DEPTH 2
#ifndef WAIT_NS
#define WAIT_NS 200000ull /* longest wait for another thread */
#endif
#define NEVER_FIRST 248 /* keys 248..255 are never inserted */

#define ld(p) __atomic_load_n((p), __ATOMIC_SEQ_CST)
#define st(p, v) __atomic_store_n((p), (v), __ATOMIC_SEQ_CST)

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---------------------------------------------------------------------- */
/* Schedules                                                               */

enum { ROLE_MAIN, ROLE_RESIZER, ROLE_READER, NROLES };

static __thread int role = -1; /* threads of ours; the library's are -1 */

static struct {
	const uint8_t *p;
	size_t n, i; /* only its own thread touches i */
} sched[NROLES];
static uint64_t steps[NROLES]; /* yield points passed, per role */
static int active[NROLES];     /* the role's thread is still running */
static int started[NROLES];    /* the role's thread has begun */

/* Wait until role other has passed nsteps more yield points (or has
 * finished, or max_ns have passed: waits never deadlock). */
static void wait_for(int other, unsigned nsteps, uint64_t max_ns)
{
	uint64_t target = ld(&steps[other]) + nsteps;
	uint64_t end = now_ns() + max_ns;

	while (ld(&active[other]) && ld(&steps[other]) < target &&
	       now_ns() < end)
		sched_yield();
}

static void fz_yield_point(void)
{
	int r = role;
	uint8_t b;

	if (r < 0)
		return;
	__atomic_add_fetch(&steps[r], 1, __ATOMIC_SEQ_CST);
	if (sched[r].i >= sched[r].n)
		return;
	b = sched[r].p[sched[r].i++];
	if (b < 0x70)
		return;
	if (b < 0xa0) {
		sched_yield();
	} else if (b < 0xf0) {
		wait_for((r + 1 + ((b >> 3) & 1)) % NROLES, (b & 7) + 1, WAIT_NS);
	} else {
		struct timespec ts = { 0, (long)(b - 0xef) * 10000 };
		nanosleep(&ts, NULL);
	}
}

/* ---------------------------------------------------------------------- */
/* Shared state                                                            */

static int stop;             /* main -> resizer, reader */
static size_t last_size;     /* resizer: the last size it set */
static unsigned resizes_done;
static unsigned long reads_done;

/* After every divergence report: how far the resizer has got. */
static void fail_context(void)
{
	fprintf(stderr, "%s: resizes done: %u\n", fz_harness, ld(&resizes_done));
}

static bool is_pinned(uint32_t k)
{
	return k % 4 == 0 && k / 4 < M.npinned;
}

static bool is_never(uint32_t k)
{
	return k >= NEVER_FIRST;
}

/* ---------------------------------------------------------------------- */
/* The resizer and the reader                                              */

static void *resizer(void *arg)
{
	unsigned i = 0;
	int r;

	(void)arg;
	role = ROLE_RESIZER;
	st(&started[ROLE_RESIZER], 1);
	while (!ld(&stop) && i < MAX_RESIZES) {
		size_t n = M.sizes[i++ % M.nsizes];

		r = relhash_resize(M.t, n);
		if (r != 0)
			fz_fail(__LINE__, "relhash_resize(%zu) on the resizer thread "
			        "returned %d", n, r);
		st(&last_size, n);
		__atomic_add_fetch(&resizes_done, 1, __ATOMIC_SEQ_CST);
		fz_yield_point();
	}
	st(&active[ROLE_RESIZER], 0);
	return NULL;
}

/* Is o an intact object with key k?  Reader thread, inside a section. */
static bool reader_intact(const struct fz_obj *o, uint32_t k)
{
	uint64_t magic = __atomic_load_n(&o->magic, __ATOMIC_RELAXED);
	unsigned char kb[16];
	size_t len = fz_set(M.set)->key_len;

	if (magic != FZ_LIVE && magic != FZ_RETIRED)
		return false;
	if (o->id != k)
		return false;
	fz_key_bytes(k, len, kb);
	return memcmp(kb, o->key, len) == 0;
}

static void *reader(void *arg)
{
	uint64_t x = M.reader_seed | 1;
	unsigned long n = 0;
	unsigned in_section = 0;

	(void)arg;
	role = ROLE_READER;
	st(&started[ROLE_READER], 1);
	while (!ld(&stop) && n++ < MAX_READS) {
		unsigned char kb[16];
		struct fz_obj *r;
		uint32_t k;
		bool fast;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		if (M.npinned && (x & 3) != 3)
			k = 4 * (uint32_t)((x >> 8) % M.npinned);
		else
			k = NEVER_FIRST + (uint32_t)((x >> 8) % (FZ_NKEYS - NEVER_FIRST));
		fast = (x >> 4) & 1;
		/* Sometimes one section spans several lookups. */
		if (!in_section) {
			relhash_read_lock();
			in_section = (x >> 5) & 1 ? 1 + (unsigned)((x >> 6) & 7) : 1;
		}
		r = fast ? fz_lookup_fast(M.set, M.t, fz_key(M.set, k, kb))
		         : relhash_lookup(M.t, fz_key(M.set, k, kb));
		if (is_never(k) && r)
			fz_fail(__LINE__, "reader: %s(key %u, never inserted) = %p",
			        fast ? "relhash_lookup_fast" : "relhash_lookup", k,
			        (void *)r);
		if (!is_never(k) && !r)
			fz_fail(__LINE__, "reader: %s(key %u, always present) missed "
			        "(resizes done %u)", fast ? "relhash_lookup_fast" :
			        "relhash_lookup", k, ld(&resizes_done));
		if (r && !reader_intact(r, k))
			fz_fail(__LINE__, "reader: lookup(key %u) returned a damaged "
			        "object", k);
		if (--in_section == 0)
			relhash_read_unlock();
		fz_yield_point();
	}
	if (in_section)
		relhash_read_unlock();
	st(&reads_done, n);
	st(&active[ROLE_READER], 0);
	return NULL;
}

/* ---------------------------------------------------------------------- */
/* Updates (main thread)                                                   */

/* Odd keys go through relhash_insert_or_get(). */
static void do_insert(uint32_t k)
{
	if (is_never(k))
		return;
	if (k & 1)
		fz_insert_or_get(k, true);
	else
		fz_insert(k);
}

static void do_remove(uint32_t k, unsigned how)
{
	if (!M.present[k] || is_pinned(k))
		return;
	fz_retire(fz_remove(k, how & 2), how >> 2);
}

static void do_replace(uint32_t k, unsigned how)
{
	if (M.present[k])
		fz_replace(k, how);
}

/* ---------------------------------------------------------------------- */
/* Per input                                                               */

/*
 * One function per operation: it reads the operation's argument bytes (in
 * this order: the corpus depends on it), logs what it does and does it.
 */
static void op_insert(struct fz_in *in)
{
	uint32_t k = fz_u8(in);

	fz_log("insert key %u%s", k, is_never(k) ? " (never key: skip)" : "");
	do_insert(k);
}

static void op_remove(struct fz_in *in)
{
	uint32_t k = fz_u8(in);
	uint8_t b = fz_u8(in);

	fz_log("remove key %u%s%s", k,
	       !M.present[k] ? " (absent: skip)" :
	       is_pinned(k) ? " (pinned: skip)" : "",
	       (b & 4) ? ", retire by relhash_call" : "");
	do_remove(k, b);
}

static void op_replace(struct fz_in *in)
{
	uint32_t k = fz_u8(in);
	uint8_t b = fz_u8(in);

	fz_log("replace key %u%s", k, M.present[k] ? "" : " (absent: skip)");
	do_replace(k, b);
}

static void op_iterate(struct fz_in *in)
{
	fz_log("iterate (model: %zu)", M.count);
	fz_check_iter();
}

static void op_count(struct fz_in *in)
{
	fz_log("count (model: %zu)", M.count);
	fz_check_count();
}

static void op_read_lock(struct fz_in *in)
{
	if (M.depth < MAX_DEPTH) {
		fz_log("read_lock");
		relhash_read_lock();
		M.depth++;
	}
}

static void op_read_unlock(struct fz_in *in)
{
	if (M.depth) {
		fz_log("read_unlock");
		fz_read_unlock();
	}
}

static void op_wait(struct fz_in *in)
{
	uint8_t b = fz_u8(in);

	fz_log("wait for the %s to pass %u yield points",
	       (b & 0x80) ? "reader" : "resizer", b % 32 + 1);
	wait_for((b & 0x80) ? ROLE_READER : ROLE_RESIZER, b % 32 + 1,
	         4 * WAIT_NS);
}

static void op_fill(struct fz_in *in)
{
	uint32_t k = fz_u8(in), n = fz_u8(in) % 64 + 1, i;

	fz_log("fill keys %u..%u", k, (k + n - 1) % FZ_NKEYS);
	for (i = 0; i < n; i++) {
		do_insert((k + i) % FZ_NKEYS);
		fz_yield_point();
	}
}

static void op_drain(struct fz_in *in)
{
	uint32_t k = fz_u8(in), n = fz_u8(in) % 64 + 1, i;

	fz_log("drain keys %u..%u (not the pinned ones)", k,
	       (k + n - 1) % FZ_NKEYS);
	for (i = 0; i < n; i++) {
		do_remove((k + i) % FZ_NKEYS, i);
		fz_yield_point();
	}
}

static void op_synchronize(struct fz_in *in)
{
	fz_log("synchronize%s", M.depth ? " (inside: EDEADLK)" : "");
	FZ_EXPECT_RET(relhash_synchronize(), M.depth ? -EDEADLK : 0,
	              "relhash_synchronize");
}

/* Every key, in one read-side section: spans resize steps. */
static void op_scan(struct fz_in *in)
{
	uint32_t k;

	fz_log("scan every key in one read-side section");
	relhash_read_lock();
	M.depth++;
	for (k = 0; k < FZ_NKEYS; k++)
		fz_check_lookup(k, k & 1);
	/* And in bulk, both forms, also spanning resize steps. */
	for (k = 0; k < FZ_NKEYS; k += FZ_BULK_MAX)
		fz_check_bulk(k, FZ_BULK_MAX, 1, (k / FZ_BULK_MAX) & 1);
	fz_read_unlock();
}

/*
 * The operations by number: an input byte selects ops[byte % NOPS].  The
 * numbers are the corpus's encoding (tests/fuzz/make-seeds.sh writes them
 * in hex): add operations at the end, never reorder.
 */
static void (*const ops[])(struct fz_in *in) = {
	/* 0x00 */ op_insert, op_remove, op_replace, fz_op_lookup,
	/* 0x04 */ fz_op_lookup_fast, op_iterate, op_count, op_read_lock,
	/* 0x08 */ op_read_unlock, op_wait, op_fill, op_drain,
	/* 0x0c */ op_synchronize, op_scan,
};
#define NOPS (sizeof(ops) / sizeof(ops[0]))

static void run_op(struct fz_in *in, uint8_t opb)
{
	ops[opb % NOPS](in);
}

static void destroy_free(void *obj, void *arg)
{
	struct fz_obj *o = obj;

	(void)arg;
	if (o->id >= FZ_NKEYS || M.present[o->id] != o)
		fz_fail(__LINE__, "relhash_destroy passed %p, not in the model", obj);
	M.present[o->id] = NULL;
	fz_obj_poison_free(o);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
#ifdef HAVE_YIELD_SOURCE
	relhash__debug_set_yield_hook(fz_yield_point);
#else
	if (!getenv("FUZZ_NO_DEBUG_YIELD"))
		setenv("RELHASH_DEBUG_YIELD", "1", 0);
#endif
	return 0;
}

/* Take the next schedule (its length was read earlier) from the input. */
static void take_schedule(struct fz_in *in, int r, size_t len)
{
	size_t left = in->n - in->i;

	sched[r].p = in->p + in->i;
	sched[r].n = len < left ? len : left;
	sched[r].i = 0;
	in->i += sched[r].n;
}

/*
 * Decode the setup from the input: parameter set and flags, the initial
 * size, the resizer's sizes, the pinned keys, and each role's schedule.
 * Returns whether the reader thread takes part.
 */
static bool decode_setup(struct fz_in *in, struct relhash_params *p)
{
	uint8_t setb = fz_u8(in), fl = fz_u8(in);
	size_t len[NROLES];
	unsigned i;

	M.set = setb % FZ_NSETS;
	*p = *fz_set(M.set);
	p->seed = (fl & 1) ? 0x5eed0000u + setb : 0;
	p->min_size = (fl & 2) ? 1 : 0; /* 1: tables of 1 and 2 buckets */
	M.initial = (size_t)1 << ((fl & 2 ? 0 : 2) + fz_u8(in) % 11);
	p->initial_size = M.initial;
	M.nsizes = fz_u8(in) % MAX_RESIZE_SIZES + 1;
	for (i = 0; i < M.nsizes; i++)
		M.sizes[i] = (size_t)1 << ((fl & 2 ? 0 : 2) + fz_u8(in) % 11);
	M.npinned = fz_u8(in) % 65;
	M.reader_seed = 0x9e3779b97f4a7c15ull ^ ((uint64_t)setb << 8 | fl);
	for (i = 0; i < NROLES; i++)
		len[i] = fz_u8(in);
	for (i = 0; i < NROLES; i++)
		take_schedule(in, (int)i, len[i]);
	return !(fl & 4);
}

static void trace_setup(const struct relhash_params *p, bool with_reader)
{
	unsigned i;

	if (!fz_tracing())
		return;
	fz_log("create: set %u (%s) seed %#llx initial %zu min %zu", M.set,
	       fz_set_name(M.set), (unsigned long long)p->seed, M.initial,
	       p->min_size ? p->min_size : 4);
	for (i = 0; i < M.nsizes; i++)
		fz_log("resizer size %u: %zu", i, M.sizes[i]);
	fz_log("reader: %s, %u pinned keys (0, 4, ...), never keys %u..%u",
	       with_reader ? "on" : "off", M.npinned, NEVER_FIRST,
	       FZ_NKEYS - 1);
	fz_log("schedules: main %zu bytes, resizer %zu bytes, reader %zu "
	       "bytes", sched[ROLE_MAIN].n, sched[ROLE_RESIZER].n,
	       sched[ROLE_READER].n);
}

/* The table, with the pinned keys in it. */
static void create_table(const struct relhash_params *p)
{
	unsigned i;

	M.t = relhash_create(p);
	if (!M.t)
		fz_fail(__LINE__, "relhash_create(valid params) failed: errno %d",
		        errno);
	FZ_CHECK(relhash_size(M.t) == M.initial);
	for (i = 0; i < M.npinned; i++)
		do_insert(4 * i);
}

/* Start the resizer (and the reader), and wait until they run. */
static void start_threads(pthread_t *tid_resizer, pthread_t *tid_reader,
                          bool with_reader)
{
	uint64_t end;
	unsigned i;

	role = ROLE_MAIN;
	for (i = 0; i < NROLES; i++) {
		st(&steps[i], 0);
		st(&active[i], 1);
		st(&started[i], i == ROLE_MAIN);
	}
	st(&stop, 0);
	st(&last_size, M.initial);
	st(&resizes_done, 0);
	st(&reads_done, 0);
	if (pthread_create(tid_resizer, NULL, resizer, NULL) != 0)
		abort();
	if (with_reader) {
		if (pthread_create(tid_reader, NULL, reader, NULL) != 0)
			abort();
	} else {
		st(&active[ROLE_READER], 0);
		st(&started[ROLE_READER], 1);
	}
	/* Begin together (a bounded wait, like every wait here). */
	end = now_ns() + 20000000u;
	while ((!ld(&started[ROLE_RESIZER]) || !ld(&started[ROLE_READER])) &&
	       now_ns() < end)
		sched_yield();
}

/* Stop the threads; then the table must equal the model, and
 * relhash_destroy() hand back every object of the model. */
static void finish(pthread_t tid_resizer, pthread_t tid_reader,
                   bool with_reader)
{
	size_t k;

	while (M.depth)
		fz_read_unlock();
	st(&active[ROLE_MAIN], 0);
	st(&stop, 1);
	pthread_join(tid_resizer, NULL);
	if (with_reader)
		pthread_join(tid_reader, NULL);
	role = -1;
	fz_log("end of input: %u resizes done, last size %zu, %lu reader lookups",
	       ld(&resizes_done), ld(&last_size), ld(&reads_done));

	if (relhash_size(M.t) != ld(&last_size))
		fz_fail(__LINE__, "after the resizer: %zu buckets, its last resize "
		        "was to %zu", relhash_size(M.t), ld(&last_size));
	fz_verify_all();
	relhash_destroy(M.t, destroy_free, NULL);
	for (k = 0; k < FZ_NKEYS; k++)
		if (M.present[k])
			fz_fail(__LINE__, "relhash_destroy did not pass key %zu", k);
	fz_check_barrier();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_in in = { data, size, 0 };
	struct relhash_params p;
	pthread_t tid_resizer, tid_reader;
	unsigned ops = 0;
	bool with_reader;
	uint8_t b;

	fz_harness = "fuzz-interleave";
	fz_fail_context = fail_context;
	fz_opno = 0;
	if (size < 4)
		return 0;
	memset(&M, 0, sizeof(M));
	with_reader = decode_setup(&in, &p);
	trace_setup(&p, with_reader);
	create_table(&p);
	start_threads(&tid_resizer, &tid_reader, with_reader);
	/* A head start for the resizer, chosen by the input. */
	b = fz_u8(&in);
	if (b & 1)
		wait_for(ROLE_RESIZER, b % 16 + 1, 4 * WAIT_NS);

	while (fz_more(&in) && ops++ < MAX_OPS) {
		fz_opno = ops;
		run_op(&in, fz_u8(&in));
		fz_yield_point();
	}
	fz_opno = ops + 1;
	finish(tid_resizer, tid_reader, with_reader);
	return 0;
}
