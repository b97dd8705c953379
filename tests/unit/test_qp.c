/* SPDX-License-Identifier: MIT */
/*
 * Queue pairs through the public API: creation limits, antecedents and
 * close order, receive posting, flush (also racing with posting) and the
 * state rules of work requests (NDK_FN_CREATE_QP,
 * NDK_QP_DISPATCH; docs/ndk.md, "Work requests").
 * The QP state machine and the receive data-path hooks are driven through
 * sw/qp.h, since no connection can be made yet.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <net/if.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "front/adapter.h"
#include "sw/qp.h"
#include "testutil.h"

#define QPCTX ((PVOID)(uintptr_t)0x5150)

struct env {
	NDK_ADAPTER *ad;
	NDK_ADAPTER_INFO info;
	NDK_PD *pd;
	NDK_CQ *rcq;
	NDK_CQ *icq;
};

static void cq_notify(PVOID ctx, NTSTATUS status)
{
}

static NDK_CQ *make_cq(NDK_ADAPTER *ad, ULONG depth)
{
	NDK_CQ *cq = NULL;

	assert_int_equal(ad->Dispatch->NdkCreateCq(ad, depth, cq_notify, NULL,
						   NULL, NULL, NULL, &cq),
			 STATUS_SUCCESS);
	return cq;
}

static NDK_ADAPTER *open_lo(void)
{
	NDK_VERSION v = { 2, 1 };
	NDK_ADAPTER *ad = NULL;

	assert_int_equal(NdkOpenAdapter(v, if_nametoindex("lo"), &ad),
			 STATUS_SUCCESS);
	return ad;
}

static int setup(void **state)
{
	struct env *e = calloc(1, sizeof(*e));
	ULONG size = sizeof(e->info);

	assert_non_null(e);
	e->ad = open_lo();
	assert_int_equal(
		e->ad->Dispatch->NdkQueryAdapterInfo(e->ad, &e->info, &size),
		STATUS_SUCCESS);
	assert_int_equal(
		e->ad->Dispatch->NdkCreatePd(e->ad, NULL, NULL, &e->pd),
		STATUS_SUCCESS);
	e->rcq = make_cq(e->ad, 16384);
	e->icq = make_cq(e->ad, 16384);
	*state = e;
	return 0;
}

static void close_obj(void *obj)
{
	NDK_OBJECT_HEADER *hdr = obj;
	/* Every object's first dispatch slot is its close function. */
	const NDK_FN_CLOSE_OBJECT *close_fn =
		(const NDK_FN_CLOSE_OBJECT *)((NDK_PD *)obj)->Dispatch;

	assert_int_equal((*close_fn)(hdr, NULL, NULL), STATUS_SUCCESS);
}

static int teardown(void **state)
{
	struct env *e = *state;

	close_obj(e->icq);
	close_obj(e->rcq);
	close_obj(e->pd);
	NdkCloseAdapter(e->ad);
	free(e);
	return 0;
}

static NTSTATUS create_qp(struct env *e, ULONG rqd, ULONG iqd, ULONG rsge,
			  ULONG isge, ULONG inl, NDK_QP **qp)
{
	return e->pd->Dispatch->NdkCreateQp(e->pd, e->rcq, e->icq, QPCTX, rqd,
					    iqd, rsge, isge, inl, NULL, NULL,
					    qp);
}

static NDK_QP *make_qp(struct env *e, ULONG rq_depth)
{
	NDK_QP *qp = NULL;

	assert_int_equal(create_qp(e, rq_depth, 16, 4, 4, 64, &qp),
			 STATUS_SUCCESS);
	assert_non_null(qp);
	assert_int_equal(qp->Header.ObjectType, NdkObjectTypeQp);
	return qp;
}

