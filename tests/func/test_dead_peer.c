/* SPDX-License-Identifier: MIT */
/*
 * A peer that vanishes (power off, cable pulled, a firewall that starts
 * dropping) is noticed within NDK_PEER_TIMEOUT_MS, idle or with data
 * outstanding: the disconnect event comes with ProviderDisconnectReason
 * STATUS_IO_TIMEOUT, and after NdkFlush or NdkDisconnect every request
 * still outstanding completes exactly once (docs/ndk.md, Dead peers).
 *
 * Two hosts in network namespaces (netns_pair.h); the server's namespace
 * starts dropping every packet in and out with an nftables rule once the
 * connection is up. Needs root, veth and nft; skipped otherwise.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include "dp_pair.h"
#include "netns_pair.h"
#include "testutil.h"

#define PEER_TIMEOUT_MS "2000"
/* Detection takes the timeout plus keepalive's first idle second; the
 * rest is slack for a loaded machine. */
#define DETECT_MIN_MS 1000
#define DETECT_MAX_MS 9000
#define MSG_LEN	      65536
#define RECVS	      64

enum traffic {
	IDLE, /* nothing outstanding when the peer vanishes: keepalive */
	SENDING, /* Sends outstanding: TCP_USER_TIMEOUT */
};

/* Set by the test before it forks: the children inherit it. */
static enum traffic traffic;

struct lost {
	atomic_int calls;
	atomic_ulong reason;
	atomic_uint_fast64_t at_ms;
};

static VOID on_lost(PVOID ctx, ULONG reason)
{
	struct lost *l = ctx;

	atomic_store(&l->reason, reason);
	atomic_store(&l->at_ms, tu_now_ms());
	atomic_fetch_add(&l->calls, 1);
}

static bool lost_seen(void *arg)
{
	return atomic_load(&((struct lost *)arg)->calls) > 0;
}

/* Waits for the disconnect event; checks its reason and when it came. */
static void expect_lost(struct lost *l, uint64_t since_ms, const char *who)
{
	uint64_t ms;

	if (!tu_wait_until(lost_seen, l, DETECT_MAX_MS + 2000))
		CHILD_FAIL("%s: no disconnect event", who);
	ms = atomic_load(&l->at_ms) - since_ms;
	fprintf(stderr, "# %s: disconnect event after %llu ms, reason %s\n",
		who, (unsigned long long)ms,
		NdkStatusName((NTSTATUS)atomic_load(&l->reason)));
	CHECK_STATUS((NTSTATUS)atomic_load(&l->reason), STATUS_IO_TIMEOUT);
	CHECK(ms >= DETECT_MIN_MS && ms <= DETECT_MAX_MS);
}

/*
 * Polls cq until done + n == want (every outstanding request), checking
 * that each one completed with success or as flushed, then that nothing
 * more comes.
 */
static void reap_all(NDK_CQ *cq, unsigned int done, unsigned int want)
{
	NDK_RESULT res[16];
	uint64_t deadline = tu_now_ms() + 5000;
	ULONG got, i;

	while (done < want && tu_now_ms() < deadline) {
		got = cq->Dispatch->NdkGetCqResults(cq, res, 16);
		for (i = 0; i < got; i++)
			if (res[i].Status != STATUS_SUCCESS &&
			    res[i].Status != STATUS_CANCELLED)
				CHILD_FAIL("completion status %s",
					   NdkStatusName(res[i].Status));
		done += got;
	}
	if (done != want)
		CHILD_FAIL("%u of %u requests completed", done, want);
	tu_sleep_ms(100);
	CHECK(cq->Dispatch->NdkGetCqResults(cq, res, 16) == 0);
}

