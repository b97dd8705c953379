/* SPDX-License-Identifier: MIT */
/*
 * NDKPI 2.1: objects, dispatch tables, function and callback types, flags
 * and results, with the Windows names, parameter order and x64 layouts.
 * Source written against Microsoft's ndkpi.h compiles against this one:
 * the same type names and tags (enum _NDK_OBJECT_TYPE, struct _NDK_SGE),
 * NDK_FN_xxx pointer types and dispatch members "NDK_FN_xxx Ndkxxx;".
 *
 * Every object is { NDK_OBJECT_HEADER Header; const NDK_xxx_DISPATCH
 * *Dispatch; } and every operation is a call through Dispatch. The
 * consumer may overwrite Dispatch; the provider never reads it back.
 */
#ifndef NDK_NDKPI_H
#define NDK_NDKPI_H

#include "ndk/types.h"
#include "ndk/ntstatus.h"
#include "ndk/ndkinfo.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ */
/* Object header                                                      */

typedef enum _NDK_OBJECT_TYPE {
	NdkObjectTypeUndefined = 0,
	NdkObjectTypeAdapter = 1,
	NdkObjectTypeQp = 2,
	NdkObjectTypeCq = 3,
	NdkObjectTypeMr = 4,
	NdkObjectTypeMw = 5,
	NdkObjectTypePd = 6,
	NdkObjectTypeSharedEndpoint = 7,
	NdkObjectTypeConnector = 8,
	NdkObjectTypeListener = 9,
	NdkObjectTypeSrq = 10,
	NdkObjectTypeMax = 11
} NDK_OBJECT_TYPE;

typedef struct _NDK_OBJECT_HEADER_RESERVED_BLOCK {
	PVOID rf[4];
} NDK_OBJECT_HEADER_RESERVED_BLOCK;

typedef struct _NDK_OBJECT_HEADER {
	NDK_VERSION Version;
	NDK_OBJECT_TYPE ObjectType;
	NDK_OBJECT_HEADER_RESERVED_BLOCK NdkReserved;
} NDK_OBJECT_HEADER;

typedef struct _NDK_EXTENSION_INTERFACE {
	CONST VOID *Dispatch;
} NDK_EXTENSION_INTERFACE;

typedef struct _NDK_ADAPTER NDK_ADAPTER;
typedef struct _NDK_CQ NDK_CQ;
typedef struct _NDK_PD NDK_PD;
typedef struct _NDK_MR NDK_MR;
typedef struct _NDK_MW NDK_MW;
typedef struct _NDK_SRQ NDK_SRQ;
typedef struct _NDK_QP NDK_QP;
typedef struct _NDK_CONNECTOR NDK_CONNECTOR;
typedef struct _NDK_LISTENER NDK_LISTENER;
typedef struct _NDK_SHARED_ENDPOINT NDK_SHARED_ENDPOINT;

/* ------------------------------------------------------------------ */
/* Data-path types                                                    */

typedef PHYSICAL_ADDRESS NDK_LOGICAL_ADDRESS;

typedef struct _NDK_SGE {
	union {
		PVOID VirtualAddress;
		NDK_LOGICAL_ADDRESS LogicalAddress;
	};
	ULONG Length;
	UINT32 MemoryRegionToken;
} NDK_SGE;

typedef struct _NDK_LOGICAL_ADDRESS_MAPPING {
	PVOID AdapterContext;
	ULONG AdapterPageCount;
	NDK_LOGICAL_ADDRESS AdapterPageArray[1];
} NDK_LOGICAL_ADDRESS_MAPPING;

typedef enum _NDK_OPERATION_TYPE {
	NdkOperationTypeReceive = 0x0001,
	NdkOperationTypeSend = 0x0002,
	NdkOperationTypeFastRegister = 0x0004,
	NdkOperationTypeBind = 0x0008,
	NdkOperationTypeInvalidate = 0x0010,
	NdkOperationTypeRead = 0x0020,
	NdkOperationTypeWrite = 0x0040,
	NdkOperationTypeReceiveAndInvalidate = 0x8001
} NDK_OPERATION_TYPE;

typedef struct _NDK_RESULT {
	NTSTATUS Status;
	ULONG BytesTransferred;
	PVOID QPContext;
	PVOID RequestContext;
} NDK_RESULT;

typedef struct _NDK_RESULT_EX {
	NTSTATUS Status;
	ULONG BytesTransferred;
	PVOID QPContext;
	PVOID RequestContext;
	NDK_OPERATION_TYPE Type;
	ULONG ProviderErrorCode;
	ULONG_PTR TypeSpecificCompletionOutput;
} NDK_RESULT_EX;

/* NdkRegisterMr flags */
#define NDK_MR_FLAG_ALLOW_LOCAL_READ   0x00000000
#define NDK_MR_FLAG_ALLOW_LOCAL_WRITE  0x00000001
#define NDK_MR_FLAG_ALLOW_REMOTE_READ  0x00000002
#define NDK_MR_FLAG_ALLOW_REMOTE_WRITE 0x00000005
#define NDK_MR_FLAG_RDMA_READ_SINK     0x00000008

