/* SPDX-License-Identifier: MIT */
/*
 * The tail hold (docs/design.md, "The tail hold"): while a consumer
 * streams requests, the software provider writes each batch in whole TCP
 * segments and keeps the bytes past the last one for the next post. Seen
 * through the public API, nothing may wait for long: a consumer that
 * posts back to back and then only watches memory sees its last Write
 * placed, one that arms its CQ is notified, a flush completes each
 * request once, and a long stream of Sends and Writes of every size
 * around the segment arrives whole, in order, each request completing
 * once.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include "dp_pair.h"
#include "testutil.h"

/* Larger than loopback's MSS (65,483 bytes), so each post can hold. */
#define BIG 70000

static int setup(void **state)
{
	(void)state;
	dp_open(8 << 20);
	dp_connect();
	return 0;
}

static void post_write(uintptr_t ctx, size_t off, size_t len)
{
	NDK_SGE s = sge(A.buf + off, len, A.ltok);

	assert_int_equal(A.qp->Dispatch->NdkWrite(
				 A.qp, (PVOID)ctx, &s, 1,
				 (UINT64)(uintptr_t)(P.buf + off), P.rtok, 0),
			 STATUS_SUCCESS);
}

/* Watches memory the provider writes from its own thread, as an RDMA
 * consumer spinning on a buffer does: no synchronisation to tell TSan of. */
__attribute__((no_sanitize_thread)) static bool byte_is(void *arg)
{
	return *(volatile uint8_t *)arg == 0x5a;
}

/* The last byte of Write i (of BIG bytes at i * BIG) is 0x5a. */
static void mark_ends(int n)
{
	int i;

	for (i = 0; i < n; i++)
		A.buf[(size_t)(i + 1) * BIG - 1] = 0x5a;
}

/*
 * A consumer that busy-polls, posts Writes back to back and then only
 * watches the peer's memory (never polling or arming): the last byte of
 * the last Write is placed. Nothing but the provider's own timer can
 * send a tail held at the last post.
 */
static void test_hold_ends_without_the_consumer(void **state)
{
	enum { N = 4 };
	NDK_RESULT_EX res[N];
	int i;

	(void)state;
	fill(A.buf, (size_t)N * BIG, 7);
	mark_ends(N);
	P.buf[(size_t)N * BIG - 1] = 0;
	/* Busy-poll first, as a streaming consumer does. */
	for (i = 0; i < 200; i++)
		cli.cq->Dispatch->NdkGetCqResultsEx(cli.cq, res, N);
	for (i = 0; i < N; i++)
		post_write((uintptr_t)i, (size_t)i * BIG, BIG);
	assert_true(
		tu_wait_until(byte_is, &P.buf[(size_t)N * BIG - 1], WAIT_MS));
	assert_int_equal(poll_cq(cli.cq, res, N), N);
	for (i = 0; i < N; i++)
		expect_result(&res[i], (uintptr_t)i, NdkOperationTypeWrite,
			      STATUS_SUCCESS);
	placed_by_send();
	assert_memory_equal(P.buf, A.buf, (size_t)N * BIG);
}

static bool notified_since(void *arg)
{
	return atomic_load(&cm_cq_notifications) > *(int *)arg;
}

/*
 * Writes posted back to back, then NdkArmCq and a wait for the
 * notification, as an event-driven consumer does: every Write completes
 * without another poll first.
 */
static void test_hold_ends_at_arm(void **state)
{
	enum { N = 6 };
	NDK_RESULT_EX res[N];
	ULONG got = 0;
	int before, i;

	(void)state;
	fill(A.buf, (size_t)N * BIG, 8);
	for (i = 0; i < N; i++)
		post_write((uintptr_t)i, (size_t)i * BIG, BIG);
	while (got < N) {
		before = atomic_load(&cm_cq_notifications);
		cli.cq->Dispatch->NdkArmCq(cli.cq, NDK_CQ_NOTIFY_ANY);
		got += cli.cq->Dispatch->NdkGetCqResultsEx(cli.cq, res + got,
							   N - got);
		if (got < N)
			assert_true(tu_wait_until(notified_since, &before,
						  WAIT_MS));
		got += cli.cq->Dispatch->NdkGetCqResultsEx(cli.cq, res + got,
							   N - got);
	}
	for (i = 0; i < N; i++)
		expect_result(&res[i], (uintptr_t)i, NdkOperationTypeWrite,
			      STATUS_SUCCESS);
	placed_by_send();
	assert_memory_equal(P.buf, A.buf, (size_t)N * BIG);
}

/*
 * Writes posted back to back, then NdkFlush: each completes exactly
 * once, in order, as sent or cancelled, and nothing more comes.
 */
static void test_hold_flush(void **state)
{
	enum { N = 8 };
	NDK_RESULT_EX res[N];
	int i;

	(void)state;
	for (i = 0; i < N; i++)
		post_write((uintptr_t)i, (size_t)i * BIG, BIG);
	A.qp->Dispatch->NdkFlush(A.qp);
	assert_int_equal(poll_cq(cli.cq, res, N), N);
	for (i = 0; i < N; i++) {
		assert_ptr_equal(res[i].RequestContext, (PVOID)(uintptr_t)i);
		assert_int_equal(res[i].Type, NdkOperationTypeWrite);
		if (res[i].Status != STATUS_SUCCESS)
			assert_int_equal(res[i].Status, STATUS_CANCELLED);
	}
	assert_cq_quiet(cli.cq);
}

