/* SPDX-License-Identifier: MIT */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <sys/socket.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "iwutil.h"

int iw_debug;
const char *iw_prog = "ndk";

void iw_die(const char *what, NTSTATUS status)
{
	fprintf(stderr, "%s: %s: %s\n", iw_prog, what, NdkStatusName(status));
	exit(2);
}

void iw_check(const char *what, NTSTATUS status)
{
	if (!NT_SUCCESS(status))
		iw_die(what, status);
}

void iw_dbg(const char *fmt, ...)
{
	va_list ap;

	if (!iw_debug)
		return;
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fflush(stdout);
}

static struct timespec deadline(unsigned int ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return ts;
}

void iw_wait_init(struct iw_wait *w)
{
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->cond, NULL);
	w->fired = 0;
	w->status = STATUS_PENDING;
}

void iw_wait_fire(struct iw_wait *w, NTSTATUS status)
{
	pthread_mutex_lock(&w->lock);
	w->fired++;
	w->status = status;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

VOID iw_wait_done(PVOID ctx, NTSTATUS status)
{
	iw_wait_fire(ctx, status);
}

NTSTATUS iw_wait_for(struct iw_wait *w, unsigned int ms)
{
	struct timespec ts = deadline(ms);
	NTSTATUS st;

	pthread_mutex_lock(&w->lock);
	while (!w->fired) {
		if (!ms)
			pthread_cond_wait(&w->cond, &w->lock);
		else if (pthread_cond_timedwait(&w->cond, &w->lock, &ts) ==
			 ETIMEDOUT)
			break;
	}
	st = w->fired ? w->status : STATUS_IO_TIMEOUT;
	pthread_mutex_unlock(&w->lock);
	return st;
}

NTSTATUS iw_wait_result(struct iw_wait *w, NTSTATUS inline_status,
			unsigned int ms)
{
	if (inline_status != STATUS_PENDING)
		return inline_status;
	return iw_wait_for(w, ms);
}

int iw_parse_addr(const char *host, uint16_t port, struct sockaddr_storage *out)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM };
	struct addrinfo *res;

	if (getaddrinfo(host, NULL, &hints, &res))
		return -1;
	memset(out, 0, sizeof(*out));
	memcpy(out, res->ai_addr, res->ai_addrlen);
	freeaddrinfo(res);
	if (out->ss_family == AF_INET)
		((struct sockaddr_in *)out)->sin_port = htons(port);
	else if (out->ss_family == AF_INET6)
		((struct sockaddr_in6 *)out)->sin6_port = htons(port);
	else
		return -1;
	return 0;
}

ULONG iw_addr_len(const struct sockaddr *sa)
{
	return sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
					 : sizeof(struct sockaddr_in);
}

int iw_route_source(const struct sockaddr *dst, struct sockaddr_storage *src)
{
	socklen_t len = sizeof(*src);
	int fd = socket(dst->sa_family, SOCK_DGRAM, 0), rc = -1;

	if (fd < 0)
		return -1;
	memset(src, 0, sizeof(*src));
	/* A UDP connect sends nothing; it only picks the route. */
	if (!connect(fd, dst, iw_addr_len(dst)) &&
	    !getsockname(fd, (struct sockaddr *)src, &len))
		rc = 0;
	close(fd);
	if (src->ss_family == AF_INET)
		((struct sockaddr_in *)src)->sin_port = 0;
	else
		((struct sockaddr_in6 *)src)->sin6_port = 0;
	return rc;
}

const char *iw_addr_str(const struct sockaddr *sa, char *buf, size_t len)
{
	char ip[INET6_ADDRSTRLEN] = "?";
	unsigned int port = 0;

	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *s = (const void *)sa;

		inet_ntop(AF_INET, &s->sin_addr, ip, sizeof(ip));
		port = ntohs(s->sin_port);
		snprintf(buf, len, "%s:%u", ip, port);
	} else {
		const struct sockaddr_in6 *s = (const void *)sa;

		inet_ntop(AF_INET6, &s->sin6_addr, ip, sizeof(ip));
		port = ntohs(s->sin6_port);
		snprintf(buf, len, "[%s]:%u", ip, port);
	}
	return buf;
}

