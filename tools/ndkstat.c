/* SPDX-License-Identifier: MIT */
/*
 * ndkstat: the NDK connections, listeners and shared endpoints of every
 * process on this machine, and the NDK counters of each interface, like
 * Windows `netstat -x`. Public API only: NdkQueryOid with
 * OID_NDK_CONNECTIONS, OID_NDK_LOCAL_ENDPOINTS and OID_NDK_STATISTICS, the
 * interface list and /proc/PID/comm.
 *
 *   ndkstat [-j] [--stats] [-I IFNAME|IFINDEX] [--type TYPE] [-P PID]
 *           [-i SECONDS [-n COUNT]]
 *
 * Options and exit status: docs/tools.md.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include "toolutil.h"

#define ADDR_LEN 96
#define PROC_LEN 64

enum kind { KIND_CONNECTION, KIND_LISTENER, KIND_SHARED, KIND_COUNT };

static const char *const kind_text[KIND_COUNT] = { "Connection", "Listener",
						   "SharedEndpoint" };
static const char *const kind_json[KIND_COUNT] = { "connections", "listeners",
						   "shared_endpoints" };

/* One object, from its ND entry (and, if it differs, its TCP entry). */
struct row {
	NET_IFINDEX ifindex;
	char ifname[IF_NAMESIZE];
	enum kind kind;
	bool user;
	ULONG pid;
	char local[ADDR_LEN];
	char foreign[ADDR_LEN]; /* "" for endpoints */
	char tcp_local[ADDR_LEN]; /* "" when equal to local */
	char tcp_foreign[ADDR_LEN]; /* "" when equal to foreign */
	char process[PROC_LEN];
	size_t seq;
};

struct table {
	struct row *v;
	size_t n, cap;
};

struct ifstats {
	NET_IFINDEX ifindex;
	char ifname[IF_NAMESIZE];
	NDIS_NDK_PERFORMANCE_COUNTERS c;
};

struct options {
	bool json, stats;
	NET_IFINDEX ifindex; /* 0: every interface */
	char ifname[IF_NAMESIZE];
	int type; /* a kind, or -1 for all */
	bool pid_set;
	ULONG pid;
	double interval; /* 0: once */
	unsigned long count; /* 0: until interrupted */
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ndkstat [-j] [--stats] [-I IFNAME|IFINDEX] [--type TYPE]\n"
		"               [-P PID] [-i SECONDS [-n COUNT]]\n"
		"NDK connections, listeners and shared endpoints of every process\n"
		"(like netstat -x), from NdkQueryOid.\n"
		"  -j, --json            JSON\n"
		"      --stats           counters per interface (OID_NDK_STATISTICS)\n"
		"  -I, --interface IF    only this interface (name or index)\n"
		"      --type TYPE       only connection, listener or shared\n"
		"  -P, --pid PID         only objects of this process\n"
		"  -i, --interval SECS   repeat every SECS until interrupted\n"
		"  -n, --iterations N    stop after N repetitions (-i 1 if no -i)\n"
		"  -h, --help            this help\n"
		"      --version         the version\n"
		"Exit status: 0 success, 1 a query failed or no such interface,\n"
		"2 usage (docs/tools.md).\n");
}

static const char *oid_name(NDIS_OID oid)
{
	switch (oid) {
	case OID_NDK_CONNECTIONS:
		return "OID_NDK_CONNECTIONS";
	case OID_NDK_LOCAL_ENDPOINTS:
		return "OID_NDK_LOCAL_ENDPOINTS";
	default:
		return "OID_NDK_STATISTICS";
	}
}

/*
 * NdkQueryOid into a buffer that grows until the answer fits: the lists
 * can grow between the size query and the next call.
 */
static NDIS_STATUS query(NET_IFINDEX ifindex, NDIS_OID oid, void **out,
			 ULONG *len)
{
	ULONG cap = 0, written = 0, needed = 0;
	void *buf = NULL, *grown;
	NDIS_STATUS st = NDIS_STATUS_BUFFER_TOO_SHORT;
	uint64_t want;
	int tries;

	for (tries = 0; tries < 32; tries++) {
		st = NdkQueryOid(ifindex, oid, buf, cap, &written, &needed);
		if (st != NDIS_STATUS_BUFFER_TOO_SHORT)
			break;
		want = needed > cap ? needed : (uint64_t)cap * 2;
		/* Room for a few more entries than asked for. */
		want += want / 4 + 256;
		if (want > 0xffffffffu)
			want = 0xffffffffu;
		grown = realloc(buf, want);
		if (!grown) {
			st = NDIS_STATUS_RESOURCES;
			break;
		}
		buf = grown;
		cap = (ULONG)want;
	}
	if (st != NDIS_STATUS_SUCCESS) {
		free(buf);
		return st;
	}
	*out = buf;
	*len = written < cap ? written : cap;
	return st;
}

