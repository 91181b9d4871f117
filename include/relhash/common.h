/*
 * relhash/common.h - export macro, C++ linkage and the C/C++ atomic bridge
 * shared by every public relhash header.  Nothing here is part of the API
 * proper.
 *
 * The library is built with -fvisibility=hidden; only declarations marked
 * RELHASH_API are exported from librelhash.
 */
#ifndef RELHASH_COMMON_H
#define RELHASH_COMMON_H

#if defined(RELHASH_BUILDING_LIBRARY) && defined(__GNUC__)
#define RELHASH_API __attribute__((visibility("default")))
#else
#define RELHASH_API
#endif

#ifdef __cplusplus
#define RELHASH_BEGIN_DECLS extern "C" {
#define RELHASH_END_DECLS }
#else
#define RELHASH_BEGIN_DECLS
#define RELHASH_END_DECLS
#endif

/* The fast paths must inline even where the compiler would rather make an
 * out-of-line copy (GCC does for a function called from several places). */
#if defined(__GNUC__)
#define RELHASH_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define RELHASH_ALWAYS_INLINE inline
#endif

/*
 * The C/C++ bridge for the few atomic fields that inline code reads
 * (<relhash/types.h>, <relhash/inline.h>): _Atomic(T) in C, std::atomic<T>
 * in C++, the same spelling C++23's <stdatomic.h> gives _Atomic(T).  Both
 * name the same object: the assertions below check that an atomic word has
 * the size of the plain one and is aligned to its size (so the public
 * layouts are the same in both languages: that is the rule of both C's
 * _Atomic and C++'s std::atomic, also where the plain type is aligned
 * less, as uint64_t is on i386) and is lock-free (so either language's
 * access is a plain load or store of that memory, with no lock the other
 * does not know about).  doc/DESIGN.md, "Atomic fields in C and C++".
 */
#ifdef __cplusplus
#include <atomic>
#include <cstdint>
#define RELHASH__ATOMIC(T) std::atomic<T>
#define RELHASH__STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#define RELHASH__ALIGNOF(T) alignof(T)
#else
#include <stdatomic.h>
#include <stdint.h>
#define RELHASH__ATOMIC(T) _Atomic(T)
#define RELHASH__STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#define RELHASH__ALIGNOF(T) _Alignof(T)
#endif

#define RELHASH__ASSERT_ATOMIC_LAYOUT(T) \
	RELHASH__STATIC_ASSERT(sizeof(RELHASH__ATOMIC(T)) == sizeof(T) && \
	                       RELHASH__ALIGNOF(RELHASH__ATOMIC(T)) == sizeof(T), \
	                       "an atomic " #T " must have the size of a " #T \
	                       " and be aligned to it")
RELHASH__ASSERT_ATOMIC_LAYOUT(uint8_t);
RELHASH__ASSERT_ATOMIC_LAYOUT(uint64_t);
RELHASH__ASSERT_ATOMIC_LAYOUT(void *);
/* uint64_t is unsigned long on LP64 targets, unsigned long long elsewhere. */
RELHASH__STATIC_ASSERT(ATOMIC_CHAR_LOCK_FREE == 2 &&
                       ATOMIC_POINTER_LOCK_FREE == 2 &&
                       (sizeof(long) == 8 ? ATOMIC_LONG_LOCK_FREE
                                          : ATOMIC_LLONG_LOCK_FREE) == 2,
                       "relhash needs lock-free 8-bit, 64-bit and pointer "
                       "atomics");

#if defined(__GNUC__)
#define RELHASH_LIKELY(x) __builtin_expect(!!(x), 1)
#define RELHASH_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define RELHASH_LIKELY(x) (x)
#define RELHASH_UNLIKELY(x) (x)
#endif

#endif /* RELHASH_COMMON_H */
