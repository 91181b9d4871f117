/*
 * tests/test-hash-flood.c - keys built to collide without the seed.
 *
 * An attacker who reads <relhash/inline.h> knows every constant of the
 * default hash but not a table's seed.  Each family below is a set of keys
 * such an attacker can compute; the claim (doc/DESIGN.md, "The default
 * hash") is that none of them collides for the default hash beyond chance:
 * - hash_families: under each of two random seeds, 20,000 keys of a family
 *   have at most 2 full 64-bit collisions, and in 2^15 buckets no bucket
 *   holds more than MAX_PER_BUCKET of them (random keys: about 7);
 * - the previous construction fails it: the detector is run on that
 *   construction (kept below, for this purpose only) and must see its
 *   floods, so the families and the detector can both fail;
 * - flooded_table: a default auto-resizing table filled with a family and
 *   looked up: every key found, the longest chain an insertion walked stays
 *   small (relhash_table_stats()), and the time against random keys of the
 *   same length is printed (benchmarks, not this test, judge speed);
 * - seedless_hash_is_reported, known_seed_is_reported: where the attacker
 *   knows the seed (a user hash that ignores it, or an explicit seed), keys
 *   can be built to share one hash; the table still finds every key, and
 *   says so once on stderr and in its statistics (the known seed's table
 *   then heals: tests/test-rehash.c); with a random seed the same keys do
 *   not collide (random_seed_is_not_flooded).
 */
#include "common.h"

#include <relhash.h>

#define NKEYS 20000
#define KEY_MAX 64
#define NBUCKET_BITS 15
#define MAX_PER_BUCKET 16
#define MAX_FULL_COLLISIONS 2
#define NWEAK 2000
#define KNOWN_SEED 42ull

/* ---------------------------------------------------------------------- */
/* The families                                                            */

#define K0 0x9e3779b97f4a7c15ull
#define K1 0xbf58476d1ce4e5b9ull

struct family {
	const char *name;
	size_t len;
	/* key number i of the family into k (len bytes) */
	void (*make)(unsigned char *k, size_t len, unsigned i);
	bool floods_previous; /* the previous construction fails it */
};

static void put64(unsigned char *k, uint64_t v)
{
	unsigned j;

	for (j = 0; j < 8; j++)
		k[j] = (unsigned char)(v >> (8 * j));
}

static void fill_random(unsigned char *k, size_t len, unsigned i)
{
	uint64_t st = tst_mix64(i + 1);
	size_t j;

	for (j = 0; j < len; j++)
		k[j] = (unsigned char)tst_rand(&st);
}

/* The first word is the public K1: the previous hash multiplied by 0. */
static void first_word_k1(unsigned char *k, size_t len, unsigned i)
{
	fill_random(k, len, i);
	put64(k, K1);
}

/* Every 16-byte block begins with K1, and so does the last one. */
static void every_block_k1(unsigned char *k, size_t len, unsigned i)
{
	size_t off;

	fill_random(k, len, i);
	for (off = 0; off + 16 <= len; off += 16)
		put64(k + off, K1);
	put64(k + len - 16, K1);
}

/* Pairs (a, b), (b ^ C, a ^ C) with C = K0 ^ K1: operands swapped, which
 * collides wherever the two masks differ by a public constant. */
static void swapped_pairs(unsigned char *k, size_t len, unsigned i)
{
	uint64_t st = tst_mix64(i / 2 + 7), a = tst_rand(&st), b = tst_rand(&st);
	const uint64_t c = K0 ^ K1;

	(void)len;
	put64(k, i & 1 ? b ^ c : a);
	put64(k + 8, i & 1 ? a ^ c : b);
}

/* Integers with few bits set, in the high half of the word. */
static void sparse_integers(unsigned char *k, size_t len, unsigned i)
{
	(void)len;
	put64(k, (uint64_t)i << 40);
}

/* A 64-byte key of zeros with one bit flipped (keys 0-511), then two
 * bits x < y (the rest). */
static void bit_flips(unsigned char *k, size_t len, unsigned i)
{
	unsigned x = i, y, j;

	memset(k, 0, len);
	if (i >= 8 * KEY_MAX) {
		j = i - 8 * KEY_MAX;
		x = j / 256;
		y = x + 1 + j % 256;
		k[y / 8] ^= (unsigned char)(1u << (y % 8));
	}
	k[x / 8] ^= (unsigned char)(1u << (x % 8));
}

