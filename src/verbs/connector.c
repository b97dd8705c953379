/* SPDX-License-Identifier: MIT */
/*
 * Connector over rdma_cm (docs/verbs.md, Connection management;
 * docs/ndk.md, Connecting, Accepting, Disconnect).
 *
 * One rdma_cm id per connection, on the adapter's event channel. The
 * consumer's calls issue rdma_cm commands (none waits for the network);
 * the events come on the engine thread (verbs/cm.c) to
 * ndk_vconn_event(), which moves the one state machine below (its table
 * and setter are here; connector_active.c and connector_passive.c hold
 * the consumer's calls of each side).
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
 * c->conn.lock protects the whole struct and is never held across a consumer
 * callback; requests complete through ndk_req (on the engine). The id is
 * destroyed under c->conn.lock: rdma_destroy_id waits only for events not yet
 * acknowledged, and verbs/cm.c acknowledges each before it takes the
 * lock.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "verbs/connector.h"
#include "verbs/connector_int.h"
#include "verbs/tcp_state.h"

static const char *const vconn_state_names[VCONN_STATE_COUNT] = {
	[VCONN_IDLE] = "IDLE",
	[VCONN_RESOLVING_ADDR] = "RESOLVING_ADDR",
	[VCONN_RESOLVING_ROUTE] = "RESOLVING_ROUTE",
	[VCONN_CONNECTING] = "CONNECTING",
	[VCONN_REPLIED] = "REPLIED",
	[VCONN_REQUESTED] = "REQUESTED",
	[VCONN_ACCEPTING] = "ACCEPTING",
	[VCONN_ESTABLISHED] = "ESTABLISHED",
	[VCONN_PEER_CLOSING] = "PEER_CLOSING",
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
	[VCONN_ESTABLISHED] = { [VCONN_PEER_CLOSING] = true,
				[VCONN_PEER_CLOSED] = true,
				[VCONN_DISCONNECTING] = true,
				[VCONN_CLOSED] = true },
	[VCONN_PEER_CLOSING] = { [VCONN_PEER_CLOSED] = true,
				 [VCONN_CLOSED] = true },
	[VCONN_PEER_CLOSED] = { [VCONN_CLOSED] = true },
	[VCONN_DISCONNECTING] = { [VCONN_CLOSED] = true },
};

NDK_CONNECTOR *ndk_vconn_pub(struct ndk_vconn *c)
{
	return &c->conn.obj.pub.connector;
}

struct ndk_obj *ndk_vconn_obj(struct ndk_vcm_ref *ref)
{
	return &container_of(ref, struct ndk_vconn, ref)->conn.obj;
}
/* ------------------------------------------------------------------ */
/* States                                                             */

/* Listed in OID_NDK_CONNECTIONS from establishment until the consumer
 * disconnects or closes (as the software provider). */
bool vconn_listed(enum vconn_state s)
{
	return s == VCONN_ESTABLISHED || s == VCONN_PEER_CLOSING ||
	       s == VCONN_PEER_CLOSED;
}

bool vconn_ended(enum vconn_state s)
{
	return s == VCONN_FAILED || s == VCONN_ABANDONED || s == VCONN_CLOSED;
}

static void vconn_publish(struct ndk_vconn *c)
{
	struct ndk_reg_entry e =
		ndk_adapter_reg_entry(c->conn.obj.adapter, NDK_REG_CONNECTION);

	ndk_reg_sockaddr(&e.local, (const struct sockaddr *)&c->conn.local);
	ndk_reg_sockaddr(&e.remote, (const struct sockaddr *)&c->conn.peer);
	c->reg_slot = ndk_reg_publish(&e);
}

/* ------------------------------------------------------------------ */
/* The timer, c->conn.lock held                                            */

#define VCONN_BIT(s) (1u << (s))

