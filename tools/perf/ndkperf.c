/* SPDX-License-Identifier: MIT */
/*
 * ndkperf: latency, bandwidth, message rate and connection setup of
 * libndk, through the public NDKPI only, as perftest measures RDMA.
 *
 *   server: ndkperf -s [-b ADDR] [-p PORT] [-I IF]
 *   client: ndkperf [-t TEST] [-S SIZE | -A] [-n ITERS | -D SECS] ... HOST
 *
 * The options and exit status are those of docs/tools.md; ndkperf(1) says
 * what each test measures and what each column means.
 *
 * Each measurement is one connection per QP. The client's private data
 * says what to run (struct perf_hello); the server's says where its buffer
 * is (struct perf_reply). One side of a connection is active (it sends,
 * writes or reads, and times it) and the other passive (it receives,
 * echoes, or only waits): the client is active, or, for the reverse half
 * of --bidir, the server. Latency tests ping-pong; RDMA Write latency
 * spins on the last byte of the target buffer, as ndrpingpong and
 * ib_write_lat do, so it relies on in-order placement; RDMA Read never
 * involves the target application.
 *
 * The end of a run is an exchange, so that a run may last a time (-D) or
 * be interrupted and the passive side still knows it is over: the active
 * side sends END (a Send whose length is not the test's size), the
 * passive side answers with STATS (its CPU time and what it counted) once
 * everything before END arrived; write_lat first writes the tag TAG_END,
 * since its passive side spins on memory.
 *
 * --verify checks the data: each side fills what it sends with a pattern
 * and checks what it receives or reads (a passive side checks Sends and
 * Writes that reach it and ends the session on a mismatch, which the
 * active side sees as a disconnect). The figures of such a run include
 * the checks.
 */
#include <endian.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/resource.h>
#include "perfutil.h"
#include "tool_server.h"

#define PERF_MAGIC	"NDKPERF2"
#define STATS_MAGIC	"NDKPSTAT"
#define PERF_PORT	18515
#define PERF_F_EVENTS	1u
#define PERF_F_MEM_ONLY 2u /* write_lat: spin on memory only */
#define PERF_F_VERIFY	4u /* --verify: patterns sent, received data checked */
#define PERF_F_INLINE	8u /* Sends that fit go inline */
#define PERF_F_REVERSE	16u /* --bidir: the server is the active side */
#define CTX_SEND	((PVOID)1)
#define CTX_RECV	((PVOID)2)
#define CTX_RDMA	((PVOID)3)
#define RECV_CREDITS	64u /* receives a passive side keeps posted */
#define ACK_RECVS	8u /* receives an active send_bw side keeps posted */
#define MAX_SIZE	(4u << 20)
#define CTRL_LEN	64u /* room for END and STATS */
/* write_lat tags: 1..254 for iterations, TAG_END for the end. */
#define TAG_END 0xffu
/* Pattern seeds of --verify (send_lat and write_lat use the iteration). */
#define SEED_SEND_BW  0x53454e44ull
#define SEED_WRITE_BW 0x57524954ull
#define SEED_READ     0x52454144ull
#define SEED_ANSWER   (1ull << 32) /* write_lat: the passive side's answer */

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
	uint64_t iters; /* 0: until duration_ms, or until END */
	uint32_t window;
	uint32_t token; /* the client's buffer: write_lat, --bidir */
	uint64_t addr;
	uint32_t duration_ms; /* a reverse run's length */
	uint8_t pad[12]; /* 64 bytes: the private data size measured */
};
/* What a server needs of a hello: IB and RoCE connect with 56 bytes of
 * private data at most (docs/verbs.md, Private data), so a client sends
 * the padding only as far as its adapter's MaxCallerData reaches. */
#define PERF_HELLO_MIN offsetof(struct perf_hello, pad)
_Static_assert(sizeof(struct perf_hello) == 64, "hello is 64 bytes");
_Static_assert(PERF_HELLO_MIN <= 56, "a hello fits IB private data");

/* Server -> client, as accept private data. */
struct perf_reply {
	char magic[8];
	uint64_t addr;
	uint64_t len;
	uint32_t token;
	uint32_t credits;
};

/* The passive side's answer to END; little-endian. */
struct perf_stats {
	char magic[8];
	uint64_t cpu_usec; /* its process, user and system, over the run */
	uint64_t wall_usec; /* the run's span on its side */
	uint64_t iters; /* messages it received */
	uint64_t checks, bad; /* --verify */
};
_Static_assert(sizeof(struct perf_stats) <= CTRL_LEN, "STATS fits");

struct perf_opts {
	enum perf_test test;
	size_t size;
	bool all_sizes;
	uint64_t iters;
	bool iters_set;
	double duration; /* -D: seconds, 0: by iterations */
	double interval; /* -i: seconds, 0: no interval reports */
	unsigned int window;
	unsigned int qps;
	unsigned int threads;
	bool events;
	bool mem_only; /* -m: write_lat never polls a CQ while it spins */
	bool defer; /* -B: bursts posted with NDK_OP_FLAG_DEFER */
	bool inline_sends; /* --inline: Sends that fit go inline */
	bool verify;
	bool bidir;
	bool histogram;
	bool json;
	int verbose;
	bool serve;
	NET_IFINDEX ifindex;
	struct sockaddr_storage addr, bind;
	bool have_bind;
};

static struct perf_opts opt = {
	.test = T_SEND_LAT,
	.window = 64,
	.qps = 1,
	.threads = 1,
};

/* The client's adapter. */
static struct tool_host host;

static bool is_latency(enum perf_test t)
{
	return t == T_SEND_LAT || t == T_WRITE_LAT || t == T_READ_LAT;
}

static bool is_bandwidth(enum perf_test t)
{
	return t == T_SEND_BW || t == T_WRITE_BW || t == T_READ_BW ||
	       t == T_MSG_RATE;
}

static bool is_send(enum perf_test t)
{
	return t == T_SEND_LAT || t == T_SEND_BW || t == T_MSG_RATE;
}

/* A size as exactly as it was given: "64k", "1m", "4097". */
static const char *size_str(uint64_t v, char *buf, size_t len)
{
	if (v && !(v & ((1ull << 30) - 1)))
		snprintf(buf, len, "%llug", (unsigned long long)(v >> 30));
	else if (v && !(v & ((1ull << 20) - 1)))
		snprintf(buf, len, "%llum", (unsigned long long)(v >> 20));
	else if (v && !(v & 1023))
		snprintf(buf, len, "%lluk", (unsigned long long)(v >> 10));
	else
		snprintf(buf, len, "%llu", (unsigned long long)v);
	return buf;
}

static double cpu_seconds(const struct rusage *ru)
{
	return (double)ru->ru_utime.tv_sec +
	       (double)ru->ru_utime.tv_usec / 1e6 +
	       (double)ru->ru_stime.tv_sec + (double)ru->ru_stime.tv_usec / 1e6;
}

/* ------------------------------------------------------------------ */
/* One side of a data connection                                      */

/* Counts completions by kind. */
struct perf_counts {
	uint64_t send, recv, rdma;
	uint64_t recv_bytes; /* all receives */
	ULONG last_recv_bytes;
	uint64_t errors; /* failed results (a server's CQ returns them) */
	NTSTATUS first_error;
};

enum side_err {
	SIDE_OK,
	SIDE_GONE, /* the peer disconnected, or a request failed */
	SIDE_BAD_DATA, /* --verify found other bytes */
};

/*
 * The buffer: A, the data (the passive send_bw side's receive slots);
 * B, the other direction (send_lat's echo, write_lat's answer); then one
 * area each for control messages out and in.
 */
struct side {
	struct tool_host *host;
	NDK_CONNECTOR *conn;
	NDK_QP *qp;
	struct perf_cq cq;
	struct tool_buf buf;
	size_t a_off, b_off, out_off, in_off;
	size_t a_slot; /* stride of A's receive slots */
	enum perf_test test;
	size_t size;
	uint32_t flags;
	unsigned int window;
	uint64_t iters; /* 0: open */
	uint64_t deadline_ns; /* 0: none */
	uint64_t raddr; /* the peer's target buffer */
	UINT32 rtok;
	bool passive;
	struct perf_counts n;
	uint64_t sends_posted;
	atomic_ullong done; /* messages or operations, for interval reports */
	struct perf_samples *lat; /* an active latency side's, in usec */
	uint64_t checks, bad;
	uint64_t start_ns, end_ns;
	struct rusage ru0; /* a passive side: CPU at its start */
	struct perf_stats peer; /* an active side: the passive side's STATS */
	bool got_stats;
	enum side_err err;
};

/* Long runs show how far they got, on a terminal only. */
struct progress {
	uint64_t next_ns;
	uint64_t start_ns;
	bool checked, off;
	bool shown;
};

static TOOL_HOT void progress(struct side *s, struct progress *p, uint64_t done)
{
	uint64_t now;

	/* Once per loop: isatty() is a system call, and this runs between
	 * every two timed operations. */
	if (!p->checked) {
		p->checked = true;
		p->off = s->passive || opt.json || opt.interval > 0 ||
			 opt.serve || !isatty(2);
	}
	if (p->off)
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
	if (s->iters)
		fprintf(stderr, "\r%s: %3u%%", test_names[s->test],
			(unsigned int)(done * 100 / s->iters));
	else if (s->deadline_ns)
		fprintf(stderr, "\r%s: %3u%%", test_names[s->test],
			(unsigned int)(100 -
				       MIN(100,
					   (s->deadline_ns -
					    MIN(now, s->deadline_ns)) *
						   100 /
						   MAX(1,
						       s->deadline_ns -
							       p->start_ns))));
}

static void progress_end(struct progress *p)
{
	if (p->shown)
		fprintf(stderr, "\r%20s\r", "");
}

/* Whether the active side does iteration i: its count, its time, or
 * until a signal. */
static bool more(const struct side *s, uint64_t i)
{
	if (tool_stop)
		return false;
	if (s->iters)
		return i < s->iters;
	return !s->deadline_ns || tool_now_ns() < s->deadline_ns;
}

/* The length of END in the Send tests: anything but the test's size. */
static ULONG end_len(size_t size)
{
	return size ? 0 : 1;
}

/*
 * False on a failed post when the connection is gone: then the disconnect
 * event ends the run (reap returns false). Any other failure is fatal.
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

static TOOL_HOT bool post_recv(struct side *s, size_t off, size_t len)
{
	NDK_SGE sge = { .VirtualAddress = s->buf.mem + off,
			.Length = (ULONG)len,
			.MemoryRegionToken = s->buf.ltok };

	return post_ok("NdkReceive",
		       s->qp->Dispatch->NdkReceive(s->qp, CTX_RECV, &sge,
						   len ? 1 : 0));
}

static TOOL_HOT bool post_send(struct side *s, size_t off, size_t len,
			       ULONG flags)
{
	NDK_SGE sge = { .VirtualAddress = s->buf.mem + off,
			.Length = (ULONG)len,
			.MemoryRegionToken = s->buf.ltok };

	if (!post_ok("NdkSend", s->qp->Dispatch->NdkSend(s->qp, CTX_SEND, &sge,
							 len ? 1 : 0, flags)))
		return false;
	s->sends_posted++;
	return true;
}

/* --inline: a Send no larger than the adapter's inline limit goes inline,
 * as perftest's do by default. */