static const struct family families[] = {
	{ "first word K1, 16 bytes", 16, first_word_k1, true },
	{ "first word K1, 12 bytes", 12, first_word_k1, true },
	{ "every block K1, 48 bytes", 48, every_block_k1, true },
	{ "every block K1, 64 bytes", 64, every_block_k1, true },
	{ "swapped operands, 16 bytes", 16, swapped_pairs, false },
	{ "sparse integers, 8 bytes", 8, sparse_integers, false },
	{ "bit flips, 64 bytes", 64, bit_flips, false },
	{ "random, 16 bytes", 16, fill_random, false },
};

/* ---------------------------------------------------------------------- */
/* The previous construction, the negative control: the first word of each
 * block was masked by the public K1 (zero-blinding).  Here only to show
 * that the families and the detector catch a hash that floods. */

static uint64_t previous_hash(const void *key, size_t len, uint64_t seed)
{
	const unsigned char *p = key;
	uint64_t acc = seed ^ K0, a, b;
	size_t n = len;

	while (n > 16) {
		acc = relhash__fold_mul(relhash__load64(p) ^ K1,
		                        relhash__load64(p + 8) ^ acc);
		p += 16;
		n -= 16;
	}
	if (len > 16) {
		a = relhash__load64(p + n - 16);
		b = relhash__load64(p + n - 8);
	} else { /* the families use lengths 8..16 only */
		a = relhash__load64(p);
		b = relhash__load64(p + len - 8);
	}
	acc = relhash__fold_mul(a ^ K1, b ^ acc);
	return relhash__fold_mul(acc ^ 0x94d049bb133111ebull,
	                         (uint64_t)len ^ 0xd6e8feb86659fd93ull);
}

/* ---------------------------------------------------------------------- */
/* The detector                                                            */

typedef uint64_t (*hash_fn)(const void *key, size_t len, uint64_t seed);

struct flood_report {
	unsigned full_collisions; /* equal 64-bit hashes of distinct keys */
	unsigned max_per_bucket;  /* in 2^NBUCKET_BITS buckets */
};

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static struct flood_report measure(const struct family *f, hash_fn h,
                                   uint64_t seed)
{
	static uint64_t hashes[NKEYS];
	static unsigned short load[1u << NBUCKET_BITS];
	struct flood_report r = { 0, 0 };
	unsigned char key[KEY_MAX];
	unsigned i;

	memset(load, 0, sizeof(load));
	for (i = 0; i < NKEYS; i++) {
		f->make(key, f->len, i);
		hashes[i] = h(key, f->len, seed);
		if (++load[hashes[i] & ((1u << NBUCKET_BITS) - 1)] > r.max_per_bucket)
			r.max_per_bucket = load[hashes[i] &
			                        ((1u << NBUCKET_BITS) - 1)];
	}
	qsort(hashes, NKEYS, sizeof(hashes[0]), cmp_u64);
	for (i = 1; i < NKEYS; i++)
		r.full_collisions += hashes[i] == hashes[i - 1];
	return r;
}

static bool floods(const struct flood_report *r)
{
	return r->full_collisions > MAX_FULL_COLLISIONS ||
	       r->max_per_bucket > MAX_PER_BUCKET;
}

static size_t cmp_len;

static int cmp_key(const void *a, const void *b)
{
	return memcmp(a, b, cmp_len);
}

/* Every family's keys are distinct (else a collision would mean nothing). */
START_TEST(families_are_distinct_keys)
{
	static unsigned char keys[NKEYS][KEY_MAX];
	unsigned f, i;

	for (f = 0; f < TST_COUNT(families); f++) {
		for (i = 0; i < NKEYS; i++)
			families[f].make(keys[i], families[f].len, i);
		cmp_len = families[f].len;
		qsort(keys, NKEYS, KEY_MAX, cmp_key);
		for (i = 1; i < NKEYS; i++)
			ck_assert_msg(memcmp(keys[i], keys[i - 1],
			                     families[f].len) != 0,
			              "%s: two keys are equal", families[f].name);
	}
}
END_TEST

