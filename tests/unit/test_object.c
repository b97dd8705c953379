/* SPDX-License-Identifier: MIT */
/*
 * The object model's close protocol (NDKPI Object Lifetime Requirements), exercised on
 * a test-only object type so every ordering can be forced.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <net/if.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "front/adapter.h"
#include "testutil.h"

struct tobj {
	struct ndk_obj obj;
	atomic_int *destroyed;
	atomic_int close_begun;
};

static void tobj_close_begin(struct ndk_obj *obj)
{
	atomic_fetch_add(&container_of(obj, struct tobj, obj)->close_begun, 1);
}

static void tobj_destroy(struct ndk_obj *obj)
{
	struct tobj *t = container_of(obj, struct tobj, obj);

	if (t->destroyed)
		atomic_fetch_add(t->destroyed, 1);
	free(t);
}

static const struct ndk_obj_ops tobj_ops = {
	.type = NdkObjectTypeMw,
	.name = "test",
	.close_begin = tobj_close_begin,
	.destroy = tobj_destroy,
};

static const NDK_MW_DISPATCH tobj_dispatch = {
	.NdkCloseMw = ndk_close_object,
	.NdkQueryExtension = ndk_query_extension,
};

static struct ndk_adapter *open_lo(void)
{
	NDK_VERSION v = { 2, 0 };
	NDK_ADAPTER *a = NULL;

	assert_int_equal(NdkOpenAdapter(v, if_nametoindex("lo"), &a),
			 STATUS_SUCCESS);
	return to_ndk_adapter(a);
}

static struct tobj *tobj_new(struct ndk_adapter *ad, struct ndk_obj *parent,
			     atomic_int *destroyed)
{
	struct tobj *t = calloc(1, sizeof(*t));
	struct ndk_obj *antes[1] = { parent ? parent : &ad->obj };

	assert_non_null(t);
	t->destroyed = destroyed;
	assert_int_equal(
		ndk_obj_setup(&t->obj, ad, &tobj_ops, &tobj_dispatch, antes, 1),
		STATUS_SUCCESS);
	return t;
}

static NTSTATUS tclose(struct tobj *t, NDK_FN_CLOSE_COMPLETION cb,
		       const void *ctx)
{
	NDK_MW *mw = &t->obj.pub.mw;

	return mw->Dispatch->NdkCloseMw(&mw->Header, cb, (PVOID)ctx);
}

/* Records the order in which close completions ran. */
struct order {
	pthread_mutex_t lock;
	char seq[16];
	int n;
};

static struct order order = { PTHREAD_MUTEX_INITIALIZER, { 0 }, 0 };

static void order_reset(void)
{
	memset(order.seq, 0, sizeof(order.seq));
	order.n = 0;
}

static void close_done(PVOID ctx)
{
	pthread_mutex_lock(&order.lock);
	order.seq[order.n++] = *(const char *)ctx;
	pthread_mutex_unlock(&order.lock);
}

static bool order_len_is(void *arg)
{
	int n;

	pthread_mutex_lock(&order.lock);
	n = order.n;
	pthread_mutex_unlock(&order.lock);
	return n == (int)(intptr_t)arg;
}

static void test_header_filled(void **state)
{
	struct ndk_adapter *ad = open_lo();
	atomic_int destroyed = 0;
	struct tobj *t = tobj_new(ad, NULL, &destroyed);
	static const NDK_OBJECT_HEADER_RESERVED_BLOCK zero;

	assert_int_equal(t->obj.pub.Header.Version.Major, 2);
	assert_int_equal(t->obj.pub.Header.Version.Minor, 1);
	assert_int_equal(t->obj.pub.Header.ObjectType, NdkObjectTypeMw);
	assert_memory_equal(&t->obj.pub.Header.NdkReserved, &zero,
			    sizeof(zero));
	assert_ptr_equal(t->obj.pub.mw.Dispatch, &tobj_dispatch);
	assert_int_equal(ad->obj.pub.Header.ObjectType, NdkObjectTypeAdapter);
	/* A leaf closes inline: STATUS_SUCCESS and no callback. */
	order_reset();
	assert_int_equal(tclose(t, close_done, "x"), STATUS_SUCCESS);
	assert_int_equal(atomic_load(&destroyed), 1);
	NdkCloseAdapter(&ad->obj.pub.adapter);
	assert_int_equal(order.n, 0);
}

