/* SPDX-License-Identifier: MIT */
/*
 * ndkdemo: a tour of libndk through the public NDKPI only. It opens the
 * loopback adapter, prints its NDK_ADAPTER_INFO, then creates and closes one
 * object of every type, closing a parent first to show a pending close,
 * then connects on loopback, moves data and shows the connection with
 * ndkstat.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <net/if.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <ndk/ndk.h>

/* For posix_spawnp; unistd.h declares it only under _GNU_SOURCE. */
extern char **environ;

#define CHECK(expr)                                                         \
	do {                                                                \
		NTSTATUS st_ = (expr);                                      \
		if (!NT_SUCCESS(st_)) {                                     \
			fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, \
				__LINE__, #expr, NdkStatusName(st_));       \
			exit(1);                                            \
		}                                                           \
	} while (0)

/* A one-shot event that a callback signals and main waits for. */
struct event {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int fired;
};

static void event_init(struct event *e)
{
	pthread_mutex_init(&e->lock, NULL);
	pthread_cond_init(&e->cond, NULL);
	e->fired = 0;
}

static void event_signal(struct event *e)
{
	pthread_mutex_lock(&e->lock);
	e->fired = 1;
	pthread_cond_signal(&e->cond);
	pthread_mutex_unlock(&e->lock);
}

static void event_wait(struct event *e)
{
	pthread_mutex_lock(&e->lock);
	while (!e->fired)
		pthread_cond_wait(&e->cond, &e->lock);
	pthread_mutex_unlock(&e->lock);
}

static void on_cq_event(PVOID ctx, NTSTATUS status)
{
}

static void on_connect_event(PVOID ctx, NDK_CONNECTOR *connector)
{
}

static void print_flag(ULONG flags, ULONG flag, const char *name)
{
	if (flags & flag)
		printf("    %s\n", name);
}

static void print_info(const NDK_ADAPTER_INFO *i)
{
	printf("  NDKPI version            %u.%u\n", i->Version.Major,
	       i->Version.Minor);
	printf("  RdmaTechnology           %s\n",
	       i->RdmaTechnology == NdkiWarp ? "iWARP" : "other");
	printf("  MaxRegistrationSize      %llu\n",
	       (unsigned long long)i->MaxRegistrationSize);
	printf("  MaxWindowSize            %llu\n",
	       (unsigned long long)i->MaxWindowSize);
	printf("  FRMRPageCount            %u\n", i->FRMRPageCount);
	printf("  MaxInitiatorRequestSge   %u\n", i->MaxInitiatorRequestSge);
	printf("  MaxReceiveRequestSge     %u\n", i->MaxReceiveRequestSge);
	printf("  MaxReadRequestSge        %u\n", i->MaxReadRequestSge);
	printf("  MaxTransferLength        %u\n", i->MaxTransferLength);
	printf("  MaxInlineDataSize        %u\n", i->MaxInlineDataSize);
	printf("  MaxInboundReadLimit      %u\n", i->MaxInboundReadLimit);
	printf("  MaxOutboundReadLimit     %u\n", i->MaxOutboundReadLimit);
	printf("  MaxReceiveQueueDepth     %u\n", i->MaxReceiveQueueDepth);
	printf("  MaxInitiatorQueueDepth   %u\n", i->MaxInitiatorQueueDepth);
	printf("  MaxSrqDepth              %u\n", i->MaxSrqDepth);
	printf("  MaxCqDepth               %u\n", i->MaxCqDepth);
	printf("  LargeRequestThreshold    %u\n", i->LargeRequestThreshold);
	printf("  MaxCallerData            %u\n", i->MaxCallerData);
	printf("  MaxCalleeData            %u\n", i->MaxCalleeData);
	printf("  AdapterFlags             0x%08x\n", i->AdapterFlags);
	print_flag(i->AdapterFlags, NDK_ADAPTER_FLAG_IN_ORDER_DMA_SUPPORTED,
		   "IN_ORDER_DMA_SUPPORTED");
	print_flag(i->AdapterFlags,
		   NDK_ADAPTER_FLAG_RDMA_READ_SINK_NOT_REQUIRED,
		   "RDMA_READ_SINK_NOT_REQUIRED");
	print_flag(i->AdapterFlags,
		   NDK_ADAPTER_FLAG_CQ_INTERRUPT_MODERATION_SUPPORTED,
		   "CQ_INTERRUPT_MODERATION_SUPPORTED");
	print_flag(i->AdapterFlags, NDK_ADAPTER_FLAG_MULTI_ENGINE_SUPPORTED,
		   "MULTI_ENGINE_SUPPORTED");
	print_flag(i->AdapterFlags,
		   NDK_ADAPTER_FLAG_RDMA_READ_LOCAL_INVALIDATE_SUPPORTED,
		   "RDMA_READ_LOCAL_INVALIDATE_SUPPORTED");
	print_flag(i->AdapterFlags, NDK_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED,
		   "CQ_RESIZE_SUPPORTED");
	print_flag(i->AdapterFlags,
		   NDK_ADAPTER_FLAG_LOOPBACK_CONNECTIONS_SUPPORTED,
		   "LOOPBACK_CONNECTIONS_SUPPORTED");
}

