/* SPDX-License-Identifier: MIT */
/*
 * lf_bench: libfabric's tcp provider (FI_EP_MSG), measured the way
 * ndkperf measures libndk, for bench/run. Debian ships only fi_pingpong
 * of the fabtests, so bandwidth, RMA and connection setup are measured
 * here with the same method as ndkperf.
 *
 *   lf_bench server PORT
 *   lf_bench msg_bw  HOST PORT SIZE ITERS   Send bandwidth, window 64
 *   lf_bench write_bw HOST PORT SIZE ITERS  RMA write bandwidth
 *   lf_bench read_bw HOST PORT SIZE ITERS   RMA read bandwidth
 *   lf_bench conn    HOST PORT ITERS        fi_connect with 64 B CM data
 *
 * One JSON object per run on stdout. SIGINT or SIGTERM ends a bandwidth
 * run early (bench/slicer --together): it reports the messages it moved
 * so far, with "interrupted":true.
 */
#include <endian.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_rma.h>

#define WINDOW	    64
#define CREDITS	    64
#define CM_DATA	    64
#define MAX_RECV(s) ((s) ? (s) : 1)

enum { T_MSG_BW = 1, T_WRITE_BW, T_READ_BW, T_CONN };

/* Client -> server in the connect CM data; server -> client in accept. */
struct lf_hello {
	uint32_t test;
	uint32_t size;
	uint64_t iters;
	uint8_t pad[CM_DATA - 16];
};

struct lf_reply {
	uint64_t addr;
	uint64_t key;
	uint8_t pad[CM_DATA - 16];
};

#define CHECK(call)                                                           \
	do {                                                                  \
		int rc_ = (int)(call);                                        \
		if (rc_) {                                                    \
			fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, \
				#call, fi_strerror(-rc_));                    \
			exit(1);                                              \
		}                                                             \
	} while (0)

static struct fid_fabric *fabric;
static struct fid_domain *domain;
static struct fid_eq *eq;
static uint64_t next_key;
static int mr_mode; /* what the provider granted */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static struct fi_info *lookup(const char *node, const char *service,
			      bool source)
{
	struct fi_info *hints = fi_allocinfo(), *info;

	hints->ep_attr->type = FI_EP_MSG;
	hints->caps = FI_MSG | FI_RMA;
	hints->mode = FI_CONTEXT;
	hints->fabric_attr->prov_name = strdup("tcp");
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR |
				      FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	hints->domain_attr->threading = FI_THREAD_DOMAIN;
	CHECK(fi_getinfo(FI_VERSION(1, 17), node, service,
			 source ? FI_SOURCE : 0, hints, &info));
	fi_freeinfo(hints);
	mr_mode = info->domain_attr->mr_mode;
	return info;
}

static void open_fabric(struct fi_info *info)
{
	struct fi_eq_attr eq_attr = { .wait_obj = FI_WAIT_UNSPEC };

	CHECK(fi_fabric(info->fabric_attr, &fabric, NULL));
	CHECK(fi_eq_open(fabric, &eq_attr, &eq, NULL));
	CHECK(fi_domain(fabric, info, &domain, NULL));
}

/* An endpoint with one CQ for both directions. */
struct lf_ep {
	struct fid_ep *ep;
	struct fid_cq *cq;
	struct fid_mr *mr;
	char *buf;
	size_t len;
	uint64_t tx_done, rx_done;
};

static void ep_open(struct lf_ep *e, struct fi_info *info, size_t len)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_CONTEXT,
				      .size = 4 * WINDOW + 64 };

	memset(e, 0, sizeof(*e));
	CHECK(fi_endpoint(domain, info, &e->ep, NULL));
	CHECK(fi_cq_open(domain, &cq_attr, &e->cq, NULL));
	CHECK(fi_ep_bind(e->ep, &e->cq->fid, FI_TRANSMIT | FI_RECV));
	CHECK(fi_ep_bind(e->ep, &eq->fid, 0));
	CHECK(fi_enable(e->ep));
	e->len = len ? len : 1;
	e->buf = aligned_alloc(4096, (e->len * 2 + 4095) & ~(size_t)4095);
	memset(e->buf, 0, e->len * 2);
	/* Providers without FI_MR_PROV_KEY take the key we ask for. */
	CHECK(fi_mr_reg(domain, e->buf, e->len * 2,
			FI_SEND | FI_RECV | FI_READ | FI_WRITE |
				FI_REMOTE_READ | FI_REMOTE_WRITE,
			0, ++next_key, 0, &e->mr, NULL));
}

