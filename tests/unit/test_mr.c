/* SPDX-License-Identifier: MIT */
/*
 * Memory regions, memory windows and the STag table (NDK_MR_DISPATCH,
 * NDK_MW_DISPATCH, NDK_FN_BIND; RFC 5040 6.4 / RFC 5041 8 lookup rules), through the public
 * dispatch tables plus the internal data-path API.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <net/if.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "front/adapter.h"
#include "sw/mr.h"
#include "sw/adapter.h"
#include "sw/mw.h"
#include "sw/pd.h"
#include "sw/stag.h"
#include "testutil.h"

#define NPAGES 16

struct fixture {
	NDK_ADAPTER *a;
	struct ndk_adapter *ad;
	NDK_PD *pd;
	char *buf; /* NPAGES mapped, page-aligned pages */
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	NDK_VERSION v = { 2, 0 };

	assert_non_null(f);
	assert_int_equal(NdkOpenAdapter(v, if_nametoindex("lo"), &f->a),
			 STATUS_SUCCESS);
	f->ad = to_ndk_adapter(f->a);
	assert_int_equal(f->a->Dispatch->NdkCreatePd(f->a, NULL, NULL, &f->pd),
			 STATUS_SUCCESS);
	f->buf = mmap(NULL, NPAGES * PAGE_SIZE, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(f->buf != MAP_FAILED);
	memset(f->buf, 0, NPAGES * PAGE_SIZE);
	*state = f;
	return 0;
}

static void pd_closed(PVOID ctx)
{
	atomic_store((atomic_bool *)ctx, true);
}

static bool flag_set(void *arg)
{
	return atomic_load((atomic_bool *)arg);
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	static atomic_bool done;

	/* Pending is allowed: a successor's close completion that a test
	 * waited for may still be returning, and the PD's close completes
	 * only after it has (NDKPI Object Lifetime Requirements). */
	atomic_store(&done, false);
	if (f->pd && f->pd->Dispatch->NdkClosePd(&f->pd->Header, pd_closed,
						 &done) == STATUS_PENDING)
		assert_true(tu_wait_until(flag_set, &done, 5000));
	NdkCloseAdapter(f->a);
	munmap(f->buf, NPAGES * PAGE_SIZE);
	free(f);
	return 0;
}

static uint32_t pd_id(NDK_PD *pd)
{
	return to_sw_pd(pd)->id;
}

static NDK_MR *mr_new(NDK_PD *pd, BOOLEAN fast)
{
	NDK_MR *mr = NULL;

	assert_int_equal(pd->Dispatch->NdkCreateMr(pd, fast, NULL, NULL, &mr),
			 STATUS_SUCCESS);
	assert_non_null(mr);
	return mr;
}

static void mr_close(NDK_MR *mr)
{
	assert_int_equal(mr->Dispatch->NdkCloseMr(&mr->Header, NULL, NULL),
			 STATUS_SUCCESS);
}

static NDK_MW *mw_new(NDK_PD *pd)
{
	NDK_MW *mw = NULL;

	assert_int_equal(pd->Dispatch->NdkCreateMw(pd, NULL, NULL, &mw),
			 STATUS_SUCCESS);
	return mw;
}

static void mw_close(NDK_MW *mw)
{
	assert_int_equal(mw->Dispatch->NdkCloseMw(&mw->Header, NULL, NULL),
			 STATUS_SUCCESS);
}

static NTSTATUS reg(NDK_MR *mr, void *va, ULONG bytes, SIZE_T len, ULONG flags)
{
	PMDL mdl = IoAllocateMdl(va, bytes, FALSE, FALSE, NULL);
	NTSTATUS st;

	assert_non_null(mdl);
	st = mr->Dispatch->NdkRegisterMr(mr, mdl, len, flags, NULL, NULL);
	IoFreeMdl(mdl);
	return st;
}

static NTSTATUS dereg(NDK_MR *mr)
{
	return mr->Dispatch->NdkDeregisterMr(mr, NULL, NULL);
}

static UINT32 rtoken(NDK_MR *mr)
{
	return mr->Dispatch->NdkGetRemoteTokenFromMr(mr);
}

static UINT32 ltoken(NDK_MR *mr)
{
	return mr->Dispatch->NdkGetLocalTokenFromMr(mr);
}

/* Lookup without a pin. */
static int look(struct fixture *f, uint32_t stag, uint32_t pd, uint64_t va,
		uint64_t len, uint32_t access, void **addr)
{
	return sw_stag_lookup(sw_stags(f->ad), stag, pd, va, len, access, NULL,
			      addr);
}

#define U(p) ((uint64_t)(uintptr_t)(p))

static void test_create_close(void **state)
{
	struct fixture *f = *state;
	NDK_MR *mr = mr_new(f->pd, FALSE), *fr = mr_new(f->pd, TRUE);
	NDK_MR *none = NULL;

	assert_int_equal(mr->Header.ObjectType, NdkObjectTypeMr);
	assert_int_equal(mr->Header.Version.Major, 2);
	assert_int_equal(mr->Header.Version.Minor, 1);
	/* Index 0 is reserved: no token is ever the privileged token. */
	assert_int_not_equal(sw_stag_index(rtoken(mr)), 0);
	assert_int_not_equal(sw_stag_index(rtoken(fr)), 0);
	assert_int_not_equal(sw_stag_index(rtoken(mr)),
			     sw_stag_index(rtoken(fr)));
	/* Not registered yet: the token grants nothing. */
	assert_int_equal(look(f, rtoken(mr), pd_id(f->pd), U(f->buf), 1,
			      SW_ACCESS_LOCAL_READ, NULL),
			 -ENOENT);
	assert_int_equal(
		f->pd->Dispatch->NdkCreateMr(NULL, FALSE, NULL, NULL, &none),
		STATUS_INVALID_PARAMETER);
	assert_int_equal(
		f->pd->Dispatch->NdkCreateMr(f->pd, FALSE, NULL, NULL, NULL),
		STATUS_INVALID_PARAMETER);
	assert_int_equal(mr->Dispatch->NdkQueryExtension(&mr->Header, NULL,
							 (NDK_VERSION){ 1, 0 },
							 NULL),
			 STATUS_NOT_SUPPORTED);
	mr_close(mr);
	mr_close(fr);
}

static void test_privileged_token(void **state)
{
	struct fixture *f = *state;
	UINT32 tok = 0xdeadbeef;
	NDK_MR *mr = mr_new(f->pd, FALSE);

	f->pd->Dispatch->NdkGetPrivilegedMemoryRegionToken(f->pd, &tok);
	assert_int_equal(tok, SW_PRIVILEGED_TOKEN);
	assert_int_equal(reg(mr, f->buf, PAGE_SIZE, PAGE_SIZE, 0xf),
			 STATUS_SUCCESS);
	/* The privileged token never names a table entry (remote use). */
	for (unsigned int key = 0; key < 256; key++)
		assert_int_equal(look(f, sw_stag_make(0, (uint8_t)key),
				      pd_id(f->pd), U(f->buf), 1,
				      SW_ACCESS_REMOTE_READ, NULL),
				 -ENOENT);
	mr_close(mr);
}

