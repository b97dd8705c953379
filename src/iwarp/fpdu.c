/* SPDX-License-Identifier: MIT */
/*
 * FPDU receive parser and transmit builder: MPA framing (RFC 5044 section
 * 4) around DDP segments (RFC 5041) of RDMAP messages (RFC 5040).
 */
#include <errno.h>
#include <string.h>

#include "core/compiler.h"
#include "iwarp/byteorder.h"
#include "iwarp/crc32c.h"
#include "iwarp/fpdu.h"

_Static_assert(FPDU_HDR_MAX <= UINT8_MAX, "fpdu_rx.have is 8 bits");

/* ---- Receive ---------------------------------------------------------- */

void fpdu_rx_init(struct fpdu_rx *rx, bool crc)
{
	memset(rx, 0, sizeof(*rx));
	rx->state = FPDU_RX_HDR;
	rx->crc = crc;
	rx->want = MPA_FPDU_HDR_LEN;
	rx->max_ulpdu = MPA_ULPDU_MAX;
}

void fpdu_rx_set_max_ulpdu(struct fpdu_rx *rx, size_t max_ulpdu)
{
	if (max_ulpdu > MPA_ULPDU_MAX)
		max_ulpdu = MPA_ULPDU_MAX;
	if (max_ulpdu < DDP_TAGGED_HDR_LEN)
		max_ulpdu = DDP_TAGGED_HDR_LEN;
	rx->max_ulpdu = (uint16_t)max_ulpdu;
}

static void rx_error_ev(const struct fpdu_rx *rx, struct fpdu_ev *ev)
{
	ev->type = FPDU_EV_ERROR;
	ev->err = rx->err;
	ev->cause = rx->cause;
	ev->hdr = rx->hdr_in ? &rx->ddp : NULL;
}

/* Latches an error; the stream cannot be resynchronised after it. */
static bool rx_fail(struct fpdu_rx *rx, struct fpdu_ev *ev, int err,
		    uint8_t layer, uint8_t etype, uint8_t ecode)
{
	rx->state = FPDU_RX_ERROR;
	rx->err = err;
	rx->cause.layer = layer;
	rx->cause.etype = etype;
	rx->cause.ecode = ecode;
	rx_error_ev(rx, ev);
	return true;
}

/* raw[] holds the whole header (and body): report it, move to payload. */
static bool rx_header_done(struct fpdu_rx *rx, struct fpdu_ev *ev)
{
	size_t hlen = rx->have - MPA_FPDU_HDR_LEN;

	rx->payload_len = (uint16_t)(rx->ulpdu_len - hlen);
	rx->payload_off = 0;
	rx->pad = (uint8_t)mpa_fpdu_pad(rx->ulpdu_len);
	/* The CRC covers the length field and the whole ULPDU. */
	if (rx->crc && !rx->whole)
		rx->crc_reg = crc32c_update(crc32c_init(), rx->raw, rx->have);
	if (rx->payload_len) {
		rx->state = FPDU_RX_PAYLOAD;
	} else {
		rx->state = FPDU_RX_TRAILER;
		rx->have = 0;
		rx->want = rx->pad + MPA_FPDU_CRC_LEN;
	}
	ev->type = FPDU_EV_HEADER;
	ev->hdr = &rx->ddp;
	ev->ulpdu_len = rx->ulpdu_len;
	ev->payload_len = rx->payload_len;
	if (rx->body_in)
		ev->read_req = rx->read_req;
	return true;
}

/*
 * raw[] has reached rx->want bytes: decide what comes next. Returns true
 * with ev filled when there is an event (HEADER or ERROR), false when
 * rx->want grew and more header bytes are needed.
 */
