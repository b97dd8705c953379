/* SPDX-License-Identifier: MIT */
/*
 * FPDU receive parser and transmit builder (RFC 5044 section 4 framing of
 * RFC 5041/5040 segments): the known-answer FPDUs of kat.h parsed
 * byte for byte, a multi-FPDU stream fed at every split point and in
 * random chunks, CRC failures, every malformed case with its errno and
 * Terminate cause, and build -> parse round trips over many MSS values
 * and message sizes.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>
#include <cmocka.h>

#include "iwarp/crc32c.h"
#include "iwarp/ddp.h"
#include "iwarp/fpdu.h"
#include "iwarp/mpa.h"
#include "kat.h"
#include "testutil.h"

static uint32_t rng_state = 0x6b43a9b5;

static uint32_t rng(void)
{
	return tu_xorshift(&rng_state);
}

/* ---- Trace: the events of one run, payload chunks merged per FPDU ---- */

enum rec_type { REC_HDR = 1, REC_DATA, REC_END, REC_ERR };

struct rec {
	enum rec_type type;
	struct ddp_hdr h;
	uint16_t ulpdu_len;
	uint16_t payload_len;
	struct rdmap_read_req rr;
	size_t data_off; /* REC_DATA: bytes in trace.data */
	size_t data_len;
	bool crc_ok;
	bool last;
	int err;
	struct iwarp_term_cause cause;
};

#define TRACE_RECS 512
#define TRACE_DATA (256 * 1024)

struct trace {
	struct rec rec[TRACE_RECS];
	size_t n;
	uint8_t data[TRACE_DATA];
	size_t dlen;
	size_t consumed; /* stream bytes consumed in all */
	bool error;
	/* checker state */
	bool in_fpdu;
	size_t next_off;
	size_t payload_len;
};

static struct trace trace_a, trace_b;
/* The chunked runs ask for whole events (the reference never does). */
static bool whole_chunked;
static unsigned long whole_seen;

static void trace_reset(struct trace *t)
{
	t->n = 0;
	t->dlen = 0;
	t->consumed = 0;
	t->error = false;
	t->in_fpdu = false;
	t->next_off = 0;
	t->payload_len = 0;
}

static struct rec *trace_add(struct trace *t, enum rec_type type)
{
	struct rec *r;

	assert_true(t->n < TRACE_RECS);
	r = &t->rec[t->n++];
	memset(r, 0, sizeof(*r));
	r->type = type;
	return r;
}

/*
 * Checks one step's result against the API's promises and records it:
 * chunks inside buf and at the expected offset, END only after all the
 * payload, HEADER only between FPDUs, progress on every call.
 */
static void trace_step(struct trace *t, const uint8_t *buf, size_t len,
		       size_t used, const struct fpdu_ev *ev)
{
	struct rec *r;

	assert_true(used <= len);
	if (used == 0)
		assert_true(len == 0 || ev->type == FPDU_EV_ERROR);
	switch (ev->type) {
	case FPDU_EV_NONE:
		assert_int_equal(used, len);
		break;
	case FPDU_EV_HEADER:
		assert_false(t->in_fpdu);
		assert_non_null(ev->hdr);
		assert_int_equal(ev->ulpdu_len,
				 fpdu_ulpdu_len(ev->hdr, ev->payload_len));
		t->in_fpdu = true;
		t->next_off = 0;
		t->payload_len = ev->payload_len;
		r = trace_add(t, REC_HDR);
		r->h = *ev->hdr;
		r->ulpdu_len = ev->ulpdu_len;
		r->payload_len = ev->payload_len;
		r->rr = ev->read_req;
		break;
	case FPDU_EV_PAYLOAD:
		assert_true(t->in_fpdu);
		assert_true(ev->len > 0);
		assert_true(ev->data >= buf &&
			    ev->data + ev->len <= buf + used);
		assert_int_equal(ev->offset, t->next_off);
		assert_true(ev->offset + ev->len <= t->payload_len);
		t->next_off += ev->len;
		r = t->n ? &t->rec[t->n - 1] : NULL;
		if (!r || r->type != REC_DATA) {
			r = trace_add(t, REC_DATA);
			r->data_off = t->dlen;
		}
		assert_true(t->dlen + ev->len <= TRACE_DATA);
		memcpy(t->data + t->dlen, ev->data, ev->len);
		t->dlen += ev->len;
		r->data_len += ev->len;
		break;
	case FPDU_EV_END:
		assert_true(t->in_fpdu);
		assert_int_equal(t->next_off, t->payload_len);
		assert_non_null(ev->hdr);
		assert_int_equal(ev->last, ev->hdr->last);
		t->in_fpdu = false;
		r = trace_add(t, REC_END);
		r->crc_ok = ev->crc_ok;
		r->last = ev->last;
		break;
	case FPDU_EV_WHOLE:
		/* HEADER, the payload in one piece, END: recorded as such. */
		assert_false(t->in_fpdu);
		assert_non_null(ev->hdr);
		assert_int_equal(ev->ulpdu_len,
				 fpdu_ulpdu_len(ev->hdr, ev->payload_len));
		assert_int_equal(ev->len, ev->payload_len);
		assert_int_equal(ev->offset, 0);
		assert_int_equal(ev->last, ev->hdr->last);
		whole_seen++;
		r = trace_add(t, REC_HDR);
		r->h = *ev->hdr;
		r->ulpdu_len = ev->ulpdu_len;
		r->payload_len = ev->payload_len;
		r->rr = ev->read_req;
		if (ev->len) {
			assert_true(ev->data >= buf &&
				    ev->data + ev->len <= buf + used);
			assert_true(t->dlen + ev->len <= TRACE_DATA);
			r = trace_add(t, REC_DATA);
			r->data_off = t->dlen;
			r->data_len = ev->len;
			memcpy(t->data + t->dlen, ev->data, ev->len);
			t->dlen += ev->len;
		} else {
			assert_null(ev->data);
		}
		r = trace_add(t, REC_END);
		r->crc_ok = ev->crc_ok;
		r->last = ev->last;
		break;
	case FPDU_EV_ERROR:
		assert_true(ev->err < 0);
		t->error = true;
		r = trace_add(t, REC_ERR);
		r->err = ev->err;
		r->cause = ev->cause;
		break;
	default:
		fail();
	}
}

/* Chunk sizes: a fixed size, or random up to a bound (0: whole). */
struct chunker {
	size_t fixed;
	size_t max_rand;
	const size_t *cuts; /* or explicit cut points, ascending */
	size_t ncuts;
	size_t pos;
	size_t ci;
};

static size_t chunk_next(struct chunker *c, size_t left)
{
	size_t n = left;

	if (c->cuts) {
		while (c->ci < c->ncuts && c->cuts[c->ci] <= c->pos)
			c->ci++;
		if (c->ci < c->ncuts)
			n = c->cuts[c->ci] - c->pos;
	} else if (c->fixed) {
		n = c->fixed;
	} else if (c->max_rand) {
		n = 1 + rng() % c->max_rand;
	}
	if (n > left)
		n = left;
	c->pos += n;
	return n;
}

/*
 * Feeds s to rx in the chunks c gives, each copied into its own heap
 * buffer of exactly that size (ASan catches a read past a chunk, and a
 * payload pointer into s instead of the chunk fails the checks).
 */
static void feed(struct fpdu_rx *rx, const uint8_t *s, size_t len,
		 struct chunker *c, struct trace *t)
{
	size_t pos = 0;
	struct fpdu_ev ev;
	size_t used;

	trace_reset(t);
	while (pos < len && !t->error) {
		size_t n = chunk_next(c, len - pos), off = 0;
		uint8_t *buf = malloc(n);

		assert_non_null(buf);
		assert_true(n > 0);
		memcpy(buf, s + pos, n);
		for (;;) {
			used = fpdu_rx_step(rx, buf + off, n - off, &ev);
			trace_step(t, buf + off, n - off, used, &ev);
			off += used;
			if (ev.type == FPDU_EV_NONE || ev.type == FPDU_EV_ERROR)
				break;
		}
		free(buf);
		pos += off;
	}
	t->consumed = pos;
	/* An empty step: NONE, or the latched error again. */
	used = fpdu_rx_step(rx, s, 0, &ev);
	assert_int_equal(used, 0);
	if (t->error) {
		assert_int_equal(ev.type, FPDU_EV_ERROR);
		assert_int_equal(ev.err, t->rec[t->n - 1].err);
	} else {
		assert_int_equal(ev.type, FPDU_EV_NONE);
	}
}

