/* SPDX-License-Identifier: MIT */
/*
 * ndkperf: latency, bandwidth, message rate and connection setup of
 * libndk, through the public NDKPI only.
 *
 *   server: ndkperf [-b ADDR] [-p PORT]
 *   client: ndkperf -t TEST [-s SIZE | -A] [-n ITERS] ... HOST
 *
 * Each measurement is one connection. The client's private data says what
 * to run (struct perf_hello); the server's says where its buffer is
 * (struct perf_reply). Latency tests ping-pong; RDMA Write latency spins
 * on the last byte of the target buffer, as ndrpingpong and ib_write_lat
 * do, so it relies on in-order placement; RDMA Read never involves the
 * target application. Output columns follow fi_pingpong.
 *
 * -V checks the data: each side fills what it sends with a pattern and
 * checks what it receives or reads (the server checks Sends and Writes
 * that reach it and ends the session on a mismatch, which the client sees
 * as a disconnect). The figures of such a run include the checks.
 */
#include <endian.h>
#include <errno.h>
#include <stddef.h>
#include <getopt.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>
#include "perfutil.h"

#define PERF_MAGIC	"NDKPERF1"
#define PERF_PORT	18515
#define PERF_F_EVENTS	1u
#define PERF_F_MEM_ONLY 2u /* write_lat: spin on memory only */
#define PERF_F_VERIFY	4u /* -V: patterns sent, received data checked */
#define PERF_F_INLINE	8u /* Sends that fit go inline */
#define CTX_SEND	((PVOID)1)
#define CTX_RECV	((PVOID)2)
#define CTX_RDMA	((PVOID)3)
#define RECV_CREDITS	64u /* receives the server keeps posted */
#define MAX_SIZE	(4u << 20)
/* Pattern seeds of -V (send_lat and write_lat use the iteration). */
#define SEED_SEND_BW  0x53454e44ull
#define SEED_WRITE_BW 0x57524954ull
#define SEED_READ     0x52454144ull
#define SEED_ANSWER   (1ull << 32) /* write_lat: the server's answer */

enum perf_test {
	T_SEND_LAT,
	T_SEND_BW,
	T_WRITE_LAT,
	T_WRITE_BW,
	T_READ_LAT,
	T_READ_BW,
	T_MSG_RATE,
	T_CONN,
	T_HOLD,
	T_COUNT
};

static const char *const test_names[T_COUNT] = {
	[T_SEND_LAT] = "send_lat",   [T_SEND_BW] = "send_bw",
	[T_WRITE_LAT] = "write_lat", [T_WRITE_BW] = "write_bw",
	[T_READ_LAT] = "read_lat",   [T_READ_BW] = "read_bw",
	[T_MSG_RATE] = "msg_rate",   [T_CONN] = "conn",
	[T_HOLD] = "hold",
};

/* Client -> server, as connect private data; little-endian fields. */
struct perf_hello {
	char magic[8];
	uint32_t test;
	uint32_t flags;
	uint64_t size;
	uint64_t iters;
	uint32_t window;
	uint32_t token; /* client buffer (write_lat) */
	uint64_t addr;
	uint8_t pad[16]; /* 64 bytes: the private data size measured */
};
/* What a server needs of a hello: IB and RoCE connect with 56 bytes of
 * private data at most (docs/verbs.md, Private data), so a client sends
 * the padding only as far as its adapter's MaxCallerData reaches. */
#define PERF_HELLO_MIN offsetof(struct perf_hello, pad)
_Static_assert(sizeof(struct perf_hello) == 64, "hello is 64 bytes");

/* Server -> client, as accept private data. */
struct perf_reply {
	char magic[8];
	uint64_t addr;
	uint64_t len;
	uint32_t token;
	uint32_t credits;
};

struct perf_opts {
	enum perf_test test;
	size_t size;
	bool all_sizes;
	uint64_t iters;
	unsigned int window;
	unsigned int qps;
	unsigned int threads;
	bool events;
	bool mem_only; /* -m: write_lat never polls a CQ while it spins */
	bool defer; /* -B: bursts posted with NDK_OP_FLAG_DEFER */
	bool inline_sends; /* -I: Sends that fit with NDK_OP_FLAG_INLINE */
	bool verify; /* -V */
	bool json;
	unsigned int hold_seconds;
	struct sockaddr_storage addr;
	bool have_host;
};

static struct perf_opts opt = {
	.test = T_SEND_LAT,
	.iters = 0,
	.window = 64,
	.qps = 1,
	.threads = 1,
	.hold_seconds = 2,
};

static struct tool_host host;

/* ------------------------------------------------------------------ */
/* Output                                                             */

struct perf_row {
	size_t bytes;
	uint64_t iters;
	uint64_t total;
	double seconds;
	double usec_per_xfer;
	double p50_usec;
	double mean_usec; /* latency tests: mean of the steady state */
	double extra; /* hold: bytes of memory per connection */
	/* Data tests, the whole client process over the run: CPU seconds,
	 * and how often a thread blocked (a polling thread blocks only on a
	 * contended lock or when it yields to a sleeper). */
	double cpu_sec;
	uint64_t vol_switches;
};

static struct perf_row rows[64];
static unsigned int nrows;

static const char *human(uint64_t v, char *buf, size_t len)
{
	if (v >= 10000000000ull)
		snprintf(buf, len, "%llug",
			 (unsigned long long)(v / 1000000000));
	else if (v >= 10000000)
		snprintf(buf, len, "%llum", (unsigned long long)(v / 1000000));
	else if (v >= 10000)
		snprintf(buf, len, "%lluk", (unsigned long long)(v / 1000));
	else
		snprintf(buf, len, "%llu", (unsigned long long)v);
	return buf;
}

static void print_header(void)
{
	if (opt.json)
		return;
	printf("%-10s %-8s %-8s %-9s %10s %10s %11s %9s\n", "bytes", "iters",
	       "total", "time", "MB/sec", "usec/xfer", "Mxfers/sec",
	       "p50 usec");
}

static void report(const struct perf_row *r)
{
	char a[32], b[32], c[32];

	if (nrows < sizeof(rows) / sizeof(rows[0]))
		rows[nrows++] = *r;
	if (opt.json)
		return;
	printf("%-10s %-8s %-8s %8.2fs %10.2f %10.2f %11.4f %9.2f\n",
	       human(r->bytes, a, sizeof(a)), human(r->iters, b, sizeof(b)),
	       human(r->total, c, sizeof(c)), r->seconds,
	       r->seconds > 0 ? (double)r->total / r->seconds / 1e6 : 0,
	       r->usec_per_xfer,
	       r->usec_per_xfer > 0 ? 1.0 / r->usec_per_xfer : 0, r->p50_usec);
	fflush(stdout);
}

static bool is_latency(enum perf_test t)
{
	return t == T_SEND_LAT || t == T_WRITE_LAT || t == T_READ_LAT;
}

