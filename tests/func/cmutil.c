/* SPDX-License-Identifier: MIT */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <string.h>
#include <time.h>
#include <stdatomic.h>
#include "cmutil.h"

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

void cm_req_init(struct cm_req *r)
{
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->cond, NULL);
	r->calls = 0;
	r->status = -1;
}

VOID cm_req_done(PVOID ctx, NTSTATUS status)
{
	struct cm_req *r = ctx;

	pthread_mutex_lock(&r->lock);
	r->calls++;
	r->status = status;
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->lock);
}

NTSTATUS cm_req_wait(struct cm_req *r, unsigned int ms)
{
	struct timespec ts = deadline(ms);
	NTSTATUS st;
	int calls;

	pthread_mutex_lock(&r->lock);
	while (!r->calls)
		if (pthread_cond_timedwait(&r->cond, &r->lock, &ts) ==
		    ETIMEDOUT)
			break;
	st = r->calls ? r->status : -1;
	calls = r->calls;
	pthread_mutex_unlock(&r->lock);
	assert_true(calls <= 1);
	return st;
}

NTSTATUS cm_req_result(NTSTATUS inline_status, struct cm_req *r,
		       unsigned int ms)
{
	if (inline_status != STATUS_PENDING)
		return inline_status;
	return cm_req_wait(r, ms);
}

atomic_int cm_cq_notifications;

static VOID on_cq(PVOID ctx, NTSTATUS status)
{
	atomic_fetch_add(&cm_cq_notifications, 1);
}

void cm_host_open(struct cm_host *h, const char *ifname)
{
	NDK_VERSION v = { 2, 0 };
	ULONG size = sizeof(h->info);

	memset(h, 0, sizeof(*h));
	assert_int_equal(NdkOpenAdapter(v, if_nametoindex(ifname), &h->ad),
			 STATUS_SUCCESS);
	assert_int_equal(
		h->ad->Dispatch->NdkQueryAdapterInfo(h->ad, &h->info, &size),
		STATUS_SUCCESS);
	assert_int_equal(
		h->ad->Dispatch->NdkCreatePd(h->ad, NULL, NULL, &h->pd),
		STATUS_SUCCESS);
	assert_int_equal(h->ad->Dispatch->NdkCreateCq(h->ad, 256, on_cq, NULL,
						      NULL, NULL, NULL, &h->cq),
			 STATUS_SUCCESS);
}

void cm_host_close(struct cm_host *h)
{
	/* NdkCloseAdapter closes whatever a test left open. */
	NdkCloseAdapter(h->ad);
	memset(h, 0, sizeof(*h));
}

NDK_QP *cm_qp(struct cm_host *h)
{
	NDK_QP *qp;

	assert_int_equal(h->pd->Dispatch->NdkCreateQp(h->pd, h->cq, h->cq, NULL,
						      16, 16, 1, 1, 0, NULL,
						      NULL, &qp),
			 STATUS_SUCCESS);
	return qp;
}

NDK_CONNECTOR *cm_connector(struct cm_host *h)
{
	NDK_CONNECTOR *c;

	assert_int_equal(
		h->ad->Dispatch->NdkCreateConnector(h->ad, NULL, NULL, &c),
		STATUS_SUCCESS);
	return c;
}

static VOID on_connect_event(PVOID ctx, NDK_CONNECTOR *c)
{
	struct cm_listener *l = ctx;

	pthread_mutex_lock(&l->lock);
	if (l->tail - l->head < CM_MAX_EVENTS)
		l->incoming[l->tail++ % CM_MAX_EVENTS] = c;
	pthread_cond_broadcast(&l->cond);
	pthread_mutex_unlock(&l->lock);
}

NTSTATUS cm_listen(struct cm_host *h, struct cm_listener *l,
		   const struct sockaddr *addr)
{
	ULONG len = sizeof(l->addr);
	ULONG alen = addr->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
						 : sizeof(struct sockaddr_in);
	NTSTATUS st;

	memset(l, 0, sizeof(*l));
	pthread_mutex_init(&l->lock, NULL);
	pthread_cond_init(&l->cond, NULL);
	assert_int_equal(
		h->ad->Dispatch->NdkCreateListener(h->ad, on_connect_event, l,
						   NULL, NULL, &l->listener),
		STATUS_SUCCESS);
	st = l->listener->Dispatch->NdkListen(l->listener, (PSOCKADDR)addr,
					      alen, NULL, NULL);
	if (st == STATUS_SUCCESS)
		assert_int_equal(
			l->listener->Dispatch->NdkGetLocalAddress(
				l->listener, (PSOCKADDR)&l->addr, &len),
			STATUS_SUCCESS);
	return st;
}

void cm_listener_close(struct cm_listener *l)
{
	NTSTATUS st = l->listener->Dispatch->NdkCloseListener(
		&l->listener->Header, NULL, NULL);

	assert_true(st == STATUS_SUCCESS || st == STATUS_PENDING);
}

NDK_CONNECTOR *cm_next_incoming(struct cm_listener *l, unsigned int ms)
{
	struct timespec ts = deadline(ms);
	NDK_CONNECTOR *c = NULL;

	pthread_mutex_lock(&l->lock);
	while (l->head == l->tail)
		if (pthread_cond_timedwait(&l->cond, &l->lock, &ts) ==
		    ETIMEDOUT)
			break;
	if (l->head != l->tail)
		c = l->incoming[l->head++ % CM_MAX_EVENTS];
	pthread_mutex_unlock(&l->lock);
	return c;
}

struct sockaddr_in cm_lo4(uint16_t port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_port = htons(port) };

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return sin;
}

struct sockaddr_in6 cm_lo6(uint16_t port)
{
	struct sockaddr_in6 sin6 = { .sin6_family = AF_INET6,
				     .sin6_port = htons(port) };

	sin6.sin6_addr = in6addr_loopback;
	return sin6;
}

uint16_t cm_port(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)(const void *)sa)
				     ->sin6_port);
	return ntohs(((const struct sockaddr_in *)(const void *)sa)->sin_port);
}

NTSTATUS cm_connect(NDK_CONNECTOR *c, NDK_QP *qp, const struct sockaddr *dst,
		    ULONG ird, ULONG ord, const void *pd, ULONG pdlen,
		    struct cm_req *r)
{
	struct sockaddr_storage src;
	ULONG len;

	memset(&src, 0, sizeof(src));
	if (dst->sa_family == AF_INET6) {
		struct sockaddr_in6 s6 = cm_lo6(0);

		memcpy(&src, &s6, sizeof(s6));
		len = sizeof(s6);
	} else {
		struct sockaddr_in s4 = cm_lo4(0);

		memcpy(&src, &s4, sizeof(s4));
		len = sizeof(s4);
	}
	cm_req_init(r);
	return c->Dispatch->NdkConnect(c, qp, (PSOCKADDR)&src, len,
				       (PSOCKADDR)dst, len, ird, ord, (PVOID)pd,
				       pdlen, cm_req_done, r);
}

void cm_close_connector(NDK_CONNECTOR *c)
{
	NTSTATUS st = c->Dispatch->NdkCloseConnector(&c->Header, NULL, NULL);

	assert_true(st == STATUS_SUCCESS || st == STATUS_PENDING);
}

void cm_close_qp(NDK_QP *qp)
{
	NTSTATUS st = qp->Dispatch->NdkCloseQp(&qp->Header, NULL, NULL);

	assert_true(st == STATUS_SUCCESS || st == STATUS_PENDING);
}
