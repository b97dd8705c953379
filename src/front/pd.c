/* SPDX-License-Identifier: MIT */
/*
 * The protection domain, one object for every provider: the front end
 * allocates it with room for the provider's state (pd_size), answers its
 * dispatch table and checks the creates it leads to; the provider sets
 * up and releases its part (pd_init, pd_fini).
 */
#include <stdlib.h>
#include "front/adapter.h"
#include "front/pd.h"
#include "front/provider.h"

static void pd_destroy(struct ndk_obj *obj)
{
	if (obj->adapter->provider->pd_fini)
		obj->adapter->provider->pd_fini(obj);
	free(obj);
}

static const struct ndk_obj_ops pd_ops = {
	.type = NdkObjectTypePd,
	.name = "pd",
	.destroy = pd_destroy,
};

static VOID pd_get_privileged_token(NDK_PD *pNdkPd, UINT32 *pToken)
{
	if (pNdkPd && pToken)
		*pToken = to_ndk_obj(&pNdkPd->Header)
				  ->adapter->provider->privileged_token;
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
	struct ndk_adapter *ad;
	struct ndk_obj *antes[1], *pd;
	NTSTATUS status;

	if (!pNdkAdapter || !ppNdkPd)
		return STATUS_INVALID_PARAMETER;
	ad = to_ndk_adapter(pNdkAdapter);
	pd = calloc(1, ad->provider->pd_size);
	if (!pd)
		return STATUS_INSUFFICIENT_RESOURCES;
	/* pd_destroy finds the provider through it, before ndk_obj_init. */
	pd->adapter = ad;
	status = ad->provider->pd_init(pd);
	if (status) {
		pd_destroy(pd);
		return status;
	}
	antes[0] = &ad->obj;
	status = ndk_obj_setup(pd, ad, &pd_ops, &pd_dispatch, antes, 1);
	if (status)
		return status; /* pd_destroy freed it */
	*ppNdkPd = &pd->pub.pd;
	return STATUS_SUCCESS;
}
