/* SPDX-License-Identifier: MIT */
/*
 * The CQ object (NDK_CQ_DISPATCH, NDKPI Completion
 * Handling Requirements) through the public API,
 * with sw_cq_push standing in for QPs. "Nothing happened" is checked
 * after quiesce(): notifications are posted to the engine synchronously
 * by push/arm, and ndk_engine_call runs after everything posted before.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <net/if.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/log.h"
#include "front/adapter.h"
#include "front/cq.h"
#include "sw/cq.h"
#include "testutil.h"

#define MAXU 0xffffffffu

struct tctx {
	atomic_int notifies; /* callbacks that returned */
	atomic_int overflows; /* of which STATUS_BUFFER_OVERFLOW */
	atomic_int other; /* of which neither SUCCESS nor OVERFLOW */
	void (*hook)(struct tctx *t, NTSTATUS st);
	NDK_CQ *cq;
	int want; /* for notified_enough */

	/* serialisation test */
	atomic_int in_cb, overlaps, drained, push_failures;

	/* close tests */
	atomic_int entered, release, returning;
	atomic_int close_done, close_saw_returning, notifies_at_close;
	_Atomic NTSTATUS close_status;
};

static void on_notify(PVOID ctx, NTSTATUS st)
{
	struct tctx *t = ctx;

	if (t->hook)
		t->hook(t, st);
	if (st == STATUS_BUFFER_OVERFLOW)
		atomic_fetch_add(&t->overflows, 1);
	else if (st != STATUS_SUCCESS)
		atomic_fetch_add(&t->other, 1);
	atomic_fetch_add(&t->notifies, 1);
}

static void on_close(PVOID ctx)
{
	struct tctx *t = ctx;

	atomic_store(&t->close_saw_returning, atomic_load(&t->returning));
	atomic_store(&t->notifies_at_close, atomic_load(&t->notifies));
	atomic_fetch_add(&t->close_done, 1);
}

static NDK_ADAPTER *open_lo(void)
{
	NDK_VERSION v = { 2, 1 };
	NDK_ADAPTER *a = NULL;

	assert_int_equal(NdkOpenAdapter(v, if_nametoindex("lo"), &a),
			 STATUS_SUCCESS);
	assert_non_null(a);
	return a;
}

static int noop(void *arg)
{
	return 0;
}

/* Returns once every notification posted so far has run. */
static void quiesce(NDK_ADAPTER *a)
{
	assert_int_equal(
		ndk_engine_call(&to_ndk_adapter(a)->engine, noop, NULL), 0);
}

static NTSTATUS create_cq(NDK_ADAPTER *a, ULONG depth, struct tctx *t,
			  NDK_CQ **cq)
{
	return a->Dispatch->NdkCreateCq(a, depth, on_notify, t, NULL, NULL,
					NULL, cq);
}

static NDK_CQ *mkcq(NDK_ADAPTER *a, ULONG depth, struct tctx *t)
{
	NDK_CQ *cq = NULL;

	assert_int_equal(create_cq(a, depth, t, &cq), STATUS_SUCCESS);
	assert_non_null(cq);
	assert_int_equal(cq->Header.ObjectType, NdkObjectTypeCq);
	t->cq = cq;
	return cq;
}

static int push(NDK_CQ *cq, NTSTATUS st, uintptr_t req, bool solicited)
{
	NDK_RESULT_EX r = {
		.Status = st,
		.BytesTransferred = (ULONG)req * 10,
		.QPContext = (PVOID)(uintptr_t)0x1000,
		.RequestContext = (PVOID)req,
		.Type = NdkOperationTypeReceive,
		.ProviderErrorCode = NT_SUCCESS(st) ? 0 : 7,
		.TypeSpecificCompletionOutput = req + 1,
	};

	return sw_cq_push(to_sw_cq(cq), &r, solicited);
}

static void arm(NDK_CQ *cq, ULONG type)
{
	cq->Dispatch->NdkArmCq(cq, type);
}

static ULONG get(NDK_CQ *cq, NDK_RESULT_EX *r, ULONG n)
{
	return cq->Dispatch->NdkGetCqResultsEx(cq, r, n);
}

static ULONG drain(NDK_CQ *cq)
{
	NDK_RESULT_EX r[16];
	ULONG n, total = 0;

	while ((n = get(cq, r, 16)))
		total += n;
	return total;
}

static bool flag_set(void *arg)
{
	return atomic_load((atomic_int *)arg) != 0;
}

static bool notified_enough(void *arg)
{
	struct tctx *t = arg;

	return atomic_load(&t->notifies) >= t->want;
}

static void close_cq(NDK_CQ *cq, struct tctx *t)
{
	NTSTATUS st = cq->Dispatch->NdkCloseCq(&cq->Header, on_close, t);

	if (st == STATUS_PENDING)
		assert_true(tu_wait_until(flag_set, &t->close_done, 10000));
	else
		assert_int_equal(st, STATUS_SUCCESS);
}

static NDK_LOG_LEVEL last_log_level = NdkLogLevelDebug;
static char last_log_line[256];

static void log_line(PVOID ctx, NDK_LOG_LEVEL level, PCSTR line)
{
	last_log_level = level;
	snprintf(last_log_line, sizeof(last_log_line), "%s", line);
}

