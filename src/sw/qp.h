/* SPDX-License-Identifier: MIT */
/*
 * Queue pair: its receive queue (sw/rq.h), its initiator queue limits, the
 * QP state the connection manager drives, and its data path (sw/dp.h)
 * while a connection is up (docs/ndk.md, "Work requests").
 *
 * Locking: lock protects state transitions and conn; state is also read
 * without it. Taken before the receive queue's, the data path's and the
 * CQ's locks (docs/design.md, Locks). None is held across a consumer
 * callback.
 */
#ifndef SW_QP_H
#define SW_QP_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include "core/lock.h"
#include "front/object.h"
#include "sw/dp.h"
#include "sw/rq.h"
#include "sw/srq.h"

struct sw_cq;
struct sw_pd;
struct sw_connector;

/*
 * QP states. WRs other than receives need CONNECTED (docs/ndk.md,
 * "Work requests");
 * receives may be posted in any state before CLOSED.
 */
enum sw_qp_state {
	SW_QP_IDLE, /* created, or a connect attempt failed */
	SW_QP_CONNECTING, /* bound to a connector, handshake running */
	SW_QP_CONNECTED, /* established: every WR may be posted */
	SW_QP_DISCONNECTED, /* connection ended; a QP is not reused */
	SW_QP_ERROR, /* fatal: Terminate, CQ overrun, protocol error */
	SW_QP_CLOSED, /* NdkCloseQp started */
	SW_QP_STATE_COUNT
};

/*
 * Initiator queue limits. The data path holds the SQ ring (Send,
 * SendAndInvalidate, Read, Write, Bind, FastRegister, Invalidate), the
 * ORQ of outbound Reads awaiting their responses (at most ord) and the IRQ
 * of inbound Read Requests being answered (at most ird), and flushes them
 * from sw_qp_flush().
 */
struct sw_iq {
	uint32_t depth; /* InitiatorQueueDepth */
	uint32_t max_sge; /* MaxInitiatorRequestSge; 0 is allowed */
	uint32_t inline_size; /* InlineDataSize */
	uint32_t ird, ord; /* effective read limits, set at connect */
};

struct sw_qp {
	struct ndk_obj obj;
	struct sw_pd *pd;
	struct sw_cq *rcq; /* receive completions */
	struct sw_cq *icq; /* initiator completions; may equal rcq */
	struct sw_srq *srq; /* NULL: the QP has its own receive queue */
	PVOID context; /* QPContext, returned in every NDK_RESULT(_EX) */

	struct ndk_lock lock; /* state transitions and conn */
	_Atomic(enum sw_qp_state) state;
	struct sw_connector *conn; /* set while CONNECTING/CONNECTED */

	struct sw_rq rq;
	struct sw_iq iq;
	struct sw_dp *dp; /* data path, from the connection on (sw/dp.h) */
};

static inline struct sw_qp *to_sw_qp(NDK_QP *qp)
{
	return container_of(qp, struct sw_qp, obj.pub.qp);
}

const char *sw_qp_state_name(enum sw_qp_state state);

static inline enum sw_qp_state sw_qp_state(struct sw_qp *qp)
{
	return atomic_load_explicit(&qp->state, memory_order_acquire);
}

/*
 * The one state setter: checks the transition against the table of legal
 * ones (one function per source state), logs old -> new with the caller's
 * file and line and returns 0, or -EINVAL for an illegal transition
 * (logged, state unchanged). Takes qp->lock.
 */
int sw_qp_set_state_at(struct sw_qp *qp, enum sw_qp_state to, const char *file,
		       int line);
#ifdef __FILE_NAME__
#define SW_QP_FILE __FILE_NAME__
#else
#define SW_QP_FILE __FILE__
#endif
#define sw_qp_set_state(qp, to) sw_qp_set_state_at(qp, to, SW_QP_FILE, __LINE__)

/*
 * Connection manager hooks.
 *
 * sw_qp_cm_connecting: NdkConnect/NdkAccept binds the QP to conn
 * (IDLE -> CONNECTING). -EBUSY if the QP already has a connection
 * (STATUS_CONNECTION_ACTIVE in NDSPI terms), -EINVAL if it was used
 * before (DISCONNECTED, ERROR) or is closing.
 *
 * sw_qp_cm_established: the handshake finished (CONNECTING -> CONNECTED):
 * the QP's data path is created and takes the socket (sw/dp.h); s->ird
 * and s->ord are the effective read limits (docs/ndk.md, "Read limits").
 * On failure the socket stays the caller's.
 *
 * sw_qp_cm_failed: the attempt failed before it was established
 * (CONNECTING -> IDLE): NDSPI says a failed connect leaves the QP
 * unaffected, so it may be connected again.
 *
 * sw_qp_cm_disconnected: the connection ended (CONNECTED -> DISCONNECTED,
 * or -> ERROR if fatal) and conn is forgotten. flush is true for
 * NdkDisconnect and a closed connector, which flush the QP implicitly,
 * and false for a peer's disconnect, which must not (docs/ndk.md,
 * "Disconnect").
 *
 * All return 0 or a negative errno and leave the QP unchanged on error.
 */
int sw_qp_cm_connecting(struct sw_qp *qp, struct sw_connector *conn);
int sw_qp_cm_established(struct sw_qp *qp, const struct sw_dp_socket *s);
int sw_qp_cm_failed(struct sw_qp *qp);
int sw_qp_cm_disconnected(struct sw_qp *qp, bool fatal, bool flush);

/*
 * NdkFlush: completes every receive (and initiator request) outstanding
 * now with STATUS_CANCELLED on its CQ, each exactly once and in posting
 * order; requests posted afterwards are not affected. Receives the data
 * path has taken are left to it; flushed ones queued behind them are
 * pushed when it completes them. Any thread.
 */
void sw_qp_flush(struct sw_qp *qp);

/* Receives taken from an SRQ that one QP may have in progress at once. */
#define SW_QP_SRQ_INFLIGHT 4

#endif /* SW_QP_H */
