/* SPDX-License-Identifier: MIT */
/* Logical address mappings and the privileged token (verbs/lam.h). */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "core/log.h"
#include "front/mdl.h"
#include "verbs/keys.h"
#include "verbs/lam.h"

void ndk_vlam_init(struct ndk_vlam_table *t)
{
	memset(t, 0, sizeof(*t));
	ndk_rwlock_init(&t->lock, NDK_LOCK_LAM);
	t->next_cookie = 1;
}

void ndk_vlam_fini(struct ndk_vlam_table *t)
{
	free(t->r);
	t->r = NULL;
	t->n = t->cap = 0;
	ndk_rwlock_destroy(&t->lock);
}

struct ibv_mr *ndk_verbs_reg(struct ibv_pd *pd, uint64_t addr, size_t len,
			     uint64_t iova, int access)
{
	struct ibv_mr *mr, *again;
	int err;

	mr = ibv_reg_mr_iova(pd, (void *)(uintptr_t)addr, len, iova, access);
	if (mr && mr->lkey == NDK_VERBS_PRIVILEGED_TOKEN) {
		/* Held while the second is made, so that one gets another
		 * key. */
		again = ibv_reg_mr_iova(pd, (void *)(uintptr_t)addr, len, iova,
					access);
		err = errno;
		ibv_dereg_mr(mr);
		errno = err;
		if (again && again->lkey == NDK_VERBS_PRIVILEGED_TOKEN) {
			ibv_dereg_mr(again);
			errno = EAGAIN;
			return NULL;
		}
		mr = again;
	}
	if (mr && ndk_vkeys_add(mr, iova, access)) {
		ibv_dereg_mr(mr);
		errno = ENOMEM;
		return NULL;
	}
	return mr;
}

int ndk_verbs_dereg(struct ibv_mr *mr)
{
	ndk_vkeys_del(mr);
	return ibv_dereg_mr(mr);
}

/* max_end of every range from i on, after a change at i. */
static void fix_max_end(struct ndk_vlam_table *t, uint32_t i)
{
	uint64_t m = i ? t->r[i - 1].max_end : 0;

	for (; i < t->n; i++) {
		if (t->r[i].end > m)
			m = t->r[i].end;
		t->r[i].max_end = m;
	}
}

