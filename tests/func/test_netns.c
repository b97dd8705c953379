/* SPDX-License-Identifier: MIT */
/*
 * Connection management between hosts built from network namespaces,
 * through the public API only: the NdkConnect statuses that
 * loopback cannot produce (NdkConnect: NETWORK_UNREACHABLE, HOST_UNREACHABLE,
 * IO_TIMEOUT, INVALID_ADDRESS), closing a connector whose TCP connect is
 * still pending (docs/design.md, Sockets), and a full handshake between two hosts.
 *
 * Every test forks children that unshare(CLONE_NEWNET) and build their
 * links with iproute2 (netns_pair.h). A peer namespace is a second child;
 * the first one creates the veth pair with its other end in the peer's
 * namespace ("netns PID"). Needs root: without it, or without unshare or
 * veth, the tests are skipped (exit code 77).
 *
 * Children report with their exit code; a failing check prints what it got
 * (NdkStatusName) on stderr. The parent never opens an adapter, so it has
 * no threads to lose across fork().
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "cmutil.h"
#include "netns_pair.h"
#include "testutil.h"

#define PORT 4791 /* a destination port; nothing listens on it */

struct close_done {
	atomic_int calls;
	atomic_uint_fast64_t at_ms;
};

static VOID on_close(PVOID ctx)
{
	struct close_done *d = ctx;

	atomic_store(&d->at_ms, tu_now_ms());
	atomic_fetch_add(&d->calls, 1);
}

static bool close_called(void *arg)
{
	return atomic_load(&((struct close_done *)arg)->calls) > 0;
}

/*
 * Closes c while its connect r is pending: the attempt is abandoned at
 * once, Connect completes STATUS_CANCELLED and the close completes, both
 * within limit_ms. Returns the time the close took.
 */
static uint64_t close_pending(NDK_CONNECTOR *c, struct cm_req *r,
			      unsigned int limit_ms)
{
	struct close_done d = { 0 };
	uint64_t t0 = tu_now_ms(), done;
	NTSTATUS st;

	st = c->Dispatch->NdkCloseConnector(&c->Header, on_close, &d);
	if (st != STATUS_SUCCESS && st != STATUS_PENDING)
		CHILD_FAIL("NdkCloseConnector: %s", NdkStatusName(st));
	CHECK_STATUS(cm_req_wait(r, limit_ms), STATUS_CANCELLED);
	if (st == STATUS_PENDING) {
		if (!tu_wait_until(close_called, &d, limit_ms))
			CHILD_FAIL("close still pending after %u ms", limit_ms);
		done = atomic_load(&d.at_ms);
	} else {
		done = tu_now_ms();
		CHECK(atomic_load(&d.calls) == 0);
	}
	tu_sleep_ms(20);
	CHECK(atomic_load(&d.calls) == (st == STATUS_PENDING));
	CHECK(done - t0 <= limit_ms);
	return done - t0;
}

/* ------------------------------------------------------------------ */
/* 1. No route to the destination network                             */

static int child_network_unreachable(void *arg)
{
	struct cm_host h;
	struct cm_req r;
	NDK_CONNECTOR *c;
	NDK_QP *qp;
	NTSTATUS st;
	int i;

	setup_one_host();
	ns_host_open(&h, IF_A);
	qp = cm_qp(&h);
	c = cm_connector(&h);
	/* Twice: the attempt may be retried (NdkConnect). After an inline
	 * failure the connector and the QP are free for it. */
	for (i = 0; i < 2; i++) {
		st = connect4(c, qp, ADDR_A, "10.99.0.1", PORT, "x", 1, &r);
		CHECK_STATUS(cm_req_result(st, &r, 5000),
			     STATUS_NETWORK_UNREACHABLE);
		fprintf(stderr, "# NETWORK_UNREACHABLE %s\n",
			st == STATUS_PENDING ? "via the completion" : "inline");
		if (st == STATUS_PENDING)
			break;
	}
	cm_close_connector(c);
	cm_close_qp(qp);
	host_close(&h);
	return 0;
}

