/* SPDX-License-Identifier: MIT */
/*
 * FPDU receive parser and transmit builder (RFC 5044 section 4 framing of
 * RFC 5041 DDP segments carrying RFC 5040 RDMAP messages). Pure wire code:
 * no I/O, no allocation, no globals. Markers are never used: MPA markers
 * are refused at connection setup (docs/wire.md, Markers).
 *
 *	off 0	2	ULPDU_Length (big-endian): DDP header + payload
 *	off 2	14|18	DDP/RDMAP header (tagged | untagged)
 *	     [	28	Read Request body (untagged opcode 1)	]
 *	..	n	payload
 *	..	0-3	pad (zero) to a multiple of 4
 *	..	4	CRC32c over length, ULPDU and pad (LE on the wire)
 *
 * Receive: struct fpdu_rx is a restartable parser the data path feeds with
 * whatever a non-blocking read returned. Each fpdu_rx_step() consumes bytes
 * up to the next event and stops there:
 *
 *	for (off = 0;;) {
 *		off += fpdu_rx_step(&rx, buf + off, len - off, &ev);
 *		switch (ev.type) {
 *		case FPDU_EV_NONE:	read more bytes; break out
 *		case FPDU_EV_HEADER:	look up the STag / receive buffer
 *		case FPDU_EV_PAYLOAD:	place ev.data[0..ev.len) at ev.offset
 *		case FPDU_EV_END:	CRC verdict, L bit: complete the message
 *		case FPDU_EV_WHOLE:	HEADER, PAYLOAD and END at once
 *		case FPDU_EV_ERROR:	send a Terminate for ev.cause, close
 *		}
 *	}
 *
 * The events are the same for any split of the byte stream, except that
 * the payload of an FPDU may come in more, smaller chunks, and that a
 * parser asked for whole events (fpdu_rx_set_whole()) reports an FPDU
 * that is all in buf at its first byte as one FPDU_EV_WHOLE.
 *
 * Transmit: an FPDU goes out as three pieces, so the payload is never
 * copied (it can be an iovec of several SGEs):
 *
 *	hdr[FPDU_HDR_MAX]	fpdu_tx_hdr(): length, DDP header (+ body)
 *	payload ...		the caller's buffers
 *	trailer[FPDU_TRAILER_MAX] fpdu_tx_trailer(): pad and CRC
 *
 * with the CRC folded in by struct fpdu_tx_crc. struct fpdu_seg cuts a
 * message into DDP segments that fit the MULPDU (RFC 5041, RFC 5044 4).
 */
#ifndef NDK_IWARP_FPDU_H
#define NDK_IWARP_FPDU_H

#include <errno.h> /* the negative errno values the API returns */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "iwarp/crc32c.h"
#include "iwarp/ddp.h"
#include "iwarp/mpa.h"

/* MPA length, the longer DDP header and the Read Request body: 48 bytes. */
#define FPDU_HDR_MAX \
	(MPA_FPDU_HDR_LEN + DDP_UNTAGGED_HDR_LEN + RDMAP_READ_REQ_LEN)
/* Up to 3 pad bytes and the CRC. */
#define FPDU_TRAILER_MAX (3 + MPA_FPDU_CRC_LEN)
/* The whole ULPDU of a Read Request (RFC 5040 section 4): 46 bytes. */
#define FPDU_READ_REQ_ULPDU (DDP_UNTAGGED_HDR_LEN + RDMAP_READ_REQ_LEN)

/* ---- Receive ---------------------------------------------------------- */

enum fpdu_ev_type {
	FPDU_EV_NONE, /* all of buf consumed, more bytes needed */
	FPDU_EV_HEADER, /* length and DDP header (+ body) in and checked */
	FPDU_EV_PAYLOAD, /* a chunk of payload, pointing into buf */
	FPDU_EV_END, /* pad and CRC consumed: the FPDU is complete */
	FPDU_EV_WHOLE, /* a whole FPDU: HEADER, its one PAYLOAD, END */
	FPDU_EV_ERROR, /* malformed FPDU; latched */
};

