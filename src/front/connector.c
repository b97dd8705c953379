/* SPDX-License-Identifier: MIT */
/*
 * The connector's consumer contract, once for every provider: the phase
 * machine of NDK's handshake, the status of each call in each phase, the
 * private-data limits, NdkGetConnectionData and the address queries
 * (docs/ndk.md, Connecting, Accepting, Private data, Disconnect).
 */
#include <assert.h>
#include <string.h>
#include <netinet/in.h>
#include "core/log.h"
#include "core/status.h"
#include "front/address.h"
#include "front/conndata.h"
#include "front/connector.h"
#include "front/adapter.h"
#include "front/endpoint.h"
#include "front/provider.h"
#include "front/shared_endpoint.h"

static const char *const phase_names[NDK_CONN_PHASE_COUNT] = {
	[NDK_CONN_IDLE] = "IDLE",
	[NDK_CONN_CONNECTING] = "CONNECTING",
	[NDK_CONN_REPLIED] = "REPLIED",
	[NDK_CONN_REQUESTED] = "REQUESTED",
	[NDK_CONN_ACCEPTING] = "ACCEPTING",
	[NDK_CONN_ESTABLISHED] = "ESTABLISHED",
	[NDK_CONN_PEER_CLOSED] = "PEER_CLOSED",
	[NDK_CONN_DISCONNECTING] = "DISCONNECTING",
	[NDK_CONN_FAILED] = "FAILED",
	[NDK_CONN_ABANDONED] = "ABANDONED",
	[NDK_CONN_CLOSED] = "CLOSED",
};

const char *ndk_conn_phase_name(enum ndk_conn_phase phase)
{
	if ((unsigned int)phase >= NDK_CONN_PHASE_COUNT)
		return "?";
	return phase_names[phase];
}

/*
 * NDK's handshake, phase_ok[from][to]. Every phase but IDLE and the ends
 * may be closed; the ends are final. A provider's transport state that
 * moves within one phase (an RTR nudge, a Reply on its way) is no move.
 */
static const bool phase_ok[NDK_CONN_PHASE_COUNT][NDK_CONN_PHASE_COUNT] = {
	[NDK_CONN_IDLE] = {
		[NDK_CONN_CONNECTING] = true,
		[NDK_CONN_REQUESTED] = true, /* created for a Request */
	},
	[NDK_CONN_CONNECTING] = {
		[NDK_CONN_IDLE] = true, /* failed inline */
		[NDK_CONN_REPLIED] = true,
		[NDK_CONN_FAILED] = true,
		[NDK_CONN_CLOSED] = true,
	},
	[NDK_CONN_REPLIED] = {
		[NDK_CONN_ESTABLISHED] = true,
		[NDK_CONN_ABANDONED] = true,
		[NDK_CONN_CLOSED] = true,
	},
	[NDK_CONN_REQUESTED] = {
		[NDK_CONN_ACCEPTING] = true,
		[NDK_CONN_ABANDONED] = true,
		[NDK_CONN_CLOSED] = true,
	},
	[NDK_CONN_ACCEPTING] = {
		[NDK_CONN_ESTABLISHED] = true,
		[NDK_CONN_FAILED] = true,
		[NDK_CONN_CLOSED] = true,
	},
	[NDK_CONN_ESTABLISHED] = {
		[NDK_CONN_PEER_CLOSED] = true,
		[NDK_CONN_DISCONNECTING] = true,
		[NDK_CONN_CLOSED] = true,
	},
	[NDK_CONN_PEER_CLOSED] = {
		[NDK_CONN_CLOSED] = true,
	},
	[NDK_CONN_DISCONNECTING] = {
		[NDK_CONN_CLOSED] = true,
	},
};

static void conn_disc_work_fn(struct ndk_work *w)
{
	struct ndk_conn *c = container_of(w, struct ndk_conn, disc_work);
	NDK_FN_DISCONNECT_EVENT_CALLBACK cb;
	NDK_FN_DISCONNECT_EVENT_CALLBACK_EX cb_ex;
	NTSTATUS reason;
	PVOID ctx;

	ndk_lock(&c->lock);
	cb = c->disc_cb;
	cb_ex = c->disc_cb_ex;
	ctx = c->disc_ctx;
	reason = c->disc_reason;
	ndk_unlock(&c->lock);
	ndk_obj_disconnect_event(&c->obj, cb, cb_ex, ctx, reason);
	ndk_obj_release(&c->obj);
}

