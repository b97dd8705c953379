/* SPDX-License-Identifier: MIT */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "rawpeer_cm.h"
#include "testutil.h"

void rawcm_set_timers(void)
{
	char ms[16];

	snprintf(ms, sizeof(ms), "%d", CM_TIMEOUT_MS);
	setenv("NDK_CM_TIMEOUT_MS", ms, 1);
	snprintf(ms, sizeof(ms), "%d", NUDGE_MS);
	setenv("NDK_RTR_NUDGE_MS", ms, 1);
	snprintf(ms, sizeof(ms), "%d", GRACE_MS);
	setenv("NDK_ACCEPT_GRACE_MS", ms, 1);
}

int rawcm_open_registry(void **state)
{
	struct cm_host h;
	struct tool_listener l;
	struct sockaddr_in any = cm_lo4(0);

	cm_host_open(&h, "lo");
	if (cm_listen(&h, &l, (struct sockaddr *)&any) != STATUS_SUCCESS)
		return -1;
	cm_listener_close(&l);
	cm_host_close(&h);
	return 0;
}

/* The descriptors this process has open. */
static int count_open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

void rawcm_host_close(struct cm_host *h)
{
	NTSTATUS st;

	st = h->cq->Dispatch->NdkCloseCq(&h->cq->Header, NULL, NULL);
	assert_true(st == STATUS_SUCCESS || st == STATUS_PENDING);
	st = h->pd->Dispatch->NdkClosePd(&h->pd->Header, NULL, NULL);
	assert_true(st == STATUS_SUCCESS || st == STATUS_PENDING);
	cm_host_close(h);
}

/* ------------------------------------------------------------------ */
/* Passive                                                            */

static bool fds_back(void *arg)
{
	return count_open_fds() == ((struct passive *)arg)->fds;
}

void passive_open(struct passive *p)
{
	struct sockaddr_in any = cm_lo4(0);

	cm_host_open(&p->h, "lo");
	assert_int_equal(cm_listen(&p->h, &p->l, (struct sockaddr *)&any),
			 STATUS_SUCCESS);
	p->fds = count_open_fds();
}

void passive_settled(struct passive *p)
{
	if (!tu_wait_until(fds_back, p, WAIT_MS))
		fail_msg("%d descriptors open, %d expected", count_open_fds(),
			 p->fds);
	assert_null(cm_next_incoming(&p->l, 20));
}

static void sanity_connect(struct passive *p)
{
	NDK_QP *aqp = cm_qp(&p->h), *pqp = cm_qp(&p->h);
	NDK_CONNECTOR *a = cm_connector(&p->h), *c;
	struct cm_req conn;

	assert_null(cm_next_incoming(&p->l, 0));
	assert_int_equal(cm_connect(a, aqp, (struct sockaddr *)&p->l.addr, 1, 1,
				    "sanity", 6, &conn),
			 STATUS_PENDING);
	c = cm_next_incoming(&p->l, WAIT_MS);
	assert_non_null(c);
	/* The event is for this connect, not a leftover of a bad peer. */
	cm_assert_private_data(c, "sanity", 6);
	cm_accept_and_complete(a, &conn, c, pqp, WAIT_MS);
	cm_close_connector(a);
	cm_close_connector(c);
	cm_close_qp(aqp);
	cm_close_qp(pqp);
}

void passive_close(struct passive *p)
{
	sanity_connect(p);
	cm_listener_close(&p->l);
	rawcm_host_close(&p->h);
}

NDK_CONNECTOR *passive_raw_request(struct passive *p, int *fd,
				   const uint8_t *req, size_t len)
{
	NDK_CONNECTOR *c;

	*fd = raw_connect(&p->l.addr);
	raw_send(*fd, req, len);
	c = cm_next_incoming(&p->l, WAIT_MS);
	assert_non_null(c);
	return c;
}

NDK_QP *passive_accept_read_reply(struct passive *p, NDK_CONNECTOR *c, int fd,
				  struct cm_req *acc, struct mpa_msg *rep)
{
	NDK_QP *qp = cm_qp(&p->h);

	cm_req_init(acc);
	assert_int_equal(c->Dispatch->NdkAcceptEx(c, qp, 4, 4, (PVOID) "ok", 2,
						  NULL, NULL, cm_req_done, acc),
			 STATUS_PENDING);
	raw_read_mpa(fd, rep, MPA_KEY_REP, WAIT_MS);
	assert_int_equal(rep->hdr[16] & (MPA_REJECT | MPA_MARKERS), 0);
	return qp;
}

void passive_raw_accepted(struct passive *p, const uint8_t *req, size_t len,
			  struct raw_accepted *r)
{
	r->c = passive_raw_request(p, &r->fd, req, len);
	r->qp = passive_accept_read_reply(p, r->c, r->fd, &r->acc, &r->rep);
}

