/* SPDX-License-Identifier: MIT */
/*
 * DDP (RFC 5041) and RDMAP (RFC 5040) headers, the RDMA Read Request body,
 * and the Terminate message with its layer/type/code tables. Pure wire
 * code: no I/O, no allocation. All fields are big-endian.
 *
 * Offsets are from the start of the ULPDU, i.e. after the 2-byte MPA
 * ULPDU_Length of the FPDU (RFC 5044 section 4).
 *
 *	tagged (T=1)	   untagged (T=0)
 *	0  DDP control	   0  DDP control	   T L rsvd(4) DV(2)
 *	1  RDMAP control   1  RDMAP control	   RV(2) rsvd(2) opcode(4)
 *	2  STag		   2  RsvdULP / Invalidate STag
 *	6  TO (8 bytes)	   6  QN
 *	14 payload	   10 MSN
 *			   14 MO
 *			   18 payload or RDMAP body
 */
#ifndef NDK_IWARP_DDP_H
#define NDK_IWARP_DDP_H

#include <errno.h> /* the negative errno values the API returns */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "iwarp/mpa.h"

/* Byte 0, DDP control (RFC 5041). */
#define DDP_CTRL_TAGGED 0x80
#define DDP_CTRL_LAST	0x40
#define DDP_CTRL_RSVD	0x3c
#define DDP_CTRL_DV	0x03
#define DDP_VERSION	1

/* Byte 1, RDMAP control (RFC 5040). */
#define RDMAP_CTRL_RV	    0xc0
#define RDMAP_CTRL_RV_SHIFT 6
#define RDMAP_CTRL_RSVD	    0x30
#define RDMAP_CTRL_OPCODE   0x0f
#define RDMAP_VERSION	    1

#define DDP_TAGGED_HDR_LEN   14
#define DDP_UNTAGGED_HDR_LEN 18
#define RDMAP_READ_REQ_LEN   28

struct ddp_tagged_hdr {
	uint8_t ddp_ctrl;
	uint8_t rdmap_ctrl;
	uint8_t stag[4];
	uint8_t to[8];
};
_Static_assert(sizeof(struct ddp_tagged_hdr) == DDP_TAGGED_HDR_LEN,
	       "DDP tagged header");

struct ddp_untagged_hdr {
	uint8_t ddp_ctrl;
	uint8_t rdmap_ctrl;
	uint8_t inv_stag[4]; /* RsvdULP: Invalidate STag or zero */
	uint8_t qn[4];
	uint8_t msn[4];
	uint8_t mo[4];
};
_Static_assert(sizeof(struct ddp_untagged_hdr) == DDP_UNTAGGED_HDR_LEN,
	       "DDP untagged header");

/* RFC 5040: the body of an RDMA Read Request. */
struct rdmap_read_req_wire {
	uint8_t sink_stag[4];
	uint8_t sink_to[8];
	uint8_t size[4];
	uint8_t src_stag[4];
	uint8_t src_to[8];
};
_Static_assert(sizeof(struct rdmap_read_req_wire) == RDMAP_READ_REQ_LEN,
	       "RDMA Read Request body");

/* RDMAP opcodes (RFC 5040; 8-0xB from RFC 7306). */
enum rdmap_opcode {
	RDMAP_WRITE = 0x0,
	RDMAP_READ_REQ = 0x1,
	RDMAP_READ_RESP = 0x2,
	RDMAP_SEND = 0x3,
	RDMAP_SEND_INV = 0x4,
	RDMAP_SEND_SE = 0x5,
	RDMAP_SEND_SE_INV = 0x6,
	RDMAP_TERMINATE = 0x7,
	RDMAP_IMMEDIATE = 0x8,
	RDMAP_IMMEDIATE_SE = 0x9,
	RDMAP_ATOMIC_REQ = 0xa,
	RDMAP_ATOMIC_RESP = 0xb,
	RDMAP_OPCODE_COUNT = 0x10, /* 0xc-0xf reserved */
};

/* Untagged queue numbers (RFC 5040; 3 from RFC 7306). */
enum ddp_qn {
	DDP_QN_SEND = 0,
	DDP_QN_READ_REQ = 1,
	DDP_QN_TERMINATE = 2,
	DDP_QN_ATOMIC_RESP = 3,
};

/* "Write", "Read Request", ...; "reserved" for 0xc-0xf, "?" beyond. */
const char *rdmap_opcode_name(unsigned int opcode);

/* True for the opcodes carried in tagged segments (Write, Read Response). */
static inline bool rdmap_opcode_tagged(unsigned int opcode)
{
	return opcode == RDMAP_WRITE || opcode == RDMAP_READ_RESP;
}

