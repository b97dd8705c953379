/* SPDX-License-Identifier: MIT */
/*
 * NDK connector: connection management over MPA v2 (RFC 5044 + RFC 6581)
 * as DESIGN.md section 3 maps it, with every status code of the seeds
 * (NdkConnect, NdkConnectWithSharedEndpoint, NdkGetConnectionData,
 * NdkAcceptEx) and of reference/ndkpi.md 6.2-6.6.
 */
#include <assert.h>
#include <errno.h>
#include <poll.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>
#include "front/address.h"
#include "cm/connector.h"
#include "front/endpoint.h"
#include "cm/listener.h"
#include "cm/shared_endpoint.h"
#include "cm/tcp_stats.h"
#include "front/adapter.h"
#include "core/config.h"
#include "core/log.h"
#include "front/provider.h"
#include "core/status.h"
#include "iwarp/ddp.h"
#include "qp/dp.h"
#include "qp/qp.h"

static const char *const conn_state_names[NDK_CONN_STATE_COUNT] = {
	[NDK_CONN_IDLE] = "IDLE",
	[NDK_CONN_TCP_CONNECTING] = "TCP_CONNECTING",
	[NDK_CONN_AWAIT_REPLY] = "AWAIT_REPLY",
	[NDK_CONN_REPLIED] = "REPLIED",
	[NDK_CONN_RTR_SENT] = "RTR_SENT",
	[NDK_CONN_AWAIT_REQUEST] = "AWAIT_REQUEST",
	[NDK_CONN_REQUESTED] = "REQUESTED",
	[NDK_CONN_AWAIT_RTR] = "AWAIT_RTR",
	[NDK_CONN_SENDING_REPLY] = "SENDING_REPLY",
	[NDK_CONN_ACCEPT_GRACE] = "ACCEPT_GRACE",
	[NDK_CONN_ESTABLISHED] = "ESTABLISHED",
	[NDK_CONN_PEER_CLOSED] = "PEER_CLOSED",
	[NDK_CONN_DISCONNECTING] = "DISCONNECTING",
	[NDK_CONN_FAILED] = "FAILED",
	[NDK_CONN_ABANDONED] = "ABANDONED",
	[NDK_CONN_CLOSED] = "CLOSED",
};

const char *ndk_conn_state_name(enum ndk_conn_state state)
{
	if ((unsigned int)state >= NDK_CONN_STATE_COUNT)
		return "?";
	return conn_state_names[state];
}

/*
 * The legal transitions: conn_transition_ok[from][to]. Every state but
 * IDLE and the three ends may be closed (NdkCloseConnector); the ends
 * are final.
 */
