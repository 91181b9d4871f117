/*
 * relcached/items.c - items, the table, expiry, memory limit and eviction.
 *
 * Concurrency (doc/relcached.md, "Updates"): readers call store_find()
 * inside a read-side section and take no lock.  Every update of a key
 * takes the mutex of the key's stripe (one of NSTRIPES, chosen by the hash's
 * top bits), looks the current item up, builds a new immutable item and
 * swaps it in with relhash_insert() or relhash_replace(); an item taken out
 * of the table is freed with relhash_defer_free(), after every reader that
 * might still be copying it has left its section.  The stripe mutex also
 * guards the stripe's CLOCK list, which the eviction hand walks.
 */
#include "items.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

/* The test's negative control (tests/test-relcached.sh builds
 * relcached/relcached-nolock with RELCACHED_TEST_BUG=1): updates take no
 * stripe lock, and the concurrent test must notice. */
#ifndef RELCACHED_TEST_BUG
#define RELCACHED_TEST_BUG 0
#endif

#define NSTRIPES 64
#define STRIPE_SHIFT 58 /* 64 - log2(NSTRIPES): the hash's top bits */
/* The eviction hand looks at most this many items per eviction: CLOCK's
 * second chance, bounded. */
#define CLOCK_SCAN 8
#define REL_TIME_MAX (60 * 60 * 24 * 30) /* memcached: longer is absolute */

_Static_assert(offsetof(struct item, data) == offsetof(struct item, nkey) + 1,
               "struct item_key's layout must match the item's key");
_Static_assert(offsetof(struct item_key, bytes) == 1, "key bytes follow the length");

struct stripe {
	pthread_mutex_t lock;
	struct item *lru_head; /* the oldest: where the eviction hand starts */
	struct item *lru_tail;
	size_t count;          /* items on the list */
} __attribute__((aligned(64)));

static uint64_t hash_seed;
static struct relhash_table *table;
static struct stripe stripes[NSTRIPES];
static uint64_t limit_bytes;

/*
 * Statistics and the eviction hand: relaxed, each is a count that no other
 * memory access depends on (make_room() reads bytes as a hint and may
 * overshoot by the items being stored at that moment).
 */
static atomic_uint_fast64_t curr_items, total_items, bytes_used, evictions,
	reclaimed, victim_hand;
/* CAS values only need to be unique: the read-modify-write gives that
 * with relaxed order. */
static atomic_uint_fast64_t cas_counter;
/*
 * flush_all: items with cas <= flush_cas are dead at once; items stored
 * before flush_at are dead from flush_at on.  Release stores, acquire
 * loads: a "get" that follows a flush's OK (even on another connection,
 * ordered by the client) must see it.
 */
static atomic_uint_fast64_t flush_cas;
static atomic_int_fast64_t flush_at;

/*
 * The table's hash: relhash_siphash() (SipHash-1-3) under the process's
 * secret 64-bit seed; the table's own seed is not needed.  1-3 rather than
 * the paper's 2-4: a client sees no hash value, nor anything that depends
 * on one (doc/relcached.md, "Keys from the network"), only timings, which
 * is the setting Rust and Python chose SipHash-1-3 for.
 */
static uint64_t key_hash(const struct item_key *k)
{
	return relhash_siphash(k->bytes, k->len, hash_seed);
}

static uint64_t table_key_hash(const void *key, size_t key_len, uint64_t seed)
{
	(void)key_len;
	(void)seed;
	return key_hash(key);
}

static const struct item_key *key_of(const struct item *it)
{
	return (const struct item_key *)(const void *)&it->nkey;
}

/* An item's hash was computed when it was made (item_alloc()). */
static uint64_t item_hash(const void *obj, uint64_t seed)
{
	const struct item *it = obj;

	(void)seed;
	return it->hash;
}

static int key_cmp(const void *key, const void *obj)
{
	const struct item_key *k = key;
	const struct item *it = obj;

	return !(k->len == it->nkey && memcmp(k->bytes, it->data, k->len) == 0);
}

/* Constant, so that relhash_lookup_fast() inlines table_key_hash and key_cmp. */
static const struct relhash_params table_params = {
	.node_offset = offsetof(struct item, node),
	.key_offset = offsetof(struct item, nkey),
	.key_len = 0,
	.hashfn = table_key_hash,
	.obj_hashfn = item_hash,
	.cmpfn = key_cmp,
	.initial_size = 16,
	.min_size = 16,
	.flags = RELHASH_AUTO_RESIZE,
};

