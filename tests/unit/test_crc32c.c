/* SPDX-License-Identifier: MIT */
/*
 * CRC32c: known answers (RFC 3720 B.4, the standard check value, MPA FPDUs),
 * every implementation against a bitwise reference, chained against
 * one-shot, and the little-endian trailer byte order of RFC 5044.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "iwarp/crc32c.h"
#include "testutil.h"

/* Bitwise CRC32c register update: the definition, independent of tables. */
static uint32_t ref_update(uint32_t crc, const uint8_t *p, size_t len)
{
	while (len--) {
		crc ^= *p++;
		for (int i = 0; i < 8; i++)
			crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1)));
	}
	return crc;
}

static uint32_t ref_crc(const uint8_t *p, size_t len)
{
	return ~ref_update(0xFFFFFFFFu, p, len);
}

/* Small deterministic PRNG (xorshift32) so failures reproduce. */
static uint32_t rng_state = 0x12345678;

static uint32_t rng(void)
{
	return tu_xorshift(&rng_state);
}

static void rng_fill(uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)rng();
}

/* Parses "aa bb cc" / "aabbcc" hex text into out; returns the byte count. */

/* Every implementation this CPU can run, AUTO included. */
static size_t impls(enum crc32c_impl *out)
{
	size_t n = 0;

	for (int i = 0; i < CRC32C_IMPL_COUNT; i++)
		if (crc32c_impl_available((enum crc32c_impl)i))
			out[n++] = (enum crc32c_impl)i;
	return n;
}

struct kat {
	const char *name;
	uint8_t data[64];
	size_t len;
	uint32_t crc;
	uint8_t wire[4];
};

static void kat_check(const struct kat *k)
{
	enum crc32c_impl list[CRC32C_IMPL_COUNT];
	size_t n = impls(list);
	uint8_t trailer[CRC32C_TRAILER_LEN];

	assert_int_equal(ref_crc(k->data, k->len), k->crc);
	assert_int_equal(crc32c_oneshot(k->data, k->len), k->crc);
	for (size_t i = 0; i < n; i++) {
		uint32_t c = crc32c_update_impl(list[i], crc32c_init(), k->data,
						k->len);

		if (crc32c_final(c) != k->crc)
			fail_msg("%s with %s: 0x%08x, want 0x%08x", k->name,
				 crc32c_impl_name(list[i]), crc32c_final(c),
				 k->crc);
	}
	crc32c_put_trailer(trailer, k->crc);
	assert_memory_equal(trailer, k->wire, 4);
	assert_int_equal(crc32c_get_trailer(k->wire), k->crc);
}

/* RFC 3720 Appendix B.4 inputs, the standard check, the empty string. */
static void test_kat_rfc3720(void **state)
{
	static struct kat k[8];
	static const char iscsi_read10[] =
		"01 c0 00 00 00 00 00 00 00 00 00 00 00 00 00 00"
		"14 00 00 00 00 00 04 00 00 00 00 14 00 00 00 18"
		"28 00 00 00 00 00 00 00 02 00 00 00 00 00 00 00";

	(void)state;
	k[0] = (struct kat){
		"32 x 00", { 0 }, 32, 0x8A9136AA, { 0xaa, 0x36, 0x91, 0x8a }
	};
	k[1] = (struct kat){
		"32 x ff", { 0 }, 32, 0x62A8AB43, { 0x43, 0xab, 0xa8, 0x62 }
	};
	memset(k[1].data, 0xff, 32);
	k[2] = (struct kat){
		"00..1f", { 0 }, 32, 0x46DD794E, { 0x4e, 0x79, 0xdd, 0x46 }
	};
	k[3] = (struct kat){
		"1f..00", { 0 }, 32, 0x113FDB5C, { 0x5c, 0xdb, 0x3f, 0x11 }
	};
	for (int i = 0; i < 32; i++) {
		k[2].data[i] = (uint8_t)i;
		k[3].data[i] = (uint8_t)(31 - i);
	}
	k[4] = (struct kat){ "iSCSI READ(10)",
			     { 0 },
			     0,
			     0xD9963A56,
			     { 0x56, 0x3a, 0x96, 0xd9 } };
	k[4].len = tu_hex2bin(iscsi_read10, k[4].data, sizeof(k[4].data));
	assert_int_equal(k[4].len, 48);
	k[5] = (struct kat){
		"123456789", { 0 }, 9, 0xE3069283, { 0x83, 0x92, 0x06, 0xe3 }
	};
	memcpy(k[5].data, "123456789", 9);
	k[6] = (struct kat){ "empty", { 0 }, 0, 0x00000000, { 0, 0, 0, 0 } };
	/* MPA: header of the zero-length RDMA Write RTR (RFC 6581 section 3). */
	k[7] = (struct kat){
		"RTR header", { 0 }, 0, 0x5F4CD3EB, { 0xeb, 0xd3, 0x4c, 0x5f }
	};
	k[7].len = tu_hex2bin("000ec14000000001 0000000000000000", k[7].data,
			      sizeof(k[7].data));
	assert_int_equal(k[7].len, 16);

	for (size_t i = 0; i < 8; i++)
		kat_check(&k[i]);
}

