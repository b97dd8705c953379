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
 * The command line is libndk's (docs/tools.md), not ucmatose's: the server
 * is -s, the client takes HOST; -n is ucmatose's -C, -b its -b, -v its -d.
 *
 * Exit status: 0 all connections done, 3 (client) the server rejected or
 * a connect failed, 1 anything else, 2 usage.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "iwutil.h"
#include "tool_server.h"
#include "toolutil.h"

#define CMATOSE_PORT	 7471
#define DEFAULT_WAIT_SEC 30

struct opts {
	bool server;
	struct sockaddr_storage dst, src;
	bool have_src;
	NET_IFINDEX ifindex;
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
	int recvs, sends; /* completions reaped so far */
};

static const struct opts *o;

/* Receives land in the second half of the buffer and sends leave from the
 * first: rdma-core's cmatose shares one buffer, so the peer's messages
 * can land while this side's sends still read it (a race TSan reports). */
static void post_recvs(struct node *n)
{
	NDK_SGE sge = { .VirtualAddress = n->mem.mem + o->size,
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

/*
 * Reaps completions on n until count of type t have come: 0, or -1. The
 * CQ is shared by both queues and orders nothing between them: a peer's
 * reply can complete before the Send it answers does (the Send's last
 * byte reached the peer while its sender had not yet seen it leave), so
 * a completion of the other type is counted for the later wait, never
 * dropped.
 */
static int poll_cq(struct node *n, NDK_OPERATION_TYPE t)
{
	int *done = t == NdkOperationTypeReceive ? &n->recvs : &n->sends;
	NDK_RESULT_EX res;
	int rc;

	while (*done < o->count) {
		rc = iw_cq_next(&n->cn, &res, o->wait_ms);
		if (rc <= 0) {
			printf("cmatose: connection %d: %s after %d of %d\n",
			       n->id, rc ? "disconnected" : "timed out", *done,
			       o->count);
			return -1;
		}
		if (res.Status != STATUS_SUCCESS) {
			printf("cmatose: connection %d: completion %s\n", n->id,
			       NdkStatusName(res.Status));
			return -1;
		}
		if (res.Type == NdkOperationTypeReceive) {
			if (res.BytesTransferred != o->size) {
				printf("cmatose: connection %d: received %u "
				       "bytes, expected %u\n",
				       n->id, res.BytesTransferred, o->size);
				return -1;
			}
			n->recvs++;
		} else if (res.Type == NdkOperationTypeSend) {
			n->sends++;
		}
	}
	return 0;
}

static void init_node(struct tool_host *h, struct node *n, int id)
{
	ULONG depth = o->count ? (ULONG)o->count : 1;

	n->id = id;
	iw_conn_init(h, &n->cn, depth, depth);
	tool_buf_alloc(h, &n->mem, 2 * (size_t)o->size,
		       NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
	memset(n->mem.mem, 'a' + id % 26, 2 * (size_t)o->size);
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

static int run_server(const struct sockaddr *addr)
{
	struct node *nodes = calloc((size_t)o->conns, sizeof(*nodes));
	static struct tool_server srv;
	int i, ok = 0, rejected = 0, ret = 0;
	char a[128];

	if (!nodes)
		return TOOL_EXIT_FAIL;
	printf("cmatose: starting server\n");
	if (tool_server_open(&srv, addr, o->ifindex, NULL, NULL)) {
		free(nodes);
		return TOOL_EXIT_FAIL;
	}
	printf("cmatose: listening on %s\n",
	       tool_server_str(&srv, a, sizeof(a)));
	fflush(stdout);
	for (i = 0; i < o->conns; i++) {
		struct node *n = &nodes[i];
		struct tool_host *h = NULL;
		NDK_CONNECTOR *c = NULL;
		struct tool_wait w;
		NTSTATUS st;

		while (!c && !tool_stop)
			c = tool_server_next(&srv, 200, &h);
		if (!c) {
			ret = TOOL_EXIT_FAIL;
			break;
		}

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
	tool_server_close(&srv);
	free(nodes);
	return ret;
}

static int run_client(struct tool_host *h, const struct sockaddr *dst,
		      const struct sockaddr *src)
{
	struct node *nodes = calloc((size_t)o->conns, sizeof(*nodes));
	int i, ret = 0, rejected = 0, failed = 0;

	if (!nodes)
		return TOOL_EXIT_FAIL;
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
			ret = TOOL_EXIT_FAIL;
			failed++;
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
	/* None connected is "could not connect" (docs/tools.md). */
	if (rejected + failed == o->conns) {
		ret = TOOL_EXIT_CONNECT;
		goto out;
	}
	if (rejected) {
		ret = TOOL_EXIT_FAIL;
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

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ndkcmatose -s [options]                  (server)\n"
		"       ndkcmatose [options] HOST[:PORT]         (client)\n"
		"rdma-core's ucmatose on libndk: connect, exchange messages,\n"
		"disconnect.\n"
		"  -s, --server            serve -c connections, then exit\n"
		"  -b, --bind ADDR         server: listen on ADDR (0.0.0.0:\n"
		"                          every interface); client: connect\n"
		"                          from ADDR\n"
		"  -p, --port PORT         port (%d)\n"
		"  -I, --interface IF      adapter interface\n"
		"  -c, --connections N     connections (1)\n"
		"  -n, --iterations N      messages each way per connection (10)\n"
		"  -S, --size BYTES        message size (100; 0: no messages)\n"
		"      --private-data TEXT sent with Connect, Accept or Reject\n"
		"  -x, --reject            server: reject every request\n"
		"  -r, --ird N             inbound read limit (1, as ucmatose)\n"
		"  -o, --ord N             outbound read limit (1)\n"
		"      --rtr-delay SECS    client: wait before CompleteConnect\n"
		"                          (the RTR)\n"
		"      --timeout SECS      how long to wait for the peer (%d)\n"
		"  -v, --verbose           debug traces\n"
		"  -h, --help              this help\n"
		"      --version           the version\n"
		"Exit status: 0 all connections done, 1 failed, 2 usage, 3 the\n"
		"server rejected or did not answer (docs/tools.md).\n",
		CMATOSE_PORT, DEFAULT_WAIT_SEC);
}

enum {
	OPT_PDATA = TOOL_OPT_FIRST,
	OPT_RTR_DELAY,
	OPT_TIMEOUT,
};

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "server", no_argument, NULL, 's' },
		{ "bind", required_argument, NULL, 'b' },
		{ "port", required_argument, NULL, 'p' },
		{ "interface", required_argument, NULL, 'I' },
		{ "connections", required_argument, NULL, 'c' },
		{ "iterations", required_argument, NULL, 'n' },
		{ "size", required_argument, NULL, 'S' },
		{ "private-data", required_argument, NULL, OPT_PDATA },
		{ "reject", no_argument, NULL, 'x' },
		{ "ird", required_argument, NULL, 'r' },
		{ "ord", required_argument, NULL, 'o' },
		{ "rtr-delay", required_argument, NULL, OPT_RTR_DELAY },
		{ "timeout", required_argument, NULL, OPT_TIMEOUT },
		{ "verbose", no_argument, NULL, 'v' },
		TOOL_LONG_COMMON,
		{ NULL, 0, NULL, 0 },
	};
	struct opts opt = { .conns = 1,
			    .count = 10,
			    .size = 100,
			    .ird = 1,
			    .ord = 1,
			    .wait_ms = DEFAULT_WAIT_SEC * 1000 };
	const char *bind_addr = NULL;
	char ifname[IF_NAMESIZE];
	uint16_t port = CMATOSE_PORT;
	struct sockaddr_storage src;
	struct tool_host h;
	NET_IFINDEX idx;
	int op, ret;

	tool_prog = "ndkcmatose";
	tool_catch_signals();
	while ((op = getopt_long(argc, argv, "sb:p:I:c:n:S:xr:o:vh", longopts,
				 NULL)) != -1) {
		switch (op) {
		case 's':
			opt.server = true;
			break;
		case 'b':
			bind_addr = optarg;
			break;
		case 'p':
			port = tool_arg_port(optarg);
			break;
		case 'I':
			opt.ifindex = tool_arg_interface(optarg, ifname);
			break;
		case 'c':
			opt.conns = (int)tool_arg_count("-c", optarg, 1, 65536);
			break;
		case 'n':
			opt.count = (int)tool_arg_count("-n", optarg, 0, 65536);
			break;
		case 'S':
			opt.size =
				(ULONG)tool_arg_size("-S", optarg, 0, 1u << 30);
			break;
		case OPT_PDATA:
			opt.pdata = optarg;
			break;
		case 'x':
			opt.reject = 1;
			break;
		case 'r':
			opt.ird = (ULONG)tool_arg_count("-r", optarg, 0, 255);
			break;
		case 'o':
			opt.ord = (ULONG)tool_arg_count("-o", optarg, 0, 255);
			break;
		case OPT_RTR_DELAY:
			opt.rtr_delay_ms =
				(unsigned int)(tool_arg_seconds("--rtr-delay",
								optarg, 0, 60) *
					       1000);
			break;
		case OPT_TIMEOUT:
			opt.wait_ms = (unsigned int)(tool_arg_seconds(
							     "--timeout",
							     optarg, 0, 86400) *
						     1000);
			break;
		case 'v':
			iw_debug++;
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
	if (opt.server && optind != argc)
		tool_usage_error("a server takes no HOST");
	if (!opt.server && optind != argc - 1)
		tool_usage_error(optind == argc ? "HOST is missing (or -s "
						  "for a server)"
						: "one HOST only");
	if (!opt.server && opt.reject)
		tool_usage_error("-x is a server option");
	/* ucmatose: a zero size means no messages. */
	if (!opt.size)
		opt.count = 0;
	o = &opt;
	if (opt.server) {
		tool_arg_addr("-b", bind_addr ? bind_addr : "0.0.0.0", port,
			      &src);
		ret = run_server((struct sockaddr *)&src);
		printf("test complete\n");
		return ret;
	}
	if (bind_addr) {
		tool_arg_addr("-b", bind_addr, 0, &opt.src);
		opt.have_src = true;
	}
	tool_arg_addr("HOST", argv[optind], port, &opt.dst);
	if (tool_client_local((struct sockaddr *)&opt.dst,
			      opt.have_src ? &opt.src : NULL, opt.ifindex, &src,
			      &idx))
		return TOOL_EXIT_CONNECT;
	tool_host_open(&h, idx);
	ret = run_client(&h, (struct sockaddr *)&opt.dst,
			 (struct sockaddr *)&src);
	printf("test complete\n");
	tool_host_close(&h);
	return ret;
}
