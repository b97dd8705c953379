/* SPDX-License-Identifier: MIT */
/*
 * The listener's accept phase, seen from a raw TCP initiator: a
 * connection still sending its MPA Request is the listener's, and its
 * close hangs up on it; a Request the listener does not admit (paused,
 * backlog full, markers asked) is answered on the wire with an MPA Reply
 * R=1 and never reaches the ConnectEvent; and a passive connector returns
 * its backlog slot when it leaves REQUESTED, by NdkReject or because its
 * initiator went away.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "cmutil.h"
#include "testutil.h"

#define MPA_HDR_LEN 20
#define MPA_FLAG_M  0x80
#define MPA_FLAG_R  0x20
#define MPA_FLAG_S  0x10
#define WAIT_MS	    5000

static struct cm_host srv;

static int setup(void **state)
{
	unsetenv("NDK_CM_TIMEOUT_MS");
	unsetenv("NDK_LISTEN_BACKLOG");
	cm_host_open(&srv, cm_test_ifname());
	return 0;
}

static int teardown(void **state)
{
	cm_host_close(&srv);
	unsetenv("NDK_LISTEN_BACKLOG");
	return 0;
}

/* An MPA v2 Request (RFC 6581): P2P, Write and Read RTR, IRD/ORD 1. */
static size_t request(uint8_t *b, uint8_t flags)
{
	memcpy(b, "MPA ID Req Frame", 16);
	b[16] = flags | MPA_FLAG_S;
	b[17] = 2;
	b[18] = 0;
	b[19] = 4;
	b[20] = 0x80; /* A: P2P */
	b[21] = 1;
	b[22] = 0xc0; /* C, D: Write and Read RTR */
	b[23] = 1;
	return 24;
}

static int raw_connect(const struct tool_listener *l)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(fd >= 0);
	assert_int_equal(connect(fd, (const struct sockaddr *)&l->addr,
				 sizeof(struct sockaddr_in)),
			 0);
	return fd;
}

static void raw_send(int fd, const uint8_t *b, size_t len)
{
	assert_int_equal(send(fd, b, len, MSG_NOSIGNAL), (ssize_t)len);
}

/* Reads up to len bytes within ms; returns the count, 0 at the end of the
 * stream (or a reset), -1 on timeout. */
static ssize_t raw_read(int fd, uint8_t *b, size_t len, unsigned int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	ssize_t n;

	if (poll(&p, 1, (int)ms) != 1)
		return -1;
	n = recv(fd, b, len, 0);
	if (n < 0 && errno == ECONNRESET)
		return 0;
	assert_true(n >= 0);
	return n;
}

/* The peer's answer is an MPA Reply with R=1, then the end. */
static void expect_refused(int fd)
{
	uint8_t b[600];
	size_t have = 0;
	ssize_t n;

	while (have < MPA_HDR_LEN) {
		n = raw_read(fd, b + have, sizeof(b) - have, WAIT_MS);
		assert_true(n > 0);
		have += (size_t)n;
	}
	assert_memory_equal(b, "MPA ID Rep Frame", 16);
	assert_true(b[16] & MPA_FLAG_R);
	assert_false(b[16] & MPA_FLAG_M);
	while ((n = raw_read(fd, b, sizeof(b), WAIT_MS)) > 0)
		;
	assert_int_equal(n, 0);
}

static VOID on_closed(PVOID ctx)
{
	atomic_fetch_add((atomic_int *)ctx, 1);
}

static bool closed_once(void *arg)
{
	return atomic_load((atomic_int *)arg) == 1;
}

/*
 * A connection still sending its Request is the listener's: closing the
 * listener hangs up on it, and no ConnectEvent ever comes for it.
 */
static void test_close_drops_request_in_progress(void **state)
{
	struct sockaddr_in any = cm_lo4(0);
	struct tool_listener l;
	atomic_int closed = 0;
	uint8_t b[64];
	NTSTATUS st;
	int fd;

	assert_int_equal(cm_listen(&srv, &l, (struct sockaddr *)&any),
			 STATUS_SUCCESS);
	fd = raw_connect(&l);
	raw_send(fd, (const uint8_t *)"MPA ID Req", 10);
	tu_sleep_ms(50);
	st = l.lis->Dispatch->NdkCloseListener(&l.lis->Header, on_closed,
					       &closed);
	if (st == STATUS_PENDING)
		assert_true(tu_wait_until(closed_once, &closed, WAIT_MS));
	else
		assert_int_equal(st, STATUS_SUCCESS);
	assert_int_equal(raw_read(fd, b, sizeof(b), WAIT_MS), 0);
	assert_null(cm_next_incoming(&l, 50));
	close(fd);
}

