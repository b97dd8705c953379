/* SPDX-License-Identifier: MIT */
/* Helpers shared by the cmocka unit tests. */
#ifndef NDK_TESTUTIL_H
#define NDK_TESTUTIL_H

#include <stdbool.h>
#include <stdint.h>

/* Polls cond(arg) every millisecond until it is true or ms elapse. */
bool tu_wait_until(bool (*cond)(void *arg), void *arg, unsigned int ms);
void tu_sleep_ms(unsigned int ms);
uint64_t tu_now_ms(void);

#endif
