/* SPDX-License-Identifier: MIT */
/*
 * ndkstress: mixed traffic that checks every byte and every completion,
 * for runs under faults (loss, duplicates, corruption, links going down,
 * peers killed). Public NDKPI only.
 *
 *   server: ndkstress -s [-b ADDR] [-p PORT] [-I IF]
 *   client: ndkstress [-D SECONDS] [-S MAXSIZE] [-c CONNECTIONS] [-j]
 *                     HOST[:PORT]
 *
 * The client keeps SLOTS operations in flight, each one of: a Send of 1 B
 * to 1 MiB whose bytes the server checks; an RDMA Write of 1 B to 4 MiB
 * into a slot of the server's memory followed by a Send asking the server
 * to check that slot; an RDMA Read of 1 B to 4 MiB from the server's
 * pattern region, which the client checks. The server answers every Send
 * with an acknowledgement saying whether the bytes were right; a slot is
 * reused only after its acknowledgement. Every request carries its own
 * context and must complete exactly once; when the connection ends the
 * client flushes, collects every outstanding request, and connects again
 * until the time is up.
 *
 * Exit status (docs/tools.md): 0 when no wrong byte was reported as
 * success, no request completed twice or never, and at least one
 * operation completed; 4 when bytes were wrong; 3 when no connection
 * came up at all; 1 otherwise; 2 on a usage error.
 */
#include <endian.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "perfutil.h"
#include "tool_server.h"

#define STRESS_MAGIC 0x4e44534bu /* "NDSK" */
#define STRESS_PORT  18517
#define SLOTS	     8
#define MAX_SEND     (1u << 20)
#define MAX_RDMA     (4u << 20)
#define READ_REGION  (8u << 20)
#define HDR_LEN	     32u
#define RECV_LEN     (HDR_LEN + MAX_SEND)
#define SRV_RECVS    (2 * SLOTS + 2)
#define QP_DEPTH     64
#define READ_SEED    0x5eedull
/* How long a connection may stay silent before the client gives up. */
#define STALL_MS 60000

enum msg_kind {
	MSG_DATA = 1, /* the body is pattern(seq) */
	MSG_CHECK = 2, /* check write slot `slot`: len bytes of pattern(seq) */
	MSG_ACK = 3, /* seq was right (ok = 1) or not */
};

/* Little-endian on the wire. */
struct msg_hdr {
	uint32_t magic;
	uint32_t kind;
	uint64_t seq;
	uint32_t len;
	uint32_t slot;
	uint32_t ok;
	uint32_t pad;
};
_Static_assert(sizeof(struct msg_hdr) == HDR_LEN, "header is 32 bytes");

/* Server -> client, as accept private data. */
struct stress_reply {
	uint32_t magic;
	uint32_t write_token;
	uint32_t read_token;
	uint32_t pad;
	uint64_t write_base; /* SLOTS areas of MAX_RDMA */
	uint64_t read_base; /* READ_REGION bytes of pattern(READ_SEED) */
};

static struct tool_host host; /* the client's */
static struct {
	bool server;
	double seconds;
	size_t max_size;
	bool json;
	uint64_t max_connections; /* -c: stop after this many (0: none) */
	NET_IFINDEX ifindex;
	struct sockaddr_storage addr, bind;
	bool have_bind;
} opt = { .seconds = 10, .max_size = MAX_RDMA };

#define stop tool_stop

/* ------------------------------------------------------------------ */
/* The byte pattern                                                   */

/* Byte i of the message with this seq: shifts and swaps both show. */
static inline uint8_t pattern_byte(uint64_t seq, uint64_t i)
{
	uint64_t x = seq * 0x9e3779b97f4a7c15ull + (i >> 3);

	x ^= x >> 29;
	return (uint8_t)(x >> ((i & 7) * 8)) ^ (uint8_t)i;
}

static void pattern_fill(uint8_t *p, size_t len, uint64_t seq, uint64_t at)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = pattern_byte(seq, at + i);
}

/* Where wrong bytes are, for the report: how many, the first few runs
 * of them (offset+length), and the eight bytes found at the first. */
