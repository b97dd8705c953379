/* SPDX-License-Identifier: MIT */
/*
 * Memory windows for every provider: NdkCreateMw (the PD's slot) and the
 * window's dispatch table. An adapter whose NDK_ADAPTER_INFO announces
 * MaxWindowSize 0 has no memory windows: the create says so (docs/ndk.md,
 * Limits) before the consumer binds one. Binding and invalidating are
 * work requests, the QP's.
 */
#include "front/adapter.h"
#include "front/pd.h"
#include "front/provider.h"

NTSTATUS ndk_create_mw(NDK_PD *pNdkPd,
		       NDK_FN_CREATE_COMPLETION CreateCompletion,
		       PVOID RequestContext, NDK_MW **ppNdkMw)
{
	const struct ndk_provider_ops *prov;
	struct ndk_obj *pd;

	if (!pNdkPd || !ppNdkMw)
		return STATUS_INVALID_PARAMETER;
	pd = to_ndk_obj(&pNdkPd->Header);
	prov = pd->adapter->provider;
	if (!pd->adapter->info.MaxWindowSize || !prov->create_mw)
		return STATUS_NOT_SUPPORTED;
	return prov->create_mw(pd, ppNdkMw);
}

static UINT32 mw_get_remote_token(NDK_MW *pNdkMw)
{
	struct ndk_obj *mw = to_ndk_obj(&pNdkMw->Header);

	return mw->adapter->provider->mw_token(mw);
}

const NDK_MW_DISPATCH ndk_mw_dispatch = {
	.NdkCloseMw = ndk_close_object,
	.NdkQueryExtension = ndk_query_extension,
	.NdkGetRemoteTokenFromMw = mw_get_remote_token,
};