static ULONG inline_flag(const struct side *s, size_t len)
{
	return (s->flags & PERF_F_INLINE) && len &&
			       len <= s->host->info.MaxInlineDataSize
		       ? NDK_OP_FLAG_INLINE
		       : 0;
}

static TOOL_HOT bool post_rdma(struct side *s, bool write, size_t off,
			       size_t len, uint64_t raddr, ULONG flags)
{
	NDK_SGE sge = { .VirtualAddress = s->buf.mem + off,
			.Length = (ULONG)len,
			.MemoryRegionToken = s->buf.ltok };

	if (write)
		return post_ok("NdkWrite", s->qp->Dispatch->NdkWrite(
						   s->qp, CTX_RDMA, &sge, 1,
						   raddr, s->rtok, flags));
	return post_ok("NdkRead",
		       s->qp->Dispatch->NdkRead(s->qp, CTX_RDMA, &sge, 1, raddr,
						s->rtok, flags));
}

static TOOL_HOT void count_results(const NDK_RESULT *res, ULONG got,
				   struct perf_counts *n)
{
	ULONG i;

	for (i = 0; i < got; i++) {
		if (res[i].Status != STATUS_SUCCESS && !n->errors++)
			n->first_error = res[i].Status;
		if (res[i].RequestContext == CTX_SEND) {
			n->send++;
		} else if (res[i].RequestContext == CTX_RECV) {
			n->recv++;
			n->recv_bytes += res[i].BytesTransferred;
			n->last_recv_bytes = res[i].BytesTransferred;
		} else {
			n->rdma++;
		}
	}
}

/* False once the CQ is abandoned (the peer disconnected) or a request
 * failed; s->err says so. */
static TOOL_HOT bool reap(struct side *s)
{
	/* Sixteen results per call are enough for every test, and the
	 * smaller frame keeps a hop's stack on one page fewer
	 * (docs/performance.md, "Pages per hop"). */
	NDK_RESULT res[16];
	ULONG got;

	got = perf_cq_wait(&s->cq, res, sizeof(res) / sizeof(res[0]), 0);
	if (got)
		count_results(res, got, &s->n);
	if (got && !s->n.errors)
		return true;
	if (!s->err)
		s->err = SIDE_GONE;
	return false;
}

/* How long a side spins for the peer's Write to land before it takes the
 * peer for gone. */
#define TAG_WAIT_NS (10 * 1000000000ull)

static uint8_t tag_of(uint64_t i)
{
	return (uint8_t)(i % 254 + 1);
}

enum tag_result { TAG_GONE, TAG_LANDED, TAG_ENDED };

/*
 * The spin's read of the tag byte, which the provider's thread writes with
 * no order but the byte itself (RDMA memory semantics). Not instrumented
 * under TSan: a suppression by name needs the stacks of both accesses, and
 * TSan's history can lose this read's.
 */
static __attribute__((no_sanitize_thread)) uint8_t
tag_read(const volatile uint8_t *p)
{
	return *p;
}

/*
 * Spins until the last byte of the peer's RDMA Write carries tag, as
 * ib_write_lat does: no completion tells the target that a Write landed.
 * With poll_cq it also polls its CQ on every turn: a software provider
 * receives on a thread that busy-polls a CQ of the QP, so the Write lands
 * without waking the provider's own thread (a spin on memory alone gives
 * the provider no CPU; -m measures that). TAG_ENDED when TAG_END landed
 * instead; TAG_GONE if nothing landed in TAG_WAIT_NS or the peer
 * disconnected.
 */
static TOOL_HOT enum tag_result tag_wait(volatile uint8_t *p, uint8_t tag,
					 struct side *s, bool poll_cq)
{
	uint64_t deadline = 0, now;
	unsigned int spins = 0;
	NDK_RESULT res[8];
	uint8_t v;
	ULONG got;

	while ((v = tag_read(p)) != tag) {
		if (v == TAG_END)
			return TAG_ENDED;
		if (poll_cq) {
			got = s->cq.cq->Dispatch->NdkGetCqResults(s->cq.cq, res,
								  8);
			count_results(res, got, &s->n);
		}
		if (++spins & 4095)
			continue;
		if (atomic_load_explicit(&s->cq.abandoned,
					 memory_order_relaxed))
			return TAG_GONE;
		now = tool_now_ns();
		if (!deadline)
			deadline = now + TAG_WAIT_NS;
		else if (now > deadline)
			return TAG_GONE;
	}
	return TAG_LANDED;
}

/*
 * --verify of write_lat: checks what a peer's RDMA Write placed once its
 * tag byte arrived. Nothing but the tag orders those bytes (as for
 * tag_read), so tests/tools/tsan.supp names this function; not inlined,
 * so that its frame is there to match.
 */
static __attribute__((noinline)) size_t
placed_check(const uint8_t *p, size_t len, uint64_t seed, const char *what)
{
	return perf_check(p, len, seed, what);
}

/* --verify: checks len bytes at p against seed. */
static void side_check(struct side *s, const void *p, size_t len, uint64_t seed,
		       const char *kind, uint64_t i)
{
	char what[64];

	snprintf(what, sizeof(what), "%s %llu", kind, (unsigned long long)i);
	s->checks++;
	if (perf_check(p, len, seed, what) != len)
		s->bad++;
}

static TOOL_HOT void sample(struct side *s, uint64_t t0, double div)
{
	if (!perf_samples_add(s->lat, (double)(tool_now_ns() - t0) / div)) {
		fprintf(stderr, "%s: out of memory\n", tool_prog);
		exit(TOOL_EXIT_FAIL);
	}
}

/* Sizes the buffer for the side's role and registers it. */
static void side_buffers(struct side *s)
{
	size_t unit = MAX(s->size, 1);
	size_t slots =
		s->passive && (s->test == T_SEND_BW || s->test == T_MSG_RATE)
			? RECV_CREDITS
			: 1;

	s->a_slot = unit;
	s->a_off = 0;
	s->b_off = unit * slots;
	s->out_off = s->b_off + MAX(s->size, CTRL_LEN);
	s->in_off = s->out_off + CTRL_LEN;
	tool_buf_alloc(s->host, &s->buf, s->in_off + CTRL_LEN,
		       TOOL_MR_ALL_ACCESS);
}

/* The receives a side has posted before it connects. */
static void side_first_receives(struct side *s)
{
	unsigned int i;

	if (!s->passive) {
		if (s->test == T_SEND_LAT)
			post_recv(s, s->b_off, MAX(s->size, CTRL_LEN));
		else if (s->test == T_SEND_BW || s->test == T_MSG_RATE)
			for (i = 0; i < ACK_RECVS; i++)
				post_recv(s, s->in_off, CTRL_LEN);
		return;
	}
	if (is_send(s->test)) {
		for (i = 0; i < RECV_CREDITS; i++)
			post_recv(s,
				  s->test == T_SEND_LAT
					  ? s->a_off
					  : s->a_off + i * s->a_slot,
				  s->a_slot);
		return;
	}
	/* Writes and Reads: only END comes. */
	for (i = 0; i < 4; i++)
		post_recv(s, s->in_off, CTRL_LEN);
}

/* ------------------------------------------------------------------ */
/* The end of a run                                                   */

/*
 * The active side: END, then the passive side's STATS, which lands in
 * the receive at `landing` (send_lat's echo area; otherwise the control
 * area, where the first receive is posted here unless credits keep
 * receives there).
 */
static bool active_finish(struct side *s, size_t landing, bool post_landing)
{
	uint64_t recvs, sends;
	struct perf_stats st;

	if (post_landing && !post_recv(s, landing, CTRL_LEN))
		return false;
	recvs = s->n.recv;
	if (is_send(s->test)) {
		if (!post_send(s, s->out_off, end_len(s->size), 0))
			return false;
	} else {
		/* Writes and Reads leave no trace on the passive side: END
		 * says how many there were. */
		uint64_t count = htole64(atomic_load(&s->done));

		memcpy(s->buf.mem + s->out_off, &count, sizeof(count));
		if (!post_send(s, s->out_off, sizeof(count), 0))
			return false;
	}
	sends = s->sends_posted;
	for (;;) {
		while (s->n.recv == recvs || s->n.send < sends)
			if (!reap(s))
				return false;
		recvs = s->n.recv;
		if (s->n.last_recv_bytes == sizeof(st))
			break;
		/* A credit of send_bw: its receive goes back. */
		if (!post_recv(s, s->in_off, CTRL_LEN))
			return false;
	}
	s->end_ns = tool_now_ns();
	memcpy(&st, s->buf.mem + landing, sizeof(st));
	if (memcmp(st.magic, STATS_MAGIC, 8)) {
		fprintf(stderr, "%s: %s: the peer's STATS are garbled\n",
			tool_prog, test_names[s->test]);
		s->err = SIDE_GONE;
		return false;
	}
	s->peer.cpu_usec = le64toh(st.cpu_usec);
	s->peer.wall_usec = le64toh(st.wall_usec);
	s->peer.iters = le64toh(st.iters);
	s->peer.checks = le64toh(st.checks);
	s->peer.bad = le64toh(st.bad);
	s->got_stats = true;
	return true;
}

/* The passive side, END received: STATS, and its Send's completion. */
static bool passive_finish(struct side *s, uint64_t iters)
{
	struct perf_stats st = { .magic = STATS_MAGIC };
	enum side_err err = s->err;
	struct rusage ru;

	s->end_ns = tool_now_ns();
	getrusage(RUSAGE_SELF, &ru);
	st.cpu_usec = htole64(
		(uint64_t)((cpu_seconds(&ru) - cpu_seconds(&s->ru0)) * 1e6));
	st.wall_usec = htole64((s->end_ns - s->start_ns) / 1000);
	st.iters = htole64(iters);
	st.checks = htole64(s->checks);
	st.bad = htole64(s->bad);
	memcpy(s->buf.mem + s->out_off, &st, sizeof(st));
	if (!post_send(s, s->out_off, sizeof(st), 0))
		return false;
	/*
	 * The active side has all it needs once STATS arrived and may
	 * disconnect before our completion: over a device that flushes it
	 * with an error, which no longer matters here.
	 */
	while (s->n.send < s->sends_posted && reap(s))
		;
	s->err = err;
	return true;
}

/* ------------------------------------------------------------------ */
/* The tests, one function per role                                   */