static void test_network_unreachable(void **state)
{
	run_child(child_network_unreachable, NULL);
}

/* ------------------------------------------------------------------ */
/* 2. An on-link neighbour that never answers ARP                     */

static int child_host_unreachable(void *arg)
{
	struct cm_host h;
	struct cm_req r;
	NDK_CONNECTOR *c;
	NDK_QP *qp;
	NTSTATUS st;
	uint64_t t0, ms;

	setup_one_host();
	/* One ARP probe, 100 ms: the neighbour fails fast. */
	SH("echo 1 > /proc/sys/net/ipv4/neigh/" IF_A "/mcast_solicit");
	SH("echo 0 > /proc/sys/net/ipv4/neigh/" IF_A "/app_solicit");
	SH("echo 100 > /proc/sys/net/ipv4/neigh/" IF_A "/retrans_time_ms");
	/* Before the adapter's thread exists (setenv is not thread-safe):
	 * the provider's timeout must not win. */
	setenv("NDK_CM_TIMEOUT_MS", "20000", 1);
	ns_host_open(&h, IF_A);
	qp = cm_qp(&h);
	c = cm_connector(&h);
	t0 = tu_now_ms();
	st = connect4(c, qp, ADDR_A, ADDR_B, PORT, NULL, 0, &r);
	CHECK_STATUS(cm_req_result(st, &r, 10000), STATUS_HOST_UNREACHABLE);
	ms = tu_now_ms() - t0;
	fprintf(stderr, "# HOST_UNREACHABLE %s after %llu ms\n",
		st == STATUS_PENDING ? "via the completion" : "inline",
		(unsigned long long)ms);
	CHECK(ms < 5000);
	cm_close_connector(c);
	cm_close_qp(qp);
	host_close(&h);
	return 0;
}

static void test_host_unreachable(void **state)
{
	run_child(child_host_unreachable, NULL);
}

/* ------------------------------------------------------------------ */
/* 3. Closing a connector whose TCP connect is pending                */

enum pending_kind {
	PENDING_SYN, /* the SYN went out to a MAC nobody has */
	PENDING_ARP, /* still resolving the neighbour (1 s per probe) */
};

static int child_close_pending(void *arg)
{
	enum pending_kind kind = *(enum pending_kind *)arg;
	struct cm_host h;
	struct cm_req r;
	NDK_CONNECTOR *c;
	NDK_QP *qp;
	uint64_t ms, t0;

	setup_one_host();
	if (kind == PENDING_SYN)
		SH("ip neigh replace " ADDR_B " lladdr " MAC_NOBODY " dev " IF_A
		   " nud permanent");
	else
		SH("echo 1000 > /proc/sys/net/ipv4/neigh/" IF_A
		   "/retrans_time_ms");
	setenv("NDK_CM_TIMEOUT_MS", "20000", 1);
	ns_host_open(&h, IF_A);
	qp = cm_qp(&h);
	c = cm_connector(&h);
	CHECK_STATUS(connect4(c, qp, ADDR_A, ADDR_B, PORT, "x", 1, &r),
		     STATUS_PENDING);
	/* Nothing answers: still pending a moment later. */
	CHECK_STATUS(cm_req_wait(&r, 200), -1);
	ms = close_pending(c, &r, 1000);
	fprintf(stderr, "# connect pending (%s) closed in %llu ms\n",
		kind == PENDING_SYN ? "SYN" : "ARP", (unsigned long long)ms);
	/* The QP is free again, and the adapter closes at once. */
	cm_close_qp(qp);
	t0 = tu_now_ms();
	host_close(&h);
	CHECK(tu_now_ms() - t0 < 1000);
	return 0;
}

static void test_close_pending_syn(void **state)
{
	enum pending_kind kind = PENDING_SYN;

	run_child(child_close_pending, &kind);
}

static void test_close_pending_arp(void **state)
{
	enum pending_kind kind = PENDING_ARP;

	run_child(child_close_pending, &kind);
}