/* Every NdkRegisterMr flag combination and the access it grants. */
static void test_register_flags(void **state)
{
	static const struct {
		ULONG flags;
		uint32_t access;
	} cases[] = {
		{ 0x0, SW_ACCESS_LOCAL_READ },
		{ 0x1, SW_ACCESS_LOCAL },
		{ 0x2, SW_ACCESS_LOCAL_READ | SW_ACCESS_REMOTE_READ },
		{ 0x3, SW_ACCESS_LOCAL | SW_ACCESS_REMOTE_READ },
		{ 0x5, SW_ACCESS_LOCAL | SW_ACCESS_REMOTE_WRITE },
		{ 0x7, SW_ACCESS_LOCAL | SW_ACCESS_REMOTE },
		/* RDMA_READ_SINK is accepted and grants nothing more. */
		{ 0x8, SW_ACCESS_LOCAL_READ },
		{ 0x9, SW_ACCESS_LOCAL },
		{ 0xa, SW_ACCESS_LOCAL_READ | SW_ACCESS_REMOTE_READ },
		{ 0xb, SW_ACCESS_LOCAL | SW_ACCESS_REMOTE_READ },
		{ 0xd, SW_ACCESS_LOCAL | SW_ACCESS_REMOTE_WRITE },
		{ 0xf, SW_ACCESS_LOCAL | SW_ACCESS_REMOTE },
	};
	static const ULONG bad[] = {
		0x4, 0x6, 0xc, 0xe, 0x10, 0x100, 0x80000000
	};
	static const uint32_t each[] = {
		SW_ACCESS_LOCAL_READ,
		SW_ACCESS_LOCAL_WRITE,
		SW_ACCESS_REMOTE_READ,
		SW_ACCESS_REMOTE_WRITE,
	};
	struct fixture *f = *state;
	NDK_MR *mr = mr_new(f->pd, FALSE);
	size_t i, j;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		uint32_t tok;
		void *addr = NULL;

		assert_int_equal(reg(mr, f->buf, 2 * PAGE_SIZE, 2 * PAGE_SIZE,
				     cases[i].flags),
				 STATUS_SUCCESS);
		tok = rtoken(mr);
		assert_int_equal(tok, ltoken(mr));
		for (j = 0; j < ARRAY_SIZE(each); j++) {
			int want = (cases[i].access & each[j]) ? 0 : -EACCES;

			assert_int_equal(look(f, tok, pd_id(f->pd),
					      U(f->buf) + 10, 100, each[j],
					      &addr),
					 want);
			if (!want)
				assert_ptr_equal(addr, f->buf + 10);
		}
		/* Several rights at once need all of them. */
		assert_int_equal(look(f, tok, pd_id(f->pd), U(f->buf), 1,
				      cases[i].access, NULL),
				 0);
		assert_int_equal(dereg(mr), STATUS_SUCCESS);
		for (j = 0; j < ARRAY_SIZE(each); j++)
			assert_int_equal(look(f, tok, pd_id(f->pd), U(f->buf),
					      1, each[j], NULL),
					 -ENOENT);
	}
	for (i = 0; i < ARRAY_SIZE(bad); i++)
		assert_int_equal(reg(mr, f->buf, PAGE_SIZE, PAGE_SIZE, bad[i]),
				 STATUS_INVALID_PARAMETER);
	mr_close(mr);
}

static void test_token_changes(void **state)
{
	struct fixture *f = *state;
	NDK_MR *mr = mr_new(f->pd, FALSE);
	uint32_t seen[300];
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(seen); i++) {
		assert_int_equal(reg(mr, f->buf, PAGE_SIZE, PAGE_SIZE, 0x7),
				 STATUS_SUCCESS);
		seen[i] = rtoken(mr);
		assert_int_equal(seen[i], ltoken(mr));
		assert_int_equal(look(f, seen[i], pd_id(f->pd), U(f->buf), 1,
				      SW_ACCESS_REMOTE_WRITE, NULL),
				 0);
		if (i) {
			/* Same index, new key: the old token is dead. */
			assert_int_equal(sw_stag_index(seen[i]),
					 sw_stag_index(seen[i - 1]));
			assert_int_not_equal(seen[i], seen[i - 1]);
			assert_int_equal(look(f, seen[i - 1], pd_id(f->pd),
					      U(f->buf), 1,
					      SW_ACCESS_LOCAL_READ, NULL),
					 -ENOENT);
		}
		assert_int_equal(dereg(mr), STATUS_SUCCESS);
		assert_int_equal(look(f, seen[i], pd_id(f->pd), U(f->buf), 1,
				      SW_ACCESS_LOCAL_READ, NULL),
				 -ENOENT);
	}
	mr_close(mr);
}

static void test_register_errors(void **state)
{
	struct fixture *f = *state;
	NDK_MR *mr = mr_new(f->pd, FALSE), *fr = mr_new(f->pd, TRUE);
	PMDL mdl = IoAllocateMdl(f->buf, PAGE_SIZE, FALSE, FALSE, NULL);
	SIZE_T max = f->ad->info.MaxRegistrationSize;

	/* Wrong kind of MR. */
	assert_int_equal(reg(fr, f->buf, PAGE_SIZE, PAGE_SIZE, 0),
			 STATUS_INVALID_DEVICE_REQUEST);
	assert_int_equal(mr->Dispatch->NdkInitializeFastRegisterMr(mr, 4, FALSE,
								   NULL, NULL),
			 STATUS_INVALID_DEVICE_REQUEST);
	/* Bad parameters. */
	assert_int_equal(
		mr->Dispatch->NdkRegisterMr(mr, NULL, PAGE_SIZE, 0, NULL, NULL),
		STATUS_INVALID_PARAMETER);
	assert_int_equal(mr->Dispatch->NdkRegisterMr(mr, mdl, 0, 0, NULL, NULL),
			 STATUS_INVALID_PARAMETER);
	assert_int_equal(mr->Dispatch->NdkRegisterMr(mr, mdl, PAGE_SIZE + 1, 0,
						     NULL, NULL),
			 STATUS_INVALID_PARAMETER);
	assert_int_equal(
		mr->Dispatch->NdkRegisterMr(mr, mdl, max + 1, 0, NULL, NULL),
		STATUS_INVALID_PARAMETER);
	/* Deregistering what is not registered. */
	assert_int_equal(dereg(mr), STATUS_INVALID_DEVICE_STATE);
	/* Length below the MDL byte count is fine. */
	assert_int_equal(
		mr->Dispatch->NdkRegisterMr(mr, mdl, 100, 0, NULL, NULL),
		STATUS_SUCCESS);
	assert_int_equal(look(f, rtoken(mr), pd_id(f->pd), U(f->buf) + 99, 1,
			      SW_ACCESS_LOCAL_READ, NULL),
			 0);
	assert_int_equal(look(f, rtoken(mr), pd_id(f->pd), U(f->buf) + 100, 1,
			      SW_ACCESS_LOCAL_READ, NULL),
			 -ERANGE);
	/* Registering twice without deregistering. */
	assert_int_equal(
		mr->Dispatch->NdkRegisterMr(mr, mdl, 100, 0, NULL, NULL),
		STATUS_INVALID_DEVICE_STATE);
	assert_int_equal(dereg(mr), STATUS_SUCCESS);
	assert_int_equal(dereg(mr), STATUS_INVALID_DEVICE_STATE);
	IoFreeMdl(mdl);
	mr_close(mr);
	mr_close(fr);
}

