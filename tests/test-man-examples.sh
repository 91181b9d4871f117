#!/usr/bin/env bash
# tests/test-man-examples.sh - the EXAMPLES program of every section 3 man
# page compiles without warnings, links against the built library and runs
# successfully.
#
# Run by "make check", which exports top_srcdir, top_builddir, the page
# list RELHASH_MAN_PAGES (paths relative to the source tree) and the
# compiler settings RELHASH_CC, RELHASH_CFLAGS, RELHASH_LDFLAGS and
# RELHASH_LIBS.  Pages that are only ".so" links have no example.
#
# A page's example is the first ".Bd -literal" display after ".Sh EXAMPLES",
# with the roff escapes it may use (\e for a backslash, \& before a leading
# dot) undone.

set -u

me=test-man-examples
srcdir=${top_srcdir:-.}
builddir=${top_builddir:-.}
limit=${RELHASH_EXAMPLE_TIMEOUT:-60}

if [ -z "${RELHASH_MAN_PAGES:-}" ] || [ -z "${RELHASH_CC:-}" ]; then
	echo "$me: FAIL: run me through make check (RELHASH_MAN_PAGES, RELHASH_CC unset)"
	exit 1
fi

# Warnings are errors, except in sanitizer builds: there GCC 12 reports
# false -Warray-bounds positives in the inline lookup (the 8-byte key
# comparison of a 4-byte key, a branch that is dead without the sanitizer).
werror=-Werror
case " ${RELHASH_CFLAGS:-} " in *" -fsanitize="*) werror= ;; esac

tmp=$(mktemp -d "${TMPDIR:-/tmp}/relhash-man-examples.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

extract_example() {
	awk '/^\.Sh / { in_ex = ($0 == ".Sh EXAMPLES") }
	     in_ex && !lit && /^\.Bd -literal/ { lit = 1; next }
	     lit && /^\.Ed/ { exit }
	     lit { print }' "$1" |
		sed -e 's/\\&//g' -e 's/\\e/\\/g'
}

status=0
ncompiled=0
for page in $RELHASH_MAN_PAGES; do
	case $page in *.3) ;; *) continue ;; esac
	file=$srcdir/$page
	head -n 1 "$file" | grep -q '^\.so ' && continue
	name=$(basename "$page" .3)
	src=$tmp/$name.c
	extract_example "$file" >"$src"
	if [ ! -s "$src" ]; then
		echo "$me: FAIL: $page has no EXAMPLES display"
		status=1
		continue
	fi
	# shellcheck disable=SC2086 # the flag variables are word lists
	if ! out=$("$builddir/libtool" --mode=link --tag=CC $RELHASH_CC \
		-I"$srcdir/include" -I"$builddir/include" ${RELHASH_CFLAGS:-} $werror \
		${RELHASH_LDFLAGS:-} -o "$tmp/$name" "$src" "$builddir/librelhash.la" \
		${RELHASH_LIBS:-} 2>&1); then
		echo "$me: FAIL: the example of $page does not compile:"
		printf '%s\n' "$out" | sed 's/^/    /'
		status=1
		continue
	fi
	ncompiled=$((ncompiled + 1))
	if ! out=$(timeout "$limit" "$tmp/$name" 2>&1); then
		echo "$me: FAIL: the example of $page failed (or ran over ${limit}s):"
		printf '%s\n' "$out" | sed 's/^/    /'
		status=1
		continue
	fi
	echo "$me: ok: $page: $out"
done
echo "$me: $ncompiled examples compiled"
exit $status
