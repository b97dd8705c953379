/* SPDX-License-Identifier: MIT */
/*
 * The local keys of the process's registrations (docs/verbs.md,
 * Completions): which ranges an lkey covers, in which PD, with local
 * write or not. Every registration of the provider goes through
 * ndk_verbs_reg and ndk_verbs_dereg (verbs/lam.h), which keep it here.
 * The device finds a bad local SGE only when it uses it, and reports it
 * with a status it also uses for other failures (rxe: a receive too
 * small for its Send and one with a bad SGE are both a local QP
 * operation error); the provider tells them apart with this.
 */
#ifndef NDK_VERBS_KEYS_H
#define NDK_VERBS_KEYS_H

#include <stdbool.h>
#include <stdint.h>
#include "verbs/verbs.h"

/* mr, registered over [iova, iova + length) with access: 0 or -ENOMEM. */
int ndk_vkeys_add(const struct ibv_mr *mr, uint64_t iova, int access);
void ndk_vkeys_del(const struct ibv_mr *mr);
/*
 * Whether every SGE of sge[0..n) lies in a live registration of pd whose
 * lkey it names, with local write if write (a receive, a Read's sink).
 * An SGE of zero bytes is always good (the device does not look at it).
 */
bool ndk_vkeys_check(const struct ibv_pd *pd, const struct ibv_sge *sge, int n,
		     bool write);

/*
 * The rkey of a type 2 window's next bind (verbs/mw.h, and a fast
 * registration's window: verbs/mr.h): rkey's index bits and a random key
 * byte other than rkey's. 0, or -EAGAIN without random bytes.
 */
int ndk_vkeys_next_rkey(uint32_t rkey, uint32_t *next);

#endif /* NDK_VERBS_KEYS_H */
