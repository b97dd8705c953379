/* SPDX-License-Identifier: MIT */
/*
 * Small Read Responses on the wire: a Read Response of up to 512 bytes
 * with nothing else to send is built whole and written with one send
 * (docs/design.md, "Small requests"). A raw requester reads Reads of
 * sizes around that line from P, four at a time (its ORD), each with a
 * source and sink of its own, and sometimes with a Send of P's queued
 * behind them: every Response is one tagged FPDU with the L bit, the
 * sink's STag and offset, the source's bytes and a good CRC (raw_read_fpdu
 * checks it), in request order, and P's Sends follow in MSN order.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>
#include "rawpeer_dp.h"
#include "testutil.h"

#define READS	 84
#define SINK_TAG 0x5566
#define SINK_TO	 0x20000

static uint32_t read_size(unsigned int i)
{
	static const uint32_t sizes[] = { 1, 8, 511, 512, 513, 0, 64, 4096 };

	return sizes[i % (sizeof(sizes) / sizeof(sizes[0]))];
}

/* Read i's source: its own offset in P's buffer. */
static uint64_t read_src(unsigned int i)
{
	return (uint64_t)i * 4096 + (i % 7);
}

static void send_read_request(int fd, unsigned int i, UINT32 src_tok)
{
	uint8_t rr[64], b[128];

	ddp_untagged_hdr(rr, 0x41, 0x41, 1, i + 1, 0);
	put_be32(rr + 18, SINK_TAG);
	put_be64(rr + 22, SINK_TO + (uint64_t)i * 8192);
	put_be32(rr + 30, read_size(i));
	put_be32(rr + 34, src_tok);
	put_be64(rr + 38, (uint64_t)(uintptr_t)P.buf + read_src(i));
	raw_send(fd, b, fpdu_build(b, rr, 46, true));
}

/* Read i's Response, whole: as many FPDUs as its size takes. */
static void expect_response(int fd, unsigned int i)
{
	static uint8_t u[8192];
	uint32_t size = read_size(i), got = 0;
	size_t ulen;

	do {
		ulen = raw_read_fpdu(fd, u, sizeof(u), WAIT_MS);
		assert_true(ulen >= 14);
		assert_int_equal(u[0] & 0x80, 0x80); /* tagged */
		assert_int_equal(u[1], 0x42); /* RDMAP 1, Read Response */
		assert_int_equal(get_be32(u + 2), SINK_TAG);
		assert_int_equal(get_be64(u + 6),
				 SINK_TO + (uint64_t)i * 8192 + got);
		assert_memory_equal(u + 14, P.buf + read_src(i) + got,
				    ulen - 14);
		got += (uint32_t)(ulen - 14);
		assert_true(got <= size);
	} while (!(u[0] & 0x40));
	assert_int_equal(got, size);
}

static void test_small_read_responses(void **state)
{
	unsigned int sent = 0, done = 0;
	uint8_t u[256];
	NDK_RESULT_EX res[1];
	NDK_MR *mr;
	UINT32 tok;
	size_t ulen;
	int fd;

	(void)state;
	fill(P.buf, READS * 4096 + 8, 5);
	mr = reg_range(srv.pd, P.buf, READS * 4096 + 8,
		       NDK_MR_FLAG_ALLOW_REMOTE_READ);
	tok = mr->Dispatch->NdkGetRemoteTokenFromMr(mr);
	P.qp = big_qp(&srv);
	fd = dp_raw_client_accepted(4, 0);
	/* Up to four Reads outstanding (the raw side's ORD), each
	 * Response checked whole, in order. */
	while (done < READS) {
		while (sent < READS && sent - done < 4)
			send_read_request(fd, sent++, tok);
		expect_response(fd, done++);
	}
	/* A Send of P's behind them: MSN 1, whole. */
	post_send(P.qp, 1, P.buf + 3, 16, P.ltok, 0);
	ulen = raw_read_fpdu(fd, u, sizeof(u), WAIT_MS);
	assert_int_equal(ulen, 18 + 16);
	assert_int_equal(u[1], 0x43); /* Send */
	assert_int_equal(get_be32(u + 10), 1); /* MSN */
	assert_memory_equal(u + 18, P.buf + 3, 16);
	poll_one_ok(srv.cq, res, NdkOperationTypeSend);
	assert_cq_quiet(srv.cq);
	raw_close_rst(fd);
	(void)mr; /* closed with the adapter */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_small_read_responses,
						dp_setup_hosts, dp_teardown),
	};

	/* The software provider's own wire, against a raw peer. */
	cm_software_only();
	dp_set_env();
	return cmocka_run_group_tests_name("dp_small_read_resp", tests, NULL,
					   NULL);
}
