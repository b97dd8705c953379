/* SPDX-License-Identifier: MIT */
/*
 * NDK connector. Connection management over MPA v2 is issue #3; until it
 * lands every connection slot returns STATUS_NOT_IMPLEMENTED.
 */
#include <stdlib.h>
#include "core/adapter.h"
#include "core/provider.h"

struct ndk_connector {
	struct ndk_obj obj;
};

static void connector_destroy(struct ndk_obj *obj)
{
	free(container_of(obj, struct ndk_connector, obj));
}

static const struct ndk_obj_ops connector_ops = {
	.type = NdkObjectTypeConnector,
	.name = "connector",
	.destroy = connector_destroy,
};

static NTSTATUS connector_connect(NDK_CONNECTOR *c, NDK_QP *qp,
				  CONST PSOCKADDR src, ULONG srclen,
				  CONST PSOCKADDR dst, ULONG dstlen, ULONG ird,
				  ULONG ord, CONST PVOID pd, ULONG pdlen,
				  NDK_FN_REQUEST_COMPLETION cb, PVOID ctx)
{
	return STATUS_NOT_IMPLEMENTED;
}

static NTSTATUS connector_connect_sep(NDK_CONNECTOR *c, NDK_QP *qp,
				      NDK_SHARED_ENDPOINT *sep,
				      CONST PSOCKADDR dst, ULONG dstlen,
				      ULONG ird, ULONG ord, CONST PVOID pd,
				      ULONG pdlen, NDK_FN_REQUEST_COMPLETION cb,
				      PVOID ctx)
{
	return STATUS_NOT_IMPLEMENTED;
}

static NTSTATUS connector_complete_connect(NDK_CONNECTOR *c,
					   NDK_FN_DISCONNECT_EVENT_CALLBACK ev,
					   PVOID evctx,
					   NDK_FN_REQUEST_COMPLETION cb,
					   PVOID ctx)
{
	return STATUS_NOT_IMPLEMENTED;
}

static NTSTATUS connector_complete_connect_ex(
	NDK_CONNECTOR *c, NDK_FN_DISCONNECT_EVENT_CALLBACK_EX ev, PVOID evctx,
	NDK_FN_REQUEST_COMPLETION cb, PVOID ctx)
{
	return STATUS_NOT_IMPLEMENTED;
}

static NTSTATUS connector_accept(NDK_CONNECTOR *c, NDK_QP *qp, ULONG ird,
				 ULONG ord, CONST PVOID pd, ULONG pdlen,
				 NDK_FN_DISCONNECT_EVENT_CALLBACK ev,
				 PVOID evctx, NDK_FN_REQUEST_COMPLETION cb,
				 PVOID ctx)
{
	return STATUS_NOT_IMPLEMENTED;
}

static NTSTATUS connector_accept_ex(NDK_CONNECTOR *c, NDK_QP *qp, ULONG ird,
				    ULONG ord, CONST PVOID pd, ULONG pdlen,
				    NDK_FN_DISCONNECT_EVENT_CALLBACK_EX ev,
				    PVOID evctx, NDK_FN_REQUEST_COMPLETION cb,
				    PVOID ctx)
{
	return STATUS_NOT_IMPLEMENTED;
}

static NTSTATUS connector_reject(NDK_CONNECTOR *c, CONST PVOID pd, ULONG pdlen)
{
	return STATUS_NOT_IMPLEMENTED;
}

static NTSTATUS connector_get_connection_data(NDK_CONNECTOR *c, ULONG *ird,
					      ULONG *ord, PVOID pd,
					      ULONG *pdlen)
{
	return STATUS_NOT_IMPLEMENTED;
}

static NTSTATUS connector_get_address(NDK_CONNECTOR *c, PSOCKADDR addr,
				      ULONG *len)
{
	return STATUS_NOT_IMPLEMENTED;
}

static NTSTATUS connector_disconnect(NDK_CONNECTOR *c,
				     NDK_FN_REQUEST_COMPLETION cb, PVOID ctx)
{
	return STATUS_NOT_IMPLEMENTED;
}

static const NDK_CONNECTOR_DISPATCH connector_dispatch = {
	.NdkCloseConnector = ndk_close_object,
	.NdkQueryExtension = ndk_query_extension,
	.NdkConnect = connector_connect,
	.NdkConnectWithSharedEndpoint = connector_connect_sep,
	.NdkCompleteConnect = connector_complete_connect,
	.NdkAccept = connector_accept,
	.NdkReject = connector_reject,
	.NdkGetConnectionData = connector_get_connection_data,
	.NdkGetLocalAddress = connector_get_address,
	.NdkGetPeerAddress = connector_get_address,
	.NdkDisconnect = connector_disconnect,
	.NdkCompleteConnectEx = connector_complete_connect_ex,
	.NdkAcceptEx = connector_accept_ex,
};

NTSTATUS ndk_create_connector(NDK_ADAPTER *pNdkAdapter,
			      NDK_FN_CREATE_COMPLETION CreateCompletion,
			      PVOID RequestContext,
			      NDK_CONNECTOR **ppNdkConnector)
{
	struct ndk_adapter *ad = to_ndk_adapter(pNdkAdapter);
	struct ndk_obj *antes[] = { &ad->obj };
	struct ndk_connector *c;
	NTSTATUS status;

	if (!ppNdkConnector)
		return STATUS_INVALID_PARAMETER;
	c = calloc(1, sizeof(*c));
	if (!c)
		return STATUS_INSUFFICIENT_RESOURCES;
	status = ndk_obj_setup(&c->obj, ad, &connector_ops, &connector_dispatch,
			       antes, 1);
	if (status)
		return status;
	*ppNdkConnector = &c->obj.pub.connector;
	return STATUS_SUCCESS;
}
