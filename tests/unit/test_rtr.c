/* SPDX-License-Identifier: MIT */
/*
 * The RTR of MPA v2 peer-to-peer mode (RFC 6581 3): the three builders
 * against the known-answer Write RTR and the DDP decoder, the parser on
 * every RTR, every prefix and the FPDUs that are not one, the reading
 * pattern that never takes a byte past the RTR, and the Read Response a
 * Read RTR requires.
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
#include "iwarp/rtr.h"
#include "kat.h"
#include "testutil.h"

static const enum mpa_rtr all_types[] = { MPA_RTR_WRITE, MPA_RTR_READ,
					  MPA_RTR_SEND };

/* An FPDU of one DDP header (and Read Request body) and payload. */
static int build_fpdu(uint8_t *buf, size_t size, const struct ddp_hdr *h,
		      const struct rdmap_read_req *rr, size_t payload_len,
		      bool crc)
{
	size_t hl = ddp_hdr_len(h->tagged), len = hl + payload_len;

	assert_true(size >= mpa_fpdu_len(len + (rr ? RDMAP_READ_REQ_LEN : 0)));
	assert_int_equal(ddp_hdr_encode(h, buf + MPA_FPDU_HDR_LEN,
					size - MPA_FPDU_HDR_LEN),
			 (int)hl);
	if (rr) {
		rdmap_read_req_put(buf + MPA_FPDU_HDR_LEN + hl, rr);
		len += RDMAP_READ_REQ_LEN;
	}
	memset(buf + MPA_FPDU_HDR_LEN + len - payload_len, 0x5a, payload_len);
	return mpa_fpdu_finish(buf, len, crc);
}

static void test_build(void **state)
{
	uint8_t want[64], buf[64];
	struct iwarp_term_cause cause;
	struct ddp_hdr h;
	size_t n;

	(void)state;
	/* Write RTR: the known answer, zero-length Write to STag 1. */
	n = tu_hex2bin(kat_rtr_write, want, sizeof(want));
	memset(buf, 0xee, sizeof(buf));
	assert_int_equal(rtr_build(MPA_RTR_WRITE, true, buf, sizeof(buf)),
			 (int)n);
	assert_memory_equal(buf, want, n);
	assert_int_equal(n, RTR_FPDU_MIN);

	/* Read RTR: 52 bytes, the longest RTR, a valid Read Request. */
	assert_int_equal(rtr_build(MPA_RTR_READ, true, buf, sizeof(buf)),
			 RTR_FPDU_MAX);
	assert_int_equal(mpa_fpdu_check_crc(buf, RTR_FPDU_MAX), 0);
	assert_int_equal(ddp_hdr_decode(buf + 2, 46, &h), DDP_UNTAGGED_HDR_LEN);
	assert_int_equal(h.opcode, RDMAP_READ_REQ);
	assert_int_equal(h.qn, DDP_QN_READ_REQ);
	assert_int_equal(h.msn, 1);
	assert_int_equal(ddp_hdr_check(&h, &cause), 0);

	/* Send RTR: 24 bytes, QN 0, MSN 1. */
	assert_int_equal(rtr_build(MPA_RTR_SEND, false, buf, sizeof(buf)), 24);
	assert_int_equal(crc32c_get_trailer(buf + 20), 0);

	/* Exactly one type, and room for it. */
	assert_int_equal(rtr_build(MPA_RTR_NONE, true, buf, sizeof(buf)),
			 -EINVAL);
	assert_int_equal(rtr_build(MPA_RTR_ALL, true, buf, sizeof(buf)),
			 -EINVAL);
	assert_int_equal(rtr_build(MPA_RTR_WRITE, true, buf, 19), -ENOBUFS);
	assert_int_equal(rtr_build(MPA_RTR_READ, true, buf, 51), -ENOBUFS);
	assert_int_equal(rtr_build(MPA_RTR_SEND, true, buf, 23), -ENOBUFS);

	/* The data path's name builds the same bytes. */
	memset(want, 0, sizeof(want));
	assert_int_equal(ddp_rtr_build(MPA_RTR_READ, true, want, sizeof(want)),
			 RTR_FPDU_MAX);
	assert_int_equal(rtr_build(MPA_RTR_READ, true, buf, sizeof(buf)),
			 RTR_FPDU_MAX);
	assert_memory_equal(buf, want, RTR_FPDU_MAX);
}

