/* SPDX-License-Identifier: MIT */
/*
 * crc_bench: how fast each CRC32c implementation of libndk runs on this
 * CPU (the MPA FPDU CRC, src/iwarp/crc32c.c), for bench/run's caption and
 * docs/performance.md.
 *
 *   crc_bench [SIZE [SECONDS]]     default 65536 bytes, 0.2 s each
 *
 * Prints one JSON object per implementation the CPU can run, "auto" (what
 * the data path uses) first: {"impl":..., "bytes":..., "gb_per_sec":...}.
 * Each is timed over back-to-back updates of one cached buffer, the best
 * of five slices, so the figure is the code's rate, not the memory's.
 * Exits 1 if an implementation's CRC of the buffer differs from the
 * portable table's, 2 on bad arguments.
 *
 * Built by bench/run against the static library (the implementations are
 * not exported by libndk.so):
 *   cc -O2 -Isrc -o crc_bench bench/crc_bench.c BUILD/libndk.a -lpthread
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "core/compiler.h"
#include "iwarp/crc32c.h"

#define SLICES 5

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Seconds that n chained updates of buf take. */
static double time_updates(enum crc32c_impl impl, const uint8_t *buf,
			   size_t len, long n, uint32_t *sink)
{
	double t0 = now();
	long i;

	for (i = 0; i < n; i++)
		*sink ^= crc32c_update_impl(impl, *sink, buf, len);
	return now() - t0;
}

/* Best rate of SLICES slices of about secs / SLICES each, in GB/s. */
static double rate(enum crc32c_impl impl, const uint8_t *buf, size_t len,
		   double secs, uint32_t *sink)
{
	double best = 0, t;
	long n = 1;
	int s;

	/* Calibrate: updates per slice. */
	while (time_updates(impl, buf, len, n, sink) < secs / SLICES / 4 &&
	       n <= (1L << 40))
		n *= 2;
	n *= 4;
	for (s = 0; s < SLICES; s++) {
		t = time_updates(impl, buf, len, n, sink);
		if (t > 0)
			best = MAX(best, (double)len * (double)n / t / 1e9);
	}
	return best;
}

int main(int argc, char **argv)
{
	size_t len = argc > 1 ? strtoul(argv[1], NULL, 0) : 65536;
	double secs = argc > 2 ? strtod(argv[2], NULL) : 0.2;
	uint32_t sink = 0, want;
	uint8_t *buf;
	int impl, bad = 0;
	size_t i;

	if (argc > 3 || !len || len > (1u << 30) || !(secs > 0)) {
		fprintf(stderr, "usage: crc_bench [SIZE [SECONDS]]\n");
		return 2;
	}
	buf = malloc(len);
	if (!buf) {
		perror("crc_bench");
		return 2;
	}
	srand(1);
	for (i = 0; i < len; i++)
		buf[i] = (uint8_t)rand();
	want = crc32c_update_impl(CRC32C_IMPL_SLICE8, CRC32C_SEED, buf, len);
	for (impl = 0; impl < CRC32C_IMPL_COUNT; impl++) {
		enum crc32c_impl e = (enum crc32c_impl)impl;
		const char *name =
			e == CRC32C_IMPL_AUTO
				? crc32c_impl_name(crc32c_impl_active())
				: crc32c_impl_name(e);
		bool agree;

		if (!crc32c_impl_available(e))
			continue;
		agree = crc32c_update_impl(e, CRC32C_SEED, buf, len) == want;
		bad |= !agree;
		printf("{\"impl\":\"%s\",\"auto\":%s,\"bytes\":%zu,"
		       "\"gb_per_sec\":%.1f,\"agree\":%s}\n",
		       name, e == CRC32C_IMPL_AUTO ? "true" : "false", len,
		       rate(e, buf, len, secs, &sink),
		       agree ? "true" : "false");
	}
	free(buf);
	return bad ? 1 : 0;
}
