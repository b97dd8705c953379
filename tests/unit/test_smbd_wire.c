/* SPDX-License-Identifier: MIT */
/*
 * SMB Direct (MS-SMBD 2.2) wire formats of tools/smb: known-answer bytes
 * of each message, round trips, and every refusal of the decoders.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "smbd_wire.h"

/* Negotiate request: 1.0..1.0, 255 credits, send 1364, receive 8192,
 * fragmented 1 MiB. */
static const uint8_t kat_neg_req[SMBD_NEG_REQ_SIZE] = {
	0x00, 0x01, 0x00, 0x01, 0x00, 0x00, 0xff, 0x00, 0x54, 0x05,
	0x00, 0x00, 0x00, 0x20, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00,
};

/* Negotiate response: 1.0, requested 255, granted 1, success, read/write
 * 8 MiB, send 1364, receive 1364, fragmented 1 MiB. */
static const uint8_t kat_neg_resp[SMBD_NEG_RESP_SIZE] = {
	0x00, 0x01, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00, 0xff, 0x00, 0x01,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, 0x00, 0x54, 0x05,
	0x00, 0x00, 0x54, 0x05, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00,
};

static void test_neg_req(void **state)
{
	struct smbd_neg_req r = { .min_version = SMBD_VERSION_1,
				  .max_version = SMBD_VERSION_1,
				  .credits_requested = 255,
				  .preferred_send_size = 1364,
				  .max_receive_size = 8192,
				  .max_fragmented_size = 1 << 20 },
			    d;
	uint8_t buf[SMBD_NEG_REQ_SIZE];

	(void)state;
	memset(buf, 0xa5, sizeof(buf));
	smbd_neg_req_encode(buf, &r);
	assert_memory_equal(buf, kat_neg_req, sizeof(buf));
	assert_int_equal(smbd_neg_req_decode(buf, sizeof(buf), &d),
			 SMBD_WIRE_OK);
	assert_memory_equal(&d, &r, sizeof(d));
	assert_int_equal(smbd_neg_req_decode(buf, sizeof(buf) - 1, &d),
			 SMBD_WIRE_SHORT);
	r.min_version = r.max_version = 0x0200;
	smbd_neg_req_encode(buf, &r);
	assert_int_equal(smbd_neg_req_decode(buf, sizeof(buf), &d),
			 SMBD_WIRE_VERSION);
	r.min_version = SMBD_VERSION_1;
	smbd_neg_req_encode(buf, &r);
	assert_int_equal(smbd_neg_req_decode(buf, sizeof(buf), &d),
			 SMBD_WIRE_OK);
	r.credits_requested = 0;
	smbd_neg_req_encode(buf, &r);
	assert_int_equal(smbd_neg_req_decode(buf, sizeof(buf), &d),
			 SMBD_WIRE_CREDITS);
	r.credits_requested = 1;
	r.max_receive_size = SMBD_MIN_RECEIVE_SIZE - 1;
	smbd_neg_req_encode(buf, &r);
	assert_int_equal(smbd_neg_req_decode(buf, sizeof(buf), &d),
			 SMBD_WIRE_SIZES);
}

static void test_neg_resp(void **state)
{
	struct smbd_neg_resp r, d;
	uint8_t buf[SMBD_NEG_RESP_SIZE];

	(void)state;
	assert_int_equal(
		smbd_neg_resp_decode(kat_neg_resp, sizeof(kat_neg_resp), &r),
		SMBD_WIRE_OK);
	assert_int_equal(r.negotiated_version, SMBD_VERSION_1);
	assert_int_equal(r.credits_requested, 255);
	assert_int_equal(r.credits_granted, 1);
	assert_int_equal(r.max_read_write_size, 8 << 20);
	assert_int_equal(r.preferred_send_size, 1364);
	assert_int_equal(r.max_receive_size, 1364);
	assert_int_equal(r.max_fragmented_size, 1 << 20);
	smbd_neg_resp_encode(buf, &r);
	assert_memory_equal(buf, kat_neg_resp, sizeof(buf));
	assert_int_equal(smbd_neg_resp_decode(buf, sizeof(buf) - 1, &d),
			 SMBD_WIRE_SHORT);

	d = r;
	d.status = 0xc00000bb; /* STATUS_NOT_SUPPORTED */
	smbd_neg_resp_encode(buf, &d);
	assert_int_equal(smbd_neg_resp_decode(buf, sizeof(buf), &d),
			 SMBD_WIRE_STATUS);
	d = r;
	d.negotiated_version = 0x0200;
	smbd_neg_resp_encode(buf, &d);
	assert_int_equal(smbd_neg_resp_decode(buf, sizeof(buf), &d),
			 SMBD_WIRE_VERSION);
	d = r;
	d.credits_granted = 0;
	smbd_neg_resp_encode(buf, &d);
	assert_int_equal(smbd_neg_resp_decode(buf, sizeof(buf), &d),
			 SMBD_WIRE_CREDITS);
	d = r;
	d.max_receive_size = 127;
	smbd_neg_resp_encode(buf, &d);
	assert_int_equal(smbd_neg_resp_decode(buf, sizeof(buf), &d),
			 SMBD_WIRE_SIZES);
}

