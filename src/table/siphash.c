/*
 * src/table/siphash.c - SipHash, the keyed pseudo-random function for keys chosen
 * by an attacker: relhash_siphash() (SipHash-1-3 under a key derived from
 * the table's seed), and the test hooks relhash__siphash13() and
 * relhash__siphash24() that take the full 128-bit key.
 *
 * Written from the paper: Jean-Philippe Aumasson and Daniel J. Bernstein,
 * "SipHash: a fast short-input PRF", INDOCRYPT 2012, section 2.  SipHash-c-d
 * runs c SipRounds per 8-byte message word and d at the end; the paper
 * proposes c = 2, d = 4.  relhash_siphash() runs c = 1, d = 3, the variant
 * that Rust's HashMap and Python's str hash (3.11 on) chose for hash
 * tables: the attacker of a hash table usually sees timings, not the
 * function's output, and SipHash-1-3 still has three finalisation rounds
 * between the last message word and the output.  tests/test-siphash.c
 * checks both variants against reference values.
 */
#include "config.h"

#include <stddef.h>
#include <stdint.h>

#include <relhash/table.h>

static inline uint64_t rotl64(uint64_t x, unsigned b)
{
	return (x << b) | (x >> (64 - b));
}

struct sip_state {
	uint64_t v0, v1, v2, v3;
};

/* The paper's SipRound: add-rotate-xor on the four words. */
static inline void sip_round(struct sip_state *s)
{
	s->v0 += s->v1;
	s->v1 = rotl64(s->v1, 13);
	s->v1 ^= s->v0;
	s->v0 = rotl64(s->v0, 32);
	s->v2 += s->v3;
	s->v3 = rotl64(s->v3, 16);
	s->v3 ^= s->v2;
	s->v0 += s->v3;
	s->v3 = rotl64(s->v3, 21);
	s->v3 ^= s->v0;
	s->v2 += s->v1;
	s->v1 = rotl64(s->v1, 17);
	s->v1 ^= s->v2;
	s->v2 = rotl64(s->v2, 32);
}

/*
 * The paper reads the message as little-endian words, whatever the host's
 * byte order: assembled from bytes, so that big-endian hosts (s390x) give
 * the same values.  GCC and Clang turn this expression into one load on
 * little-endian hosts (and one byte-reversed load on big-endian ones).
 */
static inline uint64_t load_le64(const unsigned char *p)
{
	return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 |
	       (uint64_t)p[3] << 24 | (uint64_t)p[4] << 32 |
	       (uint64_t)p[5] << 40 | (uint64_t)p[6] << 48 |
	       (uint64_t)p[7] << 56;
}

/* The last word: the 0 to 7 remaining bytes, little-endian, and the
 * message length's low byte in the top byte (the paper's padding). */
static inline uint64_t last_word(const unsigned char *p, size_t len)
{
	uint64_t m = (uint64_t)(len & 0xff) << 56;

	for (size_t i = 0; i < (len & 7); i++)
		m |= (uint64_t)p[i] << (8 * i);
	return m;
}

/* One message word: xor it into v3, c rounds, xor it into v0. */
static inline void sip_compress(struct sip_state *s, uint64_t m, unsigned c)
{
	s->v3 ^= m;
#pragma GCC unroll 4
	for (unsigned i = 0; i < c; i++)
		sip_round(s);
	s->v0 ^= m;
}

/*
 * SipHash-c-d of len bytes under the key (k0, k1), as the paper specifies
 * it.  Always inlined with constant c and d, so that each variant below is
 * compiled with its rounds unrolled (the pragmas: GCC 12 kept the three
 * finalisation rounds as a loop, six instructions more per hash).
 */
static inline __attribute__((always_inline)) uint64_t
sip_hash(uint64_t k0, uint64_t k1, unsigned c, unsigned d, const void *data,
         size_t len)
{
	const unsigned char *p = data;
	/* The initialisation constants spell "somepseudorandomlygeneratedbytes". */
	struct sip_state s = {
		.v0 = k0 ^ 0x736f6d6570736575ull,
		.v1 = k1 ^ 0x646f72616e646f6dull,
		.v2 = k0 ^ 0x6c7967656e657261ull,
		.v3 = k1 ^ 0x7465646279746573ull,
	};
	const unsigned char *end = p + (len & ~(size_t)7);

	for (; p != end; p += 8)
		sip_compress(&s, load_le64(p), c);
	sip_compress(&s, last_word(p, len), c);
	s.v2 ^= 0xff;
#pragma GCC unroll 4
	for (unsigned i = 0; i < d; i++)
		sip_round(&s);
	return s.v0 ^ s.v1 ^ s.v2 ^ s.v3;
}

/*
 * The second key word, a fixed function of the seed: the finaliser of
 * SplitMix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number
 * generators", OOPSLA 2014), a bijection of 64-bit words with no simple
 * algebraic relation to its input.
 *
 * Why deriving k1 loses nothing an attacker can use: the key (seed, k1) is
 * determined by the seed, and distinct seeds give distinct keys (k0 is the
 * seed itself), so the secret is exactly the seed's 64 bits, no fewer; the
 * derivation is public and adds none either.  To find colliding keys the
 * attacker needs the key, and the best known way to get it is to search
 * the 2^64 seeds, which needs outputs of the function to test candidates
 * against.  A table's attacker sees no outputs, only timings; one who does
 * see hash values must still spend 2^63 SipHash evaluations on average
 * (relhash_hash(3) states this bound).  A non-linear k1 rather than, say,
 * k1 = seed keeps the four state words from starting as the same value
 * under four public masks.
 */
static inline uint64_t seed_k1(uint64_t seed)
{
	uint64_t z = seed + 0x9e3779b97f4a7c15ull;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

uint64_t relhash_siphash(const void *key, size_t key_len, uint64_t seed)
{
	return sip_hash(seed, seed_k1(seed), 1, 3, key, key_len);
}

/* For tests/test-siphash.c (tests/debug-hooks.h): the variants under a
 * full 128-bit key. */
RELHASH_API uint64_t relhash__siphash13(uint64_t k0, uint64_t k1,
                                        const void *data, size_t len);
uint64_t relhash__siphash13(uint64_t k0, uint64_t k1, const void *data,
                            size_t len)
{
	return sip_hash(k0, k1, 1, 3, data, len);
}

RELHASH_API uint64_t relhash__siphash24(uint64_t k0, uint64_t k1,
                                        const void *data, size_t len);
uint64_t relhash__siphash24(uint64_t k0, uint64_t k1, const void *data,
                            size_t len)
{
	return sip_hash(k0, k1, 2, 4, data, len);
}
