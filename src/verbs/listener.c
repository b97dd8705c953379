/* SPDX-License-Identifier: MIT */
/*
 * Listener over a listening rdma_cm id (docs/verbs.md, Connection
 * management; docs/ndk.md, Accepting).
 *
 * NdkListen reserves the endpoint in the front end's table (the ND port
 * rules are the same for both providers), binds an rdma_cm id to it and
 * listens. Each CONNECT_REQUEST becomes a connector handed to the
 * ConnectEvent on the engine thread; a paused or closing listener
 * rejects it at once, so the initiator's Connect is refused as if nobody
 * listened. The backlog is rdma_cm's (NDK_LISTEN_BACKLOG).
 */
#include <assert.h>
#include <errno.h>
#include <string.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/socket.h>
#include "core/config.h"
#include "core/log.h"
#include "core/status.h"
#include "front/adapter.h"
#include "front/address.h"
#include "front/endpoint.h"
#include "verbs/connector.h"
#include "verbs/listener.h"

enum vlis_state {
	VLIS_IDLE, /* created */
	VLIS_LISTENING, /* NdkListen succeeded */
	VLIS_CLOSING, /* close requested: no new requests */
	VLIS_STATE_COUNT
};

static const char *const vlis_state_names[VLIS_STATE_COUNT] = {
	[VLIS_IDLE] = "IDLE",
	[VLIS_LISTENING] = "LISTENING",
	[VLIS_CLOSING] = "CLOSING",
};

/* The legal transitions; a listener may be closed in any state. */
static const bool vlis_transition_ok[VLIS_STATE_COUNT][VLIS_STATE_COUNT] = {
	[VLIS_IDLE] = { [VLIS_LISTENING] = true, [VLIS_CLOSING] = true },
	[VLIS_LISTENING] = { [VLIS_CLOSING] = true },
};

struct ndk_vlistener {
	struct ndk_obj obj;
	struct ndk_vcm_ref ref; /* the id's context */
	NDK_FN_CONNECT_EVENT_CALLBACK connect_event;
	PVOID connect_event_ctx;

	struct ndk_lock lock; /* everything below */
	enum vlis_state state;
	bool paused;
	struct rdma_cm_id *id;
	struct ndk_endpoint *ep;
};

static inline struct ndk_vlistener *to_vlis(NDK_LISTENER *l)
{
	return container_of(l, struct ndk_vlistener, obj.pub.listener);
}

struct ndk_obj *ndk_vlis_obj(struct ndk_vcm_ref *ref)
{
	return &container_of(ref, struct ndk_vlistener, ref)->obj;
}

/* The one state setter; l->lock held. */
static void vlis_set_state(struct ndk_vlistener *l, enum vlis_state to)
{
	NDK_ASSERT_LOCKED(&l->lock);
	if (!vlis_transition_ok[l->state][to]) {
		ndk_err("verbs: listener %p: illegal transition %s -> %s",
			(void *)l, vlis_state_names[l->state],
			vlis_state_names[to]);
		assert(!"illegal listener state transition");
		return;
	}
	ndk_dbg("verbs: listener %p: %s -> %s", (void *)l,
		vlis_state_names[l->state], vlis_state_names[to]);
	l->state = to;
}

/* Lock held. */
static void vlis_destroy_id(struct ndk_vlistener *l)
{
	NDK_ASSERT_LOCKED(&l->lock);
	if (!l->id)
		return;
	l->id->context = NULL;
	rdma_destroy_id(l->id);
	l->id = NULL;
}

/* A request nobody takes: refused, its id gone. */
static void vlis_refuse(struct rdma_cm_id *id)
{
	id->context = NULL;
	rdma_reject(id, NULL, 0);
	rdma_destroy_id(id);
}

