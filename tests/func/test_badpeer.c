/* SPDX-License-Identifier: MIT */
/*
 * Misbehaving MPA peers, written with plain TCP sockets on 127.0.0.1,
 * against the provider's connection manager (DESIGN.md section 3,
 * reference/iwarp.md 1 and 5):
 *
 *  - passive side: a raw client attacks our NDK listener (garbage, a
 *    truncated Request, markers, an oversized PD_Length, data behind the
 *    Request, closing (FIN or RST) or going silent at every step, a wrong
 *    RTR, an MPA v1 Request);
 *  - active side: a raw server answers our NdkConnect (garbage, no Reply,
 *    a Reject with data, markers, a foreign RTR choice, a truncated or
 *    oversized Reply, data behind the Reply, an MPA v1 Reply).
 *
 * Well-behaved raw peers (every RTR type, byte-by-byte frames, Reject)
 * are the controls that show the bad ones fail for the right reason.
 *
 * Every case must end in a clean status, with no ConnectEvent for a
 * malformed Request, no crash or hang, the listener still working and the
 * process's descriptors all back after NdkCloseAdapter. The frames are
 * spelled out byte by byte here, independent of the provider's encoder.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "cmutil.h"
#include "testutil.h"

#define CM_TIMEOUT_MS 300 /* NDK_CM_TIMEOUT_MS for this process */
#define LOOPS	      3 /* each scenario runs this many times */
#define WAIT_MS	      5000 /* "never" for things that must happen */
#define NUDGE_MS      50 /* NDK_RTR_NUDGE_MS for this process */
#define GRACE_MS      50 /* NDK_ACCEPT_GRACE_MS for this process */

/* ------------------------------------------------------------------ */
/* Wire bytes (reference/iwarp.md 1.2, 1.3, 1.5, 2)                   */

#define KEY_REQ "MPA ID Req Frame"
#define KEY_REP "MPA ID Rep Frame"
#define F_M	0x80 /* markers */
#define F_C	0x40 /* CRC */
#define F_R	0x20 /* reject */
#define F_S	0x10 /* enhanced: IRD/ORD block present */
/* IRD word: A (P2P), B (Send RTR). ORD word: C (Write RTR), D (Read). */
#define W_P2P	0x8000
#define W_SEND	0x4000
#define W_WRITE 0x8000
#define W_READ	0x4000

/* Rev 2, S|C, block A + IRD 4, C|D + ORD 4, then "hi". */
static const uint8_t good_req[] = {
	'M', 'P', 'A', ' ',  'I',  'D',	 ' ',  'R',  'e',  'q',	 ' ',  'F', 'r',
	'a', 'm', 'e', 0x50, 0x02, 0x00, 0x06, 0x80, 0x04, 0xc0, 0x04, 'h', 'i',
};

/* Rev 1 (RFC 5044), C, no block, "v1". */
static const uint8_t v1_req[] = {
	'M', 'P', 'A', ' ', 'I', 'D',  ' ',  'R',  'e',	 'q', ' ',
	'F', 'r', 'a', 'm', 'e', 0x40, 0x01, 0x00, 0x02, 'v', '1',
};

static void put16(uint8_t *p, unsigned int v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static unsigned int get16(const uint8_t *p)
{
	return (unsigned int)p[0] << 8 | p[1];
}

/*
 * A Request or Reply: key, flags, Rev, PD_Length (block + pd), the
 * IRD/ORD block if block is true, then pd. Returns the frame length.
 */
static size_t mpa_frame(uint8_t *buf, const char *key, uint8_t flags,
			uint8_t rev, bool block, unsigned int ird_word,
			unsigned int ord_word, const void *pd, size_t pd_len)
{
	size_t n = 20;

	memcpy(buf, key, 16);
	buf[16] = flags;
	buf[17] = rev;
	put16(buf + 18, (unsigned int)((block ? 4 : 0) + pd_len));
	if (block) {
		put16(buf + n, ird_word);
		put16(buf + n + 2, ord_word);
		n += 4;
	}
	if (pd_len)
		memcpy(buf + n, pd, pd_len);
	return n + pd_len;
}

/* CRC-32C, bit by bit (RFC 3720 B.4). */
static uint32_t crc32c(const uint8_t *p, size_t n)
{
	uint32_t c = 0xffffffffu;

	while (n--) {
		c ^= *p++;
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0x82f63b78u & (0u - (c & 1)));
	}
	return ~c;
}

/* An FPDU around ulpdu: length, ULPDU, pad, CRC (little-endian). */
static size_t fpdu(uint8_t *b, const uint8_t *ulpdu, size_t len, bool good)
{
	size_t n = 2 + len;
	uint32_t c;

	put16(b, (unsigned int)len);
	if (len)
		memcpy(b + 2, ulpdu, len);
	while (n & 3)
		b[n++] = 0;
	c = crc32c(b, n) ^ (good ? 0 : 1);
	b[n] = (uint8_t)c;
	b[n + 1] = (uint8_t)(c >> 8);
	b[n + 2] = (uint8_t)(c >> 16);
	b[n + 3] = (uint8_t)(c >> 24);
	return n + 4;
}

