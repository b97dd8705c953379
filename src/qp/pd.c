/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include "front/adapter.h"
#include "qp/provider.h"
#include "qp/pd.h"

static atomic_uint next_pd_id = 1;

static void pd_destroy(struct ndk_obj *obj)
{
	free(container_of(obj, struct ndk_pd, obj));
}

static const struct ndk_obj_ops pd_ops = {
	.type = NdkObjectTypePd,
	.name = "pd",
	.destroy = pd_destroy,
};

static VOID pd_get_privileged_token(NDK_PD *pNdkPd, UINT32 *pToken)
{
	if (pToken)
		*pToken = NDK_PRIVILEGED_TOKEN;
}

static const NDK_PD_DISPATCH pd_dispatch = {
	.NdkClosePd = ndk_close_object,
	.NdkQueryExtension = ndk_query_extension,
	.NdkCreateMr = ndk_create_mr,
	.NdkCreateMw = ndk_create_mw,
	.NdkCreateSrq = ndk_create_srq,
	.NdkCreateQp = ndk_create_qp,
	.NdkCreateQpWithSrq = ndk_create_qp_with_srq,
	.NdkGetPrivilegedMemoryRegionToken = pd_get_privileged_token,
};

NTSTATUS ndk_create_pd(NDK_ADAPTER *pNdkAdapter,
		       NDK_FN_CREATE_COMPLETION CreateCompletion,
		       PVOID RequestContext, NDK_PD **ppNdkPd)
{
	struct ndk_adapter *ad = to_ndk_adapter(pNdkAdapter);
	struct ndk_obj *antes[] = { &ad->obj };
	struct ndk_pd *pd;
	NTSTATUS status;

	if (!ppNdkPd)
		return STATUS_INVALID_PARAMETER;
	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return STATUS_INSUFFICIENT_RESOURCES;
	pd->id = atomic_fetch_add(&next_pd_id, 1);
	status = ndk_obj_setup(&pd->obj, ad, &pd_ops, &pd_dispatch, antes, 1);
	if (status)
		return status;
	*ppNdkPd = &pd->obj.pub.pd;
	return STATUS_SUCCESS;
}
