/* SPDX-License-Identifier: MIT */
/*
 * tools/smb/smb2.c with READs and WRITEs in flight, against a server in
 * this process (a message transport that answers at once, in the order
 * the test picks, with the credits the test allows): responses matched
 * by MessageId in any order, never a request beyond the credits granted,
 * the end of a file, and a failure in the middle of a queue that ends
 * every request before smb2_write returns.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "smb2.h"
#include "smbd.h"
#include "smbd_wire.h"

/* smb2.c calls the SMB Direct transport only when there is one: never
 * here. */
int smbd_mr_create(struct smbd_conn *c, void *buf, size_t len,
		   struct smbd_mr **out)
{
	(void)c, (void)buf, (void)len, (void)out;
	return SMBD_ERR_RESOURCE;
}

int smbd_mr_register(struct smbd_conn *c, struct smbd_mr *mr, size_t len,
		     bool remote_write, struct smbd_buffer_desc *desc)
{
	(void)c, (void)mr, (void)len, (void)remote_write, (void)desc;
	return SMBD_ERR_RESOURCE;
}

int smbd_mr_release(struct smbd_conn *c, struct smbd_mr *mr,
		    bool *invalidated_by_peer)
{
	(void)c, (void)mr, (void)invalidated_by_peer;
	return SMBD_ERR_RESOURCE;
}

void smbd_mr_destroy(struct smbd_conn *c, struct smbd_mr *mr)
{
	(void)c, (void)mr;
}

const struct smbd_info *smbd_info(const struct smbd_conn *c)
{
	(void)c;
	return NULL;
}

const char *smbd_why(const struct smbd_conn *c)
{
	(void)c;
	return "no transport";
}

#define HDR	  64
#define MAX_RSP	  128
#define FILE_CAP  (4u << 20)
#define RSP_BYTES (HDR + 16 + (1u << 20))

struct fake {
	uint8_t *rsp[MAX_RSP];
	size_t rsp_len[MAX_RSP];
	unsigned int nrsp;
	uint8_t *cur;
	bool lifo; /* answer the newest request first */
	unsigned int cap; /* credits the client may hold, in flight or not */
	unsigned int avail; /* granted, not spent */
	unsigned int charges_in_flight;
	unsigned int in_flight, max_in_flight;
	unsigned int violations; /* requests beyond the credits */
	unsigned long out_of_order;
	uint64_t last_answered;
	uint32_t fail_write_at; /* answer the WRITE at this offset with an
				   error (0: none) */
	bool drop; /* the transport fails with requests in flight */
	uint8_t *file;
	size_t size;
};

static void put16(uint8_t *p, uint16_t v)
{
	smbd_put16(p, v);
}

static uint16_t charge_of(const uint8_t *req)
{
	uint16_t c = smbd_get16(req + 6);

	return c ? c : 1;
}

static uint8_t *rsp_new(struct fake *f, const uint8_t *req, uint32_t status,
			size_t body)
{
	uint8_t *r = calloc(1, RSP_BYTES);

	assert_non_null(r);
	assert_true(f->nrsp < MAX_RSP);
	memcpy(r, req, HDR);
	memset(r + 48, 0, 16);
	smbd_put32(r + 8, status);
	smbd_put32(r + 16, 1); /* SERVER_TO_REDIR */
	smbd_put64(r + 40, 0x1234);
	f->rsp[f->nrsp] = r;
	f->rsp_len[f->nrsp++] = HDR + body;
	return r;
}