/* The interface that owns addr, or 0. */
static NET_IFINDEX ifindex_of(const struct sockaddr *addr)
{
	struct ifaddrs *ifa, *i;
	NET_IFINDEX idx = 0;

	if (getifaddrs(&ifa))
		return 0;
	for (i = ifa; i && !idx; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != addr->sa_family)
			continue;
		if (addr->sa_family == AF_INET) {
			const struct sockaddr_in *a = (const void *)addr;
			const struct sockaddr_in *b = (const void *)i->ifa_addr;

			if (a->sin_addr.s_addr == b->sin_addr.s_addr)
				idx = if_nametoindex(i->ifa_name);
		} else {
			const struct sockaddr_in6 *a = (const void *)addr;
			const struct sockaddr_in6 *b =
				(const void *)i->ifa_addr;

			if (!memcmp(&a->sin6_addr, &b->sin6_addr,
				    sizeof(a->sin6_addr)))
				idx = if_nametoindex(i->ifa_name);
		}
	}
	freeifaddrs(ifa);
	return idx;
}

void iw_host_open(struct iw_host *h, const char *ifname,
		  const struct sockaddr *local)
{
	NDK_VERSION v = { 2, 0 };
	ULONG size = sizeof(h->info);
	NET_IFINDEX idx;
	char buf[64];

	memset(h, 0, sizeof(*h));
	if (ifname)
		idx = if_nametoindex(ifname);
	else
		idx = ifindex_of(local);
	if (!idx) {
		fprintf(stderr, "%s: no interface %s%s (use -i IFNAME)\n",
			iw_prog, ifname ? "named " : "owns ",
			ifname ? ifname : iw_addr_str(local, buf, sizeof(buf)));
		exit(2);
	}
	iw_check("NdkOpenAdapter", NdkOpenAdapter(v, idx, &h->ad));
	iw_check("NdkQueryAdapterInfo",
		 h->ad->Dispatch->NdkQueryAdapterInfo(h->ad, &h->info, &size));
	iw_check("NdkCreatePd",
		 h->ad->Dispatch->NdkCreatePd(h->ad, NULL, NULL, &h->pd));
}

void iw_host_close(struct iw_host *h)
{
	IW_CLOSE(h->pd, NdkClosePd);
	NdkCloseAdapter(h->ad);
}

static VOID on_cq(PVOID ctx, NTSTATUS status)
{
	struct iw_conn *cn = ctx;

	(void)status;
	pthread_mutex_lock(&cn->lock);
	cn->gen++;
	pthread_cond_broadcast(&cn->cond);
	pthread_mutex_unlock(&cn->lock);
}

void iw_conn_init(struct iw_host *h, struct iw_conn *cn, ULONG rq_depth,
		  ULONG sq_depth)
{
	memset(cn, 0, sizeof(*cn));
	cn->h = h;
	pthread_mutex_init(&cn->lock, NULL);
	pthread_cond_init(&cn->cond, NULL);
	iw_wait_init(&cn->disc);
	iw_check("NdkCreateCq",
		 h->ad->Dispatch->NdkCreateCq(h->ad, rq_depth + sq_depth, on_cq,
					      cn, NULL, NULL, NULL, &cn->cq));
	iw_check("NdkCreateQp",
		 h->pd->Dispatch->NdkCreateQp(h->pd, cn->cq, cn->cq, cn,
					      rq_depth, sq_depth, 1, 1, 0, NULL,
					      NULL, &cn->qp));
}

VOID iw_on_disconnect(PVOID ctx, ULONG reason)
{
	struct iw_conn *cn = ctx;

	iw_dbg("disconnect event (ProviderDisconnectReason %u)\n", reason);
	pthread_mutex_lock(&cn->lock);
	cn->disconnected = true;
	cn->gen++;
	pthread_cond_broadcast(&cn->cond);
	pthread_mutex_unlock(&cn->lock);
	iw_wait_fire(&cn->disc, STATUS_SUCCESS);
}

bool iw_conn_disconnected(struct iw_conn *cn)
{
	bool d;

	pthread_mutex_lock(&cn->lock);
	d = cn->disconnected;
	pthread_mutex_unlock(&cn->lock);
	return d;
}

