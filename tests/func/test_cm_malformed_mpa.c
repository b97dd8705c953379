/* SPDX-License-Identifier: MIT */
/*
 * Malformed or hostile MPA Requests and Replies (RFC 5044 7.1, RFC 6581)
 * from raw peers (rawpeer_cm.h), against our listener and our NdkConnect:
 * garbage, markers, an oversized PD_Length, a foreign RTR choice, bytes
 * behind the frame (in the same write or later). The controls show the
 * bad ones fail for the right reason: the largest Request, frames
 * dribbled in byte by byte, a Reject with its private data.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>
#include "rawpeer_cm.h"
#include "testutil.h"

/* ------------------------------------------------------------------ */
/* Passive side: bad Requests are dropped, no ConnectEvent            */

/* Each case's bytes on a connection of its own: the provider drops it. */
static void passive_drops(struct passive *p, const void *cases)
{
	uint8_t buf[1024];

	for (const struct raw_case *c = cases; c->name; c++) {
		size_t n = raw_build(buf, sizeof(buf), c->send);
		int fd = raw_connect(&p->l.addr);

		raw_send(fd, buf, n);
		raw_assert_dropped(fd, WAIT_MS, c->name);
		close(fd);
	}
}

static const struct raw_case passive_garbage[] = {
	{ .name = "an HTTP request",
	  .send = { RAW_TEXT(
		  "GET / HTTP/1.1\r\nHost: localhost\r\nAccept: */*\r\n\r\n") } },
	{ .name = "a Reply where a Request belongs",
	  .send = { RAW_MPA(MPA_KEY_REP, MPA_IRD_ORD, 2, true, MPA_P2P,
			    MPA_WRITE_RTR, NULL, 0) } },
	{ .name = "the key with one wrong byte at the end",
	  .send = { RAW_MPA("MPA ID Req FramE", MPA_IRD_ORD, 2, true, MPA_P2P,
			    MPA_WRITE_RTR, NULL, 0) } },
	{ .name = "Rev 0",
	  .send = { RAW_MPA(MPA_KEY_REQ, 0, 0, false, 0, 0, NULL, 0) } },
	{ .name = "Rev 3",
	  .send = { RAW_MPA(MPA_KEY_REQ, MPA_IRD_ORD, 3, true, MPA_P2P,
			    MPA_WRITE_RTR, NULL, 0) } },
	{ .name = "Rev 2 with S but PD_Length shorter than the IRD/ORD block",
	  .send = { RAW_MPA(MPA_KEY_REQ, MPA_IRD_ORD, 2, false, 0, 0, "ab",
			    2) } },
	{ .name = "binary noise: 64 bytes of 0xff",
	  .send = { RAW_REPEAT(0xff, 64) } },
	{ .name = NULL },
};
RAWCM_PASSIVE(test_passive_garbage, passive_drops, passive_garbage);

/* Markers are refused with a Reply R=1 (M clear, no PD), then FIN. */
struct markers_case {
	const char *name;
	struct raw_part send[2];
	uint8_t rev;
};

static const struct markers_case passive_markers[] = {
	{ .name = "Rev 2 with markers",
	  .send = { RAW_MPA(MPA_KEY_REQ, MPA_MARKERS | MPA_CRC | MPA_IRD_ORD, 2,
			    true, MPA_P2P | 4, MPA_WRITE_RTR | MPA_READ_RTR | 4,
			    "hi", 2) },
	  2 },
	{ .name = "Rev 1 with markers",
	  .send = { RAW_MPA(MPA_KEY_REQ, MPA_MARKERS, 1, false, 0, 0, "v1",
			    2) },
	  1 },
	{ .name = NULL },
};

