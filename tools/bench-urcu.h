/*
 * bench-urcu.h - liburcu's lock-free resizable hash table (rculfhash) as a
 * relhash-bench backend, written once for any liburcu flavor.
 *
 * Why a header with code in it: liburcu's flavors are separate libraries
 * whose functions have flavor-specific names (urcu_qsbr_read_lock,
 * urcu_memb_read_lock, ...).  A flavor's top-level header (<urcu-qsbr.h>,
 * <urcu.h>) maps the generic names (rcu_read_lock, call_rcu, rcu_flavor,
 * ...) onto its own, and the mappings of two flavors cannot coexist in one
 * translation unit.  So this file uses only the generic names, and each
 * flavor has a small .c file (bench-urcu-qsbr.c, bench-urcu-memb.c) that
 * includes its flavor header and then this file.  Every definition here is
 * static except the backend object, whose name the including file chooses.
 *
 * Before including this file, define:
 *   _LGPL_SOURCE              (before the flavor header: inline read side)
 *   BENCH_URCU_BACKEND        the name of the struct bench_backend to define
 *   BENCH_URCU_NAME           its name in reports
 *   BENCH_URCU_DESCRIPTION    one line for reports
 *
 * QSBR and memb need no separate code paths: with QSBR rcu_read_lock() and
 * rcu_read_unlock() compile to nothing and the worker loop reports a
 * quiescent state every BENCH_BATCH operations; with memb
 * rcu_quiescent_state() is an empty inline function.
 */
#ifndef BENCH_URCU_BACKEND
#error "define BENCH_URCU_BACKEND (and include a liburcu flavor header) first"
#endif

#include <errno.h>
#include <stdlib.h>

#include <urcu/rculfhash.h>

#include "bench.h"

struct urcu_obj {
	struct cds_lfht_node node;
	uint64_t key;
	uint64_t value;
	struct rcu_head rcu; /* for call_rcu() after removal */
};

#define URCU_OBJ(node_ptr) caa_container_of(node_ptr, struct urcu_obj, node)

/*
 * The object at iter, or NULL at the end of the walk.  The loops below do
 * not use cds_lfht_for_each_entry(): it takes the container of the NULL
 * node that ends a walk, which clang's UndefinedBehaviorSanitizer reports
 * (an offset applied to a null pointer).
 */
static struct urcu_obj *urcu_iter_obj(struct cds_lfht_iter *iter)
{
	struct cds_lfht_node *n = cds_lfht_iter_get_node(iter);

	return n ? URCU_OBJ(n) : NULL;
}

static int urcu_match(struct cds_lfht_node *node, const void *key)
{
	return URCU_OBJ(node)->key == *(const uint64_t *)key;
}

static void *urcu_create(const struct bench_config *cfg)
{
	int flags = 0;
	struct cds_lfht *t;

	if (bench_auto_resize(cfg->resize))
		flags = CDS_LFHT_AUTO_RESIZE | CDS_LFHT_ACCOUNTING;
	t = cds_lfht_new(cfg->nbuckets, 1, 0, flags, NULL);
	if (!t)
		errno = ENOMEM;
	return t;
}

static void urcu_thread_enter(void)
{
	rcu_register_thread();
}

static void urcu_thread_leave(void)
{
	rcu_unregister_thread();
}

static void *urcu_alloc_object(uint64_t key)
{
	struct urcu_obj *obj = BENCH_NEW_OBJECT(struct urcu_obj, key);

	if (obj)
		cds_lfht_node_init(&obj->node);
	return obj;
}

/* On failure obj was never published: it can be freed at once. */
static int urcu_insert_object(void *table, void *object)
{
	struct urcu_obj *obj = object;
	struct cds_lfht_node *added;

	rcu_read_lock();
	added = cds_lfht_add_unique(table, bench_hash(obj->key), urcu_match,
	                            &obj->key, &obj->node);
	rcu_read_unlock();
	return added == &obj->node ? 0 : -EEXIST;
}

static int urcu_insert(void *table, uint64_t key)
{
	return bench_insert_new(table, key, urcu_alloc_object,
	                        urcu_insert_object, bench_free_object);
}

/* After a grace period: poison the value, then free (see bench.h). */
static void urcu_poison_free(struct rcu_head *head)
{
	struct urcu_obj *obj = caa_container_of(head, struct urcu_obj, rcu);

	__atomic_store_n(&obj->value, BENCH_POISON, __ATOMIC_RELAXED);
	free(obj);
}

