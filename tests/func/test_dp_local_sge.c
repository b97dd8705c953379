/* SPDX-License-Identifier: MIT */
/*
 * Local SGEs of Sends, Writes, Read sinks and Receives that name no MR,
 * or run past theirs: the request completes with an error and sends or
 * writes nothing, and the connection stays up; a Read scatters into
 * several sink SGEs of two MRs.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>
#include "dp_pair.h"
#include "testutil.h"

static void test_bad_local_sge_send(void **state)
{
	/* A local-only region of 4 KiB inside A's buffer. */
	uint8_t *sub = A.buf + (1 << 20);
	UINT32 stok = local_mr_token(&cli, sub, 4096);
	NDK_RESULT_EX res[8];
	NDK_SGE two[2];

	fill(A.buf, 8192, 3);
	post_recv(P.qp, 1, P.buf, 65536, P.ltok);
	post_recv(P.qp, 2, P.buf + 65536, 65536, P.ltok);
	/* A token that names nothing. */
	post_send(A.qp, 10, A.buf, 100, A.ltok ^ 0x00ffff00, 0);
	/* One byte past the end of the MR. */
	post_send(A.qp, 11, sub + 4096 - 100, 101, stok, 0);
	post_send(A.qp, 12, A.buf, 300, A.ltok, 0);
	/* A good SGE, then a bad one. */
	two[0] = sge(A.buf, 500, A.ltok);
	two[1] = sge(A.buf + 500, 500, A.ltok ^ 0x00ffff00);
	assert_int_equal(A.qp->Dispatch->NdkSend(A.qp, (PVOID)13, two, 2, 0),
			 STATUS_SUCCESS);
	post_send(A.qp, 14, A.buf + 1000, 400, A.ltok, 0);
	/* Failures still complete with SILENT_SUCCESS. */
	post_send(A.qp, 15, A.buf, 100, A.ltok ^ 0x00ffff00,
		  NDK_OP_FLAG_SILENT_SUCCESS);

	EXPECT_RESULTS(cli.cq,
		       { 10, NdkOperationTypeSend, STATUS_ACCESS_VIOLATION },
		       { 11, NdkOperationTypeSend, STATUS_ACCESS_VIOLATION },
		       { 12, NdkOperationTypeSend, STATUS_SUCCESS },
		       { 13, NdkOperationTypeSend, STATUS_ACCESS_VIOLATION },
		       { 14, NdkOperationTypeSend, STATUS_SUCCESS },
		       { 15, NdkOperationTypeSend, STATUS_ACCESS_VIOLATION });
	/* Nothing went out for the bad ones: the good ones match up. */
	assert_int_equal(poll_cq(srv.cq, res, 2), 2);
	expect_received(&res[0], 1, P.buf, A.buf, 300);
	expect_received(&res[1], 2, P.buf + 65536, A.buf + 1000, 400);
	assert_cq_quiet(srv.cq);
	assert_int_equal(atomic_load(&A.disc) + atomic_load(&P.disc), 0);
}

/*
 * Guards against a fixed bug, "partial Send on a late bad SGE": the SGEs
 * of a Send were checked one FPDU at a time (src/sw/dp_tx.c
 * fpdu_add_sges, called per FPDU), so a bad range that starts beyond the
 * first FPDU was found only after earlier FPDUs of the message went out
 * without L. The request completed STATUS_ACCESS_VIOLATION, but the peer
 * held a half-received message and refused the next Send (same MSN, MO
 * 0) with a Terminate (invalid MO): here it must arrive whole.
 */
static void test_bad_local_sge_late_in_send(void **state)
{
	uint8_t *sub = A.buf + (1 << 20);
	size_t sub_len = 256 << 10; /* several FPDUs even on lo */
	UINT32 stok = local_mr_token(&cli, sub, sub_len);
	NDK_RESULT_EX res[4];

	fill(A.buf, 4096, 4);
	post_recv(P.qp, 1, P.buf, 1 << 20, P.ltok);
	post_recv(P.qp, 2, P.buf + (1 << 20), 1 << 20, P.ltok);
	/* Runs one byte past the end of the MR. */
	post_send(A.qp, 10, sub, sub_len + 1, stok, 0);
	post_send(A.qp, 11, A.buf, 1000, A.ltok, 0);
	EXPECT_RESULTS(cli.cq,
		       { 10, NdkOperationTypeSend, STATUS_ACCESS_VIOLATION },
		       { 11, NdkOperationTypeSend, STATUS_SUCCESS });
	assert_int_equal(poll_cq(srv.cq, res, 1), 1);
	expect_received(&res[0], 1, P.buf, A.buf, 1000);
	assert_int_equal(atomic_load(&A.disc) + atomic_load(&P.disc), 0);
}

