/*
 * relhash.h - relativistic hash tables and the grace-period engine they use.
 *
 * Include this one header: it brings in <relhash/epoch.h> (read-side critical
 * sections, synchronize, deferred callbacks) and <relhash/table.h> (the
 * resizable hash table), and declares relhash_version().  See doc/DESIGN.md
 * for the algorithms.
 */
#ifndef RELHASH_H
#define RELHASH_H

#include <relhash/epoch.h>
#include <relhash/table.h>

RELHASH_BEGIN_DECLS

/*
 * The version of the library that is running, such as "0.1.0": the
 * RELHASH_VERSION of the headers it was built with.  A program built
 * against other headers can compare the two (strcmp(relhash_version(),
 * RELHASH_VERSION)).  The string is static; may be called before any
 * other call.
 * Read-side section: may be called inside or outside one.
 * Ordering: none (a constant).
 */
RELHASH_API const char *relhash_version(void);

RELHASH_END_DECLS

#endif /* RELHASH_H */
