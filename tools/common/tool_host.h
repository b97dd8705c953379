/* SPDX-License-Identifier: MIT */
/*
 * The NDK objects every tool opens the same way: an adapter with a PD,
 * registered buffers, a listener whose connect events queue up, and
 * closing any object. Public NDKPI only; failures of setup calls print
 * "prog: what: STATUS_NAME (0xCODE)" and exit TOOL_EXIT_FAIL.
 */
#ifndef NDK_TOOLS_TOOL_HOST_H
#define NDK_TOOLS_TOOL_HOST_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>
#include <ndk/ndk.h>
#include "tool_addr.h"
#include "tool_exit.h"
#include "tool_wait.h"

#ifndef MIN
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#endif
#ifndef MAX
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#endif

/* The program name in messages; set by main. */
extern const char *tool_prog;

void tool_die(const char *what, NTSTATUS status) __attribute__((noreturn));
/* Dies unless status is a success code. */
void tool_check(const char *what, NTSTATUS status);

/* An adapter with a PD. */
struct tool_host {
	NDK_ADAPTER *ad;
	NDK_ADAPTER_INFO info;
	NDK_PD *pd;
	NET_IFINDEX ifindex;
	void *priv; /* what the tool keeps per adapter */
};

void tool_host_open(struct tool_host *h, NET_IFINDEX ifindex);
/* The same, returning the failure instead of exiting (h is left closed). */
NTSTATUS tool_host_try_open(struct tool_host *h, NET_IFINDEX ifindex);
/* Closes the PD and the adapter (NdkCloseAdapter closes what is left). */
void tool_host_close(struct tool_host *h);

/* Closes any NDK object and waits for the close callback. */
NTSTATUS tool_close(NDK_OBJECT_HEADER *obj);
#define TOOL_CLOSE(obj) tool_close(&(obj)->Header)

#define TOOL_MR_ALL_ACCESS                                               \
	(NDK_MR_FLAG_ALLOW_LOCAL_WRITE | NDK_MR_FLAG_ALLOW_REMOTE_READ | \
	 NDK_MR_FLAG_ALLOW_REMOTE_WRITE)

/* A registered buffer: page aligned, zeroed. */
struct tool_buf {
	uint8_t *mem;
	size_t len;
	NDK_MR *mr;
	UINT32 ltok; /* NdkGetLocalTokenFromMr */
	UINT32 rtok; /* NdkGetRemoteTokenFromMr: what the peer targets */
};

void tool_buf_alloc(struct tool_host *h, struct tool_buf *b, size_t len,
		    ULONG mr_flags);
void tool_buf_free(struct tool_buf *b);

/*
 * A listener whose ConnectEvent queues the incoming connectors, or hands
 * each to direct (on the provider's thread) when that is set. A full
 * queue rejects.
 */
#define TOOL_BACKLOG 4096
struct tool_listener {
	NDK_LISTENER *lis;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	NDK_CONNECTOR *q[TOOL_BACKLOG];
	unsigned int head, tail;
	void (*direct)(void *arg, NDK_CONNECTOR *c);
	void *direct_arg;
	struct sockaddr_storage addr; /* as bound: the port picked for 0 */
};

/* Listens on addr (port 0 picks one), queueing connect events. */
NTSTATUS tool_listen(NDK_ADAPTER *ad, struct tool_listener *l,
		     const struct sockaddr *addr);
/* Listens on addr, handing each connect event to direct. */
NTSTATUS tool_listen_direct(NDK_ADAPTER *ad, struct tool_listener *l,
			    const struct sockaddr *addr,
			    void (*direct)(void *arg, NDK_CONNECTOR *c),
			    void *arg);
/* The next incoming connector, or NULL after ms (0: forever). */
NDK_CONNECTOR *tool_next_incoming(struct tool_listener *l, unsigned int ms);
void tool_listener_close(struct tool_listener *l);

#endif
