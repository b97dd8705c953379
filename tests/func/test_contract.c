/* SPDX-License-Identifier: MIT */
/*
 * The NDK consumer contract as one table (docs/ndk.md, Contract suite):
 * every row is a call, the state it is made in and the status docs/ndk.md
 * gives it, and runs against whichever provider serves the test
 * interface: the software provider on the host (make test), the verbs
 * provider on siw and rxe in the interop guest (verbs-guest.sh). A row
 * expects what the software provider does, the reference; it may expect
 * otherwise only where the adapter announces it in NDK_ADAPTER_INFO: a
 * limit (no memory windows, no SRQ, the IB CM's private data areas), from
 * which the expectation is computed, or one of libndk's AdapterFlags for
 * what a device does otherwise (announced[] below), whose outcome the
 * row then expects exactly. Nothing is skipped.
 *
 * Each row prints "contract: PASS|FAIL name expected X got Y" and is one
 * cmocka test; main prints "contract: N rows, P passed (A as the adapter
 * announces), F failed".
 *
 * Rows of one state share a fixture (two connectors, their QPs and CQs)
 * until a row changes the state (consumes) or fails; then the next row
 * builds a new one. A fixture that cannot be built fails its rows with
 * "setup failed: ...".
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cmutil.h"
#include "testutil.h"

#ifdef __SANITIZE_THREAD__
#define WAIT_MS 30000 /* for what must happen (TSan is slow) */
#else
#define WAIT_MS 5000 /* for what must happen */
#endif
#define QUIET_MS  300 /* how long "nothing happens" is watched */
#define SETTLE_MS 200 /* for a peer's close to arrive */
/* NDK_CM_TIMEOUT_MS of the timed-out fixture */
#define TIMEOUT_MS     1000
#define TIMEOUT_MS_STR "1000"
#define BUF_LEN	       65536
#define NONE	       ((NTSTATUS)-1) /* no completion came */

static struct cm_host srv, cli;
static struct tool_listener L;

/* A registered buffer per host (local write, remote read and write). */
struct buf {
	uint8_t *mem;
	NDK_MR *mr;
	UINT32 ltok, rtok;
};
static struct buf abuf, pbuf;

/* ------------------------------------------------------------------ */
/* Fixtures                                                           */

enum fx_state {
	FX_NONE, /* no connection: create-time rows */
	FX_IDLE,
	FX_CONNECTING,
	FX_REPLIED,
	FX_REQUESTED,
	FX_ACCEPTING,
	FX_ESTABLISHED_ACTIVE,
	FX_ESTABLISHED_PASSIVE,
	FX_PEER_CLOSED,
	FX_DISCONNECTING,
	FX_REFUSED,
	FX_ABANDONED,
	FX_TIMED_OUT,
	FX_REQUEST_ABANDONED,
	FX_CLOSED,
	FX_READ_LIMITS, /* arg: the pair */
	FX_PRIVATE_DATA, /* arg: 0 the maxima, 1 five bytes */
	FX_DATAPATH, /* arg: 1 for a passive CQ of depth 1 */
	FX_AFTER_ERROR,
};

struct side {
	atomic_int disc;
	atomic_uint reason;
};

struct notif {
	atomic_int n;
	atomic_int status;
};

struct fx {
	enum fx_state state;
	int arg;
	bool intact;
	char err[128];
	NDK_CONNECTOR *a, *p; /* active (cli), passive (srv) */
	NDK_CONNECTOR *subject, *other;
	struct cm_host *subject_host;
	struct side as, ps;
	struct side *subject_side, *other_side;
	NDK_CQ *acq, *pcq;
	struct notif an, pn;
	NDK_QP *aqp, *pqp;
	struct cm_req conn, acc, adisc, pdisc;
	struct cm_req extra[32];
	int nextra;
	/* What the build saw, for the rows that report it. */
	NTSTATUS conn_st, acc_st, read_st;
	ULONG lim[3][2];
	NTSTATUS lim_st[3];
	char pdata[2][96];
	/* Closed at teardown: connectors first, then the rest backwards. */
	NDK_OBJECT_HEADER *conns[32], *objs[64];
	int nconns, nobjs;
};

static struct fx cur;
static int rows_passed;

static VOID on_disc(PVOID ctx)
{
	atomic_fetch_add(&((struct side *)ctx)->disc, 1);
}

static VOID on_disc_ex(PVOID ctx, ULONG reason)
{
	struct side *s = ctx;

	atomic_store(&s->reason, reason);
	atomic_fetch_add(&s->disc, 1);
}

static VOID on_notify(PVOID ctx, NTSTATUS status)
{
	struct notif *n = ctx;

	atomic_store(&n->status, status);
	atomic_fetch_add(&n->n, 1);
}

static bool wait_disc(struct side *s, unsigned int ms)
{
	uint64_t end = tu_now_ms() + ms;

	while (!atomic_load(&s->disc) && tu_now_ms() < end)
		tu_sleep_ms(1);
	return atomic_load(&s->disc) > 0;
}

