/*
 * tests/test-iter.c - iteration while the table resizes and changes.
 *
 * The guarantee (relhash/table.h): inside one read-side critical section,
 * relhash_iter_first/next return every object that stays in the table for
 * the whole walk exactly once, even while the table resizes; objects
 * inserted or removed meanwhile may or may not be returned.
 *
 * Setup: NSTABLE objects that are never touched, NCHURN keys that writer
 * threads insert, remove and replace all the time (new objects each time,
 * freed with relhash_defer_free), one resizer thread that keeps changing the
 * size (doubling and halving, and wide jumps such as 4 <-> 65536), and
 * iterator threads that walk the whole table, each walk inside one section.
 *
 * Every walk must return each stable object exactly once (a missing or a
 * repeated key fails, naming the key, the walk and the sizes seen), never
 * return an object twice, never return anything that is not a live test
 * object (magic check; keys outside the inserted ranges), and end.  ASan
 * builds also catch a walk that touches a freed object.
 *
 * RELHASH_ITER_MS sets the duration of each test (default 2500 ms).
 */
#include "common.h"

#include <relhash.h>

#define NSTABLE 3000u
#define NCHURN 1024u   /* keys NSTABLE .. NSTABLE+NCHURN-1 */
#define NWRITERS 2u
#define NITERS 2u
#define MAGIC 0x697465722d6f626aull
#define HANG_MS 20000u

struct iobj {
	uint64_t key;
	uint64_t magic; /* MAGIC ^ key while alive */
	struct relhash_node node;
};

/* A weak hash: 512 distinct values, so chains stay long at every size and
 * sibling buckets interleave heavily while unzipping. */
static uint64_t hash_weak(const void *key, size_t len, uint64_t seed)
{
	uint64_t k;

	(void)len;
	memcpy(&k, key, 8);
	return tst_mix64(k ^ seed) & 0x1ff;
}

static const struct relhash_params params_default = {
	.node_offset = offsetof(struct iobj, node),
	.key_offset = offsetof(struct iobj, key),
	.key_len = 8,
	.initial_size = 256,
	.min_size = 4,
	.max_size = 65536,
};

static const struct relhash_params params_weak = {
	.node_offset = offsetof(struct iobj, node),
	.key_offset = offsetof(struct iobj, key),
	.key_len = 8,
	.hashfn = hash_weak,
	.initial_size = 256,
	.min_size = 4,
	.max_size = 65536,
};

struct shared {
	struct relhash_table *t;
	struct iobj *stable;
	int stop;
	uint64_t seed;
};

static struct iobj *obj_new(uint64_t key)
{
	struct iobj *o = malloc(sizeof(*o));

	if (o) {
		o->key = key;
		o->magic = MAGIC ^ key;
	}
	return o;
}

/* ---------------------------------------------------------------------- */
/* Writers                                                                 */

struct writer {
	struct shared *sh;
	pthread_t thr;
	unsigned id;
	uint64_t updates;
};

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	struct shared *sh = w->sh;
	unsigned per = NCHURN / NWRITERS;
	uint64_t first = NSTABLE + (uint64_t)w->id * per;
	struct iobj **mine = calloc(per, sizeof(*mine));
	uint64_t rng = sh->seed ^ (0x9e3779b97f4a7c15ull * (w->id + 1)) ^ 1;

	TST_THREAD_CHECK(mine != NULL, "writer %u: calloc failed", w->id);
	if (!mine)
		return NULL;
	while (!tst_load(&sh->stop)) {
		uint64_t r = tst_rand(&rng);
		unsigned k = (unsigned)(r % per);
		bool in_section = (r >> 32) % 4 == 0;
		struct iobj *o = mine[k], *n;
		int ret;

		if (in_section)
			relhash_read_lock();
		if (!o) {
			n = obj_new(first + k);
			TST_THREAD_CHECK(n != NULL, "malloc failed");
			ret = relhash_insert(sh->t, &n->node);
			TST_THREAD_CHECK(ret == 0, "writer %u: insert key %llu: %d",
			                 w->id, (unsigned long long)(first + k), ret);
			mine[k] = n;
		} else if ((r >> 40) & 1) {
			ret = relhash_remove(sh->t, &o->node);
			TST_THREAD_CHECK(ret == 0, "writer %u: remove key %llu: %d",
			                 w->id, (unsigned long long)o->key, ret);
			mine[k] = NULL;
			relhash_defer_free(o);
		} else {
			n = obj_new(first + k);
			TST_THREAD_CHECK(n != NULL, "malloc failed");
			ret = relhash_replace(sh->t, &o->node, &n->node);
			TST_THREAD_CHECK(ret == 0, "writer %u: replace key %llu: %d",
			                 w->id, (unsigned long long)o->key, ret);
			mine[k] = n;
			relhash_defer_free(o);
		}
		if (in_section)
			relhash_read_unlock();
		w->updates++;
		if (tst_load(&tst_failures.count))
			break;
	}
	/* Leave the churn objects in the table: destroy frees them. */
	free(mine);
	return NULL;
}