static void test_create_limits(void **state)
{
	NDK_ADAPTER *a = open_lo();
	NDK_ADAPTER_INFO info;
	ULONG size = sizeof(info);
	struct tctx t = { 0 };
	NDK_CQ *cq = NULL;
	int threshold;

	assert_int_equal(a->Dispatch->NdkQueryAdapterInfo(a, &info, &size),
			 STATUS_SUCCESS);
	assert_true(info.AdapterFlags & NDK_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED);
	assert_int_equal(create_cq(a, 0, &t, &cq), STATUS_INVALID_PARAMETER);
	assert_int_equal(create_cq(a, info.MaxCqDepth + 1, &t, &cq),
			 STATUS_INVALID_PARAMETER);
	assert_int_equal(create_cq(a, MAXU, &t, &cq), STATUS_INVALID_PARAMETER);
	/* A NULL callback is refused, with a warning that says why (at
	 * NDK_LOG's default level, whatever the environment says). */
	threshold = ndk_log_threshold;
	ndk_log_threshold = NDK_LOG_WARN;
	NdkSetLogHandler(log_line, NULL);
	assert_int_equal(
		a->Dispatch->NdkCreateCq(a, 4, NULL, &t, NULL, NULL, NULL, &cq),
		STATUS_INVALID_PARAMETER);
	NdkSetLogHandler(NULL, NULL);
	ndk_log_threshold = threshold;
	assert_int_equal(last_log_level, NdkLogLevelWarning);
	assert_non_null(strstr(last_log_line, "CqNotification is NULL"));
	assert_int_equal(create_cq(a, 4, &t, NULL), STATUS_INVALID_PARAMETER);
	assert_null(cq);

	cq = mkcq(a, info.MaxCqDepth, &t);
	assert_int_equal(cq->Header.Version.Major, 2);
	close_cq(cq, &t);
	cq = mkcq(a, 1, &t);
	assert_int_equal(push(cq, STATUS_SUCCESS, 1, false), 0);
	assert_int_equal(sw_cq_push(NULL, NULL, false), -EINVAL);
	assert_int_equal(sw_cq_push(to_sw_cq(cq), NULL, false), -EINVAL);
	assert_null(to_sw_cq(NULL));
	assert_int_equal(cq->Dispatch->NdkQueryExtension(&cq->Header, NULL,
							 info.Version, NULL),
			 STATUS_NOT_SUPPORTED);
	close_cq(cq, &t);
	NdkCloseAdapter(a);
}

static void test_fifo_partial(void **state)
{
	NDK_ADAPTER *a = open_lo();
	struct tctx t = { 0 };
	NDK_CQ *cq = mkcq(a, 4, &t);
	NDK_RESULT_EX r[8];
	uintptr_t next = 1, expect = 1;
	ULONG n, i;
	int round;

	assert_int_equal(get(cq, r, 8), 0);
	/* Wrap the ring several times with partial drains. */
	for (round = 0; round < 10; round++) {
		while (push(cq, STATUS_SUCCESS, next, false) == 0) {
			next++;
			if (next - expect == 3)
				break;
		}
		n = get(cq, r, 2);
		assert_int_equal(n, 2);
		for (i = 0; i < n; i++)
			assert_ptr_equal(r[i].RequestContext, (PVOID)expect++);
	}
	n = get(cq, r, 0);
	assert_int_equal(n, 0);
	n = get(cq, r, 8);
	assert_int_equal(n, next - expect);
	for (i = 0; i < n; i++)
		assert_ptr_equal(r[i].RequestContext, (PVOID)expect++);
	assert_int_equal(get(cq, r, 8), 0);
	assert_int_equal(cq->Dispatch->NdkGetCqResults(cq, NULL, 4), 0);
	quiesce(a);
	assert_int_equal(atomic_load(&t.notifies), 0); /* never armed */
	close_cq(cq, &t);
	NdkCloseAdapter(a);
}

static void test_ex_fields(void **state)
{
	NDK_ADAPTER *a = open_lo();
	struct tctx t = { 0 };
	NDK_CQ *cq = mkcq(a, 8, &t);
	NDK_RESULT_EX x[2];
	NDK_RESULT r[2];
	NDK_RESULT_EX in = {
		.Status = STATUS_CANCELLED,
		.BytesTransferred = 1234,
		.QPContext = (PVOID)0x55,
		.RequestContext = (PVOID)0x66,
		.Type = NdkOperationTypeReceiveAndInvalidate,
		.ProviderErrorCode = 42,
		.TypeSpecificCompletionOutput = 0xabcd,
	};

	assert_int_equal(sw_cq_push(to_sw_cq(cq), &in, false), 0);
	assert_int_equal(sw_cq_push(to_sw_cq(cq), &in, false), 0);
	assert_int_equal(get(cq, x, 1), 1);
	assert_memory_equal(&x[0], &in, sizeof(in));

	memset(r, 0xee, sizeof(r));
	assert_int_equal(cq->Dispatch->NdkGetCqResults(cq, r, 2), 1);
	assert_int_equal(r[0].Status, STATUS_CANCELLED);
	assert_int_equal(r[0].BytesTransferred, 1234);
	assert_ptr_equal(r[0].QPContext, (PVOID)0x55);
	assert_ptr_equal(r[0].RequestContext, (PVOID)0x66);
	/* The non-Ex form writes only what it removed. */
	assert_int_equal(r[1].Status, (NTSTATUS)0xeeeeeeee);
	close_cq(cq, &t);
	NdkCloseAdapter(a);
}

/* What a (possibly merged) arm responds to. */
enum level { L_ERRORS, L_SOLICITED, L_ANY };

static enum level probe_level(NDK_ADAPTER *a, NDK_CQ *cq, struct tctx *t)
{
	quiesce(a);
	assert_int_equal(atomic_load(&t->notifies), 0); /* empty at arm */
	assert_int_equal(push(cq, STATUS_SUCCESS, 1, false), 0);
	quiesce(a);
	if (atomic_load(&t->notifies))
		return L_ANY;
	assert_int_equal(push(cq, STATUS_SUCCESS, 2, true), 0);
	quiesce(a);
	if (atomic_load(&t->notifies))
		return L_SOLICITED;
	/* depth 2: the third entry overruns. */
	assert_int_equal(push(cq, STATUS_SUCCESS, 3, false), -EOVERFLOW);
	quiesce(a);
	assert_int_equal(atomic_load(&t->notifies), 1);
	assert_int_equal(atomic_load(&t->overflows), 1);
	return L_ERRORS;
}

