/* SPDX-License-Identifier: MIT */
/*
 * Traffic generator for the data-path conformance test (check_dp.sh): one
 * loopback connection through the public NDK API only, carrying every
 * RDMAP message we send, so that a capture of lo can be decoded by
 * Wireshark's iWARP dissectors (iwarp_mpa, iwarp_ddp_rdmap).
 *
 * After NdkConnect / NdkAccept / NdkCompleteConnect (Write RTR), with
 * both memory regions registered and the passive side's window bound
 * (NdkBind), the initiator (A) sends to the responder (P), one message
 * at a time, each step waiting for its completions:
 *
 *   1. Send, 100 bytes of pattern            (QN 0, MSN 1)
 *   2. Send with Solicited Event, 64 bytes   (QN 0, MSN 2)
 *   3. Send with Invalidate of the window, 32 bytes (QN 0, MSN 3)
 *   4. RDMA Write, 3000 bytes into P's MR
 *   5. RDMA Read, 5000 bytes from P's MR     (Read Request QN 1, MSN 1,
 *                                             answered by a Read Response)
 *   6. zero-length Send                      (QN 0, MSN 4)
 *   7. RDMA Write, 64 bytes, to the window invalidated in step 3: P
 *      answers with a Terminate (DDP, tagged buffer, invalid STag) and
 *      the connection ends on both sides.
 *
 * Usage: dp_capture [PORT]
 * Listens on 127.0.0.1:PORT (default 0, an ephemeral port), prints
 * "LISTEN <port>" and waits for one line (or EOF) on stdin so that the
 * caller can start a capture filtered on that port. It then prints what
 * the capture must show (STags and TOs in hex, lengths in decimal):
 *
 *   CONNECT <client port>
 *   WINDOW <window STag>
 *   WRITE <sink STag> <TO> <length>
 *   READ <sink STag> <sink TO> <length> <source STag> <source TO>
 *   BADWRITE <STag> <TO> <length>
 *   DONE
 *
 * Exit status 0 on success, 1 on any failure.
 */
#include <inttypes.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "capture.h"

/* Sizes of the messages (check_dp.sh has the same numbers). */
#define SEND_LEN     100
#define SEND_SE_LEN  64
#define SEND_INV_LEN 32
#define WRITE_LEN    3000
#define READ_LEN     5000
#define BAD_LEN	     64

/* Layout of the two 64 KiB buffers. */
#define BUF_LEN	   65536
#define RECV_OFF   0x0000 /* P: receive i at RECV_OFF + i * RECV_SLOT */
#define RECV_SLOT  0x0100
#define N_RECV	   4
#define WRITE_OFF  0x1000 /* P: Write target */
#define READ_OFF   0x3000 /* P: Read source */
#define WINDOW_OFF 0x8000 /* P: the window */
#define WINDOW_LEN 0x1000
#define SINK_OFF   0x4000 /* A: Read sink */
#define SRC_OFF	   0x0000 /* A: Send and Write sources */

static VOID on_disconnect(PVOID ctx)
{
	atomic_fetch_add((atomic_int *)ctx, 1);
}

/* ------------------------------------------------------------------ */
/* Hosts and memory                                                   */

struct host {
	struct cap_host cap;
	NDK_QP *qp;
	NDK_CONNECTOR *conn;
	struct tool_buf b;
	atomic_int disc;
};

static int host_open(struct host *h, bool active)
{
	if (cap_host_open(&h->cap))
		return -1;
	CHECK_ST(h->cap.t.pd->Dispatch->NdkCreateQp(h->cap.t.pd, h->cap.cq,
						    h->cap.cq, NULL, 16, 16, 2,
						    2, 0, NULL, NULL, &h->qp),
		 STATUS_SUCCESS);
	/* The passive side's connector comes with the connect event. */
	if (active)
		CHECK_ST(h->cap.t.ad->Dispatch->NdkCreateConnector(
				 h->cap.t.ad, NULL, NULL, &h->conn),
			 STATUS_SUCCESS);
	return 0;
}

