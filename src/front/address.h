/* SPDX-License-Identifier: MIT */
/* Consumer socket addresses: validation, local endpoints, copy-out. */
#ifndef NDK_FRONT_ADDRESS_H
#define NDK_FRONT_ADDRESS_H

#include <ndk/ndk.h>
#include "front/endpoint.h"

struct ndk_adapter;

/* 0 if sa is AF_INET or AF_INET6 and len covers it, else -EINVAL. */
int ndk_addr_check(const struct sockaddr *sa, ULONG len);
socklen_t ndk_addr_len(const struct sockaddr *sa);

/*
 * Copies sa out with the NDK size contract: *len smaller than the address
 * gives STATUS_BUFFER_TOO_SMALL and the size needed in *len.
 */
NTSTATUS ndk_addr_copy_out(const struct sockaddr *sa, PSOCKADDR out,
			   ULONG *len);
/* NdkGetLocalAddress of a listener or shared endpoint: its bound address
 * copied out, STATUS_INVALID_DEVICE_STATE while there is none (ep NULL:
 * a listener not listening yet). */
NTSTATUS ndk_endpoint_local_address(const struct ndk_endpoint *ep,
				    PSOCKADDR pAddress, ULONG *pAddressLength);

/*
 * Reserves the local endpoint sa (port 0 = ephemeral) on adapter ad:
 * STATUS_INVALID_PARAMETER (malformed), STATUS_INVALID_ADDRESS (the IP is
 * not an address of this adapter), STATUS_SHARING_VIOLATION (in use),
 * STATUS_TOO_MANY_ADDRESSES (port 0, ephemeral range exhausted),
 * STATUS_INSUFFICIENT_RESOURCES.
 */
NTSTATUS ndk_local_endpoint_acquire(struct ndk_adapter *ad,
				    const struct sockaddr *sa, ULONG len,
				    enum ndk_endpoint_kind kind,
				    struct ndk_endpoint **epp);

#endif /* NDK_FRONT_ADDRESS_H */
