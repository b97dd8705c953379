/* SPDX-License-Identifier: MIT */
/*
 * Read Responses in small FPDUs: a peer on a 1500-byte MTU answers a
 * 64 KiB Read with some 46 FPDUs, and whatever sizes it picks (smaller,
 * larger or odd mid-response), the Read gets exactly the bytes sent,
 * nothing outside the sink changes, and damage (a bad CRC mid-response, a
 * response that ends short with more bytes behind it) ends the connection
 * with the Terminate the copy path sends. Against a raw server
 * (rawpeer_dp.h), CRC on.
 *
 * In each case the first FPDU of a response goes alone, and the rest
 * follows in one send once it was read: the receiver then finds many
 * FPDUs waiting in the socket.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "rawpeer_dp.h"
#include "testutil.h"

#define FPDU_PAYLOAD 1428 /* a 1448-byte MSS: 1442-byte ULPDU */
#define PAUSE_MS     30 /* for A to read the first FPDU */
#define STREAM_MAX   (1 << 20)

/* What the raw server sends: FPDUs appended to a buffer. */
struct stream {
	uint8_t *b;
	size_t len;
};

static void stream_open(struct stream *s)
{
	s->b = malloc(STREAM_MAX);
	assert_non_null(s->b);
	s->len = 0;
}

/* A Read Response FPDU (tagged, opcode 2) with len bytes of src, to sink
 * STag stag at to; L if last. */
static void rr_fpdu(struct stream *s, UINT32 stag, uint64_t to,
		    const uint8_t *src, size_t len, bool last, bool good_crc)
{
	static uint8_t u[14 + 8192];

	assert_true(len <= sizeof(u) - 14);
	assert_true(s->len + len + 64 <= STREAM_MAX);
	u[0] = last ? 0xc1 : 0x81; /* tagged, L, DDP version 1 */
	u[1] = 0x42; /* RDMAP version 1, Read Response */
	put_be32(u + 2, stag);
	put_be64(u + 6, to);
	memcpy(u + 14, src, len);
	s->len += fpdu_build(s->b + s->len, u, 14 + len, good_crc);
}

/*
 * A response of len bytes of src to sink stag:to in FPDUs of the sizes in
 * cut[] (the last one repeated), appended to s; the FPDU whose index is
 * bad gets a wrong CRC, and the one at index short_l the L bit (so the
 * response ends there, short). Returns the number of FPDUs.
 */
static int rr_cut(struct stream *s, UINT32 stag, uint64_t to,
		  const uint8_t *src, size_t len, const size_t *cut, int ncut,
		  int bad, int short_l)
{
	size_t off = 0;
	int i;

	for (i = 0; off < len; i++) {
		size_t n = cut[i < ncut ? i : ncut - 1];

		if (n > len - off)
			n = len - off;
		rr_fpdu(s, stag, to + off, src + off, n,
			off + n == len || i == short_l, i != bad);
		off += n;
		if (i == short_l)
			break;
	}
	return i;
}

/* The first FPDU of the stream alone, a pause, then the rest at once. */
static void send_split(int fd, const struct stream *s)
{
	size_t first = 2 + get_be16(s->b);

	first = (first + 3) / 4 * 4 + 4; /* pad and CRC */
	raw_send(fd, s->b, first);
	usleep(PAUSE_MS * 1000);
	raw_send(fd, s->b + first, s->len - first);
}

/* A sink of two SGEs (a 64 KiB Read's bytes, split unevenly), each with
 * GUARD bytes of 0x5a on both sides. */
struct sink {
	uint8_t *p[2];
	size_t len[2];
	NDK_SGE sge[2];
};

static void sink_init(struct sink *k, size_t len)
{
	k->len[0] = len / 3;
	k->len[1] = len - k->len[0];
	k->p[0] = A.buf + (1 << 20);
	k->p[1] = A.buf + (3 << 20);
	memset(k->p[0] - GUARD, 0x5a, k->len[0] + 2 * GUARD);
	memset(k->p[1] - GUARD, 0x5a, k->len[1] + 2 * GUARD);
	k->sge[0] = sge(k->p[0], k->len[0], A.ltok);
	k->sge[1] = sge(k->p[1], k->len[1], A.ltok);
}

/* Nothing written outside the sink; with src, the sink holds it. */
static void sink_check(const struct sink *k, const uint8_t *src)
{
	int i;

	for (i = 0; i < 2; i++) {
		assert_all(k->p[i] - GUARD, GUARD, 0x5a, "before an SGE");
		assert_all(k->p[i] + k->len[i], GUARD, 0x5a, "after an SGE");
	}
	if (src) {
		assert_memory_equal(k->p[0], src, k->len[0]);
		assert_memory_equal(k->p[1], src + k->len[0], k->len[1]);
	}
}

