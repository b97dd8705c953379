/* SPDX-License-Identifier: MIT */
/*
 * Connection management between hosts built from network namespaces,
 * through the public API only: the NdkConnect statuses that
 * loopback cannot produce (NdkConnect: NETWORK_UNREACHABLE, HOST_UNREACHABLE,
 * IO_TIMEOUT, INVALID_ADDRESS), closing a connector whose TCP connect is
 * still pending (docs/design.md, Sockets), and a full handshake between two hosts.
 *
 * Every test forks children that unshare(CLONE_NEWNET) and build their
 * links with iproute2. The namespaces are anonymous: they, and every link
 * in them, vanish when the children exit, whatever happened, and no packet
 * ever leaves them. A peer namespace is a second child; the first one
 * creates the veth pair with its other end in the peer's namespace
 * ("netns PID"). Needs root: without it, or without unshare or veth, the
 * tests are skipped (exit code 77).
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
#include "testutil.h"

#define SKIP_CODE 77
/* A child that is still running after this is killed (SIGALRM). */
#define CHILD_LIMIT_S 20
#define PORT	      4791 /* a destination port; nothing listens on it */

/* The veth end of the host under test and its peer end. */
#define IF_A	   "vA"
#define IF_B	   "vB"
#define ADDR_A	   "10.77.0.1"
#define ADDR_EXTRA "10.77.0.9"
#define ADDR_B	   "10.77.0.2"
/* A MAC nobody on the link has: frames to it are dropped unanswered. */
#define MAC_NOBODY "02:00:5e:77:00:99"
#define MAC_B	   "02:00:5e:77:00:02"

/* ------------------------------------------------------------------ */
/* Checks inside a child: report, then _exit (no cmocka jump there).  */

#define CHILD_FAIL(...)                                         \
	do {                                                    \
		fprintf(stderr, "%s:%d: ", __FILE__, __LINE__); \
		fprintf(stderr, __VA_ARGS__);                   \
		fputc('\n', stderr);                            \
		_exit(1);                                       \
	} while (0)

#define CHECK(cond)                                            \
	do {                                                   \
		if (!(cond))                                   \
			CHILD_FAIL("check failed: %s", #cond); \
	} while (0)

#define CHECK_STATUS(expr, want)                                     \
	do {                                                         \
		NTSTATUS got_ = (expr);                              \
		NTSTATUS want_ = (want);                             \
		if (got_ != want_)                                   \
			CHILD_FAIL("%s: got %s, want %s", #expr,     \
				   got_ == -1 ? "no completion"      \
					      : NdkStatusName(got_), \
				   NdkStatusName(want_));            \
	} while (0)

/* Runs a shell command built from fmt; 0 if it exited 0. */
static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
	char cmd[512];
	va_list ap;
	int ret;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	ret = system(cmd);
	if (ret == -1 || !WIFEXITED(ret) || WEXITSTATUS(ret)) {
		fprintf(stderr, "# command failed (%d): %s\n", ret, cmd);
		return -1;
	}
	return 0;
}

#define SH(...)                                     \
	do {                                        \
		if (sh(__VA_ARGS__))                \
			CHILD_FAIL("setup failed"); \
	} while (0)

static struct sockaddr_in in4(const char *ip, uint16_t port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_port = htons(port) };

	if (inet_pton(AF_INET, ip, &sin.sin_addr) != 1)
		CHILD_FAIL("bad address %s", ip);
	return sin;
}

/* NdkConnect from src to dst (IPv4), completing into r. */
static NTSTATUS connect4(NDK_CONNECTOR *c, NDK_QP *qp, const char *src,
			 const char *dst, uint16_t dport, const void *pd,
			 ULONG pdlen, struct cm_req *r)
{
	struct sockaddr_in s = in4(src, 0), d = in4(dst, dport);

	cm_req_init(r);
	return c->Dispatch->NdkConnect(c, qp, (PSOCKADDR)&s, sizeof(s),
				       (PSOCKADDR)&d, sizeof(d), 8, 8,
				       (PVOID)pd, pdlen, cm_req_done, r);
}

/* The child side of a test: unshare, run, exit with the result. */
static void child_enter(void)
{
	/* A cmocka assertion in a helper (cmutil.c) aborts the child
	 * instead of jumping back into the parent's test runner. */
	setenv("CMOCKA_TEST_ABORT", "1", 1);
	alarm(CHILD_LIMIT_S);
	if (unshare(CLONE_NEWNET)) {
		fprintf(stderr, "# unshare(CLONE_NEWNET): %s\n",
			strerror(errno));
		_exit(SKIP_CODE);
	}
}

static pid_t child_start(int (*fn)(void *), void *arg)
{
	pid_t pid;

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		child_enter();
		/* exit(), not _exit(): LeakSanitizer checks the child. */
		exit(fn(arg));
	}
	return pid;
}

/* Waits for a child; returns its exit code (skip: SKIP_CODE). */
static int child_wait(pid_t pid)
{
	int wstatus;

	assert_int_equal(waitpid(pid, &wstatus, 0), pid);
	if (WIFSIGNALED(wstatus)) {
		fprintf(stderr, "# child %d killed by signal %d%s\n", (int)pid,
			WTERMSIG(wstatus),
			WTERMSIG(wstatus) == SIGALRM ? " (time limit)" : "");
		return 128 + WTERMSIG(wstatus);
	}
	assert_true(WIFEXITED(wstatus));
	return WEXITSTATUS(wstatus);
}

