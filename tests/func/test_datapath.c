/* SPDX-License-Identifier: MIT */
/*
 * The data path over a loopback connection, through the public API:
 * Send/Receive, RDMA Write and RDMA Read with patterns over many sizes and
 * multi-SGE lists, ordering, read limits, and a bad remote token ending
 * the connection with a Terminate.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <net/if.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "dp_pair.h"
#include "testutil.h"

/* A connected pair with 32 MiB on each side. */
static int setup(void **state)
{
	dp_open(32 << 20);
	dp_connect();
	return 0;
}

static void test_send_receive_sizes(void **state)
{
	static const size_t sizes[] = { 0,     1,	3,	 4,
					1000,  4095,	4096,	 65536,
					65537, 1 << 20, 16 << 20 };
	size_t i;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t n = sizes[i];
		NDK_SGE rs = sge(P.buf, P.len, P.ltok);

		/* rxe: 8 MiB messages at most. */
		if (n > cli.info.MaxTransferLength)
			continue;
		NDK_SGE ss = sge(A.buf, n, A.ltok);
		NDK_RESULT_EX res[2];

		fill(A.buf, n, (unsigned int)i);
		memset(P.buf, 0xee, n + 16);
		assert_int_equal(
			P.qp->Dispatch->NdkReceive(P.qp, (PVOID)i, &rs, 1),
			STATUS_SUCCESS);
		assert_int_equal(A.qp->Dispatch->NdkSend(A.qp, (PVOID)(i + 100),
							 &ss, 1, 0),
				 STATUS_SUCCESS);
		poll_one_ok(srv.cq, res, NdkOperationTypeReceive);
		assert_int_equal(res[0].BytesTransferred, n);
		assert_ptr_equal(res[0].RequestContext, (PVOID)i);
		assert_memory_equal(P.buf, A.buf, n);
		assert_int_equal(P.buf[n], 0xee); /* nothing past the message */
		poll_one_ok(cli.cq, res, NdkOperationTypeSend);
		assert_ptr_equal(res[0].RequestContext, (PVOID)(i + 100));
	}
}

static void test_multi_sge_and_order(void **state)
{
	enum { N = 32 };
	NDK_SGE rs[3], ss[4];
	NDK_RESULT_EX res[N];
	ULONG k;
	int i;

	fill(A.buf, 4 * 3000, 7);
	for (i = 0; i < N; i++) {
		/* Each receive scatters into three pieces. */
		rs[0] = (NDK_SGE){ .VirtualAddress = P.buf + i * 16384,
				   .Length = 100,
				   .MemoryRegionToken = P.ltok };
		rs[1] = (NDK_SGE){ .VirtualAddress = P.buf + i * 16384 + 200,
				   .Length = 5000,
				   .MemoryRegionToken = P.ltok };
		rs[2] = (NDK_SGE){ .VirtualAddress = P.buf + i * 16384 + 6000,
				   .Length = 8000,
				   .MemoryRegionToken = P.ltok };
		assert_int_equal(P.qp->Dispatch->NdkReceive(
					 P.qp, (PVOID)(intptr_t)i, rs, 3),
				 STATUS_SUCCESS);
	}
	for (i = 0; i < 4; i++)
		ss[i] = (NDK_SGE){ .VirtualAddress = A.buf + i * 3000,
				   .Length = 3000,
				   .MemoryRegionToken = A.ltok };
	for (i = 0; i < N; i++)
		assert_int_equal(A.qp->Dispatch->NdkSend(
					 A.qp, (PVOID)(intptr_t)i, ss, 4, 0),
				 STATUS_SUCCESS);
	k = poll_cq(srv.cq, res, N);
	assert_int_equal(k, N);
	for (i = 0; i < N; i++) {
		uint8_t *r = P.buf + i * 16384;

		/* Receives complete in order, each with all 12000 bytes. */
		assert_ptr_equal(res[i].RequestContext, (PVOID)(intptr_t)i);
		assert_int_equal(res[i].BytesTransferred, 12000);
		assert_memory_equal(r, A.buf, 100);
		assert_memory_equal(r + 200, A.buf + 100, 5000);
		assert_memory_equal(r + 6000, A.buf + 5100, 6900);
	}
	assert_int_equal(poll_cq(cli.cq, res, N), N);
	for (i = 0; i < N; i++)
		assert_ptr_equal(res[i].RequestContext, (PVOID)(intptr_t)i);
}

/*
 * Sends, Writes and Reads of many sizes posted faster than the socket
 * drains: the transmit side gathers several FPDUs per write and finishes
 * partial ones. Every request completes once, in posting order, and every
 * byte lands where it should.
 */
static void test_mixed_queue_in_order(void **state)
{
	enum { N = 150, RECV_MAX = 70001 };
	const size_t wr_base = 8 << 20, rd_src = 30 << 20, rd_dst = 24 << 20;
	NDK_RESULT_EX res[N];
	size_t len[N], nsend = 0, i;
	ULONG k;

	fill(A.buf, 4 << 20, 91);
	fill(P.buf + rd_src, 1 << 20, 92);
	for (i = 0; i < N; i++) {
		NDK_SGE r = sge(P.buf + i * RECV_MAX, RECV_MAX, P.ltok);

		assert_int_equal(P.qp->Dispatch->NdkReceive(
					 P.qp, (PVOID)(uintptr_t)i, &r, 1),
				 STATUS_SUCCESS);
	}
	for (i = 0; i < N; i++) {
		NDK_SGE s = { .VirtualAddress = A.buf + i * 1000,
			      .MemoryRegionToken = A.ltok };
		PVOID ctx = (PVOID)(uintptr_t)i;

		/* Sizes around one loopback FPDU (~64 KiB) and tiny ones. */
		len[i] = (i * 7919) % RECV_MAX;
		s.Length = (ULONG)len[i];
		if (i % 3 == 0) {
			assert_int_equal(
				A.qp->Dispatch->NdkSend(A.qp, ctx, &s, 1, 0),
				STATUS_SUCCESS);
			nsend++;
		} else {
			/* A Write to P, or a Read of up to 4 KiB from P. */
			bool rd = i % 3 == 2;
			uint8_t *remote = rd ? P.buf + rd_src + i * 10
					     : P.buf + wr_base + i * 80000;

			if (rd) {
				len[i] %= 4096;
				s.Length = (ULONG)len[i];
				s.VirtualAddress = A.buf + rd_dst + i * 4096;
			}
			assert_int_equal((rd ? A.qp->Dispatch->NdkRead
					     : A.qp->Dispatch->NdkWrite)(
						 A.qp, ctx, &s, 1,
						 (UINT64)(uintptr_t)remote,
						 P.rtok, 0),
					 STATUS_SUCCESS);
		}
	}
	assert_int_equal(poll_cq(cli.cq, res, N), N);
	assert_int_equal(cli.cq->Dispatch->NdkGetCqResultsEx(cli.cq, res, 1),
			 0);
	for (i = 0; i < N; i++) {
		assert_ptr_equal(res[i].RequestContext, (PVOID)(uintptr_t)i);
		assert_int_equal(res[i].Status, STATUS_SUCCESS);
		assert_int_equal(res[i].BytesTransferred, len[i]);
	}
	/* The Sends land in order; a Write before a Send is placed before
	 * the Send's receive completes (one ordered stream). */
	k = poll_cq(srv.cq, res, (ULONG)nsend);
	assert_int_equal(k, nsend);
	for (k = 0, i = 0; i < N; i++) {
		if (i % 3 == 0) {
			assert_ptr_equal(res[k].RequestContext,
					 (PVOID)(uintptr_t)k);
			assert_int_equal(res[k].BytesTransferred, len[i]);
			assert_memory_equal(P.buf + k * RECV_MAX,
					    A.buf + i * 1000, len[i]);
			k++;
		} else if (i % 3 == 1 && i < N - 3) {
			assert_memory_equal(P.buf + wr_base + i * 80000,
					    A.buf + i * 1000, len[i]);
		} else if (i % 3 == 2) {
			assert_memory_equal(A.buf + rd_dst + i * 4096,
					    P.buf + rd_src + i * 10, len[i]);
		}
	}
}