int store_init(uint64_t limit)
{
	if (getrandom(&hash_seed, sizeof(hash_seed), 0) != sizeof(hash_seed))
		return errno ? -errno : -EIO;
	table = relhash_create(&table_params);
	if (!table)
		return -errno;
	for (int i = 0; i < NSTRIPES; i++)
		pthread_mutex_init(&stripes[i].lock, NULL);
	limit_bytes = limit;
	return 0;
}

static void free_item(void *obj, void *arg)
{
	(void)arg;
	free(obj);
}

void store_destroy(void)
{
	relhash_destroy(table, free_item, NULL);
	table = NULL;
	/* Items removed earlier are still queued for relhash_defer_free(). */
	relhash_barrier();
}

int64_t store_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME_COARSE, &ts);
	return ts.tv_sec;
}

int64_t store_exptime(int64_t exptime)
{
	if (exptime == 0)
		return 0;
	if (exptime < 0)
		return -1;
	if (exptime > REL_TIME_MAX)
		return exptime;
	return store_now() + exptime;
}

static bool item_live(const struct item *it, int64_t now)
{
	int64_t at;

	if (it->exptime != 0 && it->exptime <= now)
		return false;
	if (it->cas <= atomic_load_explicit(&flush_cas, memory_order_acquire))
		return false;
	at = atomic_load_explicit(&flush_at, memory_order_acquire);
	return !(at != 0 && now >= at && it->stored_at < at);
}

bool item_key_set(struct item_key *k, const char *bytes, size_t len)
{
	if (len == 0 || len > KEY_MAX_LENGTH)
		return false;
	k->len = (uint8_t)len;
	memcpy(k->bytes, bytes, len);
	return true;
}

size_t item_size(size_t nkey, size_t nbytes)
{
	/* Not sizeof(struct item): its tail padding (7 bytes) is where the
	 * key starts. */
	return offsetof(struct item, data) + nkey + nbytes + 2;
}

/* A new item with key k, whose hash is hash. */
static struct item *item_alloc(const struct item_key *k, uint64_t hash, uint32_t flags,
                               int64_t exptime, uint32_t nbytes)
{
	size_t size = item_size(k->len, nbytes);
	struct item *it;

	if (size > limit_bytes)
		return NULL;
	it = malloc(size);
	if (!it)
		return NULL;
	memset(it, 0, offsetof(struct item, data));
	atomic_init(&it->referenced, false);
	it->hash = hash;
	it->flags = flags;
	it->nbytes = nbytes;
	it->exptime = exptime;
	it->nkey = k->len;
	memcpy(it->data, k->bytes, k->len);
	memcpy(item_value(it) + nbytes, "\r\n", 2);
	return it;
}

struct item *item_new(const struct item_key *k, uint32_t flags, int64_t exptime,
                      uint32_t nbytes)
{
	return item_alloc(k, key_hash(k), flags, exptime, nbytes);
}

/* A new item with old's key and flags (and room for nbytes of value). */
static struct item *item_like(const struct item *old, int64_t exptime, uint32_t nbytes)
{
	return item_alloc(key_of(old), old->hash, old->flags, exptime, nbytes);
}

void item_discard(struct item *it)
{
	free(it);
}

const struct item *store_find(const struct item_key *k)
{
	struct item *it = relhash_lookup_fast(table, k, table_params);

	if (!it || !item_live(it, store_now()))
		return NULL;
	/* A hint for the eviction hand; the load first keeps hot items'
	 * cache lines shared. */
	if (!atomic_load_explicit(&it->referenced, memory_order_relaxed))
		atomic_store_explicit(&it->referenced, true, memory_order_relaxed);
	return it;
}

/* ------------------------------------------------------------------ */
/* Stripes and their CLOCK lists                                        */

static void lru_link(struct stripe *s, struct item *it)
{
	it->lru_next = NULL;
	it->lru_prev = s->lru_tail;
	if (s->lru_tail)
		s->lru_tail->lru_next = it;
	else
		s->lru_head = it;
	s->lru_tail = it;
	s->count++;
}

