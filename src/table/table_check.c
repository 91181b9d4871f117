/*
 * src/table/table_check.c - the consistency checks of debug builds
 * (RELHASH_DEBUG): the family-lock assertion behind rh_chain_load(), and
 * the invariants I1, I2 and I5 of src/table/table_internal.h, checked on a
 * family after each update and after the resizer links or unzips it, and on
 * the whole table after each resize step.  A violation aborts with the
 * invariant's name.  Release builds compile this file to nothing.
 *
 * Cost: a family check walks the family's chains in every array of its
 * view (O(L log L) for L nodes, to compare node sets); families of more
 * than CHECK_MAX_NODES nodes, or of more than CHECK_MAX_BUCKETS buckets in
 * one array (a shrink by a large factor), get the I1 and I5 checks only.
 * Every update checks its family.  The resizer checks at most about
 * CHECK_FAMILIES families per loop over the families (linking, an unzip
 * pass, the whole table after a step): all of them in smaller tables, in
 * larger ones a sample that moves from one loop to the next.  Checking
 * every family at every step and pass made the resize thread of a debug
 * build fall behind a burst of insertions (tests/test-growth).
 */
#include "config.h"

#ifdef RELHASH_DEBUG
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "table_internal.h"

#define CHECK_MAX_NODES 1024
#define CHECK_MAX_BUCKETS 64
#define CHECK_FAMILIES 1024

__thread char rh_debug_thread_token __attribute__((tls_model("initial-exec")));

static void __attribute__((noreturn))
broken_at(const char *file, int line, const struct relhash_table *t,
          uint64_t h, const char *what)
{
	fprintf(stderr, "relhash: %s:%d: table %p, family of hash %#" PRIx64
	        ": %s\n", file, line, (const void *)t, h, what);
	abort();
}

#define broken(t, h, what) broken_at(__FILE__, __LINE__, (t), (h), (what))

void rh_lock_not_held(const struct rh_lock *l, const struct relhash_table *t,
                      uint64_t h, const char *file, int line)
{
	if (t)
		broken_at(file, line, t, h, "family lock not held by the caller");
	fprintf(stderr, "relhash: %s:%d: lock %p not held by the caller\n",
	        file, line, (const void *)l);
	abort();
}

/* The family's nodes met on its chains, with repetitions. */
struct seen {
	const struct relhash_node *node[CHECK_MAX_NODES];
	size_t n;
	bool overflow;
};

/*
 * Walk chain i of array b: only nodes of the family (I1), and only of
 * bucket i when the family is at rest; an end (Brent's cycle detection: a
 * mark moved to the current node at every power of two steps).  Returns how
 * many nodes of bucket i the chain holds, and records every node in seen.
 */
static size_t walk_chain(const struct relhash_table *t,
                         const struct relhash__buckets *b, size_t i,
                         const struct rh_view *v, bool at_rest,
                         struct seen *seen)
{
	const struct relhash_node *n, *mark = NULL;
	size_t own = 0, steps = 0, lap = 1;

	for (n = rh_chain_load(t, i, &relhash__heads(b)[i]); n;
	     n = rh_chain_load(t, i, &n->next)) {
		if ((n->hash & v->fmask) != (i & v->fmask))
			broken(t, i, "I1: a chain holds a node of another family");
		if (at_rest && !rh_node_in(n, b->mask, i))
			broken(t, i, "I1: a chain at rest holds a node of another bucket");
		if (n == mark)
			broken(t, i, "I1: a chain does not end (cycle)");
		if (++steps == lap) {
			mark = n;
			lap <<= 1;
			steps = 0;
		}
		own += rh_node_in(n, b->mask, i);
		if (seen->n < CHECK_MAX_NODES)
			seen->node[seen->n++] = n;
		else
			seen->overflow = true;
	}
	return own;
}

static int cmp_ptr(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)*(const void *const *)a;
	uintptr_t y = (uintptr_t)*(const void *const *)b;

	return x < y ? -1 : x > y;
}

/* I5: each cursor is NULL or in its bucket's clean prefix. */
static void check_cursors(const struct relhash_table *t, const struct rh_view *v,
                          uint64_t h)
{
	/* Acquire, as in move_cursor(): pairs with the resizer's release
	 * store of the zeroed array. */
	rh_link *cursors = rh_load_acquire(&t->unzip_cursors);
	const struct relhash__buckets *b = v->arr[0];
	const struct relhash_node *n, *c;
	size_t i;

	if (!cursors || v->narr != 1 || v->fmask == b->mask)
		return;
	for (i = h & v->fmask; i <= b->mask; i += v->fmask + 1) {
		/* Relaxed: written under the family lock, which we hold. */
		c = rh_load(&cursors[i]);
		for (n = rh_chain_load(t, i, &relhash__heads(b)[i]);
		     c && n != c && n && rh_node_in(n, b->mask, i);
		     n = rh_chain_load(t, i, &n->next))
			;
		if (c && n != c)
			broken(t, h, "I5: an unzip cursor is not in its bucket's clean prefix");
	}
}

