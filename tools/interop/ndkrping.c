/* SPDX-License-Identifier: MIT */
/*
 * ndkrping: rdma-core's rping on libndk, wire-compatible with it.
 *
 * One ping, as rping does it (librdmacm/examples/rping.c):
 *   client  Send {start_buf address, rkey, size}          (16 bytes)
 *   server  RDMA Read of size bytes from the client's start_buf
 *   server  Send "go ahead"                               (16 bytes)
 *   client  Send {rdma_buf address, rkey, size}
 *   server  RDMA Write of strlen(data) + 1 bytes into the client's rdma_buf
 *   server  Send "go ahead"
 *   client  with --verify compares rdma_buf with start_buf
 * The advertisement is struct rping_rdma_info { __be64 buf; __be32 rkey;
 * __be32 size; }. Our rkey is NdkGetRemoteTokenFromMr, a host-order STag
 * that libndk writes big-endian into DDP headers (RFC 5041 4.3), as siw
 * does with an rkey: both sides convert it like rping does.
 *
 * Each side pre-posts one 16-byte receive and re-posts it after every
 * receive; rping connects with IRD = ORD = 1.
 *
 * The command line is libndk's (docs/tools.md), not rping's: the server
 * is -s, the client takes HOST; -n is rping's -C, --verify its -V, -b its
 * client -I, -vv its -d.
 */
#include <endian.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "iwutil.h"
#include "tool_server.h"
#include "toolutil.h"

#define RPING_PORT	 7174
#define RPING_BUFSIZE	 (64 * 1024)
#define RPING_INFO_LEN	 16 /* struct rping_rdma_info */
#define RPING_MSG_FMT	 "rdma-ping-%d: "
#define RPING_SQ_DEPTH	 16
#define RPING_RQ_DEPTH	 2
#define BAD_TOKEN	 0xbad0bad0u /* names no STag: siw or ours */
#define DEFAULT_WAIT_SEC 30

enum fault {
	FAULT_NONE,
	FAULT_BADRKEY, /* client: advertise a token that is no STag */
	FAULT_BADWRITE, /* after one ping, RDMA Write to an invalid STag */
};

struct opts {
	bool server;
	uint64_t conns; /* server: stop after this many (0: until a signal) */
	struct sockaddr_storage addr, src;
	bool have_src;
	NET_IFINDEX ifindex;
	int count; /* 0: forever, as rping */
	ULONG size;
	int verbose, validate;
	bool json;
	ULONG ird, ord;
	enum fault fault;
	unsigned int wait_ms;
	unsigned int rtr_delay_ms;
};

/* One side's state for one connection. */
struct rping {
	const struct opts *o;
	struct tool_host *h;
	struct iw_conn cn;
	struct tool_buf recv, send, rdma, start;
	unsigned char
		expect[RPING_BUFSIZE]; /* server --verify: what was sent */
	int pings;
	bool mismatch; /* --verify found other data */
};

/* The client's ping payload (rping_test_client): the header, then the
 * letters 'A'..'z' from a start letter that moves on with every ping,
 * and a NUL in the last byte. */
static void fill_ping(char *buf, ULONG size, int ping)
{
	int start = 65 + ping % 58, cc;
	unsigned char c = (unsigned char)start;
	ULONG i;

	cc = snprintf(buf, size, RPING_MSG_FMT, ping);
	for (i = cc < 0 ? 0 : (ULONG)cc; i < size; i++) {
		buf[i] = (char)c;
		if (++c > 122)
			c = 65;
	}
	buf[size - 1] = 0;
}

static void put_info(struct tool_buf *msg, const void *addr, UINT32 rkey,
		     ULONG size)
{
	uint64_t a = htobe64((uint64_t)(uintptr_t)addr);
	uint32_t k = htobe32(rkey), s = htobe32(size);
	unsigned char *p = msg->mem;

	memcpy(p, &a, 8);
	memcpy(p + 8, &k, 4);
	memcpy(p + 12, &s, 4);
}

