/* SPDX-License-Identifier: MIT */
/*
 * NDK connector: one connection, driven through the NDK three-step
 * handshake mapped onto MPA v2 peer-to-peer mode (DESIGN.md section 3):
 *
 *   active                          wire                      passive
 *   NdkConnect         TCP connect, MPA Request  ->          ConnectEvent
 *                                                <- MPA Reply  NdkAccept(Ex)
 *   Connect completes
 *   NdkCompleteConnect   RTR (zero-length Write or Read) ->
 *                                                       Accept completes
 *
 * Threads: the engine thread does every socket read and runs timers;
 * consumer calls write the (small) MPA frames directly on the non-blocking
 * socket under lock, so no consumer call ever waits for the engine.
 * lock protects everything below it. It is never held across a consumer
 * callback; requests complete through ndk_req (always on the engine).
 * Lock order: connector lock, then listener lock, then QP lock.
 */
#ifndef NDK_CM_CONNECTOR_H
#define NDK_CM_CONNECTOR_H

#include <pthread.h>
#include <stdbool.h>
#include <sys/socket.h>
#include "core/list.h"
#include "front/object.h"
#include "engine/engine.h"
#include "iwarp/mpa.h"

struct ndk_endpoint;
struct ndk_listener;
struct ndk_shared_endpoint;
struct ndk_qp;

/*
 * Every phase of a connection is a state; conn_set_state() is the one
 * setter and checks the transition table in connector.c.
 */
enum ndk_conn_state {
	NDK_CONN_IDLE, /* created by NdkCreateConnector, or Connect failed inline */
	/* Active side. */
	NDK_CONN_TCP_CONNECTING, /* connect() in progress, Request queued */
	NDK_CONN_AWAIT_REPLY, /* Request sent, waiting for the MPA Reply */
	NDK_CONN_REPLIED, /* Connect completed: waiting for CompleteConnect */
	NDK_CONN_RTR_SENT, /* established, Write RTR out: nudge due if silent */
	/* Passive side. */
	NDK_CONN_AWAIT_REQUEST, /* TCP accepted, reading the MPA Request */
	NDK_CONN_REQUESTED, /* ConnectEvent raised: waiting for Accept/Reject */
	NDK_CONN_AWAIT_RTR, /* P2P: Reply sent, waiting for the initiator's RTR */
	NDK_CONN_SENDING_REPLY, /* non-P2P: Reply handed to the socket */
	NDK_CONN_ACCEPT_GRACE, /* non-P2P: Reply out, brief wait for an FPDU */
	/* Both sides. */
	NDK_CONN_ESTABLISHED,
	NDK_CONN_PEER_CLOSED, /* peer disconnected; DisconnectEvent raised */
	NDK_CONN_DISCONNECTING, /* NdkDisconnect: FIN sent, awaiting peer's */
	/* Ends: no TCP connection; fail says why. */
	NDK_CONN_FAILED, /* the Connect or Accept request failed with fail */
	NDK_CONN_ABANDONED, /* ended between handshake steps: next call says */
	NDK_CONN_CLOSED, /* disconnected, or the connector was closed */
	NDK_CONN_STATE_COUNT
};

/*
 * Why the connector's one timer is armed (conn_arm_timer()); each purpose
 * belongs to the states listed in conn_timer_states[].
 */
enum conn_timer_purpose {
	CONN_TIMER_NONE,
	CONN_TIMER_CONNECT, /* TCP connect and MPA Reply: NDK_CM_TIMEOUT_MS */
	CONN_TIMER_COMPLETE_CONNECT, /* REPLIED: twice NDK_CM_TIMEOUT_MS */
	CONN_TIMER_REQUEST, /* AWAIT_REQUEST: NDK_CM_TIMEOUT_MS */
	CONN_TIMER_ACCEPT, /* Reply to RTR or first FPDU: NDK_CM_TIMEOUT_MS */
	CONN_TIMER_ACCEPT_GRACE, /* NDK_ACCEPT_GRACE_MS */
	CONN_TIMER_RTR_NUDGE, /* NDK_RTR_NUDGE_MS */
	CONN_TIMER_DISCONNECT, /* FIN to the peer's FIN: NDK_CM_TIMEOUT_MS */
	CONN_TIMER_PURPOSE_COUNT
};