/*
 * A DDP segment header with its RDMAP control byte, decoded. Tagged
 * segments use stag/to; untagged ones use inv_stag/qn/msn/mo. dv and rv are
 * the versions as received; the encoder always sends version 1.
 */
struct ddp_hdr {
	uint8_t opcode; /* enum rdmap_opcode */
	bool tagged;
	bool last;
	uint8_t dv;
	uint8_t rv;
	uint32_t stag;
	uint64_t to;
	uint32_t inv_stag;
	uint32_t qn;
	uint32_t msn;
	uint32_t mo;
};

static inline size_t ddp_hdr_len(bool tagged)
{
	return tagged ? DDP_TAGGED_HDR_LEN : DDP_UNTAGGED_HDR_LEN;
}

/*
 * Writes the 14- or 18-byte header and returns its length; reserved bits
 * are zero. -EINVAL for an opcode over 4 bits, -ENOBUFS if size is short.
 */
int ddp_hdr_encode(const struct ddp_hdr *h, uint8_t *buf, size_t size);

/*
 * Reads a header from the start of a ULPDU and returns its length, or
 * -EAGAIN if len is shorter than the header (1 byte tells which). Decodes
 * any bits; ddp_hdr_check() decides whether they are acceptable.
 */
int ddp_hdr_decode(const uint8_t *buf, size_t len, struct ddp_hdr *h);

/* A Terminate cause: Layer, EType and Error Code (RFC 5040). */
struct iwarp_term_cause {
	uint8_t layer;
	uint8_t etype;
	uint8_t ecode;
};

/*
 * The static checks of a received header, in the order RFC 5041/5040
 * apply them: DDP version, RDMAP version, opcode known (0-7: what we and
 * siw implement) and matching the T bit, untagged QN matching the opcode,
 * Read Request and Terminate in a single segment (L=1, MO 0). Returns 0,
 * or -EPROTO with the Terminate cause filled in. MSN order, STags and
 * buffer bounds need connection state and are checked elsewhere.
 */
int ddp_hdr_check(const struct ddp_hdr *h, struct iwarp_term_cause *cause);

/* RDMA Read Request body (RFC 5040). size 0 is the Read RTR. */
struct rdmap_read_req {
	uint32_t sink_stag;
	uint64_t sink_to;
	uint32_t size;
	uint32_t src_stag;
	uint64_t src_to;
};

void rdmap_read_req_put(uint8_t *p, const struct rdmap_read_req *rr);
void rdmap_read_req_get(const uint8_t *p, struct rdmap_read_req *rr);

/*
 * Terminate (RFC 5040). Its body follows the untagged header
 * (QN 2, MSN 1, MO 0, L=1):
 *
 *	0  4	control: Layer(4) EType(4) ErrorCode(8) M D R rsvd(13)
 *	4  2	DDP Segment Length of the offending segment	(if D)
 *	6  14|18 the offending DDP header, by its T bit		(if D)
 *	.. 28	the offending Read Request body			(if R)
 *
 * The length and header together are the offending segment's first bytes,
 * MPA length included.
 */
enum iwarp_term_layer {
	TERM_LAYER_RDMAP = 0,
	TERM_LAYER_DDP = 1,
	TERM_LAYER_LLP = 2,
};

enum rdmap_term_etype {
	RDMAP_ETYPE_CATASTROPHIC = 0,
	RDMAP_ETYPE_REMOTE_PROT = 1,
	RDMAP_ETYPE_REMOTE_OP = 2,
};

enum rdmap_term_ecode {
	RDMAP_ECODE_INVALID_STAG = 0x00,
	RDMAP_ECODE_BASE_BOUNDS = 0x01,
	RDMAP_ECODE_ACCESS = 0x02,
	RDMAP_ECODE_STAG_NOT_ASSOC = 0x03,
	RDMAP_ECODE_TO_WRAP = 0x04,
	RDMAP_ECODE_BAD_VERSION = 0x05,
	RDMAP_ECODE_UNEXPECTED_OPCODE = 0x06,
	RDMAP_ECODE_CATASTROPHIC_STREAM = 0x07,
	RDMAP_ECODE_CATASTROPHIC_GLOBAL = 0x08,
	RDMAP_ECODE_CANT_INVALIDATE = 0x09,
	RDMAP_ECODE_UNSPECIFIED = 0xff,
};

enum ddp_term_etype {
	DDP_ETYPE_CATASTROPHIC = 0,
	DDP_ETYPE_TAGGED = 1,
	DDP_ETYPE_UNTAGGED = 2,
	DDP_ETYPE_RSVD_LLP = 3,
};

enum ddp_term_tagged_ecode {
	DDP_TAGGED_INVALID_STAG = 0x00,
	DDP_TAGGED_BASE_BOUNDS = 0x01,
	DDP_TAGGED_STAG_NOT_ASSOC = 0x02,
	DDP_TAGGED_TO_WRAP = 0x03,
	DDP_TAGGED_BAD_VERSION = 0x04,
};

