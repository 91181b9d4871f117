/*
 * tests/test-rehash.c - tables that heal: a rehash with a new seed while
 * lookups and updates go on (doc/DESIGN.md section 12, "Healing").
 *
 * - known_seed_heals: a table created with an explicit seed, which the
 *   attacker knows, is flooded with keys that share one 64-bit hash under
 *   it; it rehashes by itself, its chains become short, and readers find
 *   every key inserted so far throughout;
 * - seedless_hash_stops: a hashfn that ignores the seed cannot be healed:
 *   the table does not rehash, says so once on stderr and in its
 *   statistics, and still finds every key;
 * - stale_hash_lookups: a hash from relhash_hash_key() taken before a
 *   rehash still finds its object through relhash_lookup_hashed() and the
 *   bulk lookup, and never another key's;
 * - replace_absent_in_mid: while a reader holds a rehash between its
 *   snapshot and its first grace period (MID mode), relhash_replace() of
 *   an object not in the table by a member of the snapshot (of the same
 *   key) fails with
 *   -ENOENT and leaves the member where lookups, and the relink, find it
 *   (the fuzzer's find: the member's entry was erased, so it vanished);
 * - torture: 4 readers per CPU look up, walk and iterate a table that the
 *   test thread rehashes again and again and another thread resizes, while
 *   updaters insert, replace and remove keys of their own (freed with
 *   poison after a grace period):
 *   a present key is never missed, a removed one never found, an
 *   iteration returns each stable object exactly once, and no reader
 *   meets a poisoned object;
 * - duplicate_walks: the same for a table with duplicate keys, whose walks
 *   (relhash_lookup(), then relhash_lookup_next()) return each stable
 *   object of their key exactly once, and no object twice, while the
 *   updaters add and remove more objects of the same keys, and take out
 *   and put back (the same memory) objects that were in the table when
 *   each rehash began.
 * The negative controls RH_BUG_REHASH_NO_GP1, _NO_RECHECK, _NO_MARK and
 * _NO_FORGET must make the torture fail (tests/negative-controls.sh).
 */
#include "common.h"

#include <stdatomic.h>

#include <relhash.h>

#define KNOWN_SEED 42ull
#define K1 0xbf58476d1ce4e5b9ull
#define NFLOOD 2000
#define NSTABLE 1024
#define NCHURN 64     /* keys per updater */
#define NUPDATERS 2
#define MAX_READERS 32
#define WALK_KEYS 64  /* duplicate_walks: keys, each with COPIES objects */
#define COPIES 4
#define NRECYCLE 32   /* duplicate_walks: objects each updater recycles */

struct obj {
	struct relhash_node node;
	unsigned char key[16];
	unsigned id;      /* < NSTABLE: a stable object's index */
	bool stable;
};

static const struct relhash_params base_params = {
	.node_offset = offsetof(struct obj, node),
	.key_offset = offsetof(struct obj, key),
	.key_len = 16,
	.initial_size = 256,
};

static void put64(unsigned char *k, uint64_t v)
{
	for (unsigned j = 0; j < 8; j++)
		k[j] = (unsigned char)(v >> (8 * j));
}

/* Key i of a family whose first word, under seed KNOWN_SEED, zeroes the
 * default hash's first multiplicand: all share one 64-bit hash there. */
static void flood_key(unsigned char *k, unsigned i)
{
	uint64_t st = tst_mix64(i + 1);

	put64(k, KNOWN_SEED * K1);
	put64(k + 8, tst_rand(&st));
}

/* Key i of class c (0 stable, 1 + u updater u's), distinct across all. */
static void plain_key(unsigned char *k, unsigned c, unsigned i)
{
	put64(k, tst_mix64(((uint64_t)c << 32) | i));
	put64(k + 8, c);
}

static uint64_t seedless_hash(const void *key, size_t len, uint64_t seed)
{
	(void)seed;
	return relhash_hash(key, len, KNOWN_SEED);
}

static void poison_free(void *p)
{
	struct obj *o = p;

	tst_poison(o->key, sizeof(o->key));
	free(p);
}

