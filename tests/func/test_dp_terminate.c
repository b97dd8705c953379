/* SPDX-License-Identifier: MIT */
/*
 * Terminates on the wire, against raw peers (rawpeer_dp.h): the layer,
 * type and code we send for each refused remote access, with the
 * offending headers quoted; and a Terminate we receive (also with a
 * Send stuck half written, or mid-message): one disconnect event, no
 * flush until NdkDisconnect or NdkFlush, then STATUS_CANCELLED exactly
 * once; and NdkFlush mid-message on a connection that stays up.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include "rawpeer_dp.h"
#include "testutil.h"

enum { MR_OK, MR_NO_WRITE, MR_NO_READ, MR_OTHER_PD, MR_BAD_STAG, MR_N };

struct term_case {
	const char *name;
	bool read;
	int mr;
	int64_t off; /* from the MR's base, or TO_WRAP */
	uint8_t layer, etype, ecode;
};

#define TO_WRAP INT64_MIN /* TO 2^64 - 8: 16 bytes wrap around */

/* RFC 5041 6.4 / RFC 5040 7.1 codes. */
static const struct term_case term_cases[] = {
	{ "write one byte before the base", false, MR_OK, -1, 1, 1, 0x01 },
	{ "write one byte past the end", false, MR_OK, 65536 - 15, 1, 1, 0x01 },
	{ "write to an invalid STag", false, MR_BAD_STAG, 100, 1, 1, 0x00 },
	{ "write to another PD's MR", false, MR_OTHER_PD, 100, 1, 1, 0x02 },
	{ "write without remote write", false, MR_NO_WRITE, 100, 0, 1, 0x02 },
	{ "read without remote read", true, MR_NO_READ, 100, 0, 1, 0x02 },
	{ "read one byte past the end", true, MR_OK, 65536 - 15, 0, 1, 0x01 },
	{ "read from another PD's MR", true, MR_OTHER_PD, 100, 0, 1, 0x03 },
	{ "read from an invalid STag", true, MR_BAD_STAG, 100, 0, 1, 0x00 },
	{ "write with a wrapping TO", false, MR_OK, TO_WRAP, 1, 1, 0x03 },
	{ "read with a wrapping TO", true, MR_OK, TO_WRAP, 0, 1, 0x04 },
};

