/* SPDX-License-Identifier: MIT */
/*
 * Closing connection-management objects in every state (NDKPI Object
 * Lifetime Requirements; NDKPI Listeners, Connectors, and Endpoints): a connector while its TCP connect is pending, while it awaits the
 * Reply, after the peer disconnected, while disconnecting; a listener
 * before and after NdkListen; and the disconnect event's no-flush rule.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "cmutil.h"
#include "testutil.h"

static struct cm_host srv, cli;

static int setup(void **state)
{
	unsetenv("NDK_CM_TIMEOUT_MS");
	cm_hosts_open(&srv, &cli);
	return 0;
}

static int teardown(void **state)
{
	cm_hosts_close(&srv, &cli);
	return 0;
}

struct closed {
	atomic_int calls;
};

static VOID on_closed(PVOID ctx)
{
	atomic_fetch_add(&((struct closed *)ctx)->calls, 1);
}

static bool closed_once(void *arg)
{
	return atomic_load(&((struct closed *)arg)->calls) == 1;
}

/* A TCP listener whose accept queue is full: further SYNs are dropped,
 * so a connect to it stays pending in the kernel. */
static int silent_listener(struct sockaddr_in *addr, int *filler)
{
	socklen_t len = sizeof(*addr);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	*addr = cm_lo4(0);
	assert_int_equal(bind(fd, (struct sockaddr *)addr, sizeof(*addr)), 0);
	assert_int_equal(listen(fd, 0), 0);
	getsockname(fd, (struct sockaddr *)addr, &len);
	*filler = socket(AF_INET, SOCK_STREAM, 0);
	assert_int_equal(
		connect(*filler, (struct sockaddr *)addr, sizeof(*addr)), 0);
	tu_sleep_ms(20);
	return fd;
}

static void test_close_while_tcp_connecting(void **state)
{
	struct sockaddr_in addr;
	int filler[3], lfd = silent_listener(&addr, &filler[0]);
	NDK_CONNECTOR *c;
	struct cm_req r;
	struct closed cl = { 0 };
	NTSTATUS st;
	uint64_t t0;
	int i;

	/* A TCP listener stands for a peer: iWARP only (docs/verbs.md). */
	cm_require(cli.info.RdmaTechnology == NdkiWarp,
		   "a TCP peer (IB and RoCE connect over the IB CM)");
	/* Fill the accept queue (backlog 0 holds one more) for sure. */
	for (i = 1; i < 3; i++) {
		filler[i] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
		connect(filler[i], (struct sockaddr *)&addr, sizeof(addr));
	}
	tu_sleep_ms(20);
	c = cm_connector(&cli);
	assert_int_equal(cm_connect(c, cm_qp(&cli), (struct sockaddr *)&addr, 1,
				    1, NULL, 0, &r),
			 STATUS_PENDING);
	tu_sleep_ms(100);
	assert_int_equal(cm_req_wait(&r, 0), -1); /* still connecting */
	t0 = tu_now_ms();
	st = c->Dispatch->NdkCloseConnector(&c->Header, on_closed, &cl);
	assert_true(st == STATUS_PENDING || st == STATUS_SUCCESS);
	/* Abandoned at once: the request completes, then the close. */
	assert_int_equal(cm_req_wait(&r, 2000), STATUS_CANCELLED);
	if (st == STATUS_PENDING)
		assert_true(tu_wait_until(closed_once, &cl, 2000));
	assert_true(tu_now_ms() - t0 < 1000);
	for (i = 0; i < 3; i++)
		close(filler[i]);
	close(lfd);
}

