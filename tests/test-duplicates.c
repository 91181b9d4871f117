/*
 * tests/test-duplicates.c - tables with duplicate keys (RELHASH_DUPLICATES).
 *
 * Keys are 8-byte integers hashed in pairs: keys 2k and 2k+1 share one
 * 64-bit hash, so every chain mixes objects of distinct keys with equal
 * hashes, which the walk must tell apart by key.
 * - walk_visits_each_once: at rest, walking a key's objects with
 *   relhash_lookup() and relhash_lookup_next() returns each exactly once,
 *   newest first, and nothing of another key (also for one key with 3,000
 *   objects); count and iteration count objects.  The deliberate bug
 *   RH_BUG_NEXT_BY_HASH (the walk compares hashes) must fail it.
 * - runs_stay_together: in a table at rest a key's objects are adjacent in
 *   their chain (so k objects cost k steps): iteration meets them one after
 *   the other.  RH_BUG_DUPLICATE_AT_HEAD must fail it.
 * - updates_act_on_the_node: remove and replace act on the node given,
 *   insert_or_get inserts only a key's first object, a table without the
 *   flag refuses duplicates and its lookup_next returns NULL.
 * - shrink_after_expansion_waits (debug builds): a reader held in the
 *   foreign run that an expansion's last unzip patch cut off, and a
 *   shrink right after that expansion, must not lead the reader's walk
 *   back to its key's objects.  RH_BUG_SHRINK_NO_WAIT must fail it.
 * - torture: readers walk keys while writers insert, remove and replace
 *   objects of the same keys and a resizer grows and shrinks the table,
 *   with four times more threads than CPUs; every walk must return every
 *   object that stayed in the table throughout exactly once, and only
 *   objects with its key.  RELHASH_TORTURE_SECONDS sets its length (2 s).
 */
#include "common.h"

#include <stdatomic.h>

#include <relhash.h>

struct dobj {
	uint64_t key;
	uint32_t id;     /* stable objects: index among their key's */
	uint32_t stable; /* 1: in the table for the whole test */
	struct relhash_node node;
};

static uint64_t pair_hash(const void *key, size_t len, uint64_t seed)
{
	uint64_t k;

	memcpy(&k, key, sizeof(k));
	k >>= 1; /* 2k and 2k+1 share the hash */
	return relhash_hash(&k, len, seed);
}

static struct relhash_params dup_params(void)
{
	return (struct relhash_params){
		.node_offset = offsetof(struct dobj, node),
		.key_offset = offsetof(struct dobj, key),
		.key_len = sizeof(uint64_t),
		.hashfn = pair_hash,
		.flags = RELHASH_DUPLICATES,
	};
}

static struct relhash_table *dup_table(size_t size)
{
	struct relhash_params p = dup_params();
	struct relhash_table *t;

	p.initial_size = p.min_size = p.max_size = size;
	t = relhash_create(&p);
	ck_assert_ptr_nonnull(t);
	return t;
}

static struct dobj *new_obj(uint64_t key, uint32_t id, uint32_t stable)
{
	struct dobj *o = calloc(1, sizeof(*o));

	ck_assert_ptr_nonnull(o);
	o->key = key;
	o->id = id;
	o->stable = stable;
	return o;
}

/* ---------------------------------------------------------------------- */
/* At rest                                                                 */

#define REST_KEYS 32
#define BIG_RUN 3000

/* Objects of key k at rest: key 5 has BIG_RUN, the others k % 7 + 1. */
static unsigned rest_count(unsigned k)
{
	return k == 5 ? BIG_RUN : k % 7 + 1;
}