/* Every RTR we build parses as itself, with and without CRC. */
static void test_parse_roundtrip(void **state)
{
	uint8_t buf[RTR_FPDU_MAX + 8];
	struct rtr_in in;

	(void)state;
	for (size_t i = 0; i < sizeof(all_types) / sizeof(all_types[0]); i++) {
		for (int crc = 0; crc < 2; crc++) {
			int n = rtr_build(all_types[i], crc, buf, sizeof(buf));

			assert_true(n > 0);
			/* Bytes behind it are not looked at. */
			memset(buf + n, 0xa5, sizeof(buf) - (size_t)n);
			assert_int_equal(rtr_parse(buf, sizeof(buf), crc, &in),
					 n);
			assert_int_equal(in.type, all_types[i]);
			assert_int_equal(rtr_parse(buf, (size_t)n, crc, &in),
					 n);
			assert_int_equal(in.type, all_types[i]);
			if (all_types[i] == MPA_RTR_READ) {
				assert_int_equal(in.read_req.size, 0);
				assert_int_equal(in.read_req.src_stag,
						 DDP_RTR_STAG);
			}
			/* Without CRC checking, a CRC'd RTR still parses. */
			assert_int_equal(rtr_parse(buf, (size_t)n, false, &in),
					 n);
		}
	}
}

/*
 * Every prefix asks for more, and rtr_want() never asks past the RTR:
 * the minimum until the length is in, then the whole FPDU.
 */
static void test_parse_prefixes(void **state)
{
	uint8_t buf[RTR_FPDU_MAX];
	struct rtr_in in;

	(void)state;
	for (size_t i = 0; i < sizeof(all_types) / sizeof(all_types[0]); i++) {
		int n = rtr_build(all_types[i], true, buf, sizeof(buf));

		for (size_t len = 0; len < (size_t)n; len++) {
			size_t want = rtr_want(buf, len);

			assert_int_equal(rtr_parse(buf, len, true, &in),
					 -EAGAIN);
			assert_int_equal(in.type, MPA_RTR_NONE);
			assert_true(want > len);
			assert_true(want <= (size_t)n);
			assert_int_equal(want, len < MPA_FPDU_HDR_LEN
						       ? RTR_FPDU_MIN
						       : (size_t)n);
		}
	}
}

/*
 * The connector's reading pattern on a stream of RTR and first FPDU: one
 * read of up to rtr_want() until the length is in, then whole reads to
 * it. It stops exactly at the end of the RTR, whatever the read sizes.
 */
static void test_read_pattern(void **state)
{
	uint8_t stream[RTR_FPDU_MAX + 64], rx[RTR_FPDU_MAX + 1];
	const struct ddp_hdr send = {
		.last = true, .opcode = RDMAP_SEND, .qn = DDP_QN_SEND, .msn = 1
	};
	uint32_t seed = 0x1badcafe;
	struct rtr_in in;

	(void)state;
	for (size_t i = 0; i < sizeof(all_types) / sizeof(all_types[0]); i++) {
		int rtr = rtr_build(all_types[i], true, stream, sizeof(stream));
		int next =
			build_fpdu(stream + rtr, sizeof(stream) - (size_t)rtr,
				   &send, NULL, 11, true);

		assert_true(next > 0);
		for (int round = 0; round < 200; round++) {
			size_t len = 0, off = 0;
			int n;

			while ((n = rtr_parse(rx, len, true, &in)) == -EAGAIN) {
				size_t want = rtr_want(rx, len);
				/* A short read: 1 .. want - len bytes. */
				size_t got =
					1 + tu_xorshift(&seed) % (want - len);

				assert_true(want <= sizeof(rx));
				memcpy(rx + len, stream + off, got);
				len += got;
				off += got;
			}
			assert_int_equal(n, rtr);
			assert_int_equal(off, (size_t)rtr);
			assert_int_equal(in.type, all_types[i]);
		}
	}
}