/* Zero-length RDMA Write, STag 1, TO 0: the Write RTR (20 bytes). */
static const uint8_t ulpdu_write_rtr[14] = { 0xc1, 0x40, 0, 0, 0, 1, 0,
					     0,	   0,	 0, 0, 0, 0, 0 };
/* Zero-length Send, QN 0, MSN 1, MO 0: the Send RTR (24 bytes). */
static const uint8_t ulpdu_send_rtr[18] = { 0x41, 0x43, 0, 0, 0, 0, 0, 0, 0,
					    0,	  0,	0, 0, 1, 0, 0, 0, 0 };
/*
 * Zero-length RDMA Read Request, QN 1, MSN 1: sink STag 0x11223344, sink
 * TO 0x0102030405060708, size 0, source STag 1, source TO 0 (52 bytes).
 */
static const uint8_t ulpdu_read_rtr[46] = {
	0x41, 0x41, 0,	  0,	0,    0,    0,	  0,	0,    1,    0,	  0,
	0,    1,    0,	  0,	0,    0,    0x11, 0x22, 0x33, 0x44, 0x01, 0x02,
	0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0,	  0,	0,    0,    0,	  0,
	0,    1,    0,	  0,	0,    0,    0,	  0,	0,    0,
};

static void test_crc32c_vector(void **state)
{
	/* iwarp.md 7: the check value of CRC-32C. */
	assert_int_equal(crc32c((const uint8_t *)"123456789", 9), 0xe3069283u);
}

/* ------------------------------------------------------------------ */
/* Raw sockets                                                        */

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

static int raw_connect(const struct sockaddr_storage *to)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1;

	assert_true(fd >= 0);
	assert_int_equal(connect(fd, (const struct sockaddr *)to,
				 sizeof(struct sockaddr_in)),
			 0);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

static int raw_listen(struct sockaddr_in *addr)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	socklen_t len = sizeof(*addr);

	assert_true(fd >= 0);
	*addr = cm_lo4(0);
	assert_int_equal(bind(fd, (struct sockaddr *)addr, sizeof(*addr)), 0);
	assert_int_equal(listen(fd, 8), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)addr, &len), 0);
	return fd;
}

static int raw_accept(int lfd)
{
	struct pollfd p = { .fd = lfd, .events = POLLIN };
	int one = 1, fd;

	assert_int_equal(poll(&p, 1, WAIT_MS), 1);
	fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	assert_true(fd >= 0);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

static void raw_send(int fd, const void *buf, size_t len)
{
	assert_int_equal(send(fd, buf, len, MSG_NOSIGNAL), (ssize_t)len);
}

/* Sends one byte at a time, 1 ms apart: every split of the stream. */
static void raw_send_slowly(int fd, const uint8_t *buf, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		raw_send(fd, buf + i, 1);
		tu_sleep_ms(1);
	}
}

/*
 * Reads len bytes within ms. Returns len, fewer if the stream ended
 * (EOF or reset) first, or -ETIMEDOUT if it is still open but short.
 */
static ssize_t raw_recv(int fd, void *buf, size_t len, unsigned int ms)
{
	uint64_t end = tu_now_ms() + ms;
	size_t got = 0;

	while (got < len) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		uint64_t now = tu_now_ms();
		ssize_t n;
		int r;

		if (now >= end)
			return -ETIMEDOUT;
		r = poll(&p, 1, (int)(end - now));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -ETIMEDOUT;
		n = recv(fd, (uint8_t *)buf + got, len - got, MSG_DONTWAIT);
		if (n == 0)
			break;
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			break; /* ECONNRESET */
		}
		got += (size_t)n;
	}
	return (ssize_t)got;
}

enum raw_end { END_EOF, END_RESET, END_DATA, END_TIMEOUT };

/* How the stream goes on within ms: data, end (FIN or RST) or nothing. */
static enum raw_end raw_next(int fd, unsigned int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	uint8_t b;
	ssize_t n;

	if (poll(&p, 1, (int)ms) != 1)
		return END_TIMEOUT;
	n = recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
	if (n > 0)
		return END_DATA;
	return n == 0 ? END_EOF : END_RESET;
}

/* The provider dropped the connection: FIN or RST, and no byte before. */
static void assert_dropped(int fd, unsigned int ms)
{
	enum raw_end e = raw_next(fd, ms);

	if (e != END_EOF && e != END_RESET)
		fail_msg("expected the connection dropped, got %s",
			 e == END_DATA ? "data" : "nothing");
}

/* Reads one MPA Request or Reply: 20-byte header, then PD_Length bytes. */
struct frame {
	uint8_t hdr[20];
	uint8_t pd[512];
	size_t pd_len;
};

