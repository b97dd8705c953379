/* SPDX-License-Identifier: MIT */
/*
 * Inside the receive side: the state of the message being received,
 * shared by the per-FPDU code (dp_rx.c) and the reads that place payloads
 * straight into their destination (dp_rx_direct.c).
 */
#ifndef SW_DP_RX_INT_H
#define SW_DP_RX_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "iwarp/fpdu.h"
#include "sw/dp_core.h"
#include "sw/rq.h"
#include "sw/stag.h"

/* What the FPDU being received is placed into. */
enum rx_target {
	RX_NONE,
	RX_SEND, /* a receive's SGE list at MO */
	RX_WRITE, /* a remote-writable STag range */
	RX_READ_RESP, /* the oldest outstanding Read's SGE list */
	RX_READ_REQ, /* nothing: served at its END, once the CRC held */
	RX_TERMINATE, /* collected, then parsed */
	RX_DISCARD, /* zero-length RTR leftovers */
	RX_SEND_DROP, /* the rest of a Send whose receive NdkFlush cancelled */
};

struct sw_dp_rx {
	struct fpdu_rx parser;
	enum rx_target target;
	struct ddp_hdr hdr; /* of the FPDU being received */
	/* Send: the receive being filled, and its message state. */
	struct sw_rqe *rqe;
	uint32_t msn_send; /* next expected MSN on QN 0 (RFC 5041 5.1) */
	uint32_t msn_readreq; /* next expected MSN on QN 1 */
	uint64_t recv_len; /* capacity of rqe */
	uint32_t recv_bytes; /* message bytes so far */
	bool recv_overflow;
	bool send_dropped; /* the Send in progress lost its receive */
	/*
	 * The Write FPDU's STag range, pinned. The pin lasts one receive
	 * pass at most: a peer that stops mid-FPDU must not hold the MR
	 * (NdkDeregisterMr waits for pins), so the range is looked up again
	 * when the rest arrives.
	 */
	struct sw_stag_ref ref;
	bool have_ref;
	/*
	 * A Write FPDU's header is only known good once its CRC is: one with
	 * a damaged STag or TO would place its payload elsewhere, over bytes
	 * the consumer may be reading. So a Write FPDU is placed as it
	 * arrives only when its STag and TO are exactly what a sound header
	 * predicts: the next TO of the last sound Write FPDU (the rest of
	 * its Write, or the next Write into the same range), or the TO of
	 * the last sound Write's first FPDU (a Write into the same place
	 * again); and it is no longer than that FPDU or one of ours. Any
	 * other is held in hold[] and placed at its END, once the CRC holds.
	 */
	bool holding;
	bool first; /* the FPDU is the first of its Write */
	bool in_write; /* a Write's last FPDU has not arrived */
	struct rx_write_pred {
		bool valid;
		uint32_t stag;
		uint64_t to;
		uint16_t max; /* a longer one may have a damaged length */
	} next, again;
	uint8_t *hold; /* MPA_ULPDU_MAX bytes, allocated on first use */
	/* FPDUs in a row with a small payload since the last large one:
	 * while few, headers are read with a short read so that a large
	 * payload behind them is received in place (a large message ends
	 * with a small FPDU, its rest). */
	uint8_t small_run;
	/* The receive gate (dp_rx.c, rx_gate): when the current wait for the
	 * rest of a payload began (0: not waiting), and how long such waits
	 * have lasted lately. */
	uint64_t wait_from_ns;
	uint32_t wait_est_ns;
	/* The read that brought the last message's end brought bytes
	 * behind it too: its sender posts back to back (rx_note_end). */
	bool streaming;
	bool cont; /* the FPDU being received continues a message */
	uint32_t ended; /* messages whose last FPDU arrived, ever */
	uint8_t term[RDMAP_TERM_BODY_MAX];
	size_t term_len;
};

/*
 * Socket reads land in a buffer of the receiving thread, not of the
 * connection (dp_rx.c): RX_BUF_SIZE bytes.
 */
#define RX_BUF_SIZE (256 * 1024)

/*
 * Direct placement (RFC 5041 1, "direct data placement"): the rest of a
 * payload of at least RX_DIRECT_MIN bytes is received straight into its
 * destination with one recvmsg, after the STag or receive checks passed
 * for that range; smaller payloads are copied out of the thread's buffer,
 * where one read brings many FPDUs. RX_PROBE bytes are read behind a
 * direct payload (its trailer and the next header, or a short FPDU and
 * the header after it: a 64 KiB Send ends with 72 bytes of those), and
 * are all a read takes between large FPDUs, so that their payloads are
 * not read into the buffer first.
 */
#define RX_DIRECT_MIN 4096
#define RX_DIRECT_IOV 32
#define RX_PROBE      128
#define RX_SMALL_RUN  4

static inline struct sw_wqe *sw_dp_rx_orq_head(struct sw_dp *dp)
{
	if (!dp->sq.reads_out)
		return NULL;
	return sw_dp_sq_slot(dp, dp->sq.orq_head);
}

/*
 * Feeds bytes to the parser and acts on its events. placed: buf is the
 * payload's destination, received there directly; the parser still
 * checks the CRC over it, nothing is copied. 0 or a negative errno (the
 * connection ends).
 */
int sw_dp_rx_bytes(struct sw_dp *dp, const uint8_t *buf, size_t len,
		   bool placed);

/*
 * One read of the rest of the current payload in place, then up to
 * RX_PROBE bytes behind it into probe. Returns 1 if the payload is not
 * received in place (the caller reads into its buffer), else as one step
 * of sw_dp_rx_pass: 0 go on, SW_DP_RX_SHORT bytes placed but fewer than
 * the payload still needs (the socket is empty now), -EAGAIN drained, or
 * a negative errno.
 */
#define SW_DP_RX_SHORT 2
int sw_dp_rx_direct(struct sw_dp *dp, uint8_t *probe, bool *got);

/* Pins the current Write FPDU's range (rx->hdr) unless it is pinned: 0, or
 * what a Terminate for an STag that names nothing returns. */
int sw_dp_rx_write_ref(struct sw_dp *dp);

#endif /* SW_DP_RX_INT_H */