static const bool conn_transition_ok[NDK_CONN_STATE_COUNT]
				    [NDK_CONN_STATE_COUNT] = {
	[NDK_CONN_IDLE] = {
		[NDK_CONN_TCP_CONNECTING] = true,
		[NDK_CONN_AWAIT_REQUEST] = true,
	},
	[NDK_CONN_TCP_CONNECTING] = {
		[NDK_CONN_IDLE] = true, /* connect() failed inline */
		[NDK_CONN_AWAIT_REPLY] = true,
		[NDK_CONN_FAILED] = true,
		[NDK_CONN_CLOSED] = true,
	},
	[NDK_CONN_AWAIT_REPLY] = {
		[NDK_CONN_REPLIED] = true,
		[NDK_CONN_FAILED] = true,
		[NDK_CONN_CLOSED] = true,
	},
	[NDK_CONN_REPLIED] = {
		[NDK_CONN_ESTABLISHED] = true,
		[NDK_CONN_RTR_SENT] = true,
		[NDK_CONN_ABANDONED] = true,
		[NDK_CONN_CLOSED] = true,
	},
	[NDK_CONN_RTR_SENT] = {
		[NDK_CONN_ESTABLISHED] = true, /* nudged, or no need */
		[NDK_CONN_PEER_CLOSED] = true,
		[NDK_CONN_DISCONNECTING] = true,
		[NDK_CONN_CLOSED] = true,
	},
	[NDK_CONN_AWAIT_REQUEST] = {
		[NDK_CONN_REQUESTED] = true,
		[NDK_CONN_ABANDONED] = true,
		[NDK_CONN_CLOSED] = true,
	},
	[NDK_CONN_REQUESTED] = {
		[NDK_CONN_AWAIT_RTR] = true,
		[NDK_CONN_SENDING_REPLY] = true,
		[NDK_CONN_ABANDONED] = true,
		[NDK_CONN_CLOSED] = true,
	},
	[NDK_CONN_AWAIT_RTR] = {
		[NDK_CONN_ESTABLISHED] = true,
		[NDK_CONN_FAILED] = true,
		[NDK_CONN_CLOSED] = true,
	},
	[NDK_CONN_SENDING_REPLY] = {
		[NDK_CONN_ACCEPT_GRACE] = true,
		[NDK_CONN_ESTABLISHED] = true, /* an FPDU came, or no grace */
		[NDK_CONN_FAILED] = true,
		[NDK_CONN_CLOSED] = true,
	},
	[NDK_CONN_ACCEPT_GRACE] = {
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

/* The connection is up: the data path owns the stream. */
static bool conn_state_up(enum ndk_conn_state s)
{
	return s == NDK_CONN_ESTABLISHED || s == NDK_CONN_RTR_SENT;
}

/* No TCP connection any more, for good. */
static bool conn_state_ended(enum ndk_conn_state s)
{
	return s == NDK_CONN_FAILED || s == NDK_CONN_ABANDONED ||
	       s == NDK_CONN_CLOSED;
}

uint64_t ndk_cm_timeout_ms(void)
{
	/* Linux siw waits 10 s for the MPA Reply (MPA_TIMEOUT). */
	return ndk_config_u64("NDK_CM_TIMEOUT_MS", 10000, 1, 3600000);
}

uint64_t ndk_accept_grace_ms(void)
{
	return ndk_config_u64("NDK_ACCEPT_GRACE_MS", 50, 0, 60000);
}

uint64_t ndk_rtr_nudge_ms(void)
{
	/* tests/interop/README.md, bug 1: siw's window is a few ms wide
	 * under TCG; 50 ms is well past it and short for a waiting peer. */
	return ndk_config_u64("NDK_RTR_NUDGE_MS", 50, 0, 60000);
}

/*
 * NDK_MPA_CRC: CRC is used in both directions if either side asks
 * (RFC 5044 7.1). "1" (default): we ask as initiator and follow the
 * initiator as responder, so a peer that refuses unrequested CRC (siw's
 * mpa_crc_strict) still connects; "required": we always ask; "0": never.
 */
enum cm_crc_mode { CRC_NEVER, CRC_INITIATOR, CRC_REQUIRED };

static enum cm_crc_mode cm_crc_mode(void)
{
	const char *v = getenv("NDK_MPA_CRC");

	if (v && !strcmp(v, "required"))
		return CRC_REQUIRED;
	return ndk_config_bool("NDK_MPA_CRC", true) ? CRC_INITIATOR : CRC_NEVER;
}

/* OID_NDK_CONNECTIONS lists a connection from its establishment until the
 * consumer disconnects or closes it (a peer's disconnect leaves it listed
 * until then, as its QP and requests are still there). */
static bool conn_state_listed(enum ndk_conn_state s)
{
	return conn_state_up(s) || s == NDK_CONN_PEER_CLOSED;
}

static void conn_publish(struct ndk_connector *c)
{
	struct ndk_reg_entry e = {
		.kind = NDK_REG_CONNECTION,
		.ifindex = c->obj.adapter->ifindex,
		.netns = c->obj.adapter->netns,
	};

	ndk_reg_sockaddr(&e.local, (const struct sockaddr *)&c->local);
	ndk_reg_sockaddr(&e.remote, (const struct sockaddr *)&c->peer);
	c->reg_slot = ndk_reg_publish(&e);
}

static bool on_engine(struct ndk_connector *c)
{
	return ndk_engine_on_thread(&c->obj.adapter->engine);
}

static struct ndk_engine *conn_engine(struct ndk_connector *c)
{
	return &c->obj.adapter->engine;
}

#define CONN_STATE_BIT(s) (1u << (s))

/*
 * The states each timer purpose may run in: a timer never outlives its
 * phase, conn_set_state() stops it when the connector leaves them.
 */
static const uint32_t conn_timer_states[CONN_TIMER_PURPOSE_COUNT] = {
	[CONN_TIMER_CONNECT] = CONN_STATE_BIT(NDK_CONN_TCP_CONNECTING) |
			       CONN_STATE_BIT(NDK_CONN_AWAIT_REPLY),
	[CONN_TIMER_COMPLETE_CONNECT] = CONN_STATE_BIT(NDK_CONN_REPLIED),
	[CONN_TIMER_REQUEST] = CONN_STATE_BIT(NDK_CONN_AWAIT_REQUEST),
	[CONN_TIMER_ACCEPT] = CONN_STATE_BIT(NDK_CONN_AWAIT_RTR) |
			      CONN_STATE_BIT(NDK_CONN_SENDING_REPLY),
	[CONN_TIMER_ACCEPT_GRACE] = CONN_STATE_BIT(NDK_CONN_ACCEPT_GRACE),
	[CONN_TIMER_RTR_NUDGE] = CONN_STATE_BIT(NDK_CONN_RTR_SENT),
	[CONN_TIMER_DISCONNECT] = CONN_STATE_BIT(NDK_CONN_DISCONNECTING),
};

static const char *const conn_timer_names[CONN_TIMER_PURPOSE_COUNT] = {
	[CONN_TIMER_NONE] = "none",
	[CONN_TIMER_CONNECT] = "connect",
	[CONN_TIMER_COMPLETE_CONNECT] = "complete-connect",
	[CONN_TIMER_REQUEST] = "request",
	[CONN_TIMER_ACCEPT] = "accept",
	[CONN_TIMER_ACCEPT_GRACE] = "accept-grace",
	[CONN_TIMER_RTR_NUDGE] = "rtr-nudge",
	[CONN_TIMER_DISCONNECT] = "disconnect",
};

/* Arms the one timer for purpose, replacing any other; c->lock held. */
static void conn_arm_timer(struct ndk_connector *c,
			   enum conn_timer_purpose purpose, uint64_t ms)
{
	assert(conn_timer_states[purpose] & CONN_STATE_BIT(c->state));
	c->used = true;
	ndk_dbg("connector %p: %s timer %llu ms in %s", (void *)c,
		conn_timer_names[purpose], (unsigned long long)ms,
		ndk_conn_state_name(c->state));
	c->timer_purpose = purpose;
	c->timer_deadline_ns = ndk_now_ns() + ms * 1000000;
	ndk_timer_start(conn_engine(c), &c->timer, ms);
}

/*
 * Off the engine thread the timer function may already be waiting for
 * c->lock: with no purpose left it ignores that stale fire (and one whose
 * deadline a re-arm moved on).
 */
static void conn_stop_timer(struct ndk_connector *c)
{
	c->timer_purpose = CONN_TIMER_NONE;
	c->timer_deadline_ns = UINT64_MAX;
	ndk_timer_cancel(conn_engine(c), &c->timer);
}

/*
 * The one state setter; c->lock held. An illegal transition is a bug:
 * logged, then asserted. Leaving REQUESTED frees the request's slot in
 * the listener's backlog (NdkAccept, NdkReject, or its end).
 */
static void conn_set_state_at(struct ndk_connector *c, enum ndk_conn_state to,
			      const char *file, int line)
{
	enum ndk_conn_state from = c->state;
	bool was_listed = conn_state_listed(from);

	if ((unsigned int)to >= NDK_CONN_STATE_COUNT ||
	    !conn_transition_ok[from][to]) {
		ndk_err("connector %p: illegal transition %s -> %s (%s:%d)",
			(void *)c, ndk_conn_state_name(from),
			ndk_conn_state_name(to), file, line);
		assert(!"illegal connector state transition");
		return;
	}
	ndk_dbg("connector %p: %s -> %s (%s:%d)", (void *)c,
		ndk_conn_state_name(from), ndk_conn_state_name(to), file, line);
	c->state = to;
	if (c->timer_purpose != CONN_TIMER_NONE &&
	    !(conn_timer_states[c->timer_purpose] & CONN_STATE_BIT(to)))
		conn_stop_timer(c);
	if (!was_listed && conn_state_listed(to)) {
		conn_publish(c);
	} else if (was_listed && !conn_state_listed(to)) {
		ndk_reg_withdraw(c->reg_slot);
		c->reg_slot = -1;
	}
	if (from == NDK_CONN_REQUESTED)
		ndk_listener_request_done(c->listener);
}
#ifdef __FILE_NAME__
#define NDK_CM_FILE __FILE_NAME__
#else
#define NDK_CM_FILE __FILE__
#endif
#define conn_set_state(c, s) conn_set_state_at(c, s, NDK_CM_FILE, __LINE__)

/* ------------------------------------------------------------------ */
/* Socket plumbing                                                    */

static void conn_io_fn(struct ndk_io *io, uint32_t events);

/* Sets the epoll interest; c->lock held, any thread. */
static int conn_watch(struct ndk_connector *c, uint32_t events)
{
	int ret;

	if (c->fd < 0)
		return -EBADF;
	if (!c->io_added) {
		/* Written once, before the engine can see them. */
		c->io.fd = c->fd;
		c->io.fn = conn_io_fn;
		ret = ndk_engine_add_fd(conn_engine(c), &c->io, events);
		if (!ret)
			c->io_added = true;
		return ret;
	}
	return ndk_engine_mod_fd(conn_engine(c), &c->io, events);
}

/*
 * Stops every wake-up for the fd until it is closed. A zero interest mask
 * is not enough: epoll reports EPOLLHUP and EPOLLERR whatever the mask, so
 * a connection the peer reset would wake the engine in a loop for as long
 * as the consumer keeps its connector. Off the engine thread the mask is
 * cleared and the next wake-up (conn_io_fn) deregisters. c->lock held.
 */
static void conn_unwatch(struct ndk_connector *c)
{
	if (!c->io_added)
		return;
	if (!on_engine(c)) {
		ndk_engine_mod_fd(conn_engine(c), &c->io, 0);
		return;
	}
	ndk_engine_del_fd(conn_engine(c), &c->io);
	c->io_added = false;
}

static void conn_drop_work_fn(struct ndk_work *w);
static int conn_attach_dp(struct ndk_connector *c);
static void disc_work_fn(struct ndk_work *w);
static void event_work_fn(struct ndk_work *w);

/*
 * Hands the rest of the teardown to the engine thread and keeps the
 * connector busy until it has run: by then no handler or timer function
 * of this connector is running or can start (the engine runs them one at
 * a time). c->lock held, off the engine thread.
 */
static void conn_sync_with_engine(struct ndk_connector *c)
{
	/* No more wake-ups until the engine closes the fd. */
	conn_unwatch(c);
	ndk_obj_hold(&c->obj);
	if (!ndk_engine_post(conn_engine(c), &c->teardown_work))
		ndk_obj_release(&c->obj); /* already queued, with its hold */
}

/*
 * Ends the TCP connection. Deregistering from epoll must happen on the
 * engine thread (so no handler runs after it), so off the engine the fd is
 * handed over to a work item. c->lock held.
 */
static void conn_drop_socket(struct ndk_connector *c)
{
	if (c->fd < 0)
		return;
	if (on_engine(c)) {
		if (c->io_added)
			ndk_engine_del_fd(conn_engine(c), &c->io);
		close(c->fd);
		c->fd = -1;
		c->io_added = false;
		return;
	}
	conn_sync_with_engine(c);
}

static void conn_drop_work_fn(struct ndk_work *w)
{
	struct ndk_connector *c =
		container_of(w, struct ndk_connector, teardown_work);

	pthread_mutex_lock(&c->lock);
	ndk_timer_cancel(conn_engine(c), &c->timer);
	conn_drop_socket(c);
	pthread_mutex_unlock(&c->lock);
	ndk_obj_release(&c->obj);
}

/* Sends what is left of c->tx. 0 when all is out, -EAGAIN if the socket
 * is full (EPOLLOUT then finishes it), or a negative errno. */
static int conn_flush_tx(struct ndk_connector *c)
{
	while (c->tx_off < c->tx_len) {
		ssize_t n =
			send(c->fd, c->tx + c->tx_off, c->tx_len - c->tx_off,
			     MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN ? -EAGAIN : -errno;
		}
		c->tx_off += (size_t)n;
	}
	c->tx_off = c->tx_len = 0;
	return 0;
}

/* Queues a frame and starts sending it. */
static int conn_send(struct ndk_connector *c, size_t len)
{
	c->tx_len = len;
	c->tx_off = 0;
	return conn_flush_tx(c);
}

/*
 * Reads into c->rx until it holds want bytes (whole: never past them,
 * since bytes behind an RTR belong to the data path), or with one read of
 * up to want bytes (!whole: an MPA frame, behind which nothing may come
 * before we answer). Returns 1 when done, 0 if the socket has no more for
 * now, -EPIPE on end of stream, or a negative errno.
 */
static int conn_fill(struct ndk_connector *c, size_t want, bool whole)
{
	while (c->rx_len < want) {
		ssize_t n = recv(c->fd, c->rx + c->rx_len, want - c->rx_len,
				 MSG_DONTWAIT);

		if (n == 0)
			return -EPIPE;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN ? 0 : -errno;
		}
		c->rx_len += (size_t)n;
		if (!whole)
			break;
	}
	return 1;
}

/*
 * What a peek at the socket shows (nothing consumed): 0 nothing yet, 1 a
 * byte is queued, -1 the peer closed or reset the connection.
 */
static int conn_peek(struct ndk_connector *c)
{
	uint8_t b;
	ssize_t n;

	if (c->fd < 0)
		return -1;
	n = recv(c->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
	if (n > 0)
		return 1;
	return n == 0 || (errno != EAGAIN && errno != EINTR) ? -1 : 0;
}

/* True if the peer has closed or reset the connection. */
static bool conn_peer_gone(struct ndk_connector *c)
{
	return conn_peek(c) < 0;
}

/* True if a byte is queued (nothing consumed). */
/*
 * A non-blocking connect() that reported EINPROGRESS may be complete by
 * the time it returns (loopback, a local peer): then the Request goes out
 * now, not one engine wake-up later.
 */
static bool conn_tcp_up_now(struct ndk_connector *c)
{
	struct pollfd p = { .fd = c->fd, .events = POLLOUT };
	socklen_t len = sizeof(int);
	int err = 0;

	return poll(&p, 1, 0) == 1 && p.revents == POLLOUT &&
	       !getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) && !err;
}

/*
 * Between the handshake steps the peer must wait for our next one: the
 * initiator sends nothing between its Request and our Reply, the responder
 * nothing between its Reply and our RTR or first FPDU (RFC 5044 7.1,
 * iwarp.md 1.1). A byte, an end of stream or an error there all end the
 * attempt, as the engine does when it sees them first (conn_io_fn).
 */
static bool conn_peer_acted(struct ndk_connector *c)
{
	return conn_peek(c) != 0;
}

/* ------------------------------------------------------------------ */
/* Endings                                                            */

/* The QP's side of a connection that never got established. */
static void conn_qp_failed(struct ndk_connector *c)
{
	if (c->qp && ndk_qp_state(c->qp) == NDK_QP_CONNECTING)
		ndk_qp_cm_failed(c->qp);
}

/* The established connection is over (flush: NdkDisconnect or close). */
static void conn_qp_disconnected(struct ndk_connector *c, bool flush)
{
	if (!c->qp)
		return;
	/* The data path stops using the socket before it goes. */
	ndk_dp_detach(c->qp);
	if (ndk_qp_state(c->qp) == NDK_QP_CONNECTED)
		ndk_qp_cm_disconnected(c->qp, false, flush);
	else if (flush)
		ndk_qp_flush(c->qp);
}

/*
 * A pending Connect (active) or Accept (passive) fails: the connection is
 * dropped and the request completes with status.
 */
static void conn_attempt_failed(struct ndk_connector *c, struct ndk_req *req,
				NTSTATUS status)
{
	ndk_info("connector %p: %s failed in %s: %s", (void *)c,
		 c->passive ? "accept" : "connect",
		 ndk_conn_state_name(c->state), NdkStatusName(status));
	conn_stop_timer(c);
	conn_drop_socket(c);
	conn_qp_failed(c);
	conn_set_state(c, NDK_CONN_FAILED);
	c->fail = status;
	ndk_adapter_count(c->obj.adapter, NDK_CTR(ConnectFailure), 1);
	ndk_req_complete(req, status);
}

static void conn_connect_failed(struct ndk_connector *c, NTSTATUS status)
{
	conn_attempt_failed(c, &c->connect_req, status);
}

static void conn_accept_failed(struct ndk_connector *c, NTSTATUS status)
{
	conn_attempt_failed(c, &c->accept_req, status);
}

/* Between handshake steps the peer vanished or our timer fired: the next
 * consumer call on this connector reports status. */
static void conn_abandon(struct ndk_connector *c, NTSTATUS status)
{
	conn_stop_timer(c);
	conn_drop_socket(c);
	conn_qp_failed(c);
	if (c->state != NDK_CONN_AWAIT_REQUEST)
		ndk_adapter_count(c->obj.adapter, NDK_CTR(ConnectFailure), 1);
	conn_set_state(c, NDK_CONN_ABANDONED);
	c->fail = status;
}

static void disc_work_fn(struct ndk_work *w)
{
	struct ndk_connector *c =
		container_of(w, struct ndk_connector, disc_work);
	NDK_FN_DISCONNECT_EVENT_CALLBACK *cb;
	NDK_FN_DISCONNECT_EVENT_CALLBACK_EX *cb_ex;
	PVOID ctx;

	pthread_mutex_lock(&c->lock);
	cb = c->disc_cb;
	cb_ex = c->disc_cb_ex;
	ctx = c->disc_ctx;
	pthread_mutex_unlock(&c->lock);
	/* No event once the consumer started closing the connector. */
	if (ndk_obj_begin_event(&c->obj)) {
		if (cb_ex)
			cb_ex(ctx, 0); /* 0: no provider reason given */
		else if (cb)
			cb(ctx);
		ndk_obj_release(&c->obj);
	}
	ndk_obj_release(&c->obj);
}

/*
 * The peer disconnected an established connection: raise the disconnect
 * event (once: a connection leaves the established states only once) and
 * do not flush (NDK_FN_DISCONNECT_EVENT_CALLBACK). c->lock held.
 */
static void conn_peer_disconnected(struct ndk_connector *c, bool error)
{
	struct ndk_adapter *ad = c->obj.adapter;

	conn_set_state(c, NDK_CONN_PEER_CLOSED);
	/* Nothing more goes out; requests wait for the consumer's
	 * NdkDisconnect or NdkFlush (no implicit flush, NDK_FN_DISCONNECT). */
	if (c->qp)
		ndk_dp_detach(c->qp);
	conn_unwatch(c);
	if (error)
		ndk_adapter_count(ad, NDK_CTR(ConnectionError), 1);
	if (!c->disc_cb && !c->disc_cb_ex)
		return;
	ndk_obj_hold(&c->obj);
	if (!ndk_engine_post(conn_engine(c), &c->disc_work))
		ndk_obj_release(&c->obj);
}

/* ------------------------------------------------------------------ */
/* Active side                                                        */

/* Builds the Request into tx; it is sent once TCP is up. */
static int conn_build_request(struct ndk_connector *c, const void *pd,
			      uint16_t pd_len)
{
	struct mpa_rr rr = {
		.type = MPA_RR_REQUEST,
		.rev = MPA_REV_2,
		.flags = MPA_FLAG_ENHANCED | (c->crc ? MPA_FLAG_CRC : 0),
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

/* The TCP connection is up: send the MPA Request kept in tx. */
static void conn_tcp_connected(struct ndk_connector *c)
{
	socklen_t len = sizeof(c->local);
	int ret;

	getsockname(c->fd, (struct sockaddr *)&c->local, &len);
	conn_set_state(c, NDK_CONN_AWAIT_REPLY);
	ret = conn_flush_tx(c);
	if (ret && ret != -EAGAIN) {
		conn_connect_failed(c, STATUS_CONNECTION_REFUSED);
		return;
	}
	conn_watch(c, EPOLLIN | (ret == -EAGAIN ? EPOLLOUT : 0));
}

/* The Reply is complete in c->rx (RFC 5044 7.1, RFC 6581). */
static void conn_got_reply(struct ndk_connector *c, const struct mpa_rr *rr)
{
	const NDK_ADAPTER_INFO *info = &c->obj.adapter->info;
	struct mpa_read_limits max = { info->MaxInboundReadLimit,
				       info->MaxOutboundReadLimit };
	/* An MPA v1 peer says nothing: assume 1/1, as siw runs (RFC 5044
	 * leaves IRD/ORD to the ULP). */
	struct mpa_read_limits peer = { 1, 1 };
	int rtr;

	conn_stop_timer(c);
	memcpy(c->peer_pd, rr->pd, rr->pd_len);
	c->peer_pd_len = rr->pd_len;
	c->peer_rev = rr->rev;
	c->peer_enhanced = mpa_rr_enhanced(rr);
	if (c->peer_enhanced) {
		peer.ird = rr->ird;
		peer.ord = rr->ord;
	}
	c->peer_limits = peer;
	c->eff = mpa_negotiate_ird_ord(c->req, max, peer);
	c->rx_len = 0;

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
		if (c->rtr == MPA_RTR_READ && c->eff.ord == 0)
			c->eff.ord = 1;
	} else {
		c->rtr = MPA_RTR_NONE;
	}
	conn_set_state(c, NDK_CONN_REPLIED);
	/* Nothing may arrive now but an end of stream (RFC 5044 1.1). */
	conn_watch(c, EPOLLIN);
	/*
	 * Twice the acceptor's RTR timeout: against a libndk peer its Accept
	 * times out first (IO_TIMEOUT there, CONNECTION_ABORTED here); ours
	 * only ends an attempt whose peer never gives up.
	 */
	conn_arm_timer(c, CONN_TIMER_COMPLETE_CONNECT, 2 * ndk_cm_timeout_ms());
	ndk_req_complete(&c->connect_req, STATUS_SUCCESS);
}

/*
 * Reads an MPA Request or Reply into c->rx (one read when the peer sent it
 * whole, as peers do). Returns 1
 * with rr filled, 0 if more bytes are needed, or -1 when the frame is
 * malformed, the stream ended, or bytes follow the frame before we acted
 * (siw refuses that too: "peer sent extra data", iwarp.md 1.1).
 */
static int conn_read_frame(struct ndk_connector *c, enum mpa_rr_type type,
			   struct mpa_rr *rr)
{
	const char *what = type == MPA_RR_REPLY ? "Reply" : "Request";
	int ret;

	for (;;) {
		ret = mpa_rr_parse(c->rx, c->rx_len, type, MPA_PRIVATE_DATA_MAX,
				   rr, NULL);
		if (ret > 0) {
			/* c->rx has room for more than any frame, so a frame
			 * that ends the bytes read came from a read that
			 * emptied the socket: nothing followed it then. */
			if (c->rx_len == (size_t)ret)
				return 1;
			ndk_info("connector %p: data behind the MPA %s",
				 (void *)c, what);
			return -1;
		}
		if (ret != -EAGAIN) {
			ndk_info("connector %p: bad MPA %s: %s", (void *)c,
				 what, mpa_strerror(ret));
			return -1;
		}
		ret = conn_fill(c, sizeof(c->rx), false);
		if (ret <= 0)
			return ret < 0 ? -1 : 0;
	}
}

static void conn_read_reply(struct ndk_connector *c)
{
	struct mpa_rr rr;
	int ret = conn_read_frame(c, MPA_RR_REPLY, &rr);

	if (ret > 0)
		conn_got_reply(c, &rr);
	else if (ret < 0)
		/* Malformed, or closed before answering: refused. */
		conn_connect_failed(c, STATUS_CONNECTION_REFUSED);
}

/* ------------------------------------------------------------------ */
/* Passive side                                                       */

/* Refuses a request with an MPA Reply R=1 and ends the connection. */
static void conn_send_reject(struct ndk_connector *c, const void *pd,
			     uint16_t pd_len)
{
	struct mpa_rr rr = {
		.type = MPA_RR_REPLY,
		.rev = c->peer_rev == MPA_REV_1 ? MPA_REV_1 : MPA_REV_2,
		.flags = (c->peer_enhanced ? MPA_FLAG_ENHANCED : 0) |
			 (c->crc ? MPA_FLAG_CRC : 0),
		.p2p = c->p2p,
		.ird = (uint16_t)c->eff.ird,
		.ord = (uint16_t)c->eff.ord,
		.pd = pd,
		.pd_len = pd_len,
	};
	int len = mpa_reject_encode(&rr, c->tx, sizeof(c->tx));

	if (len > 0)
		(void)conn_send(c, (size_t)len); /* best effort, then FIN */
	if (c->fd >= 0)
		shutdown(c->fd, SHUT_WR);
}

/* The Request is complete in c->rx. */
static void conn_got_request(struct ndk_connector *c, const struct mpa_rr *rr,
			     bool *close_now)
{
	const NDK_ADAPTER_INFO *info = &c->obj.adapter->info;
	struct mpa_read_limits max = { info->MaxInboundReadLimit,
				       info->MaxOutboundReadLimit };

	conn_stop_timer(c);
	c->peer_rev = rr->rev;
	c->peer_enhanced = mpa_rr_enhanced(rr);
	c->p2p = c->peer_enhanced && rr->p2p;
	c->rtr = c->p2p ? rr->rtr : MPA_RTR_NONE;
	c->crc = cm_crc_mode() == CRC_REQUIRED || (rr->flags & MPA_FLAG_CRC);
	/* An MPA v1 peer sends no IRD/ORD: it does not limit ours. */
	c->peer_limits.ird = c->peer_enhanced ? rr->ird : 1;
	c->peer_limits.ord = c->peer_enhanced ? rr->ord : 1;
	/* Before Accept, the limits are the peer's, capped to the adapter's
	 * (NDK_FN_GET_CONNECTION_DATA). */
	c->eff = mpa_negotiate_ird_ord(max, max, c->peer_limits);
	memcpy(c->peer_pd, rr->pd, rr->pd_len);
	c->peer_pd_len = rr->pd_len;
	c->rx_len = 0;

	if (rr->flags & MPA_FLAG_MARKERS) {
		/* As siw: markers are refused with R=1, no private data. */
		ndk_info("connector %p: request asks for markers", (void *)c);
		conn_send_reject(c, NULL, 0);
		*close_now = true;
		return;
	}
	if (!ndk_listener_admit(c->listener)) {
		/* Paused, closing or backlog full: refused, as if nobody
		 * listened (NDK_FN_CONTROL_CONNECT_EVENTS). */
		conn_send_reject(c, NULL, 0);
		*close_now = true;
		return;
	}
	conn_set_state(c, NDK_CONN_REQUESTED);
	conn_watch(c, EPOLLIN); /* only to notice the peer leaving */
	ndk_obj_hold(&c->obj);
	if (!ndk_engine_post(conn_engine(c), &c->event_work))
		ndk_obj_release(&c->obj);
}

static void conn_read_request(struct ndk_connector *c, bool *close_now)
{
	struct mpa_rr rr;
	int ret = conn_read_frame(c, MPA_RR_REQUEST, &rr);

	if (ret > 0)
		conn_got_request(c, &rr, close_now);
	else if (ret < 0)
		/* Not MPA, too much PD, or gone: drop it, as siw does. */
		*close_now = true;
}

void ndk_connector_untrack(struct ndk_connector *c)
{
	bool was;

	pthread_mutex_lock(&c->lock);
	was = c->tracked;
	c->tracked = false;
	pthread_mutex_unlock(&c->lock);
	if (was)
		ndk_listener_untrack(c->listener, &c->lentry);
}

/* Delivers the connect request to the listener's ConnectEvent. */
static void event_work_fn(struct ndk_work *w)
{
	struct ndk_connector *c =
		container_of(w, struct ndk_connector, event_work);
	struct ndk_listener *l = c->listener;
	bool delivered = false;

	/* From here on the connector is the consumer's, not the listener's. */
	ndk_connector_untrack(c);
	if (ndk_obj_is_open(&c->obj) && ndk_obj_begin_event(&l->obj)) {
		l->connect_event(l->connect_event_ctx, &c->obj.pub.connector);
		ndk_obj_release(&l->obj);
		delivered = true;
	}
	if (!delivered) {
		/* The listener is closing: as if it were not there. */
		pthread_mutex_lock(&c->lock);
		if (c->state == NDK_CONN_REQUESTED)
			conn_send_reject(c, NULL, 0);
		if (!conn_state_ended(c->state))
			conn_abandon(c, STATUS_CONNECTION_ABORTED);
		pthread_mutex_unlock(&c->lock);
		if (ndk_obj_is_open(&c->obj))
			ndk_obj_close_internal(&c->obj);
	}
	ndk_obj_release(&c->obj);
}

/* The handshake of the passive side is over: hand the stream over. */
static void conn_accept_established(struct ndk_connector *c)
{
	conn_stop_timer(c);
	if (conn_attach_dp(c)) {
		conn_accept_failed(c, STATUS_CONNECTION_ABORTED);
		return;
	}
	conn_set_state(c, NDK_CONN_ESTABLISHED);
	ndk_adapter_count(c->obj.adapter, NDK_CTR(Accept), 1);
	conn_watch(c, EPOLLIN | (c->tx_len ? EPOLLOUT : 0));
	ndk_req_complete(&c->accept_req, STATUS_SUCCESS);
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
 * read. SENDING_REPLY, engine thread, c->lock held.
 */
static void conn_reply_out(struct ndk_connector *c)
{
	int peek = conn_peek(c);
	uint64_t ms;

	if (peek < 0) {
		conn_accept_failed(c, STATUS_CONNECTION_ABORTED);
		return;
	}
	if (c->tx_len)
		return; /* the rest of the Reply goes first */
	ms = ndk_accept_grace_ms();
	if (ms && peek == 0) {
		conn_set_state(c, NDK_CONN_ACCEPT_GRACE);
		conn_watch(c, EPOLLIN);
		conn_arm_timer(c, CONN_TIMER_ACCEPT_GRACE, ms);
		return;
	}
	conn_accept_established(c);
}

/* ACCEPT_GRACE: the initiator's first FPDU ends the wait early. */
static void conn_grace_io(struct ndk_connector *c)
{
	int peek = conn_peek(c);

	if (peek < 0)
		conn_accept_failed(c, STATUS_CONNECTION_ABORTED);
	else if (peek > 0)
		conn_accept_established(c);
	/* else a spurious wake-up: keep waiting */
}

/* ACCEPT_GRACE is over and the initiator stayed silent: go ahead. */
static void conn_grace_over(struct ndk_connector *c)
{
	if (conn_peer_gone(c))
		conn_accept_failed(c, STATUS_CONNECTION_ABORTED);
	else
		conn_accept_established(c);
}

/* AWAIT_RTR: the first FPDU after our Reply must be the RTR (RFC 6581). */
static void conn_read_rtr(struct ndk_connector *c)
{
	struct ddp_hdr h;
	size_t ulpdu_len, total;
	int ret;

	/*
	 * No FPDU is shorter than a zero-length tagged one (20 bytes): one
	 * read of up to that much never takes the data path's bytes, except
	 * behind a malformed RTR, which ends the connection anyway.
	 */
	ret = 1;
	if (c->rx_len < MPA_FPDU_HDR_LEN) {
		ret = conn_fill(c,
				MPA_FPDU_HDR_LEN + DDP_TAGGED_HDR_LEN +
					MPA_FPDU_CRC_LEN,
				false);
		if (ret == 1 && c->rx_len < MPA_FPDU_HDR_LEN)
			ret = 0;
	}
	if (ret == 1) {
		ulpdu_len = (size_t)c->rx[0] << 8 | c->rx[1];
		total = mpa_fpdu_len(ulpdu_len);
		if (total > sizeof(c->rx) || total < c->rx_len) {
			conn_accept_failed(c, STATUS_CONNECTION_ABORTED);
			return;
		}
		ret = conn_fill(c, total, true);
	}
	if (ret == 0)
		return;
	if (ret < 0) {
		/* The initiator rejected or went away: NdkAccept fails with
		 * STATUS_CONNECTION_ABORTED (NDK_FN_ACCEPT). */
		conn_accept_failed(c, STATUS_CONNECTION_ABORTED);
		return;
	}
	ulpdu_len = (size_t)c->rx[0] << 8 | c->rx[1];
	if ((c->crc && mpa_fpdu_check_crc(c->rx, c->rx_len)) ||
	    ddp_hdr_decode(c->rx + MPA_FPDU_HDR_LEN, ulpdu_len, &h) < 0) {
		conn_accept_failed(c, STATUS_CONNECTION_ABORTED);
		return;
	}
	switch (c->rtr) {
	case MPA_RTR_WRITE:
		ret = h.tagged && h.opcode == RDMAP_WRITE &&
		      ulpdu_len == DDP_TAGGED_HDR_LEN;
		break;
	case MPA_RTR_SEND:
		ret = !h.tagged && h.opcode == RDMAP_SEND &&
		      ulpdu_len == DDP_UNTAGGED_HDR_LEN;
		break;
	case MPA_RTR_READ: {
		struct rdmap_read_req rq;
		struct ddp_hdr resp = {
			.opcode = RDMAP_READ_RESP,
			.tagged = true,
			.last = true,
			.dv = DDP_VERSION,
			.rv = RDMAP_VERSION,
		};
		int n;

		ret = !h.tagged && h.opcode == RDMAP_READ_REQ &&
		      ulpdu_len == DDP_UNTAGGED_HDR_LEN + RDMAP_READ_REQ_LEN;
		if (!ret)
			break;
		rdmap_read_req_get(
			c->rx + MPA_FPDU_HDR_LEN + DDP_UNTAGGED_HDR_LEN, &rq);
		/* Answer the zero-length Read with a zero-length Response
		 * to its sink (RFC 6581 RTR). */
		resp.stag = rq.sink_stag;
		resp.to = rq.sink_to;
		n = ddp_hdr_encode(&resp, c->tx + MPA_FPDU_HDR_LEN,
				   sizeof(c->tx) - MPA_FPDU_HDR_LEN);
		if (n > 0)
			n = mpa_fpdu_finish(c->tx, (size_t)n, c->crc);
		if (n > 0)
			n = conn_send(c, (size_t)n);
		/* -EAGAIN: the rest goes out on EPOLLOUT. */
		if (n < 0 && n != -EAGAIN)
			ret = 0;
		break;
	}
	default:
		ret = 0;
	}
	c->rx_len = 0;
	if (!ret) {
		ndk_info("connector %p: unexpected RTR (opcode %u)", (void *)c,
			 h.opcode);
		conn_accept_failed(c, STATUS_CONNECTION_ABORTED);
		return;
	}
	conn_accept_established(c);
}

/* ------------------------------------------------------------------ */
/* Established                                                        */

/*
 * The data path reads and writes an established connection; it reports
 * the end of the stream, a reset, or a Terminate sent or received.
 */
static void conn_established_io(struct ndk_connector *c, uint32_t events)
{
	int ret = c->qp ? ndk_dp_io(c->qp, events) : -ENOTCONN;

	if (!ret)
		return;
	if (c->state == NDK_CONN_DISCONNECTING && ret == -EPIPE) {
		/* Our FIN was answered: the disconnect is done. */
		conn_stop_timer(c);
		conn_qp_disconnected(c, true);
		conn_drop_socket(c);
		conn_set_state(c, NDK_CONN_CLOSED);
		c->fail = STATUS_CONNECTION_INVALID;
		ndk_req_complete(&c->disconnect_req, STATUS_SUCCESS);
		return;
	}
	if (ret == -EPROTO) {
		/* After a Terminate the stream is over: send our FIN. */
		ndk_info("connector %p: connection terminated", (void *)c);
		ndk_dp_detach(c->qp);
		shutdown(c->fd, SHUT_WR);
	}
	if (conn_state_up(c->state))
		conn_peer_disconnected(c, ret != -EPIPE);
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
 * in progress is a new segment already. c->lock held, engine thread.
 */
static void conn_nudge(struct ndk_connector *c)
{
	struct ndk_dp *dp = c->qp ? c->qp->dp : NULL;
	uint64_t rx;

	/* c->tx_len: the RTR itself is not all out yet. */
	if (!dp || c->fd < 0 || c->tx_len)
		return;
	if (c->nudge_mark_ok && !ndk_tcp_bytes_received(c->fd, &rx) &&
	    rx != c->nudge_mark) {
		ndk_dbg("connector %p: peer spoke after the RTR, no nudge",
			(void *)c);
		return;
	}
	pthread_mutex_lock(&dp->lock);
	/* Between FPDUs only; the data path's writer sends it (and finishes
	 * it on EPOLLOUT if the socket takes only part). */
	if (ndk_dp_send_rtr_locked(dp, MPA_RTR_WRITE))
		ndk_info("connector %p: RTR nudge (nothing from the peer "
			 "since the RTR)",
			 (void *)c);
	pthread_mutex_unlock(&dp->lock);
}

/* Hands an established connection to its QP's data path. */
static int conn_attach_dp(struct ndk_connector *c)
{
	int ret =
		ndk_dp_attach(c->qp, c->fd, c->local.ss_family, conn_engine(c),
			      &c->io, c->crc, c->eff.ird, c->eff.ord);

	if (ret)
		return ret;
	return ndk_qp_cm_connected(c->qp, c->eff.ird, c->eff.ord);
}

/* ------------------------------------------------------------------ */
/* Engine-side event and timer handlers                               */

static void conn_io_fn(struct ndk_io *io, uint32_t events)
{
	struct ndk_connector *c = container_of(io, struct ndk_connector, io);
	bool close_now = false;
	int err;
	socklen_t len = sizeof(err);

	pthread_mutex_lock(&c->lock);
	if (c->fd < 0)
		goto out;
	if ((events & EPOLLOUT) && c->tx_len && !conn_state_ended(c->state) &&
	    c->state != NDK_CONN_TCP_CONNECTING) {
		err = conn_flush_tx(c);
		if (err && err != -EAGAIN)
			events |= EPOLLERR;
		else if (!err)
			conn_watch(c, EPOLLIN);
	}
	switch (c->state) {
	case NDK_CONN_TCP_CONNECTING:
		if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len))
			err = errno;
		if (err)
			conn_connect_failed(c, ndk_status_from_errno(
						       -err, NDK_SITE_CONNECT));
		else if (events & (EPOLLOUT | EPOLLERR | EPOLLHUP))
			conn_tcp_connected(c);
		break;
	case NDK_CONN_AWAIT_REPLY:
		conn_read_reply(c);
		break;
	case NDK_CONN_AWAIT_REQUEST:
		conn_read_request(c, &close_now);
		break;
	case NDK_CONN_REPLIED:
	case NDK_CONN_REQUESTED:
		/*
		 * The other side gave up between the handshake steps, or
		 * sent data before our next step (a protocol error, which
		 * siw also answers by dropping the connection).
		 */
		conn_abandon(c, STATUS_CONNECTION_ABORTED);
		break;
	case NDK_CONN_AWAIT_RTR:
		conn_read_rtr(c);
		break;
	case NDK_CONN_SENDING_REPLY:
		conn_reply_out(c);
		break;
	case NDK_CONN_ACCEPT_GRACE:
		conn_grace_io(c);
		break;
	case NDK_CONN_ESTABLISHED:
	case NDK_CONN_RTR_SENT:
	case NDK_CONN_DISCONNECTING:
		conn_established_io(c, events);
		break;
	default:
		conn_unwatch(c);
		break;
	}
	if (close_now)
		conn_abandon(c, STATUS_CONNECTION_ABORTED);
out:
	pthread_mutex_unlock(&c->lock);
	/* An undelivered passive connector is the provider's to close. */
	if (close_now && ndk_obj_is_open(&c->obj))
		ndk_obj_close_internal(&c->obj);
}

/* NdkDisconnect's FIN was never answered. */
static void conn_disconnect_timed_out(struct ndk_connector *c)
{
	conn_qp_disconnected(c, true);
	conn_drop_socket(c);
	conn_set_state(c, NDK_CONN_CLOSED);
	ndk_req_complete(&c->disconnect_req, STATUS_IO_TIMEOUT);
}

/*
 * The timer fired: what happens depends only on why it was armed (the
 * setter stopped it if the connector left that phase since).
 */
static void conn_timer_fn(struct ndk_timer *t)
{
	struct ndk_connector *c = container_of(t, struct ndk_connector, timer);
	enum conn_timer_purpose purpose;
	bool close_now = false;

	pthread_mutex_lock(&c->lock);
	purpose = c->timer_purpose;
	if (purpose == CONN_TIMER_NONE || ndk_now_ns() < c->timer_deadline_ns) {
		pthread_mutex_unlock(&c->lock); /* stale */
		return;
	}
	ndk_dbg("connector %p: %s timer fired in %s", (void *)c,
		conn_timer_names[purpose], ndk_conn_state_name(c->state));
	c->timer_purpose = CONN_TIMER_NONE;
	c->timer_deadline_ns = UINT64_MAX;
	switch (purpose) {
	case CONN_TIMER_CONNECT:
		conn_connect_failed(c, STATUS_IO_TIMEOUT);
		break;
	case CONN_TIMER_COMPLETE_CONNECT:
		/* CompleteConnect never came: this attempt is over. */
		conn_abandon(c, STATUS_IO_TIMEOUT);
		break;
	case CONN_TIMER_REQUEST:
		close_now = true;
		conn_abandon(c, STATUS_IO_TIMEOUT);
		break;
	case CONN_TIMER_ACCEPT:
		/* The peer never called CompleteConnect: NdkAccept fails
		 * with STATUS_IO_TIMEOUT. */
		conn_accept_failed(c, STATUS_IO_TIMEOUT);
		break;
	case CONN_TIMER_ACCEPT_GRACE:
		conn_grace_over(c);
		break;
	case CONN_TIMER_RTR_NUDGE:
		conn_nudge(c);
		conn_set_state(c, NDK_CONN_ESTABLISHED);
		break;
	case CONN_TIMER_DISCONNECT:
		conn_disconnect_timed_out(c);
		break;
	default:
		break;
	}
	pthread_mutex_unlock(&c->lock);
	if (close_now && ndk_obj_is_open(&c->obj))
		ndk_obj_close_internal(&c->obj);
}

/* ------------------------------------------------------------------ */
/* Consumer entry points                                              */

static NTSTATUS check_private_data(const void *pd, ULONG len, ULONG max)
{
	if (len && !pd)
		return STATUS_INVALID_PARAMETER;
	/* More than the adapter advertises is refused, nothing is sent. */
	if (len > max)
		return STATUS_INVALID_BUFFER_SIZE;
	return STATUS_SUCCESS;
}

static struct mpa_read_limits capped_limits(struct ndk_adapter *ad, ULONG ird,
					    ULONG ord)
{
	struct mpa_read_limits l = {
		MIN(ird, ad->info.MaxInboundReadLimit),
		MIN(ord, ad->info.MaxOutboundReadLimit),
	};

	return l;
}

/*
 * Common tail of NdkConnect and NdkConnectWithSharedEndpoint: c->lock
 * held, c->fd bound, c->ep referenced, c->local set. On an inline failure
 * the connector is left IDLE, owning nothing, so it may try again.
 */
static NTSTATUS conn_start(struct ndk_connector *c, struct ndk_endpoint *ep,
			   int fd, struct ndk_qp *qp,
			   const struct sockaddr *dst, ULONG ird, ULONG ord,
			   const void *pd, ULONG pd_len,
			   NDK_FN_REQUEST_COMPLETION *cb, PVOID ctx)
{
	struct ndk_adapter *ad = c->obj.adapter;
	static const int one = 1;
	const struct sockaddr *local;
	socklen_t len;
	NTSTATUS status;
	int ret;

	c->ep = ep;
	c->fd = fd;
	local = ndk_endpoint_addr(ep, &len);
	memset(&c->local, 0, sizeof(c->local));
	memcpy(&c->local, local, len);
	memset(&c->peer, 0, sizeof(c->peer));
	memcpy(&c->peer, dst, ndk_addr_len(dst));
	ret = ndk_tuple_register((struct sockaddr *)&c->local, dst);
	if (ret) {
		status = ndk_status_from_errno(ret, NDK_SITE_CONNECT);
		goto fail;
	}
	c->tuple_registered = true;
	ret = ndk_qp_cm_connecting(qp, c);
	if (ret) {
		status = ret == -EBUSY ? STATUS_CONNECTION_ACTIVE
				       : STATUS_INVALID_DEVICE_STATE;
		goto fail;
	}
	c->qp = qp;
	ret = ndk_obj_link(&c->obj, &qp->obj);
	if (ret && ret != -EEXIST) {
		ndk_qp_cm_failed(qp);
		c->qp = NULL;
		status = STATUS_INVALID_PARAMETER;
		goto fail;
	}
	c->req = capped_limits(ad, ird, ord);
	c->crc = cm_crc_mode() != CRC_NEVER;
	ret = conn_build_request(c, pd, (uint16_t)pd_len);
	if (ret) {
		status = ndk_status_from_errno(ret, NDK_SITE_GENERIC);
		goto fail_qp;
	}
	setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));

	ndk_req_pend(&c->connect_req, &c->obj, cb, ctx);
	conn_set_state(c, NDK_CONN_TCP_CONNECTING);
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
		ndk_req_withdraw(&c->connect_req);
		ndk_adapter_count(ad, NDK_CTR(ConnectFailure), 1);
		conn_set_state(c, NDK_CONN_IDLE);
		goto fail_qp;
	}
	return STATUS_PENDING;
