/* SPDX-License-Identifier: MIT */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>
#include "dp_pair.h"
#include "testutil.h"

struct cm_host srv, cli;
struct side A, P;
struct tool_listener L;

VOID on_disc(PVOID ctx)
{
	atomic_fetch_add(&((struct side *)ctx)->disc, 1);
}

VOID on_disc_ex(PVOID ctx, ULONG reason)
{
	struct side *side = ctx;

	atomic_store(&side->disc_reason, reason);
	atomic_fetch_add(&side->disc, 1);
}

bool disc_seen(void *arg)
{
	return atomic_load(&((struct side *)arg)->disc) > 0;
}

NDK_MR *reg_range(NDK_PD *pd, void *p, size_t len, ULONG flags)
{
	NDK_MR *mr;
	PMDL mdl;

	assert_int_equal(pd->Dispatch->NdkCreateMr(pd, FALSE, NULL, NULL, &mr),
			 STATUS_SUCCESS);
	mdl = IoAllocateMdl(p, (ULONG)len, FALSE, FALSE, NULL);
	assert_non_null(mdl);
	assert_int_equal(
		mr->Dispatch->NdkRegisterMr(mr, mdl, len, flags, NULL, NULL),
		STATUS_SUCCESS);
	IoFreeMdl(mdl);
	return mr;
}

UINT32 local_mr_token(struct cm_host *h, void *p, size_t len)
{
	NDK_MR *mr = reg_range(h->pd, p, len, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);

	return mr->Dispatch->NdkGetLocalTokenFromMr(mr);
}

static void reg(struct cm_host *h, struct side *s, size_t len)
{
	s->len = len;
	s->buf = aligned_alloc(4096, len);
	assert_non_null(s->buf);
	memset(s->buf, 0, len);
	s->mr = reg_range(h->pd, s->buf, len,
			  NDK_MR_FLAG_ALLOW_LOCAL_WRITE |
				  NDK_MR_FLAG_ALLOW_REMOTE_READ |
				  NDK_MR_FLAG_ALLOW_REMOTE_WRITE);
	s->ltok = s->mr->Dispatch->NdkGetLocalTokenFromMr(s->mr);
	s->rtok = s->mr->Dispatch->NdkGetRemoteTokenFromMr(s->mr);
}

NDK_QP *big_qp(struct cm_host *h)
{
	/* Within what the device takes (siw: 80 inline bytes). */
	return cm_qp_sized(h, 256, MIN(4, h->info.MaxInitiatorRequestSge),
			   MIN(256, h->info.MaxInlineDataSize));
}

void connect_sides(struct side *a, struct side *p)
{
	struct cm_req r, acc;

	atomic_store(&a->disc, 0);
	atomic_store(&p->disc, 0);
	a->conn = cm_connector(&cli);
	assert_int_equal(cm_connect(a->conn, a->qp, (struct sockaddr *)&L.addr,
				    8, 8, NULL, 0, &r),
			 STATUS_PENDING);
	p->conn = cm_next_incoming(&L, WAIT_MS);
	assert_non_null(p->conn);
	cm_req_init(&acc);
	assert_int_equal(p->conn->Dispatch->NdkAccept(p->conn, p->qp, 8, 8,
						      NULL, 0, on_disc, p,
						      cm_req_done, &acc),
			 STATUS_PENDING);
	assert_int_equal(cm_req_wait(&r, WAIT_MS), STATUS_SUCCESS);
	assert_int_equal(a->conn->Dispatch->NdkCompleteConnect(a->conn, on_disc,
							       a, NULL, NULL),
			 STATUS_SUCCESS);
	assert_int_equal(cm_req_wait(&acc, WAIT_MS), STATUS_SUCCESS);
}

void dp_open(size_t buf_len)
{
	struct sockaddr_in any = cm_lo4(0);

	cm_hosts_open(&srv, &cli);
	memset(&A, 0, sizeof(A));
	memset(&P, 0, sizeof(P));
	reg(&cli, &A, buf_len);
	reg(&srv, &P, buf_len);
	assert_int_equal(cm_listen(&srv, &L, (struct sockaddr *)&any),
			 STATUS_SUCCESS);
}

