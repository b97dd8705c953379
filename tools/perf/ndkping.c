/* SPDX-License-Identifier: MIT */
/*
 * ndkping: is NDK working between here and there? The client connects
 * with private data, prints what the handshake negotiated (read limits,
 * the server's private data, setup time), then times Send/Receive round
 * trips like ping(8).
 *
 *   server: ndkping -s [-b ADDR] [-p PORT] [-I IF]
 *   client: ndkping [-n COUNT] [-i SECONDS] [-S SIZE] [--verify] [-j]
 *                   HOST[:PORT]
 *
 * The options and exit status are those of docs/tools.md. The echo lands
 * in a buffer of its own; with --verify the client sends a pattern of each
 * sequence number and checks that the echo brings it back byte for byte.
 */
#include <errno.h>
#include <math.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "perfutil.h"
#include "tool_server.h"

#define PING_PORT     18516
#define PING_IRD      16
#define PING_ORD      16
#define PING_MAX_SIZE 65536

/* How long a wait lasts before it looks at tool_stop again. */
#define PING_TICK_MS 200

struct ping_opts {
	bool serve, verify, json;
	uint64_t count;
	double interval;
	size_t size;
	NET_IFINDEX ifindex;
	struct sockaddr_storage bind, dst;
	bool have_bind;
};

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

/* One client's connection, accepted through h: echoes until it leaves
 * or a signal stops the server. Returns the echoes sent. */
static uint64_t serve_one(struct tool_host *h, NDK_CONNECTOR *c)
{
	static const char hello[] = "ndkping server";
	struct sockaddr_storage peer;
	ULONG plen = sizeof(peer);
	struct perf_cq cq;
	struct tool_buf buf;
	struct tool_wait w;
	NDK_RESULT res;
	NDK_SGE sge, out;
	NDK_QP *qp;
	NTSTATUS st;
	uint64_t echoes = 0;
	char text[64];

	perf_cq_create(h, &cq, 64, true);
	qp = perf_qp_create(h, &cq, 16);
	/* Receives land in the first half, echoes leave from the second. */
	tool_buf_alloc(h, &buf, 2 * PING_MAX_SIZE, TOOL_MR_ALL_ACCESS);
	sge = (NDK_SGE){ .VirtualAddress = buf.mem,
			 .Length = PING_MAX_SIZE,
			 .MemoryRegionToken = buf.ltok };
	out = sge;
	out.VirtualAddress = buf.mem + PING_MAX_SIZE;
	qp->Dispatch->NdkReceive(qp, NULL, &sge, 1);
	memset(&peer, 0, sizeof(peer));
	c->Dispatch->NdkGetPeerAddress(c, (PSOCKADDR)&peer, &plen);
	printf("connection from %s\n",
	       tool_addr_str((struct sockaddr *)&peer, text, sizeof(text)));
	print_limits(c, "  client");
	fflush(stdout);
	tool_wait_init(&w);
	st = tool_wait_result(
		&w,
		c->Dispatch->NdkAccept(c, qp, PING_IRD, PING_ORD, (PVOID)hello,
				       sizeof(hello) - 1, client_gone, &cq,
				       tool_wait_done, &w),
		0);
	/*
	 * Echo until the client goes: its disconnect event abandons the CQ
	 * (NDK does not flush our receive on a peer's disconnect, so nothing
	 * else would end the wait).
	 */
	while (st == STATUS_SUCCESS && !tool_stop) {
		if (cq.cq->Dispatch->NdkGetCqResults(cq.cq, &res, 1) != 1) {
			if (atomic_load(&cq.abandoned))
				break;
			perf_cq_wait_any(&cq, PING_TICK_MS);
			continue;
		}
		if (res.Status != STATUS_SUCCESS)
			break;
		if (res.RequestContext)
			continue; /* our echo's completion */
		/*
		 * The next receive is posted before the echo goes out: the
		 * client's next message may follow the echo at once, and an
		 * iWARP Send that finds no receive ends the connection. The
		 * echo's buffer is free again by then, since the client has
		 * all of it.
		 */
		out.Length = res.BytesTransferred;
		memcpy(out.VirtualAddress, buf.mem, out.Length);
		qp->Dispatch->NdkReceive(qp, NULL, &sge, 1);
		qp->Dispatch->NdkSend(qp, (PVOID)1, &out, out.Length ? 1 : 0,
				      0);
		echoes++;
	}
	tool_wait_init(&w);
	tool_wait_result(&w, c->Dispatch->NdkDisconnect(c, tool_wait_done, &w),
			 0);
	TOOL_CLOSE(c);
	TOOL_CLOSE(qp);
	tool_buf_free(&buf);
	perf_cq_close(&cq);
	printf("connection closed (%s)\n", NdkStatusName(st));
	fflush(stdout);
	return echoes;
}

