/*
 * src/alloc.h - every allocation the library makes goes through here, so
 * that fault-injection tests can fail the Nth one (src/alloc.c).
 */
#ifndef RELHASH_ALLOC_H
#define RELHASH_ALLOC_H

#include <stddef.h>

void *rh_malloc(size_t size);
void *rh_calloc(size_t n, size_t size);
void rh_free(void *p);

#endif /* RELHASH_ALLOC_H */
