// SPDX-License-Identifier: MIT
/*
 * ndknvme: an NVMe over Fabrics RDMA host on libndk, for testing targets
 * such as Linux's nvmet-rdma.
 *
 *   ndknvme --nqn SUBNQN [options] HOST[:PORT] CMD [ARGS]
 *
 * It connects the admin queue and the I/O queues (Fabrics Connect with
 * the NVMe RDMA CM private data), enables the controller (Property
 * Get/Set, CSTS.RDY), reads Identify Controller and Namespace, asks for
 * the queues with Set Features, sends Keep Alive every kato/2, and then
 * runs one command:
 *
 *   id                       what the controller and namespace say
 *   write LBA COUNT          a deterministic pattern (--pattern SEED)
 *   read LBA COUNT           read, print a checksum (--dump: hex)
 *   verify LBA COUNT         read and compare with the pattern
 *   load                     random I/O at a queue depth for a time,
 *                            IOPS and latency percentiles; reads of
 *                            blocks written in the run are verified
 *   badcmd                   commands the controller must refuse
 *
 * Exit status (docs/tools.md): 0 ok, 1 a command that failed (a lost
 * connection included), 2 a usage error, 3 the controller could not be
 * connected (CM or Fabrics Connect), 4 a data mismatch. The last line on
 * stdout says "ndknvme: CMD ok ..." or what went wrong; with -j that goes
 * to stderr and stdout has one JSON document.
 */
#include <errno.h>
#include <inttypes.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include "nvme_host.h"
#include "toolutil.h"

#define NVME_RDMA_PORT	  4420
#define DEFAULT_QSIZE	  32
#define DEFAULT_KATO_MS	  5000
#define DEFAULT_MAX_IO	  (128u * 1024)
#define MAX_REPORTS	  10
#define LOAD_MAX_UNITS	  (1u << 22)
#define LOAD_DEFAULT_SPAN (256ull << 20) /* bytes, at the namespace start */

static const char *prog = "ndknvme";

/* ------------------------------------------------------------------ */
/* The data pattern                                                   */

static uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/*
 * Block lba as written with seed: word 0 holds the LBA, word 1 the seed,
 * the rest a stream of both, so a misplaced or stale block says where it
 * came from.
 */
static void pattern_fill(uint8_t *p, uint32_t bs, uint64_t lba, uint64_t seed)
{
	uint64_t base = mix64(seed ^ mix64(lba));
	uint32_t w;

	nvme_put64(p, lba);
	nvme_put64(p + 8, seed);
	for (w = 2; w < bs / 8; w++)
		nvme_put64(p + 8 * w, mix64(base + w));
}

/* -1 when the block matches, else the first byte that differs. */
static long pattern_diff(const uint8_t *p, uint8_t *expect, uint32_t bs,
			 uint64_t lba, uint64_t seed)
{
	uint32_t i;

	pattern_fill(expect, bs, lba, seed);
	if (!memcmp(p, expect, bs))
		return -1;
	for (i = 0; i < bs && p[i] == expect[i]; i++)
		;
	return i;
}

static void report_mismatch(const uint8_t *p, const uint8_t *expect,
			    uint64_t lba, long off)
{
	printf("%s: mismatch at lba %" PRIu64
	       " byte %ld: expected 0x%02x, got 0x%02x (the block says lba %" PRIu64
	       " seed 0x%" PRIx64 ")\n",
	       prog, lba, off, expect[off], p[off], nvme_get64(p),
	       nvme_get64(p + 8));
}

/* ------------------------------------------------------------------ */
/* Options                                                            */

struct cli {
	struct nh_ctrl ctrl;
	const char *cmd;
	uint64_t lba, count;
	uint64_t seed;
	bool dump;
	/* load */
	enum { RW_READ, RW_WRITE, RW_MIXED } rw;
	unsigned int read_pct;
	size_t bs;
	unsigned int qd;
	double seconds;
	bool have_range;
	bool qsize_given;
	FILE *json; /* -j: the real stdout; the text goes to stderr */
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s --nqn SUBNQN [options] HOST[:PORT] CMD [ARGS]\n"
		"An NVMe over Fabrics RDMA host: connects, runs CMD, disconnects.\n"
		"options:\n"
		"      --nqn SUBNQN      the subsystem NQN\n"
		"  -p, --port PORT       the controller's port (%d)\n"
		"  -b, --bind ADDR       local address (the route's)\n"
		"  -I, --interface IF    the adapter (the one that has ADDR)\n"
		"  -q, --queues N        I/O queues (1)\n"
		"  -d, --qsize N         entries per I/O queue, 2 to %d (%d)\n"
		"  -k, --keep-alive SECS keep alive timeout, 0 none (%g); Keep\n"
		"                        Alive every half of it\n"
		"  -N, --nsid NSID       namespace (the first active one)\n"
		"      --timeout SECS    command timeout (30)\n"
		"  -v, --verbose         more output\n"
		"  -j, --json            the command's result as JSON on stdout\n"
		"                        (the text goes to stderr)\n"
		"      --hostnqn NQN     (nqn.2014-08.org.nvmexpress:uuid:HOSTID)\n"
		"      --hostid UUID     (random)\n"
		"      --ird N           inbound RDMA Read limit for the\n"
		"                        controller (16)\n"
		"      --mem fr|global   fast-register MR per command with remote\n"
		"                        invalidation (default), or one MR per\n"
		"                        queue\n"
		"      --no-incapsule    never carry write data in the command\n"
		"                        capsule\n"
		"      --max-io BYTES    largest command (%u; less if MDTS says so)\n"
		"      --admin-qsize N   admin queue entries (%d; nvmet-rdma\n"
		"                        refuses more)\n"
		"  -h, --help            this help\n"
		"      --version         the version\n"
		"commands:\n"
		"  id\n"
		"  write LBA COUNT [--pattern SEED]\n"
		"  read LBA COUNT [--dump]\n"
		"  verify LBA COUNT [--pattern SEED]\n"
		"  load [--rw randread|randwrite|randrw] [--mix READ_PCT]\n"
		"       [--bs BYTES] [--qd N per queue] [-D, --duration SECS]\n"
		"       [--range LBA COUNT] [--pattern SEED]\n"
		"  badcmd\n"
		"Exit status: 0 ok, 1 a command failed, 2 usage, 3 could not\n"
		"connect, 4 data mismatch (docs/tools.md).\n",
		prog, NVME_RDMA_PORT, NH_MAX_QUEUE_SIZE, DEFAULT_QSIZE,
		DEFAULT_KATO_MS / 1000.0, DEFAULT_MAX_IO, NH_ADMIN_QUEUE_SIZE);
}

