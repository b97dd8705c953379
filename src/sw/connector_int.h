/* SPDX-License-Identifier: MIT */
/*
 * What the connector's files share: struct sw_connector, its states and
 * timer purposes, and the functions one phase file calls in another.
 *
 *   connector.c		object, dispatch table, state table and setter,
 *			endings, the engine's I/O entry point, queries
 *   connector_socket.c	the socket: epoll interest, sends, peeks, teardown
 *   connector_timer.c	the one timer and its purposes
 *   connector_active.c	NdkConnect(WithSharedEndpoint), the Reply,
 *			NdkCompleteConnect(Ex)
 *   connector_passive.c	creation from a Request the listener read,
 *			NdkAccept(Ex), NdkReject, the RTR wait, the grace
 *   connector_established.c the established connection's readiness, the RTR
 *			nudge, NdkDisconnect and the disconnect event
 *   connector_qp.c	every call into the QP and its data path
 *
 * Threads: the engine thread does every socket read and runs timers;
 * consumer calls write the (small) MPA frames directly on the non-blocking
 * socket under lock, so no consumer call ever waits for the engine.
 * c->conn.lock protects the whole struct. It is never held across a consumer
 * callback; requests complete through ndk_req (always on the engine).
 * Lock order: core/lock.h (the connector's lock is the outermost).
 */
#ifndef SW_CONNECTOR_INT_H
#define SW_CONNECTOR_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <sys/socket.h>
#include "core/lock.h"
#include "core/list.h"
#include "front/connector.h"
#include "front/object.h"
#include "engine/engine.h"
#include "sw/mpa_io.h"
#include "iwarp/mpa.h"

struct ndk_adapter;
struct sw_backlog;
struct ndk_endpoint;
struct ndk_shared_endpoint;
struct sw_qp;

/*
 * Every phase of a connection is a state; conn_set_state() is the one
 * setter and checks the transition table in connector.c.
 */
enum sw_conn_state {
	SW_CONN_IDLE, /* created by NdkCreateConnector, or Connect failed inline */
	/* Active side. */
	SW_CONN_TCP_CONNECTING, /* connect() in progress, Request queued */
	SW_CONN_AWAIT_REPLY, /* Request sent, waiting for the MPA Reply */
	SW_CONN_REPLIED, /* Connect completed: waiting for CompleteConnect */
	SW_CONN_RTR_SENT, /* established, Write RTR out: nudge due if silent */
	/* Passive side: the listener read the Request and created us. */
	SW_CONN_REQUESTED, /* ConnectEvent raised: waiting for Accept/Reject */
	SW_CONN_AWAIT_RTR, /* P2P: Reply sent, waiting for the initiator's RTR */
	SW_CONN_SENDING_REPLY, /* non-P2P: Reply handed to the socket */
	SW_CONN_ACCEPT_GRACE, /* non-P2P: Reply out, brief wait for an FPDU */
	/* Both sides. */
	SW_CONN_ESTABLISHED,
	SW_CONN_PEER_CLOSED, /* peer disconnected; DisconnectEvent raised */
	SW_CONN_DISCONNECTING, /* NdkDisconnect: FIN sent, awaiting peer's */
	/* Ends: no TCP connection; fail says why. */
	SW_CONN_FAILED, /* the Connect or Accept request failed with fail */
	SW_CONN_ABANDONED, /* ended between handshake steps: next call says */
	SW_CONN_CLOSED, /* disconnected, or the connector was closed */
	SW_CONN_STATE_COUNT
};

/*
 * Why the connector's one timer is armed (conn_arm_timer()); each purpose
 * belongs to the states listed in conn_timer_states[].
 */
enum conn_timer_purpose {
	CONN_TIMER_NONE,
	CONN_TIMER_CONNECT, /* TCP connect and MPA Reply: NDK_CM_TIMEOUT_MS */
	CONN_TIMER_COMPLETE_CONNECT, /* REPLIED: twice NDK_CM_TIMEOUT_MS */
	CONN_TIMER_ACCEPT, /* Reply to RTR or first FPDU: NDK_CM_TIMEOUT_MS */
	CONN_TIMER_ACCEPT_GRACE, /* NDK_ACCEPT_GRACE_MS */
	CONN_TIMER_RTR_NUDGE, /* NDK_RTR_NUDGE_MS */
	CONN_TIMER_DISCONNECT, /* FIN to the peer's FIN: NDK_CM_TIMEOUT_MS */
	CONN_TIMER_PURPOSE_COUNT
};