/* poison_free() for an updater's array of NRECYCLE objects. */
static void poison_free_all(void *p)
{
	struct obj *o = p;

	for (unsigned i = 0; i < NRECYCLE; i++)
		tst_poison(o[i].key, sizeof(o[i].key));
	free(p);
}

static struct relhash_table_stats table_stats(struct relhash_table *t)
{
	struct relhash_table_stats st = { .size = sizeof(st) };

	ck_assert_int_eq(relhash_table_stats(t, &st), 0);
	return st;
}

/* Fill a table of params p with the flood; every key then found. */
static struct obj *flood(struct relhash_table *t)
{
	struct obj *objs = calloc(NFLOOD, sizeof(*objs));

	ck_assert_ptr_nonnull(objs);
	for (unsigned i = 0; i < NFLOOD; i++) {
		flood_key(objs[i].key, i);
		ck_assert_int_eq(relhash_insert(t, &objs[i].node), 0);
	}
	return objs;
}

static void assert_all_found(struct relhash_table *t, struct obj *objs,
                             unsigned n)
{
	relhash_read_lock();
	for (unsigned i = 0; i < n; i++)
		ck_assert_ptr_eq(relhash_lookup(t, objs[i].key), &objs[i]);
	relhash_read_unlock();
}

/* known_seed_heals: readers of the keys inserted so far. */
struct flood_watch {
	struct relhash_table *t;
	struct obj *objs;
	atomic_uint published; /* objs[0, published) are in the table */
	atomic_bool stop;
};

static void *flood_reader(void *arg)
{
	struct flood_watch *w = arg;
	uint64_t rnd = tst_mix64((uintptr_t)&rnd);

	while (!atomic_load(&w->stop)) {
		unsigned n = atomic_load(&w->published), i;

		if (!n)
			continue;
		i = (unsigned)(tst_rand(&rnd) % n);
		relhash_read_lock();
		TST_THREAD_CHECK(relhash_lookup(w->t, w->objs[i].key) ==
		                 &w->objs[i], "flood key %u missed", i);
		relhash_read_unlock();
	}
	return NULL;
}

/* Lookups of every flood key, in ms. */
static double lookup_ms(struct relhash_table *t, struct obj *objs)
{
	uint64_t t0 = tst_now_ns();

	assert_all_found(t, objs, NFLOOD);
	return tst_ms_since(t0);
}

START_TEST(known_seed_heals)
{
	struct relhash_params p = base_params;
	struct flood_watch w = { 0 };
	pthread_t r[4];
	size_t longest;
	double ms;
	unsigned i;

	p.seed = KNOWN_SEED;
	p.initial_size = 4096; /* load 0.5: chance gives chains of 6 or so */
	w.t = relhash_create(&p);
	w.objs = calloc(NFLOOD, sizeof(*w.objs));
	ck_assert_ptr_nonnull(w.t);
	ck_assert_ptr_nonnull(w.objs);
	tst_reset_thread_failures();
	for (i = 0; i < TST_COUNT(r); i++)
		tst_thread_start(&r[i], flood_reader, &w);
	for (i = 0; i < NFLOOD; i++) {
		flood_key(w.objs[i].key, i);
		ck_assert_int_eq(relhash_insert(w.t, &w.objs[i].node), 0);
		atomic_store(&w.published, i + 1);
	}
	TST_ASSERT_WAIT(table_stats(w.t).rehashes >= 1, 5000,
	                "the flooded table did not rehash");
	atomic_store(&w.stop, true);
	for (i = 0; i < TST_COUNT(r); i++)
		TST_JOIN(r[i], 10000, "reader stuck");
	tst_assert_no_thread_failures();
	longest = relhash__debug_longest_chain(w.t);
	ms = lookup_ms(w.t, w.objs);
	printf("known seed: %llu rehash(es), longest chain now %zu, %u "
	       "lookups %.2f ms\n",
	       (unsigned long long)table_stats(w.t).rehashes, longest, NFLOOD,
	       ms);
	ck_assert_uint_le(longest, 16);
	ck_assert_int_eq(table_stats(w.t).rehash_stopped, 0);
	relhash_destroy(w.t, NULL, NULL);
	free(w.objs);
}
END_TEST