static void get_info(const struct tool_buf *msg, uint64_t *addr, UINT32 *rkey,
		     ULONG *size)
{
	const unsigned char *p = msg->mem;
	uint64_t a;
	uint32_t k, s;

	memcpy(&a, p, 8);
	memcpy(&k, p + 8, 4);
	memcpy(&s, p + 12, 4);
	*addr = be64toh(a);
	*rkey = be32toh(k);
	*size = be32toh(s);
}

static const char *op_name(NDK_OPERATION_TYPE t)
{
	switch (t) {
	case NdkOperationTypeReceive:
		return "recv";
	case NdkOperationTypeSend:
		return "send";
	case NdkOperationTypeRead:
		return "rdma read";
	case NdkOperationTypeWrite:
		return "rdma write";
	default:
		return "other";
	}
}

static NTSTATUS post_recv(struct rping *r)
{
	NDK_SGE sge = { .VirtualAddress = r->recv.mem,
			.Length = RPING_INFO_LEN,
			.MemoryRegionToken = r->recv.ltok };

	return r->cn.qp->Dispatch->NdkReceive(r->cn.qp, NULL, &sge, 1);
}

static NTSTATUS post_send(struct rping *r)
{
	NDK_SGE sge = { .VirtualAddress = r->send.mem,
			.Length = RPING_INFO_LEN,
			.MemoryRegionToken = r->send.ltok };

	return r->cn.qp->Dispatch->NdkSend(r->cn.qp, NULL, &sge, 1, 0);
}

static NTSTATUS post_rdma(struct rping *r, int write, ULONG len, uint64_t raddr,
			  UINT32 rkey)
{
	NDK_SGE sge = { .VirtualAddress = r->rdma.mem,
			.Length = len,
			.MemoryRegionToken = r->rdma.ltok };
	NDK_QP *qp = r->cn.qp;

	iw_dbg("post rdma %s len %u to addr %llx rkey %x\n",
	       write ? "write" : "read", len, (unsigned long long)raddr, rkey);
	if (write)
		return qp->Dispatch->NdkWrite(qp, NULL, &sge, 1, raddr, rkey,
					      0);
	return qp->Dispatch->NdkRead(qp, NULL, &sge, 1, raddr, rkey, 0);
}

/*
 * Reaps completions until one of type want succeeds. A receive is
 * re-posted at once, as rping's CQ handler does. Returns 0, or -1 when
 * the connection ended (peer disconnect or Terminate), a completion
 * failed, or nothing came within the wait.
 */
static int wait_for(struct rping *r, NDK_OPERATION_TYPE want, ULONG *bytes)
{
	NDK_RESULT_EX res;
	int rc;

	for (;;) {
		rc = iw_cq_next(&r->cn, &res, r->o->wait_ms);
		if (rc < 0) {
			iw_dbg("connection ended waiting for %s\n",
			       op_name(want));
			return -1;
		}
		if (!rc) {
			fprintf(stderr, "%s: timed out waiting for %s\n",
				tool_prog, op_name(want));
			return -1;
		}
		if (res.Status != STATUS_SUCCESS) {
			fprintf(stderr,
				"%s: cq completion failed status %s (%s)\n",
				tool_prog, NdkStatusName(res.Status),
				op_name(res.Type));
			return -1;
		}
		iw_dbg("%s completion\n", op_name(res.Type));
		if (res.Type == NdkOperationTypeReceive) {
			if (res.BytesTransferred != RPING_INFO_LEN) {
				fprintf(stderr,
					"%s: Received bogus data, size %u\n",
					tool_prog, res.BytesTransferred);
				return -1;
			}
			/* Take the message before the buffer is reused. */
			if (bytes)
				*bytes = res.BytesTransferred;
			if (want == res.Type)
				return 0;
			fprintf(stderr, "%s: unexpected receive\n", tool_prog);
			return -1;
		}
		if (res.Type == want)
			return 0;
	}
}

/* A receive whose message has been read out goes back on the queue. */
static int repost_recv(struct rping *r)
{
	NTSTATUS st = post_recv(r);

	if (!NT_SUCCESS(st)) {
		fprintf(stderr, "%s: post recv error: %s\n", tool_prog,
			NdkStatusName(st));
		return -1;
	}
	return 0;
}

