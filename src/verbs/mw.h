/* SPDX-License-Identifier: MIT */
/*
 * The verbs provider's memory window: a type 2 ibv_mw, bound and
 * invalidated by work requests on a QP's send queue (docs/verbs.md,
 * Memory windows).
 */
#ifndef NDK_VERBS_MW_H
#define NDK_VERBS_MW_H

#include <stdatomic.h>
#include "core/lock.h"
#include "front/object.h"
#include "verbs/verbs.h"

struct ndk_vmr;
struct ndk_vqp;

struct ndk_vmw {
	struct ndk_obj obj;
	struct ndk_vpd *pd;
	struct ibv_mw *mw; /* NULL if a new one could not be allocated */
	/* In the adapter's mw_map, by its token's index (fr_lock), from
	 * create to close. */
	struct list_head entry;
	/* The QP its last bind went through, NULL when not bound
	 * (ndk_vmw_qp_closing); written under both locks. */
	const struct ndk_vqp *qp;
	/* The window is known to be free (never bound, invalidated, or a
	 * peer invalidated its token): an NdkInvalidate of it posts a
	 * marker, since 6.1's rxe dereferences NULL on IBV_WR_LOCAL_INV of
	 * a free window. */
	atomic_bool free;
	struct ndk_lock lock; /* mr, and a bind from begin to end */
	struct ndk_vmr *mr; /* bound to (an antecedent), or NULL */
	/* rxe: the registration of the window's own range that it is bound
	 * over (ndk_vmw_bind_begin), or NULL. */
	struct ibv_mr *sub;
	/* Its remote token: a new key at each bind (the device's index
	 * with a random consumer byte), read lock-free. */
	_Atomic uint32_t rkey;
};

static inline struct ndk_vmw *to_vmw(NDK_MW *mw)
{
	return container_of(mw, struct ndk_vmw, obj.pub.mw);
}

/* The provider's create (front/provider.h, front/mw.c). */
NTSTATUS ndk_verbs_create_mw(struct ndk_obj *pd, NDK_MW **ppNdkMw);
UINT32 ndk_verbs_mw_token(struct ndk_obj *mw);

/*
 * NdkBind, in two halves around the post: begin checks the request as
 * the software provider does (the window inside the registered MR, one
 * PD, remote write only over local write), makes the MR the window's
 * antecedent and fills wr; end, with the post's status, keeps the new
 * token and link or undoes them. The window's lock is held from begin to
 * end (begin returns with it only on success).
 */
struct ndk_vmw_bind {
	const struct ndk_vqp *qp; /* the caller's */
	struct ndk_vmw *mw;
	struct ndk_vmr *mr;
	bool linked;
	uint32_t rkey;
	/* rxe: the new range's registration, and the one it replaces,
	 * which the bind's slot deregisters once it completes (the device
	 * refuses to deregister an MR a window is bound to). */
	struct ibv_mr *sub, *old_sub;
};

NTSTATUS ndk_vmw_bind_begin(struct ndk_vmw_bind *b, NDK_MW *pMw, NDK_MR *pMr,
			    struct ndk_vpd *qp_pd, PVOID va, SIZE_T len,
			    ULONG flags, struct ibv_send_wr *wr);
void ndk_vmw_bind_end(struct ndk_vmw_bind *b, NTSTATUS status);

/*
 * NdkInvalidate of a window, in two halves around the post, with the
 * window's lock held between: begin says whether the request is
 * IBV_WR_LOCAL_INV of *rkey (true) or a marker (the window is free
 * already); end, with the post's status, marks it free.
 */
bool ndk_vmw_invalidate_begin(NDK_MW *pMw, uint32_t *rkey);
void ndk_vmw_invalidate_end(NDK_MW *pMw, NTSTATUS status);

/* A receive completion reported a peer's invalidation of rkey: the
 * window with that token is free (any thread; fr_lock only). */
void ndk_vmw_peer_invalidated(struct ndk_vadapter *v, uint32_t rkey);

/*
 * qp is about to be destroyed: every window bound through it is
 * deallocated and replaced by a new, free one (ndk_vmr_qp_closing says
 * why). No lock held.
 */
void ndk_vmw_qp_closing(struct ndk_vadapter *v, const struct ndk_vqp *qp);

#endif /* NDK_VERBS_MW_H */
