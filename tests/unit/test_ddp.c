/* SPDX-License-Identifier: MIT */
/*
 * DDP/RDMAP headers (RFC 5041, RFC 5040): the known-answer FPDUs that
 * tshark decodes with "Good CRC32" (tests/unit/kat.h), header round trips, the
 * static header checks and their Terminate causes, the Terminate body, the
 * RTR builders and FPDU framing.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <errno.h>
#include <string.h>
#include <cmocka.h>

#include "iwarp/crc32c.h"
#include "iwarp/ddp.h"
#include "iwarp/mpa.h"
#include "kat.h"
#include "testutil.h"

static uint32_t rng_state = 0x2545f491;

static uint32_t rng(void)
{
	return tu_xorshift(&rng_state);
}

/* Encodes every 6.5 FPDU through the API and compares byte for byte. */
static void test_kat_encode(void **state)
{
	uint8_t want[128], buf[128];
	size_t n;
	int len;

	(void)state;
	/* RTR: zero-length Write to STag 1. */
	n = tu_hex2bin(kat_rtr_write, want, sizeof(want));
	memset(buf, 0xee, sizeof(buf));
	assert_int_equal(ddp_rtr_build(MPA_RTR_WRITE, true, buf, sizeof(buf)),
			 (int)n);
	assert_memory_equal(buf, want, n);

	/* Send "hello iwarp", QN 0, MSN 1; the pad byte must be zero. */
	{
		static const uint8_t hello[11] = "hello iwarp";
		const struct ddp_hdr h = { .last = true,
					   .opcode = RDMAP_SEND,
					   .qn = DDP_QN_SEND,
					   .msn = 1 };

		n = tu_hex2bin(kat_send, want, sizeof(want));
		memset(buf, 0xee, sizeof(buf));
		assert_int_equal(ddp_hdr_encode(&h, buf + 2, sizeof(buf) - 2),
				 DDP_UNTAGGED_HDR_LEN);
		memcpy(buf + 2 + 18, hello, sizeof(hello));
		len = mpa_fpdu_finish(buf, 18 + 11, true);
		assert_int_equal(len, (int)n);
		assert_memory_equal(buf, want, n);
	}

	/* Read Request, QN 1, MSN 1. */
	{
		const struct ddp_hdr h = { .last = true,
					   .opcode = RDMAP_READ_REQ,
					   .qn = DDP_QN_READ_REQ,
					   .msn = 1 };
		const struct rdmap_read_req rr = { .sink_stag = 0x1234,
						   .sink_to = 0x1000,
						   .size = 16,
						   .src_stag = 0x5678,
						   .src_to = 0x2000 };

		n = tu_hex2bin(kat_read_req, want, sizeof(want));
		assert_int_equal(ddp_hdr_encode(&h, buf + 2, sizeof(buf) - 2),
				 18);
		rdmap_read_req_put(buf + 2 + 18, &rr);
		assert_int_equal(mpa_fpdu_finish(buf, 18 + 28, true), (int)n);
		assert_memory_equal(buf, want, n);
	}

	/* Read Response to the sink of that request, 16 bytes. */
	{
		const struct ddp_hdr h = { .tagged = true,
					   .last = true,
					   .opcode = RDMAP_READ_RESP,
					   .stag = 0x1234,
					   .to = 0x1000 };

		n = tu_hex2bin(kat_read_resp, want, sizeof(want));
		assert_int_equal(ddp_hdr_encode(&h, buf + 2, sizeof(buf) - 2),
				 DDP_TAGGED_HDR_LEN);
		for (int i = 0; i < 16; i++)
			buf[2 + 14 + i] = (uint8_t)i;
		assert_int_equal(mpa_fpdu_finish(buf, 14 + 16, true), (int)n);
		assert_memory_equal(buf, want, n);
	}

	/* Terminate for the Send above: DDP/untagged/invalid MSN, M|D. */
	{
		uint8_t send[64];
		struct rdmap_term t = {
			.cause = { TERM_LAYER_DDP, DDP_ETYPE_UNTAGGED,
				   DDP_UNTAGGED_MSN_RANGE },
			.m = true,
		};

		tu_hex2bin(kat_send, send, sizeof(send));
		t.ddp_seg_len = (uint16_t)(send[0] << 8 | send[1]);
		t.ddp_hdr = send + 2;
		n = tu_hex2bin(kat_term, want, sizeof(want));
		assert_int_equal(rdmap_term_build(&t, true, buf, sizeof(buf)),
				 (int)n);
		assert_memory_equal(buf, want, n);
		assert_int_equal(rdmap_term_attach(&t.cause, false),
				 RDMAP_TERM_FLAG_M | RDMAP_TERM_FLAG_D);
	}
}

