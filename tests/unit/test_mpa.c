/* SPDX-License-Identifier: MIT */
/*
 * MPA Request/Reply frames (RFC 5044 7.1, RFC 6581): the known-answer
 * frames that tshark decodes, round trips, every malformed case, parsing
 * fed at every split point, and the IRD/ORD and RTR negotiation rules.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <errno.h>
#include <string.h>
#include <cmocka.h>

#include "iwarp/mpa.h"
#include "testutil.h"

#define MAX_FRAME (MPA_RR_FRAME_MAX + 64)

/* Known answers (kat.h): C|S, Rev 2, A=1, IRD 16, ORD 16. */
static const char kat_req_hex[] = "4d504120494420526571204672616d65 50 02 000c"
				  "8010c010 554c504441544121";
static const char kat_rep_hex[] = "4d504120494420526570204672616d65 50 02 000c"
				  "80108010 554c504441544121";
static const uint8_t ulpdata[] = "ULPDATA!";

static uint32_t rng_state = 0x9e3779b9;

static uint32_t rng(void)
{
	return tu_xorshift(&rng_state);
}

/* Builds a raw header by hand, for frames the encoder refuses to make. */
static size_t raw_frame(uint8_t *buf, const char *key, uint8_t flags,
			uint8_t rev, uint16_t pd_len, size_t pd_present)
{
	memcpy(buf, key, MPA_KEY_LEN);
	buf[16] = flags;
	buf[17] = rev;
	buf[18] = (uint8_t)(pd_len >> 8);
	buf[19] = (uint8_t)pd_len;
	for (size_t i = 0; i < pd_present; i++)
		buf[MPA_RR_HDR_LEN + i] = (uint8_t)(0xa0 + i);
	return MPA_RR_HDR_LEN + pd_present;
}

static struct mpa_rr kat_req(void)
{
	struct mpa_rr rr = {
		.type = MPA_RR_REQUEST,
		.rev = MPA_REV_2,
		.flags = MPA_FLAG_CRC | MPA_FLAG_ENHANCED,
		.p2p = true,
		.rtr = MPA_RTR_WRITE | MPA_RTR_READ,
		.ird = 16,
		.ord = 16,
		.pd = ulpdata,
		.pd_len = 8,
	};
	return rr;
}

static void assert_rr_equal(const struct mpa_rr *a, const struct mpa_rr *b)
{
	assert_int_equal(a->type, b->type);
	assert_int_equal(a->rev, b->rev);
	assert_int_equal(a->flags, b->flags);
	assert_int_equal(mpa_rr_enhanced(a), mpa_rr_enhanced(b));
	if (mpa_rr_enhanced(a)) {
		assert_int_equal(a->p2p, b->p2p);
		assert_int_equal(a->rtr, b->rtr);
		assert_int_equal(a->ird, b->ird);
		assert_int_equal(a->ord, b->ord);
	}
	assert_int_equal(a->pd_len, b->pd_len);
	if (a->pd_len)
		assert_memory_equal(a->pd, b->pd, a->pd_len);
}

static void test_kat_encode(void **state)
{
	uint8_t want[64], buf[64];
	size_t n;
	struct mpa_rr rr = kat_req();

	(void)state;
	n = tu_hex2bin(kat_req_hex, want, sizeof(want));
	assert_int_equal(n, 32);
	assert_int_equal(mpa_rr_len(&rr), 32);
	assert_int_equal(mpa_rr_encode(&rr, buf, sizeof(buf)), 32);
	assert_memory_equal(buf, want, 32);

	/* The Reply chooses the Write RTR. */
	rr.type = MPA_RR_REPLY;
	rr.rtr = MPA_RTR_WRITE;
	n = tu_hex2bin(kat_rep_hex, want, sizeof(want));
	assert_int_equal(mpa_rr_encode(&rr, buf, n), 32);
	assert_memory_equal(buf, want, 32);
}

