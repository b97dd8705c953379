/* SPDX-License-Identifier: MIT */
/*
 * Create and close the resource objects through the public API in every
 * order (NDKPI Terminology, NDKPI Object Lifetime
 * Requirements): a close returns STATUS_SUCCESS
 * exactly when no successor is still open, otherwise STATUS_PENDING, and a
 * pending close completes exactly once, after its last successor closed.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <net/if.h>
#include <stdatomic.h>
#include <string.h>
#include <ndk/ndk.h>
#include "testutil.h"

enum { PD, CQ, SRQ, QP, MR, MW, NOBJ };
static const char *const names[NOBJ] = { "PD", "CQ", "SRQ", "QP", "MR", "MW" };

/* successors[x] = objects that keep x's close pending while open. */
static const unsigned int successors[NOBJ] = {
	[PD] = 1u << SRQ | 1u << QP | 1u << MR | 1u << MW,
	[CQ] = 1u << QP,
	[SRQ] = 1u << QP,
};

static atomic_int completions[NOBJ];
static atomic_int completed_order[NOBJ];
static atomic_int completed_count;

static void on_close(PVOID ctx)
{
	int i = (int)(intptr_t)ctx;

	atomic_fetch_add(&completions[i], 1);
	atomic_store(&completed_order[atomic_fetch_add(&completed_count, 1)],
		     i);
}

static void on_cq(PVOID ctx, NTSTATUS status)
{
}

struct objs {
	NDK_OBJECT_HEADER *hdr[NOBJ];
	NDK_FN_CLOSE_OBJECT close[NOBJ];
};

static void create_all(NDK_ADAPTER *ad, struct objs *o)
{
	NDK_PD *pd;
	NDK_CQ *cq;
	NDK_SRQ *srq;
	NDK_QP *qp;
	NDK_MR *mr;
	NDK_MW *mw;

	assert_int_equal(ad->Dispatch->NdkCreatePd(ad, NULL, NULL, &pd),
			 STATUS_SUCCESS);
	assert_int_equal(ad->Dispatch->NdkCreateCq(ad, 16, on_cq, NULL, NULL,
						   NULL, NULL, &cq),
			 STATUS_SUCCESS);
	assert_int_equal(pd->Dispatch->NdkCreateSrq(pd, 8, 1, 0, NULL, NULL,
						    NULL, NULL, NULL, &srq),
			 STATUS_SUCCESS);
	assert_int_equal(pd->Dispatch->NdkCreateQpWithSrq(pd, cq, cq, srq, NULL,
							  4, 1, 0, NULL, NULL,
							  &qp),
			 STATUS_SUCCESS);
	assert_int_equal(pd->Dispatch->NdkCreateMr(pd, FALSE, NULL, NULL, &mr),
			 STATUS_SUCCESS);
	assert_int_equal(pd->Dispatch->NdkCreateMw(pd, NULL, NULL, &mw),
			 STATUS_SUCCESS);
	o->hdr[PD] = &pd->Header;
	o->close[PD] = pd->Dispatch->NdkClosePd;
	o->hdr[CQ] = &cq->Header;
	o->close[CQ] = cq->Dispatch->NdkCloseCq;
	o->hdr[SRQ] = &srq->Header;
	o->close[SRQ] = srq->Dispatch->NdkCloseSrq;
	o->hdr[QP] = &qp->Header;
	o->close[QP] = qp->Dispatch->NdkCloseQp;
	o->hdr[MR] = &mr->Header;
	o->close[MR] = mr->Dispatch->NdkCloseMr;
	o->hdr[MW] = &mw->Header;
	o->close[MW] = mw->Dispatch->NdkCloseMw;
}

struct wait_arg {
	int obj;
	int count;
};

static bool has_completed(void *p)
{
	struct wait_arg *w = p;

	return atomic_load(&completions[w->obj]) >= w->count;
}

/* Closes in the order perm[], checking every status and completion. */
static void close_in_order(NDK_ADAPTER *ad, const int *perm)
{
	struct objs o;
	unsigned int closed = 0, pending = 0, async_closed = 0;
	int i, k;

	for (i = 0; i < NOBJ; i++)
		atomic_store(&completions[i], 0);
	atomic_store(&completed_count, 0);
	create_all(ad, &o);
	for (k = 0; k < NOBJ; k++) {
		int x = perm[k];
		NTSTATUS st =
			o.close[x](o.hdr[x], on_close, (PVOID)(intptr_t)x);
		bool progress;

		if ((successors[x] & ~closed) == 0 &&
		    (st == STATUS_SUCCESS || !(successors[x] & async_closed))) {
			/*
			 * A successor whose close completed through its
			 * callback drops its links just after the callback
			 * returns (9.2), so right then a close may still pend.
			 */
			assert_int_equal(st, STATUS_SUCCESS);
			closed |= 1u << x;
		} else if ((successors[x] & ~closed) == 0) {
			assert_int_equal(st, STATUS_PENDING);
			pending |= 1u << x;
		} else {
			assert_int_equal(st, STATUS_PENDING);
			pending |= 1u << x;
		}
		/* Pending closes whose successors are now all gone complete. */
		do {
			progress = false;
			for (i = 0; i < NOBJ; i++) {
				struct wait_arg w = { i, 1 };

				if (!(pending & (1u << i)) ||
				    (successors[i] & ~closed))
					continue;
				assert_true(
					tu_wait_until(has_completed, &w, 2000));
				pending &= ~(1u << i);
				closed |= 1u << i;
				async_closed |= 1u << i;
				progress = true;
			}
		} while (progress);
	}
	assert_int_equal(closed, (1u << NOBJ) - 1);
	/* Exactly once, and no late callbacks. */
	tu_sleep_ms(2);
	for (i = 0; i < NOBJ; i++)
		assert_true(atomic_load(&completions[i]) <= 1);
}

