/* SPDX-License-Identifier: MIT */
/*
 * A server's listeners (docs/tools.md, Servers): one on a specific
 * address, or, for 0.0.0.0 or ::, one on every address of that family of
 * every interface that is up (each interface's adapter opened once), all
 * on one port. Connect events go to one queue, or to a callback, together
 * with the adapter they came through: a connection's QP, CQ and MRs must
 * be that adapter's.
 */
#ifndef NDK_TOOLS_TOOL_SERVER_H
#define NDK_TOOLS_TOOL_SERVER_H

#include <pthread.h>
#include <ndk/ndk.h>
#include "tool_host.h"

struct tool_server;

/* Called on the provider's thread, like a ConnectEvent handler. */
typedef void tool_server_fn(void *arg, struct tool_host *h, NDK_CONNECTOR *c);

struct tool_server_listener {
	struct tool_server *srv;
	struct tool_host *host;
	struct tool_listener l;
};

struct tool_server_incoming {
	NDK_CONNECTOR *c;
	struct tool_host *h;
};

struct tool_server {
	struct tool_host **hosts;
	unsigned int nhosts;
	struct tool_server_listener **lis;
	unsigned int nlis;
	/* What was asked for, with the port the listeners got. */
	struct sockaddr_storage addr;
	tool_server_fn *direct;
	void *arg;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct tool_server_incoming *q; /* TOOL_BACKLOG of them */
	unsigned int head, tail;
};

/*
 * Listens on addr (port 0 picks one), through ifindex's adapter only when
 * it is not 0. Connect events queue up for tool_server_next, or go to
 * direct when that is set. 0, or -1 after printing why nothing listens.
 */
int tool_server_open(struct tool_server *s, const struct sockaddr *addr,
		     NET_IFINDEX ifindex, tool_server_fn *direct, void *arg);
/* The next incoming connector and its adapter, or NULL after ms (0:
 * forever). */
NDK_CONNECTOR *tool_server_next(struct tool_server *s, unsigned int ms,
				struct tool_host **h);
/* No more connect events; the queued ones are rejected. */
void tool_server_stop(struct tool_server *s);
/* Stops, closes the listeners and then the adapters: every connection
 * accepted through them must be closed first. */
void tool_server_close(struct tool_server *s);
/* "127.0.0.1:7000", or "0.0.0.0:7000 (3 addresses, 2 interfaces)". */
const char *tool_server_str(const struct tool_server *s, char *buf, size_t len);

#endif
