/* SPDX-License-Identifier: MIT */
/*
 * Shared receive queues: one SRQ feeding one QP (two-SGE receives, in
 * SRQ order, one message each) and two QPs (every receive used once, each
 * QP taking them in order for its messages in order); a receive into a
 * logical address.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdatomic.h>
#include <string.h>
#include "dp_pair.h"
#include "testutil.h"

static size_t srq_msg_len(int i)
{
	return i % 4 == 3 ? 100000 : (size_t)(i * 997) % 5000;
}

static void test_srq_in_order(void **state)
{
	enum { N_MSG = 40, BATCH = 20, SLOT = 131072 };
	NDK_SRQ *srq;
	NDK_RESULT_EX res[BATCH];
	int i, bt;

	cm_require(srv.info.MaxSrqDepth > 0, "shared receive queues");
	fill(A.buf, 1 << 20, 9);
	assert_int_equal(srv.pd->Dispatch->NdkCreateSrq(srv.pd, 64, 2, 0, NULL,
							NULL, NULL, NULL, NULL,
							&srq),
			 STATUS_SUCCESS);
	assert_int_equal(srv.pd->Dispatch->NdkCreateQpWithSrq(
				 srv.pd, srv.cq, srv.cq, srq, (PVOID)0x5150, 16,
				 2, 0, NULL, NULL, &P.qp),
			 STATUS_SUCCESS);
	A.qp = big_qp(&cli);
	connect_sides(&A, &P);

	for (bt = 0; bt < N_MSG / BATCH; bt++) {
		/* Two SGEs per receive: 1000 bytes, then the rest of a slot
		 * from 4 KiB in. */
		for (i = bt * BATCH; i < (bt + 1) * BATCH; i++) {
			uint8_t *slot = P.buf + (size_t)i * SLOT;
			NDK_SGE s[2] = { sge(slot, 1000, P.ltok),
					 sge(slot + 4096, SLOT - 4096,
					     P.ltok) };

			assert_int_equal(
				srq->Dispatch->NdkSrqReceive(
					srq, (PVOID)(uintptr_t)(i + 1), s, 2),
				STATUS_SUCCESS);
		}
		for (i = bt * BATCH; i < (bt + 1) * BATCH; i++)
			post_send(A.qp, (uintptr_t)(i + 100), A.buf + i * 64,
				  srq_msg_len(i), A.ltok, 0);
		assert_int_equal(poll_cq(srv.cq, res, BATCH), BATCH);
		for (i = 0; i < BATCH; i++) {
			int m = bt * BATCH + i;
			size_t len = srq_msg_len(m),
			       first = len < 1000 ? len : 1000;
			uint8_t *slot = P.buf + (size_t)m * SLOT;

			/* In SRQ order, one message each. */
			expect_result(&res[i], (uintptr_t)(m + 1),
				      NdkOperationTypeReceive, STATUS_SUCCESS);
			assert_ptr_equal(res[i].QPContext, (PVOID)0x5150);
			assert_int_equal(res[i].BytesTransferred, len);
			assert_memory_equal(slot, A.buf + m * 64, first);
			assert_memory_equal(slot + 4096, A.buf + m * 64 + first,
					    len - first);
		}
		assert_int_equal(poll_cq(cli.cq, res, BATCH), BATCH);
		for (i = 0; i < BATCH; i++)
			expect_result(&res[i],
				      (uintptr_t)(bt * BATCH + i + 100),
				      NdkOperationTypeSend, STATUS_SUCCESS);
	}
	assert_cq_quiet(srv.cq);
	assert_int_equal(atomic_load(&A.disc) + atomic_load(&P.disc), 0);
}

/*
 * An SRQ receive whose SGE carries the privileged token and a logical
 * address from NdkBuildLAM (the verbs provider registers the LAM on the
 * SRQ's PD when the receive is posted: docs/verbs.md, Logical address
 * mappings).
 */
