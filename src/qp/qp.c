/* SPDX-License-Identifier: MIT */
/*
 * Queue pair: NdkCreateQp(WithSrq), NdkReceive, NdkFlush, the QP state
 * machine and the receive-side data-path hooks. The initiator-queue WRs
 * wait for the data path; until then they only check the QP state.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "front/adapter.h"
#include "core/log.h"
#include "front/provider.h"
#include "qp/cq.h"
#include "qp/pd.h"
#include "qp/dp.h"
#include "qp/qp.h"
#include "qp/srq.h"

static const char *const qp_state_names[NDK_QP_STATE_COUNT] = {
	[NDK_QP_IDLE] = "IDLE",
	[NDK_QP_CONNECTING] = "CONNECTING",
	[NDK_QP_CONNECTED] = "CONNECTED",
	[NDK_QP_DISCONNECTED] = "DISCONNECTED",
	[NDK_QP_ERROR] = "ERROR",
	[NDK_QP_CLOSED] = "CLOSED",
};

const char *ndk_qp_state_name(enum ndk_qp_state state)
{
	if ((unsigned int)state >= NDK_QP_STATE_COUNT)
		return "?";
	return qp_state_names[state];
}

/* Legal transitions, one function per source state. */
static bool from_idle(enum ndk_qp_state to)
{
	return to == NDK_QP_CONNECTING || to == NDK_QP_CLOSED;
}

static bool from_connecting(enum ndk_qp_state to)
{
	/* IDLE: a failed attempt leaves the QP reusable (NDSPI). */
	return to == NDK_QP_CONNECTED || to == NDK_QP_IDLE ||
	       to == NDK_QP_ERROR || to == NDK_QP_CLOSED;
}

static bool from_connected(enum ndk_qp_state to)
{
	return to == NDK_QP_DISCONNECTED || to == NDK_QP_ERROR ||
	       to == NDK_QP_CLOSED;
}

static bool from_disconnected(enum ndk_qp_state to)
{
	return to == NDK_QP_ERROR || to == NDK_QP_CLOSED;
}

static bool from_error(enum ndk_qp_state to)
{
	return to == NDK_QP_CLOSED;
}

static bool from_closed(enum ndk_qp_state to)
{
	return false;
}

static bool (*const qp_next_state[NDK_QP_STATE_COUNT])(enum ndk_qp_state) = {
	[NDK_QP_IDLE] = from_idle,
	[NDK_QP_CONNECTING] = from_connecting,
	[NDK_QP_CONNECTED] = from_connected,
	[NDK_QP_DISCONNECTED] = from_disconnected,
	[NDK_QP_ERROR] = from_error,
	[NDK_QP_CLOSED] = from_closed,
};

/* qp->lock held. */
static int qp_set_state_locked(struct ndk_qp *qp, enum ndk_qp_state to,
			       const char *file, int line)
{
	enum ndk_qp_state from = ndk_qp_state(qp);

	if ((unsigned int)to >= NDK_QP_STATE_COUNT ||
	    !qp_next_state[from](to)) {
		ndk_warn("qp %p: illegal transition %s -> %s (%s:%d)",
			 (void *)qp, ndk_qp_state_name(from),
			 ndk_qp_state_name(to), file, line);
		return -EINVAL;
	}
	ndk_dbg("qp %p: %s -> %s (%s:%d)", (void *)qp, ndk_qp_state_name(from),
		ndk_qp_state_name(to), file, line);
	atomic_store_explicit(&qp->state, to, memory_order_release);
	return 0;
}
#define set_state_locked(qp, to) \
	qp_set_state_locked(qp, to, NDK_QP_FILE, __LINE__)

int ndk_qp_set_state_at(struct ndk_qp *qp, enum ndk_qp_state to,
			const char *file, int line)
{
	int ret;

	pthread_mutex_lock(&qp->lock);
	ret = qp_set_state_locked(qp, to, file, line);
	pthread_mutex_unlock(&qp->lock);
	return ret;
}