static void raw_read_frame(int fd, struct frame *f, const char *key)
{
	assert_int_equal(raw_recv(fd, f->hdr, 20, WAIT_MS), 20);
	assert_memory_equal(f->hdr, key, 16);
	f->pd_len = get16(f->hdr + 18);
	assert_true(f->pd_len <= 256);
	assert_int_equal(raw_recv(fd, f->pd, f->pd_len, WAIT_MS),
			 (ssize_t)f->pd_len);
}

/* ------------------------------------------------------------------ */
/* Our side                                                           */

/* NdkCloseAdapter after closing the PD and CQ, so it has nothing left to
 * close (and warn about) but what a scenario leaves open on purpose. */
static void host_close(struct cm_host *h)
{
	NTSTATUS st;

	st = h->cq->Dispatch->NdkCloseCq(&h->cq->Header, NULL, NULL);
	assert_true(st == STATUS_SUCCESS || st == STATUS_PENDING);
	st = h->pd->Dispatch->NdkClosePd(&h->pd->Header, NULL, NULL);
	assert_true(st == STATUS_SUCCESS || st == STATUS_PENDING);
	cm_host_close(h);
}

struct passive {
	struct cm_host h;
	struct tool_listener l;
	int fds; /* with the listener up and nothing connected */
};

static bool fds_back(void *arg)
{
	return count_fds() == ((struct passive *)arg)->fds;
}

static void passive_open(struct passive *p)
{
	struct sockaddr_in any = cm_lo4(0);

	cm_host_open(&p->h, "lo");
	assert_int_equal(cm_listen(&p->h, &p->l, (struct sockaddr *)&any),
			 STATUS_SUCCESS);
	p->fds = count_fds();
}

/* The provider let go of every socket of the bad peers. */
static void passive_settled(struct passive *p)
{
	if (!tu_wait_until(fds_back, p, WAIT_MS))
		fail_msg("%d descriptors open, %d expected", count_fds(),
			 p->fds);
	/* And raised no ConnectEvent for them. */
	assert_null(cm_next_incoming(&p->l, 20));
}

/* A well-behaved NDK connect to the listener still works. */
static void sanity_connect(struct passive *p)
{
	NDK_QP *aqp = cm_qp(&p->h), *pqp = cm_qp(&p->h);
	NDK_CONNECTOR *a = cm_connector(&p->h), *c;
	struct cm_req conn, acc;
	char buf[16];
	ULONG len = sizeof(buf);

	assert_null(cm_next_incoming(&p->l, 0));
	assert_int_equal(cm_connect(a, aqp, (struct sockaddr *)&p->l.addr, 1, 1,
				    "sanity", 6, &conn),
			 STATUS_PENDING);
	c = cm_next_incoming(&p->l, WAIT_MS);
	assert_non_null(c);
	/* The event is for this connect, not a leftover of a bad peer. */
	assert_int_equal(
		c->Dispatch->NdkGetConnectionData(c, NULL, NULL, buf, &len),
		STATUS_SUCCESS);
	assert_int_equal(len, 6);
	assert_memory_equal(buf, "sanity", 6);
	cm_req_init(&acc);
	assert_int_equal(c->Dispatch->NdkAccept(c, pqp, 1, 1, NULL, 0, NULL,
						NULL, cm_req_done, &acc),
			 STATUS_PENDING);
	assert_int_equal(cm_req_wait(&conn, WAIT_MS), STATUS_SUCCESS);
	assert_int_equal(
		a->Dispatch->NdkCompleteConnect(a, NULL, NULL, NULL, NULL),
		STATUS_SUCCESS);
	assert_int_equal(cm_req_wait(&acc, WAIT_MS), STATUS_SUCCESS);
	cm_close_connector(a);
	cm_close_connector(c);
	cm_close_qp(aqp);
	cm_close_qp(pqp);
}

static void passive_close(struct passive *p)
{
	sanity_connect(p);
	cm_listener_close(&p->l);
	host_close(&p->h);
}

/* Runs a scenario LOOPS times: the descriptors must all come back. */
static void loop(void (*scenario)(void))
{
	int before = count_fds();

	for (int i = 0; i < LOOPS; i++) {
		scenario();
		assert_int_equal(count_fds(), before);
	}
}

/* A raw client sends req; the listener's ConnectEvent hands us c. */
static NDK_CONNECTOR *raw_request(struct passive *p, int *fd,
				  const uint8_t *req, size_t len)
{
	NDK_CONNECTOR *c;

	*fd = raw_connect(&p->l.addr);
	raw_send(*fd, req, len);
	c = cm_next_incoming(&p->l, WAIT_MS);
	assert_non_null(c);
	return c;
}

/* The consumer accepts c (PD "ok"); the raw client reads the Reply. */
static NDK_QP *accept_and_read_reply(struct passive *p, NDK_CONNECTOR *c,
				     int fd, struct cm_req *acc,
				     struct frame *rep)
{
	NDK_QP *qp = cm_qp(&p->h);

	cm_req_init(acc);
	assert_int_equal(c->Dispatch->NdkAcceptEx(c, qp, 4, 4, (PVOID) "ok", 2,
						  NULL, NULL, cm_req_done, acc),
			 STATUS_PENDING);
	raw_read_frame(fd, rep, KEY_REP);
	assert_int_equal(rep->hdr[16] & (F_R | F_M), 0);
	return qp;
}

