/* SPDX-License-Identifier: MIT */
/*
 * tcp_bench: the plain-TCP baselines of bench/run, measured the way
 * ndkperf measures libndk.
 *
 *   tcp_bench server PORT                     blocking echo server
 *   tcp_bench lat  HOST PORT SIZE ITERS       ping-pong, one-way = RTT/2
 *   tcp_bench conn HOST PORT ITERS PDLEN      connect + PDLEN request/reply
 *
 *   tcp_bench poll-server PORT                busy-polling server
 *   tcp_bench poll-lat HOST PORT SIZE ITERS   ping-pong, one-way = RTT/2
 *   tcp_bench poll-bw  HOST PORT SIZE ITERS   one-way stream, MB/s
 *
 * Prints one JSON object per run. The blocking server answers every
 * message with one of the same length, on one thread per connection; its
 * thread sleeps in recv(), so its latency includes a thread wake-up each
 * way and two recv() calls per message (length, then payload).
 *
 * The poll modes are the floor libndk's polling tests are held against:
 * both sides spin on recv(MSG_DONTWAIT), with one send() and one recv()
 * per message unless the kernel splits it. Sends block: a stream's
 * sender that spins on send(MSG_DONTWAIT) instead reached a third of the
 * bandwidth on a 2-vCPU VM. The stream lands every message in the same
 * SIZE-byte buffer, as an RDMA Write bandwidth test does. SIGINT or
 * SIGTERM ends a stream early (bench/slicer --together): the client
 * closes its side, waits until the server has read everything and closed
 * too, and reports the messages sent, with "interrupted":true.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
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

/* A busy-polling receive: never sleeps, whatever the socket's state. */
static int spin_recv(int fd, char *buf, size_t len)
{
	size_t off = 0;
	ssize_t n;

	while (off < len) {
		n = recv(fd, buf + off, len - off, MSG_DONTWAIT);
		if (n > 0) {
			off += (size_t)n;
			continue;
		}
		if (n == 0 || (errno != EAGAIN && errno != EINTR))
			return -1;
	}
	return 0;
}

enum { POLL_LAT = 1, POLL_BW = 2 };

/* What a poll client asks for, sent once (blocking) before the clock
 * starts; host byte order, as both ends share the machine. */
struct poll_hello {
	uint32_t mode;
	uint32_t size;
	uint64_t iters;
};

static void *serve_poll(void *arg)
{
	int fd = (int)(intptr_t)arg, one = 1;
	struct poll_hello h;
	uint64_t i, total, got = 0;
	char *buf = NULL, ack = 1;
	size_t off, want;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (full(fd, &h, sizeof(h), 0) || !h.size || h.size > MAX_MSG ||
	    !(buf = malloc(h.size)))
		goto out;
	if (h.mode == POLL_LAT) {
		for (i = 0; i < h.iters; i++)
			if (spin_recv(fd, buf, h.size) ||
			    full(fd, buf, h.size, 1))
				goto out;
	} else if (h.mode == POLL_BW) {
		/* Each message lands in the same buffer, one recv() each
		 * unless the kernel hands over less. */
		total = h.iters * h.size;
		while (got < total) {
			off = (size_t)(got % h.size);
			want = h.size - off;
			if (want > total - got)
				want = (size_t)(total - got);
			if (spin_recv(fd, buf + off, want))
				goto out;
			got += want;
		}
		/* Every byte arrived: the client stops its clock. */
		full(fd, &ack, 1, 1);
	}
	/* Until the client closes, so it never sees a reset. */
	while (recv(fd, &ack, 1, 0) > 0)
		;
out:
	free(buf);
	close(fd);
	return NULL;
}