static int send_info(struct rping *r)
{
	NTSTATUS st = post_send(r);

	if (!NT_SUCCESS(st)) {
		fprintf(stderr, "%s: post send error: %s\n", tool_prog,
			NdkStatusName(st));
		return -1;
	}
	return 0;
}

/* Writes one byte to an STag the peer does not have: its RDMAP/DDP
 * layer must answer with a Terminate (RFC 5041 7.2, invalid STag). */
static int inject_bad_write(struct rping *r)
{
	NTSTATUS st;

	printf("%s: fault: RDMA Write to invalid STag %#x\n", tool_prog,
	       BAD_TOKEN);
	fflush(stdout);
	st = post_rdma(r, 1, 1, 0, BAD_TOKEN);
	if (!NT_SUCCESS(st)) {
		fprintf(stderr, "%s: post write error: %s\n", tool_prog,
			NdkStatusName(st));
		return -1;
	}
	return 0;
}

/* The client side of rping_test_client; returns 0 after count pings. */
static int run_client_pings(struct rping *r)
{
	const struct opts *o = r->o;
	ULONG size = o->size;
	int ping;

	for (ping = 0; !tool_stop && (!o->count || ping < o->count); ping++) {
		UINT32 rkey = r->start.rtok;

		fill_ping((char *)r->start.mem, size, ping);
		memset(r->rdma.mem, 0, size);
		if (o->fault == FAULT_BADRKEY) {
			printf("%s: fault: advertising invalid rkey %#x\n",
			       tool_prog, BAD_TOKEN);
			fflush(stdout);
			rkey = BAD_TOKEN;
		}
		put_info(&r->send, r->start.mem, rkey, size);
		iw_dbg("RDMA addr %llx rkey %x len %u\n",
		       (unsigned long long)(uintptr_t)r->start.mem, rkey, size);
		if (send_info(r) ||
		    wait_for(r, NdkOperationTypeReceive, NULL) ||
		    repost_recv(r))
			return -1;
		/* Go-ahead: the server has read start_buf. */
		put_info(&r->send, r->rdma.mem, r->rdma.rtok, size);
		iw_dbg("RDMA addr %llx rkey %x len %u\n",
		       (unsigned long long)(uintptr_t)r->rdma.mem, r->rdma.rtok,
		       size);
		if (send_info(r) ||
		    wait_for(r, NdkOperationTypeReceive, NULL) ||
		    repost_recv(r))
			return -1;
		if (o->validate && memcmp(r->start.mem, r->rdma.mem, size)) {
			fprintf(stderr, "%s: data mismatch in ping %d!\n",
				tool_prog, ping);
			r->mismatch = true;
			return -1;
		}
		if (o->verbose)
			printf("ping data: %s\n", (char *)r->rdma.mem);
		r->pings++;
		if (o->fault == FAULT_BADWRITE && inject_bad_write(r))
			return -1;
	}
	return 0;
}

/* The server side of rping_test_server for one connection. Returns 0
 * when the client disconnects between pings. */
