/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the restartable FPDU receive parser (RFC 5044 section
 * 4 framing, RFC 5041/5040 headers) on arbitrary bytes.
 *
 * Input: 5 control bytes, then the TCP byte stream.
 *	byte 0	bit 0 CRC on; bits 1-2 maximum ULPDU (none, 1442, 100,
 *		46); bits 3-5 chunk bound 2^n; bit 6 one byte at a time;
 *		bit 7 the chunked run asks for whole events
 *	1-4	seed of the chunk sizes (0: the stream in one piece)
 *
 * The stream is parsed twice, whole and in chunks (with or without
 * FPDU_EV_WHOLE). Each chunk sits at the
 * end of a heap buffer with everything before it poisoned under ASan, so
 * a read outside the chunk is caught (one buffer per run: a malloc per
 * chunk would fill ASan's quarantine). Every step's result must keep the
 * API's promises (abort() otherwise), and both runs must give the same
 * events once payload chunks are joined (compared as a hash over the
 * normalised events).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "iwarp/fpdu.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FUZZ_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define FUZZ_ASAN 1
#endif
#ifdef FUZZ_ASAN
#include <sanitizer/asan_interface.h>
#else
#define ASAN_POISON_MEMORY_REGION(p, n)	  ((void)(p), (void)(n))
#define ASAN_UNPOISON_MEMORY_REGION(p, n) ((void)(p), (void)(n))
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CTRL_LEN 5

struct run {
	uint64_t hash; /* FNV-1a over the normalised events */
	size_t events;
	size_t consumed;
	bool error;
	int err;
	/* per-FPDU checks */
	bool in_fpdu;
	size_t next_off;
	size_t payload_len;
	bool crc;
	size_t wholes;
};

static void hash_bytes(struct run *r, const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++) {
		r->hash ^= b[i];
		r->hash *= 0x100000001b3ull;
	}
}

static void hash_u64(struct run *r, uint64_t v)
{
	uint8_t b[8];

	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	hash_bytes(r, b, sizeof(b));
}

/* A HEADER re-encodes to the bytes received, reserved bits aside. */
static void check_reencode(const struct fpdu_rx *rx, const struct fpdu_ev *ev)
{
	uint8_t hdr[FPDU_HDR_MAX];
	bool rreq = !ev->hdr->tagged && ev->hdr->opcode == RDMAP_READ_REQ;
	int n = fpdu_tx_hdr(hdr, ev->hdr, ev->payload_len,
			    rreq ? &ev->read_req : NULL);

	if (n <= 0 || (size_t)n + ev->payload_len != 2u + ev->ulpdu_len)
		abort();
	hdr[2] |= rx->raw[2] & DDP_CTRL_RSVD;
	hdr[3] |= rx->raw[3] & RDMAP_CTRL_RSVD;
	if (memcmp(hdr, rx->raw, (size_t)n))
		abort();
}

static void hash_header(struct run *r, const struct fpdu_ev *ev)
{
	hash_u64(r, 'H');
	hash_u64(r, ev->hdr->opcode | ev->hdr->tagged << 4 |
			    ev->hdr->last << 5 | (uint64_t)ev->hdr->dv << 8 |
			    (uint64_t)ev->hdr->rv << 16);
	hash_u64(r, ev->hdr->stag);
	hash_u64(r, ev->hdr->to);
	hash_u64(r, ev->hdr->inv_stag);
	hash_u64(r, ev->hdr->qn);
	hash_u64(r, ev->hdr->msn);
	hash_u64(r, ev->hdr->mo);
	hash_u64(r, ev->ulpdu_len);
	hash_u64(r, ev->read_req.size);
	hash_u64(r, ev->read_req.src_to);
}

