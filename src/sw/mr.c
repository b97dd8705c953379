/* SPDX-License-Identifier: MIT */
/* Memory regions: create, register, fast-register, tokens (docs/ndk.md,
 * Memory tokens). */
#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
#include "front/adapter.h"
#include "front/mr.h"
#include "sw/adapter.h"
#include "sw/sw.h"
#include "sw/mr.h"
#include "sw/pd.h"
#include "sw/stag.h"

#define PAGE_MASK ((uint64_t)PAGE_SIZE - 1)

/* The front end's access bits (front/mr.h) as STag access. */
static uint32_t sw_access(unsigned int a)
{
	return SW_ACCESS_LOCAL_READ |
	       (a & NDK_ACCESS_LOCAL_WRITE ? SW_ACCESS_LOCAL_WRITE : 0) |
	       (a & NDK_ACCESS_REMOTE_READ ? SW_ACCESS_REMOTE_READ : 0) |
	       (a & NDK_ACCESS_REMOTE_WRITE ? SW_ACCESS_REMOTE_WRITE : 0);
}

int sw_access_from_op_flags(ULONG flags, uint32_t *access)
{
	unsigned int a;

	if (ndk_access_from_op_flags(flags, &a))
		return -EINVAL;
	*access = sw_access(a);
	return 0;
}

uint32_t sw_mr_fr_max_pages(const struct ndk_adapter *ad)
{
	uint64_t n = ad->info.MaxRegistrationSize / PAGE_SIZE;

	return n < SW_MR_FR_MAX_PAGES ? (uint32_t)n : SW_MR_FR_MAX_PAGES;
}

uint32_t sw_mr_token(struct sw_mr *mr)
{
	return atomic_load_explicit(&mr->stag, memory_order_acquire);
}

static void mr_close_begin(struct ndk_obj *obj)
{
	struct sw_mr *mr = container_of(obj, struct sw_mr, obj);

	/*
	 * Closing deregisters: the consumer may free the memory as soon as
	 * the close completes, even while the close pends on bound MWs.
	 */
	sw_stag_revoke(mr->stags, sw_mr_token(mr));
}

static void mr_destroy(struct ndk_obj *obj)
{
	struct sw_mr *mr = container_of(obj, struct sw_mr, obj);

	if (mr->has_stag)
		sw_stag_free(mr->stags, sw_mr_token(mr));
	ndk_lock_destroy(&mr->lock);
	free(mr->pages);
	free(mr);
}

static const struct ndk_obj_ops mr_ops = {
	.type = NdkObjectTypeMr,
	.name = "mr",
	.close_begin = mr_close_begin,
	.destroy = mr_destroy,
};

/* Requests complete inline: no callback is ever made
 * (NDK_FN_REQUEST_COMPLETION). */
static NTSTATUS mr_register(NDK_MR *pNdkMr, MDL *Mdl, SIZE_T Length,
			    ULONG Flags,
			    NDK_FN_REQUEST_COMPLETION RequestCompletion,
			    PVOID RequestContext)
{
	struct sw_mr *mr = to_sw_mr(pNdkMr);
	struct sw_stag_mem m = { 0 };
	NTSTATUS status = STATUS_SUCCESS;
	unsigned int access;
	uint32_t stag;
	uint64_t va;

	/* NdkRegisterMr is for MRs created with FastRegister FALSE only. */
	if (mr->fast)
		return STATUS_INVALID_DEVICE_REQUEST;
	ndk_lock(&mr->lock);
	if (mr->registered || !ndk_obj_is_open(&mr->obj)) {
		status = STATUS_INVALID_DEVICE_STATE;
		goto out;
	}
	status = ndk_mr_register_args(mr->obj.adapter, Mdl, Length, Flags, &va,
				      &access);
	if (status)
		goto out;
	m.base_va = va;
	m.length = Length;
	m.access = sw_access(access);
	m.host = (uintptr_t)va;
	stag = sw_mr_token(mr);
	if (sw_stag_validate(mr->stags, &stag, &m)) {
		status = STATUS_INVALID_DEVICE_STATE;
		goto out;
	}
	atomic_store_explicit(&mr->stag, stag, memory_order_release);
	mr->registered = true;
out:
	ndk_unlock(&mr->lock);
	return status;
}

