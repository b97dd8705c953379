/* SPDX-License-Identifier: MIT */
/*
 * ndkcmatose: rdma-core's ucmatose (librdmacm/examples/cmatose.c) on
 * libndk: connect N connections, exchange messages, disconnect.
 *
 *   server  listens; per request posts count receives of size bytes and
 *           accepts (or, with -x, rejects). Once all are connected it
 *           sends count messages on each, reaps the sends, then the
 *           receives, and disconnects.
 *   client  per connection posts count receives and connects with IRD =
 *           ORD = 1 (ucmatose's). It waits for the server's count
 *           messages, sends count back and waits for the server's
 *           disconnect before disconnecting itself.
 *
 * So the passive side speaks first. libndk completes the Accept of an
 * initiator that sends no RTR (siw without peer_to_peer) once its Reply
 * is out, so that works too. Private data (-P) goes in the Connect,
 * Accept or Reject; each side prints what it got, with the read limits
 * agreed. -S 0 exchanges no messages (connect, then the server
 * disconnects).
 *
 * Exit status: 0 all connections done, 3 (client) the server rejected,
 * 1 anything else.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "iwutil.h"

#define CMATOSE_PORT	 7471
#define DEFAULT_WAIT_SEC 30
#define EXIT_REJECTED	 3

struct opts {
	const char *dst, *src, *ifname;
	uint16_t port;
	int conns, count;
	ULONG size, ird, ord;
	const char *pdata;
	int reject;
	unsigned int wait_ms, rtr_delay_ms;
};

struct node {
	int id;
	struct iw_conn cn;
	struct tool_buf mem;
	int connected;
	struct tool_wait dwait; /* the server's NdkDisconnect */
	NTSTATUS dst;
};

static const struct opts *o;

static void post_recvs(struct node *n)
{
	NDK_SGE sge = { .VirtualAddress = n->mem.mem,
			.Length = o->size,
			.MemoryRegionToken = n->mem.ltok };
	int i;

	for (i = 0; i < o->count; i++)
		tool_check("NdkReceive", n->cn.qp->Dispatch->NdkReceive(
						 n->cn.qp, NULL, &sge, 1));
}

static int post_sends(struct node *n)
{
	NDK_SGE sge = { .VirtualAddress = n->mem.mem,
			.Length = o->size,
			.MemoryRegionToken = n->mem.ltok };
	NTSTATUS st;
	int i;

	for (i = 0; i < o->count; i++) {
		st = n->cn.qp->Dispatch->NdkSend(n->cn.qp, NULL, &sge, 1, 0);
		if (!NT_SUCCESS(st)) {
			printf("cmatose: failed to post sends: %s\n",
			       NdkStatusName(st));
			return -1;
		}
	}
	return 0;
}

/* Reaps count completions of type t on n: 0, or -1. */
static int poll_cq(struct node *n, NDK_OPERATION_TYPE t)
{
	NDK_RESULT_EX res;
	int done = 0, rc;

	while (done < o->count) {
		rc = iw_cq_next(&n->cn, &res, o->wait_ms);
		if (rc <= 0) {
			printf("cmatose: connection %d: %s after %d of %d\n",
			       n->id, rc ? "disconnected" : "timed out", done,
			       o->count);
			return -1;
		}
		if (res.Status != STATUS_SUCCESS) {
			printf("cmatose: connection %d: completion %s\n", n->id,
			       NdkStatusName(res.Status));
			return -1;
		}
		if (res.Type != t)
			continue;
		if (t == NdkOperationTypeReceive &&
		    res.BytesTransferred != o->size) {
			printf("cmatose: connection %d: received %u bytes, "
			       "expected %u\n",
			       n->id, res.BytesTransferred, o->size);
			return -1;
		}
		done++;
	}
	return 0;
}

