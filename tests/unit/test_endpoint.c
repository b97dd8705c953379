/* SPDX-License-Identifier: MIT */
/*
 * The ND endpoint table (NDKPI Listeners, Connectors, and
 * Endpoints): ephemeral
 * ports, address conflicts from the table and from the kernel, reference
 * counts, shared endpoints and the 4-tuple registry. Ports always come
 * from the range logic; an "exact port" case first acquires port 0.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "front/endpoint.h"
#include "core/compiler.h"
#include "testutil.h"

#define EPH_MIN 49152
#define EPH_MAX 65535

static const enum ndk_endpoint_kind kinds[] = {
	NDK_ENDPOINT_LISTENER,
	NDK_ENDPOINT_CONNECTOR,
	NDK_ENDPOINT_SHARED,
};

static struct sockaddr_in sin4(const char *ip, uint16_t port)
{
	struct sockaddr_in a;

	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_port = htons(port);
	assert_int_equal(inet_pton(AF_INET, ip, &a.sin_addr), 1);
	return a;
}

static struct sockaddr_in6 sin6(const char *ip, uint16_t port)
{
	struct sockaddr_in6 a;

	memset(&a, 0, sizeof(a));
	a.sin6_family = AF_INET6;
	a.sin6_port = htons(port);
	assert_int_equal(inet_pton(AF_INET6, ip, &a.sin6_addr), 1);
	return a;
}

static int acquire4(const char *ip, uint16_t port, enum ndk_endpoint_kind k,
		    struct ndk_endpoint **epp)
{
	struct sockaddr_in a = sin4(ip, port);

	return ndk_endpoint_acquire((struct sockaddr *)&a, sizeof(a), k, epp);
}

static int acquire6(const char *ip, uint16_t port, enum ndk_endpoint_kind k,
		    struct ndk_endpoint **epp)
{
	struct sockaddr_in6 a = sin6(ip, port);

	return ndk_endpoint_acquire((struct sockaddr *)&a, sizeof(a), k, epp);
}

/* A free NDK port on 127.0.0.1, released again: for "exact port" cases. */
static uint16_t free_port(void)
{
	struct ndk_endpoint *ep;
	uint16_t port;

	assert_int_equal(acquire4("127.0.0.1", 0, NDK_ENDPOINT_CONNECTOR, &ep),
			 0);
	port = ndk_endpoint_port(ep);
	ndk_endpoint_put(ep);
	return port;
}

static uint16_t sock_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	assert_int_equal(getsockname(fd, (struct sockaddr *)&ss, &len), 0);
	if (ss.ss_family == AF_INET)
		return ntohs(((struct sockaddr_in *)&ss)->sin_port);
	return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
}

static uint16_t addr_port(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)sa)->sin_port);
	return ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
}

static int getopt_int(int fd, int level, int name)
{
	int v = -1;
	socklen_t len = sizeof(v);

	assert_int_equal(getsockopt(fd, level, name, &v, &len), 0);
	return v;
}

/* A plain kernel socket on 127.0.0.1:port (0: kernel's choice). */
static int plain_socket(uint16_t port, bool reuse, bool do_listen)
{
	struct sockaddr_in a = sin4("127.0.0.1", port);
	int one = 1;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	if (reuse)
		assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one,
					    sizeof(one)),
				 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	if (do_listen)
		assert_int_equal(listen(fd, 16), 0);
	return fd;
}

static void reset_range(void)
{
	unsetenv("NDK_EPHEMERAL_PORT_MIN");
	unsetenv("NDK_EPHEMERAL_PORT_MAX");
}

static void set_range(unsigned int min, unsigned int max)
{
	char buf[16];

	snprintf(buf, sizeof(buf), "%u", min);
	setenv("NDK_EPHEMERAL_PORT_MIN", buf, 1);
	snprintf(buf, sizeof(buf), "%u", max);
	setenv("NDK_EPHEMERAL_PORT_MAX", buf, 1);
}

