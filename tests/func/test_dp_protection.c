/* SPDX-License-Identifier: MIT */
/*
 * Remote accesses the target refuses, between two libndk QPs on lo: below
 * an MR's base, past its end, without the remote right, to another PD's
 * MR, past a window's end inside a larger MR. The target Terminates, both
 * ends see one disconnect event, a refused Read completes with
 * STATUS_REMOTE_RESOURCES, and not one byte lands outside the range
 * (guard bytes around it stay).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>
#include "dp_pair.h"
#include "testutil.h"

static void expect_terminated(void)
{
	if (!tu_wait_until(disc_seen, &P, WAIT_MS))
		fail_msg("no disconnect event at the target");
	if (!tu_wait_until(disc_seen, &A, WAIT_MS))
		fail_msg("no disconnect event at the initiator");
	tu_sleep_ms(QUIET_MS);
	assert_int_equal(atomic_load(&A.disc), 1);
	assert_int_equal(atomic_load(&P.disc), 1);
	disconnect(A.conn);
	disconnect(P.conn);
	assert_int_equal(atomic_load(&A.disc), 1);
	assert_int_equal(atomic_load(&P.disc), 1);
}

/*
 * Registers [mem, mem + len) of P with flags (on pd), fills GUARD bytes
 * on each side and the MR itself with 0xa5, and writes wlen bytes at
 * offset off of it from A: the connection ends, the guards stay (and the
 * MR too if whole).
 */
static void write_fault(NDK_PD *pd, ULONG flags, size_t len, int64_t off,
			size_t wlen, bool whole)
{
	uint8_t *mem = P.buf + 65536;
	NDK_MR *mr = reg_range(pd, mem, len, flags);
	UINT32 tok = mr->Dispatch->NdkGetRemoteTokenFromMr(mr);
	NDK_RESULT_EX res[1];
	NDK_SGE s = sge(A.buf, wlen, A.ltok);

	fill(A.buf, wlen, 8);
	memset(mem - GUARD, 0xa5, len + 2 * GUARD);
	assert_int_equal(A.qp->Dispatch->NdkWrite(
				 A.qp, (PVOID)1, &s, 1,
				 (UINT64)(uintptr_t)mem + (UINT64)off, tok, 0),
			 STATUS_SUCCESS);
	expect_terminated();
	/* The Write left: it completed, once, one way or the other. */
	assert_int_equal(poll_cq(cli.cq, res, 1), 1);
	assert_ptr_equal(res[0].RequestContext, (PVOID)1);
	assert_cq_quiet(cli.cq);
	assert_all(mem - GUARD, GUARD, 0xa5, "guard before");
	assert_all(mem + len, GUARD, 0xa5, "guard after");
	if (whole)
		assert_all(mem, len, 0xa5, "the MR");
}

static void test_write_before_base(void **state)
{
	write_fault(srv.pd, NDK_MR_FLAG_ALLOW_REMOTE_WRITE, 65536, -1, 16,
		    true);
}

static void test_write_past_end(void **state)
{
	write_fault(srv.pd, NDK_MR_FLAG_ALLOW_REMOTE_WRITE, 65536, 65536 - 15,
		    16, true);
}

/* Many FPDUs: the ones inside may land, not one byte outside. */
static void test_write_past_end_large(void **state)
{
	write_fault(srv.pd, NDK_MR_FLAG_ALLOW_REMOTE_WRITE, 1 << 20, 1, 1 << 20,
		    false);
}

static void test_write_without_remote_write(void **state)
{
	write_fault(srv.pd,
		    NDK_MR_FLAG_ALLOW_LOCAL_WRITE |
			    NDK_MR_FLAG_ALLOW_REMOTE_READ,
		    65536, 100, 16, true);
}

static void test_write_other_pd(void **state)
{
	NDK_PD *pd2;

	assert_int_equal(
		srv.ad->Dispatch->NdkCreatePd(srv.ad, NULL, NULL, &pd2),
		STATUS_SUCCESS);
	write_fault(pd2,
		    NDK_MR_FLAG_ALLOW_REMOTE_WRITE |
			    NDK_MR_FLAG_ALLOW_REMOTE_READ,
		    65536, 100, 16, true);
}