static bool addr_equal(const SOCKADDR_INET *a, const SOCKADDR_INET *b)
{
	if (a->si_family != b->si_family)
		return false;
	switch (a->si_family) {
	case AF_INET:
		return a->Ipv4.sin_port == b->Ipv4.sin_port &&
		       a->Ipv4.sin_addr.s_addr == b->Ipv4.sin_addr.s_addr;
	case AF_INET6:
		return a->Ipv6.sin6_port == b->Ipv6.sin6_port &&
		       a->Ipv6.sin6_scope_id == b->Ipv6.sin6_scope_id &&
		       !memcmp(&a->Ipv6.sin6_addr, &b->Ipv6.sin6_addr,
			       sizeof(a->Ipv6.sin6_addr));
	default:
		return !memcmp(a, b, sizeof(*a));
	}
}

/* "192.0.2.1:445", "[2001:db8::1]:445", "[fe80::1%eth0]:445". */
static void addr_str(const SOCKADDR_INET *a, char *out, size_t len)
{
	char ip[INET6_ADDRSTRLEN] = "?";
	char scope[IF_NAMESIZE + 12] = "";
	char name[IF_NAMESIZE];

	switch (a->si_family) {
	case AF_INET:
		inet_ntop(AF_INET, &a->Ipv4.sin_addr, ip, sizeof(ip));
		snprintf(out, len, "%s:%u", ip, ntohs(a->Ipv4.sin_port));
		break;
	case AF_INET6:
		inet_ntop(AF_INET6, &a->Ipv6.sin6_addr, ip, sizeof(ip));
		if (a->Ipv6.sin6_scope_id) {
			if (if_indextoname(a->Ipv6.sin6_scope_id, name))
				snprintf(scope, sizeof(scope), "%%%s", name);
			else
				snprintf(scope, sizeof(scope), "%%%u",
					 a->Ipv6.sin6_scope_id);
		}
		snprintf(out, len, "[%s%s]:%u", ip, scope,
			 ntohs(a->Ipv6.sin6_port));
		break;
	default:
		snprintf(out, len, "(family %u)", a->si_family);
		break;
	}
}

/* The command name of a process, or "-" if it is gone or hidden. */
static void process_name(ULONG pid, char *out, size_t len)
{
	char path[32], comm[PROC_LEN];
	size_t n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/comm", pid);
	f = pid ? fopen(path, "re") : NULL;
	if (f) {
		n = fread(comm, 1, sizeof(comm) - 1, f);
		fclose(f);
	}
	if (n && comm[n - 1] == '\n')
		n--;
	comm[n] = '\0';
	snprintf(out, len, "%s", n ? comm : "-");
}

static struct row *table_add(struct table *t)
{
	struct row *grown;

	if (t->n == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 32;

		grown = realloc(t->v, cap * sizeof(*grown));
		if (!grown)
			return NULL;
		t->v = grown;
		t->cap = cap;
	}
	memset(&t->v[t->n], 0, sizeof(t->v[0]));
	t->v[t->n].seq = t->n;
	return &t->v[t->n++];
}

static bool wanted(const struct options *o, enum kind kind, ULONG pid)
{
	if (o->type >= 0 && (enum kind)o->type != kind)
		return false;
	return !o->pid_set || o->pid == pid;
}

static struct row *new_row(struct table *t, NET_IFINDEX ifindex,
			   const char *ifname, enum kind kind, BOOLEAN user,
			   ULONG pid)
{
	struct row *r = table_add(t);

	if (!r)
		return NULL;
	r->ifindex = ifindex;
	snprintf(r->ifname, sizeof(r->ifname), "%s", ifname);
	r->kind = kind;
	r->user = user != FALSE;
	r->pid = pid;
	process_name(pid, r->process, sizeof(r->process));
	return r;
}

/*
 * Number of entries in a list of `count`, each `size` bytes from `off`,
 * that really are within the `len` bytes written.
 */