/* Send latency, active: a Send, then the echo; half the round trip. */
static TOOL_HOT bool send_lat_active(struct side *s)
{
	struct progress pg = { 0 };
	uint8_t *echo = s->buf.mem + s->b_off;
	uint64_t i, t;

	/* The echo lands in B: the Send's source is never a receive's
	 * target (the two would race but for the network). */
	if (s->flags & PERF_F_VERIFY)
		perf_fill(echo, s->size, ~0ull);
	for (i = 0; more(s, i); i++) {
		if (s->flags & PERF_F_VERIFY)
			perf_fill(s->buf.mem + s->a_off, s->size, i);
		t = tool_now_ns();
		if (!post_send(s, s->a_off, s->size, inline_flag(s, s->size)))
			return false;
		while (s->n.recv <= i)
			if (!reap(s))
				return false;
		/* The echo's completion ends the round trip, as the landing
		 * byte does for write_lat: the next receive is posted after. */
		sample(s, t, 2000.0);
		if (s->flags & PERF_F_VERIFY) {
			/* The passive side echoes what it received. */
			if (s->n.last_recv_bytes != s->size)
				s->bad++;
			side_check(s, echo, s->size, i, "send_lat echo", i);
			perf_fill(echo, s->size, ~i);
		}
		if (!post_recv(s, s->b_off, MAX(s->size, CTRL_LEN)))
			return false;
		atomic_store_explicit(&s->done, i + 1, memory_order_relaxed);
		progress(s, &pg, i);
	}
	progress_end(&pg);
	return active_finish(s, s->b_off, false);
}

/* Send latency, passive: echo each message from B until END. */
static TOOL_HOT bool send_lat_passive(struct side *s)
{
	uint64_t i;
	char what[64];

	for (i = 0;; i++) {
		while (s->n.recv <= i)
			if (!reap(s))
				return false;
		if (s->n.last_recv_bytes != s->size)
			break; /* END */
		if (s->flags & PERF_F_VERIFY) {
			snprintf(what, sizeof(what), "send_lat message %llu",
				 (unsigned long long)i);
			s->checks++;
			if (perf_check(s->buf.mem + s->a_off, s->size, i,
				       what) != s->size) {
				s->err = SIDE_BAD_DATA;
				return false;
			}
		}
		memcpy(s->buf.mem + s->b_off, s->buf.mem + s->a_off, s->size);
		/* The echo first: RECV_CREDITS receives are posted, so the
		 * next message finds one while this one's goes back. */
		if (!post_send(s, s->b_off, s->size, inline_flag(s, s->size)) ||
		    !post_recv(s, s->a_off, s->a_slot))
			return false;
		atomic_store_explicit(&s->done, i + 1, memory_order_relaxed);
	}
	return passive_finish(s, i);
}

/* -B: every request of a burst but the last is posted with
 * NDK_OP_FLAG_DEFER, so the burst leaves together (NDKPI Deferred
 * Processing Scheme). */
static ULONG burst_flags(uint64_t i, uint64_t end)
{
	return opt.defer && i + 1 < end ? NDK_OP_FLAG_DEFER : 0;
}

/*
 * Send bandwidth and message rate, active: a window of Sends, bounded by
 * the passive side's receives; it returns a zero-byte credit after every
 * half of them.
 */
static bool send_bw_active(struct side *s)
{
	struct progress pg = { 0 };
	uint64_t sent = 0, credits, end, k;
	uint64_t credit_every = RECV_CREDITS / 2;

	/* One buffer for every Send in flight: the passive side checks
	 * them. */
	if (s->flags & PERF_F_VERIFY)
		perf_fill(s->buf.mem + s->a_off, s->size, SEED_SEND_BW);
	while (more(s, sent)) {
		credits = s->n.recv * credit_every + RECV_CREDITS;
		end = MIN(credits, s->n.send + s->window);
		if (s->iters)
			end = MIN(end, s->iters);
		for (; sent < end; sent++)
			if (!post_send(s, s->a_off, s->size,
				       burst_flags(sent, end) |
					       inline_flag(s, s->size)))
				return false;
		k = s->n.recv;
		if (!reap(s))
			return false;
		for (; k < s->n.recv; k++)
			if (!post_recv(s, s->in_off, CTRL_LEN))
				return false;
		atomic_store_explicit(&s->done, s->n.send,
				      memory_order_relaxed);
		progress(s, &pg, sent);
	}
	/* Every Send complete, and a receive left for END. */
	while (s->n.send < sent ||
	       sent + 1 > s->n.recv * credit_every + RECV_CREDITS) {
		k = s->n.recv;
		if (!reap(s))
			return false;
		for (; k < s->n.recv; k++)
			if (!post_recv(s, s->in_off, CTRL_LEN))
				return false;
	}
	atomic_store_explicit(&s->done, s->n.send, memory_order_relaxed);
	progress_end(&pg);
	return active_finish(s, s->in_off, false);
}

/* Send bandwidth, passive: each receive checked and posted again, a
 * credit after every half of them, until END. */
static bool send_bw_passive(struct side *s)
{
	uint64_t credit_every = RECV_CREDITS / 2, i = 0, data;
	bool ended = false;
	size_t slot;
	char what[64];

	while (!ended) {
		if (!reap(s))
			return false;
		/* END is the only message of another length, and the last. */
		data = s->n.recv;
		if (s->n.recv_bytes != s->n.recv * s->size) {
			ended = true;
			data--;
		}
		for (; i < data; i++) {
			slot = s->a_off + (i % RECV_CREDITS) * s->a_slot;
			if (s->flags & PERF_F_VERIFY) {
				snprintf(what, sizeof(what), "%s message %llu",
					 test_names[s->test],
					 (unsigned long long)i);
				s->checks++;
				if (perf_check(s->buf.mem + slot, s->size,
					       SEED_SEND_BW, what) != s->size) {
					s->err = SIDE_BAD_DATA;
					return false;
				}
				/* A message that never lands here must not
				 * pass on stale data. */
				memset(s->buf.mem + slot, 0, s->size);
			}
			if (!post_recv(s, slot, s->a_slot))
				return false;
			if ((i + 1) % credit_every == 0 &&
			    !post_send(s, s->out_off, 0, 0))
				return false;
		}
		atomic_store_explicit(&s->done, i, memory_order_relaxed);
	}
	return passive_finish(s, i);
}

/* Write latency, active: a Write whose last byte is the tag, then a spin
 * on the passive side's answer. Half the round trip. */
static TOOL_HOT bool write_lat_active(struct side *s)
{
	volatile uint8_t *landing = s->buf.mem + s->b_off + s->size - 1;
	uint8_t *src = s->buf.mem + s->a_off;
	bool poll = !(s->flags & (PERF_F_EVENTS | PERF_F_MEM_ONLY));
	struct progress pg = { 0 };
	uint64_t i, t;
	NDK_RESULT res;

	for (i = 0; more(s, i); i++) {
		if (s->flags & PERF_F_VERIFY)
			perf_fill(src, s->size - 1, i);
		t = tool_now_ns();
		src[s->size - 1] = tag_of(i);
		if (!post_rdma(s, true, s->a_off, s->size, s->raddr, 0))
			return false;
		if (tag_wait(landing, tag_of(i), s, poll) != TAG_LANDED) {
			fprintf(stderr,
				"%s: write_lat: the peer disconnected, or no "
				"Write came in %llu s\n",
				tool_prog,
				(unsigned long long)(TAG_WAIT_NS /
						     1000000000ull));
			s->err = SIDE_GONE;
			return false;
		}
		sample(s, t, 2000.0);
		if (s->flags & PERF_F_VERIFY) {
			s->checks++;
			if (placed_check(s->buf.mem + s->b_off, s->size - 1,
					 SEED_ANSWER + i,
					 "write_lat answer") != s->size - 1)
				s->bad++;
		}
		/* Reap our Write's completion without waiting on it. */
		if (s->cq.cq->Dispatch->NdkGetCqResults(s->cq.cq, &res, 1))
			count_results(&res, 1, &s->n);
		atomic_store_explicit(&s->done, i + 1, memory_order_relaxed);
		progress(s, &pg, i);
	}
	progress_end(&pg);
	/* The tag that ends the passive side's spin, then END. */
	src[s->size - 1] = TAG_END;
	if (!post_rdma(s, true, s->a_off, s->size, s->raddr, 0))
		return false;
	while (s->n.rdma < i + 1)
		if (!reap(s))
			return false;
	return active_finish(s, s->in_off, true);
}

/* Write latency, passive: answers each Write with one of its own. */
static TOOL_HOT bool write_lat_passive(struct side *s)
{
	uint8_t *a = s->buf.mem + s->a_off, *b = s->buf.mem + s->b_off;
	bool poll = !(s->flags & (PERF_F_EVENTS | PERF_F_MEM_ONLY));
	enum tag_result r;
	uint64_t i;
	char what[64];

	for (i = 0;; i++) {
		r = tag_wait(a + s->size - 1, tag_of(i), s, poll);
		if (r == TAG_GONE) {
			s->err = SIDE_GONE;
			return false;
		}
		if (r == TAG_ENDED)
			break;
		if (s->flags & PERF_F_VERIFY) {
			snprintf(what, sizeof(what), "write_lat Write %llu",
				 (unsigned long long)i);
			s->checks++;
			if (placed_check(a, s->size - 1, i, what) !=
			    s->size - 1) {
				s->err = SIDE_BAD_DATA;
				return false;
			}
			perf_fill(b, s->size - 1, SEED_ANSWER + i);
		}
		/* The answer carries the tag the active side spins on. */
		b[s->size - 1] = tag_of(i);
		/* The previous answer is complete (the last one is waited
		 * for below). */
		while (s->n.rdma < i)
			if (!reap(s))
				return false;
		if (!post_rdma(s, true, s->b_off, s->size, s->raddr, 0))
			return false;
		atomic_store_explicit(&s->done, i + 1, memory_order_relaxed);
	}
	while (s->n.rdma < i || s->n.recv < 1)
		if (!reap(s))
			return false;
	return passive_finish(s, i);
}

/* Read latency, active: one Read at a time; its round trip (as
 * ib_read_lat). */
static TOOL_HOT bool read_lat_active(struct side *s)
{
	struct progress pg = { 0 };
	uint64_t i, t;

	for (i = 0; more(s, i); i++) {
		if (s->flags & PERF_F_VERIFY)
			perf_fill(s->buf.mem + s->a_off, s->size, ~SEED_READ);
		t = tool_now_ns();
		if (!post_rdma(s, false, s->a_off, s->size, s->raddr, 0))
			return false;
		while (s->n.rdma <= i)
			if (!reap(s))
				return false;
		sample(s, t, 1000.0);
		if (s->flags & PERF_F_VERIFY)
			side_check(s, s->buf.mem + s->a_off, s->size, SEED_READ,
				   "read_lat Read", i);
		atomic_store_explicit(&s->done, i + 1, memory_order_relaxed);
		progress(s, &pg, i);
	}
	progress_end(&pg);
	return active_finish(s, s->in_off, true);
}

/* Write and Read bandwidth, active: a window of requests in flight. */
static bool rdma_bw_active(struct side *s, bool write)
{
	struct progress pg = { 0 };
	uint64_t posted = 0, end;

	if (s->flags & PERF_F_VERIFY)
		perf_fill(s->buf.mem + s->a_off, s->size,
			  write ? SEED_WRITE_BW : ~SEED_READ);
	while (more(s, posted)) {
		end = s->n.rdma + s->window;
		if (s->iters)
			end = MIN(end, s->iters);
		for (; posted < end; posted++)
			if (!post_rdma(s, write, s->a_off, s->size, s->raddr,
				       burst_flags(posted, end)))
				return false;
		if (!reap(s))
			return false;
		atomic_store_explicit(&s->done, s->n.rdma,
				      memory_order_relaxed);
		progress(s, &pg, s->n.rdma);
	}
	while (s->n.rdma < posted)
		if (!reap(s))
			return false;
	atomic_store_explicit(&s->done, s->n.rdma, memory_order_relaxed);
	progress_end(&pg);
	/* Every Write is placed before END arrives (RFC 5040 ordering). */
	if (!active_finish(s, s->in_off, true))
		return false;
	if (!write && (s->flags & PERF_F_VERIFY))
		side_check(s, s->buf.mem + s->a_off, s->size, SEED_READ,
			   "read_bw Read", s->n.rdma);
	return true;
}

