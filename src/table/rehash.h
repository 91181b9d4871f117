/*
 * src/table/rehash.h - moving a table to a new seed while lookups and
 * updates go on (doc/DESIGN.md section 12, "Healing").  Between
 * src/table/rehash.c, which runs the rehash and reads the table while it
 * runs, and src/table/table.c, whose updates and walks take the MID mode
 * below when the array they loaded carries a rehash's state.
 *
 * Names as in doc/DESIGN.md: OLD is the array with the old seed, MID the
 * array published first (empty at first, new seed, its `rehash` field
 * pointing at the struct rh_rehash), NEW the array published by the
 * relink, and the SET the snapshot of OLD's nodes.  A thread that loaded
 * MID is in MID mode: it looks a key up in the key's SET range (by its old
 * hash), then in MID's chain (by its new hash).
 */
#ifndef RELHASH_REHASH_H
#define RELHASH_REHASH_H

#include <stdbool.h>
#include <stdint.h>

#include "table_internal.h"

/* A SET entry's node word: the node's address, with this bit once the
 * node has been removed (the address stays, so that a duplicate walk
 * standing on the node can find its place). */
#define RH_SET_REMOVED ((uintptr_t)1)

struct rh_set_entry {
	/* Written in the snapshot, before MID's publication; then the
	 * removal bit, and the address erased when the node (or its memory)
	 * is linked again (rh_rehash_forget()), with release stores under
	 * the lock of the node's new hash (table.c). */
	_Atomic uintptr_t node;
	uint64_t old_hash; /* the node's hash in OLD */
	uint64_t new_hash; /* the relink's own, before it takes the locks */
};

/*
 * The state of one rehash, pointed to by MID's `rehash` field: written
 * before MID's publication and never after (but the entries' removal
 * bits), freed with MID after the grace period that follows NEW's
 * publication.
 */
struct rh_rehash {
	/* OLD is freed a grace period before the rest: after that, only its
	 * seed and mask, kept here, are read */
	struct relhash__buckets *old, *mid, *new;
	uint64_t old_seed;
	size_t old_mask;
	size_t *start;             /* OLD bucket b's entries: [start[b],
	                              start[b + 1]) */
	struct rh_set_entry *set;
	size_t nset;               /* entries in use */
	size_t cap;                /* entries allocated */
	struct relhash_node **tails; /* the relink's, per NEW bucket */
};

static inline const struct rh_rehash *rh_rehash_of(const struct relhash__buckets *b)
{
	return (const struct rh_rehash *)b->rehash;
}

/* The live node of entry e, or NULL once removed.  Acquire: pairs with
 * the removal's release store, so that a reader that sees a replaced
 * member's bit also finds the replacement in MID's chain (table.c,
 * rh_rehash_unlink()). */
static inline struct relhash_node *rh_set_live(const struct rh_set_entry *e)
{
	uintptr_t w = rh_load_acquire(&e->node);

	return w & RH_SET_REMOVED ? NULL : (struct relhash_node *)w;
}

/* rehash.c: in MID mode, the live SET entry of node, or NULL if node is
 * not a member; under the lock of node's new hash. */
struct rh_set_entry *rh_rehash_member(const struct relhash_table *t,
                                      const struct relhash__buckets *mid,
                                      const struct relhash_node *node);

/* rehash.c: in MID mode, the first live member with obj's key, or NULL;
 * under the lock of the key's new hash. */
struct relhash_node *rh_rehash_find_member(const struct relhash_table *t,
                                           const struct relhash__buckets *mid,
                                           const void *obj);

/* rehash.c: before node is linked (inserted, or as a replacement) under
 * array b, while a rehash's SET is in use (MID mode, or NEW mode until
 * GP2): forget the entry it left in its key's range if it was removed as a
 * member, or its memory was such a member's (its address would make a
 * duplicate walk standing on it take it for one); under the lock of its
 * key's hash in b. */
void rh_rehash_forget(struct relhash_table *t, const struct relhash__buckets *b,
                      const struct relhash_node *node);

/* rehash.c: in NEW mode while the rehash still runs (until its last grace
 * period), a duplicate walk standing on a member removed in MID mode,
 * which the relink left out: its successors are MID mode's.  Returns
 * whether node is such a member, with the next object in *next. */
bool rh_rehash_left_behind(struct relhash_table *t,
                           const struct relhash__buckets *b,
                           const struct relhash_node *node, void **next);

/* rehash.c: mark e's member removed (or replaced: after the replacement is
 * linked); under the lock of the member's new hash. */
void rh_rehash_unlink(struct rh_set_entry *e);

/* rehash.c: relhash_lookup_next() in MID mode; in a read-side section. */
void *rh_rehash_lookup_next(struct relhash_table *t,
                            const struct relhash__buckets *mid,
                            const struct relhash_node *node);

/* rehash.c: relhash_iter_first() and relhash_iter_next() in MID mode: the
 * SET's live members, then MID's chains (table.c, rh_iter_scan()). */
void *rh_rehash_iter_members(struct relhash_iter *it, size_t from);

#endif /* RELHASH_REHASH_H */