/* The index, among the family's buckets in array b, of node n's bucket. */
static size_t bucket_in_family(const struct relhash__buckets *b,
                               const struct rh_view *v,
                               const struct relhash_node *n)
{
	return (n->hash & b->mask) / (v->fmask + 1);
}

/* I2: in every array, the nodes of a bucket found from its head are all
 * the nodes of that bucket found on any chain of the family.  own[a][k]:
 * nodes of the family's k-th bucket of array a found from its head. */
static void check_reachable(const struct relhash_table *t, uint64_t h,
                            const struct rh_view *v, struct seen *seen,
                            size_t own[2][CHECK_MAX_BUCKETS])
{
	size_t found[2][CHECK_MAX_BUCKETS] = { { 0 } }, u, k;
	unsigned a;

	qsort(seen->node, seen->n, sizeof(seen->node[0]), cmp_ptr);
	for (u = 0; u < seen->n; u++)
		if (u == 0 || seen->node[u] != seen->node[u - 1])
			for (a = 0; a < v->narr; a++)
				found[a][bucket_in_family(v->arr[a], v,
				                          seen->node[u])]++;
	for (a = 0; a < v->narr; a++)
		for (k = 0; k <= v->arr[a]->mask / (v->fmask + 1); k++)
			if (found[a][k] != own[a][k])
				broken(t, h, "I2: a node of a bucket is not reachable from its head");
}

void rh_check_family(struct relhash_table *t, uint64_t h)
{
	/* Per thread, not on the stack: library and user threads may have
	 * small stacks. */
	static __thread struct seen seen;
	size_t own[2][CHECK_MAX_BUCKETS], i, k, buckets;
	bool small = true;
	struct rh_view v;
	unsigned a;

	rh_view_get(t, h, &v);
	seen.n = 0;
	seen.overflow = false;
	for (a = 0; a < v.narr; a++) {
		const struct relhash__buckets *b = v.arr[a];
		bool at_rest = v.narr == 1 && v.fmask == b->mask;

		buckets = b->mask / (v.fmask + 1) + 1;
		small = small && buckets <= CHECK_MAX_BUCKETS;
		for (i = h & v.fmask, k = 0; i <= b->mask; i += v.fmask + 1, k++) {
			size_t n = walk_chain(t, b, i, &v, at_rest, &seen);

			if (k < CHECK_MAX_BUCKETS)
				own[a][k] = n;
		}
	}
	check_cursors(t, &v, h);
	if (small && !seen.overflow)
		check_reachable(t, h, &v, &seen, own);
}

/*
 * Is family f of nfamilies in this round's sample?  All of them up to
 * CHECK_FAMILIES, else every stride-th from an offset that moves with each
 * resize step and unzip pass, so that successive rounds see different
 * families.  resize_lock held: the counters are the resizer's, and
 * relaxed loads read its own latest values.
 */
static bool sampled(const struct relhash_table *t, size_t f, size_t nfamilies)
{
	size_t stride = nfamilies / CHECK_FAMILIES;

	return stride <= 1 ||
	       (f + rh_load(&t->stat_resizes) + rh_load(&t->stat_unzip_passes)) %
	       stride == 0;
}

void rh_check_resized_family(struct relhash_table *t, size_t f,
                             size_t nfamilies)
{
	if (sampled(t, f, nfamilies))
		rh_check_family(t, f);
}

void rh_check_table(struct relhash_table *t)
{
	/* Relaxed: the resizer, which holds the resize lock we hold, is
	 * their only writer. */
	const struct relhash__buckets *cur = rh_load(&t->pub.buckets);
	const struct relhash__buckets *fut = rh_load(&t->future);
	size_t fmask = cur->mask, f, lock;

	rh_assert_held(&t->resize_lock);
	if (fut && fut->mask < fmask)
		fmask = fut->mask;
	if (rh_load(&t->zip_mask) < fmask)
		fmask = rh_load(&t->zip_mask);
	for (f = 0; f <= fmask; f++) {
		if (!sampled(t, f, fmask + 1))
			continue;
		lock = rh_lock_family(t, f);
		rh_check_family(t, f);
		rh_unlock(t, lock);
	}
}
#else
/* ISO C forbids an empty translation unit. */
typedef int rh_table_check_unused;
#endif
