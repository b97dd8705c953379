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
		c->conn.eff_ird = e->initiator_depth;
		c->conn.eff_ord = e->responder_resources;
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
	vconn_watch_peer(c);
	ndk_adapter_count(c->conn.obj.adapter, NDK_CTR(Accept), 1);
	ndk_req_complete(&c->conn.accept_req, STATUS_SUCCESS);
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
	    ndk_tcp_peer_state((struct sockaddr *)&c->conn.local,
			       (struct sockaddr *)&c->conn.peer) !=
		    NDK_TCP_PEER_GONE)
		return false;
	ndk_info("verbs: connector %p: the initiator left its request",
		 (void *)c);
	vconn_abandon(c, STATUS_CONNECTION_ABORTED);
	return true;
}

/* NdkAccept(Ex), checked by front/connector.c; c->lock held. */
NTSTATUS ndk_vconn_accept(struct ndk_conn *base,
			  const struct ndk_conn_accept *a)
{
	struct ndk_vconn *c = container_of(base, struct ndk_vconn, conn);
	struct ndk_adapter *ad = c->conn.obj.adapter;
	struct rdma_conn_param p;
	struct ndk_vqp *qp;
	NTSTATUS status;
	int ret;

	qp = container_of(a->qp, struct ndk_vqp, obj);
	if (vconn_initiator_left(c)) {
		status = STATUS_CONNECTION_ABORTED;
		goto out;
	}
	ret = ndk_vqp_bind(qp, vconn_qp_fatal, &c->conn.obj);
	if (ret) {
		status = ret == -EBUSY ? STATUS_CONNECTION_ACTIVE
				       : STATUS_INVALID_DEVICE_STATE;
		goto out;
	}
	if (ndk_obj_link(&c->conn.obj, &qp->obj)) {
		ndk_vqp_unbind(qp);
		status = STATUS_INVALID_PARAMETER;
		goto out;
	}
	c->qp = qp;
	c->req_ird = vconn_cap(a->ird, ad->info.MaxInboundReadLimit);
	c->req_ord = vconn_cap(a->ord, ad->info.MaxOutboundReadLimit);
	c->conn.eff_ird = MIN(c->req_ird, c->peer_ord);
	c->conn.eff_ord = MIN(c->req_ord, c->peer_ird);
	if (!vconn_vad(c)->iwarp &&
	    ndk_vqp_ib_ready(qp, c->id, c->conn.eff_ird, c->conn.eff_ord)) {
		vconn_abandon(c, STATUS_CONNECTION_ABORTED);
		status = STATUS_CONNECTION_ABORTED;
		goto out;
	}
	p = vconn_param(c, a->pd, (uint8_t)a->pd_len, c->conn.eff_ird,
			c->conn.eff_ord);
	if (rdma_accept(c->id, &p)) {
		/* The initiator is gone, or the device refused. */
		ndk_info("verbs: connector %p: rdma_accept failed (%d)",
			 (void *)c, errno);
		vconn_abandon(c, STATUS_CONNECTION_ABORTED);
		status = STATUS_CONNECTION_ABORTED;
		goto out;
	}
	ndk_req_pend(&c->conn.accept_req, &c->conn.obj, a->cb, a->ctx);
	vconn_set_state(c, VCONN_ACCEPTING);
	/* IB and RoCE: no RTU within NDK_CM_TIMEOUT_MS is IO_TIMEOUT, as for
	 * the software provider (the IB CM's own REP retries last minutes). */
	vconn_arm_timer(c, VCONN_TIMER_ACCEPT, ndk_cm_timeout_ms());
	status = STATUS_PENDING;
out:
	return status;
}

/* NdkReject, checked by front/connector.c; c->lock held. */
NTSTATUS ndk_vconn_reject(struct ndk_conn *base, const void *pPrivateData,
			  ULONG PrivateDataLength)
{
	struct ndk_vconn *c = container_of(base, struct ndk_vconn, conn);
	NTSTATUS status = STATUS_SUCCESS;

	/* MaxCalleeData is what a reject carries too (docs/verbs.md). */
	if (PrivateDataLength > vconn_vad(c)->max_reject_data)
		return STATUS_INVALID_BUFFER_SIZE;
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
	default:
		break;
	}
	return status;
}
