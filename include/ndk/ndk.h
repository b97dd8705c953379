/* SPDX-License-Identifier: MIT */
/*
 * libndk: the Windows Network Direct Kernel Provider Interface (NDKPI 2.1)
 * on Linux, over software iWARP (MPA v2 / DDP / RDMAP over TCP) or an RDMA
 * device through rdma-core verbs.
 *
 * Include this one header. Besides the NDKPI surface (ndkpi.h), libndk has
 * a few Linux entry points modelled on WskOpenNdkAdapter /
 * WskCloseNdkAdapter and on an NDIS OID query, and the Windows MDL helpers.
 * NDK_VERSION_MAJOR, _MINOR and _PATCH (ndk/version.h) are libndk's own
 * version.
 */
#ifndef NDK_NDK_H
#define NDK_NDK_H

#include "ndk/version.h"
#include "ndk/types.h"
#include "ndk/ntstatus.h"
#include "ndk/ndkinfo.h"
#include "ndk/ndkpi.h"
#include "ndk/ndis.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The highest NDKPI version per major version that libndk provides. */
#define NDK_PROVIDER_MAJOR_VERSION 2
#define NDK_PROVIDER_MINOR_VERSION 1

/*
 * Opens an NDK adapter on the Linux network interface IfIndex (in the
 * caller's network namespace). Version is the major version wanted and the
 * lowest acceptable minor; the adapter runs at the highest minor libndk has
 * for that major (1.2 or 2.1). Returns STATUS_SUCCESS,
 * NDIS_STATUS_BAD_VERSION, NDIS_STATUS_ADAPTER_NOT_FOUND (no such
 * interface, or NDK_PROVIDER names a provider that does not serve it),
 * NDIS_STATUS_ADAPTER_NOT_READY (interface down) or
 * STATUS_INSUFFICIENT_RESOURCES.
 */
NTSTATUS NdkOpenAdapter(NDK_VERSION Version, NET_IFINDEX IfIndex,
			NDK_ADAPTER **ppNdkAdapter);

/*
 * Closes an adapter. Blocks until every callback of every descendant object
 * has returned; objects the consumer left open are closed first. Never call
 * it from inside an NDK callback.
 */
VOID NdkCloseAdapter(NDK_ADAPTER *pNdkAdapter);

/*
 * Queries OID_NDK_LOCAL_ENDPOINTS, OID_NDK_CONNECTIONS or OID_NDK_STATISTICS
 * for the interface IfIndex, across every process on the machine.
 */
NDIS_STATUS NdkQueryOid(NET_IFINDEX IfIndex, NDIS_OID Oid,
			PVOID InformationBuffer, ULONG InformationBufferLength,
			PULONG BytesWritten, PULONG BytesNeeded);

/*
 * Which libndk provider implements an adapter (libndk only; ndkinfo shows
 * it): Provider is "software" (iWARP over TCP sockets) or "verbs" (an RDMA
 * device through rdma-core); Device names the verbs device and port
 * ("siw0 port 1"), empty for the software provider. NDK_PROVIDER chooses
 * at NdkOpenAdapter (docs/configuration.md). Reason is empty for a verbs
 * adapter; for a software one it says why the verbs provider, which
 * NdkOpenAdapter tries first, does not serve it: "verbs provider
 * unavailable: " and why rdma-core's libibverbs.so.1 or librdmacm.so.1
 * could not be loaded, "verbs provider: no device serves IFNAME", "verbs
 * provider: not in this build of libndk" or "NDK_PROVIDER=software".
 * STATUS_INVALID_PARAMETER for a NULL argument.
 */
typedef struct _NDK_PROVIDER_INFO {
	CHAR Provider[16];
	CHAR Device[64];
	CHAR Reason[128];
} NDK_PROVIDER_INFO;

NTSTATUS NdkQueryAdapterProvider(NDK_ADAPTER *pNdkAdapter,
				 NDK_PROVIDER_INFO *pInfo);

/*
 * Where libndk's diagnostics go (libndk only). NDK_LOG (error, warn, info
 * or debug; default warn, read at the first NdkOpenAdapter) says which
 * levels are produced; each line goes to stderr as
 * "libndk[PID] LEVEL: TEXT" unless a handler is set.
 *
 * NdkSetLogHandler(Handler, Context) sends every line from then on to
 * Handler(Context, Level, Line) instead: Line is the text alone (no
 * prefix, no newline), valid during the call only. The handler runs on
 * the thread that logs, libndk's own threads included, on several at once,
 * and while libndk holds its locks: it must return soon and must not call
 * libndk (NdkStatusName aside). Handler NULL restores stderr. Once
 * NdkSetLogHandler returns, the handler it replaced has returned from
 * every call and is not called again, so its Context may be freed.
 */
typedef enum _NDK_LOG_LEVEL {
	NdkLogLevelError = 0,
	NdkLogLevelWarning = 1,
	NdkLogLevelInfo = 2,
	NdkLogLevelDebug = 3,
} NDK_LOG_LEVEL;

typedef VOID NDK_LOG_HANDLER(PVOID Context, NDK_LOG_LEVEL Level, PCSTR Line);

VOID NdkSetLogHandler(NDK_LOG_HANDLER *Handler, PVOID Context);

/* "STATUS_IO_TIMEOUT" for STATUS_IO_TIMEOUT; "0xC0001234" if unknown. */
PCSTR NdkStatusName(NTSTATUS Status);

/* MDL helpers with their Windows names and meanings. */
PMDL IoAllocateMdl(PVOID VirtualAddress, ULONG Length, BOOLEAN SecondaryBuffer,
		   BOOLEAN ChargeQuota, PIRP Irp);
VOID IoFreeMdl(PMDL Mdl);
VOID MmBuildMdlForNonPagedPool(PMDL MemoryDescriptorList);
PVOID MmGetMdlVirtualAddress(PMDL Mdl);
ULONG MmGetMdlByteCount(PMDL Mdl);

#ifdef __cplusplus
}
#endif

#endif /* NDK_NDK_H */
