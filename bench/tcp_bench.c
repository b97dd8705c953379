/* SPDX-License-Identifier: MIT */
/*
 * tcp_bench: the plain-TCP baselines of bench/run, measured the way
 * ndkperf measures libndk.
 *
 *   tcp_bench server PORT
 *   tcp_bench lat  HOST PORT SIZE ITERS      ping-pong, one-way = RTT/2
 *   tcp_bench conn HOST PORT ITERS PDLEN     connect + PDLEN request/reply
 *
 * Prints one JSON object per run. The server answers every message with
 * one of the same length, on one thread per connection.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_MSG (4u << 20)

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static int full(int fd, void *buf, size_t len, int send_it)
{
	size_t off = 0;
	ssize_t n;

	while (off < len) {
		n = send_it ? send(fd, (char *)buf + off, len - off,
				   MSG_NOSIGNAL)
			    : recv(fd, (char *)buf + off, len - off, 0);
		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			return -1;
		}
		off += (size_t)n;
	}
	return 0;
}

/* A message is a 4-byte length, then that many bytes; echoed back. */
static void *serve(void *arg)
{
	int fd = (int)(intptr_t)arg, one = 1;
	uint32_t len;
	char *buf = malloc(MAX_MSG);

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	while (buf && !full(fd, &len, 4, 0) && len <= MAX_MSG &&
	       !full(fd, buf, len, 0)) {
		/* Length and payload in one write: one segment each way. */
		memmove(buf + 4, buf, len);
		memcpy(buf, &len, 4);
		if (full(fd, buf, len + 4, 1))
			break;
	}
	free(buf);
	close(fd);
	return NULL;
}

static int server(int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons((uint16_t)port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int lfd = socket(AF_INET, SOCK_STREAM, 0), one = 1, fd;
	pthread_t t;

	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    listen(lfd, 4096)) {
		perror("tcp_bench: bind/listen");
		return 1;
	}
	for (;;) {
		fd = accept(lfd, NULL, NULL);
		if (fd < 0)
			continue;
		if (pthread_create(&t, NULL, serve, (void *)(intptr_t)fd))
			close(fd);
		else
			pthread_detach(t);
	}
}

static int dial(const char *host, int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;

	inet_pton(AF_INET, host, &sa.sin_addr);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		close(fd);
		return -1;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

/* One request/reply of len bytes on fd. */
static int exchange(int fd, char *buf, uint32_t len)
{
	uint32_t back;

	memmove(buf + 4, buf, len);
	memcpy(buf, &len, 4);
	if (full(fd, buf, len + 4, 1) || full(fd, &back, 4, 0) || back != len ||
	    full(fd, buf, len, 0))
		return -1;
	return 0;
}

static int lat(const char *host, int port, uint32_t size, long iters)
{
	char *buf = calloc(1, size + 4);
	double *v = calloc((size_t)iters, sizeof(double)), sum = 0;
	int fd = dial(host, port);
	long i, skip = iters / 10;
	uint64_t t;

	if (fd < 0 || !buf || !v)
		return 1;
	for (i = 0; i < iters; i++) {
		t = now_ns();
		if (exchange(fd, buf, size))
			return 1;
		v[i] = (double)(now_ns() - t) / 2000.0;
	}
	close(fd);
	for (i = skip; i < iters; i++)
		sum += v[i];
	qsort(v + skip, (size_t)(iters - skip), sizeof(double), cmp_double);
	printf("{\"test\":\"tcp_lat\",\"bytes\":%u,\"iters\":%ld,"
	       "\"mean_usec\":%.3f,\"p50_usec\":%.3f}\n",
	       size, iters, sum / (double)(iters - skip),
	       v[skip + (iters - skip) / 2]);
	return 0;
}

static int conn(const char *host, int port, long iters, uint32_t pdlen)
{
	char buf[4096 + 4];
	double *v = calloc((size_t)iters, sizeof(double));
	uint64_t t, t0 = now_ns();
	long i;
	int fd;

	if (!v || pdlen > 4096)
		return 1;
	memset(buf, 0x5a, sizeof(buf));
	for (i = 0; i < iters; i++) {
		t = now_ns();
		fd = dial(host, port);
		if (fd < 0 || (pdlen && exchange(fd, buf, pdlen)))
			return 1;
		v[i] = (double)(now_ns() - t) / 1000.0;
		close(fd);
	}
	t = now_ns() - t0;
	qsort(v, (size_t)iters, sizeof(double), cmp_double);
	printf("{\"test\":\"tcp_conn\",\"bytes\":%u,\"iters\":%ld,"
	       "\"p50_usec\":%.3f,\"conn_per_sec\":%.1f}\n",
	       pdlen, iters, v[iters / 2], (double)iters * 1e9 / (double)t);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "server"))
		return server(atoi(argv[2]));
	if (argc == 6 && !strcmp(argv[1], "lat"))
		return lat(argv[2], atoi(argv[3]), (uint32_t)atoi(argv[4]),
			   atol(argv[5]));
	if (argc == 6 && !strcmp(argv[1], "conn"))
		return conn(argv[2], atoi(argv[3]), atol(argv[4]),
			    (uint32_t)atoi(argv[5]));
	fprintf(stderr, "usage: tcp_bench server PORT\n"
			"       tcp_bench lat HOST PORT SIZE ITERS\n"
			"       tcp_bench conn HOST PORT ITERS PDLEN\n");
	return 2;
}