int ndk_qp_cm_connecting(struct ndk_qp *qp, struct ndk_connector *conn)
{
	int ret;

	pthread_mutex_lock(&qp->lock);
	if (qp->conn) {
		pthread_mutex_unlock(&qp->lock);
		return -EBUSY;
	}
	ret = set_state_locked(qp, NDK_QP_CONNECTING);
	if (!ret)
		qp->conn = conn;
	pthread_mutex_unlock(&qp->lock);
	return ret;
}

int ndk_qp_cm_connected(struct ndk_qp *qp, uint32_t ird, uint32_t ord)
{
	int ret;

	pthread_mutex_lock(&qp->lock);
	/*
	 * Limits before the state: a poster that sees CONNECTED may use them.
	 * Not touched otherwise, the setter then logs and fails.
	 */
	if (ndk_qp_state(qp) == NDK_QP_CONNECTING) {
		qp->iq.ird = ird;
		qp->iq.ord = ord;
	}
	ret = set_state_locked(qp, NDK_QP_CONNECTED);
	pthread_mutex_unlock(&qp->lock);
	return ret;
}

int ndk_qp_cm_failed(struct ndk_qp *qp)
{
	int ret = -EINVAL;

	pthread_mutex_lock(&qp->lock);
	/* Only an attempt that never got established goes back to IDLE. */
	if (ndk_qp_state(qp) == NDK_QP_CONNECTING)
		ret = set_state_locked(qp, NDK_QP_IDLE);
	if (!ret)
		qp->conn = NULL;
	pthread_mutex_unlock(&qp->lock);
	return ret;
}

int ndk_qp_cm_disconnected(struct ndk_qp *qp, bool fatal, bool flush)
{
	int ret;

	pthread_mutex_lock(&qp->lock);
	ret = set_state_locked(qp, fatal ? NDK_QP_ERROR : NDK_QP_DISCONNECTED);
	if (!ret)
		qp->conn = NULL;
	pthread_mutex_unlock(&qp->lock);
	if (!ret && flush)
		ndk_qp_flush(qp);
	return ret;
}

static struct ndk_rqe *rq_slot(struct ndk_rq *rq, uint32_t idx)
{
	return (struct ndk_rqe *)(void *)(rq->ring +
					  (size_t)(idx & (rq->size - 1)) *
						  ndk_rqe_stride(rq->max_sge));
}

static void qp_push_se(struct ndk_qp *qp, struct ndk_cq *cq, PVOID ctx,
		       NTSTATUS status, ULONG bytes, NDK_OPERATION_TYPE type,
		       ULONG_PTR tsco, bool solicited)
{
	NDK_RESULT_EX res = {
		.Status = status,
		.BytesTransferred = bytes,
		.QPContext = qp->context,
		.RequestContext = ctx,
		.Type = type,
		.ProviderErrorCode = 0,
		.TypeSpecificCompletionOutput = tsco,
	};

	/* On overrun the CQ reports STATUS_BUFFER_OVERFLOW itself. */
	if (ndk_cq_push(cq, &res, solicited))
		ndk_warn("qp %p: CQ %p overrun, completion dropped", (void *)qp,
			 (void *)cq);
}

static void qp_push(struct ndk_qp *qp, struct ndk_cq *cq, PVOID ctx,
		    NTSTATUS status, ULONG bytes, NDK_OPERATION_TYPE type,
		    ULONG_PTR tsco)
{
	qp_push_se(qp, cq, ctx, status, bytes, type, tsco, false);
}

/*
 * rq.lock held: pushes the flushed receives at the front of the ring. It
 * stops at a receive the data path is still filling, so completions stay
 * in posting order.
 */
static void rq_push_flushed_locked(struct ndk_qp *qp)
{
	struct ndk_rq *rq = &qp->rq;
	struct ndk_rqe *e;

	while (rq->done != rq->head) {
		e = rq_slot(rq, rq->done);
		if (e->state != NDK_RQE_FLUSHED)
			break;
		qp_push(qp, qp->rcq, e->ctx, STATUS_CANCELLED, 0,
			NdkOperationTypeReceive, 0);
		rq->done++;
	}
}

