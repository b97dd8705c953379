/* SPDX-License-Identifier: MIT */
/*
 * Memory registration for every provider: NdkCreateMr (the PD's slot),
 * the MR's dispatch table with its states, and the rules of access flags,
 * NdkRegisterMr's arguments and NdkFastRegister's geometry (front/mr.h).
 */
#include <errno.h>
#include "front/adapter.h"
#include "front/mdl.h"
#include "front/mr.h"
#include "front/pd.h"
#include "front/provider.h"

NTSTATUS ndk_create_mr(NDK_PD *pNdkPd, BOOLEAN FastRegister,
		       NDK_FN_CREATE_COMPLETION CreateCompletion,
		       PVOID RequestContext, NDK_MR **ppNdkMr)
{
	struct ndk_obj *pd;

	if (!pNdkPd || !ppNdkMr)
		return STATUS_INVALID_PARAMETER;
	pd = to_ndk_obj(&pNdkPd->Header);
	/* Created inline: no CreateCompletion (NDK_FN_CREATE_COMPLETION). */
	return pd->adapter->provider->create_mr(pd, FastRegister != FALSE,
						ppNdkMr);
}

int ndk_access_from_mr_flags(ULONG flags, unsigned int *access)
{
	unsigned int a = 0;

	if (flags & ~(ULONG)(NDK_MR_FLAG_ALLOW_LOCAL_WRITE |
			     NDK_MR_FLAG_ALLOW_REMOTE_READ |
			     NDK_MR_FLAG_ALLOW_REMOTE_WRITE |
			     NDK_MR_FLAG_RDMA_READ_SINK))
		return -EINVAL;
	/* Remote write is defined as 0x5: never without local write. */
	if ((flags & NDK_MR_FLAG_ALLOW_REMOTE_WRITE) == 0x4)
		return -EINVAL;
	if (flags & NDK_MR_FLAG_ALLOW_LOCAL_WRITE)
		a |= NDK_ACCESS_LOCAL_WRITE;
	if (flags & NDK_MR_FLAG_ALLOW_REMOTE_READ)
		a |= NDK_ACCESS_REMOTE_READ;
	if ((flags & NDK_MR_FLAG_ALLOW_REMOTE_WRITE) ==
	    NDK_MR_FLAG_ALLOW_REMOTE_WRITE)
		a |= NDK_ACCESS_REMOTE_WRITE | NDK_ACCESS_LOCAL_WRITE;
	if (flags & NDK_MR_FLAG_RDMA_READ_SINK)
		a |= NDK_ACCESS_READ_SINK;
	*access = a;
	return 0;
}

int ndk_access_from_op_flags(ULONG flags, unsigned int *access)
{
	unsigned int a = 0;

	/* Remote write is defined as 0x30: never without local write. */
	if ((flags & NDK_OP_FLAG_ALLOW_REMOTE_WRITE) == 0x20)
		return -EINVAL;
	if (flags & NDK_OP_FLAG_ALLOW_LOCAL_WRITE)
		a |= NDK_ACCESS_LOCAL_WRITE;
	if (flags & NDK_OP_FLAG_ALLOW_REMOTE_READ)
		a |= NDK_ACCESS_REMOTE_READ;
	if ((flags & NDK_OP_FLAG_ALLOW_REMOTE_WRITE) ==
	    NDK_OP_FLAG_ALLOW_REMOTE_WRITE)
		a |= NDK_ACCESS_REMOTE_WRITE | NDK_ACCESS_LOCAL_WRITE;
	if (flags & NDK_OP_FLAG_RDMA_READ_SINK)
		a |= NDK_ACCESS_READ_SINK;
	*access = a;
	return 0;
}

NTSTATUS ndk_mr_register_args(const struct ndk_adapter *ad, MDL *mdl,
			      SIZE_T length, ULONG flags, uint64_t *va,
			      unsigned int *access)
{
	if (ndk_access_from_mr_flags(flags, access) || !length ||
	    length > ad->info.MaxRegistrationSize ||
	    ndk_mdl_range(mdl, length, va) || ndk_mem_check_mapped(*va, length))
		return STATUS_INVALID_PARAMETER;
	return STATUS_SUCCESS;
}

