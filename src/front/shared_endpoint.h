/* SPDX-License-Identifier: MIT */
/*
 * NDK shared endpoint: a reserved local address in the front end's
 * endpoint table, the same for every provider (a connector reads its
 * endpoint and takes a reference for its connection).
 */
#ifndef NDK_FRONT_SHARED_ENDPOINT_H
#define NDK_FRONT_SHARED_ENDPOINT_H

#include "front/endpoint.h"
#include "front/object.h"

struct ndk_shared_endpoint {
	struct ndk_obj obj;
	struct ndk_endpoint *ep; /* one reference for the object itself */
};

static inline struct ndk_shared_endpoint *
to_ndk_shared_endpoint(NDK_SHARED_ENDPOINT *sep)
{
	return container_of(sep, struct ndk_shared_endpoint, obj.pub.sep);
}

/* NDK_FN_CREATE_SHARED_ENDPOINT for every provider's adapter table. */
NTSTATUS ndk_create_shared_endpoint(NDK_ADAPTER *pNdkAdapter,
				    CONST PSOCKADDR pAddress,
				    ULONG AddressLength,
				    NDK_FN_CREATE_COMPLETION CreateCompletion,
				    PVOID RequestContext,
				    NDK_SHARED_ENDPOINT **ppNdkSharedEndpoint);

#endif /* NDK_FRONT_SHARED_ENDPOINT_H */
