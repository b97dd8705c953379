/* SPDX-License-Identifier: MIT */
/*
 * NDK listener (ndkpi.md 4.9, 6.3, 9.3): a listening TCP socket on an ND
 * endpoint; every accepted TCP connection becomes a provider-created
 * connector that reads the MPA Request and is then handed to the
 * consumer's ConnectEvent.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>
#include "front/address.h"
#include "cm/connector.h"
#include "cm/connector_int.h" /* until the listener owns the accept phase */
#include "front/endpoint.h"
#include "cm/listener.h"
#include "front/adapter.h"
#include "core/config.h"
#include "core/log.h"
#include "front/provider.h"
#include "core/status.h"

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
		if (ndk_connector_accepted(l, fd))
			ndk_warn("listener %p: dropped a connection",
				 (void *)l);
	}
}

bool ndk_listener_admit(struct ndk_listener *l)
{
	bool ok;

	pthread_mutex_lock(&l->lock);
	ok = l->listening && !l->paused && !l->closing &&
	     l->pending < l->backlog;
	if (ok)
		l->pending++;
	pthread_mutex_unlock(&l->lock);
	return ok;
}

void ndk_listener_request_done(struct ndk_listener *l)
{
	pthread_mutex_lock(&l->lock);
	l->pending--;
	pthread_mutex_unlock(&l->lock);
}

void ndk_listener_track(struct ndk_listener *l, struct list_head *entry)
{
	pthread_mutex_lock(&l->lock);
	list_add_tail(entry, &l->undelivered);
	pthread_mutex_unlock(&l->lock);
}

void ndk_listener_untrack(struct ndk_listener *l, struct list_head *entry)
{
	pthread_mutex_lock(&l->lock);
	list_del(entry);
	pthread_mutex_unlock(&l->lock);
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

	pthread_mutex_lock(&l->lock);
	if (l->ep || l->closing) {
		status = STATUS_INVALID_DEVICE_STATE;
		goto out;
	}
	/* Listener endpoint: +1 for the listener (ndkpi.md 9.3). */
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
	l->listening = true;
	ndk_endpoint_publish(ep, l->obj.adapter->ifindex,
			     l->obj.adapter->netns);
out:
	pthread_mutex_unlock(&l->lock);
	return status;
}

static NTSTATUS listener_get_local_address(NDK_LISTENER *pNdkListener,
					   PSOCKADDR pAddress,
					   ULONG *pAddressLength)
{
	struct ndk_listener *l = to_ndk_listener(pNdkListener);
	NTSTATUS status;
	socklen_t len;

	pthread_mutex_lock(&l->lock);
	if (!l->ep)
		status = STATUS_INVALID_DEVICE_STATE;
	else
		status = ndk_addr_copy_out(ndk_endpoint_addr(l->ep, &len),
					   pAddress, pAddressLength);
	pthread_mutex_unlock(&l->lock);
	return status;
}

static VOID listener_control_connect_events(NDK_LISTENER *pNdkListener,
					    BOOLEAN Pause)
{
	struct ndk_listener *l = to_ndk_listener(pNdkListener);

	/* While paused, requests are refused as if nobody listened. */
	pthread_mutex_lock(&l->lock);
	l->paused = Pause != FALSE;
	pthread_mutex_unlock(&l->lock);
}

static const NDK_LISTENER_DISPATCH listener_dispatch = {
	.NdkCloseListener = ndk_close_object,
	.NdkQueryExtension = ndk_query_extension,
	.NdkListen = listener_listen,
	.NdkGetLocalAddress = listener_get_local_address,
	.NdkControlConnectEvents = listener_control_connect_events,
};

/* Engine thread: stop accepting; no handler runs after del_fd. */
static void listener_teardown_fn(struct ndk_work *w)
{
	struct ndk_listener *l =
		container_of(w, struct ndk_listener, teardown_work);

	pthread_mutex_lock(&l->lock);
	if (l->fd >= 0) {
		ndk_engine_del_fd(&l->obj.adapter->engine, &l->io);
		close(l->fd);
		l->fd = -1;
	}
	pthread_mutex_unlock(&l->lock);
	ndk_obj_release(&l->obj);
}

/*
 * Once its close is requested a listener refuses every new request at
 * once (ndkpi.md 9.3). Its close completes after the connectors created
 * through it are closed; their endpoint references keep the address
 * reserved until then.
 */
static void listener_close_begin(struct ndk_obj *obj)
{
	struct ndk_listener *l = container_of(obj, struct ndk_listener, obj);
	struct ndk_connector *mine[16];
	unsigned int n, i;

	bool posted = false;

	pthread_mutex_lock(&l->lock);
	l->closing = true;
	l->listening = false;
	if (l->fd >= 0) {
		/* Off the engine, epoll removal must wait for it. */
		ndk_obj_hold(&l->obj);
		posted = true;
	}
	pthread_mutex_unlock(&l->lock);
	if (posted &&
	    !ndk_engine_post(&l->obj.adapter->engine, &l->teardown_work))
		ndk_obj_release(&l->obj);

	/* Requests still being read were never handed out: close them. */
	do {
		struct list_head *pos;

		n = 0;
		pthread_mutex_lock(&l->lock);
		list_for_each (pos, &l->undelivered) {
			struct ndk_connector *c = ndk_connector_of_lentry(pos);

			if (n == 16)
				break;
			ndk_obj_get(&c->obj);
			mine[n++] = c;
		}
		pthread_mutex_unlock(&l->lock);
		for (i = 0; i < n; i++) {
			ndk_connector_untrack(mine[i]);
			ndk_obj_close_internal(&mine[i]->obj);
			ndk_obj_put(&mine[i]->obj);
		}
	} while (n);
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
	pthread_mutex_destroy(&l->lock);
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
	l->backlog = (unsigned int)ndk_config_u64("NDK_LISTEN_BACKLOG", 128, 1,
						  65535);
	list_init(&l->undelivered);
	ndk_work_init(&l->teardown_work, listener_teardown_fn);
	pthread_mutex_init(&l->lock, NULL);
	status = ndk_obj_setup(&l->obj, ad, &listener_ops, &listener_dispatch,
			       antes, 1);
	if (status)
		return status;
	*ppNdkListener = &l->obj.pub.listener;
	return STATUS_SUCCESS;
}