static void rec_equal(const struct trace *ta, const struct rec *a,
		      const struct trace *tb, const struct rec *b)
{
	assert_int_equal(a->type, b->type);
	switch (a->type) {
	case REC_HDR:
		assert_int_equal(a->h.opcode, b->h.opcode);
		assert_int_equal(a->h.tagged, b->h.tagged);
		assert_int_equal(a->h.last, b->h.last);
		assert_int_equal(a->h.dv, b->h.dv);
		assert_int_equal(a->h.rv, b->h.rv);
		assert_int_equal(a->h.stag, b->h.stag);
		assert_int_equal(a->h.to, b->h.to);
		assert_int_equal(a->h.inv_stag, b->h.inv_stag);
		assert_int_equal(a->h.qn, b->h.qn);
		assert_int_equal(a->h.msn, b->h.msn);
		assert_int_equal(a->h.mo, b->h.mo);
		assert_int_equal(a->ulpdu_len, b->ulpdu_len);
		assert_int_equal(a->payload_len, b->payload_len);
		assert_memory_equal(&a->rr, &b->rr, sizeof(a->rr));
		break;
	case REC_DATA:
		assert_int_equal(a->data_len, b->data_len);
		assert_memory_equal(ta->data + a->data_off,
				    tb->data + b->data_off, a->data_len);
		break;
	case REC_END:
		assert_int_equal(a->crc_ok, b->crc_ok);
		assert_int_equal(a->last, b->last);
		break;
	case REC_ERR:
		assert_int_equal(a->err, b->err);
		assert_int_equal(a->cause.layer, b->cause.layer);
		assert_int_equal(a->cause.etype, b->cause.etype);
		assert_int_equal(a->cause.ecode, b->cause.ecode);
		break;
	}
}

static void trace_equal(const struct trace *a, const struct trace *b)
{
	assert_int_equal(a->n, b->n);
	assert_int_equal(a->consumed, b->consumed);
	assert_int_equal(a->error, b->error);
	for (size_t i = 0; i < a->n; i++)
		rec_equal(a, &a->rec[i], b, &b->rec[i]);
}

/* The whole stream in one buffer: the reference every split must match. */
static void run_whole(const uint8_t *s, size_t len, bool crc, size_t max,
		      struct trace *t)
{
	struct fpdu_rx rx;
	struct chunker c = { 0 };

	fpdu_rx_init(&rx, crc);
	if (max)
		fpdu_rx_set_max_ulpdu(&rx, max);
	feed(&rx, s, len, &c, t);
}

static void run_chunked(const uint8_t *s, size_t len, bool crc, size_t max,
			struct chunker *c, struct trace *t)
{
	struct fpdu_rx rx;

	fpdu_rx_init(&rx, crc);
	fpdu_rx_set_whole(&rx, whole_chunked);
	if (max)
		fpdu_rx_set_max_ulpdu(&rx, max);
	feed(&rx, s, len, c, t);
}

/* Every single split point, byte by byte, and random chunkings. */
static void check_splits(const uint8_t *s, size_t len, bool crc, size_t max,
			 unsigned int random_runs)
{
	run_whole(s, len, crc, max, &trace_a);
	for (size_t cut = 0; cut <= len; cut++) {
		struct chunker c = { .cuts = &cut, .ncuts = 1 };

		run_chunked(s, len, crc, max, &c, &trace_b);
		trace_equal(&trace_a, &trace_b);
	}
	for (size_t fixed = 1; fixed <= 9; fixed++) {
		struct chunker c = { .fixed = fixed };

		run_chunked(s, len, crc, max, &c, &trace_b);
		trace_equal(&trace_a, &trace_b);
	}
	for (unsigned int i = 0; i < random_runs; i++) {
		static const size_t bounds[] = { 3, 7, 16, 64, 300, 2000 };
		struct chunker c = { .max_rand = bounds[i % 6] };

		run_chunked(s, len, crc, max, &c, &trace_b);
		trace_equal(&trace_a, &trace_b);
	}
}

/* ---- Builders for test streams --------------------------------------- */

/*
 * One FPDU built the zero-copy way: header, the payload as up to four
 * "SGEs" folded into the CRC one by one, trailer. Cross-checked against
 * fpdu_tx_build(). Returns the FPDU length written at out.
 */
static size_t emit_fpdu(uint8_t *out, size_t size, const struct ddp_hdr *h,
			const struct rdmap_read_req *rr, const uint8_t *payload,
			size_t n, bool crc)
{
	uint8_t hdr[FPDU_HDR_MAX], tr[FPDU_TRAILER_MAX];
	struct fpdu_tx_crc c;
	size_t off, tl, left, ulpdu = fpdu_ulpdu_len(h, n);
	int hl;

	hl = fpdu_tx_hdr(hdr, h, n, rr);
	assert_true(hl > 0);
	assert_int_equal((size_t)hl + n, MPA_FPDU_HDR_LEN + ulpdu);
	assert_true(mpa_fpdu_len(ulpdu) <= size);
	fpdu_tx_crc_init(&c, crc);
	fpdu_tx_crc_add(&c, hdr, (size_t)hl);
	memcpy(out, hdr, (size_t)hl);
	off = (size_t)hl;
	for (left = n; left;) {
		size_t piece = left > 1 ? 1 + rng() % left : left;

		if (rng() % 4 == 0)
			piece = left;
		fpdu_tx_crc_add(&c, payload + (n - left), piece);
		memcpy(out + off, payload + (n - left), piece);
		off += piece;
		left -= piece;
	}
	tl = fpdu_tx_trailer(tr, c.reg, ulpdu, crc);
	assert_int_equal(tl, mpa_fpdu_pad(ulpdu) + MPA_FPDU_CRC_LEN);
	memcpy(out + off, tr, tl);
	off += tl;
	assert_int_equal(off, mpa_fpdu_len(ulpdu));
	assert_int_equal(off % 4, 0);

	/* The one-buffer builder gives the same bytes. */
	{
		uint8_t *one = malloc(off);

		assert_non_null(one);
		assert_int_equal(
			fpdu_tx_build(one, off, h, rr, payload, n, crc),
			(int)off);
		assert_memory_equal(one, out, off);
		if (off > 0)
			assert_int_equal(fpdu_tx_build(one, off - 1, h, rr,
						       payload, n, crc),
					 -ENOBUFS);
		free(one);
	}
	return off;
}

/* A whole message, segmented for mulpdu. Returns the bytes written. */
static size_t emit_msg(uint8_t *out, size_t size, const struct ddp_hdr *msg,
		       const uint8_t *payload, size_t len, size_t mulpdu,
		       bool crc, unsigned int *nfpdu)
{
	struct fpdu_seg s;
	struct ddp_hdr h;
	size_t off, n, total = 0;

	assert_int_equal(fpdu_seg_init(&s, msg, len,
				       fpdu_max_payload(mulpdu, msg->tagged)),
			 0);
	*nfpdu = 0;
	while (fpdu_seg_next(&s, &h, &off, &n)) {
		total += emit_fpdu(out + total, size - total, &h, NULL,
				   payload ? payload + off : NULL, n, crc);
		(*nfpdu)++;
	}
	return total;
}

/*
 * The multi-FPDU stream: a Send over 3 FPDUs, a Write, a Read Request,
 * a Read Response (two FPDUs), zero-length Send and Write, a SendSE with
 * Invalidate, and a Terminate. Pads 0-3 all occur.
 */
static uint8_t pattern[4096];