enum ddp_term_untagged_ecode {
	DDP_UNTAGGED_INVALID_QN = 0x01,
	DDP_UNTAGGED_MSN_NO_BUFFER = 0x02,
	DDP_UNTAGGED_MSN_RANGE = 0x03,
	DDP_UNTAGGED_INVALID_MO = 0x04,
	DDP_UNTAGGED_TOO_LONG = 0x05,
	DDP_UNTAGGED_BAD_VERSION = 0x06,
};

enum llp_term_etype {
	LLP_ETYPE_MPA = 0,
};

/* LLP errors of MPA (RFC 5044; 0x05-0x07 from RFC 6581). */
enum mpa_term_ecode {
	MPA_ECODE_CLOSED = 0x01,
	MPA_ECODE_CRC = 0x02,
	MPA_ECODE_MARKER = 0x03,
	MPA_ECODE_BAD_REQ_REP = 0x04,
	MPA_ECODE_LOCAL_CATASTROPHIC = 0x05,
	MPA_ECODE_INSUFFICIENT_IRD = 0x06,
	MPA_ECODE_NO_MATCHING_RTR = 0x07,
};

#define RDMAP_TERM_CTRL_LEN   4
#define RDMAP_TERM_SEGLEN_LEN 2
#define RDMAP_TERM_FLAG_M     0x8000 /* DDP Segment Length valid */
#define RDMAP_TERM_FLAG_D     0x4000 /* DDP header included */
#define RDMAP_TERM_FLAG_R     0x2000 /* RDMAP header included */
#define RDMAP_TERM_BODY_MAX                                                   \
	(RDMAP_TERM_CTRL_LEN + RDMAP_TERM_SEGLEN_LEN + DDP_UNTAGGED_HDR_LEN + \
	 RDMAP_READ_REQ_LEN)

/*
 * A Terminate body. ddp_hdr, if not NULL, is the offending DDP header
 * (14 or 18 bytes by its T bit) and sets D; rdmap_hdr, if not NULL, is the
 * offending Read Request body (28 bytes) and sets R. m says whether
 * ddp_seg_len is valid. Decoded pointers point into the caller's buffer.
 */
struct rdmap_term {
	struct iwarp_term_cause cause;
	bool m;
	uint16_t ddp_seg_len;
	const uint8_t *ddp_hdr;
	const uint8_t *rdmap_hdr;
};

/* Length of the encoded body. */
size_t rdmap_term_len(const struct rdmap_term *t);

/*
 * Writes the body and returns its length. -EINVAL for a layer or etype
 * over 4 bits or R without D; -ENOBUFS if size is short.
 */
int rdmap_term_encode(const struct rdmap_term *t, uint8_t *buf, size_t size);

/*
 * Reads a body of len bytes (the ULPDU after the untagged header) and
 * returns the bytes it used, or -EBADMSG if it is shorter than its flags
 * say.
 */
int rdmap_term_decode(const uint8_t *buf, size_t len, struct rdmap_term *t);

/*
 * Which offending headers to attach for a cause (docs/wire.md, Terminate):
 * DDP-layer errors attach the DDP header (M|D) except a bad DDP version; RDMAP
 * protection errors attach it too, plus the Read Request (R) when the offending
 * message was one; RDMAP operation errors attach the DDP header except for a
 * bad version or opcode; catastrophic and LLP errors attach nothing. Returns
 * RDMAP_TERM_FLAG_* bits.
 */
unsigned int rdmap_term_attach(const struct iwarp_term_cause *cause,
			       bool read_req);

/* Names for logs: "DDP", "untagged buffer", "invalid MSN - no buffer". */
const char *iwarp_term_layer_name(unsigned int layer);
const char *iwarp_term_etype_name(unsigned int layer, unsigned int etype);
const char *iwarp_term_ecode_name(unsigned int layer, unsigned int etype,
				  unsigned int ecode);

/*
 * Whole control FPDUs, framed by mpa_fpdu_finish():
 * - ddp_rtr_build(): the RTR of a P2P initiator (RFC 6581), the data
 *   path's name for rtr_build() of iwarp/rtr.h, which defines it.
 * - rdmap_term_build(): a Terminate on QN 2, MSN 1, MO 0, L=1.
 * Both return the FPDU length, -EINVAL, or -ENOBUFS.
 */
#define DDP_RTR_STAG 1
int ddp_rtr_build(enum mpa_rtr type, bool crc, uint8_t *buf, size_t size);
int rdmap_term_build(const struct rdmap_term *t, bool crc, uint8_t *buf,
		     size_t size);

#endif /* NDK_IWARP_DDP_H */