START_TEST(walk_visits_each_once)
{
	struct relhash_table *t = dup_table(64);
	static uint8_t seen[BIG_RUN];
	struct relhash_iter it;
	size_t total = 0, iterated = 0;
	unsigned k, i;

	for (k = 0; k < REST_KEYS; k++)
		for (i = 0; i < rest_count(k); i++, total++)
			ck_assert_int_eq(relhash_insert(t, &new_obj(k, i, 1)->node),
			                 0);
	ck_assert_uint_eq(relhash_count(t), total);
	relhash_read_lock();
	for (k = 0; k < REST_KEYS; k++) {
		unsigned n = 0, last = rest_count(k);
		uint64_t key = k;
		struct dobj *o;

		memset(seen, 0, sizeof(seen));
		for (o = relhash_lookup(t, &key); o;
		     o = relhash_lookup_next(t, o)) {
			ck_assert_msg(o->key == k, "walk of key %u met key %llu",
			              k, (unsigned long long)o->key);
			ck_assert_msg(!seen[o->id]++, "key %u: object %u twice",
			              k, o->id);
			/* Newest first, at rest. */
			ck_assert_uint_eq(o->id, --last);
			n++;
		}
		ck_assert_msg(n == rest_count(k), "key %u: %u of %u objects", k,
		              n, rest_count(k));
	}
	for (void *o = relhash_iter_first(t, &it); o; o = relhash_iter_next(&it))
		iterated++;
	relhash_read_unlock();
	ck_assert_uint_eq(iterated, total);
	relhash_destroy(t, tst_free_obj, NULL);
}
END_TEST

START_TEST(runs_stay_together)
{
	/* Four buckets: each chain holds several keys, inserted in turns. */
	struct relhash_table *t = dup_table(4);
	bool done[REST_KEYS] = { false };
	struct relhash_iter it;
	uint64_t cur = UINT64_MAX;
	unsigned k, r;
	struct dobj *o;

	for (r = 0; r < 6; r++)
		for (k = 0; k < REST_KEYS; k++)
			ck_assert_int_eq(relhash_insert(t, &new_obj(k, r, 1)->node),
			                 0);
	relhash_read_lock();
	for (o = relhash_iter_first(t, &it); o; o = relhash_iter_next(&it)) {
		if (o->key == cur)
			continue;
		ck_assert_msg(!done[o->key], "key %llu's objects are split: "
		              "another key between them",
		              (unsigned long long)o->key);
		if (cur != UINT64_MAX)
			done[cur] = true;
		cur = o->key;
	}
	relhash_read_unlock();
	relhash_destroy(t, tst_free_obj, NULL);
}
END_TEST

START_TEST(updates_act_on_the_node)
{
	struct relhash_table *t = dup_table(16);
	struct dobj *a = new_obj(3, 0, 1), *b = new_obj(3, 1, 1),
	            *c = new_obj(3, 2, 1), *d = new_obj(3, 3, 1);
	struct relhash_params p = dup_params();
	uint64_t key = 3;
	void *got = NULL;
	struct dobj *o;
	unsigned n = 0;

	ck_assert_int_eq(relhash_insert_or_get(t, &a->node, &got), 0);
	ck_assert_int_eq(relhash_insert(t, &b->node), 0);
	ck_assert_int_eq(relhash_insert(t, &c->node), 0);
	relhash_read_lock();
	ck_assert_int_eq(relhash_insert_or_get(t, &d->node, &got), -EEXIST);
	ck_assert_ptr_eq(got, relhash_lookup(t, &key));
	relhash_read_unlock();
	ck_assert_int_eq(relhash_insert_or_get(t, &d->node, NULL), -EEXIST);
	/* A node in the table already: refused, nothing changes (linking it
	 * again would make a cycle). */
	ck_assert_int_eq(relhash_insert(t, &a->node), -EEXIST);
	ck_assert_int_eq(relhash_insert(t, &c->node), -EEXIST);
	ck_assert_int_eq(relhash_replace(t, &a->node, &b->node), -EEXIST);
	ck_assert_int_eq(relhash_replace(t, &b->node, &a->node), -EEXIST);
	ck_assert_uint_eq(relhash_count(t), 3);
	/* Remove the middle one, replace the last one. */
	ck_assert_int_eq(relhash_remove(t, &b->node), 0);
	ck_assert_int_eq(relhash_remove(t, &b->node), -ENOENT);
	ck_assert_int_eq(relhash_replace(t, &a->node, &d->node), 0);
	ck_assert_uint_eq(relhash_count(t), 2);
	relhash_read_lock();
	for (o = relhash_lookup(t, &key); o; o = relhash_lookup_next(t, o)) {
		ck_assert_msg(o == c || o == d, "walk met object %u", o->id);
		n++;
	}
	relhash_read_unlock();
	ck_assert_uint_eq(n, 2);
	relhash_destroy(t, NULL, NULL);

	/* Without the flag: no duplicates, and no next. */
	p.flags = 0;
	t = relhash_create(&p);
	ck_assert_ptr_nonnull(t);
	ck_assert_int_eq(relhash_insert(t, &a->node), 0);
	ck_assert_int_eq(relhash_insert(t, &b->node), -EEXIST);
	relhash_read_lock();
	ck_assert_ptr_null(relhash_lookup_next(t, relhash_lookup(t, &key)));
	relhash_read_unlock();
	relhash_destroy(t, NULL, NULL);
	free(a);
	free(b);
	free(c);
	free(d);
}
END_TEST