/* A P2P Reply to good_req: Rev 2, S, A, exactly the Write RTR chosen. */
static void assert_p2p_write_reply(const struct frame *rep)
{
	assert_int_equal(rep->hdr[17], 2);
	assert_true(rep->hdr[16] & F_S);
	assert_int_equal(rep->pd_len, 4 + 2);
	assert_int_equal(get16(rep->pd) & (W_P2P | W_SEND), W_P2P);
	assert_int_equal(get16(rep->pd + 2) & (W_WRITE | W_READ), W_WRITE);
	/* IRD = min(4, 128, peer ORD 4), ORD = min(4, 128, peer IRD 4). */
	assert_int_equal(get16(rep->pd) & 0x3fff, 4);
	assert_int_equal(get16(rep->pd + 2) & 0x3fff, 4);
	assert_memory_equal(rep->pd + 4, "ok", 2);
}

/* The consumer accepted; the raw client sends bad as its RTR. */
static void wrong_rtr(struct passive *p, const uint8_t *bad, size_t len)
{
	struct cm_req acc;
	struct frame rep;
	NDK_CONNECTOR *c;
	NDK_QP *qp;
	NTSTATUS st;
	int fd;

	c = raw_request(p, &fd, good_req, sizeof(good_req));
	qp = accept_and_read_reply(p, c, fd, &acc, &rep);
	assert_p2p_write_reply(&rep);
	raw_send(fd, bad, len);
	st = cm_req_wait(&acc, WAIT_MS);
	if (st == STATUS_SUCCESS || st == -1)
		fail_msg("a wrong RTR gave Accept %#x", (unsigned int)st);
	assert_int_equal(st, STATUS_CONNECTION_ABORTED);
	assert_dropped(fd, WAIT_MS);
	close(fd);
	cm_close_connector(c);
	cm_close_qp(qp);
}

static void sc_passive_wrong_rtr(void)
{
	struct passive p;
	uint8_t b[128];
	size_t n;

	passive_open(&p);
	/* A zero-length Send where the Write was chosen. */
	n = fpdu(b, ulpdu_send_rtr, sizeof(ulpdu_send_rtr), true);
	wrong_rtr(&p, b, n);
	/* A zero-length Read Request where the Write was chosen. */
	n = fpdu(b, ulpdu_read_rtr, sizeof(ulpdu_read_rtr), true);
	wrong_rtr(&p, b, n);
	/* The right Write, but its CRC is off by one bit. */
	n = fpdu(b, ulpdu_write_rtr, sizeof(ulpdu_write_rtr), false);
	wrong_rtr(&p, b, n);
	/* A Write with a payload is not a zero-length Write. */
	{
		uint8_t u[18];

		memcpy(u, ulpdu_write_rtr, 14);
		memcpy(u + 14, "data", 4);
		n = fpdu(b, u, sizeof(u), true);
		wrong_rtr(&p, b, n);
	}
	/* ULPDU_Length 0xffff: far more than any RTR. */
	memset(b, 0xff, 64);
	wrong_rtr(&p, b, 64);
	/* ULPDU_Length 0: no DDP header at all. */
	n = fpdu(b, NULL, 0, true);
	wrong_rtr(&p, b, n);
	/* An MPA Request again instead of an FPDU. */
	wrong_rtr(&p, good_req, sizeof(good_req));
	passive_settled(&p);
	passive_close(&p);
}

static void test_passive_wrong_rtr(void **state)
{
	loop(sc_passive_wrong_rtr);
}

/* Controls: the right RTR completes the Accept, for each RTR type. */
static void good_rtr(struct passive *p, unsigned int offer_ird,
		     unsigned int offer_ord, unsigned int want_ird,
		     unsigned int want_ord, const uint8_t *ulpdu, size_t len)
{
	uint8_t req[32], b[64], resp[20];
	struct cm_req acc;
	struct frame rep;
	NDK_CONNECTOR *c;
	NDK_QP *qp;
	size_t n;
	int fd;

	n = mpa_frame(req, KEY_REQ, F_S | F_C, 2, true, W_P2P | offer_ird | 4,
		      offer_ord | 4, "hi", 2);
	c = raw_request(p, &fd, req, n);
	qp = accept_and_read_reply(p, c, fd, &acc, &rep);
	assert_int_equal(get16(rep.pd) & 0xc000, W_P2P | want_ird);
	assert_int_equal(get16(rep.pd + 2) & 0xc000, want_ord);
	assert_true(rep.hdr[16] & F_C); /* CRC on: we sent C */
	n = fpdu(b, ulpdu, len, true);
	raw_send(fd, b, n);
	assert_int_equal(cm_req_wait(&acc, WAIT_MS), STATUS_SUCCESS);
	if (ulpdu == ulpdu_read_rtr) {
		/* A zero-length Read Response to the sink STag and TO. */
		static const uint8_t want[14] = { 0xc1, 0x42, 0x11, 0x22, 0x33,
						  0x44, 0x01, 0x02, 0x03, 0x04,
						  0x05, 0x06, 0x07, 0x08 };

		assert_int_equal(raw_recv(fd, resp, 20, WAIT_MS), 20);
		n = fpdu(b, want, sizeof(want), true);
		assert_memory_equal(resp, b, 20);
	}
	/* Nothing else comes before we send data. */
	assert_int_equal(raw_next(fd, 50), END_TIMEOUT);
	cm_close_connector(c);
	assert_int_equal(raw_next(fd, WAIT_MS), END_EOF);
	close(fd);
	cm_close_qp(qp);
}

