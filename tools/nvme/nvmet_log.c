// SPDX-License-Identifier: MIT
/*
 * ndknvmet's log lines, on stdout and whole (one lock): every part of the
 * target logs through here, so none calls back into the command line.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include "nvmet.h"

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

static void vlog(const char *fmt, va_list ap)
	__attribute__((format(printf, 1, 0)));

static void vlog(const char *fmt, va_list ap)
{
	pthread_mutex_lock(&log_lock);
	fputs("ndknvmet: ", stdout);
	vprintf(fmt, ap);
	fputc('\n', stdout);
	fflush(stdout);
	pthread_mutex_unlock(&log_lock);
}

void nvmet_log(struct nvmet_target *t, const char *fmt, ...)
{
	va_list ap;

	(void)t;
	va_start(ap, fmt);
	vlog(fmt, ap);
	va_end(ap);
}

void nvmet_debug(struct nvmet_target *t, const char *fmt, ...)
{
	va_list ap;

	if (t->verbose < 1)
		return;
	va_start(ap, fmt);
	vlog(fmt, ap);
	va_end(ap);
}
