/* SPDX-License-Identifier: MIT */
/*
 * A listener under load: a burst of connects is never refused while the
 * consumer keeps up (Requests beyond the backlog wait for a slot, and the
 * kernel's accept queue holds the TCP connections behind them); a paused
 * listener and a consumer that never accepts still refuse (NdkConnect:
 * STATUS_CONNECTION_REFUSED, "backlog limits"); running out of file
 * descriptors makes the listener wait, not spin, and it resumes by itself.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>
#include "cmutil.h"
#include "rawpeer.h"
#include "testutil.h"

static struct cm_host srv, cli;

static void env_clear(void)
{
	unsetenv("NDK_LISTEN_BACKLOG");
	unsetenv("NDK_LISTEN_WAIT_MS");
}

static int setup(void **state)
{
	env_clear();
	cm_hosts_open(&srv, &cli);
	return 0;
}

static int teardown(void **state)
{
	cm_hosts_close(&srv, &cli);
	env_clear();
	return 0;
}

static NTSTATUS accept_in(NDK_CONNECTOR *in)
{
	return in->Dispatch->NdkAccept(in, cm_qp(&srv), 1, 1, NULL, 0, NULL,
				       NULL, NULL, NULL);
}

static void complete(NDK_CONNECTOR *c, struct cm_req *r)
{
	assert_int_equal(cm_req_wait(r, 10000), STATUS_SUCCESS);
	assert_int_equal(
		c->Dispatch->NdkCompleteConnect(c, NULL, NULL, NULL, NULL),
		STATUS_SUCCESS);
}

/* A listener with a backlog of one, holding c1's request (in1); c2's
 * connect is then started (r2), beyond the backlog. */
struct backlog_of_one {
	struct tool_listener l;
	NDK_CONNECTOR *c1, *c2, *in1;
	struct cm_req r1, r2;
};

static void backlog_of_one(struct backlog_of_one *b, const char *wait_ms)
{
	struct sockaddr_in any = cm_lo4(0);

	setenv("NDK_LISTEN_BACKLOG", "1", 1);
	setenv("NDK_LISTEN_WAIT_MS", wait_ms, 1);
	b->c1 = cm_connector(&cli);
	b->c2 = cm_connector(&cli);
	assert_int_equal(cm_listen(&srv, &b->l, (struct sockaddr *)&any),
			 STATUS_SUCCESS);
	assert_int_equal(cm_connect(b->c1, cm_qp(&cli),
				    (struct sockaddr *)&b->l.addr, 1, 1, NULL,
				    0, &b->r1),
			 STATUS_PENDING);
	b->in1 = cm_next_incoming(&b->l, 5000);
	assert_non_null(b->in1);
	assert_int_equal(cm_connect(b->c2, cm_qp(&cli),
				    (struct sockaddr *)&b->l.addr, 1, 1, NULL,
				    0, &b->r2),
			 STATUS_PENDING);
}

/* A Request beyond a full backlog waits, and goes out when a slot frees. */
static void test_beyond_backlog_waits_for_slot(void **state)
{
	struct backlog_of_one b;
	NDK_CONNECTOR *in2;

	backlog_of_one(&b, "5000");
	/* The backlog (1) is full: no second ConnectEvent, no answer. */
	assert_null(cm_next_incoming(&b.l, 300));
	assert_int_equal(cm_req_wait(&b.r2, 0), -1);
	/* Accepting the first frees its slot: the second comes in. */
	assert_int_equal(accept_in(b.in1), STATUS_PENDING);
	in2 = cm_next_incoming(&b.l, 5000);
	assert_non_null(in2);
	assert_int_equal(accept_in(in2), STATUS_PENDING);
	complete(b.c1, &b.r1);
	complete(b.c2, &b.r2);
	cm_close_connector(b.c1);
	cm_close_connector(b.c2);
	cm_close_connector(b.in1);
	cm_close_connector(in2);
	cm_listener_close(&b.l);
}

/* A consumer that never accepts: beyond the backlog, refused after
 * NDK_LISTEN_WAIT_MS, not left hanging. */
