/* SPDX-License-Identifier: MIT */
/*
 * The software provider's adapter: its NDK_ADAPTER_INFO and its
 * adapter-wide state, the STag table (qp/stag.h), kept in ad->priv.
 */
#ifndef NDK_QP_ADAPTER_H
#define NDK_QP_ADAPTER_H

#include "front/adapter.h"

struct ndk_stag_table;

static inline struct ndk_stag_table *ndk_sw_stags(const struct ndk_adapter *ad)
{
	return ad->priv;
}

/* Fills ad->info and creates the STag table; 0 or -ENOMEM. */
int ndk_sw_adapter_init(struct ndk_adapter *ad);
void ndk_sw_adapter_fini(struct ndk_adapter *ad);

#endif /* NDK_QP_ADAPTER_H */
