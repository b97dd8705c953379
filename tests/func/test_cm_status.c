/* SPDX-License-Identifier: MIT */
/*
 * Every status code the NDK pages give NdkConnect, NdkAcceptEx,
 * NdkCompleteConnect(Ex), NdkReject and NdkGetConnectionData
 * (NDK_FN_CONNECT and the others), each provoked on loopback through the
 * public API (unreachable networks are in test_netns.c, malformed and
 * departing peers in test_cm_malformed_mpa.c and test_cm_peer_leaves.c).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <poll.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <unistd.h>
#include "cmutil.h"
#include "testutil.h"

static struct cm_host srv, cli;

static int setup(void **state)
{
	unsetenv("NDK_CM_TIMEOUT_MS");
	unsetenv("NDK_LISTEN_BACKLOG");
	unsetenv("NDK_EPHEMERAL_PORT_MIN");
	unsetenv("NDK_EPHEMERAL_PORT_MAX");
	cm_hosts_open(&srv, &cli);
	return 0;
}

static int teardown(void **state)
{
	cm_host_close(&cli);
	cm_host_close(&srv);
	unsetenv("NDK_CM_TIMEOUT_MS");
	unsetenv("NDK_LISTEN_BACKLOG");
	unsetenv("NDK_EPHEMERAL_PORT_MIN");
	unsetenv("NDK_EPHEMERAL_PORT_MAX");
	return 0;
}

/* NdkConnect from 127.0.0.1:0, returning the final status. */
static NTSTATUS connect_status(NDK_CONNECTOR *c, NDK_QP *qp,
			       const struct sockaddr *dst, unsigned int ms)
{
	struct cm_req r;
	NTSTATUS st = cm_connect(c, qp, dst, 4, 4, NULL, 0, &r);

	return cm_req_result(st, &r, ms);
}

/* A port that nothing listens on: bound by a shared endpoint. */
static struct sockaddr_in reserved_port(NDK_SHARED_ENDPOINT **sep)
{
	struct sockaddr_in sin = cm_lo4(0);
	ULONG len = sizeof(sin);

	assert_int_equal(
		srv.ad->Dispatch->NdkCreateSharedEndpoint(
			srv.ad, (PSOCKADDR)&sin, sizeof(sin), NULL, NULL, sep),
		STATUS_SUCCESS);
	assert_int_equal((*sep)->Dispatch->NdkGetLocalAddress(
				 *sep, (PSOCKADDR)&sin, &len),
			 STATUS_SUCCESS);
	return sin;
}

static void close_sep(NDK_SHARED_ENDPOINT *sep)
{
	NTSTATUS st =
		sep->Dispatch->NdkCloseSharedEndpoint(&sep->Header, NULL, NULL);

	assert_true(st == STATUS_SUCCESS || st == STATUS_PENDING);
}

/*
 * Whether h's Accept waits for the initiator's CompleteConnect: the
 * software provider's (its RTR) and IB and RoCE's (the RTU) do; an iWARP
 * device's kernel CM completes it with the MPA Reply (docs/verbs.md,
 * Connection management).
 */
static bool accept_waits(struct cm_host *h)
{
	return cm_provider_is(h, "software") ||
	       h->info.RdmaTechnology != NdkiWarp;
}

struct disc {
	atomic_int calls;
	atomic_uint reason;
};

static VOID on_disc(PVOID ctx, ULONG reason)
{
	struct disc *d = ctx;

	atomic_store(&d->reason, reason);
	atomic_fetch_add(&d->calls, 1);
}

static bool disc_called(void *arg)
{
	return atomic_load(&((struct disc *)arg)->calls) > 0;
}

/*
 * c connects to l (IRD/ORD 4); the request is accepted with NdkAcceptEx
 * and the disconnect callback on d; returns the incoming connector once
 * the Connect completed, its Accept in *acc.
 */
static NDK_CONNECTOR *connect_accept_ex(NDK_CONNECTOR *c,
					struct tool_listener *l,
					struct cm_req *r, struct cm_req *acc,
					struct disc *d)
{
	NDK_CONNECTOR *in;

	assert_int_equal(cm_connect(c, cm_qp(&cli), (struct sockaddr *)&l->addr,
				    4, 4, NULL, 0, r),
			 STATUS_PENDING);
	in = cm_next_incoming(l, 5000);
	assert_non_null(in);
	cm_req_init(acc);
	assert_int_equal(in->Dispatch->NdkAcceptEx(in, cm_qp(&srv), 4, 4, NULL,
						   0, on_disc, d, cm_req_done,
						   acc),
			 STATUS_PENDING);
	assert_int_equal(cm_req_wait(r, 5000), STATUS_SUCCESS);
	return in;
}

/* An engine held by a completion callback that sleeps. */
struct blocker {
	atomic_int started;
	unsigned int ms;
};

static VOID block_done(PVOID ctx, NTSTATUS status)
{
	struct blocker *b = ctx;

	atomic_store(&b->started, 1);
	tu_sleep_ms(b->ms);
}

static bool block_started(void *arg)
{
	return atomic_load(&((struct blocker *)arg)->started) != 0;
}

static struct sockaddr_in reserved_port(NDK_SHARED_ENDPOINT **sep);

/*
 * Holds h's engine (its timers, its events) for b->ms: a Connect from h
 * that is refused at once, whose completion runs on that engine and
 * sleeps. Returns once the engine is held.
 */
static NDK_CONNECTOR *block_engine(struct cm_host *h, struct blocker *b,
				   NDK_SHARED_ENDPOINT **sep)
{
	struct sockaddr_in dst = reserved_port(sep), src = cm_lo4(0);
	NDK_CONNECTOR *c = cm_connector(h);

	atomic_store(&b->started, 0);
	assert_int_equal(c->Dispatch->NdkConnect(c, cm_qp(h), (PSOCKADDR)&src,
						 sizeof(src), (PSOCKADDR)&dst,
						 sizeof(dst), 1, 1, NULL, 0,
						 block_done, b),
			 STATUS_PENDING);
	assert_true(tu_wait_until(block_started, b, 5000));
	return c;
}