static void test_srq_logical_address(void **state)
{
	uint8_t *mem = P.buf + (1 << 20); /* page-aligned */
	union {
		NDK_LOGICAL_ADDRESS_MAPPING lam;
		uint8_t raw[64];
	} u;
	ULONG lam_size = sizeof(u), fbo = 0;
	PMDL mdl = IoAllocateMdl(mem, 2 * PAGE_SIZE, FALSE, FALSE, NULL);
	NDK_RESULT_EX res[1];
	NDK_SRQ *srq;
	NDK_SGE s;
	UINT32 tok;

	cm_require(srv.info.MaxSrqDepth > 0, "shared receive queues");
	cm_require(srv.info.FRMRPageCount > 0, "logical address mappings");
	assert_int_equal(srv.pd->Dispatch->NdkCreateSrq(srv.pd, 16, 1, 0, NULL,
							NULL, NULL, NULL, NULL,
							&srq),
			 STATUS_SUCCESS);
	assert_int_equal(srv.pd->Dispatch->NdkCreateQpWithSrq(
				 srv.pd, srv.cq, srv.cq, srq, (PVOID)0x5151, 16,
				 1, 0, NULL, NULL, &P.qp),
			 STATUS_SUCCESS);
	A.qp = big_qp(&cli);
	connect_sides(&A, &P);
	assert_int_equal(
		srv.ad->Dispatch->NdkBuildLAM(srv.ad, mdl, 2 * PAGE_SIZE, NULL,
					      NULL, &u.lam, &lam_size, &fbo),
		STATUS_SUCCESS);
	srv.pd->Dispatch->NdkGetPrivilegedMemoryRegionToken(srv.pd, &tok);
	memset(mem, 0x11, 2 * PAGE_SIZE);
	fill(A.buf, 6000, 33);
	s = sge((void *)(uintptr_t)(u.lam.AdapterPageArray[0].QuadPart + 100),
		6000, tok);
	assert_int_equal(srq->Dispatch->NdkSrqReceive(srq, (PVOID)7, &s, 1),
			 STATUS_SUCCESS);
	post_send(A.qp, 8, A.buf, 6000, A.ltok, 0);
	assert_int_equal(poll_cq(srv.cq, res, 1), 1);
	expect_result(&res[0], 7, NdkOperationTypeReceive, STATUS_SUCCESS);
	assert_ptr_equal(res[0].QPContext, (PVOID)0x5151);
	assert_int_equal(res[0].BytesTransferred, 6000);
	assert_memory_equal(mem + 100, A.buf, 6000);
	assert_int_equal(mem[99], 0x11);
	assert_int_equal(mem[6100], 0x11);
	assert_int_equal(poll_cq(cli.cq, res, 1), 1);
	expect_result(&res[0], 8, NdkOperationTypeSend, STATUS_SUCCESS);
	srv.ad->Dispatch->NdkReleaseLAM(srv.ad, &u.lam);
	IoFreeMdl(mdl);
}

static struct side A2, P2;

static size_t srq2_len(int j)
{
	return j % 5 == 4 ? 100000 : 1000 + (size_t)j * 37;
}

