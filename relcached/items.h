/*
 * relcached/items.h - the cache's items, the one relhash table that holds
 * them, expiry, memory accounting and eviction.
 *
 * An item is immutable once it is in the table: every change (set of an
 * existing key, append, incr, touch, ...) builds a new item and swaps it in
 * with relhash_replace().  Readers (get) take no lock: they look the key up
 * inside a read-side section and copy the value out before the section
 * ends.  Writers of one key stripe are serialised by the stripe's mutex
 * (doc/relcached.md, "Updates").
 */
#ifndef RELCACHED_ITEMS_H
#define RELCACHED_ITEMS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <relhash.h>

#define KEY_MAX_LENGTH 250

/*
 * The key as the table sees it (relhash "custom keys"): a length byte
 * followed by that many bytes.  Lookups pass one of these; an item holds
 * the same layout at struct item.nkey.
 */
struct item_key {
	uint8_t len;
	char bytes[KEY_MAX_LENGTH];
};

struct item {
	struct relhash_node node;
	/* The stripe's CLOCK list (approximate LRU), under the stripe mutex. */
	struct item *lru_prev, *lru_next;
	/* The key's hash, computed once when the item is made: the stripe,
	 * the lookup under the stripe lock and the table's insert use it. */
	uint64_t hash;
	/* Set by readers on a hit, cleared by the eviction hand. */
	atomic_bool referenced;
	uint32_t flags;
	uint32_t nbytes;    /* value bytes, without the trailing "\r\n" */
	uint32_t stored_at; /* Unix time the value was stored (flush_all delay);
	                       32 bits hold it until 2106 */
	uint64_t cas;
	int64_t exptime;    /* absolute Unix time, 0 = never */
	uint8_t nkey;       /* the struct item_key starts here */
	char data[];       /* nkey key bytes, then nbytes value bytes + "\r\n" */
};

static inline char *item_value(struct item *it)
{
	return it->data + it->nkey;
}

static inline const char *item_value_const(const struct item *it)
{
	return it->data + it->nkey;
}

/* Outcomes of the update operations, one per memcached reply. */
enum store_result {
	STORE_STORED,
	STORE_NOT_STORED,
	STORE_EXISTS,
	STORE_NOT_FOUND,
	STORE_DELETED,
	STORE_TOUCHED,
	STORE_NO_MEMORY,
	STORE_NON_NUMERIC,
};

enum store_mode {
	MODE_SET,
	MODE_ADD,
	MODE_REPLACE,
	MODE_APPEND,
	MODE_PREPEND,
	MODE_CAS,
};

/* Process-wide counters (read by "stats"). */
struct store_stats {
	uint64_t curr_items, total_items, bytes, evictions;
	uint64_t reclaimed, limit_maxbytes;
	size_t table_buckets;
	uint64_t table_resizes, table_grace_periods;
	uint64_t table_throttled_inserts; /* stores held by the table's growth */
};

/* Set up the table and the stripes; memory limit in bytes.  0 or -errno. */
int store_init(uint64_t limit_bytes);
/* Free every item (no other thread may use the store any more). */
void store_destroy(void);

/* The current Unix time, from a coarse clock. */
int64_t store_now(void);
/* memcached's exptime argument (relative up to 30 days, else absolute) as
 * an absolute time; negative means already expired. */
int64_t store_exptime(int64_t exptime);

/* Fill a lookup key; false when len is 0 or over KEY_MAX_LENGTH. */
bool item_key_set(struct item_key *k, const char *bytes, size_t len);

/* The bytes an item with this key and value length takes (what "bytes"
 * counts, and what -I limits). */
size_t item_size(size_t nkey, size_t nbytes);

/*
 * A new item (not in the table), with its key and room for nbytes of value
 * plus "\r\n".  NULL when out of memory or bigger than the memory limit.
 */
struct item *item_new(const struct item_key *k, uint32_t flags, int64_t exptime,
                      uint32_t nbytes);
/* Free an item that never went into the table. */
void item_discard(struct item *it);

/*
 * The live item with this key, or NULL.  Call inside a read-side section;
 * the item stays valid until that section ends.  Marks it referenced.
 */
const struct item *store_find(const struct item_key *k);

/* Store it (ownership passes to the store whatever the result).  For
 * MODE_CAS, cas is the client's unique value. */
enum store_result store_item(struct item *it, enum store_mode mode, uint64_t cas);
enum store_result store_delete(const struct item_key *k);
/* incr (decr when !incr); *value receives the new value. */
enum store_result store_arith(const struct item_key *k, bool incr, uint64_t delta,
                              uint64_t *value);
/* Give the item a new expiry; with out != NULL, call out(it, arg) on the
 * touched item before the lock is released (gat/gats). */
enum store_result store_touch(const struct item_key *k, int64_t exptime,
                              void (*out)(const struct item *it, void *arg), void *arg);
/* flush_all: delay 0 invalidates every item now, else at now + delay. */
void store_flush(int64_t delay);

void store_get_stats(struct store_stats *st);

#endif /* RELCACHED_ITEMS_H */
