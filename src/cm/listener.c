/* SPDX-License-Identifier: MIT */
/*
 * NDK listener (NDK_FN_LISTEN, NDK_FN_CONNECT_EVENT_CALLBACK): a listening
 * TCP socket on an ND endpoint. The listener owns the accept phase: each
 * accepted TCP connection is a pending connection that reads the MPA
 * Request under the CM timeout; only a whole Request becomes a connector
 * (ndk_connector_new_passive), which the ConnectEvent hands to the
 * consumer.
 */
#include <assert.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>
#include "cm/connector.h"
#include "cm/listener.h"
#include "cm/mpa_io.h"
#include "core/config.h"
#include "core/log.h"
#include "core/status.h"
#include "front/adapter.h"
#include "front/address.h"
#include "front/endpoint.h"
#include "front/provider.h"

static const char *const listener_state_names[NDK_LISTENER_STATE_COUNT] = {
	[NDK_LISTENER_IDLE] = "IDLE",
	[NDK_LISTENER_LISTENING] = "LISTENING",
	[NDK_LISTENER_CLOSING] = "CLOSING",
};

static const bool listener_transition_ok[NDK_LISTENER_STATE_COUNT]
					[NDK_LISTENER_STATE_COUNT] = {
	[NDK_LISTENER_IDLE] = {
		[NDK_LISTENER_LISTENING] = true,
		[NDK_LISTENER_CLOSING] = true,
	},
	[NDK_LISTENER_LISTENING] = {
		[NDK_LISTENER_CLOSING] = true,
	},
};

/* The one state setter; l->lock held. */
static void listener_set_state(struct ndk_listener *l,
			       enum ndk_listener_state to)
{
	enum ndk_listener_state from = l->state;

	if (!listener_transition_ok[from][to]) {
		ndk_err("listener %p: illegal transition %s -> %s", (void *)l,
			listener_state_names[from], listener_state_names[to]);
		assert(!"illegal listener state transition");
		return;
	}
	ndk_dbg("listener %p: %s -> %s", (void *)l, listener_state_names[from],
		listener_state_names[to]);
	l->state = to;
}

/* ------------------------------------------------------------------ */
/* Pending connections: accepted, reading the MPA Request             */

/*
 * One accepted TCP connection until its Request is in. Engine thread
 * only: created by the listening socket's handler, ended by its own
 * handler or timer, or by the listener's teardown.
 */
struct ndk_pending_conn {
	struct list_head entry; /* l->pending */
	struct ndk_listener *l;
	int fd;
	struct ndk_io io;
	struct ndk_timer timer; /* NDK_CM_TIMEOUT_MS for the Request */
	struct ndk_mpa_rx rx;
};

static struct ndk_pending_conn *pending_of_io(struct ndk_io *io)
{
	return container_of(io, struct ndk_pending_conn, io);
}

/* Ends a pending connection: no handler or timer of it runs after this. */
static void pending_free(struct ndk_pending_conn *p)
{
	struct ndk_engine *e = &p->l->obj.adapter->engine;

	ndk_timer_cancel(e, &p->timer);
	if (p->fd >= 0) {
		ndk_engine_del_fd(e, &p->io);
		close(p->fd);
	}
	list_del(&p->entry);
	free(p);
}

/*
 * The Request is in: the socket goes to a new connector, and the
 * connector to the consumer's ConnectEvent.
 */
static void pending_hand_over(struct ndk_pending_conn *p,
			      const struct mpa_rr *req)
{
	struct ndk_listener *l = p->l;
	struct ndk_passive_request r = {
		.adapter = l->obj.adapter,
		.listener = &l->obj,
		.fd = p->fd,
		.req = req,
	};
	NDK_CONNECTOR *conn;
	bool delivered = false;
	int ret;

	/* The connector registers the fd anew. */
	ndk_engine_del_fd(&l->obj.adapter->engine, &p->io);
	p->fd = -1;
	/* Admitted if listening, not paused, and a backlog slot is free. */
	ndk_lock(&l->lock);
	if (l->state == NDK_LISTENER_LISTENING && !l->paused &&
	    ndk_backlog_take(&l->backlog))
		r.slot = &l->backlog;
	r.ep = l->ep;
	ndk_unlock(&l->lock);
	ret = ndk_connector_new_passive(&r, &conn);
	pending_free(p); /* req points into it: only now */
	if (ret)
		return;
	if (ndk_obj_is_open(to_ndk_obj(&conn->Header)) &&
	    ndk_obj_begin_event(&l->obj)) {
		l->connect_event(l->connect_event_ctx, conn);
		ndk_obj_release(&l->obj);
		delivered = true;
	}
	ndk_connector_handed_over(conn, delivered);
}

static void pending_io_fn(struct ndk_io *io, uint32_t events)
{
	struct ndk_pending_conn *p = pending_of_io(io);
	struct mpa_rr req;
	int ret = ndk_mpa_rx_frame(&p->rx, p->fd, MPA_RR_REQUEST, &req,
				   "listener", p->l);

	if (ret > 0)
		pending_hand_over(p, &req);
	else if (ret < 0)
		/* Not MPA, too much PD, or gone: drop it, as siw does. */
		pending_free(p);
}

/* The initiator stayed silent too long: siw drops it too. */
static void pending_timer_fn(struct ndk_timer *t)
{
	pending_free(container_of(t, struct ndk_pending_conn, timer));
}

