/* SPDX-License-Identifier: MIT */
/* Shared plumbing of ndkping and ndkperf (see perfutil.h). */
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "perfutil.h"

void perf_die(const char *what, NTSTATUS status)
{
	fprintf(stderr, "%s: %s (0x%08x)\n", what, NdkStatusName(status),
		(unsigned int)status);
	exit(2);
}

void perf_check(const char *what, NTSTATUS status)
{
	if (!NT_SUCCESS(status))
		perf_die(what, status);
}

uint64_t perf_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void perf_wait_init(struct perf_wait *w)
{
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->cond, NULL);
	w->done = false;
	w->status = STATUS_PENDING;
}

VOID perf_wait_done(PVOID ctx, NTSTATUS status)
{
	struct perf_wait *w = ctx;

	pthread_mutex_lock(&w->lock);
	w->status = status;
	w->done = true;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

NTSTATUS perf_wait_result(struct perf_wait *w, NTSTATUS inline_status)
{
	NTSTATUS st;

	if (inline_status != STATUS_PENDING)
		return inline_status;
	pthread_mutex_lock(&w->lock);
	while (!w->done)
		pthread_cond_wait(&w->cond, &w->lock);
	st = w->status;
	pthread_mutex_unlock(&w->lock);
	return st;
}

int perf_parse_addr(const char *text, uint16_t default_port,
		    struct sockaddr_storage *out)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai;
	char host[256], port[8];
	const char *colon = strrchr(text, ':');
	const char *close = strchr(text, ']');
	size_t hlen;

	/* [v6]:port, v4:port, host:port, or a bare address or name. */
	if (text[0] == '[' && close) {
		hlen = (size_t)(close - text - 1);
		memcpy(host, text + 1, MIN(hlen, sizeof(host) - 1));
		host[MIN(hlen, sizeof(host) - 1)] = 0;
		colon = close[1] == ':' ? close + 1 : NULL;
	} else if (colon && strchr(text, ':') == colon) {
		hlen = (size_t)(colon - text);
		memcpy(host, text, MIN(hlen, sizeof(host) - 1));
		host[MIN(hlen, sizeof(host) - 1)] = 0;
	} else {
		snprintf(host, sizeof(host), "%s", text);
		colon = NULL;
	}
	snprintf(port, sizeof(port), "%u",
		 colon ? (unsigned int)atoi(colon + 1) : default_port);
	if (getaddrinfo(host, port, &hints, &ai))
		return -1;
	memset(out, 0, sizeof(*out));
	memcpy(out, ai->ai_addr, ai->ai_addrlen);
	freeaddrinfo(ai);
	return 0;
}

socklen_t perf_addr_len(const struct sockaddr *sa)
{
	return sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
					 : sizeof(struct sockaddr_in);
}

int perf_route_source(const struct sockaddr *dst, struct sockaddr_storage *src)
{
	socklen_t len = sizeof(*src);
	int fd = socket(dst->sa_family, SOCK_DGRAM, 0), ret = -1;

	if (fd < 0)
		return -1;
	/* A UDP connect() only picks the route and the source address. */
	if (!connect(fd, dst, perf_addr_len(dst)) &&
	    !getsockname(fd, (struct sockaddr *)src, &len))
		ret = 0;
	close(fd);
	if (!ret) {
		if (src->ss_family == AF_INET)
			((struct sockaddr_in *)src)->sin_port = 0;
		else
			((struct sockaddr_in6 *)src)->sin6_port = 0;
	}
	return ret;
}

NET_IFINDEX perf_ifindex_of(const struct sockaddr *addr)
{
	struct ifaddrs *ifs, *i;
	NET_IFINDEX idx = 0;

	if (getifaddrs(&ifs))
		return 0;
	for (i = ifs; i && !idx; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != addr->sa_family)
			continue;
		if (addr->sa_family == AF_INET &&
		    ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr ==
			    ((const struct sockaddr_in *)addr)->sin_addr.s_addr)
			idx = if_nametoindex(i->ifa_name);
		else if (addr->sa_family == AF_INET6 &&
			 !memcmp(&((struct sockaddr_in6 *)i->ifa_addr)
					  ->sin6_addr,
				 &((const struct sockaddr_in6 *)addr)
					  ->sin6_addr,
				 sizeof(struct in6_addr)))
			idx = if_nametoindex(i->ifa_name);
	}
	freeifaddrs(ifs);
	return idx;
}

