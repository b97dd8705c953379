/* SPDX-License-Identifier: MIT */
/*
 * The verbs connector's passive side (docs/verbs.md, Connection
 * management): NdkAccept(Ex) and NdkReject of a request that a listener
 * handed out (verbs/listener.c, ndk_vconn_incoming).
 */
#include <errno.h>
#include <string.h>
#include "verbs/connector_int.h"
#include "verbs/tcp_state.h"

void vconn_accepted(struct ndk_vconn *c, const struct ndk_vcm_event *e)
{
	/*
	 * iWARP: the device's own pair, which may be above ours (siw raises
	 * our IRD to the initiator's ORD, its relaxed negotiation;
	 * docs/verbs.md, Read limits). The kernel's cma reports it as
	 * initiator_depth = IRD, responder_resources = ORD.
	 */
	if (vconn_vad(c)->iwarp &&
	    (e->initiator_depth || e->responder_resources)) {
		c->eff_ird = e->initiator_depth;
		c->eff_ord = e->responder_resources;
	}
	/*
	 * IB and RoCE: the RTU, the initiator's CompleteConnect. iWARP has
	 * none: the kernel's iw_cm reports ESTABLISHED as soon as our Reply
	 * is out, and nothing later tells an initiator that completes from
	 * one that goes away (siw reports every close of the stream alike),
	 * so the Accept completes now and such an initiator ends the
	 * connection: the disconnect event (docs/verbs.md, Connection
	 * management).
	 */
	ndk_vqp_connected(c->qp);
	vconn_set_state(c, VCONN_ESTABLISHED);
	ndk_adapter_count(c->obj.adapter, NDK_CTR(Accept), 1);
	ndk_req_complete(&c->accept_req, STATUS_SUCCESS);
}

/* ------------------------------------------------------------------ */
/* Accept and Reject                                                  */

/*
 * siw: whether the initiator left a request not yet answered. The kernel
 * CM keeps such a request without a word (siw even sends the answer into
 * the closed stream), but the TCP connection it came on shows it: siw's
 * streams are the kernel's own (an offloading RNIC's are not, so only
 * siw is asked). Then the attempt is abandoned as NDK wants
 * (NDK_FN_ACCEPT, NDK_FN_REJECT: STATUS_CONNECTION_ABORTED). c->lock
 * held, REQUESTED.
 */
static bool vconn_initiator_left(struct ndk_vconn *c)
{
	if (!vconn_vad(c)->siw ||
	    ndk_tcp_peer_state((struct sockaddr *)&c->local,
			       (struct sockaddr *)&c->peer) !=
		    NDK_TCP_PEER_GONE)
		return false;
	ndk_info("verbs: connector %p: the initiator left its request",
		 (void *)c);
	vconn_abandon(c, STATUS_CONNECTION_ABORTED);
	return true;
}

static NTSTATUS vconn_accept(struct ndk_vconn *c, NDK_QP *pNdkQp, ULONG ird,
			     ULONG ord, const void *pd, ULONG pd_len,
			     NDK_FN_DISCONNECT_EVENT_CALLBACK ev,
			     NDK_FN_DISCONNECT_EVENT_CALLBACK_EX ev_ex,
			     PVOID ev_ctx, NDK_FN_REQUEST_COMPLETION cb,
			     PVOID ctx)
{
	struct ndk_adapter *ad = c->obj.adapter;
	struct rdma_conn_param p;
	struct ndk_vqp *qp;
	NTSTATUS status;
	int ret;

	if (!pNdkQp)
		return STATUS_INVALID_PARAMETER;
	status = vconn_check_pd(pd, pd_len, ad->info.MaxCalleeData);
	if (status)
		return status;
	qp = to_vqp(pNdkQp);
	ndk_lock(&c->lock);
	if (c->passive && c->state == VCONN_ABANDONED &&
	    c->fail == STATUS_CONNECTION_ABORTED) {
		/* The connecting peer abandoned the attempt (NDK_FN_ACCEPT). */
		status = STATUS_CONNECTION_ABORTED;
		goto out;
	}
	if (!c->passive || c->state != VCONN_REQUESTED) {
		status = STATUS_CONNECTION_INVALID;
		goto out;
	}
	if (vconn_initiator_left(c)) {
		status = STATUS_CONNECTION_ABORTED;
		goto out;
	}
	ret = ndk_vqp_bind(qp, vconn_qp_fatal, &c->obj);
	if (ret) {
		status = ret == -EBUSY ? STATUS_CONNECTION_ACTIVE
				       : STATUS_INVALID_DEVICE_STATE;
		goto out;
	}
	if (ndk_obj_link(&c->obj, &qp->obj)) {
		ndk_vqp_unbind(qp);
		status = STATUS_INVALID_PARAMETER;
		goto out;
	}
	c->qp = qp;
	c->req_ird = vconn_cap(ird, ad->info.MaxInboundReadLimit);
	c->req_ord = vconn_cap(ord, ad->info.MaxOutboundReadLimit);
	c->eff_ird = MIN(c->req_ird, c->peer_ord);
	c->eff_ord = MIN(c->req_ord, c->peer_ird);
	if (!vconn_vad(c)->iwarp &&
	    ndk_vqp_ib_ready(qp, c->id, c->eff_ird, c->eff_ord)) {
		vconn_abandon(c, STATUS_CONNECTION_ABORTED);
		status = STATUS_CONNECTION_ABORTED;
		goto out;
	}
	p = vconn_param(c, pd, (uint8_t)pd_len, c->eff_ird, c->eff_ord);
	if (rdma_accept(c->id, &p)) {
		/* The initiator is gone, or the device refused. */
		ndk_info("verbs: connector %p: rdma_accept failed (%d)",
			 (void *)c, errno);
		vconn_abandon(c, STATUS_CONNECTION_ABORTED);
		status = STATUS_CONNECTION_ABORTED;
		goto out;
	}
	c->disc_cb = ev;
	c->disc_cb_ex = ev_ex;
	c->disc_ctx = ev_ctx;
	ndk_req_pend(&c->accept_req, &c->obj, cb, ctx);
	vconn_set_state(c, VCONN_ACCEPTING);
	/* IB and RoCE: no RTU within NDK_CM_TIMEOUT_MS is IO_TIMEOUT, as for
	 * the software provider (the IB CM's own REP retries last minutes). */
	vconn_arm_timer(c, VCONN_TIMER_ACCEPT, ndk_cm_timeout_ms());
	status = STATUS_PENDING;
out:
	ndk_unlock(&c->lock);
	return status;
}

