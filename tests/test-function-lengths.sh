#!/usr/bin/env bash
# tests/test-function-lengths.sh - no C function in the tree is longer than a
# reader can hold in mind: fail when one is over the limit (100 lines).
#
#   tests/test-function-lengths.sh [--max N] [--list] [DIR...]
#
# DIRs default to src tests tools relcached examples under $top_srcdir (or
# the current directory).  --max N sets the limit; --list prints every
# function with its length, longest first, and never fails.
#
# The scanner relies on the project's brace style (checked by the scan
# itself): a function's body opens with a "{" alone in column 0 and closes
# with a "}" alone in column 0.  A function's length counts from the line
# that names it to its closing brace.  Run by "make check".

set -u

me=test-function-lengths
max=100
list=0
while [ $# -gt 0 ]; do
	case $1 in
	--max) max=$2; shift 2 ;;
	--list) list=1; shift ;;
	-*) echo "usage: $me [--max N] [--list] [DIR...]" >&2; exit 2 ;;
	*) break ;;
	esac
done

srcdir=${top_srcdir:-.}
if [ $# -eq 0 ]; then
	set -- src tests tools relcached examples
fi

for dir in "$@"; do
	if [ ! -d "$srcdir/$dir" ]; then
		echo "$me: FAIL: no directory $srcdir/$dir"
		exit 1
	fi
done
files=$(cd "$srcdir" && find "$@" -type f \
	\( -name '*.c' -o -name '*.h' -o -name '*.cc' \) | sort)
if [ -z "$files" ]; then
	echo "$me: FAIL: no C sources under $srcdir ($*)"
	exit 1
fi

# One line per function: "LENGTH FILE:LINE NAME".  A column-0 line that
# ends in ") {" would be a function in a style the scan cannot see: report
# it as an error rather than miss the function.
report=$(cd "$srcdir" && awk '
	FNR == 1 { start = 0; name = "?"; name_line = 0 }
	/^[A-Za-z_].*\)[ \t]*\{[ \t]*$/ {
		print "STYLE " FILENAME ":" FNR; next
	}
	/^[A-Za-z_].*\(/ {
		# The identifier before the first "(" that is not an attribute.
		s = $0
		gsub(/__attribute__/, "", s)
		if (match(s, /[A-Za-z_][A-Za-z0-9_]*[ \t]*\(/)) {
			name = substr(s, RSTART, RLENGTH)
			sub(/[ \t]*\($/, "", name)
			name_line = FNR
			# A Check test: START_TEST(test_name).
			if (name == "START_TEST" &&
			    match(s, /\([ \t]*[A-Za-z_][A-Za-z0-9_]*/))
				name = substr(s, RSTART + 1, RLENGTH - 1)
		}
		next
	}
	/^\{[ \t]*$/ { start = name_line ? name_line : FNR; next }
	/^\}[ \t]*$/ && start {
		print FNR - start + 1, FILENAME ":" start, name
		start = 0; name = "?"; name_line = 0
	}
' $files)

if styles=$(printf '%s\n' "$report" | grep '^STYLE '); then
	echo "$me: FAIL: function bodies must open with \"{\" alone in column 0:"
	printf '%s\n' "$styles" | sed 's/^STYLE /    /'
	exit 1
fi
sorted=$(printf '%s\n' "$report" | sort -k1,1nr -k2)
if [ "$list" = 1 ]; then
	printf '%s\n' "$sorted"
	exit 0
fi
long=$(printf '%s\n' "$sorted" | awk -v max="$max" '$1 > max')
n=$(printf '%s\n' "$report" | grep -c .)
if [ -n "$long" ]; then
	echo "$me: FAIL: functions over $max lines:"
	printf '%s\n' "$long" | sed 's/^/    /'
	exit 1
fi
echo "$me: PASS: $n functions, none over $max lines"
