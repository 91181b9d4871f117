/*
 * src/base/util.h - small helpers that several layers of the library share and
 * that belong to none of them.
 */
#ifndef RELHASH_UTIL_H
#define RELHASH_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

static inline bool rh_is_pow2(size_t n)
{
	return n && !(n & (n - 1));
}

/* Read a size or duration setting from the environment: def if unset or
 * unparsable. */
uint64_t rh_env_u64(const char *name, uint64_t def);

/*
 * Start fn(NULL) on a detached library thread with every signal blocked
 * (the library's threads take no signal meant for the application).
 * Returns 0 or pthread_create()'s error.
 */
int rh_start_library_thread(void *(*fn)(void *));

/* The calling thread's kernel id (gettid(2)) where the platform has one,
 * else a small number unique in the process: names threads in
 * diagnostics. */
pid_t rh_gettid(void);

/*
 * The statistics calls' size rule (<relhash/types.h>): the caller's struct
 * dst begins with a size_t holding its size.  -EINVAL, dst untouched, when
 * dst is NULL or its size does not hold that field; else copy the part of
 * src (the library's full struct, src_size bytes, with the same first
 * field) that dst's size holds and store in dst the bytes written.
 */
int rh_stats_copy(void *dst, const void *src, size_t src_size);

/* Can dst take statistics (the check of rh_stats_copy())? */
bool rh_stats_ok(const void *dst);

#endif /* RELHASH_UTIL_H */
