/* SPDX-License-Identifier: MIT */
/*
 * What arrives damaged is not acted on. An FPDU whose CRC fails is
 * answered with the MPA CRC Terminate (RFC 5044, RFC 5040 7.1: LLP layer,
 * MPA, code 2) and nothing else: a Read Request is not served, a Send
 * completes no receive, a Write places nothing outside the range its
 * intact predecessors named. A Read Response shorter than the Read asked for
 * does not complete the Read as read: its sink would hold old bytes.
 * Against raw peers (rawpeer_dp.h), CRC on.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>
#include <unistd.h>
#include "rawpeer_dp.h"
#include "testutil.h"

/* The FPDUs back from P up to a Terminate with this cause: Sends may
 * come before it, a Read Response may not; then the stream ends. */
static void expect_terminate_unserved(int fd, unsigned int layer,
				      unsigned int etype, unsigned int ecode)
{
	uint8_t t[1200];
	size_t tlen;

	for (;;) {
		tlen = raw_read_fpdu(fd, t, sizeof(t), WAIT_MS);
		assert_true(tlen >= 18);
		if ((t[1] & 0x0f) == 7)
			break;
		if ((t[1] & 0x0f) != 3)
			fail_msg("RDMAP opcode %u before the Terminate",
				 t[1] & 0x0f);
	}
	dp_raw_assert_term_cause(t, tlen, layer, etype, ecode);
	assert_int_equal(raw_wait_event(fd, WAIT_MS), RAW_EOF);
}

/* A Read Request (QN 1, MSN 1) for size bytes of stag at to, into the
 * sink 0x11223344:0x1000; its FPDU into b. */
static size_t read_request_fpdu(uint8_t *b, uint32_t size, UINT32 stag,
				uint64_t to, bool good_crc)
{
	uint8_t u[46];

	ddp_untagged_hdr(u, 0x41, 0x41, 1, 1, 0);
	put_be32(u + 18, 0x11223344);
	put_be64(u + 22, 0x1000);
	put_be32(u + 30, size);
	put_be32(u + 34, stag);
	put_be64(u + 38, to);
	return fpdu_build(b, u, sizeof(u), good_crc);
}

static UINT32 readable_mr(size_t len)
{
	NDK_MR *mr =
		reg_range(srv.pd, P.buf, len, NDK_MR_FLAG_ALLOW_REMOTE_READ);

	return mr->Dispatch->NdkGetRemoteTokenFromMr(mr);
}

/* A valid Read Request with one CRC bit wrong: no Read Response, only the
 * CRC Terminate. The same request intact is served (the control). */
static void test_read_request_bad_crc(void **state)
{
	uint8_t b[128], u[1100];
	UINT32 tok;
	size_t n;
	int fd;

	(void)state;
	fill(P.buf, 1000, 3);
	tok = readable_mr(4096);

	P.qp = big_qp(&srv);
	fd = dp_raw_client_accepted(4, 0);
	raw_send(fd, b,
		 read_request_fpdu(b, 1000, tok, (uint64_t)(uintptr_t)P.buf,
				   true));
	n = raw_read_fpdu(fd, u, sizeof(u), WAIT_MS);
	assert_int_equal(u[1], 0x42); /* the control: a Read Response */
	assert_int_equal(n, 14 + 1000);
	close(fd);
	cm_close_connector(P.conn);
	cm_close_qp(P.qp);

	/*
	 * All but the CRC first, then a Send of P's own, which runs its
	 * transmit side while the request waits for its CRC: a request
	 * acted on before its CRC would be answered then.
	 */
	P.qp = big_qp(&srv);
	fd = dp_raw_client_accepted(4, 0);
	n = read_request_fpdu(b, 1000, tok, (uint64_t)(uintptr_t)P.buf, false);
	raw_send(fd, b, n - 4);
	usleep(QUIET_MS * 1000);
	post_send(P.qp, 5, P.buf, 8, P.ltok, 0);
	usleep(QUIET_MS * 1000);
	raw_send(fd, b + n - 4, 4);
	expect_terminate_unserved(fd, 2, 0, 0x02);
	if (!tu_wait_until(disc_seen, &P, WAIT_MS))
		fail_msg("no disconnect event");
	close(fd);
}

/* A Send with one CRC bit wrong: the CRC Terminate, and the receive it
 * would have filled completes only with the flush, STATUS_CANCELLED. */