static void run_child(int (*fn)(void *), void *arg)
{
	int rc;

	if (geteuid() != 0)
		skip();
	rc = child_wait(child_start(fn, arg));
	if (rc == SKIP_CODE)
		skip();
	assert_int_equal(rc, 0);
}

/*
 * One host in this namespace: lo up, and the veth pair IF_A / IF_B with
 * ADDR_A on IF_A; IF_B is up without an address, so nobody answers for
 * the rest of 10.77.0.0/24 (ARP included).
 */
static void setup_one_host(void)
{
	SH("ip link set lo up");
	if (sh("ip link add " IF_A " type veth peer name " IF_B)) {
		fprintf(stderr, "# no veth: skipped\n");
		_exit(SKIP_CODE);
	}
	SH("ip addr add " ADDR_A "/24 dev " IF_A);
	SH("ip link set " IF_B " up");
	SH("ip link set " IF_A " up");
}

/* Closes what cm_host_open made, successors first, then the adapter. */
static void host_close(struct cm_host *h)
{
	NTSTATUS st = h->cq->Dispatch->NdkCloseCq(&h->cq->Header, NULL, NULL);

	CHECK(st == STATUS_SUCCESS || st == STATUS_PENDING);
	st = h->pd->Dispatch->NdkClosePd(&h->pd->Header, NULL, NULL);
	CHECK(st == STATUS_SUCCESS || st == STATUS_PENDING);
	cm_host_close(h);
}

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
	cm_host_open(&h, IF_A);
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
	cm_host_open(&h, IF_A);
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
	cm_host_open(&h, IF_A);
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
	cm_host_open(&veth, IF_A);
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
/* Two hosts: a child per namespace, joined by pipes                  */

struct peer {
	int rd, wr; /* from / to the other child */
	pid_t peer_pid; /* the server's pid, for the client */
};

static void peer_send(struct peer *p, const void *buf, size_t n)
{
	if (write(p->wr, buf, n) != (ssize_t)n)
		CHILD_FAIL("pipe write: %s", strerror(errno));
}

/* Reads n bytes. If the other child is gone, this one skips: the parent
 * reports the other one's failure, or skips if it skipped too. */
static void peer_recv(struct peer *p, void *buf, size_t n)
{
	size_t got = 0;

	while (got < n) {
		ssize_t k = read(p->rd, (char *)buf + got, n - got);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			fprintf(stderr, "# peer gone\n");
			_exit(SKIP_CODE);
		}
		got += (size_t)k;
	}
}

/*
 * The client creates the link once the server is in its namespace: IF_A
 * here with ADDR_A, IF_B (MAC_B) in the server's namespace. The server
 * configures its end itself.
 */
static void client_link(struct peer *p)
{
	char c;

	peer_recv(p, &c, 1); /* the server has unshared */
	SH("ip link set lo up");
	if (sh("ip link add " IF_A " type veth peer name " IF_B
	       " address " MAC_B " netns %d",
	       (int)p->peer_pid)) {
		fprintf(stderr, "# no veth: skipped\n");
		_exit(SKIP_CODE);
	}
	SH("ip addr add " ADDR_A "/24 dev " IF_A);
	SH("ip link set " IF_A " up");
	peer_send(p, "L", 1);
}

static void server_link(struct peer *p)
{
	char c;

	peer_send(p, "R", 1);
	peer_recv(p, &c, 1); /* the link is there */
	SH("ip link set lo up");
	SH("ip addr add " ADDR_B "/24 dev " IF_B);
	SH("ip link set " IF_B " up");
}

static void run_pair(int (*server)(struct peer *), int (*client)(struct peer *))
{
	int s2c[2], c2s[2], rs, rc;
	struct peer sp, cp;
	pid_t spid, cpid;

	if (geteuid() != 0)
		skip();
	assert_int_equal(pipe(s2c), 0);
	assert_int_equal(pipe(c2s), 0);
	sp = (struct peer){ .rd = c2s[0], .wr = s2c[1] };
	cp = (struct peer){ .rd = s2c[0], .wr = c2s[1] };

	fflush(stdout);
	fflush(stderr);
	spid = fork();
	assert_true(spid >= 0);
	if (spid == 0) {
		close(s2c[0]);
		close(c2s[1]);
		child_enter();
		exit(server(&sp));
	}
	cp.peer_pid = spid;
	cpid = fork();
	if (cpid == 0) {
		close(c2s[0]);
		close(s2c[1]);
		child_enter();
		exit(client(&cp));
	}
	close(s2c[0]);
	close(s2c[1]);
	close(c2s[0]);
	close(c2s[1]);
	if (cpid < 0)
		kill(spid, SIGKILL);
	rs = child_wait(spid);
	rc = cpid < 0 ? -1 : child_wait(cpid);
	assert_true(cpid > 0);
	/* A failure first; a child skips if the other one is gone. */
	if (rs != SKIP_CODE)
		assert_int_equal(rs, 0);
	if (rc != SKIP_CODE)
		assert_int_equal(rc, 0);
	if (rs == SKIP_CODE || rc == SKIP_CODE)
		skip();
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
	cm_host_open(&h, IF_A);
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
	cm_host_open(&h, IF_B);
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
	cm_host_open(&h, IF_A);
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