static ULONG drain(NDK_CQ *cq, NDK_RESULT_EX *res, ULONG max)
{
	ULONG n = 0, got;

	while (n < max) {
		got = cq->Dispatch->NdkGetCqResultsEx(cq, res + n, max - n);
		if (!got)
			break;
		n += got;
	}
	return n;
}

static void expect_cancelled(const NDK_RESULT_EX *r, uintptr_t ctx)
{
	assert_int_equal(r->Status, STATUS_CANCELLED);
	assert_int_equal(r->BytesTransferred, 0);
	assert_ptr_equal(r->QPContext, QPCTX);
	assert_ptr_equal(r->RequestContext, (PVOID)ctx);
	assert_int_equal(r->Type, NdkOperationTypeReceive);
}

/* Each limit separately: 0 or one past the adapter maximum fails. */
static void test_create_limits(void **state)
{
	struct env *e = *state;
	const NDK_ADAPTER_INFO *i = &e->info;
	NDK_QP *qp = NULL;

	assert_int_equal(create_qp(e, 0, 16, 4, 4, 0, &qp),
			 STATUS_INVALID_PARAMETER);
	assert_int_equal(
		create_qp(e, i->MaxReceiveQueueDepth + 1, 16, 4, 4, 0, &qp),
		STATUS_INVALID_PARAMETER);
	assert_int_equal(create_qp(e, 16, 0, 4, 4, 0, &qp),
			 STATUS_INVALID_PARAMETER);
	assert_int_equal(
		create_qp(e, 16, i->MaxInitiatorQueueDepth + 1, 4, 4, 0, &qp),
		STATUS_INVALID_PARAMETER);
	assert_int_equal(create_qp(e, 16, 16, 0, 4, 0, &qp),
			 STATUS_INVALID_PARAMETER);
	assert_int_equal(
		create_qp(e, 16, 16, i->MaxReceiveRequestSge + 1, 4, 0, &qp),
		STATUS_INVALID_PARAMETER);
	assert_int_equal(
		create_qp(e, 16, 16, 4, i->MaxInitiatorRequestSge + 1, 0, &qp),
		STATUS_INVALID_PARAMETER);
	assert_int_equal(
		create_qp(e, 16, 16, 4, 4, i->MaxInlineDataSize + 1, &qp),
		STATUS_INVALID_PARAMETER);
	assert_null(qp);

	/* NULL CQs and out pointer. */
	assert_int_equal(e->pd->Dispatch->NdkCreateQp(e->pd, NULL, e->icq, NULL,
						      16, 16, 4, 4, 0, NULL,
						      NULL, &qp),
			 STATUS_INVALID_PARAMETER);
	assert_int_equal(e->pd->Dispatch->NdkCreateQp(e->pd, e->rcq, NULL, NULL,
						      16, 16, 4, 4, 0, NULL,
						      NULL, &qp),
			 STATUS_INVALID_PARAMETER);
	assert_int_equal(create_qp(e, 16, 16, 4, 4, 0, NULL),
			 STATUS_INVALID_PARAMETER);
	/* Not a CQ at all. */
	assert_int_equal(e->pd->Dispatch->NdkCreateQp(e->pd, (NDK_CQ *)e->pd,
						      e->icq, NULL, 16, 16, 4,
						      4, 0, NULL, NULL, &qp),
			 STATUS_INVALID_PARAMETER);
	assert_null(qp);
}

/* Exactly at each limit succeeds; zero initiator SGEs is allowed. */
static void test_create_at_limits(void **state)
{
	struct env *e = *state;
	const NDK_ADAPTER_INFO *i = &e->info;
	NDK_QP *qp;

	qp = NULL;
	assert_int_equal(create_qp(e, i->MaxReceiveQueueDepth, 1, 1, 0, 0, &qp),
			 STATUS_SUCCESS);
	close_obj(qp);
	qp = NULL;
	assert_int_equal(
		create_qp(e, 1, i->MaxInitiatorQueueDepth, 1, 0, 0, &qp),
		STATUS_SUCCESS);
	close_obj(qp);
	qp = NULL;
	assert_int_equal(create_qp(e, 1, 1, i->MaxReceiveRequestSge, 0, 0, &qp),
			 STATUS_SUCCESS);
	close_obj(qp);
	qp = NULL;
	assert_int_equal(
		create_qp(e, 1, 1, 1, i->MaxInitiatorRequestSge, 0, &qp),
		STATUS_SUCCESS);
	close_obj(qp);
	qp = NULL;
	assert_int_equal(create_qp(e, 1, 1, 1, 0, i->MaxInlineDataSize, &qp),
			 STATUS_SUCCESS);
	close_obj(qp);
}