static size_t build_stream(uint8_t *s, size_t size, bool crc)
{
	static const uint8_t term_body[] = { 0x12, 0x03, 0xc0, 0x00 };
	struct ddp_hdr send = { .opcode = RDMAP_SEND, .qn = 0, .msn = 1 };
	struct ddp_hdr write = { .tagged = true,
				 .opcode = RDMAP_WRITE,
				 .stag = 0x4200,
				 .to = 0xfffffffffff0ull };
	struct ddp_hdr rreq = { .opcode = RDMAP_READ_REQ,
				.qn = DDP_QN_READ_REQ,
				.msn = 1,
				.last = true };
	struct rdmap_read_req rr = { .sink_stag = 0x1234,
				     .sink_to = 0x1000,
				     .size = 77,
				     .src_stag = 0x5678,
				     .src_to = 0x2000 };
	struct ddp_hdr resp = { .tagged = true,
				.opcode = RDMAP_READ_RESP,
				.stag = 0x1234,
				.to = 0x1000 };
	struct ddp_hdr term = { .opcode = RDMAP_TERMINATE,
				.qn = DDP_QN_TERMINATE,
				.msn = 1,
				.last = true };
	size_t len = 0;
	unsigned int n;

	for (size_t i = 0; i < sizeof(pattern); i++)
		pattern[i] = (uint8_t)(i * 7 + (i >> 8));
	/* 1000-byte Send cut at 400 payload bytes: 400 + 400 + 200. */
	len += emit_msg(s + len, size - len, &send, pattern, 1000, 418, crc,
			&n);
	assert_int_equal(n, 3);
	len += emit_msg(s + len, size - len, &write, pattern + 5, 101, 1442,
			crc, &n);
	assert_int_equal(n, 1);
	len += emit_fpdu(s + len, size - len, &rreq, &rr, NULL, 0, crc);
	len += emit_msg(s + len, size - len, &resp, pattern + 9, 77, 60, crc,
			&n);
	assert_int_equal(n, 2);
	send.msn = 2;
	len += emit_msg(s + len, size - len, &send, NULL, 0, 1442, crc, &n);
	assert_int_equal(n, 1);
	write.to = 0;
	write.stag = 1;
	len += emit_msg(s + len, size - len, &write, NULL, 0, 1442, crc, &n);
	send.msn = 3;
	send.opcode = RDMAP_SEND_SE_INV;
	send.inv_stag = 0xabcdef01;
	len += emit_msg(s + len, size - len, &send, pattern + 3, 2, 1442, crc,
			&n);
	len += emit_fpdu(s + len, size - len, &term, NULL, term_body,
			 sizeof(term_body), crc);
	return len;
}

/* ---- Known answers (kat.h) ------------------------------------------- */

/*
 * Parses one known-answer FPDU fed whole, checking the exact event
 * sequence and byte counts: HEADER after the header (and Read Request
 * body), one PAYLOAD chunk pointing into the buffer, END after the CRC.
 */
static void parse_kat(const char *hex, bool crc, struct ddp_hdr *h,
		      struct rdmap_read_req *rr, uint8_t *payload,
		      size_t *payload_len)
{
	uint8_t buf[128];
	size_t n = tu_hex2bin(hex, buf, sizeof(buf)), off = 0, used, hlen;
	struct fpdu_rx rx;
	struct fpdu_ev ev;

	fpdu_rx_init(&rx, crc);
	used = fpdu_rx_step(&rx, buf, n, &ev);
	assert_int_equal(ev.type, FPDU_EV_HEADER);
	*h = *ev.hdr;
	*rr = ev.read_req;
	hlen = ddp_hdr_len(h->tagged) +
	       (h->opcode == RDMAP_READ_REQ && !h->tagged ? 28 : 0);
	assert_int_equal(used, 2 + hlen);
	assert_int_equal(ev.ulpdu_len, buf[0] << 8 | buf[1]);
	assert_int_equal(ev.payload_len, ev.ulpdu_len - hlen);
	*payload_len = ev.payload_len;
	off += used;
	if (*payload_len) {
		/* In the payload: the rest of this FPDU is the rest of buf. */
		assert_int_equal(rx.state, FPDU_RX_PAYLOAD);
		assert_int_equal(fpdu_rx_left(&rx), n - off);
		used = fpdu_rx_step(&rx, buf + off, 1, &ev);
		assert_int_equal(used, 1);
		assert_int_equal(fpdu_rx_left(&rx), n - off - 1);
		fpdu_rx_init(&rx, crc);
		off = 0;
		used = fpdu_rx_step(&rx, buf, n, &ev);
		off += used;
		used = fpdu_rx_step(&rx, buf + off, n - off, &ev);
		assert_int_equal(ev.type, FPDU_EV_PAYLOAD);
		assert_ptr_equal(ev.data, buf + off);
		assert_int_equal(ev.len, *payload_len);
		assert_int_equal(ev.offset, 0);
		assert_int_equal(used, *payload_len);
		memcpy(payload, ev.data, ev.len);
		off += used;
	}
	used = fpdu_rx_step(&rx, buf + off, n - off, &ev);
	assert_int_equal(ev.type, FPDU_EV_END);
	assert_true(ev.crc_ok);
	assert_true(ev.last);
	assert_int_equal(used, mpa_fpdu_pad(rx.ulpdu_len) + 4);
	off += used;
	assert_int_equal(off, n);
	assert_true(fpdu_rx_at_boundary(&rx));
	used = fpdu_rx_step(&rx, buf + off, 0, &ev);
	assert_int_equal(used, 0);
	assert_int_equal(ev.type, FPDU_EV_NONE);

	/* Byte by byte gives the same. */
	check_splits(buf, n, crc, 0, 0);

	/* A big-endian trailer is a bad CRC (6.5); CRC off ignores it. */
	{
		uint8_t t = buf[n - 4];

		buf[n - 4] = buf[n - 1];
		buf[n - 1] = t;
		t = buf[n - 3];
		buf[n - 3] = buf[n - 2];
		buf[n - 2] = t;
		run_whole(buf, n, crc, 0, &trace_a);
		assert_int_equal(trace_a.rec[trace_a.n - 1].type, REC_END);
		assert_int_equal(trace_a.rec[trace_a.n - 1].crc_ok, !crc);
	}
}

static void test_kat_parse(void **state)
{
	struct ddp_hdr h;
	struct rdmap_read_req rr;
	uint8_t p[64];
	size_t n;

	(void)state;
	for (int crc = 0; crc <= 1; crc++) {
		/* RTR: zero-length Write, STag 1, TO 0. */
		parse_kat(kat_rtr_write, crc, &h, &rr, p, &n);
		assert_true(h.tagged && h.last);
		assert_int_equal(h.opcode, RDMAP_WRITE);
		assert_int_equal(h.dv, 1);
		assert_int_equal(h.rv, 1);
		assert_int_equal(h.stag, 1);
		assert_int_equal(h.to, 0);
		assert_int_equal(n, 0);

		/* Send "hello iwarp": 29-byte ULPDU, one pad byte. */
		parse_kat(kat_send, crc, &h, &rr, p, &n);
		assert_false(h.tagged);
		assert_true(h.last);
		assert_int_equal(h.opcode, RDMAP_SEND);
		assert_int_equal(h.inv_stag, 0);
		assert_int_equal(h.qn, 0);
		assert_int_equal(h.msn, 1);
		assert_int_equal(h.mo, 0);
		assert_int_equal(n, 11);
		assert_memory_equal(p, "hello iwarp", 11);

		/* Read Request: the body comes with the header. */
		parse_kat(kat_read_req, crc, &h, &rr, p, &n);
		assert_int_equal(h.opcode, RDMAP_READ_REQ);
		assert_int_equal(h.qn, 1);
		assert_int_equal(h.msn, 1);
		assert_int_equal(h.mo, 0);
		assert_int_equal(rr.sink_stag, 0x1234);
		assert_int_equal(rr.sink_to, 0x1000);
		assert_int_equal(rr.size, 16);
		assert_int_equal(rr.src_stag, 0x5678);
		assert_int_equal(rr.src_to, 0x2000);
		assert_int_equal(n, 0);

		/* Read Response, 16 bytes 00..0f. */
		parse_kat(kat_read_resp, crc, &h, &rr, p, &n);
		assert_true(h.tagged);
		assert_int_equal(h.opcode, RDMAP_READ_RESP);
		assert_int_equal(h.stag, 0x1234);
		assert_int_equal(h.to, 0x1000);
		assert_int_equal(n, 16);
		for (int i = 0; i < 16; i++)
			assert_int_equal(p[i], i);

		/* Terminate: the body is the payload. */
		parse_kat(kat_term, crc, &h, &rr, p, &n);
		assert_false(h.tagged);
		assert_int_equal(h.opcode, RDMAP_TERMINATE);
		assert_int_equal(h.qn, 2);
		assert_int_equal(h.msn, 1);
		assert_int_equal(n, 24);
		{
			struct rdmap_term t;
			uint8_t send[64];

			assert_int_equal(fpdu_term_parse(&h, p, n, &t), 0);
			assert_int_equal(t.cause.layer, TERM_LAYER_DDP);
			assert_int_equal(t.cause.etype, DDP_ETYPE_UNTAGGED);
			assert_int_equal(t.cause.ecode, DDP_UNTAGGED_MSN_RANGE);
			assert_true(t.m);
			assert_int_equal(t.ddp_seg_len, 0x1d);
			assert_non_null(t.ddp_hdr);
			assert_null(t.rdmap_hdr);
			tu_hex2bin(kat_send, send, sizeof(send));
			assert_memory_equal(t.ddp_hdr, send + 2, 18);
			/* Short bodies and non-Terminates are refused. */
			assert_int_equal(fpdu_term_parse(&h, p, 3, &t),
					 -EBADMSG);
			assert_int_equal(fpdu_term_parse(&h, p, 23, &t),
					 -EBADMSG);
			h.opcode = RDMAP_SEND;
			assert_int_equal(fpdu_term_parse(&h, p, n, &t),
					 -EPROTO);
		}
	}
}

