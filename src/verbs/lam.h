/* SPDX-License-Identifier: MIT */
/*
 * Logical address mappings of the verbs provider (docs/verbs.md, Logical
 * address mappings). A logical address is the page's virtual address, as
 * for the software provider; the adapter keeps the live LAMs as ranges of
 * whole pages, sorted by start. An SGE carrying the privileged token is
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

/* One registration of a range on one PD. */
struct ndk_vlam_reg {
	struct ndk_vlam_reg *next;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
};

struct ndk_vlam_range {
	uint64_t start, end; /* [start, end), whole pages */
	uint64_t cookie; /* the LAM's AdapterContext */
	uint64_t max_end; /* the largest end of this range and those before */
	struct ndk_vlam_reg *regs;
};

struct ndk_vlam_table {
	struct ndk_rwlock lock; /* NDK_LOCK_LAM: everything below */
	struct ndk_vlam_range *r;
	uint32_t n, cap;
	uint64_t next_cookie;
};

/* ---- The ranges alone (no device: tests/unit/test_verbs_lam.c) ----- */

void ndk_vlam_init(struct ndk_vlam_table *t);
/* Frees the table; every registration must be gone (ndk_vlam_drop_pd). */
void ndk_vlam_fini(struct ndk_vlam_table *t);
/* Adds [start, end) (end > start): 0 and its cookie, or -ENOMEM. */
int ndk_vlam_insert(struct ndk_vlam_table *t, uint64_t start, uint64_t end,
		    uint64_t *cookie);
/*
 * Takes the range of that cookie out (start is where to look) and gives
 * back its registrations, to be deregistered by the caller; -ENOENT if no
 * live range has the cookie.
 */
int ndk_vlam_remove(struct ndk_vlam_table *t, uint64_t start, uint64_t cookie,
		    struct ndk_vlam_reg **regs);
/*
 * The index of a range that holds all of [va, va + len) (len > 0), or -1
 * when none does (or the range wraps). Overlapping ranges are allowed.
 * The lock is the caller's.
 */
int ndk_vlam_find(const struct ndk_vlam_table *t, uint64_t va, uint64_t len);

/* ---- With the device ----------------------------------------------- */

/*
 * Rewrites the privileged token of every SGE (of non-zero length) in
 * sge[0..n) into the lkey of a registration on pd of the LAM holding it,
 * registering the LAM on pd first if needed. STATUS_ACCESS_VIOLATION if
 * an SGE lies in no live LAM, what ibv_reg_mr said if it failed.
 */
NTSTATUS ndk_vlam_rewrite(struct ndk_vlam_table *t, struct ibv_pd *pd,
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
void ndk_vlam_drop_pd(struct ndk_vlam_table *t, struct ibv_pd *pd);

NTSTATUS ndk_verbs_build_lam(NDK_ADAPTER *pNdkAdapter, MDL *Mdl, SIZE_T Length,
			     NDK_FN_REQUEST_COMPLETION RequestCompletion,
			     PVOID RequestContext,
			     NDK_LOGICAL_ADDRESS_MAPPING *pNdkLAM,
			     ULONG *pLAMSize, ULONG *pFBO);
VOID ndk_verbs_release_lam(NDK_ADAPTER *pNdkAdapter,
			   NDK_LOGICAL_ADDRESS_MAPPING *pNdkLAM);

#endif /* NDK_VERBS_LAM_H */
