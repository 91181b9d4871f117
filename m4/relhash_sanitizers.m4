# relhash_sanitizers.m4 - --enable-sanitizers for relhash.     -*- Autoconf -*-

# RELHASH_ARG_SANITIZERS
# ----------------------
# --enable-sanitizers=LIST, LIST being a comma-separated subset of
# address, undefined and thread (thread excludes address).  A bare
# --enable-sanitizers means address,undefined.  Adds -fsanitize=LIST
# -fno-omit-frame-pointer -g to CFLAGS and -fsanitize=LIST to LDFLAGS, after
# checking that the compiler can build and link with them.  Sets
# relhash_sanitizers_summary for the configure summary.
AC_DEFUN([RELHASH_ARG_SANITIZERS],
[AC_REQUIRE([AC_PROG_CC])dnl
AC_ARG_ENABLE([sanitizers],
  [AS_HELP_STRING([--enable-sanitizers=LIST],
     [build with sanitizers: address,undefined or thread (optionally thread,undefined) @<:@default=no@:>@])],
  [], [enable_sanitizers=no])
relhash_sanitizers=
AS_CASE([$enable_sanitizers],
  [no|none|""], [],
  [yes], [relhash_sanitizers=address,undefined],
  [relhash_sanitizers=$enable_sanitizers])
relhash_san_address=no
relhash_san_thread=no
relhash_san_list=
relhash_save_IFS=$IFS
IFS=,
for relhash_san in $relhash_sanitizers; do
  IFS=$relhash_save_IFS
  AS_CASE([$relhash_san],
    [address], [relhash_san_address=yes],
    [thread], [relhash_san_thread=yes],
    [undefined], [],
    [AC_MSG_ERROR([--enable-sanitizers: unknown sanitizer '$relhash_san' (use address,undefined or thread)])])
  AS_CASE([",$relhash_san_list,"], [*",$relhash_san,"*], [],
    [relhash_san_list="${relhash_san_list:+$relhash_san_list,}$relhash_san"])
done
IFS=$relhash_save_IFS
AS_IF([test "$relhash_san_address$relhash_san_thread" = yesyes],
  [AC_MSG_ERROR([--enable-sanitizers: thread cannot be combined with address; configure two separate build directories])])
AS_IF([test -n "$relhash_san_list"], [
  relhash_san_cflags="-fsanitize=$relhash_san_list -fno-omit-frame-pointer -g"
  relhash_san_ldflags="-fsanitize=$relhash_san_list"
  AC_MSG_CHECKING([whether $CC can build with -fsanitize=$relhash_san_list])
  relhash_save_CFLAGS=$CFLAGS
  relhash_save_LDFLAGS=$LDFLAGS
  CFLAGS="$CFLAGS $relhash_san_cflags"
  LDFLAGS="$LDFLAGS $relhash_san_ldflags"
  AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <stdlib.h>]],
                                  [[char *p = malloc(4); p[0] = 1; free(p); return 0;]])],
    [AC_MSG_RESULT([yes])],
    [AC_MSG_RESULT([no])
     CFLAGS=$relhash_save_CFLAGS
     LDFLAGS=$relhash_save_LDFLAGS
     AC_MSG_FAILURE([$CC cannot link with -fsanitize=$relhash_san_list (Debian: the runtime comes with gcc; install libasan8/libubsan1/libtsan2 or use clang)])])
  relhash_sanitizers_summary=$relhash_san_list
], [relhash_sanitizers_summary=no])
])
