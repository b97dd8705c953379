/* SPDX-License-Identifier: MIT */
/*
 * NdkQueryOid through the public API (NDIS_NDK_LOCAL_ENDPOINTS,
 * docs/ndk.md "OIDs"): local
 * endpoints, connections and statistics of one process and of three, the
 * pairing of ND and TCP entries (iWARP; RoCE lists each object once),
 * header sizes, short buffers, and entries disappearing after close,
 * after the last reference and after SIGKILL.
 *
 * Every run uses a private NDK_RUNTIME_DIR, so the lists hold exactly
 * this test's objects and the counters start at zero.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <dirent.h>
#include <net/if.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "cmutil.h"
#include "testutil.h"

#define FILL 0xA5

static char runtime_dir[] = "/tmp/ndk-oid-XXXXXX";
static NET_IFINDEX lo_index;
/* iWARP maps ND ports onto TCP ports: two entries per object. RoCE and
 * InfiniBand (the verbs provider on rxe, say) list each object once. */
static bool tcp_paired;

/* One object as the OIDs report it, from its even (ND) entry. */
struct listed {
	ULONG pid;
	bool listener; /* endpoints only */
	uint16_t local_port, remote_port;
};

/* Queries an OID into a fresh buffer pre-filled with FILL. */
static void *query(ULONG oid, ULONG *len)
{
	ULONG written = 7, needed = 0;
	unsigned char *buf;

	assert_int_equal(NdkQueryOid(lo_index, oid, NULL, 0, &written, &needed),
			 NDIS_STATUS_BUFFER_TOO_SHORT);
	assert_int_equal(written, 0);
	assert_true(needed >= 16);
	/* Room for a few more, since the list may grow between calls. */
	buf = malloc(needed + 4096);
	assert_non_null(buf);
	memset(buf, FILL, needed + 4096);
	assert_int_equal(NdkQueryOid(lo_index, oid, buf, needed + 4096,
				     &written, &needed),
			 NDIS_STATUS_SUCCESS);
	*len = written;
	return buf;
}

static bool bytes_are(const void *p, size_t len, unsigned char v)
{
	const unsigned char *b = p;
	size_t i;

	for (i = 0; i < len; i++)
		if (b[i] != v)
			return false;
	return true;
}

/*
 * What both lists share (NDIS_NDK_LOCAL_ENDPOINTS): Header {DEFAULT, revision, Size =
 * 16 + entry * Count}, Flags 0, and on iWARP the ...MappedtoTCP... flag set
 * and two entries per object (an empty list says iWARP too).
 * NDIS_NDK_CONNECTIONS starts like NDIS_NDK_LOCAL_ENDPOINTS (test_layout
 * checks the offsets).
 */
static void check_list_prefix(const void *buf, ULONG len, UCHAR revision,
			      size_t entry)
{
	const NDIS_NDK_LOCAL_ENDPOINTS *l = buf;

	assert_int_equal(l->Header.Type, NDIS_OBJECT_TYPE_DEFAULT);
	assert_int_equal(l->Header.Revision, revision);
	assert_int_equal(l->Header.Size, 16 + entry * l->Count);
	assert_int_equal(len, 16 + entry * l->Count);
	assert_int_equal(l->Flags, 0);
	assert_int_equal(l->NDLocalEndpointsMappedtoTCPLocalEndpoints,
			 tcp_paired || !l->Count);
	if (l->NDLocalEndpointsMappedtoTCPLocalEndpoints)
		assert_int_equal(l->Count % 2, 0);
}

