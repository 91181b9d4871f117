#!/usr/bin/env bash
# tests/test-doc-refs.sh - every section of doc/DESIGN.md that the tree
# cites exists.
#
# A citation is "DESIGN.md" (or "DESIGN.md's") followed by "section N"
# and/or one or more quoted titles ("A", "B" and "C"), in the sources,
# headers, tests, tools, CI script, README, the other documents and the
# manual pages, across comment line breaks.  Checks:
#  - "section N" names a heading "## N. ..." of doc/DESIGN.md;
#  - each quoted title is a heading of doc/DESIGN.md (any level, without
#    its number), or the part of one before a colon ("Helping" for
#    "Helping: throttled inserters do unzip work");
#  - "section N, "Title"": the title is a heading inside section N;
#  - inside doc/DESIGN.md, every "section N" names one of its headings.
#
# Run by "make check" (the Makefile exports $top_srcdir).

set -u

me=test-doc-refs
srcdir=${top_srcdir:-${srcdir:-.}}
design=$srcdir/doc/DESIGN.md

if [ ! -f "$design" ]; then
	echo "$me: FAIL: no $design"
	exit 1
fi

# The files that may cite it (build products excluded by their names).
files=()
while IFS= read -r f; do
	files+=("$f")
done < <(cd "$srcdir" && find src include tests tools .ci relcached examples \
	man README doc -type f \
	\( -name '*.[ch]' -o -name '*.cc' -o -name '*.sh' -o -name '*.pml' \
	-o -name '*.py' -o -name '*.md' -o -name '*.[0-9]' -o -name README \
	-o -path '.ci/*' \) ! -name DESIGN.md ! -name test-doc-refs.sh \
	! -path '*/.libs/*' ! -path '*/.deps/*' 2>/dev/null | sort)

# Every heading of DESIGN.md, as "N<TAB>title", N the number of the
# "## N." section that holds it.
headings=$(
	awk '
	/^## [0-9]+\. / {
		n = $2; sub(/\.$/, "", n)
		t = $0; sub(/^## [0-9]+\. /, "", t)
		print n "\t" t
		next
	}
	/^###+ / {
		t = $0; sub(/^###+ /, "", t)
		print n "\t" t
	}' "$design"
)

# Print "FILE: citation" for each citation of a missing section.
check_file() {
	awk -v file="$1" -v headings="$headings" '
	BEGIN {
		nh = split(headings, lines, "\n")
		for (i = 1; i <= nh; i++) {
			split(lines[i], p, "\t")
			sec[p[2]] = p[1]
			num[p[1]] = 1
			# "Title: more" is also cited as "Title".
			if (index(p[2], ":") > 0) {
				short = substr(p[2], 1, index(p[2], ":") - 1)
				if (!(short in sec))
					sec[short] = p[1]
			}
		}
		RS = "\001"
	}
	{
		text = $0
		# Join comment lines: a newline and the next line'"'"'s
		# leading blanks and comment marker become one space.
		gsub(/\n[ \t]*(\*|#|\/\/|\.\\")?[ \t]*/, " ", text)
		gsub(/\n/, " ", text)
		while (match(text, /DESIGN(\.md)?/)) {
			rest = substr(text, RSTART + RLENGTH)
			text = rest
			sub(/^'"'"'s/, "", rest)
			sub(/^[ ,:(]*/, "", rest)
			n = ""
			if (match(rest, /^section [0-9]+/)) {
				n = substr(rest, 9, RLENGTH - 8)
				rest = substr(rest, RLENGTH + 1)
				if (!(n in num))
					print file ": DESIGN.md section " n \
					    ": no \"## " n ".\" heading"
				sub(/^[ ,:(]*/, "", rest)
			}
			while (match(rest, /^"[^"]+"/)) {
				t = substr(rest, 2, RLENGTH - 2)
				rest = substr(rest, RLENGTH + 1)
				if (!(t in sec))
					print file ": DESIGN.md \"" t \
					    "\": no such heading"
				else if (n != "" && sec[t] != n)
					print file ": DESIGN.md section " n \
					    ", \"" t "\": that heading is in " \
					    "section " sec[t]
				if (!match(rest, /^[ ,;]*(and |or )?[ ]*"/))
					break
				rest = substr(rest, RLENGTH)
			}
		}
	}' "$srcdir/$1"
}

bad=
for f in "${files[@]}"; do
	bad+=$(check_file "$f")
	bad+=$'\n'
done

# DESIGN.md's references to its own sections.
bad+=$(awk -v headings="$headings" '
	BEGIN {
		nh = split(headings, lines, "\n")
		for (i = 1; i <= nh; i++) {
			split(lines[i], p, "\t")
			num[p[1]] = 1
		}
	}
	{
		line = $0
		while (match(line, /[Ss]ections? [0-9]+( (and|or|to) [0-9]+)?/)) {
			ref = substr(line, RSTART, RLENGTH)
			line = substr(line, RSTART + RLENGTH)
			k = split(ref, w, " ")
			for (i = 2; i <= k; i++)
				if (w[i] ~ /^[0-9]+$/ && !(w[i] in num))
					print "doc/DESIGN.md:" NR ": section " \
					    w[i] ": no \"## " w[i] ".\" heading"
		}
	}' "$design")

bad=$(printf '%s\n' "$bad" | grep -v '^$' || true)
if [ -n "$bad" ]; then
	echo "$me: FAIL: citations of doc/DESIGN.md sections that do not exist:"
	printf '%s\n' "$bad" | sed 's/^/  /'
	exit 1
fi
echo "$me: PASS: every cited section of doc/DESIGN.md exists (${#files[@]} files)"
