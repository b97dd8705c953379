/* SPDX-License-Identifier: MIT */
/*
 * A consumer busy-polling an empty CQ yields its core now and then
 * (NDK_POLL_YIELD): several polling QPs on few cores take turns, and the
 * threads that fill the CQ (the engine, a device's kernel threads) run.
 * Kept per CQ under its lock; every provider's CQ uses it.
 */
#ifndef NDK_CORE_POLL_YIELD_H
#define NDK_CORE_POLL_YIELD_H

#include <stdbool.h>
#include "core/config.h"

struct ndk_poll_yield {
	unsigned int empty_polls; /* polls in a row that found nothing */
	unsigned int every; /* NDK_POLL_YIELD, read at create; 0: never */
};

static inline void ndk_poll_yield_init(struct ndk_poll_yield *y)
{
	y->empty_polls = 0;
	y->every =
		(unsigned int)ndk_config_u64("NDK_POLL_YIELD", 32, 0, 1000000);
}

/* A poll returned got results: true when the caller should yield once it
 * dropped the CQ's lock. */
static inline bool ndk_poll_yield_note(struct ndk_poll_yield *y,
				       unsigned long got)
{
	if (got || !y->every) {
		y->empty_polls = 0;
		return false;
	}
	if (++y->empty_polls < y->every)
		return false;
	y->empty_polls = 0;
	return true;
}

#endif
