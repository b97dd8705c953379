/* SPDX-License-Identifier: MIT */
/*
 * Direct placement: large payloads are received straight into their
 * destination (a receive's SGEs, an STag range, a Read's SGEs), small ones
 * through the receiving thread's buffer. Through the public API: every
 * byte lands where it should and nowhere else, whatever the mix of sizes,
 * the number of SGEs, or the layout of a fast-registered page list.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "dp_pair.h"
#include "testutil.h"

static int setup(void **state)
{
	dp_open(16 << 20);
	dp_connect();
	return 0;
}

/*
 * Large and small Sends back to back, in every order: a read sized for
 * the last FPDU (a short header read after a large one, a buffer of many
 * small ones) never swallows or splits the next message wrongly.
 */
static void test_mixed_sizes_in_order(void **state)
{
	static const size_t sizes[] = { 70000, 8,    100000,  1, 4096,
					4095,  4097, 300000,  0, 65536,
					12,    5000, 1 << 20, 3, 200000 };
	enum { N = sizeof(sizes) / sizeof(sizes[0]) };
	size_t off[N], total = 0;
	NDK_RESULT_EX res[N];
	int i;

	for (i = 0; i < N; i++) {
		off[i] = total;
		total += (sizes[i] + 64 + 63) & ~(size_t)63;
	}
	assert_true(total <= P.len && total <= A.len);
	fill(A.buf, total, 3);
	memset(P.buf, 0x5a, total);
	for (i = 0; i < N; i++)
		post_recv(P.qp, (uintptr_t)i, P.buf + off[i], sizes[i] + 32,
			  P.ltok);
	for (i = 0; i < N; i++)
		post_send(A.qp, (uintptr_t)i, A.buf + off[i], sizes[i], A.ltok,
			  0);
	assert_int_equal(poll_cq(srv.cq, res, N), N);
	for (i = 0; i < N; i++) {
		assert_int_equal(res[i].Status, STATUS_SUCCESS);
		assert_ptr_equal(res[i].RequestContext, (PVOID)(intptr_t)i);
		assert_int_equal(res[i].BytesTransferred, sizes[i]);
		assert_memory_equal(P.buf + off[i], A.buf + off[i], sizes[i]);
		/* Nothing past the message, inside or after the receive. */
		assert_all(P.buf + off[i] + sizes[i], 32, 0x5a, "past a Send");
	}
	assert_int_equal(poll_cq(cli.cq, res, N), N);
}

/* One large Send scattered over SGEs of odd sizes, with gaps between. */
static void test_send_over_sges(void **state)
{
	enum { NSGE = 4, PIECE = 50001, GAP = 13 };
	NDK_SGE rs[NSGE];
	NDK_RESULT_EX res[1];
	size_t n = (size_t)NSGE * PIECE;
	int i;

	fill(A.buf, n, 11);
	memset(P.buf, 0x77, (size_t)NSGE * (PIECE + GAP));
	for (i = 0; i < NSGE; i++)
		rs[i] = sge(P.buf + (size_t)i * (PIECE + GAP), PIECE, P.ltok);
	assert_int_equal(P.qp->Dispatch->NdkReceive(P.qp, (PVOID)1, rs, NSGE),
			 STATUS_SUCCESS);
	post_send(A.qp, 2, A.buf, n, A.ltok, 0);
	poll_one_ok(srv.cq, res, NdkOperationTypeReceive);
	assert_int_equal(res[0].BytesTransferred, n);
	for (i = 0; i < NSGE; i++) {
		uint8_t *r = P.buf + (size_t)i * (PIECE + GAP);

		assert_memory_equal(r, A.buf + (size_t)i * PIECE, PIECE);
		assert_all(r + PIECE, GAP, 0x77, "between SGEs");
	}
	poll_one_ok(cli.cq, res, NdkOperationTypeSend);
}

