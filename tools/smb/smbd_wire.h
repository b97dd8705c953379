/* SPDX-License-Identifier: MIT */
/*
 * SMB Direct (MS-SMBD) wire formats: the negotiate request and response
 * (2.2.1, 2.2.2), the data transfer message (2.2.3) and the buffer
 * descriptor (2.2.3.1), all little endian. Pure encoders and decoders: no
 * I/O, no state.
 */
#ifndef NDK_TOOLS_SMBD_WIRE_H
#define NDK_TOOLS_SMBD_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SMBD_VERSION_1 0x0100

#define SMBD_NEG_REQ_SIZE  20
#define SMBD_NEG_RESP_SIZE 32
/* The data transfer header; data starts 8-byte aligned behind it. */
#define SMBD_DATA_HDR_SIZE    20
#define SMBD_DATA_OFFSET      24
#define SMBD_BUFFER_DESC_SIZE 16

/* Data transfer Flags: the peer must answer at once (keep-alive). */
#define SMBD_FLAG_RESPONSE_REQUESTED 0x0001

/* The smallest receive size MS-SMBD lets a peer offer (3.1.5.2). */
#define SMBD_MIN_RECEIVE_SIZE 128

struct smbd_neg_req {
	uint16_t min_version, max_version;
	uint16_t credits_requested;
	uint32_t preferred_send_size;
	uint32_t max_receive_size;
	uint32_t max_fragmented_size;
};

struct smbd_neg_resp {
	uint16_t min_version, max_version, negotiated_version;
	uint16_t credits_requested, credits_granted;
	uint32_t status; /* an NTSTATUS */
	uint32_t max_read_write_size;
	uint32_t preferred_send_size;
	uint32_t max_receive_size;
	uint32_t max_fragmented_size;
};

struct smbd_data_hdr {
	uint16_t credits_requested, credits_granted;
	uint16_t flags;
	uint32_t remaining_length;
	uint32_t data_offset;
	uint32_t data_length;
};

struct smbd_buffer_desc {
	uint64_t offset; /* the address the registration starts at */
	uint32_t token;
	uint32_t length;
};

/* Why a decoder refused a message. */
enum smbd_wire_err {
	SMBD_WIRE_OK = 0,
	SMBD_WIRE_SHORT, /* fewer bytes than the structure */
	SMBD_WIRE_VERSION, /* no version 1.0 in range, or another chosen */
	SMBD_WIRE_STATUS, /* the peer refused (negotiate status) */
	SMBD_WIRE_CREDITS, /* zero credits granted or requested */
	SMBD_WIRE_SIZES, /* sizes below the protocol minimum */
	SMBD_WIRE_LAYOUT, /* data offset/length outside the message */
};

const char *smbd_wire_err_str(enum smbd_wire_err e);

void smbd_neg_req_encode(uint8_t out[SMBD_NEG_REQ_SIZE],
			 const struct smbd_neg_req *r);
enum smbd_wire_err smbd_neg_req_decode(const uint8_t *buf, size_t len,
				       struct smbd_neg_req *r);
void smbd_neg_resp_encode(uint8_t out[SMBD_NEG_RESP_SIZE],
			  const struct smbd_neg_resp *r);
/* Also checks what 3.1.5.2 asks of the response: version 1.0, success,
 * credits granted, receive size at least 128 bytes. */
enum smbd_wire_err smbd_neg_resp_decode(const uint8_t *buf, size_t len,
					struct smbd_neg_resp *r);

/* The 20-byte header; the padding up to data_offset is the caller's. */
void smbd_data_hdr_encode(uint8_t out[SMBD_DATA_HDR_SIZE],
			  const struct smbd_data_hdr *h);
/* len: the bytes received. A message without data (a credit or
 * keep-alive message) may be exactly the 20-byte header. */
enum smbd_wire_err smbd_data_hdr_decode(const uint8_t *buf, size_t len,
					struct smbd_data_hdr *h);

void smbd_buffer_desc_encode(uint8_t out[SMBD_BUFFER_DESC_SIZE],
			     const struct smbd_buffer_desc *d);
enum smbd_wire_err smbd_buffer_desc_decode(const uint8_t *buf, size_t len,
					   struct smbd_buffer_desc *d);

/* Little-endian helpers the SMB2 layer shares. */
static inline void smbd_put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static inline void smbd_put32(uint8_t *p, uint32_t v)
{
	smbd_put16(p, (uint16_t)v);
	smbd_put16(p + 2, (uint16_t)(v >> 16));
}

static inline void smbd_put64(uint8_t *p, uint64_t v)
{
	smbd_put32(p, (uint32_t)v);
	smbd_put32(p + 4, (uint32_t)(v >> 32));
}

static inline uint16_t smbd_get16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static inline uint32_t smbd_get32(const uint8_t *p)
{
	return smbd_get16(p) | (uint32_t)smbd_get16(p + 2) << 16;
}

static inline uint64_t smbd_get64(const uint8_t *p)
{
	return smbd_get32(p) | (uint64_t)smbd_get32(p + 4) << 32;
}

#endif
