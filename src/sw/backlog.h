/* SPDX-License-Identifier: MIT */
/*
 * A listener's backlog: the connect requests handed to the consumer's
 * ConnectEvent that it has not accepted or rejected yet, at most max
 * (NDK_LISTEN_BACKLOG). The listener owns it and takes a slot before it
 * hands a request over; the passive connector returns that slot once,
 * when it leaves REQUESTED. Lock-free, any thread.
 */
#ifndef SW_BACKLOG_H
#define SW_BACKLOG_H

#include <stdatomic.h>
#include <stdbool.h>

struct sw_backlog {
	atomic_uint pending;
	unsigned int max;
	/* Called after each put, on the putting thread (which may hold a
	 * connector's lock): the listener hands a parked Request over. */
	void (*freed)(struct sw_backlog *b);
};

static inline void sw_backlog_init(struct sw_backlog *b, unsigned int max,
				   void (*freed)(struct sw_backlog *b))
{
	atomic_init(&b->pending, 0);
	b->max = max;
	b->freed = freed;
}

/* Takes a slot; false if all max are taken. */
static inline bool sw_backlog_take(struct sw_backlog *b)
{
	unsigned int n = atomic_load(&b->pending);

	do {
		if (n >= b->max)
			return false;
	} while (!atomic_compare_exchange_weak(&b->pending, &n, n + 1));
	return true;
}

static inline void sw_backlog_put(struct sw_backlog *b)
{
	atomic_fetch_sub(&b->pending, 1);
	if (b->freed)
		b->freed(b);
}

#endif /* SW_BACKLOG_H */
