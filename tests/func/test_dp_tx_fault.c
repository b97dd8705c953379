/* SPDX-License-Identifier: MIT */
/*
 * Messages the transmitter cannot finish (docs/wire.md, "Messages cut
 * short"): against a raw peer that stops reading, a Read Response, a
 * Write and a flushed Write stall in the middle; then the Read's source
 * goes, the Write's source goes, or the consumer flushes. The peer must
 * never see the next message's segments taken for the rest of this one:
 * what was started arrives whole up to an FPDU boundary, with no last
 * segment, followed by a Terminate and the end of the stream, and the
 * consumer gets its completions and the disconnect event.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>
#include <unistd.h>
#include "rawpeer_dp.h"
#include "testutil.h"

#define BIG	     (8u << 20) /* far more than the sockets hold */
#define RAW_RCVBUF   4096
#define SINK_STAG    0x5566
#define SINK_TO	     0x100000ull
#define WRITE_STAG   0x4455
#define RDMAP_TERM   0x47 /* RDMAP version 1, opcode Terminate */
#define RDMAP_RRESP  0x42 /* RDMAP version 1, opcode Read Response */
#define RDMAP_WRITE  0x40
#define DDP_TAGGED   0x80
#define DDP_LAST     0x40
#define TERM_FLAG_MD 0xc000

/*
 * Reads FPDUs until the Terminate, into t (tmax bytes); every FPDU before
 * it must be a tagged segment of opcode op that is not the last, at the
 * offsets that follow each other from to. Returns the Terminate's length
 * and the payload bytes before it in *bytes.
 */
static size_t read_until_terminate(int fd, uint8_t op, uint64_t to, uint8_t *t,
				   size_t tmax, size_t *bytes)
{
	static uint8_t u[70000];
	size_t ulen;

	*bytes = 0;
	for (;;) {
		ulen = raw_read_fpdu(fd, u, sizeof(u), WAIT_MS);
		assert_true(ulen >= 14);
		if (u[1] == RDMAP_TERM)
			break;
		if (!(u[0] & DDP_TAGGED) || (u[0] & DDP_LAST) || u[1] != op)
			fail_msg("FPDU %#x %#x after %zu bytes: not a middle "
				 "segment",
				 u[0], u[1], *bytes);
		assert_int_equal(get_be64(u + 6), to + *bytes);
		*bytes += ulen - 14;
	}
	assert_true(ulen <= tmax);
	memcpy(t, u, ulen);
	/* Nothing after a Terminate but the end of the stream. */
	assert_int_equal(raw_wait_event(fd, WAIT_MS), RAW_EOF);
	return ulen;
}

/*
 * The Read Response stalls; the source MR is deregistered: a remote
 * protection Terminate (invalid STag) that quotes the Read Request.
 */
static void test_read_source_gone(void **state)
{
	uint8_t req[18 + 28], f[128], t[256];
	NDK_MR *mr;
	UINT32 tok;
	size_t n, tlen, bytes;
	int fd;

	(void)state;
	mr = reg_range(srv.pd, P.buf, BIG, NDK_MR_FLAG_ALLOW_REMOTE_READ);
	tok = mr->Dispatch->NdkGetRemoteTokenFromMr(mr);
	P.qp = big_qp(&srv);
	fd = dp_raw_client_accepted(4, RAW_RCVBUF);
	/* Read Request, QN 1, MSN 1: BIG bytes of P.buf into our sink. */
	ddp_untagged_hdr(req, 0x41, 0x41, 1, 1, 0);
	put_be32(req + 18, SINK_STAG);
	put_be64(req + 22, SINK_TO);
	put_be32(req + 30, BIG);
	put_be32(req + 34, tok);
	put_be64(req + 38, (uint64_t)(uintptr_t)P.buf);
	n = fpdu_build(f, req, 18 + 28, true);
	raw_send(fd, f, n);
	usleep(QUIET_MS * 1000); /* the response fills the sockets */
	assert_int_equal(mr->Dispatch->NdkDeregisterMr(mr, NULL, NULL),
			 STATUS_SUCCESS);
	tlen = read_until_terminate(fd, RDMAP_RRESP, SINK_TO, t, sizeof(t),
				    &bytes);
	assert_true(bytes > 0 && bytes < BIG);
	/* RDMAP, remote protection, invalid STag; M, D and R. */
	dp_raw_assert_term_cause(t, tlen, 0, 1, 0x00);
	assert_int_equal(get_be32(t + 18) & 0xe000, TERM_FLAG_MD | 0x2000);
	assert_int_equal(tlen, 18 + 4 + 2 + 18 + 28);
	assert_int_equal(get_be16(t + 22), 18 + 28); /* the request's */
	assert_int_equal(t[25], 0x41); /* its RDMAP byte: Read Request */
	assert_int_equal(get_be32(t + 24 + 6), 1); /* QN */
	assert_int_equal(get_be32(t + 24 + 10), 1); /* MSN */
	assert_memory_equal(t + 42, req + 18, 28); /* the request's body */
	if (!tu_wait_until(disc_seen, &P, WAIT_MS))
		fail_msg("no disconnect event");
	close(fd);
}