static void pattern_report(const char *what, const uint8_t *p, size_t len,
			   uint64_t seq)
{
	size_t i, first = len, bad = 0, run = 0, nruns = 0;
	char got[3 * 8 + 1] = "", runs[256] = "";
	int at = 0;

	for (i = 0; i <= len; i++) {
		bool wrong = i < len && p[i] != pattern_byte(seq, i);

		if (wrong) {
			if (first == len)
				first = i;
			bad++;
			run++;
		} else if (run) {
			size_t b = i - run, k;

			if (nruns++ < 4 && at < (int)sizeof(runs) - 48) {
				at += snprintf(runs + at, sizeof(runs) - at,
					       " %zu+%zu[", b, run);
				for (k = b; k < b + 4 && k < i; k++)
					at += snprintf(runs + at,
						       sizeof(runs) - at,
						       "%02x", p[k]);
				at += snprintf(runs + at, sizeof(runs) - at,
					       "]");
			}
			run = 0;
		}
	}
	for (i = first; i < len && i < first + 8; i++)
		snprintf(got + 3 * (i - first), 4, " %02x", p[i]);
	fprintf(stderr,
		"ndkstress: seq %llu: %s of %zu: %zu wrong bytes in %zu runs:%s;"
		" at the first:%s\n",
		(unsigned long long)seq, what, len, bad, nruns, runs, got);
}

static bool pattern_ok(const uint8_t *p, size_t len, uint64_t seq, uint64_t at)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != pattern_byte(seq, at + i))
			return false;
	return true;
}

