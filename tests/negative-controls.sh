#!/usr/bin/env bash
# tests/negative-controls.sh - show that the tests can fail.
#
# For each deliberate bug in src/base/debug.h, run the test that must catch
# it in a debug build with the bug switched on (RELHASH_TEST_BUG=N in the
# environment), and REQUIRE that it fails.  A test that passes with a bug
# on has gone blind: this script then fails.  The resize torture runs with
# race widening on (RELHASH_DEBUG_YIELD=1).
#
# Usage: tests/negative-controls.sh BUILD_DIR   (configured --enable-debug)
#        tests/negative-controls.sh --check
# Environment: NEGATIVE_CONTROL_SECONDS (run time per tcase, default 3),
# NEGATIVE_CONTROLS_ONLY (names to run, e.g. "NO_GRACE WRONG_LOCK").
#
# src/base/debug.h is the source of truth for the bugs and their numbers;
# this script says only which test catches each.  --check (run by make
# check, tests/test-negative-list.sh) verifies that the two lists name the
# same bugs, and builds nothing.
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
debug_h=$src/src/base/debug.h

# name:test or name:test/tcase, one for each RH_BUG_name of
# src/base/debug.h; a tcase (Check's CK_RUN_CASE) runs only the one that
# catches the bug, where the whole test takes long.
catchers="UNZIP_TWICE:test-resize-torture FIRST_PRED:test-resize-torture
NO_GRACE:test-resize-torture LAZY_BARRIER:test-batching
NO_BATCHING:test-batching NO_BACKPRESSURE:test-growth
THROTTLE_IN_SECTION:test-growth NO_SIZE_HINT:test-growth
GET_SPLIT:test-insert-or-get POLL_EARLY:test-gp-poll
WRONG_LOCK:test-table/api STALE_CURSOR:test-resize-torture
COLLECT_NO_WAIT:test-callback-queue APPEND_IGNORES_MARK:test-callback-queue
HELP_BEFORE_GRACE:test-resize-torture/helper_steps
HELP_CHUNK_OVERLAP:test-resize-torture/helper_steps
NO_NOTIFY:test-callback-queue NO_ANNOUNCE:test-stall
NO_EARLY_WAKE:test-batching SPLICE_IN_INDEX_ORDER:test-table/resize
RETIRE_BY_CALLBACK:test-table/auto-resize INSERT_AT_HEAD:test-table/resize
LOCK_TEST_THEN_SET:test-update-lock LOCK_STORE_RELEASE:test-update-lock
PLACE_WHILE_LINKING:test-resize-torture LAST_PATCH_EARLY:test-resize-torture
NEXT_BY_HASH:test-duplicates DUPLICATE_AT_HEAD:test-duplicates
NO_MEMBARRIER_PROBE:test-no-membarrier SHRINK_NO_WAIT:test-duplicates
REHASH_NO_GP1:test-rehash/torture REHASH_NO_RECHECK:test-rehash/torture
REHASH_NO_MARK:test-rehash/torture REHASH_NO_FORGET:test-rehash/torture
LOCAL_EARLY:test-defer-local LOCAL_NO_REQUEST:test-defer-local
LOCAL_UNBOUNDED:test-defer-local NO_HUGE_PAGES:test-table/api
MID_WALKED:test-rehash/torture LOCAL_SPARE_LEAKED:test-defer-local"

# The bugs of src/base/debug.h, as "name value" lines.
defined=$(sed -n 's/^#define RH_BUG_\([A-Z_0-9]*\) \([0-9][0-9]*\).*/\1 \2/p' \
	"$debug_h")

if [ "${1:-}" = --check ]; then
	listed=$(for c in $catchers; do echo "${c%%:*}"; done | sort)
	in_h=$(printf '%s\n' "$defined" | cut -d' ' -f1 | sort)
	status=0
	if [ -z "$in_h" ]; then
		echo "negative-controls: no RH_BUG_ defines in $debug_h"
		exit 1
	fi
	for n in $(comm -23 <(echo "$in_h") <(echo "$listed")); do
		echo "negative-controls: RH_BUG_$n (src/base/debug.h) has no test here"
		status=1
	done
	for n in $(comm -13 <(echo "$in_h") <(echo "$listed")); do
		echo "negative-controls: $n is listed here but not in src/base/debug.h"
		status=1
	done
	dups=$(echo "$listed" | uniq -d)
	if [ -n "$dups" ]; then
		echo "negative-controls: listed twice:" $dups
		status=1
	fi
	dups=$(printf '%s\n' "$defined" | cut -d' ' -f2 | sort | uniq -d)
	if [ -n "$dups" ]; then
		echo "negative-controls: numbers used twice in src/base/debug.h:" $dups
		status=1
	fi
	[ $status -eq 0 ] && echo "negative-controls: the $(echo "$in_h" | wc -l) bugs of src/base/debug.h each have a test"
	exit $status
fi

build=$(cd "${1:?usage: negative-controls.sh BUILD_DIR (an --enable-debug build)}" && pwd)
seconds=${NEGATIVE_CONTROL_SECONDS:-3}
if ! grep -q -- '-DRELHASH_DEBUG=1' "$build/Makefile"; then
	echo "negative-controls: $build is not an --enable-debug build" >&2
	exit 2
fi

# name:value:test
bugs=
for c in $catchers; do
	name=${c%%:*}
	if [ -n "${NEGATIVE_CONTROLS_ONLY:-}" ] &&
		[[ " $NEGATIVE_CONTROLS_ONLY " != *" $name "* ]]; then
		continue
	fi
	value=$(printf '%s\n' "$defined" | awk -v n="$name" '$1 == n { print $2 }')
	if [ -z "$value" ]; then
		echo "negative-controls: RH_BUG_$name is not in src/base/debug.h" >&2
		exit 2
	fi
	bugs+="$name:$value:${c#*:} "
done
caught=0
total=0

tests=$(for bug in $bugs; do t=${bug##*:}; echo "tests/${t%%/*}"; done | sort -u)
make -s -C "$build" -j"${JOBS:-2}" $tests >/dev/null

for bug in $bugs; do
	IFS=: read -r name value test <<<"$bug"
	tcase=
	if [[ $test == */* ]]; then
		tcase=${test#*/}
		test=${test%%/*}
	fi
	log=$build/negative-$name.log
	total=$((total + 1))
	echo "== RELHASH_TEST_BUG=$value ($name), must fail: $test${tcase:+ (tcase $tcase)}"
	# The growth tests fill large tables: race widening would only
	# slow them down.
	yield=1
	[ "$test" = test-growth ] && yield=0
	start=$SECONDS
	if (cd "$build" && RELHASH_TEST_BUG=$value RELHASH_DEBUG_YIELD=$yield \
		RELHASH_TORTURE_MS="$((seconds * 1000))" \
		RELHASH_GET_MS="$((seconds * 1000))" CK_VERBOSITY=normal \
		env ${tcase:+CK_RUN_CASE="$tcase"} \
		timeout 600 "./tests/$test" >"$log" 2>&1); then
		echo "NOT CAUGHT: $test passed with bug $name on"
		tail -n 20 "$log"
	else
		caught=$((caught + 1))
		echo "caught by $test in $((SECONDS - start)) s:"
		# Check's failure lines; a test without Check prints its own
		# (grep finding none must not end the script).
		{ grep -E ':F:|:E:|FAIL' "$log" || tail -n 3 "$log"; } |
			head -n 3 | cut -c1-300
	fi
done

echo "negative controls: $caught of $total deliberate bugs caught"
[ "$caught" = "$total" ]