/*
 * What one fpdu_rx_step() reports. Only the fields of ev->type are set.
 *
 * hdr		HEADER, PAYLOAD, END (and ERROR once the header was decoded,
 *		else NULL): the DDP/RDMAP header of the current FPDU. Points
 *		into struct fpdu_rx; valid until the next FPDU starts.
 * ulpdu_len	HEADER: ULPDU_Length, header (and body) included.
 * payload_len	HEADER: payload bytes after the header (0 for a Read
 *		Request); PAYLOAD events sum up to exactly this.
 * read_req	HEADER and END of a Read Request: its body, decoded. Nothing
 *		in a HEADER is checked against the CRC yet: act on a Read
 *		Request at its END, once crc_ok says it arrived intact.
 * data, len	PAYLOAD: len > 0 bytes at data, inside the buf passed to
 *		this step. Never copied: handle them before the next step.
 * offset	PAYLOAD: where data sits in this FPDU's payload. The DDP
 *		offset is hdr->to + offset (tagged) or hdr->mo + offset.
 * crc_ok	END: the CRC matched (always true with CRC off). What a bad
 *		CRC means is the caller's choice (siw: Terminate LLP/MPA
 *		"MPA CRC error", then close).
 * last		END: the DDP L bit: this FPDU ends its message.
 * err, cause	ERROR: a negative errno and the Terminate cause to send.
 *
 * WHOLE sets what HEADER, PAYLOAD (data and len, len == payload_len,
 * offset 0; data is NULL with no payload) and END set. The CRC verdict
 * comes before the payload is handled: a caller should not place a
 * payload whose crc_ok is false. It is only reported for an FPDU the
 * header steps would accept; anything they refuse comes step by step,
 * as without whole events.
 */
struct fpdu_ev {
	enum fpdu_ev_type type;
	const struct ddp_hdr *hdr;
	uint16_t ulpdu_len;
	uint16_t payload_len;
	struct rdmap_read_req read_req;
	const uint8_t *data;
	size_t len;
	size_t offset;
	bool crc_ok;
	bool last;
	int err;
	struct iwarp_term_cause cause;
};

enum fpdu_rx_state {
	FPDU_RX_HDR, /* collecting length, DDP header and body into raw[] */
	FPDU_RX_PAYLOAD, /* handing out payload chunks */
	FPDU_RX_TRAILER, /* collecting pad and CRC */
	FPDU_RX_ERROR, /* latched */
};

/*
 * Receive state of one direction of one connection. Owned by whoever
 * reads the socket (the engine thread); no locking inside. raw[] keeps the
 * current FPDU's first bytes as received, for Terminates that must quote
 * the offending header (fpdu_rx_term()).
 */
struct fpdu_rx {
	uint8_t state; /* enum fpdu_rx_state */
	bool crc; /* CRC negotiated: check it */
	bool hdr_in; /* raw[] holds the DDP header, decoded into ddp */
	bool body_in; /* ... and a Read Request body, in read_req */
	uint8_t have; /* bytes in raw[] (HDR) or trailer[] (TRAILER) */
	uint8_t want; /* bytes those need before the next decision */
	uint8_t pad;
	uint16_t max_ulpdu; /* largest ULPDU_Length accepted */
	uint16_t ulpdu_len;
	uint16_t payload_len;
	uint16_t payload_off;
	uint32_t crc_reg; /* raw CRC32c register over what was seen */
	/* The whole FPDU was in one buffer at its start: its CRC was
	 * checked there, in one pass, with this result. */
	bool whole;
	bool whole_crc_ok;
	bool whole_ev; /* report whole FPDUs as FPDU_EV_WHOLE */
	uint8_t raw[FPDU_HDR_MAX];
	uint8_t trailer[FPDU_TRAILER_MAX];
	struct ddp_hdr ddp;
	struct rdmap_read_req read_req;
	int err;
	struct iwarp_term_cause cause;
	uint64_t stream_off; /* bytes consumed since init, for logs */
};

/* Resets rx to the start of an FPDU; crc says whether MPA negotiated CRC. */
void fpdu_rx_init(struct fpdu_rx *rx, bool crc);

/*
 * Refuses FPDUs whose ULPDU_Length exceeds max_ulpdu (e.g. what the local
 * buffers are sized for); the default is MPA_ULPDU_MAX, i.e. no limit.
 * Values under the tagged header length are raised to it.
 */
void fpdu_rx_set_max_ulpdu(struct fpdu_rx *rx, size_t max_ulpdu);

/* Reports an FPDU that is all in one buffer at its first byte as one
 * FPDU_EV_WHOLE, for a caller that handles it in one go. */
static inline void fpdu_rx_set_whole(struct fpdu_rx *rx, bool on)
{
	rx->whole_ev = on;
}