/* Work-request flags */
#define NDK_OP_FLAG_SILENT_SUCCESS	       0x00000001
#define NDK_OP_FLAG_READ_FENCE		       0x00000002
#define NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT     0x00000004
#define NDK_OP_FLAG_ALLOW_REMOTE_READ	       0x00000008
#define NDK_OP_FLAG_ALLOW_LOCAL_WRITE	       0x00000010
#define NDK_OP_FLAG_ALLOW_REMOTE_WRITE	       0x00000030
#define NDK_OP_FLAG_INLINE		       0x00000040
#define NDK_OP_FLAG_RDMA_READ_SINK	       0x00000080
#define NDK_OP_FLAG_RDMA_READ_LOCAL_INVALIDATE 0x00000100
#define NDK_OP_FLAG_DEFER		       0x00000200

/* NdkArmCq types */
#define NDK_CQ_NOTIFY_ERRORS	0
#define NDK_CQ_NOTIFY_ANY	1
#define NDK_CQ_NOTIFY_SOLICITED 2

/* ------------------------------------------------------------------ */
/*
 * Function types. As in Windows, every NDK_FN_xxx is a pointer to a
 * function, so a consumer can hold one in a variable of that type and a
 * dispatch table slot is declared "NDK_FN_xxx Ndkxxx;". The parameter names
 * are those of the Microsoft page for each type (e.g. "NDK_FN_SEND"); the
 * IRQL and SAL annotations have no meaning here and are left out.
 */

/* Consumer callbacks */
/*
 * Completes a create that returned STATUS_PENDING (libndk creates inline, so
 * it is never called); on success pNdkObject is the new object.
 */
typedef VOID (*NDK_FN_CREATE_COMPLETION)(PVOID Context, NTSTATUS Status,
					 NDK_OBJECT_HEADER *pNdkObject);
/*
 * Completes a call that returned STATUS_PENDING, exactly once, on the
 * adapter's engine thread. Any other return means no callback follows.
 */
typedef VOID (*NDK_FN_REQUEST_COMPLETION)(PVOID Context, NTSTATUS Status);
/*
 * Completes a close that returned STATUS_PENDING: the object's last
 * callback. The consumer may free its context here.
 */
typedef VOID (*NDK_FN_CLOSE_COMPLETION)(PVOID Context);

/*
 * A connection request reached a listener: pNdkConnector is a new
 * connector the consumer now owns (NdkGetConnectionData, then NdkAccept(Ex)
 * or NdkReject, or close it). Runs on the engine thread; do not block.
 */
typedef VOID (*NDK_FN_CONNECT_EVENT_CALLBACK)(PVOID ConnectEventContext,
					      NDK_CONNECTOR *pNdkConnector);
/*
 * The peer ended an established connection; raised once. Nothing is
 * flushed: the consumer calls NdkDisconnect, NdkFlush or closes.
 */
typedef VOID (*NDK_FN_DISCONNECT_EVENT_CALLBACK)(PVOID DisconnectEventContext);
/*
 * As above, with why (0: the peer's disconnect; STATUS_CONNECTION_RESET,
 * STATUS_CONNECTION_ABORTED for a Terminate, STATUS_IO_TIMEOUT for a dead
 * peer).
 */
typedef VOID (*NDK_FN_DISCONNECT_EVENT_CALLBACK_EX)(
	PVOID DisconnectEventContext, ULONG ProviderDisconnectReason);
/*
 * One notification per NdkArmCq, on the engine thread. CqStatus is
 * STATUS_SUCCESS, or STATUS_BUFFER_OVERFLOW for a CQ that overflowed (dead).
 * Polling (NdkGetCqResults) from inside it is allowed.
 */
typedef VOID (*NDK_FN_CQ_NOTIFICATION_CALLBACK)(PVOID CqNotificationContext,
						NTSTATUS CqStatus);
/*
 * The SRQ's entries fell below the limit set by NdkModifySrq; one
 * notification per limit set.
 */
typedef VOID (*NDK_FN_SRQ_NOTIFICATION_CALLBACK)(PVOID SrqNotificationContext,
						 NTSTATUS SrqStatus);

/* Every object */
/*
 * Every NdkCloseXxx. STATUS_SUCCESS: closed, no callback. STATUS_PENDING:
 * successors are still open or requests are in flight; CloseCompletion
 * follows. Never fails. Pending requests are cancelled or flushed first.
 */
typedef NTSTATUS (*NDK_FN_CLOSE_OBJECT)(NDK_OBJECT_HEADER *pNdkObject,
					NDK_FN_CLOSE_COMPLETION CloseCompletion,
					PVOID RequestContext);
/* No extensions exist: STATUS_NOT_SUPPORTED. */
typedef NTSTATUS (*NDK_FN_QUERY_EXTENSION_INTERFACE)(
	NDK_OBJECT_HEADER *pNdkObject, GUID *ExtensionInterfaceID,
	NDK_VERSION ExtensionInterfaceVersion,
	NDK_EXTENSION_INTERFACE *pExtensionInterface);

