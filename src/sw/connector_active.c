/* SPDX-License-Identifier: MIT */
/*
 * The active side of the handshake: NdkConnect and
 * NdkConnectWithSharedEndpoint send the MPA Request (RFC 6581: Rev 2,
 * P2P, both RTRs offered), the Reply completes the Connect, and
 * NdkCompleteConnect(Ex) sends the RTR and establishes the connection.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>
#include "sw/connector.h"
#include "sw/connector_int.h"
#include "front/shared_endpoint.h"
#include "sw/sockopt.h"
#include "core/log.h"
#include "core/status.h"
#include "front/adapter.h"
#include "front/address.h"
#include "front/endpoint.h"
#include "iwarp/rtr.h"
#include "sw/qp.h"

/* Builds the Request into tx; it is sent once TCP is up. */
static int conn_build_request(struct sw_connector *c, const void *pd,
			      uint16_t pd_len)
{
	struct mpa_rr rr = {
		.type = MPA_RR_REQUEST,
		.rev = MPA_REV_2,
		.flags = MPA_FLAG_ENHANCED | (c->crc ? MPA_FLAG_CRC : 0) |
			 (c->large_fpdu ? MPA_FLAG_LARGE_FPDU : 0),
		.p2p = true,
		/* We can send either RTR; the responder picks (RFC 6581). */
		.rtr = MPA_RTR_WRITE | MPA_RTR_READ,
		.ird = (uint16_t)c->req.ird,
		.ord = (uint16_t)c->req.ord,
		.pd = pd,
		.pd_len = pd_len,
	};
	int len = mpa_rr_encode(&rr, c->tx, sizeof(c->tx));

	if (len < 0)
		return len;
	c->rtr = rr.rtr;
	c->tx_len = (size_t)len;
	c->tx_off = 0;
	return 0;
}

/*
 * A non-blocking connect() that reported EINPROGRESS may be complete by
 * the time it returns (loopback, a local peer): then the Request goes out
 * now, not one engine wake-up later.
 */
static bool conn_tcp_up_now(struct sw_connector *c)
{
	struct pollfd p = { .fd = c->fd, .events = POLLOUT };
	socklen_t len = sizeof(int);
	int err = 0;

	return poll(&p, 1, 0) == 1 && p.revents == POLLOUT &&
	       !getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) && !err;
}

/* The TCP connection is up: send the MPA Request kept in tx. */
static void conn_tcp_connected(struct sw_connector *c)
{
	socklen_t len = sizeof(c->conn.local);
	int ret;

	getsockname(c->fd, (struct sockaddr *)&c->conn.local, &len);
	conn_set_state(c, SW_CONN_AWAIT_REPLY);
	ret = conn_flush_tx(c);
	if (ret && ret != -EAGAIN) {
		conn_connect_failed(c, STATUS_CONNECTION_REFUSED);
		return;
	}
	conn_watch(c, EPOLLIN | (ret == -EAGAIN ? EPOLLOUT : 0));
}

/* TCP_CONNECTING: the non-blocking connect() finished, or failed. */
void conn_tcp_connect_io(struct sw_connector *c, uint32_t events)
{
	socklen_t len = sizeof(int);
	int err;

	if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len))
		err = errno;
	if (err)
		conn_connect_failed(
			c, ndk_status_from_errno(-err, NDK_SITE_CONNECT));
	else if (events & (EPOLLOUT | EPOLLERR | EPOLLHUP))
		conn_tcp_connected(c);
}

