#!/usr/bin/env bash
# tests/negative-controls.sh - show that the tests can fail.
#
# For each deliberate bug in src/debug.h (RELHASH_TEST_BUG), build the
# library and the test that must catch it with the bug compiled in (a debug
# build), run that test, and REQUIRE that it fails.  A test that passes with
# a bug compiled in has gone blind: this script then fails.  The resize
# torture runs with race widening on (RELHASH_DEBUG_YIELD=1).
#
# Usage: tests/negative-controls.sh [BUILD_ROOT]   (default: a temp dir)
# Environment: NEGATIVE_CONTROL_SECONDS (run time per tcase, default 3).
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
root=${1:-$(mktemp -d)}
seconds=${NEGATIVE_CONTROL_SECONDS:-3}
mkdir -p "$root"

# name:value:test, the value as in src/debug.h
bugs="UNZIP_TWICE:1:test-resize-torture FIRST_PRED:2:test-resize-torture
NO_GRACE:3:test-resize-torture LAZY_BARRIER:4:test-batching
NO_BATCHING:5:test-batching NO_BACKPRESSURE:6:test-growth
THROTTLE_IN_SECTION:7:test-growth NO_SIZE_HINT:8:test-growth
GET_SPLIT:9:test-insert-or-get POLL_EARLY:10:test-gp-poll
WRONG_LOCK:11:test-table STALE_CURSOR:12:test-resize-torture
COLLECT_NO_WAIT:13:test-callback-queue
APPEND_IGNORES_MARK:14:test-callback-queue
HELP_BEFORE_GRACE:15:test-resize-torture
HELP_CHUNK_OVERLAP:16:test-resize-torture
NO_NOTIFY:17:test-callback-queue NO_ANNOUNCE:18:test-stall
NO_EARLY_WAKE:19:test-batching SPLICE_IN_INDEX_ORDER:20:test-table
RETIRE_BY_CALLBACK:21:test-table INSERT_AT_HEAD:22:test-table
LOCK_TEST_THEN_SET:23:test-update-lock
LOCK_STORE_RELEASE:24:test-update-lock
PLACE_WHILE_LINKING:25:test-resize-torture
LAST_PATCH_EARLY:26:test-resize-torture
NO_MEMBARRIER_PROBE:27:test-no-membarrier"
caught=0
total=0

for bug in $bugs; do
	IFS=: read -r name value test <<<"$bug"
	dir=$root/bug-$name
	total=$((total + 1))
	rm -rf "$dir"
	mkdir -p "$dir"
	echo "== RELHASH_TEST_BUG=$value ($name), must fail: $test"
	(cd "$dir" &&
		"$src/configure" -q --enable-debug \
			CPPFLAGS="-DRELHASH_TEST_BUG=$value" >/dev/null &&
		make -s -j"${JOBS:-2}" librelhash.la "tests/$test" >/dev/null)
	# The growth tests fill large tables: race widening would only
	# slow them down.
	yield=1
	[ "$test" = test-growth ] && yield=0
	start=$SECONDS
	if (cd "$dir" && RELHASH_DEBUG_YIELD=$yield \
		RELHASH_TORTURE_MS="$((seconds * 1000))" \
		RELHASH_GET_MS="$((seconds * 1000))" CK_VERBOSITY=normal \
		timeout 600 "./tests/$test" >test.log 2>&1); then
		echo "NOT CAUGHT: $test passed with bug $name compiled in"
		tail -n 20 "$dir/test.log"
	else
		caught=$((caught + 1))
		echo "caught by $test in $((SECONDS - start)) s:"
		grep -E ':F:|:E:' "$dir/test.log" | head -n 3 | cut -c1-300
	fi
done

echo "negative controls: $caught of $total deliberate bugs caught"
[ "$caught" = "$total" ]