static void test_write_and_read(void **state)
{
	static const size_t sizes[] = { 0, 1, 777, 65536, 1 << 20, 16 << 20 };
	size_t i, base = 0;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t n = sizes[i];
		/*
		 * A fresh target range each time: P's engine read the last
		 * one to answer the Read, and nothing on P's side tells the
		 * test thread when (the data went through the socket).
		 */
		uint8_t *t = P.buf + base;
		NDK_SGE s = sge(A.buf, n, A.ltok);
		NDK_RESULT_EX res[1];

		/* rxe: 8 MiB messages at most. */
		if (n > cli.info.MaxTransferLength)
			continue;
		/* Write A -> P at offset 8, P does not call in. */
		fill(A.buf, n, (unsigned int)i + 50);
		memset(t, 0x11, n + 16);
		base += (n + 16 + 63) & ~(size_t)63;
		assert_int_equal(A.qp->Dispatch->NdkWrite(
					 A.qp, (PVOID)1, &s, 1,
					 (UINT64)(uintptr_t)(t + 8), P.rtok, 0),
				 STATUS_SUCCESS);
		poll_one_ok(cli.cq, res, NdkOperationTypeWrite);
		/*
		 * The local completion says the bytes left. A Send behind the
		 * Write arrives after it was placed (one ordered stream):
		 * its receive completion is when P may look.
		 */
		assert_int_equal(
			P.qp->Dispatch->NdkReceive(P.qp, (PVOID)9, NULL, 0),
			STATUS_SUCCESS);
		assert_int_equal(
			A.qp->Dispatch->NdkSend(A.qp, (PVOID)3, NULL, 0, 0),
			STATUS_SUCCESS);
		assert_int_equal(poll_cq(srv.cq, res, 1), 1);
		assert_int_equal(res[0].Status, STATUS_SUCCESS);
		assert_int_equal(poll_cq(cli.cq, res, 1), 1);
		assert_memory_equal(t + 8, A.buf, n);
		assert_int_equal(t[7], 0x11);
		assert_int_equal(t[8 + n], 0x11);

		/* Read it back from P into A at offset 100. */
		memset(A.buf + 100, 0, n + 8);
		s.VirtualAddress = A.buf + 100;
		assert_int_equal(A.qp->Dispatch->NdkRead(
					 A.qp, (PVOID)2, &s, 1,
					 (UINT64)(uintptr_t)(t + 8), P.rtok, 0),
				 STATUS_SUCCESS);
		poll_one_ok(cli.cq, res, NdkOperationTypeRead);
		assert_memory_equal(A.buf + 100, t + 8, n);
	}
}

static void test_reads_beyond_ord_wait(void **state)
{
	enum { N = 40 }; /* ORD is 8: most of them wait their turn */
	NDK_RESULT_EX res[N];
	int i;

	fill(P.buf, N * 1000, 3);
	post_read_chunks(N, 1000);
	assert_int_equal(poll_cq(cli.cq, res, N), N);
	for (i = 0; i < N; i++) {
		assert_int_equal(res[i].Status, STATUS_SUCCESS);
		assert_ptr_equal(res[i].RequestContext, (PVOID)(intptr_t)i);
	}
	assert_memory_equal(A.buf, P.buf, N * 1000);
}

static void test_bad_token_terminates(void **state)
{
	NDK_SGE s = sge(A.buf, 64, A.ltok);
	NDK_RESULT_EX res[1];

	memset(P.buf, 0x5a, 4096);
	/* A token that names nothing: the target Terminates. */
	assert_int_equal(A.qp->Dispatch->NdkWrite(A.qp, (PVOID)1, &s, 1,
						  (UINT64)(uintptr_t)P.buf,
						  P.rtok ^ 0x00ffff00, 0),
			 STATUS_SUCCESS);
	assert_true(tu_wait_until(disc_seen, &P, 5000));
	assert_true(tu_wait_until(disc_seen, &A, 5000));
	/* Not one byte landed. */
	assert_int_equal(P.buf[0], 0x5a);
	assert_int_equal(P.buf[63], 0x5a);
	(void)res;
}

static void test_send_overflows_receive(void **state)
{
	NDK_SGE rs = sge(P.buf, 100, P.ltok);
	NDK_SGE ss = sge(A.buf, 101, A.ltok);
	NDK_RESULT_EX res[1];

	memset(P.buf, 0x77, 256);
	assert_int_equal(P.qp->Dispatch->NdkReceive(P.qp, (PVOID)5, &rs, 1),
			 STATUS_SUCCESS);
	assert_int_equal(A.qp->Dispatch->NdkSend(A.qp, NULL, &ss, 1, 0),
			 STATUS_SUCCESS);
	assert_int_equal(poll_cq(srv.cq, res, 1), 1);
	/* rxe reports it as a local QP operation error, which the verbs
	 * provider tells from a bad SGE (docs/verbs.md, Statuses). */
	assert_int_equal(res[0].Status, STATUS_BUFFER_OVERFLOW);
	assert_ptr_equal(res[0].RequestContext, (PVOID)5);
	/* Nothing was written past the receive buffer. */
	assert_int_equal(P.buf[100], 0x77);
	assert_true(tu_wait_until(disc_seen, &P, 5000));
}