void dp_connect(void)
{
	A.qp = big_qp(&cli);
	P.qp = big_qp(&srv);
	connect_sides(&A, &P);
}

void dp_set_env(void)
{
	unsetenv("NDK_MPA_CRC");
	setenv("NDK_RTR_NUDGE_MS", "0", 1);
}

int dp_setup_hosts(void **state)
{
	dp_open(8 << 20);
	return 0;
}

int dp_setup(void **state)
{
	dp_open(8 << 20);
	dp_connect();
	return 0;
}

int dp_teardown(void **state)
{
	cm_host_close(&cli);
	cm_host_close(&srv);
	free(A.buf);
	free(P.buf);
	return 0;
}

ULONG poll_cq(NDK_CQ *cq, NDK_RESULT_EX *res, ULONG n)
{
	ULONG got = 0;
	uint64_t end = tu_now_ms() + WAIT_MS;

	while (got < n && tu_now_ms() < end) {
		ULONG k =
			cq->Dispatch->NdkGetCqResultsEx(cq, res + got, n - got);

		if (!k)
			tu_sleep_ms(0);
		got += k;
	}
	return got;
}

void assert_cq_quiet(NDK_CQ *cq)
{
	NDK_RESULT_EX res[1];
	uint64_t end = tu_now_ms() + QUIET_MS;

	do {
		if (cq->Dispatch->NdkGetCqResultsEx(cq, res, 1))
			fail_msg("unexpected completion: ctx %p type %#x "
				 "status %#x",
				 res[0].RequestContext,
				 (unsigned int)res[0].Type,
				 (unsigned int)res[0].Status);
		tu_sleep_ms(1);
	} while (tu_now_ms() < end);
}

void fill(uint8_t *p, size_t len, unsigned int seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (uint8_t)(i * 31 + seed + (i >> 12));
}

void assert_all(const uint8_t *p, size_t len, uint8_t v, const char *what)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != v)
			fail_msg("%s: byte %zu is %#x, expected %#x", what, i,
				 p[i], v);
}

NDK_SGE sge(void *p, size_t len, UINT32 tok)
{
	NDK_SGE s = { .VirtualAddress = p,
		      .Length = (ULONG)len,
		      .MemoryRegionToken = tok };

	return s;
}

void post_recv(NDK_QP *qp, uintptr_t ctx, void *p, size_t len, UINT32 tok)
{
	NDK_SGE s = sge(p, len, tok);

	assert_int_equal(qp->Dispatch->NdkReceive(qp, (PVOID)ctx, &s, 1),
			 STATUS_SUCCESS);
}

void post_send(NDK_QP *qp, uintptr_t ctx, void *p, size_t len, UINT32 tok,
	       ULONG flags)
{
	NDK_SGE s = sge(p, len, tok);

	assert_int_equal(qp->Dispatch->NdkSend(qp, (PVOID)ctx, &s, 1, flags),
			 STATUS_SUCCESS);
}

void post_read_chunks(int n, size_t len)
{
	for (int i = 0; i < n; i++) {
		NDK_SGE s = sge(A.buf + i * len, len, A.ltok);

		assert_int_equal(A.qp->Dispatch->NdkRead(
					 A.qp, (PVOID)(intptr_t)i, &s, 1,
					 (UINT64)(uintptr_t)(P.buf + i * len),
					 P.rtok, 0),
				 STATUS_SUCCESS);
	}
}

void placed_by_send(void)
{
	NDK_RESULT_EX res[1];

	assert_int_equal(P.qp->Dispatch->NdkReceive(P.qp, NULL, NULL, 0),
			 STATUS_SUCCESS);
	assert_int_equal(A.qp->Dispatch->NdkSend(A.qp, NULL, NULL, 0,
						 NDK_OP_FLAG_SILENT_SUCCESS),
			 STATUS_SUCCESS);
	assert_int_equal(poll_cq(srv.cq, res, 1), 1);
}

