/* SPDX-License-Identifier: MIT */
/*
 * A consumer written the way Windows NDK code is written against
 * Microsoft's ndkpi.h: NDK_FN_* variables that hold dispatch entries and
 * consumer callbacks, tagged enums and structs, a consumer-built dispatch
 * table, NdkQueryExtension with a non-const GUID *. It is built as C11 and
 * (through consumer_cxx.cpp) as C++ with -Wall -Wextra -Werror, and then
 * run on the loopback adapter, so it checks behaviour as well as source
 * compatibility. It prints "compat: N checks passed" or the first failure.
 */
#include <net/if.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <ndk/ndk.h>

static unsigned int checks;

#define CHECK(cond)                                                            \
	do {                                                                   \
		checks++;                                                      \
		if (!(cond)) {                                                 \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, \
				__LINE__, #cond);                              \
			exit(1);                                               \
		}                                                              \
	} while (0)

/* ------------------------------------------------------------------ */
/* A completion the main thread can wait for.                         */

struct waiter {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int fired;
	NTSTATUS status;
	NDK_OBJECT_HEADER *object;
	ULONG reason;
};

static void waiter_init(struct waiter *w)
{
	memset(w, 0, sizeof(*w));
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->cond, NULL);
}

static void waiter_fire(struct waiter *w, NTSTATUS status,
			NDK_OBJECT_HEADER *object)
{
	pthread_mutex_lock(&w->lock);
	w->fired++;
	w->status = status;
	w->object = object;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

/* Forgets what fired, to wait for the next request. */
static void waiter_reset(struct waiter *w)
{
	pthread_mutex_lock(&w->lock);
	w->fired = 0;
	w->status = STATUS_PENDING;
	w->object = NULL;
	w->reason = 0;
	pthread_mutex_unlock(&w->lock);
}

/* How often w fired since its last reset. */
static int waiter_count(struct waiter *w)
{
	int n;

	pthread_mutex_lock(&w->lock);
	n = w->fired;
	pthread_mutex_unlock(&w->lock);
	return n;
}

/*
 * The inline status, or, if the request pended, the status of its
 * completion (STATUS_IO_TIMEOUT if none came within 10 s). A create that
 * pended passes its object to the completion: w->object then.
 */
static NTSTATUS waiter_result(struct waiter *w, NTSTATUS inline_status)
{
	struct timespec until;
	NTSTATUS status;

	if (inline_status != STATUS_PENDING)
		return inline_status;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 10;
	pthread_mutex_lock(&w->lock);
	while (!w->fired &&
	       pthread_cond_timedwait(&w->cond, &w->lock, &until) == 0)
		;
	status = w->fired ? w->status : STATUS_IO_TIMEOUT;
	pthread_mutex_unlock(&w->lock);
	return status;
}

/* ------------------------------------------------------------------ */
/* Consumer callbacks, one of each NDK_FN_* callback type.            */

static VOID OnCreated(PVOID Context, NTSTATUS Status,
		      NDK_OBJECT_HEADER *pNdkObject)
{
	waiter_fire((struct waiter *)Context, Status, pNdkObject);
}

static VOID OnDone(PVOID Context, NTSTATUS Status)
{
	waiter_fire((struct waiter *)Context, Status, NULL);
}

static VOID OnClosed(PVOID Context)
{
	waiter_fire((struct waiter *)Context, STATUS_SUCCESS, NULL);
}

static VOID OnCqNotify(PVOID CqNotificationContext, NTSTATUS CqStatus)
{
	waiter_fire((struct waiter *)CqNotificationContext, CqStatus, NULL);
}

static VOID OnSrqNotify(PVOID SrqNotificationContext, NTSTATUS SrqStatus)
{
	waiter_fire((struct waiter *)SrqNotificationContext, SrqStatus, NULL);
}

static VOID OnConnectEvent(PVOID ConnectEventContext,
			   NDK_CONNECTOR *pNdkConnector)
{
	waiter_fire((struct waiter *)ConnectEventContext, STATUS_SUCCESS,
		    &pNdkConnector->Header);
}

static VOID OnDisconnect(PVOID DisconnectEventContext)
{
	waiter_fire((struct waiter *)DisconnectEventContext, STATUS_SUCCESS,
		    NULL);
}

static VOID OnDisconnectEx(PVOID DisconnectEventContext,
			   ULONG ProviderDisconnectReason)
{
	struct waiter *w = (struct waiter *)DisconnectEventContext;

	pthread_mutex_lock(&w->lock);
	w->reason = ProviderDisconnectReason;
	pthread_mutex_unlock(&w->lock);
	waiter_fire(w, STATUS_SUCCESS, NULL);
}

/*
 * The PD's close entry as the provider gave it, and a consumer entry that
 * counts closes and forwards to it: the consumer may replace Dispatch.
 */
static NDK_FN_CLOSE_OBJECT provider_close_pd;
static unsigned int pd_closes;

static NTSTATUS CountingClosePd(NDK_OBJECT_HEADER *pNdkObject,
				NDK_FN_CLOSE_COMPLETION CloseCompletion,
				PVOID RequestContext)
{
	pd_closes++;
	return provider_close_pd(pNdkObject, CloseCompletion, RequestContext);
}

/*
 * Likewise for NdkQueryExtension: this only builds if the slot's type
 * takes a GUID * (not a const one), as Microsoft's does.
 */
static NDK_FN_QUERY_EXTENSION_INTERFACE provider_query_ext;
static unsigned int ext_queries;

static NTSTATUS
ForwardQueryExtension(NDK_OBJECT_HEADER *pNdkObject, GUID *ExtensionInterfaceID,
		      NDK_VERSION ExtensionInterfaceVersion,
		      NDK_EXTENSION_INTERFACE *pExtensionInterface)
{
	ext_queries++;
	return provider_query_ext(pNdkObject, ExtensionInterfaceID,
				  ExtensionInterfaceVersion,
				  pExtensionInterface);
}

/* Closes through a pointer-typed close entry and waits if it pends. */
static void close_object(NDK_FN_CLOSE_OBJECT close_fn,
			 NDK_OBJECT_HEADER *object)
{
	NDK_FN_CLOSE_COMPLETION on_closed = OnClosed;
	struct waiter w;

	waiter_init(&w);
	CHECK(waiter_result(&w, close_fn(object, on_closed, &w)) ==
	      STATUS_SUCCESS);
}

/* ------------------------------------------------------------------ */

static void check_adapter_info(NDK_ADAPTER *ad)
{
	NDK_FN_QUERY_ADAPTER_INFO query_info =
		ad->Dispatch->NdkQueryAdapterInfo;
	struct _NDK_ADAPTER_INFO info;
	enum _NDK_RDMA_TECHNOLOGY technology;
	ULONG size = 0;

	CHECK(query_info(ad, NULL, &size) == STATUS_BUFFER_TOO_SMALL);
	CHECK(size == sizeof(NDK_ADAPTER_INFO));
	memset(&info, 0, sizeof(info));
	CHECK(query_info(ad, &info, &size) == STATUS_SUCCESS);
	CHECK(size == sizeof(info));

	technology = info.RdmaTechnology;
	CHECK(technology == NdkiWarp);
	CHECK(info.Version.Major == 2 && info.Version.Minor == 1);
	CHECK(info.MaxRegistrationSize > 0 && info.MaxWindowSize > 0);
	CHECK(info.MaxCqDepth >= 64 && info.MaxSrqDepth >= 16);
	CHECK(info.MaxReceiveQueueDepth >= 16);
	CHECK(info.MaxInitiatorQueueDepth >= 16);
	CHECK(info.MaxReceiveRequestSge >= 1);
	CHECK(info.MaxInitiatorRequestSge >= 1);
	CHECK(info.MaxInboundReadLimit >= 1 && info.MaxOutboundReadLimit >= 1);
	CHECK(info.MaxCallerData >= 1 && info.MaxCalleeData >= 1);
	CHECK(info.AdapterFlags & NDK_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED);
	CHECK(info.AdapterFlags &
	      NDK_ADAPTER_FLAG_LOOPBACK_CONNECTIONS_SUPPORTED);
}

/* No extension interface exists, on any object. */
static void check_query_extension(NDK_FN_QUERY_EXTENSION_INTERFACE query_ext,
				  NDK_OBJECT_HEADER *object,
				  NDK_VERSION version)
{
	GUID id = { 0x6e646b63,
		    0x6f6d,
		    0x7061,
		    { 0x74, 0x20, 0x74, 0x65, 0x73, 0x74, 0x00, 0x01 } };
	GUID *pId = &id;
	NDK_EXTENSION_INTERFACE ext;

	memset(&ext, 0, sizeof(ext));
	CHECK(query_ext(object, pId, version, &ext) == STATUS_NOT_SUPPORTED);
}

int main(void)
{
	NDK_VERSION version = { 2, 0 };
	NDK_ADAPTER *ad = NULL;
	NDK_CQ *cq = NULL;
	NDK_PD *pd = NULL;
	NDK_SRQ *srq = NULL;
	NDK_QP *qp = NULL;
	NDK_LISTENER *listener = NULL;
	struct waiter w, cq_events, srq_events, connects;
	enum _NDK_OBJECT_TYPE type;

	/* Callbacks held in NDK_FN_* variables, as a consumer keeps them. */
	NDK_FN_CREATE_COMPLETION created = OnCreated;
	NDK_FN_REQUEST_COMPLETION done = OnDone;
	NDK_FN_CQ_NOTIFICATION_CALLBACK cq_notify = OnCqNotify;
	NDK_FN_SRQ_NOTIFICATION_CALLBACK srq_notify = OnSrqNotify;
	NDK_FN_CONNECT_EVENT_CALLBACK connect_event = OnConnectEvent;
	NDK_FN_DISCONNECT_EVENT_CALLBACK disconnect = OnDisconnect;
	NDK_FN_DISCONNECT_EVENT_CALLBACK_EX disconnect_ex = OnDisconnectEx;

	waiter_init(&w);
	waiter_init(&cq_events);
	waiter_init(&srq_events);
	waiter_init(&connects);

	CHECK(NdkOpenAdapter(version, if_nametoindex("lo"), &ad) ==
	      STATUS_SUCCESS);
	type = ad->Header.ObjectType;
	CHECK(type == NdkObjectTypeAdapter);
	check_adapter_info(ad);
	check_query_extension(ad->Dispatch->NdkQueryExtension, &ad->Header,
			      version);

	/* CQ: created, resized and read through NDK_FN_* variables. */
	{
		NDK_FN_CREATE_CQ create_cq = ad->Dispatch->NdkCreateCq;
		NDK_FN_RESIZE_CQ resize_cq;
		NDK_FN_ARM_CQ arm_cq;
		NDK_FN_GET_CQ_RESULTS_EX get_results;
		struct _NDK_RESULT_EX results[2];

		waiter_reset(&w);
		CHECK(waiter_result(&w, create_cq(ad, 64, cq_notify, &cq_events,
						  NULL, created, &w, &cq)) ==
		      STATUS_SUCCESS);
		if (w.object)
			cq = (NDK_CQ *)w.object;
		CHECK(cq != NULL);
		type = cq->Header.ObjectType;
		CHECK(type == NdkObjectTypeCq);

		resize_cq = cq->Dispatch->NdkResizeCq;
		waiter_reset(&w);
		CHECK(waiter_result(&w, resize_cq(cq, 128, done, &w)) ==
		      STATUS_SUCCESS);
		arm_cq = cq->Dispatch->NdkArmCq;
		arm_cq(cq, NDK_CQ_NOTIFY_ANY);
		get_results = cq->Dispatch->NdkGetCqResultsEx;
		CHECK(get_results(cq, results, 2) == 0);
	}

	/* PD, then a dispatch table of the consumer's own in place of its. */
	{
		NDK_FN_CREATE_PD create_pd = ad->Dispatch->NdkCreatePd;
		NDK_FN_GET_PRIVILEGED_MEMORY_REGION_TOKEN get_token;
		const NDK_PD_DISPATCH *provided;
		static NDK_PD_DISPATCH mine;
		UINT32 token = 0, again = 0;

		waiter_reset(&w);
		CHECK(waiter_result(&w, create_pd(ad, created, &w, &pd)) ==
		      STATUS_SUCCESS);
		if (w.object)
			pd = (NDK_PD *)w.object;
		CHECK(pd != NULL);
		type = pd->Header.ObjectType;
		CHECK(type == NdkObjectTypePd);

		get_token = pd->Dispatch->NdkGetPrivilegedMemoryRegionToken;
		get_token(pd, &token);
		get_token(pd, &again);
		CHECK(token == again);

		provided = pd->Dispatch;
		provider_close_pd = provided->NdkClosePd;
		provider_query_ext = provided->NdkQueryExtension;
		NDK_PD_DISPATCH table = {
			.NdkClosePd = CountingClosePd,
			.NdkQueryExtension = ForwardQueryExtension,
			.NdkCreateMr = provided->NdkCreateMr,
			.NdkCreateMw = provided->NdkCreateMw,
			.NdkCreateSrq = provided->NdkCreateSrq,
			.NdkCreateQp = provided->NdkCreateQp,
			.NdkCreateQpWithSrq = provided->NdkCreateQpWithSrq,
			.NdkGetPrivilegedMemoryRegionToken =
				provided->NdkGetPrivilegedMemoryRegionToken,
		};
		mine = table;
		pd->Dispatch = &mine;
		check_query_extension(pd->Dispatch->NdkQueryExtension,
				      &pd->Header, version);
		CHECK(ext_queries == 1);
	}

	/* SRQ and QP on the PD and the CQ. */
	{
		NDK_FN_CREATE_SRQ create_srq = pd->Dispatch->NdkCreateSrq;
		NDK_FN_CREATE_QP create_qp = pd->Dispatch->NdkCreateQp;

		waiter_reset(&w);
		CHECK(waiter_result(&w, create_srq(pd, 16, 1, 0, srq_notify,
						   &srq_events, NULL, created,
						   &w, &srq)) ==
		      STATUS_SUCCESS);
		if (w.object)
			srq = (NDK_SRQ *)w.object;
		CHECK(srq != NULL &&
		      srq->Header.ObjectType == NdkObjectTypeSrq);

		waiter_reset(&w);
		CHECK(waiter_result(&w, create_qp(pd, cq, cq, (PVOID)&qp, 16,
						  16, 1, 1, 0, created, &w,
						  &qp)) == STATUS_SUCCESS);
		if (w.object)
			qp = (NDK_QP *)w.object;
		CHECK(qp != NULL && qp->Header.ObjectType == NdkObjectTypeQp);
	}

	/*
	 * Work requests on the unconnected QP: a send is refused inline, a
	 * receive may be posted and a flush completes it as cancelled.
	 */
	{
		NDK_FN_SEND send = qp->Dispatch->NdkSend;
		NDK_FN_RECEIVE receive = qp->Dispatch->NdkReceive;
		NDK_FN_FLUSH flush = qp->Dispatch->NdkFlush;
		NDK_FN_GET_CQ_RESULTS_EX get_results =
			cq->Dispatch->NdkGetCqResultsEx;
		struct _NDK_SGE sge;
		struct _NDK_RESULT_EX result;
		enum _NDK_OPERATION_TYPE op;

		memset(&sge, 0, sizeof(sge));
		CHECK(send(qp, NULL, &sge, 1, 0) == STATUS_CONNECTION_INVALID);
		CHECK(receive(qp, (PVOID)&sge, &sge, 1) == STATUS_SUCCESS);
		flush(qp);
		memset(&result, 0, sizeof(result));
		CHECK(get_results(cq, &result, 1) == 1);
		op = result.Type;
		CHECK(op == NdkOperationTypeReceive);
		CHECK(result.Status == STATUS_CANCELLED);
		CHECK(result.QPContext == (PVOID)&qp);
		CHECK(result.RequestContext == (PVOID)&sge);
		/* The CQ was armed for any completion: one notification. */
		CHECK(waiter_result(&cq_events, STATUS_PENDING) ==
		      STATUS_SUCCESS);
	}

	/* A listener holds the connect event callback. */
	{
		NDK_FN_CREATE_LISTENER create_listener =
			ad->Dispatch->NdkCreateListener;

		waiter_reset(&w);
		CHECK(waiter_result(&w, create_listener(ad, connect_event,
							&connects, created, &w,
							&listener)) ==
		      STATUS_SUCCESS);
		if (w.object)
			listener = (NDK_LISTENER *)w.object;
		CHECK(listener != NULL &&
		      listener->Header.ObjectType == NdkObjectTypeListener);
	}

	/* The disconnect callbacks run as the provider would call them. */
	waiter_reset(&w);
	disconnect(&w);
	disconnect_ex(&w, 7);
	CHECK(waiter_count(&w) == 2 && w.reason == 7);

	/* Successors first, each through its NDK_FN_CLOSE_OBJECT entry. */
	close_object(listener->Dispatch->NdkCloseListener, &listener->Header);
	close_object(qp->Dispatch->NdkCloseQp, &qp->Header);
	close_object(srq->Dispatch->NdkCloseSrq, &srq->Header);
	close_object(cq->Dispatch->NdkCloseCq, &cq->Header);
	close_object(pd->Dispatch->NdkClosePd, &pd->Header);
	CHECK(pd_closes == 1);
	NdkCloseAdapter(ad);

	/* No other event: one CQ notification, no SRQ or connect event. */
	CHECK(waiter_count(&cq_events) == 1);
	CHECK(waiter_count(&srq_events) == 0);
	CHECK(waiter_count(&connects) == 0);
	printf("compat: %u checks passed\n", checks);
	return 0;
}