static NTSTATUS mr_deregister(NDK_MR *pNdkMr,
			      NDK_FN_REQUEST_COMPLETION RequestCompletion,
			      PVOID RequestContext)
{
	struct sw_mr *mr = to_sw_mr(pNdkMr);
	NTSTATUS status = STATUS_SUCCESS;

	ndk_lock(&mr->lock);
	if (mr->fast) {
		/* Tolerated on a fast-register MR: drops its registration. */
		sw_stag_revoke(mr->stags, sw_mr_token(mr));
	} else if (!mr->registered) {
		status = STATUS_INVALID_DEVICE_STATE;
	} else {
		/* Returns once no access to the memory is in flight. */
		sw_stag_revoke(mr->stags, sw_mr_token(mr));
		mr->registered = false;
	}
	ndk_unlock(&mr->lock);
	return status;
}

static NTSTATUS mr_init_fast_register(
	NDK_MR *pNdkMr, ULONG AdapterPageCount, BOOLEAN RemoteAccess,
	NDK_FN_REQUEST_COMPLETION RequestCompletion, PVOID RequestContext)
{
	struct sw_mr *mr = to_sw_mr(pNdkMr);
	NTSTATUS status = STATUS_SUCCESS;

	if (!mr->fast)
		return STATUS_INVALID_DEVICE_REQUEST;
	if (!AdapterPageCount ||
	    AdapterPageCount > sw_mr_fr_max_pages(mr->obj.adapter))
		return STATUS_IMPLEMENTATION_LIMIT;
	ndk_lock(&mr->lock);
	/* Re-initialising drops the current fast registration, if any. */
	sw_stag_revoke(mr->stags, sw_mr_token(mr));
	if (mr->pages_cap < AdapterPageCount) {
		uint64_t *p = malloc(AdapterPageCount * sizeof(*p));

		if (!p) {
			status = STATUS_INSUFFICIENT_RESOURCES;
			goto out;
		}
		free(mr->pages);
		mr->pages = p;
		mr->pages_cap = AdapterPageCount;
	}
	mr->fr_max_pages = AdapterPageCount;
	mr->fr_remote = RemoteAccess != FALSE;
	mr->fr_ready = true;
out:
	ndk_unlock(&mr->lock);
	return status;
}

static UINT32 mr_get_token(NDK_MR *pNdkMr)
{
	return sw_mr_token(to_sw_mr(pNdkMr));
}

static const NDK_MR_DISPATCH mr_dispatch = {
	.NdkCloseMr = ndk_close_object,
	.NdkQueryExtension = ndk_query_extension,
	.NdkRegisterMr = mr_register,
	.NdkDeregisterMr = mr_deregister,
	.NdkInitializeFastRegisterMr = mr_init_fast_register,
	.NdkGetRemoteTokenFromMr = mr_get_token,
	.NdkGetLocalTokenFromMr = mr_get_token,
};

