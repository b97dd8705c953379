/* SPDX-License-Identifier: MIT */
/*
 * Memory windows over type 2 ibv_mw (docs/verbs.md, Memory windows;
 * docs/ndk.md, Memory tokens). Devices without them (siw) have
 * MaxWindowSize 0 and NdkCreateMw is STATUS_NOT_SUPPORTED.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "core/log.h"
#include "front/mr.h"
#include "front/pd.h"
#include "verbs/keys.h"
#include "verbs/lam.h"
#include "verbs/mr.h"
#include "verbs/mw.h"

UINT32 ndk_verbs_mw_token(struct ndk_obj *obj)
{
	return atomic_load_explicit(
		&container_of(obj, struct ndk_vmw, obj)->rkey,
		memory_order_acquire);
}

/* No successors: the window goes, and with it any access through it. */
static void vmw_close_end(struct ndk_obj *obj)
{
	struct ndk_vmw *mw = container_of(obj, struct ndk_vmw, obj);

	if (mw->mw && ibv_dealloc_mw(mw->mw))
		ndk_warn("verbs: mw %p: ibv_dealloc_mw failed", (void *)mw);
	mw->mw = NULL;
	if (mw->sub && ndk_verbs_dereg(mw->sub))
		ndk_warn("verbs: mw %p: ibv_dereg_mr failed", (void *)mw);
	mw->sub = NULL;
}

static void vmw_destroy(struct ndk_obj *obj)
{
	struct ndk_vmw *mw = container_of(obj, struct ndk_vmw, obj);

	if (mw->mw)
		ibv_dealloc_mw(mw->mw);
	if (mw->sub)
		ndk_verbs_dereg(mw->sub);
	ndk_lock_destroy(&mw->lock);
	free(mw);
}

static const struct ndk_obj_ops vmw_ops = {
	.type = NdkObjectTypeMw,
	.name = "mw",
	.close_end = vmw_close_end,
	.destroy = vmw_destroy,
};

NTSTATUS ndk_verbs_create_mw(struct ndk_obj *pd_obj, NDK_MW **ppNdkMw)
{
	struct ndk_vpd *pd = container_of(pd_obj, struct ndk_vpd, obj);
	struct ndk_obj *antes[1];
	struct ndk_vmw *mw;
	NTSTATUS status;

	/* Without type 2 windows the adapter announces MaxWindowSize 0 and
	 * the front end refuses the create before it comes here. */
	mw = calloc(1, sizeof(*mw));
	if (!mw)
		return STATUS_INSUFFICIENT_RESOURCES;
	ndk_lock_init(&mw->lock, NDK_LOCK_MW);
	mw->pd = pd;
	mw->mw = ibv_alloc_mw(pd->pd, IBV_MW_TYPE_2);
	if (!mw->mw) {
		ndk_info("verbs: ibv_alloc_mw: %s", strerror(errno));
		status = ndk_verbs_errno_status(errno, NDK_VERBS_CREATE);
		vmw_destroy(&mw->obj);
		return status;
	}
	atomic_init(&mw->rkey, mw->mw->rkey);
	antes[0] = &pd->obj;
	status = ndk_obj_setup(&mw->obj, pd->obj.adapter, &vmw_ops,
			       &ndk_mw_dispatch, antes, 1);
	if (status)
		return status; /* vmw_destroy freed it */
	*ppNdkMw = &mw->obj.pub.mw;
	return STATUS_SUCCESS;
}

