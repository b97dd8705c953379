/* SPDX-License-Identifier: MIT */
/*
 * NDK connector: connection management over MPA v2 (RFC 5044, RFC 6581)
 * as docs/design.md maps it onto the NDK calls (NDK_FN_CONNECT,
 * NDK_FN_ACCEPT, NDK_FN_COMPLETE_CONNECT...). This file holds the object
 * and its dispatch table, the state table and its one setter, the endings
 * of a connection, and the engine's entry point for the socket; the
 * phases live in connector_active.c, connector_passive.c and
 * connector_established.c (see connector_int.h).
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>
#include "sw/connector.h"
#include "sw/connector_int.h"
#include "sw/backlog.h"
#include "core/config.h"
#include "core/log.h"
#include "front/adapter.h"
#include "front/address.h"
#include "front/conndata.h"
#include "front/endpoint.h"

static const char *const conn_state_names[SW_CONN_STATE_COUNT] = {
	[SW_CONN_IDLE] = "IDLE",
	[SW_CONN_TCP_CONNECTING] = "TCP_CONNECTING",
	[SW_CONN_AWAIT_REPLY] = "AWAIT_REPLY",
	[SW_CONN_REPLIED] = "REPLIED",
	[SW_CONN_RTR_SENT] = "RTR_SENT",
	[SW_CONN_REQUESTED] = "REQUESTED",
	[SW_CONN_AWAIT_RTR] = "AWAIT_RTR",
	[SW_CONN_SENDING_REPLY] = "SENDING_REPLY",
	[SW_CONN_ACCEPT_GRACE] = "ACCEPT_GRACE",
	[SW_CONN_ESTABLISHED] = "ESTABLISHED",
	[SW_CONN_PEER_CLOSED] = "PEER_CLOSED",
	[SW_CONN_DISCONNECTING] = "DISCONNECTING",
	[SW_CONN_FAILED] = "FAILED",
	[SW_CONN_ABANDONED] = "ABANDONED",
	[SW_CONN_CLOSED] = "CLOSED",
};

const char *sw_conn_state_name(enum sw_conn_state state)
{
	if ((unsigned int)state >= SW_CONN_STATE_COUNT)
		return "?";
	return conn_state_names[state];
}

/*
 * The legal transitions: conn_transition_ok[from][to]. Every state but
 * IDLE and the three ends may be closed (NdkCloseConnector); the ends
 * are final.
 */
static const bool conn_transition_ok[SW_CONN_STATE_COUNT]
				    [SW_CONN_STATE_COUNT] = {
	[SW_CONN_IDLE] = {
		[SW_CONN_TCP_CONNECTING] = true,
		[SW_CONN_REQUESTED] = true, /* created for a Request */
	},
	[SW_CONN_TCP_CONNECTING] = {
		[SW_CONN_IDLE] = true, /* connect() failed inline */
		[SW_CONN_AWAIT_REPLY] = true,
		[SW_CONN_FAILED] = true,
		[SW_CONN_CLOSED] = true,
	},
	[SW_CONN_AWAIT_REPLY] = {
		[SW_CONN_REPLIED] = true,
		[SW_CONN_FAILED] = true,
		[SW_CONN_CLOSED] = true,
	},
	[SW_CONN_REPLIED] = {
		[SW_CONN_ESTABLISHED] = true,
		[SW_CONN_RTR_SENT] = true,
		[SW_CONN_ABANDONED] = true,
		[SW_CONN_CLOSED] = true,
	},
	[SW_CONN_RTR_SENT] = {
		[SW_CONN_ESTABLISHED] = true, /* nudged, or no need */
		[SW_CONN_PEER_CLOSED] = true,
		[SW_CONN_DISCONNECTING] = true,
		[SW_CONN_CLOSED] = true,
	},
	[SW_CONN_REQUESTED] = {
		[SW_CONN_AWAIT_RTR] = true,
		[SW_CONN_SENDING_REPLY] = true,
		[SW_CONN_ABANDONED] = true,
		[SW_CONN_CLOSED] = true,
	},
	[SW_CONN_AWAIT_RTR] = {
		[SW_CONN_ESTABLISHED] = true,
		[SW_CONN_FAILED] = true,
		[SW_CONN_CLOSED] = true,
	},
	[SW_CONN_SENDING_REPLY] = {
		[SW_CONN_ACCEPT_GRACE] = true,
		[SW_CONN_ESTABLISHED] = true, /* an FPDU came, or no grace */
		[SW_CONN_FAILED] = true,
		[SW_CONN_CLOSED] = true,
	},
	[SW_CONN_ACCEPT_GRACE] = {
		[SW_CONN_ESTABLISHED] = true,
		[SW_CONN_FAILED] = true,
		[SW_CONN_CLOSED] = true,
	},
	[SW_CONN_ESTABLISHED] = {
		[SW_CONN_PEER_CLOSED] = true,
		[SW_CONN_DISCONNECTING] = true,
		[SW_CONN_CLOSED] = true,
	},
	[SW_CONN_PEER_CLOSED] = {
		[SW_CONN_CLOSED] = true,
	},
	[SW_CONN_DISCONNECTING] = {
		[SW_CONN_CLOSED] = true,
	},
};

