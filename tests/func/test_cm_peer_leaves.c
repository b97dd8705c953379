/* SPDX-License-Identifier: MIT */
/*
 * Raw MPA peers (rawpeer_cm.h) that close (FIN or RST) or go silent at
 * every step of the handshake, against our listener and our NdkConnect:
 * in the middle of a Request or Reply, before the Accept, instead of the
 * RTR, after the Reply, before NdkCompleteConnect; and the listener and
 * adapter closed while bad peers hang on. Silence ends at
 * NDK_CM_TIMEOUT_MS, not before; a reset connection leaves the engine
 * idle.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "rawpeer_cm.h"
#include "testutil.h"

/* ------------------------------------------------------------------ */
/* Passive side                                                       */

/* How much of mpa_req_v2 the raw client sends before it leaves. */
struct cut_case {
	const char *name;
	size_t len;
};

static const struct cut_case request_cuts[] = {
	{ "TCP only, no Request", 0 },
	{ "inside the key", 7 },
	{ "inside PD_Length", 19 },
	{ "the header, no private data", 20 },
	{ "inside the IRD/ORD block", 22 },
	{ "one byte short", sizeof(mpa_req_v2) - 1 },
	{ NULL, 0 },
};

/* Each cut of the Request, then a FIN; then each again with an RST. */
static void truncated_close(struct passive *p, const void *cases)
{
	for (int rst = 0; rst < 2; rst++) {
		for (const struct cut_case *c = cases; c->name; c++) {
			int fd = raw_connect(&p->l.addr);

			if (c->len)
				raw_send(fd, mpa_req_v2, c->len);
			if (rst)
				raw_close_rst(fd);
			else
				close(fd);
		}
	}
}
RAWCM_PASSIVE(test_passive_truncated_close, truncated_close, request_cuts);

static void passive_truncated_silence(struct passive *p, const void *unused)
{
	static const size_t cuts[] = { 0, 10, 20, sizeof(mpa_req_v2) - 1 };
	int fd[4];
	uint64_t t0;

	t0 = tu_now_ms();
	for (int i = 0; i < 4; i++) {
		fd[i] = raw_connect(&p->l.addr);
		if (cuts[i])
			raw_send(fd[i], mpa_req_v2, cuts[i]);
	}
	/* Dropped after NDK_CM_TIMEOUT_MS, not before (siw: 5 s). */
	for (int i = 0; i < 4; i++) {
		raw_assert_dropped(fd[i], WAIT_MS, NULL);
		assert_true(tu_now_ms() - t0 >= CM_TIMEOUT_MS - 20);
		close(fd[i]);
	}
	assert_true(tu_now_ms() - t0 < CM_TIMEOUT_MS + 2000);
}
RAWCM_PASSIVE(test_passive_truncated_silence, passive_truncated_silence, NULL);

/* A raw client sends mpa_req_v2, then leaves (FIN, or RST if rst); the
 * ConnectEvent's connector, once the provider had time to notice. */
static NDK_CONNECTOR *left_after_request(struct passive *p, bool rst)
{
	NDK_CONNECTOR *c;
	int fd;

	c = passive_raw_request(p, &fd, mpa_req_v2, sizeof(mpa_req_v2));
	if (rst)
		raw_close_rst(fd);
	else
		close(fd);
	tu_sleep_ms(20);
	return c;
}

/* NdkAccept of c with qp (IRD/ORD 1, no private data); acc is its
 * completion. */
static NTSTATUS start_accept(NDK_CONNECTOR *c, NDK_QP *qp, struct cm_req *acc)
{
	cm_req_init(acc);
	return c->Dispatch->NdkAccept(c, qp, 1, 1, NULL, 0, NULL, NULL,
				      cm_req_done, acc);
}