static void print_json(void)
{
	unsigned int i;

	printf("{\"tool\":\"ndkperf\",\"test\":\"%s\",\"mode\":\"%s\","
	       "\"qps\":%u,\"threads\":%u,\"results\":[",
	       test_names[opt.test], opt.events ? "event" : "poll", opt.qps,
	       opt.threads);
	for (i = 0; i < nrows; i++) {
		const struct perf_row *r = &rows[i];

		printf("%s{\"bytes\":%zu,\"iters\":%llu,\"total_bytes\":%llu,"
		       "\"seconds\":%.6f,\"mb_per_sec\":%.3f,"
		       "\"usec_per_xfer\":%.3f,\"mxfers_per_sec\":%.5f,"
		       "\"p50_usec\":%.3f",
		       i ? "," : "", r->bytes, (unsigned long long)r->iters,
		       (unsigned long long)r->total, r->seconds,
		       r->seconds > 0 ? (double)r->total / r->seconds / 1e6 : 0,
		       r->usec_per_xfer,
		       r->usec_per_xfer > 0 ? 1.0 / r->usec_per_xfer : 0,
		       r->p50_usec);
		if (is_latency(opt.test))
			printf(",\"mean_usec\":%.3f", r->mean_usec);
		if (opt.test == T_HOLD)
			printf(",\"bytes_per_connection\":%.0f", r->extra);
		else if (opt.test != T_CONN)
			printf(",\"cpu_sec\":%.3f,\"vol_switches\":%llu",
			       r->cpu_sec, (unsigned long long)r->vol_switches);
		printf("}");
	}
	printf("]}\n");
}

/* Long runs show how far they got, on a terminal only. */
struct progress {
	uint64_t next_ns;
	uint64_t start_ns;
	bool shown;
};

static void progress(struct progress *p, uint64_t done, uint64_t total)
{
	uint64_t now;

	if (!isatty(2) || opt.json)
		return;
	now = tool_now_ns();
	if (!p->start_ns) {
		p->start_ns = now;
		p->next_ns = now + 2000000000ull;
		return;
	}
	if (now < p->next_ns)
		return;
	p->next_ns = now + 1000000000ull;
	p->shown = true;
	fprintf(stderr, "\r%s: %3u%%", test_names[opt.test],
		(unsigned int)(total ? done * 100 / total : 0));
}

static void progress_end(struct progress *p)
{
	if (p->shown)
		fprintf(stderr, "\r%20s\r", "");
}

/* ------------------------------------------------------------------ */
/* Work requests                                                      */

/*
 * Dies on a failed post, except when the connection is gone: then false,
 * and the disconnect event ends the run (reap returns false).
 */
static bool post_ok(const char *what, NTSTATUS status)
{
	if (status == STATUS_CONNECTION_INVALID ||
	    status == STATUS_CONNECTION_ABORTED ||
	    status == STATUS_CONNECTION_RESET ||
	    status == STATUS_CONNECTION_DISCONNECTED)
		return false;
	tool_check(what, status);
	return true;
}

static bool post_recv(NDK_QP *qp, struct tool_buf *b, size_t off, size_t len)
{
	NDK_SGE sge = { .VirtualAddress = b->mem + off,
			.Length = (ULONG)len,
			.MemoryRegionToken = b->ltok };

	return post_ok("NdkReceive", qp->Dispatch->NdkReceive(
					     qp, CTX_RECV, &sge, len ? 1 : 0));
}

static bool post_send(NDK_QP *qp, struct tool_buf *b, size_t off, size_t len,
		      ULONG flags)
{
	NDK_SGE sge = { .VirtualAddress = b->mem + off,
			.Length = (ULONG)len,
			.MemoryRegionToken = b->ltok };

	return post_ok("NdkSend", qp->Dispatch->NdkSend(qp, CTX_SEND, &sge,
							len ? 1 : 0, flags));
}

/* -I: a Send no larger than the adapter's inline limit goes inline, as
 * perftest's do by default. */
static ULONG inline_flag(bool on, size_t len)
{
	return on && len && len <= host.info.MaxInlineDataSize
		       ? NDK_OP_FLAG_INLINE
		       : 0;
}

static bool post_rdma(NDK_QP *qp, bool write, struct tool_buf *b, size_t off,
		      size_t len, uint64_t raddr, UINT32 rtok, ULONG flags)
{
	NDK_SGE sge = { .VirtualAddress = b->mem + off,
			.Length = (ULONG)len,
			.MemoryRegionToken = b->ltok };

	if (write)
		return post_ok("NdkWrite",
			       qp->Dispatch->NdkWrite(qp, CTX_RDMA, &sge, 1,
						      raddr, rtok, flags));
	return post_ok("NdkRead", qp->Dispatch->NdkRead(qp, CTX_RDMA, &sge, 1,
							raddr, rtok, flags));
}

/* Counts completions by kind until want_recv receives arrived. */
struct perf_counts {
	uint64_t send, recv, rdma;
	uint64_t recv_bytes;
	uint64_t errors; /* failed results (a server's CQ returns them) */
	NTSTATUS first_error;
};

static void count_results(const NDK_RESULT *res, ULONG got,
			  struct perf_counts *n)
{
	ULONG i;

	for (i = 0; i < got; i++) {
		if (res[i].Status != STATUS_SUCCESS && !n->errors++)
			n->first_error = res[i].Status;
		if (res[i].RequestContext == CTX_SEND)
			n->send++;
		else if (res[i].RequestContext == CTX_RECV)
			n->recv++, n->recv_bytes += res[i].BytesTransferred;
		else
			n->rdma++;
	}
}

/* False once the CQ is abandoned (the peer disconnected) or a request
 * failed. */
static bool reap(struct perf_cq *cq, struct perf_counts *n)
{
	NDK_RESULT res[64];
	ULONG got;

	got = perf_cq_wait(cq, res, 64, 0);
	if (!got)
		return false;
	count_results(res, got, n);
	return !n->errors;
}

/* ------------------------------------------------------------------ */
/* Server                                                             */

struct session {
	NDK_CONNECTOR *conn;
	struct perf_hello hello;
	struct perf_cq cq;
};

/* The client went away (killed, or its run failed): end the session
 * instead of waiting on receives that will never complete. */
static VOID session_disconnected(PVOID ctx)
{
	struct session *s = ctx;

	perf_cq_abandon(&s->cq);
}

/* How long a server waits for its client to disconnect at the end. */
#define CLIENT_CLOSE_WAIT_NS (10 * 1000000000ull)

/* How long a write-latency side spins for the peer's Write to land
 * before it takes the peer for gone. */
#define TAG_WAIT_NS (10 * 1000000000ull)

/*
 * Spins until the last byte of the peer's RDMA Write carries tag, as
 * ib_write_lat does: no completion tells the target that a Write landed.
 * With poll_cq it also polls its CQ on every turn (results counted in n):
 * a software provider receives on a thread that busy-polls a CQ of the
 * QP, so the Write lands without waking the provider's own thread (a
 * spin on memory alone gives the provider no CPU; -m measures that).
 * False if nothing landed in TAG_WAIT_NS or the peer disconnected.
 */
