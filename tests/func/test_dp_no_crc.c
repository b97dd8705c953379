/* SPDX-License-Identifier: MIT */
/*
 * MPA without CRC (NDK_MPA_CRC=0 on both sides, RFC 5044 4: the CRC field
 * is still there, zero): Sends of every small size (each pad length, FPDUs
 * whole in one read and split across reads), Writes and Reads from one
 * byte to several FPDUs arrive with exactly their bytes, busy-polled and
 * with the engine receiving. The other data-path tests run with CRC on.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>
#include "dp_pair.h"
#include "testutil.h"

#define SMALL_MAX 200
#define BIG	  (200 * 1024 + 3)

/* A sends every size 0..SMALL_MAX to P, each checked on arrival; the
 * receives are polled as they come, or after all were sent (then many
 * FPDUs wait in the socket together). */
static void sends(bool poll_each)
{
	NDK_RESULT_EX res[1];
	size_t n;

	fill(A.buf, SMALL_MAX, 7);
	for (n = 0; n <= SMALL_MAX; n++)
		post_recv(P.qp, n, P.buf + n * SMALL_MAX, SMALL_MAX, P.ltok);
	for (n = 0; n <= SMALL_MAX; n++) {
		post_send(A.qp, n, A.buf, n, A.ltok, 0);
		if (!poll_each)
			continue;
		assert_int_equal(poll_cq(srv.cq, res, 1), 1);
		expect_received(res, n, P.buf + n * SMALL_MAX, A.buf, n);
		poll_one_ok(cli.cq, res, NdkOperationTypeSend);
	}
	if (poll_each)
		return;
	for (n = 0; n <= SMALL_MAX; n++) {
		assert_int_equal(poll_cq(srv.cq, res, 1), 1);
		expect_received(res, n, P.buf + n * SMALL_MAX, A.buf, n);
		poll_one_ok(cli.cq, res, NdkOperationTypeSend);
	}
}

static void test_sends(void **state)
{
	(void)state;
	sends(true);
	sends(false);
}

/*
 * Writes of 1 byte to several FPDUs land exactly; Reads bring them back.
 * Each size has its own target and read-back ranges, set up before the
 * connection exists (TSan cannot see ordering through the socket).
 */
static void test_write_read(void **state)
{
	static const size_t sizes[] = { 1, 3, 8, 64, 4095, 4096, 4097, BIG };
	enum { N = sizeof(sizes) / sizeof(sizes[0]) };
	uint8_t *src = A.buf, *dst[N], *back[N];
	NDK_RESULT_EX res[1];
	size_t i, off = GUARD;

	(void)state;
	fill(src, BIG, 11);
	for (i = 0; i < N; i++) {
		dst[i] = P.buf + off;
		back[i] = A.buf + (1 << 20) + off;
		memset(dst[i] - GUARD, 0x5a, sizes[i] + 2 * GUARD);
		memset(back[i], 0, sizes[i]);
		off += sizes[i] + 2 * GUARD;
	}
	dp_connect();
	for (i = 0; i < N; i++) {
		size_t n = sizes[i];
		NDK_SGE s = sge(src, n, A.ltok), b = sge(back[i], n, A.ltok);

		assert_int_equal(A.qp->Dispatch->NdkWrite(
					 A.qp, (PVOID)i, &s, 1,
					 (UINT64)(uintptr_t)dst[i], P.rtok, 0),
				 STATUS_SUCCESS);
		poll_one_ok(cli.cq, res, NdkOperationTypeWrite);
		placed_by_send();
		assert_memory_equal(dst[i], src, n);
		assert_all(dst[i] - GUARD, GUARD, 0x5a, "before the Write");
		assert_all(dst[i] + n, GUARD, 0x5a, "after the Write");
		assert_int_equal(A.qp->Dispatch->NdkRead(
					 A.qp, (PVOID)i, &b, 1,
					 (UINT64)(uintptr_t)dst[i], P.rtok, 0),
				 STATUS_SUCCESS);
		poll_one_ok(cli.cq, res, NdkOperationTypeRead);
		assert_int_equal(res->BytesTransferred, n);
		assert_memory_equal(back[i], src, n);
	}
}

static int setup_no_crc(void **state)
{
	setenv("NDK_MPA_CRC", "0", 1);
	return dp_setup(state);
}

static int setup_hosts_no_crc(void **state)
{
	setenv("NDK_MPA_CRC", "0", 1);
	return dp_setup_hosts(state);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_sends, setup_no_crc,
						dp_teardown),
		cmocka_unit_test_setup_teardown(
			test_write_read, setup_hosts_no_crc, dp_teardown),
	};

	dp_set_env();
	return cmocka_run_group_tests_name("dp_no_crc", tests, NULL, NULL);
}
