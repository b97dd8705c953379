/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: a hostile initiator against a live, listening adapter
 * through a real TCP connection on loopback: the listener, the MPA
 * handshake, the RTR, the data path and the teardown, all on the
 * adapter's engine thread, exactly as a remote peer reaches them.
 *
 * Input: 1 control byte, then the bytes the initiator sends. Control bits:
 *   0x01  eager: write everything at once. Otherwise the initiator keeps
 *         the rule of RFC 5044 7.1 (nothing after the Request until the
 *         Reply): it writes the first 20 + PD_Length bytes, waits for the
 *         Reply, then writes the rest.
 *   0x02  end with a reset instead of a FIN (only once a Reply came, so
 *         the connection surely reached the ConnectEvent).
 *   0x04  the server rejects the request (NdkReject) instead of accepting.
 *   0x08  once the Accept completes, the server posts an RDMA Read (8 KiB
 *         into two SGEs), a Send and an RDMA Write; the initiator then
 *         writes its first FPDU after the Reply (the RTR), waits for the
 *         server's Read Request, and only then writes the rest, so that
 *         Read Responses in the input meet an outstanding Read.
 *   0x30  the read limits the server accepts with: 4, 1, 0 or 128.
 *   0x40  the server disconnects (NdkDisconnect) as soon as its Accept
 *         completed.
 *
 * The server side: NDK_MPA_CRC=0 (the initiator decides with its C flag;
 * without it the CRC field is not checked, so mutations survive), one MR
 * of 64 KiB open to remote reads and writes at a fixed address with a
 * fixed token (FUZZ_LIVE_TOKEN=1 prints them), and a listener on
 * 127.0.0.1 whose ConnectEvent creates a QP with NRECV receives posted
 * (two SGEs each) and accepts with NdkAcceptEx. On the disconnect event,
 * a failed Accept or a completed NdkDisconnect, the connector and the QP
 * are closed from the callback; the connection has ended when both closes
 * completed.
 *
 * Invariants, per input: no crash or hang; every connection the input
 * caused ends within 5 s of the initiator's close; the Accept completes at
 * most once and the disconnect event comes at most once, and only after a
 * successful Accept; every request the server posted completes exactly
 * once; nothing is written outside the MR and the posted buffers (guard
 * bytes around and between them stay intact); the number of open
 * sockets and epoll/eventfd/timerfd descriptors returns to where it was.
 * libFuzzer's -rss_limit_mb covers unbounded memory growth.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <ndk/ndk.h>
#include "fuzzlib.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CTRL_EAGER	0x01
#define CTRL_RESET	0x02
#define CTRL_REJECT	0x04
#define CTRL_POST	0x08
#define CTRL_LIMITS	0x30
#define CTRL_DISCONNECT 0x40

/* Where the MR's first byte goes, and the posted buffers after it: in
 * the application range of a plain, an ASan and a TSan process on
 * x86-64 (as fuzz_dp_rx.c). */
#define FIXED_VA       0x7e9000000000ull
#define FIXED_VA_LOCAL (FIXED_VA + 0x100000)

#define MR_LEN 65536
#define GUARD  4096 /* around each mapping, outside its MR */
#define GAP    64 /* before and after each posted buffer, inside its MR */
#define FILL   0xee

#define NRECV  4
#define RECV_A 1000
#define RECV_B 7000 /* a Send of 4 KiB or more is placed directly */
#define SINK_A 3000
#define SINK_B 5192 /* the server's Read: SINK_A + SINK_B bytes */
#define SRC    256 /* the server's Send and Write */

/* Request contexts: receives 1..NRECV, then the initiator requests. */
enum {
	CTX_READ = NRECV + 1,
	CTX_SEND,
	CTX_WRITE,
	CTX_COUNT,
};

/* The posted buffers, in this order, each between two GAPs. */
enum { BUF_SINK_A = 2 * NRECV, BUF_SINK_B, BUF_SRC, BUF_COUNT };
static size_t buf_off[BUF_COUNT], buf_len[BUF_COUNT], local_len;

static NDK_ADAPTER *ad;
static NDK_PD *pd;
static NDK_CQ *cq;
static NDK_LISTENER *lis;
static struct sockaddr_in lis_addr;
static uint8_t *mr_map, *local_map; /* each with GUARD bytes on both sides */
static UINT32 rtok, ltok;
static int fd_baseline;

