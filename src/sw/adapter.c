/* SPDX-License-Identifier: MIT */
/* The software provider's adapter: its limits and its STag table. */
#include <errno.h>
#include <string.h>
#include "sw/adapter.h"
#include "sw/stag.h"

/*
 * The limits are what the software provider really enforces. Read limits
 * are 128 like siw; private data is MPA's 256-byte cap minus the 4-byte
 * IRD/ORD block of MPA v2 (docs/wire.md, Private data limits).
 */
static void sw_adapter_info(NDK_ADAPTER_INFO *info)
{
	NDK_VERSION version = info->Version;

	memset(info, 0, sizeof(*info));
	info->Version = version;
	info->VendorId = 0; /* software provider: no OUI */
	info->DeviceId = 0x4e444b; /* "NDK" */
	info->MaxRegistrationSize = (SIZE_T)1 << 40;
	info->MaxWindowSize = (SIZE_T)1 << 40;
	/* What NdkInitializeFastRegisterMr accepts. */
	info->FRMRPageCount = (ULONG)MIN(info->MaxRegistrationSize / PAGE_SIZE,
					 (SIZE_T)SW_MR_FR_MAX_PAGES);
	info->MaxInitiatorRequestSge = 16;
	info->MaxReceiveRequestSge = 16;
	info->MaxReadRequestSge = 16;
	info->MaxTransferLength = 1u << 30;
	info->MaxInlineDataSize = 1024;
	info->MaxInboundReadLimit = 128;
	info->MaxOutboundReadLimit = 128;
	info->MaxReceiveQueueDepth = 16384;
	info->MaxInitiatorQueueDepth = 16384;
	info->MaxSrqDepth = 16384;
	info->MaxCqDepth = 65536;
	info->LargeRequestThreshold = 64 * 1024;
	info->MaxCallerData = 252;
	info->MaxCalleeData = 252;
	info->AdapterFlags =
		NDK_ADAPTER_FLAG_IN_ORDER_DMA_SUPPORTED |
		NDK_ADAPTER_FLAG_RDMA_READ_SINK_NOT_REQUIRED |
		NDK_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED |
		NDK_ADAPTER_FLAG_CQ_INTERRUPT_MODERATION_SUPPORTED |
		NDK_ADAPTER_FLAG_LOOPBACK_CONNECTIONS_SUPPORTED;
	info->RdmaTechnology = NdkiWarp;
}

int sw_adapter_init(struct ndk_adapter *ad)
{
	sw_adapter_info(&ad->info);
	ad->priv = sw_stag_table_create(&ad->lams);
	return ad->priv ? 0 : -ENOMEM;
}

void sw_adapter_fini(struct ndk_adapter *ad)
{
	sw_stag_table_destroy(ad->priv);
	ad->priv = NULL;
}
