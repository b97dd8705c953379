/* SPDX-License-Identifier: MIT */
/*
 * The listener's consumer contract, once for every provider: creation,
 * NdkListen's state and endpoint rules, NdkGetLocalAddress,
 * NdkControlConnectEvents and the ConnectEvent (front/listener.h).
 */
#include <assert.h>
#include <stdlib.h>
#include "core/log.h"
#include "front/adapter.h"
#include "front/address.h"
#include "front/endpoint.h"
#include "front/listener.h"
#include "front/provider.h"

static const char *const state_names[NDK_LISTENER_STATE_COUNT] = {
	[NDK_LISTENER_IDLE] = "IDLE",
	[NDK_LISTENER_LISTENING] = "LISTENING",
	[NDK_LISTENER_CLOSING] = "CLOSING",
};

/* state_ok[from][to]: a listener listens once and closes once. */
static const bool state_ok[NDK_LISTENER_STATE_COUNT][NDK_LISTENER_STATE_COUNT] = {
	[NDK_LISTENER_IDLE] = {
		[NDK_LISTENER_LISTENING] = true,
		[NDK_LISTENER_CLOSING] = true,
	},
	[NDK_LISTENER_LISTENING] = {
		[NDK_LISTENER_CLOSING] = true,
	},
};

void ndk_listener_set_state(struct ndk_listener *l, enum ndk_listener_state to)
{
	enum ndk_listener_state from = l->state;

	NDK_ASSERT_LOCKED(&l->lock);
	if (!state_ok[from][to]) {
		ndk_err("listener %p: illegal transition %s -> %s", (void *)l,
			state_names[from], state_names[to]);
		assert(!"illegal listener state transition");
		return;
	}
	ndk_dbg("listener %p: %s -> %s", (void *)l, state_names[from],
		state_names[to]);
	l->state = to;
}

bool ndk_listener_deliver(struct ndk_listener *l, NDK_CONNECTOR *conn)
{
	/* No event once the close started (NDK_FN_CLOSE_OBJECT). */
	if (!ndk_obj_is_open(to_ndk_obj(&conn->Header)) ||
	    !ndk_obj_begin_event(&l->obj))
		return false;
	l->connect_event(l->connect_event_ctx, conn);
	ndk_obj_release(&l->obj);
	return true;
}

static NTSTATUS listener_listen(NDK_LISTENER *pNdkListener,
				CONST PSOCKADDR pAddress, ULONG AddressLength,
				NDK_FN_REQUEST_COMPLETION RequestCompletion,
				PVOID RequestContext)
{
	struct ndk_listener *l = to_ndk_listener(pNdkListener);
	struct ndk_adapter *ad = l->obj.adapter;
	struct ndk_endpoint *ep;
	NTSTATUS status;

	ndk_lock(&l->lock);
	if (l->state != NDK_LISTENER_IDLE) {
		status = STATUS_INVALID_DEVICE_STATE;
		goto out;
	}
	/* Listener endpoint: +1 for the listener (NDKPI Listeners,
	 * Connectors, and Endpoints). */
	status = ndk_local_endpoint_acquire(ad, pAddress, AddressLength,
					    NDK_ENDPOINT_LISTENER, &ep);
	if (status)
		goto out;
	status = ad->provider->listen(l, ep);
	if (status) {
		ndk_endpoint_put(ep);
		goto out;
	}
	l->ep = ep;
	ndk_listener_set_state(l, NDK_LISTENER_LISTENING);
	ndk_endpoint_publish(ep, ad);
	/* Listening now: no callback (NDK_FN_REQUEST_COMPLETION). */
out:
	ndk_unlock(&l->lock);
	return status;
}

static NTSTATUS listener_get_local_address(NDK_LISTENER *pNdkListener,
					   PSOCKADDR pAddress,
					   ULONG *pAddressLength)
{
	struct ndk_listener *l = to_ndk_listener(pNdkListener);
	NTSTATUS status;

	ndk_lock(&l->lock);
	status = ndk_endpoint_local_address(l->ep, pAddress, pAddressLength);
	ndk_unlock(&l->lock);
	return status;
}

