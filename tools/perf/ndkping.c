/* SPDX-License-Identifier: MIT */
/*
 * ndkping: is NDK working between here and there? The client connects
 * with private data, prints what the handshake negotiated (read limits,
 * the server's private data, setup time), then times Send/Receive round
 * trips like ping(8).
 *
 *   server: ndkping -s [-b ADDR] [-p PORT]
 *   client: ndkping [-c COUNT] [-i MS] [-S SIZE] [-V] HOST[:PORT]
 *
 * The echo lands in a buffer of its own; with -V the client sends a
 * pattern of each sequence number and checks that the echo brings it back
 * byte for byte.
 */
#include <getopt.h>
#include <math.h>
#include <net/if.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "perfutil.h"

#define PING_PORT     18516
#define PING_IRD      16
#define PING_ORD      16
#define PING_MAX_SIZE 65536

static struct tool_host host;
static volatile sig_atomic_t stop;

static void on_sigint(int sig)
{
	stop = 1;
}

static void print_limits(NDK_CONNECTOR *c, const char *who)
{
	ULONG ird = 0, ord = 0, len = 0;
	char pd[256];

	len = sizeof(pd);
	if (c->Dispatch->NdkGetConnectionData(c, &ird, &ord, pd, &len))
		return;
	printf("%s: peer read limits IRD %u ORD %u; private data %u bytes", who,
	       ird, ord, len);
	if (len) {
		ULONG i;

		printf(" \"");
		for (i = 0; i < len && i < 64; i++)
			putchar(pd[i] >= 32 && pd[i] < 127 ? pd[i] : '.');
		printf("\"");
	}
	printf("\n");
}

/* The peer left (or the connection broke): waits on its CQ end. */
static VOID client_gone(PVOID ctx)
{
	perf_cq_abandon(ctx);
}

/* Server: echo every message of every client, one client at a time. */
static int server(const struct sockaddr *addr)
{
	static const char hello[] = "ndkping server";
	static struct tool_listener pl;
	char text[64];
	NET_IFINDEX idx = tool_ifindex_of(addr);

	if (!idx) {
		fprintf(stderr, "no interface has address %s\n",
			tool_addr_str(addr, text, sizeof(text)));
		return 2;
	}
	tool_host_open(&host, idx);
	tool_check("NdkListen", tool_listen(host.ad, &pl, addr));
	printf("ndkping: listening on %s\n",
	       tool_addr_str(addr, text, sizeof(text)));
	fflush(stdout);
	for (;;) {
		NDK_CONNECTOR *c = tool_next_incoming(&pl, 0);
		struct perf_cq cq;
		struct tool_buf buf;
		struct tool_wait w;
		struct sockaddr_storage peer;
		ULONG plen = sizeof(peer);
		NDK_RESULT res;
		NDK_SGE sge, out;
		NDK_QP *qp;
		NTSTATUS st;

		perf_cq_create(&host, &cq, 64, true);
		qp = perf_qp_create(&host, &cq, 16);
		/* Receives land in the first half, echoes leave from the
		 * second. */
		tool_buf_alloc(&host, &buf, 2 * PING_MAX_SIZE,
			       TOOL_MR_ALL_ACCESS);
		sge = (NDK_SGE){ .VirtualAddress = buf.mem,
				 .Length = PING_MAX_SIZE,
				 .MemoryRegionToken = buf.ltok };
		out = sge;
		out.VirtualAddress = buf.mem + PING_MAX_SIZE;
		qp->Dispatch->NdkReceive(qp, NULL, &sge, 1);
		c->Dispatch->NdkGetPeerAddress(c, (PSOCKADDR)&peer, &plen);
		printf("connection from %s\n",
		       tool_addr_str((struct sockaddr *)&peer, text,
				     sizeof(text)));
		print_limits(c, "  client");
		fflush(stdout);
		tool_wait_init(&w);
		st = tool_wait_result(
			&w,
			c->Dispatch->NdkAccept(c, qp, PING_IRD, PING_ORD,
					       (PVOID)hello, sizeof(hello) - 1,
					       client_gone, &cq, tool_wait_done,
					       &w),
			0);
		/*
		 * Echo until the client goes: its disconnect event abandons
		 * the CQ (NDK does not flush our receive on a peer's
		 * disconnect, so nothing else would end the wait).
		 */
		while (st == STATUS_SUCCESS) {
			if (cq.cq->Dispatch->NdkGetCqResults(cq.cq, &res, 1) !=
			    1) {
				if (atomic_load(&cq.abandoned))
					break;
				perf_cq_wait_any(&cq);
				continue;
			}
			if (res.Status != STATUS_SUCCESS)
				break;
			if (res.RequestContext)
				continue; /* our echo's completion */
			/*
			 * The next receive is posted before the echo goes
			 * out: the client's next message may follow the echo
			 * at once, and an iWARP Send that finds no receive
			 * ends the connection. The echo's buffer is free
			 * again by then, since the client has all of it.
			 */
			out.Length = res.BytesTransferred;
			memcpy(out.VirtualAddress, buf.mem, out.Length);
			qp->Dispatch->NdkReceive(qp, NULL, &sge, 1);
			qp->Dispatch->NdkSend(qp, (PVOID)1, &out,
					      out.Length ? 1 : 0, 0);
		}
		tool_wait_init(&w);
		tool_wait_result(
			&w, c->Dispatch->NdkDisconnect(c, tool_wait_done, &w),
			0);
		TOOL_CLOSE(c);
		TOOL_CLOSE(qp);
		tool_buf_free(&buf);
		perf_cq_close(&cq);
		printf("connection closed (%s)\n", NdkStatusName(st));
		fflush(stdout);
	}
	return 0;
}