/* A Read whose sink SGE is bad completes with an error, writes nothing. */
static void test_bad_local_sge_read(void **state)
{
	uint8_t *sub = A.buf + (1 << 20);
	UINT32 stok = local_mr_token(&cli, sub, 4096);
	NDK_SGE s;

	memset(A.buf, 0xa5, 8192);
	memset(sub, 0xa5, 8192);
	/* A sink token that names nothing. */
	s = sge(A.buf, 64, A.ltok ^ 0x00ffff00);
	assert_int_equal(A.qp->Dispatch->NdkRead(A.qp, (PVOID)1, &s, 1,
						 (UINT64)(uintptr_t)P.buf,
						 P.rtok, 0),
			 STATUS_SUCCESS);
	/* A sink one byte past the end of its MR. */
	s = sge(sub + 4096 - 63, 64, stok);
	assert_int_equal(A.qp->Dispatch->NdkRead(A.qp, (PVOID)2, &s, 1,
						 (UINT64)(uintptr_t)P.buf,
						 P.rtok, 0),
			 STATUS_SUCCESS);
	EXPECT_RESULTS(cli.cq,
		       { 1, NdkOperationTypeRead, STATUS_ACCESS_VIOLATION },
		       { 2, NdkOperationTypeRead, STATUS_ACCESS_VIOLATION });
	assert_all(A.buf, 8192, 0xa5, "bad-token sink");
	assert_all(sub + 4096, 4096, 0xa5, "past the sink MR");
	assert_int_equal(atomic_load(&A.disc) + atomic_load(&P.disc), 0);
}

/*
 * A Read into three sink SGEs of two MRs: the responses (several FPDUs)
 * are scattered across them. The source is filled before the connection
 * exists.
 */
static void test_read_multi_sge_sink(void **state)
{
	uint8_t *src = P.buf + (1 << 20), *sub = A.buf + (2 << 20);
	UINT32 stok = local_mr_token(&cli, sub, 65536);
	size_t total = 150000;
	NDK_SGE s[3] = { sge(A.buf + 4096, 1000, A.ltok), sge(sub, 50000, stok),
			 sge(A.buf + (1 << 20), total - 51000, A.ltok) };

	cm_require(cli.info.MaxReadRequestSge >= 2, "Reads into two SGEs");
	fill(src, total, 13);
	A.qp = big_qp(&cli);
	P.qp = big_qp(&srv);
	connect_sides(&A, &P);
	assert_int_equal(A.qp->Dispatch->NdkRead(A.qp, (PVOID)1, s, 3,
						 (UINT64)(uintptr_t)src, P.rtok,
						 0),
			 STATUS_SUCCESS);
	EXPECT_RESULTS(cli.cq, { 1, NdkOperationTypeRead, STATUS_SUCCESS });
	assert_memory_equal(A.buf + 4096, src, 1000);
	assert_memory_equal(sub, src + 1000, 50000);
	assert_memory_equal(A.buf + (1 << 20), src + 51000, total - 51000);
	assert_int_equal(A.buf[4096 + 1000], 0);
	assert_int_equal(sub[50000], 0);
}

