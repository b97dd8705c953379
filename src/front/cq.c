/* SPDX-License-Identifier: MIT */
/*
 * The CQ for every provider: NdkCreateCq with the arguments
 * NDK_FN_CREATE_CQ and NDK_ADAPTER_INFO allow (docs/ndk.md, Limits), and
 * the CQ's dispatch table (front/cq.h).
 */
#include <sched.h>
#include "core/compiler.h"
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
	 * arms still passes a callback. A warning, since a first consumer
	 * trips on it and the status alone does not say which argument. */
	if (!CqNotification) {
		ndk_warn(
			"NdkCreateCq: STATUS_INVALID_PARAMETER: CqNotification "
			"is NULL; NDK requires a notification callback for "
			"every CQ, even one that is never armed");
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

void ndk_cq_init(struct ndk_cq *cq)
{
	ndk_poll_yield_init(&cq->yield);
}

static const struct ndk_provider_ops *cq_prov(const struct ndk_cq *cq)
{
	return cq->obj.adapter->provider;
}

/* After each poll: a consumer busy-polling an empty CQ yields its core
 * once every NDK_POLL_YIELD empty polls, so the threads that fill the CQ
 * (and other polling consumers) run on few cores. */
static void cq_polled(struct ndk_cq *cq, ULONG got)
{
	if (ndk_poll_yield_note(&cq->yield, got))
		sched_yield();
}

static NDK_HOT ULONG cq_get_results_ex(NDK_CQ *pNdkCq, NDK_RESULT_EX Results[],
				       ULONG nResults)
{
	struct ndk_cq *cq = to_ndk_cq(pNdkCq);
	ULONG n;

	if (!Results || !nResults)
		return 0;
	n = cq_prov(cq)->cq_poll(cq, Results, nResults);
	cq_polled(cq, n);
	return n;
}

static NDK_HOT ULONG cq_get_results(NDK_CQ *pNdkCq, NDK_RESULT Results[],
				    ULONG nResults)
{
	struct ndk_cq *cq = to_ndk_cq(pNdkCq);
	/* Small: a larger array put the stack of a busy-polling consumer
	 * on one more page, which costs a page walk after every system
	 * call (docs/performance.md, "Pages per hop"); a long batch loops. */
	NDK_RESULT_EX ex[4];
	ULONG done = 0, want, n, i;

	if (!Results)
		return 0;
	do {
		want = MIN(nResults - done, (ULONG)ARRAY_SIZE(ex));
		if (!want)
			break;
		n = cq_prov(cq)->cq_poll(cq, ex, want);
		for (i = 0; i < n; i++) {
			Results[done + i].Status = ex[i].Status;
			Results[done + i].BytesTransferred =
				ex[i].BytesTransferred;
			Results[done + i].QPContext = ex[i].QPContext;
			Results[done + i].RequestContext = ex[i].RequestContext;
		}
		done += n;
	} while (n == want);
	cq_polled(cq, done);
	return done;
}

static VOID cq_arm(NDK_CQ *pNdkCq, ULONG Type)
{
	struct ndk_cq *cq = to_ndk_cq(pNdkCq);

	switch (Type) {
	case NDK_CQ_NOTIFY_ERRORS:
	case NDK_CQ_NOTIFY_ANY:
	case NDK_CQ_NOTIFY_SOLICITED:
		cq_prov(cq)->cq_arm(cq, Type);
		return;
	default:
		/* NDK_FN_ARM_CQ returns nothing: say why nothing happens. */
		ndk_warn("cq %p: unknown arm type %u ignored", (void *)cq,
			 (unsigned int)Type);
	}
}

/* Done inline: no RequestCompletion (NDK_FN_REQUEST_COMPLETION). */
static NTSTATUS cq_resize(NDK_CQ *pNdkCq, ULONG CqDepth,
			  NDK_FN_REQUEST_COMPLETION RequestCompletion,
			  PVOID RequestContext)
{
	struct ndk_cq *cq = to_ndk_cq(pNdkCq);
	const NDK_ADAPTER_INFO *info = &cq->obj.adapter->info;

	/* What the adapter announces is what the call does. */
	if (!(info->AdapterFlags & NDK_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED))
		return STATUS_NOT_SUPPORTED;
	if (!CqDepth || CqDepth > info->MaxCqDepth)
		return STATUS_INVALID_PARAMETER;
	return cq_prov(cq)->cq_resize(cq, CqDepth);
}

static NTSTATUS cq_control_moderation(NDK_CQ *pNdkCq, ULONG ModerationInterval,
				      ULONG ModerationCount)
{
	struct ndk_cq *cq = to_ndk_cq(pNdkCq);

	if (!(cq->obj.adapter->info.AdapterFlags &
	      NDK_ADAPTER_FLAG_CQ_INTERRUPT_MODERATION_SUPPORTED) ||
	    !cq_prov(cq)->cq_moderation)
		return STATUS_NOT_SUPPORTED;
	return cq_prov(cq)->cq_moderation(cq, ModerationInterval,
					  ModerationCount);
}

const NDK_CQ_DISPATCH ndk_cq_dispatch = {
	.NdkCloseCq = ndk_close_object,
	.NdkQueryExtension = ndk_query_extension,
	.NdkResizeCq = cq_resize,
	.NdkArmCq = cq_arm,
	.NdkGetCqResults = cq_get_results,
	.NdkControlCqInterruptModeration = cq_control_moderation,
	.NdkGetCqResultsEx = cq_get_results_ex,
};