static int client(const struct sockaddr *dst, unsigned int count,
		  unsigned int interval_ms, size_t size, bool verify)
{
	char text[64], ltext[64], pd[64];
	struct sockaddr_storage src, local;
	ULONG llen = sizeof(local);
	struct perf_cq cq;
	struct tool_buf buf;
	struct tool_wait w;
	NDK_CONNECTOR *c;
	NDK_QP *qp;
	NDK_SGE sge, echo;
	NDK_RESULT res;
	NET_IFINDEX idx;
	char ifname[IF_NAMESIZE] = "?";
	unsigned int seq, sent = 0, received = 0, bad = 0;
	size_t half = MAX(size, 1);
	char what[64];
	double min = 1e30, max = 0, sum = 0, sum2 = 0;
	uint64_t t0, setup;
	NTSTATUS st;
	int plen;

	if (tool_route_source(dst, &src) ||
	    !(idx = tool_ifindex_of((struct sockaddr *)&src))) {
		fprintf(stderr, "ndkping: no route to %s\n",
			tool_addr_str(dst, text, sizeof(text)));
		return 2;
	}
	if_indextoname(idx, ifname);
	tool_host_open(&host, idx);
	perf_cq_create(&host, &cq, 64, true);
	qp = perf_qp_create(&host, &cq, 16);
	/* The first half goes out, the echo lands in the second. */
	tool_buf_alloc(&host, &buf, 2 * half, TOOL_MR_ALL_ACCESS);
	tool_check("NdkCreateConnector", host.ad->Dispatch->NdkCreateConnector(
						 host.ad, NULL, NULL, &c));
	plen = snprintf(pd, sizeof(pd), "ndkping pid %d", (int)getpid());
	tool_wait_init(&w);
	t0 = tool_now_ns();
	st = tool_wait_result(
		&w,
		c->Dispatch->NdkConnect(c, qp, (PSOCKADDR)&src,
					tool_addr_len((struct sockaddr *)&src),
					(PSOCKADDR)dst, tool_addr_len(dst),
					PING_IRD, PING_ORD, pd, (ULONG)plen,
					tool_wait_done, &w),
		0);
	if (st != STATUS_SUCCESS) {
		printf("ndkping: connect to %s failed: %s\n",
		       tool_addr_str(dst, text, sizeof(text)),
		       NdkStatusName(st));
		return 1;
	}
	tool_check("NdkCompleteConnect",
		   c->Dispatch->NdkCompleteConnect(c, client_gone, &cq, NULL,
						   NULL));
	setup = tool_now_ns() - t0;
	c->Dispatch->NdkGetLocalAddress(c, (PSOCKADDR)&local, &llen);
	printf("NDKPING %s from %s (%s): connected in %.1f usec\n",
	       tool_addr_str(dst, text, sizeof(text)),
	       tool_addr_str((struct sockaddr *)&local, ltext, sizeof(ltext)),
	       ifname, (double)setup / 1000.0);
	printf("  own read limits requested: IRD %u ORD %u\n", PING_IRD,
	       PING_ORD);
	print_limits(c, "  server");

	sge = (NDK_SGE){ .VirtualAddress = buf.mem,
			 .Length = (ULONG)size,
			 .MemoryRegionToken = buf.ltok };
	echo = sge;
	echo.VirtualAddress = buf.mem + half;
	signal(SIGINT, on_sigint);
	for (seq = 1; !stop && (!count || seq <= count); seq++) {
		unsigned int got = 0;
		ULONG echoed = 0;
		double us;

		if (verify) {
			perf_fill(buf.mem, size, seq);
			/* Anything but this pattern: an echo that did not
			 * land cannot pass. */
			perf_fill(buf.mem + half, size, ~(uint64_t)seq);
		} else {
			memset(buf.mem, (int)seq, size);
		}
		qp->Dispatch->NdkReceive(qp, (PVOID)2, &echo, size ? 1 : 0);
		t0 = tool_now_ns();
		tool_check("NdkSend", qp->Dispatch->NdkSend(qp, (PVOID)1, &sge,
							    size ? 1 : 0, 0));
		sent++;
		/* The Send's completion and the echo's. */
		while (got < 2 && !stop) {
			if (cq.cq->Dispatch->NdkGetCqResults(cq.cq, &res, 1) !=
			    1) {
				if (atomic_load(&cq.abandoned)) {
					printf("the server disconnected\n");
					stop = 1;
					break;
				}
				perf_cq_wait_any(&cq);
				continue;
			}
			if (res.Status != STATUS_SUCCESS) {
				printf("request failed: %s\n",
				       NdkStatusName(res.Status));
				stop = 1;
				break;
			}
			if (res.RequestContext == (PVOID)2)
				echoed = res.BytesTransferred;
			got++;
		}
		if (got < 2)
			break;
		snprintf(what, sizeof(what), "echo %u", seq);
		if (verify &&
		    (echoed != size ||
		     perf_check(buf.mem + half, size, seq, what) != size)) {
			if (echoed != size)
				fprintf(stderr,
					"ndkping: verify: %s: %u bytes, not "
					"%zu\n",
					what, echoed, size);
			bad++;
		}
		us = (double)(tool_now_ns() - t0) / 1000.0;
		received++;
		min = MIN(min, us);
		max = MAX(max, us);
		sum += us;
		sum2 += us * us;
		printf("%zu bytes from %s: seq=%u time=%.1f usec\n", size,
		       tool_addr_str(dst, text, sizeof(text)), seq, us);
		fflush(stdout);
		if (interval_ms && (!count || seq < count))
			usleep(interval_ms * 1000);
	}
	printf("--- %s ndkping statistics ---\n",
	       tool_addr_str(dst, text, sizeof(text)));
	printf("%u sent, %u received, %.0f%% loss", sent, received,
	       sent ? 100.0 * (sent - received) / sent : 0.0);
	if (received)
		printf(", rtt min/avg/max/mdev = %.1f/%.1f/%.1f/%.1f usec", min,
		       sum / received, max,
		       sqrt(MAX(sum2 / received -
					(sum / received) * (sum / received),
				0.0)));
	printf("\n");
	if (verify)
		printf("verify: %u of %u echoes byte-exact\n", received - bad,
		       received);
	tool_wait_init(&w);
	tool_wait_result(&w, c->Dispatch->NdkDisconnect(c, tool_wait_done, &w),
			 0);
	TOOL_CLOSE(c);
	TOOL_CLOSE(qp);
	tool_buf_free(&buf);
	perf_cq_close(&cq);
	tool_host_close(&host);
	return received == sent && sent && !bad ? 0 : 1;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ndkping -s [-b ADDR] [-p PORT]              (server)\n"
		"       ndkping [-c COUNT] [-i MS] [-S SIZE] [-V] HOST[:PORT]\n"
		"  -c COUNT  round trips (default 4; 0 = until Ctrl-C)\n"
		"  -i MS     pause between round trips (default 200)\n"
		"  -S SIZE   message size, 0-%u bytes (default 8)\n"
		"  -V        check that each echo brings back the pattern sent\n"
		"  -b ADDR   server address to listen on (127.0.0.1)\n"
		"  -p PORT   port (default %u)\n",
		PING_MAX_SIZE, PING_PORT);
}