/*
 * Cancels the posted receives; with taken also those the data path holds
 * (close: it must not touch them any more).
 */
static void rq_flush(struct ndk_qp *qp, bool taken)
{
	struct ndk_rq *rq = &qp->rq;
	uint32_t i;

	pthread_mutex_lock(&rq->lock);
	for (i = taken ? rq->done : rq->head; i != rq->tail; i++)
		rq_slot(rq, i)->state = NDK_RQE_FLUSHED;
	rq->head = rq->tail;
	rq_push_flushed_locked(qp);
	pthread_mutex_unlock(&rq->lock);
}

void ndk_qp_flush(struct ndk_qp *qp)
{
	rq_flush(qp, false);
	ndk_dp_flush(qp);
}

struct ndk_rqe *ndk_qp_recv_take(struct ndk_qp *qp)
{
	struct ndk_rq *rq = &qp->rq;
	struct ndk_rqe *e = NULL;

	pthread_mutex_lock(&rq->lock);
	if (ndk_qp_state(qp) == NDK_QP_CLOSED)
		goto out;
	if (qp->srq) {
		/* Move one from the SRQ into our ring of receives in progress. */
		if (rq->tail - rq->done >= rq->depth)
			goto out;
		e = rq_slot(rq, rq->tail);
		if (ndk_srq_take(qp->srq, e)) {
			e = NULL;
			goto out;
		}
		rq->tail++;
	} else {
		if (rq->head == rq->tail)
			goto out;
		e = rq_slot(rq, rq->head);
	}
	e->state = NDK_RQE_TAKEN;
	rq->head++;
out:
	pthread_mutex_unlock(&rq->lock);
	return e;
}

void ndk_qp_recv_complete(struct ndk_qp *qp, struct ndk_rqe *rqe,
			  NTSTATUS status, ULONG bytes, NDK_OPERATION_TYPE type,
			  ULONG_PTR tsco)
{
	ndk_qp_recv_complete_se(qp, rqe, status, bytes, type, tsco, false);
}

void ndk_qp_recv_complete_se(struct ndk_qp *qp, struct ndk_rqe *rqe,
			     NTSTATUS status, ULONG bytes,
			     NDK_OPERATION_TYPE type, ULONG_PTR tsco,
			     bool solicited)
{
	struct ndk_rq *rq = &qp->rq;

	pthread_mutex_lock(&rq->lock);
	if (rq->done == rq->head || rq_slot(rq, rq->done) != rqe ||
	    rqe->state != NDK_RQE_TAKEN) {
		/* Cancelled by the close already: it completed once. */
		pthread_mutex_unlock(&rq->lock);
		return;
	}
	/* An error status satisfies a SOLICITED arm anyway (9.6). */
	qp_push_se(qp, qp->rcq, rqe->ctx, status, bytes, type, tsco, solicited);
	rq->done++;
	/* Flushed receives queued behind this one may go now. */
	rq_push_flushed_locked(qp);
	pthread_mutex_unlock(&rq->lock);
}

static NTSTATUS qp_receive(NDK_QP *pNdkQp, PVOID RequestContext,
			   CONST NDK_SGE *pSgl, ULONG nSge)
{
	struct ndk_qp *qp = to_ndk_qp(pNdkQp);
	struct ndk_rq *rq = &qp->rq;
	struct ndk_rqe *e;

	/* Receives of a QP with an SRQ are posted to the SRQ only. */
	if (qp->srq)
		return STATUS_INVALID_DEVICE_REQUEST;
	if (nSge > rq->max_sge || (nSge && !pSgl))
		return STATUS_INVALID_PARAMETER;
	/*
	 * No state check: receives may be posted before the connection is
	 * up (ndkpi.md 6.5). Posts are serialized per queue by the consumer
	 * (ndkpi.md 9.4); the lock is against NdkFlush and the data path.
	 */
	pthread_mutex_lock(&rq->lock);
	if (rq->tail - rq->done >= rq->depth) {
		pthread_mutex_unlock(&rq->lock);
		return STATUS_INSUFFICIENT_RESOURCES;
	}
	e = rq_slot(rq, rq->tail);
	e->ctx = RequestContext;
	e->nsge = nSge;
	e->state = NDK_RQE_POSTED;
	if (nSge)
		memcpy(e->sge, pSgl, (size_t)nSge * sizeof(NDK_SGE));
	rq->tail++;
	pthread_mutex_unlock(&rq->lock);
	return STATUS_SUCCESS;
}