START_TEST(seedless_hash_stops)
{
	struct relhash_params p = base_params;
	struct relhash_table *t;
	struct tst_capture cap;
	struct obj *objs;
	char err[4096];

	p.hashfn = seedless_hash;
	t = relhash_create(&p);
	ck_assert_ptr_nonnull(t);
	tst_capture_stderr(&cap);
	objs = flood(t);
	TST_WAIT_FOR(table_stats(t).rehash_stopped, 5000);
	tst_capture_end(&cap, err, sizeof(err));
	printf("seedless: stderr: %s", err);
	ck_assert_int_eq(table_stats(t).rehash_stopped, 1);
	ck_assert_uint_eq(table_stats(t).rehashes, 0);
	ck_assert_msg(strstr(err, "stops rehashing") != NULL,
	              "no report on stderr: \"%s\"", err);
	ck_assert_msg(!strstr(strstr(err, "stops rehashing") + 1,
	                      "stops rehashing"), "reported twice: %s", err);
	assert_all_found(t, objs, NFLOOD);
	relhash_destroy(t, NULL, NULL);
	free(objs);
}
END_TEST

START_TEST(stale_hash_lookups)
{
	struct relhash_table *t = relhash_create(&base_params);
	struct obj *objs = calloc(NSTABLE, sizeof(*objs));
	uint64_t *h = calloc(NSTABLE, sizeof(*h));
	const void *keys[16];
	void *found[16];

	ck_assert_ptr_nonnull(t);
	ck_assert_ptr_nonnull(objs);
	ck_assert_ptr_nonnull(h);
	for (unsigned i = 0; i < NSTABLE; i++) {
		plain_key(objs[i].key, 0, i);
		ck_assert_int_eq(relhash_insert(t, &objs[i].node), 0);
		h[i] = relhash_hash_key(t, objs[i].key);
	}
	ck_assert_int_eq(relhash__debug_rehash(t), 0);
	relhash_read_lock();
	for (unsigned i = 0; i < NSTABLE; i++) {
		ck_assert_ptr_eq(relhash_lookup_hashed(t, objs[i].key, h[i]),
		                 &objs[i]);
		/* Another key's hash: NULL or the right object. */
		void *o = relhash_lookup_hashed(t, objs[i].key,
		                                h[(i + 1) % NSTABLE]);
		ck_assert(o == NULL || o == &objs[i]);
	}
	for (unsigned i = 0; i < 16; i++)
		keys[i] = objs[i * 7].key;
	ck_assert_uint_eq(relhash_lookup_bulk(t, keys, 16, found), 16);
	for (unsigned i = 0; i < 16; i++)
		ck_assert_ptr_eq(found[i], &objs[i * 7]);
	relhash_read_unlock();
	ck_assert_uint_ne(relhash_hash_key(t, objs[0].key), h[0]);
	relhash_destroy(t, NULL, NULL);
	free(objs);
	free(h);
}
END_TEST

/* A read-side section held until released: it holds a rehash's first
 * grace period, so the table stays in MID mode. */
struct section_hold {
	atomic_bool inside;
	atomic_bool release;
};

static void *hold_section(void *arg)
{
	struct section_hold *h = arg;

	relhash_read_lock();
	atomic_store(&h->inside, true);
	while (!atomic_load(&h->release))
		tst_sleep_us(100);
	relhash_read_unlock();
	return NULL;
}

static void *rehash_once(void *t)
{
	return (void *)(intptr_t)relhash__debug_rehash(t);
}

static bool in_mid_mode(struct relhash_table *t)
{
	bool mid;

	relhash_read_lock();
	mid = relhash__buckets_load(t)->rehash != NULL;
	relhash_read_unlock();
	return mid;
}

