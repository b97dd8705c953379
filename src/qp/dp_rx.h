/* SPDX-License-Identifier: MIT */
/*
 * The data path's receive side: placement of incoming Sends, RDMA Writes
 * and Read Responses, inbound Read Requests queued for the transmitter,
 * and Terminates (RFC 5040, RFC 5041).
 */
#ifndef NDK_QP_DP_RX_H
#define NDK_QP_DP_RX_H

#include <stdbool.h>
#include "qp/dp_core.h"

/* Allocates the receive state (after dp->crc is set); 0 or -ENOMEM. */
int ndk_dp_rx_create(struct ndk_dp *dp, unsigned int rtr_received);
void ndk_dp_rx_free(struct ndk_dp *dp);

/*
 * Receives and processes what the socket has, up to *budget reads (each
 * read counts down *budget); rx_lock held. *got is set when bytes
 * arrived. Returns 0 (drained or budget spent), NDK_DP_RX_TX (work for
 * the transmitter was queued, dp->rx_wants_tx: transmit it, then call
 * again while budget is left), or a negative errno when the connection
 * ended: -EPIPE (end of stream), -ECONNRESET..., -EPROTO (a Terminate was
 * queued or received).
 */
#define NDK_DP_RX_TX 1
int ndk_dp_rx_pass(struct ndk_dp *dp, int *budget, bool *got);

/* Takes back the receive being filled, if any: the connection ended
 * mid-message, or NdkFlush cancels it on a connection that goes on (the
 * rest of that Send is then received and dropped); rx_lock and dp->lock
 * held. */
struct ndk_rqe *ndk_dp_rx_release(struct ndk_dp *dp);

#endif /* NDK_QP_DP_RX_H */