/*
 * A Write into a fast-registered MR whose pages are in reverse order: the
 * tagged range is contiguous, the host memory is not, and each page's
 * bytes land on the page the list names. More pages than one direct read
 * has pieces for: the rest goes in a further read. The verbs provider
 * cannot map scattered pages (STATUS_NOT_SUPPORTED, docs/verbs.md, Fast
 * registration): there the pages go in order, at the host address on siw.
 */
static void test_write_to_scattered_pages(void **state)
{
	enum { PAGES = 40 };
	uint8_t *mem = P.buf + (8 << 20); /* page-aligned, registered */
	PMDL mdl = IoAllocateMdl(mem, PAGES * PAGE_SIZE, FALSE, FALSE, NULL);
	union {
		NDK_LOGICAL_ADDRESS_MAPPING lam;
		uint8_t raw[sizeof(NDK_LOGICAL_ADDRESS_MAPPING) +
			    PAGES * sizeof(NDK_LOGICAL_ADDRESS)];
	} u;
	NDK_LOGICAL_ADDRESS rev[PAGES];
	const NDK_LOGICAL_ADDRESS *pages;
	ULONG lam_size = sizeof(u), fbo = 0;
	NDK_SGE s = sge(A.buf, PAGES * PAGE_SIZE - 100, A.ltok);
	NDK_RESULT_EX res[1];
	NDK_MR *fr;
	UINT32 tok;
	uint64_t base = 0x200000;
	ULONG flags =
		NDK_OP_FLAG_ALLOW_REMOTE_WRITE | NDK_OP_FLAG_ALLOW_LOCAL_WRITE;
	bool reversed = true;
	NTSTATUS st;
	int i;

	cm_require(srv.info.FRMRPageCount > 0, "fast registration");
	fr = fr_mr_create(PAGES);
	assert_int_equal(srv.ad->Dispatch->NdkBuildLAM(
				 srv.ad, mdl, PAGES * PAGE_SIZE, NULL, NULL,
				 &u.lam, &lam_size, &fbo),
			 STATUS_SUCCESS);
	assert_int_equal(u.lam.AdapterPageCount, PAGES);
	/* The array is declared with one element (Microsoft's layout). */
	pages = (const NDK_LOGICAL_ADDRESS
			 *)(const void *)(u.raw +
					  offsetof(NDK_LOGICAL_ADDRESS_MAPPING,
						   AdapterPageArray));
	for (i = 0; i < PAGES; i++)
		rev[i] = pages[PAGES - 1 - i];
	st = P.qp->Dispatch->NdkFastRegister(P.qp, (PVOID)4, fr, PAGES, rev, 0,
					     PAGES * PAGE_SIZE,
					     (PVOID)(uintptr_t)base, flags);
	if (cm_provider_is(&srv, "verbs")) {
		assert_int_equal(st, STATUS_NOT_SUPPORTED);
		reversed = false;
		if (cm_device_is(&srv, "siw"))
			base = (uint64_t)(uintptr_t)mem;
		st = P.qp->Dispatch->NdkFastRegister(
			P.qp, (PVOID)4, fr, PAGES, pages, 0, PAGES * PAGE_SIZE,
			(PVOID)(uintptr_t)base, flags);
	}
	assert_int_equal(st, STATUS_SUCCESS);
	tok = fr->Dispatch->NdkGetRemoteTokenFromMr(fr);
	poll_one_ok(srv.cq, res, NdkOperationTypeFastRegister);

	fill(A.buf, PAGES * PAGE_SIZE, 29);
	memset(mem, 0, PAGES * PAGE_SIZE);
	/* From 100 bytes into tagged page 0 to the end of the range. */
	assert_int_equal(A.qp->Dispatch->NdkWrite(A.qp, NULL, &s, 1, base + 100,
						  tok,
						  NDK_OP_FLAG_SILENT_SUCCESS),
			 STATUS_SUCCESS);
	placed_by_send();
	for (i = 0; i < PAGES; i++) {
		const uint8_t *host =
			mem +
			(size_t)(reversed ? PAGES - 1 - i : i) * PAGE_SIZE;
		size_t skip = i ? 0 : 100;

		assert_all(host, skip, 0, "before the Write");
		assert_memory_equal(host + skip,
				    A.buf + (size_t)i * PAGE_SIZE + skip - 100,
				    PAGE_SIZE - skip);
	}
	srv.ad->Dispatch->NdkReleaseLAM(srv.ad, &u.lam);
	IoFreeMdl(mdl);
}