/* Decodes every 6.5 FPDU and checks the fields and the CRC. */
static void test_kat_decode(void **state)
{
	uint8_t buf[128];
	struct ddp_hdr h;
	struct iwarp_term_cause cause;
	size_t n;

	(void)state;
	n = tu_hex2bin(kat_rtr_write, buf, sizeof(buf));
	assert_int_equal(mpa_fpdu_check_crc(buf, n), 0);
	assert_int_equal(ddp_hdr_decode(buf + 2, n - 6, &h), 14);
	assert_true(h.tagged && h.last);
	assert_int_equal(h.opcode, RDMAP_WRITE);
	assert_int_equal(h.stag, 1);
	assert_int_equal(h.to, 0);
	assert_int_equal(ddp_hdr_check(&h, &cause), 0);

	n = tu_hex2bin(kat_send, buf, sizeof(buf));
	assert_int_equal(mpa_fpdu_check_crc(buf, n), 0);
	assert_int_equal(ddp_hdr_decode(buf + 2, n - 6, &h), 18);
	assert_false(h.tagged);
	assert_true(h.last);
	assert_int_equal(h.opcode, RDMAP_SEND);
	assert_int_equal(h.qn, 0);
	assert_int_equal(h.msn, 1);
	assert_int_equal(h.mo, 0);
	assert_int_equal(ddp_hdr_check(&h, &cause), 0);
	assert_memory_equal(buf + 20, "hello iwarp", 11);

	n = tu_hex2bin(kat_read_req, buf, sizeof(buf));
	assert_int_equal(mpa_fpdu_check_crc(buf, n), 0);
	assert_int_equal(ddp_hdr_decode(buf + 2, n - 6, &h), 18);
	assert_int_equal(h.opcode, RDMAP_READ_REQ);
	assert_int_equal(h.qn, 1);
	assert_int_equal(h.msn, 1);
	assert_int_equal(ddp_hdr_check(&h, &cause), 0);
	{
		struct rdmap_read_req rr;

		rdmap_read_req_get(buf + 20, &rr);
		assert_int_equal(rr.sink_stag, 0x1234);
		assert_int_equal(rr.sink_to, 0x1000);
		assert_int_equal(rr.size, 16);
		assert_int_equal(rr.src_stag, 0x5678);
		assert_int_equal(rr.src_to, 0x2000);
	}

	n = tu_hex2bin(kat_read_resp, buf, sizeof(buf));
	assert_int_equal(mpa_fpdu_check_crc(buf, n), 0);
	assert_int_equal(ddp_hdr_decode(buf + 2, n - 6, &h), 14);
	assert_int_equal(h.opcode, RDMAP_READ_RESP);
	assert_int_equal(h.stag, 0x1234);
	assert_int_equal(h.to, 0x1000);
	assert_int_equal(ddp_hdr_check(&h, &cause), 0);

	n = tu_hex2bin(kat_term, buf, sizeof(buf));
	assert_int_equal(mpa_fpdu_check_crc(buf, n), 0);
	assert_int_equal(ddp_hdr_decode(buf + 2, n - 6, &h), 18);
	assert_int_equal(h.opcode, RDMAP_TERMINATE);
	assert_int_equal(h.qn, 2);
	assert_int_equal(h.msn, 1);
	assert_int_equal(ddp_hdr_check(&h, &cause), 0);
	{
		struct rdmap_term t;
		struct ddp_hdr inner;

		/* The ULPDU after the untagged header: 42 - 18 bytes. */
		assert_int_equal(rdmap_term_decode(buf + 20, 42 - 18, &t), 24);
		assert_int_equal(t.cause.layer, TERM_LAYER_DDP);
		assert_int_equal(t.cause.etype, DDP_ETYPE_UNTAGGED);
		assert_int_equal(t.cause.ecode, DDP_UNTAGGED_MSN_RANGE);
		assert_true(t.m);
		assert_int_equal(t.ddp_seg_len, 29);
		assert_non_null(t.ddp_hdr);
		assert_null(t.rdmap_hdr);
		assert_int_equal(ddp_hdr_decode(t.ddp_hdr, 18, &inner), 18);
		assert_int_equal(inner.opcode, RDMAP_SEND);
		assert_int_equal(inner.msn, 1);
		assert_string_equal(iwarp_term_ecode_name(t.cause.layer,
							  t.cause.etype,
							  t.cause.ecode),
				    "invalid MSN - MSN range is not valid");
	}

	/* One flipped bit anywhere breaks the CRC. */
	for (size_t i = 0; i < n * 8; i++) {
		buf[i / 8] ^= (uint8_t)(1u << (i % 8));
		if (i / 8 >= 2)
			assert_int_equal(mpa_fpdu_check_crc(buf, n), -EBADMSG);
		buf[i / 8] ^= (uint8_t)(1u << (i % 8));
	}
	assert_int_equal(mpa_fpdu_check_crc(buf, n), 0);
	assert_int_equal(mpa_fpdu_check_crc(buf, n - 4), -EINVAL);
	assert_int_equal(mpa_fpdu_check_crc(buf, 3), -EINVAL);
}