/* The server side of the one connection an input may cause. */
struct conn {
	NDK_CONNECTOR *c;
	NDK_QP *qp;
	uint8_t ctrl;
	atomic_bool closing;
	atomic_int closes_left;
	atomic_int accepts, disconnects;
	atomic_bool accepted;
	atomic_uint posted; /* bit per request context with a completion due */
};

static struct conn conn;
static atomic_int ctrl_now; /* the input's control byte, for the server */
static atomic_bool conn_busy;
static pthread_mutex_t ev_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ev_cond;
static unsigned int started, ended; /* connections, under ev_lock */

static void fail(const char *what)
{
	fprintf(stderr, "fuzz_live: %s\n", what);
	abort();
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static uint16_t be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

/* ------------------------------------------------------------------ */
/* The server: NDK callbacks, all on the adapter's engine thread        */

static uint8_t *local_buf(int i)
{
	return local_map + GUARD + buf_off[i];
}

static void conn_closed(PVOID ctx)
{
	struct conn *s = ctx;

	if (atomic_fetch_sub(&s->closes_left, 1) != 1)
		return;
	atomic_store(&conn_busy, false);
	pthread_mutex_lock(&ev_lock);
	ended++;
	pthread_cond_broadcast(&ev_cond);
	pthread_mutex_unlock(&ev_lock);
}

/* Closes the connector, then the QP; at most once per connection. */
static void conn_close(struct conn *s)
{
	NDK_QP *qp = s->qp;

	if (atomic_exchange(&s->closing, true))
		return;
	if (s->c->Dispatch->NdkCloseConnector(&s->c->Header, conn_closed, s) !=
	    STATUS_PENDING)
		conn_closed(s);
	if (qp && qp->Dispatch->NdkCloseQp(&qp->Header, conn_closed, s) !=
			  STATUS_PENDING)
		conn_closed(s);
}

static void disconnect_event(PVOID ctx, ULONG reason)
{
	struct conn *s = ctx;

	if (atomic_fetch_add(&s->disconnects, 1))
		fail("a second disconnect event");
	if (!atomic_load(&s->accepted))
		fail("a disconnect event without a successful Accept");
	conn_close(s);
}

static void disconnect_done(PVOID ctx, NTSTATUS status)
{
	conn_close(ctx);
}

static void post(struct conn *s, int id, NTSTATUS status)
{
	if (status == STATUS_SUCCESS)
		atomic_fetch_or(&s->posted, 1u << id);
}

/* The server's own traffic: a Read first, so the initiator can wait for
 * its Read Request, then a Send and a Write. */
static void post_initiator(struct conn *s)
{
	NDK_QP *qp = s->qp;
	NDK_SGE sink[2] = {
		{ .VirtualAddress = local_buf(BUF_SINK_A),
		  .Length = SINK_A,
		  .MemoryRegionToken = ltok },
		{ .VirtualAddress = local_buf(BUF_SINK_B),
		  .Length = SINK_B,
		  .MemoryRegionToken = ltok },
	};
	NDK_SGE src = { .VirtualAddress = local_buf(BUF_SRC),
			.Length = SRC,
			.MemoryRegionToken = ltok };

	post(s, CTX_READ,
	     qp->Dispatch->NdkRead(qp, (PVOID)(uintptr_t)CTX_READ, sink, 2,
				   0x20000, 0x5678, 0));
	post(s, CTX_SEND,
	     qp->Dispatch->NdkSend(qp, (PVOID)(uintptr_t)CTX_SEND, &src, 1, 0));
	post(s, CTX_WRITE,
	     qp->Dispatch->NdkWrite(qp, (PVOID)(uintptr_t)CTX_WRITE, &src, 1,
				    0x10000, 0x1234, 0));
}

static void accept_done(PVOID ctx, NTSTATUS status)
{
	struct conn *s = ctx;

	if (atomic_fetch_add(&s->accepts, 1))
		fail("the Accept completed twice");
	if (status != STATUS_SUCCESS) {
		conn_close(s);
		return;
	}
	atomic_store(&s->accepted, true);
	/* Callbacks run one at a time: a disconnect event that came first
	 * has closed the QP already. */
	if (atomic_load(&s->closing))
		return;
	if (s->ctrl & CTRL_POST)
		post_initiator(s);
	if ((s->ctrl & CTRL_DISCONNECT) &&
	    s->c->Dispatch->NdkDisconnect(s->c, disconnect_done, s) !=
		    STATUS_PENDING)
		conn_close(s);
}

static void connect_event(PVOID ctx, NDK_CONNECTOR *c)
{
	static char accept_pd[] = { 'f', 'u', 'z', 'z' },
		    reject_pd[] = { 'n', 'o' };
	static const ULONG limits[] = { 4, 1, 0, 128 };
	struct conn *s = &conn;
	uint8_t pdata[512];
	ULONG ird = 0, ord = 0, len = sizeof(pdata), lim;
	NTSTATUS st;
	int i;

	if (atomic_exchange(&conn_busy, true))
		fail("a second connection at once");
	memset(s, 0, sizeof(*s));
	s->c = c;
	s->ctrl = (uint8_t)atomic_load(&ctrl_now);
	pthread_mutex_lock(&ev_lock);
	started++;
	pthread_mutex_unlock(&ev_lock);
	st = c->Dispatch->NdkGetConnectionData(c, &ird, &ord, pdata, &len);
	if (st != STATUS_SUCCESS || len > 256 || ird > 128 || ord > 128)
		fail("NdkGetConnectionData");
	if (s->ctrl & CTRL_REJECT) {
		c->Dispatch->NdkReject(c, reject_pd, sizeof(reject_pd));
		atomic_store(&s->closes_left, 1);
		conn_close(s);
		return;
	}
	if (pd->Dispatch->NdkCreateQp(pd, cq, cq, s, NRECV, 4, 2, 2, 0, NULL,
				      NULL, &s->qp))
		fail("NdkCreateQp");
	atomic_store(&s->closes_left, 2);
	for (i = 0; i < NRECV; i++) {
		NDK_SGE sge[2] = {
			{ .VirtualAddress = local_buf(2 * i),
			  .Length = RECV_A,
			  .MemoryRegionToken = ltok },
			{ .VirtualAddress = local_buf(2 * i + 1),
			  .Length = RECV_B,
			  .MemoryRegionToken = ltok },
		};

		if (s->qp->Dispatch->NdkReceive(
			    s->qp, (PVOID)(uintptr_t)(i + 1), sge, 2))
			fail("NdkReceive");
		atomic_fetch_or(&s->posted, 1u << (i + 1));
	}
	lim = limits[(s->ctrl & CTRL_LIMITS) >> 4];
	st = c->Dispatch->NdkAcceptEx(c, s->qp, lim, lim, accept_pd,
				      sizeof(accept_pd), disconnect_event, s,
				      accept_done, s);
	if (st != STATUS_PENDING)
		conn_close(s);
}

static void cq_notify(PVOID ctx, NTSTATUS status)
{
}

/* ------------------------------------------------------------------ */
/* Setup                                                                */

static uint8_t *alloc_mem(size_t len, uintptr_t at)
{
	uint8_t *p = fuzz_map(len, at);

	if (!p)
		fail("mmap");
	return p;
}

static UINT32 reg(void *p, size_t len, ULONG flags, bool remote)
{
	NDK_MR *mr = fuzz_reg(pd, p, len, flags);

	if (!mr)
		fail("registering an MR");
	return remote ? mr->Dispatch->NdkGetRemoteTokenFromMr(mr)
		      : mr->Dispatch->NdkGetLocalTokenFromMr(mr);
}

/*
 * The descriptors of the kinds the provider opens: sockets, epoll, eventfd
 * and timerfd. Pipes and files are left out: libFuzzer keeps pipes to its
 * symbolizer open once it printed a new function.
 */
static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int n = 0;

	if (!d)
		fail("/proc/self/fd");
	while ((de = readdir(d))) {
		char path[300], link[32];
		ssize_t len;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/fd/%s", de->d_name);
		len = readlink(path, link, sizeof(link) - 1);
		link[len > 0 ? len : 0] = 0;
		n += !strncmp(link, "socket:", 7) ||
		     !strncmp(link, "anon_inode:", 11);
	}
	closedir(d);
	return n;
}