static void test_close_awaiting_reply(void **state)
{
	struct sockaddr_in addr = cm_lo4(0);
	socklen_t len = sizeof(addr);
	int lfd = socket(AF_INET, SOCK_STREAM, 0), peer;
	NDK_CONNECTOR *c = cm_connector(&cli);
	struct cm_req r;
	char buf[64];

	cm_require(cli.info.RdmaTechnology == NdkiWarp,
		   "a TCP peer (IB and RoCE connect over the IB CM)");
	assert_int_equal(bind(lfd, (struct sockaddr *)&addr, sizeof(addr)), 0);
	assert_int_equal(listen(lfd, 4), 0);
	getsockname(lfd, (struct sockaddr *)&addr, &len);
	assert_int_equal(cm_connect(c, cm_qp(&cli), (struct sockaddr *)&addr, 1,
				    1, NULL, 0, &r),
			 STATUS_PENDING);
	peer = accept(lfd, NULL, NULL);
	assert_true(peer >= 0);
	assert_true(recv(peer, buf, sizeof(buf), 0) > 0); /* the Request */
	cm_close_connector(c);
	assert_int_equal(cm_req_wait(&r, 2000), STATUS_CANCELLED);
	/* The peer sees the connection end. */
	assert_int_equal(recv(peer, buf, sizeof(buf), 0), 0);
	close(peer);
	close(lfd);
}

struct disc {
	atomic_int calls;
};

static VOID on_disc(PVOID ctx)
{
	atomic_fetch_add(&((struct disc *)ctx)->calls, 1);
}

static bool disc_seen(void *arg)
{
	return atomic_load(&((struct disc *)arg)->calls) > 0;
}

static void test_disconnect_event_does_not_flush(void **state)
{
	struct sockaddr_in any = cm_lo4(0);
	struct tool_listener l;
	NDK_QP *aqp = cm_qp(&cli), *pqp = cm_qp(&srv);
	NDK_CONNECTOR *c = cm_connector(&cli), *in;
	struct cm_req r, acc;
	struct disc pd = { 0 };
	NDK_RESULT_EX res[4];
	NDK_SGE sge = { 0 };
	char buf[16];
	ULONG n;

	assert_int_equal(cm_listen(&srv, &l, (struct sockaddr *)&any),
			 STATUS_SUCCESS);
	assert_int_equal(cm_connect(c, aqp, (struct sockaddr *)&l.addr, 1, 1,
				    NULL, 0, &r),
			 STATUS_PENDING);
	in = cm_next_incoming(&l, 5000);
	assert_non_null(in);
	cm_req_init(&acc);
	assert_int_equal(in->Dispatch->NdkAccept(in, pqp, 1, 1, NULL, 0,
						 on_disc, &pd, cm_req_done,
						 &acc),
			 STATUS_PENDING);
	assert_int_equal(cm_req_wait(&r, 5000), STATUS_SUCCESS);
	assert_int_equal(
		c->Dispatch->NdkCompleteConnect(c, NULL, NULL, NULL, NULL),
		STATUS_SUCCESS);
	assert_int_equal(cm_req_wait(&acc, 5000), STATUS_SUCCESS);
	/* Two receives posted on the passive QP (zero-length SGE lists). */
	sge.VirtualAddress = buf;
	(void)sge;
	assert_int_equal(pqp->Dispatch->NdkReceive(pqp, (PVOID)1, NULL, 0),
			 STATUS_SUCCESS);
	assert_int_equal(pqp->Dispatch->NdkReceive(pqp, (PVOID)2, NULL, 0),
			 STATUS_SUCCESS);
	/* The peer goes: the event fires once, nothing is flushed (an
	 * iWARP device's kernel flushes a QP whose stream closed:
	 * docs/verbs.md, Disconnect). */
	cm_close_connector(c);
	assert_true(tu_wait_until(disc_seen, &pd, 5000));
	tu_sleep_ms(50);
	n = srv.cq->Dispatch->NdkGetCqResultsEx(srv.cq, res, 4);
	if (cm_provider_is(&srv, "software"))
		assert_int_equal(n, 0);
	/* Our NdkDisconnect then flushes: both receives, in order. */
	assert_int_equal(in->Dispatch->NdkDisconnect(in, NULL, NULL),
			 STATUS_SUCCESS);
	tu_sleep_ms(50);
	n += srv.cq->Dispatch->NdkGetCqResultsEx(srv.cq, res + n, 4 - n);
	assert_int_equal(n, 2);
	assert_int_equal(res[0].Status, STATUS_CANCELLED);
	assert_ptr_equal(res[0].RequestContext, (PVOID)1);
	assert_ptr_equal(res[1].RequestContext, (PVOID)2);
	assert_int_equal(atomic_load(&pd.calls), 1);
	/* Disconnected: a second disconnect has no connection. */
	assert_int_equal(in->Dispatch->NdkDisconnect(in, NULL, NULL),
			 STATUS_CONNECTION_INVALID);
	cm_close_connector(in);
	cm_listener_close(&l);
}

