/* SPDX-License-Identifier: MIT */
/*
 * NdkBuildLAM / NdkReleaseLAM (NDK_FN_BUILD_LAM, NDK_SGE) and the privileged-token
 * SGE check the data path uses.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <net/if.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "front/adapter.h"
#include "sw/mr.h"
#include "sw/adapter.h"
#include "sw/pd.h"
#include "sw/stag.h"
#include "testutil.h"

#define NPAGES	    8
#define LAM_HDR	    offsetof(NDK_LOGICAL_ADDRESS_MAPPING, AdapterPageArray)
#define LAM_SIZE(n) ((ULONG)(LAM_HDR + (n) * sizeof(NDK_LOGICAL_ADDRESS)))
#define U(p)	    ((uint64_t)(uintptr_t)(p))

struct fixture {
	NDK_ADAPTER *a;
	struct ndk_adapter *ad;
	char *buf;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	NDK_VERSION v = { 2, 0 };

	assert_non_null(f);
	assert_int_equal(NdkOpenAdapter(v, if_nametoindex("lo"), &f->a),
			 STATUS_SUCCESS);
	f->ad = to_ndk_adapter(f->a);
	f->buf = mmap(NULL, NPAGES * PAGE_SIZE, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(f->buf != MAP_FAILED);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	NdkCloseAdapter(f->a);
	munmap(f->buf, NPAGES * PAGE_SIZE);
	free(f);
	return 0;
}

static NTSTATUS build(struct fixture *f, MDL *mdl, SIZE_T len,
		      NDK_LOGICAL_ADDRESS_MAPPING *lam, ULONG *size, ULONG *fbo)
{
	return f->a->Dispatch->NdkBuildLAM(f->a, mdl, len, NULL, NULL, lam,
					   size, fbo);
}

static void release(struct fixture *f, NDK_LOGICAL_ADDRESS_MAPPING *lam)
{
	f->a->Dispatch->NdkReleaseLAM(f->a, lam);
}

static NDK_LOGICAL_ADDRESS_MAPPING *lam_alloc(unsigned int pages)
{
	NDK_LOGICAL_ADDRESS_MAPPING *lam = calloc(1, LAM_SIZE(pages));

	assert_non_null(lam);
	return lam;
}

static void test_size_contract(void **state)
{
	struct fixture *f = *state;
	char *p = f->buf + 100;
	PMDL mdl = IoAllocateMdl(p, 2 * PAGE_SIZE, FALSE, FALSE, NULL);
	NDK_LOGICAL_ADDRESS_MAPPING *lam = lam_alloc(3);
	ULONG size = 0, fbo = 0xffff;

	/* 100 + 2 pages touches 3 pages. */
	assert_int_equal(build(f, mdl, 2 * PAGE_SIZE, NULL, &size, &fbo),
			 STATUS_BUFFER_TOO_SMALL);
	assert_int_equal(size, LAM_SIZE(3));
	assert_int_equal(size, 0x10 + 3 * 8);
	size = LAM_SIZE(3) - 1;
	assert_int_equal(build(f, mdl, 2 * PAGE_SIZE, lam, &size, &fbo),
			 STATUS_BUFFER_TOO_SMALL);
	assert_int_equal(size, LAM_SIZE(3));
	assert_null(lam->AdapterContext);
	/* A bigger buffer is fine; the size written comes back. */
	size = LAM_SIZE(3) + 100;
	assert_int_equal(build(f, mdl, 2 * PAGE_SIZE, lam, &size, &fbo),
			 STATUS_SUCCESS);
	assert_int_equal(size, LAM_SIZE(3));
	assert_int_equal(fbo, 100);
	assert_int_equal(lam->AdapterPageCount, 3);
	assert_non_null(lam->AdapterContext);
	for (unsigned int i = 0; i < 3; i++)
		assert_int_equal(lam->AdapterPageArray[i].QuadPart,
				 (LONGLONG)U(f->buf + i * PAGE_SIZE));
	release(f, lam);
	assert_null(lam->AdapterContext);
	IoFreeMdl(mdl);
	free(lam);
}

