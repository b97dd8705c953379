/* SPDX-License-Identifier: MIT */
/*
 * cm_probe: one MPA v2 handshake against a real iWARP peer (Linux siw in
 * the interop guest), through the public NDKPI only. Not part of
 * the CMake build or CI; build it by hand (see tests/interop/README.md):
 *
 *	cc -Iinclude tests/interop/cm_probe.c -Lbuild -lndk -lpthread
 *
 *	cm_probe [options] listen PORT	  passive: listen on 127.0.0.1:PORT,
 *					  AcceptEx the first request
 *	cm_probe [options] connect PORT	  active: 127.0.0.1:0 -> 127.0.0.1:PORT,
 *					  CompleteConnectEx
 * options:
 *	-r IRD -o ORD	read limits for Connect / AcceptEx (16 / 16)
 *	-p TEXT		private data to send (none)
 *	-w SECONDS	how long to wait for the peer: ConnectEvent, Connect,
 *			Accept completions (60)
 *	-t SECONDS	how long to hold the connection before closing (3)
 *	-x		listen: NdkReject the request (with the -p private
 *			data) instead of accepting it
 *	-d MS		connect: wait MS milliseconds between the Connect
 *			completion and CompleteConnectEx (0: at once)
 *
 * Every line is prefixed with milliseconds since start. Exit status 0 when
 * the handshake completed with STATUS_SUCCESS on our side, 1 otherwise.
 */
#define _POSIX_C_SOURCE 200809L
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <ndk/ndk.h>

static struct timespec t0;

