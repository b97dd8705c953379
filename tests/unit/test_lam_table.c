/* SPDX-License-Identifier: MIT */
/*
 * The table of an adapter's live logical address mappings
 * (front/lam_table.h), which both providers use: which range holds an
 * SGE's logical address, with ranges that overlap, nest, touch and go,
 * and releases by cookie.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <stdbool.h>
#include <stdint.h>
#include "front/lam_table.h"

#define PG 4096ull

static int setup(void **state)
{
	struct ndk_lam_table *t = calloc(1, sizeof(*t));

	assert_non_null(t);
	ndk_lam_table_init(t);
	*state = t;
	return 0;
}

static int teardown(void **state)
{
	struct ndk_lam_table *t = *state;

	ndk_lam_table_fini(t);
	free(t);
	return 0;
}

static uint64_t add(struct ndk_lam_table *t, uint64_t start, uint64_t end)
{
	uint64_t cookie = 0;

	assert_int_equal(ndk_lam_table_insert(t, start, end, &cookie), 0);
	assert_true(cookie != 0);
	return cookie;
}

static void del(struct ndk_lam_table *t, uint64_t start, uint64_t cookie)
{
	void *priv = (void *)1;

	assert_int_equal(ndk_lam_table_remove(t, start, cookie, &priv), 0);
	assert_null(priv); /* nothing kept with it here */
}

/* The range found for [va, va + len): its start, or 0 for none. */
static uint64_t holder(struct ndk_lam_table *t, uint64_t va, uint64_t len)
{
	int i = ndk_lam_table_find(t, va, len);

	return i < 0 ? 0 : t->r[i].start;
}

static void test_empty(void **state)
{
	struct ndk_lam_table *t = *state;

	assert_int_equal(ndk_lam_table_find(t, 0x10000, 1), -1);
	assert_int_equal(ndk_lam_table_find(t, 0, 1), -1);
}

static void test_inside_and_edges(void **state)
{
	struct ndk_lam_table *t = *state;

	add(t, 10 * PG, 14 * PG);
	assert_int_equal(holder(t, 10 * PG, 4 * PG), 10 * PG);
	assert_int_equal(holder(t, 12 * PG + 7, 100), 10 * PG);
	assert_int_equal(holder(t, 14 * PG - 1, 1), 10 * PG);
	/* One byte before, one byte past, across the end. */
	assert_int_equal(holder(t, 10 * PG - 1, 1), 0);
	assert_int_equal(holder(t, 14 * PG, 1), 0);
	assert_int_equal(holder(t, 13 * PG, PG + 1), 0);
	/* Zero length and wrapping ranges hold nothing. */
	assert_int_equal(ndk_lam_table_find(t, 11 * PG, 0), -1);
	assert_int_equal(ndk_lam_table_find(t, 11 * PG, UINT64_MAX), -1);
}

/* Two LAMs that touch are two ranges: an SGE across both is in neither. */
static void test_touching(void **state)
{
	struct ndk_lam_table *t = *state;

	add(t, 20 * PG, 21 * PG);
	add(t, 21 * PG, 22 * PG);
	assert_int_equal(holder(t, 20 * PG + 10, 10), 20 * PG);
	assert_int_equal(holder(t, 21 * PG + 10, 10), 21 * PG);
	assert_int_equal(holder(t, 21 * PG - 10, 20), 0);
}

/*
 * A long range with short ones starting inside it: a lookup past the
 * short ones must still find the long one behind them (the backward walk
 * over max_end).
 */
static void test_nested(void **state)
{
	struct ndk_lam_table *t = *state;
	uint64_t big, small;

	big = add(t, 100 * PG, 200 * PG);
	add(t, 110 * PG, 111 * PG);
	small = add(t, 120 * PG, 121 * PG);
	add(t, 130 * PG, 131 * PG);
	assert_int_equal(holder(t, 150 * PG, 10 * PG), 100 * PG);
	assert_int_equal(holder(t, 120 * PG + 5, 10), 120 * PG);
	assert_int_equal(holder(t, 120 * PG + 5, 2 * PG), 100 * PG);
	del(t, 120 * PG, small);
	assert_int_equal(holder(t, 120 * PG + 5, 10), 100 * PG);
	del(t, 100 * PG, big);
	assert_int_equal(holder(t, 150 * PG, 10), 0);
	assert_int_equal(holder(t, 130 * PG, 10), 130 * PG);
	assert_int_equal(holder(t, 120 * PG, 10), 0);
}

/* The same pages in two LAMs: each release takes only its own. */
static void test_same_range_twice(void **state)
{
	struct ndk_lam_table *t = *state;
	void *priv;
	uint64_t a, b;

	a = add(t, 50 * PG, 52 * PG);
	b = add(t, 50 * PG, 52 * PG);
	assert_true(a != b);
	del(t, 50 * PG, a);
	assert_int_equal(holder(t, 51 * PG, 10), 50 * PG);
	/* Released twice: not found. */
	assert_int_equal(ndk_lam_table_remove(t, 50 * PG, a, &priv), -ENOENT);
	assert_int_equal(ndk_lam_table_remove(t, 0, a, &priv), -ENOENT);
	/* Another start (the consumer changed the LAM's page array): the
	 * cookie still names it. */
	del(t, 51 * PG, b);
	assert_int_equal(holder(t, 51 * PG, 10), 0);
	assert_int_equal(t->n, 0);
}

/* Many ranges in random order: every lookup agrees with a plain scan. */
static void test_against_scan(void **state)
{
	struct ndk_lam_table *t = *state;
	enum { N = 300 };
	uint64_t start[N], end[N], cookie[N];
	bool live[N];
	unsigned int seed = 7, i, k;

	for (i = 0; i < N; i++) {
		start[i] = (uint64_t)(rand_r(&seed) % 2000) * PG;
		end[i] = start[i] + (uint64_t)(1 + rand_r(&seed) % 40) * PG;
		cookie[i] = add(t, start[i], end[i]);
		live[i] = true;
	}
	for (k = 0; k < 4000; k++) {
		uint64_t va = (uint64_t)(rand_r(&seed) % (2050 * PG));
		uint64_t len = 1 + (uint64_t)(rand_r(&seed) % (8 * PG));
		bool want = false;
		int got;

		if (k % 20 == 0) {
			i = (unsigned int)rand_r(&seed) % N;
			if (live[i]) {
				del(t, start[i], cookie[i]);
				live[i] = false;
			}
		}
		for (i = 0; i < N && !want; i++)
			want = live[i] && start[i] <= va && va + len <= end[i];
		got = ndk_lam_table_find(t, va, len);
		assert_int_equal(got >= 0, want);
		if (got >= 0) {
			assert_true(t->r[got].start <= va);
			assert_true(va + len <= t->r[got].end);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_empty, setup, teardown),
		cmocka_unit_test_setup_teardown(test_inside_and_edges, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_touching, setup, teardown),
		cmocka_unit_test_setup_teardown(test_nested, setup, teardown),
		cmocka_unit_test_setup_teardown(test_same_range_twice, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_against_scan, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