static int server(int port, void *(*serve_fn)(void *))
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons((uint16_t)port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int lfd = socket(AF_INET, SOCK_STREAM, 0), one = 1, fd;
	/* bench/run's veth topology listens on the namespace's address. */
	const char *addr = getenv("BENCH_ADDR");
	pthread_t t;

	if (addr && inet_pton(AF_INET, addr, &sa.sin_addr) != 1) {
		fprintf(stderr, "tcp_bench: BENCH_ADDR=%s is no IPv4 address\n",
			addr);
		return 1;
	}

	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    listen(lfd, 4096)) {
		fprintf(stderr, "tcp_bench: bind/listen on %s:%d: %s\n",
			addr ? addr : "127.0.0.1", port, strerror(errno));
		return 1;
	}
	for (;;) {
		fd = accept(lfd, NULL, NULL);
		if (fd < 0)
			continue;
		if (pthread_create(&t, NULL, serve_fn, (void *)(intptr_t)fd))
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

/* One-way latencies v[0, iters): the first tenth is warm-up; prints the
 * mean and the median of the rest as one JSON object. */
static void print_lat(const char *test, uint32_t size, long iters, double *v)
{
	long i, skip = iters / 10;
	double sum = 0;

	for (i = skip; i < iters; i++)
		sum += v[i];
	qsort(v + skip, (size_t)(iters - skip), sizeof(double), cmp_double);
	printf("{\"test\":\"%s\",\"bytes\":%u,\"iters\":%ld,"
	       "\"mean_usec\":%.3f,\"p50_usec\":%.3f}\n",
	       test, size, iters, sum / (double)(iters - skip),
	       v[skip + (iters - skip) / 2]);
}

static int lat(const char *host, int port, uint32_t size, long iters)
{
	char *buf = calloc(1, size + 4);
	double *v = calloc((size_t)iters, sizeof(double));
	int fd = dial(host, port);
	long i;
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
	print_lat("tcp_lat", size, iters, v);
	return 0;
}

static int poll_lat(const char *host, int port, uint32_t size, long iters)
{
	struct poll_hello h = { .mode = POLL_LAT,
				.size = size,
				.iters = (uint64_t)iters };
	char *buf = calloc(1, size ? size : 1);
	double *v = calloc((size_t)iters, sizeof(double));
	int fd = dial(host, port);
	long i;
	uint64_t t;

	if (fd < 0 || !buf || !v || !size || iters < 1 ||
	    full(fd, &h, sizeof(h), 1)) {
		fprintf(stderr, "tcp_bench poll-lat: cannot start: %s\n",
			strerror(errno));
		return 1;
	}
	for (i = 0; i < iters; i++) {
		t = now_ns();
		if (full(fd, buf, size, 1) || spin_recv(fd, buf, size)) {
			fprintf(stderr, "tcp_bench poll-lat: %s\n",
				strerror(errno));
			return 1;
		}
		v[i] = (double)(now_ns() - t) / 2000.0;
	}
	close(fd);
	print_lat("tcp_poll_lat", size, iters, v);
	free(v);
	free(buf);
	return 0;
}

/* CPU seconds (user + system) this process used so far: the JSON's
 * cpu_sec covers the timed loop only, as ndkperf's does. */
static double cpu_now(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static volatile sig_atomic_t stop; /* SIGINT, SIGTERM: end the stream */

static void on_stop(int sig)
{
	(void)sig;
	stop = 1;
}

static int poll_bw(const char *host, int port, uint32_t size, long iters)
{
	struct sigaction sa = { .sa_handler = on_stop, .sa_flags = SA_RESTART };
	struct poll_hello h = { .mode = POLL_BW,
				.size = size,
				.iters = (uint64_t)iters };
	char *buf = calloc(1, size ? size : 1), ack;
	int fd = dial(host, port);
	uint64_t t0, ns;
	double cpu0;
	long i;

	if (fd < 0 || !buf || !size || iters < 1 ||
	    full(fd, &h, sizeof(h), 1)) {
		fprintf(stderr, "tcp_bench poll-bw: cannot start: %s\n",
			strerror(errno));
		return 1;
	}
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	/* Connected, clock not started: bench/slicer --ready waits for it. */
	if (getenv("NDK_BENCH_READY_STOP"))
		raise(SIGSTOP);
	t0 = now_ns();
	cpu0 = cpu_now();
	for (i = 0; i < iters && !stop; i++)
		if (full(fd, buf, size, 1))
			break;
	if (stop) {
		/* The server reads to our FIN, then closes: all of it read. */
		shutdown(fd, SHUT_WR);
		while (recv(fd, &ack, 1, 0) > 0)
			;
		iters = i;
	} else if (i < iters || spin_recv(fd, &ack, 1)) {
		fprintf(stderr, "tcp_bench poll-bw: %s\n", strerror(errno));
		return 1;
	}
	ns = now_ns() - t0;
	close(fd);
	/* mono_*_ns: as ndkperf's, for bench/slicer's pauses. */
	printf("{\"test\":\"tcp_poll_bw\",\"bytes\":%u,\"iters\":%ld,"
	       "\"seconds\":%.6f,\"mb_per_sec\":%.3f,\"cpu_sec\":%.3f,"
	       "\"mono_start_ns\":%llu,\"mono_end_ns\":%llu,"
	       "\"interrupted\":%s}\n",
	       size, iters, (double)ns / 1e9,
	       (double)size * (double)iters * 1e3 / (double)ns,
	       cpu_now() - cpu0, (unsigned long long)t0,
	       (unsigned long long)(t0 + ns), stop ? "true" : "false");
	free(buf);
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
		return server(atoi(argv[2]), serve);
	if (argc == 3 && !strcmp(argv[1], "poll-server"))
		return server(atoi(argv[2]), serve_poll);
	if (argc == 6 && !strcmp(argv[1], "poll-lat"))
		return poll_lat(argv[2], atoi(argv[3]), (uint32_t)atoi(argv[4]),
				atol(argv[5]));
	if (argc == 6 && !strcmp(argv[1], "poll-bw"))
		return poll_bw(argv[2], atoi(argv[3]), (uint32_t)atoi(argv[4]),
			       atol(argv[5]));
	if (argc == 6 && !strcmp(argv[1], "lat"))
		return lat(argv[2], atoi(argv[3]), (uint32_t)atoi(argv[4]),
			   atol(argv[5]));
	if (argc == 6 && !strcmp(argv[1], "conn"))
		return conn(argv[2], atoi(argv[3]), atol(argv[4]),
			    (uint32_t)atoi(argv[5]));
	fprintf(stderr, "usage: tcp_bench server PORT\n"
			"       tcp_bench lat HOST PORT SIZE ITERS\n"
			"       tcp_bench conn HOST PORT ITERS PDLEN\n"
			"       tcp_bench poll-server PORT\n"
			"       tcp_bench poll-lat HOST PORT SIZE ITERS\n"
			"       tcp_bench poll-bw HOST PORT SIZE ITERS\n");
	return 2;
}