void ndk_conn_init(struct ndk_conn *c, bool passive)
{
	ndk_lock_init(&c->lock, NDK_LOCK_CONNECTOR);
	c->phase = NDK_CONN_IDLE;
	c->passive = passive;
	/* Initialised once: re-initialising a queued item corrupts the
	 * engine's queue. */
	ndk_work_init(&c->disc_work, conn_disc_work_fn);
}

void ndk_conn_peer_closed(struct ndk_conn *c, NTSTATUS reason)
{
	NDK_ASSERT_LOCKED(&c->lock);
	c->disc_reason = reason;
	if (!c->disc_cb && !c->disc_cb_ex)
		return;
	ndk_obj_hold(&c->obj);
	if (!ndk_engine_post(c->obj.domain->engine, &c->disc_work))
		ndk_obj_release(&c->obj);
}

NTSTATUS ndk_conn_use_endpoint(struct ndk_conn *c, struct ndk_endpoint *ep,
			       const struct sockaddr *dst)
{
	const struct sockaddr *local;
	socklen_t len;
	int ret;

	c->ep = ep;
	local = ndk_endpoint_addr(ep, &len);
	memset(&c->local, 0, sizeof(c->local));
	memcpy(&c->local, local, len);
	memset(&c->peer, 0, sizeof(c->peer));
	memcpy(&c->peer, dst, ndk_addr_len(dst));
	ret = ndk_tuple_register((struct sockaddr *)&c->local, dst);
	if (ret)
		return ndk_status_from_errno(ret, NDK_SITE_CONNECT);
	c->tuple_registered = true;
	return STATUS_SUCCESS;
}

bool ndk_conn_port_picked(const struct ndk_conn_connect *a)
{
	if (a->sep)
		return false;
	if (!a->src)
		return true;
	if (a->src->sa_family == AF_INET)
		return !((const struct sockaddr_in *)(const void *)a->src)
				->sin_port;
	if (a->src->sa_family == AF_INET6)
		return !((const struct sockaddr_in6 *)(const void *)a->src)
				->sin6_port;
	return false;
}

void ndk_conn_release_endpoint(struct ndk_conn *c)
{
	if (c->tuple_registered)
		ndk_tuple_unregister((struct sockaddr *)&c->local,
				     (struct sockaddr *)&c->peer);
	c->tuple_registered = false;
	if (c->ep)
		ndk_endpoint_put(c->ep);
	c->ep = NULL;
}

void ndk_conn_cancel_requests(struct ndk_conn *c)
{
	NDK_ASSERT_LOCKED(&c->lock);
	ndk_req_complete(&c->connect_req, STATUS_CANCELLED);
	ndk_req_complete(&c->accept_req, STATUS_CANCELLED);
	ndk_req_complete(&c->disconnect_req, STATUS_CANCELLED);
}

void ndk_conn_fini(struct ndk_conn *c)
{
	/* A connector whose setup failed never closed. */
	ndk_conn_release_endpoint(c);
	ndk_lock_destroy(&c->lock);
}

void ndk_conn_set_phase(struct ndk_conn *c, enum ndk_conn_phase to)
{
	NDK_ASSERT_LOCKED(&c->lock);
	if (to == c->phase)
		return;
	if ((unsigned int)to >= NDK_CONN_PHASE_COUNT ||
	    !phase_ok[c->phase][to]) {
		ndk_err("connector %p: NDK phase %s -> %s is not NDK's",
			(void *)c, ndk_conn_phase_name(c->phase),
			ndk_conn_phase_name(to));
		assert(!"illegal connector phase transition");
		return;
	}
	c->phase = to;
}

/*
 * A call that came too late: the attempt already ended. The peer's
 * leaving (fail CONNECTION_ABORTED) is reported as such to the call that
 * would have gone on with it, and so is our own CompleteConnect timer
 * (IO_TIMEOUT) to the active side's CompleteConnect and Reject
 * (NDK_FN_ACCEPT, NDK_FN_COMPLETE_CONNECT, NDK_FN_REJECT).
 */
