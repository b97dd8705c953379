/* SPDX-License-Identifier: MIT */
/*
 * The STag scheme of the software provider (src/sw/stag.h,
 * docs/security.md, Memory tokens).
 *
 * `test_stag --bench` prints what registration and lookup cost, the
 * median of several runs, instead of testing.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "front/adapter.h"
#include "sw/adapter.h"
#include "sw/pd.h"
#include "sw/stag.h"
#include "testutil.h"

/* ------------------------------------------------------------------ */
/* Micro-benchmark                                                    */

#define BENCH_ENTRIES 1024u
#define BENCH_OPS     200000u
#define BENCH_RUNS    9

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, unsigned int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return v[n / 2];
}

static char bench_mem[64];

/* One run of each measurement on a table with BENCH_ENTRIES live MRs. */
static void bench_table_run(double out[3])
{
	struct sw_stag_table *t = sw_stag_table_create(NULL);
	struct sw_stag_mem m = {
		.base_va = (uintptr_t)bench_mem,
		.length = sizeof(bench_mem),
		.access = SW_ACCESS_LOCAL | SW_ACCESS_REMOTE,
		.host = (uintptr_t)bench_mem,
	};
	static uint32_t stag[BENCH_ENTRIES], order[BENCH_ENTRIES];
	struct sw_stag_ref ref;
	uint32_t seed = 1, i, extra;
	double t0;

	if (!t)
		abort();
	for (i = 0; i < BENCH_ENTRIES; i++) {
		if (sw_stag_alloc(t, SW_STAG_MR, 1, &stag[i]) ||
		    sw_stag_validate(t, &stag[i], &m))
			abort();
		order[i] = tu_xorshift(&seed) % BENCH_ENTRIES;
	}

	/* Registration: a new key and mapping, then revoked again. */
	t0 = now_ns();
	for (i = 0; i < BENCH_OPS; i++) {
		uint32_t *s = &stag[i % BENCH_ENTRIES];

		sw_stag_revoke(t, *s);
		if (sw_stag_validate(t, s, &m))
			abort();
	}
	out[0] = (now_ns() - t0) / BENCH_OPS;

	/* Lookup as the data path does it: checked, pinned, put. */
	t0 = now_ns();
	for (i = 0; i < BENCH_OPS; i++) {
		if (sw_stag_lookup(t, stag[order[i % BENCH_ENTRIES]], 1,
				   m.base_va, 16, SW_ACCESS_REMOTE_WRITE, &ref,
				   NULL))
			abort();
		sw_stag_put(&ref);
	}
	out[1] = (now_ns() - t0) / BENCH_OPS;

	/* A token that names nothing: what a guessing peer costs. */
	t0 = now_ns();
	for (i = 0; i < BENCH_OPS; i++)
		if (sw_stag_lookup(t, stag[i % BENCH_ENTRIES] ^ 0x5a5a00, 1,
				   m.base_va, 16, SW_ACCESS_REMOTE_WRITE, NULL,
				   NULL) == 0)
			extra = i;
	out[2] = (now_ns() - t0) / BENCH_OPS;
	(void)extra;

	for (i = 0; i < BENCH_ENTRIES; i++)
		sw_stag_free(t, stag[i]);
	sw_stag_table_destroy(t);
}

/* NdkCreateMr + NdkRegisterMr + NdkDeregisterMr + NdkCloseMr, in ns. */
static double bench_api_run(void)
{
	NDK_VERSION v = { 2, 0 };
	NDK_ADAPTER *a;
	NDK_PD *pd;
	NDK_MR *mr;
	PMDL mdl;
	double t0, r;
	void *buf;
	unsigned int i, n = BENCH_OPS / 10;

	buf = mmap(NULL, PAGE_SIZE, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED || NdkOpenAdapter(v, if_nametoindex("lo"), &a) ||
	    a->Dispatch->NdkCreatePd(a, NULL, NULL, &pd))
		abort();
	mdl = IoAllocateMdl(buf, PAGE_SIZE, FALSE, FALSE, NULL);
	t0 = now_ns();
	for (i = 0; i < n; i++) {
		if (pd->Dispatch->NdkCreateMr(pd, FALSE, NULL, NULL, &mr) ||
		    mr->Dispatch->NdkRegisterMr(mr, mdl, PAGE_SIZE, 0x7, NULL,
						NULL) ||
		    mr->Dispatch->NdkDeregisterMr(mr, NULL, NULL) ||
		    mr->Dispatch->NdkCloseMr(&mr->Header, NULL, NULL))
			abort();
	}
	r = (now_ns() - t0) / n;
	IoFreeMdl(mdl);
	pd->Dispatch->NdkClosePd(&pd->Header, NULL, NULL);
	NdkCloseAdapter(a);
	munmap(buf, PAGE_SIZE);
	return r;
}

