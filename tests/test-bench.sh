#!/usr/bin/env bash
# tests/test-bench.sh - relhash-bench runs every backend it was built with
# (relhash's, the chained tables and each peer configure found) briefly on
# small tables, in the workloads that tell them apart: read-only, updates,
# resizing on request, automatic resizing and growth from 8 buckets (the
# objects allocated during the fill, and before it: --prealloc), and
# relhash-defer, which runs only when named, in the updates.  Each
# backend must pass its verification, or say why it cannot run the
# workload.  Nothing is timed.
#
# Under ThreadSanitizer only the fully instrumented backends run (relhash's
# and the chained tables): the peers' libraries are not built with it, so
# it would report their synchronization as races.
#
# Run by "make check", which exports top_builddir, top_srcdir and
# RELHASH_CFLAGS.

set -u

me=test-bench
bench=${top_builddir:-.}/tools/relhash-bench
limit=${RELHASH_BENCH_TIMEOUT:-300}

if [ ! -x "$bench" ]; then
	echo "$me: FAIL: no $bench (run make first)"
	exit 1
fi
only=
case " ${RELHASH_CFLAGS:-} " in
*-fsanitize=thread*)
	only=--backends=relhash,relhash-call,relhash-bulk,rwlock,unsync
	echo "$me: ThreadSanitizer: relhash and the chained tables only"
	;;
*-fsanitize=*undefined*)
	# What clang reports inside the peers' own headers
	# (tests/ubsan-peers.supp says what and why).
	UBSAN_OPTIONS="${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}suppressions=${top_srcdir:-.}/tests/ubsan-peers.supp"
	export UBSAN_OPTIONS
	;;
esac

out=$(mktemp)
trap 'rm -f "$out"' EXIT
status=0

# run WORKLOAD OPTION...: one run of every backend; checks the report.
run() {
	local what=$1 rc names name
	shift
	timeout "$limit" "$bench" --keys=1024 --threads=2 --seconds=0.2 \
		--rounds=1 --bulk=8 $only "$@" > "$out" 2>&1
	rc=$?
	if [ "$rc" -ne 0 ]; then
		echo "$me: FAIL: $what: relhash-bench $* exited with $rc"
		cat "$out"
		status=1
		return
	fi
	# Every backend of the legend passed or said why it was skipped.
	names=$(awk '/^backends$/ { on = 1; next } on && NF { print $1 }' "$out")
	if [ -z "$names" ]; then
		echo "$me: FAIL: $what: no backends in the report"
		cat "$out"
		status=1
		return
	fi
	for name in $names; do
		if grep -q "^$name  *passed: " "$out"; then
			echo "$me: ok: $what: $name passed"
		elif grep -q "^$name  *skipped: " "$out"; then
			echo "$me: ok: $what: $name $(grep "^$name  *skipped: " "$out" |
				sed 's/^[^ ]*  *//')"
		else
			echo "$me: FAIL: $what: $name neither passed nor was skipped"
			cat "$out"
			status=1
		fi
	done
}

run read-only --update-pct=0 --resize=none
run updates --update-pct=20 --resize=none
run "updates, one thread" --update-pct=20 --resize=none --threads=1
# relhash-defer runs only when named: frees on the callback thread.
run "updates, relhash's two ways of freeing" --update-pct=20 --resize=none \
	--backends=relhash,relhash-defer
run toggle --update-pct=10 --resize=toggle
run auto --update-pct=20 --resize=auto
run grow --resize=grow
run "grow, objects allocated beforehand" --resize=grow --prealloc
exit $status