static void test_arm_merge_table(void **state)
{
	static const ULONG types[3] = { NDK_CQ_NOTIFY_ANY, NDK_CQ_NOTIFY_ERRORS,
					NDK_CQ_NOTIFY_SOLICITED };
	/* NDK_FN_ARM_CQ, rows = first arm, columns = second arm. */
	static const enum level table[3][3] = {
		{ L_ANY, L_ANY, L_ANY },
		{ L_ANY, L_ERRORS, L_SOLICITED },
		{ L_ANY, L_SOLICITED, L_SOLICITED },
	};
	NDK_ADAPTER *a = open_lo();
	int i, j;

	for (i = 0; i < 3; i++) {
		for (j = 0; j < 3; j++) {
			struct tctx t = { 0 };
			NDK_CQ *cq = mkcq(a, 2, &t);

			arm(cq, types[i]);
			arm(cq, types[j]);
			assert_int_equal(probe_level(a, cq, &t), table[i][j]);
			close_cq(cq, &t);
		}
	}
	/* Single arms, for completeness. */
	for (i = 0; i < 3; i++) {
		static const enum level single[3] = { L_ANY, L_ERRORS,
						      L_SOLICITED };
		struct tctx t = { 0 };
		NDK_CQ *cq = mkcq(a, 2, &t);

		arm(cq, types[i]);
		assert_int_equal(probe_level(a, cq, &t), single[i]);
		close_cq(cq, &t);
	}
	NdkCloseAdapter(a);
}

static void test_one_shot(void **state)
{
	NDK_ADAPTER *a = open_lo();
	struct tctx t = { 0 };
	NDK_CQ *cq = mkcq(a, 16, &t);

	/* Not armed: nothing. */
	assert_int_equal(push(cq, STATUS_SUCCESS, 1, false), 0);
	quiesce(a);
	assert_int_equal(atomic_load(&t.notifies), 0);
	assert_int_equal(drain(cq), 1);

	arm(cq, NDK_CQ_NOTIFY_ANY);
	quiesce(a);
	assert_int_equal(atomic_load(&t.notifies), 0); /* empty at arm */
	assert_int_equal(push(cq, STATUS_SUCCESS, 2, false), 0);
	assert_true(tu_wait_until(flag_set, &t.notifies, 5000));
	/* The arm is consumed: more completions do not notify. */
	assert_int_equal(push(cq, STATUS_SUCCESS, 3, false), 0);
	assert_int_equal(push(cq, STATUS_INTERNAL_ERROR, 4, true), 0);
	quiesce(a);
	assert_int_equal(atomic_load(&t.notifies), 1);
	assert_int_equal(atomic_load(&t.other), 0);

	/* Unknown arm types are ignored. */
	assert_int_equal(drain(cq), 3);
	arm(cq, 7);
	assert_int_equal(push(cq, STATUS_SUCCESS, 5, false), 0);
	quiesce(a);
	assert_int_equal(atomic_load(&t.notifies), 1);
	close_cq(cq, &t);
	NdkCloseAdapter(a);
}

static void test_arm_with_entries(void **state)
{
	NDK_ADAPTER *a = open_lo();
	struct tctx t = { 0 };
	NDK_CQ *cq = mkcq(a, 16, &t);

	assert_int_equal(push(cq, STATUS_SUCCESS, 1, false), 0);
	assert_int_equal(push(cq, STATUS_SUCCESS, 2, false), 0);
	quiesce(a);
	assert_int_equal(atomic_load(&t.notifies), 0);
	arm(cq, NDK_CQ_NOTIFY_ANY);
	assert_true(tu_wait_until(flag_set, &t.notifies, 5000));
	quiesce(a);
	assert_int_equal(atomic_load(&t.notifies), 1);

	/* A partial drain and a new arrival: fires at once again. */
	assert_int_equal(get(cq, (NDK_RESULT_EX[1]){ 0 }, 1), 1);
	assert_int_equal(push(cq, STATUS_SUCCESS, 3, false), 0);
	arm(cq, NDK_CQ_NOTIFY_ANY);
	quiesce(a);
	assert_int_equal(atomic_load(&t.notifies), 2);
	assert_int_equal(drain(cq), 2);

	/* SOLICITED with only unsolicited entries present: waits. */
	assert_int_equal(push(cq, STATUS_SUCCESS, 4, false), 0);
	arm(cq, NDK_CQ_NOTIFY_SOLICITED);
	quiesce(a);
	assert_int_equal(atomic_load(&t.notifies), 2);
	assert_int_equal(drain(cq), 1);
	/* ...and a solicited entry present at arm time fires it. */
	assert_int_equal(push(cq, STATUS_SUCCESS, 5, true), 0);
	quiesce(a);
	assert_int_equal(atomic_load(&t.notifies), 3);
	assert_int_equal(push(cq, STATUS_SUCCESS, 6, true), 0);
	arm(cq, NDK_CQ_NOTIFY_SOLICITED);
	quiesce(a);
	assert_int_equal(atomic_load(&t.notifies), 4);
	/* A solicited entry already drained does not count. */
	assert_int_equal(drain(cq), 2);
	assert_int_equal(push(cq, STATUS_SUCCESS, 7, true), 0);
	assert_int_equal(drain(cq), 1);
	assert_int_equal(push(cq, STATUS_SUCCESS, 8, false), 0);
	arm(cq, NDK_CQ_NOTIFY_SOLICITED);
	quiesce(a);
	assert_int_equal(atomic_load(&t.notifies), 4);
	close_cq(cq, &t);
	NdkCloseAdapter(a);
}

