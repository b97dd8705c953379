/* SPDX-License-Identifier: MIT */
/*
 * The RTR is the first message of its queue (RFC 6581 3, RFC 5041 5.1): a
 * zero-length Read RTR takes MSN 1 on QN 1, so the first Read Request of
 * the data path carries MSN 2 and a responder expects MSN 2 (Linux siw
 * sends its Read RTR through its send path, which counts it). Both sides
 * against raw peers (rawpeer_dp.h).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>
#include <unistd.h>
#include "rawpeer_dp.h"
#include "testutil.h"

/* Our Read after our Read RTR: MSN 2; the peer's answer completes it. */
static void test_initiator_read_after_read_rtr(void **state)
{
	struct dp_raw_server r;
	NDK_RESULT_EX res;
	uint8_t *sink = A.buf + (1 << 20);
	uint8_t b[1200], resp[14 + 1000];
	NDK_SGE s = sge(sink, 1000, A.ltok);
	size_t n;

	(void)state;
	memset(sink, 0, 1000);
	dp_raw_server_connect_rtr(&r, 0, MPA_READ_RTR);
	assert_int_equal(A.qp->Dispatch->NdkRead(A.qp, (PVOID)(uintptr_t)1, &s,
						 1, 0x10000, 0x77, 0),
			 STATUS_SUCCESS);
	dp_raw_expect_read_request(r.fd, 2, A.ltok, sink, 1000);

	resp[0] = 0xc1; /* tagged, last, DDP version 1 */
	resp[1] = 0x42; /* Read Response */
	put_be32(resp + 2, A.ltok);
	put_be64(resp + 6, (uint64_t)(uintptr_t)sink);
	memset(resp + 14, 0x5c, 1000);
	n = fpdu_build(b, resp, sizeof(resp), true);
	raw_send(r.fd, b, n);
	assert_int_equal(poll_cq(cli.cq, &res, 1), 1);
	expect_result(&res, 1, NdkOperationTypeRead, STATUS_SUCCESS);
	assert_all(sink, 1000, 0x5c, "Read sink");
	/* Nothing else on the wire: no Terminate. */
	assert_int_equal(raw_wait_event(r.fd, QUIET_MS), RAW_SILENT);
	dp_raw_server_close(&r);
}

/*
 * The peer's Read Request after its Read RTR carries MSN 2: answered with
 * the data, not a Terminate.
 */
static void test_responder_read_after_read_rtr(void **state)
{
	uint8_t rr[46], b[128], u[1100];
	NDK_MR *mr;
	UINT32 tok;
	size_t n;
	int fd;

	(void)state;
	fill(P.buf, 1000, 7);
	mr = reg_range(srv.pd, P.buf, 4096, NDK_MR_FLAG_ALLOW_REMOTE_READ);
	tok = mr->Dispatch->NdkGetRemoteTokenFromMr(mr);
	P.qp = big_qp(&srv);
	fd = dp_raw_client_accepted_rtr(1, 0, MPA_READ_RTR);
	ddp_untagged_hdr(rr, 0x41, 0x41, 1, 2, 0);
	put_be32(rr + 18, 0x11223344);
	put_be64(rr + 22, 0x1000);
	put_be32(rr + 30, 1000);
	put_be32(rr + 34, tok);
	put_be64(rr + 38, (uint64_t)(uintptr_t)P.buf);
	n = fpdu_build(b, rr, sizeof(rr), true);
	raw_send(fd, b, n);

	n = raw_read_fpdu(fd, u, sizeof(u), WAIT_MS);
	assert_int_equal(u[1], 0x42); /* Read Response, not a Terminate */
	assert_int_equal(n, 14 + 1000);
	assert_int_equal(get_be32(u + 2), 0x11223344);
	assert_memory_equal(u + 14, P.buf, 1000);
	assert_int_equal(raw_wait_event(fd, QUIET_MS), RAW_SILENT);
	close(fd);
	cm_close_connector(P.conn);
	cm_close_qp(P.qp);
	/* The MR goes with the PD at teardown. */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_initiator_read_after_read_rtr, dp_setup_hosts,
			dp_teardown),
		cmocka_unit_test_setup_teardown(
			test_responder_read_after_read_rtr, dp_setup_hosts,
			dp_teardown),
	};

	cm_software_only();
	dp_set_env();
	return cmocka_run_group_tests_name("dp_rtr_msn", tests, NULL, NULL);
}