static void test_chained_mdl(void **state)
{
	struct fixture *f = *state;
	NDK_MR *mr = mr_new(f->pd, FALSE);
	char *p = f->buf + 300;
	PMDL a = IoAllocateMdl(p, 5000, FALSE, FALSE, NULL);
	PMDL b = IoAllocateMdl(p + 5000, 100, FALSE, FALSE, NULL);
	PMDL c = IoAllocateMdl(p + 5100, 3 * PAGE_SIZE, FALSE, FALSE, NULL);
	PMDL gap = IoAllocateMdl(p + 5101, 100, FALSE, FALSE, NULL);
	PMDL back = IoAllocateMdl(p, 100, FALSE, FALSE, NULL);
	ULONG total = 5100 + 3 * PAGE_SIZE;
	void *addr;

	a->Next = b;
	b->Next = c;
	assert_int_equal(
		mr->Dispatch->NdkRegisterMr(mr, a, total, 0x1, NULL, NULL),
		STATUS_SUCCESS);
	assert_int_equal(look(f, rtoken(mr), pd_id(f->pd), U(p), total,
			      SW_ACCESS_LOCAL_WRITE, &addr),
			 0);
	assert_ptr_equal(addr, p);
	assert_int_equal(look(f, rtoken(mr), pd_id(f->pd), U(p) + total - 1, 1,
			      SW_ACCESS_LOCAL_WRITE, &addr),
			 0);
	assert_ptr_equal(addr, p + total - 1);
	assert_int_equal(look(f, rtoken(mr), pd_id(f->pd), U(p), total + 1,
			      SW_ACCESS_LOCAL_WRITE, NULL),
			 -ERANGE);
	assert_int_equal(dereg(mr), STATUS_SUCCESS);
	/* Longer than the whole chain. */
	assert_int_equal(
		mr->Dispatch->NdkRegisterMr(mr, a, total + 1, 0, NULL, NULL),
		STATUS_INVALID_PARAMETER);
	/* Not virtually contiguous: a gap, then a step backwards. */
	b->Next = gap;
	assert_int_equal(
		mr->Dispatch->NdkRegisterMr(mr, a, 5000, 0, NULL, NULL),
		STATUS_INVALID_PARAMETER);
	b->Next = back;
	assert_int_equal(
		mr->Dispatch->NdkRegisterMr(mr, a, 5000, 0, NULL, NULL),
		STATUS_INVALID_PARAMETER);
	/* A cycle of empty MDLs is refused, not walked forever. */
	b->Next = NULL;
	b->ByteCount = 0;
	b->Next = b;
	assert_int_equal(
		mr->Dispatch->NdkRegisterMr(mr, a, 5000, 0, NULL, NULL),
		STATUS_INVALID_PARAMETER);
	IoFreeMdl(a);
	IoFreeMdl(b);
	IoFreeMdl(c);
	IoFreeMdl(gap);
	IoFreeMdl(back);
	mr_close(mr);
}

