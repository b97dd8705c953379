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

#endif /* NDK_FRONT_MDL_H */