static void test_race_rule(void **state)
{
	NDK_ADAPTER *a = open_lo();
	struct tctx t = { 0 };
	NDK_CQ *cq = mkcq(a, 16, &t);

	arm(cq, NDK_CQ_NOTIFY_ANY);
	assert_int_equal(push(cq, STATUS_SUCCESS, 1, false), 0);
	quiesce(a);
	assert_int_equal(atomic_load(&t.notifies), 1);
	/* Consumer: drain until "no more", then re-arm. */
	assert_int_equal(drain(cq), 1);
	/* A completion lands between the empty poll and the re-arm. */
	assert_int_equal(push(cq, STATUS_SUCCESS, 2, false), 0);
	arm(cq, NDK_CQ_NOTIFY_ANY);
	quiesce(a);
	assert_int_equal(atomic_load(&t.notifies), 2);

	/* And one landing after the re-arm. */
	assert_int_equal(drain(cq), 1);
	arm(cq, NDK_CQ_NOTIFY_ANY);
	quiesce(a);
	assert_int_equal(atomic_load(&t.notifies), 2);
	assert_int_equal(push(cq, STATUS_SUCCESS, 3, false), 0);
	quiesce(a);
	assert_int_equal(atomic_load(&t.notifies), 3);
	close_cq(cq, &t);
	NdkCloseAdapter(a);
}

static void test_solicited_any_errors(void **state)
{
	NDK_ADAPTER *a = open_lo();
	struct tctx t = { 0 };
	NDK_CQ *cq = mkcq(a, 4, &t);

	/* SOLICITED: not by a plain success... */
	arm(cq, NDK_CQ_NOTIFY_SOLICITED);
	assert_int_equal(push(cq, STATUS_SUCCESS, 1, false), 0);
	quiesce(a);
	assert_int_equal(atomic_load(&t.notifies), 0);
	/* ...but by any error status, solicited or not. */
	assert_int_equal(push(cq, STATUS_CANCELLED, 2, false), 0);
	quiesce(a);
	assert_int_equal(atomic_load(&t.notifies), 1);
	assert_int_equal(drain(cq), 2);
	arm(cq, NDK_CQ_NOTIFY_SOLICITED);
	assert_int_equal(push(cq, STATUS_SUCCESS, 3, true), 0);
	quiesce(a);
	assert_int_equal(atomic_load(&t.notifies), 2);
	assert_int_equal(drain(cq), 1);

	/* ANY: by anything. */
	arm(cq, NDK_CQ_NOTIFY_ANY);
	assert_int_equal(push(cq, STATUS_SUCCESS, 4, false), 0);
	quiesce(a);
	assert_int_equal(atomic_load(&t.notifies), 3);
	assert_int_equal(drain(cq), 1);

	/* ERRORS: not by completions, whatever their status. */
	arm(cq, NDK_CQ_NOTIFY_ERRORS);
	assert_int_equal(push(cq, STATUS_SUCCESS, 5, false), 0);
	assert_int_equal(push(cq, STATUS_IO_TIMEOUT, 6, false), 0);
	assert_int_equal(push(cq, STATUS_SUCCESS, 7, true), 0);
	quiesce(a);
	assert_int_equal(atomic_load(&t.notifies), 3);
	assert_false(sw_cq_in_error(to_sw_cq(cq)));
	/* Only by a CQ error (overrun). */
	assert_int_equal(push(cq, STATUS_SUCCESS, 8, false), 0);
	assert_int_equal(push(cq, STATUS_SUCCESS, 9, false), -EOVERFLOW);
	quiesce(a);
	assert_int_equal(atomic_load(&t.notifies), 4);
	assert_int_equal(atomic_load(&t.overflows), 1);
	assert_int_equal(atomic_load(&t.other), 0);
	close_cq(cq, &t);
	NdkCloseAdapter(a);
}

/* ---- serialisation ---- */

#define SER_PER_THREAD 2000

static void ser_hook(struct tctx *t, NTSTATUS st)
{
	NDK_RESULT_EX r[32];
	ULONG n;

	if (atomic_exchange(&t->in_cb, 1))
		atomic_fetch_add(&t->overlaps, 1);
	/* Be slow so that pushes and re-posts pile up behind us. */
	tu_sleep_ms(1);
	while ((n = get(t->cq, r, 32)))
		atomic_fetch_add(&t->drained, (int)n);
	arm(t->cq, NDK_CQ_NOTIFY_ANY);
	atomic_store(&t->in_cb, 0);
}

static void *ser_pusher(void *arg)
{
	struct tctx *t = arg;
	uintptr_t i;

	/* No cmocka asserts off the test thread: count failures instead. */
	for (i = 0; i < SER_PER_THREAD; i++) {
		if (push(t->cq, STATUS_SUCCESS, i, false))
			atomic_fetch_add(&t->push_failures, 1);
		if (i % 64 == 0)
			tu_sleep_ms(1);
	}
	return NULL;
}

static bool all_drained(void *arg)
{
	struct tctx *t = arg;

	return atomic_load(&t->drained) == 2 * SER_PER_THREAD;
}

static void test_serialised(void **state)
{
	NDK_ADAPTER *a = open_lo();
	struct tctx t = { .hook = ser_hook };
	NDK_CQ *cq = mkcq(a, 2 * SER_PER_THREAD, &t);
	pthread_t th[2];

	arm(cq, NDK_CQ_NOTIFY_ANY);
	assert_int_equal(pthread_create(&th[0], NULL, ser_pusher, &t), 0);
	assert_int_equal(pthread_create(&th[1], NULL, ser_pusher, &t), 0);
	pthread_join(th[0], NULL);
	pthread_join(th[1], NULL);
	/* The race rule guarantees the last completions are seen too. */
	assert_true(tu_wait_until(all_drained, &t, 30000));
	quiesce(a);
	assert_int_equal(atomic_load(&t.push_failures), 0);
	assert_int_equal(atomic_load(&t.overlaps), 0);
	assert_true(atomic_load(&t.notifies) >= 1);
	assert_false(sw_cq_in_error(to_sw_cq(cq)));
	/* Stop re-arming before closing. */
	t.hook = NULL;
	close_cq(cq, &t);
	NdkCloseAdapter(a);
}