/* What the descriptors are, TCP sockets with their state
 * (/proc/net/tcp), for the report of a leak. */
static void print_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;

	while (d && (de = readdir(d))) {
		char path[300], link[128], line[256];
		unsigned long inode;
		ssize_t n;
		FILE *f;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/fd/%s", de->d_name);
		n = readlink(path, link, sizeof(link) - 1);
		link[n > 0 ? n : 0] = 0;
		fprintf(stderr, "fd %s: %s\n", de->d_name, link);
		if (sscanf(link, "socket:[%lu]", &inode) != 1)
			continue;
		f = fopen("/proc/self/net/tcp", "r");
		while (f && fgets(line, sizeof(line), f)) {
			unsigned long ino = 0;

			/* sl local rem st tx:rx tr:when retrnsmt uid timeout
			 * inode */
			if (sscanf(line,
				   "%*s %*s %*s %*s %*s %*s %*s %*s %*s %lu",
				   &ino) == 1 &&
			    ino == inode)
				fprintf(stderr, "   tcp %s", line);
		}
		if (f)
			fclose(f);
	}
	if (d)
		closedir(d);
}

static void listen_done(PVOID ctx, NTSTATUS status)
{
	atomic_store((atomic_int *)ctx, status == STATUS_SUCCESS ? 1 : -1);
}