/* ------------------------------------------------------------------ */
/* 5. The local address must be one of the adapter's                  */

static int child_invalid_address(void *arg)
{
	struct cm_host veth, lo;
	struct tool_listener l;
	struct sockaddr_in lo_any = in4("127.0.0.1", 0);
	struct cm_req r;
	NDK_CONNECTOR *c;
	NDK_QP *qp;

	setup_one_host();
	SH("ip neigh replace " ADDR_B " lladdr " MAC_NOBODY " dev " IF_A
	   " nud permanent");
	/* lo has no RDMA device: whichever provider serves it (the software
	 * one), beside the veth's. Single-threaded still: setenv is safe. */
	if (getenv("NDK_TEST_RDMA_LINK"))
		setenv("NDK_PROVIDER", "auto", 1);
	ns_host_open(&veth, IF_A);
	cm_host_open(&lo, "lo");

	/* Adapter on the veth, source address of lo. */
	qp = cm_qp(&veth);
	c = cm_connector(&veth);
	CHECK_STATUS(connect4(c, qp, "127.0.0.1", ADDR_B, PORT, NULL, 0, &r),
		     STATUS_INVALID_ADDRESS);
	CHECK_STATUS(
		connect4(c, qp, "127.0.0.1", "127.0.0.1", PORT, NULL, 0, &r),
		STATUS_INVALID_ADDRESS);
	CHECK(cm_req_wait(&r, 50) == -1); /* inline: no completion */
	CHECK_STATUS(cm_listen(&veth, &l, (struct sockaddr *)&lo_any),
		     STATUS_INVALID_ADDRESS);
	cm_listener_close(&l);
	/* The same connector with the adapter's own address does start. */
	CHECK_STATUS(connect4(c, qp, ADDR_A, ADDR_B, PORT, NULL, 0, &r),
		     STATUS_PENDING);
	close_pending(c, &r, 1000);
	cm_close_qp(qp);

	/*
	 * The adapter's addresses are cached, but a change made before a
	 * call is always seen by it: a new address is usable at once, a
	 * removed one is refused at once.
	 */
	{
		struct sockaddr_in extra = in4(ADDR_EXTRA, 0);

		CHECK_STATUS(cm_listen(&veth, &l, (struct sockaddr *)&extra),
			     STATUS_INVALID_ADDRESS);
		cm_listener_close(&l);
		SH("ip addr add " ADDR_EXTRA "/24 dev " IF_A);
		CHECK_STATUS(cm_listen(&veth, &l, (struct sockaddr *)&extra),
			     STATUS_SUCCESS);
		cm_listener_close(&l);
		SH("ip addr del " ADDR_EXTRA "/24 dev " IF_A);
		qp = cm_qp(&veth);
		c = cm_connector(&veth);
		CHECK_STATUS(
			connect4(c, qp, ADDR_EXTRA, ADDR_B, PORT, NULL, 0, &r),
			STATUS_INVALID_ADDRESS);
		cm_close_connector(c);
		cm_close_qp(qp);
	}

	/* The reverse: adapter on lo, source address of the veth. */
	qp = cm_qp(&lo);
	c = cm_connector(&lo);
	CHECK_STATUS(connect4(c, qp, ADDR_A, ADDR_B, PORT, NULL, 0, &r),
		     STATUS_INVALID_ADDRESS);
	CHECK_STATUS(connect4(c, qp, ADDR_A, "127.0.0.1", PORT, NULL, 0, &r),
		     STATUS_INVALID_ADDRESS);
	CHECK(cm_req_wait(&r, 50) == -1);
	cm_close_connector(c);
	cm_close_qp(qp);

	host_close(&lo);
	host_close(&veth);
	return 0;
}

static void test_invalid_address(void **state)
{
	run_child(child_invalid_address, NULL);
}

/* ------------------------------------------------------------------ */
/* 4. A peer host that drops the SYN: the provider's timeout          */

