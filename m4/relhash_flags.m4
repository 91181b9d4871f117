# relhash_flags.m4 - compiler flag probes for relhash.        -*- Autoconf -*-

# RELHASH_COMPILER_FLAGS(VARIABLE, FLAGS)
# ---------------------------------------
# Append to VARIABLE (and AC_SUBST it) each flag of the whitespace-separated
# list FLAGS that the C compiler accepts.  A flag counts as accepted when a
# trivial program compiles with it and -Werror.  GCC silently accepts any
# unknown -Wno-X, so for those the positive form -WX is probed instead.
AC_DEFUN([RELHASH_COMPILER_FLAGS],
[AC_REQUIRE([AC_PROG_CC])dnl
for relhash_flag in $2; do
  AS_CASE([$relhash_flag],
    [-Wno-*], [relhash_probe=-W`echo "$relhash_flag" | sed 's/^-Wno-//'`],
    [relhash_probe=$relhash_flag])
  AS_VAR_PUSHDEF([relhash_cache], [relhash_cv_cflag_$relhash_flag])dnl
  AC_CACHE_CHECK([whether $CC accepts $relhash_flag], [relhash_cache], [
    relhash_save_CFLAGS=$CFLAGS
    CFLAGS="$CFLAGS -Werror $relhash_probe"
    AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[]], [[return 0;]])],
      [AS_VAR_SET([relhash_cache], [yes])],
      [AS_VAR_SET([relhash_cache], [no])])
    CFLAGS=$relhash_save_CFLAGS])
  AS_VAR_IF([relhash_cache], [yes],
    [$1="${$1:+$$1 }$relhash_flag"])
  AS_VAR_POPDEF([relhash_cache])dnl
done
AC_SUBST([$1])dnl
])
