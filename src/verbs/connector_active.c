/* SPDX-License-Identifier: MIT */
/*
 * The verbs connector's active side (docs/verbs.md, Connection
 * management): NdkConnect(WithSharedEndpoint) reserves the local endpoint,
 * resolves the address and the route and connects on a thread of its own;
 * NdkCompleteConnect finishes the handshake.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include "verbs/connector_int.h"
#include "verbs/tcp_state.h"

/*
 * One rdma_connect, on a detached thread: siw makes its TCP connection
 * inside it, blocking for as long as an unanswered SYN is retried, and
 * holds the QP meanwhile (its destroy waits). Neither the connector's
 * close nor the adapter's may wait for that (docs/ndk.md, Connecting):
 * a connector that lets go of the attempt (vconn_leave_call) cancels the
 * thread, which interrupts the kernel's connect; the thread then ends the
 * id itself, and the channel it counts outlives the adapter until then.
 */
struct vconn_call {
	/* Under calls_lock: NULL once the connector left; done once the
	 * thread no longer takes a cancellation. */
	struct ndk_vconn *c;
	bool done;
	pthread_t thread;
	struct rdma_cm_id *id;
	struct ndk_vchan *chan;
	struct rdma_conn_param p;
	uint8_t pd[NDK_VCM_PD_MAX];
};

static struct ndk_lock calls_lock = NDK_LOCK_INITIALIZER(NDK_LOCK_LEAF);

/* c->conn.lock held. */
void vconn_leave_call(struct ndk_vconn *c)
{
	struct vconn_call *call = c->call;

	ndk_lock(&calls_lock);
	call->c = NULL;
	/* Still alive until it takes calls_lock and sees done. */
	if (!call->done)
		pthread_cancel(call->thread);
	ndk_unlock(&calls_lock);
	c->call = NULL;
}

/* After rdma_connect, returned (ret, err) or cancelled (-1, EINTR). */
static void vconn_call_end(struct vconn_call *call, int ret, int err)
{
	struct ndk_vconn *c;
	bool own = true;

	ndk_lock(&calls_lock);
	call->done = true;
	c = call->c;
	if (c)
		ndk_obj_get(&c->conn.obj);
	ndk_unlock(&calls_lock);
	if (c) {
		ndk_lock(&c->conn.lock);
		if (c->call == call) {
			own = false;
			c->call = NULL;
			if (ret && c->state == VCONN_CONNECTING) {
				ndk_info("verbs: connector %p: rdma_connect: "
					 "%s",
					 (void *)c, strerror(err));
				vconn_attempt_failed(
					c, ndk_verbs_errno_status(
						   err, NDK_VERBS_CM));
			}
		}
		ndk_unlock(&c->conn.lock);
		ndk_obj_put(&c->conn.obj);
	}
	/* Left by its connector: the id is this thread's to end. */
	if (own && rdma_destroy_id(call->id))
		ndk_warn("verbs: rdma_destroy_id failed (%d)", errno);
	ndk_vchan_put(call->chan);
	free(call);
}

static void vconn_call_cancelled(void *arg)
{
	vconn_call_end(arg, -1, EINTR);
}

/* Apart from vconn_call_main: nothing of its frame lives across the
 * cleanup handler's jump. */
static int vconn_call_connect(struct vconn_call *call, int *err)
{
	int ret = rdma_connect(call->id, &call->p);

	*err = ret ? errno : 0;
	return ret;
}

static void *vconn_call_main(void *arg)
{
	struct vconn_call *call = arg;
	int ret, err;

	/* Cancellable inside rdma_connect only (its write to the rdma_cm
	 * device is a cancellation point; signals interrupt the kernel's
	 * TCP connect). */
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
	pthread_cleanup_push(vconn_call_cancelled, call);
	pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
	ret = vconn_call_connect(call, &err);
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
	pthread_cleanup_pop(0);
	vconn_call_end(call, ret, err);
	return NULL;
}

void vconn_route_resolved(struct ndk_vconn *c)
{
	struct ndk_vadapter *v = vconn_vad(c);
	struct vconn_call *call = calloc(1, sizeof(*call));
	pthread_attr_t attr;
	int ret = ENOMEM;

	if (!call)
		goto fail;
	call->c = c;
	call->id = c->id;
	call->chan = v->chan;
	memcpy(call->pd, c->pd, c->pd_len);
	call->p = vconn_param(c, call->pd, (uint8_t)c->pd_len, c->req_ird,
			      c->req_ord);
	vconn_set_state(c, VCONN_CONNECTING);
	c->call = call;
	atomic_fetch_add_explicit(&v->chan->refs, 1, memory_order_relaxed);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	/* The thread's id is set before anyone may cancel it: the
	 * connector's lock is held. */
	ret = pthread_create(&call->thread, &attr, vconn_call_main, call);
	pthread_attr_destroy(&attr);
	if (!ret)
		return;
	c->call = NULL;
	ndk_vchan_put(v->chan);
	free(call);
fail:
	ndk_warn("verbs: connector %p: no thread for rdma_connect (%d)",
		 (void *)c, ret);
	vconn_attempt_failed(c, STATUS_INSUFFICIENT_RESOURCES);
}

