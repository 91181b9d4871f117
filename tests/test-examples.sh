#!/usr/bin/env bash
# tests/test-examples.sh - every program in examples/ runs to success
# within a time limit (RELHASH_EXAMPLE_TIMEOUT seconds each, default 120).
#
# Run by "make check", which exports top_builddir and RELHASH_EXAMPLES, the
# examples built in this configuration (paths relative to the build tree).

set -u

me=test-examples
builddir=${top_builddir:-.}
limit=${RELHASH_EXAMPLE_TIMEOUT:-120}

if [ -z "${RELHASH_EXAMPLES:-}" ]; then
	echo "$me: FAIL: run me through make check (RELHASH_EXAMPLES unset)"
	exit 1
fi

status=0
for ex in $RELHASH_EXAMPLES; do
	start=$SECONDS
	timeout "$limit" "$builddir/$ex"
	rc=$?
	if [ "$rc" -eq 0 ]; then
		echo "$me: ok: $ex ($((SECONDS - start)) s)"
	elif [ "$rc" -eq 124 ]; then
		echo "$me: FAIL: $ex ran over ${limit} s"
		status=1
	else
		echo "$me: FAIL: $ex exited with status $rc"
		status=1
	fi
done
exit $status