static NTSTATUS late_call(const struct ndk_conn *c, enum ndk_conn_call call)
{
	bool aborted = c->fail == STATUS_CONNECTION_ABORTED;
	bool timed_out =
		c->phase == NDK_CONN_ABANDONED && c->fail == STATUS_IO_TIMEOUT;

	switch (call) {
	case NDK_CALL_COMPLETE_CONNECT:
		if (!c->passive && c->phase == NDK_CONN_ABANDONED &&
		    (aborted || timed_out))
			return c->fail;
		break;
	case NDK_CALL_ACCEPT:
		if (c->passive && aborted)
			return STATUS_CONNECTION_ABORTED;
		break;
	case NDK_CALL_REJECT:
		if (aborted || timed_out)
			return STATUS_CONNECTION_ABORTED;
		break;
	default:
		break;
	}
	return STATUS_CONNECTION_INVALID;
}

NTSTATUS ndk_conn_check_call(struct ndk_conn *c, enum ndk_conn_call call)
{
	enum ndk_conn_phase p = c->phase;

	NDK_ASSERT_LOCKED(&c->lock);
	switch (call) {
	case NDK_CALL_CONNECT:
		/* A connector connects once; a passive one never. */
		return !c->passive && p == NDK_CONN_IDLE
			       ? STATUS_SUCCESS
			       : STATUS_INVALID_DEVICE_STATE;
	case NDK_CALL_COMPLETE_CONNECT:
		if (!c->passive && p == NDK_CONN_REPLIED)
			return STATUS_SUCCESS;
		break;
	case NDK_CALL_ACCEPT:
		if (c->passive && p == NDK_CONN_REQUESTED)
			return STATUS_SUCCESS;
		break;
	case NDK_CALL_REJECT:
		/* The passive side refuses a Request; the active side may
		 * still refuse the Reply instead of completing. */
		if ((c->passive && p == NDK_CONN_REQUESTED) ||
		    (!c->passive && p == NDK_CONN_REPLIED))
			return STATUS_SUCCESS;
		break;
	case NDK_CALL_DISCONNECT:
		if (p == NDK_CONN_ESTABLISHED || p == NDK_CONN_PEER_CLOSED)
			return STATUS_SUCCESS;
		return STATUS_CONNECTION_INVALID;
	default:
		return STATUS_INVALID_PARAMETER;
	}
	return ndk_conn_phase_ended(p) ? late_call(c, call)
				       : STATUS_CONNECTION_INVALID;
}

NTSTATUS ndk_conn_check_private_data(const void *pd, ULONG len, ULONG max)
{
	if (len && !pd)
		return STATUS_INVALID_PARAMETER;
	/* More than the adapter advertises is refused, nothing is sent. */
	if (len > max)
		return STATUS_INVALID_BUFFER_SIZE;
	return STATUS_SUCCESS;
}

void ndk_conn_set_peer(struct ndk_conn *c, const void *pd, size_t len,
		       ULONG eff_ird, ULONG eff_ord)
{
	if (len > sizeof(c->peer_pd))
		len = sizeof(c->peer_pd);
	if (len)
		memcpy(c->peer_pd, pd, len);
	c->peer_pd_len = (uint16_t)len;
	c->eff_ird = eff_ird;
	c->eff_ord = eff_ord;
	c->peer_known = true;
}

static NTSTATUS conn_get_connection_data(NDK_CONNECTOR *pNdkConnector,
					 ULONG *pInboundReadLimit,
					 ULONG *pOutboundReadLimit,
					 PVOID pPrivateData,
					 ULONG *pPrivateDataLength)
{
	struct ndk_conn *c = to_ndk_conn(pNdkConnector);
	NTSTATUS status = ndk_conndata_check(pPrivateData, pPrivateDataLength);

	if (status)
		return status;
	ndk_lock(&c->lock);
	/* The RDS is what the provider keeps of the peer's private data:
	 * exactly what was sent where the transport carries the length
	 * (MPA), the whole area where it does not (the IB CM; docs/verbs.md,
	 * Private data). */
	status = !c->peer_known ? STATUS_CONNECTION_INVALID
				: ndk_conndata_copy_out(
					  c->eff_ird, c->eff_ord, c->peer_pd,
					  c->peer_pd_len, pInboundReadLimit,
					  pOutboundReadLimit, pPrivateData,
					  pPrivateDataLength);
	ndk_unlock(&c->lock);
	return status;
}

