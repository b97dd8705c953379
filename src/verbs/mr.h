/* SPDX-License-Identifier: MIT */
/* The verbs provider's memory region: an ibv_mr once registered. */
#ifndef NDK_VERBS_MR_H
#define NDK_VERBS_MR_H

#include <stdatomic.h>
#include "core/lock.h"
#include "front/object.h"
#include "verbs/verbs.h"

struct ndk_vmr {
	struct ndk_obj obj;
	struct ndk_vpd *pd;
	bool fast; /* created with FastRegister TRUE */
	struct ndk_lock lock; /* registration */
	struct ibv_mr *mr; /* NULL until NdkRegisterMr */
	bool local_write; /* registered with it (windows with remote write) */
	/* The tokens, read lock-free by the consumer's data path. */
	_Atomic uint32_t lkey, rkey;
};

static inline struct ndk_vmr *to_vmr(NDK_MR *mr)
{
	return container_of(mr, struct ndk_vmr, obj.pub.mr);
}

NTSTATUS ndk_verbs_create_mr(NDK_PD *pNdkPd, BOOLEAN FastRegister,
			     NDK_FN_CREATE_COMPLETION CreateCompletion,
			     PVOID RequestContext, NDK_MR **ppNdkMr);

#endif /* NDK_VERBS_MR_H */
