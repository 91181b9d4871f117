/*
 * src/base/debug.h - race widening for test builds.
 *
 * In builds configured with --enable-debug (RELHASH_DEBUG), rh_debug_yield()
 * sits at each step of a resize and at the start of lookups and updates, and
 * sometimes yields the processor or sleeps briefly, so that the interleavings
 * a stress test reaches are many more than timing alone would give.  It is
 * active only when the environment has RELHASH_DEBUG_YIELD=1 (read once).
 * Release builds compile it to nothing.
 */
#ifndef RELHASH_DEBUG_H
#define RELHASH_DEBUG_H

#ifdef RELHASH_DEBUG
void rh_debug_yield(void);
#else
static inline void rh_debug_yield(void)
{
}
#endif

/* In --enable-debug builds: abort with a message naming what when cond
 * is false.  Release builds do not evaluate cond. */
#ifdef RELHASH_DEBUG
void rh_debug_failed(const char *what, const char *file, int line);
#define rh_debug_check(cond, what) \
	((cond) ? (void)0 : rh_debug_failed((what), __FILE__, __LINE__))
#else
#define rh_debug_check(cond, what) ((void)0)
#endif

/*
 * Deliberate bugs, for showing that the tests can fail (negative
 * controls).  An --enable-debug build carries them all, and runs bug x
 * when the environment says RELHASH_TEST_BUG=x at load;
 * tests/negative-controls.sh runs each so and expects the test it names
 * to catch it.  Release builds compile them out.  This list is the source
 * of truth for the names and numbers: the script reads them from here,
 * and tests/test-negative-list.sh (make check) fails when a bug added
 * here has no test there.
 */
#define RH_BUG_UNZIP_TWICE 1  /* two unzip patches per family per grace period */
#define RH_BUG_FIRST_PRED 2   /* removal redirects only the first predecessor */
#define RH_BUG_NO_GRACE 3     /* callbacks run without waiting a grace period */
#define RH_BUG_LAZY_BARRIER 4 /* a barrier waits out the batching delay */
#define RH_BUG_NO_BATCHING 5  /* a cycle starts whenever work arrives */
#define RH_BUG_NO_BACKPRESSURE 6 /* inserts never wait for the resizer */
#define RH_BUG_THROTTLE_IN_SECTION 7 /* ... and wait inside sections too */
#define RH_BUG_NO_SIZE_HINT 8 /* automatic shrinking ignores initial_size */
#define RH_BUG_GET_SPLIT 9    /* insert_or_get: a lookup, then an insertion */
#define RH_BUG_POLL_EARLY 10  /* a polled cookie names the current epoch */
#define RH_BUG_WRONG_LOCK 11  /* removal locks the next family, not its own */
#define RH_BUG_STALE_CURSOR 12 /* removal leaves an unzip cursor on the node */
#define RH_BUG_COLLECT_NO_WAIT 13 /* a collector takes a batch mid-append */
#define RH_BUG_APPEND_IGNORES_MARK 14 /* an owner appends while collected */
#define RH_BUG_HELP_BEFORE_GRACE 15 /* helpers start a pass before the last
                                       one's grace period */
#define RH_BUG_HELP_CHUNK_OVERLAP 16 /* each unzip chunk takes one family
                                        of the next: it is patched twice */
#define RH_BUG_NO_NOTIFY 17   /* a batch's first callback wakes nobody */
#define RH_BUG_NO_ANNOUNCE 18 /* full batches never count toward the limit */
#define RH_BUG_NO_EARLY_WAKE 19 /* announcements never end the batching
                                   wait */
#define RH_BUG_SPLICE_IN_INDEX_ORDER 20 /* a shrink splices old chains in
                                           index order, not split order */
#define RH_BUG_RETIRE_BY_CALLBACK 21 /* a resize frees its cursors with
                                        relhash_defer_free() */
#define RH_BUG_INSERT_AT_HEAD 22 /* insertions into families at rest go at
                                    the head, not in split order */
#define RH_BUG_LOCK_TEST_THEN_SET 23 /* a lock is taken by a load, then a
                                        store */
#define RH_BUG_LOCK_STORE_RELEASE 24 /* a lock is released by a store of 0,
                                        never waking a sleeper */
#define RH_BUG_PLACE_WHILE_LINKING 25 /* insertions go in split order even
                                         while the family spans two
                                         arrays */
#define RH_BUG_LAST_PATCH_EARLY 26 /* every unzip patch is taken for the
                                      family's last */
#define RH_BUG_NEXT_BY_HASH 27 /* relhash_lookup_next() compares hashes,
                                  not keys */
#define RH_BUG_DUPLICATE_AT_HEAD 28 /* a duplicate goes at the heads, away
                                       from its key's run */
#define RH_BUG_NO_MEMBARRIER_PROBE 29 /* membarrier mode is chosen without
                                         trying the command */
#define RH_BUG_SHRINK_NO_WAIT 30 /* a shrink right after an expansion
                                    splices without waiting for the
                                    readers of its last unzip patches */
#define RH_BUG_REHASH_NO_GP1 31  /* a rehash relinks right after MID's
                                    publication */
#define RH_BUG_REHASH_NO_RECHECK 32 /* an update keeps the array it hashed
                                       for, though a rehash replaced it */
#define RH_BUG_REHASH_NO_MARK 33 /* a member removed in MID mode stays
                                    live in the SET */
#define RH_BUG_REHASH_NO_FORGET 34 /* a node linked again keeps the SET
                                      entry of its removal as a member */
#define RH_BUG_LOCAL_EARLY 35    /* local calls run without waiting for
                                    their block's grace period */
#define RH_BUG_LOCAL_NO_REQUEST 36 /* a closed local block never asks for a
                                      grace period */
#define RH_BUG_LOCAL_UNBOUNDED 37 /* a thread's local calls are never
                                     bounded by the callback limit */
#define RH_BUG_NO_HUGE_PAGES 38 /* large bucket arrays are not advised
                                   for huge pages */
#define RH_BUG_MID_WALKED 39    /* inline lookups walk MID's chains as
                                   any array's */
#define RH_BUG_LOCAL_SPARE_LEAKED 40 /* a thread that leaves keeps its
                                        spare local block */
#ifdef RELHASH_DEBUG
/* Set once by a constructor, before any thread of the library exists,
 * and only read afterwards: a plain int. */
extern int rh_test_bug;
#define RH_TEST_BUG(x) (rh_test_bug == RH_BUG_##x)
#else
#define RH_TEST_BUG(x) 0
#endif

#endif /* RELHASH_DEBUG_H */
