/* SPDX-License-Identifier: MIT */
/*
 * NdkCreateSrq for every provider: the PD's slot, its arguments checked
 * against NDK_FN_CREATE_SRQ and NDK_ADAPTER_INFO (MaxSrqDepth 0: the
 * adapter has no SRQ, and every depth is refused).
 */
#include "front/adapter.h"
#include "front/pd.h"
#include "front/provider.h"

NTSTATUS ndk_create_srq(NDK_PD *pNdkPd, ULONG SrqDepth,
			ULONG MaxReceiveRequestSge, ULONG NotifyThreshold,
			NDK_FN_SRQ_NOTIFICATION_CALLBACK SrqNotification,
			PVOID SrqNotificationContext, GROUP_AFFINITY *Affinity,
			NDK_FN_CREATE_COMPLETION CreateCompletion,
			PVOID RequestContext, NDK_SRQ **ppNdkSrq)
{
	struct ndk_srq_attr attr = {
		.depth = SrqDepth,
		.max_sge = MaxReceiveRequestSge,
		.threshold = NotifyThreshold,
		.notify = SrqNotification,
		.notify_ctx = SrqNotificationContext,
		.affinity = Affinity,
	};
	const NDK_ADAPTER_INFO *info;
	struct ndk_obj *pd;

	if (!pNdkPd || !ppNdkSrq)
		return STATUS_INVALID_PARAMETER;
	pd = to_ndk_obj(&pNdkPd->Header);
	info = &pd->adapter->info;
	if (!SrqDepth || SrqDepth > info->MaxSrqDepth ||
	    !MaxReceiveRequestSge ||
	    MaxReceiveRequestSge > info->MaxReceiveRequestSge ||
	    NotifyThreshold > SrqDepth)
		return STATUS_INVALID_PARAMETER;
	return pd->adapter->provider->create_srq(pd, &attr, ppNdkSrq);
}
