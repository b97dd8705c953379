/* SPDX-License-Identifier: MIT */
/*
 * Shared receive queues through the public API: creation limits,
 * NdkSrqReceive, NdkModifySrq and the one-shot threshold notification
 * (NDK_SRQ_DISPATCH,
 * NDK_FN_SRQ_NOTIFICATION_CALLBACK). Receives are consumed through the
 * data-path hooks (sw_srq_take, sw_rq_take), as no peer can send
 * yet.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <net/if.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "front/adapter.h"
#include "sw/qp.h"
#include "sw/srq.h"
#include "testutil.h"

struct env {
	NDK_ADAPTER *ad;
	NDK_ADAPTER_INFO info;
	NDK_PD *pd;
	NDK_CQ *cq;
};

/* What the SRQ notification callback saw. */
struct notes {
	atomic_int n;
	atomic_int off_engine; /* calls not on the engine thread */
	atomic_int bad_status;
	struct ndk_adapter *ad;
	/* Close the SRQ from inside the callback. */
	NDK_SRQ *close_srq;
	atomic_int close_status;
	atomic_int closed;
};

static void cq_notify(PVOID ctx, NTSTATUS status)
{
}

static void on_notify(PVOID ctx, NTSTATUS status)
{
	struct notes *nt = ctx;

	if (!ndk_engine_on_thread(&nt->ad->engine))
		atomic_fetch_add(&nt->off_engine, 1);
	if (status != STATUS_SUCCESS)
		atomic_fetch_add(&nt->bad_status, 1);
	if (nt->close_srq) {
		NDK_SRQ *srq = nt->close_srq;

		nt->close_srq = NULL;
		atomic_store(
			&nt->close_status,
			srq->Dispatch->NdkCloseSrq(&srq->Header, NULL, NULL));
	}
	atomic_fetch_add(&nt->n, 1);
}

static int setup(void **state)
{
	NDK_VERSION v = { 2, 1 };
	struct env *e = calloc(1, sizeof(*e));
	ULONG size = sizeof(e->info);

	assert_non_null(e);
	assert_int_equal(NdkOpenAdapter(v, if_nametoindex("lo"), &e->ad),
			 STATUS_SUCCESS);
	assert_int_equal(
		e->ad->Dispatch->NdkQueryAdapterInfo(e->ad, &e->info, &size),
		STATUS_SUCCESS);
	assert_int_equal(
		e->ad->Dispatch->NdkCreatePd(e->ad, NULL, NULL, &e->pd),
		STATUS_SUCCESS);
	assert_int_equal(e->ad->Dispatch->NdkCreateCq(e->ad, 1024, cq_notify,
						      NULL, NULL, NULL, NULL,
						      &e->cq),
			 STATUS_SUCCESS);
	*state = e;
	return 0;
}

static int teardown(void **state)
{
	struct env *e = *state;

	assert_int_equal(
		e->cq->Dispatch->NdkCloseCq(&e->cq->Header, NULL, NULL),
		STATUS_SUCCESS);
	assert_int_equal(
		e->pd->Dispatch->NdkClosePd(&e->pd->Header, NULL, NULL),
		STATUS_SUCCESS);
	NdkCloseAdapter(e->ad);
	free(e);
	return 0;
}

static NTSTATUS create_srq(struct env *e, ULONG depth, ULONG sge,
			   ULONG threshold, struct notes *nt, NDK_SRQ **srq)
{
	if (nt)
		nt->ad = to_ndk_adapter(e->ad);
	return e->pd->Dispatch->NdkCreateSrq(e->pd, depth, sge, threshold,
					     nt ? on_notify : NULL, nt, NULL,
					     NULL, NULL, srq);
}

static NDK_SRQ *make_srq(struct env *e, ULONG depth, ULONG threshold,
			 struct notes *nt)
{
	NDK_SRQ *srq = NULL;

	assert_int_equal(create_srq(e, depth, 4, threshold, nt, &srq),
			 STATUS_SUCCESS);
	assert_non_null(srq);
	assert_int_equal(srq->Header.ObjectType, NdkObjectTypeSrq);
	return srq;
}