/* Adapter */
/*
 * Copies NDK_ADAPTER_INFO, inline. The limits every other call is checked
 * against; a device limit shows here before a call trips on it.
 */
typedef NTSTATUS (*NDK_FN_QUERY_ADAPTER_INFO)(NDK_ADAPTER *pNdkAdapter,
					      NDK_ADAPTER_INFO *pInfo,
					      ULONG *pBufferSize);
/*
 * Inline. The notification callback is required (NULL is
 * STATUS_INVALID_PARAMETER); CqDepth up to MaxCqDepth.
 */
typedef NTSTATUS (*NDK_FN_CREATE_CQ)(
	NDK_ADAPTER *pNdkAdapter, ULONG CqDepth,
	NDK_FN_CQ_NOTIFICATION_CALLBACK CqNotification,
	PVOID CqNotificationContext, GROUP_AFFINITY *Affinity,
	NDK_FN_CREATE_COMPLETION CreateCompletion, PVOID RequestContext,
	NDK_CQ **ppNdkCq);
/* Inline. */
typedef NTSTATUS (*NDK_FN_CREATE_PD)(NDK_ADAPTER *pNdkAdapter,
				     NDK_FN_CREATE_COMPLETION CreateCompletion,
				     PVOID RequestContext, NDK_PD **ppNdkPd);
/*
 * Reserves a local address for several connectors; inline.
 * STATUS_SHARING_VIOLATION or STATUS_ADDRESS_ALREADY_EXISTS if taken.
 */
typedef NTSTATUS (*NDK_FN_CREATE_SHARED_ENDPOINT)(
	NDK_ADAPTER *pNdkAdapter, CONST PSOCKADDR pAddress, ULONG AddressLength,
	NDK_FN_CREATE_COMPLETION CreateCompletion, PVOID RequestContext,
	NDK_SHARED_ENDPOINT **ppNdkSharedEndpoint);
/* Inline; the connector starts idle. */
typedef NTSTATUS (*NDK_FN_CREATE_CONNECTOR)(
	NDK_ADAPTER *pNdkAdapter, NDK_FN_CREATE_COMPLETION CreateCompletion,
	PVOID RequestContext, NDK_CONNECTOR **ppNdkConnector);
/*
 * Inline; ConnectEventHandler receives each incoming connector after
 * NdkListen.
 */
typedef NTSTATUS (*NDK_FN_CREATE_LISTENER)(
	NDK_ADAPTER *pNdkAdapter, NDK_FN_CONNECT_EVENT_CALLBACK ConnectEvent,
	PVOID ConnectEventContext, NDK_FN_CREATE_COMPLETION CreateCompletion,
	PVOID RequestContext, NDK_LISTENER **ppNdkListener);
/*
 * Maps Mdl's pages to logical addresses for SGEs with the privileged token.
 * Completes inline in libndk: RequestCompletion is never called.
 */
typedef NTSTATUS (*NDK_FN_BUILD_LAM)(
	NDK_ADAPTER *pNdkAdapter, MDL *Mdl, SIZE_T Length,
	NDK_FN_REQUEST_COMPLETION RequestCompletion, PVOID RequestContext,
	NDK_LOGICAL_ADDRESS_MAPPING *pNdkLAM, ULONG *pLAMSize, ULONG *pFBO);
/* Returns a LAM from NdkBuildLAM. */
typedef VOID (*NDK_FN_RELEASE_LAM)(NDK_ADAPTER *pNdkAdapter,
				   NDK_LOGICAL_ADDRESS_MAPPING *pNdkLAM);

/* CQ */
/*
 * Only if AdapterFlags has NDK_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED, else
 * STATUS_NOT_SUPPORTED. Inline; refuses a depth below the queued entries.
 */
typedef NTSTATUS (*NDK_FN_RESIZE_CQ)(
	NDK_CQ *pNdkCq, ULONG CqDepth,
	NDK_FN_REQUEST_COMPLETION RequestCompletion, PVOID RequestContext);
/*
 * Requests one notification: NDK_CQ_NOTIFY_ERRORS, _ANY or _SOLICITED
 * (merged: ANY > SOLICITED > ERRORS). Serialise with NdkGetCqResults.
 */
typedef VOID (*NDK_FN_ARM_CQ)(NDK_CQ *pNdkCq, ULONG Type);
/* Returns up to nResults completions, never blocks. Serialise per CQ. */
typedef ULONG (*NDK_FN_GET_CQ_RESULTS)(NDK_CQ *pNdkCq, NDK_RESULT Results[],
				       ULONG nResults);
/* As NdkGetCqResults, with the operation type and the invalidated token. */
typedef ULONG (*NDK_FN_GET_CQ_RESULTS_EX)(NDK_CQ *pNdkCq,
					  NDK_RESULT_EX Results[],
					  ULONG nResults);
