// SPDX-License-Identifier: MIT
/*
 * NVMe over Fabrics RDMA host on NDK (nvme_host.h).
 *
 * A command is one slot of its queue: the 64-byte SQE in the queue's SQE
 * MR, a data buffer, and in fast-register mode an MR of its own. It is
 * sent as an RDMA Send (SQE, plus the data when it travels in the
 * capsule); the controller moves the data with RDMA Reads (host writes)
 * or Writes (host reads) on the keyed SGL, then Sends the 16-byte CQE,
 * with Invalidate of our token when the SGL asked for it. The slot is free
 * again once the Send completed, the CQE arrived and the token is no
 * longer valid.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "nvme_host.h"

#define NH_PAGE 4096u
/* Work requests per command: FastRegister, Send, Invalidate. */
#define NH_WR_PER_CMD 3
/* How long a flushed queue may take to return every work request. */
#define NH_DRAIN_MS 5000
/* How long a failed controller's queues may take to disconnect. */
#define NH_DISCONNECT_FAILED_MS 3000
/* Timeouts are checked this often. */
#define NH_CHECK_MS	 100
#define NH_CC_IOSQES	 (6u << 16) /* 64-byte SQE */
#define NH_CC_IOCQES	 (4u << 20) /* 16-byte CQE */
#define NH_CC_SHN_NORMAL (1u << 14)
#define NH_CSTS_CFS	 0x2u
#define NH_CSTS_SHST	 (0x3u << 2)
#define NH_SC_MORE	 0x2000

static uint64_t now_ms(void)
{
	return tool_now_ns() / 1000000u;
}

/* A queue by index: 0 the admin queue, then the I/O queues. */
static struct nh_queue *queue_at(struct nh_ctrl *c, unsigned int i)
{
	return i ? &c->io[i - 1] : &c->admin;
}

static unsigned int queue_count(const struct nh_ctrl *c)
{
	return 1 + (c->io ? c->nio : 0);
}

unsigned int nh_busy(const struct nh_ctrl *c)
{
	unsigned int i, n = c->admin.busy;

	for (i = 0; c->io && i < c->nio; i++)
		n += c->io[i].busy;
	return n;
}

const char *nh_status_str(int status, char *buf, size_t len)
{
	const char *name;

	switch (status) {
	case NH_ERR_ABORTED:
		return "aborted: the connection was lost before the response";
	case NH_ERR_TIMEOUT:
		return "timed out";
	case NH_ERR_TRANSFER:
		return "a local work request failed";
	case NH_ERR_SUBMIT:
		return "could not be posted";
	}
	name = nvme_status_name((uint16_t)status);
	/* Bit 13 is More (an error log entry exists), 14 Do Not Retry. */
	if (!strcmp(name, "other status"))
		snprintf(buf, len, "0x%x (SCT %u SC 0x%02x%s%s)", status,
			 (status >> 8) & 0x7, status & 0xff,
			 status & NH_SC_MORE ? ", More" : "",
			 status & NVME_SC_DNR ? ", DNR" : "");
	else
		snprintf(buf, len, "0x%x (%s%s%s)", status, name,
			 status & NH_SC_MORE ? ", More" : "",
			 status & NVME_SC_DNR ? ", DNR" : "");
	return buf;
}

/* ------------------------------------------------------------------ */
/* Provider callbacks: they only wake the polling thread.             */

static void nh_wake(struct nh_ctrl *c)
{
	pthread_mutex_lock(&c->lock);
	c->gen++;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
}

static VOID nh_on_cq(PVOID ctx, NTSTATUS status)
{
	struct nh_ctrl *c = ctx;

	/* Anything but success is a CQ that overflowed: it is dead. */
	if (status != STATUS_SUCCESS)
		atomic_fetch_add(&c->cq_errors, 1);
	nh_wake(c);
}

static VOID nh_on_disconnect(PVOID ctx, ULONG reason)
{
	struct nh_queue *q = ctx;

	atomic_store(&q->disc_reason, reason);
	atomic_store(&q->disc_order,
		     atomic_fetch_add(&q->ctrl->disc_count, 1) + 1);
	atomic_store(&q->disconnected, true);
	nh_wake(q->ctrl);
}

/* ------------------------------------------------------------------ */
/* Failure                                                            */

static void queue_kill(struct nh_queue *q)
{
	if (!q->qp || q->dead)
		return;
	q->dead = true;
	q->dead_since = now_ms();
	/* Every posted request completes, flushed ones as cancelled. */
	q->qp->Dispatch->NdkFlush(q->qp);
}

void nh_fail(struct nh_ctrl *c, const char *fmt, ...)
{
	unsigned int i;
	va_list ap;

	if (c->failed)
		return;
	c->failed = true;
	va_start(ap, fmt);
	vsnprintf(c->why, sizeof(c->why), fmt, ap);
	va_end(ap);
	c->outstanding_at_failure = nh_busy(c);
	fprintf(stderr, "%s: controller failed: %s (%u commands outstanding)\n",
		tool_prog, c->why, c->outstanding_at_failure);
	for (i = 0; i < queue_count(c); i++)
		queue_kill(queue_at(c, i));
}

/* ------------------------------------------------------------------ */
/* Slots                                                              */

struct nh_req *nh_get(struct nh_queue *q)
{
	struct nh_req *r;

	if (q->ctrl->failed || q->dead || !q->connected || !q->nfree)
		return NULL;
	r = &q->reqs[q->free_idx[--q->nfree]];
	r->busy = true;
	q->busy++;
	r->gen++;
	r->cid = (uint16_t)(r->idx | (unsigned int)r->gen << 8);
	r->wait = 0;
	r->len = 0;
	r->to_ctrl = false;
	r->in_capsule = false;
	r->timed_out = false;
	r->got_cqe = false;
	r->wr_status = STATUS_SUCCESS;
	r->status = 0;
	r->done = NULL;
	r->arg = NULL;
	memset(&r->cmd, 0, sizeof(r->cmd));
	memset(&r->cqe, 0, sizeof(r->cqe));
	return r;
}

static void req_finish(struct nh_req *r)
{
	struct nh_queue *q = r->q;
	struct nh_ctrl *c = q->ctrl;

	if (r->got_cqe)
		r->status = r->cqe.status;
	else if (r->status != NH_ERR_SUBMIT)
		r->status = r->timed_out ? NH_ERR_TIMEOUT
			    : r->wr_status != STATUS_SUCCESS &&
					    r->wr_status != STATUS_CANCELLED
				    ? NH_ERR_TRANSFER
				    : NH_ERR_ABORTED;
	r->wait = 0;
	c->completed++;
	if (c->failed) {
		if (r->status < 0)
			c->after_fail_errors++;
		else
			c->after_fail_ok++;
	}
	if (r->done)
		r->done(r);
	r->busy = false;
	q->busy--;
	q->free_idx[q->nfree++] = r->idx;
}

