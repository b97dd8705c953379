/* SPDX-License-Identifier: MIT */
#ifndef NDK_CM_LISTENER_H
#define NDK_CM_LISTENER_H

#include <pthread.h>
#include "front/object.h"
#include "engine/engine.h"

struct ndk_endpoint;

/*
 * NDK listener (ndkpi.md 4.9, 6.3). Its ND endpoint holds one reference
 * for the listener and one per connector created through it (9.3): the
 * address stays reserved until the last of them is closed.
 * lock protects the fields below it.
 */
struct ndk_listener {
	struct ndk_obj obj;
	NDK_FN_CONNECT_EVENT_CALLBACK connect_event;
	PVOID connect_event_ctx;

	pthread_mutex_t lock;
	bool listening;
	bool paused; /* NdkControlConnectEvents(TRUE) */
	bool closing; /* close requested: refuse everything new */
	int fd;
	struct ndk_io io;
	struct ndk_endpoint *ep;
	unsigned int pending; /* requests not yet accepted or rejected */
	unsigned int backlog; /* refuse beyond this many pending */
	struct list_head undelivered; /* connectors reading their Request */
	struct ndk_work teardown_work;
};

static inline struct ndk_listener *to_ndk_listener(NDK_LISTENER *l)
{
	return container_of(l, struct ndk_listener, obj.pub.listener);
}

/*
 * A request arrived: true if it may be delivered (listening, not paused,
 * not closing, backlog not full); the request is then counted pending
 * until ndk_listener_request_done().
 */
bool ndk_listener_admit(struct ndk_listener *l);
void ndk_listener_request_done(struct ndk_listener *l);

/*
 * Connectors the listener accepted but has not handed to the consumer yet
 * are the provider's: closing the listener closes them (entry is the
 * connector's list node, under l->lock).
 */
void ndk_listener_track(struct ndk_listener *l, struct list_head *entry);
void ndk_listener_untrack(struct ndk_listener *l, struct list_head *entry);

#endif /* NDK_CM_LISTENER_H */
