/* SPDX-License-Identifier: MIT */
/*
 * ndkdemo: a tour of libndk through the public NDKPI only. It opens the
 * loopback adapter, prints its NDK_ADAPTER_INFO, then creates and closes one
 * object of every type, closing a parent first to show a pending close.
 */
#include <arpa/inet.h>
#include <net/if.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ndk/ndk.h>

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
static void close_object(NDK_OBJECT_HEADER *hdr, NDK_FN_CLOSE_OBJECT *fn,
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

	NdkCloseAdapter(ad);
	printf("== Adapter closed\n");
	return 0;
}