static void test_kat_parse(void **state)
{
	uint8_t buf[64];
	size_t n, need = 0;
	struct mpa_rr rr, want = kat_req();

	(void)state;
	n = tu_hex2bin(kat_req_hex, buf, sizeof(buf));
	assert_int_equal(mpa_rr_parse(buf, n, MPA_RR_REQUEST,
				      MPA_PRIVATE_DATA_MAX, &rr, &need),
			 32);
	assert_int_equal(need, 32);
	assert_rr_equal(&rr, &want);
	assert_ptr_equal(rr.pd, buf + 24);
	assert_false(mpa_rr_rejected(&rr));
	assert_int_equal(mpa_rr_parse(buf, n, MPA_RR_ANY, 512, &rr, NULL), 32);
	assert_int_equal(rr.type, MPA_RR_REQUEST);
	assert_int_equal(mpa_rr_parse(buf, n, MPA_RR_REPLY, 512, &rr, NULL),
			 -EBADMSG);

	n = tu_hex2bin(kat_rep_hex, buf, sizeof(buf));
	want.type = MPA_RR_REPLY;
	want.rtr = MPA_RTR_WRITE;
	assert_int_equal(mpa_rr_parse(buf, n, MPA_RR_REPLY, 256, &rr, NULL),
			 32);
	assert_rr_equal(&rr, &want);
	assert_int_equal(
		mpa_rtr_check_reply(MPA_RTR_WRITE | MPA_RTR_READ, rr.rtr),
		MPA_RTR_WRITE);
	assert_int_equal(mpa_rr_parse(buf, n, MPA_RR_ANY, 256, &rr, NULL), 32);
	assert_int_equal(rr.type, MPA_RR_REPLY);
	assert_int_equal(mpa_rr_parse(buf, n, MPA_RR_REQUEST, 256, &rr, NULL),
			 -EBADMSG);
}

static uint8_t rt_pd[MPA_PRIVATE_DATA_MAX];

/* Encodes one frame with random block values, parses it, compares. */
static bool roundtrip_one(enum mpa_rr_type type, uint8_t rev, uint8_t flags,
			  uint16_t pd_len)
{
	uint8_t buf[MAX_FRAME];
	struct mpa_rr in = {
		.type = type,
		.rev = rev,
		.flags = flags,
		.p2p = rng() & 1,
		.rtr = (uint8_t)(rng() & MPA_RTR_ALL),
		.ird = (uint16_t)(rng() & MPA_IRD_ORD_MAX),
		.ord = (uint16_t)(rng() & MPA_IRD_ORD_MAX),
		.pd = rt_pd,
		.pd_len = pd_len,
	};
	struct mpa_rr out;
	size_t need;
	int n = mpa_rr_encode(&in, buf, sizeof(buf));

	if (mpa_rr_len(&in) > MPA_RR_HDR_LEN + MPA_PRIVATE_DATA_MAX) {
		assert_int_equal(n, -EMSGSIZE);
		return false;
	}
	assert_int_equal(n, mpa_rr_len(&in));
	assert_int_equal(mpa_rr_parse(buf, (size_t)n, type,
				      MPA_PRIVATE_DATA_MAX, &out, &need),
			 n);
	assert_int_equal(need, n);
	assert_rr_equal(&in, &out);
	assert_int_equal(mpa_rr_rejected(&out),
			 type == MPA_RR_REPLY && (flags & MPA_FLAG_REJECT));
	return true;
}

/* Encode then parse many combinations; everything must come back. */
static void test_roundtrip(void **state)
{
	static const uint16_t pd_lens[] = { 0, 1, 3, 4, 5, 100, 251, 252, 256 };
	unsigned int count = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(rt_pd); i++)
		rt_pd[i] = (uint8_t)rng();
	/* type x rev x the 16 combinations of M C R S x PD lengths */
	for (unsigned int c = 0; c < 2 * 2 * 16; c++) {
		enum mpa_rr_type type = c & 1 ? MPA_RR_REPLY : MPA_RR_REQUEST;
		uint8_t rev = c & 2 ? MPA_REV_2 : MPA_REV_1;
		uint8_t flags = (uint8_t)((c >> 2) << 4);

		if (type == MPA_RR_REQUEST && (flags & MPA_FLAG_REJECT))
			continue;
		if (rev == MPA_REV_1 && (flags & MPA_FLAG_ENHANCED))
			continue;
		for (size_t l = 0; l < sizeof(pd_lens) / sizeof(pd_lens[0]);
		     l++)
			count += roundtrip_one(type, rev, flags, pd_lens[l]);
	}
	assert_true(count > 300);
}