/* Checks the NDIS_NDK_LOCAL_ENDPOINTS rules and returns the objects listed. */
static int local_endpoints(struct listed *out, int max)
{
	NDIS_NDK_LOCAL_ENDPOINTS *le;
	ULONG len, i;
	int n = 0;

	le = query(OID_NDK_LOCAL_ENDPOINTS, &len);
	check_list_prefix(le, len, NDIS_NDK_LOCAL_ENDPOINTS_REVISION_1,
			  sizeof(le->LocalEndpoints[0]));
	for (i = 0; i < le->Count; i += tcp_paired ? 2 : 1) {
		NDIS_NDK_LOCAL_ENDPOINT_ENTRY *nd = &le->LocalEndpoints[i];
		NDIS_NDK_LOCAL_ENDPOINT_ENTRY *tcp = nd + 1;

		assert_int_equal(nd->UserModeOwner, FALSE);
		assert_true(nd->Listener == TRUE || nd->Listener == FALSE);
		/* ND port = TCP port; the TCP entry has only its address. */
		if (tcp_paired) {
			assert_memory_equal(&tcp->Local, &nd->Local,
					    sizeof(struct sockaddr_in));
			assert_true(bytes_are(
				&tcp->UserModeOwner,
				sizeof(*tcp) -
					offsetof(NDIS_NDK_LOCAL_ENDPOINT_ENTRY,
						 UserModeOwner),
				FILL));
		}
		assert_int_equal(nd->Local.si_family, AF_INET);
		assert_true(n < max);
		out[n].pid = nd->OwnerPid;
		out[n].listener = nd->Listener;
		out[n].local_port = ntohs(nd->Local.Ipv4.sin_port);
		out[n].remote_port = 0;
		n++;
	}
	/* Nothing written past the last entry. */
	assert_true(bytes_are((char *)le + len, 64, FILL));
	free(le);
	return n;
}

static int connections(struct listed *out, int max)
{
	NDIS_NDK_CONNECTIONS *cs;
	ULONG len, i;
	int n = 0;

	cs = query(OID_NDK_CONNECTIONS, &len);
	check_list_prefix(cs, len, NDIS_NDK_CONNECTIONS_REVISION_1,
			  sizeof(cs->Connections[0]));
	for (i = 0; i < cs->Count; i += tcp_paired ? 2 : 1) {
		NDIS_NDK_CONNECTION_ENTRY *nd = &cs->Connections[i];
		NDIS_NDK_CONNECTION_ENTRY *tcp = nd + 1;

		assert_int_equal(nd->UserModeOwner, FALSE);
		if (tcp_paired) {
			assert_memory_equal(&tcp->Local, &nd->Local,
					    sizeof(struct sockaddr_in));
			assert_memory_equal(&tcp->Remote, &nd->Remote,
					    sizeof(struct sockaddr_in));
			assert_true(bytes_are(
				&tcp->UserModeOwner,
				sizeof(*tcp) -
					offsetof(NDIS_NDK_CONNECTION_ENTRY,
						 UserModeOwner),
				FILL));
		}
		assert_true(n < max);
		out[n].pid = nd->OwnerPid;
		out[n].listener = false;
		out[n].local_port = ntohs(nd->Local.Ipv4.sin_port);
		out[n].remote_port = ntohs(nd->Remote.Ipv4.sin_port);
		n++;
	}
	free(cs);
	return n;
}

static NDIS_NDK_PERFORMANCE_COUNTERS statistics(void)
{
	NDIS_NDK_STATISTICS_INFO si;
	NDIS_NDK_PERFORMANCE_COUNTERS z;
	ULONG written = 0, needed = 0;

	memset(&si, FILL, sizeof(si));
	assert_int_equal(NdkQueryOid(lo_index, OID_NDK_STATISTICS, &si,
				     sizeof(si), &written, &needed),
			 NDIS_STATUS_SUCCESS);
	assert_int_equal(written, sizeof(si));
	assert_int_equal(si.Header.Type, NDIS_OBJECT_TYPE_DEFAULT);
	assert_int_equal(si.Header.Revision,
			 NDIS_NDK_STATISTICS_INFO_REVISION_1);
	assert_int_equal(si.Header.Size, sizeof(si));
	assert_int_equal(si.Flags, 0);
	/* Reserved counters are written as 0 (NDIS_NDK_PERFORMANCE_COUNTERS). */
	memset(&z, 0, sizeof(z));
	assert_memory_equal(
		&si.CounterSet.Reserved01, &z.Reserved01,
		offsetof(NDIS_NDK_PERFORMANCE_COUNTERS, CQError) -
			offsetof(NDIS_NDK_PERFORMANCE_COUNTERS, Reserved01));
	return si.CounterSet;
}

