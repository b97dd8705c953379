/* SPDX-License-Identifier: MIT */
/*
 * The receive gate (docs/performance.md, "The receive gate"): after a read
 * in the middle of a large payload found the socket empty, a busy-polling
 * consumer's polls leave the socket alone for NDK_RX_GATE_NS. Seen through
 * the public API the gate may only delay: with it off, at its default and
 * at its longest, payloads that stop in the middle (the tail hold keeps a
 * Write's last bytes until the next post) and a stream of large Sends,
 * Writes and Reads arrive whole, in order, each request completing once,
 * to a receiver that only busy-polls.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "dp_pair.h"
#include "testutil.h"

/* Over loopback's MSS (65,483 bytes): each Write's last bytes can wait
 * for the next post. */
#define BIG 70000

/* ns: NDK_RX_GATE_NS for the pair's adapters; NULL: the default. */
static int setup_gate(const char *ns)
{
	if (ns)
		setenv("NDK_RX_GATE_NS", ns, 1);
	else
		unsetenv("NDK_RX_GATE_NS");
	dp_open(8 << 20);
	dp_connect();
	return 0;
}

static int setup_off(void **state)
{
	(void)state;
	return setup_gate("0");
}

static int setup_default(void **state)
{
	(void)state;
	return setup_gate(NULL);
}

/* The longest gate NDK_RX_GATE_NS allows: 1 ms. */
static int setup_longest(void **state)
{
	(void)state;
	return setup_gate("1000000");
}

static int teardown(void **state)
{
	unsetenv("NDK_RX_GATE_NS");
	return dp_teardown(state);
}

/*
 * Writes of BIG bytes posted back to back, with a Send behind each pair:
 * P busy-polls for the Sends, so it reads the Writes' payloads in place
 * as they come, including the last bytes the tail hold kept for the next
 * post. Every Send arrives, after its Writes were placed.
 */
static void test_gate_paused_payloads(void **state)
{
	enum { ROUNDS = 16 };
	NDK_RESULT_EX res[4];
	unsigned int r;

	(void)state;
	fill(A.buf, 2 * BIG + 64, 11);
	for (r = 0; r < ROUNDS; r++) {
		NDK_SGE w0 = sge(A.buf, BIG, A.ltok);
		NDK_SGE w1 = sge(A.buf + BIG, BIG, A.ltok);
		uint8_t *dst = P.buf + (size_t)(r % 4) * (2 * BIG + 64);

		post_recv(P.qp, r, P.buf + (6 << 20), 64, P.ltok);
		assert_int_equal(A.qp->Dispatch->NdkWrite(
					 A.qp, (PVOID)(uintptr_t)(3 * r), &w0,
					 1, (UINT64)(uintptr_t)dst, P.rtok, 0),
				 STATUS_SUCCESS);
		assert_int_equal(A.qp->Dispatch->NdkWrite(
					 A.qp, (PVOID)(uintptr_t)(3 * r + 1),
					 &w1, 1, (UINT64)(uintptr_t)(dst + BIG),
					 P.rtok, 0),
				 STATUS_SUCCESS);
		post_send(A.qp, 3 * r + 2, A.buf + 2 * BIG, 64, A.ltok, 0);
		/* Only the receiver polls until its Send is in. */
		assert_int_equal(poll_cq(srv.cq, res, 1), 1);
		expect_received(&res[0], r, P.buf + (6 << 20), A.buf + 2 * BIG,
				64);
		assert_memory_equal(dst, A.buf, 2 * BIG);
		assert_int_equal(poll_cq(cli.cq, res, 3), 3);
		expect_result(&res[0], 3 * r, NdkOperationTypeWrite,
			      STATUS_SUCCESS);
		expect_result(&res[1], 3 * r + 1, NdkOperationTypeWrite,
			      STATUS_SUCCESS);
		expect_result(&res[2], 3 * r + 2, NdkOperationTypeSend,
			      STATUS_SUCCESS);
	}
	assert_cq_quiet(cli.cq);
	assert_cq_quiet(srv.cq);
}

#define STREAM_N    240
#define STREAM_SLOT 200000 /* bytes per request's slot */
#define STREAM_WIN  8 /* requests in flight, and receives posted */

/* Request i: a Send (i % 3 == 0), a Write (1) or a Read (2), of a size
 * around and above the segment. */
static size_t stream_len(unsigned int i)
{
	static const size_t sizes[] = { 65536,	70000, 131072, 4096,
					199999, 65484, 8192 };

	return sizes[i % (sizeof(sizes) / sizeof(sizes[0]))];
}