/*
 * Whole FPDUs that tshark decodes with "Good CRC32": the trailer is the
 * CRC of everything before it (length field through pad), little-endian.
 */
static void test_kat_fpdus(void **state)
{
	static const char *const fpdus[] = {
		/* zero-length RDMA Write RTR */
		"000e c140 00000001 0000000000000000 ebd34c5f",
		/* Send "hello iwarp" QN0 MSN1 */
		"001d 4143 00000000 00000000 00000001 00000000"
		"68656c6c6f20697761727000 cf696c1e",
		/* Read Request */
		"002e 4141 00000000 00000001 00000001 00000000 00001234"
		"0000000000001000 00000010 00005678 0000000000002000 15f3054f",
		/* Read Response */
		"001e c142 00001234 0000000000001000"
		"000102030405060708090a0b0c0d0e0f 879766f5",
		/* Terminate */
		"002a 4147 00000000 00000002 00000001 00000000 1203c000 001d"
		"4143 00000000 00000000 00000001 00000000 91f2ebb5",
	};
	enum crc32c_impl list[CRC32C_IMPL_COUNT];
	size_t n = impls(list);

	(void)state;
	for (size_t f = 0; f < sizeof(fpdus) / sizeof(fpdus[0]); f++) {
		uint8_t buf[128], trailer[4];
		size_t len = tu_hex2bin(fpdus[f], buf, sizeof(buf));
		size_t body = len - CRC32C_TRAILER_LEN;

		assert_int_equal(len % 4, 0);
		for (size_t i = 0; i < n; i++) {
			uint32_t c = crc32c_final(crc32c_update_impl(
				list[i], crc32c_init(), buf, body));

			crc32c_put_trailer(trailer, c);
			assert_memory_equal(trailer, buf + body, 4);
		}
		assert_int_equal(crc32c_oneshot(buf, body),
				 crc32c_get_trailer(buf + body));
	}
}

/*
 * One set byte at every position of an 8-byte block, with every value:
 * this reaches every entry of all eight slicing tables.
 */
static void test_every_table_entry(void **state)
{
	enum crc32c_impl list[CRC32C_IMPL_COUNT];
	size_t n = impls(list);

	(void)state;
	for (size_t pos = 0; pos < 8; pos++) {
		for (unsigned int v = 0; v < 256; v++) {
			uint8_t b[8] = { 0 };
			uint32_t want;

			b[pos] = (uint8_t)v;
			want = ref_update(0, b, 8);
			for (size_t i = 0; i < n; i++)
				assert_int_equal(
					crc32c_update_impl(list[i], 0, b, 8),
					want);
		}
	}
}

/* Every implementation in list gives the reference CRC of p[0..len). */
static void assert_impls_agree(const enum crc32c_impl *list, size_t n,
			       const uint8_t *p, size_t len)
{
	uint32_t want = ref_update(CRC32C_SEED, p, len);

	for (size_t i = 0; i < n; i++)
		assert_int_equal(
			crc32c_update_impl(list[i], CRC32C_SEED, p, len), want);
}

/* All implementations agree with the reference for many lengths/offsets. */
static void test_impls_equal(void **state)
{
	enum crc32c_impl list[CRC32C_IMPL_COUNT];
	size_t n = impls(list);
	static uint8_t buf[4224 + 16];

	(void)state;
	rng_fill(buf, sizeof(buf));
	for (size_t len = 0; len <= 1100; len++) {
		for (size_t off = 0; off < 16; off++) {
			uint32_t seed = len & 1 ? rng() : CRC32C_SEED;
			uint32_t want = ref_update(seed, buf + off, len);

			for (size_t i = 0; i < n; i++) {
				uint32_t got = crc32c_update_impl(
					list[i], seed, buf + off, len);

				if (got != want)
					fail_msg(
						"%s len %zu off %zu: 0x%08x, want 0x%08x",
						crc32c_impl_name(list[i]), len,
						off, got, want);
			}
		}
	}
	/* Every length up to past the 128-bit path's hybrid start (4096),
	 * one offset each: its three-lane path runs lanes of every multiple
	 * of 8 bytes there; the SSE4.2 path's blocks are 3 x 512. */
	for (size_t len = 1101; len <= sizeof(buf) - 16; len++)
		assert_impls_agree(list, n, buf + len % 16, len);
	/* A few large buffers as well. */
	for (int r = 0; r < 8; r++)
		assert_impls_agree(list, n, buf + rng() % 16,
				   2048 + rng() % 2048);
	/* Around the folding path's 256- and 64-byte steps, the hybrids'
	 * starts and their lane lengths (AVX-512: a step every 11 x 256
	 * bytes, the longest past 11 x 16 KiB; 128-bit: a step every 4 x
	 * 256, the longest from 64 KiB), up to past a whole loopback FPDU. */
	{
		static uint8_t big[200000 + 64];
		static const size_t edge[] = {
			511,   512,    513,    767,    768,    769,   1023,
			1024,  1087,   4095,   4096,   4097,   5631,  5632,
			5633,  8447,   8448,   65535,  65536,  65537, 69999,
			70000, 180223, 180224, 180225, 200000, 2047,  2048,
			2049,  3071,   3072,   3073,   1025,   1088
		};

		rng_fill(big, sizeof(big));
		for (size_t e = 0; e < sizeof(edge) / sizeof(edge[0]); e++)
			for (size_t off = 0; off < 64; off += 13)
				assert_impls_agree(list, n, big + off, edge[e]);
		for (size_t len = 512; len <= 70000; len += 997)
			assert_impls_agree(list, n, big + len % 64, len);
	}
}

