/* SPDX-License-Identifier: MIT */
/*
 * Memory tokens (iWARP STags): the per-adapter table that maps a token to
 * the MR or MW it names, used for local SGE checks and for every tagged
 * placement and Read Request (RFC 5040 section 6.4, RFC 5041 section 8).
 */
#ifndef NDK_QP_STAG_H
#define NDK_QP_STAG_H

struct ndk_stag_table;

struct ndk_stag_table *ndk_stag_table_create(void);
void ndk_stag_table_destroy(struct ndk_stag_table *t);

#endif /* NDK_QP_STAG_H */