static void test_refused_no_listener(void **state)
{
	NDK_SHARED_ENDPOINT *sep;
	struct sockaddr_in dst = reserved_port(&sep);
	NDK_QP *qp = cm_qp(&cli);
	NDK_CONNECTOR *c = cm_connector(&cli);

	assert_int_equal(connect_status(c, qp, (struct sockaddr *)&dst, 5000),
			 STATUS_CONNECTION_REFUSED);
	/* Not connecting: CompleteConnect has nothing to complete. */
	assert_int_equal(
		c->Dispatch->NdkCompleteConnect(c, NULL, NULL, NULL, NULL),
		STATUS_CONNECTION_INVALID);
	cm_close_connector(c);
	cm_close_qp(qp);
	close_sep(sep);
}

static void test_refused_paused_and_backlog(void **state)
{
	struct sockaddr_in any = cm_lo4(0);
	struct tool_listener l;
	NDK_QP *qp = cm_qp(&cli);
	NDK_CONNECTOR *c1 = cm_connector(&cli), *c2 = cm_connector(&cli);
	NDK_CONNECTOR *c3 = cm_connector(&cli), *in;
	struct cm_req r1;

	setenv("NDK_LISTEN_BACKLOG", "1", 1);
	setenv("NDK_LISTEN_WAIT_MS", "100", 1);
	assert_int_equal(cm_listen(&srv, &l, (struct sockaddr *)&any),
			 STATUS_SUCCESS);
	/* Paused: handled as if no listener existed
	 * (NDK_FN_CONTROL_CONNECT_EVENTS). */
	l.lis->Dispatch->NdkControlConnectEvents(l.lis, TRUE);
	assert_int_equal(
		connect_status(c1, qp, (struct sockaddr *)&l.addr, 5000),
		STATUS_CONNECTION_REFUSED);
	assert_null(cm_next_incoming(&l, 50));
	l.lis->Dispatch->NdkControlConnectEvents(l.lis, FALSE);

	/* The rest is the software provider's own backlog (an RDMA
	 * device's is the kernel CM's: docs/verbs.md, Endpoints). */
	if (!cm_provider_is(&srv, "software")) {
		cm_close_connector(c1);
		cm_listener_close(&l);
		unsetenv("NDK_LISTEN_BACKLOG");
		unsetenv("NDK_LISTEN_WAIT_MS");
		return;
	}
	/* Backlog of one: a second pending request is refused once it has
	 * waited NDK_LISTEN_WAIT_MS for a slot. */
	assert_int_equal(cm_connect(c2, cm_qp(&cli), (struct sockaddr *)&l.addr,
				    4, 4, NULL, 0, &r1),
			 STATUS_PENDING);
	in = cm_next_incoming(&l, 5000);
	assert_non_null(in);
	assert_int_equal(connect_status(c3, cm_qp(&cli),
					(struct sockaddr *)&l.addr, 5000),
			 STATUS_CONNECTION_REFUSED);
	cm_close_connector(in);
	assert_int_equal(cm_req_wait(&r1, 5000), STATUS_CONNECTION_REFUSED);
	cm_close_connector(c1);
	cm_close_connector(c2);
	cm_close_connector(c3);
	cm_listener_close(&l);
	unsetenv("NDK_LISTEN_BACKLOG");
	unsetenv("NDK_LISTEN_WAIT_MS");
}

static void test_reject_with_data(void **state)
{
	struct sockaddr_in any = cm_lo4(0);
	struct tool_listener l;
	NDK_QP *qp = cm_qp(&cli);
	NDK_CONNECTOR *c = cm_connector(&cli), *in;
	struct cm_req r;
	/* IB and RoCE report the whole 148-byte reject area. */
	char buf[256];
	ULONG len, ird = 99, ord = 99;

	assert_int_equal(cm_listen(&srv, &l, (struct sockaddr *)&any),
			 STATUS_SUCCESS);
	assert_int_equal(cm_connect(c, qp, (struct sockaddr *)&l.addr, 4, 4,
				    "ping", 4, &r),
			 STATUS_PENDING);
	in = cm_next_incoming(&l, 5000);
	assert_non_null(in);
	/* More than MaxCalleeData: refused inline, nothing sent. */
	memset(buf, 'x', sizeof(buf));
	assert_int_equal(in->Dispatch->NdkReject(in, buf, 253),
			 STATUS_INVALID_BUFFER_SIZE);
	assert_int_equal(in->Dispatch->NdkReject(in, (PVOID) "go away", 7),
			 STATUS_SUCCESS);
	assert_int_equal(cm_req_wait(&r, 5000), STATUS_CONNECTION_REFUSED);
	/* The reject's private data, with RDS its exact length
	 * (NDK_FN_GET_CONNECTION_DATA). */
	len = 0;
	assert_int_equal(
		c->Dispatch->NdkGetConnectionData(c, &ird, &ord, NULL, &len),
		STATUS_SUCCESS);
	assert_true(cm_rds_ok(&cli, len, 7));
	len = sizeof(buf);
	assert_int_equal(
		c->Dispatch->NdkGetConnectionData(c, NULL, NULL, buf, &len),
		STATUS_SUCCESS);
	assert_memory_equal(buf, "go away", 7);
	/* Rejected once: a second Reject has nothing to reject. */
	assert_int_equal(in->Dispatch->NdkReject(in, NULL, 0),
			 STATUS_CONNECTION_INVALID);
	cm_close_connector(in);
	cm_close_connector(c);
	cm_listener_close(&l);
}