static void markers_rejected(struct passive *p, const void *cases)
{
	struct mpa_msg rep;
	uint8_t buf[64];

	for (const struct markers_case *c = cases; c->name; c++) {
		size_t n = raw_build(buf, sizeof(buf), c->send);
		int fd = raw_connect(&p->l.addr);

		print_message("case: %s\n", c->name);
		raw_send(fd, buf, n);
		raw_read_mpa(fd, &rep, MPA_KEY_REP, WAIT_MS);
		assert_true(rep.hdr[16] & MPA_REJECT);
		assert_false(rep.hdr[16] & MPA_MARKERS);
		assert_int_equal(rep.hdr[17], c->rev);
		if (c->rev == 2) {
			/* Enhanced: the block only, no consumer data. */
			assert_true(rep.hdr[16] & MPA_IRD_ORD);
			assert_int_equal(rep.pd_len, 4);
		} else {
			assert_false(rep.hdr[16] & MPA_IRD_ORD);
			assert_int_equal(rep.pd_len, 0);
		}
		assert_int_equal(raw_wait_event(fd, WAIT_MS), RAW_EOF);
		close(fd);
	}
}
RAWCM_PASSIVE(test_passive_markers, markers_rejected, passive_markers);

/* PD_Length L with S: the header alone, then all of it (the IRD/ORD
 * block and L - 4 bytes of 'x'). */
#define PD_TOO_LONG(L)                                                       \
	{ .name = "PD_Length " #L ", the header alone",                      \
	  .send = { RAW_MPA_CUT(MPA_HDR_LEN, MPA_KEY_REQ, MPA_IRD_ORD, 2,    \
				true, MPA_P2P | 4, MPA_WRITE_RTR | 4, NULL,  \
				(L)-4) } },                                  \
	{                                                                    \
		.name = "PD_Length " #L ", all of it", .send = {             \
			RAW_MPA(MPA_KEY_REQ, MPA_IRD_ORD, 2, true,           \
				MPA_P2P | 4, MPA_WRITE_RTR | 4, NULL, (L)-4) \
		}                                                            \
	}

static const struct raw_case passive_pd_too_long[] = {
	PD_TOO_LONG(600),
	PD_TOO_LONG(513),
	PD_TOO_LONG(300),
	PD_TOO_LONG(257),
	{ .name = "Rev 1, PD_Length 300, the header alone",
	  .send = { RAW_MPA_CUT(MPA_HDR_LEN, MPA_KEY_REQ, 0, 1, false, 0, 0,
				NULL, 300) } },
	{ .name = NULL },
};
RAWCM_PASSIVE(test_passive_pd_too_long, passive_drops, passive_pd_too_long);

/* The largest Request (256 bytes of PD: block + 252) is taken. */
static void passive_pd_max(const void *unused)
{
	struct passive p;
	uint8_t pd[252], buf[MPA_HDR_LEN + 256];
	NDK_CONNECTOR *c;
	size_t n;
	int fd;

	passive_open(&p);
	for (size_t i = 0; i < sizeof(pd); i++)
		pd[i] = (uint8_t)i;
	n = mpa_frame(buf, MPA_KEY_REQ, MPA_IRD_ORD, 2, true, MPA_P2P | 1,
		      MPA_WRITE_RTR | 1, pd, sizeof(pd));
	c = passive_raw_request(&p, &fd, buf, n);
	cm_assert_private_data(c, pd, sizeof(pd));
	assert_int_equal(c->Dispatch->NdkReject(c, NULL, 0), STATUS_SUCCESS);
	close(fd);
	cm_close_connector(c);
	passive_close(&p);
}
RAWCM_ALONE(test_passive_pd_max, passive_pd_max, NULL);

/*
 * Bytes behind the Request, in the same write: the initiator did not wait
 * for the Reply (RFC 5044 7.1). siw drops such a peer ("peer sent extra
 * data"), and so must we: no ConnectEvent, no Reply.
 */
static const struct raw_case passive_extra_bytes[] = {
	{ .name = "8 bytes behind the Request",
	  .send = { RAW_ARRAY(mpa_req_v2), RAW_TEXT("EXTRA!!!") } },
	{ .name = "one byte behind the Request",
	  .send = { RAW_ARRAY(mpa_req_v2), RAW_TEXT("E") } },
	{ .name = "the right RTR, sent before the Reply came",
	  .send = { RAW_ARRAY(mpa_req_v2), RAW_FPDU_OF(ulpdu_write_rtr) } },
	{ .name = "the Request twice",
	  .send = { RAW_ARRAY(mpa_req_v2), RAW_ARRAY(mpa_req_v2) } },
	{ .name = NULL },
};
RAWCM_PASSIVE(test_passive_extra_bytes, passive_drops, passive_extra_bytes);

