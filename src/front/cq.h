/* SPDX-License-Identifier: MIT */
/* The CQ as the front end serves it: NdkCreateCq's checks (front/cq.c). */
#ifndef NDK_FRONT_CQ_H
#define NDK_FRONT_CQ_H

#include <ndk/ndk.h>

/* NdkCreateCq, the adapter's slot for every provider. */
NTSTATUS ndk_create_cq(NDK_ADAPTER *pNdkAdapter, ULONG CqDepth,
		       NDK_FN_CQ_NOTIFICATION_CALLBACK CqNotification,
		       PVOID CqNotificationContext, GROUP_AFFINITY *Affinity,
		       NDK_FN_CREATE_COMPLETION CreateCompletion,
		       PVOID RequestContext, NDK_CQ **ppNdkCq);

#endif /* NDK_FRONT_CQ_H */
