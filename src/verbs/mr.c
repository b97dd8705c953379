/* SPDX-License-Identifier: MIT */
/*
 * Memory regions over ibv_reg_mr (docs/verbs.md, Memory; docs/ndk.md,
 * Memory tokens). The MDL rules are the front end's (front/mdl.h), so
 * both providers accept the same buffers. The local token is the lkey,
 * the remote token the rkey. Fast registration is not supported yet
 * (FRMRPageCount is 0): an MR created for it can only be closed.
 */
#include <errno.h>
#include <stdlib.h>
#include "core/log.h"
#include "front/mdl.h"
#include "verbs/mr.h"

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
	ret = ibv_dereg_mr(mr->mr);
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
	mr->mr = ibv_reg_mr(mr->pd->pd, (void *)(uintptr_t)va, Length, access);
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
	/* FRMRPageCount is 0 (docs/verbs.md, Not yet). */
	return STATUS_IMPLEMENTATION_LIMIT;
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
		ibv_dereg_mr(mr->mr);
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
