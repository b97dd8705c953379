/* SPDX-License-Identifier: MIT */
/*
 * The lock hierarchy (core/lock.h): locks taken in level order pass; with
 * NDK_LOCK_DEBUG, a lock taken out of order, one taken twice, one released
 * without being held, and NDK_ASSERT_LOCKED on a lock the thread does not
 * hold (free, or held by another thread) each abort. Each abort is
 * provoked in a forked child. In either build, locks and conditions under
 * contention: mutual exclusion, no lost wake-up; a waiting writer goes
 * before readers that come after it.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "core/lock.h"

static struct ndk_lock conn, qp, dp, cq;
static struct ndk_cond cond;
static struct ndk_rwlock stag;

static int setup(void **state)
{
	ndk_lock_init(&conn, NDK_LOCK_CONNECTOR);
	ndk_lock_init(&qp, NDK_LOCK_QP);
	ndk_lock_init(&dp, NDK_LOCK_DP);
	ndk_lock_init(&cq, NDK_LOCK_CQ);
	ndk_rwlock_init(&stag, NDK_LOCK_STAG);
	ndk_cond_init(&cond);
	return 0;
}

static int teardown(void **state)
{
	ndk_lock_destroy(&conn);
	ndk_lock_destroy(&qp);
	ndk_lock_destroy(&dp);
	ndk_lock_destroy(&cq);
	ndk_rwlock_destroy(&stag);
	ndk_cond_destroy(&cond);
	return 0;
}

static bool signalled;

static void *signal_cq(void *arg)
{
	ndk_lock(&cq);
	signalled = true;
	ndk_cond_signal(&cond);
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

#define CONTENDERS 4
#define ROUNDS	   200000

static struct ndk_lock counted;
static struct ndk_cond turn;
static unsigned long count, inside;
static unsigned int next_turn;

/* ROUNDS increments under the lock, each checking that it is alone. */
static void *contend(void *arg)
{
	unsigned long i;

	(void)arg;
	for (i = 0; i < ROUNDS; i++) {
		if (i % 3)
			ndk_lock(&counted);
		else
			while (!ndk_trylock(&counted))
				;
		inside++;
		count++;
		if (inside != 1)
			abort();
		inside--;
		ndk_unlock(&counted);
	}
	return NULL;
}

/*
 * Threads fighting for one lock (more than the cores: some sleep in the
 * contended path) never hold it together and lose no update.
 */
static void test_contended(void **state)
{
	pthread_t t[CONTENDERS];
	int i;

	ndk_lock_init(&counted, NDK_LOCK_LEAF);
	for (i = 0; i < CONTENDERS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, contend, NULL), 0);
	for (i = 0; i < CONTENDERS; i++)
		assert_int_equal(pthread_join(t[i], NULL), 0);
	assert_int_equal(count, (unsigned long)CONTENDERS * ROUNDS);
	ndk_lock_destroy(&counted);
}

/* Readers and writers of one rwlock: a writer is alone, readers only
 * among readers, and every write lands. */
static struct ndk_rwlock rw;
static atomic_int rw_readers, rw_writers;
static unsigned long rw_count;

static void *rw_contend(void *arg)
{
	unsigned int seed = (unsigned int)(uintptr_t)arg;

	for (int i = 0; i < ROUNDS; i++) {
		seed = seed * 1103515245u + 12345u;
		if ((seed >> 16) % 4 == 0) {
			ndk_write_lock(&rw);
			if (atomic_fetch_add(&rw_writers, 1) != 0 ||
			    atomic_load(&rw_readers) != 0)
				abort();
			rw_count++;
			atomic_fetch_sub(&rw_writers, 1);
		} else {
			ndk_read_lock(&rw);
			atomic_fetch_add(&rw_readers, 1);
			if (atomic_load(&rw_writers) != 0)
				abort();
			atomic_fetch_sub(&rw_readers, 1);
		}
		ndk_rw_unlock(&rw);
	}
	return NULL;
}

static void test_rw_contended(void **state)
{
	pthread_t t[CONTENDERS];
	unsigned long writes = 0;
	int i;

	(void)state;
	ndk_rwlock_init(&rw, NDK_LOCK_LEAF);
	for (i = 0; i < CONTENDERS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, rw_contend,
						(void *)(uintptr_t)(i + 1)),
				 0);
	for (i = 0; i < CONTENDERS; i++)
		assert_int_equal(pthread_join(t[i], NULL), 0);
	/* The same draws, counted again. */
	for (i = 0; i < CONTENDERS; i++) {
		unsigned int seed = (unsigned int)(i + 1);

		for (int k = 0; k < ROUNDS; k++) {
			seed = seed * 1103515245u + 12345u;
			writes += (seed >> 16) % 4 == 0;
		}
	}
	assert_int_equal(rw_count, writes);
	ndk_rwlock_destroy(&rw);
}