static void test_send_bad_crc(void **state)
{
	uint8_t u[18 + 64], b[128];
	NDK_RESULT_EX res;
	int fd;

	(void)state;
	P.qp = big_qp(&srv);
	post_recv(P.qp, 9, P.buf, 4096, P.ltok);
	fd = dp_raw_client_accepted(4, 0);
	ddp_untagged_hdr(u, 0x41, 0x43, 0, 1, 0);
	memset(u + 18, 0x5a, 64);
	raw_send(fd, b, fpdu_build(b, u, sizeof(u), false));
	expect_terminate_unserved(fd, 2, 0, 0x02);
	if (!tu_wait_until(disc_seen, &P, WAIT_MS))
		fail_msg("no disconnect event");
	assert_cq_quiet(srv.cq);
	P.qp->Dispatch->NdkFlush(P.qp);
	assert_int_equal(poll_cq(srv.cq, &res, 1), 1);
	expect_result(&res, 9, NdkOperationTypeReceive, STATUS_CANCELLED);
	assert_cq_quiet(srv.cq);
	close(fd);
}

/* Our Read of 1000 bytes answered with 600 and the L bit: the Read does
 * not complete with STATUS_SUCCESS, and we send a Terminate (RDMAP,
 * remote operation, catastrophic to the stream). */
static void test_read_response_short(void **state)
{
	struct dp_raw_server r;
	NDK_RESULT_EX res;
	uint8_t *sink = A.buf + (1 << 20);
	uint8_t b[1200], resp[14 + 600], t[256];
	NDK_SGE s = sge(sink, 1000, A.ltok);
	size_t tlen;

	(void)state;
	dp_raw_server_connect(&r, 0);
	assert_int_equal(A.qp->Dispatch->NdkRead(A.qp, (PVOID)(uintptr_t)1, &s,
						 1, 0x10000, 0x77, 0),
			 STATUS_SUCCESS);
	dp_raw_expect_read_request(r.fd, 1, A.ltok, sink, 1000);
	/* tagged, last; Read Response */
	ddp_tagged_hdr(resp, 0xc1, 0x42, A.ltok, (uint64_t)(uintptr_t)sink);
	memset(resp + 14, 0x5c, 600);
	raw_send(r.fd, b, fpdu_build(b, resp, sizeof(resp), true));

	/* RDMAP, remote operation, catastrophic to the stream. */
	tlen = raw_read_fpdu(r.fd, t, sizeof(t), WAIT_MS);
	dp_raw_assert_term_cause(t, tlen, 0, 2, 0x07);
	if (!tu_wait_until(disc_seen, &A, WAIT_MS))
		fail_msg("no disconnect event");
	A.qp->Dispatch->NdkFlush(A.qp);
	assert_int_equal(poll_cq(cli.cq, &res, 1), 1);
	assert_int_equal(res.Type, NdkOperationTypeRead);
	if (res.Status == STATUS_SUCCESS)
		fail_msg("a short Read Response completed the Read");
	assert_cq_quiet(cli.cq);
	dp_raw_server_close(&r);
}

/* A Write FPDU (tagged, opcode 0) of len bytes of v at to of stag, the L
 * bit if last, into b. */
static size_t write_fpdu(uint8_t *b, UINT32 stag, uint64_t to, size_t len,
			 uint8_t v, bool last, bool good_crc)
{
	static uint8_t u[14 + 16384];

	assert_true(len <= sizeof(u) - 14);
	/* tagged, L; Write */
	ddp_tagged_hdr(u, last ? 0xc1 : 0x81, 0x40, stag, to);
	memset(u + 14, v, len);
	return fpdu_build(b, u, 14 + len, good_crc);
}

/* A raw peer accepted on a new QP of the server; its descriptor. */
static int crc_case_start(const char *what)
{
	print_message("case: %s\n", what);
	atomic_store(&P.disc, 0);
	P.qp = big_qp(&srv);
	return dp_raw_client_accepted(4, 0);
}

/* The CRC Terminate, unserved, and the disconnect it brings. */
static void crc_case_terminated(int fd)
{
	expect_terminate_unserved(fd, 2, 0, 0x02);
	if (!tu_wait_until(disc_seen, &P, WAIT_MS))
		fail_msg("no disconnect event");
}

static void crc_case_end(int fd)
{
	close(fd);
	cm_close_connector(P.conn);
	cm_close_qp(P.qp);
}