static void sc_passive_good_rtr(void)
{
	struct passive p;

	passive_open(&p);
	good_rtr(&p, 0, W_WRITE | W_READ, 0, W_WRITE, ulpdu_write_rtr,
		 sizeof(ulpdu_write_rtr));
	good_rtr(&p, 0, W_READ, 0, W_READ, ulpdu_read_rtr,
		 sizeof(ulpdu_read_rtr));
	good_rtr(&p, W_SEND, 0, W_SEND, 0, ulpdu_send_rtr,
		 sizeof(ulpdu_send_rtr));
	passive_settled(&p);
	passive_close(&p);
}

static void test_passive_good_rtr(void **state)
{
	loop(sc_passive_good_rtr);
}

/*
 * An MPA v1 (RFC 5044) initiator: no IRD/ORD block, no RTR. Accepted; the
 * Reply is Rev 1 without S, and the Accept completes once the Reply is
 * out, without an FPDU from the initiator (siw without peer_to_peer sends
 * none before a server that speaks first, e.g. ucmatose's): we may send
 * first, and the initiator's first FPDU is ordinary data. Also Rev 2
 * without S: a v2 peer not using RFC 6581.
 */
static bool cq_has_one(void *arg)
{
	struct cm_host *h = arg;
	NDK_RESULT r;

	return h->cq->Dispatch->NdkGetCqResults(h->cq, &r, 1) == 1 &&
	       r.Status == STATUS_SUCCESS;
}

static void v1_peer(struct passive *p, const uint8_t *req, size_t len,
		    uint8_t rev)
{
	struct cm_req acc;
	struct frame rep;
	NDK_CONNECTOR *c;
	NDK_QP *qp;
	ULONG ird = 0, ord = 0, pdlen = 0;
	uint8_t b[64];
	size_t n;
	int fd;

	c = raw_request(p, &fd, req, len);
	assert_int_equal(
		c->Dispatch->NdkGetConnectionData(c, &ird, &ord, NULL, &pdlen),
		STATUS_SUCCESS);
	assert_int_equal(pdlen, 2); /* no block to strip */
	/* No IRD/ORD from an MPA v1 peer: assumed 1/1, as siw runs. */
	assert_int_equal(ird, 1);
	assert_int_equal(ord, 1);
	qp = accept_and_read_reply(p, c, fd, &acc, &rep);
	assert_int_equal(rep.hdr[17], rev);
	assert_false(rep.hdr[16] & F_S);
	assert_int_equal(rep.pd_len, 2);
	assert_memory_equal(rep.pd, "ok", 2);
	/* Up without a word from the initiator, NDK_ACCEPT_GRACE_MS after
	 * the Reply (not at once: our first FPDU must not share the Reply's
	 * segment, siw drops such a connection)... */
	assert_int_equal(cm_req_wait(&acc, GRACE_MS / 2), (NTSTATUS)-1);
	assert_int_equal(cm_req_wait(&acc, WAIT_MS), STATUS_SUCCESS);
	/* ...so we speak first: a zero-length Send reaches the peer. */
	assert_int_equal(qp->Dispatch->NdkSend(qp, NULL, NULL, 0, 0),
			 STATUS_SUCCESS);
	n = 2 + 18 + (rep.hdr[16] & F_C ? 4 : 0); /* header, CRC if on */
	assert_true(raw_recv(fd, b, n, WAIT_MS) == (ssize_t)n);
	assert_int_equal(b[0] << 8 | b[1], 18); /* ULPDU: untagged header */
	/* The initiator's first FPDU is data: a zero-length Send into a
	 * posted receive, not a handshake step. */
	assert_int_equal(qp->Dispatch->NdkReceive(qp, NULL, NULL, 0),
			 STATUS_SUCCESS);
	n = fpdu(b, ulpdu_send_rtr, sizeof(ulpdu_send_rtr), true);
	raw_send(fd, b, n);
	assert_true(tu_wait_until(cq_has_one, &p->h, WAIT_MS));
	cm_close_connector(c);
	assert_dropped(fd, WAIT_MS);
	close(fd);
	cm_close_qp(qp);
}

static void sc_passive_v1(void)
{
	struct passive p;
	uint8_t req[32];
	size_t n;

	passive_open(&p);
	v1_peer(&p, v1_req, sizeof(v1_req), 1);
	n = mpa_frame(req, KEY_REQ, F_C, 2, false, 0, 0, "v2", 2);
	v1_peer(&p, req, n, 2);
	passive_settled(&p);
	passive_close(&p);
}