static void ep_close(struct lf_ep *e)
{
	fi_close(&e->ep->fid);
	fi_close(&e->mr->fid);
	fi_close(&e->cq->fid);
	free(e->buf);
}

/* Context tags tell sends from receives in the CQ. */
static char ctx_tx, ctx_rx;

/* The server survives a client that goes away; the client does not. */
static bool serving;
static volatile sig_atomic_t stop; /* SIGINT, SIGTERM: end the run here */

static void on_stop(int sig)
{
	(void)sig;
	stop = 1;
}

/* Reaps completions; false once the endpoint failed (server only). */
static bool poll_cq(struct lf_ep *e)
{
	struct fi_cq_entry c[16];
	struct fi_cq_err_entry err;
	ssize_t n, i;

	n = fi_cq_read(e->cq, c, 16);
	if (n == -FI_EAGAIN)
		return true;
	if (n < 0) {
		fi_cq_readerr(e->cq, &err, 0);
		if (serving)
			return false;
		fprintf(stderr, "lf_bench: cq error %s\n",
			fi_strerror(err.err));
		exit(1);
	}
	for (i = 0; i < n; i++) {
		if (c[i].op_context == &ctx_rx)
			e->rx_done++;
		else
			e->tx_done++;
	}
	return true;
}

static void post_recv(struct lf_ep *e, size_t off, size_t len)
{
	ssize_t rc;

	while ((rc = fi_recv(e->ep, e->buf + off, len, fi_mr_desc(e->mr), 0,
			     &ctx_rx)) == -FI_EAGAIN)
		poll_cq(e);
	CHECK(rc);
}

static void post_send(struct lf_ep *e, size_t len)
{
	ssize_t rc;

	while ((rc = fi_send(e->ep, e->buf, len, fi_mr_desc(e->mr), 0,
			     &ctx_tx)) == -FI_EAGAIN)
		poll_cq(e);
	CHECK(rc);
}

/* The next CM event; an error event is fatal unless soft. */
static uint32_t next_event(uint32_t want, void *entry, size_t len, bool soft)
{
	struct fi_eq_err_entry err;
	uint32_t ev;
	ssize_t n;

	/* A stop and continue (bench/slicer) ends the wait with EINTR. */
	do
		n = fi_eq_sread(eq, &ev, entry, len, -1, 0);
	while (n == -FI_EINTR || n == -FI_EAGAIN);
	if (n < 0 && soft) {
		fi_eq_readerr(eq, &err, 0);
		return 0;
	}
	if (n < 0) {
		fi_eq_readerr(eq, &err, 0);
		fprintf(stderr, "lf_bench: eq error %s (%s)\n",
			fi_strerror(err.err), fi_strerror((int)-n));
		exit(1);
	}
	if (want && ev != want) {
		fprintf(stderr, "lf_bench: event %u, wanted %u\n", ev, want);
		exit(1);
	}
	return ev;
}

static uint32_t wait_event(uint32_t want, void *entry, size_t len)
{
	return next_event(want, entry, len, false);
}

/* ------------------------------------------------------------------ */

static void serve_data(struct fi_info *info, const struct lf_hello *h)
{
	struct fi_eq_cm_entry cm;
	struct lf_reply r = { 0 };
	struct lf_ep e;
	uint64_t i, sends = 0;
	size_t size = h->size;

	ep_open(&e, info, h->test == T_MSG_BW ? size * CREDITS : size);
	for (i = 0; i < CREDITS; i++)
		post_recv(&e, h->test == T_MSG_BW ? i * size : 0,
			  MAX_RECV(size));
	/* Without FI_MR_VIRT_ADDR, RMA addresses are offsets. */
	r.addr = htole64(mr_mode & FI_MR_VIRT_ADDR ? (uint64_t)(uintptr_t)e.buf
						   : 0);
	r.key = htole64(fi_mr_key(e.mr));
	CHECK(fi_accept(e.ep, &r, sizeof(r)));
	wait_event(FI_CONNECTED, &cm, sizeof(cm));
	if (h->test == T_MSG_BW) {
		/* A credit after every half of the receives, as ndkperf. */
		for (i = 0; i < h->iters;) {
			if (!poll_cq(&e))
				goto out;
			for (; i < e.rx_done && i < h->iters; i++) {
				post_recv(&e, (i % CREDITS) * size,
					  MAX_RECV(size));
				if ((i + 1) % (CREDITS / 2) == 0 ||
				    i + 1 == h->iters) {
					post_send(&e, 0);
					sends++;
				}
			}
		}
	} else {
		/* RMA needs nothing from us until the client's "done". */
		while (e.rx_done < 1)
			if (!poll_cq(&e))
				goto out;
		post_send(&e, 0);
		sends++;
	}
	while (e.tx_done < sends)
		if (!poll_cq(&e))
			break;
out:
	/* The client shuts down (an error event also ends it). */
	next_event(0, &cm, sizeof(cm), true);
	ep_close(&e);
}