static void test_flush_under_load(void **state)
{
	enum { N = 200 };
	NDK_RESULT_EX res[2 * N];
	ULONG got, i, ok = 0, cancelled = 0;

	/* Receives the peer never matches, and sends in flight. */
	for (i = 0; i < N; i++)
		assert_int_equal(A.qp->Dispatch->NdkReceive(
					 A.qp, (PVOID)(uintptr_t)i, NULL, 0),
				 STATUS_SUCCESS);
	for (i = 0; i < 8; i++) {
		NDK_SGE r = sge(P.buf + i * 65536, 65536, P.ltok);

		assert_int_equal(P.qp->Dispatch->NdkReceive(P.qp, NULL, &r, 1),
				 STATUS_SUCCESS);
	}
	for (i = 0; i < 8; i++) {
		NDK_SGE s = sge(A.buf, 65536, A.ltok);

		assert_int_equal(
			A.qp->Dispatch->NdkSend(
				A.qp, (PVOID)(uintptr_t)(1000 + i), &s, 1, 0),
			STATUS_SUCCESS);
	}
	A.qp->Dispatch->NdkFlush(A.qp);
	/* Every request completes exactly once: N receives, 8 sends. */
	got = poll_cq(cli.cq, res, N + 8);
	assert_int_equal(got, N + 8);
	assert_int_equal(cli.cq->Dispatch->NdkGetCqResultsEx(cli.cq, res, 1),
			 0);
	for (i = 0; i < got; i++) {
		if (res[i].Status == STATUS_SUCCESS)
			ok++;
		else if (res[i].Status == STATUS_CANCELLED)
			cancelled++;
	}
	assert_int_equal(ok + cancelled, N + 8);
	assert_true(cancelled >= N); /* no Send ever reached A */
}

/* Memory windows: bind, remote write through the window, invalidate by
 * Send with Invalidate, then the old token is refused. */
static void test_window_bind_and_invalidate(void **state)
{
	NDK_MW *mw;
	UINT32 wtok;
	NDK_RESULT_EX res[2];
	NDK_SGE s = sge(A.buf, 32, A.ltok);

	cm_require(cli.info.MaxWindowSize > 0, "memory windows");
	assert_int_equal(srv.pd->Dispatch->NdkCreateMw(srv.pd, NULL, NULL, &mw),
			 STATUS_SUCCESS);
	/* Outside the MR: refused inline, no completion. */
	assert_int_equal(
		P.qp->Dispatch->NdkBind(P.qp, NULL, P.mr, mw, P.buf + P.len,
					4096, NDK_OP_FLAG_ALLOW_REMOTE_WRITE),
		STATUS_INVALID_PARAMETER);
	assert_int_equal(
		P.qp->Dispatch->NdkBind(P.qp, (PVOID)7, P.mr, mw, P.buf + 4096,
					4096, NDK_OP_FLAG_ALLOW_REMOTE_WRITE),
		STATUS_SUCCESS);
	wtok = mw->Dispatch->NdkGetRemoteTokenFromMw(mw);
	poll_one_ok(srv.cq, res, NdkOperationTypeBind);

	fill(A.buf, 32, 9);
	assert_int_equal(A.qp->Dispatch->NdkWrite(
				 A.qp, NULL, &s, 1,
				 (UINT64)(uintptr_t)(P.buf + 4096 + 100), wtok,
				 NDK_OP_FLAG_SILENT_SUCCESS),
			 STATUS_SUCCESS);
	/* The Send behind it invalidates the window at the target. */
	assert_int_equal(P.qp->Dispatch->NdkReceive(P.qp, (PVOID)8, NULL, 0),
			 STATUS_SUCCESS);
	assert_int_equal(
		A.qp->Dispatch->NdkSendAndInvalidate(
			A.qp, NULL, NULL, 0, NDK_OP_FLAG_SILENT_SUCCESS, wtok),
		STATUS_SUCCESS);
	poll_one_ok(srv.cq, res, NdkOperationTypeReceiveAndInvalidate);
	assert_int_equal(res[0].TypeSpecificCompletionOutput, wtok);
	assert_memory_equal(P.buf + 4096 + 100, A.buf, 32);
	/* Invalidating it again locally, twice, is harmless (a local
	 * invalidation of a free window crashes Linux 6.1's rxe: the verbs
	 * provider posts a marker instead). */
	assert_int_equal(
		P.qp->Dispatch->NdkInvalidate(P.qp, (PVOID)9, &mw->Header, 0),
		STATUS_SUCCESS);
	assert_int_equal(
		P.qp->Dispatch->NdkInvalidate(P.qp, (PVOID)10, &mw->Header, 0),
		STATUS_SUCCESS);
	EXPECT_RESULTS(srv.cq,
		       { 9, NdkOperationTypeInvalidate, STATUS_SUCCESS },
		       { 10, NdkOperationTypeInvalidate, STATUS_SUCCESS });
	/* Invalidated: the same write now ends the connection. */
	memset(P.buf + 4096, 0x3c, 512);
	assert_int_equal(A.qp->Dispatch->NdkWrite(
				 A.qp, NULL, &s, 1,
				 (UINT64)(uintptr_t)(P.buf + 4096 + 100), wtok,
				 0),
			 STATUS_SUCCESS);
	assert_true(tu_wait_until(disc_seen, &P, 5000));
	assert_int_equal(P.buf[4096 + 100], 0x3c);
}

/*
 * A local Invalidate completes in order: of a fast-registered MR, whose
 * token then names nothing, and of a bound window where the adapter has
 * windows. A normal MR cannot be invalidated: the software provider
 * completes the request with an error, the verbs provider refuses it
 * inline (docs/verbs.md, Memory windows).
 */
