/* SPDX-License-Identifier: MIT */
#include <string.h>
#include <nettle/cmac.h>
#include <nettle/hmac.h>
#include <nettle/md4.h>
#include "smb2_crypto.h"
#include "smbd_wire.h"

size_t smb2_utf16(const char *s, uint8_t *out, size_t cap, int upper)
{
	size_t n = 0;

	for (; *s && n + 2 <= cap; s++) {
		unsigned char ch = (unsigned char)*s;

		if (upper && ch >= 'a' && ch <= 'z')
			ch = (unsigned char)(ch - 'a' + 'A');
		out[n++] = ch;
		out[n++] = 0;
	}
	return n;
}

void ntlm_ntowfv2(const char *password, const char *user, const char *domain,
		  uint8_t out[16])
{
	uint8_t buf[1024], nt[MD4_DIGEST_SIZE];
	struct hmac_md5_ctx h;
	struct md4_ctx md4;
	size_t n;

	/* NTOWFv1: MD4 of the UTF-16 password. */
	n = smb2_utf16(password, buf, sizeof(buf), 0);
	md4_init(&md4);
	md4_update(&md4, n, buf);
	md4_digest(&md4, sizeof(nt), nt);
	hmac_md5_set_key(&h, sizeof(nt), nt);
	n = smb2_utf16(user, buf, sizeof(buf), 1);
	n += smb2_utf16(domain, buf + n, sizeof(buf) - n, 0);
	hmac_md5_update(&h, n, buf);
	hmac_md5_digest(&h, 16, out);
}

size_t ntlm_v2_response(const uint8_t key[16], const uint8_t server_chal[8],
			const uint8_t client_chal[8], uint64_t timestamp,
			const uint8_t *target_info, size_t ti_len, uint8_t *out,
			size_t cap, uint8_t session_key[16])
{
	size_t blob = 28 + ti_len + 4, len = 16 + blob;
	struct hmac_md5_ctx h;
	uint8_t *b = out + 16;

	if (len > cap)
		return 0;
	memset(b, 0, blob);
	b[0] = 1; /* RespType */
	b[1] = 1; /* HiRespType */
	smbd_put64(b + 8, timestamp);
	memcpy(b + 16, client_chal, 8);
	memcpy(b + 28, target_info, ti_len);
	hmac_md5_set_key(&h, 16, key);
	hmac_md5_update(&h, 8, server_chal);
	hmac_md5_update(&h, blob, b);
	hmac_md5_digest(&h, 16, out);
	/* The session base key: HMAC-MD5 of NTProofStr. */
	hmac_md5_set_key(&h, 16, key);
	hmac_md5_update(&h, 16, out);
	hmac_md5_digest(&h, 16, session_key);
	return len;
}

void ntlm_lmv2_response(const uint8_t key[16], const uint8_t server_chal[8],
			const uint8_t client_chal[8], uint8_t out[24])
{
	struct hmac_md5_ctx h;

	hmac_md5_set_key(&h, 16, key);
	hmac_md5_update(&h, 8, server_chal);
	hmac_md5_update(&h, 8, client_chal);
	hmac_md5_digest(&h, 16, out);
	memcpy(out + 16, client_chal, 8);
}

void smb3_signing_key(const uint8_t session_key[16], uint8_t out[16])
{
	/* KDF(Ki, Label "SMB2AESCMAC\0", Context "SmbSign\0"), L = 128:
	 * one round, i = 1. */
	static const uint8_t input[] = {
		0,   0,	  0,   1,   'S', 'M', 'B', '2', 'A', 'E',
		'S', 'C', 'M', 'A', 'C', 0,   0,   'S', 'm', 'b',
		'S', 'i', 'g', 'n', 0,	 0,   0,   0,	128,
	};
	uint8_t full[SHA256_DIGEST_SIZE];
	struct hmac_sha256_ctx h;

	hmac_sha256_set_key(&h, 16, session_key);
	hmac_sha256_update(&h, sizeof(input), input);
	hmac_sha256_digest(&h, sizeof(full), full);
	memcpy(out, full, 16);
}

void smb3_sign(const uint8_t key[16], const uint8_t *msg, size_t len,
	       uint8_t sig[16])
{
	static const uint8_t zero[16];
	struct cmac_aes128_ctx c;

	cmac_aes128_set_key(&c, key);
	cmac_aes128_update(&c, 48, msg);
	cmac_aes128_update(&c, 16, zero);
	if (len > 64)
		cmac_aes128_update(&c, len - 64, msg + 64);
	cmac_aes128_digest(&c, 16, sig);
}