/* The 6.5 frames back to back, at every pair of split points. */
static void test_kat_stream_all_pairs(void **state)
{
	const char *const hex[] = { kat_rtr_write, kat_send, kat_read_req,
				    kat_read_resp, kat_term };
	uint8_t s[512];
	size_t len = 0;

	(void)state;
	for (size_t i = 0; i < 5; i++)
		len += tu_hex2bin(hex[i], s + len, sizeof(s) - len);
	for (int crc = 0; crc <= 1; crc++) {
		run_whole(s, len, crc, 0, &trace_a);
		assert_false(trace_a.error);
		/* HDR END, HDR DATA END, HDR END, HDR DATA END, HDR DATA END */
		assert_int_equal(trace_a.n, 13);
		for (size_t i = 0; i < trace_a.n; i++)
			if (trace_a.rec[i].type == REC_END)
				assert_true(trace_a.rec[i].crc_ok);
		for (size_t a = 0; a <= len; a++) {
			for (size_t b = a; b <= len; b++) {
				size_t cuts[2] = { a, b };
				struct chunker c = { .cuts = cuts, .ncuts = 2 };

				run_chunked(s, len, crc, 0, &c, &trace_b);
				trace_equal(&trace_a, &trace_b);
			}
		}
	}
}

/* ---- The multi-FPDU stream -------------------------------------------- */

static uint8_t stream[16384];

static void test_stream_splits(void **state)
{
	size_t len;

	(void)state;
	for (int build_crc = 0; build_crc <= 1; build_crc++) {
		rng_state = 0x1234567u + (uint32_t)build_crc;
		len = build_stream(stream, sizeof(stream), build_crc);
		for (int crc = 0; crc <= 1; crc++) {
			run_whole(stream, len, crc, 0, &trace_a);
			assert_false(trace_a.error);
			assert_int_equal(trace_a.consumed, len);
			/* CRC verdicts: all good, or all bad (zero CRCs). */
			for (size_t i = 0; i < trace_a.n; i++)
				if (trace_a.rec[i].type == REC_END)
					assert_int_equal(trace_a.rec[i].crc_ok,
							 !crc || build_crc);
			check_splits(stream, len, crc, 0, 3000);
		}
	}
}

/* The stream's messages come back with the right headers and bytes. */
static void test_stream_content(void **state)
{
	size_t len, i = 0;
	const struct rec *r;

	(void)state;
	len = build_stream(stream, sizeof(stream), true);
	run_whole(stream, len, true, 0, &trace_a);
	r = trace_a.rec;

	/* Send: MSN 1 in three segments, MO 0/400/800, L on the last. */
	for (unsigned int seg = 0; seg < 3; seg++) {
		assert_int_equal(r[i].type, REC_HDR);
		assert_int_equal(r[i].h.opcode, RDMAP_SEND);
		assert_int_equal(r[i].h.msn, 1);
		assert_int_equal(r[i].h.mo, 400 * seg);
		assert_int_equal(r[i].h.last, seg == 2);
		assert_int_equal(r[i].payload_len, seg == 2 ? 200 : 400);
		assert_int_equal(r[i + 1].type, REC_DATA);
		assert_memory_equal(trace_a.data + r[i + 1].data_off,
				    pattern + 400 * seg, r[i + 1].data_len);
		assert_int_equal(r[i + 2].type, REC_END);
		assert_true(r[i + 2].crc_ok);
		assert_int_equal(r[i + 2].last, seg == 2);
		i += 3;
	}
	/* Write, 101 bytes. */
	assert_true(r[i].h.tagged);
	assert_int_equal(r[i].h.stag, 0x4200);
	assert_int_equal(r[i].h.to, 0xfffffffffff0ull);
	assert_int_equal(r[i].payload_len, 101);
	assert_memory_equal(trace_a.data + r[i + 1].data_off, pattern + 5, 101);
	i += 3;
	/* Read Request: header event carries the body, then END. */
	assert_int_equal(r[i].h.opcode, RDMAP_READ_REQ);
	assert_int_equal(r[i].ulpdu_len, 46);
	assert_int_equal(r[i].payload_len, 0);
	assert_int_equal(r[i].rr.size, 77);
	assert_int_equal(r[i].rr.src_to, 0x2000);
	assert_int_equal(r[i + 1].type, REC_END);
	i += 2;
	/* Read Response: 46 + 31 bytes, TO advancing. */
	assert_int_equal(r[i].h.opcode, RDMAP_READ_RESP);
	assert_int_equal(r[i].h.to, 0x1000);
	assert_int_equal(r[i].payload_len, 46);
	assert_false(r[i].h.last);
	assert_int_equal(r[i + 3].h.to, 0x1000 + 46);
	assert_int_equal(r[i + 3].payload_len, 31);
	assert_true(r[i + 3].h.last);
	i += 6;
	/* Zero-length Send and Write: HEADER then END, L=1. */
	assert_int_equal(r[i].h.opcode, RDMAP_SEND);
	assert_int_equal(r[i].h.msn, 2);
	assert_int_equal(r[i].payload_len, 0);
	assert_int_equal(r[i + 1].type, REC_END);
	assert_true(r[i + 1].last);
	i += 2;
	assert_int_equal(r[i].h.opcode, RDMAP_WRITE);
	assert_int_equal(r[i].payload_len, 0);
	assert_int_equal(r[i + 1].type, REC_END);
	i += 2;
	assert_int_equal(r[i].h.opcode, RDMAP_SEND_SE_INV);
	assert_int_equal(r[i].h.inv_stag, 0xabcdef01);
	i += 3;
	assert_int_equal(r[i].h.opcode, RDMAP_TERMINATE);
	assert_int_equal(r[i].payload_len, 4);
	i += 3;
	assert_int_equal(i, trace_a.n);
}

/* ---- CRC failures ----------------------------------------------------- */

static void test_bad_crc(void **state)
{
	uint8_t buf[128];
	size_t n, positions[] = { 2, 3, 6, 14, 19, 20, 30, 31, 32, 35 };

	(void)state;
	/* Send: 20 bytes hdr, 11 payload, 1 pad, 4 CRC = 36 bytes. */
	n = tu_hex2bin(kat_send, buf, sizeof(buf));
	assert_int_equal(n, 36);
	for (size_t i = 0; i < sizeof(positions) / sizeof(positions[0]); i++) {
		uint8_t b[256];
		size_t p = positions[i];

		/* Corrupt one FPDU, follow it with an intact one. */
		memcpy(b, buf, n);
		memcpy(b + n, buf, n);
		b[p] ^= 0x10;
		run_whole(b, 2 * n, true, 0, &trace_a);
		assert_false(trace_a.error);
		assert_int_equal(trace_a.rec[2].type, REC_END);
		assert_false(trace_a.rec[2].crc_ok);
		assert_int_equal(trace_a.rec[5].type, REC_END);
		assert_true(trace_a.rec[5].crc_ok);
		check_splits(b, 2 * n, true, 0, 50);
		/* With CRC off nothing is checked. */
		run_whole(b, 2 * n, false, 0, &trace_a);
		assert_true(trace_a.rec[2].crc_ok);
	}
	/* A wrong (but plausible) length is a bad CRC too. */
	{
		uint8_t b[256];

		memset(b, 0, sizeof(b));
		memcpy(b, buf, n);
		b[1] = 0x1c; /* 28: 10 payload bytes */
		run_whole(b, n, true, 0, &trace_a);
		assert_int_equal(trace_a.rec[2].type, REC_END);
		assert_false(trace_a.rec[2].crc_ok);
	}
	/* A nonzero pad byte is covered by the CRC. */
	{
		uint8_t b[64];
		uint8_t t;

		memcpy(b, buf, n);
		b[31] = 0x55;
		run_whole(b, n, true, 0, &trace_a);
		assert_false(trace_a.rec[2].crc_ok);
		/* ... and swapping the trailer bytes breaks it as well. */
		memcpy(b, buf, n);
		t = b[32];
		b[32] = b[33];
		b[33] = t;
		run_whole(b, n, true, 0, &trace_a);
		assert_false(trace_a.rec[2].crc_ok);
	}
}

