/* SPDX-License-Identifier: MIT */
/*
 * NdkBuildLAM / NdkReleaseLAM for every provider and the table of live
 * LAMs behind them (front/lam_table.h). The "adapter" is the CPU of this
 * process for both providers, so a logical address is a virtual address:
 * the LAM of an MDL range lists the page-aligned address of every page
 * the range touches (front/mdl.h, ndk_lam_plan).
 */
#include "core/log.h"
#include "front/adapter.h"
#include "front/lam.h"
#include "front/mdl.h"
#include "front/provider.h"

/* Completes inline every time: RequestCompletion is never called. */
NTSTATUS ndk_build_lam(NDK_ADAPTER *pNdkAdapter, MDL *Mdl, SIZE_T Length,
		       NDK_FN_REQUEST_COMPLETION RequestCompletion,
		       PVOID RequestContext,
		       NDK_LOGICAL_ADDRESS_MAPPING *pNdkLAM, ULONG *pLAMSize,
		       ULONG *pFBO)
{
	struct ndk_lam_table *t;
	struct ndk_lam_plan plan;
	uint64_t cookie;
	NTSTATUS status;
	int ret;

	if (!pNdkAdapter || !pLAMSize || !pFBO)
		return STATUS_INVALID_PARAMETER;
	t = &to_ndk_adapter(pNdkAdapter)->lams;
	status = ndk_lam_plan(Mdl, Length, pNdkLAM, pLAMSize, &plan);
	if (status)
		return status;
	ndk_write_lock(&t->lock);
	ret = ndk_lam_table_insert(
		t, plan.first, plan.first + plan.count * PAGE_SIZE, &cookie);
	ndk_rw_unlock(&t->lock);
	if (ret)
		return STATUS_INSUFFICIENT_RESOURCES;
	ndk_lam_fill(&plan, cookie, pNdkLAM, pLAMSize, pFBO);
	return STATUS_SUCCESS;
}

VOID ndk_release_lam(NDK_ADAPTER *pNdkAdapter,
		     NDK_LOGICAL_ADDRESS_MAPPING *pNdkLAM)
{
	struct ndk_adapter *ad;
	uint64_t start = 0;
	void *priv = NULL;
	int ret;

	if (!pNdkAdapter || !pNdkLAM)
		return;
	ad = to_ndk_adapter(pNdkAdapter);
	if (pNdkLAM->AdapterPageCount)
		start = (uint64_t)pNdkLAM->AdapterPageArray[0].QuadPart;
	ndk_write_lock(&ad->lams.lock);
	ret = ndk_lam_table_remove(&ad->lams, start,
				   (uintptr_t)pNdkLAM->AdapterContext, &priv);
	ndk_rw_unlock(&ad->lams.lock);
	if (ret) {
		ndk_warn("NdkReleaseLAM: %p is not a live LAM of adapter %s",
			 (void *)pNdkLAM, ad->ifname);
		return;
	}
	if (priv && ad->provider->lam_released)
		ad->provider->lam_released(ad, priv);
	/* The MDL is left alone; clearing our cookie catches a second
	 * release of the same LAM. */
	pNdkLAM->AdapterContext = NULL;
}
