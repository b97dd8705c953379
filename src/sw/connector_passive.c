/* SPDX-License-Identifier: MIT */
/*
 * The passive side of the handshake. The listener reads the MPA Request
 * and creates the connector (sw_connector_new_passive) for its
 * ConnectEvent; NdkAccept(Ex) sends the Reply and waits for the
 * initiator's RTR (P2P) or, without P2P, for the Reply to go out and a
 * short grace; NdkReject refuses with an MPA Reply R=1.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>
#include "sw/connector.h"
#include "sw/connector_int.h"
#include "sw/backlog.h"
#include "core/log.h"
#include "front/adapter.h"
#include "front/endpoint.h"
#include "iwarp/ddp.h"
#include "iwarp/rtr.h"
#include "sw/qp.h"

/* Refuses a request with an MPA Reply R=1 and ends the connection. */
static void conn_send_reject(struct sw_connector *c, const void *pd,
			     uint16_t pd_len)
{
	struct mpa_rr rr = {
		.type = MPA_RR_REPLY,
		.rev = c->peer_rev == MPA_REV_1 ? MPA_REV_1 : MPA_REV_2,
		.flags = (c->peer_enhanced ? MPA_FLAG_ENHANCED : 0) |
			 (c->crc ? MPA_FLAG_CRC : 0),
		.p2p = c->p2p,
		.ird = (uint16_t)c->conn.eff_ird,
		.ord = (uint16_t)c->conn.eff_ord,
		.pd = pd,
		.pd_len = pd_len,
	};
	int len = mpa_reject_encode(&rr, c->tx, sizeof(c->tx));

	if (len > 0)
		(void)conn_send(c, (size_t)len); /* best effort, then FIN */
	if (c->fd >= 0)
		shutdown(c->fd, SHUT_WR);
}

/* What the Request says, before NdkAccept chooses (c->conn.lock held). */
static void conn_take_request(struct sw_connector *c, const struct mpa_rr *rr)
{
	const NDK_ADAPTER_INFO *info = &c->conn.obj.adapter->info;
	struct mpa_read_limits max = { info->MaxInboundReadLimit,
				       info->MaxOutboundReadLimit };
	struct mpa_read_limits eff;

	c->peer_rev = rr->rev;
	c->peer_enhanced = mpa_rr_enhanced(rr);
	c->p2p = c->peer_enhanced && rr->p2p;
	c->rtr = c->p2p ? rr->rtr : MPA_RTR_NONE;
	c->crc = cm_crc_mode() == CRC_REQUIRED || (rr->flags & MPA_FLAG_CRC);
	c->large_fpdu = cm_large_fpdu() && (rr->flags & MPA_FLAG_LARGE_FPDU);
	/* An MPA v1 peer sends no IRD/ORD: it does not limit ours. */
	c->peer_limits.ird = c->peer_enhanced ? rr->ird : 1;
	c->peer_limits.ord = c->peer_enhanced ? rr->ord : 1;
	/* Before Accept, the limits are the peer's, capped to the adapter's
	 * (NDK_FN_GET_CONNECTION_DATA). */
	eff = mpa_negotiate_ird_ord(max, max, c->peer_limits);
	ndk_conn_set_peer(&c->conn, rr->pd, rr->pd_len, eff.ird, eff.ord);
}

int sw_connector_new_passive(const struct sw_passive_request *r,
			     NDK_CONNECTOR **out)
{
	struct ndk_adapter *ad = r->adapter;
	struct ndk_obj *antes[] = { &ad->obj, r->listener };
	struct sw_connector *c = conn_alloc();
	socklen_t len;

	if (!c) {
		close(r->fd);
		if (r->slot)
			sw_backlog_put(r->slot);
		return -ENOMEM;
	}
	/* Before setup, so that a failed setup closes the fd (destroy). */
	c->conn.passive = true;
	c->fd = r->fd;
	len = sizeof(c->conn.local);
	getsockname(c->fd, (struct sockaddr *)&c->conn.local, &len);
	len = sizeof(c->conn.peer);
	getpeername(c->fd, (struct sockaddr *)&c->conn.peer, &len);
	if (conn_obj_setup(c, ad, antes, 2)) {
		if (r->slot)
			sw_backlog_put(r->slot);
		return -ESHUTDOWN;
	}
	ndk_lock(&c->conn.lock);
	/* An accepted connector holds the listener's endpoint (NDKPI
	 * Listeners, Connectors, and Endpoints). */
	c->conn.ep = r->ep;
	if (c->conn.ep)
		ndk_endpoint_get(c->conn.ep);
	conn_take_request(c, r->req);
	if ((r->req->flags & MPA_FLAG_MARKERS) || !r->slot) {
		/*
		 * Markers are refused with R=1 and no private data, as siw
		 * does; so is a request the listener does not admit (paused,
		 * closing, backlog full: as if nobody listened,
		 * NDK_FN_CONTROL_CONNECT_EVENTS).
		 */
		if (r->req->flags & MPA_FLAG_MARKERS)
			ndk_info("connector %p: request asks for markers",
				 (void *)c);
		conn_send_reject(c, NULL, 0);
		ndk_unlock(&c->conn.lock);
		if (r->slot)
			sw_backlog_put(r->slot);
		ndk_obj_close_internal(&c->conn.obj);
		return -ECONNREFUSED;
	}
	c->backlog = r->slot;
	conn_set_state(c, SW_CONN_REQUESTED);
	/* Only to notice the peer leaving. */
	if (conn_watch(c, EPOLLIN)) {
		conn_abandon(c, STATUS_CONNECTION_ABORTED);
		ndk_unlock(&c->conn.lock);
		ndk_obj_close_internal(&c->conn.obj);
		return -ENOMEM;
	}
	/* Busy until the listener has raised its ConnectEvent. */
	ndk_obj_hold(&c->conn.obj);
	ndk_unlock(&c->conn.lock);
	*out = &c->conn.obj.pub.connector;
	return 0;
}

