/*
 * src/base/alloc.c - the library's allocator entry points.
 *
 * Fault injection: tests can make the Nth allocation from now fail
 * (relhash__debug_fail_alloc()), to check that every failure surfaces as
 * -ENOMEM (or the documented fallback) and leaves tables intact.  The hook
 * costs one relaxed load per allocation, and the library allocates only in
 * relhash_create(), resizes, relhash_defer() and
 * relhash_defer_local() (a block per 60 calls each), and
 * relhash_barrier() (its marker, on the stack if that fails), so it is
 * compiled into every build and the fault-injection tests run under every
 * sanitizer.
 *
 * Leak counting: debug builds count the blocks the library holds
 * (relhash__debug_live_blocks()), so that a test can see a thread or a
 * table leave nothing behind without a sanitizer.  An atomic add per
 * allocation and free, all threads on one counter: not in other builds.
 */
#include "config.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sys/mman.h>

#include <relhash/common.h>

#include "alloc.h"
#include "atomics.h"
#include "debug.h"

/* Allocations left before the failing one; 0 = no failure armed. */
static _Atomic long fail_countdown;

/*
 * Arm (n > 0) or disarm (n == 0): the nth allocation from now fails.
 * Returns the countdown it replaces: 0 when the previous failure fired (or
 * none was armed), else how many allocations it was still waiting for.
 */
RELHASH_API long relhash__debug_fail_alloc(long n);
long relhash__debug_fail_alloc(long n)
{
	return rh_exchange(&fail_countdown, n);
}

#ifdef RELHASH_DEBUG
/* Blocks the library holds, allocated and not yet freed, in all threads:
 * a test that leaves the library as it found it finds the same count. */
static _Atomic long live_blocks;
#endif

/* Debug builds: how many blocks the library holds; -1 in other builds,
 * which do not count. */
RELHASH_API long relhash__debug_live_blocks(void);
long relhash__debug_live_blocks(void)
{
#ifdef RELHASH_DEBUG
	return rh_load(&live_blocks);
#else
	return -1;
#endif
}

/* p, counted as live in debug builds.  Relaxed: a count that a test reads
 * after joining (or waiting for) the threads that changed it. */
static void *counted(void *p)
{
#ifdef RELHASH_DEBUG
	if (p)
		rh_add_relaxed(&live_blocks, 1);
#endif
	return p;
}

static bool injected_failure(void)
{
	long left = rh_load(&fail_countdown);

	while (left > 0)
		if (rh_cas_relaxed(&fail_countdown, &left, left - 1))
			return left == 1;
	return false;
}

void *rh_malloc(size_t size)
{
	return injected_failure() ? NULL : counted(malloc(size));
}

void *rh_calloc(size_t n, size_t size)
{
	return injected_failure() ? NULL : counted(calloc(n, size));
}

/*
 * A lookup loads one bucket at a random place of its array.  Past the TLB's
 * reach (a few MiB of 4 KiB pages) each such load also walks the page
 * tables, in two dimensions under a hypervisor.  Arrays of a huge page or
 * more are aligned to one and advised MADV_HUGEPAGE, so that the kernel
 * backs them with huge pages when its policy is "madvise" (the usual
 * default) or "always"; elsewhere the advice is ignored.  Bucket arrays are
 * powers of two: nothing is rounded up.  doc/DESIGN.md, "Memory".
 */
#define HUGE_PAGE_BYTES ((size_t)2 << 20)

/* size zeroed bytes aligned to align, the first huge of them (whole huge
 * pages, or 0) advised for huge pages before the zeroing, whose faults
 * then map huge pages.  Advice: its failure changes nothing else. */
static void *zeroed_aligned(size_t align, size_t size, size_t huge)
{
	void *p;

	if (injected_failure() || posix_memalign(&p, align, size) != 0)
		return NULL;
#ifdef MADV_HUGEPAGE
	if (huge && !RH_TEST_BUG(NO_HUGE_PAGES))
		(void)madvise(p, huge, MADV_HUGEPAGE);
#endif
	return counted(memset(p, 0, size));
}

void *rh_calloc_aligned(size_t align, size_t n, size_t size)
{
	if (size && n > SIZE_MAX / size)
		return NULL;
	return zeroed_aligned(align, n * size, 0);
}

void *rh_calloc_huge(size_t size)
{
	if (size < HUGE_PAGE_BYTES)
		return rh_calloc(1, size);
	/* Whole huge pages only: the tail shares its page with whatever the
	 * allocator puts after it. */
	return zeroed_aligned(HUGE_PAGE_BYTES, size,
	                      size & ~(HUGE_PAGE_BYTES - 1));
}

void rh_free(void *p)
{
#ifdef RELHASH_DEBUG
	if (p)
		rh_add_relaxed(&live_blocks, -1);
#endif
	free(p);
}