static bool rx_hdr_advance(struct fpdu_rx *rx, struct fpdu_ev *ev)
{
	struct iwarp_term_cause cause;
	size_t hlen;
	int ret;

	if (rx->have == MPA_FPDU_HDR_LEN) {
		/* RFC 5044 4: ULPDU_Length, then wait for the DDP T bit. */
		rx->ulpdu_len = get_be16(rx->raw);
		if (rx->ulpdu_len > rx->max_ulpdu)
			return rx_fail(rx, ev, -EMSGSIZE, TERM_LAYER_LLP,
				       LLP_ETYPE_MPA,
				       MPA_ECODE_LOCAL_CATASTROPHIC);
		if (rx->ulpdu_len < DDP_TAGGED_HDR_LEN)
			goto too_short;
		rx->want = MPA_FPDU_HDR_LEN + 1;
		return false;
	}
	if (rx->have == MPA_FPDU_HDR_LEN + 1) {
		/* RFC 5041: the T bit gives the header length. */
		hlen = ddp_hdr_len(rx->raw[MPA_FPDU_HDR_LEN] & DDP_CTRL_TAGGED);
		if (rx->ulpdu_len < hlen)
			goto too_short;
		rx->want = (uint8_t)(MPA_FPDU_HDR_LEN + hlen);
		return false;
	}
	if (rx->hdr_in) {
		/* The Read Request body (RFC 5040) is in too. */
		rdmap_read_req_get(rx->raw + MPA_FPDU_HDR_LEN +
					   DDP_UNTAGGED_HDR_LEN,
				   &rx->read_req);
		rx->body_in = true;
		return rx_header_done(rx, ev);
	}

	ddp_hdr_decode(rx->raw + MPA_FPDU_HDR_LEN, rx->have - MPA_FPDU_HDR_LEN,
		       &rx->ddp);
	rx->hdr_in = true;
	ret = ddp_hdr_check(&rx->ddp, &cause);
	if (ret)
		return rx_fail(rx, ev, ret, cause.layer, cause.etype,
			       cause.ecode);
	if (!rx->ddp.tagged && rx->ddp.opcode == RDMAP_READ_REQ) {
		/* One segment of exactly header + body, no payload. */
		if (!rx->ddp.last || rx->ulpdu_len != FPDU_READ_REQ_ULPDU)
			goto bad_rdmap;
		rx->want = MPA_FPDU_HDR_LEN + FPDU_READ_REQ_ULPDU;
		return false;
	}
	if (!rx->ddp.tagged && rx->ddp.opcode == RDMAP_TERMINATE &&
	    !rx->ddp.last)
		goto bad_rdmap;
	return rx_header_done(rx, ev);

too_short:
	/* Not even a DDP header: nothing to quote in the Terminate. */
	return rx_fail(rx, ev, -EBADMSG, TERM_LAYER_DDP, DDP_ETYPE_CATASTROPHIC,
		       0);
bad_rdmap:
	return rx_fail(rx, ev, -EPROTO, TERM_LAYER_RDMAP, RDMAP_ETYPE_REMOTE_OP,
		       RDMAP_ECODE_CATASTROPHIC_STREAM);
}

/* Collects up to rx->want bytes into dst; returns the bytes taken. */
static size_t rx_collect(struct fpdu_rx *rx, uint8_t *dst, const uint8_t *buf,
			 size_t len)
{
	size_t n = MIN((size_t)(rx->want - rx->have), len);

	memcpy(dst + rx->have, buf, n);
	rx->have = (uint8_t)(rx->have + n);
	return n;
}

/* Pad and CRC are in: check the CRC and get ready for the next FPDU. */
static void rx_trailer_done(struct fpdu_rx *rx, struct fpdu_ev *ev)
{
	bool ok = true;

	if (rx->crc && rx->whole) {
		ok = rx->whole_crc_ok;
	} else if (rx->crc) {
		uint32_t c = crc32c_update(rx->crc_reg, rx->trailer, rx->pad);

		ok = crc32c_final(c) ==
		     crc32c_get_trailer(rx->trailer + rx->pad);
	}
	rx->whole = false;
	ev->type = FPDU_EV_END;
	ev->hdr = &rx->ddp;
	ev->crc_ok = ok;
	ev->last = rx->ddp.last;
	if (rx->body_in)
		ev->read_req = rx->read_req;
	rx->state = FPDU_RX_HDR;
	rx->have = 0;
	rx->want = MPA_FPDU_HDR_LEN;
}

/*
 * At an FPDU's first byte: if all of it (length field, ULPDU, pad, CRC)
 * is in p, checks its CRC now in one pass instead of in three pieces as
 * the parts go by; the verdict still comes with FPDU_EV_END. A length
 * the header steps will refuse is left to them.
 */