static NTSTATUS get_address(struct ndk_conn *c, bool peer, PSOCKADDR addr,
			    ULONG *len)
{
	NTSTATUS status;

	ndk_lock(&c->lock);
	/* An active connector has addresses once it started connecting. */
	if (!c->passive && c->phase == NDK_CONN_IDLE)
		status = STATUS_CONNECTION_INVALID;
	else
		status = ndk_addr_copy_out(peer ? (struct sockaddr *)&c->peer
						: (struct sockaddr *)&c->local,
					   addr, len);
	ndk_unlock(&c->lock);
	return status;
}

static NTSTATUS conn_get_local_address(NDK_CONNECTOR *pNdkConnector,
				       PSOCKADDR pAddress,
				       ULONG *pAddressLength)
{
	return get_address(to_ndk_conn(pNdkConnector), false, pAddress,
			   pAddressLength);
}

static NTSTATUS conn_get_peer_address(NDK_CONNECTOR *pNdkConnector,
				      PSOCKADDR pAddress, ULONG *pAddressLength)
{
	return get_address(to_ndk_conn(pNdkConnector), true, pAddress,
			   pAddressLength);
}

static const struct ndk_conn_ops *conn_ops(const struct ndk_conn *c)
{
	return c->obj.adapter->provider->conn;
}

/* What both NdkConnect calls check before the phase. */
static NTSTATUS conn_connect_args(struct ndk_conn *c, NDK_QP *qp,
				  const struct sockaddr *dst, ULONG dst_len,
				  const void *pd, ULONG pd_len,
				  struct ndk_obj **qp_obj)
{
	*qp_obj =
		qp ? ndk_obj_typed(&qp->Header, NdkObjectTypeQp, c->obj.adapter)
		   : NULL;
	if (!*qp_obj || ndk_addr_check(dst, dst_len))
		return STATUS_INVALID_PARAMETER;
	return ndk_conn_check_private_data(pd, pd_len,
					   c->obj.adapter->info.MaxCallerData);
}

static NTSTATUS
conn_connect(NDK_CONNECTOR *pNdkConnector, NDK_QP *pNdkQp,
	     CONST PSOCKADDR pSrcAddress, ULONG SrcAddressLength,
	     CONST PSOCKADDR pDestAddress, ULONG DestAddressLength,
	     ULONG InboundReadLimit, ULONG OutboundReadLimit,
	     CONST PVOID pPrivateData, ULONG PrivateDataLength,
	     NDK_FN_REQUEST_COMPLETION RequestCompletion, PVOID RequestContext)
{
	struct ndk_conn *c = to_ndk_conn(pNdkConnector);
	struct ndk_conn_connect a = {
		.src = pSrcAddress,
		.src_len = SrcAddressLength,
		.dst = pDestAddress,
		.ird = InboundReadLimit,
		.ord = OutboundReadLimit,
		.pd = pPrivateData,
		.pd_len = PrivateDataLength,
		.cb = RequestCompletion,
		.ctx = RequestContext,
	};
	NTSTATUS status;

	ndk_lock(&c->lock);
	status = conn_connect_args(c, pNdkQp, pDestAddress, DestAddressLength,
				   pPrivateData, PrivateDataLength, &a.qp);
	if (!status)
		status = ndk_conn_check_call(c, NDK_CALL_CONNECT);
	if (!status && (ndk_addr_check(pSrcAddress, SrcAddressLength) ||
			pSrcAddress->sa_family != pDestAddress->sa_family))
		status = STATUS_INVALID_PARAMETER;
	if (!status)
		status = conn_ops(c)->connect(c, &a);
	ndk_unlock(&c->lock);
	return status;
}