static void test_passive_v1(void **state)
{
	loop(sc_passive_v1);
}

/* A v1 initiator that stays silent after the Reply is connected all the
 * same; one that then leaves ends the connection, and nothing leaks. */
static void sc_passive_v1_leaves(void)
{
	struct passive p;
	struct cm_req acc;
	struct frame rep;
	NDK_CONNECTOR *c;
	NDK_QP *qp;
	int fd;

	passive_open(&p);
	c = raw_request(&p, &fd, v1_req, sizeof(v1_req));
	qp = accept_and_read_reply(&p, c, fd, &acc, &rep);
	assert_int_equal(cm_req_wait(&acc, WAIT_MS), STATUS_SUCCESS);
	close(fd);
	cm_close_connector(c);
	cm_close_qp(qp);
	passive_settled(&p);
	passive_close(&p);
}

static void test_passive_v1_leaves(void **state)
{
	loop(sc_passive_v1_leaves);
}

/* ------------------------------------------------------------------ */
/* Active side: a raw server answers our NdkConnect                   */

struct active {
	struct cm_host h;
	int lfd, sfd;
	struct sockaddr_in addr;
	NDK_QP *qp;
	NDK_CONNECTOR *c;
	struct cm_req conn;
	uint64_t t0;
};

/* NdkConnect to a raw server, which accepts and reads our Request. */
static void active_open(struct active *a)
{
	struct frame req;

	cm_host_open(&a->h, "lo");
	a->lfd = raw_listen(&a->addr);
	a->qp = cm_qp(&a->h);
	a->c = cm_connector(&a->h);
	a->t0 = tu_now_ms();
	assert_int_equal(cm_connect(a->c, a->qp, (struct sockaddr *)&a->addr, 8,
				    4, "req", 3, &a->conn),
			 STATUS_PENDING);
	a->sfd = raw_accept(a->lfd);
	/* What we send: Rev 2, S, A, Write and Read RTR offered. */
	raw_read_frame(a->sfd, &req, KEY_REQ);
	assert_int_equal(req.hdr[17], 2);
	assert_int_equal(req.hdr[16] & (F_S | F_M | F_R), F_S);
	assert_int_equal(req.pd_len, 4 + 3);
	assert_int_equal(get16(req.pd), W_P2P | 8);
	assert_int_equal(get16(req.pd + 2), W_WRITE | W_READ | 4);
	assert_memory_equal(req.pd + 4, "req", 3);
}

static void active_close(struct active *a)
{
	cm_close_connector(a->c);
	cm_close_qp(a->qp);
	if (a->sfd >= 0)
		close(a->sfd);
	close(a->lfd);
	host_close(&a->h);
}

/* A valid P2P Reply choosing the Write RTR (control). */
static size_t good_reply(uint8_t *buf)
{
	return mpa_frame(buf, KEY_REP, F_S | F_C, 2, true, W_P2P | 4,
			 W_WRITE | 8, "ok", 2);
}

/*
 * NdkConnect to a raw server that replies well (slowly: a byte at a
 * time), then NdkCompleteConnect; the raw side reads our RTR into rtr
 * (20 bytes: the zero-length Write to STag 1, with CRC).
 */
static void active_established(struct active *a, bool slowly, uint8_t *rtr)
{
	uint8_t buf[64], want[64];
	size_t n;

	active_open(a);
	n = good_reply(buf);
	if (slowly)
		raw_send_slowly(a->sfd, buf, n);
	else
		raw_send(a->sfd, buf, n);
	assert_int_equal(cm_req_wait(&a->conn, WAIT_MS), STATUS_SUCCESS);
	assert_int_equal(a->c->Dispatch->NdkCompleteConnect(a->c, NULL, NULL,
							    NULL, NULL),
			 STATUS_SUCCESS);
	assert_int_equal(raw_recv(a->sfd, rtr, 20, WAIT_MS), 20);
	n = fpdu(want, ulpdu_write_rtr, sizeof(ulpdu_write_rtr), true);
	assert_memory_equal(rtr, want, n);
}

static void sc_active_good(void)
{
	struct active a;
	uint8_t buf[64], rtr[64];
	size_t n;

	active_open(&a);
	n = good_reply(buf);
	raw_send(a.sfd, buf, n);
	assert_int_equal(cm_req_wait(&a.conn, WAIT_MS), STATUS_SUCCESS);
	assert_int_equal(raw_next(a.sfd, 20), END_TIMEOUT);
	assert_int_equal(
		a.c->Dispatch->NdkCompleteConnect(a.c, NULL, NULL, NULL, NULL),
		STATUS_SUCCESS);
	/* The zero-length Write RTR, STag 1, with CRC (C was set). */
	assert_int_equal(raw_recv(a.sfd, buf, 20, WAIT_MS), 20);
	n = fpdu(rtr, ulpdu_write_rtr, sizeof(ulpdu_write_rtr), true);
	assert_int_equal(n, 20);
	assert_memory_equal(buf, rtr, 20);
	assert_int_equal(raw_next(a.sfd, 20), END_TIMEOUT);
	active_close(&a);
}