static void test_private_data_limit(void **state)
{
	struct sockaddr_in any = cm_lo4(0);
	struct tool_listener l;
	NDK_QP *qp = cm_qp(&cli);
	NDK_CONNECTOR *c = cm_connector(&cli), *in;
	static char pd[300];
	ULONG max = cli.info.MaxCallerData;
	struct cm_req r;

	assert_int_equal(cm_listen(&srv, &l, (struct sockaddr *)&any),
			 STATUS_SUCCESS);
	/* 252 for the software provider (MPA's 256 less the IRD/ORD block);
	 * a verbs device says its own (docs/verbs.md, Private data). */
	if (cm_provider_is(&cli, "software"))
		assert_int_equal(cli.info.MaxCallerData, 252);
	assert_int_equal(cm_connect(c, qp, (struct sockaddr *)&l.addr, 4, 4, pd,
				    max + 1, &r),
			 STATUS_INVALID_BUFFER_SIZE);
	assert_null(cm_next_incoming(&l, 100)); /* nothing was sent */
	/* The connector is untouched: the maximum goes through. */
	memset(pd, 0xa5, sizeof(pd));
	assert_int_equal(cm_connect(c, qp, (struct sockaddr *)&l.addr, 4, 4, pd,
				    max, &r),
			 STATUS_PENDING);
	in = cm_next_incoming(&l, 5000);
	assert_non_null(in);
	{
		char got[300];
		ULONG len = sizeof(got);

		assert_int_equal(in->Dispatch->NdkGetConnectionData(
					 in, NULL, NULL, got, &len),
				 STATUS_SUCCESS);
		assert_true(len >= max);
		assert_memory_equal(got, pd, max);
		/* Accept with too much data: refused inline. */
		assert_int_equal(
			in->Dispatch->NdkAccept(in, cm_qp(&srv), 1, 1, pd,
						srv.info.MaxCalleeData + 1,
						NULL, NULL, NULL, NULL),
			STATUS_INVALID_BUFFER_SIZE);
	}
	cm_close_connector(in);
	assert_int_equal(cm_req_wait(&r, 5000), STATUS_CONNECTION_REFUSED);
	cm_close_connector(c);
	cm_listener_close(&l);
}

/*
 * MaxCalleeData is what both answers carry: a Reject and an Accept with
 * that much private data go out whole (NDK_ADAPTER_INFO, NDK_FN_REJECT).
 */
static void test_callee_data_limit(void **state)
{
	struct sockaddr_in any = cm_lo4(0);
	struct tool_listener l;
	NDK_CONNECTOR *c = cm_connector(&cli), *in;
	ULONG max = srv.info.MaxCalleeData;
	static char pd[300];
	struct cm_req r, acc;
	char got[300];
	ULONG len;

	assert_true(max > 0 && max < sizeof(pd));
	for (ULONG i = 0; i < sizeof(pd); i++)
		pd[i] = (char)(i * 7 + 1);
	assert_int_equal(cm_listen(&srv, &l, (struct sockaddr *)&any),
			 STATUS_SUCCESS);
	assert_int_equal(cm_connect(c, cm_qp(&cli), (struct sockaddr *)&l.addr,
				    4, 4, NULL, 0, &r),
			 STATUS_PENDING);
	in = cm_next_incoming(&l, 5000);
	assert_non_null(in);
	assert_int_equal(in->Dispatch->NdkReject(in, pd, max + 1),
			 STATUS_INVALID_BUFFER_SIZE);
	assert_int_equal(in->Dispatch->NdkReject(in, pd, max), STATUS_SUCCESS);
	assert_int_equal(cm_req_wait(&r, 5000), STATUS_CONNECTION_REFUSED);
	len = sizeof(got);
	assert_int_equal(
		c->Dispatch->NdkGetConnectionData(c, NULL, NULL, got, &len),
		STATUS_SUCCESS);
	assert_true(cm_rds_ok(&cli, len, max));
	assert_memory_equal(got, pd, max);
	cm_close_connector(in);
	cm_close_connector(c);

	/* The Accept's private data, as much. */
	c = cm_connector(&cli);
	assert_int_equal(cm_connect(c, cm_qp(&cli), (struct sockaddr *)&l.addr,
				    4, 4, NULL, 0, &r),
			 STATUS_PENDING);
	in = cm_next_incoming(&l, 5000);
	assert_non_null(in);
	cm_req_init(&acc);
	assert_int_equal(in->Dispatch->NdkAccept(in, cm_qp(&srv), 4, 4, pd, max,
						 NULL, NULL, cm_req_done, &acc),
			 STATUS_PENDING);
	assert_int_equal(cm_req_wait(&r, 5000), STATUS_SUCCESS);
	len = sizeof(got);
	assert_int_equal(
		c->Dispatch->NdkGetConnectionData(c, NULL, NULL, got, &len),
		STATUS_SUCCESS);
	assert_true(cm_rds_ok(&cli, len, max));
	assert_memory_equal(got, pd, max);
	assert_int_equal(
		c->Dispatch->NdkCompleteConnect(c, NULL, NULL, NULL, NULL),
		STATUS_SUCCESS);
	assert_int_equal(cm_req_wait(&acc, 5000), STATUS_SUCCESS);
	cm_close_connector(c);
	cm_close_connector(in);
	cm_listener_close(&l);
}

/*
 * Accept pending; the active side rejects, closes or leaves instead of
 * completing, or the acceptor leaves first (NDK_FN_ACCEPT_EX,
 * NDK_FN_COMPLETE_CONNECT, NDK_FN_REJECT).
 */