void poll_one_ok(NDK_CQ *cq, NDK_RESULT_EX *res, NDK_OPERATION_TYPE type)
{
	assert_int_equal(poll_cq(cq, res, 1), 1);
	assert_int_equal(res->Status, STATUS_SUCCESS);
	assert_int_equal(res->Type, type);
}

void expect_result(const NDK_RESULT_EX *r, uintptr_t ctx,
		   NDK_OPERATION_TYPE type, NTSTATUS status)
{
	if (r->RequestContext != (PVOID)ctx || r->Type != type ||
	    r->Status != status)
		fail_msg("completion ctx %p type %#x status %#x, expected ctx "
			 "%#lx type %#x status %#x",
			 r->RequestContext, (unsigned int)r->Type,
			 (unsigned int)r->Status, (unsigned long)ctx,
			 (unsigned int)type, (unsigned int)status);
}

void expect_received(const NDK_RESULT_EX *r, uintptr_t ctx, const void *dst,
		     const void *src, size_t len)
{
	expect_result(r, ctx, NdkOperationTypeReceive, STATUS_SUCCESS);
	assert_int_equal(r->BytesTransferred, len);
	assert_memory_equal(dst, src, len);
}

void expect_results(NDK_CQ *cq, const struct want *want, ULONG n)
{
	NDK_RESULT_EX res[16];

	assert_true(n <= 16);
	assert_int_equal(poll_cq(cq, res, n), n);
	for (ULONG i = 0; i < n; i++)
		expect_result(&res[i], want[i].ctx, want[i].type,
			      want[i].status);
}

void disconnect(NDK_CONNECTOR *c)
{
	struct cm_req r;
	NTSTATUS st;

	cm_req_init(&r);
	st = c->Dispatch->NdkDisconnect(c, cm_req_done, &r);
	assert_int_equal(cm_req_result(st, &r, WAIT_MS), STATUS_SUCCESS);
}

uint64_t fr_base(uint8_t *mem, uint64_t base)
{
	return cm_device_is(&srv, "siw") ? (uint64_t)(uintptr_t)mem : base;
}

PMDL lam_of(uint8_t *mem, size_t len, union lam1 *u)
{
	PMDL mdl = IoAllocateMdl(mem, (ULONG)len, FALSE, FALSE, NULL);
	ULONG lam_size = sizeof(*u), fbo = 1;

	assert_non_null(mdl);
	assert_int_equal(srv.ad->Dispatch->NdkBuildLAM(srv.ad, mdl, len, NULL,
						       NULL, &u->lam, &lam_size,
						       &fbo),
			 STATUS_SUCCESS);
	assert_int_equal(fbo, 0);
	return mdl;
}

NDK_MR *fr_mr_create(ULONG pages)
{
	NDK_MR *fr;

	assert_int_equal(
		srv.pd->Dispatch->NdkCreateMr(srv.pd, TRUE, NULL, NULL, &fr),
		STATUS_SUCCESS);
	assert_int_equal(fr->Dispatch->NdkInitializeFastRegisterMr(
				 fr, pages, TRUE, NULL, NULL),
			 STATUS_SUCCESS);
	return fr;
}

NDK_MR *fast_register_page(union lam1 *u, uint64_t base, UINT32 *tok)
{
	NDK_MR *fr = fr_mr_create(1);

	assert_int_equal(P.qp->Dispatch->NdkFastRegister(
				 P.qp, (PVOID)1, fr, 1, u->lam.AdapterPageArray,
				 0, PAGE_SIZE, (PVOID)(uintptr_t)base,
				 NDK_OP_FLAG_ALLOW_REMOTE_WRITE),
			 STATUS_SUCCESS);
	*tok = fr->Dispatch->NdkGetRemoteTokenFromMr(fr);
	return fr;
}