/* The v2 block bit positions (RFC 6581 section 3). */
static void test_v2_block_bits(void **state)
{
	uint8_t b[4];
	bool p2p;
	unsigned int rtr;
	uint16_t ird, ord;

	(void)state;
	mpa_v2_block_put(b, true, MPA_RTR_NONE, 0, 0);
	assert_int_equal(b[0], 0x80);
	mpa_v2_block_put(b, false, MPA_RTR_SEND, 0, 0);
	assert_int_equal(b[0], 0x40);
	mpa_v2_block_put(b, false, MPA_RTR_WRITE, 0, 0);
	assert_int_equal(b[2], 0x80);
	mpa_v2_block_put(b, false, MPA_RTR_READ, 0, 0);
	assert_int_equal(b[2], 0x40);
	mpa_v2_block_put(b, false, 0, 0x3fff, 0x1234);
	assert_int_equal(b[0], 0x3f);
	assert_int_equal(b[1], 0xff);
	assert_int_equal(b[2], 0x12);
	assert_int_equal(b[3], 0x34);
	/* Over 14 bits is masked, never bleeding into the flag bits. */
	mpa_v2_block_put(b, false, 0, 0xffff, 0xc001);
	assert_int_equal(b[0], 0x3f);
	assert_int_equal(b[2], 0x00);
	assert_int_equal(b[3], 0x01);

	b[0] = 0xff;
	b[1] = 0xfe;
	b[2] = 0xc0;
	b[3] = 0x07;
	mpa_v2_block_get(b, &p2p, &rtr, &ird, &ord);
	assert_true(p2p);
	assert_int_equal(rtr, MPA_RTR_ALL);
	assert_int_equal(ird, 0x3ffe);
	assert_int_equal(ord, 7);
}

struct bad_case {
	const char *name;
	uint8_t buf[MAX_FRAME];
	size_t len;
	enum mpa_rr_type expect;
	size_t cap;
	int err;
	size_t decided_at; /* bytes needed before the error can be seen */
};

static void check_bad(const struct bad_case *c)
{
	struct mpa_rr rr;
	size_t need;

	for (size_t k = 0; k <= c->len; k++) {
		int r = mpa_rr_parse(c->buf, k, c->expect, c->cap, &rr, &need);

		if (k < c->decided_at) {
			if (r != -EAGAIN)
				fail_msg("%s: prefix %zu gave %d, want -EAGAIN",
					 c->name, k, r);
		} else if (r != c->err) {
			fail_msg("%s: prefix %zu gave %d (%s), want %d",
				 c->name, k, r, mpa_strerror(r), c->err);
		}
	}
}

static void test_parse_malformed(void **state)
{
	static struct bad_case c;
	uint8_t good[64];
	size_t n;

	(void)state;
	n = tu_hex2bin(kat_req_hex, good, sizeof(good));

	/* A wrong key byte is seen as soon as it arrives. */
	for (size_t i = 0; i < MPA_KEY_LEN; i++) {
		memset(&c, 0, sizeof(c));
		c.name = "bad key byte";
		memcpy(c.buf, good, n);
		c.buf[i] ^= 0x20;
		c.len = n;
		c.expect = MPA_RR_REQUEST;
		c.cap = 256;
		c.err = -EBADMSG;
		c.decided_at = i + 1;
		check_bad(&c);
		c.expect = MPA_RR_ANY;
		check_bad(&c);
	}
	/* The other frame's key: byte 9 ('q' vs 'p') decides. */
	memset(&c, 0, sizeof(c));
	c.name = "Request where a Reply is expected";
	memcpy(c.buf, good, n);
	c.len = n;
	c.expect = MPA_RR_REPLY;
	c.cap = 256;
	c.err = -EBADMSG;
	c.decided_at = 10;
	check_bad(&c);
	c.name = "Reply where a Request is expected";
	c.len = tu_hex2bin(kat_rep_hex, c.buf, sizeof(c.buf));
	c.expect = MPA_RR_REQUEST;
	check_bad(&c);

	/* Revisions other than 1 and 2, even pre-standard 0. */
	static const uint8_t revs[] = { 0, 3, 4, 0x80, 0xff };
	for (size_t i = 0; i < sizeof(revs); i++) {
		memset(&c, 0, sizeof(c));
		c.name = "bad revision";
		c.len = raw_frame(c.buf, MPA_KEY_REQ, 0, revs[i], 0, 0);
		c.expect = MPA_RR_REQUEST;
		c.cap = 256;
		c.err = -EPROTONOSUPPORT;
		c.decided_at = 18;
		check_bad(&c);
	}

	/* PD_Length over the RFC maximum, whatever the cap. */
	static const uint16_t big[] = { 513, 1000, 0x8000, 0xffff };
	for (size_t i = 0; i < 4; i++) {
		memset(&c, 0, sizeof(c));
		c.name = "PD_Length over 512";
		c.len = raw_frame(c.buf, MPA_KEY_REP, MPA_FLAG_CRC, 1, big[i],
				  32);
		c.expect = MPA_RR_REPLY;
		c.cap = (size_t)-1;
		c.err = -EMSGSIZE;
		c.decided_at = 20;
		check_bad(&c);
	}
	/* Over the caller's cap: 257 > 256, 1 > 0. */
	memset(&c, 0, sizeof(c));
	c.name = "PD_Length over the cap";
	c.len = raw_frame(c.buf, MPA_KEY_REQ, 0, 2, 257, 257);
	c.expect = MPA_RR_REQUEST;
	c.cap = MPA_PRIVATE_DATA_MAX;
	c.err = -EMSGSIZE;
	c.decided_at = 20;
	check_bad(&c);
	c.len = raw_frame(c.buf, MPA_KEY_REQ, 0, 1, 1, 1);
	c.cap = 0;
	check_bad(&c);

	/* Rev 2 with S needs the 4-byte block. */
	for (uint16_t pd = 0; pd < MPA_V2_BLOCK_LEN; pd++) {
		memset(&c, 0, sizeof(c));
		c.name = "enhanced PD shorter than the block";
		c.len = raw_frame(c.buf, MPA_KEY_REQ,
				  MPA_FLAG_CRC | MPA_FLAG_ENHANCED, 2, pd, pd);
		c.expect = MPA_RR_REQUEST;
		c.cap = 256;
		c.err = -EPROTO;
		c.decided_at = 20;
		check_bad(&c);
	}

	/* The distinct errors have distinct descriptions. */
	assert_string_not_equal(mpa_strerror(-EBADMSG),
				mpa_strerror(-EMSGSIZE));
	assert_string_not_equal(mpa_strerror(-EMSGSIZE),
				mpa_strerror(-EPROTONOSUPPORT));
	assert_string_not_equal(mpa_strerror(-EPROTONOSUPPORT),
				mpa_strerror(-EPROTO));
}

