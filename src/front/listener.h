/* SPDX-License-Identifier: MIT */
/*
 * The listener as a consumer sees it, the same for every provider
 * (docs/ndk.md, Accepting; NDKPI Listeners, Connectors, and Endpoints):
 * NdkListen's rules and the endpoint it reserves, pausing, the address
 * query, and raising the ConnectEvent. A provider's listener embeds
 * struct ndk_listener first (the front end allocates, closes and frees
 * it) and does the transport's part: listen on the endpoint
 * (ndk_provider_ops.listen) and turn each request into a connector for
 * ndk_listener_deliver.
 */
#ifndef NDK_FRONT_LISTENER_H
#define NDK_FRONT_LISTENER_H

#include <stdbool.h>
#include "core/lock.h"
#include "front/object.h"

struct ndk_endpoint;

enum ndk_listener_state {
	NDK_LISTENER_IDLE,
	NDK_LISTENER_LISTENING,
	NDK_LISTENER_CLOSING, /* close requested: every request refused */
	NDK_LISTENER_STATE_COUNT
};

struct ndk_listener {
	struct ndk_obj obj; /* must stay first */
	NDK_FN_CONNECT_EVENT_CALLBACK connect_event; /* never NULL */
	PVOID connect_event_ctx;

	struct ndk_lock lock; /* the provider's part too */
	enum ndk_listener_state state;
	bool paused; /* NdkControlConnectEvents(TRUE) */
	struct ndk_endpoint *ep; /* reserved by NdkListen */
};

static inline struct ndk_listener *to_ndk_listener(NDK_LISTENER *l)
{
	return container_of(l, struct ndk_listener, obj.pub.listener);
}

/* NdkCreateListener, the adapter's slot: checks, then the provider's. */
NTSTATUS ndk_create_listener(NDK_ADAPTER *pNdkAdapter,
			     NDK_FN_CONNECT_EVENT_CALLBACK ConnectEvent,
			     PVOID ConnectEventContext,
			     NDK_FN_CREATE_COMPLETION CreateCompletion,
			     PVOID RequestContext,
			     NDK_LISTENER **ppNdkListener);

/* The one state setter (l->lock held). */
void ndk_listener_set_state(struct ndk_listener *l, enum ndk_listener_state to);

/* A request may be handed out: listening and not paused (l->lock held).
 * Otherwise it is refused as if nobody listened. */
static inline bool ndk_listener_open_locked(const struct ndk_listener *l)
{
	return l->state == NDK_LISTENER_LISTENING && !l->paused;
}

/*
 * Raises the ConnectEvent for conn (no lock held): true if the consumer
 * got it, false if the listener's close has started or conn is already
 * closing (the provider then refuses the request).
 */
bool ndk_listener_deliver(struct ndk_listener *l, NDK_CONNECTOR *conn);

#endif /* NDK_FRONT_LISTENER_H */
