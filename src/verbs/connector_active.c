/* SPDX-License-Identifier: MIT */
/*
 * The verbs connector's active side (docs/verbs.md, Connection
 * management): NdkConnect(WithSharedEndpoint) reserves the local endpoint,
 * resolves the address and the route and connects on the adapter's worker;
 * NdkCompleteConnect finishes the handshake.
 */
#include <errno.h>
#include <string.h>
#include "verbs/connector_int.h"

/* The adapter's worker: rdma_connect, without the connector's lock. */
static void vconn_connect_job(struct ndk_vjob *job)
{
	struct ndk_vconn *c = container_of(job, struct ndk_vconn, connect_job);
	struct rdma_conn_param p;
	struct rdma_cm_id *id;
	int ret, err = 0;

	ndk_lock(&c->conn.lock);
	id = c->id;
	if (id)
		p = vconn_param(c, c->pd, (uint8_t)c->pd_len, c->req_ird,
				c->req_ord);
	ndk_unlock(&c->conn.lock);
	ret = id ? rdma_connect(id, &p) : 0;
	if (ret)
		err = errno;
	ndk_lock(&c->conn.lock);
	c->in_connect = false;
	if (c->id_after_connect) {
		/* Closed or failed meanwhile: the id is ours to end. */
		rdma_destroy_id(c->id_after_connect);
		c->id_after_connect = NULL;
	} else if (ret && c->state == VCONN_CONNECTING) {
		ndk_info("verbs: connector %p: rdma_connect: %s", (void *)c,
			 strerror(err));
		vconn_attempt_failed(c,
				     ndk_verbs_errno_status(err, NDK_VERBS_CM));
	}
	ndk_unlock(&c->conn.lock);
	ndk_obj_put(&c->conn.obj); /* the job's */
}

void vconn_route_resolved(struct ndk_vconn *c)
{
	vconn_set_state(c, VCONN_CONNECTING);
	c->in_connect = true;
	ndk_obj_get(&c->conn.obj);
	ndk_vworker_post(&vconn_vad(c)->worker, &c->connect_job,
			 vconn_connect_job);
}

/* CONNECTING: the peer accepted (IB: its REP; iWARP: established). */
void vconn_replied(struct ndk_vconn *c, const struct ndk_vcm_event *e)
{
	bool iwarp = vconn_vad(c)->iwarp;

	vconn_stop_timer(c);
	vconn_note_peer(c, e, iwarp);
	vconn_set_state(c, VCONN_REPLIED);
	/*
	 * Twice the acceptor's limit, as for the software provider: against
	 * a libndk acceptor its Accept times out first (IO_TIMEOUT there,
	 * CONNECTION_ABORTED here); ours ends an attempt whose consumer
	 * never completes it, so no REP waits for ever (docs/ndk.md,
	 * Connecting).
	 */
	vconn_arm_timer(c, VCONN_TIMER_COMPLETE, 2 * ndk_cm_timeout_ms());
	ndk_req_complete(&c->connect_req, STATUS_SUCCESS);
}

/* ------------------------------------------------------------------ */
/* Active side                                                        */

