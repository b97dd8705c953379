/* SPDX-License-Identifier: MIT */
/*
 * What ndkping and ndkperf share: opening the adapter that owns an
 * address, waiting for NDK completions, registered buffers, and the
 * client/server handshake. Public NDKPI only.
 */
#ifndef NDK_TOOLS_PERFUTIL_H
#define NDK_TOOLS_PERFUTIL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <netinet/in.h>
#include <ndk/ndk.h>

#define PERF_DEFAULT_PORT 7471

#ifndef MIN
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#endif
#ifndef MAX
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#endif

/* Prints "what: STATUS_NAME" and exits 2. */
void perf_die(const char *what, NTSTATUS status);
/* Exits 2 unless status is a success code. */
void perf_check(const char *what, NTSTATUS status);

uint64_t perf_now_ns(void);

/* A request completion that a thread can wait for. */
struct perf_wait {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;
	NTSTATUS status;
};

void perf_wait_init(struct perf_wait *w);
NDK_FN_REQUEST_COMPLETION perf_wait_done;
/* The inline status, or the completion's when it is STATUS_PENDING. */
NTSTATUS perf_wait_result(struct perf_wait *w, NTSTATUS inline_status);

/* Parses "HOST" or "HOST:PORT" (IPv4 or IPv6 literal, or a name). */
int perf_parse_addr(const char *text, uint16_t default_port,
		    struct sockaddr_storage *out);
/* The local address the kernel would use to reach dst (port 0). */
int perf_route_source(const struct sockaddr *dst, struct sockaddr_storage *src);
/* The interface that owns addr, or 0. */
NET_IFINDEX perf_ifindex_of(const struct sockaddr *addr);
const char *perf_addr_str(const struct sockaddr *sa, char *buf, size_t len);
socklen_t perf_addr_len(const struct sockaddr *sa);

/* An adapter with a PD. */
struct perf_host {
	NDK_ADAPTER *ad;
	NDK_ADAPTER_INFO info;
	NDK_PD *pd;
	NET_IFINDEX ifindex;
};

void perf_host_open(struct perf_host *h, NET_IFINDEX ifindex);
void perf_host_close(struct perf_host *h);

/* A registered buffer, page aligned, zeroed. */
struct perf_buf {
	NDK_MR *mr;
	uint8_t *p;
	size_t len;
	UINT32 ltok, rtok;
};

void perf_buf_alloc(struct perf_host *h, struct perf_buf *b, size_t len);
void perf_buf_free(struct perf_buf *b);

/*
 * A CQ polled by its owner, or (event mode) armed and waited on: the
 * notification callback signals a condition variable.
 */
struct perf_cq {
	NDK_CQ *cq;
	bool events;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool notified;
};

void perf_cq_create(struct perf_host *h, struct perf_cq *c, ULONG depth,
		    bool events);
void perf_cq_close(struct perf_cq *c);
/*
 * Waits for at least one result and returns how many (up to n), or 0 if
 * deadline_ns passed (0 = no deadline). Results with an error status are
 * fatal: a benchmark must not measure failures.
 */
ULONG perf_cq_wait(struct perf_cq *c, NDK_RESULT *res, ULONG n,
		   uint64_t deadline_ns);

/* Arms the CQ and sleeps until it notifies. Arming with results queued
 * since the last notification fires at once (NDK arm rules), so nothing
 * is missed. */
void perf_cq_wait_any(struct perf_cq *c);

NDK_QP *perf_qp_create(struct perf_host *h, struct perf_cq *c, ULONG depth);
void perf_close(NDK_OBJECT_HEADER *obj);

/* Listener whose ConnectEvent queues the incoming connectors. */
#define PERF_BACKLOG 4096
struct perf_listener {
	NDK_LISTENER *l;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	NDK_CONNECTOR *q[PERF_BACKLOG];
	unsigned int head, tail;
	/* When set, runs on the engine thread instead of queueing. */
	void (*direct)(void *arg, NDK_CONNECTOR *c);
	void *direct_arg;
};

void perf_listen(struct perf_host *h, struct perf_listener *pl,
		 const struct sockaddr *addr);
/* The next incoming connector (blocks). */
NDK_CONNECTOR *perf_next_incoming(struct perf_listener *pl);

/* Percentile p (0-100) of n samples, sorting them. */
double perf_percentile(double *v, size_t n, double p);

#endif