static void test_beyond_backlog_refused_after_wait(void **state)
{
	struct backlog_of_one b;
	uint64_t t0 = tu_now_ms();

	backlog_of_one(&b, "300");
	assert_int_equal(cm_req_wait(&b.r2, 5000), STATUS_CONNECTION_REFUSED);
	assert_true(tu_now_ms() - t0 >= 250);
	assert_null(cm_next_incoming(&b.l, 0));
	cm_close_connector(b.in1);
	assert_int_equal(cm_req_wait(&b.r1, 5000), STATUS_CONNECTION_REFUSED);
	cm_close_connector(b.c1);
	cm_close_connector(b.c2);
	cm_listener_close(&b.l);
}

/* ------------------------------------------------------------------ */
/* A burst from several threads                                       */

enum { STORM_THREADS = 4, STORM_PER_THREAD = 500 };
#define STORM_N (STORM_THREADS * STORM_PER_THREAD)

struct storm {
	struct sockaddr_storage to;
	NDK_CONNECTOR *c[STORM_N];
	struct cm_req r[STORM_N];
};

struct storm_part {
	struct storm *s;
	int first;
};

static void *storm_thread(void *arg)
{
	struct storm_part *p = arg;
	int i;

	for (i = p->first; i < p->first + STORM_PER_THREAD; i++)
		if (cm_connect(p->s->c[i], cm_qp(&cli),
			       (struct sockaddr *)&p->s->to, 1, 1, NULL, 0,
			       &p->s->r[i]) != STATUS_PENDING)
			return (void *)1;
	return NULL;
}

/* Starts STORM_N connects from STORM_THREADS threads at once. */
static void storm_start(struct storm *s, pthread_t *th,
			struct storm_part *parts)
{
	int i;

	for (i = 0; i < STORM_N; i++)
		s->c[i] = cm_connector(&cli);
	for (i = 0; i < STORM_THREADS; i++) {
		parts[i].s = s;
		parts[i].first = i * STORM_PER_THREAD;
		assert_int_equal(
			pthread_create(&th[i], NULL, storm_thread, &parts[i]),
			0);
	}
}

static void storm_join(pthread_t *th)
{
	void *ret;
	int i;

	for (i = 0; i < STORM_THREADS; i++) {
		assert_int_equal(pthread_join(th[i], &ret), 0);
		assert_null(ret);
	}
}

/* Descriptors for both ends of every connection of the storm. */
static void raise_nofile(void)
{
	struct rlimit rl;

	assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
	if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < 3 * STORM_N)
		skip();
	rl.rlim_cur = rl.rlim_max;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &rl), 0);
}

/* The usual server shape: a worker pops connect events and accepts.
 * With the default backlog every connect of the burst succeeds. */
static void test_storm_accepted_by_worker(void **state)
{
	static struct storm s;
	static NDK_CONNECTOR *in[STORM_N];
	struct sockaddr_in any = cm_lo4(0);
	struct storm_part parts[STORM_THREADS];
	pthread_t th[STORM_THREADS];
	struct tool_listener l;
	int i, n = 0;

	raise_nofile();
	assert_int_equal(cm_listen(&srv, &l, (struct sockaddr *)&any),
			 STATUS_SUCCESS);
	memcpy(&s.to, &l.addr, sizeof(s.to));
	storm_start(&s, th, parts);
	while (n < STORM_N) {
		in[n] = cm_next_incoming(&l, 10000);
		assert_non_null(in[n]);
		assert_int_equal(accept_in(in[n]), STATUS_PENDING);
		n++;
	}
	storm_join(th);
	for (i = 0; i < STORM_N; i++)
		complete(s.c[i], &s.r[i]);
	for (i = 0; i < STORM_N; i++) {
		cm_close_connector(s.c[i]);
		cm_close_connector(in[i]);
	}
	cm_listener_close(&l);
}

