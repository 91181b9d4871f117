/*
 * src/debug.h - race widening for test builds.
 *
 * In builds configured with --enable-debug (RELHASH_DEBUG), rh_debug_yield()
 * sits at each step of a resize and at the start of lookups and updates, and
 * sometimes yields the processor or sleeps briefly, so that the interleavings
 * a stress test reaches are many more than timing alone would give.  It is
 * active only when the environment has RELHASH_DEBUG_YIELD=1 (read once).
 * Release builds compile it to nothing.
 */
#ifndef RELHASH_DEBUG_H
#define RELHASH_DEBUG_H

#ifdef RELHASH_DEBUG
void rh_debug_yield(void);
#else
static inline void rh_debug_yield(void)
{
}
#endif

#endif /* RELHASH_DEBUG_H */
