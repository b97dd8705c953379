/* SPDX-License-Identifier: MIT */
/*
 * QP over an RC ibv_qp (docs/verbs.md, Queue pairs; docs/ndk.md, Work
 * requests and Flush).
 *
 * The QP goes to the verbs INIT state when it is created, so receives can
 * be posted before the connection exists as NDK allows; the connection
 * moves it on (iWARP: the kernel's iw_cm; IB and RoCE: ndk_vqp_ib_ready).
 * Requests are posted on the consumer's thread straight to the device,
 * one slot each (verbs/wr.h). NDK_OP_FLAG_DEFER is a hint and is ignored:
 * every request rings the doorbell at once.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "core/log.h"
#include "front/provider.h"
#include "verbs/cq.h"
#include "verbs/keys.h"
#include "verbs/lam.h"
#include "verbs/mr.h"
#include "verbs/mw.h"
#include "verbs/qp.h"
#include "verbs/srq.h"

/* SGEs per request on the stack; devices take fewer (siw 6, rxe 32). */

static const char *const vqp_state_names[VQP_STATE_COUNT] = {
	[VQP_IDLE] = "IDLE",
	[VQP_CONNECTING] = "CONNECTING",
	[VQP_CONNECTED] = "CONNECTED",
	[VQP_DISCONNECTED] = "DISCONNECTED",
};

static const bool vqp_transition_ok[VQP_STATE_COUNT][VQP_STATE_COUNT] = {
	[VQP_IDLE] = { [VQP_CONNECTING] = true },
	[VQP_CONNECTING] = { [VQP_IDLE] = true,
			     [VQP_CONNECTED] = true,
			     [VQP_DISCONNECTED] = true },
	[VQP_CONNECTED] = { [VQP_DISCONNECTED] = true },
};

/* The one state setter; qp->lock held. */
static int vqp_set_state_locked(struct ndk_vqp *qp, enum ndk_vqp_state to,
				int line)
{
	enum ndk_vqp_state from = ndk_vqp_state(qp);

	NDK_ASSERT_LOCKED(&qp->lock);
	if (!vqp_transition_ok[from][to]) {
		ndk_err("verbs: qp %p: illegal transition %s -> %s (qp.c:%d)",
			(void *)qp, vqp_state_names[from], vqp_state_names[to],
			line);
		return -EINVAL;
	}
	ndk_dbg("verbs: qp %p: %s -> %s (qp.c:%d)", (void *)qp,
		vqp_state_names[from], vqp_state_names[to], line);
	atomic_store_explicit(&qp->state, to, memory_order_release);
	return 0;
}
#define vqp_set_state(qp, to) vqp_set_state_locked(qp, to, __LINE__)

/* How long after a consumer's flush the device may take to flush by
 * itself before the provider cancels what is left (siw flushes from its
 * connection manager's work queue, rxe from its tasks). */
#define VQP_CANCEL_MS 200

/* qp->lock held: what the device did not complete is cancelled now. */
static void vqp_cancel_rest_locked(struct ndk_vqp *qp)
{
	NDK_ASSERT_LOCKED(&qp->lock);
	if (!qp->mapped)
		return;
	if (qp->scq)
		ndk_vcq_cancel(qp->scq, &qp->sq);
	if (qp->rcq && !qp->srq)
		ndk_vcq_cancel(qp->rcq, &qp->rq);
}

/*
 * The consumer flushed a while ago: the device has flushed what it
 * flushes by then (rxe in the background, siw from its connection
 * manager), and never will the rest (siw: requests posted to a QP
 * already in the error state). Engine thread.
 */
static void vqp_cancel_fn(struct ndk_timer *t)
{
	struct ndk_vqp *qp = container_of(t, struct ndk_vqp, cancel_timer);

	ndk_lock(&qp->lock);
	qp->cancel_set = false;
	vqp_cancel_rest_locked(qp);
	ndk_unlock(&qp->lock);
	ndk_obj_put(&qp->obj); /* the timer's reference */
}

static int vqp_modify_err_locked(struct ndk_vqp *qp)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
	int ret;

	NDK_ASSERT_LOCKED(&qp->lock);
	atomic_store(&qp->broken, true);
	if (!qp->cancel_set && qp->mapped) {
		ndk_obj_get(&qp->obj);
		if (ndk_timer_start(qp->obj.domain->engine, &qp->cancel_timer,
				    VQP_CANCEL_MS))
			ndk_obj_put(&qp->obj); /* not the last */
		else
			qp->cancel_set = true;
	}
	/* From now on flushed requests complete, whoever flushed first;
	 * those the device flushed before are let go now (lock order: the
	 * QP's, then its CQs'). */
	if (!atomic_exchange(&qp->sq.flush_ok, true) && qp->scq)
		ndk_vcq_release_held(qp->scq, &qp->sq);
	if (!atomic_exchange(&qp->rq.flush_ok, true) && qp->rcq)
		ndk_vcq_release_held(qp->rcq, &qp->rq);
	if (qp->flushed || !qp->qp)
		return 0;
	ret = ibv_modify_qp(qp->qp, &a, IBV_QP_STATE);
	if (ret)
		ndk_warn("verbs: qp %p: to the error state failed (%d)",
			 (void *)qp, ret);
	else
		qp->flushed = true;
	return ret;
}