/* A Write with a bad local SGE: an error, and nothing is written. */
static void test_bad_local_sge_write(void **state)
{
	NDK_RESULT_EX res[4];
	NDK_SGE s = sge(A.buf, 100, A.ltok ^ 0x00ffff00);

	assert_int_equal(
		A.qp->Dispatch->NdkWrite(A.qp, (PVOID)1, &s, 1,
					 (UINT64)(uintptr_t)(P.buf + 131072),
					 P.rtok, 0),
		STATUS_SUCCESS);
	/* The Send behind it orders whatever the Write placed. */
	post_recv(P.qp, 5, NULL, 0, P.ltok);
	assert_int_equal(A.qp->Dispatch->NdkSend(A.qp, (PVOID)2, NULL, 0, 0),
			 STATUS_SUCCESS);
	EXPECT_RESULTS(cli.cq,
		       { 1, NdkOperationTypeWrite, STATUS_ACCESS_VIOLATION },
		       { 2, NdkOperationTypeSend, STATUS_SUCCESS });
	assert_int_equal(poll_cq(srv.cq, res, 1), 1);
	expect_result(&res[0], 5, NdkOperationTypeReceive, STATUS_SUCCESS);
	assert_all(P.buf + 131072, 4096, 0, "write target");
	assert_int_equal(atomic_load(&A.disc) + atomic_load(&P.disc), 0);
}

/* A receive with a bad SGE completes with an error when data arrives. */
static void test_bad_local_sge_receive(void **state)
{
	NDK_RESULT_EX res[4];

	/* The device finds a receive's bad SGE when data comes; on verbs
	 * the connection then ends, as on hardware (docs/verbs.md, Queue
	 * pairs), which this does not look at. */
	memset(P.buf, 0x5a, 8192);
	post_recv(P.qp, 1, P.buf, 4096, P.ltok ^ 0x00ffff00);
	post_recv(P.qp, 2, P.buf + 4096, 4096, P.ltok);
	/* Posting is not checked: nothing completes before data comes. */
	assert_cq_quiet(srv.cq);
	fill(A.buf, 100, 5);
	post_send(A.qp, 10, A.buf, 100, A.ltok, 0);
	assert_int_equal(poll_cq(srv.cq, res, 1), 1);
	assert_ptr_equal(res[0].RequestContext, (PVOID)1);
	assert_int_equal(res[0].Type, NdkOperationTypeReceive);
	assert_int_equal(res[0].Status, STATUS_ACCESS_VIOLATION);
	assert_all(P.buf, 8192, 0x5a, "receive buffer");
	/* The second receive is still there until a flush takes it. */
	P.qp->Dispatch->NdkFlush(P.qp);
	assert_int_equal(poll_cq(srv.cq, res, 1), 1);
	expect_result(&res[0], 2, NdkOperationTypeReceive, STATUS_CANCELLED);
	assert_cq_quiet(srv.cq);
}

/* A receive SGE running past the end of its MR: the bytes past it stay. */
static void test_receive_sge_past_mr(void **state)
{
	uint8_t *sub = P.buf + 65536;
	UINT32 stok = local_mr_token(&srv, sub, 4096);
	NDK_RESULT_EX res[4];

	/* On verbs the connection ends (docs/verbs.md, Queue pairs). */
	memset(sub + 4096, 0x5a, 4096);
	post_recv(P.qp, 1, sub + 4096 - 100, 200, stok);
	fill(A.buf, 200, 6);
	post_send(A.qp, 10, A.buf, 200, A.ltok, 0);
	assert_int_equal(poll_cq(srv.cq, res, 1), 1);
	assert_ptr_equal(res[0].RequestContext, (PVOID)1);
	assert_int_equal(res[0].Status, STATUS_ACCESS_VIOLATION);
	assert_all(sub + 4096, 4096, 0x5a, "past the MR");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_bad_local_sge_send,
						dp_setup, dp_teardown),
		cmocka_unit_test_setup_teardown(test_bad_local_sge_late_in_send,
						dp_setup, dp_teardown),
		cmocka_unit_test_setup_teardown(test_bad_local_sge_read,
						dp_setup, dp_teardown),
		cmocka_unit_test_setup_teardown(test_read_multi_sge_sink,
						dp_setup_hosts, dp_teardown),
		cmocka_unit_test_setup_teardown(test_bad_local_sge_write,
						dp_setup, dp_teardown),
		cmocka_unit_test_setup_teardown(test_bad_local_sge_receive,
						dp_setup, dp_teardown),
		cmocka_unit_test_setup_teardown(test_receive_sge_past_mr,
						dp_setup, dp_teardown),
	};

	dp_set_env();
	return cmocka_run_group_tests_name("dp_local_sge", tests, NULL, NULL);
}