/* A reads len bytes (context ctx) into k; the raw server reads the
 * request (MSN msn). */
static void post_read(struct dp_raw_server *r, struct sink *k, size_t len,
		      uintptr_t ctx, uint32_t msn)
{
	sink_init(k, len);
	assert_int_equal(A.qp->Dispatch->NdkRead(A.qp, (PVOID)ctx, k->sge, 2,
						 0x10000 + msn, 0x77, 0),
			 STATUS_SUCCESS);
	dp_raw_expect_read_request(r->fd, msn, A.ltok, k->p[0], (uint32_t)len);
}

static const size_t mss_cut[] = { FPDU_PAYLOAD };

/*
 * Two Reads, 64 KiB and 100000 bytes, answered in 1428-byte FPDUs, the
 * second response right behind the first: both complete, in order, with
 * exactly the bytes sent.
 */
static void test_small_fpdus(void **state)
{
	enum { LEN1 = 65536, LEN2 = 100000 };
	struct dp_raw_server r;
	struct sink k1, k2;
	struct stream s;
	uint8_t *src = malloc(LEN1 + LEN2);

	(void)state;
	assert_non_null(src);
	fill(src, LEN1 + LEN2, 7);
	dp_raw_server_connect(&r, 0);
	post_read(&r, &k1, LEN1, 1, 1);
	stream_open(&s);
	rr_cut(&s, A.ltok, (uint64_t)(uintptr_t)k1.p[0], src, LEN1, mss_cut, 1,
	       -1, -1);
	send_split(r.fd, &s);
	EXPECT_RESULTS(cli.cq, { 1, NdkOperationTypeRead, STATUS_SUCCESS });
	sink_check(&k1, src);

	/* Now both behind one first FPDU: the tail of the first response's
	 * last read holds the second's first header. */
	post_read(&r, &k1, LEN1, 2, 2);
	{
		struct sink *k = &k2;

		k->len[0] = LEN2 / 3;
		k->len[1] = LEN2 - k->len[0];
		k->p[0] = A.buf + (5 << 20);
		k->p[1] = A.buf + (7 << 20) - LEN2;
		memset(k->p[0] - GUARD, 0x5a, k->len[0] + 2 * GUARD);
		memset(k->p[1] - GUARD, 0x5a, k->len[1] + 2 * GUARD);
		k->sge[0] = sge(k->p[0], k->len[0], A.ltok);
		k->sge[1] = sge(k->p[1], k->len[1], A.ltok);
		assert_int_equal(A.qp->Dispatch->NdkRead(A.qp, (PVOID)3, k->sge,
							 2, 0x20000, 0x77, 0),
				 STATUS_SUCCESS);
		dp_raw_expect_read_request(r.fd, 3, A.ltok, k->p[0], LEN2);
	}
	s.len = 0;
	rr_cut(&s, A.ltok, (uint64_t)(uintptr_t)k1.p[0], src, LEN1, mss_cut, 1,
	       -1, -1);
	rr_cut(&s, A.ltok, (uint64_t)(uintptr_t)k2.p[0], src + LEN1, LEN2,
	       mss_cut, 1, -1, -1);
	send_split(r.fd, &s);
	EXPECT_RESULTS(cli.cq, { 2, NdkOperationTypeRead, STATUS_SUCCESS },
		       { 3, NdkOperationTypeRead, STATUS_SUCCESS });
	sink_check(&k1, src);
	sink_check(&k2, src + LEN1);
	assert_cq_quiet(cli.cq);
	free(s.b);
	free(src);
	dp_raw_server_close(&r);
}

/*
 * The peer changes its FPDU size in the middle of a response, smaller,
 * larger, odd sizes, one under 4 KiB: every byte still
 * lands where its header says, and the Read completes.
 */
static void test_size_changes(void **state)
{
	static const size_t cuts[][8] = {
		{ 1428, 1428, 1428, 700, 700, 2000, 1428 },
		{ 1428, 1000, 1000, 1000, 1000, 1000, 1000 },
		{ 1428, 1428, 1429, 1427, 3, 5000, 1428 },
		{ 1428, 1428, 300, 1428 },
		{ 1024, 1024, 1024, 4096, 8192, 1024 },
	};
	enum { LEN = 65536 };
	struct dp_raw_server r;
	struct sink k;
	struct stream s;
	uint8_t *src = malloc(LEN);
	size_t c;

	(void)state;
	assert_non_null(src);
	dp_raw_server_connect(&r, 0);
	stream_open(&s);
	for (c = 0; c < sizeof(cuts) / sizeof(cuts[0]); c++) {
		int n = 0;

		while (n < 8 && cuts[c][n])
			n++;
		print_message("case %zu\n", c);
		fill(src, LEN, (unsigned int)c + 11);
		post_read(&r, &k, LEN, c + 1, (uint32_t)c + 1);
		s.len = 0;
		rr_cut(&s, A.ltok, (uint64_t)(uintptr_t)k.p[0], src, LEN,
		       cuts[c], n, -1, -1);
		send_split(r.fd, &s);
		EXPECT_RESULTS(cli.cq,
			       { c + 1, NdkOperationTypeRead, STATUS_SUCCESS });
		sink_check(&k, src);
	}
	assert_cq_quiet(cli.cq);
	free(s.b);
	free(src);
	dp_raw_server_close(&r);
}

