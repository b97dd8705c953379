/* SPDX-License-Identifier: MIT */
/*
 * DDP/RDMAP header encode, decode and static checks (RFC 5041, RFC 5040),
 * the Read Request body, the Terminate message and its code tables, and
 * the Terminate control FPDU (the RTR is iwarp/rtr.c's).
 */
#include <errno.h>
#include <string.h>

#include "core/compiler.h"
#include "iwarp/byteorder.h"
#include "iwarp/ddp.h"

/* Terminate control word (RFC 5040): Layer, EType, Error Code, M D R. */
#define TERM_LAYER_SHIFT 28
#define TERM_ETYPE_SHIFT 24
#define TERM_ECODE_SHIFT 16

static const char *const rdmap_opcode_names[RDMAP_OPCODE_COUNT] = {
	[RDMAP_WRITE] = "RDMA Write",
	[RDMAP_READ_REQ] = "RDMA Read Request",
	[RDMAP_READ_RESP] = "RDMA Read Response",
	[RDMAP_SEND] = "Send",
	[RDMAP_SEND_INV] = "Send with Invalidate",
	[RDMAP_SEND_SE] = "Send with Solicited Event",
	[RDMAP_SEND_SE_INV] = "Send with Solicited Event and Invalidate",
	[RDMAP_TERMINATE] = "Terminate",
	[RDMAP_IMMEDIATE] = "Immediate Data",
	[RDMAP_IMMEDIATE_SE] = "Immediate Data with Solicited Event",
	[RDMAP_ATOMIC_REQ] = "Atomic Request",
	[RDMAP_ATOMIC_RESP] = "Atomic Response",
};

const char *rdmap_opcode_name(unsigned int opcode)
{
	if (opcode >= RDMAP_OPCODE_COUNT)
		return "?";
	return rdmap_opcode_names[opcode] ? rdmap_opcode_names[opcode]
					  : "reserved";
}

NDK_HOT int ddp_hdr_encode(const struct ddp_hdr *h, uint8_t *buf, size_t size)
{
	size_t len = ddp_hdr_len(h->tagged);

	if (h->opcode > RDMAP_CTRL_OPCODE)
		return -EINVAL;
	if (size < len)
		return -ENOBUFS;
	buf[0] = (uint8_t)((h->tagged ? DDP_CTRL_TAGGED : 0) |
			   (h->last ? DDP_CTRL_LAST : 0) | DDP_VERSION);
	buf[1] = (uint8_t)(RDMAP_VERSION << RDMAP_CTRL_RV_SHIFT | h->opcode);
	if (h->tagged) {
		put_be32(buf + 2, h->stag);
		put_be64(buf + 6, h->to);
	} else {
		put_be32(buf + 2, h->inv_stag);
		put_be32(buf + 6, h->qn);
		put_be32(buf + 10, h->msn);
		put_be32(buf + 14, h->mo);
	}
	return (int)len;
}

NDK_HOT int ddp_hdr_decode(const uint8_t *buf, size_t len, struct ddp_hdr *h)
{
	bool tagged;

	if (len < 1)
		return -EAGAIN;
	tagged = buf[0] & DDP_CTRL_TAGGED;
	if (len < ddp_hdr_len(tagged))
		return -EAGAIN;

	memset(h, 0, sizeof(*h));
	h->tagged = tagged;
	h->last = buf[0] & DDP_CTRL_LAST;
	h->dv = buf[0] & DDP_CTRL_DV;
	h->rv = (uint8_t)((buf[1] & RDMAP_CTRL_RV) >> RDMAP_CTRL_RV_SHIFT);
	h->opcode = buf[1] & RDMAP_CTRL_OPCODE;
	if (tagged) {
		h->stag = get_be32(buf + 2);
		h->to = get_be64(buf + 6);
	} else {
		h->inv_stag = get_be32(buf + 2);
		h->qn = get_be32(buf + 6);
		h->msn = get_be32(buf + 10);
		h->mo = get_be32(buf + 14);
	}
	return (int)ddp_hdr_len(tagged);
}

static int term_cause(struct iwarp_term_cause *c, uint8_t layer, uint8_t etype,
		      uint8_t ecode)
{
	c->layer = layer;
	c->etype = etype;
	c->ecode = ecode;
	return -EPROTO;
}

/* The untagged queue an opcode belongs on (RFC 5040). */
static uint32_t rdmap_opcode_qn(unsigned int opcode)
{
	switch (opcode) {
	case RDMAP_READ_REQ:
		return DDP_QN_READ_REQ;
	case RDMAP_TERMINATE:
		return DDP_QN_TERMINATE;
	default:
		return DDP_QN_SEND;
	}
}