static int bench(void)
{
	double reg[BENCH_RUNS], look[BENCH_RUNS], miss[BENCH_RUNS];
	double api[BENCH_RUNS], r[3];
	unsigned int i;

	for (i = 0; i < BENCH_RUNS; i++) {
		bench_table_run(r);
		reg[i] = r[0];
		look[i] = r[1];
		miss[i] = r[2];
		api[i] = bench_api_run();
	}
	printf("medians of %d runs, ns per operation\n", BENCH_RUNS);
	printf("  register (validate + revoke)     %8.1f\n",
	       median(reg, BENCH_RUNS));
	printf("  lookup (check, pin, put)         %8.1f\n",
	       median(look, BENCH_RUNS));
	printf("  lookup of a token naming nothing %8.1f\n",
	       median(miss, BENCH_RUNS));
	printf("  NdkCreateMr..NdkCloseMr          %8.1f\n",
	       median(api, BENCH_RUNS));
	return 0;
}

/* ------------------------------------------------------------------ */
/* Tests                                                              */

#define RUN 8 /* the first tokens a fresh adapter hands out */

static char page[2 * 4096] __attribute__((aligned(4096)));

struct host {
	NDK_ADAPTER *a;
	NDK_PD *pd;
	NDK_MR *mr[64];
	unsigned int nmr;
};

static void host_open(struct host *h)
{
	NDK_VERSION v = { 2, 0 };

	memset(h, 0, sizeof(*h));
	assert_int_equal(NdkOpenAdapter(v, if_nametoindex("lo"), &h->a),
			 STATUS_SUCCESS);
	assert_int_equal(h->a->Dispatch->NdkCreatePd(h->a, NULL, NULL, &h->pd),
			 STATUS_SUCCESS);
}

static void host_close(struct host *h)
{
	unsigned int i;

	for (i = 0; i < h->nmr; i++)
		assert_int_equal(h->mr[i]->Dispatch->NdkCloseMr(
					 &h->mr[i]->Header, NULL, NULL),
				 STATUS_SUCCESS);
	assert_int_equal(
		h->pd->Dispatch->NdkClosePd(&h->pd->Header, NULL, NULL),
		STATUS_SUCCESS);
	NdkCloseAdapter(h->a);
}

static NTSTATUS reg(NDK_MR *mr)
{
	PMDL mdl = IoAllocateMdl(page, sizeof(page), FALSE, FALSE, NULL);
	NTSTATUS st;

	assert_non_null(mdl);
	st = mr->Dispatch->NdkRegisterMr(mr, mdl, sizeof(page),
					 NDK_MR_FLAG_ALLOW_LOCAL_WRITE |
						 NDK_MR_FLAG_ALLOW_REMOTE_READ |
						 NDK_MR_FLAG_ALLOW_REMOTE_WRITE,
					 NULL, NULL);
	IoFreeMdl(mdl);
	return st;
}

/* n more MRs on h, each registered: their remote tokens, in order. */
static void host_tokens(struct host *h, uint32_t *tok, unsigned int n)
{
	unsigned int i;
	NDK_MR *mr;

	assert_true(h->nmr + n <= ARRAY_SIZE(h->mr));
	for (i = 0; i < n; i++) {
		assert_int_equal(h->pd->Dispatch->NdkCreateMr(h->pd, FALSE,
							      NULL, NULL, &mr),
				 STATUS_SUCCESS);
		assert_int_equal(reg(mr), STATUS_SUCCESS);
		tok[i] = mr->Dispatch->NdkGetRemoteTokenFromMr(mr);
		h->mr[h->nmr++] = mr;
	}
}

/* A run of tokens: none names wire index 0, all differ, and no stride:
 * no difference between consecutive tokens occurs more than twice. */
