/* SPDX-License-Identifier: MIT */
/* The verbs provider's protection domain (struct ndk_vpd, verbs.h). */
#ifndef NDK_VERBS_PD_H
#define NDK_VERBS_PD_H

#include "verbs/verbs.h"

/* The provider's part of a PD (front/pd.c owns the object). */
NTSTATUS ndk_verbs_pd_init(struct ndk_obj *pd);
void ndk_verbs_pd_fini(struct ndk_obj *pd);

#endif /* NDK_VERBS_PD_H */
