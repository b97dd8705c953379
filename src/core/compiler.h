/* SPDX-License-Identifier: MIT */
/* Small compiler helpers shared by every layer. */
#ifndef NDK_CORE_COMPILER_H
#define NDK_CORE_COMPILER_H

#include <stddef.h>
#include <string.h>

#define container_of(ptr, type, member) \
	((type *)(void *)((char *)(ptr)-offsetof(type, member)))

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#define likely(x)   __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

#define NDK_EXPORT __attribute__((visibility("default")))

/*
 * The functions every message runs through (docs/performance.md, "Code
 * that stays in the TLB"). GCC places hot functions together, so the
 * small-message path spans a few pages of code instead of twenty: on a
 * machine whose system calls flush the TLB, each page a message's path
 * touches after its send or receive costs a page walk.
 */
#define NDK_HOT __attribute__((hot))

/*
 * memcpy for the few bytes of a small message or an SGE or two: fixed-size
 * moves the compiler inlines (two overlapping ones cover every length up to
 * twice their size), not a call through the PLT into libc, whose pages
 * the small-message path would otherwise touch on every hop (NDK_HOT).
 */
static inline void ndk_copy(void *dst, const void *src, size_t n)
{
	unsigned char *d = dst;
	const unsigned char *s = src;

	if (n > 32) {
		memcpy(d, s, n);
	} else if (n >= 16) {
		__builtin_memcpy(d, s, 16);
		__builtin_memcpy(d + n - 16, s + n - 16, 16);
	} else if (n >= 8) {
		__builtin_memcpy(d, s, 8);
		__builtin_memcpy(d + n - 8, s + n - 8, 8);
	} else if (n >= 4) {
		__builtin_memcpy(d, s, 4);
		__builtin_memcpy(d + n - 4, s + n - 4, 4);
	} else {
		while (n--)
			*d++ = *s++;
	}
}

/* In a spin-wait: lets the sibling hyperthread run, saves power. */
static inline void ndk_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ volatile("yield");
#endif
}

#ifndef MIN
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#endif
#ifndef MAX
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#endif

#endif /* NDK_CORE_COMPILER_H */