static void test_page_counts(void **state)
{
	static const struct {
		size_t off;
		SIZE_T len;
		ULONG pages;
	} cases[] = {
		{ 0, 1, 1 },
		{ 0, PAGE_SIZE, 1 },
		{ 0, PAGE_SIZE + 1, 2 },
		{ 0, 3 * PAGE_SIZE, 3 },
		{ PAGE_SIZE - 1, 1, 1 },
		{ PAGE_SIZE - 1, 2, 2 },
		{ 4000, 5000, 3 },
		{ 2 * PAGE_SIZE + 5, 10, 1 },
	};
	struct fixture *f = *state;
	NDK_LOGICAL_ADDRESS_MAPPING *lam = lam_alloc(NPAGES);
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *p = f->buf + cases[i].off;
		PMDL mdl = IoAllocateMdl(p, (ULONG)cases[i].len, FALSE, FALSE,
					 NULL);
		ULONG size = LAM_SIZE(NPAGES), fbo = 0;
		const char *page0 =
			f->buf + (cases[i].off & ~(size_t)(PAGE_SIZE - 1));

		assert_int_equal(build(f, mdl, cases[i].len, lam, &size, &fbo),
				 STATUS_SUCCESS);
		assert_int_equal(lam->AdapterPageCount, cases[i].pages);
		assert_int_equal(size, LAM_SIZE(cases[i].pages));
		assert_int_equal(fbo, cases[i].off % PAGE_SIZE);
		for (ULONG j = 0; j < cases[i].pages; j++)
			assert_int_equal(lam->AdapterPageArray[j].QuadPart,
					 (LONGLONG)U(page0 + j * PAGE_SIZE));
		release(f, lam);
		IoFreeMdl(mdl);
	}
	free(lam);
}

