/* SPDX-License-Identifier: MIT */
/*
 * The verbs provider's QP: an RC ibv_qp, its two work queues (verbs/wr.h)
 * and its connection state, which the connector moves (verbs/connector.c).
 */
#ifndef NDK_VERBS_QP_H
#define NDK_VERBS_QP_H

#include "core/lock.h"
#include "front/object.h"
#include "verbs/verbs.h"
#include "verbs/wr.h"

enum ndk_vqp_state {
	VQP_IDLE, /* created (verbs INIT): receives may be posted */
	VQP_CONNECTING, /* bound to a connector, handshake running */
	VQP_CONNECTED, /* established (RTS): every request may be posted */
	VQP_DISCONNECTED, /* the connection ended; a QP is not reused */
	VQP_STATE_COUNT
};

struct ndk_vpd;
struct ndk_vcq;
struct ndk_vsrq;

struct ndk_vqp {
	struct ndk_obj obj;
	struct ndk_vadapter *vad; /* set before obj is */
	struct ibv_qp *qp;
	struct ndk_vpd *pd;
	struct ndk_vcq *rcq, *scq;
	struct ndk_vsrq *srq; /* its receives come from there */

	struct ndk_lock lock; /* state changes (posting reads it lock-free) */
	_Atomic(enum ndk_vqp_state) state;
	bool flushed; /* moved to the verbs error state */
	bool mapped; /* its key is in the adapter's map */
	/* The connector's handler of a broken QP, while it is bound. */
	void (*fatal)(struct ndk_obj *conn);
	struct ndk_obj *fatal_conn;
	struct ndk_work fatal_work;
	atomic_bool failed; /* a request failed: reported once */
	/* The connection broke (a failed request, the device's QP error
	 * event, a flush): initiator requests are refused inline from now
	 * on, as by the software provider (docs/verbs.md, Queue pairs). */
	atomic_bool broken;
	/* After a consumer's flush: what the device has not completed by
	 * then is cancelled by the provider (a reference while set). */
	struct ndk_timer cancel_timer;
	bool cancel_set;

	struct ndk_vwq sq, rq;
	uint32_t max_send_sge, max_recv_sge, max_inline;
};

static inline struct ndk_vqp *to_vqp(NDK_QP *qp)
{
	return container_of(qp, struct ndk_vqp, obj.pub.qp);
}

static inline enum ndk_vqp_state ndk_vqp_state(struct ndk_vqp *qp)
{
	return atomic_load_explicit(&qp->state, memory_order_acquire);
}

struct ndk_qp_attr;
/* The provider's create (front/provider.h): front/qp.c checked attr. */
NTSTATUS ndk_verbs_create_qp(struct ndk_obj *pd, const struct ndk_qp_attr *attr,
			     NDK_QP **ppNdkQp);

/*
 * The connector's calls (docs/verbs.md, Connection management).
 * bind: IDLE -> CONNECTING; -EBUSY if the QP has a connection already,
 * -EINVAL if it is used up or closing. unbind: back to IDLE after an
 * attempt that never touched the QP. ib_ready: for IB and RoCE, the
 * QP's INIT attributes from the rdma_cm id, then RTR and RTS with the
 * effective read limits (iWARP: the kernel's iw_cm does it). connected:
 * CONNECTING -> CONNECTED. fatal is called (engine thread, a reference
 * on conn held) when the device finds the QP broken, until unbind or
 * ended. ended: the connection is over or failed
 * after the QP was made ready (-> DISCONNECTED); with flush the QP goes
 * to the verbs error state, so every outstanding request completes with
 * STATUS_CANCELLED.
 */
int ndk_vqp_bind(struct ndk_vqp *qp, void (*fatal)(struct ndk_obj *conn),
		 struct ndk_obj *conn);
void ndk_vqp_unbind(struct ndk_vqp *qp);
int ndk_vqp_ib_ready(struct ndk_vqp *qp, struct rdma_cm_id *id, uint8_t ird,
		     uint8_t ord);
void ndk_vqp_connected(struct ndk_vqp *qp);
/* Posts the connector's liveness probe (a zero-length RDMA Write): 0 or
 * an errno. */
int ndk_vqp_probe(struct ndk_vqp *qp);
void ndk_vqp_ended(struct ndk_vqp *qp, bool flush);
/* The device put the QP in its error state by itself (a remote access
 * error, a Terminate), not a flush of ours. */
bool ndk_vqp_device_error(struct ndk_vqp *qp);
/* NdkFlush's work: the verbs error state. */
void ndk_vqp_flush(struct ndk_vqp *qp);
/* An asynchronous event of the QP (arg: its enum ibv_event_type), from
 * ndk_vqpmap_with_ibv. */
void ndk_vqp_async(void *owner, void *arg);
/* A failed work completion of the QP (the map's on_error). */
void ndk_vqp_wc_error(void *owner);

#endif /* NDK_VERBS_QP_H */
