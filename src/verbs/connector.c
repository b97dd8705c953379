/* SPDX-License-Identifier: MIT */
/*
 * Connector over rdma_cm (docs/verbs.md, Connection management;
 * docs/ndk.md, Connecting, Accepting, Disconnect).
 *
 * One rdma_cm id per connection, on the adapter's event channel. The
 * consumer's calls issue rdma_cm commands (none waits for the network);
 * the events come on the engine thread (verbs/cm.c) to
 * ndk_vconn_event(), which moves the one state machine below.
 *
 * Active side: NdkConnect reserves the local endpoint in the front end's
 * table (so ND ports follow NDK's rules whatever the transport) and
 * resolves the address, then the route, then connects. IB and RoCE report
 * the peer's REP (CONNECT_RESPONSE: the id has no QP, so librdmacm leaves
 * the answer to us) and NdkCompleteConnect sends the RTU (rdma_establish)
 * after moving the QP to RTS; iWARP is established in the kernel when the
 * MPA Reply arrives, and NdkCompleteConnect only records it.
 *
 * Passive side: the listener (verbs/listener.c) makes a connector for
 * each CONNECT_REQUEST; NdkAccept moves the QP (IB, RoCE) and calls
 * rdma_accept, and the Accept completes with the ESTABLISHED event.
 *
 * c->lock protects the whole struct and is never held across a consumer
 * callback; requests complete through ndk_req (on the engine). The id is
 * destroyed under c->lock: rdma_destroy_id waits only for events not yet
 * acknowledged, and verbs/cm.c acknowledges each before it takes the
 * lock.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "core/config.h"
#include "core/log.h"
#include "core/status.h"
#include "front/adapter.h"
#include "front/address.h"
#include "front/conndata.h"
#include "front/shared_endpoint.h"
#include "oid/registry.h"
#include "verbs/connector.h"
#include "verbs/qp.h"

enum vconn_state {
	VCONN_IDLE, /* created, or a Connect that failed inline */
	/* Active side. */
	VCONN_RESOLVING_ADDR, /* rdma_resolve_addr issued */
	VCONN_RESOLVING_ROUTE, /* rdma_resolve_route issued */
	VCONN_CONNECTING, /* rdma_connect issued */
	VCONN_REPLIED, /* Connect completed: waiting for CompleteConnect */
	/* Passive side. */
	VCONN_REQUESTED, /* ConnectEvent raised: waiting for Accept/Reject */
	VCONN_ACCEPTING, /* rdma_accept issued: waiting for ESTABLISHED */
	/* Both sides. */
	VCONN_ESTABLISHED,
	VCONN_PEER_CLOSED, /* the peer disconnected; DisconnectEvent raised */
	VCONN_DISCONNECTING, /* NdkDisconnect: waiting for DISCONNECTED */
	/* Ends; fail says what the next call reports. */
	VCONN_FAILED, /* the Connect or Accept request failed */
	VCONN_ABANDONED, /* ended between handshake steps */
	VCONN_CLOSED, /* disconnected, rejected, or the connector closed */
	VCONN_STATE_COUNT
};

static const char *const vconn_state_names[VCONN_STATE_COUNT] = {
	[VCONN_IDLE] = "IDLE",
	[VCONN_RESOLVING_ADDR] = "RESOLVING_ADDR",
	[VCONN_RESOLVING_ROUTE] = "RESOLVING_ROUTE",
	[VCONN_CONNECTING] = "CONNECTING",
	[VCONN_REPLIED] = "REPLIED",
	[VCONN_REQUESTED] = "REQUESTED",
	[VCONN_ACCEPTING] = "ACCEPTING",
	[VCONN_ESTABLISHED] = "ESTABLISHED",
	[VCONN_PEER_CLOSED] = "PEER_CLOSED",
	[VCONN_DISCONNECTING] = "DISCONNECTING",
	[VCONN_FAILED] = "FAILED",
	[VCONN_ABANDONED] = "ABANDONED",
	[VCONN_CLOSED] = "CLOSED",
};

/* The legal transitions; every state but the ends may be closed. */
static const bool vconn_transition_ok[VCONN_STATE_COUNT][VCONN_STATE_COUNT] = {
	[VCONN_IDLE] = { [VCONN_RESOLVING_ADDR] = true,
			 [VCONN_REQUESTED] = true },
	[VCONN_RESOLVING_ADDR] = { [VCONN_IDLE] = true,
				   [VCONN_RESOLVING_ROUTE] = true,
				   [VCONN_FAILED] = true,
				   [VCONN_CLOSED] = true },
	[VCONN_RESOLVING_ROUTE] = { [VCONN_CONNECTING] = true,
				    [VCONN_FAILED] = true,
				    [VCONN_CLOSED] = true },
	[VCONN_CONNECTING] = { [VCONN_REPLIED] = true,
			       [VCONN_FAILED] = true,
			       [VCONN_CLOSED] = true },
	[VCONN_REPLIED] = { [VCONN_ESTABLISHED] = true,
			    [VCONN_ABANDONED] = true,
			    [VCONN_CLOSED] = true },
	[VCONN_REQUESTED] = { [VCONN_ACCEPTING] = true,
			      [VCONN_ABANDONED] = true,
			      [VCONN_CLOSED] = true },
	[VCONN_ACCEPTING] = { [VCONN_ESTABLISHED] = true,
			      [VCONN_FAILED] = true,
			      [VCONN_CLOSED] = true },
	[VCONN_ESTABLISHED] = { [VCONN_PEER_CLOSED] = true,
				[VCONN_DISCONNECTING] = true,
				[VCONN_CLOSED] = true },
	[VCONN_PEER_CLOSED] = { [VCONN_CLOSED] = true },
	[VCONN_DISCONNECTING] = { [VCONN_CLOSED] = true },
};

struct ndk_vconn {
	struct ndk_obj obj;
	struct ndk_vcm_ref ref; /* the id's context */
	struct ndk_lock lock;
	enum vconn_state state;
	bool passive;
	struct rdma_cm_id *id;
	/* rdma_connect runs on the adapter's worker (it blocks on iWARP):
	 * meanwhile the id is not destroyed but handed to the worker. */
	bool in_connect;
	struct rdma_cm_id *id_after_connect;
	struct ndk_vjob connect_job;
	NTSTATUS fail; /* what the next call reports once FAILED/ABANDONED */

	struct ndk_endpoint *ep; /* own (Connect), shared, or the listener's */
	bool shared; /* ep is a shared endpoint's */
	bool sep_linked; /* the shared endpoint object is an antecedent */
	struct ndk_vqp *qp;
	struct sockaddr_storage local, peer;
	bool tuple_registered;
	int reg_slot; /* OID_NDK_CONNECTIONS entry while listed, else -1 */

	/* Negotiation: our request capped to the adapter, the peer's
	 * limits once known, the effective pair (docs/ndk.md, Read
	 * limits). */
	uint8_t req_ird, req_ord;
	bool peer_known;
	uint8_t peer_ird, peer_ord;
	uint8_t eff_ird, eff_ord;
	uint8_t pd[NDK_VCM_PD_MAX]; /* ours, for rdma_connect */
	uint16_t pd_len;
	uint8_t peer_pd[NDK_VCM_PD_MAX];
	uint16_t peer_pd_len;