static void test_accept_aborted_and_complete_aborted(void **state)
{
	struct sockaddr_in any = cm_lo4(0);
	struct tool_listener l;
	NDK_CONNECTOR *c, *in;
	struct cm_req r, acc;
	struct disc d = { 0 };
	NTSTATUS st;

	assert_int_equal(cm_listen(&srv, &l, (struct sockaddr *)&any),
			 STATUS_SUCCESS);
	/* 1: the active side rejects after its connect completed. */
	c = cm_connector(&cli);
	in = connect_accept_ex(c, &l, &r, &acc, &d);
	if (accept_waits(&srv)) {
		assert_int_equal(cm_req_wait(&acc, 50), -1);
		assert_int_equal(c->Dispatch->NdkReject(c, NULL, 0),
				 STATUS_SUCCESS);
		assert_int_equal(cm_req_wait(&acc, 5000),
				 STATUS_CONNECTION_ABORTED);
		assert_int_equal(atomic_load(&d.calls), 0); /* never up */
	} else {
		/* iWARP: the Accept completed with the Reply; the Reject
		 * ends the connection at once (docs/verbs.md, Connection
		 * management). */
		assert_int_equal(cm_req_wait(&acc, 5000), STATUS_SUCCESS);
		assert_int_equal(c->Dispatch->NdkReject(c, NULL, 0),
				 STATUS_SUCCESS);
		assert_true(tu_wait_until(disc_called, &d, 5000));
	}
	cm_close_connector(in);
	cm_close_connector(c);

	/* 2: the active side closes its connector instead. */
	memset(&d, 0, sizeof(d));
	c = cm_connector(&cli);
	in = connect_accept_ex(c, &l, &r, &acc, &d);
	cm_close_connector(c);
	if (accept_waits(&srv)) {
		assert_int_equal(cm_req_wait(&acc, 5000),
				 STATUS_CONNECTION_ABORTED);
		assert_int_equal(atomic_load(&d.calls), 0);
	} else {
		assert_int_equal(cm_req_wait(&acc, 5000), STATUS_SUCCESS);
		assert_true(tu_wait_until(disc_called, &d, 5000));
	}
	cm_close_connector(in);

	/* 3: the acceptor goes away before CompleteConnect. */
	memset(&d, 0, sizeof(d));
	c = cm_connector(&cli);
	in = connect_accept_ex(c, &l, &r, &acc, &d);
	if (!accept_waits(&srv))
		assert_int_equal(cm_req_wait(&acc, 5000), STATUS_SUCCESS);
	cm_close_connector(in);
	if (accept_waits(&srv))
		assert_int_equal(cm_req_wait(&acc, 5000), STATUS_CANCELLED);
	tu_sleep_ms(200); /* let the news arrive */
	assert_int_equal(
		c->Dispatch->NdkCompleteConnectEx(c, NULL, NULL, NULL, NULL),
		STATUS_CONNECTION_ABORTED);
	/* Abandoned: every later call says so. */
	assert_int_equal(c->Dispatch->NdkReject(c, NULL, 0),
			 STATUS_CONNECTION_ABORTED);
	cm_close_connector(c);

	/* 4: the connecting peer leaves before Accept / Reject. */
	c = cm_connector(&cli);
	assert_int_equal(cm_connect(c, cm_qp(&cli), (struct sockaddr *)&l.addr,
				    4, 4, NULL, 0, &r),
			 STATUS_PENDING);
	in = cm_next_incoming(&l, 5000);
	assert_non_null(in);
	cm_close_connector(c);
	assert_int_equal(cm_req_wait(&r, 5000), STATUS_CANCELLED);
	tu_sleep_ms(200);
	if (accept_waits(&srv)) {
		assert_int_equal(in->Dispatch->NdkReject(in, NULL, 0),
				 STATUS_CONNECTION_ABORTED);
		assert_int_equal(in->Dispatch->NdkAcceptEx(in, cm_qp(&srv), 4,
							   4, NULL, 0, NULL,
							   NULL, NULL, NULL),
				 STATUS_CONNECTION_ABORTED);
		cm_close_connector(in);
	} else {
		/* siw's initiator keeps its stream open until its MPA timer
		 * ends, so the acceptor cannot tell yet: a Reject goes out
		 * (test_initiator_left_raw has a stream that closes), an
		 * Accept fails or, once the Reply is out, completes and the
		 * connection ends (docs/verbs.md, Connection management). */
		st = in->Dispatch->NdkReject(in, NULL, 0);
		assert_true(st == STATUS_CONNECTION_ABORTED ||
			    st == STATUS_SUCCESS);
		cm_close_connector(in);
		c = cm_connector(&cli);
		assert_int_equal(cm_connect(c, cm_qp(&cli),
					    (struct sockaddr *)&l.addr, 4, 4,
					    NULL, 0, &r),
				 STATUS_PENDING);
		in = cm_next_incoming(&l, 5000);
		assert_non_null(in);
		cm_close_connector(c);
		tu_sleep_ms(200);
		cm_req_init(&acc);
		memset(&d, 0, sizeof(d));
		st = in->Dispatch->NdkAcceptEx(in, cm_qp(&srv), 4, 4, NULL, 0,
					       on_disc, &d, cm_req_done, &acc);
		st = cm_req_result(st, &acc, 5000);
		if (st == STATUS_SUCCESS)
			assert_true(tu_wait_until(disc_called, &d, 15000));
		else
			assert_int_equal(st, STATUS_CONNECTION_ABORTED);
		cm_close_connector(in);
	}
	cm_listener_close(&l);
}

/*
 * A raw iWARP initiator (a TCP socket and an MPA v2 Request, no RTR)
 * that leaves before its request is answered, with a FIN or a reset:
 * Reject and Accept say STATUS_CONNECTION_ABORTED (NDK_FN_REJECT,
 * NDK_FN_ACCEPT). An iWARP device's kernel CM does not report it; the
 * TCP stream does (docs/verbs.md, Connection management).
 */
static void test_initiator_left_raw(void **state)
{
	static const unsigned char req[] = {
		'M',  'P', 'A', ' ', 'I', 'D', ' ', 'R',
		'e',  'q', ' ', 'F', 'r', 'a', 'm', 'e',
		0x10, 2,   0,	4,   0,	  4,   0,   4 /* IRD, ORD 4 */
	};
	struct sockaddr_in any = cm_lo4(0);
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };
	struct tool_listener l;
	NDK_CONNECTOR *in;
	struct cm_req acc;
	NTSTATUS st;
	int fd;

	cm_require(srv.info.RdmaTechnology == NdkiWarp,
		   "a TCP peer (IB and RoCE connect over the IB CM)");
	assert_int_equal(cm_listen(&srv, &l, (struct sockaddr *)&any),
			 STATUS_SUCCESS);
	for (int i = 0; i < 4; i++) {
		fd = socket(AF_INET, SOCK_STREAM, 0);
		assert_int_equal(connect(fd, (struct sockaddr *)&l.addr,
					 sizeof(struct sockaddr_in)),
				 0);
		assert_int_equal(send(fd, req, sizeof(req), 0), sizeof(req));
		in = cm_next_incoming(&l, 5000);
		assert_non_null(in);
		if (i & 1)
			assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_LINGER,
						    &lg, sizeof(lg)),
					 0);
		close(fd);
		tu_sleep_ms(200);
		if (i < 2) {
			assert_int_equal(in->Dispatch->NdkReject(in, NULL, 0),
					 STATUS_CONNECTION_ABORTED);
		} else {
			cm_req_init(&acc);
			st = in->Dispatch->NdkAcceptEx(in, cm_qp(&srv), 4, 4,
						       NULL, 0, NULL, NULL,
						       cm_req_done, &acc);
			assert_int_equal(st, STATUS_CONNECTION_ABORTED);
		}
		cm_close_connector(in);
	}
	cm_listener_close(&l);
}

