/* SPDX-License-Identifier: MIT */
/*
 * Direct placement: large payloads are received straight into their
 * destination (a receive's SGEs, an STag range, a Read's SGEs), small ones
 * through the receiving thread's buffer. Through the public API: every
 * byte lands where it should and nowhere else, whatever the mix of sizes,
 * the number of SGEs, or the layout of a fast-registered page list, and
 * every byte sent or read out of such a list comes from its page.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "dp_pair.h"
#include "testutil.h"

enum { SCATTER_PAGES = 40 };

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
 * A fast-registered MR over the server's memory at mem, its pages in
 * reverse order: the tagged range is contiguous, the host memory is not.
 * The verbs provider cannot map scattered pages (STATUS_NOT_SUPPORTED,
 * docs/verbs.md, Fast registration): there the pages go in order, at the
 * host address on siw.
 */
struct scattered {
	uint8_t *mem;
	NDK_MR *fr;
	UINT32 tok, ltok; /* remote and local token */
	uint64_t base;
	bool reversed;
	PMDL mdl;
	union {
		NDK_LOGICAL_ADDRESS_MAPPING lam;
		uint8_t raw[sizeof(NDK_LOGICAL_ADDRESS_MAPPING) +
			    SCATTER_PAGES * sizeof(NDK_LOGICAL_ADDRESS)];
	} u;
};

static void scattered_register(struct scattered *sc, ULONG flags)
{
	NDK_LOGICAL_ADDRESS rev[SCATTER_PAGES];
	const NDK_LOGICAL_ADDRESS *pages;
	ULONG lam_size = sizeof(sc->u), fbo = 0;
	NDK_RESULT_EX res[1];
	NTSTATUS st;
	int i;

	cm_require(srv.info.FRMRPageCount > 0, "fast registration");
	sc->mem = P.buf + (8 << 20); /* page-aligned, registered */
	sc->base = 0x200000;
	sc->reversed = true;
	sc->mdl = IoAllocateMdl(sc->mem, SCATTER_PAGES * PAGE_SIZE, FALSE,
				FALSE, NULL);
	sc->fr = fr_mr_create(SCATTER_PAGES);
	assert_int_equal(srv.ad->Dispatch->NdkBuildLAM(
				 srv.ad, sc->mdl, SCATTER_PAGES * PAGE_SIZE,
				 NULL, NULL, &sc->u.lam, &lam_size, &fbo),
			 STATUS_SUCCESS);
	assert_int_equal(sc->u.lam.AdapterPageCount, SCATTER_PAGES);
	/* The array is declared with one element (Microsoft's layout). */
	pages = (const NDK_LOGICAL_ADDRESS
			 *)(const void *)(sc->u.raw +
					  offsetof(NDK_LOGICAL_ADDRESS_MAPPING,
						   AdapterPageArray));
	for (i = 0; i < SCATTER_PAGES; i++)
		rev[i] = pages[SCATTER_PAGES - 1 - i];
	st = P.qp->Dispatch->NdkFastRegister(
		P.qp, (PVOID)4, sc->fr, SCATTER_PAGES, rev, 0,
		SCATTER_PAGES * PAGE_SIZE, (PVOID)(uintptr_t)sc->base, flags);
	if (cm_provider_is(&srv, "verbs")) {
		assert_int_equal(st, STATUS_NOT_SUPPORTED);
		sc->reversed = false;
		if (cm_device_is(&srv, "siw"))
			sc->base = (uint64_t)(uintptr_t)sc->mem;
		st = P.qp->Dispatch->NdkFastRegister(
			P.qp, (PVOID)4, sc->fr, SCATTER_PAGES, pages, 0,
			SCATTER_PAGES * PAGE_SIZE, (PVOID)(uintptr_t)sc->base,
			flags);
	}
	assert_int_equal(st, STATUS_SUCCESS);
	sc->tok = sc->fr->Dispatch->NdkGetRemoteTokenFromMr(sc->fr);
	sc->ltok = sc->fr->Dispatch->NdkGetLocalTokenFromMr(sc->fr);
	poll_one_ok(srv.cq, res, NdkOperationTypeFastRegister);
}

/* The host address of the byte at off into the tagged range. */
static uint8_t *scattered_host(const struct scattered *sc, size_t off)
{
	size_t pg = off / PAGE_SIZE;

	if (sc->reversed)
		pg = SCATTER_PAGES - 1 - pg;
	return sc->mem + pg * PAGE_SIZE + off % PAGE_SIZE;
}

/* The len bytes at got are those at off into the tagged range. */
static void assert_from_pages(const struct scattered *sc, const uint8_t *got,
			      size_t off, size_t len, const char *what)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (got[i] != *scattered_host(sc, off + i))
			fail_msg("%s: byte %zu of %zu differs", what, i, len);
}