struct sw_connector {
	/* First: the consumer-visible part (front/connector.h): the lock,
	 * the NDK phase, the side, fail, the addresses, the peer's private
	 * data and the effective read limits. */
	struct ndk_conn conn;
	enum sw_conn_state state;
	int fd;
	struct ndk_io io;
	bool io_added;
	struct ndk_timer timer;
	enum conn_timer_purpose timer_purpose; /* NONE when not armed */
	uint64_t timer_deadline_ns; /* a fire before it is a stale one */
	/* The engine may run code for this connector (a timer was armed,
	 * or the data path may report the end of its stream): a close off
	 * the engine syncs with it. */
	bool engine_used;

	/* Passive side, REQUESTED: the listener's backlog slot we hold. */
	struct sw_backlog *backlog;
	struct ndk_shared_endpoint *sep;
	struct sw_qp *qp;
	int reg_slot; /* OID_NDK_CONNECTIONS entry while listed, else -1 */

	/* MPA negotiation (RFC 5044 7.1, RFC 6581). */
	struct sw_mpa_rx rx; /* the Reply (active), the RTR (passive) */
	uint8_t tx[MPA_RR_FRAME_MAX];
	size_t tx_len, tx_off;
	bool crc, p2p, peer_enhanced;
	/* We send FPDUs larger than the MSS: both sides set
	 * MPA_FLAG_LARGE_FPDU (docs/wire.md, Large FPDUs). */
	bool large_fpdu;
	/* The peer's MPA revision, 0 until its Request or Reply was read:
	 * from then on its private data and limits below are known. */
	uint8_t peer_rev;
	unsigned int rtr; /* offered (active) or chosen (both, once known) */
	struct mpa_read_limits req; /* own request, capped to the adapter */
	struct mpa_read_limits peer_limits; /* the peer's IRD/ORD block */

	struct ndk_work teardown_work;
};

static inline struct sw_connector *to_sw_connector(NDK_CONNECTOR *c)
{
	return container_of(c, struct sw_connector, conn.obj.pub.connector);
}

static inline struct ndk_engine *conn_engine(struct sw_connector *c)
{
	return c->conn.obj.domain->engine;
}

static inline bool conn_on_engine(struct sw_connector *c)
{
	return ndk_engine_on_thread(conn_engine(c));
}

/* ---- States (connector.c) ----------------------------------------- */

const char *sw_conn_state_name(enum sw_conn_state state);

/* The connection is up: the data path owns the stream. */
static inline bool conn_state_up(enum sw_conn_state s)
{
	return s == SW_CONN_ESTABLISHED || s == SW_CONN_RTR_SENT;
}

/* No TCP connection any more, for good. */
static inline bool conn_state_ended(enum sw_conn_state s)
{
	return s == SW_CONN_FAILED || s == SW_CONN_ABANDONED ||
	       s == SW_CONN_CLOSED;
}

#ifdef __FILE_NAME__
#define SW_CM_FILE __FILE_NAME__
#else
#define SW_CM_FILE __FILE__
#endif
/* The one state setter; c->conn.lock held. */
void conn_set_state_at(struct sw_connector *c, enum sw_conn_state to,
		       const char *file, int line);
#define conn_set_state(c, s) conn_set_state_at(c, s, SW_CM_FILE, __LINE__)

/* ---- Endings (connector.c), c->conn.lock held --------------------------- */

/* The pending Connect or Accept fails with status: FAILED. */
void conn_connect_failed(struct sw_connector *c, NTSTATUS status);
void conn_accept_failed(struct sw_connector *c, NTSTATUS status);
/* Ended between handshake steps: ABANDONED, the next call says status. */
void conn_abandon(struct sw_connector *c, NTSTATUS status);

/* ---- Settings shared by both sides (connector.c) -------------------- */

/*
 * NDK_MPA_CRC: CRC is used in both directions if either side asks
 * (RFC 5044 7.1). "1" (default): we ask as initiator and follow the
 * initiator as responder, so a peer that refuses unrequested CRC (siw's
 * mpa_crc_strict) still connects; "required": we always ask; "0": never.
 */
enum cm_crc_mode { CRC_NEVER, CRC_INITIATOR, CRC_REQUIRED };
enum cm_crc_mode cm_crc_mode(void);
/* NDK_MPA_LARGE_FPDU: whether we offer and accept MPA_FLAG_LARGE_FPDU. */
bool cm_large_fpdu(void);

struct mpa_read_limits conn_capped_limits(struct ndk_adapter *ad, ULONG ird,
					  ULONG ord);

/* ---- Object (connector.c) ------------------------------------------ */

/* A connector with nothing started; fields may be filled before setup. */
struct sw_connector *conn_alloc(void);
/* Registers c with its adapter, linked to antes (see ndk_obj_setup). */
NTSTATUS conn_obj_setup(struct sw_connector *c, struct ndk_adapter *ad,
			struct ndk_obj *const antes[], unsigned int n);
/* The engine's handler of the socket: dispatches on the state. */
void conn_io_fn(struct ndk_io *io, uint32_t events);