START_TEST(hash_families)
{
	uint64_t st = tst_now_ns();
	unsigned f, s;

	for (s = 0; s < 2; s++) {
		uint64_t seed = tst_rand(&st) | 1;

		for (f = 0; f < TST_COUNT(families); f++) {
			struct flood_report r = measure(&families[f],
			                                relhash_hash, seed);

			printf("default hash, %-28s: %u full collisions, "
			       "at most %u keys per bucket\n", families[f].name,
			       r.full_collisions, r.max_per_bucket);
			ck_assert_msg(!floods(&r), "%s floods the default hash "
			              "(seed %016llx): %u full collisions, %u keys "
			              "in one bucket", families[f].name,
			              (unsigned long long)seed,
			              r.full_collisions, r.max_per_bucket);
		}
	}
}
END_TEST

START_TEST(previous_hash_is_flooded)
{
	uint64_t st = tst_now_ns();
	unsigned f;

	for (f = 0; f < TST_COUNT(families); f++) {
		struct flood_report r = measure(&families[f], previous_hash,
		                                tst_rand(&st) | 1);

		printf("previous hash, %-28s: %u full collisions\n",
		       families[f].name, r.full_collisions);
		if (families[f].floods_previous)
			ck_assert_msg(floods(&r) &&
			                      r.full_collisions > NKEYS / 2,
			              "%s: the detector missed the previous "
			              "hash's flood (%u full collisions)",
			              families[f].name, r.full_collisions);
	}
}
END_TEST

/* ---------------------------------------------------------------------- */
/* Tables                                                                  */

struct fobj {
	unsigned char key[KEY_MAX];
	struct relhash_node node;
};

static struct relhash_table *fill(const struct family *f, struct fobj *objs,
                                  hash_fn h)
{
	struct relhash_params p = {
		.node_offset = offsetof(struct fobj, node),
		.key_offset = offsetof(struct fobj, key),
		.key_len = f->len,
		.hashfn = h,
		.flags = RELHASH_AUTO_RESIZE,
	};
	struct relhash_table *t = relhash_create(&p);
	unsigned i;

	ck_assert_ptr_nonnull(t);
	for (i = 0; i < NKEYS; i++) {
		f->make(objs[i].key, f->len, i);
		ck_assert_int_eq(relhash_insert(t, &objs[i].node), 0);
	}
	return t;
}

/* Look every key up once; returns the time taken in ms.  Each must be
 * found (checked after the clock stops). */
static double lookup_all(struct relhash_table *t, const struct fobj *objs)
{
	uint64_t t0 = tst_now_ns();
	unsigned i, wrong = 0;
	double ms;

	relhash_read_lock();
	for (i = 0; i < NKEYS; i++)
		wrong += relhash_lookup(t, objs[i].key) != &objs[i];
	relhash_read_unlock();
	ms = tst_ms_since(t0);
	ck_assert_uint_eq(wrong, 0);
	return ms;
}

START_TEST(flooded_table)
{
	struct fobj *objs = calloc(NKEYS, sizeof(*objs));
	unsigned f;

	ck_assert_ptr_nonnull(objs);
	for (f = 0; f < TST_COUNT(families); f++) {
		const struct family *fam = &families[f];
		const struct family rnd = { "random", fam->len, fill_random,
			                    false };
		struct relhash_table_stats st = { .size = sizeof(st) };
		struct relhash_table *t = fill(fam, objs, NULL);
		double ms = lookup_all(t, objs), ms_random;

		relhash_table_stats(t, &st);
		relhash_destroy(t, NULL, NULL);
		t = fill(&rnd, objs, NULL);
		ms_random = lookup_all(t, objs);
		relhash_destroy(t, NULL, NULL);
		printf("table, %-28s: lookups %.2f ms (random keys %.2f ms, "
		       "%.2fx), longest chain walked %llu\n", fam->name, ms,
		       ms_random, ms / ms_random,
		       (unsigned long long)st.longest_chain);
		ck_assert_msg(st.longest_chain <= MAX_PER_BUCKET,
		              "%s: an insertion walked %llu nodes", fam->name,
		              (unsigned long long)st.longest_chain);
	}
	free(objs);
}
END_TEST

/* A hashfn that ignores its seed, as user hashes sometimes do. */
static uint64_t seedless_hash(const void *key, size_t len, uint64_t seed)
{
	(void)seed;
	return relhash_hash(key, len, KNOWN_SEED);
}

