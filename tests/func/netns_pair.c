/* SPDX-License-Identifier: MIT */
/* Network-namespace hosts for the functional tests (netns_pair.h). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include "netns_pair.h"
#include "testutil.h"

/* Runs a shell command built from fmt; 0 if it exited 0. */
int sh(const char *fmt, ...)
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

struct sockaddr_in in4(const char *ip, uint16_t port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_port = htons(port) };

	if (inet_pton(AF_INET, ip, &sin.sin_addr) != 1)
		CHILD_FAIL("bad address %s", ip);
	return sin;
}

/* NdkConnect from src to dst (IPv4), completing into r. */
NTSTATUS connect4(NDK_CONNECTOR *c, NDK_QP *qp, const char *src,
		  const char *dst, uint16_t dport, const void *pd, ULONG pdlen,
		  struct cm_req *r)
{
	struct sockaddr_in s = in4(src, 0), d = in4(dst, dport);

	cm_req_init(r);
	return c->Dispatch->NdkConnect(c, qp, (PSOCKADDR)&s, sizeof(s),
				       (PSOCKADDR)&d, sizeof(d), 8, 8,
				       (PVOID)pd, pdlen, cm_req_done, r);
}

/* The child side of a test: unshare, run, exit with the result. */
void child_enter(void)
{
	int tries = 0, ret;

	/* A cmocka assertion in a helper (cmutil.c) aborts the child
	 * instead of jumping back into the parent's test runner. */
	setenv("CMOCKA_TEST_ABORT", "1", 1);
	alarm(CHILD_LIMIT_S);
	/* ENODEV while the RDMA core still removes the device of the
	 * previous test's namespace (a new namespace gets every device):
	 * it passes. */
	while ((ret = unshare(CLONE_NEWNET)) && errno == ENODEV &&
	       ++tries < 100)
		usleep(20000);
	if (ret) {
		fprintf(stderr, "# unshare(CLONE_NEWNET): %s\n",
			strerror(errno));
		_exit(SKIP_CODE);
	}
}

pid_t child_start(int (*fn)(void *), void *arg)
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
int child_wait(pid_t pid)
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

void run_child(int (*fn)(void *), void *arg)
{
	int rc;

	if (geteuid() != 0)
		skip();
	rc = child_wait(child_start(fn, arg));
	if (rc == SKIP_CODE)
		skip();
	assert_int_equal(rc, 0);
}

/* NDK_TEST_RDMA_LINK: the type of RDMA device put on each veth end. */
static const char *rdma_link_type(void)
{
	const char *t = getenv("NDK_TEST_RDMA_LINK");

	return t && *t ? t : NULL;
}

static bool provider_forced(const char *name)
{
	const char *p = getenv("NDK_PROVIDER");

	return p && !strcmp(p, name);
}

/* Before any link is made (a pair's two children both skip here): the
 * verbs provider needs a device on the veths. */
static void need_rdma_link(void)
{
	if (rdma_link_type() || !provider_forced("verbs"))
		return;
	fprintf(stderr, "# NDK_PROVIDER=verbs and no RDMA device for the "
			"veths (NDK_TEST_RDMA_LINK): skipped\n");
	_exit(SKIP_CODE);
}

/*
 * Puts an RDMA device on ifname (NDK_TEST_RDMA_LINK). Device names are
 * global, whatever the namespace: the pid makes them unique. The device
 * goes with its net device when the namespace ends.
 *
 * rxe of Linux 6.1 works in the initial network namespace only, and the
 * verbs provider says so at once: outside it, an interface whose device
 * is rxe has no verbs adapter (docs/verbs.md, Devices). With
 * NDK_PROVIDER=verbs that is what this child asserts, and it is done.
 */
static void attach_rdma(const char *ifname, struct peer *wait)
{
	const char *t = rdma_link_type();
	NDK_VERSION v = { 2, 0 };
	NDK_ADAPTER *ad = NULL;

	if (!t)
		return;
	SH("rdma link add %s%d%s type %s netdev %s", t, (int)getpid(), ifname,
	   t, ifname);
	if (strcmp(t, "rxe") || !provider_forced("verbs"))
		return;
	CHECK_STATUS(NdkOpenAdapter(v, if_nametoindex(ifname), &ad),
		     NDIS_STATUS_ADAPTER_NOT_FOUND);
	fprintf(stderr,
		"# rxe outside the initial network namespace: "
		"no verbs adapter on %s, as announced\n",
		ifname);
	/* The client's namespace holds the link: it stays until the
	 * server is done with its end. */
	if (wait) {
		char c;

		while (read(wait->rd, &c, 1) > 0)
			;
	}
	exit(0);
}

void ns_host_open(struct cm_host *h, const char *ifname)
{
	cm_host_open(h, ifname);
	if (rdma_link_type())
		CHECK(cm_provider_is(h, "verbs"));
}

/*
 * One host in this namespace: lo up, and the veth pair IF_A / IF_B with
 * ADDR_A on IF_A; IF_B is up without an address, so nobody answers for
 * the rest of 10.77.0.0/24 (ARP included).
 */
void setup_one_host(void)
{
	need_rdma_link();
	SH("ip link set lo up");
	if (sh("ip link add " IF_A " type veth peer name " IF_B)) {
		fprintf(stderr, "# no veth: skipped\n");
		_exit(SKIP_CODE);
	}
	SH("ip addr add " ADDR_A "/24 dev " IF_A);
	SH("ip link set " IF_B " up");
	SH("ip link set " IF_A " up");
	attach_rdma(IF_A, NULL);
}

/* Closes what cm_host_open made, successors first, then the adapter. */
void host_close(struct cm_host *h)
{
	NTSTATUS st = h->cq->Dispatch->NdkCloseCq(&h->cq->Header, NULL, NULL);

	CHECK(st == STATUS_SUCCESS || st == STATUS_PENDING);
	st = h->pd->Dispatch->NdkClosePd(&h->pd->Header, NULL, NULL);
	CHECK(st == STATUS_SUCCESS || st == STATUS_PENDING);
	cm_host_close(h);
}

/* ------------------------------------------------------------------ */
/* Two hosts: a child per namespace, joined by pipes                  */

void peer_send(struct peer *p, const void *buf, size_t n)
{
	if (write(p->wr, buf, n) != (ssize_t)n)
		CHILD_FAIL("pipe write: %s", strerror(errno));
}

/* Reads n bytes. If the other child is gone, this one skips: the parent
 * reports the other one's failure, or skips if it skipped too. */
void peer_recv(struct peer *p, void *buf, size_t n)
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
void client_link(struct peer *p)
{
	char c;

	need_rdma_link();
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
	attach_rdma(IF_A, p);
}

void server_link(struct peer *p)
{
	char c;

	need_rdma_link();
	peer_send(p, "R", 1);
	peer_recv(p, &c, 1); /* the link is there */
	SH("ip link set lo up");
	SH("ip addr add " ADDR_B "/24 dev " IF_B);
	SH("ip link set " IF_B " up");
	attach_rdma(IF_B, NULL);
}

void run_pair(int (*server)(struct peer *), int (*client)(struct peer *))
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