static void stream_post(unsigned int i)
{
	size_t off = (size_t)(i % STREAM_WIN) * STREAM_SLOT;
	NDK_SGE s = sge(A.buf + off, stream_len(i), A.ltok);

	switch (i % 3) {
	case 0:
		assert_int_equal(A.qp->Dispatch->NdkSend(
					 A.qp, (PVOID)(uintptr_t)i, &s, 1, 0),
				 STATUS_SUCCESS);
		break;
	case 1:
		assert_int_equal(A.qp->Dispatch->NdkWrite(
					 A.qp, (PVOID)(uintptr_t)i, &s, 1,
					 (UINT64)(uintptr_t)(P.buf + off),
					 P.rtok, 0),
				 STATUS_SUCCESS);
		break;
	default:
		/* Reads land in A's second half, from P's first. */
		s.VirtualAddress = A.buf + (4 << 20) + off;
		assert_int_equal(A.qp->Dispatch->NdkRead(
					 A.qp, (PVOID)(uintptr_t)i, &s, 1,
					 (UINT64)(uintptr_t)(P.buf + off),
					 P.rtok, 0),
				 STATUS_SUCCESS);
		break;
	}
}

static NDK_OPERATION_TYPE stream_type(unsigned int i)
{
	static const NDK_OPERATION_TYPE t[] = { NdkOperationTypeSend,
						NdkOperationTypeWrite,
						NdkOperationTypeRead };

	return t[i % 3];
}

/*
 * A window of large Sends, Writes and Reads, reposted as they complete,
 * with both consumers busy-polling: every request completes once, in
 * order; every Send arrives whole with the bytes it was posted with, and
 * every Read brings the bytes P's range holds.
 */
static void test_gate_stream(void **state)
{
	static uint8_t want[STREAM_SLOT];
	unsigned int posted = 0, done = 0, recvd = 0, i;
	NDK_RESULT_EX res[16];

	(void)state;
	/* P's slots are what the Reads read and the Writes write: the same
	 * bytes as A's, so each Read finds them whatever Writes ran. */
	fill(A.buf, (size_t)STREAM_WIN * STREAM_SLOT, 12);
	memcpy(P.buf, A.buf, (size_t)STREAM_WIN * STREAM_SLOT);
	for (i = 0; i < STREAM_WIN; i++)
		post_recv(P.qp, i, P.buf + (4 << 20) + i * STREAM_SLOT,
			  STREAM_SLOT, P.ltok);
	while (done < STREAM_N) {
		ULONG n, k;

		/* A Send only once a receive waits for it. */
		while (posted < STREAM_N && posted - done < STREAM_WIN &&
		       posted / 3 < recvd + STREAM_WIN)
			stream_post(posted++);
		n = cli.cq->Dispatch->NdkGetCqResultsEx(cli.cq, res, 16);
		for (k = 0; k < n; k++, done++) {
			size_t off = (size_t)(done % STREAM_WIN) * STREAM_SLOT;

			expect_result(&res[k], done, stream_type(done),
				      STATUS_SUCCESS);
			if (done % 3 == 2)
				assert_memory_equal(A.buf + (4 << 20) + off,
						    A.buf + off,
						    stream_len(done));
		}
		n = srv.cq->Dispatch->NdkGetCqResultsEx(srv.cq, res, 16);
		for (k = 0; k < n; k++, recvd++) {
			unsigned int s = recvd * 3;
			size_t off = (size_t)(s % STREAM_WIN) * STREAM_SLOT;
			uint8_t *dst = P.buf + (4 << 20) +
				       (recvd % STREAM_WIN) * STREAM_SLOT;

			memcpy(want, A.buf + off, stream_len(s));
			expect_received(&res[k], recvd, dst, want,
					stream_len(s));
			post_recv(P.qp, recvd + STREAM_WIN, dst, STREAM_SLOT,
				  P.ltok);
		}
	}
	while (recvd < STREAM_N / 3) {
		unsigned int s = recvd * 3;
		size_t off = (size_t)(s % STREAM_WIN) * STREAM_SLOT;
		uint8_t *dst =
			P.buf + (4 << 20) + (recvd % STREAM_WIN) * STREAM_SLOT;

		poll_one_ok(srv.cq, &res[0], NdkOperationTypeReceive);
		memcpy(want, A.buf + off, stream_len(s));
		expect_received(&res[0], recvd, dst, want, stream_len(s));
		recvd++;
	}
	assert_cq_quiet(cli.cq);
	/* The receives posted past the stream's Sends wait, unused. */
	assert_cq_quiet(srv.cq);
	placed_by_send();
	for (i = STREAM_N - STREAM_WIN; i < STREAM_N; i++) {
		size_t off = (size_t)(i % STREAM_WIN) * STREAM_SLOT;

		if (i % 3 == 1)
			assert_memory_equal(P.buf + off, A.buf + off,
					    stream_len(i));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_gate_paused_payloads,
						setup_off, teardown),
		cmocka_unit_test_setup_teardown(test_gate_paused_payloads,
						setup_default, teardown),
		cmocka_unit_test_setup_teardown(test_gate_paused_payloads,
						setup_longest, teardown),
		cmocka_unit_test_setup_teardown(test_gate_stream, setup_off,
						teardown),
		cmocka_unit_test_setup_teardown(test_gate_stream, setup_default,
						teardown),
		cmocka_unit_test_setup_teardown(test_gate_stream, setup_longest,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