/* ---------------------------------------------------------------------- */
/* A shrink right after an expansion                                       */

/*
 * An expansion waits no grace period after its last unzip patch, so a
 * shrink that follows it at once, under the same hold of the resize lock
 * (as the resize thread does when the load falls meanwhile), must wait
 * for that patch's readers before it splices: one may still stand in the
 * foreign run the patch cut off, and the splice can lead it back to its
 * own bucket (doc/DESIGN.md section 8, "No grace period after the last
 * patch").  Driven step by step with the library's yield points
 * (relhash__debug_set_yield_hook(), debug builds only; elsewhere the case
 * says it is skipped); the hash is the key itself.
 *
 * 8 buckets, resized automatically, never below 8.  Head insertions
 * build bucket 1's chain b0 -> b1 -> a1 -> a2: b0 and b1 are key 9's two
 * objects (bucket 9 of 16), a1 and a2 keys 1 and 17 (bucket 1 of 16).
 * Keys 2, 3 and 4 make seven objects: over 75 % of 8 buckets, the resize
 * thread doubles the table.  It is held at the first unzip pass, after
 * the publication's grace period; a reader walks key 9 in the new array
 * (b0, b1, then from b1 on) and is held on a1, having read b1->next.
 * Keys 2 to 4 are removed (4 objects: under 30 % of 16) and the resizer
 * goes on: its one pass sets b1->next = NULL, the family's last patch,
 * and the same hold of the resize lock halves the table, splicing old
 * chain 9 (b0 b1) after old chain 1 (a1 a2).  The reader stays held until
 * that splice is seen (a2->next set) or SW_HOLD_MS after the expansion
 * ended, then walks on from a1: to NULL, or with the splice to b0 and b1
 * again.  With the wait, the shrink waits for the reader's section, so
 * the hold ends at its deadline and the walk meets b0 and b1 once;
 * RH_BUG_SHRINK_NO_WAIT splices under the reader, which meets b0 twice.
 */
enum { SW_OLD = 8, SW_KEY = 9, SW_HOLD_MS = 1000 };
/* The objects, in insertion order: at the heads, a duplicate in front of
 * its run (b0 goes in after b1). */
enum { SW_A2, SW_A1, SW_B1, SW_B0, SW_X2, SW_X3, SW_X4, SW_NOBJS };
enum sw_role { SW_NONE, SW_MAIN, SW_READER }; /* SW_NONE: the library's */
enum sw_stage {
	SW_START,
	SW_RESIZER_HELD,  /* before pass 1, after the grace period */
	SW_READER_HELD,   /* on a1, having read b1->next */
	SW_GO,            /* keys 2 to 4 removed */
};

static __thread enum sw_role sw_role;
static __thread unsigned sw_reader_steps;
static __thread bool sw_walking_on; /* the reader's walk from b1 on */
static struct {
	struct relhash_table *t;
	struct dobj objs[SW_NOBJS];
	uint64_t gp0, resizes0;   /* the table's, before the expansion */
	int stage;                /* enum sw_stage */
	int spliced;              /* the resizer saw a2->next set */
	/* What the reader saw while held: b1->next at the start and when
	 * the expansion had ended, whether it ended, and whether the
	 * splice came before the deadline. */
	struct relhash_node *next_at_hold, *next_after;
	bool expanded, spliced_in_hold;
} sw;

static uint64_t sw_resizes(void)
{
	struct relhash_table_stats st = { .size = sizeof(st) };

	relhash_table_stats(sw.t, &st);
	return st.resizes;
}

/* In the resize thread: hold it before pass 1; then watch for the
 * splice. */
static void sw_resizer_step(void)
{
	struct relhash_table_stats st = { .size = sizeof(st) };

	if (tst_load(&sw.stage) == SW_START) {
		relhash_table_stats(sw.t, &st);
		/* Published and waited for: the next yield is pass 1's. */
		if (st.nbuckets != 2 * SW_OLD || st.grace_periods != sw.gp0 + 1)
			return;
		tst_store(&sw.stage, SW_RESIZER_HELD);
		(void)TST_WAIT_FOR(tst_load(&sw.stage) >= SW_GO, 10000);
	} else if (tst_load(&sw.stage) == SW_GO &&
	           atomic_load(&sw.objs[SW_A2].node.next)) {
		tst_store(&sw.spliced, 1);
	}
}