static int server(const char *port)
{
	/* bench/run's veth topology listens on the namespace's address. */
	const char *addr = getenv("BENCH_ADDR");
	struct fi_info *info = lookup(addr ? addr : "127.0.0.1", port, true);
	struct fid_pep *pep;
	struct lf_ep *conns[64] = { 0 };
	unsigned int nconn = 0;
	struct {
		struct fi_eq_cm_entry cm;
		uint8_t data[256];
	} ev;
	uint32_t type;

	serving = true;
	open_fabric(info);
	CHECK(fi_passive_ep(fabric, info, &pep, NULL));
	CHECK(fi_pep_bind(pep, &eq->fid, 0));
	CHECK(fi_listen(pep));
	fprintf(stderr, "lf_bench: listening on 127.0.0.1:%s\n", port);
	for (;;) {
		struct lf_hello h;
		struct lf_ep *c;

		type = next_event(0, &ev, sizeof(ev), true);
		if (type == FI_SHUTDOWN) {
			/* A connection-test endpoint: close it. */
			unsigned int k;

			for (k = 0; k < nconn; k++)
				if (&conns[k]->ep->fid == ev.cm.fid) {
					ep_close(conns[k]);
					free(conns[k]);
					conns[k] = conns[--nconn];
					break;
				}
			continue;
		}
		if (type != FI_CONNREQ)
			continue;
		memcpy(&h, ev.data, sizeof(h));
		if (h.test != T_CONN) {
			serve_data(ev.cm.info, &h);
			fi_freeinfo(ev.cm.info);
			continue;
		}
		c = malloc(sizeof(*c));
		ep_open(c, ev.cm.info, 1);
		CHECK(fi_accept(c->ep, NULL, 0));
		fi_freeinfo(ev.cm.info);
		if (nconn < 64)
			conns[nconn++] = c;
	}
	return 0;
}

/* Returns the nanoseconds from fi_connect to FI_CONNECTED. */
static uint64_t client_connect(struct lf_ep *e, const char *host,
			       const char *port, struct lf_hello *h,
			       struct lf_reply *r)
{
	uint64_t t;
	struct fi_info *info = lookup(host, port, false);
	struct {
		struct fi_eq_cm_entry cm;
		uint8_t data[256];
	} ev;