NTSTATUS ndk_vmw_bind_begin(struct ndk_vmw_bind *b, NDK_MW *pMw, NDK_MR *pMr,
			    struct ndk_vpd *qp_pd, PVOID va, SIZE_T len,
			    ULONG flags, struct ibv_send_wr *wr)
{
	uint64_t start = (uint64_t)(uintptr_t)va, mr_start;
	struct ndk_vmw *mw;
	struct ndk_vmr *mr;
	unsigned int acc;
	int access = 0;

	if (!pMw || !pMr || pMw->Header.ObjectType != NdkObjectTypeMw ||
	    pMr->Header.ObjectType != NdkObjectTypeMr)
		return STATUS_INVALID_PARAMETER;
	mw = to_vmw(pMw);
	mr = to_vmr(pMr);
	/* The window's PD must be the QP's, as for the software provider. */
	if (mw->pd != qp_pd)
		return STATUS_ACCESS_VIOLATION;
	/* A window grants remote access only (front/mr.h's rules). */
	if (ndk_access_from_op_flags(flags, &acc))
		return STATUS_INVALID_PARAMETER;
	if (acc & NDK_ACCESS_REMOTE_READ)
		access |= IBV_ACCESS_REMOTE_READ;
	if (acc & NDK_ACCESS_REMOTE_WRITE)
		access |= IBV_ACCESS_REMOTE_WRITE;
	if (len > mw->obj.adapter->info.MaxWindowSize || mr->pd != mw->pd)
		return STATUS_INVALID_PARAMETER;

	ndk_lock(&mr->base.lock);
	mr_start = mr->mr ? (uint64_t)(uintptr_t)mr->mr->addr : 0;
	if (!mr->mr || start < mr_start || len > mr->mr->length ||
	    start - mr_start > mr->mr->length - len) {
		ndk_unlock(&mr->base.lock);
		return STATUS_INVALID_PARAMETER;
	}
	if ((access & IBV_ACCESS_REMOTE_WRITE) && !mr->local_write) {
		ndk_unlock(&mr->base.lock);
		return STATUS_ACCESS_VIOLATION;
	}
	memset(wr, 0, sizeof(*wr));
	wr->opcode = IBV_WR_BIND_MW;
	wr->bind_mw.bind_info.mr = mr->mr;
	ndk_unlock(&mr->base.lock);

	memset(b, 0, sizeof(*b));
	b->mw = mw;
	b->mr = mr;
	ndk_lock(&mw->lock);
	/* A new key for each bind: the last byte is the consumer's. */
	if (ndk_vkeys_next_rkey(atomic_load(&mw->rkey), &b->rkey)) {
		ndk_unlock(&mw->lock);
		return STATUS_INSUFFICIENT_RESOURCES;
	}
	if (mw->mr != mr) {
		/* NdkBind makes the MR an antecedent of the MW (NDKPI
		 * Terminology). */
		if (ndk_obj_link(&mw->obj, &mr->base.obj)) {
			ndk_unlock(&mw->lock);
			return STATUS_INVALID_PARAMETER;
		}
		b->linked = true;
	}
	/*
	 * rxe checks an access through a window against the window's MR,
	 * not the window's range (docs/verbs.md, Memory windows): the
	 * window is bound over a registration of its own range.
	 */
	if (to_vad(mw->obj.adapter)->rxe && len) {
		b->sub = ndk_verbs_reg(
			mw->pd->pd, start, len, start,
			IBV_ACCESS_MW_BIND |
				(mr->local_write ? IBV_ACCESS_LOCAL_WRITE : 0));
		if (!b->sub) {
			if (b->linked)
				ndk_obj_unlink(&mw->obj, &mr->base.obj);
			ndk_unlock(&mw->lock);
			return ndk_verbs_errno_status(errno, NDK_VERBS_CREATE);
		}
		wr->bind_mw.bind_info.mr = b->sub;
		b->old_sub = mw->sub;
	}
	wr->bind_mw.mw = mw->mw;
	wr->bind_mw.rkey = b->rkey;
	wr->bind_mw.bind_info.addr = start;
	wr->bind_mw.bind_info.length = len;
	wr->bind_mw.bind_info.mw_access_flags = (unsigned int)access;
	return STATUS_SUCCESS;
}

void ndk_vmw_bind_end(struct ndk_vmw_bind *b, NTSTATUS status)
{
	struct ndk_vmw *mw = b->mw;

	NDK_ASSERT_LOCKED(&mw->lock);
	if (status == STATUS_SUCCESS) {
		/* Readable as soon as NdkBind returns (NDK_FN_BIND). */
		atomic_store_explicit(&mw->rkey, b->rkey, memory_order_release);
		if (b->sub)
			mw->sub = b->sub; /* the old one went with the slot */
		if (b->linked) {
			if (mw->mr)
				ndk_obj_unlink(&mw->obj, &mw->mr->base.obj);
			mw->mr = b->mr;
		}
	} else {
		if (b->sub && ndk_verbs_dereg(b->sub))
			ndk_warn("verbs: mw %p: ibv_dereg_mr failed",
				 (void *)mw);
		if (b->linked)
			ndk_obj_unlink(&mw->obj, &b->mr->base.obj);
	}
	ndk_unlock(&mw->lock);
}