/* In the reader, standing on a1: wait for the expansion to end, then for
 * the splice, at most SW_HOLD_MS. */
static void sw_reader_hold(void)
{
	sw.next_at_hold = atomic_load(&sw.objs[SW_B1].node.next);
	tst_store(&sw.stage, SW_READER_HELD);
	sw.expanded = TST_WAIT_FOR(sw_resizes() > sw.resizes0, 10000);
	sw.next_after = atomic_load(&sw.objs[SW_B1].node.next);
	sw.spliced_in_hold = TST_WAIT_FOR(tst_load(&sw.spliced), SW_HOLD_MS);
}

/* Called at every yield point of the library, in every thread. */
static void sw_hook(void)
{
	if (sw_role == SW_NONE)
		sw_resizer_step();
	/* 1: relhash_lookup_next() itself, 2: at b1->next, a1. */
	else if (sw_role == SW_READER && sw_walking_on &&
	         ++sw_reader_steps == 2)
		sw_reader_hold();
}

/* Walk key 9: each of its two objects once, nothing else. */
static void *sw_reader_main(void *arg)
{
	uint64_t key = SW_KEY;
	unsigned seen[2] = { 0, 0 }, n = 0;
	struct dobj *o;

	(void)arg;
	sw_role = SW_READER;
	relhash_read_lock();
	for (o = relhash_lookup(sw.t, &key); o && n < 8;
	     o = relhash_lookup_next(sw.t, o)) {
		TST_THREAD_CHECK(o->key == SW_KEY && o->id < 2, "walk of key "
		                 "%u met key %llu", SW_KEY,
		                 (unsigned long long)o->key);
		if (o->key == SW_KEY && o->id < 2)
			TST_THREAD_CHECK(!seen[o->id]++, "key %u: object b%u met "
			                 "twice: a shrink spliced under a reader "
			                 "of the expansion's last patch", SW_KEY,
			                 o->id);
		/* The next call goes on from b1: hold it there. */
		sw_walking_on = ++n == 2;
	}
	relhash_read_unlock();
	TST_THREAD_CHECK(seen[0] && seen[1], "key %u: b0 met %u times, b1 %u",
	                 SW_KEY, seen[0], seen[1]);
	return NULL;
}

/* The table of 8 buckets, bucket 1 holding b0 -> b1 -> a1 -> a2, and
 * keys 2 and 3. */
static void sw_build(void)
{
	struct relhash_params p = dup_params();
	static const uint64_t keys[SW_NOBJS] = { 17, 1, 9, 9, 2, 3, 4 };
	struct dobj *o = sw.objs;
	unsigned i;

	p.hashfn = hashfn_identity;
	p.initial_size = p.min_size = SW_OLD;
	p.flags |= RELHASH_AUTO_RESIZE;
	memset(&sw, 0, sizeof(sw));
	sw.t = relhash_create(&p);
	ck_assert_ptr_nonnull(sw.t);
	for (i = 0; i < SW_NOBJS; i++)
		o[i].key = keys[i];
	o[SW_B0].id = 0;
	o[SW_B1].id = 1;
	relhash__debug_head_inserts(true);
	for (i = SW_A2; i < SW_X4; i++)
		ck_assert_int_eq(relhash_insert(sw.t, &o[i].node), 0);
	relhash__debug_head_inserts(false);
	ck_assert(atomic_load(&o[SW_B0].node.next) == &o[SW_B1].node &&
	          atomic_load(&o[SW_B1].node.next) == &o[SW_A1].node &&
	          atomic_load(&o[SW_A1].node.next) == &o[SW_A2].node &&
	          !atomic_load(&o[SW_A2].node.next));
}

