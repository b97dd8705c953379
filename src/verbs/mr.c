/* SPDX-License-Identifier: MIT */
/*
 * Memory regions over ibv_reg_mr (docs/verbs.md, Memory; docs/ndk.md,
 * Memory tokens). The MDL rules are the front end's (front/mdl.h), so
 * both providers accept the same buffers. The local token is the lkey,
 * the remote token the rkey. A fast-register MR gets its ibv_mr at
 * NdkFastRegister's post (docs/verbs.md, Fast registration).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "core/log.h"
#include "front/mdl.h"
#include "front/mr.h"
#include "verbs/keys.h"
#include "verbs/lam.h"
#include "verbs/mr.h"

#define PAGE_MASK ((uint64_t)PAGE_SIZE - 1)
/* As the software provider's cap (sw/mr.h): 1 GiB of 4 KiB pages. */
#define FR_MAX_PAGES (1u << 18)

uint32_t ndk_vmr_fr_max_pages(uint64_t max_mr_size)
{
	uint64_t n = max_mr_size / PAGE_SIZE;

	return n < FR_MAX_PAGES ? (uint32_t)n : FR_MAX_PAGES;
}

/*
 * The front end's access bits (front/mr.h) as IBV_ACCESS_*. Windows may
 * be bound to every MR (NDK has no flag for it). A Read's sink needs
 * remote write on iWARP (a Read Response is a tagged write into it), and
 * nothing elsewhere; in a fast registration only where the MR may have
 * remote access at all (remote_ok).
 */
static int ibv_access(unsigned int a, const struct ndk_vadapter *v,
		      bool remote_ok)
{
	int access = v->mw2 ? IBV_ACCESS_MW_BIND : 0;

	if (a & NDK_ACCESS_LOCAL_WRITE)
		access |= IBV_ACCESS_LOCAL_WRITE;
	if (a & NDK_ACCESS_REMOTE_READ)
		access |= IBV_ACCESS_REMOTE_READ;
	if (a & NDK_ACCESS_REMOTE_WRITE)
		access |= IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE;
	if (v->iwarp && remote_ok && (a & NDK_ACCESS_READ_SINK))
		access |= IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE;
	return access;
}

/* The MR's fast-register window goes, and leaves the adapter's map. */
static void win_free_locked(struct ndk_vmr *mr)
{
	struct ndk_vadapter *v = to_vad(mr->base.obj.adapter);
	struct ndk_vmr **pp;

	NDK_ASSERT_LOCKED(&mr->base.lock);
	if (!mr->win)
		return;
	ndk_lock(&v->fr_lock);
	for (pp = &v->fr_map[(mr->win_rkey >> 8) % NDK_VFR_BUCKETS]; *pp;
	     pp = &(*pp)->win_next)
		if (*pp == mr) {
			*pp = mr->win_next;
			break;
		}
	mr->win_qp = NULL;
	ndk_unlock(&v->fr_lock);
	mr->win_next = NULL;
	if (ibv_dealloc_mw(mr->win))
		ndk_warn("verbs: mr %p: ibv_dealloc_mw failed", (void *)mr);
	mr->win = NULL;
}

/* Lock held: drops the registration; its tokens name nothing after. A
 * window bound over it goes first (rxe refuses to deregister an MR a
 * window is bound to). */
static void mr_deregister_locked(struct ndk_vmr *mr)
{
	int ret;

	NDK_ASSERT_LOCKED(&mr->base.lock);
	win_free_locked(mr);
	if (!mr->mr)
		return;
	ret = ndk_verbs_dereg(mr->mr);
	if (ret)
		ndk_warn("verbs: mr %p: ibv_dereg_mr failed (%d)", (void *)mr,
			 ret);
	mr->mr = NULL;
	atomic_store(&mr->lkey, 0);
	atomic_store(&mr->rkey, 0);
}

void ndk_vmr_peer_invalidated(struct ndk_vadapter *v, uint32_t rkey)
{
	struct ndk_vmr *m;

	ndk_lock(&v->fr_lock);
	for (m = v->fr_map[(rkey >> 8) % NDK_VFR_BUCKETS]; m; m = m->win_next)
		if (atomic_load_explicit(&m->rkey, memory_order_relaxed) ==
		    rkey) {
			atomic_store_explicit(&m->peer_inv, true,
					      memory_order_release);
			break;
		}
	ndk_unlock(&v->fr_lock);
}

