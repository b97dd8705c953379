/* SPDX-License-Identifier: MIT */
/*
 * What the fuzz targets that run a live adapter share: memory mapped at a
 * fixed address when the address space allows and tokens that are the
 * same in every run (so a corpus can aim Writes and Reads at them, run
 * after run), and registering it.
 */
#ifndef NDK_FUZZLIB_H
#define NDK_FUZZLIB_H

#include <stddef.h>
#include <stdint.h>
#include <ndk/ndk.h>

/*
 * Makes the tokens of adapters opened afterwards the same in every run
 * (the first MR's is 0x101, the second's 0x201), so a corpus can aim at
 * them: the STag table gets zeros for random bytes (sw/stag.h).
 */
void fuzz_fixed_tokens(void);
/* len bytes at `at` (0: anywhere) or, if that is taken, anywhere; NULL
 * if mmap fails. */
uint8_t *fuzz_map(size_t len, uintptr_t at);
/* An MR over [p, p + len) on pd with flags; NULL on failure. */
NDK_MR *fuzz_reg(NDK_PD *pd, void *p, size_t len, ULONG flags);

#endif