static int fake_send(void *ctx, const void *msg, size_t len)
{
	struct fake *f = ctx;
	const uint8_t *q = msg, *b = q + HDR;
	uint16_t cmd = smbd_get16(q + 12), charge = charge_of(q);
	uint8_t *r;
	size_t n;
	uint64_t off;

	assert_true(len >= HDR);
	if (cmd != 0 && charge > f->avail)
		f->violations++;
	f->avail -= cmd ? (charge < f->avail ? charge : f->avail) : 0;
	if (!cmd)
		f->avail = 0;
	f->charges_in_flight += charge;
	if (++f->in_flight > f->max_in_flight)
		f->max_in_flight = f->in_flight;
	switch (cmd) {
	case 0: /* NEGOTIATE */
		r = rsp_new(f, q, 0, 65);
		put16(r + HDR, 65);
		put16(r + HDR + 4, 0x0302);
		smbd_put32(r + HDR + 28, 1u << 20);
		smbd_put32(r + HDR + 32, 1u << 20);
		smbd_put32(r + HDR + 36, 1u << 20);
		break;
	case 1: /* SESSION_SETUP: a challenge, then a guest session */
		if (smbd_get32(q + HDR + 24 + 8) == 1) {
			r = rsp_new(f, q, 0xc0000016u, 8 + 48);
			put16(r + HDR + 4, HDR + 8);
			put16(r + HDR + 6, 48);
			memcpy(r + HDR + 8, "NTLMSSP", 8);
			smbd_put32(r + HDR + 8 + 8, 2);
			smbd_put32(r + HDR + 8 + 44, 48);
		} else {
			r = rsp_new(f, q, 0, 8);
			put16(r + HDR + 2, 1); /* IS_GUEST: no signing */
		}
		break;
	case 5: /* CREATE */
		r = rsp_new(f, q, 0, 89);
		smbd_put64(r + HDR + 48, f->size);
		if (smbd_get32(q + HDR + 36) == 5) /* FILE_OVERWRITE_IF */
			f->size = 0;
		break;
	case 6: /* CLOSE */
		r = rsp_new(f, q, 0, 60);
		put16(r + HDR + 2, 1);
		smbd_put64(r + HDR + 48, f->size);
		break;
	case 8: /* READ */
		n = smbd_get32(b + 4);
		off = smbd_get64(b + 8);
		if (off >= f->size) {
			rsp_new(f, q, 0xc0000011u, 9);
			break;
		}
		if (n > f->size - off)
			n = f->size - off;
		r = rsp_new(f, q, 0, 16 + n);
		r[HDR + 2] = HDR + 16;
		smbd_put32(r + HDR + 4, (uint32_t)n);
		memcpy(r + HDR + 16, f->file + off, n);
		break;
	case 9: /* WRITE */
		n = smbd_get32(b + 4);
		off = smbd_get64(b + 8);
		assert_true(smbd_get16(b + 2) == HDR + 48 &&
			    HDR + 48 + n <= len);
		assert_true(off + n <= FILE_CAP);
		if (f->fail_write_at && off == f->fail_write_at) {
			rsp_new(f, q, 0xc0000022u, 9);
			break;
		}
		memcpy(f->file + off, b + 48, n);
		if (off + n > f->size)
			f->size = off + n;
		r = rsp_new(f, q, 0, 16);
		smbd_put32(r + HDR + 4, (uint32_t)n);
		break;
	default: /* TREE_CONNECT, TREE_DISCONNECT, LOGOFF */
		rsp_new(f, q, 0, 16);
		break;
	}
	return 0;
}

static int fake_recv(void *ctx, const uint8_t **msg, size_t *len,
		     unsigned int ms)
{
	struct fake *f = ctx;
	unsigned int i, grant, want;
	uint8_t *r;

	(void)ms;
	free(f->cur);
	f->cur = NULL;
	if (!f->nrsp || (f->drop && f->in_flight > 1))
		return -1; /* the client waits for nothing: a hang */
	i = f->lifo ? f->nrsp - 1 : 0;
	r = f->rsp[i];
	memmove(&f->rsp[i], &f->rsp[i + 1],
		(f->nrsp - i - 1) * sizeof(f->rsp[0]));
	*len = f->rsp_len[i];
	memmove(&f->rsp_len[i], &f->rsp_len[i + 1],
		(f->nrsp - i - 1) * sizeof(f->rsp_len[0]));
	f->nrsp--;
	if (smbd_get64(r + 24) < f->last_answered)
		f->out_of_order++;
	f->last_answered = smbd_get64(r + 24);
	/* Grant what was asked, up to the cap on what the client holds. */
	f->charges_in_flight -= charge_of(r);
	f->in_flight--;
	want = smbd_get16(r + 14);
	grant = f->cap - f->avail - f->charges_in_flight;
	if (grant > want)
		grant = want;
	f->avail += grant;
	put16(r + 14, (uint16_t)grant);
	f->cur = r;
	*msg = r;
	return 0;
}

static const char *fake_err(void *ctx, int err)
{
	(void)ctx, (void)err;
	return "the test's transport failed";
}

struct env {
	struct fake f;
	struct smb2_transport t;
	struct smb2_client *c;
	struct smb2_file file;
	uint8_t *src, *dst;
};

static void env_up(struct env *e, unsigned int cap, unsigned int depth,
		   size_t io_size)
{
	struct smb2_opts o = { .server = "fake",
			       .share = "s",
			       .user = "u",
			       .password = "p",
			       .io_size = io_size,
			       .queue_depth = depth,
			       .timeout_ms = 1000 };
	char why[256];
	size_t i;

	memset(e, 0, sizeof(*e));
	e->f.cap = 1; /* until the session is up */
	e->f.avail = 1;
	e->f.file = calloc(1, FILE_CAP);
	e->src = malloc(FILE_CAP);
	e->dst = calloc(1, FILE_CAP);
	assert_true(e->f.file && e->src && e->dst);
	for (i = 0; i < FILE_CAP; i++)
		e->src[i] = (uint8_t)(i * 7 + (i >> 13));
	e->t.send = fake_send;
	e->t.recv = fake_recv;
	e->t.err_str = fake_err;
	e->t.ctx = &e->f;
	assert_int_equal(smb2_connect(&e->t, &o, &e->c, why, sizeof(why)),
			 SMB2_OK);
	e->f.cap = cap;
	assert_int_equal(smb2_open(e->c, "f", SMB2_OPEN_WRITE, &e->file), 0);
	e->f.max_in_flight = 0;
}