static void test_active_good(void **state)
{
	loop(sc_active_good);
}

/*
 * The RTR nudge (NDK_RTR_NUDGE_MS, tests/interop/README.md bug 1): a
 * responder that has sent nothing NUDGE_MS after our Write RTR gets one
 * more zero-length Write, byte for byte the RTR, and nothing after it.
 */
static void sc_active_nudge(void)
{
	struct active a;
	uint8_t rtr[64], buf[64];

	active_established(&a, false, rtr);
	assert_int_equal(raw_next(a.sfd, NUDGE_MS / 2), END_TIMEOUT);
	assert_int_equal(raw_recv(a.sfd, buf, 20, WAIT_MS), 20);
	assert_memory_equal(buf, rtr, 20);
	assert_int_equal(raw_next(a.sfd, 4 * NUDGE_MS), END_TIMEOUT);
	active_close(&a);
}

static void test_active_nudge(void **state)
{
	loop(sc_active_nudge);
}

/* A responder that spoke after the RTR read it: no nudge. */
static void sc_active_nudge_peer_spoke(void)
{
	struct active a;
	uint8_t rtr[64], buf[64];
	size_t n;

	active_open(&a);
	/* A zero-length receive for the peer's zero-length Send. */
	assert_int_equal(a.qp->Dispatch->NdkReceive(a.qp, NULL, NULL, 0),
			 STATUS_SUCCESS);
	n = good_reply(buf);
	raw_send(a.sfd, buf, n);
	assert_int_equal(cm_req_wait(&a.conn, WAIT_MS), STATUS_SUCCESS);
	assert_int_equal(
		a.c->Dispatch->NdkCompleteConnect(a.c, NULL, NULL, NULL, NULL),
		STATUS_SUCCESS);
	assert_int_equal(raw_recv(a.sfd, rtr, 20, WAIT_MS), 20);
	n = fpdu(buf, ulpdu_send_rtr, sizeof(ulpdu_send_rtr), true);
	raw_send(a.sfd, buf, n);
	assert_int_equal(raw_next(a.sfd, 4 * NUDGE_MS), END_TIMEOUT);
	active_close(&a);
}

static void test_active_nudge_peer_spoke(void **state)
{
	loop(sc_active_nudge_peer_spoke);
}

/*
 * Closing the connector, or disconnecting, while the nudge is pending
 * cancels it: the peer sees the end of the stream and nothing else (and
 * the sanitizer runs see no timer firing on a freed connector).
 */
static void sc_active_nudge_cancelled(void)
{
	struct active a;
	uint8_t rtr[64];
	struct cm_req d;

	active_established(&a, false, rtr);
	cm_close_connector(a.c);
	a.c = NULL;
	assert_int_equal(raw_next(a.sfd, WAIT_MS), END_EOF);
	tu_sleep_ms(2 * NUDGE_MS);
	cm_close_qp(a.qp);
	close(a.sfd);
	close(a.lfd);
	host_close(&a.h);

	active_established(&a, false, rtr);
	cm_req_init(&d);
	assert_int_equal(a.c->Dispatch->NdkDisconnect(a.c, cm_req_done, &d),
			 STATUS_PENDING);
	assert_int_equal(raw_next(a.sfd, WAIT_MS), END_EOF);
	shutdown(a.sfd, SHUT_WR);
	assert_int_equal(cm_req_wait(&d, WAIT_MS), STATUS_SUCCESS);
	tu_sleep_ms(2 * NUDGE_MS);
	active_close(&a);
}

static void test_active_nudge_cancelled(void **state)
{
	loop(sc_active_nudge_cancelled);
}

/*
 * libndk on both ends with the nudge on: the responder takes the extra
 * zero-length Write (its STag is not looked up: nothing is placed) and the
 * connection carries data afterwards, with no Terminate.
 */