NDK_HOT int ddp_hdr_check(const struct ddp_hdr *h,
			  struct iwarp_term_cause *cause)
{
	/* DDP first: a wrong version means nothing else can be trusted. */
	if (h->dv != DDP_VERSION)
		return h->tagged ? term_cause(cause, TERM_LAYER_DDP,
					      DDP_ETYPE_TAGGED,
					      DDP_TAGGED_BAD_VERSION)
				 : term_cause(cause, TERM_LAYER_DDP,
					      DDP_ETYPE_UNTAGGED,
					      DDP_UNTAGGED_BAD_VERSION);
	if (h->rv != RDMAP_VERSION)
		return term_cause(cause, TERM_LAYER_RDMAP,
				  RDMAP_ETYPE_REMOTE_OP,
				  RDMAP_ECODE_BAD_VERSION);
	/* Only opcodes 0-7; Write and Read Response are the tagged ones. */
	if (h->opcode > RDMAP_TERMINATE ||
	    rdmap_opcode_tagged(h->opcode) != h->tagged)
		return term_cause(cause, TERM_LAYER_RDMAP,
				  RDMAP_ETYPE_REMOTE_OP,
				  RDMAP_ECODE_UNEXPECTED_OPCODE);
	if (h->tagged)
		return 0;
	if (h->qn != rdmap_opcode_qn(h->opcode))
		return term_cause(cause, TERM_LAYER_DDP, DDP_ETYPE_UNTAGGED,
				  DDP_UNTAGGED_INVALID_QN);
	/* Read Requests and Terminates are single-segment messages. */
	if ((h->opcode == RDMAP_READ_REQ || h->opcode == RDMAP_TERMINATE) &&
	    h->mo != 0)
		return term_cause(cause, TERM_LAYER_DDP, DDP_ETYPE_UNTAGGED,
				  DDP_UNTAGGED_INVALID_MO);
	return 0;
}

NDK_HOT void rdmap_read_req_put(uint8_t *p, const struct rdmap_read_req *rr)
{
	struct rdmap_read_req_wire *w = (struct rdmap_read_req_wire *)p;

	put_be32(w->sink_stag, rr->sink_stag);
	put_be64(w->sink_to, rr->sink_to);
	put_be32(w->size, rr->size);
	put_be32(w->src_stag, rr->src_stag);
	put_be64(w->src_to, rr->src_to);
}

NDK_HOT void rdmap_read_req_get(const uint8_t *p, struct rdmap_read_req *rr)
{
	const struct rdmap_read_req_wire *w =
		(const struct rdmap_read_req_wire *)p;

	rr->sink_stag = get_be32(w->sink_stag);
	rr->sink_to = get_be64(w->sink_to);
	rr->size = get_be32(w->size);
	rr->src_stag = get_be32(w->src_stag);
	rr->src_to = get_be64(w->src_to);
}

/* The attached DDP header's own T bit gives its length. */
static size_t term_ddp_hdr_len(const uint8_t *ddp_hdr)
{
	return ddp_hdr_len(ddp_hdr[0] & DDP_CTRL_TAGGED);
}

size_t rdmap_term_len(const struct rdmap_term *t)
{
	size_t len = RDMAP_TERM_CTRL_LEN;

	if (t->ddp_hdr)
		len += RDMAP_TERM_SEGLEN_LEN + term_ddp_hdr_len(t->ddp_hdr);
	if (t->rdmap_hdr)
		len += RDMAP_READ_REQ_LEN;
	return len;
}

int rdmap_term_encode(const struct rdmap_term *t, uint8_t *buf, size_t size)
{
	size_t len = rdmap_term_len(t), off = RDMAP_TERM_CTRL_LEN;
	uint32_t ctrl;

	if (t->cause.layer > 0xf || t->cause.etype > 0xf)
		return -EINVAL;
	/* The length field and the RDMAP header only exist with D. */
	if ((t->m || t->rdmap_hdr) && !t->ddp_hdr)
		return -EINVAL;
	if (size < len)
		return -ENOBUFS;

	ctrl = (uint32_t)t->cause.layer << TERM_LAYER_SHIFT |
	       (uint32_t)t->cause.etype << TERM_ETYPE_SHIFT |
	       (uint32_t)t->cause.ecode << TERM_ECODE_SHIFT;
	if (t->m)
		ctrl |= RDMAP_TERM_FLAG_M;
	if (t->ddp_hdr) {
		size_t hl = term_ddp_hdr_len(t->ddp_hdr);

		ctrl |= RDMAP_TERM_FLAG_D;
		put_be16(buf + off, t->m ? t->ddp_seg_len : 0);
		memcpy(buf + off + RDMAP_TERM_SEGLEN_LEN, t->ddp_hdr, hl);
		off += RDMAP_TERM_SEGLEN_LEN + hl;
	}
	if (t->rdmap_hdr) {
		ctrl |= RDMAP_TERM_FLAG_R;
		memcpy(buf + off, t->rdmap_hdr, RDMAP_READ_REQ_LEN);
	}
	put_be32(buf, ctrl);
	return (int)len;
}

