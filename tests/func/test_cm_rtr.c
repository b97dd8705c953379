/* SPDX-License-Identifier: MIT */
/*
 * The RTR step of RFC 6581 against raw MPA peers (rawpeer_cm.h): wrong
 * RTRs end the Accept, the right one of each type completes it; the RTR
 * we send as initiator, byte for byte; the RTR nudge (NDK_RTR_NUDGE_MS),
 * its cancellation, and libndk on both ends with it on; and peers with no
 * RTR at all (MPA v1, RFC 5044, or Rev 2 without S), which we speak to
 * first after NDK_ACCEPT_GRACE_MS; and the establishment timer of an
 * initiator whose responder replied and went silent.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "rawpeer_cm.h"
#include "testutil.h"

static void test_crc32c_vector(void **state)
{
	/* The check value of CRC-32C (RFC 3720 B.4). */
	assert_int_equal(crc32c((const uint8_t *)"123456789", 9), 0xe3069283u);
}

/* ------------------------------------------------------------------ */
/* Passive side: the RTR after our Reply                              */

/* The right Write RTR with a payload: not a zero-length Write. */
static const uint8_t ulpdu_write_with_data[18] = {
	0xc1, 0x40, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 'd', 'a', 't', 'a',
};

/* What a raw initiator sends as its RTR after our Reply (which chose the
 * Write RTR). */
static const struct raw_case wrong_rtrs[] = {
	{ .name = "a zero-length Send where the Write was chosen",
	  .send = { RAW_FPDU_OF(ulpdu_send_rtr) } },
	{ .name = "a zero-length Read Request where the Write was chosen",
	  .send = { RAW_FPDU_OF(ulpdu_read_rtr) } },
	{ .name = "the right Write, but its CRC off by one bit",
	  .send = { RAW_BAD_CRC_OF(ulpdu_write_rtr) } },
	{ .name = "a Write with a payload",
	  .send = { RAW_FPDU_OF(ulpdu_write_with_data) } },
	{ .name = "ULPDU_Length 0xffff: far more than any RTR",
	  .send = { RAW_REPEAT(0xff, 64) } },
	{ .name = "ULPDU_Length 0: no DDP header at all",
	  .send = { RAW_FPDU_EMPTY } },
	{ .name = "an MPA Request again instead of an FPDU",
	  .send = { RAW_ARRAY(mpa_req_v2) } },
	{ .name = NULL },
};

/* The consumer accepted; the raw client sends each case as its RTR. */
static void wrong_rtr(struct passive *p, const void *cases)
{
	for (const struct raw_case *w = cases; w->name; w++) {
		struct raw_accepted r;
		uint8_t bad[64];
		size_t len = raw_build(bad, sizeof(bad), w->send);
		NTSTATUS st;

		passive_raw_accepted(p, mpa_req_v2, sizeof(mpa_req_v2), &r);
		assert_p2p_write_reply(&r.rep);
		raw_send(r.fd, bad, len);
		st = cm_req_wait(&r.acc, WAIT_MS);
		if (st != STATUS_CONNECTION_ABORTED)
			fail_msg("%s: Accept %#x, expected "
				 "STATUS_CONNECTION_ABORTED",
				 w->name, (unsigned int)st);
		raw_assert_dropped(r.fd, WAIT_MS, w->name);
		close(r.fd);
		cm_close_connector(r.c);
		cm_close_qp(r.qp);
	}
}
RAWCM_PASSIVE(test_passive_wrong_rtr, wrong_rtr, wrong_rtrs);

/* Controls: the right RTR completes the Accept, for each RTR type. */
struct rtr_case {
	const char *name;
	unsigned int offer_ird, offer_ord; /* RTR bits of the Request */
	unsigned int want_ird, want_ord; /* and of our Reply */
	const uint8_t *ulpdu;
	size_t len;
};

static const struct rtr_case good_rtrs[] = {
	{ "Write and Read offered: the Write", 0, MPA_WRITE_RTR | MPA_READ_RTR,
	  0, MPA_WRITE_RTR, ulpdu_write_rtr, sizeof(ulpdu_write_rtr) },
	{ "Read offered", 0, MPA_READ_RTR, 0, MPA_READ_RTR, ulpdu_read_rtr,
	  sizeof(ulpdu_read_rtr) },
	{ "Send offered", MPA_SEND_RTR, 0, MPA_SEND_RTR, 0, ulpdu_send_rtr,
	  sizeof(ulpdu_send_rtr) },
	{ NULL, 0, 0, 0, 0, NULL, 0 },
};

