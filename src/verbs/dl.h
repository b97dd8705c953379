/* SPDX-License-Identifier: MIT */
/*
 * rdma-core's libraries, opened at run time (verbs/dl.c, docs/verbs.md,
 * Building).
 */
#ifndef NDK_VERBS_DL_H
#define NDK_VERBS_DL_H

/* The longest reason ndk_verbs_unavailable gives, with its NUL. */
#define NDK_VERBS_UNAVAILABLE_MAX 128

/*
 * NULL once libibverbs and librdmacm are loaded with every function the
 * provider calls (the first call loads them), else why not: the loader's
 * message ("libibverbs.so.1: cannot open shared object file: ...") or the
 * function missing. Thread-safe; the answer never changes.
 */
const char *ndk_verbs_unavailable(void);

#endif /* NDK_VERBS_DL_H */