static void scattered_release(struct scattered *sc)
{
	srv.ad->Dispatch->NdkReleaseLAM(srv.ad, &sc->u.lam);
	IoFreeMdl(sc->mdl);
}

/*
 * A Write into the scattered MR: each page's bytes land on the page the
 * list names. More pages than one direct read has pieces for: the rest
 * goes in a further read.
 */
static void test_write_to_scattered_pages(void **state)
{
	struct scattered sc;
	NDK_SGE s = sge(A.buf, SCATTER_PAGES * PAGE_SIZE - 100, A.ltok);
	size_t i;

	scattered_register(&sc, NDK_OP_FLAG_ALLOW_REMOTE_WRITE |
					NDK_OP_FLAG_ALLOW_LOCAL_WRITE);
	fill(A.buf, SCATTER_PAGES * PAGE_SIZE, 29);
	memset(sc.mem, 0, SCATTER_PAGES * PAGE_SIZE);
	/* From 100 bytes into tagged page 0 to the end of the range. */
	assert_int_equal(A.qp->Dispatch->NdkWrite(A.qp, NULL, &s, 1,
						  sc.base + 100, sc.tok,
						  NDK_OP_FLAG_SILENT_SUCCESS),
			 STATUS_SUCCESS);
	placed_by_send();
	for (i = 0; i < SCATTER_PAGES; i++) {
		const uint8_t *host = scattered_host(&sc, i * PAGE_SIZE);
		size_t skip = i ? 0 : 100;

		assert_all(host, skip, 0, "before the Write");
		assert_memory_equal(host + skip,
				    A.buf + i * PAGE_SIZE + skip - 100,
				    PAGE_SIZE - skip);
	}
	scattered_release(&sc);
}

/*
 * Out of the scattered MR, across page boundaries: Reads the peer makes
 * of it (small ones, whose Read Response is copied out under the STag
 * table's lock, and a large one) and a small Send the server gathers from
 * it with its token as a local one. Every byte comes from the page the
 * list names.
 */
static void test_read_from_scattered_pages(void **state)
{
	/* Offsets into the tagged range, lengths: each crosses a page. */
	static const struct {
		size_t off, len;
	} rd[] = {
		{ PAGE_SIZE - 1, 2 },
		{ PAGE_SIZE - 100, 200 },
		{ 3 * PAGE_SIZE - 5, 2 * PAGE_SIZE + 9 },
		{ 100, 20 * PAGE_SIZE },
	};
	struct scattered sc;
	uint8_t *sink = A.buf + (4 << 20);
	NDK_RESULT_EX res[1];
	NDK_SGE s;
	size_t i, k;
	char what[32];

	scattered_register(&sc, NDK_OP_FLAG_ALLOW_REMOTE_READ);
	for (i = 0; i < SCATTER_PAGES * PAGE_SIZE; i++)
		*scattered_host(&sc, i) = (uint8_t)(i * 7 + i / 251);
	for (k = 0; k < sizeof(rd) / sizeof(rd[0]); k++) {
		memset(sink, 0x33, rd[k].len + 16);
		s = sge(sink + 8, rd[k].len, A.ltok);
		assert_int_equal(A.qp->Dispatch->NdkRead(A.qp, (PVOID)7, &s, 1,
							 sc.base + rd[k].off,
							 sc.tok, 0),
				 STATUS_SUCCESS);
		poll_one_ok(cli.cq, res, NdkOperationTypeRead);
		assert_int_equal(res[0].BytesTransferred, rd[k].len);
		snprintf(what, sizeof(what), "Read %zu", k);
		assert_from_pages(&sc, sink + 8, rd[k].off, rd[k].len, what);
		assert_all(sink, 8, 0x33, "before the sink");
		assert_all(sink + 8 + rd[k].len, 8, 0x33, "after the sink");
	}
	/* A small Send gathered from the page boundary. */
	s = sge((void *)(uintptr_t)(sc.base + PAGE_SIZE - 30), 60, sc.ltok);
	memset(sink, 0x33, 64 + 16);
	post_recv(A.qp, 1, sink + 8, 64, A.ltok);
	assert_int_equal(P.qp->Dispatch->NdkSend(P.qp, (PVOID)2, &s, 1, 0),
			 STATUS_SUCCESS);
	poll_one_ok(srv.cq, res, NdkOperationTypeSend);
	poll_one_ok(cli.cq, res, NdkOperationTypeReceive);
	assert_int_equal(res[0].BytesTransferred, 60);
	assert_from_pages(&sc, sink + 8, PAGE_SIZE - 30, 60, "Send");
	assert_all(sink + 8 + 60, 8, 0x33, "after the Send");
	scattered_release(&sc);
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
		cmocka_unit_test_setup_teardown(test_read_from_scattered_pages,
						setup, dp_teardown),
		cmocka_unit_test_setup_teardown(test_read_into_sges, setup,
						dp_teardown),
	};

	return cmocka_run_group_tests_name("dp_placement", tests, NULL, NULL);
}
