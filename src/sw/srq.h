/* SPDX-License-Identifier: MIT */
/*
 * Shared receive queue (NDK_FN_CREATE_SRQ, NDK_FN_MODIFY_SRQ; docs/ndk.md,
 * Shared receive queues).
 *
 * Receives posted with NdkSrqReceive wait here until the data path of a QP
 * created with NdkCreateQpWithSrq takes one (sw_srq_take) for an incoming
 * Send; from then on the receive belongs to that QP and completes on its
 * receive CQ. The SRQ itself has no CQ.
 *
 * Notification: a non-zero threshold arms a one-shot SrqNotification that
 * fires, on the engine thread, when the number of queued receives drops
 * below the threshold (NdkModifySrq: immediately if already below). The
 * threshold given to NdkCreateSrq arms it too, but only a take can then
 * fire it: an SRQ that was just created is empty and has not "dropped"
 * below anything, and firing before the consumer could post would be
 * noise. After firing it stays disarmed until NdkModifySrq arms it again.
 *
 * Closing: the SRQ is an antecedent of its QPs (NDKPI Terminology), so its
 * close completes only after they are closed. Receives still queued then were
 * never consumed by any QP, so there is no CQ to complete them on; they are
 * dropped, like verbs drops the WQEs of a destroyed SRQ.
 */
#ifndef SW_SRQ_H
#define SW_SRQ_H

#include <pthread.h>
#include <stdint.h>
#include "core/lock.h"
#include "front/object.h"

/* One posted receive: the consumer's context and a copy of its SGEs. */
struct sw_rqe {
	PVOID ctx;
	uint32_t nsge;
	uint32_t state; /* owner-specific (the QP's receive queue) */
	NDK_SGE sge[]; /* the queue's max SGE count */
};

/* Bytes of one ring slot holding up to max_sge SGEs (8-byte aligned). */
static inline size_t sw_rqe_stride(uint32_t max_sge)
{
	return sizeof(struct sw_rqe) + (size_t)max_sge * sizeof(NDK_SGE);
}

struct sw_srq {
	struct ndk_obj obj;
	uint32_t max_sge; /* fixed at create */

	/*
	 * lock protects the ring, the depth and the notification arm. Never
	 * held across a consumer callback or while taking the adapter lock.
	 */
	struct ndk_lock lock;
	unsigned char *ring; /* size slots of sw_rqe_stride(max_sge) */
	uint32_t size; /* power of two >= depth */
	uint32_t depth; /* SrqDepth: max queued receives */
	uint32_t head, tail; /* free running: next to take, next to post */
	uint32_t threshold; /* 0: none */
	bool armed;

	NDK_FN_SRQ_NOTIFICATION_CALLBACK notify;
	PVOID notify_ctx;
	struct ndk_work notify_work; /* runs notify on the engine thread */
};

static inline struct sw_srq *to_sw_srq(NDK_SRQ *srq)
{
	return container_of(srq, struct sw_srq, obj.pub.srq);
}

/*
 * Data path: moves the oldest queued receive into out, which must have
 * room for srq->max_sge SGEs, and fires an armed notification if the
 * queue dropped below its threshold. Returns 0 or -EAGAIN if the SRQ is
 * empty (the peer sent without a posted receive). Still works while the
 * SRQ's close pends: its QPs live on until they are closed, and an early
 * antecedent close is a plain dereference (NDKPI Object Lifetime
 * Requirements). Any thread.
 */
int sw_srq_take(struct sw_srq *srq, struct sw_rqe *out);

/* Receives currently queued (for tests and statistics). */
uint32_t sw_srq_count(struct sw_srq *srq);

#endif /* SW_SRQ_H */
