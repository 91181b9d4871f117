#!/bin/bash
# bench-report.sh - run relhash-bench's comparison matrix and write
# doc/PERFORMANCE.md (tables of ratios against the goals of the project) and
# SVG plots in doc/perf/ (when gnuplot is installed).
#
# Usage: tools/bench-report.sh RELHASH_BENCH [SOURCE_DIR]
#   RELHASH_BENCH  the built tools/relhash-bench
#   SOURCE_DIR     where doc/ is written (default: this script's ../)
# Environment: BENCH_SECONDS (measured seconds per run, default 6),
#   BENCH_ROUNDS (default 3).  `make bench-report` runs it.
#   RELCACHED: the built relcached, for the section "relcached against
#   memcached" (relcached/bench-memcached.sh, RELCACHED_ROUNDS rounds,
#   default 3: about 80 s each); without it, or without memcached and
#   memcaslap, the section says so.  BENCH_REPORT_ONLY=relcached: run only
#   that comparison and replace its section in the existing PERFORMANCE.md;
#   BENCH_REPORT_ONLY=hash: the same for the section "The default hash
#   against the one it replaced" (BENCH_HASH_RUNS pairs of runs per
#   cell, default 15: about 5 minutes), =bulk for "Bulk lookups and
#   the machine's limit" (about 5 minutes: the 16,777,216-key fills), and
#   =reclaim for "Reclamation: each writer's own against the callback
#   thread" (about 1 minute), and =baseline for "Against an earlier
#   build", which runs only with BENCH_BASELINE, an earlier build's
#   tools/relhash-bench (BENCH_BASELINE_NAME says which in the section;
#   BENCH_BASELINE_RUNS pairs per cell, default 5: about 15 minutes).
#
# Exit status: 0, or 1 when a run failed its verification (the report is
# written anyway and says which), 2 on usage errors.

set -euo pipefail

if [ $# -lt 1 ] || [ $# -gt 2 ]; then
	echo "usage: $0 RELHASH_BENCH [SOURCE_DIR]" >&2
	exit 2
fi
bench=$1
srcdir=${2:-$(cd "$(dirname "$0")/.." && pwd)}
seconds=${BENCH_SECONDS:-6}
rounds=${BENCH_ROUNDS:-3}
if [ ! -x "$bench" ]; then
	echo "$0: $bench is not an executable (run make first)" >&2
	exit 2
fi

doc=$srcdir/doc/PERFORMANCE.md
plots=$srcdir/doc/perf
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$plots"
failed=0

# The section "relcached against memcached", on stdout: the comparison
# relcached/bench-memcached.sh prints, or why it did not run.
relcached_section() {
	local tool missing=
	echo "## relcached against memcached"
	echo
	for tool in memcached memcaslap python3; do
		command -v "$tool" > /dev/null 2>&1 || missing="$missing $tool"
	done
	if [ -z "${RELCACHED:-}" ] || [ ! -x "$RELCACHED" ]; then
		echo "Not run: no relcached binary (RELCACHED; \`make bench-report\` sets it)." |
			tee /dev/stderr
	elif [ -n "$missing" ]; then
		echo "Not run: not installed:$missing (apt-get install memcached libmemcached-tools)." |
			tee /dev/stderr
	else
		echo "[relcached] relcached/bench-memcached.sh, ${RELCACHED_ROUNDS:-3} rounds" >&2
		echo "Measured on $(date -u '+%Y-%m-%d %H:%M UTC') by relcached/bench-memcached.sh."
		echo "The server and the request path: doc/relcached.md."
		echo
		ROUNDS=${RELCACHED_ROUNDS:-3} bash "$srcdir/relcached/bench-memcached.sh" "$RELCACHED" || {
			echo "**FAILED**: relcached/bench-memcached.sh exited with status $?."
			failed=1
		}
	fi
	echo
}

# An awk function for the sections that pair runs: the median of x[1..n],
# sorted in place.
awk_median='
function median(x, n,    i, j, y) {
	for (i = 2; i <= n; i++) {
		y = x[i]
		for (j = i - 1; j >= 1 && x[j] > y; j--)
			x[j + 1] = x[j]
		x[j + 1] = y
	}
	return n % 2 ? x[(n + 1) / 2] : (x[n / 2] + x[n / 2 + 1]) / 2
}'

# The section "The default hash against the one it replaced", on stdout:
# relhash's read-only lookups, single and bulk, with --hash=default and
# with --hash=replaced (the construction the default replaced, inlined
# the same way): one process each, a pair per cell and run, the pair's
# order alternating from run to run, BENCH_HASH_RUNS runs.  Each hash
# needs its own compiled lookup loop and its own table, and a table's
# placement in memory moves a run by up to a fifth here, so the section
# takes many short pairs and quotes the median of the pairs' ratios, of
# lookups per second of CPU time (which a busy machine's descheduling
# does not skew).
hash_section() {
	local runs=${BENCH_HASH_RUNS:-15} i k t h order
	echo "[hash] the default against the replaced hash, $runs runs each" >&2
	: > "$work/hash.csv"
	for i in $(seq "$runs"); do
		order="default replaced"
		[ $((i % 2)) -eq 0 ] && order="replaced default"
		for k in 4096 1048576; do
			for t in 1 2; do
				for h in $order; do
					"$bench" --backends=relhash,relhash-bulk \
						--hash="$h" --keys="$k" --threads="$t" \
						--update-pct=0 --resize=none --seconds=1 \
						--rounds=1 --format=csv > "$work/run.csv" ||
						failed=1
					awk -F, -v h="$h" -v i="$i" '
					NR == 1 { for (j = 1; j <= NF; j++) c[$j] = j; next }
					{ print $c["keys"] "," $c["threads"] "," i "," h "," \
					        $c["backend"] "," $c["cpu_mops"] }' \
						"$work/run.csv" >> "$work/hash.csv"
				done
			done
		done
	done
	echo "## The default hash against the one it replaced"
	echo
	echo "Measured on $(date -u '+%Y-%m-%d %H:%M UTC'): \`relhash-bench"
	echo "--backends=relhash,relhash-bulk --hash=default|replaced --update-pct=0"
	echo "--resize=none --seconds=1 --rounds=1\`, one process per hash, $runs pairs"
	echo "per cell (the order alternating). Millions of lookups per second of the"
	echo "workers' CPU time, medians; ratios: the median of the pairs' ratios."
	echo "\`replaced\` is the construction \`relhash_hash()\` replaced (public"
	echo "masks; doc/DESIGN.md section 12), inlined the same way. The goals: at"
	echo "least 0.9x at 4,096 keys and 0.97x at 1,048,576; bulk lookups keep their"
	echo "lead over single ones."
	echo
	echo "| keys | threads | default | replaced | default / replaced | goal | met | bulk / single: default, replaced |"
	echo "|---:|---:|---:|---:|---:|---:|---|---:|"
	awk -F, "$awk_median"'
	{ v[$1, $2, $3, $4, $5] = $6
	  if (!(($1, $2) in seen)) { seen[$1, $2] = 1; cells[++nc] = $1 SUBSEP $2 }
	  if ($3 > runs) runs = $3 }
	END {
		for (c = 1; c <= nc; c++) {
			split(cells[c], kt, SUBSEP)
			k = kt[1]; t = kt[2]
			for (i = 1; i <= runs; i++) {
				d[i] = v[k, t, i, "default", "relhash"]
				r[i] = v[k, t, i, "replaced", "relhash"]
				q[i] = d[i] / r[i]
				bd[i] = v[k, t, i, "default", "relhash-bulk"] / d[i]
				br[i] = v[k, t, i, "replaced", "relhash-bulk"] / r[i]
			}
			ratio = median(q, runs)
			target = k >= 1048576 ? 0.97 : 0.9
			printf "| %d | %d | %.2f | %.2f | %.3fx | %.2fx | %s | %.2fx, %.2fx |\n",
			       k, t, median(d, runs), median(r, runs), ratio, target,
			       (ratio >= target ? "yes" : "**no**"),
			       median(bd, runs), median(br, runs)
		}
	}' "$work/hash.csv"
	echo
}

# The section "Bulk lookups and the machine's limit", on stdout: one
# thread's lookups, single and bulk, of relhash and (when built) DPDK's
# rte_hash at 1,048,576 and 16,777,216 keys, against the ceiling the
# machine's random loads put on a lookup of two dependent misses
# (relhash-bench's limit probe).
bulk_title="Bulk lookups and the machine's limit"
bulk_section() {
	local k backends=relhash-bulk,relhash
	if "$bench" --backends=dpdk-bulk --keys=64 --update-pct=0 \
		--resize=none --seconds=0.1 --rounds=1 > /dev/null 2>&1; then
		backends=relhash-bulk,dpdk-bulk,relhash,dpdk
	fi
	echo "## $bulk_title"
	echo
	echo "Measured on $(date -u '+%Y-%m-%d %H:%M UTC'): \`relhash-bench"
	echo "--backends=$backends --threads=1 --update-pct=0 --resize=none"
	echo "--seconds=$seconds --rounds=$rounds\`, groups of 16 keys. Lookups a"
	echo "second of one thread's CPU time, and their share of the ceiling: the"
	echo "probe's independent random cache-line loads a second over a buffer of"
	echo "the table's size, halved (a lookup needs two dependent misses: its"
	echo "bucket, then its node), probed after each round; the share is the"
	echo "median over rounds of each round's lookups over that round's ceiling."
	echo "The probe's buffer is in 4 KiB pages, as the"
	echo "objects are; relhash's bucket arrays from 2 MiB up are in huge pages"
	echo "(doc/DESIGN.md, \"Memory\"), which spares their loads the page walk the"
	echo "ceiling counts. Between runs the probe's rate over a 1 GiB buffer has"
	echo "varied 2x on this virtual machine (24.6 to 52.0 M loads/s in three runs"
	echo "of one build on 2026-12-06, steady within each run: where the buffer"
	echo "lands in the host's memory), far more than the lookups' (9.9 to 13.7"
	echo "M/s): the share at 16,777,216 keys is no surer than that. The goals:"
	echo "bulk lookups at least 1.2x \`rte_hash_lookup_bulk\` and 60 % of the"
	echo "ceiling."
	echo
	for k in 1048576 16777216; do
		echo "[bulk] $k keys, $backends" >&2
		"$bench" --backends="$backends" --keys="$k" --threads=1 \
			--update-pct=0 --resize=none --seconds="$seconds" \
			--rounds="$rounds" > "$work/bulk.txt" || failed=1
		echo "$k keys:"
		echo
		echo '```'
		awk '/^machine limit/ { on = 1 } on && !NF { exit } on' \
			"$work/bulk.txt"
		echo '```'
		echo
		awk '/^machine limit/ { on = 1 }
		     on && !NF { exit }
		     on && $1 == "relhash-bulk" { r = $2; share = $3 + 0 }
		     on && $1 == "dpdk-bulk" { d = $2 }
		     END {
			if (d > 0)
				printf "relhash-bulk / dpdk-bulk: %.2fx (goal 1.2x: %s). ",
				       r / d, (r / d >= 1.2 ? "met" : "**not met**")
			printf "relhash-bulk: %d %% of the ceiling (goal 60 %%: %s).\n\n",
			       share, (share >= 60 ? "met" : "**not met**")
		     }' "$work/bulk.txt"
	done
}

# The matrix.  "wide" runs only with 4,096 keys: at 4 buckets a table of
# 1,048,576 keys has chains of 262,144 nodes, so every backend's lookups
# would crawl (and relhash's unzip needs one grace period per run of a
# chain: about 120,000 to double from 4 buckets).  PERFORMANCE.md says so.
# "grow-prealloc" is grow with the objects allocated before the fill's
# clock starts: the fill then times the tables' own inserts.
workloads="ro rw resize wide grow grow-prealloc"
threads_for() {
	# 8: more threads than CPUs, as servers run.
	case $1 in
	grow | grow-prealloc) echo "2 8" ;;
	*) echo "1 2 8" ;;
	esac
}
keys_for() {
	case $1 in
	ro) echo "4096 65536 1048576" ;;
	wide) echo "4096" ;;
	grow | grow-prealloc) echo "200000 1048576" ;;
	*) echo "4096 1048576" ;;
	esac
}
options_for() {
	case $1 in
	ro) echo "--update-pct=0 --resize=none" ;;
	rw) echo "--update-pct=10 --resize=none" ;;
	resize) echo "--update-pct=0 --resize=toggle" ;;
	wide) echo "--update-pct=0 --resize=wide" ;;
	grow) echo "--resize=grow --backends=$grow_backends" ;;
	grow-prealloc) echo "--resize=grow --prealloc --backends=$grow_backends" ;;
	esac
}