static void maybe_finish(struct nh_req *r)
{
	if (r->busy && !r->wait)
		req_finish(r);
}

void nh_prep_rw(struct nh_req *r, bool write, uint64_t slba, uint32_t nblocks)
{
	struct nh_ctrl *c = r->q->ctrl;

	nvme_rw_cmd(&r->cmd, write, c->nsid, slba, nblocks);
	r->len = (size_t)nblocks * c->lba_size;
	r->to_ctrl = write;
}

/* The keyed SGL for r's data: a token the controller may use. */
static bool map_data(struct nh_req *r)
{
	struct nh_queue *q = r->q;
	struct nh_ctrl *c = q->ctrl;
	NDK_QP *qp = q->qp;
	ULONG pages, flags;
	NTSTATUS st;

	if (c->mem == NH_MEM_GLOBAL) {
		r->cmd.sgl_type =
			NVME_SGL_KEYED_DATA_BLOCK | NVME_SGL_SUBTYPE_ADDRESS;
		r->cmd.sgl_key = q->data.rtok;
		return true;
	}
	/* Only what the command needs, only the access it needs. */
	pages = (ULONG)((r->len + NH_PAGE - 1) / NH_PAGE);
	flags = r->to_ctrl ? NDK_OP_FLAG_ALLOW_REMOTE_READ
			   : NDK_OP_FLAG_ALLOW_REMOTE_WRITE;
	st = qp->Dispatch->NdkFastRegister(qp, r, r->fr, pages,
					   r->lam->AdapterPageArray, 0, r->len,
					   r->data, flags | NDK_OP_FLAG_DEFER);
	if (!NT_SUCCESS(st)) {
		nh_fail(c, "queue %u: NdkFastRegister: %s", q->qid,
			NdkStatusName(st));
		return false;
	}
	q->wr_out++;
	r->wait |= NH_WAIT_FR;
	r->fr_valid = true;
	r->fr_tok = r->fr->Dispatch->NdkGetRemoteTokenFromMr(r->fr);
	r->cmd.sgl_type =
		NVME_SGL_KEYED_DATA_BLOCK | NVME_SGL_SUBTYPE_INVALIDATE;
	r->cmd.sgl_key = r->fr_tok;
	return true;
}

void nh_submit(struct nh_req *r)
{
	struct nh_queue *q = r->q;
	struct nh_ctrl *c = q->ctrl;
	NDK_QP *qp = q->qp;
	NDK_SGE sge[2];
	ULONG nsge = 1;
	NTSTATUS st;

	r->cmd.command_id = r->cid;
	/* PSDT 01b: the data pointer is an SGL (the only kind on RDMA). */
	r->cmd.flags = (uint8_t)((r->cmd.flags & 0x3f) | NVME_CMD_PSDT_SGL);
	r->cmd.sgl_addr = 0;
	r->cmd.sgl_length = 0;
	r->cmd.sgl_key = 0;
	r->cmd.sgl_type = NVME_SGL_KEYED_DATA_BLOCK | NVME_SGL_SUBTYPE_ADDRESS;
	if (r->len && r->to_ctrl && q->qid && r->len <= c->in_capsule_max) {
		/* In the capsule, right behind the SQE (ICDOFF 0). */
		r->in_capsule = true;
		r->cmd.sgl_type = NVME_SGL_DATA_BLOCK | NVME_SGL_SUBTYPE_OFFSET;
		r->cmd.sgl_length = (uint32_t)r->len;
		sge[1].VirtualAddress = r->data;
		sge[1].Length = (ULONG)r->len;
		sge[1].MemoryRegionToken = q->data.ltok;
		nsge = 2;
	} else if (r->len) {
		r->cmd.sgl_addr = (uint64_t)(uintptr_t)r->data;
		r->cmd.sgl_length = (uint32_t)r->len;
		if (!map_data(r)) {
			r->status = NH_ERR_SUBMIT;
			req_finish(r);
			return;
		}
	}
	nvme_sqe_encode(r->sqe, &r->cmd);
	sge[0].VirtualAddress = r->sqe;
	sge[0].Length = NVME_SQE_SIZE;
	sge[0].MemoryRegionToken = q->sqes.ltok;
	r->t_submit = tool_now_ns();
	st = qp->Dispatch->NdkSend(qp, r, sge, nsge, 0);
	if (!NT_SUCCESS(st)) {
		r->status = NH_ERR_SUBMIT;
		nh_fail(c, "queue %u: NdkSend: %s", q->qid, NdkStatusName(st));
		/* A FastRegister posted before it still completes. */
		maybe_finish(r);
		return;
	}
	q->wr_out++;
	r->wait |= NH_WAIT_SEND | NH_WAIT_CQE;
}

/* ------------------------------------------------------------------ */
/* Completions                                                        */

static void repost_receive(struct nh_queue *q, uint8_t *buf)
{
	NDK_SGE sge = { .VirtualAddress = buf,
			.Length = NVME_CQE_SIZE,
			.MemoryRegionToken = q->cqes.ltok };
	NTSTATUS st;

	if (q->dead)
		return;
	st = q->qp->Dispatch->NdkReceive(q->qp, buf, &sge, 1);
	if (!NT_SUCCESS(st)) {
		nh_fail(q->ctrl, "queue %u: NdkReceive: %s", q->qid,
			NdkStatusName(st));
		return;
	}
	q->rx_out++;
}

static void post_invalidate(struct nh_req *r)
{
	struct nh_queue *q = r->q;
	NTSTATUS st;

	st = q->qp->Dispatch->NdkInvalidate(q->qp, r, &r->fr->Header, 0);
	if (!NT_SUCCESS(st)) {
		nh_fail(q->ctrl, "queue %u: NdkInvalidate: %s", q->qid,
			NdkStatusName(st));
		return;
	}
	q->wr_out++;
	r->wait |= NH_WAIT_INV;
}