	if (!fabric)
		open_fabric(info);
	ep_open(e, info, h->size * 2);
	t = now_ns();
	CHECK(fi_connect(e->ep, info->dest_addr, h, sizeof(*h)));
	wait_event(FI_CONNECTED, &ev, sizeof(ev));
	t = now_ns() - t;
	if (r)
		memcpy(r, ev.data, sizeof(*r));
	fi_freeinfo(info);
	return t;
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

static int run_bw(int test, const char *host, const char *port, size_t size,
		  uint64_t iters)
{
	struct lf_hello h = { .test = (uint32_t)test,
			      .size = (uint32_t)size,
			      .iters = iters };
	struct lf_reply r;
	struct lf_ep e;
	uint64_t posted = 0, t0, ns;
	struct sigaction sa = { .sa_handler = on_stop, .sa_flags = SA_RESTART };
	unsigned int k;
	double cpu0;
	ssize_t rc;

	client_connect(&e, host, port, &h, &r);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	/* Connected, clock not started: bench/slicer --ready waits for it. */
	if (getenv("NDK_BENCH_READY_STOP"))
		raise(SIGSTOP);
	t0 = now_ns();
	cpu0 = cpu_now();
	if (test == T_MSG_BW) {
		for (k = 0; k < 8; k++)
			post_recv(&e, size, 1);
		while (e.rx_done * (CREDITS / 2) < iters && !stop) {
			uint64_t credits = e.rx_done * (CREDITS / 2) + CREDITS;

			while (posted < iters && posted < credits &&
			       posted - e.tx_done < WINDOW) {
				post_send(&e, size);
				posted++;
			}
			k = (unsigned int)e.rx_done;
			poll_cq(&e);
			for (; k < e.rx_done; k++)
				post_recv(&e, size, 1);
		}
		/* Stopped early: what was posted, all of it sent. */
		while (e.tx_done < posted)
			poll_cq(&e);
	} else {
		while (e.tx_done < iters && !stop) {
			while (posted < iters && posted - e.tx_done < WINDOW) {
				rc = test == T_WRITE_BW
					     ? fi_write(e.ep, e.buf, size,
							fi_mr_desc(e.mr), 0,
							le64toh(r.addr),
							le64toh(r.key), &ctx_tx)
					     : fi_read(e.ep, e.buf, size,
						       fi_mr_desc(e.mr), 0,
						       le64toh(r.addr),
						       le64toh(r.key), &ctx_tx);
				if (rc == -FI_EAGAIN)
					break;
				CHECK(rc);
				posted++;
			}
			poll_cq(&e);
		}
		/* "done", and the server's answer: every Write placed. */
		post_recv(&e, size, 1);
		post_send(&e, 0);
		while (e.rx_done < 1 || e.tx_done < posted + 1)
			poll_cq(&e);
	}
	iters = posted;
	ns = now_ns() - t0;
	/* mono_*_ns: as ndkperf's, for bench/slicer's pauses. */
	printf("{\"test\":\"lf_%s\",\"bytes\":%zu,\"iters\":%llu,"
	       "\"seconds\":%.6f,\"mb_per_sec\":%.3f,\"usec_per_xfer\":%.3f,"
	       "\"cpu_sec\":%.3f,\"mono_start_ns\":%llu,"
	       "\"mono_end_ns\":%llu,\"interrupted\":%s}\n",
	       test == T_MSG_BW	    ? "msg_bw"
	       : test == T_WRITE_BW ? "write_bw"
				    : "read_bw",
	       size, (unsigned long long)iters, (double)ns / 1e9,
	       (double)(size * iters) * 1e3 / (double)ns,
	       iters ? (double)ns / 1e3 / (double)iters : 0, cpu_now() - cpu0,
	       (unsigned long long)t0, (unsigned long long)(t0 + ns),
	       stop ? "true" : "false");
	fi_shutdown(e.ep, 0);
	ep_close(&e);
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static int run_conn(const char *host, const char *port, uint64_t iters)
{
	struct lf_hello h = { .test = T_CONN, .size = 1 };
	double *v = calloc(iters, sizeof(double));
	uint64_t i, t, t0 = now_ns();
	struct lf_ep e;

	for (i = 0; i < iters; i++) {
		v[i] = (double)client_connect(&e, host, port, &h, NULL) /
		       1000.0;
		fi_shutdown(e.ep, 0);
		ep_close(&e);
	}
	t = now_ns() - t0;
	qsort(v, iters, sizeof(double), cmp_double);
	printf("{\"test\":\"lf_conn\",\"bytes\":%d,\"iters\":%llu,"
	       "\"p50_usec\":%.3f,\"conn_per_sec\":%.1f}\n",
	       CM_DATA, (unsigned long long)iters, v[iters / 2],
	       (double)iters * 1e9 / (double)t);
	free(v);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "server"))
		return server(argv[2]);
	if (argc == 6 && !strcmp(argv[1], "msg_bw"))
		return run_bw(T_MSG_BW, argv[2], argv[3], (size_t)atol(argv[4]),
			      (uint64_t)atoll(argv[5]));
	if (argc == 6 && !strcmp(argv[1], "write_bw"))
		return run_bw(T_WRITE_BW, argv[2], argv[3],
			      (size_t)atol(argv[4]), (uint64_t)atoll(argv[5]));
	if (argc == 6 && !strcmp(argv[1], "read_bw"))
		return run_bw(T_READ_BW, argv[2], argv[3],
			      (size_t)atol(argv[4]), (uint64_t)atoll(argv[5]));
	if (argc == 5 && !strcmp(argv[1], "conn"))
		return run_conn(argv[2], argv[3], (uint64_t)atoll(argv[4]));
	fprintf(stderr, "usage: lf_bench server PORT\n"
			"       lf_bench msg_bw|write_bw|read_bw HOST PORT "
			"SIZE ITERS\n"
			"       lf_bench conn HOST PORT ITERS\n");
	return 2;
}