/*
 * Consumes bytes of buf up to and including the next event, fills ev and
 * returns the number consumed (<= len). It returns 0 only when len is 0
 * (FPDU_EV_NONE) or an error is latched (FPDU_EV_ERROR again).
 *
 * Errors (ev->err, ev->cause), each latched until fpdu_rx_init():
 *   -EMSGSIZE	ULPDU_Length over the configured maximum:
 *		LLP/MPA/local catastrophic (RFC 6581)
 *   -EBADMSG	ULPDU_Length shorter than the DDP header its T bit calls
 *		for: DDP/local catastrophic/0
 *   -EPROTO	ddp_hdr_check() failed (DDP or RDMAP version, reserved or
 *		mistagged opcode, QN, MO of a single-segment message): its
 *		cause
 *   -EPROTO	a Read Request that is not one 46-byte ULPDU with L=1, or a
 *		Terminate with L=0 (both are single-segment messages,
 *		RFC 5040 section 4): RDMAP/remote operation/catastrophic
 *		local to the stream
 * A Terminate (opcode 7, QN 2) is reported like any untagged message:
 * its body is the payload; see fpdu_term_parse().
 */
size_t fpdu_rx_step(struct fpdu_rx *rx, const uint8_t *buf, size_t len,
		    struct fpdu_ev *ev);

/* True between FPDUs: a TCP close here loses no half-received FPDU. */
static inline bool fpdu_rx_at_boundary(const struct fpdu_rx *rx)
{
	return rx->state == FPDU_RX_HDR && rx->have == 0;
}

/* In an FPDU's payload: the bytes to its end (the rest of the payload,
 * its pad and its CRC field). */
static inline size_t fpdu_rx_left(const struct fpdu_rx *rx)
{
	return (size_t)(rx->payload_len - rx->payload_off) + rx->pad +
	       MPA_FPDU_CRC_LEN;
}

/*
 * The Terminate to send for cause about the current FPDU (a latched error,
 * or one the caller found, e.g. an invalid STag at FPDU_EV_HEADER): the
 * cause plus the headers rdmap_term_attach() asks for, when they were
 * received. Pointers in t point into rx; build the Terminate before the
 * next step.
 */
void fpdu_rx_term(const struct fpdu_rx *rx,
		  const struct iwarp_term_cause *cause, struct rdmap_term *t);

/*
 * Decodes the body of a received Terminate: hdr is the FPDU's header,
 * body/len the collected payload. Returns 0, -EPROTO if hdr is not a
 * Terminate, or -EBADMSG if the body is shorter than its flags say.
 */
int fpdu_term_parse(const struct ddp_hdr *hdr, const uint8_t *body, size_t len,
		    struct rdmap_term *t);

/* ---- Transmit --------------------------------------------------------- */

/*
 * Writes ULPDU_Length, the DDP/RDMAP header of ddp and, for a Read
 * Request, the body rr (NULL otherwise) into hdr (FPDU_HDR_MAX bytes
 * fit any) for payload_len bytes of payload to follow. Returns the bytes
 * written, -EINVAL (opcode over 4 bits, Read Request without rr or with
 * payload) or -EMSGSIZE (ULPDU over 16 bits).
 */
int fpdu_tx_hdr(uint8_t *hdr, const struct ddp_hdr *ddp, size_t payload_len,
		const struct rdmap_read_req *rr);

/* ULPDU_Length of an FPDU: header, Read Request body and payload. */
static inline size_t fpdu_ulpdu_len(const struct ddp_hdr *ddp,
				    size_t payload_len)
{
	return ddp_hdr_len(ddp->tagged) + payload_len +
	       (!ddp->tagged && ddp->opcode == RDMAP_READ_REQ
			? RDMAP_READ_REQ_LEN
			: 0);
}

/*
 * Accumulates the CRC over the pieces of one FPDU as they are queued:
 * the header from fpdu_tx_hdr(), then every payload segment. With CRC off
 * it does nothing.
 */
struct fpdu_tx_crc {
	uint32_t reg;
	bool on;
};

static inline void fpdu_tx_crc_init(struct fpdu_tx_crc *c, bool on)
{
	c->reg = crc32c_init();
	c->on = on;
}

static inline void fpdu_tx_crc_add(struct fpdu_tx_crc *c, const void *p,
				   size_t len)
{
	if (c->on)
		c->reg = crc32c_update(c->reg, p, len);
}

/*
 * Writes the pad (zero) and the CRC of an FPDU of ulpdu_len ULPDU bytes
 * into trailer (FPDU_TRAILER_MAX bytes fit any) and returns their number.
 * crc_reg is the raw CRC32c register (crc32c_init() then crc32c_update())
 * over the length field and the ULPDU; the pad is folded in here. With
 * crc false the CRC field is zero (RFC 5044 section 4).
 */