void ndk_vqp_flush(struct ndk_vqp *qp)
{
	ndk_lock(&qp->lock);
	vqp_modify_err_locked(qp);
	ndk_unlock(&qp->lock);
}

int ndk_vqp_bind(struct ndk_vqp *qp, void (*fatal)(struct ndk_obj *conn),
		 struct ndk_obj *conn)
{
	int ret;

	ndk_lock(&qp->lock);
	switch (ndk_vqp_state(qp)) {
	case VQP_IDLE:
		ret = qp->flushed || !ndk_obj_is_open(&qp->obj)
			      ? -EINVAL
			      : vqp_set_state(qp, VQP_CONNECTING);
		if (!ret) {
			qp->fatal = fatal;
			qp->fatal_conn = conn;
		}
		break;
	case VQP_CONNECTING:
	case VQP_CONNECTED:
		ret = -EBUSY;
		break;
	default:
		ret = -EINVAL;
		break;
	}
	ndk_unlock(&qp->lock);
	return ret;
}

void ndk_vqp_unbind(struct ndk_vqp *qp)
{
	ndk_lock(&qp->lock);
	if (ndk_vqp_state(qp) == VQP_CONNECTING)
		vqp_set_state(qp, VQP_IDLE);
	qp->fatal = NULL;
	qp->fatal_conn = NULL;
	ndk_unlock(&qp->lock);
}

/* One modify with rdma_cm's attributes for state, and our read limit. */
static int vqp_cm_modify(struct ndk_vqp *qp, struct rdma_cm_id *id,
			 enum ibv_qp_state state, int limit)
{
	struct ibv_qp_attr a;
	int mask, ret;

	memset(&a, 0, sizeof(a));
	a.qp_state = state;
	ret = rdma_init_qp_attr(id, &a, &mask);
	if (ret)
		return -errno;
	if (state == IBV_QPS_RTR)
		a.max_dest_rd_atomic = (uint8_t)limit;
	else if (state == IBV_QPS_RTS)
		a.max_rd_atomic = (uint8_t)limit;
	ret = ibv_modify_qp(qp->qp, &a, mask);
	return ret ? -ret : 0;
}

int ndk_vqp_ib_ready(struct ndk_vqp *qp, struct rdma_cm_id *id, uint8_t ird,
		     uint8_t ord)
{
	int ret;

	ndk_lock(&qp->lock);
	/* INIT again with the path's port and P_Key, then RTR, RTS. */
	ret = vqp_cm_modify(qp, id, IBV_QPS_INIT, 0);
	if (!ret)
		ret = vqp_cm_modify(qp, id, IBV_QPS_RTR, ird);
	if (!ret)
		ret = vqp_cm_modify(qp, id, IBV_QPS_RTS, ord);
	ndk_unlock(&qp->lock);
	if (ret)
		ndk_warn("verbs: qp %p: INIT/RTR/RTS from rdma_cm failed (%d)",
			 (void *)qp, ret);
	return ret;
}

/*
 * A zero-length RDMA Write, unsignaled, outside the consumer's slots: it
 * consumes nothing at the peer, and its wr_id's key (0) is in no map, so
 * a completion it gets when flushed is dropped (wr.h).
 */
int ndk_vqp_probe(struct ndk_vqp *qp)
{
	struct ibv_send_wr wr, *bad = NULL;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 0;
	wr.opcode = IBV_WR_RDMA_WRITE;
	return ibv_post_send(qp->qp, &wr, &bad);
}

void ndk_vqp_connected(struct ndk_vqp *qp)
{
	ndk_lock(&qp->lock);
	vqp_set_state(qp, VQP_CONNECTED);
	ndk_unlock(&qp->lock);
}

bool ndk_vqp_device_error(struct ndk_vqp *qp)
{
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr a;
	bool err = false;

	ndk_lock(&qp->lock);
	if (!qp->flushed && qp->qp &&
	    !ibv_query_qp(qp->qp, &a, IBV_QP_STATE, &ia))
		err = a.qp_state == IBV_QPS_ERR;
	ndk_unlock(&qp->lock);
	return err;
}

void ndk_vqp_ended(struct ndk_vqp *qp, bool flush)
{
	ndk_lock(&qp->lock);
	if (ndk_vqp_state(qp) != VQP_DISCONNECTED)
		vqp_set_state(qp, VQP_DISCONNECTED);
	qp->fatal = NULL;
	qp->fatal_conn = NULL;
	if (flush)
		vqp_modify_err_locked(qp);
	ndk_unlock(&qp->lock);
}

/* Packs the SGEs with bytes to the front; returns how many there are. */
static ULONG vqp_drop_empty_sges(struct ibv_sge *sge, ULONG n)
{
	ULONG i, k = 0;

	for (i = 0; i < n; i++)
		if (sge[i].length)
			sge[k++] = sge[i];
	return k;
}