static uint64_t xorshift64(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

/* 1 .. max, weighted toward small sizes (a power of two, then a rest). */
static size_t random_size(uint64_t *rng, size_t max)
{
	unsigned int bits = (unsigned int)(xorshift64(rng) % 23);
	size_t n = ((size_t)1 << bits) + xorshift64(rng) % ((size_t)1 << bits);

	return n > max ? max : n;
}

/* ------------------------------------------------------------------ */
/* Posting                                                            */

static NTSTATUS post_send(NDK_QP *qp, uint64_t ctx, void *p, size_t len,
			  UINT32 tok)
{
	NDK_SGE s = { .VirtualAddress = p,
		      .Length = (ULONG)len,
		      .MemoryRegionToken = tok };

	return qp->Dispatch->NdkSend(qp, (PVOID)(uintptr_t)ctx, &s, 1, 0);
}

static NTSTATUS post_recv(NDK_QP *qp, uint64_t ctx, void *p, size_t len,
			  UINT32 tok)
{
	NDK_SGE s = { .VirtualAddress = p,
		      .Length = (ULONG)len,
		      .MemoryRegionToken = tok };

	return qp->Dispatch->NdkReceive(qp, (PVOID)(uintptr_t)ctx, &s, 1);
}

static NTSTATUS post_rdma(NDK_QP *qp, bool write, uint64_t ctx, void *p,
			  size_t len, UINT32 ltok, uint64_t raddr, UINT32 rtok)
{
	NDK_SGE s = { .VirtualAddress = p,
		      .Length = (ULONG)len,
		      .MemoryRegionToken = ltok };

	if (write)
		return qp->Dispatch->NdkWrite(qp, (PVOID)(uintptr_t)ctx, &s, 1,
					      raddr, rtok, 0);
	return qp->Dispatch->NdkRead(qp, (PVOID)(uintptr_t)ctx, &s, 1, raddr,
				     rtok, 0);
}

static void hdr_put(uint8_t *p, enum msg_kind kind, uint64_t seq, uint32_t len,
		    uint32_t slot, uint32_t ok)
{
	struct msg_hdr h = { .magic = htole32(STRESS_MAGIC),
			     .kind = htole32(kind),
			     .seq = htole64(seq),
			     .len = htole32(len),
			     .slot = htole32(slot),
			     .ok = htole32(ok) };

	memcpy(p, &h, sizeof(h));
}

static bool hdr_get(const uint8_t *p, size_t got, struct msg_hdr *h)
{
	if (got < HDR_LEN)
		return false;
	memcpy(h, p, sizeof(*h));
	h->magic = le32toh(h->magic);
	h->kind = le32toh(h->kind);
	h->seq = le64toh(h->seq);
	h->len = le32toh(h->len);
	h->slot = le32toh(h->slot);
	h->ok = le32toh(h->ok);
	return h->magic == STRESS_MAGIC;
}

/* Connection end, from the disconnect event. */
struct ending {
	atomic_bool ended;
	atomic_uint reason;
};

static VOID on_disconnect(PVOID ctx, ULONG reason)
{
	struct ending *e = ctx;

	atomic_store(&e->reason, reason);
	atomic_store(&e->ended, true);
}

/* ------------------------------------------------------------------ */
/* Server                                                             */

struct server_session {
	struct tool_host *host;
	NDK_CONNECTOR *conn;
};

/* Sessions running, for the server's end. */
static atomic_uint sessions_live;
static atomic_ullong sessions_done, sessions_bad;

/* Receive contexts are 1 .. SRV_RECVS; ACK Sends SRV_RECVS + 1 + i. */
static void *server_session(void *arg)
{
	struct server_session *s = arg;
	struct stress_reply reply = { .magic = htole32(STRESS_MAGIC) };
	struct ending end = { 0 };
	struct tool_buf recv_buf, write_buf, read_buf, ack_buf;
	struct perf_cq cq;
	struct tool_host *ad = s->host;
	struct tool_wait w;
	NDK_RESULT res[16];
	unsigned int acks = 0, i;
	uint64_t wrong = 0;
	ULONG got;
	NDK_QP *qp;

	perf_cq_create(ad, &cq, 4 * QP_DEPTH, false);
	qp = perf_qp_create(ad, &cq, QP_DEPTH);
	tool_buf_alloc(ad, &recv_buf, (size_t)SRV_RECVS * RECV_LEN,
		       NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
	tool_buf_alloc(ad, &write_buf, (size_t)SLOTS * MAX_RDMA,
		       TOOL_MR_ALL_ACCESS);
	tool_buf_alloc(ad, &read_buf, READ_REGION, TOOL_MR_ALL_ACCESS);
	tool_buf_alloc(ad, &ack_buf, (size_t)SLOTS * 2 * HDR_LEN,
		       NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
	pattern_fill(read_buf.mem, READ_REGION, READ_SEED, 0);
	for (i = 0; i < SRV_RECVS; i++)
		tool_check("NdkReceive",
			   post_recv(qp, i + 1, recv_buf.mem + i * RECV_LEN,
				     RECV_LEN, recv_buf.ltok));
	/* Two MRs: Writes cannot reach the pattern that Reads check. */
	reply.write_token = htole32(write_buf.rtok);
	reply.read_token = htole32(read_buf.rtok);
	reply.write_base = htole64((uint64_t)(uintptr_t)write_buf.mem);
	reply.read_base = htole64((uint64_t)(uintptr_t)read_buf.mem);
	tool_wait_init(&w);
	if (tool_wait_result(&w,
			     s->conn->Dispatch->NdkAcceptEx(
				     s->conn, qp, 8, 8, &reply, sizeof(reply),
				     on_disconnect, &end, tool_wait_done, &w),
			     30000) != STATUS_SUCCESS)
		goto out;
	while (!atomic_load(&end.ended) && !stop) {
		got = cq.cq->Dispatch->NdkGetCqResults(cq.cq, res, 16);
		for (i = 0; i < got; i++) {
			uint64_t ctx =
				(uint64_t)(uintptr_t)res[i].RequestContext;
			struct msg_hdr h = { 0 };
			uint8_t *rb, *ab;
			uint32_t ok = 0;

			if (res[i].Status != STATUS_SUCCESS)
				goto ended;
			if (ctx > SRV_RECVS)
				continue; /* an ACK went out */
			rb = recv_buf.mem + (ctx - 1) * RECV_LEN;
			if (hdr_get(rb, res[i].BytesTransferred, &h)) {
				if (h.kind == MSG_DATA)
					ok = h.len + HDR_LEN ==
						     res[i].BytesTransferred &&
					     pattern_ok(rb + HDR_LEN, h.len,
							h.seq, 0);
				else if (h.kind == MSG_CHECK &&
					 h.slot < SLOTS && h.len <= MAX_RDMA)
					ok = pattern_ok(
						write_buf.mem +
							(size_t)h.slot *
								MAX_RDMA,
						h.len, h.seq, 0);
			}
			if (!ok && h.kind == MSG_DATA &&
			    h.len + HDR_LEN == res[i].BytesTransferred)
				pattern_report("Send", rb + HDR_LEN, h.len,
					       h.seq);
			else if (!ok && h.kind == MSG_CHECK && h.slot < SLOTS &&
				 h.len <= MAX_RDMA)
				pattern_report("Write",
					       write_buf.mem + (size_t)h.slot *
								       MAX_RDMA,
					       h.len, h.seq);
			else if (!ok)
				fprintf(stderr,
					"ndkstress: seq %llu: a message of %u "
					"bytes, kind %u, length %u\n",
					(unsigned long long)h.seq,
					res[i].BytesTransferred, h.kind, h.len);
			if (!ok)
				wrong++;
			ab = ack_buf.mem + (acks % (2 * SLOTS)) * HDR_LEN;
			hdr_put(ab, MSG_ACK, h.seq, 0, 0, ok);
			if (post_send(qp, SRV_RECVS + 1 + acks % (2 * SLOTS),
				      ab, HDR_LEN, ack_buf.ltok) ||
			    post_recv(qp, ctx, rb, RECV_LEN, recv_buf.ltok))
				goto ended;
			acks++;
		}
		if (!got)
			usleep(0);
	}
ended:
	/* Every request still posted completes once the QP is flushed. */
	tool_wait_init(&w);
	tool_wait_result(
		&w,
		s->conn->Dispatch->NdkDisconnect(s->conn, tool_wait_done, &w),
		30000);
	qp->Dispatch->NdkFlush(qp);
	while (cq.cq->Dispatch->NdkGetCqResults(cq.cq, res, 16))
		;
out:
	TOOL_CLOSE(s->conn);
	TOOL_CLOSE(qp);
	tool_buf_free(&recv_buf);
	tool_buf_free(&write_buf);
	tool_buf_free(&read_buf);
	tool_buf_free(&ack_buf);
	perf_cq_close(&cq);
	free(s);
	atomic_fetch_add(&sessions_done, 1);
	if (wrong)
		atomic_fetch_add(&sessions_bad, 1);
	atomic_fetch_sub(&sessions_live, 1);
	return NULL;
}

static int server_main(void)
{
	static struct tool_server srv;
	struct tool_host *h;
	char text[128];
	unsigned int i;

	if (tool_server_open(&srv, (struct sockaddr *)&opt.bind, opt.ifindex,
			     NULL, NULL))
		return TOOL_EXIT_FAIL;
	printf("ndkstress: listening on %s\n",
	       tool_server_str(&srv, text, sizeof(text)));
	fflush(stdout);
	while (!stop) {
		NDK_CONNECTOR *c = tool_server_next(&srv, 500, &h);
		struct server_session *s;
		pthread_t th;

		if (!c)
			continue;
		s = calloc(1, sizeof(*s));
		if (!s) {
			c->Dispatch->NdkReject(c, NULL, 0);
			TOOL_CLOSE(c);
			continue;
		}
		s->host = h;
		s->conn = c;
		atomic_fetch_add(&sessions_live, 1);
		if (pthread_create(&th, NULL, server_session, s)) {
			atomic_fetch_sub(&sessions_live, 1);
			c->Dispatch->NdkReject(c, NULL, 0);
			TOOL_CLOSE(c);
			free(s);
			continue;
		}
		pthread_detach(th);
	}
	/* The sessions see stop too: they disconnect, flush and close. */
	tool_server_stop(&srv);
	for (i = 0; i < 600 && atomic_load(&sessions_live); i++)
		tool_sleep_ms(100);
	printf("ndkstress: served %llu session%s, %llu with wrong bytes\n",
	       (unsigned long long)atomic_load(&sessions_done),
	       atomic_load(&sessions_done) == 1 ? "" : "s",
	       (unsigned long long)atomic_load(&sessions_bad));
	if (atomic_load(&sessions_live))
		return TOOL_EXIT_FAIL;
	tool_server_close(&srv);
	return TOOL_EXIT_OK;
}

/* ------------------------------------------------------------------ */
/* Client                                                             */

enum op_kind { OP_SEND, OP_WRITE, OP_READ, OP_KINDS };
static const char *const op_names[OP_KINDS] = { "send", "write", "read" };

/* A slot's operation: requests outstanding (bit per part) and whether
 * its acknowledgement is still due. */
struct slot {
	bool busy;
	enum op_kind kind;
	uint64_t seq;
	size_t len;
	uint64_t read_off;
	unsigned int pending; /* bit 0: Send/Read/Write, bit 1: CHECK Send */
	bool ack_due;
};

struct stats {
	uint64_t connections, ops[OP_KINDS], bytes_verified, mismatches;
	uint64_t posted, completed, unknown, flushed, errors;
	uint64_t ended_by[4]; /* FIN, reset, Terminate, timeout */
	uint64_t lost_ops; /* operations cut short by a connection's end */
};

static struct stats st;

/* Contexts: slot << 8 | part, parts 1 (op), 2 (CHECK), 3.. ACK receives
 * use 0x10000 + i. */
#define CTX(slot, part) ((uint64_t)(slot) << 8 | (part))
#define ACK_CTX(i)	(0x10000ull + (i))
#define ACK_RECVS	(SLOTS + 2)

struct client_conn {
	NDK_CONNECTOR *conn;
	NDK_QP *qp;
	struct perf_cq cq;
	struct tool_buf src, dst, ack; /* src: Send/Write bytes, dst: Reads */
	struct stress_reply reply;
	struct ending end;
	struct slot slots[SLOTS];
	unsigned int outstanding; /* requests posted and not completed */
	struct sockaddr_storage src_addr;
};

static VOID client_connected(PVOID ctx, NTSTATUS status)
{
	tool_wait_done(ctx, status);
}

static NTSTATUS client_connect(struct client_conn *cc)
{
	struct sockaddr_storage src;
	char hello[] = "ndkstress";
	uint8_t pd[64];
	ULONG pdlen = sizeof(pd);
	struct tool_wait w;
	NTSTATUS s;
	unsigned int i;

	/* A QP per connection: a disconnected QP is not connected again. */
	cc->qp = perf_qp_create(&host, &cc->cq, QP_DEPTH);
	tool_check("NdkCreateConnector",
		   host.ad->Dispatch->NdkCreateConnector(host.ad, NULL, NULL,
							 &cc->conn));
	src = cc->src_addr;
	tool_wait_init(&w);
	s = tool_wait_result(
		&w,
		cc->conn->Dispatch->NdkConnect(
			cc->conn, cc->qp, (PSOCKADDR)&src,
			tool_addr_len((struct sockaddr *)&src),
			(PSOCKADDR)&opt.addr,
			tool_addr_len((struct sockaddr *)&opt.addr), 8, 8,
			hello, sizeof(hello), client_connected, &w),
		30000);
	if (s)
		return s;
	s = cc->conn->Dispatch->NdkGetConnectionData(cc->conn, NULL, NULL, pd,
						     &pdlen);
	if (s || pdlen < sizeof(cc->reply))
		return s ? s : STATUS_DATA_ERROR;
	memcpy(&cc->reply, pd, sizeof(cc->reply));
	atomic_store(&cc->end.ended, false);
	s = cc->conn->Dispatch->NdkCompleteConnectEx(cc->conn, on_disconnect,
						     &cc->end, NULL, NULL);
	if (s)
		return s;
	for (i = 0; i < ACK_RECVS; i++) {
		if (post_recv(cc->qp, ACK_CTX(i), cc->ack.mem + i * HDR_LEN,
			      HDR_LEN, cc->ack.ltok))
			return STATUS_CONNECTION_ABORTED;
		st.posted++;
		cc->outstanding++;
	}
	return STATUS_SUCCESS;
}

/* Starts the slot's next operation; false if the connection refused it. */
static bool op_start(struct client_conn *cc, unsigned int n, uint64_t seq,
		     uint64_t *rng)
{
	struct slot *sl = &cc->slots[n];
	uint8_t *src = cc->src.mem + (size_t)n * (HDR_LEN + MAX_RDMA);
	uint64_t raddr;
	size_t len;

	memset(sl, 0, sizeof(*sl));
	sl->kind = (enum op_kind)(xorshift64(rng) % OP_KINDS);
	sl->seq = seq;
	switch (sl->kind) {
	case OP_SEND:
		len = random_size(rng, MIN(opt.max_size, MAX_SEND));
		hdr_put(src, MSG_DATA, seq, (uint32_t)len, 0, 0);
		pattern_fill(src + HDR_LEN, len, seq, 0);
		if (post_send(cc->qp, CTX(n, 1), src, HDR_LEN + len,
			      cc->src.ltok))
			return false;
		sl->pending = 1;
		sl->ack_due = true;
		break;
	case OP_WRITE:
		len = random_size(rng, opt.max_size);
		pattern_fill(src + HDR_LEN, len, seq, 0);
		raddr = le64toh(cc->reply.write_base) + (uint64_t)n * MAX_RDMA;
		if (post_rdma(cc->qp, true, CTX(n, 1), src + HDR_LEN, len,
			      cc->src.ltok, raddr,
			      le32toh(cc->reply.write_token)))
			return false;
		st.posted++;
		cc->outstanding++;
		sl->pending = 1;
		/* The Send behind the Write: placed before it completes
		 * at the server (RFC 5040 5.5 ordering). */
		hdr_put(src, MSG_CHECK, seq, (uint32_t)len, n, 0);
		if (post_send(cc->qp, CTX(n, 2), src, HDR_LEN, cc->src.ltok)) {
			sl->len = len;
			sl->busy = true;
			return false;
		}
		sl->pending |= 2;
		sl->ack_due = true;
		break;
	default:
		len = random_size(rng, opt.max_size);
		sl->read_off = xorshift64(rng) % (READ_REGION - len + 1);
		if (post_rdma(cc->qp, false, CTX(n, 1),
			      cc->dst.mem + (size_t)n * MAX_RDMA, len,
			      cc->dst.ltok,
			      le64toh(cc->reply.read_base) + sl->read_off,
			      le32toh(cc->reply.read_token)))
			return false;
		sl->pending = 1;
		break;
	}
	sl->len = len;
	sl->busy = true;
	st.posted++;
	cc->outstanding++;
	return true;
}

static void slot_maybe_done(struct slot *sl)
{
	if (sl->busy && !sl->pending && !sl->ack_due) {
		st.ops[sl->kind]++;
		sl->busy = false;
	}
}

/* An acknowledgement arrived in ACK receive i (ctx): its slot's bytes
 * were checked by the server; the receive is posted again. */
static void ack_result(struct client_conn *cc, const NDK_RESULT *r,
		       uint64_t ctx, bool failing)
{
	unsigned int i = (unsigned int)(ctx - ACK_CTX(0)), n;
	struct msg_hdr h;

	if (r->Status != STATUS_SUCCESS)
		return;
	if (!hdr_get(cc->ack.mem + i * HDR_LEN, r->BytesTransferred, &h) ||
	    h.kind != MSG_ACK) {
		st.unknown++;
		return;
	}
	for (n = 0; n < SLOTS; n++) {
		struct slot *sl = &cc->slots[n];

		if (sl->busy && sl->ack_due && sl->seq == h.seq) {
			sl->ack_due = false;
			if (!h.ok) {
				fprintf(stderr,
					"ndkstress: seq %llu: the server found "
					"wrong bytes (%s of %zu)\n",
					(unsigned long long)h.seq,
					sl->kind == OP_SEND ? "Send" : "Write",
					sl->len);
				st.mismatches++;
			} else
				st.bytes_verified += sl->len;
			slot_maybe_done(sl);
			break;
		}
	}
	if (n == SLOTS)
		st.unknown++;
	if (!failing && !post_recv(cc->qp, ctx, cc->ack.mem + i * HDR_LEN,
				   HDR_LEN, cc->ack.ltok)) {
		st.posted++;
		cc->outstanding++;
	}
}

/* A request of slot ctx >> 8 (part ctx & 0xff) completed; a Read's bytes
 * are checked here. */
static void op_result(struct client_conn *cc, const NDK_RESULT *r, uint64_t ctx)
{
	unsigned int n = (unsigned int)(ctx >> 8), part = ctx & 0xff;
	struct slot *sl = n < SLOTS ? &cc->slots[n] : NULL;

	if (!sl || !sl->busy || part < 1 || part > 2 || !(sl->pending & part)) {
		/* Completed twice, or never posted. */
		st.unknown++;
		return;
	}
	sl->pending &= ~part;
	if (r->Status == STATUS_SUCCESS && sl->kind == OP_READ) {
		if (pattern_ok(cc->dst.mem + (size_t)n * MAX_RDMA, sl->len,
			       READ_SEED, sl->read_off))
			st.bytes_verified += sl->len;
		else {
			fprintf(stderr,
				"ndkstress: seq %llu: Read of %zu at %llu: "
				"wrong bytes\n",
				(unsigned long long)sl->seq, sl->len,
				(unsigned long long)sl->read_off);
			st.mismatches++;
		}
	}
	slot_maybe_done(sl);
}

/* One completion, counted; an error or flush sets *failing. */
static void client_result(struct client_conn *cc, const NDK_RESULT *r,
			  bool *failing)
{
	uint64_t ctx = (uint64_t)(uintptr_t)r->RequestContext;

	st.completed++;
	cc->outstanding--;
	if (r->Status != STATUS_SUCCESS) {
		if (r->Status == STATUS_CANCELLED)
			st.flushed++;
		else
			st.errors++;
		*failing = true;
	}
	if (ctx >= ACK_CTX(0) && ctx < ACK_CTX(ACK_RECVS))
		ack_result(cc, r, ctx, *failing);
	else
		op_result(cc, r, ctx);
}

static unsigned int reason_index(ULONG reason)
{
	switch ((NTSTATUS)reason) {
	case STATUS_SUCCESS:
		return 0;
	case STATUS_CONNECTION_RESET:
		return 1;
	case STATUS_CONNECTION_ABORTED:
		return 2;
	default:
		return 3;
	}
}

/*
 * Every request still outstanding completes once after the flush
 * (NdkDisconnect flushes too; NdkFlush covers a connection that is still
 * up when the time runs out); then the connector and the QP go.
 */
static void client_session_end(struct client_conn *cc)
{
	NDK_RESULT res[16];
	struct tool_wait w;
	bool failing = true;
	uint64_t t0;
	unsigned int n, i;
	ULONG got;

	tool_wait_init(&w);
	tool_wait_result(
		&w,
		cc->conn->Dispatch->NdkDisconnect(cc->conn, tool_wait_done, &w),
		30000);
	cc->qp->Dispatch->NdkFlush(cc->qp);
	t0 = tool_now_ns();
	while (cc->outstanding && tool_now_ns() - t0 < 10000000000ull) {
		got = cc->cq.cq->Dispatch->NdkGetCqResults(cc->cq.cq, res, 16);
		for (i = 0; i < got; i++)
			client_result(cc, &res[i], &failing);
	}
	for (n = 0; n < SLOTS; n++)
		if (cc->slots[n].busy)
			st.lost_ops++;
	memset(cc->slots, 0, sizeof(cc->slots));
	/* A completion after all were in would be one too many. */
	tool_sleep_ms(50);
	st.unknown += cc->cq.cq->Dispatch->NdkGetCqResults(cc->cq.cq, res, 16);
	TOOL_CLOSE(cc->conn);
	TOOL_CLOSE(cc->qp);
	cc->conn = NULL;
	cc->qp = NULL;
	cc->outstanding = 0;
}

/* One connection: traffic until the end or the deadline. */
static void client_session(struct client_conn *cc, uint64_t deadline_ns,
			   uint64_t *seq, uint64_t *rng)
{
	NDK_RESULT res[16];
	bool failing = false;
	uint64_t last_progress = tool_now_ns();
	unsigned int n, i;
	ULONG got;

	memset(cc->slots, 0, sizeof(cc->slots));
	while (!failing && !stop && tool_now_ns() < deadline_ns &&
	       !atomic_load(&cc->end.ended)) {
		for (n = 0; n < SLOTS && !failing; n++)
			if (!cc->slots[n].busy &&
			    !op_start(cc, n, (*seq)++, rng))
				failing = true;
		got = cc->cq.cq->Dispatch->NdkGetCqResults(cc->cq.cq, res, 16);
		for (i = 0; i < got; i++)
			client_result(cc, &res[i], &failing);
		if (got)
			last_progress = tool_now_ns();
		else if (tool_now_ns() - last_progress > STALL_MS * 1000000ull)
			break;
	}
	if (atomic_load(&cc->end.ended))
		st.ended_by[reason_index(atomic_load(&cc->end.reason))]++;
	client_session_end(cc);
}

static void print_stats(double secs)
{
	unsigned int k;

	if (opt.json) {
		printf("{\"tool\":\"ndkstress\",\"seconds\":%.1f,"
		       "\"connections\":%llu,",
		       secs, (unsigned long long)st.connections);
		for (k = 0; k < OP_KINDS; k++)
			printf("\"%s\":%llu,", op_names[k],
			       (unsigned long long)st.ops[k]);
		printf("\"bytes_verified\":%llu,\"mismatches\":%llu,"
		       "\"posted\":%llu,\"completed\":%llu,"
		       "\"unknown_completions\":%llu,\"flushed\":%llu,"
		       "\"errors\":%llu,\"lost_ops\":%llu,"
		       "\"ended_fin\":%llu,\"ended_reset\":%llu,"
		       "\"ended_terminate\":%llu,\"ended_other\":%llu}\n",
		       (unsigned long long)st.bytes_verified,
		       (unsigned long long)st.mismatches,
		       (unsigned long long)st.posted,
		       (unsigned long long)st.completed,
		       (unsigned long long)st.unknown,
		       (unsigned long long)st.flushed,
		       (unsigned long long)st.errors,
		       (unsigned long long)st.lost_ops,
		       (unsigned long long)st.ended_by[0],
		       (unsigned long long)st.ended_by[1],
		       (unsigned long long)st.ended_by[2],
		       (unsigned long long)st.ended_by[3]);
		return;
	}
	printf("ndkstress: %.1f s, %llu connection(s); sends %llu, writes "
	       "%llu, reads %llu; %.1f MB verified, %llu wrong\n",
	       secs, (unsigned long long)st.connections,
	       (unsigned long long)st.ops[OP_SEND],
	       (unsigned long long)st.ops[OP_WRITE],
	       (unsigned long long)st.ops[OP_READ],
	       (double)st.bytes_verified / 1e6,
	       (unsigned long long)st.mismatches);
	printf("requests: %llu posted, %llu completed (%llu flushed, %llu "
	       "errors), %llu unknown or twice\n",
	       (unsigned long long)st.posted, (unsigned long long)st.completed,
	       (unsigned long long)st.flushed, (unsigned long long)st.errors,
	       (unsigned long long)st.unknown);
	printf("connections ended: %llu FIN, %llu reset, %llu Terminate, "
	       "%llu other\n",
	       (unsigned long long)st.ended_by[0],
	       (unsigned long long)st.ended_by[1],
	       (unsigned long long)st.ended_by[2],
	       (unsigned long long)st.ended_by[3]);
}

static int client_main(void)
{
	struct sockaddr_storage src;
	struct client_conn cc = { 0 };
	uint64_t t0 = tool_now_ns(), deadline, seq = 1;
	uint64_t rng = 0x2545f4914f6cdd1dull ^ (uint64_t)getpid();
	NET_IFINDEX idx;
	NTSTATUS s;

	if (tool_client_local((struct sockaddr *)&opt.addr,
			      opt.have_bind ? &opt.bind : NULL, opt.ifindex,
			      &src, &idx))
		return TOOL_EXIT_CONNECT;
	cc.src_addr = src;
	deadline = t0 + (uint64_t)(opt.seconds * 1e9);
	tool_host_open(&host, idx);
	perf_cq_create(&host, &cc.cq, 4 * QP_DEPTH, false);
	tool_buf_alloc(&host, &cc.src, (size_t)SLOTS * (HDR_LEN + MAX_RDMA),
		       NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
	tool_buf_alloc(&host, &cc.dst, (size_t)SLOTS * MAX_RDMA,
		       NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
	tool_buf_alloc(&host, &cc.ack, (size_t)ACK_RECVS * HDR_LEN,
		       NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
	while (!stop && tool_now_ns() < deadline &&
	       (!opt.max_connections || st.connections < opt.max_connections)) {
		s = client_connect(&cc);
		if (s) {
			/* The peer may be down for a while: try again. */
			client_session_end(&cc);
			tool_sleep_ms(200);
			continue;
		}
		st.connections++;
		client_session(&cc, deadline, &seq, &rng);
	}
	print_stats((double)(tool_now_ns() - t0) / 1e9);
	tool_buf_free(&cc.src);
	tool_buf_free(&cc.dst);
	tool_buf_free(&cc.ack);
	perf_cq_close(&cc.cq);
	tool_host_close(&host);
	if (st.mismatches)
		return TOOL_EXIT_VERIFY;
	if (!st.connections)
		return TOOL_EXIT_CONNECT;
	if (st.unknown || st.posted != st.completed ||
	    !(st.ops[OP_SEND] + st.ops[OP_WRITE] + st.ops[OP_READ]))
		return TOOL_EXIT_FAIL;
	return TOOL_EXIT_OK;
}

/* ------------------------------------------------------------------ */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ndkstress -s [-b ADDR] [-p PORT] [-I IF]       (server)\n"
		"       ndkstress [options] HOST[:PORT]                (client)\n"
		"Mixed Sends, Writes and Reads with every byte and completion\n"
		"checked, connecting again whenever a connection ends.\n"
		"  -s, --server           serve every client, each on a thread\n"
		"  -b, --bind ADDR        server: listen on ADDR (0.0.0.0: every\n"
		"                         interface); client: connect from ADDR\n"
		"  -p, --port PORT        port (%u)\n"
		"  -I, --interface IF     only this interface's adapter\n"
		"  -D, --duration SECS    how long the client runs (10)\n"
		"  -S, --size BYTES       largest Write or Read (4m; Sends at\n"
		"                         most 1m)\n"
		"  -c, --connections N    stop after N connections (0: none)\n"
		"  -j, --json             the summary as JSON\n"
		"  -h, --help             this help\n"
		"      --version          the version\n"
		"Exit status: 0 clean, 1 a request lost or completed twice, 2\n"
		"usage, 3 never connected, 4 wrong bytes (docs/tools.md).\n",
		STRESS_PORT);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "server", no_argument, NULL, 's' },
		{ "bind", required_argument, NULL, 'b' },
		{ "port", required_argument, NULL, 'p' },
		{ "interface", required_argument, NULL, 'I' },
		{ "duration", required_argument, NULL, 'D' },
		{ "size", required_argument, NULL, 'S' },
		{ "connections", required_argument, NULL, 'c' },
		{ "json", no_argument, NULL, 'j' },
		TOOL_LONG_COMMON,
		{ NULL, 0, NULL, 0 },
	};
	const char *bind_addr = NULL;
	char ifname[IF_NAMESIZE];
	uint16_t port = STRESS_PORT;
	int c;

	tool_prog = "ndkstress";
	tool_catch_signals();
	while ((c = getopt_long(argc, argv, "sb:p:I:D:S:c:jh", longopts,
				NULL)) != -1) {
		switch (c) {
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
		case 'D':
			opt.seconds = tool_arg_seconds("-D", optarg, 0, 1e7);
			break;
		case 'S':
			opt.max_size = (size_t)tool_arg_size("-S", optarg, 1,
							     MAX_RDMA);
			break;
		case 'c':
			opt.max_connections =
				tool_arg_count("-c", optarg, 0, UINT64_MAX);
			break;
		case 'j':
			opt.json = true;
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
	if (opt.server || bind_addr) {
		tool_arg_addr("-b", bind_addr ? bind_addr : "0.0.0.0",
			      opt.server ? port : 0, &opt.bind);
		opt.have_bind = true;
	}
	if (opt.server)
		return server_main();
	tool_arg_addr("HOST", argv[optind], port, &opt.addr);
	return client_main();
}
