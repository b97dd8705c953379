/* SPDX-License-Identifier: MIT */
/*
 * MPA Request/Reply encode and parse (RFC 5044 section 7.1, RFC 6581), and
 * the two negotiation rules of MPA v2: the IRD/ORD pair and the RTR type.
 */
#include <errno.h>
#include <string.h>

#include "core/compiler.h"
#include "iwarp/byteorder.h"
#include "iwarp/crc32c.h"
#include "iwarp/mpa.h"

static const char mpa_key_req[MPA_KEY_LEN + 1] = MPA_KEY_REQ;
static const char mpa_key_rep[MPA_KEY_LEN + 1] = MPA_KEY_REP;

/* Offsets inside the 20-byte header (struct mpa_rr_hdr). */
#define MPA_OFF_FLAGS  16
#define MPA_OFF_REV    17
#define MPA_OFF_PD_LEN 18

void mpa_v2_block_put(uint8_t *p, bool p2p, unsigned int rtr, uint16_t ird,
		      uint16_t ord)
{
	uint16_t iw = ird & MPA_V2_VALUE_MASK;
	uint16_t ow = ord & MPA_V2_VALUE_MASK;

	if (p2p)
		iw |= MPA_V2_P2P;
	if (rtr & MPA_RTR_SEND)
		iw |= MPA_V2_SEND_RTR;
	if (rtr & MPA_RTR_WRITE)
		ow |= MPA_V2_WRITE_RTR;
	if (rtr & MPA_RTR_READ)
		ow |= MPA_V2_READ_RTR;
	put_be16(p, iw);
	put_be16(p + 2, ow);
}

void mpa_v2_block_get(const uint8_t *p, bool *p2p, unsigned int *rtr,
		      uint16_t *ird, uint16_t *ord)
{
	uint16_t iw = get_be16(p);
	uint16_t ow = get_be16(p + 2);
	unsigned int r = MPA_RTR_NONE;

	if (iw & MPA_V2_SEND_RTR)
		r |= MPA_RTR_SEND;
	if (ow & MPA_V2_WRITE_RTR)
		r |= MPA_RTR_WRITE;
	if (ow & MPA_V2_READ_RTR)
		r |= MPA_RTR_READ;
	*p2p = iw & MPA_V2_P2P;
	*rtr = r;
	*ird = iw & MPA_V2_VALUE_MASK;
	*ord = ow & MPA_V2_VALUE_MASK;
}

/* Checks what the caller asks us to send; 0 or -EINVAL / -EMSGSIZE. */
static int mpa_rr_check(const struct mpa_rr *rr)
{
	size_t pd_total;

	if (rr->type != MPA_RR_REQUEST && rr->type != MPA_RR_REPLY)
		return -EINVAL;
	if (rr->rev != MPA_REV_1 && rr->rev != MPA_REV_2)
		return -EINVAL;
	if (rr->flags & MPA_FLAG_RESERVED)
		return -EINVAL;
	/* S exists from Rev 2 on (RFC 6581); R only in a Reply (RFC 5044). */
	if (rr->rev == MPA_REV_1 && (rr->flags & MPA_FLAG_ENHANCED))
		return -EINVAL;
	if (rr->type == MPA_RR_REQUEST && (rr->flags & MPA_FLAG_REJECT))
		return -EINVAL;
	if (mpa_rr_enhanced(rr)) {
		if (rr->ird > MPA_IRD_ORD_MAX || rr->ord > MPA_IRD_ORD_MAX)
			return -EINVAL;
		if (rr->rtr & ~MPA_RTR_ALL)
			return -EINVAL;
	}
	if (rr->pd_len && !rr->pd)
		return -EINVAL;
	pd_total = mpa_rr_len(rr) - MPA_RR_HDR_LEN;
	if (pd_total > MPA_PRIVATE_DATA_MAX)
		return -EMSGSIZE;
	return 0;
}