/* Only with NDK_ADAPTER_FLAG_CQ_INTERRUPT_MODERATION_SUPPORTED. */
typedef NTSTATUS (*NDK_FN_CONTROL_CQ_INTERRUPT_MODERATION)(
	NDK_CQ *pNdkCq, ULONG ModerationInterval, ULONG ModerationCount);

/* PD */
/*
 * Inline. FastRegister chooses fast registration (NdkInitializeFastRegisterMr,
 * NdkFastRegister) over NdkRegisterMr; an MR does one or the other.
 */
typedef NTSTATUS (*NDK_FN_CREATE_MR)(NDK_PD *pNdkPd, BOOLEAN FastRegister,
				     NDK_FN_CREATE_COMPLETION CreateCompletion,
				     PVOID RequestContext, NDK_MR **ppNdkMr);
/* Inline; STATUS_NOT_SUPPORTED where MaxWindowSize is 0. */
typedef NTSTATUS (*NDK_FN_CREATE_MW)(NDK_PD *pNdkPd,
				     NDK_FN_CREATE_COMPLETION CreateCompletion,
				     PVOID RequestContext, NDK_MW **ppNdkMw);
/* Inline; limits from NDK_ADAPTER_INFO (MaxSrqDepth, MaxReceiveRequestSge). */
typedef NTSTATUS (*NDK_FN_CREATE_SRQ)(
	NDK_PD *pNdkPd, ULONG SrqDepth, ULONG MaxReceiveRequestSge,
	ULONG NotifyThreshold, NDK_FN_SRQ_NOTIFICATION_CALLBACK SrqNotification,
	PVOID SrqNotificationContext, GROUP_AFFINITY *Affinity,
	NDK_FN_CREATE_COMPLETION CreateCompletion, PVOID RequestContext,
	NDK_SRQ **ppNdkSrq);
/*
 * Inline. Every depth and SGE count is checked against NDK_ADAPTER_INFO
 * (STATUS_INVALID_PARAMETER above a limit); the CQs must be CQs.
 */
typedef NTSTATUS (*NDK_FN_CREATE_QP)(
	NDK_PD *pNdkPd, NDK_CQ *pReceiveCq, NDK_CQ *pInitiatorCq,
	PVOID QPContext, ULONG ReceiveQueueDepth, ULONG InitiatorQueueDepth,
	ULONG MaxReceiveRequestSge, ULONG MaxInitiatorRequestSge,
	ULONG InlineDataSize, NDK_FN_CREATE_COMPLETION CreateCompletion,
	PVOID RequestContext, NDK_QP **ppNdkQp);
/* As NdkCreateQp; receives come from the SRQ. */
typedef NTSTATUS (*NDK_FN_CREATE_QP_WITH_SRQ)(
	NDK_PD *pNdkPd, NDK_CQ *pReceiveCq, NDK_CQ *pInitiatorCq, NDK_SRQ *pSrq,
	PVOID QPContext, ULONG InitiatorQueueDepth,
	ULONG MaxInitiatorRequestSge, ULONG InlineDataSize,
	NDK_FN_CREATE_COMPLETION CreateCompletion, PVOID RequestContext,
	NDK_QP **ppNdkQp);
/* The token for SGEs that carry logical addresses (NdkBuildLAM). */
typedef VOID (*NDK_FN_GET_PRIVILEGED_MEMORY_REGION_TOKEN)(NDK_PD *pNdkPd,
							  UINT32 *pToken);

/* MR and MW */
/*
 * Registers Mdl with the NDK_MR_FLAG_* access; completes inline in libndk.
 * Remote access is granted only if asked for.
 */
typedef NTSTATUS (*NDK_FN_REGISTER_MR)(
	NDK_MR *pNdkMr, MDL *Mdl, SIZE_T Length, ULONG Flags,
	NDK_FN_REQUEST_COMPLETION RequestCompletion, PVOID RequestContext);
/* Inline; STATUS_INVALID_DEVICE_STATE if the MR is not registered. */
typedef NTSTATUS (*NDK_FN_DEREGISTER_MR)(
	NDK_MR *pNdkMr, NDK_FN_REQUEST_COMPLETION RequestCompletion,
	PVOID RequestContext);
/*
 * Sizes a fast-register MR for AdapterPageCount pages
 * (FRMRPageCount at most); inline.
 */
typedef NTSTATUS (*NDK_FN_INITIALIZE_FAST_REGISTER_MR)(
	NDK_MR *pNdkMr, ULONG AdapterPageCount, BOOLEAN RemoteAccess,
	NDK_FN_REQUEST_COMPLETION RequestCompletion, PVOID RequestContext);
/*
 * Valid once the registration has completed; each registration,
 * fast registration or bind makes a new one.
 */
typedef UINT32 (*NDK_FN_GET_REMOTE_TOKEN_FROM_MR)(NDK_MR *pNdkMr);
typedef UINT32 (*NDK_FN_GET_LOCAL_TOKEN_FROM_MR)(NDK_MR *pNdkMr);
/* Valid once NdkBind has returned. */
typedef UINT32 (*NDK_FN_GET_REMOTE_TOKEN_FROM_MW)(NDK_MW *pNdkMw);

