/* SPDX-License-Identifier: MIT */
/*
 * The verbs provider's use of the LAM table (verbs/lam.h), without a
 * device: the privileged token's rewrite refusing an address outside
 * every range and leaving other SGEs alone (the table itself:
 * tests/unit/test_lam_table.c). Built only with the verbs provider.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "front/lam_table.h"
#include "verbs/lam.h"

#define PG 4096ull

static int setup(void **state)
{
	struct ndk_lam_table *t = calloc(1, sizeof(*t));

	assert_non_null(t);
	ndk_lam_table_init(t);
	*state = t;
	return 0;
}

static int teardown(void **state)
{
	struct ndk_lam_table *t = *state;

	ndk_lam_table_fini(t);
	free(t);
	return 0;
}

/* An SGE with the privileged token outside every LAM is refused, and
 * SGEs with other tokens (or no bytes) are left alone. */
static void test_rewrite_outside(void **state)
{
	struct ndk_lam_table *t = *state;
	struct ibv_sge sge[3] = {
		{ .addr = 5 * PG, .length = 10, .lkey = 0x1234 },
		{ .addr = 0, .length = 0, .lkey = NDK_VERBS_PRIVILEGED_TOKEN },
		{ .addr = 7 * PG,
		  .length = 10,
		  .lkey = NDK_VERBS_PRIVILEGED_TOKEN },
	};
	uint64_t cookie;

	assert_false(ndk_vlam_wanted(sge, 2));
	assert_true(ndk_vlam_wanted(sge, 3));
	assert_int_equal(ndk_lam_table_insert(t, 5 * PG, 6 * PG, &cookie), 0);
	assert_int_equal(ndk_vlam_rewrite(t, NULL, sge, 3),
			 STATUS_ACCESS_VIOLATION);
	assert_int_equal(sge[0].lkey, 0x1234);
	assert_int_equal(ndk_vlam_rewrite(t, NULL, sge, 2), STATUS_SUCCESS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_rewrite_outside, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
