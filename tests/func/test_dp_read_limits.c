/* SPDX-License-Identifier: MIT */
/*
 * RDMA Read limits against raw peers (rawpeer_dp.h): a peer that exceeds
 * our IRD gets a Terminate (RFC 5040 6.6); Reads beyond our ORD wait
 * their turn, and NdkFlush cancels them all, sent or not, with nothing
 * placed by a late Read Response.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>
#include <unistd.h>
#include "rawpeer_dp.h"
#include "testutil.h"

/*
 * A peer that exceeds our IRD (RFC 5040 6.6): the raw client offers ORD 1,
 * so P answers one Read at a time. It reads nothing while its first Read
 * (4 MiB) is being answered and sends a second one: P sends a Terminate
 * (RDMAP, remote operation, catastrophic local to the stream: 0x07)
 * quoting it, after the Read Response FPDU in progress, then nothing more;
 * the connection ends and P's posted receive completes once, cancelled.
 */
static void test_read_beyond_ird(void **state)
{
	static uint8_t u[70000];
	uint8_t rr[2][64], b[256];
	size_t n, ulen, responses = 0;
	NDK_RESULT_EX res[2];
	NDK_MR *mr;
	UINT32 tok;
	uint32_t ctrl;
	int fd, k;

	mr = reg_range(srv.pd, P.buf, 4 << 20, NDK_MR_FLAG_ALLOW_REMOTE_READ);
	tok = mr->Dispatch->NdkGetRemoteTokenFromMr(mr);
	P.qp = big_qp(&srv);
	post_recv(P.qp, 77, P.buf + (4 << 20), 64, P.ltok);
	fd = dp_raw_client_accepted(1, 4096);
	for (k = 0; k < 2; k++) {
		ddp_untagged_hdr(rr[k], 0x41, 0x41, 1, (uint32_t)k + 1, 0);
		put_be32(rr[k] + 18, 0x11223344);
		put_be64(rr[k] + 22, 0x1000);
		put_be32(rr[k] + 30, k ? 16 : 4 << 20);
		put_be32(rr[k] + 34, tok);
		put_be64(rr[k] + 38, (uint64_t)(uintptr_t)P.buf);
	}
	n = fpdu_build(b, rr[0], 46, true);
	raw_send(fd, b, n);
	/* The first Response is under way (and stuck: we do not read). */
	tu_sleep_ms(QUIET_MS);
	n = fpdu_build(b, rr[1], 46, true);
	raw_send(fd, b, n);

	/* Read Response FPDUs (tagged, opcode 2), then the Terminate. */
	for (;;) {
		ulen = raw_read_fpdu(fd, u, sizeof(u), WAIT_MS);
		if (!(u[0] & 0x80))
			break;
		assert_int_equal(u[1] & 0x0f, 2); /* Read Response */
		assert_true(++responses < (4u << 20) / 512);
	}
	assert_true(ulen >= 22);
	assert_int_equal(u[1], 0x47);
	assert_int_equal(get_be32(u + 6), 2);
	ctrl = get_be32(u + 18);
	assert_int_equal(ctrl >> 28, 0); /* RDMAP */
	assert_int_equal(ctrl >> 24 & 0xf, 2); /* remote operation */
	assert_int_equal(ctrl >> 16 & 0xff, 0x07);
	/* D: the second Read Request's header is quoted. */
	assert_true(ctrl & 0x4000);
	assert_memory_equal(u + 24, rr[1], 18);
	/* The first Read was not finished, and nothing follows. */
	assert_true(responses < (4u << 20) / 1024);
	assert_int_equal(raw_wait_event(fd, WAIT_MS), RAW_EOF);
	if (!tu_wait_until(disc_seen, &P, WAIT_MS))
		fail_msg("no disconnect event");
	close(fd);

	/* No implicit flush; NdkDisconnect completes the receive once. */
	assert_cq_quiet(srv.cq);
	disconnect(P.conn);
	assert_int_equal(poll_cq(srv.cq, res, 1), 1);
	expect_result(&res[0], 77, NdkOperationTypeReceive, STATUS_CANCELLED);
	assert_cq_quiet(srv.cq);
	assert_int_equal(atomic_load(&P.disc), 1);
	cm_close_connector(P.conn);
	cm_close_qp(P.qp);
}

static void test_flush_reads_outstanding(void **state)
{
	enum { NREAD = 6 }; /* ORD is 4: two wait their turn */
	struct dp_raw_server r;
	NDK_RESULT_EX res[NREAD];
	uint8_t *sink = A.buf + (1 << 20);
	uint8_t u[1100], b[1200];
	size_t n;
	int i;

	memset(sink, 0xa5, NREAD * 4096);
	dp_raw_server_connect(&r, 0);
	for (i = 0; i < NREAD; i++) {
		NDK_SGE s = sge(sink + i * 4096, 1000, A.ltok);

		assert_int_equal(A.qp->Dispatch->NdkRead(
					 A.qp, (PVOID)(uintptr_t)(i + 1), &s, 1,
					 0x10000 + (UINT64)i * 4096, 0x77, 0),
				 STATUS_SUCCESS);
	}
	for (i = 0; i < 4; i++)
		dp_raw_expect_read_request(r.fd, (uint32_t)i + 1, A.ltok,
					   sink + i * 4096, 1000);
	assert_int_equal(raw_wait_event(r.fd, QUIET_MS), RAW_SILENT);
	assert_cq_quiet(cli.cq);

	A.qp->Dispatch->NdkFlush(A.qp);
	assert_int_equal(poll_cq(cli.cq, res, NREAD), NREAD);
	for (i = 0; i < NREAD; i++)
		expect_result(&res[i], (uintptr_t)i + 1, NdkOperationTypeRead,
			      STATUS_CANCELLED);
	assert_cq_quiet(cli.cq);
	/* The two that waited were never sent. */
	assert_int_equal(raw_wait_event(r.fd, QUIET_MS), RAW_SILENT);

	/*
	 * The peer answers the first Read late: it must not land in the
	 * sink of the cancelled request (the provider may end the
	 * connection for it).
	 */
	u[0] = 0xc1;
	u[1] = 0x42;
	put_be32(u + 2, A.ltok);
	put_be64(u + 6, (uint64_t)(uintptr_t)sink);
	memset(u + 14, 0x3c, 1000);
	n = fpdu_build(b, u, 1014, true);
	raw_send(r.fd, b, n);
	tu_wait_until(disc_seen, &A, 500);
	assert_cq_quiet(cli.cq);
	cm_close_connector(A.conn);
	cm_close_qp(A.qp);
	assert_cq_quiet(cli.cq);
	assert_all(sink, NREAD * 4096, 0xa5, "read sink");
	assert_true(atomic_load(&A.disc) <= 1);
	dp_raw_server_close(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_read_beyond_ird,
						dp_setup_hosts, dp_teardown),
		cmocka_unit_test_setup_teardown(test_flush_reads_outstanding,
						dp_setup_hosts, dp_teardown),
	};

	cm_software_only();
	dp_set_env();
	return cmocka_run_group_tests_name("dp_read_limits", tests, NULL, NULL);
}
