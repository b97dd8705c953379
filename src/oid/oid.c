/* SPDX-License-Identifier: MIT */
/*
 * NdkQueryOid: OID_NDK_LOCAL_ENDPOINTS, _CONNECTIONS and _STATISTICS across
 * processes are issue #5. Until then the entry point exists (consumers
 * link against it) and says so.
 */
#include "core/compiler.h"
#include <ndk/ndk.h>

NDK_EXPORT NDIS_STATUS NdkQueryOid(NET_IFINDEX IfIndex, NDIS_OID Oid,
				   PVOID InformationBuffer,
				   ULONG InformationBufferLength,
				   PULONG BytesWritten, PULONG BytesNeeded)
{
	if (BytesWritten)
		*BytesWritten = 0;
	if (BytesNeeded)
		*BytesNeeded = 0;
	return STATUS_NOT_IMPLEMENTED;
}