static void test_parent_close_pends(void **state)
{
	struct ndk_adapter *ad = open_lo();
	atomic_int destroyed = 0;
	struct tobj *p = tobj_new(ad, NULL, &destroyed);
	struct tobj *c = tobj_new(ad, &p->obj, &destroyed);

	order_reset();
	assert_int_equal(tclose(p, close_done, "P"), STATUS_PENDING);
	assert_int_equal(atomic_load(&p->close_begun), 1);
	tu_sleep_ms(20);
	assert_int_equal(order.n, 0);
	assert_int_equal(atomic_load(&destroyed), 0);
	/* The successor is a leaf: it closes inline. */
	assert_int_equal(tclose(c, close_done, "C"), STATUS_SUCCESS);
	assert_true(tu_wait_until(order_len_is, (void *)1, 2000));
	assert_int_equal(order.seq[0], 'P');
	NdkCloseAdapter(&ad->obj.pub.adapter);
	assert_int_equal(atomic_load(&destroyed), 2);
	assert_int_equal(order.n, 1);
}

/* A successor's close completion runs before its antecedent's starts. */
static void slow_close_done(PVOID ctx)
{
	close_done(ctx);
	tu_sleep_ms(50);
	pthread_mutex_lock(&order.lock);
	order.seq[order.n++] = 'e';
	pthread_mutex_unlock(&order.lock);
}

static void test_completion_order(void **state)
{
	struct ndk_adapter *ad = open_lo();
	atomic_int destroyed = 0;
	struct tobj *p = tobj_new(ad, NULL, &destroyed);
	struct tobj *c = tobj_new(ad, &p->obj, &destroyed);

	order_reset();
	ndk_obj_hold(&c->obj); /* a pending request on the successor */
	assert_int_equal(tclose(c, slow_close_done, "C"), STATUS_PENDING);
	assert_int_equal(tclose(p, close_done, "P"), STATUS_PENDING);
	tu_sleep_ms(20);
	assert_int_equal(order.n, 0);
	ndk_obj_release(&c->obj);
	assert_true(tu_wait_until(order_len_is, (void *)3, 2000));
	assert_string_equal(order.seq, "CeP");
	NdkCloseAdapter(&ad->obj.pub.adapter);
	assert_int_equal(atomic_load(&destroyed), 2);
}

/* The consumer may close an object inside that object's own callback. */
struct event_ctx {
	struct ndk_work work;
	struct tobj *t;
	NTSTATUS close_status;
	enum ndk_obj_state state_in_cb;
	atomic_int ran;
	atomic_int closed;
};

static void on_closed(PVOID ctx)
{
	struct event_ctx *e = ctx;

	atomic_store(&e->closed, 1);
}

static void event_fn(struct ndk_work *w)
{
	struct event_ctx *e = container_of(w, struct event_ctx, work);

	if (!ndk_obj_begin_event(&e->t->obj))
		return;
	e->close_status = tclose(e->t, on_closed, e);
	/* Still safe to touch: the event holds the object. */
	e->state_in_cb = e->t->obj.state;
	atomic_store(&e->ran, 1);
	ndk_obj_release(&e->t->obj);
}

static bool flag_set(void *arg)
{
	return atomic_load((atomic_int *)arg) != 0;
}

static void test_close_inside_callback(void **state)
{
	struct ndk_adapter *ad = open_lo();
	atomic_int destroyed = 0;
	struct event_ctx e = { .close_status = -1 };

	e.t = tobj_new(ad, NULL, &destroyed);
	ndk_work_init(&e.work, event_fn);
	ndk_engine_post(&ad->engine, &e.work);
	assert_true(tu_wait_until(flag_set, &e.closed, 2000));
	assert_int_equal(e.close_status, STATUS_PENDING);
	assert_int_equal(e.state_in_cb, NDK_OBJ_CLOSING);
	assert_int_equal(atomic_load(&e.ran), 1);
	NdkCloseAdapter(&ad->obj.pub.adapter);
	assert_int_equal(atomic_load(&destroyed), 1);
}

static void test_no_event_after_close(void **state)
{
	struct ndk_adapter *ad = open_lo();
	atomic_int destroyed = 0;
	struct tobj *t = tobj_new(ad, NULL, &destroyed);

	ndk_obj_get(&t->obj);
	assert_true(ndk_obj_begin_event(&t->obj));
	ndk_obj_release(&t->obj);
	assert_int_equal(tclose(t, NULL, NULL), STATUS_SUCCESS);
	assert_false(ndk_obj_begin_event(&t->obj));
	assert_false(ndk_obj_is_open(&t->obj));
	/* A second close is refused, not crashed on. */
	assert_int_equal(tclose(t, NULL, NULL), STATUS_INVALID_DEVICE_STATE);
	ndk_obj_put(&t->obj);
	NdkCloseAdapter(&ad->obj.pub.adapter);
	assert_int_equal(atomic_load(&destroyed), 1);
}