const char *perf_addr_str(const struct sockaddr *sa, char *buf, size_t len)
{
	char ip[INET6_ADDRSTRLEN];

	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const void *)sa;

		inet_ntop(AF_INET6, &s6->sin6_addr, ip, sizeof(ip));
		snprintf(buf, len, "[%s]:%u", ip, ntohs(s6->sin6_port));
	} else {
		const struct sockaddr_in *s4 = (const void *)sa;

		inet_ntop(AF_INET, &s4->sin_addr, ip, sizeof(ip));
		snprintf(buf, len, "%s:%u", ip, ntohs(s4->sin_port));
	}
	return buf;
}

void perf_host_open(struct perf_host *h, NET_IFINDEX ifindex)
{
	NDK_VERSION v = { .Major = 2, .Minor = 1 };
	ULONG size = sizeof(h->info);

	memset(h, 0, sizeof(*h));
	h->ifindex = ifindex;
	perf_check("NdkOpenAdapter", NdkOpenAdapter(v, ifindex, &h->ad));
	perf_check("NdkQueryAdapterInfo", h->ad->Dispatch->NdkQueryAdapterInfo(
						  h->ad, &h->info, &size));
	perf_check("NdkCreatePd",
		   h->ad->Dispatch->NdkCreatePd(h->ad, NULL, NULL, &h->pd));
}

void perf_host_close(struct perf_host *h)
{
	if (h->pd)
		perf_close(&h->pd->Header);
	/* NdkCloseAdapter closes whatever is left, after its callbacks. */
	if (h->ad)
		NdkCloseAdapter(h->ad);
	memset(h, 0, sizeof(*h));
}

/* Every NDK object is a header followed by its dispatch table, and
 * every table starts with the object's close function. */
struct perf_any_object {
	NDK_OBJECT_HEADER Header;
	NDK_FN_CLOSE_OBJECT *const *Dispatch;
};

static VOID perf_close_done(PVOID ctx)
{
	perf_wait_done(ctx, STATUS_SUCCESS);
}

void perf_close(NDK_OBJECT_HEADER *obj)
{
	const struct perf_any_object *any = (const void *)obj;
	struct perf_wait w;
	NTSTATUS st;

	perf_wait_init(&w);
	st = any->Dispatch[0](obj, perf_close_done, &w);
	perf_check("close", perf_wait_result(&w, st));
}

void perf_buf_alloc(struct perf_host *h, struct perf_buf *b, size_t len)
{
	PMDL mdl;

	memset(b, 0, sizeof(*b));
	b->len = len ? len : 1;
	b->p = aligned_alloc(4096, (b->len + 4095) & ~(size_t)4095);
	if (!b->p) {
		fprintf(stderr, "out of memory\n");
		exit(2);
	}
	memset(b->p, 0, b->len);
	perf_check("NdkCreateMr", h->pd->Dispatch->NdkCreateMr(
					  h->pd, FALSE, NULL, NULL, &b->mr));
	mdl = IoAllocateMdl(b->p, (ULONG)b->len, FALSE, FALSE, NULL);
	perf_check("NdkRegisterMr",
		   b->mr->Dispatch->NdkRegisterMr(
			   b->mr, mdl, b->len,
			   NDK_MR_FLAG_ALLOW_LOCAL_WRITE |
				   NDK_MR_FLAG_ALLOW_REMOTE_READ |
				   NDK_MR_FLAG_ALLOW_REMOTE_WRITE,
			   NULL, NULL));
	IoFreeMdl(mdl);
	b->ltok = b->mr->Dispatch->NdkGetLocalTokenFromMr(b->mr);
	b->rtok = b->mr->Dispatch->NdkGetRemoteTokenFromMr(b->mr);
}

void perf_buf_free(struct perf_buf *b)
{
	if (b->mr) {
		b->mr->Dispatch->NdkDeregisterMr(b->mr, NULL, NULL);
		perf_close(&b->mr->Header);
	}
	free(b->p);
	memset(b, 0, sizeof(*b));
}

static VOID perf_cq_notify(PVOID ctx, NTSTATUS status)
{
	struct perf_cq *c = ctx;

	pthread_mutex_lock(&c->lock);
	c->notified = true;
	pthread_cond_signal(&c->cond);
	pthread_mutex_unlock(&c->lock);
}

void perf_cq_create(struct perf_host *h, struct perf_cq *c, ULONG depth,
		    bool events)
{
	memset(c, 0, sizeof(*c));
	c->events = events;
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->cond, NULL);
	perf_check("NdkCreateCq",
		   h->ad->Dispatch->NdkCreateCq(h->ad, depth, perf_cq_notify, c,
						NULL, NULL, NULL, &c->cq));
}

void perf_cq_close(struct perf_cq *c)
{
	if (c->cq)
		perf_close(&c->cq->Header);
	c->cq = NULL;
}