/* ---- Malformed FPDUs -------------------------------------------------- */

struct bad_case {
	const char *name;
	const char *ulpdu; /* hex of the ULPDU; framed with a good CRC */
	int len_override; /* >= 0: ULPDU_Length to write instead */
	size_t max_ulpdu; /* 0: default */
	int err;
	struct iwarp_term_cause cause;
	size_t consumed; /* bytes consumed when the error shows */
	unsigned int term_flags; /* what fpdu_rx_term() attaches */
};

#define SEND_HDR  "4143 00000000 00000000 00000001 00000000"
#define WRITE_HDR "c140 00000001 0000000000000000"

static const struct bad_case bad_cases[] = {
	{ "ULPDU over the maximum",
	  WRITE_HDR "0000",
	  -1,
	  15,
	  -EMSGSIZE,
	  { TERM_LAYER_LLP, LLP_ETYPE_MPA, MPA_ECODE_LOCAL_CATASTROPHIC },
	  2,
	  0 },
	{ "ULPDU length 0",
	  "",
	  -1,
	  0,
	  -EBADMSG,
	  { TERM_LAYER_DDP, DDP_ETYPE_CATASTROPHIC, 0 },
	  2,
	  0 },
	{ "ULPDU shorter than a tagged header",
	  "c140 00000001 00000000000000",
	  -1,
	  0,
	  -EBADMSG,
	  { TERM_LAYER_DDP, DDP_ETYPE_CATASTROPHIC, 0 },
	  2,
	  0 },
	{ "ULPDU shorter than an untagged header",
	  "4143 00000000 00000000 00000001 000000",
	  -1,
	  0,
	  -EBADMSG,
	  { TERM_LAYER_DDP, DDP_ETYPE_CATASTROPHIC, 0 },
	  3,
	  0 },
	{ "tagged DDP version 2",
	  "c240 00000001 0000000000000000",
	  -1,
	  0,
	  -EPROTO,
	  { TERM_LAYER_DDP, DDP_ETYPE_TAGGED, DDP_TAGGED_BAD_VERSION },
	  16,
	  0 },
	{ "untagged DDP version 0",
	  "4043 00000000 00000000 00000001 00000000",
	  -1,
	  0,
	  -EPROTO,
	  { TERM_LAYER_DDP, DDP_ETYPE_UNTAGGED, DDP_UNTAGGED_BAD_VERSION },
	  20,
	  0 },
	{ "RDMAP version 2",
	  "4183 00000000 00000000 00000001 00000000",
	  -1,
	  0,
	  -EPROTO,
	  { TERM_LAYER_RDMAP, RDMAP_ETYPE_REMOTE_OP, RDMAP_ECODE_BAD_VERSION },
	  20,
	  0 },
	{ "reserved opcode 0xc",
	  "414c 00000000 00000000 00000001 00000000",
	  -1,
	  0,
	  -EPROTO,
	  { TERM_LAYER_RDMAP, RDMAP_ETYPE_REMOTE_OP,
	    RDMAP_ECODE_UNEXPECTED_OPCODE },
	  20,
	  0 },
	{ "atomic opcode (RFC 7306)",
	  "414a 00000000 00000001 00000001 00000000",
	  -1,
	  0,
	  -EPROTO,
	  { TERM_LAYER_RDMAP, RDMAP_ETYPE_REMOTE_OP,
	    RDMAP_ECODE_UNEXPECTED_OPCODE },
	  20,
	  0 },
	{ "untagged Write",
	  "4140 00000000 00000000 00000001 00000000",
	  -1,
	  0,
	  -EPROTO,
	  { TERM_LAYER_RDMAP, RDMAP_ETYPE_REMOTE_OP,
	    RDMAP_ECODE_UNEXPECTED_OPCODE },
	  20,
	  0 },
	{ "tagged Send",
	  "c143 00000001 0000000000000000",
	  -1,
	  0,
	  -EPROTO,
	  { TERM_LAYER_RDMAP, RDMAP_ETYPE_REMOTE_OP,
	    RDMAP_ECODE_UNEXPECTED_OPCODE },
	  16,
	  0 },
	{ "Send on QN 1",
	  "4143 00000000 00000001 00000001 00000000 aa",
	  -1,
	  0,
	  -EPROTO,
	  { TERM_LAYER_DDP, DDP_ETYPE_UNTAGGED, DDP_UNTAGGED_INVALID_QN },
	  20,
	  RDMAP_TERM_FLAG_M | RDMAP_TERM_FLAG_D },
	{ "Terminate on QN 0",
	  "4147 00000000 00000000 00000001 00000000 00000000",
	  -1,
	  0,
	  -EPROTO,
	  { TERM_LAYER_DDP, DDP_ETYPE_UNTAGGED, DDP_UNTAGGED_INVALID_QN },
	  20,
	  RDMAP_TERM_FLAG_M | RDMAP_TERM_FLAG_D },
	{ "Read Request with MO 4",
	  "4141 00000000 00000001 00000001 00000004 00001234 0000000000001000"
	  "00000010 00005678 0000000000002000",
	  -1,
	  0,
	  -EPROTO,
	  { TERM_LAYER_DDP, DDP_ETYPE_UNTAGGED, DDP_UNTAGGED_INVALID_MO },
	  20,
	  RDMAP_TERM_FLAG_M | RDMAP_TERM_FLAG_D },
	{ "Read Request without L",
	  "0141 00000000 00000001 00000001 00000000 00001234 0000000000001000"
	  "00000010 00005678 0000000000002000",
	  -1,
	  0,
	  -EPROTO,
	  { TERM_LAYER_RDMAP, RDMAP_ETYPE_REMOTE_OP,
	    RDMAP_ECODE_CATASTROPHIC_STREAM },
	  20,
	  RDMAP_TERM_FLAG_M | RDMAP_TERM_FLAG_D },
	{ "Read Request with payload after the body",
	  "4141 00000000 00000001 00000001 00000000 00001234 0000000000001000"
	  "00000010 00005678 0000000000002000 ff",
	  -1,
	  0,
	  -EPROTO,
	  { TERM_LAYER_RDMAP, RDMAP_ETYPE_REMOTE_OP,
	    RDMAP_ECODE_CATASTROPHIC_STREAM },
	  20,
	  RDMAP_TERM_FLAG_M | RDMAP_TERM_FLAG_D },
	{ "Read Request with a short body",
	  "4141 00000000 00000001 00000001 00000000 00001234 0000000000001000",
	  -1,
	  0,
	  -EPROTO,
	  { TERM_LAYER_RDMAP, RDMAP_ETYPE_REMOTE_OP,
	    RDMAP_ECODE_CATASTROPHIC_STREAM },
	  20,
	  RDMAP_TERM_FLAG_M | RDMAP_TERM_FLAG_D },
	{ "Terminate without L",
	  "0147 00000000 00000002 00000001 00000000 00000000",
	  -1,
	  0,
	  -EPROTO,
	  { TERM_LAYER_RDMAP, RDMAP_ETYPE_REMOTE_OP,
	    RDMAP_ECODE_CATASTROPHIC_STREAM },
	  20,
	  RDMAP_TERM_FLAG_M | RDMAP_TERM_FLAG_D },
	{ "length field 0xffff over a 1442 maximum",
	  WRITE_HDR,
	  0xffff,
	  1442,
	  -EMSGSIZE,
	  { TERM_LAYER_LLP, LLP_ETYPE_MPA, MPA_ECODE_LOCAL_CATASTROPHIC },
	  2,
	  0 },
};

