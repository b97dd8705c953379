/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the RTR parser (RFC 6581 3) on arbitrary bytes.
 *
 * Input: 1 control byte (bit 0: CRC negotiated; bit 1: the first read
 * returns 1 byte), then the bytes that follow our MPA Reply on the stream.
 *
 * Invariants: rtr_parse() returns an FPDU length or one of its errors; a
 * parsed RTR fits the input and the RTR size range, every shorter prefix
 * of it asks for more and rtr_want() asks exactly up to its end; the
 * bytes read the way the connector reads them (one read of up to
 * rtr_want(), then whole reads to it) give the same answer and never go
 * past it; without CRC no CRC error is reported; the answer to a Read RTR
 * is a zero-length Read Response to its sink and other RTRs need none.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "iwarp/ddp.h"
#include "iwarp/mpa.h"
#include "iwarp/rtr.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_answer(const struct rtr_in *in, bool crc)
{
	uint8_t out[RTR_FPDU_MAX];
	struct ddp_hdr h;
	int n = rtr_answer_build(in, crc, out, sizeof(out));

	if (in->type != MPA_RTR_READ) {
		if (n != 0)
			abort();
		return;
	}
	if (n != (int)mpa_fpdu_len(DDP_TAGGED_HDR_LEN))
		abort();
	if (crc && mpa_fpdu_check_crc(out, (size_t)n))
		abort();
	if (ddp_hdr_decode(out + MPA_FPDU_HDR_LEN, DDP_TAGGED_HDR_LEN, &h) !=
		    DDP_TAGGED_HDR_LEN ||
	    !h.tagged || !h.last || h.opcode != RDMAP_READ_RESP ||
	    h.stag != in->read_req.sink_stag || h.to != in->read_req.sink_to)
		abort();
}

/* Reads as the connector does; returns the parse result, *used the
 * bytes taken. */
static int read_like_connector(const uint8_t *s, size_t size, bool crc,
			       bool short_first, size_t *used,
			       struct rtr_in *in)
{
	uint8_t rx[RTR_FPDU_MAX + 1];
	size_t len = 0;
	int n;

	while ((n = rtr_parse(rx, len, crc, in)) == -EAGAIN) {
		size_t want = rtr_want(rx, len), got;

		if (want <= len || want > sizeof(rx))
			abort();
		if (len == size)
			break; /* the input ends: the socket would wait */
		got = want - len;
		if (got > size - len)
			got = size - len;
		if (len < MPA_FPDU_HDR_LEN && got > 1 && short_first)
			got = 1;
		memcpy(rx + len, s + len, got);
		len += got;
	}
	*used = len;
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rtr_in in, part;
	bool crc, short_first;
	size_t used;
	int n, r;

	if (!size)
		return 0;
	crc = data[0] & 1;
	short_first = data[0] & 2;
	data++;
	size--;

	n = rtr_parse(data, size, crc, &in);
	if (n > 0) {
		if ((size_t)n > size || n < RTR_FPDU_MIN || n > RTR_FPDU_MAX)
			abort();
		if (in.type != MPA_RTR_WRITE && in.type != MPA_RTR_READ &&
		    in.type != MPA_RTR_SEND)
			abort();
		for (size_t cut = 0; cut < (size_t)n; cut++) {
			size_t want = rtr_want(data, cut);

			if (rtr_parse(data, cut, crc, &part) != -EAGAIN)
				abort();
			if (want <= cut || want > (size_t)n ||
			    (cut >= MPA_FPDU_HDR_LEN && want != (size_t)n))
				abort();
		}
		check_answer(&in, crc);
	} else if (n == -EAGAIN) {
		if (rtr_want(data, size) <= size)
			abort();
	} else if (n == -EPROTO || n == -EMSGSIZE) {
		if (in.type != MPA_RTR_NONE)
			abort();
	} else if (n != -EBADMSG || !crc) {
		abort();
	}

	/* The connector's reads: the same verdict, never past the RTR. */
	r = read_like_connector(data, size, crc, short_first, &used, &part);
	if (r != n || (n > 0 && used != (size_t)n) ||
	    (n > 0 && part.type != in.type))
		abort();
	return 0;
}
