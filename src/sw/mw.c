/* SPDX-License-Identifier: MIT */
/* Memory windows: create, token, bind and invalidate (docs/ndk.md, Memory
 * tokens). */
#include <errno.h>
#include <stdlib.h>
#include "front/adapter.h"
#include "front/pd.h"
#include "sw/adapter.h"
#include "sw/sw.h"
#include "sw/mr.h"
#include "sw/mw.h"
#include "sw/pd.h"
#include "sw/stag.h"

uint32_t sw_mw_token(struct sw_mw *mw)
{
	return atomic_load_explicit(&mw->stag, memory_order_acquire);
}

static void mw_close_begin(struct ndk_obj *obj)
{
	struct sw_mw *mw = container_of(obj, struct sw_mw, obj);

	sw_stag_revoke(mw->stags, sw_mw_token(mw));
}

static void mw_destroy(struct ndk_obj *obj)
{
	struct sw_mw *mw = container_of(obj, struct sw_mw, obj);

	if (mw->has_stag)
		sw_stag_free(mw->stags, sw_mw_token(mw));
	ndk_lock_destroy(&mw->lock);
	free(mw);
}

static const struct ndk_obj_ops mw_ops = {
	.type = NdkObjectTypeMw,
	.name = "mw",
	.close_begin = mw_close_begin,
	.destroy = mw_destroy,
};

UINT32 sw_mw_remote_token(struct ndk_obj *obj)
{
	return sw_mw_token(container_of(obj, struct sw_mw, obj));
}

NTSTATUS sw_create_mw(struct ndk_obj *pd_obj, NDK_MW **ppNdkMw)
{
	struct sw_pd *pd = container_of(pd_obj, struct sw_pd, obj);
	struct ndk_adapter *ad = pd->obj.adapter;
	struct ndk_obj *antes[1];
	struct sw_mw *mw;
	uint32_t stag;
	NTSTATUS status;

	antes[0] = &pd->obj;
	mw = calloc(1, sizeof(*mw));
	if (!mw)
		return STATUS_INSUFFICIENT_RESOURCES;
	ndk_lock_init(&mw->lock, NDK_LOCK_MW);
	mw->stags = sw_stags(ad);
	mw->pd_id = pd->id;
	if (sw_stag_alloc(sw_stags(ad), SW_STAG_MW, pd->id, &stag)) {
		ndk_lock_destroy(&mw->lock);
		free(mw);
		return STATUS_INSUFFICIENT_RESOURCES;
	}
	atomic_init(&mw->stag, stag);
	mw->has_stag = true;
	status = ndk_obj_setup(&mw->obj, ad, &mw_ops, &ndk_mw_dispatch, antes,
			       1);
	if (status)
		return status;
	*ppNdkMw = &mw->obj.pub.mw;
	return STATUS_SUCCESS;
}

int sw_mw_bind(struct sw_mw *mw, struct sw_mr *mr, uint64_t va, uint64_t len,
	       ULONG flags)
{
	uint32_t access, stag;
	bool linked = false;
	int err;

	if (!mw || !mr || mw->obj.adapter != mr->base.obj.adapter)
		return -EINVAL;
	if (sw_access_from_op_flags(flags, &access))
		return -EINVAL;
	/* A window grants remote access only. */
	access &= SW_ACCESS_REMOTE;
	if (mw->pd_id != mr->pd_id)
		return -EPERM;
	if (len > mw->obj.adapter->info.MaxWindowSize)
		return -EINVAL;

	ndk_lock(&mw->lock);
	if (mw->mr != mr) {
		/* NdkBind makes the MR an antecedent of the MW (NDKPI
		 * Terminology). */
		if (ndk_obj_link(&mw->obj, &mr->base.obj)) {
			err = -EINVAL;
			goto out;
		}
		linked = true;
	}
	stag = sw_mw_token(mw);
	err = sw_stag_bind(mw->stags, &stag, sw_mr_token(mr), va, len, access);
	if (err) {
		if (linked)
			ndk_obj_unlink(&mw->obj, &mr->base.obj);
		goto out;
	}
	atomic_store_explicit(&mw->stag, stag, memory_order_release);
	if (linked) {
		if (mw->mr)
			ndk_obj_unlink(&mw->obj, &mw->mr->base.obj);
		mw->mr = mr;
	}
out:
	ndk_unlock(&mw->lock);
	return err;
}

int sw_mw_invalidate(struct sw_mw *mw)
{
	if (!mw)
		return -EINVAL;
	ndk_lock(&mw->lock);
	sw_stag_revoke(mw->stags, sw_mw_token(mw));
	ndk_unlock(&mw->lock);
	return 0;
}