/* A TCP listener that accepts and never answers: the Connect times out. */
static void test_connect_timeout(void **state)
{
	NDK_CONNECTOR *c = cm_connector(&cli);
	struct sockaddr_in raw_addr = cm_lo4(0);
	socklen_t alen = sizeof(raw_addr);
	int raw, peer;

	/* A TCP listener stands for a peer: iWARP only (docs/verbs.md). */
	cm_require(cli.info.RdmaTechnology == NdkiWarp,
		   "a TCP peer (IB and RoCE connect over the IB CM)");
	setenv("NDK_CM_TIMEOUT_MS", "300", 1);
	raw = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(raw >= 0);
	assert_int_equal(
		bind(raw, (struct sockaddr *)&raw_addr, sizeof(raw_addr)), 0);
	assert_int_equal(listen(raw, 4), 0);
	getsockname(raw, (struct sockaddr *)&raw_addr, &alen);
	assert_int_equal(connect_status(c, cm_qp(&cli),
					(struct sockaddr *)&raw_addr, 5000),
			 STATUS_IO_TIMEOUT);
	peer = accept(raw, NULL, NULL);
	if (peer >= 0)
		close(peer);
	close(raw);
	cm_close_connector(c);
}

/*
 * The initiator never calls CompleteConnect: the Accept fails with
 * STATUS_IO_TIMEOUT after NDK_CM_TIMEOUT_MS, and the late CompleteConnect
 * finds the attempt aborted (NDK_FN_ACCEPT_EX). An iWARP device cannot
 * hold the Accept at all: it completes with the Reply, and the acceptor
 * gets the disconnect event when the initiator's own timer
 * ends the attempt (docs/verbs.md, Connection management).
 */
static void test_accept_timeout(void **state)
{
	struct sockaddr_in any = cm_lo4(0);
	struct tool_listener l;
	NDK_CONNECTOR *c = cm_connector(&cli), *in;
	struct cm_req r, acc;
	struct disc d = { 0 };
	uint64_t t0;

	setenv("NDK_CM_TIMEOUT_MS", "300", 1);
	assert_int_equal(cm_listen(&srv, &l, (struct sockaddr *)&any),
			 STATUS_SUCCESS);
	t0 = tu_now_ms();
	in = connect_accept_ex(c, &l, &r, &acc, &d);
	if (accept_waits(&srv)) {
		assert_int_equal(cm_req_wait(&acc, 5000), STATUS_IO_TIMEOUT);
		assert_true(tu_now_ms() - t0 >= 300 - 20);
		/* The acceptor gave up first: abandoned, for us. */
		tu_sleep_ms(200);
		assert_int_equal(c->Dispatch->NdkCompleteConnect(c, NULL, NULL,
								 NULL, NULL),
				 STATUS_CONNECTION_ABORTED);
	} else {
		assert_int_equal(cm_req_wait(&acc, 5000), STATUS_SUCCESS);
		/* Twice NDK_CM_TIMEOUT_MS later our side ends it. */
		assert_true(tu_wait_until(disc_called, &d, 5000));
		assert_true(tu_now_ms() - t0 >= 2 * 300 - 20);
		/* siw's kernel CM reports only that the stream closed. */
		assert_int_equal(atomic_load(&d.reason), 0);
		assert_int_equal(c->Dispatch->NdkCompleteConnect(c, NULL, NULL,
								 NULL, NULL),
				 STATUS_IO_TIMEOUT);
	}
	assert_int_equal(atomic_load(&d.calls), accept_waits(&srv) ? 0 : 1);
	cm_close_connector(c);
	cm_close_connector(in);
	cm_listener_close(&l);
}

/*
 * Our CompleteConnect timer (twice NDK_CM_TIMEOUT_MS) ends an attempt the
 * consumer never completes, however patient the acceptor; every later
 * call on the connector says so (NDK_FN_COMPLETE_CONNECT, NDK_FN_REJECT).
 * The acceptor's engine is held so that its own timer cannot come first.
 */
static void test_abandoned_after_timeout(void **state)
{
	struct sockaddr_in any = cm_lo4(0);
	struct tool_listener l;
	NDK_CONNECTOR *c = cm_connector(&cli), *in, *blk;
	NDK_SHARED_ENDPOINT *sep;
	struct blocker b = { .ms = 1600 };
	struct cm_req r, acc;
	struct disc d = { 0 };
	NTSTATUS st;

	setenv("NDK_CM_TIMEOUT_MS", "500", 1);
	assert_int_equal(cm_listen(&srv, &l, (struct sockaddr *)&any),
			 STATUS_SUCCESS);
	in = connect_accept_ex(c, &l, &r, &acc, &d);
	blk = block_engine(&srv, &b, &sep);
	tu_sleep_ms(2 * 500 + 200);
	assert_int_equal(
		c->Dispatch->NdkCompleteConnect(c, NULL, NULL, NULL, NULL),
		STATUS_IO_TIMEOUT);
	assert_int_equal(c->Dispatch->NdkReject(c, NULL, 0),
			 STATUS_CONNECTION_ABORTED);
	assert_int_equal(
		c->Dispatch->NdkCompleteConnect(c, NULL, NULL, NULL, NULL),
		STATUS_IO_TIMEOUT);
	/* The acceptor is told once its engine runs again: its Accept fails
	 * (or, on an iWARP device, completed and the connection ends). */
	st = cm_req_wait(&acc, 5000);
	if (accept_waits(&srv))
		assert_true(st == STATUS_CONNECTION_ABORTED ||
			    st == STATUS_IO_TIMEOUT);
	else
		assert_true(st == STATUS_SUCCESS &&
			    tu_wait_until(disc_called, &d, 5000));
	cm_close_connector(c);
	cm_close_connector(in);
	cm_close_connector(blk);
	close_sep(sep);
	cm_listener_close(&l);
}