START_TEST(shrink_after_expansion_waits)
{
	struct relhash_table_stats st = { .size = sizeof(st) };
	uint64_t t0 = tst_now_ns();
	pthread_t reader;
	unsigned i;

	if (!relhash__debug_set_yield_hook) {
		printf("duplicates[shrink_after_expansion_waits]: skipped, "
		       "needs a debug build (--enable-debug)\n");
		return;
	}
	sw_build();
	relhash_table_stats(sw.t, &st);
	ck_assert_uint_eq(st.nbuckets, SW_OLD);
	sw.gp0 = st.grace_periods;
	sw.resizes0 = st.resizes;
	tst_reset_thread_failures();
	sw_role = SW_MAIN;
	relhash__debug_set_yield_hook(sw_hook);
	/* The seventh object: the resize thread doubles the table. */
	ck_assert_int_eq(relhash_insert(sw.t, &sw.objs[SW_X4].node), 0);
	ck_assert_msg(TST_WAIT_FOR(tst_load(&sw.stage) == SW_RESIZER_HELD,
	                           10000), "the resizer never reached pass 1");
	tst_thread_start(&reader, sw_reader_main, NULL);
	ck_assert_msg(TST_WAIT_FOR(tst_load(&sw.stage) == SW_READER_HELD,
	                           10000), "the reader never stood on a1");
	for (i = SW_X2; i <= SW_X4; i++)
		ck_assert_int_eq(relhash_remove(sw.t, &sw.objs[i].node), 0);
	tst_store(&sw.stage, SW_GO);
	TST_JOIN(reader, 20000, "the reader did not finish");
	TST_ASSERT_WAIT((relhash_table_stats(sw.t, &st),
	                 st.resizes == sw.resizes0 + 2 && st.nbuckets == SW_OLD),
	                10000, "the table was not doubled and halved again "
	                "(%llu resizes, %zu buckets)",
	                (unsigned long long)(st.resizes - sw.resizes0),
	                st.nbuckets);
	relhash__debug_set_yield_hook(NULL);
	sw_role = SW_NONE;
	tst_assert_no_thread_failures();
	ck_assert_msg(sw.next_at_hold == &sw.objs[SW_A1].node,
	              "the reader was held before pass 1 with b1->next not a1");
	ck_assert_msg(sw.expanded && !sw.next_after, "the expansion's last "
	              "patch (b1->next = NULL) was not made while the reader "
	              "was held");
	ck_assert_msg(!sw.spliced_in_hold, "the shrink spliced while a "
	              "reader of the expansion's last patch was held");
	printf("duplicates[shrink_after_expansion_waits]: the shrink waited "
	       "for the held reader; %.0f ms\n", tst_ms_since(t0));
	relhash_destroy(sw.t, NULL, NULL);
}
END_TEST

/* ---------------------------------------------------------------------- */
/* Torture                                                                 */

#define T_KEYS 16
#define T_STABLE 4        /* stable objects per key ... */
#define T_BIG_STABLE 2000 /* ... and for key 0 */
#define T_CHURN 256       /* churn objects per writer */

struct torture {
	struct relhash_table *t;
	int stop;
	unsigned long walks, visits, updates, resizes;
};

static unsigned stable_count(uint64_t k)
{
	return k == 0 ? T_BIG_STABLE : T_STABLE;
}

/* Walk key k once; check exactly-once for the stable objects. */
static void walk_key(struct torture *tt, uint64_t k, uint8_t *seen)
{
	unsigned stable = 0, n = 0;
	struct dobj *o;

	memset(seen, 0, stable_count(k));
	relhash_read_lock();
	for (o = relhash_lookup(tt->t, &k); o; o = relhash_lookup_next(tt->t, o)) {
		n++;
		TST_THREAD_CHECK(o->key == k, "walk of key %llu met key %llu",
		                 (unsigned long long)k,
		                 (unsigned long long)o->key);
		if (o->key != k || !o->stable)
			continue;
		TST_THREAD_CHECK(!seen[o->id], "key %llu: stable object %u "
		                 "twice", (unsigned long long)k, o->id);
		seen[o->id] = 1;
		stable++;
	}
	relhash_read_unlock();
	TST_THREAD_CHECK(stable == stable_count(k), "key %llu: %u of %u "
	                 "stable objects", (unsigned long long)k, stable,
	                 stable_count(k));
	__atomic_add_fetch(&tt->visits, n, __ATOMIC_RELAXED);
}

static void *reader_main(void *arg)
{
	struct torture *tt = arg;
	uint64_t st = tst_mix64((uint64_t)pthread_self()) | 1;
	uint8_t *seen = malloc(T_BIG_STABLE);

	while (!tst_load(&tt->stop)) {
		walk_key(tt, tst_rand(&st) % T_KEYS, seen);
		__atomic_add_fetch(&tt->walks, 1, __ATOMIC_RELAXED);
	}
	free(seen);
	return NULL;
}

