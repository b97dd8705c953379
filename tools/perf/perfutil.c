/* SPDX-License-Identifier: MIT */
/* Shared plumbing of ndkping and ndkperf (see perfutil.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "perfutil.h"

static VOID perf_cq_notify(PVOID ctx, NTSTATUS status)
{
	struct perf_cq *c = ctx;

	pthread_mutex_lock(&c->lock);
	c->notified = true;
	pthread_cond_signal(&c->cond);
	pthread_mutex_unlock(&c->lock);
}

void perf_cq_create(struct tool_host *h, struct perf_cq *c, ULONG depth,
		    bool events)
{
	memset(c, 0, sizeof(*c));
	atomic_init(&c->abandoned, false);
	c->events = events;
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->cond, NULL);
	tool_check("NdkCreateCq",
		   h->ad->Dispatch->NdkCreateCq(h->ad, depth, perf_cq_notify, c,
						NULL, NULL, NULL, &c->cq));
}

void perf_cq_close(struct perf_cq *c)
{
	if (c->cq)
		TOOL_CLOSE(c->cq);
	c->cq = NULL;
}

static void perf_result_check(const NDK_RESULT *r)
{
	if (r->Status != STATUS_SUCCESS) {
		fprintf(stderr, "%s: request %p completed with %s\n", tool_prog,
			r->RequestContext, NdkStatusName(r->Status));
		exit(TOOL_EXIT_FAIL);
	}
}

TOOL_HOT ULONG perf_cq_wait(struct perf_cq *c, NDK_RESULT *res, ULONG n,
			    uint64_t deadline_ns)
{
	ULONG got, i;
	unsigned int spins = 0;

	for (;;) {
		got = c->cq->Dispatch->NdkGetCqResults(c->cq, res, n);
		if (got)
			break;
		if (!(++spins & 1023) &&
		    (atomic_load_explicit(&c->abandoned,
					  memory_order_relaxed) ||
		     (deadline_ns && tool_now_ns() > deadline_ns)))
			return 0;
		if (!c->events)
			continue;
		/* Arm, then look again: a result may have come meanwhile. */
		pthread_mutex_lock(&c->lock);
		c->notified = false;
		pthread_mutex_unlock(&c->lock);
		c->cq->Dispatch->NdkArmCq(c->cq, NDK_CQ_NOTIFY_ANY);
		got = c->cq->Dispatch->NdkGetCqResults(c->cq, res, n);
		if (got)
			break;
		pthread_mutex_lock(&c->lock);
		while (!c->notified && !atomic_load(&c->abandoned)) {
			if (deadline_ns) {
				struct timespec ts;

				clock_gettime(CLOCK_REALTIME, &ts);
				ts.tv_sec += 1;
				pthread_cond_timedwait(&c->cond, &c->lock, &ts);
				if (tool_now_ns() > deadline_ns)
					break;
			} else {
				pthread_cond_wait(&c->cond, &c->lock);
			}
		}
		pthread_mutex_unlock(&c->lock);
	}
	for (i = 0; i < got && !c->errors_ok; i++)
		perf_result_check(&res[i]);
	return got;
}

void perf_cq_abandon(struct perf_cq *c)
{
	pthread_mutex_lock(&c->lock);
	atomic_store(&c->abandoned, true);
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
}

void perf_cq_wait_any(struct perf_cq *c, unsigned int ms)
{
	struct timespec ts = tool_deadline(ms);

	pthread_mutex_lock(&c->lock);
	c->notified = false;
	pthread_mutex_unlock(&c->lock);
	c->cq->Dispatch->NdkArmCq(c->cq, NDK_CQ_NOTIFY_ANY);
	pthread_mutex_lock(&c->lock);
	while (!c->notified && !atomic_load(&c->abandoned)) {
		if (!ms)
			pthread_cond_wait(&c->cond, &c->lock);
		else if (pthread_cond_timedwait(&c->cond, &c->lock, &ts))
			break;
	}
	pthread_mutex_unlock(&c->lock);
}