static bool tag_wait(volatile uint8_t *p, uint8_t tag, struct perf_cq *cq,
		     struct perf_counts *n, bool poll_cq)
{
	uint64_t deadline = 0, now;
	unsigned int spins = 0;
	NDK_RESULT res[8];
	ULONG got;

	while (*p != tag) {
		if (poll_cq) {
			got = cq->cq->Dispatch->NdkGetCqResults(cq->cq, res, 8);
			count_results(res, got, n);
		}
		if (++spins & 4095)
			continue;
		if (atomic_load_explicit(&cq->abandoned, memory_order_relaxed))
			return false;
		now = tool_now_ns();
		if (!deadline)
			deadline = now + TAG_WAIT_NS;
		else if (now > deadline)
			return false;
	}
	return true;
}

/*
 * -V of write_lat: checks what a peer's RDMA Write placed once its tag
 * byte arrived. Nothing but the tag orders those bytes (as for tag_wait),
 * so tests/tools/tsan.supp names this function too; not inlined, so that
 * its frame is there to match.
 */
static __attribute__((noinline)) size_t
placed_check(const uint8_t *p, size_t len, uint64_t seed, const char *what)
{
	return perf_check(p, len, seed, what);
}

static uint8_t tag_of(uint64_t i)
{
	return (uint8_t)(i % 255 + 1);
}

static void *server_session(void *arg)
{
	struct session *s = arg;
	const struct perf_hello *h = &s->hello;
	size_t size = (size_t)le64toh(h->size);
	uint64_t iters = le64toh(h->iters), i, credit_every;
	unsigned int window = le32toh(h->window);
	struct perf_reply reply = { .magic = PERF_MAGIC };
	struct perf_counts n = { 0 };
	uint64_t sends = 0, rdmas = 0; /* posted, to wait for at the end */
	uint64_t deadline;
	NDK_RESULT res[64];
	struct tool_wait w;
	struct perf_cq *cq = &s->cq;
	struct tool_buf buf;
	NDK_QP *qp;
	ULONG depth = MAX(window, RECV_CREDITS) + 16;
	enum perf_test test = le32toh(h->test);
	uint32_t flags = le32toh(h->flags);
	bool verify = flags & PERF_F_VERIFY;
	uint64_t checks = 0;
	size_t half = MAX(size, 1), slot;
	char what[64];

	perf_cq_create(&host, cq, 4 * depth, flags & PERF_F_EVENTS);
	cq->errors_ok = true; /* a failed session ends, not the server */
	qp = perf_qp_create(&host, cq, depth);
	/*
	 * Receives land side by side so a window of Sends can be in flight.
	 * Otherwise the first half takes what comes in and the second is
	 * what goes out, so no buffer is both a source and a target.
	 */
	tool_buf_alloc(&host, &buf,
		       test == T_SEND_BW || test == T_MSG_RATE
			       ? MAX(size, 1) * RECV_CREDITS
			       : 2 * MAX(size, 1),
		       TOOL_MR_ALL_ACCESS);
	if (verify && (test == T_READ_LAT || test == T_READ_BW))
		perf_fill(buf.mem, size, SEED_READ);
	for (i = 0; i < RECV_CREDITS; i++)
		post_recv(qp, &buf,
			  test == T_SEND_BW || test == T_MSG_RATE ? i * size
								  : 0,
			  size);
	reply.addr = htole64((uint64_t)(uintptr_t)buf.mem);
	reply.len = htole64(buf.len);
	reply.token = htole32(buf.rtok);
	reply.credits = htole32(RECV_CREDITS);
	tool_wait_init(&w);
	if (tool_wait_result(&w,
			     s->conn->Dispatch->NdkAccept(
				     s->conn, qp, host.info.MaxInboundReadLimit,
				     host.info.MaxOutboundReadLimit, &reply,
				     sizeof(reply), session_disconnected, s,
				     tool_wait_done, &w),
			     0) != STATUS_SUCCESS)
		goto out;

	switch (test) {
	case T_SEND_LAT:
		for (i = 0; i < iters; i++) {
			while (n.recv <= i)
				if (!reap(cq, &n))
					goto gone;
			if (verify) {
				/* Echo what came: the client checks it too. */
				snprintf(what, sizeof(what),
					 "send_lat message %llu",
					 (unsigned long long)i);
				if (n.recv_bytes != (i + 1) * size ||
				    perf_check(buf.mem, size, i, what) != size)
					goto bad_data;
				memcpy(buf.mem + half, buf.mem, size);
				checks++;
			}
			if (!post_recv(qp, &buf, 0, size))
				goto gone;
			if (!post_send(
				    qp, &buf, MAX(size, 1), size,
				    inline_flag(flags & PERF_F_INLINE, size)))
				goto gone;
			sends++;
		}
		break;
	case T_SEND_BW:
	case T_MSG_RATE:
		/* A zero-byte credit after every half of the receives. */
		credit_every = RECV_CREDITS / 2;
		for (i = 0; i < iters;) {
			if (!reap(cq, &n))
				goto gone;
			if (verify && n.recv_bytes != n.recv * size) {
				fprintf(stderr,
					"%s: verify: %s: %llu bytes in %llu "
					"messages of %zu\n",
					tool_prog, test_names[test],
					(unsigned long long)n.recv_bytes,
					(unsigned long long)n.recv, size);
				goto bad_data;
			}
			for (; i < n.recv; i++) {
				slot = (i % RECV_CREDITS) * size;
				if (verify) {
					snprintf(what, sizeof(what),
						 "%s message %llu",
						 test_names[test],
						 (unsigned long long)i);
					if (perf_check(buf.mem + slot, size,
						       SEED_SEND_BW,
						       what) != size)
						goto bad_data;
					/* A message that never lands here
					 * must not pass on stale data. */
					memset(buf.mem + slot, 0, size);
					checks++;
				}
				if (!post_recv(qp, &buf, slot, size))
					goto gone;
				if ((i + 1) % credit_every == 0 ||
				    i + 1 == iters) {
					if (!post_send(qp, &buf, 0, 0, 0))
						goto gone;
					sends++;
				}
			}
		}
		break;
	case T_WRITE_LAT:
		for (i = 0; i < iters; i++) {
			if (!tag_wait(buf.mem + size - 1, tag_of(i), cq, &n,
				      !(flags &
					(PERF_F_EVENTS | PERF_F_MEM_ONLY))))
				goto gone;
			if (verify) {
				snprintf(what, sizeof(what),
					 "write_lat Write %llu",
					 (unsigned long long)i);
				if (placed_check(buf.mem, size - 1, i, what) !=
				    size - 1)
					goto bad_data;
				perf_fill(buf.mem + half, size - 1,
					  SEED_ANSWER + i);
				checks++;
			}
			/* The answer carries the tag the client spins on. */
			buf.mem[MAX(size, 1) + size - 1] = tag_of(i);
			/* The previous answer is complete (the last one is
			 * waited for below, as the last Send). */
			while (n.rdma < i)
				if (!reap(cq, &n))
					goto gone;
			if (!post_rdma(qp, true, &buf, MAX(size, 1), size,
				       le64toh(h->addr), le32toh(h->token), 0))
				goto gone;
		}
		rdmas = iters;
		break;
	default:
		/* Writes and Reads need nothing from us: wait for "done". */
		while (n.recv < 1)
			if (!reap(cq, &n))
				goto gone;
		/* The client's last Write is placed before its "done". */
		if (verify && test == T_WRITE_BW) {
			if (perf_check(buf.mem, size, SEED_WRITE_BW,
				       "write_bw target buffer") != size)
				goto bad_data;
			checks++;
		}
		if (!post_send(qp, &buf, 0, 0, 0))
			goto gone;
		sends++;
		break;
	}
	/*
	 * Until our last Send (or Write) is complete. The client has all it
	 * needs once it arrived and may disconnect before our completion:
	 * over a device that flushes it with an error, which no longer
	 * matters here.
	 */
	while ((n.send < sends || n.rdma < rdmas) && reap(cq, &n))
		;
	if (verify)
		fprintf(stderr,
			"%s: verify: %s %zu B: %llu checks, all "
			"byte-exact\n",
			tool_prog, test_names[test], size,
			(unsigned long long)checks);
	/*
	 * The client disconnects first: a disconnect from here could flush
	 * its own last Send before it saw that complete. Its disconnect
	 * event abandons the CQ; a client that never disconnects gets ours
	 * after a while.
	 */
	deadline = tool_now_ns() + CLIENT_CLOSE_WAIT_NS;
	while (perf_cq_wait(cq, res, 64, deadline))
		;
	tool_wait_init(&w);
	tool_wait_result(
		&w,
		s->conn->Dispatch->NdkDisconnect(s->conn, tool_wait_done, &w),
		0);
	goto out;
gone:
	if (n.errors)
		fprintf(stderr, "%s: %s session ended early: %s\n", tool_prog,
			test_names[test], NdkStatusName(n.first_error));
	else
		fprintf(stderr,
			"%s: %s session ended early: the client is gone\n",
			tool_prog, test_names[test]);
	goto out;
bad_data:
	/* The client learns it from the disconnect. */
	fprintf(stderr,
		"%s: verify: %s %zu B: data differ after %llu checks, "
		"ending the session\n",
		tool_prog, test_names[test], size, (unsigned long long)checks);
	tool_wait_init(&w);
	tool_wait_result(
		&w,
		s->conn->Dispatch->NdkDisconnect(s->conn, tool_wait_done, &w),
		0);
out:
	TOOL_CLOSE(s->conn);
	TOOL_CLOSE(qp);
	tool_buf_free(&buf);
	perf_cq_close(cq);
	free(s);
	return NULL;
}

