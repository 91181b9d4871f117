/*
 * tests/test-epoch-torture.c - an rcutorture-style torture test of the
 * grace-period engine (suite "epoch-torture").
 *
 * One shared pointer, `current`, to an object with a magic number and a
 * pipe count.  Readers (one per CPU, plus one) loop: enter a section, load
 * `current`, read its pipe count and magic, dawdle (sometimes nested,
 * sometimes preempted), read them again, leave.  Writers replace `current`
 * with a fresh object and retire the old one:
 *
 *   - the synchronize writer sets the old object's pipe count to 1, keeps
 *     it on its own list of retired objects, and after each
 *     relhash_synchronize() increments the pipe count of everything on that
 *     list; at PIPE_LEN the object is poisoned and freed (directly, or via
 *     relhash_call() or relhash_defer_free()).
 *   - the callback writer sets the pipe count to 1 and, by turns: queues a
 *     relhash_call() whose callback increments the pipe count and re-queues
 *     itself until PIPE_LEN, then poisons and frees (rcutorture's
 *     rcu_torture_cb); or queues a callback that poisons and frees at once;
 *     or hands the object to relhash_defer_free() at once (glibc's free
 *     overwrites the first words, where the magic is); or queues its
 *     poison-and-free with relhash_defer_local(), which the writer runs
 *     itself during later calls (and hands to the callback thread when it
 *     exits).
 *
 * A reader got its object from `current` inside its section, so the object
 * was retired after the section began, and every grace period that began
 * after the retirement must wait for the section.  The pipe count goes past
 * 1 only after such a grace period (each writer increments only what it
 * retired itself, after its own synchronize; each pipe callback runs a grace
 * period after it was queued).  So a reader that sees a pipe count >= 2, or
 * a magic number that is not LIVE, has caught a grace period that ended
 * while it still held the object.  A histogram of the counts seen is
 * printed: 0 (current), 1 (retired, grace period pending), >= 2 (errors).
 *
 * The test runs TORTURE_SECONDS (default 5) per mode, in membarrier mode and
 * in the fence fallback (RELHASH_NO_MEMBARRIER=1, set before the library's
 * first use in the forked test process).
 *
 * Showing that it can fail: build with -DTORTURE_BROKEN_SYNC, which makes
 * the synchronize writer's grace period a no-op, or -DTORTURE_BROKEN_CALL,
 * which makes the callback writer run its callbacks at once instead of
 * through relhash_call().  Both builds must fail.  Verified, in a separate
 * build directory:
 *   ../configure CFLAGS='-O2 -g -DTORTURE_BROKEN_SYNC'
 *   make tests/test-epoch-torture
 *   TORTURE_SECONDS=2 tests/test-epoch-torture     # exits 1
 * BROKEN_SYNC: both modes fail within 2 s, with tens of thousands of reads
 * seeing pipe counts >= 2 and thousands seeing poisoned objects (histogram
 * e.g. "0: 16118236 1: 38923 2: 7124 3: 3749 4: 6973 >=5: 5468").
 * BROKEN_CALL: both modes fail, with thousands of reads of freed objects.
 * A debug build with RH_BUG_LOCAL_EARLY on (local calls run without their
 * grace period; tests/negative-controls.sh has test-defer-local catch it)
 * fails here too: in 2 s, 37 and 42 reads saw a pipe count >= 2.
 * The normal build runs the correct version.
 */
#include "common.h"

#include <relhash/epoch.h>

#define PIPE_LEN 4 /* freed once the pipe count reaches this */
#define HIST_LEN (PIPE_LEN + 2)
#define MAGIC_LIVE 0x4c4956454f424a21ull /* "LIVEOBJ!" */
#define HANG_MS 10000u
#define MAX_READERS 16

struct tobj {
	uint64_t magic;      /* first: glibc's free overwrites it */
	uint64_t pipe_count;
	uint64_t serial;
	struct relhash_head rh;
	struct tobj *retired_next; /* the synchronize writer's list */
};