static NTSTATUS vqp_receive(NDK_QP *pNdkQp, PVOID RequestContext,
			    CONST NDK_SGE *pSgl, ULONG nSge)
{
	struct ndk_vqp *qp = to_vqp(pNdkQp);
	struct ibv_sge sge[NDK_VERBS_MAX_SGE];
	struct ibv_recv_wr wr, *bad;
	struct ndk_vslot *s;
	uint64_t len;
	int ret;

	/* Receives of a QP with an SRQ are posted to the SRQ only. */
	if (qp->srq)
		return STATUS_INVALID_DEVICE_REQUEST;
	/* No state check: receives may be posted before the connection
	 * exists (docs/ndk.md, Work requests). */
	if (!ndk_verbs_sgl(sge, pSgl, nSge, qp->max_recv_sge, &len))
		return STATUS_INVALID_PARAMETER;
	nSge = vqp_drop_empty_sges(sge, nSge);
	if (ndk_vlam_wanted(sge, nSge)) {
		NTSTATUS status =
			ndk_vlam_rewrite(qp->vad->lams, qp->pd->pd, sge, nSge);

		if (status)
			return status;
	}
	s = ndk_vwq_slot(&qp->rq);
	if (!s)
		return STATUS_INSUFFICIENT_RESOURCES;
	s->ctx = RequestContext;
	s->type = NdkOperationTypeReceive;
	s->sgl_bad = !ndk_vkeys_check(qp->pd->pd, sge, (int)nSge, true);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = ndk_vwq_wr_id(&qp->rq, s);
	wr.sg_list = sge;
	wr.num_sge = (int)nSge;
	if (!nSge && qp->vad->siw) {
		/* siw's library refuses a receive without SGEs: one of zero
		 * bytes takes the same messages (zero-length ones). */
		memset(&sge[0], 0, sizeof(sge[0]));
		wr.num_sge = 1;
	}
	ndk_vwq_commit(&qp->rq, s, true);
	ret = ibv_post_recv(qp->qp, &wr, &bad);
	if (ret) {
		ndk_vwq_uncommit(&qp->rq, s);
		return ndk_verbs_errno_status(ret, NDK_VERBS_POST);
	}
	return STATUS_SUCCESS;
}

/* Whether initiator requests may be posted (lock-free). */
static bool vqp_takes_requests(struct ndk_vqp *qp)
{
	return ndk_vqp_state(qp) == VQP_CONNECTED &&
	       !atomic_load_explicit(&qp->broken, memory_order_acquire) &&
	       !atomic_load_explicit(&qp->sq.dev_flushed,
				     memory_order_relaxed) &&
	       !atomic_load_explicit(&qp->rq.dev_flushed, memory_order_relaxed);
}

/*
 * Every initiator request: one slot, one ibv_post_send. dereg: an
 * invalidated registration the slot deregisters when it is released.
 */
static NTSTATUS vqp_post_slot(struct ndk_vqp *qp, struct ibv_send_wr *wr,
			      uint16_t type, PVOID ctx, const NDK_SGE *sgl,
			      ULONG nsge, ULONG flags, uint32_t max_sge,
			      struct ibv_mr *dereg)
{
	const NDK_ADAPTER_INFO *info = &qp->obj.adapter->info;
	bool inl = flags & NDK_OP_FLAG_INLINE;
	struct ibv_sge sge[NDK_VERBS_MAX_SGE];
	struct ibv_send_wr *bad;
	struct ndk_vslot *s;
	bool signaled, bad_sge;
	uint64_t len;
	int ret;

