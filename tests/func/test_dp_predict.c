/* SPDX-License-Identifier: MIT */
/*
 * Header prediction of small Sends (src/sw/dp_rx.c, rx_predict_send;
 * src/sw/dp_tx.c, tx_predict_send) changes how a whole Send FPDU is
 * received and sent, never what the consumer or the peer sees. Sent,
 * predicted Sends and the others carry the same headers, MSNs and bytes
 * and complete in order. Received, FPDUs it takes and FPDUs it leaves to
 * the parser, side by side in one read, complete in MSN order with their
 * bytes; one that starts in an earlier read is not taken halfway, nor is
 * a Write's payload that looks like a Send FPDU; a Send longer than its
 * receive completes that receive once, with STATUS_BUFFER_OVERFLOW, and
 * the Terminate; a Send with no receive posted gets its Terminate and
 * completes nothing. Small Writes, predicted (dp_rx.c, rx_predict_write)
 * or not, are placed in order before the Send behind them. Small Reads
 * are predicted at both ends: requests answered, responses placed, Reads
 * completed as on the general path. Against raw peers (rawpeer_dp.h),
 * CRC on.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>
#include <unistd.h>
#include "rawpeer_dp.h"
#include "testutil.h"

#define SLOT 256 /* each receive's place in P.buf */

/* A Send FPDU (QN 0, MO 0, the L bit) of len bytes of v into b: RDMAP
 * control rdmap (0x43 Send, 0x45 Send with SE), DDP control ddp. */
static size_t send_fpdu(uint8_t *b, uint8_t ddp, uint8_t rdmap, uint32_t msn,
			size_t len, uint8_t v)
{
	uint8_t u[18 + 128];

	assert_true(len <= 128);
	ddp_untagged_hdr(u, ddp, rdmap, 0, msn, 0);
	memset(u + 18, v, len);
	return fpdu_build(b, u, 18 + len, true);
}

/* The next result on srv.cq is receive ctx, with len bytes of v in its
 * slot and nothing written behind them. */
static void expect_recv(uintptr_t ctx, size_t len, uint8_t v)
{
	NDK_RESULT_EX res;
	uint8_t *slot = P.buf + ctx * SLOT;

	assert_int_equal(poll_cq(srv.cq, &res, 1), 1);
	expect_result(&res, ctx, NdkOperationTypeReceive, STATUS_SUCCESS);
	assert_int_equal(res.BytesTransferred, len);
	assert_all(slot, len, v, "the Send's bytes");
	assert_all(slot + len, SLOT - len, 0xee, "behind the Send");
}

/* P's QP with n receives of 128 bytes posted (ctx 1..n), accepted from a
 * raw client; returns the client's socket. */
static int accept_with_receives(int n)
{
	int i;

	memset(P.buf, 0xee, (size_t)(n + 1) * SLOT);
	P.qp = big_qp(&srv);
	for (i = 1; i <= n; i++)
		post_recv(P.qp, (uintptr_t)i, P.buf + i * SLOT, 128, P.ltok);
	return dp_raw_client_accepted(4, 0);
}

/*
 * Five Sends in one write: two that prediction takes (one empty), a Send
 * with SE, one it leaves to the parser (a reserved DDP bit set and an
 * Invalidate STag field, both ignored for a Send), and one it takes
 * again behind that: five receives in order, each with its bytes.
 */
static void test_sends_in_one_write(void **state)
{
	uint8_t b[1024];
	size_t n = 0, at;
	int fd;

	(void)state;
	fd = accept_with_receives(5);
	n += send_fpdu(b + n, 0x41, 0x43, 1, 8, 0x11);
	n += send_fpdu(b + n, 0x41, 0x43, 2, 0, 0);
	n += send_fpdu(b + n, 0x41, 0x45, 3, 13, 0x33);
	at = n;
	n += send_fpdu(b + n, 0x45, 0x43, 4, 40, 0x44);
	/* The Invalidate STag field (after the two control bytes); the CRC
	 * is made again over it. */
	{
		uint8_t u[18 + 40];

		ddp_untagged_hdr(u, 0x45, 0x43, 0, 4, 0);
		put_be32(u + 2, 0x12345678);
		memset(u + 18, 0x44, 40);
		assert_int_equal(fpdu_build(b + at, u, sizeof(u), true),
				 n - at);
	}
	n += send_fpdu(b + n, 0x41, 0x43, 5, 100, 0x55);
	raw_send(fd, b, n);

	expect_recv(1, 8, 0x11);
	expect_recv(2, 0, 0);
	expect_recv(3, 13, 0x33);
	expect_recv(4, 40, 0x44);
	expect_recv(5, 100, 0x55);
	assert_cq_quiet(srv.cq);
	close(fd);
}

