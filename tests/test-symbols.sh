#!/usr/bin/env bash
# tests/test-symbols.sh - the shared library exports the whole API, and
# nothing outside the relhash_ namespace.
#
# Run by "make check" from the build directory (Automake sets $srcdir; the
# Makefile exports $top_builddir).  Finds librelhash.so under .libs/ of
# $top_builddir or of the current directory.  Exit 77 (skip) when no shared
# library was built (--disable-shared) or nm is missing.

set -u

me=test-symbols

builddir=${top_builddir:-.}
lib=
for cand in "$builddir/.libs/librelhash.so" ./.libs/librelhash.so \
	"$builddir"/.libs/librelhash.so.* ./.libs/librelhash.so.*; do
	if [ -f "$cand" ]; then
		lib=$cand
		break
	fi
done
if [ -z "$lib" ]; then
	echo "$me: SKIP: no shared library (.libs/librelhash.so) under '$builddir' or '.'"
	exit 77
fi
NM=${NM:-nm}
if ! command -v "$NM" >/dev/null 2>&1; then
	echo "$me: SKIP: nm not found"
	exit 77
fi

# Defined dynamic symbols: "address type name[@version]".
if ! syms=$("$NM" -D --defined-only "$lib" 2>&1); then
	echo "$me: FAIL: $NM -D --defined-only $lib: $syms"
	exit 1
fi
names=$(printf '%s\n' "$syms" | awk 'NF >= 3 { print $3 } NF == 2 { print $2 }' |
	sed 's/@.*//' | sort -u)

required="
relhash_read_lock
relhash_read_unlock
relhash_read_ongoing
relhash_lookup
relhash_synchronize
relhash_call
relhash_defer
relhash_defer_free
relhash_defer_local
relhash_reclaim_local
relhash_barrier
relhash_create
relhash_destroy
relhash_insert
relhash_remove
relhash_replace
relhash_resize
relhash_count
relhash_size
relhash_iter_first
relhash_iter_next
relhash_thread_register
relhash_thread_unregister
relhash_insert_or_get
relhash_hash_key
relhash_lookup_hashed
relhash_lookup_bulk
relhash_siphash
relhash_gp_get_state
relhash_gp_start_poll
relhash_gp_poll_state
relhash_gp_cond_synchronize
relhash_lookup_next
relhash_hash
relhash_table_stats
relhash_epoch_stats
relhash_set_callback_limit
relhash_set_stall_timeout_ms
relhash_version
relhash__self
relhash__gp
"

status=0
nreq=0
for s in $required; do
	nreq=$((nreq + 1))
	if ! printf '%s\n' "$names" | grep -qx "$s"; then
		echo "$me: FAIL: $lib does not export $s"
		status=1
	fi
done

# The thread-local reader record must be a TLS symbol: inline code in user
# programs reads it directly (initial-exec).
if command -v readelf >/dev/null 2>&1; then
	if ! readelf -W --dyn-syms "$lib" | awk '$8 ~ /^relhash__self(@|$)/ { print $4 }' |
		grep -qx TLS; then
		echo "$me: FAIL: relhash__self is not exported as a TLS symbol"
		status=1
	fi
fi

# Everything exported is in the relhash_ namespace, apart from the usual
# linker and toolchain noise.
foreign=$(printf '%s\n' "$names" | grep -v '^relhash_' |
	grep -Ev '^(_init|_fini|_edata|_end|__bss_start|_DYNAMIC|_GLOBAL_OFFSET_TABLE_|__dso_handle|_IO_stdin_used|__gmon_start__|__data_start|data_start|__TMC_END__|__libc_csu_(init|fini)|RELHASH_[0-9A-Z_.]*)$' |
	grep -Ev '^__(a|l|t|ub|m|h)san_|^__sanitizer_|^__interceptor_|^__asan|^__ubsan' |
	grep -v '^$' || true)
if [ -n "$foreign" ]; then
	echo "$me: FAIL: $lib exports symbols outside the relhash_ namespace:"
	printf '%s\n' "$foreign" | sed 's/^/  /'
	status=1
fi

total=$(printf '%s\n' "$names" | grep -c '^relhash_' || true)
if [ $status -eq 0 ]; then
	echo "$me: PASS: $lib exports $total relhash_* symbols, all $nreq required ones, nothing else"
else
	echo "$me: $lib exports $total relhash_* symbols:"
	printf '%s\n' "$names" | sed 's/^/  /'
fi
exit $status
