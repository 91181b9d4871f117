/*
 * src/atomics.h - every atomic access and fence the library makes goes
 * through these few macros, so that a sanitizer build can change them in one
 * place.
 *
 * They are the GCC/Clang __atomic builtins on plain types: the structures
 * shared with the inline fast paths (include/relhash/inline.h) must compile
 * as C++ too, where C's _Atomic does not exist, so shared fields are plain
 * and every access to them is one of these.  Using the same builtins
 * everywhere keeps one vocabulary.
 *
 * Each use site says why its ordering is enough.  The vocabulary:
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
 *   rh_fetch_add / rh_exchange      seq_cst read-modify-writes
 *   rh_cas_relaxed                  compare-and-swap, atomicity only
 *   rh_add_relaxed, rh_add_fetch_relaxed   counters
 *   rh_smp_mb                       full fence
 *   rh_release_fence                earlier accesses before later stores
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

#include <stdbool.h>

#include <relhash/inline.h> /* RELHASH__TSAN */

#define rh_load(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define rh_store(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)
#define rh_load_acquire(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define rh_load_seqcst(p) __atomic_load_n((p), __ATOMIC_SEQ_CST)
#define rh_store_seqcst(p, v) __atomic_store_n((p), (v), __ATOMIC_SEQ_CST)
#define rh_store_release(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)

#define rh_publish(p, v) rh_store_release((p), (v))
#define rh_deref(p) rh_load_acquire(p)

#define rh_fetch_add(p, v) __atomic_fetch_add((p), (v), __ATOMIC_SEQ_CST)
#define rh_add_fetch(p, v) __atomic_add_fetch((p), (v), __ATOMIC_SEQ_CST)
#define rh_exchange(p, v) __atomic_exchange_n((p), (v), __ATOMIC_SEQ_CST)
/* Compare-and-swap; *expected is updated on failure.  Relaxed: counters. */
#define rh_cas_relaxed(p, expected, v) \
	__atomic_compare_exchange_n((p), (expected), (v), false, \
	                            __ATOMIC_RELAXED, __ATOMIC_RELAXED)
#define rh_add_relaxed(p, v) ((void)__atomic_fetch_add((p), (v), __ATOMIC_RELAXED))
#define rh_add_fetch_relaxed(p, v) __atomic_add_fetch((p), (v), __ATOMIC_RELAXED)

#ifdef RELHASH__TSAN
/* TSan does not model fences (and gcc warns about them): a seq_cst
 * read-modify-write of a dummy word is a full fence on hardware too. */
static int rh_tsan_fence_word __attribute__((unused));
#define rh_smp_mb() \
	((void)__atomic_fetch_add(&rh_tsan_fence_word, 0, __ATOMIC_SEQ_CST))
#define rh_release_fence() rh_smp_mb()
#else
#define rh_smp_mb() __atomic_thread_fence(__ATOMIC_SEQ_CST)
#define rh_release_fence() __atomic_thread_fence(__ATOMIC_RELEASE)
#endif
#define rh_barrier() __atomic_signal_fence(__ATOMIC_SEQ_CST)

#if defined(__x86_64__) || defined(__i386__)
#define rh_cpu_relax() __builtin_ia32_pause()
#elif defined(__aarch64__)
#define rh_cpu_relax() __asm__ __volatile__("yield" ::: "memory")
#else
#define rh_cpu_relax() rh_barrier()
#endif

#endif /* RELHASH_ATOMICS_H */
