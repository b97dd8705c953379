/* SPDX-License-Identifier: MIT */
/*
 * oid_holder: holds NDK objects on loopback for the ndkstat tests. On lo
 * it listens on 127.0.0.1:0, creates a shared endpoint on 127.0.0.1:0 and
 * connects a connector to its own listener (both ends of the connection
 * live here). Then it prints one line
 *
 *   pid PID listener LPORT shared SPORT active APORT
 *
 * and waits until its standard input is closed (or it is killed). Public
 * API only.
 */
#include <arpa/inet.h>
#include <net/if.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <ndk/ndk.h>

#define CHECK(expr)                                                    \
	do {                                                           \
		NTSTATUS st_ = (expr);                                 \
		if (!NT_SUCCESS(st_)) {                                \
			fprintf(stderr, "oid_holder: %s: %s\n", #expr, \
				NdkStatusName(st_));                   \
			exit(1);                                       \
		}                                                      \
	} while (0)

/* A request completion or connect event that main waits for. */
struct waiter {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int fired;
	NTSTATUS status;
	NDK_CONNECTOR *connector;
};

static void waiter_init(struct waiter *w)
{
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->cond, NULL);
	w->fired = 0;
	w->status = STATUS_PENDING;
	w->connector = NULL;
}

static void waiter_fire(struct waiter *w, NTSTATUS status, NDK_CONNECTOR *c)
{
	pthread_mutex_lock(&w->lock);
	w->fired = 1;
	w->status = status;
	w->connector = c;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

static NTSTATUS waiter_wait(struct waiter *w)
{
	NTSTATUS st;

	pthread_mutex_lock(&w->lock);
	while (!w->fired)
		pthread_cond_wait(&w->cond, &w->lock);
	st = w->status;
	pthread_mutex_unlock(&w->lock);
	return st;
}

/* A call that either pends (w fires later) or completes inline. */
static void started(NTSTATUS st, struct waiter *w)
{
	if (st == STATUS_PENDING)
		return;
	CHECK(st);
	waiter_fire(w, st, NULL);
}

static void on_request(PVOID ctx, NTSTATUS status)
{
	waiter_fire(ctx, status, NULL);
}

static void on_connect_event(PVOID ctx, NDK_CONNECTOR *c)
{
	waiter_fire(ctx, STATUS_SUCCESS, c);
}

static void on_cq(PVOID ctx, NTSTATUS status)
{
}

/* A close that may pend: NdkCloseAdapter waits for it. */
static void close_object(NDK_OBJECT_HEADER *hdr, NDK_FN_CLOSE_OBJECT fn)
{
	NTSTATUS st = fn(hdr, NULL, NULL);

	if (st != STATUS_PENDING)
		CHECK(st);
}

static unsigned int port_of(const struct sockaddr_in *sin)
{
	return ntohs(sin->sin_port);
}

int main(void)
{
	NDK_VERSION v = { 2, 0 };
	struct sockaddr_in any = { .sin_family = AF_INET };
	struct sockaddr_in laddr, saddr, aaddr;
	ULONG len;
	NDK_ADAPTER *ad;
	NDK_PD *pd;
	NDK_CQ *cq;
	NDK_QP *aqp, *pqp;
	NDK_LISTENER *lis;
	NDK_SHARED_ENDPOINT *sep;
	NDK_CONNECTOR *active, *passive;
	struct waiter incoming, conn, acc;
	char buf[256];

	waiter_init(&incoming);
	waiter_init(&conn);
	waiter_init(&acc);
	any.sin_addr.s_addr = htonl(INADDR_LOOPBACK);

	CHECK(NdkOpenAdapter(v, if_nametoindex("lo"), &ad));
	CHECK(ad->Dispatch->NdkCreatePd(ad, NULL, NULL, &pd));
	CHECK(ad->Dispatch->NdkCreateCq(ad, 64, on_cq, NULL, NULL, NULL, NULL,
					&cq));
	CHECK(pd->Dispatch->NdkCreateQp(pd, cq, cq, NULL, 4, 4, 1, 1, 0, NULL,
					NULL, &aqp));
	CHECK(pd->Dispatch->NdkCreateQp(pd, cq, cq, NULL, 4, 4, 1, 1, 0, NULL,
					NULL, &pqp));

	CHECK(ad->Dispatch->NdkCreateListener(ad, on_connect_event, &incoming,
					      NULL, NULL, &lis));
	laddr = any;
	CHECK(lis->Dispatch->NdkListen(lis, (PSOCKADDR)&laddr, sizeof(laddr),
				       NULL, NULL));
	len = sizeof(laddr);
	CHECK(lis->Dispatch->NdkGetLocalAddress(lis, (PSOCKADDR)&laddr, &len));

	saddr = any;
	CHECK(ad->Dispatch->NdkCreateSharedEndpoint(
		ad, (PSOCKADDR)&saddr, sizeof(saddr), NULL, NULL, &sep));
	len = sizeof(saddr);
	CHECK(sep->Dispatch->NdkGetLocalAddress(sep, (PSOCKADDR)&saddr, &len));

	/* Connect, accept, complete: the NDK three steps. */
	CHECK(ad->Dispatch->NdkCreateConnector(ad, NULL, NULL, &active));
	aaddr = any;
	started(active->Dispatch->NdkConnect(active, aqp, (PSOCKADDR)&aaddr,
					     sizeof(aaddr), (PSOCKADDR)&laddr,
					     sizeof(laddr), 1, 1, NULL, 0,
					     on_request, &conn),
		&conn);
	CHECK(waiter_wait(&incoming));
	passive = incoming.connector;
	started(passive->Dispatch->NdkAccept(passive, pqp, 1, 1, NULL, 0, NULL,
					     NULL, on_request, &acc),
		&acc);
	CHECK(waiter_wait(&conn));
	CHECK(active->Dispatch->NdkCompleteConnect(active, NULL, NULL, NULL,
						   NULL));
	CHECK(waiter_wait(&acc));
	len = sizeof(aaddr);
	CHECK(active->Dispatch->NdkGetLocalAddress(active, (PSOCKADDR)&aaddr,
						   &len));

	printf("pid %d listener %u shared %u active %u\n", (int)getpid(),
	       port_of(&laddr), port_of(&saddr), port_of(&aaddr));
	fflush(stdout);

	while (read(STDIN_FILENO, buf, sizeof(buf)) > 0)
		;

	close_object(&active->Header, active->Dispatch->NdkCloseConnector);
	close_object(&passive->Header, passive->Dispatch->NdkCloseConnector);
	close_object(&lis->Header, lis->Dispatch->NdkCloseListener);
	close_object(&sep->Header, sep->Dispatch->NdkCloseSharedEndpoint);
	close_object(&aqp->Header, aqp->Dispatch->NdkCloseQp);
	close_object(&pqp->Header, pqp->Dispatch->NdkCloseQp);
	close_object(&cq->Header, cq->Dispatch->NdkCloseCq);
	close_object(&pd->Header, pd->Dispatch->NdkClosePd);
	/* Waits for the closes that pended. */
	NdkCloseAdapter(ad);
	return 0;
}