static void close_srq(NDK_SRQ *srq)
{
	assert_int_equal(srq->Dispatch->NdkCloseSrq(&srq->Header, NULL, NULL),
			 STATUS_SUCCESS);
}

static void post(NDK_SRQ *srq, uintptr_t first, unsigned int n)
{
	NDK_SGE sge = { .Length = 64 };
	unsigned int i;

	for (i = 0; i < n; i++)
		assert_int_equal(srq->Dispatch->NdkSrqReceive(
					 srq, (PVOID)(first + i), &sge, 1),
				 STATUS_SUCCESS);
}

/* Takes one receive as a QP's data path would; returns its context. */
static uintptr_t take(NDK_SRQ *srq)
{
	union {
		struct sw_rqe rqe;
		unsigned char buf[sizeof(struct sw_rqe) + 16 * sizeof(NDK_SGE)];
	} u;

	assert_int_equal(sw_srq_take(to_sw_srq(srq), &u.rqe), 0);
	return (uintptr_t)u.rqe.ctx;
}

static NTSTATUS modify(NDK_SRQ *srq, ULONG depth, ULONG threshold)
{
	return srq->Dispatch->NdkModifySrq(srq, depth, threshold, NULL, NULL);
}

static bool notes_reached(void *arg)
{
	struct notes *nt = arg;

	return atomic_load(&nt->n) >= 1;
}

/* Waits for the first notification, then checks no more come. */
static void expect_notes(struct notes *nt, int want)
{
	if (want)
		assert_true(tu_wait_until(notes_reached, nt, 5000));
	tu_sleep_ms(30);
	assert_int_equal(atomic_load(&nt->n), want);
	assert_int_equal(atomic_load(&nt->off_engine), 0);
	assert_int_equal(atomic_load(&nt->bad_status), 0);
}

static void test_create_limits(void **state)
{
	struct env *e = *state;
	const NDK_ADAPTER_INFO *i = &e->info;
	NDK_SRQ *srq = NULL;

	assert_int_equal(create_srq(e, 0, 4, 0, NULL, &srq),
			 STATUS_INVALID_PARAMETER);
	assert_int_equal(create_srq(e, i->MaxSrqDepth + 1, 4, 0, NULL, &srq),
			 STATUS_INVALID_PARAMETER);
	assert_int_equal(create_srq(e, 16, 0, 0, NULL, &srq),
			 STATUS_INVALID_PARAMETER);
	assert_int_equal(
		create_srq(e, 16, i->MaxReceiveRequestSge + 1, 0, NULL, &srq),
		STATUS_INVALID_PARAMETER);
	/* A threshold above the depth could never be crossed. */
	assert_int_equal(create_srq(e, 16, 4, 17, NULL, &srq),
			 STATUS_INVALID_PARAMETER);
	assert_int_equal(create_srq(e, 16, 4, 0, NULL, NULL),
			 STATUS_INVALID_PARAMETER);
	assert_null(srq);

	assert_int_equal(create_srq(e, i->MaxSrqDepth, 1, 0, NULL, &srq),
			 STATUS_SUCCESS);
	close_srq(srq);
	srq = NULL;
	assert_int_equal(
		create_srq(e, 1, i->MaxReceiveRequestSge, 1, NULL, &srq),
		STATUS_SUCCESS);
	close_srq(srq);
	srq = NULL;
	assert_int_equal(create_srq(e, 16, 4, 16, NULL, &srq), STATUS_SUCCESS);
	close_srq(srq);
}