static void test_local_invalidate(void **state)
{
	uint8_t *mem = P.buf + (8 << 20); /* page-aligned, registered */
	uint64_t base = fr_base(mem, 0x300000);
	NDK_SGE s = sge(A.buf, 64, A.ltok);
	NDK_RESULT_EX res[2];
	union lam1 u;
	NDK_MR *fr;
	NDK_MW *mw;
	PMDL mdl;
	UINT32 tok;
	NTSTATUS st;

	cm_require(srv.info.FRMRPageCount > 0, "fast registration");
	mdl = lam_of(mem, PAGE_SIZE, &u);
	fr = fast_register_page(&u, base, &tok);
	assert_int_equal(
		P.qp->Dispatch->NdkInvalidate(P.qp, (PVOID)2, &fr->Header, 0),
		STATUS_SUCCESS);
	assert_int_equal(poll_cq(srv.cq, res, 2), 2);
	expect_result(&res[0], 1, NdkOperationTypeFastRegister, STATUS_SUCCESS);
	expect_result(&res[1], 2, NdkOperationTypeInvalidate, STATUS_SUCCESS);

	if (srv.info.MaxWindowSize) {
		assert_int_equal(
			srv.pd->Dispatch->NdkCreateMw(srv.pd, NULL, NULL, &mw),
			STATUS_SUCCESS);
		assert_int_equal(P.qp->Dispatch->NdkBind(
					 P.qp, (PVOID)3, P.mr, mw, P.buf, 64,
					 NDK_OP_FLAG_ALLOW_REMOTE_READ),
				 STATUS_SUCCESS);
		assert_int_equal(P.qp->Dispatch->NdkInvalidate(P.qp, (PVOID)4,
							       &mw->Header, 0),
				 STATUS_SUCCESS);
		assert_int_equal(poll_cq(srv.cq, res, 2), 2);
		expect_result(&res[0], 3, NdkOperationTypeBind, STATUS_SUCCESS);
		expect_result(&res[1], 4, NdkOperationTypeInvalidate,
			      STATUS_SUCCESS);
	}

	st = P.qp->Dispatch->NdkInvalidate(P.qp, (PVOID)5, &P.mr->Header, 0);
	if (cm_provider_is(&srv, "verbs")) {
		assert_int_equal(st, STATUS_INVALID_DEVICE_REQUEST);
	} else {
		assert_int_equal(st, STATUS_SUCCESS);
		assert_int_equal(poll_cq(srv.cq, res, 1), 1);
		expect_result(&res[0], 5, NdkOperationTypeInvalidate,
			      STATUS_INVALID_DEVICE_REQUEST);
	}

	/* The invalidated token: a Write through it ends the connection. */
	memset(mem, 0x3c, 64);
	assert_int_equal(
		A.qp->Dispatch->NdkWrite(A.qp, NULL, &s, 1, base, tok, 0),
		STATUS_SUCCESS);
	assert_true(tu_wait_until(disc_seen, &P, 5000));
	assert_int_equal(mem[0], 0x3c);
	srv.ad->Dispatch->NdkReleaseLAM(srv.ad, &u.lam);
	IoFreeMdl(mdl);
}

/* Fast registration from a LAM's page list, then a remote write into it. */
static void test_fast_register(void **state)
{
	NDK_MR *fr;
	uint8_t *mem = P.buf + (8 << 20); /* page-aligned, registered */
	uint64_t base = fr_base(mem, 0x100000);
	union lam1 u;
	UINT32 tok;
	NDK_RESULT_EX res[1];
	NDK_SGE s = sge(A.buf, 3 * PAGE_SIZE, A.ltok);
	ULONG flags =
		NDK_OP_FLAG_ALLOW_REMOTE_WRITE | NDK_OP_FLAG_ALLOW_LOCAL_WRITE;
	PMDL mdl;

	cm_require(cli.info.FRMRPageCount > 0, "fast registration");
	fr = fr_mr_create(4);
	mdl = lam_of(mem, 4 * PAGE_SIZE, &u);
	assert_int_equal(u.lam.AdapterPageCount, 4);
	if (base != 0x100000)
		/* siw: a base other than the host address is refused, and
		 * the MR stays as it was. */
		assert_int_equal(P.qp->Dispatch->NdkFastRegister(
					 P.qp, (PVOID)3, fr, 4,
					 u.lam.AdapterPageArray, 0,
					 4 * PAGE_SIZE, (PVOID)0x100000, flags),
				 STATUS_NOT_SUPPORTED);
	assert_int_equal(P.qp->Dispatch->NdkFastRegister(
				 P.qp, (PVOID)4, fr, 4, u.lam.AdapterPageArray,
				 0, 4 * PAGE_SIZE, (PVOID)(uintptr_t)base,
				 flags),
			 STATUS_SUCCESS);
	tok = fr->Dispatch->NdkGetRemoteTokenFromMr(fr);
	poll_one_ok(srv.cq, res, NdkOperationTypeFastRegister);
	assert_ptr_equal(res[0].RequestContext, (PVOID)4);
	/* Its own address space: the base, a page in. */
	fill(A.buf, 3 * PAGE_SIZE, 21);
	memset(mem, 0, 4 * PAGE_SIZE);
	assert_int_equal(A.qp->Dispatch->NdkWrite(A.qp, NULL, &s, 1,
						  base + PAGE_SIZE, tok,
						  NDK_OP_FLAG_SILENT_SUCCESS),
			 STATUS_SUCCESS);
	placed_by_send();
	assert_memory_equal(mem + PAGE_SIZE, A.buf, 3 * PAGE_SIZE);
	assert_int_equal(mem[0], 0);
	srv.ad->Dispatch->NdkReleaseLAM(srv.ad, &u.lam);
	IoFreeMdl(mdl);
}

/*
 * SGEs with the privileged token carry logical addresses from
 * NdkBuildLAM: a Send from one, a receive into one, a Read into one.
 * Outside every live LAM (after NdkReleaseLAM too) such an SGE is an
 * access violation: inline for the verbs provider (docs/verbs.md,
 * Logical address mappings), in the request's completion for the
 * software provider.
 */