static bool have_ipv6_loopback(void)
{
	struct sockaddr_in6 a = sin6("::1", 0);
	int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool ok;

	if (fd < 0)
		return false;
	ok = !bind(fd, (struct sockaddr *)&a, sizeof(a));
	close(fd);
	return ok;
}

static void test_acquire_ephemeral_default(void **state)
{
	struct ndk_endpoint *ep;
	const struct sockaddr *sa;
	socklen_t len;
	uint16_t port;
	int fd;

	reset_range();
	assert_int_equal(acquire4("127.0.0.1", 0, NDK_ENDPOINT_CONNECTOR, &ep),
			 0);
	port = ndk_endpoint_port(ep);
	assert_in_range(port, EPH_MIN, EPH_MAX);
	sa = ndk_endpoint_addr(ep, &len);
	assert_int_equal(len, sizeof(struct sockaddr_in));
	assert_int_equal(sa->sa_family, AF_INET);
	assert_int_equal(addr_port(sa), port);
	assert_int_equal(ndk_endpoint_kind(ep), NDK_ENDPOINT_CONNECTOR);
	assert_int_equal(ndk_endpoint_refs(ep), 1);

	fd = ndk_endpoint_fd(ep);
	assert_true(fd >= 0);
	assert_int_equal(sock_port(fd), port);
	assert_true(fcntl(fd, F_GETFL) & O_NONBLOCK);
	assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	assert_int_equal(getopt_int(fd, SOL_SOCKET, SO_REUSEADDR), 1);
	assert_int_equal(getopt_int(fd, SOL_SOCKET, SO_TYPE), SOCK_STREAM);
	ndk_endpoint_put(ep);
}

static void test_acquire_small_range(void **state)
{
	struct ndk_endpoint *ep[5];
	unsigned int min, max, i, j;
	uint16_t p = free_port();

	min = p <= EPH_MAX - 9 ? p : p - 9;
	max = min + 9;
	set_range(min, max);
	for (i = 0; i < ARRAY_SIZE(ep); i++) {
		assert_int_equal(
			acquire4("127.0.0.1", 0, NDK_ENDPOINT_SHARED, &ep[i]),
			0);
		assert_in_range(ndk_endpoint_port(ep[i]), min, max);
		assert_int_equal(sock_port(ndk_endpoint_fd(ep[i])),
				 ndk_endpoint_port(ep[i]));
		for (j = 0; j < i; j++)
			assert_int_not_equal(ndk_endpoint_port(ep[i]),
					     ndk_endpoint_port(ep[j]));
	}
	for (i = 0; i < ARRAY_SIZE(ep); i++)
		ndk_endpoint_put(ep[i]);
	reset_range();
}

static void test_bad_range_uses_default(void **state)
{
	struct ndk_endpoint *ep;

	set_range(60000, 50000); /* min > max */
	assert_int_equal(acquire4("127.0.0.1", 0, NDK_ENDPOINT_CONNECTOR, &ep),
			 0);
	assert_in_range(ndk_endpoint_port(ep), EPH_MIN, EPH_MAX);
	ndk_endpoint_put(ep);

	set_range(0, 70000); /* out of 1..65535 */
	assert_int_equal(acquire4("127.0.0.1", 0, NDK_ENDPOINT_CONNECTOR, &ep),
			 0);
	assert_in_range(ndk_endpoint_port(ep), EPH_MIN, EPH_MAX);
	ndk_endpoint_put(ep);
	reset_range();
}

/* 9.3: the address stays reserved; SO_REUSEADDR sockets that are not
 * listening would coexist in the kernel, so this is the table. */
