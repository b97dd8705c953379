// SPDX-License-Identifier: MIT
/*
 * ndknvmet: an NVMe over Fabrics RDMA target (controller) on NDK, serving
 * one namespace from RAM or a file to hosts such as Linux's nvme-rdma
 * (`nvme connect -t rdma`). Public NDKPI only.
 *
 *   ndknvmet [-b ADDR] [-p PORT] [-I IF] [--nqn SUBNQN]
 *            [--ram SIZE | --file PATH] [--lba 512|4096] [-q MAX_IOQ]
 *            [-Q ENTRIES] [--mdts KIB] [-v]
 *
 * It prints one line when it listens, one per controller and queue that
 * comes and goes, and its counters when SIGINT or SIGTERM ends it: every
 * queue is disconnected first. It listens on every interface of a
 * wildcard ADDR (docs/tools.md, Servers). Exit status 0, 1 when it could
 * not listen or queues did not end in time, 2 on a usage error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <net/if.h>
#include "nvmet.h"
#include "tool_server.h"
#include "toolutil.h"

#define DEFAULT_NQN	 "nqn.2024-01.io.libndk:ndknvmet"
#define DEFAULT_RAM	 (64ull << 20)
#define DEFAULT_IOQ	 8
#define DEFAULT_ENTRIES	 128
#define DEFAULT_XFER_KIB 128
#define STOP_WAIT_MS	 30000

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ndknvmet [options]\n"
		"An NVMe over Fabrics RDMA target serving one namespace.\n"
		"  -b, --bind ADDR      listen on ADDR (0.0.0.0: every interface)\n"
		"  -p, --port PORT      port (%u)\n"
		"  -I, --interface IF   only this interface's adapter\n"
		"      --nqn NQN        subsystem NQN (%s)\n"
		"      --ram SIZE       namespace in RAM, k/m/g suffix (64m)\n"
		"      --file PATH      namespace in a file or block device\n"
		"      --lba 512|4096   block size (512)\n"
		"  -q, --queues N       I/O queues per controller (%u, max %u)\n"
		"  -Q, --entries N      entries per I/O queue (%u)\n"
		"      --mdts KIB       largest transfer per command, a power "
		"of two from 4 (%u)\n"
		"  -v, --verbose        log commands (twice: I/O commands too)\n"
		"  -h, --help           this help\n"
		"      --version        the version\n"
		"SIGINT or SIGTERM ends it after disconnecting every queue.\n"
		"Exit status: 0 ok, 1 could not listen or queues did not end, 2\n"
		"usage (docs/tools.md).\n",
		NVMET_PORT, DEFAULT_NQN, DEFAULT_IOQ, NVMET_MAX_IOQ,
		DEFAULT_ENTRIES, DEFAULT_XFER_KIB);
}

/* A power of two from min to max, or a usage error. */
static unsigned int parse_pow2(const char *opt, const char *s, unsigned int min,
			       unsigned int max)
{
	unsigned int v = (unsigned int)tool_arg_count(opt, s, min, max);

	if (v & (v - 1))
		tool_usage_error("%s: a power of two, not %s", opt, s);
	return v;
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

enum {
	OPT_NQN = TOOL_OPT_FIRST,
	OPT_RAM,
	OPT_FILE,
	OPT_LBA,
	OPT_MDTS,
};

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "bind", required_argument, NULL, 'b' },
		{ "port", required_argument, NULL, 'p' },
		{ "interface", required_argument, NULL, 'I' },
		{ "nqn", required_argument, NULL, OPT_NQN },
		{ "ram", required_argument, NULL, OPT_RAM },
		{ "file", required_argument, NULL, OPT_FILE },
		{ "lba", required_argument, NULL, OPT_LBA },
		{ "queues", required_argument, NULL, 'q' },
		{ "entries", required_argument, NULL, 'Q' },
		{ "mdts", required_argument, NULL, OPT_MDTS },
		{ "verbose", no_argument, NULL, 'v' },
		TOOL_LONG_COMMON,
		{ NULL, 0, NULL, 0 },
	};
	static struct nvmet_target t;
	static struct tool_server srv;
	const char *addr = "0.0.0.0", *file = NULL;
	uint64_t ram = DEFAULT_RAM;
	unsigned int lba = 512, xfer_kib = DEFAULT_XFER_KIB;
	uint16_t port = NVMET_PORT;
	char ifname[IF_NAMESIZE];
	struct sockaddr_storage ss;
	struct tool_host *h;
	NET_IFINDEX idx = 0;
	char buf[128];
	bool clean;
	int op, rc;

	tool_prog = "ndknvmet";
	setvbuf(stdout, NULL, _IOLBF, 0);
	snprintf(t.subnqn, sizeof(t.subnqn), "%s", DEFAULT_NQN);
	t.max_ioq = DEFAULT_IOQ;
	t.io_qsize = DEFAULT_ENTRIES;
	while ((op = getopt_long(argc, argv, "b:p:I:q:Q:vh", longopts, NULL)) !=
	       -1) {
		switch (op) {
		case 'b':
			addr = optarg;
			break;
		case 'p':
			port = tool_arg_port(optarg);
			break;
		case 'I':
			idx = tool_arg_interface(optarg, ifname);
			break;
		case OPT_NQN:
			if (strlen(optarg) >= NVME_NQN_SIZE - 33)
				tool_usage_error("--nqn: too long");
			snprintf(t.subnqn, sizeof(t.subnqn), "%s", optarg);
			break;
		case OPT_RAM:
			ram = tool_arg_size("--ram", optarg, 1, UINT64_MAX);
			file = NULL;
			break;
		case OPT_FILE:
			file = optarg;
			break;
		case OPT_LBA:
			lba = parse_pow2("--lba", optarg, 512, 4096);
			if (lba != 512 && lba != 4096)
				tool_usage_error("--lba: 512 or 4096");
			break;
		case 'q':
			t.max_ioq = (unsigned int)tool_arg_count(
				"-q", optarg, 1, NVMET_MAX_IOQ);
			break;
		case 'Q':
			t.io_qsize = (unsigned int)tool_arg_count("-Q", optarg,
								  2, 1024);
			break;
		case OPT_MDTS:
			xfer_kib = parse_pow2("--mdts", optarg, 4, 4096);
			break;
		case 'v':
			t.verbose++;
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
	if (optind != argc)
		tool_usage_error("unexpected argument '%s'", argv[optind]);
	tool_arg_addr("-b", addr, port, &ss);
	t.max_xfer = (size_t)xfer_kib << 10;
	for (t.mdts = 0; (4096u << t.mdts) < t.max_xfer; t.mdts++)
		;
	t.firmware = NDK_TOOLS_VERSION;
	rc = file ? nvmet_ns_open_file(&t.ns, file, lba == 4096 ? 12 : 9)
		  : nvmet_ns_open_ram(&t.ns, ram, lba == 4096 ? 12 : 9);
	if (rc) {
		fprintf(stderr, "ndknvmet: namespace %s: %s\n",
			file ? file : "in RAM", strerror(-rc));
		return TOOL_EXIT_FAIL;
	}
	nvmet_ns_set_ids(&t.ns, t.subnqn);
	snprintf(t.serial, sizeof(t.serial), "%02x%02x%02x%02x%02x%02x%02x%02x",
		 t.ns.nguid[0], t.ns.nguid[1], t.ns.nguid[2], t.ns.nguid[3],
		 t.ns.nguid[4], t.ns.nguid[5], t.ns.nguid[6], t.ns.nguid[7]);
	pthread_mutex_init(&t.lock, NULL);
	pthread_cond_init(&t.cond, NULL);
	t.next_cntlid = 1;
	t.start_ns = tool_now_ns();

	tool_catch_signals();
	if (tool_server_open(&srv, (struct sockaddr *)&ss, idx, NULL, NULL)) {
		nvmet_ns_close(&t.ns);
		return TOOL_EXIT_FAIL;
	}
	nvmet_log(&t,
		  "listening on %s nqn %s, namespace 1: %s, %llu blocks of %u "
		  "bytes; up to %u I/O queues of %u entries, %zu KiB per "
		  "command",
		  tool_server_str(&srv, buf, sizeof(buf)), t.subnqn, t.ns.what,
		  (unsigned long long)t.ns.blocks, lba, t.max_ioq, t.io_qsize,
		  t.max_xfer >> 10);
	while (!tool_stop) {
		NDK_CONNECTOR *c = tool_server_next(&srv, 200, &h);

		if (c)
			nvmet_queue_start(&t, h, c);
	}
	/* No new requests; the ones already queued are refused. */
	tool_server_stop(&srv);
	clean = stop_queues(&t);
	print_counters(&t);
	if (clean)
		tool_server_close(&srv);
	nvmet_ns_close(&t.ns);
	return clean ? TOOL_EXIT_OK : TOOL_EXIT_FAIL;
}