static void vlis_request(struct ndk_vlistener *l, const struct ndk_vcm_event *e)
{
	struct ndk_endpoint *ep = NULL;
	struct ndk_vconn *c = NULL;

	ndk_lock(&l->lock);
	/* A request that came through another device (a wildcard listener
	 * listens on all of them) cannot be accepted on our QPs. */
	if (l->state == VLIS_LISTENING && !l->paused &&
	    e->id->verbs == to_vad(l->obj.adapter)->ctx) {
		ep = l->ep;
		ndk_endpoint_get(ep);
	}
	ndk_unlock(&l->lock);
	if (ep) {
		c = ndk_vconn_incoming(&l->obj, ep, e);
		ndk_endpoint_put(ep);
	}
	if (!c) {
		vlis_refuse(e->id);
		return;
	}
	/* No event once the close started: the request is refused by
	 * closing its connector. */
	if (ndk_obj_begin_event(&l->obj)) {
		l->connect_event(l->connect_event_ctx, ndk_vconn_pub(c));
		ndk_obj_release(&l->obj);
	} else {
		ndk_obj_close_internal(to_ndk_obj(&ndk_vconn_pub(c)->Header));
	}
}

void ndk_vlis_event(struct ndk_vcm_ref *ref, const struct ndk_vcm_event *e)
{
	struct ndk_vlistener *l = container_of(ref, struct ndk_vlistener, ref);

	if (e->type == RDMA_CM_EVENT_CONNECT_REQUEST) {
		vlis_request(l, e);
		return;
	}
	/* DEVICE_REMOVAL, ADDR_CHANGE: nothing the listener can act on. */
	ndk_info("verbs: listener %p: %s", (void *)l, rdma_event_str(e->type));
}

static NTSTATUS vlis_listen(NDK_LISTENER *pNdkListener,
			    CONST PSOCKADDR pAddress, ULONG AddressLength,
			    NDK_FN_REQUEST_COMPLETION RequestCompletion,
			    PVOID RequestContext)
{
	struct ndk_vlistener *l = to_vlis(pNdkListener);
	struct ndk_adapter *ad = l->obj.adapter;
	struct ndk_endpoint *ep;
	const struct sockaddr *sa;
	socklen_t len;
	NTSTATUS status;
	int fd;

	ndk_lock(&l->lock);
	if (l->state != VLIS_IDLE) {
		status = STATUS_INVALID_DEVICE_STATE;
		goto out;
	}
	/* Listener endpoint: +1 for the listener (NDKPI Listeners,
	 * Connectors, and Endpoints). */
	status = ndk_local_endpoint_acquire(ad, pAddress, AddressLength,
					    NDK_ENDPOINT_LISTENER, &ep);
	if (status)
		goto out;
	/*
	 * The table keeps the reservation; its TCP socket goes, since an
	 * iWARP device listens on that port with a kernel socket of its
	 * own, which a bound one of ours would block (docs/verbs.md,
	 * Endpoints).
	 */
	fd = ndk_endpoint_take_fd(ep);
	if (fd >= 0)
		close(fd);
	sa = ndk_endpoint_addr(ep, &len);
	if (rdma_create_id(to_vad(ad)->cm, &l->id, &l->ref, RDMA_PS_TCP)) {
		status = ndk_verbs_errno_status(errno, NDK_VERBS_CM);
		ndk_endpoint_put(ep);
		goto out;
	}
	if (rdma_bind_addr(l->id, (struct sockaddr *)sa) ||
	    rdma_listen(l->id, (int)ndk_config_u64("NDK_LISTEN_BACKLOG",
						   SOMAXCONN, 1, 65535))) {
		/* rdma_cm's port space: another process listens there. */
		ndk_info("verbs: listener %p: rdma_bind_addr/listen: %s",
			 (void *)l, strerror(errno));
		status = ndk_verbs_errno_status(errno, NDK_VERBS_CM_BIND);
		vlis_destroy_id(l);
		ndk_endpoint_put(ep);
		goto out;
	}
	l->ep = ep;
	vlis_set_state(l, VLIS_LISTENING);
	ndk_endpoint_publish(ep, ad);
	/* Listening now: no callback (NDK_FN_REQUEST_COMPLETION). */
out:
	ndk_unlock(&l->lock);
	return status;
}

