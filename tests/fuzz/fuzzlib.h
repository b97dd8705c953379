/* SPDX-License-Identifier: MIT */
/*
 * What the fuzz targets that run a live adapter share: memory mapped at a
 * fixed address when the address space allows (so a corpus can aim Writes
 * and Reads at it, run after run), and registering it.
 */
#ifndef NDK_FUZZLIB_H
#define NDK_FUZZLIB_H

#include <stddef.h>
#include <stdint.h>
#include <ndk/ndk.h>

/* len bytes at `at` (0: anywhere) or, if that is taken, anywhere; NULL
 * if mmap fails. */
uint8_t *fuzz_map(size_t len, uintptr_t at);
/* An MR over [p, p + len) on pd with flags; NULL on failure. */
NDK_MR *fuzz_reg(NDK_PD *pd, void *p, size_t len, ULONG flags);

#endif