uint64_t sw_accept_grace_ms(void)
{
	return ndk_config_u64("NDK_ACCEPT_GRACE_MS", 50, 0, 60000);
}

uint64_t sw_rtr_nudge_ms(void)
{
	/* tests/interop/README.md, bug 1: siw's window is a few ms wide
	 * under TCG; 50 ms is well past it and short for a waiting peer. */
	return ndk_config_u64("NDK_RTR_NUDGE_MS", 50, 0, 60000);
}

enum cm_crc_mode cm_crc_mode(void)
{
	const char *v = getenv("NDK_MPA_CRC");

	if (v && !strcmp(v, "required"))
		return CRC_REQUIRED;
	return ndk_config_bool("NDK_MPA_CRC", true) ? CRC_INITIATOR : CRC_NEVER;
}

bool cm_large_fpdu(void)
{
	return ndk_config_bool("NDK_MPA_LARGE_FPDU", true);
}

/* OID_NDK_CONNECTIONS lists a connection from its establishment until the
 * consumer disconnects or closes it (a peer's disconnect leaves it listed
 * until then, as its QP and requests are still there). */
static bool conn_state_listed(enum sw_conn_state s)
{
	return conn_state_up(s) || s == SW_CONN_PEER_CLOSED;
}

static void conn_publish(struct sw_connector *c)
{
	struct ndk_reg_entry e =
		ndk_adapter_reg_entry(c->conn.obj.adapter, NDK_REG_CONNECTION);

	ndk_reg_sockaddr(&e.local, (const struct sockaddr *)&c->conn.local);
	ndk_reg_sockaddr(&e.remote, (const struct sockaddr *)&c->conn.peer);
	c->reg_slot = ndk_reg_publish(&e);
}

/*
 * The one state setter; c->conn.lock held. An illegal transition is a bug:
 * logged, then asserted. Leaving REQUESTED frees the request's slot in
 * the listener's backlog (NdkAccept, NdkReject, or its end).
 */
/* The NDK phase of each state (front/connector.h): the MPA steps inside a
 * Connect or an Accept are one phase each. */
static const enum ndk_conn_phase conn_phase[SW_CONN_STATE_COUNT] = {
	[SW_CONN_IDLE] = NDK_CONN_IDLE,
	[SW_CONN_TCP_CONNECTING] = NDK_CONN_CONNECTING,
	[SW_CONN_AWAIT_REPLY] = NDK_CONN_CONNECTING,
	[SW_CONN_REPLIED] = NDK_CONN_REPLIED,
	[SW_CONN_RTR_SENT] = NDK_CONN_ESTABLISHED,
	[SW_CONN_REQUESTED] = NDK_CONN_REQUESTED,
	[SW_CONN_AWAIT_RTR] = NDK_CONN_ACCEPTING,
	[SW_CONN_SENDING_REPLY] = NDK_CONN_ACCEPTING,
	[SW_CONN_ACCEPT_GRACE] = NDK_CONN_ACCEPTING,
	[SW_CONN_ESTABLISHED] = NDK_CONN_ESTABLISHED,
	[SW_CONN_PEER_CLOSED] = NDK_CONN_PEER_CLOSED,
	[SW_CONN_DISCONNECTING] = NDK_CONN_DISCONNECTING,
	[SW_CONN_FAILED] = NDK_CONN_FAILED,
	[SW_CONN_ABANDONED] = NDK_CONN_ABANDONED,
	[SW_CONN_CLOSED] = NDK_CONN_CLOSED,
};