static int count_matching(const struct listed *v, int n, ULONG pid,
			  uint16_t port, int listener)
{
	int i, k = 0;

	for (i = 0; i < n; i++)
		if (v[i].pid == pid && (!port || v[i].local_port == port) &&
		    (listener < 0 || v[i].listener == (bool)listener))
			k++;
	return k;
}

static uint16_t sep_port(NDK_SHARED_ENDPOINT *sep)
{
	struct sockaddr_in a;
	ULONG len = sizeof(a);

	assert_int_equal(
		sep->Dispatch->NdkGetLocalAddress(sep, (PSOCKADDR)&a, &len),
		STATUS_SUCCESS);
	return ntohs(a.sin_port);
}

static NDK_SHARED_ENDPOINT *shared_endpoint(struct cm_host *h)
{
	struct sockaddr_in local = cm_lo4(0);
	NDK_SHARED_ENDPOINT *sep;

	assert_int_equal(h->ad->Dispatch->NdkCreateSharedEndpoint(
				 h->ad, (PSOCKADDR)&local, sizeof(local), NULL,
				 NULL, &sep),
			 STATUS_SUCCESS);
	return sep;
}

static void close_sep(NDK_SHARED_ENDPOINT *sep)
{
	NTSTATUS st =
		sep->Dispatch->NdkCloseSharedEndpoint(&sep->Header, NULL, NULL);

	assert_true(st == STATUS_SUCCESS || st == STATUS_PENDING);
}

/*
 * Passive half of a connection: takes the next incoming connector and
 * accepts it; the caller completes the active side, then waits on acc.
 */
static NDK_CONNECTOR *accept_next(struct cm_host *h, struct tool_listener *l,
				  struct cm_req *acc)
{
	NDK_CONNECTOR *in = cm_next_incoming(l, 10000);

	assert_non_null(in);
	cm_req_init(acc);
	assert_int_equal(in->Dispatch->NdkAccept(in, cm_qp(h), 4, 4, NULL, 0,
						 NULL, NULL, cm_req_done, acc),
			 STATUS_PENDING);
	return in;
}

static VOID ignore_cq(PVOID ctx, NTSTATUS status)
{
}

/* A CQ of depth 1 gets two flushed receives: it overruns (CQError). */
static void cq_overrun(struct cm_host *h)
{
	NDK_CQ *cq;
	NDK_QP *qp;
	int i;

	assert_int_equal(h->ad->Dispatch->NdkCreateCq(h->ad, 1, ignore_cq, NULL,
						      NULL, NULL, NULL, &cq),
			 STATUS_SUCCESS);
	assert_int_equal(h->pd->Dispatch->NdkCreateQp(h->pd, cq, cq, NULL, 4, 4,
						      1, 1, 0, NULL, NULL, &qp),
			 STATUS_SUCCESS);
	for (i = 0; i < 2; i++)
		assert_int_equal(qp->Dispatch->NdkReceive(qp, NULL, NULL, 0),
				 STATUS_SUCCESS);
	qp->Dispatch->NdkFlush(qp);
	cm_close_qp(qp);
	assert_true(cq->Dispatch->NdkCloseCq(&cq->Header, NULL, NULL) ==
		    STATUS_SUCCESS);
}

/* ------------------------------------------------------------------ */