static void lru_unlink(struct stripe *s, struct item *it)
{
	if (it->lru_prev)
		it->lru_prev->lru_next = it->lru_next;
	else
		s->lru_head = it->lru_next;
	if (it->lru_next)
		it->lru_next->lru_prev = it->lru_prev;
	else
		s->lru_tail = it->lru_prev;
	s->count--;
}

/*
 * Lock the stripe of the keys with this hash and enter a read-side section:
 * the lookup walks chains that hold other stripes' items too, which their
 * writers may free.  The stripe's own items stay put until stripe_unlock().
 */
static struct stripe *stripe_lock(uint64_t hash)
{
	struct stripe *s = &stripes[hash >> STRIPE_SHIFT];

	if (!RELCACHED_TEST_BUG)
		pthread_mutex_lock(&s->lock);
	relhash_read_lock();
	return s;
}

static void stripe_unlock(struct stripe *s)
{
	relhash_read_unlock();
	if (!RELCACHED_TEST_BUG)
		pthread_mutex_unlock(&s->lock);
}

/* Under the stripe lock: the item with key k (whose hash is hash) in the
 * table, live or not. */
static struct item *locked_find(const struct item_key *k, uint64_t hash)
{
	return relhash_lookup_hashed(table, k, hash);
}

static void account(struct item *it, int sign)
{
	uint64_t size = item_size(it->nkey, it->nbytes);

	if (sign > 0) {
		atomic_fetch_add_explicit(&curr_items, 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&bytes_used, size, memory_order_relaxed);
	} else {
		atomic_fetch_sub_explicit(&curr_items, 1, memory_order_relaxed);
		atomic_fetch_sub_explicit(&bytes_used, size, memory_order_relaxed);
	}
}

static void die_on(int rc, const char *what)
{
	if (rc != 0) {
		fprintf(stderr, "relcached: %s: %s\n", what, strerror(-rc));
		abort();
	}
}

/*
 * Under s's lock: old, just taken out of the table, leaves the stripe's
 * list and the accounting.  The caller frees it with relhash_defer_free()
 * once it has released the lock and left its read-side section: there the
 * call may wait for the callback thread to catch up (the library's
 * back-pressure), which bounds the memory that retired items hold.
 */
static void retire(struct stripe *s, struct item *old)
{
	lru_unlink(s, old);
	account(old, -1);
}

/* Under s's lock: nw takes old's place in the table (old may be NULL; the
 * caller frees it, as after retire()). */
static void swap_in(struct stripe *s, struct item *old, struct item *nw)
{
	if (old) {
		die_on(relhash_replace(table, &old->node, &nw->node), "relhash_replace");
		retire(s, old);
	} else {
		die_on(relhash_insert(table, &nw->node), "relhash_insert");
	}
	lru_link(s, nw);
	account(nw, +1);
	atomic_fetch_add_explicit(&total_items, 1, memory_order_relaxed);
}

static uint64_t next_cas(void)
{
	return atomic_fetch_add_explicit(&cas_counter, 1, memory_order_relaxed) + 1;
}

/* ------------------------------------------------------------------ */
/* Eviction                                                             */

/*
 * One step of the CLOCK hand on stripe s: give each referenced item under
 * the hand a second chance (clear its bit, move it to the tail), up to
 * CLOCK_SCAN items or the whole stripe, and take out the first expired or
 * unreferenced one.  When every item looked at was referenced, take out the
 * one under the hand only if force is set: another stripe may hold colder
 * items (a stripe of one hot item would otherwise lose it at every visit).
 * The item whose cas is spare, the one just stored, is never taken: it is
 * the most recently used, and alone in its stripe it would otherwise be
 * the first item under the hand (0 spares nothing: cas values start at
 * 1).  Returns whether an item was taken out.
 */
static bool evict_one(struct stripe *s, bool force, uint64_t spare)
{
	int64_t now = store_now();
	struct item *victim = NULL;
	size_t scan;

	pthread_mutex_lock(&s->lock);
	scan = s->count < CLOCK_SCAN ? s->count : CLOCK_SCAN;
	for (size_t step = 0; step < scan && !victim; step++) {
		struct item *it = s->lru_head;

		if (it->cas != spare &&
		    (!item_live(it, now) ||
		     !atomic_exchange_explicit(&it->referenced, false, memory_order_relaxed)))
			victim = it;
		else {
			lru_unlink(s, it);
			lru_link(s, it);
		}
	}
	if (!victim && force && s->lru_head && s->lru_head->cas != spare)
		victim = s->lru_head;
	if (victim) {
		bool live = item_live(victim, now);

		die_on(relhash_remove(table, &victim->node), "relhash_remove");
		retire(s, victim);
		atomic_fetch_add_explicit(live ? &evictions : &reclaimed, 1,
		                          memory_order_relaxed);
	}
	pthread_mutex_unlock(&s->lock);
	relhash_defer_free(victim);
	return victim != NULL;
}