/* ---------------------------------------------------------------------- */
/* Resizer                                                                 */

struct resizer {
	struct shared *sh;
	pthread_t thr;
	uint64_t calls;
};

static void *resizer_main(void *arg)
{
	/* Doubling/halving, the wide jumps, and a few in between. */
	static const size_t seq[] = { 4096, 256, 4096, 256, 512, 1024, 8, 2048,
	                              128, 64, 16384, 256, 65536, 4, 4096, 16,
	                              65536, 4, 32768, 256 };
	struct resizer *z = arg;
	struct shared *sh = z->sh;
	unsigned k = 0;

	while (!tst_load(&sh->stop)) {
		size_t n = seq[k++ % (sizeof(seq) / sizeof(seq[0]))];
		int ret = relhash_resize(sh->t, n);

		TST_THREAD_CHECK(ret == 0, "resize to %zu returned %d", n, ret);
		tst_inc(&z->calls);
		if (tst_load(&tst_failures.count))
			break;
	}
	return NULL;
}

/* ---------------------------------------------------------------------- */
/* Iterators                                                               */

/* A set of pointers, emptied in O(1) per walk by bumping the generation. */
#define PSET_SIZE 16384u /* power of two, > 2 * objects a walk can return */

struct pset {
	uintptr_t key[PSET_SIZE];
	uint32_t gen[PSET_SIZE];
	uint32_t cur;
};

/* false if p was already in the set. */
static bool pset_add(struct pset *s, const void *p)
{
	uintptr_t k = (uintptr_t)p;
	size_t i = (size_t)tst_mix64(k) & (PSET_SIZE - 1);

	for (;; i = (i + 1) & (PSET_SIZE - 1)) {
		if (s->gen[i] != s->cur) {
			s->gen[i] = s->cur;
			s->key[i] = k;
			return true;
		}
		if (s->key[i] == k)
			return false;
	}
}

struct iterator {
	struct shared *sh;
	pthread_t thr;
	unsigned id;
	uint64_t walks, overlapping, objects;
	uint32_t seen[NSTABLE]; /* walk number in which key was last seen */
	struct pset set;
};

/* One walk: its number, what it returned, and the table around it. */
struct walk {
	uint32_t number;
	uint64_t n, nstable;     /* objects returned, of them stable */
	size_t size0, size1;     /* the table's size at the start, the end */
	struct relhash_table_stats s0, s1;
};

/* More than this many objects in one walk means it does not end. */
#define WALK_LIMIT (4 * (NSTABLE + NCHURN))

/* The walk returned o: a live test object, not returned before, and a
 * stable key's own object.  False (the failure recorded): stop the walk. */
static bool walk_check(struct iterator *it, struct walk *w, struct iobj *o)
{
	struct shared *sh = it->sh;
	uint64_t key = o->key;

	if (++w->n > WALK_LIMIT) {
		TST_THREAD_CHECK(false, "iterator %u, walk %u: more than "
		                 "%llu objects: the walk does not end", it->id,
		                 w->number, (unsigned long long)WALK_LIMIT);
		return false;
	}
	if (o->magic != (MAGIC ^ key) || key >= NSTABLE + NCHURN) {
		TST_THREAD_CHECK(false, "iterator %u, walk %u: returned "
		                 "%p with key %llu, magic %llx: not a "
		                 "live test object (never-inserted key or "
		                 "freed memory)", it->id, w->number, (void *)o,
		                 (unsigned long long)key,
		                 (unsigned long long)o->magic);
		return false;
	}
	if (!pset_add(&it->set, o)) {
		TST_THREAD_CHECK(false, "iterator %u, walk %u: object "
		                 "with key %llu (%s) returned twice (size "
		                 "%zu at the start)", it->id, w->number,
		                 (unsigned long long)key,
		                 key < NSTABLE ? "stable" : "churn", w->size0);
		return false;
	}
	if (key < NSTABLE) {
		if (o != &sh->stable[key]) {
			TST_THREAD_CHECK(false, "iterator %u, walk %u: stable "
			                 "key %llu returned as %p, not %p",
			                 it->id, w->number, (unsigned long long)key,
			                 (void *)o, (void *)&sh->stable[key]);
			return false;
		}
		it->seen[key] = w->number;
		w->nstable++;
	}
	return true;
}