static int dead_server(struct peer *p)
{
	struct cm_host h;
	struct tool_listener l;
	struct sockaddr_in any = in4(ADDR_B, 0);
	struct cm_req acc;
	struct lost lost = { 0 };
	NDK_CONNECTOR *c;
	NDK_QP *qp;
	NDK_MR *mr;
	uint8_t *buf = malloc(MSG_LEN);
	uint64_t t0;
	uint16_t port;
	int i;
	char ch;

	CHECK(buf != NULL);
	server_link(p);
	if (sh("nft list tables >/dev/null 2>&1")) {
		fprintf(stderr, "# no nft: skipped\n");
		_exit(SKIP_CODE);
	}
	setenv("NDK_PEER_TIMEOUT_MS", PEER_TIMEOUT_MS, 1);
	ns_host_open(&h, IF_B);
	CHECK_STATUS(cm_listen(&h, &l, (struct sockaddr *)&any),
		     STATUS_SUCCESS);
	port = tool_addr_port((struct sockaddr *)&l.addr);
	peer_send(p, &port, sizeof(port));
	c = cm_next_incoming(&l, 5000);
	CHECK(c != NULL);
	qp = big_qp(&h);
	mr = reg_range(h.pd, buf, MSG_LEN, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
	/* Every receive targets the same buffer: only counts matter. */
	for (i = 0; i < RECVS; i++)
		post_recv(qp, (uintptr_t)i, buf, MSG_LEN,
			  mr->Dispatch->NdkGetLocalTokenFromMr(mr));
	cm_req_init(&acc);
	CHECK_STATUS(c->Dispatch->NdkAcceptEx(c, qp, 4, 4, NULL, 0, on_lost,
					      &lost, cm_req_done, &acc),
		     STATUS_PENDING);
	CHECK_STATUS(cm_req_wait(&acc, 5000), STATUS_SUCCESS);

	peer_recv(p, &ch, 1); /* the client wants the peer gone */
	SH("nft add table inet dead");
	SH("nft add chain inet dead in '{ type filter hook input priority 0; "
	   "policy drop; }'");
	SH("nft add chain inet dead out '{ type filter hook output priority "
	   "0; policy drop; }'");
	t0 = tu_now_ms();
	peer_send(p, "D", 1);
	/* This side is idle: its keepalive finds the client gone too. */
	expect_lost(&lost, t0, "server");
	/* No flush because of the event; NdkDisconnect flushes. */
	CHECK_STATUS(c->Dispatch->NdkDisconnect(c, NULL, NULL), STATUS_SUCCESS);
	{
		NDK_RESULT res[RECVS];
		unsigned int n = 0;
		ULONG got;

		/* Receives that completed before the drop count as done. */
		while ((got = h.cq->Dispatch->NdkGetCqResults(h.cq, res,
							      RECVS)) > 0)
			n += got;
		reap_all(h.cq, n, n);
		CHECK(n == RECVS);
	}
	peer_recv(p, &ch, 1); /* the client is done */
	cm_close_connector(c);
	cm_close_qp(qp);
	mr->Dispatch->NdkCloseMr(&mr->Header, NULL, NULL);
	cm_listener_close(&l);
	host_close(&h);
	free(buf);
	return 0;
}

static int dead_client(struct peer *p)
{
	struct cm_host h;
	struct cm_req conn;
	struct lost lost = { 0 };
	NDK_RESULT res[16];
	NDK_CONNECTOR *c;
	NDK_QP *qp;
	NDK_MR *mr;
	uint8_t *buf = calloc(1, MSG_LEN);
	unsigned int posted = 0, done = 0;
	uint64_t t0;
	uint16_t port;
	UINT32 tok;
	char ch;

	CHECK(buf != NULL);
	client_link(p);
	peer_recv(p, &port, sizeof(port));
	setenv("NDK_PEER_TIMEOUT_MS", PEER_TIMEOUT_MS, 1);
	ns_host_open(&h, IF_A);
	qp = big_qp(&h);
	mr = reg_range(h.pd, buf, MSG_LEN, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
	tok = mr->Dispatch->NdkGetLocalTokenFromMr(mr);
	c = cm_connector(&h);
	CHECK_STATUS(connect4(c, qp, ADDR_A, ADDR_B, port, NULL, 0, &conn),
		     STATUS_PENDING);
	CHECK_STATUS(cm_req_wait(&conn, 5000), STATUS_SUCCESS);
	CHECK_STATUS(c->Dispatch->NdkCompleteConnectEx(c, on_lost, &lost, NULL,
						       NULL),
		     STATUS_SUCCESS);
	if (traffic == SENDING) {
		/* Data flows before the peer vanishes. */
		while (done < 8) {
			if (posted - done < 4) {
				post_send(qp, posted, buf, MSG_LEN, tok, 0);
				posted++;
			}
			done += h.cq->Dispatch->NdkGetCqResults(h.cq, res, 16);
		}
	}
	peer_send(p, "G", 1);
	peer_recv(p, &ch, 1); /* every packet is dropped from here on */
	t0 = tu_now_ms();
	if (traffic == SENDING) {
		/* Fill the send queue; the server's receives run out or
		 * the network holds the rest. */
		while (posted < 200 && !lost_seen(&lost)) {
			NDK_SGE s = sge(buf, MSG_LEN, tok);

			if (qp->Dispatch->NdkSend(qp, (PVOID)(uintptr_t)posted,
						  &s, 1, 0) == STATUS_SUCCESS)
				posted++;
			else
				break;
			done += h.cq->Dispatch->NdkGetCqResults(h.cq, res, 16);
		}
		fprintf(stderr, "# %u Sends posted, %u complete at the drop\n",
			posted, done);
	}
	expect_lost(&lost, t0, "client");
	if (traffic == SENDING) {
		/* Every Send still outstanding completes once, flushed. */
		qp->Dispatch->NdkFlush(qp);
		reap_all(h.cq, done, posted);
	} else {
		/* Idle: a receive posted now is flushed by the disconnect. */
		post_recv(qp, 1, buf, MSG_LEN, tok);
		CHECK_STATUS(c->Dispatch->NdkDisconnect(c, NULL, NULL),
			     STATUS_SUCCESS);
		reap_all(h.cq, 0, 1);
	}
	peer_send(p, "E", 1);
	cm_close_connector(c);
	cm_close_qp(qp);
	mr->Dispatch->NdkCloseMr(&mr->Header, NULL, NULL);
	host_close(&h);
	free(buf);
	return 0;
}

static void test_dead_peer_idle(void **state)
{
	traffic = IDLE;
	run_pair(dead_server, dead_client);
}

static void test_dead_peer_sending(void **state)
{
	traffic = SENDING;
	run_pair(dead_server, dead_client);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dead_peer_idle),
		cmocka_unit_test(test_dead_peer_sending),
	};

	return cmocka_run_group_tests_name("dead_peer", tests, NULL, NULL);
}
