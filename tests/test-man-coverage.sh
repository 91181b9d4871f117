#!/usr/bin/env bash
# tests/test-man-coverage.sh - nothing public goes undocumented, and no
# page documents something that does not exist.
#
#  1. Every function the built library exports (nm -D; the relhash__ names
#     exist only for the inline code) and every public macro is a name in
#     the NAME section of an installed section 3 page.
#  2. Every such name exists: exported, a public macro, or a function
#     declared in the public headers (the static inline ones).
#  3. Each page's file name is one of its names (make install links the
#     others to it), and no name is documented twice.
#  4. Every .Xr reference to a relhash page names a documented page.
#
# Public macros: the #defines of the public headers other than include
# guards, relhash__/RELHASH__ names, and relhash/common.h, whose export and
# linkage helpers are not part of the API.
#
# Run by "make check", which exports top_srcdir, top_builddir and the page
# list RELHASH_MAN_PAGES (paths relative to the source tree).  Exit 77 (skip) without a shared library or nm.

set -u
export LC_ALL=C # one collation for sort and comm

me=test-man-coverage
srcdir=${top_srcdir:-.}
builddir=${top_builddir:-.}
NM=${NM:-nm}

if [ -z "${RELHASH_MAN_PAGES:-}" ]; then
	echo "$me: FAIL: run me through make check (RELHASH_MAN_PAGES unset)"
	exit 1
fi
lib=$builddir/.libs/librelhash.so
if [ ! -f "$lib" ]; then
	echo "$me: SKIP: no shared library $lib"
	exit 77
fi
if ! command -v "$NM" >/dev/null 2>&1; then
	echo "$me: SKIP: nm not found"
	exit 77
fi

status=0
fail() {
	echo "$me: FAIL: $*"
	status=1
}

headers="$srcdir/include/relhash.h $srcdir/include/relhash/types.h
$srcdir/include/relhash/epoch.h $srcdir/include/relhash/table.h
$srcdir/include/relhash/inline.h $builddir/include/relhash/config.h"

exported=$("$NM" -D --defined-only "$lib" | awk 'NF >= 3 { print $3 }' |
	sed 's/@.*//' | grep '^relhash_' | grep -v '^relhash__' | sort -u)
# shellcheck disable=SC2086 # a list of files
macros=$(sed -n 's/^#define[[:space:]]\{1,\}\([A-Za-z0-9_]*\).*/\1/p' $headers |
	grep -v -e '^relhash__' -e '^RELHASH__' -e '_H$' | sort -u)
# shellcheck disable=SC2086
declared=$(grep -ho '[A-Za-z0-9_]*relhash_[A-Za-z0-9_]*(' $headers |
	sed 's/($//' | sort -u)
existing=$(printf '%s\n' "$exported" "$macros" "$declared" | sed '/^$/d' | sort -u)

names_of() {
	(cd "$srcdir" && sh man/page-names.sh "$@")
}

# Lines of sorted list $1 that are not in sorted list $2.
missing_from() {
	comm -23 <(printf '%s\n' "$1" | sed '/^$/d') <(printf '%s\n' "$2" | sed '/^$/d')
}

section3=
for page in $RELHASH_MAN_PAGES; do
	case $page in *.3) section3="$section3 $page" ;; esac
done
# shellcheck disable=SC2086
documented=$(names_of $section3 | sort)
dups=$(printf '%s\n' "$documented" | uniq -d)
[ -z "$dups" ] || fail "documented by more than one page: $dups"
documented=$(printf '%s\n' "$documented" | uniq)

# 1. Everything public has a page.
for name in $(missing_from "$exported" "$documented"); do
	fail "$name is exported by $lib but no man page documents it"
done
for name in $(missing_from "$macros" "$documented"); do
	fail "public macro $name has no man page"
done

# 2. and 3. Every page's names exist; the file is named after one of them.
for page in $section3; do
	names=$(names_of "$page" | sort)
	printf '%s\n' "$names" | grep -qx "$(basename "$page" .3)" ||
		fail "$page: its file name is not in its NAME section"
	for name in $(missing_from "$names" "$existing"); do
		fail "$page documents $name, which the headers and library do not have"
	done
done

# 4. Cross-references between relhash pages resolve.
check_refs() {
	local page=$1 allowed refs ref
	allowed=$(printf '%s\n' $2 | sort -u)
	refs=$(cd "$srcdir" && sed -n 's/^\.Xr \([A-Za-z0-9_]*\) 3.*/\1/p' "$page" |
		grep -i '^relhash' | sort -u)
	for ref in $(missing_from "$refs" "$allowed"); do
		fail "$page refers to $ref(3), which has no page"
	done
}
for page in $RELHASH_MAN_PAGES; do
	check_refs "$page" "$documented"
done

nexp=$(printf '%s\n' "$exported" | grep -c .)
nmac=$(printf '%s\n' "$macros" | grep -c .)
ndoc=$(printf '%s\n' "$documented" | grep -c .)
echo "$me: $nexp exported functions and $nmac public macros; $ndoc names documented"
exit $status