fail_qp:
	ndk_qp_cm_failed(qp);
	ndk_obj_unlink(&c->obj, &qp->obj);
	c->qp = NULL;
fail:
	if (c->tuple_registered) {
		ndk_tuple_unregister((struct sockaddr *)&c->local, dst);
		c->tuple_registered = false;
	}
	close(c->fd);
	c->fd = -1;
	ndk_endpoint_put(c->ep);
	c->ep = NULL;
	c->tx_len = c->tx_off = 0;
	return status;
}

static NTSTATUS conn_check_connect_args(struct ndk_connector *c, NDK_QP *qp,
					const struct sockaddr *dst,
					ULONG dstlen, const void *pd,
					ULONG pdlen)
{
	NTSTATUS status;

	if (!qp || ndk_addr_check(dst, dstlen))
		return STATUS_INVALID_PARAMETER;
	status = check_private_data(pd, pdlen,
				    c->obj.adapter->info.MaxCallerData);
	if (status)
		return status;
	if (c->passive || c->state != NDK_CONN_IDLE)
		return STATUS_INVALID_DEVICE_STATE;
	return STATUS_SUCCESS;
}

static NTSTATUS
connector_connect(NDK_CONNECTOR *pNdkConnector, NDK_QP *pNdkQp,
		  CONST PSOCKADDR pSrcAddress, ULONG SrcAddressLength,
		  CONST PSOCKADDR pDestAddress, ULONG DestAddressLength,
		  ULONG InboundReadLimit, ULONG OutboundReadLimit,
		  CONST PVOID pPrivateData, ULONG PrivateDataLength,
		  NDK_FN_REQUEST_COMPLETION RequestCompletion,
		  PVOID RequestContext)
{
	struct ndk_connector *c = to_ndk_connector(pNdkConnector);
	struct ndk_endpoint *ep;
	NTSTATUS status;

	pthread_mutex_lock(&c->lock);
	status = conn_check_connect_args(c, pNdkQp, pDestAddress,
					 DestAddressLength, pPrivateData,
					 PrivateDataLength);
	if (!status && (ndk_addr_check(pSrcAddress, SrcAddressLength) ||
			pSrcAddress->sa_family != pDestAddress->sa_family))
		status = STATUS_INVALID_PARAMETER;
	if (status)
		goto out;
	/* The connector's own endpoint: one reference (NDKPI Listeners,
	 * Connectors, and Endpoints). */
	status = ndk_local_endpoint_acquire(c->obj.adapter, pSrcAddress,
					    SrcAddressLength,
					    NDK_ENDPOINT_CONNECTOR, &ep);
	if (status)
		goto out;
	status = conn_start(c, ep, ndk_endpoint_take_fd(ep), to_ndk_qp(pNdkQp),
			    pDestAddress, InboundReadLimit, OutboundReadLimit,
			    pPrivateData, PrivateDataLength, RequestCompletion,
			    RequestContext);
out:
	pthread_mutex_unlock(&c->lock);
	return status;
}

