/* SPDX-License-Identifier: MIT */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
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

size_t tu_hex2bin(const char *hex, uint8_t *out, size_t max)
{
	size_t n = 0;
	int hi = -1;

	for (; *hex; hex++) {
		int v;

		if (*hex >= '0' && *hex <= '9')
			v = *hex - '0';
		else if (*hex >= 'a' && *hex <= 'f')
			v = *hex - 'a' + 10;
		else if (*hex >= 'A' && *hex <= 'F')
			v = *hex - 'A' + 10;
		else
			continue;
		if (hi < 0) {
			hi = v;
			continue;
		}
		assert_true(n < max);
		out[n++] = (uint8_t)(hi << 4 | v);
		hi = -1;
	}
	assert_int_equal(hi, -1);
	return n;
}

uint32_t tu_xorshift(uint32_t *state)
{
	uint32_t x = *state;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	*state = x;
	return x;
}

int tu_private_runtime(char *dir)
{
	if (!mkdtemp(dir))
		return -1;
	setenv("NDK_RUNTIME_DIR", dir, 1);
	return 0;
}

int tu_private_runtime_done(const char *dir, int ret)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd))
		ret = ret ? ret : 1;
	return ret;
}