/* The CRC of a whole FPDU whose length field, ULPDU and pad are the body
 * bytes at p, against the trailer behind them. */
static bool whole_crc_ok(const uint8_t *p, size_t body)
{
	return crc32c_final(crc32c_update(crc32c_init(), p, body)) ==
	       crc32c_get_trailer(p + body);
}

static void rx_check_whole(struct fpdu_rx *rx, const uint8_t *p, size_t len)
{
	size_t ulpdu, body;

	if (!rx->crc || len < MPA_FPDU_HDR_LEN)
		return;
	ulpdu = get_be16(p);
	if (ulpdu > rx->max_ulpdu || ulpdu < DDP_TAGGED_HDR_LEN)
		return;
	body = MPA_FPDU_HDR_LEN + ulpdu + mpa_fpdu_pad(ulpdu);
	if (len < body + MPA_FPDU_CRC_LEN)
		return;
	rx->whole = true;
	rx->whole_crc_ok = whole_crc_ok(p, body);
}

/*
 * At an FPDU's first byte, with whole events on: if all of the FPDU is
 * in p and its header is one the header steps accept, reports it as one
 * FPDU_EV_WHOLE and returns its length; else 0, and the steps take it.
 * raw[] gets the header (and a Read Request's body) as they would, for
 * fpdu_rx_term().
 */
static NDK_HOT size_t rx_whole(struct fpdu_rx *rx, const uint8_t *p, size_t len,
			       struct fpdu_ev *ev)
{
	size_t ulpdu, hlen, body, total;
	struct iwarp_term_cause cause;

	if (len < MPA_FPDU_HDR_LEN + DDP_TAGGED_HDR_LEN)
		return 0;
	ulpdu = get_be16(p);
	hlen = ddp_hdr_len(p[MPA_FPDU_HDR_LEN] & DDP_CTRL_TAGGED);
	if (ulpdu > rx->max_ulpdu || ulpdu < hlen)
		return 0;
	body = MPA_FPDU_HDR_LEN + ulpdu + mpa_fpdu_pad(ulpdu);
	/* The CRC field is there even when CRC is off (RFC 5044 4). */
	total = body + MPA_FPDU_CRC_LEN;
	if (len < total)
		return 0;
	ddp_hdr_decode(p + MPA_FPDU_HDR_LEN, hlen, &rx->ddp);
	if (ddp_hdr_check(&rx->ddp, &cause))
		return 0;
	if (!rx->ddp.tagged && rx->ddp.opcode == RDMAP_READ_REQ) {
		if (!rx->ddp.last || ulpdu != FPDU_READ_REQ_ULPDU)
			return 0;
		hlen = FPDU_READ_REQ_ULPDU;
		rdmap_read_req_get(p + MPA_FPDU_HDR_LEN + DDP_UNTAGGED_HDR_LEN,
				   &rx->read_req);
		rx->body_in = true;
		ev->read_req = rx->read_req;
	} else if (!rx->ddp.tagged && rx->ddp.opcode == RDMAP_TERMINATE &&
		   !rx->ddp.last) {
		return 0;
	}
	memcpy(rx->raw, p, MPA_FPDU_HDR_LEN + hlen);
	rx->hdr_in = true;
	rx->ulpdu_len = (uint16_t)ulpdu;
	rx->payload_len = (uint16_t)(ulpdu - hlen);
	rx->payload_off = rx->payload_len;
	rx->pad = (uint8_t)mpa_fpdu_pad(ulpdu);
	ev->type = FPDU_EV_WHOLE;
	ev->hdr = &rx->ddp;
	ev->ulpdu_len = rx->ulpdu_len;
	ev->payload_len = rx->payload_len;
	ev->data = rx->payload_len ? p + MPA_FPDU_HDR_LEN + hlen : NULL;
	ev->len = rx->payload_len;
	ev->offset = 0;
	ev->crc_ok = !rx->crc || whole_crc_ok(p, body);
	ev->last = rx->ddp.last;
	return total;
}

