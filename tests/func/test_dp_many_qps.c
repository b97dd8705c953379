/* SPDX-License-Identifier: MIT */
/*
 * Many QPs at once: 16 loopback pairs, each with CQs of its own, moving
 * Sends both ways, Writes and Reads concurrently from four threads, each
 * thread the only poster of its pairs' queues (NDKPI Work Request Posting
 * Requirements); every byte and every completion is checked, in order
 * and exactly once. And a burst's worth of QPs (256) on one adapter.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include "dp_pair.h"
#include "testutil.h"

static VOID on_cq_quiet(PVOID ctx, NTSTATUS status)
{
}

#define NPAIRS	 16
#define NWORKERS 4
#define NCHUNK	 16 /* requests of each kind per pair */
#define XFER	 (256u << 10) /* bytes of each kind per pair */
#define SLICE	 (4 * XFER) /* per pair in A.buf and in P.buf */

/* A's slice: what it sends, writes, reads into, receives into. */
#define A_SEND	0
#define A_WRITE (1 * XFER)
#define A_READ	(2 * XFER)
#define A_RECV	(3 * XFER)
/* P's slice: receives into, is written, is read, sends from. */
#define P_RECV	0
#define P_WRITE (1 * XFER)
#define P_READ	(2 * XFER)
#define P_SEND	(3 * XFER)

/* Contexts: kind in the high bits, sequence number below. */
#define CTX_A_IQ   0x10000u /* A's Write/Read/Send, seq = 3k + 0/1/2 */
#define CTX_A_RECV 0x20000u
#define CTX_P_RECV 0x30000u
#define CTX_P_SEND 0x40000u

struct qpair {
	struct side a, p; /* qp, conn and disc only: memory is A's and P's */
	NDK_CQ *acq, *pcq;
	uint8_t *abuf, *pbuf;
	/* Completions seen, in order. */
	uint32_t a_iq, a_recv, p_iq, p_recv;
};

static struct qpair QPS[NPAIRS];

struct worker {
	pthread_t thread;
	int id;
	char err[512];
};

/* Sixteen chunks of alternating odd sizes, 256 KiB in all. */
static size_t chunk_len(uint32_t k)
{
	return (k & 1) ? 17385 : 15383;
}

static size_t chunk_off(uint32_t k)
{
	return (size_t)(k / 2) * 32768 + ((k & 1) ? 15383 : 0);
}

#define WCHECK(w, cond, ...)                                               \
	do {                                                               \
		if (!(cond)) {                                             \
			snprintf((w)->err, sizeof((w)->err), __VA_ARGS__); \
			return false;                                      \
		}                                                          \
	} while (0)

static bool pair_post(struct worker *w, int i, uint32_t k)
{
	struct qpair *q = &QPS[i];
	size_t off = chunk_off(k), len = chunk_len(k);
	NDK_SGE s;
	NTSTATUS st;

	s = sge(q->abuf + A_WRITE + off, len, A.ltok);
	st = q->a.qp->Dispatch->NdkWrite(
		q->a.qp, (PVOID)(uintptr_t)(CTX_A_IQ + 3 * k), &s, 1,
		(UINT64)(uintptr_t)(q->pbuf + P_WRITE + off), P.rtok, 0);
	WCHECK(w, st == STATUS_SUCCESS, "pair %d: Write %u: %#x", i, k,
	       (unsigned int)st);
	s = sge(q->abuf + A_READ + off, len, A.ltok);
	st = q->a.qp->Dispatch->NdkRead(
		q->a.qp, (PVOID)(uintptr_t)(CTX_A_IQ + 3 * k + 1), &s, 1,
		(UINT64)(uintptr_t)(q->pbuf + P_READ + off), P.rtok, 0);
	WCHECK(w, st == STATUS_SUCCESS, "pair %d: Read %u: %#x", i, k,
	       (unsigned int)st);
	/* The Send goes behind the Write: its receive orders the Write. */
	s = sge(q->abuf + A_SEND + off, len, A.ltok);
	st = q->a.qp->Dispatch->NdkSend(
		q->a.qp, (PVOID)(uintptr_t)(CTX_A_IQ + 3 * k + 2), &s, 1, 0);
	WCHECK(w, st == STATUS_SUCCESS, "pair %d: Send %u: %#x", i, k,
	       (unsigned int)st);
	s = sge(q->pbuf + P_SEND + off, len, P.ltok);
	st = q->p.qp->Dispatch->NdkSend(
		q->p.qp, (PVOID)(uintptr_t)(CTX_P_SEND + k), &s, 1, 0);
	WCHECK(w, st == STATUS_SUCCESS, "pair %d: P Send %u: %#x", i, k,
	       (unsigned int)st);
	return true;
}