/* SRQ */
/* Inline: a new depth and the notification threshold. */
typedef NTSTATUS (*NDK_FN_MODIFY_SRQ)(
	NDK_SRQ *pNdkSrq, ULONG SrqDepth, ULONG NotifyThreshold,
	NDK_FN_REQUEST_COMPLETION RequestCompletion, PVOID RequestContext);
/* Posts a receive to the SRQ; may come from any thread, one at a time. */
typedef NTSTATUS (*NDK_FN_SRQ_RECEIVE)(NDK_SRQ *pNdkSrq, PVOID RequestContext,
				       CONST NDK_SGE *pSgl, ULONG nSge);

/* QP */
/*
 * Cancels every pending request of the QP; each completes STATUS_CANCELLED
 * through the CQ, in queue order. Returns before they have completed.
 */
typedef VOID (*NDK_FN_FLUSH)(NDK_QP *pNdkQp);
/*
 * Data-path posts (Send, SendAndInvalidate, Receive, Bind, FastRegister,
 * Invalidate, Read, Write): STATUS_SUCCESS inline means one CQ completion
 * follows (none for a successful SILENT_SUCCESS); any other return means
 * none follows. One thread per queue at a time. Initiator requests on a QP
 * that is not connected: STATUS_CONNECTION_INVALID. NDK_OP_FLAG_DEFER holds
 * the request until one posted without it.
 */
typedef NTSTATUS (*NDK_FN_SEND)(NDK_QP *pNdkQp, PVOID RequestContext,
				CONST NDK_SGE *pSgl, ULONG nSge, ULONG Flags);
typedef NTSTATUS (*NDK_FN_SEND_AND_INVALIDATE)(NDK_QP *pNdkQp,
					       PVOID RequestContext,
					       CONST NDK_SGE *pSgl, ULONG nSge,
					       ULONG Flags, UINT32 RemoteToken);
/* May be posted before the connection exists. */
typedef NTSTATUS (*NDK_FN_RECEIVE)(NDK_QP *pNdkQp, PVOID RequestContext,
				   CONST NDK_SGE *pSgl, ULONG nSge);
/* Binds an MW inside an MR; the MW's new token is readable on return. */
typedef NTSTATUS (*NDK_FN_BIND)(NDK_QP *pNdkQp, PVOID RequestContext,
				NDK_MR *pMr, NDK_MW *pMw, PVOID VirtualAddress,
				SIZE_T Length, ULONG Flags);
/* The MR's new token is readable on return; completes in order. */
typedef NTSTATUS (*NDK_FN_FAST_REGISTER)(
	NDK_QP *pNdkQp, PVOID RequestContext, NDK_MR *pMr,
	ULONG AdapterPageCount, CONST NDK_LOGICAL_ADDRESS *AdapterPageArray,
	ULONG FBO, SIZE_T Length, PVOID BaseVirtualAddress, ULONG Flags);
/*
 * Fast-register MRs and MWs only (a normal MR completes
 * STATUS_INVALID_DEVICE_REQUEST).
 */
typedef NTSTATUS (*NDK_FN_INVALIDATE)(NDK_QP *pNdkQp, PVOID RequestContext,
				      NDK_OBJECT_HEADER *pNdkMrOrMw,
				      ULONG Flags);
/* At most the connection's ORD Reads are outstanding; more wait their turn. */
typedef NTSTATUS (*NDK_FN_READ)(NDK_QP *pNdkQp, PVOID RequestContext,
				CONST NDK_SGE *pSgl, ULONG nSge,
				UINT64 RemoteAddress, UINT32 RemoteToken,
				ULONG Flags);
typedef NTSTATUS (*NDK_FN_WRITE)(NDK_QP *pNdkQp, PVOID RequestContext,
				 CONST NDK_SGE *pSgl, ULONG nSge,
				 UINT64 RemoteAddress, UINT32 RemoteToken,
				 ULONG Flags);

/* Connector */
/*
 * STATUS_PENDING, then RequestCompletion: STATUS_SUCCESS (read the peer's
 * data with NdkGetConnectionData, then NdkCompleteConnect(Ex)),
 * STATUS_CONNECTION_REFUSED (the reject's private data stays readable),
 * STATUS_IO_TIMEOUT, unreachable statuses. Bad arguments and oversized
 * private data (MaxCallerData) fail inline.
 */
typedef NTSTATUS (*NDK_FN_CONNECT)(
	NDK_CONNECTOR *pNdkConnector, NDK_QP *pNdkQp,
	CONST PSOCKADDR pSrcAddress, ULONG SrcAddressLength,
	CONST PSOCKADDR pDestAddress, ULONG DestAddressLength,
	ULONG InboundReadLimit, ULONG OutboundReadLimit,
	CONST PVOID pPrivateData, ULONG PrivateDataLength,
	NDK_FN_REQUEST_COMPLETION RequestCompletion, PVOID RequestContext);