	/* NDK_FN_SEND and friends: only on a connected QP, and not once
	 * the connection broke: a device QP in the error state may take a
	 * request and never complete it (siw). */
	if (!vqp_takes_requests(qp))
		return STATUS_CONNECTION_INVALID;
	if (!ndk_verbs_sgl(sge, sgl, nsge, inl ? NDK_VERBS_MAX_SGE : max_sge,
			   &len) ||
	    (inl && len > qp->max_inline) || len > info->MaxTransferLength)
		return STATUS_INVALID_PARAMETER;
	/* Zero-length SGEs carry nothing, and siw's transmit path faults
	 * on one between others (Linux 6.1): the device never sees them. */
	nsge = vqp_drop_empty_sges(sge, nsge);
	/* Logical addresses (verbs/lam.h); an inline request's tokens are
	 * ignored. */
	if (!inl && ndk_vlam_wanted(sge, nsge)) {
		NTSTATUS status =
			ndk_vlam_rewrite(qp->vad->lams, qp->pd->pd, sge, nsge);

		if (status)
			return status;
	}
	/* A local SGE the device could not use would fail the request and
	 * the QP with it (as on hardware); the software provider fails
	 * that request only, sending nothing. So does this one: a marker
	 * takes its place in order (docs/verbs.md, Queue pairs). */
	bad_sge = !inl && nsge &&
		  !ndk_vkeys_check(qp->pd->pd, sge, (int)nsge,
				   wr->opcode == IBV_WR_RDMA_READ);
	s = ndk_vwq_slot(&qp->sq);
	if (!s)
		return STATUS_INSUFFICIENT_RESOURCES;
	s->ctx = ctx;
	s->type = type;
	s->len = (uint32_t)len;
	if (flags & NDK_OP_FLAG_SILENT_SUCCESS)
		s->flags |= VSLOT_SILENT;
	if (bad_sge) {
		s->preset = STATUS_ACCESS_VIOLATION;
		wr->opcode = IBV_WR_RDMA_WRITE;
		wr->send_flags = 0;
		memset(&wr->wr, 0, sizeof(wr->wr));
		nsge = 0;
	}
	wr->wr_id = ndk_vwq_wr_id(&qp->sq, s);
	wr->sg_list = sge;
	wr->num_sge = (int)nsge;
	/* A registration to drop goes when its slot completes: soon; a
	 * failure must complete even if silent. */
	signaled = dereg || bad_sge || ndk_vwq_signal(&qp->sq, flags);
	if (signaled)
		wr->send_flags |= IBV_SEND_SIGNALED;
	if (inl)
		wr->send_flags |= IBV_SEND_INLINE;
	if (flags & NDK_OP_FLAG_READ_FENCE)
		wr->send_flags |= IBV_SEND_FENCE;
	s->dereg = dereg;
	ndk_vwq_commit(&qp->sq, s, signaled);
	bad = wr;
	ret = ibv_post_send(qp->qp, wr, &bad);
	/* siw's library writes the request into its ring and then rings
	 * the doorbell; a doorbell refused (the QP left RTS: -1 and errno
	 * ENOTCONN) leaves it there, and the QP's move to the error state
	 * flushes it. It is taken (bad is not it) and completes once. */
	if (ret && bad != wr)
		ret = 0;
	if (ret) {
		s->dereg = NULL; /* still the caller's */
		ndk_vwq_uncommit(&qp->sq, s);
		return ndk_verbs_errno_status(ret, NDK_VERBS_POST);
	}
	return STATUS_SUCCESS;
}

static NTSTATUS vqp_post(struct ndk_vqp *qp, struct ibv_send_wr *wr,
			 uint16_t type, PVOID ctx, const NDK_SGE *sgl,
			 ULONG nsge, ULONG flags, uint32_t max_sge)
{
	return vqp_post_slot(qp, wr, type, ctx, sgl, nsge, flags, max_sge,
			     NULL);
}

/*
 * A request of the QP's own (a fast registration, an MR's invalidation)
 * that must complete in order behind the requests before it: a
 * zero-length RDMA Write, which the target takes without looking at the
 * (absent) token (IB C9-88; siw places nothing), reported as type.
 */
static NTSTATUS vqp_post_marker(struct ndk_vqp *qp, uint16_t type, PVOID ctx,
				ULONG flags, struct ibv_mr *dereg)
{
	struct ibv_send_wr wr;

	memset(&wr, 0, sizeof(wr));
	wr.opcode = IBV_WR_RDMA_WRITE;
	flags &= NDK_OP_FLAG_SILENT_SUCCESS | NDK_OP_FLAG_READ_FENCE;
	return vqp_post_slot(qp, &wr, type, ctx, NULL, 0, flags, 0, dereg);
}

static NTSTATUS vqp_send(NDK_QP *pNdkQp, PVOID RequestContext,
			 CONST NDK_SGE *pSgl, ULONG nSge, ULONG Flags)
{
	struct ndk_vqp *qp = to_vqp(pNdkQp);
	struct ibv_send_wr wr;

	memset(&wr, 0, sizeof(wr));
	wr.opcode = IBV_WR_SEND;
	if (Flags & NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT)
		wr.send_flags |= IBV_SEND_SOLICITED;
	return vqp_post(qp, &wr, NdkOperationTypeSend, RequestContext, pSgl,
			nSge, Flags, qp->max_send_sge);
}

static NTSTATUS vqp_send_and_invalidate(NDK_QP *pNdkQp, PVOID RequestContext,
					CONST NDK_SGE *pSgl, ULONG nSge,
					ULONG Flags, UINT32 RemoteToken)
{
	struct ndk_vqp *qp = to_vqp(pNdkQp);
	struct ibv_send_wr wr;

	memset(&wr, 0, sizeof(wr));
	wr.opcode = IBV_WR_SEND_WITH_INV;
	wr.invalidate_rkey = RemoteToken;
	/*
	 * siw's library (rdma-core 44, and the current source) takes the STag to
	 * invalidate from wr.rdma.rkey, not invalidate_rkey: without this
	 * its peer is told to invalidate token 0. Other providers ignore
	 * wr.rdma for a Send.
	 */
	wr.wr.rdma.rkey = RemoteToken;
	if (Flags & NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT)
		wr.send_flags |= IBV_SEND_SOLICITED;
	return vqp_post(qp, &wr, NdkOperationTypeSend, RequestContext, pSgl,
			nSge, Flags, qp->max_send_sge);
}