/* Connection tests: accept on the engine thread, tear down elsewhere. */
struct reaped {
	NDK_CONNECTOR *conn;
	NDK_QP *qp;
	struct reaped *next;
};

static struct perf_cq conn_cq;
static pthread_mutex_t reap_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t reap_cond = PTHREAD_COND_INITIALIZER;
static struct reaped *reap_list;

static VOID conn_disconnected(PVOID ctx)
{
	struct reaped *r = ctx;

	pthread_mutex_lock(&reap_lock);
	r->next = reap_list;
	reap_list = r;
	pthread_cond_signal(&reap_cond);
	pthread_mutex_unlock(&reap_lock);
}

static void *reaper(void *arg)
{
	struct tool_wait w;
	struct reaped *r;

	for (;;) {
		pthread_mutex_lock(&reap_lock);
		while (!reap_list)
			pthread_cond_wait(&reap_cond, &reap_lock);
		r = reap_list;
		reap_list = r->next;
		pthread_mutex_unlock(&reap_lock);
		tool_wait_init(&w);
		tool_wait_result(&w,
				 r->conn->Dispatch->NdkDisconnect(
					 r->conn, tool_wait_done, &w),
				 0);
		TOOL_CLOSE(r->conn);
		TOOL_CLOSE(r->qp);
		free(r);
	}
	return NULL;
}

static VOID ignore_completion(PVOID ctx, NTSTATUS status)
{
	struct reaped *r = ctx;

	/* A failed accept gets no disconnect event: reap it now. */
	if (status != STATUS_SUCCESS)
		conn_disconnected(r);
}

static struct tool_listener listener;

/* Rejects and closes an incoming connector; never waits, as it runs in
 * the ConnectEvent callback. */
static void refuse(NDK_CONNECTOR *c)
{
	c->Dispatch->NdkReject(c, NULL, 0);
	c->Dispatch->NdkCloseConnector(&c->Header, NULL, NULL);
}

/* ConnectEvent, on the engine thread: connection tests are accepted at
 * once, data sessions get a thread of their own. */
static void server_incoming(void *arg, NDK_CONNECTOR *c)
{
	struct perf_hello h;
	ULONG len = sizeof(h);
	struct session *s;
	struct reaped *r;
	pthread_t t;
	NTSTATUS st;

	memset(&h, 0, sizeof(h));
	if (c->Dispatch->NdkGetConnectionData(c, NULL, NULL, &h, &len) ||
	    len < PERF_HELLO_MIN || memcmp(h.magic, PERF_MAGIC, 8) ||
	    le32toh(h.test) >= T_COUNT) {
		refuse(c);
		return;
	}
	if (le32toh(h.test) == T_CONN || le32toh(h.test) == T_HOLD) {
		r = calloc(1, sizeof(*r));
		if (!r) {
			refuse(c);
			return;
		}
		r->conn = c;
		if (host.pd->Dispatch->NdkCreateQp(host.pd, conn_cq.cq,
						   conn_cq.cq, NULL, 4, 4, 1, 1,
						   0, NULL, NULL, &r->qp)) {
			refuse(c);
			free(r);
			return;
		}
		st = c->Dispatch->NdkAccept(c, r->qp, 0, 0, NULL, 0,
					    conn_disconnected, r,
					    ignore_completion, r);
		if (st != STATUS_PENDING && st != STATUS_SUCCESS)
			conn_disconnected(r);
		return;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		refuse(c);
		return;
	}
	s->conn = c;
	s->hello = h;
	if (pthread_create(&t, NULL, server_session, s)) {
		refuse(c);
		free(s);
		return;
	}
	pthread_detach(t);
}

static int server_main(const struct sockaddr *addr)
{
	char text[64];
	pthread_t t;
	NET_IFINDEX idx = tool_ifindex_of(addr);

	if (!idx) {
		fprintf(stderr, "no interface has address %s\n",
			tool_addr_str(addr, text, sizeof(text)));
		return 2;
	}
	tool_host_open(&host, idx);
	perf_cq_create(&host, &conn_cq, 64, false);
	pthread_create(&t, NULL, reaper, NULL);
	tool_check("NdkListen", tool_listen_direct(host.ad, &listener, addr,
						   server_incoming, NULL));
	fprintf(stderr, "ndkperf: listening on %s\n",
		tool_addr_str(addr, text, sizeof(text)));
	for (;;)
		pause();
	return 0;
}

/* ------------------------------------------------------------------ */
/* Client                                                             */