static struct tobj *current;

static struct {
	int stop;
	uint64_t allocated;    /* objects created */
	uint64_t released;     /* objects freed or handed to defer_free */
	uint64_t pipe_cb_runs; /* runs of the re-queuing pipe callback */
	uint64_t sync_gps;     /* synchronize calls by the writer */
	uint64_t retired_sync, retired_cb;
} g;

/* ---------------------------------------------------------------------- */
/* Objects                                                                 */

static struct tobj *obj_new(void)
{
	struct tobj *o = malloc(sizeof(*o));

	if (!o)
		abort();
	o->magic = MAGIC_LIVE;
	o->pipe_count = 0;
	o->serial = tst_inc(&g.allocated);
	o->retired_next = NULL;
	return o;
}

/* Publish a fresh object and return the one it replaced (now retired). */
static struct tobj *obj_replace(void)
{
	struct tobj *n = obj_new();
	struct tobj *old = __atomic_exchange_n(&current, n, __ATOMIC_ACQ_REL);

	__atomic_store_n(&old->pipe_count, 1, __ATOMIC_RELAXED);
	return old;
}

static void obj_poison_free(struct tobj *o)
{
	tst_poison(o, sizeof(*o));
	free(o);
	tst_inc(&g.released);
}

static void obj_bump(struct tobj *o, uint64_t *pc)
{
	*pc = __atomic_load_n(&o->pipe_count, __ATOMIC_RELAXED) + 1;
	__atomic_store_n(&o->pipe_count, *pc, __ATOMIC_RELAXED);
}

static void poison_free_cb(struct relhash_head *h)
{
	obj_poison_free((struct tobj *)((char *)h - offsetof(struct tobj, rh)));
}

static void poison_free_local(void *ptr)
{
	obj_poison_free(ptr);
}

#ifdef TORTURE_BROKEN_CALL
/* Broken on purpose: no grace period before the callback. */
#define torture_call(h, f) (f)(h)
#define torture_defer_local(f, p) (f)(p)
#else
#define torture_call(h, f) relhash_call((h), (f))
#define torture_defer_local(f, p) relhash_defer_local((f), (p))
#endif

/* rcutorture's rcu_torture_cb: one pipe stage per grace period. */
static void pipe_cb(struct relhash_head *h)
{
	struct tobj *o = (struct tobj *)((char *)h - offsetof(struct tobj, rh));
	uint64_t pc;

	tst_inc(&g.pipe_cb_runs);
	obj_bump(o, &pc);
	if (pc < PIPE_LEN)
		torture_call(&o->rh, pipe_cb);
	else
		obj_poison_free(o);
}

/* ---------------------------------------------------------------------- */
/* Readers                                                                 */

struct reader {
	pthread_t thr;
	unsigned id;
	uint64_t reads;
	uint64_t hist[HIST_LEN];
	uint64_t bad_pipe, bad_magic;
	/* The first error seen. */
	bool have_first;
	uint64_t first_pc1, first_pc2, first_m1, first_m2, first_serial;
};

static void spin(unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
}