/* ---- close ---- */

static void close_inside_hook(struct tctx *t, NTSTATUS st)
{
	atomic_store(&t->close_status,
		     t->cq->Dispatch->NdkCloseCq(&t->cq->Header, on_close, t));
	atomic_store(&t->returning, 1);
}

static void test_close_in_callback(void **state)
{
	NDK_ADAPTER *a = open_lo();
	struct tctx t = { .hook = close_inside_hook };
	NDK_CQ *cq = mkcq(a, 8, &t);

	arm(cq, NDK_CQ_NOTIFY_ANY);
	assert_int_equal(push(cq, STATUS_SUCCESS, 1, false), 0);
	assert_true(tu_wait_until(flag_set, &t.close_done, 5000));
	/* The callback was running, so the close pended... */
	assert_int_equal(atomic_load(&t.close_status), STATUS_PENDING);
	/* ...and completed only after the callback returned. */
	assert_int_equal(atomic_load(&t.close_saw_returning), 1);
	assert_int_equal(atomic_load(&t.notifies_at_close), 1);
	quiesce(a);
	assert_int_equal(atomic_load(&t.close_done), 1);
	assert_int_equal(atomic_load(&t.notifies), 1);
	NdkCloseAdapter(a);
}

static void block_hook(struct tctx *t, NTSTATUS st)
{
	atomic_store(&t->entered, 1);
	/* Bounded: the test releases us within seconds. */
	tu_wait_until(flag_set, &t->release, 10000);
	atomic_store(&t->returning, 1);
}

static void test_close_pends_during_callback(void **state)
{
	NDK_ADAPTER *a = open_lo();
	struct tctx t = { .hook = block_hook };
	NDK_CQ *cq = mkcq(a, 8, &t);
	NTSTATUS st;

	arm(cq, NDK_CQ_NOTIFY_ANY);
	assert_int_equal(push(cq, STATUS_SUCCESS, 1, false), 0);
	assert_true(tu_wait_until(flag_set, &t.entered, 5000));

	st = cq->Dispatch->NdkCloseCq(&cq->Header, on_close, &t);
	assert_int_equal(st, STATUS_PENDING);
	/* Producers (QPs flushing) may still push while the close pends. */
	assert_int_equal(push(cq, STATUS_CANCELLED, 2, true), 0);
	assert_int_equal(atomic_load(&t.close_done), 0);

	atomic_store(&t.release, 1);
	assert_true(tu_wait_until(flag_set, &t.close_done, 5000));
	assert_int_equal(atomic_load(&t.close_saw_returning), 1);
	assert_int_equal(atomic_load(&t.notifies_at_close), 1);
	quiesce(a);
	assert_int_equal(atomic_load(&t.notifies), 1);
	assert_int_equal(atomic_load(&t.close_done), 1);
	NdkCloseAdapter(a);
}

static void test_no_notification_after_close(void **state)
{
	NDK_ADAPTER *a = open_lo();
	int i;

	for (i = 0; i < 50; i++) {
		struct tctx t = { 0 };
		NDK_CQ *cq = mkcq(a, 8, &t);
		NTSTATUS st;
		int seen;

		arm(cq, NDK_CQ_NOTIFY_ANY);
		assert_int_equal(push(cq, STATUS_SUCCESS, 1, false), 0);
		/* Races the queued notification. */
		st = cq->Dispatch->NdkCloseCq(&cq->Header, on_close, &t);
		if (st == STATUS_SUCCESS) {
			seen = atomic_load(&t.notifies);
			quiesce(a);
			assert_int_equal(atomic_load(&t.notifies), seen);
			assert_int_equal(atomic_load(&t.close_done), 0);
		} else {
			assert_int_equal(st, STATUS_PENDING);
			assert_true(
				tu_wait_until(flag_set, &t.close_done, 5000));
			quiesce(a);
			assert_int_equal(atomic_load(&t.notifies),
					 atomic_load(&t.notifies_at_close));
		}
		assert_true(atomic_load(&t.notifies) <= 1);
	}
	NdkCloseAdapter(a);
}

/* ---- overflow ---- */

