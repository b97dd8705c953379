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
 * This header is what the rest of cm/ sees; the connector's own files
 * share cm/connector_int.h.
 */
#ifndef NDK_CM_CONNECTOR_H
#define NDK_CM_CONNECTOR_H

#include <stdint.h>

struct ndk_connector;
struct ndk_listener;

/* Removes a passive connector from its listener's undelivered list. */
void ndk_connector_untrack(struct ndk_connector *c);

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