NDK_QP *perf_qp_create(struct tool_host *h, struct perf_cq *c, ULONG depth)
{
	NDK_QP *qp;

	tool_check("NdkCreateQp",
		   h->pd->Dispatch->NdkCreateQp(
			   h->pd, c->cq, c->cq, NULL, depth, depth, 1, 1,
			   h->info.MaxInlineDataSize, NULL, NULL, &qp));
	return qp;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Nearest rank of n sorted samples. */
static double sorted_percentile(const double *v, size_t n, double p)
{
	size_t i = (size_t)((p / 100.0) * (double)(n - 1) + 0.5);

	return v[MIN(i, n - 1)];
}

double perf_percentile(double *v, size_t n, double p)
{
	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp_double);
	return sorted_percentile(v, n, p);
}

TOOL_HOT bool perf_samples_add(struct perf_samples *s, double usec)
{
	size_t i = atomic_load_explicit(&s->n, memory_order_relaxed);
	size_t c = i >> PERF_SAMPLE_CHUNK_BITS;

	if (i >= PERF_SAMPLE_MAX) {
		s->dropped++;
		return true;
	}
	if (!s->chunk[c]) {
		s->chunk[c] = malloc(sizeof(float) << PERF_SAMPLE_CHUNK_BITS);
		if (!s->chunk[c])
			return false;
	}
	s->chunk[c][i & ((1u << PERF_SAMPLE_CHUNK_BITS) - 1)] = (float)usec;
	/* The sample (and its chunk) before the count that shows it. */
	atomic_store_explicit(&s->n, i + 1, memory_order_release);
	return true;
}

size_t perf_samples_count(struct perf_samples *s)
{
	return atomic_load_explicit(&s->n, memory_order_acquire);
}

double perf_samples_get(const struct perf_samples *s, size_t i)
{
	return s->chunk[i >> PERF_SAMPLE_CHUNK_BITS]
		       [i & ((1u << PERF_SAMPLE_CHUNK_BITS) - 1)];
}

void perf_samples_copy(const struct perf_samples *s, size_t from, size_t to,
		       double *out)
{
	size_t i;

	for (i = from; i < to; i++)
		*out++ = perf_samples_get(s, i);
}

void perf_samples_free(struct perf_samples *s)
{
	size_t c;

	for (c = 0; c < PERF_SAMPLE_CHUNKS && s->chunk[c]; c++) {
		free(s->chunk[c]);
		s->chunk[c] = NULL;
	}
	atomic_store(&s->n, 0);
}

void perf_lat_stats(double *v, size_t n, struct perf_lat_stats *st)
{
	double sum = 0, sq = 0;
	size_t i;

	memset(st, 0, sizeof(*st));
	st->n = n;
	if (!n)
		return;
	qsort(v, n, sizeof(*v), cmp_double);
	st->p50 = sorted_percentile(v, n, 50);
	st->p90 = sorted_percentile(v, n, 90);
	st->p99 = sorted_percentile(v, n, 99);
	st->p999 = sorted_percentile(v, n, 99.9);
	st->min = v[0];
	st->max = v[n - 1];
	for (i = 0; i < n; i++)
		sum += v[i];
	st->mean = sum / (double)n;
	for (i = 0; i < n; i++)
		sq += (v[i] - st->mean) * (v[i] - st->mean);
	st->stdev = n > 1 ? sqrt(sq / (double)(n - 1)) : 0;
}

static uint8_t perf_pattern_byte(uint64_t seed, size_t off)
{
	uint64_t x = seed * 0x9e3779b97f4a7c15ull + off / 8;

	x ^= x >> 29;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 32;
	return (uint8_t)(x >> (8 * (off % 8)));
}

void perf_fill(void *buf, size_t len, uint64_t seed)
{
	uint8_t *p = buf;
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = perf_pattern_byte(seed, i);
}

size_t perf_check(const void *buf, size_t len, uint64_t seed, const char *what)
{
	const uint8_t *p = buf;
	size_t i;

	for (i = 0; i < len; i++) {
		if (p[i] != perf_pattern_byte(seed, i)) {
			fprintf(stderr,
				"%s: verify: %s: byte %zu of %zu is 0x%02x, "
				"not 0x%02x\n",
				tool_prog, what, i, len, p[i],
				perf_pattern_byte(seed, i));
			return i;
		}
	}
	return len;
}