static const NDK_OPERATION_TYPE a_iq_type[3] = {
	NdkOperationTypeWrite,
	NdkOperationTypeRead,
	NdkOperationTypeSend,
};

/* One completion of pair i; side 'a' or 'p'. Checks order and status. */
static bool pair_result(struct worker *w, int i, char side,
			const NDK_RESULT_EX *r)
{
	struct qpair *q = &QPS[i];
	uintptr_t ctx = (uintptr_t)r->RequestContext;

	WCHECK(w, r->Status == STATUS_SUCCESS,
	       "pair %d %c: ctx %#lx type %#x status %#x", i, side,
	       (unsigned long)ctx, (unsigned int)r->Type,
	       (unsigned int)r->Status);
	WCHECK(w, r->QPContext == (PVOID)q, "pair %d %c: QPContext %p", i, side,
	       r->QPContext);
	if (r->Type == NdkOperationTypeReceive) {
		uint32_t *n = side == 'a' ? &q->a_recv : &q->p_recv;
		uintptr_t want = (side == 'a' ? CTX_A_RECV : CTX_P_RECV) + *n;

		WCHECK(w, *n < NCHUNK && ctx == want,
		       "pair %d %c: receive ctx %#lx, expected %#lx", i, side,
		       (unsigned long)ctx, (unsigned long)want);
		WCHECK(w, r->BytesTransferred == chunk_len(*n),
		       "pair %d %c: receive %u got %u bytes", i, side, *n,
		       (unsigned int)r->BytesTransferred);
		(*n)++;
		return true;
	}
	if (side == 'a') {
		WCHECK(w,
		       q->a_iq < 3 * NCHUNK && ctx == CTX_A_IQ + q->a_iq &&
			       r->Type == a_iq_type[q->a_iq % 3],
		       "pair %d: A completion ctx %#lx type %#x, expected "
		       "ctx %#lx",
		       i, (unsigned long)ctx, (unsigned int)r->Type,
		       (unsigned long)(CTX_A_IQ + q->a_iq));
		q->a_iq++;
	} else {
		WCHECK(w,
		       q->p_iq < NCHUNK && ctx == CTX_P_SEND + q->p_iq &&
			       r->Type == NdkOperationTypeSend,
		       "pair %d: P completion ctx %#lx type %#x", i,
		       (unsigned long)ctx, (unsigned int)r->Type);
		q->p_iq++;
	}
	return true;
}

static bool pair_done(const struct qpair *q)
{
	return q->a_iq == 3 * NCHUNK && q->a_recv == NCHUNK &&
	       q->p_iq == NCHUNK && q->p_recv == NCHUNK;
}

static bool pair_verify(struct worker *w, int i)
{
	struct qpair *q = &QPS[i];

	/* Sends both ways, Writes (ordered by the last Send), Reads. */
	WCHECK(w, !memcmp(q->pbuf + P_RECV, q->abuf + A_SEND, XFER),
	       "pair %d: P received wrong bytes", i);
	WCHECK(w, !memcmp(q->abuf + A_RECV, q->pbuf + P_SEND, XFER),
	       "pair %d: A received wrong bytes", i);
	WCHECK(w, !memcmp(q->pbuf + P_WRITE, q->abuf + A_WRITE, XFER),
	       "pair %d: written bytes wrong", i);
	WCHECK(w, !memcmp(q->abuf + A_READ, q->pbuf + P_READ, XFER),
	       "pair %d: read bytes wrong", i);
	return true;
}