/* The writer-preference test: who got in, and in what order. */
static atomic_int wp_writer_tid, wp_reader_tid;
static atomic_bool wp_written, wp_reader_in, wp_reader_saw_write;

static void *wp_writer(void *arg)
{
	(void)arg;
	atomic_store(&wp_writer_tid, (int)syscall(SYS_gettid));
	ndk_write_lock(&rw);
	atomic_store(&wp_written, true);
	ndk_rw_unlock(&rw);
	return NULL;
}

static void *wp_reader(void *arg)
{
	(void)arg;
	atomic_store(&wp_reader_tid, (int)syscall(SYS_gettid));
	ndk_read_lock(&rw);
	atomic_store(&wp_reader_saw_write, atomic_load(&wp_written));
	atomic_store(&wp_reader_in, true);
	ndk_rw_unlock(&rw);
	return NULL;
}

/* True once thread tid of this process sleeps (it can only be in the lock). */
static bool sleeping(atomic_int *tid)
{
	char path[64], buf[256], *p;
	bool asleep = false;
	FILE *f;

	if (!atomic_load(tid))
		return false;
	snprintf(path, sizeof(path), "/proc/self/task/%d/stat",
		 atomic_load(tid));
	f = fopen(path, "r");
	if (!f)
		return false;
	if (fgets(buf, sizeof(buf), f) && (p = strrchr(buf, ')')))
		asleep = p[1] == ' ' && p[2] == 'S';
	fclose(f);
	return asleep;
}

/*
 * A writer waiting behind a reader holds the next reader off, so that
 * readers that overlap without end cannot starve a registration: with
 * the first reader still in, the second sleeps until the writer is done.
 */
static void test_rw_writer_first(void **state)
{
	pthread_t w, r;

	(void)state;
	ndk_rwlock_init(&rw, NDK_LOCK_LEAF);
	ndk_read_lock(&rw);
	assert_int_equal(pthread_create(&w, NULL, wp_writer, NULL), 0);
	while (!sleeping(&wp_writer_tid))
		usleep(1000);
	assert_int_equal(pthread_create(&r, NULL, wp_reader, NULL), 0);
	while (!sleeping(&wp_reader_tid) && !atomic_load(&wp_reader_in))
		usleep(1000);
	assert_false(atomic_load(&wp_reader_in));
	ndk_rw_unlock(&rw);
	assert_int_equal(pthread_join(w, NULL), 0);
	assert_int_equal(pthread_join(r, NULL), 0);
	assert_true(atomic_load(&wp_written));
	assert_true(atomic_load(&wp_reader_saw_write));
	ndk_rwlock_destroy(&rw);
}

/* Waits for its turn (arg); a broadcast after each turn wakes them all. */
static void *take_turn(void *arg)
{
	unsigned int me = (unsigned int)(uintptr_t)arg;

	ndk_lock(&counted);
	while (next_turn != me)
		ndk_cond_wait(&turn, &counted);
	next_turn++;
	ndk_cond_broadcast(&turn);
	ndk_unlock(&counted);
	return NULL;
}

/* A broadcast wakes every waiter: threads asleep until the first turn
 * is given finish in turn order, none left asleep. */
static void test_cond_broadcast(void **state)
{
	pthread_t t[CONTENDERS];
	int i;

	ndk_lock_init(&counted, NDK_LOCK_LEAF);
	ndk_cond_init(&turn);
	next_turn = 0; /* nobody's: they all wait */
	for (i = CONTENDERS - 1; i >= 0; i--)
		assert_int_equal(pthread_create(&t[i], NULL, take_turn,
						(void *)(uintptr_t)(i + 1)),
				 0);
	usleep(20000);
	ndk_lock(&counted);
	next_turn = 1;
	ndk_cond_broadcast(&turn);
	ndk_unlock(&counted);
	for (i = 0; i < CONTENDERS; i++)
		assert_int_equal(pthread_join(t[i], NULL), 0);
	assert_int_equal(next_turn, CONTENDERS + 1);
	ndk_cond_destroy(&turn);
	ndk_lock_destroy(&counted);
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
		cmocka_unit_test(test_contended),
		cmocka_unit_test(test_rw_contended),
		cmocka_unit_test(test_rw_writer_first),
		cmocka_unit_test(test_cond_broadcast),
		cmocka_unit_test(test_violations_abort),
	};

	return cmocka_run_group_tests_name("lock", tests, setup, teardown);
}