/* Odd but legal frames that the parser must accept. */
static void test_parse_edge_ok(void **state)
{
	uint8_t buf[MAX_FRAME];
	struct mpa_rr rr;
	size_t len, need;

	(void)state;
	/* Rev 1 with S: S is a reserved bit in RFC 5044, so no block. */
	len = raw_frame(buf, MPA_KEY_REQ, MPA_FLAG_ENHANCED, 1, 2, 2);
	assert_int_equal(mpa_rr_parse(buf, len, MPA_RR_REQUEST, 256, &rr, NULL),
			 22);
	assert_false(mpa_rr_enhanced(&rr));
	assert_int_equal(rr.pd_len, 2);
	assert_ptr_equal(rr.pd, buf + 20);

	/* Rev 2 without S: no block, all PD is the consumer's. */
	len = raw_frame(buf, MPA_KEY_REP, 0, 2, 3, 3);
	assert_int_equal(mpa_rr_parse(buf, len, MPA_RR_REPLY, 256, &rr, NULL),
			 23);
	assert_false(mpa_rr_enhanced(&rr));
	assert_int_equal(rr.pd_len, 3);

	/* Exactly the block, no consumer PD. */
	len = raw_frame(buf, MPA_KEY_REP, MPA_FLAG_ENHANCED, 2, 4, 4);
	assert_int_equal(mpa_rr_parse(buf, len, MPA_RR_REPLY, 256, &rr, NULL),
			 24);
	assert_true(mpa_rr_enhanced(&rr));
	assert_int_equal(rr.pd_len, 0);

	/* Reserved flag bits are ignored but kept; R in a Request is moot. */
	len = raw_frame(buf, MPA_KEY_REQ, MPA_FLAG_REJECT | 0x0f, 1, 0, 0);
	assert_int_equal(mpa_rr_parse(buf, len, MPA_RR_REQUEST, 256, &rr, NULL),
			 20);
	assert_int_equal(rr.flags, MPA_FLAG_REJECT | 0x0f);
	assert_false(mpa_rr_rejected(&rr));

	/* The RFC maximum, when the caller allows it (cap above clamps). */
	len = raw_frame(buf, MPA_KEY_REQ, 0, 1, 512, 512);
	assert_int_equal(mpa_rr_parse(buf, len, MPA_RR_REQUEST, 512, &rr, NULL),
			 532);
	assert_int_equal(
		mpa_rr_parse(buf, len, MPA_RR_REQUEST, 100000, &rr, NULL), 532);
	assert_int_equal(rr.pd_len, 512);
	assert_int_equal(mpa_rr_parse(buf, len, MPA_RR_REQUEST, 511, &rr, NULL),
			 -EMSGSIZE);

	/* The default siw cap: 256 passes. */
	len = raw_frame(buf, MPA_KEY_REQ, MPA_FLAG_ENHANCED, 2, 256, 256);
	assert_int_equal(mpa_rr_parse(buf, len, MPA_RR_REQUEST,
				      MPA_PRIVATE_DATA_MAX, &rr, NULL),
			 276);
	assert_int_equal(rr.pd_len, NDK_MPA_MAX_CONSUMER_PD);

	/* Bytes after the frame are left to the caller. */
	len = raw_frame(buf, MPA_KEY_REQ, 0, 1, 4, 40);
	assert_int_equal(
		mpa_rr_parse(buf, len, MPA_RR_REQUEST, 256, &rr, &need), 24);
	assert_int_equal(need, 24);

	/* Bad arguments. */
	assert_int_equal(
		mpa_rr_parse(buf, len, MPA_RR_REQUEST, 256, NULL, NULL),
		-EINVAL);
	assert_int_equal(mpa_rr_parse(NULL, 1, MPA_RR_REQUEST, 256, &rr, NULL),
			 -EINVAL);
	assert_int_equal(
		mpa_rr_parse(buf, len, (enum mpa_rr_type)7, 256, &rr, NULL),
		-EINVAL);
	assert_int_equal(mpa_rr_parse(NULL, 0, MPA_RR_REQUEST, 256, &rr, &need),
			 -EAGAIN);
	assert_int_equal(need, MPA_RR_HDR_LEN);
}

