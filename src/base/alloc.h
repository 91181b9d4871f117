/*
 * src/base/alloc.h - every allocation the library makes goes through here, so
 * that fault-injection tests can fail the Nth one (src/base/alloc.c).
 */
#ifndef RELHASH_ALLOC_H
#define RELHASH_ALLOC_H

#include <stddef.h>

void *rh_malloc(size_t size);
void *rh_calloc(size_t n, size_t size);
/* Zeroed, aligned to align (a power of two, a multiple of sizeof(void *)),
 * freed with rh_free(): for arrays of types declared with a larger
 * alignment than malloc() guarantees. */
void *rh_calloc_aligned(size_t align, size_t n, size_t size);
/* Zeroed, freed with rh_free(): for a large array loaded at random places
 * (a bucket array), which from 2 MiB up is advised for transparent huge
 * pages. */
void *rh_calloc_huge(size_t size);
void rh_free(void *p);

#endif /* RELHASH_ALLOC_H */