	struct ndk_req connect_req, accept_req, disconnect_req;
	NDK_FN_DISCONNECT_EVENT_CALLBACK disc_cb;
	NDK_FN_DISCONNECT_EVENT_CALLBACK_EX disc_cb_ex;
	PVOID disc_ctx;
	NTSTATUS disc_reason;
	struct ndk_work disc_work;
	/* NdkDisconnect's timeout; holds a reference while armed. */
	struct ndk_timer timer;
	bool timer_set;
};

static inline struct ndk_vconn *to_vconn(NDK_CONNECTOR *c)
{
	return container_of(c, struct ndk_vconn, obj.pub.connector);
}

static inline struct ndk_vadapter *vconn_vad(struct ndk_vconn *c)
{
	return to_vad(c->obj.adapter);
}

NDK_CONNECTOR *ndk_vconn_pub(struct ndk_vconn *c)
{
	return &c->obj.pub.connector;
}

struct ndk_obj *ndk_vconn_obj(struct ndk_vcm_ref *ref)
{
	return &container_of(ref, struct ndk_vconn, ref)->obj;
}

/* ------------------------------------------------------------------ */
/* States                                                             */

/* Listed in OID_NDK_CONNECTIONS from establishment until the consumer
 * disconnects or closes (as the software provider). */
static bool vconn_listed(enum vconn_state s)
{
	return s == VCONN_ESTABLISHED || s == VCONN_PEER_CLOSED;
}

static bool vconn_ended(enum vconn_state s)
{
	return s == VCONN_FAILED || s == VCONN_ABANDONED || s == VCONN_CLOSED;
}

static void vconn_publish(struct ndk_vconn *c)
{
	struct ndk_reg_entry e =
		ndk_adapter_reg_entry(c->obj.adapter, NDK_REG_CONNECTION);

	ndk_reg_sockaddr(&e.local, (const struct sockaddr *)&c->local);
	ndk_reg_sockaddr(&e.remote, (const struct sockaddr *)&c->peer);
	c->reg_slot = ndk_reg_publish(&e);
}

/* The one state setter; c->lock held. */
static void vconn_set_state_at(struct ndk_vconn *c, enum vconn_state to,
			       int line)
{
	enum vconn_state from = c->state;

	NDK_ASSERT_LOCKED(&c->lock);
	if ((unsigned int)to >= VCONN_STATE_COUNT ||
	    !vconn_transition_ok[from][to]) {
		ndk_err("verbs: connector %p: illegal transition %s -> %s "
			"(connector.c:%d)",
			(void *)c, vconn_state_names[from],
			vconn_state_names[to], line);
		assert(!"illegal connector state transition");
		return;
	}
	ndk_dbg("verbs: connector %p: %s -> %s (connector.c:%d)", (void *)c,
		vconn_state_names[from], vconn_state_names[to], line);
	c->state = to;
	if (!vconn_listed(from) && vconn_listed(to)) {
		vconn_publish(c);
	} else if (vconn_listed(from) && !vconn_listed(to)) {
		ndk_reg_withdraw(c->reg_slot);
		c->reg_slot = -1;
	}
}
#define vconn_set_state(c, s) vconn_set_state_at(c, s, __LINE__)

/* ------------------------------------------------------------------ */
/* The id, the QP and the timer, c->lock held                         */

struct vconn_destroy_job {
	struct ndk_vjob job;
	struct rdma_cm_id *id;
};

static void vconn_destroy_job_fn(struct ndk_vjob *job)
{
	struct vconn_destroy_job *d =
		container_of(job, struct vconn_destroy_job, job);

	if (rdma_destroy_id(d->id))
		ndk_warn("verbs: rdma_destroy_id failed (%d)", errno);
	free(d);
}

/*
 * The id goes on the worker: siw's destroy of an id still connecting
 * waits for its MPA timer, which must hold neither the engine nor the
 * consumer. Its events from now on find no context and are dropped.
 */
static void vconn_destroy_id(struct ndk_vconn *c)
{
	struct vconn_destroy_job *d;

	NDK_ASSERT_LOCKED(&c->lock);
	if (!c->id)
		return;
	c->id->context = NULL;
	if (c->in_connect) {
		/* The worker is inside rdma_connect with it. */
		c->id_after_connect = c->id;
		c->id = NULL;
		return;
	}
	d = malloc(sizeof(*d));
	if (d) {
		d->id = c->id;
		ndk_vworker_post(&vconn_vad(c)->worker, &d->job,
				 vconn_destroy_job_fn);
	} else if (rdma_destroy_id(c->id)) {
		ndk_warn("verbs: connector %p: rdma_destroy_id failed (%d)",
			 (void *)c, errno);
	}
	c->id = NULL;
}

/* The QP of an attempt that never got established. */
static void vconn_qp_failed(struct ndk_vconn *c)
{
	NDK_ASSERT_LOCKED(&c->lock);
	if (!c->qp || ndk_vqp_state(c->qp) != VQP_CONNECTING)
		return; /* released already, or never bound */
	if (!c->passive && c->state != VCONN_REPLIED)
		ndk_vqp_unbind(c->qp); /* untouched: may connect again */
	else
		ndk_vqp_ended(c->qp, true);
}

static void vconn_timer_fn(struct ndk_timer *t);

/* Arms the one timer: a connect attempt's or NdkDisconnect's limit. */
static void vconn_arm_timer(struct ndk_vconn *c, uint64_t ms)
{
	NDK_ASSERT_LOCKED(&c->lock);
	if (c->timer_set)
		return;
	ndk_obj_get(&c->obj);
	if (ndk_timer_start(c->obj.domain->engine, &c->timer, ms))
		ndk_obj_put(&c->obj); /* not the last: the caller holds one */
	else
		c->timer_set = true;
}

static void vconn_stop_timer(struct ndk_vconn *c)
{
	NDK_ASSERT_LOCKED(&c->lock);
	if (c->timer_set &&
	    ndk_timer_cancel(c->obj.domain->engine, &c->timer)) {
		c->timer_set = false;
		ndk_obj_put(&c->obj); /* not the last: the caller holds one */
	}
}

/* ------------------------------------------------------------------ */
/* Endings, c->lock held                                              */

/* A pending Connect (active) or Accept (passive) fails with status. */
static void vconn_attempt_failed(struct ndk_vconn *c, NTSTATUS status)
{
	vconn_stop_timer(c);
	ndk_info("verbs: connector %p: %s failed in %s: %s", (void *)c,
		 c->passive ? "accept" : "connect", vconn_state_names[c->state],
		 NdkStatusName(status));
	vconn_qp_failed(c);
	vconn_destroy_id(c);
	vconn_set_state(c, VCONN_FAILED);
	c->fail = status;
	ndk_adapter_count(c->obj.adapter, NDK_CTR(ConnectFailure), 1);
	ndk_req_complete(c->passive ? &c->accept_req : &c->connect_req, status);
}

