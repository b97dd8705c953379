/* SPDX-License-Identifier: MIT */
/* Small compiler helpers shared by every layer. */
#ifndef NDK_CORE_COMPILER_H
#define NDK_CORE_COMPILER_H

#include <stddef.h>

#define container_of(ptr, type, member) \
	((type *)(void *)((char *)(ptr)-offsetof(type, member)))

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#define likely(x)   __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

#define NDK_EXPORT __attribute__((visibility("default")))

#ifndef MIN
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#endif
#ifndef MAX
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#endif

#endif /* NDK_CORE_COMPILER_H */