static NTSTATUS vqp_write(NDK_QP *pNdkQp, PVOID RequestContext,
			  CONST NDK_SGE *pSgl, ULONG nSge, UINT64 RemoteAddress,
			  UINT32 RemoteToken, ULONG Flags)
{
	struct ndk_vqp *qp = to_vqp(pNdkQp);
	struct ibv_send_wr wr;

	memset(&wr, 0, sizeof(wr));
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.wr.rdma.remote_addr = RemoteAddress;
	wr.wr.rdma.rkey = RemoteToken;
	return vqp_post(qp, &wr, NdkOperationTypeWrite, RequestContext, pSgl,
			nSge, Flags, qp->max_send_sge);
}

static NTSTATUS vqp_read(NDK_QP *pNdkQp, PVOID RequestContext,
			 CONST NDK_SGE *pSgl, ULONG nSge, UINT64 RemoteAddress,
			 UINT32 RemoteToken, ULONG Flags)
{
	struct ndk_vqp *qp = to_vqp(pNdkQp);
	struct ibv_send_wr wr;

	/* Never inline: a Read's SGEs are where the data lands. */
	Flags &= ~(ULONG)NDK_OP_FLAG_INLINE;
	memset(&wr, 0, sizeof(wr));
	wr.opcode = IBV_WR_RDMA_READ;
	wr.wr.rdma.remote_addr = RemoteAddress;
	wr.wr.rdma.rkey = RemoteToken;
	return vqp_post(
		qp, &wr, NdkOperationTypeRead, RequestContext, pSgl, nSge,
		Flags,
		MIN(qp->max_send_sge, qp->obj.adapter->info.MaxReadRequestSge));
}

/* A type 2 window bound on the send queue (verbs/mw.h). */
static NTSTATUS vqp_bind(NDK_QP *pNdkQp, PVOID RequestContext, NDK_MR *pMr,
			 NDK_MW *pMw, PVOID VirtualAddress, SIZE_T Length,
			 ULONG Flags)
{
	struct ndk_vqp *qp = to_vqp(pNdkQp);
	struct ndk_vmw_bind b;
	struct ibv_send_wr wr;
	NTSTATUS status;

	if (!vqp_takes_requests(qp))
		return STATUS_CONNECTION_INVALID;
	status = ndk_vmw_bind_begin(&b, pMw, pMr, qp->pd, VirtualAddress,
				    Length, Flags, &wr);
	if (status)
		return status;
	b.qp = qp;
	/* The registration the window leaves (rxe) goes when the bind
	 * completed. */
	status = vqp_post_slot(qp, &wr, NdkOperationTypeBind, RequestContext,
			       NULL, 0, Flags & ~(ULONG)NDK_OP_FLAG_INLINE, 0,
			       b.old_sub);
	ndk_vmw_bind_end(&b, status);
	return status;
}

/*
 * Fast registration (docs/verbs.md, Fast registration): user-space verbs
 * has no such work request, so the MR is registered now (ibv_reg_mr_iova).
 * Where fast registrations are windows, binding the MR's window over it
 * is the request; elsewhere a marker request gives the completion its
 * place in order.
 */
static NTSTATUS vqp_fast_register(NDK_QP *pNdkQp, PVOID RequestContext,
				  NDK_MR *pMr, ULONG AdapterPageCount,
				  CONST NDK_LOGICAL_ADDRESS *AdapterPageArray,
				  ULONG FBO, SIZE_T Length,
				  PVOID BaseVirtualAddress, ULONG Flags)
{
	struct ndk_vqp *qp = to_vqp(pNdkQp);
	struct ndk_vmr_fr fr;
	struct ibv_send_wr wr;
	struct ndk_vmr *mr;
	NTSTATUS status;

	if (!pMr || pMr->Header.ObjectType != NdkObjectTypeMr)
		return STATUS_INVALID_PARAMETER;
	if (!vqp_takes_requests(qp))
		return STATUS_CONNECTION_INVALID;
	mr = to_vmr(pMr);
	ndk_lock(&mr->base.lock);
	status = ndk_vmr_fast_register_locked(
		mr, qp->pd, AdapterPageArray, AdapterPageCount, FBO, Length,
		(uint64_t)(uintptr_t)BaseVirtualAddress, Flags, !qp->vad->siw,
		&fr, &wr);
	if (!status) {
		fr.qp = qp;
		if (fr.bind)
			/* A registration a peer invalidated goes when the
			 * bind's slot is released. */
			status = vqp_post_slot(
				qp, &wr, NdkOperationTypeFastRegister,
				RequestContext, NULL, 0,
				Flags & (NDK_OP_FLAG_SILENT_SUCCESS |
					 NDK_OP_FLAG_READ_FENCE),
				0, fr.old);
		else
			status = vqp_post_marker(qp,
						 NdkOperationTypeFastRegister,
						 RequestContext, Flags, NULL);
		ndk_vmr_fast_register_end(mr, &fr, status);
	}
	ndk_unlock(&mr->base.lock);
	return status;
}

