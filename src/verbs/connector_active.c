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
	ndk_req_complete(&c->conn.connect_req, STATUS_SUCCESS);
}

/* ------------------------------------------------------------------ */
/* Active side                                                        */

/* c->conn.lock held, c->conn.ep reserved: everything after the endpoint. */
static NTSTATUS vconn_start(struct ndk_vconn *c, struct ndk_vqp *qp,
			    const struct sockaddr *dst, ULONG ird, ULONG ord,
			    const void *pd, ULONG pd_len,
			    NDK_FN_REQUEST_COMPLETION cb, PVOID ctx)
{
	struct ndk_adapter *ad = c->conn.obj.adapter;
	NTSTATUS status;
	int ret;

	status = ndk_conn_use_endpoint(&c->conn, c->conn.ep, dst);
	if (status)
		return status;
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
	ndk_req_pend(&c->conn.connect_req, &c->conn.obj, cb, ctx);
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
		ndk_req_withdraw(&c->conn.connect_req);
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
 * held, c->conn.ep referenced. On an inline failure the connector is IDLE
 * again, owning nothing, so it may try again.
 */
static NTSTATUS vconn_begin(struct ndk_vconn *c,
			    const struct ndk_conn_connect *a)
{
	NTSTATUS status;

	status =
		vconn_start(c, container_of(a->qp, struct ndk_vqp, obj), a->dst,
			    a->ird, a->ord, a->pd, a->pd_len, a->cb, a->ctx);
	if (status != STATUS_PENDING)
		ndk_conn_release_endpoint(&c->conn);
	return status;
}

/* NdkConnect(WithSharedEndpoint), checked by front/connector.c;
 * c->lock held. */
NTSTATUS ndk_vconn_connect(struct ndk_conn *base,
			   const struct ndk_conn_connect *a)
{
	struct ndk_vconn *c = container_of(base, struct ndk_vconn, conn);
	NTSTATUS status;

	if (!a->sep) {
		/* The connector's own endpoint: one reference (NDKPI
		 * Listeners, Connectors, and Endpoints). */
		status = ndk_local_endpoint_acquire(
			c->conn.obj.adapter, a->src, a->src_len,
			NDK_ENDPOINT_CONNECTOR, &c->conn.ep);
		return status ? status : vconn_begin(c, a);
	}
	/* +1 on the shared endpoint per connector; the object is the
	 * connector's antecedent. */
	if (!c->sep_linked) {
		if (ndk_obj_link(&c->conn.obj, &a->sep->obj))
			return STATUS_INVALID_PARAMETER;
		c->sep_linked = true;
	}
	ndk_endpoint_get(a->sep->ep);
	c->conn.ep = a->sep->ep;
	c->shared = true;
	status = vconn_begin(c, a);
	if (status != STATUS_PENDING)
		c->shared = false;
	return status;
}

/* NdkCompleteConnect(Ex), checked by front/connector.c; c->lock held. */
NTSTATUS ndk_vconn_complete_connect(struct ndk_conn *base)
{
	struct ndk_vconn *c = container_of(base, struct ndk_vconn, conn);
	NTSTATUS status = STATUS_SUCCESS;
	/* IB and RoCE: RTR and RTS, then the RTU lets the peer's Accept
	 * complete. iWARP: the kernel established it already. */
	if (!vconn_vad(c)->iwarp &&
	    (ndk_vqp_ib_ready(c->qp, c->id, c->conn.eff_ird, c->conn.eff_ord) ||
	     rdma_establish(c->id))) {
		vconn_abandon(c, STATUS_CONNECTION_ABORTED);
		status = STATUS_CONNECTION_ABORTED;
		goto out;
	}
	ndk_vqp_connected(c->qp);
	vconn_set_state(c, VCONN_ESTABLISHED);
	ndk_adapter_count(c->conn.obj.adapter, NDK_CTR(Connect), 1);
out:
	return status;
}
