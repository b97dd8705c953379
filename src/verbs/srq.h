/* SPDX-License-Identifier: MIT */
/*
 * The verbs provider's shared receive queue: an ibv_srq, its slots
 * (verbs/wr.h) and the NDK notification threshold as the device's SRQ
 * limit (docs/verbs.md, Shared receive queues).
 */
#ifndef NDK_VERBS_SRQ_H
#define NDK_VERBS_SRQ_H

#include "front/object.h"
#include "verbs/verbs.h"
#include "verbs/wr.h"

struct ndk_vsrq {
	struct ndk_obj obj;
	struct ndk_vadapter *vad;
	struct ibv_srq *srq;
	struct ndk_vsrqslots slots;
	uint32_t max_sge;
	uint32_t dev_wr; /* the receives the device's SRQ holds */
	bool mapped; /* its key is in the adapter's map */

	/* The consumer's threshold, armed once (NdkModifySrq re-arms). */
	uint32_t threshold; /* NdkModifySrq's calls are serialized */
	atomic_bool armed;
	NDK_FN_SRQ_NOTIFICATION_CALLBACK notify;
	PVOID notify_ctx;
	struct ndk_work notify_work;
};

static inline struct ndk_vsrq *to_vsrq(NDK_SRQ *srq)
{
	return container_of(srq, struct ndk_vsrq, obj.pub.srq);
}

struct ndk_srq_attr;
/* The provider's create (front/provider.h): front/srq.c checked attr. */
NTSTATUS ndk_verbs_create_srq(struct ndk_obj *pd,
			      const struct ndk_srq_attr *attr,
			      NDK_SRQ **ppNdkSrq);

/* The device's IBV_EVENT_SRQ_LIMIT_REACHED (map lock held, from
 * ndk_vqpmap_with_ibv; arg: the event type). */
void ndk_vsrq_async(void *owner, void *arg);

#endif /* NDK_VERBS_SRQ_H */
