/* SPDX-License-Identifier: MIT */
/*
 * The RTR of MPA v2 peer-to-peer mode (RFC 6581 3): the first FPDU of the
 * initiator, which tells the responder that it may send. Pure wire code:
 * no I/O, no allocation.
 *
 *	Write RTR  zero-length RDMA Write, tagged, STag 1, TO 0 (STag 0
 *		   upsets Chelsio): 20 bytes
 *	Read RTR   zero-length RDMA Read Request, QN 1, MSN 1: sink STag 0,
 *		   TO 0, size 0, source STag 1, TO 0: 52 bytes; the responder
 *		   answers it with a zero-length Read Response to the sink
 *	Send RTR   zero-length Send, QN 0, MSN 1: 24 bytes (it needs a
 *		   posted receive, so we never choose it)
 *
 * Every FPDU carries the CRC field; with CRC off it is zero (RFC 5044 4).
 */
#ifndef NDK_IWARP_RTR_H
#define NDK_IWARP_RTR_H

#include <errno.h> /* the negative errno values the API returns */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "iwarp/ddp.h"
#include "iwarp/mpa.h"

/*
 * The shortest FPDU there is (a zero-length tagged one) and the longest
 * RTR. Reading at most RTR_FPDU_MIN bytes before the length is known
 * never takes a byte of what follows a well-formed RTR.
 */
#define RTR_FPDU_MIN (MPA_FPDU_OVERHEAD + DDP_TAGGED_HDR_LEN)
#define RTR_FPDU_MAX \
	(MPA_FPDU_OVERHEAD + DDP_UNTAGGED_HDR_LEN + RDMAP_READ_REQ_LEN)

/*
 * Builds the RTR of one type (exactly one MPA_RTR_* bit) into buf and
 * returns its length, -EINVAL for any other type, or -ENOBUFS.
 */
int rtr_build(enum mpa_rtr type, bool crc, uint8_t *buf, size_t size);

/* A received RTR. */
struct rtr_in {
	enum mpa_rtr type; /* WRITE, READ or SEND; NONE if not an RTR */
	struct ddp_hdr hdr; /* as decoded, for logs (zero if it was not) */
	/* READ: the request, whose sink the answer goes to. */
	struct rdmap_read_req read_req;
};

/*
 * How many bytes the RTR at the start of buf takes: RTR_FPDU_MIN while
 * fewer than MPA_FPDU_HDR_LEN are in, then the FPDU's whole length. A
 * reader that never reads past it leaves the data path's bytes alone.
 */
size_t rtr_want(const uint8_t *buf, size_t len);

/*
 * Parses the FPDU at the start of buf as an RTR, checking its CRC when
 * crc is set. Returns the FPDU's length with in filled, or:
 *   -EAGAIN	more bytes needed (rtr_want())
 *   -EMSGSIZE	the FPDU is longer than any RTR
 *   -EBADMSG	the CRC does not match
 *   -EPROTO	a whole FPDU, but not a zero-length Write, Read Request or
 *		Send (in->type is MPA_RTR_NONE, in->hdr says what it is)
 * Bytes past the FPDU are not looked at. The DDP and RDMAP versions, the
 * L bit and the STag, QN and MSN are not checked: a message of an RTR's
 * shape is that RTR (peers differ in the STag they use).
 */
int rtr_parse(const uint8_t *buf, size_t len, bool crc, struct rtr_in *in);

/*
 * The FPDU a received RTR requires in answer: for a Read RTR a zero-length
 * RDMA Read Response (tagged, L=1) to the request's sink STag and TO. Returns
 * its length, 0 if the RTR needs no answer (Write, Send), or -ENOBUFS.
 */
int rtr_answer_build(const struct rtr_in *in, bool crc, uint8_t *buf,
		     size_t size);

#endif /* NDK_IWARP_RTR_H */