/* Paused, and a Request that asks for markers: refused on the wire. */
static void test_refused_on_the_wire(void **state)
{
	struct sockaddr_in any = cm_lo4(0);
	struct tool_listener l;
	NDK_CONNECTOR *in;
	uint8_t b[64];
	int fd;

	assert_int_equal(cm_listen(&srv, &l, (struct sockaddr *)&any),
			 STATUS_SUCCESS);
	l.lis->Dispatch->NdkControlConnectEvents(l.lis, TRUE);
	fd = raw_connect(&l);
	raw_send(fd, b, request(b, 0));
	expect_refused(fd);
	close(fd);
	assert_null(cm_next_incoming(&l, 50));
	l.lis->Dispatch->NdkControlConnectEvents(l.lis, FALSE);

	fd = raw_connect(&l);
	raw_send(fd, b, request(b, MPA_FLAG_M));
	expect_refused(fd);
	close(fd);
	assert_null(cm_next_incoming(&l, 50));

	/* A plain Request still comes through. */
	fd = raw_connect(&l);
	raw_send(fd, b, request(b, 0));
	in = cm_next_incoming(&l, WAIT_MS);
	assert_non_null(in);
	assert_int_equal(in->Dispatch->NdkReject(in, NULL, 0), STATUS_SUCCESS);
	expect_refused(fd);
	close(fd);
	cm_close_connector(in);
	cm_listener_close(&l);
}

/*
 * With a backlog of one, a second Request is refused while the first
 * waits for NdkAccept/NdkReject; the slot comes back when the first
 * connector leaves REQUESTED, by NdkReject or by its initiator leaving.
 */
static void test_backlog_slot_returned(void **state)
{
	struct sockaddr_in any = cm_lo4(0);
	struct tool_listener l;
	NDK_CONNECTOR *in1, *in2, *in3;
	uint8_t b[64];
	int fd1, fd2, fd3;

	setenv("NDK_LISTEN_BACKLOG", "1", 1);
	assert_int_equal(cm_listen(&srv, &l, (struct sockaddr *)&any),
			 STATUS_SUCCESS);
	fd1 = raw_connect(&l);
	raw_send(fd1, b, request(b, 0));
	in1 = cm_next_incoming(&l, WAIT_MS);
	assert_non_null(in1);

	fd2 = raw_connect(&l);
	raw_send(fd2, b, request(b, 0));
	expect_refused(fd2);
	close(fd2);

	/* NdkReject returns the slot. */
	assert_int_equal(in1->Dispatch->NdkReject(in1, NULL, 0),
			 STATUS_SUCCESS);
	expect_refused(fd1);
	close(fd1);
	fd2 = raw_connect(&l);
	raw_send(fd2, b, request(b, 0));
	in2 = cm_next_incoming(&l, WAIT_MS);
	assert_non_null(in2);

	/* So does an initiator that goes away before the Accept: the
	 * engine sees the end of its stream at once. */
	close(fd2);
	tu_sleep_ms(200);
	fd3 = raw_connect(&l);
	raw_send(fd3, b, request(b, 0));
	in3 = cm_next_incoming(&l, WAIT_MS);
	assert_non_null(in3);
	assert_int_equal(in2->Dispatch->NdkReject(in2, NULL, 0),
			 STATUS_CONNECTION_ABORTED);
	close(fd3);

	cm_close_connector(in1);
	cm_close_connector(in2);
	cm_close_connector(in3);
	cm_listener_close(&l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_close_drops_request_in_progress, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refused_on_the_wire, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_backlog_slot_returned,
						setup, teardown),
	};

	cm_software_only();
	return cmocka_run_group_tests_name("listener_accept", tests, NULL,
					   NULL);
}
