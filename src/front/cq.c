/* SPDX-License-Identifier: MIT */
/*
 * NdkCreateCq for every provider: the arguments NDK_FN_CREATE_CQ and
 * NDK_ADAPTER_INFO allow, checked once here (docs/ndk.md, Limits), then
 * the provider's create.
 */
#include "core/log.h"
#include "front/adapter.h"
#include "front/cq.h"
#include "front/provider.h"

NTSTATUS ndk_create_cq(NDK_ADAPTER *pNdkAdapter, ULONG CqDepth,
		       NDK_FN_CQ_NOTIFICATION_CALLBACK CqNotification,
		       PVOID CqNotificationContext, GROUP_AFFINITY *Affinity,
		       NDK_FN_CREATE_COMPLETION CreateCompletion,
		       PVOID RequestContext, NDK_CQ **ppNdkCq)
{
	struct ndk_cq_attr attr = {
		.depth = CqDepth,
		.notify = CqNotification,
		.notify_ctx = CqNotificationContext,
		.affinity = Affinity,
	};
	struct ndk_adapter *ad;

	if (!pNdkAdapter || !ppNdkCq)
		return STATUS_INVALID_PARAMETER;
	ad = to_ndk_adapter(pNdkAdapter);
	/* Every CQ notifies (NDK_FN_CREATE_CQ): a consumer that never
	 * arms still passes a callback. Said once in the log, since a
	 * first consumer trips on it. */
	if (!CqNotification) {
		ndk_info("NdkCreateCq: no CqNotification (NDK requires one)");
		return STATUS_INVALID_PARAMETER;
	}
	if (!CqDepth || CqDepth > ad->info.MaxCqDepth) {
		ndk_dbg("NdkCreateCq: depth %lu outside 1..%lu",
			(unsigned long)CqDepth,
			(unsigned long)ad->info.MaxCqDepth);
		return STATUS_INVALID_PARAMETER;
	}
	/* Created inline: no CreateCompletion (NDK_FN_CREATE_COMPLETION). */
	return ad->provider->create_cq(ad, &attr, ppNdkCq);
}