static void test_read_without_remote_read(void **state)
{
	uint8_t *mem = P.buf + 65536;
	NDK_MR *mr =
		reg_range(srv.pd, mem, 65536, NDK_MR_FLAG_ALLOW_REMOTE_WRITE);
	UINT32 tok = mr->Dispatch->NdkGetRemoteTokenFromMr(mr);
	uint8_t *sink = A.buf + 65536;
	NDK_RESULT_EX res[2];
	NDK_SGE s = sge(sink, 64, A.ltok);

	memset(sink - GUARD, 0xa5, 64 + 2 * GUARD);
	if (srv.info.AdapterFlags &
	    NDK_ADAPTER_FLAG_LIBNDK_REMOTE_READ_UNCHECKED) {
		/* The target announces that it serves it (siw: docs/verbs.md,
		 * Contract differences): the data, and nothing around it. */
		fill(mem + 100, 64, 21);
		assert_int_equal(A.qp->Dispatch->NdkRead(
					 A.qp, (PVOID)1, &s, 1,
					 (UINT64)(uintptr_t)mem + 100, tok, 0),
				 STATUS_SUCCESS);
		assert_int_equal(poll_cq(cli.cq, res, 1), 1);
		expect_result(&res[0], 1, NdkOperationTypeRead, STATUS_SUCCESS);
		assert_memory_equal(sink, mem + 100, 64);
		assert_all(sink - GUARD, GUARD, 0xa5, "before the sink");
		assert_all(sink + 64, GUARD, 0xa5, "after the sink");
		assert_cq_quiet(cli.cq);
		assert_int_equal(atomic_load(&A.disc), 0);
		assert_int_equal(atomic_load(&P.disc), 0);
		return;
	}
	assert_int_equal(A.qp->Dispatch->NdkRead(A.qp, (PVOID)1, &s, 1,
						 (UINT64)(uintptr_t)mem + 100,
						 tok, 0),
			 STATUS_SUCCESS);
	/*
	 * The target's Terminate quotes our Read Request: the Read
	 * completes at once with STATUS_REMOTE_RESOURCES (an error at the
	 * remote QP), exactly once; NdkDisconnect adds nothing.
	 */
	if (!tu_wait_until(disc_seen, &A, WAIT_MS))
		fail_msg("no disconnect event at the initiator");
	assert_int_equal(poll_cq(cli.cq, res, 1), 1);
	expect_result(&res[0], 1, NdkOperationTypeRead,
		      STATUS_REMOTE_RESOURCES);
	assert_cq_quiet(cli.cq);
	expect_terminated();
	assert_cq_quiet(cli.cq);
	assert_all(sink - GUARD, 64 + 2 * GUARD, 0xa5, "read sink");
}

/*
 * A window bound inside P's MR (which allows everything remotely): an
 * access one byte past the window's end is refused although the MR
 * covers it, and the bytes around the window stay.
 */
static void window_fault(bool read)
{
	uint8_t *win = P.buf + 65536, *sink = A.buf + 65536;
	NDK_RESULT_EX res[2];
	NDK_SGE s = sge(read ? sink : A.buf, 16, A.ltok);
	NDK_MW *mw;
	UINT32 wtok;

	memset(win - GUARD, 0xa5, 4096 + 2 * GUARD);
	memset(sink, 0xa5, 16);
	fill(A.buf, 16, 12);
	assert_int_equal(srv.pd->Dispatch->NdkCreateMw(srv.pd, NULL, NULL, &mw),
			 STATUS_SUCCESS);
	assert_int_equal(
		P.qp->Dispatch->NdkBind(P.qp, (PVOID)1, P.mr, mw, win, 4096,
					read ? NDK_OP_FLAG_ALLOW_REMOTE_READ
					     : NDK_OP_FLAG_ALLOW_REMOTE_WRITE),
		STATUS_SUCCESS);
	wtok = mw->Dispatch->NdkGetRemoteTokenFromMw(mw);
	assert_int_equal(poll_cq(srv.cq, res, 1), 1);
	expect_result(&res[0], 1, NdkOperationTypeBind, STATUS_SUCCESS);
	if (read)
		assert_int_equal(A.qp->Dispatch->NdkRead(
					 A.qp, (PVOID)2, &s, 1,
					 (UINT64)(uintptr_t)win + 4096 - 15,
					 wtok, 0),
				 STATUS_SUCCESS);
	else
		assert_int_equal(A.qp->Dispatch->NdkWrite(
					 A.qp, (PVOID)2, &s, 1,
					 (UINT64)(uintptr_t)win + 4096 - 15,
					 wtok, 0),
				 STATUS_SUCCESS);
	expect_terminated();
	assert_int_equal(poll_cq(cli.cq, res, 1), 1);
	assert_ptr_equal(res[0].RequestContext, (PVOID)2);
	if (read)
		assert_int_equal(res[0].Status, STATUS_REMOTE_RESOURCES);
	assert_cq_quiet(cli.cq);
	assert_all(win - GUARD, 4096 + 2 * GUARD, 0xa5, "window and guards");
	assert_all(sink, 16, 0xa5, "read sink");
}

static void test_write_past_window(void **state)
{
	cm_require(cli.info.MaxWindowSize > 0, "memory windows");
	window_fault(false);
}

static void test_read_past_window(void **state)
{
	cm_require(cli.info.MaxWindowSize > 0, "memory windows");
	window_fault(true);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_write_before_base,
						dp_setup, dp_teardown),
		cmocka_unit_test_setup_teardown(test_write_past_end, dp_setup,
						dp_teardown),
		cmocka_unit_test_setup_teardown(test_write_past_end_large,
						dp_setup, dp_teardown),
		cmocka_unit_test_setup_teardown(test_write_without_remote_write,
						dp_setup, dp_teardown),
		cmocka_unit_test_setup_teardown(test_write_other_pd, dp_setup,
						dp_teardown),
		cmocka_unit_test_setup_teardown(test_read_without_remote_read,
						dp_setup, dp_teardown),
		cmocka_unit_test_setup_teardown(test_write_past_window,
						dp_setup, dp_teardown),
		cmocka_unit_test_setup_teardown(test_read_past_window, dp_setup,
						dp_teardown),
	};

	dp_set_env();
	return cmocka_run_group_tests_name("dp_protection", tests, NULL, NULL);
}
