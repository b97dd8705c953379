/* SPDX-License-Identifier: MIT */
/*
 * The software provider's adapter: its NDK_ADAPTER_INFO and its
 * adapter-wide state, the STag table (sw/stag.h), kept in ad->priv.
 */
#ifndef SW_ADAPTER_H
#define SW_ADAPTER_H

#include "front/adapter.h"

struct sw_stag_table;

/*
 * NdkInitializeFastRegisterMr's largest AdapterPageCount, as the
 * adapter's FRMRPageCount: 2^18 pages (1 GiB), or MaxRegistrationSize /
 * PAGE_SIZE if that is smaller; the pages' list is allocated per MR.
 */
#define SW_MR_FR_MAX_PAGES (1u << 18)

static inline struct sw_stag_table *sw_stags(const struct ndk_adapter *ad)
{
	return ad->priv;
}

/* Fills ad->info and creates the STag table; 0 or -ENOMEM. */
int sw_adapter_init(struct ndk_adapter *ad);
void sw_adapter_fini(struct ndk_adapter *ad);

#endif /* SW_ADAPTER_H */
