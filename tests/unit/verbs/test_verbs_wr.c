/* SPDX-License-Identifier: MIT */
/*
 * The verbs provider's work request slots and QP key map (verbs/wr.h),
 * without a device: work completions are made up here the way siw and
 * rxe deliver them (out of order between a Read and the requests behind
 * it, unsignaled requests completing only when they fail, flushed
 * requests before the consumer flushed). Built only with the verbs
 * provider.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "front/adapter.h"
#include "verbs/wr.h"

#define DEPTH 8

struct seen {
	NDK_RESULT_EX r[64];
	bool solicited[64];
	unsigned int n;
};

static void out(void *arg, const NDK_RESULT_EX *r, bool solicited)
{
	struct seen *s = arg;

	assert_true(s->n < 64);
	s->r[s->n] = *r;
	s->solicited[s->n] = solicited;
	s->n++;
}

struct env {
	struct ndk_adapter ad; /* counters NULL: counts nowhere */
	struct ndk_vqpmap map;
	struct ndk_vwq sq, rq;
	int errors;
	void *error_owner;
	int owner;
};

static void on_error(void *owner)
{
	struct env *e = owner;

	e->errors++;
	e->error_owner = owner;
}

static int setup(void **state)
{
	struct env *e = calloc(1, sizeof(*e));

	assert_non_null(e);
	assert_int_equal(ndk_vqpmap_init(&e->map), 0);
	e->map.on_error = on_error;
	assert_int_equal(
		ndk_vwq_init(&e->sq, DEPTH, false, (PVOID)0x51, &e->ad), 0);
	assert_int_equal(ndk_vwq_init(&e->rq, DEPTH, true, (PVOID)0x51, &e->ad),
			 0);
	assert_int_equal(
		ndk_vqpmap_add(&e->map, &e->sq, &e->rq, &e->owner, 7, e), 0);
	assert_int_not_equal(e->sq.key, 0);
	assert_int_equal(e->sq.key, e->rq.key);
	*state = e;
	return 0;
}

static int teardown(void **state)
{
	struct env *e = *state;

	ndk_vqpmap_del(&e->map, e->sq.key);
	ndk_vwq_fini(&e->sq);
	ndk_vwq_fini(&e->rq);
	ndk_vqpmap_fini(&e->map);
	free(e);
	return 0;
}

/* Posts one request; its wr_id. */
static uint64_t post(struct ndk_vwq *wq, uintptr_t ctx, uint16_t type,
		     uint32_t len, ULONG flags)
{
	struct ndk_vslot *s = ndk_vwq_slot(wq);
	bool signaled;

	assert_non_null(s);
	s->ctx = (PVOID)ctx;
	s->type = type;
	s->len = len;
	if (flags & NDK_OP_FLAG_SILENT_SUCCESS)
		s->flags |= VSLOT_SILENT;
	signaled = wq->recv || ndk_vwq_signal(wq, flags);
	ndk_vwq_commit(wq, s, signaled);
	return ndk_vwq_wr_id(wq, s);
}

static struct ibv_wc wc_of(uint64_t wr_id, enum ibv_wc_status st,
			   uint32_t byte_len)
{
	struct ibv_wc wc;

	memset(&wc, 0, sizeof(wc));
	wc.wr_id = wr_id;
	wc.status = st;
	wc.byte_len = byte_len;
	return wc;
}

static void complete(struct env *e, struct seen *s, uint64_t wr_id,
		     enum ibv_wc_status st, uint32_t byte_len)
{
	struct ibv_wc wc = wc_of(wr_id, st, byte_len);

	ndk_vwc_results(&e->map, &wc, 1, out, s);
}