void assert_p2p_write_reply(const struct mpa_msg *rep)
{
	assert_int_equal(rep->hdr[17], 2);
	assert_true(rep->hdr[16] & MPA_IRD_ORD);
	assert_int_equal(rep->pd_len, 4 + 2);
	assert_int_equal(get_be16(rep->pd) & (MPA_P2P | MPA_SEND_RTR), MPA_P2P);
	assert_int_equal(get_be16(rep->pd + 2) & (MPA_WRITE_RTR | MPA_READ_RTR),
			 MPA_WRITE_RTR);
	/* IRD = min(4, 128, peer ORD 4), ORD = min(4, 128, peer IRD 4). */
	assert_int_equal(get_be16(rep->pd) & MPA_LIMIT_MASK, 4);
	assert_int_equal(get_be16(rep->pd + 2) & MPA_LIMIT_MASK, 4);
	assert_memory_equal(rep->pd + 4, "ok", 2);
}

/* ------------------------------------------------------------------ */
/* Active                                                             */

void active_open(struct active *a)
{
	struct mpa_msg req;

	cm_host_open(&a->h, "lo");
	a->lfd = raw_listen(&a->addr, 0);
	a->qp = cm_qp(&a->h);
	a->c = cm_connector(&a->h);
	a->t0 = tu_now_ms();
	assert_int_equal(cm_connect(a->c, a->qp, (struct sockaddr *)&a->addr, 8,
				    4, "req", 3, &a->conn),
			 STATUS_PENDING);
	a->sfd = raw_accept(a->lfd, WAIT_MS);
	raw_read_mpa(a->sfd, &req, MPA_KEY_REQ, WAIT_MS);
	assert_int_equal(req.hdr[17], 2);
	assert_int_equal(req.hdr[16] & (MPA_IRD_ORD | MPA_MARKERS | MPA_REJECT),
			 MPA_IRD_ORD);
	assert_int_equal(req.pd_len, 4 + 3);
	assert_int_equal(get_be16(req.pd), MPA_P2P | 8);
	assert_int_equal(get_be16(req.pd + 2),
			 MPA_WRITE_RTR | MPA_READ_RTR | 4);
	assert_memory_equal(req.pd + 4, "req", 3);
}

void active_close(struct active *a)
{
	if (a->c)
		cm_close_connector(a->c);
	cm_close_qp(a->qp);
	if (a->sfd >= 0)
		close(a->sfd);
	close(a->lfd);
	rawcm_host_close(&a->h);
}

void active_reply(struct active *a, bool bytewise)
{
	uint8_t buf[64];
	size_t n = mpa_good_reply(buf);

	if (bytewise)
		raw_send_bytewise(a->sfd, buf, n);
	else
		raw_send(a->sfd, buf, n);
	assert_int_equal(cm_req_wait(&a->conn, WAIT_MS), STATUS_SUCCESS);
}

void active_establish(struct active *a, bool bytewise, uint8_t *rtr)
{
	active_reply(a, bytewise);
	assert_int_equal(a->c->Dispatch->NdkCompleteConnect(a->c, NULL, NULL,
							    NULL, NULL),
			 STATUS_SUCCESS);
	raw_expect_write_rtr(a->sfd, rtr, WAIT_MS);
}

void active_refused(const struct raw_case *c)
{
	uint8_t buf[1024];
	struct active a;
	size_t len;
	NTSTATUS st;

	active_open(&a);
	len = raw_build(buf, sizeof(buf), c->send);
	if (len)
		raw_send(a.sfd, buf, len);
	if (c->fin_after)
		shutdown(a.sfd, SHUT_WR);
	st = cm_req_wait(&a.conn, WAIT_MS);
	if (st != STATUS_CONNECTION_REFUSED)
		fail_msg("%s: Connect completed %#x, expected %#x", c->name,
			 (unsigned int)st,
			 (unsigned int)STATUS_CONNECTION_REFUSED);
	raw_assert_dropped(a.sfd, WAIT_MS, c->name);
	/* Nothing to complete after a failed Connect. */
	st = a.c->Dispatch->NdkCompleteConnect(a.c, NULL, NULL, NULL, NULL);
	if (st == STATUS_SUCCESS)
		fail_msg("%s: NdkCompleteConnect succeeded after a failed "
			 "Connect",
			 c->name);
	active_close(&a);
}

void active_refused_all(const void *cases)
{
	for (const struct raw_case *c = cases; c->name; c++)
		active_refused(c);
}

/* ------------------------------------------------------------------ */
/* Scenarios as cmocka tests                                          */

static void run_once(const struct rawcm_scenario *s)
{
	struct passive p;
	struct active a;

	if (s->run) {
		s->run(s->arg);
	} else if (s->passive) {
		passive_open(&p);
		s->passive(&p, s->arg);
		passive_settled(&p);
		passive_close(&p);
	} else {
		active_open(&a);
		s->active(&a, s->arg);
		active_close(&a);
	}
}

void rawcm_run(void **state)
{
	const struct rawcm_scenario *s = *state;
	int before = count_open_fds();

	for (int i = 0; i < LOOPS; i++) {
		run_once(s);
		assert_int_equal(count_open_fds(), before);
	}
}
