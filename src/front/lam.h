/* SPDX-License-Identifier: MIT */
/*
 * NdkBuildLAM and NdkReleaseLAM for every provider (front/lam.c): the
 * rules of a LAM are front/mdl.h's, the live ones are the adapter's
 * table (front/lam_table.h).
 */
#ifndef NDK_FRONT_LAM_H
#define NDK_FRONT_LAM_H

#include <ndk/ndk.h>

/* NdkBuildLAM and NdkReleaseLAM, the adapter's slots. A release calls
 * the provider's lam_released with the range's priv, if any. */
NTSTATUS ndk_build_lam(NDK_ADAPTER *pNdkAdapter, MDL *Mdl, SIZE_T Length,
		       NDK_FN_REQUEST_COMPLETION RequestCompletion,
		       PVOID RequestContext,
		       NDK_LOGICAL_ADDRESS_MAPPING *pNdkLAM, ULONG *pLAMSize,
		       ULONG *pFBO);
VOID ndk_release_lam(NDK_ADAPTER *pNdkAdapter,
		     NDK_LOGICAL_ADDRESS_MAPPING *pNdkLAM);

#endif /* NDK_FRONT_LAM_H */
