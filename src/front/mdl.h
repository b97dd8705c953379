/* SPDX-License-Identifier: MIT */
/*
 * What every provider checks of the MDLs it is given (NdkRegisterMr,
 * NdkBuildLAM): on Linux an MDL chain describes a virtually contiguous
 * buffer of this process (front/mdl.c has the Windows helpers).
 */
#ifndef NDK_FRONT_MDL_H
#define NDK_FRONT_MDL_H

#include <stdint.h>
#include <ndk/ndk.h>

/* Longest MDL chain walked; a longer (or cyclic) chain is refused. */
#define NDK_MDL_CHAIN_MAX 65536u

/*
 * Checks that the chain is virtually contiguous (each MDL starts where
 * the previous one ends), non-NULL, not zero-based, and that
 * 0 < length <= its total byte count; *va is the first byte. -EINVAL
 * otherwise.
 */
int ndk_mdl_range(const MDL *mdl, uint64_t length, uint64_t *va);
/*
 * 0 if every page of [va, va + len) is mapped in this process (mincore),
 * -EFAULT if one is not, -EINVAL if the range wraps. Protection is not
 * checked: the consumer owns and has locked the buffer.
 */
int ndk_mem_check_mapped(uint64_t va, uint64_t len);

/*
 * NdkBuildLAM for every provider: a logical address is the page-aligned
 * virtual address of a page of this process, so the LAM of an MDL range
 * lists every PAGE_SIZE page it touches and *pFBO is its offset in the
 * first. ndk_lam_plan checks the parameters and the consumer's buffer
 * (STATUS_BUFFER_TOO_SMALL with the size in *pLAMSize); on
 * STATUS_SUCCESS the provider records [first, first + count pages) under
 * a cookie of its own and ndk_lam_fill writes the LAM out.
 */
struct ndk_lam_plan {
	uint64_t va, first, count;
	ULONG size; /* of the NDK_LOGICAL_ADDRESS_MAPPING */
};

NTSTATUS ndk_lam_plan(const MDL *Mdl, SIZE_T Length,
		      const NDK_LOGICAL_ADDRESS_MAPPING *pNdkLAM,
		      ULONG *pLAMSize, struct ndk_lam_plan *plan);
void ndk_lam_fill(const struct ndk_lam_plan *plan, uint64_t cookie,
		  NDK_LOGICAL_ADDRESS_MAPPING *pNdkLAM, ULONG *pLAMSize,
		  ULONG *pFBO);

#endif /* NDK_FRONT_MDL_H */