/* The control byte pairs (RFC 5041 section 4, RFC 5040 section 4). */
static void test_control_bytes(void **state)
{
	static const struct {
		bool tagged, last;
		uint8_t opcode;
		uint8_t b0, b1;
	} cases[] = {
		{ true, true, RDMAP_WRITE, 0xc1, 0x40 },
		{ true, true, RDMAP_READ_RESP, 0xc1, 0x42 },
		{ false, true, RDMAP_READ_REQ, 0x41, 0x41 },
		{ false, true, RDMAP_SEND, 0x41, 0x43 },
		{ false, false, RDMAP_SEND, 0x01, 0x43 },
		{ false, true, RDMAP_SEND_SE, 0x41, 0x45 },
		{ false, true, RDMAP_TERMINATE, 0x41, 0x47 },
		{ true, false, RDMAP_WRITE, 0x81, 0x40 },
	};
	uint8_t buf[DDP_UNTAGGED_HDR_LEN];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct ddp_hdr h = { .tagged = cases[i].tagged,
				     .last = cases[i].last,
				     .opcode = cases[i].opcode };

		assert_true(ddp_hdr_encode(&h, buf, sizeof(buf)) > 0);
		assert_int_equal(buf[0], cases[i].b0);
		assert_int_equal(buf[1], cases[i].b1);
	}
}

static void test_hdr_roundtrip(void **state)
{
	uint8_t buf[DDP_UNTAGGED_HDR_LEN + 4];

	(void)state;
	for (int r = 0; r < 5000; r++) {
		struct ddp_hdr in = {
			.tagged = rng() & 1,
			.last = rng() & 1,
			.opcode = (uint8_t)(rng() & 0xf),
			.dv = DDP_VERSION,
			.rv = RDMAP_VERSION,
		}, out;
		int n;

		if (in.tagged) {
			in.stag = rng();
			in.to = (uint64_t)rng() << 32 | rng();
		} else {
			in.inv_stag = rng();
			in.qn = rng();
			in.msn = rng();
			in.mo = rng();
		}
		n = ddp_hdr_encode(&in, buf, sizeof(buf));
		assert_int_equal(n, in.tagged ? 14 : 18);
		/* Short input: -EAGAIN until the whole header is there. */
		for (int k = 0; k < n; k++)
			assert_int_equal(ddp_hdr_decode(buf, (size_t)k, &out),
					 -EAGAIN);
		assert_int_equal(ddp_hdr_decode(buf, (size_t)n, &out), n);
		assert_memory_equal(&in, &out, sizeof(in));
		/* Reserved bits are zero on the wire. */
		assert_int_equal(buf[0] & DDP_CTRL_RSVD, 0);
		assert_int_equal(buf[1] & RDMAP_CTRL_RSVD, 0);
	}
	{
		struct ddp_hdr bad = { .opcode = 0x10 };

		assert_int_equal(ddp_hdr_encode(&bad, buf, sizeof(buf)),
				 -EINVAL);
		bad.opcode = RDMAP_SEND;
		assert_int_equal(ddp_hdr_encode(&bad, buf, 17), -ENOBUFS);
		bad.tagged = true;
		assert_int_equal(ddp_hdr_encode(&bad, buf, 14), 14);
	}
}

