/* SPDX-License-Identifier: MIT */
/*
 * The network namespace the calling thread is in, as the kernel names
 * it: the namespace cookie (SO_NETNS_COOKIE, Linux 5.14), which counts
 * from 1 for the initial namespace. The registry keys its entries by it;
 * the verbs provider asks whether it is in the initial namespace.
 */
#ifndef NDK_CORE_NETNS_H
#define NDK_CORE_NETNS_H

#include <stdint.h>

/* The cookie, or 0 where the kernel has none (before 5.14). */
uint64_t ndk_netns_cookie(void);

#endif /* NDK_CORE_NETNS_H */
