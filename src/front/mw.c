/* SPDX-License-Identifier: MIT */
/*
 * NdkCreateMw for every provider: the PD's slot. An adapter whose
 * NDK_ADAPTER_INFO announces MaxWindowSize 0 has no memory windows: the
 * create says so (docs/ndk.md, Limits) before the consumer binds one.
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
