/* SPDX-License-Identifier: MIT */
/*
 * NDK listener (NDK_FN_LISTEN, NDK_FN_CONNECT_EVENT_CALLBACK): a listening
 * TCP socket on an ND endpoint. The listener owns the accept phase: each
 * accepted TCP connection is a pending connection that reads the MPA
 * Request under the CM timeout; only a whole Request becomes a connector
 * (sw_connector_new_passive), which the ConnectEvent hands to the
 * consumer.
 */
#include <assert.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>
#include "sw/connector.h"
#include "sw/listener.h"
#include "sw/mpa_io.h"
#include "sw/sockopt.h"
#include "core/config.h"
#include "core/log.h"
#include "core/status.h"
#include "front/adapter.h"
#include "front/address.h"
#include "front/endpoint.h"
#include "front/listener.h"

/* ------------------------------------------------------------------ */
/* The accept gate                                                    */

static const char *const accept_gate_names[SW_ACCEPT_GATE_COUNT] = {
	[SW_ACCEPT_OPEN] = "OPEN",
	[SW_ACCEPT_BACKLOG_FULL] = "BACKLOG_FULL",
	[SW_ACCEPT_NO_RESOURCES] = "NO_RESOURCES",
};

static const bool accept_gate_ok[SW_ACCEPT_GATE_COUNT]
				[SW_ACCEPT_GATE_COUNT] = {
	[SW_ACCEPT_OPEN] = {
		[SW_ACCEPT_BACKLOG_FULL] = true,
		[SW_ACCEPT_NO_RESOURCES] = true,
	},
	[SW_ACCEPT_BACKLOG_FULL] = {
		[SW_ACCEPT_OPEN] = true,
	},
	[SW_ACCEPT_NO_RESOURCES] = {
		[SW_ACCEPT_OPEN] = true,
		[SW_ACCEPT_BACKLOG_FULL] = true,
	},
};

/* The first retry after EMFILE and friends, and the longest wait. */
#define RETRY_FIRST_MS 10
#define RETRY_MAX_MS   1000

/*
 * The one gate setter; engine thread. Only OPEN watches the listening
 * socket; NO_RESOURCES is entered with its retry timer running, and an
 * episode of it is logged once when it starts and once when it ends.
 */
static void accept_gate_set(struct sw_listener *l, enum sw_accept_gate to)
{
	struct ndk_engine *e = &l->lis.obj.adapter->engine;
	enum sw_accept_gate from = l->gate;

	if (from == to)
		return;
	if (!accept_gate_ok[from][to]) {
		ndk_err("listener %p: illegal accept gate %s -> %s", (void *)l,
			accept_gate_names[from], accept_gate_names[to]);
		assert(!"illegal accept gate transition");
		return;
	}
	ndk_dbg("listener %p: accept %s -> %s", (void *)l,
		accept_gate_names[from], accept_gate_names[to]);
	l->gate = to;
	if (to == SW_ACCEPT_NO_RESOURCES) {
		if (!l->starved_since_ns) {
			l->starved_since_ns = ndk_now_ns();
			l->starved_retries = 0;
			l->retry_ms = RETRY_FIRST_MS;
		}
		l->starved_retries++;
		if (ndk_timer_start(e, &l->retry_timer, l->retry_ms))
			ndk_err("listener %p: no retry timer", (void *)l);
		l->retry_ms = MIN(2 * l->retry_ms, RETRY_MAX_MS);
	}
	if (l->fd >= 0)
		ndk_engine_mod_fd(e, &l->io,
				  to == SW_ACCEPT_OPEN ? EPOLLIN : 0);
}

/* An accept went through: an episode of NO_RESOURCES, if any, is over. */
static void accept_starvation_over(struct sw_listener *l)
{
	if (!l->starved_since_ns)
		return;
	ndk_info("listener %p: accepting again after %llu ms (%u tries)",
		 (void *)l,
		 (unsigned long long)((ndk_now_ns() - l->starved_since_ns) /
				      1000000),
		 l->starved_retries);
	l->starved_since_ns = 0;
}

/* Engine thread: accept (or allocation) failed for want of resources. */
static void accept_starved(struct sw_listener *l, int err)
{
	if (!l->starved_since_ns)
		ndk_warn("listener %p: accept: %s; new connections wait in the "
			 "kernel's queue, retrying from %u ms to %u ms",
			 (void *)l, strerror(err), RETRY_FIRST_MS,
			 RETRY_MAX_MS);
	accept_gate_set(l, SW_ACCEPT_NO_RESOURCES);
}