/* Between handshake steps the other side gave up: the next call says. */
static void vconn_abandon(struct ndk_vconn *c, NTSTATUS status)
{
	vconn_stop_timer(c);
	vconn_qp_failed(c);
	vconn_destroy_id(c);
	ndk_adapter_count(c->obj.adapter, NDK_CTR(ConnectFailure), 1);
	vconn_set_state(c, VCONN_ABANDONED);
	c->fail = status;
}

static void vconn_disc_work_fn(struct ndk_work *w)
{
	struct ndk_vconn *c = container_of(w, struct ndk_vconn, disc_work);
	NDK_FN_DISCONNECT_EVENT_CALLBACK cb;
	NDK_FN_DISCONNECT_EVENT_CALLBACK_EX cb_ex;
	NTSTATUS reason;
	PVOID ctx;

	ndk_lock(&c->lock);
	cb = c->disc_cb;
	cb_ex = c->disc_cb_ex;
	ctx = c->disc_ctx;
	reason = c->disc_reason;
	ndk_unlock(&c->lock);
	ndk_obj_disconnect_event(&c->obj, cb, cb_ex, ctx, reason);
	ndk_obj_release(&c->obj);
}

/*
 * The peer ended an established connection: the disconnect event, once,
 * and no flush (NDK_FN_DISCONNECT_EVENT_CALLBACK; on iWARP the device may
 * flush by itself, docs/verbs.md).
 */
static void vconn_peer_disconnected(struct ndk_vconn *c,
				    const struct ndk_vcm_event *e)
{
	bool iwarp = vconn_vad(c)->iwarp;

	vconn_set_state(c, VCONN_PEER_CLOSED);
	c->disc_reason = ndk_verbs_cm_status(e->type, e->status, iwarp);
	if (c->disc_reason)
		ndk_adapter_count(c->obj.adapter, NDK_CTR(ConnectionError), 1);
	if (!c->disc_cb && !c->disc_cb_ex)
		return;
	ndk_obj_hold(&c->obj);
	if (!ndk_engine_post(c->obj.domain->engine, &c->disc_work))
		ndk_obj_release(&c->obj);
}

/* ------------------------------------------------------------------ */
/* Events from rdma_cm (engine thread)                                */

/* The peer's read limits and private data, from its request or reply. */
static void vconn_note_peer(struct ndk_vconn *c, const struct ndk_vcm_event *e,
			    bool iwarp_reply)
{
	/*
	 * rdma_cm gives the peer's limits as what we may use:
	 * initiator_depth is the peer's IRD, responder_resources its ORD.
	 * Except iWARP's ESTABLISHED at the active side, whose pair is the
	 * other way round (the kernel's cma and siw; docs/verbs.md, Read
	 * limits).
	 */
	c->peer_ird = iwarp_reply ? e->responder_resources : e->initiator_depth;
	c->peer_ord = iwarp_reply ? e->initiator_depth : e->responder_resources;
	c->peer_known = true;
	c->eff_ird = MIN(c->req_ird, c->peer_ord);
	c->eff_ord = MIN(c->req_ord, c->peer_ird);
	memcpy(c->peer_pd, e->pd, e->pd_len);
	c->peer_pd_len = e->pd_len;
}

static struct rdma_conn_param vconn_param(struct ndk_vconn *c, const void *pd,
					  uint8_t pd_len, uint8_t ird,
					  uint8_t ord)
{
	struct rdma_conn_param p;

	memset(&p, 0, sizeof(p));
	p.private_data = pd_len ? pd : NULL;
	p.private_data_len = pd_len;
	p.responder_resources = ird;
	p.initiator_depth = ord;
	/* NDK has no receiver-not-ready: a Send waits for its receive. */
	p.retry_count = 7;
	p.rnr_retry_count = 7;
	p.qp_num = c->qp->qp->qp_num;
	return p;
}

/* The adapter's worker: rdma_connect, without the connector's lock. */
static void vconn_connect_job(struct ndk_vjob *job)
{
	struct ndk_vconn *c = container_of(job, struct ndk_vconn, connect_job);
	struct rdma_conn_param p;
	struct rdma_cm_id *id;
	int ret, err = 0;

	ndk_lock(&c->lock);
	id = c->id;
	if (id)
		p = vconn_param(c, c->pd, (uint8_t)c->pd_len, c->req_ird,
				c->req_ord);
	ndk_unlock(&c->lock);
	ret = id ? rdma_connect(id, &p) : 0;
	if (ret)
		err = errno;
	ndk_lock(&c->lock);
	c->in_connect = false;
	if (c->id_after_connect) {
		/* Closed or failed meanwhile: the id is ours to end. */
		rdma_destroy_id(c->id_after_connect);
		c->id_after_connect = NULL;
	} else if (ret && c->state == VCONN_CONNECTING) {
		ndk_info("verbs: connector %p: rdma_connect: %s", (void *)c,
			 strerror(err));
		vconn_attempt_failed(c,
				     ndk_verbs_errno_status(err, NDK_VERBS_CM));
	}
	ndk_unlock(&c->lock);
	ndk_obj_put(&c->obj); /* the job's */
}

static void vconn_route_resolved(struct ndk_vconn *c)
{
	vconn_set_state(c, VCONN_CONNECTING);
	c->in_connect = true;
	ndk_obj_get(&c->obj);
	ndk_vworker_post(&vconn_vad(c)->worker, &c->connect_job,
			 vconn_connect_job);
}

/* CONNECTING: the peer accepted (IB: its REP; iWARP: established). */
static void vconn_replied(struct ndk_vconn *c, const struct ndk_vcm_event *e)
{
	bool iwarp = vconn_vad(c)->iwarp;

	vconn_stop_timer(c);
	vconn_note_peer(c, e, iwarp);
	vconn_set_state(c, VCONN_REPLIED);
	ndk_req_complete(&c->connect_req, STATUS_SUCCESS);
}

static void vconn_accepted(struct ndk_vconn *c, const struct ndk_vcm_event *e)
{
	/*
	 * iWARP: the device's own pair, which may be above ours (siw raises
	 * our IRD to the initiator's ORD, its relaxed negotiation;
	 * docs/verbs.md, Read limits). The kernel's cma reports it as
	 * initiator_depth = IRD, responder_resources = ORD.
	 */
	if (vconn_vad(c)->iwarp &&
	    (e->initiator_depth || e->responder_resources)) {
		c->eff_ird = e->initiator_depth;
		c->eff_ord = e->responder_resources;
	}
	ndk_vqp_connected(c->qp);
	vconn_set_state(c, VCONN_ESTABLISHED);
	ndk_adapter_count(c->obj.adapter, NDK_CTR(Accept), 1);
	ndk_req_complete(&c->accept_req, STATUS_SUCCESS);
}

/* Every event that ends what the connector was waiting for. */
static bool vconn_is_failure(enum rdma_cm_event_type t)
{
	switch (t) {
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_REJECTED:
	case RDMA_CM_EVENT_DISCONNECTED:
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		return true;
	default:
		return false;
	}
}