/* Results keep their RequestContext, type, length and QPContext. */
static void test_result_fields(void **state)
{
	struct env *e = *state;
	struct seen s = { 0 };
	uint64_t w = post(&e->sq, 1, NdkOperationTypeWrite, 100, 0);
	uint64_t r = post(&e->rq, 2, NdkOperationTypeReceive, 4096, 0);

	complete(e, &s, w, IBV_WC_SUCCESS, 0);
	complete(e, &s, r, IBV_WC_SUCCESS, 37);
	assert_int_equal(s.n, 2);
	assert_int_equal(s.r[0].Status, STATUS_SUCCESS);
	assert_ptr_equal(s.r[0].RequestContext, (PVOID)1);
	assert_ptr_equal(s.r[0].QPContext, (PVOID)0x51);
	assert_int_equal(s.r[0].Type, NdkOperationTypeWrite);
	assert_int_equal(s.r[0].BytesTransferred, 100);
	assert_false(s.solicited[0]);
	/* A receive's length is what arrived. */
	assert_ptr_equal(s.r[1].RequestContext, (PVOID)2);
	assert_int_equal(s.r[1].Type, NdkOperationTypeReceive);
	assert_int_equal(s.r[1].BytesTransferred, 37);
	assert_true(s.solicited[1]);
	assert_int_equal(e->errors, 0);
}

/* siw: a Read completes after the Send behind it; results stay in order. */
static void test_out_of_order(void **state)
{
	struct env *e = *state;
	struct seen s = { 0 };
	uint64_t rd = post(&e->sq, 1, NdkOperationTypeRead, 64, 0);
	uint64_t sd = post(&e->sq, 2, NdkOperationTypeSend, 8, 0);
	uint64_t wr = post(&e->sq, 3, NdkOperationTypeWrite, 8, 0);

	complete(e, &s, sd, IBV_WC_SUCCESS, 0);
	complete(e, &s, wr, IBV_WC_SUCCESS, 0);
	assert_int_equal(s.n, 0);
	complete(e, &s, rd, IBV_WC_SUCCESS, 0);
	assert_int_equal(s.n, 3);
	assert_ptr_equal(s.r[0].RequestContext, (PVOID)1);
	assert_ptr_equal(s.r[1].RequestContext, (PVOID)2);
	assert_ptr_equal(s.r[2].RequestContext, (PVOID)3);
	assert_int_equal(atomic_load(&e->sq.head), 3);
}

/* Several completions in one poll, in reverse. */
static void test_batch_reversed(void **state)
{
	struct env *e = *state;
	struct seen s = { 0 };
	struct ibv_wc wc[4];
	int i;

	for (i = 0; i < 4; i++)
		wc[3 - i] =
			wc_of(post(&e->sq, 10 + i, NdkOperationTypeSend, 1, 0),
			      IBV_WC_SUCCESS, 0);
	ndk_vwc_results(&e->map, wc, 4, out, &s);
	assert_int_equal(s.n, 4);
	for (i = 0; i < 4; i++)
		assert_ptr_equal(s.r[i].RequestContext,
				 (PVOID)(uintptr_t)(10 + i));
}

/*
 * SILENT_SUCCESS: unsignaled requests are released by the signaled one
 * behind them without a result; one in every half queue is signaled, and
 * its own success stays silent.
 */