static void on_receive(struct nh_queue *q, const NDK_RESULT_EX *res)
{
	struct nh_ctrl *c = q->ctrl;
	uint8_t *buf = res->RequestContext;
	struct nvme_cqe cqe;
	struct nh_req *r;
	unsigned int idx;
	UINT32 tok;

	if (res->Status != STATUS_SUCCESS) {
		if (!q->dead)
			nh_fail(c,
				"queue %u: receive failed: %s (provider code %u)",
				q->qid, NdkStatusName(res->Status),
				res->ProviderErrorCode);
		return;
	}
	if (res->BytesTransferred != NVME_CQE_SIZE) {
		nh_fail(c, "queue %u: a %u-byte response capsule", q->qid,
			res->BytesTransferred);
		return;
	}
	nvme_cqe_decode(buf, &cqe);
	idx = cqe.command_id & 0xffu;
	r = idx < q->size ? &q->reqs[idx] : NULL;
	if (!r || !r->busy || r->cid != cqe.command_id ||
	    !(r->wait & NH_WAIT_CQE)) {
		c->stray_cqes++;
		fprintf(stderr,
			"%s: queue %u: a response for no command (cid 0x%x, status 0x%x)\n",
			tool_prog, q->qid, cqe.command_id, cqe.status);
		repost_receive(q, buf);
		return;
	}
	r->cqe = cqe;
	r->got_cqe = true;
	r->wait &= ~NH_WAIT_CQE;
	if (res->Type == NdkOperationTypeReceiveAndInvalidate) {
		tok = (UINT32)res->TypeSpecificCompletionOutput;
		if (r->fr_valid && tok == r->fr_tok)
			r->fr_valid = false;
		else
			nh_fail(c,
				"queue %u: the controller invalidated token 0x%x with cid 0x%x, which holds 0x%x",
				q->qid, tok, r->cid,
				r->fr_valid ? r->fr_tok : 0);
	}
	/* No remote invalidation (no data moved, or an early error): the
	 * token must go before the slot's next FastRegister. */
	if (r->fr_valid && !q->dead)
		post_invalidate(r);
	repost_receive(q, buf);
	maybe_finish(r);
}

static const char *op_name(NDK_OPERATION_TYPE t)
{
	switch (t) {
	case NdkOperationTypeSend:
		return "Send";
	case NdkOperationTypeFastRegister:
		return "FastRegister";
	case NdkOperationTypeInvalidate:
		return "Invalidate";
	default:
		return "request";
	}
}

static void reap_one(struct nh_queue *q, const NDK_RESULT_EX *res)
{
	struct nh_ctrl *c = q->ctrl;
	struct nh_req *r = res->RequestContext;
	unsigned int bit;

	switch (res->Type) {
	case NdkOperationTypeReceive:
	case NdkOperationTypeReceiveAndInvalidate:
		q->rx_out--;
		on_receive(q, res);
		return;
	case NdkOperationTypeSend:
		bit = NH_WAIT_SEND;
		break;
	case NdkOperationTypeFastRegister:
		bit = NH_WAIT_FR;
		break;
	case NdkOperationTypeInvalidate:
		bit = NH_WAIT_INV;
		break;
	default:
		nh_fail(c, "queue %u: completion of unexpected type 0x%x",
			q->qid, res->Type);
		return;
	}
	q->wr_out--;
	if (!r || r->q != q || !r->busy || !(r->wait & bit)) {
		nh_fail(c, "queue %u: a %s completion for no command", q->qid,
			op_name(res->Type));
		return;
	}
	r->wait &= ~bit;
	if (res->Status != STATUS_SUCCESS) {
		if (r->wr_status == STATUS_SUCCESS)
			r->wr_status = res->Status;
		if (!q->dead)
			nh_fail(c, "queue %u: %s failed: %s (provider code %u)",
				q->qid, op_name(res->Type),
				NdkStatusName(res->Status),
				res->ProviderErrorCode);
	} else if (bit == NH_WAIT_INV) {
		r->fr_valid = false;
	}
	maybe_finish(r);
}

static unsigned int reap(struct nh_queue *q)
{
	NDK_RESULT_EX res[16];
	unsigned int total = 0;
	ULONG n, i;

	if (!q->cq)
		return 0;
	do {
		n = q->cq->Dispatch->NdkGetCqResultsEx(q->cq, res, 16);
		for (i = 0; i < n; i++)
			reap_one(q, &res[i]);
		total += n;
	} while (n);
	return total;
}

static unsigned int reap_all(struct nh_ctrl *c)
{
	unsigned int i, n = 0;

	for (i = 0; i < queue_count(c); i++)
		n += reap(queue_at(c, i));
	return n;
}

/* ------------------------------------------------------------------ */
/* Keep Alive, timeouts, lost connections                             */

static void ka_done(struct nh_req *r)
{
	struct nh_ctrl *c = r->q->ctrl;
	char buf[96];

	c->ka_busy = false;
	if (r->status) {
		c->ka_errors++;
		if (!c->failed)
			fprintf(stderr, "%s: Keep Alive: %s\n", tool_prog,
				nh_status_str(r->status, buf, sizeof(buf)));
	}
}

static void send_keep_alive(struct nh_ctrl *c, uint64_t now)
{
	struct nh_req *r;

	c->ka_next = now + MAX(c->o.kato_ms / 2, 1u);
	if (c->ka_busy)
		return;
	r = nh_get(&c->admin);
	if (!r)
		return;
	nvme_keep_alive_cmd(&r->cmd);
	r->done = ka_done;
	c->ka_busy = true;
	c->ka_sent++;
	nh_submit(r);
}

static void check_timeouts(struct nh_ctrl *c, uint64_t now_ns)
{
	uint64_t limit = (uint64_t)c->o.cmd_timeout_ms * 1000000u;
	unsigned int i, k;

	for (i = 0; i < queue_count(c); i++) {
		struct nh_queue *q = queue_at(c, i);

		for (k = 0; q->busy && k < q->size; k++) {
			struct nh_req *r = &q->reqs[k];

			if (!r->busy || !(r->wait & NH_WAIT_CQE) ||
			    r->timed_out || now_ns < r->t_submit + limit)
				continue;
			r->timed_out = true;
			nh_fail(c,
				"queue %u: command 0x%x (opcode 0x%02x) got no response in %u ms",
				q->qid, r->cid, r->cmd.opcode,
				c->o.cmd_timeout_ms);
		}
	}
}

/* A flushed queue whose work requests are all back ends its commands. */
static void drain_dead(struct nh_ctrl *c, uint64_t now)
{
	unsigned int i, k;

	for (i = 0; i < queue_count(c); i++) {
		struct nh_queue *q = queue_at(c, i);
		/* dead_since may be later than now: nh_fail ran after now
		 * was read. */
		bool late = now > q->dead_since + NH_DRAIN_MS;

		if (!q->dead || !q->busy || (!late && (q->wr_out || q->rx_out)))
			continue;
		if (late && !q->drain_warned) {
			q->drain_warned = true;
			fprintf(stderr,
				"%s: queue %u: the flush returned nothing for %u work requests and %u receives in %u ms\n",
				tool_prog, q->qid, q->wr_out, q->rx_out,
				NH_DRAIN_MS);
		}
		for (k = 0; k < q->size; k++)
			if (q->reqs[k].busy)
				req_finish(&q->reqs[k]);
	}
}