static void test_errors(void **state)
{
	unsigned char buf[512];
	ULONG written = 1, needed = 1;

	assert_int_equal(NdkQueryOid(0, OID_NDK_LOCAL_ENDPOINTS, buf,
				     sizeof(buf), &written, &needed),
			 NDIS_STATUS_ADAPTER_NOT_FOUND);
	assert_int_equal(written, 0);
	assert_int_equal(needed, 0);
	assert_int_equal(NdkQueryOid(0x7ffffff0, OID_NDK_CONNECTIONS, buf,
				     sizeof(buf), &written, &needed),
			 NDIS_STATUS_ADAPTER_NOT_FOUND);
	assert_int_equal(NdkQueryOid(lo_index, 0x00010101, buf, sizeof(buf),
				     &written, &needed),
			 NDIS_STATUS_NOT_SUPPORTED);
	/* A set OID, not a query. */
	assert_int_equal(NdkQueryOid(lo_index, OID_NDK_SET_STATE, buf,
				     sizeof(buf), &written, &needed),
			 NDIS_STATUS_NOT_SUPPORTED);

	/* Empty lists are 16 bytes: the header, Flags, Count, the flag. */
	assert_int_equal(NdkQueryOid(lo_index, OID_NDK_LOCAL_ENDPOINTS, buf, 15,
				     &written, &needed),
			 NDIS_STATUS_BUFFER_TOO_SHORT);
	assert_int_equal(needed, 16);
	assert_int_equal(written, 0);
	assert_int_equal(NdkQueryOid(lo_index, OID_NDK_CONNECTIONS, NULL, 0,
				     &written, &needed),
			 NDIS_STATUS_BUFFER_TOO_SHORT);
	assert_int_equal(needed, 16);
	assert_int_equal(NdkQueryOid(lo_index, OID_NDK_STATISTICS, buf,
				     sizeof(NDIS_NDK_STATISTICS_INFO) - 1,
				     &written, &needed),
			 NDIS_STATUS_BUFFER_TOO_SHORT);
	assert_int_equal(needed, sizeof(NDIS_NDK_STATISTICS_INFO));
	/* BytesWritten and BytesNeeded are optional. */
	assert_int_equal(NdkQueryOid(lo_index, OID_NDK_CONNECTIONS, buf,
				     sizeof(buf), NULL, NULL),
			 NDIS_STATUS_SUCCESS);
}

