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
#include "front/provider.h"
#include "sw/sw.h"
#include "sw/cq.h"
#include "sw/dp.h"
#include "sw/dp_tx.h"
#include "sw/pd.h"
#include "sw/qp.h"
#include "sw/rq.h"
#include "sw/srq.h"

static const char *const qp_state_names[SW_QP_STATE_COUNT] = {
	[SW_QP_IDLE] = "IDLE",		 [SW_QP_CONNECTING] = "CONNECTING",
	[SW_QP_CONNECTED] = "CONNECTED", [SW_QP_DISCONNECTED] = "DISCONNECTED",
	[SW_QP_ERROR] = "ERROR",	 [SW_QP_CLOSED] = "CLOSED",
};

const char *sw_qp_state_name(enum sw_qp_state state)
{
	if ((unsigned int)state >= SW_QP_STATE_COUNT)
		return "?";
	return qp_state_names[state];
}

/* Legal transitions, one function per source state. */
static bool from_idle(enum sw_qp_state to)
{
	return to == SW_QP_CONNECTING || to == SW_QP_CLOSED;
}

static bool from_connecting(enum sw_qp_state to)
{
	/* IDLE: a failed attempt leaves the QP reusable (NDSPI). */
	return to == SW_QP_CONNECTED || to == SW_QP_IDLE || to == SW_QP_ERROR ||
	       to == SW_QP_CLOSED;
}

static bool from_connected(enum sw_qp_state to)
{
	return to == SW_QP_DISCONNECTED || to == SW_QP_ERROR ||
	       to == SW_QP_CLOSED;
}

static bool from_disconnected(enum sw_qp_state to)
{
	return to == SW_QP_ERROR || to == SW_QP_CLOSED;
}

static bool from_error(enum sw_qp_state to)
{
	return to == SW_QP_CLOSED;
}

static bool from_closed(enum sw_qp_state to)
{
	return false;
}

static bool (*const qp_next_state[SW_QP_STATE_COUNT])(enum sw_qp_state) = {
	[SW_QP_IDLE] = from_idle,
	[SW_QP_CONNECTING] = from_connecting,
	[SW_QP_CONNECTED] = from_connected,
	[SW_QP_DISCONNECTED] = from_disconnected,
	[SW_QP_ERROR] = from_error,
	[SW_QP_CLOSED] = from_closed,
};

/* qp->lock held. */
static int qp_set_state_locked(struct sw_qp *qp, enum sw_qp_state to,
			       const char *file, int line)
{
	enum sw_qp_state from = sw_qp_state(qp);

	NDK_ASSERT_LOCKED(&qp->lock);

	if ((unsigned int)to >= SW_QP_STATE_COUNT || !qp_next_state[from](to)) {
		ndk_warn("qp %p: illegal transition %s -> %s (%s:%d)",
			 (void *)qp, sw_qp_state_name(from),
			 sw_qp_state_name(to), file, line);
		return -EINVAL;
	}
	ndk_dbg("qp %p: %s -> %s (%s:%d)", (void *)qp, sw_qp_state_name(from),
		sw_qp_state_name(to), file, line);
	atomic_store_explicit(&qp->state, to, memory_order_release);
	return 0;
}
#define set_state_locked(qp, to) \
	qp_set_state_locked(qp, to, SW_QP_FILE, __LINE__)

int sw_qp_set_state_at(struct sw_qp *qp, enum sw_qp_state to, const char *file,
		       int line)
{
	int ret;

	ndk_lock(&qp->lock);
	ret = qp_set_state_locked(qp, to, file, line);
	ndk_unlock(&qp->lock);
	return ret;
}

int sw_qp_cm_connecting(struct sw_qp *qp, struct sw_connector *conn)
{
	int ret;

	ndk_lock(&qp->lock);
	if (qp->conn) {
		ndk_unlock(&qp->lock);
		return -EBUSY;
	}
	ret = set_state_locked(qp, SW_QP_CONNECTING);
	if (!ret)
		qp->conn = conn;
	ndk_unlock(&qp->lock);
	return ret;
}

