/* SPDX-License-Identifier: MIT */
/*
 * The verbs provider's look at a TCP connection's state (verbs/tcp_state.h)
 * with real loopback connections: open both ways, the peer's FIN, the
 * peer's reset, a tuple that never existed, IPv6. An iWARP acceptor uses it
 * to tell that an initiator left its request (docs/verbs.md, Connection
 * management). Built only with the verbs provider.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "testutil.h"
#include "verbs/tcp_state.h"

struct conn {
	int lfd, cfd, sfd; /* listener, client, the server's accepted end */
	struct sockaddr_storage s_local, s_peer;
};

static bool conn_open(struct conn *k, int family)
{
	struct sockaddr_storage a;
	socklen_t len;

	memset(&a, 0, sizeof(a));
	a.ss_family = (sa_family_t)family;
	if (family == AF_INET) {
		((struct sockaddr_in *)&a)->sin_addr.s_addr =
			htonl(INADDR_LOOPBACK);
		len = sizeof(struct sockaddr_in);
	} else {
		((struct sockaddr_in6 *)&a)->sin6_addr = in6addr_loopback;
		len = sizeof(struct sockaddr_in6);
	}
	k->lfd = socket(family, SOCK_STREAM, 0);
	assert_true(k->lfd >= 0);
	if (bind(k->lfd, (struct sockaddr *)&a, len)) {
		close(k->lfd);
		return false; /* no ::1 here */
	}
	assert_int_equal(listen(k->lfd, 4), 0);
	assert_int_equal(getsockname(k->lfd, (struct sockaddr *)&a, &len), 0);
	k->cfd = socket(family, SOCK_STREAM, 0);
	assert_int_equal(connect(k->cfd, (struct sockaddr *)&a, len), 0);
	k->sfd = accept(k->lfd, NULL, NULL);
	assert_true(k->sfd >= 0);
	len = sizeof(k->s_local);
	assert_int_equal(
		getsockname(k->sfd, (struct sockaddr *)&k->s_local, &len), 0);
	len = sizeof(k->s_peer);
	assert_int_equal(
		getpeername(k->sfd, (struct sockaddr *)&k->s_peer, &len), 0);
	return true;
}

static void conn_close(struct conn *k)
{
	if (k->cfd >= 0)
		close(k->cfd);
	close(k->sfd);
	close(k->lfd);
}

static enum ndk_tcp_peer server_view(struct conn *k)
{
	return ndk_tcp_peer_state((struct sockaddr *)&k->s_local,
				  (struct sockaddr *)&k->s_peer);
}

struct view_arg {
	struct conn *k;
	enum ndk_tcp_peer want;
};

static bool view_is(void *arg)
{
	struct view_arg *v = arg;

	return server_view(v->k) == v->want;
}

static void test_open_then_fin(void **state)
{
	struct conn k;
	struct view_arg v = { &k, NDK_TCP_PEER_GONE };

	assert_true(conn_open(&k, AF_INET));
	assert_int_equal(server_view(&k), NDK_TCP_PEER_THERE);
	close(k.cfd);
	k.cfd = -1;
	assert_true(tu_wait_until(view_is, &v, 2000));
	conn_close(&k);
}

static void test_reset(void **state)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };
	struct conn k;
	struct view_arg v = { &k, NDK_TCP_PEER_GONE };

	assert_true(conn_open(&k, AF_INET));
	assert_int_equal(
		setsockopt(k.cfd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)), 0);
	close(k.cfd);
	k.cfd = -1;
	assert_true(tu_wait_until(view_is, &v, 2000));
	conn_close(&k);
}

static void test_never_existed(void **state)
{
	struct conn k;
	struct sockaddr_in other;

	assert_true(conn_open(&k, AF_INET));
	/* The listener's port, another peer port: no such connection,
	 * though the lookup may find the listener. */
	memcpy(&other, &k.s_peer, sizeof(other));
	other.sin_port = htons((uint16_t)(ntohs(other.sin_port) ^ 1));
	assert_int_equal(ndk_tcp_peer_state((struct sockaddr *)&k.s_local,
					    (struct sockaddr *)&other),
			 NDK_TCP_PEER_GONE);
	/* Families that do not match: nothing to say. */
	other.sin_family = AF_UNIX;
	assert_int_equal(ndk_tcp_peer_state((struct sockaddr *)&k.s_local,
					    (struct sockaddr *)&other),
			 NDK_TCP_PEER_UNKNOWN);
	conn_close(&k);
}

static void test_ipv6(void **state)
{
	struct conn k;
	struct view_arg v = { &k, NDK_TCP_PEER_GONE };

	if (!conn_open(&k, AF_INET6))
		skip();
	assert_int_equal(server_view(&k), NDK_TCP_PEER_THERE);
	close(k.cfd);
	k.cfd = -1;
	assert_true(tu_wait_until(view_is, &v, 2000));
	conn_close(&k);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_open_then_fin),
		cmocka_unit_test(test_reset),
		cmocka_unit_test(test_never_existed),
		cmocka_unit_test(test_ipv6),
	};

	return cmocka_run_group_tests_name("verbs_tcp_state", tests, NULL,
					   NULL);
}
