/* SPDX-License-Identifier: MIT */
/*
 * ndk_copy (core/compiler.h), the data path's copy of SGE lists and small
 * payloads: every length from 0 to past its inline range, at every
 * alignment of source and destination, copies exactly those bytes and
 * touches none around them.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "core/compiler.h"
#include "testutil.h"

#define MAXLEN 80 /* past the 32 bytes copied inline */
#define GUARD  16

static void test_lengths_and_alignments(void **state)
{
	uint8_t src[MAXLEN + 2 * GUARD], dst[MAXLEN + 2 * GUARD];
	uint8_t want[sizeof(dst)];
	uint32_t seed = 0x9e3779b9;

	(void)state;
	for (size_t len = 0; len <= MAXLEN; len++) {
		for (size_t so = 0; so < 8; so++) {
			for (size_t d_o = 0; d_o < 8; d_o++) {
				for (size_t i = 0; i < sizeof(src); i++)
					src[i] = (uint8_t)tu_xorshift(&seed);
				memset(dst, 0xa5, sizeof(dst));
				memcpy(want, dst, sizeof(want));
				memcpy(want + GUARD + d_o, src + GUARD + so,
				       len);
				ndk_copy(dst + GUARD + d_o, src + GUARD + so,
					 len);
				assert_memory_equal(dst, want, sizeof(dst));
			}
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lengths_and_alignments),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