static void *reader_main(void *arg)
{
	struct reader *r = arg;
	uint64_t rnd = 0x9e3779b97f4a7c15ull * (r->id + 1);

	while (!tst_load(&g.stop)) {
		uint64_t x = tst_rand(&rnd);
		uint64_t pc1, pc2, m1, m2, serial;
		struct tobj *p;

		relhash_read_lock();
		p = __atomic_load_n(&current, __ATOMIC_ACQUIRE);
		pc1 = __atomic_load_n(&p->pipe_count, __ATOMIC_RELAXED);
		m1 = __atomic_load_n(&p->magic, __ATOMIC_RELAXED);
		spin((unsigned)(x & 0xff));
		if ((x >> 8) % 16 == 0) {
			/* Nested section: ending it must not end ours. */
			relhash_read_lock();
			spin((unsigned)((x >> 16) & 0x3ff));
			relhash_read_unlock();
		}
		if ((x >> 24) % 64 == 0)
			spin(20000); /* a long section */
		if ((x >> 32) % 2048 == 0)
			tst_sleep_us(100); /* preempted inside */
		if ((x >> 44) % 512 == 0) {
			/* Queuing from inside a section never waits. */
			relhash_defer_free(malloc(16));
		}
		pc2 = __atomic_load_n(&p->pipe_count, __ATOMIC_RELAXED);
		m2 = __atomic_load_n(&p->magic, __ATOMIC_RELAXED);
		serial = __atomic_load_n(&p->serial, __ATOMIC_RELAXED);
		relhash_read_unlock();

		r->reads++;
		r->hist[pc2 < HIST_LEN - 1 ? pc2 : HIST_LEN - 1]++;
		if (pc1 >= 2 || pc2 >= 2)
			r->bad_pipe++;
		if (m1 != MAGIC_LIVE || m2 != MAGIC_LIVE)
			r->bad_magic++;
		if ((pc1 >= 2 || pc2 >= 2 || m1 != MAGIC_LIVE ||
		     m2 != MAGIC_LIVE) && !r->have_first) {
			r->have_first = true;
			r->first_pc1 = pc1;
			r->first_pc2 = pc2;
			r->first_m1 = m1;
			r->first_m2 = m2;
			r->first_serial = serial;
		}
	}
	return NULL;
}

/* ---------------------------------------------------------------------- */
/* Writers                                                                 */

#ifdef TORTURE_BROKEN_SYNC
/* Broken on purpose: no grace period at all. */
static int writer_synchronize(void)
{
	return 0;
}
#else
static int writer_synchronize(void)
{
	return relhash_synchronize();
}
#endif

/* Retire into a private list; bump the whole list after each grace period. */
static void *sync_writer_main(void *arg)
{
	struct tobj *retired = NULL;
	uint64_t n = 0;

	(void)arg;
	for (;;) {
		bool stopping = tst_load(&g.stop);
		struct tobj **pp;

		if (!stopping) {
			struct tobj *old = obj_replace();

			old->retired_next = retired;
			retired = old;
			tst_inc(&g.retired_sync);
		} else if (!retired) {
			break;
		}
		TST_THREAD_CHECK(writer_synchronize() == 0,
		                 "relhash_synchronize() failed");
		tst_inc(&g.sync_gps);
		for (pp = &retired; *pp;) {
			struct tobj *o = *pp;
			uint64_t pc;

			obj_bump(o, &pc);
			if (pc < PIPE_LEN) {
				pp = &o->retired_next;
				continue;
			}
			*pp = o->retired_next;
			/* Past PIPE_LEN - 1 grace periods: free, mixed ways. */
			switch (n++ % 3) {
			case 0:
				obj_poison_free(o);
				break;
			case 1:
				relhash_call(&o->rh, poison_free_cb);
				break;
			default:
				tst_poison(o, sizeof(*o));
				relhash_defer_free(o);
				tst_inc(&g.released);
				break;
			}
		}
		if (n % 8 == 0)
			sched_yield();
	}
	return NULL;
}

/* Retire through callbacks: pipe chains, poison-and-free, defer_free,
 * local calls. */
static void *cb_writer_main(void *arg)
{
	uint64_t n = 0;

	(void)arg;
	while (!tst_load(&g.stop)) {
		struct tobj *old = obj_replace();

		tst_inc(&g.retired_cb);
		switch (n++ % 4) {
		case 0:
			torture_call(&old->rh, pipe_cb);
			break;
		case 1:
			torture_call(&old->rh, poison_free_cb);
			break;
		case 2:
			torture_defer_local(poison_free_local, old);
			break;
		default:
#ifdef TORTURE_BROKEN_CALL
			obj_poison_free(old);
#else
			relhash_defer_free(old);
			tst_inc(&g.released);
#endif
			break;
		}
		if (n % 16 == 0)
			tst_sleep_us(20);
	}
	return NULL;
}