static void test_privileged_token_sges(void **state)
{
	uint8_t *amem = A.buf + (4 << 20), *pmem = P.buf + (4 << 20);
	union lam1 ua, up;
	PMDL amdl = IoAllocateMdl(amem, 2 * PAGE_SIZE, FALSE, FALSE, NULL);
	PMDL pmdl;
	ULONG lam_size = sizeof(ua), fbo = 0;
	UINT32 atok, ptok;
	NDK_RESULT_EX res[1];
	NDK_SGE s, r;
	NTSTATUS st;
	uint64_t la;

	cm_require(cli.info.FRMRPageCount > 0, "fast registration");
	cli.pd->Dispatch->NdkGetPrivilegedMemoryRegionToken(cli.pd, &atok);
	srv.pd->Dispatch->NdkGetPrivilegedMemoryRegionToken(srv.pd, &ptok);
	assert_int_equal(
		cli.ad->Dispatch->NdkBuildLAM(cli.ad, amdl, 2 * PAGE_SIZE, NULL,
					      NULL, &ua.lam, &lam_size, &fbo),
		STATUS_SUCCESS);
	pmdl = lam_of(pmem, PAGE_SIZE, &up);

	/* A Send from A's LAM (across its page boundary) into P's. */
	la = (uint64_t)ua.lam.AdapterPageArray[0].QuadPart + fbo;
	fill(amem, 2 * PAGE_SIZE, 51);
	memset(pmem, 0, PAGE_SIZE);
	s = sge((void *)(uintptr_t)(la + PAGE_SIZE - 1000), 3000, atok);
	r = sge((void *)(uintptr_t)up.lam.AdapterPageArray[0].QuadPart, 3000,
		ptok);
	assert_int_equal(P.qp->Dispatch->NdkReceive(P.qp, (PVOID)1, &r, 1),
			 STATUS_SUCCESS);
	assert_int_equal(A.qp->Dispatch->NdkSend(A.qp, (PVOID)2, &s, 1, 0),
			 STATUS_SUCCESS);
	poll_one_ok(srv.cq, res, NdkOperationTypeReceive);
	assert_int_equal(res[0].BytesTransferred, 3000);
	poll_one_ok(cli.cq, res, NdkOperationTypeSend);
	assert_memory_equal(pmem, amem + PAGE_SIZE - 1000, 3000);

	/* A Read from P's registered buffer into A's LAM. */
	fill(P.buf, 5000, 52);
	memset(amem, 0, 2 * PAGE_SIZE);
	s = sge((void *)(uintptr_t)la, 5000, atok);
	assert_int_equal(A.qp->Dispatch->NdkRead(A.qp, (PVOID)3, &s, 1,
						 (UINT64)(uintptr_t)P.buf,
						 P.rtok, 0),
			 STATUS_SUCCESS);
	poll_one_ok(cli.cq, res, NdkOperationTypeRead);
	assert_memory_equal(amem, P.buf, 5000);

	/* Released: the logical address names nothing any more. */
	cli.ad->Dispatch->NdkReleaseLAM(cli.ad, &ua.lam);
	s = sge((void *)(uintptr_t)la, 100, atok);
	st = A.qp->Dispatch->NdkSend(A.qp, (PVOID)4, &s, 1, 0);
	if (cm_provider_is(&cli, "verbs")) {
		assert_int_equal(st, STATUS_ACCESS_VIOLATION);
	} else {
		assert_int_equal(st, STATUS_SUCCESS);
		assert_int_equal(poll_cq(cli.cq, res, 1), 1);
		expect_result(&res[0], 4, NdkOperationTypeSend,
			      STATUS_ACCESS_VIOLATION);
	}
	srv.ad->Dispatch->NdkReleaseLAM(srv.ad, &up.lam);
	IoFreeMdl(amdl);
	IoFreeMdl(pmdl);
}

/*
 * A peer's SendAndInvalidate of a fast-registered MR's token. The
 * software provider invalidates it: ReceiveAndInvalidate with the token,
 * and a Write through it then ends the connection. So does the verbs
 * provider: on rxe the token is a type 2 window's, which the peer
 * invalidates; on siw a user registration, which siw invalidates too,
 * though its receive reports no invalidation (docs/verbs.md, Fast
 * registration).
 */
static void test_remote_invalidate_fast_mr(void **state)
{
	uint8_t *mem = P.buf + (8 << 20); /* page-aligned, registered */
	uint64_t base = fr_base(mem, 0x500000);
	NDK_SGE s = sge(A.buf, 64, A.ltok);
	NDK_RESULT_EX res[1];
	union lam1 u;
	PMDL mdl;
	UINT32 tok;
	bool silent =
		cm_provider_is(&srv, "verbs") && cm_device_is(&srv, "siw");

	cm_require(srv.info.FRMRPageCount > 0, "fast registration");
	mdl = lam_of(mem, PAGE_SIZE, &u);
	/* Closed with the adapter at teardown. */
	(void)fast_register_page(&u, base, &tok);
	poll_one_ok(srv.cq, res, NdkOperationTypeFastRegister);
	assert_int_equal(P.qp->Dispatch->NdkReceive(P.qp, (PVOID)2, NULL, 0),
			 STATUS_SUCCESS);
	assert_int_equal(
		A.qp->Dispatch->NdkSendAndInvalidate(
			A.qp, NULL, NULL, 0, NDK_OP_FLAG_SILENT_SUCCESS, tok),
		STATUS_SUCCESS);
	assert_int_equal(poll_cq(srv.cq, res, 1), 1);
	/* siw's library reports no invalidation (docs/verbs.md,
	 * Completions); the Write below proves it happened. */
	if (silent) {
		expect_result(&res[0], 2, NdkOperationTypeReceive,
			      STATUS_SUCCESS);
	} else {
		expect_result(&res[0], 2, NdkOperationTypeReceiveAndInvalidate,
			      STATUS_SUCCESS);
		assert_int_equal(res[0].TypeSpecificCompletionOutput, tok);
	}
	memset(mem, 0x3c, 64);
	assert_int_equal(
		A.qp->Dispatch->NdkWrite(A.qp, NULL, &s, 1, base, tok, 0),
		STATUS_SUCCESS);
	assert_true(tu_wait_until(disc_seen, &P, 5000));
	/* Nothing landed through the invalidated token. */
	assert_int_equal(mem[0], 0x3c);
	srv.ad->Dispatch->NdkReleaseLAM(srv.ad, &u.lam);
	IoFreeMdl(mdl);
}

/*
 * After a peer's SendAndInvalidate the MR is invalid and may be
 * fast-registered again (NDK), with a new token: a Write through it
 * lands, one through the old token ends the connection. The verbs
 * provider learns of the invalidation from the receive's completion,
 * which siw's does not report (docs/verbs.md, Fast registration): there
 * the MR is still registered.
 */
