/*
 * src/table/version.c - relhash_version(): the version of the library that
 * is running, for comparison with RELHASH_VERSION of the headers a program
 * was built with.  In the table layer because its public header is
 * <relhash.h>, the one that speaks for the library as a whole.
 */
#include "config.h"

#include <relhash.h>

const char *relhash_version(void)
{
	/* PACKAGE_VERSION (src/config.h) is what relhash/config.h's
	 * RELHASH_VERSION is made from: both come from configure.ac. */
	return PACKAGE_VERSION;
}
