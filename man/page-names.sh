#!/bin/sh
# man/page-names.sh PAGE... - print the names each mdoc page documents: the
# .Nm entries of its NAME section, one a line.  make install links each
# name to its page (so that "man relhash_read_unlock" finds the page of
# relhash_read_lock), and tests/test-man-coverage.sh checks them against
# the library.
for page in "$@"; do
	sed -n '/^\.Sh NAME$/,/^\.Sh /s/^\.Nm \([A-Za-z0-9_]*\).*/\1/p' "$page"
done