START_TEST(replace_absent_in_mid)
{
	struct relhash_table *t = relhash_create(&base_params);
	struct obj *objs = calloc(NSTABLE, sizeof(*objs));
	struct obj absent = { .id = NSTABLE };
	struct section_hold hold = { false, false };
	pthread_t holder, rehasher;
	void *ret;

	ck_assert_ptr_nonnull(t);
	ck_assert_ptr_nonnull(objs);
	for (unsigned i = 0; i < NSTABLE; i++) {
		plain_key(objs[i].key, 0, i);
		ck_assert_int_eq(relhash_insert(t, &objs[i].node), 0);
	}
	tst_thread_start(&holder, hold_section, &hold);
	TST_ASSERT_WAIT(atomic_load(&hold.inside), 10000, "no section");
	tst_thread_start(&rehasher, rehash_once, t);
	TST_ASSERT_WAIT(in_mid_mode(t), 10000, "the rehash never published MID");
	for (unsigned i = 0; i < NSTABLE; i += 97) {
		/* Another object of the member's key, not in the table. */
		memcpy(absent.key, objs[i].key, sizeof(absent.key));
		ck_assert_int_eq(relhash_replace(t, &absent.node, &objs[i].node),
		                 -ENOENT);
	}
	assert_all_found(t, objs, NSTABLE);
	atomic_store(&hold.release, true);
	TST_JOIN(holder, 10000, "section holder stuck");
	ck_assert_msg(tst_thread_join_ms(rehasher, 10000, &ret),
	              "rehash stuck");
	ck_assert_int_eq((int)(intptr_t)ret, 0);
	assert_all_found(t, objs, NSTABLE);
	ck_assert_uint_eq(relhash_count(t), NSTABLE);
	relhash_destroy(t, NULL, NULL);
	free(objs);
}
END_TEST

/* ---------------------------------------------------------------------- */
/* The torture                                                             */

struct torture {
	struct relhash_table *t;
	struct obj *stable;   /* NSTABLE, or WALK_KEYS * COPIES */
	unsigned nstable;
	bool dups;
	atomic_bool stop;
	atomic_uint rehashes;
};

/* Was o freed?  Its key tells: poisoned (the node, which the table
 * writes atomically, is left alone). */
static bool freed(const struct obj *o)
{
	return tst_is_poisoned(o->key, sizeof(o->key));
}

/* An object a reader met: not freed, with the key asked for. */
static bool sound(const struct obj *o, const unsigned char *key)
{
	return !freed(o) && memcmp(o->key, key, 16) == 0;
}

/* One iteration: each stable object exactly once, nothing poisoned. */
static void check_iteration(struct torture *x, unsigned char *seen)
{
	struct relhash_iter it;
	struct obj *o;

	memset(seen, 0, x->nstable);
	relhash_read_lock();
	for (o = relhash_iter_first(x->t, &it); o; o = relhash_iter_next(&it)) {
		TST_THREAD_CHECK(!freed(o), "iteration met a freed object");
		if (o->stable)
			seen[o->id]++;
	}
	relhash_read_unlock();
	for (unsigned i = 0; i < x->nstable; i++)
		TST_THREAD_CHECK(seen[i] == 1, "iteration returned stable "
		                 "object %u %u times", i, seen[i]);
}

/* A walk of stable key k's objects: each of its COPIES exactly once, and
 * no object twice. */
static void check_walk(struct torture *x, unsigned k)
{
	const unsigned char *key = x->stable[k * COPIES].key;
	const struct obj *met[64];
	unsigned seen = 0, n = 0, i;
	struct obj *o;

	relhash_read_lock();
	for (o = relhash_lookup(x->t, key); o && n < TST_COUNT(met);
	     o = relhash_lookup_next(x->t, o), n++) {
		TST_THREAD_CHECK(sound(o, key), "walk met a wrong object");
		for (i = 0; i < n; i++)
			TST_THREAD_CHECK(met[i] != o, "walk returned an object "
			                 "twice");
		met[n] = o;
		if (o->stable)
			seen |= 1u << (o->id % COPIES);
	}
	relhash_read_unlock();
	TST_THREAD_CHECK(n < TST_COUNT(met), "walk of key %u did not end", k);
	TST_THREAD_CHECK(seen == (1u << COPIES) - 1, "walk of key %u saw "
	                 "stable copies %#x", k, seen);
}

