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

/* fr_lock held: the window goes into the adapter's map, in the bucket
 * of its token's index (which a new window may change). */
static void vmw_list_locked(struct ndk_vadapter *v, struct ndk_vmw *mw)
{
	uint32_t idx = atomic_load(&mw->rkey) >> 8;

	NDK_ASSERT_LOCKED(&v->fr_lock);
	list_del(&mw->entry);
	list_add_tail(&mw->entry, &v->mw_map[idx % NDK_VFR_BUCKETS]);
}

/* The window leaves the adapter's map (a second time is harmless). */
static void vmw_unlist(struct ndk_vmw *mw)
{
	struct ndk_vadapter *v = to_vad(mw->obj.adapter);

	ndk_lock(&v->fr_lock);
	list_del(&mw->entry);
	mw->qp = NULL;
	ndk_unlock(&v->fr_lock);
}

/*
 * No successors: the window goes, and with it any access through it.
 * Under the window's lock: this may run inline on the consumer's thread
 * while a QP's close on the engine thread replaces the window's ibv_mw
 * (ndk_vmw_qp_closing); without the lock both freed the old one and the
 * new one was lost, and with it the PD it holds.
 */
static void vmw_close_end(struct ndk_obj *obj)
{
	struct ndk_vmw *mw = container_of(obj, struct ndk_vmw, obj);

	ndk_lock(&mw->lock);
	vmw_unlist(mw);
	if (mw->mw && ibv_dealloc_mw(mw->mw))
		ndk_warn("verbs: mw %p: ibv_dealloc_mw failed", (void *)mw);
	mw->mw = NULL;
	if (mw->sub && ndk_verbs_dereg(mw->sub))
		ndk_warn("verbs: mw %p: ibv_dereg_mr failed", (void *)mw);
	mw->sub = NULL;
	ndk_unlock(&mw->lock);
}

static void vmw_destroy(struct ndk_obj *obj)
{
	struct ndk_vmw *mw = container_of(obj, struct ndk_vmw, obj);

	if (mw->obj.adapter)
		vmw_unlist(mw);
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
	list_init(&mw->entry);
	atomic_init(&mw->free, true);
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
	ndk_lock(&to_vad(mw->obj.adapter)->fr_lock);
	vmw_list_locked(to_vad(mw->obj.adapter), mw);
	ndk_unlock(&to_vad(mw->obj.adapter)->fr_lock);
	*ppNdkMw = &mw->obj.pub.mw;
	return STATUS_SUCCESS;
}

/* Lock held: a new, free window in place of none. Its token is the new
 * window's, unless the device gave it the old one's index (rxe reuses
 * them): then the next bind's key must still differ from the old. */
static bool vmw_realloc_locked(struct ndk_vmw *mw)
{
	NDK_ASSERT_LOCKED(&mw->lock);
	mw->mw = ibv_alloc_mw(mw->pd->pd, IBV_MW_TYPE_2);
	if (!mw->mw) {
		ndk_info("verbs: ibv_alloc_mw: %s", strerror(errno));
		return false;
	}
	if ((mw->mw->rkey >> 8) != (atomic_load(&mw->rkey) >> 8)) {
		ndk_lock(&to_vad(mw->obj.adapter)->fr_lock);
		atomic_store(&mw->rkey, mw->mw->rkey);
		vmw_list_locked(to_vad(mw->obj.adapter), mw);
		ndk_unlock(&to_vad(mw->obj.adapter)->fr_lock);
	}
	atomic_store(&mw->free, true);
	return true;
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
	/* Its window went with a QP and no new one could be had then. */
	if (!mw->mw && !vmw_realloc_locked(mw)) {
		ndk_unlock(&mw->lock);
		return ndk_verbs_errno_status(errno, NDK_VERBS_CREATE);
	}
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
		/* The next bind names the window by this rkey: the
		 * library passes the ibv_mw's, which rxe checks against
		 * the window's, and only a type 1 bind updates it. */
		mw->mw->rkey = b->rkey;
		atomic_store(&mw->free, false);
		ndk_lock(&to_vad(mw->obj.adapter)->fr_lock);
		mw->qp = b->qp;
		ndk_unlock(&to_vad(mw->obj.adapter)->fr_lock);
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

bool ndk_vmw_invalidate_begin(NDK_MW *pMw, uint32_t *rkey)
{
	struct ndk_vmw *mw = to_vmw(pMw);

	ndk_lock(&mw->lock);
	*rkey = atomic_load_explicit(&mw->rkey, memory_order_acquire);
	return mw->mw && !atomic_load(&mw->free);
}

void ndk_vmw_invalidate_end(NDK_MW *pMw, NTSTATUS status)
{
	struct ndk_vmw *mw = to_vmw(pMw);

	NDK_ASSERT_LOCKED(&mw->lock);
	/* Free once the request runs, which is before any later request
	 * of the same QP; another QP's must not count on it. */
	if (status == STATUS_SUCCESS)
		atomic_store(&mw->free, true);
	ndk_unlock(&mw->lock);
}

void ndk_vmw_peer_invalidated(struct ndk_vadapter *v, uint32_t rkey)
{
	struct list_head *pos;
	struct ndk_vmw *mw;

	ndk_lock(&v->fr_lock);
	list_for_each (pos, &v->mw_map[(rkey >> 8) % NDK_VFR_BUCKETS]) {
		mw = list_entry(pos, struct ndk_vmw, entry);
		if (atomic_load_explicit(&mw->rkey, memory_order_relaxed) ==
		    rkey) {
			atomic_store(&mw->free, true);
			break;
		}
	}
	ndk_unlock(&v->fr_lock);
}

/* fr_lock held: a window bound through qp, with a reference, or NULL. */
static struct ndk_vmw *mw_of_qp_locked(struct ndk_vadapter *v,
				       const struct ndk_vqp *qp)
{
	struct list_head *pos;
	struct ndk_vmw *mw;
	unsigned int i;

	NDK_ASSERT_LOCKED(&v->fr_lock);
	for (i = 0; i < NDK_VFR_BUCKETS; i++)
		list_for_each (pos, &v->mw_map[i]) {
			mw = list_entry(pos, struct ndk_vmw, entry);
			if (mw->qp == qp) {
				/* Listed: its close has not ended. */
				ndk_obj_get(&mw->obj);
				return mw;
			}
		}
	return NULL;
}

void ndk_vmw_qp_closing(struct ndk_vadapter *v, const struct ndk_vqp *qp)
{
	struct ndk_vmw *mw;

	/* One at a time: fr_lock nests inside a window's lock. */
	for (;;) {
		ndk_lock(&v->fr_lock);
		mw = mw_of_qp_locked(v, qp);
		ndk_unlock(&v->fr_lock);
		if (!mw)
			return;
		ndk_lock(&mw->lock);
		ndk_lock(&v->fr_lock);
		if (mw->qp == qp) {
			mw->qp = NULL;
			ndk_unlock(&v->fr_lock);
			if (ibv_dealloc_mw(mw->mw))
				ndk_warn("verbs: mw %p: ibv_dealloc_mw failed",
					 (void *)mw);
			mw->mw = NULL;
			(void)vmw_realloc_locked(mw);
		} else {
			ndk_unlock(&v->fr_lock);
		}
		ndk_unlock(&mw->lock);
		ndk_obj_put(&mw->obj);
	}
}