static void test_same_addr_every_kind(void **state)
{
	struct sockaddr_in6 mapped;
	struct ndk_endpoint *ep, *ep2;
	unsigned int i, j;
	uint16_t p;

	for (i = 0; i < ARRAY_SIZE(kinds); i++) {
		for (j = 0; j < ARRAY_SIZE(kinds); j++) {
			assert_int_equal(
				acquire4("127.0.0.1", 0, kinds[i], &ep), 0);
			p = ndk_endpoint_port(ep);
			ep2 = (struct ndk_endpoint *)&ep2;
			assert_int_equal(
				acquire4("127.0.0.1", p, kinds[j], &ep2),
				-EADDRINUSE);
			assert_null(ep2);
			assert_int_equal(acquire4("0.0.0.0", p, kinds[j], &ep2),
					 -EADDRINUSE);
			mapped = sin6("::ffff:127.0.0.1", p);
			assert_int_equal(
				ndk_endpoint_acquire((struct sockaddr *)&mapped,
						     sizeof(mapped), kinds[j],
						     &ep2),
				-EADDRINUSE);
			ndk_endpoint_put(ep);
		}
	}
}

static void test_wildcard_and_other_ip(void **state)
{
	struct ndk_endpoint *any, *ep, *ep2;
	uint16_t p;

	/* Another IP on the same port is another endpoint. */
	assert_int_equal(acquire4("127.0.0.1", 0, NDK_ENDPOINT_CONNECTOR, &ep),
			 0);
	p = ndk_endpoint_port(ep);
	assert_int_equal(acquire4("127.0.0.2", p, NDK_ENDPOINT_CONNECTOR, &ep2),
			 0);
	assert_int_equal(ndk_endpoint_port(ep2), p);
	ndk_endpoint_put(ep2);
	ndk_endpoint_put(ep);

	/* A wildcard holds the port for every IPv4 address. */
	assert_int_equal(acquire4("0.0.0.0", 0, NDK_ENDPOINT_LISTENER, &any),
			 0);
	p = ndk_endpoint_port(any);
	assert_int_equal(acquire4("127.0.0.2", p, NDK_ENDPOINT_CONNECTOR, &ep),
			 -EADDRINUSE);
	assert_int_equal(acquire4("0.0.0.0", p, NDK_ENDPOINT_SHARED, &ep),
			 -EADDRINUSE);
	ndk_endpoint_put(any);
}

/* A socket outside the table, listening: the kernel refuses the bind.
 * Plain sockets take a kernel-chosen port: an NDK port from free_port()
 * may be in TIME_WAIT, which only SO_REUSEADDR sockets can bind. */
static void test_kernel_listener_conflict(void **state)
{
	struct ndk_endpoint *ep;
	unsigned int i;
	int fd = plain_socket(0, true, true);
	uint16_t p = sock_port(fd);

	for (i = 0; i < ARRAY_SIZE(kinds); i++) {
		assert_int_equal(acquire4("127.0.0.1", p, kinds[i], &ep),
				 -EADDRINUSE);
		assert_int_equal(acquire4("0.0.0.0", p, kinds[i], &ep),
				 -EADDRINUSE);
	}
	close(fd);
	assert_int_equal(acquire4("127.0.0.1", p, NDK_ENDPOINT_LISTENER, &ep),
			 0);
	ndk_endpoint_put(ep);
}

/* A bound socket without SO_REUSEADDR blocks the port too. */
static void test_kernel_noreuse_conflict(void **state)
{
	struct ndk_endpoint *ep;
	int fd = plain_socket(0, false, false);
	uint16_t p = sock_port(fd);

	assert_int_equal(acquire4("127.0.0.1", p, NDK_ENDPOINT_CONNECTOR, &ep),
			 -EADDRINUSE);
	close(fd);
}

/* An endpoint's listening socket refuses any second bind (kernel), also
 * after the socket left the table (taken, endpoint freed). */
static void test_second_listener_refused(void **state)
{
	struct sockaddr_in a;
	struct ndk_endpoint *ep;
	int one = 1, fd, fd2;
	uint16_t p;

	assert_int_equal(acquire4("127.0.0.1", 0, NDK_ENDPOINT_LISTENER, &ep),
			 0);
	p = ndk_endpoint_port(ep);
	assert_int_equal(listen(ndk_endpoint_fd(ep), 16), 0);

	fd2 = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fd2 >= 0);
	assert_int_equal(
		setsockopt(fd2, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)),
		0);
	a = sin4("127.0.0.1", p);
	assert_int_equal(bind(fd2, (struct sockaddr *)&a, sizeof(a)), -1);
	assert_int_equal(errno, EADDRINUSE);
	close(fd2);

	fd = ndk_endpoint_take_fd(ep);
	ndk_endpoint_put(ep);
	assert_int_equal(acquire4("127.0.0.1", p, NDK_ENDPOINT_LISTENER, &ep),
			 -EADDRINUSE);
	close(fd);
	assert_int_equal(acquire4("127.0.0.1", p, NDK_ENDPOINT_LISTENER, &ep),
			 0);
	ndk_endpoint_put(ep);
}