void sw_connector_handed_over(NDK_CONNECTOR *conn, bool delivered)
{
	struct sw_connector *c = to_sw_connector(conn);

	if (!delivered) {
		/* The listener is closing: as if it were not there. */
		ndk_lock(&c->conn.lock);
		if (c->state == SW_CONN_REQUESTED)
			conn_send_reject(c, NULL, 0);
		if (!conn_state_ended(c->state))
			conn_abandon(c, STATUS_CONNECTION_ABORTED);
		ndk_unlock(&c->conn.lock);
		if (ndk_obj_is_open(&c->conn.obj))
			ndk_obj_close_internal(&c->conn.obj);
	}
	ndk_obj_release(&c->conn.obj);
}

/* The handshake of the passive side is over: hand the stream over. */
static void conn_accept_established(struct sw_connector *c)
{
	conn_stop_timer(c);
	if (conn_attach_dp(c)) {
		conn_accept_failed(c, STATUS_CONNECTION_ABORTED);
		return;
	}
	conn_set_state(c, SW_CONN_ESTABLISHED);
	ndk_adapter_count(c->conn.obj.adapter, NDK_CTR(Accept), 1);
	ndk_req_complete(&c->conn.accept_req, STATUS_SUCCESS);
}

/*
 * Non-P2P (an MPA v1 initiator, or siw without peer_to_peer): the
 * connection is up once our Reply is out and either the initiator's first
 * FPDU came or NDK_ACCEPT_GRACE_MS passed. RFC 5044 would have us wait for
 * that FPDU, but such peers (siw) send nothing until the server speaks in
 * protocols where it speaks first (ucmatose), so waiting would time out.
 * Not waiting at all puts our first FPDU in the Reply's segment, and siw
 * drops a connection whose Reply has bytes behind it
 * (tests/interop/README.md). What the initiator sent is the data path's to
 * read. SENDING_REPLY, engine thread, c->conn.lock held.
 */
void conn_reply_out(struct sw_connector *c)
{
	int peek = conn_peek(c);
	uint64_t ms;

	if (peek < 0) {
		conn_accept_failed(c, STATUS_CONNECTION_ABORTED);
		return;
	}
	if (c->tx_len)
		return; /* the rest of the Reply goes first */
	ms = sw_accept_grace_ms();
	if (ms && peek == 0) {
		conn_set_state(c, SW_CONN_ACCEPT_GRACE);
		conn_watch(c, EPOLLIN);
		conn_arm_timer(c, CONN_TIMER_ACCEPT_GRACE, ms);
		return;
	}
	conn_accept_established(c);
}

/* ACCEPT_GRACE: the initiator's first FPDU ends the wait early. */
void conn_grace_io(struct sw_connector *c)
{
	int peek = conn_peek(c);

	if (peek < 0)
		conn_accept_failed(c, STATUS_CONNECTION_ABORTED);
	else if (peek > 0)
		conn_accept_established(c);
	/* else a spurious wake-up: keep waiting */
}

/* ACCEPT_GRACE is over and the initiator stayed silent: go ahead. */
void conn_grace_over(struct sw_connector *c)
{
	if (conn_peer_gone(c))
		conn_accept_failed(c, STATUS_CONNECTION_ABORTED);
	else
		conn_accept_established(c);
}