/*
 * A good one-FPDU Write of SEG bytes of 0x33 at slot good of the 8-slot
 * MR at base, then one with a bad CRC of 0x44 at slot bad: the Terminate
 * comes, the good slot keeps its bytes, and nothing lands outside the bad
 * slot; if none, nothing lands in it either.
 */
static void bad_write_after_good(UINT32 tok, uint64_t base, unsigned int good,
				 unsigned int bad, const char *what, bool none)
{
	static uint8_t b[16384 + 64];
	enum { SEG = 16384 };
	unsigned int i;
	size_t n;
	int fd;

	memset(P.buf, 0xa5, 8 * SEG);
	fd = crc_case_start(what);
	raw_send(fd, b,
		 write_fpdu(b, tok, base + good * SEG, SEG, 0x33, true, true));
	/* In two parts, so that the first is received before the CRC is
	 * there: a payload that is placed is placed before it is checked. */
	n = write_fpdu(b, tok, base + bad * SEG, SEG, 0x44, true, false);
	raw_send(fd, b, 4096);
	usleep(50 * 1000);
	raw_send(fd, b + 4096, n - 4096);
	crc_case_terminated(fd);
	for (i = 0; i < 8; i++) {
		if (i == good && i != bad)
			assert_all(P.buf + i * SEG, SEG, 0x33, what);
		else if (i != bad || none)
			assert_all(P.buf + i * SEG, SEG, 0xa5, what);
	}
	crc_case_end(fd);
}

/*
 * Nothing of a Write FPDU whose CRC fails lands outside the range the
 * intact FPDUs before it named: its header may be the damaged part. A
 * first FPDU with a bad CRC places nothing; after a good first FPDU, one
 * whose TO is not the next one places nothing either. One that a sound
 * header predicts (the next TO, or a Write again at the TO where the last
 * one began) lands inside its own range at most (docs/wire.md, "What
 * waits for the CRC").
 */
static void test_write_bad_crc_places_nothing(void **state)
{
	static uint8_t b[16384 + 64];
	enum { SEG = 16384 };
	uint64_t base = (uint64_t)(uintptr_t)P.buf;
	NDK_MR *mr;
	UINT32 tok;
	int fd;

	(void)state;
	memset(P.buf, 0xa5, 8 * SEG);
	mr = reg_range(srv.pd, P.buf, 8 * SEG, NDK_MR_FLAG_ALLOW_REMOTE_WRITE);
	tok = mr->Dispatch->NdkGetRemoteTokenFromMr(mr);

	fd = crc_case_start("the first FPDU of a Write");
	raw_send(fd, b, write_fpdu(b, tok, base, SEG, 0x11, false, false));
	crc_case_terminated(fd);
	assert_all(P.buf, SEG, 0xa5, "under a bad first FPDU");
	crc_case_end(fd);

	fd = crc_case_start("a second FPDU somewhere else");
	raw_send(fd, b, write_fpdu(b, tok, base, SEG, 0x11, false, true));
	raw_send(fd, b,
		 write_fpdu(b, tok, base + 4 * SEG, SEG, 0x22, true, false));
	crc_case_terminated(fd);
	assert_all(P.buf, SEG, 0x11, "the good first FPDU");
	assert_all(P.buf + SEG, 7 * SEG, 0xa5, "past the good first FPDU");
	crc_case_end(fd);

	/* Whole Writes: good at 2 SEG (one FPDU), then a bad one at each
	 * place in turn. */
	bad_write_after_good(tok, base, 2, 5, "a Write elsewhere", true);
	bad_write_after_good(tok, base, 2, 2, "a Write again at its TO", false);
	bad_write_after_good(tok, base, 2, 3, "a Write at its next TO", false);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_read_request_bad_crc,
						dp_setup_hosts, dp_teardown),
		cmocka_unit_test_setup_teardown(test_send_bad_crc,
						dp_setup_hosts, dp_teardown),
		cmocka_unit_test_setup_teardown(test_read_response_short,
						dp_setup_hosts, dp_teardown),
		cmocka_unit_test_setup_teardown(
			test_write_bad_crc_places_nothing, dp_setup_hosts,
			dp_teardown),
	};

	cm_software_only();
	dp_set_env();
	return cmocka_run_group_tests_name("dp_crc", tests, NULL, NULL);
}
