/*
 * src/base/list.h - circular doubly linked lists with a sentinel (intrusive).
 */
#ifndef RELHASH_LIST_H
#define RELHASH_LIST_H

#include <stdbool.h>
#include <stddef.h>

struct rh_list {
	struct rh_list *next, *prev;
};

#define rh_container_of(ptr, type, member) \
	((type *)(void *)((char *)(ptr) - offsetof(type, member)))

static inline void rh_list_init(struct rh_list *l)
{
	l->next = l->prev = l;
}

static inline bool rh_list_empty(const struct rh_list *l)
{
	return l->next == l;
}

static inline void rh_list_add_tail(struct rh_list *l, struct rh_list *n)
{
	n->prev = l->prev;
	n->next = l;
	l->prev->next = n;
	l->prev = n;
}

static inline void rh_list_del(struct rh_list *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	n->next = n->prev = n;
}

#define rh_list_for_each_safe(pos, tmp, head) \
	for ((pos) = (head)->next, (tmp) = (pos)->next; (pos) != (head); \
	     (pos) = (tmp), (tmp) = (pos)->next)

/* Last to first; the loop body must not remove pos. */
#define rh_list_for_each_reverse(pos, head) \
	for ((pos) = (head)->prev; (pos) != (head); (pos) = (pos)->prev)

#endif /* RELHASH_LIST_H */
