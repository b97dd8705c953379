/* SPDX-License-Identifier: MIT */
/*
 * Hostile peers cannot make the data path allocate without bound or spin:
 * a Read Request for 4 GiB, a Send whose MSN or message offset lies far
 * ahead, and floods of zero-length FPDUs. Each one gets the Terminate RFC
 * 5040 / 5041 name for it, or is served as the no-op it is, and the
 * process's memory stays where it was.
 *
 * A raw client (rawpeer_dp.h) connects to P, with CRC.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "rawpeer_dp.h"
#include "testutil.h"

/* Memory a case may add to the process, at most. */
#define RSS_SLACK_KIB 8192

static long rss_kib(void)
{
	char line[256];
	long kib = -1;
	FILE *f = fopen("/proc/self/status", "r");

	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

/* The next FPDU from P is a Terminate with this layer, type and code;
 * then the stream ends and P sees its disconnect event. */
static void expect_terminate(int fd, unsigned int layer, unsigned int etype,
			     unsigned int ecode)
{
	uint8_t t[256];
	size_t tlen;

	/* Skip what P answered before (Read Responses of good requests). */
	do {
		tlen = raw_read_fpdu(fd, t, sizeof(t), WAIT_MS);
		assert_true(tlen >= 22);
	} while (t[1] != 0x47);
	dp_raw_assert_term_cause(t, tlen, layer, etype, ecode);
	assert_int_equal(raw_wait_event(fd, WAIT_MS), RAW_EOF);
	if (!tu_wait_until(disc_seen, &P, WAIT_MS))
		fail_msg("no disconnect event");
}

/* A Read Request (QN 1, MSN msn) for size bytes at to of stag, into the
 * sink 0x11223344:0x1000. Returns the ULPDU length. */
static size_t read_request(uint8_t *u, uint32_t msn, uint32_t size, UINT32 stag,
			   uint64_t to)
{
	ddp_untagged_hdr(u, 0x41, 0x41, 1, msn, 0);
	put_be32(u + 18, 0x11223344);
	put_be64(u + 22, 0x1000);
	put_be32(u + 30, size);
	put_be32(u + 34, stag);
	put_be64(u + 38, to);
	return 46;
}

static UINT32 remote_mr(size_t len)
{
	NDK_MR *mr = reg_range(srv.pd, P.buf, len,
			       NDK_MR_FLAG_ALLOW_REMOTE_READ |
				       NDK_MR_FLAG_ALLOW_REMOTE_WRITE);

	return mr->Dispatch->NdkGetRemoteTokenFromMr(mr);
}

/* 4 GiB - 1 from a 64 KiB MR: a bounds violation, answered before a byte
 * is read or a buffer sized. */
static void test_read_request_4gib(void **state)
{
	uint8_t u[64], b[128];
	UINT32 tok;
	long rss0;
	int fd;

	P.qp = big_qp(&srv);
	tok = remote_mr(65536);
	fd = dp_raw_client_accepted(4, 0);
	rss0 = rss_kib();
	raw_send(fd, b,
		 fpdu_build(b, u,
			    read_request(u, 1, UINT32_MAX, tok,
					 (uint64_t)(uintptr_t)P.buf),
			    true));
	/* RDMAP, remote protection, base or bounds violation. */
	expect_terminate(fd, 0, 1, 0x01);
	assert_true(rss_kib() - rss0 < RSS_SLACK_KIB);
	close(fd);
}

/* One 8-byte Send (QN 0) with msn and mo into a QP with one 4 KiB
 * receive; the DDP untagged-buffer Terminate with ecode must follow. */
static void send_far_ahead(uint32_t msn, uint32_t mo, unsigned int ecode)
{
	uint8_t u[64], b[128];
	long rss0;
	int fd;

	P.qp = big_qp(&srv);
	post_recv(P.qp, 1, P.buf, 4096, P.ltok);
	fd = dp_raw_client_accepted(4, 0);
	rss0 = rss_kib();
	ddp_untagged_hdr(u, 0x41, 0x43, 0, msn, mo);
	memset(u + 18, 0x5a, 8);
	raw_send(fd, b, fpdu_build(b, u, 26, true));
	expect_terminate(fd, 1, 2, ecode);
	assert_true(rss_kib() - rss0 < RSS_SLACK_KIB);
	close(fd);
}

/* A Send whose MSN lies a million messages ahead: no receive is looked
 * for, let alone a million queued. DDP invalid MSN: range not valid. */
static void test_send_msn_far_ahead(void **state)
{
	send_far_ahead(1000000, 0, 0x03);
}

/* A Send whose message offset lies 2 GiB into a 4 KiB receive. DDP
 * invalid MO: over TCP a message's segments arrive in order, so its first
 * one starts at MO 0. */
static void test_send_offset_far_ahead(void **state)
{
	send_far_ahead(1, 0x80000000u, 0x04);
}

/*
 * 100,000 zero-length tagged Writes to a valid STag (each a no-op, RFC
 * 5040 and 6581 rely on them) as fast as the socket takes them: served
 * without growth, and the connection still carries a Send afterwards.
 */
static void test_zero_length_write_flood(void **state)
{
	enum { N = 100000, BATCH = 1000 };
	static uint8_t b[BATCH * 32];
	uint8_t u[32], f[64];
	NDK_RESULT_EX res;
	size_t n, flen;
	uint64_t t0;
	UINT32 tok;
	long rss0;
	int fd, i, k;

	P.qp = big_qp(&srv);
	tok = remote_mr(65536);
	post_recv(P.qp, 7, P.buf + 65536, 64, P.ltok);
	fd = dp_raw_client_accepted(4, 0);
	rss0 = rss_kib();
	ddp_tagged_hdr(u, 0xc1, 0x40, tok, (uint64_t)(uintptr_t)P.buf);
	flen = fpdu_build(f, u, 14, true);
	for (n = 0, k = 0; k < BATCH; k++, n += flen)
		memcpy(b + n, f, flen);
	t0 = tu_now_ms();
	for (i = 0; i < N / BATCH; i++)
		raw_send(fd, b, n);
	/* Behind them, a Send: P receives it, so every Write was parsed. */
	ddp_untagged_hdr(u, 0x41, 0x43, 0, 1, 0);
	memcpy(u + 18, "survived", 8);
	raw_send(fd, f, fpdu_build(f, u, 26, true));
	poll_one_ok(srv.cq, &res, NdkOperationTypeReceive);
	assert_int_equal((uintptr_t)res.RequestContext, 7);
	assert_memory_equal(P.buf + 65536, "survived", 8);
	print_message("%d zero-length Writes and a Send in %llu ms\n", N,
		      (unsigned long long)(tu_now_ms() - t0));
	assert_true(rss_kib() - rss0 < RSS_SLACK_KIB);
	assert_int_equal(atomic_load(&P.disc), 0);
	close(fd);
}

/* 10,000 zero-length Sends against 4 receives: 4 complete, then the
 * Terminate for a Send with no receive; nothing is queued for the rest. */
static void test_zero_length_send_flood(void **state)
{
	enum { N = 10000 };
	static uint8_t b[N * 32];
	uint8_t u[32], f[64];
	NDK_RESULT_EX res;
	size_t n = 0, flen;
	long rss0;
	int fd, i;

	P.qp = big_qp(&srv);
	for (i = 0; i < 4; i++)
		post_recv(P.qp, (uintptr_t)i, P.buf + (size_t)i * 64, 64,
			  P.ltok);
	fd = dp_raw_client_accepted(4, 0);
	rss0 = rss_kib();
	for (i = 0; i < N; i++) {
		ddp_untagged_hdr(u, 0x41, 0x43, 0, (uint32_t)i + 1, 0);
		flen = fpdu_build(f, u, 18, true);
		memcpy(b + n, f, flen);
		n += flen;
	}
	raw_send(fd, b, n);
	/* DDP, untagged buffer error, invalid MSN: no buffer available. */
	expect_terminate(fd, 1, 2, 0x02);
	for (i = 0; i < 4; i++) {
		poll_one_ok(srv.cq, &res, NdkOperationTypeReceive);
		assert_int_equal(res.BytesTransferred, 0);
	}
	assert_true(rss_kib() - rss0 < RSS_SLACK_KIB);
	close(fd);
}

/*
 * A peer that stops in the middle of a Write FPDU cannot hold our MR:
 * NdkDeregisterMr returns at once, and the rest of the FPDU, when it
 * comes, places nothing (DDP, tagged buffer, invalid STag).
 */
static void test_write_stalled_mid_fpdu(void **state)
{
	static uint8_t u[14 + 16384], b[16384 + 64];
	enum { HALF = 14 + 8000 };
	uint64_t t0;
	NDK_MR *mr;
	UINT32 tok;
	size_t n;
	int fd;

	(void)state;
	memset(P.buf, 0xa5, 65536);
	mr = reg_range(srv.pd, P.buf, 65536, NDK_MR_FLAG_ALLOW_REMOTE_WRITE);
	tok = mr->Dispatch->NdkGetRemoteTokenFromMr(mr);
	P.qp = big_qp(&srv);
	fd = dp_raw_client_accepted(4, 0);
	/* tagged, last; Write */
	ddp_tagged_hdr(u, 0xc1, 0x40, tok, (uint64_t)(uintptr_t)P.buf);
	memset(u + 14, 0x3c, 16384);
	n = fpdu_build(b, u, sizeof(u), true);
	raw_send(fd, b, 2 + HALF);
	usleep(QUIET_MS * 1000); /* P has read the header and half */
	t0 = tu_now_ms();
	assert_int_equal(mr->Dispatch->NdkDeregisterMr(mr, NULL, NULL),
			 STATUS_SUCCESS);
	if (tu_now_ms() - t0 > 1000)
		fail_msg("NdkDeregisterMr took %llu ms behind a stalled peer",
			 (unsigned long long)(tu_now_ms() - t0));
	raw_send(fd, b + 2 + HALF, n - 2 - HALF);
	expect_terminate(fd, 1, 1, 0x00);
	/* The first FPDU of a Write waits for its CRC (docs/wire.md). */
	assert_all(P.buf, 65536, 0xa5, "after the deregistration");
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_read_request_4gib,
						dp_setup_hosts, dp_teardown),
		cmocka_unit_test_setup_teardown(test_write_stalled_mid_fpdu,
						dp_setup_hosts, dp_teardown),
		cmocka_unit_test_setup_teardown(test_send_msn_far_ahead,
						dp_setup_hosts, dp_teardown),
		cmocka_unit_test_setup_teardown(test_send_offset_far_ahead,
						dp_setup_hosts, dp_teardown),
		cmocka_unit_test_setup_teardown(test_zero_length_write_flood,
						dp_setup_hosts, dp_teardown),
		cmocka_unit_test_setup_teardown(test_zero_length_send_flood,
						dp_setup_hosts, dp_teardown),
	};

	cm_software_only();
	dp_set_env();
	return cmocka_run_group_tests_name("dp_hostile", tests, NULL, NULL);
}
