/* SPDX-License-Identifier: MIT */
/*
 * What ndkrping and ndkcmatose share: the adapter that owns an address,
 * waitable request completions and connect events, a CQ that a thread can
 * block on, registered buffers, and one connection's setup and teardown.
 * Public NDKPI only (<ndk/ndk.h>).
 */
#ifndef NDK_TOOLS_IWUTIL_H
#define NDK_TOOLS_IWUTIL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <netinet/in.h>
#include <ndk/ndk.h>

extern int iw_debug;
extern const char *iw_prog;

/* "prog: what: STATUS_NAME" on stderr, then exit(2). */
void iw_die(const char *what, NTSTATUS status);
void iw_check(const char *what, NTSTATUS status);
/* printf to stdout when -d was given, flushed. */
void iw_dbg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A one-shot request completion, or any event a thread waits for. */
struct iw_wait {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int fired;
	NTSTATUS status;
};

void iw_wait_init(struct iw_wait *w);
void iw_wait_fire(struct iw_wait *w, NTSTATUS status);
NDK_FN_REQUEST_COMPLETION iw_wait_done;
/* The completion's status, or STATUS_IO_TIMEOUT after ms (0: forever). */
NTSTATUS iw_wait_for(struct iw_wait *w, unsigned int ms);
/* The inline status, or the completion's when it is STATUS_PENDING. */
NTSTATUS iw_wait_result(struct iw_wait *w, NTSTATUS inline_status,
			unsigned int ms);

/* "a.b.c.d" or a name, and a port, into an IPv4 or IPv6 sockaddr. */
int iw_parse_addr(const char *host, uint16_t port,
		  struct sockaddr_storage *out);
ULONG iw_addr_len(const struct sockaddr *sa);
/* The local address the kernel routes to dst from, with port 0. */
int iw_route_source(const struct sockaddr *dst, struct sockaddr_storage *src);
const char *iw_addr_str(const struct sockaddr *sa, char *buf, size_t len);

/* An adapter with a PD. */
struct iw_host {
	NDK_ADAPTER *ad;
	NDK_ADAPTER_INFO info;
	NDK_PD *pd;
};

/*
 * One connection: its connector, its QP with a CQ of its own that a thread
 * can wait on, and whether the peer ended it.
 */
struct iw_conn {
	struct iw_host *h;
	NDK_CONNECTOR *c;
	NDK_QP *qp;
	NDK_CQ *cq;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned long gen; /* bumped by the CQ and disconnect callbacks */
	bool disconnected; /* under lock */
	struct iw_wait disc; /* fired by the disconnect event */
};

/*
 * Opens the adapter of the interface that owns local (the wildcard or a
 * loopback address: "lo"), or of ifname when given.
 */
void iw_host_open(struct iw_host *h, const char *ifname,
		  const struct sockaddr *local);
void iw_host_close(struct iw_host *h);

/* A CQ, a QP on it and a fresh connection state around them. */
void iw_conn_init(struct iw_host *h, struct iw_conn *cn, ULONG rq_depth,
		  ULONG sq_depth);
/* The disconnect event callback; its context is the struct iw_conn. */
NDK_FN_DISCONNECT_EVENT_CALLBACK_EX iw_on_disconnect;
bool iw_conn_disconnected(struct iw_conn *cn);
/* Disconnects, closes connector, QP and CQ. */
void iw_conn_close(struct iw_conn *cn);

/*
 * The next completion into res: 1, or 0 after ms (0: forever), or -1 once
 * the peer disconnected and the CQ is empty.
 */
int iw_cq_next(struct iw_conn *cn, NDK_RESULT_EX *res, unsigned int ms);

/* A registered buffer. */
struct iw_buf {
	void *mem;
	ULONG len;
	NDK_MR *mr;
	UINT32 ltoken; /* NdkGetLocalTokenFromMr */
	UINT32 rtoken; /* NdkGetRemoteTokenFromMr: what the peer targets */
};

/* Allocates (zeroed, page aligned) and registers len bytes. */
void iw_buf_init(struct iw_host *h, struct iw_buf *b, ULONG len, ULONG flags);
void iw_buf_free(struct iw_buf *b);

/* Connect events of one listener, queued. */
#define IW_MAX_INCOMING 64
struct iw_listener {
	NDK_LISTENER *lis;
	struct iw_wait ev;
	pthread_mutex_t lock;
	NDK_CONNECTOR *incoming[IW_MAX_INCOMING];
	unsigned int head, tail;
	struct sockaddr_storage addr; /* as bound: the port picked for 0 */
};

/* Listens on addr; exits on failure. */
void iw_listen(struct iw_host *h, struct iw_listener *l,
	       const struct sockaddr *addr);
/* The next incoming connector, or NULL after ms (0: forever). */
NDK_CONNECTOR *iw_next_incoming(struct iw_listener *l, unsigned int ms);
void iw_listener_close(struct iw_listener *l);

/* Prints IRD/ORD and the peer's private data (hex and text) under -d. */
void iw_print_connection_data(const char *who, NDK_CONNECTOR *c);

/*
 * Sleeps ms before NdkCompleteConnect. Linux siw (6.1) installs its RTR
 * upcall only after sending its MPA Reply; an RTR that lands before that
 * sits unread until the next segment (tests/interop/README.md, bug 1).
 */
void iw_rtr_delay(unsigned int ms);

void iw_close_obj(NDK_OBJECT_HEADER *hdr, NDK_FN_CLOSE_OBJECT *fn);
#define IW_CLOSE(obj, fn) iw_close_obj(&(obj)->Header, (obj)->Dispatch->fn)

#endif