static void *reader(void *arg)
{
	struct torture *x = arg;
	unsigned char *seen = malloc(x->nstable);
	uint64_t rnd = tst_mix64((uintptr_t)&rnd), n = 0;

	TST_THREAD_CHECK(seen != NULL, "out of memory");
	while (seen && !atomic_load(&x->stop)) {
		unsigned i = (unsigned)(tst_rand(&rnd) % x->nstable);
		const unsigned char *key = x->stable[i].key;
		uint64_t h = relhash_hash_key(x->t, key);
		struct obj *o;

		relhash_read_lock();
		o = relhash_lookup(x->t, key);
		TST_THREAD_CHECK(o && sound(o, key), "stable key %u missed", i);
		o = relhash_lookup_hashed(x->t, key, h);
		TST_THREAD_CHECK(o && sound(o, key),
		                 "stable key %u missed by its hash", i);
		relhash_read_unlock();
		if (x->dups)
			check_walk(x, i / COPIES);
		if (++n % 256 == 0)
			check_iteration(x, seen);
	}
	free(seen);
	return NULL;
}

/* Insert, look up, replace, look up, remove, look up: updater u's key i.
 * In a table with duplicate keys the key is a stable key's. */
static void churn_one(struct torture *x, unsigned u, unsigned i)
{
	struct obj *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));
	unsigned char key[16];

	if (x->dups)
		memcpy(key, x->stable[(i % WALK_KEYS) * COPIES].key, 16);
	else
		plain_key(key, 1 + u, i);
	TST_THREAD_CHECK(a && b, "out of memory");
	if (!a || !b)
		return;
	memcpy(a->key, key, 16);
	memcpy(b->key, key, 16);
	TST_THREAD_CHECK(relhash_insert(x->t, &a->node) == 0, "insert failed");
	relhash_read_lock();
	TST_THREAD_CHECK(x->dups || relhash_lookup(x->t, key) == a,
	                 "inserted key missed");
	relhash_read_unlock();
	TST_THREAD_CHECK(relhash_replace(x->t, &a->node, &b->node) == 0,
	                 "replace failed");
	relhash_defer(poison_free, a);
	relhash_read_lock();
	TST_THREAD_CHECK(x->dups || relhash_lookup(x->t, key) == b,
	                 "replacement missed");
	relhash_read_unlock();
	TST_THREAD_CHECK(relhash_remove(x->t, &b->node) == 0, "remove failed");
	relhash_read_lock();
	TST_THREAD_CHECK(x->dups || relhash_lookup(x->t, key) == NULL,
	                 "removed key found");
	relhash_read_unlock();
	relhash_defer(poison_free, b);
}

struct updater_arg {
	struct torture *x;
	unsigned u;
};

/* Manual resizes between 128 and 512 buckets, which the rehashes must
 * wait for or follow (both hold the resize lock). */
static void *resizer(void *arg)
{
	struct torture *x = arg;
	size_t size = 128;

	while (!atomic_load(&x->stop)) {
		TST_THREAD_CHECK(relhash_resize(x->t, size) == 0,
		                 "resize to %zu failed", size);
		size = size == 128 ? 512 : 128;
		tst_sleep_ms(1);
	}
	return NULL;
}

/* With duplicate keys, also take out and put back an object of a stable
 * key that was in the table before the torture (a member of every
 * rehash's snapshot), the same memory each time, a grace period apart:
 * its old SET entry must not make it look like a member. */
static void recycle(struct torture *x, struct obj *o)
{
	TST_THREAD_CHECK(relhash_remove(x->t, &o->node) == 0, "recycle: "
	                 "remove failed");
	relhash_synchronize();
	TST_THREAD_CHECK(relhash_insert(x->t, &o->node) == 0, "recycle: "
	                 "insert failed");
}

