# relhash_pthread.m4 - fallback POSIX threads probe.          -*- Autoconf -*-

# RELHASH_SIMPLE_PTHREAD
# ----------------------
# Used only when autoconf-archive's AX_PTHREAD was not available when the
# build system was generated.  Sets PTHREAD_CFLAGS to -pthread when the
# compiler accepts it, and PTHREAD_LIBS to whatever library pthread_create
# needs (nothing on current glibc, -lpthread on older systems).
AC_DEFUN([RELHASH_SIMPLE_PTHREAD],
[AC_REQUIRE([AC_PROG_CC])dnl
PTHREAD_CFLAGS=
PTHREAD_LIBS=
AC_CACHE_CHECK([whether $CC accepts -pthread], [relhash_cv_cc_pthread], [
  relhash_save_CFLAGS=$CFLAGS
  CFLAGS="$CFLAGS -pthread"
  AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <pthread.h>]],
                                  [[pthread_t t; return pthread_create(&t, 0, 0, 0);]])],
    [relhash_cv_cc_pthread=yes], [relhash_cv_cc_pthread=no])
  CFLAGS=$relhash_save_CFLAGS])
AS_IF([test "x$relhash_cv_cc_pthread" = xyes], [PTHREAD_CFLAGS=-pthread])
relhash_save_CFLAGS=$CFLAGS
relhash_save_LIBS=$LIBS
CFLAGS="$CFLAGS $PTHREAD_CFLAGS"
AC_SEARCH_LIBS([pthread_create], [pthread],
  [AS_CASE([$ac_cv_search_pthread_create],
     ["none required"], [],
     [PTHREAD_LIBS=$ac_cv_search_pthread_create])],
  [AC_MSG_ERROR([relhash needs POSIX threads (pthread_create was not found)])])
CFLAGS=$relhash_save_CFLAGS
LIBS=$relhash_save_LIBS
])
