/* SPDX-License-Identifier: MIT */
/*
 * The memory rules every provider applies the same way (front/mr.c): what
 * NDK_MR_FLAG_* and NDK_OP_FLAG_* allow, NdkRegisterMr's arguments, and
 * the geometry of NdkFastRegister. Each provider maps the access bits
 * below onto its own (STag access, IBV_ACCESS_*).
 */
#ifndef NDK_FRONT_MR_H
#define NDK_FRONT_MR_H

#include <stdbool.h>
#include <stdint.h>
#include <ndk/ndk.h>
#include "core/lock.h"
#include "front/object.h"

struct ndk_adapter;

/*
 * The MR as a consumer sees it, for every provider: a provider's MR
 * embeds it first, and its dispatch table (ndk_mr_dispatch) is the front
 * end's, which checks every call and its state before the provider's
 * mr_register, mr_deregister, mr_fr_init and mr_token (front/provider.h).
 */
struct ndk_mr {
	struct ndk_obj obj; /* must stay first */
	bool fast; /* created with FastRegister TRUE */
	/* NDK_LOCK_MR: the registration, the provider's part included. */
	struct ndk_lock lock;
	bool registered; /* not fast: NdkRegisterMr done, not deregistered */
	/* NdkInitializeFastRegisterMr done, with these parameters. */
	bool fr_ready, fr_remote;
	uint32_t fr_max_pages;
};

static inline struct ndk_mr *to_ndk_mr(NDK_MR *mr)
{
	return container_of(mr, struct ndk_mr, obj.pub.mr);
}

extern const NDK_MR_DISPATCH ndk_mr_dispatch;

/* A provider's create_mr: the front end's part of a new MR, before
 * ndk_obj_setup; ndk_mr_fini in its destroy. */
void ndk_mr_init(struct ndk_mr *mr, bool fast);
void ndk_mr_fini(struct ndk_mr *mr);

/* Access an NDK consumer asked for; local read is always allowed. */
enum ndk_access {
	NDK_ACCESS_LOCAL_WRITE = 1u << 0,
	NDK_ACCESS_REMOTE_READ = 1u << 1,
	/* Remote write is never granted without local write (the flag
	 * values 0x5 and 0x30 include it), so it implies it here too. */
	NDK_ACCESS_REMOTE_WRITE = 1u << 2,
	/* The memory is an RDMA Read's sink: on iWARP a Read Response is a
	 * tagged write into it (RFC 5040 4.4), elsewhere nothing. */
	NDK_ACCESS_READ_SINK = 1u << 3,
};
#define NDK_ACCESS_REMOTE (NDK_ACCESS_REMOTE_READ | NDK_ACCESS_REMOTE_WRITE)

/* NDK_MR_FLAG_* of NdkRegisterMr: 0, or -EINVAL for an unknown flag or
 * remote write without local write. */
int ndk_access_from_mr_flags(ULONG flags, unsigned int *access);
/* NDK_OP_FLAG_* of NdkFastRegister and NdkBind (other flags are the
 * request's, not access): 0, or -EINVAL for remote write without local
 * write. */
int ndk_access_from_op_flags(ULONG flags, unsigned int *access);

/*
 * NdkRegisterMr's arguments on adapter ad: the flags, a Length from 1 to
 * MaxRegistrationSize and an MDL chain that covers it with mapped memory.
 * STATUS_SUCCESS with *va and *access, or STATUS_INVALID_PARAMETER.
 */
NTSTATUS ndk_mr_register_args(const struct ndk_adapter *ad, MDL *mdl,
			      SIZE_T length, ULONG flags, uint64_t *va,
			      unsigned int *access);

/*
 * NdkFastRegister's geometry (NDK_FN_FAST_REGISTER): FBO inside the first
 * page, Length from 1 to what count pages hold past FBO, a base address
 * whose page offset is FBO, a range that does not wrap. 0 with *need, the
 * pages the registration uses, or -EINVAL.
 */
int ndk_fr_geometry(ULONG count, ULONG fbo, uint64_t length, uint64_t base,
		    uint32_t *need);

#endif /* NDK_FRONT_MR_H */
