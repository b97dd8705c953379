/* SPDX-License-Identifier: MIT */
/*
 * A QP closed while another thread busy-polls its CQ. A CQ with one QP
 * runs that QP's receive pass from an empty poll without the CQ's lock
 * and without a QP reference (test_cq proves the removal waits for a
 * pass already running). Here, through the public API, with Sends
 * arriving during the close: every receive posted completes exactly once
 * (placed or flushed), nothing else appears on the CQ, and the CQ serves
 * the next connection, round after round.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>
#include "dp_pair.h"
#include "testutil.h"

#define ROUNDS	 12
#define RECVS	 16
#define SENT	 8 /* Sends of A per round, the rest is flushed */
#define CTX_BASE 1000

static atomic_bool stop;
static atomic_int polls;
static atomic_int seen[RECVS]; /* completions per receive context */
static atomic_int bad; /* completions that were not P's receives */

/* Busy-polls srv's CQ (P's receives) until stop. */
static void *poller(void *arg)
{
	NDK_RESULT_EX res[4];
	ULONG i, n;

	(void)arg;
	while (!atomic_load(&stop)) {
		n = srv.cq->Dispatch->NdkGetCqResultsEx(srv.cq, res, 4);
		for (i = 0; i < n; i++) {
			uintptr_t ctx = (uintptr_t)res[i].RequestContext;

			if (res[i].Type != NdkOperationTypeReceive ||
			    ctx < CTX_BASE || ctx >= CTX_BASE + RECVS)
				atomic_fetch_add(&bad, 1);
			else
				atomic_fetch_add(&seen[ctx - CTX_BASE], 1);
		}
		atomic_fetch_add(&polls, 1);
	}
	return NULL;
}

static bool all_seen(void *arg)
{
	int i;

	(void)arg;
	for (i = 0; i < RECVS; i++)
		if (!atomic_load(&seen[i]))
			return false;
	return true;
}

static void test_close_while_polling(void **state)
{
	NDK_RESULT_EX res;
	int round, i;

	(void)state;
	for (round = 0; round < ROUNDS; round++) {
		pthread_t t;

		dp_connect();
		atomic_store(&stop, false);
		atomic_store(&polls, 0);
		for (i = 0; i < RECVS; i++) {
			atomic_store(&seen[i], 0);
			post_recv(P.qp, CTX_BASE + (uintptr_t)i, P.buf + i * 64,
				  64, P.ltok);
		}
		assert_int_equal(pthread_create(&t, NULL, poller, NULL), 0);
		while (atomic_load(&polls) < 200)
			usleep(50);
		for (i = 0; i < SENT; i++) {
			post_send(A.qp, (uintptr_t)i, A.buf, 64, A.ltok, 0);
			poll_one_ok(cli.cq, &res, NdkOperationTypeSend);
		}
		/* Half the rounds close while a Send may still be arriving;
		 * its own completion comes when it left. */
		if (round & 1) {
			post_send(A.qp, SENT, A.buf, 64, A.ltok, 0);
			assert_int_equal(poll_cq(cli.cq, &res, 1), 1);
			assert_int_equal((uintptr_t)res.RequestContext, SENT);
		}
		cm_close_qp(P.qp);
		cm_close_connector(P.conn);
		/* Every receive completes once: placed or flushed. */
		assert_true(tu_wait_until(all_seen, NULL, WAIT_MS));
		atomic_store(&stop, true);
		assert_int_equal(pthread_join(t, NULL), 0);
		for (i = 0; i < RECVS; i++)
			assert_int_equal(atomic_load(&seen[i]), 1);
		assert_int_equal(atomic_load(&bad), 0);
		cm_close_qp(A.qp);
		cm_close_connector(A.conn);
		/* A had nothing outstanding: its close completes nothing. */
		assert_int_equal(
			cli.cq->Dispatch->NdkGetCqResultsEx(cli.cq, &res, 1),
			0);
		P.qp = A.qp = NULL;
		P.conn = A.conn = NULL;
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_close_while_polling,
						dp_setup_hosts, dp_teardown),
	};

	cm_software_only();
	dp_set_env();
	return cmocka_run_group_tests_name("dp_close_polling", tests, NULL,
					   NULL);
}
