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
#include "front/object.h"

struct ndk_adapter;
struct sw_stag_table;

/*
 * Cap on NdkInitializeFastRegisterMr's AdapterPageCount: 2^18 pages
 * (1 GiB at 4 KiB pages, a 2 MiB page list), or MaxRegistrationSize /
 * PAGE_SIZE if that is smaller. Larger counts get
 * STATUS_IMPLEMENTATION_LIMIT.
 */
#define SW_MR_FR_MAX_PAGES (1u << 18)

struct sw_mr {
	struct ndk_obj obj;
	struct sw_stag_table *stags;
	uint32_t pd_id;
	bool fast; /* created with FastRegister TRUE */
	bool has_stag;
	atomic_uint stag; /* current token; its key changes per registration */

	/* lock serialises every state change of this MR. */
	struct ndk_lock lock;
	bool registered; /* normal MR: NdkRegisterMr done, not deregistered */
	bool fr_ready; /* NdkInitializeFastRegisterMr done */
	bool fr_remote; /* ... with RemoteAccess TRUE */
	uint32_t fr_max_pages; /* ... with this AdapterPageCount */
	uint64_t *pages; /* fast-register page list (host addresses) */
	uint32_t pages_cap;
};

static inline struct sw_mr *to_sw_mr(NDK_MR *mr)
{
	return container_of(mr, struct sw_mr, obj.pub.mr);
}

/* The MR's current token (both NdkGetLocal/RemoteTokenFromMr). */
uint32_t sw_mr_token(struct sw_mr *mr);

/* The largest AdapterPageCount this adapter accepts. */
uint32_t sw_mr_fr_max_pages(const struct ndk_adapter *ad);

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
