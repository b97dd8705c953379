/* SPDX-License-Identifier: MIT */
/*
 * Queue pair: NdkCreateQp(WithSrq), NdkReceive, NdkFlush, the QP state
 * machine, and the initiator work requests, which go to the data path
 * once the QP is connected.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "front/adapter.h"
#include "core/log.h"
#include "qp/provider.h"
#include "qp/cq.h"
#include "qp/dp.h"
#include "qp/dp_tx.h"
#include "qp/pd.h"
#include "qp/qp.h"
#include "qp/rq.h"
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

	NDK_ASSERT_LOCKED(&qp->lock);

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

	ndk_lock(&qp->lock);
	ret = qp_set_state_locked(qp, to, file, line);
	ndk_unlock(&qp->lock);
	return ret;
}

int ndk_qp_cm_connecting(struct ndk_qp *qp, struct ndk_connector *conn)
{
	int ret;

	ndk_lock(&qp->lock);
	if (qp->conn) {
		ndk_unlock(&qp->lock);
		return -EBUSY;
	}
	ret = set_state_locked(qp, NDK_QP_CONNECTING);
	if (!ret)
		qp->conn = conn;
	ndk_unlock(&qp->lock);
	return ret;
}

int ndk_qp_cm_established(struct ndk_qp *qp, const struct ndk_dp_socket *s)
{
	struct ndk_dp_qp q = {
		.obj = &qp->obj,
		.rq = &qp->rq,
		.rcq = qp->rcq,
		.icq = qp->icq,
		.context = qp->context,
		.pd_id = qp->pd->id,
		.sq_depth = qp->iq.depth,
		.max_sge = qp->iq.max_sge,
		.inline_size = qp->iq.inline_size,
	};
	int ret = -EINVAL;

	ndk_lock(&qp->lock);
	/* Limits and data path before the state: a poster that sees
	 * CONNECTED may use them. */
	if (ndk_qp_state(qp) == NDK_QP_CONNECTING && !qp->dp) {
		ret = ndk_dp_attach(&q, s, &qp->dp);
		if (!ret) {
			qp->iq.ird = s->ird;
			qp->iq.ord = s->ord;
			ret = set_state_locked(qp, NDK_QP_CONNECTED);
		}
	}
	ndk_unlock(&qp->lock);
	return ret;
}

int ndk_qp_cm_failed(struct ndk_qp *qp)
{
	int ret = -EINVAL;

	ndk_lock(&qp->lock);
	/* Only an attempt that never got established goes back to IDLE. */
	if (ndk_qp_state(qp) == NDK_QP_CONNECTING)
		ret = set_state_locked(qp, NDK_QP_IDLE);
	if (!ret)
		qp->conn = NULL;
	ndk_unlock(&qp->lock);
	return ret;
}

int ndk_qp_cm_disconnected(struct ndk_qp *qp, bool fatal, bool flush)
{
	int ret;

	ndk_lock(&qp->lock);
	ret = set_state_locked(qp, fatal ? NDK_QP_ERROR : NDK_QP_DISCONNECTED);
	if (!ret)
		qp->conn = NULL;
	ndk_unlock(&qp->lock);
	if (!ret && flush)
		ndk_qp_flush(qp);
	return ret;
}

void ndk_qp_flush(struct ndk_qp *qp)
{
	ndk_rq_flush(&qp->rq);
	if (qp->dp)
		ndk_dp_flush(qp->dp);
}

/* No state check: receives may be posted before the connection is up
 * (docs/ndk.md, "Work requests"). */
static NTSTATUS qp_receive(NDK_QP *pNdkQp, PVOID RequestContext,
			   CONST NDK_SGE *pSgl, ULONG nSge)
{
	return ndk_rq_post(&to_ndk_qp(pNdkQp)->rq, RequestContext, pSgl, nSge);
}

static VOID qp_flush(NDK_QP *pNdkQp)
{
	ndk_qp_flush(to_ndk_qp(pNdkQp));
}

/*
 * Initiator WRs (docs/ndk.md, "Work requests"). A QP that is not
 * connected fails them inline with STATUS_CONNECTION_INVALID; the rest is
 * qp/dp_tx.c. An inline failure first sends what was posted with
 * NDK_OP_FLAG_DEFER before it (docs/ndk.md, "Deferred processing"): the
 * consumer will not post the request that would have.
 */
static struct ndk_dp *qp_dp(NDK_QP *pNdkQp)
{
	struct ndk_qp *qp = to_ndk_qp(pNdkQp);

	return ndk_qp_state(qp) == NDK_QP_CONNECTED ? qp->dp : NULL;
}

static NTSTATUS qp_posted(NDK_QP *pNdkQp, NTSTATUS status)
{
	struct ndk_dp *dp = to_ndk_qp(pNdkQp)->dp;

	if (!NT_SUCCESS(status) && dp)
		ndk_dp_kick(dp);
	return status;
}

static NTSTATUS qp_send(NDK_QP *pNdkQp, PVOID RequestContext,
			CONST NDK_SGE *pSgl, ULONG nSge, ULONG Flags)
{
	struct ndk_dp *dp = qp_dp(pNdkQp);

	return qp_posted(pNdkQp, dp ? ndk_dp_post_send(dp, RequestContext, pSgl,
						       nSge, Flags, false, 0)
				    : STATUS_CONNECTION_INVALID);
}