static void wait_writable(int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLOUT };

	assert_int_equal(poll(&pfd, 1, 5000), 1);
	assert_int_equal(getopt_int(fd, SOL_SOCKET, SO_ERROR), 0);
}

static void connect_nb(int fd, uint16_t port)
{
	struct sockaddr_in a = sin4("127.0.0.1", port);
	int rc = connect(fd, (struct sockaddr *)&a, sizeof(a));

	if (rc)
		assert_int_equal(errno, EINPROGRESS);
	wait_writable(fd);
}

/* A listener restarts over a TIME_WAIT connection on its port. */
static void test_listener_restart_time_wait(void **state)
{
	struct ndk_endpoint *ep;
	int lfd, cfd, afd;
	uint16_t p;

	assert_int_equal(acquire4("127.0.0.1", 0, NDK_ENDPOINT_LISTENER, &ep),
			 0);
	p = ndk_endpoint_port(ep);
	lfd = ndk_endpoint_fd(ep);
	assert_int_equal(listen(lfd, 16), 0);
	cfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	assert_true(cfd >= 0);
	connect_nb(cfd, p);
	afd = -1;
	for (int i = 0; i < 5000 && afd < 0; i++) {
		afd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (afd < 0)
			tu_sleep_ms(1);
	}
	assert_true(afd >= 0);
	/* The server closes first: its side (local port p) enters
	 * TIME_WAIT once the client's FIN is acknowledged. */
	close(afd);
	tu_sleep_ms(10);
	close(cfd);
	tu_sleep_ms(10);
	ndk_endpoint_put(ep);

	assert_int_equal(acquire4("127.0.0.1", p, NDK_ENDPOINT_LISTENER, &ep),
			 0);
	assert_int_equal(listen(ndk_endpoint_fd(ep), 16), 0);
	ndk_endpoint_put(ep);
}

static void test_exhaust_range(void **state)
{
	struct ndk_endpoint *ep[4], *extra;
	unsigned int min, max, n = 0, i, j;
	uint16_t p = free_port(), freed;

	min = p <= EPH_MAX - 2 ? p : p - 2;
	max = min + 2;
	set_range(min, max);
	for (i = 0; i < ARRAY_SIZE(ep); i++) {
		int rc = acquire4("127.0.0.1", 0, NDK_ENDPOINT_CONNECTOR,
				  &ep[n]);

		if (rc) {
			assert_int_equal(rc, -EAGAIN);
			break;
		}
		assert_in_range(ndk_endpoint_port(ep[n]), min, max);
		for (j = 0; j < n; j++)
			assert_int_not_equal(ndk_endpoint_port(ep[n]),
					     ndk_endpoint_port(ep[j]));
		n++;
	}
	/* At least the port just found free; others may be used elsewhere. */
	assert_in_range(n, 1, 3);
	assert_int_equal(
		acquire4("127.0.0.1", 0, NDK_ENDPOINT_LISTENER, &extra),
		-EAGAIN);

	/* Freeing one makes it available again. */
	freed = ndk_endpoint_port(ep[0]);
	ndk_endpoint_put(ep[0]);
	assert_int_equal(
		acquire4("127.0.0.1", 0, NDK_ENDPOINT_LISTENER, &ep[0]), 0);
	assert_int_equal(ndk_endpoint_port(ep[0]), freed);
	for (i = 0; i < n; i++)
		ndk_endpoint_put(ep[i]);
	reset_range();
}