/* Write and Read, passive: nothing to do but wait for END, which says
 * how many there were. */
static bool rdma_passive(struct side *s)
{
	uint64_t count = 0;

	while (s->n.recv < 1)
		if (!reap(s))
			return false;
	if (s->n.last_recv_bytes == sizeof(count))
		memcpy(&count, s->buf.mem + s->in_off, sizeof(count));
	atomic_store(&s->done, le64toh(count));
	/* The last Write was placed before END. */
	if (s->test == T_WRITE_BW && (s->flags & PERF_F_VERIFY)) {
		s->checks++;
		if (perf_check(s->buf.mem + s->a_off, s->size, SEED_WRITE_BW,
			       "write_bw target buffer") != s->size) {
			s->err = SIDE_BAD_DATA;
			return false;
		}
	}
	return passive_finish(s, le64toh(count));
}

/* What the side does, by test and role; false if the run failed. */
static TOOL_HOT bool side_run(struct side *s)
{
	s->start_ns = tool_now_ns();
	if (s->passive) {
		getrusage(RUSAGE_SELF, &s->ru0);
		switch (s->test) {
		case T_SEND_LAT:
			return send_lat_passive(s);
		case T_SEND_BW:
		case T_MSG_RATE:
			return send_bw_passive(s);
		case T_WRITE_LAT:
			return write_lat_passive(s);
		default:
			return rdma_passive(s);
		}
	}
	switch (s->test) {
	case T_SEND_LAT:
		return send_lat_active(s);
	case T_SEND_BW:
	case T_MSG_RATE:
		return send_bw_active(s);
	case T_WRITE_LAT:
		return write_lat_active(s);
	case T_READ_LAT:
		return read_lat_active(s);
	case T_WRITE_BW:
		return rdma_bw_active(s, true);
	default:
		return rdma_bw_active(s, false);
	}
}

static void side_free(struct side *s)
{
	if (s->qp)
		TOOL_CLOSE(s->qp);
	if (s->buf.mr)
		tool_buf_free(&s->buf);
	if (s->cq.cq)
		perf_cq_close(&s->cq);
	s->qp = NULL;
}

/* The peer went away: waits on this side's CQ return at once. */
static VOID side_disconnected(PVOID ctx)
{
	struct side *s = ctx;

	perf_cq_abandon(&s->cq);
}

/* A CQ, a QP on it and the buffer, for a side of the test. */
static void side_init(struct side *s, struct tool_host *h, bool events)
{
	ULONG depth = MAX(s->window, RECV_CREDITS) + 16;

	s->host = h;
	perf_cq_create(h, &s->cq, 4 * depth, events);
	s->qp = perf_qp_create(h, &s->cq, depth);
	side_buffers(s);
	/* What a Read fetches, the pattern its active side checks: there
	 * before the connection is, since the first Read may come before
	 * the passive side's accept completes. */
	if (s->passive && (s->test == T_READ_LAT || s->test == T_READ_BW) &&
	    (s->flags & PERF_F_VERIFY))
		perf_fill(s->buf.mem + s->a_off, s->size, SEED_READ);
	side_first_receives(s);
}

/* ------------------------------------------------------------------ */
/* Server                                                             */

struct session {
	struct side s;
	struct perf_hello hello;
	struct session *next; /* the live list */
};

/* Live sessions: a signal abandons their CQs, so that they end. */
static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static struct session *live;
static atomic_ullong sessions_done, sessions_failed, conns_done;
static atomic_uint sessions_live, conns_live;

/* How long a server waits for its client to disconnect at the end. */
#define CLIENT_CLOSE_WAIT_NS (10 * 1000000000ull)

static void session_unlist(struct session *se)
{
	struct session **p;

	pthread_mutex_lock(&live_lock);
	for (p = &live; *p && *p != se; p = &(*p)->next)
		;
	if (*p)
		*p = se->next;
	pthread_mutex_unlock(&live_lock);
}

static void session_disconnect(struct side *s)
{
	struct tool_wait w;

	tool_wait_init(&w);
	tool_wait_result(
		&w,
		s->conn->Dispatch->NdkDisconnect(s->conn, tool_wait_done, &w),
		0);
}

static void *server_session(void *arg)
{
	struct session *se = arg;
	struct side *s = &se->s;
	const struct perf_hello *h = &se->hello;
	struct perf_reply reply = { .magic = PERF_MAGIC };
	uint32_t duration_ms = le32toh(h->duration_ms);
	NDK_RESULT res[64];
	struct tool_wait w;
	uint64_t deadline;
	bool ok = false;

	s->test = (enum perf_test)le32toh(h->test);
	s->flags = le32toh(h->flags);
	s->size = (size_t)le64toh(h->size);
	s->iters = le64toh(h->iters);
	s->window = MAX(1, MIN(le32toh(h->window), 1024));
	s->passive = !(s->flags & PERF_F_REVERSE);
	s->raddr = le64toh(h->addr);
	s->rtok = le32toh(h->token);
	side_init(s, s->host, s->flags & PERF_F_EVENTS);
	s->cq.errors_ok = true; /* a failed session ends, not the server */
	reply.addr = htole64((uint64_t)(uintptr_t)(s->buf.mem + s->a_off));
	reply.len = htole64(s->buf.len);
	reply.token = htole32(s->buf.rtok);
	reply.credits = htole32(RECV_CREDITS);
	if (opt.verbose)
		fprintf(stderr, "%s: %s%s %zu B session\n", tool_prog,
			test_names[s->test], s->passive ? "" : " (reverse)",
			s->size);
	tool_wait_init(&w);
	if (tool_wait_result(&w,
			     s->conn->Dispatch->NdkAccept(
				     s->conn, s->qp,
				     s->host->info.MaxInboundReadLimit,
				     s->host->info.MaxOutboundReadLimit, &reply,
				     sizeof(reply), side_disconnected, s,
				     tool_wait_done, &w),
			     0) != STATUS_SUCCESS)
		goto out;
	if (!s->passive && !s->iters && duration_ms)
		s->deadline_ns = tool_now_ns() + duration_ms * 1000000ull;
	ok = side_run(s);
	if (ok && (s->flags & PERF_F_VERIFY) && !s->bad)
		fprintf(stderr,
			"%s: verify: %s %zu B: %llu checks, all byte-exact\n",
			tool_prog, test_names[s->test], s->size,
			(unsigned long long)s->checks);
	if (!ok && s->err == SIDE_BAD_DATA) {
		/* The client learns it from the disconnect. */
		fprintf(stderr,
			"%s: verify: %s %zu B: data differ after %llu checks, "
			"ending the session\n",
			tool_prog, test_names[s->test], s->size,
			(unsigned long long)s->checks);
		session_disconnect(s);
		goto out;
	}
	if (!ok) {
		if (s->n.errors)
			fprintf(stderr, "%s: %s session ended early: %s\n",
				tool_prog, test_names[s->test],
				NdkStatusName(s->n.first_error));
		else
			fprintf(stderr,
				"%s: %s session ended early: the client is "
				"gone\n",
				tool_prog, test_names[s->test]);
		goto out;
	}
	/*
	 * The client disconnects first: a disconnect from here could flush
	 * its own last Send before it saw that complete. Its disconnect
	 * event abandons the CQ; a client that never disconnects gets ours
	 * after a while.
	 */
	deadline = tool_now_ns() + CLIENT_CLOSE_WAIT_NS;
	while (perf_cq_wait(&s->cq, res, 64, deadline))
		;
	session_disconnect(s);
out:
	TOOL_CLOSE(s->conn);
	side_free(s);
	session_unlist(se);
	atomic_fetch_add(ok ? &sessions_done : &sessions_failed, 1);
	free(se);
	atomic_fetch_sub(&sessions_live, 1);
	return NULL;
}

/* Connection tests: accept on the engine thread, tear down elsewhere. */
struct reaped {
	NDK_CONNECTOR *conn;
	NDK_QP *qp;
	struct reaped *next;
};

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
		atomic_fetch_sub(&conns_live, 1);
		atomic_fetch_add(&conns_done, 1);
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

/* Rejects and closes an incoming connector; never waits, as it runs in
 * the ConnectEvent callback. */
static void refuse(NDK_CONNECTOR *c)
{
	c->Dispatch->NdkReject(c, NULL, 0);
	c->Dispatch->NdkCloseConnector(&c->Header, NULL, NULL);
}

/* The CQ of an adapter's connection-test QPs, made on first use. */
static pthread_mutex_t conn_cq_lock = PTHREAD_MUTEX_INITIALIZER;

static struct perf_cq *conn_cq_of(struct tool_host *h)
{
	struct perf_cq *c;

	pthread_mutex_lock(&conn_cq_lock);
	c = h->priv;
	if (!c) {
		c = calloc(1, sizeof(*c));
		if (c) {
			perf_cq_create(h, c, 64, false);
			h->priv = c;
		}
	}
	pthread_mutex_unlock(&conn_cq_lock);
	return c;
}

/* ConnectEvent, on the engine thread, through adapter h: connection tests
 * are accepted at once, data sessions get a thread of their own. */
static void server_incoming(void *arg, struct tool_host *h, NDK_CONNECTOR *c)
{
	struct perf_hello hello;
	ULONG len = sizeof(hello);
	struct perf_cq *cq;
	struct session *se;
	struct reaped *r;
	pthread_t t;
	NTSTATUS st;
	uint32_t test;

	memset(&hello, 0, sizeof(hello));
	if (tool_stop ||
	    c->Dispatch->NdkGetConnectionData(c, NULL, NULL, &hello, &len) ||
	    len < PERF_HELLO_MIN || memcmp(hello.magic, PERF_MAGIC, 8) ||
	    le32toh(hello.test) >= T_COUNT || le64toh(hello.size) > MAX_SIZE) {
		refuse(c);
		return;
	}
	test = le32toh(hello.test);
	if (test == T_CONN || test == T_HOLD) {
		r = calloc(1, sizeof(*r));
		cq = conn_cq_of(h);
		if (!r || !cq) {
			free(r);
			refuse(c);
			return;
		}
		r->conn = c;
		if (h->pd->Dispatch->NdkCreateQp(h->pd, cq->cq, cq->cq, NULL, 4,
						 4, 1, 1, 0, NULL, NULL,
						 &r->qp)) {
			refuse(c);
			free(r);
			return;
		}
		atomic_fetch_add(&conns_live, 1);
		st = c->Dispatch->NdkAccept(c, r->qp, 0, 0, NULL, 0,
					    conn_disconnected, r,
					    ignore_completion, r);
		if (st != STATUS_PENDING && st != STATUS_SUCCESS)
			conn_disconnected(r);
		return;
	}
	se = calloc(1, sizeof(*se));
	if (!se) {
		refuse(c);
		return;
	}
	se->s.conn = c;
	se->s.host = h;
	se->hello = hello;
	atomic_fetch_add(&sessions_live, 1);
	pthread_mutex_lock(&live_lock);
	se->next = live;
	live = se;
	pthread_mutex_unlock(&live_lock);
	if (pthread_create(&t, NULL, server_session, se)) {
		session_unlist(se);
		atomic_fetch_sub(&sessions_live, 1);
		refuse(c);
		free(se);
		return;
	}
	pthread_detach(t);
}

