/* SPDX-License-Identifier: MIT */
/*
 * NdkBuildLAM / NdkReleaseLAM (NDK_FN_BUILD_LAM, NDK_FN_RELEASE_LAM,
 * NDK_LOGICAL_ADDRESS_MAPPING).
 *
 * The "adapter" is the CPU of this process, so a logical address is simply
 * a virtual address here: the LAM of an MDL range lists the page-aligned
 * virtual address of every PAGE_SIZE page the range touches, and *pFBO is
 * the range's offset in the first page. The pages of one LAM are therefore
 * contiguous, although consumers may not rely on that.
 *
 * AdapterContext is a cookie naming the LAM in the adapter's registry of
 * live LAMs (qp/stag.h); SGEs carrying the privileged token are checked
 * against that registry (ndk_stag_sge_lookup), and NdkReleaseLAM only
 * accepts a LAM the registry knows.
 */
#include <errno.h>
#include <stddef.h>
#include "front/adapter.h"
#include "core/log.h"
#include "qp/adapter.h"
#include "qp/provider.h"
#include "qp/mr.h"
#include "qp/stag.h"

#define PAGE_MASK ((uint64_t)PAGE_SIZE - 1)

/* Completes inline every time, so RequestCompletion is never called. */
NTSTATUS ndk_build_lam(NDK_ADAPTER *pNdkAdapter, MDL *Mdl, SIZE_T Length,
		       NDK_FN_REQUEST_COMPLETION RequestCompletion,
		       PVOID RequestContext,
		       NDK_LOGICAL_ADDRESS_MAPPING *pNdkLAM, ULONG *pLAMSize,
		       ULONG *pFBO)
{
	struct ndk_adapter *ad;
	uint64_t va, first, count, need, cookie, i;

	if (!pNdkAdapter || !pLAMSize || !pFBO)
		return STATUS_INVALID_PARAMETER;
	ad = to_ndk_adapter(pNdkAdapter);
	/* Length 0, past the MDL chain, or not virtually contiguous. */
	if (ndk_mdl_range(Mdl, Length, &va))
		return STATUS_INVALID_PARAMETER;
	first = va & ~PAGE_MASK;
	count = (((va + Length - 1) & ~PAGE_MASK) - first) / PAGE_SIZE + 1;
	need = offsetof(NDK_LOGICAL_ADDRESS_MAPPING, AdapterPageArray) +
	       count * sizeof(NDK_LOGICAL_ADDRESS);
	/* The size is reported in a ULONG: larger LAMs cannot be described. */
	if (need > UINT32_MAX)
		return STATUS_INSUFFICIENT_RESOURCES;
	if (ndk_mem_check_mapped(va, Length))
		return STATUS_INVALID_PARAMETER;
	if (!pNdkLAM || *pLAMSize < need) {
		*pLAMSize = (ULONG)need;
		return STATUS_BUFFER_TOO_SMALL;
	}
	if (ndk_stag_lam_add(ndk_sw_stags(ad), first, first + count * PAGE_SIZE,
			     &cookie))
		return STATUS_INSUFFICIENT_RESOURCES;
	pNdkLAM->AdapterContext = (PVOID)(uintptr_t)cookie;
	pNdkLAM->AdapterPageCount = (ULONG)count;
	for (i = 0; i < count; i++)
		pNdkLAM->AdapterPageArray[i].QuadPart =
			(LONGLONG)(first + i * PAGE_SIZE);
	*pLAMSize = (ULONG)need;
	*pFBO = (ULONG)(va & PAGE_MASK);
	return STATUS_SUCCESS;
}

VOID ndk_release_lam(NDK_ADAPTER *pNdkAdapter,
		     NDK_LOGICAL_ADDRESS_MAPPING *pNdkLAM)
{
	struct ndk_adapter *ad;
	uint64_t start = 0;

	if (!pNdkAdapter || !pNdkLAM)
		return;
	ad = to_ndk_adapter(pNdkAdapter);
	if (pNdkLAM->AdapterPageCount)
		start = (uint64_t)pNdkLAM->AdapterPageArray[0].QuadPart;
	if (ndk_stag_lam_remove(ndk_sw_stags(ad), start,
				(uintptr_t)pNdkLAM->AdapterContext)) {
		ndk_warn("NdkReleaseLAM: %p is not a live LAM of adapter %s",
			 (void *)pNdkLAM, ad->ifname);
		return;
	}
	/* The MDL is left alone; clearing our cookie catches a double release. */
	pNdkLAM->AdapterContext = NULL;
}