static void good_rtr(struct passive *p, const void *cases)
{
	/* A zero-length Read Response to the sink STag and TO of
	 * ulpdu_read_rtr. */
	static const uint8_t read_resp[14] = { 0xc1, 0x42, 0x11, 0x22, 0x33,
					       0x44, 0x01, 0x02, 0x03, 0x04,
					       0x05, 0x06, 0x07, 0x08 };

	for (const struct rtr_case *g = cases; g->name; g++) {
		uint8_t req[32], b[64], resp[20];
		struct cm_req acc;
		struct mpa_msg rep;
		NDK_CONNECTOR *c;
		NDK_QP *qp;
		size_t n;
		int fd;

		print_message("case: %s\n", g->name);
		n = mpa_frame(req, MPA_KEY_REQ, MPA_IRD_ORD | MPA_CRC, 2, true,
			      MPA_P2P | g->offer_ird | 4, g->offer_ord | 4,
			      "hi", 2);
		c = passive_raw_request(p, &fd, req, n);
		qp = passive_accept_read_reply(p, c, fd, &acc, &rep);
		assert_int_equal(get_be16(rep.pd) & 0xc000,
				 MPA_P2P | g->want_ird);
		assert_int_equal(get_be16(rep.pd + 2) & 0xc000, g->want_ord);
		assert_true(rep.hdr[16] & MPA_CRC); /* CRC on: we sent C */
		n = fpdu_build(b, g->ulpdu, g->len, true);
		raw_send(fd, b, n);
		assert_int_equal(cm_req_wait(&acc, WAIT_MS), STATUS_SUCCESS);
		if (g->ulpdu == ulpdu_read_rtr) {
			assert_int_equal(raw_recv(fd, resp, 20, WAIT_MS), 20);
			n = fpdu_build(b, read_resp, sizeof(read_resp), true);
			assert_memory_equal(resp, b, 20);
		}
		/* Nothing else comes before we send data. */
		assert_int_equal(raw_wait_event(fd, 50), RAW_SILENT);
		cm_close_connector(c);
		assert_int_equal(raw_wait_event(fd, WAIT_MS), RAW_EOF);
		close(fd);
		cm_close_qp(qp);
	}
}
RAWCM_PASSIVE(test_passive_good_rtr, good_rtr, good_rtrs);

/*
 * An MPA v1 (RFC 5044) initiator: no IRD/ORD block, no RTR. Accepted; the
 * Reply is Rev 1 without S, and the Accept completes once the Reply is
 * out, without an FPDU from the initiator (siw without peer_to_peer sends
 * none before a server that speaks first, e.g. ucmatose's): we may send
 * first, and the initiator's first FPDU is ordinary data. Also Rev 2
 * without S: a v2 peer not using RFC 6581.
 */
static bool cq_has_one(void *arg)
{
	struct cm_host *h = arg;
	NDK_RESULT r;

	return h->cq->Dispatch->NdkGetCqResults(h->cq, &r, 1) == 1 &&
	       r.Status == STATUS_SUCCESS;
}

struct v1_case {
	const char *name;
	struct raw_part send[2];
	uint8_t rev; /* of the Request, and so of our Reply */
};

static const struct v1_case v1_peers[] = {
	{ .name = "MPA v1", .send = { RAW_ARRAY(mpa_req_v1) }, .rev = 1 },
	{ .name = "Rev 2 without S",
	  .send = { RAW_MPA(MPA_KEY_REQ, MPA_CRC, 2, false, 0, 0, "v2", 2) },
	  .rev = 2 },
	{ .name = NULL },
};

