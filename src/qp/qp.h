/* SPDX-License-Identifier: MIT */
/*
 * Queue pair: a receive queue and an initiator queue (reference/ndkpi.md
 * sections 4.3 and 4.7), the QP state the connection manager drives, and
 * the hooks the data path uses to consume and complete work requests.
 *
 * Receive queue. Posted receives sit in a ring indexed by free-running
 * counters done <= head <= tail:
 *   [done, head)  taken by the data path (being filled) or flushed and
 *                 waiting for an earlier taken receive to complete;
 *   [head, tail)  posted, not yet taken.
 * Completions are pushed in posting order (ndkpi.md 9.4): a flushed
 * receive is pushed only once every receive posted before it completed.
 * A QP created with an SRQ has no posted receives of its own; its ring
 * holds only the few receives taken from the SRQ that are in progress.
 *
 * Locking: rq.lock protects the receive ring and is held while pushing its
 * completions, so a flush racing with a post or with the data path
 * completes every receive exactly once and in order (ndkpi.md 9.2, last
 * bullet). lock protects state and conn; state is also read without it.
 * Lock order: lock, rq.lock, then the CQ's and SRQ's locks. None is held
 * across a consumer callback.
 */
#ifndef NDK_QP_QP_H
#define NDK_QP_QP_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include "front/object.h"
#include "qp/srq.h"

struct ndk_cq;
struct ndk_pd;
struct ndk_connector;
struct ndk_dp;

/*
 * QP states. WRs other than receives need CONNECTED (ndkpi.md 6.5);
 * receives may be posted in any state before CLOSED.
 */
enum ndk_qp_state {
	NDK_QP_IDLE, /* created, or a connect attempt failed */
	NDK_QP_CONNECTING, /* bound to a connector, handshake running */
	NDK_QP_CONNECTED, /* established: every WR may be posted */
	NDK_QP_DISCONNECTED, /* connection ended; a QP is not reused */
	NDK_QP_ERROR, /* fatal: Terminate, CQ overrun, protocol error */
	NDK_QP_CLOSED, /* NdkCloseQp started */
	NDK_QP_STATE_COUNT
};

/* State of one receive ring slot. */
enum ndk_rqe_state {
	NDK_RQE_POSTED,
	NDK_RQE_TAKEN,
	NDK_RQE_FLUSHED,
};

struct ndk_rq {
	pthread_mutex_t lock;
	unsigned char *ring; /* size slots of ndk_rqe_stride(max_sge) */
	uint32_t size; /* power of two >= depth */
	uint32_t depth; /* ReceiveQueueDepth: max outstanding */
	uint32_t max_sge;
	uint32_t done, head, tail; /* free running, see above */
};

/*
 * Initiator queue limits. The data path adds here the SQ ring (Send,
 * SendAndInvalidate, Read, Write, Bind, FastRegister, Invalidate), the
 * ORQ of outbound Reads awaiting their responses (at most ord) and the IRQ
 * of inbound Read Requests being answered (at most ird), and flushes them
 * from ndk_qp_flush().
 */
struct ndk_iq {
	uint32_t depth; /* InitiatorQueueDepth */
	uint32_t max_sge; /* MaxInitiatorRequestSge; 0 is allowed */
	uint32_t inline_size; /* InlineDataSize */
	uint32_t ird, ord; /* effective read limits, set at connect */
};

struct ndk_qp {
	struct ndk_obj obj;
	struct ndk_pd *pd;
	struct ndk_cq *rcq; /* receive completions */
	struct ndk_cq *icq; /* initiator completions; may equal rcq */
	struct ndk_srq *srq; /* NULL: the QP has its own receive queue */
	PVOID context; /* QPContext, returned in every NDK_RESULT(_EX) */

	pthread_mutex_t lock; /* state transitions and conn */
	_Atomic(enum ndk_qp_state) state;
	struct ndk_connector *conn; /* set while CONNECTING/CONNECTED */

	struct ndk_rq rq;
	struct ndk_iq iq;
	struct ndk_dp *dp; /* data path, while connected (qp/dp.h) */
};

static inline struct ndk_qp *to_ndk_qp(NDK_QP *qp)
{
	return container_of(qp, struct ndk_qp, obj.pub.qp);
}

const char *ndk_qp_state_name(enum ndk_qp_state state);