static ULONG entries_in(ULONG count, size_t off, size_t size, ULONG len)
{
	size_t room = len > off ? (len - off) / size : 0;

	return count < room ? count : (ULONG)room;
}

/*
 * Connections of one interface. With ...MappedtoTCP... there are two
 * entries per connection: the ND one (every member filled), then the TCP
 * one, of which only the addresses are meaningful.
 */
static NDIS_STATUS add_connections(struct table *t, const struct options *o,
				   NET_IFINDEX ifindex, const char *ifname)
{
	NDIS_NDK_CONNECTIONS *cs;
	NDIS_STATUS st;
	ULONG len, n, i, step;
	void *buf;

	st = query(ifindex, OID_NDK_CONNECTIONS, &buf, &len);
	if (st)
		return st;
	cs = buf;
	n = len < offsetof(NDIS_NDK_CONNECTIONS, Connections)
		    ? 0
		    : entries_in(cs->Count,
				 offsetof(NDIS_NDK_CONNECTIONS, Connections),
				 sizeof(cs->Connections[0]), len);
	step = n && cs->NDConnectionsMappedtoTCPConnections ? 2 : 1;
	for (i = 0; i + step <= n; i += step) {
		const NDIS_NDK_CONNECTION_ENTRY *nd = &cs->Connections[i];
		const NDIS_NDK_CONNECTION_ENTRY *tcp =
			step == 2 ? nd + 1 : NULL;
		struct row *r;

		if (!wanted(o, KIND_CONNECTION, nd->OwnerPid))
			continue;
		r = new_row(t, ifindex, ifname, KIND_CONNECTION,
			    nd->UserModeOwner, nd->OwnerPid);
		if (!r) {
			st = NDIS_STATUS_RESOURCES;
			break;
		}
		addr_str(&nd->Local, r->local, sizeof(r->local));
		addr_str(&nd->Remote, r->foreign, sizeof(r->foreign));
		if (tcp && !addr_equal(&tcp->Local, &nd->Local))
			addr_str(&tcp->Local, r->tcp_local,
				 sizeof(r->tcp_local));
		if (tcp && !addr_equal(&tcp->Remote, &nd->Remote))
			addr_str(&tcp->Remote, r->tcp_foreign,
				 sizeof(r->tcp_foreign));
	}
	free(buf);
	return st;
}

/* Listeners and shared endpoints of one interface; pairs as above. */
static NDIS_STATUS add_endpoints(struct table *t, const struct options *o,
				 NET_IFINDEX ifindex, const char *ifname)
{
	NDIS_NDK_LOCAL_ENDPOINTS *le;
	NDIS_STATUS st;
	ULONG len, n, i, step;
	void *buf;

	st = query(ifindex, OID_NDK_LOCAL_ENDPOINTS, &buf, &len);
	if (st)
		return st;
	le = buf;
	n = len < offsetof(NDIS_NDK_LOCAL_ENDPOINTS, LocalEndpoints)
		    ? 0
		    : entries_in(le->Count,
				 offsetof(NDIS_NDK_LOCAL_ENDPOINTS,
					  LocalEndpoints),
				 sizeof(le->LocalEndpoints[0]), len);
	step = n && le->NDLocalEndpointsMappedtoTCPLocalEndpoints ? 2 : 1;
	for (i = 0; i + step <= n; i += step) {
		const NDIS_NDK_LOCAL_ENDPOINT_ENTRY *nd =
			&le->LocalEndpoints[i];
		const NDIS_NDK_LOCAL_ENDPOINT_ENTRY *tcp =
			step == 2 ? nd + 1 : NULL;
		enum kind kind = nd->Listener ? KIND_LISTENER : KIND_SHARED;
		struct row *r;

		if (!wanted(o, kind, nd->OwnerPid))
			continue;
		r = new_row(t, ifindex, ifname, kind, nd->UserModeOwner,
			    nd->OwnerPid);
		if (!r) {
			st = NDIS_STATUS_RESOURCES;
			break;
		}
		addr_str(&nd->Local, r->local, sizeof(r->local));
		if (tcp && !addr_equal(&tcp->Local, &nd->Local))
			addr_str(&tcp->Local, r->tcp_local,
				 sizeof(r->tcp_local));
	}
	free(buf);
	return st;
}

