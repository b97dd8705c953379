/* SPDX-License-Identifier: MIT */
/* NDK_VERSION and NDK_ADAPTER_INFO, as in the Windows SDK ndkinfo.h. */
#ifndef NDK_NDKINFO_H
#define NDK_NDKINFO_H

#include "ndk/types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct _NDK_VERSION {
	USHORT Major;
	USHORT Minor;
} NDK_VERSION;

typedef enum _NDK_RDMA_TECHNOLOGY {
	NdkUndefined = 0,
	NdkiWarp = 1,
	NdkInfiniBand = 2,
	NdkRoCE = 3,
	NdkRoCEv2 = 4,
	NdkMaxTechnology = 5
} NDK_RDMA_TECHNOLOGY;

#define NDK_ADAPTER_FLAG_IN_ORDER_DMA_SUPPORTED		      0x00000001
#define NDK_ADAPTER_FLAG_RDMA_READ_SINK_NOT_REQUIRED	      0x00000002
#define NDK_ADAPTER_FLAG_CQ_INTERRUPT_MODERATION_SUPPORTED    0x00000004
#define NDK_ADAPTER_FLAG_MULTI_ENGINE_SUPPORTED		      0x00000008
#define NDK_ADAPTER_FLAG_RDMA_READ_LOCAL_INVALIDATE_SUPPORTED 0x00000010
#define NDK_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED		      0x00000100
#define NDK_ADAPTER_FLAG_LOOPBACK_CONNECTIONS_SUPPORTED	      0x00010000

/*
 * libndk's Linux extensions, not in Microsoft's ndkinfo.h: where a device
 * cannot do what the NDK contract says, the adapter says so before the
 * consumer meets it (docs/verbs.md, Contract differences). High bits,
 * away from Microsoft's; the software provider sets none of them.
 */
/* The acceptor's IRD is raised to the initiator's ORD, within
 * MaxInboundReadLimit; NdkGetConnectionData reports the pair in force. */
#define NDK_ADAPTER_FLAG_LIBNDK_ACCEPTOR_IRD_RAISED 0x10000000
/* A SOLICITED arm is satisfied by any new completion. */
#define NDK_ADAPTER_FLAG_LIBNDK_SOLICITED_ANY 0x20000000
/* The target serves a Read of memory registered without remote read. */
#define NDK_ADAPTER_FLAG_LIBNDK_REMOTE_READ_UNCHECKED 0x40000000
/* Accept completes when the reply is sent, before the initiator's
 * CompleteConnect: what the initiator does then is a disconnect. */
#define NDK_ADAPTER_FLAG_LIBNDK_ACCEPT_ON_REPLY 0x80000000
/* A remote access the target refuses is not reported to the initiator:
 * the connection ends as if the peer disconnected (reason
 * STATUS_SUCCESS) and the request completes STATUS_CANCELLED at the
 * flush. */
#define NDK_ADAPTER_FLAG_LIBNDK_REMOTE_ERROR_UNREPORTED 0x08000000

typedef struct _NDK_ADAPTER_INFO {
	NDK_VERSION Version;
	UINT32 VendorId;
	UINT32 DeviceId;
	SIZE_T MaxRegistrationSize;
	SIZE_T MaxWindowSize;
	ULONG FRMRPageCount;
	ULONG MaxInitiatorRequestSge;
	ULONG MaxReceiveRequestSge;
	ULONG MaxReadRequestSge;
	ULONG MaxTransferLength;
	ULONG MaxInlineDataSize;
	ULONG MaxInboundReadLimit;
	ULONG MaxOutboundReadLimit;
	ULONG MaxReceiveQueueDepth;
	ULONG MaxInitiatorQueueDepth;
	ULONG MaxSrqDepth;
	ULONG MaxCqDepth;
	ULONG LargeRequestThreshold;
	ULONG MaxCallerData;
	ULONG MaxCalleeData;
	ULONG AdapterFlags;
	NDK_RDMA_TECHNOLOGY RdmaTechnology;
} NDK_ADAPTER_INFO;

#ifdef __cplusplus
}
#endif

#endif /* NDK_NDKINFO_H */
