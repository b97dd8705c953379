/* SPDX-License-Identifier: MIT */
/* Protection domain: the scope of memory tokens and QPs. */
#ifndef SW_PD_H
#define SW_PD_H

#include "front/object.h"

struct sw_pd {
	struct ndk_obj obj;
	uint32_t id; /* unique per adapter; checked on every STag access */
};

static inline struct sw_pd *to_sw_pd(NDK_PD *pd)
{
	return container_of(pd, struct sw_pd, obj.pub.pd);
}

/*
 * The privileged token: lets SGEs carry logical addresses from NdkBuildLAM
 * without registration. Local read and write only, never remote
 * (NDK_FN_GET_PRIVILEGED_MEMORY_REGION_TOKEN); the STag table never maps it,
 * so a peer cannot use it.
 */
#define SW_PRIVILEGED_TOKEN 0x00000000u

#endif /* SW_PD_H */
