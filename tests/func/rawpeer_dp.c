/* SPDX-License-Identifier: MIT */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>
#include <unistd.h>
#include "rawpeer_dp.h"

/* A zero-length Read Response to the sink of Read Request u (ULPDU). */
static void answer_read_rtr(int fd, const uint8_t *u)
{
	uint8_t resp[14], b[32];
	size_t n;

	resp[0] = 0xc1; /* tagged, last, DDP version 1 */
	resp[1] = 0x42; /* RDMAP version 1, Read Response */
	memcpy(resp + 2, u + 18, 12); /* sink STag and TO */
	n = fpdu_build(b, resp, sizeof(resp), true);
	raw_send(fd, b, n);
}

void dp_raw_server_connect(struct dp_raw_server *r, int rcvbuf)
{
	dp_raw_server_connect_rtr(r, rcvbuf, MPA_WRITE_RTR);
}

void dp_raw_server_connect_rtr(struct dp_raw_server *r, int rcvbuf,
			       unsigned int rtr_type)
{
	struct dp_raw_opts o = { .rcvbuf = rcvbuf, .rtr = rtr_type };

	dp_raw_server_connect_opts(r, &o);
}

void dp_raw_server_connect_opts(struct dp_raw_server *r,
				const struct dp_raw_opts *o)
{
	unsigned int rtr_type = o->rtr ? o->rtr : MPA_WRITE_RTR;
	struct sockaddr_in addr;
	struct mpa_msg req;
	uint8_t b[64], rtr[64];
	struct cm_req conn;
	size_t n;

	r->lfd = raw_listen(&addr, o->rcvbuf);
	raw_set_mss(r->lfd, o->mss);
	A.qp = big_qp(&cli);
	A.conn = cm_connector(&cli);
	atomic_store(&A.disc, 0);
	assert_int_equal(cm_connect(A.conn, A.qp, (struct sockaddr *)&addr, 8,
				    4, NULL, 0, &conn),
			 STATUS_PENDING);
	r->fd = raw_accept(r->lfd, WAIT_MS);
	raw_read_mpa(r->fd, &req, MPA_KEY_REQ, WAIT_MS);
	assert_true(req.hdr[16] & MPA_CRC);
	if (o->got)
		*o->got = req;
	n = mpa_frame(b, MPA_KEY_REP, MPA_IRD_ORD | MPA_CRC | o->flags, 2, true,
		      MPA_P2P | 4, rtr_type | 8, NULL, 0);
	raw_send(r->fd, b, n);
	assert_int_equal(cm_req_wait(&conn, WAIT_MS), STATUS_SUCCESS);
	assert_int_equal(A.conn->Dispatch->NdkCompleteConnect(A.conn, on_disc,
							      &A, NULL, NULL),
			 STATUS_SUCCESS);
	if (rtr_type == MPA_WRITE_RTR) {
		raw_expect_write_rtr(r->fd, rtr, WAIT_MS);
		return;
	}
	assert_int_equal(raw_read_fpdu(r->fd, rtr, sizeof(rtr), WAIT_MS), 46);
	assert_int_equal(rtr[1], 0x41); /* Read Request */
	assert_int_equal(get_be32(rtr + 6), 1); /* QN 1 */
	assert_int_equal(get_be32(rtr + 10), 1); /* MSN 1 */
	assert_int_equal(get_be32(rtr + 30), 0); /* zero length */
	answer_read_rtr(r->fd, rtr);
}

void dp_raw_server_close(struct dp_raw_server *r)
{
	close(r->fd);
	close(r->lfd);
}

int dp_raw_client_accepted(unsigned int ord, int rcvbuf)
{
	return dp_raw_client_accepted_rtr(ord, rcvbuf, MPA_WRITE_RTR);
}

int dp_raw_client_accepted_rtr(unsigned int ord, int rcvbuf, unsigned int rtr)
{
	struct dp_raw_opts o = { .rcvbuf = rcvbuf, .rtr = rtr };

	return dp_raw_client_accepted_opts(ord, &o);
}