static void test_overflow(void **state)
{
	NDK_ADAPTER *a = open_lo();
	struct tctx t = { 0 }, u = { 0 }, v = { 0 };
	NDK_CQ *cq = mkcq(a, 3, &t), *cq2, *cq3;
	NDK_RESULT_EX r[8];
	ULONG i;

	/* Armed ANY: the first completion notifies normally. */
	arm(cq, NDK_CQ_NOTIFY_ANY);
	for (i = 1; i <= 3; i++)
		assert_int_equal(push(cq, STATUS_SUCCESS, i, false), 0);
	quiesce(a);
	assert_int_equal(atomic_load(&t.notifies), 1);
	/* Overrun while unarmed: reported at the next arm. */
	assert_int_equal(push(cq, STATUS_SUCCESS, 4, false), -EOVERFLOW);
	assert_true(sw_cq_in_error(to_sw_cq(cq)));
	quiesce(a);
	assert_int_equal(atomic_load(&t.notifies), 1);
	/* Dead: nothing more is accepted, what is there can be read. */
	assert_int_equal(push(cq, STATUS_SUCCESS, 5, false), -EOVERFLOW);
	assert_int_equal(get(cq, r, 8), 3);
	for (i = 0; i < 3; i++)
		assert_ptr_equal(r[i].RequestContext,
				 (PVOID)(uintptr_t)(i + 1));
	assert_int_equal(push(cq, STATUS_SUCCESS, 6, false), -EOVERFLOW);
	arm(cq, NDK_CQ_NOTIFY_SOLICITED);
	quiesce(a);
	assert_int_equal(atomic_load(&t.notifies), 2);
	assert_int_equal(atomic_load(&t.overflows), 1);
	/* Reported once. */
	arm(cq, NDK_CQ_NOTIFY_ANY);
	quiesce(a);
	assert_int_equal(atomic_load(&t.notifies), 2);
	close_cq(cq, &t);

	/* Armed ERRORS at the time of the overrun: notified at once. */
	cq2 = mkcq(a, 1, &u);
	arm(cq2, NDK_CQ_NOTIFY_ERRORS);
	assert_int_equal(push(cq2, STATUS_SUCCESS, 1, false), 0);
	assert_int_equal(push(cq2, STATUS_SUCCESS, 2, false), -EOVERFLOW);
	assert_true(tu_wait_until(flag_set, &u.overflows, 5000));
	quiesce(a);
	assert_int_equal(atomic_load(&u.notifies), 1);
	assert_int_equal(get(cq2, r, 8), 1);
	close_cq(cq2, &u);

	/* Moderation never delays the error report. */
	cq3 = mkcq(a, 2, &v);
	assert_int_equal(cq3->Dispatch->NdkControlCqInterruptModeration(
				 cq3, 10000000, MAXU),
			 STATUS_SUCCESS);
	arm(cq3, NDK_CQ_NOTIFY_ANY);
	assert_int_equal(push(cq3, STATUS_SUCCESS, 1, false), 0);
	assert_int_equal(push(cq3, STATUS_SUCCESS, 2, false), 0);
	quiesce(a);
	assert_int_equal(atomic_load(&v.notifies), 0); /* held 10 s */
	assert_int_equal(push(cq3, STATUS_SUCCESS, 3, false), -EOVERFLOW);
	quiesce(a);
	assert_int_equal(atomic_load(&v.notifies), 1);
	assert_int_equal(atomic_load(&v.overflows), 1);
	close_cq(cq3, &v);
	NdkCloseAdapter(a);
}

/* ---- resize ---- */

static NTSTATUS resize(NDK_CQ *cq, ULONG depth)
{
	return cq->Dispatch->NdkResizeCq(cq, depth, NULL, NULL);
}

static void test_resize(void **state)
{
	NDK_ADAPTER *a = open_lo();
	ULONG max = to_ndk_adapter(a)->info.MaxCqDepth;
	struct tctx t = { 0 };
	NDK_CQ *cq = mkcq(a, 8, &t);
	NDK_RESULT_EX r[32];
	uintptr_t i;

	assert_int_equal(resize(cq, 0), STATUS_INVALID_PARAMETER);
	assert_int_equal(resize(cq, max + 1), STATUS_INVALID_PARAMETER);
	/* Make the ring wrap: head in the middle. */
	for (i = 1; i <= 6; i++)
		assert_int_equal(push(cq, STATUS_SUCCESS, i, false), 0);
	assert_int_equal(get(cq, r, 4), 4);
	for (i = 7; i <= 12; i++)
		assert_int_equal(push(cq, STATUS_SUCCESS, i, false), 0);
	/* 8 queued (5..12): smaller is refused and keeps them. */
	assert_int_equal(resize(cq, 7), STATUS_INVALID_PARAMETER);
	assert_int_equal(resize(cq, 16), STATUS_SUCCESS);
	for (i = 13; i <= 20; i++)
		assert_int_equal(push(cq, STATUS_SUCCESS, i, false), 0);
	assert_int_equal(push(cq, STATUS_SUCCESS, 21, false), -EOVERFLOW);
	assert_int_equal(get(cq, r, 32), 16);
	for (i = 0; i < 16; i++)
		assert_ptr_equal(r[i].RequestContext, (PVOID)(i + 5));
	close_cq(cq, &t);

	cq = mkcq(a, 8, &t);
	for (i = 1; i <= 5; i++)
		assert_int_equal(push(cq, STATUS_SUCCESS, i, false), 0);
	assert_int_equal(resize(cq, 4), STATUS_INVALID_PARAMETER);
	assert_int_equal(resize(cq, 5), STATUS_SUCCESS); /* exactly full */
	assert_int_equal(push(cq, STATUS_SUCCESS, 6, false), -EOVERFLOW);
	assert_int_equal(get(cq, r, 32), 5);
	for (i = 0; i < 5; i++)
		assert_ptr_equal(r[i].RequestContext, (PVOID)(i + 1));
	close_cq(cq, &t);

	cq = mkcq(a, 8, &t);
	assert_int_equal(resize(cq, 2), STATUS_SUCCESS); /* shrink empty */
	assert_int_equal(resize(cq, max), STATUS_SUCCESS);
	assert_int_equal(resize(cq, 1), STATUS_SUCCESS);
	assert_int_equal(push(cq, STATUS_SUCCESS, 1, false), 0);
	assert_int_equal(push(cq, STATUS_SUCCESS, 2, false), -EOVERFLOW);
	close_cq(cq, &t);
	NdkCloseAdapter(a);
}

/* ---- interrupt moderation ---- */

static NTSTATUS moderate(NDK_CQ *cq, ULONG interval, ULONG count)
{
	return cq->Dispatch->NdkControlCqInterruptModeration(cq, interval,
							     count);
}