/*
 * Fill a table whose hash the attacker knows (a seedless hashfn, or an
 * explicit seed): with the seed known, masking is no defence, and the first
 * word s1 = seed * K1 zeroes a multiplicand.  The table still finds every
 * key, and says once on stderr, and in its statistics, that distinct keys
 * share a hash.
 */
static void known_seed_flood(hash_fn h, uint64_t seed)
{
	struct fobj *objs = calloc(NWEAK, sizeof(*objs));
	struct relhash_params p = {
		.node_offset = offsetof(struct fobj, node),
		.key_offset = offsetof(struct fobj, key),
		.key_len = 16,
		.hashfn = h,
		.seed = seed,
	};
	struct relhash_table *t;
	struct relhash_table_stats st = { .size = sizeof(st) };
	struct tst_capture cap;
	char err[4096];
	unsigned i;

	ck_assert_ptr_nonnull(objs);
	t = relhash_create(&p);
	ck_assert_ptr_nonnull(t);
	tst_capture_stderr(&cap);
	for (i = 0; i < NWEAK; i++) {
		fill_random(objs[i].key, 16, i);
		put64(objs[i].key, KNOWN_SEED * K1);
		ck_assert_int_eq(relhash_insert(t, &objs[i].node), 0);
	}
	tst_capture_end(&cap, err, sizeof(err));
	relhash_read_lock();
	for (i = 0; i < NWEAK; i++)
		ck_assert_ptr_eq(relhash_lookup(t, objs[i].key), &objs[i]);
	relhash_read_unlock();
	relhash_table_stats(t, &st);
	relhash_destroy(t, NULL, NULL);
	free(objs);
	printf("known seed: %llu keys share a hash; stderr: %s",
	       (unsigned long long)st.equal_hash_keys, err);
	if (h) {
		ck_assert_uint_eq(st.equal_hash_keys, NWEAK);
		ck_assert_uint_ge(st.longest_chain, NWEAK - 1);
	} else {
		/* With a seed the hash uses, the table rehashes (tests/
		 * test-rehash.c), and later keys no longer collide. */
		ck_assert_uint_ge(st.equal_hash_keys, 16);
	}
	ck_assert_msg(strstr(err, "share one 64-bit hash") != NULL,
	              "no report on stderr: \"%s\"", err);
	ck_assert_msg(strstr(strstr(err, "share one") + 1,
	                     "share one") == NULL, "reported twice: %s", err);
}

START_TEST(seedless_hash_is_reported)
{
	known_seed_flood(seedless_hash, 0);
}
END_TEST

START_TEST(known_seed_is_reported)
{
	known_seed_flood(NULL, KNOWN_SEED);
}
END_TEST

/* The same keys in a table with a random seed: no report, no long chain. */
START_TEST(random_seed_is_not_flooded)
{
	struct fobj *objs = calloc(NWEAK, sizeof(*objs));
	struct relhash_params p = {
		.node_offset = offsetof(struct fobj, node),
		.key_offset = offsetof(struct fobj, key),
		.key_len = 16,
	};
	struct relhash_table *t = relhash_create(&p);
	struct relhash_table_stats st = { .size = sizeof(st) };
	unsigned i;

	ck_assert_ptr_nonnull(objs);
	ck_assert_ptr_nonnull(t);
	for (i = 0; i < NWEAK; i++) {
		fill_random(objs[i].key, 16, i);
		put64(objs[i].key, KNOWN_SEED * K1);
		ck_assert_int_eq(relhash_insert(t, &objs[i].node), 0);
	}
	relhash_table_stats(t, &st);
	relhash_destroy(t, NULL, NULL);
	free(objs);
	ck_assert_uint_le(st.equal_hash_keys, 2);
}
END_TEST

static Suite *flood_suite(void)
{
	Suite *s = suite_create("hash-flood");
	const TTest *tests[] = {
		families_are_distinct_keys,
		hash_families,
		previous_hash_is_flooded,
		flooded_table,
		seedless_hash_is_reported,
		known_seed_is_reported,
		random_seed_is_not_flooded,
	};

	tst_add_tcase(s, "flood", 120, tests, TST_COUNT(tests));
	return s;
}

int main(void)
{
	return tst_run(srunner_create(flood_suite()));
}
