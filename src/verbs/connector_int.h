/* SPDX-License-Identifier: MIT */
/*
 * The verbs connector's insides, shared by connector.c (the state machine,
 * events, disconnect, queries, lifetime), connector_active.c (NdkConnect,
 * NdkCompleteConnect) and connector_passive.c (NdkAccept, NdkReject).
 * docs/verbs.md, Connection management.
 */
#ifndef NDK_VERBS_CONNECTOR_INT_H
#define NDK_VERBS_CONNECTOR_INT_H

#include "core/config.h"
#include "core/log.h"
#include "core/status.h"
#include "front/adapter.h"
#include "front/address.h"
#include "front/conndata.h"
#include "front/connector.h"
#include "front/shared_endpoint.h"
#include "oid/registry.h"
#include "front/endpoint.h"
#include "verbs/cm_event.h"
#include "verbs/qp.h"

enum vconn_state {
	VCONN_IDLE, /* created, or a Connect that failed inline */
	/* Active side. */
	VCONN_RESOLVING_ADDR, /* rdma_resolve_addr issued */
	VCONN_RESOLVING_ROUTE, /* rdma_resolve_route issued */
	VCONN_CONNECTING, /* rdma_connect issued */
	VCONN_REPLIED, /* Connect completed: waiting for CompleteConnect */
	/* Passive side. */
	VCONN_REQUESTED, /* ConnectEvent raised: waiting for Accept/Reject */
	VCONN_ACCEPTING, /* rdma_accept issued: waiting for ESTABLISHED */
	/* Both sides. */
	VCONN_ESTABLISHED,
	/* iWARP: the stream ended and the QP is not known broken; the
	 * device's error event may yet come (vconn_peer_disconnected). */
	VCONN_PEER_CLOSING,
	VCONN_PEER_CLOSED, /* the peer disconnected; DisconnectEvent raised */
	VCONN_DISCONNECTING, /* NdkDisconnect: waiting for DISCONNECTED */
	/* Ends; fail says what the next call reports. */
	VCONN_FAILED, /* the Connect or Accept request failed */
	VCONN_ABANDONED, /* ended between handshake steps */
	VCONN_CLOSED, /* disconnected, rejected, or the connector closed */
	VCONN_STATE_COUNT
};

/*
 * Why the connector's one timer is armed. Each purpose belongs to the
 * states of one phase (vconn_timer_states in connector.c); the state
 * setter stops a timer whose phase is left, so a fire never acts in
 * another phase.
 */
enum vconn_timer {
	VCONN_TIMER_NONE,
	VCONN_TIMER_CONNECT, /* NDK_CM_TIMEOUT_MS for the whole Connect */
	VCONN_TIMER_COMPLETE, /* twice that for the consumer's CompleteConnect */
	VCONN_TIMER_ACCEPT, /* NDK_CM_TIMEOUT_MS for the initiator's RTU */
	VCONN_TIMER_DISCONNECT, /* NDK_CM_TIMEOUT_MS for NdkDisconnect */
	VCONN_TIMER_PEER, /* iWARP: the peer's liveness, established */
	VCONN_TIMER_CLOSE_GRACE, /* iWARP: for a QP error after the end */
	VCONN_TIMER_COUNT
};

struct ndk_vconn {
	/* First: the consumer-visible part (front/connector.h): the lock,
	 * the NDK phase, the side, fail, the addresses, the peer's private
	 * data and the effective read limits. */
	struct ndk_conn conn;
	struct ndk_vcm_ref ref; /* the id's context */
	enum vconn_state state;
	struct rdma_cm_id *id;
	/* rdma_connect runs on a thread of its own (it blocks on iWARP for
	 * as long as the TCP connect takes): meanwhile the id is not
	 * destroyed but left to that thread (connector_active.c). */
	struct vconn_call *call;