/*
 * A Send whose first bytes came in an earlier read, and a whole one
 * behind its rest: the second is not mistaken for the start of the
 * stream's next FPDU before the first ends, and both complete in order.
 */
static void test_send_after_partial_fpdu(void **state)
{
	uint8_t b[512];
	size_t n1, n;
	int fd;

	(void)state;
	fd = accept_with_receives(2);
	n1 = send_fpdu(b, 0x41, 0x43, 1, 60, 0x61);
	n = n1 + send_fpdu(b + n1, 0x41, 0x43, 2, 8, 0x62);
	raw_send(fd, b, 10);
	usleep(QUIET_MS * 1000);
	assert_cq_quiet(srv.cq);
	raw_send(fd, b + 10, n - 10);
	expect_recv(1, 60, 0x61);
	expect_recv(2, 8, 0x62);
	assert_cq_quiet(srv.cq);
	close(fd);
}

/*
 * A Write whose payload holds what looks like a whole Send FPDU for the
 * next MSN, its header in one read and its payload in the next: the
 * payload is the Write's, placed in its range, and no receive completes
 * until the real Send behind it, whose bytes it gets.
 */
static void test_write_payload_like_a_send(void **state)
{
	uint8_t u[14 + 64], fake[64], b[512];
	uint8_t *range = P.buf + 8 * SLOT;
	NDK_MR *mr;
	UINT32 tok;
	size_t n, k;
	int fd;

	(void)state;
	fd = accept_with_receives(1);
	mr = reg_range(srv.pd, range, 4096, NDK_MR_FLAG_ALLOW_REMOTE_WRITE);
	tok = mr->Dispatch->NdkGetRemoteTokenFromMr(mr);
	memset(fake, 0x5f, sizeof(fake));
	k = send_fpdu(fake, 0x41, 0x43, 1, 8, 0x99);
	assert_true(k <= sizeof(fake));
	ddp_tagged_hdr(u, 0xc1, 0x40, tok, (uint64_t)(uintptr_t)range);
	memcpy(u + 14, fake, sizeof(fake));
	n = fpdu_build(b, u, sizeof(u), true);
	n += send_fpdu(b + n, 0x41, 0x43, 1, 8, 0x12);
	raw_send(fd, b, 2 + 14);
	usleep(QUIET_MS * 1000);
	raw_send(fd, b + 2 + 14, n - 2 - 14);
	expect_recv(1, 8, 0x12);
	assert_memory_equal(range, fake, sizeof(fake));
	assert_cq_quiet(srv.cq);
	close(fd);
}

/* The FPDUs from P up to a Terminate with this DDP untagged code. */
static void expect_untagged_terminate(int fd, unsigned int ecode)
{
	uint8_t t[256];
	size_t tlen;

	tlen = raw_read_fpdu(fd, t, sizeof(t), WAIT_MS);
	dp_raw_assert_term_cause(t, tlen, 1, 2, ecode);
	if (!tu_wait_until(disc_seen, &P, WAIT_MS))
		fail_msg("no disconnect event");
}

/*
 * A whole small Send longer than the receive at the head of the RQ: that
 * receive completes once, with STATUS_BUFFER_OVERFLOW and nothing written
 * past it, the Terminate says "too long" (DDP untagged, 5), and the flush
 * completes the receive behind it only.
 */