static size_t frame_bad(const struct bad_case *bc, uint8_t *buf, size_t size)
{
	size_t n = tu_hex2bin(bc->ulpdu, buf + 2, size - 2 - 8);
	int len = mpa_fpdu_finish(buf, n, true);

	assert_true(len > 0);
	if (bc->len_override >= 0) {
		buf[0] = (uint8_t)(bc->len_override >> 8);
		buf[1] = (uint8_t)bc->len_override;
	}
	return (size_t)len;
}

static void test_malformed(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
		const struct bad_case *bc = &bad_cases[i];
		uint8_t buf[256];
		size_t n, used;
		struct fpdu_rx rx;
		struct fpdu_ev ev;
		struct rdmap_term t;
		const struct rec *last;

		print_message("malformed: %s\n", bc->name);
		n = frame_bad(bc, buf, sizeof(buf));
		/* Good FPDUs after it never get parsed. */
		for (size_t k = 0; k < 40; k++)
			buf[n + k] = (uint8_t)k;
		fpdu_rx_init(&rx, true);
		if (bc->max_ulpdu)
			fpdu_rx_set_max_ulpdu(&rx, bc->max_ulpdu);
		used = fpdu_rx_step(&rx, buf, n + 40, &ev);
		assert_int_equal(ev.type, FPDU_EV_ERROR);
		assert_int_equal(ev.err, bc->err);
		assert_int_equal(ev.cause.layer, bc->cause.layer);
		assert_int_equal(ev.cause.etype, bc->cause.etype);
		assert_int_equal(ev.cause.ecode, bc->cause.ecode);
		assert_int_equal(used, bc->consumed);
		/* Latched: nothing more is consumed, the same error again. */
		for (int again = 0; again < 3; again++) {
			struct fpdu_ev ev2;

			assert_int_equal(fpdu_rx_step(&rx, buf + used,
						      n + 40 - used, &ev2),
					 0);
			assert_int_equal(ev2.type, FPDU_EV_ERROR);
			assert_int_equal(ev2.err, bc->err);
			assert_memory_equal(&ev2.cause, &bc->cause,
					    sizeof(ev2.cause));
		}
		assert_int_equal(fpdu_rx_step(&rx, buf, 0, &ev), 0);
		assert_int_equal(ev.type, FPDU_EV_ERROR);
		assert_false(fpdu_rx_at_boundary(&rx));

		/* The Terminate quotes the header where the rules say so. */
		fpdu_rx_term(&rx, &ev.cause, &t);
		assert_memory_equal(&t.cause, &bc->cause, sizeof(t.cause));
		assert_int_equal(t.m, !!(bc->term_flags & RDMAP_TERM_FLAG_M));
		if (bc->term_flags & RDMAP_TERM_FLAG_D) {
			assert_ptr_equal(t.ddp_hdr, rx.raw + 2);
			assert_memory_equal(t.ddp_hdr, buf + 2,
					    ddp_hdr_len(buf[2] & 0x80));
			assert_int_equal(t.ddp_seg_len, buf[0] << 8 | buf[1]);
			assert_non_null(ev.hdr);
		} else {
			assert_null(t.ddp_hdr);
		}
		assert_null(t.rdmap_hdr);

		/* Every split and CRC setting reports the same error. */
		for (int crc = 0; crc <= 1; crc++) {
			check_splits(buf, n + 40, crc, bc->max_ulpdu, 20);
			last = &trace_a.rec[trace_a.n - 1];
			assert_int_equal(last->type, REC_ERR);
			assert_int_equal(last->err, bc->err);
			assert_int_equal(trace_a.consumed, bc->consumed);
		}
	}
}

/* The maximum is inclusive, and a header error after a good FPDU. */
static void test_max_ulpdu(void **state)
{
	uint8_t buf[512];
	const struct ddp_hdr w = {
		.tagged = true, .last = true, .opcode = RDMAP_WRITE, .stag = 9
	};
	struct fpdu_rx rx;
	struct fpdu_ev ev;
	int n;

	(void)state;
	memset(pattern, 0x5a, 100);
	n = fpdu_tx_build(buf, sizeof(buf), &w, NULL, pattern, 100, true);
	assert_true(n > 0);
	run_whole(buf, (size_t)n, true, 114, &trace_a);
	assert_false(trace_a.error);
	run_whole(buf, (size_t)n, true, 113, &trace_a);
	assert_true(trace_a.error);
	assert_int_equal(trace_a.rec[0].err, -EMSGSIZE);
	/* Out-of-range maxima are clamped. */
	fpdu_rx_init(&rx, true);
	fpdu_rx_set_max_ulpdu(&rx, 1);
	assert_int_equal(rx.max_ulpdu, DDP_TAGGED_HDR_LEN);
	fpdu_rx_set_max_ulpdu(&rx, 1 << 20);
	assert_int_equal(rx.max_ulpdu, MPA_ULPDU_MAX);

	/* Good FPDU, then one with DDP version 0: error after the first. */
	{
		uint8_t s[512];
		size_t len = (size_t)n;

		memcpy(s, buf, len);
		memcpy(s + len, buf, len);
		s[len + 2] &= (uint8_t)~DDP_CTRL_DV;
		check_splits(s, 2 * len, true, 0, 100);
		assert_int_equal(trace_a.n, 4); /* HDR DATA END ERR */
		assert_int_equal(trace_a.rec[3].err, -EPROTO);
		assert_int_equal(trace_a.consumed, len + 16);
		fpdu_rx_init(&rx, true);
		assert_int_equal(fpdu_rx_step(&rx, s, 2 * len, &ev), 16);
		assert_int_equal(ev.type, FPDU_EV_HEADER);
	}
}

/* fpdu_rx_term() for causes the caller finds, and the R bit. */
static void test_rx_term(void **state)
{
	uint8_t buf[128], out[128];
	size_t n, off;
	struct fpdu_rx rx;
	struct fpdu_ev ev;
	struct rdmap_term t;
	const struct iwarp_term_cause msn = { TERM_LAYER_DDP,
					      DDP_ETYPE_UNTAGGED,
					      DDP_UNTAGGED_MSN_RANGE };
	const struct iwarp_term_cause prot = { TERM_LAYER_RDMAP,
					       RDMAP_ETYPE_REMOTE_PROT,
					       RDMAP_ECODE_INVALID_STAG };

	(void)state;
	/* The 6.5 Terminate is what we send for the 6.5 Send's bad MSN. */
	n = tu_hex2bin(kat_send, buf, sizeof(buf));
	fpdu_rx_init(&rx, true);
	fpdu_rx_term(&rx, &msn, &t); /* nothing received yet: no header */
	assert_null(t.ddp_hdr);
	assert_false(t.m);
	assert_int_equal(fpdu_rx_step(&rx, buf, n, &ev), 20);
	assert_int_equal(ev.type, FPDU_EV_HEADER);
	fpdu_rx_term(&rx, &msn, &t);
	{
		uint8_t want[128];
		size_t wn = tu_hex2bin(kat_term, want, sizeof(want));

		assert_int_equal(rdmap_term_build(&t, true, out, sizeof(out)),
				 (int)wn);
		assert_memory_equal(out, want, wn);
	}
	/* Still quotable at END, not once the next FPDU starts. */
	off = 20;
	off += fpdu_rx_step(&rx, buf + off, n - off, &ev);
	off += fpdu_rx_step(&rx, buf + off, n - off, &ev);
	assert_int_equal(ev.type, FPDU_EV_END);
	fpdu_rx_term(&rx, &msn, &t);
	assert_non_null(t.ddp_hdr);
	assert_int_equal(fpdu_rx_step(&rx, buf, 1, &ev), 1);
	fpdu_rx_term(&rx, &msn, &t);
	assert_null(t.ddp_hdr);

	/* A protection error on a Read Request quotes the body too (R). */
	n = tu_hex2bin(kat_read_req, buf, sizeof(buf));
	fpdu_rx_init(&rx, true);
	assert_int_equal(fpdu_rx_step(&rx, buf, n, &ev), 48);
	fpdu_rx_term(&rx, &prot, &t);
	assert_true(t.m);
	assert_int_equal(t.ddp_seg_len, 46);
	assert_memory_equal(t.ddp_hdr, buf + 2, 18);
	assert_non_null(t.rdmap_hdr);
	assert_memory_equal(t.rdmap_hdr, buf + 20, 28);
	assert_int_equal(rdmap_term_len(&t), 4 + 2 + 18 + 28);
	/* The same cause on a Write quotes only its DDP header. */
	n = tu_hex2bin(kat_read_resp, buf, sizeof(buf));
	fpdu_rx_init(&rx, true);
	assert_int_equal(fpdu_rx_step(&rx, buf, n, &ev), 16);
	fpdu_rx_term(&rx, &prot, &t);
	assert_memory_equal(t.ddp_hdr, buf + 2, 14);
	assert_null(t.rdmap_hdr);
}