static void vconn_event_locked(struct ndk_vconn *c,
			       const struct ndk_vcm_event *e)
{
	bool iwarp = vconn_vad(c)->iwarp;
	NTSTATUS st = ndk_verbs_cm_status(e->type, e->status, iwarp);

	NDK_ASSERT_LOCKED(&c->lock);
	switch (c->state) {
	case VCONN_RESOLVING_ADDR:
		if (e->type == RDMA_CM_EVENT_ADDR_RESOLVED) {
			if (rdma_resolve_route(c->id,
					       (int)ndk_cm_timeout_ms())) {
				vconn_attempt_failed(
					c, ndk_verbs_errno_status(
						   errno, NDK_VERBS_CM));
				return;
			}
			vconn_set_state(c, VCONN_RESOLVING_ROUTE);
		} else if (vconn_is_failure(e->type)) {
			vconn_attempt_failed(c, st);
		}
		return;
	case VCONN_RESOLVING_ROUTE:
		if (e->type == RDMA_CM_EVENT_ROUTE_RESOLVED)
			vconn_route_resolved(c);
		else if (vconn_is_failure(e->type))
			vconn_attempt_failed(c, st);
		return;
	case VCONN_CONNECTING:
		if (e->type == RDMA_CM_EVENT_CONNECT_RESPONSE ||
		    e->type == RDMA_CM_EVENT_ESTABLISHED) {
			vconn_replied(c, e);
		} else if (e->type == RDMA_CM_EVENT_REJECTED) {
			/* The reject's private data stays readable
			 * (NDK_FN_GET_CONNECTION_DATA). */
			memcpy(c->peer_pd, e->pd, e->pd_len);
			c->peer_pd_len = e->pd_len;
			c->peer_known = true;
			vconn_attempt_failed(c, st);
		} else if (vconn_is_failure(e->type)) {
			vconn_attempt_failed(c, st);
		}
		return;
	case VCONN_REPLIED:
	case VCONN_REQUESTED:
		/* The other side gave up between the handshake steps. */
		if (vconn_is_failure(e->type))
			vconn_abandon(c, STATUS_CONNECTION_ABORTED);
		return;
	case VCONN_ACCEPTING:
		if (e->type == RDMA_CM_EVENT_ESTABLISHED)
			vconn_accepted(c, e);
		else if (e->type == RDMA_CM_EVENT_UNREACHABLE)
			/* The initiator never completed (NDK_FN_ACCEPT_EX). */
			vconn_attempt_failed(c, STATUS_IO_TIMEOUT);
		else if (vconn_is_failure(e->type))
			vconn_attempt_failed(c, STATUS_CONNECTION_ABORTED);
		return;
	case VCONN_ESTABLISHED:
		if (e->type == RDMA_CM_EVENT_DISCONNECTED ||
		    e->type == RDMA_CM_EVENT_DEVICE_REMOVAL)
			vconn_peer_disconnected(c, e);
		return;
	case VCONN_DISCONNECTING:
		if (e->type == RDMA_CM_EVENT_DISCONNECTED ||
		    e->type == RDMA_CM_EVENT_DEVICE_REMOVAL) {
			vconn_stop_timer(c);
			ndk_vqp_ended(c->qp, true);
			vconn_set_state(c, VCONN_CLOSED);
			c->fail = STATUS_CONNECTION_INVALID;
			ndk_req_complete(&c->disconnect_req, STATUS_SUCCESS);
		}
		return;
	default:
		/* TIMEWAIT_EXIT, ADDR_CHANGE, or anything after the end. */
		return;
	}
}

void ndk_vconn_event(struct ndk_vcm_ref *ref, const struct ndk_vcm_event *e)
{
	struct ndk_vconn *c = container_of(ref, struct ndk_vconn, ref);

	ndk_lock(&c->lock);
	ndk_dbg("verbs: connector %p in %s: %s (status %d)", (void *)c,
		vconn_state_names[c->state], rdma_event_str(e->type),
		e->status);
	vconn_event_locked(c, e);
	ndk_unlock(&c->lock);
}

/*
 * The device found the QP broken (a Terminate, a remote access error):
 * for the consumer, the connection ended as if the peer had aborted it.
 */
static void vconn_qp_fatal(struct ndk_obj *obj)
{
	struct ndk_vconn *c = container_of(obj, struct ndk_vconn, obj);
	struct ndk_vcm_event e = {
		.type = RDMA_CM_EVENT_DISCONNECTED,
		.status = -ECONNABORTED,
	};

	ndk_lock(&c->lock);
	if (c->state == VCONN_ESTABLISHED && c->id) {
		/* The peer learns it too: the connection is torn down (IB:
		 * DREQ; iWARP: the device closed the stream already). */
		rdma_disconnect(c->id);
	}
	vconn_event_locked(c, &e);
	ndk_unlock(&c->lock);
}

/* ------------------------------------------------------------------ */
/* Active side                                                        */

static NTSTATUS vconn_check_pd(const void *pd, ULONG len, ULONG max)
{
	if (len && !pd)
		return STATUS_INVALID_PARAMETER;
	/* More than the adapter advertises is refused, nothing is sent. */
	if (len > max)
		return STATUS_INVALID_BUFFER_SIZE;
	return STATUS_SUCCESS;
}

static uint8_t vconn_cap(ULONG v, ULONG max)
{
	return (uint8_t)MIN(v, max);
}

