/*
 * src/table/hash.c - the default keyed hash (inline in <relhash/inline.h>, here
 * as a function) and per-table random seeds.
 */
#include "config.h"

#include <stdint.h>
#include <time.h>
#include <unistd.h>
#ifdef HAVE_SYS_RANDOM_H
#include <sys/random.h>
#endif

#include <relhash/inline.h>
#include <relhash/table.h>

#include "hash.h"

uint64_t relhash_hash(const void *key, size_t key_len, uint64_t seed)
{
	return relhash__hash_inline(key, key_len, seed);
}

uint64_t rh_random_seed(void)
{
	uint64_t seed = 0;
	struct timespec ts;

#ifdef HAVE_GETRANDOM
	if (getrandom(&seed, sizeof(seed), GRND_NONBLOCK) == sizeof(seed) &&
	    seed)
		return seed;
#endif
	/* No entropy source: weak, but never the same twice in a process. */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	seed = relhash__fold_mul((uint64_t)ts.tv_nsec ^ RELHASH__K0,
	                         (uint64_t)ts.tv_sec ^ (uint64_t)getpid() ^
	                         (uint64_t)(uintptr_t)&seed);
	return seed ? seed : RELHASH__K1;
}
