/* SPDX-License-Identifier: MIT */
/*
 * CRC32c (Castagnoli), the FPDU CRC of MPA (RFC 5044 section 4): reflected
 * polynomial 0x82F63B78, register seeded with all ones, result inverted.
 * This is the iSCSI digest (RFC 3720, vectors in Appendix B.4).
 *
 * Use init/update/final to fold the CRC in while the FPDU is copied:
 *
 *	uint32_t c = crc32c_init();
 *	c = crc32c_update(c, hdr, hdr_len);
 *	c = crc32c_update(c, payload, len);
 *	crc32c_put_trailer(trailer, crc32c_final(c));
 *
 * update() works on the raw register: chain the value it returns, and apply
 * final() exactly once. The implementation (AVX-512 or 128-bit carry-less
 * folding beside the SSE4.2 crc32 instruction, that instruction alone, or
 * a portable slicing-by-8 table) is picked once, on first use, from the
 * CPU.
 */
#ifndef NDK_IWARP_CRC32C_H
#define NDK_IWARP_CRC32C_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "iwarp/byteorder.h"

#define CRC32C_SEED	   0xFFFFFFFFu
#define CRC32C_TRAILER_LEN 4

/* Implementations, for tests and benchmarks that compare them. */
enum crc32c_impl {
	CRC32C_IMPL_AUTO, /* whatever crc32c_update() uses */
	CRC32C_IMPL_SLICE8, /* portable table, always available */
	CRC32C_IMPL_SSE42, /* x86 crc32 instruction */
	CRC32C_IMPL_FOLD, /* x86 AVX-512 VPCLMULQDQ folding + crc32 */
	CRC32C_IMPL_CLMUL, /* x86 128-bit PCLMULQDQ folding + crc32 */
	CRC32C_IMPL_COUNT,
};

static inline uint32_t crc32c_init(void)
{
	return CRC32C_SEED;
}

/* Folds len bytes into the raw register crc and returns the new register. */
uint32_t crc32c_update(uint32_t crc, const void *buf, size_t len);

static inline uint32_t crc32c_final(uint32_t crc)
{
	return ~crc;
}

/* CRC32c of one buffer: init, update, final. "123456789" gives 0xE3069283. */
static inline uint32_t crc32c_oneshot(const void *buf, size_t len)
{
	return crc32c_final(crc32c_update(crc32c_init(), buf, len));
}

/*
 * The FPDU CRC field. The final CRC value goes on the wire least significant
 * byte first, as in iSCSI: 0x8A9136AA is sent as aa 36 91 8a. This is the
 * one little-endian field of iWARP; never htonl() it.
 */
static inline void crc32c_put_trailer(uint8_t *trailer, uint32_t crc)
{
	put_le32(trailer, crc);
}

static inline uint32_t crc32c_get_trailer(const uint8_t *trailer)
{
	return get_le32(trailer);
}

/* True if impl can run on this CPU (AUTO and SLICE8 always can). */
bool crc32c_impl_available(enum crc32c_impl impl);

/* The implementation crc32c_update() uses on this CPU (never AUTO). */
enum crc32c_impl crc32c_impl_active(void);

/* "auto", "slice8", "sse4.2", "avx512-vpclmulqdq", "pclmulqdq"; "?" out of
 * range. */
const char *crc32c_impl_name(enum crc32c_impl impl);

/*
 * crc32c_update() with a chosen implementation. An implementation this CPU
 * lacks (see crc32c_impl_available()) falls back to SLICE8 rather than
 * trapping on an illegal instruction.
 */
uint32_t crc32c_update_impl(enum crc32c_impl impl, uint32_t crc,
			    const void *buf, size_t len);

#endif /* NDK_IWARP_CRC32C_H */