/*
 * Every prefix of a good frame is -EAGAIN with a sane "need", and a reader
 * that only ever reads what the parser says it needs stops exactly at the
 * end of the frame, never eating the FPDU bytes that may follow it.
 */
static void check_incremental(const uint8_t *frame, size_t len,
			      enum mpa_rr_type expect, size_t cap)
{
	uint8_t stream[MAX_FRAME + 64];
	struct mpa_rr whole, part;
	size_t need, last_need = 0;

	assert_int_equal(mpa_rr_parse(frame, len, expect, cap, &whole, &need),
			 (int)len);
	for (size_t k = 0; k < len; k++) {
		assert_int_equal(
			mpa_rr_parse(frame, k, expect, cap, &part, &need),
			-EAGAIN);
		assert_true(need > k);
		assert_true(need <= len);
		assert_true(need >= last_need);
		last_need = need;
	}

	/* The stream holds the frame and then something else. */
	memcpy(stream, frame, len);
	memset(stream + len, 0x5a, 64);
	for (size_t chunk = 1; chunk <= len + 64; chunk++) {
		uint8_t rx[MAX_FRAME];
		size_t have = 0;
		int r;

		need = MPA_RR_HDR_LEN;
		for (;;) {
			size_t take = need - have;

			take = take < chunk ? take : chunk;
			memcpy(rx + have, stream + have, take);
			have += take;
			r = mpa_rr_parse(rx, have, expect, cap, &part, &need);
			if (r != -EAGAIN)
				break;
			assert_true(need > have);
		}
		assert_int_equal(r, (int)len);
		assert_int_equal(have, len);
		assert_rr_equal(&whole, &part);
	}

	/* Two pieces, split at every point. */
	for (size_t split = 0; split <= len; split++) {
		uint8_t rx[MAX_FRAME];
		int r;

		memcpy(rx, frame, split);
		r = mpa_rr_parse(rx, split, expect, cap, &part, NULL);
		assert_int_equal(r, split == len ? (int)len : -EAGAIN);
		memcpy(rx + split, frame + split, len - split);
		r = mpa_rr_parse(rx, len, expect, cap, &part, NULL);
		assert_int_equal(r, (int)len);
		assert_rr_equal(&whole, &part);
	}
}

static void test_parse_incremental(void **state)
{
	uint8_t buf[MAX_FRAME];
	size_t n;
	struct mpa_rr rr = kat_req();
	static uint8_t pd[NDK_MPA_MAX_CONSUMER_PD];

	(void)state;
	n = tu_hex2bin(kat_req_hex, buf, sizeof(buf));
	check_incremental(buf, n, MPA_RR_REQUEST, 256);
	n = tu_hex2bin(kat_rep_hex, buf, sizeof(buf));
	check_incremental(buf, n, MPA_RR_REPLY, 256);
	check_incremental(buf, n, MPA_RR_ANY, 256);

	/* Header only, Rev 1. */
	n = raw_frame(buf, MPA_KEY_REP, MPA_FLAG_CRC, 1, 0, 0);
	check_incremental(buf, n, MPA_RR_REPLY, 0);

	/* Largest frame we send: block plus 252 bytes. */
	for (size_t i = 0; i < sizeof(pd); i++)
		pd[i] = (uint8_t)i;
	rr.pd = pd;
	rr.pd_len = NDK_MPA_MAX_CONSUMER_PD;
	assert_int_equal(mpa_rr_encode(&rr, buf, sizeof(buf)), 276);
	check_incremental(buf, 276, MPA_RR_REQUEST, MPA_PRIVATE_DATA_MAX);

	/* Largest frame the RFC allows. */
	n = raw_frame(buf, MPA_KEY_REQ, 0, 1, 512, 512);
	check_incremental(buf, n, MPA_RR_REQUEST, MPA_RFC_PD_MAX);
}