/* c->conn.lock held, c->ep reserved: everything after the endpoint. */
static NTSTATUS vconn_start(struct ndk_vconn *c, struct ndk_vqp *qp,
			    const struct sockaddr *dst, ULONG ird, ULONG ord,
			    const void *pd, ULONG pd_len,
			    NDK_FN_REQUEST_COMPLETION cb, PVOID ctx)
{
	struct ndk_adapter *ad = c->conn.obj.adapter;
	const struct sockaddr *local;
	socklen_t len;
	NTSTATUS status;
	int ret;

	local = ndk_endpoint_addr(c->ep, &len);
	memset(&c->conn.local, 0, sizeof(c->conn.local));
	memcpy(&c->conn.local, local, len);
	memset(&c->conn.peer, 0, sizeof(c->conn.peer));
	memcpy(&c->conn.peer, dst, ndk_addr_len(dst));
	ret = ndk_tuple_register((struct sockaddr *)&c->conn.local, dst);
	if (ret)
		return ndk_status_from_errno(ret, NDK_SITE_CONNECT);
	c->tuple_registered = true;
	ret = ndk_vqp_bind(qp, vconn_qp_fatal, &c->conn.obj);
	if (ret)
		return ret == -EBUSY ? STATUS_CONNECTION_ACTIVE
				     : STATUS_INVALID_DEVICE_STATE;
	if (ndk_obj_link(&c->conn.obj, &qp->obj)) {
		ndk_vqp_unbind(qp);
		return STATUS_INVALID_PARAMETER;
	}
	c->qp = qp;
	c->req_ird = vconn_cap(ird, ad->info.MaxInboundReadLimit);
	c->req_ord = vconn_cap(ord, ad->info.MaxOutboundReadLimit);
	if (pd_len)
		memcpy(c->pd, pd, pd_len);
	c->pd_len = (uint16_t)pd_len;
	if (rdma_create_id(vconn_vad(c)->cm, &c->id, &c->ref, RDMA_PS_TCP)) {
		ndk_info("verbs: connector %p: rdma_create_id: %s", (void *)c,
			 strerror(errno));
		status = ndk_verbs_errno_status(errno, NDK_VERBS_CM);
		goto fail_qp;
	}
	if (c->shared) {
		/* Many ids bound to the shared address, one per
		 * destination (rdma_cm's own port space). */
		int one = 1;

		if (rdma_set_option(c->id, RDMA_OPTION_ID,
				    RDMA_OPTION_ID_REUSEADDR, &one,
				    sizeof(one))) {
			status = ndk_verbs_errno_status(errno, NDK_VERBS_CM);
			vconn_destroy_id(c);
			goto fail_qp;
		}
	}
	ndk_req_pend(&c->connect_req, &c->conn.obj, cb, ctx);
	vconn_set_state(c, VCONN_RESOLVING_ADDR);
	/* The whole attempt, as for the software provider (siw's own MPA
	 * timer is longer). */
	vconn_arm_timer(c, VCONN_TIMER_CONNECT, ndk_cm_timeout_ms());
	if (rdma_resolve_addr(c->id, (struct sockaddr *)&c->conn.local,
			      (struct sockaddr *)dst,
			      (int)ndk_cm_timeout_ms())) {
		/* The source port taken in rdma_cm's own space, or no
		 * route: inline (NDK_FN_CONNECT). */
		ndk_info("verbs: connector %p: rdma_resolve_addr: %s",
			 (void *)c, strerror(errno));
		status = ndk_verbs_errno_status(
			errno,
			errno == EADDRINUSE ? NDK_VERBS_CM_BIND : NDK_VERBS_CM);
		ndk_req_withdraw(&c->connect_req);
		ndk_adapter_count(ad, NDK_CTR(ConnectFailure), 1);
		vconn_set_state(c, VCONN_IDLE);
		vconn_destroy_id(c);
		goto fail_qp;
	}
	return STATUS_PENDING;
fail_qp:
	ndk_vqp_unbind(qp);
	ndk_obj_unlink(&c->conn.obj, &qp->obj);
	c->qp = NULL;
	return status;
}

/*
 * Common tail of NdkConnect and NdkConnectWithSharedEndpoint: c->conn.lock
 * held, c->ep referenced. On an inline failure the connector is IDLE
 * again, owning nothing, so it may try again.
 */
static NTSTATUS vconn_begin(struct ndk_vconn *c, NDK_QP *pNdkQp,
			    const struct sockaddr *dst, ULONG ird, ULONG ord,
			    const void *pd, ULONG pd_len,
			    NDK_FN_REQUEST_COMPLETION cb, PVOID ctx)
{
	NTSTATUS status;

	status = vconn_start(c, to_vqp(pNdkQp), dst, ird, ord, pd, pd_len, cb,
			     ctx);
	if (status != STATUS_PENDING) {
		if (c->tuple_registered)
			ndk_tuple_unregister((struct sockaddr *)&c->conn.local,
					     (struct sockaddr *)&c->conn.peer);
		c->tuple_registered = false;
		ndk_endpoint_put(c->ep);
		c->ep = NULL;
	}
	return status;
}

static NTSTATUS vconn_check_connect(struct ndk_vconn *c, NDK_QP *qp,
				    const struct sockaddr *dst, ULONG dstlen,
				    const void *pd, ULONG pdlen)
{
	NTSTATUS status;

	if (!qp || ndk_addr_check(dst, dstlen))
		return STATUS_INVALID_PARAMETER;
	status = ndk_conn_check_private_data(
		pd, pdlen, c->conn.obj.adapter->info.MaxCallerData);
	if (status)
		return status;
	return ndk_conn_check_call(&c->conn, NDK_CALL_CONNECT);
}

NTSTATUS
vconn_connect(NDK_CONNECTOR *pNdkConnector, NDK_QP *pNdkQp,
	      CONST PSOCKADDR pSrcAddress, ULONG SrcAddressLength,
	      CONST PSOCKADDR pDestAddress, ULONG DestAddressLength,
	      ULONG InboundReadLimit, ULONG OutboundReadLimit,
	      CONST PVOID pPrivateData, ULONG PrivateDataLength,
	      NDK_FN_REQUEST_COMPLETION RequestCompletion, PVOID RequestContext)
{
	struct ndk_vconn *c = to_vconn(pNdkConnector);
	NTSTATUS status;

	ndk_lock(&c->conn.lock);
	status = vconn_check_connect(c, pNdkQp, pDestAddress, DestAddressLength,
				     pPrivateData, PrivateDataLength);
	if (!status && (ndk_addr_check(pSrcAddress, SrcAddressLength) ||
			pSrcAddress->sa_family != pDestAddress->sa_family))
		status = STATUS_INVALID_PARAMETER;
	if (status)
		goto out;
	/* The connector's own endpoint: one reference (NDKPI Listeners,
	 * Connectors, and Endpoints). */
	status = ndk_local_endpoint_acquire(c->conn.obj.adapter, pSrcAddress,
					    SrcAddressLength,
					    NDK_ENDPOINT_CONNECTOR, &c->ep);
	if (!status)
		status = vconn_begin(c, pNdkQp, pDestAddress, InboundReadLimit,
				     OutboundReadLimit, pPrivateData,
				     PrivateDataLength, RequestCompletion,
				     RequestContext);
out:
	ndk_unlock(&c->conn.lock);
	return status;
}

