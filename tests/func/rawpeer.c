/* SPDX-License-Identifier: MIT */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "rawpeer.h"
#include "testutil.h"

/* ------------------------------------------------------------------ */
/* MPA frames                                                         */

const uint8_t mpa_req_v2[26] = {
	'M', 'P', 'A', ' ',  'I',  'D',	 ' ',  'R',  'e',  'q',	 ' ',  'F', 'r',
	'a', 'm', 'e', 0x50, 0x02, 0x00, 0x06, 0x80, 0x04, 0xc0, 0x04, 'h', 'i',
};

const uint8_t mpa_req_v1[22] = {
	'M', 'P', 'A', ' ', 'I', 'D',  ' ',  'R',  'e',	 'q', ' ',
	'F', 'r', 'a', 'm', 'e', 0x40, 0x01, 0x00, 0x02, 'v', '1',
};

size_t mpa_frame(uint8_t *buf, const char *key, uint8_t flags, uint8_t rev,
		 bool block, unsigned int ird_word, unsigned int ord_word,
		 const void *pd, size_t pd_len)
{
	size_t n = MPA_HDR_LEN;

	memcpy(buf, key, 16);
	buf[16] = flags;
	buf[17] = rev;
	put_be16(buf + 18, (unsigned int)((block ? 4 : 0) + pd_len));
	if (block) {
		put_be16(buf + n, ird_word);
		put_be16(buf + n + 2, ord_word);
		n += 4;
	}
	if (pd)
		memcpy(buf + n, pd, pd_len);
	else
		memset(buf + n, 'x', pd_len);
	return n + pd_len;
}

/* ------------------------------------------------------------------ */
/* FPDUs                                                              */

void put_be16(uint8_t *p, unsigned int v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

void put_be32(uint8_t *p, uint32_t v)
{
	put_be16(p, v >> 16);
	put_be16(p + 2, v & 0xffff);
}

void put_be64(uint8_t *p, uint64_t v)
{
	put_be32(p, (uint32_t)(v >> 32));
	put_be32(p + 4, (uint32_t)v);
}

unsigned int get_be16(const uint8_t *p)
{
	return (unsigned int)p[0] << 8 | p[1];
}

uint32_t get_be32(const uint8_t *p)
{
	return (uint32_t)get_be16(p) << 16 | get_be16(p + 2);
}

uint64_t get_be64(const uint8_t *p)
{
	return (uint64_t)get_be32(p) << 32 | get_be32(p + 4);
}

uint32_t crc32c(const uint8_t *p, size_t n)
{
	uint32_t c = 0xffffffffu;

	while (n--) {
		c ^= *p++;
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0x82f63b78u & (0u - (c & 1)));
	}
	return ~c;
}

size_t fpdu_build(uint8_t *b, const uint8_t *ulpdu, size_t len, bool good_crc)
{
	size_t n = 2 + len;
	uint32_t c;

	put_be16(b, (unsigned int)len);
	if (len)
		memcpy(b + 2, ulpdu, len);
	while (n & 3)
		b[n++] = 0;
	c = crc32c(b, n) ^ (good_crc ? 0 : 1);
	b[n] = (uint8_t)c;
	b[n + 1] = (uint8_t)(c >> 8);
	b[n + 2] = (uint8_t)(c >> 16);
	b[n + 3] = (uint8_t)(c >> 24);
	return n + 4;
}

const uint8_t ulpdu_write_rtr[14] = { 0xc1, 0x40, 0, 0, 0, 1, 0,
				      0,    0,	  0, 0, 0, 0, 0 };

const uint8_t ulpdu_send_rtr[18] = { 0x41, 0x43, 0, 0, 0, 0, 0, 0, 0,
				     0,	   0,	 0, 0, 1, 0, 0, 0, 0 };

const uint8_t ulpdu_read_rtr[46] = {
	0x41, 0x41, 0,	  0,	0,    0,    0,	  0,	0,    1,    0,	  0,
	0,    1,    0,	  0,	0,    0,    0x11, 0x22, 0x33, 0x44, 0x01, 0x02,
	0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0,	  0,	0,    0,    0,	  0,
	0,    1,    0,	  0,	0,    0,    0,	  0,	0,    0,
};

