/* SPDX-License-Identifier: MIT */
/*
 * Known-answer FPDUs (hand-made, each decodes in tshark with "Good
 * CRC32"), as hex. Shared by the wire-code tests.
 */
#ifndef NDK_TEST_KAT_H
#define NDK_TEST_KAT_H

static const char kat_rtr_write[] =
	"000e c140 00000001 0000000000000000 ebd34c5f";
static const char kat_send[] = "001d 4143 00000000 00000000 00000001 00000000"
			       "68656c6c6f20697761727000 cf696c1e";
static const char kat_read_req[] =
	"002e 4141 00000000 00000001 00000001 00000000 00001234"
	"0000000000001000 00000010 00005678 0000000000002000 15f3054f";
static const char kat_read_resp[] = "001e c142 00001234 0000000000001000"
				    "000102030405060708090a0b0c0d0e0f 879766f5";
static const char kat_term[] =
	"002a 4147 00000000 00000002 00000001 00000000 1203c000 001d"
	"4143 00000000 00000000 00000001 00000000 91f2ebb5";

#endif