/*
 * Evict until under the memory limit, holding no stripe lock, sparing the
 * item whose cas is spare (see evict_one()).  After a round of stripes
 * without a victim (every item recently read), evict regardless; after
 * two, give up (the stripes are empty).
 */
static void make_room(uint64_t spare)
{
	int idle = 0;

	while (atomic_load_explicit(&bytes_used, memory_order_relaxed) > limit_bytes &&
	       idle < 2 * NSTRIPES) {
		uint64_t hand = atomic_fetch_add_explicit(&victim_hand, 1,
		                                          memory_order_relaxed);

		if (evict_one(&stripes[hand % NSTRIPES], idle >= NSTRIPES, spare))
			idle = 0;
		else
			idle++;
	}
}

/* ------------------------------------------------------------------ */
/* Updates                                                              */

/* append/prepend: a new item holding old's value joined with add's. */
static struct item *joined(const struct item *old, const struct item *add, bool append)
{
	struct item *it = item_like(old, old->exptime, old->nbytes + add->nbytes);
	const struct item *first = append ? old : add;
	const struct item *second = append ? add : old;

	if (!it)
		return NULL;
	memcpy(item_value(it), item_value_const(first), first->nbytes);
	memcpy(item_value(it) + first->nbytes, item_value_const(second), second->nbytes);
	return it;
}

/* Whether mode may store over cur (the live item, or NULL). */
static enum store_result store_check(const struct item *cur, enum store_mode mode,
                                     uint64_t cas)
{
	switch (mode) {
	case MODE_SET:
		return STORE_STORED;
	case MODE_ADD:
		return cur ? STORE_NOT_STORED : STORE_STORED;
	case MODE_CAS:
		if (!cur)
			return STORE_NOT_FOUND;
		return cur->cas == cas ? STORE_STORED : STORE_EXISTS;
	default:
		return cur ? STORE_STORED : STORE_NOT_STORED;
	}
}

enum store_result store_item(struct item *it, enum store_mode mode, uint64_t cas)
{
	int64_t now = store_now();
	struct stripe *s = stripe_lock(it->hash);
	struct item *old = locked_find(key_of(it), it->hash);
	struct item *cur = old && item_live(old, now) ? old : NULL;
	enum store_result res = store_check(cur, mode, cas);
	uint64_t stored_cas = 0;

	if (res == STORE_STORED && (mode == MODE_APPEND || mode == MODE_PREPEND)) {
		struct item *both = joined(cur, it, mode == MODE_APPEND);

		item_discard(it);
		it = both;
		if (!it)
			res = STORE_NO_MEMORY;
	}
	if (res == STORE_STORED) {
		it->cas = stored_cas = next_cas();
		it->stored_at = (uint32_t)now;
		swap_in(s, old, it);
		it = NULL;
	} else {
		old = NULL; /* stays in the table */
	}
	stripe_unlock(s);
	relhash_defer_free(old);
	if (it)
		item_discard(it);
	if (res == STORE_STORED)
		make_room(stored_cas);
	return res;
}

enum store_result store_delete(const struct item_key *k)
{
	uint64_t hash = key_hash(k);
	struct stripe *s = stripe_lock(hash);
	struct item *old = locked_find(k, hash);
	enum store_result res = STORE_NOT_FOUND;

	if (old) {
		if (item_live(old, store_now()))
			res = STORE_DELETED;
		die_on(relhash_remove(table, &old->node), "relhash_remove");
		retire(s, old);
	}
	stripe_unlock(s);
	relhash_defer_free(old);
	return res;
}