static void test_send_longer_than_receive(void **state)
{
	NDK_RESULT_EX res;
	uint8_t b[256];
	int fd;

	(void)state;
	memset(P.buf, 0xee, 3 * SLOT);
	P.qp = big_qp(&srv);
	post_recv(P.qp, 1, P.buf + SLOT, 16, P.ltok);
	post_recv(P.qp, 2, P.buf + 2 * SLOT, 128, P.ltok);
	fd = dp_raw_client_accepted(4, 0);
	raw_send(fd, b, send_fpdu(b, 0x41, 0x43, 1, 64, 0x71));
	assert_int_equal(poll_cq(srv.cq, &res, 1), 1);
	expect_result(&res, 1, NdkOperationTypeReceive, STATUS_BUFFER_OVERFLOW);
	assert_all(P.buf + SLOT + 16, SLOT - 16, 0xee, "past the receive");
	expect_untagged_terminate(fd, 0x05);
	P.qp->Dispatch->NdkFlush(P.qp);
	assert_int_equal(poll_cq(srv.cq, &res, 1), 1);
	expect_result(&res, 2, NdkOperationTypeReceive, STATUS_CANCELLED);
	assert_cq_quiet(srv.cq);
	close(fd);
}

/* A whole small Send with no receive posted: the Terminate "no buffer"
 * (DDP untagged, 2), and nothing completes. */
static void test_send_without_receive(void **state)
{
	uint8_t b[256];
	int fd;

	(void)state;
	P.qp = big_qp(&srv);
	fd = dp_raw_client_accepted(4, 0);
	raw_send(fd, b, send_fpdu(b, 0x41, 0x43, 1, 8, 0x81));
	expect_untagged_terminate(fd, 0x02);
	P.qp->Dispatch->NdkFlush(P.qp);
	assert_cq_quiet(srv.cq);
	close(fd);
}

/* A whole Write FPDU of len bytes of v at to of stag into b. */
static size_t write_fpdu(uint8_t *b, UINT32 stag, uint64_t to, size_t len,
			 uint8_t v)
{
	uint8_t u[14 + 256];

	assert_true(len <= 256);
	ddp_tagged_hdr(u, 0xc1, 0x40, stag, to);
	memset(u + 14, v, len);
	return fpdu_build(b, u, 14 + len, true);
}

/*
 * Writes in one read, predicted (small, whole) and not (empty, or with a
 * reserved bit set), then a Send: the
 * Send's receive completes only after every Write before it was placed,
 * each where it was aimed; then a Write through a token that names
 * nothing gets the Terminate a Write always did (DDP tagged, invalid
 * STag).
 */
static void test_writes_in_one_write(void **state)
{
	uint8_t *range = P.buf + 16 * SLOT, b[16384], t[256];
	uint64_t to = (uint64_t)(uintptr_t)range;
	size_t n = 0, tlen;
	NDK_MR *mr;
	UINT32 tok;
	int fd;

	(void)state;
	fd = accept_with_receives(1);
	memset(range, 0xee, 8192);
	mr = reg_range(srv.pd, range, 8192, NDK_MR_FLAG_ALLOW_REMOTE_WRITE);
	tok = mr->Dispatch->NdkGetRemoteTokenFromMr(mr);
	n += write_fpdu(b + n, tok, to, 8, 0x21);
	n += write_fpdu(b + n, tok, to + 8, 0, 0);
	n += write_fpdu(b + n, tok, to + 8, 100, 0x22);
	{
		uint8_t u[14 + 20];

		ddp_tagged_hdr(u, 0xc5, 0x40, tok, to + 108);
		memset(u + 14, 0x23, 20);
		n += fpdu_build(b + n, u, sizeof(u), true);
	}
	n += send_fpdu(b + n, 0x41, 0x43, 1, 8, 0x24);
	raw_send(fd, b, n);
	expect_recv(1, 8, 0x24);
	assert_all(range, 8, 0x21, "the first Write");
	assert_all(range + 8, 100, 0x22, "the third Write");
	assert_all(range + 108, 20, 0x23, "the fourth Write");
	assert_all(range + 128, 8192 - 128, 0xee, "past the Writes");

	raw_send(fd, b, write_fpdu(b, tok + 0x100, to, 8, 0x25));
	tlen = raw_read_fpdu(fd, t, sizeof(t), WAIT_MS);
	dp_raw_assert_term_cause(t, tlen, 1, 1, 0x00);
	assert_all(range, 8, 0x21, "after the refused Write");
	close(fd);
}