/* c->lock held, c->ep reserved: everything after the endpoint. */
static NTSTATUS vconn_start(struct ndk_vconn *c, struct ndk_vqp *qp,
			    const struct sockaddr *dst, ULONG ird, ULONG ord,
			    const void *pd, ULONG pd_len,
			    NDK_FN_REQUEST_COMPLETION cb, PVOID ctx)
{
	struct ndk_adapter *ad = c->obj.adapter;
	const struct sockaddr *local;
	socklen_t len;
	NTSTATUS status;
	int ret;

	local = ndk_endpoint_addr(c->ep, &len);
	memset(&c->local, 0, sizeof(c->local));
	memcpy(&c->local, local, len);
	memset(&c->peer, 0, sizeof(c->peer));
	memcpy(&c->peer, dst, ndk_addr_len(dst));
	ret = ndk_tuple_register((struct sockaddr *)&c->local, dst);
	if (ret)
		return ndk_status_from_errno(ret, NDK_SITE_CONNECT);
	c->tuple_registered = true;
	ret = ndk_vqp_bind(qp, vconn_qp_fatal, &c->obj);
	if (ret)
		return ret == -EBUSY ? STATUS_CONNECTION_ACTIVE
				     : STATUS_INVALID_DEVICE_STATE;
	if (ndk_obj_link(&c->obj, &qp->obj)) {
		ndk_vqp_unbind(qp);
		return STATUS_INVALID_PARAMETER;
	}
	c->qp = qp;
	c->req_ird = vconn_cap(ird, ad->info.MaxInboundReadLimit);
	c->req_ord = vconn_cap(ord, ad->info.MaxOutboundReadLimit);
	if (pd_len)
		memcpy(c->pd, pd, pd_len);
	c->pd_len = (uint16_t)pd_len;
	if (rdma_create_id(vconn_vad(c)->cm, &c->id, &c->ref, RDMA_PS_TCP)) {
		ndk_info("verbs: connector %p: rdma_create_id: %s", (void *)c,
			 strerror(errno));
		status = ndk_verbs_errno_status(errno, NDK_VERBS_CM);
		goto fail_qp;
	}
	if (c->shared) {
		/* Many ids bound to the shared address, one per
		 * destination (rdma_cm's own port space). */
		int one = 1;

		if (rdma_set_option(c->id, RDMA_OPTION_ID,
				    RDMA_OPTION_ID_REUSEADDR, &one,
				    sizeof(one))) {
			status = ndk_verbs_errno_status(errno, NDK_VERBS_CM);
			vconn_destroy_id(c);
			goto fail_qp;
		}
	}
	ndk_req_pend(&c->connect_req, &c->obj, cb, ctx);
	vconn_set_state(c, VCONN_RESOLVING_ADDR);
	/* The whole attempt, as for the software provider (siw's own MPA
	 * timer is longer). */
	vconn_arm_timer(c, ndk_cm_timeout_ms());
	if (rdma_resolve_addr(c->id, (struct sockaddr *)&c->local,
			      (struct sockaddr *)dst,
			      (int)ndk_cm_timeout_ms())) {
		/* The source port taken in rdma_cm's own space, or no
		 * route: inline (NDK_FN_CONNECT). */
		ndk_info("verbs: connector %p: rdma_resolve_addr: %s",
			 (void *)c, strerror(errno));
		status = ndk_verbs_errno_status(
			errno,
			errno == EADDRINUSE ? NDK_VERBS_CM_BIND : NDK_VERBS_CM);
		ndk_req_withdraw(&c->connect_req);
		ndk_adapter_count(ad, NDK_CTR(ConnectFailure), 1);
		vconn_set_state(c, VCONN_IDLE);
		vconn_destroy_id(c);
		goto fail_qp;
	}
	return STATUS_PENDING;
fail_qp:
	ndk_vqp_unbind(qp);
	ndk_obj_unlink(&c->obj, &qp->obj);
	c->qp = NULL;
	return status;
}

/*
 * Common tail of NdkConnect and NdkConnectWithSharedEndpoint: c->lock
 * held, c->ep referenced. On an inline failure the connector is IDLE
 * again, owning nothing, so it may try again.
 */
static NTSTATUS vconn_begin(struct ndk_vconn *c, NDK_QP *pNdkQp,
			    const struct sockaddr *dst, ULONG ird, ULONG ord,
			    const void *pd, ULONG pd_len,
			    NDK_FN_REQUEST_COMPLETION cb, PVOID ctx)
{
	NTSTATUS status;

	status = vconn_start(c, to_vqp(pNdkQp), dst, ird, ord, pd, pd_len, cb,
			     ctx);
	if (status != STATUS_PENDING) {
		if (c->tuple_registered)
			ndk_tuple_unregister((struct sockaddr *)&c->local,
					     (struct sockaddr *)&c->peer);
		c->tuple_registered = false;
		ndk_endpoint_put(c->ep);
		c->ep = NULL;
	}
	return status;
}

static NTSTATUS vconn_check_connect(struct ndk_vconn *c, NDK_QP *qp,
				    const struct sockaddr *dst, ULONG dstlen,
				    const void *pd, ULONG pdlen)
{
	NTSTATUS status;

	if (!qp || ndk_addr_check(dst, dstlen))
		return STATUS_INVALID_PARAMETER;
	status = vconn_check_pd(pd, pdlen, c->obj.adapter->info.MaxCallerData);
	if (status)
		return status;
	if (c->passive || c->state != VCONN_IDLE)
		return STATUS_INVALID_DEVICE_STATE;
	return STATUS_SUCCESS;
}

static NTSTATUS
vconn_connect(NDK_CONNECTOR *pNdkConnector, NDK_QP *pNdkQp,
	      CONST PSOCKADDR pSrcAddress, ULONG SrcAddressLength,
	      CONST PSOCKADDR pDestAddress, ULONG DestAddressLength,
	      ULONG InboundReadLimit, ULONG OutboundReadLimit,
	      CONST PVOID pPrivateData, ULONG PrivateDataLength,
	      NDK_FN_REQUEST_COMPLETION RequestCompletion, PVOID RequestContext)
{
	struct ndk_vconn *c = to_vconn(pNdkConnector);
	NTSTATUS status;

	ndk_lock(&c->lock);
	status = vconn_check_connect(c, pNdkQp, pDestAddress, DestAddressLength,
				     pPrivateData, PrivateDataLength);
	if (!status && (ndk_addr_check(pSrcAddress, SrcAddressLength) ||
			pSrcAddress->sa_family != pDestAddress->sa_family))
		status = STATUS_INVALID_PARAMETER;
	if (status)
		goto out;
	/* The connector's own endpoint: one reference (NDKPI Listeners,
	 * Connectors, and Endpoints). */
	status = ndk_local_endpoint_acquire(c->obj.adapter, pSrcAddress,
					    SrcAddressLength,
					    NDK_ENDPOINT_CONNECTOR, &c->ep);
	if (!status)
		status = vconn_begin(c, pNdkQp, pDestAddress, InboundReadLimit,
				     OutboundReadLimit, pPrivateData,
				     PrivateDataLength, RequestCompletion,
				     RequestContext);
out:
	ndk_unlock(&c->lock);
	return status;
}

static NTSTATUS
vconn_connect_sep(NDK_CONNECTOR *pNdkConnector, NDK_QP *pNdkQp,
		  NDK_SHARED_ENDPOINT *pNdkSharedEndpoint,
		  CONST PSOCKADDR pDestAddress, ULONG DestAddressLength,
		  ULONG InboundReadLimit, ULONG OutboundReadLimit,
		  CONST PVOID pPrivateData, ULONG PrivateDataLength,
		  NDK_FN_REQUEST_COMPLETION RequestCompletion,
		  PVOID RequestContext)
{
	struct ndk_vconn *c = to_vconn(pNdkConnector);
	struct ndk_shared_endpoint *sep;
	const struct sockaddr *local;
	socklen_t len;
	NTSTATUS status;

	ndk_lock(&c->lock);
	status = vconn_check_connect(c, pNdkQp, pDestAddress, DestAddressLength,
				     pPrivateData, PrivateDataLength);
	if (!status && !pNdkSharedEndpoint)
		status = STATUS_INVALID_PARAMETER;
	if (status)
		goto out;
	sep = to_ndk_shared_endpoint(pNdkSharedEndpoint);
	local = ndk_endpoint_addr(sep->ep, &len);
	if (local->sa_family != pDestAddress->sa_family) {
		status = STATUS_INVALID_PARAMETER;
		goto out;
	}
	/* +1 on the shared endpoint per connector; the object is the
	 * connector's antecedent. */
	if (!c->sep_linked) {
		if (ndk_obj_link(&c->obj, &sep->obj)) {
			status = STATUS_INVALID_PARAMETER;
			goto out;
		}
		c->sep_linked = true;
	}
	ndk_endpoint_get(sep->ep);
	c->ep = sep->ep;
	c->shared = true;
	status = vconn_begin(c, pNdkQp, pDestAddress, InboundReadLimit,
			     OutboundReadLimit, pPrivateData, PrivateDataLength,
			     RequestCompletion, RequestContext);
	if (status != STATUS_PENDING)
		c->shared = false;
out:
	ndk_unlock(&c->lock);
	return status;
}