static int run_server_pings(struct rping *r)
{
	const struct opts *o = r->o;
	uint64_t raddr;
	UINT32 rkey;
	ULONG rlen, wlen;

	for (;;) {
		/* The client's start_buf advertisement, or its disconnect. */
		if (wait_for(r, NdkOperationTypeReceive, NULL))
			return iw_conn_disconnected(&r->cn) ? 0 : -1;
		get_info(&r->recv, &raddr, &rkey, &rlen);
		if (repost_recv(r))
			return -1;
		iw_dbg("Received rkey %x addr %llx len %u from peer\n", rkey,
		       (unsigned long long)raddr, rlen);
		if (rlen > r->rdma.len) {
			fprintf(stderr, "%s: peer buffer %u > %zu bytes\n",
				tool_prog, rlen, r->rdma.len);
			return -1;
		}
		if (!NT_SUCCESS(post_rdma(r, 0, rlen, raddr, rkey)) ||
		    wait_for(r, NdkOperationTypeRead, NULL))
			return -1;
		if (o->verbose)
			printf("server ping data: %.*s\n", (int)rlen,
			       (char *)r->rdma.mem);
		if (o->validate && rlen) {
			fill_ping((char *)r->expect, rlen, r->pings);
			if (memcmp(r->expect, r->rdma.mem, rlen)) {
				fprintf(stderr,
					"%s: read data mismatch in ping %d\n",
					tool_prog, r->pings);
				r->mismatch = true;
				return -1;
			}
		}
		if (o->fault == FAULT_BADWRITE && inject_bad_write(r))
			return -1;
		if (send_info(r))
			return -1;
		/* The client's rdma_buf advertisement. */
		if (wait_for(r, NdkOperationTypeReceive, NULL))
			return -1;
		get_info(&r->recv, &raddr, &rkey, &rlen);
		if (repost_recv(r))
			return -1;
		iw_dbg("Received rkey %x addr %llx len %u from peer\n", rkey,
		       (unsigned long long)raddr, rlen);
		/* rping echoes strlen(data) + 1 bytes. */
		wlen = (ULONG)strnlen((const char *)r->rdma.mem, r->rdma.len) +
		       1;
		if (wlen > rlen)
			wlen = rlen;
		if (!NT_SUCCESS(post_rdma(r, 1, wlen, raddr, rkey)) ||
		    wait_for(r, NdkOperationTypeWrite, NULL))
			return -1;
		iw_dbg("server rdma write complete\n");
		if (send_info(r))
			return -1;
		r->pings++;
	}
}

