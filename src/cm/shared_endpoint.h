/* SPDX-License-Identifier: MIT */
#ifndef NDK_CM_SHARED_ENDPOINT_H
#define NDK_CM_SHARED_ENDPOINT_H

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

#endif /* NDK_CM_SHARED_ENDPOINT_H */
