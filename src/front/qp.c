/* SPDX-License-Identifier: MIT */
/*
 * NdkCreateQp and NdkCreateQpWithSrq for every provider: the PD's slots,
 * every argument checked against NDK_FN_CREATE_QP(_WITH_SRQ) and
 * NDK_ADAPTER_INFO here, so no provider accepts what another refuses.
 */
#include "front/adapter.h"
#include "front/pd.h"
#include "front/provider.h"

static NTSTATUS qp_create(NDK_PD *pNdkPd, NDK_CQ *pReceiveCq,
			  NDK_CQ *pInitiatorCq, NDK_SRQ *pSrq,
			  struct ndk_qp_attr *attr, NDK_QP **ppNdkQp)
{
	const NDK_ADAPTER_INFO *info;
	struct ndk_adapter *ad;
	struct ndk_obj *pd;

	if (!pNdkPd || !ppNdkQp)
		return STATUS_INVALID_PARAMETER;
	pd = to_ndk_obj(&pNdkPd->Header);
	ad = pd->adapter;
	info = &ad->info;
	attr->rcq = pReceiveCq ? ndk_obj_typed(&pReceiveCq->Header,
					       NdkObjectTypeCq, ad)
			       : NULL;
	attr->icq = pInitiatorCq ? ndk_obj_typed(&pInitiatorCq->Header,
						 NdkObjectTypeCq, ad)
				 : NULL;
	if (!attr->rcq || !attr->icq)
		return STATUS_INVALID_PARAMETER;
	/*
	 * Zero MaxInitiatorRequestSge is allowed: zero-length Sends and
	 * Writes and inline Sends need no SGE slot, and NDK does not forbid
	 * it. A receive queue of its own needs a depth and an SGE.
	 */
	if (!attr->iq_depth || attr->iq_depth > info->MaxInitiatorQueueDepth ||
	    attr->iq_sge > info->MaxInitiatorRequestSge ||
	    attr->inline_size > info->MaxInlineDataSize)
		return STATUS_INVALID_PARAMETER;
	if (pSrq) {
		attr->srq = ndk_obj_typed(&pSrq->Header, NdkObjectTypeSrq, ad);
		if (!attr->srq)
			return STATUS_INVALID_PARAMETER;
	} else if (!attr->rq_depth ||
		   attr->rq_depth > info->MaxReceiveQueueDepth ||
		   !attr->rq_sge || attr->rq_sge > info->MaxReceiveRequestSge) {
		return STATUS_INVALID_PARAMETER;
	}
	return ad->provider->create_qp(pd, attr, ppNdkQp);
}

NTSTATUS ndk_create_qp(NDK_PD *pNdkPd, NDK_CQ *pReceiveCq, NDK_CQ *pInitiatorCq,
		       PVOID QPContext, ULONG ReceiveQueueDepth,
		       ULONG InitiatorQueueDepth, ULONG MaxReceiveRequestSge,
		       ULONG MaxInitiatorRequestSge, ULONG InlineDataSize,
		       NDK_FN_CREATE_COMPLETION CreateCompletion,
		       PVOID RequestContext, NDK_QP **ppNdkQp)
{
	struct ndk_qp_attr attr = {
		.context = QPContext,
		.rq_depth = ReceiveQueueDepth,
		.iq_depth = InitiatorQueueDepth,
		.rq_sge = MaxReceiveRequestSge,
		.iq_sge = MaxInitiatorRequestSge,
		.inline_size = InlineDataSize,
	};

	return qp_create(pNdkPd, pReceiveCq, pInitiatorCq, NULL, &attr,
			 ppNdkQp);
}

NTSTATUS ndk_create_qp_with_srq(NDK_PD *pNdkPd, NDK_CQ *pReceiveCq,
				NDK_CQ *pInitiatorCq, NDK_SRQ *pSrq,
				PVOID QPContext, ULONG InitiatorQueueDepth,
				ULONG MaxInitiatorRequestSge,
				ULONG InlineDataSize,
				NDK_FN_CREATE_COMPLETION CreateCompletion,
				PVOID RequestContext, NDK_QP **ppNdkQp)
{
	struct ndk_qp_attr attr = {
		.context = QPContext,
		.iq_depth = InitiatorQueueDepth,
		.iq_sge = MaxInitiatorRequestSge,
		.inline_size = InlineDataSize,
	};

	if (!pSrq)
		return STATUS_INVALID_PARAMETER;
	return qp_create(pNdkPd, pReceiveCq, pInitiatorCq, pSrq, &attr,
			 ppNdkQp);
}