/* The promises of fpdu_rx_step(), checked on every call. */
static void check_step(struct run *r, const struct fpdu_rx *rx,
		       const uint8_t *buf, size_t len, size_t used,
		       const struct fpdu_ev *ev)
{
	if (used > len)
		abort();
	if (used == 0 && len != 0 && ev->type != FPDU_EV_ERROR)
		abort();
	r->events++;
	switch (ev->type) {
	case FPDU_EV_NONE:
		if (used != len)
			abort();
		r->events--;
		return;
	case FPDU_EV_HEADER:
		if (r->in_fpdu || !ev->hdr ||
		    ev->ulpdu_len != fpdu_ulpdu_len(ev->hdr, ev->payload_len) ||
		    ev->ulpdu_len > rx->max_ulpdu)
			abort();
		check_reencode(rx, ev);
		r->in_fpdu = true;
		r->next_off = 0;
		r->payload_len = ev->payload_len;
		hash_header(r, ev);
		return;
	case FPDU_EV_PAYLOAD:
		/* In place, inside what this call consumed, in order. */
		if (!r->in_fpdu || !ev->len || ev->data < buf ||
		    ev->data + ev->len > buf + used ||
		    ev->offset != r->next_off ||
		    ev->offset + ev->len > r->payload_len)
			abort();
		r->next_off += ev->len;
		r->events--; /* chunking differs between runs */
		hash_bytes(r, ev->data, ev->len);
		return;
	case FPDU_EV_END:
		if (!r->in_fpdu || r->next_off != r->payload_len || !ev->hdr ||
		    ev->last != ev->hdr->last || (!r->crc && !ev->crc_ok))
			abort();
		r->in_fpdu = false;
		hash_u64(r, 'E');
		hash_u64(r, ev->crc_ok | ev->last << 1);
		return;
	case FPDU_EV_WHOLE:
		/* HEADER, all the payload in place, END: hashed as those. */
		if (r->in_fpdu || !ev->hdr ||
		    ev->ulpdu_len != fpdu_ulpdu_len(ev->hdr, ev->payload_len) ||
		    ev->ulpdu_len > rx->max_ulpdu ||
		    ev->len != ev->payload_len || ev->offset ||
		    (ev->len &&
		     (ev->data < buf || ev->data + ev->len > buf + used)) ||
		    (!ev->len && ev->data) || ev->last != ev->hdr->last ||
		    (!r->crc && !ev->crc_ok) || !fpdu_rx_at_boundary(rx))
			abort();
		check_reencode(rx, ev);
		hash_header(r, ev);
		hash_bytes(r, ev->data, ev->len);
		hash_u64(r, 'E');
		hash_u64(r, ev->crc_ok | ev->last << 1);
		r->events++; /* as HEADER and END */
		r->wholes++;
		return;
	case FPDU_EV_ERROR:
		if (ev->err >= 0)
			abort();
		r->error = true;
		r->err = ev->err;
		hash_u64(r, 'X');
		hash_u64(r, (uint64_t)(int64_t)ev->err);
		hash_u64(r, ev->cause.layer | ev->cause.etype << 8 |
				    ev->cause.ecode << 16);
		return;
	default:
		abort();
	}
}

static uint32_t xorshift(uint32_t *s)
{
	uint32_t x = *s;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	*s = x;
	return x;
}

static void run(struct run *r, const uint8_t *s, size_t len, bool crc,
		size_t max, uint32_t seed, size_t bound, bool whole_ev)
{
	struct fpdu_rx rx;
	struct fpdu_ev ev;
	size_t pos = 0;
	uint8_t *area = malloc(len ? len : 1);

	if (!area)
		abort();
	memset(r, 0, sizeof(*r));
	r->hash = 0xcbf29ce484222325ull;
	r->crc = crc;
	fpdu_rx_init(&rx, crc);
	fpdu_rx_set_whole(&rx, whole_ev);
	if (max)
		fpdu_rx_set_max_ulpdu(&rx, max);
	while (pos < len && !r->error) {
		size_t n = len - pos, off = 0, steps = 0;
		uint8_t *buf;

		if (seed)
			n = 1 + xorshift(&seed) % bound;
		if (n > len - pos)
			n = len - pos;
		/* The chunk ends where the heap block does. */
		ASAN_UNPOISON_MEMORY_REGION(area, len);
		buf = area + (len - n);
		memcpy(buf, s + pos, n);
		ASAN_POISON_MEMORY_REGION(area, len - n);
		for (;;) {
			size_t used =
				fpdu_rx_step(&rx, buf + off, n - off, &ev);

			check_step(r, &rx, buf + off, n - off, used, &ev);
			off += used;
			/* Each event consumes a byte: no endless loop. */
			if (++steps > n + 2)
				abort();
			if (ev.type == FPDU_EV_NONE || ev.type == FPDU_EV_ERROR)
				break;
		}
		pos += off;
	}
	ASAN_UNPOISON_MEMORY_REGION(area, len);
	free(area);
	r->consumed = pos;
	/* Latched error, or NONE on an empty call. */
	{
		int before = r->err;

		if (fpdu_rx_step(&rx, s, 0, &ev) != 0)
			abort();
		if (r->error && (ev.type != FPDU_EV_ERROR || ev.err != before))
			abort();
		if (!r->error && ev.type != FPDU_EV_NONE)
			abort();
		if (r->in_fpdu && fpdu_rx_at_boundary(&rx))
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const size_t maxes[] = { 0, 1442, 100, 46 };
	struct run whole, chunked;
	uint32_t seed;
	size_t bound;
	bool crc;

	if (size < CTRL_LEN)
		return 0;
	crc = data[0] & 1;
	bound = (size_t)1 << ((data[0] >> 3) & 7);
	seed = (uint32_t)data[1] | (uint32_t)data[2] << 8 |
	       (uint32_t)data[3] << 16 | (uint32_t)data[4] << 24;
	if (data[0] & 0x40) {
		seed = seed ? seed : 1;
		bound = 1;
	}
	run(&whole, data + CTRL_LEN, size - CTRL_LEN, crc,
	    maxes[(data[0] >> 1) & 3], 0, 0, false);
	run(&chunked, data + CTRL_LEN, size - CTRL_LEN, crc,
	    maxes[(data[0] >> 1) & 3], seed, bound, data[0] & 0x80);
	/* Any split: the same events, the same bytes, the same stop. */
	if (whole.hash != chunked.hash || whole.events != chunked.events ||
	    whole.consumed != chunked.consumed ||
	    whole.error != chunked.error || whole.err != chunked.err)
		abort();
	return 0;
}