static void test_fast_register_after_remote_invalidate(void **state)
{
	uint8_t *mem = P.buf + (8 << 20); /* page-aligned, registered */
	uint64_t base = fr_base(mem, 0x600000);
	NDK_SGE s = sge(A.buf, 64, A.ltok);
	NDK_RESULT_EX res[2];
	union lam1 u;
	NDK_MR *fr;
	PMDL mdl;
	UINT32 tok, tok2, prev = 0;
	NTSTATUS st;
	int round;

	cm_require(srv.info.FRMRPageCount > 0, "fast registration");
	mdl = lam_of(mem, PAGE_SIZE, &u);
	fr = fast_register_page(&u, base, &tok);
	poll_one_ok(srv.cq, res, NdkOperationTypeFastRegister);
	/* Twice: invalidated by the peer, registered again. */
	for (round = 0; round < 2; round++) {
		assert_int_equal(
			P.qp->Dispatch->NdkReceive(P.qp, (PVOID)2, NULL, 0),
			STATUS_SUCCESS);
		assert_int_equal(A.qp->Dispatch->NdkSendAndInvalidate(
					 A.qp, NULL, NULL, 0,
					 NDK_OP_FLAG_SILENT_SUCCESS, tok),
				 STATUS_SUCCESS);
		assert_int_equal(poll_cq(srv.cq, res, 1), 1);
		assert_int_equal(res[0].Status, STATUS_SUCCESS);
		st = P.qp->Dispatch->NdkFastRegister(
			P.qp, (PVOID)3, fr, 1, u.lam.AdapterPageArray, 0,
			PAGE_SIZE, (PVOID)(uintptr_t)base,
			NDK_OP_FLAG_ALLOW_REMOTE_WRITE);
		if (cm_provider_is(&srv, "verbs") &&
		    cm_device_is(&srv, "siw")) {
			/* Not told: the registration is still the MR's. */
			assert_int_equal(st, STATUS_INVALID_DEVICE_STATE);
			goto out;
		}
		expect_result(&res[0], 2, NdkOperationTypeReceiveAndInvalidate,
			      STATUS_SUCCESS);
		assert_int_equal(res[0].TypeSpecificCompletionOutput, tok);
		assert_int_equal(st, STATUS_SUCCESS);
		tok2 = fr->Dispatch->NdkGetRemoteTokenFromMr(fr);
		assert_int_not_equal(tok2, tok);
		poll_one_ok(srv.cq, res, NdkOperationTypeFastRegister);
		assert_ptr_equal(res[0].RequestContext, (PVOID)3);
		/* The new token places. */
		fill(A.buf, 64, 40 + round);
		memset(mem, 0, 64);
		assert_int_equal(
			A.qp->Dispatch->NdkWrite(A.qp, NULL, &s, 1, base, tok2,
						 NDK_OP_FLAG_SILENT_SUCCESS),
			STATUS_SUCCESS);
		placed_by_send();
		assert_memory_equal(mem, A.buf, 64);
		prev = tok;
		tok = tok2;
	}
	/* Invalidated by the peer and then locally (the consumer may not
	 * know), registered again; invalidated locally and registered again
	 * at once behind it: each completes in order, the last token places. */
	assert_int_equal(P.qp->Dispatch->NdkReceive(P.qp, (PVOID)4, NULL, 0),
			 STATUS_SUCCESS);
	assert_int_equal(
		A.qp->Dispatch->NdkSendAndInvalidate(
			A.qp, NULL, NULL, 0, NDK_OP_FLAG_SILENT_SUCCESS, tok),
		STATUS_SUCCESS);
	assert_int_equal(poll_cq(srv.cq, res, 1), 1);
	expect_result(&res[0], 4, NdkOperationTypeReceiveAndInvalidate,
		      STATUS_SUCCESS);
	for (round = 0; round < 2; round++) {
		assert_int_equal(P.qp->Dispatch->NdkInvalidate(P.qp, (PVOID)5,
							       &fr->Header, 0),
				 STATUS_SUCCESS);
		assert_int_equal(P.qp->Dispatch->NdkFastRegister(
					 P.qp, (PVOID)6, fr, 1,
					 u.lam.AdapterPageArray, 0, PAGE_SIZE,
					 (PVOID)(uintptr_t)base,
					 NDK_OP_FLAG_ALLOW_REMOTE_WRITE),
				 STATUS_SUCCESS);
		assert_int_equal(poll_cq(srv.cq, res, 1), 1);
		expect_result(&res[0], 5, NdkOperationTypeInvalidate,
			      STATUS_SUCCESS);
		poll_one_ok(srv.cq, res, NdkOperationTypeFastRegister);
		prev = tok;
		tok = fr->Dispatch->NdkGetRemoteTokenFromMr(fr);
		assert_int_not_equal(tok, prev);
	}
	/* Invalidated by the peer, then locally before the receive is
	 * polled: the provider may not know of the first yet (and on rxe
	 * an IBV_WR_LOCAL_INV of the free window would crash Linux 6.1:
	 * docs/verbs.md, Fast registration). Both complete, and the MR is
	 * registered again. */
	assert_int_equal(P.qp->Dispatch->NdkReceive(P.qp, (PVOID)7, NULL, 0),
			 STATUS_SUCCESS);
	assert_int_equal(
		A.qp->Dispatch->NdkSendAndInvalidate(
			A.qp, NULL, NULL, 0, NDK_OP_FLAG_SILENT_SUCCESS, tok),
		STATUS_SUCCESS);
	usleep(200 * 1000); /* the peer's invalidation done */
	assert_int_equal(
		P.qp->Dispatch->NdkInvalidate(P.qp, (PVOID)8, &fr->Header, 0),
		STATUS_SUCCESS);
	assert_int_equal(poll_cq(srv.cq, res, 1), 1);
	assert_int_equal(res[0].Status, STATUS_SUCCESS);
	assert_int_equal(poll_cq(srv.cq, &res[1], 1), 1);
	assert_int_equal(res[1].Status, STATUS_SUCCESS);
	assert_true((res[0].RequestContext == (PVOID)7 &&
		     res[1].RequestContext == (PVOID)8) ||
		    (res[0].RequestContext == (PVOID)8 &&
		     res[1].RequestContext == (PVOID)7));
	assert_int_equal(P.qp->Dispatch->NdkFastRegister(
				 P.qp, (PVOID)9, fr, 1, u.lam.AdapterPageArray,
				 0, PAGE_SIZE, (PVOID)(uintptr_t)base,
				 NDK_OP_FLAG_ALLOW_REMOTE_WRITE),
			 STATUS_SUCCESS);
	poll_one_ok(srv.cq, res, NdkOperationTypeFastRegister);
	prev = tok;
	tok = fr->Dispatch->NdkGetRemoteTokenFromMr(fr);
	assert_int_not_equal(tok, prev);
	fill(A.buf, 64, 50);
	memset(mem, 0, 64);
	assert_int_equal(A.qp->Dispatch->NdkWrite(A.qp, NULL, &s, 1, base, tok,
						  NDK_OP_FLAG_SILENT_SUCCESS),
			 STATUS_SUCCESS);
	placed_by_send();
	assert_memory_equal(mem, A.buf, 64);
	/* The token before names nothing: the connection ends and nothing
	 * lands. */
	memset(mem, 0x3c, 64);
	assert_int_equal(
		A.qp->Dispatch->NdkWrite(A.qp, NULL, &s, 1, base, prev, 0),
		STATUS_SUCCESS);
	assert_true(tu_wait_until(disc_seen, &P, 5000));
	assert_int_equal(mem[0], 0x3c);
out:
	srv.ad->Dispatch->NdkReleaseLAM(srv.ad, &u.lam);
	IoFreeMdl(mdl);
}