static NTSTATUS
conn_connect_sep(NDK_CONNECTOR *pNdkConnector, NDK_QP *pNdkQp,
		 NDK_SHARED_ENDPOINT *pNdkSharedEndpoint,
		 CONST PSOCKADDR pDestAddress, ULONG DestAddressLength,
		 ULONG InboundReadLimit, ULONG OutboundReadLimit,
		 CONST PVOID pPrivateData, ULONG PrivateDataLength,
		 NDK_FN_REQUEST_COMPLETION RequestCompletion,
		 PVOID RequestContext)
{
	struct ndk_conn *c = to_ndk_conn(pNdkConnector);
	struct ndk_conn_connect a = {
		.dst = pDestAddress,
		.ird = InboundReadLimit,
		.ord = OutboundReadLimit,
		.pd = pPrivateData,
		.pd_len = PrivateDataLength,
		.cb = RequestCompletion,
		.ctx = RequestContext,
	};
	const struct sockaddr *local;
	socklen_t len;
	NTSTATUS status;

	ndk_lock(&c->lock);
	status = conn_connect_args(c, pNdkQp, pDestAddress, DestAddressLength,
				   pPrivateData, PrivateDataLength, &a.qp);
	if (!status)
		status = ndk_conn_check_call(c, NDK_CALL_CONNECT);
	if (!status && !pNdkSharedEndpoint)
		status = STATUS_INVALID_PARAMETER;
	if (!status) {
		a.sep = to_ndk_shared_endpoint(pNdkSharedEndpoint);
		local = ndk_endpoint_addr(a.sep->ep, &len);
		if (local->sa_family != pDestAddress->sa_family)
			status = STATUS_INVALID_PARAMETER;
	}
	if (!status)
		status = conn_ops(c)->connect(c, &a);
	ndk_unlock(&c->lock);
	return status;
}

static NTSTATUS conn_complete(NDK_CONNECTOR *pNdkConnector,
			      NDK_FN_DISCONNECT_EVENT_CALLBACK disc,
			      NDK_FN_DISCONNECT_EVENT_CALLBACK_EX disc_ex,
			      PVOID disc_ctx)
{
	struct ndk_conn *c = to_ndk_conn(pNdkConnector);
	NTSTATUS status;

	ndk_lock(&c->lock);
	status = ndk_conn_check_call(c, NDK_CALL_COMPLETE_CONNECT);
	if (!status) {
		/* Kept even if the call fails: no event follows then. */
		c->disc_cb = disc;
		c->disc_cb_ex = disc_ex;
		c->disc_ctx = disc_ctx;
		status = conn_ops(c)->complete_connect(c);
	}
	ndk_unlock(&c->lock);
	return status;
}

/* Done inline: no RequestCompletion (NDK_FN_COMPLETE_CONNECT). */
static NTSTATUS
conn_complete_connect(NDK_CONNECTOR *pNdkConnector,
		      NDK_FN_DISCONNECT_EVENT_CALLBACK DisconnectEvent,
		      PVOID DisconnectEventContext,
		      NDK_FN_REQUEST_COMPLETION RequestCompletion,
		      PVOID RequestContext)
{
	return conn_complete(pNdkConnector, DisconnectEvent, NULL,
			     DisconnectEventContext);
}

static NTSTATUS
conn_complete_connect_ex(NDK_CONNECTOR *pNdkConnector,
			 NDK_FN_DISCONNECT_EVENT_CALLBACK_EX DisconnectEvent,
			 PVOID DisconnectEventContext,
			 NDK_FN_REQUEST_COMPLETION RequestCompletion,
			 PVOID RequestContext)
{
	return conn_complete(pNdkConnector, NULL, DisconnectEvent,
			     DisconnectEventContext);
}

/* NdkAccept and NdkAcceptEx: one disconnect callback or the other. */
static NTSTATUS conn_accept(NDK_CONNECTOR *pNdkConnector, NDK_QP *pNdkQp,
			    ULONG ird, ULONG ord, const void *pd, ULONG pd_len,
			    NDK_FN_DISCONNECT_EVENT_CALLBACK disc,
			    NDK_FN_DISCONNECT_EVENT_CALLBACK_EX disc_ex,
			    PVOID disc_ctx, NDK_FN_REQUEST_COMPLETION cb,
			    PVOID ctx)
{
	struct ndk_conn *c = to_ndk_conn(pNdkConnector);
	struct ndk_conn_accept a = {
		.ird = ird,
		.ord = ord,
		.pd = pd,
		.pd_len = pd_len,
		.cb = cb,
		.ctx = ctx,
	};
	NTSTATUS status;

	a.qp = pNdkQp ? ndk_obj_typed(&pNdkQp->Header, NdkObjectTypeQp,
				      c->obj.adapter)
		      : NULL;
	if (!a.qp)
		return STATUS_INVALID_PARAMETER;
	status = ndk_conn_check_private_data(
		pd, pd_len, c->obj.adapter->info.MaxCalleeData);
	if (status)
		return status;
	ndk_lock(&c->lock);
	status = ndk_conn_check_call(c, NDK_CALL_ACCEPT);
	if (!status) {
		/* Kept even if the call fails: no event follows then. */
		c->disc_cb = disc;
		c->disc_cb_ex = disc_ex;
		c->disc_ctx = disc_ctx;
		status = conn_ops(c)->accept(c, &a);
	}
	ndk_unlock(&c->lock);
	return status;
}

