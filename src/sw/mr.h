/* SPDX-License-Identifier: MIT */
/*
 * Memory regions (docs/ndk.md, Memory tokens). An MR owns one STag (sw/stag.h)
 * from create to destroy; registering makes it valid with a fresh key, so the
 * local and remote tokens change with every registration. Both tokens are the
 * same STag: the STag table grants remote access only when the registration
 * asked for it, so the local token is useless to a peer unless remote rights
 * were granted anyway.
 *
 * Normal MRs (FastRegister FALSE) use NdkRegisterMr / NdkDeregisterMr:
 * base = the MDL's virtual address in this process, host-contiguous.
 * Fast-register MRs (FastRegister TRUE) use NdkInitializeFastRegisterMr,
 * then sw_mr_fast_register / sw_mr_invalidate from the QP's
 * NdkFastRegister / NdkInvalidate (or sw_stag_invalidate for a peer's
 * Send with Invalidate).
 *
 * An MR with bound MWs may still be deregistered or invalidated: the
 * windows die with the registration they were bound to (their lookups
 * fail as invalid STags). NdkBind makes the MR an antecedent of the MW
 * (NDKPI Terminology, see mw.h), so the MR's close pends until the MW
 * closes.
 */
#ifndef SW_MR_H
#define SW_MR_H

#include <pthread.h>
#include <stdatomic.h>
#include "core/lock.h"
#include "front/mdl.h"
#include "front/mr.h"
#include "front/object.h"

struct ndk_adapter;
struct sw_stag_table;

struct sw_mr {
	/* First: the consumer-visible part (front/mr.h): the lock, the
	 * registration state, the fast-register parameters. */
	struct ndk_mr base;
	struct sw_stag_table *stags;
	uint32_t pd_id;
	bool has_stag;
	atomic_uint stag; /* current token; its key changes per registration */
	uint64_t *pages; /* fast-register page list (host addresses) */
	uint32_t pages_cap;
};

static inline struct sw_mr *to_sw_mr(NDK_MR *mr)
{
	return container_of(mr, struct sw_mr, base.obj.pub.mr);
}

/* The MR's current token (both NdkGetLocal/RemoteTokenFromMr). */
uint32_t sw_mr_token(struct sw_mr *mr);

/*
 * NDK_OP_FLAG_* of NdkFastRegister / NdkBind to SW_ACCESS_*, by the front
 * end's rules (ndk_access_from_op_flags): local read is implicit, the bare
 * 0x20 bit is refused (-EINVAL), RDMA_READ_SINK and the non-access flags
 * (SILENT_SUCCESS, READ_FENCE, DEFER, ...) grant nothing here.
 */
int sw_access_from_op_flags(ULONG flags, uint32_t *access);

/*
 * NdkFastRegister's work (NDK_FN_FAST_REGISTER): maps count PAGE_SIZE pages
 * (logical addresses from NdkBuildLAM, i.e. page-aligned host addresses)
 * at base_va, starting fbo bytes into pages[0], for length bytes, with the
 * access in flags (NDK_OP_FLAG_*), and gives the MR a new token.
 * Rules: MR created with FastRegister TRUE and initialised (-EINVAL);
 * 1 <= count <= the initialised AdapterPageCount (-EINVAL);
 * fbo < PAGE_SIZE; 0 < length <= count * PAGE_SIZE - fbo; base_va =
 * fbo + n * PAGE_SIZE (so 0 only with fbo 0) and base_va + length must
 * not wrap (-EINVAL); every page used is PAGE_SIZE-aligned (-EINVAL) and
 * mapped in this process (-EFAULT); remote access on an MR initialised
 * without RemoteAccess (-EACCES: STATUS_ACCESS_VIOLATION); the MR must
 * not be fast-registered already: invalidate first (-EBUSY).
 */
int sw_mr_fast_register(struct sw_mr *mr, const NDK_LOGICAL_ADDRESS *pages,
			uint32_t count, uint32_t fbo, uint64_t length,
			uint64_t base_va, ULONG flags);

/*
 * NdkInvalidate on an MR: only fast-register MRs (-EINVAL for a normal
 * MR, which NdkDeregisterMr removes). Idempotent; returns once no access
 * through the old token is in flight.
 */
int sw_mr_invalidate(struct sw_mr *mr);

#endif /* SW_MR_H */