/*
 * Whole events: every stream, split and malformed case above gives the
 * same headers, bytes, verdicts and errors when the chunked parser may
 * report whole FPDUs, and whole FPDUs do come (else this tests nothing).
 * After one, a Terminate quotes its header as after END.
 */
static void test_whole_events(void **state)
{
	const struct iwarp_term_cause prot = { TERM_LAYER_RDMAP,
					       RDMAP_ETYPE_REMOTE_PROT,
					       RDMAP_ECODE_INVALID_STAG };
	uint8_t buf[128];
	struct fpdu_rx rx;
	struct fpdu_ev ev;
	struct rdmap_term t;
	size_t n;

	whole_chunked = true;
	whole_seen = 0;
	test_kat_stream_all_pairs(state);
	test_stream_splits(state);
	test_bad_crc(state);
	test_malformed(state);
	whole_chunked = false;
	assert_true(whole_seen > 1000);

	n = tu_hex2bin(kat_read_req, buf, sizeof(buf));
	for (int crc = 0; crc <= 1; crc++) {
		fpdu_rx_init(&rx, crc);
		fpdu_rx_set_whole(&rx, true);
		assert_int_equal(fpdu_rx_step(&rx, buf, n, &ev), n);
		assert_int_equal(ev.type, FPDU_EV_WHOLE);
		assert_int_equal(ev.crc_ok, true);
		assert_int_equal(ev.read_req.size, 0x10);
		assert_true(fpdu_rx_at_boundary(&rx));
		fpdu_rx_term(&rx, &prot, &t);
		assert_int_equal(t.ddp_seg_len, 46);
		assert_memory_equal(t.ddp_hdr, buf + 2, 18);
		assert_non_null(t.rdmap_hdr);
		assert_memory_equal(t.rdmap_hdr, buf + 20, 28);
	}
	/* One byte short of whole: the steps take it. */
	fpdu_rx_init(&rx, true);
	fpdu_rx_set_whole(&rx, true);
	assert_int_equal(fpdu_rx_step(&rx, buf, n - 1, &ev), 48);
	assert_int_equal(ev.type, FPDU_EV_HEADER);
}

/* ---- Transmit --------------------------------------------------------- */

static void test_tx_hdr(void **state)
{
	uint8_t hdr[FPDU_HDR_MAX], want[128], tr[FPDU_TRAILER_MAX];
	const struct ddp_hdr send = { .last = true,
				      .opcode = RDMAP_SEND,
				      .msn = 1 };
	const struct ddp_hdr rreq = {
		.last = true, .opcode = RDMAP_READ_REQ, .qn = 1, .msn = 1
	};
	const struct rdmap_read_req rr = { .sink_stag = 0x1234,
					   .sink_to = 0x1000,
					   .size = 16,
					   .src_stag = 0x5678,
					   .src_to = 0x2000 };
	struct ddp_hdr bad = send;
	struct fpdu_tx_crc c;
	size_t n, tl;

	(void)state;
	/* The 6.5 Send, piece by piece. */
	n = tu_hex2bin(kat_send, want, sizeof(want));
	assert_int_equal(fpdu_tx_hdr(hdr, &send, 11, NULL), 20);
	assert_memory_equal(hdr, want, 20);
	fpdu_tx_crc_init(&c, true);
	fpdu_tx_crc_add(&c, hdr, 20);
	fpdu_tx_crc_add(&c, "hello ", 6);
	fpdu_tx_crc_add(&c, "iwarp", 5);
	tl = fpdu_tx_trailer(tr, c.reg, 29, true);
	assert_int_equal(tl, 5);
	assert_memory_equal(tr, want + 31, 5);
	/* CRC off: zero CRC field. */
	fpdu_tx_crc_init(&c, false);
	fpdu_tx_crc_add(&c, hdr, 20);
	tl = fpdu_tx_trailer(tr, c.reg, 29, false);
	assert_int_equal(tl, 5);
	assert_memory_equal(tr, "\0\0\0\0\0", 5);
	/* The 6.5 Read Request. */
	n = tu_hex2bin(kat_read_req, want, sizeof(want));
	assert_int_equal(fpdu_tx_hdr(hdr, &rreq, 0, &rr), 48);
	assert_memory_equal(hdr, want, 48);
	{
		uint8_t b[64];

		assert_int_equal(
			fpdu_tx_build(b, sizeof(b), &rreq, &rr, NULL, 0, true),
			(int)n);
		assert_memory_equal(b, want, n);
	}
	/* The 6.5 RTR through the one-buffer builder. */
	{
		const struct ddp_hdr rtr = { .tagged = true,
					     .last = true,
					     .opcode = RDMAP_WRITE,
					     .stag = 1 };
		uint8_t b[32];

		n = tu_hex2bin(kat_rtr_write, want, sizeof(want));
		assert_int_equal(
			fpdu_tx_build(b, sizeof(b), &rtr, NULL, NULL, 0, true),
			(int)n);
		assert_memory_equal(b, want, n);
	}

	/* Misuse. */
	assert_int_equal(fpdu_tx_hdr(hdr, &rreq, 0, NULL), -EINVAL);
	assert_int_equal(fpdu_tx_hdr(hdr, &rreq, 1, &rr), -EINVAL);
	assert_int_equal(fpdu_tx_hdr(hdr, &send, 0, &rr), -EINVAL);
	bad.opcode = 0x10;
	assert_int_equal(fpdu_tx_hdr(hdr, &bad, 0, NULL), -EINVAL);
	assert_int_equal(fpdu_tx_hdr(hdr, &send, MPA_ULPDU_MAX - 18, NULL), 20);
	assert_int_equal(hdr[0], 0xff);
	assert_int_equal(hdr[1], 0xff);
	assert_int_equal(fpdu_tx_hdr(hdr, &send, MPA_ULPDU_MAX - 17, NULL),
			 -EMSGSIZE);
	assert_int_equal(fpdu_tx_hdr(hdr, &send, (size_t)1 << 40, NULL),
			 -EMSGSIZE);
	assert_int_equal(
		fpdu_tx_build(want, sizeof(want), &bad, NULL, NULL, 0, true),
		-EINVAL);
	/* Pads of 0-3 bytes. */
	for (size_t u = 14; u < 18; u++)
		assert_int_equal(fpdu_tx_trailer(tr, 0, u, true),
				 4 + mpa_fpdu_pad(u));
}

static void test_max_payload(void **state)
{
	(void)state;
	/* docs/wire.md, "MULPDU and segmentation": MSS 1448 gives 1428 Write or 1424 Send bytes. */
	assert_int_equal(mpa_mulpdu(1448), 1442);
	assert_int_equal(fpdu_max_payload(mpa_mulpdu(1448), true), 1428);
	assert_int_equal(fpdu_max_payload(mpa_mulpdu(1448), false), 1424);
	assert_int_equal(fpdu_max_payload(14, true), 0);
	assert_int_equal(fpdu_max_payload(15, true), 1);
	assert_int_equal(fpdu_max_payload(18, false), 0);
	assert_int_equal(fpdu_max_payload(0, false), 0);
	assert_int_equal(fpdu_max_payload(1 << 20, true), MPA_ULPDU_MAX - 14);
	/* docs/wire.md, "Large FPDUs": whole segments, at most an FPDU. */
	assert_int_equal(mpa_large_emss(1448), 45 * 1448);
	assert_int_equal(mpa_mulpdu(mpa_large_emss(1448)), 45 * 1448 - 6);
	assert_int_equal(mpa_large_emss(8948), 7 * 8948);
	assert_int_equal(mpa_large_emss(65483), 65483);
	assert_int_equal(mpa_large_emss(65541), 65541);
	assert_int_equal(mpa_large_emss(0), 0);
	for (size_t m = 536; m < 70000; m += 97) {
		size_t e = mpa_large_emss(m);

		assert_int_equal(e % m, 0);
		assert_true(e == m || e <= MPA_ULPDU_MAX + MPA_FPDU_OVERHEAD);
	}
}

