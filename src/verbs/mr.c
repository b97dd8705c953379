/* SPDX-License-Identifier: MIT */
/*
 * Memory regions over ibv_reg_mr (docs/verbs.md, Memory; docs/ndk.md,
 * Memory tokens). The MDL rules are the front end's (front/mdl.h), so
 * both providers accept the same buffers. The local token is the lkey,
 * the remote token the rkey. A fast-register MR gets its ibv_mr at
 * NdkFastRegister's post (docs/verbs.md, Fast registration).
 */
#include <errno.h>
#include <stdlib.h>
#include "core/log.h"
#include "front/mdl.h"
#include "front/mr.h"
#include "verbs/lam.h"
#include "verbs/mr.h"

#define PAGE_MASK ((uint64_t)PAGE_SIZE - 1)
/* As the software provider's cap (sw/mr.h): 1 GiB of 4 KiB pages. */
#define FR_MAX_PAGES (1u << 18)

uint32_t ndk_vmr_fr_max_pages(uint64_t max_mr_size)
{
	uint64_t n = max_mr_size / PAGE_SIZE;

	return n < FR_MAX_PAGES ? (uint32_t)n : FR_MAX_PAGES;
}

/*
 * The front end's access bits (front/mr.h) as IBV_ACCESS_*. Windows may
 * be bound to every MR (NDK has no flag for it). A Read's sink needs
 * remote write on iWARP (a Read Response is a tagged write into it), and
 * nothing elsewhere; in a fast registration only where the MR may have
 * remote access at all (remote_ok).
 */
static int ibv_access(unsigned int a, const struct ndk_vadapter *v,
		      bool remote_ok)
{
	int access = v->mw2 ? IBV_ACCESS_MW_BIND : 0;

	if (a & NDK_ACCESS_LOCAL_WRITE)
		access |= IBV_ACCESS_LOCAL_WRITE;
	if (a & NDK_ACCESS_REMOTE_READ)
		access |= IBV_ACCESS_REMOTE_READ;
	if (a & NDK_ACCESS_REMOTE_WRITE)
		access |= IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE;
	if (v->iwarp && remote_ok && (a & NDK_ACCESS_READ_SINK))
		access |= IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE;
	return access;
}

/* Lock held: drops the registration; its tokens name nothing after. */
static void mr_deregister_locked(struct ndk_vmr *mr)
{
	int ret;

	NDK_ASSERT_LOCKED(&mr->base.lock);
	if (!mr->mr)
		return;
	ret = ndk_verbs_dereg(mr->mr);
	if (ret)
		ndk_warn("verbs: mr %p: ibv_dereg_mr failed (%d)", (void *)mr,
			 ret);
	mr->mr = NULL;
	atomic_store(&mr->lkey, 0);
	atomic_store(&mr->rkey, 0);
}

/* NdkRegisterMr's registration (front/mr.c checked it; mr->lock held). */
NTSTATUS ndk_verbs_mr_register(struct ndk_mr *base, uint64_t va, uint64_t len,
			       unsigned int acc)
{
	struct ndk_vmr *mr = container_of(base, struct ndk_vmr, base);
	int access = ibv_access(acc, to_vad(base->obj.adapter), true);

	mr->mr = ndk_verbs_reg(mr->pd->pd, va, len, va, access);
	if (!mr->mr)
		return ndk_verbs_errno_status(errno, NDK_VERBS_CREATE);
	atomic_store(&mr->lkey, mr->mr->lkey);
	atomic_store(&mr->rkey, mr->mr->rkey);
	mr->local_write = access & IBV_ACCESS_LOCAL_WRITE;
	return STATUS_SUCCESS;
}

void ndk_verbs_mr_deregister(struct ndk_mr *base)
{
	mr_deregister_locked(container_of(base, struct ndk_vmr, base));
}

/* Re-initialising drops the current fast registration, if any. */
NTSTATUS ndk_verbs_mr_fr_init(struct ndk_mr *base, ULONG count)
{
	(void)count;
	mr_deregister_locked(container_of(base, struct ndk_vmr, base));
	return STATUS_SUCCESS;
}

UINT32 ndk_verbs_mr_token(struct ndk_mr *base, bool remote)
{
	struct ndk_vmr *mr = container_of(base, struct ndk_vmr, base);

	return atomic_load(remote ? &mr->rkey : &mr->lkey);
}

/* Every page used aligned (-EINVAL), mapped (-EFAULT), and each the one
 * after the one before (else -EOPNOTSUPP: one registration cannot map
 * scattered pages from user space). */