static void test_receive(void **state)
{
	struct env *e = *state;
	NDK_SRQ *srq = make_srq(e, 4, 0, NULL);
	NDK_SGE sge[5];

	memset(sge, 0, sizeof(sge));
	assert_int_equal(srq->Dispatch->NdkSrqReceive(srq, NULL, sge, 5),
			 STATUS_INVALID_PARAMETER);
	assert_int_equal(srq->Dispatch->NdkSrqReceive(srq, NULL, NULL, 1),
			 STATUS_INVALID_PARAMETER);
	assert_int_equal(srq->Dispatch->NdkSrqReceive(srq, (PVOID)1, sge, 4),
			 STATUS_SUCCESS);
	assert_int_equal(srq->Dispatch->NdkSrqReceive(srq, (PVOID)2, NULL, 0),
			 STATUS_SUCCESS);
	post(srq, 3, 2);
	assert_int_equal(srq->Dispatch->NdkSrqReceive(srq, (PVOID)5, sge, 1),
			 STATUS_INSUFFICIENT_RESOURCES);
	assert_int_equal(sw_srq_count(to_sw_srq(srq)), 4);
	assert_int_equal(take(srq), 1);
	assert_int_equal(srq->Dispatch->NdkSrqReceive(srq, (PVOID)5, sge, 1),
			 STATUS_SUCCESS);
	assert_int_equal(take(srq), 2);
	assert_int_equal(take(srq), 3);
	assert_int_equal(take(srq), 4);
	assert_int_equal(take(srq), 5);
	{
		union {
			struct sw_rqe rqe;
			unsigned char buf[sizeof(struct sw_rqe) +
					  4 * sizeof(NDK_SGE)];
		} u;

		assert_int_equal(sw_srq_take(to_sw_srq(srq), &u.rqe), -EAGAIN);
	}
	/* Receives never consumed are dropped by the close. */
	post(srq, 10, 3);
	close_srq(srq);
}

static void test_modify_depth(void **state)
{
	struct env *e = *state;
	NDK_SRQ *srq = make_srq(e, 8, 0, NULL);
	uintptr_t i;

	/* Wrap the ring so a resize has to move entries around. */
	post(srq, 100, 6);
	for (i = 0; i < 6; i++)
		assert_int_equal(take(srq), 100 + i);
	post(srq, 1, 6);
	assert_int_equal(modify(srq, e->info.MaxSrqDepth + 1, 0),
			 STATUS_INVALID_PARAMETER);
	/* Below the receives already queued. */
	assert_int_equal(modify(srq, 5, 0), STATUS_INVALID_PARAMETER);
	assert_int_equal(modify(srq, 0, 0), STATUS_SUCCESS); /* keep */
	/* Threshold above the (kept or new) depth. */
	assert_int_equal(modify(srq, 0, 9), STATUS_INVALID_PARAMETER);
	assert_int_equal(modify(srq, 6, 7), STATUS_INVALID_PARAMETER);
	/* Exactly the queued count: full, nothing lost. */
	assert_int_equal(modify(srq, 6, 0), STATUS_SUCCESS);
	assert_int_equal(srq->Dispatch->NdkSrqReceive(srq, NULL, NULL, 0),
			 STATUS_INSUFFICIENT_RESOURCES);
	/* Grow: order kept, new room. */
	assert_int_equal(modify(srq, 100, 0), STATUS_SUCCESS);
	post(srq, 7, 94);
	assert_int_equal(srq->Dispatch->NdkSrqReceive(srq, NULL, NULL, 0),
			 STATUS_INSUFFICIENT_RESOURCES);
	for (i = 0; i < 98; i++)
		assert_int_equal(take(srq), 1 + i);
	/* Shrink with two still queued. */
	assert_int_equal(modify(srq, 2, 0), STATUS_SUCCESS);
	assert_int_equal(srq->Dispatch->NdkSrqReceive(srq, NULL, NULL, 0),
			 STATUS_INSUFFICIENT_RESOURCES);
	assert_int_equal(take(srq), 99);
	assert_int_equal(take(srq), 100);
	close_srq(srq);
}

/* ModifySrq arms; already below the threshold: notify at once, once. */
static void test_notify_immediate(void **state)
{
	struct env *e = *state;
	struct notes nt = { 0 };
	NDK_SRQ *srq = make_srq(e, 16, 0, &nt);

	post(srq, 1, 2);
	expect_notes(&nt, 0);
	assert_int_equal(modify(srq, 0, 5), STATUS_SUCCESS);
	expect_notes(&nt, 1);
	/* One-shot: more takes below the threshold stay quiet. */
	take(srq);
	take(srq);
	expect_notes(&nt, 1);
	/* Zero keeps the threshold and the (disarmed) state. */
	assert_int_equal(modify(srq, 0, 0), STATUS_SUCCESS);
	expect_notes(&nt, 1);
	/* Re-arm: still below, fires again. */
	assert_int_equal(modify(srq, 0, 5), STATUS_SUCCESS);
	expect_notes(&nt, 2);
	close_srq(srq);
}

