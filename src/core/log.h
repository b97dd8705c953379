/* SPDX-License-Identifier: MIT */
/*
 * Diagnostics: to stderr, or to the consumer's handler (NdkSetLogHandler,
 * ndk/ndk.h). The level comes from NDK_LOG (error, warn, info, debug;
 * default warn), read once. The levels are NDK_LOG_LEVEL's (log.c checks).
 */
#ifndef NDK_CORE_LOG_H
#define NDK_CORE_LOG_H

enum ndk_log_level {
	NDK_LOG_ERROR,
	NDK_LOG_WARN,
	NDK_LOG_INFO,
	NDK_LOG_DEBUG,
};

extern int ndk_log_threshold;
void ndk_log_init(void);
void ndk_log(enum ndk_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define ndk_log_enabled(level) ((int)(level) <= ndk_log_threshold)
#define ndk_err(...)	       ndk_log(NDK_LOG_ERROR, __VA_ARGS__)
#define ndk_warn(...)	       ndk_log(NDK_LOG_WARN, __VA_ARGS__)
#define ndk_info(...)                                       \
	do {                                                \
		if (ndk_log_enabled(NDK_LOG_INFO))          \
			ndk_log(NDK_LOG_INFO, __VA_ARGS__); \
	} while (0)
#define ndk_dbg(...)                                         \
	do {                                                 \
		if (ndk_log_enabled(NDK_LOG_DEBUG))          \
			ndk_log(NDK_LOG_DEBUG, __VA_ARGS__); \
	} while (0)

#endif /* NDK_CORE_LOG_H */
