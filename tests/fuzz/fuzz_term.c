/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the Terminate body parser (RFC 5040 section 4.8) on
 * arbitrary bytes, whole and cut short at an arbitrary point, directly
 * and through fpdu_term_parse() behind an arbitrary DDP header.
 * Invariants: a decoded body never reaches past the input or its own
 * length, a prefix either decodes to the same length or is too short,
 * every decoded cause has printable names, and a decodable body encodes
 * back to the same bytes (bar the reserved control bits).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "iwarp/ddp.h"
#include "iwarp/fpdu.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile size_t sink;

static void check_decoded(const uint8_t *data, size_t size, int n,
			  const struct rdmap_term *t)
{
	uint8_t out[RDMAP_TERM_BODY_MAX];
	int m;

	if ((size_t)n > size || n < RDMAP_TERM_CTRL_LEN)
		abort();
	if (t->ddp_hdr && (t->ddp_hdr < data || t->ddp_hdr >= data + n))
		abort();
	if (t->rdmap_hdr && (t->rdmap_hdr < data ||
			     t->rdmap_hdr + RDMAP_READ_REQ_LEN > data + n))
		abort();
	if (rdmap_term_len(t) != (size_t)n)
		abort();
	sink = strlen(iwarp_term_layer_name(t->cause.layer)) +
	       strlen(iwarp_term_etype_name(t->cause.layer, t->cause.etype)) +
	       strlen(iwarp_term_ecode_name(t->cause.layer, t->cause.etype,
					    t->cause.ecode));
	m = rdmap_term_encode(t, out, sizeof(out));
	/* M or R without D decode, but we never send them (the length and
	 * the RDMAP header exist only with the DDP header). */
	if ((t->m || t->rdmap_hdr) && !t->ddp_hdr) {
		if (m != -EINVAL)
			abort();
		return;
	}
	if (m != n)
		abort();
	/* Layer, EType, Error Code and M/D/R; the 13 reserved bits are
	 * sent as zero. */
	if (memcmp(out, data, 2) || out[2] != (data[2] & 0xe0) || out[3])
		abort();
	if (!t->ddp_hdr) {
		if (n != RDMAP_TERM_CTRL_LEN)
			abort();
		return;
	}
	/* Without M the segment length is sent as zero; the headers are
	 * copied as they came. */
	if (t->m ? memcmp(out + 4, data + 4, 2) : (out[4] || out[5]))
		abort();
	if (memcmp(out + 6, data + 6, (size_t)n - 6))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rdmap_term t, part;
	struct ddp_hdr h;
	size_t cut;
	int whole, r, hl;

	whole = rdmap_term_decode(data, size, &t);
	if (whole >= 0)
		check_decoded(data, size, whole, &t);
	else if (whole != -EBADMSG)
		abort();

	/* A body cut short: too short, or already complete and the same. */
	if (size) {
		cut = data[size - 1] % (size + 1);
		r = rdmap_term_decode(data, cut, &part);
		if (r >= 0 && r != whole)
			abort();
		if (r < 0 && r != -EBADMSG)
			abort();
	}

	/* The same bytes as an FPDU's DDP header and Terminate body. */
	hl = ddp_hdr_decode(data, size, &h);
	if (hl > 0 && (size_t)hl <= size) {
		r = fpdu_term_parse(&h, data + hl, size - (size_t)hl, &part);
		if (h.tagged || h.opcode != RDMAP_TERMINATE) {
			if (r != -EPROTO)
				abort();
		} else if (r != (rdmap_term_decode(data + hl, size - (size_t)hl,
						   &t) < 0
					 ? -EBADMSG
					 : 0)) {
			abort();
		}
	}
	return 0;
}