static void v1_peer(struct passive *p, const void *cases)
{
	for (const struct v1_case *v = cases; v->name; v++) {
		struct cm_req acc;
		struct mpa_msg rep;
		NDK_CONNECTOR *c;
		NDK_QP *qp;
		ULONG ird = 0, ord = 0, pdlen = 0;
		uint8_t req[32], b[64];
		size_t n = raw_build(req, sizeof(req), v->send);
		int fd;

		print_message("case: %s\n", v->name);
		c = passive_raw_request(p, &fd, req, n);
		assert_int_equal(c->Dispatch->NdkGetConnectionData(
					 c, &ird, &ord, NULL, &pdlen),
				 STATUS_SUCCESS);
		assert_int_equal(pdlen, 2); /* no block to strip */
		/* No IRD/ORD from an MPA v1 peer: assumed 1/1, as siw runs. */
		assert_int_equal(ird, 1);
		assert_int_equal(ord, 1);
		qp = passive_accept_read_reply(p, c, fd, &acc, &rep);
		assert_int_equal(rep.hdr[17], v->rev);
		assert_false(rep.hdr[16] & MPA_IRD_ORD);
		assert_int_equal(rep.pd_len, 2);
		assert_memory_equal(rep.pd, "ok", 2);
		/* Up without a word from the initiator, NDK_ACCEPT_GRACE_MS
		 * after the Reply (not at once: our first FPDU must not share
		 * the Reply's segment, siw drops such a connection)... */
		assert_int_equal(cm_req_wait(&acc, GRACE_MS / 2), (NTSTATUS)-1);
		assert_int_equal(cm_req_wait(&acc, WAIT_MS), STATUS_SUCCESS);
		/* ...so we speak first: a zero-length Send reaches the peer. */
		assert_int_equal(qp->Dispatch->NdkSend(qp, NULL, NULL, 0, 0),
				 STATUS_SUCCESS);
		/* The header, and the CRC if on. */
		n = 2 + 18 + (rep.hdr[16] & MPA_CRC ? 4 : 0);
		assert_true(raw_recv(fd, b, n, WAIT_MS) == (ssize_t)n);
		/* ULPDU: an untagged header. */
		assert_int_equal(b[0] << 8 | b[1], 18);
		/* The initiator's first FPDU is data: a zero-length Send into
		 * a posted receive, not a handshake step. */
		assert_int_equal(qp->Dispatch->NdkReceive(qp, NULL, NULL, 0),
				 STATUS_SUCCESS);
		n = fpdu_build(b, ulpdu_send_rtr, sizeof(ulpdu_send_rtr), true);
		raw_send(fd, b, n);
		assert_true(tu_wait_until(cq_has_one, &p->h, WAIT_MS));
		cm_close_connector(c);
		raw_assert_dropped(fd, WAIT_MS, v->name);
		close(fd);
		cm_close_qp(qp);
	}
}
RAWCM_PASSIVE(test_passive_v1, v1_peer, v1_peers);

/* A v1 initiator that stays silent after the Reply is connected all the
 * same; one that then leaves ends the connection, and nothing leaks. */
static void passive_v1_leaves(struct passive *p, const void *unused)
{
	struct raw_accepted r;

	passive_raw_accepted(p, mpa_req_v1, sizeof(mpa_req_v1), &r);
	assert_int_equal(cm_req_wait(&r.acc, WAIT_MS), STATUS_SUCCESS);
	close(r.fd);
	cm_close_connector(r.c);
	cm_close_qp(r.qp);
}
RAWCM_PASSIVE(test_passive_v1_leaves, passive_v1_leaves, NULL);

/* ------------------------------------------------------------------ */
/* Active side: our RTR, and the nudge                                */

static void active_good(struct active *a, const void *unused)
{
	uint8_t buf[64];

	active_reply(a, false);
	assert_int_equal(raw_wait_event(a->sfd, 20), RAW_SILENT);
	assert_int_equal(a->c->Dispatch->NdkCompleteConnect(a->c, NULL, NULL,
							    NULL, NULL),
			 STATUS_SUCCESS);
	/* The zero-length Write RTR, STag 1, with CRC (C was set). */
	raw_expect_write_rtr(a->sfd, buf, WAIT_MS);
	assert_int_equal(raw_wait_event(a->sfd, 20), RAW_SILENT);
}
RAWCM_ACTIVE(test_active_good, active_good, NULL);