static void setup(void)
{
	NDK_VERSION v = { 2, 1 };
	struct sockaddr_in any = { .sin_family = AF_INET };
	ULONG len = sizeof(lis_addr);
	pthread_condattr_t ca;
	atomic_int listening = 0;
	size_t off = GAP;
	uint64_t deadline;
	NTSTATUS st;
	int i;

	setenv("NDK_MPA_CRC", "0", 1);
	setenv("NDK_CM_TIMEOUT_MS", "500", 1);
	setenv("NDK_LOG", "error", 0);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&ev_cond, &ca);
	for (i = 0; i < BUF_COUNT; i++) {
		buf_len[i] = i < 2 * NRECV     ? (i % 2 ? RECV_B : RECV_A)
			     : i == BUF_SINK_A ? SINK_A
			     : i == BUF_SINK_B ? SINK_B
					       : SRC;
		buf_off[i] = off;
		off += buf_len[i] + GAP;
	}
	local_len = off;
	fuzz_fixed_tokens();
	if (NdkOpenAdapter(v, if_nametoindex("lo"), &ad) ||
	    ad->Dispatch->NdkCreatePd(ad, NULL, NULL, &pd) ||
	    ad->Dispatch->NdkCreateCq(ad, 4096, cq_notify, NULL, NULL, NULL,
				      NULL, &cq))
		fail("setup");
	mr_map = alloc_mem(MR_LEN + 2 * GUARD, FIXED_VA - GUARD);
	local_map = alloc_mem(local_len + 2 * GUARD, FIXED_VA_LOCAL - GUARD);
	/* The remote MR first: with fixed tokens (fuzzlib.h) the first MR
	 * of a fresh adapter has the same token in every run. */
	rtok = reg(mr_map + GUARD, MR_LEN,
		   NDK_MR_FLAG_ALLOW_LOCAL_WRITE |
			   NDK_MR_FLAG_ALLOW_REMOTE_WRITE |
			   NDK_MR_FLAG_ALLOW_REMOTE_READ,
		   true);
	ltok = reg(local_map + GUARD, local_len, NDK_MR_FLAG_ALLOW_LOCAL_WRITE,
		   false);
	if (getenv("FUZZ_LIVE_TOKEN"))
		fprintf(stderr,
			"MR: token 0x%08x at %p; read sink: token 0x%08x at "
			"%p\n",
			rtok, (void *)(mr_map + GUARD), ltok,
			(void *)local_buf(BUF_SINK_A));
	any.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (ad->Dispatch->NdkCreateListener(ad, connect_event, NULL, NULL, NULL,
					    &lis))
		fail("NdkCreateListener");
	st = lis->Dispatch->NdkListen(lis, (PSOCKADDR)&any, sizeof(any),
				      listen_done, &listening);
	if (st != STATUS_PENDING)
		listen_done(&listening, st);
	deadline = now_ms() + 5000;
	while (!atomic_load(&listening) && now_ms() < deadline)
		usleep(1000);
	if (atomic_load(&listening) != 1 ||
	    lis->Dispatch->NdkGetLocalAddress(lis, (PSOCKADDR)&lis_addr, &len))
		fail("NdkListen");
	fd_baseline = count_fds();
}

/* ------------------------------------------------------------------ */
/* The initiator: a plain TCP socket                                    */

#define HEAD_MAX 4096

struct peer {
	int fd;
	uint8_t head[HEAD_MAX]; /* the first bytes the server sent */
	size_t got; /* bytes received in all */
	bool eof; /* FIN or reset from the server */
	bool wr_dead; /* the server takes no more bytes */
};

enum until { UNTIL_SENT, UNTIL_REPLY, UNTIL_READ_REQ, UNTIL_EOF };

static size_t fpdu_len(size_t ulpdu_len)
{
	return ((2 + ulpdu_len + 3) & ~(size_t)3) + 4;
}