static void passive_close_before_accept(struct passive *p, const void *unused)
{
	NDK_CONNECTOR *c1, *c2, *c3;
	struct cm_req acc;
	NDK_QP *qp;

	qp = cm_qp(&p->h);
	/* Accept after the initiator left: STATUS_CONNECTION_ABORTED. */
	c1 = left_after_request(p, false);
	assert_int_equal(start_accept(c1, qp, &acc), STATUS_CONNECTION_ABORTED);
	assert_int_equal(cm_req_wait(&acc, 20), -1); /* inline only */
	/* So does Reject. */
	c2 = left_after_request(p, false);
	assert_int_equal(c2->Dispatch->NdkReject(c2, NULL, 0),
			 STATUS_CONNECTION_ABORTED);
	/* An RST instead of a FIN: the same. */
	c3 = left_after_request(p, true);
	assert_int_equal(start_accept(c3, qp, &acc), STATUS_CONNECTION_ABORTED);
	cm_close_connector(c1);
	cm_close_connector(c2);
	cm_close_connector(c3);
	cm_close_qp(qp);
}
RAWCM_PASSIVE(test_passive_close_before_accept, passive_close_before_accept,
	      NULL);

/* The peer leaves without reading or answering right after the Request,
 * and the consumer only learns it when it calls in: no hang. */
static void passive_close_no_wait(struct passive *p, const void *unused)
{
	NDK_CONNECTOR *c;
	NDK_QP *qp;
	NTSTATUS st;
	struct cm_req acc;
	int fd;

	qp = cm_qp(&p->h);
	c = passive_raw_request(p, &fd, mpa_req_v2, sizeof(mpa_req_v2));
	close(fd);
	/* No sleep: Accept races the provider noticing the FIN. */
	st = start_accept(c, qp, &acc);
	assert_int_equal(cm_req_result(st, &acc, WAIT_MS),
			 STATUS_CONNECTION_ABORTED);
	cm_close_connector(c);
	cm_close_qp(qp);
}
RAWCM_PASSIVE(test_passive_close_no_wait, passive_close_no_wait, NULL);

static void passive_close_instead_of_rtr(struct passive *p, const void *unused)
{
	struct raw_accepted r;

	for (int rst = 0; rst < 2; rst++) {
		passive_raw_accepted(p, mpa_req_v2, sizeof(mpa_req_v2), &r);
		assert_p2p_write_reply(&r.rep);
		/* The Accept waits for the RTR. */
		assert_int_equal(cm_req_wait(&r.acc, 20), -1);
		if (rst)
			raw_close_rst(r.fd);
		else
			close(r.fd);
		assert_int_equal(cm_req_wait(&r.acc, WAIT_MS),
				 STATUS_CONNECTION_ABORTED);
		cm_close_connector(r.c);
		cm_close_qp(r.qp);
	}
}
RAWCM_PASSIVE(test_passive_close_instead_of_rtr, passive_close_instead_of_rtr,
	      NULL);

static void passive_no_rtr(struct passive *p, const void *unused)
{
	struct cm_req acc;
	struct mpa_msg rep;
	NDK_CONNECTOR *c;
	NDK_QP *qp;
	uint64_t t0;
	int fd;

	c = passive_raw_request(p, &fd, mpa_req_v2, sizeof(mpa_req_v2));
	t0 = tu_now_ms();
	qp = passive_accept_read_reply(p, c, fd, &acc, &rep);
	assert_int_equal(cm_req_wait(&acc, WAIT_MS), STATUS_IO_TIMEOUT);
	assert_true(tu_now_ms() - t0 >= CM_TIMEOUT_MS - 20);
	/* The provider hung up on the silent initiator. */
	raw_assert_dropped(fd, WAIT_MS, NULL);
	close(fd);
	cm_close_connector(c);
	cm_close_qp(qp);
}
RAWCM_PASSIVE(test_passive_no_rtr, passive_no_rtr, NULL);