/* Two QPs take from one SRQ: every receive used once, each QP in order. */
static void test_srq_shared_by_two_qps(void **state)
{
	enum { PER_QP = 16, NRECV = 2 * PER_QP, SLOT = 131072 };
	NDK_SRQ *srq;
	NDK_RESULT_EX res[NRECV];
	bool used[NRECV] = { false };
	int next_j[2] = { 0, 0 }, last_slot[2] = { -1, -1 };
	int i, x, j;

	cm_require(srv.info.MaxSrqDepth > 0, "shared receive queues");
	/* Message j of QP x: from A.buf + (x * PER_QP + j) * SLOT, its
	 * first two bytes say x and j. */
	for (x = 0; x < 2; x++)
		for (j = 0; j < PER_QP; j++) {
			uint8_t *src = A.buf + (size_t)(x * PER_QP + j) * SLOT;

			fill(src, srq2_len(j), (unsigned int)(x * 100 + j));
			src[0] = (uint8_t)x;
			src[1] = (uint8_t)j;
		}
	assert_int_equal(srv.pd->Dispatch->NdkCreateSrq(srv.pd, 64, 1, 0, NULL,
							NULL, NULL, NULL, NULL,
							&srq),
			 STATUS_SUCCESS);
	memset(&A2, 0, sizeof(A2));
	memset(&P2, 0, sizeof(P2));
	assert_int_equal(srv.pd->Dispatch->NdkCreateQpWithSrq(
				 srv.pd, srv.cq, srv.cq, srq, (PVOID)0, 16, 1,
				 0, NULL, NULL, &P.qp),
			 STATUS_SUCCESS);
	assert_int_equal(srv.pd->Dispatch->NdkCreateQpWithSrq(
				 srv.pd, srv.cq, srv.cq, srq, (PVOID)1, 16, 1,
				 0, NULL, NULL, &P2.qp),
			 STATUS_SUCCESS);
	A.qp = big_qp(&cli);
	A2.qp = big_qp(&cli);
	connect_sides(&A, &P);
	connect_sides(&A2, &P2);
	for (i = 0; i < NRECV; i++) {
		NDK_SGE s = sge(P.buf + (size_t)i * SLOT, SLOT, P.ltok);

		assert_int_equal(srq->Dispatch->NdkSrqReceive(
					 srq, (PVOID)(uintptr_t)i, &s, 1),
				 STATUS_SUCCESS);
	}
	for (j = 0; j < PER_QP; j++)
		for (x = 0; x < 2; x++)
			post_send(x ? A2.qp : A.qp, (uintptr_t)(x * 100 + j),
				  A.buf + (size_t)(x * PER_QP + j) * SLOT,
				  srq2_len(j), A.ltok, 0);
	assert_int_equal(poll_cq(srv.cq, res, NRECV), NRECV);
	for (i = 0; i < NRECV; i++) {
		int slot = (int)(uintptr_t)res[i].RequestContext;
		uint8_t *p;

		assert_int_equal(res[i].Status, STATUS_SUCCESS);
		assert_int_equal(res[i].Type, NdkOperationTypeReceive);
		x = (int)(uintptr_t)res[i].QPContext;
		assert_true(x == 0 || x == 1);
		assert_true(slot >= 0 && slot < NRECV);
		assert_false(used[slot]);
		used[slot] = true;
		/* Each QP takes the SRQ's receives in order... */
		assert_true(slot > last_slot[x]);
		last_slot[x] = slot;
		/* ...for its messages in order. */
		p = P.buf + (size_t)slot * SLOT;
		j = next_j[x]++;
		assert_int_equal(p[0], x);
		assert_int_equal(p[1], j);
		assert_int_equal(res[i].BytesTransferred, srq2_len(j));
		assert_memory_equal(p, A.buf + (size_t)(x * PER_QP + j) * SLOT,
				    srq2_len(j));
	}
	assert_int_equal(next_j[0], PER_QP);
	assert_int_equal(next_j[1], PER_QP);
	assert_int_equal(poll_cq(cli.cq, res, NRECV), NRECV);
	assert_cq_quiet(srv.cq);
}

static atomic_int srq_notes;

static void on_srq_note(PVOID ctx, NTSTATUS status)
{
	assert_int_equal(status, STATUS_SUCCESS);
	atomic_fetch_add(&srq_notes, 1);
}

static bool notes_seen(void *arg)
{
	return atomic_load(&srq_notes) >= *(int *)arg;
}

/* Sends one message from A and waits for its receive at P. */
static void one_message(void)
{
	NDK_RESULT_EX res[1];

	post_send(A.qp, 1, A.buf, 16, A.ltok, 0);
	assert_int_equal(poll_cq(srv.cq, res, 1), 1);
	assert_int_equal(res[0].Status, STATUS_SUCCESS);
	assert_int_equal(poll_cq(cli.cq, res, 1), 1);
}

/*
 * The notification threshold: armed at create, it fires once when the
 * receives queued drop below it; NdkModifySrq re-arms it, and an arm that
 * finds fewer queued fires at once.
 */
