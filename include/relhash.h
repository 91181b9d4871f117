/*
 * relhash.h - relativistic hash tables and the grace-period engine they use.
 *
 * Include this one header: it brings in <relhash/epoch.h> (read-side critical
 * sections, synchronize, deferred callbacks) and <relhash/table.h> (the
 * resizable hash table).  See doc/DESIGN.md for the algorithms.
 */
#ifndef RELHASH_H
#define RELHASH_H

#include <relhash/epoch.h>
#include <relhash/table.h>

#endif /* RELHASH_H */