	/* rdma_resolve_addr's limit is the kernel's neighbour time, below
	 * the attempt's: its ETIMEDOUT means no answer to ARP or ND. */
	bool resolve_neigh_bound;
	bool shared; /* ep is a shared endpoint's */
	bool sep_linked; /* the shared endpoint object is an antecedent */
	struct ndk_vqp *qp;
	int reg_slot; /* OID_NDK_CONNECTIONS entry while listed, else -1 */

	/* Negotiation: our request capped to the adapter, the peer's
	 * limits once known (docs/ndk.md, Read limits); the effective pair
	 * is conn's. */
	uint8_t req_ird, req_ord;
	uint8_t peer_ird, peer_ord;
	uint8_t pd[NDK_VCM_PD_MAX]; /* ours, for rdma_connect */
	uint16_t pd_len;

	/* The one timer; it holds a reference on the connector from the
	 * first arm until a fire finds it neither armed nor wanted. */
	struct ndk_timer timer;
	/* Dead-peer detection (vconn_peer_check): since when the stream
	 * has sent nothing that was acknowledged, 0 if it has. */
	uint64_t stalled_ns;
	enum vconn_timer timer_purpose;
	uint64_t timer_deadline_ns;
	bool timer_ref;
};

static inline struct ndk_vconn *to_vconn(NDK_CONNECTOR *c)
{
	return container_of(c, struct ndk_vconn, conn.obj.pub.connector);
}

static inline struct ndk_vadapter *vconn_vad(struct ndk_vconn *c)
{
	return to_vad(c->conn.obj.adapter);
}

/* connector.c: states, the id, the QP, the timer, endings. */
/* The one state setter (c->conn.lock held); the caller's line is logged. */
void vconn_set_state_at(struct ndk_vconn *c, enum vconn_state to,
			const char *file, int line);
#define vconn_set_state(c, s) vconn_set_state_at(c, s, __FILE__, __LINE__)
bool vconn_listed(enum vconn_state s);
bool vconn_ended(enum vconn_state s);
void vconn_destroy_id(struct ndk_vconn *c);
/* Leaves c->id to the thread in rdma_connect with it. */
void vconn_leave_call(struct ndk_vconn *c);
void vconn_qp_failed(struct ndk_vconn *c);
void vconn_arm_timer(struct ndk_vconn *c, enum vconn_timer purpose,
		     uint64_t ms);
void vconn_stop_timer(struct ndk_vconn *c);
void vconn_attempt_failed(struct ndk_vconn *c, NTSTATUS status);
void vconn_abandon(struct ndk_vconn *c, NTSTATUS status);
void vconn_note_peer(struct ndk_vconn *c, const struct ndk_vcm_event *e,
		     bool iwarp_reply);
struct rdma_conn_param vconn_param(struct ndk_vconn *c, const void *pd,
				   uint8_t pd_len, uint8_t ird, uint8_t ord);
void vconn_qp_fatal(struct ndk_obj *obj);
/* Entering ESTABLISHED: dead-peer detection where the device needs it. */
void vconn_watch_peer(struct ndk_vconn *c);
uint8_t vconn_cap(ULONG v, ULONG max);

/* The connection operations (front/connector.h), c->conn.lock held. */
NTSTATUS ndk_vconn_connect(struct ndk_conn *c,
			   const struct ndk_conn_connect *a);
NTSTATUS ndk_vconn_complete_connect(struct ndk_conn *c);
NTSTATUS ndk_vconn_accept(struct ndk_conn *c, const struct ndk_conn_accept *a);
NTSTATUS ndk_vconn_reject(struct ndk_conn *c, const void *pd, ULONG pd_len);

/* connector_active.c */
void vconn_route_resolved(struct ndk_vconn *c);
void vconn_replied(struct ndk_vconn *c, const struct ndk_vcm_event *e);

/* connector_passive.c */
void vconn_accepted(struct ndk_vconn *c, const struct ndk_vcm_event *e);

#endif /* NDK_VERBS_CONNECTOR_INT_H */