/* Closing the listener and the adapter while bad peers hang on. */
static void passive_close_during(const void *unused)
{
	struct passive p;
	int fd[4];
	NDK_CONNECTOR *c;

	passive_open(&p);
	fd[0] = raw_connect(&p.l.addr); /* nothing sent */
	fd[1] = raw_connect(&p.l.addr);
	raw_send(fd[1], mpa_req_v2, 10); /* half a key */
	c = passive_raw_request(&p, &fd[2], mpa_req_v2, sizeof(mpa_req_v2));
	assert_non_null(c); /* delivered, never answered */
	fd[3] = raw_connect(&p.l.addr);
	raw_send(fd[3], mpa_req_v2, sizeof(mpa_req_v2) - 1);
	tu_sleep_ms(20);
	cm_listener_close(&p.l);
	/* The undelivered ones are the provider's: dropped with the
	 * listener. The delivered one is the consumer's. */
	raw_assert_dropped(fd[0], WAIT_MS, NULL);
	raw_assert_dropped(fd[1], WAIT_MS, NULL);
	raw_assert_dropped(fd[3], WAIT_MS, NULL);
	assert_int_equal(raw_wait_event(fd[2], 20), RAW_SILENT);
	/* NdkCloseAdapter closes what the consumer left open. */
	rawcm_host_close(&p.h);
	raw_assert_dropped(fd[2], WAIT_MS, NULL);
	for (int i = 0; i < 4; i++)
		close(fd[i]);
}
RAWCM_ALONE(test_passive_close_during, passive_close_during, NULL);

/* ------------------------------------------------------------------ */
/* Active side                                                        */

static void active_fin_or_rst(const void *unused)
{
	static const struct raw_case fin = {
		.name = "FIN without a byte: refused (like no listener)",
		.fin_after = true,
	};
	struct active a;

	active_refused(&fin);
	/* RST without a byte: the same. */
	active_open(&a);
	raw_close_rst(a.sfd);
	a.sfd = -1;
	assert_int_equal(cm_req_wait(&a.conn, WAIT_MS),
			 STATUS_CONNECTION_REFUSED);
	active_close(&a);
}
RAWCM_ALONE(test_active_close, active_fin_or_rst, NULL);

/* A Reply (S|C, IRD word A + 4, ORD word C + 4, "ok") cut short, then
 * FIN. */
#define REPLY_CUT(n)                                                  \
	RAW_MPA_CUT((n), MPA_KEY_REP, MPA_IRD_ORD | MPA_CRC, 2, true, \
		    MPA_P2P | 4, MPA_WRITE_RTR | 4, "ok", 2)

static const struct raw_case active_truncated[] = {
	{ .name = "5 bytes of the Reply",
	  .send = { REPLY_CUT(5) },
	  .fin_after = true },
	{ .name = "the Reply's header",
	  .send = { REPLY_CUT(MPA_HDR_LEN) },
	  .fin_after = true },
	{ .name = "the Reply but its last byte",
	  .send = { REPLY_CUT(MPA_HDR_LEN + 4 + 2 - 1) },
	  .fin_after = true },
	{ .name = NULL },
};
RAWCM_ALONE(test_active_truncated, active_refused_all, active_truncated);

static void active_no_reply(struct active *a, const void *unused)
{
	assert_int_equal(cm_req_wait(&a->conn, WAIT_MS), STATUS_IO_TIMEOUT);
	assert_true(tu_now_ms() - a->t0 >= CM_TIMEOUT_MS - 20);
	raw_assert_dropped(a->sfd, WAIT_MS, NULL);
}
RAWCM_ACTIVE(test_active_no_reply, active_no_reply, NULL);