/* Armed above the threshold: fires on the take that drops below it. */
static void test_notify_after_takes(void **state)
{
	struct env *e = *state;
	struct notes nt = { 0 };
	NDK_SRQ *srq = make_srq(e, 16, 0, &nt);

	post(srq, 1, 5);
	assert_int_equal(modify(srq, 0, 3), STATUS_SUCCESS);
	expect_notes(&nt, 0);
	assert_int_equal(take(srq), 1); /* 4 left */
	assert_int_equal(take(srq), 2); /* 3 left: not below */
	expect_notes(&nt, 0);
	assert_int_equal(take(srq), 3); /* 2 left */
	expect_notes(&nt, 1);
	/* Posting back above and taking again: still disarmed. */
	post(srq, 10, 5);
	take(srq);
	take(srq);
	take(srq);
	take(srq);
	take(srq);
	expect_notes(&nt, 1);
	/* Re-armed while at 2 (< 3): immediately. */
	assert_int_equal(modify(srq, 0, 3), STATUS_SUCCESS);
	expect_notes(&nt, 2);
	/* Re-armed with a lower threshold, above the count: later. */
	post(srq, 20, 2); /* 4 queued */
	assert_int_equal(modify(srq, 0, 4), STATUS_SUCCESS);
	expect_notes(&nt, 2);
	take(srq);
	expect_notes(&nt, 3);
	close_srq(srq);
}

/* The threshold given at create arms; a take fires it, not the create. */
static void test_notify_create_threshold(void **state)
{
	struct env *e = *state;
	struct notes nt = { 0 };
	NDK_SRQ *srq = make_srq(e, 16, 2, &nt);

	expect_notes(&nt, 0);
	post(srq, 1, 3);
	take(srq); /* 2 left: not below */
	expect_notes(&nt, 0);
	take(srq); /* 1 left */
	expect_notes(&nt, 1);
	close_srq(srq);
}

static void on_srq_closed(PVOID ctx)
{
	atomic_fetch_add((atomic_int *)ctx, 1);
}

static bool counter_set(void *arg)
{
	return atomic_load((atomic_int *)arg) != 0;
}

/* The consumer may close the SRQ inside its notification callback. */
static void test_close_inside_callback(void **state)
{
	struct env *e = *state;
	struct notes nt = { 0 };
	NDK_SRQ *srq = make_srq(e, 16, 0, &nt);

	post(srq, 1, 2);
	nt.close_srq = srq;
	assert_int_equal(modify(srq, 0, 4), STATUS_SUCCESS);
	expect_notes(&nt, 1);
	/* Our callback still ran, so the close had to pend. */
	assert_int_equal(atomic_load(&nt.close_status), STATUS_PENDING);
}

static void on_notify_close(PVOID ctx, NTSTATUS status)
{
	struct notes *nt = ctx;
	NDK_SRQ *srq = nt->close_srq;

	atomic_store(&nt->close_status,
		     srq->Dispatch->NdkCloseSrq(&srq->Header, on_srq_closed,
						&nt->closed));
	atomic_fetch_add(&nt->n, 1);
}

/* Close inside the callback with a completion: it comes last, once. */
static void test_close_inside_callback_completion(void **state)
{
	struct env *e = *state;
	struct notes nt = { 0 };
	NDK_SRQ *srq = NULL;

	assert_int_equal(e->pd->Dispatch->NdkCreateSrq(e->pd, 16, 1, 0,
						       on_notify_close, &nt,
						       NULL, NULL, NULL, &srq),
			 STATUS_SUCCESS);
	nt.close_srq = srq;
	assert_int_equal(modify(srq, 0, 1), STATUS_SUCCESS);
	assert_true(tu_wait_until(notes_reached, &nt, 5000));
	tu_sleep_ms(30);
	assert_int_equal(atomic_load(&nt.n), 1);
	assert_int_equal(atomic_load(&nt.close_status), STATUS_PENDING);
	assert_true(tu_wait_until(counter_set, &nt.closed, 5000));
	tu_sleep_ms(20);
	assert_int_equal(atomic_load(&nt.closed), 1);
	assert_int_equal(atomic_load(&nt.n), 1);
}

