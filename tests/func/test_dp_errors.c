/* SPDX-License-Identifier: MIT */
/*
 * What the data path reports once something went wrong, the same for
 * every provider and device (docs/ndk.md, Work requests and Flush): a
 * Send larger than its receive fails that receive with
 * STATUS_BUFFER_OVERFLOW; after a remote access error and the
 * disconnect event, initiator requests are refused inline with
 * STATUS_CONNECTION_INVALID; a request accepted before the error became
 * known still completes, at the latest when the consumer flushes.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdatomic.h>
#include <string.h>
#include "dp_pair.h"
#include "testutil.h"

/* A 16-byte receive for a 64-byte Send. */
static void test_send_overflows_small_receive(void **state)
{
	NDK_SGE rs = sge(P.buf, 16, P.ltok);
	NDK_RESULT_EX res[1];

	memset(P.buf, 0x77, 256);
	fill(A.buf, 64, 9);
	assert_int_equal(P.qp->Dispatch->NdkReceive(P.qp, (PVOID)5, &rs, 1),
			 STATUS_SUCCESS);
	post_send(A.qp, 6, A.buf, 64, A.ltok, 0);
	assert_int_equal(poll_cq(srv.cq, res, 1), 1);
	expect_result(&res[0], 5, NdkOperationTypeReceive,
		      STATUS_BUFFER_OVERFLOW);
	/* Nothing was written past the receive buffer. */
	assert_all(P.buf + 16, 256 - 16, 0x77, "past the receive");
	/* The connection ends (docs/ndk.md, Work requests). */
	assert_true(tu_wait_until(disc_seen, &P, WAIT_MS));
}

/* The results of cq, n of them, by RequestContext into by_ctx[ctx]. */
static void collect(NDK_CQ *cq, NDK_RESULT_EX *by_ctx, ULONG nctx, ULONG n)
{
	NDK_RESULT_EX res[8];
	ULONG i;

	assert_true(n <= 8);
	assert_int_equal(poll_cq(cq, res, n), n);
	for (i = 0; i < n; i++) {
		uintptr_t ctx = (uintptr_t)res[i].RequestContext;

		assert_true(ctx < nctx);
		assert_null(by_ctx[ctx].RequestContext);
		by_ctx[ctx] = res[i];
	}
	assert_cq_quiet(cq);
}

/*
 * A Send after the disconnect event: refused inline with
 * STATUS_CONNECTION_INVALID. A verbs QP learns that its connection
 * ended from the device (a failed request, the device's QP error event);
 * where only the peer's disconnect tells (rxe's target, siw's initiator
 * that got a Terminate) it may take the Send, which then completes when
 * the consumer flushes (docs/verbs.md, Queue pairs). True if taken.
 */
static bool post_after(struct side *x, uintptr_t ctx)
{
	NDK_SGE s = sge(x->buf, 64, x->ltok);
	struct cm_host *h = x == &A ? &cli : &srv;
	NTSTATUS st;

	st = x->qp->Dispatch->NdkSend(x->qp, (PVOID)ctx, &s, 1, 0);
	if (st == STATUS_SUCCESS && cm_provider_is(h, "verbs"))
		return true;
	assert_int_equal(st, STATUS_CONNECTION_INVALID);
	return false;
}

/*
 * A Write through a token that names nothing, a Read and a Send right
 * behind it: the target refuses the Write and the connection ends.
 * After the disconnect event no initiator request is taken; each one
 * taken before completes, with its error or, once the consumer flushes,
 * STATUS_CANCELLED; so does a receive that never matched.
 */