int rdmap_term_decode(const uint8_t *buf, size_t len, struct rdmap_term *t)
{
	size_t off = RDMAP_TERM_CTRL_LEN;
	uint32_t ctrl;

	if (len < RDMAP_TERM_CTRL_LEN)
		return -EBADMSG;
	ctrl = get_be32(buf);
	memset(t, 0, sizeof(*t));
	t->cause.layer = (uint8_t)(ctrl >> TERM_LAYER_SHIFT);
	t->cause.etype = (uint8_t)((ctrl >> TERM_ETYPE_SHIFT) & 0xf);
	t->cause.ecode = (uint8_t)(ctrl >> TERM_ECODE_SHIFT);
	t->m = ctrl & RDMAP_TERM_FLAG_M;
	if (ctrl & RDMAP_TERM_FLAG_D) {
		const uint8_t *hdr = buf + off + RDMAP_TERM_SEGLEN_LEN;

		if (len < off + RDMAP_TERM_SEGLEN_LEN + 1 ||
		    len < off + RDMAP_TERM_SEGLEN_LEN + term_ddp_hdr_len(hdr))
			return -EBADMSG;
		t->ddp_seg_len = get_be16(buf + off);
		t->ddp_hdr = hdr;
		off += RDMAP_TERM_SEGLEN_LEN + term_ddp_hdr_len(hdr);
	}
	if (ctrl & RDMAP_TERM_FLAG_R) {
		if (len < off + RDMAP_READ_REQ_LEN)
			return -EBADMSG;
		t->rdmap_hdr = buf + off;
		off += RDMAP_READ_REQ_LEN;
	}
	return (int)off;
}

unsigned int rdmap_term_attach(const struct iwarp_term_cause *cause,
			       bool read_req)
{
	const unsigned int hdr = RDMAP_TERM_FLAG_M | RDMAP_TERM_FLAG_D;

	switch (cause->layer) {
	case TERM_LAYER_DDP:
		if (cause->etype == DDP_ETYPE_TAGGED)
			return cause->ecode == DDP_TAGGED_BAD_VERSION ? 0 : hdr;
		if (cause->etype == DDP_ETYPE_UNTAGGED)
			return cause->ecode == DDP_UNTAGGED_BAD_VERSION ? 0
									: hdr;
		return 0;
	case TERM_LAYER_RDMAP:
		if (cause->etype == RDMAP_ETYPE_REMOTE_PROT)
			return hdr | (read_req ? RDMAP_TERM_FLAG_R : 0);
		if (cause->etype == RDMAP_ETYPE_REMOTE_OP) {
			if (cause->ecode == RDMAP_ECODE_BAD_VERSION ||
			    cause->ecode == RDMAP_ECODE_UNEXPECTED_OPCODE)
				return 0;
			return hdr;
		}
		return 0;
	default:
		return 0;
	}
}

struct term_name {
	uint8_t layer;
	uint8_t etype;
	uint8_t ecode;
	const char *name;
};

/*
 * Error codes by layer and type (RFC 5040, RFC 5041, RFC 5044, RFC 6581;
 * the IANA RDDP registry). Local catastrophic errors take any code.
 */
