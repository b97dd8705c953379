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
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <ndk/ndk.h>
#include "tool_host.h"

#define WAIT_MS 5000

#define REQ_PD	   "conformance-request"
#define REP_PD	   "conformance-reply"
#define REJ_REQ_PD "conformance-reject-me"
#define REJ_PD	   "go away"

static int failures;

#define CHECK(cond)                                                       \
	do {                                                              \
		if (!(cond)) {                                            \
			fprintf(stderr,                                   \
				"mpa_capture: %s:%d: check failed: %s\n", \
				__FILE__, __LINE__, #cond);               \
			failures++;                                       \
			return -1;                                        \
		}                                                         \
	} while (0)

#define CHECK_ST(expr, want)                                                   \
	do {                                                                   \
		NTSTATUS st_ = (expr);                                         \
		if (st_ != (want)) {                                           \
			fprintf(stderr,                                        \
				"mpa_capture: %s:%d: %s = %s (0x%08x), "       \
				"expected %s\n",                               \
				__FILE__, __LINE__, #expr, NdkStatusName(st_), \
				(unsigned int)st_, NdkStatusName(want));       \
			failures++;                                            \
			return -1;                                             \
		}                                                              \
	} while (0)

/* ------------------------------------------------------------------ */
/* Waitable request completion and connect-event queue                */

static NTSTATUS req_result(NTSTATUS inline_status, struct tool_wait *r)
{
	return inline_status == STATUS_PENDING ? tool_wait_for(r, WAIT_MS)
					       : inline_status;
}

#define MAX_EVENTS 8
static atomic_int disc_events;

static VOID on_disconnect(PVOID ctx)
{
	atomic_fetch_add(&disc_events, 1);
}

static VOID on_cq(PVOID ctx, NTSTATUS status)
{
}

/* ------------------------------------------------------------------ */
/* Hosts                                                              */

struct host {
	NDK_ADAPTER *ad;
	NDK_PD *pd;
	NDK_CQ *cq;
};

static int host_open(struct host *h)
{
	NDK_VERSION v = { 2, 0 };
	unsigned int ifindex = if_nametoindex("lo");

	memset(h, 0, sizeof(*h));
	CHECK(ifindex != 0);
	CHECK_ST(NdkOpenAdapter(v, ifindex, &h->ad), STATUS_SUCCESS);
	CHECK_ST(h->ad->Dispatch->NdkCreatePd(h->ad, NULL, NULL, &h->pd),
		 STATUS_SUCCESS);
	CHECK_ST(h->ad->Dispatch->NdkCreateCq(h->ad, 64, on_cq, NULL, NULL,
					      NULL, NULL, &h->cq),
		 STATUS_SUCCESS);
	return 0;
}

static int host_qp(struct host *h, NDK_QP **qp)
{
	CHECK_ST(h->pd->Dispatch->NdkCreateQp(h->pd, h->cq, h->cq, NULL, 16, 16,
					      1, 1, 0, NULL, NULL, qp),
		 STATUS_SUCCESS);
	return 0;
}

static int host_connector(struct host *h, NDK_CONNECTOR **c)
{
	CHECK_ST(h->ad->Dispatch->NdkCreateConnector(h->ad, NULL, NULL, c),
		 STATUS_SUCCESS);
	return 0;
}

static struct sockaddr_in lo4(uint16_t port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_port = htons(port) };

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return sin;
}

static NTSTATUS start_connect(NDK_CONNECTOR *c, NDK_QP *qp,
			      const struct sockaddr_in *dst, const char *pd,
			      struct tool_wait *r)
{
	struct sockaddr_in src = lo4(0);

	tool_wait_init(r);
	return c->Dispatch->NdkConnect(c, qp, (PSOCKADDR)&src, sizeof(src),
				       (PSOCKADDR)dst, sizeof(*dst), 8, 4,
				       (PVOID)pd, (ULONG)strlen(pd),
				       tool_wait_done, r);
}