static void test_unmapped(void **state)
{
	struct fixture *f = *state;
	NDK_MR *mr = mr_new(f->pd, FALSE);
	char *p = mmap(NULL, 4 * PAGE_SIZE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	assert_true(p != MAP_FAILED);
	assert_int_equal(munmap(p + 2 * PAGE_SIZE, PAGE_SIZE), 0);
	assert_int_equal(reg(mr, p, 4 * PAGE_SIZE, 4 * PAGE_SIZE, 0),
			 STATUS_INVALID_PARAMETER);
	assert_int_equal(reg(mr, p + 100, 3 * PAGE_SIZE, 2 * PAGE_SIZE, 0),
			 STATUS_INVALID_PARAMETER);
	/* Up to the hole is fine. */
	assert_int_equal(reg(mr, p, 2 * PAGE_SIZE, 2 * PAGE_SIZE, 0),
			 STATUS_SUCCESS);
	assert_int_equal(dereg(mr), STATUS_SUCCESS);
	assert_int_equal(reg(mr, p + 3 * PAGE_SIZE, PAGE_SIZE, PAGE_SIZE, 0),
			 STATUS_SUCCESS);
	assert_int_equal(dereg(mr), STATUS_SUCCESS);
	munmap(p, 2 * PAGE_SIZE);
	munmap(p + 3 * PAGE_SIZE, PAGE_SIZE);
	mr_close(mr);
}

static void test_bounds(void **state)
{
	struct fixture *f = *state;
	NDK_MR *mr = mr_new(f->pd, FALSE);
	char *base = f->buf + 100;
	uint64_t b = U(base), len = 1000;
	uint32_t pd = pd_id(f->pd), tok, r = SW_ACCESS_REMOTE_READ;
	void *addr = (void *)1;

	assert_int_equal(reg(mr, base, (ULONG)len, len, 0x2), STATUS_SUCCESS);
	tok = rtoken(mr);
	/* First and last byte, whole range. */
	assert_int_equal(look(f, tok, pd, b, 1, r, &addr), 0);
	assert_ptr_equal(addr, base);
	assert_int_equal(look(f, tok, pd, b + len - 1, 1, r, &addr), 0);
	assert_ptr_equal(addr, base + len - 1);
	assert_int_equal(look(f, tok, pd, b, len, r, &addr), 0);
	/* One past either end. */
	assert_int_equal(look(f, tok, pd, b + len, 1, r, NULL), -ERANGE);
	assert_int_equal(look(f, tok, pd, b - 1, 1, r, NULL), -ERANGE);
	assert_int_equal(look(f, tok, pd, b - 1, 2, r, NULL), -ERANGE);
	assert_int_equal(look(f, tok, pd, b, len + 1, r, NULL), -ERANGE);
	assert_int_equal(look(f, tok, pd, b + len - 1, 2, r, NULL), -ERANGE);
	/* Zero length: still checked, may sit one past the end. */
	assert_int_equal(look(f, tok, pd, b + len, 0, r, &addr), 0);
	assert_null(addr);
	assert_int_equal(look(f, tok, pd, b, 0, r, &addr), 0);
	assert_int_equal(look(f, tok, pd, b + len + 1, 0, r, NULL), -ERANGE);
	assert_int_equal(look(f, tok, pd, b - 1, 0, r, NULL), -ERANGE);
	assert_int_equal(look(f, tok, pd, b, 0, SW_ACCESS_REMOTE_WRITE, NULL),
			 -EACCES);
	assert_int_equal(look(f, tok ^ 1, pd, b, 0, r, NULL), -ENOENT);
	/* 64-bit wrap: TO wrap, distinct from bounds. */
	assert_int_equal(look(f, tok, pd, UINT64_MAX - 10, 100, r, NULL),
			 -EOVERFLOW);
	assert_int_equal(look(f, tok, pd, b, UINT64_MAX, r, NULL), -EOVERFLOW);
	assert_int_equal(look(f, tok, pd, b + 1, UINT64_MAX, r, NULL),
			 -EOVERFLOW);
	assert_int_equal(look(f, tok, pd, UINT64_MAX, 1, r, NULL), -ERANGE);
	assert_int_equal(look(f, tok, pd, 0, 1, r, NULL), -ERANGE);
	assert_int_equal(look(f, tok, pd, b, UINT64_MAX - b + 1, r, NULL),
			 -ERANGE);
	assert_int_equal(look(f, tok, pd, b, UINT64_MAX - b + 2, r, NULL),
			 -EOVERFLOW);
	/* Fault classes for the Terminate. */
	assert_int_equal(sw_stag_fault_of(-ENOENT), SW_STAG_FAULT_INVALID_STAG);
	assert_int_equal(sw_stag_fault_of(-ERANGE), SW_STAG_FAULT_BOUNDS);
	assert_int_equal(sw_stag_fault_of(-EACCES), SW_STAG_FAULT_ACCESS);
	assert_int_equal(sw_stag_fault_of(-EPERM), SW_STAG_FAULT_PD);
	assert_int_equal(sw_stag_fault_of(-EOVERFLOW), SW_STAG_FAULT_TO_WRAP);
	assert_int_equal(sw_stag_fault_of(-EOPNOTSUPP),
			 SW_STAG_FAULT_NO_INVALIDATE);
	assert_int_equal(sw_stag_fault_of(0), SW_STAG_FAULT_NONE);
	assert_int_equal(sw_stag_fault_of(-EIO), SW_STAG_FAULT_OTHER);
	assert_string_equal(sw_stag_fault_name(SW_STAG_FAULT_BOUNDS),
			    "base/bounds violation");
	mr_close(mr);
}

static void test_pd_mismatch(void **state)
{
	struct fixture *f = *state;
	NDK_PD *pd2 = NULL;
	NDK_MR *mr = mr_new(f->pd, FALSE);

	assert_int_equal(f->a->Dispatch->NdkCreatePd(f->a, NULL, NULL, &pd2),
			 STATUS_SUCCESS);
	assert_int_not_equal(pd_id(pd2), pd_id(f->pd));
	assert_int_equal(reg(mr, f->buf, PAGE_SIZE, PAGE_SIZE, 0x7),
			 STATUS_SUCCESS);
	assert_int_equal(look(f, rtoken(mr), pd_id(pd2), U(f->buf), 1,
			      SW_ACCESS_LOCAL_READ, NULL),
			 -EPERM);
	/* PD is checked before access and bounds. */
	assert_int_equal(look(f, rtoken(mr), pd_id(pd2), 0, 1,
			      SW_ACCESS_LOCAL_READ, NULL),
			 -EPERM);
	assert_int_equal(look(f, rtoken(mr), pd_id(f->pd), U(f->buf), 1,
			      SW_ACCESS_LOCAL_READ, NULL),
			 0);
	mr_close(mr);
	assert_int_equal(pd2->Dispatch->NdkClosePd(&pd2->Header, NULL, NULL),
			 STATUS_SUCCESS);
}

static void test_pinned_access(void **state)
{
	struct fixture *f = *state;
	NDK_MR *mr = mr_new(f->pd, FALSE);
	struct sw_stag_ref ref;
	uint64_t contig;
	char out[8];
	void *addr;

	assert_int_equal(reg(mr, f->buf, 3 * PAGE_SIZE, 3 * PAGE_SIZE, 0x5),
			 STATUS_SUCCESS);
	assert_int_equal(sw_stag_lookup(sw_stags(f->ad), rtoken(mr),
					pd_id(f->pd), U(f->buf) + 10,
					2 * PAGE_SIZE, SW_ACCESS_REMOTE_WRITE,
					&ref, &addr),
			 0);
	assert_ptr_equal(sw_stag_ref_map(&ref, 5, &contig), f->buf + 15);
	assert_int_equal(contig, 2 * PAGE_SIZE - 5);
	assert_null(sw_stag_ref_map(&ref, 2 * PAGE_SIZE, &contig));
	assert_int_equal(contig, 0);
	assert_int_equal(sw_stag_ref_write(&ref, PAGE_SIZE, "payload", 7), 0);
	assert_memory_equal(f->buf + 10 + PAGE_SIZE, "payload", 7);
	assert_int_equal(sw_stag_ref_read(&ref, PAGE_SIZE + 3, out, 4), 0);
	assert_memory_equal(out, "load", 4);
	assert_int_equal(sw_stag_ref_write(&ref, 2 * PAGE_SIZE - 1, "xy", 2),
			 -ERANGE);
	assert_int_equal(sw_stag_ref_read(&ref, UINT64_MAX, out, 1), -ERANGE);
	sw_stag_put(&ref);
	assert_int_equal(dereg(mr), STATUS_SUCCESS);
	mr_close(mr);
}

struct dereg_arg {
	NDK_MR *mr;
	atomic_int done;
	NTSTATUS status;
};

static void *dereg_thread(void *p)
{
	struct dereg_arg *a = p;

	a->status = dereg(a->mr);
	atomic_store(&a->done, 1);
	return NULL;
}

/* Deregistration waits for accesses in flight (pins) to finish. */
static void test_dereg_waits_for_pins(void **state)
{
	struct fixture *f = *state;
	NDK_MR *mr = mr_new(f->pd, FALSE);
	struct dereg_arg arg = { .mr = mr };
	struct sw_stag_ref ref;
	pthread_t th;

	assert_int_equal(reg(mr, f->buf, PAGE_SIZE, PAGE_SIZE, 0x1),
			 STATUS_SUCCESS);
	assert_int_equal(sw_stag_lookup(sw_stags(f->ad), rtoken(mr),
					pd_id(f->pd), U(f->buf), 8,
					SW_ACCESS_LOCAL_WRITE, &ref, NULL),
			 0);
	assert_int_equal(pthread_create(&th, NULL, dereg_thread, &arg), 0);
	tu_sleep_ms(50);
	assert_int_equal(atomic_load(&arg.done), 0);
	/* Already invalid for new lookups while it drains. */
	assert_int_equal(look(f, rtoken(mr), pd_id(f->pd), U(f->buf), 1,
			      SW_ACCESS_LOCAL_READ, NULL),
			 -ENOENT);
	assert_int_equal(sw_stag_ref_write(&ref, 0, "12345678", 8), 0);
	sw_stag_put(&ref);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(atomic_load(&arg.done), 1);
	assert_int_equal(arg.status, STATUS_SUCCESS);
	mr_close(mr);
}

struct stress {
	struct fixture *f;
	NDK_MR *mr;
	atomic_int stop, next;
	atomic_long ok, stale, bad;
};

static void *stress_reader(void *p)
{
	struct stress *s = p;
	/* Each reader writes its own bytes: only the table is shared. */
	uint64_t off = 64 * (uint64_t)atomic_fetch_add(&s->next, 1);
	struct sw_stag_ref ref;

	while (!atomic_load(&s->stop)) {
		uint32_t tok = rtoken(s->mr);
		int err =
			sw_stag_lookup(sw_stags(s->f->ad), tok, pd_id(s->f->pd),
				       U(s->f->buf) + off, 64,
				       SW_ACCESS_REMOTE_WRITE, &ref, NULL);

		if (!err) {
			sw_stag_ref_write(&ref, 0, "0123456789abcdef", 16);
			sw_stag_put(&ref);
			atomic_fetch_add(&s->ok, 1);
		} else if (err == -ENOENT) {
			atomic_fetch_add(&s->stale, 1);
		} else {
			atomic_fetch_add(&s->bad, 1);
		}
	}
	return NULL;
}

/* Lookups racing with re-registration: only valid or invalid, no tears. */
static void test_concurrent_lookup(void **state)
{
	struct fixture *f = *state;
	struct stress s = { .f = f, .mr = mr_new(f->pd, FALSE) };
	pthread_t th[3];
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(th); i++)
		assert_int_equal(
			pthread_create(&th[i], NULL, stress_reader, &s), 0);
	/* Let the readers get going first: on a loaded 2-core machine the
	 * loop below can finish before they are scheduled at all. */
	for (i = 0; i < 5000 && atomic_load(&s.ok) + atomic_load(&s.stale) == 0;
	     i++)
		tu_sleep_ms(1);
	for (i = 0; i < 300; i++) {
		assert_int_equal(reg(s.mr, f->buf, PAGE_SIZE, PAGE_SIZE, 0x7),
				 STATUS_SUCCESS);
		assert_int_equal(dereg(s.mr), STATUS_SUCCESS);
	}
	atomic_store(&s.stop, 1);
	for (i = 0; i < ARRAY_SIZE(th); i++)
		pthread_join(th[i], NULL);
	assert_int_equal(atomic_load(&s.bad), 0);
	assert_true(atomic_load(&s.ok) + atomic_load(&s.stale) > 0);
	mr_close(s.mr);
}

/* ------------------------------------------------------------------ */
/* Fast register                                                      */

static void pages_of(NDK_LOGICAL_ADDRESS *pa, const char *first, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		pa[i].QuadPart = (LONGLONG)(U(first) + (uint64_t)i * PAGE_SIZE);
}

