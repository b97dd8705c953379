/* SPDX-License-Identifier: MIT */
/*
 * The connector's consumer contract, once for every provider: the phase
 * machine of NDK's handshake, the status of each call in each phase, the
 * private-data limits, NdkGetConnectionData and the address queries
 * (docs/ndk.md, Connecting, Accepting, Private data, Disconnect).
 */
#include <assert.h>
#include <string.h>
#include "core/log.h"
#include "front/address.h"
#include "front/conndata.h"
#include "front/connector.h"

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

void ndk_conn_init(struct ndk_conn *c, bool passive)
{
	ndk_lock_init(&c->lock, NDK_LOCK_CONNECTOR);
	c->phase = NDK_CONN_IDLE;
	c->passive = passive;
}

void ndk_conn_fini(struct ndk_conn *c)
{
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

NTSTATUS ndk_conn_get_connection_data(NDK_CONNECTOR *pNdkConnector,
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

NTSTATUS ndk_conn_get_local_address(NDK_CONNECTOR *pNdkConnector,
				    PSOCKADDR pAddress, ULONG *pAddressLength)
{
	return get_address(to_ndk_conn(pNdkConnector), false, pAddress,
			   pAddressLength);
}

NTSTATUS ndk_conn_get_peer_address(NDK_CONNECTOR *pNdkConnector,
				   PSOCKADDR pAddress, ULONG *pAddressLength)
{
	return get_address(to_ndk_conn(pNdkConnector), true, pAddress,
			   pAddressLength);
}
