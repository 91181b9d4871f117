/*
 * tests/hashfns.h - hash functions with chosen weaknesses, shared by the
 * Check tests (common.h) and the fuzzers (fuzz/fuzz-common.h), which do
 * not link Check.
 */
#ifndef RELHASH_TESTS_HASHFNS_H
#define RELHASH_TESTS_HASHFNS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/*
 * A hashfn whose hash is the key's first 8 bytes as an integer (no mixing,
 * no seed): tests that need keys in chosen buckets, in a chosen order, use
 * it with keys of that form.
 */
static inline uint64_t hashfn_identity(const void *key, size_t len,
                                       uint64_t seed)
{
	uint64_t k;

	(void)len;
	(void)seed;
	memcpy(&k, key, sizeof(k));
	return k;
}

#endif /* RELHASH_TESTS_HASHFNS_H */