static void test_put_frees_port(void **state)
{
	struct ndk_endpoint *ep;
	unsigned int i;
	uint16_t p = free_port();

	for (i = 0; i < ARRAY_SIZE(kinds); i++) {
		assert_int_equal(acquire4("127.0.0.1", p, kinds[i], &ep), 0);
		assert_int_equal(ndk_endpoint_port(ep), p);
		ndk_endpoint_put(ep);
	}
}

/* 9.3: a listener's endpoint outlives the listener while an accepted
 * connector holds a reference. */
static void test_refcount_keeps_alive(void **state)
{
	struct ndk_endpoint *ep, *ep2;
	uint16_t p;

	assert_int_equal(acquire4("127.0.0.1", 0, NDK_ENDPOINT_LISTENER, &ep),
			 0);
	p = ndk_endpoint_port(ep);
	ndk_endpoint_get(ep); /* accepted connector */
	ndk_endpoint_get(ep); /* another one */
	assert_int_equal(ndk_endpoint_refs(ep), 3);
	ndk_endpoint_put(ep); /* listener closed */
	close(ndk_endpoint_take_fd(ep));
	assert_int_equal(ndk_endpoint_refs(ep), 2);
	assert_int_equal(acquire4("127.0.0.1", p, NDK_ENDPOINT_LISTENER, &ep2),
			 -EADDRINUSE);
	ndk_endpoint_put(ep);
	assert_int_equal(ndk_endpoint_refs(ep), 1);
	assert_int_equal(acquire4("127.0.0.1", p, NDK_ENDPOINT_CONNECTOR, &ep2),
			 -EADDRINUSE);
	ndk_endpoint_put(ep);
	assert_int_equal(acquire4("127.0.0.1", p, NDK_ENDPOINT_LISTENER, &ep2),
			 0);
	ndk_endpoint_put(ep2);
}

static void test_take_fd(void **state)
{
	struct ndk_endpoint *ep;
	int fd;

	assert_int_equal(acquire4("127.0.0.1", 0, NDK_ENDPOINT_CONNECTOR, &ep),
			 0);
	fd = ndk_endpoint_take_fd(ep);
	assert_true(fd >= 0);
	assert_int_equal(ndk_endpoint_fd(ep), -1);
	assert_int_equal(ndk_endpoint_take_fd(ep), -1);
	ndk_endpoint_put(ep);
	/* Still open: the endpoint no longer owned it. */
	assert_true(fcntl(fd, F_GETFD) >= 0);
	close(fd);
}

static void accept_from(int lfd, uint16_t port)
{
	struct sockaddr_in peer;
	socklen_t len = sizeof(peer);
	int afd;

	afd = accept4(lfd, (struct sockaddr *)&peer, &len, SOCK_CLOEXEC);
	assert_true(afd >= 0);
	assert_int_equal(ntohs(peer.sin_port), port);
	close(afd);
}

/* NdkConnectWithSharedEndpoint: one local address, many destinations;
 * the same destination twice is ADDRESS_ALREADY_EXISTS (EADDRNOTAVAIL). */
