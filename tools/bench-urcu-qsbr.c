/*
 * bench-urcu-qsbr.c - rculfhash with liburcu's QSBR flavor (bench-urcu.h
 * explains why each flavor has a file of its own).
 */
#ifdef HAVE_URCU
#define _LGPL_SOURCE
#include <urcu-qsbr.h>

#define BENCH_URCU_BACKEND bench_urcu_qsbr_backend
#define BENCH_URCU_NAME "urcu-qsbr"
#define BENCH_URCU_DESCRIPTION "liburcu rculfhash, QSBR flavor"
#include "bench-urcu.h"
#endif