static NTSTATUS vconn_complete(struct ndk_vconn *c,
			       NDK_FN_DISCONNECT_EVENT_CALLBACK ev,
			       NDK_FN_DISCONNECT_EVENT_CALLBACK_EX ev_ex,
			       PVOID ev_ctx)
{
	NTSTATUS status = STATUS_SUCCESS;

	ndk_lock(&c->lock);
	if (!c->passive && c->state == VCONN_ABANDONED &&
	    c->fail == STATUS_CONNECTION_ABORTED) {
		/* The acceptor gave up. */
		status = c->fail;
		goto out;
	}
	if (c->passive || c->state != VCONN_REPLIED) {
		status = STATUS_CONNECTION_INVALID;
		goto out;
	}
	/* IB and RoCE: RTR and RTS, then the RTU lets the peer's Accept
	 * complete. iWARP: the kernel established it already. */
	if (!vconn_vad(c)->iwarp &&
	    (ndk_vqp_ib_ready(c->qp, c->id, c->eff_ird, c->eff_ord) ||
	     rdma_establish(c->id))) {
		vconn_abandon(c, STATUS_CONNECTION_ABORTED);
		status = STATUS_CONNECTION_ABORTED;
		goto out;
	}
	c->disc_cb = ev;
	c->disc_cb_ex = ev_ex;
	c->disc_ctx = ev_ctx;
	ndk_vqp_connected(c->qp);
	vconn_set_state(c, VCONN_ESTABLISHED);
	ndk_adapter_count(c->obj.adapter, NDK_CTR(Connect), 1);
out:
	ndk_unlock(&c->lock);
	return status;
}

static NTSTATUS
vconn_complete_connect(NDK_CONNECTOR *pNdkConnector,
		       NDK_FN_DISCONNECT_EVENT_CALLBACK DisconnectEvent,
		       PVOID DisconnectEventContext,
		       NDK_FN_REQUEST_COMPLETION RequestCompletion,
		       PVOID RequestContext)
{
	/* Completes inline: no callback (NDK_FN_REQUEST_COMPLETION). */
	return vconn_complete(to_vconn(pNdkConnector), DisconnectEvent, NULL,
			      DisconnectEventContext);
}

static NTSTATUS
vconn_complete_connect_ex(NDK_CONNECTOR *pNdkConnector,
			  NDK_FN_DISCONNECT_EVENT_CALLBACK_EX DisconnectEvent,
			  PVOID DisconnectEventContext,
			  NDK_FN_REQUEST_COMPLETION RequestCompletion,
			  PVOID RequestContext)
{
	return vconn_complete(to_vconn(pNdkConnector), NULL, DisconnectEvent,
			      DisconnectEventContext);
}

/* ------------------------------------------------------------------ */
/* Passive side                                                       */

static NTSTATUS vconn_accept(struct ndk_vconn *c, NDK_QP *pNdkQp, ULONG ird,
			     ULONG ord, const void *pd, ULONG pd_len,
			     NDK_FN_DISCONNECT_EVENT_CALLBACK ev,
			     NDK_FN_DISCONNECT_EVENT_CALLBACK_EX ev_ex,
			     PVOID ev_ctx, NDK_FN_REQUEST_COMPLETION cb,
			     PVOID ctx)
{
	struct ndk_adapter *ad = c->obj.adapter;
	struct rdma_conn_param p;
	struct ndk_vqp *qp;
	NTSTATUS status;
	int ret;

	if (!pNdkQp)
		return STATUS_INVALID_PARAMETER;
	status = vconn_check_pd(pd, pd_len, ad->info.MaxCalleeData);
	if (status)
		return status;
	qp = to_vqp(pNdkQp);
	ndk_lock(&c->lock);
	if (c->passive && c->state == VCONN_ABANDONED &&
	    c->fail == STATUS_CONNECTION_ABORTED) {
		/* The connecting peer abandoned the attempt (NDK_FN_ACCEPT). */
		status = STATUS_CONNECTION_ABORTED;
		goto out;
	}
	if (!c->passive || c->state != VCONN_REQUESTED) {
		status = STATUS_CONNECTION_INVALID;
		goto out;
	}
	ret = ndk_vqp_bind(qp, vconn_qp_fatal, &c->obj);
	if (ret) {
		status = ret == -EBUSY ? STATUS_CONNECTION_ACTIVE
				       : STATUS_INVALID_DEVICE_STATE;
		goto out;
	}
	if (ndk_obj_link(&c->obj, &qp->obj)) {
		ndk_vqp_unbind(qp);
		status = STATUS_INVALID_PARAMETER;
		goto out;
	}
	c->qp = qp;
	c->req_ird = vconn_cap(ird, ad->info.MaxInboundReadLimit);
	c->req_ord = vconn_cap(ord, ad->info.MaxOutboundReadLimit);
	c->eff_ird = MIN(c->req_ird, c->peer_ord);
	c->eff_ord = MIN(c->req_ord, c->peer_ird);
	if (!vconn_vad(c)->iwarp &&
	    ndk_vqp_ib_ready(qp, c->id, c->eff_ird, c->eff_ord)) {
		vconn_abandon(c, STATUS_CONNECTION_ABORTED);
		status = STATUS_CONNECTION_ABORTED;
		goto out;
	}
	p = vconn_param(c, pd, (uint8_t)pd_len, c->eff_ird, c->eff_ord);
	if (rdma_accept(c->id, &p)) {
		/* The initiator is gone, or the device refused. */
		ndk_info("verbs: connector %p: rdma_accept failed (%d)",
			 (void *)c, errno);
		vconn_abandon(c, STATUS_CONNECTION_ABORTED);
		status = STATUS_CONNECTION_ABORTED;
		goto out;
	}
	c->disc_cb = ev;
	c->disc_cb_ex = ev_ex;
	c->disc_ctx = ev_ctx;
	ndk_req_pend(&c->accept_req, &c->obj, cb, ctx);
	vconn_set_state(c, VCONN_ACCEPTING);
	status = STATUS_PENDING;
out:
	ndk_unlock(&c->lock);
	return status;
}

static NTSTATUS
vconn_ndk_accept(NDK_CONNECTOR *pNdkConnector, NDK_QP *pNdkQp,
		 ULONG InboundReadLimit, ULONG OutboundReadLimit,
		 CONST PVOID pPrivateData, ULONG PrivateDataLength,
		 NDK_FN_DISCONNECT_EVENT_CALLBACK DisconnectEvent,
		 PVOID DisconnectEventContext,
		 NDK_FN_REQUEST_COMPLETION RequestCompletion,
		 PVOID RequestContext)
{
	return vconn_accept(to_vconn(pNdkConnector), pNdkQp, InboundReadLimit,
			    OutboundReadLimit, pPrivateData, PrivateDataLength,
			    DisconnectEvent, NULL, DisconnectEventContext,
			    RequestCompletion, RequestContext);
}

