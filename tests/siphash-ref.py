#!/usr/bin/env python3
# tests/siphash-ref.py - an independent SipHash-c-d in Python, written from
# the paper (Aumasson and Bernstein, "SipHash: a fast short-input PRF",
# INDOCRYPT 2012, section 2), only to generate the expected values of
# tests/test-siphash.c.  Not run by make check.
#
#   python3 tests/siphash-ref.py            prints the C tables
M = (1 << 64) - 1


def rotl(x, b):
    return ((x << b) | (x >> (64 - b))) & M


def sipround(v):
    v0, v1, v2, v3 = v
    v0 = (v0 + v1) & M; v1 = rotl(v1, 13); v1 ^= v0; v0 = rotl(v0, 32)
    v2 = (v2 + v3) & M; v3 = rotl(v3, 16); v3 ^= v2
    v0 = (v0 + v3) & M; v3 = rotl(v3, 21); v3 ^= v0
    v2 = (v2 + v1) & M; v1 = rotl(v1, 17); v1 ^= v2; v2 = rotl(v2, 32)
    return [v0, v1, v2, v3]


def siphash(c, d, k0, k1, msg):
    v = [k0 ^ 0x736f6d6570736575, k1 ^ 0x646f72616e646f6d,
         k0 ^ 0x6c7967656e657261, k1 ^ 0x7465646279746573]
    # The message padded to a multiple of 8 bytes with zeros, with the
    # length mod 256 as its last byte; words are little-endian.
    b = bytes(msg) + bytes(7 - len(msg) % 8) + bytes([len(msg) & 0xff])
    for i in range(0, len(b), 8):
        m = int.from_bytes(b[i:i + 8], "little")
        v[3] ^= m
        for _ in range(c):
            v = sipround(v)
        v[0] ^= m
    v[2] ^= 0xff
    for _ in range(d):
        v = sipround(v)
    return v[0] ^ v[1] ^ v[2] ^ v[3]


def splitmix_k1(seed):
    """relhash_siphash's second key word (src/siphash.c)."""
    z = (seed + 0x9e3779b97f4a7c15) & M
    z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) & M
    z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & M
    return z ^ (z >> 31)


def table(name, values):
    print("static const uint64_t %s[64] = {" % name)
    for i in range(0, 64, 3):
        print("\t" + " ".join("0x%016xull," % x for x in values[i:i + 3]))
    print("};")


def main():
    k0, k1 = 0x0706050403020100, 0x0f0e0d0c0b0a0908
    msgs = [bytes(range(n)) for n in range(64)]
    table("sip24_vectors", [siphash(2, 4, k0, k1, m) for m in msgs])
    table("sip13_vectors", [siphash(1, 3, k0, k1, m) for m in msgs])
    seed = 0x0706050403020100
    table("relhash_siphash_vectors",
          [siphash(1, 3, seed, splitmix_k1(seed), m) for m in msgs])
    # A message longer than 255 bytes: its length byte wraps.
    long_msg = bytes(i & 0xff for i in range(1000))
    print("/* 1000 bytes i & 0xff: 2-4 0x%016xull, 1-3 0x%016xull, "
          "relhash_siphash 0x%016xull */" % (
              siphash(2, 4, k0, k1, long_msg), siphash(1, 3, k0, k1, long_msg),
              siphash(1, 3, seed, splitmix_k1(seed), long_msg)))
    # The zero key, 1-3: published values to compare with by eye.
    for n in (0, 1, 7, 8, 9, 15, 16, 63):
        print("/* zero key, 1-3, len %d: 0x%016xull */" %
              (n, siphash(1, 3, 0, 0, msgs[n])))


if __name__ == "__main__":
    main()
