// SPDX-License-Identifier: MIT
#include <string.h>
#include "front/conndata.h"

NTSTATUS ndk_conndata_check(const void *pPrivateData,
			    const ULONG *pPrivateDataLength)
{
	if (!pPrivateDataLength)
		return STATUS_INVALID_PARAMETER;
	/* A NULL buffer with a non-zero length is an invalid request. */
	if (!pPrivateData && *pPrivateDataLength)
		return STATUS_INVALID_PARAMETER;
	return STATUS_SUCCESS;
}

NTSTATUS ndk_conndata_copy_out(ULONG ird, ULONG ord, const void *pd,
			       ULONG pd_len, ULONG *pInboundReadLimit,
			       ULONG *pOutboundReadLimit, PVOID pPrivateData,
			       ULONG *pPrivateDataLength)
{
	NTSTATUS status = STATUS_SUCCESS;

	if (pInboundReadLimit)
		*pInboundReadLimit = ird;
	if (pOutboundReadLimit)
		*pOutboundReadLimit = ord;
	if (pPrivateData) {
		memcpy(pPrivateData, pd,
		       *pPrivateDataLength < pd_len ? *pPrivateDataLength
						    : pd_len);
		if (*pPrivateDataLength < pd_len)
			status = STATUS_BUFFER_TOO_SMALL;
	}
	*pPrivateDataLength = pd_len;
	return status;
}