static void rping_bufs(struct rping *r, int server)
{
	ULONG rw = NDK_MR_FLAG_ALLOW_LOCAL_WRITE |
		   NDK_MR_FLAG_ALLOW_REMOTE_READ |
		   NDK_MR_FLAG_ALLOW_REMOTE_WRITE;

	tool_buf_alloc(r->h, &r->recv, RPING_INFO_LEN,
		       NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
	tool_buf_alloc(r->h, &r->send, RPING_INFO_LEN, 0);
	/* The server reads whatever size the client advertises, up to
	 * rping's largest buffer. */
	tool_buf_alloc(r->h, &r->rdma, server ? RPING_BUFSIZE : r->o->size, rw);
	if (!server)
		tool_buf_alloc(r->h, &r->start, r->o->size, rw);
}

static void rping_free(struct rping *r)
{
	iw_conn_close(&r->cn);
	tool_buf_free(&r->recv);
	tool_buf_free(&r->send);
	tool_buf_free(&r->rdma);
	if (r->start.mr)
		tool_buf_free(&r->start);
}

/* After a fault the connection must end, from either side. */
static int fault_outcome(struct rping *r, int rc)
{
	if (rc == 0) {
		fprintf(stderr, "%s: fault injected, connection still up\n",
			tool_prog);
		return 1;
	}
	if (!iw_conn_disconnected(&r->cn) &&
	    tool_wait_for(&r->cn.disc, r->o->wait_ms) != STATUS_SUCCESS) {
		fprintf(stderr, "%s: fault: no disconnect event\n", tool_prog);
		return 1;
	}
	printf("%s: fault: connection ended after %d pings\n", tool_prog,
	       r->pings);
	return 0;
}

static void print_json(const struct opts *o, const struct rping *r, int rc)
{
	struct json j;

	json_init(&j, stdout, true);
	json_begin_object(&j, NULL);
	json_string(&j, "tool", "ndkrping");
	json_uint(&j, "pings", (unsigned long long)r->pings);
	json_uint(&j, "size", o->size);
	json_bool(&j, "verified", o->validate && !r->mismatch);
	json_bool(&j, "ok", rc == TOOL_EXIT_OK);
	json_end_object(&j);
	json_finish(&j);
}

static int run_client(const struct opts *o)
{
	struct tool_host h;
	struct rping *r = calloc(1, sizeof(*r));
	struct sockaddr_storage src;
	struct tool_wait w;
	NET_IFINDEX idx;
	NTSTATUS st;
	char a[80], b[80];
	int rc;

	if (!r)
		return TOOL_EXIT_FAIL;
	if (tool_client_local((const struct sockaddr *)&o->addr,
			      o->have_src ? &o->src : NULL, o->ifindex, &src,
			      &idx)) {
		free(r);
		return TOOL_EXIT_CONNECT;
	}
	tool_host_open(&h, idx);
	r->o = o;
	r->h = &h;
	rping_bufs(r, 0);
	iw_conn_init(&h, &r->cn, RPING_RQ_DEPTH, RPING_SQ_DEPTH);
	tool_check("NdkReceive", post_recv(r));
	tool_check("NdkCreateConnector", h.ad->Dispatch->NdkCreateConnector(
						 h.ad, NULL, NULL, &r->cn.c));
	tool_wait_init(&w);
	iw_dbg("connecting %s -> %s, IRD %u ORD %u\n",
	       tool_addr_str((struct sockaddr *)&src, a, sizeof(a)),
	       tool_addr_str((const struct sockaddr *)&o->addr, b, sizeof(b)),
	       o->ird, o->ord);
	st = r->cn.c->Dispatch->NdkConnect(
		r->cn.c, r->cn.qp, (PSOCKADDR)&src,
		tool_addr_len((struct sockaddr *)&src), (PSOCKADDR)&o->addr,
		tool_addr_len((const struct sockaddr *)&o->addr), o->ird,
		o->ord, NULL, 0, tool_wait_done, &w);
	st = tool_wait_result(&w, st, o->wait_ms);
	if (st != STATUS_SUCCESS) {
		fprintf(stderr, "%s: connect error: %s\n", tool_prog,
			NdkStatusName(st));
		rping_free(r);
		tool_host_close(&h);
		free(r);
		return TOOL_EXIT_CONNECT;
	}
	if (iw_debug)
		iw_print_connection_data("client", r->cn.c);
	iw_rtr_delay(o->rtr_delay_ms);
	tool_check("NdkCompleteConnectEx",
		   r->cn.c->Dispatch->NdkCompleteConnectEx(
			   r->cn.c, iw_on_disconnect, &r->cn, NULL, NULL));
	iw_dbg("rdma_connect successful\n");

	rc = run_client_pings(r);
	if (o->fault != FAULT_NONE) {
		rc = fault_outcome(r, rc) ? TOOL_EXIT_FAIL : TOOL_EXIT_OK;
	} else if (rc) {
		fprintf(stderr, "%s: rping client failed after %d pings\n",
			tool_prog, r->pings);
		rc = r->mismatch ? TOOL_EXIT_VERIFY : TOOL_EXIT_FAIL;
	} else if (!o->json) {
		printf("%s: client: %d pings of %u bytes%s\n", tool_prog,
		       r->pings, o->size, o->validate ? ", validated" : "");
	}
	if (o->json)
		print_json(o, r, rc);
	rping_free(r);
	tool_host_close(&h);
	free(r);
	return rc;
}

/* Accepts c and serves pings until the client disconnects. */
static int serve_one(const struct opts *o, struct tool_host *h,
		     NDK_CONNECTOR *c)
{
	struct rping *r = calloc(1, sizeof(*r));
	struct tool_wait w;
	NTSTATUS st;
	int rc;

	if (!r)
		return TOOL_EXIT_FAIL;
	r->o = o;
	r->h = h;
	rping_bufs(r, 1);
	iw_conn_init(h, &r->cn, RPING_RQ_DEPTH, RPING_SQ_DEPTH);
	r->cn.c = c;
	if (iw_debug)
		iw_print_connection_data("server request", c);
	tool_check("NdkReceive", post_recv(r));
	tool_wait_init(&w);
	st = c->Dispatch->NdkAcceptEx(c, r->cn.qp, o->ird, o->ord, NULL, 0,
				      iw_on_disconnect, &r->cn, tool_wait_done,
				      &w);
	st = tool_wait_result(&w, st, o->wait_ms);
	if (st != STATUS_SUCCESS) {
		fprintf(stderr, "%s: accept error: %s\n", tool_prog,
			NdkStatusName(st));
		rping_free(r);
		free(r);
		return TOOL_EXIT_FAIL;
	}
	if (iw_debug)
		iw_print_connection_data("server accepted", c);
	rc = run_server_pings(r);
	if (o->fault != FAULT_NONE) {
		rc = fault_outcome(r, rc ? rc : -1) ? TOOL_EXIT_FAIL
						    : TOOL_EXIT_OK;
	} else if (rc) {
		fprintf(stderr, "%s: rping server failed after %d pings\n",
			tool_prog, r->pings);
		rc = r->mismatch ? TOOL_EXIT_VERIFY : TOOL_EXIT_FAIL;
	} else {
		printf("%s: server: %d pings%s, client disconnected\n",
		       tool_prog, r->pings, o->validate ? " validated" : "");
		if (o->count && r->pings != o->count) {
			fprintf(stderr, "%s: expected %d pings\n", tool_prog,
				o->count);
			rc = TOOL_EXIT_FAIL;
		}
	}
	fflush(stdout);
	rping_free(r);
	free(r);
	return rc;
}

/* Serves connections one by one, through any adapter of a wildcard
 * (docs/tools.md, Servers), until -c of them or a signal. */
static int run_server(const struct opts *o)
{
	static struct tool_server srv;
	struct tool_host *h;
	NDK_CONNECTOR *c;
	uint64_t served = 0;
	int rc = TOOL_EXIT_OK, r;
	char a[128];

	if (tool_server_open(&srv, (const struct sockaddr *)&o->addr,
			     o->ifindex, NULL, NULL))
		return TOOL_EXIT_FAIL;
	/* With -p 0 this shows the port picked. */
	printf("%s: listening on %s\n", tool_prog,
	       tool_server_str(&srv, a, sizeof(a)));
	fflush(stdout);
	while (!tool_stop && (!o->conns || served < o->conns)) {
		c = tool_server_next(&srv, 200, &h);
		if (!c)
			continue;
		r = serve_one(o, h, c);
		/* The worst outcome decides: a mismatch over a failure. */
		if (r == TOOL_EXIT_VERIFY || (r && rc != TOOL_EXIT_VERIFY))
			rc = r;
		served++;
	}
	tool_server_close(&srv);
	return rc;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s -s [options]                       (server)\n"
		"       %s [options] HOST[:PORT]              (client)\n"
		"rdma-core's rping on libndk: a Send, an RDMA Read, an RDMA\n"
		"Write per ping, wire-compatible with rping.\n"
		"  -s, --server          serve connections one by one\n"
		"  -c, --connections N   server: exit after N connections (1;\n"
		"                        0: until interrupted)\n"
		"  -b, --bind ADDR       server: listen on ADDR (0.0.0.0: every\n"
		"                        interface); client: connect from ADDR\n"
		"  -p, --port PORT       port (%d)\n"
		"  -I, --interface IF    adapter interface (default: the one\n"
		"                        that has the address)\n"
		"  -n, --iterations N    pings (0: until interrupted, as rping)\n"
		"  -S, --size BYTES      ping data size, 1 to %d (rping: 26 to\n"
		"                        %d)\n"
		"      --verify          check the ping data (the server checks\n"
		"                        what it read too)\n"
		"  -v, --verbose         print the ping data; twice: debug\n"
		"                        traces\n"
		"  -j, --json            the client's summary as JSON\n"
		"  -r, --ird N           inbound read limit for Connect/Accept (1)\n"
		"  -o, --ord N           outbound read limit (1)\n"
		"      --timeout SECS    how long to wait for the peer (%d)\n"
		"      --rtr-delay SECS  client: wait before CompleteConnect (the\n"
		"                        RTR) against siw's accept window\n"
		"                        (tests/interop/README.md)\n"
		"      --fault FAULT     badrkey (client: advertise an invalid\n"
		"                        rkey) or badwrite (RDMA Write to an\n"
		"                        invalid STag after a ping); exit 0 if\n"
		"                        the connection then ends\n"
		"  -h, --help            this help\n"
		"      --version         the version\n"
		"Exit status: 0 ok, 1 failed, 2 usage, 3 could not connect, 4\n"
		"the data differed (docs/tools.md).\n",
		tool_prog, tool_prog, RPING_PORT, RPING_BUFSIZE,
		RPING_BUFSIZE - 1, DEFAULT_WAIT_SEC);
}