struct check_case {
	const char *name;
	uint8_t b0, b1; /* control bytes */
	uint32_t qn, mo;
	int ret;
	struct iwarp_term_cause cause;
};

static void test_hdr_check(void **state)
{
	static const struct check_case cases[] = {
		{ "Write", 0xc1, 0x40, 0, 0, 0, { 0 } },
		{ "Write, not last", 0x81, 0x40, 0, 0, 0, { 0 } },
		{ "Send segment", 0x01, 0x43, 0, 4096, 0, { 0 } },
		{ "SendSEInv", 0x41, 0x46, 0, 0, 0, { 0 } },
		{ "Terminate", 0x41, 0x47, 2, 0, 0, { 0 } },
		/* DDP version 0, 2, 3 */
		{ "tagged DV 0", 0xc0, 0x40, 0, 0, -EPROTO, { 1, 1, 0x04 } },
		{ "tagged DV 2", 0xc2, 0x40, 0, 0, -EPROTO, { 1, 1, 0x04 } },
		{ "untagged DV 3", 0x43, 0x43, 0, 0, -EPROTO, { 1, 2, 0x06 } },
		/* DDP is checked before RDMAP */
		{ "both versions bad",
		  0x40,
		  0x03,
		  0,
		  0,
		  -EPROTO,
		  { 1, 2, 0x06 } },
		{ "RV 0", 0x41, 0x03, 0, 0, -EPROTO, { 0, 2, 0x05 } },
		{ "RV 2", 0xc1, 0x80, 0, 0, -EPROTO, { 0, 2, 0x05 } },
		{ "RV 3", 0x41, 0xc3, 0, 0, -EPROTO, { 0, 2, 0x05 } },
		/* opcodes we do not implement, and wrong buffer model */
		{ "Immediate", 0x41, 0x48, 0, 0, -EPROTO, { 0, 2, 0x06 } },
		{ "Atomic", 0x41, 0x4a, 1, 0, -EPROTO, { 0, 2, 0x06 } },
		{ "opcode 0xf", 0x41, 0x4f, 0, 0, -EPROTO, { 0, 2, 0x06 } },
		{ "untagged Write", 0x41, 0x40, 0, 0, -EPROTO, { 0, 2, 0x06 } },
		{ "tagged Send", 0xc1, 0x43, 0, 0, -EPROTO, { 0, 2, 0x06 } },
		{ "tagged Read Req",
		  0xc1,
		  0x41,
		  1,
		  0,
		  -EPROTO,
		  { 0, 2, 0x06 } },
		/* queue numbers */
		{ "Send on QN 1", 0x41, 0x43, 1, 0, -EPROTO, { 1, 2, 0x01 } },
		{ "Read Req on QN 0",
		  0x41,
		  0x41,
		  0,
		  0,
		  -EPROTO,
		  { 1, 2, 0x01 } },
		{ "Terminate on QN 3",
		  0x41,
		  0x47,
		  3,
		  0,
		  -EPROTO,
		  { 1, 2, 0x01 } },
		{ "QN 0xffffffff",
		  0x41,
		  0x43,
		  0xffffffff,
		  0,
		  -EPROTO,
		  { 1, 2, 0x01 } },
		/* single-segment messages */
		{ "Read Req MO 4", 0x41, 0x41, 1, 4, -EPROTO, { 1, 2, 0x04 } },
		{ "Terminate MO 1", 0x41, 0x47, 2, 1, -EPROTO, { 1, 2, 0x04 } },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct check_case *c = &cases[i];
		uint8_t b[18] = { c->b0, c->b1 };
		struct ddp_hdr h;
		struct iwarp_term_cause cause = { 0xaa, 0xaa, 0xaa };
		int r;

		b[6] = (uint8_t)(c->qn >> 24);
		b[7] = (uint8_t)(c->qn >> 16);
		b[8] = (uint8_t)(c->qn >> 8);
		b[9] = (uint8_t)c->qn;
		b[14] = (uint8_t)(c->mo >> 24);
		b[15] = (uint8_t)(c->mo >> 16);
		b[16] = (uint8_t)(c->mo >> 8);
		b[17] = (uint8_t)c->mo;
		assert_true(ddp_hdr_decode(b, sizeof(b), &h) > 0);
		r = ddp_hdr_check(&h, &cause);
		if (r != c->ret)
			fail_msg("%s: %d, want %d", c->name, r, c->ret);
		if (r == 0)
			continue;
		if (cause.layer != c->cause.layer ||
		    cause.etype != c->cause.etype ||
		    cause.ecode != c->cause.ecode)
			fail_msg("%s: cause %u/%u/0x%02x, want %u/%u/0x%02x",
				 c->name, cause.layer, cause.etype, cause.ecode,
				 c->cause.layer, c->cause.etype,
				 c->cause.ecode);
	}
}