static void retry_timer_fn(struct ndk_timer *t)
{
	struct sw_listener *l =
		container_of(t, struct sw_listener, retry_timer);

	if (l->gate != SW_ACCEPT_NO_RESOURCES)
		return;
	accept_gate_set(l, list_empty(&l->parked) ? SW_ACCEPT_OPEN
						  : SW_ACCEPT_BACKLOG_FULL);
}

/* ------------------------------------------------------------------ */
/* Pending connections: accepted, reading the MPA Request             */

/*
 * One accepted TCP connection until its Request is in. Engine thread
 * only: created by the listening socket's handler, ended by its own
 * handler or timer, or by the listener's teardown.
 */
enum pending_state {
	PENDING_READING, /* reading the Request, NDK_CM_TIMEOUT_MS */
	PENDING_PARKED, /* Request in, the backlog full: waiting for a slot */
};

struct sw_pending_conn {
	struct list_head entry; /* l->pending or l->parked */
	struct sw_listener *l;
	enum pending_state state;
	int fd;
	struct ndk_io io;
	/* READING: the CM timeout; PARKED: NDK_LISTEN_WAIT_MS, then the
	 * Request is refused as beyond the backlog. */
	struct ndk_timer timer;
	struct sw_mpa_rx rx;
	struct mpa_rr req; /* PARKED: the Request, pd pointing into rx */
};

static struct sw_pending_conn *pending_of_io(struct ndk_io *io)
{
	return container_of(io, struct sw_pending_conn, io);
}

/* Ends a pending connection: no handler or timer of it runs after this. */
static void pending_free(struct sw_pending_conn *p)
{
	struct ndk_engine *e = &p->l->lis.obj.adapter->engine;

	ndk_timer_cancel(e, &p->timer);
	if (p->fd >= 0) {
		ndk_engine_del_fd(e, &p->io);
		close(p->fd);
	}
	list_del(&p->entry);
	free(p);
}

/* How long a Request beyond a full backlog waits for a slot. */
static uint64_t listen_wait_ms(void)
{
	return ndk_config_u64("NDK_LISTEN_WAIT_MS", 2000, 0, 3600000);
}

enum admission {
	ADMIT, /* a slot is taken */
	REFUSE, /* paused or closing: as if nobody listened */
	NO_SLOT, /* the backlog is full, or Requests are already parked */
};

static enum admission listener_admit(struct sw_listener *l, bool queue_first,
				     struct ndk_endpoint **ep)
{
	enum admission a = REFUSE;

	ndk_lock(&l->lis.lock);
	if (ndk_listener_open_locked(&l->lis))
		a = !queue_first && sw_backlog_take(&l->backlog) ? ADMIT
								 : NO_SLOT;
	*ep = l->lis.ep;
	ndk_unlock(&l->lis.lock);
	return a;
}

/*
 * The Request is in: the socket goes to a new connector, and the
 * connector to the consumer's ConnectEvent; without a slot (admitted
 * false) the connector refuses it with an MPA Reply with R=1.
 */
static void pending_hand_over(struct sw_pending_conn *p, bool admitted,
			      struct ndk_endpoint *ep)
{
	struct sw_listener *l = p->l;
	struct sw_passive_request r = {
		.adapter = l->lis.obj.adapter,
		.listener = &l->lis.obj,
		.fd = p->fd,
		.req = &p->req,
		.slot = admitted ? &l->backlog : NULL,
		.ep = ep,
	};
	NDK_CONNECTOR *conn;
	int ret;

	/* The connector registers the fd anew. */
	ndk_engine_del_fd(&l->lis.obj.adapter->engine, &p->io);
	p->fd = -1;
	ret = sw_connector_new_passive(&r, &conn);
	pending_free(p); /* req points into it: only now */
	if (ret)
		return;
	sw_connector_handed_over(conn, ndk_listener_deliver(&l->lis, conn));
}

/* Nothing parked any more: a full backlog no longer stops accepting. */
static void parked_drained(struct sw_listener *l)
{
	if (list_empty(&l->parked) && l->gate == SW_ACCEPT_BACKLOG_FULL)
		accept_gate_set(l, SW_ACCEPT_OPEN);
}

/*
 * The Request waits for a backlog slot: no Reply yet, and the listening
 * socket is not read, so TCP holds the connections behind it. The socket
 * is watched only for the peer leaving (bytes it sends before our Reply
 * stay in the socket for the connector, which refuses them).
 */