NDK_HOT size_t fpdu_rx_step(struct fpdu_rx *rx, const uint8_t *buf, size_t len,
			    struct fpdu_ev *ev)
{
	size_t used = 0, n;

	memset(ev, 0, sizeof(*ev));
	while (used < len) {
		switch (rx->state) {
		case FPDU_RX_HDR:
			if (rx->have == 0) {
				/* A new FPDU: forget the last one's header. */
				rx->hdr_in = false;
				rx->body_in = false;
				if (rx->whole_ev) {
					n = rx_whole(rx, buf + used, len - used,
						     ev);
					if (n) {
						used += n;
						goto out;
					}
				}
				rx_check_whole(rx, buf + used, len - used);
			}
			used += rx_collect(rx, rx->raw, buf + used, len - used);
			if (rx->have == rx->want && rx_hdr_advance(rx, ev))
				goto out;
			break;
		case FPDU_RX_PAYLOAD:
			/* Hand out as much as is here, in place. */
			n = MIN((size_t)(rx->payload_len - rx->payload_off),
				len - used);
			ev->type = FPDU_EV_PAYLOAD;
			ev->hdr = &rx->ddp;
			ev->data = buf + used;
			ev->len = n;
			ev->offset = rx->payload_off;
			if (rx->crc && !rx->whole)
				rx->crc_reg = crc32c_update(rx->crc_reg,
							    buf + used, n);
			rx->payload_off = (uint16_t)(rx->payload_off + n);
			used += n;
			if (rx->payload_off == rx->payload_len) {
				rx->state = FPDU_RX_TRAILER;
				rx->have = 0;
				rx->want = rx->pad + MPA_FPDU_CRC_LEN;
			}
			goto out;
		case FPDU_RX_TRAILER:
			used += rx_collect(rx, rx->trailer, buf + used,
					   len - used);
			if (rx->have == rx->want) {
				rx_trailer_done(rx, ev);
				goto out;
			}
			break;
		default: /* FPDU_RX_ERROR */
			rx_error_ev(rx, ev);
			return 0;
		}
	}
	if (rx->state == FPDU_RX_ERROR)
		rx_error_ev(rx, ev);
out:
	rx->stream_off += used;
	return used;
}

void fpdu_rx_term(const struct fpdu_rx *rx,
		  const struct iwarp_term_cause *cause, struct rdmap_term *t)
{
	unsigned int flags;

	memset(t, 0, sizeof(*t));
	t->cause = *cause;
	/* Quote only what arrived (RFC 5040: D and R say what is there). */
	if (!rx->hdr_in)
		return;
	flags = rdmap_term_attach(cause, rx->body_in);
	if (!(flags & RDMAP_TERM_FLAG_D))
		return;
	t->ddp_hdr = rx->raw + MPA_FPDU_HDR_LEN;
	t->m = flags & RDMAP_TERM_FLAG_M;
	t->ddp_seg_len = rx->ulpdu_len;
	if ((flags & RDMAP_TERM_FLAG_R) && rx->body_in)
		t->rdmap_hdr =
			rx->raw + MPA_FPDU_HDR_LEN + DDP_UNTAGGED_HDR_LEN;
}

int fpdu_term_parse(const struct ddp_hdr *hdr, const uint8_t *body, size_t len,
		    struct rdmap_term *t)
{
	int ret;

	if (hdr->tagged || hdr->opcode != RDMAP_TERMINATE)
		return -EPROTO;
	ret = rdmap_term_decode(body, len, t);
	return ret < 0 ? ret : 0;
}

/* ---- Transmit --------------------------------------------------------- */