/* The number of ranges whose start is at most va. */
static uint32_t upper_bound(const struct ndk_vlam_table *t, uint64_t va)
{
	uint32_t lo = 0, hi = t->n;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (t->r[mid].start <= va)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int ndk_vlam_insert(struct ndk_vlam_table *t, uint64_t start, uint64_t end,
		    uint64_t *cookie)
{
	uint32_t i;

	if (t->n == t->cap) {
		uint32_t cap = t->cap ? 2 * t->cap : 16;
		struct ndk_vlam_range *r = realloc(t->r, cap * sizeof(*r));

		if (!r)
			return -ENOMEM;
		t->r = r;
		t->cap = cap;
	}
	i = upper_bound(t, start);
	memmove(&t->r[i + 1], &t->r[i], (t->n - i) * sizeof(*t->r));
	t->n++;
	memset(&t->r[i], 0, sizeof(t->r[i]));
	t->r[i].start = start;
	t->r[i].end = end;
	t->r[i].cookie = t->next_cookie++;
	fix_max_end(t, i);
	*cookie = t->r[i].cookie;
	return 0;
}

int ndk_vlam_remove(struct ndk_vlam_table *t, uint64_t start, uint64_t cookie,
		    struct ndk_vlam_reg **regs)
{
	uint32_t i = upper_bound(t, start);

	/* Ranges of this start lie just before the bound. */
	while (i-- > 0 && t->r[i].start == start) {
		if (t->r[i].cookie != cookie)
			continue;
		*regs = t->r[i].regs;
		memmove(&t->r[i], &t->r[i + 1], (t->n - i - 1) * sizeof(*t->r));
		t->n--;
		fix_max_end(t, i);
		return 0;
	}
	return -ENOENT;
}

int ndk_vlam_find(const struct ndk_vlam_table *t, uint64_t va, uint64_t len)
{
	uint32_t i;
	uint64_t last;

	if (!len || va > UINT64_MAX - (len - 1))
		return -1;
	last = va + (len - 1);
	/*
	 * Candidates start at or before va; walking back, max_end says when
	 * no range further back reaches the last byte.
	 */
	for (i = upper_bound(t, va); i-- > 0 && t->r[i].max_end > last;)
		if (t->r[i].end > last)
			return (int)i;
	return -1;
}

static struct ndk_vlam_reg *reg_of(const struct ndk_vlam_range *r,
				   const struct ibv_pd *pd)
{
	struct ndk_vlam_reg *g;

	for (g = r->regs; g; g = g->next)
		if (g->pd == pd)
			return g;
	return NULL;
}

static void dereg_all(struct ndk_vlam_reg *g)
{
	while (g) {
		struct ndk_vlam_reg *next = g->next;

		if (ndk_verbs_dereg(g->mr))
			ndk_warn("verbs: LAM: ibv_dereg_mr failed (%d)", errno);
		free(g);
		g = next;
	}
}

/* The write lock held: range i registered on pd (local access only). */
static NTSTATUS register_range(struct ndk_vlam_table *t, uint32_t i,
			       struct ibv_pd *pd, uint32_t *lkey)
{
	struct ndk_vlam_range *r = &t->r[i];
	struct ndk_vlam_reg *g = calloc(1, sizeof(*g));

	if (!g)
		return STATUS_INSUFFICIENT_RESOURCES;
	g->mr = ndk_verbs_reg(pd, r->start, r->end - r->start, r->start,
			      IBV_ACCESS_LOCAL_WRITE);
	if (!g->mr) {
		NTSTATUS status =
			ndk_verbs_errno_status(errno, NDK_VERBS_CREATE);

		free(g);
		return status;
	}
	g->pd = pd;
	g->next = r->regs;
	r->regs = g;
	*lkey = g->mr->lkey;
	return STATUS_SUCCESS;
}

NTSTATUS ndk_vlam_rewrite(struct ndk_vlam_table *t, struct ibv_pd *pd,
			  struct ibv_sge *sge, uint32_t n)
{
	NTSTATUS status = STATUS_SUCCESS;
	bool writer = false;
	uint32_t k;

	ndk_read_lock(&t->lock);
	for (k = 0; k < n; k++) {
		struct ndk_vlam_reg *g;
		int i;

		if (sge[k].lkey != NDK_VERBS_PRIVILEGED_TOKEN || !sge[k].length)
			continue;
		i = ndk_vlam_find(t, sge[k].addr, sge[k].length);
		if (i < 0) {
			status = STATUS_ACCESS_VIOLATION;
			break;
		}
		g = reg_of(&t->r[i], pd);
		if (g) {
			sge[k].lkey = g->mr->lkey;
			continue;
		}
		if (!writer) {
			/* The first use on this PD: register under the
			 * write lock, then look again (the table may have
			 * changed meanwhile). */
			ndk_rw_unlock(&t->lock);
			ndk_write_lock(&t->lock);
			writer = true;
			k--;
			continue;
		}
		status = register_range(t, (uint32_t)i, pd, &sge[k].lkey);
		if (status)
			break;
	}
	ndk_rw_unlock(&t->lock);
	return status;
}

void ndk_vlam_drop_pd(struct ndk_vlam_table *t, struct ibv_pd *pd)
{
	struct ndk_vlam_reg *gone = NULL;
	uint32_t i;

	ndk_write_lock(&t->lock);
	for (i = 0; i < t->n; i++) {
		struct ndk_vlam_reg **pp = &t->r[i].regs;

		while (*pp) {
			struct ndk_vlam_reg *g = *pp;

			if (g->pd != pd) {
				pp = &g->next;
				continue;
			}
			*pp = g->next;
			g->next = gone;
			gone = g;
		}
	}
	ndk_rw_unlock(&t->lock);
	dereg_all(gone);
}

/* Completes inline every time: RequestCompletion is never called. */
NTSTATUS ndk_verbs_build_lam(NDK_ADAPTER *pNdkAdapter, MDL *Mdl, SIZE_T Length,
			     NDK_FN_REQUEST_COMPLETION RequestCompletion,
			     PVOID RequestContext,
			     NDK_LOGICAL_ADDRESS_MAPPING *pNdkLAM,
			     ULONG *pLAMSize, ULONG *pFBO)
{
	struct ndk_vlam_table *t;
	struct ndk_lam_plan plan;
	uint64_t cookie;
	NTSTATUS status;
	int ret;

	if (!pNdkAdapter || !pLAMSize || !pFBO)
		return STATUS_INVALID_PARAMETER;
	t = to_vad(to_ndk_adapter(pNdkAdapter))->lams;
	/* The software provider's rules (front/mdl.h): the same MDLs pass. */
	status = ndk_lam_plan(Mdl, Length, pNdkLAM, pLAMSize, &plan);
	if (status)
		return status;
	ndk_write_lock(&t->lock);
	ret = ndk_vlam_insert(t, plan.first,
			      plan.first + plan.count * PAGE_SIZE, &cookie);
	ndk_rw_unlock(&t->lock);
	if (ret)
		return STATUS_INSUFFICIENT_RESOURCES;
	ndk_lam_fill(&plan, cookie, pNdkLAM, pLAMSize, pFBO);
	return STATUS_SUCCESS;
}

VOID ndk_verbs_release_lam(NDK_ADAPTER *pNdkAdapter,
			   NDK_LOGICAL_ADDRESS_MAPPING *pNdkLAM)
{
	struct ndk_adapter *ad;
	struct ndk_vlam_reg *regs = NULL;
	struct ndk_vlam_table *t;
	uint64_t start = 0;
	int ret;

	if (!pNdkAdapter || !pNdkLAM)
		return;
	ad = to_ndk_adapter(pNdkAdapter);
	if (pNdkLAM->AdapterPageCount)
		start = (uint64_t)pNdkLAM->AdapterPageArray[0].QuadPart;
	t = to_vad(ad)->lams;
	ndk_write_lock(&t->lock);
	ret = ndk_vlam_remove(t, start, (uintptr_t)pNdkLAM->AdapterContext,
			      &regs);
	ndk_rw_unlock(&t->lock);
	if (ret) {
		ndk_warn("NdkReleaseLAM: %p is not a live LAM of adapter %s",
			 (void *)pNdkLAM, ad->ifname);
		return;
	}
	dereg_all(regs);
	/* A second release of the same LAM finds no cookie. */
	pNdkLAM->AdapterContext = NULL;
}