static void test_sharing_violation(void **state)
{
	struct sockaddr_in any = cm_lo4(0), held;
	struct tool_listener l, l2;
	NDK_SHARED_ENDPOINT *sep;
	NDK_CONNECTOR *c = cm_connector(&cli), *in, *c2;
	struct cm_req r, acc;
	struct pending {
		NDK_CONNECTOR *c;
	} dummy;
	ULONG len;

	(void)dummy;
	assert_int_equal(cm_listen(&srv, &l, (struct sockaddr *)&any),
			 STATUS_SUCCESS);
	memcpy(&held, &l.addr, sizeof(held));
	/* Held by a listener: connect from it, listen on it. */
	c2 = cm_connector(&cli);
	cm_req_init(&r);
	assert_int_equal(c2->Dispatch->NdkConnect(
				 c2, cm_qp(&cli), (PSOCKADDR)&held,
				 sizeof(held), (PSOCKADDR)&held, sizeof(held),
				 1, 1, NULL, 0, cm_req_done, &r),
			 STATUS_SHARING_VIOLATION);
	assert_int_equal(cm_listen(&srv, &l2, (struct sockaddr *)&held),
			 STATUS_SHARING_VIOLATION);
	cm_listener_close(&l2);

	/* An accepted connector keeps the endpoint after the listener is
	 * closed (NDKPI Object Lifetime Requirements). */
	assert_int_equal(cm_connect(c, cm_qp(&cli), (struct sockaddr *)&held, 4,
				    4, NULL, 0, &r),
			 STATUS_PENDING);
	in = cm_next_incoming(&l, 5000);
	assert_non_null(in);
	cm_req_init(&acc);
	assert_int_equal(in->Dispatch->NdkAccept(in, cm_qp(&srv), 4, 4, NULL, 0,
						 NULL, NULL, cm_req_done, &acc),
			 STATUS_PENDING);
	assert_int_equal(cm_req_wait(&r, 5000), STATUS_SUCCESS);
	assert_int_equal(
		c->Dispatch->NdkCompleteConnect(c, NULL, NULL, NULL, NULL),
		STATUS_SUCCESS);
	assert_int_equal(cm_req_wait(&acc, 5000), STATUS_SUCCESS);
	assert_int_equal(
		l.lis->Dispatch->NdkCloseListener(&l.lis->Header, NULL, NULL),
		STATUS_PENDING);
	assert_int_equal(cm_listen(&srv, &l2, (struct sockaddr *)&held),
			 STATUS_SHARING_VIOLATION);
	cm_listener_close(&l2);
	/* Once closing, new requests on it are refused. */
	assert_int_equal(connect_status(cm_connector(&cli), cm_qp(&cli),
					(struct sockaddr *)&held, 5000),
			 STATUS_CONNECTION_REFUSED);
	cm_close_connector(in);
	cm_close_connector(c);
	/* Last reference gone: the address is free again. */
	tu_sleep_ms(20);
	assert_int_equal(cm_listen(&srv, &l2, (struct sockaddr *)&held),
			 STATUS_SUCCESS);
	cm_listener_close(&l2);

	/* Held by a connector's own endpoint and by a shared endpoint. */
	held = reserved_port(&sep);
	c2 = cm_connector(&cli);
	assert_int_equal(c2->Dispatch->NdkConnect(
				 c2, cm_qp(&cli), (PSOCKADDR)&held,
				 sizeof(held), (PSOCKADDR)&held, sizeof(held),
				 1, 1, NULL, 0, cm_req_done, &r),
			 STATUS_SHARING_VIOLATION);
	close_sep(sep);
	assert_int_equal(cm_listen(&srv, &l, (struct sockaddr *)&any),
			 STATUS_SUCCESS);
	c = cm_connector(&cli);
	assert_int_equal(cm_connect(c, cm_qp(&cli), (struct sockaddr *)&l.addr,
				    4, 4, NULL, 0, &r),
			 STATUS_PENDING);
	len = sizeof(held);
	assert_int_equal(
		c->Dispatch->NdkGetLocalAddress(c, (PSOCKADDR)&held, &len),
		STATUS_SUCCESS);
	assert_int_equal(srv.ad->Dispatch->NdkCreateSharedEndpoint(
				 srv.ad, (PSOCKADDR)&held, sizeof(held), NULL,
				 NULL, &sep),
			 STATUS_SHARING_VIOLATION);
	in = cm_next_incoming(&l, 5000);
	assert_non_null(in);
	cm_close_connector(in);
	cm_close_connector(c);
	cm_listener_close(&l);
}

/* An IPv4 address of this machine that is not on the test interface, if
 * any. */
static bool other_address(struct sockaddr_in *out)
{
	struct ifaddrs *list, *i;
	bool found = false;

	if (getifaddrs(&list))
		return false;
	for (i = list; i && !found; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET ||
		    !strcmp(i->ifa_name, cm_test_ifname()))
			continue;
		memcpy(out, i->ifa_addr, sizeof(*out));
		found = true;
	}
	freeifaddrs(list);
	return found;
}

static void test_invalid_address(void **state)
{
	struct sockaddr_in src, dst = cm_lo4(9);
	NDK_CONNECTOR *c = cm_connector(&cli);
	struct cm_req r;

	/* eth0's address on the lo adapter, or one on no interface. */
	if (!other_address(&src)) {
		src = cm_lo4(0);
		inet_pton(AF_INET, "192.0.2.1", &src.sin_addr);
	}
	src.sin_port = 0;
	cm_req_init(&r);
	assert_int_equal(c->Dispatch->NdkConnect(
				 c, cm_qp(&cli), (PSOCKADDR)&src, sizeof(src),
				 (PSOCKADDR)&dst, sizeof(dst), 1, 1, NULL, 0,
				 cm_req_done, &r),
			 STATUS_INVALID_ADDRESS);
	/* Malformed addresses are parameters errors. */
	assert_int_equal(
		c->Dispatch->NdkConnect(c, cm_qp(&cli), (PSOCKADDR)&src, 3,
					(PSOCKADDR)&dst, sizeof(dst), 1, 1,
					NULL, 0, cm_req_done, &r),
		STATUS_INVALID_PARAMETER);
	cm_close_connector(c);
}

static void test_too_many_addresses(void **state)
{
	struct sockaddr_in any = cm_lo4(0);
	NDK_SHARED_ENDPOINT *sep;
	struct sockaddr_in held = reserved_port(&sep);
	char port[8];
	NDK_CONNECTOR *c = cm_connector(&cli);
	struct cm_req r;

	/* A one-port ephemeral range, already taken. */
	snprintf(port, sizeof(port), "%u", ntohs(held.sin_port));
	setenv("NDK_EPHEMERAL_PORT_MIN", port, 1);
	setenv("NDK_EPHEMERAL_PORT_MAX", port, 1);
	assert_int_equal(cm_connect(c, cm_qp(&cli), (struct sockaddr *)&any, 4,
				    4, NULL, 0, &r),
			 STATUS_TOO_MANY_ADDRESSES);
	unsetenv("NDK_EPHEMERAL_PORT_MIN");
	unsetenv("NDK_EPHEMERAL_PORT_MAX");
	close_sep(sep);
	cm_close_connector(c);
}