static void test_bad_parameters(void **state)
{
	struct fixture *f = *state;
	NDK_LOGICAL_ADDRESS_MAPPING *lam = lam_alloc(NPAGES);
	PMDL a = IoAllocateMdl(f->buf, 100, FALSE, FALSE, NULL);
	PMDL b = IoAllocateMdl(f->buf + 100, PAGE_SIZE, FALSE, FALSE, NULL);
	PMDL gap = IoAllocateMdl(f->buf + 200, PAGE_SIZE, FALSE, FALSE, NULL);
	ULONG size = LAM_SIZE(NPAGES), fbo;
	char *hole;

	assert_int_equal(build(f, a, 0, lam, &size, &fbo),
			 STATUS_INVALID_PARAMETER);
	assert_int_equal(build(f, a, 101, lam, &size, &fbo),
			 STATUS_INVALID_PARAMETER);
	assert_int_equal(build(f, NULL, 10, lam, &size, &fbo),
			 STATUS_INVALID_PARAMETER);
	assert_int_equal(build(f, a, 10, lam, NULL, &fbo),
			 STATUS_INVALID_PARAMETER);
	assert_int_equal(build(f, a, 10, lam, &size, NULL),
			 STATUS_INVALID_PARAMETER);
	/* A chain: contiguous works, a gap does not. */
	a->Next = b;
	assert_int_equal(build(f, a, 100 + PAGE_SIZE, lam, &size, &fbo),
			 STATUS_SUCCESS);
	assert_int_equal(lam->AdapterPageCount, 2);
	assert_int_equal(fbo, 0);
	release(f, lam);
	a->Next = gap;
	size = LAM_SIZE(NPAGES);
	assert_int_equal(build(f, a, 100, lam, &size, &fbo),
			 STATUS_INVALID_PARAMETER);
	/* Unmapped memory. */
	hole = mmap(NULL, 3 * PAGE_SIZE, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(hole != MAP_FAILED);
	munmap(hole + PAGE_SIZE, PAGE_SIZE);
	{
		PMDL h = IoAllocateMdl(hole + 10, 2 * PAGE_SIZE, FALSE, FALSE,
				       NULL);

		assert_int_equal(build(f, h, 2 * PAGE_SIZE, lam, &size, &fbo),
				 STATUS_INVALID_PARAMETER);
		/* Even the size query refuses it. */
		size = 0;
		assert_int_equal(build(f, h, 2 * PAGE_SIZE, NULL, &size, &fbo),
				 STATUS_INVALID_PARAMETER);
		size = LAM_SIZE(NPAGES);
		assert_int_equal(build(f, h, PAGE_SIZE - 10, lam, &size, &fbo),
				 STATUS_SUCCESS);
		release(f, lam);
		IoFreeMdl(h);
	}
	munmap(hole, PAGE_SIZE);
	munmap(hole + 2 * PAGE_SIZE, PAGE_SIZE);
	IoFreeMdl(a);
	IoFreeMdl(b);
	IoFreeMdl(gap);
	free(lam);
}

static void test_release_leaves_mdl(void **state)
{
	struct fixture *f = *state;
	NDK_LOGICAL_ADDRESS_MAPPING *lam = lam_alloc(2);
	PMDL mdl = IoAllocateMdl(f->buf + 8, PAGE_SIZE, FALSE, FALSE, NULL);
	MDL copy;
	ULONG size = LAM_SIZE(2), fbo;
	void *addr;

	memcpy(&copy, mdl, sizeof(copy));
	assert_int_equal(build(f, mdl, PAGE_SIZE, lam, &size, &fbo),
			 STATUS_SUCCESS);
	release(f, lam);
	assert_memory_equal(&copy, mdl, sizeof(copy));
	/* Released: its addresses no longer pass the SGE check. */
	assert_int_equal(
		sw_stag_lam_lookup(sw_stags(f->ad), U(f->buf + 8), 1, &addr),
		-EFAULT);
	/* Double release and a LAM that was never built are ignored. */
	release(f, lam);
	memset(lam, 0, LAM_SIZE(2));
	lam->AdapterContext = (PVOID)0x1234;
	lam->AdapterPageCount = 1;
	release(f, lam);
	release(f, NULL);
	IoFreeMdl(mdl);
	free(lam);
}

/* The data path's check of a (privileged token, logical address) SGE. */
static void test_sge_check(void **state)
{
	struct fixture *f = *state;
	NDK_LOGICAL_ADDRESS_MAPPING *lam = lam_alloc(3);
	PMDL mdl = IoAllocateMdl(f->buf + PAGE_SIZE + 50, 2 * PAGE_SIZE, FALSE,
				 FALSE, NULL);
	struct sw_stag_table *t = sw_stags(f->ad);
	ULONG size = LAM_SIZE(3), fbo;
	struct sw_stag_ref ref;
	uint64_t la, end, contig;
	void *addr;

	assert_int_equal(build(f, mdl, 2 * PAGE_SIZE, lam, &size, &fbo),
			 STATUS_SUCCESS);
	assert_int_equal(lam->AdapterPageCount, 3);
	la = (uint64_t)lam->AdapterPageArray[0].QuadPart;
	end = la + 3 * PAGE_SIZE;
	/* Whole pages of the LAM are usable, fbo or not. */
	assert_int_equal(sw_stag_lam_lookup(t, la, 3 * PAGE_SIZE, &addr), 0);
	assert_ptr_equal(addr, (void *)(uintptr_t)la);
	assert_int_equal(sw_stag_lam_lookup(t, la + fbo, 10, &addr), 0);
	assert_int_equal(sw_stag_lam_lookup(t, end - 1, 1, &addr), 0);
	assert_int_equal(sw_stag_lam_lookup(t, end, 1, NULL), -EFAULT);
	assert_int_equal(sw_stag_lam_lookup(t, end - 1, 2, NULL), -EFAULT);
	assert_int_equal(sw_stag_lam_lookup(t, la - 1, 2, NULL), -EFAULT);
	assert_int_equal(sw_stag_lam_lookup(t, la, 0, &addr), 0);
	assert_null(addr);
	assert_int_equal(sw_stag_lam_lookup(t, UINT64_MAX, 2, NULL),
			 -EOVERFLOW);
	assert_int_equal(sw_stag_lam_lookup(t, UINT64_MAX, 1, NULL), -EFAULT);
	/* Through the one SGE entry point: local only, no PD check. */
	assert_int_equal(sw_stag_sge_lookup(t, 12345, SW_PRIVILEGED_TOKEN,
					    la + 100, 200,
					    SW_ACCESS_LOCAL_WRITE, &ref, &addr),
			 0);
	assert_ptr_equal(addr, (void *)(uintptr_t)(la + 100));
	assert_ptr_equal(sw_stag_ref_map(&ref, 10, &contig),
			 (void *)(uintptr_t)(la + 110));
	assert_int_equal(contig, 190);
	assert_int_equal(sw_stag_ref_write(&ref, 0, "hello", 5), 0);
	assert_memory_equal(f->buf + PAGE_SIZE + 100, "hello", 5);
	sw_stag_put(&ref);
	assert_int_equal(sw_stag_sge_lookup(t, 1, SW_PRIVILEGED_TOKEN, la, 1,
					    SW_ACCESS_REMOTE_READ, &ref, NULL),
			 -EACCES);
	assert_int_equal(sw_stag_sge_lookup(t, 1, SW_PRIVILEGED_TOKEN, end, 1,
					    SW_ACCESS_LOCAL_READ, &ref, NULL),
			 -EFAULT);
	/* Any other token goes to the STag table. */
	assert_int_equal(sw_stag_sge_lookup(t, 1, 0x100, la, 1,
					    SW_ACCESS_LOCAL_READ, &ref, NULL),
			 -ENOENT);
	release(f, lam);
	assert_int_equal(sw_stag_sge_lookup(t, 1, SW_PRIVILEGED_TOKEN, la, 1,
					    SW_ACCESS_LOCAL_READ, &ref, NULL),
			 -EFAULT);
	IoFreeMdl(mdl);
	free(lam);
}

/* Overlapping LAMs of the same buffer live independently. */
static void test_overlapping(void **state)
{
	struct fixture *f = *state;
	NDK_LOGICAL_ADDRESS_MAPPING *l1 = lam_alloc(NPAGES), *l2;
	PMDL m1 = IoAllocateMdl(f->buf, 4 * PAGE_SIZE, FALSE, FALSE, NULL);
	PMDL m2 = IoAllocateMdl(f->buf + PAGE_SIZE, PAGE_SIZE, FALSE, FALSE,
				NULL);
	ULONG size = LAM_SIZE(NPAGES), fbo;
	uint64_t b = U(f->buf);

	l2 = lam_alloc(NPAGES);
	assert_int_equal(build(f, m1, 4 * PAGE_SIZE, l1, &size, &fbo),
			 STATUS_SUCCESS);
	size = LAM_SIZE(NPAGES);
	assert_int_equal(build(f, m2, PAGE_SIZE, l2, &size, &fbo),
			 STATUS_SUCCESS);
	assert_ptr_not_equal(l1->AdapterContext, l2->AdapterContext);
	assert_int_equal(
		sw_stag_lam_lookup(sw_stags(f->ad), b, 4 * PAGE_SIZE, NULL), 0);
	release(f, l1);
	assert_int_equal(sw_stag_lam_lookup(sw_stags(f->ad), b, 1, NULL),
			 -EFAULT);
	assert_int_equal(sw_stag_lam_lookup(sw_stags(f->ad), b + PAGE_SIZE,
					    PAGE_SIZE, NULL),
			 0);
	assert_int_equal(sw_stag_lam_lookup(sw_stags(f->ad), b + PAGE_SIZE,
					    PAGE_SIZE + 1, NULL),
			 -EFAULT);
	release(f, l2);
	assert_int_equal(
		sw_stag_lam_lookup(sw_stags(f->ad), b + PAGE_SIZE, 1, NULL),
		-EFAULT);
	IoFreeMdl(m1);
	IoFreeMdl(m2);
	free(l1);
	free(l2);
}

/* LAM pages fast-registered into an FRMR, then written through its STag. */
static void test_lam_fast_register(void **state)
{
	struct fixture *f = *state;
	NDK_LOGICAL_ADDRESS_MAPPING *lam = lam_alloc(NPAGES);
	PMDL mdl =
		IoAllocateMdl(f->buf + 300, 3 * PAGE_SIZE, FALSE, FALSE, NULL);
	ULONG size = LAM_SIZE(NPAGES), fbo;
	NDK_PD *pd = NULL;
	NDK_MR *mr = NULL;
	struct sw_stag_ref ref;
	uint64_t base;
	char data[3 * PAGE_SIZE];

	assert_int_equal(build(f, mdl, sizeof(data), lam, &size, &fbo),
			 STATUS_SUCCESS);
	assert_int_equal(f->a->Dispatch->NdkCreatePd(f->a, NULL, NULL, &pd),
			 STATUS_SUCCESS);
	assert_int_equal(pd->Dispatch->NdkCreateMr(pd, TRUE, NULL, NULL, &mr),
			 STATUS_SUCCESS);
	assert_int_equal(mr->Dispatch->NdkInitializeFastRegisterMr(
				 mr, lam->AdapterPageCount, TRUE, NULL, NULL),
			 STATUS_SUCCESS);
	base = 0x200000000ull + fbo;
	assert_int_equal(
		sw_mr_fast_register(to_sw_mr(mr), lam->AdapterPageArray,
				    lam->AdapterPageCount, fbo, sizeof(data),
				    base, NDK_OP_FLAG_ALLOW_REMOTE_WRITE),
		0);
	assert_int_equal(
		sw_stag_lookup(sw_stags(f->ad),
			       mr->Dispatch->NdkGetRemoteTokenFromMr(mr),
			       to_sw_pd(pd)->id, base, sizeof(data),
			       SW_ACCESS_REMOTE_WRITE, &ref, NULL),
		0);
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (char)(i ^ (i >> 8));
	assert_int_equal(sw_stag_ref_write(&ref, 0, data, sizeof(data)), 0);
	sw_stag_put(&ref);
	assert_memory_equal(f->buf + 300, data, sizeof(data));
	assert_int_equal(mr->Dispatch->NdkCloseMr(&mr->Header, NULL, NULL),
			 STATUS_SUCCESS);
	assert_int_equal(pd->Dispatch->NdkClosePd(&pd->Header, NULL, NULL),
			 STATUS_SUCCESS);
	release(f, lam);
	IoFreeMdl(mdl);
	free(lam);
}

/* A LAM left built when the adapter closes is dropped with the table. */
static void test_unreleased_at_close(void **state)
{
	struct fixture *f = *state;
	NDK_LOGICAL_ADDRESS_MAPPING *lam = lam_alloc(1);
	PMDL mdl = IoAllocateMdl(f->buf, 10, FALSE, FALSE, NULL);
	ULONG size = LAM_SIZE(1), fbo;

	assert_int_equal(build(f, mdl, 10, lam, &size, &fbo), STATUS_SUCCESS);
	IoFreeMdl(mdl);
	free(lam);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_size_contract, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_page_counts, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_bad_parameters, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_release_leaves_mdl, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_sge_check, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_overlapping, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_lam_fast_register, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_unreleased_at_close, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