static void test_shared_endpoint(void **state)
{
	struct sockaddr_in a;
	struct ndk_endpoint *ep, *ep2;
	int l1, l2, fd1, fd2, fd3;
	uint16_t p, p1, p2;

	l1 = plain_socket(0, false, true);
	l2 = plain_socket(0, false, true);
	p1 = sock_port(l1);
	p2 = sock_port(l2);

	assert_int_equal(acquire4("127.0.0.1", 0, NDK_ENDPOINT_SHARED, &ep), 0);
	p = ndk_endpoint_port(ep);
	fd1 = ndk_endpoint_bind_shared(ep);
	fd2 = ndk_endpoint_bind_shared(ep);
	assert_true(fd1 >= 0 && fd2 >= 0);
	assert_int_equal(sock_port(fd1), p);
	assert_int_equal(sock_port(fd2), p);
	assert_true(fcntl(fd1, F_GETFL) & O_NONBLOCK);
	assert_true(fcntl(fd1, F_GETFD) & FD_CLOEXEC);
	ndk_endpoint_get(ep); /* connector 1 */
	ndk_endpoint_get(ep); /* connector 2 */

	connect_nb(fd1, p1);
	connect_nb(fd2, p2);
	accept_from(l1, p);
	accept_from(l2, p);

	fd3 = ndk_endpoint_bind_shared(ep);
	assert_true(fd3 >= 0);
	a = sin4("127.0.0.1", p1);
	assert_int_equal(connect(fd3, (struct sockaddr *)&a, sizeof(a)), -1);
	assert_int_equal(errno, EADDRNOTAVAIL);
	close(fd3);

	/* The address stays reserved while the object or a connector
	 * lives (9.3). */
	ndk_endpoint_put(ep); /* object closed */
	assert_int_equal(acquire4("127.0.0.1", p, NDK_ENDPOINT_SHARED, &ep2),
			 -EADDRINUSE);
	close(fd1);
	ndk_endpoint_put(ep);
	close(fd2);
	ndk_endpoint_put(ep);

	assert_int_equal(acquire4("127.0.0.1", 0, NDK_ENDPOINT_CONNECTOR, &ep),
			 0);
	assert_int_equal(ndk_endpoint_bind_shared(ep), -EINVAL);
	ndk_endpoint_put(ep);
	close(l1);
	close(l2);
}

static void test_tuple_registry(void **state)
{
	struct sockaddr_in l = sin4("127.0.0.1", 50001);
	struct sockaddr_in r = sin4("127.0.0.1", 50002);
	struct sockaddr_in r2 = sin4("127.0.0.1", 50003);
	struct sockaddr_in6 lm = sin6("::ffff:127.0.0.1", 50001);
	struct sockaddr_in6 rm = sin6("::ffff:127.0.0.1", 50002);
	struct sockaddr_in6 l6 = sin6("::1", 50001);
	struct sockaddr *L = (struct sockaddr *)&l, *R = (struct sockaddr *)&r;

	/* No sockets here: these ports are only registry keys. */
	assert_int_equal(ndk_tuple_register(L, R), 0);
	assert_int_equal(ndk_tuple_register(L, R), -EEXIST);
	assert_int_equal(ndk_tuple_register((struct sockaddr *)&lm,
					    (struct sockaddr *)&rm),
			 -EEXIST);
	/* Reversed, or another remote port: another tuple. */
	assert_int_equal(ndk_tuple_register(R, L), 0);
	assert_int_equal(ndk_tuple_register(L, (struct sockaddr *)&r2), 0);

	ndk_tuple_unregister(L, R);
	assert_int_equal(ndk_tuple_register(L, R), 0);

	/* Mixed families and bad addresses. */
	assert_int_equal(ndk_tuple_register((struct sockaddr *)&l6, R),
			 -EINVAL);
	assert_int_equal(ndk_tuple_register(NULL, R), -EINVAL);

	ndk_tuple_unregister((struct sockaddr *)&lm, (struct sockaddr *)&rm);
	ndk_tuple_unregister(R, L);
	ndk_tuple_unregister(L, (struct sockaddr *)&r2);
	ndk_tuple_unregister(L, R); /* absent: no-op */
	assert_int_equal(ndk_tuple_register(L, R), 0);
	ndk_tuple_unregister(L, R);
}