/* Our Terminate's cause, then the end of the stream. */
static void expect_terminate(int fd, unsigned int layer, unsigned int etype,
			     unsigned int ecode)
{
	uint8_t t[256];
	size_t tlen;

	tlen = raw_read_fpdu(fd, t, sizeof(t), WAIT_MS);
	dp_raw_assert_term_cause(t, tlen, layer, etype, ecode);
	assert_int_equal(raw_wait_event(fd, WAIT_MS), RAW_EOF);
}

/* The Read does not complete as read; the flush completes it once. */
static void expect_read_failed(uintptr_t ctx)
{
	NDK_RESULT_EX res;

	if (!tu_wait_until(disc_seen, &A, WAIT_MS))
		fail_msg("no disconnect event");
	A.qp->Dispatch->NdkFlush(A.qp);
	assert_int_equal(poll_cq(cli.cq, &res, 1), 1);
	assert_ptr_equal(res.RequestContext, (PVOID)ctx);
	assert_int_equal(res.Type, NdkOperationTypeRead);
	if (res.Status == STATUS_SUCCESS)
		fail_msg("a damaged response completed the Read");
	assert_cq_quiet(cli.cq);
}

/*
 * One FPDU in the middle of a response has a wrong CRC: the CRC Terminate
 * (LLP, MPA, 0x02), the Read does not complete as read, and nothing
 * outside its sink changed.
 */
static void test_bad_crc_mid_response(void **state)
{
	enum { LEN = 65536 };
	struct dp_raw_server r;
	struct sink k;
	struct stream s;
	uint8_t *src = malloc(LEN);

	(void)state;
	assert_non_null(src);
	fill(src, LEN, 5);
	dp_raw_server_connect(&r, 0);
	post_read(&r, &k, LEN, 1, 1);
	stream_open(&s);
	rr_cut(&s, A.ltok, (uint64_t)(uintptr_t)k.p[0], src, LEN, mss_cut, 1, 9,
	       -1);
	send_split(r.fd, &s);
	expect_terminate(r.fd, 2, 0, 0x02);
	expect_read_failed(1);
	sink_check(&k, NULL);
	free(s.b);
	free(src);
	dp_raw_server_close(&r);
}

/*
 * The response ends (L) after 20 FPDUs, short of the Read's size, and
 * more bytes follow it at once: the short-response Terminate
 * (RDMAP, remote operation, catastrophic to the stream), the Read does not
 * complete as read, nothing outside its sink changed.
 */
static void test_short_end_mid_response(void **state)
{
	enum { LEN = 65536 };
	struct dp_raw_server r;
	struct sink k;
	struct stream s;
	uint8_t *src = malloc(LEN);

	(void)state;
	assert_non_null(src);
	fill(src, LEN, 9);
	dp_raw_server_connect(&r, 0);
	post_read(&r, &k, LEN, 1, 1);
	stream_open(&s);
	rr_cut(&s, A.ltok, (uint64_t)(uintptr_t)k.p[0], src, LEN, mss_cut, 1,
	       -1, 20);
	/* Bytes that look like the rest of the response. */
	rr_cut(&s, A.ltok, (uint64_t)(uintptr_t)k.p[0] + 21 * FPDU_PAYLOAD, src,
	       10 * FPDU_PAYLOAD, mss_cut, 1, -1, -1);
	send_split(r.fd, &s);
	expect_terminate(r.fd, 0, 2, 0x07);
	expect_read_failed(1);
	sink_check(&k, NULL);
	free(s.b);
	free(src);
	dp_raw_server_close(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_small_fpdus,
						dp_setup_hosts, dp_teardown),
		cmocka_unit_test_setup_teardown(test_size_changes,
						dp_setup_hosts, dp_teardown),
		cmocka_unit_test_setup_teardown(test_bad_crc_mid_response,
						dp_setup_hosts, dp_teardown),
		cmocka_unit_test_setup_teardown(test_short_end_mid_response,
						dp_setup_hosts, dp_teardown),
	};

	cm_software_only();
	dp_set_env();
	return cmocka_run_group_tests_name("dp_small_fpdus", tests, NULL, NULL);
}