struct client_conn {
	NDK_CONNECTOR *conn;
	NDK_QP *qp;
	struct perf_cq cq;
	struct tool_buf buf;
	struct perf_reply reply;
	uint64_t connect_ns; /* NdkConnect to CompleteConnect done */
	uint64_t t0;
	struct tool_wait wait; /* the connect, completed in its callback */
};

/*
 * Connect completion, on the engine thread: the connection is completed
 * right here, as an asynchronous NDK consumer does, so no thread has to
 * wake up between the Reply and the RTR.
 */
/* The server went away: waits on this connection's CQ return at once. */
static VOID client_disconnected(PVOID ctx)
{
	struct client_conn *cc = ctx;

	perf_cq_abandon(&cc->cq);
}

static VOID client_connected(PVOID ctx, NTSTATUS status)
{
	struct client_conn *cc = ctx;
	/* IB and RoCE report the whole accept area, 196 bytes zero-padded
	 * (docs/verbs.md, Private data): room for any transport's. */
	uint8_t data[256];
	ULONG len = sizeof(data);

	memset(&cc->reply, 0, sizeof(cc->reply));
	if (status == STATUS_SUCCESS)
		status = cc->conn->Dispatch->NdkGetConnectionData(
			cc->conn, NULL, NULL, data, &len);
	if (status == STATUS_SUCCESS)
		memcpy(&cc->reply, data, MIN(len, (ULONG)sizeof(cc->reply)));
	if (status == STATUS_SUCCESS)
		status = cc->conn->Dispatch->NdkCompleteConnect(
			cc->conn, client_disconnected, cc, NULL, NULL);
	cc->connect_ns = tool_now_ns() - cc->t0;
	tool_wait_done(&cc->wait, status);
}

static NTSTATUS client_connect(struct client_conn *cc, enum perf_test test,
			       size_t size, uint64_t iters, bool data)
{
	struct perf_hello h = { .magic = PERF_MAGIC };
	struct sockaddr_storage src;
	NTSTATUS st;
	ULONG depth = MAX(opt.window, RECV_CREDITS) + 16;

	if (data) {
		perf_cq_create(&host, &cc->cq, 4 * depth, opt.events);
		cc->qp = perf_qp_create(&host, &cc->cq, depth);
		/* write_lat: the first half goes out, the second is where
		 * the server writes back. */
		tool_buf_alloc(&host, &cc->buf, 2 * MAX(size, 1),
			       TOOL_MR_ALL_ACCESS);
	} else {
		tool_check("NdkCreateQp",
			   host.pd->Dispatch->NdkCreateQp(
				   host.pd, conn_cq.cq, conn_cq.cq, NULL, 4, 4,
				   1, 1, 0, NULL, NULL, &cc->qp));
	}
	tool_check("NdkCreateConnector",
		   host.ad->Dispatch->NdkCreateConnector(host.ad, NULL, NULL,
							 &cc->conn));
	h.test = htole32(test);
	h.flags = htole32((opt.events ? PERF_F_EVENTS : 0) |
			  (opt.mem_only ? PERF_F_MEM_ONLY : 0) |
			  (opt.inline_sends ? PERF_F_INLINE : 0) |
			  (opt.verify ? PERF_F_VERIFY : 0));
	h.size = htole64(size);
	h.iters = htole64(iters);
	h.window = htole32(opt.window);
	if (data) {
		h.addr = htole64(
			(uint64_t)(uintptr_t)(cc->buf.mem + MAX(size, 1)));
		h.token = htole32(cc->buf.rtok);
	}
	tool_route_source((const struct sockaddr *)&opt.addr, &src);
	tool_wait_init(&cc->wait);
	cc->t0 = tool_now_ns();
	st = cc->conn->Dispatch->NdkConnect(
		cc->conn, cc->qp, (PSOCKADDR)&src,
		tool_addr_len((struct sockaddr *)&src), (PSOCKADDR)&opt.addr,
		tool_addr_len((struct sockaddr *)&opt.addr),
		host.info.MaxInboundReadLimit, host.info.MaxOutboundReadLimit,
		&h, MIN((ULONG)sizeof(h), host.info.MaxCallerData),
		client_connected, cc);
	if (st != STATUS_PENDING)
		return st;
	return tool_wait_result(&cc->wait, STATUS_PENDING, 0);
}

static void client_close(struct client_conn *cc, bool data)
{
	struct tool_wait w;

	tool_wait_init(&w);
	tool_wait_result(
		&w,
		cc->conn->Dispatch->NdkDisconnect(cc->conn, tool_wait_done, &w),
		0);
	TOOL_CLOSE(cc->conn);
	TOOL_CLOSE(cc->qp);
	if (data) {
		tool_buf_free(&cc->buf);
		perf_cq_close(&cc->cq);
	}
}

static uint64_t default_iters(enum perf_test t, size_t size)
{
	uint64_t bytes_budget = 1ull << 30;
	uint64_t n;

	if (opt.iters)
		return opt.iters;
	switch (t) {
	case T_CONN:
		return 2000;
	case T_HOLD:
		return 1000;
	case T_SEND_LAT:
	case T_WRITE_LAT:
	case T_READ_LAT:
		n = 20000;
		bytes_budget = 256ull << 20;
		break;
	default:
		n = 100000;
		break;
	}
	/* Large transfers: about bytes_budget per measurement. */
	n = MIN(n, MAX(bytes_budget / MAX(size, 1), 100));
	return n;
}

struct run {
	size_t size;
	uint64_t iters;
	double *lat; /* per-iteration microseconds (latency tests) */
	uint64_t start_ns, end_ns; /* the measured part, after connecting */
	uint64_t checks, bad; /* -V: buffers checked, and mismatches */
};

/* -V: checks len bytes of what arrived at p against seed. */
static void run_check(struct run *r, const void *p, size_t len, uint64_t seed,
		      const char *kind, uint64_t i)
{
	char what[64];

	snprintf(what, sizeof(what), "%s %llu", kind, (unsigned long long)i);
	r->checks++;
	if (perf_check(p, len, seed, what) != len)
		r->bad++;
}

/* reap, for a client: a server that disconnects mid-run ends it. */
static void client_reap(struct client_conn *cc, struct perf_counts *n)
{
	if (!reap(&cc->cq, n)) {
		fprintf(stderr, "%s: the server disconnected\n", tool_prog);
		exit(2);
	}
}

static void run_send_lat(struct client_conn *cc, struct run *r)
{
	struct perf_counts n = { 0 };
	struct progress pg = { 0 };
	uint64_t i, t;

	uint8_t *echo = cc->buf.mem + MAX(r->size, 1);

	/* The echo lands in the second half: the Send's source is never a
	 * receive's target (the two would race but for the network). */
	if (opt.verify)
		perf_fill(echo, r->size, ~0ull);
	post_recv(cc->qp, &cc->buf, MAX(r->size, 1), r->size);
	for (i = 0; i < r->iters; i++) {
		if (opt.verify)
			perf_fill(cc->buf.mem, r->size, i);
		t = tool_now_ns();
		post_send(cc->qp, &cc->buf, 0, r->size,
			  inline_flag(opt.inline_sends, r->size));
		while (n.recv <= i)
			client_reap(cc, &n);
		if (opt.verify) {
			/* The server echoes what it received. */
			if (n.recv_bytes != (i + 1) * r->size)
				r->bad++;
			run_check(r, echo, r->size, i, "send_lat echo", i);
			perf_fill(echo, r->size, ~i);
		}
		post_recv(cc->qp, &cc->buf, MAX(r->size, 1), r->size);
		r->lat[i] = (double)(tool_now_ns() - t) / 2000.0;
		progress(&pg, i, r->iters);
	}
	progress_end(&pg);
}