int sw_qp_cm_established(struct sw_qp *qp, const struct sw_dp_socket *s)
{
	struct sw_dp_qp q = {
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
	if (sw_qp_state(qp) == SW_QP_CONNECTING && !qp->dp) {
		ret = sw_dp_attach(&q, s, &qp->dp);
		if (!ret) {
			qp->iq.ird = s->ird;
			qp->iq.ord = s->ord;
			ret = set_state_locked(qp, SW_QP_CONNECTED);
		}
	}
	ndk_unlock(&qp->lock);
	return ret;
}

int sw_qp_cm_failed(struct sw_qp *qp)
{
	int ret = -EINVAL;

	ndk_lock(&qp->lock);
	/* Only an attempt that never got established goes back to IDLE. */
	if (sw_qp_state(qp) == SW_QP_CONNECTING)
		ret = set_state_locked(qp, SW_QP_IDLE);
	if (!ret)
		qp->conn = NULL;
	ndk_unlock(&qp->lock);
	return ret;
}

int sw_qp_cm_disconnected(struct sw_qp *qp, bool fatal, bool flush)
{
	int ret;

	ndk_lock(&qp->lock);
	ret = set_state_locked(qp, fatal ? SW_QP_ERROR : SW_QP_DISCONNECTED);
	if (!ret)
		qp->conn = NULL;
	ndk_unlock(&qp->lock);
	if (!ret && flush)
		sw_qp_flush(qp);
	return ret;
}

void sw_qp_flush(struct sw_qp *qp)
{
	sw_rq_flush(&qp->rq);
	if (qp->dp)
		sw_dp_flush(qp->dp);
}

/* No state check: receives may be posted before the connection is up
 * (docs/ndk.md, "Work requests"). */
static NDK_HOT NTSTATUS qp_receive(NDK_QP *pNdkQp, PVOID RequestContext,
				   CONST NDK_SGE *pSgl, ULONG nSge)
{
	return sw_rq_post(&to_sw_qp(pNdkQp)->rq, RequestContext, pSgl, nSge);
}

static VOID qp_flush(NDK_QP *pNdkQp)
{
	sw_qp_flush(to_sw_qp(pNdkQp));
}

/*
 * Initiator WRs (docs/ndk.md, "Work requests"). A QP that is not
 * connected fails them inline with STATUS_CONNECTION_INVALID; the rest is
 * sw/dp_tx.c. An inline failure first sends what was posted with
 * NDK_OP_FLAG_DEFER before it (docs/ndk.md, "Deferred processing"): the
 * consumer will not post the request that would have.
 */
static struct sw_dp *qp_dp(NDK_QP *pNdkQp)
{
	struct sw_qp *qp = to_sw_qp(pNdkQp);

	return sw_qp_state(qp) == SW_QP_CONNECTED ? qp->dp : NULL;
}

static NTSTATUS qp_posted(NDK_QP *pNdkQp, NTSTATUS status)
{
	struct sw_dp *dp = to_sw_qp(pNdkQp)->dp;

	if (!NT_SUCCESS(status) && dp)
		sw_dp_kick(dp);
	return status;
}

static NDK_HOT NTSTATUS qp_send(NDK_QP *pNdkQp, PVOID RequestContext,
				CONST NDK_SGE *pSgl, ULONG nSge, ULONG Flags)
{
	struct sw_dp *dp = qp_dp(pNdkQp);

	return qp_posted(pNdkQp, dp ? sw_dp_post_send(dp, RequestContext, pSgl,
						      nSge, Flags, false, 0)
				    : STATUS_CONNECTION_INVALID);
}

static NTSTATUS qp_send_and_invalidate(NDK_QP *pNdkQp, PVOID RequestContext,
				       CONST NDK_SGE *pSgl, ULONG nSge,
				       ULONG Flags, UINT32 RemoteToken)
{
	struct sw_dp *dp = qp_dp(pNdkQp);

	return qp_posted(pNdkQp,
			 dp ? sw_dp_post_send(dp, RequestContext, pSgl, nSge,
					      Flags, true, RemoteToken)
			    : STATUS_CONNECTION_INVALID);
}

static NTSTATUS qp_bind(NDK_QP *pNdkQp, PVOID RequestContext, NDK_MR *pMr,
			NDK_MW *pMw, PVOID VirtualAddress, SIZE_T Length,
			ULONG Flags)
{
	struct sw_dp *dp = qp_dp(pNdkQp);

	return qp_posted(pNdkQp,
			 dp ? sw_dp_post_bind(dp, RequestContext, pMr, pMw,
					      VirtualAddress, Length, Flags)
			    : STATUS_CONNECTION_INVALID);
}

static NTSTATUS qp_fast_register(NDK_QP *pNdkQp, PVOID RequestContext,
				 NDK_MR *pMr, ULONG AdapterPageCount,
				 CONST NDK_LOGICAL_ADDRESS *AdapterPageArray,
				 ULONG FBO, SIZE_T Length,
				 PVOID BaseVirtualAddress, ULONG Flags)
{
	struct sw_dp *dp = qp_dp(pNdkQp);

	return qp_posted(pNdkQp,
			 dp ? sw_dp_post_fast_register(
				      dp, RequestContext, pMr, AdapterPageCount,
				      AdapterPageArray, FBO, Length,
				      BaseVirtualAddress, Flags)
			    : STATUS_CONNECTION_INVALID);
}

static NTSTATUS qp_invalidate(NDK_QP *pNdkQp, PVOID RequestContext,
			      NDK_OBJECT_HEADER *pNdkMrOrMw, ULONG Flags)
{
	struct sw_dp *dp = qp_dp(pNdkQp);

	return qp_posted(pNdkQp, dp ? sw_dp_post_invalidate(dp, RequestContext,
							    pNdkMrOrMw, Flags)
				    : STATUS_CONNECTION_INVALID);
}

static NTSTATUS qp_rdma(NDK_QP *pNdkQp, enum sw_wqe_op op, PVOID RequestContext,
			CONST NDK_SGE *pSgl, ULONG nSge, UINT64 RemoteAddress,
			UINT32 RemoteToken, ULONG Flags)
{
	struct sw_dp *dp = qp_dp(pNdkQp);

	return qp_posted(pNdkQp, dp ? sw_dp_post_rdma(dp, op, RequestContext,
						      pSgl, nSge, RemoteAddress,
						      RemoteToken, Flags)
				    : STATUS_CONNECTION_INVALID);
}

static NDK_HOT NTSTATUS qp_read(NDK_QP *pNdkQp, PVOID RequestContext,
				CONST NDK_SGE *pSgl, ULONG nSge,
				UINT64 RemoteAddress, UINT32 RemoteToken,
				ULONG Flags)
{
	return qp_rdma(pNdkQp, SW_WQE_READ, RequestContext, pSgl, nSge,
		       RemoteAddress, RemoteToken, Flags);
}

static NDK_HOT NTSTATUS qp_write(NDK_QP *pNdkQp, PVOID RequestContext,
				 CONST NDK_SGE *pSgl, ULONG nSge,
				 UINT64 RemoteAddress, UINT32 RemoteToken,
				 ULONG Flags)
{
	return qp_rdma(pNdkQp, SW_WQE_WRITE, RequestContext, pSgl, nSge,
		       RemoteAddress, RemoteToken, Flags);
}

static void qp_close_begin(struct ndk_obj *obj)
{
	struct sw_qp *qp = container_of(obj, struct sw_qp, obj);

	ndk_lock(&qp->lock);
	set_state_locked(qp, SW_QP_CLOSED);
	ndk_unlock(&qp->lock);
	/*
	 * Every outstanding request completes once, before the close does
	 * (NDKPI Object Lifetime Requirements): the CQs are our
	 * antecedents, so they are still there. Receives the data path
	 * holds are cancelled too, and it stops using the socket.
	 */
	sw_rq_close(&qp->rq);
	if (qp->dp) {
		sw_dp_detach(qp->dp);
		sw_dp_flush(qp->dp);
	}
}

static void qp_destroy(struct ndk_obj *obj)
{
	struct sw_qp *qp = container_of(obj, struct sw_qp, obj);

	sw_dp_free(qp->dp);
	sw_rq_destroy(&qp->rq);
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
NTSTATUS sw_create_qp(struct ndk_obj *pd_obj, const struct ndk_qp_attr *attr,
		      NDK_QP **ppNdkQp)
{
	struct sw_pd *pd = container_of(pd_obj, struct sw_pd, obj);
	struct ndk_adapter *ad = pd->obj.adapter;
	struct ndk_obj *antes[NDK_OBJ_MAX_ANTECEDENTS];
	ULONG rq_depth = attr->rq_depth, rq_sge = attr->rq_sge;
	struct sw_qp *qp;
	unsigned int n = 0;
	NTSTATUS status;

	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return STATUS_INSUFFICIENT_RESOURCES;
	ndk_lock_init(&qp->lock, NDK_LOCK_QP);
	atomic_init(&qp->state, SW_QP_IDLE);
	qp->pd = pd;
	qp->rcq = to_sw_cq(&attr->rcq->pub.cq);
	qp->icq = to_sw_cq(&attr->icq->pub.cq);
	qp->context = attr->context;
	qp->iq.depth = attr->iq_depth;
	qp->iq.max_sge = attr->iq_sge;
	qp->iq.inline_size = attr->inline_size;
	if (attr->srq) {
		qp->srq = container_of(attr->srq, struct sw_srq, obj);
		rq_depth = SW_QP_SRQ_INFLIGHT;
		rq_sge = qp->srq->max_sge;
	}
	if (sw_rq_init(&qp->rq, rq_depth, rq_sge, qp->srq, qp->rcq,
		       attr->context)) {
		qp_destroy(&qp->obj);
		return STATUS_INSUFFICIENT_RESOURCES;
	}

	/* Antecedents (NDKPI Object Lifetime Requirements); one CQ for both
	 * queues is linked once. */
	antes[n++] = &pd->obj;
	antes[n++] = attr->rcq;
	if (attr->icq != attr->rcq)
		antes[n++] = attr->icq;
	if (qp->srq)
		antes[n++] = &qp->srq->obj;
	status = ndk_obj_setup(&qp->obj, ad, &qp_ops, &qp_dispatch, antes, n);
	if (status)
		return status;
	*ppNdkQp = &qp->obj.pub.qp;
	return STATUS_SUCCESS;
}