/* The length of the server's MPA frame once it is all in, else 0. */
static size_t reply_len(const struct peer *p)
{
	size_t n;

	if (p->got < 20)
		return 0;
	n = 20 + be16(p->head + 18);
	return p->got >= n ? n : 0;
}

/* Whether a Read Request (untagged, opcode 1) of the server's is in. */
static bool saw_read_req(const struct peer *p)
{
	size_t o = reply_len(p), in = p->got < HEAD_MAX ? p->got : HEAD_MAX;

	if (!o)
		return false;
	while (o + 4 <= in) {
		if (!(p->head[o + 2] & 0x80) && (p->head[o + 3] & 0x0f) == 1)
			return true;
		o += fpdu_len(be16(p->head + o));
	}
	return false;
}

static bool reached(const struct peer *p, enum until u)
{
	switch (u) {
	case UNTIL_SENT:
		return true;
	case UNTIL_REPLY:
		return reply_len(p) != 0;
	case UNTIL_READ_REQ:
		return saw_read_req(p);
	default:
		return false;
	}
}

static void peer_receive(struct peer *p)
{
	static uint8_t scratch[65536];
	int i;

	for (i = 0; i < 16; i++) {
		ssize_t n = recv(p->fd, scratch, sizeof(scratch), MSG_DONTWAIT);

		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n <= 0) {
			p->eof = true;
			return;
		}
		if (p->got < HEAD_MAX)
			memcpy(p->head + p->got, scratch,
			       (size_t)n < HEAD_MAX - p->got
				       ? (size_t)n
				       : HEAD_MAX - p->got);
		p->got += (size_t)n;
	}
}

/*
 * Writes data[*off..end) while reading what the server sends, until all
 * is written and u is reached, or the server closed, or ms passed.
 */
static void pump(struct peer *p, const uint8_t *data, size_t *off, size_t end,
		 enum until u, unsigned int ms)
{
	uint64_t deadline = now_ms() + ms;

	for (;;) {
		bool want_out = *off < end && !p->wr_dead;
		struct pollfd pfd = { .fd = p->fd };
		uint64_t now = now_ms();
		int n;

		if (!want_out && (p->eof || reached(p, u)))
			return;
		if (now >= deadline)
			return;
		pfd.events = (short)((p->eof ? 0 : POLLIN) |
				     (want_out ? POLLOUT : 0));
		n = poll(&pfd, 1, (int)(deadline - now));
		if (n < 0 && errno != EINTR)
			fail("poll");
		if (n <= 0)
			continue;
		if (!p->eof && (pfd.revents & (POLLIN | POLLERR | POLLHUP)))
			peer_receive(p);
		if (want_out && (pfd.revents & (POLLOUT | POLLERR | POLLHUP))) {
			ssize_t w = send(p->fd, data + *off, end - *off,
					 MSG_NOSIGNAL | MSG_DONTWAIT);

			if (w > 0)
				*off += (size_t)w;
			else if (w < 0 && errno != EAGAIN && errno != EINTR)
				p->wr_dead = true;
		}
	}
}

static void peer_connect(struct peer *p)
{
	uint64_t deadline = now_ms() + 5000;

	for (;;) {
		struct pollfd pfd;
		int err = 0;
		socklen_t len = sizeof(err);

		p->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
		if (p->fd < 0)
			fail("socket");
		if (!connect(p->fd, (struct sockaddr *)&lis_addr,
			     sizeof(lis_addr)))
			return;
		if (errno == EINPROGRESS) {
			pfd.fd = p->fd;
			pfd.events = POLLOUT;
			if (poll(&pfd, 1, 2000) == 1 &&
			    !getsockopt(p->fd, SOL_SOCKET, SO_ERROR, &err,
					&len) &&
			    !err)
				return;
		} else {
			err = errno;
		}
		close(p->fd);
		/* Out of ports for a moment (TIME_WAIT): try again. */
		if ((err != EADDRNOTAVAIL && err != EAGAIN) ||
		    now_ms() > deadline)
			fail("connect to the listener");
		usleep(10000);
	}
}

/* ------------------------------------------------------------------ */
/* One input                                                            */

static void reset_memory(void)
{
	int i;

	memset(mr_map, FILL, GUARD);
	memset(mr_map + GUARD, 0, MR_LEN);
	memset(mr_map + GUARD + MR_LEN, FILL, GUARD);
	memset(local_map, FILL, local_len + 2 * GUARD);
	for (i = 0; i < BUF_COUNT; i++)
		memset(local_buf(i), 0, buf_len[i]);
}