static bool next_perm(int *a, int n)
{
	int i = n - 2, j = n - 1, t;

	while (i >= 0 && a[i] >= a[i + 1])
		i--;
	if (i < 0)
		return false;
	while (a[j] <= a[i])
		j--;
	t = a[i];
	a[i] = a[j];
	a[j] = t;
	for (i++, j = n - 1; i < j; i++, j--) {
		t = a[i];
		a[i] = a[j];
		a[j] = t;
	}
	return true;
}

static void test_every_close_order(void **state)
{
	NDK_VERSION v = { 2, 0 };
	NDK_ADAPTER *ad;
	int perm[NOBJ] = { 0, 1, 2, 3, 4, 5 };
	unsigned int orders = 0;

	assert_int_equal(NdkOpenAdapter(v, if_nametoindex("lo"), &ad),
			 STATUS_SUCCESS);
	do {
		close_in_order(ad, perm);
		orders++;
	} while (next_perm(perm, NOBJ));
	assert_int_equal(orders, 720);
	NdkCloseAdapter(ad);
}

/* The antecedent's CloseCompletion never precedes a successor's. */
static void test_completion_after_successors(void **state)
{
	NDK_VERSION v = { 2, 0 };
	NDK_ADAPTER *ad;
	struct objs o;
	struct wait_arg w = { PD, 1 };

	assert_int_equal(NdkOpenAdapter(v, if_nametoindex("lo"), &ad),
			 STATUS_SUCCESS);
	memset(completions, 0, sizeof(completions));
	atomic_store(&completed_count, 0);
	create_all(ad, &o);
	assert_int_equal(o.close[PD](o.hdr[PD], on_close, (PVOID)PD),
			 STATUS_PENDING);
	assert_int_equal(o.close[CQ](o.hdr[CQ], on_close, (PVOID)CQ),
			 STATUS_PENDING);
	assert_int_equal(o.close[SRQ](o.hdr[SRQ], on_close, (PVOID)SRQ),
			 STATUS_PENDING);
	assert_int_equal(o.close[MR](o.hdr[MR], on_close, (PVOID)MR),
			 STATUS_SUCCESS);
	assert_int_equal(o.close[MW](o.hdr[MW], on_close, (PVOID)MW),
			 STATUS_SUCCESS);
	/* The QP was the last successor of PD, CQ and SRQ. */
	assert_int_equal(o.close[QP](o.hdr[QP], on_close, (PVOID)QP),
			 STATUS_SUCCESS);
	assert_true(tu_wait_until(has_completed, &w, 2000));
	w.obj = CQ;
	assert_true(tu_wait_until(has_completed, &w, 2000));
	w.obj = SRQ;
	assert_true(tu_wait_until(has_completed, &w, 2000));
	assert_int_equal(atomic_load(&completed_count), 3);
	NdkCloseAdapter(ad);
	(void)names;
}

/* Objects left open are closed by NdkCloseAdapter without callbacks. */
static void test_adapter_closes_leftovers(void **state)
{
	NDK_VERSION v = { 2, 0 };
	NDK_ADAPTER *ad;
	struct objs o;

	assert_int_equal(NdkOpenAdapter(v, if_nametoindex("lo"), &ad),
			 STATUS_SUCCESS);
	memset(completions, 0, sizeof(completions));
	atomic_store(&completed_count, 0);
	create_all(ad, &o);
	/* One pending close the consumer asked for: it must still complete. */
	assert_int_equal(o.close[PD](o.hdr[PD], on_close, (PVOID)PD),
			 STATUS_PENDING);
	NdkCloseAdapter(ad);
	assert_int_equal(atomic_load(&completions[PD]), 1);
	assert_int_equal(atomic_load(&completed_count), 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_close_order),
		cmocka_unit_test(test_completion_after_successors),
		cmocka_unit_test(test_adapter_closes_leftovers),
	};

	return cmocka_run_group_tests_name("lifecycle", tests, NULL, NULL);
}