static int timeout_server(struct peer *p)
{
	char c;

	server_link(p);
	/* Every answer to the client (SYN-ACK, RST, ICMP) is dropped. */
	SH("ip route add blackhole " ADDR_A "/32");
	peer_send(p, "C", 1);
	/* Stay (keeping the namespace) until the client is done. */
	if (read(p->rd, &c, 1) < 0)
		return 1;
	return 0;
}

static int timeout_client(struct peer *p)
{
	struct cm_host h;
	struct cm_req r;
	NDK_CONNECTOR *c;
	NDK_QP *qp;
	NTSTATUS st;
	uint64_t t0, ms;
	char ch;

	client_link(p);
	/* Not even ARP: the SYN reaches the peer, which never answers. */
	SH("ip neigh replace " ADDR_B " lladdr " MAC_B " dev " IF_A
	   " nud permanent");
	peer_recv(p, &ch, 1);
	setenv("NDK_CM_TIMEOUT_MS", "500", 1);
	ns_host_open(&h, IF_A);
	qp = cm_qp(&h);
	c = cm_connector(&h);
	t0 = tu_now_ms();
	st = connect4(c, qp, ADDR_A, ADDR_B, PORT, "x", 1, &r);
	CHECK_STATUS(cm_req_result(st, &r, 5000), STATUS_IO_TIMEOUT);
	ms = tu_now_ms() - t0;
	fprintf(stderr, "# IO_TIMEOUT %s after %llu ms\n",
		st == STATUS_PENDING ? "via the completion" : "inline",
		(unsigned long long)ms);
	CHECK(ms >= 450 && ms < 3000);
	cm_close_connector(c);
	cm_close_qp(qp);
	host_close(&h);
	return 0;
}

static void test_io_timeout(void **state)
{
	run_pair(timeout_server, timeout_client);
}

/* ------------------------------------------------------------------ */
/* 6. The full handshake between two hosts                            */

static const char hello_a[] = "from host A";
static const char hello_b[] = "host B accepts";

struct disc {
	atomic_int calls;
};

static VOID on_disc_ex(PVOID ctx, ULONG reason)
{
	atomic_fetch_add(&((struct disc *)ctx)->calls, 1);
}

static bool disc_called(void *arg)
{
	return atomic_load(&((struct disc *)arg)->calls) > 0;
}

static void check_addr(NDK_CONNECTOR *c, bool peer, const char *ip,
		       uint16_t port)
{
	struct sockaddr_in sin, want = in4(ip, port);
	ULONG len = sizeof(sin);

	memset(&sin, 0, sizeof(sin));
	if (peer)
		CHECK_STATUS(c->Dispatch->NdkGetPeerAddress(c, (PSOCKADDR)&sin,
							    &len),
			     STATUS_SUCCESS);
	else
		CHECK_STATUS(c->Dispatch->NdkGetLocalAddress(c, (PSOCKADDR)&sin,
							     &len),
			     STATUS_SUCCESS);
	CHECK(len == sizeof(sin));
	CHECK(sin.sin_family == AF_INET);
	CHECK(sin.sin_addr.s_addr == want.sin_addr.s_addr);
	if (port)
		CHECK(sin.sin_port == want.sin_port);
}

static void check_pd(NDK_CONNECTOR *c, const char *want, ULONG want_len)
{
	char buf[256];
	ULONG len = sizeof(buf);

	CHECK_STATUS(
		c->Dispatch->NdkGetConnectionData(c, NULL, NULL, buf, &len),
		STATUS_SUCCESS);
	CHECK(len == want_len);
	CHECK(!memcmp(buf, want, want_len));
}

