/* SPDX-License-Identifier: MIT */
/*
 * The key byte the verbs provider gives a memory window at each bind
 * (verbs/keys.h): the device's index kept, a random byte that is never the
 * current one, so a peer that saw one token cannot tell the next
 * (docs/security.md, Memory tokens). Built only with the verbs provider.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdint.h>
#include "verbs/keys.h"

static void test_next_rkey(void **state)
{
	const unsigned int binds = 25600;
	unsigned int n[256] = { 0 }, delta[256] = { 0 }, i;
	uint32_t rkey = 0x123456ff, next;

	(void)state;
	for (i = 0; i < binds; i++) {
		assert_int_equal(ndk_vkeys_next_rkey(rkey, &next), 0);
		assert_int_equal(next >> 8, 0x123456);
		assert_int_not_equal(next, rkey);
		n[next & 0xff]++;
		delta[(uint8_t)(next - rkey)]++;
		rkey = next;
	}
	/* 100 of each expected: not a counter, every value comes up. */
	for (i = 0; i < 256; i++) {
		assert_in_range(n[i], 45, 160);
		assert_true(delta[i] < 160);
	}
	assert_int_equal(delta[0], 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_next_rkey),
	};

	return cmocka_run_group_tests_name("verbs_mw_key", tests, NULL, NULL);
}