static NTSTATUS qp_send_and_invalidate(NDK_QP *pNdkQp, PVOID RequestContext,
				       CONST NDK_SGE *pSgl, ULONG nSge,
				       ULONG Flags, UINT32 RemoteToken)
{
	struct ndk_dp *dp = qp_dp(pNdkQp);

	return qp_posted(pNdkQp,
			 dp ? ndk_dp_post_send(dp, RequestContext, pSgl, nSge,
					       Flags, true, RemoteToken)
			    : STATUS_CONNECTION_INVALID);
}

static NTSTATUS qp_bind(NDK_QP *pNdkQp, PVOID RequestContext, NDK_MR *pMr,
			NDK_MW *pMw, PVOID VirtualAddress, SIZE_T Length,
			ULONG Flags)
{
	struct ndk_dp *dp = qp_dp(pNdkQp);

	return qp_posted(pNdkQp,
			 dp ? ndk_dp_post_bind(dp, RequestContext, pMr, pMw,
					       VirtualAddress, Length, Flags)
			    : STATUS_CONNECTION_INVALID);
}

static NTSTATUS qp_fast_register(NDK_QP *pNdkQp, PVOID RequestContext,
				 NDK_MR *pMr, ULONG AdapterPageCount,
				 CONST NDK_LOGICAL_ADDRESS *AdapterPageArray,
				 ULONG FBO, SIZE_T Length,
				 PVOID BaseVirtualAddress, ULONG Flags)
{
	struct ndk_dp *dp = qp_dp(pNdkQp);

	return qp_posted(pNdkQp,
			 dp ? ndk_dp_post_fast_register(
				      dp, RequestContext, pMr, AdapterPageCount,
				      AdapterPageArray, FBO, Length,
				      BaseVirtualAddress, Flags)
			    : STATUS_CONNECTION_INVALID);
}

static NTSTATUS qp_invalidate(NDK_QP *pNdkQp, PVOID RequestContext,
			      NDK_OBJECT_HEADER *pNdkMrOrMw, ULONG Flags)
{
	struct ndk_dp *dp = qp_dp(pNdkQp);

	return qp_posted(pNdkQp, dp ? ndk_dp_post_invalidate(dp, RequestContext,
							     pNdkMrOrMw, Flags)
				    : STATUS_CONNECTION_INVALID);
}

static NTSTATUS qp_rdma(NDK_QP *pNdkQp, enum ndk_wqe_op op,
			PVOID RequestContext, CONST NDK_SGE *pSgl, ULONG nSge,
			UINT64 RemoteAddress, UINT32 RemoteToken, ULONG Flags)
{
	struct ndk_dp *dp = qp_dp(pNdkQp);

	return qp_posted(pNdkQp,
			 dp ? ndk_dp_post_rdma(dp, op, RequestContext, pSgl,
					       nSge, RemoteAddress, RemoteToken,
					       Flags)
			    : STATUS_CONNECTION_INVALID);
}

static NTSTATUS qp_read(NDK_QP *pNdkQp, PVOID RequestContext,
			CONST NDK_SGE *pSgl, ULONG nSge, UINT64 RemoteAddress,
			UINT32 RemoteToken, ULONG Flags)
{
	return qp_rdma(pNdkQp, NDK_WQE_READ, RequestContext, pSgl, nSge,
		       RemoteAddress, RemoteToken, Flags);
}

static NTSTATUS qp_write(NDK_QP *pNdkQp, PVOID RequestContext,
			 CONST NDK_SGE *pSgl, ULONG nSge, UINT64 RemoteAddress,
			 UINT32 RemoteToken, ULONG Flags)
{
	return qp_rdma(pNdkQp, NDK_WQE_WRITE, RequestContext, pSgl, nSge,
		       RemoteAddress, RemoteToken, Flags);
}

static void qp_close_begin(struct ndk_obj *obj)
{
	struct ndk_qp *qp = container_of(obj, struct ndk_qp, obj);

	ndk_lock(&qp->lock);
	set_state_locked(qp, NDK_QP_CLOSED);
	ndk_unlock(&qp->lock);
	/*
	 * Every outstanding request completes once, before the close does
	 * (NDKPI Object Lifetime Requirements): the CQs are our
	 * antecedents, so they are still there. Receives the data path
	 * holds are cancelled too, and it stops using the socket.
	 */
	ndk_rq_close(&qp->rq);
	if (qp->dp) {
		ndk_dp_detach(qp->dp);
		ndk_dp_flush(qp->dp);
	}
}

static void qp_destroy(struct ndk_obj *obj)
{
	struct ndk_qp *qp = container_of(obj, struct ndk_qp, obj);

	ndk_dp_free(qp->dp);
	ndk_rq_destroy(&qp->rq);
	ndk_lock_destroy(&qp->lock);
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

/* The header is the provider's (docs/ndk.md, "Objects"): reject the
 * wrong object. */
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
	 * Every limit against NDK_ADAPTER_INFO (NDK_FN_CREATE_QP). Zero
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
	ndk_lock_init(&qp->lock, NDK_LOCK_QP);
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
	if (ndk_rq_init(&qp->rq, rq_depth, rq_sge, qp->srq, qp->rcq,
			QPContext)) {
		qp_destroy(&qp->obj);
		return STATUS_INSUFFICIENT_RESOURCES;
	}

	/* Antecedents (NDKPI Object Lifetime Requirements); one CQ for both queues is linked once. */
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