static void test_ipv6(void **state)
{
	struct ndk_endpoint *ep, *ep2;
	const struct sockaddr *sa;
	socklen_t len;
	uint16_t p;
	int fd;

	if (!have_ipv6_loopback()) {
		skip();
		return;
	}
	assert_int_equal(acquire6("::1", 0, NDK_ENDPOINT_LISTENER, &ep), 0);
	p = ndk_endpoint_port(ep);
	assert_in_range(p, EPH_MIN, EPH_MAX);
	sa = ndk_endpoint_addr(ep, &len);
	assert_int_equal(len, sizeof(struct sockaddr_in6));
	assert_int_equal(sa->sa_family, AF_INET6);
	assert_int_equal(addr_port(sa), p);
	fd = ndk_endpoint_fd(ep);
	assert_int_equal(sock_port(fd), p);
	assert_int_equal(getopt_int(fd, IPPROTO_IPV6, IPV6_V6ONLY), 1);
	assert_int_equal(acquire6("::1", p, NDK_ENDPOINT_CONNECTOR, &ep2),
			 -EADDRINUSE);
	assert_int_equal(acquire6("::", p, NDK_ENDPOINT_CONNECTOR, &ep2),
			 -EADDRINUSE);
	/* V6ONLY: the IPv4 port space is separate. */
	if (acquire4("127.0.0.1", p, NDK_ENDPOINT_CONNECTOR, &ep2) == 0)
		ndk_endpoint_put(ep2);
	ndk_endpoint_put(ep);
	assert_int_equal(acquire6("::1", p, NDK_ENDPOINT_CONNECTOR, &ep), 0);
	ndk_endpoint_put(ep);
}

/* ::ffff:a.b.c.d is the IPv4 endpoint a.b.c.d. */
static void test_v4_mapped(void **state)
{
	struct ndk_endpoint *ep, *ep2;
	int fd;
	uint16_t p;

	fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		skip();
		return;
	}
	close(fd);
	assert_int_equal(
		acquire6("::ffff:127.0.0.1", 0, NDK_ENDPOINT_SHARED, &ep), 0);
	p = ndk_endpoint_port(ep);
	assert_in_range(p, EPH_MIN, EPH_MAX);
	fd = ndk_endpoint_fd(ep);
	assert_int_equal(getopt_int(fd, IPPROTO_IPV6, IPV6_V6ONLY), 0);
	assert_int_equal(sock_port(fd), p);
	assert_int_equal(acquire4("127.0.0.1", p, NDK_ENDPOINT_CONNECTOR, &ep2),
			 -EADDRINUSE);
	fd = ndk_endpoint_bind_shared(ep);
	assert_true(fd >= 0);
	assert_int_equal(sock_port(fd), p);
	close(fd);
	ndk_endpoint_put(ep);
}

struct visit {
	struct ndk_endpoint *want[3];
	unsigned int seen[3];
	enum ndk_endpoint_kind kind[3];
	unsigned int refs[3];
	unsigned int total;
};

/* Runs under the table lock: records only, asserts afterwards. */
static void visit_fn(const struct ndk_endpoint *ep, void *arg)
{
	struct visit *v = arg;
	unsigned int i;

	v->total++;
	for (i = 0; i < 3; i++)
		if (ep == v->want[i]) {
			v->seen[i]++;
			v->kind[i] = ndk_endpoint_kind(ep);
			v->refs[i] = ndk_endpoint_refs(ep);
		}
}

static void test_for_each(void **state)
{
	struct visit v;
	unsigned int i, j;

	memset(&v, 0, sizeof(v));
	for (i = 0; i < 3; i++) {
		assert_int_equal(acquire4("127.0.0.1", 0, kinds[i], &v.want[i]),
				 0);
		for (j = 0; j < i; j++)
			ndk_endpoint_get(v.want[i]);
	}
	ndk_endpoint_for_each(visit_fn, &v);
	assert_int_equal(v.total, 3);
	for (i = 0; i < 3; i++) {
		assert_int_equal(v.seen[i], 1);
		assert_int_equal(v.kind[i], kinds[i]);
		assert_int_equal(v.refs[i], i + 1);
		for (j = 0; j <= i; j++)
			ndk_endpoint_put(v.want[i]);
	}
	memset(&v, 0, sizeof(v));
	ndk_endpoint_for_each(visit_fn, &v);
	assert_int_equal(v.total, 0);
}