static int handshake_server(struct peer *p)
{
	struct cm_host h;
	struct tool_listener l;
	struct sockaddr_in any = in4(ADDR_B, 0);
	struct cm_req acc;
	struct disc d = { 0 };
	NDK_CONNECTOR *c;
	NDK_QP *qp;
	uint16_t port;

	server_link(p);
	ns_host_open(&h, IF_B);
	CHECK_STATUS(cm_listen(&h, &l, (struct sockaddr *)&any),
		     STATUS_SUCCESS);
	port = tool_addr_port((struct sockaddr *)&l.addr);
	CHECK(port >= 49152);
	peer_send(p, &port, sizeof(port));

	c = cm_next_incoming(&l, 5000);
	CHECK(c != NULL);
	check_pd(c, hello_a, sizeof(hello_a));
	check_addr(c, false, ADDR_B, port);
	check_addr(c, true, ADDR_A, 0);
	qp = cm_qp(&h);
	cm_req_init(&acc);
	CHECK_STATUS(c->Dispatch->NdkAcceptEx(c, qp, 4, 4, (PVOID)hello_b,
					      sizeof(hello_b), on_disc_ex, &d,
					      cm_req_done, &acc),
		     STATUS_PENDING);
	/* Completes when the client's RTR arrives (CompleteConnect). */
	CHECK_STATUS(cm_req_wait(&acc, 5000), STATUS_SUCCESS);
	/* The client disconnects: the event, once. */
	if (!tu_wait_until(disc_called, &d, 5000))
		CHILD_FAIL("no disconnect event");
	CHECK_STATUS(c->Dispatch->NdkDisconnect(c, NULL, NULL), STATUS_SUCCESS);
	tu_sleep_ms(20);
	CHECK(atomic_load(&d.calls) == 1);
	cm_close_connector(c);
	cm_close_qp(qp);
	cm_listener_close(&l);
	host_close(&h);
	return 0;
}

static int handshake_client(struct peer *p)
{
	struct cm_host h;
	struct cm_req conn, dr;
	struct disc d = { 0 };
	NDK_CONNECTOR *c;
	NDK_QP *qp;
	ULONG ird, ord, len = 0;
	uint16_t port;

	client_link(p);
	peer_recv(p, &port, sizeof(port));
	ns_host_open(&h, IF_A);
	qp = cm_qp(&h);
	c = cm_connector(&h);
	CHECK_STATUS(connect4(c, qp, ADDR_A, ADDR_B, port, hello_a,
			      sizeof(hello_a), &conn),
		     STATUS_PENDING);
	CHECK_STATUS(cm_req_wait(&conn, 5000), STATUS_SUCCESS);
	check_pd(c, hello_b, sizeof(hello_b));
	/* Effective: IRD = min(8, peer ORD 4), ORD = min(8, peer IRD 4). */
	CHECK_STATUS(
		c->Dispatch->NdkGetConnectionData(c, &ird, &ord, NULL, &len),
		STATUS_SUCCESS);
	CHECK(ird == 4 && ord == 4);
	check_addr(c, false, ADDR_A, 0);
	check_addr(c, true, ADDR_B, port);
	CHECK_STATUS(c->Dispatch->NdkCompleteConnectEx(c, on_disc_ex, &d, NULL,
						       NULL),
		     STATUS_SUCCESS);
	cm_req_init(&dr);
	CHECK_STATUS(c->Dispatch->NdkDisconnect(c, cm_req_done, &dr),
		     STATUS_PENDING);
	/* Done when the server answers with its own disconnect. */
	CHECK_STATUS(cm_req_wait(&dr, 5000), STATUS_SUCCESS);
	CHECK(atomic_load(&d.calls) == 0);
	cm_close_connector(c);
	cm_close_qp(qp);
	host_close(&h);
	return 0;
}

static void test_handshake_two_hosts(void **state)
{
	run_pair(handshake_server, handshake_client);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_network_unreachable),
		cmocka_unit_test(test_host_unreachable),
		cmocka_unit_test(test_close_pending_syn),
		cmocka_unit_test(test_close_pending_arp),
		cmocka_unit_test(test_io_timeout),
		cmocka_unit_test(test_invalid_address),
		cmocka_unit_test(test_handshake_two_hosts),
	};

	return cmocka_run_group_tests_name("netns", tests, NULL, NULL);
}