static void *updater(void *arg)
{
	struct updater_arg *ua = arg;
	unsigned nmine = ua->x->dups ? NRECYCLE : 0, i = 0, j;
	struct obj *mine = calloc(NRECYCLE, sizeof(*mine));

	TST_THREAD_CHECK(mine != NULL, "out of memory");
	if (!mine)
		return NULL;
	/* Updater u's objects to recycle: keys u, u + NUPDATERS, ... */
	for (j = 0; j < nmine; j++) {
		unsigned k = (ua->u + j * NUPDATERS) % WALK_KEYS;

		memcpy(mine[j].key, ua->x->stable[k * COPIES].key, 16);
		TST_THREAD_CHECK(relhash_insert(ua->x->t, &mine[j].node) == 0,
		                 "insert failed");
	}
	while (!atomic_load(&ua->x->stop)) {
		churn_one(ua->x, ua->u, i % NCHURN);
		if (nmine)
			recycle(ua->x, &mine[i % nmine]);
		i++;
	}
	for (j = 0; j < nmine; j++)
		TST_THREAD_CHECK(relhash_remove(ua->x->t, &mine[j].node) == 0,
		                 "remove failed");
	relhash_defer(poison_free_all, mine);
	return NULL;
}

static void run_torture(bool dups)
{
	struct relhash_params p = base_params;
	struct torture x = { .dups = dups };
	pthread_t r[MAX_READERS], w[NUPDATERS], z;
	struct updater_arg ua[NUPDATERS];
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned nreaders = cpus > 0 && cpus * 4 < MAX_READERS ? (unsigned)cpus * 4
	                                                       : MAX_READERS;
	uint64_t t0 = tst_now_ns();
	unsigned ms = tst_env_unsigned("RELHASH_TORTURE_MS", 1500), i;

	if (dups)
		p.flags = RELHASH_DUPLICATES;
	x.t = relhash_create(&p);
	x.nstable = dups ? WALK_KEYS * COPIES : NSTABLE;
	x.stable = calloc(x.nstable, sizeof(*x.stable));
	ck_assert_ptr_nonnull(x.t);
	ck_assert_ptr_nonnull(x.stable);
	for (i = 0; i < x.nstable; i++) {
		plain_key(x.stable[i].key, 0, dups ? i / COPIES : i);
		x.stable[i].id = i;
		x.stable[i].stable = true;
		ck_assert_int_eq(relhash_insert(x.t, &x.stable[i].node), 0);
	}
	tst_reset_thread_failures();
	for (i = 0; i < nreaders; i++)
		tst_thread_start(&r[i], reader, &x);
	for (i = 0; i < NUPDATERS; i++) {
		ua[i] = (struct updater_arg){ &x, i };
		tst_thread_start(&w[i], updater, &ua[i]);
	}
	tst_thread_start(&z, resizer, &x);
	/* Two rehashes at least, however slow the build (sanitizers). */
	while (tst_ms_since(t0) < ms || atomic_load(&x.rehashes) < 2) {
		ck_assert_int_eq(relhash__debug_rehash(x.t), 0);
		atomic_fetch_add(&x.rehashes, 1);
	}
	atomic_store(&x.stop, true);
	for (i = 0; i < nreaders; i++)
		TST_JOIN(r[i], 10000, "reader stuck");
	for (i = 0; i < NUPDATERS; i++)
		TST_JOIN(w[i], 10000, "updater stuck");
	TST_JOIN(z, 10000, "resizer stuck");
	printf("torture%s: %u rehashes in %.0f ms, %u readers\n",
	       dups ? " (duplicates)" : "", atomic_load(&x.rehashes),
	       tst_ms_since(t0), nreaders);
	tst_assert_no_thread_failures();
	ck_assert_uint_ge(atomic_load(&x.rehashes), 2);
	relhash_barrier();
	relhash_destroy(x.t, NULL, NULL);
	free(x.stable);
}

START_TEST(torture)
{
	run_torture(false);
}
END_TEST

START_TEST(duplicate_walks)
{
	run_torture(true);
}
END_TEST

int main(void)
{
	const TTest *heal[] = {
		known_seed_heals, seedless_hash_stops, stale_hash_lookups,
		replace_absent_in_mid,
	};
	const TTest *tortures[] = { torture, duplicate_walks };
	Suite *s = suite_create("rehash");

	tst_add_tcase(s, "heal", 120, heal, TST_COUNT(heal));
	tst_add_tcase(s, "torture", 120, tortures, TST_COUNT(tortures));
	return tst_run(srunner_create(s));
}
