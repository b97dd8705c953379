/* SPDX-License-Identifier: MIT */
/* Logical address mappings and the privileged token (verbs/lam.h). */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "core/log.h"
#include "front/mdl.h"
#include "front/lam_table.h"
#include "verbs/keys.h"
#include "verbs/lam.h"

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

static struct ndk_vlam_reg *reg_of(const struct ndk_lam_range *r,
				   const struct ibv_pd *pd)
{
	struct ndk_vlam_reg *g;

	for (g = r->priv; g; g = g->next)
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
static NTSTATUS register_range(struct ndk_lam_table *t, uint32_t i,
			       struct ibv_pd *pd, uint32_t *lkey)
{
	struct ndk_lam_range *r = &t->r[i];
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
	g->next = r->priv;
	r->priv = g;
	*lkey = g->mr->lkey;
	return STATUS_SUCCESS;
}

NTSTATUS ndk_vlam_rewrite(struct ndk_lam_table *t, struct ibv_pd *pd,
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
		i = ndk_lam_table_find(t, sge[k].addr, sge[k].length);
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

void ndk_vlam_drop_pd(struct ndk_lam_table *t, struct ibv_pd *pd)
{
	struct ndk_vlam_reg *gone = NULL;
	uint32_t i;

	ndk_write_lock(&t->lock);
	for (i = 0; i < t->n; i++) {
		struct ndk_vlam_reg **pp =
			(struct ndk_vlam_reg **)&t->r[i].priv;

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

void ndk_vlam_released(struct ndk_adapter *ad, void *regs)
{
	(void)ad;
	dereg_all(regs);
}