/* A TCP socket bound to port (0: the kernel picks), or -1. */
static int bound_socket(uint16_t port, bool reuse)
{
	struct sockaddr_in sin = cm_lo4(port);
	int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	if (reuse)
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin))) {
		close(fd);
		return -1;
	}
	return fd;
}

/* A connection from lfd's queue within ms, or -1. */
static int accept_within(int lfd, int ms)
{
	struct pollfd pfd = { .fd = lfd, .events = POLLIN };

	if (poll(&pfd, 1, ms) != 1)
		return -1;
	return accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
}

static uint16_t local_port(int fd)
{
	struct sockaddr_in sin;
	socklen_t len = sizeof(sin);

	assert_int_equal(getsockname(fd, (struct sockaddr *)&sin, &len), 0);
	return ntohs(sin.sin_port);
}

/*
 * A picked source port whose pair with the destination the kernel holds
 * already (another process's connection, or one in TIME_WAIT where the
 * kernel does not reuse those) is passed over, not reported as
 * STATUS_ADDRESS_ALREADY_EXISTS: the consumer named no port (docs/ndk.md,
 * Endpoints). A two-port range whose first port has an open connection of
 * a plain socket (SO_REUSEADDR, as another process's would be) to a plain
 * TCP listener: the Connect pends from the second. Eight rounds, since the
 * table starts each process at a random port of the range.
 */
static void test_picked_port_pair_taken(void **state)
{
	struct sockaddr_in dst;
	int lfd;
	char v[8];

	/* The software provider's own TCP connect. The verbs provider's
	 * check before an iWARP device connects has no test here: siw
	 * against a plain listener holds the connector's close until its
	 * MPA timer, and rxe makes no TCP connection at all. */
	if (!cm_provider_is(&cli, "software"))
		skip();
	lfd = bound_socket(0, false);

	assert_true(lfd >= 0);
	assert_int_equal(listen(lfd, 16), 0);
	dst = cm_lo4(local_port(lfd));
	for (int round = 0; round < 8; round++) {
		int s = bound_socket(0, true), probe, acc;
		uint16_t p = local_port(s);
		NDK_CONNECTOR *c;
		struct sockaddr_in got;
		ULONG len = sizeof(got);
		struct cm_req r;
		bool pending;
		NTSTATUS st;

		/* The port after it must be free too. */
		probe = p < 65535 ? bound_socket((uint16_t)(p + 1), false) : -1;
		if (probe < 0) {
			close(s);
			round--;
			continue;
		}
		close(probe);
		assert_int_equal(
			connect(s, (struct sockaddr *)&dst, sizeof(dst)), 0);
		acc = accept_within(lfd, 5000);
		assert_true(acc >= 0);
		snprintf(v, sizeof(v), "%u", p);
		setenv("NDK_EPHEMERAL_PORT_MIN", v, 1);
		snprintf(v, sizeof(v), "%u", p + 1);
		setenv("NDK_EPHEMERAL_PORT_MAX", v, 1);
		c = cm_connector(&cli);
		st = cm_connect(c, cm_qp(&cli), (struct sockaddr *)&dst, 4, 4,
				NULL, 0, &r);
		pending = st == STATUS_PENDING;
		if (st == STATUS_PENDING &&
		    !c->Dispatch->NdkGetLocalAddress(c, (PSOCKADDR)&got, &len))
			st = ntohs(got.sin_port) == p + 1 ? STATUS_SUCCESS
							  : STATUS_UNSUCCESSFUL;
		/* A device's own connect fails after the call returned. */
		if (st == STATUS_SUCCESS &&
		    cm_req_wait(&r, 200) == STATUS_ADDRESS_ALREADY_EXISTS)
			st = STATUS_ADDRESS_ALREADY_EXISTS;
		cm_close_connector(c);
		/* The close cancels a pending Connect: r is this round's
		 * until its completion came. */
		if (pending)
			cm_req_wait(&r, 5000);
		close(s);
		close(acc);
		/* The Connect's stream, if it got that far. */
		acc = accept_within(lfd, 0);
		if (acc >= 0)
			close(acc);
		if (st != STATUS_SUCCESS)
			fail_msg("round %d: port %u taken towards the "
				 "destination: %s",
				 round, p, NdkStatusName(st));
	}
	unsetenv("NDK_EPHEMERAL_PORT_MIN");
	unsetenv("NDK_EPHEMERAL_PORT_MAX");
	close(lfd);
}