/*
 * A responder that replies and then waits forever: NdkCompleteConnect
 * after the establishment timer (twice NDK_CM_TIMEOUT_MS) fails
 * STATUS_IO_TIMEOUT, and the connector is aborted for Reject too.
 */
static void active_complete_timeout(struct active *a, const void *unused)
{
	active_reply(a, false);
	tu_sleep_ms(3 * CM_TIMEOUT_MS);
	assert_int_equal(a->c->Dispatch->NdkCompleteConnect(a->c, NULL, NULL,
							    NULL, NULL),
			 STATUS_IO_TIMEOUT);
	assert_int_equal(a->c->Dispatch->NdkReject(a->c, NULL, 0),
			 STATUS_CONNECTION_ABORTED);
}
RAWCM_ACTIVE(test_active_complete_timeout, active_complete_timeout, NULL);

/* An MPA v1 responder: Rev 1 Reply, no RTR is sent. */
static void active_v1(struct active *a, const void *unused)
{
	uint8_t buf[64];
	size_t n;

	n = mpa_frame(buf, MPA_KEY_REP, MPA_CRC, 1, false, 0, 0, "v1", 2);
	raw_send(a->sfd, buf, n);
	assert_int_equal(cm_req_wait(&a->conn, WAIT_MS), STATUS_SUCCESS);
	cm_assert_private_data(a->c, "v1", 2);
	assert_int_equal(a->c->Dispatch->NdkCompleteConnect(a->c, NULL, NULL,
							    NULL, NULL),
			 STATUS_SUCCESS);
	/* No RTR: nothing arrives until the consumer sends data. */
	assert_int_equal(raw_wait_event(a->sfd, 200), RAW_SILENT);
	cm_close_connector(a->c);
	a->c = NULL;
	assert_int_equal(raw_wait_event(a->sfd, WAIT_MS), RAW_EOF);
}
RAWCM_ACTIVE(test_active_v1, active_v1, NULL);

/*
 * The RTR nudge (NDK_RTR_NUDGE_MS, tests/interop/README.md bug 1): a
 * responder that has sent nothing NUDGE_MS after our Write RTR gets one
 * more zero-length Write, byte for byte the RTR, and nothing after it.
 */
static void active_nudge(struct active *a, const void *unused)
{
	uint8_t rtr[64], buf[64];

	active_establish(a, false, rtr);
	assert_int_equal(raw_wait_event(a->sfd, NUDGE_MS / 2), RAW_SILENT);
	assert_int_equal(raw_recv(a->sfd, buf, 20, WAIT_MS), 20);
	assert_memory_equal(buf, rtr, 20);
	assert_int_equal(raw_wait_event(a->sfd, 4 * NUDGE_MS), RAW_SILENT);
}
RAWCM_ACTIVE(test_active_nudge, active_nudge, NULL);

/* A responder that spoke after the RTR read it: no nudge. */
static void active_nudge_peer_spoke(struct active *a, const void *unused)
{
	uint8_t rtr[64], buf[64];
	size_t n;

	/* A zero-length receive for the peer's zero-length Send. */
	assert_int_equal(a->qp->Dispatch->NdkReceive(a->qp, NULL, NULL, 0),
			 STATUS_SUCCESS);
	active_reply(a, false);
	assert_int_equal(a->c->Dispatch->NdkCompleteConnect(a->c, NULL, NULL,
							    NULL, NULL),
			 STATUS_SUCCESS);
	assert_int_equal(raw_recv(a->sfd, rtr, 20, WAIT_MS), 20);
	n = fpdu_build(buf, ulpdu_send_rtr, sizeof(ulpdu_send_rtr), true);
	raw_send(a->sfd, buf, n);
	assert_int_equal(raw_wait_event(a->sfd, 4 * NUDGE_MS), RAW_SILENT);
}
RAWCM_ACTIVE(test_active_nudge_peer_spoke, active_nudge_peer_spoke, NULL);

/*
 * Closing the connector, or disconnecting, while the nudge is pending
 * cancels it: the peer sees the end of the stream and nothing else (and
 * the sanitizer runs see no timer firing on a freed connector).
 */