/* Request i of the stream: its size, around one and two segments and
 * far below, and whether it is a Send (else a Write). */
static size_t stream_len(unsigned int i)
{
	static const size_t sizes[] = { 65483,	70000, 1,     65536,  4096,
					131072, 65484, 700,   200000, 0,
					65482,	32741, 98224, 16,     90000 };

	return sizes[i % (sizeof(sizes) / sizeof(sizes[0]))];
}

#define STREAM_N    600
#define STREAM_SLOT 200000 /* bytes per request's slot */
#define STREAM_SEND 5 /* every fifth request is a Send */
#define STREAM_WIN  16 /* requests in flight */

static void stream_post(unsigned int i)
{
	size_t off = (size_t)(i % STREAM_WIN) * STREAM_SLOT;
	NDK_SGE s = sge(A.buf + off, stream_len(i), A.ltok);
	ULONG n = stream_len(i) ? 1 : 0;

	if (i % STREAM_SEND == 0)
		assert_int_equal(A.qp->Dispatch->NdkSend(
					 A.qp, (PVOID)(uintptr_t)i, &s, n, 0),
				 STATUS_SUCCESS);
	else
		assert_int_equal(A.qp->Dispatch->NdkWrite(
					 A.qp, (PVOID)(uintptr_t)i, &s, n,
					 (UINT64)(uintptr_t)(P.buf + off),
					 P.rtok, 0),
				 STATUS_SUCCESS);
}

/*
 * A window of Sends and Writes of sizes around the segment, reposted as
 * they complete, as a bandwidth test does (its CQ is seldom empty, so
 * the posts hold): every request completes once, in order, and every
 * Send arrives whole and in order with the bytes it had when posted.
 */
static void test_hold_stream(void **state)
{
	static uint8_t want[STREAM_SLOT];
	unsigned int posted = 0, done = 0, recvd = 0, i;
	NDK_RESULT_EX res[16];

	(void)state;
	/* Each slot's bytes are fixed before the stream: a Send's receive
	 * checks them, and a repost of the slot sends the same bytes. */
	fill(A.buf, (size_t)STREAM_WIN * STREAM_SLOT, 9);
	for (i = 0; i < 8 * STREAM_SEND; i += STREAM_SEND)
		post_recv(P.qp, i,
			  P.buf + (4 << 20) +
				  (i / STREAM_SEND % 8) * STREAM_SLOT,
			  STREAM_SLOT, P.ltok);
	while (done < STREAM_N) {
		ULONG n, k;

		while (posted < STREAM_N && posted - done < STREAM_WIN &&
		       /* A Send only once its receive is posted. */
		       posted < (recvd + 8) * STREAM_SEND)
			stream_post(posted++);
		n = cli.cq->Dispatch->NdkGetCqResultsEx(cli.cq, res, 16);
		for (k = 0; k < n; k++, done++)
			expect_result(&res[k], done,
				      done % STREAM_SEND ? NdkOperationTypeWrite
							 : NdkOperationTypeSend,
				      STATUS_SUCCESS);
		n = srv.cq->Dispatch->NdkGetCqResultsEx(srv.cq, res, 16);
		for (k = 0; k < n; k++, recvd++) {
			unsigned int s = recvd * STREAM_SEND;
			size_t off = (size_t)(s % STREAM_WIN) * STREAM_SLOT;

			memcpy(want, A.buf + off, stream_len(s));
			expect_received(&res[k], s,
					P.buf + (4 << 20) +
						(recvd % 8) * STREAM_SLOT,
					want, stream_len(s));
			if (s + 8 * STREAM_SEND < STREAM_N) {
				unsigned int r = s + 8 * STREAM_SEND;

				post_recv(P.qp, r,
					  P.buf + (4 << 20) +
						  (recvd % 8) * STREAM_SLOT,
					  STREAM_SLOT, P.ltok);
			}
		}
	}
	while (recvd < STREAM_N / STREAM_SEND) {
		unsigned int s = recvd * STREAM_SEND;
		size_t off = (size_t)(s % STREAM_WIN) * STREAM_SLOT;

		poll_one_ok(srv.cq, &res[0], NdkOperationTypeReceive);
		memcpy(want, A.buf + off, stream_len(s));
		expect_received(&res[0], s,
				P.buf + (4 << 20) + (recvd % 8) * STREAM_SLOT,
				want, stream_len(s));
		recvd++;
	}
	assert_cq_quiet(cli.cq);
	assert_cq_quiet(srv.cq);
	/* The Writes of the last round of slots, placed. */
	placed_by_send();
	for (i = STREAM_N - STREAM_WIN; i < STREAM_N; i++) {
		size_t off = (size_t)(i % STREAM_WIN) * STREAM_SLOT;

		if (i % STREAM_SEND)
			assert_memory_equal(P.buf + off, A.buf + off,
					    stream_len(i));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_hold_ends_without_the_consumer, setup,
			dp_teardown),
		cmocka_unit_test_setup_teardown(test_hold_ends_at_arm, setup,
						dp_teardown),
		cmocka_unit_test_setup_teardown(test_hold_flush, setup,
						dp_teardown),
		cmocka_unit_test_setup_teardown(test_hold_stream, setup,
						dp_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