/* A close-completion context: a name, then the event to signal. */
struct closer {
	char name[32];
	struct event done;
};

static void on_close(PVOID ctx)
{
	struct closer *c = ctx;

	printf("    CloseCompletion: %s closed\n", c->name);
	event_signal(&c->done);
}

static struct closer *closer_new(const char *name)
{
	struct closer *c = calloc(1, sizeof(*c));

	if (!c)
		exit(1);
	snprintf(c->name, sizeof(c->name), "%s", name);
	event_init(&c->done);
	return c;
}

/* Closes an object; waits for CloseCompletion if the close pends. */
static void close_object(NDK_OBJECT_HEADER *hdr, NDK_FN_CLOSE_OBJECT fn,
			 const char *name, int wait)
{
	struct closer *c = closer_new(name);
	NTSTATUS st = fn(hdr, on_close, c);

	printf("  close %-16s -> %s\n", name, NdkStatusName(st));
	if (st == STATUS_PENDING && wait)
		event_wait(&c->done);
	if (st != STATUS_PENDING || wait)
		free(c);
}

/* ---- A connection on loopback: the NDK three-step handshake ---- */

struct waiter {
	struct event ev;
	NTSTATUS status;
};

static void on_request(PVOID ctx, NTSTATUS status)
{
	struct waiter *w = ctx;

	w->status = status;
	event_signal(&w->ev);
}

static NDK_CONNECTOR *incoming;
static struct event incoming_ev;

static void on_incoming(PVOID ctx, NDK_CONNECTOR *connector)
{
	printf("  [passive] ConnectEvent: a new connector\n");
	incoming = connector;
	event_signal(&incoming_ev);
}

static struct event disc_ev;

static void on_disconnect_ex(PVOID ctx, ULONG reason)
{
	printf("  [%s] DisconnectEventEx (ProviderDisconnectReason %u)\n",
	       (const char *)ctx, reason);
	event_signal(&disc_ev);
}

static void print_connection_data(const char *side, NDK_CONNECTOR *c)
{
	char pd[256];
	ULONG len = 0, ird = 0, ord = 0;

	CHECK(c->Dispatch->NdkGetConnectionData(c, &ird, &ord, NULL, &len));
	printf("  [%s] GetConnectionData(NULL, 0): RDS %u, IRD %u, ORD %u\n",
	       side, len, ird, ord);
	len = sizeof(pd);
	CHECK(c->Dispatch->NdkGetConnectionData(c, NULL, NULL, pd, &len));
	printf("  [%s] private data \"%.*s\"\n", side, (int)len, pd);
}

