/* SPDX-License-Identifier: MIT */
/* A QP's receive queue (sw/rq.h): post, take, complete, flush. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "core/log.h"
#include "sw/cq.h"
#include "sw/rq.h"

int sw_rq_init(struct sw_rq *rq, uint32_t depth, uint32_t max_sge,
	       struct sw_srq *srq, struct sw_cq *cq, PVOID qp_context)
{
	rq->depth = depth;
	rq->max_sge = max_sge;
	for (rq->size = 1; rq->size < depth; rq->size <<= 1)
		;
	rq->ring = calloc(rq->size, sw_rqe_stride(max_sge));
	if (!rq->ring)
		return -ENOMEM;
	ndk_lock_init(&rq->lock, NDK_LOCK_RQ);
	rq->state = SW_RQ_OPEN;
	rq->srq = srq;
	rq->cq = cq;
	rq->qp_context = qp_context;
	return 0;
}

void sw_rq_destroy(struct sw_rq *rq)
{
	if (!rq->ring)
		return;
	ndk_lock_destroy(&rq->lock);
	free(rq->ring);
	rq->ring = NULL;
}

static struct sw_rqe *rq_slot(struct sw_rq *rq, uint32_t idx)
{
	return (struct sw_rqe *)(void *)(rq->ring +
					 (size_t)(idx & (rq->size - 1)) *
						 sw_rqe_stride(rq->max_sge));
}

static void rq_push(struct sw_rq *rq, PVOID ctx, NTSTATUS status, ULONG bytes,
		    NDK_OPERATION_TYPE type, ULONG_PTR tsco, bool solicited)
{
	NDK_RESULT_EX res = {
		.Status = status,
		.BytesTransferred = bytes,
		.QPContext = rq->qp_context,
		.RequestContext = ctx,
		.Type = type,
		.ProviderErrorCode = 0,
		.TypeSpecificCompletionOutput = tsco,
	};

	/* On overrun the CQ reports STATUS_BUFFER_OVERFLOW itself. */
	if (sw_cq_push(rq->cq, &res, solicited))
		ndk_warn("rq %p: CQ %p overrun, completion dropped", (void *)rq,
			 (void *)rq->cq);
}

/*
 * Pushes the flushed receives at the front of the ring. It stops at a
 * receive the data path is still filling, so completions stay in posting
 * order. rq->lock held.
 */
static void rq_push_flushed_locked(struct sw_rq *rq)
{
	struct sw_rqe *e;

	NDK_ASSERT_LOCKED(&rq->lock);

	while (rq->done != rq->head) {
		e = rq_slot(rq, rq->done);
		if (e->state != SW_RQE_FLUSHED)
			break;
		rq_push(rq, e->ctx, STATUS_CANCELLED, 0,
			NdkOperationTypeReceive, 0, false);
		rq->done++;
	}
}

NDK_HOT NTSTATUS sw_rq_post(struct sw_rq *rq, PVOID ctx, const NDK_SGE *sgl,
			    ULONG nsge)
{
	struct sw_rqe *e;

	/* Receives of a QP with an SRQ are posted to the SRQ only. */
	if (rq->srq)
		return STATUS_INVALID_DEVICE_REQUEST;
	if (nsge > rq->max_sge || (nsge && !sgl))
		return STATUS_INVALID_PARAMETER;
	/* Posts are serialized per queue by the consumer (NDKPI Work
	 * Request Posting Requirements); the lock is against NdkFlush and
	 * the data path. */
	ndk_lock(&rq->lock);
	if (rq->tail - rq->done >= rq->depth) {
		ndk_unlock(&rq->lock);
		return STATUS_INSUFFICIENT_RESOURCES;
	}
	e = rq_slot(rq, rq->tail);
	e->ctx = ctx;
	e->nsge = nsge;
	e->state = SW_RQE_POSTED;
	if (nsge)
		ndk_copy(e->sge, sgl, (size_t)nsge * sizeof(NDK_SGE));
	rq->tail++;
	ndk_unlock(&rq->lock);
	return STATUS_SUCCESS;
}

NDK_HOT struct sw_rqe *sw_rq_take(struct sw_rq *rq)
{
	struct sw_rqe *e = NULL;

	ndk_lock(&rq->lock);
	if (rq->state == SW_RQ_CLOSED)
		goto out;
	if (rq->srq) {
		/* Move one from the SRQ into our ring of receives in progress. */
		if (rq->tail - rq->done >= rq->depth)
			goto out;
		e = rq_slot(rq, rq->tail);
		if (sw_srq_take(rq->srq, e)) {
			e = NULL;
			goto out;
		}
		rq->tail++;
	} else {
		if (rq->head == rq->tail)
			goto out;
		e = rq_slot(rq, rq->head);
	}
	e->state = SW_RQE_TAKEN;
	rq->head++;
out:
	ndk_unlock(&rq->lock);
	return e;
}

NDK_HOT void sw_rq_complete(struct sw_rq *rq, struct sw_rqe *rqe,
			    NTSTATUS status, ULONG bytes,
			    NDK_OPERATION_TYPE type, ULONG_PTR tsco,
			    bool solicited)
{
	ndk_lock(&rq->lock);
	if (rq->done == rq->head || rq_slot(rq, rq->done) != rqe ||
	    rqe->state != SW_RQE_TAKEN) {
		/* Cancelled by the close already: it completed once. */
		ndk_unlock(&rq->lock);
		return;
	}
	/* An error status satisfies a SOLICITED arm anyway (NDK_FN_ARM_CQ). */
	rq_push(rq, rqe->ctx, status, bytes, type, tsco, solicited);
	rq->done++;
	/* Flushed receives queued behind this one may go now; there are none
	 * unless a flush ran while this one was being filled (the call stays
	 * off the code pages of a message's path). */
	if (rq->done != rq->head)
		rq_push_flushed_locked(rq);
	ndk_unlock(&rq->lock);
}

/* Cancels the posted receives; with taken also those the data path holds. */
static void rq_cancel(struct sw_rq *rq, bool taken)
{
	uint32_t i;

	ndk_lock(&rq->lock);
	if (taken)
		rq->state = SW_RQ_CLOSED;
	for (i = taken ? rq->done : rq->head; i != rq->tail; i++)
		rq_slot(rq, i)->state = SW_RQE_FLUSHED;
	rq->head = rq->tail;
	rq_push_flushed_locked(rq);
	ndk_unlock(&rq->lock);
}

void sw_rq_flush(struct sw_rq *rq)
{
	rq_cancel(rq, false);
}

void sw_rq_close(struct sw_rq *rq)
{
	rq_cancel(rq, true);
}
