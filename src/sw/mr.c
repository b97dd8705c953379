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

uint32_t sw_mr_token(struct sw_mr *mr)
{
	return atomic_load_explicit(&mr->stag, memory_order_acquire);
}

static void mr_close_begin(struct ndk_obj *obj)
{
	struct sw_mr *mr = container_of(obj, struct sw_mr, base.obj);

	/*
	 * Closing deregisters: the consumer may free the memory as soon as
	 * the close completes, even while the close pends on bound MWs.
	 */
	sw_stag_revoke(mr->stags, sw_mr_token(mr));
}

static void mr_destroy(struct ndk_obj *obj)
{
	struct sw_mr *mr = container_of(obj, struct sw_mr, base.obj);

	if (mr->has_stag)
		sw_stag_free(mr->stags, sw_mr_token(mr));
	ndk_mr_fini(&mr->base);
	free(mr->pages);
	free(mr);
}

static const struct ndk_obj_ops mr_ops = {
	.type = NdkObjectTypeMr,
	.name = "mr",
	.close_begin = mr_close_begin,
	.destroy = mr_destroy,
};

/* NdkRegisterMr's registration (front/mr.c checked it; mr->lock held):
 * the MR's STag comes to name the range. */
NTSTATUS sw_mr_register(struct ndk_mr *base, uint64_t va, uint64_t len,
			unsigned int access)
{
	struct sw_mr *mr = container_of(base, struct sw_mr, base);
	struct sw_stag_mem m = {
		.base_va = va,
		.length = len,
		.access = sw_access(access),
		.host = (uintptr_t)va,
	};
	uint32_t stag = sw_mr_token(mr);
	int err = sw_stag_validate(mr->stags, &stag, &m);

	if (err)
		return err == -EAGAIN ? STATUS_INSUFFICIENT_RESOURCES
				      : STATUS_INVALID_DEVICE_STATE;
	atomic_store_explicit(&mr->stag, stag, memory_order_release);
	return STATUS_SUCCESS;
}

/* Returns once no access to the memory is in flight. */
void sw_mr_deregister(struct ndk_mr *base)
{
	struct sw_mr *mr = container_of(base, struct sw_mr, base);

	sw_stag_revoke(mr->stags, sw_mr_token(mr));
}

NTSTATUS sw_mr_fr_init(struct ndk_mr *base, ULONG count)
{
	struct sw_mr *mr = container_of(base, struct sw_mr, base);
	uint64_t *p;

	sw_stag_revoke(mr->stags, sw_mr_token(mr));
	if (mr->pages_cap >= count)
		return STATUS_SUCCESS;
	p = malloc(count * sizeof(*p));
	if (!p)
		return STATUS_INSUFFICIENT_RESOURCES;
	free(mr->pages);
	mr->pages = p;
	mr->pages_cap = count;
	return STATUS_SUCCESS;
}

UINT32 sw_mr_get_token(struct ndk_mr *base, bool remote)
{
	(void)remote; /* one STag serves both */
	return sw_mr_token(container_of(base, struct sw_mr, base));
}

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
	ndk_mr_init(&mr->base, fast_register);
	mr->stags = sw_stags(ad);
	mr->pd_id = pd->id;
	/* The index is taken now so registration cannot run out of them. */
	if (sw_stag_alloc(sw_stags(ad),
			  mr->base.fast ? SW_STAG_FRMR : SW_STAG_MR, pd->id,
			  &stag)) {
		ndk_mr_fini(&mr->base);
		free(mr);
		return STATUS_INSUFFICIENT_RESOURCES;
	}
	atomic_init(&mr->stag, stag);
	mr->has_stag = true;
	status = ndk_obj_setup(&mr->base.obj, ad, &mr_ops, &ndk_mr_dispatch,
			       antes, 1);
	if (status)
		return status;
	*ppNdkMr = &mr->base.obj.pub.mr;
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

	if (!mr || !mr->base.fast || !pages)
		return -EINVAL;
	if (sw_access_from_op_flags(flags, &access))
		return -EINVAL;
	ndk_lock(&mr->base.lock);
	err = -EINVAL;
	if (!mr->base.fr_ready || count > mr->base.fr_max_pages ||
	    ndk_fr_geometry(count, fbo, length, base_va, &need))
		goto out;
	if ((access & SW_ACCESS_REMOTE) && !mr->base.fr_remote) {
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
	ndk_unlock(&mr->base.lock);
	return err;
}

int sw_mr_invalidate(struct sw_mr *mr)
{
	if (!mr || !mr->base.fast)
		return -EINVAL;
	ndk_lock(&mr->base.lock);
	sw_stag_revoke(mr->stags, sw_mr_token(mr));
	ndk_unlock(&mr->base.lock);
	return 0;
}
