/*
 * src/alloc.c - the library's allocator entry points.
 *
 * In builds configured with --enable-debug, tests can make the Nth
 * allocation from now fail (relhash__debug_fail_alloc()), to check that
 * every failure surfaces as -ENOMEM (or the documented fallback) and leaves
 * tables intact.  Release builds compile to plain malloc/calloc/free.
 */
#include "config.h"

#include <stdbool.h>
#include <stdlib.h>

#include <relhash/common.h>

#include "alloc.h"
#include "atomics.h"

#ifdef RELHASH_DEBUG
/* Allocations left before the failing one; 0 = no failure armed. */
static long fail_countdown;

/* Arm (n > 0) or disarm (n == 0): the nth allocation from now fails. */
RELHASH_API void relhash__debug_fail_alloc(long n);
void relhash__debug_fail_alloc(long n)
{
	rh_store(&fail_countdown, n);
}

static int injected_failure(void)
{
	long left = rh_load(&fail_countdown);

	while (left > 0) {
		if (__atomic_compare_exchange_n(&fail_countdown, &left, left - 1,
		                                false, __ATOMIC_RELAXED,
		                                __ATOMIC_RELAXED))
			return left == 1;
	}
	return 0;
}
#else
static int injected_failure(void)
{
	return 0;
}
#endif

void *rh_malloc(size_t size)
{
	return injected_failure() ? NULL : malloc(size);
}

void *rh_calloc(size_t n, size_t size)
{
	return injected_failure() ? NULL : calloc(n, size);
}

void rh_free(void *p)
{
	free(p);
}
