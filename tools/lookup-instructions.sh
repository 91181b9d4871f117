#!/usr/bin/env bash
# tools/lookup-instructions.sh - instructions per lookup of relhash-bench's
# read-only loop (one thread, the relhash backend), counted by callgrind and
# split by source file: the library's inline lookup and read-side section
# (include/relhash/) against the harness around them (tools/).  Counts, not
# times: a busy machine does not change them, so two builds can be compared
# instruction by instruction (doc/DESIGN.md section 12, "Healing", its
# cost).
#
# Usage: tools/lookup-instructions.sh BUILD_DIR [KEYS]
#   BUILD_DIR  a build configured with CPPFLAGS=-DBENCH_NO_TSC (valgrind
#              does not emulate rdtscp, which the latency sampling uses)
#   KEYS       keys in the table, default 4096
# Needs valgrind (callgrind_annotate comes with it).
set -euo pipefail

if [ $# -lt 1 ] || [ $# -gt 2 ]; then
	echo "usage: $0 BUILD_DIR [KEYS]" >&2
	exit 2
fi
build=$(cd "$1" && pwd)
keys=${2:-4096}
bench=$build/tools/.libs/relhash-bench
[ -x "$bench" ] || bench=$build/tools/relhash-bench
if [ ! -x "$bench" ]; then
	echo "$0: no tools/relhash-bench in $build" >&2
	exit 2
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Only the worker's loop is counted (--toggle-collect), not the fill.
LD_LIBRARY_PATH=$build/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
	valgrind --tool=callgrind --callgrind-out-file="$work/out" \
	--toggle-collect=rh_worker_fast "$bench" --backends=relhash \
	--update-pct=0 --resize=none --threads=1 --keys="$keys" \
	--seconds=2 --rounds=1 > "$work/bench.txt" 2> "$work/valgrind.txt" || {
	cat "$work/valgrind.txt" >&2
	exit 1
}

# The lookups: the verification's hits ("passed: N lookups of never-removed
# keys all hit") and misses (", M of never-inserted keys all missed").
lookups=$(awk '$1 == "relhash" && $2 == "passed:" {
	for (i = 3; i <= NF; i++)
		if ($i ~ /^[0-9]+$/ && ($(i + 1) == "lookups" || $(i + 1) == "of"))
			n += $i
	print n
}' "$work/bench.txt")
if [ -z "$lookups" ] || [ "$lookups" -eq 0 ]; then
	echo "$0: no verified lookups in relhash-bench's output" >&2
	cat "$work/bench.txt" >&2
	exit 1
fi

# callgrind_annotate's table of "Ir (share) file:function" rows.
callgrind_annotate --inclusive=no "$work/out" |
	awk -v n="$lookups" -v keys="$keys" '
	/file:function/ { table = 1; getline; next }
	table && /^-----/ { table = 0 }
	table && NF >= 3 {
		ir = $1
		gsub(",", "", ir)
		file = $0
		sub(/^ *[0-9,]+ +\( *[0-9.]+%\) +/, "", file)
		sub(/:[^:]*$/, "", file)
		sum[file] += ir
		total += ir
	}
	END {
		printf "%d keys, %d lookups: %.1f instructions a lookup\n", keys, n, total / n
		for (f in sum)
			printf "  %-40s %6.1f\n", f, sum[f] / n
	}'