static void __attribute__((noreturn)) bad_arg(const char *what, const char *arg)
{
	tool_usage_error("bad %s: %s", what, arg);
}

static uint64_t parse_u64(const char *what, const char *s)
{
	char *end;
	unsigned long long v;

	if (!s || !*s || *s == '-')
		bad_arg(what, s ? s : "(none)");
	v = strtoull(s, &end, 0);
	if (*end)
		bad_arg(what, s);
	return v;
}

/* A byte count with an optional k, m or g (powers of two). */
static uint64_t parse_size(const char *what, const char *s)
{
	uint64_t v;

	if (tool_parse_size(s, &v))
		bad_arg(what, s ? s : "(none)");
	return v;
}

static bool parse_uuid(const char *s, uint8_t out[16])
{
	unsigned int i = 0, v;

	while (*s && i < 16) {
		if (*s == '-') {
			s++;
			continue;
		}
		if (sscanf(s, "%2x", &v) != 1 || !s[1])
			return false;
		out[i++] = (uint8_t)v;
		s += 2;
	}
	return i == 16 && !*s;
}

static void uuid_str(const uint8_t u[16], char *out)
{
	sprintf(out,
		"%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9],
		u[10], u[11], u[12], u[13], u[14], u[15]);
}

static void random_bytes(void *p, size_t n)
{
	uint8_t *b = p;
	uint64_t x = tool_now_ns();
	size_t i;

	if (getrandom(p, n, 0) == (ssize_t)n)
		return;
	for (i = 0; i < n; i++)
		b[i] = (uint8_t)(x = mix64(x));
}

/* ------------------------------------------------------------------ */
/* Sequential ranges: write, read, verify                             */

enum range_op { RANGE_WRITE, RANGE_READ, RANGE_VERIFY };

struct range_run {
	struct cli *cli;
	enum range_op op;
	uint64_t next, end;
	uint32_t chunk; /* blocks per command */
	unsigned int inflight;
	uint64_t blocks_ok, blocks_bad, cmd_errors;
	uint64_t sum; /* read: of every block, whatever the order */
	unsigned int reports;
	uint8_t *expect;
};

static const char *range_name(enum range_op op)
{
	return op == RANGE_WRITE  ? "write"
	       : op == RANGE_READ ? "read"
				  : "verify";
}