static VOID listener_control_connect_events(NDK_LISTENER *pNdkListener,
					    BOOLEAN Pause)
{
	struct ndk_listener *l = to_ndk_listener(pNdkListener);

	/* While paused, requests are refused as if nobody listened. */
	ndk_lock(&l->lock);
	l->paused = Pause != FALSE;
	ndk_unlock(&l->lock);
}

static const NDK_LISTENER_DISPATCH listener_dispatch = {
	.NdkCloseListener = ndk_close_object,
	.NdkQueryExtension = ndk_query_extension,
	.NdkListen = listener_listen,
	.NdkGetLocalAddress = listener_get_local_address,
	.NdkControlConnectEvents = listener_control_connect_events,
};

/*
 * Once its close is requested a listener refuses every new request at
 * once (NDK_FN_CLOSE_OBJECT). Its close completes after the connectors
 * created through it are closed; their endpoint references keep the
 * address reserved until then (NDKPI Listeners, Connectors, and
 * Endpoints).
 */
static void listener_close_begin(struct ndk_obj *obj)
{
	struct ndk_listener *l = container_of(obj, struct ndk_listener, obj);

	ndk_lock(&l->lock);
	ndk_listener_set_state(l, NDK_LISTENER_CLOSING);
	obj->adapter->provider->listener_close(l);
	ndk_unlock(&l->lock);
}

static void listener_close_end(struct ndk_obj *obj)
{
	struct ndk_listener *l = container_of(obj, struct ndk_listener, obj);

	if (l->ep)
		ndk_endpoint_put(l->ep);
	l->ep = NULL;
}

static void listener_destroy(struct ndk_obj *obj)
{
	struct ndk_listener *l = container_of(obj, struct ndk_listener, obj);

	if (obj->adapter->provider->listener_fini)
		obj->adapter->provider->listener_fini(l);
	ndk_lock_destroy(&l->lock);
	free(l);
}

static const struct ndk_obj_ops listener_ops = {
	.type = NdkObjectTypeListener,
	.name = "listener",
	.close_begin = listener_close_begin,
	.close_end = listener_close_end,
	.destroy = listener_destroy,
};

NTSTATUS ndk_create_listener(NDK_ADAPTER *pNdkAdapter,
			     NDK_FN_CONNECT_EVENT_CALLBACK ConnectEvent,
			     PVOID ConnectEventContext,
			     NDK_FN_CREATE_COMPLETION CreateCompletion,
			     PVOID RequestContext, NDK_LISTENER **ppNdkListener)
{
	const struct ndk_provider_ops *prov;
	struct ndk_obj *antes[1];
	struct ndk_adapter *ad;
	struct ndk_listener *l;
	NTSTATUS status;

	if (!pNdkAdapter || !ppNdkListener || !ConnectEvent)
		return STATUS_INVALID_PARAMETER;
	ad = to_ndk_adapter(pNdkAdapter);
	prov = ad->provider;
	l = calloc(1, prov->listener_size);
	if (!l)
		return STATUS_INSUFFICIENT_RESOURCES;
	/* listener_destroy finds the provider through it. */
	l->obj.adapter = ad;
	l->connect_event = ConnectEvent;
	l->connect_event_ctx = ConnectEventContext;
	l->state = NDK_LISTENER_IDLE;
	ndk_lock_init(&l->lock, NDK_LOCK_LISTENER);
	status = prov->listener_init(l);
	if (status) {
		listener_destroy(&l->obj);
		return status;
	}
	antes[0] = &ad->obj;
	status = ndk_obj_setup(&l->obj, ad, &listener_ops, &listener_dispatch,
			       antes, 1);
	if (status)
		return status; /* listener_destroy freed it */
	/* Created inline: no CreateCompletion (NDK_FN_CREATE_COMPLETION). */
	*ppNdkListener = &l->obj.pub.listener;
	return STATUS_SUCCESS;
}