static int server_main(void)
{
	static struct tool_server srv;
	struct session *se;
	char text[128];
	unsigned int i;
	pthread_t t;

	if (tool_server_open(&srv, (struct sockaddr *)&opt.bind, opt.ifindex,
			     server_incoming, NULL))
		return TOOL_EXIT_FAIL;
	pthread_create(&t, NULL, reaper, NULL);
	pthread_detach(t);
	printf("ndkperf: listening on %s\n",
	       tool_server_str(&srv, text, sizeof(text)));
	fflush(stdout);
	while (!tool_stop)
		tool_sleep_ms(100);
	/* No new connections; the sessions still running are ended. */
	tool_server_stop(&srv);
	pthread_mutex_lock(&live_lock);
	for (se = live; se; se = se->next)
		perf_cq_abandon(&se->s.cq);
	pthread_mutex_unlock(&live_lock);
	for (i = 0; i < 100 &&
		    (atomic_load(&sessions_live) || atomic_load(&conns_live));
	     i++)
		tool_sleep_ms(100);
	printf("ndkperf: served %llu session%s (%llu ended early), %llu "
	       "connection%s of conn and hold\n",
	       (unsigned long long)atomic_load(&sessions_done) +
		       atomic_load(&sessions_failed),
	       atomic_load(&sessions_done) + atomic_load(&sessions_failed) == 1
		       ? ""
		       : "s",
	       (unsigned long long)atomic_load(&sessions_failed),
	       (unsigned long long)atomic_load(&conns_done),
	       atomic_load(&conns_done) == 1 ? "" : "s");
	fflush(stdout);
	if (atomic_load(&sessions_live) || atomic_load(&conns_live))
		return TOOL_EXIT_OK; /* exit ends what is left */
	for (i = 0; i < srv.nhosts; i++) {
		struct perf_cq *c = srv.hosts[i]->priv;

		if (c) {
			perf_cq_close(c);
			free(c);
			srv.hosts[i]->priv = NULL;
		}
	}
	tool_server_close(&srv);
	return TOOL_EXIT_OK;
}

/* ------------------------------------------------------------------ */
/* Client: connections                                                */

struct client_conn {
	NDK_CONNECTOR *conn;
	NDK_QP *qp;
	struct side *side; /* NULL for conn and hold */
	struct perf_reply reply;
	uint64_t connect_ns; /* NdkConnect to CompleteConnect done */
	uint64_t t0;
	struct tool_wait wait; /* the connect, completed in its callback */
};

/* conn and hold: their QPs share this CQ. */
static struct perf_cq conn_cq;
static struct sockaddr_storage client_src;

/*
 * Connect completion, on the engine thread: the connection is completed
 * right here, as an asynchronous NDK consumer does, so no thread has to
 * wake up between the Reply and the RTR.
 */
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
			cc->conn, cc->side ? side_disconnected : NULL, cc->side,
			NULL, NULL);
	cc->connect_ns = tool_now_ns() - cc->t0;
	tool_wait_done(&cc->wait, status);
}

/* Connects for test: a data side (its QP and buffer made already), or a
 * bare QP on conn_cq. */
static NTSTATUS client_connect(struct client_conn *cc, enum perf_test test,
			       struct side *s, uint64_t iters)
{
	struct perf_hello h = { .magic = PERF_MAGIC };
	NTSTATUS st;

