/* SPDX-License-Identifier: MIT */
/*
 * The lock hierarchy (core/lock.h): locks taken in level order pass; with
 * NDK_LOCK_DEBUG, a lock taken out of order, one taken twice, one released
 * without being held, and NDK_ASSERT_LOCKED on a lock the thread does not
 * hold (free, or held by another thread) each abort. Each abort is
 * provoked in a forked child.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "core/lock.h"

static struct ndk_lock conn, qp, dp, cq;
static struct ndk_rwlock stag;

static int setup(void **state)
{
	ndk_lock_init(&conn, NDK_LOCK_CONNECTOR);
	ndk_lock_init(&qp, NDK_LOCK_QP);
	ndk_lock_init(&dp, NDK_LOCK_DP);
	ndk_lock_init(&cq, NDK_LOCK_CQ);
	ndk_rwlock_init(&stag, NDK_LOCK_STAG);
	return 0;
}

static int teardown(void **state)
{
	ndk_lock_destroy(&conn);
	ndk_lock_destroy(&qp);
	ndk_lock_destroy(&dp);
	ndk_lock_destroy(&cq);
	ndk_rwlock_destroy(&stag);
	return 0;
}

static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static bool signalled;

static void *signal_cq(void *arg)
{
	ndk_lock(&cq);
	signalled = true;
	pthread_cond_signal(&cond);
	ndk_unlock(&cq);
	return NULL;
}

/* The hierarchy, outermost to innermost, with a rwlock on the way. */
static void test_in_order(void **state)
{
	ndk_lock(&conn);
	ndk_lock(&qp);
	NDK_ASSERT_LOCKED(&conn);
	NDK_ASSERT_LOCKED(&qp);
	NDK_ASSERT_UNLOCKED(&dp);
	ndk_lock(&dp);
	ndk_read_lock(&stag);
	NDK_ASSERT_LOCKED(&stag);
	ndk_rw_unlock(&stag);
	ndk_unlock(&dp);
	/* Released in any order; a trylock never waits, so any order. */
	ndk_unlock(&conn);
	assert_true(ndk_trylock(&conn));
	ndk_unlock(&conn);
	ndk_unlock(&qp);
	NDK_ASSERT_UNLOCKED(&qp);
	assert_string_equal(ndk_lock_level_name(NDK_LOCK_DP_RX), "dp.rx");
	assert_string_equal(ndk_lock_level_name(NDK_LOCK_LEVELS), "?");
}

/* A condition wait gives the lock up and has it again when it returns. */
static void test_cond_wait(void **state)
{
	pthread_t t;

	ndk_lock(&qp);
	ndk_lock(&cq);
	assert_int_equal(pthread_create(&t, NULL, signal_cq, NULL), 0);
	while (!signalled)
		ndk_cond_wait(&cond, &cq);
	NDK_ASSERT_LOCKED(&cq);
	ndk_unlock(&cq);
	ndk_unlock(&qp);
	assert_int_equal(pthread_join(t, NULL), 0);
}

#ifdef NDK_LOCK_DEBUG
/* Runs fn in a child; true if the child died of SIGABRT. */
static bool aborts(void (*fn)(void))
{
	int status;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		/* The abort message is expected: keep the log clean. */
		if (!freopen("/dev/null", "w", stderr))
			_exit(2);
		fn();
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT;
}

static void inner_then_outer(void)
{
	ndk_lock(&dp);
	ndk_lock(&qp);
}

static void same_level(void)
{
	struct ndk_lock other;

	ndk_lock_init(&other, NDK_LOCK_QP);
	ndk_lock(&qp);
	ndk_lock(&other);
}

static void twice(void)
{
	ndk_lock(&cq);
	ndk_lock(&cq);
}

static void unlock_unheld(void)
{
	ndk_unlock(&cq);
}

static void assert_unheld(void)
{
	NDK_ASSERT_LOCKED(&cq);
}

static void read_then_outer(void)
{
	ndk_read_lock(&stag);
	ndk_lock(&cq);
}

static void *hold_cq(void *arg)
{
	int *pipefd = arg;
	char c = 0;

	ndk_lock(&cq);
	if (write(pipefd[1], &c, 1) != 1)
		return NULL;
	pause(); /* until the child exits */
	return NULL;
}

static void assert_held_elsewhere(void)
{
	int pipefd[2];
	pthread_t t;
	char c;

	if (pipe(pipefd) || pthread_create(&t, NULL, hold_cq, pipefd) ||
	    read(pipefd[0], &c, 1) != 1)
		_exit(3);
	NDK_ASSERT_LOCKED(&cq);
}

static void in_order_child(void)
{
	ndk_lock(&qp);
	ndk_lock(&cq);
	NDK_ASSERT_LOCKED(&cq);
	ndk_unlock(&cq);
	ndk_unlock(&qp);
}

static void test_violations_abort(void **state)
{
	assert_true(aborts(inner_then_outer));
	assert_true(aborts(same_level));
	assert_true(aborts(twice));
	assert_true(aborts(unlock_unheld));
	assert_true(aborts(assert_unheld));
	assert_true(aborts(read_then_outer));
	assert_true(aborts(assert_held_elsewhere));
	/* The harness itself does not abort a correct child. */
	assert_false(aborts(in_order_child));
}
#else
static void test_violations_abort(void **state)
{
	skip(); /* checks compiled out (NDK_LOCK_DEBUG off) */
}
#endif

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_in_order),
		cmocka_unit_test(test_cond_wait),
		cmocka_unit_test(test_violations_abort),
	};

	return cmocka_run_group_tests_name("lock", tests, setup, teardown);
}