int dp_raw_client_accepted_opts(unsigned int ord, const struct dp_raw_opts *o)
{
	unsigned int rtr = o->rtr ? o->rtr : MPA_WRITE_RTR;
	uint8_t b[64];
	struct mpa_msg rep;
	struct cm_req acc;
	size_t n;
	int fd;

	fd = raw_connect_mss(&L.addr, o->rcvbuf, o->mss);
	n = mpa_frame(
		b, MPA_KEY_REQ, MPA_IRD_ORD | MPA_CRC | o->flags, 2, true,
		MPA_P2P | 4,
		(rtr == MPA_WRITE_RTR ? MPA_WRITE_RTR | MPA_READ_RTR : rtr) |
			ord,
		NULL, 0);
	raw_send(fd, b, n);
	P.conn = cm_next_incoming(&L, WAIT_MS);
	assert_non_null(P.conn);
	atomic_store(&P.disc, 0);
	cm_req_init(&acc);
	assert_int_equal(P.conn->Dispatch->NdkAcceptEx(P.conn, P.qp, 4, 4, NULL,
						       0, on_disc_ex, &P,
						       cm_req_done, &acc),
			 STATUS_PENDING);
	raw_read_mpa(fd, &rep, MPA_KEY_REP, WAIT_MS);
	if (o->got)
		*o->got = rep;
	assert_int_equal(rep.hdr[16] & (MPA_REJECT | MPA_MARKERS), 0);
	assert_true(rep.hdr[16] & MPA_CRC);
	assert_int_equal(get_be16(rep.pd + 2) & (MPA_WRITE_RTR | MPA_READ_RTR),
			 rtr);
	if (rtr == MPA_WRITE_RTR) {
		n = fpdu_build(b, ulpdu_write_rtr, sizeof(ulpdu_write_rtr),
			       true);
		raw_send(fd, b, n);
	} else {
		uint8_t want[32];

		n = fpdu_build(b, ulpdu_read_rtr, sizeof(ulpdu_read_rtr), true);
		raw_send(fd, b, n);
		/* The zero-length Read Response to ulpdu_read_rtr's sink. */
		assert_int_equal(raw_read_fpdu(fd, want, sizeof(want), WAIT_MS),
				 14);
		assert_int_equal(want[1], 0x42);
		assert_memory_equal(want + 2, ulpdu_read_rtr + 18, 12);
	}
	assert_int_equal(cm_req_wait(&acc, WAIT_MS), STATUS_SUCCESS);
	return fd;
}

void dp_raw_expect_read_request(int fd, uint32_t msn, UINT32 sink_stag,
				const void *sink, uint32_t size)
{
	uint8_t u[64];

	assert_int_equal(raw_read_fpdu(fd, u, sizeof(u), WAIT_MS), 46);
	assert_int_equal(u[0], 0x41);
	assert_int_equal(u[1], 0x41);
	assert_int_equal(get_be32(u + 6), 1);
	assert_int_equal(get_be32(u + 10), msn);
	assert_int_equal(get_be32(u + 18), sink_stag);
	assert_true(get_be64(u + 22) == (uint64_t)(uintptr_t)sink);
	assert_int_equal(get_be32(u + 30), size);
}

void dp_raw_assert_term_cause(const uint8_t *t, size_t tlen, unsigned int layer,
			      unsigned int etype, unsigned int ecode)
{
	uint32_t ctrl;

	assert_true(tlen >= 22);
	assert_int_equal(t[1] & 0x0f, 7); /* RDMAP Terminate */
	ctrl = get_be32(t + 18);
	if (ctrl >> 28 != layer || (ctrl >> 24 & 0xf) != etype ||
	    (ctrl >> 16 & 0xff) != ecode)
		fail_msg("Terminate layer %u etype %u code %#x, expected %u %u "
			 "%#x",
			 ctrl >> 28, ctrl >> 24 & 0xf, ctrl >> 16 & 0xff, layer,
			 etype, ecode);
}