/* As NdkConnect, from a shared endpoint's address. */
typedef NTSTATUS (*NDK_FN_CONNECT_WITH_SHARED_ENDPOINT)(
	NDK_CONNECTOR *pNdkConnector, NDK_QP *pNdkQp,
	NDK_SHARED_ENDPOINT *pNdkSharedEndpoint, CONST PSOCKADDR pDestAddress,
	ULONG DestAddressLength, ULONG InboundReadLimit,
	ULONG OutboundReadLimit, CONST PVOID pPrivateData,
	ULONG PrivateDataLength, NDK_FN_REQUEST_COMPLETION RequestCompletion,
	PVOID RequestContext);
/*
 * Ends the active side's handshake after a successful Connect;
 * completes inline in libndk. Without it the passive Accept times out.
 */
typedef NTSTATUS (*NDK_FN_COMPLETE_CONNECT)(
	NDK_CONNECTOR *pNdkConnector,
	NDK_FN_DISCONNECT_EVENT_CALLBACK DisconnectEvent,
	PVOID DisconnectEventContext,
	NDK_FN_REQUEST_COMPLETION RequestCompletion, PVOID RequestContext);
/* As NdkCompleteConnect, with an Ex disconnect callback (reasons). */
typedef NTSTATUS (*NDK_FN_COMPLETE_CONNECT_EX)(
	NDK_CONNECTOR *pNdkConnector,
	NDK_FN_DISCONNECT_EVENT_CALLBACK_EX DisconnectEvent,
	PVOID DisconnectEventContext,
	NDK_FN_REQUEST_COMPLETION RequestCompletion, PVOID RequestContext);
/*
 * STATUS_PENDING, then RequestCompletion: STATUS_SUCCESS once the active
 * side completed its connect, STATUS_CONNECTION_ABORTED if it left,
 * STATUS_IO_TIMEOUT if it never completed. Private data up to
 * MaxCalleeData.
 */
typedef NTSTATUS (*NDK_FN_ACCEPT)(
	NDK_CONNECTOR *pNdkConnector, NDK_QP *pNdkQp, ULONG InboundReadLimit,
	ULONG OutboundReadLimit, CONST PVOID pPrivateData,
	ULONG PrivateDataLength,
	NDK_FN_DISCONNECT_EVENT_CALLBACK DisconnectEvent,
	PVOID DisconnectEventContext,
	NDK_FN_REQUEST_COMPLETION RequestCompletion, PVOID RequestContext);
/* As NdkAccept, with an Ex disconnect callback (reasons). */
typedef NTSTATUS (*NDK_FN_ACCEPT_EX)(
	NDK_CONNECTOR *pNdkConnector, NDK_QP *pNdkQp, ULONG InboundReadLimit,
	ULONG OutboundReadLimit, CONST PVOID pPrivateData,
	ULONG PrivateDataLength,
	NDK_FN_DISCONNECT_EVENT_CALLBACK_EX DisconnectEvent,
	PVOID DisconnectEventContext,
	NDK_FN_REQUEST_COMPLETION RequestCompletion, PVOID RequestContext);
/* Refuses an incoming connector, with private data; inline. */
typedef NTSTATUS (*NDK_FN_REJECT)(NDK_CONNECTOR *pNdkConnector,
				  CONST PVOID pPrivateData,
				  ULONG PrivateDataLength);
/*
 * The peer's read limits and private data: on the passive side after the
 * connect event, on the active side after Connect completed (also after a
 * reject). Inline; STATUS_BUFFER_TOO_SMALL tells the size.
 */
typedef NTSTATUS (*NDK_FN_GET_CONNECTION_DATA)(NDK_CONNECTOR *pNdkConnector,
					       ULONG *pInboundReadLimit,
					       ULONG *pOutboundReadLimit,
					       PVOID pPrivateData,
					       ULONG *pPrivateDataLength);
/* The connector's addresses, once it has them; inline. */
typedef NTSTATUS (*NDK_FN_GET_LOCAL_ADDRESS)(NDK_CONNECTOR *pNdkConnector,
					     PSOCKADDR pAddress,
					     ULONG *pAddressLength);
typedef NTSTATUS (*NDK_FN_GET_PEER_ADDRESS)(NDK_CONNECTOR *pNdkConnector,
					    PSOCKADDR pAddress,
					    ULONG *pAddressLength);
/*
 * Graceful: STATUS_PENDING until the PEER disconnects too (its disconnect
 * event fires and it calls NdkDisconnect or closes), or NDK_CM_TIMEOUT_MS
 * (STATUS_IO_TIMEOUT). Then the QP is flushed. Inline if the peer already
 * left.
 */
typedef NTSTATUS (*NDK_FN_DISCONNECT)(
	NDK_CONNECTOR *pNdkConnector,
	NDK_FN_REQUEST_COMPLETION RequestCompletion, PVOID RequestContext);