int main(int argc, char **argv)
{
	const char *bind_addr = "127.0.0.1";
	unsigned int port = PING_PORT, count = 4, interval = 200;
	size_t size = 8;
	bool serve = false, verify = false;
	struct sockaddr_storage a;
	int c;

	tool_prog = "ndkping";

	signal(SIGPIPE, SIG_IGN);
	while ((c = getopt(argc, argv, "sb:p:c:i:S:Vh")) != -1) {
		switch (c) {
		case 's':
			serve = true;
			break;
		case 'b':
			bind_addr = optarg;
			break;
		case 'p':
			port = (unsigned int)atoi(optarg);
			break;
		case 'c':
			count = (unsigned int)atoi(optarg);
			break;
		case 'i':
			interval = (unsigned int)atoi(optarg);
			break;
		case 'S':
			size = (size_t)atol(optarg);
			break;
		case 'V':
			verify = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 1;
		}
	}
	if (size > PING_MAX_SIZE || (serve && optind != argc) ||
	    (!serve && optind != argc - 1)) {
		usage(stderr);
		return 1;
	}
	if (tool_parse_addr(serve ? bind_addr : argv[optind], (uint16_t)port,
			    &a)) {
		fprintf(stderr, "ndkping: bad address\n");
		return 1;
	}
	if (serve)
		return server((struct sockaddr *)&a);
	return client((struct sockaddr *)&a, count, interval, size, verify);
}
