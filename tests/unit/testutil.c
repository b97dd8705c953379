/* SPDX-License-Identifier: MIT */
#include <time.h>
#include "testutil.h"

uint64_t tu_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void tu_sleep_ms(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

bool tu_wait_until(bool (*cond)(void *arg), void *arg, unsigned int ms)
{
	uint64_t end = tu_now_ms() + ms;

	for (;;) {
		if (cond(arg))
			return true;
		if (tu_now_ms() >= end)
			return false;
		tu_sleep_ms(1);
	}
}
