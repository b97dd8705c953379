/* SPDX-License-Identifier: MIT */
/* The software provider's adapter-wide state: the STag table. */
#include <errno.h>
#include "front/adapter.h"
#include "front/provider.h"
#include "qp/stag.h"

int ndk_provider_adapter_init(struct ndk_adapter *ad)
{
	ad->stags = ndk_stag_table_create();
	return ad->stags ? 0 : -ENOMEM;
}

void ndk_provider_adapter_fini(struct ndk_adapter *ad)
{
	ndk_stag_table_destroy(ad->stags);
	ad->stags = NULL;
}
