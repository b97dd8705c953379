/* SPDX-License-Identifier: MIT */
/*
 * The CQ as the front end serves it, for every provider (front/cq.c):
 * NdkCreateCq's checks and the CQ's dispatch table. A provider's CQ
 * embeds struct ndk_cq first; the front end turns the consumer's polls
 * into the provider's cq_poll (NDK_RESULT_EX), converts them for
 * NdkGetCqResults, yields a core now and then to a consumer that keeps
 * polling an empty CQ, and checks the arm type and what the adapter
 * announces before cq_arm, cq_resize and cq_moderation
 * (front/provider.h).
 */
#ifndef NDK_FRONT_CQ_H
#define NDK_FRONT_CQ_H

#include <ndk/ndk.h>
#include "core/poll_yield.h"
#include "front/object.h"

struct ndk_cq {
	struct ndk_obj obj; /* must stay first */
	/* Only the consumer's polls touch it: NDK has the consumer
	 * serialise its own calls on one CQ (NDKPI Completion Handling
	 * Requirements). */
	struct ndk_poll_yield yield;
};

static inline struct ndk_cq *to_ndk_cq(NDK_CQ *cq)
{
	return container_of(cq, struct ndk_cq, obj.pub.cq);
}

/* The CQ's dispatch table, for every provider. */
extern const NDK_CQ_DISPATCH ndk_cq_dispatch;

/* A provider's create_cq: the front end's part, before ndk_obj_setup. */
void ndk_cq_init(struct ndk_cq *cq);

/* NdkCreateCq, the adapter's slot for every provider. */
NTSTATUS ndk_create_cq(NDK_ADAPTER *pNdkAdapter, ULONG CqDepth,
		       NDK_FN_CQ_NOTIFICATION_CALLBACK CqNotification,
		       PVOID CqNotificationContext, GROUP_AFFINITY *Affinity,
		       NDK_FN_CREATE_COMPLETION CreateCompletion,
		       PVOID RequestContext, NDK_CQ **ppNdkCq);

#endif /* NDK_FRONT_CQ_H */