static void check_memory(void)
{
	size_t i, b, next = 0;

	for (i = 0; i < GUARD; i++)
		if (mr_map[i] != FILL || mr_map[GUARD + MR_LEN + i] != FILL)
			fail("a byte landed outside the MR");
	/* Everything of the local mapping that is not a buffer: the guard
	 * pages and the gaps between the buffers. */
	for (b = 0; b <= BUF_COUNT; b++) {
		size_t end = b < BUF_COUNT ? GUARD + buf_off[b]
					   : local_len + 2 * GUARD;

		for (i = next; i < end; i++)
			if (local_map[i] != FILL)
				fail("a byte landed outside the posted "
				     "buffers");
		if (b < BUF_COUNT)
			next = end + buf_len[b];
	}
}

static void wait_ended(void)
{
	struct timespec ts;
	uint64_t deadline = now_ms() + 5000;
	bool gone;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += 5;
	pthread_mutex_lock(&ev_lock);
	while (ended != started &&
	       pthread_cond_timedwait(&ev_cond, &ev_lock, &ts) != ETIMEDOUT)
		;
	gone = ended == started;
	pthread_mutex_unlock(&ev_lock);
	if (!gone)
		fail("a connection did not go away within 5 s");
	/* The provider closes a socket on its engine thread, maybe just
	 * after the close completion. */
	while (count_fds() != fd_baseline) {
		if (now_ms() > deadline) {
			print_fds();
			fail("a file descriptor leaked");
		}
		usleep(200);
	}
}

/* Every request the server posted completes exactly once. */
static void drain_cq(unsigned int posted)
{
	unsigned int done = 0;
	NDK_RESULT r[16];
	ULONG n, i;

	while ((n = cq->Dispatch->NdkGetCqResults(cq, r, 16))) {
		for (i = 0; i < n; i++) {
			uintptr_t id = (uintptr_t)r[i].RequestContext;

			if (id < 1 || id >= CTX_COUNT ||
			    r[i].QPContext != &conn)
				fail("a completion nobody posted");
			if (!(posted & 1u << id) || (done & 1u << id))
				fail("a request completed twice");
			if (id <= NRECV && r[i].Status == STATUS_SUCCESS &&
			    r[i].BytesTransferred > RECV_A + RECV_B)
				fail("a receive longer than its buffers");
			done |= 1u << id;
		}
	}
	if (done != posted)
		fail("a posted request never completed");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool ready;
	struct peer p = { .fd = -1 };
	const uint8_t *s = data + 1;
	size_t len, off = 0, split;
	unsigned int had;
	uint8_t ctrl;

	if (!size)
		return 0;
	if (!ready) {
		setup();
		ready = true;
	}
	ctrl = data[0];
	len = size - 1;
	reset_memory();
	pthread_mutex_lock(&ev_lock);
	had = started;
	pthread_mutex_unlock(&ev_lock);
	atomic_store(&ctrl_now, ctrl);
	peer_connect(&p);
	if (ctrl & CTRL_EAGER) {
		pump(&p, s, &off, len, UNTIL_SENT, 2000);
	} else {
		/* Waits only where more is to come. */
		split = len < 20 ? len : 20 + (size_t)be16(s + 18);
		if (split < len)
			pump(&p, s, &off, split, UNTIL_REPLY, 1000);
		if ((ctrl & CTRL_POST) && reply_len(&p) && off + 2 <= len &&
		    !p.eof) {
			split = off + fpdu_len(be16(s + off));
			if (split < len)
				pump(&p, s, &off, split, UNTIL_READ_REQ, 1000);
		}
		pump(&p, s, &off, len, UNTIL_SENT, 2000);
	}
	if ((ctrl & CTRL_RESET) && reply_len(&p)) {
		struct linger lg = { .l_onoff = 1, .l_linger = 0 };

		setsockopt(p.fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	} else {
		shutdown(p.fd, SHUT_WR);
		pump(&p, NULL, &off, off, UNTIL_EOF, 2000);
	}
	close(p.fd);
	wait_ended();
	pthread_mutex_lock(&ev_lock);
	if (started > had + 1)
		fail("one TCP connection, several connect events");
	had = started - had;
	pthread_mutex_unlock(&ev_lock);
	drain_cq(had ? atomic_load(&conn.posted) : 0);
	check_memory();
	return 0;
}
