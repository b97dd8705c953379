/* SPDX-License-Identifier: MIT */
/*
 * Closing a QP while a token is still bound through it: a fast-registered
 * MR nobody invalidated (a type 2 window on rxe) and a bound memory
 * window. The close completes at once, and the MR and the window work
 * again on the next connection (docs/verbs.md, Fast registration and
 * Memory windows: Linux 6.1's rxe holds the QP for as long as a window
 * is bound to it, so destroying it first waits 50 s and logs a kernel
 * warning).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>
#include "dp_pair.h"
#include "testutil.h"

/* A QP's close may take this long (the engine, TSan, the guest). */
#define CLOSE_MS 10000

static int setup(void **state)
{
	dp_open(16 << 20);
	dp_connect();
	return 0;
}

/* Closes P's connector and then its QP, which must finish within
 * CLOSE_MS; A sees the disconnect, and its side goes too. */
static void close_p_with_bound_token(void)
{
	uint64_t t0;

	cm_close_connector(P.conn);
	P.conn = NULL;
	t0 = tu_now_ms();
	assert_int_equal(TOOL_CLOSE(P.qp), STATUS_SUCCESS);
	P.qp = NULL;
	if (tu_now_ms() - t0 > CLOSE_MS)
		fail_msg("NdkCloseQp took %llu ms with a token bound",
			 (unsigned long long)(tu_now_ms() - t0));
	assert_true(tu_wait_until(disc_seen, &A, WAIT_MS));
	assert_int_equal(TOOL_CLOSE(A.conn), STATUS_SUCCESS);
	assert_int_equal(TOOL_CLOSE(A.qp), STATUS_SUCCESS);
	A.conn = NULL;
	A.qp = NULL;
}

/* A's Write of len bytes (pattern seed) through tok at va lands at dst. */
static void write_lands(uint64_t va, UINT32 tok, uint8_t *dst, size_t len,
			unsigned int seed)
{
	NDK_SGE s = sge(A.buf, len, A.ltok);

	fill(A.buf, len, seed);
	memset(dst, 0, len);
	assert_int_equal(A.qp->Dispatch->NdkWrite(A.qp, NULL, &s, 1, va, tok,
						  NDK_OP_FLAG_SILENT_SUCCESS),
			 STATUS_SUCCESS);
	placed_by_send();
	assert_memory_equal(dst, A.buf, len);
}

/*
 * A fast-registered MR, used once and never invalidated, when its QP
 * closes. On the next connection it is invalidated and fast-registered
 * again, and a Write through the new token lands.
 */
static void test_close_qp_with_fast_registered_mr(void **state)
{
	uint8_t *mem = P.buf + (8 << 20); /* page-aligned, registered */
	uint64_t base = fr_base(mem, 0x700000);
	NDK_RESULT_EX res[1];
	union lam1 u;
	NDK_MR *fr;
	UINT32 tok, tok2;
	PMDL mdl;

	cm_require(srv.info.FRMRPageCount > 0, "fast registration");
	mdl = lam_of(mem, PAGE_SIZE, &u);
	fr = fast_register_page(&u, base, &tok);
	poll_one_ok(srv.cq, res, NdkOperationTypeFastRegister);
	write_lands(base + 64, tok, mem + 64, 256, 5);

	close_p_with_bound_token();
	A.qp = big_qp(&cli);
	P.qp = big_qp(&srv);
	connect_sides(&A, &P);

	assert_int_equal(
		P.qp->Dispatch->NdkInvalidate(P.qp, (PVOID)2, &fr->Header, 0),
		STATUS_SUCCESS);
	poll_one_ok(srv.cq, res, NdkOperationTypeInvalidate);
	assert_int_equal(P.qp->Dispatch->NdkFastRegister(
				 P.qp, (PVOID)3, fr, 1, u.lam.AdapterPageArray,
				 0, PAGE_SIZE, (PVOID)(uintptr_t)base,
				 NDK_OP_FLAG_ALLOW_REMOTE_WRITE),
			 STATUS_SUCCESS);
	tok2 = fr->Dispatch->NdkGetRemoteTokenFromMr(fr);
	assert_int_not_equal(tok2, tok);
	poll_one_ok(srv.cq, res, NdkOperationTypeFastRegister);
	write_lands(base + 128, tok2, mem + 128, 512, 6);
	assert_int_equal(TOOL_CLOSE(fr), STATUS_SUCCESS);
	srv.ad->Dispatch->NdkReleaseLAM(srv.ad, &u.lam);
	IoFreeMdl(mdl);
}

/*
 * A memory window bound through the QP when it closes. On the next
 * connection the window is bound again, and a Write through its new
 * token lands.
 */
static void test_close_qp_with_bound_window(void **state)
{
	uint8_t *mem = P.buf + (4 << 20);
	NDK_RESULT_EX res[1];
	UINT32 tok, tok2;
	NDK_MW *mw;

	cm_require(srv.info.MaxWindowSize > 0, "memory windows");
	assert_int_equal(srv.pd->Dispatch->NdkCreateMw(srv.pd, NULL, NULL, &mw),
			 STATUS_SUCCESS);
	assert_int_equal(P.qp->Dispatch->NdkBind(
				 P.qp, (PVOID)1, P.mr, mw, mem, PAGE_SIZE,
				 NDK_OP_FLAG_ALLOW_REMOTE_WRITE),
			 STATUS_SUCCESS);
	tok = mw->Dispatch->NdkGetRemoteTokenFromMw(mw);
	poll_one_ok(srv.cq, res, NdkOperationTypeBind);
	write_lands((uint64_t)(uintptr_t)mem, tok, mem, 128, 7);

	close_p_with_bound_token();
	A.qp = big_qp(&cli);
	P.qp = big_qp(&srv);
	connect_sides(&A, &P);

	assert_int_equal(P.qp->Dispatch->NdkBind(
				 P.qp, (PVOID)2, P.mr, mw, mem, PAGE_SIZE,
				 NDK_OP_FLAG_ALLOW_REMOTE_WRITE),
			 STATUS_SUCCESS);
	tok2 = mw->Dispatch->NdkGetRemoteTokenFromMw(mw);
	assert_int_not_equal(tok2, tok);
	poll_one_ok(srv.cq, res, NdkOperationTypeBind);
	write_lands((uint64_t)(uintptr_t)mem + 256, tok2, mem + 256, 256, 8);
	assert_int_equal(TOOL_CLOSE(mw), STATUS_SUCCESS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_close_qp_with_fast_registered_mr, setup,
			dp_teardown),
		cmocka_unit_test_setup_teardown(test_close_qp_with_bound_window,
						setup, dp_teardown),
	};

	return cmocka_run_group_tests_name("window_qp_close", tests, NULL,
					   NULL);
}
