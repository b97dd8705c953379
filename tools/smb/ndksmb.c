// SPDX-License-Identifier: MIT
/*
 * ndksmb: an SMB 3 client on libndk, over SMB Direct (MS-SMBD, on NDK)
 * or over plain TCP, for testing servers such as Linux's ksmbd.
 *
 *   ndksmb [options] HOST[:PORT] SHARE CMD [ARGS]
 *
 *   ls [PATH]                 the entries of a directory
 *   stat PATH                 size, attributes, last write time
 *   get REMOTE [LOCAL]        copy a file here (LOCAL "-": standard output)
 *   put LOCAL REMOTE          copy a file there
 *   bench [REMOTE]            write -S bytes of random data -n times,
 *                             read them back, compare; MB/s both ways
 *
 * READs and WRITEs keep up to --queue-depth requests in flight.
 *
 * Exit status (docs/tools.md): 0 ok, 1 failed, 2 usage, 3 could not
 * connect, 4 the data read back differs.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <netdb.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/tcp.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include "smb2.h"
#include "smbd.h"
#include "toolutil.h"

#define EXIT_FAIL    TOOL_EXIT_FAIL
#define EXIT_CONNECT TOOL_EXIT_CONNECT
#define EXIT_DATA    TOOL_EXIT_VERIFY

static const char *prog = "ndksmb";

struct opts {
	struct sockaddr_storage dst;
	char host[256];
	const char *share;
	bool tcp;
	uint16_t port;
	struct smb2_opts smb;
	uint64_t size;
	unsigned long iterations;
	struct smbd_conn *sc; /* SMB Direct: its counters */
	int json;
	int verbose;
};

/* ------------------------------------------------------------------ */
/* Transports                                                         */

static int smbd_send_fn(void *ctx, const void *msg, size_t len)
{
	return smbd_send(ctx, msg, len);
}

static int smbd_recv_fn(void *ctx, const uint8_t **msg, size_t *len,
			unsigned int ms)
{
	return smbd_recv(ctx, msg, len, ms);
}

static const char *smbd_err_fn(void *ctx, int err)
{
	(void)err;
	return smbd_why(ctx);
}

/* Direct TCP (MS-SMB2 2.1): a zero byte and a 24-bit big-endian length. */
struct tcp_conn {
	int fd;
	uint8_t *buf;
	size_t cap;
	char why[160];
};

static int tcp_send_fn(void *ctx, const void *msg, size_t len)
{
	struct tcp_conn *t = ctx;
	uint8_t hdr[4] = { 0, (uint8_t)(len >> 16), (uint8_t)(len >> 8),
			   (uint8_t)len };
	struct iovec iov[2] = { { hdr, 4 }, { (void *)msg, len } };
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 2 };
	ssize_t n;

	while (iov[0].iov_len + iov[1].iov_len) {
		n = sendmsg(t->fd, &mh, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			snprintf(t->why, sizeof(t->why), "%s", strerror(errno));
			return -1;
		}
		while (n > 0 && mh.msg_iovlen) {
			size_t k = MIN((size_t)n, mh.msg_iov->iov_len);

			mh.msg_iov->iov_base =
				(uint8_t *)mh.msg_iov->iov_base + k;
			mh.msg_iov->iov_len -= k;
			n -= (ssize_t)k;
			if (!mh.msg_iov->iov_len) {
				mh.msg_iov++;
				mh.msg_iovlen--;
			}
		}
	}
	return 0;
}