static NTSTATUS
connector_connect_sep(NDK_CONNECTOR *pNdkConnector, NDK_QP *pNdkQp,
		      NDK_SHARED_ENDPOINT *pNdkSharedEndpoint,
		      CONST PSOCKADDR pDestAddress, ULONG DestAddressLength,
		      ULONG InboundReadLimit, ULONG OutboundReadLimit,
		      CONST PVOID pPrivateData, ULONG PrivateDataLength,
		      NDK_FN_REQUEST_COMPLETION RequestCompletion,
		      PVOID RequestContext)
{
	struct ndk_connector *c = to_ndk_connector(pNdkConnector);
	struct ndk_shared_endpoint *sep;
	const struct sockaddr *local;
	socklen_t len;
	NTSTATUS status;
	int fd;

	pthread_mutex_lock(&c->lock);
	status = conn_check_connect_args(c, pNdkQp, pDestAddress,
					 DestAddressLength, pPrivateData,
					 PrivateDataLength);
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
	/* Same local address:port for every connector of the endpoint. */
	fd = ndk_endpoint_bind_shared(sep->ep);
	if (fd < 0) {
		status = ndk_status_from_errno(fd, NDK_SITE_BIND);
		goto out;
	}
	if (!c->sep) {
		/* +1 on the shared endpoint per connector. */
		if (ndk_obj_link(&c->obj, &sep->obj)) {
			close(fd);
			status = STATUS_INVALID_PARAMETER;
			goto out;
		}
		c->sep = sep;
	}
	ndk_endpoint_get(sep->ep);
	status = conn_start(c, sep->ep, fd, to_ndk_qp(pNdkQp), pDestAddress,
			    InboundReadLimit, OutboundReadLimit, pPrivateData,
			    PrivateDataLength, RequestCompletion,
			    RequestContext);
out:
	pthread_mutex_unlock(&c->lock);
	return status;
}

