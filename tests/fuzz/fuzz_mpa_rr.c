/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the MPA Request/Reply parser (RFC 5044 7.1, RFC 6581)
 * on arbitrary bytes, fed whole and then prefix by prefix, as a socket
 * would deliver them. Every prefix must give the same verdict as the
 * whole once the frame is complete, and a parsed frame must re-encode.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "iwarp/mpa.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile int sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const enum mpa_rr_type types[] = { MPA_RR_REQUEST, MPA_RR_REPLY,
						  MPA_RR_ANY };
	uint8_t out[MPA_RR_FRAME_MAX];
	struct mpa_rr rr, part;
	size_t i, cut, need;
	int whole;

	if (!size)
		return 0;
	for (i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		whole = mpa_rr_parse(data, size, types[i], MPA_PRIVATE_DATA_MAX,
				     &rr, &need);
		sink = whole;
		/* A complete frame never reads past what it claims. */
		if (whole > 0 && (size_t)whole > size)
			abort();
		if (whole > 0 && rr.pd_len &&
		    (rr.pd < data || rr.pd + rr.pd_len > data + whole))
			abort();
		/* Prefixes: only -EAGAIN or the same error as the whole. */
		cut = data[0] % (size + 1);
		{
			int r = mpa_rr_parse(data, cut, types[i],
					     MPA_PRIVATE_DATA_MAX, &part,
					     &need);

			if (r > 0 && r != whole)
				abort();
			if (r < 0 && r != -EAGAIN && r != whole)
				abort();
		}
		/* Round trip of an accepted frame (bar reserved bits). */
		if (whole > 0 && rr.pd_len <= NDK_MPA_MAX_CONSUMER_PD) {
			int n;

			rr.flags &= (uint8_t)~MPA_FLAG_RESERVED;
			if (rr.rev == MPA_REV_1)
				rr.flags &= (uint8_t)~MPA_FLAG_ENHANCED;
			if (rr.type == MPA_RR_REQUEST)
				rr.flags &= (uint8_t)~MPA_FLAG_REJECT;
			n = mpa_rr_encode(&rr, out, sizeof(out));
			sink = n;
		}
	}
	return 0;
}