static int read_full(struct tcp_conn *t, uint8_t *p, size_t len)
{
	ssize_t n;

	while (len) {
		n = recv(t->fd, p, len, 0);
		if (n == 0) {
			snprintf(t->why, sizeof(t->why),
				 "the server closed the connection");
			return -1;
		}
		if (n < 0) {
			if (errno == EINTR)
				continue;
			snprintf(t->why, sizeof(t->why), "%s",
				 errno == EAGAIN ? "timed out"
						 : strerror(errno));
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int tcp_recv_fn(void *ctx, const uint8_t **msg, size_t *len,
		       unsigned int ms)
{
	struct tcp_conn *t = ctx;
	struct timeval tv = { .tv_sec = ms / 1000,
			      .tv_usec = (ms % 1000) * 1000 };
	uint8_t hdr[4];
	size_t n;

	setsockopt(t->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (read_full(t, hdr, 4))
		return -1;
	n = (size_t)hdr[1] << 16 | (size_t)hdr[2] << 8 | hdr[3];
	if (hdr[0] || !n) {
		snprintf(t->why, sizeof(t->why), "bad Direct TCP frame");
		return -1;
	}
	if (n > t->cap) {
		uint8_t *b = realloc(t->buf, n);

		if (!b) {
			snprintf(t->why, sizeof(t->why), "out of memory");
			return -1;
		}
		t->buf = b;
		t->cap = n;
	}
	if (read_full(t, t->buf, n))
		return -1;
	*msg = t->buf;
	*len = n;
	return 0;
}

static const char *tcp_err_fn(void *ctx, int err)
{
	(void)err;
	return ((struct tcp_conn *)ctx)->why;
}

static struct tcp_conn *tcp_connect(const struct sockaddr *dst, unsigned int ms,
				    char *why, size_t wl)
{
	struct tcp_conn *t = calloc(1, sizeof(*t));
	struct timeval tv = { .tv_sec = ms / 1000,
			      .tv_usec = (ms % 1000) * 1000 };
	int one = 1;

	if (!t) {
		snprintf(why, wl, "out of memory");
		return NULL;
	}
	t->fd = socket(dst->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (t->fd >= 0) {
		setsockopt(t->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		setsockopt(t->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	}
	if (t->fd < 0 || connect(t->fd, dst, tool_addr_len(dst))) {
		snprintf(why, wl, "TCP connect: %s", strerror(errno));
		if (t->fd >= 0)
			close(t->fd);
		free(t);
		return NULL;
	}
	return t;
}

static void tcp_close(struct tcp_conn *t)
{
	if (!t)
		return;
	close(t->fd);
	free(t->buf);
	free(t);
}

/* ------------------------------------------------------------------ */
/* Commands                                                           */

struct ls_state {
	struct json *j;
	unsigned long n;
};

static void ls_entry(void *arg, const char *name, const struct smb2_file *f)
{
	struct ls_state *s = arg;
	char pn[512];

	s->n++;
	text_printable(name, pn, sizeof(pn));
	if (s->j) {
		json_begin_object(s->j, NULL);
		json_string(s->j, "name", pn);
		json_uint(s->j, "size", f->size);
		json_uint(s->j, "attributes", f->attributes);
		json_uint(s->j, "directory",
			  !!(f->attributes & SMB2_FILE_ATTRIBUTE_DIRECTORY));
		json_end_object(s->j);
		return;
	}
	printf("%c %12" PRIu64 "  %s\n",
	       f->attributes & SMB2_FILE_ATTRIBUTE_DIRECTORY ? 'd' : '-',
	       f->size, pn);
}

static int cmd_ls(struct smb2_client *c, const struct opts *o, const char *path)
{
	struct smb2_file d;
	struct json j;
	struct ls_state s = { 0 };
	int err;

	if (smb2_open(c, path ? path : "", SMB2_OPEN_DIRECTORY, &d))
		return EXIT_FAIL;
	if (o->json) {
		json_init(&j, stdout, false);
		json_begin_object(&j, NULL);
		json_begin_array(&j, "entries");
		s.j = &j;
	}
	err = smb2_list(c, &d, ls_entry, &s);
	if (o->json) {
		json_end_array(&j);
		json_uint(&j, "count", s.n);
		json_end_object(&j);
		json_finish(&j);
	}
	if (err)
		return EXIT_FAIL;
	return smb2_close(c, &d) ? EXIT_FAIL : 0;
}

static int cmd_stat(struct smb2_client *c, const struct opts *o,
		    const char *path)
{
	struct smb2_file f;
	struct json j;

	if (smb2_open(c, path, SMB2_OPEN_ATTRS, &f) || smb2_close(c, &f))
		return EXIT_FAIL;
	if (o->json) {
		json_init(&j, stdout, false);
		json_begin_object(&j, NULL);
		json_string(&j, "path", path);
		json_uint(&j, "size", f.size);
		json_uint(&j, "attributes", f.attributes);
		json_uint(&j, "directory",
			  !!(f.attributes & SMB2_FILE_ATTRIBUTE_DIRECTORY));
		json_uint(&j, "write_time", f.write_time);
		json_end_object(&j);
		json_finish(&j);
	} else {
		printf("%s: %s, %" PRIu64 " bytes, attributes 0x%x\n", path,
		       f.attributes & SMB2_FILE_ATTRIBUTE_DIRECTORY
			       ? "directory"
			       : "file",
		       f.size, f.attributes);
	}
	return 0;
}

static void report_io(const struct opts *o, struct smb2_client *c,
		      const char *what, const char *path, uint64_t bytes,
		      double secs)
{
	const struct smb2_stats *s = smb2_stats(c);
	struct json j;

	if (o->json) {
		json_init(&j, stdout, false);
		json_begin_object(&j, NULL);
		json_string(&j, "command", what);
		json_string(&j, "path", path);
		json_uint(&j, "bytes", bytes);
		json_uint(&j, "usec", (unsigned long long)(secs * 1e6));
		json_uint(&j, "rdma_reads", s->rdma_reads);
		json_uint(&j, "rdma_writes", s->rdma_writes);
		json_uint(&j, "inline_reads", s->inline_reads);
		json_uint(&j, "inline_writes", s->inline_writes);
		json_uint(&j, "remote_invalidations", s->remote_invalidations);
		json_uint(&j, "local_invalidations", s->local_invalidations);
		json_end_object(&j);
		json_finish(&j);
		return;
	}
	printf("%s %s: %" PRIu64
	       " bytes in %.3f s (%.1f MB/s); RDMA reads %lu writes %lu, inline reads %lu writes %lu, invalidations remote %lu local %lu\n",
	       what, path, bytes, secs, secs > 0 ? bytes / secs / 1e6 : 0.0,
	       s->rdma_reads, s->rdma_writes, s->inline_reads, s->inline_writes,
	       s->remote_invalidations, s->local_invalidations);
}

static double secs_since(uint64_t t0)
{
	return (double)(tool_now_ns() - t0) / 1e9;
}

static int write_all(int fd, const uint8_t *p, size_t len)
{
	ssize_t n;

	while (len) {
		n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int cmd_get(struct smb2_client *c, const struct opts *o,
		   const char *remote, const char *local)
{
	size_t chunk = smb2_io_size(c) * MAX(4u, o->smb.queue_depth), got;
	uint64_t off = 0, size, t0 = tool_now_ns();
	struct smb2_file f;
	uint8_t *buf;
	int fd, rc = 0;

	if (!local) {
		local = strrchr(remote, '/');
		local = local ? local + 1 : remote;
	}
	buf = malloc(chunk);
	if (!buf)
		return EXIT_FAIL;
	if (smb2_open(c, remote, SMB2_OPEN_READ, &f)) {
		free(buf);
		return EXIT_FAIL;
	}
	size = f.size;
	fd = strcmp(local, "-")
		     ? open(local, O_WRONLY | O_CREAT | O_TRUNC, 0644)
		     : 1;
	if (fd < 0) {
		fprintf(stderr, "%s: %s: %s\n", prog, local, strerror(errno));
		rc = EXIT_FAIL;
	}
	/* No more than the file holds: a small file reads inline. */
	while (!rc && off < f.size) {
		size_t want = (size_t)MIN((uint64_t)chunk, f.size - off);

		if (atomic_load(&tool_stop)) {
			fprintf(stderr, "%s: get %s: interrupted\n", prog,
				remote);
			rc = EXIT_FAIL;
			break;
		}

		if (smb2_read(c, &f, off, buf, want, &got)) {
			rc = EXIT_FAIL;
			break;
		}
		if (got && write_all(fd, buf, got)) {
			fprintf(stderr, "%s: %s: %s\n", prog, local,
				strerror(errno));
			rc = EXIT_FAIL;
		}
		off += got;
		if (got < want)
			break;
	}
	if (fd > 1)
		close(fd);
	free(buf);
	if (smb2_close(c, &f) && !rc)
		rc = EXIT_FAIL;
	if (!rc && off != size) {
		fprintf(stderr,
			"%s: get %s: read %" PRIu64 " of %" PRIu64 " bytes\n",
			prog, remote, off, f.size);
		rc = EXIT_FAIL;
	}
	if (!rc && strcmp(local, "-"))
		report_io(o, c, "get", remote, off, secs_since(t0));
	return rc;
}

static int cmd_put(struct smb2_client *c, const struct opts *o,
		   const char *local, const char *remote)
{
	size_t chunk = smb2_io_size(c) * MAX(4u, o->smb.queue_depth);
	uint64_t off = 0, t0 = tool_now_ns();
	struct smb2_file f;
	uint8_t *buf;
	ssize_t n;
	int fd, rc = 0;

	fd = open(local, O_RDONLY);
	if (fd < 0) {
		fprintf(stderr, "%s: %s: %s\n", prog, local, strerror(errno));
		return EXIT_FAIL;
	}
	buf = malloc(chunk);
	if (!buf || smb2_open(c, remote, SMB2_OPEN_WRITE, &f)) {
		free(buf);
		close(fd);
		return EXIT_FAIL;
	}
	for (;;) {
		if (atomic_load(&tool_stop)) {
			fprintf(stderr, "%s: put %s: interrupted\n", prog,
				remote);
			rc = EXIT_FAIL;
			break;
		}
		n = read(fd, buf, chunk);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			fprintf(stderr, "%s: %s: %s\n", prog, local,
				strerror(errno));
			rc = EXIT_FAIL;
			break;
		}
		if (!n)
			break;
		if (smb2_write(c, &f, off, buf, (size_t)n)) {
			rc = EXIT_FAIL;
			break;
		}
		off += (uint64_t)n;
	}
	close(fd);
	free(buf);
	if (smb2_close(c, &f) && !rc)
		rc = EXIT_FAIL;
	if (!rc && f.size != off) {
		fprintf(stderr,
			"%s: put %s: the server has %" PRIu64 " of %" PRIu64
			" bytes\n",
			prog, remote, f.size, off);
		rc = EXIT_FAIL;
	}
	if (!rc)
		report_io(o, c, "put", remote, off, secs_since(t0));
	return rc;
}

/* Percentiles of each request's time from its send to its response. */
static const double lat_pcts[] = { 50, 90, 99, 99.9 };
static const char *const lat_names[] = { "p50", "p90", "p99", "p999" };

static void json_latency(struct json *j, const char *key,
			 const struct smb_lat *l)
{
	size_t k;

	json_begin_object(j, key);
	json_uint(j, "requests", l->count);
	for (k = 0; k < sizeof(lat_pcts) / sizeof(lat_pcts[0]); k++)
		json_double(j, lat_names[k],
			    (double)smb_lat_percentile(l, lat_pcts[k]) / 1e3,
			    1);
	json_double(j, "max", (double)l->max_ns / 1e3, 1);
	json_double(j, "mean",
		    l->count ? (double)l->sum_ns / (double)l->count / 1e3 : 0,
		    1);
	json_end_object(j);
}

static void print_latency(const char *remote, const char *what,
			  const struct smb_lat *l)
{
	size_t k;

	printf("bench %s: %s latency (usec) of %llu requests:", remote, what,
	       (unsigned long long)l->count);
	for (k = 0; k < sizeof(lat_pcts) / sizeof(lat_pcts[0]); k++)
		printf(" %s %.1f", lat_names[k],
		       (double)smb_lat_percentile(l, lat_pcts[k]) / 1e3);
	printf(" max %.1f\n", (double)l->max_ns / 1e3);
}

static int cmd_bench(struct smb2_client *c, const struct opts *o,
		     const char *remote)
{
	size_t len = (size_t)o->size, got;
	double wsec = 0, rsec = 0;
	uint8_t *src = malloc(len), *dst = malloc(len);
	const struct smb2_stats *s;
	struct smb2_file f;
	unsigned long i;
	uint64_t t0;
	struct json j;
	int rc = 0;

	if (!src || !dst || getrandom(src, len, 0) != (ssize_t)len) {
		free(src);
		free(dst);
		return EXIT_FAIL;
	}
	for (i = 0; i < o->iterations && !rc && !atomic_load(&tool_stop); i++) {
		if (smb2_open(c, remote, SMB2_OPEN_WRITE, &f)) {
			rc = EXIT_FAIL;
			break;
		}
		t0 = tool_now_ns();
		if (smb2_write(c, &f, 0, src, len))
			rc = EXIT_FAIL;
		wsec += secs_since(t0);
		if (smb2_close(c, &f) && !rc)
			rc = EXIT_FAIL;
		if (rc || smb2_open(c, remote, SMB2_OPEN_READ, &f)) {
			rc = EXIT_FAIL;
			break;
		}
		memset(dst, 0, len);
		t0 = tool_now_ns();
		if (smb2_read(c, &f, 0, dst, len, &got))
			rc = EXIT_FAIL;
		rsec += secs_since(t0);
		if (smb2_close(c, &f) && !rc)
			rc = EXIT_FAIL;
		if (!rc && (got != len || memcmp(src, dst, len))) {
			fprintf(stderr,
				"%s: bench: iteration %lu: the data read back differs (%zu of %zu bytes)\n",
				prog, i, got, len);
			rc = EXIT_DATA;
		}
	}
	free(src);
	free(dst);
	if (rc)
		return rc;
	s = smb2_stats(c);
	if (o->json) {
		json_init(&j, stdout, false);
		json_begin_object(&j, NULL);
		json_string(&j, "command", "bench");
		json_uint(&j, "size", len);
		json_uint(&j, "iterations", i);
		json_uint(&j, "io_size", smb2_io_size(c));
		json_uint(&j, "queue_depth", o->smb.queue_depth);
		json_uint(&j, "write_usec", (unsigned long long)(wsec * 1e6));
		json_uint(&j, "read_usec", (unsigned long long)(rsec * 1e6));
		json_uint(&j, "rdma_reads", s->rdma_reads);
		json_uint(&j, "rdma_writes", s->rdma_writes);
		json_uint(&j, "inline_reads", s->inline_reads);
		json_uint(&j, "inline_writes", s->inline_writes);
		json_uint(&j, "credit_waits", s->credit_waits);
		if (o->sc)
			json_uint(&j, "smbd_credit_waits",
				  smbd_info(o->sc)->credit_waits);
		json_latency(&j, "write_latency_usec", &s->write_lat);
		json_latency(&j, "read_latency_usec", &s->read_lat);
		json_end_object(&j);
		json_finish(&j);
	} else {
		printf("bench %s: %lu x %zu bytes, %zu per request, queue depth %u: write %.1f MB/s, read %.1f MB/s, verified; RDMA reads %lu writes %lu, inline reads %lu writes %lu, credit waits SMB2 %lu SMB Direct %lu\n",
		       remote, i, len, smb2_io_size(c), o->smb.queue_depth,
		       wsec > 0 ? (double)len * i / wsec / 1e6 : 0,
		       rsec > 0 ? (double)len * i / rsec / 1e6 : 0,
		       s->rdma_reads, s->rdma_writes, s->inline_reads,
		       s->inline_writes, s->credit_waits,
		       o->sc ? smbd_info(o->sc)->credit_waits : 0ul);
		print_latency(remote, "WRITE", &s->write_lat);
		print_latency(remote, "READ", &s->read_lat);
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Command line                                                       */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s [options] HOST[:PORT] SHARE CMD [ARGS]\n"
		"  ls [PATH] | stat PATH | get REMOTE [LOCAL|-] | put LOCAL REMOTE |\n"
		"  bench [REMOTE]\n"
		"options:\n"
		"  -p, --port PORT         SMB Direct port (5445: iWARP; 445 with --tcp)\n"
		"      --tcp               SMB2 over TCP instead of SMB Direct\n"
		"  -u, --user USER         NTLMv2 user (password from NDKSMB_PASSWORD)\n"
		"      --domain DOMAIN     the user's domain (default none)\n"
		"      --sign              sign even when the server does not require it\n"
		"      --no-invalidate     RDMA channel without remote invalidation\n"
		"      --rdma-threshold N  I/O of N bytes and more through RDMA (4k)\n"
		"      --io-size N         bytes per READ/WRITE request (1m)\n"
		"      --queue-depth N     READs/WRITEs in flight, 1 to 64 (1)\n"
		"  -S, --size N            bench: bytes per file (1m)\n"
		"  -n, --iterations N      bench: repetitions (1)\n"
		"      --timeout SECONDS   how long to wait for the server (30)\n"
		"  -j, --json              results as JSON\n"
		"  -v, --verbose           more output (twice: every request)\n"
		"  -h, --help, --version\n",
		prog);
}

enum {
	OPT_TCP = 256,
	OPT_DOMAIN,
	OPT_SIGN,
	OPT_NOINV,
	OPT_THRESH,
	OPT_IOSZ,
	OPT_QDEPTH,
	OPT_TIMEOUT,
	OPT_VERSION
};

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "port", required_argument, NULL, 'p' },
		{ "tcp", no_argument, NULL, OPT_TCP },
		{ "user", required_argument, NULL, 'u' },
		{ "domain", required_argument, NULL, OPT_DOMAIN },
		{ "sign", no_argument, NULL, OPT_SIGN },
		{ "no-invalidate", no_argument, NULL, OPT_NOINV },
		{ "rdma-threshold", required_argument, NULL, OPT_THRESH },
		{ "io-size", required_argument, NULL, OPT_IOSZ },
		{ "queue-depth", required_argument, NULL, OPT_QDEPTH },
		{ "size", required_argument, NULL, 'S' },
		{ "iterations", required_argument, NULL, 'n' },
		{ "timeout", required_argument, NULL, OPT_TIMEOUT },
		{ "json", no_argument, NULL, 'j' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, OPT_VERSION },
		{ 0 },
	};
	struct opts o = { .size = 1u << 20, .iterations = 1 };
	struct smb2_transport t = { 0 };
	struct smbd_opts so = { 0 };
	struct smbd_conn *sc = NULL;
	struct tcp_conn *tc = NULL;
	struct smb2_client *c = NULL;
	const char *cmd, *a1, *a2;
	char why[300], *end;
	int op, rc, err, nargs;

	tool_prog = prog;
	o.smb.rdma_threshold = 4096;
	o.smb.remote_invalidate = true;
	o.smb.timeout_ms = 30000;
	o.smb.queue_depth = 1;
	while ((op = getopt_long(argc, argv, "+p:u:S:n:jvh", lo, NULL)) != -1) {
		switch (op) {
		case 'p':
			o.port = tool_arg_port(optarg);
			if (!o.port)
				tool_usage_error("-p: port 0");
			break;
		case OPT_TCP:
			o.tcp = true;
			break;
		case 'u':
			o.smb.user = optarg;
			break;
		case OPT_DOMAIN:
			o.smb.domain = optarg;
			break;
		case OPT_SIGN:
			o.smb.sign = true;
			break;
		case OPT_NOINV:
			o.smb.remote_invalidate = false;
			break;
		case OPT_THRESH:
			o.smb.rdma_threshold = (size_t)tool_arg_size(
				"--rdma-threshold", optarg, 0, 1ull << 30);
			break;
		case OPT_IOSZ:
			o.smb.io_size = (size_t)tool_arg_size(
				"--io-size", optarg, 4096, 1ull << 30);
			break;
		case OPT_QDEPTH:
			o.smb.queue_depth = (unsigned int)tool_arg_count(
				"--queue-depth", optarg, 1, 64);
			break;
		case 'S':
			o.size = tool_arg_size("-S", optarg, 1, 1ull << 32);
			break;
		case 'n':
			o.iterations = (unsigned long)tool_arg_count(
				"-n", optarg, 1, 1000000);
			break;
		case OPT_TIMEOUT:
			o.smb.timeout_ms =
				(unsigned int)(tool_arg_seconds("--timeout",
								optarg, 0.001,
								3600) *
					       1000);
			break;
		case 'j':
			o.json = 1;
			break;
		case 'v':
			o.verbose++;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case OPT_VERSION:
			tool_print_version();
			return 0;
		default:
			tool_usage_hint();
		}
	}
	nargs = argc - optind;
	if (nargs < 3)
		tool_usage_error("HOST, SHARE and a command are needed");
	cmd = argv[optind + 2];
	a1 = nargs > 3 ? argv[optind + 3] : NULL;
	a2 = nargs > 4 ? argv[optind + 4] : NULL;
	if ((!strcmp(cmd, "ls") && nargs > 4) ||
	    (!strcmp(cmd, "stat") && nargs != 4) ||
	    (!strcmp(cmd, "get") && (nargs < 4 || nargs > 5)) ||
	    (!strcmp(cmd, "put") && nargs != 5) ||
	    (!strcmp(cmd, "bench") && nargs > 4) ||
	    (strcmp(cmd, "ls") && strcmp(cmd, "stat") && strcmp(cmd, "get") &&
	     strcmp(cmd, "put") && strcmp(cmd, "bench")))
		tool_usage_error("%s: unknown command or wrong operands", cmd);
	if (!o.port)
		o.port = o.tcp ? 445 : 5445;
	tool_arg_addr("HOST", argv[optind], o.port, &o.dst);
	snprintf(o.host, sizeof(o.host), "%s", argv[optind]);
	/* The UNC server name: HOST without its port. */
	if ((end = strrchr(o.host, ':')) && !strchr(end + 1, ']') &&
	    strchr(o.host, ':') == end)
		*end = 0;
	o.share = argv[optind + 1];
	o.smb.server = o.host;
	o.smb.share = o.share;
	o.smb.password = getenv("NDKSMB_PASSWORD");
	/* SIGINT/SIGTERM end a transfer between requests, cleanly. */
	tool_catch_signals();
	o.smb.verbose = o.verbose;
	o.verbose = o.verbose;

	if (o.tcp) {
		tc = tcp_connect((const struct sockaddr *)&o.dst,
				 o.smb.timeout_ms, why, sizeof(why));
		if (!tc) {
			fprintf(stderr, "%s: %s\n", prog, why);
			return EXIT_CONNECT;
		}
		t.send = tcp_send_fn;
		t.recv = tcp_recv_fn;
		t.err_str = tcp_err_fn;
		t.ctx = tc;
	} else {
		so.dst = o.dst;
		so.timeout_ms = o.smb.timeout_ms;
		so.verbose = o.verbose;
		err = smbd_connect(&so, &sc, why, sizeof(why));
		if (err) {
			fprintf(stderr, "%s: SMB Direct: %s\n", prog, why);
			return err == SMBD_ERR_CONNECT ? EXIT_CONNECT
						       : EXIT_FAIL;
		}
		t.send = smbd_send_fn;
		t.recv = smbd_recv_fn;
		t.err_str = smbd_err_fn;
		t.ctx = sc;
		t.smbd = sc;
		o.sc = sc;
	}
	err = smb2_connect(&t, &o.smb, &c, why, sizeof(why));
	if (err) {
		fprintf(stderr, "%s: %s\n", prog, why);
		rc = EXIT_FAIL;
		goto out;
	}
	if (o.verbose)
		fprintf(stderr,
			"%s: connected over %s, dialect 0x%04x, %s, %zu bytes per I/O\n",
			prog, o.tcp ? "TCP" : "SMB Direct", smb2_dialect(c),
			smb2_signing(c) ? "signed" : "not signed",
			smb2_io_size(c));
	if (!strcmp(cmd, "ls"))
		rc = cmd_ls(c, &o, a1);
	else if (!strcmp(cmd, "stat"))
		rc = cmd_stat(c, &o, a1);
	else if (!strcmp(cmd, "get"))
		rc = cmd_get(c, &o, a1, a2);
	else if (!strcmp(cmd, "put"))
		rc = cmd_put(c, &o, a1, a2);
	else
		rc = cmd_bench(c, &o, a1 ? a1 : "ndksmb-bench");
	if (rc == EXIT_FAIL)
		fprintf(stderr, "%s: %s: %s\n", prog, cmd, smb2_why(c));
	if (sc && o.verbose) {
		const struct smbd_info *si = smbd_info(sc);

		fprintf(stderr,
			"%s: SMB Direct: %lu messages sent, %lu received, %lu credit-only, %lu keep-alives answered, %lu waits for a send credit, IRD %lu\n",
			prog, si->sent, si->received, si->credit_only_sent,
			si->keepalives_answered, si->credit_waits, si->ird);
	}
out:
	smb2_disconnect(c);
	smbd_close(sc);
	tcp_close(tc);
	return rc;
}