struct ndk_connector {
	struct ndk_obj obj;
	pthread_mutex_t lock;
	enum ndk_conn_state state;
	bool passive;
	int fd;
	struct ndk_io io;
	bool io_added;
	struct ndk_timer timer;
	enum conn_timer_purpose timer_purpose; /* NONE when not armed */
	uint64_t timer_deadline_ns; /* a fire before it is a stale one */
	bool used; /* a timer was ever armed: closes sync with the engine */
	/* Active P2P side, RTR_SENT: what the peer had sent (TCP bytes) when
	 * our RTR went, and whether that is known (NDK_RTR_NUDGE_MS). */
	bool nudge_mark_ok;
	uint64_t nudge_mark;
	NTSTATUS fail; /* what the next call reports once FAILED/ABANDONED */

	/* Local endpoint reference: own (NdkConnect), shared or listener's. */
	struct ndk_endpoint *ep;
	struct ndk_listener *listener; /* passive side */
	struct ndk_shared_endpoint *sep;
	struct ndk_qp *qp;
	/* Known on the passive side, and on the active one once NdkConnect
	 * passed its inline checks (any state but IDLE). */
	struct sockaddr_storage local, peer;
	bool tuple_registered;
	int reg_slot; /* OID_NDK_CONNECTIONS entry while listed, else -1 */

	/* MPA negotiation (RFC 5044 7.1, RFC 6581). */
	uint8_t rx[MPA_RR_FRAME_MAX + 1]; /* + 1: a byte behind a frame */
	size_t rx_len;
	uint8_t tx[MPA_RR_FRAME_MAX];
	size_t tx_len, tx_off;
	bool crc, p2p, peer_enhanced;
	/* The peer's MPA revision, 0 until its Request or Reply was read:
	 * from then on its private data and limits below are known. */
	uint8_t peer_rev;
	unsigned int rtr; /* offered (active) or chosen (both, once known) */
	struct mpa_read_limits req; /* own request, capped to the adapter */
	struct mpa_read_limits peer_limits; /* the peer's IRD/ORD block */
	struct mpa_read_limits eff; /* effective, once negotiated */
	uint8_t peer_pd[MPA_PRIVATE_DATA_MAX];
	uint16_t peer_pd_len;

	/* Requests that pend, and the disconnect event (raised once: on the
	 * one move from an established state to PEER_CLOSED). */
	struct ndk_req connect_req, accept_req, complete_req, disconnect_req;
	NDK_FN_DISCONNECT_EVENT_CALLBACK *disc_cb;
	NDK_FN_DISCONNECT_EVENT_CALLBACK_EX *disc_cb_ex;
	PVOID disc_ctx;
	struct ndk_work disc_work;
	struct ndk_work event_work; /* passive: ConnectEvent delivery */
	struct ndk_work teardown_work;
	struct list_head lentry; /* listener->undelivered, under its lock */
	bool tracked;
};

static inline struct ndk_connector *ndk_connector_of_lentry(struct list_head *e)
{
	return container_of(e, struct ndk_connector, lentry);
}

/* Removes a passive connector from its listener's undelivered list. */
void ndk_connector_untrack(struct ndk_connector *c);

static inline struct ndk_connector *to_ndk_connector(NDK_CONNECTOR *c)
{
	return container_of(c, struct ndk_connector, obj.pub.connector);
}

const char *ndk_conn_state_name(enum ndk_conn_state state);

/*
 * Passive side: a connector for a TCP connection the listener accepted.
 * It reads the MPA Request and then raises the listener's ConnectEvent
 * (or refuses the request). Engine thread. Takes ownership of fd.
 */
int ndk_connector_accepted(struct ndk_listener *l, int fd);

/* Timeouts, from the environment (README: Configuration). */
uint64_t ndk_cm_timeout_ms(void);
/* NDK_ACCEPT_GRACE_MS: how long a non-P2P Accept waits after its Reply
 * for the initiator's first FPDU before it completes anyway. */
uint64_t ndk_accept_grace_ms(void);
/* NDK_RTR_NUDGE_MS: delay of the RTR nudge, 0 when it is off. */
uint64_t ndk_rtr_nudge_ms(void);

#endif /* NDK_CM_CONNECTOR_H */