static void test_seg(void **state)
{
	const struct ddp_hdr wr = { .tagged = true,
				    .opcode = RDMAP_WRITE,
				    .stag = 7,
				    .to = 1000,
				    .last = false };
	const struct ddp_hdr sd = {
		.opcode = RDMAP_SEND, .msn = 9, .mo = 55, .last = false
	};
	struct fpdu_seg s;
	struct ddp_hdr h;
	size_t off, n;

	(void)state;
	/* Zero-length: one segment, L=1, no payload. */
	assert_int_equal(fpdu_seg_init(&s, &sd, 0, 100), 0);
	assert_true(fpdu_seg_next(&s, &h, &off, &n));
	assert_int_equal(n, 0);
	assert_int_equal(off, 0);
	assert_true(h.last);
	assert_int_equal(h.mo, 0);
	assert_int_equal(h.msn, 9);
	assert_false(fpdu_seg_next(&s, &h, &off, &n));
	/* Exactly one full segment, then one byte more. */
	assert_int_equal(fpdu_seg_init(&s, &wr, 100, 100), 0);
	assert_true(fpdu_seg_next(&s, &h, &off, &n));
	assert_int_equal(n, 100);
	assert_true(h.last);
	assert_int_equal(h.to, 1000);
	assert_false(fpdu_seg_next(&s, &h, &off, &n));
	assert_int_equal(fpdu_seg_init(&s, &wr, 101, 100), 0);
	assert_true(fpdu_seg_next(&s, &h, &off, &n));
	assert_int_equal(n, 100);
	assert_false(h.last);
	assert_true(fpdu_seg_next(&s, &h, &off, &n));
	assert_int_equal(n, 1);
	assert_int_equal(off, 100);
	assert_int_equal(h.to, 1100);
	assert_true(h.last);
	assert_false(fpdu_seg_next(&s, &h, &off, &n));
	/* Untagged: MO counts from 0 whatever the template says. */
	assert_int_equal(fpdu_seg_init(&s, &sd, 250, 100), 0);
	for (unsigned int i = 0; fpdu_seg_next(&s, &h, &off, &n); i++) {
		assert_int_equal(h.mo, 100 * i);
		assert_int_equal(off, 100 * i);
		assert_int_equal(n, i == 2 ? 50 : 100);
		assert_int_equal(h.last, i == 2);
		assert_int_equal(h.msn, 9);
	}
	/* Resuming at an offset. */
	assert_int_equal(fpdu_seg_at(&wr, 1000, 950, 100, &h), 50);
	assert_true(h.last);
	assert_int_equal(h.to, 1950);
	assert_int_equal(fpdu_seg_at(&sd, 1000, 300, 100, &h), 100);
	assert_false(h.last);
	assert_int_equal(h.mo, 300);
	/* Misuse. */
	assert_int_equal(fpdu_seg_init(&s, &wr, 10, 0), -EINVAL);
	assert_int_equal(fpdu_seg_init(&s, &sd, (size_t)1 << 32, 100), -EINVAL);
	assert_int_equal(fpdu_seg_init(&s, &wr, (size_t)1 << 32, 100), 0);
}

/*
 * Build -> parse round trips: for many MSS values and message sizes
 * around the segment size, every FPDU fits the MSS, carries the right
 * header and offset, only the last has L, and the bytes come back.
 */
static void test_roundtrip(void **state)
{
	static const size_t mss[] = { 64,   100,  101,	 102,	103,
				      536,  1000, 1448,	 1460,	4096,
				      8948, 9000, 65536, 100000 };
	static uint8_t msg[3 * 65536 + 10];
	static uint8_t s[3 * 65536 + 4096];

	(void)state;
	rng_state = 77;
	for (size_t i = 0; i < sizeof(msg); i++)
		msg[i] = (uint8_t)rng();
	for (size_t m = 0; m < sizeof(mss) / sizeof(mss[0]); m++) {
		size_t mulpdu = mpa_mulpdu(mss[m]);

		assert_true(mulpdu + MPA_FPDU_OVERHEAD <= mss[m]);
		for (int kind = 0; kind < 3; kind++) {
			struct ddp_hdr tmpl = { 0 };
			size_t maxp, sizes[12];

			if (kind == 0) {
				tmpl.opcode = RDMAP_SEND;
				tmpl.msn = 5;
			} else if (kind == 1) {
				tmpl.tagged = true;
				tmpl.opcode = RDMAP_WRITE;
				tmpl.stag = 0x1100;
				tmpl.to = 0x7000;
			} else {
				tmpl.tagged = true;
				tmpl.opcode = RDMAP_READ_RESP;
				tmpl.stag = 0x2200;
				tmpl.to = 3;
			}
			maxp = fpdu_max_payload(mulpdu, tmpl.tagged);
			sizes[0] = 0;
			sizes[1] = 1;
			sizes[2] = 3;
			sizes[3] = maxp - 1;
			sizes[4] = maxp;
			sizes[5] = maxp + 1;
			sizes[6] = 2 * maxp;
			sizes[7] = 2 * maxp + 3;
			sizes[8] = 1 + rng() % (3 * maxp);
			sizes[9] = 1 + rng() % 5000;
			sizes[10] = 2;
			sizes[11] = 4;
			for (size_t z = 0; z < 12; z++) {
				size_t len = sizes[z], slen, got = 0, fp = 0;
				unsigned int nf;
				bool crc = (z + m) & 1;
				const struct rec *r;

				if (len > sizeof(msg) || len > 3 * maxp + 10)
					continue;
				slen = emit_msg(s, sizeof(s), &tmpl, msg, len,
						mulpdu, crc, &nf);
				assert_int_equal(
					nf, len ? (len + maxp - 1) / maxp : 1);
				run_whole(s, slen, crc, mulpdu, &trace_a);
				assert_false(trace_a.error);
				assert_int_equal(trace_a.consumed, slen);
				for (size_t k = 0; k < trace_a.n; k++) {
					r = &trace_a.rec[k];
					if (r->type == REC_DATA) {
						assert_memory_equal(
							trace_a.data +
								r->data_off,
							msg + got, r->data_len);
						got += r->data_len;
					}
					if (r->type == REC_END)
						assert_true(r->crc_ok);
					if (r->type != REC_HDR)
						continue;
					fp++;
					assert_int_equal(r->h.opcode,
							 tmpl.opcode);
					assert_true(r->ulpdu_len <= mulpdu);
					assert_true(
						mpa_fpdu_len(r->ulpdu_len) <=
						mss[m]);
					assert_int_equal(r->h.last, fp == nf);
					if (tmpl.tagged) {
						assert_int_equal(r->h.stag,
								 tmpl.stag);
						assert_int_equal(r->h.to,
								 tmpl.to + got);
					} else {
						assert_int_equal(r->h.msn, 5);
						assert_int_equal(r->h.mo, got);
					}
					/* Exactly MULPDU when full. */
					if (r->payload_len == maxp)
						assert_int_equal(r->ulpdu_len,
								 mulpdu);
				}
				assert_int_equal(got, len);
				assert_int_equal(fp, nf);
				/* A few random chunkings of each. */
				for (int k = 0; k < 3; k++) {
					struct chunker c = {
						.max_rand = 1 + rng() % 700
					};

					run_chunked(s, slen, crc, mulpdu, &c,
						    &trace_b);
					trace_equal(&trace_a, &trace_b);
				}
			}
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kat_parse),
		cmocka_unit_test(test_kat_stream_all_pairs),
		cmocka_unit_test(test_stream_splits),
		cmocka_unit_test(test_stream_content),
		cmocka_unit_test(test_bad_crc),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_max_ulpdu),
		cmocka_unit_test(test_rx_term),
		cmocka_unit_test(test_whole_events),
		cmocka_unit_test(test_tx_hdr),
		cmocka_unit_test(test_max_payload),
		cmocka_unit_test(test_seg),
		cmocka_unit_test(test_roundtrip),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