static void init_node(struct tool_host *h, struct node *n, int id)
{
	ULONG depth = o->count ? (ULONG)o->count : 1;

	n->id = id;
	iw_conn_init(h, &n->cn, depth, depth);
	tool_buf_alloc(h, &n->mem, o->size, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
	memset(n->mem.mem, 'a' + id % 26, o->size);
	post_recvs(n);
}

static void destroy_node(struct node *n)
{
	iw_conn_close(&n->cn);
	if (n->mem.mr)
		tool_buf_free(&n->mem);
}

static ULONG pdlen(void)
{
	return o->pdata ? (ULONG)strlen(o->pdata) : 0;
}

static int run_server(struct tool_host *h, const struct sockaddr *addr)
{
	struct node *nodes = calloc((size_t)o->conns, sizeof(*nodes));
	static struct tool_listener l;
	int i, ok = 0, rejected = 0, ret = 0;
	char a[80];

	if (!nodes)
		return 1;
	printf("cmatose: starting server\n");
	tool_check("NdkListen", tool_listen(h->ad, &l, addr));
	printf("cmatose: listening on %s\n",
	       tool_addr_str((struct sockaddr *)&l.addr, a, sizeof(a)));
	fflush(stdout);
	for (i = 0; i < o->conns; i++) {
		struct node *n = &nodes[i];
		NDK_CONNECTOR *c = tool_next_incoming(&l, 0);
		struct tool_wait w;
		NTSTATUS st;

		iw_print_connection_data("cmatose: connect request", c);
		if (o->reject) {
			st = c->Dispatch->NdkReject(c, (PVOID)o->pdata,
						    pdlen());
			printf("cmatose: rejecting connection request (%u "
			       "bytes of private data): %s\n",
			       pdlen(), NdkStatusName(st));
			fflush(stdout);
			/* Let the Reply reach the peer before the close. */
			sleep(1);
			TOOL_CLOSE(c);
			rejected += st == STATUS_SUCCESS;
			continue;
		}
		init_node(h, n, i);
		n->cn.c = c;
		tool_wait_init(&w);
		st = c->Dispatch->NdkAcceptEx(
			c, n->cn.qp, o->ird, o->ord, (PVOID)o->pdata, pdlen(),
			iw_on_disconnect, &n->cn, tool_wait_done, &w);
		st = tool_wait_result(&w, st, o->wait_ms);
		if (st != STATUS_SUCCESS) {
			printf("cmatose: failure accepting: %s\n",
			       NdkStatusName(st));
			ret = 1;
			continue;
		}
		n->connected = 1;
		iw_print_connection_data("cmatose: established", c);
	}
	if (o->reject) {
		ret = rejected == o->conns ? 0 : 1;
		goto out;
	}
	if (o->count) {
		printf("initiating data transfers\n");
		for (i = 0; i < o->conns; i++)
			if (nodes[i].connected && post_sends(&nodes[i]))
				ret = 1;
		printf("completing sends\n");
		for (i = 0; i < o->conns; i++)
			if (nodes[i].connected &&
			    poll_cq(&nodes[i], NdkOperationTypeSend))
				ret = 1;
		printf("receiving data transfers\n");
		for (i = 0; i < o->conns; i++)
			if (nodes[i].connected &&
			    poll_cq(&nodes[i], NdkOperationTypeReceive))
				ret = 1;
		printf("data transfers complete\n");
	}
	printf("cmatose: disconnecting\n");
	fflush(stdout);
	/* All at once, then wait, as ucmatose: each client disconnects
	 * when it sees ours. */
	for (i = 0; i < o->conns; i++) {
		struct node *n = &nodes[i];

		if (!n->connected)
			continue;
		ok++;
		tool_wait_init(&n->dwait);
		n->dst = n->cn.c->Dispatch->NdkDisconnect(
			n->cn.c, tool_wait_done, &n->dwait);
	}
	for (i = 0; i < o->conns; i++)
		if (nodes[i].connected)
			iw_dbg("connection %d: NdkDisconnect %s\n", i,
			       NdkStatusName(tool_wait_result(&nodes[i].dwait,
							      nodes[i].dst,
							      o->wait_ms)));
	if (ok != o->conns)
		ret = 1;
out:
	for (i = 0; i < o->conns; i++)
		if (nodes[i].cn.qp)
			destroy_node(&nodes[i]);
	printf("disconnected\n");
	tool_listener_close(&l);
	free(nodes);
	return ret;
}

static int run_client(struct tool_host *h, const struct sockaddr *dst,
		      const struct sockaddr *src)
{
	struct node *nodes = calloc((size_t)o->conns, sizeof(*nodes));
	int i, ret = 0, rejected = 0;

	if (!nodes)
		return 1;
	printf("cmatose: starting client\ncmatose: connecting\n");
	fflush(stdout);
	for (i = 0; i < o->conns; i++) {
		struct node *n = &nodes[i];
		struct tool_wait w;
		NTSTATUS st;

		init_node(h, n, i);
		tool_check("NdkCreateConnector",
			   h->ad->Dispatch->NdkCreateConnector(h->ad, NULL,
							       NULL, &n->cn.c));
		tool_wait_init(&w);
		st = n->cn.c->Dispatch->NdkConnect(
			n->cn.c, n->cn.qp, (PSOCKADDR)src, tool_addr_len(src),
			(PSOCKADDR)dst, tool_addr_len(dst), o->ird, o->ord,
			(PVOID)o->pdata, pdlen(), tool_wait_done, &w);
		st = tool_wait_result(&w, st, o->wait_ms);
		if (st == STATUS_CONNECTION_REFUSED) {
			/* A reject's private data stays readable. */
			printf("cmatose: event: REJECTED, error: %s\n",
			       NdkStatusName(st));
			iw_print_connection_data("cmatose: reject", n->cn.c);
			rejected++;
			continue;
		}
		if (st != STATUS_SUCCESS) {
			printf("cmatose: failure connecting: %s\n",
			       NdkStatusName(st));
			ret = 1;
			continue;
		}
		iw_print_connection_data("cmatose: connect reply", n->cn.c);
		iw_rtr_delay(o->rtr_delay_ms);
		tool_check(
			"NdkCompleteConnectEx",
			n->cn.c->Dispatch->NdkCompleteConnectEx(
				n->cn.c, iw_on_disconnect, &n->cn, NULL, NULL));
		n->connected = 1;
	}
	if (rejected) {
		ret = rejected == o->conns ? EXIT_REJECTED : 1;
		goto out;
	}
	if (o->count) {
		printf("receiving data transfers\n");
		fflush(stdout);
		for (i = 0; i < o->conns; i++)
			if (nodes[i].connected &&
			    poll_cq(&nodes[i], NdkOperationTypeReceive))
				ret = 1;
		printf("sending replies\n");
		for (i = 0; i < o->conns; i++)
			if (nodes[i].connected &&
			    (post_sends(&nodes[i]) ||
			     poll_cq(&nodes[i], NdkOperationTypeSend)))
				ret = 1;
		printf("data transfers complete\n");
	}
	/* ucmatose's client waits for the server's disconnect. */
	for (i = 0; i < o->conns; i++) {
		if (!nodes[i].connected)
			continue;
		if (tool_wait_for(&nodes[i].cn.disc, o->wait_ms) !=
		    STATUS_SUCCESS) {
			printf("cmatose: connection %d: no disconnect from "
			       "the server\n",
			       i);
			ret = 1;
		}
		/* ucmatose disconnects in its DISCONNECTED handler. */
		destroy_node(&nodes[i]);
	}
out:
	for (i = 0; i < o->conns; i++)
		destroy_node(&nodes[i]);
	printf("disconnected\n");
	free(nodes);
	return ret;
}

static void usage(const char *name)
{
	printf("usage: %s\n"
	       "\t[-s server_address]\n"
	       "\t[-b bind_address]\n"
	       "\t[-c connections]\n"
	       "\t[-C message_count]\n"
	       "\t[-S message_size]\n"
	       "\t[-p port_number]\n"
	       "libndk options:\n"
	       "\t[-P private_data]\tsent with Connect, Accept or Reject\n"
	       "\t[-x]\t\t\tserver: reject every request\n"
	       "\t[-r ird] [-o ord]\tread limits (1 1, as ucmatose)\n"
	       "\t[-D ms]\t\t\tclient: wait before CompleteConnect (the "
	       "RTR)\n"
	       "\t[-w seconds]\t\thow long to wait for the peer (%d)\n"
	       "\t[-i ifname]\t\tadapter interface\n"
	       "\t[-d]\t\t\tdebug printfs\n",
	       name, DEFAULT_WAIT_SEC);
}

int main(int argc, char **argv)
{
	struct opts opt = { .port = CMATOSE_PORT,
			    .conns = 1,
			    .count = 10,
			    .size = 100,
			    .ird = 1,
			    .ord = 1,
			    .wait_ms = DEFAULT_WAIT_SEC * 1000 };
	struct sockaddr_storage dst, src;
	struct tool_host h;
	int op, ret;
	long v;

	tool_prog = "ndkcmatose";
	while ((op = getopt(argc, argv, "s:b:c:C:S:p:P:xr:o:D:w:i:d")) != -1) {
		switch (op) {
		case 's':
			opt.dst = optarg;
			break;
		case 'b':
			opt.src = optarg;
			break;
		case 'c':
			opt.conns = atoi(optarg);
			break;
		case 'C':
			opt.count = atoi(optarg);
			break;
		case 'S':
			v = strtol(optarg, NULL, 0);
			opt.size = v > 0 ? (ULONG)v : 0;
			break;
		case 'p':
			v = strtol(optarg, NULL, 0);
			opt.port = (uint16_t)(v > 0 && v < 65536 ? v : 0);
			break;
		case 'P':
			opt.pdata = optarg;
			break;
		case 'x':
			opt.reject = 1;
			break;
		case 'r':
			opt.ird = (ULONG)strtoul(optarg, NULL, 0);
			break;
		case 'o':
			opt.ord = (ULONG)strtoul(optarg, NULL, 0);
			break;
		case 'D':
			opt.rtr_delay_ms =
				(unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'w':
			opt.wait_ms =
				(unsigned int)strtoul(optarg, NULL, 0) * 1000;
			break;
		case 'i':
			opt.ifname = optarg;
			break;
		case 'd':
			iw_debug++;
			break;
		default:
			usage(argv[0]);
			return 1;
		}
	}
	/* ucmatose: a zero size means no messages. */
	if (!opt.size)
		opt.count = 0;
	if (opt.conns < 1 || opt.count < 0 || optind != argc) {
		usage(argv[0]);
		return 1;
	}
	o = &opt;
	if (opt.dst) {
		if (tool_parse_addr(opt.dst, opt.port, &dst) ||
		    (opt.src ? tool_parse_addr(opt.src, 0, &src)
			     : tool_route_source((struct sockaddr *)&dst,
						 &src))) {
			printf("cmatose: bad address\n");
			return 1;
		}
		iw_host_open(&h, opt.ifname, (struct sockaddr *)&src);
		ret = run_client(&h, (struct sockaddr *)&dst,
				 (struct sockaddr *)&src);
	} else {
		if (tool_parse_addr(opt.src ? opt.src : "127.0.0.1", opt.port,
				    &src)) {
			printf("cmatose: bad address\n");
			return 1;
		}
		iw_host_open(&h, opt.ifname, (struct sockaddr *)&src);
		ret = run_server(&h, (struct sockaddr *)&src);
	}
	printf("test complete\n");
	tool_host_close(&h);
	return ret;
}
