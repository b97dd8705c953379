/* SPDX-License-Identifier: MIT */
/*
 * The NDK three-step handshake on loopback, through the public API:
 * NdkConnect -> ConnectEvent -> NdkGetConnectionData -> NdkAcceptEx ->
 * Connect completes -> NdkGetConnectionData -> NdkCompleteConnectEx ->
 * Accept completes; then disconnect both ways (NdkConnect,
 * NdkGetConnectionData, NdkAcceptEx).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <stdatomic.h>
#include <string.h>
#include "cmutil.h"
#include "testutil.h"

static struct cm_host srv, cli;

static int setup(void **state)
{
	cm_hosts_open(&srv, &cli);
	return 0;
}

static int teardown(void **state)
{
	cm_hosts_close(&srv, &cli);
	return 0;
}

struct disc {
	atomic_int calls;
	atomic_uint reason;
};

static VOID on_disc_ex(PVOID ctx, ULONG reason)
{
	struct disc *d = ctx;

	atomic_store(&d->reason, reason);
	atomic_fetch_add(&d->calls, 1);
}

static bool disc_called(void *arg)
{
	return atomic_load(&((struct disc *)arg)->calls) > 0;
}

/* Connected pair used by several tests. */
struct pair {
	struct tool_listener l;
	NDK_QP *aqp, *pqp;
	NDK_CONNECTOR *active, *passive;
	struct disc adisc, pdisc;
};

static void connect_pair(struct pair *p, const struct sockaddr *listen_addr)
{
	struct cm_req conn, acc;
	NTSTATUS st;

	memset(p, 0, sizeof(*p));
	assert_int_equal(cm_listen(&srv, &p->l, listen_addr), STATUS_SUCCESS);
	p->aqp = cm_qp(&cli);
	p->pqp = cm_qp(&srv);
	p->active = cm_connector(&cli);
	st = cm_connect(p->active, p->aqp, (struct sockaddr *)&p->l.addr, 8, 4,
			"hello", 5, &conn);
	assert_int_equal(st, STATUS_PENDING);
	p->passive = cm_next_incoming(&p->l, 5000);
	assert_non_null(p->passive);
	cm_req_init(&acc);
	st = p->passive->Dispatch->NdkAcceptEx(p->passive, p->pqp, 2, 16,
					       (PVOID) "world!", 6, on_disc_ex,
					       &p->pdisc, cm_req_done, &acc);
	assert_int_equal(st, STATUS_PENDING);
	assert_int_equal(cm_req_wait(&conn, 5000), STATUS_SUCCESS);
	assert_int_equal(p->active->Dispatch->NdkCompleteConnectEx(
				 p->active, on_disc_ex, &p->adisc, NULL, NULL),
			 STATUS_SUCCESS);
	assert_int_equal(cm_req_wait(&acc, 5000), STATUS_SUCCESS);
}