static void print_addresses(const char *side, NDK_CONNECTOR *c)
{
	struct sockaddr_in a, b;
	ULONG la = sizeof(a), lb = sizeof(b);
	char sa[INET_ADDRSTRLEN], sb[INET_ADDRSTRLEN];

	CHECK(c->Dispatch->NdkGetLocalAddress(c, (PSOCKADDR)&a, &la));
	CHECK(c->Dispatch->NdkGetPeerAddress(c, (PSOCKADDR)&b, &lb));
	printf("  [%s] local %s:%u, peer %s:%u\n", side,
	       inet_ntop(AF_INET, &a.sin_addr, sa, sizeof(sa)),
	       ntohs(a.sin_port),
	       inet_ntop(AF_INET, &b.sin_addr, sb, sizeof(sb)),
	       ntohs(b.sin_port));
}

/* Registers buf for local and remote access; returns the MR. */
static NDK_MR *register_buffer(NDK_PD *pd, void *buf, ULONG len)
{
	NDK_MR *mr;
	PMDL mdl = IoAllocateMdl(buf, len, FALSE, FALSE, NULL);

	CHECK(pd->Dispatch->NdkCreateMr(pd, FALSE, NULL, NULL, &mr));
	CHECK(mr->Dispatch->NdkRegisterMr(
		mr, mdl, len,
		NDK_MR_FLAG_ALLOW_LOCAL_WRITE | NDK_MR_FLAG_ALLOW_REMOTE_READ |
			NDK_MR_FLAG_ALLOW_REMOTE_WRITE,
		NULL, NULL));
	IoFreeMdl(mdl);
	return mr;
}

static void wait_one(NDK_CQ *cq, NDK_RESULT_EX *res)
{
	while (!cq->Dispatch->NdkGetCqResultsEx(cq, res, 1))
		;
}

static const char *op_name(NDK_OPERATION_TYPE t)
{
	switch (t) {
	case NdkOperationTypeReceive:
		return "Receive";
	case NdkOperationTypeSend:
		return "Send";
	case NdkOperationTypeRead:
		return "Read";
	case NdkOperationTypeWrite:
		return "Write";
	default:
		return "other";
	}
}

/* Send/Receive, RDMA Write and RDMA Read over the connection. */
static void demo_data(NDK_PD *pd, NDK_CQ *cq, NDK_QP *aqp, NDK_QP *pqp)
{
	static char abuf[256], pbuf[256];
	NDK_MR *amr = register_buffer(pd, abuf, sizeof(abuf));
	NDK_MR *pmr = register_buffer(pd, pbuf, sizeof(pbuf));
	UINT32 atok = amr->Dispatch->NdkGetLocalTokenFromMr(amr);
	UINT32 ptok = pmr->Dispatch->NdkGetLocalTokenFromMr(pmr);
	UINT32 premote = pmr->Dispatch->NdkGetRemoteTokenFromMr(pmr);
	NDK_SGE rs = { .VirtualAddress = pbuf,
		       .Length = 64,
		       .MemoryRegionToken = ptok };
	NDK_SGE ss = { .VirtualAddress = abuf,
		       .Length = 0,
		       .MemoryRegionToken = atok };
	NDK_RESULT_EX res;

	printf("== Data on the connection (DDP/RDMAP in MPA FPDUs)\n");
	CHECK(pqp->Dispatch->NdkReceive(pqp, NULL, &rs, 1));
	strcpy(abuf, "a Send from the initiator");
	ss.Length = (ULONG)strlen(abuf) + 1;
	CHECK(aqp->Dispatch->NdkSend(aqp, NULL, &ss, 1, 0));
	wait_one(cq, &res);
	printf("  completion: %s %s, %u bytes\n", op_name(res.Type),
	       NdkStatusName(res.Status), res.BytesTransferred);
	wait_one(cq, &res);
	printf("  completion: %s %s, %u bytes\n", op_name(res.Type),
	       NdkStatusName(res.Status), res.BytesTransferred);
	printf("  [passive] received \"%s\"\n", pbuf);

	/* RDMA Write into the passive buffer at offset 128, then a Send
	 * behind it tells the passive side the data is there. */
	strcpy(abuf, "an RDMA Write, placed without the target calling in");
	ss.Length = (ULONG)strlen(abuf) + 1;
	CHECK(aqp->Dispatch->NdkWrite(aqp, NULL, &ss, 1,
				      (UINT64)(uintptr_t)(pbuf + 128), premote,
				      NDK_OP_FLAG_SILENT_SUCCESS));
	CHECK(pqp->Dispatch->NdkReceive(pqp, NULL, NULL, 0));
	CHECK(aqp->Dispatch->NdkSend(aqp, NULL, NULL, 0,
				     NDK_OP_FLAG_SILENT_SUCCESS));
	wait_one(cq, &res);
	printf("  [passive] at offset 128: \"%s\"\n", pbuf + 128);

	/* RDMA Read of those bytes back into the initiator's buffer. */
	memset(abuf, 0, sizeof(abuf));
	ss.Length = 64;
	CHECK(aqp->Dispatch->NdkRead(aqp, NULL, &ss, 1,
				     (UINT64)(uintptr_t)(pbuf + 128), premote,
				     0));
	wait_one(cq, &res);
	printf("  completion: %s %s\n", op_name(res.Type),
	       NdkStatusName(res.Status));
	printf("  [active]  read back \"%s\"\n", abuf);
	CHECK(amr->Dispatch->NdkCloseMr(&amr->Header, NULL, NULL));
	CHECK(pmr->Dispatch->NdkCloseMr(&pmr->Header, NULL, NULL));
}