/*
 * A page-aligned buffer, registered for local write and remote access.
 * skip unregistered MRs are created first so that the two adapters'
 * tokens differ (each table starts at index 1): a sink STag taken for a
 * source STag, or the other way round, shows in the capture.
 */
static int host_mr(struct host *h, int skip)
{
	NDK_MR *unused;

	while (skip-- > 0)
		CHECK_ST(h->cap.t.pd->Dispatch->NdkCreateMr(
				 h->cap.t.pd, FALSE, NULL, NULL, &unused),
			 STATUS_SUCCESS);
	tool_buf_alloc(&h->cap.t, &h->b, BUF_LEN, TOOL_MR_ALL_ACCESS);
	return 0;
}

/* The byte pattern check_dp.sh rebuilds: (i * 31 + seed) mod 256. */
static void fill(uint8_t *p, size_t len, unsigned int seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (uint8_t)(i * 31 + seed);
}

static uint64_t va(const void *p)
{
	return (uint64_t)(uintptr_t)p;
}

/* Exactly one result on cq within WAIT_MS, checked for type and status. */
static int poll_one(struct host *h, NDK_OPERATION_TYPE type, NTSTATUS status,
		    NDK_RESULT_EX *res)
{
	uint64_t end = (tool_now_ns() / 1000000u) + WAIT_MS;
	ULONG got = 0;

	while (!got && (tool_now_ns() / 1000000u) < end) {
		got = h->cap.cq->Dispatch->NdkGetCqResultsEx(h->cap.cq, res, 1);
		if (!got)
			tool_sleep_ms(1);
	}
	CHECK(got == 1);
	if (res->Type != type || res->Status != status) {
		cap_failed(__FILE__, __LINE__,
			   "completion type 0x%x status %s, expected type 0x%x "
			   "status %s",
			   (unsigned int)res->Type, NdkStatusName(res->Status),
			   (unsigned int)type, NdkStatusName(status));
		return -1;
	}
	return 0;
}

static NDK_SGE sge(struct host *h, size_t off, size_t len)
{
	return (NDK_SGE){ .VirtualAddress = h->b.mem + off,
			  .Length = (ULONG)len,
			  .MemoryRegionToken = h->b.ltok };
}

/* ------------------------------------------------------------------ */
/* Connection                                                         */

static int connect_pair(struct host *a, struct host *p,
			struct tool_listener *ev, const struct sockaddr_in *dst)
{
	struct sockaddr_in src = cap_lo4(0);
	struct tool_wait conn, acc, cc;

	tool_wait_init(&conn);
	CHECK_ST(a->conn->Dispatch->NdkConnect(a->conn, a->qp, (PSOCKADDR)&src,
					       sizeof(src), (PSOCKADDR)dst,
					       sizeof(*dst), 2, 2, NULL, 0,
					       tool_wait_done, &conn),
		 STATUS_PENDING);
	p->conn = tool_next_incoming(ev, WAIT_MS);
	CHECK(p->conn != NULL);
	tool_wait_init(&acc);
	CHECK_ST(p->conn->Dispatch->NdkAccept(p->conn, p->qp, 2, 2, NULL, 0,
					      on_disconnect, &p->disc,
					      tool_wait_done, &acc),
		 STATUS_PENDING);
	CHECK_ST(tool_wait_for(&conn, WAIT_MS), STATUS_SUCCESS);
	if (cap_print_local_port("CONNECT", a->conn))
		return -1;
	tool_wait_init(&cc);
	CHECK_ST(tool_wait_result(&cc,
				  a->conn->Dispatch->NdkCompleteConnect(
					  a->conn, on_disconnect, &a->disc,
					  tool_wait_done, &cc),
				  WAIT_MS),
		 STATUS_SUCCESS);
	/* The responder's Accept completes when the RTR arrives. */
	CHECK_ST(tool_wait_for(&acc, WAIT_MS), STATUS_SUCCESS);
	return 0;
}