void conn_set_state_at(struct sw_connector *c, enum sw_conn_state to,
		       const char *file, int line)
{
	enum sw_conn_state from = c->state;
	bool was_listed = conn_state_listed(from);

	NDK_ASSERT_LOCKED(&c->conn.lock);
	if ((unsigned int)to >= SW_CONN_STATE_COUNT ||
	    !conn_transition_ok[from][to]) {
		ndk_err("connector %p: illegal transition %s -> %s (%s:%d)",
			(void *)c, sw_conn_state_name(from),
			sw_conn_state_name(to), file, line);
		assert(!"illegal connector state transition");
		return;
	}
	ndk_dbg("connector %p: %s -> %s (%s:%d)", (void *)c,
		sw_conn_state_name(from), sw_conn_state_name(to), file, line);
	c->state = to;
	ndk_conn_set_phase(&c->conn, conn_phase[to]);
	conn_timer_enter_state(c, to);
	if (!was_listed && conn_state_listed(to)) {
		conn_publish(c);
	} else if (was_listed && !conn_state_listed(to)) {
		ndk_reg_withdraw(c->reg_slot);
		c->reg_slot = -1;
	}
	if (from == SW_CONN_REQUESTED)
		sw_backlog_put(c->backlog);
}

/* ------------------------------------------------------------------ */
/* Endings                                                            */

/*
 * A pending Connect (active) or Accept (passive) fails: the connection is
 * dropped and the request completes with status.
 */
static void conn_attempt_failed(struct sw_connector *c, struct ndk_req *req,
				NTSTATUS status)
{
	ndk_info("connector %p: %s failed in %s: %s", (void *)c,
		 c->conn.passive ? "accept" : "connect",
		 sw_conn_state_name(c->state), NdkStatusName(status));
	conn_stop_timer(c);
	conn_drop_socket(c);
	conn_qp_failed(c);
	conn_set_state(c, SW_CONN_FAILED);
	c->conn.fail = status;
	ndk_adapter_count(c->conn.obj.adapter, NDK_CTR(ConnectFailure), 1);
	ndk_req_complete(req, status);
}

void conn_connect_failed(struct sw_connector *c, NTSTATUS status)
{
	conn_attempt_failed(c, &c->conn.connect_req, status);
}

void conn_accept_failed(struct sw_connector *c, NTSTATUS status)
{
	conn_attempt_failed(c, &c->conn.accept_req, status);
}

/* Between handshake steps the peer vanished or our timer fired: the next
 * consumer call on this connector reports status. */
void conn_abandon(struct sw_connector *c, NTSTATUS status)
{
	conn_stop_timer(c);
	conn_drop_socket(c);
	conn_qp_failed(c);
	ndk_adapter_count(c->conn.obj.adapter, NDK_CTR(ConnectFailure), 1);
	conn_set_state(c, SW_CONN_ABANDONED);
	c->conn.fail = status;
}

/* ------------------------------------------------------------------ */
/* The engine's handler of the socket: one phase function per state   */

void conn_io_fn(struct ndk_io *io, uint32_t events)
{
	struct sw_connector *c = container_of(io, struct sw_connector, io);
	int err;

	ndk_lock(&c->conn.lock);
	/* No socket, or the data path owns it now: a wake-up fetched before
	 * the handoff ends here. */
	if (c->fd < 0)
		goto out;
	if ((events & EPOLLOUT) && c->tx_len && !conn_state_ended(c->state) &&
	    c->state != SW_CONN_TCP_CONNECTING) {
		err = conn_flush_tx(c);
		if (err && err != -EAGAIN)
			events |= EPOLLERR;
		else if (!err)
			conn_watch(c, EPOLLIN);
	}
	switch (c->state) {
	case SW_CONN_TCP_CONNECTING:
		conn_tcp_connect_io(c, events);
		break;
	case SW_CONN_AWAIT_REPLY:
		conn_read_reply(c);
		break;
	case SW_CONN_REPLIED:
	case SW_CONN_REQUESTED:
		/*
		 * The other side gave up between the handshake steps, or
		 * sent data before our next step (a protocol error, which
		 * siw also answers by dropping the connection).
		 */
		conn_abandon(c, STATUS_CONNECTION_ABORTED);
		break;
	case SW_CONN_AWAIT_RTR:
		conn_read_rtr(c);
		break;
	case SW_CONN_SENDING_REPLY:
		conn_reply_out(c);
		break;
	case SW_CONN_ACCEPT_GRACE:
		conn_grace_io(c);
		break;
	default:
		conn_unwatch(c);
		break;
	}
out:
	ndk_unlock(&c->conn.lock);
}