static NTSTATUS
conn_ndk_accept(NDK_CONNECTOR *pNdkConnector, NDK_QP *pNdkQp,
		ULONG InboundReadLimit, ULONG OutboundReadLimit,
		CONST PVOID pPrivateData, ULONG PrivateDataLength,
		NDK_FN_DISCONNECT_EVENT_CALLBACK DisconnectEvent,
		PVOID DisconnectEventContext,
		NDK_FN_REQUEST_COMPLETION RequestCompletion,
		PVOID RequestContext)
{
	return conn_accept(pNdkConnector, pNdkQp, InboundReadLimit,
			   OutboundReadLimit, pPrivateData, PrivateDataLength,
			   DisconnectEvent, NULL, DisconnectEventContext,
			   RequestCompletion, RequestContext);
}

static NTSTATUS
conn_ndk_accept_ex(NDK_CONNECTOR *pNdkConnector, NDK_QP *pNdkQp,
		   ULONG InboundReadLimit, ULONG OutboundReadLimit,
		   CONST PVOID pPrivateData, ULONG PrivateDataLength,
		   NDK_FN_DISCONNECT_EVENT_CALLBACK_EX DisconnectEvent,
		   PVOID DisconnectEventContext,
		   NDK_FN_REQUEST_COMPLETION RequestCompletion,
		   PVOID RequestContext)
{
	return conn_accept(pNdkConnector, pNdkQp, InboundReadLimit,
			   OutboundReadLimit, pPrivateData, PrivateDataLength,
			   NULL, DisconnectEvent, DisconnectEventContext,
			   RequestCompletion, RequestContext);
}

/* The limit is what every transport's refusal carries (MaxCalleeData). */
static NTSTATUS conn_reject(NDK_CONNECTOR *pNdkConnector,
			    CONST PVOID pPrivateData, ULONG PrivateDataLength)
{
	struct ndk_conn *c = to_ndk_conn(pNdkConnector);
	NTSTATUS status;

	status =
		ndk_conn_check_private_data(pPrivateData, PrivateDataLength,
					    c->obj.adapter->info.MaxCalleeData);
	if (status)
		return status;
	ndk_lock(&c->lock);
	status = ndk_conn_check_call(c, NDK_CALL_REJECT);
	if (!status)
		status =
			conn_ops(c)->reject(c, pPrivateData, PrivateDataLength);
	ndk_unlock(&c->lock);
	return status;
}

static NTSTATUS conn_disconnect(NDK_CONNECTOR *pNdkConnector,
				NDK_FN_REQUEST_COMPLETION RequestCompletion,
				PVOID RequestContext)
{
	struct ndk_conn *c = to_ndk_conn(pNdkConnector);
	NTSTATUS status;

	ndk_lock(&c->lock);
	status = ndk_conn_check_call(c, NDK_CALL_DISCONNECT);
	if (!status)
		status = conn_ops(c)->disconnect(c, RequestCompletion,
						 RequestContext);
	ndk_unlock(&c->lock);
	return status;
}

const NDK_CONNECTOR_DISPATCH ndk_conn_dispatch = {
	.NdkCloseConnector = ndk_close_object,
	.NdkQueryExtension = ndk_query_extension,
	.NdkConnect = conn_connect,
	.NdkConnectWithSharedEndpoint = conn_connect_sep,
	.NdkCompleteConnect = conn_complete_connect,
	.NdkAccept = conn_ndk_accept,
	.NdkReject = conn_reject,
	.NdkGetConnectionData = conn_get_connection_data,
	.NdkGetLocalAddress = conn_get_local_address,
	.NdkGetPeerAddress = conn_get_peer_address,
	.NdkDisconnect = conn_disconnect,
	.NdkCompleteConnectEx = conn_complete_connect_ex,
	.NdkAcceptEx = conn_ndk_accept_ex,
};