# The section "Against an earlier build", on stdout: the relhash backend
# in every cell of the matrix, run by this build and by an earlier one
# (BENCH_BASELINE: its tools/relhash-bench; BENCH_BASELINE_NAME names it),
# to judge a change by the rule that no cell gets more than 5 % worse.  The
# unsynchronized floor runs beside it where it can (read-only cells, one
# thread's updates): it runs no library code, so its ratio is what the
# harness itself changed, and the noise.  As in the hash section: one process per build, a pair per cell and run, the
# order alternating, BENCH_BASELINE_RUNS runs (default 5) of one second;
# medians of the pairs' ratios, judged per second of the workers' CPU time.
# A cell the earlier build cannot run (an option it lacks) is said so.
baseline_title="Against an earlier build"

# The pairs: a CSV line per cell, run, build ("new", "old") and backend
# on stdout: workload, keys, threads, run, build, backend, then Mops/s,
# per CPU-second, fill time; or "failed" after the build.
baseline_runs() {
	local base=$1 runs=$2 name=$3 i w k t b exe order
	local grow_backends=relhash # options_for's grow: relhash alone
	for i in $(seq "$runs"); do
		echo "[baseline] run $i of $runs against $name" >&2
		order="new old"
		[ $((i % 2)) -eq 0 ] && order="old new"
		for w in $workloads; do
			for k in $(keys_for "$w"); do
				for t in $(threads_for "$w"); do
					for b in $order; do
						exe=$bench
						[ "$b" = old ] && exe=$base
						# shellcheck disable=SC2046 # a word list
						if ! "$exe" --backends=relhash,unsync $(options_for "$w") \
							--keys="$k" --threads="$t" --seconds=1 \
							--rounds=1 --format=csv > "$work/run.csv" \
							2> "$work/run.err"; then
							[ "$b" = new ] && failed=1
							echo "$w,$k,$t,$i,$b,failed"
							continue
						fi
						awk -F, -v id="$w,$k,$t,$i,$b" '
						NR == 1 { for (j = 1; j <= NF; j++) c[$j] = j; next }
						$c["status"] != "skipped" {
							print id "," $c["backend"] "," $c["mops"] "," \
							      $c["cpu_mops"] "," \
							      ("fill_s" in c ? $c["fill_s"] : "")
						}' "$work/run.csv"
					done
				done
			done
		done
	done
}