size_t ddp_untagged_hdr(uint8_t *u, uint8_t ddp_ctrl, uint8_t rdmap_ctrl,
			uint32_t qn, uint32_t msn, uint32_t mo)
{
	u[0] = ddp_ctrl;
	u[1] = rdmap_ctrl;
	put_be32(u + 2, 0);
	put_be32(u + 6, qn);
	put_be32(u + 10, msn);
	put_be32(u + 14, mo);
	return 18;
}

size_t ddp_tagged_hdr(uint8_t *u, uint8_t ddp_ctrl, uint8_t rdmap_ctrl,
		      uint32_t stag, uint64_t to)
{
	u[0] = ddp_ctrl;
	u[1] = rdmap_ctrl;
	put_be32(u + 2, stag);
	put_be64(u + 6, to);
	return 14;
}

size_t fpdu_terminate(uint8_t *b, unsigned int layer, unsigned int etype,
		      unsigned int ecode)
{
	uint8_t u[22];

	ddp_untagged_hdr(u, 0x41, 0x47, 2, 1, 0);
	put_be32(u + 18, (uint32_t)layer << 28 | (uint32_t)etype << 24 |
				 (uint32_t)ecode << 16);
	return fpdu_build(b, u, sizeof(u), true);
}

/* ------------------------------------------------------------------ */
/* Case tables                                                        */

/* The longest part: an MPA frame with 600 bytes of private data. */
#define RAW_PART_MAX (MPA_HDR_LEN + 4 + 600)

size_t raw_build(uint8_t *buf, size_t max, const struct raw_part *parts)
{
	uint8_t tmp[RAW_PART_MAX];
	const struct mpa_spec *m;
	size_t n = 0, k;

	for (; parts->kind != RAW_END; parts++) {
		switch (parts->kind) {
		case RAW_BYTES:
		case RAW_FILL:
			k = parts->len;
			break;
		case RAW_MPA_FRAME:
			m = &parts->mpa;
			assert_true(4 + m->pd_len <=
				    RAW_PART_MAX - MPA_HDR_LEN);
			k = mpa_frame(tmp, m->key, m->flags, m->rev, m->block,
				      m->ird_word, m->ord_word, m->pd,
				      m->pd_len);
			if (parts->cut)
				k = parts->cut;
			break;
		default:
			assert_true(parts->len + 9 <= RAW_PART_MAX);
			k = fpdu_build(tmp, parts->data, parts->len,
				       parts->kind == RAW_FPDU);
			break;
		}
		assert_true(n + k <= max);
		if (parts->kind == RAW_BYTES)
			memcpy(buf + n, parts->data, k);
		else if (parts->kind == RAW_FILL)
			memset(buf + n, parts->byte, k);
		else
			memcpy(buf + n, tmp, k);
		n += k;
	}
	return n;
}

size_t mpa_good_reply(uint8_t *buf)
{
	static const struct raw_part reply[] = { RAW_GOOD_REPLY,
						 { .kind = RAW_END } };

	return raw_build(buf, 64, reply);
}

/* ------------------------------------------------------------------ */
/* Raw sockets                                                        */

static void set_nodelay(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

int raw_connect_rcvbuf(const struct sockaddr_storage *to, int rcvbuf)
{
	return raw_connect_mss(to, rcvbuf, 0);
}

void raw_set_mss(int fd, int mss)
{
	if (mss)
		assert_int_equal(setsockopt(fd, IPPROTO_TCP, TCP_MAXSEG, &mss,
					    sizeof(mss)),
				 0);
}

int raw_connect_mss(const struct sockaddr_storage *to, int rcvbuf, int mss)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	if (rcvbuf)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	raw_set_mss(fd, mss);
	assert_int_equal(connect(fd, (const struct sockaddr *)to,
				 sizeof(struct sockaddr_in)),
			 0);
	set_nodelay(fd);
	return fd;
}

int raw_connect(const struct sockaddr_storage *to)
{
	return raw_connect_rcvbuf(to, 0);
}