static NTSTATUS
conn_complete_connect(struct ndk_connector *c,
		      NDK_FN_DISCONNECT_EVENT_CALLBACK *ev,
		      NDK_FN_DISCONNECT_EVENT_CALLBACK_EX *ev_ex, PVOID ev_ctx)
{
	struct ndk_adapter *ad = c->obj.adapter;
	NTSTATUS status = STATUS_SUCCESS;
	uint64_t nudge_ms = 0;
	int len, ret;

	pthread_mutex_lock(&c->lock);
	if (!c->passive && c->state == NDK_CONN_ABANDONED &&
	    (c->fail == STATUS_CONNECTION_ABORTED ||
	     c->fail == STATUS_IO_TIMEOUT)) {
		/* The acceptor abandoned it, or our timer ended it. */
		status = c->fail;
		goto out;
	}
	if (c->passive || c->state != NDK_CONN_REPLIED) {
		status = STATUS_CONNECTION_INVALID;
		goto out;
	}
	if (conn_peer_acted(c)) {
		conn_abandon(c, STATUS_CONNECTION_ABORTED);
		status = STATUS_CONNECTION_ABORTED;
		goto out;
	}
	conn_stop_timer(c);
	if (c->p2p) {
		/* The RTR tells the responder it may send (RFC 6581). */
		len = ddp_rtr_build((enum mpa_rtr)c->rtr, c->crc, c->tx,
				    sizeof(c->tx));
		ret = len > 0 ? conn_send(c, (size_t)len) : len;
		if (ret && ret != -EAGAIN) {
			conn_abandon(c, STATUS_CONNECTION_ABORTED);
			status = STATUS_CONNECTION_ABORTED;
			goto out;
		}
		if (c->rtr == MPA_RTR_WRITE)
			nudge_ms = ndk_rtr_nudge_ms();
		if (nudge_ms)
			c->nudge_mark_ok =
				!ndk_tcp_bytes_received(c->fd, &c->nudge_mark);
	}
	if (conn_attach_dp(c)) {
		conn_abandon(c, STATUS_CONNECTION_ABORTED);
		status = STATUS_CONNECTION_ABORTED;
		goto out;
	}
	c->disc_cb = ev;
	c->disc_cb_ex = ev_ex;
	c->disc_ctx = ev_ctx;
	conn_set_state(c, nudge_ms ? NDK_CONN_RTR_SENT : NDK_CONN_ESTABLISHED);
	ndk_adapter_count(ad, NDK_CTR(Connect), 1);
	conn_watch(c, EPOLLIN | (c->tx_len ? EPOLLOUT : 0));
	if (nudge_ms)
		conn_arm_timer(c, CONN_TIMER_RTR_NUDGE, nudge_ms);
out:
	pthread_mutex_unlock(&c->lock);
	return status;
}