/* ------------------------------------------------------------------ */
/* The messages                                                       */

/* A sends len bytes from SRC_OFF with flags (and an invalidate if inv);
 * P's next receive completes with them. */
static int send_one(struct host *a, struct host *p, int idx, size_t len,
		    unsigned int seed, ULONG flags, bool inv, UINT32 inv_tok)
{
	NDK_SGE s = sge(a, SRC_OFF, len);
	NDK_RESULT_EX res;
	const uint8_t *dst = p->b.mem + RECV_OFF + (size_t)idx * RECV_SLOT;

	fill(a->b.mem + SRC_OFF, len, seed);
	if (inv)
		CHECK_ST(a->qp->Dispatch->NdkSendAndInvalidate(
				 a->qp, (PVOID)(intptr_t)idx, len ? &s : NULL,
				 len ? 1 : 0, flags, inv_tok),
			 STATUS_SUCCESS);
	else
		CHECK_ST(a->qp->Dispatch->NdkSend(a->qp, (PVOID)(intptr_t)idx,
						  len ? &s : NULL, len ? 1 : 0,
						  flags),
			 STATUS_SUCCESS);
	if (poll_one(a, NdkOperationTypeSend, STATUS_SUCCESS, &res))
		return -1;
	CHECK(res.RequestContext == (PVOID)(intptr_t)idx);
	if (poll_one(p,
		     inv ? NdkOperationTypeReceiveAndInvalidate
			 : NdkOperationTypeReceive,
		     STATUS_SUCCESS, &res))
		return -1;
	CHECK(res.RequestContext == (PVOID)(intptr_t)idx);
	CHECK(res.BytesTransferred == len);
	CHECK(!inv || res.TypeSpecificCompletionOutput == inv_tok);
	CHECK(!memcmp(dst, a->b.mem + SRC_OFF, len));
	return 0;
}

