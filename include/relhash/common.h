/*
 * relhash/common.h - export macro and C++ linkage helpers shared by every
 * public relhash header.  Nothing here is part of the API proper.
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

#if defined(__GNUC__)
#define RELHASH_LIKELY(x) __builtin_expect(!!(x), 1)
#define RELHASH_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define RELHASH_LIKELY(x) (x)
#define RELHASH_UNLIKELY(x) (x)
#endif

#endif /* RELHASH_COMMON_H */
