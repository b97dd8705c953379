/* SPDX-License-Identifier: MIT */
/*
 * NDK_OP_FLAG_DEFER (docs/ndk.md, Deferred processing) through the public
 * API: on the software provider deferred requests wait for the request
 * that ends their chain and then go together, in order (the verbs
 * provider takes the flag as the hint it is and posts each request at
 * once: docs/verbs.md, Queue pairs); on both, a request that fails inline
 * leaves none of the deferred ones behind, long chains of Sends, Writes
 * and Reads complete once each, in order, with their data, an inline
 * request's bytes are taken when it is posted, and a flush completes a
 * chain that was never ended.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include "dp_pair.h"
#include "testutil.h"

static int setup(void **state)
{
	dp_open(8 << 20);
	dp_connect();
	return 0;
}

static void post_send_ctx(uintptr_t ctx, ULONG flags)
{
	assert_int_equal(
		A.qp->Dispatch->NdkSend(A.qp, (PVOID)ctx, NULL, 0, flags),
		STATUS_SUCCESS);
}

/*
 * Deferred Sends wait for the request that ends their chain and then
 * leave together, in order; a request that fails inline sends the
 * deferred ones before it instead, and itself gets no completion.
 */
static void test_defer_chain(void **state)
{
	NDK_SGE big[8];
	ULONG i;

	for (i = 0; i < 6; i++)
		assert_int_equal(P.qp->Dispatch->NdkReceive(
					 P.qp, (PVOID)(uintptr_t)i, NULL, 0),
				 STATUS_SUCCESS);
	for (i = 0; i < 3; i++)
		post_send_ctx(i, NDK_OP_FLAG_DEFER);
	/* Nothing went: neither side completes anything. */
	if (cm_provider_is(&cli, "software")) {
		assert_cq_quiet(srv.cq);
		assert_cq_quiet(cli.cq);
	}
	/* The end of the chain. */
	post_send_ctx(3, 0);
	EXPECT_RESULTS(srv.cq, { 0, NdkOperationTypeReceive, 0 },
		       { 1, NdkOperationTypeReceive, 0 },
		       { 2, NdkOperationTypeReceive, 0 },
		       { 3, NdkOperationTypeReceive, 0 });
	EXPECT_RESULTS(cli.cq, { 0, NdkOperationTypeSend, 0 },
		       { 1, NdkOperationTypeSend, 0 },
		       { 2, NdkOperationTypeSend, 0 },
		       { 3, NdkOperationTypeSend, 0 });

	/* Two deferred, then one with more SGEs than the QP takes. */
	post_send_ctx(4, NDK_OP_FLAG_DEFER);
	post_send_ctx(5, NDK_OP_FLAG_DEFER);
	memset(big, 0, sizeof(big));
	assert_int_equal(A.qp->Dispatch->NdkSend(A.qp, (PVOID)99, big, 8, 0),
			 STATUS_INVALID_PARAMETER);
	EXPECT_RESULTS(srv.cq, { 4, NdkOperationTypeReceive, 0 },
		       { 5, NdkOperationTypeReceive, 0 });
	EXPECT_RESULTS(cli.cq, { 4, NdkOperationTypeSend, 0 },
		       { 5, NdkOperationTypeSend, 0 });
	assert_cq_quiet(cli.cq);
}

/*
 * Where request i of test_defer_long_mixed reads and writes: Send 3k from
 * A's slot 3k into the receive k of P's first MiB, a Write from A's slot
 * into P's second MiB, a Read from P's fifth MiB into A's third.
 */
enum { CHAIN_N = 60, CHAIN_LEN = 3000 };

static void chain_slot(ULONG i, uint8_t **local, uint8_t **remote)
{
	size_t off = (size_t)i * CHAIN_LEN;

	switch (i % 3) {
	case 0:
		*local = A.buf + off;
		*remote = P.buf + i / 3 * CHAIN_LEN;
		break;
	case 1:
		*local = A.buf + off;
		*remote = P.buf + (1 << 20) + off;
		break;
	default:
		*local = A.buf + (2 << 20) + off;
		*remote = P.buf + (4 << 20) + off;
		break;
	}
}

/*
 * 60 deferred requests, Sends, Writes and Reads in turn (more Reads than
 * the ORD of 8), ended by one more Send (CHAIN_N % 3 == 0): every request
 * completes once, in posting order, and every byte lands.
 */