static void test_requests_after_remote_error(void **state)
{
	NDK_SGE w = sge(A.buf, 64, A.ltok);
	NDK_SGE r = sge(A.buf + 4096, 64, A.ltok);
	NDK_SGE rr = sge(A.buf + 8192, 64, A.ltok);
	NDK_RESULT_EX by_ctx[8];
	NDK_RESULT_EX pres[1];
	NTSTATUS read_st;
	bool taken_a, taken_p;

	memset(by_ctx, 0, sizeof(by_ctx));
	assert_int_equal(A.qp->Dispatch->NdkReceive(A.qp, (PVOID)4, &rr, 1),
			 STATUS_SUCCESS);
	assert_int_equal(A.qp->Dispatch->NdkWrite(A.qp, (PVOID)1, &w, 1,
						  (UINT64)(uintptr_t)P.buf,
						  P.rtok ^ 0x00ffff00, 0),
			 STATUS_SUCCESS);
	/* Taken, unless the error is known already (a fast target). */
	read_st = A.qp->Dispatch->NdkRead(A.qp, (PVOID)2, &r, 1,
					  (UINT64)(uintptr_t)P.buf, P.rtok, 0);
	if (read_st != STATUS_SUCCESS)
		assert_int_equal(read_st, STATUS_CONNECTION_INVALID);
	assert_true(tu_wait_until(disc_seen, &A, WAIT_MS));
	assert_true(tu_wait_until(disc_seen, &P, WAIT_MS));

	/* Refused inline on both sides: nothing to complete later. */
	taken_a = post_after(&A, 3);
	taken_p = post_after(&P, 6);

	/* Everything taken completes once the consumer flushed. */
	A.qp->Dispatch->NdkFlush(A.qp);
	collect(cli.cq, by_ctx, 8, 2 + (read_st == STATUS_SUCCESS) + taken_a);
	expect_result(&by_ctx[4], 4, NdkOperationTypeReceive, STATUS_CANCELLED);
	/* An iWARP Write completes once sent, before the Terminate. */
	assert_int_equal(by_ctx[1].Type, NdkOperationTypeWrite);
	if (read_st == STATUS_SUCCESS) {
		assert_int_equal(by_ctx[2].Type, NdkOperationTypeRead);
		assert_true(by_ctx[2].Status != STATUS_SUCCESS);
	}
	if (taken_a)
		expect_result(&by_ctx[3], 3, NdkOperationTypeSend,
			      STATUS_CANCELLED);
	/* The target's side: only what it took after the end comes. */
	memset(by_ctx, 0, sizeof(by_ctx));
	P.qp->Dispatch->NdkFlush(P.qp);
	if (taken_p) {
		collect(srv.cq, by_ctx, 8, 1);
		expect_result(&by_ctx[6], 6, NdkOperationTypeSend,
			      STATUS_CANCELLED);
	}
	assert_int_equal(srv.cq->Dispatch->NdkGetCqResultsEx(srv.cq, pres, 1),
			 0);
	assert_cq_quiet(srv.cq);
}

/*
 * NdkFlush of a connected QP with receives and Sends outstanding (the
 * peer posted no receive, so a Send fails there or waits): every one
 * completes exactly once, in order per queue, the receives
 * STATUS_CANCELLED; and the QP takes no initiator request after it.
 */
static void test_flush_completes_everything(void **state)
{
	enum { N = 4 };
	NDK_SGE s = sge(A.buf, 4096, A.ltok);
	NDK_RESULT_EX res[2 * N + 1]; /* N Sends and one after the flush */
	ULONG i, nsend = 0, next_send = 0, next_recv = 0, got;
	NTSTATUS st;

	for (i = 0; i < N; i++) {
		NDK_SGE rr = sge(A.buf + (1 << 20) + i * 4096, 4096, A.ltok);

		assert_int_equal(
			A.qp->Dispatch->NdkReceive(
				A.qp, (PVOID)(uintptr_t)(100 + i), &rr, 1),
			STATUS_SUCCESS);
	}
	/* The first is taken; a later one may find the connection ended
	 * by the peer already (iWARP has no RNR wait). */
	for (i = 0; i < N; i++) {
		st = A.qp->Dispatch->NdkSend(A.qp, (PVOID)(uintptr_t)(200 + i),
					     &s, 1, 0);
		if (st != STATUS_SUCCESS) {
			assert_true(i > 0);
			assert_int_equal(st, STATUS_CONNECTION_INVALID);
			break;
		}
		nsend++;
	}
	A.qp->Dispatch->NdkFlush(A.qp);
	/* A request after the flush is refused, or taken and completes
	 * like the others (the software provider's connection may go on). */
	st = A.qp->Dispatch->NdkSend(A.qp, (PVOID)(uintptr_t)(200 + nsend), &s,
				     1, 0);
	if (st == STATUS_SUCCESS)
		nsend++;
	else
		assert_int_equal(st, STATUS_CONNECTION_INVALID);
	got = poll_cq(cli.cq, res, N + nsend);
	if (got == N + nsend - 1 && st == STATUS_SUCCESS) {
		/* The peer's Terminate for the first Send can end the
		 * connection after the last Send was taken and before it
		 * left: it then waits for the next flush, as every request
		 * does once a connection ended (docs/ndk.md, Flush). The
		 * order check below proves it is that last Send. */
		A.qp->Dispatch->NdkFlush(A.qp);
		got += poll_cq(cli.cq, res + got, 1);
	}
	assert_int_equal(got, N + nsend);
	for (i = 0; i < N + nsend; i++) {
		uintptr_t ctx = (uintptr_t)res[i].RequestContext;

		if (ctx >= 200) {
			/* In order, each once (an iWARP Send completes
			 * once sent, even if the peer then refuses it). */
			assert_int_equal(ctx, 200 + next_send);
			assert_int_equal(res[i].Type, NdkOperationTypeSend);
			next_send++;
		} else {
			assert_int_equal(ctx, 100 + next_recv);
			assert_int_equal(res[i].Status, STATUS_CANCELLED);
			next_recv++;
		}
	}
	assert_cq_quiet(cli.cq);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_send_overflows_small_receive, dp_setup,
			dp_teardown),
		cmocka_unit_test_setup_teardown(
			test_requests_after_remote_error, dp_setup,
			dp_teardown),
		cmocka_unit_test_setup_teardown(test_flush_completes_everything,
						dp_setup, dp_teardown),
	};

	dp_set_env();
	return cmocka_run_group_tests_name("dp_errors", tests, NULL, NULL);
}
