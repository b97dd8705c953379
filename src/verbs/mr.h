/* SPDX-License-Identifier: MIT */
/*
 * The verbs provider's memory region: an ibv_mr once registered, by
 * NdkRegisterMr or, for an MR created for fast registration, by
 * NdkFastRegister (docs/verbs.md, Fast registration).
 */
#ifndef NDK_VERBS_MR_H
#define NDK_VERBS_MR_H

#include <stdatomic.h>
#include "core/lock.h"
#include "front/object.h"
#include "front/mr.h"
#include "verbs/verbs.h"

struct ndk_vqp;

struct ndk_vmr {
	/* First: the consumer-visible part (front/mr.h); its lock covers
	 * the registration below. */
	struct ndk_mr base;
	struct ndk_vpd *pd;
	struct ibv_mr *mr; /* NULL until registered */
	bool local_write; /* registered with it (windows with remote write) */
	/* The tokens, read lock-free by the consumer's data path. */
	_Atomic uint32_t lkey, rkey;
	/*
	 * A fast-register MR on a device whose fast registrations are
	 * windows (fr_mw: docs/verbs.md, Fast registration): the type 2
	 * window each NdkFastRegister binds over the new registration,
	 * whose rkey is the remote token (allocated at the first one, in
	 * the adapter's fr_map until it goes), and its last bind's rkey.
	 */
	struct ibv_mw *win;
	uint32_t win_rkey;
	struct ndk_vmr *win_next; /* in its fr_map bucket (fr_lock) */
	/* The QP its window was last bound through (a type 2 window holds
	 * its QP: ndk_vmr_qp_closing), or NULL; written under both the
	 * MR's lock and fr_lock. */
	const struct ndk_vqp *win_qp;
	/* A receive completion reported a peer's invalidation of rkey
	 * (ndk_vmr_peer_invalidated): the window is free, the registration
	 * invalid. Cleared at each bind. */
	atomic_bool peer_inv;
};

static inline struct ndk_vmr *to_vmr(NDK_MR *mr)
{
	return container_of(mr, struct ndk_vmr, base.obj.pub.mr);
}

/* The largest AdapterPageCount (FRMRPageCount) for a device whose
 * registrations may be max_mr_size long: as for the software provider. */
uint32_t ndk_vmr_fr_max_pages(uint64_t max_mr_size);

/*
 * NdkFastRegister's registration, at post time (the QP's PD is pd): the
 * checks of the software provider (sw/mr.h), then one ibv_reg_mr_iova
 * of the pages, which must be virtually contiguous, with the consumer's
 * base as the iova. The MR's lock is held, by the caller, from here until
 * ndk_vmr_fast_register_end. iova_ok: the device honours an iova other
 * than the address (siw does not). With a window (fr->bind), wr is its
 * IBV_WR_BIND_MW over the new registration, which the caller posts as
 * the request; without, the caller posts a marker.
 */
struct ndk_vmr_fr {
	struct ibv_mr *reg; /* the new registration */
	bool bind; /* wr is the window's bind */
	bool local_write; /* reg has it */
	uint32_t rkey; /* the bind's */
	/* The registration a peer invalidated, which the bind's slot
	 * deregisters when it is released; NULL if none. */
	struct ibv_mr *old;
	const struct ndk_vqp *qp; /* the caller's, which binds */
};

NTSTATUS ndk_vmr_fast_register_locked(struct ndk_vmr *mr, struct ndk_vpd *pd,
				      const NDK_LOGICAL_ADDRESS *pages,
				      ULONG count, ULONG fbo, SIZE_T length,
				      uint64_t base, ULONG flags, bool iova_ok,
				      struct ndk_vmr_fr *fr,
				      struct ibv_send_wr *wr);
/* The request's post status: the new registration becomes the MR's, or
 * goes again. */
void ndk_vmr_fast_register_end(struct ndk_vmr *mr, struct ndk_vmr_fr *fr,
			       NTSTATUS posted);
/*
 * NdkInvalidate of a fast-register MR (lock held): its registration
 * leaves the MR, tokens and all, and is handed back for deregistration
 * once the request completes in order (NULL when not registered). With
 * a window that is known to be bound, on a device other than rxe,
 * *local_inv is set and *rkey is the window's: the request is
 * IBV_WR_LOCAL_INV of it (else a marker).
 */
struct ibv_mr *ndk_vmr_invalidate_locked(struct ndk_vmr *mr, bool *local_inv,
					 uint32_t *rkey);
/* The request's post status: not posted, the MR keeps its registration;
 * posted, on rxe its window is deallocated now (a new one comes with the
 * next fast registration). */
void ndk_vmr_invalidate_end(struct ndk_vmr *mr, struct ibv_mr *old,
			    NTSTATUS posted);

/*
 * A receive completion reported that a peer's Send with Invalidate
 * invalidated rkey: the fast-register MR whose window has it is marked,
 * so that it may be fast-registered again (any thread; takes fr_lock
 * only).
 */
void ndk_vmr_peer_invalidated(struct ndk_vadapter *v, uint32_t rkey);

/*
 * qp is about to be destroyed: the windows of fast-register MRs bound
 * through it are deallocated first (ndk_vmw_qp_closing does the same
 * for memory windows). A type 2 window holds its QP: Linux 6.1's rxe
 * then waits 50 s in ibv_destroy_qp and logs a kernel warning, and on
 * any device the token works through no other QP. The MR keeps its
 * registration until the consumer invalidates it (with a marker: no
 * window is bound). No lock held.
 */
void ndk_vmr_qp_closing(struct ndk_vadapter *v, const struct ndk_vqp *qp);

/* The provider's MR ops (front/provider.h, front/mr.c). */
NTSTATUS ndk_verbs_create_mr(struct ndk_obj *pd, bool fast_register,
			     NDK_MR **ppNdkMr);
NTSTATUS ndk_verbs_mr_register(struct ndk_mr *mr, uint64_t va, uint64_t len,
			       unsigned int access);
void ndk_verbs_mr_deregister(struct ndk_mr *mr);
NTSTATUS ndk_verbs_mr_fr_init(struct ndk_mr *mr, ULONG count);
UINT32 ndk_verbs_mr_token(struct ndk_mr *mr, bool remote);

#endif /* NDK_VERBS_MR_H */