static void test_data_hdr(void **state)
{
	static const uint8_t kat[SMBD_DATA_HDR_SIZE] = {
		0x0a, 0x00, 0x02, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x10,
		0x00, 0x00, 0x18, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00,
	};
	struct smbd_data_hdr h = { .credits_requested = 10,
				   .credits_granted = 2,
				   .flags = SMBD_FLAG_RESPONSE_REQUESTED,
				   .remaining_length = 4096,
				   .data_offset = SMBD_DATA_OFFSET,
				   .data_length = 4 },
			     d;
	uint8_t msg[SMBD_DATA_OFFSET + 4];

	(void)state;
	memset(msg, 0, sizeof(msg));
	smbd_data_hdr_encode(msg, &h);
	assert_memory_equal(msg, kat, sizeof(kat));
	assert_int_equal(smbd_data_hdr_decode(msg, sizeof(msg), &d),
			 SMBD_WIRE_OK);
	assert_memory_equal(&d, &h, sizeof(d));
	/* The data must lie inside what arrived. */
	assert_int_equal(smbd_data_hdr_decode(msg, sizeof(msg) - 1, &d),
			 SMBD_WIRE_LAYOUT);
	assert_int_equal(smbd_data_hdr_decode(msg, SMBD_DATA_HDR_SIZE - 1, &d),
			 SMBD_WIRE_SHORT);
	h.data_offset = 8; /* inside the header */
	smbd_data_hdr_encode(msg, &h);
	assert_int_equal(smbd_data_hdr_decode(msg, sizeof(msg), &d),
			 SMBD_WIRE_LAYOUT);
	h.data_offset = 0xfffffff0; /* offset + length wraps */
	h.data_length = 0x20;
	smbd_data_hdr_encode(msg, &h);
	assert_int_equal(smbd_data_hdr_decode(msg, sizeof(msg), &d),
			 SMBD_WIRE_LAYOUT);
	/* A keep-alive: header only, nothing remaining. */
	memset(&h, 0, sizeof(h));
	h.credits_requested = 1;
	h.flags = SMBD_FLAG_RESPONSE_REQUESTED;
	smbd_data_hdr_encode(msg, &h);
	assert_int_equal(smbd_data_hdr_decode(msg, SMBD_DATA_HDR_SIZE, &d),
			 SMBD_WIRE_OK);
	assert_int_equal(d.data_length, 0);
	assert_int_equal(d.flags, SMBD_FLAG_RESPONSE_REQUESTED);
	h.remaining_length = 1;
	smbd_data_hdr_encode(msg, &h);
	assert_int_equal(smbd_data_hdr_decode(msg, SMBD_DATA_HDR_SIZE, &d),
			 SMBD_WIRE_LAYOUT);
}

static void test_buffer_desc(void **state)
{
	static const uint8_t kat[SMBD_BUFFER_DESC_SIZE] = {
		0x00, 0x10, 0x32, 0x54, 0x76, 0x98, 0x00, 0x00,
		0x78, 0x56, 0x34, 0x12, 0x00, 0x00, 0x01, 0x00,
	};
	struct smbd_buffer_desc b = { .offset = 0x987654321000ull,
				      .token = 0x12345678,
				      .length = 65536 },
				d;
	uint8_t buf[SMBD_BUFFER_DESC_SIZE];

	(void)state;
	smbd_buffer_desc_encode(buf, &b);
	assert_memory_equal(buf, kat, sizeof(kat));
	assert_int_equal(smbd_buffer_desc_decode(buf, sizeof(buf), &d),
			 SMBD_WIRE_OK);
	assert_memory_equal(&d, &b, sizeof(d));
	assert_int_equal(smbd_buffer_desc_decode(buf, sizeof(buf) - 1, &d),
			 SMBD_WIRE_SHORT);
}

static void test_err_str(void **state)
{
	(void)state;
	assert_string_equal(smbd_wire_err_str(SMBD_WIRE_OK), "ok");
	assert_string_equal(smbd_wire_err_str(SMBD_WIRE_LAYOUT),
			    "data outside the message");
	assert_string_equal(smbd_wire_err_str((enum smbd_wire_err)99),
			    "unknown");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_neg_req),
		cmocka_unit_test(test_neg_resp),
		cmocka_unit_test(test_data_hdr),
		cmocka_unit_test(test_buffer_desc),
		cmocka_unit_test(test_err_str),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