static bool worker_run(struct worker *w)
{
	NDK_RESULT_EX res[32];
	uint64_t end;
	uint32_t k;
	int i, left;

	/* This thread is the only poster of its pairs' queues. */
	for (i = w->id; i < NPAIRS; i += NWORKERS) {
		struct qpair *q = &QPS[i];

		for (k = 0; k < NCHUNK; k++) {
			NDK_SGE s = sge(q->abuf + A_RECV + chunk_off(k),
					chunk_len(k), A.ltok);
			NTSTATUS st = q->a.qp->Dispatch->NdkReceive(
				q->a.qp, (PVOID)(uintptr_t)(CTX_A_RECV + k), &s,
				1);

			WCHECK(w, st == STATUS_SUCCESS, "pair %d: receive", i);
			s = sge(q->pbuf + P_RECV + chunk_off(k), chunk_len(k),
				P.ltok);
			st = q->p.qp->Dispatch->NdkReceive(
				q->p.qp, (PVOID)(uintptr_t)(CTX_P_RECV + k), &s,
				1);
			WCHECK(w, st == STATUS_SUCCESS, "pair %d: receive", i);
		}
	}
	/* Round robin over the pairs: their traffic interleaves. */
	for (k = 0; k < NCHUNK; k++)
		for (i = w->id; i < NPAIRS; i += NWORKERS)
			if (!pair_post(w, i, k))
				return false;
	end = tu_now_ms() + 4 * WAIT_MS;
	do {
		left = 0;
		for (i = w->id; i < NPAIRS; i += NWORKERS) {
			struct qpair *q = &QPS[i];
			ULONG n, j;

			n = q->acq->Dispatch->NdkGetCqResultsEx(q->acq, res,
								32);
			for (j = 0; j < n; j++)
				if (!pair_result(w, i, 'a', &res[j]))
					return false;
			n = q->pcq->Dispatch->NdkGetCqResultsEx(q->pcq, res,
								32);
			for (j = 0; j < n; j++)
				if (!pair_result(w, i, 'p', &res[j]))
					return false;
			left += !pair_done(q);
		}
		if (left)
			tu_sleep_ms(0);
	} while (left && tu_now_ms() < end);
	for (i = w->id; i < NPAIRS; i += NWORKERS) {
		struct qpair *q = &QPS[i];

		WCHECK(w, pair_done(q),
		       "pair %d: timed out: A %u/%u requests %u/%u receives, "
		       "P %u/%u requests %u/%u receives",
		       i, q->a_iq, 3 * NCHUNK, q->a_recv, NCHUNK, q->p_iq,
		       NCHUNK, q->p_recv, NCHUNK);
		if (!pair_verify(w, i))
			return false;
	}
	/* Exactly once: nothing more comes. */
	tu_sleep_ms(20);
	for (i = w->id; i < NPAIRS; i += NWORKERS) {
		struct qpair *q = &QPS[i];

		WCHECK(w,
		       !q->acq->Dispatch->NdkGetCqResultsEx(q->acq, res, 1) &&
			       !q->pcq->Dispatch->NdkGetCqResultsEx(q->pcq, res,
								    1),
		       "pair %d: an extra completion: ctx %p type %#x", i,
		       res[0].RequestContext, (unsigned int)res[0].Type);
	}
	return true;
}

static void *worker_main(void *arg)
{
	worker_run(arg);
	return NULL;
}

/* Hosts with room for every pair's slices; no QP yet. */
static int setup_many(void **state)
{
	dp_open((size_t)NPAIRS * SLICE);
	return 0;
}

/* A device that runs out of queue memory: a device limit, not a
 * failure (siw did before its no-key offset was covered, docs/verbs.md,
 * Devices). */
static void created(NTSTATUS st)
{
	cm_require(st != STATUS_INSUFFICIENT_RESOURCES ||
			   cm_provider_is(&srv, "software"),
		   "device memory for 16 pairs of queues");
	assert_int_equal(st, STATUS_SUCCESS);
}

