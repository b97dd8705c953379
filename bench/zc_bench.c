/* SPDX-License-Identifier: MIT */
/*
 * zc_bench: does MSG_ZEROCOPY pay for libndk's large sends? A one-way TCP
 * stream of SIZE-byte messages, sent with plain send() or with
 * MSG_ZEROCOPY, the way the data path would send large payloads straight
 * from registered memory: a message's buffer may be reused (its request
 * completed) only once the kernel reported its pages released.
 *
 *   zc_bench server PORT
 *   zc_bench client HOST PORT SIZE ITERS ZC      ZC: 0 copy, 1 MSG_ZEROCOPY
 *
 * The client prints one JSON object: MB/s over the whole stream (until the
 * server acknowledged the last byte), and with ZC the number of
 * completions and how many of them the kernel reports as copied anyway
 * (SO_EE_CODE_ZEROCOPY_COPIED: the data was copied, e.g. for delivery to
 * a local socket).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/errqueue.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#ifndef SO_ZEROCOPY
#define SO_ZEROCOPY 60
#endif
#ifndef MSG_ZEROCOPY
#define MSG_ZEROCOPY 0x4000000
#endif

/* Buffers in flight: a message's buffer waits for its completion. */
#define RING 16

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int server(int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons((uint16_t)port) };
	int lfd = socket(AF_INET, SOCK_STREAM, 0), one = 1, fd;
	static char buf[1 << 20];
	uint64_t total;

	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(lfd, 16)) {
		perror("zc_bench: bind/listen");
		return 1;
	}
	for (;;) {
		fd = accept(lfd, NULL, NULL);
		if (fd < 0)
			continue;
		/* The client first says how many bytes will come. */
		if (recv(fd, &total, sizeof(total), MSG_WAITALL) !=
		    sizeof(total)) {
			close(fd);
			continue;
		}
		while (total) {
			ssize_t n = recv(
				fd, buf,
				total < sizeof(buf) ? total : sizeof(buf), 0);

			if (n <= 0)
				break;
			total -= (uint64_t)n;
		}
		if (send(fd, "k", 1, MSG_NOSIGNAL) != 1)
			perror("zc_bench: ack");
		close(fd);
	}
}

struct zc_state {
	uint32_t next; /* completion id of the next zerocopy send */
	uint32_t done; /* sends completed so far */
	uint64_t copied; /* completions the kernel reports as copied */
	uint64_t notes; /* notifications read */
};

/* Reads the error queue's completion notifications; wait: block for one. */
static int zc_reap(int fd, struct zc_state *z, int wait)
{
	char ctrl[128];
	struct msghdr msg = { .msg_control = ctrl,
			      .msg_controllen = sizeof(ctrl) };
	struct cmsghdr *cm;
	struct sock_extended_err *ee;

	for (;;) {
		msg.msg_controllen = sizeof(ctrl);
		if (recvmsg(fd, &msg, MSG_ERRQUEUE) < 0) {
			struct pollfd p = { .fd = fd, .events = 0 };

			if (errno != EAGAIN)
				return -1;
			if (!wait)
				return 0;
			/* POLLERR says the error queue has something. */
			poll(&p, 1, 1000);
			continue;
		}
		for (cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
			ee = (struct sock_extended_err *)(void *)CMSG_DATA(cm);
			if (ee->ee_origin != SO_EE_ORIGIN_ZEROCOPY)
				continue;
			/* [ee_info, ee_data] completed, in order. */
			z->done = ee->ee_data + 1;
			z->notes++;
			if (ee->ee_code & SO_EE_CODE_ZEROCOPY_COPIED)
				z->copied += ee->ee_data - ee->ee_info + 1;
		}
		wait = 0;
	}
}

static int client(const char *host, int port, size_t size, long iters, int zc)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
	char *ring = aligned_alloc(4096, RING * ((size + 4095) & ~4095ul));
	uint64_t total = (uint64_t)size * (uint64_t)iters, t;
	struct zc_state z = { 0 };
	size_t stride = (size + 4095) & ~4095ul;
	char ack;
	long i;

	inet_pton(AF_INET, host, &sa.sin_addr);
	if (!ring || connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
		return 1;
	memset(ring, 0x5a, RING * stride);
	if (zc && setsockopt(fd, SOL_SOCKET, SO_ZEROCOPY, &one, sizeof(one))) {
		perror("zc_bench: SO_ZEROCOPY");
		return 1;
	}
	if (send(fd, &total, sizeof(total), 0) != sizeof(total))
		return 1;
	t = now_ns();
	for (i = 0; i < iters; i++) {
		char *p = ring + (size_t)(i % RING) * stride;
		size_t off = 0;

		/* The buffer's previous message must have been released. */
		while (zc && z.next - z.done >= RING)
			if (zc_reap(fd, &z, 1))
				return 1;
		while (off < size) {
			ssize_t n = send(fd, p + off, size - off,
					 zc ? MSG_ZEROCOPY : 0);

			if (n < 0 && errno == ENOBUFS && zc) {
				zc_reap(fd, &z, 1); /* optmem full */
				continue;
			}
			if (n <= 0)
				return 1;
			off += (size_t)n;
			if (zc)
				z.next++;
		}
		if (zc)
			zc_reap(fd, &z, 0);
	}
	while (zc && z.done != z.next)
		if (zc_reap(fd, &z, 1))
			return 1;
	if (recv(fd, &ack, 1, MSG_WAITALL) != 1)
		return 1;
	t = now_ns() - t;
	close(fd);
	printf("{\"test\":\"%s\",\"bytes\":%zu,\"iters\":%ld,"
	       "\"mb_per_sec\":%.1f,\"zc_sends\":%u,\"zc_copied\":%llu}\n",
	       zc ? "zerocopy" : "copy", size, iters,
	       (double)total * 1e3 / (double)t, z.next,
	       (unsigned long long)z.copied);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "server"))
		return server(atoi(argv[2]));
	if (argc == 7 && !strcmp(argv[1], "client"))
		return client(argv[2], atoi(argv[3]), (size_t)atol(argv[4]),
			      atol(argv[5]), atoi(argv[6]));
	fprintf(stderr, "usage: zc_bench server PORT\n"
			"       zc_bench client HOST PORT SIZE ITERS ZC\n");
	return 2;
}