static NTSTATUS
vconn_ndk_accept_ex(NDK_CONNECTOR *pNdkConnector, NDK_QP *pNdkQp,
		    ULONG InboundReadLimit, ULONG OutboundReadLimit,
		    CONST PVOID pPrivateData, ULONG PrivateDataLength,
		    NDK_FN_DISCONNECT_EVENT_CALLBACK_EX DisconnectEvent,
		    PVOID DisconnectEventContext,
		    NDK_FN_REQUEST_COMPLETION RequestCompletion,
		    PVOID RequestContext)
{
	return vconn_accept(to_vconn(pNdkConnector), pNdkQp, InboundReadLimit,
			    OutboundReadLimit, pPrivateData, PrivateDataLength,
			    NULL, DisconnectEvent, DisconnectEventContext,
			    RequestCompletion, RequestContext);
}

static NTSTATUS vconn_reject(NDK_CONNECTOR *pNdkConnector,
			     CONST PVOID pPrivateData, ULONG PrivateDataLength)
{
	struct ndk_vconn *c = to_vconn(pNdkConnector);
	NTSTATUS status;

	status = vconn_check_pd(pPrivateData, PrivateDataLength,
				MIN(c->obj.adapter->info.MaxCalleeData,
				    vconn_vad(c)->max_reject_data));
	if (status)
		return status;
	ndk_lock(&c->lock);
	switch (c->state) {
	case VCONN_REQUESTED:
		if (rdma_reject(c->id, pPrivateData,
				(uint8_t)PrivateDataLength)) {
			/* The initiator is gone already (NDK_FN_REJECT). */
			ndk_info("verbs: connector %p: rdma_reject: %s",
				 (void *)c, strerror(errno));
			status = STATUS_CONNECTION_ABORTED;
		}
		vconn_abandon(c, status ? status : STATUS_CONNECTION_INVALID);
		break;
	case VCONN_REPLIED:
		/*
		 * Active side after Connect completed: IB rejects the REP;
		 * an iWARP connection is up already and is closed, so the
		 * peer sees a disconnect (docs/verbs.md).
		 */
		if (vconn_vad(c)->iwarp)
			rdma_disconnect(c->id);
		else
			rdma_reject(c->id, NULL, 0);
		vconn_abandon(c, STATUS_CONNECTION_INVALID);
		break;
	case VCONN_FAILED:
	case VCONN_ABANDONED:
	case VCONN_CLOSED:
		status = c->fail == STATUS_CONNECTION_ABORTED
				 ? STATUS_CONNECTION_ABORTED
				 : STATUS_CONNECTION_INVALID;
		break;
	default:
		status = STATUS_CONNECTION_INVALID;
		break;
	}
	ndk_unlock(&c->lock);
	return status;
}

/* ------------------------------------------------------------------ */
/* Established                                                        */

static void vconn_timer_fn(struct ndk_timer *t)
{
	struct ndk_vconn *c = container_of(t, struct ndk_vconn, timer);

	ndk_lock(&c->lock);
	c->timer_set = false;
	switch (c->state) {
	case VCONN_RESOLVING_ADDR:
	case VCONN_RESOLVING_ROUTE:
	case VCONN_CONNECTING:
		/* No answer within NDK_CM_TIMEOUT_MS (NDK_FN_CONNECT). */
		vconn_attempt_failed(c, STATUS_IO_TIMEOUT);
		break;
	case VCONN_DISCONNECTING:
		/* NdkDisconnect was never answered. */
		ndk_vqp_ended(c->qp, true);
		vconn_destroy_id(c);
		vconn_set_state(c, VCONN_CLOSED);
		c->fail = STATUS_CONNECTION_INVALID;
		ndk_req_complete(&c->disconnect_req, STATUS_IO_TIMEOUT);
		break;
	default:
		break;
	}
	ndk_unlock(&c->lock);
	ndk_obj_put(&c->obj); /* the timer's reference */
}

static NTSTATUS vconn_disconnect(NDK_CONNECTOR *pNdkConnector,
				 NDK_FN_REQUEST_COMPLETION RequestCompletion,
				 PVOID RequestContext)
{
	struct ndk_vconn *c = to_vconn(pNdkConnector);
	NTSTATUS status = STATUS_SUCCESS;

	ndk_lock(&c->lock);
	switch (c->state) {
	case VCONN_ESTABLISHED:
		/* Graceful: DREQ (IB) or FIN (iWARP), then DISCONNECTED. */
		if (rdma_disconnect(c->id)) {
			/* Nothing to wait for: the connection is down. */
			ndk_vqp_ended(c->qp, true);
			vconn_set_state(c, VCONN_CLOSED);
			c->fail = STATUS_CONNECTION_INVALID;
			break;
		}
		ndk_req_pend(&c->disconnect_req, &c->obj, RequestCompletion,
			     RequestContext);
		vconn_set_state(c, VCONN_DISCONNECTING);
		vconn_arm_timer(c, ndk_cm_timeout_ms());
		status = STATUS_PENDING;
		break;
	case VCONN_PEER_CLOSED:
		/* The peer is gone already: finish at once, flushing. */
		rdma_disconnect(c->id);
		ndk_vqp_ended(c->qp, true);
		vconn_set_state(c, VCONN_CLOSED);
		c->fail = STATUS_CONNECTION_INVALID;
		break;
	default:
		status = STATUS_CONNECTION_INVALID;
		break;
	}
	ndk_unlock(&c->lock);
	return status;
}

/* ------------------------------------------------------------------ */
/* Queries                                                            */

static NTSTATUS vconn_get_connection_data(NDK_CONNECTOR *pNdkConnector,
					  ULONG *pInboundReadLimit,
					  ULONG *pOutboundReadLimit,
					  PVOID pPrivateData,
					  ULONG *pPrivateDataLength)
{
	struct ndk_vconn *c = to_vconn(pNdkConnector);
	NTSTATUS status = ndk_conndata_check(pPrivateData, pPrivateDataLength);

	if (status)
		return status;
	ndk_lock(&c->lock);
	/* RDS on iWARP: what the peer sent; on IB: the whole private data
	 * area (docs/verbs.md, Private data). */
	status = !c->peer_known ? STATUS_CONNECTION_INVALID
				: ndk_conndata_copy_out(
					  c->eff_ird, c->eff_ord, c->peer_pd,
					  c->peer_pd_len, pInboundReadLimit,
					  pOutboundReadLimit, pPrivateData,
					  pPrivateDataLength);
	ndk_unlock(&c->lock);
	return status;
}

