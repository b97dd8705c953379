/* SPDX-License-Identifier: MIT */
/*
 * Small requests on the wire: a Send or Write of up to 512 bytes with
 * nothing queued before it is copied into one FPDU and written with one
 * send (docs/design.md, "Small requests"). Against a raw server that
 * stops reading, small and larger requests fill the socket, some of them
 * only half written; once the server reads, every FPDU arrives whole and
 * in posting order (headers, MSNs, payloads, CRCs), and every request
 * completes once, in order, with success.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>
#include "rawpeer_dp.h"
#include "testutil.h"

#define REQS	   40000
#define SIZE_MAX_  600 /* sizes cycle through 1..SIZE_MAX_ */
#define WRITE_EACH 7 /* every 7th request is a Write */
#define WRITE_TO   0x10000
#define WRITE_STAG 0x4455

static size_t req_size(unsigned int i)
{
	/* Around the 512-byte line, and small ones. */
	static const size_t sizes[] = { 1, 8, 511, 512, 513, 3, 600, 64, 0 };

	return sizes[i % (sizeof(sizes) / sizeof(sizes[0]))];
}

static void post_req(unsigned int i)
{
	size_t n = req_size(i);
	NDK_SGE s = sge(A.buf + i, n, A.ltok);

	if (i % WRITE_EACH == 0)
		assert_int_equal(
			A.qp->Dispatch->NdkWrite(A.qp, (PVOID)(uintptr_t)i, &s,
						 n ? 1 : 0, WRITE_TO + i,
						 WRITE_STAG, 0),
			STATUS_SUCCESS);
	else
		assert_int_equal(A.qp->Dispatch->NdkSend(A.qp,
							 (PVOID)(uintptr_t)i,
							 &s, n ? 1 : 0, 0),
				 STATUS_SUCCESS);
}

/* Completions so far, checked in order from *next. */
static void reap(unsigned int *next, bool wait)
{
	NDK_RESULT_EX res[16];
	ULONG n, k;

	do {
		n = wait ? poll_cq(cli.cq, res, 1)
			 : cli.cq->Dispatch->NdkGetCqResultsEx(cli.cq, res, 16);
		for (k = 0; k < n; k++, (*next)++)
			expect_result(&res[k], *next,
				      *next % WRITE_EACH == 0
					      ? NdkOperationTypeWrite
					      : NdkOperationTypeSend,
				      STATUS_SUCCESS);
	} while (n && !wait);
}

static void test_small_requests_fill_the_socket(void **state)
{
	struct dp_raw_server r;
	unsigned int i, posted = 0, done = 0, sends = 0;
	uint8_t u[1024];

	(void)state;
	fill(A.buf, REQS + SIZE_MAX_, 3);
	dp_raw_server_connect(&r, 4096);
	/* Post until the socket holds some back, then a few more. */
	while (posted < REQS && (posted - done < 64)) {
		post_req(posted++);
		reap(&done, false);
	}
	assert_true(posted - done >= 64); /* the socket did fill */
	for (i = 0; i < 16 && posted < REQS; i++)
		post_req(posted++);

	/* The server reads: every FPDU whole, in order. */
	for (i = 0; i < posted; i++) {
		size_t n = req_size(i), ulen;

		ulen = raw_read_fpdu(r.fd, u, sizeof(u), WAIT_MS);
		if (i % WRITE_EACH == 0) {
			assert_int_equal(ulen, 14 + n);
			assert_int_equal(u[0], 0xc1); /* tagged, L */
			assert_int_equal(u[1], 0x40); /* Write */
			assert_int_equal(get_be32(u + 2), WRITE_STAG);
			assert_int_equal(get_be64(u + 6), WRITE_TO + i);
			assert_memory_equal(u + 14, A.buf + i, n);
		} else {
			assert_int_equal(ulen, 18 + n);
			assert_int_equal(u[0], 0x41); /* untagged, L */
			assert_int_equal(u[1], 0x43); /* Send */
			assert_int_equal(get_be32(u + 6), 0); /* QN */
			assert_int_equal(get_be32(u + 10), ++sends); /* MSN */
			assert_int_equal(get_be32(u + 14), 0); /* MO */
			assert_memory_equal(u + 18, A.buf + i, n);
		}
		reap(&done, false);
	}
	while (done < posted)
		reap(&done, true);
	assert_cq_quiet(cli.cq);
	dp_raw_server_close(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_small_requests_fill_the_socket, dp_setup_hosts,
			dp_teardown),
	};

	/* The software provider's own wire, against a raw peer. */
	cm_software_only();
	dp_set_env();
	return cmocka_run_group_tests_name("dp_small_tx", tests, NULL, NULL);
}