/* The next FPDU from A is a whole Write of the len bytes at data to to
 * of stag. */
static void expect_write_fpdu(int fd, UINT32 stag, const uint8_t *data,
			      size_t len, uint64_t to)
{
	uint8_t u[14 + 256];

	assert_int_equal(raw_read_fpdu(fd, u, sizeof(u), WAIT_MS), 14 + len);
	assert_int_equal(u[0], 0xc1); /* tagged, last, DDP version 1 */
	assert_int_equal(u[1], 0x40); /* RDMAP version 1, Write */
	assert_int_equal(get_be32(u + 2), stag);
	assert_true(get_be64(u + 6) == to);
	assert_memory_equal(u + 14, data, len);
}

/* A Read Request (QN 1) for msn: size bytes of src_stag at src_to, into
 * the sink sink_stag at sink_to; its FPDU into b. */
static size_t read_request_fpdu(uint8_t *b, uint32_t msn, UINT32 sink_stag,
				uint64_t sink_to, uint32_t size,
				UINT32 src_stag, const void *src)
{
	uint8_t u[46];

	ddp_untagged_hdr(u, 0x41, 0x41, 1, msn, 0);
	put_be32(u + 18, sink_stag);
	put_be64(u + 22, sink_to);
	put_be32(u + 30, size);
	put_be32(u + 34, src_stag);
	put_be64(u + 38, (uint64_t)(uintptr_t)src);
	return fpdu_build(b, u, sizeof(u), true);
}

/* The next FPDU from P is a whole Read Response of the len bytes at data
 * to to of stag. */
static void expect_read_response(int fd, UINT32 stag, uint64_t to,
				 const uint8_t *data, size_t len)
{
	uint8_t u[14 + 256];

	assert_int_equal(raw_read_fpdu(fd, u, sizeof(u), WAIT_MS), 14 + len);
	assert_int_equal(u[0], 0xc1);
	assert_int_equal(u[1], 0x42);
	assert_int_equal(get_be32(u + 2), stag);
	assert_true(get_be64(u + 6) == to);
	if (len)
		assert_memory_equal(u + 14, data, len);
}

/*
 * Read Requests in one read, each whole (predicted: dp_rx.c,
 * rx_predict_read_req): a Read Response for each, in order, with the
 * source's bytes and the sink the request named (an empty one too); then
 * one whose source token names nothing gets the Terminate it always did
 * (RDMAP, remote protection, invalid STag), and no response.
 */
static void test_read_requests_answered(void **state)
{
	uint8_t *src = P.buf + 32 * SLOT, b[256], t[256];
	NDK_MR *mr;
	size_t n = 0, tlen;
	UINT32 tok;
	int fd;

	(void)state;
	fill(src, 64, 7);
	fd = accept_with_receives(0);
	mr = reg_range(srv.pd, src, 4096, NDK_MR_FLAG_ALLOW_REMOTE_READ);
	tok = mr->Dispatch->NdkGetRemoteTokenFromMr(mr);
	n += read_request_fpdu(b + n, 1, 0x11223344, 0x1000, 64, tok, src);
	n += read_request_fpdu(b + n, 2, 0x11223344, 0x2000, 0, tok, src);
	raw_send(fd, b, n);
	expect_read_response(fd, 0x11223344, 0x1000, src, 64);
	expect_read_response(fd, 0x11223344, 0x2000, NULL, 0);
	raw_send(fd, b,
		 read_request_fpdu(b, 3, 0x11223344, 0x3000, 8, tok + 0x100,
				   src));
	tlen = raw_read_fpdu(fd, t, sizeof(t), WAIT_MS);
	dp_raw_assert_term_cause(t, tlen, 0, 1, 0x00);
	close(fd);
}

