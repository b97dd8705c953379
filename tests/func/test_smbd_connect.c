/* SPDX-License-Identifier: MIT */
/*
 * ndksmb's SMB Direct connection (tools/smb/smbd.c) against a server in
 * the test, over NDK: a server that closes a new connection after it read
 * the negotiate request and before it answered gets one more connection,
 * not two (tests/interop/README.md, bug 9); a server that answers gets
 * one.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <string.h>
#include <cmocka.h>
#include "cmutil.h"
#include "dp_pair.h"
#include "testutil.h"
#include "smbd.h"
#include "smbd_wire.h"

enum srv_mode { SRV_DROP, SRV_ANSWER };

struct smb_srv {
	struct cm_host h;
	struct tool_listener l;
	uint8_t *buf; /* the request at 0, the response at 256 */
	UINT32 tok;
	enum srv_mode modes[4];
	unsigned int nmodes;
	atomic_uint accepted; /* connections whose request was read */
	atomic_bool peer_gone;
	pthread_t thread;
};

static VOID srv_disconnected(PVOID ctx)
{
	struct smb_srv *s = ctx;

	atomic_store(&s->peer_gone, true);
}

static bool srv_peer_gone(void *arg)
{
	struct smb_srv *s = arg;

	return atomic_load(&s->peer_gone);
}

/* One connection: reads the negotiate request, then closes or answers. */
static void srv_one(struct smb_srv *s, NDK_CONNECTOR *in, enum srv_mode mode)
{
	struct smbd_neg_resp resp = {
		.min_version = SMBD_VERSION_1,
		.max_version = SMBD_VERSION_1,
		.negotiated_version = SMBD_VERSION_1,
		.credits_requested = 16,
		.credits_granted = 16,
		.max_read_write_size = 1 << 20,
		.preferred_send_size = 1364,
		.max_receive_size = 1364,
		.max_fragmented_size = 1 << 20,
	};
	NDK_QP *qp = cm_qp_sized(&s->h, 4, 1, 0);
	struct cm_req acc, disc;
	NDK_RESULT_EX r;

	atomic_store(&s->peer_gone, false);
	post_recv(qp, 0, s->buf, 256, s->tok);
	cm_req_init(&acc);
	assert_int_equal(in->Dispatch->NdkAccept(in, qp, 1, 1, NULL, 0,
						 srv_disconnected, s,
						 cm_req_done, &acc),
			 STATUS_PENDING);
	assert_int_equal(cm_req_wait(&acc, 10000), STATUS_SUCCESS);
	assert_int_equal(poll_cq(s->h.cq, &r, 1), 1);
	assert_int_equal(r.Status, STATUS_SUCCESS);
	assert_int_equal(r.BytesTransferred, SMBD_NEG_REQ_SIZE);
	atomic_fetch_add(&s->accepted, 1);
	if (mode == SRV_ANSWER) {
		smbd_neg_resp_encode(s->buf + 256, &resp);
		post_send(qp, 0, s->buf + 256, SMBD_NEG_RESP_SIZE, s->tok, 0);
		assert_int_equal(poll_cq(s->h.cq, &r, 1), 1);
		assert_int_equal(r.Status, STATUS_SUCCESS);
		/* The client closes once it has what it wanted. */
		(void)tu_wait_until(srv_peer_gone, s, 15000);
	}
	cm_req_init(&disc);
	(void)cm_req_result(in->Dispatch->NdkDisconnect(in, cm_req_done, &disc),
			    &disc, 10000);
	cm_close_connector(in);
	qp->Dispatch->NdkFlush(qp);
	while (s->h.cq->Dispatch->NdkGetCqResultsEx(s->h.cq, &r, 1) == 1)
		;
	cm_close_qp(qp);
}

static void *srv_thread(void *arg)
{
	struct smb_srv *s = arg;
	unsigned int i;

	for (i = 0; i < s->nmodes; i++) {
		NDK_CONNECTOR *in = cm_next_incoming(&s->l, 20000);

		if (!in)
			break;
		srv_one(s, in, s->modes[i]);
	}
	return NULL;
}

static void srv_start(struct smb_srv *s, const enum srv_mode *modes,
		      unsigned int n)
{
	struct sockaddr_in a = cm_lo4(0);

	memset(s, 0, sizeof(*s));
	memcpy(s->modes, modes, n * sizeof(*modes));
	s->nmodes = n;
	cm_host_open(&s->h, cm_test_ifname());
	s->buf = aligned_alloc(4096, 4096);
	assert_non_null(s->buf);
	s->tok = local_mr_token(&s->h, s->buf, 4096);
	assert_int_equal(cm_listen(&s->h, &s->l, (struct sockaddr *)&a),
			 STATUS_SUCCESS);
	assert_int_equal(pthread_create(&s->thread, NULL, srv_thread, s), 0);
}

static void srv_stop(struct smb_srv *s)
{
	pthread_join(s->thread, NULL);
	cm_listener_close(&s->l);
	cm_host_close(&s->h);
	free(s->buf);
}

static int client(struct smb_srv *s)
{
	struct smbd_opts o = { .timeout_ms = 10000 };
	struct smbd_conn *c = NULL;
	char why[256];
	int err;

	memcpy(&o.dst, &s->l.addr, sizeof(s->l.addr));
	err = smbd_connect(&o, &c, why, sizeof(why));
	if (!err) {
		assert_int_equal(smbd_info(c)->peer.credits_granted, 16);
		smbd_close(c);
	} else {
		print_message("smbd_connect: %s (%s)\n", smbd_err_str(err),
			      why);
	}
	return err;
}

/* A server that behaves as modes says, one connection each: smbd_connect
 * returns err, and the server read the request of accepted connections. */
static void run_case(const enum srv_mode *modes, unsigned int n, int err,
		     unsigned int accepted)
{
	struct smb_srv s;
	int got;

	srv_start(&s, modes, n);
	got = client(&s);
	/* The server's thread uses s: joined before anything can fail. */
	srv_stop(&s);
	assert_int_equal(got, err);
	assert_int_equal(atomic_load(&s.accepted), accepted);
}

/* The server closes the first connection before its answer: one more. */
static void test_dropped_once(void **state)
{
	static const enum srv_mode m[] = { SRV_DROP, SRV_ANSWER };

	(void)state;
	run_case(m, 2, SMBD_OK, 2);
}

/* It closes every one: the client gives up after the second. */
static void test_dropped_twice(void **state)
{
	static const enum srv_mode m[] = { SRV_DROP, SRV_DROP };

	(void)state;
	run_case(m, 2, SMBD_ERR_LOST, 2);
}

/* A server that answers gets one connection. */
static void test_answered(void **state)
{
	static const enum srv_mode m[] = { SRV_ANSWER };

	(void)state;
	run_case(m, 1, SMBD_OK, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_answered),
		cmocka_unit_test(test_dropped_once),
		cmocka_unit_test(test_dropped_twice),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
