/* SPDX-License-Identifier: MIT */
/* The verbs provider's protection domain (struct ndk_vpd, verbs.h). */
#ifndef NDK_VERBS_PD_H
#define NDK_VERBS_PD_H

#include "verbs/verbs.h"

NTSTATUS ndk_verbs_create_pd(NDK_ADAPTER *pNdkAdapter,
			     NDK_FN_CREATE_COMPLETION CreateCompletion,
			     PVOID RequestContext, NDK_PD **ppNdkPd);

#endif /* NDK_VERBS_PD_H */