static void test_shared_endpoint_connects(void **state)
{
	struct sockaddr_in any = cm_lo4(0), local, got;
	struct tool_listener l1, l2;
	NDK_SHARED_ENDPOINT *sep;
	NDK_CONNECTOR *c[3], *in[2];
	struct cm_req r[3];
	ULONG len;
	int i;

	assert_int_equal(cm_listen(&srv, &l1, (struct sockaddr *)&any),
			 STATUS_SUCCESS);
	assert_int_equal(cm_listen(&srv, &l2, (struct sockaddr *)&any),
			 STATUS_SUCCESS);
	local = cm_lo4(0);
	assert_int_equal(cli.ad->Dispatch->NdkCreateSharedEndpoint(
				 cli.ad, (PSOCKADDR)&local, sizeof(local), NULL,
				 NULL, &sep),
			 STATUS_SUCCESS);
	len = sizeof(local);
	assert_int_equal(
		sep->Dispatch->NdkGetLocalAddress(sep, (PSOCKADDR)&local, &len),
		STATUS_SUCCESS);
	for (i = 0; i < 3; i++) {
		c[i] = cm_connector(&cli);
		cm_req_init(&r[i]);
	}
	/* One local address:port, two destinations. */
	assert_int_equal(c[0]->Dispatch->NdkConnectWithSharedEndpoint(
				 c[0], cm_qp(&cli), sep, (PSOCKADDR)&l1.addr,
				 sizeof(struct sockaddr_in), 4, 4, NULL, 0,
				 cm_req_done, &r[0]),
			 STATUS_PENDING);
	assert_int_equal(c[1]->Dispatch->NdkConnectWithSharedEndpoint(
				 c[1], cm_qp(&cli), sep, (PSOCKADDR)&l2.addr,
				 sizeof(struct sockaddr_in), 4, 4, NULL, 0,
				 cm_req_done, &r[1]),
			 STATUS_PENDING);
	/* The same destination again: that 4-tuple exists. */
	assert_int_equal(c[2]->Dispatch->NdkConnectWithSharedEndpoint(
				 c[2], cm_qp(&cli), sep, (PSOCKADDR)&l1.addr,
				 sizeof(struct sockaddr_in), 4, 4, NULL, 0,
				 cm_req_done, &r[2]),
			 STATUS_ADDRESS_ALREADY_EXISTS);
	in[0] = cm_next_incoming(&l1, 5000);
	in[1] = cm_next_incoming(&l2, 5000);
	assert_non_null(in[0]);
	assert_non_null(in[1]);
	for (i = 0; i < 2; i++) {
		len = sizeof(got);
		assert_int_equal(in[i]->Dispatch->NdkGetPeerAddress(
					 in[i], (PSOCKADDR)&got, &len),
				 STATUS_SUCCESS);
		assert_int_equal(got.sin_port, local.sin_port);
	}
	/* The shared endpoint's close waits for its connectors. */
	assert_int_equal(
		sep->Dispatch->NdkCloseSharedEndpoint(&sep->Header, NULL, NULL),
		STATUS_PENDING);
	for (i = 0; i < 3; i++)
		cm_close_connector(c[i]);
	cm_close_connector(in[0]);
	cm_close_connector(in[1]);
	cm_listener_close(&l1);
	cm_listener_close(&l2);
}

/*
 * The child of test_insufficient_resources, a new process (exec'd: no
 * rdma-core context or engine thread of the parent's is shared,
 * docs/verbs.md, Processes): an adapter, then every file descriptor used
 * up, then a connect. Exit 0 if it said STATUS_INSUFFICIENT_RESOURCES.
 */
static int exhausted_connect(void)
{
	struct rlimit rl;
	struct sockaddr_in dst = cm_lo4(9);
	struct cm_host h;
	NDK_CONNECTOR *c;
	NDK_QP *qp;
	struct cm_req r;
	NTSTATUS st;
	int fd;

	cm_host_open(&h, cm_test_ifname());
	c = cm_connector(&h);
	qp = cm_qp(&h);
	getrlimit(RLIMIT_NOFILE, &rl);
	rl.rlim_cur = 64;
	setrlimit(RLIMIT_NOFILE, &rl);
	while ((fd = dup(0)) >= 0)
		;
	st = cm_connect(c, qp, (struct sockaddr *)&dst, 1, 1, NULL, 0, &r);
	if (st != STATUS_INSUFFICIENT_RESOURCES)
		fprintf(stderr, "connect: %s\n", NdkStatusName(st));
	_exit(st == STATUS_INSUFFICIENT_RESOURCES ? 0 : 1);
}

#define EXHAUSTED_CONNECT "--exhausted-connect"

static void test_insufficient_resources(void **state)
{
	static char name[] = "test_cm_status", mode[] = EXHAUSTED_CONNECT;
	char *argv[] = { name, mode, NULL };
	pid_t pid;
	int wstatus;

	assert_int_equal(
		posix_spawn(&pid, "/proc/self/exe", NULL, NULL, argv, environ),
		0);
	assert_int_equal(waitpid(pid, &wstatus, 0), pid);
	assert_true(WIFEXITED(wstatus));
	assert_int_equal(WEXITSTATUS(wstatus), 0);
}

/* Hundreds of connects in flight at once; every one completes. */
static void test_many_at_once(void **state)
{
	enum { N = 200 };
	struct sockaddr_in any = cm_lo4(0);
	static struct tool_listener l;
	static NDK_CONNECTOR *c[N];
	static NDK_QP *aqp[N], *pqp[N];
	static struct cm_req r[N];
	int i, accepted = 0;

	/* Every QP first: a device short of queue memory skips here, before
	 * anything could call back (docs/verbs.md, Devices). */
	for (i = 0; i < N; i++) {
		aqp[i] = cm_qp(&cli);
		pqp[i] = cm_qp(&srv);
	}
	setenv("NDK_LISTEN_BACKLOG", "1000", 1);
	assert_int_equal(cm_listen(&srv, &l, (struct sockaddr *)&any),
			 STATUS_SUCCESS);
	for (i = 0; i < N; i++) {
		c[i] = cm_connector(&cli);
		assert_int_equal(cm_connect(c[i], aqp[i],
					    (struct sockaddr *)&l.addr, 1, 1,
					    NULL, 0, &r[i]),
				 STATUS_PENDING);
	}
	while (accepted < N) {
		NDK_CONNECTOR *in = cm_next_incoming(&l, 10000);

		assert_non_null(in);
		assert_int_equal(in->Dispatch->NdkAccept(in, pqp[accepted], 1,
							 1, NULL, 0, NULL, NULL,
							 NULL, NULL),
				 STATUS_PENDING);
		accepted++;
	}
	for (i = 0; i < N; i++) {
		assert_int_equal(cm_req_wait(&r[i], 10000), STATUS_SUCCESS);
		assert_int_equal(c[i]->Dispatch->NdkCompleteConnect(
					 c[i], NULL, NULL, NULL, NULL),
				 STATUS_SUCCESS);
	}
	for (i = 0; i < N; i++)
		cm_close_connector(c[i]);
	cm_listener_close(&l);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_refused_no_listener, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_refused_paused_and_backlog,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_reject_with_data, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_private_data_limit, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_callee_data_limit, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			test_accept_aborted_and_complete_aborted, setup,
			teardown),
		cmocka_unit_test_setup_teardown(test_initiator_left_raw, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_connect_timeout, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_accept_timeout, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_abandoned_after_timeout,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_sharing_violation, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_invalid_address, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_too_many_addresses, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_picked_port_pair_taken,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_shared_endpoint_connects,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_insufficient_resources,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_many_at_once, setup,
						teardown),
	};

	if (argc == 2 && !strcmp(argv[1], EXHAUSTED_CONNECT))
		return exhausted_connect();
	return cmocka_run_group_tests_name("cm_status", tests, NULL, NULL);
}