/* One process: a listener, a shared endpoint, a connection. */
static void test_one_process(void **state)
{
	NDIS_NDK_PERFORMANCE_COUNTERS before, after;
	struct cm_host h;
	struct tool_listener l;
	struct sockaddr_in any = cm_lo4(0), nobody;
	struct listed v[16];
	NDK_SHARED_ENDPOINT *sep;
	NDK_CONNECTOR *c, *in, *refused;
	struct cm_req r, acc;
	uint16_t lport, sport;
	ULONG me = (ULONG)getpid();
	int n;

	before = statistics();
	cm_host_open(&h, cm_test_ifname());
	assert_int_equal(local_endpoints(v, 16), 0);
	assert_int_equal(cm_listen(&h, &l, (struct sockaddr *)&any),
			 STATUS_SUCCESS);
	lport = tool_addr_port((struct sockaddr *)&l.addr);
	sep = shared_endpoint(&h);
	sport = sep_port(sep);

	n = local_endpoints(v, 16);
	assert_int_equal(n, 2);
	assert_int_equal(count_matching(v, n, me, lport, 1), 1);
	assert_int_equal(count_matching(v, n, me, sport, 0), 1);
	assert_int_equal(connections(v, 16), 0);

	/* A connection from the shared endpoint to the listener. */
	c = cm_connector(&h);
	cm_req_init(&r);
	assert_int_equal(c->Dispatch->NdkConnectWithSharedEndpoint(
				 c, cm_qp(&h), sep, (PSOCKADDR)&l.addr,
				 sizeof(struct sockaddr_in), 4, 4, NULL, 0,
				 cm_req_done, &r),
			 STATUS_PENDING);
	in = accept_next(&h, &l, &acc);
	assert_int_equal(cm_req_wait(&r, 10000), STATUS_SUCCESS);
	/* Not listed before it is established (an iWARP device's kernel
	 * CM establishes the passive side with its MPA Reply already:
	 * docs/verbs.md, Connection management). */
	if (cm_provider_is(&h, "software"))
		assert_int_equal(connections(v, 16), 0);
	assert_int_equal(
		c->Dispatch->NdkCompleteConnect(c, NULL, NULL, NULL, NULL),
		STATUS_SUCCESS);
	assert_int_equal(cm_req_wait(&acc, 10000), STATUS_SUCCESS);

	n = connections(v, 16);
	assert_int_equal(n, 2);
	/* The active side, from the shared endpoint to the listener... */
	assert_int_equal(count_matching(v, n, me, sport, -1), 1);
	/* ...and the passive side on the listener's port. */
	assert_int_equal(count_matching(v, n, me, lport, -1), 1);
	assert_int_equal(v[0].remote_port == v[1].local_port, true);
	assert_int_equal(v[1].remote_port == v[0].local_port, true);

	/* A refused attempt: nothing listens on this port any more. */
	refused = cm_connector(&h);
	{
		struct tool_listener tmp;

		assert_int_equal(cm_listen(&h, &tmp, (struct sockaddr *)&any),
				 STATUS_SUCCESS);
		nobody = cm_lo4(tool_addr_port((struct sockaddr *)&tmp.addr));
		cm_listener_close(&tmp);
	}
	assert_int_equal(cm_connect(refused, cm_qp(&h),
				    (struct sockaddr *)&nobody, 4, 4, NULL, 0,
				    &r),
			 STATUS_PENDING);
	assert_int_equal(cm_req_wait(&r, 10000), STATUS_CONNECTION_REFUSED);
	cm_close_connector(refused);

	cq_overrun(&h);

	after = statistics();
	assert_int_equal(after.Connect - before.Connect, 1);
	assert_int_equal(after.Accept - before.Accept, 1);
	assert_int_equal(after.ConnectFailure - before.ConnectFailure, 1);
	assert_int_equal(after.ActiveConnection, 2);
	/* A verbs device may flush after the QP's close (rxe flushes in
	 * the background): the overrun can go unseen (docs/verbs.md,
	 * Completion queues). */
	if (cm_provider_is(&h, "software"))
		assert_int_equal(after.CQError - before.CQError, 1);

	/* Closing the listener leaves its endpoint listed while the
	 * connector accepted through it lives (NDKPI Listeners,
	 * Connectors, and Endpoints). */
	cm_listener_close(&l);
	n = local_endpoints(v, 16);
	assert_int_equal(count_matching(v, n, me, lport, 1), 1);

	/* A disconnect unlists the connection at once, before the peer
	 * answers it. */
	cm_req_init(&r);
	assert_int_equal(c->Dispatch->NdkDisconnect(c, cm_req_done, &r),
			 STATUS_PENDING);
	n = connections(v, 16);
	assert_int_equal(count_matching(v, n, me, sport, -1), 0);
	assert_int_equal(count_matching(v, n, me, lport, -1), 1);
	assert_int_equal(cm_req_result(in->Dispatch->NdkDisconnect(
					       in, cm_req_done, &acc),
				       &acc, 10000),
			 STATUS_SUCCESS);
	assert_int_equal(cm_req_wait(&r, 10000), STATUS_SUCCESS);
	cm_close_connector(c);
	cm_close_connector(in);
	tu_sleep_ms(50); /* the close completes on the engine */
	assert_int_equal(connections(v, 16), 0);
	assert_int_equal(statistics().ActiveConnection, 0);

	n = local_endpoints(v, 16);
	assert_int_equal(n, 1);
	assert_int_equal(count_matching(v, n, me, sport, 0), 1);
	close_sep(sep);
	assert_int_equal(local_endpoints(v, 16), 0);
	cm_host_close(&h);
}

/* ------------------------------------------------------------------ */
/* Three processes                                                    */

/*
 * Child role (argv: "child PORT"): a listener, a shared endpoint and a
 * connection from the shared endpoint to the parent's listener on PORT.
 * Prints "LISTENER_PORT SHARED_PORT" when all are up, then holds them
 * until stdin closes, and closes everything cleanly.
 */