/*
 * Runs ndkstat on this process's objects while the connection is up:
 * $NDKSTAT, else tools/ndkstat of the build tree this demo runs from,
 * else ndkstat on PATH.
 */
static void run_ndkstat(const char *ifname)
{
	static char self[PATH_MAX], path[PATH_MAX + 32];
	const char *prog = getenv("NDKSTAT");
	char opt_i[] = "-I", opt_p[] = "-P", pid[16];
	char *argv[] = { NULL, opt_i, NULL, opt_p, pid, NULL };
	ssize_t n;
	pid_t child;
	int err, status;

	if (!prog || !*prog) {
		prog = "ndkstat";
		n = readlink("/proc/self/exe", self, sizeof(self) - 1);
		if (n > 0) {
			self[n] = '\0';
			snprintf(path, sizeof(path), "%s/../tools/ndkstat",
				 dirname(self));
			if (!access(path, X_OK))
				prog = path;
		}
	}
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	argv[0] = (char *)prog;
	argv[2] = (char *)ifname;
	printf("== ndkstat -I %s -P %s (every process sees the connection)\n",
	       ifname, pid);
	fflush(stdout);
	err = posix_spawnp(&child, prog, NULL, NULL, argv, environ);
	if (err) {
		printf("  (%s: %s; build tools/ or set NDKSTAT)\n", prog,
		       strerror(err));
		return;
	}
	while (waitpid(child, &status, 0) < 0 && errno == EINTR)
		;
}