/* ---------------------------------------------------------------------- */
/* The test                                                                */

static unsigned torture_seconds(void)
{
	return tst_env_unsigned("TORTURE_SECONDS", 5);
}

/* The readers' counts, summed. */
struct reader_totals {
	uint64_t hist[HIST_LEN], reads, bad_pipe, bad_magic;
	const struct reader *first; /* the first reader with an error */
};

/* Run the readers and both writers for secs seconds, then stop them. */
static void run_threads(struct reader *rd, unsigned nreaders, unsigned secs)
{
	pthread_t sw, cw;

	for (unsigned i = 0; i < nreaders; i++) {
		rd[i].id = i;
		tst_thread_start(&rd[i].thr, reader_main, &rd[i]);
	}
	tst_thread_start(&sw, sync_writer_main, NULL);
	tst_thread_start(&cw, cb_writer_main, NULL);

	tst_sleep_ms(secs * 1000u);
	tst_store(&g.stop, 1);

	TST_JOIN(cw, HANG_MS, "callback writer did not stop");
	TST_JOIN(sw, HANG_MS, "synchronize writer did not drain and stop");
	for (unsigned i = 0; i < nreaders; i++)
		TST_JOIN(rd[i].thr, HANG_MS, "reader %u did not stop", i);
}

/* No reader left: free the last object, then let every chain of pipe
 * callbacks finish (they re-queue after a barrier began).  True when every
 * object allocated was freed within HANG_MS. */
static bool drain_all(void)
{
	struct tst_deadline d = tst_deadline_ms(HANG_MS);
	bool drained;

	obj_poison_free(current);
	current = NULL;
	do {
		ck_assert_int_eq(relhash_barrier(), 0);
		drained = tst_load(&g.released) == tst_load(&g.allocated);
	} while (!drained && !tst_expired(&d));
	return drained;
}

static void sum_readers(const struct reader *rd, unsigned nreaders,
                        struct reader_totals *tot)
{
	static const struct reader none; /* "first" when there was no error */

	memset(tot, 0, sizeof(*tot));
	tot->first = &none;
	for (unsigned i = 0; i < nreaders; i++) {
		tot->reads += rd[i].reads;
		tot->bad_pipe += rd[i].bad_pipe;
		tot->bad_magic += rd[i].bad_magic;
		for (int k = 0; k < HIST_LEN; k++)
			tot->hist[k] += rd[i].hist[k];
		if (tot->first == &none && rd[i].have_first)
			tot->first = &rd[i];
	}
}

static void print_report(const struct reader_totals *tot, unsigned nreaders,
                         double secs, const struct relhash_epoch_stats *s0,
                         const struct relhash_epoch_stats *s1)
{
	printf("[%s] %.1f s, %u readers: %llu reads; objects: %llu "
	       "(%llu retired by synchronize, %llu by callbacks); writer "
	       "synchronize calls %llu; pipe callbacks %llu; grace periods "
	       "%llu; back-pressure waits %llu\n", tst_mode_name, secs,
	       nreaders, (unsigned long long)tot->reads,
	       (unsigned long long)g.allocated,
	       (unsigned long long)g.retired_sync,
	       (unsigned long long)g.retired_cb,
	       (unsigned long long)g.sync_gps,
	       (unsigned long long)g.pipe_cb_runs,
	       (unsigned long long)(s1->grace_periods - s0->grace_periods),
	       (unsigned long long)(s1->backpressure_waits -
	                            s0->backpressure_waits));
	printf("[%s] pipe counts seen by readers:", tst_mode_name);
	for (int k = 0; k < HIST_LEN; k++)
		printf(" %s%d: %llu", k == HIST_LEN - 1 ? ">=" : "", k,
		       (unsigned long long)tot->hist[k]);
	printf("; errors: pipe >= 2 %llu, bad magic %llu\n",
	       (unsigned long long)tot->bad_pipe,
	       (unsigned long long)tot->bad_magic);
}