/* Listener */
/*
 * Inline in libndk: STATUS_SUCCESS, or the address statuses
 * (STATUS_SHARING_VIOLATION, STATUS_INVALID_ADDRESS, ...).
 */
typedef NTSTATUS (*NDK_FN_LISTEN)(NDK_LISTENER *pNdkListener,
				  CONST PSOCKADDR pAddress, ULONG AddressLength,
				  NDK_FN_REQUEST_COMPLETION RequestCompletion,
				  PVOID RequestContext);
/* The listening address, its port chosen if 0 was asked. */
typedef NTSTATUS (*NDK_FN_GET_LISTENER_LOCAL_ADDRESS)(
	NDK_LISTENER *pNdkListener, PSOCKADDR pAddress, ULONG *pAddressLength);
/*
 * Pauses (FALSE) or resumes connect events; requests meanwhile are
 * refused.
 */
typedef VOID (*NDK_FN_CONTROL_CONNECT_EVENTS)(NDK_LISTENER *pNdkListener,
					      BOOLEAN Pause);

/* Shared endpoint */
/* The endpoint's address, its port chosen if 0 was asked. */
typedef NTSTATUS (*NDK_FN_GET_SHARED_ENDPOINT_LOCAL_ADDRESS)(
	NDK_SHARED_ENDPOINT *pNdkSharedEndpoint, PSOCKADDR pAddress,
	ULONG *pAddressLength);

/* ------------------------------------------------------------------ */
/*
 * Dispatch tables, one slot per function in the order of the Microsoft
 * pages "NDK_ADAPTER_DISPATCH", "NDK_CQ_DISPATCH" and so on: a consumer
 * built against ndkpi.h finds every entry at the same offset.
 */

typedef struct _NDK_ADAPTER_DISPATCH {
	NDK_FN_QUERY_EXTENSION_INTERFACE NdkQueryExtension;
	NDK_FN_QUERY_ADAPTER_INFO NdkQueryAdapterInfo;
	NDK_FN_CREATE_CQ NdkCreateCq;
	NDK_FN_CREATE_PD NdkCreatePd;
	NDK_FN_CREATE_SHARED_ENDPOINT NdkCreateSharedEndpoint;
	NDK_FN_CREATE_CONNECTOR NdkCreateConnector;
	NDK_FN_CREATE_LISTENER NdkCreateListener;
	NDK_FN_BUILD_LAM NdkBuildLAM;
	NDK_FN_RELEASE_LAM NdkReleaseLAM;
} NDK_ADAPTER_DISPATCH;

typedef struct _NDK_CQ_DISPATCH {
	NDK_FN_CLOSE_OBJECT NdkCloseCq;
	NDK_FN_QUERY_EXTENSION_INTERFACE NdkQueryExtension;
	NDK_FN_RESIZE_CQ NdkResizeCq;
	NDK_FN_ARM_CQ NdkArmCq;
	NDK_FN_GET_CQ_RESULTS NdkGetCqResults;
	NDK_FN_CONTROL_CQ_INTERRUPT_MODERATION NdkControlCqInterruptModeration;
	NDK_FN_GET_CQ_RESULTS_EX NdkGetCqResultsEx;
} NDK_CQ_DISPATCH;

typedef struct _NDK_PD_DISPATCH {
	NDK_FN_CLOSE_OBJECT NdkClosePd;
	NDK_FN_QUERY_EXTENSION_INTERFACE NdkQueryExtension;
	NDK_FN_CREATE_MR NdkCreateMr;
	NDK_FN_CREATE_MW NdkCreateMw;
	NDK_FN_CREATE_SRQ NdkCreateSrq;
	NDK_FN_CREATE_QP NdkCreateQp;
	NDK_FN_CREATE_QP_WITH_SRQ NdkCreateQpWithSrq;
	NDK_FN_GET_PRIVILEGED_MEMORY_REGION_TOKEN
	NdkGetPrivilegedMemoryRegionToken;
} NDK_PD_DISPATCH;

typedef struct _NDK_MR_DISPATCH {
	NDK_FN_CLOSE_OBJECT NdkCloseMr;
	NDK_FN_QUERY_EXTENSION_INTERFACE NdkQueryExtension;
	NDK_FN_REGISTER_MR NdkRegisterMr;
	NDK_FN_DEREGISTER_MR NdkDeregisterMr;
	NDK_FN_INITIALIZE_FAST_REGISTER_MR NdkInitializeFastRegisterMr;
	NDK_FN_GET_REMOTE_TOKEN_FROM_MR NdkGetRemoteTokenFromMr;
	NDK_FN_GET_LOCAL_TOKEN_FROM_MR NdkGetLocalTokenFromMr;
} NDK_MR_DISPATCH;

typedef struct _NDK_MW_DISPATCH {
	NDK_FN_CLOSE_OBJECT NdkCloseMw;
	NDK_FN_QUERY_EXTENSION_INTERFACE NdkQueryExtension;
	NDK_FN_GET_REMOTE_TOKEN_FROM_MW NdkGetRemoteTokenFromMw;
} NDK_MW_DISPATCH;

