#!/usr/bin/env bash
# tests/negative-controls.sh - show that the resize torture can fail.
#
# For each deliberate bug in src/debug.h (RELHASH_TEST_BUG), build the
# library and the torture with the bug compiled in (a debug build, with
# race widening on), run the torture, and REQUIRE that it fails.  A torture
# that passes with a bug compiled in has gone blind: this script then fails.
#
# Usage: tests/negative-controls.sh [BUILD_ROOT]   (default: a temp dir)
# Environment: NEGATIVE_CONTROL_SECONDS (torture time per tcase, default 3).
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
root=${1:-$(mktemp -d)}
seconds=${NEGATIVE_CONTROL_SECONDS:-3}
mkdir -p "$root"

# name:value, as in src/debug.h
bugs="UNZIP_TWICE:1 FIRST_PRED:2 NO_GRACE:3"
caught=0
total=0

for bug in $bugs; do
	name=${bug%%:*}
	value=${bug##*:}
	dir=$root/bug-$name
	total=$((total + 1))
	rm -rf "$dir"
	mkdir -p "$dir"
	echo "== RELHASH_TEST_BUG=$value ($name)"
	(cd "$dir" &&
		"$src/configure" -q --enable-debug \
			CPPFLAGS="-DRELHASH_TEST_BUG=$value" >/dev/null &&
		make -s -j"${JOBS:-2}" librelhash.la tests/test-resize-torture \
			>/dev/null)
	start=$SECONDS
	if (cd "$dir" && RELHASH_DEBUG_YIELD=1 \
		RELHASH_TORTURE_MS="$((seconds * 1000))" CK_VERBOSITY=normal \
		timeout 600 ./tests/test-resize-torture >torture.log 2>&1); then
		echo "NOT CAUGHT: the resize torture passed with bug $name compiled in"
		tail -n 20 "$dir/torture.log"
	else
		caught=$((caught + 1))
		echo "caught in $((SECONDS - start)) s:"
		grep -E ':F:|:E:' "$dir/torture.log" | head -n 3 | cut -c1-300
	fi
done

echo "negative controls: $caught of $total deliberate bugs caught"
[ "$caught" = "$total" ]