/* ProviderDisconnectReason in words (docs/ndk.md, Disconnect). */
static const char *disconnect_reason(NTSTATUS reason)
{
	switch (reason) {
	case STATUS_SUCCESS:
		return "the controller closed the connection";
	case STATUS_CONNECTION_RESET:
		return "the connection was reset";
	case STATUS_CONNECTION_ABORTED:
		return "the connection ended with a Terminate";
	case STATUS_IO_TIMEOUT:
		return "the controller stopped answering";
	default:
		return NdkStatusName(reason);
	}
}

static void housekeeping(struct nh_ctrl *c)
{
	uint64_t ns = tool_now_ns(), now = ns / 1000000u;
	struct nh_queue *lost = NULL;
	unsigned int i;

	/* The queue whose connection ended first names the failure. */
	for (i = 0; !c->failed && i < queue_count(c); i++) {
		struct nh_queue *q = queue_at(c, i);
		unsigned int order = atomic_load(&q->disc_order);

		if (!order || q->closing)
			continue;
		if (!lost || order < atomic_load(&lost->disc_order))
			lost = q;
	}
	if (lost)
		nh_fail(c, "queue %u: %s", lost->qid,
			disconnect_reason(
				(NTSTATUS)atomic_load(&lost->disc_reason)));
	if (atomic_load(&c->cq_errors))
		nh_fail(c, "a completion queue overflowed");
	if (now >= c->next_check) {
		c->next_check = now + NH_CHECK_MS;
		check_timeouts(c, ns);
	}
	if (c->failed)
		drain_dead(c, now);
	else if (c->ka_next && now >= c->ka_next)
		send_keep_alive(c, now);
}

static void arm_all(struct nh_ctrl *c)
{
	unsigned int i;

	for (i = 0; i < queue_count(c); i++) {
		NDK_CQ *cq = queue_at(c, i)->cq;

		if (cq)
			cq->Dispatch->NdkArmCq(cq, NDK_CQ_NOTIFY_ANY);
	}
}

unsigned int nh_poll(struct nh_ctrl *c, unsigned int wait_ms)
{
	uint64_t deadline = now_ms() + wait_ms, now, wake;
	unsigned long done0 = c->completed, gen;
	struct timespec ts;

	for (;;) {
		unsigned int n = reap_all(c);

		housekeeping(c);
		if (c->completed != done0 || !wait_ms)
			break;
		if (n)
			continue;
		pthread_mutex_lock(&c->lock);
		gen = c->gen;
		pthread_mutex_unlock(&c->lock);
		/* A completion queued before the arm raises nothing: look
		 * once more after arming. */
		arm_all(c);
		if (reap_all(c))
			continue;
		now = now_ms();
		if (now >= deadline)
			break;
		wake = MIN(deadline, c->next_check);
		if (c->ka_next && !c->failed)
			wake = MIN(wake, c->ka_next);
		ts = tool_deadline((unsigned int)(wake > now ? wake - now : 1));
		pthread_mutex_lock(&c->lock);
		while (c->gen == gen &&
		       pthread_cond_timedwait(&c->cond, &c->lock, &ts) !=
			       ETIMEDOUT)
			;
		pthread_mutex_unlock(&c->lock);
	}
	return (unsigned int)(c->completed - done0);
}

bool nh_drain(struct nh_ctrl *c)
{
	uint64_t until =
		now_ms() + (uint64_t)c->o.cmd_timeout_ms + 2 * NH_DRAIN_MS;

	while (nh_busy(c) && now_ms() < until)
		nh_poll(c, 100);
	return !nh_busy(c);
}

/* ------------------------------------------------------------------ */
/* Synchronous commands                                               */

struct exec_ctx {
	void *buf;
	size_t len;
	struct nvme_cqe cqe;
	int status;
	bool done;
};

static void exec_done(struct nh_req *r)
{
	struct exec_ctx *x = r->arg;

	x->cqe = r->cqe;
	x->status = r->status;
	if (!r->status && !r->to_ctrl && x->len)
		memcpy(x->buf, r->data, x->len);
	x->done = true;
}

int nh_exec(struct nh_queue *q, const struct nvme_sqe *cmd, void *buf,
	    size_t len, bool to_ctrl, struct nvme_cqe *cqe)
{
	struct nh_ctrl *c = q->ctrl;
	struct exec_ctx x = { .buf = buf, .len = len };
	struct nh_req *r;

	if (len > q->slot_bytes)
		return NH_ERR_SUBMIT;
	while (!(r = nh_get(q))) {
		if (c->failed || q->dead || !q->connected)
			return NH_ERR_ABORTED;
		nh_poll(c, 100);
	}
	r->cmd = *cmd;
	r->len = len;
	r->to_ctrl = to_ctrl;
	if (to_ctrl && len)
		memcpy(r->data, buf, len);
	r->done = exec_done;
	r->arg = &x;
	nh_submit(r);
	/* Ends: a response, the command timeout, or a lost queue drained. */
	while (!x.done)
		nh_poll(c, 1000);
	if (cqe)
		*cqe = x.cqe;
	return x.status;
}

/* ------------------------------------------------------------------ */
/* Queues                                                             */

/* A fast-register MR over the slot's buffer, with its page list. */
static NTSTATUS fr_setup(struct nh_ctrl *c, struct nh_req *r, size_t bytes)
{
	NDK_ADAPTER *ad = c->host.ad;
	NDK_PD *pd = c->host.pd;
	ULONG pages = (ULONG)(bytes / NH_PAGE), fbo = 0, lam_size;
	struct tool_wait w;
	NTSTATUS st;

	st = pd->Dispatch->NdkCreateMr(pd, TRUE, NULL, NULL, &r->fr);
	if (!NT_SUCCESS(st)) {
		r->fr = NULL;
		return st;
	}
	tool_wait_init(&w);
	st = r->fr->Dispatch->NdkInitializeFastRegisterMr(r->fr, pages, TRUE,
							  tool_wait_done, &w);
	st = tool_wait_result(&w, st, 0);
	if (!NT_SUCCESS(st))
		return st;
	r->mdl = IoAllocateMdl(r->data, (ULONG)bytes, FALSE, FALSE, NULL);
	lam_size = (ULONG)(sizeof(NDK_LOGICAL_ADDRESS_MAPPING) +
			   pages * sizeof(NDK_LOGICAL_ADDRESS));
	r->lam = calloc(1, lam_size);
	if (!r->mdl || !r->lam)
		return STATUS_INSUFFICIENT_RESOURCES;
	tool_wait_init(&w);
	st = ad->Dispatch->NdkBuildLAM(ad, r->mdl, bytes, tool_wait_done, &w,
				       r->lam, &lam_size, &fbo);
	st = tool_wait_result(&w, st, 0);
	if (NT_SUCCESS(st) && (fbo || r->lam->AdapterPageCount < pages))
		st = STATUS_INVALID_DEVICE_STATE;
	if (!NT_SUCCESS(st)) {
		free(r->lam);
		r->lam = NULL;
	}
	return st;
}

