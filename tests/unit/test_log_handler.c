/* SPDX-License-Identifier: MIT */
/*
 * NdkSetLogHandler (ndk/ndk.h): every line reaches the consumer's handler
 * with its level and nothing reaches stderr; NULL restores stderr; a
 * replaced handler is not running once NdkSetLogHandler returns; handler
 * and context change together under concurrent logging.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <fcntl.h>
#include <net/if.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <ndk/ndk.h>
#include "core/log.h"
#include "testutil.h"

#define MAX_LINES 16

struct sink {
	pthread_mutex_t lock;
	int n;
	NDK_LOG_LEVEL level[MAX_LINES];
	char line[MAX_LINES][128];
	atomic_int calls;
	atomic_int bad_ctx; /* called with another handler's context */
	/* blocking handler */
	atomic_int entered, release;
};

static struct sink sink_a = { .lock = PTHREAD_MUTEX_INITIALIZER };
static struct sink sink_b = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void sink_reset(struct sink *s)
{
	pthread_mutex_lock(&s->lock);
	s->n = 0;
	pthread_mutex_unlock(&s->lock);
	atomic_store(&s->calls, 0);
	atomic_store(&s->bad_ctx, 0);
	atomic_store(&s->entered, 0);
	atomic_store(&s->release, 0);
}

static void record(struct sink *s, NDK_LOG_LEVEL level, PCSTR line)
{
	pthread_mutex_lock(&s->lock);
	if (s->n < MAX_LINES) {
		s->level[s->n] = level;
		snprintf(s->line[s->n], sizeof(s->line[0]), "%s", line);
		s->n++;
	}
	pthread_mutex_unlock(&s->lock);
	atomic_fetch_add(&s->calls, 1);
}

static void handler_a(PVOID ctx, NDK_LOG_LEVEL level, PCSTR line)
{
	if (ctx != &sink_a)
		atomic_fetch_add(&sink_a.bad_ctx, 1);
	record(&sink_a, level, line);
}

static void handler_b(PVOID ctx, NDK_LOG_LEVEL level, PCSTR line)
{
	if (ctx != &sink_b)
		atomic_fetch_add(&sink_b.bad_ctx, 1);
	record(&sink_b, level, line);
}

/* Handler A that stays in its call until told to return. */
static void handler_a_blocking(PVOID ctx, NDK_LOG_LEVEL level, PCSTR line)
{
	atomic_store(&sink_a.entered, 1);
	while (!atomic_load(&sink_a.release))
		tu_sleep_ms(1);
	handler_a(ctx, level, line);
}

/* stderr into a pipe (non-blocking read end) while a test runs. */
static int saved_stderr = -1, err_pipe[2];

static void stderr_capture(void)
{
	fflush(stderr);
	assert_int_equal(pipe2(err_pipe, O_CLOEXEC), 0);
	assert_int_equal(fcntl(err_pipe[0], F_SETFL, O_NONBLOCK), 0);
	saved_stderr = dup(STDERR_FILENO);
	assert_true(saved_stderr >= 0);
	assert_int_equal(dup2(err_pipe[1], STDERR_FILENO), STDERR_FILENO);
}

/* What was written to stderr since stderr_capture; restores stderr. */
static void stderr_release(char *buf, size_t size)
{
	ssize_t n;

	fflush(stderr);
	assert_int_equal(dup2(saved_stderr, STDERR_FILENO), STDERR_FILENO);
	close(saved_stderr);
	close(err_pipe[1]);
	n = read(err_pipe[0], buf, size - 1);
	buf[n > 0 ? n : 0] = '\0';
	close(err_pipe[0]);
}

static void test_lines_reach_handler(void **state)
{
	char err[512];

	sink_reset(&sink_a);
	stderr_capture();
	NdkSetLogHandler(handler_a, &sink_a);
	ndk_err("an error %d", 1);
	ndk_warn("a warning %s", "two");
	ndk_info("some info");
	ndk_dbg("debugging");
	NdkSetLogHandler(NULL, NULL);
	stderr_release(err, sizeof(err));

	assert_string_equal(err, "");
	assert_int_equal(sink_a.n, 4);
	assert_int_equal(atomic_load(&sink_a.bad_ctx), 0);
	assert_int_equal(sink_a.level[0], NdkLogLevelError);
	assert_string_equal(sink_a.line[0], "an error 1");
	assert_int_equal(sink_a.level[1], NdkLogLevelWarning);
	assert_string_equal(sink_a.line[1], "a warning two");
	assert_int_equal(sink_a.level[2], NdkLogLevelInfo);
	assert_string_equal(sink_a.line[2], "some info");
	assert_int_equal(sink_a.level[3], NdkLogLevelDebug);
	assert_string_equal(sink_a.line[3], "debugging");
}