static uint64_t block_hash(const uint8_t *p, uint32_t bs, uint64_t lba)
{
	uint64_t h = 0xcbf29ce484222325ull;
	uint32_t i;

	for (i = 0; i < bs; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return mix64(h ^ lba);
}

static void range_done(struct nh_req *r)
{
	struct range_run *rr = r->arg;
	struct nh_ctrl *c = &rr->cli->ctrl;
	uint32_t bs = c->lba_size, i, n = r->u32;
	uint64_t lba = r->u64;
	char buf[96];
	long off;

	rr->inflight--;
	if (r->status) {
		rr->cmd_errors++;
		if (rr->reports++ < MAX_REPORTS)
			printf("%s: %s lba %" PRIu64 " +%u: %s\n", prog,
			       range_name(rr->op), lba, n,
			       nh_status_str(r->status, buf, sizeof(buf)));
		return;
	}
	for (i = 0; i < n; i++) {
		const uint8_t *p = r->data + (size_t)i * bs;

		if (rr->op == RANGE_READ) {
			rr->sum += block_hash(p, bs, lba + i);
			if (rr->cli->dump && lba + i == rr->cli->lba) {
				for (off = 0; off < 64 && off < bs; off++)
					printf("%02x%s", p[off],
					       off % 16 == 15 ? "\n" : " ");
			}
		} else if (rr->op == RANGE_VERIFY) {
			off = pattern_diff(p, rr->expect, bs, lba + i,
					   rr->cli->seed);
			if (off >= 0) {
				rr->blocks_bad++;
				if (rr->reports++ < MAX_REPORTS)
					report_mismatch(p, rr->expect, lba + i,
							off);
				continue;
			}
		}
		rr->blocks_ok++;
	}
}

static bool range_submit_one(struct range_run *rr, struct nh_queue *q)
{
	struct nh_ctrl *c = &rr->cli->ctrl;
	uint32_t n, i;
	struct nh_req *r;

	if (rr->next >= rr->end)
		return false;
	r = nh_get(q);
	if (!r)
		return false;
	n = (uint32_t)MIN((uint64_t)rr->chunk, rr->end - rr->next);
	nh_prep_rw(r, rr->op == RANGE_WRITE, rr->next, n);
	if (rr->op == RANGE_WRITE)
		for (i = 0; i < n; i++)
			pattern_fill(r->data + (size_t)i * c->lba_size,
				     c->lba_size, rr->next + i, rr->cli->seed);
	r->done = range_done;
	r->arg = rr;
	r->u64 = rr->next;
	r->u32 = n;
	rr->next += n;
	rr->inflight++;
	nh_submit(r);
	return true;
}

static int cmd_range(struct cli *cli, enum range_op op)
{
	struct nh_ctrl *c = &cli->ctrl;
	struct range_run rr = { .cli = cli, .op = op };
	uint64_t t0 = tool_now_ns(), us;
	unsigned int i;
	bool any;

	if (!cli->count || cli->lba >= c->ns.nsze ||
	    cli->count > c->ns.nsze - cli->lba) {
		fprintf(stderr,
			"%s: %s %" PRIu64 " %" PRIu64
			": outside the namespace (%" PRIu64 " blocks)\n",
			prog, range_name(op), cli->lba, cli->count,
			(uint64_t)c->ns.nsze);
		return TOOL_EXIT_USAGE;
	}
	rr.next = cli->lba;
	rr.end = cli->lba + cli->count;
	rr.chunk = (uint32_t)(c->max_io / c->lba_size);
	rr.expect = malloc(c->lba_size);
	if (!rr.expect)
		return TOOL_EXIT_FAIL;
	/* One command per queue in turn, as long as slots are free. */
	while ((!c->failed && rr.next < rr.end) || rr.inflight) {
		do {
			any = false;
			for (i = 0; i < c->nio && !c->failed; i++)
				any |= range_submit_one(&rr, &c->io[i]);
		} while (any);
		nh_poll(c, 1000);
	}
	free(rr.expect);
	us = (tool_now_ns() - t0) / 1000;
	if (cli->json) {
		struct json j;

		json_init(&j, cli->json, true);
		json_begin_object(&j, NULL);
		json_string(&j, "tool", "ndknvme");
		json_string(&j, "command", range_name(op));
		json_uint(&j, "lba", cli->lba);
		json_uint(&j, "count", cli->count);
		json_uint(&j, "blocks_ok", rr.blocks_ok);
		json_uint(&j, "blocks_mismatched", rr.blocks_bad);
		json_uint(&j, "commands_failed", rr.cmd_errors);
		json_uint(&j, "bytes", rr.blocks_ok * c->lba_size);
		json_uint(&j, "queues", c->nio);
		json_double(&j, "seconds", (double)us / 1e6, 6);
		if (op == RANGE_READ)
			json_uint(&j, "checksum", rr.sum);
		else
			json_uint(&j, "pattern", cli->seed);
		json_end_object(&j);
		json_finish(&j);
	}
	if (rr.cmd_errors || rr.blocks_bad || rr.next < rr.end) {
		printf("%s: %s FAILED: %" PRIu64 " blocks ok, %" PRIu64
		       " mismatched, %" PRIu64 " commands failed, %" PRIu64
		       " blocks not sent\n",
		       prog, range_name(op), rr.blocks_ok, rr.blocks_bad,
		       rr.cmd_errors, rr.end - rr.next);
		return rr.blocks_bad ? TOOL_EXIT_VERIFY : TOOL_EXIT_FAIL;
	}
	printf("%s: %s ok %" PRIu64 " blocks at lba %" PRIu64 " (%" PRIu64
	       " bytes, %u queues, %" PRIu64 " ms",
	       prog, range_name(op), rr.blocks_ok, cli->lba,
	       rr.blocks_ok * c->lba_size, c->nio, us / 1000);
	if (op == RANGE_READ)
		printf(", checksum 0x%016" PRIx64, rr.sum);
	else
		printf(", pattern 0x%" PRIx64, cli->seed);
	printf(")\n");
	return 0;
}

/* ------------------------------------------------------------------ */
/* Latency histogram: 16 buckets per power of two (6% resolution)     */

#define HIST_BUCKETS 1024

struct hist {
	uint64_t n[HIST_BUCKETS];
	uint64_t count, sum, min, max;
};

static unsigned int hist_index(uint64_t v)
{
	unsigned int e;

	if (v < 16)
		return (unsigned int)v;
	e = 63u - (unsigned int)__builtin_clzll(v);
	return (e - 3) * 16 + (unsigned int)((v >> (e - 4)) & 15);
}

/* The middle of bucket i. */
static uint64_t hist_value(unsigned int i)
{
	unsigned int e = i / 16 + 3, sub = i % 16;

	if (i < 16)
		return i;
	return ((16ull + sub) << (e - 4)) + ((1ull << (e - 4)) >> 1);
}

static void hist_add(struct hist *h, uint64_t v)
{
	h->n[hist_index(v)]++;
	if (!h->count || v < h->min)
		h->min = v;
	if (v > h->max)
		h->max = v;
	h->count++;
	h->sum += v;
}

static uint64_t hist_pct(const struct hist *h, double pct)
{
	uint64_t want = (uint64_t)(pct / 100.0 * (double)h->count + 0.999999);
	uint64_t seen = 0;
	unsigned int i;

	if (!h->count)
		return 0;
	for (i = 0; i < HIST_BUCKETS; i++) {
		seen += h->n[i];
		if (seen >= want)
			return MIN(MAX(hist_value(i), h->min), h->max);
	}
	return h->max;
}

/* ------------------------------------------------------------------ */
/* load                                                               */

struct op_stats {
	uint64_t ios, errors;
	struct hist lat; /* ns */
};

struct load {
	struct cli *cli;
	uint32_t unit_blocks; /* --bs in blocks */
	uint64_t start, units; /* the range, in units */
	uint64_t seed, rng;
	uint32_t *ver; /* per unit: 0 never written here, ~0 unknown */
	uint8_t *busy; /* per unit: a command on it is in flight */
	unsigned int *q_inflight;
	unsigned int inflight;
	struct op_stats rd, wr;
	uint64_t verified, mismatches, reports;
	uint8_t *expect;
};

#define VER_UNKNOWN UINT32_MAX

static uint64_t xorshift(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

static uint64_t load_seed(const struct load *l, uint32_t ver)
{
	return l->seed + ver;
}

static void load_done(struct nh_req *r)
{
	struct load *l = r->arg;
	struct nh_ctrl *c = &l->cli->ctrl;
	uint64_t unit = r->u64, lba = l->start + unit * l->unit_blocks;
	uint64_t lat = tool_now_ns() - r->t_submit;
	struct op_stats *s = r->to_ctrl ? &l->wr : &l->rd;
	uint32_t i, ver = l->ver[unit];
	char buf[96];
	long off;

	l->busy[unit] = 0;
	l->q_inflight[r->q->qid - 1]--;
	l->inflight--;
	if (r->status) {
		s->errors++;
		if (r->to_ctrl)
			l->ver[unit] = VER_UNKNOWN;
		if (!c->failed && l->reports++ < MAX_REPORTS)
			printf("%s: load %s lba %" PRIu64 ": %s\n", prog,
			       r->to_ctrl ? "write" : "read", lba,
			       nh_status_str(r->status, buf, sizeof(buf)));
		return;
	}
	s->ios++;
	hist_add(&s->lat, lat);
	if (r->to_ctrl || !ver || ver == VER_UNKNOWN)
		return;
	for (i = 0; i < l->unit_blocks; i++) {
		const uint8_t *p = r->data + (size_t)i * c->lba_size;

		off = pattern_diff(p, l->expect, c->lba_size, lba + i,
				   load_seed(l, ver));
		if (off >= 0) {
			l->mismatches++;
			if (l->reports++ < MAX_REPORTS)
				report_mismatch(p, l->expect, lba + i, off);
		}
	}
	l->verified++;
}

/* A unit with nothing in flight, or false after a few tries. */
static bool load_pick(struct load *l, uint64_t *unit)
{
	int tries;

	for (tries = 0; tries < 16; tries++) {
		*unit = xorshift(&l->rng) % l->units;
		if (!l->busy[*unit])
			return true;
	}
	return false;
}

static void load_fill(struct load *l)
{
	struct cli *cli = l->cli;
	struct nh_ctrl *c = &cli->ctrl;
	unsigned int i;
	uint64_t unit, lba;
	struct nh_req *r;
	bool write;
	uint32_t k;

	for (i = 0; i < c->nio && !c->failed; i++) {
		while (l->q_inflight[i] < cli->qd && load_pick(l, &unit)) {
			r = nh_get(&c->io[i]);
			if (!r)
				break;
			write = cli->rw == RW_WRITE ||
				(cli->rw == RW_MIXED &&
				 xorshift(&l->rng) % 100 >= cli->read_pct);
			lba = l->start + unit * l->unit_blocks;
			nh_prep_rw(r, write, lba, l->unit_blocks);
			if (write) {
				/* A new version: reads after it expect it. */
				if (l->ver[unit] >= VER_UNKNOWN - 1)
					l->ver[unit] = 0;
				l->ver[unit]++;
				for (k = 0; k < l->unit_blocks; k++)
					pattern_fill(
						r->data +
							(size_t)k * c->lba_size,
						c->lba_size, lba + k,
						load_seed(l, l->ver[unit]));
			}
			r->done = load_done;
			r->arg = l;
			r->u64 = unit;
			l->busy[unit] = 1;
			l->q_inflight[i]++;
			l->inflight++;
			nh_submit(r);
		}
	}
}

static void print_op(const char *name, const struct op_stats *s, double secs,
		     size_t bs)
{
	double iops = secs > 0 ? (double)s->ios / secs : 0;

	printf("  %-5s: %.0f IOPS, %.2f MiB/s (%" PRIu64 " ios, %" PRIu64
	       " errors)\n",
	       name, iops, iops * (double)bs / 1048576.0, s->ios, s->errors);
	if (!s->lat.count)
		return;
	printf("    lat (usec): min %.1f, avg %.1f, p50 %.1f, p99 %.1f, p99.9 %.1f, max %.1f\n",
	       (double)s->lat.min / 1000,
	       (double)s->lat.sum / (double)s->lat.count / 1000,
	       (double)hist_pct(&s->lat, 50) / 1000,
	       (double)hist_pct(&s->lat, 99) / 1000,
	       (double)hist_pct(&s->lat, 99.9) / 1000,
	       (double)s->lat.max / 1000);
}

static void json_op(struct json *j, const char *name, const struct op_stats *st,
		    double secs, size_t bs)
{
	double iops = secs > 0 ? (double)st->ios / secs : 0;
	static const double pcts[] = { 50, 90, 99, 99.9 };
	static const char *const keys[] = { "p50_usec", "p90_usec", "p99_usec",
					    "p99_9_usec" };
	unsigned int i;

	json_begin_object(j, name);
	json_uint(j, "ios", st->ios);
	json_uint(j, "errors", st->errors);
	json_double(j, "iops", iops, 1);
	json_double(j, "mib_per_sec", iops * (double)bs / 1048576.0, 3);
	if (st->lat.count) {
		json_double(j, "min_usec", (double)st->lat.min / 1000, 1);
		json_double(j, "mean_usec",
			    (double)st->lat.sum / (double)st->lat.count / 1000,
			    1);
		for (i = 0; i < 4; i++)
			json_double(j, keys[i],
				    (double)hist_pct(&st->lat, pcts[i]) / 1000,
				    1);
		json_double(j, "max_usec", (double)st->lat.max / 1000, 1);
	}
	json_end_object(j);
}

static int cmd_load(struct cli *cli)
{
	struct nh_ctrl *c = &cli->ctrl;
	struct load *l = calloc(1, sizeof(*l));
	uint64_t t0, t_end, span;
	double secs;
	static const char *const rw_names[] = { "randread", "randwrite",
						"randrw" };
	int rc = 0;

	if (!l)
		return TOOL_EXIT_FAIL;
	if (!cli->bs || cli->bs % c->lba_size || cli->bs > c->max_io) {
		fprintf(stderr,
			"%s: --bs %zu: a multiple of %u bytes up to %zu\n",
			prog, cli->bs, c->lba_size, c->max_io);
		free(l);
		return TOOL_EXIT_USAGE;
	}
	l->cli = cli;
	l->unit_blocks = (uint32_t)(cli->bs / c->lba_size);
	if (!cli->have_range) {
		cli->lba = 0;
		span = MIN((uint64_t)c->ns.nsze,
			   LOAD_DEFAULT_SPAN / c->lba_size);
		cli->count = span;
	}
	if (cli->lba >= c->ns.nsze || !cli->count ||
	    cli->count > c->ns.nsze - cli->lba) {
		fprintf(stderr, "%s: --range outside the namespace\n", prog);
		free(l);
		return TOOL_EXIT_USAGE;
	}
	l->start = cli->lba;
	l->units = MIN(cli->count / l->unit_blocks, (uint64_t)LOAD_MAX_UNITS);
	if (!l->units) {
		fprintf(stderr, "%s: --range holds no --bs unit\n", prog);
		free(l);
		return TOOL_EXIT_USAGE;
	}
	if (cli->qd > c->o.qsize)
		cli->qd = c->o.qsize;
	l->seed = cli->seed;
	l->rng = mix64(cli->seed) | 1;
	l->ver = calloc(l->units, sizeof(*l->ver));
	l->busy = calloc(l->units, 1);
	l->q_inflight = calloc(c->nio, sizeof(*l->q_inflight));
	l->expect = malloc(c->lba_size);
	if (!l->ver || !l->busy || !l->q_inflight || !l->expect) {
		fprintf(stderr, "%s: out of memory\n", prog);
		exit(TOOL_EXIT_FAIL);
	}
	printf("%s: load %s bs %zu, %u queues x qd %u, %.1f s over lba %" PRIu64
	       " +%" PRIu64 "\n",
	       prog, rw_names[cli->rw], cli->bs, c->nio, cli->qd, cli->seconds,
	       l->start, l->units * l->unit_blocks);
	fflush(stdout);
	t0 = tool_now_ns();
	t_end = t0 + (uint64_t)(cli->seconds * 1e9);
	/* SIGINT or SIGTERM ends the load early, with its summary. */
	while (!c->failed && !tool_stop && tool_now_ns() < t_end) {
		load_fill(l);
		nh_poll(c, 100);
	}
	secs = (double)(tool_now_ns() - t0) / 1e9;
	/* Every command still in flight ends: a response, or the drain of
	 * a failed controller. */
	while (l->inflight)
		nh_poll(c, 1000);
	printf("%s: load %s bs %zu, %u queues x qd %u, %.2f s\n", prog,
	       rw_names[cli->rw], cli->bs, c->nio, cli->qd, secs);
	if (cli->rw != RW_WRITE)
		print_op("read", &l->rd, secs, cli->bs);
	if (cli->rw != RW_READ)
		print_op("write", &l->wr, secs, cli->bs);
	if (cli->json) {
		struct json j;

		json_init(&j, cli->json, true);
		json_begin_object(&j, NULL);
		json_string(&j, "tool", "ndknvme");
		json_string(&j, "command", "load");
		json_string(&j, "rw", rw_names[cli->rw]);
		json_uint(&j, "bs", cli->bs);
		json_uint(&j, "queues", c->nio);
		json_uint(&j, "qd", cli->qd);
		json_double(&j, "seconds", secs, 3);
		if (cli->rw != RW_WRITE)
			json_op(&j, "read", &l->rd, secs, cli->bs);
		if (cli->rw != RW_READ)
			json_op(&j, "write", &l->wr, secs, cli->bs);
		json_uint(&j, "reads_verified", l->verified);
		json_uint(&j, "mismatches", l->mismatches);
		json_end_object(&j);
		json_finish(&j);
	}
	if (l->mismatches || l->rd.errors || l->wr.errors) {
		printf("%s: load FAILED: %" PRIu64 " ios, %" PRIu64
		       " reads verified, %" PRIu64
		       " blocks mismatched, %" PRIu64 " commands failed\n",
		       prog, l->rd.ios + l->wr.ios, l->verified, l->mismatches,
		       l->rd.errors + l->wr.errors);
		rc = l->mismatches ? TOOL_EXIT_VERIFY : TOOL_EXIT_FAIL;
	} else {
		printf("%s: load ok %" PRIu64 " ios, %" PRIu64
		       " reads verified, 0 mismatches\n",
		       prog, l->rd.ios + l->wr.ios, l->verified);
	}
	free(l->ver);
	free(l->busy);
	free(l->q_inflight);
	free(l->expect);
	free(l);
	return rc;
}

/* ------------------------------------------------------------------ */
/* badcmd                                                             */

/*
 * Commands a controller must answer with an error status: an opcode no
 * command set defines (I/O and admin), a read past the namespace's end,
 * a read from a namespace that does not exist. Then a good read, to show
 * the queue still works.
 */
static int cmd_badcmd(struct cli *cli)
{
	struct nh_ctrl *c = &cli->ctrl;
	struct nh_queue *ioq = &c->io[0];
	uint8_t *buf = calloc(1, c->lba_size);
	struct nvme_sqe cmd;
	struct nvme_cqe cqe;
	unsigned int refused = 0, total = 0;
	char sbuf[96];
	int st, k;

	if (!buf)
		return TOOL_EXIT_FAIL;
	for (k = 0; k < 4; k++) {
		const char *name;
		struct nh_queue *q = ioq;
		size_t len = 0;

		switch (k) {
		case 0:
			name = "io-opcode-0x7c";
			memset(&cmd, 0, sizeof(cmd));
			cmd.opcode = 0x7c;
			cmd.nsid = c->nsid;
			break;
		case 1:
			name = "admin-opcode-0xf0";
			memset(&cmd, 0, sizeof(cmd));
			cmd.opcode = 0xf0;
			q = &c->admin;
			break;
		case 2:
			name = "read-past-end";
			nvme_rw_cmd(&cmd, false, c->nsid, c->ns.nsze, 1);
			len = c->lba_size;
			break;
		default:
			name = "read-bad-nsid";
			nvme_rw_cmd(&cmd, false, 0xfffffff0u, 0, 1);
			len = c->lba_size;
			break;
		}
		st = nh_exec(q, &cmd, buf, len, false, &cqe);
		total++;
		printf("%s: badcmd %s status %s\n", prog, name,
		       nh_status_str(st, sbuf, sizeof(sbuf)));
		if (st > 0)
			refused++;
		if (c->failed)
			break;
	}
	/* The queue must still carry good commands. */
	nvme_rw_cmd(&cmd, false, c->nsid, 0, 1);
	st = c->failed ? NH_ERR_ABORTED
		       : nh_exec(ioq, &cmd, buf, c->lba_size, false, &cqe);
	free(buf);
	if (st) {
		printf("%s: badcmd FAILED: a good read after them: %s\n", prog,
		       nh_status_str(st, sbuf, sizeof(sbuf)));
		return 1;
	}
	if (refused != total) {
		printf("%s: badcmd FAILED: %u of %u bad commands got an error status\n",
		       prog, refused, total);
		return 1;
	}
	printf("%s: badcmd ok: %u of %u bad commands got an error status, a good read after them succeeded\n",
	       prog, refused, total);
	return 0;
}

/* ------------------------------------------------------------------ */
/* id                                                                 */

static int cmd_id(struct cli *cli)
{
	struct nh_ctrl *c = &cli->ctrl;
	const struct nvme_id_ctrl_info *id = &c->id;
	uint64_t bytes = c->ns.nsze * c->lba_size;
	char a[80], mdts[32];

	printf("%s: controller %u at %s: model \"%s\", serial \"%s\", firmware \"%s\", NVMe %u.%u.%u\n",
	       prog, c->cntlid,
	       tool_addr_str((const struct sockaddr *)&c->o.dst, a, sizeof(a)),
	       id->mn, id->sn, id->fr, id->ver >> 16, (id->ver >> 8) & 0xff,
	       id->ver & 0xff);
	printf("%s: subsystem %s, %u namespaces (NN), CAP 0x%016" PRIx64
	       " (MQES %u, TO %u ms)\n",
	       prog, id->subnqn, id->nn, c->cap,
	       (unsigned int)(c->cap & 0xffff) + 1,
	       (unsigned int)((c->cap >> 24) & 0xff) * 500);
	if (id->mdts)
		snprintf(mdts, sizeof(mdts), "%zu bytes",
			 (size_t)4096 << ((c->cap >> 48) & 0xf) << id->mdts);
	else
		snprintf(mdts, sizeof(mdts), "no limit");
	printf("%s: MDTS %u (%s), IOCCSZ %u (%u bytes in-capsule), IORCSZ %u, SGLS 0x%x, MSDBD %u, KAS %u, MAXCMD %u\n",
	       prog, id->mdts, mdts, id->ioccsz,
	       id->ioccsz * 16 > 64 ? id->ioccsz * 16 - 64 : 0, id->iorcsz,
	       id->sgls, id->msdbd, id->kas, id->maxcmd);
	printf("%s: namespace %u: %" PRIu64 " blocks of %u bytes (%" PRIu64
	       " MiB), capacity %" PRIu64 ", used %" PRIu64
	       ", LBA format %u of %u\n",
	       prog, c->nsid, (uint64_t)c->ns.nsze, c->lba_size, bytes >> 20,
	       (uint64_t)c->ns.ncap, (uint64_t)c->ns.nuse, c->ns.flbas & 0xf,
	       c->ns.nlbaf + 1);
	printf("%s: %u I/O queues of %u entries (the controller allows %u), commands up to %zu bytes, %s, in-capsule writes up to %zu bytes, keep alive %u ms\n",
	       prog, c->nio, c->o.qsize, c->nio_allowed, c->max_io,
	       c->mem == NH_MEM_FAST_REGISTER
		       ? "fast-register MR per command with remote invalidation"
		       : "one MR per queue",
	       c->in_capsule_max, c->o.kato_ms);
	printf("%s: id ok\n", prog);
	return 0;
}

/* ------------------------------------------------------------------ */

enum {
	OPT_NQN = TOOL_OPT_FIRST,
	OPT_HOSTNQN,
	OPT_HOSTID,
	OPT_IRD,
	OPT_MEM,
	OPT_NO_INCAPSULE,
	OPT_MAX_IO,
	OPT_ADMIN_QSIZE,
	OPT_TIMEOUT,
	OPT_PATTERN,
	OPT_DUMP,
	OPT_RW,
	OPT_MIX,
	OPT_BS,
	OPT_QD,
	OPT_RANGE,
};

static const struct option global_opts[] = {
	{ "nqn", required_argument, NULL, OPT_NQN },
	{ "port", required_argument, NULL, 'p' },
	{ "bind", required_argument, NULL, 'b' },
	{ "interface", required_argument, NULL, 'I' },
	{ "queues", required_argument, NULL, 'q' },
	{ "qsize", required_argument, NULL, 'd' },
	{ "keep-alive", required_argument, NULL, 'k' },
	{ "nsid", required_argument, NULL, 'N' },
	{ "timeout", required_argument, NULL, OPT_TIMEOUT },
	{ "verbose", no_argument, NULL, 'v' },
	{ "json", no_argument, NULL, 'j' },
	{ "hostnqn", required_argument, NULL, OPT_HOSTNQN },
	{ "hostid", required_argument, NULL, OPT_HOSTID },
	{ "ird", required_argument, NULL, OPT_IRD },
	{ "mem", required_argument, NULL, OPT_MEM },
	{ "no-incapsule", no_argument, NULL, OPT_NO_INCAPSULE },
	{ "max-io", required_argument, NULL, OPT_MAX_IO },
	{ "admin-qsize", required_argument, NULL, OPT_ADMIN_QSIZE },
	TOOL_LONG_COMMON,
	{ NULL, 0, NULL, 0 },
};

static const struct option cmd_opts[] = {
	{ "pattern", required_argument, NULL, OPT_PATTERN },
	{ "dump", no_argument, NULL, OPT_DUMP },
	{ "rw", required_argument, NULL, OPT_RW },
	{ "mix", required_argument, NULL, OPT_MIX },
	{ "bs", required_argument, NULL, OPT_BS },
	{ "qd", required_argument, NULL, OPT_QD },
	{ "duration", required_argument, NULL, 'D' },
	{ "range", required_argument, NULL, OPT_RANGE },
	{ NULL, 0, NULL, 0 },
};

/* Options may come before and after HOST; the first operand after HOST
 * is the command. */
static void parse_global(struct cli *cli, int argc, char **argv)
{
	struct nh_opts *o = &cli->ctrl.o;
	const char *addr = NULL, *src = NULL;
	uint16_t port = NVME_RDMA_PORT;
	bool have_hostid = false, json = false;
	char u[40], ifname[IF_NAMESIZE];
	uint64_t v;
	int op;

	for (;;) {
		op = getopt_long(argc, argv, "+p:b:I:q:d:k:N:vjh", global_opts,
				 NULL);
		if (op == -1) {
			if (addr || optind >= argc)
				break;
			addr = argv[optind++];
			continue;
		}
		switch (op) {
		case OPT_NQN:
			o->subnqn = optarg;
			if (strlen(optarg) >= NVME_NQN_SIZE)
				bad_arg("subsystem NQN (too long)", optarg);
			break;
		case 'p':
			port = tool_arg_port(optarg);
			break;
		case 'b':
			src = optarg;
			break;
		case 'I':
			o->ifindex = tool_arg_interface(optarg, ifname);
			break;
		case 'q':
			o->nioq = (unsigned int)tool_arg_count("-q", optarg, 1,
							       64);
			break;
		case 'd':
			o->qsize = (unsigned int)tool_arg_count(
				"-d", optarg, 2, NH_MAX_QUEUE_SIZE);
			cli->qsize_given = true;
			break;
		case 'k':
			o->kato_ms =
				(unsigned int)(tool_arg_seconds("-k", optarg, 0,
								3600) *
					       1000);
			break;
		case 'N':
			o->nsid = (uint32_t)tool_arg_count("-N", optarg, 1,
							   0xfffffffeu);
			break;
		case OPT_TIMEOUT:
			o->cmd_timeout_ms =
				(unsigned int)(tool_arg_seconds("--timeout",
								optarg, 0.1,
								3600) *
					       1000);
			break;
		case 'v':
			o->verbose++;
			break;
		case 'j':
			json = true;
			break;
		case OPT_HOSTNQN:
			if (strlen(optarg) >= NVME_NQN_SIZE)
				bad_arg("host NQN (too long)", optarg);
			snprintf(o->hostnqn, sizeof(o->hostnqn), "%s", optarg);
			break;
		case OPT_HOSTID:
			if (!parse_uuid(optarg, o->hostid))
				bad_arg("host id (a UUID)", optarg);
			have_hostid = true;
			break;
		case OPT_IRD:
			v = parse_u64("IRD", optarg);
			if (!v || v > 128)
				bad_arg("IRD (1 to 128)", optarg);
			o->ird = (unsigned int)v;
			break;
		case OPT_MEM:
			if (!strcmp(optarg, "fr"))
				o->mem = NH_MEM_FAST_REGISTER;
			else if (!strcmp(optarg, "global"))
				o->mem = NH_MEM_GLOBAL;
			else
				bad_arg("--mem (fr or global)", optarg);
			break;
		case OPT_NO_INCAPSULE:
			o->in_capsule = false;
			break;
		case OPT_MAX_IO:
			v = parse_size("--max-io", optarg);
			if (v < 4096 || v > (16u << 20))
				bad_arg("--max-io (4k to 16m)", optarg);
			o->max_io = (size_t)v;
			break;
		case OPT_ADMIN_QSIZE:
			v = parse_u64("admin queue size", optarg);
			if (v < 2 || v > NH_MAX_QUEUE_SIZE)
				bad_arg("admin queue size", optarg);
			o->admin_qsize = (unsigned int)v;
			break;
		case 'h':
			usage(stdout);
			exit(TOOL_EXIT_OK);
		case TOOL_OPT_VERSION:
			tool_print_version();
			exit(TOOL_EXIT_OK);
		default:
			tool_usage_hint();
		}
	}
	if (!o->subnqn)
		tool_usage_error("--nqn SUBNQN is missing");
	if (!addr)
		tool_usage_error("HOST is missing");
	if (optind >= argc)
		tool_usage_error("the command is missing");
	tool_arg_addr("HOST", addr, port, &o->dst);
	if (src)
		tool_arg_addr("-b", src, 0, &o->src);
	if (tool_client_local((const struct sockaddr *)&o->dst,
			      src ? &o->src : NULL, o->ifindex, &o->src,
			      &o->ifindex))
		exit(TOOL_EXIT_CONNECT);
	if (!have_hostid) {
		random_bytes(o->hostid, sizeof(o->hostid));
		o->hostid[6] = (uint8_t)((o->hostid[6] & 0x0f) | 0x40);
		o->hostid[8] = (uint8_t)((o->hostid[8] & 0x3f) | 0x80);
	}
	if (!o->hostnqn[0]) {
		uuid_str(o->hostid, u);
		snprintf(o->hostnqn, sizeof(o->hostnqn),
			 "nqn.2014-08.org.nvmexpress:uuid:%s", u);
	}
	if (json) {
		/* stdout keeps the JSON; every line of text goes to stderr. */
		int fd = dup(STDOUT_FILENO);

		cli->json = fd < 0 ? NULL : fdopen(fd, "w");
		if (!cli->json || dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
			fprintf(stderr, "%s: -j: %s\n", prog, strerror(errno));
			exit(TOOL_EXIT_FAIL);
		}
	}
	cli->cmd = argv[optind++];
}

static void parse_cmd(struct cli *cli, int argc, char **argv)
{
	bool range = !strcmp(cli->cmd, "write") || !strcmp(cli->cmd, "read") ||
		     !strcmp(cli->cmd, "verify");
	bool load = !strcmp(cli->cmd, "load");
	const char *pos[2];
	int npos = 0, op;

	if (!range && !load && strcmp(cli->cmd, "id") &&
	    strcmp(cli->cmd, "badcmd"))
		tool_usage_error("unknown command %s", cli->cmd);
	/* Positional LBA COUNT may come before or after the options. */
	for (;;) {
		while (optind < argc && argv[optind][0] != '-') {
			if (npos == 2)
				bad_arg("argument", argv[optind]);
			pos[npos++] = argv[optind++];
		}
		op = getopt_long(argc, argv, "+D:", cmd_opts, NULL);
		if (op == -1)
			break;
		switch (op) {
		case OPT_PATTERN:
			cli->seed = parse_u64("--pattern", optarg);
			break;
		case OPT_DUMP:
			cli->dump = true;
			break;
		case OPT_RW:
			if (!strcmp(optarg, "randread"))
				cli->rw = RW_READ;
			else if (!strcmp(optarg, "randwrite"))
				cli->rw = RW_WRITE;
			else if (!strcmp(optarg, "randrw"))
				cli->rw = RW_MIXED;
			else
				bad_arg("--rw", optarg);
			break;
		case OPT_MIX:
			cli->read_pct =
				(unsigned int)parse_u64("--mix", optarg);
			if (cli->read_pct > 100)
				bad_arg("--mix (0 to 100)", optarg);
			break;
		case OPT_BS:
			cli->bs = (size_t)parse_size("--bs", optarg);
			break;
		case OPT_QD:
			cli->qd = (unsigned int)parse_u64("--qd", optarg);
			if (!cli->qd || cli->qd > NH_MAX_QUEUE_SIZE)
				bad_arg("--qd", optarg);
			break;
		case 'D':
			cli->seconds =
				tool_arg_seconds("-D", optarg, 0.001, 86400);
			break;
		case OPT_RANGE:
			/* --range LBA COUNT: two arguments. */
			if (optind >= argc)
				bad_arg("--range", "needs LBA COUNT");
			cli->lba = parse_u64("--range LBA", optarg);
			cli->count = parse_u64("--range COUNT", argv[optind++]);
			cli->have_range = true;
			break;
		default:
			tool_usage_hint();
		}
	}
	if (optind < argc)
		bad_arg("argument", argv[optind]);
	if (range) {
		if (npos != 2)
			bad_arg(cli->cmd, "needs LBA COUNT");
		cli->lba = parse_u64("LBA", pos[0]);
		cli->count = parse_u64("COUNT", pos[1]);
	} else if (npos) {
		bad_arg("argument", pos[0]);
	}
	if (!range && cli->seed == 0)
		random_bytes(&cli->seed, sizeof(cli->seed));
}

/* -j for the commands without numbers of their own, and for a setup
 * that failed. */
static void json_outcome(struct cli *cli, int rc, const char *why)
{
	struct json j;

	json_init(&j, cli->json, true);
	json_begin_object(&j, NULL);
	json_string(&j, "tool", "ndknvme");
	json_string(&j, "command", cli->cmd);
	json_bool(&j, "ok", rc == TOOL_EXIT_OK);
	if (why)
		json_string(&j, "error", why);
	json_end_object(&j);
	json_finish(&j);
}

int main(int argc, char **argv)
{
	static struct cli cli;
	struct nh_ctrl *c = &cli.ctrl;
	struct nh_opts *o = &c->o;
	int rc;

	tool_prog = prog;
	tool_catch_signals();
	setvbuf(stdout, NULL, _IOLBF, 0);
	o->nioq = 1;
	o->qsize = DEFAULT_QSIZE;
	o->admin_qsize = NH_ADMIN_QUEUE_SIZE;
	o->kato_ms = DEFAULT_KATO_MS;
	o->ird = 16;
	o->cmd_timeout_ms = 30000;
	o->cm_timeout_ms = 30000;
	o->max_io = DEFAULT_MAX_IO;
	o->mem = NH_MEM_FAST_REGISTER;
	o->in_capsule = true;
	cli.seed = 0;
	cli.rw = RW_MIXED;
	cli.read_pct = 50;
	cli.bs = 4096;
	cli.qd = 8;
	cli.seconds = 5;
	parse_global(&cli, argc, argv);
	parse_cmd(&cli, argc, argv);
	if (!strcmp(cli.cmd, "load") && !cli.qsize_given && cli.qd > o->qsize)
		o->qsize = cli.qd;

	rc = nh_connect(c);
	if (rc) {
		printf("%s: setup failed%s%s\n", prog, c->failed ? ": " : "",
		       c->failed ? c->why : "");
		if (cli.json)
			json_outcome(&cli, TOOL_EXIT_CONNECT,
				     c->failed ? c->why : "setup failed");
		/* Whatever exists goes, without the graceful steps. */
		nh_fail(c, "setup failed");
		nh_disconnect(c);
		return TOOL_EXIT_CONNECT;
	}
	if (o->verbose)
		printf("%s: connected: cntlid %u, %u I/O queues, nsid %u\n",
		       prog, c->cntlid, c->nio, c->nsid);
	if (!strcmp(cli.cmd, "id"))
		rc = cmd_id(&cli);
	else if (!strcmp(cli.cmd, "write"))
		rc = cmd_range(&cli, RANGE_WRITE);
	else if (!strcmp(cli.cmd, "read"))
		rc = cmd_range(&cli, RANGE_READ);
	else if (!strcmp(cli.cmd, "verify"))
		rc = cmd_range(&cli, RANGE_VERIFY);
	else if (!strcmp(cli.cmd, "load"))
		rc = cmd_load(&cli);
	else
		rc = cmd_badcmd(&cli);
	if (cli.json && (!strcmp(cli.cmd, "id") || !strcmp(cli.cmd, "badcmd")))
		json_outcome(&cli, rc, NULL);
	if (c->failed) {
		/* Every command outstanding at the failure ends: a response
		 * that was on its way, or an error once the queues are
		 * flushed. */
		if (!nh_drain(c))
			printf("%s: %u commands never ended\n", prog,
			       nh_busy(c));
		printf("%s: lost: %u commands outstanding, %lu ended with an error, %lu completed (%s)\n",
		       prog, c->outstanding_at_failure, c->after_fail_errors,
		       c->after_fail_ok, c->why);
		if (rc == TOOL_EXIT_OK)
			rc = TOOL_EXIT_FAIL;
	}
	if (o->verbose)
		printf("%s: %lu Keep Alive sent, %lu failed\n", prog,
		       c->ka_sent, c->ka_errors);
	nh_disconnect(c);
	if (cli.json)
		fclose(cli.json);
	return rc;
}