static const struct term_name term_names[] = {
	{ 0, 1, 0x00, "invalid STag" },
	{ 0, 1, 0x01, "base or bounds violation" },
	{ 0, 1, 0x02, "access rights violation" },
	{ 0, 1, 0x03, "STag not associated with RDMAP stream" },
	{ 0, 1, 0x04, "TO wrap" },
	{ 0, 1, 0x09, "STag cannot be invalidated" },
	{ 0, 1, 0xff, "unspecified" },
	{ 0, 2, 0x05, "invalid RDMAP version" },
	{ 0, 2, 0x06, "unexpected opcode" },
	{ 0, 2, 0x07, "catastrophic error, localized to RDMAP stream" },
	{ 0, 2, 0x08, "catastrophic error, global" },
	{ 0, 2, 0x09, "STag cannot be invalidated" },
	{ 0, 2, 0xff, "unspecified" },
	{ 1, 1, 0x00, "invalid STag" },
	{ 1, 1, 0x01, "base or bounds violation" },
	{ 1, 1, 0x02, "STag not associated with DDP stream" },
	{ 1, 1, 0x03, "TO wrap" },
	{ 1, 1, 0x04, "invalid DDP version" },
	{ 1, 2, 0x01, "invalid QN" },
	{ 1, 2, 0x02, "invalid MSN - no buffer available" },
	{ 1, 2, 0x03, "invalid MSN - MSN range is not valid" },
	{ 1, 2, 0x04, "invalid MO" },
	{ 1, 2, 0x05, "DDP message too long for available buffer" },
	{ 1, 2, 0x06, "invalid DDP version" },
	{ 2, 0, 0x01, "TCP connection closed, terminated or lost" },
	{ 2, 0, 0x02, "MPA CRC error" },
	{ 2, 0, 0x03, "MPA marker and ULPDU length mismatch" },
	{ 2, 0, 0x04, "invalid MPA Request/Reply frame" },
	{ 2, 0, 0x05, "local catastrophic" },
	{ 2, 0, 0x06, "insufficient IRD resources" },
	{ 2, 0, 0x07, "no matching RTR option" },
};

const char *iwarp_term_layer_name(unsigned int layer)
{
	static const char *const names[] = { "RDMAP", "DDP", "LLP" };

	return layer < ARRAY_SIZE(names) ? names[layer] : "?";
}

const char *iwarp_term_etype_name(unsigned int layer, unsigned int etype)
{
	static const char *const rdmap[] = { "local catastrophic",
					     "remote protection",
					     "remote operation" };
	static const char *const ddp[] = { "local catastrophic",
					   "tagged buffer", "untagged buffer",
					   "reserved for the LLP" };

	switch (layer) {
	case TERM_LAYER_RDMAP:
		return etype < ARRAY_SIZE(rdmap) ? rdmap[etype] : "?";
	case TERM_LAYER_DDP:
		return etype < ARRAY_SIZE(ddp) ? ddp[etype] : "?";
	case TERM_LAYER_LLP:
		return etype == LLP_ETYPE_MPA ? "MPA" : "?";
	default:
		return "?";
	}
}

const char *iwarp_term_ecode_name(unsigned int layer, unsigned int etype,
				  unsigned int ecode)
{
	if ((layer == TERM_LAYER_RDMAP || layer == TERM_LAYER_DDP) &&
	    etype == 0)
		return "local catastrophic";
	for (size_t i = 0; i < ARRAY_SIZE(term_names); i++) {
		const struct term_name *n = &term_names[i];

		if (n->layer == layer && n->etype == etype && n->ecode == ecode)
			return n->name;
	}
	/* siw and Wireshark keep one list of RDMAP codes for both types. */
	for (size_t i = 0; i < ARRAY_SIZE(term_names); i++) {
		const struct term_name *n = &term_names[i];

		if (layer == TERM_LAYER_RDMAP && n->layer == layer &&
		    n->ecode == ecode && etype <= RDMAP_ETYPE_REMOTE_OP)
			return n->name;
	}
	return "?";
}

int rdmap_term_build(const struct rdmap_term *t, bool crc, uint8_t *buf,
		     size_t size)
{
	/* RFC 5040: QN 2, MSN 1 (the only Terminate), MO 0, one segment. */
	const struct ddp_hdr h = {
		.last = true,
		.opcode = RDMAP_TERMINATE,
		.qn = DDP_QN_TERMINATE,
		.msn = 1,
	};
	size_t len = DDP_UNTAGGED_HDR_LEN + rdmap_term_len(t);
	uint8_t *ulpdu = buf + MPA_FPDU_HDR_LEN;
	int ret;

	if (size < mpa_fpdu_len(len))
		return -ENOBUFS;
	ddp_hdr_encode(&h, ulpdu, DDP_UNTAGGED_HDR_LEN);
	ret = rdmap_term_encode(t, ulpdu + DDP_UNTAGGED_HDR_LEN,
				len - DDP_UNTAGGED_HDR_LEN);
	if (ret < 0)
		return ret;
	return mpa_fpdu_finish(buf, len, crc);
}