/* Chained updates over random splits equal one pass over the buffer. */
static void test_chained_vs_oneshot(void **state)
{
	enum crc32c_impl list[CRC32C_IMPL_COUNT];
	size_t n = impls(list);
	static uint8_t buf[3000];

	(void)state;
	rng_fill(buf, sizeof(buf));
	for (int r = 0; r < 500; r++) {
		size_t len = rng() % sizeof(buf);
		uint32_t want = crc32c_oneshot(buf, len);

		for (size_t i = 0; i < n; i++) {
			uint32_t c = crc32c_init();
			size_t done = 0;

			while (done < len) {
				/* Mostly short pieces, sometimes long ones. */
				size_t piece = rng() % 4 ? rng() % 17
							 : rng() % (len + 1);

				piece = piece > len - done ? len - done : piece;
				c = crc32c_update_impl(list[i], c, buf + done,
						       piece);
				done += piece;
			}
			assert_int_equal(crc32c_final(c), want);
		}
		/* Zero-length updates leave the register alone. */
		assert_int_equal(crc32c_update(0xdeadbeef, buf, 0), 0xdeadbeef);
	}
}

/* The trailer is little-endian, not network order (RFC 5044 section 4). */
static void test_wire_order(void **state)
{
	uint8_t t[4];

	(void)state;
	crc32c_put_trailer(t, 0x11223344);
	assert_int_equal(t[0], 0x44);
	assert_int_equal(t[1], 0x33);
	assert_int_equal(t[2], 0x22);
	assert_int_equal(t[3], 0x11);
	assert_int_equal(crc32c_get_trailer(t), 0x11223344);

	/* The trailer of the RFC 3720 zero vector reads aa 36 91 8a. */
	{
		uint8_t z[32] = { 0 };
		static const uint8_t want[4] = { 0xaa, 0x36, 0x91, 0x8a };

		crc32c_put_trailer(t, crc32c_oneshot(z, sizeof(z)));
		assert_memory_equal(t, want, 4);
	}
}

static void test_impl_info(void **state)
{
	enum crc32c_impl act = crc32c_impl_active();

	(void)state;
	assert_true(act == CRC32C_IMPL_SLICE8 || act == CRC32C_IMPL_SSE42 ||
		    act == CRC32C_IMPL_FOLD || act == CRC32C_IMPL_CLMUL);
	assert_true(crc32c_impl_available(act));
	assert_true(crc32c_impl_available(CRC32C_IMPL_AUTO));
	assert_true(crc32c_impl_available(CRC32C_IMPL_SLICE8));
	assert_false(crc32c_impl_available(CRC32C_IMPL_COUNT));
	assert_string_equal(crc32c_impl_name(CRC32C_IMPL_SLICE8), "slice8");
	assert_string_equal(crc32c_impl_name(CRC32C_IMPL_SSE42), "sse4.2");
	assert_string_equal(crc32c_impl_name(CRC32C_IMPL_FOLD),
			    "avx512-vpclmulqdq");
	assert_string_equal(crc32c_impl_name(CRC32C_IMPL_CLMUL), "pclmulqdq");
	assert_string_equal(crc32c_impl_name(CRC32C_IMPL_COUNT), "?");
#if defined(__x86_64__)
	/* The fastest one the CPU has. */
	if (__builtin_cpu_supports("avx512f") &&
	    __builtin_cpu_supports("avx512vl") &&
	    __builtin_cpu_supports("vpclmulqdq") &&
	    __builtin_cpu_supports("pclmul") &&
	    __builtin_cpu_supports("sse4.2"))
		assert_int_equal(act, CRC32C_IMPL_FOLD);
	else if (__builtin_cpu_supports("pclmul") &&
		 __builtin_cpu_supports("sse4.2"))
		assert_int_equal(act, CRC32C_IMPL_CLMUL);
	else if (__builtin_cpu_supports("sse4.2"))
		assert_int_equal(act, CRC32C_IMPL_SSE42);
#endif
	print_message("crc32c implementation: %s\n", crc32c_impl_name(act));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kat_rfc3720),
		cmocka_unit_test(test_kat_fpdus),
		cmocka_unit_test(test_every_table_entry),
		cmocka_unit_test(test_impls_equal),
		cmocka_unit_test(test_chained_vs_oneshot),
		cmocka_unit_test(test_wire_order),
		cmocka_unit_test(test_impl_info),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