typedef struct _NDK_SRQ_DISPATCH {
	NDK_FN_CLOSE_OBJECT NdkCloseSrq;
	NDK_FN_QUERY_EXTENSION_INTERFACE NdkQueryExtension;
	NDK_FN_MODIFY_SRQ NdkModifySrq;
	NDK_FN_SRQ_RECEIVE NdkSrqReceive;
} NDK_SRQ_DISPATCH;

typedef struct _NDK_QP_DISPATCH {
	NDK_FN_CLOSE_OBJECT NdkCloseQp;
	NDK_FN_QUERY_EXTENSION_INTERFACE NdkQueryExtension;
	NDK_FN_FLUSH NdkFlush;
	NDK_FN_SEND NdkSend;
	NDK_FN_RECEIVE NdkReceive;
	NDK_FN_BIND NdkBind;
	NDK_FN_FAST_REGISTER NdkFastRegister;
	NDK_FN_INVALIDATE NdkInvalidate;
	NDK_FN_READ NdkRead;
	NDK_FN_WRITE NdkWrite;
	NDK_FN_SEND_AND_INVALIDATE NdkSendAndInvalidate;
} NDK_QP_DISPATCH;

typedef struct _NDK_CONNECTOR_DISPATCH {
	NDK_FN_CLOSE_OBJECT NdkCloseConnector;
	NDK_FN_QUERY_EXTENSION_INTERFACE NdkQueryExtension;
	NDK_FN_CONNECT NdkConnect;
	NDK_FN_CONNECT_WITH_SHARED_ENDPOINT NdkConnectWithSharedEndpoint;
	NDK_FN_COMPLETE_CONNECT NdkCompleteConnect;
	NDK_FN_ACCEPT NdkAccept;
	NDK_FN_REJECT NdkReject;
	NDK_FN_GET_CONNECTION_DATA NdkGetConnectionData;
	NDK_FN_GET_LOCAL_ADDRESS NdkGetLocalAddress;
	NDK_FN_GET_PEER_ADDRESS NdkGetPeerAddress;
	NDK_FN_DISCONNECT NdkDisconnect;
	NDK_FN_COMPLETE_CONNECT_EX NdkCompleteConnectEx;
	NDK_FN_ACCEPT_EX NdkAcceptEx;
} NDK_CONNECTOR_DISPATCH;

typedef struct _NDK_LISTENER_DISPATCH {
	NDK_FN_CLOSE_OBJECT NdkCloseListener;
	NDK_FN_QUERY_EXTENSION_INTERFACE NdkQueryExtension;
	NDK_FN_LISTEN NdkListen;
	NDK_FN_GET_LISTENER_LOCAL_ADDRESS NdkGetLocalAddress;
	NDK_FN_CONTROL_CONNECT_EVENTS NdkControlConnectEvents;
} NDK_LISTENER_DISPATCH;

typedef struct _NDK_SHARED_ENDPOINT_DISPATCH {
	NDK_FN_CLOSE_OBJECT NdkCloseSharedEndpoint;
	NDK_FN_QUERY_EXTENSION_INTERFACE NdkQueryExtension;
	NDK_FN_GET_SHARED_ENDPOINT_LOCAL_ADDRESS NdkGetLocalAddress;
} NDK_SHARED_ENDPOINT_DISPATCH;

/* ------------------------------------------------------------------ */
/* Objects                                                            */

struct _NDK_ADAPTER {
	NDK_OBJECT_HEADER Header;
	CONST NDK_ADAPTER_DISPATCH *Dispatch;
};
struct _NDK_CQ {
	NDK_OBJECT_HEADER Header;
	CONST NDK_CQ_DISPATCH *Dispatch;
};
struct _NDK_PD {
	NDK_OBJECT_HEADER Header;
	CONST NDK_PD_DISPATCH *Dispatch;
};
struct _NDK_MR {
	NDK_OBJECT_HEADER Header;
	CONST NDK_MR_DISPATCH *Dispatch;
};
struct _NDK_MW {
	NDK_OBJECT_HEADER Header;
	CONST NDK_MW_DISPATCH *Dispatch;
};
struct _NDK_SRQ {
	NDK_OBJECT_HEADER Header;
	CONST NDK_SRQ_DISPATCH *Dispatch;
};
struct _NDK_QP {
	NDK_OBJECT_HEADER Header;
	CONST NDK_QP_DISPATCH *Dispatch;
};
struct _NDK_CONNECTOR {
	NDK_OBJECT_HEADER Header;
	CONST NDK_CONNECTOR_DISPATCH *Dispatch;
};
struct _NDK_LISTENER {
	NDK_OBJECT_HEADER Header;
	CONST NDK_LISTENER_DISPATCH *Dispatch;
};
struct _NDK_SHARED_ENDPOINT {
	NDK_OBJECT_HEADER Header;
	CONST NDK_SHARED_ENDPOINT_DISPATCH *Dispatch;
};

#ifdef __cplusplus
}
#endif

#endif /* NDK_NDKPI_H */