static void test_fr_init(void **state)
{
	struct fixture *f = *state;
	NDK_MR *fr = mr_new(f->pd, TRUE);
	uint32_t max = f->ad->info.FRMRPageCount;
	NDK_FN_INITIALIZE_FAST_REGISTER_MR init =
		fr->Dispatch->NdkInitializeFastRegisterMr;

	/* The announced limit is the one enforced. */
	assert_true(max >= 16);
	assert_true(max <= SW_MR_FR_MAX_PAGES);
	assert_int_equal(init(fr, 0, FALSE, NULL, NULL),
			 STATUS_IMPLEMENTATION_LIMIT);
	assert_int_equal(init(fr, max + 1, FALSE, NULL, NULL),
			 STATUS_IMPLEMENTATION_LIMIT);
	assert_int_equal(init(fr, 0xffffffff, TRUE, NULL, NULL),
			 STATUS_IMPLEMENTATION_LIMIT);
	assert_int_equal(init(fr, max, TRUE, NULL, NULL), STATUS_SUCCESS);
	/* Repeated calls are fine; the latest count is the limit. */
	assert_int_equal(init(fr, 4, FALSE, NULL, NULL), STATUS_SUCCESS);
	assert_int_equal(to_sw_mr(fr)->base.fr_max_pages, 4);
	assert_false(to_sw_mr(fr)->base.fr_remote);
	assert_int_equal(init(fr, f->ad->info.FRMRPageCount, TRUE, NULL, NULL),
			 STATUS_SUCCESS);
	assert_true(to_sw_mr(fr)->base.fr_remote);
	/* DeregisterMr on a fast-register MR is tolerated. */
	assert_int_equal(dereg(fr), STATUS_SUCCESS);
	mr_close(fr);
}

