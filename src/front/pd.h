/* SPDX-License-Identifier: MIT */
/*
 * The PD and the creates of its dispatch table, for every provider: the
 * front end owns the object and the checks of every create (front/pd.c,
 * mr.c, mw.c, srq.c, qp.c); the provider keeps its state behind it and
 * creates what the checks let through (front/provider.h).
 */
#ifndef NDK_FRONT_PD_H
#define NDK_FRONT_PD_H

#include <ndk/ndk.h>

/* NdkCreatePd, the adapter's slot. */
NTSTATUS ndk_create_pd(NDK_ADAPTER *pNdkAdapter,
		       NDK_FN_CREATE_COMPLETION CreateCompletion,
		       PVOID RequestContext, NDK_PD **ppNdkPd);

/* The PD's creates (front/mr.c, mw.c, srq.c, qp.c). */
NTSTATUS ndk_create_mr(NDK_PD *pNdkPd, BOOLEAN FastRegister,
		       NDK_FN_CREATE_COMPLETION CreateCompletion,
		       PVOID RequestContext, NDK_MR **ppNdkMr);
NTSTATUS ndk_create_mw(NDK_PD *pNdkPd,
		       NDK_FN_CREATE_COMPLETION CreateCompletion,
		       PVOID RequestContext, NDK_MW **ppNdkMw);
NTSTATUS ndk_create_srq(NDK_PD *pNdkPd, ULONG SrqDepth,
			ULONG MaxReceiveRequestSge, ULONG NotifyThreshold,
			NDK_FN_SRQ_NOTIFICATION_CALLBACK SrqNotification,
			PVOID SrqNotificationContext, GROUP_AFFINITY *Affinity,
			NDK_FN_CREATE_COMPLETION CreateCompletion,
			PVOID RequestContext, NDK_SRQ **ppNdkSrq);
NTSTATUS ndk_create_qp(NDK_PD *pNdkPd, NDK_CQ *pReceiveCq, NDK_CQ *pInitiatorCq,
		       PVOID QPContext, ULONG ReceiveQueueDepth,
		       ULONG InitiatorQueueDepth, ULONG MaxReceiveRequestSge,
		       ULONG MaxInitiatorRequestSge, ULONG InlineDataSize,
		       NDK_FN_CREATE_COMPLETION CreateCompletion,
		       PVOID RequestContext, NDK_QP **ppNdkQp);
NTSTATUS ndk_create_qp_with_srq(NDK_PD *pNdkPd, NDK_CQ *pReceiveCq,
				NDK_CQ *pInitiatorCq, NDK_SRQ *pSrq,
				PVOID QPContext, ULONG InitiatorQueueDepth,
				ULONG MaxInitiatorRequestSge,
				ULONG InlineDataSize,
				NDK_FN_CREATE_COMPLETION CreateCompletion,
				PVOID RequestContext, NDK_QP **ppNdkQp);

/* A window's dispatch table, for every provider (front/mw.c). */
extern const NDK_MW_DISPATCH ndk_mw_dispatch;

#endif /* NDK_FRONT_PD_H */