/* A CQ of another adapter cannot be linked. */
static void test_create_foreign_cq(void **state)
{
	struct env *e = *state;
	NDK_ADAPTER *ad2 = open_lo();
	NDK_CQ *cq2 = make_cq(ad2, 64);
	NDK_QP *qp = NULL;

	assert_int_equal(e->pd->Dispatch->NdkCreateQp(e->pd, cq2, e->icq, NULL,
						      16, 16, 4, 4, 0, NULL,
						      NULL, &qp),
			 STATUS_INVALID_PARAMETER);
	assert_null(qp);
	close_obj(cq2);
	NdkCloseAdapter(ad2);
}

/* Close completions seen: how many, and a bit per object id. */
struct closes {
	atomic_int n;
	atomic_int seen;
	int want;
};

struct close_ctx {
	struct closes *c;
	int id;
};

static void on_close(PVOID ctx)
{
	struct close_ctx *cc = ctx;

	atomic_fetch_or(&cc->c->seen, 1 << cc->id);
	atomic_fetch_add(&cc->c->n, 1);
}

static bool closes_reached(void *arg)
{
	struct closes *c = arg;

	return atomic_load(&c->n) >= c->want;
}

/*
 * Receive and initiator queue on one CQ: it is linked once, so closing it
 * first pends until the QP is closed, then completes exactly once.
 */
static void test_same_cq(void **state)
{
	struct env *e = *state;
	struct closes c = { .want = 2 };
	struct close_ctx cq_ctx = { &c, 1 }, pd_ctx = { &c, 2 };
	NDK_PD *pd = NULL;
	NDK_CQ *cq = make_cq(e->ad, 64);
	NDK_QP *qp = NULL;
	NDK_RESULT_EX res[4];

	assert_int_equal(e->ad->Dispatch->NdkCreatePd(e->ad, NULL, NULL, &pd),
			 STATUS_SUCCESS);
	assert_int_equal(pd->Dispatch->NdkCreateQp(pd, cq, cq, QPCTX, 4, 4, 1,
						   1, 0, NULL, NULL, &qp),
			 STATUS_SUCCESS);
	assert_int_equal(qp->Dispatch->NdkReceive(qp, (PVOID)7, NULL, 0),
			 STATUS_SUCCESS);
	qp->Dispatch->NdkFlush(qp);
	assert_int_equal(drain(cq, res, 4), 1);
	expect_cancelled(&res[0], 7);

	/* Antecedents closed first pend (NDKPI Object Lifetime
	 * Requirements). */
	assert_int_equal(
		cq->Dispatch->NdkCloseCq(&cq->Header, on_close, &cq_ctx),
		STATUS_PENDING);
	assert_int_equal(
		pd->Dispatch->NdkClosePd(&pd->Header, on_close, &pd_ctx),
		STATUS_PENDING);
	tu_sleep_ms(20);
	assert_int_equal(atomic_load(&c.n), 0);

	assert_int_equal(qp->Dispatch->NdkCloseQp(&qp->Header, NULL, NULL),
			 STATUS_SUCCESS);
	assert_true(tu_wait_until(closes_reached, &c, 5000));
	tu_sleep_ms(20);
	/* Each close completion exactly once, nothing after it. */
	assert_int_equal(atomic_load(&c.n), 2);
}