static void test_encode_errors(void **state)
{
	static uint8_t pd[MPA_RFC_PD_MAX];
	uint8_t buf[MAX_FRAME];
	struct mpa_rr rr;

	(void)state;
	rr = kat_req();
	rr.type = MPA_RR_ANY;
	assert_int_equal(mpa_rr_encode(&rr, buf, sizeof(buf)), -EINVAL);
	rr = kat_req();
	rr.rev = 0;
	assert_int_equal(mpa_rr_encode(&rr, buf, sizeof(buf)), -EINVAL);
	rr.rev = 3;
	assert_int_equal(mpa_rr_encode(&rr, buf, sizeof(buf)), -EINVAL);
	rr = kat_req();
	rr.flags |= 0x01; /* reserved */
	assert_int_equal(mpa_rr_encode(&rr, buf, sizeof(buf)), -EINVAL);
	rr = kat_req();
	rr.flags |= 0x04; /* reserved */
	assert_int_equal(mpa_rr_encode(&rr, buf, sizeof(buf)), -EINVAL);
	/* Large FPDUs (0x08) are not reserved for us: siw's bit. */
	rr = kat_req();
	rr.flags |= MPA_FLAG_LARGE_FPDU;
	assert_true(mpa_rr_encode(&rr, buf, sizeof(buf)) > 0);
	assert_int_equal(buf[16], kat_req().flags | 0x08);
	rr = kat_req();
	rr.rev = MPA_REV_1; /* S with Rev 1 */
	assert_int_equal(mpa_rr_encode(&rr, buf, sizeof(buf)), -EINVAL);
	rr = kat_req();
	rr.flags |= MPA_FLAG_REJECT; /* R in a Request */
	assert_int_equal(mpa_rr_encode(&rr, buf, sizeof(buf)), -EINVAL);
	rr = kat_req();
	rr.ird = 0x4000;
	assert_int_equal(mpa_rr_encode(&rr, buf, sizeof(buf)), -EINVAL);
	rr = kat_req();
	rr.ord = 0x4000;
	assert_int_equal(mpa_rr_encode(&rr, buf, sizeof(buf)), -EINVAL);
	rr = kat_req();
	rr.rtr = 0x08;
	assert_int_equal(mpa_rr_encode(&rr, buf, sizeof(buf)), -EINVAL);
	rr = kat_req();
	rr.pd = NULL;
	assert_int_equal(mpa_rr_encode(&rr, buf, sizeof(buf)), -EINVAL);

	/* 252 bytes of consumer PD fit with the block, 253 do not. */
	rr = kat_req();
	rr.pd = pd;
	rr.pd_len = NDK_MPA_MAX_CONSUMER_PD;
	assert_int_equal(mpa_rr_encode(&rr, buf, sizeof(buf)), 276);
	rr.pd_len++;
	assert_int_equal(mpa_rr_encode(&rr, buf, sizeof(buf)), -EMSGSIZE);
	/* Without the block, 256 fit and 257 do not. */
	rr.flags = MPA_FLAG_CRC;
	rr.pd_len = MPA_PRIVATE_DATA_MAX;
	assert_int_equal(mpa_rr_encode(&rr, buf, sizeof(buf)), 276);
	rr.pd_len++;
	assert_int_equal(mpa_rr_encode(&rr, buf, sizeof(buf)), -EMSGSIZE);

	/* Buffer one byte short. */
	rr = kat_req();
	assert_int_equal(mpa_rr_encode(&rr, buf, 31), -ENOBUFS);
	assert_int_equal(mpa_rr_encode(&rr, buf, 0), -ENOBUFS);

	/* Outside the block, IRD/ORD/RTR are not looked at. */
	rr.flags = MPA_FLAG_CRC;
	rr.ird = 0xffff;
	rr.rtr = 0xff;
	assert_int_equal(mpa_rr_encode(&rr, buf, sizeof(buf)), 28);
}