static void test_terminate_codes_on_wire(void **state)
{
	static const ULONG flags[MR_N] = {
		[MR_OK] = NDK_MR_FLAG_ALLOW_REMOTE_WRITE |
			  NDK_MR_FLAG_ALLOW_REMOTE_READ,
		[MR_NO_WRITE] = NDK_MR_FLAG_ALLOW_LOCAL_WRITE |
				NDK_MR_FLAG_ALLOW_REMOTE_READ,
		[MR_NO_READ] = NDK_MR_FLAG_ALLOW_REMOTE_WRITE,
		[MR_OTHER_PD] = NDK_MR_FLAG_ALLOW_REMOTE_WRITE |
				NDK_MR_FLAG_ALLOW_REMOTE_READ,
	};
	uint8_t *base[MR_N];
	UINT32 tok[MR_N];
	uint8_t *area = P.buf + 65536 - GUARD;
	size_t area_len = 4 * 131072 + GUARD;
	NDK_PD *pd2;
	size_t i;
	int m;

	assert_int_equal(
		srv.ad->Dispatch->NdkCreatePd(srv.ad, NULL, NULL, &pd2),
		STATUS_SUCCESS);
	/* Four 64 KiB MRs, 64 KiB apart, with guard room around each. */
	for (m = 0; m < MR_N; m++) {
		NDK_MR *mr;

		if (m == MR_BAD_STAG) {
			base[m] = base[MR_OK];
			tok[m] = tok[MR_OK] ^ 0x00ffff00;
			continue;
		}
		base[m] = P.buf + 65536 + (size_t)m * 131072;
		mr = reg_range(m == MR_OTHER_PD ? pd2 : srv.pd, base[m], 65536,
			       flags[m]);
		tok[m] = mr->Dispatch->NdkGetRemoteTokenFromMr(mr);
	}
	memset(area, 0xa5, area_len);
	for (i = 0; i < sizeof(term_cases) / sizeof(term_cases[0]); i++) {
		const struct term_case *tc = &term_cases[i];
		uint8_t u[128], b[256], t[256];
		size_t ulen, n, tlen;
		uint64_t to = tc->off == TO_WRAP
				      ? UINT64_MAX - 7
				      : (uint64_t)(uintptr_t)base[tc->mr] +
						(uint64_t)tc->off;
		uint32_t ctrl;
		int fd;

		print_message("case: %s\n", tc->name);
		P.qp = big_qp(&srv);
		fd = dp_raw_client_accepted(4, 0);
		if (tc->read) {
			/* Sink 0x11223344:0x1000, 16 bytes, MSN 1 on QN 1. */
			ulen = ddp_untagged_hdr(u, 0x41, 0x41, 1, 1, 0);
			put_be32(u + 18, 0x11223344);
			put_be64(u + 22, 0x1000);
			put_be32(u + 30, 16);
			put_be32(u + 34, tok[tc->mr]);
			put_be64(u + 38, to);
			ulen = 46;
		} else {
			u[0] = 0xc1;
			u[1] = 0x40;
			put_be32(u + 2, tok[tc->mr]);
			put_be64(u + 6, to);
			memset(u + 14, 0x3c, 16);
			ulen = 30;
		}
		n = fpdu_build(b, u, ulen, true);
		raw_send(fd, b, n);

		/* The Terminate: QN 2, MSN 1, MO 0, L, and the cause. */
		tlen = raw_read_fpdu(fd, t, sizeof(t), WAIT_MS);
		assert_true(tlen >= 22);
		assert_int_equal(t[0], 0x41);
		assert_int_equal(t[1], 0x47);
		assert_int_equal(get_be32(t + 6), 2);
		assert_int_equal(get_be32(t + 10), 1);
		assert_int_equal(get_be32(t + 14), 0);
		ctrl = get_be32(t + 18);
		if (ctrl >> 28 != tc->layer ||
		    (ctrl >> 24 & 0xf) != tc->etype ||
		    (ctrl >> 16 & 0xff) != tc->ecode)
			fail_msg("%s: Terminate layer %u etype %u code %#x, "
				 "expected %u %u %#x",
				 tc->name, ctrl >> 28, ctrl >> 24 & 0xf,
				 ctrl >> 16 & 0xff, tc->layer, tc->etype,
				 tc->ecode);
		/* D: the offending DDP header is quoted (and R its body). */
		assert_true(ctrl & 0x4000);
		assert_true(tlen >= 24 + (tc->read ? 18u : 14u));
		if (ctrl & 0x8000)
			assert_int_equal(get_be16(t + 22), ulen);
		assert_memory_equal(t + 24, u, tc->read ? 18 : 14);
		if (tc->read) {
			assert_true(ctrl & 0x2000);
			assert_int_equal(tlen, 24 + 18 + 28);
			assert_memory_equal(t + 42, u + 18, 28);
		}
		/* Then only the end of the stream. */
		assert_int_equal(raw_wait_event(fd, WAIT_MS), RAW_EOF);
		if (!tu_wait_until(disc_seen, &P, WAIT_MS))
			fail_msg("%s: no disconnect event", tc->name);
		close(fd);
		tu_sleep_ms(10);
		assert_int_equal(atomic_load(&P.disc), 1);
		/* A Terminate (ours) ended it: the event's reason says so. */
		assert_int_equal(atomic_load(&P.disc_reason),
				 (ULONG)STATUS_CONNECTION_ABORTED);
		assert_all(area, area_len, 0xa5, tc->name);
		cm_close_connector(P.conn);
		cm_close_qp(P.qp);
	}
}

/* The raw server sends a Terminate (RDMAP, remote operation,
 * catastrophic local to the stream: 0x07); A sees its disconnect event. */
static void peer_terminates(struct dp_raw_server *r)
{
	uint8_t b[64];
	size_t n = fpdu_terminate(b, 0, 2, 0x07);

	raw_send(r->fd, b, n);
	if (!tu_wait_until(disc_seen, &A, WAIT_MS))
		fail_msg("no disconnect event");
}

/* A connects to a raw server, then posts receives 1 to 3 of 4 KiB. */
static void connect_with_receives(struct dp_raw_server *r)
{
	dp_raw_server_connect(r, 0);
	for (int i = 1; i <= 3; i++)
		post_recv(A.qp, (uintptr_t)i, A.buf + (size_t)i * 4096, 4096,
			  A.ltok);
}