/* -B: every request of a burst but the last is posted with
 * NDK_OP_FLAG_DEFER, so the burst leaves together (NDKPI Deferred Processing
 * Scheme). */
static ULONG burst_flags(uint64_t i, uint64_t end)
{
	return opt.defer && i + 1 < end ? NDK_OP_FLAG_DEFER : 0;
}

static void run_send_bw(struct client_conn *cc, struct run *r)
{
	struct perf_counts n = { 0 };
	struct progress pg = { 0 };
	uint64_t sent = 0, credits, end;
	unsigned int k, cmax = le32toh(cc->reply.credits);
	uint64_t credit_every = cmax / 2;

	/* One buffer for every Send in flight: the server checks them. */
	if (opt.verify)
		perf_fill(cc->buf.mem, r->size, SEED_SEND_BW);
	for (k = 0; k < 8; k++)
		post_recv(cc->qp, &cc->buf, 0, 0);
	while (n.recv * credit_every < r->iters) {
		/* The server's receives bound what may be in flight. */
		credits = n.recv * credit_every + cmax;
		end = MIN(MIN(r->iters, credits), n.send + opt.window);
		for (; sent < end; sent++)
			post_send(
				cc->qp, &cc->buf, 0, r->size,
				burst_flags(sent, end) |
					inline_flag(opt.inline_sends, r->size));
		k = (unsigned int)n.recv;
		client_reap(cc, &n);
		for (; k < n.recv; k++)
			post_recv(cc->qp, &cc->buf, 0, 0);
		progress(&pg, sent, r->iters);
		if (sent == r->iters && n.send == sent &&
		    n.recv * credit_every >= r->iters)
			break;
	}
	progress_end(&pg);
}

static void run_write_lat(struct client_conn *cc, struct run *r)
{
	volatile uint8_t *landing = cc->buf.mem + r->size;
	struct perf_counts n = { 0 };
	struct progress pg = { 0 };
	uint64_t i, t;

	for (i = 0; i < r->iters; i++) {
		if (opt.verify)
			perf_fill(cc->buf.mem, r->size - 1, i);
		t = tool_now_ns();
		cc->buf.mem[r->size - 1] = tag_of(i);
		post_rdma(cc->qp, true, &cc->buf, 0, r->size,
			  le64toh(cc->reply.addr), le32toh(cc->reply.token), 0);
		if (!tag_wait(landing + r->size - 1, tag_of(i), &cc->cq, &n,
			      !opt.events && !opt.mem_only)) {
			fprintf(stderr,
				"%s: write_lat: the server disconnected, or "
				"no Write came in %llu s\n",
				tool_prog,
				(unsigned long long)(TAG_WAIT_NS /
						     1000000000ull));
			exit(2);
		}
		r->lat[i] = (double)(tool_now_ns() - t) / 2000.0;
		if (opt.verify) {
			r->checks++;
			if (placed_check((const uint8_t *)landing, r->size - 1,
					 SEED_ANSWER + i,
					 "write_lat answer") != r->size - 1)
				r->bad++;
		}
		/* Reap our Write's completion without waiting on it. */
		if (cc->cq.cq->Dispatch->NdkGetCqResults(cc->cq.cq,
							 &(NDK_RESULT){ 0 }, 1))
			n.rdma++;
		progress(&pg, i, r->iters);
	}
	while (n.rdma < r->iters)
		client_reap(cc, &n);
	progress_end(&pg);
}

static void run_rdma_bw(struct client_conn *cc, struct run *r, bool write)
{
	struct perf_counts n = { 0 };
	struct progress pg = { 0 };
	uint64_t posted = 0, end;

	while (n.rdma < r->iters) {
		end = MIN(r->iters, n.rdma + opt.window);
		for (; posted < end; posted++)
			post_rdma(cc->qp, write, &cc->buf, 0, r->size,
				  le64toh(cc->reply.addr),
				  le32toh(cc->reply.token),
				  burst_flags(posted, end));
		client_reap(cc, &n);
		progress(&pg, n.rdma, r->iters);
	}
	progress_end(&pg);
}

static void run_read_lat(struct client_conn *cc, struct run *r)
{
	struct perf_counts n = { 0 };
	struct progress pg = { 0 };
	uint64_t i, t;

	for (i = 0; i < r->iters; i++) {
		if (opt.verify)
			perf_fill(cc->buf.mem, r->size, ~SEED_READ);
		t = tool_now_ns();
		post_rdma(cc->qp, false, &cc->buf, 0, r->size,
			  le64toh(cc->reply.addr), le32toh(cc->reply.token), 0);
		while (n.rdma <= i)
			client_reap(cc, &n);
		/* A Read's latency is its round trip (as ib_read_lat). */
		r->lat[i] = (double)(tool_now_ns() - t) / 1000.0;
		if (opt.verify)
			run_check(r, cc->buf.mem, r->size, SEED_READ,
				  "read_lat Read", i);
		progress(&pg, i, r->iters);
	}
	progress_end(&pg);
}

/* Tells the server the RDMA part is over and waits for its answer, so
 * every Write is placed before the clock stops. */
static void finish_rdma(struct client_conn *cc)
{
	struct perf_counts n = { 0 };

	post_recv(cc->qp, &cc->buf, 0, 0);
	post_send(cc->qp, &cc->buf, 0, 0, 0);
	while (n.recv < 1 || n.send < 1)
		client_reap(cc, &n);
}

struct worker {
	pthread_t thread;
	struct run run;
	NTSTATUS status;
};

static void *data_worker(void *arg)
{
	struct worker *wk = arg;
	struct run *r = &wk->run;
	struct client_conn cc;

	memset(&cc, 0, sizeof(cc));
	wk->status = client_connect(&cc, opt.test, r->size, r->iters, true);
	if (wk->status)
		return NULL;
	r->start_ns = tool_now_ns();
	switch (opt.test) {
	case T_SEND_LAT:
		run_send_lat(&cc, r);
		break;
	case T_SEND_BW:
	case T_MSG_RATE:
		run_send_bw(&cc, r);
		break;
	case T_WRITE_LAT:
		run_write_lat(&cc, r);
		break;
	case T_WRITE_BW:
		/* Every Write carries the pattern the server checks. */
		if (opt.verify)
			perf_fill(cc.buf.mem, r->size, SEED_WRITE_BW);
		run_rdma_bw(&cc, r, true);
		finish_rdma(&cc);
		break;
	case T_READ_LAT:
		run_read_lat(&cc, r);
		finish_rdma(&cc);
		break;
	case T_READ_BW:
		if (opt.verify)
			perf_fill(cc.buf.mem, r->size, ~SEED_READ);
		run_rdma_bw(&cc, r, false);
		finish_rdma(&cc);
		if (opt.verify)
			run_check(r, cc.buf.mem, r->size, SEED_READ,
				  "read_bw Read", r->iters);
		break;
	default:
		break;
	}
	r->end_ns = tool_now_ns();
	client_close(&cc, true);
	return NULL;
}

