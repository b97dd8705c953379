/* SPDX-License-Identifier: MIT */
/*
 * NDK listener. Listening over MPA v2 is issue #3; until it lands NdkListen
 * and NdkGetLocalAddress return STATUS_NOT_IMPLEMENTED.
 */
#include <stdlib.h>
#include "core/adapter.h"
#include "core/provider.h"

struct ndk_listener {
	struct ndk_obj obj;
	NDK_FN_CONNECT_EVENT_CALLBACK *connect_event;
	PVOID connect_event_ctx;
	bool paused;
};

static void listener_destroy(struct ndk_obj *obj)
{
	free(container_of(obj, struct ndk_listener, obj));
}

static const struct ndk_obj_ops listener_ops = {
	.type = NdkObjectTypeListener,
	.name = "listener",
	.destroy = listener_destroy,
};

static NTSTATUS listener_listen(NDK_LISTENER *l, CONST PSOCKADDR addr,
				ULONG len, NDK_FN_REQUEST_COMPLETION cb,
				PVOID ctx)
{
	return STATUS_NOT_IMPLEMENTED;
}

static NTSTATUS listener_get_local_address(NDK_LISTENER *l, PSOCKADDR addr,
					   ULONG *len)
{
	return STATUS_NOT_IMPLEMENTED;
}

static VOID listener_control_connect_events(NDK_LISTENER *l, BOOLEAN pause)
{
	struct ndk_listener *lis =
		container_of(l, struct ndk_listener, obj.pub.listener);

	lis->paused = pause;
}

static const NDK_LISTENER_DISPATCH listener_dispatch = {
	.NdkCloseListener = ndk_close_object,
	.NdkQueryExtension = ndk_query_extension,
	.NdkListen = listener_listen,
	.NdkGetLocalAddress = listener_get_local_address,
	.NdkControlConnectEvents = listener_control_connect_events,
};

NTSTATUS ndk_create_listener(NDK_ADAPTER *pNdkAdapter,
			     NDK_FN_CONNECT_EVENT_CALLBACK ConnectEvent,
			     PVOID ConnectEventContext,
			     NDK_FN_CREATE_COMPLETION CreateCompletion,
			     PVOID RequestContext, NDK_LISTENER **ppNdkListener)
{
	struct ndk_adapter *ad = to_ndk_adapter(pNdkAdapter);
	struct ndk_obj *antes[] = { &ad->obj };
	struct ndk_listener *l;
	NTSTATUS status;

	if (!ppNdkListener || !ConnectEvent)
		return STATUS_INVALID_PARAMETER;
	l = calloc(1, sizeof(*l));
	if (!l)
		return STATUS_INSUFFICIENT_RESOURCES;
	l->connect_event = ConnectEvent;
	l->connect_event_ctx = ConnectEventContext;
	status = ndk_obj_setup(&l->obj, ad, &listener_ops, &listener_dispatch,
			       antes, 1);
	if (status)
		return status;
	*ppNdkListener = &l->obj.pub.listener;
	return STATUS_SUCCESS;
}