baseline_section() {
	local base=${BENCH_BASELINE:-} runs=${BENCH_BASELINE_RUNS:-5}
	local name=${BENCH_BASELINE_NAME:-${BENCH_BASELINE:-}}
	echo "## $baseline_title"
	echo
	if [ -z "$base" ] || [ ! -x "$base" ]; then
		echo "Not run: no earlier build (BENCH_BASELINE, its tools/relhash-bench)." |
			tee /dev/stderr
		echo
		return
	fi
	baseline_runs "$base" "$runs" "$name" > "$work/baseline.csv"
	echo "Measured on $(date -u '+%Y-%m-%d %H:%M UTC'): this build against"
	echo "$name, the relhash backend alone in every cell of the matrix (the"
	echo "options above, \`--seconds=1 --rounds=1\`), one process per build, $runs"
	echo "pairs per cell (the order alternating). Ratios: this build over the"
	echo "earlier one, the median of the pairs' ratios, of throughput a second of"
	echo "the workers' CPU time (judged: a cell more than 5 % worse fails) and of"
	echo "wall-clock throughput; for the fills, the earlier build's fill time over"
	echo "this one's (above 1: this build filled faster). Floor: the same ratio"
	echo "per CPU of the unsynchronized table, where it runs: no library code,"
	echo "so what the harness changed between the builds, and the noise."
	echo
	echo "| workload | keys | threads | this build, Mops/s | earlier | ratio per CPU | wall clock | fill time | floor | within 5 % |"
	echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"
	awk -F, "$awk_median"'
	{ id = $1 SUBSEP $2 SUBSEP $3
	  if (!(id in seen)) { seen[id] = 1; cells[++nc] = id }
	  if ($6 == "failed") { bad[id, $5] = 1; next }
	  if ($6 == "unsync") { fl[id, $5, $4] = $8; next }
	  n = ++got[id, $5]
	  m[id, $5, n] = $7; cpu[id, $5, n] = $8; fill[id, $5, n] = $9 }
	# The median of the floor ratios of cell id, or "-".
	function floor_ratio(id,    i, n, x) {
		for (i = 1; (id, "new", i) in fl || (id, "old", i) in fl; i++)
			if (fl[id, "new", i] > 0 && fl[id, "old", i] > 0)
				x[++n] = fl[id, "new", i] / fl[id, "old", i]
		return n ? sprintf("%.3fx", median(x, n)) : "-"
	}
	function cell(id,    i, n, q, w, f, nf, a, b, c, r) {
		split(id, a, SUBSEP)
		printf "| %s | %d | %d | ", a[1], a[2], a[3]
		if (bad[id, "new"]) { print "**FAILED** | | | | | | |"; return }
		if (bad[id, "old"]) { print "- | not in the earlier build | | | | | |"; return }
		n = got[id, "new"] < got[id, "old"] ? got[id, "new"] : got[id, "old"]
		nf = 0
		for (i = 1; i <= n; i++) {
			q[i] = cpu[id, "new", i] / cpu[id, "old", i]
			w[i] = m[id, "new", i] / m[id, "old", i]
			b[i] = m[id, "new", i]; c[i] = m[id, "old", i]
			if (fill[id, "new", i] > 0 && fill[id, "old", i] > 0)
				f[++nf] = fill[id, "old", i] / fill[id, "new", i]
		}
		r = median(q, n)
		printf "%.2f | %.2f | %.3fx | %.3fx | %s | %s | %s |\n", median(b, n),
		       median(c, n), r, median(w, n),
		       (nf ? sprintf("%.2fx", median(f, nf)) : "-"), floor_ratio(id),
		       (r >= 0.95 ? "yes" : "**no**")
	}
	END { for (i = 1; i <= nc; i++) cell(cells[i]) }' "$work/baseline.csv"
	echo
}

# Each writer freeing its own removed objects (relhash_defer_local(), the
# relhash backend) against one callback thread freeing everyone's
# (relhash_defer(), relhash-defer): the thread's capacity, and the removal
# rates of writers that do nothing else, at 1, 2 and 8 threads.
reclaim_title="Reclamation: each writer's own against the callback thread"
reclaim_section() {
	local t cap
	echo "## $reclaim_title"
	echo
	echo "Measured on $(date -u '+%Y-%m-%d %H:%M UTC'). One callback thread"
	echo "runs every \`relhash_defer\` of the process; \`relhash_defer_local\`"
	echo "lets each writer free its own (doc/DESIGN.md, \"Reclaiming on the"
	echo "calling thread\"). The callback thread's capacity, \`relhash-bench"
	echo "--epoch --threads=1\`, callbacks and a barrier a second:"
	"$bench" --epoch --threads=1 --seconds="$seconds" > "$work/reclaim.txt" ||
		failed=1
	cap=$(awk '/^callbacks \+ barrier, M\/s/ { print $5 }' "$work/reclaim.txt")
	echo "**$cap M/s**."
	echo
	echo "Writers that only insert and remove (\`--update-pct=100 --keys=4096"
	echo "--resize=none --backends=relhash,relhash-defer,rwlock\`): each removal"
	echo "defers one free. Removals a second, all threads:"
	echo
	echo "| threads | relhash (own) | relhash-defer (callback thread) | own / callback | rwlock (frees at once) |"
	echo "|---:|---:|---:|---:|---:|"
	for t in 1 2 8; do
		echo "[reclaim] $t threads" >&2
		"$bench" --backends=relhash,relhash-defer,rwlock --threads="$t" \
			--keys=4096 --update-pct=100 --resize=none \
			--seconds="$seconds" --rounds="$rounds" > "$work/reclaim.txt" ||
			failed=1
		awk -v t="$t" '/^throughput/ { on = 1 }
		     on && !NF { if (seen) exit; next }
		     on && $1 ~ /^(relhash|relhash-defer|rwlock)$/ { r[$1] = $5; seen = 1 }
		     END {
			printf "| %s | %.2f M | %.2f M | %.2fx | %.2f M |\n", t,
			       r["relhash"], r["relhash-defer"],
			       (r["relhash-defer"] > 0 ? r["relhash"] / r["relhash-defer"] : 0),
			       r["rwlock"]
		     }' "$work/reclaim.txt"
	done
	echo
	echo "On paper: with \`relhash_defer\`, w writers that each queue r frees a"
	echo "second need w r under the capacity above, whatever the machine's"
	echo "size; past it, back-pressure holds them. With \`relhash_defer_local\`"
	echo "nothing of the process runs per free: each writer asks for at most one"
	echo "grace period at a time (one lock per thread and grace period), and the"
	echo "grace period, two \`membarrier\` calls, serves every writer's blocks."
	echo
}

# The document on stdin with the section in file $2, whose title is $1,
# in place of its old section of that title, or before "## Commands" when
# it has none.
splice_section() {
	awk -v title="## $1" -v section="$2" '
	function put(    line) {
		while ((getline line < section) > 0)
			print line
		done = 1
	}
	inside && /^## / { inside = 0 }
	$0 == title { inside = 1; if (!done) put(); next }
	/^## Commands$/ && !done { put() }
	!inside { print }'
}

case ${BENCH_REPORT_ONLY:-} in
relcached | hash | bulk | reclaim | baseline)
	if [ ! -f "$doc" ]; then
		echo "$0: no $doc to update: run the whole report" >&2
		exit 2
	fi
	case $BENCH_REPORT_ONLY in
	relcached)
		relcached_section > "$work/section.md"
		title="relcached against memcached" ;;
	hash)
		hash_section > "$work/section.md"
		title="The default hash against the one it replaced" ;;
	bulk)
		bulk_section > "$work/section.md"
		title=$bulk_title ;;
	reclaim)
		reclaim_section > "$work/section.md"
		title=$reclaim_title ;;
	baseline)
		baseline_section > "$work/section.md"
		title=$baseline_title ;;
	esac
	splice_section "$title" "$work/section.md" < "$doc" > "$work/doc.md"
	cp "$work/doc.md" "$doc"
	echo "updated the section \"$title\" of $doc" >&2
	exit "$failed"
	;;
esac

# grow leaves out relhash-call (the same fill as relhash) and urcu-qsbr:
# its fills of 1,048,576 keys took 80-130 s here, resizes starved (memb
# is the flavor the comparison is about).
# The other peers that resize themselves join it when this build has them.
grow_backends=relhash
for b in urcu-memb ck-ht libcuckoo tbb; do
	if "$bench" --backends=$b --keys=64 --update-pct=0 --resize=none \
		--seconds=0.1 --rounds=1 > /dev/null 2>&1; then
		grow_backends=$grow_backends,$b
	fi
done
grow_backends=$grow_backends,rwlock
describe() {
	case $1 in
	ro) echo "read-only lookups" ;;
	rw) echo "90 % lookups, 10 % inserts and removes" ;;
	resize) echo "lookups while a thread toggles the table between half and double its size" ;;
	wide) echo "lookups while a thread resizes the table between 4 and 65,536 buckets" ;;
	grow) echo "lookups after every thread filled a fresh table from 8 buckets" ;;
	grow-prealloc) echo "lookups after a fill from 8 buckets, objects allocated beforehand" ;;
	esac
}

runs=0
for w in $workloads; do
	for k in $(keys_for "$w"); do
		for t in $(threads_for "$w"); do
			runs=$((runs + 1))
		done
	done
done