static double tv_sec(const struct timeval *tv)
{
	return (double)tv->tv_sec + (double)tv->tv_usec / 1e6;
}

static int client_data(size_t size)
{
	struct worker *wk = calloc(opt.qps, sizeof(*wk));
	struct perf_row row = { .bytes = size };
	uint64_t iters = default_iters(opt.test, size), span_ns;
	uint64_t first = UINT64_MAX, last = 0, checks = 0, bad = 0;
	struct rusage ru0, ru1;
	unsigned int q;

	if (!wk)
		return 2;
	getrusage(RUSAGE_SELF, &ru0);
	if ((opt.test == T_WRITE_LAT || opt.test == T_READ_LAT ||
	     opt.test == T_WRITE_BW || opt.test == T_READ_BW) &&
	    size == 0)
		size = 1;
	for (q = 0; q < opt.qps; q++) {
		wk[q].run.size = size;
		wk[q].run.iters = iters;
		if (is_latency(opt.test)) {
			wk[q].run.lat = calloc(iters, sizeof(double));
			if (!wk[q].run.lat)
				return 2;
		}
		pthread_create(&wk[q].thread, NULL, data_worker, &wk[q]);
	}
	for (q = 0; q < opt.qps; q++) {
		pthread_join(wk[q].thread, NULL);
		if (wk[q].status)
			tool_die("connect", wk[q].status);
		first = MIN(first, wk[q].run.start_ns);
		last = MAX(last, wk[q].run.end_ns);
		checks += wk[q].run.checks;
		bad += wk[q].run.bad;
	}
	getrusage(RUSAGE_SELF, &ru1);
	row.cpu_sec = tv_sec(&ru1.ru_utime) - tv_sec(&ru0.ru_utime) +
		      tv_sec(&ru1.ru_stime) - tv_sec(&ru0.ru_stime);
	row.vol_switches = (uint64_t)(ru1.ru_nvcsw - ru0.ru_nvcsw);
	/* Several QPs: from the first start to the last end, so QPs that
	 * happen not to overlap do not count as aggregate bandwidth. */
	span_ns = last - first;
	row.bytes = size;
	row.iters = iters * opt.qps;
	row.total = row.iters * size;
	row.seconds = (double)span_ns / 1e9;
	if (is_latency(opt.test)) {
		/* Steady state: the first tenth warms caches and paths. */
		size_t skip = iters / 10;
		double sum = 0;
		uint64_t i;

		for (i = skip; i < iters; i++)
			sum += wk[0].run.lat[i];
		row.usec_per_xfer = sum / (double)(iters - skip);
		row.mean_usec = row.usec_per_xfer;
		row.p50_usec =
			perf_percentile(wk[0].run.lat + skip, iters - skip, 50);
	} else {
		row.usec_per_xfer = (double)span_ns / 1e3 / (double)row.iters;
		row.p50_usec = row.usec_per_xfer;
	}
	report(&row);
	for (q = 0; q < opt.qps; q++)
		free(wk[q].run.lat);
	free(wk);
	if (opt.verify && !opt.json)
		/* The server checked what it received: it had ended the
		 * session, and so this run, on a mismatch. */
		printf("# verify: %s %zu B: %llu client checks, %llu bad; "
		       "the server ends the run on a mismatch\n",
		       test_names[opt.test], size, (unsigned long long)checks,
		       (unsigned long long)bad);
	return bad ? 1 : 0;
}

/* Connection setup: each thread connects, completes and disconnects. */
struct conn_worker {
	pthread_t thread;
	uint64_t n;
	double *lat;
	NTSTATUS status;
};

static void *conn_thread(void *arg)
{
	struct conn_worker *cw = arg;
	struct client_conn cc;
	uint64_t i;

	for (i = 0; i < cw->n; i++) {
		memset(&cc, 0, sizeof(cc));
		cw->status = client_connect(&cc, T_CONN, 0, 0, false);
		if (cw->status)
			return NULL;
		cw->lat[i] = (double)cc.connect_ns / 1000.0;
		client_close(&cc, false);
	}
	return NULL;
}

static int client_conn(void)
{
	uint64_t total = default_iters(T_CONN, 0), t0, i, k = 0;
	struct conn_worker *cw = calloc(opt.threads, sizeof(*cw));
	struct perf_row row = { .bytes = MIN(sizeof(struct perf_hello),
					     host.info.MaxCallerData) };
	double *all = calloc(total, sizeof(double));
	unsigned int t;

	if (!cw || !all)
		return 2;
	t0 = tool_now_ns();
	for (t = 0; t < opt.threads; t++) {
		cw[t].n = total / opt.threads + (t < total % opt.threads);
		cw[t].lat = calloc(cw[t].n + 1, sizeof(double));
		pthread_create(&cw[t].thread, NULL, conn_thread, &cw[t]);
	}
	for (t = 0; t < opt.threads; t++) {
		pthread_join(cw[t].thread, NULL);
		if (cw[t].status)
			tool_die("connect", cw[t].status);
		for (i = 0; i < cw[t].n; i++)
			all[k++] = cw[t].lat[i];
		free(cw[t].lat);
	}
	row.seconds = (double)(tool_now_ns() - t0) / 1e9;
	row.iters = total;
	row.total = 0;
	/* usec/xfer = wall time per connection (the rate's inverse). */
	row.usec_per_xfer = row.seconds * 1e6 / (double)total;
	row.p50_usec = perf_percentile(all, k, 50);
	if (!opt.json)
		printf("# conn: p50 connect+accept+complete %.1f usec, "
		       "%.0f connections/sec (%u threads)\n",
		       row.p50_usec, (double)total / row.seconds, opt.threads);
	report(&row);
	free(all);
	free(cw);
	return 0;
}

static long rss_bytes(void)
{
	long pages = 0, resident = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (!f)
		return 0;
	if (fscanf(f, "%ld %ld", &pages, &resident) != 2)
		resident = 0;
	fclose(f);
	return resident * sysconf(_SC_PAGESIZE);
}

