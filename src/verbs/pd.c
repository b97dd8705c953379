/* SPDX-License-Identifier: MIT */
/*
 * Protection domain. The privileged token is one that no registration of
 * ours keeps as its lkey: an SGE carrying it holds a logical address from
 * NdkBuildLAM (verbs/lam.h, docs/verbs.md, Logical address mappings).
 */
#include <errno.h>
#include <stdlib.h>
#include "core/log.h"
#include "verbs/lam.h"
#include "verbs/mr.h"
#include "verbs/mw.h"
#include "verbs/pd.h"
#include "verbs/qp.h"
#include "verbs/srq.h"

static void pd_destroy(struct ndk_obj *obj)
{
	struct ndk_vpd *pd = container_of(obj, struct ndk_vpd, obj);

	/* Its LAM registrations go first, or the PD stays busy. */
	if (pd->pd && pd->obj.adapter)
		ndk_vlam_drop_pd(to_vad(pd->obj.adapter)->lams, pd->pd);
	if (pd->pd && ibv_dealloc_pd(pd->pd))
		ndk_warn("verbs: pd %p: ibv_dealloc_pd failed (%d)", (void *)pd,
			 errno);
	free(pd);
}

static const struct ndk_obj_ops pd_ops = {
	.type = NdkObjectTypePd,
	.name = "pd",
	.destroy = pd_destroy,
};

static VOID pd_get_privileged_token(NDK_PD *pNdkPd, UINT32 *pToken)
{
	if (pToken)
		*pToken = NDK_VERBS_PRIVILEGED_TOKEN;
}

static const NDK_PD_DISPATCH pd_dispatch = {
	.NdkClosePd = ndk_close_object,
	.NdkQueryExtension = ndk_query_extension,
	.NdkCreateMr = ndk_verbs_create_mr,
	.NdkCreateMw = ndk_verbs_create_mw,
	.NdkCreateSrq = ndk_verbs_create_srq,
	.NdkCreateQp = ndk_verbs_create_qp,
	.NdkCreateQpWithSrq = ndk_verbs_create_qp_with_srq,
	.NdkGetPrivilegedMemoryRegionToken = pd_get_privileged_token,
};

NTSTATUS ndk_verbs_create_pd(NDK_ADAPTER *pNdkAdapter,
			     NDK_FN_CREATE_COMPLETION CreateCompletion,
			     PVOID RequestContext, NDK_PD **ppNdkPd)
{
	struct ndk_adapter *ad = to_ndk_adapter(pNdkAdapter);
	struct ndk_obj *antes[] = { &ad->obj };
	struct ndk_vpd *pd;
	NTSTATUS status;

	if (!ppNdkPd)
		return STATUS_INVALID_PARAMETER;
	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return STATUS_INSUFFICIENT_RESOURCES;
	pd->pd = ibv_alloc_pd(to_vad(ad)->ctx);
	if (!pd->pd) {
		status = ndk_verbs_errno_status(errno, NDK_VERBS_CREATE);
		free(pd);
		return status;
	}
	status = ndk_obj_setup(&pd->obj, ad, &pd_ops, &pd_dispatch, antes, 1);
	if (status)
		return status; /* pd_destroy freed it */
	*ppNdkPd = &pd->obj.pub.pd;
	return STATUS_SUCCESS;
}