n=0
started=$(date +%s)
: > "$work/commands"
for w in $workloads; do
	for k in $(keys_for "$w"); do
		for t in $(threads_for "$w"); do
			n=$((n + 1))
			# shellcheck disable=SC2046 # options_for is a word list
			set -- --compare --format=csv --threads="$t" --keys="$k" \
				$(options_for "$w") --seconds="$seconds" \
				--rounds="$rounds"
			echo "relhash-bench $*" >> "$work/commands"
			echo "[$n/$runs] $w: $k keys, $t thread(s)" >&2
			status=0
			"$bench" "$@" > "$work/run.csv" || status=$?
			if [ "$status" -ne 0 ]; then
				echo "$0: relhash-bench $* exited with $status" >&2
				failed=1
			fi
			if [ ! -s "$work/results.csv" ]; then
				head -n 1 "$work/run.csv" | sed 's/^/workload,/' \
					> "$work/results.csv"
			fi
			tail -n +2 "$work/run.csv" | sed "s/^/$w,/" >> "$work/results.csv"
		done
	done
done
echo "[epoch] grace-period micro-benchmarks" >&2
echo "relhash-bench --epoch --format=csv --threads=$(nproc)" >> "$work/commands"
"$bench" --epoch --format=csv --threads="$(nproc)" > "$work/epoch.csv" || failed=1
elapsed=$(( $(date +%s) - started ))
hash_section > "$work/hash.md"
bulk_section > "$work/bulk.md"
reclaim_section > "$work/reclaim.md"
baseline_section > "$work/baseline.md"
relcached_section > "$work/relcached.md"

# ---------------------------------------------------------------------------
# Plots: Mops/s of every backend, one grouped bar chart per workload.

plot_workload() {
	local w=$1 data=$work/$1.dat
	awk -F, -v w="$w" '
		function short(n) {
			if (n >= 1048576 && n % 1048576 == 0) return n / 1048576 "M"
			if (n >= 1024 && n % 1024 == 0) return n / 1024 "K"
			return n
		}
		NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
		$col["workload"] != w { next }
		{
			cfg = short($col["keys"]) " keys, " $col["threads"] " thr"
			if (!(cfg in seen)) { seen[cfg] = 1; cfgs[++ncfg] = cfg }
			b = $col["backend"]
			if ($col["status"] == "skipped") next
			if (!(b in bseen)) { bseen[b] = 1; backends[++nb] = b }
			v[cfg, b] = $col["mops"]
		}
		END {
			printf "config"
			for (j = 1; j <= nb; j++) printf "\t%s", backends[j]
			printf "\n"
			for (i = 1; i <= ncfg; i++) {
				printf "\"%s\"", cfgs[i]
				for (j = 1; j <= nb; j++) {
					x = v[cfgs[i], backends[j]]
					printf "\t%s", x == "" ? "-" : x
				}
				printf "\n"
			}
		}' "$work/results.csv" > "$data"
	local ncols
	ncols=$(head -n 1 "$data" | awk -F'\t' '{ print NF }')
	gnuplot <<EOF
set terminal svg size 900,420 dynamic font "sans,11"
set output "$plots/$w.svg"
set title "$(describe "$w") (Mops/s, median of $rounds rounds; log scale)"
set datafile separator "\t"
set datafile missing "-"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set logscale y
set ylabel "Mops/s"
set grid ytics
set key outside right top
set xtics nomirror
plot for [c=2:$ncols] "$data" using c:xtic(1) title columnheader(c)
EOF
}

have_gnuplot=0
if command -v gnuplot > /dev/null 2>&1; then
	have_gnuplot=1
	for w in $workloads; do
		plot_workload "$w"
	done
else
	echo "$0: gnuplot not found: no plots (apt-get install gnuplot-nox)" >&2
fi

# ---------------------------------------------------------------------------
# PERFORMANCE.md

cpu_model=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo 2> /dev/null || true)
# What each backend is: the legend of a text run (a second on 64 keys).
legend=$("$bench" --keys=64 --update-pct=0 --resize=none --seconds=0.5 \
	--rounds=1 | awk '/^backends$/ { on = 1; next } on && NF')
version=$("$bench" --version | awk '{ print $NF }')