static NDIS_STATUS get_statistics(struct ifstats *s)
{
	NDIS_NDK_STATISTICS_INFO *si;
	NDIS_STATUS st;
	ULONG len;
	void *buf;

	st = query(s->ifindex, OID_NDK_STATISTICS, &buf, &len);
	if (st)
		return st;
	si = buf;
	memset(&s->c, 0, sizeof(s->c));
	if (len >= offsetof(NDIS_NDK_STATISTICS_INFO, CounterSet))
		memcpy(&s->c, &si->CounterSet,
		       MIN(sizeof(s->c),
			   len - offsetof(NDIS_NDK_STATISTICS_INFO,
					  CounterSet)));
	free(buf);
	return NDIS_STATUS_SUCCESS;
}

/* Per interface: connections first, then listeners, shared endpoints. */
static int row_cmp(const void *a, const void *b)
{
	const struct row *x = a, *y = b;

	if (x->ifindex != y->ifindex)
		return x->ifindex < y->ifindex ? -1 : 1;
	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* ---- output ---- */

#define NCOLS 7

static const char *const col_title[NCOLS] = {
	"Mode", "IfIndex", "Type", "Local Address", "Foreign Address",
	"PID",	"Process"
};

static void row_cells(const struct row *r, char cells[NCOLS][ADDR_LEN])
{
	snprintf(cells[0], ADDR_LEN, "%s", r->user ? "User" : "Kernel");
	snprintf(cells[1], ADDR_LEN, "%u", r->ifindex);
	snprintf(cells[2], ADDR_LEN, "%s", kind_text[r->kind]);
	snprintf(cells[3], ADDR_LEN, "%s", r->local);
	snprintf(cells[4], ADDR_LEN, "%s",
		 r->kind == KIND_CONNECTION ? r->foreign : "NA");
	snprintf(cells[5], ADDR_LEN, "%u", r->pid);
	text_printable(r->process, cells[6], ADDR_LEN);
}

static void print_text(const struct table *t)
{
	static const bool right[NCOLS] = { false, true, false, false,
					   false, true, false };
	char cells[NCOLS][ADDR_LEN];
	int width[NCOLS];
	size_t i;
	int c;

	for (c = 0; c < NCOLS; c++)
		width[c] = (int)strlen(col_title[c]);
	for (i = 0; i < t->n; i++) {
		row_cells(&t->v[i], cells);
		for (c = 0; c < NCOLS; c++)
			width[c] = MAX(width[c], (int)strlen(cells[c]));
	}
	printf("Active NetworkDirect Connections, Listeners, SharedEndpoints\n\n");
	for (c = 0; c < NCOLS - 1; c++)
		printf("  %*s", right[c] ? width[c] : -width[c], col_title[c]);
	printf("  %s\n", col_title[NCOLS - 1]);
	for (i = 0; i < t->n; i++) {
		const struct row *r = &t->v[i];

		row_cells(r, cells);
		for (c = 0; c < NCOLS - 1; c++)
			printf("  %*s", right[c] ? width[c] : -width[c],
			       cells[c]);
		printf("  %s", cells[NCOLS - 1]);
		if (r->tcp_local[0])
			printf("  tcp_local=%s", r->tcp_local);
		if (r->tcp_foreign[0])
			printf("  tcp_foreign=%s", r->tcp_foreign);
		printf("\n");
	}
}

static const struct {
	const char *name;
	size_t off;
} counters[] = {
#define COUNTER(x)                                             \
	{                                                      \
#x, offsetof(NDIS_NDK_PERFORMANCE_COUNTERS, x) \
	}
	COUNTER(Connect),	   COUNTER(Accept),
	COUNTER(ConnectFailure),   COUNTER(ConnectionError),
	COUNTER(ActiveConnection), COUNTER(CQError),
	COUNTER(RDMAInOctets),	   COUNTER(RDMAOutOctets),
	COUNTER(RDMAInFrames),	   COUNTER(RDMAOutFrames),
#undef COUNTER
};

#define NCOUNTERS (sizeof(counters) / sizeof(counters[0]))

static unsigned long long counter(const struct ifstats *s, size_t i)
{
	ULONG64 v;

	memcpy(&v, (const char *)&s->c + counters[i].off, sizeof(v));
	return v;
}

static void print_stats_text(const struct ifstats *s, size_t n)
{
	size_t i, k;

	for (i = 0; i < n; i++) {
		if (i)
			printf("\n");
		printf("%s (ifindex %u):\n", s[i].ifname, s[i].ifindex);
		for (k = 0; k < NCOUNTERS; k++)
			printf("    %-16s %20llu\n", counters[k].name,
			       counter(&s[i], k));
	}
}

static void print_json(const struct table *t, const struct ifstats *s,
		       size_t ns, bool compact)
{
	struct json j;
	size_t i;
	int k;

	json_init(&j, stdout, compact);
	json_begin_object(&j, NULL);
	for (k = 0; k < KIND_COUNT; k++) {
		json_begin_array(&j, kind_json[k]);
		for (i = 0; i < t->n; i++) {
			const struct row *r = &t->v[i];

			if ((int)r->kind != k)
				continue;
			json_begin_object(&j, NULL);
			json_uint(&j, "ifindex", r->ifindex);
			json_string(&j, "ifname", r->ifname);
			json_string(&j, "mode", r->user ? "User" : "Kernel");
			json_string(&j, "local", r->local);
			if (r->kind == KIND_CONNECTION)
				json_string(&j, "foreign", r->foreign);
			else
				json_null(&j, "foreign");
			json_uint(&j, "pid", r->pid);
			json_string(&j, "process", r->process);
			if (r->tcp_local[0])
				json_string(&j, "tcp_local", r->tcp_local);
			if (r->tcp_foreign[0])
				json_string(&j, "tcp_foreign", r->tcp_foreign);
			json_end_object(&j);
		}
		json_end_array(&j);
	}
	if (s) {
		json_begin_object(&j, "statistics");
		for (i = 0; i < ns; i++) {
			size_t c;

			json_begin_object(&j, s[i].ifname);
			json_uint(&j, "ifindex", s[i].ifindex);
			for (c = 0; c < NCOUNTERS; c++)
				json_uint(&j, counters[c].name,
					  counter(&s[i], c));
			json_end_object(&j);
		}
		json_end_object(&j);
	}
	json_end_object(&j);
	json_finish(&j);
}

/* ---- one snapshot ---- */

static int query_failed(const char *ifname, NDIS_OID oid, NDIS_STATUS st)
{
	fprintf(stderr, "ndkstat: %s on %s: %s\n", oid_name(oid), ifname,
		NdkStatusName(st));
	return -1;
}

/*
 * Gathers one interface. Returns 0, 1 if the interface vanished (it is
 * skipped), or -1 after printing why the query failed.
 */
static int gather(const struct options *o, NET_IFINDEX ifindex,
		  const char *ifname, struct table *t, struct ifstats *s)
{
	static const NDIS_OID oids[] = { OID_NDK_CONNECTIONS,
					 OID_NDK_LOCAL_ENDPOINTS,
					 OID_NDK_STATISTICS };
	size_t undo = t->n;
	NDIS_STATUS st = NDIS_STATUS_SUCCESS;
	unsigned int i;

	for (i = 0; i < 3 && !st; i++) {
		switch (oids[i]) {
		case OID_NDK_CONNECTIONS:
			st = add_connections(t, o, ifindex, ifname);
			break;
		case OID_NDK_LOCAL_ENDPOINTS:
			st = add_endpoints(t, o, ifindex, ifname);
			break;
		default:
			if (!s)
				continue;
			s->ifindex = ifindex;
			snprintf(s->ifname, sizeof(s->ifname), "%s", ifname);
			st = get_statistics(s);
			break;
		}
	}
	if (!st)
		return 0;
	t->n = undo;
	if (st == NDIS_STATUS_ADAPTER_NOT_FOUND && !o->ifindex)
		return 1;
	return query_failed(ifname, oids[i - 1], st);
}

static int snapshot(const struct options *o)
{
	struct if_nameindex *ifs = NULL, one[2];
	struct table t = { 0 };
	struct ifstats *s = NULL;
	size_t nifs = 0, ns = 0, i;
	int rc = 0, r;

	if (o->ifindex) {
		one[0].if_index = o->ifindex;
		one[0].if_name = (char *)o->ifname;
		one[1].if_index = 0;
		one[1].if_name = NULL;
	} else {
		ifs = if_nameindex();
		if (!ifs) {
			fprintf(stderr, "ndkstat: if_nameindex: %s\n",
				strerror(errno));
			return TOOL_EXIT_FAIL;
		}
	}
	for (i = 0; (ifs ? ifs : one)[i].if_index; i++)
		nifs++;
	if (o->stats) {
		s = calloc(nifs ? nifs : 1, sizeof(*s));
		if (!s) {
			rc = TOOL_EXIT_FAIL;
			goto out;
		}
	}
	for (i = 0; i < nifs; i++) {
		const struct if_nameindex *ifc = &(ifs ? ifs : one)[i];

		r = gather(o, ifc->if_index, ifc->if_name, &t,
			   s ? &s[ns] : NULL);
		if (r < 0) {
			rc = TOOL_EXIT_FAIL;
			goto out;
		}
		if (r == 0 && s)
			ns++;
	}
	if (t.n)
		qsort(t.v, t.n, sizeof(t.v[0]), row_cmp);
	if (o->json)
		print_json(&t, s, ns, o->interval > 0);
	else if (o->stats)
		print_stats_text(s, ns);
	else
		print_text(&t);
	fflush(stdout);
out:
	if (ifs)
		if_freenameindex(ifs);
	free(t.v);
	free(s);
	return rc;
}

static void sleep_seconds(double sec)
{
	struct timespec ts;

	ts.tv_sec = (time_t)sec;
	ts.tv_nsec = (long)((sec - (double)ts.tv_sec) * 1e9);
	while (!tool_stop && nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static int parse_type(const char *s)
{
	static const struct {
		const char *name;
		enum kind kind;
	} names[] = {
		{ "connection", KIND_CONNECTION },
		{ "connections", KIND_CONNECTION },
		{ "listener", KIND_LISTENER },
		{ "listeners", KIND_LISTENER },
		{ "shared", KIND_SHARED },
		{ "sharedendpoint", KIND_SHARED },
		{ "shared_endpoint", KIND_SHARED },
		{ "shared_endpoints", KIND_SHARED },
	};
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcasecmp(s, names[i].name))
			return (int)names[i].kind;
	return -1;
}

enum { OPT_STATS = TOOL_OPT_FIRST, OPT_TYPE };

static void parse_options(int argc, char **argv, struct options *o)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "stats", no_argument, NULL, OPT_STATS },
		{ "interface", required_argument, NULL, 'I' },
		{ "type", required_argument, NULL, OPT_TYPE },
		{ "pid", required_argument, NULL, 'P' },
		{ "interval", required_argument, NULL, 'i' },
		{ "iterations", required_argument, NULL, 'n' },
		TOOL_LONG_COMMON,
		{ NULL, 0, NULL, 0 },
	};
	int c;

	memset(o, 0, sizeof(*o));
	o->type = -1;
	while ((c = getopt_long(argc, argv, "jI:P:i:n:h", longopts, NULL)) !=
	       -1) {
		switch (c) {
		case 'j':
			o->json = true;
			break;
		case OPT_STATS:
			o->stats = true;
			break;
		case 'I':
			o->ifindex = tool_arg_interface(optarg, o->ifname);
			break;
		case OPT_TYPE:
			o->type = parse_type(optarg);
			if (o->type < 0)
				tool_usage_error("--type takes connection, "
						 "listener or shared, not '%s'",
						 optarg);
			break;
		case 'P':
			o->pid_set = true;
			o->pid = (ULONG)tool_arg_count("-P", optarg, 0,
						       0xffffffffUL);
			break;
		case 'i':
			/* Above zero: 0 would spin. */
			o->interval = tool_arg_seconds("-i", optarg, 0, 86400);
			if (!(o->interval > 0))
				tool_usage_error("-i: more than 0 seconds");
			break;
		case 'n':
			o->count = (unsigned long)tool_arg_count(
				"-n", optarg, 1, 0xffffffffUL);
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
	if (optind < argc)
		tool_usage_error("unexpected argument '%s'", argv[optind]);
	if (o->count && !o->interval)
		o->interval = 1;
}

int main(int argc, char **argv)
{
	struct options o;
	unsigned long n;
	int rc;

	tool_prog = "ndkstat";
	parse_options(argc, argv, &o);
	if (o.interval > 0)
		tool_catch_signals();
	for (n = 1;; n++) {
		rc = snapshot(&o);
		if (rc || !(o.interval > 0) || (o.count && n >= o.count))
			break;
		sleep_seconds(o.interval);
		if (tool_stop)
			break;
		if (!o.json)
			printf("\n");
	}
	if (fflush(stdout) || ferror(stdout))
		return TOOL_EXIT_FAIL;
	return rc;
}