static void test_invalid_args(void **state)
{
	struct sockaddr_in a = sin4("127.0.0.1", 0);
	struct sockaddr_in6 a6 = sin6("::1", 0);
	struct sockaddr un = { .sa_family = AF_UNIX };
	struct ndk_endpoint *ep;

	assert_int_equal(ndk_endpoint_acquire(NULL, sizeof(a),
					      NDK_ENDPOINT_CONNECTOR, &ep),
			 -EINVAL);
	assert_int_equal(ndk_endpoint_acquire((struct sockaddr *)&a,
					      sizeof(a) - 1,
					      NDK_ENDPOINT_CONNECTOR, &ep),
			 -EINVAL);
	assert_int_equal(ndk_endpoint_acquire((struct sockaddr *)&a6,
					      sizeof(struct sockaddr_in),
					      NDK_ENDPOINT_CONNECTOR, &ep),
			 -EINVAL);
	assert_int_equal(ndk_endpoint_acquire(&un, sizeof(un),
					      NDK_ENDPOINT_CONNECTOR, &ep),
			 -EINVAL);
	assert_int_equal(ndk_endpoint_acquire((struct sockaddr *)&a, sizeof(a),
					      NDK_ENDPOINT_KIND_COUNT, &ep),
			 -EINVAL);
	assert_int_equal(ndk_endpoint_acquire((struct sockaddr *)&a, sizeof(a),
					      NDK_ENDPOINT_CONNECTOR, NULL),
			 -EINVAL);
	/* An address that is not local. */
	assert_int_equal(acquire4("192.0.2.1", 0, NDK_ENDPOINT_CONNECTOR, &ep),
			 -EADDRNOTAVAIL);
}

#define THREADS 8
#define ROUNDS	100

static atomic_int held[65536];
static atomic_int thread_errors;

static void *thread_fn(void *arg)
{
	uintptr_t id = (uintptr_t)arg;
	struct sockaddr_in l = sin4("127.0.0.1", (uint16_t)(1000 + id));
	struct sockaddr_in r = sin4("127.0.0.1", 7);
	int i;

	for (i = 0; i < ROUNDS; i++) {
		struct ndk_endpoint *ep;
		uint16_t p;

		if (acquire4("127.0.0.1", 0, kinds[i % 3], &ep)) {
			atomic_fetch_add(&thread_errors, 1);
			continue;
		}
		p = ndk_endpoint_port(ep);
		/* No two live endpoints share a port. */
		if (atomic_exchange(&held[p], 1))
			atomic_fetch_add(&thread_errors, 1);
		ndk_endpoint_get(ep);
		if (ndk_tuple_register((struct sockaddr *)&l,
				       (struct sockaddr *)&r))
			atomic_fetch_add(&thread_errors, 1);
		ndk_tuple_unregister((struct sockaddr *)&l,
				     (struct sockaddr *)&r);
		ndk_endpoint_put(ep);
		atomic_store(&held[p], 0);
		ndk_endpoint_put(ep);
	}
	return NULL;
}

static void test_concurrent(void **state)
{
	pthread_t t[THREADS];
	uintptr_t i;

	reset_range();
	for (i = 0; i < THREADS; i++)
		assert_int_equal(
			pthread_create(&t[i], NULL, thread_fn, (void *)i), 0);
	for (i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	assert_int_equal(atomic_load(&thread_errors), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_acquire_ephemeral_default),
		cmocka_unit_test(test_acquire_small_range),
		cmocka_unit_test(test_bad_range_uses_default),
		cmocka_unit_test(test_same_addr_every_kind),
		cmocka_unit_test(test_wildcard_and_other_ip),
		cmocka_unit_test(test_kernel_listener_conflict),
		cmocka_unit_test(test_kernel_noreuse_conflict),
		cmocka_unit_test(test_second_listener_refused),
		cmocka_unit_test(test_listener_restart_time_wait),
		cmocka_unit_test(test_exhaust_range),
		cmocka_unit_test(test_put_frees_port),
		cmocka_unit_test(test_refcount_keeps_alive),
		cmocka_unit_test(test_take_fd),
		cmocka_unit_test(test_shared_endpoint),
		cmocka_unit_test(test_tuple_registry),
		cmocka_unit_test(test_ipv6),
		cmocka_unit_test(test_v4_mapped),
		cmocka_unit_test(test_for_each),
		cmocka_unit_test(test_invalid_args),
		cmocka_unit_test(test_concurrent),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
