/* SPDX-License-Identifier: MIT */
/*
 * ndksmb's latency histogram (tools/smb/smb_lat.h): percentiles within
 * 1/32 of the exact nearest-rank value, never above the maximum, in
 * fixed memory for any number of samples.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "smb_lat.h"

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The exact nearest-rank percentile of n sorted values. */
static uint64_t exact(const uint64_t *v, size_t n, double p)
{
	double r = p / 100.0 * (double)n;
	size_t rank = (size_t)r;

	if ((double)rank < r)
		rank++;
	if (!rank)
		rank = 1;
	return v[rank - 1];
}

static void test_empty(void **state)
{
	struct smb_lat *l = calloc(1, sizeof(*l));

	(void)state;
	assert_non_null(l);
	assert_int_equal(smb_lat_percentile(l, 50), 0);
	assert_int_equal(smb_lat_percentile(l, 100), 0);
	free(l);
}

/* Below 32 ns every value has its bucket: exact. */
static void test_small_values_exact(void **state)
{
	struct smb_lat *l = calloc(1, sizeof(*l));
	uint64_t v;

	(void)state;
	for (v = 0; v < 32; v++)
		smb_lat_add(l, v);
	assert_int_equal(l->count, 32);
	assert_int_equal(l->max_ns, 31);
	assert_int_equal(smb_lat_percentile(l, 50), 15);
	assert_int_equal(smb_lat_percentile(l, 100), 31);
	assert_int_equal(smb_lat_percentile(l, 0), 0);
	free(l);
}

/* Random latencies from 1 usec to 1 s: each percentile within 1/32 of
 * the exact one, and not below it. */
static void test_percentiles_close(void **state)
{
	static const double ps[] = { 1, 10, 50, 90, 99, 99.9, 99.99 };
	enum { N = 200000 };
	struct smb_lat *l = calloc(1, sizeof(*l));
	uint64_t *v = malloc(N * sizeof(*v)), seed = 12345;
	size_t i, k;

	(void)state;
	assert_non_null(l);
	assert_non_null(v);
	for (i = 0; i < N; i++) {
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		/* log-uniform over 2^10 .. 2^30 ns */
		v[i] = 1ull << (10 + (seed >> 59) % 20);
		v[i] += (seed >> 20) % v[i];
		smb_lat_add(l, v[i]);
	}
	qsort(v, N, sizeof(*v), cmp_u64);
	assert_int_equal(l->count, N);
	assert_int_equal(l->max_ns, v[N - 1]);
	for (k = 0; k < sizeof(ps) / sizeof(ps[0]); k++) {
		uint64_t want = exact(v, N, ps[k]);
		uint64_t got = smb_lat_percentile(l, ps[k]);

		assert_true(got >= want);
		assert_true(got - want <= want / 32 + 1);
	}
	assert_int_equal(smb_lat_percentile(l, 100), v[N - 1]);
	free(v);
	free(l);
}

/* A value past the last octave counts in the last bucket; the answer
 * is still the maximum, not past it. */
static void test_huge_value(void **state)
{
	struct smb_lat *l = calloc(1, sizeof(*l));

	(void)state;
	smb_lat_add(l, 1000);
	smb_lat_add(l, UINT64_MAX / 2);
	assert_int_equal(l->count, 2);
	assert_int_equal(smb_lat_percentile(l, 99), UINT64_MAX / 2);
	assert_true(smb_lat_percentile(l, 50) >= 1000);
	assert_true(smb_lat_percentile(l, 50) <= 1000 + 1000 / 32);
	free(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_small_values_exact),
		cmocka_unit_test(test_percentiles_close),
		cmocka_unit_test(test_huge_value),
	};

	return cmocka_run_group_tests_name("smb_lat", tests, NULL, NULL);
}
