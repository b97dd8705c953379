/* SPDX-License-Identifier: MIT */
/*
 * The connector as a consumer sees it, the same for every provider
 * (docs/ndk.md, Connecting, Accepting, Disconnect): its phase in NDK's
 * three-step handshake, the status each call returns in each phase, the
 * addresses and the peer's connection data. A provider's connector embeds
 * struct ndk_conn first and runs its own transport states below it (MPA
 * frames, rdma_cm events); each of its states is one of these phases,
 * which the provider's state setter reports through ndk_conn_set_phase.
 */
#ifndef NDK_FRONT_CONNECTOR_H
#define NDK_FRONT_CONNECTOR_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include "core/lock.h"
#include "front/object.h"

struct ndk_endpoint;

/* The largest private data any provider carries (MPA: 256 bytes less its
 * IRD/ORD block; the IB CM: 196). */
#define NDK_CONN_PD_MAX 256

/*
 * The consumer-visible phases. The transition table in front/connector.c
 * is NDK's: both providers' state machines map onto it, and its setter
 * refuses any other move.
 */
enum ndk_conn_phase {
	NDK_CONN_IDLE, /* created, or a Connect that failed inline */
	NDK_CONN_CONNECTING, /* active: Connect pending */
	NDK_CONN_REPLIED, /* active: Connect completed, CompleteConnect due */
	NDK_CONN_REQUESTED, /* passive: ConnectEvent raised, Accept/Reject due */
	NDK_CONN_ACCEPTING, /* passive: Accept pending */
	NDK_CONN_ESTABLISHED,
	NDK_CONN_PEER_CLOSED, /* the peer disconnected; DisconnectEvent raised */
	NDK_CONN_DISCONNECTING, /* NdkDisconnect pending */
	NDK_CONN_FAILED, /* the Connect or Accept failed with fail */
	NDK_CONN_ABANDONED, /* ended between handshake steps; fail says why */
	NDK_CONN_CLOSED, /* disconnected, rejected, or closed */
	NDK_CONN_PHASE_COUNT
};

/* The consumer's calls whose status depends on the phase. */
enum ndk_conn_call {
	NDK_CALL_CONNECT, /* NdkConnect, NdkConnectWithSharedEndpoint */
	NDK_CALL_COMPLETE_CONNECT, /* NdkCompleteConnect(Ex) */
	NDK_CALL_ACCEPT, /* NdkAccept(Ex) */
	NDK_CALL_REJECT,
	NDK_CALL_DISCONNECT,
	NDK_CALL_COUNT
};

struct ndk_conn {
	struct ndk_obj obj; /* must stay first */
	/* The connector lock: the whole connector, the provider's part
	 * included (core/lock.h: the outermost). */
	struct ndk_lock lock;
	enum ndk_conn_phase phase;
	bool passive;
	/* What a late call reports once FAILED or ABANDONED (the rules are
	 * ndk_conn_check_call's). */
	NTSTATUS fail;
	/* Known on the passive side from creation, on the active one once
	 * NdkConnect passed its inline checks. */
	struct sockaddr_storage local, peer;
	/* The local endpoint the connection uses (own, shared or the
	 * listener's), referenced; its 4-tuple is registered while the
	 * active side connects and after (front/endpoint.h). */
	struct ndk_endpoint *ep;
	bool tuple_registered;
	/* The peer's Request or Reply was read: NdkGetConnectionData
	 * reports eff_ird, eff_ord (docs/ndk.md, Read limits) and its
	 * private data. */
	bool peer_known;
	ULONG eff_ird, eff_ord;
	uint16_t peer_pd_len;
	uint8_t peer_pd[NDK_CONN_PD_MAX];

	/* Requests that pend (struct ndk_req: each completes once). */
	struct ndk_req connect_req, accept_req, disconnect_req;
	/* The disconnect event: the consumer's callback from
	 * NdkAccept(Ex) or NdkCompleteConnect(Ex), raised once on the
	 * engine thread with disc_reason (ndk_conn_peer_closed). */
	NDK_FN_DISCONNECT_EVENT_CALLBACK disc_cb;
	NDK_FN_DISCONNECT_EVENT_CALLBACK_EX disc_cb_ex;
	PVOID disc_ctx;
	NTSTATUS disc_reason;
	struct ndk_work disc_work;
};

static inline struct ndk_conn *to_ndk_conn(NDK_CONNECTOR *c)
{
	return container_of(c, struct ndk_conn, obj.pub.connector);
}

const char *ndk_conn_phase_name(enum ndk_conn_phase phase);

/* Sets up what the front end owns of a new connector (before
 * ndk_obj_setup): IDLE, the side, the lock; fini, in the provider's
 * destroy, releases it and the endpoint if the close did not. */
void ndk_conn_init(struct ndk_conn *c, bool passive);
void ndk_conn_fini(struct ndk_conn *c);

/* The provider's state setter moves the phase (c->lock held); a move the
 * table does not allow aborts in debug builds and is logged. */