static NTSTATUS
connector_complete_connect(NDK_CONNECTOR *pNdkConnector,
			   NDK_FN_DISCONNECT_EVENT_CALLBACK DisconnectEvent,
			   PVOID DisconnectEventContext,
			   NDK_FN_REQUEST_COMPLETION RequestCompletion,
			   PVOID RequestContext)
{
	return conn_complete_connect(to_ndk_connector(pNdkConnector),
				     DisconnectEvent, NULL,
				     DisconnectEventContext);
}

static NTSTATUS connector_complete_connect_ex(
	NDK_CONNECTOR *pNdkConnector,
	NDK_FN_DISCONNECT_EVENT_CALLBACK_EX DisconnectEvent,
	PVOID DisconnectEventContext,
	NDK_FN_REQUEST_COMPLETION RequestCompletion, PVOID RequestContext)
{
	return conn_complete_connect(to_ndk_connector(pNdkConnector), NULL,
				     DisconnectEvent, DisconnectEventContext);
}

static NTSTATUS conn_accept(struct ndk_connector *c, NDK_QP *pNdkQp, ULONG ird,
			    ULONG ord, const void *pd, ULONG pd_len,
			    NDK_FN_DISCONNECT_EVENT_CALLBACK *ev,
			    NDK_FN_DISCONNECT_EVENT_CALLBACK_EX *ev_ex,
			    PVOID ev_ctx, NDK_FN_REQUEST_COMPLETION *cb,
			    PVOID ctx)
{
	struct ndk_adapter *ad = c->obj.adapter;
	struct mpa_read_limits max = { ad->info.MaxInboundReadLimit,
				       ad->info.MaxOutboundReadLimit };
	struct ndk_qp *qp;
	struct mpa_rr rr;
	NTSTATUS status;
	int len, ret;

	if (!pNdkQp)
		return STATUS_INVALID_PARAMETER;
	status = check_private_data(pd, pd_len, ad->info.MaxCalleeData);
	if (status)
		return status;
	qp = to_ndk_qp(pNdkQp);
	pthread_mutex_lock(&c->lock);
	if (c->passive && conn_state_ended(c->state) &&
	    c->fail == STATUS_CONNECTION_ABORTED) {
		/* The connecting peer abandoned the attempt (NDK_FN_ACCEPT). */
		status = STATUS_CONNECTION_ABORTED;
		goto out;
	}
	if (!c->passive || c->state != NDK_CONN_REQUESTED) {
		status = STATUS_CONNECTION_INVALID;
		goto out;
	}
	if (conn_peer_acted(c)) {
		conn_abandon(c, STATUS_CONNECTION_ABORTED);
		status = STATUS_CONNECTION_ABORTED;
		goto out;
	}
	ret = ndk_qp_cm_connecting(qp, c);
	if (ret) {
		status = ret == -EBUSY ? STATUS_CONNECTION_ACTIVE
				       : STATUS_INVALID_DEVICE_STATE;
		goto out;
	}
	ret = ndk_obj_link(&c->obj, &qp->obj);
	if (ret && ret != -EEXIST) {
		ndk_qp_cm_failed(qp);
		status = STATUS_INVALID_PARAMETER;
		goto out;
	}
	c->qp = qp;
	c->req = capped_limits(ad, ird, ord);
	c->eff = mpa_negotiate_ird_ord(c->req, max, c->peer_limits);
	if (c->p2p) {
		unsigned int chosen = mpa_rtr_choose(c->rtr, MPA_RTR_ALL);

		/* Nothing offered: a Write RTR, as siw does. */
		c->rtr = chosen ? chosen : MPA_RTR_WRITE;
	}
	memset(&rr, 0, sizeof(rr));
	rr.type = MPA_RR_REPLY;
	rr.rev = c->peer_enhanced ? MPA_REV_2 : c->peer_rev;
	rr.flags = (c->peer_enhanced ? MPA_FLAG_ENHANCED : 0) |
		   (c->crc ? MPA_FLAG_CRC : 0);
	rr.p2p = c->p2p;
	rr.rtr = (uint8_t)(c->p2p ? c->rtr : 0);
	rr.ird = (uint16_t)c->eff.ird;
	rr.ord = (uint16_t)c->eff.ord;
	rr.pd = pd;
	rr.pd_len = (uint16_t)pd_len;
	len = mpa_rr_encode(&rr, c->tx, sizeof(c->tx));
	ret = len > 0 ? conn_send(c, (size_t)len) : len;
	if (ret && ret != -EAGAIN) {
		conn_abandon(c, STATUS_CONNECTION_ABORTED);
		status = STATUS_CONNECTION_ABORTED;
		goto out;
	}
	c->disc_cb = ev;
	c->disc_cb_ex = ev_ex;
	c->disc_ctx = ev_ctx;
	ndk_req_pend(&c->accept_req, &c->obj, cb, ctx);
	conn_set_state(c, c->p2p ? NDK_CONN_AWAIT_RTR : NDK_CONN_SENDING_REPLY);
	conn_arm_timer(c, CONN_TIMER_ACCEPT, ndk_cm_timeout_ms());
	/* Non-P2P: writable means the Reply is out, and that is the end of
	 * the handshake (conn_reply_out). */
	conn_watch(c, EPOLLIN | (ret == -EAGAIN || !c->p2p ? EPOLLOUT : 0));
	status = STATUS_PENDING;
out:
	pthread_mutex_unlock(&c->lock);
	return status;
}

