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
#include "verbs/lam.h"
#include "verbs/mr.h"

#define PAGE_MASK ((uint64_t)PAGE_SIZE - 1)
/* As the software provider's cap (qp/mr.h): 1 GiB of 4 KiB pages. */
#define FR_MAX_PAGES (1u << 18)

uint32_t ndk_vmr_fr_max_pages(uint64_t max_mr_size)
{
	uint64_t n = max_mr_size / PAGE_SIZE;

	return n < FR_MAX_PAGES ? (uint32_t)n : FR_MAX_PAGES;
}

/*
 * NDK_MR_FLAG_* to IBV_ACCESS_*. Remote write is 0x5 in NDK (never
 * without local write), as verbs wants it too; the bare 0x4 bit is
 * refused. RDMA_READ_SINK is remote write on iWARP (a Read Response is a
 * tagged write into the sink), nothing elsewhere.
 */
static int mr_access(ULONG flags, const struct ndk_vadapter *v, int *access)
{
	bool iwarp = v->iwarp;
	/* Windows may be bound to every MR (NDK has no flag for it). */
	int a = v->mw2 ? IBV_ACCESS_MW_BIND : 0;

	if (flags & ~(ULONG)(NDK_MR_FLAG_ALLOW_LOCAL_WRITE |
			     NDK_MR_FLAG_ALLOW_REMOTE_READ |
			     NDK_MR_FLAG_ALLOW_REMOTE_WRITE |
			     NDK_MR_FLAG_RDMA_READ_SINK))
		return -EINVAL;
	if ((flags & NDK_MR_FLAG_ALLOW_REMOTE_WRITE) == 0x4)
		return -EINVAL;
	if (flags & NDK_MR_FLAG_ALLOW_LOCAL_WRITE)
		a |= IBV_ACCESS_LOCAL_WRITE;
	if (flags & NDK_MR_FLAG_ALLOW_REMOTE_READ)
		a |= IBV_ACCESS_REMOTE_READ;
	if ((flags & NDK_MR_FLAG_ALLOW_REMOTE_WRITE) ==
	    NDK_MR_FLAG_ALLOW_REMOTE_WRITE)
		a |= IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE;
	if (iwarp && (flags & NDK_MR_FLAG_RDMA_READ_SINK))
		a |= IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE;
	*access = a;
	return 0;
}

