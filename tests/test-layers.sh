#!/usr/bin/env bash
# tests/test-layers.sh - the grace-period engine does not know the tables
# exist (doc/DESIGN.md section 1, "Layers").
#
# The engine is src/epoch.c, src/callbacks.c and src/fork.c.  Two checks:
#  1. no engine object file refers to a symbol that the table layer's
#     objects (table, resize, autoresize) define;
#  2. no engine source file includes a header of the table layer.
# Calls from the layers above into the engine go through src/engine.h; the
# engine calls them back only through hooks they register there.
#
# Run by "make check" from the build directory (the Makefile exports
# $top_builddir and $top_srcdir).  Exit 77 (skip) without nm or without
# the library's object files.

set -u

me=test-layers
builddir=${top_builddir:-.}
srcdir=${top_srcdir:-${srcdir:-.}}
NM=${NM:-nm}
engine="epoch callbacks fork"
tables="table resize autoresize"

if ! command -v "$NM" >/dev/null 2>&1; then
	echo "$me: SKIP: nm not found"
	exit 77
fi

# The object file of src/NAME.c: libtool's PIC object, else the plain one.
object() {
	local o
	for o in "$builddir"/src/*/.libs/librelhash_la-"$1".o \
		"$builddir"/src/*/librelhash_la-"$1".o; do
		if [ -f "$o" ]; then
			echo "$o"
			return 0
		fi
	done
	return 1
}

status=0
defined=
for f in $tables; do
	if ! o=$(object "$f"); then
		echo "$me: SKIP: no object file for src/$f.c under $builddir/src"
		exit 77
	fi
	defined+=$("$NM" --defined-only "$o" | awk '$2 ~ /^[TDBRC]$/ { print $3 }')
	defined+=$'\n'
done

for f in $engine; do
	if ! o=$(object "$f"); then
		echo "$me: SKIP: no object file for src/$f.c under $builddir/src"
		exit 77
	fi
	bad=$("$NM" --undefined-only "$o" | awk '{ print $NF }' |
		grep -Fxf <(printf '%s' "$defined" | grep -v '^$') || true)
	if [ -n "$bad" ]; then
		echo "$me: FAIL: src/$f.c uses symbols of the table layer:"
		printf '%s\n' "$bad" | sed 's/^/  /'
		status=1
	fi
done

for f in engine/epoch.c engine/callbacks.c engine/fork.c \
	engine/epoch_internal.h engine/engine.h; do
	bad=$(grep -nE '#[[:space:]]*include[[:space:]]*["<](table_internal\.h|relhash/table\.h|relhash\.h)[">]' \
		"$srcdir/src/$f" || true)
	if [ -n "$bad" ]; then
		echo "$me: FAIL: src/$f includes a header of the table layer:"
		printf '%s\n' "$bad" | sed 's/^/  /'
		status=1
	fi
done

if [ $status -eq 0 ]; then
	echo "$me: PASS: src/{epoch,callbacks,fork}.c name nothing of src/{table,resize,autoresize}.c"
fi
exit $status