static void test_receive_limits(void **state)
{
	struct env *e = *state;
	NDK_QP *qp = make_qp(e, 4);
	NDK_SGE sge[5];
	NDK_RESULT_EX res[8];
	uintptr_t i;

	memset(sge, 0, sizeof(sge));
	/* nSge above the QP's MaxReceiveRequestSge (4). */
	assert_int_equal(qp->Dispatch->NdkReceive(qp, (PVOID)1, sge, 5),
			 STATUS_INVALID_PARAMETER);
	assert_int_equal(qp->Dispatch->NdkReceive(qp, (PVOID)1, NULL, 2),
			 STATUS_INVALID_PARAMETER);
	/* Up to the depth may be outstanding, then the queue is full. */
	assert_int_equal(qp->Dispatch->NdkReceive(qp, (PVOID)1, sge, 4),
			 STATUS_SUCCESS);
	assert_int_equal(qp->Dispatch->NdkReceive(qp, (PVOID)2, sge, 1),
			 STATUS_SUCCESS);
	assert_int_equal(qp->Dispatch->NdkReceive(qp, (PVOID)3, NULL, 0),
			 STATUS_SUCCESS);
	assert_int_equal(qp->Dispatch->NdkReceive(qp, (PVOID)4, sge, 2),
			 STATUS_SUCCESS);
	assert_int_equal(qp->Dispatch->NdkReceive(qp, (PVOID)5, sge, 1),
			 STATUS_INSUFFICIENT_RESOURCES);
	/* Flushing frees the queue again. */
	qp->Dispatch->NdkFlush(qp);
	assert_int_equal(drain(e->rcq, res, 8), 4);
	for (i = 0; i < 4; i++)
		expect_cancelled(&res[i], i + 1);
	for (i = 0; i < 4; i++)
		assert_int_equal(
			qp->Dispatch->NdkReceive(qp, (PVOID)(i + 10), sge, 1),
			STATUS_SUCCESS);
	close_obj(qp);
	assert_int_equal(drain(e->rcq, res, 8), 4);
	for (i = 0; i < 4; i++)
		expect_cancelled(&res[i], i + 10);
}

/*
 * What the connector does at ESTABLISHED: hands a connected socket to the
 * QP's data path. The other end is returned in *peer (the caller closes
 * it); on failure the QP's end is closed here, as it stays the caller's.
 */
