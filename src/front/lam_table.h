/* SPDX-License-Identifier: MIT */
/*
 * An adapter's live logical address mappings, for every provider: the
 * table behind NdkBuildLAM and NdkReleaseLAM (front/lam.c): [start, end)
 * ranges sorted by start, which may overlap, each with the AdapterContext cookie
 * NdkReleaseLAM names it by and a pointer the provider keeps with it (the
 * verbs provider's registrations of the range). The software provider
 * checks SGEs carrying the privileged token against it; the verbs
 * provider turns them into registrations of the range that holds them.
 */
#ifndef NDK_FRONT_LAM_TABLE_H
#define NDK_FRONT_LAM_TABLE_H

#include <stdint.h>
#include "core/lock.h"

struct ndk_lam_range {
	uint64_t start, end; /* [start, end), whole pages */
	uint64_t cookie; /* the LAM's AdapterContext */
	uint64_t max_end; /* the largest end of this range and those before */
	void *priv; /* the provider's (its registrations of the range) */
};

struct ndk_lam_table {
	/* NDK_LOCK_LAM: everything below; lookups take it shared. The
	 * functions below are called with it held. */
	struct ndk_rwlock lock;
	struct ndk_lam_range *r;
	uint32_t n, cap;
	uint64_t next_cookie;
};

void ndk_lam_table_init(struct ndk_lam_table *t);
void ndk_lam_table_fini(struct ndk_lam_table *t);
/* Adds [start, end) (end > start): 0 and its cookie (never 0), or -ENOMEM. */
int ndk_lam_table_insert(struct ndk_lam_table *t, uint64_t start, uint64_t end,
			 uint64_t *cookie);
/*
 * Takes out the range of that cookie and gives back its priv. start is
 * where to look first; a consumer may have changed the LAM's page array
 * since, so the whole table is searched if need be. -ENOENT if no live
 * range has the cookie.
 */
int ndk_lam_table_remove(struct ndk_lam_table *t, uint64_t start,
			 uint64_t cookie, void **priv);
/* The index of a range that holds all of [va, va + len) (len > 0), or -1
 * when none does or the range wraps. */
int ndk_lam_table_find(const struct ndk_lam_table *t, uint64_t va,
		       uint64_t len);

#endif /* NDK_FRONT_LAM_TABLE_H */
