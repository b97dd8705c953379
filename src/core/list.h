/* SPDX-License-Identifier: MIT */
/* Intrusive circular doubly linked list, kernel style. */
#ifndef NDK_CORE_LIST_H
#define NDK_CORE_LIST_H

#include <stdbool.h>
#include "core/compiler.h"

struct list_head {
	struct list_head *next, *prev;
};

#define LIST_HEAD_INIT(name)     \
	{                        \
		&(name), &(name) \
	}

static inline void list_init(struct list_head *h)
{
	h->next = h;
	h->prev = h;
}

static inline bool list_empty(const struct list_head *h)
{
	return h->next == h;
}

/* Exactly one entry. */
static inline bool list_is_singular(const struct list_head *h)
{
	return !list_empty(h) && h->next->next == h;
}

static inline void list_insert(struct list_head *n, struct list_head *prev,
			       struct list_head *next)
{
	next->prev = n;
	n->next = next;
	n->prev = prev;
	prev->next = n;
}

static inline void list_add(struct list_head *n, struct list_head *h)
{
	list_insert(n, h, h->next);
}

static inline void list_add_tail(struct list_head *n, struct list_head *h)
{
	list_insert(n, h->prev, h);
}

/* Unlinks n and leaves it self-linked, so a second list_del is harmless. */
static inline void list_del(struct list_head *n)
{
	n->next->prev = n->prev;
	n->prev->next = n->next;
	list_init(n);
}

#define list_entry(ptr, type, member)	  container_of(ptr, type, member)
#define list_first_entry(h, type, member) list_entry((h)->next, type, member)

#define list_for_each(pos, h) \
	for ((pos) = (h)->next; (pos) != (h); (pos) = (pos)->next)
#define list_for_each_safe(pos, tmp, h)                            \
	for ((pos) = (h)->next, (tmp) = (pos)->next; (pos) != (h); \
	     (pos) = (tmp), (tmp) = (pos)->next)

#endif /* NDK_CORE_LIST_H */