	cc->side = s;
	if (s) {
		cc->qp = s->qp;
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
	if (s) {
		h.flags = htole32(s->flags);
		h.size = htole64(s->size);
		h.window = htole32(s->window);
		/* write_lat's answers land in B; a reverse side's A is the
		 * server's target. */
		h.addr =
			htole64((uint64_t)(uintptr_t)(s->buf.mem +
						      (s->passive ? s->a_off
								  : s->b_off)));
		h.token = htole32(s->buf.rtok);
		h.duration_ms = htole32((uint32_t)(opt.duration * 1000));
	}
	h.iters = htole64(iters);
	tool_wait_init(&cc->wait);
	cc->t0 = tool_now_ns();
	st = cc->conn->Dispatch->NdkConnect(
		cc->conn, cc->qp, (PSOCKADDR)&client_src,
		tool_addr_len((struct sockaddr *)&client_src),
		(PSOCKADDR)&opt.addr,
		tool_addr_len((struct sockaddr *)&opt.addr),
		host.info.MaxInboundReadLimit, host.info.MaxOutboundReadLimit,
		&h, MIN((ULONG)sizeof(h), host.info.MaxCallerData),
		client_connected, cc);
	if (st != STATUS_PENDING)
		return st;
	return tool_wait_result(&cc->wait, STATUS_PENDING, 0);
}

static void client_close(struct client_conn *cc)
{
	struct tool_wait w;

	tool_wait_init(&w);
	tool_wait_result(
		&w,
		cc->conn->Dispatch->NdkDisconnect(cc->conn, tool_wait_done, &w),
		0);
	TOOL_CLOSE(cc->conn);
	if (cc->side)
		side_free(cc->side);
	else
		TOOL_CLOSE(cc->qp);
}

static uint64_t default_iters(enum perf_test t, size_t size)
{
	uint64_t bytes_budget = 1ull << 30;
	uint64_t n;

	if (opt.iters_set)
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

/* ------------------------------------------------------------------ */
/* Client: results                                                    */

struct perf_interval {
	double start, end; /* seconds since the run began */
	uint64_t iters;
	double mb_per_sec, mxfers_per_sec;
	struct perf_lat_stats lat;
};

struct perf_bucket {
	double lo, hi; /* usec */
	uint64_t count;
};

struct perf_row {
	size_t bytes;
	uint64_t iters, tx_iters, rx_iters;
	uint64_t total;
	double seconds;
	/* CLOCK_MONOTONIC at the ends of the timed run, so that a harness that
	 * pauses the process (bench/slicer) can take its pauses out. */
	uint64_t mono_start_ns, mono_end_ns;
	double usec_per_xfer; /* latency tests: the mean; else wall / xfer */
	bool has_lat;
	struct perf_lat_stats lat;
	uint64_t dropped; /* samples past PERF_SAMPLE_MAX */
	double cpu_sec; /* the client process over the run */
	uint64_t vol_switches;
	bool has_server;
	double server_cpu_sec, server_wall_sec;
	double extra; /* hold: bytes of memory per connection */
	struct perf_bucket *hist;
	size_t nhist;
	struct perf_interval *iv;
	size_t niv;
};

static struct perf_row rows[64];
static unsigned int nrows;

/* Buckets of a quarter octave over sorted samples (-H). */
static void histogram(const double *v, size_t n, struct perf_row *r)
{
	size_t i;
	int k, last = INT32_MIN;

	r->hist = calloc(n ? n : 1, sizeof(*r->hist));
	if (!r->hist)
		return;
	for (i = 0; i < n; i++) {
		k = (int)floor(4.0 * log2(MAX(v[i], 1e-3)));
		if (k != last) {
			r->hist[r->nhist].lo = exp2((double)k / 4.0);
			r->hist[r->nhist].hi = exp2((double)(k + 1) / 4.0);
			r->nhist++;
			last = k;
		}
		r->hist[r->nhist - 1].count++;
	}
}

static double pct_of(double cpu, double wall)
{
	return wall > 0 ? 100.0 * cpu / wall : 0;
}

static const char *mode_name(void)
{
	return opt.events ? "event" : "polling";
}

static void print_header(void)
{
	if (opt.json)
		return;
	if (is_latency(opt.test) || opt.test == T_CONN)
		printf("%-9s %9s %8s %8s %8s %8s %8s %8s %8s %8s %8s %8s\n",
		       "bytes", "iters", "min", "p50", "p90", "p99", "p99.9",
		       "max", "mean", "stdev", "cpu%cli", "cpu%srv");
	else if (opt.test != T_HOLD)
		printf("%-9s %10s %8s %10s %8s %9s %9s %8s %8s\n", "bytes",
		       "iters", "seconds", "MB/s", "Gb/s", "Mmsg/s", "usec/msg",
		       "cpu%cli", "cpu%srv");
}

static void print_cpu(const struct perf_row *r)
{
	printf(" %8.1f", pct_of(r->cpu_sec, r->seconds));
	if (r->has_server)
		printf(" %8.1f\n",
		       pct_of(r->server_cpu_sec, r->server_wall_sec));
	else
		printf(" %8s\n", "-");
}

static void print_interval(const struct perf_interval *iv, size_t bytes)
{
	char sz[32];

	if (opt.json)
		return;
	if (is_latency(opt.test))
		printf("  [%6.2f-%6.2f s] %-6s %9llu iters  p50 %.2f  p99 %.2f  "
		       "mean %.2f  max %.2f usec\n",
		       iv->start, iv->end, size_str(bytes, sz, sizeof(sz)),
		       (unsigned long long)iv->iters, iv->lat.p50, iv->lat.p99,
		       iv->lat.mean, iv->lat.max);
	else
		printf("  [%6.2f-%6.2f s] %-6s %10llu msgs  %10.2f MB/s  %8.3f "
		       "Gb/s  %.4f Mmsg/s\n",
		       iv->start, iv->end, size_str(bytes, sz, sizeof(sz)),
		       (unsigned long long)iv->iters, iv->mb_per_sec,
		       iv->mb_per_sec * 8 / 1000, iv->mxfers_per_sec);
	fflush(stdout);
}

static void print_row(const struct perf_row *r)
{
	char sz[32];
	size_t i;
	uint64_t top = 0;

	if (opt.json)
		return;
	size_str(r->bytes, sz, sizeof(sz));
	if (r->has_lat) {
		printf("%-9s %9llu %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f "
		       "%8.2f",
		       sz, (unsigned long long)r->iters, r->lat.min, r->lat.p50,
		       r->lat.p90, r->lat.p99, r->lat.p999, r->lat.max,
		       r->lat.mean, r->lat.stdev);
		print_cpu(r);
	} else {
		printf("%-9s %10llu %8.3f %10.2f %8.3f %9.4f %9.3f", sz,
		       (unsigned long long)r->iters, r->seconds,
		       r->seconds > 0 ? (double)r->total / r->seconds / 1e6 : 0,
		       r->seconds > 0 ? (double)r->total * 8 / r->seconds / 1e9
				      : 0,
		       r->seconds > 0 ? (double)r->iters / r->seconds / 1e6 : 0,
		       r->usec_per_xfer);
		print_cpu(r);
	}
	if (r->dropped)
		printf("# %llu samples past the first %zu were not kept\n",
		       (unsigned long long)r->dropped, PERF_SAMPLE_MAX);
	for (i = 0; i < r->nhist; i++)
		top = MAX(top, r->hist[i].count);
	for (i = 0; i < r->nhist; i++)
		printf("#  %9.2f - %9.2f usec %10llu%s%.*s\n", r->hist[i].lo,
		       r->hist[i].hi, (unsigned long long)r->hist[i].count,
		       top && r->hist[i].count * 50 / top ? " " : "",
		       (int)(top ? r->hist[i].count * 50 / top : 0),
		       "##################################################");
	fflush(stdout);
}

static void json_lat(struct json *j, const struct perf_lat_stats *l)
{
	json_double(j, "min_usec", l->min, 3);
	json_double(j, "p50_usec", l->p50, 3);
	json_double(j, "p90_usec", l->p90, 3);
	json_double(j, "p99_usec", l->p99, 3);
	json_double(j, "p99_9_usec", l->p999, 3);
	json_double(j, "max_usec", l->max, 3);
	json_double(j, "mean_usec", l->mean, 3);
	json_double(j, "stdev_usec", l->stdev, 3);
}

static void print_json(void)
{
	struct json j;
	unsigned int i;
	size_t k;

	json_init(&j, stdout, true);
	json_begin_object(&j, NULL);
	json_string(&j, "tool", "ndkperf");
	json_string(&j, "test", test_names[opt.test]);
	json_string(&j, "mode", opt.events ? "event" : "poll");
	json_uint(&j, "qps", opt.qps);
	json_uint(&j, "threads", opt.threads);
	json_bool(&j, "bidir", opt.bidir);
	json_bool(&j, "verify", opt.verify);
	if (opt.duration > 0)
		json_double(&j, "duration", opt.duration, 3);
	else
		json_null(&j, "duration");
	json_bool(&j, "interrupted", tool_stop);
	json_begin_array(&j, "results");
	for (i = 0; i < nrows; i++) {
		const struct perf_row *r = &rows[i];

		json_begin_object(&j, NULL);
		json_uint(&j, "bytes", r->bytes);
		json_uint(&j, "iters", r->iters);
		json_uint(&j, "total_bytes", r->total);
		json_double(&j, "seconds", r->seconds, 6);
		if (r->mono_end_ns > r->mono_start_ns) {
			json_uint(&j, "mono_start_ns", r->mono_start_ns);
			json_uint(&j, "mono_end_ns", r->mono_end_ns);
		}
		json_double(&j, "mb_per_sec",
			    r->seconds > 0 ? (double)r->total / r->seconds / 1e6
					   : 0,
			    3);
		json_double(&j, "gbit_per_sec",
			    r->seconds > 0
				    ? (double)r->total * 8 / r->seconds / 1e9
				    : 0,
			    4);
		json_double(&j, "usec_per_xfer", r->usec_per_xfer, 3);
		json_double(&j, "mxfers_per_sec",
			    r->usec_per_xfer > 0 ? 1.0 / r->usec_per_xfer : 0,
			    5);
		if (r->has_lat) {
			json_lat(&j, &r->lat);
			json_uint(&j, "samples", r->lat.n);
		}
		if (opt.bidir) {
			json_uint(&j, "tx_iters", r->tx_iters);
			json_uint(&j, "rx_iters", r->rx_iters);
		}
		if (opt.test == T_HOLD) {
			json_double(&j, "bytes_per_connection", r->extra, 0);
		} else {
			json_double(&j, "cpu_sec", r->cpu_sec, 3);
			json_double(&j, "cpu_percent",
				    pct_of(r->cpu_sec, r->seconds), 1);
			json_uint(&j, "vol_switches", r->vol_switches);
			if (r->has_server) {
				json_double(&j, "server_cpu_sec",
					    r->server_cpu_sec, 3);
				json_double(&j, "server_cpu_percent",
					    pct_of(r->server_cpu_sec,
						   r->server_wall_sec),
					    1);
			}
		}
		if (r->hist) {
			json_begin_array(&j, "histogram");
			for (k = 0; k < r->nhist; k++) {
				json_begin_object(&j, NULL);
				json_double(&j, "lo_usec", r->hist[k].lo, 3);
				json_double(&j, "hi_usec", r->hist[k].hi, 3);
				json_uint(&j, "count", r->hist[k].count);
				json_end_object(&j);
			}
			json_end_array(&j);
		}
		if (opt.interval > 0) {
			json_begin_array(&j, "intervals");
			for (k = 0; k < r->niv; k++) {
				const struct perf_interval *iv = &r->iv[k];

				json_begin_object(&j, NULL);
				json_double(&j, "start", iv->start, 3);
				json_double(&j, "end", iv->end, 3);
				json_uint(&j, "iters", iv->iters);
				json_double(&j, "mb_per_sec", iv->mb_per_sec,
					    3);
				json_double(&j, "mxfers_per_sec",
					    iv->mxfers_per_sec, 5);
				if (is_latency(opt.test) && iv->lat.n)
					json_lat(&j, &iv->lat);
				json_end_object(&j);
			}
			json_end_array(&j);
		}
		json_end_object(&j);
	}
	json_end_array(&j);
	json_end_object(&j);
	json_finish(&j);
}

static void add_row(const struct perf_row *r)
{
	if (nrows < sizeof(rows) / sizeof(rows[0]))
		rows[nrows++] = *r;
	print_row(r);
}

/* ------------------------------------------------------------------ */
/* Client: data tests                                                 */

struct worker {
	pthread_t thread;
	struct side s;
	struct perf_samples *lat;
	bool reverse;
	uint64_t iters;
	NTSTATUS status; /* the connect's */
	bool ok;
	atomic_bool finished;
};

static void *data_worker(void *arg)
{
	struct worker *wk = arg;
	struct side *s = &wk->s;
	struct client_conn cc;

	memset(&cc, 0, sizeof(cc));
	s->passive = wk->reverse;
	s->lat = wk->lat;
	side_init(s, &host, opt.events);
	wk->status = client_connect(&cc, opt.test, s, wk->iters);
	if (wk->status) {
		if (cc.conn)
			TOOL_CLOSE(cc.conn);
		side_free(s);
		atomic_store(&wk->finished, true);
		return NULL;
	}
	s->raddr = le64toh(cc.reply.addr);
	s->rtok = le32toh(cc.reply.token);
	if (opt.duration > 0)
		s->deadline_ns = tool_now_ns() + (uint64_t)(opt.duration * 1e9);
	/* Connected, clock not started: a harness that starts two runs'
	 * timed parts together (bench/slicer) waits for this stop. */
	if (getenv("NDK_BENCH_READY_STOP"))
		raise(SIGSTOP);
	wk->ok = side_run(s);
	if (!wk->ok && s->passive && tool_stop && s->err == SIDE_GONE) {
		/* Interrupted: what arrived so far is the result. */
		wk->ok = true;
		s->end_ns = tool_now_ns();
	}
	if (!wk->ok && s->err == SIDE_BAD_DATA)
		fprintf(stderr, "%s: verify: the server's data differ\n",
			tool_prog);
	else if (!wk->ok)
		fprintf(stderr, "%s: the server disconnected\n", tool_prog);
	client_close(&cc);
	atomic_store(&wk->finished, true);
	return NULL;
}

static uint64_t workers_done(struct worker *wk, unsigned int n, bool reverse)
{
	uint64_t sum = 0;
	unsigned int i;

	for (i = 0; i < n; i++)
		if (wk[i].reverse == reverse)
			sum += atomic_load_explicit(&wk[i].s.done,
						    memory_order_relaxed);
	return sum;
}

/* Latency samples of the forward workers in [from[i], to[i]) into one
 * array (the caller frees it). */
static double *gather(struct worker *wk, unsigned int n, const size_t *from,
		      const size_t *to, size_t *count)
{
	size_t total = 0, k = 0;
	unsigned int i;
	double *v;

	for (i = 0; i < n; i++)
		if (wk[i].lat)
			total += to[i] - from[i];
	v = malloc(MAX(total, 1) * sizeof(*v));
	if (!v) {
		fprintf(stderr, "%s: out of memory\n", tool_prog);
		exit(TOOL_EXIT_FAIL);
	}
	for (i = 0; i < n; i++) {
		if (!wk[i].lat)
			continue;
		perf_samples_copy(wk[i].lat, from[i], to[i], v + k);
		k += to[i] - from[i];
	}
	*count = k;
	return v;
}

/*
 * After a signal the active sides stop on their own; a reverse side waits
 * for a server that does not know: it stops listening here.
 */
static bool workers_finished(struct worker *wk, unsigned int n)
{
	bool all = true;
	unsigned int i;

	for (i = 0; i < n; i++) {
		if (tool_stop && wk[i].reverse)
			perf_cq_abandon(&wk[i].s.cq);
		all &= atomic_load(&wk[i].finished);
	}
	return all;
}

/* --interval: reports until every worker finished. */
static void interval_reports(struct worker *wk, unsigned int n, size_t size,
			     struct perf_row *row)
{
	size_t *from = calloc(n, sizeof(*from)), *to = calloc(n, sizeof(*to));
	uint64_t t0 = tool_now_ns(), next, now, prev_done = 0, d;
	size_t cap = 16, cnt;
	struct perf_interval iv;
	bool all = false, last;
	unsigned int i;
	double *v;

	row->iv = calloc(cap, sizeof(*row->iv));
	if (!from || !to || !row->iv) {
		fprintf(stderr, "%s: out of memory\n", tool_prog);
		exit(TOOL_EXIT_FAIL);
	}
	next = t0 + (uint64_t)(opt.interval * 1e9);
	while (!all) {
		all = workers_finished(wk, n);
		now = tool_now_ns();
		last = all;
		if (now < next && !last) {
			tool_sleep_ms((unsigned int)MIN(
				50, (next - now) / 1000000 + 1));
			continue;
		}
		memset(&iv, 0, sizeof(iv));
		iv.start = row->niv ? row->iv[row->niv - 1].end : 0;
		iv.end = (double)(now - t0) / 1e9;
		d = workers_done(wk, n, false) + workers_done(wk, n, true);
		iv.iters = d - prev_done;
		prev_done = d;
		if (iv.end > iv.start) {
			iv.mxfers_per_sec =
				(double)iv.iters / (iv.end - iv.start) / 1e6;
			iv.mb_per_sec = iv.mxfers_per_sec * (double)size;
		}
		for (i = 0; i < n; i++)
			if (wk[i].lat)
				to[i] = perf_samples_count(wk[i].lat);
		v = gather(wk, n, from, to, &cnt);
		perf_lat_stats(v, cnt, &iv.lat);
		free(v);
		memcpy(from, to, n * sizeof(*from));
		next += (uint64_t)(opt.interval * 1e9);
		/* The last, partial interval only if anything happened. */
		if (last && (!iv.iters || iv.end <= iv.start))
			break;
		if (row->niv == cap) {
			struct perf_interval *grown =
				realloc(row->iv, 2 * cap * sizeof(*grown));

			if (!grown)
				break;
			row->iv = grown;
			cap *= 2;
		}
		row->iv[row->niv++] = iv;
		print_interval(&iv, size);
	}
	free(from);
	free(to);
}

/* One measurement at one size: returns an exit status. */
static int client_data(size_t size)
{
	unsigned int nw = opt.qps * (opt.bidir ? 2 : 1), q;
	struct worker *wk = calloc(nw, sizeof(*wk));
	struct perf_row row = { .bytes = size };
	uint64_t iters = opt.duration > 0 ? 0 : default_iters(opt.test, size);
	uint64_t first = UINT64_MAX, last = 0, checks = 0, bad = 0;
	size_t *from, *to, cnt;
	struct rusage ru0, ru1;
	int rc = TOOL_EXIT_OK;
	double *v;

	from = calloc(nw, sizeof(*from));
	to = calloc(nw, sizeof(*to));
	if (!wk || !from || !to)
		return TOOL_EXIT_FAIL;
	getrusage(RUSAGE_SELF, &ru0);
	for (q = 0; q < nw; q++) {
		struct side *s = &wk[q].s;

		wk[q].reverse = q >= opt.qps;
		wk[q].iters = iters;
		s->test = opt.test;
		s->size = size;
		s->window = opt.window;
		s->iters = iters;
		s->flags = (opt.events ? PERF_F_EVENTS : 0) |
			   (opt.mem_only ? PERF_F_MEM_ONLY : 0) |
			   (opt.inline_sends ? PERF_F_INLINE : 0) |
			   (opt.verify ? PERF_F_VERIFY : 0) |
			   (wk[q].reverse ? PERF_F_REVERSE : 0);
		atomic_init(&s->done, 0);
		atomic_init(&wk[q].finished, false);
		if (is_latency(opt.test)) {
			wk[q].lat = calloc(1, sizeof(*wk[q].lat));
			if (!wk[q].lat)
				return TOOL_EXIT_FAIL;
			atomic_init(&wk[q].lat->n, 0);
		}
		pthread_create(&wk[q].thread, NULL, data_worker, &wk[q]);
	}
	if (opt.interval > 0)
		interval_reports(wk, nw, size, &row);
	while (!workers_finished(wk, nw))
		tool_sleep_ms(20);
	for (q = 0; q < nw; q++) {
		pthread_join(wk[q].thread, NULL);
		if (wk[q].status) {
			fprintf(stderr, "%s: connect: %s\n", tool_prog,
				NdkStatusName(wk[q].status));
			rc = TOOL_EXIT_CONNECT;
			continue;
		}
		if (!wk[q].ok && rc != TOOL_EXIT_CONNECT)
			rc = wk[q].s.err == SIDE_BAD_DATA ? TOOL_EXIT_VERIFY
							  : TOOL_EXIT_FAIL;
		first = MIN(first, wk[q].s.start_ns);
		last = MAX(last, wk[q].s.end_ns);
		checks += wk[q].s.checks + wk[q].s.peer.checks;
		bad += wk[q].s.bad + wk[q].s.peer.bad;
		/* Several sessions overlap: the busiest one's CPU stands for
		 * the server's over the run. */
		if (wk[q].s.got_stats &&
		    (double)wk[q].s.peer.cpu_usec / 1e6 > row.server_cpu_sec) {
			row.has_server = true;
			row.server_cpu_sec =
				(double)wk[q].s.peer.cpu_usec / 1e6;
			row.server_wall_sec =
				(double)wk[q].s.peer.wall_usec / 1e6;
		}
	}
	getrusage(RUSAGE_SELF, &ru1);
	if (rc == TOOL_EXIT_OK || rc == TOOL_EXIT_VERIFY) {
		row.cpu_sec = cpu_seconds(&ru1) - cpu_seconds(&ru0);
		row.vol_switches = (uint64_t)(ru1.ru_nvcsw - ru0.ru_nvcsw);
		/* Several QPs: from the first start to the last end, so QPs
		 * that happen not to overlap do not count as aggregate
		 * bandwidth. */
		row.seconds = last > first ? (double)(last - first) / 1e9 : 0;
		row.mono_start_ns = first;
		row.mono_end_ns = last;
		row.tx_iters = workers_done(wk, nw, false);
		row.rx_iters = workers_done(wk, nw, true);
		row.iters = row.tx_iters + row.rx_iters;
		row.total = row.iters * size;
		if (is_latency(opt.test)) {
			/* Steady state: the first tenth warms caches and
			 * paths. */
			for (q = 0; q < nw; q++) {
				to[q] = wk[q].lat
						? perf_samples_count(wk[q].lat)
						: 0;
				from[q] = to[q] / 10;
				row.dropped +=
					wk[q].lat ? wk[q].lat->dropped : 0;
			}
			v = gather(wk, nw, from, to, &cnt);
			perf_lat_stats(v, cnt, &row.lat);
			row.has_lat = cnt > 0;
			row.usec_per_xfer = row.lat.mean;
			if (opt.histogram)
				histogram(v, cnt, &row);
			free(v);
		} else {
			row.usec_per_xfer =
				row.iters
					? row.seconds * 1e6 / (double)row.iters
					: 0;
		}
		add_row(&row);
		if (opt.verify && !opt.json)
			printf("# verify: %s %s B: %llu checks, %llu bad "
			       "(client and server)\n",
			       test_names[opt.test],
			       size_str(size, (char[32]){ 0 }, 32),
			       (unsigned long long)checks,
			       (unsigned long long)bad);
		if (bad && rc == TOOL_EXIT_OK)
			rc = TOOL_EXIT_VERIFY;
	}
	for (q = 0; q < nw; q++) {
		if (wk[q].lat) {
			perf_samples_free(wk[q].lat);
			free(wk[q].lat);
		}
	}
	free(from);
	free(to);
	free(wk);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Client: connection tests                                           */

/* Connection setup: each thread connects, completes and disconnects. */
struct conn_worker {
	pthread_t thread;
	uint64_t n; /* 0: until the deadline */
	uint64_t deadline_ns;
	struct perf_samples lat;
	NTSTATUS status;
};

static void *conn_thread(void *arg)
{
	struct conn_worker *cw = arg;
	struct client_conn cc;
	uint64_t i;

	for (i = 0; !tool_stop &&
		    (cw->n ? i < cw->n : tool_now_ns() < cw->deadline_ns);
	     i++) {
		memset(&cc, 0, sizeof(cc));
		cw->status = client_connect(&cc, T_CONN, NULL, 0);
		if (cw->status) {
			TOOL_CLOSE(cc.conn);
			TOOL_CLOSE(cc.qp);
			return NULL;
		}
		if (!perf_samples_add(&cw->lat, (double)cc.connect_ns / 1000.0))
			cw->status = STATUS_NO_MEMORY;
		client_close(&cc);
		if (cw->status)
			return NULL;
	}
	return NULL;
}

static int client_conn(void)
{
	uint64_t total = opt.duration > 0 ? 0 : default_iters(T_CONN, 0), t0;
	struct conn_worker *cw = calloc(opt.threads, sizeof(*cw));
	struct perf_row row = { .bytes = MIN(sizeof(struct perf_hello),
					     host.info.MaxCallerData) };
	struct rusage ru0, ru1;
	size_t k = 0, n;
	unsigned int t;
	double *all;
	int rc = TOOL_EXIT_OK;

	if (!cw)
		return TOOL_EXIT_FAIL;
	getrusage(RUSAGE_SELF, &ru0);
	t0 = tool_now_ns();
	for (t = 0; t < opt.threads; t++) {
		atomic_init(&cw[t].lat.n, 0);
		cw[t].n =
			total ? total / opt.threads + (t < total % opt.threads)
			      : 0;
		if (total && !cw[t].n)
			continue;
		/* -n 0: until interrupted. */
		cw[t].deadline_ns =
			opt.duration > 0 ? t0 + (uint64_t)(opt.duration * 1e9)
					 : UINT64_MAX;
		pthread_create(&cw[t].thread, NULL, conn_thread, &cw[t]);
	}
	n = 0;
	for (t = 0; t < opt.threads; t++) {
		if (total && !cw[t].n)
			continue;
		pthread_join(cw[t].thread, NULL);
		if (cw[t].status) {
			fprintf(stderr, "%s: connect: %s\n", tool_prog,
				NdkStatusName(cw[t].status));
			rc = TOOL_EXIT_CONNECT;
		}
		n += perf_samples_count(&cw[t].lat);
	}
	row.seconds = (double)(tool_now_ns() - t0) / 1e9;
	getrusage(RUSAGE_SELF, &ru1);
	row.cpu_sec = cpu_seconds(&ru1) - cpu_seconds(&ru0);
	all = calloc(MAX(n, 1), sizeof(*all));
	if (!all)
		return TOOL_EXIT_FAIL;
	for (t = 0; t < opt.threads; t++) {
		perf_samples_copy(&cw[t].lat, 0, perf_samples_count(&cw[t].lat),
				  all + k);
		k += perf_samples_count(&cw[t].lat);
		perf_samples_free(&cw[t].lat);
	}
	if (rc == TOOL_EXIT_OK) {
		row.iters = k;
		row.total = 0;
		perf_lat_stats(all, k, &row.lat);
		row.has_lat = k > 0;
		/* usec/xfer = wall time per connection (the rate's
		 * inverse). */
		row.usec_per_xfer = k ? row.seconds * 1e6 / (double)k : 0;
		if (opt.histogram)
			histogram(all, k, &row);
		if (!opt.json)
			printf("# conn: %llu connections, %.0f connections/sec "
			       "(%u thread%s)\n",
			       (unsigned long long)k,
			       row.seconds > 0 ? (double)k / row.seconds : 0,
			       opt.threads, opt.threads > 1 ? "s" : "");
		add_row(&row);
	}
	free(all);
	free(cw);
	return rc;
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

/* Sleeps, cut short by a signal. */
static void perf_pause(double seconds)
{
	uint64_t end = tool_now_ns() + (uint64_t)(seconds * 1e9);

	while (!tool_stop && tool_now_ns() < end)
		tool_sleep_ms(50);
}

/* Many connections held at once: memory per connection. */
static int client_hold(void)
{
	uint64_t total = default_iters(T_HOLD, 0), i;
	struct client_conn *cc = calloc(total, sizeof(*cc));
	struct perf_row row = { .bytes = 0 };
	long before = rss_bytes(), after;
	uint64_t t0 = tool_now_ns();
	NTSTATUS st = STATUS_SUCCESS;

	if (!cc)
		return TOOL_EXIT_FAIL;
	for (i = 0; i < total && !tool_stop; i++) {
		st = client_connect(&cc[i], T_HOLD, NULL, 0);
		if (st) {
			fprintf(stderr, "%s: connection %llu: %s\n", tool_prog,
				(unsigned long long)i, NdkStatusName(st));
			/* The failed one's QP and connector go too, or the
			 * CQ under them could not close. */
			TOOL_CLOSE(cc[i].conn);
			TOOL_CLOSE(cc[i].qp);
			break;
		}
	}
	total = i;
	row.seconds = (double)(tool_now_ns() - t0) / 1e9;
	after = rss_bytes();
	row.iters = total;
	row.extra = total ? (double)(after - before) / (double)total : 0;
	row.usec_per_xfer = total ? row.seconds * 1e6 / (double)total : 0;
	if (!opt.json)
		printf("# hold: %llu connections in %.3f s, client memory %.1f "
		       "KiB per connection (RSS %ld -> %ld KiB)\n",
		       (unsigned long long)total, row.seconds, row.extra / 1024,
		       before / 1024, after / 1024);
	if (opt.json)
		add_row(&row);
	else if (nrows < sizeof(rows) / sizeof(rows[0]))
		rows[nrows++] = row;
	/* Printed first: a watcher may measure the server meanwhile. */
	fflush(stdout);
	perf_pause(opt.duration > 0 ? opt.duration : 2);
	for (i = 0; i < total; i++)
		client_close(&cc[i]);
	free(cc);
	if (!total)
		return st ? TOOL_EXIT_CONNECT : TOOL_EXIT_FAIL;
	return TOOL_EXIT_OK;
}

static int client_main(void)
{
	char a[64], b[64], sz[32], ifname[IF_NAMESIZE] = "?";
	NET_IFINDEX idx;
	size_t size;
	int ret = TOOL_EXIT_OK;

	if (tool_client_local((struct sockaddr *)&opt.addr,
			      opt.have_bind ? &opt.bind : NULL, opt.ifindex,
			      &client_src, &idx))
		return TOOL_EXIT_CONNECT;
	if_indextoname(idx, ifname);
	tool_host_open(&host, idx);
	perf_cq_create(&host, &conn_cq, 64, false);
	/* The source's port is the provider's pick: not shown. */
	tool_addr_str((struct sockaddr *)&client_src, a, sizeof(a));
	if (!tool_addr_port((struct sockaddr *)&client_src))
		a[strlen(a) - 2] = '\0';
	if (!opt.json) {
		printf("# ndkperf %s, %s mode, %u QP%s%s, %s -> %s (%s)",
		       test_names[opt.test], mode_name(), opt.qps,
		       opt.qps > 1 ? "s" : "", opt.bidir ? " each way" : "", a,
		       tool_addr_str((struct sockaddr *)&opt.addr, b,
				     sizeof(b)),
		       ifname);
		if (opt.duration > 0 && opt.test != T_HOLD)
			printf(", %g s per size", opt.duration);
		printf("\n");
		if (is_latency(opt.test))
			printf("# latency in usec (%s), after the first tenth "
			       "of the iterations; cpu%%: of one core\n",
			       opt.test == T_READ_LAT ? "the round trip"
						      : "half the round trip");
		else if (opt.test == T_CONN)
			printf("# latency in usec: connect + accept + "
			       "complete, with %s B of private data\n",
			       size_str(MIN(sizeof(struct perf_hello),
					    host.info.MaxCallerData),
					sz, sizeof(sz)));
		else if (opt.test != T_HOLD)
			printf("# MB/s = 10^6 bytes/s, Gb/s = 10^9 bits/s%s; "
			       "usec/msg: the run's time per message; cpu%%: "
			       "of one core\n",
			       opt.bidir ? ", both ways together" : "");
	}
	print_header();
	if (opt.test == T_CONN) {
		ret = client_conn();
	} else if (opt.test == T_HOLD) {
		ret = client_hold();
	} else if (opt.all_sizes) {
		for (size = 1; size <= MAX_SIZE && !ret && !tool_stop;
		     size <<= 1)
			ret = client_data(size);
	} else {
		ret = client_data(opt.size);
	}
	if (opt.json)
		print_json();
	else if (tool_stop)
		printf("# interrupted\n");
	perf_cq_close(&conn_cq);
	tool_host_close(&host);
	return ret;
}

/* ------------------------------------------------------------------ */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ndkperf -s [-b ADDR] [-p PORT] [-I IF]          (server)\n"
		"       ndkperf [options] HOST[:PORT]                   (client)\n"
		"Latency, bandwidth, message rate and connection setup of NDK.\n"
		"tests: send_lat send_bw write_lat write_bw read_lat read_bw\n"
		"       msg_rate conn hold\n"
		"  -s, --server          serve every client, a thread per QP\n"
		"  -b, --bind ADDR       server: listen on ADDR (0.0.0.0: every\n"
		"                        interface); client: connect from ADDR\n"
		"  -p, --port PORT       port (%u)\n"
		"  -I, --interface IF    only this interface's adapter\n"
		"  -t, --test TEST       what to measure (send_lat)\n"
		"  -S, --size BYTES      message size, k/m suffixes (8; 64k for\n"
		"                        the bandwidth tests)\n"
		"  -A, --all-sizes       every power of two from 1 B to 4m\n"
		"  -n, --iterations N    iterations per size (connections for\n"
		"                        conn and hold; 0: until interrupted)\n"
		"  -D, --duration SECS   run each size this long instead (hold:\n"
		"                        how long it holds, 2)\n"
		"  -i, --interval SECS   report every SECS during the run\n"
		"  -w, --window N        requests in flight, bandwidth tests (64)\n"
		"  -q, --qps N           connections in parallel, one thread\n"
		"                        each (1)\n"
		"  -T, --threads N       connecting threads for conn (1)\n"
		"      --bidir           bandwidth tests: both directions at\n"
		"                        once, -q connections each way\n"
		"  -e, --events          wait on CQ notifications instead of\n"
		"                        polling\n"
		"  -m, --mem-only        write_lat spins on memory only, never\n"
		"                        polling its CQ\n"
		"  -B, --defer           post each burst with NDK_OP_FLAG_DEFER\n"
		"                        on all but its last request\n"
		"      --inline          Sends up to MaxInlineDataSize go with\n"
		"                        NDK_OP_FLAG_INLINE\n"
		"      --verify          check the data on both sides (slower)\n"
		"  -H, --histogram       latency histogram (latency tests, conn)\n"
		"  -j, --json            JSON on one line\n"
		"  -v, --verbose         server: a line per session\n"
		"  -h, --help            this help\n"
		"      --version         the version\n"
		"Exit status: 0 ok, 1 the run failed, 2 usage, 3 could not\n"
		"connect, 4 the data differed (docs/tools.md).\n",
		PERF_PORT);
}

enum {
	OPT_INLINE = TOOL_OPT_FIRST,
	OPT_VERIFY,
	OPT_BIDIR,
};

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "server", no_argument, NULL, 's' },
		{ "bind", required_argument, NULL, 'b' },
		{ "port", required_argument, NULL, 'p' },
		{ "interface", required_argument, NULL, 'I' },
		{ "test", required_argument, NULL, 't' },
		{ "size", required_argument, NULL, 'S' },
		{ "all-sizes", no_argument, NULL, 'A' },
		{ "iterations", required_argument, NULL, 'n' },
		{ "duration", required_argument, NULL, 'D' },
		{ "interval", required_argument, NULL, 'i' },
		{ "window", required_argument, NULL, 'w' },
		{ "qps", required_argument, NULL, 'q' },
		{ "threads", required_argument, NULL, 'T' },
		{ "bidir", no_argument, NULL, OPT_BIDIR },
		{ "events", no_argument, NULL, 'e' },
		{ "mem-only", no_argument, NULL, 'm' },
		{ "defer", no_argument, NULL, 'B' },
		{ "inline", no_argument, NULL, OPT_INLINE },
		{ "verify", no_argument, NULL, OPT_VERIFY },
		{ "histogram", no_argument, NULL, 'H' },
		{ "json", no_argument, NULL, 'j' },
		{ "verbose", no_argument, NULL, 'v' },
		TOOL_LONG_COMMON,
		{ NULL, 0, NULL, 0 },
	};
	const char *bind_addr = NULL;
	char ifname[IF_NAMESIZE];
	uint16_t port = PERF_PORT;
	bool size_set = false;
	int c, t;

	tool_prog = "ndkperf";
	tool_catch_signals();
	while ((c = getopt_long(argc, argv, "sb:p:I:t:S:An:D:i:w:q:T:emBHjvh",
				longopts, NULL)) != -1) {
		switch (c) {
		case 's':
			opt.serve = true;
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
		case 't':
			for (t = 0; t < T_COUNT; t++)
				if (!strcmp(optarg, test_names[t]))
					break;
			if (t == T_COUNT)
				tool_usage_error("-t: no test %s", optarg);
			opt.test = (enum perf_test)t;
			break;
		case 'S':
			opt.size = (size_t)tool_arg_size("-S", optarg, 0,
							 MAX_SIZE);
			size_set = true;
			break;
		case 'A':
			opt.all_sizes = true;
			break;
		case 'n':
			opt.iters = tool_arg_count("-n", optarg, 0,
						   UINT64_MAX >> 8);
			opt.iters_set = true;
			break;
		case 'D':
			opt.duration =
				tool_arg_seconds("-D", optarg, 0.001, 4e6);
			break;
		case 'i':
			opt.interval =
				tool_arg_seconds("-i", optarg, 0.01, 86400);
			break;
		case 'w':
			opt.window = (unsigned int)tool_arg_count("-w", optarg,
								  1, 1024);
			break;
		case 'q':
			opt.qps = (unsigned int)tool_arg_count("-q", optarg, 1,
							       256);
			break;
		case 'T':
			opt.threads = (unsigned int)tool_arg_count("-T", optarg,
								   1, 256);
			break;
		case OPT_BIDIR:
			opt.bidir = true;
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
		case OPT_INLINE:
			opt.inline_sends = true;
			break;
		case OPT_VERIFY:
			opt.verify = true;
			break;
		case 'H':
			opt.histogram = true;
			break;
		case 'j':
			opt.json = true;
			break;
		case 'v':
			opt.verbose++;
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
	if (opt.serve) {
		if (optind != argc)
			tool_usage_error("a server takes no HOST");
		tool_arg_addr("-b", bind_addr ? bind_addr : "0.0.0.0", port,
			      &opt.bind);
		return server_main();
	}
	if (optind != argc - 1)
		tool_usage_error(optind == argc ? "HOST is missing (or -s "
						  "for a server)"
						: "one HOST only");
	if (!size_set)
		opt.size = opt.test == T_SEND_BW || opt.test == T_WRITE_BW ||
					   opt.test == T_READ_BW
				   ? 65536
				   : 8;
	if (opt.test == T_WRITE_LAT && !opt.size && !opt.all_sizes)
		/* Its target spins on the last byte: there must be one. */
		tool_usage_error("write_lat needs -S 1 or more");
	if ((opt.test == T_WRITE_BW || opt.test == T_READ_BW ||
	     opt.test == T_READ_LAT) &&
	    !opt.size)
		opt.size = 1; /* a Write or Read moves a byte at least */
	if (opt.bidir && !is_bandwidth(opt.test))
		tool_usage_error("--bidir: the bandwidth tests only");
	if (opt.histogram && !is_latency(opt.test) && opt.test != T_CONN)
		tool_usage_error("-H: the latency tests and conn only");
	if (opt.interval > 0 && (opt.test == T_CONN || opt.test == T_HOLD))
		tool_usage_error("-i: the data tests only");
	if (opt.duration > 0 && opt.iters_set && opt.test != T_HOLD)
		tool_usage_error("-n or -D, not both");
	if (opt.iters_set && !opt.iters && opt.test == T_HOLD)
		tool_usage_error("hold: -n 1 or more");
	if (bind_addr) {
		tool_arg_addr("-b", bind_addr, 0, &opt.bind);
		opt.have_bind = true;
	}
	tool_arg_addr("HOST", argv[optind], port, &opt.addr);
	return client_main();
}