static void sc_nudge_between_libndk(void)
{
	struct sockaddr_in any = cm_lo4(0);
	struct cm_host srv, cli;
	struct tool_listener l;
	struct cm_req r, acc;
	NDK_CONNECTOR *a, *p;
	NDK_QP *aqp, *pqp;
	NDK_RESULT res;
	int k;

	cm_host_open(&srv, "lo");
	cm_host_open(&cli, "lo");
	aqp = cm_qp(&cli);
	pqp = cm_qp(&srv);
	assert_int_equal(cm_listen(&srv, &l, (struct sockaddr *)&any),
			 STATUS_SUCCESS);
	a = cm_connector(&cli);
	assert_int_equal(cm_connect(a, aqp, (struct sockaddr *)&l.addr, 1, 1,
				    NULL, 0, &r),
			 STATUS_PENDING);
	p = cm_next_incoming(&l, WAIT_MS);
	assert_non_null(p);
	cm_req_init(&acc);
	assert_int_equal(p->Dispatch->NdkAccept(p, pqp, 1, 1, NULL, 0, NULL,
						NULL, cm_req_done, &acc),
			 STATUS_PENDING);
	assert_int_equal(cm_req_wait(&r, WAIT_MS), STATUS_SUCCESS);
	assert_int_equal(
		a->Dispatch->NdkCompleteConnect(a, NULL, NULL, NULL, NULL),
		STATUS_SUCCESS);
	assert_int_equal(cm_req_wait(&acc, WAIT_MS), STATUS_SUCCESS);
	/* The responder says nothing: the nudge goes out and arrives. */
	tu_sleep_ms(3 * NUDGE_MS);
	assert_int_equal(pqp->Dispatch->NdkReceive(pqp, (PVOID)7, NULL, 0),
			 STATUS_SUCCESS);
	assert_int_equal(aqp->Dispatch->NdkSend(aqp, (PVOID)8, NULL, 0, 0),
			 STATUS_SUCCESS);
	for (k = 0; k < 2; k++) {
		NDK_CQ *cq = k ? cli.cq : srv.cq;
		uint64_t end = tu_now_ms() + WAIT_MS;

		while (!cq->Dispatch->NdkGetCqResults(cq, &res, 1) &&
		       tu_now_ms() < end)
			tu_sleep_ms(1);
		assert_int_equal(res.Status, STATUS_SUCCESS);
		assert_ptr_equal(res.RequestContext, (PVOID)(uintptr_t)(7 + k));
	}
	cm_close_connector(a);
	cm_close_connector(p);
	cm_close_qp(aqp);
	cm_close_qp(pqp);
	cm_listener_close(&l);
	host_close(&cli);
	host_close(&srv);
}

static void test_nudge_between_libndk(void **state)
{
	loop(sc_nudge_between_libndk);
}

/* An MPA v1 responder: Rev 1 Reply, no RTR is sent. */
static void sc_active_v1(void)
{
	struct active a;
	uint8_t buf[64];
	char pd[8];
	ULONG len = sizeof(pd);
	size_t n;

	active_open(&a);
	n = mpa_frame(buf, KEY_REP, F_C, 1, false, 0, 0, "v1", 2);
	raw_send(a.sfd, buf, n);
	assert_int_equal(cm_req_wait(&a.conn, WAIT_MS), STATUS_SUCCESS);
	assert_int_equal(
		a.c->Dispatch->NdkGetConnectionData(a.c, NULL, NULL, pd, &len),
		STATUS_SUCCESS);
	assert_int_equal(len, 2);
	assert_memory_equal(pd, "v1", 2);
	assert_int_equal(
		a.c->Dispatch->NdkCompleteConnect(a.c, NULL, NULL, NULL, NULL),
		STATUS_SUCCESS);
	/* No RTR: nothing arrives until the consumer sends data. */
	assert_int_equal(raw_next(a.sfd, 200), END_TIMEOUT);
	cm_close_connector(a.c);
	a.c = NULL;
	assert_int_equal(raw_next(a.sfd, WAIT_MS), END_EOF);
	cm_close_qp(a.qp);
	close(a.sfd);
	close(a.lfd);
	host_close(&a.h);
}

static void test_active_v1(void **state)
{
	loop(sc_active_v1);
}

/*
 * The first listener of a process opens its OID registry file, which
 * stays open (and locked) for the process's life: open it before the
 * descriptor counts start.
 */
static int open_registry(void **state)
{
	struct cm_host h;
	struct tool_listener l;
	struct sockaddr_in any = cm_lo4(0);

	cm_host_open(&h, "lo");
	if (cm_listen(&h, &l, (struct sockaddr *)&any) != STATUS_SUCCESS)
		return -1;
	cm_listener_close(&l);
	cm_host_close(&h);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_crc32c_vector),
		cmocka_unit_test(test_passive_wrong_rtr),
		cmocka_unit_test(test_passive_good_rtr),
		cmocka_unit_test(test_passive_v1),
		cmocka_unit_test(test_passive_v1_leaves),
		cmocka_unit_test(test_active_good),
		cmocka_unit_test(test_active_v1),
		cmocka_unit_test(test_active_nudge),
		cmocka_unit_test(test_active_nudge_peer_spoke),
		cmocka_unit_test(test_active_nudge_cancelled),
		cmocka_unit_test(test_nudge_between_libndk),
	};
	char ms[16];

	/* Before any adapter (and engine thread) exists: no getenv race. */
	snprintf(ms, sizeof(ms), "%d", CM_TIMEOUT_MS);
	setenv("NDK_CM_TIMEOUT_MS", ms, 1);
	snprintf(ms, sizeof(ms), "%d", NUDGE_MS);
	setenv("NDK_RTR_NUDGE_MS", ms, 1);
	snprintf(ms, sizeof(ms), "%d", GRACE_MS);
	setenv("NDK_ACCEPT_GRACE_MS", ms, 1);
	return cmocka_run_group_tests_name("badpeer", tests, open_registry,
					   NULL);
}