static void fr_teardown(struct nh_ctrl *c, struct nh_req *r)
{
	if (r->lam)
		c->host.ad->Dispatch->NdkReleaseLAM(c->host.ad, r->lam);
	free(r->lam);
	r->lam = NULL;
	if (r->mdl)
		IoFreeMdl(r->mdl);
	r->mdl = NULL;
	if (r->fr)
		TOOL_CLOSE(r->fr);
	r->fr = NULL;
}

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n, size);

	if (!p) {
		fprintf(stderr, "%s: out of memory\n", tool_prog);
		exit(TOOL_EXIT_FAIL);
	}
	return p;
}

/* Memory, CQ, QP and posted receives; a setup failure exits
 * TOOL_EXIT_FAIL. */
static void queue_init(struct nh_ctrl *c, struct nh_queue *q, uint16_t qid,
		       unsigned int size, size_t slot_bytes)
{
	struct tool_host *h = &c->host;
	ULONG sq = NH_WR_PER_CMD * size + 4;
	ULONG dflags = NDK_MR_FLAG_ALLOW_LOCAL_WRITE;
	unsigned int i;
	NTSTATUS st;

	memset(q, 0, sizeof(*q));
	atomic_init(&q->disconnected, false);
	atomic_init(&q->disc_reason, 0);
	atomic_init(&q->disc_order, 0);
	q->ctrl = c;
	q->qid = qid;
	q->size = size;
	q->slot_bytes = slot_bytes;
	q->reqs = xcalloc(size, sizeof(*q->reqs));
	q->free_idx = xcalloc(size, sizeof(*q->free_idx));
	tool_buf_alloc(h, &q->sqes, size * NVME_SQE_SIZE, 0);
	tool_buf_alloc(h, &q->cqes, size * NVME_CQE_SIZE,
		       NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
	if (c->mem == NH_MEM_GLOBAL)
		dflags |= NDK_MR_FLAG_ALLOW_REMOTE_READ |
			  NDK_MR_FLAG_ALLOW_REMOTE_WRITE;
	tool_buf_alloc(h, &q->data, size * slot_bytes, dflags);
	for (i = 0; i < size; i++) {
		struct nh_req *r = &q->reqs[i];

		r->q = q;
		r->idx = i;
		r->sqe = q->sqes.mem + (size_t)i * NVME_SQE_SIZE;
		r->data = q->data.mem + (size_t)i * slot_bytes;
		/* Slot 0 is handed out first. */
		q->free_idx[q->nfree++] = size - 1 - i;
		if (c->mem == NH_MEM_FAST_REGISTER) {
			st = fr_setup(c, r, slot_bytes);
			if (!NT_SUCCESS(st))
				tool_die("fast-register MR", st);
		}
	}
	tool_check("NdkCreateCq",
		   h->ad->Dispatch->NdkCreateCq(h->ad, size + sq, nh_on_cq, c,
						NULL, NULL, NULL, &q->cq));
	tool_check("NdkCreateQp", h->pd->Dispatch->NdkCreateQp(
					  h->pd, q->cq, q->cq, q, size, sq, 1,
					  2, 0, NULL, NULL, &q->qp));
	/* One receive per entry: the controller sends at most one
	 * response per command, and hrqsize says how many we hold. */
	for (i = 0; i < size; i++)
		repost_receive(q, q->cqes.mem + (size_t)i * NVME_CQE_SIZE);
}

static const char *cm_status_name(uint16_t s)
{
	switch (s) {
	case NVME_RDMA_CM_INVALID_LEN:
		return "invalid private data length";
	case NVME_RDMA_CM_INVALID_RECFMT:
		return "invalid record format";
	case NVME_RDMA_CM_INVALID_QID:
		return "invalid queue ID";
	case NVME_RDMA_CM_INVALID_HSQSIZE:
		return "invalid host SQ size";
	case NVME_RDMA_CM_INVALID_HRQSIZE:
		return "invalid host RQ size";
	case NVME_RDMA_CM_NO_RSC:
		return "no resources";
	case NVME_RDMA_CM_INVALID_IRD:
		return "invalid IRD";
	case NVME_RDMA_CM_INVALID_ORD:
		return "invalid ORD";
	default:
		return "unknown";
	}
}

/* The Fabrics Connect command: admin (cntlid 0xffff) or I/O queue. */
static int fabrics_connect(struct nh_ctrl *c, struct nh_queue *q)
{
	static uint8_t data[NVME_CONNECT_DATA_SIZE];
	struct nvme_connect_data d;
	struct nvme_sqe cmd;
	struct nvme_cqe cqe;
	char buf[96];
	int st;

	memset(&d, 0, sizeof(d));
	memcpy(d.hostid, c->o.hostid, sizeof(d.hostid));
	d.cntlid = q->qid ? c->cntlid : 0xffff;
	snprintf(d.subsysnqn, sizeof(d.subsysnqn), "%s", c->o.subnqn);
	snprintf(d.hostnqn, sizeof(d.hostnqn), "%s", c->o.hostnqn);
	nvme_connect_data_encode(data, &d);
	/* KATO goes with the admin queue's Connect only. */
	nvme_connect_cmd(&cmd, 0, q->qid, (uint16_t)(q->size - 1),
			 q->qid ? 0 : c->o.kato_ms);
	st = nh_exec(q, &cmd, data, sizeof(data), true, &cqe);
	if (st > 0 && (st & 0x7ff) == NVME_SC_CONNECT_INVALID_PARAM) {
		/* The result names the field: IATTR (bit 16) the Connect
		 * data or the command, IPO its byte offset. */
		fprintf(stderr,
			"%s: queue %u: Fabrics Connect: %s: byte %u of the Connect %s\n",
			tool_prog, q->qid, nh_status_str(st, buf, sizeof(buf)),
			(unsigned int)(cqe.result & 0xffff),
			cqe.result & 0x10000 ? "data" : "command");
		return 2;
	}
	if (st) {
		fprintf(stderr,
			"%s: queue %u: Fabrics Connect: %s (result 0x%llx)\n",
			tool_prog, q->qid, nh_status_str(st, buf, sizeof(buf)),
			(unsigned long long)cqe.result);
		return 2;
	}
	if (!q->qid)
		c->cntlid = (uint16_t)cqe.result;
	if (c->o.verbose)
		printf("%s: queue %u: Fabrics Connect ok, cntlid %u, SQ head %u\n",
		       tool_prog, q->qid, (uint16_t)cqe.result, cqe.sq_head);
	return 0;
}

/* The NDK connection with the NVMe RDMA CM private data, then Connect. */
static int queue_connect(struct nh_ctrl *c, struct nh_queue *q)
{
	const struct nh_opts *o = &c->o;
	NDK_ADAPTER *ad = c->host.ad;
	uint8_t req_pd[NVME_RDMA_CM_REQ_SIZE], pd[256];
	struct nvme_rdma_cm_req req = { .recfmt = 0,
					.qid = q->qid,
					.hrqsize = (uint16_t)q->size,
					.hsqsize = (uint16_t)(q->size - 1) };
	ULONG len = sizeof(pd);
	struct tool_wait *w = xcalloc(1, sizeof(*w));
	char abuf[80];
	uint16_t s;
	NTSTATUS st;

	nvme_rdma_cm_req_encode(req_pd, &req);
	tool_check("NdkCreateConnector",
		   ad->Dispatch->NdkCreateConnector(ad, NULL, NULL, &q->conn));
	tool_wait_init(w);
	/* IRD > 0: the controller RDMA Reads the data of our writes; it
	 * never needs our ORD. */
	st = q->conn->Dispatch->NdkConnect(
		q->conn, q->qp, (PSOCKADDR)&o->src,
		tool_addr_len((const struct sockaddr *)&o->src),
		(PSOCKADDR)&o->dst,
		tool_addr_len((const struct sockaddr *)&o->dst), o->ird, 0,
		req_pd, sizeof(req_pd), tool_wait_done, w);
	st = tool_wait_result(w, st, o->cm_timeout_ms);
	if (st == STATUS_IO_TIMEOUT && !tool_wait_count(w)) {
		/* The completion may still come: w stays allocated. */
		fprintf(stderr,
			"%s: queue %u: no connect completion in %u ms\n",
			tool_prog, q->qid, o->cm_timeout_ms);
		return 2;
	}
	free(w);
	if (st == STATUS_CONNECTION_REFUSED) {
		if (NT_SUCCESS(q->conn->Dispatch->NdkGetConnectionData(
			    q->conn, NULL, NULL, pd, &len)) &&
		    nvme_rdma_cm_rej_decode(pd, len, &s))
			fprintf(stderr,
				"%s: queue %u: the controller rejected the connection: NVMe RDMA CM status %u (%s)\n",
				tool_prog, q->qid, s, cm_status_name(s));
		else
			fprintf(stderr,
				"%s: queue %u: connection refused by %s (no NVMe RDMA CM reject data)\n",
				tool_prog, q->qid,
				tool_addr_str((const struct sockaddr *)&o->dst,
					      abuf, sizeof(abuf)));
		return 2;
	}
	if (st != STATUS_SUCCESS) {
		fprintf(stderr, "%s: queue %u: connect to %s: %s (0x%08x)\n",
			tool_prog, q->qid,
			tool_addr_str((const struct sockaddr *)&o->dst, abuf,
				      sizeof(abuf)),
			NdkStatusName(st), (unsigned int)st);
		return 2;
	}
	len = sizeof(pd);
	st = q->conn->Dispatch->NdkGetConnectionData(q->conn, &q->ird, &q->ord,
						     pd, &len);
	if (!NT_SUCCESS(st) || !nvme_rdma_cm_rep_decode(pd, len, &q->crqsize)) {
		fprintf(stderr,
			"%s: queue %u: no NVMe RDMA CM Accept data (%u bytes)\n",
			tool_prog, q->qid, NT_SUCCESS(st) ? len : 0);
		return 2;
	}
	if (o->verbose)
		printf("%s: queue %u: connected, IRD %u ORD %u, crqsize %u (hsqsize %u hrqsize %u)\n",
		       tool_prog, q->qid, q->ird, q->ord, q->crqsize,
		       req.hsqsize, req.hrqsize);
	if (q->crqsize < q->size) {
		/* The controller holds fewer commands: use no more. */
		fprintf(stderr,
			"%s: queue %u: the controller takes %u commands, not %u\n",
			tool_prog, q->qid, q->crqsize, q->size);
		if (!q->crqsize)
			return 2;
		/* Only the first crqsize slots are handed out. */
		q->nfree = 0;
		for (s = q->crqsize; s > 0; s--)
			q->free_idx[q->nfree++] = s - 1u;
	}
	st = q->conn->Dispatch->NdkCompleteConnectEx(q->conn, nh_on_disconnect,
						     q, NULL, NULL);
	if (!NT_SUCCESS(st)) {
		fprintf(stderr, "%s: queue %u: NdkCompleteConnectEx: %s\n",
			tool_prog, q->qid, NdkStatusName(st));
		return 2;
	}
	q->connected = true;
	return fabrics_connect(c, q);
}

static void queue_close(struct nh_ctrl *c, struct nh_queue *q, bool graceful)
{
	struct tool_wait *w;
	unsigned int i;
	NTSTATUS st;

	if (q->conn) {
		q->closing = true;
		if (graceful && q->connected && !q->dead &&
		    !atomic_load(&q->disconnected)) {
			w = xcalloc(1, sizeof(*w));
			tool_wait_init(w);
			st = q->conn->Dispatch->NdkDisconnect(
				q->conn, tool_wait_done, w);
			st = tool_wait_result(w, st, 15000);
			if (c->o.verbose)
				printf("%s: queue %u: disconnect: %s\n",
				       tool_prog, q->qid, NdkStatusName(st));
			if (tool_wait_count(w) || st != STATUS_IO_TIMEOUT)
				free(w);
		}
		TOOL_CLOSE(q->conn);
		q->conn = NULL;
	}
	if (q->qp)
		TOOL_CLOSE(q->qp);
	q->qp = NULL;
	if (q->cq)
		TOOL_CLOSE(q->cq);
	q->cq = NULL;
	for (i = 0; q->reqs && i < q->size; i++)
		fr_teardown(c, &q->reqs[i]);
	if (q->sqes.mr)
		tool_buf_free(&q->sqes);
	if (q->cqes.mr)
		tool_buf_free(&q->cqes);
	if (q->data.mr)
		tool_buf_free(&q->data);
	free(q->reqs);
	free(q->free_idx);
	q->reqs = NULL;
	q->free_idx = NULL;
	q->connected = false;
}

/* ------------------------------------------------------------------ */
/* Controller                                                         */

static int prop_get(struct nh_ctrl *c, uint32_t off, unsigned int size,
		    uint64_t *val)
{
	struct nvme_sqe cmd;
	struct nvme_cqe cqe;
	char buf[96];
	int st;

	nvme_property_get_cmd(&cmd, 0, off, size);
	st = nh_exec(&c->admin, &cmd, NULL, 0, false, &cqe);
	if (st) {
		fprintf(stderr, "%s: Property Get 0x%x: %s\n", tool_prog, off,
			nh_status_str(st, buf, sizeof(buf)));
		return st;
	}
	*val = size == 8 ? cqe.result : (uint32_t)cqe.result;
	return 0;
}

static int prop_set(struct nh_ctrl *c, uint32_t off, uint32_t val)
{
	struct nvme_sqe cmd;
	char buf[96];
	int st;

	nvme_property_set_cmd(&cmd, 0, off, 4, val);
	st = nh_exec(&c->admin, &cmd, NULL, 0, false, NULL);
	if (st)
		fprintf(stderr, "%s: Property Set 0x%x = 0x%x: %s\n", tool_prog,
			off, val, nh_status_str(st, buf, sizeof(buf)));
	return st;
}

/* CC.EN = 1 with the NVM command set, 4 KiB pages, 64/16-byte entries,
 * then CSTS.RDY within CAP.TO. */
static int ctrl_enable(struct nh_ctrl *c)
{
	uint64_t vs, csts = 0, until;
	unsigned int to_ms;

	if (prop_get(c, NVME_PROP_CAP, 8, &c->cap) ||
	    prop_get(c, NVME_PROP_VS, 4, &vs))
		return 2;
	c->vs = (uint32_t)vs;
	to_ms = (unsigned int)((c->cap >> 24) & 0xff) * 500;
	if (!to_ms)
		to_ms = 500;
	c->cc = NH_CC_IOSQES | NH_CC_IOCQES | NVME_CC_ENABLE;
	if (prop_set(c, NVME_PROP_CC, c->cc))
		return 2;
	until = now_ms() + to_ms;
	for (;;) {
		if (prop_get(c, NVME_PROP_CSTS, 4, &csts))
			return 2;
		if (csts & NH_CSTS_CFS) {
			fprintf(stderr,
				"%s: controller fatal status after CC 0x%x (CSTS 0x%llx)\n",
				tool_prog, c->cc, (unsigned long long)csts);
			return 2;
		}
		if (csts & NVME_CSTS_READY)
			break;
		if (now_ms() > until) {
			fprintf(stderr,
				"%s: CSTS.RDY not set within CAP.TO (%u ms)\n",
				tool_prog, to_ms);
			return 2;
		}
		nh_poll(c, 10);
	}
	if (c->o.verbose)
		printf("%s: CAP 0x%llx VS 0x%x CC 0x%x CSTS 0x%llx\n",
		       tool_prog, (unsigned long long)c->cap, c->vs, c->cc,
		       (unsigned long long)csts);
	return 0;
}

static int ctrl_identify(struct nh_ctrl *c)
{
	static uint8_t id[NVME_IDENTIFY_SIZE];
	struct nvme_sqe cmd;
	struct nvme_cqe cqe;
	unsigned int want = c->o.nioq;
	uint32_t i, nsq, ncq;
	char buf[96];
	int st;

	nvme_identify_cmd(&cmd, NVME_CNS_CONTROLLER, 0);
	st = nh_exec(&c->admin, &cmd, id, sizeof(id), false, NULL);
	if (st) {
		fprintf(stderr, "%s: Identify Controller: %s\n", tool_prog,
			nh_status_str(st, buf, sizeof(buf)));
		return 2;
	}
	nvme_id_ctrl_decode(id, &c->id);
	/* The number of I/O queues (0's based both ways). */
	nvme_set_features_cmd(&cmd, NVME_FEAT_NUM_QUEUES,
			      (want - 1) << 16 | (want - 1));
	st = nh_exec(&c->admin, &cmd, NULL, 0, false, &cqe);
	if (st) {
		fprintf(stderr, "%s: Set Features (Number of Queues %u): %s\n",
			tool_prog, want, nh_status_str(st, buf, sizeof(buf)));
		return 2;
	}
	nsq = ((uint32_t)cqe.result & 0xffff) + 1;
	ncq = ((uint32_t)cqe.result >> 16) + 1;
	c->nio_allowed = MIN(nsq, ncq);
	c->nio = MIN(want, c->nio_allowed);
	if (c->nio < want)
		fprintf(stderr, "%s: the controller allows %u I/O queues\n",
			tool_prog, c->nio);
	c->nsid = c->o.nsid;
	if (!c->nsid) {
		nvme_identify_cmd(&cmd, NVME_CNS_ACTIVE_NS_LIST, 0);
		st = nh_exec(&c->admin, &cmd, id, sizeof(id), false, NULL);
		if (st) {
			fprintf(stderr, "%s: Identify active namespaces: %s\n",
				tool_prog, nh_status_str(st, buf, sizeof(buf)));
			return 2;
		}
		c->nsid = nvme_get32(id);
		if (!c->nsid) {
			fprintf(stderr, "%s: the subsystem has no namespace\n",
				tool_prog);
			return 2;
		}
		if (c->o.verbose) {
			printf("%s: active namespaces:", tool_prog);
			for (i = 0; i < 1024 && nvme_get32(id + 4 * i); i++)
				printf(" %u", nvme_get32(id + 4 * i));
			printf("\n");
		}
	}
	nvme_identify_cmd(&cmd, NVME_CNS_NAMESPACE, c->nsid);
	st = nh_exec(&c->admin, &cmd, id, sizeof(id), false, NULL);
	if (st) {
		fprintf(stderr, "%s: Identify Namespace %u: %s\n", tool_prog,
			c->nsid, nh_status_str(st, buf, sizeof(buf)));
		return 2;
	}
	nvme_id_ns_decode(id, &c->ns);
	if (!c->ns.nsze || c->ns.lba_shift < 9 || c->ns.lba_shift > 16) {
		fprintf(stderr,
			"%s: namespace %u: %llu blocks, LBADS %u: not usable\n",
			tool_prog, c->nsid, (unsigned long long)c->ns.nsze,
			c->ns.lba_shift);
		return 2;
	}
	c->lba_size = 1u << c->ns.lba_shift;
	return 0;
}

/* Bytes per command: ours, the controller's MDTS, the FR page list. */
static void ctrl_limits(struct nh_ctrl *c)
{
	size_t page = (size_t)NH_PAGE << ((c->cap >> 48) & 0xf);
	size_t unit = MAX((size_t)c->lba_size, (size_t)NH_PAGE);
	size_t max = c->o.max_io;

	if (c->id.mdts && c->id.mdts < 20)
		max = MIN(max, page << c->id.mdts);
	if (c->mem == NH_MEM_FAST_REGISTER)
		max = MIN(max, (size_t)c->host.info.FRMRPageCount * NH_PAGE);
	max -= max % unit;
	c->max_io = MAX(max, unit);
	/* In-capsule data: IOCCSZ counts the 64-byte SQE too. */
	c->in_capsule_max = 0;
	if (c->o.in_capsule && !c->id.icdoff && c->id.ioccsz * 16 > 64)
		c->in_capsule_max = c->id.ioccsz * 16 - NVME_SQE_SIZE;
}

/* Fast-register mode if the adapter can; one MR per queue otherwise. */
static void choose_memory(struct nh_ctrl *c)
{
	NDK_PD *pd = c->host.pd;
	struct tool_wait w;
	NDK_MR *mr = NULL;
	NTSTATUS st = STATUS_NOT_SUPPORTED;

	c->mem = c->o.mem;
	if (c->mem != NH_MEM_FAST_REGISTER)
		return;
	if (c->host.info.FRMRPageCount >= NH_ADMIN_DATA / NH_PAGE)
		st = pd->Dispatch->NdkCreateMr(pd, TRUE, NULL, NULL, &mr);
	if (NT_SUCCESS(st)) {
		tool_wait_init(&w);
		st = mr->Dispatch->NdkInitializeFastRegisterMr(
			mr, NH_ADMIN_DATA / NH_PAGE, TRUE, tool_wait_done, &w);
		st = tool_wait_result(&w, st, 0);
	}
	if (mr)
		TOOL_CLOSE(mr);
	if (!NT_SUCCESS(st)) {
		fprintf(stderr,
			"%s: no fast-register MRs (%s): one MR per queue instead\n",
			tool_prog, NdkStatusName(st));
		c->mem = NH_MEM_GLOBAL;
	}
}

int nh_connect(struct nh_ctrl *c)
{
	const struct nh_opts *o = &c->o;
	NET_IFINDEX ifindex =
		o->ifindex ? o->ifindex
			   : tool_ifindex_of((const struct sockaddr *)&o->src);
	unsigned int i;
	char abuf[80];
	int rc;

	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->cond, NULL);
	atomic_init(&c->cq_errors, 0);
	atomic_init(&c->disc_count, 0);
	if (!ifindex) {
		fprintf(stderr, "%s: no interface owns %s\n", tool_prog,
			tool_addr_str((const struct sockaddr *)&o->src, abuf,
				      sizeof(abuf)));
		return 2;
	}
	tool_host_open(&c->host, ifindex);
	choose_memory(c);
	queue_init(c, &c->admin, 0, o->admin_qsize, NH_ADMIN_DATA);
	rc = queue_connect(c, &c->admin);
	if (!rc)
		rc = ctrl_enable(c);
	if (!rc)
		rc = ctrl_identify(c);
	if (rc)
		return rc;
	if (c->o.qsize > (c->cap & 0xffff) + 1) {
		c->o.qsize = (unsigned int)(c->cap & 0xffff) + 1;
		fprintf(stderr, "%s: I/O queues of %u entries (CAP.MQES)\n",
			tool_prog, c->o.qsize);
	}
	/* Keep Alive runs from here on, from nh_poll. */
	if (o->kato_ms)
		c->ka_next = now_ms() + MAX(o->kato_ms / 2, 1u);
	ctrl_limits(c);
	c->io = xcalloc(c->nio, sizeof(*c->io));
	for (i = 0; i < c->nio; i++) {
		queue_init(c, &c->io[i], (uint16_t)(i + 1), o->qsize,
			   c->max_io);
		rc = queue_connect(c, &c->io[i]);
		if (rc)
			return rc;
	}
	return 0;
}