{
	cat <<EOF
# relhash performance

Written by \`make bench-report\` (tools/bench-report.sh) on $(date -u '+%Y-%m-%d %H:%M UTC'),
relhash $version. Do not edit: run it again.

- Machine: ${cpu_model:-unknown CPU}, $(nproc) CPUs online (\`nproc\`),
  Linux $(uname -r), $(awk '/^MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo) of memory.
- The whole matrix took $elapsed s: $runs runs of ${seconds} s measured each
  (split over the backends and $rounds rounds; the backends alternate within a
  round; throughputs are medians over rounds, and ratios of two backends of
  one run the median of their ratios within each round), plus setup and
  verification.
- Every run ended with a verification (no lookup of a never-removed key
  missed, no never-inserted key was found, the count and an iteration match
  the model); a failed one is marked **FAILED** below.
- On a busy machine the workers get only part of their CPUs. "On CPU" is
  the share of the time relhash's workers were running; "per CPU" figures
  divide each backend's throughput by its own share: the throughput had
  every worker had a CPU to itself. They are the fairer comparison when the
  machine is shared, except where threads block (rwlock writers, resizes
  waiting for grace periods), which they flatter.
- The tables compared (the peers this build has, with their versions;
  a peer that cannot run a workload is marked skipped there):

EOF
	echo "$legend" | sed 's/^\([^ ]*\)  */  - \1: /'
	echo

	awk -F, -v epoch="$work/epoch.csv" -v plots="$have_gnuplot" '
	BEGIN {
		split("p50_ns p99_ns p999_ns max_ns resizing_p50_ns resizing_p99_ns " \
		      "resizing_p999_ns resizing_max_ns", latency_columns, " ")
		describe["ro"] = "read-only lookups (--update-pct=0 --resize=none)"
		describe["rw"] = "90 % lookups, 10 % inserts and removes (--update-pct=10 --resize=none)"
		describe["resize"] = "lookups while a thread toggles between half and double the size (--update-pct=0 --resize=toggle)"
		describe["wide"] = "lookups while a thread resizes between 4 and 65,536 buckets (--update-pct=0 --resize=wide)"
		describe["grow"] = "every thread inserts its share of the keys into a fresh table of 8 buckets with automatic resizing, then all look up (--resize=grow); fill times and lookups after the fill"
		describe["grow-prealloc"] = "grow, each thread allocating its objects before the fill starts, so that the fill times the inserts alone (--resize=grow --prealloc); fill times and lookups after the fill"
	}
	function num(x) { return x == "" ? 0 : x + 0 }
	function key(w, k, t) { return w SUBSEP k SUBSEP t }
	function fmt(x) { return x > 0 ? sprintf("%.2fx", x) : "n/a" }
	# x / y of throughput: [m] wall clock, [c] per CPU-second.
	function quotient(x, y) { return x > 0 && y > 0 ? x / y : 0 }
	# b1 against b2.  Within one run, when one of them is relhash, from the
	# ratio column (each backend against relhash: the median of the
	# ratios within each round, which pairs runs seconds apart); else a
	# quotient of medians.
	function ratios(k1, b1, k2, b2) {
		if (k1 == k2 && b2 == "relhash" && paired[k1, b1] > 0) {
			r_wall = paired[k1, b1]
			r_cpu = paired_cpu[k1, b1]
			return
		}
		if (k1 == k2 && b1 == "relhash" && paired[k2, b2] > 0) {
			r_wall = 1 / paired[k2, b2]
			r_cpu = quotient(1, paired_cpu[k2, b2])
			return
		}
		r_wall = quotient(mops[k1, b1], mops[k2, b2])
		r_cpu = quotient(cpu_mops[k1, b1], cpu_mops[k2, b2])
	}
	function goal(text, w, c, target) {
		if (r_wall <= 0) met = "n/a"
		else if (r_wall >= target) met = "yes"
		else if (r_cpu >= target) met = "per CPU only"
		else met = "**no**"
		printf "| %s | %s | %s | %s | %s | %s | >= %.1fx | %s |\n", text, w,
		       c[2], c[3], fmt(r_wall), fmt(r_cpu), target, met
	}
	# The fill: the time of each backend (median of rounds), its ratio to
	# relhash paired within rounds, and when its load settled.
	function grow_column(k, b) {
		return (k, b) in status && status[k, b] != "skipped"
	}
	function grow_table(w,    i, j, k, b, c, kg, x) {
		for (i = nconfigs; i >= 1; i--) { split(configs[i], c, SUBSEP); if (c[1] == w) kg = configs[i] }
		print "The fill: seconds from the first insert to the last (median of rounds); for a peer, in parentheses, its fill time over that of relhash in the same round (above 1: relhash filled faster); settled: seconds from the last insert until the load was at most 75 % (slowest round, watched for 5 s; - where the table cannot tell).\n"
		printf "| keys | threads"
		for (j = 1; j <= nb; j++) if (grow_column(kg, backends[j])) printf " | %s fill s | settled s", backends[j]
		print " |"
		printf "|---:|---:"
		for (j = 1; j <= nb; j++) if (grow_column(kg, backends[j])) printf "|---:|---:"
		print "|"
		for (i = 1; i <= nconfigs; i++) {
			k = configs[i]
			split(k, c, SUBSEP)
			if (c[1] != w) continue
			printf "| %s | %s", c[2], c[3]
			for (j = 1; j <= nb; j++) {
				b = backends[j]
				if (!grow_column(kg, b)) continue
				printf " | %s", fill_s[k, b]
				if (b != "relhash") printf " (%s)", fmt(fill_ratio[k, b])
				x = settle_s[k, b]
				if (x == "") x = "-"
				else if (x + 0 < 0) x = "> 5"
				printf " | %s", x
			}
			print " |"
		}
		print ""
	}
	# Is b of the field in cell k: another table (not relhash run
	# otherwise, not the unsynchronized floor) that was in the run?
	function in_field(k, b) {
		return b !~ /^relhash/ && b != "unsync" && (k, b) in status
	}
	# The field: in each cell, relhash against the fastest other table,
	# by name; then the goal of grow-prealloc against the field.
	function field_table(    i, j, k, b, c, best, skipped, floor) {
		print "## The field\n"
		print "In each cell, relhash against the fastest of the other tables (every peer this build has; not relhash-call nor the unsynchronized floor), by wall-clock throughput; ratio: relhash divided by it, wall clock (per CPU-second).  Floor: where the cell ran it, the unsynchronized chained table divided by the same peer, which no chained table passes: where it is under a goal, no chained table meets that goal.  Skipped: peers that cannot run the workload (see the backends section of a text run).\n"
		print "| workload | keys | threads | relhash Mops/s | best other | its Mops/s | ratio | floor | skipped |"
		print "|---|---:|---:|---:|---|---:|---:|---:|---|"
		for (i = 1; i <= nconfigs; i++) {
			k = configs[i]
			split(k, c, SUBSEP)
			best = skipped = ""
			for (j = 1; j <= nb; j++) {
				b = backends[j]
				if (!in_field(k, b)) continue
				if (status[k, b] == "skipped") { skipped = skipped (skipped == "" ? "" : ", ") b; continue }
				if (best == "" || mops[k, b] > mops[k, best]) best = b
			}
			if (best == "") continue
			floor = "-"
			if (mops[k, "unsync"]) {
				ratios(k, "unsync", k, best)
				floor = fmt(r_wall)
			}
			ratios(k, "relhash", k, best)
			printf "| %s | %s | %s | %.2f | %s | %.2f | %s (%s) | %s | %s |\n", c[1], c[2], c[3],
			       mops[k, "relhash"], best, mops[k, best], fmt(r_wall), fmt(r_cpu),
			       floor, skipped == "" ? "-" : skipped
		}
		print ""
		field_prealloc_goals()
	}
	# grow-prealloc: relhash fills no slower than the fastest-filling
	# peer (the fill time of that peer over that of relhash, paired
	# within rounds), and looks up at least 1.5x as fast as the fastest
	# peer afterwards.
	function field_prealloc_goals(    i, j, k, b, c, best, fast, any) {
		for (i = 1; i <= nconfigs; i++) {
			k = configs[i]
			split(k, c, SUBSEP)
			if (c[1] != "grow-prealloc") continue
			best = fast = ""
			for (j = 1; j <= nb; j++) {
				b = backends[j]
				if (!in_field(k, b) || status[k, b] == "skipped") continue
				if (best == "" || mops[k, b] > mops[k, best]) best = b
				if (fast == "" || fill_s[k, b] + 0 < fill_s[k, fast] + 0) fast = b
			}
			if (best == "") continue
			if (!any++) {
				print "grow-prealloc against the field: the fill time of relhash at most that of the fastest-filling resizable peer (measured: the fill time of that peer over that of relhash, paired within rounds; above 1: relhash filled faster), and lookups afterwards at least 1.5x those of the fastest peer.\n"
				print "| goal | workload | keys | threads | measured | per CPU | target | met |"
				print "|---|---|---:|---:|---:|---:|---:|---|"
			}
			r_wall = fill_ratio[k, fast]; r_cpu = 0
			goal("fill time of " fast " (the fastest peer) / of relhash", c[1], c, 1.0)
			ratios(k, "relhash", k, best)
			goal("lookups afterwards vs " best " (the fastest peer)", c[1], c, 1.5)
		}
		if (any) print ""
	}
	function erow(label, field,    i, x) {
		printf "| %s |", label
		for (i = 1; i <= nflavors; i++) {
			x = ep[flavors[i], field]
			printf " %s |", x == "" ? "-" : x
		}
		print ""
	}

	NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
	{
		k = key($col["workload"], $col["keys"], $col["threads"])
		b = $col["backend"]
		if (!(k in seen)) { seen[k] = 1; configs[++nconfigs] = k }
		if (!(b in bseen)) { bseen[b] = 1; backends[++nb] = b }
		status[k, b] = $col["status"]
		mops[k, b] = num($col["mops"])
		cpu_mops[k, b] = num($col["cpu_mops"])
		paired[k, b] = num($col["ratio"])
		paired_cpu[k, b] = num($col["cpu_ratio"])
		share[k, b] = num($col["cpu_share"])
		for (q = 1; q <= 8; q++)
			lat[k, b, q] = $col[latency_columns[q]]
		resize_calls[k, b] = $col["resize_calls"]
		fill_s[k, b] = $col["fill_s"]
		fill_ratio[k, b] = num($col["fill_ratio"])
		settle_s[k, b] = $col["settle_s_max"]
		buckets[k, b] = $col["final_buckets"]
		engine_gps[k, b] = $col["engine_grace_periods_per_s"]
		engine_cbs[k, b] = $col["engine_callbacks_per_grace_period"]
	}
	END {
		while ((getline line < epoch) > 0) {
			n = split(line, f, ",")
			if (f[1] == "flavor") { for (i = 1; i <= n; i++) ecol[f[i]] = i; continue }
			flavors[++nflavors] = f[1]
			for (name in ecol) ep[f[1], name] = f[ecol[name]]
		}

		print "## Goals\n"
		print "relhash divided by the other, by wall-clock throughput and by throughput per CPU-second the workers got (the fairer figure on a busy machine, for workloads where no thread blocks). \"met\" judges the wall-clock ratio.\n"
		print "| goal | workload | keys | threads | measured | per CPU | target | met |"
		print "|---|---|---:|---:|---:|---:|---:|---|"
		for (i = 1; i <= nconfigs; i++) {
			k = configs[i]
			split(k, c, SUBSEP)
			w = c[1]
			if (w == "ro") {
				ratios(k, "relhash", k, "unsync")
				goal("read-only lookups vs the unsynchronized floor", w, c, 0.9)
				ratios(k, "relhash", k, "urcu-qsbr")
				goal("read-only lookups vs rculfhash-QSBR", w, c, 1.5)
			} else if (w == "resize") {
				ratios(k, "relhash", key("ro", c[2], c[3]), "relhash")
				goal("lookups while resizing vs relhash without resizing (two runs)", w, c, 0.8)
				ratios(k, "relhash", k, "rwlock")
				goal("lookups while resizing vs the rwlock table", w, c, 2)
			} else if (w == "wide" || w == "grow") {
				for (j = 1; j <= nb; j++) {
					b = backends[j]
					if (b !~ /^urcu/ || !mops[k, b]) continue
					if (w == "grow") {
						r_wall = fill_ratio[k, b]; r_cpu = 0
						goal("fill time of " b " / of relhash", w, c, 1.0)
					}
					ratios(k, "relhash", k, b)
					target = (w == "grow") ? 1.5 : 1.0
					goal("lookups vs " b, w, c, target)
				}
				if (w == "grow") {
					x = settle_s[k, "relhash"]
					settled = (x != "" && x + 0 >= 0)
					met = (settled && x + 0 <= 1) ? "yes" : "**no**"
					if (!settled) x = "never"
					printf "| load <= 75 %% after the last insert, s (slowest round) | %s | %s | %s | %s | | <= 1 | %s |\n", w, c[2], c[3], x, met
				}
			} else if (w == "rw") {
				best = best_cpu = ""
				for (j = 1; j <= nb; j++) {
					b = backends[j]
					if (b == "relhash" || b == "relhash-call" || b == "unsync" || !mops[k, b]) continue
					if (best == "" || mops[k, b] > mops[k, best]) best = b
					if (best_cpu == "" || cpu_mops[k, b] > cpu_mops[k, best_cpu]) best_cpu = b
				}
				ratios(k, "relhash", k, best)
				wall = r_wall
				ratios(k, "relhash", k, best_cpu)
				r_wall = wall
				goal("90/10 read/update vs the best peer", w, c, 1.5)
				if (mops[k, "unsync"]) {
					# What no table reaches: lookups without
					# synchronization, frees at once.
					ratios(k, "unsync", k, best)
					printf "| the unsynchronized floor vs the best peer (no table goes above it) | %s | %s | %s | %s | | | |\n",
					       w, c[2], c[3], fmt(r_wall)
				}
				x = lat[k, "relhash", 2]; y = lat[k, "urcu-qsbr", 2]
				if (x != "" && y != "")
					printf "| lookup p99 vs rculfhash-QSBR, ns | %s | %s | %s | %s vs %s | | <= QSBR | %s |\n",
					       w, c[2], c[3], x, y, x + 0 <= y + 0 ? "yes" : "**no**"
				x = engine_gps[k, "relhash"]
				if (x != "")
					printf "| grace periods a second (%s callbacks each) | %s | %s | %s | %.0f | | <= 200 | %s |\n",
					       engine_cbs[k, "relhash"], w, c[2], c[3], x, x + 0 <= 200 ? "yes" : "**no**"
			}
		}
		if (("relhash", "lock_unlock_inline_ns") in ep) {
			x = ep["relhash", "lock_unlock_inline_ns"]
			printf "| read_lock + read_unlock (inline), ns | epoch | | 1 | %.2f | | <= 2 | %s |\n",
			       x, x <= 2 ? "yes" : "**no**"
		}
		if (("urcu-memb", "sync_p50_us") in ep) {
			split("p50 p99", qs, " ")
			for (q = 1; q <= 2; q++) {
				x = ep["relhash", "sync_" qs[q] "_us"]; y = ep["urcu-memb", "sync_" qs[q] "_us"]
				printf "| synchronize latency %s vs liburcu-memb, us | epoch | | %s | %.1f vs %.1f | | <= memb | %s |\n",
				       qs[q], ep["relhash", "readers"], x, y, x + 0 <= y + 0 ? "yes" : "**no**"
			}
		}
		print ""
		field_table()

		nw = split("ro rw resize wide grow grow-prealloc", wl, " ")
		for (wi = 1; wi <= nw; wi++) {
			w = wl[wi]
			any = 0
			for (i = 1; i <= nconfigs; i++) { split(configs[i], c, SUBSEP); if (c[1] == w) any = 1 }
			if (!any) continue
			printf "## %s: %s\n\n", w, describe[w]
			print "Each peer: throughput relative to relhash in the same run (0.50x = half), wall clock (per CPU-second).\n"
			printf "| keys | threads | relhash Mops/s | per CPU | on CPU"
			for (j = 1; j <= nb; j++) if (backends[j] != "relhash") printf " | %s", backends[j]
			print " |"
			printf "|---:|---:|---:|---:|---:"
			for (j = 1; j <= nb; j++) if (backends[j] != "relhash") printf "|---:"
			print "|"
			for (i = 1; i <= nconfigs; i++) {
				k = configs[i]
				split(k, c, SUBSEP)
				if (c[1] != w) continue
				printf "| %s | %s | %.2f%s | %.2f | %.0f %%", c[2], c[3], mops[k, "relhash"],
				       status[k, "relhash"] == "FAILED" ? " **FAILED**" : "",
				       cpu_mops[k, "relhash"], 100 * share[k, "relhash"]
				for (j = 1; j <= nb; j++) {
					b = backends[j]
					if (b == "relhash") continue
					if (!((k, b) in status) || status[k, b] == "skipped") { printf " | -"; continue }
					ratios(k, b, k, "relhash")
					printf " | %s (%s)%s", fmt(r_wall), fmt(r_cpu),
					       status[k, b] == "FAILED" ? " **FAILED**" : ""
				}
				print " |"
			}
			print ""
			if (w ~ /^grow/) grow_table(w)
			if (plots) printf "![%s](perf/%s.svg)\n\n", w, w
		}

		print "## relhash lookup latency\n"
		print "Sampled (1 lookup in 64 timed), ns, timer cost subtracted. \"Resizing\": while a resize call was in progress.\n"
		print "| workload | keys | threads | p50 | p99 | p99.9 | max | resizing p50 | p99 | p99.9 | max | resize calls |"
		print "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
		for (i = 1; i <= nconfigs; i++) {
			k = configs[i]
			split(k, c, SUBSEP)
			printf "| %s | %s | %s", c[1], c[2], c[3]
			for (q = 1; q <= 8; q++) printf " | %s", lat[k, "relhash", q] == "" ? "-" : lat[k, "relhash", q]
			printf " | %s |\n", resize_calls[k, "relhash"]
		}

		if (nflavors) {
			print "\n## Grace periods (relhash-bench --epoch)\n"
			printf "synchronize and callbacks measured while %s threads enter and leave read-side sections in a tight loop.\n\n", ep[flavors[1], "readers"]
			printf "| |"; for (i = 1; i <= nflavors; i++) printf " %s |", flavors[i]; print ""
			printf "|---|"; for (i = 1; i <= nflavors; i++) printf "---:|"; print ""
			erow("read_lock + read_unlock, inline, ns", "lock_unlock_inline_ns")
			erow("read_lock + read_unlock, call, ns", "lock_unlock_call_ns")
			erow("synchronize p50, us", "sync_p50_us")
			erow("synchronize p99, us", "sync_p99_us")
			erow("synchronize max, us", "sync_max_us")
			erow("callbacks + barrier, per s", "callbacks_per_s")
			erow("every callback ran before the barrier returned", "callbacks_ok")
		}
	}
	' "$work/results.csv"

	cat <<EOF

## Where an update's time goes (callgrind)

Instructions per operation, counted by callgrind (not timed, so they do not
depend on the machine's load) in relhash-bench built with
\`CPPFLAGS=-DBENCH_NO_TSC\` (valgrind has no \`rdtscp\`):
\`relhash-bench --backends=relhash --update-pct=100 --resize=none --threads=1
--keys=4096 --seconds=3 --rounds=1\`, and the same with \`--backends=rwlock\`;
each figure is a function's inclusive count divided by its calls. Debian 12,
GCC 12 -O2, glibc 2.36. Counted on 2026-12-05 by hand, not by
\`make bench-report\`.

| part | relhash | rwlock table |
|---|---:|---:|
| insert: \`malloc\` of the 32-byte object | 94 | 51 |
| insert: the table's insert (relhash: family lock about 15, hash 24, counter 25, view 12, placing the node in split order 14, the rest 109) | 199 | 142 (locks 81) |
| insert: benchmark glue | 29 | 0 |
| remove: lookup of the object under the read lock | 57 | - |
| remove: the table's remove (relhash: \`redirect\` 119, of which the family lock about 11; counter 25) | 169 | 134 (locks 81) |
| remove: \`relhash_defer\` (opening the window 9, the append, count and close with \`after_queue\` and the announcement every 60 calls 57, \`pthread_once\` 5, thread state 5, block allocation 2) | 78 | - |
| remove: \`free\` | on the callback thread | 103 |
| **insert + remove, on the updating thread** | **626** | **430** |
| callback thread, per callback: \`free\` 126, the rest 18 | 144 | - |
| callback thread, per grace period (three \`membarrier\` calls not counted: kernel) | 3,400 | - |

- Before batching and the 60-call blocks the pair cost 999-1,010 on the
  updating thread: \`relhash_defer\` 209 and \`malloc\` 202. At 64 calls a
  \`relhash_defer\` block took 1,048 bytes, which glibc treats as a large
  request: every block allocation consolidated the fast bins that the
  callback thread's frees fill, about 5,000 instructions each. Blocks of 60
  (984 bytes) are small requests.
- Frees on another thread still cost the updater: its \`malloc\` takes 91
  instructions against 51 when the same thread frees (the rwlock table),
  because the freed chunks go to the callback thread's cache and then to the
  arena, never back to the updater's own cache, so every allocation takes
  the arena's path. The callback thread's \`free\` costs 126 against 103.
  Under callgrind the threads run one at a time, so cache-line transfers
  between the two threads' allocator paths are not in these counts.
- At the batching's 7,000-7,500 callbacks per grace period (rw 90/10,
  4,096 keys, 1 thread), the grace period's own instructions are under one
  per callback; its cost to the readers is the two \`membarrier\`
  interruptions, 150-170 times a second instead of 5,000-11,000.
- Queueing a deferred call took 131 while it held the thread's batch
  mutex (57 of them the mutex's lock and unlock); it now appends with plain
  stores in a window that the collector's \`membarrier\` makes safe
  (doc/DESIGN.md, "Queueing without a lock"): 80, and the pair 809 before
  it; 86 once the window's close checked for a sleeping collector; 80
  since a full batch stays in its thread, announced, instead of being
  handed to the queue under two mutexes every 60 calls (doc/DESIGN.md,
  "Announcing full batches"; 88 against 80 in one callgrind run of each
  build). The price is the third \`membarrier\` of a cycle, the
  collection's, once per cycle that finds work.
- The family lock was a \`pthread_mutex_t\` until 2026-12-05: 63
  instructions a lock and unlock, and the pair cost 772 (insert 275,
  \`redirect\` 194). It is now a futex word taken with one
  compare-and-swap (doc/DESIGN.md, "Families and locks").
- What is left between relhash and the rwlock table on the updating thread
  is the table's own insert and remove (368 against 276) and queueing the
  deferred free (78).
- Deferring the frees also costs cache: with 22,000 callbacks per grace
  period, the objects waiting for one (about 1 MB) no longer fit in the
  caches, so every \`malloc\` hands out a cold chunk and every callback
  touches one. In one run pinned to one CPU (\`taskset -c 1\`, 4,096 keys,
  rw 90/10), freeing at once instead (unsafe with concurrent readers; a
  measurement only) gave 51 Mops/s against 42 with deferred frees, the
  rwlock table 41.5; a callback limit of 8,192 instead of 32,768 gave 48.8
  against 42 (unpinned: 48 against 44-46, with 387 grace periods a second
  instead of 94; 16,384: 46-48 at 189 a second). Unpinned, the default
  limit also runs in two modes, 29 or 44 Mops/s, fixed for a process's
  life; pinned it runs at 41-44: the slow mode is likely the callback
  thread on the other CPU, pulling every object's line across (2026-12-05,
  by hand).
- The ceiling of the one-thread rw cells: \`unsync\` runs them too (its
  lookups take no lock; its updates take the uncontended lock and free at
  once), and no table can go above it. In four processes side by side
  (4,096 keys, 1 thread, 2026-12-05, by hand) it was 1.37-1.40x the rwlock
  table, relhash 1.15-1.16x; at 1,048,576 keys the report's run gives the
  floor 1.47x. Freeing on the updating thread instead of the callback
  thread (the benchmark keeping its own ring of removed objects, freed
  once \`relhash_gp_poll_state()\` said their grace period had passed)
  gave 43-45 Mops/s with 1,024 objects per cookie and 48-49 with 256 (at
  194 grace periods a second), against 44-48 with \`relhash_defer()\`:
  what helps is fewer objects waiting, not which thread frees them.

## Left out

- \`wide\` with 1,048,576 keys. At 4 buckets the chains hold 262,144 nodes,
  so lookups in every backend crawl and the comparison says nothing. relhash
  expands by unzipping, one grace period between passes. Chains left by a
  shrink are in split order and need one pass per doubling (doc/DESIGN.md section
  7); chains filled at random need as many passes as the longest one has
  runs: doubling 1,048,576 keys inserted into 4 buckets takes about 121,000
  grace periods and 0.34 s without readers (the whole way to 2,097,152
  buckets: 4.3 s).

## Why these constants

Hand-written, not by \`make bench-report\`: the measurements behind the
constants and choices that doc/DESIGN.md argues for. The figures were
taken by hand on the 2-CPU machine above (GCC 12, x86-64), mostly with
other work running; instruction counts are callgrind's. doc/DESIGN.md
gives the reasoning; this section only the numbers.

### Read side and lookups (doc/DESIGN.md, "The reader's word")

- One word per reader (epoch, \`SLOW\` flag, 15-bit depth) makes the read
  side 13 instructions per lookup of relhash-bench's loop, against 21 with
  separate epoch, depth and mode fields. 15 bits give the documented
  nesting limit of 32,767.
- Instructions per lookup of the whole read-only loop (callgrind,
  \`--toggle-collect=rh_worker_fast\`): the unsynchronized chained table 73;
  relhash 91.7 (102.5 with separate fields and the seed read from the
  table; the hash went from 20 to 16 with a constant seed).
- The section itself is 5 loads (the TLS offset, the reader's word twice,
  the global word, the wake flag), 2 stores and 3 predicted branches. At
  4,096 keys without the section (unsafe, an experiment) relhash ran at
  0.975x the chained table, with it 0.93-0.95x. Reading the global word
  instead of the wake flag measured the same; dropping the wake check
  (the waiter would poll) gained about 1 % at 4,096 keys and nothing at
  65,536.
- Object size decides the middle sizes: at 65,536 keys, 48-byte objects
  (a \`relhash_head\` inside) ran at 0.6-0.8x the chained table's 32-byte
  ones, and 0.97x against chained objects padded to 48 bytes. Hence
  \`relhash_defer\`, which needs no field in the object.
- Code layout: \`RELHASH_LIKELY\` on the key match after a hash match keeps
  the found path falling through; without it, removing one instruction
  from the unlock made lookups 5 % slower.
- The move from \`__atomic\` builtins on plain fields to \`_Atomic\` left the
  lookup loop at 86.9 instructions and a removal at 243.3; 17 of 167
  library functions, none on a read path, grew by 32 instructions in all.

### Grace periods (doc/DESIGN.md section 3)

- Sharing: eight callers blocked on one reader use at most two grace
  periods; callers that merely loop on 2 CPUs measured 0.91-1.00 grace
  periods per call.
- The waiter spins \`GP_SPIN_ROUNDS\` rounds, then sleeps at most 100 ms at
  a time before re-checking; the stall warning comes after 10 s.
- More threads than CPUs (\`relhash-bench --epoch --threads=8
  [--section-ns=2000]\`, 8 readers on 2 CPUs, loaded machine):

| readers' sections | relhash synchronize p50 / p99 | liburcu-memb p50 / p99 |
|---|---:|---:|
| empty | 2.4-2.7 us / 0.045-8.1 ms | 63-84 ms / 112-301 ms |
| 2 us of work each | 38-59 ms / 54-110 ms | 36-57 ms / 57-348 ms |

  Callback throughput in the same runs (a million, then a barrier):
  0.10-0.11 M/s against liburcu's 0.80-0.98 M/s, because relhash bounds the
  pending callbacks and every hand-off waits for a CPU behind eight busy
  readers. With as many readers as CPUs the gap is about 1.6x.

### Deferred callbacks (doc/DESIGN.md section 4)

- Blocks of 60 (function, pointer) pairs: 984 bytes. 64 pairs made 1,048
  bytes, a large request for glibc, and every block allocation then
  consolidated the fast bins, about 5,000 instructions each.
- \`BATCH_DELAY_MS\` = 10 ms, as liburcu's call_rcu worker sleeps between
  batches. Without batching the 90/10 benchmark ran about 8.5 callbacks
  per grace period, tens of thousands of grace periods a second.
- The early start at three quarters of the limit: at half the limit the
  90/10 benchmark ran 220-270 grace periods a second at 5,100 callbacks
  each.
- The default limit of 32,768: with 10,000 the 90/10 benchmark at 4,096
  keys and 2 threads (about 3.5 million deferred frees a second) reached the
  mark every 3 ms and ran 290-320 grace periods a second at 43-48 Mops/s;
  with 32,768, 120-125 at 24,600 callbacks each and 59-61 Mops/s (two runs
  of 5 s each). A smaller limit keeps the waiting objects in cache (see
  "Where an update's time goes" above).
- Callbacks run in slices of 64, publishing progress after each.
- Queueing without a lock: a \`relhash_defer\` cost 131 instructions under
  the batch mutex (57 of them the mutex), 80 with the window, 86 with the
  close's check for a sleeping collector (6 a call), 78-80 since full
  batches stay in their thread, announced (8 a call fewer than moving them
  under two mutexes). A collector spins 200 rounds before it sleeps on an
  open window.
- Past three quarters of the limit, 29 % of announcements take the queue's
  mutex, with two threads queueing as fast as they can.
- \`announcements_end_the_delay\` (tests/test-batching.c): 120 callbacks
  under a limit of 150 run in a median of 0.2 ms; with
  \`RH_BUG_NO_EARLY_WAKE\`, 8.1 ms.

### Update locks (doc/DESIGN.md, "Families and locks")

- A pair of \`pthread_mutex_lock\` and \`_unlock\` costs 63 instructions on
  this path; the futex word 11 to 15. With \`rh_lock_family()\` inline an
  insertion costs 199 instructions instead of 275, a removal's \`redirect\`
  119 instead of 193.
- A taker spins 64 rounds of the spin-wait hint before it sleeps.

### Resizing (doc/DESIGN.md sections 7, 8 and 10)

- Split order. A shrink from 65,536 buckets to 4 holding 4,096 keys, with
  chains spliced in index order, took 1,156 unzip passes to expand back; in
  split order, 14 (one per doubling). Filling 4 buckets with 4,096 keys at
  the heads and expanding to 65,536 took 1,181 passes; in split order at
  most one per doubling. Placing a node in split order costs an insertion
  14 instructions.
- A fill of 200,000 keys by 8 threads into 8 buckets (2 CPUs, 5 fills
  each): insertions at the heads 0.020-0.052 s a fill (median 0.036) and 69
  grace periods; in split order 0.019-0.056 s (median 0.029) and about 41.
- The \`wide\` workload's expansions need about 15 grace periods instead of
  about 1,200 in split order.
- No grace period after the last patch: a round of \`relhash-bench
  --resize=grow --keys=200000 --threads=8\` (16 doublings) waits about 30
  grace periods, against about 41 with it.
- Cursors: without them, doubling a 4-bucket table of 65,536 keys took
  5 s. With them, 1,048,576 keys went from 4 buckets to 2,097,152 in 4.3 s
  (0.3 s for the last doubling), without readers.
- Retiring the cursors with a polled cookie instead of a grace period at
  the end of each expansion: 75 grace periods a fill instead of 86.
- Prefetching eight families ahead: one doubling of a 1,048,576-entry
  table went from 0.48-0.60 s to 0.20-0.28 s.
- Debug builds check at most about 1,024 families per resize loop: checking
  all of them made the resize thread fall behind \`tests/test-growth\`'s
  burst.

### Automatic resizing (doc/DESIGN.md section 10)

- Sampling every size / 128 updates, clamped to [1, 64], per counter slot:
  a large table drifts under 1 % of its load past a threshold. An insertion
  into a chain already four long also samples.
- 75 % and 30 %: doubling from above 75 % leaves more than 37.5 %, halving
  from below 30 % less than 60 %, so each move lands in the band.
- Without back-pressure, 8 threads filling 200,000 keys on 2 CPUs from 8
  buckets took 9-25 s, the table stuck at 64 buckets with chains of
  thousands of nodes.
- The hard limit of 100 % (\`relhash-bench --resize=grow\`, 8 threads,
  1,048,576 keys, 2 CPUs, two runs each; fill time, then the time until
  the load was under 75 %): 200 %: 0.56-0.59 s, 1.3-1.5 s; 150 %:
  0.56-0.58 s, 0.63-0.72 s; 100 %: 0.50-0.54 s, 0.58-0.76 s; 75 %:
  0.60-0.62 s, at once. At 200,000 keys all four filled in 0.09-0.12 s.
- The 100 ms bound per stall of the resize thread, not per call: with a
  bound per call, an inserter that holds a lock a reader waits for made 10
  insertions a second.
- Helping in chunks of 64 families, at most 64 chunks per call.

### Hashing (doc/DESIGN.md, "The default hash")

\`relhash-bench --hash-cost --rounds=9\` (ns of thread CPU time per hash,
median of three runs; "independent" hashes distinct keys back to back,
"chained" makes each key depend on the last hash) and callgrind
(instructions per call):

| key bytes | default inline: indep. / chained ns | \`relhash_siphash()\`: indep. / chained ns | instructions: \`relhash_hash()\` / \`relhash_siphash()\` |
|---:|---:|---:|---:|
| 8 | 1.3 / 3.7 | 9.2 / 8.9 | 18 / 121 |
| 16 | 1.4 / 3.9 | 11.6 / 11.4 | 18 / 143 |
| 64 | 3.6 / 9.6 | 21.9 / 21.4 | 49 / 275 |

Of SipHash's 121 instructions for 8 bytes, the five SipRounds are 70 and
the seed's mixing into k1 about a dozen. The flood warning fires at 16
distinct keys sharing one 64-bit hash, which chance never gives.

### Bulk lookups and polled grace periods (doc/DESIGN.md, "Hashed and bulk lookups")

- Groups of 16 keys; prefetches only from 2^15 bucket heads (256 KiB) up.
  One thread, 4,096 keys, 2^22 lookups, best of 7: key by key 14.3 ns
  against 11.1 ns for single lookups; three passes with prefetches
  11.6-16.1 ns; the two passes 14.5-15.1 ns against 13.3-16.4 ns.
- \`relhash-bench --bulk=16\`, 2 threads, read-only, 90 % hits, busy machine:

| keys | relhash-bulk | relhash | unsync | bulk / relhash | bulk / unsync |
| --- | --- | --- | --- | --- | --- |
| 1,048,576 | 7.26 Mops/s | 3.13 | 3.51 | 2.4x | 2.1x |
| 1,048,576 | 7.99 | 3.38 | 3.83 | 2.5x | 2.2x |
| 4,096 | 34.45 | 36.21 | 37.93 | 0.93x (CPU time: 0.98x) | 0.90x |
| 4,096 | 49.36 | 53.69 | 51.87 | 0.95x (CPU time: 0.98x) | 0.85x |

- \`relhash_gp_poll_state\` costs 2.1-2.2 ns a call (tests/test-gp-poll,
  release build).

$(cat "$work/hash.md")
$(cat "$work/bulk.md")
$(cat "$work/reclaim.md")
$(cat "$work/baseline.md")
$(cat "$work/relcached.md")

## Commands

Each run alternates the backends (relhash, relhash-call, the liburcu flavors
when built with liburcu, rwlock, unsync) round by round. \`unsync\` has no
synchronization for its lookups: it runs without resizes, and with updates
only with one thread (they take its uncontended lock and free at once).

\`\`\`
$(cat "$work/commands")
\`\`\`
EOF
} > "$doc"

if [ "$have_gnuplot" -eq 1 ]; then
	echo "wrote $doc and $plots/*.svg" >&2
else
	echo "wrote $doc" >&2
fi
if [ "$failed" -ne 0 ]; then
	echo "$0: some runs FAILED their verification: see $doc" >&2
	exit 1
fi