void iw_conn_close(struct iw_conn *cn)
{
	struct iw_wait w;
	NTSTATUS st;

	if (cn->c) {
		iw_wait_init(&w);
		st = cn->c->Dispatch->NdkDisconnect(cn->c, iw_wait_done, &w);
		st = iw_wait_result(&w, st, 30000);
		iw_dbg("NdkDisconnect: %s\n", NdkStatusName(st));
		IW_CLOSE(cn->c, NdkCloseConnector);
		cn->c = NULL;
	}
	if (cn->qp) {
		IW_CLOSE(cn->qp, NdkCloseQp);
		cn->qp = NULL;
	}
	if (cn->cq) {
		IW_CLOSE(cn->cq, NdkCloseCq);
		cn->cq = NULL;
	}
}

int iw_cq_next(struct iw_conn *cn, NDK_RESULT_EX *res, unsigned int ms)
{
	struct timespec ts = deadline(ms);
	NDK_CQ *cq = cn->cq;
	unsigned long gen;
	int rc;

	for (;;) {
		if (cq->Dispatch->NdkGetCqResultsEx(cq, res, 1))
			return 1;
		pthread_mutex_lock(&cn->lock);
		gen = cn->gen;
		pthread_mutex_unlock(&cn->lock);
		/* Arm, then look again: a completion queued before the arm
		 * does not notify (NDK arm semantics). */
		cq->Dispatch->NdkArmCq(cq, NDK_CQ_NOTIFY_ANY);
		if (cq->Dispatch->NdkGetCqResultsEx(cq, res, 1))
			return 1;
		rc = 2;
		pthread_mutex_lock(&cn->lock);
		while (cn->gen == gen && !cn->disconnected) {
			if (!ms) {
				pthread_cond_wait(&cn->cond, &cn->lock);
			} else if (pthread_cond_timedwait(&cn->cond, &cn->lock,
							  &ts) == ETIMEDOUT) {
				rc = 0;
				break;
			}
		}
		if (cn->disconnected)
			rc = -1;
		pthread_mutex_unlock(&cn->lock);
		if (rc != 2) {
			/* Last look: the disconnect may trail completions. */
			if (cq->Dispatch->NdkGetCqResultsEx(cq, res, 1))
				return 1;
			return rc;
		}
	}
}

void iw_buf_init(struct iw_host *h, struct iw_buf *b, ULONG len, ULONG flags)
{
	struct iw_wait w;
	PMDL mdl;
	size_t alloc = ((size_t)len + 4095) & ~(size_t)4095;

	memset(b, 0, sizeof(*b));
	if (!alloc)
		alloc = 4096;
	b->mem = aligned_alloc(4096, alloc);
	if (!b->mem) {
		fprintf(stderr, "%s: out of memory\n", iw_prog);
		exit(2);
	}
	memset(b->mem, 0, alloc);
	b->len = len;
	mdl = IoAllocateMdl(b->mem, len ? len : 1, FALSE, FALSE, NULL);
	if (!mdl) {
		fprintf(stderr, "%s: IoAllocateMdl failed\n", iw_prog);
		exit(2);
	}
	iw_check("NdkCreateMr", h->pd->Dispatch->NdkCreateMr(h->pd, FALSE, NULL,
							     NULL, &b->mr));
	iw_wait_init(&w);
	iw_check("NdkRegisterMr",
		 iw_wait_result(&w,
				b->mr->Dispatch->NdkRegisterMr(
					b->mr, mdl, len ? len : 1, flags,
					iw_wait_done, &w),
				30000));
	IoFreeMdl(mdl);
	b->ltoken = b->mr->Dispatch->NdkGetLocalTokenFromMr(b->mr);
	b->rtoken = b->mr->Dispatch->NdkGetRemoteTokenFromMr(b->mr);
}

void iw_buf_free(struct iw_buf *b)
{
	if (b->mr)
		IW_CLOSE(b->mr, NdkCloseMr);
	free(b->mem);
	memset(b, 0, sizeof(*b));
}