static int child_main(uint16_t parent_port)
{
	struct cm_host h;
	struct tool_listener l;
	struct sockaddr_in any = cm_lo4(0), dst = cm_lo4(parent_port);
	NDK_SHARED_ENDPOINT *sep;
	NDK_CONNECTOR *c;
	struct cm_req r;
	char ch;

	cm_host_open(&h, cm_test_ifname());
	if (cm_listen(&h, &l, (struct sockaddr *)&any) != STATUS_SUCCESS)
		return 2;
	sep = shared_endpoint(&h);
	c = cm_connector(&h);
	cm_req_init(&r);
	if (c->Dispatch->NdkConnectWithSharedEndpoint(
		    c, cm_qp(&h), sep, (PSOCKADDR)&dst, sizeof(dst), 4, 4, NULL,
		    0, cm_req_done, &r) != STATUS_PENDING ||
	    cm_req_wait(&r, 10000) != STATUS_SUCCESS)
		return 3;
	if (c->Dispatch->NdkCompleteConnect(c, NULL, NULL, NULL, NULL))
		return 4;
	printf("%u %u\n", tool_addr_port((struct sockaddr *)&l.addr),
	       sep_port(sep));
	fflush(stdout);
	while (read(0, &ch, 1) > 0)
		;
	cm_host_close(&h);
	return 0;
}

struct child {
	pid_t pid;
	int to, from; /* its stdin, its stdout */
	uint16_t lport, sport;
	NDK_CONNECTOR *in; /* our side of its connection */
};