static int run_messages(struct host *a, struct host *p)
{
	NDK_MW *mw;
	UINT32 wtok;
	NDK_RESULT_EX res;
	NDK_SGE s;
	int i;

	/* P: a window on its MR, bound through its QP (no wire traffic). */
	CHECK_ST(p->cap.t.pd->Dispatch->NdkCreateMw(p->cap.t.pd, NULL, NULL,
						    &mw),
		 STATUS_SUCCESS);
	CHECK_ST(p->qp->Dispatch->NdkBind(p->qp, (PVOID)0x100, p->b.mr, mw,
					  p->b.mem + WINDOW_OFF, WINDOW_LEN,
					  NDK_OP_FLAG_ALLOW_REMOTE_WRITE),
		 STATUS_SUCCESS);
	wtok = mw->Dispatch->NdkGetRemoteTokenFromMw(mw);
	if (poll_one(p, NdkOperationTypeBind, STATUS_SUCCESS, &res))
		return -1;
	printf("WINDOW 0x%08" PRIx32 "\n", (uint32_t)wtok);

	for (i = 0; i < N_RECV; i++) {
		NDK_SGE r = sge(p, RECV_OFF + (size_t)i * RECV_SLOT, RECV_SLOT);

		CHECK_ST(p->qp->Dispatch->NdkReceive(p->qp, (PVOID)(intptr_t)i,
						     &r, 1),
			 STATUS_SUCCESS);
	}

	/* 1-3: Send, Send with SE, Send with Invalidate of the window. */
	if (send_one(a, p, 0, SEND_LEN, 7, 0, false, 0) ||
	    send_one(a, p, 1, SEND_SE_LEN, 11,
		     NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT, false, 0) ||
	    send_one(a, p, 2, SEND_INV_LEN, 13, 0, true, wtok))
		return -1;

	/* 4: RDMA Write of 3000 bytes into P's MR. */
	fill(a->b.mem + SRC_OFF, WRITE_LEN, 17);
	s = sge(a, SRC_OFF, WRITE_LEN);
	CHECK_ST(a->qp->Dispatch->NdkWrite(a->qp, (PVOID)4, &s, 1,
					   va(p->b.mem + WRITE_OFF), p->b.rtok,
					   0),
		 STATUS_SUCCESS);
	if (poll_one(a, NdkOperationTypeWrite, STATUS_SUCCESS, &res))
		return -1;
	printf("WRITE 0x%08" PRIx32 " 0x%016" PRIx64 " %u\n",
	       (uint32_t)p->b.rtok, va(p->b.mem + WRITE_OFF), WRITE_LEN);

	/* 5: RDMA Read of 5000 bytes from P's MR into A's. */
	fill(p->b.mem + READ_OFF, READ_LEN, 19);
	s = sge(a, SINK_OFF, READ_LEN);
	CHECK_ST(a->qp->Dispatch->NdkRead(a->qp, (PVOID)5, &s, 1,
					  va(p->b.mem + READ_OFF), p->b.rtok,
					  0),
		 STATUS_SUCCESS);
	if (poll_one(a, NdkOperationTypeRead, STATUS_SUCCESS, &res))
		return -1;
	CHECK(res.BytesTransferred == READ_LEN);
	CHECK(!memcmp(a->b.mem + SINK_OFF, p->b.mem + READ_OFF, READ_LEN));
	printf("READ 0x%08" PRIx32 " 0x%016" PRIx64 " %u 0x%08" PRIx32
	       " 0x%016" PRIx64 "\n",
	       (uint32_t)a->b.ltok, va(a->b.mem + SINK_OFF), READ_LEN,
	       (uint32_t)p->b.rtok, va(p->b.mem + READ_OFF));

	/* 6: zero-length Send; arriving behind the Write, it also says the
	 * Write was placed. */
	if (send_one(a, p, 3, 0, 0, 0, false, 0))
		return -1;
	fill(a->b.mem + SRC_OFF, WRITE_LEN, 17);
	CHECK(!memcmp(p->b.mem + WRITE_OFF, a->b.mem + SRC_OFF, WRITE_LEN));
	fflush(stdout);

	/* 7: a Write through the invalidated window: P Terminates. */
	memset(p->b.mem + WINDOW_OFF, 0x3c, BAD_LEN);
	fill(a->b.mem + SRC_OFF, BAD_LEN, 23);
	s = sge(a, SRC_OFF, BAD_LEN);
	printf("BADWRITE 0x%08" PRIx32 " 0x%016" PRIx64 " %u\n", (uint32_t)wtok,
	       va(p->b.mem + WINDOW_OFF), BAD_LEN);
	fflush(stdout);
	CHECK_ST(a->qp->Dispatch->NdkWrite(a->qp, (PVOID)7, &s, 1,
					   va(p->b.mem + WINDOW_OFF), wtok, 0),
		 STATUS_SUCCESS);
	CHECK(cap_wait_positive(&p->disc, WAIT_MS)); /* at the target */
	CHECK(cap_wait_positive(&a->disc, WAIT_MS)); /* at the initiator */
	/* Not one byte landed. */
	for (i = 0; i < BAD_LEN; i++)
		CHECK(p->b.mem[WINDOW_OFF + i] == 0x3c);
	return 0;
}

static int run(uint16_t listen_port)
{
	static struct tool_listener ev;
	static struct host a, p;
	struct sockaddr_in bound;
	int ret;

	if (host_open(&p, false) || host_open(&a, true) || host_mr(&p, 0) ||
	    host_mr(&a, 2) || cap_listen(p.cap.t.ad, listen_port, &ev, &bound))
		return -1;
	ret = connect_pair(&a, &p, &ev, &bound);
	if (!ret)
		ret = run_messages(&a, &p);
	/* NdkCloseAdapter closes whatever is left and waits for callbacks. */
	NdkCloseAdapter(a.cap.t.ad);
	NdkCloseAdapter(p.cap.t.ad);
	free(a.b.mem);
	free(p.b.mem);
	return ret;
}

int main(int argc, char **argv)
{
	return cap_main("dp_capture", argc, argv, run);
}
