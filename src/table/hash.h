/*
 * src/table/hash.h - seeds for the default hash.
 */
#ifndef RELHASH_HASH_H
#define RELHASH_HASH_H

#include <stdint.h>

/* A random, nonzero 64-bit seed (getrandom(2), else a time-based mix). */
uint64_t rh_random_seed(void);

#endif /* RELHASH_HASH_H */