static void env_down(struct env *e)
{
	unsigned int i;

	smb2_disconnect(e->c);
	for (i = 0; i < e->f.nrsp; i++)
		free(e->f.rsp[i]);
	free(e->f.cur);
	free(e->f.file);
	free(e->src);
	free(e->dst);
}

/* Fewer credits than the queue is deep: the queue waits for them. */
static void test_credits_limit_the_queue(void **state)
{
	struct env e;
	size_t got;

	(void)state;
	env_up(&e, 3, 8, 65536);
	e.f.lifo = true;
	assert_int_equal(smb2_write(e.c, &e.file, 0, e.src, 1u << 20), 0);
	assert_int_equal(e.f.violations, 0);
	assert_int_equal(e.f.max_in_flight, 3);
	assert_true(smb2_stats(e.c)->credit_waits > 0);
	assert_true(e.f.out_of_order > 0);
	assert_int_equal(e.f.size, 1u << 20);
	assert_memory_equal(e.f.file, e.src, 1u << 20);
	assert_int_equal(smb2_read(e.c, &e.file, 0, e.dst, 1u << 20, &got), 0);
	assert_int_equal(got, 1u << 20);
	assert_memory_equal(e.dst, e.src, 1u << 20);
	assert_int_equal(e.f.violations, 0);
	assert_int_equal(e.f.in_flight, 0);
	env_down(&e);
}

/* Enough credits: the whole queue in flight, answered newest first;
 * 4 KiB requests (charge 1) and 1 MiB ones (charge 16). */
static void test_full_queue_any_order(void **state)
{
	struct env e;
	size_t got;

	(void)state;
	env_up(&e, 1000, 16, 4096);
	e.f.lifo = true;
	assert_int_equal(smb2_write(e.c, &e.file, 0, e.src, 256 * 1024), 0);
	assert_int_equal(e.f.max_in_flight, 16);
	assert_true(e.f.out_of_order > 0);
	assert_int_equal(smb2_read(e.c, &e.file, 0, e.dst, 256 * 1024, &got),
			 0);
	assert_int_equal(got, 256 * 1024);
	assert_memory_equal(e.dst, e.src, 256 * 1024);
	assert_int_equal(e.f.violations, 0);
	env_down(&e);

	env_up(&e, 40, 4, 1u << 20);
	assert_int_equal(smb2_write(e.c, &e.file, 0, e.src, 4u << 20), 0);
	/* 40 credits hold two 16-credit requests, not three. */
	assert_int_equal(e.f.max_in_flight, 2);
	assert_int_equal(e.f.violations, 0);
	assert_memory_equal(e.f.file, e.src, 4u << 20);
	env_down(&e);
}

/* A READ past the end of the file: *got stops there. */
static void test_read_to_eof(void **state)
{
	struct env e;
	size_t got;

	(void)state;
	env_up(&e, 64, 8, 65536);
	assert_int_equal(smb2_write(e.c, &e.file, 0, e.src, 100000), 0);
	e.f.lifo = true;
	assert_int_equal(smb2_read(e.c, &e.file, 0, e.dst, 1u << 20, &got), 0);
	assert_int_equal(got, 100000);
	assert_memory_equal(e.dst, e.src, 100000);
	assert_int_equal(e.f.in_flight, 0);
	env_down(&e);
}

/* One WRITE fails: the others in flight are answered before smb2_write
 * returns, and the failure is that one. */
static void test_failure_ends_every_request(void **state)
{
	struct env e;

	(void)state;
	env_up(&e, 64, 8, 65536);
	e.f.fail_write_at = 3 * 65536;
	assert_int_equal(smb2_write(e.c, &e.file, 0, e.src, 1u << 20),
			 SMB2_ERR_STATUS);
	assert_int_equal(e.f.in_flight, 0);
	assert_int_equal(e.f.nrsp, 0);
	assert_non_null(strstr(smb2_why(e.c), "STATUS_ACCESS_DENIED"));
	assert_true(e.f.size < (1u << 20));
	env_down(&e);
}

/* A request that needs more credits than the server will ever grant: an
 * error, not a wait. The transport failing with requests in flight: an
 * error at once. */
static void test_no_credits_no_hang(void **state)
{
	struct env e;

	(void)state;
	env_up(&e, 8, 4, 1u << 20);
	assert_int_equal(smb2_write(e.c, &e.file, 0, e.src, 1u << 20),
			 SMB2_ERR_PROTO);
	assert_non_null(strstr(smb2_why(e.c), "credits"));
	assert_int_equal(e.f.violations, 0);
	env_down(&e);

	env_up(&e, 64, 8, 65536);
	e.f.drop = true;
	assert_int_equal(smb2_write(e.c, &e.file, 0, e.src, 1u << 20),
			 SMB2_ERR_TRANSPORT);
	assert_non_null(strstr(smb2_why(e.c), "the test's transport failed"));
	env_down(&e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_credits_limit_the_queue),
		cmocka_unit_test(test_full_queue_any_order),
		cmocka_unit_test(test_read_to_eof),
		cmocka_unit_test(test_failure_ends_every_request),
		cmocka_unit_test(test_no_credits_no_hang),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
