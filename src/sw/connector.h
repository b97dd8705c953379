/* SPDX-License-Identifier: MIT */
/*
 * NDK connector: one connection, driven through the NDK three-step
 * handshake mapped onto MPA v2 peer-to-peer mode (docs/design.md,
 * connection management):
 *
 *   active                          wire                      passive
 *   NdkConnect         TCP connect, MPA Request  ->          ConnectEvent
 *                                                <- MPA Reply  NdkAccept(Ex)
 *   Connect completes
 *   NdkCompleteConnect   RTR (zero-length Write or Read) ->
 *                                                       Accept completes
 *
 * This header is what the rest of the provider's connection management
 * sees (the listener creates passive
 * connectors through it); the connector's own files share
 * sw/connector_int.h. The connector knows nothing of the listener.
 */
#ifndef SW_CONNECTOR_H
#define SW_CONNECTOR_H

#include <stdbool.h>
#include <stdint.h>
#include "core/config.h"
#include "front/object.h"

struct ndk_adapter;
struct sw_backlog;
struct ndk_endpoint;
struct mpa_rr;

/* A connect request the listener read off a TCP connection it accepted. */
struct sw_passive_request {
	struct ndk_adapter *adapter;
	struct ndk_obj *listener; /* antecedent of the new connector */
	struct ndk_endpoint *ep; /* the listener's: the connector holds it */
	int fd; /* the accepted socket, not registered with the engine */
	const struct mpa_rr *req; /* the MPA Request, read whole */
	/* The backlog slot the listener took for it, or NULL if it does not
	 * admit the request (paused, closing, backlog full). */
	struct sw_backlog *slot;
};

/*
 * Passive side: creates the connector for a request, which owns the fd
 * and the slot from here on (even on failure). A request the connector
 * refuses (markers, or no slot) is answered with an MPA Reply R=1 and
 * -ECONNREFUSED is returned. Otherwise the connector is REQUESTED and
 * busy until sw_connector_handed_over(): the listener raises its
 * ConnectEvent with *out in between. Engine thread.
 */
int sw_connector_new_passive(const struct sw_passive_request *r,
			     NDK_CONNECTOR **out);
/*
 * The listener raised its ConnectEvent for conn (delivered), or could not
 * (closing): an undelivered request is refused and its connector closed.
 */
void sw_connector_handed_over(NDK_CONNECTOR *conn, bool delivered);

/* Timeouts, from the environment (docs/configuration.md); the connection
 * setup timeout is core/config.h's ndk_cm_timeout_ms. */
/* NDK_ACCEPT_GRACE_MS: how long a non-P2P Accept waits after its Reply
 * for the initiator's first FPDU before it completes anyway. */
uint64_t sw_accept_grace_ms(void);
/* NDK_RTR_NUDGE_MS: delay of the RTR nudge, 0 when it is off. */
uint64_t sw_rtr_nudge_ms(void);

/* The connection operations (front/connector.h). */
extern const struct ndk_conn_ops sw_conn_ops;

/* NdkCreateConnector: the adapter's slot. */
NTSTATUS sw_create_connector(NDK_ADAPTER *pNdkAdapter,
			     NDK_FN_CREATE_COMPLETION CreateCompletion,
			     PVOID RequestContext,
			     NDK_CONNECTOR **ppNdkConnector);

#endif /* SW_CONNECTOR_H */
