/* SPDX-License-Identifier: MIT */
/* Helpers shared by the cmocka unit tests. */
#ifndef NDK_TESTUTIL_H
#define NDK_TESTUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Polls cond(arg) every millisecond until it is true or ms elapse. */
bool tu_wait_until(bool (*cond)(void *arg), void *arg, unsigned int ms);
void tu_sleep_ms(unsigned int ms);
uint64_t tu_now_ms(void);

/*
 * Hex digits to bytes; spaces and other separators are skipped. Fails the
 * running test on an odd number of digits or more than max bytes.
 */
size_t tu_hex2bin(const char *hex, uint8_t *out, size_t max);

/*
 * Makes dir (a mkdtemp template, changed in place) this process's
 * NDK_RUNTIME_DIR, so that its registry files and counters are its own:
 * 0, or -1 if the directory cannot be made. tu_private_runtime_done
 * removes it and returns ret, or 1 if ret is 0 and the removal failed.
 */
int tu_private_runtime(char *dir);
int tu_private_runtime_done(const char *dir, int ret);

/* One xorshift32 step: reproducible test data from a per-test seed. */
uint32_t tu_xorshift(uint32_t *state);

#endif