static bool fx_fail(struct fx *f, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static bool fx_fail(struct fx *f, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(f->err, sizeof(f->err), fmt, ap);
	va_end(ap);
	return false;
}

static struct cm_req *fx_req(struct fx *f)
{
	struct cm_req *r = &f->extra[f->nextra++ % 32];

	cm_req_init(r);
	return r;
}

static void track_conn(struct fx *f, NDK_CONNECTOR *c)
{
	if (c && f->nconns < 32)
		f->conns[f->nconns++] = &c->Header;
}

static void track(struct fx *f, NDK_OBJECT_HEADER *o)
{
	if (o && f->nobjs < 64)
		f->objs[f->nobjs++] = o;
}

/* Closes any object and waits for its close to complete. */
static void close_wait(NDK_OBJECT_HEADER *o)
{
	const struct {
		NDK_OBJECT_HEADER h;
		const NDK_FN_CLOSE_OBJECT *d;
	} *any = (const void *)o;
	struct tool_wait *w = malloc(sizeof(*w));
	NTSTATUS st;

	assert_non_null(w);
	tool_wait_init(w);
	st = any->d[0](o, tool_wait_closed, w);
	if (tool_wait_result(w, st, WAIT_MS) == STATUS_IO_TIMEOUT) {
		/* The callback may still come: w stays allocated for it. */
		printf("contract: a close did not complete within %d ms\n",
		       WAIT_MS);
		return;
	}
	free(w);
}

static void close_conn(struct fx *f, NDK_CONNECTOR *c)
{
	for (int i = 0; i < f->nconns; i++)
		if (f->conns[i] == &c->Header)
			f->conns[i] = NULL;
	close_wait(&c->Header);
}

static void fx_teardown(struct fx *f)
{
	NDK_CONNECTOR *c;
	int i;

	for (i = 0; i < f->nconns; i++)
		if (f->conns[i])
			close_wait(f->conns[i]);
	for (i = f->nobjs - 1; i >= 0; i--)
		close_wait(f->objs[i]);
	/* Connect events nobody took. */
	while ((c = cm_next_incoming(&L, 1)))
		close_wait(&c->Header);
	memset(f, 0, sizeof(*f));
}

static NDK_CQ *new_cq(struct fx *f, struct cm_host *h, ULONG depth,
		      struct notif *n)
{
	NDK_CQ *cq = NULL;

	if (h->ad->Dispatch->NdkCreateCq(h->ad, depth, on_notify, n, NULL, NULL,
					 NULL, &cq))
		return NULL;
	track(f, &cq->Header);
	return cq;
}

/* A QP on h with its fixture CQ: 64 deep, 1 SGE, no inline data. */
static NDK_QP *new_qp(struct fx *f, struct cm_host *h)
{
	NDK_CQ *cq = h == &cli ? f->acq : f->pcq;
	NDK_QP *qp = NULL;

	if (h->pd->Dispatch->NdkCreateQp(h->pd, cq, cq, f, 64, 64, 1, 1, 0,
					 NULL, NULL, &qp))
		return NULL;
	track(f, &qp->Header);
	return qp;
}

static NDK_CONNECTOR *new_conn(struct fx *f, struct cm_host *h)
{
	NDK_CONNECTOR *c = NULL;

	if (h->ad->Dispatch->NdkCreateConnector(h->ad, NULL, NULL, &c))
		return NULL;
	track_conn(f, c);
	return c;
}

static bool fx_cqs(struct fx *f, ULONG pdepth)
{
	f->acq = new_cq(f, &cli, 64, &f->an);
	f->pcq = new_cq(f, &srv, pdepth, &f->pn);
	return (f->acq && f->pcq) || fx_fail(f, "NdkCreateCq failed");
}

/* a connects to L; p is the connector of the ConnectEvent. */
static bool fx_connect(struct fx *f, ULONG ird, ULONG ord, const void *pd,
		       ULONG pdlen)
{
	NTSTATUS st;

	f->a = new_conn(f, &cli);
	f->aqp = new_qp(f, &cli);
	if (!f->a || !f->aqp)
		return fx_fail(f, "connector or QP");
	st = cm_connect(f->a, f->aqp, (struct sockaddr *)&L.addr, ird, ord,
			(PVOID)pd, pdlen, &f->conn);
	if (st != STATUS_PENDING)
		return fx_fail(f, "NdkConnect: %s", NdkStatusName(st));
	f->p = cm_next_incoming(&L, WAIT_MS);
	if (!f->p) {
		/* What became of the Connect says where the request went. */
		st = cm_req_wait(&f->conn, 1);
		cm_dump_threads("no ConnectEvent");
		return fx_fail(f, "no ConnectEvent (Connect: %s)",
			       st == (NTSTATUS)-1 ? "pending"
						  : NdkStatusName(st));
	}
	track_conn(f, f->p);
	return true;
}

static bool fx_accept(struct fx *f, ULONG ird, ULONG ord, const void *pd,
		      ULONG pdlen)
{
	NTSTATUS st;

	f->pqp = new_qp(f, &srv);
	if (!f->pqp)
		return fx_fail(f, "passive QP");
	cm_req_init(&f->acc);
	st = f->p->Dispatch->NdkAcceptEx(f->p, f->pqp, ird, ord, (PVOID)pd,
					 pdlen, on_disc_ex, &f->ps, cm_req_done,
					 &f->acc);
	if (st != STATUS_PENDING)
		return fx_fail(f, "NdkAcceptEx: %s", NdkStatusName(st));
	return true;
}

static bool fx_replied(struct fx *f)
{
	NTSTATUS st = cm_req_wait(&f->conn, WAIT_MS);

	if (st != STATUS_SUCCESS)
		return fx_fail(f, "Connect completion: %s", NdkStatusName(st));
	return true;
}

static bool fx_complete(struct fx *f)
{
	NTSTATUS st = f->a->Dispatch->NdkCompleteConnectEx(f->a, on_disc_ex,
							   &f->as, NULL, NULL);

	if (st != STATUS_SUCCESS)
		return fx_fail(f, "NdkCompleteConnectEx: %s",
			       NdkStatusName(st));
	st = cm_req_wait(&f->acc, WAIT_MS);
	if (st != STATUS_SUCCESS)
		return fx_fail(f, "Accept completion: %s", NdkStatusName(st));
	return true;
}

/* Connected: Connect and Accept completed (IRD/ORD 4), "ping" sent. */
static bool fx_established(struct fx *f)
{
	return fx_connect(f, 4, 4, "ping", 4) && fx_accept(f, 4, 4, NULL, 0) &&
	       fx_replied(f) && fx_complete(f);
}

static void get_limits(NDK_CONNECTOR *c, ULONG *lim, NTSTATUS *st)
{
	ULONG len = 0;

	*st = c->Dispatch->NdkGetConnectionData(c, &lim[0], &lim[1], NULL,
						&len);
}

/* The private data of c as "STATUS rds=N data ok|bad". */
static void get_pdata(NDK_CONNECTOR *c, const uint8_t *want, ULONG wlen,
		      char *out, size_t n)
{
	uint8_t buf[512];
	ULONG len = sizeof(buf), i;
	NTSTATUS st =
		c->Dispatch->NdkGetConnectionData(c, NULL, NULL, buf, &len);
	bool ok =
		st == STATUS_SUCCESS && len >= wlen && !memcmp(buf, want, wlen);

	for (i = wlen; ok && i < len && i < sizeof(buf); i++)
		ok = !buf[i];
	snprintf(out, n, "%s rds=%lu data %s", NdkStatusName(st),
		 (unsigned long)len, ok ? "ok" : "bad");
}

static const ULONG rl_pairs[][4] = {
	/* active IRD, ORD; passive IRD, ORD */
	{ 8, 8, 8, 8 },
	{ 4, 2, 1, 8 },
	{ 2, 6, 5, 3 },
	{ 0, 3, 3, 0 },
	{ 1000, 1000, 1000, 1000 },
};

static uint8_t pd_pattern[512];

static bool fx_build_datapath(struct fx *f)
{
	return fx_cqs(f, f->arg ? 1 : 64) && fx_established(f);
}

/* A Read with a bad key fails; both ends hear of it. */
static bool fx_build_after_error(struct fx *f)
{
	NDK_SGE s = { .VirtualAddress = abuf.mem,
		      .Length = 64,
		      .MemoryRegionToken = abuf.ltok };
	NDK_RESULT_EX res;
	uint64_t end;
	NTSTATUS st;

	if (!fx_build_datapath(f))
		return false;
	st = f->aqp->Dispatch->NdkRead(f->aqp, (PVOID)0xe1, &s, 1,
				       (UINT64)(uintptr_t)pbuf.mem,
				       pbuf.rtok ^ 0x5a, 0);
	if (st != STATUS_SUCCESS)
		return fx_fail(f, "NdkRead: %s", NdkStatusName(st));
	f->read_st = NONE;
	end = tu_now_ms() + WAIT_MS;
	while (f->read_st == NONE && tu_now_ms() < end) {
		if (f->acq->Dispatch->NdkGetCqResultsEx(f->acq, &res, 1) &&
		    res.RequestContext == (PVOID)0xe1)
			f->read_st = res.Status;
		else
			tu_sleep_ms(1);
	}
	wait_disc(&f->as, WAIT_MS);
	wait_disc(&f->ps, WAIT_MS);
	return true;
}

static bool fx_build(struct fx *f)
{
	const ULONG *rl;
	NTSTATUS st;

	if (f->state == FX_DATAPATH)
		return fx_build_datapath(f);
	if (f->state == FX_AFTER_ERROR)
		return fx_build_after_error(f);
	if (!fx_cqs(f, 64))
		return false;
	f->subject_host = &cli;
	switch (f->state) {
	case FX_IDLE:
		f->a = new_conn(f, &cli);
		return f->a || fx_fail(f, "NdkCreateConnector");
	case FX_CONNECTING:
	case FX_REQUESTED:
		return fx_connect(f, 4, 4, "ping", 4);
	case FX_REPLIED:
	case FX_ACCEPTING:
		return fx_connect(f, 4, 4, "ping", 4) &&
		       fx_accept(f, 4, 4, NULL, 0) && fx_replied(f);
	case FX_ESTABLISHED_ACTIVE:
	case FX_ESTABLISHED_PASSIVE:
		return fx_established(f);
	case FX_PEER_CLOSED:
		if (!fx_established(f))
			return false;
		cm_req_init(&f->pdisc);
		st = f->p->Dispatch->NdkDisconnect(f->p, cm_req_done,
						   &f->pdisc);
		if (st != STATUS_PENDING)
			return fx_fail(f, "peer's NdkDisconnect: %s",
				       NdkStatusName(st));
		return wait_disc(&f->as, WAIT_MS) ||
		       fx_fail(f, "no disconnect event");
	case FX_DISCONNECTING:
		if (!fx_established(f))
			return false;
		cm_req_init(&f->adisc);
		st = f->a->Dispatch->NdkDisconnect(f->a, cm_req_done,
						   &f->adisc);
		return st == STATUS_PENDING ||
		       fx_fail(f, "NdkDisconnect: %s", NdkStatusName(st));
	case FX_REFUSED:
		if (!fx_connect(f, 4, 4, "ping", 4))
			return false;
		st = f->p->Dispatch->NdkReject(f->p, (PVOID) "go away", 7);
		if (st != STATUS_SUCCESS)
			return fx_fail(f, "NdkReject: %s", NdkStatusName(st));
		f->conn_st = cm_req_wait(&f->conn, WAIT_MS);
		return true;
	case FX_ABANDONED:
		if (!fx_connect(f, 4, 4, "ping", 4) ||
		    !fx_accept(f, 4, 4, NULL, 0) || !fx_replied(f))
			return false;
		close_conn(f, f->p);
		f->p = NULL;
		f->acc_st = cm_req_wait(&f->acc, WAIT_MS);
		tu_sleep_ms(SETTLE_MS);
		return true;
	case FX_TIMED_OUT:
		if (!fx_connect(f, 4, 4, "ping", 4))
			return false;
		/* Read when the Accept arms its timer. */
		setenv("NDK_CM_TIMEOUT_MS", TIMEOUT_MS_STR, 1);
		if (!fx_accept(f, 4, 4, NULL, 0) || !fx_replied(f)) {
			unsetenv("NDK_CM_TIMEOUT_MS");
			return false;
		}
		f->acc_st = cm_req_wait(&f->acc, 3 * TIMEOUT_MS + WAIT_MS);
		unsetenv("NDK_CM_TIMEOUT_MS");
		tu_sleep_ms(SETTLE_MS);
		return true;
	case FX_REQUEST_ABANDONED:
		if (!fx_connect(f, 4, 4, "ping", 4))
			return false;
		close_conn(f, f->a);
		f->a = NULL;
		f->conn_st = cm_req_wait(&f->conn, WAIT_MS);
		tu_sleep_ms(SETTLE_MS);
		return true;
	case FX_CLOSED: {
		NDK_SGE s = { .VirtualAddress = abuf.mem,
			      .Length = 64,
			      .MemoryRegionToken = abuf.ltok };

		if (!fx_established(f))
			return false;
		st = f->aqp->Dispatch->NdkReceive(f->aqp, (PVOID)0xc1, &s, 1);
		if (st != STATUS_SUCCESS)
			return fx_fail(f, "NdkReceive: %s", NdkStatusName(st));
		cm_req_init(&f->adisc);
		st = f->a->Dispatch->NdkDisconnect(f->a, cm_req_done,
						   &f->adisc);
		if (st != STATUS_PENDING)
			return fx_fail(f, "NdkDisconnect: %s",
				       NdkStatusName(st));
		if (!wait_disc(&f->ps, WAIT_MS))
			return fx_fail(f, "no disconnect event at the peer");
		cm_req_init(&f->pdisc);
		f->p->Dispatch->NdkDisconnect(f->p, cm_req_done, &f->pdisc);
		st = cm_req_wait(&f->adisc, WAIT_MS);
		return st == STATUS_SUCCESS ||
		       fx_fail(f, "Disconnect completion: %s",
			       NdkStatusName(st));
	}
	case FX_READ_LIMITS:
		rl = rl_pairs[f->arg];
		if (!fx_connect(f, rl[0], rl[1], NULL, 0))
			return false;
		get_limits(f->p, f->lim[0], &f->lim_st[0]);
		if (!fx_accept(f, rl[2], rl[3], NULL, 0) || !fx_replied(f))
			return false;
		get_limits(f->a, f->lim[1], &f->lim_st[1]);
		if (!fx_complete(f))
			return false;
		get_limits(f->p, f->lim[2], &f->lim_st[2]);
		return true;
	case FX_PRIVATE_DATA: {
		ULONG clen = f->arg ? 5 : cli.info.MaxCallerData;
		ULONG alen = f->arg ? 5 : srv.info.MaxCalleeData;

		if (!fx_connect(f, 4, 4, pd_pattern, clen))
			return false;
		get_pdata(f->p, pd_pattern, clen, f->pdata[0],
			  sizeof(f->pdata[0]));
		if (!fx_accept(f, 4, 4, pd_pattern + 1, alen) || !fx_replied(f))
			return false;
		get_pdata(f->a, pd_pattern + 1, alen, f->pdata[1],
			  sizeof(f->pdata[1]));
		return fx_complete(f);
	}
	default:
		return fx_fail(f, "no such fixture");
	}
}

/* The subject of the connector rows: passive for the passive states. */
static void fx_subject(struct fx *f)
{
	bool passive = f->state == FX_REQUESTED || f->state == FX_ACCEPTING ||
		       f->state == FX_ESTABLISHED_PASSIVE ||
		       f->state == FX_REQUEST_ABANDONED;

	f->subject = passive ? f->p : f->a;
	f->other = passive ? f->a : f->p;
	f->subject_host = passive ? &srv : &cli;
	f->subject_side = passive ? &f->ps : &f->as;
	f->other_side = passive ? &f->as : &f->ps;
}

static struct fx *fx_get(enum fx_state state, int arg)
{
	if (cur.state == state && cur.arg == arg && cur.intact)
		return &cur;
	fx_teardown(&cur);
	cur.state = state;
	cur.arg = arg;
	cur.conn_st = cur.acc_st = cur.read_st = NONE;
	fx_build(&cur);
	fx_subject(&cur);
	return &cur;
}

/* ------------------------------------------------------------------ */
/* Rows                                                               */

enum call {
	CALL_Connect,
	CALL_ConnectWithSharedEndpoint,
	CALL_CompleteConnect,
	CALL_CompleteConnectEx,
	CALL_Accept,
	CALL_AcceptEx,
	CALL_Reject,
	CALL_GetConnectionData,
	CALL_GetLocalAddress,
	CALL_GetPeerAddress,
	CALL_Disconnect,
};

struct row;
typedef void (*row_fn)(struct fx *f, const struct row *r, char *got, size_t n);
/* Expectations computed from NDK_ADAPTER_INFO: into exp (and alt). */
typedef void (*expect_fn)(const struct row *r, char *exp, char *alt, size_t n);

struct row {
	const char *name;
	enum fx_state state;
	int arg;
	row_fn fn;
	int call;
	NTSTATUS exp, done; /* inline; the completion after STATUS_PENDING */
	expect_fn expect;
	bool consumes; /* changes the fixture's state when it passes */
	int side; /* 1: the passive side's (AFTER_ERROR rows) */
};

static const char *st_name(NTSTATUS st)
{
	return st == NONE ? "none" : NdkStatusName(st);
}

/* "inline" or "inline/completion". */
static void fmt_st(char *out, size_t n, NTSTATUS st, NTSTATUS done)
{
	if (st == STATUS_PENDING)
		snprintf(out, n, "%s/%s", st_name(st), st_name(done));
	else
		snprintf(out, n, "%s", st_name(st));
}

/* The other side of a connect or accept the subject started. */
static NTSTATUS finish_connect(struct fx *f, struct cm_req *r)
{
	NDK_CONNECTOR *in = cm_next_incoming(&L, WAIT_MS);
	NDK_QP *qp;
	NTSTATUS st;

	if (!in)
		return cm_req_wait(r, QUIET_MS);
	track_conn(f, in);
	qp = new_qp(f, &srv);
	if (!qp)
		return cm_req_wait(r, QUIET_MS);
	in->Dispatch->NdkAccept(in, qp, 4, 4, NULL, 0, NULL, NULL, cm_req_done,
				fx_req(f));
	st = cm_req_wait(r, WAIT_MS);
	if (st == STATUS_SUCCESS)
		f->subject->Dispatch->NdkCompleteConnect(f->subject, NULL, NULL,
							 NULL, NULL);
	return st;
}

static NTSTATUS finish_accept(struct fx *f, struct cm_req *r)
{
	if (f->other && cm_req_wait(&f->conn, WAIT_MS) == STATUS_SUCCESS)
		f->other->Dispatch->NdkCompleteConnectEx(
			f->other, on_disc_ex, f->other_side, NULL, NULL);
	return cm_req_wait(r, WAIT_MS);
}

static NTSTATUS finish_disconnect(struct fx *f, struct cm_req *r)
{
	if (f->other && wait_disc(f->other_side, WAIT_MS))
		f->other->Dispatch->NdkDisconnect(f->other, cm_req_done,
						  fx_req(f));
	return cm_req_wait(r, WAIT_MS);
}

/* The row's call on the fixture's subject, with good arguments. */
static void row_call(struct fx *f, const struct row *r, char *got, size_t n)
{
	NDK_CONNECTOR *c = f->subject;
	struct cm_host *h = f->subject_host;
	struct cm_req *req = fx_req(f);
	struct sockaddr_storage ss;
	ULONG ird, ord, len = sizeof(ss);
	NTSTATUS st, done = NONE;
	NDK_SHARED_ENDPOINT *sep;
	struct sockaddr_in any = cm_lo4(0);
	NDK_QP *qp;

	switch (r->call) {
	case CALL_Connect:
		qp = new_qp(f, h);
		st = cm_connect(c, qp, (struct sockaddr *)&L.addr, 4, 4, NULL,
				0, req);
		if (st == STATUS_PENDING)
			done = finish_connect(f, req);
		break;
	case CALL_ConnectWithSharedEndpoint:
		qp = new_qp(f, h);
		st = h->ad->Dispatch->NdkCreateSharedEndpoint(
			h->ad, (PSOCKADDR)&any, sizeof(any), NULL, NULL, &sep);
		if (st) {
			snprintf(got, n, "NdkCreateSharedEndpoint: %s",
				 NdkStatusName(st));
			return;
		}
		track(f, &sep->Header);
		st = c->Dispatch->NdkConnectWithSharedEndpoint(
			c, qp, sep, (PSOCKADDR)&L.addr,
			sizeof(struct sockaddr_in), 4, 4, NULL, 0, cm_req_done,
			req);
		if (st == STATUS_PENDING)
			done = finish_connect(f, req);
		break;
	case CALL_CompleteConnect:
		st = c->Dispatch->NdkCompleteConnect(
			c, on_disc, f->subject_side, NULL, NULL);
		break;
	case CALL_CompleteConnectEx:
		st = c->Dispatch->NdkCompleteConnectEx(
			c, on_disc_ex, f->subject_side, NULL, NULL);
		break;
	case CALL_Accept:
	case CALL_AcceptEx:
		qp = new_qp(f, h);
		if (r->call == CALL_Accept)
			st = c->Dispatch->NdkAccept(c, qp, 4, 4, NULL, 0,
						    on_disc, f->subject_side,
						    cm_req_done, req);
		else
			st = c->Dispatch->NdkAcceptEx(
				c, qp, 4, 4, NULL, 0, on_disc_ex,
				f->subject_side, cm_req_done, req);
		if (st == STATUS_PENDING)
			done = finish_accept(f, req);
		break;
	case CALL_Reject:
		st = c->Dispatch->NdkReject(c, NULL, 0);
		break;
	case CALL_GetConnectionData:
		len = 0;
		st = c->Dispatch->NdkGetConnectionData(c, &ird, &ord, NULL,
						       &len);
		break;
	case CALL_GetLocalAddress:
		st = c->Dispatch->NdkGetLocalAddress(c, (PSOCKADDR)&ss, &len);
		break;
	case CALL_GetPeerAddress:
		st = c->Dispatch->NdkGetPeerAddress(c, (PSOCKADDR)&ss, &len);
		break;
	case CALL_Disconnect:
		st = c->Dispatch->NdkDisconnect(c, cm_req_done, req);
		if (st == STATUS_PENDING)
			done = finish_disconnect(f, req);
		break;
	default:
		snprintf(got, n, "no such call");
		return;
	}
	fmt_st(got, n, st, done);
}

/* What the build recorded. */
static void row_conn_st(struct fx *f, const struct row *r, char *got, size_t n)
{
	fmt_st(got, n, f->conn_st, NONE);
}

static void row_acc_st(struct fx *f, const struct row *r, char *got, size_t n)
{
	fmt_st(got, n, f->acc_st, NONE);
}

static void row_accept_waits(struct fx *f, const struct row *r, char *got,
			     size_t n)
{
	NTSTATUS st = cm_req_wait(&f->acc, QUIET_MS);

	snprintf(got, n, "%s", st == NONE ? "pending" : st_name(st));
}

/* CompleteConnect (r->call) or Reject by the active side, then the
 * passive side's Accept completion. */
static void row_peer_accept(struct fx *f, const struct row *r, char *got,
			    size_t n)
{
	NTSTATUS st = r->call == CALL_Reject
			      ? f->a->Dispatch->NdkReject(f->a, NULL, 0)
			      : f->a->Dispatch->NdkCompleteConnectEx(
					f->a, on_disc_ex, &f->as, NULL, NULL);

	snprintf(got, n, "%s, Accept %s", st_name(st),
		 st_name(cm_req_wait(&f->acc, WAIT_MS)));
}

static void row_disc_reason(struct fx *f, const struct row *r, char *got,
			    size_t n)
{
	struct side *s = r->side ? &f->ps : &f->as;

	if (!atomic_load(&s->disc))
		snprintf(got, n, "no event");
	else
		snprintf(got, n, "%s",
			 NdkStatusName((NTSTATUS)atomic_load(&s->reason)));
}

static void row_reject_data(struct fx *f, const struct row *r, char *got,
			    size_t n)
{
	char buf[512];
	ULONG len = sizeof(buf);
	NTSTATUS st = f->a->Dispatch->NdkGetConnectionData(f->a, NULL, NULL,
							   buf, &len);

	snprintf(got, n, "%s%s", NdkStatusName(st),
		 st == STATUS_SUCCESS && len >= 7 && !memcmp(buf, "go away", 7)
			 ? ""
			 : " (other data)");
}

/* The result of ctx on cq within ms, or NONE; others are dropped. */
static NTSTATUS poll_ctx(NDK_CQ *cq, PVOID ctx, unsigned int ms)
{
	uint64_t end = tu_now_ms() + ms;
	NDK_RESULT_EX res;

	do {
		while (cq->Dispatch->NdkGetCqResultsEx(cq, &res, 1))
			if (res.RequestContext == ctx)
				return res.Status;
		tu_sleep_ms(1);
	} while (tu_now_ms() < end);
	return NONE;
}

static void row_receive_flushed(struct fx *f, const struct row *r, char *got,
				size_t n)
{
	fmt_st(got, n, poll_ctx(f->acq, (PVOID)0xc1, WAIT_MS), NONE);
}

static void row_connect_no_listener(struct fx *f, const struct row *r,
				    char *got, size_t n)
{
	struct sockaddr_in sin = cm_lo4(0);
	ULONG len = sizeof(sin);
	NDK_SHARED_ENDPOINT *sep;
	struct cm_req *req = fx_req(f);
	NTSTATUS st;

	/* A port bound by a shared endpoint, and nobody listens on it. */
	st = srv.ad->Dispatch->NdkCreateSharedEndpoint(
		srv.ad, (PSOCKADDR)&sin, sizeof(sin), NULL, NULL, &sep);
	if (st) {
		snprintf(got, n, "NdkCreateSharedEndpoint: %s",
			 NdkStatusName(st));
		return;
	}
	track(f, &sep->Header);
	sep->Dispatch->NdkGetLocalAddress(sep, (PSOCKADDR)&sin, &len);
	st = cm_connect(f->a, new_qp(f, &cli), (struct sockaddr *)&sin, 4, 4,
			NULL, 0, req);
	fmt_st(got, n, st,
	       st == STATUS_PENDING ? cm_req_wait(req, WAIT_MS) : NONE);
}

static VOID on_connect_event(PVOID ctx, NDK_CONNECTOR *c)
{
}

/* A paused listener refuses (NDK_FN_CONTROL_CONNECT_EVENTS). */
static void row_connect_paused(struct fx *f, const struct row *r, char *got,
			       size_t n)
{
	struct sockaddr_in sin = cm_lo4(0);
	ULONG len = sizeof(sin);
	struct cm_req *req = fx_req(f);
	NDK_LISTENER *lis;
	NTSTATUS st;

	st = srv.ad->Dispatch->NdkCreateListener(srv.ad, on_connect_event, NULL,
						 NULL, NULL, &lis);
	if (st) {
		snprintf(got, n, "NdkCreateListener: %s", NdkStatusName(st));
		return;
	}
	track(f, &lis->Header);
	st = lis->Dispatch->NdkListen(lis, (PSOCKADDR)&sin, sizeof(sin), NULL,
				      NULL);
	if (!st)
		st = lis->Dispatch->NdkGetLocalAddress(lis, (PSOCKADDR)&sin,
						       &len);
	if (st) {
		snprintf(got, n, "NdkListen: %s", NdkStatusName(st));
		return;
	}
	lis->Dispatch->NdkControlConnectEvents(lis, TRUE);
	st = cm_connect(f->a, new_qp(f, &cli), (struct sockaddr *)&sin, 4, 4,
			NULL, 0, req);
	fmt_st(got, n, st,
	       st == STATUS_PENDING ? cm_req_wait(req, WAIT_MS) : NONE);
}

/* Two connectors of one shared endpoint to one destination
 * (docs/ndk.md, Endpoints). */
static void row_tuple_exists(struct fx *f, const struct row *r, char *got,
			     size_t n)
{
	struct sockaddr_in any = cm_lo4(0);
	NDK_CONNECTOR *c2 = new_conn(f, &cli);
	NDK_SHARED_ENDPOINT *sep;
	struct cm_req *req;
	NTSTATUS st;

	st = cli.ad->Dispatch->NdkCreateSharedEndpoint(
		cli.ad, (PSOCKADDR)&any, sizeof(any), NULL, NULL, &sep);
	if (st || !c2) {
		snprintf(got, n, "NdkCreateSharedEndpoint: %s",
			 NdkStatusName(st));
		return;
	}
	track(f, &sep->Header);
	st = f->a->Dispatch->NdkConnectWithSharedEndpoint(
		f->a, new_qp(f, &cli), sep, (PSOCKADDR)&L.addr,
		sizeof(struct sockaddr_in), 4, 4, NULL, 0, cm_req_done,
		fx_req(f));
	if (st != STATUS_PENDING) {
		snprintf(got, n, "first: %s", NdkStatusName(st));
		return;
	}
	req = fx_req(f);
	st = c2->Dispatch->NdkConnectWithSharedEndpoint(
		c2, new_qp(f, &cli), sep, (PSOCKADDR)&L.addr,
		sizeof(struct sockaddr_in), 4, 4, NULL, 0, cm_req_done, req);
	fmt_st(got, n, st,
	       st == STATUS_PENDING ? cm_req_wait(req, WAIT_MS) : NONE);
	/*
	 * The first request is taken before the teardown closes its
	 * initiator: siw drops its listening socket (L's, for every row
	 * after) when a connection closes before its CM accepted it
	 * (docs/verbs.md, Devices).
	 */
	track_conn(f, cm_next_incoming(&L, WAIT_MS));
}

/* Arguments the row's call refuses inline (r->arg says which). */
enum { ARG_PD_OVER_MAX, ARG_PD_MAX, ARG_NULL_QP, ARG_NULL_BUF, ARG_SMALL_BUF };

static void row_args(struct fx *f, const struct row *r, char *got, size_t n)
{
	static uint8_t pd[1024];
	NDK_CONNECTOR *c = f->subject;
	ULONG over = f->subject_host->info.MaxCalleeData + 1;
	ULONG len = 4;
	char buf[8];
	NTSTATUS st;

	switch (r->call) {
	case CALL_Connect:
		st = cm_connect(
			c, r->arg == ARG_NULL_QP ? NULL : new_qp(f, &cli),
			(struct sockaddr *)&L.addr, 4, 4, pd,
			r->arg == ARG_PD_OVER_MAX ? cli.info.MaxCallerData + 1
						  : 0,
			fx_req(f));
		break;
	case CALL_Accept:
		st = c->Dispatch->NdkAccept(c, new_qp(f, &srv), 4, 4, pd, over,
					    NULL, NULL, cm_req_done, fx_req(f));
		break;
	case CALL_Reject:
		st = c->Dispatch->NdkReject(
			c, pd, r->arg == ARG_PD_MAX ? over - 1 : over);
		break;
	case CALL_GetConnectionData:
		if (r->arg == ARG_SMALL_BUF)
			len = 2;
		st = c->Dispatch->NdkGetConnectionData(
			c, NULL, NULL, r->arg == ARG_NULL_BUF ? NULL : buf,
			&len);
		break;
	default:
		snprintf(got, n, "no such call");
		return;
	}
	fmt_st(got, n, st, NONE);
}

/* ---- Read limits and private data ---------------------------------- */

enum { RL_PassiveBeforeAccept, RL_Active, RL_Passive };

static void row_read_limits(struct fx *f, const struct row *r, char *got,
			    size_t n)
{
	int i = r->call;

	if (f->lim_st[i])
		snprintf(got, n, "%s", NdkStatusName(f->lim_st[i]));
	else
		snprintf(got, n, "IRD %lu ORD %lu", (unsigned long)f->lim[i][0],
			 (unsigned long)f->lim[i][1]);
}

/* docs/ndk.md, Read limits: each request capped at the own maximum and
 * at the peer's opposite value; before Accept, the initiator's values
 * capped by the passive side's maxima. */
static void expect_read_limits(const struct row *r, char *exp, char *alt,
			       size_t n)
{
	const ULONG *rl = rl_pairs[r->arg];
	const NDK_ADAPTER_INFO *a = &cli.info, *p = &srv.info;
	ULONG a_ird = MIN(rl[0], a->MaxInboundReadLimit);
	ULONG a_ord = MIN(rl[1], a->MaxOutboundReadLimit);
	ULONG p_ird = MIN(rl[2], p->MaxInboundReadLimit);
	ULONG p_ord = MIN(rl[3], p->MaxOutboundReadLimit);
	ULONG ird, ord;

	/* An adapter that raises the acceptor's IRD to the initiator's
	 * ORD says so (docs/ndk.md, Read limits). */
	if ((p->AdapterFlags & NDK_ADAPTER_FLAG_LIBNDK_ACCEPTOR_IRD_RAISED) &&
	    a_ord > p_ird)
		p_ird = MIN(a_ord, p->MaxInboundReadLimit);
	switch (r->call) {
	case 0:
		ird = MIN(a_ord, p->MaxInboundReadLimit);
		ord = MIN(a_ird, p->MaxOutboundReadLimit);
		break;
	case 1:
		ird = MIN(a_ird, p_ord);
		ord = MIN(a_ord, p_ird);
		break;
	default:
		ird = MIN(p_ird, a_ord);
		ord = MIN(p_ord, a_ird);
		break;
	}
	snprintf(exp, n, "IRD %lu ORD %lu", (unsigned long)ird,
		 (unsigned long)ord);
}

static void row_private_data(struct fx *f, const struct row *r, char *got,
			     size_t n)
{
	snprintf(got, n, "%s", f->pdata[r->call]);
}

/*
 * RDS is what the peer sent where the transport carries the length
 * (iWARP); IB and RoCE report the CM message's whole area, padded, as NDK
 * allows: a REQ's is MaxCallerData, a REP's 196 bytes (MaxCalleeData is
 * what a REJ carries, 148; docs/verbs.md, Private data).
 */
#define IB_CM_REP_PRIVATE_DATA 196

static void expect_private_data(const struct row *r, char *exp, char *alt,
				size_t n)
{
	bool accept = r->call == 1;
	const NDK_ADAPTER_INFO *reader = accept ? &cli.info : &srv.info;
	ULONG area = accept ? srv.info.MaxCalleeData : cli.info.MaxCallerData;
	ULONG len = r->arg ? 5 : area;

	snprintf(exp, n, "STATUS_SUCCESS rds=%lu data ok",
		 (unsigned long)(reader->RdmaTechnology == NdkiWarp
					 ? len
					 : (accept ? IB_CM_REP_PRIVATE_DATA
						   : reader->MaxCallerData)));
}

/* ---- Data path ------------------------------------------------------ */

static NDK_SGE a_sge(size_t off, ULONG len)
{
	NDK_SGE s = { .VirtualAddress = abuf.mem + off,
		      .Length = len,
		      .MemoryRegionToken = abuf.ltok };

	return s;
}

static NDK_SGE p_sge(size_t off, ULONG len)
{
	NDK_SGE s = { .VirtualAddress = pbuf.mem + off,
		      .Length = len,
		      .MemoryRegionToken = pbuf.ltok };

	return s;
}

enum { NOTIFY_PLAIN, NOTIFY_SOLICITED, NOTIFY_OVERFLOW, NOTIFY_FAILED_READ };

/*
 * The notification rows: the arm (r->call) of the passive side's CQ,
 * then what r->done says: a Send (plain or solicited) into a posted
 * receive, two Sends into a CQ of depth 1, or a failed Read under an
 * arm of the active side's CQ. "none" only once the receive arrived.
 */
static void row_notify(struct fx *f, const struct row *r, char *got, size_t n)
{
	int kind = (int)r->done;
	bool expect_none = r->exp == STATUS_PENDING;
	NDK_CQ *cq = kind == NOTIFY_FAILED_READ ? f->acq : f->pcq;
	struct notif *nt = kind == NOTIFY_FAILED_READ ? &f->an : &f->pn;
	int sends = kind == NOTIFY_OVERFLOW ? 2 : 1;
	NTSTATUS st = STATUS_SUCCESS, rst = NONE;
	NDK_SGE s;
	uint64_t end;
	int i;

	for (i = 0; kind != NOTIFY_FAILED_READ && i < sends && !st; i++) {
		s = p_sge(64 * i, 64);
		st = f->pqp->Dispatch->NdkReceive(
			f->pqp, (PVOID)(uintptr_t)(0xa0 + i), &s, 1);
	}
	cq->Dispatch->NdkArmCq(cq, r->call);
	for (i = 0; kind != NOTIFY_FAILED_READ && i < sends && !st; i++) {
		s = a_sge(0, 16);
		st = f->aqp->Dispatch->NdkSend(
			f->aqp, (PVOID)(uintptr_t)(0xb0 + i), &s, 1,
			kind == NOTIFY_SOLICITED
				? NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT
				: 0);
	}
	if (kind == NOTIFY_FAILED_READ) {
		s = a_sge(0, 64);
		st = f->aqp->Dispatch->NdkRead(f->aqp, (PVOID)0xb0, &s, 1,
					       (UINT64)(uintptr_t)pbuf.mem,
					       pbuf.rtok ^ 0x5a, 0);
	}
	if (st) {
		snprintf(got, n, "post: %s", NdkStatusName(st));
		return;
	}
	end = tu_now_ms() + WAIT_MS;
	while (!atomic_load(&nt->n) && tu_now_ms() < end) {
		/* For "none", take the receive, then watch a while. */
		if (expect_none && rst == NONE) {
			rst = poll_ctx(cq, (PVOID)0xa0, 1);
			if (rst != NONE)
				end = tu_now_ms() + QUIET_MS;
		} else {
			tu_sleep_ms(1);
		}
	}
	if (atomic_load(&nt->n))
		snprintf(got, n, "notified %s",
			 NdkStatusName(atomic_load(&nt->status)));
	else if (rst == NONE)
		snprintf(got, n, "none, and no receive completion");
	else
		snprintf(got, n, "none");
}

static void expect_notify(const struct row *r, char *exp, char *alt, size_t n)
{
	/* The armed CQ is the passive side's, but for the failed Read. */
	const NDK_ADAPTER_INFO *armed =
		r->done == NOTIFY_FAILED_READ ? &cli.info : &srv.info;

	/* Where a SOLICITED arm is announced to take any completion, the
	 * plain Send's is due (docs/verbs.md, Contract differences). */
	if (r->exp == STATUS_PENDING && r->call == NDK_CQ_NOTIFY_SOLICITED &&
	    (armed->AdapterFlags & NDK_ADAPTER_FLAG_LIBNDK_SOLICITED_ANY))
		snprintf(exp, n, "notified %s", NdkStatusName(STATUS_SUCCESS));
	else if (r->exp == STATUS_PENDING)
		snprintf(exp, n, "none");
	else
		snprintf(exp, n, "notified %s", NdkStatusName(r->exp));
}

/* A request's completion on cq: the inline status, or the completion. */
static void row_completion(struct fx *f, const struct row *r, char *got,
			   size_t n)
{
	NDK_SGE s;
	NTSTATUS st;

	if (r->call == 0) {
		/* A Send larger than the receive. */
		s = p_sge(0, 16);
		st = f->pqp->Dispatch->NdkReceive(f->pqp, (PVOID)0xa0, &s, 1);
		s = a_sge(0, 64);
		if (!st)
			st = f->aqp->Dispatch->NdkSend(f->aqp, (PVOID)0xb0, &s,
						       1, 0);
		fmt_st(got, n, st ? st : poll_ctx(f->pcq, (PVOID)0xa0, WAIT_MS),
		       NONE);
		return;
	}
	/* A Read past the end of the peer's MR. */
	s = a_sge(0, 64);
	st = f->aqp->Dispatch->NdkRead(
		f->aqp, (PVOID)0xb0, &s, 1,
		(UINT64)(uintptr_t)pbuf.mem + BUF_LEN - 32, pbuf.rtok, 0);
	fmt_st(got, n, st ? st : poll_ctx(f->acq, (PVOID)0xb0, WAIT_MS), NONE);
}

static void row_read_st(struct fx *f, const struct row *r, char *got, size_t n)
{
	fmt_st(got, n, f->read_st, NONE);
}

/*
 * A request posted after the connection failed: refused inline, or
 * accepted and then completed (cancelled) once the consumer flushes, as
 * the NDK rules leave flushing to it. Never lost.
 */
static void row_post_after_error(struct fx *f, const struct row *r, char *got,
				 size_t n)
{
	bool passive = r->side;
	NDK_QP *qp = passive ? f->pqp : f->aqp;
	NDK_CQ *cq = passive ? f->pcq : f->acq;
	PVOID ctx = (PVOID)(uintptr_t)(0xd0 + r->call);
	NDK_SGE s = passive ? p_sge(0, 64) : a_sge(0, 64);
	NTSTATUS st, done = NONE;

	switch (r->call) {
	case 0:
		st = qp->Dispatch->NdkSend(qp, ctx, &s, 1, 0);
		break;
	case 1:
		st = qp->Dispatch->NdkWrite(qp, ctx, &s, 1,
					    (UINT64)(uintptr_t)pbuf.mem,
					    pbuf.rtok, 0);
		break;
	case 2:
		st = qp->Dispatch->NdkRead(qp, ctx, &s, 1,
					   (UINT64)(uintptr_t)pbuf.mem,
					   pbuf.rtok, 0);
		break;
	default:
		st = qp->Dispatch->NdkReceive(qp, ctx, &s, 1);
		break;
	}
	if (st == STATUS_SUCCESS) {
		done = poll_ctx(cq, ctx, QUIET_MS);
		if (done == NONE) {
			qp->Dispatch->NdkFlush(qp);
			done = poll_ctx(cq, ctx, WAIT_MS);
		}
		snprintf(got, n, "%s/%s", NdkStatusName(st), st_name(done));
		return;
	}
	fmt_st(got, n, st, NONE);
}

static void expect_post_after_error(const struct row *r, char *exp, char *alt,
				    size_t n)
{
	snprintf(exp, n, "STATUS_CONNECTION_INVALID");
	snprintf(alt, n, "STATUS_SUCCESS/STATUS_CANCELLED");
}

/* ---- Create-time arguments and limits -------------------------------- */

enum create_case {
	CQ_DEPTH_0,
	CQ_DEPTH_OVER_MAX,
	CQ_NULL_NOTIFICATION,
	CQ_VALID,
	QP_RECEIVE_SGE_0,
	QP_RECEIVE_SGE_OVER_MAX,
	QP_INITIATOR_SGE_OVER_MAX,
	QP_RECEIVE_DEPTH_0,
	QP_INITIATOR_DEPTH_0,
	QP_RECEIVE_DEPTH_OVER_MAX,
	QP_INITIATOR_DEPTH_OVER_MAX,
	QP_INLINE_OVER_MAX,
	QP_NULL_CQ,
	QP_PD_AS_CQ,
	QP_VALID,
	QP_WITH_SRQ_NOT_AN_SRQ,
	SRQ_DEPTH_0,
	SRQ_DEPTH_OVER_MAX,
	SRQ_SGE_0,
	SRQ_SGE_OVER_MAX,
	SRQ_THRESHOLD_OVER_DEPTH,
	SRQ_VALID,
	MR_LENGTH_0,
	MR_REGISTER_TWICE,
	MR_REGISTER_FAST_MR,
	MR_FAST_PAGES_0,
	MR_FAST_PAGES_HUGE,
	MW_CREATE,
	MW_BIND_NOT_CONNECTED,
	PD_NULL_OUT,
	CONNECTOR_NULL_OUT,
	LISTENER_NULL_CONNECT_EVENT,
	LISTEN_ADDRESS_IN_USE,
	SEP_ADDRESS_NOT_ON_ADAPTER,
	SEP_ADDRESS_LENGTH_3,
	QUERY_INFO_SMALL_BUFFER,
	EXT_ADAPTER,
	EXT_CQ,
	EXT_PD,
	EXT_QP,
	EXT_CONNECTOR,
	CQ_RESIZE,
	CQ_MODERATION,
	CQ_MODERATION_BOTH_UNLIMITED,
	QP_SEND_UNCONNECTED,
	QP_WRITE_UNCONNECTED,
	QP_READ_UNCONNECTED,
	QP_RECEIVE_UNCONNECTED,
	QP_RECEIVE_WITH_SRQ,
};

static VOID on_srq(PVOID ctx, NTSTATUS status)
{
}

static NTSTATUS register_mr(NDK_MR *mr, void *p, SIZE_T len)
{
	PMDL mdl = IoAllocateMdl(p, 4096, FALSE, FALSE, NULL);
	NTSTATUS st;

	if (!mdl)
		return STATUS_INSUFFICIENT_RESOURCES;
	st = mr->Dispatch->NdkRegisterMr(
		mr, mdl, len, NDK_MR_FLAG_ALLOW_LOCAL_WRITE, NULL, NULL);
	IoFreeMdl(mdl);
	return st;
}

/* NdkQueryExtension of any object: no extension is defined. */
static NTSTATUS query_extension(NDK_OBJECT_HEADER *o)
{
	const struct {
		NDK_OBJECT_HEADER h;
		const NDK_FN_QUERY_EXTENSION_INTERFACE *d;
	} *any = (const void *)o;
	GUID g = { 0x12345678, 0x1234, 0x1234, { 1, 2, 3, 4, 5, 6, 7, 8 } };
	NDK_VERSION v = { 1, 0 };
	NDK_EXTENSION_INTERFACE ext;

	/* The second slot of every dispatch table but the adapter's, which
	 * has no close slot. */
	return any->d[o->ObjectType == NdkObjectTypeAdapter ? 0 : 1](o, &g, v,
								     &ext);
}

/* The rows that need more than one create: an object in a state. */
static NTSTATUS row_object(const struct row *r, NDK_QP **qp, NDK_CQ **cq,
			   NDK_SRQ **srq, NDK_CONNECTOR **conn)
{
	NDK_ADAPTER *ad = cli.ad;
	NDK_PD *pd = cli.pd;
	NDK_ADAPTER_INFO info;
	ULONG size = 8;
	NDK_SGE s = { .VirtualAddress = abuf.mem,
		      .Length = 64,
		      .MemoryRegionToken = abuf.ltok };
	NTSTATUS st;

	switch (r->call) {
	case QUERY_INFO_SMALL_BUFFER:
		st = ad->Dispatch->NdkQueryAdapterInfo(ad, &info, &size);
		/* The size needed comes back. */
		return st == STATUS_BUFFER_TOO_SMALL && size != sizeof(info)
			       ? STATUS_UNSUCCESSFUL
			       : st;
	case EXT_ADAPTER:
		return query_extension(&ad->Header);
	case EXT_PD:
		return query_extension(&pd->Header);
	case EXT_CONNECTOR:
		st = ad->Dispatch->NdkCreateConnector(ad, NULL, NULL, conn);
		return st ? st : query_extension(&(*conn)->Header);
	default:
		break;
	}
	st = ad->Dispatch->NdkCreateCq(ad, 16, on_notify, &cur.an, NULL, NULL,
				       NULL, cq);
	if (st)
		return st;
	switch (r->call) {
	case EXT_CQ:
		return query_extension(&(*cq)->Header);
	case CQ_RESIZE:
		return (*cq)->Dispatch->NdkResizeCq(*cq, 32, NULL, NULL);
	case CQ_MODERATION:
		return (*cq)->Dispatch->NdkControlCqInterruptModeration(*cq, 10,
									4);
	case CQ_MODERATION_BOTH_UNLIMITED:
		return (*cq)->Dispatch->NdkControlCqInterruptModeration(
			*cq, 0xffffffff, 0xffffffff);
	case QP_RECEIVE_WITH_SRQ:
		st = pd->Dispatch->NdkCreateSrq(pd, 16, 1, 0, on_srq, NULL,
						NULL, NULL, NULL, srq);
		if (!st)
			st = pd->Dispatch->NdkCreateQpWithSrq(
				pd, *cq, *cq, *srq, NULL, 16, 1, 0, NULL, NULL,
				qp);
		return st ? st : (*qp)->Dispatch->NdkReceive(*qp, NULL, &s, 1);
	default:
		break;
	}
	st = pd->Dispatch->NdkCreateQp(pd, *cq, *cq, NULL, 16, 16, 1, 1, 0,
				       NULL, NULL, qp);
	if (st)
		return st;
	switch (r->call) {
	case EXT_QP:
		return query_extension(&(*qp)->Header);
	case QP_SEND_UNCONNECTED:
		return (*qp)->Dispatch->NdkSend(*qp, NULL, &s, 1, 0);
	case QP_WRITE_UNCONNECTED:
		return (*qp)->Dispatch->NdkWrite(*qp, NULL, &s, 1,
						 (UINT64)(uintptr_t)pbuf.mem,
						 pbuf.rtok, 0);
	case QP_READ_UNCONNECTED:
		return (*qp)->Dispatch->NdkRead(*qp, NULL, &s, 1,
						(UINT64)(uintptr_t)pbuf.mem,
						pbuf.rtok, 0);
	default:
		/* Receives may be posted before the connection exists. */
		return (*qp)->Dispatch->NdkReceive(*qp, NULL, &s, 1);
	}
}

static void row_create(struct fx *f, const struct row *r, char *got, size_t n)
{
	const NDK_ADAPTER_INFO *i = &cli.info;
	NDK_ADAPTER *ad = cli.ad;
	NDK_PD *pd = cli.pd;
	NDK_CQ *cq = cli.cq, *newcq = NULL;
	NDK_QP *qp = NULL;
	NDK_SRQ *srq = NULL;
	NDK_MR *mr = NULL;
	NDK_MW *mw = NULL;
	ULONG rd = 16, id = 16, rs = 1, is = 1, inl = 0;
	ULONG sd = 16, ss = 1, th = 0;
	NDK_CQ *rcq = cq;
	NDK_LISTENER *lis = NULL;
	NDK_SHARED_ENDPOINT *sep = NULL;
	NDK_CONNECTOR *conn = NULL;
	struct sockaddr_in sin = cm_lo4(0);
	NTSTATUS st;

	switch (r->call) {
	case CQ_DEPTH_0:
	case CQ_DEPTH_OVER_MAX:
	case CQ_NULL_NOTIFICATION:
	case CQ_VALID:
		st = ad->Dispatch->NdkCreateCq(
			ad,
			r->call == CQ_DEPTH_0	       ? 0
			: r->call == CQ_DEPTH_OVER_MAX ? i->MaxCqDepth + 1
						       : 16,
			r->call == CQ_NULL_NOTIFICATION ? NULL : on_notify,
			&cur.an, NULL, NULL, NULL, &newcq);
		break;
	case QP_RECEIVE_SGE_0:
	case QP_RECEIVE_SGE_OVER_MAX:
	case QP_INITIATOR_SGE_OVER_MAX:
	case QP_RECEIVE_DEPTH_0:
	case QP_INITIATOR_DEPTH_0:
	case QP_RECEIVE_DEPTH_OVER_MAX:
	case QP_INITIATOR_DEPTH_OVER_MAX:
	case QP_INLINE_OVER_MAX:
	case QP_NULL_CQ:
	case QP_PD_AS_CQ:
	case QP_VALID:
		if (r->call == QP_RECEIVE_SGE_0)
			rs = 0;
		if (r->call == QP_RECEIVE_SGE_OVER_MAX)
			rs = i->MaxReceiveRequestSge + 1;
		if (r->call == QP_INITIATOR_SGE_OVER_MAX)
			is = i->MaxInitiatorRequestSge + 1;
		if (r->call == QP_RECEIVE_DEPTH_0)
			rd = 0;
		if (r->call == QP_INITIATOR_DEPTH_0)
			id = 0;
		if (r->call == QP_RECEIVE_DEPTH_OVER_MAX)
			rd = i->MaxReceiveQueueDepth + 1;
		if (r->call == QP_INITIATOR_DEPTH_OVER_MAX)
			id = i->MaxInitiatorQueueDepth + 1;
		if (r->call == QP_INLINE_OVER_MAX)
			inl = i->MaxInlineDataSize + 1;
		if (r->call == QP_NULL_CQ)
			rcq = NULL;
		if (r->call == QP_PD_AS_CQ)
			rcq = (NDK_CQ *)pd;
		st = pd->Dispatch->NdkCreateQp(pd, rcq, cq, NULL, rd, id, rs,
					       is, inl, NULL, NULL, &qp);
		break;
	case QP_WITH_SRQ_NOT_AN_SRQ:
		st = pd->Dispatch->NdkCreateQpWithSrq(pd, cq, cq, (NDK_SRQ *)cq,
						      NULL, 16, 1, 0, NULL,
						      NULL, &qp);
		break;
	case SRQ_DEPTH_0:
	case SRQ_DEPTH_OVER_MAX:
	case SRQ_SGE_0:
	case SRQ_SGE_OVER_MAX:
	case SRQ_THRESHOLD_OVER_DEPTH:
	case SRQ_VALID:
		if (r->call == SRQ_DEPTH_0)
			sd = 0;
		if (r->call == SRQ_DEPTH_OVER_MAX)
			sd = i->MaxSrqDepth + 1;
		if (r->call == SRQ_SGE_0)
			ss = 0;
		if (r->call == SRQ_SGE_OVER_MAX)
			ss = i->MaxReceiveRequestSge + 1;
		if (r->call == SRQ_THRESHOLD_OVER_DEPTH)
			th = sd + 1;
		st = pd->Dispatch->NdkCreateSrq(pd, sd, ss, th, on_srq, NULL,
						NULL, NULL, NULL, &srq);
		break;
	case MR_LENGTH_0:
	case MR_REGISTER_TWICE:
	case MR_REGISTER_FAST_MR:
	case MR_FAST_PAGES_0:
	case MR_FAST_PAGES_HUGE:
		st = pd->Dispatch->NdkCreateMr(
			pd,
			r->call == MR_REGISTER_FAST_MR ||
				r->call == MR_FAST_PAGES_0 ||
				r->call == MR_FAST_PAGES_HUGE,
			NULL, NULL, &mr);
		if (st)
			break;
		if (r->call == MR_FAST_PAGES_0 ||
		    r->call == MR_FAST_PAGES_HUGE) {
			st = mr->Dispatch->NdkInitializeFastRegisterMr(
				mr,
				/* Past any adapter's pages: the software
				 * provider takes more than its FRMRPageCount
				 * (up to 2^18, its unit tests say so). */
				r->call == MR_FAST_PAGES_0 ? 0 : 0xffffffff,
				TRUE, NULL, NULL);
			break;
		}
		st = register_mr(mr, abuf.mem,
				 r->call == MR_LENGTH_0 ? 0 : 4096);
		if (r->call == MR_REGISTER_TWICE && !st)
			st = register_mr(mr, abuf.mem, 4096);
		break;
	case MW_CREATE:
	case MW_BIND_NOT_CONNECTED:
		st = pd->Dispatch->NdkCreateMw(pd, NULL, NULL, &mw);
		if (st || r->call == MW_CREATE)
			break;
		st = pd->Dispatch->NdkCreateQp(pd, cq, cq, NULL, 16, 16, 1, 1,
					       0, NULL, NULL, &qp);
		if (!st)
			st = qp->Dispatch->NdkBind(
				qp, NULL, abuf.mr, mw, abuf.mem, 4096,
				NDK_OP_FLAG_ALLOW_REMOTE_READ);
		break;
	case PD_NULL_OUT:
		st = ad->Dispatch->NdkCreatePd(ad, NULL, NULL, NULL);
		break;
	case CONNECTOR_NULL_OUT:
		st = ad->Dispatch->NdkCreateConnector(ad, NULL, NULL, NULL);
		break;
	case LISTENER_NULL_CONNECT_EVENT:
		st = ad->Dispatch->NdkCreateListener(ad, NULL, NULL, NULL, NULL,
						     &lis);
		break;
	case LISTEN_ADDRESS_IN_USE:
		/* L's address (docs/ndk.md, Endpoints). */
		st = srv.ad->Dispatch->NdkCreateListener(
			srv.ad, on_connect_event, NULL, NULL, NULL, &lis);
		if (!st)
			st = lis->Dispatch->NdkListen(
				lis, (PSOCKADDR)&L.addr,
				sizeof(struct sockaddr_in), NULL, NULL);
		break;
	case SEP_ADDRESS_NOT_ON_ADAPTER:
	case SEP_ADDRESS_LENGTH_3:
		/* TEST-NET-1 is on no interface. */
		if (r->call == SEP_ADDRESS_NOT_ON_ADAPTER)
			sin.sin_addr.s_addr = htonl(0xc0000201);
		st = ad->Dispatch->NdkCreateSharedEndpoint(
			ad, (PSOCKADDR)&sin,
			r->call == SEP_ADDRESS_LENGTH_3 ? 3 : sizeof(sin), NULL,
			NULL, &sep);
		break;
	case QUERY_INFO_SMALL_BUFFER:
	case EXT_ADAPTER:
	case EXT_CQ:
	case EXT_PD:
	case EXT_QP:
	case EXT_CONNECTOR:
	case CQ_RESIZE:
	case CQ_MODERATION:
	case CQ_MODERATION_BOTH_UNLIMITED:
	case QP_SEND_UNCONNECTED:
	case QP_WRITE_UNCONNECTED:
	case QP_READ_UNCONNECTED:
	case QP_RECEIVE_UNCONNECTED:
	case QP_RECEIVE_WITH_SRQ:
		st = row_object(r, &qp, &newcq, &srq, &conn);
		break;
	default:
		snprintf(got, n, "no such case");
		return;
	}
	fmt_st(got, n, st, NONE);
	if (conn)
		close_wait(&conn->Header);
	if (lis)
		close_wait(&lis->Header);
	if (sep)
		close_wait(&sep->Header);
	if (qp)
		close_wait(&qp->Header);
	if (srq)
		close_wait(&srq->Header);
	if (mw)
		close_wait(&mw->Header);
	if (mr)
		close_wait(&mr->Header);
	if (newcq)
		close_wait(&newcq->Header);
}

/* Rules of adapters that announce what they lack (NDK_ADAPTER_INFO). */
static void expect_srq(const struct row *r, char *exp, char *alt, size_t n)
{
	/* MaxSrqDepth 0: no SRQ, and any depth is over the limit. */
	snprintf(exp, n, "%s",
		 NdkStatusName(cli.info.MaxSrqDepth
				       ? STATUS_SUCCESS
				       : STATUS_INVALID_PARAMETER));
}

/* An SRQ row on an adapter without SRQ: the create is refused. */
static void expect_srq_use(const struct row *r, char *exp, char *alt, size_t n)
{
	snprintf(exp, n, "%s",
		 NdkStatusName(cli.info.MaxSrqDepth
				       ? r->exp
				       : STATUS_INVALID_PARAMETER));
}

/* NdkResizeCq and interrupt moderation where the flags announce them
 * (docs/ndk.md, Completion queues), STATUS_NOT_SUPPORTED where not. */
static void expect_cq_flag(const struct row *r, char *exp, char *alt, size_t n)
{
	ULONG flag =
		r->call == CQ_RESIZE
			? NDK_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED
			: NDK_ADAPTER_FLAG_CQ_INTERRUPT_MODERATION_SUPPORTED;

	snprintf(exp, n, "%s",
		 NdkStatusName(cli.info.AdapterFlags & flag
				       ? r->exp
				       : STATUS_NOT_SUPPORTED));
}

static void expect_mw(const struct row *r, char *exp, char *alt, size_t n)
{
	/* MaxWindowSize 0: no windows, NdkCreateMw is STATUS_NOT_SUPPORTED
	 * (docs/verbs.md, Memory windows). */
	snprintf(exp, n, "%s",
		 NdkStatusName(!cli.info.MaxWindowSize ? STATUS_NOT_SUPPORTED
						       : r->exp));
}

/* ------------------------------------------------------------------ */
/* The table                                                          */

/* One row; the wrappers below fill in what most rows share. */
#define ROW_(nm, st, a, f, c, e, d, x, cons, sd)                               \
	{                                                                      \
		.name = nm, .state = st, .arg = a, .fn = f, .call = c,         \
		.exp = e, .done = d, .expect = x, .consumes = cons, .side = sd \
	}
#define ROW(st, call, e)                                                   \
	ROW_(#st "." #call, FX_##st, 0, row_call, CALL_##call, e, 0, NULL, \
	     false, 0)
/* A call that pends, completing with d; it changes the state. */
#define ROWP(st, call, d)                                                      \
	ROW_(#st "." #call, FX_##st, 0, row_call, CALL_##call, STATUS_PENDING, \
	     d, NULL, true, 0)
/* A call that succeeds inline and changes the state. */
#define ROWC(st, call, e)                                                  \
	ROW_(#st "." #call, FX_##st, 0, row_call, CALL_##call, e, 0, NULL, \
	     true, 0)
#define CREATE(name, c, e) \
	ROW_("CREATE." name, FX_NONE, 0, row_create, c, e, 0, NULL, false, 0)
#define CREATE_RULE(name, c, e, rule) \
	ROW_("CREATE." name, FX_NONE, 0, row_create, c, e, 0, rule, false, 0)

#define CI  STATUS_CONNECTION_INVALID
#define CA  STATUS_CONNECTION_ABORTED
#define IDS STATUS_INVALID_DEVICE_STATE
#define OK  STATUS_SUCCESS

/*
 * The eleven connector calls in one state: Connect and
 * ConnectWithSharedEndpoint on a connector that has been used are
 * STATUS_INVALID_DEVICE_STATE, the queries answer once the peer's
 * Request or Reply was read, the rest per docs/ndk.md (Connecting,
 * Accepting, Disconnect).
 */
#define STATE_ROWS(st, cc, acc, rej, data, addr, disc)                         \
	ROW(st, Connect, IDS), ROW(st, ConnectWithSharedEndpoint, IDS),        \
		ROW(st, CompleteConnect, cc), ROW(st, CompleteConnectEx, cc),  \
		ROW(st, Accept, acc), ROW(st, AcceptEx, acc),                  \
		ROW(st, Reject, rej), ROW(st, GetConnectionData, data),        \
		ROW(st, GetLocalAddress, addr), ROW(st, GetPeerAddress, addr), \
		ROW(st, Disconnect, disc)

static const struct row rows[] = {
	/* Create-time arguments and limits (docs/ndk.md, Adapter
	 * information, Memory tokens, Shared receive queues). */
	CREATE("CqDepth0", CQ_DEPTH_0, STATUS_INVALID_PARAMETER),
	CREATE("CqDepthOverMax", CQ_DEPTH_OVER_MAX, STATUS_INVALID_PARAMETER),
	CREATE("CqNullNotification", CQ_NULL_NOTIFICATION,
	       STATUS_INVALID_PARAMETER),
	CREATE("CqValid", CQ_VALID, OK),
	CREATE("QpMaxReceiveRequestSge0", QP_RECEIVE_SGE_0,
	       STATUS_INVALID_PARAMETER),
	CREATE("QpMaxReceiveRequestSgeOverMax", QP_RECEIVE_SGE_OVER_MAX,
	       STATUS_INVALID_PARAMETER),
	CREATE("QpMaxInitiatorRequestSgeOverMax", QP_INITIATOR_SGE_OVER_MAX,
	       STATUS_INVALID_PARAMETER),
	CREATE("QpReceiveQueueDepth0", QP_RECEIVE_DEPTH_0,
	       STATUS_INVALID_PARAMETER),
	CREATE("QpInitiatorQueueDepth0", QP_INITIATOR_DEPTH_0,
	       STATUS_INVALID_PARAMETER),
	CREATE("QpReceiveQueueDepthOverMax", QP_RECEIVE_DEPTH_OVER_MAX,
	       STATUS_INVALID_PARAMETER),
	CREATE("QpInitiatorQueueDepthOverMax", QP_INITIATOR_DEPTH_OVER_MAX,
	       STATUS_INVALID_PARAMETER),
	CREATE("QpInlineDataSizeOverMax", QP_INLINE_OVER_MAX,
	       STATUS_INVALID_PARAMETER),
	CREATE("QpNullReceiveCq", QP_NULL_CQ, STATUS_INVALID_PARAMETER),
	CREATE("QpValid", QP_VALID, OK),
	CREATE("QpWithSrqCqAsSrq", QP_WITH_SRQ_NOT_AN_SRQ,
	       STATUS_INVALID_PARAMETER),
	CREATE("SrqDepth0", SRQ_DEPTH_0, STATUS_INVALID_PARAMETER),
	CREATE("SrqDepthOverMax", SRQ_DEPTH_OVER_MAX, STATUS_INVALID_PARAMETER),
	CREATE("SrqMaxReceiveRequestSge0", SRQ_SGE_0, STATUS_INVALID_PARAMETER),
	CREATE("SrqMaxReceiveRequestSgeOverMax", SRQ_SGE_OVER_MAX,
	       STATUS_INVALID_PARAMETER),
	CREATE("SrqThresholdOverDepth", SRQ_THRESHOLD_OVER_DEPTH,
	       STATUS_INVALID_PARAMETER),
	CREATE_RULE("SrqValid", SRQ_VALID, OK, expect_srq),
	CREATE("MrRegisterLength0", MR_LENGTH_0, STATUS_INVALID_PARAMETER),
	CREATE("MrRegisterTwice", MR_REGISTER_TWICE,
	       STATUS_INVALID_DEVICE_STATE),
	CREATE("MrRegisterFastRegisterMr", MR_REGISTER_FAST_MR,
	       STATUS_INVALID_DEVICE_REQUEST),
	CREATE("MrFastRegisterPageCount0", MR_FAST_PAGES_0,
	       STATUS_IMPLEMENTATION_LIMIT),
	CREATE("MrFastRegisterPageCountHuge", MR_FAST_PAGES_HUGE,
	       STATUS_IMPLEMENTATION_LIMIT),
	CREATE_RULE("MwCreate", MW_CREATE, OK, expect_mw),
	CREATE_RULE("MwBindOnUnconnectedQp", MW_BIND_NOT_CONNECTED, CI,
		    expect_mw),
	CREATE("PdNullOut", PD_NULL_OUT, STATUS_INVALID_PARAMETER),
	CREATE("ConnectorNullOut", CONNECTOR_NULL_OUT,
	       STATUS_INVALID_PARAMETER),
	CREATE("ListenerNullConnectEvent", LISTENER_NULL_CONNECT_EVENT,
	       STATUS_INVALID_PARAMETER),
	CREATE("ListenAddressInUse", LISTEN_ADDRESS_IN_USE,
	       STATUS_SHARING_VIOLATION),
	CREATE("SharedEndpointAddressNotOnAdapter", SEP_ADDRESS_NOT_ON_ADAPTER,
	       STATUS_INVALID_ADDRESS),
	CREATE("SharedEndpointAddressLength3", SEP_ADDRESS_LENGTH_3,
	       STATUS_INVALID_PARAMETER),

	/* Objects (docs/ndk.md, Objects, Adapter information, Completion
	 * queues, Work requests). */
	CREATE("AdapterInfoSmallBuffer", QUERY_INFO_SMALL_BUFFER,
	       STATUS_BUFFER_TOO_SMALL),
	CREATE("AdapterQueryExtension", EXT_ADAPTER, STATUS_NOT_SUPPORTED),
	CREATE("CqQueryExtension", EXT_CQ, STATUS_NOT_SUPPORTED),
	CREATE("PdQueryExtension", EXT_PD, STATUS_NOT_SUPPORTED),
	CREATE("QpQueryExtension", EXT_QP, STATUS_NOT_SUPPORTED),
	CREATE("ConnectorQueryExtension", EXT_CONNECTOR, STATUS_NOT_SUPPORTED),
	CREATE_RULE("CqResize", CQ_RESIZE, OK, expect_cq_flag),
	CREATE_RULE("CqInterruptModeration", CQ_MODERATION, OK, expect_cq_flag),
	CREATE_RULE("CqInterruptModerationBothUnlimited",
		    CQ_MODERATION_BOTH_UNLIMITED, STATUS_INVALID_PARAMETER_MIX,
		    expect_cq_flag),
	CREATE("QpSendUnconnected", QP_SEND_UNCONNECTED, CI),
	CREATE("QpWriteUnconnected", QP_WRITE_UNCONNECTED, CI),
	CREATE("QpReadUnconnected", QP_READ_UNCONNECTED, CI),
	CREATE("QpReceiveUnconnected", QP_RECEIVE_UNCONNECTED, OK),
	CREATE_RULE("QpWithSrqReceive", QP_RECEIVE_WITH_SRQ,
		    STATUS_INVALID_DEVICE_REQUEST, expect_srq_use),

	/* Every connector call in every state (docs/ndk.md, Connecting,
	 * Accepting, Private data, Disconnect). */
	ROW(IDLE, CompleteConnect, CI),
	ROW(IDLE, CompleteConnectEx, CI),
	ROW(IDLE, Accept, CI),
	ROW(IDLE, AcceptEx, CI),
	ROW(IDLE, Reject, CI),
	ROW(IDLE, GetConnectionData, CI),
	ROW(IDLE, GetLocalAddress, CI),
	ROW(IDLE, GetPeerAddress, CI),
	ROW(IDLE, Disconnect, CI),
	ROW_("IDLE.ConnectPrivateDataOverMaxCallerData", FX_IDLE,
	     ARG_PD_OVER_MAX, row_args, CALL_Connect,
	     STATUS_INVALID_BUFFER_SIZE, 0, NULL, false, 0),
	ROW_("IDLE.ConnectNullQp", FX_IDLE, ARG_NULL_QP, row_args, CALL_Connect,
	     STATUS_INVALID_PARAMETER, 0, NULL, false, 0),
	ROWP(IDLE, Connect, OK),
	ROWP(IDLE, ConnectWithSharedEndpoint, OK),
	ROW_("IDLE.ConnectToPausedListener", FX_IDLE, 0, row_connect_paused, 0,
	     STATUS_PENDING, STATUS_CONNECTION_REFUSED, NULL, true, 0),
	ROW_("IDLE.ConnectWithSharedEndpointExistingTuple", FX_IDLE, 0,
	     row_tuple_exists, 0, STATUS_ADDRESS_ALREADY_EXISTS, 0, NULL, true,
	     0),
	ROW_("IDLE.ConnectNoListener", FX_IDLE, 0, row_connect_no_listener, 0,
	     STATUS_PENDING, STATUS_CONNECTION_REFUSED, NULL, true, 0),

	STATE_ROWS(CONNECTING, CI, CI, CI, CI, OK, CI),

	ROW(REPLIED, Connect, IDS),
	ROW(REPLIED, ConnectWithSharedEndpoint, IDS),
	ROW(REPLIED, Accept, CI),
	ROW(REPLIED, AcceptEx, CI),
	ROW(REPLIED, GetConnectionData, OK),
	ROW(REPLIED, GetLocalAddress, OK),
	ROW(REPLIED, GetPeerAddress, OK),
	ROW(REPLIED, Disconnect, CI),
	ROWC(REPLIED, CompleteConnect, OK),
	ROWC(REPLIED, CompleteConnectEx, OK),
	ROWC(REPLIED, Reject, OK),
	ROW_("REPLIED.CompleteConnectExThenPeerAccept", FX_REPLIED, 0,
	     row_peer_accept, CALL_CompleteConnectEx, 0, 0, NULL, true, 0),
	ROW_("REPLIED.RejectThenPeerAccept", FX_REPLIED, 0, row_peer_accept,
	     CALL_Reject, CA, 0, NULL, true, 0),

	ROW(REQUESTED, Connect, IDS),
	ROW(REQUESTED, ConnectWithSharedEndpoint, IDS),
	ROW(REQUESTED, CompleteConnect, CI),
	ROW(REQUESTED, CompleteConnectEx, CI),
	ROW(REQUESTED, GetConnectionData, OK),
	ROW(REQUESTED, GetLocalAddress, OK),
	ROW(REQUESTED, GetPeerAddress, OK),
	ROW(REQUESTED, Disconnect, CI),
	ROW_("REQUESTED.GetConnectionDataNullBuffer", FX_REQUESTED,
	     ARG_NULL_BUF, row_args, CALL_GetConnectionData,
	     STATUS_INVALID_PARAMETER, 0, NULL, false, 0),
	ROW_("REQUESTED.GetConnectionDataSmallBuffer", FX_REQUESTED,
	     ARG_SMALL_BUF, row_args, CALL_GetConnectionData,
	     STATUS_BUFFER_TOO_SMALL, 0, NULL, false, 0),
	ROW_("REQUESTED.AcceptPrivateDataOverMaxCalleeData", FX_REQUESTED,
	     ARG_PD_OVER_MAX, row_args, CALL_Accept, STATUS_INVALID_BUFFER_SIZE,
	     0, NULL, false, 0),
	ROW_("REQUESTED.RejectPrivateDataOverMaxCalleeData", FX_REQUESTED,
	     ARG_PD_OVER_MAX, row_args, CALL_Reject, STATUS_INVALID_BUFFER_SIZE,
	     0, NULL, false, 0),
	ROWP(REQUESTED, Accept, OK),
	ROWP(REQUESTED, AcceptEx, OK),
	ROWC(REQUESTED, Reject, OK),
	ROW_("REQUESTED.RejectPrivateDataMaxCalleeData", FX_REQUESTED,
	     ARG_PD_MAX, row_args, CALL_Reject, OK, 0, NULL, true, 0),

	ROW_("ACCEPTING.AcceptWaitsForCompleteConnect", FX_ACCEPTING, 0,
	     row_accept_waits, 0, 0, 0, NULL, false, 0),
	STATE_ROWS(ACCEPTING, CI, CI, CI, OK, OK, CI),

	ROW(ESTABLISHED_ACTIVE, Connect, IDS),
	ROW(ESTABLISHED_ACTIVE, ConnectWithSharedEndpoint, IDS),
	ROW(ESTABLISHED_ACTIVE, CompleteConnect, CI),
	ROW(ESTABLISHED_ACTIVE, CompleteConnectEx, CI),
	ROW(ESTABLISHED_ACTIVE, Accept, CI),
	ROW(ESTABLISHED_ACTIVE, AcceptEx, CI),
	ROW(ESTABLISHED_ACTIVE, Reject, CI),
	ROW(ESTABLISHED_ACTIVE, GetConnectionData, OK),
	ROW(ESTABLISHED_ACTIVE, GetLocalAddress, OK),
	ROW(ESTABLISHED_ACTIVE, GetPeerAddress, OK),
	ROWP(ESTABLISHED_ACTIVE, Disconnect, OK),

	ROW(ESTABLISHED_PASSIVE, Connect, IDS),
	ROW(ESTABLISHED_PASSIVE, ConnectWithSharedEndpoint, IDS),
	ROW(ESTABLISHED_PASSIVE, CompleteConnect, CI),
	ROW(ESTABLISHED_PASSIVE, CompleteConnectEx, CI),
	ROW(ESTABLISHED_PASSIVE, Accept, CI),
	ROW(ESTABLISHED_PASSIVE, AcceptEx, CI),
	ROW(ESTABLISHED_PASSIVE, Reject, CI),
	ROW(ESTABLISHED_PASSIVE, GetConnectionData, OK),
	ROW(ESTABLISHED_PASSIVE, GetLocalAddress, OK),
	ROW(ESTABLISHED_PASSIVE, GetPeerAddress, OK),
	ROWP(ESTABLISHED_PASSIVE, Disconnect, OK),

	ROW_("PEER_CLOSED.DisconnectEventReason", FX_PEER_CLOSED, 0,
	     row_disc_reason, 0, OK, 0, NULL, false, 0),
	ROW(PEER_CLOSED, Connect, IDS),
	ROW(PEER_CLOSED, ConnectWithSharedEndpoint, IDS),
	ROW(PEER_CLOSED, CompleteConnect, CI),
	ROW(PEER_CLOSED, CompleteConnectEx, CI),
	ROW(PEER_CLOSED, Accept, CI),
	ROW(PEER_CLOSED, AcceptEx, CI),
	ROW(PEER_CLOSED, Reject, CI),
	ROW(PEER_CLOSED, GetConnectionData, OK),
	ROW(PEER_CLOSED, GetLocalAddress, OK),
	ROW(PEER_CLOSED, GetPeerAddress, OK),
	/* After the peer's disconnect NdkDisconnect completes inline. */
	ROWC(PEER_CLOSED, Disconnect, OK),

	STATE_ROWS(DISCONNECTING, CI, CI, CI, OK, OK, CI),

	ROW_("REFUSED.ConnectCompletion", FX_REFUSED, 0, row_conn_st, 0,
	     STATUS_CONNECTION_REFUSED, 0, NULL, false, 0),
	ROW_("REFUSED.GetConnectionDataRejectPrivateData", FX_REFUSED, 0,
	     row_reject_data, 0, OK, 0, NULL, false, 0),
	STATE_ROWS(REFUSED, CI, CI, CI, OK, OK, CI),

	ROW_("ABANDONED.PeerAcceptCompletionOnClose", FX_ABANDONED, 0,
	     row_acc_st, 0, STATUS_CANCELLED, 0, NULL, false, 0),
	STATE_ROWS(ABANDONED, CA, CI, CA, OK, OK, CI),

	ROW_("TIMED_OUT.PeerAcceptCompletion", FX_TIMED_OUT, 0, row_acc_st, 0,
	     STATUS_IO_TIMEOUT, 0, NULL, false, 0),
	STATE_ROWS(TIMED_OUT, CA, CI, CA, OK, OK, CI),

	ROW_("REQUEST_ABANDONED.PeerConnectCompletionOnClose",
	     FX_REQUEST_ABANDONED, 0, row_conn_st, 0, STATUS_CANCELLED, 0, NULL,
	     false, 0),
	STATE_ROWS(REQUEST_ABANDONED, CI, CA, CA, OK, OK, CI),

	ROW_("CLOSED.ReceiveFlushedByDisconnect", FX_CLOSED, 0,
	     row_receive_flushed, 0, STATUS_CANCELLED, 0, NULL, false, 0),
	STATE_ROWS(CLOSED, CI, CI, CI, OK, OK, CI),

	/* Private data: RDS and bytes (docs/ndk.md, Private data). */
	ROW_("PRIVATE_DATA.ConnectMaxCallerData.Passive", FX_PRIVATE_DATA, 0,
	     row_private_data, 0, 0, 0, expect_private_data, false, 0),
	ROW_("PRIVATE_DATA.AcceptMaxCalleeData.Active", FX_PRIVATE_DATA, 0,
	     row_private_data, 1, 0, 0, expect_private_data, false, 0),
	ROW_("PRIVATE_DATA.Connect5Bytes.Passive", FX_PRIVATE_DATA, 1,
	     row_private_data, 0, 0, 0, expect_private_data, false, 0),
	ROW_("PRIVATE_DATA.Accept5Bytes.Active", FX_PRIVATE_DATA, 1,
	     row_private_data, 1, 0, 0, expect_private_data, false, 0),

/* Read limits per requested pair (docs/ndk.md, Read limits). */
#define RL(i, name, side)                                      \
	ROW_("READ_LIMITS." name "." #side, FX_READ_LIMITS, i, \
	     row_read_limits, RL_##side, 0, 0, expect_read_limits, false, 0)
#define RLS(i, name)                                           \
	RL(i, name, PassiveBeforeAccept), RL(i, name, Active), \
		RL(i, name, Passive)
	RLS(0, "A8_8-P8_8"),
	RLS(1, "A4_2-P1_8"),
	RLS(2, "A2_6-P5_3"),
	RLS(3, "A0_3-P3_0"),
	RLS(4, "A1000_1000-P1000_1000"),

	/* CQ notifications (docs/ndk.md, Completion queues): exp PENDING
	 * means none is due. */
	ROW_("NOTIFY.ErrorsArm.PlainSend", FX_DATAPATH, 0, row_notify,
	     NDK_CQ_NOTIFY_ERRORS, STATUS_PENDING, NOTIFY_PLAIN, expect_notify,
	     true, 0),
	ROW_("NOTIFY.SolicitedArm.PlainSend", FX_DATAPATH, 0, row_notify,
	     NDK_CQ_NOTIFY_SOLICITED, STATUS_PENDING, NOTIFY_PLAIN,
	     expect_notify, true, 0),
	ROW_("NOTIFY.SolicitedArm.SolicitedSend", FX_DATAPATH, 0, row_notify,
	     NDK_CQ_NOTIFY_SOLICITED, OK, NOTIFY_SOLICITED, expect_notify, true,
	     0),
	ROW_("NOTIFY.AnyArm.PlainSend", FX_DATAPATH, 0, row_notify,
	     NDK_CQ_NOTIFY_ANY, OK, NOTIFY_PLAIN, expect_notify, true, 0),
	ROW_("NOTIFY.SolicitedArm.FailedRead", FX_DATAPATH, 0, row_notify,
	     NDK_CQ_NOTIFY_SOLICITED, OK, NOTIFY_FAILED_READ, expect_notify,
	     true, 0),
	ROW_("NOTIFY.ErrorsArm.CqOverrun", FX_DATAPATH, 1, row_notify,
	     NDK_CQ_NOTIFY_ERRORS, STATUS_BUFFER_OVERFLOW, NOTIFY_OVERFLOW,
	     expect_notify, true, 0),

	/* Completion statuses (docs/ndk.md, Work requests). */
	ROW_("COMPLETION.ReceiveSmallerThanSend", FX_DATAPATH, 0,
	     row_completion, 0, STATUS_BUFFER_OVERFLOW, 0, NULL, true, 0),
	ROW_("COMPLETION.ReadPastRemoteMr", FX_DATAPATH, 0, row_completion, 1,
	     STATUS_REMOTE_RESOURCES, 0, NULL, true, 0),
	ROW_("COMPLETION.ReadBadRemoteToken", FX_AFTER_ERROR, 0, row_read_st, 0,
	     STATUS_REMOTE_RESOURCES, 0, NULL, false, 0),
	ROW_("AFTER_ERROR.InitiatorDisconnectReason", FX_AFTER_ERROR, 0,
	     row_disc_reason, 0, CA, 0, NULL, false, 0),
	ROW_("AFTER_ERROR.TargetDisconnectReason", FX_AFTER_ERROR, 0,
	     row_disc_reason, 0, CA, 0, NULL, false, 1),
	ROW_("AFTER_ERROR.Send", FX_AFTER_ERROR, 0, row_post_after_error, 0, 0,
	     0, expect_post_after_error, false, 0),
	ROW_("AFTER_ERROR.Write", FX_AFTER_ERROR, 0, row_post_after_error, 1, 0,
	     0, expect_post_after_error, false, 0),
	ROW_("AFTER_ERROR.Read", FX_AFTER_ERROR, 0, row_post_after_error, 2, 0,
	     0, expect_post_after_error, false, 0),
	ROW_("AFTER_ERROR.Receive", FX_AFTER_ERROR, 0, row_post_after_error, 3,
	     0, 0, expect_post_after_error, false, 0),
	ROW_("AFTER_ERROR.TargetSend", FX_AFTER_ERROR, 0, row_post_after_error,
	     0, 0, 0, expect_post_after_error, false, 1),
	ROW_("AFTER_ERROR.TargetReceive", FX_AFTER_ERROR, 0,
	     row_post_after_error, 3, 0, 0, expect_post_after_error, false, 1),

	/* Last: a provider that takes another object for a CQ may crash. */
	CREATE("QpPdAsReceiveCq", QP_PD_AS_CQ, STATUS_INVALID_PARAMETER),
};

#define NROWS (sizeof(rows) / sizeof(rows[0]))

static void expected(const struct row *r, char *exp, char *alt, size_t n)
{
	alt[0] = 0;
	if (r->expect)
		r->expect(r, exp, alt, n);
	else if (r->fn == row_accept_waits)
		snprintf(exp, n, "pending");
	else if (r->fn == row_peer_accept)
		snprintf(exp, n, "STATUS_SUCCESS, Accept %s",
			 NdkStatusName(r->exp ? r->exp : STATUS_SUCCESS));
	else if (r->fn == row_disc_reason)
		snprintf(exp, n, "%s", NdkStatusName(r->exp));
	else
		fmt_st(exp, n, r->exp, r->done);
}

/*
 * Rows whose outcome the adapter announces otherwise (a libndk flag in
 * NDK_ADAPTER_INFO.AdapterFlags, docs/verbs.md, Contract differences):
 * where the acceptor's adapter (srv; the initiator's for the refused
 * Reads) sets the flag, the row expects what the flag says, exactly. With
 * also_ref the reference outcome stays allowed: which one comes is a
 * race the device does not settle (the initiator's FIN before or after
 * the Reply; the stream's end before or after the QP's error).
 */
static const struct announced_row {
	const char *row;
	ULONG flag;
	const char *outcome;
	bool also_ref;
	bool initiator;
} announced[] = {
#define AOR NDK_ADAPTER_FLAG_LIBNDK_ACCEPT_ON_REPLY
#define RER NDK_ADAPTER_FLAG_LIBNDK_REMOTE_ERROR_UNREPORTED
	/* The Accept completed with the Reply: what the initiator does
	 * next meets an established connection. */
	{ "REPLIED.RejectThenPeerAccept", AOR,
	  "STATUS_SUCCESS, Accept STATUS_SUCCESS", false, false },
	{ "ACCEPTING.AcceptWaitsForCompleteConnect", AOR, "STATUS_SUCCESS",
	  false, false },
	{ "ACCEPTING.Disconnect", AOR, "STATUS_PENDING/STATUS_SUCCESS", false,
	  false },
	/* The close races the kernel CM's established event, which
	 * completes the Accept: either may come first. */
	{ "ABANDONED.PeerAcceptCompletionOnClose", AOR, "STATUS_SUCCESS", true,
	  false },
	{ "TIMED_OUT.PeerAcceptCompletion", AOR, "STATUS_SUCCESS", false,
	  false },
	{ "TIMED_OUT.CompleteConnect", AOR, "STATUS_SUCCESS", false, false },
	{ "TIMED_OUT.CompleteConnectEx", AOR, "STATUS_SUCCESS", false, false },
	{ "TIMED_OUT.Reject", AOR, "STATUS_SUCCESS", false, false },
	{ "REQUEST_ABANDONED.Accept", AOR, "STATUS_PENDING/STATUS_SUCCESS",
	  true, false },
	{ "REQUEST_ABANDONED.AcceptEx", AOR, "STATUS_PENDING/STATUS_SUCCESS",
	  true, false },
	{ "REQUEST_ABANDONED.Reject", AOR, "STATUS_SUCCESS", true, false },
	/* The refused Read waits for the flush; the end looks graceful. */
	{ "COMPLETION.ReadPastRemoteMr", RER, "none", true, true },
	{ "COMPLETION.ReadBadRemoteToken", RER, "none", true, true },
	{ "AFTER_ERROR.InitiatorDisconnectReason", RER, "STATUS_SUCCESS", true,
	  true },
#undef AOR
#undef RER
};

/* Applies r's announced outcome, if its adapter announces one: the
 * outcome, else NULL. */
static const char *announced_outcome(const struct row *r, char *exp, char *alt,
				     size_t n)
{
	for (size_t i = 0; i < sizeof(announced) / sizeof(announced[0]); i++) {
		const struct announced_row *a = &announced[i];
		const NDK_ADAPTER_INFO *info =
			a->initiator ? &cli.info : &srv.info;

		if (strcmp(a->row, r->name) || !(info->AdapterFlags & a->flag))
			continue;
		if (a->also_ref) {
			snprintf(alt, n, "%s", a->outcome);
		} else {
			snprintf(exp, n, "%s", a->outcome);
			alt[0] = 0;
		}
		return a->outcome;
	}
	return NULL;
}

static int rows_announced;

static void run_row(void **state)
{
	const struct row *r = *state;
	char exp[160], alt[160], got[160] = "";
	struct fx *f = NULL;
	const char *ann;
	bool pass;

	expected(r, exp, alt, sizeof(exp));
	ann = announced_outcome(r, exp, alt, sizeof(exp));
	if (r->state != FX_NONE) {
		f = fx_get(r->state, r->arg);
		if (f->err[0])
			snprintf(got, sizeof(got), "setup failed: %.130s",
				 f->err);
	}
	if (!got[0])
		r->fn(f ? f : &cur, r, got, sizeof(got));
	pass = !strcmp(got, exp) || (alt[0] && !strcmp(got, alt));
	/* A pass with the announced outcome is counted apart. */
	ann = pass && ann && !strcmp(got, ann) ? ann : NULL;
	printf("contract: %s %s expected %s%s%s got %s%s\n",
	       pass ? "PASS" : "FAIL", r->name, exp, alt[0] ? " or " : "", alt,
	       got, ann ? " (as the adapter announces)" : "");
	fflush(stdout);
	/* A fixture that could not be built is not built again. An
	 * announced outcome may have moved the connection on (an Accept
	 * that completed): the next row gets a new fixture. */
	if (f)
		f->intact = f->err[0] || (pass && !r->consumes && !ann);
	if (!pass)
		fail_msg("%s: expected %s%s%s, got %s", r->name, exp,
			 alt[0] ? " or " : "", alt, got);
	rows_passed++;
	rows_announced += ann != NULL;
}

static void reg_buf(struct cm_host *h, struct buf *b)
{
	PMDL mdl;

	b->mem = aligned_alloc(4096, BUF_LEN);
	assert_non_null(b->mem);
	memset(b->mem, 0, BUF_LEN);
	assert_int_equal(
		h->pd->Dispatch->NdkCreateMr(h->pd, FALSE, NULL, NULL, &b->mr),
		STATUS_SUCCESS);
	mdl = IoAllocateMdl(b->mem, BUF_LEN, FALSE, FALSE, NULL);
	assert_non_null(mdl);
	assert_int_equal(b->mr->Dispatch->NdkRegisterMr(
				 b->mr, mdl, BUF_LEN,
				 NDK_MR_FLAG_ALLOW_LOCAL_WRITE |
					 NDK_MR_FLAG_ALLOW_REMOTE_READ |
					 NDK_MR_FLAG_ALLOW_REMOTE_WRITE,
				 NULL, NULL),
			 STATUS_SUCCESS);
	IoFreeMdl(mdl);
	b->ltok = b->mr->Dispatch->NdkGetLocalTokenFromMr(b->mr);
	b->rtok = b->mr->Dispatch->NdkGetRemoteTokenFromMr(b->mr);
}

static int group_setup(void **state)
{
	struct sockaddr_in any = cm_lo4(0);
	NDK_PROVIDER_INFO pi;

	unsetenv("NDK_CM_TIMEOUT_MS");
	for (size_t i = 0; i < sizeof(pd_pattern); i++)
		pd_pattern[i] = (uint8_t)(i * 7 + 1);
	cm_hosts_open(&srv, &cli);
	assert_int_equal(NdkQueryAdapterProvider(cli.ad, &pi), STATUS_SUCCESS);
	printf("contract: provider %s%s%s on %s\n", pi.Provider,
	       pi.Device[0] ? " " : "", pi.Device, cm_test_ifname());
	reg_buf(&cli, &abuf);
	reg_buf(&srv, &pbuf);
	assert_int_equal(cm_listen(&srv, &L, (struct sockaddr *)&any),
			 STATUS_SUCCESS);
	return 0;
}

static int group_teardown(void **state)
{
	fx_teardown(&cur);
	cm_listener_close(&L);
	cm_hosts_close(&srv, &cli);
	free(abuf.mem);
	free(pbuf.mem);
	return 0;
}

int main(void)
{
	static struct CMUnitTest tests[NROWS];
	int failed;

	for (size_t i = 0; i < NROWS; i++) {
		tests[i].name = rows[i].name;
		tests[i].test_func = run_row;
		tests[i].initial_state = (void *)&rows[i];
	}
	failed = _cmocka_run_group_tests("contract", tests, NROWS, group_setup,
					 group_teardown);
	printf("contract: %zu rows, %d passed (%d as the adapter announces), "
	       "%zu failed\n",
	       NROWS, rows_passed, rows_announced, NROWS - (size_t)rows_passed);
	return failed ? 1 : 0;
}
