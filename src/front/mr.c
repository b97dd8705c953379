/* SPDX-License-Identifier: MIT */
/* NdkCreateMr for every provider: the PD's slot, checked here. */
#include "front/adapter.h"
#include "front/pd.h"
#include "front/provider.h"

NTSTATUS ndk_create_mr(NDK_PD *pNdkPd, BOOLEAN FastRegister,
		       NDK_FN_CREATE_COMPLETION CreateCompletion,
		       PVOID RequestContext, NDK_MR **ppNdkMr)
{
	struct ndk_obj *pd;

	if (!pNdkPd || !ppNdkMr)
		return STATUS_INVALID_PARAMETER;
	pd = to_ndk_obj(&pNdkPd->Header);
	/* Created inline: no CreateCompletion (NDK_FN_CREATE_COMPLETION). */
	return pd->adapter->provider->create_mr(pd, FastRegister != FALSE,
						ppNdkMr);
}