static void test_moderation_params(void **state)
{
	NDK_ADAPTER *a = open_lo();
	struct tctx t = { 0 };
	NDK_CQ *cq = mkcq(a, 8, &t);

	assert_int_equal(moderate(cq, 0, 0), STATUS_SUCCESS);
	assert_int_equal(moderate(cq, 0, MAXU), STATUS_SUCCESS);
	assert_int_equal(moderate(cq, MAXU, 0), STATUS_SUCCESS);
	assert_int_equal(moderate(cq, MAXU, 1), STATUS_SUCCESS);
	assert_int_equal(moderate(cq, MAXU, MAXU),
			 STATUS_INVALID_PARAMETER_MIX);
	assert_int_equal(moderate(cq, MAXU, 9), STATUS_INVALID_PARAMETER_MIX);
	assert_int_equal(moderate(cq, MAXU, 8), STATUS_SUCCESS);
	assert_int_equal(moderate(cq, 20, MAXU), STATUS_SUCCESS);
	assert_int_equal(moderate(cq, 1000, 9), STATUS_SUCCESS);
	assert_int_equal(moderate(cq, 100, 4), STATUS_SUCCESS);
	/* "Oversized" follows the current depth. */
	assert_int_equal(resize(cq, 16), STATUS_SUCCESS);
	assert_int_equal(moderate(cq, MAXU, 9), STATUS_SUCCESS);
	/* Off again: notifications are immediate. */
	assert_int_equal(moderate(cq, 0, 0), STATUS_SUCCESS);
	arm(cq, NDK_CQ_NOTIFY_ANY);
	assert_int_equal(push(cq, STATUS_SUCCESS, 1, false), 0);
	quiesce(a);
	assert_int_equal(atomic_load(&t.notifies), 1);
	close_cq(cq, &t);
	NdkCloseAdapter(a);
}

static void test_moderation_count(void **state)
{
	NDK_ADAPTER *a = open_lo();
	struct tctx t = { 0 };
	NDK_CQ *cq = mkcq(a, 16, &t);
	uintptr_t i;

	/* Count only. */
	assert_int_equal(moderate(cq, MAXU, 4), STATUS_SUCCESS);
	arm(cq, NDK_CQ_NOTIFY_ANY);
	for (i = 1; i <= 3; i++)
		assert_int_equal(push(cq, STATUS_SUCCESS, i, false), 0);
	quiesce(a);
	assert_int_equal(atomic_load(&t.notifies), 0);
	assert_int_equal(push(cq, STATUS_SUCCESS, 4, false), 0);
	quiesce(a);
	assert_int_equal(atomic_load(&t.notifies), 1);
	assert_int_equal(drain(cq), 4);

	/* SOLICITED still needs a matching entry, then the count. */
	arm(cq, NDK_CQ_NOTIFY_SOLICITED);
	assert_int_equal(push(cq, STATUS_SUCCESS, 5, true), 0);
	quiesce(a);
	assert_int_equal(atomic_load(&t.notifies), 1);
	for (i = 6; i <= 8; i++)
		assert_int_equal(push(cq, STATUS_SUCCESS, i, false), 0);
	quiesce(a);
	assert_int_equal(atomic_load(&t.notifies), 2);
	assert_int_equal(drain(cq), 4);

	/* Interval and count: the count comes first here. */
	assert_int_equal(moderate(cq, 60000000, 3), STATUS_SUCCESS);
	arm(cq, NDK_CQ_NOTIFY_ANY);
	for (i = 9; i <= 10; i++)
		assert_int_equal(push(cq, STATUS_SUCCESS, i, false), 0);
	quiesce(a);
	assert_int_equal(atomic_load(&t.notifies), 2);
	assert_int_equal(push(cq, STATUS_SUCCESS, 11, false), 0);
	quiesce(a);
	assert_int_equal(atomic_load(&t.notifies), 3);
	assert_int_equal(drain(cq), 3);

	/* A held arm is released when moderation is switched off. */
	arm(cq, NDK_CQ_NOTIFY_ANY);
	assert_int_equal(push(cq, STATUS_SUCCESS, 12, false), 0);
	quiesce(a);
	assert_int_equal(atomic_load(&t.notifies), 3);
	assert_int_equal(moderate(cq, 0, 0), STATUS_SUCCESS);
	quiesce(a);
	assert_int_equal(atomic_load(&t.notifies), 4);
	close_cq(cq, &t);
	NdkCloseAdapter(a);
}

static void test_moderation_interval(void **state)
{
	NDK_ADAPTER *a = open_lo();
	struct tctx t = { 0 };
	NDK_CQ *cq = mkcq(a, 16, &t);
	uint64_t t0, t1;
	int round;

	/* Interval only, 300 ms; then interval before a high count. */
	for (round = 0; round < 2; round++) {
		assert_int_equal(moderate(cq, 300000, round ? 10 : MAXU),
				 STATUS_SUCCESS);
		arm(cq, NDK_CQ_NOTIFY_ANY);
		t0 = tu_now_ms();
		assert_int_equal(push(cq, STATUS_SUCCESS, 1, false), 0);
		assert_int_equal(push(cq, STATUS_SUCCESS, 2, false), 0);
		quiesce(a);
		/* Only meaningful if we were not descheduled for 300 ms. */
		if (tu_now_ms() - t0 < 250)
			assert_int_equal(atomic_load(&t.notifies), round);
		t.want = round + 1;
		assert_true(tu_wait_until(notified_enough, &t, 10000));
		t1 = tu_now_ms();
		assert_true(t1 - t0 >= 295);
		quiesce(a);
		assert_int_equal(atomic_load(&t.notifies), round + 1);
		assert_int_equal(drain(cq), 2);
	}

	/* A sub-millisecond interval rounds down: no delay at all. */
	assert_int_equal(moderate(cq, 20, MAXU), STATUS_SUCCESS);
	arm(cq, NDK_CQ_NOTIFY_ANY);
	assert_int_equal(push(cq, STATUS_SUCCESS, 3, false), 0);
	quiesce(a);
	assert_int_equal(atomic_load(&t.notifies), 3);
	assert_int_equal(drain(cq), 1);

	/* Draining a held CQ cancels its pending notification. */
	assert_int_equal(moderate(cq, 50000, MAXU), STATUS_SUCCESS);
	arm(cq, NDK_CQ_NOTIFY_ANY);
	assert_int_equal(push(cq, STATUS_SUCCESS, 4, false), 0);
	assert_int_equal(drain(cq), 1);
	tu_sleep_ms(120); /* timer at 50 ms finds nothing to report */
	quiesce(a);
	assert_int_equal(atomic_load(&t.notifies), 3);
	close_cq(cq, &t);
	NdkCloseAdapter(a);
}