/*
 * SRQ shared by QPs: NdkReceive on such a QP is refused, receives are
 * taken by the QP's data path and complete on its receive CQ; the SRQ's
 * close pends until the QP is closed, and no notification fires once
 * the close has started.
 */
static void test_qp_with_srq(void **state)
{
	struct env *e = *state;
	struct notes nt = { 0 };
	NDK_SRQ *srq = make_srq(e, 16, 0, &nt);
	NDK_QP *qp = NULL, *qp2 = NULL;
	struct sw_qp *q;
	struct sw_rqe *r;
	atomic_int closed = 0;
	NDK_RESULT_EX res[8];
	void *ctx = (void *)0x77;

	assert_int_equal(e->pd->Dispatch->NdkCreateQpWithSrq(
				 e->pd, e->cq, e->cq, NULL, ctx, 4, 1, 0, NULL,
				 NULL, &qp),
			 STATUS_INVALID_PARAMETER);
	/* A PD is not an SRQ. */
	assert_int_equal(e->pd->Dispatch->NdkCreateQpWithSrq(
				 e->pd, e->cq, e->cq, (NDK_SRQ *)e->pd, ctx, 4,
				 1, 0, NULL, NULL, &qp),
			 STATUS_INVALID_PARAMETER);
	assert_int_equal(e->pd->Dispatch->NdkCreateQpWithSrq(
				 e->pd, e->cq, e->cq, srq, ctx,
				 e->info.MaxInitiatorQueueDepth + 1, 1, 0, NULL,
				 NULL, &qp),
			 STATUS_INVALID_PARAMETER);
	assert_int_equal(e->pd->Dispatch->NdkCreateQpWithSrq(
				 e->pd, e->cq, e->cq, srq, ctx, 4,
				 e->info.MaxInitiatorRequestSge + 1, 0, NULL,
				 NULL, &qp),
			 STATUS_INVALID_PARAMETER);
	assert_int_equal(e->pd->Dispatch->NdkCreateQpWithSrq(
				 e->pd, e->cq, e->cq, srq, ctx, 4, 1,
				 e->info.MaxInlineDataSize + 1, NULL, NULL,
				 &qp),
			 STATUS_INVALID_PARAMETER);
	assert_int_equal(e->pd->Dispatch->NdkCreateQpWithSrq(
				 e->pd, e->cq, e->cq, srq, ctx, 4, 1, 0, NULL,
				 NULL, NULL),
			 STATUS_INVALID_PARAMETER);
	assert_null(qp);
	assert_int_equal(e->pd->Dispatch->NdkCreateQpWithSrq(
				 e->pd, e->cq, e->cq, srq, ctx,
				 e->info.MaxInitiatorQueueDepth,
				 e->info.MaxInitiatorRequestSge,
				 e->info.MaxInlineDataSize, NULL, NULL, &qp),
			 STATUS_SUCCESS);
	assert_int_equal(e->pd->Dispatch->NdkCreateQpWithSrq(
				 e->pd, e->cq, e->cq, srq, ctx, 4, 0, 0, NULL,
				 NULL, &qp2),
			 STATUS_SUCCESS);
	q = to_sw_qp(qp);
	assert_int_equal(qp->Dispatch->NdkReceive(qp, NULL, NULL, 0),
			 STATUS_INVALID_DEVICE_REQUEST);

	post(srq, 1, 3);
	/* Flushing a QP does not touch the shared receives. */
	qp->Dispatch->NdkFlush(qp);
	assert_int_equal(e->cq->Dispatch->NdkGetCqResultsEx(e->cq, res, 8), 0);
	assert_int_equal(sw_srq_count(to_sw_srq(srq)), 3);

	r = sw_rq_take(&q->rq);
	assert_non_null(r);
	assert_ptr_equal(r->ctx, (PVOID)1);
	assert_int_equal(r->sge[0].Length, 64);
	sw_rq_complete(&q->rq, r, STATUS_SUCCESS, 5, NdkOperationTypeReceive, 0,
		       false);
	assert_int_equal(e->cq->Dispatch->NdkGetCqResultsEx(e->cq, res, 8), 1);
	assert_int_equal(res[0].Status, STATUS_SUCCESS);
	assert_ptr_equal(res[0].QPContext, ctx);
	assert_ptr_equal(res[0].RequestContext, (PVOID)1);
	assert_int_equal(res[0].BytesTransferred, 5);

	/* A receive in progress on a closing QP completes cancelled. */
	r = sw_rq_take(&to_sw_qp(qp2)->rq);
	assert_ptr_equal(r->ctx, (PVOID)2);
	assert_int_equal(qp2->Dispatch->NdkCloseQp(&qp2->Header, NULL, NULL),
			 STATUS_SUCCESS);
	assert_int_equal(e->cq->Dispatch->NdkGetCqResultsEx(e->cq, res, 8), 1);
	assert_int_equal(res[0].Status, STATUS_CANCELLED);
	assert_ptr_equal(res[0].RequestContext, (PVOID)2);

	/* Armed (1 queued, not below 1), then closed: no notification. */
	assert_int_equal(modify(srq, 0, 1), STATUS_SUCCESS);
	expect_notes(&nt, 0);
	assert_int_equal(srq->Dispatch->NdkCloseSrq(&srq->Header, on_srq_closed,
						    &closed),
			 STATUS_PENDING);
	r = sw_rq_take(&q->rq);
	assert_ptr_equal(r->ctx, (PVOID)3);
	sw_rq_complete(&q->rq, r, STATUS_SUCCESS, 0, NdkOperationTypeReceive, 0,
		       false);
	expect_notes(&nt, 0);
	assert_int_equal(atomic_load(&closed), 0);
	assert_int_equal(qp->Dispatch->NdkCloseQp(&qp->Header, NULL, NULL),
			 STATUS_SUCCESS);
	assert_true(tu_wait_until(counter_set, &closed, 5000));
	tu_sleep_ms(20);
	assert_int_equal(atomic_load(&closed), 1);
	expect_notes(&nt, 0);
	assert_int_equal(e->cq->Dispatch->NdkGetCqResultsEx(e->cq, res, 8), 1);
}

