/* SPDX-License-Identifier: MIT */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <unistd.h>
#include "rawpeer_dp.h"

void dp_raw_server_connect(struct dp_raw_server *r, int rcvbuf)
{
	struct sockaddr_in addr;
	struct mpa_msg req;
	uint8_t b[64], rtr[64];
	struct cm_req conn;
	size_t n;

	r->lfd = raw_listen(&addr, rcvbuf);
	A.qp = big_qp(&cli);
	A.conn = cm_connector(&cli);
	atomic_store(&A.disc, 0);
	assert_int_equal(cm_connect(A.conn, A.qp, (struct sockaddr *)&addr, 8,
				    4, NULL, 0, &conn),
			 STATUS_PENDING);
	r->fd = raw_accept(r->lfd, WAIT_MS);
	raw_read_mpa(r->fd, &req, MPA_KEY_REQ, WAIT_MS);
	assert_true(req.hdr[16] & MPA_CRC);
	n = mpa_frame(b, MPA_KEY_REP, MPA_IRD_ORD | MPA_CRC, 2, true,
		      MPA_P2P | 4, MPA_WRITE_RTR | 8, NULL, 0);
	raw_send(r->fd, b, n);
	assert_int_equal(cm_req_wait(&conn, WAIT_MS), STATUS_SUCCESS);
	assert_int_equal(A.conn->Dispatch->NdkCompleteConnect(A.conn, on_disc,
							      &A, NULL, NULL),
			 STATUS_SUCCESS);
	raw_expect_write_rtr(r->fd, rtr, WAIT_MS);
}

void dp_raw_server_close(struct dp_raw_server *r)
{
	close(r->fd);
	close(r->lfd);
}

int dp_raw_client_accepted(unsigned int ord, int rcvbuf)
{
	uint8_t b[64];
	struct mpa_msg rep;
	struct cm_req acc;
	size_t n;
	int fd;

	fd = raw_connect_rcvbuf(&L.addr, rcvbuf);
	n = mpa_frame(b, MPA_KEY_REQ, MPA_IRD_ORD | MPA_CRC, 2, true,
		      MPA_P2P | 4, MPA_WRITE_RTR | MPA_READ_RTR | ord, NULL, 0);
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
	assert_int_equal(rep.hdr[16] & (MPA_REJECT | MPA_MARKERS), 0);
	assert_true(rep.hdr[16] & MPA_CRC);
	assert_int_equal(get_be16(rep.pd + 2) & (MPA_WRITE_RTR | MPA_READ_RTR),
			 MPA_WRITE_RTR);
	n = fpdu_build(b, ulpdu_write_rtr, sizeof(ulpdu_write_rtr), true);
	raw_send(fd, b, n);
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
