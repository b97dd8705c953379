/* SPDX-License-Identifier: MIT */
/*
 * Tagged messages on the wire never interleave (RFC 5041 5.3). Their
 * segments carry no message number: a receiver takes every segment
 * between a Write's first and its L bit as that Write's, and Linux siw
 * drops the connection on a Read Response inside a Write ("packet
 * intersection"). Against a raw server whose small receive buffer stalls
 * A's transmitter: a Read Request that arrives while a large Write is
 * half sent is answered after the Write's last FPDU; a Write posted while
 * a large Read Response is half sent goes out after the Response's last.
 * Every FPDU is checked (STag, TO, bytes), and A's Write completes.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>
#include "rawpeer_dp.h"
#include "testutil.h"

#define WRITE_STAG 0x4455
#define WRITE_TO   0x100000000ull
#define SINK_STAG  0x11223344
#define SINK_TO	   0x1000

/* One tagged message as the raw server sees it arrive. */
struct tagged_msg {
	const char *name;
	uint32_t stag;
	uint64_t to;
	const uint8_t *src; /* the bytes it carries */
	size_t len;
	size_t got; /* bytes arrived so far */
	bool started, ended;
};

/* A's Write of len bytes at src, and the Response to a Read of them. */
static struct tagged_msg write_msg(const uint8_t *src, size_t len)
{
	return (struct tagged_msg){ .name = "Write",
				    .stag = WRITE_STAG,
				    .to = WRITE_TO,
				    .src = src,
				    .len = len };
}

static struct tagged_msg read_resp_msg(const uint8_t *src, size_t len)
{
	return (struct tagged_msg){ .name = "Read Response",
				    .stag = SINK_STAG,
				    .to = SINK_TO,
				    .src = src,
				    .len = len };
}

/* Started and not ended: another tagged message must not come now. */
static bool in_progress(const struct tagged_msg *m)
{
	return m->started && !m->ended;
}

/*
 * Reads one FPDU: a segment of the Write w (RDMAP opcode 0) or of the
 * Read Response r (opcode 2), never inside the other one, and checked
 * against what its message must carry. Returns the message it belongs to.
 */
static struct tagged_msg *read_segment(int fd, struct tagged_msg *w,
				       struct tagged_msg *r)
{
	static uint8_t u[70000];
	struct tagged_msg *m, *other;
	size_t ulen, n;

	ulen = raw_read_fpdu(fd, u, sizeof(u), WAIT_MS);
	assert_true(ulen >= 14);
	assert_true(u[0] & 0x80); /* tagged */
	switch (u[1] & 0x0f) {
	case 0x0:
		m = w;
		other = r;
		break;
	case 0x2:
		m = r;
		other = w;
		break;
	default:
		fail_msg("RDMAP opcode %u", u[1] & 0x0f);
		return NULL;
	}
	if (in_progress(other))
		fail_msg("a %s FPDU inside the %s, after %zu of its %zu bytes",
			 m->name, other->name, other->got, other->len);
	if (m->ended)
		fail_msg("an FPDU of the %s after its last", m->name);
	n = ulen - 14;
	assert_int_equal(get_be32(u + 2), m->stag);
	assert_true(get_be64(u + 6) == m->to + m->got);
	assert_true(n <= m->len - m->got);
	assert_memory_equal(u + 14, m->src + m->got, n);
	m->started = true;
	m->got += n;
	m->ended = u[0] & 0x40;
	if (m->ended)
		assert_int_equal(m->got, m->len);
	return m;
}

/* The Read Request (QN 1, MSN 1) of r, from A's MR. */
static void send_read_request(int fd, const struct tagged_msg *r)
{
	uint8_t u[46], b[64];
	size_t n;

	ddp_untagged_hdr(u, 0x41, 0x41, 1, 1, 0);
	put_be32(u + 18, r->stag);
	put_be64(u + 22, r->to);
	put_be32(u + 30, (uint32_t)r->len);
	put_be32(u + 34, A.rtok);
	put_be64(u + 38, (uint64_t)(uintptr_t)r->src);
	n = fpdu_build(b, u, sizeof(u), true);
	raw_send(fd, b, n);
}

static void post_write(const struct tagged_msg *w, uintptr_t ctx)
{
	NDK_SGE s = sge((void *)(uintptr_t)w->src, w->len, A.ltok);

	assert_int_equal(A.qp->Dispatch->NdkWrite(A.qp, (PVOID)ctx, &s, 1,
						  w->to, w->stag, 0),
			 STATUS_SUCCESS);
}

static void expect_write_done(uintptr_t ctx)
{
	NDK_RESULT_EX res;

	assert_int_equal(poll_cq(cli.cq, &res, 1), 1);
	expect_result(&res, ctx, NdkOperationTypeWrite, STATUS_SUCCESS);
	assert_cq_quiet(cli.cq);
}

/*
 * A Read Request arrives while a 7 MiB Write is half sent (far more than
 * the sockets hold): its Response (150000 bytes, several FPDUs) follows
 * the Write's last FPDU.
 */
static void test_read_response_waits_for_write(void **state)
{
	struct tagged_msg w = write_msg(A.buf, 7 << 20);
	struct tagged_msg r = read_resp_msg(A.buf + (7 << 20), 150000);
	struct dp_raw_server srv_raw;

	(void)state;
	fill(A.buf, 8 << 20, 11);
	dp_raw_server_connect(&srv_raw, 4096);
	post_write(&w, 1);
	assert_ptr_equal(read_segment(srv_raw.fd, &w, &r), &w);
	assert_false(w.ended);
	send_read_request(srv_raw.fd, &r);
	while (!w.ended || !r.ended)
		read_segment(srv_raw.fd, &w, &r);
	expect_write_done(1);
	dp_raw_server_close(&srv_raw);
}

/*
 * A Write is posted while the Response to a 6 MiB Read Request is half
 * sent: the Write (512 KiB, several FPDUs) follows the Response's last
 * FPDU.
 */
static void test_write_waits_for_read_response(void **state)
{
	struct tagged_msg w = write_msg(A.buf + (7 << 20), 512 << 10);
	struct tagged_msg r = read_resp_msg(A.buf, 6 << 20);
	struct dp_raw_server srv_raw;

	(void)state;
	fill(A.buf, 8 << 20, 12);
	dp_raw_server_connect(&srv_raw, 4096);
	send_read_request(srv_raw.fd, &r);
	assert_ptr_equal(read_segment(srv_raw.fd, &w, &r), &r);
	assert_false(r.ended);
	post_write(&w, 2);
	while (!w.ended || !r.ended)
		read_segment(srv_raw.fd, &w, &r);
	expect_write_done(2);
	dp_raw_server_close(&srv_raw);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_read_response_waits_for_write, dp_setup_hosts,
			dp_teardown),
		cmocka_unit_test_setup_teardown(
			test_write_waits_for_read_response, dp_setup_hosts,
			dp_teardown),
	};

	/* The software provider's own wire, against a raw peer. */
	cm_software_only();
	dp_set_env();
	return cmocka_run_group_tests_name("dp_tagged_order", tests, NULL,
					   NULL);
}