/* The states each purpose may run in (enum vconn_timer). */
static const uint32_t vconn_timer_states[VCONN_TIMER_COUNT] = {
	[VCONN_TIMER_CONNECT] = VCONN_BIT(VCONN_RESOLVING_ADDR) |
				VCONN_BIT(VCONN_RESOLVING_ROUTE) |
				VCONN_BIT(VCONN_CONNECTING),
	[VCONN_TIMER_COMPLETE] = VCONN_BIT(VCONN_REPLIED),
	[VCONN_TIMER_ACCEPT] = VCONN_BIT(VCONN_ACCEPTING),
	[VCONN_TIMER_DISCONNECT] = VCONN_BIT(VCONN_DISCONNECTING),
	[VCONN_TIMER_PEER] = VCONN_BIT(VCONN_ESTABLISHED),
	[VCONN_TIMER_CLOSE_GRACE] = VCONN_BIT(VCONN_PEER_CLOSING),
};

static const char *const vconn_timer_names[VCONN_TIMER_COUNT] = {
	[VCONN_TIMER_NONE] = "none",
	[VCONN_TIMER_CONNECT] = "connect",
	[VCONN_TIMER_COMPLETE] = "complete-connect",
	[VCONN_TIMER_ACCEPT] = "accept",
	[VCONN_TIMER_DISCONNECT] = "disconnect",
	[VCONN_TIMER_PEER] = "peer",
	[VCONN_TIMER_CLOSE_GRACE] = "close-grace",
};

/* Arms the one timer for purpose, replacing any other. */
void vconn_arm_timer(struct ndk_vconn *c, enum vconn_timer purpose, uint64_t ms)
{
	bool took = false;

	NDK_ASSERT_LOCKED(&c->conn.lock);
	assert(vconn_timer_states[purpose] & VCONN_BIT(c->state));
	ndk_dbg("verbs: connector %p: %s timer %llu ms in %s", (void *)c,
		vconn_timer_names[purpose], (unsigned long long)ms,
		vconn_state_names[c->state]);
	c->timer_purpose = purpose;
	c->timer_deadline_ns = ndk_now_ns() + ms * 1000000;
	if (!c->timer_ref) {
		ndk_obj_get(&c->conn.obj);
		c->timer_ref = took = true;
	}
	if (ndk_timer_start(c->conn.obj.domain->engine, &c->timer, ms)) {
		ndk_warn("verbs: connector %p: no memory for its %s timer",
			 (void *)c, vconn_timer_names[purpose]);
		c->timer_purpose = VCONN_TIMER_NONE;
		if (took) {
			c->timer_ref = false;
			ndk_obj_put(&c->conn.obj); /* not the last: ours */
		}
	}
}

/*
 * A fire already waiting for c->conn.lock finds no purpose and lets the
 * reference go (vconn_timer_fn).
 */
void vconn_stop_timer(struct ndk_vconn *c)
{
	NDK_ASSERT_LOCKED(&c->conn.lock);
	c->timer_purpose = VCONN_TIMER_NONE;
	c->timer_deadline_ns = UINT64_MAX;
	if (c->timer_ref &&
	    ndk_timer_cancel(c->conn.obj.domain->engine, &c->timer)) {
		c->timer_ref = false;
		ndk_obj_put(
			&c->conn.obj); /* not the last: the caller holds one */
	}
}

/* The state setter's half: a timer of the phase left stops. */
static void vconn_timer_enter_state(struct ndk_vconn *c, enum vconn_state to)
{
	if (c->timer_purpose != VCONN_TIMER_NONE &&
	    !(vconn_timer_states[c->timer_purpose] & VCONN_BIT(to)))
		vconn_stop_timer(c);
}

/* The NDK phase of each state (front/connector.h): the rdma_cm steps of
 * a Connect or an Accept are one phase each. */
static const enum ndk_conn_phase vconn_phase[VCONN_STATE_COUNT] = {
	[VCONN_IDLE] = NDK_CONN_IDLE,
	[VCONN_RESOLVING_ADDR] = NDK_CONN_CONNECTING,
	[VCONN_RESOLVING_ROUTE] = NDK_CONN_CONNECTING,
	[VCONN_CONNECTING] = NDK_CONN_CONNECTING,
	[VCONN_REPLIED] = NDK_CONN_REPLIED,
	[VCONN_REQUESTED] = NDK_CONN_REQUESTED,
	[VCONN_ACCEPTING] = NDK_CONN_ACCEPTING,
	[VCONN_ESTABLISHED] = NDK_CONN_ESTABLISHED,
	/* Not told yet: for the consumer still established. */
	[VCONN_PEER_CLOSING] = NDK_CONN_ESTABLISHED,
	[VCONN_PEER_CLOSED] = NDK_CONN_PEER_CLOSED,
	[VCONN_DISCONNECTING] = NDK_CONN_DISCONNECTING,
	[VCONN_FAILED] = NDK_CONN_FAILED,
	[VCONN_ABANDONED] = NDK_CONN_ABANDONED,
	[VCONN_CLOSED] = NDK_CONN_CLOSED,
};