static NTSTATUS vconn_get_address(struct ndk_vconn *c, bool peer,
				  PSOCKADDR addr, ULONG *len)
{
	NTSTATUS status;

	ndk_lock(&c->lock);
	if (!c->passive && c->state == VCONN_IDLE)
		status = STATUS_CONNECTION_INVALID;
	else
		status = ndk_addr_copy_out(peer ? (struct sockaddr *)&c->peer
						: (struct sockaddr *)&c->local,
					   addr, len);
	ndk_unlock(&c->lock);
	return status;
}

static NTSTATUS vconn_get_local_address(NDK_CONNECTOR *pNdkConnector,
					PSOCKADDR pAddress,
					ULONG *pAddressLength)
{
	return vconn_get_address(to_vconn(pNdkConnector), false, pAddress,
				 pAddressLength);
}

static NTSTATUS vconn_get_peer_address(NDK_CONNECTOR *pNdkConnector,
				       PSOCKADDR pAddress,
				       ULONG *pAddressLength)
{
	return vconn_get_address(to_vconn(pNdkConnector), true, pAddress,
				 pAddressLength);
}

static const NDK_CONNECTOR_DISPATCH vconn_dispatch = {
	.NdkCloseConnector = ndk_close_object,
	.NdkQueryExtension = ndk_query_extension,
	.NdkConnect = vconn_connect,
	.NdkConnectWithSharedEndpoint = vconn_connect_sep,
	.NdkCompleteConnect = vconn_complete_connect,
	.NdkAccept = vconn_ndk_accept,
	.NdkReject = vconn_reject,
	.NdkGetConnectionData = vconn_get_connection_data,
	.NdkGetLocalAddress = vconn_get_local_address,
	.NdkGetPeerAddress = vconn_get_peer_address,
	.NdkDisconnect = vconn_disconnect,
	.NdkCompleteConnectEx = vconn_complete_connect_ex,
	.NdkAcceptEx = vconn_ndk_accept_ex,
};

/* ------------------------------------------------------------------ */
/* Object lifetime                                                    */

/*
 * Close in any state: a connect in progress is abandoned, an incoming
 * request not accepted is refused (destroying its id rejects it), an
 * established connection is disconnected and its QP flushed, and every
 * pending request completes before the close does.
 */
static void vconn_close_begin(struct ndk_obj *obj)
{
	struct ndk_vconn *c = container_of(obj, struct ndk_vconn, obj);

	ndk_lock(&c->lock);
	if (vconn_listed(c->state) || c->state == VCONN_DISCONNECTING) {
		if (c->id)
			rdma_disconnect(c->id);
		ndk_vqp_ended(c->qp, true);
	} else {
		vconn_qp_failed(c);
	}
	vconn_destroy_id(c);
	vconn_stop_timer(c);
	ndk_req_complete(&c->connect_req, STATUS_CANCELLED);
	ndk_req_complete(&c->accept_req, STATUS_CANCELLED);
	ndk_req_complete(&c->disconnect_req, STATUS_CANCELLED);
	if (!vconn_ended(c->state) && c->state != VCONN_IDLE)
		vconn_set_state(c, VCONN_CLOSED);
	ndk_unlock(&c->lock);
}

static void vconn_close_end(struct ndk_obj *obj)
{
	struct ndk_vconn *c = container_of(obj, struct ndk_vconn, obj);

	if (c->tuple_registered)
		ndk_tuple_unregister((struct sockaddr *)&c->local,
				     (struct sockaddr *)&c->peer);
	c->tuple_registered = false;
	if (c->ep)
		ndk_endpoint_put(c->ep);
	c->ep = NULL;
}

static void vconn_destroy(struct ndk_obj *obj)
{
	struct ndk_vconn *c = container_of(obj, struct ndk_vconn, obj);

	/* The connect job held a reference until it was done with it. */
	assert(!c->in_connect && !c->id_after_connect);
	/* A connector made for a request that was never handed out. */
	if (c->id) {
		c->id->context = NULL;
		rdma_destroy_id(c->id);
	}
	if (c->ep)
		ndk_endpoint_put(c->ep);
	ndk_lock_destroy(&c->lock);
	free(c);
}

static const struct ndk_obj_ops vconn_ops = {
	.type = NdkObjectTypeConnector,
	.name = "connector",
	.close_begin = vconn_close_begin,
	.close_end = vconn_close_end,
	.destroy = vconn_destroy,
};

static struct ndk_vconn *vconn_alloc(void)
{
	struct ndk_vconn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->ref.kind = NDK_VCM_CONNECTOR;
	ndk_lock_init(&c->lock, NDK_LOCK_CONNECTOR);
	ndk_work_init(&c->disc_work, vconn_disc_work_fn);
	ndk_timer_init(&c->timer, vconn_timer_fn);
	c->reg_slot = -1;
	c->state = VCONN_IDLE;
	return c;
}

NTSTATUS ndk_verbs_create_connector(NDK_ADAPTER *pNdkAdapter,
				    NDK_FN_CREATE_COMPLETION CreateCompletion,
				    PVOID RequestContext,
				    NDK_CONNECTOR **ppNdkConnector)
{
	struct ndk_adapter *ad = to_ndk_adapter(pNdkAdapter);
	struct ndk_obj *antes[] = { &ad->obj };
	struct ndk_vconn *c;
	NTSTATUS status;

	if (!ppNdkConnector)
		return STATUS_INVALID_PARAMETER;
	c = vconn_alloc();
	if (!c)
		return STATUS_INSUFFICIENT_RESOURCES;
	status = ndk_obj_setup(&c->obj, ad, &vconn_ops, &vconn_dispatch, antes,
			       1);
	if (status)
		return status;
	*ppNdkConnector = &c->obj.pub.connector;
	return STATUS_SUCCESS;
}

struct ndk_vconn *ndk_vconn_incoming(struct ndk_obj *listener,
				     struct ndk_endpoint *ep,
				     const struct ndk_vcm_event *e)
{
	struct ndk_adapter *ad = listener->adapter;
	struct ndk_obj *antes[] = { listener };
	struct sockaddr *sa;
	struct ndk_vconn *c = vconn_alloc();

	if (!c)
		return NULL;
	c->passive = true;
	sa = rdma_get_local_addr(e->id);
	memcpy(&c->local, sa, ndk_addr_len(sa));
	sa = rdma_get_peer_addr(e->id);
	memcpy(&c->peer, sa, ndk_addr_len(sa));
	/* Until Accept: the initiator's values capped by our maxima. */
	c->req_ird = vconn_cap(ad->info.MaxInboundReadLimit,
			       ad->info.MaxInboundReadLimit);
	c->req_ord = vconn_cap(ad->info.MaxOutboundReadLimit,
			       ad->info.MaxOutboundReadLimit);
	vconn_note_peer(c, e, false);
	if (ndk_obj_setup(&c->obj, ad, &vconn_ops, &vconn_dispatch, antes, 1))
		return NULL; /* vconn_destroy freed it; the id is still ours */
	/* From here the id and the endpoint reference are the connector's. */
	ndk_endpoint_get(ep);
	c->ep = ep;
	c->id = e->id;
	ndk_lock(&c->lock);
	vconn_set_state(c, VCONN_REQUESTED);
	c->id->context = &c->ref;
	ndk_unlock(&c->lock);
	return c;
}