static VOID on_connect_event(PVOID ctx, NDK_CONNECTOR *c)
{
	struct iw_listener *l = ctx;

	pthread_mutex_lock(&l->lock);
	if (l->tail - l->head < IW_MAX_INCOMING)
		l->incoming[l->tail++ % IW_MAX_INCOMING] = c;
	pthread_mutex_unlock(&l->lock);
	iw_wait_fire(&l->ev, STATUS_SUCCESS);
}

void iw_listen(struct iw_host *h, struct iw_listener *l,
	       const struct sockaddr *addr)
{
	ULONG len = sizeof(l->addr);

	memset(l, 0, sizeof(*l));
	pthread_mutex_init(&l->lock, NULL);
	iw_wait_init(&l->ev);
	iw_check("NdkCreateListener",
		 h->ad->Dispatch->NdkCreateListener(h->ad, on_connect_event, l,
						    NULL, NULL, &l->lis));
	iw_check("NdkListen",
		 l->lis->Dispatch->NdkListen(l->lis, (PSOCKADDR)addr,
					     iw_addr_len(addr), NULL, NULL));
	iw_check("NdkGetLocalAddress",
		 l->lis->Dispatch->NdkGetLocalAddress(
			 l->lis, (PSOCKADDR)&l->addr, &len));
}

NDK_CONNECTOR *iw_next_incoming(struct iw_listener *l, unsigned int ms)
{
	NDK_CONNECTOR *c = NULL;
	struct timespec ts = deadline(ms);

	pthread_mutex_lock(&l->ev.lock);
	for (;;) {
		pthread_mutex_lock(&l->lock);
		if (l->head != l->tail)
			c = l->incoming[l->head++ % IW_MAX_INCOMING];
		pthread_mutex_unlock(&l->lock);
		if (c)
			break;
		if (!ms)
			pthread_cond_wait(&l->ev.cond, &l->ev.lock);
		else if (pthread_cond_timedwait(&l->ev.cond, &l->ev.lock,
						&ts) == ETIMEDOUT)
			break;
	}
	pthread_mutex_unlock(&l->ev.lock);
	return c;
}

void iw_listener_close(struct iw_listener *l)
{
	IW_CLOSE(l->lis, NdkCloseListener);
}

void iw_print_connection_data(const char *who, NDK_CONNECTOR *c)
{
	unsigned char pd[256];
	char hex[3 * sizeof(pd) + 1], txt[sizeof(pd) + 1];
	ULONG len = sizeof(pd), ird = 0, ord = 0, i;
	NTSTATUS st;

	st = c->Dispatch->NdkGetConnectionData(c, &ird, &ord, pd, &len);
	if (!NT_SUCCESS(st)) {
		printf("%s: NdkGetConnectionData: %s\n", who,
		       NdkStatusName(st));
		return;
	}
	for (i = 0; i < len && i < sizeof(pd); i++) {
		sprintf(hex + 3 * i, " %02x", pd[i]);
		txt[i] = pd[i] >= 0x20 && pd[i] < 0x7f ? (char)pd[i] : '.';
	}
	hex[3 * i] = 0;
	txt[i] = 0;
	if (len)
		printf("%s: IRD %u ORD %u, peer private data %u bytes:%s \"%s\"\n",
		       who, ird, ord, len, hex, txt);
	else
		printf("%s: IRD %u ORD %u, peer private data 0 bytes\n", who,
		       ird, ord);
	fflush(stdout);
}

void iw_rtr_delay(unsigned int ms)
{
	struct timespec d = { ms / 1000, (long)(ms % 1000) * 1000000L };

	if (!ms)
		return;
	iw_dbg("waiting %u ms before CompleteConnect\n", ms);
	nanosleep(&d, NULL);
}

static VOID on_close(PVOID ctx)
{
	iw_wait_fire(ctx, STATUS_SUCCESS);
}

void iw_close_obj(NDK_OBJECT_HEADER *hdr, NDK_FN_CLOSE_OBJECT *fn)
{
	struct iw_wait w;
	NTSTATUS st;

	iw_wait_init(&w);
	st = fn(hdr, on_close, &w);
	if (st == STATUS_PENDING)
		st = iw_wait_for(&w, 30000);
	if (!NT_SUCCESS(st))
		fprintf(stderr, "%s: close: %s\n", iw_prog, NdkStatusName(st));
}
