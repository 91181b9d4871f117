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
	/* The RELHASH_VERSION of the headers the library was built with
	 * (<relhash/config.h>, from configure.ac); a program's own copy of
	 * the macro is that of the headers it was built with. */
	return RELHASH_VERSION;
}