/*
 * NdkCloseAdapter with everything still open: queued and in-progress
 * receives, an armed SRQ. Nothing leaks, no notification fires.
 */
static void test_adapter_close_with_open_objects(void **state)
{
	struct env *e = NULL;
	struct notes nt = { 0 };
	NDK_SRQ *srq;
	NDK_QP *qp = NULL, *qp2 = NULL;

	setup((void **)&e);
	srq = make_srq(e, 16, 0, &nt);
	assert_int_equal(e->pd->Dispatch->NdkCreateQpWithSrq(
				 e->pd, e->cq, e->cq, srq, NULL, 4, 1, 0, NULL,
				 NULL, &qp),
			 STATUS_SUCCESS);
	assert_int_equal(e->pd->Dispatch->NdkCreateQp(e->pd, e->cq, e->cq, NULL,
						      8, 4, 1, 1, 0, NULL, NULL,
						      &qp2),
			 STATUS_SUCCESS);
	post(srq, 1, 4);
	assert_non_null(sw_rq_take(&to_sw_qp(qp)->rq));
	assert_int_equal(qp2->Dispatch->NdkReceive(qp2, NULL, NULL, 0),
			 STATUS_SUCCESS);
	assert_int_equal(modify(srq, 0, 3), STATUS_SUCCESS);
	NdkCloseAdapter(e->ad);
	assert_int_equal(atomic_load(&nt.n), 0);
	free(e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_create_limits, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_receive, setup, teardown),
		cmocka_unit_test_setup_teardown(test_modify_depth, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_notify_immediate, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_notify_after_takes, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_notify_create_threshold,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_close_inside_callback,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_close_inside_callback_completion, setup, teardown),
		cmocka_unit_test_setup_teardown(test_qp_with_srq, setup,
						teardown),
		cmocka_unit_test(test_adapter_close_with_open_objects),
	};

	return cmocka_run_group_tests_name("srq", tests, NULL, NULL);
}