/* AWAIT_RTR: the first FPDU after our Reply must be the RTR (RFC 6581 3). */
void conn_read_rtr(struct sw_connector *c)
{
	struct rtr_in in;
	int n, ret;

	/* Never past the RTR: what follows it is the data path's. */
	while ((n = rtr_parse(c->rx.buf, c->rx.len, c->crc, &in)) == -EAGAIN) {
		ret = sw_mpa_rx_fill(&c->rx, c->fd,
				     rtr_want(c->rx.buf, c->rx.len),
				     c->rx.len >= MPA_FPDU_HDR_LEN);
		if (ret == 0)
			return;
		if (ret < 0) {
			/* The initiator rejected or went away: NdkAccept
			 * fails with STATUS_CONNECTION_ABORTED. */
			conn_accept_failed(c, STATUS_CONNECTION_ABORTED);
			return;
		}
	}
	if (n < 0 || (size_t)n != c->rx.len || in.type != c->rtr) {
		if (n == -EBADMSG || n == -EMSGSIZE)
			ndk_info("connector %p: bad RTR: %s", (void *)c,
				 n == -EBADMSG ? "CRC error" : "too long");
		else
			ndk_info("connector %p: unexpected RTR (opcode %u)",
				 (void *)c, in.hdr.opcode);
		conn_accept_failed(c, STATUS_CONNECTION_ABORTED);
		return;
	}
	c->rx.len = 0;
	/* A Read RTR is answered (-EAGAIN: the rest goes on EPOLLOUT). */
	n = rtr_answer_build(&in, c->crc, c->tx, sizeof(c->tx));
	if (n > 0)
		n = conn_send(c, (size_t)n);
	if (n < 0 && n != -EAGAIN) {
		conn_accept_failed(c, STATUS_CONNECTION_ABORTED);
		return;
	}
	conn_accept_established(c);
}

/* NdkAccept(Ex), checked by front/connector.c; c->lock held. */
NTSTATUS sw_conn_accept(struct ndk_conn *base, const struct ndk_conn_accept *a)
{
	struct sw_connector *c = container_of(base, struct sw_connector, conn);
	struct ndk_adapter *ad = c->conn.obj.adapter;
	struct mpa_read_limits max = { ad->info.MaxInboundReadLimit,
				       ad->info.MaxOutboundReadLimit };
	struct mpa_read_limits eff;
	struct sw_qp *qp;
	struct mpa_rr rr;
	NTSTATUS status;
	int len, ret;

	qp = container_of(a->qp, struct sw_qp, obj);
	if (conn_abandon_if_peer_acted(c)) {
		status = STATUS_CONNECTION_ABORTED;
		goto out;
	}
	status = conn_bind_qp(c, qp);
	if (status)
		goto out;
	c->req = conn_capped_limits(ad, a->ird, a->ord);
	eff = mpa_negotiate_ird_ord(c->req, max, c->peer_limits);
	c->conn.eff_ird = eff.ird;
	c->conn.eff_ord = eff.ord;
	if (c->p2p) {
		unsigned int chosen = mpa_rtr_choose(c->rtr, MPA_RTR_ALL);

		/* Nothing offered: a Write RTR, as siw does. */
		c->rtr = chosen ? chosen : MPA_RTR_WRITE;
	}
	memset(&rr, 0, sizeof(rr));
	rr.type = MPA_RR_REPLY;
	rr.rev = c->peer_enhanced ? MPA_REV_2 : c->peer_rev;
	rr.flags = (c->peer_enhanced ? MPA_FLAG_ENHANCED : 0) |
		   (c->crc ? MPA_FLAG_CRC : 0) |
		   (c->large_fpdu ? MPA_FLAG_LARGE_FPDU : 0);
	rr.p2p = c->p2p;
	rr.rtr = (uint8_t)(c->p2p ? c->rtr : 0);
	rr.ird = (uint16_t)c->conn.eff_ird;
	rr.ord = (uint16_t)c->conn.eff_ord;
	rr.pd = a->pd;
	rr.pd_len = (uint16_t)a->pd_len;
	len = mpa_rr_encode(&rr, c->tx, sizeof(c->tx));
	ret = len > 0 ? conn_send(c, (size_t)len) : len;
	if (ret && ret != -EAGAIN) {
		conn_abandon(c, STATUS_CONNECTION_ABORTED);
		status = STATUS_CONNECTION_ABORTED;
		goto out;
	}
	ndk_req_pend(&c->conn.accept_req, &c->conn.obj, a->cb, a->ctx);
	conn_set_state(c, c->p2p ? SW_CONN_AWAIT_RTR : SW_CONN_SENDING_REPLY);
	conn_arm_timer(c, CONN_TIMER_ACCEPT, ndk_cm_timeout_ms());
	/* Non-P2P: writable means the Reply is out, and that is the end of
	 * the handshake (conn_reply_out). */
	conn_watch(c, EPOLLIN | (ret == -EAGAIN || !c->p2p ? EPOLLOUT : 0));
	status = STATUS_PENDING;
out:
	return status;
}

/* NdkReject, checked by front/connector.c; c->lock held. */
NTSTATUS sw_conn_reject(struct ndk_conn *base, const void *pd, ULONG pd_len)
{
	struct sw_connector *c = container_of(base, struct sw_connector, conn);

	if (c->state == SW_CONN_REQUESTED) {
		if (conn_abandon_if_peer_acted(c))
			return STATUS_CONNECTION_ABORTED;
		conn_send_reject(c, pd, (uint16_t)pd_len);
	}
	/* The active side after Connect completed: closing TCP makes the
	 * peer's Accept fail with CONNECTION_ABORTED (docs/design.md,
	 * connection management). */
	conn_abandon(c, STATUS_CONNECTION_INVALID);
	return STATUS_SUCCESS;
}
