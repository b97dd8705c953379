/* SPDX-License-Identifier: MIT */
/*
 * A consumer thread that busy-polls a CQ and is cancelled (pthread_cancel,
 * deferred) leaves the QP working: NdkGetCqResults is no cancellation
 * point, so the thread ends at its own pthread_testcancel between calls,
 * never inside the receive, where it would keep the QP's receive lock
 * for ever. After each cancelled poller, a Send from the peer must still
 * arrive.
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

#define ROUNDS 20

static atomic_int polls;

/* Polls srv's CQ (P's receives) until cancelled. */
static void *poller(void *arg)
{
	NDK_RESULT_EX res[4];

	(void)arg;
	for (;;) {
		srv.cq->Dispatch->NdkGetCqResultsEx(srv.cq, res, 4);
		atomic_fetch_add(&polls, 1);
		pthread_testcancel();
	}
	return NULL;
}

static void test_cancelled_poller(void **state)
{
	NDK_RESULT_EX res;
	int i;

	(void)state;
	for (i = 0; i < ROUNDS; i++) {
		pthread_t t;
		void *ret;

		atomic_store(&polls, 0);
		assert_int_equal(pthread_create(&t, NULL, poller, NULL), 0);
		/* Long enough to be polling, mostly inside its recv(). */
		while (atomic_load(&polls) < 1000)
			usleep(100);
		assert_int_equal(pthread_cancel(t), 0);
		assert_int_equal(pthread_join(t, &ret), 0);
		assert_ptr_equal(ret, PTHREAD_CANCELED);

		post_recv(P.qp, 100 + (uintptr_t)i, P.buf, 64, P.ltok);
		fill(A.buf, 64, (unsigned int)i);
		post_send(A.qp, (uintptr_t)i, A.buf, 64, A.ltok, 0);
		poll_one_ok(cli.cq, &res, NdkOperationTypeSend);
		assert_int_equal(poll_cq(srv.cq, &res, 1), 1);
		expect_received(&res, 100 + (uintptr_t)i, P.buf, A.buf, 64);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_cancelled_poller, dp_setup,
						dp_teardown),
	};

	cm_software_only();
	dp_set_env();
	return cmocka_run_group_tests_name("dp_cancel", tests, NULL, NULL);
}