static void test_term_body(void **state)
{
	uint8_t tagged_hdr[14] = { 0xc1, 0x40, 0, 0, 0x12, 0x34 };
	uint8_t untagged_hdr[18] = { 0x41, 0x41, 0, 0, 0, 0, 0, 0, 0, 1 };
	uint8_t rdmap_hdr[RDMAP_READ_REQ_LEN];
	uint8_t buf[RDMAP_TERM_BODY_MAX + 8];
	struct rdmap_term out;

	(void)state;
	for (size_t i = 0; i < sizeof(rdmap_hdr); i++)
		rdmap_hdr[i] = (uint8_t)(0x80 + i);

	/* Nothing attached: just the control word. */
	{
		struct rdmap_term t = { .cause = { 2, 0, MPA_ECODE_CRC } };

		assert_int_equal(rdmap_term_len(&t), 4);
		assert_int_equal(rdmap_term_encode(&t, buf, sizeof(buf)), 4);
		assert_int_equal(buf[0], 0x20);
		assert_int_equal(buf[1], 0x02);
		assert_int_equal(buf[2], 0x00);
		assert_int_equal(buf[3], 0x00);
		assert_int_equal(rdmap_term_decode(buf, 4, &out), 4);
		assert_int_equal(out.cause.layer, 2);
		assert_int_equal(out.cause.ecode, MPA_ECODE_CRC);
		assert_false(out.m);
		assert_null(out.ddp_hdr);
		assert_null(out.rdmap_hdr);
	}
	/* Tagged DDP header: 4 + 2 + 14. */
	{
		struct rdmap_term t = { .cause = { 1, 1, 0x00 },
					.m = true,
					.ddp_seg_len = 1000,
					.ddp_hdr = tagged_hdr };

		assert_int_equal(rdmap_term_encode(&t, buf, sizeof(buf)), 20);
		assert_int_equal(buf[0], 0x11);
		assert_int_equal(buf[2], 0xc0);
		assert_int_equal(buf[4], 1000 >> 8);
		assert_int_equal(buf[5], 1000 & 0xff);
		assert_memory_equal(buf + 6, tagged_hdr, 14);
		assert_int_equal(rdmap_term_decode(buf, 20, &out), 20);
		assert_int_equal(out.ddp_seg_len, 1000);
		assert_ptr_equal(out.ddp_hdr, buf + 6);
		for (size_t k = 0; k < 20; k++)
			assert_int_equal(rdmap_term_decode(buf, k, &out),
					 -EBADMSG);
		assert_int_equal(rdmap_term_encode(&t, buf, 19), -ENOBUFS);
	}
	/* Read Request: D and R, 4 + 2 + 18 + 28 = 52. */
	{
		struct rdmap_term t = {
			.cause = { 0, RDMAP_ETYPE_REMOTE_PROT,
				   RDMAP_ECODE_ACCESS },
			.m = true,
			.ddp_seg_len = 46,
			.ddp_hdr = untagged_hdr,
			.rdmap_hdr = rdmap_hdr,
		};

		assert_int_equal(rdmap_term_attach(&t.cause, true),
				 RDMAP_TERM_FLAG_M | RDMAP_TERM_FLAG_D |
					 RDMAP_TERM_FLAG_R);
		assert_int_equal(rdmap_term_len(&t), RDMAP_TERM_BODY_MAX);
		assert_int_equal(rdmap_term_encode(&t, buf, sizeof(buf)), 52);
		assert_int_equal(buf[0], 0x01);
		assert_int_equal(buf[1], 0x02);
		assert_int_equal(buf[2], 0xe0);
		assert_memory_equal(buf + 6, untagged_hdr, 18);
		assert_memory_equal(buf + 24, rdmap_hdr, 28);
		assert_int_equal(rdmap_term_decode(buf, 52, &out), 52);
		assert_ptr_equal(out.rdmap_hdr, buf + 24);
		for (size_t k = 0; k < 52; k++)
			assert_int_equal(rdmap_term_decode(buf, k, &out),
					 -EBADMSG);
		/* Trailing bytes are not the body's. */
		assert_int_equal(rdmap_term_decode(buf, 60, &out), 52);
	}
	/* Bad requests. */
	{
		struct rdmap_term t = { .cause = { 16, 0, 0 } };

		assert_int_equal(rdmap_term_encode(&t, buf, sizeof(buf)),
				 -EINVAL);
		t.cause.layer = 0;
		t.cause.etype = 16;
		assert_int_equal(rdmap_term_encode(&t, buf, sizeof(buf)),
				 -EINVAL);
		t.cause.etype = 0;
		t.rdmap_hdr = rdmap_hdr; /* R without D */
		assert_int_equal(rdmap_term_encode(&t, buf, sizeof(buf)),
				 -EINVAL);
		t.rdmap_hdr = NULL;
		t.m = true; /* M without D: no length field to carry it */
		assert_int_equal(rdmap_term_encode(&t, buf, sizeof(buf)),
				 -EINVAL);
	}
}