static void test_defer_long_mixed(void **state)
{
	static const NDK_OPERATION_TYPE type[3] = { NdkOperationTypeSend,
						    NdkOperationTypeWrite,
						    NdkOperationTypeRead };
	struct want want[CHAIN_N + 1];
	uint8_t *local, *remote;
	ULONG nrecv = 0, i;

	fill(A.buf, CHAIN_N * CHAIN_LEN, 41);
	fill(P.buf + (4 << 20), CHAIN_N * CHAIN_LEN, 42);
	for (i = 0; i <= CHAIN_N; i++)
		post_recv(P.qp, i, P.buf + i * CHAIN_LEN, CHAIN_LEN, P.ltok);
	for (i = 0; i <= CHAIN_N; i++) {
		ULONG flags = i < CHAIN_N ? NDK_OP_FLAG_DEFER : 0;
		PVOID ctx = (PVOID)(uintptr_t)i;
		NDK_SGE s;
		NTSTATUS st;

		chain_slot(i, &local, &remote);
		s = sge(local, CHAIN_LEN, A.ltok);
		want[i] = (struct want){ i, type[i % 3], STATUS_SUCCESS };
		if (i % 3 == 0) {
			st = A.qp->Dispatch->NdkSend(A.qp, ctx, &s, 1, flags);
			nrecv++;
		} else {
			st = (i % 3 == 2 ? A.qp->Dispatch->NdkRead
					 : A.qp->Dispatch->NdkWrite)(
				A.qp, ctx, &s, 1, (UINT64)(uintptr_t)remote,
				P.rtok, flags);
		}
		assert_int_equal(st, STATUS_SUCCESS);
	}
	for (i = 0; i <= CHAIN_N; i += 16)
		expect_results(cli.cq, want + i, MIN(16u, CHAIN_N + 1 - i));
	for (i = 0; i < nrecv; i++) {
		NDK_RESULT_EX r;

		poll_one_ok(srv.cq, &r, NdkOperationTypeReceive);
		assert_int_equal(r.BytesTransferred, CHAIN_LEN);
	}
	assert_cq_quiet(srv.cq);
	/* Every request's bytes where it put them (the Sends' in order). */
	for (i = 0; i <= CHAIN_N; i++) {
		chain_slot(i, &local, &remote);
		assert_memory_equal(local, remote, CHAIN_LEN);
	}
}

/*
 * An inline Send posted with DEFER: its bytes are taken when it is
 * posted (NDK_OP_FLAG_INLINE), so changing them before the chain ends
 * changes nothing that arrives.
 */
static void test_defer_inline(void **state)
{
	static char msg[32];
	NDK_SGE s = { .VirtualAddress = msg, .Length = sizeof(msg) };
	NDK_RESULT_EX r;

	post_recv(P.qp, 1, P.buf, 4096, P.ltok);
	post_recv(P.qp, 2, P.buf + 4096, 4096, P.ltok);
	memset(msg, 'a', sizeof(msg));
	assert_int_equal(
		A.qp->Dispatch->NdkSend(A.qp, (PVOID)1, &s, 1,
					NDK_OP_FLAG_INLINE | NDK_OP_FLAG_DEFER),
		STATUS_SUCCESS);
	memset(msg, 'b', sizeof(msg));
	assert_int_equal(A.qp->Dispatch->NdkSend(A.qp, (PVOID)2, &s, 1,
						 NDK_OP_FLAG_INLINE),
			 STATUS_SUCCESS);
	memset(msg, 'c', sizeof(msg));
	EXPECT_RESULTS(cli.cq, { 1, NdkOperationTypeSend, 0 },
		       { 2, NdkOperationTypeSend, 0 });
	poll_one_ok(srv.cq, &r, NdkOperationTypeReceive);
	assert_int_equal(r.BytesTransferred, sizeof(msg));
	poll_one_ok(srv.cq, &r, NdkOperationTypeReceive);
	assert_all(P.buf, sizeof(msg), 'a', "the deferred inline Send");
	assert_all(P.buf + 4096, sizeof(msg), 'b', "the Send that ended it");
}

/*
 * A chain the consumer never ends, then NdkFlush: each deferred request
 * completes exactly once, in order, and nothing more comes. On the
 * software provider none of them went (STATUS_CANCELLED); the verbs
 * provider posted them at once, so each either went or was flushed.
 */
static void test_defer_flush_unended(void **state)
{
	enum { N = 5 };
	bool software = cm_provider_is(&cli, "software");
	NDK_RESULT_EX res[N];
	ULONG i;

	for (i = 0; i < N; i++) {
		post_recv(P.qp, i, P.buf + i * 64, 64, P.ltok);
		post_send_ctx(i, NDK_OP_FLAG_DEFER);
	}
	A.qp->Dispatch->NdkFlush(A.qp);
	assert_int_equal(poll_cq(cli.cq, res, N), N);
	for (i = 0; i < N; i++) {
		assert_ptr_equal(res[i].RequestContext, (PVOID)(uintptr_t)i);
		assert_int_equal(res[i].Type, NdkOperationTypeSend);
		if (software || res[i].Status != STATUS_SUCCESS)
			assert_int_equal(res[i].Status, STATUS_CANCELLED);
	}
	assert_cq_quiet(cli.cq);
	if (software)
		assert_cq_quiet(srv.cq);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_defer_chain, setup,
						dp_teardown),
		cmocka_unit_test_setup_teardown(test_defer_long_mixed, setup,
						dp_teardown),
		cmocka_unit_test_setup_teardown(test_defer_inline, setup,
						dp_teardown),
		cmocka_unit_test_setup_teardown(test_defer_flush_unended, setup,
						dp_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