enum {
	OPT_VERIFY = TOOL_OPT_FIRST,
	OPT_TIMEOUT,
	OPT_RTR_DELAY,
	OPT_FAULT,
};

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "server", no_argument, NULL, 's' },
		{ "connections", required_argument, NULL, 'c' },
		{ "bind", required_argument, NULL, 'b' },
		{ "port", required_argument, NULL, 'p' },
		{ "interface", required_argument, NULL, 'I' },
		{ "iterations", required_argument, NULL, 'n' },
		{ "size", required_argument, NULL, 'S' },
		{ "verify", no_argument, NULL, OPT_VERIFY },
		{ "verbose", no_argument, NULL, 'v' },
		{ "json", no_argument, NULL, 'j' },
		{ "ird", required_argument, NULL, 'r' },
		{ "ord", required_argument, NULL, 'o' },
		{ "timeout", required_argument, NULL, OPT_TIMEOUT },
		{ "rtr-delay", required_argument, NULL, OPT_RTR_DELAY },
		{ "fault", required_argument, NULL, OPT_FAULT },
		TOOL_LONG_COMMON,
		{ NULL, 0, NULL, 0 },
	};
	struct opts o = { .conns = 1,
			  .size = 64,
			  .ird = 1,
			  .ord = 1,
			  .wait_ms = DEFAULT_WAIT_SEC * 1000 };
	const char *bind_addr = NULL;
	char ifname[IF_NAMESIZE];
	uint16_t port = RPING_PORT;
	int op;

	tool_prog = "ndkrping";
	tool_catch_signals();
	while ((op = getopt_long(argc, argv, "sc:b:p:I:n:S:vjr:o:h", longopts,
				 NULL)) != -1) {
		switch (op) {
		case 's':
			o.server = true;
			break;
		case 'c':
			o.conns = tool_arg_count("-c", optarg, 0, UINT64_MAX);
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
			o.count = (int)tool_arg_count("-n", optarg, 0, INT_MAX);
			break;
		case 'S':
			o.size = (ULONG)tool_arg_size("-S", optarg, 1,
						      RPING_BUFSIZE);
			break;
		case OPT_VERIFY:
			o.validate = 1;
			break;
		case 'v':
			/* Once: the ping data, as rping's -v; twice: its -d. */
			if (++o.verbose > 1)
				iw_debug++;
			break;
		case 'j':
			o.json = true;
			break;
		case 'r':
			o.ird = (ULONG)tool_arg_count("-r", optarg, 0, 255);
			break;
		case 'o':
			o.ord = (ULONG)tool_arg_count("-o", optarg, 0, 255);
			break;
		case OPT_TIMEOUT:
			o.wait_ms = (unsigned int)(tool_arg_seconds("--timeout",
								    optarg, 0,
								    86400) *
						   1000);
			break;
		case OPT_RTR_DELAY:
			o.rtr_delay_ms =
				(unsigned int)(tool_arg_seconds("--rtr-delay",
								optarg, 0, 60) *
					       1000);
			break;
		case OPT_FAULT:
			if (!strcmp(optarg, "badrkey"))
				o.fault = FAULT_BADRKEY;
			else if (!strcmp(optarg, "badwrite"))
				o.fault = FAULT_BADWRITE;
			else
				tool_usage_error("--fault: badrkey or "
						 "badwrite, not '%s'",
						 optarg);
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
	o.verbose = o.verbose ? 1 : 0;
	if (o.server && optind != argc)
		tool_usage_error("a server takes no HOST");
	if (!o.server && optind != argc - 1)
		tool_usage_error(optind == argc ? "HOST is missing (or -s "
						  "for a server)"
						: "one HOST only");
	if (o.server && o.fault == FAULT_BADRKEY)
		tool_usage_error("--fault badrkey is a client fault");
	if (o.server && o.json)
		tool_usage_error("-j is a client option");
	if (o.server) {
		tool_arg_addr("-b", bind_addr ? bind_addr : "0.0.0.0", port,
			      &o.addr);
		return run_server(&o);
	}
	if (bind_addr) {
		tool_arg_addr("-b", bind_addr, 0, &o.src);
		o.have_src = true;
	}
	tool_arg_addr("HOST", argv[optind], port, &o.addr);
	return run_client(&o);
}