/* Unlink obj and free it after a grace period.  Inside rcu_read_lock(). */
static int urcu_delete(struct cds_lfht *t, struct urcu_obj *obj)
{
	int err = cds_lfht_del(t, &obj->node);

	if (!err)
		call_rcu(&obj->rcu, urcu_poison_free);
	return err ? -ENOENT : 0;
}

static int urcu_remove(void *table, uint64_t key)
{
	struct cds_lfht_iter iter;
	struct cds_lfht_node *node;
	int err = -ENOENT;

	rcu_read_lock();
	cds_lfht_lookup(table, bench_hash(key), urcu_match, &key, &iter);
	node = cds_lfht_iter_get_node(&iter);
	if (node)
		err = urcu_delete(table, URCU_OBJ(node));
	rcu_read_unlock();
	return err;
}

static void urcu_destroy(void *table)
{
	struct cds_lfht_iter iter;
	struct urcu_obj *obj;

	/*
	 * cds_lfht_destroy() wants an empty table.  Objects are freed after
	 * a grace period even now: the table's own resize worker may still
	 * be walking them.  Destroy from an unregistered thread, as liburcu
	 * asks (a registered QSBR thread can deadlock it).
	 */
	rcu_register_thread();
	rcu_read_lock();
	for (cds_lfht_first(table, &iter); (obj = urcu_iter_obj(&iter));
	     cds_lfht_next(table, &iter))
		urcu_delete(table, obj);
	rcu_read_unlock();
	rcu_unregister_thread();
	rcu_barrier();
	if (cds_lfht_destroy(table, NULL) != 0)
		bench_die("cds_lfht_destroy failed");
}

static int urcu_resize(void *table, size_t nbuckets)
{
	cds_lfht_resize(table, nbuckets);
	rcu_quiescent_state(); /* QSBR: the resizer is a reader too */
	return 0;
}

static void urcu_barrier(void)
{
	rcu_barrier();
}

static uint64_t urcu_count(void *table)
{
	long before, after;
	unsigned long count;

	rcu_read_lock();
	cds_lfht_count_nodes(table, &before, &count, &after);
	rcu_read_unlock();
	return count;
}

static void urcu_for_each(void *table, void (*fn)(uint64_t key, void *arg),
                          void *arg)
{
	struct cds_lfht_iter iter;
	struct urcu_obj *obj;

	rcu_read_lock();
	for (cds_lfht_first(table, &iter); (obj = urcu_iter_obj(&iter));
	     cds_lfht_next(table, &iter))
		fn(obj->key, arg);
	rcu_read_unlock();
}

/* rcu_quiescent_state may be a macro: give the loops a function. */
static inline void urcu_quiescent_state(void)
{
	rcu_quiescent_state();
}

static const struct bench_table_ops urcu_ops = {
	.object_size = sizeof(struct urcu_obj),
	.create = urcu_create,
	.destroy = urcu_destroy,
	.thread_enter = urcu_thread_enter,
	.thread_leave = urcu_thread_leave,
	.insert = urcu_insert,
	.alloc_object = urcu_alloc_object,
	.insert_object = urcu_insert_object,
	.free_object = bench_free_object,
	.remove = urcu_remove,
	.resize = urcu_resize,
	.barrier = urcu_barrier,
	.count = urcu_count,
	.for_each = urcu_for_each,
	.quiescent_state = urcu_quiescent_state,
};

static inline enum bench_found urcu_lookup(void *table, uint64_t key)
{
	struct cds_lfht_iter iter;
	struct cds_lfht_node *node;
	uint64_t value = 0;

	/* Copy the value out inside the section, check it after (as
	 * relhash's lookup does). */
	rcu_read_lock();
	cds_lfht_lookup(table, bench_hash(key), urcu_match, &key, &iter);
	node = cds_lfht_iter_get_node(&iter);
	if (node)
		value = URCU_OBJ(node)->value;
	rcu_read_unlock();
	return node ? bench_check_value(value, key) : BENCH_MISSING;
}

static void *urcu_worker(void *w)
{
	bench_worker_loop(w, urcu_lookup, urcu_quiescent_state);
	return NULL;
}

const struct bench_backend BENCH_URCU_BACKEND = {
	.name = BENCH_URCU_NAME,
	.description = BENCH_URCU_DESCRIPTION,
	.ops = &urcu_ops,
	.worker = urcu_worker,
};