/* ------------------------------------------------------------------ */
/* Checks and queries shared by both sides                            */

struct mpa_read_limits conn_capped_limits(struct ndk_adapter *ad, ULONG ird,
					  ULONG ord)
{
	struct mpa_read_limits l = {
		MIN(ird, ad->info.MaxInboundReadLimit),
		MIN(ord, ad->info.MaxOutboundReadLimit),
	};

	return l;
}

/* What the software connector does once front/connector.c checked a
 * call (front/connector.h). */
const struct ndk_conn_ops sw_conn_ops = {
	.connect = sw_conn_connect,
	.complete_connect = sw_conn_complete_connect,
	.accept = sw_conn_accept,
	.reject = sw_conn_reject,
	.disconnect = sw_conn_disconnect,
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
	struct sw_connector *c =
		container_of(obj, struct sw_connector, conn.obj);

	ndk_lock(&c->conn.lock);
	if (conn_state_listed(c->state) || c->state == SW_CONN_DISCONNECTING)
		conn_qp_disconnected(c, true);
	else
		conn_qp_failed(c);
	ndk_conn_cancel_requests(&c->conn);
	if (!conn_state_ended(c->state) && c->state != SW_CONN_IDLE)
		conn_set_state(c, SW_CONN_CLOSED);
	conn_stop_timer(c);
	/*
	 * A timer function may already be waiting for c->conn.lock: unless the
	 * connector never started a connection, let the engine pass first.
	 */
	if (c->fd >= 0)
		conn_drop_socket(c);
	else if (c->engine_used && !conn_on_engine(c))
		conn_sync_with_engine(c);
	ndk_unlock(&c->conn.lock);
}

static void connector_close_end(struct ndk_obj *obj)
{
	struct sw_connector *c =
		container_of(obj, struct sw_connector, conn.obj);

	/* The timer cannot be armed: close_begin stopped it and no end
	 * state arms it. The socket is gone (teardown ran). */
	ndk_conn_release_endpoint(&c->conn);
}

static void connector_destroy(struct ndk_obj *obj)
{
	struct sw_connector *c =
		container_of(obj, struct sw_connector, conn.obj);

	if (c->fd >= 0)
		close(c->fd);
	ndk_conn_fini(&c->conn);
	free(c);
}

static const struct ndk_obj_ops connector_ops = {
	.type = NdkObjectTypeConnector,
	.name = "connector",
	.close_begin = connector_close_begin,
	.close_end = connector_close_end,
	.destroy = connector_destroy,
};

struct sw_connector *conn_alloc(void)
{
	struct sw_connector *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	ndk_conn_init(&c->conn, false);
	/* Initialised once: re-initialising a queued item corrupts the
	 * engine's queue. */
	ndk_work_init(&c->teardown_work, conn_drop_work_fn);
	c->fd = -1;
	c->reg_slot = -1;
	c->state = SW_CONN_IDLE;
	ndk_timer_init(&c->timer, conn_timer_fn);
	return c;
}

NTSTATUS conn_obj_setup(struct sw_connector *c, struct ndk_adapter *ad,
			struct ndk_obj *const antes[], unsigned int n)
{
	return ndk_obj_setup(&c->conn.obj, ad, &connector_ops,
			     &ndk_conn_dispatch, antes, n);
}

NTSTATUS sw_create_connector(NDK_ADAPTER *pNdkAdapter,
			     NDK_FN_CREATE_COMPLETION CreateCompletion,
			     PVOID RequestContext,
			     NDK_CONNECTOR **ppNdkConnector)
{
	struct ndk_adapter *ad = to_ndk_adapter(pNdkAdapter);
	struct ndk_obj *antes[] = { &ad->obj };
	struct sw_connector *c;
	NTSTATUS status;

	if (!ppNdkConnector)
		return STATUS_INVALID_PARAMETER;
	c = conn_alloc();
	if (!c)
		return STATUS_INSUFFICIENT_RESOURCES;
	status = conn_obj_setup(c, ad, antes, 1);
	if (status)
		return status;
	*ppNdkConnector = &c->conn.obj.pub.connector;
	return STATUS_SUCCESS;
}