/* fr_lock held: an MR whose window is bound through qp, with a
 * reference, or NULL. */
static struct ndk_vmr *win_of_qp_locked(struct ndk_vadapter *v,
					const struct ndk_vqp *qp)
{
	struct ndk_vmr *m;
	unsigned int i;

	NDK_ASSERT_LOCKED(&v->fr_lock);
	for (i = 0; i < NDK_VFR_BUCKETS; i++)
		for (m = v->fr_map[i]; m; m = m->win_next)
			if (m->win_qp == qp) {
				/* In the map: its close has not begun, so
				 * the consumer's reference is still there. */
				ndk_obj_get(&m->base.obj);
				return m;
			}
	return NULL;
}

void ndk_vmr_qp_closing(struct ndk_vadapter *v, const struct ndk_vqp *qp)
{
	struct ndk_vmr *m;

	/* One at a time: fr_lock nests inside an MR's lock. Each pass
	 * takes the window out of the map, or leaves it to another QP. */
	for (;;) {
		ndk_lock(&v->fr_lock);
		m = win_of_qp_locked(v, qp);
		ndk_unlock(&v->fr_lock);
		if (!m)
			return;
		ndk_lock(&m->base.lock);
		if (m->win_qp == qp)
			win_free_locked(m);
		ndk_unlock(&m->base.lock);
		ndk_obj_put(&m->base.obj);
	}
}

/* Lock held: the MR's window, allocated at its first fast registration
 * and entered in the adapter's map. */
static int win_get_locked(struct ndk_vmr *mr)
{
	struct ndk_vadapter *v = to_vad(mr->base.obj.adapter);
	struct ndk_vmr **head;

	if (mr->win)
		return 0;
	mr->win = ibv_alloc_mw(mr->pd->pd, IBV_MW_TYPE_2);
	if (!mr->win)
		return -1;
	mr->win_rkey = mr->win->rkey;
	/* A new window with the index of the MR's last token (rxe reuses
	 * the one a local invalidation freed): its first bind's key must
	 * differ from that token's, as a bind's does from the last. */
	if ((mr->win_rkey >> 8) == (atomic_load(&mr->rkey) >> 8))
		mr->win_rkey = atomic_load(&mr->rkey);
	atomic_store(&mr->peer_inv, false);
	ndk_lock(&v->fr_lock);
	head = &v->fr_map[(mr->win_rkey >> 8) % NDK_VFR_BUCKETS];
	mr->win_next = *head;
	*head = mr;
	ndk_unlock(&v->fr_lock);
	return 0;
}

/* NdkRegisterMr's registration (front/mr.c checked it; mr->lock held). */
NTSTATUS ndk_verbs_mr_register(struct ndk_mr *base, uint64_t va, uint64_t len,
			       unsigned int acc)
{
	struct ndk_vmr *mr = container_of(base, struct ndk_vmr, base);
	int access = ibv_access(acc, to_vad(base->obj.adapter), true);

	mr->mr = ndk_verbs_reg(mr->pd->pd, va, len, va, access);
	if (!mr->mr)
		return ndk_verbs_errno_status(errno, NDK_VERBS_CREATE);
	atomic_store(&mr->lkey, mr->mr->lkey);
	atomic_store(&mr->rkey, mr->mr->rkey);
	mr->local_write = access & IBV_ACCESS_LOCAL_WRITE;
	return STATUS_SUCCESS;
}

void ndk_verbs_mr_deregister(struct ndk_mr *base)
{
	mr_deregister_locked(container_of(base, struct ndk_vmr, base));
}

/* Re-initialising drops the current fast registration, if any. */
NTSTATUS ndk_verbs_mr_fr_init(struct ndk_mr *base, ULONG count)
{
	(void)count;
	mr_deregister_locked(container_of(base, struct ndk_vmr, base));
	return STATUS_SUCCESS;
}

UINT32 ndk_verbs_mr_token(struct ndk_mr *base, bool remote)
{
	struct ndk_vmr *mr = container_of(base, struct ndk_vmr, base);

	return atomic_load(remote ? &mr->rkey : &mr->lkey);
}

/* Every page used aligned (-EINVAL), mapped (-EFAULT), and each the one
 * after the one before (else -EOPNOTSUPP: one registration cannot map
 * scattered pages from user space). */