size_t fpdu_tx_trailer(uint8_t *trailer, uint32_t crc_reg, size_t ulpdu_len,
		       bool crc);

/*
 * A whole FPDU in one buffer (payload copied): for short and control
 * messages. Returns its length, -ENOBUFS if size is short, or an error of
 * fpdu_tx_hdr().
 */
int fpdu_tx_build(uint8_t *buf, size_t size, const struct ddp_hdr *ddp,
		  const struct rdmap_read_req *rr, const void *payload,
		  size_t payload_len, bool crc);

/*
 * Payload bytes one FPDU can carry when its ULPDU may be at most mulpdu
 * bytes (mpa_mulpdu() of the effective MSS): mulpdu minus the DDP header,
 * 0 if the header does not fit.
 */
size_t fpdu_max_payload(size_t mulpdu, bool tagged);

/*
 * Segmentation of one RDMAP message into DDP segments (RFC 5041,
 * RFC 5040): every segment repeats the message's header with its own
 * offset -- TO advanced by the bytes before it (tagged) or MO = the bytes
 * before it (untagged, same MSN) -- and only the last has L=1. A
 * zero-length message is one segment with L=1 and no payload.
 *
 *	fpdu_seg_init(&s, &msg, len, fpdu_max_payload(mulpdu, msg.tagged));
 *	while (fpdu_seg_next(&s, &h, &off, &n))
 *		send h with payload bytes [off, off + n) of the message
 *
 * msg gives opcode, T, STag and base TO, or QN, MSN and Invalidate STag;
 * its L and MO are ignored (MO starts at 0). An untagged message is at
 * most 4 GiB - 1 (MO is 32 bits); tagged TOs wrap modulo 2^64, which the
 * caller rules out by its bounds checks.
 */
struct fpdu_seg {
	struct ddp_hdr msg;
	size_t msg_len;
	size_t max_payload;
	size_t off; /* next segment starts here */
	bool done;
};

/* -EINVAL if max_payload is 0 or an untagged message exceeds 32 bits. */
int fpdu_seg_init(struct fpdu_seg *s, const struct ddp_hdr *msg, size_t msg_len,
		  size_t max_payload);

/*
 * Fills the header and payload range of the next segment; false once the
 * last was handed out.
 */
bool fpdu_seg_next(struct fpdu_seg *s, struct ddp_hdr *h, size_t *off,
		   size_t *payload_len);

/*
 * The segment that starts at message offset off, without the iterator
 * (for a sender that resumes from a byte count): fills h and returns the
 * payload length. off must be below msg_len, or 0 for an empty message.
 */
size_t fpdu_seg_at(const struct ddp_hdr *msg, size_t msg_len, size_t off,
		   size_t max_payload, struct ddp_hdr *h);

/* ---- The predicted header of a small message ------------------------- */

/*
 * A whole Send FPDU (untagged, last, QN 0, MO 0, RDMAP Send or Send with
 * SE; RFC 5041 4.3, RFC 5040 4.1 and 4.4) is most of what a ping-pong of
 * small messages carries, and both ends know its header in advance but
 * for the MSN and the length: header prediction, as in TCP's fast path.
 * FPDU_SEND_HDR_LEN bytes: MPA length, DDP and RDMAP control, the
 * Invalidate STag field (reserved in a Send), QN, MSN, MO.
 */
#define FPDU_SEND_HDR_LEN (MPA_FPDU_HDR_LEN + DDP_UNTAGGED_HDR_LEN)

/* A whole untagged FPDU's header (last, MO 0) into b. */
static inline void fpdu_untagged_hdr_put(uint8_t *b, unsigned int opcode,
					 uint32_t qn, uint32_t msn,
					 size_t ulpdu_len)
{
	put_be16(b, (uint16_t)ulpdu_len);
	b[2] = DDP_CTRL_LAST | DDP_VERSION;
	b[3] = (uint8_t)(RDMAP_VERSION << RDMAP_CTRL_RV_SHIFT | opcode);
	put_be32(b + 4, 0);
	put_be32(b + 8, qn);
	put_be32(b + 12, msn);
	put_be32(b + 16, 0);
}

/* Whether b starts a whole untagged FPDU on qn for msn at MO 0, reserved
 * bits clear; its RDMAP opcode is then b[3] & RDMAP_CTRL_OPCODE. */