/*
 * The same against a consumer that accepts inside its ConnectEvent, on the
 * engine thread, before the engine looks at the socket again: a Request
 * with its RTR glued on must not give an established connection.
 */
struct inline_acceptor {
	NDK_QP *qp;
	struct cm_req acc;
	atomic_int events;
};

static VOID accept_inline(PVOID ctx, NDK_CONNECTOR *c)
{
	struct inline_acceptor *ia = ctx;

	atomic_fetch_add(&ia->events, 1);
	(void)c->Dispatch->NdkAccept(c, ia->qp, 1, 1, NULL, 0, NULL, NULL,
				     cm_req_done, &ia->acc);
}

static void passive_early_rtr_inline_accept(const void *unused)
{
	static const struct raw_part req_and_rtr[] = {
		RAW_ARRAY(mpa_req_v2),
		RAW_FPDU_OF(ulpdu_write_rtr),
		{ .kind = RAW_END },
	};
	struct inline_acceptor ia = { 0 };
	struct sockaddr_in any = cm_lo4(0);
	struct sockaddr_storage addr;
	ULONG len = sizeof(addr);
	struct cm_host h;
	NDK_LISTENER *l;
	uint8_t buf[128];
	NTSTATUS st;
	size_t n;
	int fd;

	cm_host_open(&h, "lo");
	ia.qp = cm_qp(&h);
	cm_req_init(&ia.acc);
	assert_int_equal(h.ad->Dispatch->NdkCreateListener(h.ad, accept_inline,
							   &ia, NULL, NULL, &l),
			 STATUS_SUCCESS);
	assert_int_equal(l->Dispatch->NdkListen(l, (PSOCKADDR)&any, sizeof(any),
						NULL, NULL),
			 STATUS_SUCCESS);
	assert_int_equal(
		l->Dispatch->NdkGetLocalAddress(l, (PSOCKADDR)&addr, &len),
		STATUS_SUCCESS);
	n = raw_build(buf, sizeof(buf), req_and_rtr);
	fd = raw_connect(&addr);
	raw_send(fd, buf, n);
	raw_assert_dropped(fd, WAIT_MS, NULL);
	close(fd);
	if (atomic_load(&ia.events))
		fail_msg("ConnectEvent for a Request with its RTR behind it; "
			 "Accept gave %#x",
			 (unsigned int)cm_req_wait(&ia.acc, WAIT_MS));
	st = l->Dispatch->NdkCloseListener(&l->Header, NULL, NULL);
	assert_true(st == STATUS_SUCCESS || st == STATUS_PENDING);
	cm_close_qp(ia.qp);
	rawcm_host_close(&h);
}
RAWCM_ALONE(test_passive_early_rtr_inline_accept,
	    passive_early_rtr_inline_accept, NULL);

/*
 * Bytes that come after the Request, once the ConnectEvent is out: the
 * consumer's Accept or Reject finds the attempt over (no Reply goes out).
 */
static void passive_extra_bytes_later(struct passive *p, const void *unused)
{
	NDK_CONNECTOR *c1, *c2;
	struct cm_req acc;
	NDK_QP *qp;
	NTSTATUS st;
	int fd1, fd2;

	qp = cm_qp(&p->h);
	c1 = passive_raw_request(p, &fd1, mpa_req_v2, sizeof(mpa_req_v2));
	raw_send(fd1, "EXTRA!!!", 8);
	c2 = passive_raw_request(p, &fd2, mpa_req_v2, sizeof(mpa_req_v2));
	raw_send(fd2, "X", 1);
	tu_sleep_ms(10);
	cm_req_init(&acc);
	st = c1->Dispatch->NdkAccept(c1, qp, 1, 1, NULL, 0, NULL, NULL,
				     cm_req_done, &acc);
	assert_int_equal(cm_req_result(st, &acc, WAIT_MS),
			 STATUS_CONNECTION_ABORTED);
	assert_int_equal(c2->Dispatch->NdkReject(c2, NULL, 0),
			 STATUS_CONNECTION_ABORTED);
	raw_assert_dropped(fd1, WAIT_MS, NULL);
	raw_assert_dropped(fd2, WAIT_MS, NULL);
	close(fd1);
	close(fd2);
	cm_close_connector(c1);
	cm_close_connector(c2);
	cm_close_qp(qp);
}
RAWCM_PASSIVE(test_passive_extra_bytes_later, passive_extra_bytes_later, NULL);