static void pending_park(struct sw_pending_conn *p)
{
	struct sw_listener *l = p->l;
	struct ndk_engine *e = &l->lis.obj.adapter->engine;

	p->state = PENDING_PARKED;
	list_del(&p->entry);
	list_add_tail(&p->entry, &l->parked);
	ndk_timer_cancel(e, &p->timer);
	if (ndk_engine_mod_fd(e, &p->io, EPOLLRDHUP) ||
	    ndk_timer_start(e, &p->timer, listen_wait_ms())) {
		pending_hand_over(p, false, NULL);
		return;
	}
	atomic_store(&l->slot_wanted, true);
	if (l->gate == SW_ACCEPT_OPEN)
		accept_gate_set(l, SW_ACCEPT_BACKLOG_FULL);
}

/*
 * Engine thread: slots came back. Parked Requests go out oldest first
 * while slots last (refused if the listener was paused meanwhile).
 */
static void slot_work_fn(struct ndk_work *w)
{
	struct sw_listener *l = container_of(w, struct sw_listener, slot_work);
	struct ndk_endpoint *ep;
	enum admission a;

	while (!list_empty(&l->parked)) {
		struct sw_pending_conn *p = container_of(
			l->parked.next, struct sw_pending_conn, entry);

		a = listener_admit(l, false, &ep);
		if (a == NO_SLOT) {
			/* A slot returned before the flag was set posted
			 * nothing: look once more. */
			atomic_store(&l->slot_wanted, true);
			a = listener_admit(l, false, &ep);
			if (a == NO_SLOT)
				break;
		}
		pending_hand_over(p, a == ADMIT, ep);
	}
	parked_drained(l);
	ndk_obj_put(&l->lis.obj);
}

/* Any thread, after a backlog slot came back (backlog.h). */
static void listener_slot_freed(struct sw_backlog *b)
{
	struct sw_listener *l = container_of(b, struct sw_listener, backlog);

	if (!atomic_exchange(&l->slot_wanted, false))
		return;
	ndk_obj_get(&l->lis.obj);
	if (!ndk_engine_post(&l->lis.obj.adapter->engine, &l->slot_work))
		ndk_obj_put(&l->lis.obj);
}

static void pending_io_fn(struct ndk_io *io, uint32_t events)
{
	struct sw_pending_conn *p = pending_of_io(io);
	struct sw_listener *l = p->l;
	struct ndk_endpoint *ep;
	enum admission a;
	int ret;

	if (p->state == PENDING_PARKED) {
		/* The peer left (or reset) while it waited for a slot. */
		pending_free(p);
		parked_drained(l);
		return;
	}
	ret = sw_mpa_rx_frame(&p->rx, p->fd, MPA_RR_REQUEST, &p->req,
			      "listener", l);
	if (ret < 0) {
		/* Not MPA, too much PD, or gone: drop it, as siw does. */
		pending_free(p);
		return;
	}
	if (ret == 0)
		return;
	/* Behind parked Requests, a new one waits its turn. */
	a = listener_admit(l, !list_empty(&l->parked), &ep);
	if (a == NO_SLOT)
		pending_park(p);
	else
		pending_hand_over(p, a == ADMIT, ep);
}

/*
 * READING: the initiator stayed silent too long (siw drops it too).
 * PARKED: no slot came in time: refused as beyond the backlog.
 */
static void pending_timer_fn(struct ndk_timer *t)
{
	struct sw_pending_conn *p =
		container_of(t, struct sw_pending_conn, timer);
	struct sw_listener *l = p->l;

	if (p->state == PENDING_PARKED) {
		pending_hand_over(p, false, NULL);
		parked_drained(l);
	} else {
		/* Said at info: a peer whose connect hangs sees no reason. */
		ndk_info("listener %p: no whole MPA Request in %llu ms; "
			 "connection closed",
			 (void *)l, (unsigned long long)ndk_cm_timeout_ms());
		pending_free(p);
	}
}

/* A new TCP connection; fd is the pending connection's from here on. */
static int pending_new(struct sw_listener *l, int fd)
{
	struct ndk_engine *e = &l->lis.obj.adapter->engine;
	struct sw_pending_conn *p;

	/* Once its close is requested, the listener takes nothing new. */
	if (!ndk_obj_is_open(&l->lis.obj)) {
		close(fd);
		return -ESHUTDOWN;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		close(fd);
		return -ENOMEM;
	}
	p->l = l;
	p->state = PENDING_READING;
	p->fd = fd;
	ndk_io_init(&p->io, fd, pending_io_fn);
	ndk_timer_init(&p->timer, pending_timer_fn);
	list_add_tail(&p->entry, &l->pending);
	sw_sock_set_conn_options(fd);
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

static bool accept_err_is_starvation(int err)
{
	return err == EMFILE || err == ENFILE || err == ENOBUFS ||
	       err == ENOMEM;
}

static void listener_io_fn(struct ndk_io *io, uint32_t events)
{
	struct sw_listener *l = container_of(io, struct sw_listener, io);
	int fd, ret;

	while (l->gate == SW_ACCEPT_OPEN) {
		fd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (accept_err_is_starvation(errno))
				accept_starved(l, errno);
			else if (errno != EAGAIN)
				ndk_warn("listener %p: accept: %s", (void *)l,
					 strerror(errno));
			return;
		}
		accept_starvation_over(l);
		ret = pending_new(l, fd);
		if (ret == -ENOMEM)
			accept_starved(l, ENOMEM);
	}
}