static void demo_connection(NDK_ADAPTER *ad, const char *ifname)
{
	NDK_PD *pd;
	NDK_CQ *cq;
	NDK_QP *aqp, *pqp;
	NDK_LISTENER *lis;
	NDK_CONNECTOR *active;
	struct sockaddr_in laddr = { .sin_family = AF_INET };
	struct sockaddr_in src = { .sin_family = AF_INET };
	ULONG len = sizeof(laddr);
	struct waiter conn, acc, disc;
	NTSTATUS st;

	printf("== Connection on loopback (MPA v2, peer-to-peer)\n");
	event_init(&incoming_ev);
	event_init(&disc_ev);
	event_init(&conn.ev);
	event_init(&acc.ev);
	event_init(&disc.ev);
	CHECK(ad->Dispatch->NdkCreatePd(ad, NULL, NULL, &pd));
	CHECK(ad->Dispatch->NdkCreateCq(ad, 64, on_cq_event, NULL, NULL, NULL,
					NULL, &cq));
	CHECK(pd->Dispatch->NdkCreateQp(pd, cq, cq, NULL, 16, 16, 1, 1, 0, NULL,
					NULL, &aqp));
	CHECK(pd->Dispatch->NdkCreateQp(pd, cq, cq, NULL, 16, 16, 1, 1, 0, NULL,
					NULL, &pqp));
	CHECK(ad->Dispatch->NdkCreateListener(ad, on_incoming, NULL, NULL, NULL,
					      &lis));
	laddr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	CHECK(lis->Dispatch->NdkListen(lis, (PSOCKADDR)&laddr, sizeof(laddr),
				       NULL, NULL));
	CHECK(lis->Dispatch->NdkGetLocalAddress(lis, (PSOCKADDR)&laddr, &len));
	printf("  [passive] listening on 127.0.0.1:%u\n",
	       ntohs(laddr.sin_port));

	CHECK(ad->Dispatch->NdkCreateConnector(ad, NULL, NULL, &active));
	src.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	st = active->Dispatch->NdkConnect(
		active, aqp, (PSOCKADDR)&src, sizeof(src), (PSOCKADDR)&laddr,
		sizeof(laddr), 16, 8, (PVOID) "hello from the initiator", 24,
		on_request, &conn);
	printf("  [active]  NdkConnect(IRD 16, ORD 8, 24 bytes) -> %s\n",
	       NdkStatusName(st));
	event_wait(&incoming_ev);
	print_connection_data("passive", incoming);
	print_addresses("passive", incoming);
	st = incoming->Dispatch->NdkAcceptEx(
		incoming, pqp, 4, 32, (PVOID) "welcome", 7, on_disconnect_ex,
		(PVOID) "passive", on_request, &acc);
	printf("  [passive] NdkAcceptEx(IRD 4, ORD 32, 7 bytes) -> %s\n",
	       NdkStatusName(st));
	if (st == STATUS_PENDING)
		event_wait(&conn.ev);
	printf("  [active]  Connect completed: %s\n",
	       NdkStatusName(conn.status));
	print_connection_data("active", active);
	print_addresses("active", active);
	st = active->Dispatch->NdkCompleteConnectEx(
		active, on_disconnect_ex, (PVOID) "active", NULL, NULL);
	printf("  [active]  NdkCompleteConnectEx -> %s (sends the RTR)\n",
	       NdkStatusName(st));
	event_wait(&acc.ev);
	printf("  [passive] Accept completed: %s\n", NdkStatusName(acc.status));

	demo_data(pd, cq, aqp, pqp);
	run_ndkstat(ifname);

	st = active->Dispatch->NdkDisconnect(active, on_request, &disc);
	printf("  [active]  NdkDisconnect -> %s\n", NdkStatusName(st));
	event_wait(&disc_ev);
	st = incoming->Dispatch->NdkDisconnect(incoming, NULL, NULL);
	printf("  [passive] NdkDisconnect -> %s\n", NdkStatusName(st));
	event_wait(&disc.ev);
	printf("  [active]  Disconnect completed: %s\n",
	       NdkStatusName(disc.status));

	close_object(&active->Header, active->Dispatch->NdkCloseConnector,
		     "active connector", 1);
	close_object(&incoming->Header, incoming->Dispatch->NdkCloseConnector,
		     "passive connector", 1);
	close_object(&lis->Header, lis->Dispatch->NdkCloseListener, "listener",
		     1);
	close_object(&aqp->Header, aqp->Dispatch->NdkCloseQp, "active QP", 1);
	close_object(&pqp->Header, pqp->Dispatch->NdkCloseQp, "passive QP", 1);
	close_object(&cq->Header, cq->Dispatch->NdkCloseCq, "CQ", 1);
	close_object(&pd->Header, pd->Dispatch->NdkClosePd, "PD", 1);
}