/* The Reply is complete in c->rx (RFC 5044 7.1, RFC 6581). */
static void conn_got_reply(struct sw_connector *c, const struct mpa_rr *rr)
{
	const NDK_ADAPTER_INFO *info = &c->conn.obj.adapter->info;
	struct mpa_read_limits max = { info->MaxInboundReadLimit,
				       info->MaxOutboundReadLimit };
	/* An MPA v1 peer says nothing: assume 1/1, as siw runs (RFC 5044
	 * leaves IRD/ORD to the ULP). */
	struct mpa_read_limits peer = { 1, 1 };
	int rtr;

	struct mpa_read_limits eff;

	conn_stop_timer(c);
	c->peer_rev = rr->rev;
	c->peer_enhanced = mpa_rr_enhanced(rr);
	if (c->peer_enhanced) {
		peer.ird = rr->ird;
		peer.ord = rr->ord;
	}
	c->peer_limits = peer;
	eff = mpa_negotiate_ird_ord(c->req, max, peer);
	ndk_conn_set_peer(&c->conn, rr->pd, rr->pd_len, eff.ird, eff.ord);
	c->rx.len = 0;

	if (mpa_rr_rejected(rr)) {
		/* The reject's private data stays readable through
		 * NdkGetConnectionData (NDK_FN_GET_CONNECTION_DATA). */
		conn_connect_failed(c, STATUS_CONNECTION_REFUSED);
		return;
	}
	if (rr->flags & MPA_FLAG_MARKERS) {
		/* The responder wants markers; we never insert them. */
		ndk_info("connector %p: peer asks for MPA markers", (void *)c);
		conn_connect_failed(c, STATUS_CONNECTION_REFUSED);
		return;
	}
	c->crc = c->crc || (rr->flags & MPA_FLAG_CRC);
	c->large_fpdu = c->large_fpdu && (rr->flags & MPA_FLAG_LARGE_FPDU);
	c->p2p = c->peer_enhanced && rr->p2p;
	if (c->p2p) {
		rtr = mpa_rtr_check_reply(c->rtr, rr->rtr);
		if (rtr < 0) {
			/* RFC 6581: no matching RTR option. */
			ndk_info(
				"connector %p: reply chose RTR %#x, offered %#x",
				(void *)c, rr->rtr, c->rtr);
			conn_connect_failed(c, STATUS_CONNECTION_REFUSED);
			return;
		}
		c->rtr = (unsigned int)rtr;
		/* A Read RTR takes an ORQ slot, as in siw. */
		if (c->rtr == MPA_RTR_READ && c->conn.eff_ord == 0)
			c->conn.eff_ord = 1;
	} else {
		c->rtr = MPA_RTR_NONE;
	}
	conn_set_state(c, SW_CONN_REPLIED);
	/* Nothing may arrive now but an end of stream (RFC 5044 1.1). */
	conn_watch(c, EPOLLIN);
	/*
	 * Twice the acceptor's RTR timeout: against a libndk peer its Accept
	 * times out first (IO_TIMEOUT there, CONNECTION_ABORTED here); ours
	 * only ends an attempt whose peer never gives up.
	 */
	conn_arm_timer(c, CONN_TIMER_COMPLETE_CONNECT, 2 * ndk_cm_timeout_ms());
	ndk_req_complete(&c->conn.connect_req, STATUS_SUCCESS);
}

void conn_read_reply(struct sw_connector *c)
{
	struct mpa_rr rr;
	int ret = sw_mpa_rx_frame(&c->rx, c->fd, MPA_RR_REPLY, &rr, "connector",
				  c);

	if (ret > 0)
		conn_got_reply(c, &rr);
	else if (ret < 0)
		/* Malformed, or closed before answering: refused. */
		conn_connect_failed(c, STATUS_CONNECTION_REFUSED);
}

/*
 * Common tail of NdkConnect and NdkConnectWithSharedEndpoint: c->conn.lock
 * held, c->fd bound, c->conn.ep referenced, c->conn.local set. On an inline failure
 * the connector is left IDLE, owning nothing, so it may try again.
 */
static NTSTATUS conn_start(struct sw_connector *c, struct ndk_endpoint *ep,
			   int fd, struct sw_qp *qp, const struct sockaddr *dst,
			   ULONG ird, ULONG ord, const void *pd, ULONG pd_len,
			   NDK_FN_REQUEST_COMPLETION cb, PVOID ctx)
{
	struct ndk_adapter *ad = c->conn.obj.adapter;
	NTSTATUS status;
	int ret;

	c->fd = fd;
	status = ndk_conn_use_endpoint(&c->conn, ep, dst);
	if (status)
		goto fail;
	status = conn_bind_qp(c, qp);
	if (status)
		goto fail;
	c->req = conn_capped_limits(ad, ird, ord);
	c->crc = cm_crc_mode() != CRC_NEVER;
	c->large_fpdu = cm_large_fpdu();
	ret = conn_build_request(c, pd, (uint16_t)pd_len);
	if (ret) {
		status = ndk_status_from_errno(ret, NDK_SITE_GENERIC);
		goto fail_qp;
	}
	sw_sock_set_conn_options(c->fd);

	ndk_req_pend(&c->conn.connect_req, &c->conn.obj, cb, ctx);
	conn_set_state(c, SW_CONN_TCP_CONNECTING);
	conn_arm_timer(c, CONN_TIMER_CONNECT, ndk_cm_timeout_ms());
	ret = connect(c->fd, dst, ndk_addr_len(dst));
	if (ret == 0 || (errno == EINPROGRESS && conn_tcp_up_now(c))) {
		conn_tcp_connected(c);
	} else if (errno == EINPROGRESS) {
		conn_watch(c, EPOLLOUT);
	} else {
		/* Unreachable, refused...: inline (NDK_FN_CONNECT). */
		status = ndk_status_from_errno(-errno, NDK_SITE_CONNECT);
		conn_stop_timer(c);
		ndk_req_withdraw(&c->conn.connect_req);
		ndk_adapter_count(ad, NDK_CTR(ConnectFailure), 1);
		conn_set_state(c, SW_CONN_IDLE);
		goto fail_qp;
	}
	return STATUS_PENDING;
fail_qp:
	conn_unbind_qp(c);
fail:
	ndk_conn_release_endpoint(&c->conn);
	close(c->fd);
	c->fd = -1;
	c->tx_len = c->tx_off = 0;
	return status;
}