int raw_listen(struct sockaddr_in *addr, int rcvbuf)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	socklen_t len = sizeof(*addr);

	assert_true(fd >= 0);
	if (rcvbuf)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	memset(addr, 0, sizeof(*addr));
	addr->sin_family = AF_INET;
	addr->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(fd, (struct sockaddr *)addr, sizeof(*addr)), 0);
	assert_int_equal(listen(fd, 8), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)addr, &len), 0);
	return fd;
}

int raw_accept(int lfd, unsigned int ms)
{
	struct pollfd p = { .fd = lfd, .events = POLLIN };
	int fd;

	assert_int_equal(poll(&p, 1, (int)ms), 1);
	fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	assert_true(fd >= 0);
	set_nodelay(fd);
	return fd;
}

void raw_send(int fd, const void *buf, size_t len)
{
	assert_int_equal(send(fd, buf, len, MSG_NOSIGNAL), (ssize_t)len);
}

void raw_send_bytewise(int fd, const uint8_t *buf, size_t len)
{
	/* A pause after every byte would stretch, on a loaded machine, past
	 * the short CM timeout these tests run with (a flake seen under
	 * ASan); four pauses are enough to make the reader see pieces. */
	size_t step = len / 4 ? len / 4 : 1;

	for (size_t i = 0; i < len; i++) {
		raw_send(fd, buf + i, 1);
		if ((i + 1) % step == 0)
			tu_sleep_ms(2);
	}
}

void raw_close_rst(int fd)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };

	setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	close(fd);
}

ssize_t raw_recv(int fd, void *buf, size_t len, unsigned int ms)
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

enum raw_event raw_wait_event(int fd, unsigned int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	uint8_t b;
	ssize_t n;

	if (poll(&p, 1, (int)ms) != 1)
		return RAW_SILENT;
	n = recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
	if (n > 0)
		return RAW_DATA;
	return n == 0 ? RAW_EOF : RAW_RESET;
}

void raw_assert_dropped(int fd, unsigned int ms, const char *what)
{
	enum raw_event e = raw_wait_event(fd, ms);

	if (e != RAW_EOF && e != RAW_RESET)
		fail_msg("%s%sexpected the connection dropped, got %s",
			 what ? what : "", what ? ": " : "",
			 e == RAW_DATA ? "data" : "nothing");
}

void raw_read_mpa(int fd, struct mpa_msg *m, const char *key, unsigned int ms)
{
	assert_int_equal(raw_recv(fd, m->hdr, MPA_HDR_LEN, ms), MPA_HDR_LEN);
	assert_memory_equal(m->hdr, key, 16);
	m->pd_len = get_be16(m->hdr + 18);
	assert_true(m->pd_len <= 256);
	assert_int_equal(raw_recv(fd, m->pd, m->pd_len, ms),
			 (ssize_t)m->pd_len);
}

size_t raw_read_fpdu(int fd, uint8_t *u, size_t max, unsigned int ms)
{
	uint8_t b[70000];
	size_t ulen, n;
	uint32_t c;

	assert_int_equal(raw_recv(fd, b, 2, ms), 2);
	ulen = get_be16(b);
	assert_true(ulen <= max);
	n = (2 + ulen + 3) & ~(size_t)3;
	assert_int_equal(raw_recv(fd, b + 2, n - 2 + 4, ms),
			 (ssize_t)(n - 2 + 4));
	c = crc32c(b, n);
	assert_int_equal(b[n] | b[n + 1] << 8 | b[n + 2] << 16 |
				 (uint32_t)b[n + 3] << 24,
			 c);
	memcpy(u, b + 2, ulen);
	return ulen;
}

void raw_expect_write_rtr(int fd, uint8_t *rtr, unsigned int ms)
{
	uint8_t want[32];
	size_t n = fpdu_build(want, ulpdu_write_rtr, sizeof(ulpdu_write_rtr),
			      true);

	assert_int_equal(n, 20);
	assert_int_equal(raw_recv(fd, rtr, n, ms), (ssize_t)n);
	assert_memory_equal(rtr, want, n);
}
