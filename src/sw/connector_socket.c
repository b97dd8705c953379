/* SPDX-License-Identifier: MIT */
/*
 * The connector's socket during the handshake: epoll interest, the MPA
 * frames read and written on the non-blocking socket, and its teardown,
 * which must happen on the engine thread.
 */
#include <errno.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>
#include "sw/connector_int.h"
#include "core/log.h"
#include "front/adapter.h"

/* Sets the epoll interest; c->conn.lock held, any thread. */
int conn_watch(struct sw_connector *c, uint32_t events)
{
	int ret;

	NDK_ASSERT_LOCKED(&c->conn.lock);
	if (c->fd < 0)
		return -EBADF;
	if (!c->io_added) {
		/* Written once, before the engine can see them. */
		ndk_io_init(&c->io, c->fd, conn_io_fn);
		ret = ndk_engine_add_fd(conn_engine(c), &c->io, events);
		if (!ret)
			c->io_added = true;
		return ret;
	}
	return ndk_engine_mod_fd(conn_engine(c), &c->io, events);
}

/*
 * Stops every wake-up for the fd until it is closed. A zero interest mask
 * is not enough: epoll reports EPOLLHUP and EPOLLERR whatever the mask, so
 * a connection the peer reset would wake the engine in a loop for as long
 * as the consumer keeps its connector. Off the engine thread the mask is
 * cleared and the next wake-up (conn_io_fn) deregisters. c->conn.lock held.
 */
void conn_unwatch(struct sw_connector *c)
{
	NDK_ASSERT_LOCKED(&c->conn.lock);
	if (!c->io_added)
		return;
	if (!conn_on_engine(c)) {
		ndk_engine_mod_fd(conn_engine(c), &c->io, 0);
		return;
	}
	ndk_engine_del_fd(conn_engine(c), &c->io);
	c->io_added = false;
}

/*
 * Hands the rest of the teardown to the engine thread and keeps the
 * connector busy until it has run: by then no handler or timer function
 * of this connector is running or can start (the engine runs them one at
 * a time). c->conn.lock held, off the engine thread.
 */
void conn_sync_with_engine(struct sw_connector *c)
{
	/* No more wake-ups until the engine closes the fd. */
	conn_unwatch(c);
	ndk_obj_hold(&c->conn.obj);
	if (!ndk_engine_post(conn_engine(c), &c->teardown_work))
		ndk_obj_release(
			&c->conn.obj); /* already queued, with its hold */
}

/*
 * Ends the TCP connection. Deregistering from epoll must happen on the
 * engine thread (so no handler runs after it), so off the engine the fd is
 * handed over to a work item. c->conn.lock held.
 */
void conn_drop_socket(struct sw_connector *c)
{
	NDK_ASSERT_LOCKED(&c->conn.lock);
	if (c->fd < 0)
		return;
	if (conn_on_engine(c)) {
		if (c->io_added)
			ndk_engine_del_fd(conn_engine(c), &c->io);
		close(c->fd);
		c->fd = -1;
		c->io_added = false;
		return;
	}
	conn_sync_with_engine(c);
}

void conn_drop_work_fn(struct ndk_work *w)
{
	struct sw_connector *c =
		container_of(w, struct sw_connector, teardown_work);

	ndk_lock(&c->conn.lock);
	ndk_timer_cancel(conn_engine(c), &c->timer);
	conn_drop_socket(c);
	ndk_unlock(&c->conn.lock);
	ndk_obj_release(&c->conn.obj);
}

/* Sends what is left of c->tx. 0 when all is out, -EAGAIN if the socket
 * is full (EPOLLOUT then finishes it), or a negative errno. */
int conn_flush_tx(struct sw_connector *c)
{
	while (c->tx_off < c->tx_len) {
		ssize_t n =
			send(c->fd, c->tx + c->tx_off, c->tx_len - c->tx_off,
			     MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN ? -EAGAIN : -errno;
		}
		c->tx_off += (size_t)n;
	}
	c->tx_off = c->tx_len = 0;
	return 0;
}

/* Queues a frame and starts sending it. */
int conn_send(struct sw_connector *c, size_t len)
{
	c->tx_len = len;
	c->tx_off = 0;
	return conn_flush_tx(c);
}

/*
 * What a peek at the socket shows (nothing consumed): 0 nothing yet, 1 a
 * byte is queued, -1 the peer closed or reset the connection.
 */
int conn_peek(struct sw_connector *c)
{
	uint8_t b;
	ssize_t n;

	if (c->fd < 0)
		return -1;
	n = recv(c->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
	if (n > 0)
		return 1;
	return n == 0 || (errno != EAGAIN && errno != EINTR) ? -1 : 0;
}

/* True if the peer has closed or reset the connection. */
bool conn_peer_gone(struct sw_connector *c)
{
	return conn_peek(c) < 0;
}

/*
 * Between the handshake steps the peer must wait for our next one: the
 * initiator sends nothing between its Request and our Reply, the responder
 * nothing between its Reply and our RTR or first FPDU (RFC 5044 7.1,
 * RFC 6581 3; docs/wire.md). A byte, an end of stream or an error there
 * all end the attempt (abandoned, STATUS_CONNECTION_ABORTED), as the
 * engine does when it sees them first (conn_io_fn). True if it ended.
 */
bool conn_abandon_if_peer_acted(struct sw_connector *c)
{
	if (!conn_peek(c))
		return false;
	conn_abandon(c, STATUS_CONNECTION_ABORTED);
	return true;
}