int mpa_rr_encode(const struct mpa_rr *rr, uint8_t *buf, size_t size)
{
	struct mpa_rr_hdr *hdr = (struct mpa_rr_hdr *)buf;
	size_t len;
	uint8_t *pd;
	int ret;

	ret = mpa_rr_check(rr);
	if (ret)
		return ret;
	len = mpa_rr_len(rr);
	if (size < len)
		return -ENOBUFS;

	memcpy(hdr->key, rr->type == MPA_RR_REQUEST ? mpa_key_req : mpa_key_rep,
	       MPA_KEY_LEN);
	hdr->flags = rr->flags;
	hdr->rev = rr->rev;
	put_be16(hdr->pd_len, (uint16_t)(len - MPA_RR_HDR_LEN));
	pd = buf + MPA_RR_HDR_LEN;
	if (mpa_rr_enhanced(rr)) {
		mpa_v2_block_put(pd, rr->p2p, rr->rtr, rr->ird, rr->ord);
		pd += MPA_V2_BLOCK_LEN;
	}
	if (rr->pd_len)
		memcpy(pd, rr->pd, rr->pd_len);
	return (int)len;
}

int mpa_reject_encode(const struct mpa_rr *rr, uint8_t *buf, size_t size)
{
	struct mpa_rr rej = *rr;

	/* A reject is a Reply with R=1; siw and cxgb4 clear M in it. */
	rej.type = MPA_RR_REPLY;
	rej.flags =
		(uint8_t)((rej.flags | MPA_FLAG_REJECT) & ~MPA_FLAG_MARKERS);
	return mpa_rr_encode(&rej, buf, size);
}

/* Compares the key bytes present so far; 0 if they can still match. */
static int mpa_key_check(const uint8_t *buf, size_t len,
			 enum mpa_rr_type expect, enum mpa_rr_type *type)
{
	size_t n = MIN(len, (size_t)MPA_KEY_LEN);
	bool req = expect != MPA_RR_REPLY && !memcmp(buf, mpa_key_req, n);
	bool rep = expect != MPA_RR_REQUEST && !memcmp(buf, mpa_key_rep, n);

	if (!req && !rep)
		return -EBADMSG;
	*type = req ? MPA_RR_REQUEST : MPA_RR_REPLY;
	return 0;
}

int mpa_rr_parse(const uint8_t *buf, size_t len, enum mpa_rr_type expect,
		 size_t pd_cap, struct mpa_rr *rr, size_t *need)
{
	enum mpa_rr_type type = MPA_RR_ANY;
	size_t pd_total, frame;
	uint8_t flags, rev;
	int ret;

	if (need)
		*need = MPA_RR_HDR_LEN;
	if ((!buf && len) || !rr || (unsigned int)expect > MPA_RR_ANY)
		return -EINVAL;
	if (!len)
		return -EAGAIN;
	pd_cap = MIN(pd_cap, (size_t)MPA_RFC_PD_MAX);

	/* The checks follow byte order, so any split gives the same answer. */
	ret = mpa_key_check(buf, len, expect, &type);
	if (ret)
		return ret;
	if (len <= MPA_OFF_REV)
		return -EAGAIN;
	flags = buf[MPA_OFF_FLAGS];
	rev = buf[MPA_OFF_REV];
	if (rev != MPA_REV_1 && rev != MPA_REV_2)
		return -EPROTONOSUPPORT;
	if (len < MPA_RR_HDR_LEN)
		return -EAGAIN;

	/* RFC 5044 7.1: at most 512 bytes; the caller may allow less. */
	pd_total = get_be16(buf + MPA_OFF_PD_LEN);
	if (pd_total > pd_cap)
		return -EMSGSIZE;
	/* RFC 6581: with S the IRD/ORD block is part of the private data. */
	if (rev == MPA_REV_2 && (flags & MPA_FLAG_ENHANCED) &&
	    pd_total < MPA_V2_BLOCK_LEN)
		return -EPROTO;
	frame = MPA_RR_HDR_LEN + pd_total;
	if (need)
		*need = frame;
	if (len < frame)
		return -EAGAIN;

	memset(rr, 0, sizeof(*rr));
	rr->type = type;
	rr->rev = rev;
	rr->flags = flags;
	rr->pd = buf + MPA_RR_HDR_LEN;
	rr->pd_len = (uint16_t)pd_total;
	if (mpa_rr_enhanced(rr)) {
		unsigned int rtr;

		mpa_v2_block_get(rr->pd, &rr->p2p, &rtr, &rr->ird, &rr->ord);
		rr->rtr = (uint8_t)rtr;
		rr->pd += MPA_V2_BLOCK_LEN;
		rr->pd_len -= MPA_V2_BLOCK_LEN;
	}
	return (int)frame;
}

