// SPDX-License-Identifier: MIT
/*
 * ndknvmet: an NVMe over Fabrics RDMA target (controller) on NDK, serving
 * one namespace from RAM or a file to hosts such as Linux's nvme-rdma
 * (`nvme connect -t rdma`). Public NDKPI only.
 *
 *   ndknvmet [-a ADDR] [-p PORT] [-i IFNAME] [-n SUBNQN]
 *            [--ram SIZE | --file PATH] [--lba 512|4096] [-q MAX_IOQ]
 *            [-Q ENTRIES] [--mdts KIB] [-v]
 *
 * It prints one line when it listens, one per controller and queue that
 * comes and goes, and its counters when SIGINT or SIGTERM ends it: every
 * queue is disconnected first. Exit status 0, 1 when queues did not end
 * in time, 2 on a usage or setup error.
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <net/if.h>
#include "nvmet.h"
#include "toolutil.h"

#ifndef NDK_TOOLS_VERSION
#define NDK_TOOLS_VERSION "0"
#endif

#define DEFAULT_NQN	 "nqn.2024-01.io.libndk:ndknvmet"
#define DEFAULT_RAM	 (64ull << 20)
#define DEFAULT_IOQ	 8
#define DEFAULT_ENTRIES	 128
#define DEFAULT_XFER_KIB 128
#define STOP_WAIT_MS	 30000

static volatile sig_atomic_t stop;
static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ndknvmet [options]\n"
		"  -a, --addr ADDR      listen on ADDR (127.0.0.1)\n"
		"  -p, --port PORT      port (%u)\n"
		"  -i, --ifname IF      adapter (default: the one owning ADDR)\n"
		"  -n, --nqn NQN        subsystem NQN (%s)\n"
		"      --ram SIZE       namespace in RAM, k/m/g suffix (64m)\n"
		"      --file PATH      namespace in a file or block device\n"
		"      --lba 512|4096   block size (512)\n"
		"  -q, --queues N       I/O queues per controller (%u, max %u)\n"
		"  -Q, --entries N      entries per I/O queue (%u)\n"
		"      --mdts KIB       largest transfer per command, a power "
		"of two from 4 (%u)\n"
		"  -v, --verbose        log commands (twice: I/O commands too)\n",
		NVMET_PORT, DEFAULT_NQN, DEFAULT_IOQ, NVMET_MAX_IOQ,
		DEFAULT_ENTRIES, DEFAULT_XFER_KIB);
}

/* "64m", "1g", "4096": bytes, or 0 when malformed. */
static uint64_t parse_size(const char *s)
{
	uint64_t v;

	return tool_parse_size(s, &v) ? 0 : v;
}

static unsigned int parse_uint(const char *s, unsigned int min,
			       unsigned int max)
{
	char *end;
	unsigned long v = strtoul(s, &end, 0);

	if (*end || v < min || v > max) {
		fprintf(stderr, "ndknvmet: %s: expected %u to %u\n", s, min,
			max);
		exit(2);
	}
	return (unsigned int)v;
}

/* Asks every queue to end and waits for them. */
static bool stop_queues(struct nvmet_target *t)
{
	struct timespec ts = tool_deadline(STOP_WAIT_MS);
	struct nvmet_queue *q;
	bool clean = true;

	pthread_mutex_lock(&t->lock);
	t->stopping = true;
	for (q = t->queues; q; q = q->next)
		nvmet_queue_kill_locked(q, "target stopping");
	while (t->nqueues) {
		if (pthread_cond_timedwait(&t->cond, &t->lock, &ts)) {
			nvmet_log(t, "%u queues did not end", t->nqueues);
			clean = false;
			break;
		}
	}
	pthread_mutex_unlock(&t->lock);
	return clean;
}

