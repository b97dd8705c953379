/* SPDX-License-Identifier: MIT */
/*
 * Traffic generator for the MPA conformance test (check_mpa.sh): two
 * loopback connections through the public NDK API only, so that a capture
 * of lo can be decoded by Wireshark's iWARP dissectors.
 *
 *   (a) NdkConnect, PD "conformance-request", IRD 8 / ORD 4
 *       NdkAcceptEx, PD "conformance-reply", IRD 2 / ORD 16
 *       NdkCompleteConnect (sends the RTR), then NdkDisconnect both ways
 *   (b) NdkConnect, PD "conformance-reject-me", IRD 8 / ORD 4
 *       NdkReject, PD "go away"
 *
 * Usage: mpa_capture [PORT]
 * Listens on 127.0.0.1:PORT (default 0, an ephemeral port), prints
 * "LISTEN <port>" on stdout, then waits for one line (or EOF) on stdin
 * so that the caller can start a capture filtered on that port. It then
 * prints "CONNECT <client port>" and "REJECT <client port>", and
 * "DONE" on success. Exit status 0 on success, 1 on any failure.
 */
#include <stdatomic.h>
#include <string.h>
#include "capture.h"

#define REQ_PD	   "conformance-request"
#define REP_PD	   "conformance-reply"
#define REJ_REQ_PD "conformance-reject-me"
#define REJ_PD	   "go away"

static atomic_int disc_events;

static VOID on_disconnect(PVOID ctx)
{
	atomic_fetch_add(&disc_events, 1);
}

static int host_qp(struct cap_host *h, NDK_QP **qp)
{
	CHECK_ST(h->t.pd->Dispatch->NdkCreateQp(h->t.pd, h->cq, h->cq, NULL, 16,
						16, 1, 1, 0, NULL, NULL, qp),
		 STATUS_SUCCESS);
	return 0;
}

static int host_connector(struct cap_host *h, NDK_CONNECTOR **c)
{
	CHECK_ST(h->t.ad->Dispatch->NdkCreateConnector(h->t.ad, NULL, NULL, c),
		 STATUS_SUCCESS);
	return 0;
}

static NTSTATUS start_connect(NDK_CONNECTOR *c, NDK_QP *qp,
			      const struct sockaddr_in *dst, const char *pd,
			      struct tool_wait *r)
{
	struct sockaddr_in src = cap_lo4(0);

	tool_wait_init(r);
	return c->Dispatch->NdkConnect(c, qp, (PSOCKADDR)&src, sizeof(src),
				       (PSOCKADDR)dst, sizeof(*dst), 8, 4,
				       (PVOID)pd, (ULONG)strlen(pd),
				       tool_wait_done, r);
}

static int close_connector(NDK_CONNECTOR *c)
{
	NTSTATUS st = c->Dispatch->NdkCloseConnector(&c->Header, NULL, NULL);

	CHECK(st == STATUS_SUCCESS || st == STATUS_PENDING);
	return 0;
}

static int close_qp(NDK_QP *qp)
{
	NTSTATUS st = qp->Dispatch->NdkCloseQp(&qp->Header, NULL, NULL);

	CHECK(st == STATUS_SUCCESS || st == STATUS_PENDING);
	return 0;
}

/* ------------------------------------------------------------------ */
/* The two scenarios                                                  */

static int run_accept(struct cap_host *srv, struct cap_host *cli,
		      struct tool_listener *ev, const struct sockaddr_in *dst)
{
	NDK_QP *aqp, *pqp;
	NDK_CONNECTOR *active, *passive;
	struct tool_wait conn, acc, cc, disc;
	ULONG ird = 0, ord = 0, len = 0;
	char buf[256];
	NTSTATUS st;

	if (host_qp(cli, &aqp) || host_qp(srv, &pqp) ||
	    host_connector(cli, &active))
		return -1;
	CHECK_ST(start_connect(active, aqp, dst, REQ_PD, &conn),
		 STATUS_PENDING);
	passive = tool_next_incoming(ev, WAIT_MS);
	CHECK(passive != NULL);
	/* The Request as the responder decoded it. */
	len = sizeof(buf);
	CHECK_ST(passive->Dispatch->NdkGetConnectionData(passive, &ird, &ord,
							 buf, &len),
		 STATUS_SUCCESS);
	CHECK(len == strlen(REQ_PD) && !memcmp(buf, REQ_PD, len));
	CHECK(ird == 4 && ord == 8);