static void test_close_while_disconnecting(void **state)
{
	struct sockaddr_in any = cm_lo4(0);
	struct tool_listener l;
	NDK_CONNECTOR *c = cm_connector(&cli), *in;
	struct cm_req r, acc, d;

	assert_int_equal(cm_listen(&srv, &l, (struct sockaddr *)&any),
			 STATUS_SUCCESS);
	in = cm_connect_to_accepting(&cli, c, &srv, &l, 1, &r, &acc);
	assert_int_equal(
		c->Dispatch->NdkCompleteConnect(c, NULL, NULL, NULL, NULL),
		STATUS_SUCCESS);
	assert_int_equal(cm_req_wait(&acc, 5000), STATUS_SUCCESS);
	/* The passive side never answers our FIN; we close meanwhile. */
	cm_req_init(&d);
	assert_int_equal(c->Dispatch->NdkDisconnect(c, cm_req_done, &d),
			 STATUS_PENDING);
	cm_close_connector(c);
	/* An iWARP device's kernel answers the FIN itself: the disconnect
	 * may be over before the close (docs/verbs.md, Disconnect). */
	if (cm_provider_is(&cli, "software"))
		assert_int_equal(cm_req_wait(&d, 2000), STATUS_CANCELLED);
	else
		assert_true(cm_req_wait(&d, 2000) == STATUS_CANCELLED ||
			    cm_req_wait(&d, 0) == STATUS_SUCCESS);
	cm_close_connector(in);
	cm_listener_close(&l);
}

static VOID on_connect_event(PVOID ctx, NDK_CONNECTOR *c)
{
}

static void test_listener_states(void **state)
{
	NDK_LISTENER *lis;
	struct sockaddr_in a;
	ULONG len = sizeof(a);
	struct tool_listener l;
	struct sockaddr_in any = cm_lo4(0);
	struct closed cl = { 0 };
	NTSTATUS st;
	int raw;

	/* Never listened: no address, closes inline. */
	assert_int_equal(
		srv.ad->Dispatch->NdkCreateListener(srv.ad, on_connect_event,
						    NULL, NULL, NULL, &lis),
		STATUS_SUCCESS);
	assert_int_equal(
		lis->Dispatch->NdkGetLocalAddress(lis, (PSOCKADDR)&a, &len),
		STATUS_INVALID_DEVICE_STATE);
	assert_int_equal(
		lis->Dispatch->NdkCloseListener(&lis->Header, NULL, NULL),
		STATUS_SUCCESS);
	/* Listening, with a TCP connection that never sends its Request:
	 * the close does not wait for it. */
	assert_int_equal(cm_listen(&srv, &l, (struct sockaddr *)&any),
			 STATUS_SUCCESS);
	assert_int_equal(l.lis->Dispatch->NdkListen(l.lis, (PSOCKADDR)&any,
						    sizeof(any), NULL, NULL),
			 STATUS_INVALID_DEVICE_STATE);
	raw = socket(AF_INET, SOCK_STREAM, 0);
	/* IB and RoCE listen in the IB CM, not on a TCP port. */
	if (srv.info.RdmaTechnology == NdkiWarp)
		assert_int_equal(connect(raw, (struct sockaddr *)&l.addr,
					 sizeof(struct sockaddr_in)),
				 0);
	tu_sleep_ms(50);
	st = l.lis->Dispatch->NdkCloseListener(&l.lis->Header, on_closed, &cl);
	if (st == STATUS_PENDING)
		assert_true(tu_wait_until(closed_once, &cl, 2000));
	else
		assert_int_equal(st, STATUS_SUCCESS);
	close(raw);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_close_while_tcp_connecting,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_close_awaiting_reply,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_disconnect_event_does_not_flush, setup, teardown),
		cmocka_unit_test_setup_teardown(test_close_while_disconnecting,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_listener_states, setup,
						teardown),
	};

	return cmocka_run_group_tests_name("cm_close", tests, NULL, NULL);
}
