/* SPDX-License-Identifier: MIT */
/*
 * The data path of one established connection: from ESTABLISHED on it
 * owns the TCP socket and its engine registration (docs/design.md,
 * Sockets), receives and transmits FPDUs (dp_rx.c, dp_tx.c), and reports
 * the end of the stream to the connection manager once (sw_dp_end_fn).
 *
 * Lifecycle: sw_dp_attach (the connection manager hands the socket over)
 * -> the stream ends, reported -> sw_dp_detach (the socket is closed) ->
 * sw_dp_free (QP destroy). The connection manager never takes a
 * data-path lock; everything it asks goes through these functions.
 */
#ifndef SW_DP_H
#define SW_DP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "sw/dp_core.h"

/* The established connection the connection manager hands over. */
struct sw_dp_socket {
	int fd; /* connected, non-blocking; not registered with the engine */
	int family; /* AF_INET or AF_INET6 */
	struct ndk_engine *engine;
	bool crc; /* MPA CRC negotiated (RFC 5044 7.1) */
	bool large_fpdu; /* the peer takes FPDUs over the MSS */
	uint32_t ird, ord; /* effective read limits */
	/* enum mpa_rtr: the RTR this side sent (initiator) or received
	 * (responder), or MPA_RTR_NONE. A Send or Read RTR is a message of
	 * its queue and took MSN 1 there (RFC 6581 3, RFC 5041 5.1). */
	unsigned int rtr_sent, rtr_received;
	/* Handshake bytes not yet written (an RTR or a Reply the socket
	 * took only part of): written first. Copied. */
	const void *unsent;
	size_t unsent_len;
	sw_dp_end_fn end_fn; /* the stream ended: once, engine thread */
	void *end_ctx;
};

/*
 * Creates the data path and takes the socket: from a successful return
 * on, only the data path reads, writes, watches or closes it. Returns 0,
 * or a negative errno (-ENOMEM...) and the socket stays the caller's.
 */
int sw_dp_attach(const struct sw_dp_qp *qp, const struct sw_dp_socket *s,
		 struct sw_dp **out);

/*
 * The connection manager lets go: no more I/O, the socket is closed (on
 * the engine thread; from another thread the close is queued there and
 * holds a QP reference until done). Any thread, idempotent.
 */
void sw_dp_detach(struct sw_dp *dp);

/* Frees a detached data path (QP destroy). */
void sw_dp_free(struct sw_dp *dp);

/* Sends our FIN (NdkDisconnect); the peer's FIN is reported as -EPIPE. */
void sw_dp_shutdown(struct sw_dp *dp);

/*
 * The RTR nudge (docs/wire.md, "RTR nudge"): unless the peer has sent
 * anything since the attach, one more zero-length RDMA Write RTR goes out
 * between FPDUs. Returns true if it did.
 */
bool sw_dp_nudge(struct sw_dp *dp);

/*
 * NdkFlush and close: every initiator request not finished completes
 * with STATUS_CANCELLED in order; once the stream ended, a receive left
 * half filled is cancelled too, so the ones behind it flush.
 */
void sw_dp_flush(struct sw_dp *dp);

#endif /* SW_DP_H */