int ndk_fr_geometry(ULONG count, ULONG fbo, uint64_t length, uint64_t base,
		    uint32_t *need)
{
	const uint64_t page_mask = (uint64_t)PAGE_SIZE - 1;

	if (!count || fbo >= PAGE_SIZE || !length ||
	    length > (uint64_t)count * PAGE_SIZE - fbo)
		return -EINVAL;
	/* BaseVirtualAddress = FBO + n * PAGE_SIZE; no wrap. */
	if ((base & page_mask) != fbo || base > UINT64_MAX - (length - 1))
		return -EINVAL;
	/* Pages past FBO + Length are allowed but never used or checked. */
	*need = (uint32_t)((fbo + length + PAGE_SIZE - 1) / PAGE_SIZE);
	return 0;
}

void ndk_mr_init(struct ndk_mr *mr, bool fast)
{
	mr->fast = fast;
	ndk_lock_init(&mr->lock, NDK_LOCK_MR);
}

void ndk_mr_fini(struct ndk_mr *mr)
{
	ndk_lock_destroy(&mr->lock);
}

/* Requests complete inline: no callback is ever made
 * (NDK_FN_REQUEST_COMPLETION). */
static NTSTATUS mr_register(NDK_MR *pNdkMr, MDL *Mdl, SIZE_T Length,
			    ULONG Flags,
			    NDK_FN_REQUEST_COMPLETION RequestCompletion,
			    PVOID RequestContext)
{
	struct ndk_mr *mr = to_ndk_mr(pNdkMr);
	NTSTATUS status;
	unsigned int access;
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
	if (!status)
		status = mr->obj.adapter->provider->mr_register(mr, va, Length,
								access);
	if (!status)
		mr->registered = true;
out:
	ndk_unlock(&mr->lock);
	return status;
}

static NTSTATUS mr_deregister(NDK_MR *pNdkMr,
			      NDK_FN_REQUEST_COMPLETION RequestCompletion,
			      PVOID RequestContext)
{
	struct ndk_mr *mr = to_ndk_mr(pNdkMr);
	NTSTATUS status = STATUS_SUCCESS;

	ndk_lock(&mr->lock);
	/* Tolerated on a fast-register MR: drops its registration. Returns
	 * once no access to the memory is in flight. */
	if (!mr->fast && !mr->registered)
		status = STATUS_INVALID_DEVICE_STATE;
	else
		mr->obj.adapter->provider->mr_deregister(mr);
	mr->registered = false;
	ndk_unlock(&mr->lock);
	return status;
}

static NTSTATUS mr_init_fast_register(
	NDK_MR *pNdkMr, ULONG AdapterPageCount, BOOLEAN RemoteAccess,
	NDK_FN_REQUEST_COMPLETION RequestCompletion, PVOID RequestContext)
{
	struct ndk_mr *mr = to_ndk_mr(pNdkMr);
	NTSTATUS status;

	if (!mr->fast)
		return STATUS_INVALID_DEVICE_REQUEST;
	if (!AdapterPageCount ||
	    AdapterPageCount > mr->obj.adapter->info.FRMRPageCount)
		return STATUS_IMPLEMENTATION_LIMIT;
	ndk_lock(&mr->lock);
	/* Re-initialising drops the current fast registration, if any. */
	status = mr->obj.adapter->provider->mr_fr_init(mr, AdapterPageCount);
	if (!status) {
		mr->fr_max_pages = AdapterPageCount;
		mr->fr_remote = RemoteAccess != FALSE;
		mr->fr_ready = true;
	}
	ndk_unlock(&mr->lock);
	return status;
}

static UINT32 mr_get_local_token(NDK_MR *pNdkMr)
{
	struct ndk_mr *mr = to_ndk_mr(pNdkMr);

	return mr->obj.adapter->provider->mr_token(mr, false);
}

static UINT32 mr_get_remote_token(NDK_MR *pNdkMr)
{
	struct ndk_mr *mr = to_ndk_mr(pNdkMr);

	return mr->obj.adapter->provider->mr_token(mr, true);
}

const NDK_MR_DISPATCH ndk_mr_dispatch = {
	.NdkCloseMr = ndk_close_object,
	.NdkQueryExtension = ndk_query_extension,
	.NdkRegisterMr = mr_register,
	.NdkDeregisterMr = mr_deregister,
	.NdkInitializeFastRegisterMr = mr_init_fast_register,
	.NdkGetRemoteTokenFromMr = mr_get_remote_token,
	.NdkGetLocalTokenFromMr = mr_get_local_token,
};