/* INLINE: the buffer is copied at post time, tokens are ignored. */
static void test_inline_send(void **state)
{
	/* As much as the QP takes inline (big_qp: 256, or the adapter's
	 * MaxInlineDataSize if less: siw's 80), up to 200 bytes, in two
	 * SGEs whose tokens are ignored. */
	ULONG qp_inline = MIN(256, cli.info.MaxInlineDataSize);
	ULONG len = MIN(200, qp_inline);
	static char msg[200], big[257];
	NDK_SGE ss[2] = {
		{ .VirtualAddress = msg,
		  .Length = len / 2,
		  .MemoryRegionToken = 0xdeadbeef },
		{ .VirtualAddress = msg + len / 2,
		  .Length = len - len / 2,
		  .MemoryRegionToken = 0 },
	};
	NDK_SGE rs = sge(P.buf, 4096, P.ltok);
	NDK_SGE b = { .VirtualAddress = big, .Length = qp_inline + 1 };
	NDK_RESULT_EX res[1];

	assert_true(len >= 32); /* every device takes this much */
	memset(msg, 'i', sizeof(msg));
	memset(P.buf, 0, 256);
	assert_int_equal(P.qp->Dispatch->NdkReceive(P.qp, NULL, &rs, 1),
			 STATUS_SUCCESS);
	assert_int_equal(
		A.qp->Dispatch->NdkSend(A.qp, NULL, ss, 2, NDK_OP_FLAG_INLINE),
		STATUS_SUCCESS);
	/* The caller's buffer may change as soon as the call returned. */
	memset(msg, 'x', sizeof(msg));
	assert_int_equal(poll_cq(srv.cq, res, 1), 1);
	assert_int_equal(res[0].Status, STATUS_SUCCESS);
	assert_int_equal(res[0].BytesTransferred, len);
	assert_all(P.buf, len, 'i', "inline data");
	/* More than the QP's inline size: refused inline. */
	assert_int_equal(
		A.qp->Dispatch->NdkSend(A.qp, NULL, &b, 1, NDK_OP_FLAG_INLINE),
		STATUS_INVALID_PARAMETER);
	assert_int_equal(poll_cq(cli.cq, res, 1), 1);
	assert_int_equal(res[0].Status, STATUS_SUCCESS);
}

/* READ_FENCE: a Write behind Reads waits for them; order is kept. */
static void test_read_fence(void **state)
{
	enum { N = 4 };
	NDK_RESULT_EX res[N + 1];
	int i;

	fill(P.buf, N * 4096, 11);
	post_read_chunks(N, 4096);
	{
		/* Writes back what the Reads fetched: needs the fence. */
		NDK_SGE s = sge(A.buf, N * 4096, A.ltok);

		assert_int_equal(A.qp->Dispatch->NdkWrite(
					 A.qp, (PVOID)99, &s, 1,
					 (UINT64)(uintptr_t)(P.buf + (1 << 20)),
					 P.rtok, NDK_OP_FLAG_READ_FENCE),
				 STATUS_SUCCESS);
	}
	assert_int_equal(poll_cq(cli.cq, res, N + 1), N + 1);
	for (i = 0; i < N; i++)
		assert_ptr_equal(res[i].RequestContext, (PVOID)(intptr_t)i);
	assert_ptr_equal(res[N].RequestContext, (PVOID)99);
	/* Order the check after the Write's placement with a Send. */
	placed_by_send();
	assert_memory_equal(P.buf + (1 << 20), P.buf, N * 4096);
}

static void test_not_connected(void **state)
{
	NDK_QP *qp = big_qp(&cli);
	NDK_SGE s = sge(A.buf, 1, A.ltok);

	assert_int_equal(qp->Dispatch->NdkSend(qp, NULL, &s, 1, 0),
			 STATUS_CONNECTION_INVALID);
	assert_int_equal(qp->Dispatch->NdkWrite(qp, NULL, &s, 1, 0, 0, 0),
			 STATUS_CONNECTION_INVALID);
	assert_int_equal(qp->Dispatch->NdkRead(qp, NULL, &s, 1, 0, 0, 0),
			 STATUS_CONNECTION_INVALID);
}

static bool notified_since(void *arg)
{
	return atomic_load(&cm_cq_notifications) > *(int *)arg;
}

/* Watches memory the provider writes from its own thread, as an RDMA
 * consumer spinning on a buffer does: no synchronisation to tell TSan of. */
__attribute__((no_sanitize_thread)) static bool byte_is(void *arg)
{
	return *(volatile uint8_t *)arg == 0x77;
}

/*
 * A consumer that busy-polls takes receiving over from the engine; when
 * it stops polling, the connection must still move: after NdkArmCq the
 * Send arrives and notifies, and an RDMA Write is placed while the
 * consumer only watches memory.
 */