static void perf_result_check(const NDK_RESULT *r)
{
	if (r->Status != STATUS_SUCCESS) {
		fprintf(stderr, "request %p completed with %s\n",
			r->RequestContext, NdkStatusName(r->Status));
		exit(2);
	}
}

ULONG perf_cq_wait(struct perf_cq *c, NDK_RESULT *res, ULONG n,
		   uint64_t deadline_ns)
{
	ULONG got, i;
	unsigned int spins = 0;

	for (;;) {
		got = c->cq->Dispatch->NdkGetCqResults(c->cq, res, n);
		if (got)
			break;
		if (deadline_ns && !(++spins & 1023) &&
		    perf_now_ns() > deadline_ns)
			return 0;
		if (!c->events)
			continue;
		/* Arm, then look again: a result may have come meanwhile. */
		pthread_mutex_lock(&c->lock);
		c->notified = false;
		pthread_mutex_unlock(&c->lock);
		c->cq->Dispatch->NdkArmCq(c->cq, NDK_CQ_NOTIFY_ANY);
		got = c->cq->Dispatch->NdkGetCqResults(c->cq, res, n);
		if (got)
			break;
		pthread_mutex_lock(&c->lock);
		while (!c->notified) {
			if (deadline_ns) {
				struct timespec ts;

				clock_gettime(CLOCK_REALTIME, &ts);
				ts.tv_sec += 1;
				pthread_cond_timedwait(&c->cond, &c->lock, &ts);
				if (perf_now_ns() > deadline_ns)
					break;
			} else {
				pthread_cond_wait(&c->cond, &c->lock);
			}
		}
		pthread_mutex_unlock(&c->lock);
	}
	for (i = 0; i < got; i++)
		perf_result_check(&res[i]);
	return got;
}

void perf_cq_wait_any(struct perf_cq *c)
{
	pthread_mutex_lock(&c->lock);
	c->notified = false;
	pthread_mutex_unlock(&c->lock);
	c->cq->Dispatch->NdkArmCq(c->cq, NDK_CQ_NOTIFY_ANY);
	pthread_mutex_lock(&c->lock);
	while (!c->notified)
		pthread_cond_wait(&c->cond, &c->lock);
	pthread_mutex_unlock(&c->lock);
}

NDK_QP *perf_qp_create(struct perf_host *h, struct perf_cq *c, ULONG depth)
{
	NDK_QP *qp;

	perf_check("NdkCreateQp",
		   h->pd->Dispatch->NdkCreateQp(
			   h->pd, c->cq, c->cq, NULL, depth, depth, 1, 1,
			   h->info.MaxInlineDataSize, NULL, NULL, &qp));
	return qp;
}

static VOID perf_connect_event(PVOID ctx, NDK_CONNECTOR *c)
{
	struct perf_listener *pl = ctx;

	if (pl->direct) {
		pl->direct(pl->direct_arg, c);
		return;
	}
	pthread_mutex_lock(&pl->lock);
	if (pl->tail - pl->head < PERF_BACKLOG) {
		pl->q[pl->tail++ % PERF_BACKLOG] = c;
		pthread_cond_signal(&pl->cond);
		c = NULL;
	}
	pthread_mutex_unlock(&pl->lock);
	if (c) {
		c->Dispatch->NdkReject(c, NULL, 0);
		c->Dispatch->NdkCloseConnector(&c->Header, NULL, NULL);
	}
}

void perf_listen(struct perf_host *h, struct perf_listener *pl,
		 const struct sockaddr *addr)
{
	struct perf_wait w;

	pthread_mutex_init(&pl->lock, NULL);
	pthread_cond_init(&pl->cond, NULL);
	pl->head = pl->tail = 0;
	perf_check("NdkCreateListener",
		   h->ad->Dispatch->NdkCreateListener(h->ad, perf_connect_event,
						      pl, NULL, NULL, &pl->l));
	perf_wait_init(&w);
	perf_check("NdkListen",
		   perf_wait_result(&w, pl->l->Dispatch->NdkListen(
						pl->l, (PSOCKADDR)addr,
						perf_addr_len(addr),
						perf_wait_done, &w)));
}

NDK_CONNECTOR *perf_next_incoming(struct perf_listener *pl)
{
	NDK_CONNECTOR *c;

	pthread_mutex_lock(&pl->lock);
	while (pl->head == pl->tail)
		pthread_cond_wait(&pl->cond, &pl->lock);
	c = pl->q[pl->head++ % PERF_BACKLOG];
	pthread_mutex_unlock(&pl->lock);
	return c;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

double perf_percentile(double *v, size_t n, double p)
{
	size_t i;

	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp_double);
	i = (size_t)((p / 100.0) * (double)(n - 1) + 0.5);
	return v[MIN(i, n - 1)];
}