static void say(const char *fmt, ...)
{
	struct timespec now;
	va_list ap;
	long ms;

	clock_gettime(CLOCK_MONOTONIC, &now);
	ms = (now.tv_sec - t0.tv_sec) * 1000 +
	     (now.tv_nsec - t0.tv_nsec) / 1000000;
	printf("[%6ld ms] ", ms);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

#define CHECK(expr)                                                      \
	do {                                                             \
		NTSTATUS st_ = (expr);                                   \
		if (!NT_SUCCESS(st_)) {                                  \
			say("FATAL %s:%d: %s -> %s", __FILE__, __LINE__, \
			    #expr, NdkStatusName(st_));                  \
			exit(2);                                         \
		}                                                        \
	} while (0)

/* A one-shot completion that a callback fills and main waits for. */
struct waiter {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int fired;
	NTSTATUS status;
	void *ptr;
	ULONG reason;
};

static void waiter_init(struct waiter *w)
{
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->cond, NULL);
	w->fired = 0;
	w->status = -1;
	w->ptr = NULL;
}

static void waiter_fire(struct waiter *w)
{
	pthread_mutex_lock(&w->lock);
	w->fired++;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

/* 1 if fired within sec seconds. */
static int waiter_wait(struct waiter *w, unsigned int sec)
{
	struct timespec ts;
	int fired;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += sec;
	pthread_mutex_lock(&w->lock);
	while (!w->fired)
		if (pthread_cond_timedwait(&w->cond, &w->lock, &ts) ==
		    ETIMEDOUT)
			break;
	fired = w->fired;
	pthread_mutex_unlock(&w->lock);
	return fired > 0;
}

static void on_request(PVOID ctx, NTSTATUS status)
{
	struct waiter *w = ctx;

	/* Logged here, not by the waiting thread, so that the order of
	 * completions and events in the output is the provider's. */
	say("RequestCompletion: %s", NdkStatusName(status));
	w->status = status;
	waiter_fire(w);
}

static void on_close(PVOID ctx)
{
	waiter_fire(ctx);
}

static void on_cq(PVOID ctx, NTSTATUS status)
{
	(void)ctx;
	(void)status;
}

static struct waiter incoming;

static void on_connect_event(PVOID ctx, NDK_CONNECTOR *c)
{
	(void)ctx;
	/* Only the first request is ours; later ones stay unanswered. */
	pthread_mutex_lock(&incoming.lock);
	if (!incoming.ptr)
		incoming.ptr = c;
	pthread_mutex_unlock(&incoming.lock);
	say("ConnectEvent: connector %p", (void *)c);
	waiter_fire(&incoming);
}

static struct waiter disc;

static void on_disconnect_ex(PVOID ctx, ULONG reason)
{
	(void)ctx;
	disc.reason = reason;
	say("DisconnectEventEx (ProviderDisconnectReason %u)", reason);
	waiter_fire(&disc);
}

static void print_hex(const char *what, const unsigned char *p, ULONG n)
{
	char line[3 * 256 + 1];
	ULONG i;

	for (i = 0; i < n && i < 256; i++)
		sprintf(line + 3 * i, " %02x", p[i]);
	line[3 * i] = 0;
	say("%s (%u bytes):%s", what, n, n ? line : " -");
}

static void print_connection_data(NDK_CONNECTOR *c)
{
	unsigned char pd[256];
	ULONG len = 0, ird = 0, ord = 0;
	NTSTATUS st;

	st = c->Dispatch->NdkGetConnectionData(c, &ird, &ord, NULL, &len);
	say("GetConnectionData -> %s: IRD %u, ORD %u, RDS (peer private "
	    "data length) %u",
	    NdkStatusName(st), ird, ord, len);
	if (!NT_SUCCESS(st))
		return;
	len = sizeof(pd);
	st = c->Dispatch->NdkGetConnectionData(c, NULL, NULL, pd, &len);
	if (NT_SUCCESS(st))
		print_hex("peer private data", pd, len);
}

static void print_addresses(NDK_CONNECTOR *c)
{
	struct sockaddr_in a, b;
	ULONG la = sizeof(a), lb = sizeof(b);
	char sa[INET_ADDRSTRLEN] = "?", sb[INET_ADDRSTRLEN] = "?";
	NTSTATUS s1, s2;

	s1 = c->Dispatch->NdkGetLocalAddress(c, (PSOCKADDR)&a, &la);
	s2 = c->Dispatch->NdkGetPeerAddress(c, (PSOCKADDR)&b, &lb);
	if (NT_SUCCESS(s1))
		inet_ntop(AF_INET, &a.sin_addr, sa, sizeof(sa));
	if (NT_SUCCESS(s2))
		inet_ntop(AF_INET, &b.sin_addr, sb, sizeof(sb));
	say("local %s:%u, peer %s:%u", sa,
	    NT_SUCCESS(s1) ? ntohs(a.sin_port) : 0, sb,
	    NT_SUCCESS(s2) ? ntohs(b.sin_port) : 0);
}

static void close_obj(NDK_OBJECT_HEADER *hdr, NDK_FN_CLOSE_OBJECT fn,
		      const char *name)
{
	struct waiter w;
	NTSTATUS st;

	waiter_init(&w);
	st = fn(hdr, on_close, &w);
	if (st == STATUS_PENDING && !waiter_wait(&w, 30))
		say("close %s: CloseCompletion not called within 30 s", name);
	else if (st != STATUS_SUCCESS && st != STATUS_PENDING)
		say("close %s -> %s", name, NdkStatusName(st));
}

/* Holds an established connection, reporting a peer disconnect. */
static void hold(unsigned int sec)
{
	say("holding the connection for %u s", sec);
	if (waiter_wait(&disc, sec))
		say("peer disconnected while held");
	else
		say("hold over, no disconnect event");
}

static void usage(void)
{
	fprintf(stderr,
		"usage: cm_probe [-r IRD] [-o ORD] [-p TEXT] [-w SEC] [-t SEC] "
		"[-d MS] [-x] listen|connect PORT\n");
	exit(2);
}

int main(int argc, char **argv)
{
	ULONG ird = 16, ord = 16;
	const char *pdata = NULL;
	unsigned int wait_s = 60, hold_s = 3, delay_ms = 0;
	NDK_VERSION v = { 2, 0 };
	NDK_ADAPTER *ad;
	NDK_PD *pd;
	NDK_CQ *cq;
	NDK_QP *qp;
	NDK_CONNECTOR *c = NULL;
	NDK_LISTENER *lis = NULL;
	struct sockaddr_in addr = { .sin_family = AF_INET };
	struct waiter req;
	ULONG pdlen;
	NTSTATUS st;
	int ok = 0, listen_mode, opt, reject = 0;
	long port;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while ((opt = getopt(argc, argv, "r:o:p:w:t:d:x")) != -1) {
		switch (opt) {
		case 'r':
			ird = (ULONG)strtoul(optarg, NULL, 0);
			break;
		case 'o':
			ord = (ULONG)strtoul(optarg, NULL, 0);
			break;
		case 'p':
			pdata = optarg;
			break;
		case 'w':
			wait_s = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 't':
			hold_s = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'x':
			reject = 1;
			break;
		case 'd':
			delay_ms = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		default:
			usage();
		}
	}
	if (argc - optind != 2)
		usage();
	if (!strcmp(argv[optind], "listen"))
		listen_mode = 1;
	else if (!strcmp(argv[optind], "connect"))
		listen_mode = 0;
	else
		usage();
	port = strtol(argv[optind + 1], NULL, 0);
	if (port <= 0 || port > 65535)
		usage();
	pdlen = pdata ? (ULONG)strlen(pdata) : 0;

	waiter_init(&incoming);
	waiter_init(&disc);
	waiter_init(&req);
	CHECK(NdkOpenAdapter(v, if_nametoindex("lo"), &ad));
	CHECK(ad->Dispatch->NdkCreatePd(ad, NULL, NULL, &pd));
	CHECK(ad->Dispatch->NdkCreateCq(ad, 64, on_cq, NULL, NULL, NULL, NULL,
					&cq));
	CHECK(pd->Dispatch->NdkCreateQp(pd, cq, cq, NULL, 16, 16, 1, 1, 0, NULL,
					NULL, &qp));
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	addr.sin_port = htons((uint16_t)port);

	if (listen_mode) {
		CHECK(ad->Dispatch->NdkCreateListener(ad, on_connect_event,
						      NULL, NULL, NULL, &lis));
		CHECK(lis->Dispatch->NdkListen(lis, (PSOCKADDR)&addr,
					       sizeof(addr), NULL, NULL));
		say("listening on 127.0.0.1:%ld (waiting %u s for a request)",
		    port, wait_s);
		if (!waiter_wait(&incoming, wait_s)) {
			say("RESULT listen: no ConnectEvent within %u s",
			    wait_s);
			goto out;
		}
		c = incoming.ptr;
		print_addresses(c);
		print_connection_data(c);
		if (reject) {
			st = c->Dispatch->NdkReject(c, (PVOID)pdata, pdlen);
			say("NdkReject(%u bytes) -> %s", pdlen,
			    NdkStatusName(st));
			say("RESULT listen: rejected");
			ok = st == STATUS_SUCCESS;
			/* Let the reject reach the peer before closing. */
			hold(1);
			goto out;
		}
		st = c->Dispatch->NdkAcceptEx(c, qp, ird, ord, (PVOID)pdata,
					      pdlen, on_disconnect_ex, NULL,
					      on_request, &req);
		say("NdkAcceptEx(IRD %u, ORD %u, %u bytes) -> %s", ird, ord,
		    pdlen, NdkStatusName(st));
		if (st == STATUS_PENDING) {
			if (!waiter_wait(&req, wait_s)) {
				say("RESULT listen: Accept not completed "
				    "within %u s",
				    wait_s);
				goto out;
			}
			st = req.status;
			say("Accept completed: %s", NdkStatusName(st));
		}
		if (st != STATUS_SUCCESS) {
			say("RESULT listen: accept FAILED %s",
			    NdkStatusName(st));
			goto out;
		}
		print_connection_data(c);
		say("RESULT listen: accept SUCCESS");
		ok = 1;
		hold(hold_s);
	} else {
		struct sockaddr_in src = { .sin_family = AF_INET };

		src.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		CHECK(ad->Dispatch->NdkCreateConnector(ad, NULL, NULL, &c));
		st = c->Dispatch->NdkConnect(
			c, qp, (PSOCKADDR)&src, sizeof(src), (PSOCKADDR)&addr,
			sizeof(addr), ird, ord, (PVOID)pdata, pdlen, on_request,
			&req);
		say("NdkConnect(127.0.0.1:0 -> 127.0.0.1:%ld, IRD %u, ORD %u, "
		    "%u bytes) -> %s",
		    port, ird, ord, pdlen, NdkStatusName(st));
		if (st == STATUS_PENDING) {
			if (!waiter_wait(&req, wait_s)) {
				say("RESULT connect: Connect not completed "
				    "within %u s",
				    wait_s);
				goto out;
			}
			st = req.status;
			say("Connect completed: %s", NdkStatusName(st));
		}
		print_addresses(c);
		print_connection_data(c);
		if (st != STATUS_SUCCESS) {
			say("RESULT connect: connect FAILED %s",
			    NdkStatusName(st));
			goto out;
		}
		if (delay_ms) {
			say("waiting %u ms before CompleteConnectEx", delay_ms);
			struct timespec d = { delay_ms / 1000,
					      (long)(delay_ms % 1000) *
						      1000000L };

			nanosleep(&d, NULL);
		}
		st = c->Dispatch->NdkCompleteConnectEx(c, on_disconnect_ex,
						       NULL, NULL, NULL);
		say("NdkCompleteConnectEx -> %s", NdkStatusName(st));
		if (st != STATUS_SUCCESS) {
			say("RESULT connect: complete connect FAILED %s",
			    NdkStatusName(st));
			goto out;
		}
		say("RESULT connect: SUCCESS");
		ok = 1;
		hold(hold_s);
	}
out:
	if (c)
		close_obj(&c->Header, c->Dispatch->NdkCloseConnector,
			  "connector");
	if (lis)
		close_obj(&lis->Header, lis->Dispatch->NdkCloseListener,
			  "listener");
	close_obj(&qp->Header, qp->Dispatch->NdkCloseQp, "QP");
	close_obj(&cq->Header, cq->Dispatch->NdkCloseCq, "CQ");
	close_obj(&pd->Header, pd->Dispatch->NdkClosePd, "PD");
	NdkCloseAdapter(ad);
	say("closed");
	return ok ? 0 : 1;
}
