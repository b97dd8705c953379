/* SPDX-License-Identifier: MIT */
/*
 * Every transmit call that the socket takes only part of. With
 * NDK_TEST_SEND_MAX=5 (a test-hook build) each send hands the kernel at
 * most 5 bytes, less than any FPDU header, so every FPDU, the small ones
 * written with one send included, is cut at a different place: Sends and
 * Writes of sizes around the 512-byte line and across several FPDUs, and
 * Read Responses, small and large, with Sends of the responder queued
 * behind them. Every byte lands where it belongs, every request
 * completes once, in order, with success, and the connection stays up.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>
#include "dp_pair.h"
#include "testutil.h"

#define SEND_MAX "5"
#define ROUNDS	 3
#define SLOT	 8192 /* bytes of each buffer per request */

static const size_t sizes[] = { 0, 1, 8, 13, 511, 512, 513, 600, 4096, 5000 };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

/* A Send of A's and a Write of A's for each size, the Writes into the
 * second half of P's buffer; P's receives complete in order with the
 * bytes sent, A's requests in order, all with success. */
static void test_short_sends_and_writes(void **state)
{
	uint8_t *wdst = P.buf + (4u << 20);
	NDK_RESULT_EX res[1];
	unsigned int r, i;

	(void)state;
	for (r = 0; r < ROUNDS; r++) {
		fill(A.buf, NSIZES * SLOT, r + 1);
		memset(P.buf, 0, NSIZES * SLOT);
		memset(wdst, 0, NSIZES * SLOT);
		for (i = 0; i < NSIZES; i++)
			post_recv(P.qp, i, P.buf + i * SLOT, SLOT, P.ltok);
		for (i = 0; i < NSIZES; i++) {
			NDK_SGE w = sge(A.buf + i * SLOT, sizes[i], A.ltok);

			post_send(A.qp, 2 * i, A.buf + i * SLOT, sizes[i],
				  A.ltok, 0);
			assert_int_equal(
				A.qp->Dispatch->NdkWrite(
					A.qp, (PVOID)(uintptr_t)(2 * i + 1), &w,
					sizes[i] ? 1 : 0,
					(UINT64)(uintptr_t)(wdst + i * SLOT),
					P.rtok, 0),
				STATUS_SUCCESS);
		}
		for (i = 0; i < 2 * NSIZES; i++) {
			assert_int_equal(poll_cq(cli.cq, res, 1), 1);
			expect_result(&res[0], i,
				      i % 2 ? NdkOperationTypeWrite
					    : NdkOperationTypeSend,
				      STATUS_SUCCESS);
		}
		for (i = 0; i < NSIZES; i++) {
			assert_int_equal(poll_cq(srv.cq, res, 1), 1);
			expect_received(&res[0], i, P.buf + i * SLOT,
					A.buf + i * SLOT, sizes[i]);
		}
		/* A Send behind the last Write has the Writes placed. */
		placed_by_send();
		for (i = 0; i < NSIZES; i++)
			assert_memory_equal(wdst + i * SLOT, A.buf + i * SLOT,
					    sizes[i]);
		assert_cq_quiet(srv.cq);
	}
	assert_int_equal(atomic_load(&A.disc) + atomic_load(&P.disc), 0);
}

/* Reads by A of each size from P, two at a time, with a Send of P's
 * behind every other one: the Responses (P's) and the Sends arrive
 * whole, the Reads complete in order, then the Sends' receives. */
static void test_short_read_responses(void **state)
{
	uint8_t *sdst = A.buf + (4u << 20);
	NDK_RESULT_EX res[1];
	unsigned int r, i, sends, reads, recvs;

	(void)state;
	for (r = 0; r < ROUNDS; r++) {
		fill(P.buf, NSIZES * SLOT, r + 7);
		memset(A.buf, 0, NSIZES * SLOT);
		sends = 0;
		for (i = 0; i < NSIZES; i++) {
			NDK_SGE d = sge(A.buf + i * SLOT, sizes[i], A.ltok);

			assert_int_equal(
				A.qp->Dispatch->NdkRead(
					A.qp, (PVOID)(uintptr_t)i, &d,
					sizes[i] ? 1 : 0,
					(UINT64)(uintptr_t)(P.buf + i * SLOT),
					P.rtok, 0),
				STATUS_SUCCESS);
			if (i % 2)
				continue;
			post_recv(A.qp, 100 + sends, sdst + sends * SLOT, SLOT,
				  A.ltok);
			post_send(P.qp, 100 + sends, P.buf + i * SLOT, 300,
				  P.ltok, 0);
			sends++;
		}
		for (i = 0; i < sends; i++) {
			assert_int_equal(poll_cq(srv.cq, res, 1), 1);
			expect_result(&res[0], 100 + i, NdkOperationTypeSend,
				      STATUS_SUCCESS);
		}
		/* A's CQ: Reads and receives interleave as they arrive;
		 * each kind completes in its own order. */
		reads = recvs = 0;
		while (reads + recvs < NSIZES + sends) {
			assert_int_equal(poll_cq(cli.cq, res, 1), 1);
			if (res[0].Type == NdkOperationTypeRead) {
				expect_result(&res[0], reads,
					      NdkOperationTypeRead,
					      STATUS_SUCCESS);
				assert_memory_equal(A.buf + reads * SLOT,
						    P.buf + reads * SLOT,
						    sizes[reads]);
				reads++;
			} else {
				expect_received(&res[0], 100 + recvs,
						sdst + recvs * SLOT,
						P.buf + 2 * recvs * SLOT, 300);
				recvs++;
			}
		}
		assert_cq_quiet(cli.cq);
	}
	assert_int_equal(atomic_load(&A.disc) + atomic_load(&P.disc), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_short_sends_and_writes,
						dp_setup, dp_teardown),
		cmocka_unit_test_setup_teardown(test_short_read_responses,
						dp_setup, dp_teardown),
	};

	/* Read once, at the first send of the process. */
	setenv("NDK_TEST_SEND_MAX", SEND_MAX, 1);
	cm_software_only();
	dp_set_env();
	return cmocka_run_group_tests_name("dp_short_sends", tests, NULL, NULL);
}
