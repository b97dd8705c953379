/* SPDX-License-Identifier: MIT */
/*
 * The receive side of the MPA handshake on a non-blocking socket, shared
 * by the listener (the Request) and the connector (the Reply, the RTR).
 * Engine thread; no locking inside.
 */
#ifndef SW_MPA_IO_H
#define SW_MPA_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "iwarp/mpa.h"

/*
 * Bytes read so far: room for the largest Request or Reply and one byte
 * more, so that a read that fills the frame shows a byte behind it.
 */
struct sw_mpa_rx {
	uint8_t buf[MPA_RR_FRAME_MAX + 1];
	size_t len;
};

/*
 * Reads from fd until rx holds want bytes (whole: never past them, since
 * bytes behind an RTR belong to the data path), or with one read of up to
 * want bytes (!whole: an MPA frame, behind which nothing may come before
 * we answer). Returns 1 when done, 0 if the socket has no more for now,
 * -EPIPE on end of stream, or a negative errno.
 */
int sw_mpa_rx_fill(struct sw_mpa_rx *rx, int fd, size_t want, bool whole);

/*
 * Reads an MPA Request or Reply (one read when the peer sent it whole, as
 * peers do). Returns 1 with rr filled (rr->pd points into rx), 0 if more
 * bytes are needed, or -1 when the frame is malformed, the stream ended,
 * or bytes follow the frame before we answered it (RFC 5044 7.1; Linux
 * siw refuses that too: "peer sent extra data"). kind and owner name the
 * caller in the log.
 */
int sw_mpa_rx_frame(struct sw_mpa_rx *rx, int fd, enum mpa_rr_type type,
		    struct mpa_rr *rr, const char *kind, const void *owner);

#endif /* SW_MPA_IO_H */