static NTSTATUS
connector_accept(NDK_CONNECTOR *pNdkConnector, NDK_QP *pNdkQp,
		 ULONG InboundReadLimit, ULONG OutboundReadLimit,
		 CONST PVOID pPrivateData, ULONG PrivateDataLength,
		 NDK_FN_DISCONNECT_EVENT_CALLBACK DisconnectEvent,
		 PVOID DisconnectEventContext,
		 NDK_FN_REQUEST_COMPLETION RequestCompletion,
		 PVOID RequestContext)
{
	return conn_accept(to_ndk_connector(pNdkConnector), pNdkQp,
			   InboundReadLimit, OutboundReadLimit, pPrivateData,
			   PrivateDataLength, DisconnectEvent, NULL,
			   DisconnectEventContext, RequestCompletion,
			   RequestContext);
}

static NTSTATUS
connector_accept_ex(NDK_CONNECTOR *pNdkConnector, NDK_QP *pNdkQp,
		    ULONG InboundReadLimit, ULONG OutboundReadLimit,
		    CONST PVOID pPrivateData, ULONG PrivateDataLength,
		    NDK_FN_DISCONNECT_EVENT_CALLBACK_EX DisconnectEvent,
		    PVOID DisconnectEventContext,
		    NDK_FN_REQUEST_COMPLETION RequestCompletion,
		    PVOID RequestContext)
{
	return conn_accept(to_ndk_connector(pNdkConnector), pNdkQp,
			   InboundReadLimit, OutboundReadLimit, pPrivateData,
			   PrivateDataLength, NULL, DisconnectEvent,
			   DisconnectEventContext, RequestCompletion,
			   RequestContext);
}

static NTSTATUS connector_reject(NDK_CONNECTOR *pNdkConnector,
				 CONST PVOID pPrivateData,
				 ULONG PrivateDataLength)
{
	struct ndk_connector *c = to_ndk_connector(pNdkConnector);
	NTSTATUS status;

	status = check_private_data(pPrivateData, PrivateDataLength,
				    c->obj.adapter->info.MaxCalleeData);
	if (status)
		return status;
	pthread_mutex_lock(&c->lock);
	switch (c->state) {
	case NDK_CONN_REQUESTED:
		if (conn_peer_acted(c)) {
			conn_abandon(c, STATUS_CONNECTION_ABORTED);
			status = STATUS_CONNECTION_ABORTED;
			break;
		}
		conn_send_reject(c, pPrivateData, (uint16_t)PrivateDataLength);
		conn_abandon(c, STATUS_CONNECTION_INVALID);
		break;
	case NDK_CONN_REPLIED:
		/* Active side after Connect completed: closing TCP makes the
		 * peer's Accept fail with CONNECTION_ABORTED (docs/design.md,
		 * connection management). */
		conn_abandon(c, STATUS_CONNECTION_INVALID);
		break;
	case NDK_CONN_FAILED:
	case NDK_CONN_ABANDONED:
	case NDK_CONN_CLOSED:
		/* The other side already abandoned (NDK_FN_REJECT), or our
		 * CompleteConnect timer ended the attempt. */
		status = c->fail == STATUS_CONNECTION_ABORTED ||
					 (c->state == NDK_CONN_ABANDONED &&
					  c->fail == STATUS_IO_TIMEOUT)
				 ? STATUS_CONNECTION_ABORTED
				 : STATUS_CONNECTION_INVALID;
		break;
	default:
		status = STATUS_CONNECTION_INVALID;
		break;
	}
	pthread_mutex_unlock(&c->lock);
	return status;
}

static NTSTATUS connector_get_connection_data(NDK_CONNECTOR *pNdkConnector,
					      ULONG *pInboundReadLimit,
					      ULONG *pOutboundReadLimit,
					      PVOID pPrivateData,
					      ULONG *pPrivateDataLength)
{
	struct ndk_connector *c = to_ndk_connector(pNdkConnector);
	NTSTATUS status = STATUS_SUCCESS;
	ULONG rds;

	if (!pPrivateDataLength)
		return STATUS_INVALID_PARAMETER;
	/* A NULL buffer with a non-zero length is an invalid request. */
	if (!pPrivateData && *pPrivateDataLength)
		return STATUS_INVALID_PARAMETER;
	pthread_mutex_lock(&c->lock);
	if (!c->peer_rev) {
		status = STATUS_CONNECTION_INVALID;
		goto out;
	}
	if (pInboundReadLimit)
		*pInboundReadLimit = c->eff.ird;
	if (pOutboundReadLimit)
		*pOutboundReadLimit = c->eff.ord;
	/* RDS is exactly what the peer sent: MPA carries the length. */
	rds = c->peer_pd_len;
	if (pPrivateData) {
		memcpy(pPrivateData, c->peer_pd, MIN(*pPrivateDataLength, rds));
		if (*pPrivateDataLength < rds)
			status = STATUS_BUFFER_TOO_SMALL;
	}
	*pPrivateDataLength = rds;
out:
	pthread_mutex_unlock(&c->lock);
	return status;
}