NTSTATUS
vconn_connect_sep(NDK_CONNECTOR *pNdkConnector, NDK_QP *pNdkQp,
		  NDK_SHARED_ENDPOINT *pNdkSharedEndpoint,
		  CONST PSOCKADDR pDestAddress, ULONG DestAddressLength,
		  ULONG InboundReadLimit, ULONG OutboundReadLimit,
		  CONST PVOID pPrivateData, ULONG PrivateDataLength,
		  NDK_FN_REQUEST_COMPLETION RequestCompletion,
		  PVOID RequestContext)
{
	struct ndk_vconn *c = to_vconn(pNdkConnector);
	struct ndk_shared_endpoint *sep;
	const struct sockaddr *local;
	socklen_t len;
	NTSTATUS status;

	ndk_lock(&c->conn.lock);
	status = vconn_check_connect(c, pNdkQp, pDestAddress, DestAddressLength,
				     pPrivateData, PrivateDataLength);
	if (!status && !pNdkSharedEndpoint)
		status = STATUS_INVALID_PARAMETER;
	if (status)
		goto out;
	sep = to_ndk_shared_endpoint(pNdkSharedEndpoint);
	local = ndk_endpoint_addr(sep->ep, &len);
	if (local->sa_family != pDestAddress->sa_family) {
		status = STATUS_INVALID_PARAMETER;
		goto out;
	}
	/* +1 on the shared endpoint per connector; the object is the
	 * connector's antecedent. */
	if (!c->sep_linked) {
		if (ndk_obj_link(&c->conn.obj, &sep->obj)) {
			status = STATUS_INVALID_PARAMETER;
			goto out;
		}
		c->sep_linked = true;
	}
	ndk_endpoint_get(sep->ep);
	c->ep = sep->ep;
	c->shared = true;
	status = vconn_begin(c, pNdkQp, pDestAddress, InboundReadLimit,
			     OutboundReadLimit, pPrivateData, PrivateDataLength,
			     RequestCompletion, RequestContext);
	if (status != STATUS_PENDING)
		c->shared = false;
out:
	ndk_unlock(&c->conn.lock);
	return status;
}

static NTSTATUS vconn_complete(struct ndk_vconn *c,
			       NDK_FN_DISCONNECT_EVENT_CALLBACK ev,
			       NDK_FN_DISCONNECT_EVENT_CALLBACK_EX ev_ex,
			       PVOID ev_ctx)
{
	NTSTATUS status = STATUS_SUCCESS;

	ndk_lock(&c->conn.lock);
	status = ndk_conn_check_call(&c->conn, NDK_CALL_COMPLETE_CONNECT);
	if (status)
		goto out;
	/* IB and RoCE: RTR and RTS, then the RTU lets the peer's Accept
	 * complete. iWARP: the kernel established it already. */
	if (!vconn_vad(c)->iwarp &&
	    (ndk_vqp_ib_ready(c->qp, c->id, c->conn.eff_ird, c->conn.eff_ord) ||
	     rdma_establish(c->id))) {
		vconn_abandon(c, STATUS_CONNECTION_ABORTED);
		status = STATUS_CONNECTION_ABORTED;
		goto out;
	}
	c->disc_cb = ev;
	c->disc_cb_ex = ev_ex;
	c->disc_ctx = ev_ctx;
	ndk_vqp_connected(c->qp);
	vconn_set_state(c, VCONN_ESTABLISHED);
	ndk_adapter_count(c->conn.obj.adapter, NDK_CTR(Connect), 1);
out:
	ndk_unlock(&c->conn.lock);
	return status;
}

NTSTATUS
vconn_complete_connect(NDK_CONNECTOR *pNdkConnector,
		       NDK_FN_DISCONNECT_EVENT_CALLBACK DisconnectEvent,
		       PVOID DisconnectEventContext,
		       NDK_FN_REQUEST_COMPLETION RequestCompletion,
		       PVOID RequestContext)
{
	/* Completes inline: no callback (NDK_FN_REQUEST_COMPLETION). */
	return vconn_complete(to_vconn(pNdkConnector), DisconnectEvent, NULL,
			      DisconnectEventContext);
}

NTSTATUS
vconn_complete_connect_ex(NDK_CONNECTOR *pNdkConnector,
			  NDK_FN_DISCONNECT_EVENT_CALLBACK_EX DisconnectEvent,
			  PVOID DisconnectEventContext,
			  NDK_FN_REQUEST_COMPLETION RequestCompletion,
			  PVOID RequestContext)
{
	return vconn_complete(to_vconn(pNdkConnector), NULL, DisconnectEvent,
			      DisconnectEventContext);
}