static void test_silent(void **state)
{
	struct env *e = *state;
	struct seen s = { 0 };
	uint64_t id[DEPTH];
	int i, signaled = -1;

	for (i = 0; i < DEPTH / 2 + 1; i++) {
		id[i] = post(&e->sq, 20 + i, NdkOperationTypeWrite, 1,
			     NDK_OP_FLAG_SILENT_SUCCESS);
		if (e->sq.slots[i].signaled)
			signaled = i;
	}
	assert_int_equal(signaled, DEPTH / 2);
	/* The queue is not full: the unsignaled slots count until released. */
	assert_int_equal(atomic_load(&e->sq.tail) - atomic_load(&e->sq.head),
			 DEPTH / 2 + 1);
	complete(e, &s, id[signaled], IBV_WC_SUCCESS, 0);
	assert_int_equal(s.n, 0);
	assert_int_equal(atomic_load(&e->sq.head), DEPTH / 2 + 1);

	/* A silent request that fails reports, and so does the next. */
	id[0] = post(&e->sq, 30, NdkOperationTypeWrite, 1,
		     NDK_OP_FLAG_SILENT_SUCCESS);
	id[1] = post(&e->sq, 31, NdkOperationTypeSend, 1, 0);
	complete(e, &s, id[0], IBV_WC_REM_ACCESS_ERR, 0);
	assert_int_equal(s.n, 1);
	assert_ptr_equal(s.r[0].RequestContext, (PVOID)30);
	assert_int_equal(s.r[0].Status, STATUS_REMOTE_RESOURCES);
	assert_int_equal(s.r[0].BytesTransferred, 0);
	assert_int_equal(s.r[0].ProviderErrorCode, IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(e->errors, 1);
	assert_ptr_equal(e->error_owner, e);
	e->sq.flush_ok = true;
	complete(e, &s, id[1], IBV_WC_WR_FLUSH_ERR, 0);
	assert_int_equal(s.n, 2);
	assert_int_equal(s.r[1].Status, STATUS_CANCELLED);
	/* A flush is no new error. */
	assert_int_equal(e->errors, 1);
}

/* A full queue gives no slot until a completion frees one. */
static void test_full(void **state)
{
	struct env *e = *state;
	struct seen s = { 0 };
	uint64_t first = 0;
	int i;

	for (i = 0; i < DEPTH; i++) {
		uint64_t id =
			post(&e->rq, 40 + i, NdkOperationTypeReceive, 64, 0);

		if (!i)
			first = id;
	}
	assert_null(ndk_vwq_slot(&e->rq));
	complete(e, &s, first, IBV_WC_SUCCESS, 1);
	assert_int_equal(s.n, 1);
	assert_non_null(ndk_vwq_slot(&e->rq));
}

/*
 * An iWARP device flushes a QP whose stream closed before the consumer
 * flushed: the results wait until flush_ok; the consumer's flush lets
 * them go (ndk_vwq_release_held), and a queue's results never wait for
 * the other queue.
 */
static void test_flush_held(void **state)
{
	struct env *e = *state;
	struct seen s = { 0 };
	uint64_t a = post(&e->rq, 50, NdkOperationTypeReceive, 64, 0);
	uint64_t b = post(&e->rq, 51, NdkOperationTypeReceive, 64, 0);
	uint64_t c = post(&e->sq, 52, NdkOperationTypeSend, 1, 0);

	complete(e, &s, a, IBV_WC_WR_FLUSH_ERR, 0);
	complete(e, &s, b, IBV_WC_WR_FLUSH_ERR, 0);
	assert_int_equal(s.n, 0);
	atomic_store(&e->sq.flush_ok, true);
	complete(e, &s, c, IBV_WC_WR_FLUSH_ERR, 0);
	assert_int_equal(s.n, 1);
	assert_ptr_equal(s.r[0].RequestContext, (PVOID)52);
	ndk_vwq_release_held(&e->rq, out, &s);
	assert_int_equal(s.n, 1);
	atomic_store(&e->rq.flush_ok, true);
	ndk_vwq_release_held(&e->rq, out, &s);
	assert_int_equal(s.n, 3);
	assert_ptr_equal(s.r[1].RequestContext, (PVOID)50);
	assert_ptr_equal(s.r[2].RequestContext, (PVOID)51);
	assert_int_equal(s.r[2].Status, STATUS_CANCELLED);
	/* Later flushes complete as they come. */
	complete(e, &s, post(&e->rq, 53, NdkOperationTypeReceive, 64, 0),
		 IBV_WC_WR_FLUSH_ERR, 0);
	assert_int_equal(s.n, 4);
	assert_ptr_equal(s.r[3].RequestContext, (PVOID)53);
	assert_int_equal(e->errors, 0);
}

/* Completions of a QP that left the map, or of no QP, are dropped. */
static void test_gone(void **state)
{
	struct env *e = *state;
	struct seen s = { 0 };
	uint64_t id = post(&e->sq, 60, NdkOperationTypeSend, 1, 0);
	uint32_t key = e->sq.key;

	complete(e, &s, (uint64_t)0x7777 << 32, IBV_WC_SUCCESS, 0);
	ndk_vqpmap_del(&e->map, key);
	complete(e, &s, id, IBV_WC_GENERAL_ERR, 0);
	assert_int_equal(s.n, 0);
	assert_int_equal(e->errors, 0);
	/* Back in the map under a new key for teardown. */
	assert_int_equal(
		ndk_vqpmap_add(&e->map, &e->sq, &e->rq, &e->owner, 7, e), 0);
	assert_int_not_equal(e->sq.key, key);
}

static void find(void *owner, void *arg)
{
	*(void **)arg = owner;
}

/* Many QPs: the map grows, deletes keep every other key findable. */
static void test_map(void **state)
{
	struct env *e = *state;
	enum { N = 500 };
	static struct ndk_vwq sq[N], rq[N];
	static int ibv[N];
	void *found;
	int i;

	for (i = 0; i < N; i++)
		assert_int_equal(ndk_vqpmap_add(&e->map, &sq[i], &rq[i],
						&ibv[i], 100 + (uint32_t)i,
						&sq[i]),
				 0);
	for (i = 0; i < N; i += 3)
		ndk_vqpmap_del(&e->map, sq[i].key);
	for (i = 0; i < N; i++) {
		found = NULL;
		assert_int_equal(
			ndk_vqpmap_with_ibv(&e->map, &ibv[i], find, &found),
			i % 3 != 0);
		assert_ptr_equal(found, i % 3 ? &sq[i] : NULL);
	}
	found = NULL;
	assert_true(ndk_vqpmap_with_ibv(&e->map, &e->owner, find, &found));
	assert_ptr_equal(found, e);
	for (i = 0; i < N; i++)
		if (i % 3)
			ndk_vqpmap_del(&e->map, sq[i].key);
	assert_int_equal(e->map.used, 1);
	assert_int_equal(e->map.qpn_used, 1);
}

static struct ibv_wc srq_wc(const struct ndk_vsrqslots *q, int index,
			    uint32_t qp_num, enum ibv_wc_status st,
			    uint32_t byte_len)
{
	struct ibv_wc wc =
		wc_of(ndk_vsrqslots_wr_id(q, (uint32_t)index), st, byte_len);

	wc.qp_num = qp_num;
	return wc;
}

/*
 * An SRQ's receives: slots released one by one as their completions come,
 * whichever QP took them (found by qp_num), up to its depth, which
 * NdkModifySrq may change but not below the receives outstanding.
 */
static void test_srq_slots(void **state)
{
	struct env *e = *state;
	struct ndk_vsrqslots q;
	struct seen s = { 0 };
	struct ibv_wc wc;
	int ibv_srq, i, idx[4];

	assert_int_equal(ndk_vsrqslots_init(&q, 4), 0);
	assert_int_equal(ndk_vqpmap_add_srq(&e->map, &q, &ibv_srq, &q), 0);
	assert_int_not_equal(q.key, e->sq.key);
	for (i = 0; i < 4; i++) {
		idx[i] =
			ndk_vsrqslots_get(&q, (PVOID)(uintptr_t)(i + 1), false);
		assert_true(idx[i] >= 0);
	}
	assert_int_equal(ndk_vsrqslots_get(&q, NULL, false), -ENOSPC);
	assert_int_equal(ndk_vsrqslots_busy(&q), 4);

	/* The third first: the result carries the taker's QPContext. */
	wc = srq_wc(&q, idx[2], 7, IBV_WC_SUCCESS, 10);
	ndk_vwc_results(&e->map, &wc, 1, out, &s);
	assert_int_equal(s.n, 1);
	assert_ptr_equal(s.r[0].RequestContext, (PVOID)3);
	assert_ptr_equal(s.r[0].QPContext, (PVOID)0x51);
	assert_int_equal(s.r[0].Type, NdkOperationTypeReceive);
	assert_int_equal(s.r[0].BytesTransferred, 10);
	assert_true(s.solicited[0]);
	assert_int_equal(ndk_vsrqslots_busy(&q), 3);
	/* Its completion again (a stale wr_id) is nothing. */
	ndk_vwc_results(&e->map, &wc, 1, out, &s);
	assert_int_equal(s.n, 1);

	/* A QP the map does not know: dropped, the slot is free again. */
	wc = srq_wc(&q, idx[0], 99, IBV_WC_SUCCESS, 1);
	ndk_vwc_results(&e->map, &wc, 1, out, &s);
	assert_int_equal(s.n, 1);
	assert_int_equal(ndk_vsrqslots_busy(&q), 2);

	/* A failure ends the taker's connection; a flush does not. */
	wc = srq_wc(&q, idx[1], 7, IBV_WC_LOC_PROT_ERR, 0);
	ndk_vwc_results(&e->map, &wc, 1, out, &s);
	assert_int_equal(s.n, 2);
	assert_int_equal(s.r[1].Status, STATUS_ACCESS_VIOLATION);
	assert_int_equal(e->errors, 1);
	wc = srq_wc(&q, idx[3], 7, IBV_WC_WR_FLUSH_ERR, 0);
	ndk_vwc_results(&e->map, &wc, 1, out, &s);
	assert_int_equal(s.n, 3);
	assert_int_equal(s.r[2].Status, STATUS_CANCELLED);
	assert_int_equal(e->errors, 1);
	assert_int_equal(ndk_vsrqslots_busy(&q), 0);

	/* Depth: not below the outstanding, slots keep their indexes. */
	for (i = 0; i < 3; i++)
		idx[i] = ndk_vsrqslots_get(&q, (PVOID)(uintptr_t)(i + 10),
					   false);
	assert_int_equal(ndk_vsrqslots_resize(&q, 2), -EINVAL);
	assert_int_equal(ndk_vsrqslots_resize(&q, 3), 0);
	assert_int_equal(ndk_vsrqslots_get(&q, NULL, false), -ENOSPC);
	assert_int_equal(ndk_vsrqslots_resize(&q, 64), 0);
	for (i = 0; i < 61; i++)
		assert_true(ndk_vsrqslots_get(&q, (PVOID)(uintptr_t)(i + 100),
					      false) >= 0);
	assert_int_equal(ndk_vsrqslots_get(&q, NULL, false), -ENOSPC);
	wc = srq_wc(&q, idx[1], 7, IBV_WC_SUCCESS, 5);
	ndk_vwc_results(&e->map, &wc, 1, out, &s);
	assert_int_equal(s.n, 4);
	assert_ptr_equal(s.r[3].RequestContext, (PVOID)11);

	/* The QP leaves the map: its SRQ completions are dropped. */
	ndk_vqpmap_del(&e->map, e->sq.key);
	wc = srq_wc(&q, idx[0], 7, IBV_WC_SUCCESS, 5);
	ndk_vwc_results(&e->map, &wc, 1, out, &s);
	assert_int_equal(s.n, 4);
	assert_int_equal(
		ndk_vqpmap_add(&e->map, &e->sq, &e->rq, &e->owner, 7, e), 0);
	ndk_vqpmap_del(&e->map, q.key);
	ndk_vsrqslots_fini(&q);
}

/*
 * The provider cancels what the device left outstanding after the
 * consumer flushed: signaled requests complete STATUS_CANCELLED in
 * order behind those that completed, an unsignaled one before a
 * cancelled one counts as succeeded, and the device's late completions
 * of cancelled requests are dropped, also once the slot is used again.
 */
static void test_cancel(void **state)
{
	struct env *e = *state;
	struct seen s = { 0 };
	uint64_t w1 = post(&e->sq, 1, NdkOperationTypeWrite, 10, 0);
	uint64_t w2 = post(&e->sq, 2, NdkOperationTypeWrite, 10,
			   NDK_OP_FLAG_SILENT_SUCCESS);
	uint64_t rd = post(&e->sq, 3, NdkOperationTypeRead, 10, 0);
	uint64_t rv = post(&e->rq, 4, NdkOperationTypeReceive, 10, 0);
	uint64_t again;
	int i;

	complete(e, &s, w1, IBV_WC_SUCCESS, 0);
	assert_int_equal(s.n, 1);
	atomic_store(&e->sq.flush_ok, true);
	atomic_store(&e->rq.flush_ok, true);
	ndk_vwq_cancel(&e->sq);
	ndk_vwq_cancel(&e->rq);
	ndk_vwq_release_held(&e->sq, out, &s);
	ndk_vwq_release_held(&e->rq, out, &s);
	assert_int_equal(s.n, 3);
	assert_ptr_equal(s.r[1].RequestContext, (PVOID)3);
	assert_int_equal(s.r[1].Status, STATUS_CANCELLED);
	assert_int_equal(s.r[1].Type, NdkOperationTypeRead);
	assert_true(s.solicited[1]);
	assert_ptr_equal(s.r[2].RequestContext, (PVOID)4);
	assert_int_equal(s.r[2].Status, STATUS_CANCELLED);
	assert_int_equal(s.r[2].Type, NdkOperationTypeReceive);
	/* The device flushes them after all: nothing more, no error. */
	complete(e, &s, w2, IBV_WC_WR_FLUSH_ERR, 0);
	complete(e, &s, rd, IBV_WC_WR_FLUSH_ERR, 0);
	complete(e, &s, rv, IBV_WC_WR_FLUSH_ERR, 0);
	assert_int_equal(s.n, 3);
	assert_int_equal(e->errors, 0);
	/* The ring goes round: the slot of the Read is used again, and
	 * the Read's stale completion does not complete the new one. */
	for (i = 0; i < DEPTH - 1; i++) {
		again = post(&e->sq, 100 + (uintptr_t)i, NdkOperationTypeSend,
			     1, 0);
		complete(e, &s, again, IBV_WC_SUCCESS, 0);
	}
	assert_int_equal(s.n, 3 + DEPTH - 1);
	again = post(&e->sq, 200, NdkOperationTypeSend, 1, 0);
	assert_int_equal(again & 0xfffff, rd & 0xfffff); /* same slot */
	complete(e, &s, rd, IBV_WC_SUCCESS, 0);
	assert_int_equal(s.n, 3 + DEPTH - 1);
	complete(e, &s, again, IBV_WC_SUCCESS, 0);
	assert_int_equal(s.n, 3 + DEPTH);
	assert_ptr_equal(s.r[s.n - 1].RequestContext, (PVOID)200);
}

/* A receive that failed: a local QP operation error of good SGEs is
 * STATUS_BUFFER_OVERFLOW (rxe's receive too small), of bad ones
 * STATUS_ACCESS_VIOLATION, as is any failure of bad ones. */
static void test_receive_status(void **state)
{
	struct env *e = *state;
	struct seen s = { 0 };
	struct ndk_vslot *sl;
	uint64_t id[3];
	int i;

	for (i = 0; i < 3; i++) {
		sl = ndk_vwq_slot(&e->rq);
		sl->ctx = (PVOID)(uintptr_t)(i + 1);
		sl->type = NdkOperationTypeReceive;
		sl->sgl_bad = i > 0;
		ndk_vwq_commit(&e->rq, sl, true);
		id[i] = ndk_vwq_wr_id(&e->rq, sl);
	}
	complete(e, &s, id[0], IBV_WC_LOC_QP_OP_ERR, 0);
	complete(e, &s, id[1], IBV_WC_LOC_QP_OP_ERR, 0);
	complete(e, &s, id[2], IBV_WC_GENERAL_ERR, 0);
	assert_int_equal(s.n, 3);
	assert_int_equal(s.r[0].Status, STATUS_BUFFER_OVERFLOW);
	assert_int_equal(s.r[1].Status, STATUS_ACCESS_VIOLATION);
	assert_int_equal(s.r[2].Status, STATUS_ACCESS_VIOLATION);
	assert_int_equal(s.r[2].ProviderErrorCode, IBV_WC_GENERAL_ERR);
}

/* An initiator request whose marker stood in for a bad local SGE: the
 * marker's success is the preset status, reported even if silent. */
static void test_preset(void **state)
{
	struct env *e = *state;
	struct seen s = { 0 };
	struct ndk_vslot *sl = ndk_vwq_slot(&e->sq);
	uint64_t id;

	sl->ctx = (PVOID)9;
	sl->type = NdkOperationTypeSend;
	sl->flags |= VSLOT_SILENT;
	sl->preset = STATUS_ACCESS_VIOLATION;
	ndk_vwq_commit(&e->sq, sl, true);
	id = ndk_vwq_wr_id(&e->sq, sl);
	complete(e, &s, id, IBV_WC_SUCCESS, 0);
	assert_int_equal(s.n, 1);
	assert_int_equal(s.r[0].Status, STATUS_ACCESS_VIOLATION);
	assert_int_equal(s.r[0].Type, NdkOperationTypeSend);
	assert_int_equal(s.r[0].BytesTransferred, 0);
	assert_int_equal(e->errors, 0); /* the connection goes on */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_result_fields, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_out_of_order, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_batch_reversed, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_silent, setup, teardown),
		cmocka_unit_test_setup_teardown(test_full, setup, teardown),
		cmocka_unit_test_setup_teardown(test_flush_held, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_gone, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cancel, setup, teardown),
		cmocka_unit_test_setup_teardown(test_receive_status, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_preset, setup, teardown),
		cmocka_unit_test_setup_teardown(test_map, setup, teardown),
		cmocka_unit_test_setup_teardown(test_srq_slots, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