/*
 * NdkInvalidate of a fast-register MR: deregistered in order, behind
 * IBV_WR_LOCAL_INV of its window where it has one still bound (not on
 * rxe, where the window is deallocated instead), else behind a marker.
 */
static NTSTATUS vqp_invalidate_mr(struct ndk_vqp *qp, PVOID ctx,
				  struct ndk_vmr *mr, ULONG flags)
{
	struct ibv_send_wr wr;
	struct ibv_mr *old;
	NTSTATUS status;
	bool local_inv;
	uint32_t rkey;

	if (!vqp_takes_requests(qp))
		return STATUS_CONNECTION_INVALID;
	ndk_lock(&mr->base.lock);
	old = ndk_vmr_invalidate_locked(mr, &local_inv, &rkey);
	if (local_inv) {
		memset(&wr, 0, sizeof(wr));
		wr.opcode = IBV_WR_LOCAL_INV;
		wr.invalidate_rkey = rkey;
		status = vqp_post_slot(qp, &wr, NdkOperationTypeInvalidate, ctx,
				       NULL, 0,
				       flags & (NDK_OP_FLAG_SILENT_SUCCESS |
						NDK_OP_FLAG_READ_FENCE),
				       0, old);
	} else {
		status = vqp_post_marker(qp, NdkOperationTypeInvalidate, ctx,
					 flags, old);
	}
	ndk_vmr_invalidate_end(mr, old, status);
	ndk_unlock(&mr->base.lock);
	return status;
}

/*
 * NdkInvalidate of a window: IBV_WR_LOCAL_INV of its token, or a marker
 * when the window is free already (verbs/mw.h).
 */
static NTSTATUS vqp_invalidate_mw(struct ndk_vqp *qp, PVOID ctx, NDK_MW *pMw,
				  ULONG flags)
{
	struct ibv_send_wr wr;
	NTSTATUS status;
	uint32_t rkey;

	if (!vqp_takes_requests(qp))
		return STATUS_CONNECTION_INVALID;
	if (ndk_vmw_invalidate_begin(pMw, &rkey)) {
		memset(&wr, 0, sizeof(wr));
		wr.opcode = IBV_WR_LOCAL_INV;
		wr.invalidate_rkey = rkey;
		status =
			vqp_post(qp, &wr, NdkOperationTypeInvalidate, ctx, NULL,
				 0, flags & ~(ULONG)NDK_OP_FLAG_INLINE, 0);
	} else {
		status = vqp_post_marker(qp, NdkOperationTypeInvalidate, ctx,
					 flags, NULL);
	}
	ndk_vmw_invalidate_end(pMw, status);
	return status;
}

/*
 * Local invalidation: a window's posts IBV_WR_LOCAL_INV; a fast-register
 * MR's is deregistered in order; a normal MR cannot be invalidated,
 * which is refused inline (the device would fail the QP, and a
 * completion cannot be made up in its CQ).
 */
static NTSTATUS vqp_invalidate(NDK_QP *pNdkQp, PVOID RequestContext,
			       NDK_OBJECT_HEADER *pNdkMrOrMw, ULONG Flags)
{
	struct ndk_vqp *qp = to_vqp(pNdkQp);

	if (!pNdkMrOrMw || (pNdkMrOrMw->ObjectType != NdkObjectTypeMr &&
			    pNdkMrOrMw->ObjectType != NdkObjectTypeMw))
		return STATUS_INVALID_PARAMETER;
	if (pNdkMrOrMw->ObjectType == NdkObjectTypeMr) {
		struct ndk_vmr *mr = to_vmr((NDK_MR *)pNdkMrOrMw);

		if (!mr->base.fast)
			return STATUS_INVALID_DEVICE_REQUEST;
		return vqp_invalidate_mr(qp, RequestContext, mr, Flags);
	}
	return vqp_invalidate_mw(qp, RequestContext, (NDK_MW *)pNdkMrOrMw,
				 Flags);
}

/*
 * The device found the QP broken (IBV_EVENT_QP_FATAL and friends: a
 * Terminate sent or received, a remote access error): its connection is
 * over, which the connector reports as a disconnect event. Engine
 * thread; the event's reference is dropped here.
 */
static void vqp_fatal_work(struct ndk_work *w)
{
	struct ndk_vqp *qp = container_of(w, struct ndk_vqp, fatal_work);
	void (*fatal)(struct ndk_obj * conn);
	struct ndk_obj *conn;

	ndk_lock(&qp->lock);
	fatal = qp->fatal;
	conn = qp->fatal_conn;
	/* The connector clears the hook before it can go: a reference
	 * taken under the lock keeps it. */
	if (conn)
		ndk_obj_get(conn);
	ndk_unlock(&qp->lock);
	if (fatal) {
		fatal(conn);
		ndk_obj_put(conn);
	}
	ndk_obj_put(&qp->obj);
}

