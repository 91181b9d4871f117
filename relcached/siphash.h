/*
 * relcached/siphash.h - SipHash-2-4 with a 64-bit result.
 *
 * Aumasson and Bernstein, "SipHash: a fast short-input PRF" (INDOCRYPT
 * 2012).  A keyed pseudo-random function: without the 128-bit key, a client
 * cannot choose keys that collide in the table (doc/relcached.md, "Keys from
 * the network").
 */
#ifndef RELCACHED_SIPHASH_H
#define RELCACHED_SIPHASH_H

#include <stddef.h>
#include <stdint.h>

struct siphash_key {
	uint64_t k0, k1;
};

uint64_t siphash24(const struct siphash_key *key, const void *data, size_t len);

#endif /* RELCACHED_SIPHASH_H */
