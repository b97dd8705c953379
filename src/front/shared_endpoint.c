/* SPDX-License-Identifier: MIT */
/*
 * NDK shared endpoint: one local address (IP + ND port) used by many
 * outgoing connections to different destinations (NDK_SHARED_ENDPOINT;
 * NDKPI Listeners, Connectors, and Endpoints).
 * The object holds one reference on its ND endpoint; each connector that
 * connects through it will hold another. Nothing here depends on the
 * transport, so every provider's adapter table uses it.
 */
#include <stdlib.h>
#include "front/address.h"
#include "front/shared_endpoint.h"
#include "front/adapter.h"

static void sep_destroy(struct ndk_obj *obj)
{
	free(container_of(obj, struct ndk_shared_endpoint, obj));
}

/* Dropped when the close completes, i.e. after its connectors closed. */
static void sep_close_end(struct ndk_obj *obj)
{
	struct ndk_shared_endpoint *sep =
		container_of(obj, struct ndk_shared_endpoint, obj);

	ndk_endpoint_put(sep->ep);
	sep->ep = NULL;
}

static const struct ndk_obj_ops sep_ops = {
	.type = NdkObjectTypeSharedEndpoint,
	.name = "shared-endpoint",
	.close_end = sep_close_end,
	.destroy = sep_destroy,
};

static NTSTATUS sep_get_local_address(NDK_SHARED_ENDPOINT *pNdkSharedEndpoint,
				      PSOCKADDR pAddress, ULONG *pAddressLength)
{
	return ndk_endpoint_local_address(
		to_ndk_shared_endpoint(pNdkSharedEndpoint)->ep, pAddress,
		pAddressLength);
}

static const NDK_SHARED_ENDPOINT_DISPATCH sep_dispatch = {
	.NdkCloseSharedEndpoint = ndk_close_object,
	.NdkQueryExtension = ndk_query_extension,
	.NdkGetLocalAddress = sep_get_local_address,
};

NTSTATUS ndk_create_shared_endpoint(NDK_ADAPTER *pNdkAdapter,
				    CONST PSOCKADDR pAddress,
				    ULONG AddressLength,
				    NDK_FN_CREATE_COMPLETION CreateCompletion,
				    PVOID RequestContext,
				    NDK_SHARED_ENDPOINT **ppNdkSharedEndpoint)
{
	struct ndk_adapter *ad = to_ndk_adapter(pNdkAdapter);
	struct ndk_obj *antes[] = { &ad->obj };
	struct ndk_endpoint *ep;
	struct ndk_shared_endpoint *sep;
	NTSTATUS status;

	if (!ppNdkSharedEndpoint)
		return STATUS_INVALID_PARAMETER;
	status = ndk_local_endpoint_acquire(ad, pAddress, AddressLength,
					    NDK_ENDPOINT_SHARED, &ep);
	if (status)
		return status;
	sep = calloc(1, sizeof(*sep));
	if (!sep) {
		ndk_endpoint_put(ep);
		return STATUS_INSUFFICIENT_RESOURCES;
	}
	status =
		ndk_obj_setup(&sep->obj, ad, &sep_ops, &sep_dispatch, antes, 1);
	if (status) {
		ndk_endpoint_put(ep);
		return status;
	}
	sep->ep = ep;
	ndk_endpoint_publish(ep, ad);
	*ppNdkSharedEndpoint = &sep->obj.pub.sep;
	return STATUS_SUCCESS;
}
