/* SPDX-License-Identifier: MIT */
/*
 * Hosts built from network namespaces for the functional tests: a child
 * process per host that unshare(CLONE_NEWNET)s, veth links made with
 * iproute2, checks that report and _exit inside a child, and a pair of
 * children (client and server) joined by pipes. The namespaces are
 * anonymous: they, and every link in them, vanish when the children exit,
 * and no packet ever leaves them. Needs root; without it, or without
 * unshare or veth, a test is skipped (exit code SKIP_CODE).
 *
 * With NDK_TEST_RDMA_LINK=siw or rxe (the verbs runs in the interop
 * guest), each veth end that gets an address also gets an RDMA device of
 * that type ("rdma link add"), so that the verbs provider serves it.
 */
#ifndef NDK_TEST_NETNS_PAIR_H
#define NDK_TEST_NETNS_PAIR_H

#include <netinet/in.h>
#include <stdio.h>
#include <sys/types.h>
#include <unistd.h>
#include "cmutil.h"

#define SKIP_CODE 77
/* A child that is still running after this is killed (SIGALRM). */
#define CHILD_LIMIT_S 20

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

#define SH(...)                                     \
	do {                                        \
		if (sh(__VA_ARGS__))                \
			CHILD_FAIL("setup failed"); \
	} while (0)

struct peer {
	int rd, wr; /* from / to the other child */
	pid_t peer_pid; /* the server's pid, for the client */
};

/* Runs a shell command built from fmt; 0 if it exited 0. */
int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
struct sockaddr_in in4(const char *ip, uint16_t port);
/* NdkConnect from src to dst (IPv4), completing into r. */
NTSTATUS connect4(NDK_CONNECTOR *c, NDK_QP *qp, const char *src,
		  const char *dst, uint16_t dport, const void *pd, ULONG pdlen,
		  struct cm_req *r);
/* The child side of a test: unshare, and a time limit (CHILD_LIMIT_S). */
void child_enter(void);
/* Forks a child that enters its namespace and exits with fn(arg). */
pid_t child_start(int (*fn)(void *), void *arg);
/* Waits for a child; returns its exit code (skip: SKIP_CODE). */
int child_wait(pid_t pid);
/* One child runs fn in a namespace of its own; skips without root. */
void run_child(int (*fn)(void *), void *arg);
/* lo up, and the veth pair IF_A / IF_B with ADDR_A on IF_A; IF_B is up
 * without an address, so nobody answers for the rest of the /24. */
void setup_one_host(void);
/* cm_host_open on a veth end; with NDK_TEST_RDMA_LINK, checks that the
 * verbs provider serves it. */
void ns_host_open(struct cm_host *h, const char *ifname);
/* Closes what cm_host_open made, successors first, then the adapter. */
void host_close(struct cm_host *h);
/* Messages between the two children of a pair. peer_recv skips (exits
 * SKIP_CODE) if the other child is gone. */
void peer_send(struct peer *p, const void *buf, size_t n);
void peer_recv(struct peer *p, void *buf, size_t n);
/* The client makes the link once the server is in its namespace: IF_A
 * with ADDR_A here, IF_B (MAC_B) there; the server sets up its end. */
void client_link(struct peer *p);
void server_link(struct peer *p);
/* A server child and a client child, each in its own namespace. */
void run_pair(int (*server)(struct peer *), int (*client)(struct peer *));

#endif /* NDK_TEST_NETNS_PAIR_H */