static void test_reject_encode(void **state)
{
	static const uint8_t why[] = "busy";
	uint8_t buf[64];
	struct mpa_rr rr = kat_req(), out;
	int n;

	(void)state;
	/* From the Request's parameters: becomes a Reply, R set, M cleared. */
	rr.flags |= MPA_FLAG_MARKERS;
	rr.pd = why;
	rr.pd_len = 4;
	n = mpa_reject_encode(&rr, buf, sizeof(buf));
	assert_int_equal(n, 28);
	assert_memory_equal(buf, MPA_KEY_REP, MPA_KEY_LEN);
	assert_int_equal(buf[16],
			 MPA_FLAG_CRC | MPA_FLAG_REJECT | MPA_FLAG_ENHANCED);
	assert_int_equal(buf[17], 2);
	assert_int_equal(buf[18], 0);
	assert_int_equal(buf[19], 8);
	assert_memory_equal(buf + 24, "busy", 4);
	assert_int_equal(
		mpa_rr_parse(buf, (size_t)n, MPA_RR_REPLY, 256, &out, NULL), n);
	assert_true(mpa_rr_rejected(&out));
	assert_true(mpa_rr_enhanced(&out));
	assert_int_equal(out.pd_len, 4);

	/* MPA v1: no block. */
	rr = (struct mpa_rr){ .type = MPA_RR_REPLY, .rev = 1 };
	n = mpa_reject_encode(&rr, buf, sizeof(buf));
	assert_int_equal(n, 20);
	assert_int_equal(buf[16], MPA_FLAG_REJECT);
	assert_int_equal(mpa_rr_parse(buf, 20, MPA_RR_REPLY, 256, &out, NULL),
			 20);
	assert_true(mpa_rr_rejected(&out));

	/* Limits still apply. */
	rr.pd_len = 300;
	rr.pd = buf;
	assert_int_equal(mpa_reject_encode(&rr, buf, sizeof(buf)), -EMSGSIZE);
}

struct ird_ord_case {
	struct mpa_read_limits req, max, peer, want;
};

static void test_ird_ord_negotiation(void **state)
{
	static const struct ird_ord_case cases[] = {
		/* all ample: the requests win */
		{ { 8, 8 }, { 128, 128 }, { 16, 16 }, { 8, 8 } },
		/* peer ORD limits our IRD, peer IRD limits our ORD */
		{ { 16, 16 }, { 128, 128 }, { 4, 2 }, { 2, 4 } },
		/* own max caps an oversized request */
		{ { 1000, 1000 }, { 128, 64 }, { 500, 500 }, { 128, 64 } },
		/* zero ORD requested: no Reads from us */
		{ { 16, 0 }, { 128, 128 }, { 16, 16 }, { 16, 0 } },
		/* peer wants no Reads from us: our IRD drops to 0 */
		{ { 16, 16 }, { 128, 128 }, { 16, 0 }, { 0, 16 } },
		/* asymmetric */
		{ { 1, 128 }, { 128, 128 }, { 128, 1 }, { 1, 128 } },
		/* 14-bit clamp */
		{ { 100000, 100000 },
		  { 100000, 100000 },
		  { 100000, 100000 },
		  { MPA_IRD_ORD_MAX, MPA_IRD_ORD_MAX } },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct ird_ord_case *c = &cases[i];
		struct mpa_read_limits got =
			mpa_negotiate_ird_ord(c->req, c->max, c->peer);

		if (got.ird != c->want.ird || got.ord != c->want.ord)
			fail_msg("case %zu: got %u/%u, want %u/%u", i, got.ird,
				 got.ord, c->want.ird, c->want.ord);
	}

	/*
	 * Full exchange on random values: the Request carries the
	 * initiator's capped request, the responder negotiates and replies,
	 * the initiator negotiates on the Reply. Each IRD equals the other
	 * end's ORD.
	 */
	for (int r = 0; r < 10000; r++) {
		const struct mpa_read_limits any = { MPA_IRD_ORD_MAX,
						     MPA_IRD_ORD_MAX };
		struct mpa_read_limits i_req = { rng() % 200, rng() % 200 };
		struct mpa_read_limits i_max = { rng() % 200, rng() % 200 };
		struct mpa_read_limits r_req = { rng() % 200, rng() % 200 };
		struct mpa_read_limits r_max = { rng() % 200, rng() % 200 };
		struct mpa_read_limits sent, resp, init;

		sent = mpa_negotiate_ird_ord(i_req, i_max, any);
		resp = mpa_negotiate_ird_ord(r_req, r_max, sent);
		init = mpa_negotiate_ird_ord(i_req, i_max, resp);
		assert_int_equal(init.ird, resp.ord);
		assert_int_equal(init.ord, resp.ird);
		assert_true(init.ird <= i_req.ird && init.ird <= i_max.ird);
		assert_true(resp.ird <= r_req.ird && resp.ird <= r_max.ird);
	}
}