NTSTATUS sw_create_mr(struct ndk_obj *pd_obj, bool fast_register,
		      NDK_MR **ppNdkMr)
{
	struct sw_pd *pd = container_of(pd_obj, struct sw_pd, obj);
	struct ndk_adapter *ad = pd->obj.adapter;
	struct ndk_obj *antes[1];
	struct sw_mr *mr;
	uint32_t stag;
	NTSTATUS status;

	antes[0] = &pd->obj;
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return STATUS_INSUFFICIENT_RESOURCES;
	ndk_lock_init(&mr->lock, NDK_LOCK_MR);
	mr->stags = sw_stags(ad);
	mr->pd_id = pd->id;
	mr->fast = fast_register;
	/* The index is taken now so registration cannot run out of them. */
	if (sw_stag_alloc(sw_stags(ad), mr->fast ? SW_STAG_FRMR : SW_STAG_MR,
			  pd->id, &stag)) {
		ndk_lock_destroy(&mr->lock);
		free(mr);
		return STATUS_INSUFFICIENT_RESOURCES;
	}
	atomic_init(&mr->stag, stag);
	mr->has_stag = true;
	status = ndk_obj_setup(&mr->obj, ad, &mr_ops, &mr_dispatch, antes, 1);
	if (status)
		return status;
	*ppNdkMr = &mr->obj.pub.mr;
	return STATUS_SUCCESS;
}

/* Checks that every page used is aligned and mapped, run by run. */
static int check_pages(const NDK_LOGICAL_ADDRESS *pages, uint32_t n,
		       bool *contig)
{
	uint32_t i, run = 0;
	int err;

	*contig = true;
	for (i = 0; i < n; i++) {
		uint64_t pa = (uint64_t)pages[i].QuadPart;

		if (!pa || (pa & PAGE_MASK))
			return -EINVAL;
		if (i && pa != (uint64_t)pages[i - 1].QuadPart + PAGE_SIZE) {
			*contig = false;
			err = ndk_mem_check_mapped(pages[run].QuadPart,
						   (uint64_t)(i - run) *
							   PAGE_SIZE);
			if (err)
				return err;
			run = i;
		}
	}
	return ndk_mem_check_mapped(pages[run].QuadPart,
				    (uint64_t)(n - run) * PAGE_SIZE);
}

int sw_mr_fast_register(struct sw_mr *mr, const NDK_LOGICAL_ADDRESS *pages,
			uint32_t count, uint32_t fbo, uint64_t length,
			uint64_t base_va, ULONG flags)
{
	struct sw_stag_mem m = { 0 };
	uint32_t access, need, i, stag;
	bool contig;
	int err;

	if (!mr || !mr->fast || !pages)
		return -EINVAL;
	if (sw_access_from_op_flags(flags, &access))
		return -EINVAL;
	ndk_lock(&mr->lock);
	err = -EINVAL;
	if (!mr->fr_ready || count > mr->fr_max_pages ||
	    ndk_fr_geometry(count, fbo, length, base_va, &need))
		goto out;
	if ((access & SW_ACCESS_REMOTE) && !mr->fr_remote) {
		err = -EACCES;
		goto out;
	}
	err = check_pages(pages, need, &contig);
	if (err)
		goto out;
	/* As in RDMA verbs, fast-register needs an invalid STag. */
	if (sw_stag_is_valid(mr->stags, sw_mr_token(mr))) {
		err = -EBUSY;
		goto out;
	}
	/* Drain any invalidation still in flight before the list changes. */
	sw_stag_revoke(mr->stags, sw_mr_token(mr));
	m.base_va = base_va;
	m.length = length;
	m.access = access;
	if (contig) {
		/* Pages from one LAM are contiguous: translate directly. */
		m.host = (uintptr_t)pages[0].QuadPart + fbo;
	} else {
		for (i = 0; i < need; i++)
			mr->pages[i] = (uint64_t)pages[i].QuadPart;
		m.pages = mr->pages;
		m.npages = need;
		m.fbo = fbo;
	}
	stag = sw_mr_token(mr);
	err = sw_stag_validate(mr->stags, &stag, &m);
	if (!err)
		atomic_store_explicit(&mr->stag, stag, memory_order_release);
out:
	ndk_unlock(&mr->lock);
	return err;
}

int sw_mr_invalidate(struct sw_mr *mr)
{
	if (!mr || !mr->fast)
		return -EINVAL;
	ndk_lock(&mr->lock);
	sw_stag_revoke(mr->stags, sw_mr_token(mr));
	ndk_unlock(&mr->lock);
	return 0;
}
