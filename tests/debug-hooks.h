/*
 * tests/debug-hooks.h - the hooks librelhash exports for its own tests,
 * declared once.  They are no part of the public API (the relhash__
 * namespace is the library's) and change with it.  Included by
 * tests/common.h and tests/fuzz/fuzz-common.h.
 */
#ifndef RELHASH_TESTS_DEBUG_HOOKS_H
#define RELHASH_TESTS_DEBUG_HOOKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Every build (src/base/alloc.c): arm (n > 0) or disarm (n == 0) a failure of
 * the nth allocation from now.  Returns the countdown it replaces: 0 when
 * the previous failure fired (or none was armed), else how many
 * allocations it was still waiting for.
 */
long relhash__debug_fail_alloc(long n);

/*
 * Debug builds (src/base/alloc.c): how many blocks the library holds,
 * allocated and not yet freed, in all threads; -1 in other builds.
 */
long relhash__debug_live_blocks(void);

/*
 * Every build (src/table/table.c): insertions go at the heads (on) or, as by
 * default, in split order within their bucket's clean prefix (off), so
 * that a test can build zipped chains with many crossings.
 */
void relhash__debug_head_inserts(bool on);

/*
 * Every build (src/table/siphash.c): SipHash-1-3 and SipHash-2-4 under the
 * 128-bit key (k0, k1), the paper's key bytes read as two little-endian
 * words.
 */
uint64_t relhash__siphash13(uint64_t k0, uint64_t k1, const void *data,
                            size_t len);
uint64_t relhash__siphash24(uint64_t k0, uint64_t k1, const void *data,
                            size_t len);

struct relhash_table;

/*
 * Every build (src/table/rehash.c): rehash t now with a new random seed,
 * as the resize thread does when an insertion finds a chain too long, in
 * the calling thread (outside read-side sections): 0, -ENOMEM, or
 * -EDEADLK inside a section.  And the longest chain of t's published
 * array, in nodes.
 */
int relhash__debug_rehash(struct relhash_table *t);
size_t relhash__debug_longest_chain(struct relhash_table *t);

/*
 * --enable-debug builds only (src/base/debug.c): with a hook set, every yield
 * point of the library calls hook() instead of its random policy; NULL
 * restores the policy.  Weak, so that a test can ask whether the library
 * has it: the address is NULL in other builds.
 */
void relhash__debug_set_yield_hook(void (*hook)(void)) __attribute__((weak));

#endif /* RELHASH_TESTS_DEBUG_HOOKS_H */
