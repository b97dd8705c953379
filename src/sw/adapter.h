/* SPDX-License-Identifier: MIT */
/*
 * The software provider's adapter: its NDK_ADAPTER_INFO and its
 * adapter-wide state, the STag table (sw/stag.h), kept in ad->priv.
 */
#ifndef SW_ADAPTER_H
#define SW_ADAPTER_H

#include "front/adapter.h"

struct sw_stag_table;

static inline struct sw_stag_table *sw_stags(const struct ndk_adapter *ad)
{
	return ad->priv;
}

/* Fills ad->info and creates the STag table; 0 or -ENOMEM. */
int sw_adapter_init(struct ndk_adapter *ad);
void sw_adapter_fini(struct ndk_adapter *ad);

#endif /* SW_ADAPTER_H */
