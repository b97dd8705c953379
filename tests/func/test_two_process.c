/* SPDX-License-Identifier: MIT */
/*
 * The handshake between two processes, each with its own adapter: the
 * server (a forked child) accepts one connection and rejects the next.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "cmutil.h"
#include "testutil.h"

static atomic_int server_disc;

static VOID on_server_disc(PVOID ctx)
{
	atomic_fetch_add(&server_disc, 1);
}

static bool disc_seen(void *arg)
{
	return atomic_load(&server_disc) > 0;
}

/* Child: exit code 0 when everything happened as the client expects. */
static int server(int port_fd)
{
	struct cm_host h;
	struct tool_listener l;
	struct sockaddr_in any = cm_lo4(0);
	NDK_CONNECTOR *in;
	struct cm_req acc;
	uint16_t port;

	cm_host_open(&h, cm_test_ifname());
	if (cm_listen(&h, &l, (struct sockaddr *)&any) != STATUS_SUCCESS)
		return 10;
	port = tool_addr_port((struct sockaddr *)&l.addr);
	if (write(port_fd, &port, sizeof(port)) != sizeof(port))
		return 11;
	in = cm_next_incoming(&l, 10000);
	if (!in)
		return 12;
	/* IB and RoCE pad the private data with zeros. */
	if (!cm_private_data_is(in, "client", 6))
		return 13;
	cm_req_init(&acc);
	if (in->Dispatch->NdkAccept(in, cm_qp(&h), 8, 8, (PVOID) "server", 6,
				    on_server_disc, NULL, cm_req_done,
				    &acc) != STATUS_PENDING)
		return 14;
	if (cm_req_wait(&acc, 10000) != STATUS_SUCCESS)
		return 15;
	if (!tu_wait_until(disc_seen, NULL, 10000))
		return 16;
	if (in->Dispatch->NdkDisconnect(in, NULL, NULL) != STATUS_SUCCESS)
		return 17;
	in = cm_next_incoming(&l, 10000);
	if (!in || in->Dispatch->NdkReject(in, (PVOID) "busy", 4))
		return 18;
	tu_sleep_ms(100);
	cm_host_close(&h);
	return 0;
}

static void test_two_processes(void **state)
{
	int fds[2], wstatus;
	pid_t pid;
	uint16_t port;
	struct cm_host h;
	struct sockaddr_in dst;
	NDK_CONNECTOR *c;
	struct cm_req r, d;

#ifdef __SANITIZE_THREAD__
	skip(); /* TSan does not support threads started after fork() */
#endif
	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(fds[0]);
		_exit(server(fds[1]));
	}
	close(fds[1]);
	assert_int_equal(read(fds[0], &port, sizeof(port)), sizeof(port));
	close(fds[0]);
	dst = cm_lo4(port);
	cm_host_open(&h, cm_test_ifname());
	c = cm_connector(&h);
	assert_int_equal(cm_connect(c, cm_qp(&h), (struct sockaddr *)&dst, 8, 8,
				    "client", 6, &r),
			 STATUS_PENDING);
	assert_int_equal(cm_req_wait(&r, 10000), STATUS_SUCCESS);
	cm_assert_private_data(c, "server", 6);
	assert_int_equal(
		c->Dispatch->NdkCompleteConnect(c, NULL, NULL, NULL, NULL),
		STATUS_SUCCESS);
	cm_req_init(&d);
	assert_int_equal(c->Dispatch->NdkDisconnect(c, cm_req_done, &d),
			 STATUS_PENDING);
	assert_int_equal(cm_req_wait(&d, 10000), STATUS_SUCCESS);
	cm_close_connector(c);

	c = cm_connector(&h);
	assert_int_equal(cm_connect(c, cm_qp(&h), (struct sockaddr *)&dst, 8, 8,
				    NULL, 0, &r),
			 STATUS_PENDING);
	assert_int_equal(cm_req_wait(&r, 10000), STATUS_CONNECTION_REFUSED);
	cm_assert_private_data(c, "busy", 4);
	cm_close_connector(c);
	cm_host_close(&h);
	assert_int_equal(waitpid(pid, &wstatus, 0), pid);
	assert_true(WIFEXITED(wstatus));
	assert_int_equal(WEXITSTATUS(wstatus), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_two_processes),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests_name("two_process", tests, NULL, NULL);
}