void ndk_conn_set_phase(struct ndk_conn *c, enum ndk_conn_phase to);

static inline bool ndk_conn_phase_ended(enum ndk_conn_phase p)
{
	return p == NDK_CONN_FAILED || p == NDK_CONN_ABANDONED ||
	       p == NDK_CONN_CLOSED;
}

/*
 * Whether call may proceed in the connector's phase (c->lock held):
 * STATUS_SUCCESS, or the status the call returns, the same for every
 * provider (docs/ndk.md, Connecting, Accepting).
 */
NTSTATUS ndk_conn_check_call(struct ndk_conn *c, enum ndk_conn_call call);

/*
 * The peer ended the established connection (c->lock held, the phase
 * just moved to PEER_CLOSED): the disconnect event, if the consumer gave
 * one, runs on the engine thread with reason as its
 * ProviderDisconnectReason (0: an orderly close).
 */
void ndk_conn_peer_closed(struct ndk_conn *c, NTSTATUS reason);

/*
 * NdkConnect's endpoint (c->lock held): the connector takes ep's
 * reference, its addresses are ep's and dst, and their 4-tuple is
 * registered. An error is the call's status; ndk_conn_release_endpoint
 * undoes it either way.
 */
NTSTATUS ndk_conn_use_endpoint(struct ndk_conn *c, struct ndk_endpoint *ep,
			       const struct sockaddr *dst);
/* The 4-tuple and the endpoint's reference go (an inline failure of the
 * Connect, or the close). */
void ndk_conn_release_endpoint(struct ndk_conn *c);

/* The close began (c->lock held): every pending request completes
 * STATUS_CANCELLED. */
void ndk_conn_cancel_requests(struct ndk_conn *c);

/* Private data for a Connect, Accept or Reject: INVALID_PARAMETER for
 * data without a buffer, INVALID_BUFFER_SIZE over max (nothing is sent). */
NTSTATUS ndk_conn_check_private_data(const void *pd, ULONG len, ULONG max);

/* The peer's Request or Reply was read (c->lock held, or c not yet
 * published): its private data
 * (at most NDK_CONN_PD_MAX bytes) and the effective read limits. */
void ndk_conn_set_peer(struct ndk_conn *c, const void *pd, size_t len,
		       ULONG eff_ird, ULONG eff_ord);

/* The connector's dispatch table, for every provider: each call's
 * arguments and phase are checked here, then the provider's connection
 * operation runs (struct ndk_conn_ops) with c->lock held. */
extern const NDK_CONNECTOR_DISPATCH ndk_conn_dispatch;

struct ndk_shared_endpoint;

/* NdkConnect and NdkConnectWithSharedEndpoint, checked: a QP of the
 * adapter, addresses of one family, private data within MaxCallerData. */
struct ndk_conn_connect {
	struct ndk_obj *qp;
	struct ndk_shared_endpoint *sep; /* NULL: NdkConnect's own source */
	const struct sockaddr *src; /* NdkConnect only */
	ULONG src_len;
	const struct sockaddr *dst;
	ULONG ird, ord;
	const void *pd;
	ULONG pd_len;
	NDK_FN_REQUEST_COMPLETION cb;
	PVOID ctx;
};

/*
 * NdkConnect names no source port: the endpoint table picks one. A picked
 * port may still be in the kernel's TCP table with this destination
 * (TIME_WAIT of an earlier connection, maybe another process's); the
 * providers then take another rather than report
 * STATUS_ADDRESS_ALREADY_EXISTS for a port the consumer never named.
 */
bool ndk_conn_port_picked(const struct ndk_conn_connect *a);
#define NDK_CONN_PORT_TRIES 16

/* NdkAccept(Ex), checked: a QP of the adapter, private data within
 * MaxCalleeData (the disconnect callback is the connector's already). */
struct ndk_conn_accept {
	struct ndk_obj *qp;
	ULONG ird, ord;
	const void *pd;
	ULONG pd_len;
	NDK_FN_REQUEST_COMPLETION cb;
	PVOID ctx;
};

/*
 * A provider's connection operations, called by ndk_conn_dispatch with
 * c->lock held once the call is allowed in the connector's phase
 * (ndk_conn_check_call) and the disconnect event's callback is kept;
 * each returns the call's status.
 */
struct ndk_conn_ops {
	NTSTATUS(*connect)
	(struct ndk_conn *c, const struct ndk_conn_connect *a);
	NTSTATUS (*complete_connect)(struct ndk_conn *c);
	NTSTATUS (*accept)(struct ndk_conn *c, const struct ndk_conn_accept *a);
	NTSTATUS (*reject)(struct ndk_conn *c, const void *pd, ULONG pd_len);
	NTSTATUS(*disconnect)
	(struct ndk_conn *c, NDK_FN_REQUEST_COMPLETION cb, PVOID ctx);
};

#endif /* NDK_FRONT_CONNECTOR_H */