static void test_handshake_data(void **state)
{
	struct tool_listener l;
	struct sockaddr_in any = cm_lo4(0);
	struct cm_req conn, acc;
	NDK_QP *aqp = cm_qp(&cli), *pqp = cm_qp(&srv);
	NDK_CONNECTOR *active = cm_connector(&cli), *passive;
	ULONG ird = 0, ord = 0, len, a_ird, a_ord, rds;
	bool software = cm_provider_is(&srv, "software");
	char buf[300];
	struct sockaddr_in a_local, a_peer, p_local, p_peer;
	struct disc adisc = { 0 }, pdisc = { 0 };

	assert_int_equal(cm_listen(&srv, &l, (struct sockaddr *)&any),
			 STATUS_SUCCESS);
	assert_true(tool_addr_port((struct sockaddr *)&l.addr) >= 49152);
	assert_int_equal(cm_connect(active, aqp, (struct sockaddr *)&l.addr, 8,
				    4, "hello", 5, &conn),
			 STATUS_PENDING);
	passive = cm_next_incoming(&l, 5000);
	assert_non_null(passive);
	assert_int_equal(passive->Header.ObjectType, NdkObjectTypeConnector);

	/* NdkGetConnectionData on the passive side, before Accept. */
	len = 0;
	assert_int_equal(passive->Dispatch->NdkGetConnectionData(
				 passive, &ird, &ord, NULL, &len),
			 STATUS_SUCCESS);
	/* RDS: exactly what the peer sent (IB and RoCE: the padded CM
	 * area, docs/verbs.md, Private data) */
	rds = len;
	assert_true(cm_rds_ok(&srv, rds, 5));
	/* The peer's limits, capped: inbound = its ORD, outbound = its IRD */
	assert_int_equal(ird, 4);
	assert_int_equal(ord, 8);
	len = 3;
	memset(buf, 0, sizeof(buf));
	assert_int_equal(passive->Dispatch->NdkGetConnectionData(
				 passive, NULL, NULL, buf, &len),
			 STATUS_BUFFER_TOO_SMALL);
	assert_int_equal(len, rds);
	assert_memory_equal(buf, "hel\0", 4);
	len = sizeof(buf);
	assert_int_equal(passive->Dispatch->NdkGetConnectionData(
				 passive, NULL, NULL, buf, &len),
			 STATUS_SUCCESS);
	assert_int_equal(len, rds);
	assert_memory_equal(buf, "hello", 5);
	len = 1;
	assert_int_equal(passive->Dispatch->NdkGetConnectionData(
				 passive, NULL, NULL, NULL, &len),
			 STATUS_INVALID_PARAMETER);

	/* Addresses on the passive side. */
	len = sizeof(p_local);
	assert_int_equal(passive->Dispatch->NdkGetLocalAddress(
				 passive, (PSOCKADDR)&p_local, &len),
			 STATUS_SUCCESS);
	assert_int_equal(tool_addr_port((struct sockaddr *)&p_local),
			 tool_addr_port((struct sockaddr *)&l.addr));
	len = 2;
	assert_int_equal(passive->Dispatch->NdkGetPeerAddress(
				 passive, (PSOCKADDR)&p_peer, &len),
			 STATUS_BUFFER_TOO_SMALL);
	assert_int_equal(len, sizeof(struct sockaddr_in));
	assert_int_equal(passive->Dispatch->NdkGetPeerAddress(
				 passive, (PSOCKADDR)&p_peer, &len),
			 STATUS_SUCCESS);

	cm_req_init(&acc);
	assert_int_equal(passive->Dispatch->NdkAcceptEx(
				 passive, pqp, 2, 16, (PVOID) "world!", 6,
				 on_disc_ex, &pdisc, cm_req_done, &acc),
			 STATUS_PENDING);
	assert_int_equal(cm_req_wait(&conn, 5000), STATUS_SUCCESS);
	/* Accept waits for CompleteConnect (the software provider's RTR,
	 * the IB CM's RTU); an iWARP device's kernel CM completes it with
	 * the MPA Reply (docs/verbs.md, Connection management). */
	if (software || srv.info.RdmaTechnology != NdkiWarp)
		assert_int_equal(cm_req_wait(&acc, 50), -1);

	/* NdkGetConnectionData on the active side, after Connect completed. */
	len = 0;
	assert_int_equal(active->Dispatch->NdkGetConnectionData(
				 active, &ird, &ord, NULL, &len),
			 STATUS_SUCCESS);
	assert_true(cm_rds_ok(&cli, len, 6));
	/* Effective: IRD = min(8, 128, peer ORD 16), ORD = min(4, 128,
	 * peer IRD 2). siw raises the acceptor's IRD to the initiator's
	 * ORD (docs/verbs.md, Read limits): the peer's IRD is then 4. */
	a_ird = ird;
	a_ord = ord;
	assert_int_equal(ird, 8);
	assert_int_equal(ord, cm_device_is(&cli, "siw") ? 4 : 2);
	len = sizeof(buf);
	assert_int_equal(active->Dispatch->NdkGetConnectionData(
				 active, NULL, NULL, buf, &len),
			 STATUS_SUCCESS);
	assert_memory_equal(buf, "world!", 6);
	len = sizeof(a_local);
	assert_int_equal(active->Dispatch->NdkGetLocalAddress(
				 active, (PSOCKADDR)&a_local, &len),
			 STATUS_SUCCESS);
	len = sizeof(a_peer);
	assert_int_equal(active->Dispatch->NdkGetPeerAddress(
				 active, (PSOCKADDR)&a_peer, &len),
			 STATUS_SUCCESS);
	assert_memory_equal(&a_local, &p_peer, sizeof(a_local));
	assert_memory_equal(&a_peer, &p_local, sizeof(a_peer));
	assert_true(tool_addr_port((struct sockaddr *)&a_local) >= 49152);

	assert_int_equal(active->Dispatch->NdkCompleteConnectEx(
				 active, on_disc_ex, &adisc, NULL, NULL),
			 STATUS_SUCCESS);
	assert_int_equal(cm_req_wait(&acc, 5000), STATUS_SUCCESS);
	/* The passive side agrees on the pair. */
	len = 0;
	assert_int_equal(passive->Dispatch->NdkGetConnectionData(
				 passive, &ird, &ord, NULL, &len),
			 STATUS_SUCCESS);
	assert_int_equal(ird, cm_device_is(&srv, "siw") ? 4 : 2);
	assert_int_equal(ird, a_ord);
	assert_int_equal(ord, a_ird);
	/* A second CompleteConnect: not connecting any more. */
	assert_int_equal(active->Dispatch->NdkCompleteConnect(active, NULL,
							      NULL, NULL, NULL),
			 STATUS_CONNECTION_INVALID);

	cm_close_connector(active);
	cm_close_connector(passive);
	cm_close_qp(aqp);
	cm_close_qp(pqp);
	cm_listener_close(&l);
}