int main(int argc, char **argv)
{
	const char *ifname = argc > 1 ? argv[1] : "lo";
	NDK_VERSION version = { 2, 0 };
	NDK_ADAPTER *ad;
	NDK_ADAPTER_INFO info;
	ULONG size = sizeof(info);
	NDK_PD *pd;
	NDK_CQ *cq;
	NDK_QP *qp;
	NDK_SRQ *srq;
	NDK_MR *mr;
	NDK_MW *mw;
	NDK_CONNECTOR *conn;
	NDK_LISTENER *lis;
	NDK_SHARED_ENDPOINT *sep;
	struct sockaddr_in local = { .sin_family = AF_INET };
	ULONG len = sizeof(local);
	struct closer *pd_closer;
	NTSTATUS st;

	printf("== Adapter %s (ifindex %u)\n", ifname, if_nametoindex(ifname));
	CHECK(NdkOpenAdapter(version, if_nametoindex(ifname), &ad));
	CHECK(ad->Dispatch->NdkQueryAdapterInfo(ad, &info, &size));
	print_info(&info);

	printf("== Objects\n");
	CHECK(ad->Dispatch->NdkCreatePd(ad, NULL, NULL, &pd));
	printf("  created PD\n");
	CHECK(ad->Dispatch->NdkCreateCq(ad, 64, on_cq_event, NULL, NULL, NULL,
					NULL, &cq));
	printf("  created CQ (depth 64)\n");
	CHECK(pd->Dispatch->NdkCreateSrq(pd, 32, 2, 0, NULL, NULL, NULL, NULL,
					 NULL, &srq));
	printf("  created SRQ (depth 32)\n");
	CHECK(pd->Dispatch->NdkCreateQp(pd, cq, cq, NULL, 16, 16, 2, 2, 64,
					NULL, NULL, &qp));
	printf("  created QP (16/16, same CQ for both queues)\n");
	CHECK(pd->Dispatch->NdkCreateMr(pd, FALSE, NULL, NULL, &mr));
	printf("  created MR\n");
	CHECK(pd->Dispatch->NdkCreateMw(pd, NULL, NULL, &mw));
	printf("  created MW\n");
	CHECK(ad->Dispatch->NdkCreateConnector(ad, NULL, NULL, &conn));
	printf("  created connector\n");
	CHECK(ad->Dispatch->NdkCreateListener(ad, on_connect_event, NULL, NULL,
					      NULL, &lis));
	printf("  created listener\n");
	local.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	CHECK(ad->Dispatch->NdkCreateSharedEndpoint(
		ad, (PSOCKADDR)&local, sizeof(local), NULL, NULL, &sep));
	CHECK(sep->Dispatch->NdkGetLocalAddress(sep, (PSOCKADDR)&local, &len));
	printf("  created shared endpoint 127.0.0.1:%u (port 0 -> ephemeral)\n",
	       ntohs(local.sin_port));

	printf("== Closing the PD first: it waits for its successors\n");
	pd_closer = closer_new("PD");
	st = pd->Dispatch->NdkClosePd(&pd->Header, on_close, pd_closer);
	printf("  close %-16s -> %s\n", "PD", NdkStatusName(st));
	close_object(&mw->Header, mw->Dispatch->NdkCloseMw, "MW", 1);
	close_object(&mr->Header, mr->Dispatch->NdkCloseMr, "MR", 1);
	close_object(&qp->Header, qp->Dispatch->NdkCloseQp, "QP", 1);
	close_object(&srq->Header, srq->Dispatch->NdkCloseSrq, "SRQ", 1);
	if (st == STATUS_PENDING)
		event_wait(&pd_closer->done);
	free(pd_closer);
	close_object(&cq->Header, cq->Dispatch->NdkCloseCq, "CQ", 1);
	close_object(&conn->Header, conn->Dispatch->NdkCloseConnector,
		     "connector", 1);
	close_object(&lis->Header, lis->Dispatch->NdkCloseListener, "listener",
		     1);
	close_object(&sep->Header, sep->Dispatch->NdkCloseSharedEndpoint,
		     "shared endpoint", 1);

	demo_connection(ad, ifname);

	NdkCloseAdapter(ad);
	printf("== Adapter closed\n");
	return 0;
}
