/* SPDX-License-Identifier: MIT */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "core/log.h"

int ndk_log_threshold = NDK_LOG_WARN;
static pthread_once_t log_once = PTHREAD_ONCE_INIT;

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

void ndk_log(enum ndk_log_level level, const char *fmt, ...)
{
	static const char *const tags[] = { "error", "warn", "info", "debug" };
	char line[512];
	va_list ap;
	int n;

	if (!ndk_log_enabled(level))
		return;
	n = snprintf(line, sizeof(line), "libndk[%d] %s: ", (int)getpid(),
		     tags[level]);
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	/* One write per line so concurrent threads do not interleave. */
	fprintf(stderr, "%s\n", line);
}