static void test_parse_not_rtr(void **state)
{
	uint8_t buf[128];
	struct ddp_hdr h = { .last = true };
	const struct rdmap_read_req rr = { .sink_stag = 7, .src_stag = 1 };
	struct rtr_in in;
	int n;

	(void)state;
	/* A bad CRC, checked only when negotiated. */
	n = rtr_build(MPA_RTR_WRITE, true, buf, sizeof(buf));
	buf[n - 1] ^= 1;
	assert_int_equal(rtr_parse(buf, (size_t)n, true, &in), -EBADMSG);
	assert_int_equal(rtr_parse(buf, (size_t)n, false, &in), n);

	/* Longer than any RTR: refused before its bytes are in. */
	buf[0] = 0;
	buf[1] = 47;
	assert_int_equal(rtr_parse(buf, 2, true, &in), -EMSGSIZE);
	buf[0] = 0xff;
	assert_int_equal(rtr_parse(buf, 2, false, &in), -EMSGSIZE);

	/* A Write with payload. */
	h.tagged = true;
	h.opcode = RDMAP_WRITE;
	h.stag = DDP_RTR_STAG;
	n = build_fpdu(buf, sizeof(buf), &h, NULL, 4, true);
	assert_int_equal(rtr_parse(buf, (size_t)n, true, &in), -EPROTO);
	assert_int_equal(in.type, MPA_RTR_NONE);
	assert_int_equal(in.hdr.opcode, RDMAP_WRITE);

	/* A zero-length Read Response. */
	h.opcode = RDMAP_READ_RESP;
	n = build_fpdu(buf, sizeof(buf), &h, NULL, 0, true);
	assert_int_equal(rtr_parse(buf, (size_t)n, true, &in), -EPROTO);
	assert_int_equal(in.hdr.opcode, RDMAP_READ_RESP);

	/* A Send with payload, and a Terminate. */
	h.tagged = false;
	h.opcode = RDMAP_SEND;
	h.msn = 1;
	n = build_fpdu(buf, sizeof(buf), &h, NULL, 8, true);
	assert_int_equal(rtr_parse(buf, (size_t)n, true, &in), -EPROTO);
	h.opcode = RDMAP_TERMINATE;
	h.qn = DDP_QN_TERMINATE;
	n = build_fpdu(buf, sizeof(buf), &h, NULL, 4, true);
	assert_int_equal(rtr_parse(buf, (size_t)n, true, &in), -EPROTO);
	assert_int_equal(in.hdr.opcode, RDMAP_TERMINATE);

	/* A Read Request is an RTR only with its whole body. */
	h.opcode = RDMAP_READ_REQ;
	h.qn = DDP_QN_READ_REQ;
	n = build_fpdu(buf, sizeof(buf), &h, &rr, 0, true);
	assert_int_equal(rtr_parse(buf, (size_t)n, true, &in), n);
	assert_int_equal(in.type, MPA_RTR_READ);
	assert_int_equal(in.read_req.sink_stag, 7);
	n = build_fpdu(buf, sizeof(buf), &h, NULL, 0, true);
	assert_int_equal(rtr_parse(buf, (size_t)n, true, &in), -EPROTO);

	/* Shorter than its header: the T bit asks for more than there is. */
	buf[0] = 0;
	buf[1] = DDP_TAGGED_HDR_LEN;
	buf[2] = 0; /* T=0: an untagged header needs 18 bytes */
	assert_int_equal(rtr_parse(buf, RTR_FPDU_MIN, false, &in), -EPROTO);
	assert_int_equal(in.type, MPA_RTR_NONE);
	buf[1] = 0;
	assert_int_equal(rtr_parse(buf, sizeof(buf), false, &in), -EPROTO);
}

/* A Read RTR requires a zero-length Read Response to its sink. */
static void test_answer(void **state)
{
	const struct rdmap_read_req rr = {
		.sink_stag = 0x1234,
		.sink_to = 0x1000,
		.src_stag = DDP_RTR_STAG,
	};
	const struct ddp_hdr rreq = { .last = true,
				      .opcode = RDMAP_READ_REQ,
				      .qn = DDP_QN_READ_REQ,
				      .msn = 1 };
	uint8_t buf[64], out[64];
	struct iwarp_term_cause cause;
	struct rtr_in in;
	struct ddp_hdr h;
	int n;

	(void)state;
	n = build_fpdu(buf, sizeof(buf), &rreq, &rr, 0, true);
	assert_int_equal(rtr_parse(buf, (size_t)n, true, &in), n);
	assert_int_equal(in.type, MPA_RTR_READ);
	for (int crc = 0; crc < 2; crc++) {
		memset(out, 0xee, sizeof(out));
		n = rtr_answer_build(&in, crc, out, sizeof(out));
		assert_int_equal(n, mpa_fpdu_len(DDP_TAGGED_HDR_LEN));
		if (crc)
			assert_int_equal(mpa_fpdu_check_crc(out, (size_t)n), 0);
		else
			assert_int_equal(crc32c_get_trailer(out + 16), 0);
		assert_int_equal(
			ddp_hdr_decode(out + 2, DDP_TAGGED_HDR_LEN, &h),
			DDP_TAGGED_HDR_LEN);
		assert_true(h.tagged);
		assert_true(h.last);
		assert_int_equal(h.opcode, RDMAP_READ_RESP);
		assert_int_equal(h.stag, 0x1234);
		assert_int_equal(h.to, 0x1000);
		assert_int_equal(ddp_hdr_check(&h, &cause), 0);
	}
	assert_int_equal(rtr_answer_build(&in, true, out, 19), -ENOBUFS);

	/* Write and Send RTRs need no answer. */
	n = rtr_build(MPA_RTR_WRITE, true, buf, sizeof(buf));
	assert_int_equal(rtr_parse(buf, (size_t)n, true, &in), n);
	assert_int_equal(rtr_answer_build(&in, true, out, sizeof(out)), 0);
	n = rtr_build(MPA_RTR_SEND, true, buf, sizeof(buf));
	assert_int_equal(rtr_parse(buf, (size_t)n, true, &in), n);
	assert_int_equal(rtr_answer_build(&in, true, out, sizeof(out)), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_build),
		cmocka_unit_test(test_parse_roundtrip),
		cmocka_unit_test(test_parse_prefixes),
		cmocka_unit_test(test_read_pattern),
		cmocka_unit_test(test_parse_not_rtr),
		cmocka_unit_test(test_answer),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
