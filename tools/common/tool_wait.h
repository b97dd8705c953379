/* SPDX-License-Identifier: MIT */
/*
 * Waiting for NDK callbacks from a consumer thread: a one-shot request
 * completion (or any event) that a thread blocks on with a timeout, and
 * the clocks the tools, the conformance generators and the functional
 * tests share. Public NDKPI only.
 */
#ifndef NDK_TOOLS_TOOL_WAIT_H
#define NDK_TOOLS_TOOL_WAIT_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>
#include <ndk/ndk.h>

/* The functions a measured iteration runs through (the latency tests'
 * loops and their clock), placed together by the compiler: a loop then
 * spans one or two pages of code, as a plain socket ping-pong does
 * (docs/performance.md, "Code that stays in the TLB"). */
#define TOOL_HOT __attribute__((hot))

/* A request completion, counted: NDK completes each request exactly once,
 * so a count above one is a provider bug that callers can check for. */
struct tool_wait {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int fired;
	NTSTATUS status;
};

void tool_wait_init(struct tool_wait *w);
void tool_wait_fire(struct tool_wait *w, NTSTATUS status);
/* The request-completion callback; its context is the struct tool_wait. */
VOID tool_wait_done(PVOID ctx, NTSTATUS status);
/* The close callback (NDK_FN_CLOSE_COMPLETION): fires STATUS_SUCCESS. */
VOID tool_wait_closed(PVOID ctx);
/* The completion's status, or STATUS_IO_TIMEOUT after ms (0: forever). */
NTSTATUS tool_wait_for(struct tool_wait *w, unsigned int ms);
/* The inline status, or the completion's when it is STATUS_PENDING. */
NTSTATUS tool_wait_result(struct tool_wait *w, NTSTATUS inline_status,
			  unsigned int ms);
/* How many times it fired so far. */
int tool_wait_count(struct tool_wait *w);

/* CLOCK_REALTIME ms from now, for pthread_cond_timedwait. */
struct timespec tool_deadline(unsigned int ms);
/* CLOCK_MONOTONIC. */
uint64_t tool_now_ns(void);
void tool_sleep_ms(unsigned int ms);

#endif
