/* SPDX-License-Identifier: MIT */
/*
 * NDK shared endpoint. Binding the local address is part of issue #3;
 * until it lands creation returns STATUS_NOT_IMPLEMENTED.
 */
#include "core/adapter.h"
#include "core/provider.h"

NTSTATUS ndk_create_shared_endpoint(NDK_ADAPTER *pNdkAdapter,
				    CONST PSOCKADDR pAddress,
				    ULONG AddressLength,
				    NDK_FN_CREATE_COMPLETION CreateCompletion,
				    PVOID RequestContext,
				    NDK_SHARED_ENDPOINT **ppNdkSharedEndpoint)
{
	return STATUS_NOT_IMPLEMENTED;
}