/* CPU time (clock ticks) of this process's engine threads ("ndk-IF"). */
static long engine_cpu_ticks(void)
{
	char path[300], comm[32], line[1024];
	unsigned long utime, stime;
	struct dirent *d;
	long ticks = 0;
	DIR *dir = opendir("/proc/self/task");
	FILE *f;
	char *p;

	assert_non_null(dir);
	while ((d = readdir(dir))) {
		if (d->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm",
			 d->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		comm[0] = 0;
		if (!fgets(comm, sizeof(comm), f))
			comm[0] = 0;
		fclose(f);
		if (strncmp(comm, "ndk-", 4))
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/stat",
			 d->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		p = fgets(line, sizeof(line), f) ? strrchr(line, ')') : NULL;
		fclose(f);
		/* After "pid (comm)": state is field 3, utime 14, stime 15. */
		if (p && sscanf(p + 2,
				"%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u "
				"%lu %lu",
				&utime, &stime) == 2)
			ticks += (long)(utime + stime);
	}
	closedir(dir);
	return ticks;
}

/*
 * The peer resets an established connection and the consumer keeps its
 * connector: the engine must go idle. epoll reports EPOLLHUP and EPOLLERR
 * whatever the interest mask, so a connection left registered with an
 * empty mask woke the engine in a loop (100% of a core) until closed.
 */
static void test_active_peer_reset_engine_idle(void **state)
{
	long hz = sysconf(_SC_CLK_TCK), before;
	uint8_t rtr[64];
	struct active a;

	active_open(&a);
	active_establish(&a, false, rtr);
	raw_close_rst(a.sfd);
	a.sfd = -1;
	usleep(100 * 1000);
	before = engine_cpu_ticks();
	usleep(500 * 1000);
	/* A spinning engine burns about hz / 2 ticks in 500 ms; an idle one
	 * none (the bound leaves room for a slow, loaded machine). */
	assert_in_range(engine_cpu_ticks() - before, 0, hz / 5);
	active_close(&a);
}

/* The responder leaves after its Reply, before CompleteConnect. */
static void active_close_after_reply(struct active *a, const void *unused)
{
	uint8_t buf[64];
	size_t n;

	n = mpa_good_reply(buf);
	raw_send(a->sfd, buf, n);
	shutdown(a->sfd, SHUT_WR);
	assert_int_equal(cm_req_wait(&a->conn, WAIT_MS), STATUS_SUCCESS);
	raw_assert_dropped(a->sfd, WAIT_MS, NULL);
	assert_int_equal(a->c->Dispatch->NdkCompleteConnect(a->c, NULL, NULL,
							    NULL, NULL),
			 STATUS_CONNECTION_ABORTED);
}
RAWCM_ACTIVE(test_active_close_after_reply, active_close_after_reply, NULL);

/* CompleteConnect never comes: the attempt times out and is dropped. */
static void active_no_complete(struct active *a, const void *unused)
{
	active_reply(a, false);
	raw_assert_dropped(a->sfd, WAIT_MS, NULL);
	assert_int_equal(a->c->Dispatch->NdkCompleteConnect(a->c, NULL, NULL,
							    NULL, NULL),
			 STATUS_IO_TIMEOUT);
}
RAWCM_ACTIVE(test_active_no_complete, active_no_complete, NULL);

int main(void)
{
	const struct CMUnitTest tests[] = {
		RAWCM_TEST(test_passive_truncated_close),
		RAWCM_TEST(test_passive_truncated_silence),
		RAWCM_TEST(test_passive_close_before_accept),
		RAWCM_TEST(test_passive_close_no_wait),
		RAWCM_TEST(test_passive_close_instead_of_rtr),
		RAWCM_TEST(test_passive_no_rtr),
		RAWCM_TEST(test_passive_close_during),
		RAWCM_TEST(test_active_close),
		RAWCM_TEST(test_active_truncated),
		RAWCM_TEST(test_active_no_reply),
		cmocka_unit_test(test_active_peer_reset_engine_idle),
		RAWCM_TEST(test_active_close_after_reply),
		RAWCM_TEST(test_active_no_complete),
	};

	cm_software_only();
	rawcm_set_timers();
	return cmocka_run_group_tests_name("cm_peer_leaves", tests,
					   rawcm_open_registry, NULL);
}
