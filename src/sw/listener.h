/* SPDX-License-Identifier: MIT */
#ifndef SW_LISTENER_H
#define SW_LISTENER_H

#include <pthread.h>
#include <stdatomic.h>
#include "core/lock.h"
#include "sw/backlog.h"
#include "core/list.h"
#include "front/listener.h"
#include "front/object.h"
#include "engine/engine.h"

struct ndk_adapter;
struct ndk_endpoint;

/*
 * NDK listener (NDK_FN_LISTEN, NDK_FN_CONNECT_EVENT_CALLBACK). It owns the
 * accept phase: every TCP connection it accepts is a pending connection
 * (listener.c) until its MPA Request is in; only then is a connector
 * created, for the ConnectEvent. Its ND endpoint holds one reference for
 * the listener and one per connector created through it (NDKPI Listeners,
 * Connectors, and Endpoints): the address stays reserved until the last
 * of them is closed. lock protects the fields below it.
 */
/*
 * Whether the engine reads the kernel's accept queue. Engine thread only.
 * When the backlog is full or the process is out of descriptors or
 * memory, new TCP connections stay in the kernel's queue, where TCP's own
 * backpressure (SYN retries) holds them, instead of being refused.
 */
enum sw_accept_gate {
	SW_ACCEPT_OPEN, /* accepting */
	SW_ACCEPT_BACKLOG_FULL, /* Requests parked, waiting for a slot */
	SW_ACCEPT_NO_RESOURCES, /* EMFILE/ENFILE/ENOMEM: retry timer */
	SW_ACCEPT_GATE_COUNT
};

struct sw_listener {
	/* First: the consumer-visible part (front/listener.h): the lock,
	 * the state, pausing, the endpoint, the ConnectEvent. */
	struct ndk_listener lis;
	int fd;
	struct ndk_io io;
	struct ndk_work teardown_work;
	/* Requests handed out but not accepted or rejected yet. */
	struct sw_backlog backlog;
	/* Engine thread only: accepted sockets still reading a Request, and
	 * those whose Request waits for a backlog slot (oldest first). */
	struct list_head pending;
	struct list_head parked;
	enum sw_accept_gate gate;
	struct ndk_timer retry_timer; /* NO_RESOURCES: try accept again */
	uint64_t retry_ms; /* the next retry's delay, doubling */
	uint64_t starved_since_ns; /* the episode's start, for the log */
	unsigned int starved_retries;
	/* Set by the engine while Requests are parked; the first slot
	 * returned clears it and posts slot_work. */
	atomic_bool slot_wanted;
	struct ndk_work slot_work;
};

static inline struct sw_listener *to_sw_listener(NDK_LISTENER *l)
{
	return container_of(l, struct sw_listener, lis.obj.pub.listener);
}

/* The provider's listener ops (front/provider.h). */
NTSTATUS sw_listener_init(struct ndk_listener *l);
NTSTATUS sw_listen(struct ndk_listener *l, struct ndk_endpoint *ep);
void sw_listener_close(struct ndk_listener *l);
void sw_listener_fini(struct ndk_listener *l);

#endif /* SW_LISTENER_H */