	tool_wait_init(&acc);
	CHECK_ST(passive->Dispatch->NdkAccept(
			 passive, pqp, 2, 16, (PVOID)REP_PD,
			 (ULONG)strlen(REP_PD), on_disconnect, NULL,
			 tool_wait_done, &acc),
		 STATUS_PENDING);
	CHECK_ST(tool_wait_for(&conn, WAIT_MS), STATUS_SUCCESS);
	if (cap_print_local_port("CONNECT", active))
		return -1;
	len = sizeof(buf);
	CHECK_ST(active->Dispatch->NdkGetConnectionData(active, &ird, &ord, buf,
							&len),
		 STATUS_SUCCESS);
	CHECK(len == strlen(REP_PD) && !memcmp(buf, REP_PD, len));
	/* IRD = min(8, 128, peer ORD 8), ORD = min(4, 128, peer IRD 2). */
	CHECK(ird == 8 && ord == 2);

	tool_wait_init(&cc);
	CHECK_ST(tool_wait_result(&cc,
				  active->Dispatch->NdkCompleteConnect(
					  active, on_disconnect, NULL,
					  tool_wait_done, &cc),
				  WAIT_MS),
		 STATUS_SUCCESS);
	/* The responder's Accept completes when the RTR arrives. */
	CHECK_ST(tool_wait_for(&acc, WAIT_MS), STATUS_SUCCESS);
	len = 0;
	CHECK_ST(passive->Dispatch->NdkGetConnectionData(passive, &ird, &ord,
							 NULL, &len),
		 STATUS_SUCCESS);
	CHECK(ird == 2 && ord == 8);

	/* The initiator disconnects; the responder sees the event and
	 * disconnects too, which lets the initiator's request finish. */
	tool_wait_init(&disc);
	st = active->Dispatch->NdkDisconnect(active, tool_wait_done, &disc);
	CHECK(st == STATUS_PENDING || st == STATUS_SUCCESS);
	cap_wait_positive(&disc_events, WAIT_MS);
	CHECK(atomic_load(&disc_events) >= 1);
	CHECK_ST(passive->Dispatch->NdkDisconnect(passive, NULL, NULL),
		 STATUS_SUCCESS);
	CHECK_ST(tool_wait_result(&disc, st, WAIT_MS), STATUS_SUCCESS);

	if (close_connector(active) || close_connector(passive) ||
	    close_qp(aqp) || close_qp(pqp))
		return -1;
	return 0;
}

static int run_reject(struct cap_host *srv, struct cap_host *cli,
		      struct tool_listener *ev, const struct sockaddr_in *dst)
{
	NDK_QP *aqp;
	NDK_CONNECTOR *active, *passive;
	struct tool_wait conn;
	ULONG len;
	char buf[256];

	if (host_qp(cli, &aqp) || host_connector(cli, &active))
		return -1;
	CHECK_ST(start_connect(active, aqp, dst, REJ_REQ_PD, &conn),
		 STATUS_PENDING);
	passive = tool_next_incoming(ev, WAIT_MS);
	CHECK(passive != NULL);
	if (cap_print_local_port("REJECT", active))
		return -1;
	CHECK_ST(passive->Dispatch->NdkReject(passive, (PVOID)REJ_PD,
					      (ULONG)strlen(REJ_PD)),
		 STATUS_SUCCESS);
	CHECK_ST(tool_wait_for(&conn, WAIT_MS), STATUS_CONNECTION_REFUSED);
	/* The reject's private data reaches the initiator. */
	len = sizeof(buf);
	CHECK_ST(active->Dispatch->NdkGetConnectionData(active, NULL, NULL, buf,
							&len),
		 STATUS_SUCCESS);
	CHECK(len == strlen(REJ_PD) && !memcmp(buf, REJ_PD, len));

	if (close_connector(active) || close_connector(passive) ||
	    close_qp(aqp))
		return -1;
	return 0;
}

static int run(uint16_t listen_port)
{
	static struct tool_listener ev;
	struct cap_host srv, cli;
	struct sockaddr_in bound;
	int ret;

	if (cap_host_open(&srv) || cap_host_open(&cli) ||
	    cap_listen(srv.t.ad, listen_port, &ev, &bound))
		return -1;
	ret = run_accept(&srv, &cli, &ev, &bound);
	if (!ret)
		ret = run_reject(&srv, &cli, &ev, &bound);
	/* NdkCloseAdapter closes whatever is left and waits for callbacks. */
	NdkCloseAdapter(cli.t.ad);
	NdkCloseAdapter(srv.t.ad);
	return ret;
}

int main(int argc, char **argv)
{
	return cap_main("mpa_capture", argc, argv, run);
}