/*
 * A's Reads of a raw server: one of one SGE, whose Read Request goes out
 * from the post (dp_tx.c, tx_predict_read), and one of two SGEs (the
 * general path); each answered with one whole Read Response (predicted on
 * receipt, rx_predict_read_resp) that completes it with the bytes in its
 * sink, and nothing written around them.
 */
static void test_reads_completed(void **state)
{
	uint8_t *sink = A.buf + 64 * SLOT, u[14 + 64], b[256];
	struct dp_raw_server r;
	NDK_SGE one, two[2];

	(void)state;
	memset(sink, 0xee, 512);
	dp_raw_server_connect(&r, 0);
	one = sge(sink, 40, A.ltok);
	assert_int_equal(A.qp->Dispatch->NdkRead(A.qp, (PVOID)1, &one, 1,
						 0x5000, 0x77, 0),
			 STATUS_SUCCESS);
	dp_raw_expect_read_request(r.fd, 1, A.ltok, sink, 40);
	ddp_tagged_hdr(u, 0xc1, 0x42, A.ltok, (uint64_t)(uintptr_t)sink);
	memset(u + 14, 0x3c, 40);
	raw_send(r.fd, b, fpdu_build(b, u, 14 + 40, true));
	EXPECT_RESULTS(cli.cq, { 1, NdkOperationTypeRead, STATUS_SUCCESS });
	assert_all(sink, 40, 0x3c, "the first Read's sink");
	assert_all(sink + 40, 60, 0xee, "past the first Read's sink");

	two[0] = sge(sink + 100, 10, A.ltok);
	two[1] = sge(sink + 200, 20, A.ltok);
	assert_int_equal(A.qp->Dispatch->NdkRead(A.qp, (PVOID)2, two, 2, 0x6000,
						 0x77, 0),
			 STATUS_SUCCESS);
	dp_raw_expect_read_request(r.fd, 2, A.ltok, sink + 100, 30);
	ddp_tagged_hdr(u, 0xc1, 0x42, A.ltok,
		       (uint64_t)(uintptr_t)(sink + 100));
	memset(u + 14, 0x3d, 30);
	raw_send(r.fd, b, fpdu_build(b, u, 14 + 30, true));
	EXPECT_RESULTS(cli.cq, { 2, NdkOperationTypeRead, STATUS_SUCCESS });
	assert_all(sink + 100, 10, 0x3d, "the second Read's first SGE");
	assert_all(sink + 110, 90, 0xee, "between its SGEs");
	assert_all(sink + 200, 20, 0x3d, "its second SGE");
	assert_all(sink + 220, 292, 0xee, "past its second SGE");
	assert_cq_quiet(cli.cq);
	dp_raw_server_close(&r);
}

/* The next FPDU from A is a whole Send: RDMAP control rdmap, msn, and
 * the len bytes at data. */
static void expect_send_fpdu(int fd, uint8_t rdmap, uint32_t msn,
			     const uint8_t *data, size_t len)
{
	uint8_t u[18 + 256];

	assert_int_equal(raw_read_fpdu(fd, u, sizeof(u), WAIT_MS), 18 + len);
	assert_int_equal(u[0], 0x41); /* untagged, last, DDP version 1 */
	assert_int_equal(u[1], rdmap);
	assert_int_equal(get_be32(u + 6), 0); /* QN */
	assert_int_equal(get_be32(u + 10), msn);
	assert_int_equal(get_be32(u + 14), 0); /* MO */
	if (len)
		assert_memory_equal(u + 18, data, len);
}

/*
 * The transmit side's prediction (dp_tx.c, tx_predict_send) against the
 * general path, Send after Send to a raw server: a Send, a Send with SE
 * and an inline Send (predicted), a Send of two SGEs (not), a Send whose
 * token names nothing (not: it fails, sends nothing and takes no MSN) and
 * an empty Send: each FPDU with the next MSN and its bytes, and the
 * completions in order with their statuses.
 */
