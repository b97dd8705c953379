/* SPDX-License-Identifier: MIT */
/*
 * tools/smb's NTLMv2 and SMB 3.0 signing: the NTLMv2 known answers of
 * MS-NLMP 4.2.4 (user "User", domain "Domain", password "Password"),
 * UTF-16 conversion, and the signing key and signature properties that
 * the server checks (the signature field itself is not signed).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "smb2_crypto.h"

static const uint8_t server_chal[8] = { 0x01, 0x23, 0x45, 0x67,
					0x89, 0xab, 0xcd, 0xef };
static const uint8_t client_chal[8] = { 0xaa, 0xaa, 0xaa, 0xaa,
					0xaa, 0xaa, 0xaa, 0xaa };
/* MsvAvNbDomainName "Domain", MsvAvNbComputerName "Server", MsvAvEOL. */
static const uint8_t target_info[] = {
	0x02, 0x00, 0x0c, 0x00, 'D',  0,    'o',  0,	'm',  0,    'a',  0,
	'i',  0,    'n',  0,	0x01, 0x00, 0x0c, 0x00, 'S',  0,    'e',  0,
	'r',  0,    'v',  0,	'e',  0,    'r',  0,	0x00, 0x00, 0x00, 0x00,
};

static void test_utf16(void **state)
{
	uint8_t out[16];

	(void)state;
	assert_int_equal(smb2_utf16("aZ", out, sizeof(out), 0), 4);
	assert_memory_equal(out, "a\0Z\0", 4);
	assert_int_equal(smb2_utf16("aZ", out, sizeof(out), 1), 4);
	assert_memory_equal(out, "A\0Z\0", 4);
	/* Never past cap. */
	assert_int_equal(smb2_utf16("abcdef", out, 5, 0), 4);
}

static void test_ntowfv2(void **state)
{
	static const uint8_t want[16] = { 0x0c, 0x86, 0x8a, 0x40, 0x3b, 0xfd,
					  0x7a, 0x93, 0xa3, 0x00, 0x1e, 0xf2,
					  0x2e, 0xf0, 0x2e, 0x3f };
	uint8_t key[16], other[16];

	(void)state;
	ntlm_ntowfv2("Password", "User", "Domain", key);
	assert_memory_equal(key, want, 16);
	/* The user name is case-insensitive, the domain is not. */
	ntlm_ntowfv2("Password", "uSER", "Domain", other);
	assert_memory_equal(other, want, 16);
	ntlm_ntowfv2("Password", "User", "DOMAIN", other);
	assert_memory_not_equal(other, want, 16);
	ntlm_ntowfv2("password", "User", "Domain", other);
	assert_memory_not_equal(other, want, 16);
}

static void test_v2_response(void **state)
{
	static const uint8_t proof[16] = { 0x68, 0xcd, 0x0a, 0xb8, 0x51, 0xe5,
					   0x1c, 0x96, 0xaa, 0xbc, 0x92, 0x7b,
					   0xeb, 0xef, 0x6a, 0x1c };
	static const uint8_t base_key[16] = { 0x8d, 0xe4, 0x0c, 0xca,
					      0xdb, 0xc1, 0x4a, 0x82,
					      0xf1, 0x5c, 0xb0, 0xad,
					      0x0d, 0xe9, 0x5c, 0xa3 };
	uint8_t key[16], out[256], skey[16];
	size_t n;

	(void)state;
	ntlm_ntowfv2("Password", "User", "Domain", key);
	n = ntlm_v2_response(key, server_chal, client_chal, 0, target_info,
			     sizeof(target_info), out, sizeof(out), skey);
	/* NTProofStr, then the blob: 28 bytes, the target info, 4 zeros. */
	assert_int_equal(n, 16 + 28 + sizeof(target_info) + 4);
	assert_memory_equal(out, proof, 16);
	assert_memory_equal(skey, base_key, 16);
	assert_int_equal(out[16], 1);
	assert_int_equal(out[17], 1);
	assert_memory_equal(out + 32, client_chal, 8);
	assert_memory_equal(out + 44, target_info, sizeof(target_info));
	/* Too small an output: nothing. */
	assert_int_equal(ntlm_v2_response(key, server_chal, client_chal, 0,
					  target_info, sizeof(target_info), out,
					  n - 1, skey),
			 0);
}

static void test_lmv2(void **state)
{
	static const uint8_t want[16] = { 0x86, 0xc3, 0x50, 0x97, 0xac, 0x9c,
					  0xec, 0x10, 0x25, 0x54, 0x76, 0x4a,
					  0x57, 0xcc, 0xcc, 0x19 };
	uint8_t key[16], out[24];

	(void)state;
	ntlm_ntowfv2("Password", "User", "Domain", key);
	ntlm_lmv2_response(key, server_chal, client_chal, out);
	assert_memory_equal(out, want, 16);
	assert_memory_equal(out + 16, client_chal, 8);
}

static void test_signing(void **state)
{
	uint8_t skey[16] = {
		1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15
	};
	uint8_t k1[16], k2[16], msg[100], sig[16], sig2[16];

	(void)state;
	smb3_signing_key(skey, k1);
	smb3_signing_key(skey, k2);
	assert_memory_equal(k1, k2, 16);
	assert_memory_not_equal(k1, skey, 16);
	skey[15] ^= 1;
	smb3_signing_key(skey, k2);
	assert_memory_not_equal(k1, k2, 16);

	memset(msg, 0x11, sizeof(msg));
	smb3_sign(k1, msg, sizeof(msg), sig);
	/* The signature field (bytes 48..63) is signed as zeros. */
	memset(msg + 48, 0xee, 16);
	smb3_sign(k1, msg, sizeof(msg), sig2);
	assert_memory_equal(sig, sig2, 16);
	/* Any other byte counts. */
	msg[99] ^= 1;
	smb3_sign(k1, msg, sizeof(msg), sig2);
	assert_memory_not_equal(sig, sig2, 16);
	msg[99] ^= 1;
	msg[0] ^= 1;
	smb3_sign(k1, msg, sizeof(msg), sig2);
	assert_memory_not_equal(sig, sig2, 16);
	/* A header-only message. */
	smb3_sign(k1, msg, 64, sig2);
	assert_memory_not_equal(sig, sig2, 16);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_utf16),
		cmocka_unit_test(test_ntowfv2),
		cmocka_unit_test(test_v2_response),
		cmocka_unit_test(test_lmv2),
		cmocka_unit_test(test_signing),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
