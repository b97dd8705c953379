/* SPDX-License-Identifier: MIT */
/*
 * The data path's receive side: placement of incoming Sends, RDMA Writes
 * and Read Responses, inbound Read Requests queued for the transmitter,
 * and Terminates (RFC 5040, RFC 5041).
 */
#ifndef SW_DP_RX_H
#define SW_DP_RX_H

#include <stdbool.h>
#include "sw/dp_core.h"

/* Allocates the receive state (after dp->crc is set); 0 or -ENOMEM. */
int sw_dp_rx_create(struct sw_dp *dp, unsigned int rtr_received);
void sw_dp_rx_free(struct sw_dp *dp);

/*
 * Receives and processes what the socket has, up to *budget reads (each
 * read counts down *budget); rx_lock held. *got is set when bytes
 * arrived. Returns 0 (drained or budget spent), SW_DP_RX_TX (work for
 * the transmitter was queued, dp->rx_wants_tx: transmit it, then call
 * again while budget is left), or a negative errno when the connection
 * ended: -EPIPE (end of stream), -ECONNRESET..., -EPROTO (a Terminate was
 * queued or received).
 */
#define SW_DP_RX_TX 1
int sw_dp_rx_pass(struct sw_dp *dp, int *budget, bool *got);

/* Takes back the receive being filled, if any: the connection ended
 * mid-message, or NdkFlush cancels it on a connection that goes on (the
 * rest of that Send is then received and dropped); rx_lock and dp->lock
 * held. */
struct sw_rqe *sw_dp_rx_release(struct sw_dp *dp);

#endif /* SW_DP_RX_H */