static void print_counters(struct nvmet_target *t)
{
	struct nvmet_counters *c = &t->cnt;

	nvmet_log(t,
		  "exit: %llu controllers, %llu queues, %llu rejected, %llu "
		  "keep-alive expiries, %llu commands, %llu errors, read %llu "
		  "bytes in %llu commands, written %llu bytes in %llu commands",
		  (unsigned long long)atomic_load(&c->controllers),
		  (unsigned long long)atomic_load(&c->queues),
		  (unsigned long long)atomic_load(&c->rejected),
		  (unsigned long long)atomic_load(&c->expired),
		  (unsigned long long)atomic_load(&c->commands),
		  (unsigned long long)atomic_load(&c->errors),
		  (unsigned long long)atomic_load(&c->bytes_read),
		  (unsigned long long)atomic_load(&c->read_cmds),
		  (unsigned long long)atomic_load(&c->bytes_written),
		  (unsigned long long)atomic_load(&c->write_cmds));
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "addr", required_argument, NULL, 'a' },
		{ "port", required_argument, NULL, 'p' },
		{ "ifname", required_argument, NULL, 'i' },
		{ "nqn", required_argument, NULL, 'n' },
		{ "ram", required_argument, NULL, 'R' },
		{ "file", required_argument, NULL, 'F' },
		{ "lba", required_argument, NULL, 'L' },
		{ "queues", required_argument, NULL, 'q' },
		{ "entries", required_argument, NULL, 'Q' },
		{ "mdts", required_argument, NULL, 'M' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static struct nvmet_target t;
	const char *addr = "127.0.0.1", *ifname = NULL, *file = NULL;
	uint64_t ram = DEFAULT_RAM;
	unsigned int port = NVMET_PORT, lba = 512, xfer_kib = DEFAULT_XFER_KIB;
	struct sockaddr_storage ss;
	struct tool_listener l;
	struct sigaction sa;
	NET_IFINDEX idx;
	char buf[80];
	bool clean;
	int op, rc;

	tool_prog = "ndknvmet";
	setvbuf(stdout, NULL, _IOLBF, 0);
	snprintf(t.subnqn, sizeof(t.subnqn), "%s", DEFAULT_NQN);
	t.max_ioq = DEFAULT_IOQ;
	t.io_qsize = DEFAULT_ENTRIES;
	while ((op = getopt_long(argc, argv, "a:p:i:n:q:Q:vh", longopts,
				 NULL)) != -1) {
		switch (op) {
		case 'a':
			addr = optarg;
			break;
		case 'p':
			port = parse_uint(optarg, 1, 65535);
			break;
		case 'i':
			ifname = optarg;
			break;
		case 'n':
			if (strlen(optarg) >= NVME_NQN_SIZE - 33) {
				fprintf(stderr, "ndknvmet: NQN too long\n");
				return 2;
			}
			snprintf(t.subnqn, sizeof(t.subnqn), "%s", optarg);
			break;
		case 'R':
			ram = parse_size(optarg);
			file = NULL;
			break;
		case 'F':
			file = optarg;
			break;
		case 'L':
			lba = parse_uint(optarg, 512, 4096);
			if (lba != 512 && lba != 4096) {
				usage(stderr);
				return 2;
			}
			break;
		case 'q':
			t.max_ioq = parse_uint(optarg, 1, NVMET_MAX_IOQ);
			break;
		case 'Q':
			t.io_qsize = parse_uint(optarg, 2, 1024);
			break;
		case 'M':
			xfer_kib = parse_uint(optarg, 4, 4096);
			if (xfer_kib & (xfer_kib - 1)) {
				usage(stderr);
				return 2;
			}
			break;
		case 'v':
			t.verbose++;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc || (!file && !ram)) {
		usage(stderr);
		return 2;
	}
	t.max_xfer = (size_t)xfer_kib << 10;
	for (t.mdts = 0; (4096u << t.mdts) < t.max_xfer; t.mdts++)
		;
	t.firmware = NDK_TOOLS_VERSION;
	rc = file ? nvmet_ns_open_file(&t.ns, file, lba == 4096 ? 12 : 9)
		  : nvmet_ns_open_ram(&t.ns, ram, lba == 4096 ? 12 : 9);
	if (rc) {
		fprintf(stderr, "ndknvmet: namespace %s: %s\n",
			file ? file : "in RAM", strerror(-rc));
		return 2;
	}
	nvmet_ns_set_ids(&t.ns, t.subnqn);
	snprintf(t.serial, sizeof(t.serial), "%02x%02x%02x%02x%02x%02x%02x%02x",
		 t.ns.nguid[0], t.ns.nguid[1], t.ns.nguid[2], t.ns.nguid[3],
		 t.ns.nguid[4], t.ns.nguid[5], t.ns.nguid[6], t.ns.nguid[7]);
	pthread_mutex_init(&t.lock, NULL);
	pthread_cond_init(&t.cond, NULL);
	t.next_cntlid = 1;
	t.start_ns = tool_now_ns();

	if (tool_parse_addr(addr, (uint16_t)port, &ss)) {
		fprintf(stderr, "ndknvmet: bad address %s\n", addr);
		return 2;
	}
	idx = ifname ? if_nametoindex(ifname)
		     : tool_ifindex_of((struct sockaddr *)&ss);
	if (!idx) {
		fprintf(stderr, "ndknvmet: no interface %s (use -i IFNAME)\n",
			ifname ? ifname : addr);
		return 2;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	tool_host_open(&t.host, idx);
	tool_check("NdkListen",
		   tool_listen(t.host.ad, &l, (struct sockaddr *)&ss));
	nvmet_log(&t,
		  "listening on %s nqn %s, namespace 1: %s, %llu blocks of %u "
		  "bytes; up to %u I/O queues of %u entries, %zu KiB per "
		  "command",
		  tool_addr_str((struct sockaddr *)&l.addr, buf, sizeof(buf)),
		  t.subnqn, t.ns.what, (unsigned long long)t.ns.blocks, lba,
		  t.max_ioq, t.io_qsize, t.max_xfer >> 10);
	while (!stop) {
		NDK_CONNECTOR *c = tool_next_incoming(&l, 200);

		if (c)
			nvmet_queue_start(&t, c);
	}
	/* No new requests; the ones already queued are refused. */
	l.lis->Dispatch->NdkControlConnectEvents(l.lis, TRUE);
	for (NDK_CONNECTOR *c; (c = tool_next_incoming(&l, 1));) {
		c->Dispatch->NdkReject(c, NULL, 0);
		TOOL_CLOSE(c);
	}
	clean = stop_queues(&t);
	print_counters(&t);
	if (clean) {
		tool_listener_close(&l);
		tool_host_close(&t.host);
	}
	nvmet_ns_close(&t.ns);
	return clean ? 0 : 1;
}