static VOID qp_flush(NDK_QP *pNdkQp)
{
	ndk_qp_flush(to_ndk_qp(pNdkQp));
}

/*
 * Initiator WRs (ndkpi.md 4.7). A QP that is not connected fails them
 * inline with STATUS_CONNECTION_INVALID (6.5); the rest is qp/dp_tx.c.
 * An inline failure first sends what was posted with NDK_OP_FLAG_DEFER
 * before it (ndkpi.md 9.5): the consumer will not post the request that
 * would have.
 */
static NTSTATUS qp_posted(NDK_QP *pNdkQp, NTSTATUS status)
{
	if (!NT_SUCCESS(status))
		ndk_dp_kick(to_ndk_qp(pNdkQp));
	return status;
}

static NTSTATUS qp_send(NDK_QP *pNdkQp, PVOID RequestContext,
			CONST NDK_SGE *pSgl, ULONG nSge, ULONG Flags)
{
	return qp_posted(pNdkQp,
			 ndk_dp_post_send(to_ndk_qp(pNdkQp), RequestContext,
					  pSgl, nSge, Flags, false, 0));
}

static NTSTATUS qp_send_and_invalidate(NDK_QP *pNdkQp, PVOID RequestContext,
				       CONST NDK_SGE *pSgl, ULONG nSge,
				       ULONG Flags, UINT32 RemoteToken)
{
	return qp_posted(pNdkQp, ndk_dp_post_send(to_ndk_qp(pNdkQp),
						  RequestContext, pSgl, nSge,
						  Flags, true, RemoteToken));
}

static NTSTATUS qp_bind(NDK_QP *pNdkQp, PVOID RequestContext, NDK_MR *pMr,
			NDK_MW *pMw, PVOID VirtualAddress, SIZE_T Length,
			ULONG Flags)
{
	return qp_posted(
		pNdkQp, ndk_dp_post_bind(to_ndk_qp(pNdkQp), RequestContext, pMr,
					 pMw, VirtualAddress, Length, Flags));
}

static NTSTATUS qp_fast_register(NDK_QP *pNdkQp, PVOID RequestContext,
				 NDK_MR *pMr, ULONG AdapterPageCount,
				 CONST NDK_LOGICAL_ADDRESS *AdapterPageArray,
				 ULONG FBO, SIZE_T Length,
				 PVOID BaseVirtualAddress, ULONG Flags)
{
	return qp_posted(pNdkQp,
			 ndk_dp_post_fast_register(
				 to_ndk_qp(pNdkQp), RequestContext, pMr,
				 AdapterPageCount, AdapterPageArray, FBO,
				 Length, BaseVirtualAddress, Flags));
}

static NTSTATUS qp_invalidate(NDK_QP *pNdkQp, PVOID RequestContext,
			      NDK_OBJECT_HEADER *pNdkMrOrMw, ULONG Flags)
{
	return qp_posted(pNdkQp, ndk_dp_post_invalidate(to_ndk_qp(pNdkQp),
							RequestContext,
							pNdkMrOrMw, Flags));
}

static NTSTATUS qp_read(NDK_QP *pNdkQp, PVOID RequestContext,
			CONST NDK_SGE *pSgl, ULONG nSge, UINT64 RemoteAddress,
			UINT32 RemoteToken, ULONG Flags)
{
	return qp_posted(pNdkQp,
			 ndk_dp_post_rdma(to_ndk_qp(pNdkQp), NDK_WQE_READ,
					  RequestContext, pSgl, nSge,
					  RemoteAddress, RemoteToken, Flags));
}