/* memcached's rule: decimal digits, then nothing or spaces. */
static bool parse_counter(const struct item *it, uint64_t *value)
{
	const char *p = item_value_const(it), *end = p + it->nbytes;
	uint64_t v = 0;

	if (p == end || *p < '0' || *p > '9')
		return false;
	for (; p < end && *p >= '0' && *p <= '9'; p++) {
		unsigned d = (unsigned)(*p - '0');

		if (v > (UINT64_MAX - d) / 10)
			return false;
		v = v * 10 + d;
	}
	for (; p < end; p++)
		if (*p != ' ')
			return false;
	*value = v;
	return true;
}

/* A copy of old (key, flags, cas) with another value. */
static struct item *with_number(const struct item *old, uint64_t value)
{
	char digits[24];
	int n = snprintf(digits, sizeof(digits), "%llu", (unsigned long long)value);
	struct item *it = item_like(old, old->exptime, (uint32_t)n);

	if (it)
		memcpy(item_value(it), digits, (size_t)n);
	return it;
}

enum store_result store_arith(const struct item_key *k, bool incr, uint64_t delta,
                              uint64_t *value)
{
	int64_t now = store_now();
	uint64_t hash = key_hash(k);
	struct stripe *s = stripe_lock(hash);
	struct item *old = locked_find(k, hash), *it, *dead = NULL;
	enum store_result res = STORE_STORED;
	uint64_t v, stored_cas = 0;

	if (!old || !item_live(old, now))
		res = STORE_NOT_FOUND;
	else if (!parse_counter(old, &v))
		res = STORE_NON_NUMERIC;
	if (res == STORE_STORED) {
		/* incr wraps at 2^64, decr stops at 0 (memcached). */
		v = incr ? v + delta : (delta > v ? 0 : v - delta);
		it = with_number(old, v);
		if (it) {
			it->cas = stored_cas = next_cas();
			it->stored_at = (uint32_t)now;
			swap_in(s, old, it);
			dead = old;
			*value = v;
		} else {
			res = STORE_NO_MEMORY;
		}
	}
	stripe_unlock(s);
	relhash_defer_free(dead);
	if (res == STORE_STORED)
		make_room(stored_cas); /* the number may have grown longer */
	return res;
}

enum store_result store_touch(const struct item_key *k, int64_t exptime,
                              void (*out)(const struct item *it, void *arg), void *arg)
{
	uint64_t hash = key_hash(k);
	struct stripe *s = stripe_lock(hash);
	struct item *old = locked_find(k, hash), *it = NULL, *dead = NULL;
	enum store_result res = STORE_NOT_FOUND;

	if (old && item_live(old, store_now())) {
		it = item_like(old, exptime, old->nbytes);
		res = it ? STORE_TOUCHED : STORE_NO_MEMORY;
	}
	if (it) {
		/* Same value, same cas: only the expiry changes. */
		memcpy(item_value(it), item_value_const(old), old->nbytes);
		it->cas = old->cas;
		it->stored_at = old->stored_at;
		atomic_store_explicit(&it->referenced, true, memory_order_relaxed);
		swap_in(s, old, it);
		dead = old;
		if (out)
			out(it, arg);
	}
	stripe_unlock(s);
	relhash_defer_free(dead);
	return res;
}

void store_flush(int64_t delay)
{
	if (delay > 0) {
		atomic_store_explicit(&flush_at, store_now() + delay, memory_order_release);
		return;
	}
	atomic_store_explicit(&flush_at, 0, memory_order_release);
	atomic_store_explicit(&flush_cas, atomic_load_explicit(&cas_counter,
	                                                       memory_order_relaxed),
	                      memory_order_release);
}

void store_get_stats(struct store_stats *st)
{
	struct relhash_table_stats ts = { .size = sizeof(ts) };

	relhash_table_stats(table, &ts);
	st->curr_items = atomic_load_explicit(&curr_items, memory_order_relaxed);
	st->total_items = atomic_load_explicit(&total_items, memory_order_relaxed);
	st->bytes = atomic_load_explicit(&bytes_used, memory_order_relaxed);
	st->evictions = atomic_load_explicit(&evictions, memory_order_relaxed);
	st->reclaimed = atomic_load_explicit(&reclaimed, memory_order_relaxed);
	st->limit_maxbytes = limit_bytes;
	st->table_buckets = relhash_size(table);
	st->table_resizes = ts.resizes;
	st->table_grace_periods = ts.grace_periods;
	st->table_throttled_inserts = ts.throttled_inserts;
}