const char *mpa_strerror(int err)
{
	switch (err) {
	case 0:
		return "ok";
	case -EAGAIN:
		return "incomplete MPA frame";
	case -EBADMSG:
		return "bad MPA key";
	case -EMSGSIZE:
		return "too much MPA private data";
	case -EPROTONOSUPPORT:
		return "unsupported MPA revision";
	case -EPROTO:
		return "MPA v2 private data shorter than the IRD/ORD block";
	case -EINVAL:
		return "invalid MPA frame parameters";
	case -ENOBUFS:
		return "buffer too small for the MPA frame";
	case -ENOPROTOOPT:
		return "no matching RTR option";
	default:
		return err > 0 ? "MPA frame length" : "unknown MPA error";
	}
}

static uint32_t min3(uint32_t a, uint32_t b, uint32_t c)
{
	return MIN(MIN(a, b), c);
}

struct mpa_read_limits mpa_negotiate_ird_ord(struct mpa_read_limits own_req,
					     struct mpa_read_limits own_max,
					     struct mpa_read_limits peer)
{
	struct mpa_read_limits eff;

	/* Our IRD serves the peer's Reads (its ORD), and the reverse. */
	eff.ird = min3(own_req.ird, own_max.ird, peer.ord);
	eff.ord = min3(own_req.ord, own_max.ord, peer.ird);
	eff.ird = MIN(eff.ird, (uint32_t)MPA_IRD_ORD_MAX);
	eff.ord = MIN(eff.ord, (uint32_t)MPA_IRD_ORD_MAX);
	return eff;
}

enum mpa_rtr mpa_rtr_choose(unsigned int offered, unsigned int supported)
{
	/* In order of preference. */
	static const enum mpa_rtr pref[] = {
		MPA_RTR_WRITE,
		MPA_RTR_READ,
		MPA_RTR_SEND,
	};
	unsigned int both = offered & supported;

	for (size_t i = 0; i < ARRAY_SIZE(pref); i++)
		if (both & pref[i])
			return pref[i];
	return MPA_RTR_NONE;
}

int mpa_rtr_check_reply(unsigned int offered, unsigned int chosen)
{
	/* Exactly one bit, and one the Request offered. */
	if (!chosen || (chosen & (chosen - 1)) || (chosen & ~MPA_RTR_ALL))
		return -ENOPROTOOPT;
	if (!(chosen & offered))
		return -ENOPROTOOPT;
	return (int)chosen;
}

int mpa_fpdu_finish(uint8_t *fpdu, size_t ulpdu_len, bool crc)
{
	size_t body = MPA_FPDU_HDR_LEN + ulpdu_len;
	unsigned int pad = mpa_fpdu_pad(ulpdu_len);
	uint32_t c = 0;

	if (ulpdu_len > MPA_ULPDU_MAX)
		return -EMSGSIZE;
	put_be16(fpdu, (uint16_t)ulpdu_len);
	memset(fpdu + body, 0, pad);
	body += pad;
	/* The CRC covers the length field, the ULPDU and the pad. */
	if (crc)
		c = crc32c_oneshot(fpdu, body);
	crc32c_put_trailer(fpdu + body, c);
	return (int)(body + MPA_FPDU_CRC_LEN);
}

int mpa_fpdu_check_crc(const uint8_t *fpdu, size_t fpdu_len)
{
	size_t body;

	if (fpdu_len < MPA_FPDU_OVERHEAD ||
	    mpa_fpdu_len(get_be16(fpdu)) != fpdu_len)
		return -EINVAL;
	body = fpdu_len - MPA_FPDU_CRC_LEN;
	if (crc32c_oneshot(fpdu, body) != crc32c_get_trailer(fpdu + body))
		return -EBADMSG;
	return 0;
}
