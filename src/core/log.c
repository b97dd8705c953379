/* SPDX-License-Identifier: MIT */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <ndk/ndk.h>
#include "core/compiler.h"
#include "core/log.h"

_Static_assert((int)NDK_LOG_ERROR == NdkLogLevelError &&
		       (int)NDK_LOG_WARN == NdkLogLevelWarning &&
		       (int)NDK_LOG_INFO == NdkLogLevelInfo &&
		       (int)NDK_LOG_DEBUG == NdkLogLevelDebug,
	       "core/log.h's levels are NDK_LOG_LEVEL's");

int ndk_log_threshold = NDK_LOG_WARN;
static pthread_once_t log_once = PTHREAD_ONCE_INIT;

/*
 * The consumer's handler and its context, read together under the read
 * side for the whole call, so NdkSetLogHandler (the write side) returns
 * only once no call of the old handler is left. A plain rwlock, not
 * core/lock.h's: lines are logged under every lock of the hierarchy, and
 * this one is always the last taken.
 */
static pthread_rwlock_t log_sink_lock = PTHREAD_RWLOCK_INITIALIZER;
static NDK_LOG_HANDLER *log_handler;
static PVOID log_handler_ctx;

static void log_read_env(void)
{
	static const char *const names[] = { "error", "warn", "info", "debug" };
	const char *v = getenv("NDK_LOG");
	unsigned int i;

	if (!v)
		return;
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(v, names[i]))
			ndk_log_threshold = (int)i;
}

void ndk_log_init(void)
{
	pthread_once(&log_once, log_read_env);
}

NDK_EXPORT VOID NdkSetLogHandler(NDK_LOG_HANDLER *Handler, PVOID Context)
{
	pthread_rwlock_wrlock(&log_sink_lock);
	log_handler = Handler;
	log_handler_ctx = Handler ? Context : NULL;
	pthread_rwlock_unlock(&log_sink_lock);
}

void ndk_log(enum ndk_log_level level, const char *fmt, ...)
{
	static const char *const tags[] = { "error", "warn", "info", "debug" };
	char line[512];
	va_list ap;
	int n;

	if (!ndk_log_enabled(level))
		return;
	/* The prefix is stderr's only: a handler gets the level apart. */
	n = snprintf(line, sizeof(line), "libndk[%d] %s: ", (int)getpid(),
		     tags[level]);
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	pthread_rwlock_rdlock(&log_sink_lock);
	if (log_handler)
		log_handler(log_handler_ctx, (NDK_LOG_LEVEL)level, line + n);
	else
		/* One write per line so concurrent threads do not
		 * interleave. */
		fprintf(stderr, "%s\n", line);
	pthread_rwlock_unlock(&log_sink_lock);
}
