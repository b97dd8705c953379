/* SPDX-License-Identifier: MIT */
/*
 * The verbs provider's part of a protection domain (front/pd.c owns the
 * object): its ibv_pd. The privileged token is one that no registration of
 * ours keeps as its lkey: an SGE carrying it holds a logical address from
 * NdkBuildLAM (verbs/lam.h, docs/verbs.md, Logical address mappings).
 */
#include <errno.h>
#include <stdlib.h>
#include "core/log.h"
#include "verbs/lam.h"
#include "verbs/pd.h"

void ndk_verbs_pd_fini(struct ndk_obj *obj)
{
	struct ndk_vpd *pd = container_of(obj, struct ndk_vpd, obj);

	/* Its LAM registrations go first, or the PD stays busy. */
	if (pd->pd)
		ndk_vlam_drop_pd(to_vad(pd->obj.adapter)->lams, pd->pd);
	if (pd->pd && ibv_dealloc_pd(pd->pd))
		ndk_warn("verbs: pd %p: ibv_dealloc_pd failed (%d)", (void *)pd,
			 errno);
}

NTSTATUS ndk_verbs_pd_init(struct ndk_obj *obj)
{
	struct ndk_vpd *pd = container_of(obj, struct ndk_vpd, obj);

	pd->pd = ibv_alloc_pd(to_vad(pd->obj.adapter)->ctx);
	if (!pd->pd)
		return ndk_verbs_errno_status(errno, NDK_VERBS_CREATE);
	return STATUS_SUCCESS;
}
