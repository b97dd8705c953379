/* SPDX-License-Identifier: MIT */
/*
 * The cryptography SMB 3.0 needs, on nettle: NTLMv2 (MS-NLMP 3.3.2:
 * NTOWFv2, the NTLMv2 response and the session base key), the SMB 3.0
 * signing key (MS-SMB2 3.1.4.2, SP800-108 counter mode with HMAC-SHA256)
 * and AES-CMAC message signatures (MS-SMB2 3.1.4.1).
 */
#ifndef NDK_TOOLS_SMB2_CRYPTO_H
#define NDK_TOOLS_SMB2_CRYPTO_H

#include <stddef.h>
#include <stdint.h>

/* UTF-8 (ASCII is what the tool takes) to UTF-16LE; returns bytes
 * written, at most cap; upper: ASCII upper case on the way. */
size_t smb2_utf16(const char *s, uint8_t *out, size_t cap, int upper);

/* NTOWFv2(password, user, domain). */
void ntlm_ntowfv2(const char *password, const char *user, const char *domain,
		  uint8_t out[16]);

/*
 * The NTLMv2 response for the server challenge: NTProofStr followed by
 * the client blob (version 1, timestamp, client challenge, target info).
 * Returns its length (at most cap, 0 if it does not fit), and the session
 * base key.
 */
size_t ntlm_v2_response(const uint8_t key[16], const uint8_t server_chal[8],
			const uint8_t client_chal[8], uint64_t timestamp,
			const uint8_t *target_info, size_t ti_len, uint8_t *out,
			size_t cap, uint8_t session_key[16]);
/* LMv2: HMAC-MD5(key, server || client challenge) || client challenge. */
void ntlm_lmv2_response(const uint8_t key[16], const uint8_t server_chal[8],
			const uint8_t client_chal[8], uint8_t out[24]);

/* SMB 3.0 signing key from the session key. */
void smb3_signing_key(const uint8_t session_key[16], uint8_t out[16]);
/* AES-CMAC over msg with its signature field (bytes 48..63) as zero. */
void smb3_sign(const uint8_t key[16], const uint8_t *msg, size_t len,
	       uint8_t sig[16]);

#endif
