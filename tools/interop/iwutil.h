/* SPDX-License-Identifier: MIT */
/*
 * What ndkrping and ndkcmatose share: debug traces,
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
#include "tool_host.h"

extern int iw_debug;

/* printf to stdout with debugging traces on (-vv), flushed. */
void iw_dbg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * One connection: its connector, its QP with a CQ of its own that a thread
 * can wait on, and whether the peer ended it.
 */
struct iw_conn {
	struct tool_host *h;
	NDK_CONNECTOR *c;
	NDK_QP *qp;
	NDK_CQ *cq;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned long gen; /* bumped by the CQ and disconnect callbacks */
	bool disconnected; /* under lock */
	struct tool_wait disc; /* fired by the disconnect event */
};

/* A CQ, a QP on it and a fresh connection state around them. */
void iw_conn_init(struct tool_host *h, struct iw_conn *cn, ULONG rq_depth,
		  ULONG sq_depth);
/* The disconnect event callback; its context is the struct iw_conn. */
VOID iw_on_disconnect(PVOID ctx, ULONG reason);
bool iw_conn_disconnected(struct iw_conn *cn);
/* Disconnects, closes connector, QP and CQ. */
void iw_conn_close(struct iw_conn *cn);

/*
 * The next completion into res: 1, or 0 after ms (0: forever), or -1 once
 * the peer disconnected and the CQ is empty.
 */
int iw_cq_next(struct iw_conn *cn, NDK_RESULT_EX *res, unsigned int ms);

/* Prints IRD/ORD and the peer's private data (hex and text) under -d. */
void iw_print_connection_data(const char *who, NDK_CONNECTOR *c);

/*
 * Sleeps ms before NdkCompleteConnect. Linux siw (6.1) installs its RTR
 * upcall only after sending its MPA Reply; an RTR that lands before that
 * sits unread until the next segment (tests/interop/README.md, bug 1).
 */
void iw_rtr_delay(unsigned int ms);

#endif