static void test_moderation_close(void **state)
{
	NDK_ADAPTER *a = open_lo();
	struct tctx t = { 0 }, u = { 0 };
	NDK_CQ *cq = mkcq(a, 16, &t), *cq2 = mkcq(a, 16, &u);

	/* A CQ closed with its moderation timer armed: no callback ever. */
	assert_int_equal(moderate(cq, 30000, MAXU), STATUS_SUCCESS);
	arm(cq, NDK_CQ_NOTIFY_ANY);
	assert_int_equal(push(cq, STATUS_SUCCESS, 1, false), 0);
	assert_int_equal(cq->Dispatch->NdkCloseCq(&cq->Header, on_close, &t),
			 STATUS_SUCCESS);
	tu_sleep_ms(60); /* past the interval */
	quiesce(a);
	assert_int_equal(atomic_load(&t.notifies), 0);
	assert_int_equal(atomic_load(&t.close_done), 0);

	/* One left open with a long timer: the adapter close cleans up. */
	assert_int_equal(moderate(cq2, 60000000, MAXU), STATUS_SUCCESS);
	arm(cq2, NDK_CQ_NOTIFY_ANY);
	assert_int_equal(push(cq2, STATUS_SUCCESS, 1, false), 0);
	NdkCloseAdapter(a);
	assert_int_equal(atomic_load(&u.notifies), 0);
	assert_int_equal(atomic_load(&u.close_done), 0);
}

/* A poller that blocks inside poll() until released. */
struct slow_poller {
	struct sw_cq_poller p;
	atomic_int calls, inside, release, del_done;
	struct sw_cq *cq;
};

static void slow_poll(struct sw_cq_poller *p)
{
	struct slow_poller *s = (struct slow_poller *)p;

	atomic_fetch_add(&s->calls, 1);
	atomic_store(&s->inside, 1);
	while (!atomic_load(&s->release))
		tu_sleep_ms(1);
	atomic_store(&s->inside, 0);
}

static void *poll_thread(void *arg)
{
	NDK_CQ *cq = arg;
	NDK_RESULT_EX r;

	(void)cq->Dispatch->NdkGetCqResultsEx(cq, &r, 1);
	return NULL;
}

static void *del_thread(void *arg)
{
	struct slow_poller *s = arg;

	sw_cq_del_poller(s->cq, &s->p);
	atomic_store(&s->del_done, 1);
	return NULL;
}

/*
 * An empty poll of a CQ with one poller runs it without the CQ's lock or
 * a reference on its owner: removing the poller must wait for a poll
 * already inside it (the owner may go as soon as the removal returns),
 * and no poll may run it afterwards.
 */
static void test_poller_removed_while_polling(void **state)
{
	NDK_ADAPTER *a = open_lo();
	struct tctx t = { 0 };
	NDK_CQ *cq = mkcq(a, 4, &t);
	struct slow_poller s = { 0 };
	NDK_RESULT_EX r;
	pthread_t pt, dt;

	(void)state;
	s.cq = to_sw_cq(cq);
	s.p.poll = slow_poll;
	s.p.owner = &to_ndk_cq(cq)->obj;
	sw_cq_add_poller(s.cq, &s.p);
	assert_int_equal(pthread_create(&pt, NULL, poll_thread, cq), 0);
	assert_true(tu_wait_until(flag_set, &s.inside, 10000));
	assert_int_equal(pthread_create(&dt, NULL, del_thread, &s), 0);
	tu_sleep_ms(50);
	/* Still inside poll(): the removal has not returned. */
	assert_int_equal(atomic_load(&s.del_done), 0);
	atomic_store(&s.release, 1);
	assert_int_equal(pthread_join(dt, NULL), 0);
	assert_int_equal(atomic_load(&s.inside), 0);
	assert_int_equal(pthread_join(pt, NULL), 0);
	/* Removed: an empty poll no longer runs it. */
	assert_int_equal(get(cq, &r, 1), 0);
	assert_int_equal(atomic_load(&s.calls), 1);
	close_cq(cq, &t);
	NdkCloseAdapter(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_create_limits),
		cmocka_unit_test(test_fifo_partial),
		cmocka_unit_test(test_ex_fields),
		cmocka_unit_test(test_arm_merge_table),
		cmocka_unit_test(test_one_shot),
		cmocka_unit_test(test_arm_with_entries),
		cmocka_unit_test(test_race_rule),
		cmocka_unit_test(test_solicited_any_errors),
		cmocka_unit_test(test_serialised),
		cmocka_unit_test(test_close_in_callback),
		cmocka_unit_test(test_close_pends_during_callback),
		cmocka_unit_test(test_no_notification_after_close),
		cmocka_unit_test(test_overflow),
		cmocka_unit_test(test_resize),
		cmocka_unit_test(test_moderation_params),
		cmocka_unit_test(test_moderation_count),
		cmocka_unit_test(test_moderation_interval),
		cmocka_unit_test(test_moderation_close),
		cmocka_unit_test(test_poller_removed_while_polling),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
