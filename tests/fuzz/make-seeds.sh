#!/usr/bin/env bash
# tests/fuzz/make-seeds.sh - regenerate the seed corpora in tests/fuzz/corpus/.
#
# Each seed is a handful of operations written out byte by byte; the
# encodings are documented in fuzz-ops.c and fuzz-interleave.c (decode any
# seed with FUZZ_TRACE=1 BUILD_DIR/fuzz-ops SEED).  Run this after changing
# an encoding; the output is committed.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
ops=$here/corpus/fuzz-ops
il=$here/corpus/fuzz-interleave
mkdir -p "$ops" "$il"
rm -f "$ops"/seed-* "$il"/seed-*

# seed FILE HEXBYTES...: write the bytes (two hex digits each) to FILE.
seed() {
	local f=$1 b out=
	shift
	for b in "$@"; do
		out+="\\x$b"
	done
	printf '%b' "$out" >"$f"
}

# --------------------------------------------------------------------------
# fuzz-ops.  Create operands: set flags initial min max fault.  Sizes for
# create: < 0x80 = default, else size_choices[b % 32] (0x84 = 4, 0x89 = 64,
# 0x8b = 256, 0x8f = 65536, 0x94 = 2^32).  Ops: 00 insert k, 02 remove k how,
# 03 remove-other k, 04 replace k how, 05 refused calls k k2, 06 lookup k,
# 07 lookup_fast k, 08 iterate, 09 count/size, 0a resize sizeidx fault,
# 0b synchronize, 0c call+barrier, 0d read_lock, 0e read_unlock, 0f create
# (6 operands), 10 fill k n-1, 11 drain k n-1 how, 12 remove with
# defer_free's allocation failing, 13 verify, 14 insert_or_get k how
# (bit 0: pass existing), 15 lookup_bulk k n how (bit 0: the inline form;
# stride (how >> 1) % 8 + 1).

# Basic operations on a default table, resizes both ways.
seed "$ops/seed-01-basic" 00 01 00 00 00 00 \
	10 00 3f 06 05 07 07 02 03 0e 04 04 06 03 09 05 01 02 08 09 \
	0a 0b 00 13 0a 04 00 13 0c 11 00 3f 01 13 0a 0d 00 08 0c \
	04 c8 00 10 c0 1f 05 c1 c2 13

# Custom keys with colliding hashes, automatic resizing up and down.
seed "$ops/seed-02-auto-custom" 04 03 84 00 00 00 \
	10 00 3f 10 40 3f 10 80 3f 10 c0 3f 0b 13 09 \
	11 00 3f 00 11 40 3f 08 11 80 3f 00 11 c0 3f 08 0c 13 09

# Fault injection: create, expand, shrink, defer_free.
seed "$ops/seed-03-faults" 02 01 00 00 00 c0 \
	10 00 1f 0a 0d a0 13 0a 0d a2 13 0a 06 a0 13 0a 06 a1 13 \
	0a 06 00 12 03 12 04 13 0f 05 01 00 00 00 c3 13

# Read-side sections: held objects across removals, refused waits.
seed "$ops/seed-04-read-side" 07 01 00 00 00 00 \
	10 00 0f 0d 06 01 02 01 08 07 01 04 02 0c 0b 0a 09 00 0c \
	0d 08 0e 0e 0c 13 0d 11 00 0f 01 0e 0c 13

# Invalid parameters and sizes.
seed "$ops/seed-05-invalid" 01 0c 00 00 00 00 \
	0f 04 10 00 00 00 00 0f 04 20 00 00 00 00 0f 04 30 00 00 00 00 \
	0f 00 61 00 00 00 00 0f 00 01 00 89 87 00 0f 05 01 83 00 00 00 \
	0f 06 01 00 00 94 00 0f 03 01 00 00 82 00 \
	10 00 08 0a 03 00 0a 16 00 0a 15 00 0a 14 00 05 01 02 13

# Full 256 keys, identity hash, 4 -> 65536 -> 4 buckets.
seed "$ops/seed-06-big-resize" 05 01 84 00 00 00 \
	10 00 3f 10 40 3f 10 80 3f 10 c0 3f \
	0a 0f 00 13 0a 04 00 13 0a 0c 00 08 0a 01 00 13