static void terminated_by_peer(bool flush_first)
{
	struct dp_raw_server r;
	NDK_RESULT_EX res[8];
	NDK_SGE s;
	size_t n;
	int i;

	connect_with_receives(&r);
	/* A Read the peer will never answer. */
	s = sge(A.buf + 65536, 64, A.ltok);
	assert_int_equal(A.qp->Dispatch->NdkRead(A.qp, (PVOID)10, &s, 1, 0x1000,
						 0x99, 0),
			 STATUS_SUCCESS);
	dp_raw_expect_read_request(r.fd, 1, A.ltok, A.buf + 65536, 64);

	/* RDMAP / Remote Operation / catastrophic, local to the stream. */
	peer_terminates(&r);
	/* No Terminate in answer: just the end of the stream. */
	assert_int_equal(raw_wait_event(r.fd, WAIT_MS), RAW_EOF);
	/* A peer's disconnect does not flush (the consumer's NdkDisconnect
	 * or NdkFlush does: NDK_FN_DISCONNECT_EVENT_CALLBACK). */
	assert_cq_quiet(cli.cq);
	assert_int_equal(atomic_load(&A.disc), 1);

	if (flush_first) {
		A.qp->Dispatch->NdkFlush(A.qp);
		assert_int_equal(poll_cq(cli.cq, res, 4), 4);
		assert_cq_quiet(cli.cq);
		disconnect(A.conn);
	} else {
		disconnect(A.conn);
		assert_int_equal(poll_cq(cli.cq, res, 4), 4);
	}
	/* Receives in order, and the Read, each once, cancelled. */
	for (i = 0, n = 1; i < 4; i++) {
		if (res[i].Type == NdkOperationTypeRead) {
			expect_result(&res[i], 10, NdkOperationTypeRead,
				      STATUS_CANCELLED);
			continue;
		}
		expect_result(&res[i], n++, NdkOperationTypeReceive,
			      STATUS_CANCELLED);
	}
	assert_int_equal(n, 4);
	cm_close_connector(A.conn);
	assert_cq_quiet(cli.cq);
	assert_int_equal(atomic_load(&A.disc), 1);
	dp_raw_server_close(&r);
}

static void test_terminate_received_disconnect(void **state)
{
	terminated_by_peer(false);
}

static void test_terminate_received_flush(void **state)
{
	terminated_by_peer(true);
}

/*
 * The peer stops reading, so a large Send stays half written; then it
 * Terminates. The Send and the one queued behind it complete only at
 * NdkDisconnect, cancelled, once each.
 */
static void test_terminate_while_sending(void **state)
{
	struct dp_raw_server r;
	NDK_RESULT_EX res[4];

	dp_raw_server_connect(&r, 4096);
	post_send(A.qp, 1, A.buf, A.len, A.ltok, 0);
	post_send(A.qp, 2, A.buf, 10, A.ltok, 0);
	assert_cq_quiet(cli.cq);
	peer_terminates(&r);
	assert_cq_quiet(cli.cq);
	disconnect(A.conn);
	assert_int_equal(poll_cq(cli.cq, res, 2), 2);
	expect_result(&res[0], 1, NdkOperationTypeSend, STATUS_CANCELLED);
	expect_result(&res[1], 2, NdkOperationTypeSend, STATUS_CANCELLED);
	cm_close_connector(A.conn);
	assert_cq_quiet(cli.cq);
	assert_int_equal(atomic_load(&A.disc), 1);
	dp_raw_server_close(&r);
}

/*
 * Guards against a fixed bug, "taken receive never flushed": a receive
 * the data path took for a Send whose last segment never came (the peer
 * sent a Terminate, or closed, mid-message) was skipped by NdkFlush and
 * NdkDisconnect (src/sw/qp.c rq_flush marked only the untaken ones), so
 * neither it nor any receive posted after it completed until NdkCloseQp.
 */