static NTSTATUS qp_write(NDK_QP *pNdkQp, PVOID RequestContext,
			 CONST NDK_SGE *pSgl, ULONG nSge, UINT64 RemoteAddress,
			 UINT32 RemoteToken, ULONG Flags)
{
	return qp_posted(pNdkQp,
			 ndk_dp_post_rdma(to_ndk_qp(pNdkQp), NDK_WQE_WRITE,
					  RequestContext, pSgl, nSge,
					  RemoteAddress, RemoteToken, Flags));
}

static void qp_close_begin(struct ndk_obj *obj)
{
	struct ndk_qp *qp = container_of(obj, struct ndk_qp, obj);

	pthread_mutex_lock(&qp->lock);
	set_state_locked(qp, NDK_QP_CLOSED);
	pthread_mutex_unlock(&qp->lock);
	/*
	 * Every outstanding request completes once, before the close does
	 * (ndkpi.md 9.2): the CQs are our antecedents, so they are still
	 * there. Receives the data path holds are cancelled too; it must
	 * stop filling them before this point (its close hook goes here).
	 */
	rq_flush(qp, true);
	ndk_dp_detach(qp);
	ndk_dp_flush(qp);
}

static void qp_destroy(struct ndk_obj *obj)
{
	struct ndk_qp *qp = container_of(obj, struct ndk_qp, obj);

	ndk_dp_free(qp);
	pthread_mutex_destroy(&qp->rq.lock);
	pthread_mutex_destroy(&qp->lock);
	free(qp->rq.ring);
	free(qp);
}

static const struct ndk_obj_ops qp_ops = {
	.type = NdkObjectTypeQp,
	.name = "qp",
	.close_begin = qp_close_begin,
	.destroy = qp_destroy,
};

static const NDK_QP_DISPATCH qp_dispatch = {
	.NdkCloseQp = ndk_close_object,
	.NdkQueryExtension = ndk_query_extension,
	.NdkFlush = qp_flush,
	.NdkSend = qp_send,
	.NdkReceive = qp_receive,
	.NdkBind = qp_bind,
	.NdkFastRegister = qp_fast_register,
	.NdkInvalidate = qp_invalidate,
	.NdkRead = qp_read,
	.NdkWrite = qp_write,
	.NdkSendAndInvalidate = qp_send_and_invalidate,
};

/* The header is the provider's (ndkpi.md 2.1): reject the wrong object. */
static bool is_type(const void *obj, NDK_OBJECT_TYPE type)
{
	const NDK_OBJECT_HEADER *hdr = obj;

	return hdr && hdr->ObjectType == type;
}

/*
 * Common part of both create functions. rq_depth/rq_sge are the QP's own
 * receive queue limits, or 0 with an SRQ.
 */
