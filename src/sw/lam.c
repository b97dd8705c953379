/* SPDX-License-Identifier: MIT */
/*
 * NdkBuildLAM / NdkReleaseLAM (NDK_FN_BUILD_LAM, NDK_FN_RELEASE_LAM,
 * NDK_LOGICAL_ADDRESS_MAPPING).
 *
 * The "adapter" is the CPU of this process, so a logical address is simply
 * a virtual address here: the LAM of an MDL range lists the page-aligned
 * virtual address of every PAGE_SIZE page the range touches, and *pFBO is
 * the range's offset in the first page (front/mdl.h, ndk_lam_plan: the
 * same for every provider). The pages of one LAM are therefore
 * contiguous, although consumers may not rely on that.
 *
 * AdapterContext is a cookie naming the LAM in the adapter's registry of
 * live LAMs (sw/stag.h); SGEs carrying the privileged token are checked
 * against that registry (sw_stag_sge_lookup), and NdkReleaseLAM only
 * accepts a LAM the registry knows.
 */
#include <errno.h>
#include <stddef.h>
#include "front/adapter.h"
#include "core/log.h"
#include "front/mdl.h"
#include "sw/adapter.h"
#include "sw/sw.h"
#include "sw/mr.h"
#include "sw/stag.h"

/* Completes inline every time, so RequestCompletion is never called. */
NTSTATUS sw_build_lam(NDK_ADAPTER *pNdkAdapter, MDL *Mdl, SIZE_T Length,
		      NDK_FN_REQUEST_COMPLETION RequestCompletion,
		      PVOID RequestContext,
		      NDK_LOGICAL_ADDRESS_MAPPING *pNdkLAM, ULONG *pLAMSize,
		      ULONG *pFBO)
{
	struct ndk_lam_plan plan;
	uint64_t cookie;
	NTSTATUS status;

	if (!pNdkAdapter || !pLAMSize || !pFBO)
		return STATUS_INVALID_PARAMETER;
	status = ndk_lam_plan(Mdl, Length, pNdkLAM, pLAMSize, &plan);
	if (status)
		return status;
	if (sw_stag_lam_add(sw_stags(to_ndk_adapter(pNdkAdapter)), plan.first,
			    plan.first + plan.count * PAGE_SIZE, &cookie))
		return STATUS_INSUFFICIENT_RESOURCES;
	ndk_lam_fill(&plan, cookie, pNdkLAM, pLAMSize, pFBO);
	return STATUS_SUCCESS;
}

VOID sw_release_lam(NDK_ADAPTER *pNdkAdapter,
		    NDK_LOGICAL_ADDRESS_MAPPING *pNdkLAM)
{
	struct ndk_adapter *ad;
	uint64_t start = 0;

	if (!pNdkAdapter || !pNdkLAM)
		return;
	ad = to_ndk_adapter(pNdkAdapter);
	if (pNdkLAM->AdapterPageCount)
		start = (uint64_t)pNdkLAM->AdapterPageArray[0].QuadPart;
	if (sw_stag_lam_remove(sw_stags(ad), start,
			       (uintptr_t)pNdkLAM->AdapterContext)) {
		ndk_warn("NdkReleaseLAM: %p is not a live LAM of adapter %s",
			 (void *)pNdkLAM, ad->ifname);
		return;
	}
	/* The MDL is left alone; clearing our cookie catches a double release. */
	pNdkLAM->AdapterContext = NULL;
}
