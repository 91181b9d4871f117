#!/usr/bin/env bash
# tests/test-atomics.sh - the library's shared fields are C11 atomics, and
# every access to them says its memory order (doc/DESIGN.md, "Atomic fields
# in C and C++").
#
# 1. No GCC __atomic or __sync builtin in src/ or the public headers: every
#    access goes through src/base/atomics.h (<stdatomic.h>) or, in the headers,
#    RELHASH__LOAD and RELHASH__STORE.
# 2. With clang: every file of src/ (also as in --enable-debug builds), and
#    the public headers as C and as C++11, compile with
#    -Werror=atomic-implicit-seq-cst.  That finds any plain read or write
#    of an _Atomic field (a silent seq_cst access), and clang also refuses
#    <stdatomic.h> operations on a field that is not _Atomic.  First a
#    plain access must be refused, or the check would prove nothing.  The
#    header check also asserts that the layouts the inline fast paths read
#    are those of the same structures with plain fields, in both
#    languages.  Skipped without clang.
#
# Run by "make check", which exports top_srcdir and top_builddir.

set -u

me=test-atomics
srcdir=${top_srcdir:-.}
builddir=${top_builddir:-.}
status=0

builtins=$(grep -nE '__(atomic|sync)_' "$srcdir"/src/*/*.c "$srcdir"/src/*/*.h \
	"$srcdir"/include/relhash/*.h)
if [ -n "$builtins" ]; then
	echo "$me: FAIL: GCC atomic builtins outside <stdatomic.h>:"
	printf '%s\n' "$builtins"
	status=1
fi

CLANG=${CLANG:-clang}
CLANGXX=${CLANGXX:-clang++}
if ! command -v "$CLANG" >/dev/null 2>&1; then
	echo "$me: SKIP: no $CLANG for the implicit seq_cst check"
	[ "$status" -eq 0 ] && exit 77
	exit "$status"
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
flags=(-fsyntax-only -Werror=atomic-implicit-seq-cst
       -I"$srcdir/include" -I"$builddir/include" -I"$builddir/src"
       -I"$srcdir/src/base" -I"$srcdir/src/engine" -I"$srcdir/src/table")

# The check itself: a plain read of an _Atomic field must be refused.
printf '#include <stdatomic.h>\nstruct s { _Atomic int x; };\n%s\n' \
	'int get(struct s *p) { return p->x; }' > "$tmp/plain.c"
if "$CLANG" -std=gnu11 "${flags[@]}" "$tmp/plain.c" 2>/dev/null; then
	echo "$me: FAIL: $CLANG accepts a plain read of an _Atomic field"
	exit 1
fi

for f in "$srcdir"/src/*/*.c; do
	for debug in "" -DRELHASH_DEBUG=1; do
		if ! "$CLANG" -std=gnu11 "${flags[@]}" -DRELHASH_BUILDING_LIBRARY \
			$debug "$f"; then
			echo "$me: FAIL: ${f#"$srcdir"/} ${debug:+($debug)}"
			status=1
		fi
	done
done

# The headers alone, with every inline fast path used, and the shared
# layouts those paths read equal to the same structures with plain fields,
# in C and in C++ (the ABI is that of the plain fields).
cat > "$tmp/inline.c" <<'EOF'
#include <relhash.h>

#ifdef __cplusplus
#define STATIC_ASSERT static_assert
#else
#define STATIC_ASSERT _Static_assert
#endif
#define SAME_FIELD(a, b, f) \
	STATIC_ASSERT(offsetof(a, f) == offsetof(b, f) && \
	              sizeof(((a *)0)->f) == sizeof(((b *)0)->f), #a "." #f)
#define SAME_SIZE(a, b) \
	STATIC_ASSERT(sizeof(a) == sizeof(b), #a)

struct plain_reader { uint64_t ctr; uint8_t mode, wake, reserved[6]; };
SAME_FIELD(struct relhash__reader, struct plain_reader, ctr);
SAME_FIELD(struct relhash__reader, struct plain_reader, mode);
SAME_FIELD(struct relhash__reader, struct plain_reader, wake);
SAME_SIZE(struct relhash__reader, struct plain_reader);
struct plain_gp { uint64_t ctr, reserved[7]; };
SAME_FIELD(struct relhash__gp, struct plain_gp, ctr);
SAME_SIZE(struct relhash__gp, struct plain_gp);
struct plain_table_head { void *buckets; uint64_t seed_hint; };
SAME_FIELD(struct relhash__table_head, struct plain_table_head, buckets);
SAME_FIELD(struct relhash__table_head, struct plain_table_head, seed_hint);
SAME_SIZE(struct relhash__table_head, struct plain_table_head);
struct plain_node { void *next; uint64_t hash; };
SAME_FIELD(struct relhash_node, struct plain_node, next);
SAME_FIELD(struct relhash_node, struct plain_node, hash);
SAME_SIZE(struct relhash_node, struct plain_node);
STATIC_ASSERT(sizeof(*relhash__heads(0)) == sizeof(void *), "bucket head");

struct obj { uint64_t key; struct relhash_node node; };
static const struct relhash_params params = {
	offsetof(struct obj, node), offsetof(struct obj, key), 8,
	0, 0, 0, 0, 0, 0, 0, 0,
};
size_t use(struct relhash_table *t, const void *const keys[], void *objs[])
{
	size_t n;

	relhash_read_lock();
	n = relhash_lookup_fast(t, keys[0], params) != 0;
	n += relhash_lookup_bulk_fast(t, keys, 2, objs, params);
	n += relhash_read_ongoing();
	relhash_read_unlock();
	return n;
}
EOF
cp "$tmp/inline.c" "$tmp/inline.cc"
if ! "$CLANG" -std=c11 "${flags[@]}" -Wall -Wextra "$tmp/inline.c"; then
	echo "$me: FAIL: the public headers as C11"
	status=1
fi
if command -v "$CLANGXX" >/dev/null 2>&1 &&
   ! "$CLANGXX" -std=c++11 "${flags[@]}" -Wall -Wextra "$tmp/inline.cc"; then
	echo "$me: FAIL: the public headers as C++11"
	status=1
fi

[ "$status" -eq 0 ] && echo "$me: ok"
exit "$status"