static int establish(struct sw_qp *q, uint32_t ird, uint32_t ord, int *peer)
{
	int sv[2];
	struct sw_dp_socket s = { .family = AF_INET, .ird = ird, .ord = ord };
	int ret;

	assert_int_equal(
		socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
	s.fd = sv[0];
	s.engine = &q->obj.adapter->engine;
	ret = sw_qp_cm_established(q, &s);
	if (ret)
		close(sv[0]);
	*peer = sv[1];
	return ret;
}

/* Every initiator WR fails inline on a QP that is not connected. */
static void expect_initiator(NDK_QP *qp, NTSTATUS want)
{
	NDK_SGE sge = { 0 };

	assert_int_equal(qp->Dispatch->NdkSend(qp, NULL, &sge, 1, 0), want);
	assert_int_equal(
		qp->Dispatch->NdkSendAndInvalidate(qp, NULL, &sge, 1, 0, 5),
		want);
	assert_int_equal(
		qp->Dispatch->NdkBind(qp, NULL, NULL, NULL, NULL, 0, 0), want);
	assert_int_equal(qp->Dispatch->NdkFastRegister(qp, NULL, NULL, 0, NULL,
						       0, 0, NULL, 0),
			 want);
	assert_int_equal(qp->Dispatch->NdkInvalidate(qp, NULL, NULL, 0), want);
	assert_int_equal(qp->Dispatch->NdkRead(qp, NULL, &sge, 1, 0x1000, 1, 0),
			 want);
	assert_int_equal(
		qp->Dispatch->NdkWrite(qp, NULL, &sge, 1, 0x1000, 1, 0), want);
}

static void test_unconnected_wrs(void **state)
{
	struct env *e = *state;
	NDK_QP *qp = make_qp(e, 4);
	struct sw_qp *q = to_sw_qp(qp);
	NDK_RESULT_EX res[2];
	int peer;

	expect_initiator(qp, STATUS_CONNECTION_INVALID);
	/* Receives may be pre-posted (docs/ndk.md, "Work requests"). */
	assert_int_equal(qp->Dispatch->NdkReceive(qp, (PVOID)1, NULL, 0),
			 STATUS_SUCCESS);

	assert_int_equal(sw_qp_cm_connecting(q, NULL), 0);
	expect_initiator(qp, STATUS_CONNECTION_INVALID);
	assert_int_equal(establish(q, 4, 4, &peer), 0);
	assert_non_null(q->dp);
	/* A peer's disconnect does not flush (docs/ndk.md, "Disconnect"). */
	assert_int_equal(sw_qp_cm_disconnected(q, false, false), 0);
	assert_int_equal(drain(e->rcq, res, 2), 0);
	expect_initiator(qp, STATUS_CONNECTION_INVALID);
	close_obj(qp);
	close(peer);
	assert_int_equal(drain(e->rcq, res, 2), 1);
	expect_cancelled(&res[0], 1);
}

static void test_state_machine(void **state)
{
	struct env *e = *state;
	NDK_QP *qp = make_qp(e, 4);
	struct sw_qp *q = to_sw_qp(qp);
	struct sw_connector *conn = (struct sw_connector *)(uintptr_t)0x10;
	NDK_RESULT_EX res[2];
	int peer;

	assert_int_equal(sw_qp_state(q), SW_QP_IDLE);
	assert_string_equal(sw_qp_state_name(SW_QP_CONNECTED), "CONNECTED");
	assert_string_equal(sw_qp_state_name(SW_QP_STATE_COUNT), "?");
	/* Illegal transitions fail and change nothing. */
	assert_int_equal(sw_qp_set_state(q, SW_QP_CONNECTED), -EINVAL);
	assert_int_equal(establish(q, 1, 1, &peer), -EINVAL);
	close(peer);
	assert_null(q->dp);
	assert_int_equal(sw_qp_cm_failed(q), -EINVAL);
	assert_int_equal(sw_qp_cm_disconnected(q, false, true), -EINVAL);
	assert_int_equal(sw_qp_state(q), SW_QP_IDLE);

	/* A failed attempt leaves the QP reusable. */
	assert_int_equal(sw_qp_cm_connecting(q, conn), 0);
	assert_ptr_equal(q->conn, conn);
	assert_int_equal(sw_qp_cm_connecting(q, conn), -EBUSY);
	assert_int_equal(sw_qp_cm_failed(q), 0);
	assert_null(q->conn);
	assert_int_equal(sw_qp_state(q), SW_QP_IDLE);

	assert_int_equal(sw_qp_cm_connecting(q, conn), 0);
	assert_int_equal(establish(q, 8, 2, &peer), 0);
	assert_int_equal(sw_qp_state(q), SW_QP_CONNECTED);
	assert_int_equal(q->iq.ird, 8);
	assert_int_equal(q->iq.ord, 2);

	/* NdkDisconnect flushes implicitly (docs/ndk.md, "Disconnect"). */
	assert_int_equal(qp->Dispatch->NdkReceive(qp, (PVOID)3, NULL, 0),
			 STATUS_SUCCESS);
	assert_int_equal(sw_qp_cm_disconnected(q, false, true), 0);
	assert_int_equal(sw_qp_state(q), SW_QP_DISCONNECTED);
	assert_null(q->conn);
	assert_int_equal(drain(e->rcq, res, 2), 1);
	expect_cancelled(&res[0], 3);
	/* Not reusable once it was connected. */
	assert_int_equal(sw_qp_cm_connecting(q, conn), -EINVAL);
	assert_int_equal(sw_qp_set_state(q, SW_QP_ERROR), 0);
	assert_int_equal(sw_qp_set_state(q, SW_QP_DISCONNECTED), -EINVAL);
	close_obj(qp);
	close(peer);
}

/* Flush: each receive once, STATUS_CANCELLED, in posting order. */
static void test_flush_order(void **state)
{
	struct env *e = *state;
	NDK_QP *qp = make_qp(e, 256);
	NDK_SGE sge[2];
	NDK_RESULT_EX *res = calloc(512, sizeof(*res));
	uintptr_t i;

	assert_non_null(res);
	memset(sge, 0, sizeof(sge));
	for (i = 0; i < 256; i++)
		assert_int_equal(qp->Dispatch->NdkReceive(qp, (PVOID)(i + 1),
							  sge, i % 3),
				 STATUS_SUCCESS);
	qp->Dispatch->NdkFlush(qp);
	qp->Dispatch->NdkFlush(qp);
	assert_int_equal(drain(e->rcq, res, 512), 256);
	for (i = 0; i < 256; i++)
		expect_cancelled(&res[i], i + 1);
	/* Receive completions never go to the initiator CQ. */
	assert_int_equal(drain(e->icq, res, 512), 0);
	close_obj(qp);
	assert_int_equal(drain(e->rcq, res, 512), 0);
	free(res);
}

#define RACE_N 10000

struct race {
	NDK_QP *qp;
	atomic_bool done;
};

static void *poster(void *arg)
{
	struct race *r = arg;
	NDK_SGE sge = { 0 };
	uintptr_t i;
	NTSTATUS st;

	for (i = 0; i < RACE_N; i++) {
		do {
			st = r->qp->Dispatch->NdkReceive(r->qp, (PVOID)(i + 1),
							 &sge, 1);
			if (st == STATUS_INSUFFICIENT_RESOURCES)
				sched_yield();
		} while (st == STATUS_INSUFFICIENT_RESOURCES);
		if (st != STATUS_SUCCESS)
			break;
	}
	atomic_store(&r->done, true);
	return NULL;
}

static void *flusher(void *arg)
{
	struct race *r = arg;

	while (!atomic_load(&r->done))
		r->qp->Dispatch->NdkFlush(r->qp);
	return NULL;
}

/* Flush racing with posting loses nothing and duplicates nothing. */
static void test_flush_concurrent(void **state)
{
	struct env *e = *state;
	NDK_QP *qp = make_qp(e, 64);
	NDK_RESULT_EX *res = calloc(RACE_N + 1, sizeof(*res));
	struct race r = { .qp = qp };
	pthread_t tp, tf;
	uintptr_t i;

	assert_non_null(res);
	assert_int_equal(pthread_create(&tp, NULL, poster, &r), 0);
	assert_int_equal(pthread_create(&tf, NULL, flusher, &r), 0);
	pthread_join(tp, NULL);
	pthread_join(tf, NULL);
	qp->Dispatch->NdkFlush(qp);
	assert_int_equal(drain(e->rcq, res, RACE_N + 1), RACE_N);
	for (i = 0; i < RACE_N; i++)
		expect_cancelled(&res[i], i + 1);
	close_obj(qp);
	assert_int_equal(drain(e->rcq, res, RACE_N + 1), 0);
	free(res);
}

/* Closing the QP completes every outstanding receive, before it returns. */
static void test_close_flushes(void **state)
{
	struct env *e = *state;
	NDK_QP *qp = make_qp(e, 16);
	NDK_RESULT_EX res[32];
	uintptr_t i;

	for (i = 0; i < 16; i++)
		assert_int_equal(
			qp->Dispatch->NdkReceive(qp, (PVOID)(i + 1), NULL, 0),
			STATUS_SUCCESS);
	assert_int_equal(qp->Dispatch->NdkCloseQp(&qp->Header, NULL, NULL),
			 STATUS_SUCCESS);
	assert_int_equal(drain(e->rcq, res, 32), 16);
	for (i = 0; i < 16; i++)
		expect_cancelled(&res[i], i + 1);
}

/*
 * Close order: PD and both CQs closed before the QP pend; they complete
 * only once the QP is closed, each once, with no callback after.
 */
static void test_close_order(void **state)
{
	struct env *e = *state;
	struct closes c = { .want = 2 };
	struct close_ctx pd_ctx = { &c, 1 }, rcq_ctx = { &c, 2 };
	struct close_ctx icq_ctx = { &c, 3 }, qp_ctx = { &c, 4 };
	NDK_PD *pd = NULL;
	NDK_CQ *rcq = make_cq(e->ad, 64), *icq = make_cq(e->ad, 64);
	NDK_QP *qp = NULL;
	NDK_RESULT_EX res[4];

	assert_int_equal(e->ad->Dispatch->NdkCreatePd(e->ad, NULL, NULL, &pd),
			 STATUS_SUCCESS);
	assert_int_equal(pd->Dispatch->NdkCreateQp(pd, rcq, icq, QPCTX, 4, 4, 1,
						   1, 0, NULL, NULL, &qp),
			 STATUS_SUCCESS);
	assert_int_equal(
		pd->Dispatch->NdkClosePd(&pd->Header, on_close, &pd_ctx),
		STATUS_PENDING);
	assert_int_equal(
		icq->Dispatch->NdkCloseCq(&icq->Header, on_close, &icq_ctx),
		STATUS_PENDING);
	tu_sleep_ms(20);
	assert_int_equal(atomic_load(&c.n), 0);
	/* The QP still works while its antecedents' closes pend. */
	assert_int_equal(qp->Dispatch->NdkReceive(qp, (PVOID)9, NULL, 0),
			 STATUS_SUCCESS);
	assert_int_equal(
		qp->Dispatch->NdkCloseQp(&qp->Header, on_close, &qp_ctx),
		STATUS_SUCCESS);
	assert_int_equal(drain(rcq, res, 4), 1);
	expect_cancelled(&res[0], 9);
	assert_true(tu_wait_until(closes_reached, &c, 5000));
	assert_int_equal(
		rcq->Dispatch->NdkCloseCq(&rcq->Header, on_close, &rcq_ctx),
		STATUS_SUCCESS);
	tu_sleep_ms(20);
	/* Inline closes have no callback: PD and ICQ once each. */
	assert_int_equal(atomic_load(&c.n), 2);
	assert_int_equal(atomic_load(&c.seen), (1 << 1) | (1 << 3));
}

/* A QP cannot be created on a PD whose close is pending. */
static void test_create_on_closing_pd(void **state)
{
	struct env *e = *state;
	struct closes c = { .want = 1 };
	struct close_ctx pd_ctx = { &c, 1 };
	NDK_PD *pd = NULL;
	NDK_QP *qp = NULL, *qp2 = NULL;

	assert_int_equal(e->ad->Dispatch->NdkCreatePd(e->ad, NULL, NULL, &pd),
			 STATUS_SUCCESS);
	assert_int_equal(pd->Dispatch->NdkCreateQp(pd, e->rcq, e->icq, NULL, 4,
						   4, 1, 1, 0, NULL, NULL, &qp),
			 STATUS_SUCCESS);
	assert_int_equal(
		pd->Dispatch->NdkClosePd(&pd->Header, on_close, &pd_ctx),
		STATUS_PENDING);
	assert_int_equal(pd->Dispatch->NdkCreateQp(pd, e->rcq, e->icq, NULL, 4,
						   4, 1, 1, 0, NULL, NULL,
						   &qp2),
			 STATUS_INVALID_PARAMETER);
	assert_null(qp2);
	assert_int_equal(atomic_load(&c.n), 0);
	close_obj(qp);
	assert_true(tu_wait_until(closes_reached, &c, 5000));
}

/* Data-path hooks: a taken receive holds later flushed ones back. */
static void test_take_complete_order(void **state)
{
	struct env *e = *state;
	NDK_QP *qp = make_qp(e, 8);
	struct sw_qp *q = to_sw_qp(qp);
	struct sw_rqe *r1, *r2;
	NDK_SGE sge = { .Length = 100, .MemoryRegionToken = 3 };
	NDK_RESULT_EX res[8];
	uintptr_t i;

	for (i = 1; i <= 4; i++)
		assert_int_equal(
			qp->Dispatch->NdkReceive(qp, (PVOID)i, &sge, 1),
			STATUS_SUCCESS);
	r1 = sw_rq_take(&q->rq);
	assert_non_null(r1);
	assert_ptr_equal(r1->ctx, (PVOID)1);
	assert_int_equal(r1->nsge, 1);
	assert_int_equal(r1->sge[0].Length, 100);
	assert_int_equal(r1->sge[0].MemoryRegionToken, 3);
	r2 = sw_rq_take(&q->rq);
	assert_ptr_equal(r2->ctx, (PVOID)2);

	/* 3 and 4 are flushed but wait for 1 and 2, the order is kept. */
	qp->Dispatch->NdkFlush(qp);
	assert_int_equal(drain(e->rcq, res, 8), 0);
	assert_null(sw_rq_take(&q->rq));
	/* Posted after the flush: not affected by it. */
	assert_int_equal(qp->Dispatch->NdkReceive(qp, (PVOID)5, NULL, 0),
			 STATUS_SUCCESS);

	sw_rq_complete(&q->rq, r1, STATUS_SUCCESS, 42, NdkOperationTypeReceive,
		       0, false);
	assert_int_equal(drain(e->rcq, res, 8), 1);
	assert_int_equal(res[0].Status, STATUS_SUCCESS);
	assert_int_equal(res[0].BytesTransferred, 42);
	assert_ptr_equal(res[0].RequestContext, (PVOID)1);
	assert_ptr_equal(res[0].QPContext, QPCTX);

	sw_rq_complete(&q->rq, r2, STATUS_SUCCESS, 7,
		       NdkOperationTypeReceiveAndInvalidate, 0x1234, false);
	assert_int_equal(drain(e->rcq, res, 8), 3);
	assert_ptr_equal(res[0].RequestContext, (PVOID)2);
	assert_int_equal(res[0].Type, NdkOperationTypeReceiveAndInvalidate);
	assert_int_equal(res[0].TypeSpecificCompletionOutput, 0x1234);
	expect_cancelled(&res[1], 3);
	expect_cancelled(&res[2], 4);
	/* Completing twice is ignored. */
	sw_rq_complete(&q->rq, r2, STATUS_SUCCESS, 7, NdkOperationTypeReceive,
		       0, false);
	assert_int_equal(drain(e->rcq, res, 8), 0);

	/* Closing cancels a receive the data path still holds, once. */
	r1 = sw_rq_take(&q->rq);
	assert_ptr_equal(r1->ctx, (PVOID)5);
	close_obj(qp);
	assert_int_equal(drain(e->rcq, res, 8), 1);
	expect_cancelled(&res[0], 5);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_create_limits, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_create_at_limits, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_create_foreign_cq, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_same_cq, setup, teardown),
		cmocka_unit_test_setup_teardown(test_receive_limits, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_unconnected_wrs, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_state_machine, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_flush_order, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_flush_concurrent, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_close_flushes, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_close_order, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_create_on_closing_pd,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_take_complete_order, setup,
						teardown),
	};

	return cmocka_run_group_tests_name("qp", tests, NULL, NULL);
}
