/* SPDX-License-Identifier: MIT */
/*
 * The established connection: the end of the stream the data path
 * reports, the RTR nudge, NdkDisconnect and the disconnect event. The data
 * path owns the socket; the calls into it go through connector_qp.c.
 */
#include <errno.h>
#include "sw/connector.h"
#include "sw/connector_int.h"
#include "sw/sockopt.h"
#include "core/log.h"
#include "core/status.h"
#include "front/adapter.h"

/*
 * The peer disconnected an established connection: raise the disconnect
 * event (once: a connection leaves the established states only once) and
 * do not flush (NDK_FN_DISCONNECT_EVENT_CALLBACK). c->conn.lock held.
 */
static void conn_peer_disconnected(struct sw_connector *c, int err)
{
	struct ndk_adapter *ad = c->conn.obj.adapter;
	bool error = err != -EPIPE;

	conn_set_state(c, SW_CONN_PEER_CLOSED);
	if (err == -ETIMEDOUT)
		ndk_warn("connector %p: the peer stopped answering "
			 "(NDK_PEER_TIMEOUT_MS %llu)",
			 (void *)c, (unsigned long long)sw_peer_timeout_ms());
	/* The data path stopped: nothing more goes out, and requests wait
	 * for the consumer's NdkDisconnect or NdkFlush (no implicit flush,
	 * NDK_FN_DISCONNECT_EVENT_CALLBACK). */
	if (error)
		ndk_adapter_count(ad, NDK_CTR(ConnectionError), 1);
	ndk_conn_peer_closed(&c->conn,
			     ndk_status_from_errno(err, NDK_SITE_STREAM_END));
}

void conn_stream_ended(struct sw_connector *c, int err)
{
	if (c->state == SW_CONN_DISCONNECTING) {
		/* Our FIN was answered, or the peer reset the connection or
		 * sent a Terminate: either way the disconnect is done. A peer
		 * that stopped answering ends it as the timer would. */
		if (err != -EPIPE)
			ndk_info("connector %p: the stream ended abruptly "
				 "while disconnecting (%d)",
				 (void *)c, err);
		conn_stop_timer(c);
		conn_qp_disconnected(c, true);
		conn_set_state(c, SW_CONN_CLOSED);
		c->conn.fail = STATUS_CONNECTION_INVALID;
		ndk_req_complete(&c->conn.disconnect_req,
				 err == -ETIMEDOUT ? STATUS_IO_TIMEOUT
						   : STATUS_SUCCESS);
		return;
	}
	/* After a Terminate the data path sent our FIN already. */
	if (conn_state_up(c->state))
		conn_peer_disconnected(c, err);
}

/*
 * The RTR nudge (tests/interop/README.md, bug 1). Linux siw 6.1 as
 * responder installs its RTR upcall only after its Reply went out: an RTR
 * that arrives in between (and a first Send coalesced with it) stays
 * unread in its socket until another segment arrives, so the siw side
 * never becomes established, and a protocol whose passive side speaks
 * first hangs. So NDK_RTR_NUDGE_MS after a Write RTR, if the peer has sent
 * nothing since, one more zero-length RDMA Write to the RTR's STag goes
 * out: a no-op for the peer (RFC 5040: a zero-length tagged message places
 * nothing, RFC 6581 relies on it for the RTR itself), and a new segment
 * for siw. Anything from the peer proves it read the RTR; an FPDU of ours
 * in progress (or the RTR itself, not all out) is a new segment already;
 * the data path checks both (sw_dp_nudge). c->conn.lock held, engine thread.
 */
void conn_nudge(struct sw_connector *c)
{
	if (conn_dp_nudge(c))
		ndk_info("connector %p: RTR nudge (nothing from the peer "
			 "since the RTR)",
			 (void *)c);
}

/* NdkDisconnect, checked by front/connector.c; c->lock held. */
NTSTATUS sw_conn_disconnect(struct ndk_conn *base,
			    NDK_FN_REQUEST_COMPLETION RequestCompletion,
			    PVOID RequestContext)
{
	struct sw_connector *c = container_of(base, struct sw_connector, conn);

	if (c->state == SW_CONN_PEER_CLOSED) {
		/* The peer is gone already: finish at once, flushing. */
		conn_qp_disconnected(c, true);
		conn_set_state(c, SW_CONN_CLOSED);
		c->conn.fail = STATUS_CONNECTION_INVALID;
		return STATUS_SUCCESS;
	}
	/* Graceful: FIN, then wait for the peer's (NDK_FN_DISCONNECT),
	 * which the data path reports. */
	conn_dp_shutdown(c);
	ndk_req_pend(&c->conn.disconnect_req, &c->conn.obj, RequestCompletion,
		     RequestContext);
	conn_set_state(c, SW_CONN_DISCONNECTING);
	conn_arm_timer(c, CONN_TIMER_DISCONNECT, ndk_cm_timeout_ms());
	return STATUS_PENDING;
}

/* NdkDisconnect's FIN was never answered. */
void conn_disconnect_timed_out(struct sw_connector *c)
{
	conn_qp_disconnected(c, true);
	conn_set_state(c, SW_CONN_CLOSED);
	ndk_req_complete(&c->conn.disconnect_req, STATUS_IO_TIMEOUT);
}