/* Map lock held (verbs/wr.h): the device's event for this QP. */
void ndk_vqp_async(void *owner, void *arg)
{
	struct ndk_vqp *qp = owner;
	enum ibv_event_type type = *(enum ibv_event_type *)arg;

	ndk_info("verbs: qp %p: %s", (void *)qp, ibv_event_type_str(type));
	switch (type) {
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
		/* Before the disconnect event: a request posted after it
		 * is refused. */
		atomic_store(&qp->broken, true);
		ndk_obj_get(&qp->obj);
		if (!ndk_engine_post(qp->obj.domain->engine, &qp->fatal_work))
			ndk_obj_put(&qp->obj); /* one is queued already */
		break;
	default:
		break;
	}
}

/* Map lock held: a request of the QP failed, so the device moved the QP
 * to the error state; the connection is over (as for QP_FATAL). */
void ndk_vqp_wc_error(void *owner)
{
	enum ibv_event_type type = IBV_EVENT_QP_FATAL;
	struct ndk_vqp *qp = owner;

	if (atomic_exchange(&qp->failed, true))
		return;
	ndk_vqp_async(owner, &type);
}

static VOID vqp_ndk_flush(NDK_QP *pNdkQp)
{
	ndk_vqp_flush(to_vqp(pNdkQp));
}

/* Close requested: every outstanding request is flushed. */
static void vqp_close_begin(struct ndk_obj *obj)
{
	struct ndk_vqp *qp = container_of(obj, struct ndk_vqp, obj);

	ndk_vqp_flush(qp);
}

/*
 * Its connector is gone (the QP is its antecedent). Completions of the QP
 * still in its CQs are dropped from here on: its key leaves the map
 * first, so no poller reads the slots after they are freed.
 */
static void vqp_close_end(struct ndk_obj *obj)
{
	struct ndk_vqp *qp = container_of(obj, struct ndk_vqp, obj);
	int ret;

	/* No window may hold the QP it is destroying (verbs/mr.h); first,
	 * so that a flushed bind's slot can deregister what its window was
	 * bound over until then. */
	if (qp->vad->mw2) {
		ndk_vmr_qp_closing(qp->vad, qp);
		ndk_vmw_qp_closing(qp->vad, qp);
	}
	/* What the device flushed already still completes (as with the
	 * software provider), and what it did not is cancelled now; later
	 * completions are dropped. */
	ndk_lock(&qp->lock);
	if (qp->cancel_set &&
	    ndk_timer_cancel(qp->obj.domain->engine, &qp->cancel_timer)) {
		qp->cancel_set = false;
		ndk_obj_put(&qp->obj); /* not the last: the close holds one */
	}
	vqp_cancel_rest_locked(qp);
	ndk_unlock(&qp->lock);
	if (qp->mapped) {
		ndk_vcq_drain(qp->rcq);
		if (qp->scq != qp->rcq)
			ndk_vcq_drain(qp->scq);
		ndk_vqpmap_del(qp->vad->qps, qp->sq.key);
	}
	qp->mapped = false;
	ret = qp->qp ? ibv_destroy_qp(qp->qp) : 0;
	if (ret)
		ndk_warn("verbs: qp %p: ibv_destroy_qp failed (%d)", (void *)qp,
			 ret);
	qp->qp = NULL;
}

static void vqp_destroy(struct ndk_obj *obj)
{
	struct ndk_vqp *qp = container_of(obj, struct ndk_vqp, obj);

	if (qp->mapped)
		ndk_vqpmap_del(qp->vad->qps, qp->sq.key);
	if (qp->qp)
		ibv_destroy_qp(qp->qp);
	ndk_vwq_fini(&qp->sq);
	ndk_vwq_fini(&qp->rq);
	ndk_lock_destroy(&qp->lock);
	free(qp);
}

static const struct ndk_obj_ops vqp_ops = {
	.type = NdkObjectTypeQp,
	.name = "qp",
	.close_begin = vqp_close_begin,
	.close_end = vqp_close_end,
	.destroy = vqp_destroy,
};

static const NDK_QP_DISPATCH vqp_dispatch = {
	.NdkCloseQp = ndk_close_object,
	.NdkQueryExtension = ndk_query_extension,
	.NdkFlush = vqp_ndk_flush,
	.NdkSend = vqp_send,
	.NdkReceive = vqp_receive,
	.NdkBind = vqp_bind,
	.NdkFastRegister = vqp_fast_register,
	.NdkInvalidate = vqp_invalidate,
	.NdkRead = vqp_read,
	.NdkWrite = vqp_write,
	.NdkSendAndInvalidate = vqp_send_and_invalidate,
};

/* RESET to INIT with the adapter's port: receives may be posted. */
static int vqp_to_init(struct ndk_vqp *qp)
{
	struct ndk_vadapter *v = qp->vad;
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.pkey_index = 0,
		.port_num = v->port,
		.qp_access_flags = IBV_ACCESS_LOCAL_WRITE |
				   IBV_ACCESS_REMOTE_READ |
				   IBV_ACCESS_REMOTE_WRITE,
	};

	return ibv_modify_qp(qp->qp, &a,
			     IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				     IBV_QP_ACCESS_FLAGS);
}

