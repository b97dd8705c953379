/* SPDX-License-Identifier: MIT */
/* Shared receive queue: NdkCreateSrq, NdkModifySrq, NdkSrqReceive. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "front/adapter.h"
#include "core/log.h"
#include "front/provider.h"
#include "sw/sw.h"
#include "sw/pd.h"
#include "sw/srq.h"

static uint32_t ring_size_for(uint32_t depth)
{
	uint32_t size = 1;

	while (size < depth)
		size <<= 1;
	return size;
}

static struct sw_rqe *srq_slot(struct sw_srq *srq, unsigned char *ring,
			       uint32_t size, uint32_t idx)
{
	return (struct sw_rqe *)(void *)(ring +
					 (size_t)(idx & (size - 1)) *
						 sw_rqe_stride(srq->max_sge));
}

static void srq_notify_work(struct ndk_work *w)
{
	struct sw_srq *srq = container_of(w, struct sw_srq, notify_work);

	/*
	 * No notification once the close has started (NDKPI Object Lifetime
	 * Requirements); the consumer may close the SRQ inside the callback:
	 * our hold keeps the close pending until we release it.
	 */
	if (ndk_obj_is_open(&srq->obj))
		srq->notify(srq->notify_ctx, STATUS_SUCCESS);
	ndk_obj_release(&srq->obj);
}

/*
 * SRQ lock held: disarms and returns true if an armed notification is due
 * because fewer than threshold receives are queued.
 */
static bool srq_check_threshold_locked(struct sw_srq *srq)
{
	NDK_ASSERT_LOCKED(&srq->lock);
	if (!srq->armed || srq->tail - srq->head >= srq->threshold)
		return false;
	srq->armed = false; /* one-shot until NdkModifySrq re-arms */
	return srq->notify != NULL;
}

/* SRQ lock not held (begin_event takes the adapter lock). */
static void srq_fire(struct sw_srq *srq)
{
	if (!ndk_obj_begin_event(&srq->obj))
		return;
	/*
	 * Still queued from an earlier firing that has not run yet: that run
	 * comes after this arm, so it serves both; drop the extra hold.
	 */
	if (!ndk_engine_post(&srq->obj.adapter->engine, &srq->notify_work))
		ndk_obj_release(&srq->obj);
}

int sw_srq_take(struct sw_srq *srq, struct sw_rqe *out)
{
	struct sw_rqe *e;
	bool fire;

	ndk_lock(&srq->lock);
	if (srq->head == srq->tail) {
		ndk_unlock(&srq->lock);
		return -EAGAIN;
	}
	e = srq_slot(srq, srq->ring, srq->size, srq->head++);
	out->ctx = e->ctx;
	out->nsge = e->nsge;
	out->state = 0;
	memcpy(out->sge, e->sge, (size_t)e->nsge * sizeof(NDK_SGE));
	fire = srq_check_threshold_locked(srq);
	ndk_unlock(&srq->lock);
	if (fire)
		srq_fire(srq);
	return 0;
}

uint32_t sw_srq_count(struct sw_srq *srq)
{
	uint32_t n;

	ndk_lock(&srq->lock);
	n = srq->tail - srq->head;
	ndk_unlock(&srq->lock);
	return n;
}

static NTSTATUS srq_receive(NDK_SRQ *pNdkSrq, PVOID RequestContext,
			    CONST NDK_SGE *pSgl, ULONG nSge)
{
	struct sw_srq *srq = to_sw_srq(pNdkSrq);
	struct sw_rqe *e;

	if (nSge > srq->max_sge || (nSge && !pSgl))
		return STATUS_INVALID_PARAMETER;
	ndk_lock(&srq->lock);
	if (srq->tail - srq->head >= srq->depth) {
		ndk_unlock(&srq->lock);
		return STATUS_INSUFFICIENT_RESOURCES;
	}
	e = srq_slot(srq, srq->ring, srq->size, srq->tail);
	e->ctx = RequestContext;
	e->nsge = nSge;
	e->state = 0;
	if (nSge)
		memcpy(e->sge, pSgl, (size_t)nSge * sizeof(NDK_SGE));
	srq->tail++;
	ndk_unlock(&srq->lock);
	return STATUS_SUCCESS;
}

/* SRQ lock held: moves the queued receives into a ring of new_size slots. */
static void srq_regrow_locked(struct sw_srq *srq, unsigned char *ring,
			      uint32_t new_size)
{
	size_t stride = sw_rqe_stride(srq->max_sge);
	uint32_t n = srq->tail - srq->head, i;

	NDK_ASSERT_LOCKED(&srq->lock);

	for (i = 0; i < n; i++)
		memcpy(srq_slot(srq, ring, new_size, i),
		       srq_slot(srq, srq->ring, srq->size, srq->head + i),
		       stride);
	free(srq->ring);
	srq->ring = ring;
	srq->size = new_size;
	srq->head = 0;
	srq->tail = n;
}