/* CONNECTING: the peer accepted (IB: its REP; iWARP: established). */
void vconn_replied(struct ndk_vconn *c, const struct ndk_vcm_event *e)
{
	bool iwarp = vconn_vad(c)->iwarp;

	vconn_stop_timer(c);
	vconn_note_peer(c, e, iwarp);
	vconn_set_state(c, VCONN_REPLIED);
	/*
	 * Twice the acceptor's limit, as for the software provider: against
	 * a libndk acceptor its Accept times out first (IO_TIMEOUT there,
	 * CONNECTION_ABORTED here); ours ends an attempt whose consumer
	 * never completes it, so no REP waits for ever (docs/ndk.md,
	 * Connecting).
	 */
	vconn_arm_timer(c, VCONN_TIMER_COMPLETE, 2 * ndk_cm_timeout_ms());
	ndk_req_complete(&c->conn.connect_req, STATUS_SUCCESS);
}

/* ------------------------------------------------------------------ */
/* Active side                                                        */

/* One neighbour parameter of the adapter's interface, or -1. */
static long neigh_param(const struct ndk_adapter *ad, int family,
			const char *name)
{
	char path[128];
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/sys/net/%s/neigh/%s/%s",
		 family == AF_INET6 ? "ipv6" : "ipv4", ad->ifname, name);
	f = fopen(path, "re");
	if (!f)
		return -1;
	if (fscanf(f, "%ld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

/*
 * How long rdma_resolve_addr may take. rdma_cm retries an unresolved
 * neighbour until its timeout and never reports that ARP (or ND) gave up,
 * so the attempt's whole NDK_CM_TIMEOUT_MS would end as IO_TIMEOUT where
 * the software provider's TCP says EHOSTUNREACH after the kernel's
 * probes. Bounded by the time those probes take (each of mcast_solicit
 * and app_solicit one retrans_time_ms apart), plus a margin, a timeout
 * means the host did not answer (docs/ndk.md, Connecting).
 */
static uint64_t vconn_resolve_ms(struct ndk_vconn *c, int family)
{
	struct ndk_adapter *ad = c->conn.obj.adapter;
	uint64_t cm = ndk_cm_timeout_ms();
	long mcast = neigh_param(ad, family, "mcast_solicit");
	long app = neigh_param(ad, family, "app_solicit");
	long retrans = neigh_param(ad, family, "retrans_time_ms");
	uint64_t neigh;

	c->resolve_neigh_bound = false;
	if (mcast < 0 || app < 0 || retrans <= 0 || mcast + app <= 0)
		return cm;
	neigh = (uint64_t)(mcast + app) * (uint64_t)retrans + 500;
	if (neigh >= cm)
		return cm;
	c->resolve_neigh_bound = true;
	return neigh;
}

/*
 * rdma_cm reports no route to the destination only when its resolution
 * times out, where the software provider's TCP connect fails at once
 * with ENETUNREACH (docs/ndk.md, Connecting). Connecting a UDP socket
 * looks the route up in this network namespace and sends nothing.
 */
static NTSTATUS vconn_route_check(const struct sockaddr *dst)
{
	int fd = socket(dst->sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	NTSTATUS status = STATUS_SUCCESS;

	if (fd < 0)
		return STATUS_SUCCESS; /* rdma_cm says what it finds */
	if (connect(fd, dst, (socklen_t)ndk_addr_len(dst)) &&
	    (errno == ENETUNREACH || errno == EHOSTUNREACH))
		status = ndk_status_from_errno(-errno, NDK_SITE_CONNECT);
	close(fd);
	return status;
}

/* c->conn.lock held, c->conn.ep reserved: everything after the endpoint. */
static NTSTATUS vconn_start(struct ndk_vconn *c, struct ndk_vqp *qp,
			    const struct sockaddr *dst, ULONG ird, ULONG ord,
			    const void *pd, ULONG pd_len,
			    NDK_FN_REQUEST_COMPLETION cb, PVOID ctx)
{
	struct ndk_adapter *ad = c->conn.obj.adapter;
	NTSTATUS status;
	int ret;

	status = ndk_conn_use_endpoint(&c->conn, c->conn.ep, dst);
	if (!status)
		status = vconn_route_check(dst);
	if (status)
		return status;
	ret = ndk_vqp_bind(qp, vconn_qp_fatal, &c->conn.obj);
	if (ret)
		return ret == -EBUSY ? STATUS_CONNECTION_ACTIVE
				     : STATUS_INVALID_DEVICE_STATE;
	if (ndk_obj_link(&c->conn.obj, &qp->obj)) {
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
	ndk_req_pend(&c->conn.connect_req, &c->conn.obj, cb, ctx);
	vconn_set_state(c, VCONN_RESOLVING_ADDR);
	/* The whole attempt, as for the software provider (siw's own MPA
	 * timer is longer). */
	vconn_arm_timer(c, VCONN_TIMER_CONNECT, ndk_cm_timeout_ms());
	if (rdma_resolve_addr(c->id, (struct sockaddr *)&c->conn.local,
			      (struct sockaddr *)dst,
			      (int)vconn_resolve_ms(c, dst->sa_family))) {
		/* The source port taken in rdma_cm's own space, or no
		 * route: inline (NDK_FN_CONNECT). */
		ndk_info("verbs: connector %p: rdma_resolve_addr: %s",
			 (void *)c, strerror(errno));
		status = ndk_verbs_errno_status(
			errno,
			errno == EADDRINUSE ? NDK_VERBS_CM_BIND : NDK_VERBS_CM);
		ndk_req_withdraw(&c->conn.connect_req);
		ndk_adapter_count(ad, NDK_CTR(ConnectFailure), 1);
		vconn_set_state(c, VCONN_IDLE);
		vconn_destroy_id(c);
		goto fail_qp;
	}
	return STATUS_PENDING;
fail_qp:
	ndk_vqp_unbind(qp);
	ndk_obj_unlink(&c->conn.obj, &qp->obj);
	c->qp = NULL;
	return status;
}

/*
 * Common tail of NdkConnect and NdkConnectWithSharedEndpoint: c->conn.lock
 * held, c->conn.ep referenced. On an inline failure the connector is IDLE
 * again, owning nothing, so it may try again.
 */
static NTSTATUS vconn_begin(struct ndk_vconn *c,
			    const struct ndk_conn_connect *a)
{
	NTSTATUS status;

	status =
		vconn_start(c, container_of(a->qp, struct ndk_vqp, obj), a->dst,
			    a->ird, a->ord, a->pd, a->pd_len, a->cb, a->ctx);
	if (status != STATUS_PENDING)
		ndk_conn_release_endpoint(&c->conn);
	return status;
}

/*
 * The connector's own endpoint: one reference (NDKPI Listeners,
 * Connectors, and Endpoints). A picked port the kernel still has towards
 * this destination would fail the device's own connect with
 * EADDRNOTAVAIL (ndk_conn_port_picked): the table rotates, so the next
 * pick is another port.
 */
static NTSTATUS vconn_own_endpoint(struct ndk_vconn *c,
				   const struct ndk_conn_connect *a)
{
	/* Only an iWARP device makes a TCP connection of its own. */
	int tries = ndk_conn_port_picked(a) && vconn_vad(c)->iwarp
			    ? NDK_CONN_PORT_TRIES
			    : 1;
	NTSTATUS status;

	for (int i = 0;; i++) {
		const struct sockaddr *local;
		socklen_t len;

		status = ndk_local_endpoint_acquire(
			c->conn.obj.adapter, a->src, a->src_len,
			NDK_ENDPOINT_CONNECTOR, &c->conn.ep);
		if (status || i + 1 >= tries)
			return status; /* the last one: the device says */
		local = ndk_endpoint_addr(c->conn.ep, &len);
		if (!ndk_tcp_tuple_taken(local, a->dst))
			return STATUS_SUCCESS;
		ndk_dbg("verbs: connector %p: picked port in use towards "
			"the destination; another",
			(void *)c);
		ndk_endpoint_put(c->conn.ep);
		c->conn.ep = NULL;
	}
}

/* NdkConnect(WithSharedEndpoint), checked by front/connector.c;
 * c->lock held. */
NTSTATUS ndk_vconn_connect(struct ndk_conn *base,
			   const struct ndk_conn_connect *a)
{
	struct ndk_vconn *c = container_of(base, struct ndk_vconn, conn);
	NTSTATUS status;

	if (!a->sep) {
		status = vconn_own_endpoint(c, a);
		return status ? status : vconn_begin(c, a);
	}
	/* +1 on the shared endpoint per connector; the object is the
	 * connector's antecedent. */
	if (!c->sep_linked) {
		if (ndk_obj_link(&c->conn.obj, &a->sep->obj))
			return STATUS_INVALID_PARAMETER;
		c->sep_linked = true;
	}
	ndk_endpoint_get(a->sep->ep);
	c->conn.ep = a->sep->ep;
	c->shared = true;
	status = vconn_begin(c, a);
	if (status != STATUS_PENDING)
		c->shared = false;
	return status;
}

/* NdkCompleteConnect(Ex), checked by front/connector.c; c->lock held. */
NTSTATUS ndk_vconn_complete_connect(struct ndk_conn *base)
{
	struct ndk_vconn *c = container_of(base, struct ndk_vconn, conn);
	NTSTATUS status = STATUS_SUCCESS;
	/* IB and RoCE: RTR and RTS, then the RTU lets the peer's Accept
	 * complete. iWARP: the kernel established it already. */
	if (!vconn_vad(c)->iwarp &&
	    (ndk_vqp_ib_ready(c->qp, c->id, c->conn.eff_ird, c->conn.eff_ord) ||
	     rdma_establish(c->id))) {
		vconn_abandon(c, STATUS_CONNECTION_ABORTED);
		status = STATUS_CONNECTION_ABORTED;
		goto out;
	}
	ndk_vqp_connected(c->qp);
	vconn_set_state(c, VCONN_ESTABLISHED);
	vconn_watch_peer(c);
	ndk_adapter_count(c->conn.obj.adapter, NDK_CTR(Connect), 1);
out:
	return status;
}