/* Server: echo every message of every client, one client at a time,
 * through whichever adapter it came (docs/tools.md, Servers). */
static int server(const struct ping_opts *o)
{
	static struct tool_server srv;
	uint64_t clients = 0, echoes = 0;
	struct tool_host *h;
	NDK_CONNECTOR *c;
	char text[128];

	if (tool_server_open(&srv, (const struct sockaddr *)&o->bind,
			     o->ifindex, NULL, NULL))
		return TOOL_EXIT_FAIL;
	printf("ndkping: listening on %s\n",
	       tool_server_str(&srv, text, sizeof(text)));
	fflush(stdout);
	while (!tool_stop) {
		c = tool_server_next(&srv, PING_TICK_MS, &h);
		if (!c)
			continue;
		clients++;
		echoes += serve_one(h, c);
	}
	tool_server_close(&srv);
	printf("ndkping: served %llu connection%s, %llu echoes\n",
	       (unsigned long long)clients, clients == 1 ? "" : "s",
	       (unsigned long long)echoes);
	return TOOL_EXIT_OK;
}

/* Sleeps, cut short by a signal. */
static void ping_pause(double seconds)
{
	struct timespec ts;

	ts.tv_sec = (time_t)seconds;
	ts.tv_nsec = (long)((seconds - (double)ts.tv_sec) * 1e9);
	while (!tool_stop && nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static void print_json(const struct ping_opts *o, const char *ifname,
		       uint64_t setup_ns, uint64_t sent, uint64_t received,
		       uint64_t bad, const double *stats)
{
	char text[64];
	struct json j;

	json_init(&j, stdout, true);
	json_begin_object(&j, NULL);
	json_string(&j, "tool", "ndkping");
	json_string(&j, "target",
		    tool_addr_str((const struct sockaddr *)&o->dst, text,
				  sizeof(text)));
	json_string(&j, "interface", ifname);
	json_uint(&j, "size", o->size);
	json_double(&j, "connect_usec", (double)setup_ns / 1000.0, 1);
	json_uint(&j, "sent", sent);
	json_uint(&j, "received", received);
	json_double(&j, "loss_percent",
		    sent ? 100.0 * (double)(sent - received) / (double)sent
			 : 0.0,
		    1);
	if (received) {
		json_double(&j, "rtt_min_usec", stats[0], 1);
		json_double(&j, "rtt_mean_usec", stats[1], 1);
		json_double(&j, "rtt_max_usec", stats[2], 1);
		json_double(&j, "rtt_mdev_usec", stats[3], 1);
	}
	if (o->verify)
		json_uint(&j, "verified", received - bad);
	json_end_object(&j);
	json_finish(&j);
}

static int client(const struct ping_opts *o)
{
	const struct sockaddr *dst = (const struct sockaddr *)&o->dst;
	char text[64], ltext[64], pd[64];
	struct sockaddr_storage src, local;
	ULONG llen = sizeof(local);
	struct tool_host host;
	struct perf_cq cq;
	struct tool_buf buf;
	struct tool_wait w;
	NDK_CONNECTOR *c;
	NDK_QP *qp;
	NDK_SGE sge, echo;
	NDK_RESULT res;
	NET_IFINDEX idx;
	char ifname[IF_NAMESIZE] = "?";
	uint64_t seq, sent = 0, received = 0, bad = 0;
	size_t size = o->size, half = MAX(size, 1);
	char what[64];
	double min = 1e30, max = 0, sum = 0, sum2 = 0, stats[4];
	uint64_t t0, setup;
	bool failed = false;
	NTSTATUS st;
	int plen;

	if (tool_client_local(dst, o->have_bind ? &o->bind : NULL, o->ifindex,
			      &src, &idx))
		return TOOL_EXIT_CONNECT;
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
		fprintf(stderr, "ndkping: connect to %s failed: %s\n",
			tool_addr_str(dst, text, sizeof(text)),
			NdkStatusName(st));
		return TOOL_EXIT_CONNECT;
	}
	tool_check("NdkCompleteConnect",
		   c->Dispatch->NdkCompleteConnect(c, client_gone, &cq, NULL,
						   NULL));
	setup = tool_now_ns() - t0;
	c->Dispatch->NdkGetLocalAddress(c, (PSOCKADDR)&local, &llen);
	if (!o->json) {
		printf("NDKPING %s from %s (%s): connected in %.1f usec\n",
		       tool_addr_str(dst, text, sizeof(text)),
		       tool_addr_str((struct sockaddr *)&local, ltext,
				     sizeof(ltext)),
		       ifname, (double)setup / 1000.0);
		printf("  own read limits requested: IRD %u ORD %u\n", PING_IRD,
		       PING_ORD);
		print_limits(c, "  server");
	}

	sge = (NDK_SGE){ .VirtualAddress = buf.mem,
			 .Length = (ULONG)size,
			 .MemoryRegionToken = buf.ltok };
	echo = sge;
	echo.VirtualAddress = buf.mem + half;
	for (seq = 1; !tool_stop && !failed && (!o->count || seq <= o->count);
	     seq++) {
		unsigned int got = 0;
		ULONG echoed = 0;
		double us;

		if (o->verify) {
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
		while (got < 2 && !tool_stop) {
			if (cq.cq->Dispatch->NdkGetCqResults(cq.cq, &res, 1) !=
			    1) {
				if (atomic_load(&cq.abandoned)) {
					fprintf(stderr, "ndkping: the server "
							"disconnected\n");
					failed = true;
					break;
				}
				perf_cq_wait_any(&cq, PING_TICK_MS);
				continue;
			}
			if (res.Status != STATUS_SUCCESS) {
				fprintf(stderr, "ndkping: request failed: %s\n",
					NdkStatusName(res.Status));
				failed = true;
				break;
			}
			if (res.RequestContext == (PVOID)2)
				echoed = res.BytesTransferred;
			got++;
		}
		if (got < 2) {
			/* Interrupted mid-round-trip: that one is not a
			 * loss, only never finished (its completions are
			 * flushed below). */
			if (!failed)
				sent--;
			break;
		}
		snprintf(what, sizeof(what), "echo %llu",
			 (unsigned long long)seq);
		if (o->verify &&
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
		if (!o->json) {
			printf("%zu bytes from %s: seq=%llu time=%.1f usec\n",
			       size, tool_addr_str(dst, text, sizeof(text)),
			       (unsigned long long)seq, us);
			fflush(stdout);
		}
		if (o->interval > 0 && (!o->count || seq < o->count))
			ping_pause(o->interval);
	}
	stats[0] = min;
	stats[1] = received ? sum / (double)received : 0;
	stats[2] = max;
	stats[3] = received ? sqrt(MAX(sum2 / (double)received -
					       stats[1] * stats[1],
				       0.0))
			    : 0;
	if (o->json) {
		print_json(o, ifname, setup, sent, received, bad, stats);
	} else {
		printf("--- %s ndkping statistics ---\n",
		       tool_addr_str(dst, text, sizeof(text)));
		printf("%llu sent, %llu received, %.0f%% loss",
		       (unsigned long long)sent, (unsigned long long)received,
		       sent ? 100.0 * (double)(sent - received) / (double)sent
			    : 0.0);
		if (received)
			printf(", rtt min/avg/max/mdev = %.1f/%.1f/%.1f/%.1f "
			       "usec",
			       stats[0], stats[1], stats[2], stats[3]);
		printf("\n");
		if (o->verify)
			printf("verify: %llu of %llu echoes byte-exact\n",
			       (unsigned long long)(received - bad),
			       (unsigned long long)received);
	}
	tool_wait_init(&w);
	tool_wait_result(&w, c->Dispatch->NdkDisconnect(c, tool_wait_done, &w),
			 0);
	TOOL_CLOSE(c);
	TOOL_CLOSE(qp);
	tool_buf_free(&buf);
	perf_cq_close(&cq);
	tool_host_close(&host);
	if (bad)
		return TOOL_EXIT_VERIFY;
	return received == sent && sent ? TOOL_EXIT_OK : TOOL_EXIT_FAIL;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ndkping -s [-b ADDR] [-p PORT] [-I IF]           (server)\n"
		"       ndkping [options] HOST[:PORT]                    (client)\n"
		"Is NDK working between here and there? Send/Receive round trips.\n"
		"  -s, --server          serve every client, one at a time\n"
		"  -b, --bind ADDR       server: listen on ADDR (0.0.0.0: every\n"
		"                        interface); client: connect from ADDR\n"
		"  -p, --port PORT       port (%u)\n"
		"  -I, --interface IF    only this interface's adapter\n"
		"  -n, --iterations N    round trips (4; 0: until interrupted)\n"
		"  -i, --interval SECS   pause between round trips (0.2)\n"
		"  -S, --size BYTES      message size, 0 to 64k (8)\n"
		"      --verify          check that each echo brings back the\n"
		"                        pattern sent\n"
		"  -j, --json            the summary as JSON\n"
		"  -h, --help            this help\n"
		"      --version         the version\n"
		"Exit status: 0 every echo came back, 1 some did not, 2 usage,\n"
		"3 could not connect, 4 an echo differed (docs/tools.md).\n",
		PING_PORT);
}

enum { OPT_VERIFY = TOOL_OPT_FIRST };

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "server", no_argument, NULL, 's' },
		{ "bind", required_argument, NULL, 'b' },
		{ "port", required_argument, NULL, 'p' },
		{ "interface", required_argument, NULL, 'I' },
		{ "iterations", required_argument, NULL, 'n' },
		{ "interval", required_argument, NULL, 'i' },
		{ "size", required_argument, NULL, 'S' },
		{ "verify", no_argument, NULL, OPT_VERIFY },
		{ "json", no_argument, NULL, 'j' },
		TOOL_LONG_COMMON,
		{ NULL, 0, NULL, 0 },
	};
	struct ping_opts o = { .count = 4, .interval = 0.2, .size = 8 };
	const char *bind_addr = NULL;
	char ifname[IF_NAMESIZE];
	uint16_t port = PING_PORT;
	int c;

	tool_prog = "ndkping";
	tool_catch_signals();
	while ((c = getopt_long(argc, argv, "sb:p:I:n:i:S:jh", longopts,
				NULL)) != -1) {
		switch (c) {
		case 's':
			o.serve = true;
			break;
		case 'b':
			bind_addr = optarg;
			break;
		case 'p':
			port = tool_arg_port(optarg);
			break;
		case 'I':
			o.ifindex = tool_arg_interface(optarg, ifname);
			break;
		case 'n':
			o.count = tool_arg_count("-n", optarg, 0, UINT64_MAX);
			break;
		case 'i':
			o.interval = tool_arg_seconds("-i", optarg, 0, 86400);
			break;
		case 'S':
			o.size = (size_t)tool_arg_size("-S", optarg, 0,
						       PING_MAX_SIZE);
			break;
		case OPT_VERIFY:
			o.verify = true;
			break;
		case 'j':
			o.json = true;
			break;
		case 'h':
			usage(stdout);
			return TOOL_EXIT_OK;
		case TOOL_OPT_VERSION:
			tool_print_version();
			return TOOL_EXIT_OK;
		default:
			tool_usage_hint();
		}
	}
	if (o.serve && optind != argc)
		tool_usage_error("a server takes no HOST");
	if (!o.serve && optind != argc - 1)
		tool_usage_error(optind == argc ? "HOST is missing (or -s "
						  "for a server)"
						: "one HOST only");
	if (o.serve && (o.json || o.verify))
		tool_usage_error("%s is a client option",
				 o.json ? "-j" : "--verify");
	if (o.serve || bind_addr) {
		tool_arg_addr("-b", bind_addr ? bind_addr : "0.0.0.0",
			      o.serve ? port : 0, &o.bind);
		o.have_bind = true;
	}
	if (o.serve)
		return server(&o);
	tool_arg_addr("HOST", argv[optind], port, &o.dst);
	return client(&o);
}