static void test_fr_rules(void **state)
{
	struct fixture *f = *state;
	NDK_MR *nr = mr_new(f->pd, FALSE), *frp = mr_new(f->pd, TRUE);
	struct sw_mr *fr = to_sw_mr(frp);
	NDK_LOGICAL_ADDRESS pa[NPAGES];
	const uint64_t P = PAGE_SIZE, base = 0x7f0000000000ull;
	const ULONG rw = NDK_OP_FLAG_ALLOW_REMOTE_WRITE;
	uint32_t tok0 = rtoken(frp), tok;
	void *addr;

	pages_of(pa, f->buf, NPAGES);
	/* Not initialised yet; not a fast-register MR. */
	assert_int_equal(sw_mr_fast_register(fr, pa, 1, 0, P, base, 0),
			 -EINVAL);
	assert_int_equal(
		sw_mr_fast_register(to_sw_mr(nr), pa, 1, 0, P, base, 0),
		-EINVAL);
	assert_int_equal(sw_mr_invalidate(to_sw_mr(nr)), -EINVAL);
	assert_int_equal(frp->Dispatch->NdkInitializeFastRegisterMr(
				 frp, 4, FALSE, NULL, NULL),
			 STATUS_SUCCESS);
	/* Page count. */
	assert_int_equal(sw_mr_fast_register(fr, pa, 0, 0, P, base, 0),
			 -EINVAL);
	assert_int_equal(sw_mr_fast_register(fr, pa, 5, 0, P, base, 0),
			 -EINVAL);
	assert_int_equal(sw_mr_fast_register(fr, NULL, 1, 0, P, base, 0),
			 -EINVAL);
	/* FBO and length. */
	assert_int_equal(sw_mr_fast_register(fr, pa, 2, P, 10, base, 0),
			 -EINVAL);
	assert_int_equal(sw_mr_fast_register(fr, pa, 2, 8, 0, base + 8, 0),
			 -EINVAL);
	assert_int_equal(
		sw_mr_fast_register(fr, pa, 2, 8, 2 * P - 7, base + 8, 0),
		-EINVAL);
	/* BaseVirtualAddress = FBO + n * PAGE_SIZE. */
	assert_int_equal(sw_mr_fast_register(fr, pa, 2, 8, 100, base, 0),
			 -EINVAL);
	assert_int_equal(sw_mr_fast_register(fr, pa, 2, 8, 100, base + 9, 0),
			 -EINVAL);
	assert_int_equal(sw_mr_fast_register(fr, pa, 2, 8, 100, 0, 0), -EINVAL);
	assert_int_equal(
		sw_mr_fast_register(fr, pa, 2, 8, P, UINT64_MAX - P + 9, 0),
		-EINVAL);
	/* Remote rights need RemoteAccess at initialisation. */
	assert_int_equal(sw_mr_fast_register(fr, pa, 2, 8, 100, base + 8,
					     NDK_OP_FLAG_ALLOW_REMOTE_READ),
			 -EACCES);
	assert_int_equal(sw_mr_fast_register(fr, pa, 2, 8, 100, base + 8, rw),
			 -EACCES);
	assert_int_equal(sw_mr_fast_register(fr, pa, 2, 8, 100, base + 8, 0x20),
			 -EINVAL);
	/* Nothing above became valid. */
	assert_int_equal(rtoken(frp), tok0);
	/* Exactly count * PAGE_SIZE - FBO bytes, local write. */
	assert_int_equal(
		sw_mr_fast_register(fr, pa, 2, 8, 2 * P - 8, base + 8,
				    NDK_OP_FLAG_ALLOW_LOCAL_WRITE |
					    NDK_OP_FLAG_SILENT_SUCCESS),
		0);
	tok = rtoken(frp);
	assert_int_not_equal(tok, tok0);
	assert_int_equal(sw_stag_index(tok), sw_stag_index(tok0));
	assert_int_equal(look(f, tok, pd_id(f->pd), base + 8, 2 * P - 8,
			      SW_ACCESS_LOCAL, &addr),
			 0);
	assert_ptr_equal(addr, f->buf + 8);
	assert_int_equal(look(f, tok, pd_id(f->pd), base + 2 * P - 1, 1,
			      SW_ACCESS_LOCAL_READ, &addr),
			 0);
	assert_ptr_equal(addr, f->buf + 2 * P - 1);
	assert_int_equal(look(f, tok, pd_id(f->pd), base + 7, 1,
			      SW_ACCESS_LOCAL_READ, NULL),
			 -ERANGE);
	assert_int_equal(look(f, tok, pd_id(f->pd), base + 8, 1,
			      SW_ACCESS_REMOTE_READ, NULL),
			 -EACCES);
	/* Fast-registering a valid MR needs an invalidate first. */
	assert_int_equal(sw_mr_fast_register(fr, pa, 1, 0, P, base, 0), -EBUSY);
	assert_int_equal(sw_mr_invalidate(fr), 0);
	assert_int_equal(sw_mr_invalidate(fr), 0);
	assert_int_equal(look(f, tok, pd_id(f->pd), base + 8, 1,
			      SW_ACCESS_LOCAL_READ, NULL),
			 -ENOENT);
	/* BaseVirtualAddress 0 is allowed with FBO 0. */
	assert_int_equal(sw_mr_fast_register(fr, pa, 1, 0, P, 0, 0), 0);
	assert_int_not_equal(rtoken(frp), tok);
	assert_int_equal(look(f, rtoken(frp), pd_id(f->pd), 0, P,
			      SW_ACCESS_LOCAL_READ, &addr),
			 0);
	assert_ptr_equal(addr, f->buf);
	assert_int_equal(sw_mr_invalidate(fr), 0);
	/* Unaligned and unmapped pages. */
	pa[1].QuadPart += 1;
	assert_int_equal(sw_mr_fast_register(fr, pa, 2, 0, 2 * P, base, 0),
			 -EINVAL);
	pa[1].QuadPart = 0;
	assert_int_equal(sw_mr_fast_register(fr, pa, 2, 0, 2 * P, base, 0),
			 -EINVAL);
	{
		char *hole = mmap(NULL, P, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		assert_true(hole != MAP_FAILED);
		munmap(hole, P);
		pa[1].QuadPart = (LONGLONG)U(hole);
		assert_int_equal(
			sw_mr_fast_register(fr, pa, 2, 0, 2 * P, base, 0),
			-EFAULT);
	}
	/* Pages past FBO + Length are not used, so not checked. */
	assert_int_equal(sw_mr_fast_register(fr, pa, 2, 0, P, base, 0), 0);
	assert_int_equal(sw_mr_invalidate(fr), 0);
	mr_close(nr);
	mr_close(frp);
}

/* A page list that is not contiguous in this process. */
static void test_fr_scattered(void **state)
{
	struct fixture *f = *state;
	NDK_MR *frp = mr_new(f->pd, TRUE);
	struct sw_mr *fr = to_sw_mr(frp);
	NDK_LOGICAL_ADDRESS pa[4];
	const uint64_t P = PAGE_SIZE, base = 0x100000000ull + 100;
	struct sw_stag_ref ref;
	char msg[2 * PAGE_SIZE], back[sizeof(msg)];
	uint64_t contig;
	void *addr;
	size_t i;

	assert_int_equal(frp->Dispatch->NdkInitializeFastRegisterMr(
				 frp, 4, TRUE, NULL, NULL),
			 STATUS_SUCCESS);
	/* Pages 5, 2, 3, 9: 2 and 3 are adjacent. */
	pa[0].QuadPart = (LONGLONG)U(f->buf + 5 * P);
	pa[1].QuadPart = (LONGLONG)U(f->buf + 2 * P);
	pa[2].QuadPart = (LONGLONG)U(f->buf + 3 * P);
	pa[3].QuadPart = (LONGLONG)U(f->buf + 9 * P);
	assert_int_equal(
		sw_mr_fast_register(fr, pa, 4, 100, 4 * P - 100, base,
				    NDK_OP_FLAG_ALLOW_REMOTE_WRITE |
					    NDK_OP_FLAG_ALLOW_REMOTE_READ),
		0);
	assert_int_equal(look(f, rtoken(frp), pd_id(f->pd), base + P - 100, 1,
			      SW_ACCESS_REMOTE_READ, &addr),
			 0);
	assert_ptr_equal(addr, f->buf + 2 * P);
	assert_int_equal(sw_stag_lookup(sw_stags(f->ad), rtoken(frp),
					pd_id(f->pd), base + 50, sizeof(msg),
					SW_ACCESS_REMOTE_WRITE, &ref, &addr),
			 0);
	assert_ptr_equal(addr, f->buf + 5 * P + 150);
	assert_ptr_equal(sw_stag_ref_map(&ref, 0, &contig),
			 f->buf + 5 * P + 150);
	assert_int_equal(contig, P - 150);
	/* Pages 2 and 3 form one run. */
	assert_ptr_equal(sw_stag_ref_map(&ref, P - 150, &contig),
			 f->buf + 2 * P);
	assert_int_equal(contig, P + 150);
	for (i = 0; i < sizeof(msg); i++)
		msg[i] = (char)(i * 7 + 1);
	assert_int_equal(sw_stag_ref_write(&ref, 0, msg, sizeof(msg)), 0);
	assert_memory_equal(f->buf + 5 * P + 150, msg, P - 150);
	assert_memory_equal(f->buf + 2 * P, msg + P - 150, P + 150);
	assert_int_equal(sw_stag_ref_read(&ref, 0, back, sizeof(back)), 0);
	assert_memory_equal(back, msg, sizeof(msg));
	sw_stag_put(&ref);
	/* Remote invalidation (Send with Invalidate) of an FRMR. */
	assert_int_equal(sw_stag_invalidate(sw_stags(f->ad), rtoken(frp),
					    pd_id(f->pd) + 1),
			 -EPERM);
	assert_int_equal(sw_stag_invalidate(sw_stags(f->ad), rtoken(frp) ^ 0x1,
					    pd_id(f->pd)),
			 -ENOENT);
	assert_int_equal(
		sw_stag_invalidate(sw_stags(f->ad), rtoken(frp), pd_id(f->pd)),
		0);
	assert_int_equal(look(f, rtoken(frp), pd_id(f->pd), base, 1,
			      SW_ACCESS_REMOTE_READ, NULL),
			 -ENOENT);
	assert_int_equal(
		sw_stag_invalidate(sw_stags(f->ad), rtoken(frp), pd_id(f->pd)),
		-ENOENT);
	/* Invalidated remotely: fast-register works again. */
	assert_int_equal(sw_mr_fast_register(fr, pa, 1, 0, P, 0, 0), 0);
	mr_close(frp);
}

static void test_normal_mr_not_invalidatable(void **state)
{
	struct fixture *f = *state;
	NDK_MR *mr = mr_new(f->pd, FALSE);

	assert_int_equal(reg(mr, f->buf, PAGE_SIZE, PAGE_SIZE, 0x7),
			 STATUS_SUCCESS);
	assert_int_equal(
		sw_stag_invalidate(sw_stags(f->ad), rtoken(mr), pd_id(f->pd)),
		-EOPNOTSUPP);
	assert_int_equal(sw_stag_fault_of(-EOPNOTSUPP),
			 SW_STAG_FAULT_NO_INVALIDATE);
	assert_int_equal(look(f, rtoken(mr), pd_id(f->pd), U(f->buf), 1,
			      SW_ACCESS_REMOTE_READ, NULL),
			 0);
	mr_close(mr);
}

/* ------------------------------------------------------------------ */
/* Memory windows                                                     */

static void test_mw_bind_rules(void **state)
{
	struct fixture *f = *state;
	NDK_MR *mrp = mr_new(f->pd, FALSE), *wrp = mr_new(f->pd, FALSE);
	NDK_MW *mwp = mw_new(f->pd);
	struct sw_mr *mr = to_sw_mr(mrp), *wr = to_sw_mr(wrp);
	struct sw_mw *mw = to_sw_mw(mwp);
	NDK_PD *pd2 = NULL;
	NDK_MW *other;
	const ULONG R = NDK_OP_FLAG_ALLOW_REMOTE_READ;
	const ULONG W = NDK_OP_FLAG_ALLOW_REMOTE_WRITE;
	uint64_t b = U(f->buf), P = PAGE_SIZE;
	uint32_t pd = pd_id(f->pd), t0, t1, t2;
	void *addr;

	assert_int_equal(mwp->Header.ObjectType, NdkObjectTypeMw);
	t0 = mwp->Dispatch->NdkGetRemoteTokenFromMw(mwp);
	assert_int_not_equal(sw_stag_index(t0), 0);
	/* An unregistered MR cannot be bound. */
	assert_int_equal(sw_mw_bind(mw, mr, b, 10, R), -ENOENT);
	/* MR with remote read only (no local write). */
	assert_int_equal(reg(mrp, f->buf, 4 * PAGE_SIZE, 4 * P, 0x2),
			 STATUS_SUCCESS);
	assert_int_equal(sw_mw_bind(mw, mr, b, 10, W), -EACCES);
	assert_int_equal(sw_mw_bind(mw, mr, b, 10, R | W), -EACCES);
	assert_int_equal(sw_mw_bind(mw, mr, b, 10, 0x20), -EINVAL);
	/* Window outside or overrunning the MR. */
	assert_int_equal(sw_mw_bind(mw, mr, b - 1, 10, R), -ERANGE);
	assert_int_equal(sw_mw_bind(mw, mr, b + 4 * P, 0, R), -ERANGE);
	assert_int_equal(sw_mw_bind(mw, mr, b + 4 * P - 10, 11, R), -ERANGE);
	assert_int_equal(sw_mw_bind(mw, mr, b + 10, UINT64_MAX, R),
			 -EINVAL); /* > MaxWindowSize */
	assert_int_equal(t0, mwp->Dispatch->NdkGetRemoteTokenFromMw(mwp));
	assert_false(ndk_obj_is_linked(&mw->obj, &mr->base.obj));
	/* A good bind: new token, MR becomes the MW's antecedent. */
	assert_int_equal(sw_mw_bind(mw, mr, b + P, 2 * P, R), 0);
	t1 = mwp->Dispatch->NdkGetRemoteTokenFromMw(mwp);
	assert_int_not_equal(t1, t0);
	assert_int_equal(sw_stag_index(t1), sw_stag_index(t0));
	assert_true(ndk_obj_is_linked(&mw->obj, &mr->base.obj));
	assert_int_equal(
		look(f, t1, pd, b + P, 2 * P, SW_ACCESS_REMOTE_READ, &addr), 0);
	assert_ptr_equal(addr, f->buf + P);
	/* Window bounds, not the MR's. */
	assert_int_equal(
		look(f, t1, pd, b + P - 1, 1, SW_ACCESS_REMOTE_READ, NULL),
		-ERANGE);
	assert_int_equal(
		look(f, t1, pd, b + 3 * P, 1, SW_ACCESS_REMOTE_READ, NULL),
		-ERANGE);
	assert_int_equal(
		look(f, t1, pd, b + P, 1, SW_ACCESS_REMOTE_WRITE, NULL),
		-EACCES);
	/* No local access through a window. */
	assert_int_equal(look(f, t1, pd, b + P, 1, SW_ACCESS_LOCAL_READ, NULL),
			 -EACCES);
	assert_int_equal(
		look(f, t1, pd + 1, b + P, 1, SW_ACCESS_REMOTE_READ, NULL),
		-EPERM);
	/* Rebinding to a writable MR: old token dies, links move. */
	assert_int_equal(reg(wrp, f->buf, PAGE_SIZE, P, 0x1), STATUS_SUCCESS);
	assert_int_equal(sw_mw_bind(mw, wr, b, P, R | W), 0);
	t2 = mwp->Dispatch->NdkGetRemoteTokenFromMw(mwp);
	assert_int_not_equal(t2, t1);
	assert_int_equal(look(f, t1, pd, b + P, 1, SW_ACCESS_REMOTE_READ, NULL),
			 -ENOENT);
	assert_int_equal(
		look(f, t2, pd, b + P - 1, 1, SW_ACCESS_REMOTE_WRITE, NULL), 0);
	assert_true(ndk_obj_is_linked(&mw->obj, &wr->base.obj));
	assert_false(ndk_obj_is_linked(&mw->obj, &mr->base.obj));
	/* The window dies with its MR's registration, even re-registered. */
	assert_int_equal(dereg(wrp), STATUS_SUCCESS);
	assert_int_equal(look(f, t2, pd, b, 1, SW_ACCESS_REMOTE_READ, NULL),
			 -ENOENT);
	assert_int_equal(reg(wrp, f->buf, PAGE_SIZE, P, 0x1), STATUS_SUCCESS);
	assert_int_equal(look(f, t2, pd, b, 1, SW_ACCESS_REMOTE_READ, NULL),
			 -ENOENT);
	/* A failed bind leaves the links alone. */
	assert_int_equal(sw_mw_bind(mw, mr, b, 1, W), -EACCES);
	assert_true(ndk_obj_is_linked(&mw->obj, &wr->base.obj));
	assert_false(ndk_obj_is_linked(&mw->obj, &mr->base.obj));
	/* Local and remote invalidation of a window. */
	assert_int_equal(sw_mw_bind(mw, wr, b, 16, W), 0);
	t2 = sw_mw_token(mw);
	assert_int_equal(look(f, t2, pd, b, 16, SW_ACCESS_REMOTE_WRITE, NULL),
			 0);
	assert_int_equal(sw_mw_invalidate(mw), 0);
	assert_int_equal(look(f, t2, pd, b, 1, SW_ACCESS_REMOTE_WRITE, NULL),
			 -ENOENT);
	assert_int_equal(sw_mw_bind(mw, wr, b, 16, W), 0);
	t2 = sw_mw_token(mw);
	assert_int_equal(sw_stag_invalidate(sw_stags(f->ad), t2, pd), 0);
	assert_int_equal(look(f, t2, pd, b, 1, SW_ACCESS_REMOTE_WRITE, NULL),
			 -ENOENT);
	/* Zero-length window. */
	assert_int_equal(sw_mw_bind(mw, wr, b + 5, 0, R), 0);
	assert_int_equal(look(f, sw_mw_token(mw), pd, b + 5, 0,
			      SW_ACCESS_REMOTE_READ, NULL),
			 0);
	assert_int_equal(look(f, sw_mw_token(mw), pd, b + 5, 1,
			      SW_ACCESS_REMOTE_READ, NULL),
			 -ERANGE);
	/* An MW of another PD. */
	assert_int_equal(f->a->Dispatch->NdkCreatePd(f->a, NULL, NULL, &pd2),
			 STATUS_SUCCESS);
	other = mw_new(pd2);
	assert_int_equal(sw_mw_bind(to_sw_mw(other), wr, b, 1, R), -EPERM);
	mw_close(other);
	assert_int_equal(pd2->Dispatch->NdkClosePd(&pd2->Header, NULL, NULL),
			 STATUS_SUCCESS);
	mw_close(mwp);
	mr_close(mrp);
	mr_close(wrp);
}

/* A window onto a fast-registered, scattered MR. */
static void test_mw_on_frmr(void **state)
{
	struct fixture *f = *state;
	NDK_MR *frp = mr_new(f->pd, TRUE);
	NDK_MW *mwp = mw_new(f->pd);
	NDK_LOGICAL_ADDRESS pa[2];
	const uint64_t P = PAGE_SIZE, base = 0x5000;
	struct sw_stag_ref ref;
	void *addr;

	assert_int_equal(frp->Dispatch->NdkInitializeFastRegisterMr(
				 frp, 2, TRUE, NULL, NULL),
			 STATUS_SUCCESS);
	pa[0].QuadPart = (LONGLONG)U(f->buf + 7 * P);
	pa[1].QuadPart = (LONGLONG)U(f->buf + 1 * P);
	assert_int_equal(sw_mr_fast_register(to_sw_mr(frp), pa, 2, 0, 2 * P,
					     base,
					     NDK_OP_FLAG_ALLOW_LOCAL_WRITE),
			 0);
	assert_int_equal(sw_mw_bind(to_sw_mw(mwp), to_sw_mr(frp), base + P - 2,
				    4, NDK_OP_FLAG_ALLOW_REMOTE_WRITE),
			 0);
	assert_int_equal(sw_stag_lookup(sw_stags(f->ad),
					sw_mw_token(to_sw_mw(mwp)),
					pd_id(f->pd), base + P - 2, 4,
					SW_ACCESS_REMOTE_WRITE, &ref, &addr),
			 0);
	assert_ptr_equal(addr, f->buf + 8 * P - 2);
	assert_int_equal(sw_stag_ref_write(&ref, 0, "abcd", 4), 0);
	sw_stag_put(&ref);
	assert_memory_equal(f->buf + 8 * P - 2, "ab", 2);
	assert_memory_equal(f->buf + 1 * P, "cd", 2);
	/* Invalidating the FRMR kills the window. */
	assert_int_equal(sw_mr_invalidate(to_sw_mr(frp)), 0);
	assert_int_equal(look(f, sw_mw_token(to_sw_mw(mwp)), pd_id(f->pd),
			      base + P - 2, 1, SW_ACCESS_REMOTE_WRITE, NULL),
			 -ENOENT);
	mw_close(mwp);
	mr_close(frp);
}

static atomic_int closes;

static void close_done(PVOID ctx)
{
	atomic_fetch_add(&closes, *(int *)ctx);
}

static bool closes_are(void *arg)
{
	return atomic_load(&closes) == (int)(intptr_t)arg;
}

/* NdkBind makes the MR an antecedent of the MW (NDKPI Terminology). */
static void test_mr_close_pends_on_bound_mw(void **state)
{
	struct fixture *f = *state;
	NDK_MR *mrp = mr_new(f->pd, FALSE);
	NDK_MW *mwp = mw_new(f->pd);
	static int one = 1;
	uint32_t tok;

	atomic_store(&closes, 0);
	assert_int_equal(reg(mrp, f->buf, PAGE_SIZE, PAGE_SIZE, 0x7),
			 STATUS_SUCCESS);
	tok = rtoken(mrp);
	assert_int_equal(sw_mw_bind(to_sw_mw(mwp), to_sw_mr(mrp), U(f->buf),
				    PAGE_SIZE, NDK_OP_FLAG_ALLOW_REMOTE_READ),
			 0);
	assert_int_equal(
		mrp->Dispatch->NdkCloseMr(&mrp->Header, close_done, &one),
		STATUS_PENDING);
	/* The close deregistered at once: memory no longer reachable. */
	assert_int_equal(look(f, tok, pd_id(f->pd), U(f->buf), 1,
			      SW_ACCESS_LOCAL_READ, NULL),
			 -ENOENT);
	assert_int_equal(look(f, sw_mw_token(to_sw_mw(mwp)), pd_id(f->pd),
			      U(f->buf), 1, SW_ACCESS_REMOTE_READ, NULL),
			 -ENOENT);
	tu_sleep_ms(20);
	assert_int_equal(atomic_load(&closes), 0);
	mw_close(mwp);
	assert_true(tu_wait_until(closes_are, (void *)(intptr_t)1, 5000));
}

/* PD closed before its MR: the PD's close completes after the MR's. */
static void test_close_pd_before_mr(void **state)
{
	struct fixture *f = *state;
	NDK_MR *mrp = mr_new(f->pd, FALSE);
	NDK_MW *mwp = mw_new(f->pd);
	static int ten = 10;

	atomic_store(&closes, 0);
	assert_int_equal(reg(mrp, f->buf, PAGE_SIZE, PAGE_SIZE, 0x1),
			 STATUS_SUCCESS);
	assert_int_equal(
		f->pd->Dispatch->NdkClosePd(&f->pd->Header, close_done, &ten),
		STATUS_PENDING);
	f->pd = NULL;
	mw_close(mwp);
	tu_sleep_ms(20);
	assert_int_equal(atomic_load(&closes), 0);
	/* Still usable until closed. */
	assert_int_equal(dereg(mrp), STATUS_SUCCESS);
	mr_close(mrp);
	assert_true(tu_wait_until(closes_are, (void *)(intptr_t)10, 5000));
}

/* Closing the adapter with MRs, MWs and registrations left open. */
static void test_adapter_close_cleans_up(void **state)
{
	struct fixture *f = *state;
	NDK_MR *mrp = mr_new(f->pd, FALSE);
	NDK_MR *frp = mr_new(f->pd, TRUE);
	NDK_MW *mwp = mw_new(f->pd);

	assert_int_equal(reg(mrp, f->buf, PAGE_SIZE, PAGE_SIZE, 0x7),
			 STATUS_SUCCESS);
	assert_int_equal(frp->Dispatch->NdkInitializeFastRegisterMr(
				 frp, 16, TRUE, NULL, NULL),
			 STATUS_SUCCESS);
	assert_int_equal(sw_mw_bind(to_sw_mw(mwp), to_sw_mr(mrp), U(f->buf), 8,
				    NDK_OP_FLAG_ALLOW_REMOTE_WRITE),
			 0);
	f->pd = NULL; /* teardown's NdkCloseAdapter closes everything */
}

/* The table itself: growth past one chunk, FIFO reuse, never index 0. */
static void test_table_alloc(void **state)
{
	struct sw_stag_table *t = sw_stag_table_create(NULL);
	static uint32_t s[3000];
	uint32_t again;
	unsigned int i;

	(void)state;
	assert_non_null(t);
	for (i = 0; i < ARRAY_SIZE(s); i++) {
		assert_int_equal(sw_stag_alloc(t, SW_STAG_MR, 1, &s[i]), 0);
		assert_int_not_equal(sw_stag_index(s[i]), 0);
		if (i)
			assert_int_not_equal(sw_stag_index(s[i]),
					     sw_stag_index(s[i - 1]));
		assert_false(sw_stag_is_valid(t, s[i]));
	}
	sw_stag_free(t, s[0]);
	/* A freed index goes to the back of the queue. */
	assert_int_equal(sw_stag_alloc(t, SW_STAG_MR, 1, &again), 0);
	assert_int_not_equal(sw_stag_index(again), sw_stag_index(s[0]));
	sw_stag_free(t, again);
	for (i = 1; i < ARRAY_SIZE(s); i++)
		sw_stag_free(t, s[i]);
	/* Validation rules of the owner side. */
	{
		struct sw_stag_mem m = { .base_va = 0x1000,
					 .length = 10,
					 .access = SW_ACCESS_LOCAL_READ,
					 .host = 0x1000 };
		uint32_t st, mw, bogus = sw_stag_make(SW_STAG_MAX_INDEX, 0);

		assert_int_equal(sw_stag_validate(t, &bogus, &m), -ENOENT);
		assert_int_equal(sw_stag_alloc(t, SW_STAG_MW, 1, &mw), 0);
		assert_int_equal(sw_stag_validate(t, &mw, &m), -ENOENT);
		assert_int_equal(sw_stag_alloc(t, SW_STAG_MR, 1, &st), 0);
		assert_int_equal(sw_stag_validate(t, &st, &m), 0);
		assert_true(sw_stag_is_valid(t, st));
		assert_int_equal(sw_stag_validate(t, &st, &m), -EBUSY);
		assert_int_equal(sw_stag_bind(t, &mw, st, 0x1000, 1,
					      SW_ACCESS_LOCAL_READ),
				 -EINVAL);
		assert_int_equal(sw_stag_bind(t, &st, st, 0x1000, 1,
					      SW_ACCESS_REMOTE_READ),
				 -EINVAL);
		assert_int_equal(sw_stag_bind(t, &mw, mw, 0x1000, 1,
					      SW_ACCESS_REMOTE_READ),
				 -ENOENT);
		assert_int_equal(sw_stag_bind(t, &mw, st, UINT64_MAX, 2,
					      SW_ACCESS_REMOTE_READ),
				 -EOVERFLOW);
		assert_true(sw_stag_revoke(t, st));
		assert_false(sw_stag_revoke(t, st));
		sw_stag_free(t, st);
		sw_stag_free(t, mw);
		assert_false(sw_stag_is_valid(t, st));
	}
	sw_stag_table_destroy(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_create_close, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_privileged_token, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_register_flags, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_token_changes, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_register_errors, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_chained_mdl, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_unmapped, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bounds, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pd_mismatch, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_pinned_access, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_dereg_waits_for_pins,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_concurrent_lookup, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_fr_init, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fr_rules, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fr_scattered, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			test_normal_mr_not_invalidatable, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mw_bind_rules, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_mw_on_frmr, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_mr_close_pends_on_bound_mw,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_close_pd_before_mr, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_adapter_close_cleans_up,
						setup, teardown),
		cmocka_unit_test(test_table_alloc),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