/* NdkListen's transport part (front/listener.c reserved ep; l->lock
 * held): a listening socket on it, read by the engine. */
NTSTATUS sw_listen(struct ndk_listener *lis, struct ndk_endpoint *ep)
{
	struct sw_listener *l = container_of(lis, struct sw_listener, lis);
	NTSTATUS status;
	int fd;

	/* The socket goes with the listener; the reservation stays with
	 * the endpoint while accepted connectors live. */
	fd = ndk_endpoint_take_fd(ep);
	if (listen(fd, SOMAXCONN)) {
		/* Another process holds the port (bind allowed it). */
		status = ndk_status_from_errno(-errno, NDK_SITE_BIND);
		close(fd);
		return status;
	}
	l->fd = fd;
	ndk_io_init(&l->io, fd, listener_io_fn);
	if (ndk_engine_add_fd(&l->lis.obj.adapter->engine, &l->io, EPOLLIN)) {
		close(fd);
		l->fd = -1;
		return STATUS_INSUFFICIENT_RESOURCES;
	}
	return STATUS_SUCCESS;
}

/*
 * Engine thread: stop accepting and drop the connections still reading
 * their Request (never handed out, so the provider's to end); no handler
 * runs after del_fd.
 */
static void listener_teardown_fn(struct ndk_work *w)
{
	struct sw_listener *l =
		container_of(w, struct sw_listener, teardown_work);

	ndk_lock(&l->lis.lock);
	if (l->fd >= 0) {
		ndk_engine_del_fd(&l->lis.obj.adapter->engine, &l->io);
		close(l->fd);
		l->fd = -1;
	}
	ndk_unlock(&l->lis.lock);
	ndk_timer_cancel(&l->lis.obj.adapter->engine, &l->retry_timer);
	while (!list_empty(&l->pending))
		pending_free(container_of(l->pending.next,
					  struct sw_pending_conn, entry));
	/* Parked Requests are refused: the listener is going away. */
	while (!list_empty(&l->parked))
		pending_hand_over(container_of(l->parked.next,
					       struct sw_pending_conn, entry),
				  false, NULL);
	ndk_obj_release(&l->lis.obj);
}

/* The close began (l->lock held): the engine stops accepting. */
void sw_listener_close(struct ndk_listener *lis)
{
	struct sw_listener *l = container_of(lis, struct sw_listener, lis);

	if (l->fd < 0)
		return;
	/* Off the engine, epoll removal must wait for it. */
	ndk_obj_hold(&l->lis.obj);
	if (!ndk_engine_post(&l->lis.obj.adapter->engine, &l->teardown_work))
		ndk_obj_release(&l->lis.obj); /* the engine is gone: fini */
}

/* No engine left: close and free without touching it. */
static void pending_list_drop(struct list_head *list)
{
	while (!list_empty(list)) {
		struct sw_pending_conn *p =
			container_of(list->next, struct sw_pending_conn, entry);

		if (p->fd >= 0)
			close(p->fd);
		list_del(&p->entry);
		free(p);
	}
}

void sw_listener_fini(struct ndk_listener *lis)
{
	struct sw_listener *l = container_of(lis, struct sw_listener, lis);

	if (l->fd >= 0)
		close(l->fd);
	/* Left only if the engine stopped before the teardown ran. */
	pending_list_drop(&l->pending);
	pending_list_drop(&l->parked);
}

NTSTATUS sw_listener_init(struct ndk_listener *lis)
{
	struct sw_listener *l = container_of(lis, struct sw_listener, lis);

	l->fd = -1;
	/* As many as the kernel queues for a listening socket by default. */
	sw_backlog_init(&l->backlog,
			(unsigned int)ndk_config_u64("NDK_LISTEN_BACKLOG",
						     SOMAXCONN, 1, 65535),
			listener_slot_freed);
	list_init(&l->pending);
	list_init(&l->parked);
	l->gate = SW_ACCEPT_OPEN;
	ndk_timer_init(&l->retry_timer, retry_timer_fn);
	atomic_init(&l->slot_wanted, false);
	ndk_work_init(&l->slot_work, slot_work_fn);
	ndk_work_init(&l->teardown_work, listener_teardown_fn);
	return STATUS_SUCCESS;
}
