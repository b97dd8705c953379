/* SPDX-License-Identifier: MIT */
/*
 * NdkGetConnectionData's contract, the same for every provider (docs/ndk.md,
 * NdkGetConnectionData): which parameters are invalid, and how the read
 * limits and the private data reach the caller.
 */
#ifndef NDK_FRONT_CONNDATA_H
#define NDK_FRONT_CONNDATA_H

#include <ndk/ndk.h>

/* STATUS_INVALID_PARAMETER without a length, or for a NULL buffer with a
 * non-zero length; else STATUS_SUCCESS. */
NTSTATUS ndk_conndata_check(const void *pPrivateData,
			    const ULONG *pPrivateDataLength);

/*
 * Writes ird and ord where asked, as much of the peer's private data (pd,
 * pd_len bytes) as *pPrivateDataLength holds, and sets it to pd_len (the
 * RDS). STATUS_BUFFER_TOO_SMALL when a buffer was given and held less.
 */
NTSTATUS ndk_conndata_copy_out(ULONG ird, ULONG ord, const void *pd,
			       ULONG pd_len, ULONG *pInboundReadLimit,
			       ULONG *pOutboundReadLimit, PVOID pPrivateData,
			       ULONG *pPrivateDataLength);

#endif