/* ---- Socket (connector_socket.c), c->conn.lock held ---------------------- */

/* Sets the epoll interest, registering the fd the first time. */
int conn_watch(struct sw_connector *c, uint32_t events);
/* Stops every wake-up for the fd until it is closed. */
void conn_unwatch(struct sw_connector *c);
/* Lets the engine pass before the teardown goes on (off the engine). */
void conn_sync_with_engine(struct sw_connector *c);
/* Ends the TCP connection (closes the fd, on the engine thread). */
void conn_drop_socket(struct sw_connector *c);
void conn_drop_work_fn(struct ndk_work *w);
/* Sends the rest of c->tx: 0, -EAGAIN (EPOLLOUT finishes it) or -errno. */
int conn_flush_tx(struct sw_connector *c);
/* Queues len bytes of c->tx and starts sending them, as conn_flush_tx. */
int conn_send(struct sw_connector *c, size_t len);
/* 0 nothing queued, 1 a byte is queued, -1 the peer closed or reset. */
int conn_peek(struct sw_connector *c);
bool conn_peer_gone(struct sw_connector *c);
/* The peer spoke or left where it must wait for our next step: the
 * attempt is abandoned; true if so. */
bool conn_abandon_if_peer_acted(struct sw_connector *c);

/* ---- Timer (connector_timer.c), c->conn.lock held ------------------------ */

/* Arms the one timer for purpose (a purpose of the current state). */
void conn_arm_timer(struct sw_connector *c, enum conn_timer_purpose purpose,
		    uint64_t ms);
void conn_stop_timer(struct sw_connector *c);
/* Stops the timer unless its purpose belongs to state to as well. */
void conn_timer_enter_state(struct sw_connector *c, enum sw_conn_state to);
void conn_timer_fn(struct ndk_timer *t);

/* ---- The connection operations (front/connector.h), c->lock held ---- */

NTSTATUS sw_conn_connect(struct ndk_conn *c, const struct ndk_conn_connect *a);
NTSTATUS sw_conn_complete_connect(struct ndk_conn *c);
NTSTATUS sw_conn_accept(struct ndk_conn *c, const struct ndk_conn_accept *a);
NTSTATUS sw_conn_reject(struct ndk_conn *c, const void *pd, ULONG pd_len);
NTSTATUS sw_conn_disconnect(struct ndk_conn *c, NDK_FN_REQUEST_COMPLETION cb,
			    PVOID ctx);

/* ---- Active side (connector_active.c) ------------------------------- */

/* TCP_CONNECTING: the connect() finished, or failed. */
void conn_tcp_connect_io(struct sw_connector *c, uint32_t events);
/* AWAIT_REPLY: reads the MPA Reply. */
void conn_read_reply(struct sw_connector *c);

/* ---- Passive side (connector_passive.c) ----------------------------- */

/* AWAIT_RTR: reads the initiator's RTR. */
void conn_read_rtr(struct sw_connector *c);
/* SENDING_REPLY: the non-P2P Reply went out. */
void conn_reply_out(struct sw_connector *c);
/* ACCEPT_GRACE: woken by the socket, or the grace is over. */
void conn_grace_io(struct sw_connector *c);
void conn_grace_over(struct sw_connector *c);

/* ---- The QP and its data path (connector_qp.c), c->conn.lock held -------- */

/* NdkConnect/NdkAccept bind qp (IDLE -> CONNECTING) and link it. */
NTSTATUS conn_bind_qp(struct sw_connector *c, struct sw_qp *qp);
/* Undoes conn_bind_qp after an inline failure. */
void conn_unbind_qp(struct sw_connector *c);
/* The QP's side of a connection that never got established. */
void conn_qp_failed(struct sw_connector *c);
/* The established connection is over (flush: NdkDisconnect or close). */
void conn_qp_disconnected(struct sw_connector *c, bool flush);
/* Hands the socket to the QP's data path (c->fd is -1 after); 0 or
 * -errno, and the socket is still ours. */
int conn_attach_dp(struct sw_connector *c);
/* One more Write RTR between FPDUs; false if none went. */
bool conn_dp_nudge(struct sw_connector *c);
/* NdkDisconnect's FIN, sent by the data path that owns the socket. */
void conn_dp_shutdown(struct sw_connector *c);

/* ---- Established (connector_established.c) -------------------------- */

/* ESTABLISHED, RTR_SENT, DISCONNECTING: the data path reports the end of
 * the stream (-EPIPE, -ECONNRESET..., -EPROTO after a Terminate). */
void conn_stream_ended(struct sw_connector *c, int err);
/* RTR_SENT: one more zero-length Write if the peer stayed silent. */
void conn_nudge(struct sw_connector *c);
void conn_disconnect_timed_out(struct sw_connector *c);

#endif /* SW_CONNECTOR_INT_H */