/* A Write of BIG bytes from [A.buf, tok), to the raw server. */
static void post_big_write(UINT32 tok)
{
	NDK_SGE s = sge(A.buf, BIG, tok);

	assert_int_equal(A.qp->Dispatch->NdkWrite(A.qp, (PVOID)1, &s, 1,
						  SINK_TO, WRITE_STAG, 0),
			 STATUS_SUCCESS);
}

/* What the raw server sees after a Write was cut short: its segments,
 * none the last, then RDMAP local catastrophic and the end. */
static void expect_write_cut(struct dp_raw_server *r)
{
	uint8_t t[256];
	size_t tlen, bytes;

	tlen = read_until_terminate(r->fd, RDMAP_WRITE, SINK_TO, t, sizeof(t),
				    &bytes);
	assert_true(bytes > 0 && bytes < BIG);
	dp_raw_assert_term_cause(t, tlen, 0, 0, 0x00);
	assert_int_equal(get_be32(t + 18) & 0xe000, 0); /* nothing quoted */
	if (!tu_wait_until(disc_seen, &A, WAIT_MS))
		fail_msg("no disconnect event");
}

/*
 * The Write stalls; its source MR is deregistered: the Write completes
 * with STATUS_ACCESS_VIOLATION and the stream ends.
 */
static void test_write_source_gone(void **state)
{
	struct dp_raw_server r;
	NDK_RESULT_EX res;
	NDK_MR *mr;

	(void)state;
	fill(A.buf, BIG, 5);
	mr = reg_range(cli.pd, A.buf, BIG, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
	dp_raw_server_connect(&r, RAW_RCVBUF);
	post_big_write(mr->Dispatch->NdkGetLocalTokenFromMr(mr));
	usleep(QUIET_MS * 1000);
	assert_int_equal(cli.cq->Dispatch->NdkGetCqResultsEx(cli.cq, &res, 1),
			 0); /* still going */
	assert_int_equal(mr->Dispatch->NdkDeregisterMr(mr, NULL, NULL),
			 STATUS_SUCCESS);
	expect_write_cut(&r);
	assert_int_equal(poll_cq(cli.cq, &res, 1), 1);
	expect_result(&res, 1, NdkOperationTypeWrite, STATUS_ACCESS_VIOLATION);
	assert_cq_quiet(cli.cq);
	dp_raw_server_close(&r);
}

/*
 * The Write stalls; the consumer flushes the QP: the Write completes
 * cancelled, the connection ends, and the FPDU half written is finished
 * and followed by the Terminate once the server reads.
 */
static void test_flush_mid_write(void **state)
{
	struct dp_raw_server r;
	NDK_RESULT_EX res;

	(void)state;
	fill(A.buf, BIG, 7);
	dp_raw_server_connect(&r, RAW_RCVBUF);
	post_big_write(A.ltok);
	usleep(QUIET_MS * 1000);
	A.qp->Dispatch->NdkFlush(A.qp);
	assert_int_equal(poll_cq(cli.cq, &res, 1), 1);
	expect_result(&res, 1, NdkOperationTypeWrite, STATUS_CANCELLED);
	/* The connection ends while the socket is still full: the rest of
	 * the FPDU and the Terminate go out as the server reads. */
	if (!tu_wait_until(disc_seen, &A, WAIT_MS))
		fail_msg("no disconnect event");
	expect_write_cut(&r);
	assert_cq_quiet(cli.cq);
	dp_raw_server_close(&r);
}

/* A flush between messages cuts nothing: no Terminate, the connection
 * stays up and the next Write arrives whole. */
static void test_flush_between_messages(void **state)
{
	struct dp_raw_server r;
	NDK_RESULT_EX res;
	uint8_t u[256];
	NDK_SGE s;

	(void)state;
	fill(A.buf, 64, 9);
	dp_raw_server_connect(&r, 0);
	A.qp->Dispatch->NdkFlush(A.qp);
	s = sge(A.buf, 64, A.ltok);
	assert_int_equal(A.qp->Dispatch->NdkWrite(A.qp, (PVOID)2, &s, 1,
						  SINK_TO, WRITE_STAG, 0),
			 STATUS_SUCCESS);
	assert_int_equal(raw_read_fpdu(r.fd, u, sizeof(u), WAIT_MS), 14 + 64);
	assert_int_equal(u[0], 0xc1); /* tagged, last */
	assert_int_equal(u[1], RDMAP_WRITE);
	assert_memory_equal(u + 14, A.buf, 64);
	poll_one_ok(cli.cq, &res, NdkOperationTypeWrite);
	dp_raw_server_close(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_read_source_gone,
						dp_setup_hosts, dp_teardown),
		cmocka_unit_test_setup_teardown(test_write_source_gone,
						dp_setup_hosts, dp_teardown),
		cmocka_unit_test_setup_teardown(test_flush_mid_write,
						dp_setup_hosts, dp_teardown),
		cmocka_unit_test_setup_teardown(test_flush_between_messages,
						dp_setup_hosts, dp_teardown),
	};

	/* The software provider's own wire, against a raw peer. */
	cm_software_only();
	dp_set_env();
	return cmocka_run_group_tests_name("dp_tx_fault", tests, NULL, NULL);
}