static NTSTATUS srq_modify(NDK_SRQ *pNdkSrq, ULONG SrqDepth,
			   ULONG NotifyThreshold,
			   NDK_FN_REQUEST_COMPLETION RequestCompletion,
			   PVOID RequestContext)
{
	struct sw_srq *srq = to_sw_srq(pNdkSrq);
	struct ndk_adapter *ad = srq->obj.adapter;
	unsigned char *ring = NULL;
	uint32_t depth, threshold, new_size = 0;
	bool fire;

	if (SrqDepth > ad->info.MaxSrqDepth)
		return STATUS_INVALID_PARAMETER;
	/*
	 * Allocate outside the lock; the depth read here is only a hint for
	 * the size, the checks below are redone under the lock. Consumers
	 * serialize calls on one SRQ, so only sw_srq_take races with us.
	 */
	if (SrqDepth) {
		new_size = ring_size_for(SrqDepth);
		ndk_lock(&srq->lock);
		if (new_size == srq->size)
			new_size = 0;
		ndk_unlock(&srq->lock);
		if (new_size) {
			ring = calloc(new_size, sw_rqe_stride(srq->max_sge));
			if (!ring)
				return STATUS_INSUFFICIENT_RESOURCES;
		}
	}

	ndk_lock(&srq->lock);
	depth = SrqDepth ? SrqDepth : srq->depth;
	threshold = NotifyThreshold ? NotifyThreshold : srq->threshold;
	/*
	 * A depth below the receives already queued would drop some of them;
	 * a threshold above the depth could never be reached from above (the
	 * same rule as verbs' srq_limit <= max_wr).
	 */
	if (depth < srq->tail - srq->head || threshold > depth) {
		ndk_unlock(&srq->lock);
		free(ring);
		return STATUS_INVALID_PARAMETER;
	}
	if (ring)
		srq_regrow_locked(srq, ring, new_size);
	srq->depth = depth;
	/* Zero keeps the threshold and the arm state (NdkModifySrq). */
	if (NotifyThreshold) {
		srq->threshold = NotifyThreshold;
		srq->armed = true;
	}
	/* Armed and already below: notify at once. */
	fire = srq_check_threshold_locked(srq);
	ndk_unlock(&srq->lock);
	if (fire)
		srq_fire(srq);
	return STATUS_SUCCESS;
}

static void srq_close_begin(struct ndk_obj *obj)
{
	struct sw_srq *srq = container_of(obj, struct sw_srq, obj);

	ndk_lock(&srq->lock);
	srq->armed = false;
	ndk_unlock(&srq->lock);
}

static void srq_destroy(struct ndk_obj *obj)
{
	struct sw_srq *srq = container_of(obj, struct sw_srq, obj);

	/*
	 * Receives still queued were never consumed by a QP, so they have no
	 * CQ to complete on (see srq.h): drop them.
	 */
	if (srq->tail != srq->head)
		ndk_dbg("srq %p: dropping %u unconsumed receives", (void *)srq,
			srq->tail - srq->head);
	ndk_lock_destroy(&srq->lock);
	free(srq->ring);
	free(srq);
}

static const struct ndk_obj_ops srq_ops = {
	.type = NdkObjectTypeSrq,
	.name = "srq",
	.close_begin = srq_close_begin,
	.destroy = srq_destroy,
};

static const NDK_SRQ_DISPATCH srq_dispatch = {
	.NdkCloseSrq = ndk_close_object,
	.NdkQueryExtension = ndk_query_extension,
	.NdkModifySrq = srq_modify,
	.NdkSrqReceive = srq_receive,
};

NTSTATUS sw_create_srq(struct ndk_obj *pd_obj, const struct ndk_srq_attr *attr,
		       NDK_SRQ **ppNdkSrq)
{
	struct sw_pd *pd = container_of(pd_obj, struct sw_pd, obj);
	struct ndk_adapter *ad = pd->obj.adapter;
	struct ndk_obj *antes[1];
	struct sw_srq *srq;
	NTSTATUS status;

	srq = calloc(1, sizeof(*srq));
	if (!srq)
		return STATUS_INSUFFICIENT_RESOURCES;
	ndk_lock_init(&srq->lock, NDK_LOCK_SRQ);
	srq->max_sge = attr->max_sge;
	srq->depth = attr->depth;
	srq->size = ring_size_for(attr->depth);
	srq->threshold = attr->threshold;
	/* Armed at create; only a take can fire it (see srq.h). */
	srq->armed = attr->threshold != 0;
	srq->notify = attr->notify;
	srq->notify_ctx = attr->notify_ctx;
	ndk_work_init(&srq->notify_work, srq_notify_work);
	srq->ring = calloc(srq->size, sw_rqe_stride(srq->max_sge));
	if (!srq->ring) {
		srq_destroy(&srq->obj);
		return STATUS_INSUFFICIENT_RESOURCES;
	}
	antes[0] = &pd->obj;
	status =
		ndk_obj_setup(&srq->obj, ad, &srq_ops, &srq_dispatch, antes, 1);
	if (status)
		return status;
	*ppNdkSrq = &srq->obj.pub.srq;
	return STATUS_SUCCESS;
}