/* A line the library logs on its own: an unknown NDK_PROVIDER. */
static void test_library_line(void **state)
{
	NDK_VERSION v = { 2, 1 };
	NDK_ADAPTER *a = NULL;
	const char *was = getenv("NDK_PROVIDER");
	char *saved = was ? strdup(was) : NULL;
	int i, found = 0;

	sink_reset(&sink_a);
	NdkSetLogHandler(handler_a, &sink_a);
	setenv("NDK_PROVIDER", "no-such-provider", 1);
	assert_int_not_equal(NdkOpenAdapter(v, if_nametoindex("lo"), &a),
			     STATUS_SUCCESS);
	if (saved)
		setenv("NDK_PROVIDER", saved, 1);
	else
		unsetenv("NDK_PROVIDER");
	free(saved);
	NdkSetLogHandler(NULL, NULL);

	for (i = 0; i < sink_a.n; i++)
		if (sink_a.level[i] == NdkLogLevelError &&
		    strstr(sink_a.line[i], "NDK_PROVIDER=no-such-provider"))
			found = 1;
	assert_true(found);
}

static void test_null_restores_stderr(void **state)
{
	char err[512], want[128];

	sink_reset(&sink_a);
	NdkSetLogHandler(handler_a, &sink_a);
	NdkSetLogHandler(NULL, &sink_a);
	stderr_capture();
	ndk_warn("back on stderr");
	stderr_release(err, sizeof(err));

	snprintf(want, sizeof(want), "libndk[%d] warn: back on stderr\n",
		 (int)getpid());
	assert_string_equal(err, want);
	assert_int_equal(atomic_load(&sink_a.calls), 0);
}

static void *log_one(void *arg)
{
	ndk_warn("from a thread");
	return NULL;
}

struct setter {
	atomic_int returned;
};

static void *set_b(void *arg)
{
	struct setter *s = arg;

	NdkSetLogHandler(handler_b, &sink_b);
	atomic_store(&s->returned, 1);
	return NULL;
}

static bool entered_a(void *arg)
{
	return atomic_load(&sink_a.entered);
}

/* NdkSetLogHandler returns only once the handler it replaces returned. */
static void test_replace_waits_for_calls(void **state)
{
	struct setter s = { 0 };
	pthread_t logger, setter;

	sink_reset(&sink_a);
	sink_reset(&sink_b);
	NdkSetLogHandler(handler_a_blocking, &sink_a);
	assert_int_equal(pthread_create(&logger, NULL, log_one, NULL), 0);
	assert_true(tu_wait_until(entered_a, NULL, 5000));
	assert_int_equal(pthread_create(&setter, NULL, set_b, &s), 0);
	tu_sleep_ms(100);
	assert_int_equal(atomic_load(&s.returned), 0);
	atomic_store(&sink_a.release, 1);
	assert_int_equal(pthread_join(setter, NULL), 0);
	assert_int_equal(pthread_join(logger, NULL), 0);
	assert_int_equal(atomic_load(&sink_a.calls), 1);

	ndk_warn("to the new handler");
	NdkSetLogHandler(NULL, NULL);
	assert_int_equal(atomic_load(&sink_a.calls), 1);
	assert_int_equal(atomic_load(&sink_b.calls), 1);
	assert_string_equal(sink_b.line[0], "to the new handler");
}

#define LOGGERS	   4
#define LINES_EACH 2000

static atomic_int loggers_done;

static void *log_many(void *arg)
{
	int i;

	for (i = 0; i < LINES_EACH; i++)
		ndk_warn("line %d", i);
	atomic_fetch_add(&loggers_done, 1);
	return NULL;
}

/* Lines from several threads while the handler changes: each call gets
 * its own handler's context, and every line goes somewhere. */
static void test_concurrent_change(void **state)
{
	pthread_t t[LOGGERS];
	int i, devnull, saved;

	sink_reset(&sink_a);
	sink_reset(&sink_b);
	/* The lines logged while no handler is set go to stderr. */
	fflush(stderr);
	saved = dup(STDERR_FILENO);
	devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
	assert_true(saved >= 0 && devnull >= 0);
	dup2(devnull, STDERR_FILENO);
	atomic_store(&loggers_done, 0);
	for (i = 0; i < LOGGERS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, log_many, NULL),
				 0);
	for (i = 0; atomic_load(&loggers_done) < LOGGERS; i++) {
		if (i % 3 == 0)
			NdkSetLogHandler(handler_a, &sink_a);
		else if (i % 3 == 1)
			NdkSetLogHandler(handler_b, &sink_b);
		else
			NdkSetLogHandler(NULL, NULL);
	}
	for (i = 0; i < LOGGERS; i++)
		assert_int_equal(pthread_join(t[i], NULL), 0);
	NdkSetLogHandler(NULL, NULL);
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	close(devnull);

	assert_int_equal(atomic_load(&sink_a.bad_ctx), 0);
	assert_int_equal(atomic_load(&sink_b.bad_ctx), 0);
	assert_true(atomic_load(&sink_a.calls) + atomic_load(&sink_b.calls) <=
		    LOGGERS * LINES_EACH);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lines_reach_handler),
		cmocka_unit_test(test_library_line),
		cmocka_unit_test(test_null_restores_stderr),
		cmocka_unit_test(test_replace_waits_for_calls),
		cmocka_unit_test(test_concurrent_change),
	};

	/* Every level is produced (NDK_LOG is read once). */
	setenv("NDK_LOG", "debug", 1);
	ndk_log_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
