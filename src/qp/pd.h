/* SPDX-License-Identifier: MIT */
/* Protection domain: the scope of memory tokens and QPs. */
#ifndef NDK_QP_PD_H
#define NDK_QP_PD_H

#include "front/object.h"

struct ndk_pd {
	struct ndk_obj obj;
	uint32_t id; /* unique per adapter; checked on every STag access */
};

static inline struct ndk_pd *to_ndk_pd(NDK_PD *pd)
{
	return container_of(pd, struct ndk_pd, obj.pub.pd);
}

/*
 * The privileged token: lets SGEs carry logical addresses from NdkBuildLAM
 * without registration. Local read and write only, never remote
 * (NDK_FN_GET_PRIVILEGED_MEMORY_REGION_TOKEN); the STag table never maps it,
 * so a peer cannot use it.
 */
#define NDK_PRIVILEGED_TOKEN 0x00000000u

#endif /* NDK_QP_PD_H */