static inline enum ndk_qp_state ndk_qp_state(struct ndk_qp *qp)
{
	return atomic_load_explicit(&qp->state, memory_order_acquire);
}

/*
 * The one state setter: checks the transition against the table of legal
 * ones (one function per source state), logs old -> new with the caller's
 * file and line and returns 0, or -EINVAL for an illegal transition
 * (logged, state unchanged). Takes qp->lock.
 */
int ndk_qp_set_state_at(struct ndk_qp *qp, enum ndk_qp_state to,
			const char *file, int line);
#ifdef __FILE_NAME__
#define NDK_QP_FILE __FILE_NAME__
#else
#define NDK_QP_FILE __FILE__
#endif
#define ndk_qp_set_state(qp, to) \
	ndk_qp_set_state_at(qp, to, NDK_QP_FILE, __LINE__)

/*
 * Connection manager hooks.
 *
 * ndk_qp_cm_connecting: NdkConnect/NdkAccept binds the QP to conn
 * (IDLE -> CONNECTING). -EBUSY if the QP already has a connection
 * (STATUS_CONNECTION_ACTIVE in NDSPI terms), -EINVAL if it was used
 * before (DISCONNECTED, ERROR) or is closing.
 *
 * ndk_qp_cm_connected: the handshake finished (CONNECTING -> CONNECTED),
 * ird/ord are the effective read limits (ndkpi.md 7.1).
 *
 * ndk_qp_cm_failed: the attempt failed before it was established
 * (CONNECTING -> IDLE): NDSPI says a failed connect leaves the QP
 * unaffected, so it may be connected again.
 *
 * ndk_qp_cm_disconnected: the connection ended (CONNECTED -> DISCONNECTED,
 * or -> ERROR if fatal) and conn is forgotten. flush is true for
 * NdkDisconnect and a closed connector, which flush the QP implicitly,
 * and false for a peer's disconnect, which must not (ndkpi.md 6.4).
 *
 * All return 0 or a negative errno and leave the QP unchanged on error.
 */
int ndk_qp_cm_connecting(struct ndk_qp *qp, struct ndk_connector *conn);
int ndk_qp_cm_connected(struct ndk_qp *qp, uint32_t ird, uint32_t ord);
int ndk_qp_cm_failed(struct ndk_qp *qp);
int ndk_qp_cm_disconnected(struct ndk_qp *qp, bool fatal, bool flush);

/*
 * NdkFlush: completes every receive (and initiator request) outstanding
 * now with STATUS_CANCELLED on its CQ, each exactly once and in posting
 * order; requests posted afterwards are not affected. Receives the data
 * path has taken are left to it; flushed ones queued behind them are
 * pushed when it completes them. Any thread.
 */
void ndk_qp_flush(struct ndk_qp *qp);

/*
 * Data path (receive side).
 *
 * ndk_qp_recv_take: the oldest posted receive, taken from the QP's
 * receive queue or, for a QP with an SRQ, from the SRQ (ndk_srq_take).
 * The pointer stays valid until ndk_qp_recv_complete. NULL if none is
 * posted, or if the QP is closing or, with an SRQ, already has the
 * maximum number of receives in progress.
 *
 * ndk_qp_recv_complete: completes a taken receive. Taken receives must be
 * completed in the order they were taken (they match Sends in message
 * order). bytes and tsco are BytesTransferred and
 * TypeSpecificCompletionOutput (the invalidated STag for
 * NdkOperationTypeReceiveAndInvalidate). A receive that a close already
 * cancelled is ignored.
 */
struct ndk_rqe *ndk_qp_recv_take(struct ndk_qp *qp);
void ndk_qp_recv_complete(struct ndk_qp *qp, struct ndk_rqe *rqe,
			  NTSTATUS status, ULONG bytes, NDK_OPERATION_TYPE type,
			  ULONG_PTR tsco);
/* The same for a Send with SEND_AND_SOLICIT_EVENT: solicited is true. */
void ndk_qp_recv_complete_se(struct ndk_qp *qp, struct ndk_rqe *rqe,
			     NTSTATUS status, ULONG bytes,
			     NDK_OPERATION_TYPE type, ULONG_PTR tsco,
			     bool solicited);

/* Receives taken from an SRQ that one QP may have in progress at once. */
#define NDK_QP_SRQ_INFLIGHT 4

#endif /* NDK_QP_QP_H */
