/* SPDX-License-Identifier: MIT */
/* The RTR of MPA v2 peer-to-peer mode (RFC 6581 3): build, parse, answer. */
#include <string.h>
#include "iwarp/byteorder.h"
#include "iwarp/rtr.h"

int rtr_build(enum mpa_rtr type, bool crc, uint8_t *buf, size_t size)
{
	struct ddp_hdr h = { .last = true, .msn = 1 };
	uint8_t *ulpdu = buf + MPA_FPDU_HDR_LEN;
	size_t len;

	switch (type) {
	case MPA_RTR_WRITE:
		h.tagged = true;
		h.opcode = RDMAP_WRITE;
		h.stag = DDP_RTR_STAG;
		h.msn = 0;
		len = DDP_TAGGED_HDR_LEN;
		break;
	case MPA_RTR_READ:
		h.opcode = RDMAP_READ_REQ;
		h.qn = DDP_QN_READ_REQ;
		len = DDP_UNTAGGED_HDR_LEN + RDMAP_READ_REQ_LEN;
		break;
	case MPA_RTR_SEND:
		h.opcode = RDMAP_SEND;
		h.qn = DDP_QN_SEND;
		len = DDP_UNTAGGED_HDR_LEN;
		break;
	default:
		return -EINVAL;
	}
	if (size < mpa_fpdu_len(len))
		return -ENOBUFS;
	ddp_hdr_encode(&h, ulpdu, len);
	if (type == MPA_RTR_READ) {
		/* Zero bytes from source STag 1; nothing lands at the sink. */
		const struct rdmap_read_req rr = { .src_stag = DDP_RTR_STAG };

		rdmap_read_req_put(ulpdu + DDP_UNTAGGED_HDR_LEN, &rr);
	}
	return mpa_fpdu_finish(buf, len, crc);
}

/* The data path's name for rtr_build() (the RTR nudge). */
int ddp_rtr_build(enum mpa_rtr type, bool crc, uint8_t *buf, size_t size)
{
	return rtr_build(type, crc, buf, size);
}

size_t rtr_want(const uint8_t *buf, size_t len)
{
	if (len < MPA_FPDU_HDR_LEN)
		return RTR_FPDU_MIN;
	return mpa_fpdu_len(get_be16(buf));
}

/* Which RTR a decoded header of a ulpdu_len-byte ULPDU is, if any. */
static enum mpa_rtr rtr_type_of(const struct ddp_hdr *h, size_t ulpdu_len)
{
	if (h->tagged)
		return h->opcode == RDMAP_WRITE &&
				       ulpdu_len == DDP_TAGGED_HDR_LEN
			       ? MPA_RTR_WRITE
			       : MPA_RTR_NONE;
	if (h->opcode == RDMAP_SEND && ulpdu_len == DDP_UNTAGGED_HDR_LEN)
		return MPA_RTR_SEND;
	if (h->opcode == RDMAP_READ_REQ &&
	    ulpdu_len == DDP_UNTAGGED_HDR_LEN + RDMAP_READ_REQ_LEN)
		return MPA_RTR_READ;
	return MPA_RTR_NONE;
}

int rtr_parse(const uint8_t *buf, size_t len, bool crc, struct rtr_in *in)
{
	size_t ulpdu_len, total;

	memset(in, 0, sizeof(*in));
	if (len < MPA_FPDU_HDR_LEN)
		return -EAGAIN;
	ulpdu_len = get_be16(buf);
	total = mpa_fpdu_len(ulpdu_len);
	if (total > RTR_FPDU_MAX)
		return -EMSGSIZE;
	if (len < total)
		return -EAGAIN;
	if (crc && mpa_fpdu_check_crc(buf, total))
		return -EBADMSG;
	if (ddp_hdr_decode(buf + MPA_FPDU_HDR_LEN, ulpdu_len, &in->hdr) < 0) {
		memset(&in->hdr, 0, sizeof(in->hdr));
		return -EPROTO;
	}
	in->type = rtr_type_of(&in->hdr, ulpdu_len);
	if (in->type == MPA_RTR_NONE)
		return -EPROTO;
	if (in->type == MPA_RTR_READ)
		rdmap_read_req_get(buf + MPA_FPDU_HDR_LEN +
					   DDP_UNTAGGED_HDR_LEN,
				   &in->read_req);
	return (int)total;
}

int rtr_answer_build(const struct rtr_in *in, bool crc, uint8_t *buf,
		     size_t size)
{
	/* RFC 5040 4.4: a Read Response goes to the request's sink. */
	const struct ddp_hdr resp = {
		.opcode = RDMAP_READ_RESP,
		.tagged = true,
		.last = true,
		.stag = in->read_req.sink_stag,
		.to = in->read_req.sink_to,
	};

	if (in->type != MPA_RTR_READ)
		return 0;
	if (size < mpa_fpdu_len(DDP_TAGGED_HDR_LEN))
		return -ENOBUFS;
	ddp_hdr_encode(&resp, buf + MPA_FPDU_HDR_LEN, size - MPA_FPDU_HDR_LEN);
	return mpa_fpdu_finish(buf, DDP_TAGGED_HDR_LEN, crc);
}