/* One walk over the whole table in one read-side section; false: it
 * returned something it must not have (the failure is recorded). */
static bool iterator_walk(struct iterator *it, struct walk *w)
{
	struct shared *sh = it->sh;
	struct relhash_iter iter;
	struct iobj *o;
	bool ok = true;

	if (++it->set.cur == 0) { /* wrapped: start afresh */
		memset(it->set.gen, 0, sizeof(it->set.gen));
		it->set.cur = 1;
	}
	relhash_read_lock();
	w->s0.size = sizeof(w->s0);
	relhash_table_stats(sh->t, &w->s0);
	w->size0 = relhash_size(sh->t);
	for (o = relhash_iter_first(sh->t, &iter); o;
	     o = relhash_iter_next(&iter)) {
		ok = walk_check(it, w, o);
		if (!ok)
			break; /* o's link may be garbage too */
	}
	w->size1 = relhash_size(sh->t);
	w->s1.size = sizeof(w->s1);
	relhash_table_stats(sh->t, &w->s1);
	relhash_read_unlock();
	return ok;
}

/* A walk that returned fewer than every stable object: say which. */
static void report_missing(const struct iterator *it, const struct walk *w)
{
	unsigned k;

	for (k = 0; k < NSTABLE; k++)
		if (it->seen[k] != w->number)
			break;
	TST_THREAD_CHECK(false, "iterator %u, walk %u: returned %llu "
	                 "of %u stable objects; first missing key %u "
	                 "(size %zu at the start of the walk, %zu at "
	                 "the end; unzip passes %llu..%llu)", it->id,
	                 w->number, (unsigned long long)w->nstable, NSTABLE, k,
	                 w->size0, w->size1,
	                 (unsigned long long)w->s0.unzip_passes,
	                 (unsigned long long)w->s1.unzip_passes);
}

static void *iterator_main(void *arg)
{
	struct iterator *it = arg;
	struct shared *sh = it->sh;

	while (!tst_load(&sh->stop) && !tst_load(&tst_failures.count)) {
		struct walk w = { .number = (uint32_t)it->walks + 1 };

		if (!iterator_walk(it, &w))
			break;
		if (w.nstable != NSTABLE) {
			report_missing(it, &w);
			break;
		}
		it->walks++;
		it->objects += w.n;
		if (w.size0 != w.size1 ||
		    w.s0.unzip_passes != w.s1.unzip_passes ||
		    w.s0.resizes != w.s1.resizes)
			tst_inc(&it->overlapping);
	}
	return NULL;
}

/* ---------------------------------------------------------------------- */

static uint64_t overlapping_walks(struct iterator **it)
{
	uint64_t n = 0;
	unsigned i;

	for (i = 0; i < NITERS; i++)
		n += tst_load(&it[i]->overlapping);
	return n;
}

static void free_churn(void *obj, void *arg)
{
	struct iobj *o = obj;

	if (o->key >= NSTABLE) {
		o->magic = 0;
		free(o);
	}
	(*(size_t *)arg)++;
}

/* The table with every stable object in it. */
static void shared_init(struct shared *sh, const struct relhash_params *params)
{
	unsigned i;

	memset(sh, 0, sizeof(*sh));
	sh->seed = tst_now_ns() | 1;
	sh->t = relhash_create(params);
	ck_assert_msg(sh->t, "relhash_create: %s", strerror(errno));
	sh->stable = calloc(NSTABLE, sizeof(*sh->stable));
	ck_assert(sh->stable);
	for (i = 0; i < NSTABLE; i++) {
		sh->stable[i].key = i;
		sh->stable[i].magic = MAGIC ^ i;
		ck_assert_int_eq(relhash_insert(sh->t, &sh->stable[i].node), 0);
	}
}

/* The threads of a run. */
struct crew {
	struct iterator *it[NITERS];
	struct writer w[NWRITERS];
	struct resizer z;
};

