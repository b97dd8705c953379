/* SPDX-License-Identifier: MIT */
#ifndef NDK_CM_LISTENER_H
#define NDK_CM_LISTENER_H

#include <pthread.h>
#include "core/lock.h"
#include "cm/backlog.h"
#include "core/list.h"
#include "front/object.h"
#include "engine/engine.h"

struct ndk_endpoint;

enum ndk_listener_state {
	NDK_LISTENER_IDLE, /* created */
	NDK_LISTENER_LISTENING, /* NdkListen succeeded */
	NDK_LISTENER_CLOSING, /* close requested: refuse everything new */
	NDK_LISTENER_STATE_COUNT
};

/*
 * NDK listener (NDK_FN_LISTEN, NDK_FN_CONNECT_EVENT_CALLBACK). It owns the
 * accept phase: every TCP connection it accepts is a pending connection
 * (listener.c) until its MPA Request is in; only then is a connector
 * created, for the ConnectEvent. Its ND endpoint holds one reference for
 * the listener and one per connector created through it (NDKPI Listeners,
 * Connectors, and Endpoints): the address stays reserved until the last
 * of them is closed. lock protects the fields below it.
 */
struct ndk_listener {
	struct ndk_obj obj;
	NDK_FN_CONNECT_EVENT_CALLBACK connect_event;
	PVOID connect_event_ctx;

	struct ndk_lock lock;
	enum ndk_listener_state state;
	bool paused; /* NdkControlConnectEvents(TRUE) */
	int fd;
	struct ndk_io io;
	struct ndk_endpoint *ep;
	struct ndk_work teardown_work;
	/* Requests handed out but not accepted or rejected yet. */
	struct ndk_backlog backlog;
	/* Engine thread only: accepted sockets still reading a Request. */
	struct list_head pending;
};

static inline struct ndk_listener *to_ndk_listener(NDK_LISTENER *l)
{
	return container_of(l, struct ndk_listener, obj.pub.listener);
}

#endif /* NDK_CM_LISTENER_H */