static void test_term_attach(void **state)
{
	static const struct {
		struct iwarp_term_cause c;
		bool read_req;
		unsigned int want;
	} cases[] = {
		{ { 1, 1, DDP_TAGGED_INVALID_STAG }, false, 0xc000 },
		{ { 1, 1, DDP_TAGGED_BAD_VERSION }, false, 0 },
		{ { 1, 2, DDP_UNTAGGED_MSN_NO_BUFFER }, false, 0xc000 },
		{ { 1, 2, DDP_UNTAGGED_BAD_VERSION }, false, 0 },
		{ { 1, 0, 0 }, false, 0 },
		{ { 0, 1, RDMAP_ECODE_INVALID_STAG }, false, 0xc000 },
		{ { 0, 1, RDMAP_ECODE_BASE_BOUNDS }, true, 0xe000 },
		{ { 0, 2, RDMAP_ECODE_CATASTROPHIC_STREAM }, false, 0xc000 },
		{ { 0, 2, RDMAP_ECODE_CATASTROPHIC_STREAM }, true, 0xc000 },
		{ { 0, 2, RDMAP_ECODE_BAD_VERSION }, false, 0 },
		{ { 0, 2, RDMAP_ECODE_UNEXPECTED_OPCODE }, false, 0 },
		{ { 0, 0, 0xff }, false, 0 },
		{ { 2, 0, MPA_ECODE_CRC }, false, 0 },
		{ { 2, 0, MPA_ECODE_NO_MATCHING_RTR }, false, 0 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (rdmap_term_attach(&cases[i].c, cases[i].read_req) !=
		    cases[i].want)
			fail_msg("case %zu: 0x%x, want 0x%x", i,
				 rdmap_term_attach(&cases[i].c,
						   cases[i].read_req),
				 cases[i].want);
}

static void test_names(void **state)
{
	(void)state;
	assert_string_equal(rdmap_opcode_name(RDMAP_WRITE), "RDMA Write");
	assert_string_equal(rdmap_opcode_name(RDMAP_TERMINATE), "Terminate");
	assert_string_equal(rdmap_opcode_name(RDMAP_ATOMIC_RESP),
			    "Atomic Response");
	assert_string_equal(rdmap_opcode_name(0xc), "reserved");
	assert_string_equal(rdmap_opcode_name(0xf), "reserved");
	assert_string_equal(rdmap_opcode_name(16), "?");
	for (unsigned int a = 0; a <= RDMAP_ATOMIC_RESP; a++)
		for (unsigned int b = a + 1; b <= RDMAP_ATOMIC_RESP; b++)
			assert_string_not_equal(rdmap_opcode_name(a),
						rdmap_opcode_name(b));

	assert_string_equal(iwarp_term_layer_name(TERM_LAYER_RDMAP), "RDMAP");
	assert_string_equal(iwarp_term_layer_name(TERM_LAYER_DDP), "DDP");
	assert_string_equal(iwarp_term_layer_name(TERM_LAYER_LLP), "LLP");
	assert_string_equal(iwarp_term_layer_name(3), "?");
	assert_string_equal(iwarp_term_etype_name(0, 1), "remote protection");
	assert_string_equal(iwarp_term_etype_name(0, 2), "remote operation");
	assert_string_equal(iwarp_term_etype_name(1, 2), "untagged buffer");
	assert_string_equal(iwarp_term_etype_name(2, 0), "MPA");
	assert_string_equal(iwarp_term_etype_name(2, 1), "?");
	assert_string_equal(iwarp_term_etype_name(0, 3), "?");

	/* Every named enum value has a name. */
	for (unsigned int e = 0; e <= 0x09; e++)
		if (e != 0x05 && e != 0x06 && e != 0x07 && e != 0x08)
			assert_string_not_equal(iwarp_term_ecode_name(0, 1, e),
						"?");
	for (unsigned int e = 0x05; e <= 0x09; e++)
		assert_string_not_equal(iwarp_term_ecode_name(0, 2, e), "?");
	for (unsigned int e = 0; e <= 4; e++)
		assert_string_not_equal(iwarp_term_ecode_name(1, 1, e), "?");
	for (unsigned int e = 1; e <= 6; e++)
		assert_string_not_equal(iwarp_term_ecode_name(1, 2, e), "?");
	for (unsigned int e = 1; e <= 7; e++)
		assert_string_not_equal(iwarp_term_ecode_name(2, 0, e), "?");
	assert_string_equal(iwarp_term_ecode_name(2, 0, 0x02), "MPA CRC error");
	assert_string_equal(iwarp_term_ecode_name(2, 0, 0x07),
			    "no matching RTR option");
	assert_string_equal(iwarp_term_ecode_name(0, 0, 0xff),
			    "local catastrophic");
	assert_string_equal(iwarp_term_ecode_name(1, 2, 0x00), "?");
	assert_string_equal(iwarp_term_ecode_name(2, 0, 0x08), "?");
	/* siw sends some RDMAP codes under the other type: still named. */
	assert_string_equal(iwarp_term_ecode_name(0, 2, 0x00), "invalid STag");
}

static void test_rtr_build(void **state)
{
	uint8_t buf[64];
	struct ddp_hdr h;
	struct iwarp_term_cause cause;
	int n;

	(void)state;
	/* Read RTR: zero bytes from STag 1 (RFC 6581 section 3), 52 bytes. */
	n = ddp_rtr_build(MPA_RTR_READ, true, buf, sizeof(buf));
	assert_int_equal(n, 52);
	assert_int_equal(mpa_fpdu_check_crc(buf, 52), 0);
	assert_int_equal(ddp_hdr_decode(buf + 2, 46, &h), 18);
	assert_int_equal(h.opcode, RDMAP_READ_REQ);
	assert_int_equal(h.qn, DDP_QN_READ_REQ);
	assert_int_equal(h.msn, 1);
	assert_true(h.last);
	assert_int_equal(ddp_hdr_check(&h, &cause), 0);
	{
		struct rdmap_read_req rr;

		rdmap_read_req_get(buf + 20, &rr);
		assert_int_equal(rr.size, 0);
		assert_int_equal(rr.sink_stag, 0);
		assert_int_equal(rr.sink_to, 0);
		assert_int_equal(rr.src_stag, DDP_RTR_STAG);
		assert_int_equal(rr.src_to, 0);
	}

	/* Send RTR: QN 0, MSN 1, no payload. */
	n = ddp_rtr_build(MPA_RTR_SEND, true, buf, sizeof(buf));
	assert_int_equal(n, 24);
	assert_int_equal(mpa_fpdu_check_crc(buf, 24), 0);
	assert_int_equal(ddp_hdr_decode(buf + 2, 18, &h), 18);
	assert_int_equal(h.opcode, RDMAP_SEND);
	assert_int_equal(h.msn, 1);
	assert_int_equal(ddp_hdr_check(&h, &cause), 0);

	/* CRC off: the trailer is there but zero. */
	n = ddp_rtr_build(MPA_RTR_WRITE, false, buf, sizeof(buf));
	assert_int_equal(n, 20);
	assert_int_equal(crc32c_get_trailer(buf + 16), 0);

	assert_int_equal(ddp_rtr_build(MPA_RTR_NONE, true, buf, sizeof(buf)),
			 -EINVAL);
	assert_int_equal(ddp_rtr_build(MPA_RTR_WRITE | MPA_RTR_READ, true, buf,
				       sizeof(buf)),
			 -EINVAL);
	assert_int_equal(ddp_rtr_build(MPA_RTR_WRITE, true, buf, 19), -ENOBUFS);
	assert_int_equal(ddp_rtr_build(MPA_RTR_READ, true, buf, 51), -ENOBUFS);

	/* Terminate build limits. */
	{
		struct rdmap_term t = { .cause = { 2, 0, 2 } };

		assert_int_equal(rdmap_term_build(&t, true, buf, 27), -ENOBUFS);
		assert_int_equal(rdmap_term_build(&t, true, buf, 28), 28);
		assert_int_equal(mpa_fpdu_check_crc(buf, 28), 0);
		t.cause.layer = 16;
		assert_int_equal(rdmap_term_build(&t, true, buf, 28), -EINVAL);
	}
}

static void test_fpdu_finish(void **state)
{
	static uint8_t buf[MPA_ULPDU_MAX + 16];

	(void)state;
	for (size_t len = 0; len < 40; len++) {
		int n;

		memset(buf, 0xff, 64);
		n = mpa_fpdu_finish(buf, len, true);
		assert_int_equal(n, (int)mpa_fpdu_len(len));
		assert_int_equal(buf[0], 0);
		assert_int_equal(buf[1], len);
		for (size_t p = 0; p < mpa_fpdu_pad(len); p++)
			assert_int_equal(buf[2 + len + p], 0);
		assert_int_equal(mpa_fpdu_check_crc(buf, (size_t)n), 0);
	}
	assert_int_equal(mpa_fpdu_finish(buf, MPA_ULPDU_MAX, true),
			 (int)mpa_fpdu_len(MPA_ULPDU_MAX));
	assert_int_equal(mpa_fpdu_finish(buf, MPA_ULPDU_MAX + 1, true),
			 -EMSGSIZE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kat_encode),
		cmocka_unit_test(test_kat_decode),
		cmocka_unit_test(test_control_bytes),
		cmocka_unit_test(test_hdr_roundtrip),
		cmocka_unit_test(test_hdr_check),
		cmocka_unit_test(test_term_body),
		cmocka_unit_test(test_term_attach),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_rtr_build),
		cmocka_unit_test(test_fpdu_finish),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