static int fr_pages(const NDK_LOGICAL_ADDRESS *pages, uint32_t n)
{
	uint64_t first = (uint64_t)pages[0].QuadPart;
	uint32_t i;

	for (i = 0; i < n; i++) {
		uint64_t pa = (uint64_t)pages[i].QuadPart;

		if (!pa || (pa & PAGE_MASK))
			return -EINVAL;
		if (pa != first + (uint64_t)i * PAGE_SIZE)
			return -EOPNOTSUPP;
	}
	return ndk_mem_check_mapped(first, (uint64_t)n * PAGE_SIZE) ? -EFAULT
								    : 0;
}

NTSTATUS ndk_vmr_fast_register_locked(struct ndk_vmr *mr, struct ndk_vpd *pd,
				      const NDK_LOGICAL_ADDRESS *pages,
				      ULONG count, ULONG fbo, SIZE_T length,
				      uint64_t base, ULONG flags, bool iova_ok,
				      struct ndk_vmr_fr *fr,
				      struct ibv_send_wr *wr)
{
	struct ndk_vadapter *v = to_vad(mr->base.obj.adapter);
	const int remote = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;
	unsigned int acc;
	uint64_t host;
	uint32_t need;
	int access, ret;

	NDK_ASSERT_LOCKED(&mr->base.lock);
	memset(fr, 0, sizeof(*fr));
	if (!mr->base.fast || !pages || !mr->base.fr_ready ||
	    count > mr->base.fr_max_pages ||
	    ndk_access_from_op_flags(flags, &acc) ||
	    ndk_fr_geometry(count, fbo, length, base, &need))
		return STATUS_INVALID_PARAMETER;
	access = ibv_access(acc, v, mr->base.fr_remote);
	if ((access & remote) && !mr->base.fr_remote)
		return STATUS_ACCESS_VIOLATION;
	/* The MR's PD must be the QP's, as for a bind. */
	if (mr->pd != pd)
		return STATUS_ACCESS_VIOLATION;
	ret = fr_pages(pages, need);
	if (ret == -EOPNOTSUPP)
		return STATUS_NOT_SUPPORTED;
	if (ret)
		return STATUS_INVALID_PARAMETER;
	/* As in verbs, a fast registration needs an invalid MR: one a
	 * peer invalidated is (its window is free again). */
	if (mr->mr && !(mr->win && atomic_load_explicit(&mr->peer_inv,
							memory_order_acquire)))
		return STATUS_INVALID_DEVICE_STATE;
	host = (uint64_t)pages[0].QuadPart + fbo;
	/* A device that ignores the iova would place at the host address
	 * what the peer sends for base (docs/verbs.md). */
	if (!iova_ok && host != base)
		return STATUS_NOT_SUPPORTED;
	fr->local_write = access & IBV_ACCESS_LOCAL_WRITE;
	if (!v->fr_mw) {
		fr->reg = ndk_verbs_reg(pd->pd, host, length, base, access);
		if (!fr->reg)
			return ndk_verbs_errno_status(errno, NDK_VERBS_CREATE);
		return STATUS_SUCCESS;
	}
	/*
	 * The remote access is the window's: the registration itself has
	 * none, only what binding needs (and local write under a writable
	 * window, C10-74).
	 */
	if (win_get_locked(mr))
		return ndk_verbs_errno_status(errno, NDK_VERBS_CREATE);
	if (ndk_vkeys_next_rkey(mr->win_rkey, &fr->rkey))
		return STATUS_INSUFFICIENT_RESOURCES;
	fr->reg = ndk_verbs_reg(pd->pd, host, length, base, access & ~remote);
	if (!fr->reg)
		return ndk_verbs_errno_status(errno, NDK_VERBS_CREATE);
	fr->bind = true;
	fr->old = mr->mr;
	memset(wr, 0, sizeof(*wr));
	wr->opcode = IBV_WR_BIND_MW;
	wr->bind_mw.mw = mr->win;
	wr->bind_mw.rkey = fr->rkey;
	wr->bind_mw.bind_info.mr = fr->reg;
	wr->bind_mw.bind_info.addr = base;
	wr->bind_mw.bind_info.length = length;
	wr->bind_mw.bind_info.mw_access_flags = (unsigned int)(access & remote);
	return STATUS_SUCCESS;
}