static inline bool fpdu_untagged_hdr_match(const uint8_t *b, uint32_t qn,
					   uint32_t msn)
{
	return b[2] == (DDP_CTRL_LAST | DDP_VERSION) &&
	       (b[3] & (RDMAP_CTRL_RV | RDMAP_CTRL_RSVD)) ==
		       RDMAP_VERSION << RDMAP_CTRL_RV_SHIFT &&
	       get_be32(b + 8) == qn && get_be32(b + 12) == msn &&
	       !get_be32(b + 16);
}

/* That header into b, for a payload of len bytes (the caller keeps it
 * within the MULPDU). */
static inline void fpdu_send_hdr_put(uint8_t *b, uint32_t msn, size_t len,
				     bool se)
{
	fpdu_untagged_hdr_put(b, se ? RDMAP_SEND_SE : RDMAP_SEND, DDP_QN_SEND,
			      msn, DDP_UNTAGGED_HDR_LEN + len);
}

/*
 * Whether the FPDU_SEND_HDR_LEN bytes at b are that header for msn, with
 * reserved bits clear (a header with any set is left to the parser, which
 * ignores them); its ULPDU_Length is then get_be16(b), and *se whether it
 * is a Send with SE. The Invalidate STag field is not looked at.
 */
static inline bool fpdu_send_hdr_match(const uint8_t *b, uint32_t msn, bool *se)
{
	unsigned int op = b[3] & RDMAP_CTRL_OPCODE;

	if (!fpdu_untagged_hdr_match(b, DDP_QN_SEND, msn) ||
	    (op != RDMAP_SEND && op != RDMAP_SEND_SE) ||
	    get_be16(b) < DDP_UNTAGGED_HDR_LEN)
		return false;
	*se = op == RDMAP_SEND_SE;
	return true;
}

/*
 * The same for a whole tagged FPDU (last; RDMAP Write or Read Response;
 * RFC 5041 4.2, RFC 5040 4.3 and 4.5): MPA length, DDP and RDMAP
 * control, STag, TO.
 */
#define FPDU_TAGGED_HDR_LEN (MPA_FPDU_HDR_LEN + DDP_TAGGED_HDR_LEN)

static inline void fpdu_tagged_hdr_put(uint8_t *b, unsigned int opcode,
				       uint32_t stag, uint64_t to, size_t len)
{
	put_be16(b, (uint16_t)(DDP_TAGGED_HDR_LEN + len));
	b[2] = DDP_CTRL_TAGGED | DDP_CTRL_LAST | DDP_VERSION;
	b[3] = (uint8_t)(RDMAP_VERSION << RDMAP_CTRL_RV_SHIFT | opcode);
	put_be32(b + 4, stag);
	put_be64(b + 8, to);
}

/* Whether the FPDU_TAGGED_HDR_LEN bytes at b are such a header with this
 * opcode, reserved bits clear; its STag and TO are then at b + 4 and
 * b + 8. */
static inline bool fpdu_tagged_hdr_match(const uint8_t *b, unsigned int opcode)
{
	return b[2] == (DDP_CTRL_TAGGED | DDP_CTRL_LAST | DDP_VERSION) &&
	       b[3] == (RDMAP_VERSION << RDMAP_CTRL_RV_SHIFT | opcode) &&
	       get_be16(b) >= DDP_TAGGED_HDR_LEN;
}

/*
 * A Read Request's whole FPDU but its CRC (untagged, last, QN 1, MO 0;
 * RFC 5040 4.4): FPDU_SEND_HDR_LEN + RDMAP_READ_REQ_LEN bytes.
 */
#define FPDU_READ_REQ_LEN (FPDU_SEND_HDR_LEN + RDMAP_READ_REQ_LEN)

static inline void fpdu_read_req_put(uint8_t *b, uint32_t msn,
				     const struct rdmap_read_req *rr)
{
	fpdu_untagged_hdr_put(b, RDMAP_READ_REQ, DDP_QN_READ_REQ, msn,
			      FPDU_READ_REQ_ULPDU);
	rdmap_read_req_put(b + FPDU_SEND_HDR_LEN, rr);
}

/* Whether b starts such a Read Request for msn, reserved bits clear; its
 * body is then at b + FPDU_SEND_HDR_LEN. */
static inline bool fpdu_read_req_match(const uint8_t *b, uint32_t msn)
{
	return get_be16(b) == FPDU_READ_REQ_ULPDU &&
	       (b[3] & RDMAP_CTRL_OPCODE) == RDMAP_READ_REQ &&
	       fpdu_untagged_hdr_match(b, DDP_QN_READ_REQ, msn);
}

#endif /* NDK_IWARP_FPDU_H */
