/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include "tool_wait.h"

void tool_wait_init(struct tool_wait *w)
{
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->cond, NULL);
	w->fired = 0;
	w->status = STATUS_PENDING;
}

void tool_wait_fire(struct tool_wait *w, NTSTATUS status)
{
	pthread_mutex_lock(&w->lock);
	w->fired++;
	w->status = status;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

VOID tool_wait_done(PVOID ctx, NTSTATUS status)
{
	tool_wait_fire(ctx, status);
}

VOID tool_wait_closed(PVOID ctx)
{
	tool_wait_fire(ctx, STATUS_SUCCESS);
}

NTSTATUS tool_wait_for(struct tool_wait *w, unsigned int ms)
{
	struct timespec ts = tool_deadline(ms);
	NTSTATUS st;

	pthread_mutex_lock(&w->lock);
	while (!w->fired) {
		if (!ms)
			pthread_cond_wait(&w->cond, &w->lock);
		else if (pthread_cond_timedwait(&w->cond, &w->lock, &ts) ==
			 ETIMEDOUT)
			break;
	}
	st = w->fired ? w->status : STATUS_IO_TIMEOUT;
	pthread_mutex_unlock(&w->lock);
	return st;
}

NTSTATUS tool_wait_result(struct tool_wait *w, NTSTATUS inline_status,
			  unsigned int ms)
{
	if (inline_status != STATUS_PENDING)
		return inline_status;
	return tool_wait_for(w, ms);
}

int tool_wait_count(struct tool_wait *w)
{
	int n;

	pthread_mutex_lock(&w->lock);
	n = w->fired;
	pthread_mutex_unlock(&w->lock);
	return n;
}

struct timespec tool_deadline(unsigned int ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return ts;
}

/* The latency tests read it in every iteration (tools/perf). */
TOOL_HOT uint64_t tool_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void tool_sleep_ms(unsigned int ms)
{
	struct timespec ts = { .tv_sec = ms / 1000,
			       .tv_nsec = (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}
