/* SPDX-License-Identifier: MIT */
#include <string.h>
#include "smbd_wire.h"

const char *smbd_wire_err_str(enum smbd_wire_err e)
{
	switch (e) {
	case SMBD_WIRE_OK:
		return "ok";
	case SMBD_WIRE_SHORT:
		return "message too short";
	case SMBD_WIRE_VERSION:
		return "no common SMB Direct version";
	case SMBD_WIRE_STATUS:
		return "the peer refused the negotiation";
	case SMBD_WIRE_CREDITS:
		return "no credits";
	case SMBD_WIRE_SIZES:
		return "sizes below the protocol minimum";
	case SMBD_WIRE_LAYOUT:
		return "data outside the message";
	}
	return "unknown";
}

void smbd_neg_req_encode(uint8_t out[SMBD_NEG_REQ_SIZE],
			 const struct smbd_neg_req *r)
{
	smbd_put16(out, r->min_version);
	smbd_put16(out + 2, r->max_version);
	smbd_put16(out + 4, 0);
	smbd_put16(out + 6, r->credits_requested);
	smbd_put32(out + 8, r->preferred_send_size);
	smbd_put32(out + 12, r->max_receive_size);
	smbd_put32(out + 16, r->max_fragmented_size);
}

enum smbd_wire_err smbd_neg_req_decode(const uint8_t *buf, size_t len,
				       struct smbd_neg_req *r)
{
	if (len < SMBD_NEG_REQ_SIZE)
		return SMBD_WIRE_SHORT;
	r->min_version = smbd_get16(buf);
	r->max_version = smbd_get16(buf + 2);
	r->credits_requested = smbd_get16(buf + 6);
	r->preferred_send_size = smbd_get32(buf + 8);
	r->max_receive_size = smbd_get32(buf + 12);
	r->max_fragmented_size = smbd_get32(buf + 16);
	if (r->min_version > SMBD_VERSION_1 || r->max_version < SMBD_VERSION_1)
		return SMBD_WIRE_VERSION;
	if (!r->credits_requested)
		return SMBD_WIRE_CREDITS;
	if (r->max_receive_size < SMBD_MIN_RECEIVE_SIZE)
		return SMBD_WIRE_SIZES;
	return SMBD_WIRE_OK;
}

void smbd_neg_resp_encode(uint8_t out[SMBD_NEG_RESP_SIZE],
			  const struct smbd_neg_resp *r)
{
	smbd_put16(out, r->min_version);
	smbd_put16(out + 2, r->max_version);
	smbd_put16(out + 4, r->negotiated_version);
	smbd_put16(out + 6, 0);
	smbd_put16(out + 8, r->credits_requested);
	smbd_put16(out + 10, r->credits_granted);
	smbd_put32(out + 12, r->status);
	smbd_put32(out + 16, r->max_read_write_size);
	smbd_put32(out + 20, r->preferred_send_size);
	smbd_put32(out + 24, r->max_receive_size);
	smbd_put32(out + 28, r->max_fragmented_size);
}

enum smbd_wire_err smbd_neg_resp_decode(const uint8_t *buf, size_t len,
					struct smbd_neg_resp *r)
{
	if (len < SMBD_NEG_RESP_SIZE)
		return SMBD_WIRE_SHORT;
	r->min_version = smbd_get16(buf);
	r->max_version = smbd_get16(buf + 2);
	r->negotiated_version = smbd_get16(buf + 4);
	r->credits_requested = smbd_get16(buf + 8);
	r->credits_granted = smbd_get16(buf + 10);
	r->status = smbd_get32(buf + 12);
	r->max_read_write_size = smbd_get32(buf + 16);
	r->preferred_send_size = smbd_get32(buf + 20);
	r->max_receive_size = smbd_get32(buf + 24);
	r->max_fragmented_size = smbd_get32(buf + 28);
	if (r->status)
		return SMBD_WIRE_STATUS;
	if (r->negotiated_version != SMBD_VERSION_1)
		return SMBD_WIRE_VERSION;
	if (!r->credits_granted || !r->credits_requested)
		return SMBD_WIRE_CREDITS;
	if (r->max_receive_size < SMBD_MIN_RECEIVE_SIZE ||
	    r->preferred_send_size < SMBD_MIN_RECEIVE_SIZE)
		return SMBD_WIRE_SIZES;
	return SMBD_WIRE_OK;
}

void smbd_data_hdr_encode(uint8_t out[SMBD_DATA_HDR_SIZE],
			  const struct smbd_data_hdr *h)
{
	smbd_put16(out, h->credits_requested);
	smbd_put16(out + 2, h->credits_granted);
	smbd_put16(out + 4, h->flags);
	smbd_put16(out + 6, 0);
	smbd_put32(out + 8, h->remaining_length);
	smbd_put32(out + 12, h->data_offset);
	smbd_put32(out + 16, h->data_length);
}

enum smbd_wire_err smbd_data_hdr_decode(const uint8_t *buf, size_t len,
					struct smbd_data_hdr *h)
{
	if (len < SMBD_DATA_HDR_SIZE)
		return SMBD_WIRE_SHORT;
	h->credits_requested = smbd_get16(buf);
	h->credits_granted = smbd_get16(buf + 2);
	h->flags = smbd_get16(buf + 4);
	h->remaining_length = smbd_get32(buf + 8);
	h->data_offset = smbd_get32(buf + 12);
	h->data_length = smbd_get32(buf + 16);
	if (!h->data_length) {
		/* No payload: a credit grant or keep-alive; no data may
		 * remain to follow either. */
		return h->remaining_length ? SMBD_WIRE_LAYOUT : SMBD_WIRE_OK;
	}
	if (h->data_offset < SMBD_DATA_HDR_SIZE || h->data_offset > len ||
	    h->data_length > len - h->data_offset)
		return SMBD_WIRE_LAYOUT;
	return SMBD_WIRE_OK;
}

void smbd_buffer_desc_encode(uint8_t out[SMBD_BUFFER_DESC_SIZE],
			     const struct smbd_buffer_desc *d)
{
	smbd_put64(out, d->offset);
	smbd_put32(out + 8, d->token);
	smbd_put32(out + 12, d->length);
}

enum smbd_wire_err smbd_buffer_desc_decode(const uint8_t *buf, size_t len,
					   struct smbd_buffer_desc *d)
{
	if (len < SMBD_BUFFER_DESC_SIZE)
		return SMBD_WIRE_SHORT;
	d->offset = smbd_get64(buf);
	d->token = smbd_get32(buf + 8);
	d->length = smbd_get32(buf + 12);
	return SMBD_WIRE_OK;
}