void ndk_vmr_fast_register_end(struct ndk_vmr *mr, struct ndk_vmr_fr *fr,
			       NTSTATUS posted)
{
	NDK_ASSERT_LOCKED(&mr->base.lock);
	if (posted) {
		if (ndk_verbs_dereg(fr->reg))
			ndk_warn("verbs: mr %p: ibv_dereg_mr failed",
				 (void *)mr);
		return;
	}
	/* The old registration, if any, went with the bind's slot. */
	mr->mr = fr->reg;
	mr->local_write = fr->local_write;
	atomic_store(&mr->lkey, fr->reg->lkey);
	if (fr->bind) {
		/* The next bind names the window by this rkey: the library
		 * passes the ibv_mw's (rxe's checks it against the
		 * window's), and only a type 1 bind updates it. */
		mr->win->rkey = fr->rkey;
		mr->win_rkey = fr->rkey;
		ndk_lock(&to_vad(mr->base.obj.adapter)->fr_lock);
		mr->win_qp = fr->qp;
		ndk_unlock(&to_vad(mr->base.obj.adapter)->fr_lock);
		atomic_store_explicit(&mr->peer_inv, false,
				      memory_order_relaxed);
		atomic_store(&mr->rkey, fr->rkey);
	} else {
		atomic_store(&mr->rkey, fr->reg->rkey);
	}
}

struct ibv_mr *ndk_vmr_invalidate_locked(struct ndk_vmr *mr, bool *local_inv,
					 uint32_t *rkey)
{
	struct ibv_mr *old = mr->mr;

	NDK_ASSERT_LOCKED(&mr->base.lock);
	/*
	 * A window a peer freed must not be invalidated again; nor any on
	 * rxe, where the window goes instead (ndk_vmr_invalidate_end): Linux
	 * 6.1's rxe dereferences NULL when IBV_WR_LOCAL_INV reaches a free
	 * window, which a peer's invalidation not yet polled would make it.
	 */
	*local_inv = old && mr->win && !to_vad(mr->base.obj.adapter)->rxe &&
		     !atomic_load_explicit(&mr->peer_inv, memory_order_acquire);
	*rkey = mr->win_rkey;
	/* The tokens keep their values, which now name nothing. */
	mr->mr = NULL;
	return old;
}

void ndk_vmr_invalidate_end(struct ndk_vmr *mr, struct ibv_mr *old,
			    NTSTATUS posted)
{
	NDK_ASSERT_LOCKED(&mr->base.lock);
	if (posted) {
		mr->mr = old; /* not posted: still registered */
		return;
	}
	/* rxe: deallocating is safe whatever the window's state, and
	 * unbinds it from old before the slot deregisters that. */
	if (old && mr->win && to_vad(mr->base.obj.adapter)->rxe)
		win_free_locked(mr);
}

/* Closing deregisters: the consumer may free the memory as soon as the
 * close completes. */
static void mr_close_begin(struct ndk_obj *obj)
{
	struct ndk_vmr *mr = container_of(obj, struct ndk_vmr, base.obj);

	ndk_lock(&mr->base.lock);
	mr_deregister_locked(mr);
	ndk_unlock(&mr->base.lock);
}

static void mr_destroy(struct ndk_obj *obj)
{
	struct ndk_vmr *mr = container_of(obj, struct ndk_vmr, base.obj);

	if (mr->win) {
		ndk_lock(&mr->base.lock);
		win_free_locked(mr);
		ndk_unlock(&mr->base.lock);
	}
	if (mr->mr)
		ndk_verbs_dereg(mr->mr);
	ndk_mr_fini(&mr->base);
	free(mr);
}

static const struct ndk_obj_ops mr_ops = {
	.type = NdkObjectTypeMr,
	.name = "mr",
	.close_begin = mr_close_begin,
	.destroy = mr_destroy,
};

NTSTATUS ndk_verbs_create_mr(struct ndk_obj *pd_obj, bool fast_register,
			     NDK_MR **ppNdkMr)
{
	struct ndk_vpd *pd = container_of(pd_obj, struct ndk_vpd, obj);
	struct ndk_obj *antes[1];
	struct ndk_vmr *mr;
	NTSTATUS status;

	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return STATUS_INSUFFICIENT_RESOURCES;
	mr->pd = pd;
	ndk_mr_init(&mr->base, fast_register);
	antes[0] = &pd->obj;
	status = ndk_obj_setup(&mr->base.obj, pd->obj.adapter, &mr_ops,
			       &ndk_mr_dispatch, antes, 1);
	if (status)
		return status;
	*ppNdkMr = &mr->base.obj.pub.mr;
	return STATUS_SUCCESS;
}
