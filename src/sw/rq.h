/* SPDX-License-Identifier: MIT */
/*
 * A QP's receive queue: the ring of posted receives, the SRQ it takes from
 * instead (NdkCreateQpWithSrq), and the receive CQ its completions go to.
 * The QP posts and flushes it; the data path takes receives for incoming
 * Sends and completes them.
 *
 * Posted receives sit in a ring indexed by free-running counters
 * done <= head <= tail:
 *   [done, head)  taken by the data path (being filled) or flushed and
 *                 waiting for an earlier taken receive to complete;
 *   [head, tail)  posted, not yet taken.
 * Completions are pushed in posting order (docs/ndk.md, "Completion rules"): a
 * flushed receive is pushed only once every receive posted before it
 * completed. A QP with an SRQ has no posted receives of its own; its ring
 * holds only the few receives taken from the SRQ that are in progress.
 *
 * Locking: lock protects the ring and is held while pushing its
 * completions, so a flush racing with a post or with the data path
 * completes every receive exactly once and in order (NDKPI Completion
 * Handling Requirements). Taken after the QP's lock and before the SRQ's
 * and the CQ's (docs/design.md, Locks).
 */
#ifndef SW_RQ_H
#define SW_RQ_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <ndk/ndk.h>
#include "core/lock.h"
#include "sw/srq.h"

struct sw_cq;

/* State of one ring slot. */
enum sw_rqe_state {
	SW_RQE_POSTED,
	SW_RQE_TAKEN,
	SW_RQE_FLUSHED,
};

/* State of the queue: a closed queue gives the data path nothing more. */
enum sw_rq_state {
	SW_RQ_OPEN,
	SW_RQ_CLOSED,
};

struct sw_rq {
	struct ndk_lock lock;
	enum sw_rq_state state;
	unsigned char *ring; /* size slots of sw_rqe_stride(max_sge) */
	uint32_t size; /* power of two >= depth */
	uint32_t depth; /* ReceiveQueueDepth: max outstanding */
	uint32_t max_sge;
	uint32_t done, head, tail; /* free running, see above */
	struct sw_srq *srq; /* NULL: receives are posted to this ring */
	struct sw_cq *cq; /* the QP's receive CQ */
	PVOID qp_context; /* QPContext of every completion */
};

/*
 * Sets up the ring: depth and max_sge are the QP's own limits, or, with
 * an SRQ, how many receives the QP may hold in progress and the SRQ's SGE
 * count. Returns 0 or -ENOMEM.
 */
int sw_rq_init(struct sw_rq *rq, uint32_t depth, uint32_t max_sge,
	       struct sw_srq *srq, struct sw_cq *cq, PVOID qp_context);
void sw_rq_destroy(struct sw_rq *rq);

/* NdkReceive: STATUS_SUCCESS, STATUS_INSUFFICIENT_RESOURCES (full),
 * STATUS_INVALID_PARAMETER or, with an SRQ, STATUS_INVALID_DEVICE_REQUEST. */
NTSTATUS sw_rq_post(struct sw_rq *rq, PVOID ctx, const NDK_SGE *sgl,
		    ULONG nsge);

/*
 * The oldest posted receive, from the ring or, with an SRQ, moved from the
 * SRQ. Valid until sw_rq_complete. NULL if none is posted, the queue is
 * closed or, with an SRQ, already holds depth receives in progress.
 */
struct sw_rqe *sw_rq_take(struct sw_rq *rq);

/*
 * Completes a taken receive (taken receives complete in the order they
 * were taken, as Sends arrive in message order). bytes and tsco are
 * BytesTransferred and TypeSpecificCompletionOutput; solicited is true for
 * a Send with SEND_AND_SOLICIT_EVENT. A receive the close already
 * cancelled is ignored: it completed once.
 */
void sw_rq_complete(struct sw_rq *rq, struct sw_rqe *rqe, NTSTATUS status,
		    ULONG bytes, NDK_OPERATION_TYPE type, ULONG_PTR tsco,
		    bool solicited);

/* NdkFlush: every posted receive completes with STATUS_CANCELLED. */
void sw_rq_flush(struct sw_rq *rq);

/* Close: the receives the data path holds are cancelled too, and nothing
 * more is taken. */
void sw_rq_close(struct sw_rq *rq);

#endif /* SW_RQ_H */