static void test_disconnect_event(void **state)
{
	struct pair p;
	struct sockaddr_in any = cm_lo4(0);
	struct cm_req d;
	NTSTATUS st;

	connect_pair(&p, (struct sockaddr *)&any);
	cm_req_init(&d);
	st = p.active->Dispatch->NdkDisconnect(p.active, cm_req_done, &d);
	assert_int_equal(st, STATUS_PENDING);
	/* The peer sees the disconnect event once, with no reason. */
	assert_true(tu_wait_until(disc_called, &p.pdisc, 5000));
	assert_int_equal(atomic_load(&p.pdisc.reason), 0);
	/* Its own NdkDisconnect then finishes at once, and ours too. */
	assert_int_equal(
		p.passive->Dispatch->NdkDisconnect(p.passive, NULL, NULL),
		STATUS_SUCCESS);
	assert_int_equal(cm_req_wait(&d, 5000), STATUS_SUCCESS);
	tu_sleep_ms(20);
	assert_int_equal(atomic_load(&p.pdisc.calls), 1);
	assert_int_equal(atomic_load(&p.adisc.calls), 0);
	cm_close_connector(p.active);
	cm_close_connector(p.passive);
	cm_listener_close(&p.l);
}

static void test_close_connected_disconnects(void **state)
{
	struct pair p;
	struct sockaddr_in any = cm_lo4(0);

	connect_pair(&p, (struct sockaddr *)&any);
	/* Closing a connected connector disconnects implicitly. */
	cm_close_connector(p.active);
	assert_true(tu_wait_until(disc_called, &p.pdisc, 5000));
	assert_int_equal(atomic_load(&p.pdisc.calls), 1);
	cm_close_connector(p.passive);
	cm_listener_close(&p.l);
}

static void test_ipv6(void **state)
{
	struct pair p;
	struct sockaddr_in6 any6 = cm_lo6(0);
	struct tool_listener probe;

	if (cm_listen(&srv, &probe, (struct sockaddr *)&any6) ==
	    STATUS_INVALID_ADDRESS)
		skip(); /* no ::1 here */
	cm_listener_close(&probe);
	connect_pair(&p, (struct sockaddr *)&any6);
	assert_int_equal(p.l.addr.ss_family, AF_INET6);
	cm_close_connector(p.active);
	cm_close_connector(p.passive);
	cm_listener_close(&p.l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_handshake_data),
		cmocka_unit_test(test_disconnect_event),
		cmocka_unit_test(test_close_connected_disconnects),
		cmocka_unit_test(test_ipv6),
	};

	return cmocka_run_group_tests_name("connect", tests, setup, teardown);
}
