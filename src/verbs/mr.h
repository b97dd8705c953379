/* SPDX-License-Identifier: MIT */
/* The verbs provider's memory region: an ibv_mr once registered. */
#ifndef NDK_VERBS_MR_H
#define NDK_VERBS_MR_H

#include "front/object.h"
#include "verbs/verbs.h"

NTSTATUS ndk_verbs_create_mr(NDK_PD *pNdkPd, BOOLEAN FastRegister,
			     NDK_FN_CREATE_COMPLETION CreateCompletion,
			     PVOID RequestContext, NDK_MR **ppNdkMr);

#endif /* NDK_VERBS_MR_H */