# Tiny tables: min and max of 1 and 2 buckets.
seed "$ops/seed-07-tiny" 03 01 00 81 82 00 \
	10 00 1f 0a 02 00 13 0a 01 00 13 0a 04 00 04 05 06 02 07 0a 13

# insert_or_get on present and absent keys, in and out of a section; bulk
# lookups (both forms, strides 1 and 3) on a weak hash, across a resize.
seed "$ops/seed-08-get-bulk" 02 00 00 00 00 00 \
	10 00 3f 14 05 01 14 80 01 14 81 00 14 05 00 \
	15 00 30 00 15 20 30 01 15 07 11 05 \
	0d 14 05 01 14 90 01 15 00 30 01 0e \
	0a 0d 00 15 00 30 00 15 40 2f 03 0a 02 00 15 00 30 01 13

# --------------------------------------------------------------------------
# fuzz-interleave.  Header: set, flags (1 fixed seed, 2 min_size 1, 4 no
# reader thread), initial (1 << (2 + b % 11), or 1 << (b % 11) with min 1),
# R-1, R resize sizes (same encoding), pinned keys (b % 65), the schedule
# lengths of main, resizer and reader, the three schedules, a head-start
# byte.  Schedule bytes: < 0x70 run on, < 0xa0 sched_yield, < 0xf0 wait for
# another thread's (b & 7) + 1 yield points, else sleep.  Ops: 00 insert k,
# 01 remove k how, 02 replace k how, 03 lookup k, 04 lookup_fast k,
# 05 iterate, 06 count, 07 read_lock, 08 read_unlock, 09 wait n, 0a fill k
# n-1, 0b drain k n-1, 0c synchronize, 0d scan.

sched32="00 c3 00 a0 f4 00 00 c7 80 00 e1 00 00 c0 00 f8 \
00 00 c5 00 90 00 c2 00 00 ee 00 c1 00 00 f0 00"
sched16="00 00 c9 00 00 a4 00 d3 00 00 00 ca 00 f2 00 cc"
body="0a 00 3f 0d 05 0b 00 1f 0a 64 3f 07 03 05 09 0a 04 64 05 08 \
02 6e 06 01 78 06 06 0d 0a 20 3f 05 07 0d 09 1f 0d 08 0b 40 3f 0c 05 0d"

# Default hash, 4 <-> 1024 while the main thread works; 16 pinned keys.
# shellcheck disable=SC2086
seed "$il/seed-01-default" 00 01 00 03 04 00 08 01 10 20 20 10 \
	$sched32 $sched32 $sched16 00 $body

# Weak hash (16 values), expansions by several doublings, no reader.
# shellcheck disable=SC2086
seed "$il/seed-02-weak-hash" 02 05 01 02 0a 00 06 00 20 20 00 $sched32 $sched32 01 \
	$body

# Custom keys, shrinks by large factors; 64 pinned keys.
# shellcheck disable=SC2086
seed "$il/seed-03-custom-shrink" 04 01 0a 02 00 0a 01 40 20 20 10 \
	$sched32 $sched32 $sched16 00 $body

# Constant hash (one chain), tables of 1 and 2 buckets; 8 pinned keys.
# shellcheck disable=SC2086
seed "$il/seed-04-one-chain-tiny" 07 03 00 03 01 00 02 05 08 20 20 10 \
	$sched32 $sched32 $sched16 00 $body

# Identity hash, a reader section held across resizes.
# shellcheck disable=SC2086
seed "$il/seed-05-held-section" 05 01 02 01 08 02 20 20 20 10 \
	$sched32 $sched32 $sched16 00 \
	0a 00 3f 0a 40 3f 07 0d 09 1f 05 09 9f 0d 03 10 04 20 01 11 06 05 08 \
	0d 05 0b 00 3f 05
echo "make-seeds.sh: $(find "$ops" -type f | wc -l) fuzz-ops seeds," \
	"$(find "$il" -type f | wc -l) fuzz-interleave seeds," \
	"$(cat "$ops"/* "$il"/* | wc -c) bytes"