static int local_port(NDK_CONNECTOR *c, uint16_t *port)
{
	struct sockaddr_in sin;
	ULONG len = sizeof(sin);

	CHECK_ST(c->Dispatch->NdkGetLocalAddress(c, (PSOCKADDR)&sin, &len),
		 STATUS_SUCCESS);
	CHECK(sin.sin_family == AF_INET);
	*port = ntohs(sin.sin_port);
	return 0;
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

static int run_accept(struct host *srv, struct host *cli,
		      struct tool_listener *ev, const struct sockaddr_in *dst)
{
	NDK_QP *aqp, *pqp;
	NDK_CONNECTOR *active, *passive;
	struct tool_wait conn, acc, cc, disc;
	ULONG ird = 0, ord = 0, len = 0;
	char buf[256];
	uint16_t port;
	NTSTATUS st;
	int i;

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
	if (local_port(active, &port))
		return -1;
	printf("CONNECT %u\n", port);
	fflush(stdout);
	len = sizeof(buf);
	CHECK_ST(active->Dispatch->NdkGetConnectionData(active, &ird, &ord, buf,
							&len),
		 STATUS_SUCCESS);
	CHECK(len == strlen(REP_PD) && !memcmp(buf, REP_PD, len));
	/* IRD = min(8, 128, peer ORD 8), ORD = min(4, 128, peer IRD 2). */
	CHECK(ird == 8 && ord == 2);

	tool_wait_init(&cc);
	CHECK_ST(req_result(active->Dispatch->NdkCompleteConnect(
				    active, on_disconnect, NULL, tool_wait_done,
				    &cc),
			    &cc),
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
	for (i = 0; i < WAIT_MS / 10 && atomic_load(&disc_events) == 0; i++)
		nanosleep(&(struct timespec){ .tv_nsec = 10000000L }, NULL);
	CHECK(atomic_load(&disc_events) >= 1);
	CHECK_ST(passive->Dispatch->NdkDisconnect(passive, NULL, NULL),
		 STATUS_SUCCESS);
	CHECK_ST(req_result(st, &disc), STATUS_SUCCESS);

	if (close_connector(active) || close_connector(passive) ||
	    close_qp(aqp) || close_qp(pqp))
		return -1;
	return 0;
}

static int run_reject(struct host *srv, struct host *cli,
		      struct tool_listener *ev, const struct sockaddr_in *dst)
{
	NDK_QP *aqp;
	NDK_CONNECTOR *active, *passive;
	struct tool_wait conn;
	ULONG len;
	char buf[256];
	uint16_t port;

	if (host_qp(cli, &aqp) || host_connector(cli, &active))
		return -1;
	CHECK_ST(start_connect(active, aqp, dst, REJ_REQ_PD, &conn),
		 STATUS_PENDING);
	passive = tool_next_incoming(ev, WAIT_MS);
	CHECK(passive != NULL);
	if (local_port(active, &port))
		return -1;
	printf("REJECT %u\n", port);
	fflush(stdout);
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
	struct host srv, cli;
	struct sockaddr_in addr = lo4(listen_port), bound;
	char line[64];
	int ret;

	if (host_open(&srv) || host_open(&cli))
		return -1;
	CHECK_ST(tool_listen(srv.ad, &ev, (struct sockaddr *)&addr),
		 STATUS_SUCCESS);
	memcpy(&bound, &ev.addr, sizeof(bound));
	printf("LISTEN %u\n", ntohs(bound.sin_port));
	fflush(stdout);
	/* The capture starts now; go on at the next line or at EOF. */
	if (!fgets(line, sizeof(line), stdin) && ferror(stdin))
		return -1;

	ret = run_accept(&srv, &cli, &ev, &bound);
	if (!ret)
		ret = run_reject(&srv, &cli, &ev, &bound);
	/* NdkCloseAdapter closes whatever is left and waits for callbacks. */
	NdkCloseAdapter(cli.ad);
	NdkCloseAdapter(srv.ad);
	return ret;
}

int main(int argc, char **argv)
{
	unsigned long port = 0;
	char *end;

	if (argc > 2 || (argc == 2 && (port = strtoul(argv[1], &end, 10),
				       *end || port > 65535))) {
		fprintf(stderr, "usage: %s [PORT]\n", argv[0]);
		return 2;
	}
	if (run((uint16_t)port) || failures)
		return 1;
	printf("DONE\n");
	return 0;
}
