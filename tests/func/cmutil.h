/* SPDX-License-Identifier: MIT */
/*
 * Helpers for the connection-management tests: a "host" (adapter, PD, CQ)
 * and waitable request completions and connect events, all through the
 * public NDK API.
 */
#ifndef NDK_CMUTIL_H
#define NDK_CMUTIL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <netinet/in.h>
#include <ndk/ndk.h>
#include "tool_host.h"

/* A request completion that a test can wait for. */
struct cm_req {
	struct tool_wait w;
};

void cm_req_init(struct cm_req *r);
VOID cm_req_done(PVOID ctx, NTSTATUS status);
/* Waits up to ms (0: only looks) for the completion; returns its status,
 * or -1 if it has not come. Fails the test if it completed more than
 * once. */
NTSTATUS cm_req_wait(struct cm_req *r, unsigned int ms);
/* Inline result or, if STATUS_PENDING, the completion's. */
NTSTATUS cm_req_result(NTSTATUS inline_status, struct cm_req *r,
		       unsigned int ms);

struct cm_host {
	NDK_ADAPTER *ad;
	NDK_ADAPTER_INFO info;
	NDK_PD *pd;
	NDK_CQ *cq;
};

/* Notifications delivered to every host's CQ so far. */
extern atomic_int cm_cq_notifications;

void cm_host_open(struct cm_host *h, const char *ifname);
void cm_host_close(struct cm_host *h);
/* The two loopback hosts most tests use: a server and a client. */
void cm_hosts_open(struct cm_host *srv, struct cm_host *cli);
void cm_hosts_close(struct cm_host *srv, struct cm_host *cli);
/* A QP on h's CQ with depth receives and requests of up to sge SGEs
 * each, and inline_size inline bytes; cm_qp is a small one (16, 1, 0). */
/* Which libndk provider serves h (NdkQueryAdapterProvider): tests of
 * what only the software provider does (its wire, its timing) skip on
 * others. */
bool cm_provider_is(struct cm_host *h, const char *name);
/* Whether h's RDMA device name starts with prefix ("siw", "rxe"): a
 * device's own limit, documented in docs/verbs.md. */
bool cm_device_is(struct cm_host *h, const char *prefix);
/* What the adapter of the test interface (cm_test_ifname) reports of its
 * provider and device; all zero when none opens there. */
void cm_test_provider(NDK_PROVIDER_INFO *pi);
/*
 * For the start of main() in tests of the software provider's own wire
 * (raw MPA, DDP and RDMAP peers) and timing: exits 77 (CTest's skip)
 * when the adapter on the test interface gets another provider.
 */
void cm_software_only(void);
/* Skips the test when the adapter lacks what (NDK_ADAPTER_INFO says so:
 * a device limit, docs/verbs.md). */
#define cm_require(have, what)                                        \
	do {                                                          \
		if (!(have)) {                                        \
			print_message("skipped: no %s here\n", what); \
			skip();                                       \
		}                                                     \
	} while (0)

NDK_QP *cm_qp_sized(struct cm_host *h, ULONG depth, ULONG sge,
		    ULONG inline_size);
NDK_QP *cm_qp(struct cm_host *h);
NDK_CONNECTOR *cm_connector(struct cm_host *h);

/* Listens on addr (port 0 allowed); l->addr gets the actual address.
 * Connect events queue on l. */
NTSTATUS cm_listen(struct cm_host *h, struct tool_listener *l,
		   const struct sockaddr *addr);
void cm_listener_close(struct tool_listener *l);
/* Next connector from the ConnectEvent, or NULL after ms (0: only
 * looks). */
NDK_CONNECTOR *cm_next_incoming(struct tool_listener *l, unsigned int ms);

/*
 * The interface and addresses the tests run on: lo, 127.0.0.1 and ::1,
 * unless NDK_TEST_IF, NDK_TEST_ADDR4 and NDK_TEST_ADDR6 name others (an
 * RDMA device's interface and its addresses, for the verbs provider:
 * tests/interop/verbs-guest.sh).
 */
const char *cm_test_ifname(void);
/* Once per process, for a failure that looks like a hang: each thread's
 * name, wait channel and kernel stack (as root), and the TCP sockets. */
void cm_dump_threads(const char *why);
struct sockaddr_in cm_lo4(uint16_t port);
struct sockaddr_in6 cm_lo6(uint16_t port);

/* NdkConnect from 127.0.0.1:0 (or ::1) with private data. */
NTSTATUS cm_connect(NDK_CONNECTOR *c, NDK_QP *qp, const struct sockaddr *dst,
		    ULONG ird, ULONG ord, const void *pd, ULONG pdlen,
		    struct cm_req *r);

/*
 * The incoming connector p accepts with pqp (IRD/ORD 1, no private data);
 * the Connect of a (whose completion is conn) completes, a completes it,
 * and the Accept completes: each STATUS_SUCCESS within ms.
 */
void cm_accept_and_complete(NDK_CONNECTOR *a, struct cm_req *conn,
			    NDK_CONNECTOR *p, NDK_QP *pqp, unsigned int ms);

/*
 * c (of cli) connects to l with IRD/ORD lim and no private data; the
 * incoming connector accepts with a new QP of srv and the same limits.
 * Returns the incoming connector once c's Connect completed
 * (STATUS_SUCCESS in *r), its Accept still pending in *acc: c has not
 * called CompleteConnect.
 */
NDK_CONNECTOR *cm_connect_to_accepting(struct cm_host *cli, NDK_CONNECTOR *c,
				       struct cm_host *srv,
				       struct tool_listener *l, ULONG lim,
				       struct cm_req *r, struct cm_req *acc);

/*
 * The RDS NdkGetConnectionData reports for len bytes of private data on
 * h's adapter: len where the transport carries the length (iWARP), the
 * padded private data area of the IB CM message otherwise (docs/verbs.md,
 * Private data): then at least len.
 */
bool cm_rds_ok(struct cm_host *h, ULONG rds, ULONG len);

/* NdkGetConnectionData of c gives exactly the len bytes at pd (or more,
 * zero-padded, on IB and RoCE). */
void cm_assert_private_data(NDK_CONNECTOR *c, const void *pd, ULONG len);
/* The same as a test: for a forked child, where cmocka cannot fail. */
bool cm_private_data_is(NDK_CONNECTOR *c, const void *pd, ULONG len);

void cm_close_connector(NDK_CONNECTOR *c);
void cm_close_qp(NDK_QP *qp);

#endif