static atomic_int req_calls;
static NTSTATUS req_status;

static void req_done(PVOID ctx, NTSTATUS status)
{
	req_status = status;
	atomic_fetch_add(&req_calls, 1);
}

static void test_request_completes_once(void **state)
{
	struct ndk_adapter *ad = open_lo();
	atomic_int destroyed = 0;
	struct tobj *t = tobj_new(ad, NULL, &destroyed);
	struct ndk_req r;

	atomic_store(&req_calls, 0);
	ndk_req_pend(&r, &t->obj, req_done, NULL);
	/* The pending request keeps the close from completing. */
	order_reset();
	assert_int_equal(tclose(t, close_done, "T"), STATUS_PENDING);
	assert_true(ndk_req_complete(&r, STATUS_CANCELLED));
	assert_false(ndk_req_complete(&r, STATUS_SUCCESS));
	assert_true(tu_wait_until(order_len_is, (void *)1, 2000));
	assert_int_equal(atomic_load(&req_calls), 1);
	assert_int_equal(req_status, STATUS_CANCELLED);
	NdkCloseAdapter(&ad->obj.pub.adapter);
	assert_int_equal(atomic_load(&destroyed), 1);
}

/* NdkCloseAdapter returns only after running callbacks have returned. */
struct slow_ctx {
	struct ndk_work work;
	struct tobj *t;
	atomic_int started;
	atomic_int finished;
};

static void slow_event(struct ndk_work *w)
{
	struct slow_ctx *s = container_of(w, struct slow_ctx, work);

	if (!ndk_obj_begin_event(&s->t->obj))
		return;
	atomic_store(&s->started, 1);
	tu_sleep_ms(200);
	atomic_store(&s->finished, 1);
	ndk_obj_release(&s->t->obj);
}

static void test_adapter_close_waits(void **state)
{
	struct ndk_adapter *ad = open_lo();
	atomic_int destroyed = 0;
	struct slow_ctx s = { 0 };
	struct tobj *child;

	s.t = tobj_new(ad, NULL, &destroyed);
	child = tobj_new(ad, &s.t->obj, &destroyed);
	(void)child;
	ndk_work_init(&s.work, slow_event);
	ndk_engine_post(&ad->engine, &s.work);
	assert_true(tu_wait_until(flag_set, &s.started, 2000));
	/* Both objects were left open: the adapter closes them itself. */
	NdkCloseAdapter(&ad->obj.pub.adapter);
	assert_int_equal(atomic_load(&s.finished), 1);
	assert_int_equal(atomic_load(&destroyed), 2);
}

static void test_link_rules(void **state)
{
	struct ndk_adapter *ad = open_lo();
	atomic_int destroyed = 0;
	struct tobj *a = tobj_new(ad, NULL, &destroyed);
	struct tobj *b = tobj_new(ad, NULL, &destroyed);

	assert_int_equal(ndk_obj_link(&b->obj, &a->obj), 0);
	assert_int_equal(ndk_obj_link(&b->obj, &a->obj), -EEXIST);
	assert_true(ndk_obj_is_linked(&b->obj, &a->obj));
	assert_int_equal(ndk_obj_link(&b->obj, NULL), -EINVAL);
	ndk_obj_unlink(&b->obj, &a->obj);
	assert_false(ndk_obj_is_linked(&b->obj, &a->obj));
	/* Unlinked: a closes inline now (our reference keeps its memory). */
	ndk_obj_get(&a->obj);
	assert_int_equal(tclose(a, NULL, NULL), STATUS_SUCCESS);
	/* A closed object cannot gain successors. */
	assert_int_equal(ndk_obj_link(&b->obj, &a->obj), -EINVAL);
	ndk_obj_put(&a->obj);
	assert_int_equal(tclose(b, NULL, NULL), STATUS_SUCCESS);
	NdkCloseAdapter(&ad->obj.pub.adapter);
	assert_int_equal(atomic_load(&destroyed), 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_header_filled),
		cmocka_unit_test(test_parent_close_pends),
		cmocka_unit_test(test_completion_order),
		cmocka_unit_test(test_close_inside_callback),
		cmocka_unit_test(test_no_event_after_close),
		cmocka_unit_test(test_request_completes_once),
		cmocka_unit_test(test_adapter_close_waits),
		cmocka_unit_test(test_link_rules),
	};

	return cmocka_run_group_tests_name("object", tests, NULL, NULL);
}