static void test_sends_on_the_wire(void **state)
{
	struct dp_raw_server r;
	uint8_t *src = A.buf, two_bytes[12];
	NDK_SGE two[2], bad;

	(void)state;
	fill(src, 512, 5);
	dp_raw_server_connect(&r, 0);
	post_send(A.qp, 1, src, 8, A.ltok, 0);
	expect_send_fpdu(r.fd, 0x43, 1, src, 8);
	post_send(A.qp, 2, src + 8, 13, A.ltok,
		  NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT);
	expect_send_fpdu(r.fd, 0x45, 2, src + 8, 13);
	two[0] = sge(src, 5, A.ltok);
	two[1] = sge(src + 100, 7, A.ltok);
	assert_int_equal(A.qp->Dispatch->NdkSend(A.qp, (PVOID)3, two, 2, 0),
			 STATUS_SUCCESS);
	memcpy(two_bytes, src, 5);
	memcpy(two_bytes + 5, src + 100, 7);
	expect_send_fpdu(r.fd, 0x43, 3, two_bytes, 12);
	post_send(A.qp, 4, src + 200, 20, A.ltok, NDK_OP_FLAG_INLINE);
	expect_send_fpdu(r.fd, 0x43, 4, src + 200, 20);
	bad = sge(src, 8, A.ltok + 0x1000);
	assert_int_equal(A.qp->Dispatch->NdkSend(A.qp, (PVOID)5, &bad, 1, 0),
			 STATUS_SUCCESS);
	post_send(A.qp, 6, src + 300, 0, A.ltok, 0);
	expect_send_fpdu(r.fd, 0x43, 5, NULL, 0);
	/* A Write (predicted) between them, and one of two SGEs (not). */
	assert_int_equal(A.qp->Dispatch->NdkWrite(A.qp, (PVOID)7, two, 1,
						  0x1000, 0x4242, 0),
			 STATUS_SUCCESS);
	expect_write_fpdu(r.fd, 0x4242, src, 5, 0x1000);
	assert_int_equal(A.qp->Dispatch->NdkWrite(A.qp, (PVOID)8, two, 2,
						  0x2000, 0x4343, 0),
			 STATUS_SUCCESS);
	expect_write_fpdu(r.fd, 0x4343, two_bytes, 12, 0x2000);
	EXPECT_RESULTS(cli.cq, { 1, NdkOperationTypeSend, STATUS_SUCCESS },
		       { 2, NdkOperationTypeSend, STATUS_SUCCESS },
		       { 3, NdkOperationTypeSend, STATUS_SUCCESS },
		       { 4, NdkOperationTypeSend, STATUS_SUCCESS },
		       { 5, NdkOperationTypeSend, STATUS_ACCESS_VIOLATION },
		       { 6, NdkOperationTypeSend, STATUS_SUCCESS },
		       { 7, NdkOperationTypeWrite, STATUS_SUCCESS },
		       { 8, NdkOperationTypeWrite, STATUS_SUCCESS });
	assert_cq_quiet(cli.cq);
	dp_raw_server_close(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_sends_in_one_write,
						dp_setup_hosts, dp_teardown),
		cmocka_unit_test_setup_teardown(test_send_after_partial_fpdu,
						dp_setup_hosts, dp_teardown),
		cmocka_unit_test_setup_teardown(test_write_payload_like_a_send,
						dp_setup_hosts, dp_teardown),
		cmocka_unit_test_setup_teardown(test_send_longer_than_receive,
						dp_setup_hosts, dp_teardown),
		cmocka_unit_test_setup_teardown(test_send_without_receive,
						dp_setup_hosts, dp_teardown),
		cmocka_unit_test_setup_teardown(test_writes_in_one_write,
						dp_setup_hosts, dp_teardown),
		cmocka_unit_test_setup_teardown(test_sends_on_the_wire,
						dp_setup_hosts, dp_teardown),
		cmocka_unit_test_setup_teardown(test_read_requests_answered,
						dp_setup_hosts, dp_teardown),
		cmocka_unit_test_setup_teardown(test_reads_completed,
						dp_setup_hosts, dp_teardown),
	};

	cm_software_only();
	dp_set_env();
	return cmocka_run_group_tests_name("dp_predict", tests, NULL, NULL);
}