static void test_busy_poller_hands_back(void **state)
{
	NDK_SGE rs = sge(P.buf, 64, P.ltok);
	NDK_SGE ss = sge(A.buf, 8, A.ltok);
	NDK_RESULT_EX res[2];
	int i, before;

	for (i = 0; i < 200; i++)
		assert_int_equal(
			srv.cq->Dispatch->NdkGetCqResultsEx(srv.cq, res, 2), 0);
	before = atomic_load(&cm_cq_notifications);
	assert_int_equal(P.qp->Dispatch->NdkReceive(P.qp, NULL, &rs, 1),
			 STATUS_SUCCESS);
	srv.cq->Dispatch->NdkArmCq(srv.cq, NDK_CQ_NOTIFY_ANY);
	assert_int_equal(A.qp->Dispatch->NdkSend(A.qp, NULL, &ss, 1, 0),
			 STATUS_SUCCESS);
	assert_true(tu_wait_until(notified_since, &before, 10000));
	assert_int_equal(poll_cq(srv.cq, res, 1), 1);
	assert_int_equal(res[0].BytesTransferred, 8);

	/* Busy-poll again, then watch memory only. */
	for (i = 0; i < 200; i++)
		srv.cq->Dispatch->NdkGetCqResultsEx(srv.cq, res, 2);
	memset(A.buf, 0x77, 4096);
	P.buf[4095] = 0;
	assert_int_equal(A.qp->Dispatch->NdkWrite(
				 A.qp, NULL,
				 &(NDK_SGE){ .VirtualAddress = A.buf,
					     .Length = 4096,
					     .MemoryRegionToken = A.ltok },
				 1, (UINT64)(uintptr_t)P.buf, P.rtok, 0),
			 STATUS_SUCCESS);
	assert_true(tu_wait_until(byte_is, &P.buf[4095], 10000));
	assert_int_equal(poll_cq(cli.cq, res, 2), 2);
}

static NDIS_NDK_PERFORMANCE_COUNTERS lo_counters(void)
{
	NDIS_NDK_STATISTICS_INFO si;
	ULONG written;

	assert_int_equal(NdkQueryOid(if_nametoindex(cm_test_ifname()),
				     OID_NDK_STATISTICS, &si, sizeof(si),
				     &written, NULL),
			 NDIS_STATUS_SUCCESS);
	return si.CounterSet;
}

/*
 * OID_NDK_STATISTICS counts RDMA traffic: every octet and FPDU one side
 * sends, the other receives (both are on lo), and the octets include the
 * payload plus per-frame headers. Exact once the QPs are gone, since a
 * QP adds what it has not yet counted when it is destroyed.
 */
static void test_traffic_counters(void **state)
{
	NDIS_NDK_PERFORMANCE_COUNTERS before, after;
	NDK_SGE rs = sge(P.buf, 4 << 20, P.ltok);
	NDK_SGE ss = sge(A.buf, 4 << 20, A.ltok);
	NDK_SGE ws = sge(A.buf, 1 << 20, A.ltok);
	NDK_RESULT_EX res[3];
	uint64_t out, in, frames;
	bool software = cm_provider_is(&cli, "software");

	before = lo_counters();
	assert_int_equal(P.qp->Dispatch->NdkReceive(P.qp, NULL, &rs, 1),
			 STATUS_SUCCESS);
	assert_int_equal(A.qp->Dispatch->NdkSend(A.qp, NULL, &ss, 1, 0),
			 STATUS_SUCCESS);
	assert_int_equal(A.qp->Dispatch->NdkWrite(A.qp, NULL, &ws, 1,
						  (UINT64)(uintptr_t)P.buf,
						  P.rtok, 0),
			 STATUS_SUCCESS);
	assert_int_equal(A.qp->Dispatch->NdkRead(A.qp, NULL, &ws, 1,
						 (UINT64)(uintptr_t)P.buf,
						 P.rtok, 0),
			 STATUS_SUCCESS);
	assert_int_equal(poll_cq(cli.cq, res, 3), 3);
	assert_int_equal(poll_cq(srv.cq, res, 1), 1);
	cm_host_close(&cli);
	cm_host_close(&srv);
	after = lo_counters();

	out = after.RDMAOutOctets - before.RDMAOutOctets;
	in = after.RDMAInOctets - before.RDMAInOctets;
	frames = after.RDMAOutFrames - before.RDMAOutFrames;
	assert_int_equal(out, in);
	assert_int_equal(frames, after.RDMAInFrames - before.RDMAInFrames);
	if (!software) {
		/* A verbs device shows no frames: the counters are the
		 * local completions, payload only (docs/verbs.md, OIDs):
		 * the Send and the Write out, the receive and the Read in. */
		assert_int_equal(out, 5u << 20);
		assert_int_equal(frames, 2);
		return;
	}
	/* 4 MiB sent, 1 MiB written, 1 MiB read back, a Read Request. */
	assert_true(frames >= 4);
	assert_true(out >= (6ull << 20) + frames * 66);
	assert_true(out <= (6ull << 20) + frames * (66 + 64));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_send_receive_sizes, setup,
						dp_teardown),
		cmocka_unit_test_setup_teardown(test_multi_sge_and_order, setup,
						dp_teardown),
		cmocka_unit_test_setup_teardown(test_mixed_queue_in_order,
						setup, dp_teardown),
		cmocka_unit_test_setup_teardown(test_write_and_read, setup,
						dp_teardown),
		cmocka_unit_test_setup_teardown(test_reads_beyond_ord_wait,
						setup, dp_teardown),
		cmocka_unit_test_setup_teardown(test_bad_token_terminates,
						setup, dp_teardown),
		cmocka_unit_test_setup_teardown(test_send_overflows_receive,
						setup, dp_teardown),
		cmocka_unit_test_setup_teardown(test_flush_under_load, setup,
						dp_teardown),
		cmocka_unit_test_setup_teardown(test_window_bind_and_invalidate,
						setup, dp_teardown),
		cmocka_unit_test_setup_teardown(test_local_invalidate, setup,
						dp_teardown),
		cmocka_unit_test_setup_teardown(test_fast_register, setup,
						dp_teardown),
		cmocka_unit_test_setup_teardown(test_privileged_token_sges,
						setup, dp_teardown),
		cmocka_unit_test_setup_teardown(test_remote_invalidate_fast_mr,
						setup, dp_teardown),
		cmocka_unit_test_setup_teardown(
			test_fast_register_after_remote_invalidate, setup,
			dp_teardown),
		cmocka_unit_test_setup_teardown(test_inline_send, setup,
						dp_teardown),
		cmocka_unit_test_setup_teardown(test_read_fence, setup,
						dp_teardown),
		cmocka_unit_test_setup_teardown(test_not_connected, setup,
						dp_teardown),
		cmocka_unit_test_setup_teardown(test_traffic_counters, setup,
						dp_teardown),
		cmocka_unit_test_setup_teardown(test_busy_poller_hands_back,
						setup, dp_teardown),
	};
	char dir[] = "/tmp/ndk-dp-XXXXXX";
	int ret;

	/* Counters of our own: other tests count on lo at the same time. */
	if (tu_private_runtime(dir))
		return 1;
	ret = cmocka_run_group_tests_name("datapath", tests, NULL, NULL);
	return tu_private_runtime_done(dir, ret);
}