/* Many connections held at once: memory per connection. */
static int client_hold(void)
{
	uint64_t total = default_iters(T_HOLD, 0), i;
	struct client_conn *cc = calloc(total, sizeof(*cc));
	struct perf_row row = { .bytes = 0 };
	long before = rss_bytes(), after;
	uint64_t t0 = tool_now_ns();
	NTSTATUS st;

	if (!cc)
		return 2;
	for (i = 0; i < total; i++) {
		st = client_connect(&cc[i], T_HOLD, 0, 0, false);
		if (st) {
			fprintf(stderr, "connection %llu: %s\n",
				(unsigned long long)i, NdkStatusName(st));
			/* The failed one's QP and connector go too, or the
			 * CQ under them could not close. */
			TOOL_CLOSE(cc[i].conn);
			TOOL_CLOSE(cc[i].qp);
			total = i;
			break;
		}
	}
	row.seconds = (double)(tool_now_ns() - t0) / 1e9;
	after = rss_bytes();
	row.iters = total;
	row.extra = total ? (double)(after - before) / (double)total : 0;
	row.usec_per_xfer = total ? row.seconds * 1e6 / (double)total : 0;
	if (!opt.json)
		printf("# hold: %llu connections, client memory %.1f KiB per "
		       "connection (RSS %ld -> %ld KiB)\n",
		       (unsigned long long)total, row.extra / 1024,
		       before / 1024, after / 1024);
	report(&row);
	sleep(opt.hold_seconds);
	for (i = 0; i < total; i++)
		client_close(&cc[i], false);
	free(cc);
	return total ? 0 : 2;
}

static int client_main(void)
{
	struct sockaddr_storage src;
	NET_IFINDEX idx;
	size_t size;
	int ret = 0;

	if (tool_route_source((struct sockaddr *)&opt.addr, &src) ||
	    !(idx = tool_ifindex_of((struct sockaddr *)&src))) {
		fprintf(stderr, "no route to the server\n");
		return 2;
	}
	tool_host_open(&host, idx);
	perf_cq_create(&host, &conn_cq, 64, false);
	if (!opt.json)
		printf("# ndkperf %s, %s mode, %u QP%s\n", test_names[opt.test],
		       opt.events ? "event" : "polling", opt.qps,
		       opt.qps > 1 ? "s" : "");
	print_header();
	if (opt.test == T_CONN) {
		ret = client_conn();
	} else if (opt.test == T_HOLD) {
		ret = client_hold();
	} else if (opt.all_sizes) {
		for (size = 1; size <= MAX_SIZE && !ret; size <<= 1)
			ret = client_data(size);
	} else {
		ret = client_data(opt.size);
	}
	if (opt.json)
		print_json();
	perf_cq_close(&conn_cq);
	tool_host_close(&host);
	return ret;
}

/* ------------------------------------------------------------------ */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ndkperf [-b ADDR] [-p PORT]                (server)\n"
		"       ndkperf -t TEST [options] HOST[:PORT]     (client)\n"
		"\n"
		"tests: send_lat send_bw write_lat write_bw read_lat read_bw\n"
		"       msg_rate conn hold\n"
		"  -t TEST     what to measure (default send_lat)\n"
		"  -s SIZE     message size in bytes, k/m suffixes (default 8;\n"
		"              64k for bandwidth tests)\n"
		"  -A          every power of two from 1 B to 4 MiB\n"
		"  -n ITERS    iterations (or connections for conn and hold)\n"
		"  -w WINDOW   requests in flight for bandwidth tests (64)\n"
		"  -q QPS      connections in parallel, one thread each (1)\n"
		"  -T THREADS  connecting threads for conn (1)\n"
		"  -D SECONDS  how long hold keeps its connections (2)\n"
		"  -e          wait on CQ notifications instead of polling\n"
		"  -m          write_lat spins on memory only, never polling\n"
		"              its CQ: the provider's own thread receives\n"
		"  -B          bandwidth tests post each burst with\n"
		"              NDK_OP_FLAG_DEFER on all but its last request\n"
		"  -I          Sends up to the adapter's MaxInlineDataSize\n"
		"              go with NDK_OP_FLAG_INLINE\n"
		"  -V          verify the data: patterns sent, what arrives\n"
		"              checked on both sides (slower; a mismatch fails)\n"
		"  -j          JSON output\n"
		"  -b ADDR     server address to listen on (127.0.0.1)\n"
		"  -p PORT     port (%u)\n"
		"  -h          this help\n",
		PERF_PORT);
}

int main(int argc, char **argv)
{
	const char *bind_addr = "127.0.0.1";
	unsigned int port = PERF_PORT;
	bool size_set = false;
	uint64_t v64;
	int c, t;

	tool_prog = "ndkperf";

	signal(SIGPIPE, SIG_IGN);
	while ((c = getopt(argc, argv, "t:s:An:w:q:T:D:emBIVjb:p:h")) != -1) {
		switch (c) {
		case 't':
			for (t = 0; t < T_COUNT; t++)
				if (!strcmp(optarg, test_names[t]))
					break;
			if (t == T_COUNT) {
				fprintf(stderr, "unknown test %s\n", optarg);
				usage(stderr);
				return 1;
			}
			opt.test = (enum perf_test)t;
			break;
		case 's':
			if (tool_parse_size(optarg, &v64) || v64 > SIZE_MAX) {
				fprintf(stderr,
					"ndkperf: -s: a size (4096, 64k, 1m)\n");
				return 2;
			}
			opt.size = (size_t)v64;
			size_set = true;
			break;
		case 'A':
			opt.all_sizes = true;
			break;
		case 'n':
			opt.iters = strtoull(optarg, NULL, 0);
			break;
		case 'w':
			opt.window = (unsigned int)atoi(optarg);
			break;
		case 'q':
			opt.qps = (unsigned int)atoi(optarg);
			break;
		case 'T':
			opt.threads = (unsigned int)atoi(optarg);
			break;
		case 'D':
			opt.hold_seconds = (unsigned int)atoi(optarg);
			break;
		case 'e':
			opt.events = true;
			break;
		case 'm':
			opt.mem_only = true;
			break;
		case 'B':
			opt.defer = true;
			break;
		case 'I':
			opt.inline_sends = true;
			break;
		case 'V':
			opt.verify = true;
			break;
		case 'j':
			opt.json = true;
			break;
		case 'b':
			bind_addr = optarg;
			break;
		case 'p':
			port = (unsigned int)atoi(optarg);
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 1;
		}
	}
	if (!size_set)
		opt.size = opt.test == T_SEND_BW || opt.test == T_WRITE_BW ||
					   opt.test == T_READ_BW
				   ? 65536
				   : 8;
	if (opt.size > MAX_SIZE || !opt.window || !opt.qps || !opt.threads ||
	    opt.window > 1024 || argc - optind > 1) {
		usage(stderr);
		return 1;
	}
	if (opt.test == T_WRITE_LAT && !opt.size && !opt.all_sizes) {
		/* Its target spins on the last byte: there must be one. */
		fprintf(stderr, "write_lat needs -s 1 or more\n");
		return 1;
	}
	if (optind == argc) {
		struct sockaddr_storage a;

		if (tool_parse_addr(bind_addr, (uint16_t)port, &a)) {
			fprintf(stderr, "bad address %s\n", bind_addr);
			return 1;
		}
		return server_main((struct sockaddr *)&a);
	}
	if (tool_parse_addr(argv[optind], (uint16_t)port, &opt.addr)) {
		fprintf(stderr, "bad address %s\n", argv[optind]);
		return 1;
	}
	return client_main();
}