NDK_HOT int fpdu_tx_hdr(uint8_t *hdr, const struct ddp_hdr *ddp,
			size_t payload_len, const struct rdmap_read_req *rr)
{
	bool read_req = !ddp->tagged && ddp->opcode == RDMAP_READ_REQ;
	size_t ulpdu;
	int ret;

	/* The Read Request body is its whole message (RFC 5040). */
	if (read_req != (rr != NULL) || (read_req && payload_len))
		return -EINVAL;
	if (payload_len > MPA_ULPDU_MAX)
		return -EMSGSIZE;
	ulpdu = fpdu_ulpdu_len(ddp, payload_len);
	if (ulpdu > MPA_ULPDU_MAX)
		return -EMSGSIZE;
	ret = ddp_hdr_encode(ddp, hdr + MPA_FPDU_HDR_LEN,
			     FPDU_HDR_MAX - MPA_FPDU_HDR_LEN);
	if (ret < 0)
		return ret;
	put_be16(hdr, (uint16_t)ulpdu);
	if (read_req)
		rdmap_read_req_put(
			hdr + MPA_FPDU_HDR_LEN + DDP_UNTAGGED_HDR_LEN, rr);
	return (int)(MPA_FPDU_HDR_LEN + ulpdu - payload_len);
}

NDK_HOT size_t fpdu_tx_trailer(uint8_t *trailer, uint32_t crc_reg,
			       size_t ulpdu_len, bool crc)
{
	unsigned int pad = mpa_fpdu_pad(ulpdu_len);
	uint32_t c = 0;

	/* RFC 5044 4: zero pad to 4 bytes, then the CRC over all before. */
	memset(trailer, 0, pad);
	if (crc)
		c = crc32c_final(crc32c_update(crc_reg, trailer, pad));
	crc32c_put_trailer(trailer + pad, c);
	return pad + MPA_FPDU_CRC_LEN;
}

int fpdu_tx_build(uint8_t *buf, size_t size, const struct ddp_hdr *ddp,
		  const struct rdmap_read_req *rr, const void *payload,
		  size_t payload_len, bool crc)
{
	uint8_t hdr[FPDU_HDR_MAX];
	struct fpdu_tx_crc c;
	size_t ulpdu, off;
	int hlen;

	hlen = fpdu_tx_hdr(hdr, ddp, payload_len, rr);
	if (hlen < 0)
		return hlen;
	ulpdu = fpdu_ulpdu_len(ddp, payload_len);
	if (size < mpa_fpdu_len(ulpdu))
		return -ENOBUFS;
	memcpy(buf, hdr, (size_t)hlen);
	if (payload_len)
		memcpy(buf + hlen, payload, payload_len);
	off = (size_t)hlen + payload_len;
	fpdu_tx_crc_init(&c, crc);
	fpdu_tx_crc_add(&c, buf, off);
	off += fpdu_tx_trailer(buf + off, c.reg, ulpdu, crc);
	return (int)off;
}

NDK_HOT size_t fpdu_max_payload(size_t mulpdu, bool tagged)
{
	size_t hlen = ddp_hdr_len(tagged);

	if (mulpdu > MPA_ULPDU_MAX)
		mulpdu = MPA_ULPDU_MAX;
	return mulpdu > hlen ? mulpdu - hlen : 0;
}

NDK_HOT size_t fpdu_seg_at(const struct ddp_hdr *msg, size_t msg_len,
			   size_t off, size_t max_payload, struct ddp_hdr *h)
{
	size_t n;

	if (off > msg_len)
		off = msg_len;
	n = MIN(msg_len - off, max_payload);
	*h = *msg;
	/* RFC 5041: only the last segment of a message has L set. */
	h->last = off + n == msg_len;
	if (h->tagged)
		h->to = msg->to + off; /* TO of this segment's first byte */
	else
		h->mo = (uint32_t)off; /* same MSN, MO = bytes before */
	return n;
}

int fpdu_seg_init(struct fpdu_seg *s, const struct ddp_hdr *msg, size_t msg_len,
		  size_t max_payload)
{
	if (!max_payload)
		return -EINVAL;
	if (!msg->tagged && (uint64_t)msg_len > UINT32_MAX)
		return -EINVAL;
	s->msg = *msg;
	s->msg_len = msg_len;
	s->max_payload = max_payload;
	s->off = 0;
	s->done = false;
	return 0;
}

bool fpdu_seg_next(struct fpdu_seg *s, struct ddp_hdr *h, size_t *off,
		   size_t *payload_len)
{
	size_t n;

	if (s->done)
		return false;
	n = fpdu_seg_at(&s->msg, s->msg_len, s->off, s->max_payload, h);
	*off = s->off;
	*payload_len = n;
	s->off += n;
	s->done = h->last;
	return true;
}