/* NdkCreateQp and NdkCreateQpWithSrq (srq: receive depth and SGEs 0),
 * their arguments checked by front/qp.c. */
NTSTATUS ndk_verbs_create_qp(struct ndk_obj *pd_obj,
			     const struct ndk_qp_attr *attr, NDK_QP **ppNdkQp)
{
	struct ndk_vpd *pd = container_of(pd_obj, struct ndk_vpd, obj);
	struct ndk_vcq *rcq = to_vcq(&attr->rcq->pub.cq);
	struct ndk_vcq *scq = to_vcq(&attr->icq->pub.cq);
	struct ndk_vsrq *srq = attr->srq ? to_vsrq(&attr->srq->pub.srq) : NULL;
	struct ndk_adapter *ad = pd->obj.adapter;
	ULONG ReceiveQueueDepth = srq ? 0 : attr->rq_depth;
	ULONG InitiatorQueueDepth = attr->iq_depth;
	ULONG MaxReceiveRequestSge = srq ? 0 : attr->rq_sge;
	ULONG MaxInitiatorRequestSge = attr->iq_sge;
	ULONG InlineDataSize = attr->inline_size;
	PVOID QPContext = attr->context;
	struct ibv_qp_init_attr ia;
	struct ndk_obj *antes[4];
	struct ndk_vqp *qp;
	unsigned int n = 0;
	NTSTATUS status;
	int ret;

	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return STATUS_INSUFFICIENT_RESOURCES;
	ndk_lock_init(&qp->lock, NDK_LOCK_QP);
	ndk_work_init(&qp->fatal_work, vqp_fatal_work);
	ndk_timer_init(&qp->cancel_timer, vqp_cancel_fn);
	atomic_init(&qp->state, VQP_IDLE);
	qp->vad = to_vad(ad);
	qp->pd = pd;
	qp->rcq = rcq;
	qp->scq = scq;
	qp->srq = srq;
	if (ndk_vwq_init(&qp->sq, InitiatorQueueDepth, false, QPContext, ad) ||
	    ndk_vwq_init(&qp->rq, ReceiveQueueDepth, true, QPContext, ad)) {
		vqp_destroy(&qp->obj);
		return STATUS_INSUFFICIENT_RESOURCES;
	}
	memset(&ia, 0, sizeof(ia));
	ia.qp_context = qp;
	ia.send_cq = ndk_vcq_ibv(scq);
	ia.recv_cq = ndk_vcq_ibv(rcq);
	ia.cap.max_send_wr = InitiatorQueueDepth;
	/* iWARP: room for the connector's liveness probe (ndk_vqp_probe). */
	if (qp->vad->iwarp &&
	    InitiatorQueueDepth < (ULONG)qp->vad->dev_attr.max_qp_wr)
		ia.cap.max_send_wr++;
	ia.cap.max_recv_wr = ReceiveQueueDepth;
	ia.cap.max_send_sge =
		MaxInitiatorRequestSge ? MaxInitiatorRequestSge : 1;
	ia.cap.max_recv_sge = MaxReceiveRequestSge ? MaxReceiveRequestSge : 1;
	if (srq) {
		ia.srq = srq->srq;
		ia.cap.max_recv_wr = 0;
		ia.cap.max_recv_sge = 0;
	}
	ia.cap.max_inline_data = InlineDataSize;
	ia.qp_type = IBV_QPT_RC;
	ia.sq_sig_all = 0;
	qp->qp = ibv_create_qp(pd->pd, &ia);
	if (!qp->qp) {
		ndk_info("verbs: ibv_create_qp: %s", strerror(errno));
		status = ndk_verbs_errno_status(errno, NDK_VERBS_CREATE);
		vqp_destroy(&qp->obj);
		return status;
	}
	qp->max_send_sge = MaxInitiatorRequestSge;
	qp->max_recv_sge = MaxReceiveRequestSge;
	qp->max_inline = InlineDataSize;
	ret = vqp_to_init(qp);
	if (!ret)
		ret = ndk_vqpmap_add(qp->vad->qps, &qp->sq, &qp->rq, qp->qp,
				     qp->qp->qp_num, qp);
	if (ret) {
		status = ndk_verbs_errno_status(ret, NDK_VERBS_CREATE);
		vqp_destroy(&qp->obj);
		return status;
	}
	qp->mapped = true;

	antes[n++] = &pd->obj;
	antes[n++] = ndk_vcq_obj(rcq);
	if (scq != rcq)
		antes[n++] = ndk_vcq_obj(scq);
	if (srq)
		antes[n++] = &srq->obj;
	status = ndk_obj_setup(&qp->obj, ad, &vqp_ops, &vqp_dispatch, antes, n);
	if (status)
		return status;
	*ppNdkQp = &qp->obj.pub.qp;
	return STATUS_SUCCESS;
}