static void test_terminate_mid_message(void **state)
{
	struct dp_raw_server r;
	NDK_RESULT_EX res[4];
	uint8_t u[128], b[256];
	size_t n;
	int i;

	connect_with_receives(&r);
	/* The first segment of a Send (no L), then a Terminate. */
	ddp_untagged_hdr(u, 0x01, 0x43, 0, 1, 0);
	memset(u + 18, 0x3c, 100);
	n = fpdu_build(b, u, 118, true);
	raw_send(r.fd, b, n);
	peer_terminates(&r);
	assert_cq_quiet(cli.cq);
	disconnect(A.conn);
	n = poll_cq(cli.cq, res, 3);
	if (n != 3)
		fail_msg("%zu of 3 receives completed after NdkDisconnect", n);
	for (i = 0; i < 3; i++) {
		assert_ptr_equal(res[i].RequestContext,
				 (PVOID)(uintptr_t)(i + 1));
		assert_int_not_equal(res[i].Status, STATUS_SUCCESS);
	}
	assert_cq_quiet(cli.cq);
	dp_raw_server_close(&r);
}

/*
 * NdkFlush on a live connection while a Send is mid-message: its first
 * segment placed into receive 1, the rest never sent (a peer that went
 * silent). Every receive completes cancelled at once, the one in
 * progress included; the rest of that Send, arriving after the flush,
 * lands nowhere, and the next Send finds the receive posted after it.
 * Guards against a fixed bug: the flush waited behind the receive in
 * progress for as long as the peer said nothing (ndknvme against a
 * silent nvmet, tests/interop/README.md).
 */
static void test_flush_mid_message_live(void **state)
{
	struct dp_raw_server r;
	NDK_RESULT_EX res[4];
	uint8_t u[128], b[256], t[128], *rbuf = A.buf + 4096;
	NDK_MR *mr;
	size_t n;
	int i;

	memset(rbuf, 0xa5, 4096);
	mr = reg_range(cli.pd, A.buf + 65536, 4096,
		       NDK_MR_FLAG_ALLOW_REMOTE_READ);
	connect_with_receives(&r);
	ddp_untagged_hdr(u, 0x01, 0x43, 0, 1, 0);
	memset(u + 18, 0x3c, 100);
	n = fpdu_build(b, u, 118, true);
	raw_send(r.fd, b, n);
	/* A Read Request behind it: its Response says A has taken the
	 * segment (FPDUs are processed in order). */
	ddp_untagged_hdr(u, 0x41, 0x41, 1, 1, 0);
	put_be32(u + 18, 0x11223344);
	put_be64(u + 22, 0x1000);
	put_be32(u + 30, 16);
	put_be32(u + 34, mr->Dispatch->NdkGetRemoteTokenFromMr(mr));
	put_be64(u + 38, (uint64_t)(uintptr_t)(A.buf + 65536));
	n = fpdu_build(b, u, 46, true);
	raw_send(r.fd, b, n);
	n = raw_read_fpdu(r.fd, t, sizeof(t), WAIT_MS);
	assert_true(n >= 14 && t[1] == 0x42);
	assert_cq_quiet(cli.cq);
	A.qp->Dispatch->NdkFlush(A.qp);
	n = poll_cq(cli.cq, res, 3);
	if (n != 3)
		fail_msg("%zu of 3 receives completed after NdkFlush", n);
	for (i = 0; i < 3; i++)
		expect_result(&res[i], (uintptr_t)i + 1,
			      NdkOperationTypeReceive, STATUS_CANCELLED);
	/* The last segment of that Send, late: dropped, the connection
	 * goes on. */
	ddp_untagged_hdr(u, 0x41, 0x43, 0, 1, 100);
	memset(u + 18, 0x5a, 100);
	n = fpdu_build(b, u, 118, true);
	raw_send(r.fd, b, n);
	/* The next Send (MSN 2) lands in a receive posted after the flush. */
	post_recv(A.qp, 4, A.buf + 4 * 4096, 4096, A.ltok);
	ddp_untagged_hdr(u, 0x41, 0x43, 0, 2, 0);
	memset(u + 18, 0x77, 50);
	n = fpdu_build(b, u, 68, true);
	raw_send(r.fd, b, n);
	assert_int_equal(poll_cq(cli.cq, res, 1), 1);
	expect_received(&res[0], 4, A.buf + 4 * 4096, u + 18, 50);
	assert_all(rbuf + 100, 4096 - 100, 0xa5, "after the flush");
	assert_cq_quiet(cli.cq);
	assert_int_equal(atomic_load(&A.disc), 0);
	dp_raw_server_close(&r);
	if (!tu_wait_until(disc_seen, &A, WAIT_MS))
		fail_msg("no disconnect event");
	disconnect(A.conn);
	assert_cq_quiet(cli.cq);
}

