/* SPDX-License-Identifier: MIT */
/*
 * What ndkping and ndkperf share beyond tools/common: a CQ that is polled
 * or waited on, a QP on it, and percentiles. Public NDKPI only.
 */
#ifndef NDK_TOOLS_PERFUTIL_H
#define NDK_TOOLS_PERFUTIL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <ndk/ndk.h>
#include "tool_host.h"
#include "toolutil.h"

#define PERF_DEFAULT_PORT 7471

/*
 * A CQ polled by its owner, or (event mode) armed and waited on: the
 * notification callback signals a condition variable.
 */
struct perf_cq {
	NDK_CQ *cq;
	bool events;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool notified;
	/* Set by perf_cq_abandon (the peer is gone): waits return 0. */
	atomic_bool abandoned;
	/* Failed results are returned, not fatal (a server outlives the
	 * sessions of its clients). */
	bool errors_ok;
};

void perf_cq_create(struct tool_host *h, struct perf_cq *c, ULONG depth,
		    bool events);
void perf_cq_close(struct perf_cq *c);
/*
 * Waits for at least one result and returns how many (up to n), or 0 if
 * deadline_ns passed (0 = no deadline) or the CQ was abandoned. Results
 * with an error status are fatal, unless errors_ok: a benchmark must not
 * measure failures.
 */
ULONG perf_cq_wait(struct perf_cq *c, NDK_RESULT *res, ULONG n,
		   uint64_t deadline_ns);

/*
 * Ends every present and future wait on c: the connection's disconnect
 * event says nothing more will complete (NDK does not flush on a peer's
 * disconnect, so the posted receives would wait forever). Any thread.
 */
void perf_cq_abandon(struct perf_cq *c);

/* Arms the CQ and sleeps until it notifies or is abandoned, or for at
 * most ms (0: no limit). Arming with results queued since the last
 * notification fires at once (NDK arm rules), so nothing is missed. */
void perf_cq_wait_any(struct perf_cq *c, unsigned int ms);

NDK_QP *perf_qp_create(struct tool_host *h, struct perf_cq *c, ULONG depth);

/* Percentile p (0-100) of n samples, sorting them. */
double perf_percentile(double *v, size_t n, double p);

/*
 * Latency samples in microseconds, appended by one thread while another
 * reads what is there so far (interval reports): chunks that never move,
 * published by the count. Past PERF_SAMPLE_MAX samples they are counted
 * as dropped, not kept.
 */
#define PERF_SAMPLE_CHUNK_BITS 16
#define PERF_SAMPLE_CHUNKS     4096
#define PERF_SAMPLE_MAX	       ((size_t)PERF_SAMPLE_CHUNKS << PERF_SAMPLE_CHUNK_BITS)
struct perf_samples {
	float *chunk[PERF_SAMPLE_CHUNKS];
	atomic_size_t n;
	uint64_t dropped;
};

/* Only the appending thread. False when out of memory. */
bool perf_samples_add(struct perf_samples *s, double usec);
/* How many are readable (any thread). */
size_t perf_samples_count(struct perf_samples *s);
/* Sample i < perf_samples_count. */
double perf_samples_get(const struct perf_samples *s, size_t i);
/* Appends samples [from, to) to out. */
void perf_samples_copy(const struct perf_samples *s, size_t from, size_t to,
		       double *out);
void perf_samples_free(struct perf_samples *s);

/* What a latency test reports (docs/tools.md; ndkperf(1)). */
struct perf_lat_stats {
	size_t n;
	double min, max, mean, stdev, p50, p90, p99, p999;
};

/* Sorts the n samples of v and summarises them. */
void perf_lat_stats(double *v, size_t n, struct perf_lat_stats *st);

/*
 * Data verification (--verify): a byte pattern that depends on the offset
 * and a seed, so a shifted, stale or foreign buffer does not pass. perf_check
 * returns the offset of the first byte that differs, or len when all
 * match, and prints that byte with what (the caller's label).
 */
void perf_fill(void *buf, size_t len, uint64_t seed);
size_t perf_check(const void *buf, size_t len, uint64_t seed, const char *what);

#endif