static NTSTATUS qp_create(NDK_PD *pNdkPd, NDK_CQ *pReceiveCq,
			  NDK_CQ *pInitiatorCq, NDK_SRQ *pSrq, PVOID QPContext,
			  ULONG rq_depth, ULONG iq_depth, ULONG rq_sge,
			  ULONG iq_sge, ULONG inline_size, NDK_QP **ppNdkQp)
{
	struct ndk_obj *antes[NDK_OBJ_MAX_ANTECEDENTS];
	const NDK_ADAPTER_INFO *info;
	struct ndk_adapter *ad;
	struct ndk_pd *pd;
	struct ndk_qp *qp;
	unsigned int n = 0;
	NTSTATUS status;

	if (!pNdkPd || !ppNdkQp || !is_type(pReceiveCq, NdkObjectTypeCq) ||
	    !is_type(pInitiatorCq, NdkObjectTypeCq))
		return STATUS_INVALID_PARAMETER;
	pd = to_ndk_pd(pNdkPd);
	ad = pd->obj.adapter;
	info = &ad->info;
	/*
	 * Every limit against NDK_ADAPTER_INFO (ndkpi.md 4.3, 8). Zero
	 * MaxInitiatorRequestSge is allowed: zero-length Sends and Writes
	 * and inline Sends need no SGE slot, and NDK does not forbid it.
	 */
	if (!iq_depth || iq_depth > info->MaxInitiatorQueueDepth ||
	    iq_sge > info->MaxInitiatorRequestSge ||
	    inline_size > info->MaxInlineDataSize)
		return STATUS_INVALID_PARAMETER;
	if (!pSrq && (!rq_depth || rq_depth > info->MaxReceiveQueueDepth ||
		      !rq_sge || rq_sge > info->MaxReceiveRequestSge))
		return STATUS_INVALID_PARAMETER;

	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return STATUS_INSUFFICIENT_RESOURCES;
	pthread_mutex_init(&qp->lock, NULL);
	pthread_mutex_init(&qp->rq.lock, NULL);
	atomic_init(&qp->state, NDK_QP_IDLE);
	qp->pd = pd;
	qp->rcq = to_ndk_cq(pReceiveCq);
	qp->icq = to_ndk_cq(pInitiatorCq);
	qp->context = QPContext;
	qp->iq.depth = iq_depth;
	qp->iq.max_sge = iq_sge;
	qp->iq.inline_size = inline_size;
	if (pSrq) {
		qp->srq = to_ndk_srq(pSrq);
		rq_depth = NDK_QP_SRQ_INFLIGHT;
		rq_sge = qp->srq->max_sge;
	}
	qp->rq.depth = rq_depth;
	qp->rq.max_sge = rq_sge;
	for (qp->rq.size = 1; qp->rq.size < rq_depth; qp->rq.size <<= 1)
		;
	qp->rq.ring = calloc(qp->rq.size, ndk_rqe_stride(rq_sge));
	if (!qp->rq.ring) {
		qp_destroy(&qp->obj);
		return STATUS_INSUFFICIENT_RESOURCES;
	}

	/* Antecedents (ndkpi.md 9.1); one CQ for both queues is linked once. */
	antes[n++] = &pd->obj;
	antes[n++] = to_ndk_obj(&pReceiveCq->Header);
	if (pInitiatorCq != pReceiveCq)
		antes[n++] = to_ndk_obj(&pInitiatorCq->Header);
	if (pSrq)
		antes[n++] = &qp->srq->obj;
	status = ndk_obj_setup(&qp->obj, ad, &qp_ops, &qp_dispatch, antes, n);
	if (status)
		return status;
	*ppNdkQp = &qp->obj.pub.qp;
	return STATUS_SUCCESS;
}

NTSTATUS ndk_create_qp(NDK_PD *pNdkPd, NDK_CQ *pReceiveCq, NDK_CQ *pInitiatorCq,
		       PVOID QPContext, ULONG ReceiveQueueDepth,
		       ULONG InitiatorQueueDepth, ULONG MaxReceiveRequestSge,
		       ULONG MaxInitiatorRequestSge, ULONG InlineDataSize,
		       NDK_FN_CREATE_COMPLETION CreateCompletion,
		       PVOID RequestContext, NDK_QP **ppNdkQp)
{
	return qp_create(pNdkPd, pReceiveCq, pInitiatorCq, NULL, QPContext,
			 ReceiveQueueDepth, InitiatorQueueDepth,
			 MaxReceiveRequestSge, MaxInitiatorRequestSge,
			 InlineDataSize, ppNdkQp);
}

NTSTATUS ndk_create_qp_with_srq(NDK_PD *pNdkPd, NDK_CQ *pReceiveCq,
				NDK_CQ *pInitiatorCq, NDK_SRQ *pSrq,
				PVOID QPContext, ULONG InitiatorQueueDepth,
				ULONG MaxInitiatorRequestSge,
				ULONG InlineDataSize,
				NDK_FN_CREATE_COMPLETION CreateCompletion,
				PVOID RequestContext, NDK_QP **ppNdkQp)
{
	if (!is_type(pSrq, NdkObjectTypeSrq))
		return STATUS_INVALID_PARAMETER;
	return qp_create(pNdkPd, pReceiveCq, pInitiatorCq, pSrq, QPContext, 0,
			 InitiatorQueueDepth, 0, MaxInitiatorRequestSge,
			 InlineDataSize, ppNdkQp);
}