static int fr_pages(const NDK_LOGICAL_ADDRESS *pages, uint32_t n)
{
	uint64_t first = (uint64_t)pages[0].QuadPart;
	uint32_t i;

	for (i = 0; i < n; i++) {
		uint64_t pa = (uint64_t)pages[i].QuadPart;

		if (!pa || (pa & PAGE_MASK))
			return -EINVAL;
		if (pa != first + (uint64_t)i * PAGE_SIZE)
			return -EOPNOTSUPP;
	}
	return ndk_mem_check_mapped(first, (uint64_t)n * PAGE_SIZE) ? -EFAULT
								    : 0;
}

NTSTATUS ndk_vmr_fast_register_locked(struct ndk_vmr *mr, struct ndk_vpd *pd,
				      const NDK_LOGICAL_ADDRESS *pages,
				      ULONG count, ULONG fbo, SIZE_T length,
				      uint64_t base, ULONG flags, bool iova_ok)
{
	unsigned int acc;
	uint64_t host;
	uint32_t need;
	int access, ret;

	NDK_ASSERT_LOCKED(&mr->base.lock);
	if (!mr->base.fast || !pages || !mr->base.fr_ready ||
	    count > mr->base.fr_max_pages ||
	    ndk_access_from_op_flags(flags, &acc) ||
	    ndk_fr_geometry(count, fbo, length, base, &need))
		return STATUS_INVALID_PARAMETER;
	access = ibv_access(acc, to_vad(mr->base.obj.adapter),
			    mr->base.fr_remote);
	if ((access & (IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE)) &&
	    !mr->base.fr_remote)
		return STATUS_ACCESS_VIOLATION;
	/* The MR's PD must be the QP's, as for a bind. */
	if (mr->pd != pd)
		return STATUS_ACCESS_VIOLATION;
	ret = fr_pages(pages, need);
	if (ret == -EOPNOTSUPP)
		return STATUS_NOT_SUPPORTED;
	if (ret)
		return STATUS_INVALID_PARAMETER;
	/* As in verbs, a fast registration needs an invalid MR. */
	if (mr->mr)
		return STATUS_INVALID_DEVICE_STATE;
	host = (uint64_t)pages[0].QuadPart + fbo;
	/* A device that ignores the iova would place at the host address
	 * what the peer sends for base (docs/verbs.md). */
	if (!iova_ok && host != base)
		return STATUS_NOT_SUPPORTED;
	mr->mr = ndk_verbs_reg(pd->pd, host, length, base, access);
	if (!mr->mr)
		return ndk_verbs_errno_status(errno, NDK_VERBS_CREATE);
	atomic_store(&mr->lkey, mr->mr->lkey);
	atomic_store(&mr->rkey, mr->mr->rkey);
	mr->local_write = access & IBV_ACCESS_LOCAL_WRITE;
	return STATUS_SUCCESS;
}

void ndk_vmr_fast_register_undo(struct ndk_vmr *mr)
{
	mr_deregister_locked(mr);
}

struct ibv_mr *ndk_vmr_invalidate_locked(struct ndk_vmr *mr)
{
	struct ibv_mr *old = mr->mr;

	NDK_ASSERT_LOCKED(&mr->base.lock);
	/* The tokens keep their values, which now name nothing. */
	mr->mr = NULL;
	return old;
}

/* Closing deregisters: the consumer may free the memory as soon as the
 * close completes. */
static void mr_close_begin(struct ndk_obj *obj)
{
	struct ndk_vmr *mr = container_of(obj, struct ndk_vmr, base.obj);

	ndk_lock(&mr->base.lock);
	mr_deregister_locked(mr);
	ndk_unlock(&mr->base.lock);
}

static void mr_destroy(struct ndk_obj *obj)
{
	struct ndk_vmr *mr = container_of(obj, struct ndk_vmr, base.obj);

	if (mr->mr)
		ndk_verbs_dereg(mr->mr);
	ndk_mr_fini(&mr->base);
	free(mr);
}

static const struct ndk_obj_ops mr_ops = {
	.type = NdkObjectTypeMr,
	.name = "mr",
	.close_begin = mr_close_begin,
	.destroy = mr_destroy,
};

NTSTATUS ndk_verbs_create_mr(struct ndk_obj *pd_obj, bool fast_register,
			     NDK_MR **ppNdkMr)
{
	struct ndk_vpd *pd = container_of(pd_obj, struct ndk_vpd, obj);
	struct ndk_obj *antes[1];
	struct ndk_vmr *mr;
	NTSTATUS status;

	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return STATUS_INSUFFICIENT_RESOURCES;
	mr->pd = pd;
	ndk_mr_init(&mr->base, fast_register);
	antes[0] = &pd->obj;
	status = ndk_obj_setup(&mr->base.obj, pd->obj.adapter, &mr_ops,
			       &ndk_mr_dispatch, antes, 1);
	if (status)
		return status;
	*ppNdkMr = &mr->base.obj.pub.mr;
	return STATUS_SUCCESS;
}