static void test_rtr_rules(void **state)
{
	const unsigned int W = MPA_RTR_WRITE, R = MPA_RTR_READ,
			   S = MPA_RTR_SEND;

	(void)state;
	/* Responder: one of the offered types, Write first. */
	assert_int_equal(mpa_rtr_choose(W | R | S, MPA_RTR_ALL), W);
	assert_int_equal(mpa_rtr_choose(R | S, MPA_RTR_ALL), R);
	assert_int_equal(mpa_rtr_choose(S, MPA_RTR_ALL), S);
	assert_int_equal(mpa_rtr_choose(W | R, R), R);
	assert_int_equal(mpa_rtr_choose(S, W | R), MPA_RTR_NONE);
	assert_int_equal(mpa_rtr_choose(0, MPA_RTR_ALL), MPA_RTR_NONE);
	assert_int_equal(mpa_rtr_choose(W | R | S, 0), MPA_RTR_NONE);
	/* Chelsio's default offer, Read only (docs/wire.md, "Peer-to-peer mode and the RTR"). */
	assert_int_equal(mpa_rtr_choose(R, W | R), R);

	/* Initiator: exactly one chosen type, one it offered. */
	assert_int_equal(mpa_rtr_check_reply(W | R, W), W);
	assert_int_equal(mpa_rtr_check_reply(W | R, R), R);
	assert_int_equal(mpa_rtr_check_reply(W | R, S), -ENOPROTOOPT);
	assert_int_equal(mpa_rtr_check_reply(W | R, 0), -ENOPROTOOPT);
	assert_int_equal(mpa_rtr_check_reply(W | R, W | R), -ENOPROTOOPT);
	assert_int_equal(mpa_rtr_check_reply(MPA_RTR_ALL, 0x08), -ENOPROTOOPT);
}

static void test_fpdu_sizes(void **state)
{
	(void)state;
	/* kat.h: RTR 14 -> 20, Send 29 -> 36 (pad 1), ReadReq 46 -> 52. */
	assert_int_equal(mpa_fpdu_pad(14), 0);
	assert_int_equal(mpa_fpdu_len(14), 20);
	assert_int_equal(mpa_fpdu_pad(29), 1);
	assert_int_equal(mpa_fpdu_len(29), 36);
	assert_int_equal(mpa_fpdu_len(46), 52);
	assert_int_equal(mpa_fpdu_len(30), 36);
	assert_int_equal(mpa_fpdu_len(42), 48);
	for (size_t l = 0; l < 64; l++) {
		assert_true(mpa_fpdu_pad(l) < 4);
		assert_int_equal((2 + l + mpa_fpdu_pad(l)) % 4, 0);
		assert_int_equal(mpa_fpdu_len(l) % 4, 0);
	}
	/* MULPDU: the whole FPDU fits the EMSS. */
	assert_int_equal(mpa_mulpdu(1448), 1442);
	assert_int_equal(mpa_mulpdu(1450), 1442);
	assert_int_equal(mpa_mulpdu(1460), 1454);
	assert_int_equal(mpa_mulpdu(65483), 65474);
	assert_int_equal(mpa_mulpdu(200000), MPA_ULPDU_MAX);
	assert_int_equal(mpa_mulpdu(6), 0);
	assert_int_equal(mpa_mulpdu(0), 0);
	for (size_t emss = 8; emss < 9000; emss++) {
		size_t m = mpa_mulpdu(emss);

		assert_true(m > 0);
		assert_true(mpa_fpdu_len(m) <= emss);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kat_encode),
		cmocka_unit_test(test_kat_parse),
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_v2_block_bits),
		cmocka_unit_test(test_parse_malformed),
		cmocka_unit_test(test_parse_edge_ok),
		cmocka_unit_test(test_parse_incremental),
		cmocka_unit_test(test_encode_errors),
		cmocka_unit_test(test_reject_encode),
		cmocka_unit_test(test_ird_ord_negotiation),
		cmocka_unit_test(test_rtr_rules),
		cmocka_unit_test(test_fpdu_sizes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
