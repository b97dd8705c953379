/* SPDX-License-Identifier: MIT */
/* Memory windows: create, token, bind and invalidate (docs/ndk.md, Memory
 * tokens). */
#include <errno.h>
#include <stdlib.h>
#include "front/adapter.h"
#include "qp/adapter.h"
#include "qp/provider.h"
#include "qp/mr.h"
#include "qp/mw.h"
#include "qp/pd.h"
#include "qp/stag.h"

uint32_t ndk_mw_token(struct ndk_mw *mw)
{
	return atomic_load_explicit(&mw->stag, memory_order_acquire);
}

static void mw_close_begin(struct ndk_obj *obj)
{
	struct ndk_mw *mw = container_of(obj, struct ndk_mw, obj);

	ndk_stag_revoke(mw->stags, ndk_mw_token(mw));
}

static void mw_destroy(struct ndk_obj *obj)
{
	struct ndk_mw *mw = container_of(obj, struct ndk_mw, obj);

	if (mw->has_stag)
		ndk_stag_free(mw->stags, ndk_mw_token(mw));
	ndk_lock_destroy(&mw->lock);
	free(mw);
}

static const struct ndk_obj_ops mw_ops = {
	.type = NdkObjectTypeMw,
	.name = "mw",
	.close_begin = mw_close_begin,
	.destroy = mw_destroy,
};

static UINT32 mw_get_remote_token(NDK_MW *pNdkMw)
{
	return ndk_mw_token(to_ndk_mw(pNdkMw));
}

static const NDK_MW_DISPATCH mw_dispatch = {
	.NdkCloseMw = ndk_close_object,
	.NdkQueryExtension = ndk_query_extension,
	.NdkGetRemoteTokenFromMw = mw_get_remote_token,
};

NTSTATUS ndk_create_mw(NDK_PD *pNdkPd,
		       NDK_FN_CREATE_COMPLETION CreateCompletion,
		       PVOID RequestContext, NDK_MW **ppNdkMw)
{
	struct ndk_pd *pd;
	struct ndk_adapter *ad;
	struct ndk_obj *antes[1];
	struct ndk_mw *mw;
	uint32_t stag;
	NTSTATUS status;

	if (!pNdkPd || !ppNdkMw)
		return STATUS_INVALID_PARAMETER;
	pd = to_ndk_pd(pNdkPd);
	ad = pd->obj.adapter;
	antes[0] = &pd->obj;
	mw = calloc(1, sizeof(*mw));
	if (!mw)
		return STATUS_INSUFFICIENT_RESOURCES;
	ndk_lock_init(&mw->lock, NDK_LOCK_MW);
	mw->stags = ndk_sw_stags(ad);
	mw->pd_id = pd->id;
	if (ndk_stag_alloc(ndk_sw_stags(ad), NDK_STAG_MW, pd->id, &stag)) {
		ndk_lock_destroy(&mw->lock);
		free(mw);
		return STATUS_INSUFFICIENT_RESOURCES;
	}
	atomic_init(&mw->stag, stag);
	mw->has_stag = true;
	status = ndk_obj_setup(&mw->obj, ad, &mw_ops, &mw_dispatch, antes, 1);
	if (status)
		return status;
	*ppNdkMw = &mw->obj.pub.mw;
	return STATUS_SUCCESS;
}

int ndk_mw_bind(struct ndk_mw *mw, struct ndk_mr *mr, uint64_t va, uint64_t len,
		ULONG flags)
{
	uint32_t access, stag;
	bool linked = false;
	int err;

	if (!mw || !mr || mw->obj.adapter != mr->obj.adapter)
		return -EINVAL;
	if (ndk_access_from_op_flags(flags, &access))
		return -EINVAL;
	/* A window grants remote access only. */
	access &= NDK_ACCESS_REMOTE;
	if (mw->pd_id != mr->pd_id)
		return -EPERM;
	if (len > mw->obj.adapter->info.MaxWindowSize)
		return -EINVAL;

	ndk_lock(&mw->lock);
	if (mw->mr != mr) {
		/* NdkBind makes the MR an antecedent of the MW (NDKPI
		 * Terminology). */
		if (ndk_obj_link(&mw->obj, &mr->obj)) {
			err = -EINVAL;
			goto out;
		}
		linked = true;
	}
	stag = ndk_mw_token(mw);
	err = ndk_stag_bind(mw->stags, &stag, ndk_mr_token(mr), va, len,
			    access);
	if (err) {
		if (linked)
			ndk_obj_unlink(&mw->obj, &mr->obj);
		goto out;
	}
	atomic_store_explicit(&mw->stag, stag, memory_order_release);
	if (linked) {
		if (mw->mr)
			ndk_obj_unlink(&mw->obj, &mw->mr->obj);
		mw->mr = mr;
	}
out:
	ndk_unlock(&mw->lock);
	return err;
}

int ndk_mw_invalidate(struct ndk_mw *mw)
{
	if (!mw)
		return -EINVAL;
	ndk_lock(&mw->lock);
	ndk_stag_revoke(mw->stags, ndk_mw_token(mw));
	ndk_unlock(&mw->lock);
	return 0;
}