static void test_srq_threshold(void **state)
{
	NDK_SRQ *srq;
	int i, want;

	cm_require(srv.info.MaxSrqDepth > 0, "shared receive queues");
	atomic_store(&srq_notes, 0);
	assert_int_equal(srv.pd->Dispatch->NdkCreateSrq(srv.pd, 16, 1, 3,
							on_srq_note, NULL, NULL,
							NULL, NULL, &srq),
			 STATUS_SUCCESS);
	assert_int_equal(srv.pd->Dispatch->NdkCreateQpWithSrq(
				 srv.pd, srv.cq, srv.cq, srq, (PVOID)0x5150, 16,
				 1, 0, NULL, NULL, &P.qp),
			 STATUS_SUCCESS);
	/* Receives come from the SRQ only. */
	assert_int_equal(P.qp->Dispatch->NdkReceive(P.qp, NULL, NULL, 0),
			 STATUS_INVALID_DEVICE_REQUEST);
	A.qp = big_qp(&cli);
	connect_sides(&A, &P);
	for (i = 0; i < 4; i++) {
		NDK_SGE s = sge(P.buf + i * 4096, 4096, P.ltok);

		assert_int_equal(srq->Dispatch->NdkSrqReceive(
					 srq, (PVOID)(uintptr_t)i, &s, 1),
				 STATUS_SUCCESS);
	}
	/* 4 -> 3 queued: not below 3. */
	one_message();
	tu_sleep_ms(QUIET_MS);
	assert_int_equal(atomic_load(&srq_notes), 0);
	/* 3 -> 2: below, once. */
	one_message();
	want = 1;
	assert_true(tu_wait_until(notes_seen, &want, WAIT_MS));
	one_message();
	tu_sleep_ms(QUIET_MS);
	assert_int_equal(atomic_load(&srq_notes), 1);
	/* One queued: an arm at 2 fires at once. */
	assert_int_equal(srq->Dispatch->NdkModifySrq(srq, 0, 2, NULL, NULL),
			 STATUS_SUCCESS);
	want = 2;
	assert_true(tu_wait_until(notes_seen, &want, WAIT_MS));
	/* Refill to 5 and arm at 4: the second message takes it below. */
	for (i = 4; i < 8; i++) {
		NDK_SGE s = sge(P.buf + i * 4096, 4096, P.ltok);

		assert_int_equal(srq->Dispatch->NdkSrqReceive(
					 srq, (PVOID)(uintptr_t)i, &s, 1),
				 STATUS_SUCCESS);
	}
	assert_int_equal(srq->Dispatch->NdkModifySrq(srq, 0, 4, NULL, NULL),
			 STATUS_SUCCESS);
	one_message();
	tu_sleep_ms(QUIET_MS);
	assert_int_equal(atomic_load(&srq_notes), 2);
	one_message();
	want = 3;
	assert_true(tu_wait_until(notes_seen, &want, WAIT_MS));
	/* A threshold above the depth, a depth below what is queued. */
	assert_int_equal(srq->Dispatch->NdkModifySrq(srq, 0, 17, NULL, NULL),
			 STATUS_INVALID_PARAMETER);
	assert_int_equal(srq->Dispatch->NdkModifySrq(srq, 2, 0, NULL, NULL),
			 STATUS_INVALID_PARAMETER);
	tu_sleep_ms(QUIET_MS);
	assert_int_equal(atomic_load(&srq_notes), 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_srq_in_order,
						dp_setup_hosts, dp_teardown),
		cmocka_unit_test_setup_teardown(test_srq_shared_by_two_qps,
						dp_setup_hosts, dp_teardown),
		cmocka_unit_test_setup_teardown(test_srq_threshold,
						dp_setup_hosts, dp_teardown),
		cmocka_unit_test_setup_teardown(test_srq_logical_address,
						dp_setup_hosts, dp_teardown),
	};

	dp_set_env();
	return cmocka_run_group_tests_name("dp_srq", tests, NULL, NULL);
}