NTSTATUS
vconn_ndk_accept(NDK_CONNECTOR *pNdkConnector, NDK_QP *pNdkQp,
		 ULONG InboundReadLimit, ULONG OutboundReadLimit,
		 CONST PVOID pPrivateData, ULONG PrivateDataLength,
		 NDK_FN_DISCONNECT_EVENT_CALLBACK DisconnectEvent,
		 PVOID DisconnectEventContext,
		 NDK_FN_REQUEST_COMPLETION RequestCompletion,
		 PVOID RequestContext)
{
	return vconn_accept(to_vconn(pNdkConnector), pNdkQp, InboundReadLimit,
			    OutboundReadLimit, pPrivateData, PrivateDataLength,
			    DisconnectEvent, NULL, DisconnectEventContext,
			    RequestCompletion, RequestContext);
}

NTSTATUS
vconn_ndk_accept_ex(NDK_CONNECTOR *pNdkConnector, NDK_QP *pNdkQp,
		    ULONG InboundReadLimit, ULONG OutboundReadLimit,
		    CONST PVOID pPrivateData, ULONG PrivateDataLength,
		    NDK_FN_DISCONNECT_EVENT_CALLBACK_EX DisconnectEvent,
		    PVOID DisconnectEventContext,
		    NDK_FN_REQUEST_COMPLETION RequestCompletion,
		    PVOID RequestContext)
{
	return vconn_accept(to_vconn(pNdkConnector), pNdkQp, InboundReadLimit,
			    OutboundReadLimit, pPrivateData, PrivateDataLength,
			    NULL, DisconnectEvent, DisconnectEventContext,
			    RequestCompletion, RequestContext);
}

NTSTATUS vconn_reject(NDK_CONNECTOR *pNdkConnector, CONST PVOID pPrivateData,
		      ULONG PrivateDataLength)
{
	struct ndk_vconn *c = to_vconn(pNdkConnector);
	NTSTATUS status;

	status = vconn_check_pd(pPrivateData, PrivateDataLength,
				MIN(c->obj.adapter->info.MaxCalleeData,
				    vconn_vad(c)->max_reject_data));
	if (status)
		return status;
	ndk_lock(&c->lock);
	switch (c->state) {
	case VCONN_REQUESTED:
		if (vconn_initiator_left(c)) {
			status = STATUS_CONNECTION_ABORTED;
			break;
		}
		if (rdma_reject(c->id, pPrivateData,
				(uint8_t)PrivateDataLength)) {
			/* The initiator is gone already (NDK_FN_REJECT). */
			ndk_info("verbs: connector %p: rdma_reject: %s",
				 (void *)c, strerror(errno));
			status = STATUS_CONNECTION_ABORTED;
		}
		vconn_abandon(c, status ? status : STATUS_CONNECTION_INVALID);
		break;
	case VCONN_REPLIED:
		/*
		 * Active side after Connect completed: IB rejects the REP;
		 * an iWARP connection is up already and is closed, so the
		 * peer sees a disconnect (docs/verbs.md).
		 */
		if (vconn_vad(c)->iwarp)
			rdma_disconnect(c->id);
		else
			rdma_reject(c->id, NULL, 0);
		vconn_abandon(c, STATUS_CONNECTION_INVALID);
		break;
	case VCONN_FAILED:
	case VCONN_ABANDONED:
	case VCONN_CLOSED:
		/* The other side abandoned the attempt (NDK_FN_REJECT), or
		 * our CompleteConnect timer ended it: aborted, as for the
		 * software provider. */
		status = c->fail == STATUS_CONNECTION_ABORTED ||
					 (c->state == VCONN_ABANDONED &&
					  c->fail == STATUS_IO_TIMEOUT)
				 ? STATUS_CONNECTION_ABORTED
				 : STATUS_CONNECTION_INVALID;
		break;
	default:
		status = STATUS_CONNECTION_INVALID;
		break;
	}
	ndk_unlock(&c->lock);
	return status;
}