/* Lock held: drops the registration; its tokens name nothing after. */
static void mr_deregister_locked(struct ndk_vmr *mr)
{
	int ret;

	NDK_ASSERT_LOCKED(&mr->lock);
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

/* Registration completes inline: no callback (NDK_FN_REQUEST_COMPLETION). */
static NTSTATUS mr_register(NDK_MR *pNdkMr, MDL *Mdl, SIZE_T Length,
			    ULONG Flags,
			    NDK_FN_REQUEST_COMPLETION RequestCompletion,
			    PVOID RequestContext)
{
	struct ndk_vmr *mr = to_vmr(pNdkMr);
	struct ndk_adapter *ad = mr->obj.adapter;
	NTSTATUS status = STATUS_SUCCESS;
	uint64_t va;
	int access;

	/* NdkRegisterMr is for MRs created with FastRegister FALSE only. */
	if (mr->fast)
		return STATUS_INVALID_DEVICE_REQUEST;
	ndk_lock(&mr->lock);
	if (mr->mr || !ndk_obj_is_open(&mr->obj)) {
		status = STATUS_INVALID_DEVICE_STATE;
		goto out;
	}
	if (mr_access(Flags, to_vad(ad), &access) || !Length ||
	    Length > ad->info.MaxRegistrationSize ||
	    ndk_mdl_range(Mdl, Length, &va) ||
	    ndk_mem_check_mapped(va, Length)) {
		status = STATUS_INVALID_PARAMETER;
		goto out;
	}
	mr->mr = ndk_verbs_reg(mr->pd->pd, va, Length, va, access);
	if (!mr->mr) {
		status = ndk_verbs_errno_status(errno, NDK_VERBS_CREATE);
		goto out;
	}
	atomic_store(&mr->lkey, mr->mr->lkey);
	atomic_store(&mr->rkey, mr->mr->rkey);
	mr->local_write = access & IBV_ACCESS_LOCAL_WRITE;
out:
	ndk_unlock(&mr->lock);
	return status;
}

static NTSTATUS mr_deregister(NDK_MR *pNdkMr,
			      NDK_FN_REQUEST_COMPLETION RequestCompletion,
			      PVOID RequestContext)
{
	struct ndk_vmr *mr = to_vmr(pNdkMr);
	NTSTATUS status = STATUS_SUCCESS;

	ndk_lock(&mr->lock);
	if (!mr->fast && !mr->mr)
		status = STATUS_INVALID_DEVICE_STATE;
	else
		mr_deregister_locked(mr);
	ndk_unlock(&mr->lock);
	return status;
}

static NTSTATUS mr_init_fast_register(
	NDK_MR *pNdkMr, ULONG AdapterPageCount, BOOLEAN RemoteAccess,
	NDK_FN_REQUEST_COMPLETION RequestCompletion, PVOID RequestContext)
{
	struct ndk_vmr *mr = to_vmr(pNdkMr);

	if (!mr->fast)
		return STATUS_INVALID_DEVICE_REQUEST;
	if (!AdapterPageCount ||
	    AdapterPageCount > mr->obj.adapter->info.FRMRPageCount)
		return STATUS_IMPLEMENTATION_LIMIT;
	ndk_lock(&mr->lock);
	/* Re-initialising drops the current fast registration, if any. */
	mr_deregister_locked(mr);
	mr->fr_max_pages = AdapterPageCount;
	mr->fr_remote = RemoteAccess != FALSE;
	mr->fr_ready = true;
	ndk_unlock(&mr->lock);
	return STATUS_SUCCESS;
}

/* NDK_OP_FLAG_* of NdkFastRegister to IBV_ACCESS_*, as mr_access. */
static int fr_access(ULONG flags, const struct ndk_vadapter *v, bool remote,
		     int *access)
{
	int a = v->mw2 ? IBV_ACCESS_MW_BIND : 0;

	if ((flags & NDK_OP_FLAG_ALLOW_REMOTE_WRITE) == 0x20)
		return -EINVAL;
	if (flags & NDK_OP_FLAG_ALLOW_LOCAL_WRITE)
		a |= IBV_ACCESS_LOCAL_WRITE;
	if (flags & NDK_OP_FLAG_ALLOW_REMOTE_READ)
		a |= IBV_ACCESS_REMOTE_READ;
	if ((flags & NDK_OP_FLAG_ALLOW_REMOTE_WRITE) ==
	    NDK_OP_FLAG_ALLOW_REMOTE_WRITE)
		a |= IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE;
	/* A Read Response is a tagged write into the sink on iWARP; only
	 * where the MR may have remote access at all. */
	if (v->iwarp && remote && (flags & NDK_OP_FLAG_RDMA_READ_SINK))
		a |= IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE;
	*access = a;
	return 0;
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
	uint64_t host;
	uint32_t need;
	int access, ret;

	NDK_ASSERT_LOCKED(&mr->lock);
	if (!mr->fast || !pages || !mr->fr_ready || !count ||
	    count > mr->fr_max_pages ||
	    fr_access(flags, to_vad(mr->obj.adapter), mr->fr_remote, &access))
		return STATUS_INVALID_PARAMETER;
	/* NDK_FN_FAST_REGISTER: FBO in the first page, Length fits the
	 * pages, BaseVirtualAddress = FBO + n * PAGE_SIZE, no wrap. */
	if (fbo >= PAGE_SIZE || !length ||
	    length > (uint64_t)count * PAGE_SIZE - fbo ||
	    (base & PAGE_MASK) != fbo || base > UINT64_MAX - (length - 1))
		return STATUS_INVALID_PARAMETER;
	if ((access & (IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE)) &&
	    !mr->fr_remote)
		return STATUS_ACCESS_VIOLATION;
	/* The MR's PD must be the QP's, as for a bind. */
	if (mr->pd != pd)
		return STATUS_ACCESS_VIOLATION;
	/* Pages past FBO + Length are allowed but never used or checked. */
	need = (uint32_t)((fbo + length + PAGE_SIZE - 1) / PAGE_SIZE);
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

	NDK_ASSERT_LOCKED(&mr->lock);
	/* The tokens keep their values, which now name nothing. */
	mr->mr = NULL;
	return old;
}

static UINT32 mr_get_local_token(NDK_MR *pNdkMr)
{
	return atomic_load(&to_vmr(pNdkMr)->lkey);
}

static UINT32 mr_get_remote_token(NDK_MR *pNdkMr)
{
	return atomic_load(&to_vmr(pNdkMr)->rkey);
}

/* Closing deregisters: the consumer may free the memory as soon as the
 * close completes. */
static void mr_close_begin(struct ndk_obj *obj)
{
	struct ndk_vmr *mr = container_of(obj, struct ndk_vmr, obj);

	ndk_lock(&mr->lock);
	mr_deregister_locked(mr);
	ndk_unlock(&mr->lock);
}

static void mr_destroy(struct ndk_obj *obj)
{
	struct ndk_vmr *mr = container_of(obj, struct ndk_vmr, obj);

	if (mr->mr)
		ndk_verbs_dereg(mr->mr);
	ndk_lock_destroy(&mr->lock);
	free(mr);
}

static const struct ndk_obj_ops mr_ops = {
	.type = NdkObjectTypeMr,
	.name = "mr",
	.close_begin = mr_close_begin,
	.destroy = mr_destroy,
};

static const NDK_MR_DISPATCH mr_dispatch = {
	.NdkCloseMr = ndk_close_object,
	.NdkQueryExtension = ndk_query_extension,
	.NdkRegisterMr = mr_register,
	.NdkDeregisterMr = mr_deregister,
	.NdkInitializeFastRegisterMr = mr_init_fast_register,
	.NdkGetRemoteTokenFromMr = mr_get_remote_token,
	.NdkGetLocalTokenFromMr = mr_get_local_token,
};

NTSTATUS ndk_verbs_create_mr(NDK_PD *pNdkPd, BOOLEAN FastRegister,
			     NDK_FN_CREATE_COMPLETION CreateCompletion,
			     PVOID RequestContext, NDK_MR **ppNdkMr)
{
	struct ndk_vpd *pd;
	struct ndk_obj *antes[1];
	struct ndk_vmr *mr;
	NTSTATUS status;

	if (!pNdkPd || !ppNdkMr)
		return STATUS_INVALID_PARAMETER;
	pd = to_vpd(pNdkPd);
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return STATUS_INSUFFICIENT_RESOURCES;
	mr->pd = pd;
	mr->fast = FastRegister != FALSE;
	ndk_lock_init(&mr->lock, NDK_LOCK_MR);
	antes[0] = &pd->obj;
	status = ndk_obj_setup(&mr->obj, pd->obj.adapter, &mr_ops, &mr_dispatch,
			       antes, 1);
	if (status)
		return status;
	*ppNdkMr = &mr->obj.pub.mr;
	return STATUS_SUCCESS;
}
