/* SPDX-License-Identifier: MIT */
/*
 * Queue pair: its receive queue (qp/rq.h), its initiator queue limits, the
 * QP state the connection manager drives, and its data path (qp/dp.h)
 * while a connection is up (docs/ndk.md, "Work requests").
 *
 * Locking: lock protects state transitions and conn; state is also read
 * without it. Taken before the receive queue's, the data path's and the
 * CQ's locks (docs/design.md, Locks). None is held across a consumer
 * callback.
 */
#ifndef NDK_QP_QP_H
#define NDK_QP_QP_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include "core/lock.h"
#include "front/object.h"
#include "qp/dp.h"
#include "qp/rq.h"
#include "qp/srq.h"

struct ndk_cq;
struct ndk_pd;
struct ndk_connector;

/*
 * QP states. WRs other than receives need CONNECTED (docs/ndk.md,
 * "Work requests");
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

/*
 * Initiator queue limits. The data path holds the SQ ring (Send,
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

	struct ndk_lock lock; /* state transitions and conn */
	_Atomic(enum ndk_qp_state) state;
	struct ndk_connector *conn; /* set while CONNECTING/CONNECTED */

	struct ndk_rq rq;
	struct ndk_iq iq;
	struct ndk_dp *dp; /* data path, from the connection on (qp/dp.h) */
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
 * ndk_qp_cm_established: the handshake finished (CONNECTING -> CONNECTED):
 * the QP's data path is created and takes the socket (qp/dp.h); s->ird
 * and s->ord are the effective read limits (docs/ndk.md, "Read limits").
 * On failure the socket stays the caller's.
 *
 * ndk_qp_cm_failed: the attempt failed before it was established
 * (CONNECTING -> IDLE): NDSPI says a failed connect leaves the QP
 * unaffected, so it may be connected again.
 *
 * ndk_qp_cm_disconnected: the connection ended (CONNECTED -> DISCONNECTED,
 * or -> ERROR if fatal) and conn is forgotten. flush is true for
 * NdkDisconnect and a closed connector, which flush the QP implicitly,
 * and false for a peer's disconnect, which must not (docs/ndk.md,
 * "Disconnect").
 *
 * All return 0 or a negative errno and leave the QP unchanged on error.
 */
int ndk_qp_cm_connecting(struct ndk_qp *qp, struct ndk_connector *conn);
int ndk_qp_cm_established(struct ndk_qp *qp, const struct ndk_dp_socket *s);
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

/* Receives taken from an SRQ that one QP may have in progress at once. */
#define NDK_QP_SRQ_INFLIGHT 4

#endif /* NDK_QP_QP_H */