/* The one state setter; c->conn.lock held. */
void vconn_set_state_at(struct ndk_vconn *c, enum vconn_state to,
			const char *file, int line)
{
	enum vconn_state from = c->state;
	const char *base = strrchr(file, '/');

	NDK_ASSERT_LOCKED(&c->conn.lock);
	file = base ? base + 1 : file;
	if ((unsigned int)to >= VCONN_STATE_COUNT ||
	    !vconn_transition_ok[from][to]) {
		ndk_err("verbs: connector %p: illegal transition %s -> %s "
			"(%s:%d)",
			(void *)c, vconn_state_names[from],
			vconn_state_names[to], file, line);
		assert(!"illegal connector state transition");
		return;
	}
	ndk_dbg("verbs: connector %p: %s -> %s (%s:%d)", (void *)c,
		vconn_state_names[from], vconn_state_names[to], file, line);
	c->state = to;
	ndk_conn_set_phase(&c->conn, vconn_phase[to]);
	vconn_timer_enter_state(c, to);
	if (!vconn_listed(from) && vconn_listed(to)) {
		vconn_publish(c);
	} else if (vconn_listed(from) && !vconn_listed(to)) {
		ndk_reg_withdraw(c->reg_slot);
		c->reg_slot = -1;
	}
}

/* ------------------------------------------------------------------ */
/* The id, the QP and the timer, c->conn.lock held                         */

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
void vconn_destroy_id(struct ndk_vconn *c)
{
	struct vconn_destroy_job *d;

	NDK_ASSERT_LOCKED(&c->conn.lock);
	if (!c->id)
		return;
	ndk_vcm_set_context(vconn_vad(c), c->id, NULL);
	if (c->call) {
		/* A thread is inside rdma_connect with it. */
		vconn_leave_call(c);
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
void vconn_qp_failed(struct ndk_vconn *c)
{
	NDK_ASSERT_LOCKED(&c->conn.lock);
	if (!c->qp || ndk_vqp_state(c->qp) != VQP_CONNECTING)
		return; /* released already, or never bound */
	if (!c->conn.passive && c->state != VCONN_REPLIED)
		ndk_vqp_unbind(c->qp); /* untouched: may connect again */
	else
		ndk_vqp_ended(c->qp, true);
}

/* ------------------------------------------------------------------ */
/* Endings, c->conn.lock held                                              */

/* A pending Connect (active) or Accept (passive) fails with status. */
void vconn_attempt_failed(struct ndk_vconn *c, NTSTATUS status)
{
	vconn_stop_timer(c);
	ndk_info("verbs: connector %p: %s failed in %s: %s", (void *)c,
		 c->conn.passive ? "accept" : "connect",
		 vconn_state_names[c->state], NdkStatusName(status));
	vconn_qp_failed(c);
	vconn_destroy_id(c);
	vconn_set_state(c, VCONN_FAILED);
	c->conn.fail = status;
	ndk_adapter_count(c->conn.obj.adapter, NDK_CTR(ConnectFailure), 1);
	ndk_req_complete(c->conn.passive ? &c->conn.accept_req
					 : &c->conn.connect_req,
			 status);
}

/* Between handshake steps the other side gave up: the next call says. */
void vconn_abandon(struct ndk_vconn *c, NTSTATUS status)
{
	vconn_stop_timer(c);
	vconn_qp_failed(c);
	vconn_destroy_id(c);
	ndk_adapter_count(c->conn.obj.adapter, NDK_CTR(ConnectFailure), 1);
	vconn_set_state(c, VCONN_ABANDONED);
	c->conn.fail = status;
}

/* The QP broke (a Terminate, a remote access error): whatever ended
 * the stream, the connection was aborted. */
static bool vconn_qp_broke(struct ndk_vconn *c)
{
	return c->qp &&
	       (atomic_load_explicit(&c->qp->broken, memory_order_acquire) ||
		(!vconn_vad(c)->iwarp && ndk_vqp_device_error(c->qp)));
}

/* The disconnect event, once, with reason; no flush (the device may
 * flush by itself, docs/verbs.md). */
static void vconn_report_peer_closed(struct ndk_vconn *c, NTSTATUS reason)
{
	if (!reason && vconn_qp_broke(c))
		reason = STATUS_CONNECTION_ABORTED;
	vconn_set_state(c, VCONN_PEER_CLOSED);
	/* Requests after the event are refused inline, as when the QP saw
	 * the error itself (docs/verbs.md, Queue pairs). */
	if (c->qp)
		ndk_vqp_ended(c->qp, false);
	if (reason)
		ndk_adapter_count(c->conn.obj.adapter, NDK_CTR(ConnectionError),
				  1);
	ndk_conn_peer_closed(&c->conn, reason);
}

/*
 * How long an iWARP connector waits, after its stream ended, for the
 * device to say the QP broke. siw reports its side's Terminate (a bad
 * STag in a Read Request, say) by closing the stream first and raising
 * the QP's error event after, on another fd: the end can be read before
 * the error is even queued (docs/verbs.md, Disconnect).
 */
static uint64_t vconn_close_grace_ms(void)
{
	return ndk_config_u64("NDK_VERBS_CLOSE_GRACE_MS", 100, 0, 10000);
}

/*
 * The peer ended an established connection (NDK_FN_DISCONNECT_EVENT_CALLBACK).
 * On IB and RoCE the peer's DREQ may come before the QP's error event,
 * but the responder's QP is in the error state already (an orderly end
 * leaves it in RTS: rdma_cm does not own our QP). On iWARP the device
 * moves the QP to error on any end, so only its error event tells an
 * abort from an orderly end: read those queued, else wait a little.
 */
static void vconn_peer_disconnected(struct ndk_vconn *c,
				    const struct ndk_vcm_event *e)
{
	bool iwarp = vconn_vad(c)->iwarp;
	NTSTATUS reason = ndk_verbs_cm_status(e->type, e->status, iwarp);
	uint64_t grace;

	if (!reason && c->qp && iwarp && !vconn_qp_broke(c)) {
		ndk_vad_async_drain(vconn_vad(c));
		grace = vconn_close_grace_ms();
		if (!vconn_qp_broke(c) && grace) {
			vconn_set_state(c, VCONN_PEER_CLOSING);
			vconn_arm_timer(c, VCONN_TIMER_CLOSE_GRACE, grace);
			return;
		}
	}
	vconn_report_peer_closed(c, reason);
}

/*
 * Dead peers (docs/ndk.md): an iWARP device's TCP socket is the kernel's,
 * so neither TCP_USER_TIMEOUT nor keepalive can be set on it. Every
 * quarter of NDK_PEER_TIMEOUT_MS the connector reads the socket's sending
 * state (/proc/net/tcp, in the caller's network namespace): bytes not
 * acknowledged while the kernel retransmits or probes (both counts go
 * back to 0 with any acknowledgement) for the whole timeout mean the peer
 * is gone. An idle stream gets a zero-length RDMA Write, so that there is
 * something to acknowledge; it consumes nothing at the peer (a Send would
 * take one of its receives).
 */
#define VCONN_PEER_TIMEOUT_DEFAULT_MS 30000

static uint64_t vconn_peer_timeout_ms(void)
{
	return ndk_config_u64("NDK_PEER_TIMEOUT_MS",
			      VCONN_PEER_TIMEOUT_DEFAULT_MS, 0, 3600000);
}

static uint64_t vconn_peer_period_ms(uint64_t timeout)
{
	return MAX(timeout / 4, 100);
}

void vconn_watch_peer(struct ndk_vconn *c)
{
	uint64_t t = vconn_peer_timeout_ms();

	c->stalled_ns = 0;
	if (vconn_vad(c)->iwarp && t)
		vconn_arm_timer(c, VCONN_TIMER_PEER, vconn_peer_period_ms(t));
}

static void vconn_peer_check(struct ndk_vconn *c)
{
	uint64_t t = vconn_peer_timeout_ms(), now = ndk_now_ns();
	struct ndk_tcp_progress p;
	int ret = ndk_tcp_progress((struct sockaddr *)&c->conn.local,
				   (struct sockaddr *)&c->conn.peer, &p);

	if (ret) {
		/* No such stream (gone: the rdma_cm event follows; or
		 * another port, a port mapper's): nothing to judge. */
		ndk_dbg("verbs: connector %p: no TCP state (%d)", (void *)c,
			ret);
	} else if (p.queued && (p.retransmits || p.probes)) {
		if (!c->stalled_ns)
			c->stalled_ns = now;
		if (now - c->stalled_ns >= t * 1000000) {
			ndk_info("verbs: connector %p: nothing acknowledged "
				 "for NDK_PEER_TIMEOUT_MS %llu",
				 (void *)c, (unsigned long long)t);
			vconn_set_state(c, VCONN_PEER_CLOSED);
			if (c->qp)
				ndk_vqp_ended(c->qp, false);
			ndk_adapter_count(c->conn.obj.adapter,
					  NDK_CTR(ConnectionError), 1);
			ndk_conn_peer_closed(&c->conn, STATUS_IO_TIMEOUT);
			return;
		}
	} else {
		c->stalled_ns = 0;
		if (!p.queued && c->qp && ndk_vqp_probe(c->qp))
			ndk_dbg("verbs: connector %p: no probe", (void *)c);
	}
	vconn_arm_timer(c, VCONN_TIMER_PEER, vconn_peer_period_ms(t));
}

/* ------------------------------------------------------------------ */
/* Events from rdma_cm (engine thread)                                */

/* The peer's read limits and private data, from its request or reply. */
void vconn_note_peer(struct ndk_vconn *c, const struct ndk_vcm_event *e,
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
	ndk_conn_set_peer(&c->conn, e->pd, e->pd_len,
			  MIN(c->req_ird, c->peer_ord),
			  MIN(c->req_ord, c->peer_ird));
}

struct rdma_conn_param vconn_param(struct ndk_vconn *c, const void *pd,
				   uint8_t pd_len, uint8_t ird, uint8_t ord)
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

uint8_t vconn_cap(ULONG v, ULONG max)
{
	return (uint8_t)MIN(v, max);
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

	NDK_ASSERT_LOCKED(&c->conn.lock);
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
			/* The neighbour never answered (vconn_resolve_ms). */
			if (e->type == RDMA_CM_EVENT_ADDR_ERROR &&
			    e->status == -ETIMEDOUT && c->resolve_neigh_bound)
				st = STATUS_HOST_UNREACHABLE;
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
			ndk_conn_set_peer(&c->conn, e->pd, e->pd_len,
					  c->conn.eff_ird, c->conn.eff_ord);
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
	case VCONN_PEER_CLOSING:
		/* The QP's error (vconn_qp_fatal) or the device's removal
		 * within the grace: that is the reason. */
		if (e->type == RDMA_CM_EVENT_DISCONNECTED ||
		    e->type == RDMA_CM_EVENT_DEVICE_REMOVAL)
			vconn_report_peer_closed(
				c,
				ndk_verbs_cm_status(e->type, e->status, true));
		return;
	case VCONN_DISCONNECTING:
		if (e->type == RDMA_CM_EVENT_DISCONNECTED ||
		    e->type == RDMA_CM_EVENT_DEVICE_REMOVAL) {
			vconn_stop_timer(c);
			ndk_vqp_ended(c->qp, true);
			vconn_set_state(c, VCONN_CLOSED);
			c->conn.fail = STATUS_CONNECTION_INVALID;
			ndk_req_complete(&c->conn.disconnect_req,
					 STATUS_SUCCESS);
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

	ndk_lock(&c->conn.lock);
	ndk_dbg("verbs: connector %p in %s: %s (status %d)", (void *)c,
		vconn_state_names[c->state], rdma_event_str(e->type),
		e->status);
	vconn_event_locked(c, e);
	ndk_unlock(&c->conn.lock);
}

/*
 * The device found the QP broken (a Terminate, a remote access error):
 * for the consumer, the connection ended as if the peer had aborted it.
 */
void vconn_qp_fatal(struct ndk_obj *obj)
{
	struct ndk_vconn *c = container_of(obj, struct ndk_vconn, conn.obj);
	struct ndk_vcm_event e = {
		.type = RDMA_CM_EVENT_DISCONNECTED,
		.status = -ECONNABORTED,
	};

	ndk_lock(&c->conn.lock);
	if (c->state == VCONN_ESTABLISHED && c->id) {
		/* The peer learns it too: the connection is torn down (IB:
		 * DREQ; iWARP: the device closed the stream already). */
		rdma_disconnect(c->id);
	}
	vconn_event_locked(c, &e);
	ndk_unlock(&c->conn.lock);
}

/* ------------------------------------------------------------------ */
/* Established                                                        */

/*
 * The timer fired: what happens depends only on why it was armed (the
 * setter stopped it if the connector left that phase since). A stale fire
 * (stopped, or re-armed further) changes nothing.
 */
static void vconn_timer_fn(struct ndk_timer *t)
{
	struct ndk_vconn *c = container_of(t, struct ndk_vconn, timer);
	enum vconn_timer purpose;
	bool put = false;

	ndk_lock(&c->conn.lock);
	/* On the engine thread: armed now means another fire will come. */
	if (!ndk_timer_armed(&c->timer)) {
		put = c->timer_ref;
		c->timer_ref = false;
	}
	purpose = c->timer_purpose;
	if (purpose == VCONN_TIMER_NONE ||
	    ndk_now_ns() < c->timer_deadline_ns) {
		ndk_unlock(&c->conn.lock);
		if (put)
			ndk_obj_put(&c->conn.obj);
		return;
	}
	ndk_dbg("verbs: connector %p: %s timer fired in %s", (void *)c,
		vconn_timer_names[purpose], vconn_state_names[c->state]);
	c->timer_purpose = VCONN_TIMER_NONE;
	c->timer_deadline_ns = UINT64_MAX;
	switch (purpose) {
	case VCONN_TIMER_CONNECT:
		/* No answer within NDK_CM_TIMEOUT_MS (NDK_FN_CONNECT). */
		vconn_attempt_failed(c, STATUS_IO_TIMEOUT);
		break;
	case VCONN_TIMER_COMPLETE:
		/* The consumer never called CompleteConnect: the attempt is
		 * over, and the acceptor learns it (IB: the id's destroy
		 * rejects the REP; iWARP: the flush ends the stream). */
		vconn_abandon(c, STATUS_IO_TIMEOUT);
		break;
	case VCONN_TIMER_ACCEPT:
		/* The initiator never completed (NDK_FN_ACCEPT_EX). */
		vconn_attempt_failed(c, STATUS_IO_TIMEOUT);
		break;
	case VCONN_TIMER_PEER:
		vconn_peer_check(c);
		break;
	case VCONN_TIMER_CLOSE_GRACE:
		/* No error came: an orderly end, unless one is queued. */
		ndk_vad_async_drain(vconn_vad(c));
		vconn_report_peer_closed(c, STATUS_SUCCESS);
		break;
	case VCONN_TIMER_DISCONNECT:
		/* NdkDisconnect was never answered. */
		ndk_vqp_ended(c->qp, true);
		vconn_destroy_id(c);
		vconn_set_state(c, VCONN_CLOSED);
		c->conn.fail = STATUS_CONNECTION_INVALID;
		ndk_req_complete(&c->conn.disconnect_req, STATUS_IO_TIMEOUT);
		break;
	default:
		break;
	}
	ndk_unlock(&c->conn.lock);
	if (put)
		ndk_obj_put(&c->conn.obj); /* the timer's reference */
}

/* NdkDisconnect, checked by front/connector.c; c->lock held. */
static NTSTATUS vconn_disconnect(struct ndk_conn *base,
				 NDK_FN_REQUEST_COMPLETION RequestCompletion,
				 PVOID RequestContext)
{
	struct ndk_vconn *c = container_of(base, struct ndk_vconn, conn);
	NTSTATUS status = STATUS_SUCCESS;

	switch (c->state) {
	case VCONN_ESTABLISHED:
		/* Graceful: DREQ (IB) or FIN (iWARP), then DISCONNECTED. */
		if (rdma_disconnect(c->id)) {
			/* Nothing to wait for: the connection is down. */
			ndk_vqp_ended(c->qp, true);
			vconn_set_state(c, VCONN_CLOSED);
			c->conn.fail = STATUS_CONNECTION_INVALID;
			break;
		}
		ndk_req_pend(&c->conn.disconnect_req, &c->conn.obj,
			     RequestCompletion, RequestContext);
		vconn_set_state(c, VCONN_DISCONNECTING);
		vconn_arm_timer(c, VCONN_TIMER_DISCONNECT, ndk_cm_timeout_ms());
		status = STATUS_PENDING;
		break;
	case VCONN_PEER_CLOSING:
	case VCONN_PEER_CLOSED:
		/* The peer is gone already: finish at once, flushing. */
		rdma_disconnect(c->id);
		ndk_vqp_ended(c->qp, true);
		vconn_set_state(c, VCONN_CLOSED);
		c->conn.fail = STATUS_CONNECTION_INVALID;
		break;
	default:
		break;
	}
	return status;
}

/* ------------------------------------------------------------------ */
/* Queries                                                            */

/* What the verbs connector does once front/connector.c checked a call
 * (front/connector.h). */
const struct ndk_conn_ops ndk_vconn_ops = {
	.connect = ndk_vconn_connect,
	.complete_connect = ndk_vconn_complete_connect,
	.accept = ndk_vconn_accept,
	.reject = ndk_vconn_reject,
	.disconnect = vconn_disconnect,
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
	struct ndk_vconn *c = container_of(obj, struct ndk_vconn, conn.obj);

	ndk_lock(&c->conn.lock);
	if (vconn_listed(c->state) || c->state == VCONN_DISCONNECTING) {
		if (c->id)
			rdma_disconnect(c->id);
		ndk_vqp_ended(c->qp, true);
	} else {
		vconn_qp_failed(c);
	}
	vconn_destroy_id(c);
	vconn_stop_timer(c);
	ndk_conn_cancel_requests(&c->conn);
	if (!vconn_ended(c->state) && c->state != VCONN_IDLE)
		vconn_set_state(c, VCONN_CLOSED);
	ndk_unlock(&c->conn.lock);
}

static void vconn_close_end(struct ndk_obj *obj)
{
	struct ndk_vconn *c = container_of(obj, struct ndk_vconn, conn.obj);

	ndk_conn_release_endpoint(&c->conn);
}

static void vconn_destroy(struct ndk_obj *obj)
{
	struct ndk_vconn *c = container_of(obj, struct ndk_vconn, conn.obj);

	/* The close left any connect thread (vconn_destroy_id). */
	assert(!c->call);
	/* A connector made for a request that was never handed out. */
	if (c->id) {
		ndk_vcm_set_context(vconn_vad(c), c->id, NULL);
		rdma_destroy_id(c->id);
	}
	ndk_conn_fini(&c->conn);
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
	ndk_conn_init(&c->conn, false);
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
	status = ndk_obj_setup(&c->conn.obj, ad, &vconn_ops, &ndk_conn_dispatch,
			       antes, 1);
	if (status)
		return status;
	*ppNdkConnector = &c->conn.obj.pub.connector;
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
	c->conn.passive = true;
	sa = rdma_get_local_addr(e->id);
	memcpy(&c->conn.local, sa, ndk_addr_len(sa));
	sa = rdma_get_peer_addr(e->id);
	memcpy(&c->conn.peer, sa, ndk_addr_len(sa));
	/* Until Accept: the initiator's values capped by our maxima. */
	c->req_ird = vconn_cap(ad->info.MaxInboundReadLimit,
			       ad->info.MaxInboundReadLimit);
	c->req_ord = vconn_cap(ad->info.MaxOutboundReadLimit,
			       ad->info.MaxOutboundReadLimit);
	vconn_note_peer(c, e, false);
	if (ndk_obj_setup(&c->conn.obj, ad, &vconn_ops, &ndk_conn_dispatch,
			  antes, 1))
		return NULL; /* vconn_destroy freed it; the id is still ours */
	/* From here the id and the endpoint reference are the connector's. */
	ndk_endpoint_get(ep);
	c->conn.ep = ep;
	c->id = e->id;
	ndk_lock(&c->conn.lock);
	vconn_set_state(c, VCONN_REQUESTED);
	ndk_vcm_set_context(vconn_vad(c), c->id, &c->ref);
	ndk_unlock(&c->conn.lock);
	return c;
}
