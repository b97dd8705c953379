/* SPDX-License-Identifier: MIT */
/*
 * The adapter's dispatch table: the front end answers the queries and
 * checks the creates of CQs and PDs (front/cq.c, front/pd.c); the
 * provider creates the objects. Apart from front/adapter.c because the
 * creates it names need the adapter's definition themselves.
 */
#include <string.h>
#include "front/adapter.h"
#include "front/cq.h"
#include "front/lam.h"
#include "front/listener.h"
#include "front/pd.h"
#include "front/provider.h"

static NTSTATUS ndk_query_adapter_info(NDK_ADAPTER *pNdkAdapter,
				       NDK_ADAPTER_INFO *pInfo,
				       ULONG *pBufferSize)
{
	struct ndk_adapter *ad = to_ndk_adapter(pNdkAdapter);

	if (!pBufferSize)
		return STATUS_INVALID_PARAMETER;
	if (*pBufferSize < sizeof(*pInfo)) {
		*pBufferSize = sizeof(*pInfo);
		return STATUS_BUFFER_TOO_SMALL;
	}
	if (!pInfo)
		return STATUS_INVALID_PARAMETER;
	*pInfo = ad->info;
	*pBufferSize = sizeof(*pInfo);
	return STATUS_SUCCESS;
}

void ndk_adapter_fill_dispatch(NDK_ADAPTER_DISPATCH *d,
			       const struct ndk_provider_ops *p)
{
	memset(d, 0, sizeof(*d));
	d->NdkQueryExtension = ndk_query_extension;
	d->NdkQueryAdapterInfo = ndk_query_adapter_info;
	d->NdkCreateCq = ndk_create_cq;
	d->NdkCreatePd = ndk_create_pd;
	d->NdkCreateSharedEndpoint = p->create_shared_endpoint;
	d->NdkCreateConnector = p->create_connector;
	d->NdkCreateListener = ndk_create_listener;
	d->NdkBuildLAM = ndk_build_lam;
	d->NdkReleaseLAM = ndk_release_lam;
}