static void test_many_qps(void **state)
{
	struct worker w[NWORKERS];
	int i;

	memset(QPS, 0, sizeof(QPS));
	for (i = 0; i < NPAIRS; i++) {
		struct qpair *q = &QPS[i];

		q->abuf = A.buf + (size_t)i * SLICE;
		q->pbuf = P.buf + (size_t)i * SLICE;
		/* Sources before the connections exist. */
		fill(q->abuf + A_SEND, XFER, 3 * (unsigned int)i);
		fill(q->abuf + A_WRITE, XFER, 3 * (unsigned int)i + 1);
		fill(q->pbuf + P_READ, XFER, 3 * (unsigned int)i + 2);
		fill(q->pbuf + P_SEND, XFER, 3 * (unsigned int)i + 77);
		created(cli.ad->Dispatch->NdkCreateCq(cli.ad, 128, on_cq_quiet,
						      NULL, NULL, NULL, NULL,
						      &q->acq));
		created(srv.ad->Dispatch->NdkCreateCq(srv.ad, 128, on_cq_quiet,
						      NULL, NULL, NULL, NULL,
						      &q->pcq));
		created(cli.pd->Dispatch->NdkCreateQp(cli.pd, q->acq, q->acq, q,
						      64, 64, 2, 2, 0, NULL,
						      NULL, &q->a.qp));
		created(srv.pd->Dispatch->NdkCreateQp(srv.pd, q->pcq, q->pcq, q,
						      64, 64, 2, 2, 0, NULL,
						      NULL, &q->p.qp));
		connect_sides(&q->a, &q->p);
	}
	for (i = 0; i < NWORKERS; i++) {
		w[i].id = i;
		w[i].err[0] = 0;
		assert_int_equal(
			pthread_create(&w[i].thread, NULL, worker_main, &w[i]),
			0);
	}
	for (i = 0; i < NWORKERS; i++)
		pthread_join(w[i].thread, NULL);
	for (i = 0; i < NWORKERS; i++)
		if (w[i].err[0])
			fail_msg("worker %d: %s", i, w[i].err);
	for (i = 0; i < NPAIRS; i++)
		if (atomic_load(&QPS[i].a.disc) || atomic_load(&QPS[i].p.disc))
			fail_msg("pair %d disconnected", i);
}

/*
 * A burst of connections needs hundreds of QPs: 256 with modest queues
 * (16 deep, one SGE), each with a CQ of its own, on one adapter; the
 * last one made connects and moves a Send each way.
 */
#define NBURST 256

static void test_hundreds_of_qps(void **state)
{
	static NDK_CQ *cqs[NBURST];
	static NDK_QP *qps[NBURST];
	NDK_RESULT_EX res[1];
	int i;

	for (i = 0; i < NBURST; i++) {
		assert_int_equal(cli.ad->Dispatch->NdkCreateCq(
					 cli.ad, 16, on_cq_quiet, NULL, NULL,
					 NULL, NULL, &cqs[i]),
				 STATUS_SUCCESS);
		assert_int_equal(cli.pd->Dispatch->NdkCreateQp(
					 cli.pd, cqs[i], cqs[i], NULL, 16, 16,
					 1, 1, 0, NULL, NULL, &qps[i]),
				 STATUS_SUCCESS);
	}
	A.qp = qps[NBURST - 1];
	P.qp = cm_qp(&srv);
	connect_sides(&A, &P);
	fill(A.buf, 64, 21);
	fill(P.buf + 4096, 64, 22);
	post_recv(P.qp, 1, P.buf, 64, P.ltok);
	post_recv(A.qp, 2, A.buf + 4096, 64, A.ltok);
	post_send(A.qp, 3, A.buf, 64, A.ltok, 0);
	post_send(P.qp, 4, P.buf + 4096, 64, P.ltok, 0);
	assert_int_equal(poll_cq(srv.cq, res, 1), 1);
	if ((uintptr_t)res[0].RequestContext == 1) {
		expect_received(&res[0], 1, P.buf, A.buf, 64);
		poll_one_ok(srv.cq, res, NdkOperationTypeSend);
	} else {
		expect_result(&res[0], 4, NdkOperationTypeSend, STATUS_SUCCESS);
		assert_int_equal(poll_cq(srv.cq, res, 1), 1);
		expect_received(&res[0], 1, P.buf, A.buf, 64);
	}
	assert_int_equal(poll_cq(cqs[NBURST - 1], res, 1), 1);
	if ((uintptr_t)res[0].RequestContext == 2) {
		expect_received(&res[0], 2, A.buf + 4096, P.buf + 4096, 64);
		poll_one_ok(cqs[NBURST - 1], res, NdkOperationTypeSend);
	} else {
		expect_result(&res[0], 3, NdkOperationTypeSend, STATUS_SUCCESS);
		assert_int_equal(poll_cq(cqs[NBURST - 1], res, 1), 1);
		expect_received(&res[0], 2, A.buf + 4096, P.buf + 4096, 64);
	}
	/* The adapters' close takes the rest (dp_teardown). */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_many_qps, setup_many,
						dp_teardown),
		cmocka_unit_test_setup_teardown(test_hundreds_of_qps,
						dp_setup_hosts, dp_teardown),
	};

	dp_set_env();
	return cmocka_run_group_tests_name("dp_many_qps", tests, NULL, NULL);
}