static void check_run(const uint32_t *tok, unsigned int n)
{
	unsigned int i, j, same;

	for (i = 0; i < n; i++) {
		assert_int_not_equal(sw_stag_index(tok[i]), 0);
		for (j = 0; j < i; j++)
			assert_int_not_equal(tok[i], tok[j]);
	}
	for (i = 1; i < n; i++) {
		same = 0;
		for (j = 1; j < n; j++)
			same += tok[j] - tok[j - 1] == tok[i] - tok[i - 1];
		assert_true(same <= 2);
	}
}

static unsigned int common(const uint32_t *a, const uint32_t *b, unsigned int n)
{
	unsigned int i, j, c = 0;

	for (i = 0; i < n; i++)
		for (j = 0; j < n; j++)
			c += a[i] == b[j];
	return c;
}

/* Two adapters of one process: unrelated tokens. */
static void test_two_adapters_differ(void **state)
{
	struct host x, y;
	uint32_t a[RUN], b[RUN], more[56];

	(void)state;
	host_open(&x);
	host_open(&y);
	host_tokens(&x, a, RUN);
	host_tokens(&y, b, RUN);
	check_run(a, RUN);
	check_run(b, RUN);
	assert_int_equal(common(a, b, RUN), 0);
	/* And a longer run keeps no stride either. */
	host_tokens(&x, more, ARRAY_SIZE(more));
	check_run(more, ARRAY_SIZE(more));
	host_close(&x);
	host_close(&y);
}

/* Two runs of a program (here a child and its parent, each with a fresh
 * adapter): unrelated tokens. */