/* Insert, remove or replace churn objects of the same keys. */
static void *writer_main(void *arg)
{
	struct torture *tt = arg;
	uint64_t st = tst_mix64((uint64_t)pthread_self() + 1) | 1;
	struct dobj *mine[T_CHURN] = { NULL };

	while (!tst_load(&tt->stop)) {
		unsigned i = (unsigned)(tst_rand(&st) % T_CHURN);
		struct dobj *o = mine[i];

		if (!o) {
			o = new_obj(tst_rand(&st) % T_KEYS, 0, 0);
			TST_THREAD_CHECK(relhash_insert(tt->t, &o->node) == 0,
			                 "insert refused");
			mine[i] = o;
		} else if (tst_rand(&st) & 1) {
			struct dobj *n = new_obj(o->key, 0, 0);

			TST_THREAD_CHECK(relhash_replace(tt->t, &o->node,
			                                 &n->node) == 0,
			                 "replace of a churn object failed");
			relhash_defer_free(o);
			mine[i] = n;
		} else {
			TST_THREAD_CHECK(relhash_remove(tt->t, &o->node) == 0,
			                 "remove of a churn object failed");
			relhash_defer_free(o);
			mine[i] = NULL;
		}
		__atomic_add_fetch(&tt->updates, 1, __ATOMIC_RELAXED);
	}
	for (unsigned i = 0; i < T_CHURN; i++)
		if (mine[i] && relhash_remove(tt->t, &mine[i]->node) == 0)
			relhash_defer_free(mine[i]);
	return NULL;
}

static void *resizer_main(void *arg)
{
	struct torture *tt = arg;
	uint64_t st = 12345;

	while (!tst_load(&tt->stop)) {
		size_t size = (size_t)4 << (tst_rand(&st) % 11);

		TST_THREAD_CHECK(relhash_resize(tt->t, size) == 0,
		                 "resize to %zu failed", size);
		__atomic_add_fetch(&tt->resizes, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

START_TEST(torture)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned nthreads = 4 * (unsigned)(cpus > 1 ? cpus : 2);
	unsigned seconds = tst_env_unsigned("RELHASH_TORTURE_SECONDS", 2);
	unsigned nwriters = nthreads / 4, nreaders = nthreads - nwriters - 1;
	struct relhash_params p = dup_params();
	struct torture tt = { .t = NULL };
	pthread_t tid[64];
	unsigned k, i, n = 0;

	p.max_size = 4096; /* the resizer picks sizes from 4 to 4096 */
	tt.t = relhash_create(&p);
	ck_assert_ptr_nonnull(tt.t);
	for (k = 0; k < T_KEYS; k++)
		for (i = 0; i < stable_count(k); i++)
			ck_assert_int_eq(relhash_insert(tt.t,
			                                &new_obj(k, i, 1)->node), 0);
	tst_reset_thread_failures();
	for (i = 0; i < nreaders && n < 64; i++)
		tst_thread_start(&tid[n++], reader_main, &tt);
	for (i = 0; i < nwriters && n < 64; i++)
		tst_thread_start(&tid[n++], writer_main, &tt);
	tst_thread_start(&tid[n++], resizer_main, &tt);
	tst_sleep_ms(1000 * seconds);
	tst_store(&tt.stop, 1);
	for (i = 0; i < n; i++)
		TST_JOIN(tid[i], 60000, "thread %u did not stop", i);
	tst_assert_no_thread_failures();
	printf("duplicates torture, %u threads (%u readers, %u writers, a "
	       "resizer), %u s: %lu walks visiting %lu objects, %lu updates, "
	       "%lu resizes\n", n, nreaders, nwriters, seconds, tt.walks,
	       tt.visits, tt.updates, tt.resizes);
	ck_assert_uint_gt(tt.walks, 0);
	ck_assert_uint_gt(tt.resizes, 0);
	ck_assert_int_eq(relhash_barrier(), 0);
	relhash_destroy(tt.t, tst_free_obj, NULL);
}
END_TEST

int main(void)
{
	const TTest *tests[] = {
		walk_visits_each_once,
		runs_stay_together,
		updates_act_on_the_node,
		shrink_after_expansion_waits,
		torture,
	};

	return tst_run_tests("duplicates", 120, tests, TST_COUNT(tests));
}