/* A paused listener refuses the whole burst, and none hangs. */
static void test_storm_paused_refused(void **state)
{
	static struct storm s;
	struct sockaddr_in any = cm_lo4(0);
	struct storm_part parts[STORM_THREADS];
	pthread_t th[STORM_THREADS];
	struct tool_listener l;
	int i;

	raise_nofile();
	assert_int_equal(cm_listen(&srv, &l, (struct sockaddr *)&any),
			 STATUS_SUCCESS);
	l.lis->Dispatch->NdkControlConnectEvents(l.lis, TRUE);
	memcpy(&s.to, &l.addr, sizeof(s.to));
	storm_start(&s, th, parts);
	storm_join(th);
	for (i = 0; i < STORM_N; i++)
		assert_int_equal(cm_req_wait(&s.r[i], 10000),
				 STATUS_CONNECTION_REFUSED);
	assert_null(cm_next_incoming(&l, 0));
	for (i = 0; i < STORM_N; i++)
		cm_close_connector(s.c[i]);
	cm_listener_close(&l);
}

/* ------------------------------------------------------------------ */
/* Out of file descriptors                                            */

enum { STARVED_CLIENTS = 8, MAX_FILLER = 4096 };

static double cpu_seconds(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

/*
 * accept() fails with EMFILE while connections wait: the listener stops
 * reading its queue (no spinning: the process stays nearly idle) and
 * picks the connections up on its own once descriptors are back.
 */
static void test_out_of_descriptors_waits_and_resumes(void **state)
{
	struct sockaddr_in any = cm_lo4(0);
	struct tool_listener l;
	struct rlimit rl, saved;
	int cfd[STARVED_CLIENTS], filler[MAX_FILLER];
	int i, nfill = 0, fd;
	double cpu0, cpu;

	assert_int_equal(cm_listen(&srv, &l, (struct sockaddr *)&any),
			 STATUS_SUCCESS);
	for (i = 0; i < STARVED_CLIENTS; i++) {
		cfd[i] = socket(AF_INET, SOCK_STREAM, 0);
		assert_true(cfd[i] >= 0);
	}
	/* Use up every descriptor under a low limit. */
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &saved), 0);
	rl = saved;
	rl.rlim_cur = (rlim_t)cfd[STARVED_CLIENTS - 1] + 64;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &rl), 0);
	while (nfill < MAX_FILLER && (fd = dup(0)) >= 0)
		filler[nfill++] = fd;
	assert_int_equal(errno, EMFILE);
	/* The clients' handshakes finish in the kernel's queue. */
	for (i = 0; i < STARVED_CLIENTS; i++) {
		assert_int_equal(connect(cfd[i], (struct sockaddr *)&l.addr,
					 sizeof(struct sockaddr_in)),
				 0);
		raw_send(cfd[i], mpa_req_v2, sizeof(mpa_req_v2));
	}
	cpu0 = cpu_seconds();
	tu_sleep_ms(500);
	cpu = cpu_seconds() - cpu0;
	/* A spinning engine would burn the whole 0.5 s. */
	assert_true(cpu < 0.1);
	assert_null(cm_next_incoming(&l, 0));
	/* Descriptors come back: every waiting connection is served. */
	for (i = 0; i < nfill; i++)
		close(filler[i]);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &saved), 0);
	for (i = 0; i < STARVED_CLIENTS; i++) {
		NDK_CONNECTOR *in = cm_next_incoming(&l, 5000);

		assert_non_null(in);
		assert_int_equal(in->Dispatch->NdkReject(in, NULL, 0),
				 STATUS_SUCCESS);
		cm_close_connector(in);
	}
	for (i = 0; i < STARVED_CLIENTS; i++) {
		struct mpa_msg rep;

		raw_read_mpa(cfd[i], &rep, MPA_KEY_REP, 5000);
		assert_true(rep.hdr[16] & MPA_REJECT);
		close(cfd[i]);
	}
	cm_listener_close(&l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_beyond_backlog_waits_for_slot, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_beyond_backlog_refused_after_wait, setup,
			teardown),
		cmocka_unit_test_setup_teardown(test_storm_accepted_by_worker,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_storm_paused_refused,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_out_of_descriptors_waits_and_resumes, setup,
			teardown),
	};

	cm_software_only();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
