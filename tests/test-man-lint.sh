#!/usr/bin/env bash
# tests/test-man-lint.sh - every man page passes "mandoc -Tlint" with no
# warning or error (style notes are allowed).
#
# Run by "make check", which exports top_srcdir, MANDOC (found by
# configure) and the page list RELHASH_MAN_PAGES (paths relative to the
# source tree).  Exit 77 (skip) without mandoc.

set -u

me=test-man-lint
srcdir=${top_srcdir:-.}

if [ -z "${MANDOC:-}" ]; then
	echo "$me: SKIP: mandoc not found by configure (Debian: apt-get install mandoc)"
	exit 77
fi
if [ -z "${RELHASH_MAN_PAGES:-}" ]; then
	echo "$me: FAIL: run me through make check (RELHASH_MAN_PAGES unset)"
	exit 1
fi

status=0
n=0
for page in $RELHASH_MAN_PAGES; do
	n=$((n + 1))
	# -W warning: exit status 2 or more on any warning or error.
	if ! out=$(cd "$srcdir" && "$MANDOC" -Tlint -W warning "$page" 2>&1); then
		echo "$me: FAIL: $page:"
		printf '%s\n' "$out" | sed 's/^/    /'
		status=1
	fi
done
echo "$me: $n pages linted"
exit $status