/* Control: a Request dribbled in byte by byte is read whole. */
static void passive_slow(struct passive *p, const void *unused)
{
	NDK_CONNECTOR *c;
	int fd;

	fd = raw_connect(&p->l.addr);
	raw_send_bytewise(fd, mpa_req_v2, sizeof(mpa_req_v2));
	c = cm_next_incoming(&p->l, WAIT_MS);
	assert_non_null(c);
	cm_assert_private_data(c, "hi", 2);
	assert_int_equal(c->Dispatch->NdkReject(c, NULL, 0), STATUS_SUCCESS);
	close(fd);
	cm_close_connector(c);
}
RAWCM_PASSIVE(test_passive_slow, passive_slow, NULL);

/* Control: NdkReject sends R=1 with the consumer's data, then FIN. */
static void passive_reject(struct passive *p, const void *unused)
{
	struct mpa_msg rep;
	NDK_CONNECTOR *c;
	int fd;

	c = passive_raw_request(p, &fd, mpa_req_v2, sizeof(mpa_req_v2));
	assert_int_equal(c->Dispatch->NdkReject(c, (PVOID) "busy", 4),
			 STATUS_SUCCESS);
	raw_read_mpa(fd, &rep, MPA_KEY_REP, WAIT_MS);
	assert_true(rep.hdr[16] & MPA_REJECT);
	assert_true(rep.hdr[16] & MPA_IRD_ORD);
	assert_int_equal(rep.pd_len, 4 + 4);
	assert_memory_equal(rep.pd + 4, "busy", 4);
	assert_int_equal(raw_wait_event(fd, WAIT_MS), RAW_EOF);
	close(fd);
	cm_close_connector(c);
}
RAWCM_PASSIVE(test_passive_reject, passive_reject, NULL);

/* ------------------------------------------------------------------ */
/* Active side: a raw server answers our NdkConnect badly: refused    */

static const struct raw_case active_garbage[] = {
	{ .name = "an HTTP response",
	  .send = { RAW_TEXT("HTTP/1.1 400 Bad Request\r\n\r\n") } },
	{ .name = "a Request where the Reply belongs",
	  .send = { RAW_MPA(MPA_KEY_REQ, MPA_IRD_ORD, 2, true, MPA_P2P,
			    MPA_WRITE_RTR, NULL, 0) } },
	{ .name = "Rev 9",
	  .send = { RAW_MPA(MPA_KEY_REP, MPA_IRD_ORD, 9, true, MPA_P2P,
			    MPA_WRITE_RTR, NULL, 0) } },
	{ .name = "S with a PD shorter than the block",
	  .send = { RAW_MPA(MPA_KEY_REP, MPA_IRD_ORD, 2, false, 0, 0, "a",
			    1) } },
	{ .name = "64 zero bytes", .send = { RAW_REPEAT(0, 64) } },
	{ .name = NULL },
};
RAWCM_ALONE(test_active_garbage, active_refused_all, active_garbage);

/* PD_Length 300 with the header alone, then PD_Length 300 and 600 with
 * all their bytes (the IRD/ORD block, then 'x'). */