static void assert_outcome(const struct reader_totals *tot, bool drained)
{
	const struct reader *first = tot->first;

	tst_assert_no_thread_failures();
	ck_assert_msg(tot->bad_pipe == 0 && tot->bad_magic == 0,
	              "%s mode: readers caught grace periods that ended while "
	              "they held an object: %llu reads saw a pipe count >= 2, "
	              "%llu saw a bad magic (of %llu reads).  First: pipe "
	              "count %llu then %llu, magic %#llx then %#llx, serial "
	              "%llu", tst_mode_name, (unsigned long long)tot->bad_pipe,
	              (unsigned long long)tot->bad_magic,
	              (unsigned long long)tot->reads,
	              (unsigned long long)first->first_pc1,
	              (unsigned long long)first->first_pc2,
	              (unsigned long long)first->first_m1,
	              (unsigned long long)first->first_m2,
	              (unsigned long long)first->first_serial);
	ck_assert_msg(drained, "%llu objects allocated but only %llu freed "
	              "%u ms after the run (callbacks lost or stuck?)",
	              (unsigned long long)g.allocated,
	              (unsigned long long)g.released, HANG_MS);
	/* The run proved something only if it did enough of everything. */
	ck_assert_msg(tot->reads >= 10000 && g.sync_gps >= 20 &&
	              g.retired_cb >= 100 && g.pipe_cb_runs >= 100 &&
	              tot->hist[1] > 0,
	              "torture made too little progress to mean anything: "
	              "%llu reads, %llu writer grace periods, %llu objects "
	              "retired by callbacks, %llu pipe callbacks, %llu reads of "
	              "retired objects", (unsigned long long)tot->reads,
	              (unsigned long long)g.sync_gps,
	              (unsigned long long)g.retired_cb,
	              (unsigned long long)g.pipe_cb_runs,
	              (unsigned long long)tot->hist[1]);
}

START_TEST(torture)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned nreaders = (unsigned)(ncpu > 0 ? ncpu : 1) + 1;
	struct relhash_epoch_stats s0 = { .size = sizeof(s0) };
	struct relhash_epoch_stats s1 = { .size = sizeof(s1) };
	struct reader_totals tot;
	struct reader *rd;
	uint64_t t0;
	bool drained;

	if (nreaders > MAX_READERS)
		nreaders = MAX_READERS;
	rd = calloc(nreaders, sizeof(*rd));
	ck_assert_ptr_nonnull(rd);
	memset(&g, 0, sizeof(g));
	current = obj_new();
	relhash_epoch_stats(&s0);
	t0 = tst_now_ns();

	run_threads(rd, nreaders, torture_seconds());
	drained = drain_all();
	relhash_epoch_stats(&s1);
	sum_readers(rd, nreaders, &tot);
	print_report(&tot, nreaders, tst_ms_since(t0) / 1000.0, &s0, &s1);
	assert_outcome(&tot, drained);
	free(rd);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("epoch-torture");
	SRunner *sr = srunner_create(s);
	double timeout = torture_seconds() + 60.0;
	TCase *tc;

	setvbuf(stdout, NULL, _IOLBF, 0);
#if defined(TORTURE_BROKEN_SYNC) || defined(TORTURE_BROKEN_CALL)
	fprintf(stderr, "test-epoch-torture: built BROKEN on purpose: this "
	        "run must fail\n");
#endif

	tc = tcase_create("membarrier");
	tcase_add_checked_fixture(tc, tst_setup_membarrier, NULL);
	tcase_set_timeout(tc, timeout);
	tcase_add_test(tc, torture);
	suite_add_tcase(s, tc);

	/* The mode is chosen once per process: needs CK_FORK (default). */
	if (srunner_fork_status(sr) == CK_FORK) {
		tc = tcase_create("fence");
		tcase_add_checked_fixture(tc, tst_setup_fence, NULL);
		tcase_set_timeout(tc, timeout);
		tcase_add_test(tc, torture);
		suite_add_tcase(s, tc);
	}
	return tst_run(sr);
}
