/* SPDX-License-Identifier: MIT */
/*
 * Logical address mappings of the verbs provider (docs/verbs.md, Logical
 * address mappings). A logical address is the page's virtual address, as
 * for the software provider; the adapter keeps the live LAMs as ranges of
 * whole pages (front/lam_table.h), each range's registrations (a list of
 * struct ndk_vlam_reg) its priv. An SGE carrying the privileged token is
 * given the lkey of a registration of the range that holds it, made on
 * the QP's PD the first time a request of that PD uses the range
 * (NdkBuildLAM knows no PD), and kept until NdkReleaseLAM or the PD goes.
 */
#ifndef NDK_VERBS_LAM_H
#define NDK_VERBS_LAM_H

#include <stdbool.h>
#include <stdint.h>
#include "core/lock.h"
#include "verbs/verbs.h"

/* The privileged token: an lkey no registration of ours keeps. */
#define NDK_VERBS_PRIVILEGED_TOKEN 0u

/*
 * The provider's one registration call (MRs, fast registration, LAMs):
 * ibv_reg_mr_iova, made again if it gave the privileged token as the
 * lkey, so the new one gets another key. NULL and errno on failure.
 */
struct ibv_mr *ndk_verbs_reg(struct ibv_pd *pd, uint64_t addr, size_t len,
			     uint64_t iova, int access);
/* Its counterpart: ibv_dereg_mr, and the lkey leaves verbs/keys.h. */
int ndk_verbs_dereg(struct ibv_mr *mr);

struct ndk_lam_table;

/* One registration of a range on one PD. */
struct ndk_vlam_reg {
	struct ndk_vlam_reg *next;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
};

/*
 * Rewrites the privileged token of every SGE (of non-zero length) in
 * sge[0..n) into the lkey of a registration on pd of the LAM holding it,
 * registering the LAM on pd first if needed. STATUS_ACCESS_VIOLATION if
 * an SGE lies in no live LAM, what ibv_reg_mr said if it failed.
 */
NTSTATUS ndk_vlam_rewrite(struct ndk_lam_table *t, struct ibv_pd *pd,
			  struct ibv_sge *sge, uint32_t n);

/* Whether any of sge[0..n) carries the privileged token (no lock). */
static inline bool ndk_vlam_wanted(const struct ibv_sge *sge, uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		if (sge[i].lkey == NDK_VERBS_PRIVILEGED_TOKEN && sge[i].length)
			return true;
	return false;
}

/* The PD is going: every LAM registration on it is deregistered. */
void ndk_vlam_drop_pd(struct ndk_lam_table *t, struct ibv_pd *pd);
/* A LAM was released: its registrations go (front/provider.h). */
void ndk_vlam_released(struct ndk_adapter *ad, void *regs);

#endif /* NDK_VERBS_LAM_H */