/*
 * After a failure: NdkDisconnect on every queue at once, waiting at most
 * ms for all of them. The controller gets our FIN and we read what it
 * still sends until its own, so a connection it is closing anyway ends
 * without a reset.
 */
static void disconnect_all(struct nh_ctrl *c, unsigned int ms)
{
	unsigned int i, n = queue_count(c);
	struct tool_wait **w = xcalloc(n, sizeof(*w));
	NTSTATUS *st = xcalloc(n, sizeof(*st));
	uint64_t until = now_ms() + ms, now;

	for (i = 0; i < n; i++) {
		struct nh_queue *q = queue_at(c, i);

		if (!q->conn || !q->connected || q->closing)
			continue;
		q->closing = true;
		w[i] = xcalloc(1, sizeof(*w[i]));
		tool_wait_init(w[i]);
		st[i] = q->conn->Dispatch->NdkDisconnect(q->conn,
							 tool_wait_done, w[i]);
	}
	for (i = 0; i < n; i++) {
		if (!w[i])
			continue;
		now = now_ms();
		st[i] = tool_wait_result(
			w[i], st[i],
			now < until ? (unsigned int)(until - now) : 1);
		if (c->o.verbose)
			printf("%s: queue %u: disconnect: %s\n", tool_prog,
			       queue_at(c, i)->qid, NdkStatusName(st[i]));
		/* One still pending completes at the close: keep its wait. */
		if (tool_wait_count(w[i]) || st[i] != STATUS_IO_TIMEOUT)
			free(w[i]);
	}
	free(w);
	free(st);
}

void nh_disconnect(struct nh_ctrl *c)
{
	uint64_t csts = 0, until;
	unsigned int i;

	/* Let what is in flight (a Keep Alive) finish. */
	nh_drain(c);
	c->ka_next = 0;
	if (c->failed)
		disconnect_all(c, NH_DISCONNECT_FAILED_MS);
	for (i = 0; c->io && i < c->nio; i++)
		queue_close(c, &c->io[i], !c->failed);
	if (!c->failed && c->admin.connected) {
		/* Normal shutdown notification, then CSTS.SHST complete. */
		if (!prop_set(c, NVME_PROP_CC, c->cc | NH_CC_SHN_NORMAL)) {
			until = now_ms() + 2000;
			while (!prop_get(c, NVME_PROP_CSTS, 4, &csts) &&
			       (csts & NH_CSTS_SHST) !=
				       NVME_CSTS_SHST_COMPLETE &&
			       now_ms() < until)
				nh_poll(c, 10);
			if (c->o.verbose)
				printf("%s: shutdown: CSTS 0x%llx\n", tool_prog,
				       (unsigned long long)csts);
		}
	}
	queue_close(c, &c->admin, !c->failed);
	free(c->io);
	c->io = NULL;
	tool_host_close(&c->host);
}