static const struct raw_case active_pd_too_long[] = {
	{ .name = "PD_Length 300, the header alone",
	  .send = { RAW_MPA_CUT(MPA_HDR_LEN, MPA_KEY_REP, MPA_IRD_ORD, 2, true,
				MPA_P2P | 4, MPA_WRITE_RTR | 4, NULL, 296) } },
	{ .name = "PD_Length 300, all of it",
	  .send = { RAW_MPA(MPA_KEY_REP, MPA_IRD_ORD, 2, true, MPA_P2P | 4,
			    MPA_WRITE_RTR | 4, NULL, 296) } },
	{ .name = "PD_Length 600, all of it",
	  .send = { RAW_MPA(MPA_KEY_REP, MPA_IRD_ORD, 2, true, MPA_P2P | 4,
			    MPA_WRITE_RTR | 4, NULL, 596) } },
	{ .name = NULL },
};
RAWCM_ALONE(test_active_pd_too_long, active_refused_all, active_pd_too_long);

static const struct raw_case active_markers[] = {
	{ .name = "Rev 2 with markers",
	  .send = { RAW_MPA(MPA_KEY_REP, MPA_MARKERS | MPA_IRD_ORD, 2, true,
			    MPA_P2P | 4, MPA_WRITE_RTR | 4, NULL, 0) } },
	{ .name = "Rev 1 with markers",
	  .send = { RAW_MPA(MPA_KEY_REP, MPA_MARKERS, 1, false, 0, 0, NULL,
			    0) } },
	{ .name = NULL },
};
RAWCM_ALONE(test_active_markers, active_refused_all, active_markers);

/* RFC 6581: the responder must choose exactly one RTR we offered. */
static const struct raw_case active_bad_rtr_choice[] = {
	{ .name = "Send only (we offered Write and Read)",
	  .send = { RAW_MPA(MPA_KEY_REP, MPA_IRD_ORD, 2, true,
			    MPA_P2P | MPA_SEND_RTR | 4, 4, NULL, 0) } },
	{ .name = "Write and Read at once",
	  .send = { RAW_MPA(MPA_KEY_REP, MPA_IRD_ORD, 2, true, MPA_P2P | 4,
			    MPA_WRITE_RTR | MPA_READ_RTR | 4, NULL, 0) } },
	{ .name = "P2P with none",
	  .send = { RAW_MPA(MPA_KEY_REP, MPA_IRD_ORD, 2, true, MPA_P2P | 4, 4,
			    NULL, 0) } },
	{ .name = NULL },
};
RAWCM_ALONE(test_active_bad_rtr_choice, active_refused_all,
	    active_bad_rtr_choice);

/*
 * A Reject keeps its private data readable, with RDS its exact length
 * (NDK_FN_GET_CONNECTION_DATA); the responder closes after it.
 */
struct reject_case {
	const char *name;
	struct raw_part send[2];
	const char *pd;
	size_t pd_len;
};

static char max_reject_pd[252]; /* 'r', set by reject_with */

static const struct reject_case active_rejects[] = {
	{ .name = "Rev 2, S, \"go away\"",
	  .send = { RAW_MPA(MPA_KEY_REP, MPA_REJECT | MPA_IRD_ORD | MPA_CRC, 2,
			    true, MPA_P2P | 4, MPA_WRITE_RTR | 4, "go away",
			    7) },
	  "go away",
	  7 },
	{ .name = "Rev 2 without the block: all of it is reject data",
	  .send = { RAW_MPA(MPA_KEY_REP, MPA_REJECT, 2, false, 0, 0, "nope",
			    4) },
	  "nope",
	  4 },
	{ .name = "Rev 1 and no data at all",
	  .send = { RAW_MPA(MPA_KEY_REP, MPA_REJECT, 1, false, 0, 0, NULL, 0) },
	  NULL,
	  0 },
	{ .name = "the most there can be",
	  .send = { RAW_MPA(MPA_KEY_REP, MPA_REJECT | MPA_IRD_ORD, 2, true,
			    MPA_P2P, 0, max_reject_pd, sizeof(max_reject_pd)) },
	  max_reject_pd,
	  sizeof(max_reject_pd) },
	{ .name = NULL },
};