/* A new TCP connection; fd is the pending connection's from here on. */
static int pending_new(struct ndk_listener *l, int fd)
{
	struct ndk_engine *e = &l->obj.adapter->engine;
	struct ndk_pending_conn *p;
	static const int one = 1;

	/* Once its close is requested, the listener takes nothing new. */
	if (!ndk_obj_is_open(&l->obj)) {
		close(fd);
		return -ESHUTDOWN;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		close(fd);
		return -ENOMEM;
	}
	p->l = l;
	p->fd = fd;
	p->io.fd = fd;
	p->io.fn = pending_io_fn;
	ndk_timer_init(&p->timer, pending_timer_fn);
	list_add_tail(&p->entry, &l->pending);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (ndk_timer_start(e, &p->timer, ndk_cm_timeout_ms()) ||
	    ndk_engine_add_fd(e, &p->io, EPOLLIN)) {
		/* Not registered: del_fd finds nothing. */
		pending_free(p);
		return -ENOMEM;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* The listener                                                       */

static void listener_io_fn(struct ndk_io *io, uint32_t events)
{
	struct ndk_listener *l = container_of(io, struct ndk_listener, io);

	for (;;) {
		int fd = accept4(l->fd, NULL, NULL,
				 SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno != EAGAIN)
				ndk_warn("listener %p: accept: %d", (void *)l,
					 errno);
			return;
		}
		if (pending_new(l, fd))
			ndk_warn("listener %p: dropped a connection",
				 (void *)l);
	}
}

static NTSTATUS listener_listen(NDK_LISTENER *pNdkListener,
				CONST PSOCKADDR pAddress, ULONG AddressLength,
				NDK_FN_REQUEST_COMPLETION RequestCompletion,
				PVOID RequestContext)
{
	struct ndk_listener *l = to_ndk_listener(pNdkListener);
	struct ndk_endpoint *ep;
	NTSTATUS status;
	int fd;

	ndk_lock(&l->lock);
	if (l->state != NDK_LISTENER_IDLE) {
		status = STATUS_INVALID_DEVICE_STATE;
		goto out;
	}
	/* Listener endpoint: +1 for the listener (NDKPI Listeners,
	 * Connectors, and Endpoints). */
	status = ndk_local_endpoint_acquire(l->obj.adapter, pAddress,
					    AddressLength,
					    NDK_ENDPOINT_LISTENER, &ep);
	if (status)
		goto out;
	/* The socket goes with the listener; the reservation stays with
	 * the endpoint while accepted connectors live. */
	fd = ndk_endpoint_take_fd(ep);
	if (listen(fd, SOMAXCONN)) {
		/* Another process holds the port (bind allowed it). */
		status = ndk_status_from_errno(-errno, NDK_SITE_BIND);
		close(fd);
		ndk_endpoint_put(ep);
		goto out;
	}
	l->fd = fd;
	l->io.fd = fd;
	l->io.fn = listener_io_fn;
	if (ndk_engine_add_fd(&l->obj.adapter->engine, &l->io, EPOLLIN)) {
		close(fd);
		l->fd = -1;
		ndk_endpoint_put(ep);
		status = STATUS_INSUFFICIENT_RESOURCES;
		goto out;
	}
	l->ep = ep;
	listener_set_state(l, NDK_LISTENER_LISTENING);
	ndk_endpoint_publish(ep, l->obj.adapter->ifindex,
			     l->obj.adapter->netns);
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
	socklen_t len;

	ndk_lock(&l->lock);
	if (!l->ep)
		status = STATUS_INVALID_DEVICE_STATE;
	else
		status = ndk_addr_copy_out(ndk_endpoint_addr(l->ep, &len),
					   pAddress, pAddressLength);
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
 * Engine thread: stop accepting and drop the connections still reading
 * their Request (never handed out, so the provider's to end); no handler
 * runs after del_fd.
 */
static void listener_teardown_fn(struct ndk_work *w)
{
	struct ndk_listener *l =
		container_of(w, struct ndk_listener, teardown_work);

	ndk_lock(&l->lock);
	if (l->fd >= 0) {
		ndk_engine_del_fd(&l->obj.adapter->engine, &l->io);
		close(l->fd);
		l->fd = -1;
	}
	ndk_unlock(&l->lock);
	while (!list_empty(&l->pending))
		pending_free(container_of(l->pending.next,
					  struct ndk_pending_conn, entry));
	ndk_obj_release(&l->obj);
}

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
	bool posted = false;

	ndk_lock(&l->lock);
	listener_set_state(l, NDK_LISTENER_CLOSING);
	if (l->fd >= 0) {
		/* Off the engine, epoll removal must wait for it. */
		ndk_obj_hold(&l->obj);
		posted = true;
	}
	ndk_unlock(&l->lock);
	if (posted &&
	    !ndk_engine_post(&l->obj.adapter->engine, &l->teardown_work))
		ndk_obj_release(&l->obj); /* the engine is gone: see destroy */
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

	if (l->fd >= 0)
		close(l->fd);
	/* Left only if the engine stopped before the teardown ran. */
	while (!list_empty(&l->pending)) {
		struct ndk_pending_conn *p = container_of(
			l->pending.next, struct ndk_pending_conn, entry);

		if (p->fd >= 0)
			close(p->fd);
		list_del(&p->entry);
		free(p);
	}
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
	l->fd = -1;
	l->state = NDK_LISTENER_IDLE;
	ndk_backlog_init(&l->backlog,
			 (unsigned int)ndk_config_u64("NDK_LISTEN_BACKLOG", 128,
						      1, 65535));
	list_init(&l->pending);
	ndk_work_init(&l->teardown_work, listener_teardown_fn);
	ndk_lock_init(&l->lock, NDK_LOCK_LISTENER);
	status = ndk_obj_setup(&l->obj, ad, &listener_ops, &listener_dispatch,
			       antes, 1);
	if (status)
		return status;
	*ppNdkListener = &l->obj.pub.listener;
	return STATUS_SUCCESS;
}