static void child_start(struct child *ch, uint16_t port)
{
	int in[2], out[2];
	char arg[16];

	assert_int_equal(pipe(in), 0);
	assert_int_equal(pipe(out), 0);
	snprintf(arg, sizeof(arg), "%u", port);
	ch->pid = fork();
	assert_true(ch->pid >= 0);
	if (ch->pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[1]);
		close(out[0]);
		execl("/proc/self/exe", "test_oid", "child", arg, (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	ch->to = in[1];
	ch->from = out[0];
}

static void child_ready(struct child *ch)
{
	char line[64];
	ssize_t k, n = 0;
	unsigned int lp, sp;

	while (n < (ssize_t)sizeof(line) - 1 &&
	       (k = read(ch->from, line + n, 1)) == 1 && line[n] != '\n')
		n++;
	line[n] = 0;
	assert_int_equal(sscanf(line, "%u %u", &lp, &sp), 2);
	ch->lport = (uint16_t)lp;
	ch->sport = (uint16_t)sp;
}

static bool file_of_pid_exists(pid_t pid)
{
	char prefix[32], path[512];
	struct dirent *d;
	bool found = false;
	DIR *dir;

	/* The registry's files are in one directory per user. */
	snprintf(path, sizeof(path), "%s/u%u", runtime_dir,
		 (unsigned int)geteuid());
	dir = opendir(path);
	assert_non_null(dir);
	snprintf(prefix, sizeof(prefix), "p.%d.", (int)pid);
	while ((d = readdir(dir)))
		if (!strncmp(d->d_name, prefix, strlen(prefix)))
			found = true;
	closedir(dir);
	return found;
}

static void test_three_processes(void **state)
{
	NDIS_NDK_PERFORMANCE_COUNTERS before, after;
	struct cm_host h;
	struct tool_listener l;
	struct sockaddr_in any = cm_lo4(0);
	struct child ch[2];
	struct listed v[32];
	struct cm_req acc[2], d;
	ULONG me = (ULONG)getpid();
	uint16_t lport;
	int i, n, wstatus;

	before = statistics();
	/* The children exec at once: nothing of rdma-core's contexts is
	 * shared (docs/verbs.md, Processes). */
	cm_host_open(&h, cm_test_ifname());
	assert_int_equal(cm_listen(&h, &l, (struct sockaddr *)&any),
			 STATUS_SUCCESS);
	lport = tool_addr_port((struct sockaddr *)&l.addr);
	for (i = 0; i < 2; i++) {
		child_start(&ch[i], lport);
		ch[i].in = accept_next(&h, &l, &acc[i]);
		assert_int_equal(cm_req_wait(&acc[i], 10000), STATUS_SUCCESS);
		child_ready(&ch[i]);
	}

	/* Endpoints: ours, and each child's listener and shared endpoint. */
	n = local_endpoints(v, 32);
	assert_int_equal(n, 5);
	assert_int_equal(count_matching(v, n, me, lport, 1), 1);
	for (i = 0; i < 2; i++) {
		assert_int_equal(
			count_matching(v, n, (ULONG)ch[i].pid, ch[i].lport, 1),
			1);
		assert_int_equal(
			count_matching(v, n, (ULONG)ch[i].pid, ch[i].sport, 0),
			1);
	}
	/* Connections: each child's active side and our two passive ones. */
	n = connections(v, 32);
	assert_int_equal(n, 4);
	for (i = 0; i < 2; i++) {
		assert_int_equal(
			count_matching(v, n, (ULONG)ch[i].pid, ch[i].sport, -1),
			1);
		assert_int_equal(count_matching(v, n, me, lport, -1) >= 1,
				 true);
	}
	assert_int_equal(count_matching(v, n, me, lport, -1), 2);
	after = statistics();
	assert_int_equal(after.Connect - before.Connect, 2);
	assert_int_equal(after.Accept - before.Accept, 2);
	assert_int_equal(after.ActiveConnection, 4);

	/* SIGKILL: the child's entries go with it, and its file too. */
	assert_int_equal(kill(ch[0].pid, SIGKILL), 0);
	assert_int_equal(waitpid(ch[0].pid, &wstatus, 0), ch[0].pid);
	assert_true(file_of_pid_exists(ch[0].pid));
	n = local_endpoints(v, 32);
	assert_int_equal(n, 3);
	assert_int_equal(count_matching(v, n, (ULONG)ch[0].pid, 0, -1), 0);
	assert_false(file_of_pid_exists(ch[0].pid));
	n = connections(v, 32);
	assert_int_equal(count_matching(v, n, (ULONG)ch[0].pid, 0, -1), 0);
	/* Ours stays listed until we disconnect it. */
	assert_int_equal(count_matching(v, n, me, lport, -1), 2);
	cm_req_init(&d);
	/* Whether or not our side saw the peer go yet. */
	assert_int_equal(cm_req_result(ch[0].in->Dispatch->NdkDisconnect(
					       ch[0].in, cm_req_done, &d),
				       &d, 10000),
			 STATUS_SUCCESS);
	n = connections(v, 32);
	assert_int_equal(n, 2);
	/* The counters outlive the killed process. */
	after = statistics();
	assert_int_equal(after.Connect - before.Connect, 2);
	assert_int_equal(after.ActiveConnection, 2);

	/* A clean exit removes the child's file itself. */
	close(ch[1].to);
	assert_int_equal(waitpid(ch[1].pid, &wstatus, 0), ch[1].pid);
	assert_true(WIFEXITED(wstatus));
	assert_int_equal(WEXITSTATUS(wstatus), 0);
	assert_false(file_of_pid_exists(ch[1].pid));
	n = local_endpoints(v, 32);
	assert_int_equal(n, 1);
	assert_int_equal(count_matching(v, n, me, lport, 1), 1);

	close(ch[0].to);
	close(ch[0].from);
	close(ch[1].from);
	cm_host_close(&h);
	assert_int_equal(local_endpoints(v, 32), 0);
	assert_int_equal(connections(v, 32), 0);
}

static bool interface_is_iwarp(void)
{
	struct cm_host h;
	bool iwarp;

	cm_host_open(&h, cm_test_ifname());
	iwarp = h.info.RdmaTechnology == NdkiWarp;
	cm_host_close(&h);
	return iwarp;
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_one_process),
		cmocka_unit_test(test_three_processes),
	};
	int ret;

	signal(SIGPIPE, SIG_IGN);
	lo_index = if_nametoindex(cm_test_ifname());
	if (argc == 3 && !strcmp(argv[1], "child"))
		return child_main((uint16_t)atoi(argv[2]));
	if (!mkdtemp(runtime_dir))
		return 1;
	setenv("NDK_RUNTIME_DIR", runtime_dir, 1);
	tcp_paired = interface_is_iwarp();
	ret = cmocka_run_group_tests_name("oid", tests, NULL, NULL);
	ret = tu_private_runtime_done(runtime_dir, ret);
	return ret;
}