/* A large Read lands in its sink SGEs, with guard bytes untouched. */
static void test_read_into_sges(void **state)
{
	size_t n = 3 << 20;
	uint8_t *sink = A.buf + (4 << 20);
	NDK_SGE s = sge(sink + 8, n, A.ltok);
	NDK_RESULT_EX res[1];

	fill(P.buf, n, 41);
	memset(sink, 0x33, n + 16);
	assert_int_equal(A.qp->Dispatch->NdkRead(A.qp, (PVOID)7, &s, 1,
						 (UINT64)(uintptr_t)P.buf,
						 P.rtok, 0),
			 STATUS_SUCCESS);
	poll_one_ok(cli.cq, res, NdkOperationTypeRead);
	assert_int_equal(res[0].BytesTransferred, n);
	assert_memory_equal(sink + 8, P.buf, n);
	assert_all(sink, 8, 0x33, "before the sink");
	assert_all(sink + 8 + n, 8, 0x33, "after the sink");
}

/*
 * A Send and a Write gathered from SGEs of odd sizes, one of them empty,
 * larger than one FPDU even on lo: segment boundaries fall inside SGEs,
 * and each FPDU must go on where the one before ended.
 */
static void test_gather_over_fpdus(void **state)
{
	static const size_t len[] = { 70001, 0, 130003, 55555 };
	enum { NSGE = 4 };
	NDK_SGE ss[NSGE];
	NDK_RESULT_EX res[1];
	size_t n = 0, off = 0;
	uint8_t *dst = P.buf + (1 << 20);
	int i;

	for (i = 0; i < NSGE; i++)
		n += len[i];
	fill(A.buf, n + 4 * 4099, 17);
	/* Each SGE starts 4099 bytes past the last one's end. */
	for (i = 0; i < NSGE; i++) {
		ss[i] = sge(A.buf + off + (size_t)i * 4099, len[i], A.ltok);
		off += len[i];
	}
	memset(P.buf, 0x5a, 2 << 20);
	post_recv(P.qp, 1, P.buf, n + 64, P.ltok);
	assert_int_equal(A.qp->Dispatch->NdkSend(A.qp, (PVOID)2, ss, NSGE, 0),
			 STATUS_SUCCESS);
	poll_one_ok(srv.cq, res, NdkOperationTypeReceive);
	assert_int_equal(res[0].BytesTransferred, n);
	assert_int_equal(A.qp->Dispatch->NdkWrite(A.qp, (PVOID)3, ss, NSGE,
						  (UINT64)(uintptr_t)dst,
						  P.rtok, 0),
			 STATUS_SUCCESS);
	poll_one_ok(cli.cq, res, NdkOperationTypeSend);
	poll_one_ok(cli.cq, res, NdkOperationTypeWrite);
	placed_by_send();
	for (off = 0, i = 0; i < NSGE; off += len[i], i++) {
		const uint8_t *src = A.buf + off + (size_t)i * 4099;

		assert_memory_equal(P.buf + off, src, len[i]);
		assert_memory_equal(dst + off, src, len[i]);
	}
	assert_all(P.buf + n, 64, 0x5a, "past the Send");
	assert_all(dst + n, 64, 0x5a, "past the Write");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_mixed_sizes_in_order,
						setup, dp_teardown),
		cmocka_unit_test_setup_teardown(test_send_over_sges, setup,
						dp_teardown),
		cmocka_unit_test_setup_teardown(test_gather_over_fpdus, setup,
						dp_teardown),
		cmocka_unit_test_setup_teardown(test_write_to_scattered_pages,
						setup, dp_teardown),
		cmocka_unit_test_setup_teardown(test_read_into_sges, setup,
						dp_teardown),
	};

	return cmocka_run_group_tests_name("dp_placement", tests, NULL, NULL);
}