static void reject_with(const void *cases)
{
	memset(max_reject_pd, 'r', sizeof(max_reject_pd));
	for (const struct reject_case *c = cases; c->name; c++) {
		struct active a;
		uint8_t frame[300];
		char buf[300];
		ULONG len = 0;
		size_t n = raw_build(frame, sizeof(frame), c->send);

		print_message("case: %s\n", c->name);
		active_open(&a);
		raw_send(a.sfd, frame, n);
		shutdown(a.sfd, SHUT_WR);
		assert_int_equal(cm_req_wait(&a.conn, WAIT_MS),
				 STATUS_CONNECTION_REFUSED);
		assert_int_equal(a.c->Dispatch->NdkGetConnectionData(
					 a.c, NULL, NULL, NULL, &len),
				 STATUS_SUCCESS);
		assert_int_equal(len, c->pd_len);
		len = sizeof(buf);
		memset(buf, 0, sizeof(buf));
		assert_int_equal(a.c->Dispatch->NdkGetConnectionData(
					 a.c, NULL, NULL, buf, &len),
				 STATUS_SUCCESS);
		assert_int_equal(len, c->pd_len);
		if (c->pd_len)
			assert_memory_equal(buf, c->pd, c->pd_len);
		raw_assert_dropped(a.sfd, WAIT_MS, c->name);
		assert_int_not_equal(a.c->Dispatch->NdkCompleteConnect(
					     a.c, NULL, NULL, NULL, NULL),
				     STATUS_SUCCESS);
		active_close(&a);
	}
}
RAWCM_ALONE(test_active_reject, reject_with, active_rejects);

/* Control: a Reply dribbled in byte by byte is read whole. */
static void active_slow(struct active *a, const void *unused)
{
	uint8_t rtr[64];

	active_establish(a, true, rtr);
}
RAWCM_ACTIVE(test_active_slow, active_slow, NULL);

/* Data behind the Reply in the same write: refused, as siw does. */
static const struct raw_case active_extra_bytes[] = {
	{ .name = "8 bytes behind the Reply",
	  .send = { RAW_GOOD_REPLY, RAW_TEXT("EXTRA!!!") } },
	{ .name = "one byte behind the Reply",
	  .send = { RAW_GOOD_REPLY, RAW_TEXT("E") } },
	{ .name = NULL },
};
RAWCM_ALONE(test_active_extra_bytes, active_refused_all, active_extra_bytes);

/* Data after the Reply, before our RTR: CompleteConnect is too late. */
static void active_extra_bytes_later(struct active *a, const void *unused)
{
	active_reply(a, false);
	raw_send(a->sfd, "EXTRA!!!", 8);
	tu_sleep_ms(10);
	assert_int_equal(a->c->Dispatch->NdkCompleteConnect(a->c, NULL, NULL,
							    NULL, NULL),
			 STATUS_CONNECTION_ABORTED);
	/* No RTR went out: just the end of the stream. */
	raw_assert_dropped(a->sfd, WAIT_MS, NULL);
}
RAWCM_ACTIVE(test_active_extra_bytes_later, active_extra_bytes_later, NULL);

int main(void)
{
	const struct CMUnitTest tests[] = {
		RAWCM_TEST(test_passive_garbage),
		RAWCM_TEST(test_passive_markers),
		RAWCM_TEST(test_passive_pd_too_long),
		RAWCM_TEST(test_passive_pd_max),
		RAWCM_TEST(test_passive_extra_bytes),
		RAWCM_TEST(test_passive_early_rtr_inline_accept),
		RAWCM_TEST(test_passive_extra_bytes_later),
		RAWCM_TEST(test_passive_slow),
		RAWCM_TEST(test_passive_reject),
		RAWCM_TEST(test_active_garbage),
		RAWCM_TEST(test_active_pd_too_long),
		RAWCM_TEST(test_active_markers),
		RAWCM_TEST(test_active_bad_rtr_choice),
		RAWCM_TEST(test_active_reject),
		RAWCM_TEST(test_active_slow),
		RAWCM_TEST(test_active_extra_bytes),
		RAWCM_TEST(test_active_extra_bytes_later),
	};

	cm_software_only();
	rawcm_set_timers();
	return cmocka_run_group_tests_name("cm_malformed_mpa", tests,
					   rawcm_open_registry, NULL);
}