/* NdkConnect(WithSharedEndpoint), checked by front/connector.c;
 * c->lock held. */
NTSTATUS sw_conn_connect(struct ndk_conn *base,
			 const struct ndk_conn_connect *a)
{
	struct sw_connector *c = container_of(base, struct sw_connector, conn);
	struct ndk_endpoint *ep;
	int fd;

	if (!a->sep) {
		/* The connector's own endpoint: one reference (NDKPI
		 * Listeners, Connectors, and Endpoints). connect() says
		 * EADDRNOTAVAIL for a picked port the kernel still has
		 * towards dst: the table rotates, so the next pick is
		 * another port (ndk_conn_port_picked). */
		int tries = ndk_conn_port_picked(a) ? NDK_CONN_PORT_TRIES : 1;
		NTSTATUS status = STATUS_ADDRESS_ALREADY_EXISTS;

		for (int i = 0;
		     i < tries && status == STATUS_ADDRESS_ALREADY_EXISTS;
		     i++) {
			status = ndk_local_endpoint_acquire(
				c->conn.obj.adapter, a->src, a->src_len,
				NDK_ENDPOINT_CONNECTOR, &ep);
			if (status)
				return status;
			fd = ndk_endpoint_take_fd(ep);
			status = conn_start(
				c, ep, fd,
				container_of(a->qp, struct sw_qp, obj), a->dst,
				a->ird, a->ord, a->pd, a->pd_len, a->cb,
				a->ctx);
		}
		return status;
	} else {
		/* Same local address:port for every connector of the
		 * endpoint. */
		fd = ndk_endpoint_bind_shared(a->sep->ep);
		if (fd < 0)
			return ndk_status_from_errno(fd, NDK_SITE_BIND);
		if (!c->sep) {
			/* +1 on the shared endpoint per connector. */
			if (ndk_obj_link(&c->conn.obj, &a->sep->obj)) {
				close(fd);
				return STATUS_INVALID_PARAMETER;
			}
			c->sep = a->sep;
		}
		ep = a->sep->ep;
		ndk_endpoint_get(ep);
	}
	return conn_start(c, ep, fd, container_of(a->qp, struct sw_qp, obj),
			  a->dst, a->ird, a->ord, a->pd, a->pd_len, a->cb,
			  a->ctx);
}

/* NdkCompleteConnect(Ex), checked by front/connector.c; c->lock held. */
NTSTATUS sw_conn_complete_connect(struct ndk_conn *base)
{
	struct sw_connector *c = container_of(base, struct sw_connector, conn);
	struct ndk_adapter *ad = c->conn.obj.adapter;
	NTSTATUS status = STATUS_SUCCESS;
	uint64_t nudge_ms = 0;
	int len, ret;

	if (conn_abandon_if_peer_acted(c)) {
		status = STATUS_CONNECTION_ABORTED;
		goto out;
	}
	conn_stop_timer(c);
	if (c->p2p) {
		/* The RTR tells the responder it may send (RFC 6581 3). */
		len = rtr_build((enum mpa_rtr)c->rtr, c->crc, c->tx,
				sizeof(c->tx));
		ret = len > 0 ? conn_send(c, (size_t)len) : len;
		if (ret && ret != -EAGAIN) {
			conn_abandon(c, STATUS_CONNECTION_ABORTED);
			status = STATUS_CONNECTION_ABORTED;
			goto out;
		}
		if (c->rtr == MPA_RTR_WRITE)
			nudge_ms = sw_rtr_nudge_ms();
	}
	if (conn_attach_dp(c)) {
		conn_abandon(c, STATUS_CONNECTION_ABORTED);
		status = STATUS_CONNECTION_ABORTED;
		goto out;
	}
	conn_set_state(c, nudge_ms ? SW_CONN_RTR_SENT : SW_CONN_ESTABLISHED);
	ndk_adapter_count(ad, NDK_CTR(Connect), 1);
	if (nudge_ms)
		conn_arm_timer(c, CONN_TIMER_RTR_NUDGE, nudge_ms);
out:
	return status;
}