static void active_nudge_cancelled(const void *unused)
{
	struct active a;
	uint8_t rtr[64];
	struct cm_req d;

	active_open(&a);
	active_establish(&a, false, rtr);
	cm_close_connector(a.c);
	a.c = NULL;
	assert_int_equal(raw_wait_event(a.sfd, WAIT_MS), RAW_EOF);
	tu_sleep_ms(2 * NUDGE_MS);
	active_close(&a);

	active_open(&a);
	active_establish(&a, false, rtr);
	cm_req_init(&d);
	assert_int_equal(a.c->Dispatch->NdkDisconnect(a.c, cm_req_done, &d),
			 STATUS_PENDING);
	assert_int_equal(raw_wait_event(a.sfd, WAIT_MS), RAW_EOF);
	shutdown(a.sfd, SHUT_WR);
	assert_int_equal(cm_req_wait(&d, WAIT_MS), STATUS_SUCCESS);
	tu_sleep_ms(2 * NUDGE_MS);
	active_close(&a);
}
RAWCM_ALONE(test_active_nudge_cancelled, active_nudge_cancelled, NULL);

/*
 * libndk on both ends with the nudge on: the responder takes the extra
 * zero-length Write (its STag is not looked up: nothing is placed) and the
 * connection carries data afterwards, with no Terminate.
 */
static void nudge_between_libndk(const void *unused)
{
	struct sockaddr_in any = cm_lo4(0);
	struct cm_host srv, cli;
	struct tool_listener l;
	struct cm_req r;
	NDK_CONNECTOR *a, *p;
	NDK_QP *aqp, *pqp;
	NDK_RESULT res;
	int k;

	cm_hosts_open(&srv, &cli);
	aqp = cm_qp(&cli);
	pqp = cm_qp(&srv);
	assert_int_equal(cm_listen(&srv, &l, (struct sockaddr *)&any),
			 STATUS_SUCCESS);
	a = cm_connector(&cli);
	assert_int_equal(cm_connect(a, aqp, (struct sockaddr *)&l.addr, 1, 1,
				    NULL, 0, &r),
			 STATUS_PENDING);
	p = cm_next_incoming(&l, WAIT_MS);
	assert_non_null(p);
	cm_accept_and_complete(a, &r, p, pqp, WAIT_MS);
	/* The responder says nothing: the nudge goes out and arrives. */
	tu_sleep_ms(3 * NUDGE_MS);
	assert_int_equal(pqp->Dispatch->NdkReceive(pqp, (PVOID)7, NULL, 0),
			 STATUS_SUCCESS);
	assert_int_equal(aqp->Dispatch->NdkSend(aqp, (PVOID)8, NULL, 0, 0),
			 STATUS_SUCCESS);
	for (k = 0; k < 2; k++) {
		NDK_CQ *cq = k ? cli.cq : srv.cq;
		uint64_t end = tu_now_ms() + WAIT_MS;

		while (!cq->Dispatch->NdkGetCqResults(cq, &res, 1) &&
		       tu_now_ms() < end)
			tu_sleep_ms(1);
		assert_int_equal(res.Status, STATUS_SUCCESS);
		assert_ptr_equal(res.RequestContext, (PVOID)(uintptr_t)(7 + k));
	}
	cm_close_connector(a);
	cm_close_connector(p);
	cm_close_qp(aqp);
	cm_close_qp(pqp);
	cm_listener_close(&l);
	rawcm_host_close(&cli);
	rawcm_host_close(&srv);
}
RAWCM_ALONE(test_nudge_between_libndk, nudge_between_libndk, NULL);

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_crc32c_vector),
		RAWCM_TEST(test_passive_wrong_rtr),
		RAWCM_TEST(test_passive_good_rtr),
		RAWCM_TEST(test_passive_v1),
		RAWCM_TEST(test_passive_v1_leaves),
		RAWCM_TEST(test_active_good),
		RAWCM_TEST(test_active_v1),
		RAWCM_TEST(test_active_complete_timeout),
		RAWCM_TEST(test_active_nudge),
		RAWCM_TEST(test_active_nudge_peer_spoke),
		RAWCM_TEST(test_active_nudge_cancelled),
		RAWCM_TEST(test_nudge_between_libndk),
	};

	cm_software_only();
	rawcm_set_timers();
	return cmocka_run_group_tests_name("cm_rtr", tests, rawcm_open_registry,
					   NULL);
}