/* How the peer left is the disconnect event's reason: a FIN 0, a reset
 * STATUS_CONNECTION_RESET (docs/ndk.md, Disconnect). */
static void test_disconnect_reason_fin_and_reset(void **state)
{
	static const struct {
		bool reset;
		NTSTATUS reason;
	} ends[] = { { false, STATUS_SUCCESS },
		     { true, STATUS_CONNECTION_RESET } };
	size_t i;
	int fd;

	for (i = 0; i < sizeof(ends) / sizeof(ends[0]); i++) {
		P.qp = big_qp(&srv);
		fd = dp_raw_client_accepted(4, 0);
		if (ends[i].reset)
			raw_close_rst(fd);
		else
			close(fd);
		if (!tu_wait_until(disc_seen, &P, WAIT_MS))
			fail_msg("no disconnect event");
		assert_int_equal(atomic_load(&P.disc_reason),
				 (ULONG)ends[i].reason);
		cm_close_connector(P.conn);
		cm_close_qp(P.qp);
	}
}

/*
 * Guards against a bug the live fuzzer (tests/fuzz/fuzz_live.c) found,
 * "disconnect waits out a peer that already left": while NdkDisconnect
 * waited for the peer's FIN, a Terminate or a reset from the peer went
 * unnoticed, so the disconnect completed only at NDK_CM_TIMEOUT_MS (10 s)
 * with STATUS_IO_TIMEOUT. It completes at once now, and flushes.
 */
static void test_disconnect_ends_on_terminate_or_reset(void **state)
{
	int reset;

	for (reset = 0; reset < 2; reset++) {
		struct dp_raw_server r;
		NDK_RESULT_EX res[4];
		struct cm_req d;
		uint8_t b[64];
		size_t n;
		int i;

		print_message("case: %s\n", reset ? "reset" : "Terminate");
		connect_with_receives(&r);
		cm_req_init(&d);
		assert_int_equal(A.conn->Dispatch->NdkDisconnect(
					 A.conn, cm_req_done, &d),
				 STATUS_PENDING);
		assert_int_equal(raw_wait_event(r.fd, WAIT_MS), RAW_EOF);
		if (reset) {
			raw_close_rst(r.fd);
			r.fd = -1;
		} else {
			n = fpdu_terminate(b, 0, 2, 0x07);
			raw_send(r.fd, b, n);
		}
		assert_int_equal(cm_req_wait(&d, 5000), STATUS_SUCCESS);
		assert_int_equal(poll_cq(cli.cq, res, 3), 3);
		for (i = 0; i < 3; i++)
			expect_result(&res[i], (uintptr_t)(i + 1),
				      NdkOperationTypeReceive,
				      STATUS_CANCELLED);
		/* Our own disconnect: no disconnect event. */
		assert_int_equal(atomic_load(&A.disc), 0);
		cm_close_connector(A.conn);
		assert_cq_quiet(cli.cq);
		dp_raw_server_close(&r);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_terminate_codes_on_wire,
						dp_setup_hosts, dp_teardown),
		cmocka_unit_test_setup_teardown(
			test_terminate_received_disconnect, dp_setup_hosts,
			dp_teardown),
		cmocka_unit_test_setup_teardown(test_terminate_received_flush,
						dp_setup_hosts, dp_teardown),
		cmocka_unit_test_setup_teardown(test_terminate_while_sending,
						dp_setup_hosts, dp_teardown),
		cmocka_unit_test_setup_teardown(test_terminate_mid_message,
						dp_setup_hosts, dp_teardown),
		cmocka_unit_test_setup_teardown(test_flush_mid_message_live,
						dp_setup_hosts, dp_teardown),
		cmocka_unit_test_setup_teardown(
			test_disconnect_reason_fin_and_reset, dp_setup_hosts,
			dp_teardown),
		cmocka_unit_test_setup_teardown(
			test_disconnect_ends_on_terminate_or_reset,
			dp_setup_hosts, dp_teardown),
	};

	cm_software_only();
	dp_set_env();
	return cmocka_run_group_tests_name("dp_terminate", tests, NULL, NULL);
}