static void crew_start(struct crew *c, struct shared *sh)
{
	unsigned i;

	for (i = 0; i < NITERS; i++) {
		c->it[i] = calloc(1, sizeof(*c->it[i]));
		ck_assert(c->it[i]);
		c->it[i]->sh = sh;
		c->it[i]->id = i;
		tst_thread_start(&c->it[i]->thr, iterator_main, c->it[i]);
	}
	for (i = 0; i < NWRITERS; i++) {
		memset(&c->w[i], 0, sizeof(c->w[i]));
		c->w[i].sh = sh;
		c->w[i].id = i;
		tst_thread_start(&c->w[i].thr, writer_main, &c->w[i]);
	}
	memset(&c->z, 0, sizeof(c->z));
	c->z.sh = sh;
	tst_thread_start(&c->z.thr, resizer_main, &c->z);
}

static void crew_stop(struct crew *c, struct shared *sh)
{
	unsigned i;

	tst_store(&sh->stop, 1);
	for (i = 0; i < NITERS; i++)
		TST_JOIN(c->it[i]->thr, HANG_MS, "iterator %u did not stop", i);
	for (i = 0; i < NWRITERS; i++)
		TST_JOIN(c->w[i].thr, HANG_MS, "writer %u did not stop", i);
	TST_JOIN(c->z.thr, HANG_MS, "resizer did not stop (a resize hangs?)");
}

/* Print the run's figures; fail unless it walked, resized, and had walks
 * overlap resizes. */
static void assert_outcome(const struct crew *c, struct shared *sh,
                           const char *name, uint64_t t0)
{
	uint64_t walks = 0, overlapping = 0, objects = 0, updates = 0;
	struct relhash_table_stats st = { .size = sizeof(st) };
	unsigned i;

	relhash_table_stats(sh->t, &st);
	for (i = 0; i < NITERS; i++) {
		walks += c->it[i]->walks;
		overlapping += c->it[i]->overlapping;
		objects += c->it[i]->objects;
	}
	for (i = 0; i < NWRITERS; i++)
		updates += c->w[i].updates;
	printf("iter %-8s %.0f ms: %llu walks (%llu overlapping a resize, "
	       "%.0f objects each), %llu resize calls, %llu size changes, %llu "
	       "unzip passes, %llu grace periods, %llu updates\n", name,
	       tst_ms_since(t0), (unsigned long long)walks,
	       (unsigned long long)overlapping,
	       walks ? (double)objects / (double)walks : 0.0,
	       (unsigned long long)c->z.calls, (unsigned long long)st.resizes,
	       (unsigned long long)st.unzip_passes,
	       (unsigned long long)st.grace_periods,
	       (unsigned long long)updates);
	fflush(stdout);
	tst_assert_no_thread_failures();
	ck_assert_msg(walks >= 10, "only %llu walks completed",
	              (unsigned long long)walks);
	ck_assert_msg(c->z.calls >= 2, "only %llu resizes completed",
	              (unsigned long long)c->z.calls);
	ck_assert_msg(overlapping > 0, "no walk overlapped a resize: the test "
	              "did not test anything");
}

static void run(const struct relhash_params *params, const char *name)
{
	unsigned ms = tst_env_unsigned("RELHASH_ITER_MS", 2500), i;
	struct shared sh;
	struct crew c;
	size_t freed = 0;
	uint64_t t0;

	tst_reset_thread_failures();
	shared_init(&sh, params);
	t0 = tst_now_ns();
	crew_start(&c, &sh);
	/* Run for ms; on a slow or loaded machine go on (up to 4 * ms) until
	 * a few resizes have completed and some walk overlapped one. */
	TST_WAIT_FOR(tst_load(&tst_failures.count) != 0, ms);
	TST_WAIT_FOR(tst_load(&tst_failures.count) != 0 ||
	             (tst_load(&c.z.calls) >= 4 && overlapping_walks(c.it) > 0),
	             3 * ms);
	crew_stop(&c, &sh);
	assert_outcome(&c, &sh, name, t0);

	relhash_destroy(sh.t, free_churn, &freed);
	ck_assert_uint_ge(freed, NSTABLE);
	/* Run the deferred frees before the process ends (leak checkers). */
	ck_assert_int_eq(relhash_barrier(), 0);
	for (i = 0; i < NITERS; i++)
		free(c.it[i]);
	free(sh.stable);
}

START_TEST(iterate_during_resize)
{
	run(&params_default, "default");
}
END_TEST

START_TEST(iterate_during_resize_weak_hash)
{
	run(&params_weak, "weak");
}
END_TEST

static Suite *iter_suite(void)
{
	Suite *s = suite_create("iter");
	const TTest *tests[] = {
		iterate_during_resize,
		iterate_during_resize_weak_hash,
	};

	tst_add_tcase(s, "resize", 120, tests, TST_COUNT(tests));
	return s;
}

int main(void)
{
	return tst_run(srunner_create(iter_suite()));
}