static NTSTATUS vlis_get_local_address(NDK_LISTENER *pNdkListener,
				       PSOCKADDR pAddress,
				       ULONG *pAddressLength)
{
	struct ndk_vlistener *l = to_vlis(pNdkListener);
	NTSTATUS status;

	ndk_lock(&l->lock);
	status = ndk_endpoint_local_address(l->ep, pAddress, pAddressLength);
	ndk_unlock(&l->lock);
	return status;
}

static VOID vlis_control_connect_events(NDK_LISTENER *pNdkListener,
					BOOLEAN Pause)
{
	struct ndk_vlistener *l = to_vlis(pNdkListener);

	/* While paused, requests are refused as if nobody listened. */
	ndk_lock(&l->lock);
	l->paused = Pause != FALSE;
	ndk_unlock(&l->lock);
}

static const NDK_LISTENER_DISPATCH vlis_dispatch = {
	.NdkCloseListener = ndk_close_object,
	.NdkQueryExtension = ndk_query_extension,
	.NdkListen = vlis_listen,
	.NdkGetLocalAddress = vlis_get_local_address,
	.NdkControlConnectEvents = vlis_control_connect_events,
};

/*
 * Once its close is requested the listener takes no new request: its id
 * goes now (connections it handed out have their own ids). The close
 * completes after those connectors are closed; their endpoint references
 * keep the address reserved until then.
 */
static void vlis_close_begin(struct ndk_obj *obj)
{
	struct ndk_vlistener *l = container_of(obj, struct ndk_vlistener, obj);

	ndk_lock(&l->lock);
	if (l->state != VLIS_CLOSING)
		vlis_set_state(l, VLIS_CLOSING);
	vlis_destroy_id(l);
	ndk_unlock(&l->lock);
}

static void vlis_close_end(struct ndk_obj *obj)
{
	struct ndk_vlistener *l = container_of(obj, struct ndk_vlistener, obj);

	if (l->ep)
		ndk_endpoint_put(l->ep);
	l->ep = NULL;
}

static void vlis_destroy(struct ndk_obj *obj)
{
	struct ndk_vlistener *l = container_of(obj, struct ndk_vlistener, obj);

	ndk_lock_destroy(&l->lock);
	free(l);
}

static const struct ndk_obj_ops vlis_ops = {
	.type = NdkObjectTypeListener,
	.name = "listener",
	.close_begin = vlis_close_begin,
	.close_end = vlis_close_end,
	.destroy = vlis_destroy,
};

NTSTATUS ndk_verbs_create_listener(NDK_ADAPTER *pNdkAdapter,
				   NDK_FN_CONNECT_EVENT_CALLBACK ConnectEvent,
				   PVOID ConnectEventContext,
				   NDK_FN_CREATE_COMPLETION CreateCompletion,
				   PVOID RequestContext,
				   NDK_LISTENER **ppNdkListener)
{
	struct ndk_adapter *ad = to_ndk_adapter(pNdkAdapter);
	struct ndk_obj *antes[] = { &ad->obj };
	struct ndk_vlistener *l;
	NTSTATUS status;

	if (!ppNdkListener || !ConnectEvent)
		return STATUS_INVALID_PARAMETER;
	l = calloc(1, sizeof(*l));
	if (!l)
		return STATUS_INSUFFICIENT_RESOURCES;
	l->ref.kind = NDK_VCM_LISTENER;
	l->connect_event = ConnectEvent;
	l->connect_event_ctx = ConnectEventContext;
	l->state = VLIS_IDLE;
	ndk_lock_init(&l->lock, NDK_LOCK_LISTENER);
	status =
		ndk_obj_setup(&l->obj, ad, &vlis_ops, &vlis_dispatch, antes, 1);
	if (status)
		return status;
	*ppNdkListener = &l->obj.pub.listener;
	return STATUS_SUCCESS;
}