static NTSTATUS conn_get_address(struct ndk_connector *c, bool peer,
				 PSOCKADDR addr, ULONG *len)
{
	NTSTATUS status;

	pthread_mutex_lock(&c->lock);
	if (!c->passive && c->state == NDK_CONN_IDLE)
		status = STATUS_CONNECTION_INVALID;
	else
		status = ndk_addr_copy_out(peer ? (struct sockaddr *)&c->peer
						: (struct sockaddr *)&c->local,
					   addr, len);
	pthread_mutex_unlock(&c->lock);
	return status;
}

static NTSTATUS connector_get_local_address(NDK_CONNECTOR *pNdkConnector,
					    PSOCKADDR pAddress,
					    ULONG *pAddressLength)
{
	return conn_get_address(to_ndk_connector(pNdkConnector), false,
				pAddress, pAddressLength);
}

static NTSTATUS connector_get_peer_address(NDK_CONNECTOR *pNdkConnector,
					   PSOCKADDR pAddress,
					   ULONG *pAddressLength)
{
	return conn_get_address(to_ndk_connector(pNdkConnector), true, pAddress,
				pAddressLength);
}

static NTSTATUS
connector_disconnect(NDK_CONNECTOR *pNdkConnector,
		     NDK_FN_REQUEST_COMPLETION RequestCompletion,
		     PVOID RequestContext)
{
	struct ndk_connector *c = to_ndk_connector(pNdkConnector);
	NTSTATUS status = STATUS_SUCCESS;

	pthread_mutex_lock(&c->lock);
	switch (c->state) {
	case NDK_CONN_ESTABLISHED:
	case NDK_CONN_RTR_SENT:
		/* Graceful: FIN, then wait for the peer's (NDK_FN_DISCONNECT). */
		shutdown(c->fd, SHUT_WR);
		ndk_req_pend(&c->disconnect_req, &c->obj, RequestCompletion,
			     RequestContext);
		conn_set_state(c, NDK_CONN_DISCONNECTING);
		conn_arm_timer(c, CONN_TIMER_DISCONNECT, ndk_cm_timeout_ms());
		conn_watch(c, EPOLLIN);
		status = STATUS_PENDING;
		break;
	case NDK_CONN_PEER_CLOSED:
		/* The peer is gone already: finish at once, flushing. */
		conn_qp_disconnected(c, true);
		conn_drop_socket(c);
		conn_set_state(c, NDK_CONN_CLOSED);
		c->fail = STATUS_CONNECTION_INVALID;
		break;
	default:
		status = STATUS_CONNECTION_INVALID;
		break;
	}
	pthread_mutex_unlock(&c->lock);
	return status;
}

static const NDK_CONNECTOR_DISPATCH connector_dispatch = {
	.NdkCloseConnector = ndk_close_object,
	.NdkQueryExtension = ndk_query_extension,
	.NdkConnect = connector_connect,
	.NdkConnectWithSharedEndpoint = connector_connect_sep,
	.NdkCompleteConnect = connector_complete_connect,
	.NdkAccept = connector_accept,
	.NdkReject = connector_reject,
	.NdkGetConnectionData = connector_get_connection_data,
	.NdkGetLocalAddress = connector_get_local_address,
	.NdkGetPeerAddress = connector_get_peer_address,
	.NdkDisconnect = connector_disconnect,
	.NdkCompleteConnectEx = connector_complete_connect_ex,
	.NdkAcceptEx = connector_accept_ex,
};

/* ------------------------------------------------------------------ */
/* Object lifetime                                                    */

/*
 * Close in any state: abandon a connect in progress at once, disconnect
 * an established connection (flushing its QP), and complete every pending
 * request before the close completes (NDKPI Object Lifetime
 * Requirements).
 */
static void connector_close_begin(struct ndk_obj *obj)
{
	struct ndk_connector *c = container_of(obj, struct ndk_connector, obj);

	pthread_mutex_lock(&c->lock);
	if (conn_state_listed(c->state) || c->state == NDK_CONN_DISCONNECTING)
		conn_qp_disconnected(c, true);
	else
		conn_qp_failed(c);
	ndk_req_complete(&c->connect_req, STATUS_CANCELLED);
	ndk_req_complete(&c->accept_req, STATUS_CANCELLED);
	ndk_req_complete(&c->disconnect_req, STATUS_CANCELLED);
	if (!conn_state_ended(c->state) && c->state != NDK_CONN_IDLE)
		conn_set_state(c, NDK_CONN_CLOSED);
	conn_stop_timer(c);
	/*
	 * A timer function may already be waiting for c->lock: unless the
	 * connector never started a connection, let the engine pass first.
	 */
	if (c->fd >= 0)
		conn_drop_socket(c);
	else if (c->used && !on_engine(c))
		conn_sync_with_engine(c);
	pthread_mutex_unlock(&c->lock);
}

static void connector_close_end(struct ndk_obj *obj)
{
	struct ndk_connector *c = container_of(obj, struct ndk_connector, obj);

	if (c->passive)
		ndk_connector_untrack(c);
	/* The timer cannot be armed: close_begin stopped it and no end
	 * state arms it. The socket is gone (teardown ran). */
	if (c->tuple_registered)
		ndk_tuple_unregister((struct sockaddr *)&c->local,
				     (struct sockaddr *)&c->peer);
	c->tuple_registered = false;
	if (c->ep)
		ndk_endpoint_put(c->ep);
	c->ep = NULL;
}

static void connector_destroy(struct ndk_obj *obj)
{
	struct ndk_connector *c = container_of(obj, struct ndk_connector, obj);

	if (c->fd >= 0)
		close(c->fd);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

static const struct ndk_obj_ops connector_ops = {
	.type = NdkObjectTypeConnector,
	.name = "connector",
	.close_begin = connector_close_begin,
	.close_end = connector_close_end,
	.destroy = connector_destroy,
};

static struct ndk_connector *connector_alloc(void)
{
	struct ndk_connector *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	pthread_mutex_init(&c->lock, NULL);
	list_init(&c->lentry);
	/* Initialised once: re-initialising a queued item corrupts the
	 * engine's queue. */
	ndk_work_init(&c->teardown_work, conn_drop_work_fn);
	ndk_work_init(&c->disc_work, disc_work_fn);
	ndk_work_init(&c->event_work, event_work_fn);
	c->fd = -1;
	c->reg_slot = -1;
	c->state = NDK_CONN_IDLE;
	ndk_timer_init(&c->timer, conn_timer_fn);
	return c;
}

NTSTATUS ndk_create_connector(NDK_ADAPTER *pNdkAdapter,
			      NDK_FN_CREATE_COMPLETION CreateCompletion,
			      PVOID RequestContext,
			      NDK_CONNECTOR **ppNdkConnector)
{
	struct ndk_adapter *ad = to_ndk_adapter(pNdkAdapter);
	struct ndk_obj *antes[] = { &ad->obj };
	struct ndk_connector *c;
	NTSTATUS status;

	if (!ppNdkConnector)
		return STATUS_INVALID_PARAMETER;
	c = connector_alloc();
	if (!c)
		return STATUS_INSUFFICIENT_RESOURCES;
	status = ndk_obj_setup(&c->obj, ad, &connector_ops, &connector_dispatch,
			       antes, 1);
	if (status)
		return status;
	*ppNdkConnector = &c->obj.pub.connector;
	return STATUS_SUCCESS;
}

int ndk_connector_accepted(struct ndk_listener *l, int fd)
{
	struct ndk_adapter *ad = l->obj.adapter;
	struct ndk_obj *antes[] = { &ad->obj, &l->obj };
	struct ndk_connector *c;
	static const int one = 1;
	socklen_t len;

	c = connector_alloc();
	if (!c) {
		close(fd);
		return -ENOMEM;
	}
	c->passive = true;
	c->listener = l;
	if (ndk_obj_setup(&c->obj, ad, &connector_ops, &connector_dispatch,
			  antes, 2)) {
		close(fd);
		return -ESHUTDOWN;
	}
	pthread_mutex_lock(&c->lock);
	c->fd = fd;
	/* An accepted connector holds the listener's endpoint (NDKPI
	 * Listeners, Connectors, and Endpoints). */
	pthread_mutex_lock(&l->lock);
	c->ep = l->ep;
	if (c->ep)
		ndk_endpoint_get(c->ep);
	pthread_mutex_unlock(&l->lock);
	len = sizeof(c->local);
	getsockname(fd, (struct sockaddr *)&c->local, &len);
	len = sizeof(c->peer);
	getpeername(fd, (struct sockaddr *)&c->peer, &len);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	c->tracked = true;
	ndk_listener_track(l, &c->lentry);
	conn_set_state(c, NDK_CONN_AWAIT_REQUEST);
	/* siw too drops an initiator that stays silent this long. */
	conn_arm_timer(c, CONN_TIMER_REQUEST, ndk_cm_timeout_ms());
	if (conn_watch(c, EPOLLIN)) {
		pthread_mutex_unlock(&c->lock);
		ndk_obj_close_internal(&c->obj);
		return -ENOMEM;
	}
	pthread_mutex_unlock(&c->lock);
	return 0;
}
