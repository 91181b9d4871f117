/*
 * src/base/atomics.h - every atomic access and fence the library makes goes
 * through these few macros, so that a sanitizer build can change them in one
 * place.
 *
 * They are <stdatomic.h>'s atomic_*_explicit on _Atomic fields: the types
 * say which fields other threads touch (Clang refuses these macros on a
 * plain field), and every access spells out its ordering (a plain read or
 * write of an _Atomic field would be a silent seq_cst access: the library
 * makes none).  The fields that the inline fast paths also read are
 * declared with RELHASH__ATOMIC(T) (<relhash/common.h>), which is
 * _Atomic(T) in C: the same type.  doc/DESIGN.md, "Atomic fields in C and
 * C++".
 *
 * Each use site says why its ordering is enough.  The vocabulary:
 *   rh_init(p, v)                   initialise an _Atomic object nobody else
 *                                   can see yet (atomic_init; memory from
 *                                   calloc() or memset() to 0 is initialised
 *                                   to 0 as well: the representations are the
 *                                   plain types', <relhash/common.h>)
 *   rh_load / rh_store              relaxed: atomicity only
 *   rh_load_acquire / rh_store_release
 *                                   one-way ordering; release stores publish
 *                                   initialised nodes and arrays
 *   rh_load_seqcst / rh_store_seqcst
 *                                   Dekker-style flag pairs
 *   rh_publish(p, v)                = rh_store_release, for pointers that
 *                                   readers follow (rcu_assign_pointer)
 *   rh_deref(p)                     = rh_load_acquire, for pointers readers
 *                                   follow (rcu_dereference; C11 consume is
 *                                   implemented as acquire anyway)
 *   rh_fetch_add / rh_add_fetch / rh_exchange
 *                                   seq_cst read-modify-writes
 *   rh_cas_relaxed                  compare-and-swap, atomicity only
 *   rh_cas_acquire, rh_exchange_acquire, rh_exchange_release
 *                                   taking and releasing a lock
 *   rh_add_relaxed, rh_add_fetch_relaxed   counters
 *   rh_sub_release                  a counter's decrement that publishes
 *                                   the stores before it
 *   rh_smp_mb                       full fence
 *   rh_release_fence                earlier accesses before later stores
 *   rh_barrier                      compiler-only barrier
 *   rh_cpu_relax                    spin-wait hint
 *
 * ThreadSanitizer does not model standalone fences.  The library never
 * relies on a fence alone for a happens-before edge that TSan must see: the
 * reader-to-reclaimer edge is carried by the release store of the outermost
 * unlock (release only under TSan, see inline.h) and the acquire load of the
 * grace-period scan; the writer-to-reader edge by rh_publish/rh_deref; and
 * grace-period sharing by a mutex.  So under TSan the fences below only
 * need to stay fences; they matter on real hardware, where membarrier(2) or
 * the fence fallback provide the ordering TSan cannot see.
 */
#ifndef RELHASH_ATOMICS_H
#define RELHASH_ATOMICS_H

#include <stdatomic.h>
#include <stdbool.h>

#include <relhash/inline.h> /* RELHASH__TSAN */

#define rh_init(p, v) atomic_init((p), (v))

#define rh_load(p) atomic_load_explicit((p), memory_order_relaxed)
#define rh_store(p, v) atomic_store_explicit((p), (v), memory_order_relaxed)
#define rh_load_acquire(p) atomic_load_explicit((p), memory_order_acquire)
#define rh_load_seqcst(p) atomic_load_explicit((p), memory_order_seq_cst)
#define rh_store_seqcst(p, v) \
	atomic_store_explicit((p), (v), memory_order_seq_cst)
#define rh_store_release(p, v) \
	atomic_store_explicit((p), (v), memory_order_release)

#define rh_publish(p, v) rh_store_release((p), (v))
#define rh_deref(p) rh_load_acquire(p)

#define rh_fetch_add(p, v) \
	atomic_fetch_add_explicit((p), (v), memory_order_seq_cst)
#define rh_exchange(p, v) \
	atomic_exchange_explicit((p), (v), memory_order_seq_cst)
/* Compare-and-swap; *expected is updated on failure.  Relaxed: counters. */
#define rh_cas_relaxed(p, expected, v) \
	atomic_compare_exchange_strong_explicit((p), (expected), (v), \
	                                        memory_order_relaxed, \
	                                        memory_order_relaxed)
/* A lock's take (acquire on success; a failure orders nothing) and
 * release. */
#define rh_cas_acquire(p, expected, v) \
	atomic_compare_exchange_strong_explicit((p), (expected), (v), \
	                                        memory_order_acquire, \
	                                        memory_order_relaxed)
#define rh_exchange_acquire(p, v) \
	atomic_exchange_explicit((p), (v), memory_order_acquire)
#define rh_exchange_release(p, v) \
	atomic_exchange_explicit((p), (v), memory_order_release)
#define rh_add_relaxed(p, v) \
	((void)atomic_fetch_add_explicit((p), (v), memory_order_relaxed))
#define rh_sub_release(p, v) \
	((void)atomic_fetch_sub_explicit((p), (v), memory_order_release))
#define rh_add_release(p, v) \
	((void)atomic_fetch_add_explicit((p), (v), memory_order_release))

/* Add and return the new value: <stdatomic.h> has only fetch_add, which
 * returns the old one, so add v to that (v evaluated once). */
#define rh_add_fetch_order(p, v, order) \
	__extension__({ \
		__typeof__(v) rh_addend_ = (v); \
		atomic_fetch_add_explicit((p), rh_addend_, (order)) + rh_addend_; \
	})
#define rh_add_fetch(p, v) rh_add_fetch_order((p), (v), memory_order_seq_cst)
#define rh_add_fetch_relaxed(p, v) \
	rh_add_fetch_order((p), (v), memory_order_relaxed)

#ifdef RELHASH__TSAN
/* TSan does not model fences (and gcc warns about them): a seq_cst
 * read-modify-write of a dummy word is a full fence on hardware too. */
static atomic_int rh_tsan_fence_word __attribute__((unused));
#define rh_smp_mb() \
	((void)atomic_fetch_add_explicit(&rh_tsan_fence_word, 0, \
	                                 memory_order_seq_cst))
#define rh_release_fence() rh_smp_mb()
#else
#define rh_smp_mb() atomic_thread_fence(memory_order_seq_cst)
#define rh_release_fence() atomic_thread_fence(memory_order_release)
#endif
#define rh_barrier() atomic_signal_fence(memory_order_seq_cst)

#if defined(__x86_64__) || defined(__i386__)
#define rh_cpu_relax() __builtin_ia32_pause()
#elif defined(__aarch64__)
#define rh_cpu_relax() __asm__ __volatile__("yield" ::: "memory")
#else
#define rh_cpu_relax() rh_barrier()
#endif

#endif /* RELHASH_ATOMICS_H */