static void test_two_runs_differ(void **state)
{
	uint32_t mine[RUN], theirs[RUN];
	struct host h;
	int fd[2], wstatus;
	pid_t pid;

	(void)state;
	assert_int_equal(pipe(fd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		host_open(&h);
		host_tokens(&h, theirs, RUN);
		_exit(write(fd[1], theirs, sizeof(theirs)) != sizeof(theirs));
	}
	close(fd[1]);
	assert_int_equal(read(fd[0], theirs, sizeof(theirs)), sizeof(theirs));
	close(fd[0]);
	assert_int_equal(waitpid(pid, &wstatus, 0), pid);
	assert_int_equal(WEXITSTATUS(wstatus), 0);
	host_open(&h);
	host_tokens(&h, mine, RUN);
	check_run(theirs, RUN);
	assert_int_equal(common(mine, theirs, RUN), 0);
	host_close(&h);
}

/*
 * Re-registering one MR keeps its index and draws a new key: never one
 * of the last four (their tokens stay dead), and not a counter: every
 * key value comes up, about equally often.
 */
static void test_keys_random_never_recent(void **state)
{
	struct host h;
	uint32_t tok, index, last[4] = { 0 }, n[256] = { 0 };
	unsigned int i, j, deltas[256] = { 0 }, worst = 0;
	const unsigned int regs = 51200;
	NDK_MR *mr;
	void *addr;

	(void)state;
	host_open(&h);
	host_tokens(&h, &tok, 1);
	index = sw_stag_index(tok);
	mr = h.mr[0];
	for (i = 0; i < regs; i++) {
		assert_int_equal(mr->Dispatch->NdkDeregisterMr(mr, NULL, NULL),
				 STATUS_SUCCESS);
		assert_int_equal(reg(mr), STATUS_SUCCESS);
		tok = mr->Dispatch->NdkGetRemoteTokenFromMr(mr);
		assert_int_equal(sw_stag_index(tok), index);
		for (j = 0; j < 4 && i > j; j++) {
			assert_int_not_equal(tok, last[j]);
			assert_int_equal(
				sw_stag_lookup(
					sw_stags(to_ndk_adapter(h.a)), last[j],
					to_sw_pd(h.pd)->id, (uintptr_t)page, 1,
					SW_ACCESS_REMOTE_READ, NULL, &addr),
				-ENOENT);
		}
		n[sw_stag_key(tok)]++;
		if (i)
			deltas[(uint8_t)(sw_stag_key(tok) -
					 sw_stag_key(last[0]))]++;
		memmove(&last[1], &last[0], 3 * sizeof(last[0]));
		last[0] = tok;
	}
	/* 200 per value expected; a counter or a skewed draw is far off. */
	for (i = 0; i < 256; i++) {
		assert_in_range(n[i], 120, 280);
		if (deltas[i] > worst)
			worst = deltas[i];
	}
	assert_int_equal(deltas[0], 0);
	assert_true(worst < 300);
	host_close(&h);
}

static int no_entropy(void *buf, size_t len)
{
	(void)buf;
	(void)len;
	return -ENOSYS;
}

static int zeros(void *buf, size_t len)
{
	memset(buf, 0, len);
	return 0;
}

/* Without random bytes there is no adapter: never guessable tokens. */
static void test_no_entropy_no_adapter(void **state)
{
	NDK_VERSION v = { 2, 0 };
	NDK_ADAPTER *a = NULL;
	struct host h;
	uint32_t tok[2];

	(void)state;
	sw_stag_set_entropy(no_entropy);
	assert_int_not_equal(NdkOpenAdapter(v, if_nametoindex("lo"), &a),
			     STATUS_SUCCESS);
	/* The fuzz targets' fixed tokens: what they were before. */
	sw_stag_set_entropy(zeros);
	host_open(&h);
	host_tokens(&h, tok, 2);
	assert_int_equal(tok[0], 0x101);
	assert_int_equal(tok[1], 0x201);
	/* Keys come from the table's store of random bytes: once it is
	 * spent, a registration fails rather than take a guessable key. */
	sw_stag_set_entropy(no_entropy);
	for (;;) {
		NTSTATUS st;

		assert_int_equal(
			h.mr[0]->Dispatch->NdkDeregisterMr(h.mr[0], NULL, NULL),
			STATUS_SUCCESS);
		st = reg(h.mr[0]);
		if (st != STATUS_SUCCESS) {
			assert_int_equal(st, STATUS_INSUFFICIENT_RESOURCES);
			break;
		}
	}
	sw_stag_set_entropy(NULL);
	host_close(&h);
}

/*
 * The table over many indices: every token's wire index differs from
 * the others' and from 0, and each token finds its own entry.
 */
static void test_permutation(void **state)
{
	struct sw_stag_table *t = sw_stag_table_create(NULL);
	const unsigned int n = 70000;
	uint32_t *s = calloc(n, sizeof(*s));
	uint8_t *seen = calloc(1u << 21, 1); /* a bit per wire index */
	struct sw_stag_mem m = { .length = 1, .access = SW_ACCESS_REMOTE_READ };
	unsigned int i;
	uint32_t w;

	(void)state;
	assert_non_null(t);
	assert_non_null(s);
	assert_non_null(seen);
	for (i = 0; i < n; i++) {
		assert_int_equal(sw_stag_alloc(t, SW_STAG_MR, 1, &s[i]), 0);
		w = sw_stag_index(s[i]);
		assert_int_not_equal(w, 0);
		assert_false(seen[w / 8] & (1u << (w % 8)));
		seen[w / 8] |= (uint8_t)(1u << (w % 8));
		m.base_va = i;
		assert_int_equal(sw_stag_validate(t, &s[i], &m), 0);
	}
	for (i = 0; i < n; i++) {
		assert_int_equal(sw_stag_lookup(t, s[i], 1, i, 1,
						SW_ACCESS_REMOTE_READ, NULL,
						NULL),
				 0);
		/* Its neighbours on the wire name nothing. */
		w = sw_stag_index(s[i]);
		if (!(seen[(w ^ 1) / 8] & (1u << ((w ^ 1) % 8))))
			assert_int_equal(
				sw_stag_lookup(
					t,
					sw_stag_make(w ^ 1, sw_stag_key(s[i])),
					1, i, 1, SW_ACCESS_REMOTE_READ, NULL,
					NULL),
				-ENOENT);
	}
	/* Wire index 0: the privileged token and the RTR's STag 1. */
	for (i = 0; i < 256; i++)
		assert_int_equal(sw_stag_lookup(t, sw_stag_make(0, (uint8_t)i),
						1, 0, 1, SW_ACCESS_REMOTE_READ,
						NULL, NULL),
				 -ENOENT);
	for (i = 0; i < n; i++)
		sw_stag_free(t, s[i]);
	sw_stag_table_destroy(t);
	free(seen);
	free(s);
}

/* ------------------------------------------------------------------ */

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_two_adapters_differ),
		cmocka_unit_test(test_two_runs_differ),
		cmocka_unit_test(test_keys_random_never_recent),
		cmocka_unit_test(test_no_entropy_no_adapter),
		cmocka_unit_test(test_permutation),
	};

	if (argc > 1 && !strcmp(argv[1], "--bench"))
		return bench();
	return cmocka_run_group_tests_name("stag", tests, NULL, NULL);
}
