// SPDX-License-Identifier: MIT
/*
 * One NVMe/RDMA queue of ndknvmet (nvmet.h): a thread that accepts the
 * connection, keeps a receive posted for every command the host may send,
 * runs each command in a slot with its own registered data buffer and
 * CQE, moves data with RDMA Read (host to us) and RDMA Write (us to
 * host) on the host's keyed SGL, and sends the CQE; with Send and
 * Invalidate when the host asked for it (SGL subtype 0xf, the fast
 * registered MR of a Linux host). At the end it disconnects, flushes,
 * collects every outstanding request and closes what it opened.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "nvmet.h"

#define TICK_MS	      1000 /* how often an idle queue looks at its flags */
#define ACCEPT_MS     30000
#define DRAIN_MS      5000
#define CQ_BATCH      16
#define NVMET_NO_HEAD 0xffff /* sq_head when SQ flow control is off */

static VOID on_cq(PVOID ctx, NTSTATUS status)
{
	struct nvmet_queue *q = ctx;

	(void)status;
	pthread_mutex_lock(&q->lock);
	q->gen++;
	pthread_cond_broadcast(&q->cond);
	pthread_mutex_unlock(&q->lock);
}

static VOID on_disconnect(PVOID ctx, ULONG reason)
{
	struct nvmet_queue *q = ctx;

	pthread_mutex_lock(&q->lock);
	q->ended = true;
	q->reason = reason;
	q->gen++;
	pthread_cond_broadcast(&q->cond);
	pthread_mutex_unlock(&q->lock);
}

void nvmet_queue_kill_locked(struct nvmet_queue *q, const char *why)
{
	pthread_mutex_lock(&q->lock);
	if (!q->kill) {
		q->kill = true;
		q->kill_why = why;
	}
	q->gen++;
	pthread_cond_broadcast(&q->cond);
	pthread_mutex_unlock(&q->lock);
}

static bool queue_should_end(struct nvmet_queue *q)
{
	bool end;

	pthread_mutex_lock(&q->lock);
	end = q->ended || q->kill;
	pthread_mutex_unlock(&q->lock);
	return end;
}

/* A connection that broke under us (a failed post or receive). */
static void queue_broken(struct nvmet_queue *q)
{
	pthread_mutex_lock(&q->lock);
	q->ended = true;
	pthread_mutex_unlock(&q->lock);
}

static const char *queue_name(const struct nvmet_queue *q, char *buf,
			      size_t len)
{
	if (!q->qid)
		snprintf(buf, len, "admin queue");
	else
		snprintf(buf, len, "I/O queue %u", q->qid);
	return buf;
}

/* ------------------------------------------------------------------ */
/* Registered buffers                                                 */

/* tool_buf_alloc, but a failure is the connection's, not the process's. */
static NTSTATUS queue_buf_alloc(struct nvmet_queue *q, struct tool_buf *b,
				size_t len)
{
	struct tool_host *h = q->host;
	size_t alloc = (len + 4095) & ~(size_t)4095;
	struct tool_wait w;
	NTSTATUS st;
	PMDL mdl;

	memset(b, 0, sizeof(*b));
	b->len = len;
	b->mem = aligned_alloc(4096, alloc);
	if (!b->mem)
		return STATUS_INSUFFICIENT_RESOURCES;
	memset(b->mem, 0, alloc);
	mdl = IoAllocateMdl(b->mem, (ULONG)len, FALSE, FALSE, NULL);
	if (!mdl)
		return STATUS_INSUFFICIENT_RESOURCES;
	st = h->pd->Dispatch->NdkCreateMr(h->pd, FALSE, NULL, NULL, &b->mr);
	if (NT_SUCCESS(st)) {
		tool_wait_init(&w);
		st = tool_wait_result(&w,
				      b->mr->Dispatch->NdkRegisterMr(
					      b->mr, mdl, len,
					      NDK_MR_FLAG_ALLOW_LOCAL_WRITE,
					      tool_wait_done, &w),
				      30000);
	}
	IoFreeMdl(mdl);
	if (!NT_SUCCESS(st))
		return st;
	b->ltok = b->mr->Dispatch->NdkGetLocalTokenFromMr(b->mr);
	return STATUS_SUCCESS;
}

static void queue_buf_free(struct tool_buf *b)
{
	if (b->mr)
		TOOL_CLOSE(b->mr);
	free(b->mem);
	memset(b, 0, sizeof(*b));
}

/* ------------------------------------------------------------------ */
/* Posting                                                            */

static NTSTATUS post_recv(struct nvmet_queue *q, uint8_t *buf)
{
	NDK_SGE sge = { .VirtualAddress = buf,
			.Length = NVME_SQE_SIZE,
			.MemoryRegionToken = q->rbuf.ltok };
	NTSTATUS st = q->qp->Dispatch->NdkReceive(q->qp, buf, &sge, 1);

	if (NT_SUCCESS(st))
		q->recvs_posted++;
	return st;
}

static bool slot_invalidates(const struct nvmet_slot *s)
{
	/* The host registered an MR for this command and asked us to
	 * invalidate it with the reply (keyed SGL, subtype Invalidate). */
	return (s->cmd.flags & 0xc0) == NVME_CMD_PSDT_SGL &&
	       s->cmd.sgl_type == (NVME_SGL_KEYED_DATA_BLOCK |
				   NVME_SGL_SUBTYPE_INVALIDATE) &&
	       s->cmd.sgl_key && s->cmd.sgl_length;
}

uint16_t nvmet_check_sgl(struct nvmet_slot *s, uint32_t len)
{
	const struct nvme_sqe *c = &s->cmd;

	if ((c->flags & 0xc0) != NVME_CMD_PSDT_SGL)
		return NVME_SC_INVALID_FIELD | NVME_SC_DNR;
	if ((c->sgl_type & 0xf0) != NVME_SGL_KEYED_DATA_BLOCK ||
	    ((c->sgl_type & 0x0f) != NVME_SGL_SUBTYPE_ADDRESS &&
	     (c->sgl_type & 0x0f) != NVME_SGL_SUBTYPE_INVALIDATE))
		return NVME_SC_SGL_INVALID_TYPE | NVME_SC_DNR;
	if (len > s->q->t->max_xfer)
		return NVME_SC_INVALID_FIELD | NVME_SC_DNR;
	if (c->sgl_length < len)
		return NVME_SC_SGL_INVALID_DATA | NVME_SC_DNR;
	return 0;
}

/* nvme_status_name, and the statuses only a controller returns. */
static const char *status_name(uint16_t status)
{
	switch (status & 0x7ff) {
	case NVME_SC_CMD_SEQ_ERROR:
		return "command sequence error";
	case NVME_SC_AER_LIMIT:
		return "asynchronous event request limit exceeded";
	case NVME_SC_FEATURE_NOT_SAVEABLE:
		return "feature identifier not saveable";
	case NVME_SC_CONNECT_FORMAT:
		return "connect incompatible format";
	case NVME_SC_CONNECT_CTRL_BUSY:
		return "connect controller busy";
	default:
		return nvme_status_name(status);
	}
}

static void slot_log(struct nvmet_slot *s)
{
	struct nvmet_queue *q = s->q;
	const struct nvme_sqe *c = &s->cmd;
	char qn[32], op[32];

	/* Admin commands at -v, I/O commands at -vv, errors of either at
	 * -v; errors on the admin queue always. */
	if (!s->status && q->t->verbose < (q->qid ? 2 : 1))
		return;
	if (s->status && q->qid && q->t->verbose < 1)
		return;
	if (c->opcode == NVME_FABRICS_COMMAND)
		snprintf(op, sizeof(op), "fabrics type 0x%02x", c->fctype);
	else
		snprintf(op, sizeof(op), "opcode 0x%02x nsid %u", c->opcode,
			 c->nsid);
	nvmet_log(q->t,
		  "ctrl %u %s: cid %u %s cdw10 0x%08x cdw11 0x%08x: %s "
		  "(0x%03x) result 0x%llx",
		  q->ctrl ? q->ctrl->cntlid : 0, queue_name(q, qn, sizeof(qn)),
		  c->command_id, op, c->cdw[0], c->cdw[1],
		  status_name(s->status), s->status,
		  (unsigned long long)s->result);
}

/* Sends the data (if any) and the CQE; the slot is free once both
 * completed. */
static void slot_reply(struct nvmet_slot *s)
{
	struct nvmet_queue *q = s->q;
	struct nvme_cqe cqe = { .result = s->result,
				.sq_head = q->sqflow_off ? NVMET_NO_HEAD
							 : q->sq_head,
				.sq_id = q->qid,
				.command_id = s->cmd.command_id,
				.status = s->status };
	NDK_SGE sge = { .VirtualAddress = s->cqe,
			.Length = NVME_CQE_SIZE,
			.MemoryRegionToken = q->cbuf.ltok };
	NTSTATUS st = STATUS_SUCCESS;

	slot_log(s);
	if (s->status) {
		q->errors++;
		atomic_fetch_add(&q->t->cnt.errors, 1);
	}
	s->state = SLOT_REPLY;
	if (!s->status && s->xfer) {
		NDK_SGE d = { .VirtualAddress = s->data,
			      .Length = s->xfer,
			      .MemoryRegionToken = q->dbuf.ltok };

		/* RDMA places the Write before the Send that follows it. */
		st = q->qp->Dispatch->NdkWrite(q->qp, s, &d, 1, s->cmd.sgl_addr,
					       s->cmd.sgl_key,
					       NDK_OP_FLAG_DEFER);
		if (NT_SUCCESS(st))
			s->outstanding++;
	}
	nvme_cqe_encode(s->cqe, &cqe);
	if (NT_SUCCESS(st)) {
		if (slot_invalidates(s))
			st = q->qp->Dispatch->NdkSendAndInvalidate(
				q->qp, s, &sge, 1, 0, s->cmd.sgl_key);
		else
			st = q->qp->Dispatch->NdkSend(q->qp, s, &sge, 1, 0);
		if (NT_SUCCESS(st))
			s->outstanding++;
	}
	if (!NT_SUCCESS(st)) {
		nvmet_log(q->t, "ctrl %u: qid %u: posting the reply: %s",
			  q->ctrl ? q->ctrl->cntlid : 0, q->qid,
			  NdkStatusName(st));
		queue_broken(q);
	}
}

static void slot_free(struct nvmet_slot *s);

static void slot_proceed(struct nvmet_slot *s, enum nvmet_next next)
{
	struct nvmet_queue *q = s->q;
	NTSTATUS st;

	switch (next) {
	case NVMET_REPLY:
		slot_reply(s);
		break;
	case NVMET_FETCH: {
		NDK_SGE d = { .VirtualAddress = s->data,
			      .Length = s->xfer,
			      .MemoryRegionToken = q->dbuf.ltok };

		s->state = SLOT_FETCH;
		st = q->qp->Dispatch->NdkRead(q->qp, s, &d, 1, s->cmd.sgl_addr,
					      s->cmd.sgl_key, 0);
		if (NT_SUCCESS(st)) {
			s->outstanding++;
		} else {
			s->xfer = 0;
			s->status = NVME_SC_DATA_XFER_ERROR;
			slot_reply(s);
		}
		break;
	}
	case NVMET_HOLD:
		s->state = SLOT_HELD;
		q->held++;
		break;
	}
	if (s->state != SLOT_HELD && !s->outstanding)
		slot_free(s);
}

static void slot_exec(struct nvmet_slot *s, const uint8_t *sqe)
{
	struct nvmet_queue *q = s->q;
	struct nvmet_target *t = q->t;
	enum nvmet_next next;

	nvme_sqe_decode(sqe, &s->cmd);
	s->status = 0;
	s->result = 0;
	s->xfer = 0;
	s->after_fetch = NULL;
	q->commands++;
	atomic_fetch_add(&t->cnt.commands, 1);
	if (q->ctrl)
		atomic_store(&q->ctrl->last_cmd_ns, tool_now_ns());
	if (s->cmd.opcode == NVME_FABRICS_COMMAND) {
		next = nvmet_fabrics_cmd(s);
	} else if (!q->ctrl) {
		s->status = NVME_SC_CMD_SEQ_ERROR | NVME_SC_DNR;
		next = NVMET_REPLY;
	} else if (!q->qid) {
		next = nvmet_admin_cmd(s);
	} else {
		next = nvmet_io_cmd(s);
	}
	slot_proceed(s, next);
}

static void slot_free(struct nvmet_slot *s)
{
	struct nvmet_queue *q = s->q;

	s->state = SLOT_FREE;
	s->next_free = q->free;
	q->free = s;
	q->busy--;
	/* A command that waited for a slot runs now. */
	if (q->pend_head != q->pend_tail && !queue_should_end(q)) {
		s = q->free;
		q->free = s->next_free;
		q->busy++;
		slot_exec(s, q->pend[q->pend_head++ % q->depth]);
	}
}

/* ------------------------------------------------------------------ */
/* Completions                                                        */

static void on_command(struct nvmet_queue *q, uint8_t *buf, ULONG len)
{
	uint8_t sqe[NVME_SQE_SIZE];
	struct nvmet_slot *s;

	if (len < NVME_SQE_SIZE) {
		nvmet_log(q->t, "qid %u: a %u-byte command capsule", q->qid,
			  len);
		queue_broken(q);
		return;
	}
	/* The receive goes back before the reply can leave, so the host
	 * always finds one for its next command. */
	memcpy(sqe, buf, sizeof(sqe));
	if (!NT_SUCCESS(post_recv(q, buf))) {
		queue_broken(q);
		return;
	}
	q->sq_head = (uint16_t)((q->sq_head + 1) % (q->sqsize + 1));
	s = q->free;
	if (!s) {
		/* The host may send as soon as it has a CQE, before we
		 * reaped the Send that carried it. */
		if (q->pend_tail - q->pend_head >= q->depth) {
			nvmet_log(q->t, "qid %u: more commands than entries",
				  q->qid);
			queue_broken(q);
			return;
		}
		memcpy(q->pend[q->pend_tail++ % q->depth], sqe, sizeof(sqe));
		return;
	}
	q->free = s->next_free;
	q->busy++;
	slot_exec(s, sqe);
}

static void on_completion(struct nvmet_queue *q, const NDK_RESULT_EX *r,
			  bool draining)
{
	struct nvmet_slot *s;

	if (r->Type == NdkOperationTypeReceive) {
		q->recvs_posted--;
		if (draining)
			return;
		if (r->Status != STATUS_SUCCESS) {
			queue_broken(q);
			return;
		}
		on_command(q, r->RequestContext, r->BytesTransferred);
		return;
	}
	s = r->RequestContext;
	s->outstanding--;
	if (r->Status != STATUS_SUCCESS) {
		if (r->Status != STATUS_CANCELLED)
			nvmet_log(q->t, "ctrl %u: qid %u: cid %u: %s: %s",
				  q->ctrl ? q->ctrl->cntlid : 0, q->qid,
				  s->cmd.command_id,
				  r->Type == NdkOperationTypeRead ? "RDMA Read"
				  : r->Type == NdkOperationTypeWrite
					  ? "RDMA Write"
					  : "Send",
				  NdkStatusName(r->Status));
		queue_broken(q);
		if (s->state == SLOT_FETCH)
			s->state = SLOT_REPLY; /* nothing more to send */
	} else if (s->state == SLOT_FETCH && !draining) {
		s->xfer = 0; /* fetched: nothing goes back */
		slot_proceed(s, s->after_fetch(s));
		return;
	}
	if (!s->outstanding && s->state != SLOT_HELD)
		slot_free(s);
}

static ULONG queue_poll(struct nvmet_queue *q, bool draining)
{
	NDK_RESULT_EX res[CQ_BATCH];
	ULONG n, i;

	n = q->cq->Dispatch->NdkGetCqResultsEx(q->cq, res, CQ_BATCH);
	for (i = 0; i < n; i++)
		on_completion(q, &res[i], draining);
	return n;
}

/*
 * Waits until the CQ or a callback has news or ms passed. Arm, then look
 * again: a completion queued before the arm does not notify.
 */
static void queue_wait(struct nvmet_queue *q, unsigned int ms)
{
	struct timespec ts = tool_deadline(ms);
	unsigned long gen;

	pthread_mutex_lock(&q->lock);
	gen = q->gen;
	pthread_mutex_unlock(&q->lock);
	q->cq->Dispatch->NdkArmCq(q->cq, NDK_CQ_NOTIFY_ANY);
	if (queue_poll(q, false))
		return;
	pthread_mutex_lock(&q->lock);
	while (q->gen == gen && !q->ended && !q->kill)
		if (pthread_cond_timedwait(&q->cond, &q->lock, &ts) ==
		    ETIMEDOUT)
			break;
	pthread_mutex_unlock(&q->lock);
}

static void queue_serve(struct nvmet_queue *q)
{
	struct nvmet_target *t = q->t;
	uint64_t next_check = tool_now_ns();

	while (!queue_should_end(q)) {
		if (!queue_poll(q, false))
			queue_wait(q, TICK_MS);
		if (q->qid || !q->ctrl || tool_now_ns() < next_check)
			continue;
		next_check = tool_now_ns() + TICK_MS * 1000000ull;
		if (nvmet_ctrl_keep_alive_expired(q->ctrl)) {
			atomic_fetch_add(&t->cnt.expired, 1);
			pthread_mutex_lock(&t->lock);
			nvmet_ctrl_kill_locked(q->ctrl, "keep-alive timeout");
			pthread_mutex_unlock(&t->lock);
		}
	}
}

/* ------------------------------------------------------------------ */
/* Accept and teardown                                                */

/* 0 with the request in *req, or the NVMe RDMA CM status to reject with. */
static int queue_check_request(struct nvmet_queue *q,
			       struct nvme_rdma_cm_req *req)
{
	struct nvmet_target *t = q->t;
	uint8_t pd[256];
	ULONG len = sizeof(pd), ird_unused = 0, ord_peer = 0;
	unsigned int depth;
	int reason;

	if (!NT_SUCCESS(q->conn->Dispatch->NdkGetConnectionData(
		    q->conn, &ird_unused, &ord_peer, pd, &len)))
		return NVME_RDMA_CM_INVALID_LEN;
	reason = nvme_rdma_cm_req_decode(pd, len, req);
	if (reason)
		return reason;
	depth = (unsigned int)req->hsqsize + 1;
	if (req->qid > t->max_ioq)
		return NVME_RDMA_CM_INVALID_QID;
	if (req->hsqsize < 1 ||
	    depth > (req->qid ? t->io_qsize : NVMET_ADMIN_DEPTH))
		return NVME_RDMA_CM_INVALID_HSQSIZE;
	if (req->hrqsize < 1)
		return NVME_RDMA_CM_INVALID_HRQSIZE;
	/* We fetch the host's write data with RDMA Reads: the host must
	 * take at least one. ord_peer is what we may issue. */
	if (!ord_peer)
		return NVME_RDMA_CM_INVALID_IRD;
	return 0;
}

static NTSTATUS queue_create(struct nvmet_queue *q)
{
	struct nvmet_target *t = q->t;
	struct tool_host *h = q->host;
	ULONG iq_depth = 2 * q->depth + 2;
	unsigned int i;
	NTSTATUS st;

	st = h->ad->Dispatch->NdkCreateCq(h->ad, q->depth + iq_depth, on_cq, q,
					  NULL, NULL, NULL, &q->cq);
	if (!NT_SUCCESS(st))
		return st;
	st = h->pd->Dispatch->NdkCreateQp(h->pd, q->cq, q->cq, q, q->depth,
					  iq_depth, 1, 1, 0, NULL, NULL,
					  &q->qp);
	if (!NT_SUCCESS(st))
		return st;
	st = queue_buf_alloc(q, &q->rbuf, (size_t)q->depth * NVME_SQE_SIZE);
	if (NT_SUCCESS(st))
		st = queue_buf_alloc(q, &q->cbuf,
				     (size_t)q->depth * NVME_CQE_SIZE);
	if (NT_SUCCESS(st))
		st = queue_buf_alloc(q, &q->dbuf,
				     (size_t)q->depth * t->max_xfer);
	if (!NT_SUCCESS(st))
		return st;
	q->slots = calloc(q->depth, sizeof(*q->slots));
	q->pend = calloc(q->depth, sizeof(*q->pend));
	if (!q->slots || !q->pend)
		return STATUS_INSUFFICIENT_RESOURCES;
	for (i = q->depth; i-- > 0;) {
		struct nvmet_slot *s = &q->slots[i];

		s->q = q;
		s->data = q->dbuf.mem + (size_t)i * t->max_xfer;
		s->cqe = q->cbuf.mem + (size_t)i * NVME_CQE_SIZE;
		s->next_free = q->free;
		q->free = s;
	}
	for (i = 0; i < q->depth; i++) {
		st = post_recv(q, q->rbuf.mem + (size_t)i * NVME_SQE_SIZE);
		if (!NT_SUCCESS(st))
			return st;
	}
	return STATUS_SUCCESS;
}

static int queue_accept(struct nvmet_queue *q)
{
	struct nvmet_target *t = q->t;
	struct nvme_rdma_cm_req req;
	struct sockaddr_storage ss;
	ULONG alen = sizeof(ss);
	uint8_t rep[NVME_RDMA_CM_REP_SIZE];
	struct tool_wait w;
	NTSTATUS st;
	int reason;

	if (NT_SUCCESS(q->conn->Dispatch->NdkGetPeerAddress(
		    q->conn, (PSOCKADDR)&ss, &alen)))
		tool_addr_str((struct sockaddr *)&ss, q->peer, sizeof(q->peer));
	else
		snprintf(q->peer, sizeof(q->peer), "?");
	reason = queue_check_request(q, &req);
	pthread_mutex_lock(&t->lock);
	if (!reason && t->stopping)
		reason = NVME_RDMA_CM_NO_RSC;
	pthread_mutex_unlock(&t->lock);
	if (!reason) {
		q->qid = req.qid;
		q->hrqsize = req.hrqsize;
		q->depth = (unsigned int)req.hsqsize + 1;
		q->sqsize = req.hsqsize;
		st = queue_create(q);
		if (!NT_SUCCESS(st)) {
			nvmet_log(t, "%s: queue %u: %s", q->peer, req.qid,
				  NdkStatusName(st));
			reason = NVME_RDMA_CM_NO_RSC;
		}
	}
	if (reason) {
		uint8_t rej[NVME_RDMA_CM_REJ_SIZE];

		nvme_rdma_cm_rej_encode(rej, (uint16_t)reason);
		st = q->conn->Dispatch->NdkReject(q->conn, rej, sizeof(rej));
		atomic_fetch_add(&t->cnt.rejected, 1);
		nvmet_log(t,
			  "%s: rejected a queue request (NVMe RDMA CM status "
			  "%d): %s",
			  q->peer, reason, NdkStatusName(st));
		return -1;
	}
	nvme_rdma_cm_rep_encode(rep, (uint16_t)q->depth);
	tool_wait_init(&w);
	st = q->conn->Dispatch->NdkAcceptEx(q->conn, q->qp, 0, NVMET_CM_ORD,
					    rep, sizeof(rep), on_disconnect, q,
					    tool_wait_done, &w);
	st = tool_wait_result(&w, st, ACCEPT_MS);
	if (st != STATUS_SUCCESS) {
		nvmet_log(t, "%s: queue %u: accept: %s", q->peer, q->qid,
			  NdkStatusName(st));
		return -1;
	}
	if (t->verbose) {
		ULONG ird = 0, ord = 0, len = 0;

		q->conn->Dispatch->NdkGetConnectionData(q->conn, &ird, &ord,
							NULL, &len);
		nvmet_log(t,
			  "%s: queue %u accepted (%u entries, host receives "
			  "%u, IRD %u ORD %u)",
			  q->peer, q->qid, q->depth, q->hrqsize, ird, ord);
	}
	return 0;
}

/* Collects every outstanding request after the flush. */
static void queue_drain(struct nvmet_queue *q)
{
	uint64_t deadline = tool_now_ns() + DRAIN_MS * 1000000ull;
	unsigned int busy;

	for (;;) {
		while (queue_poll(q, true))
			;
		busy = q->busy - q->held;
		if ((!q->recvs_posted && !busy) || tool_now_ns() > deadline)
			break;
		q->cq->Dispatch->NdkArmCq(q->cq, NDK_CQ_NOTIFY_ANY);
		if (!queue_poll(q, true))
			tool_sleep_ms(10);
	}
	if (q->recvs_posted || busy)
		nvmet_log(q->t,
			  "qid %u: %u receives and %u commands never "
			  "completed",
			  q->qid, q->recvs_posted, busy);
}

/* Why the queue ended, before its controller's end adds a reason. */
static const char *queue_end_reason(struct nvmet_queue *q, char *buf,
				    size_t len)
{
	const char *why;

	pthread_mutex_lock(&q->lock);
	if (q->kill)
		why = q->kill_why;
	else if (!q->ended)
		why = "?";
	else if (!q->reason)
		why = "host disconnected";
	else
		why = NdkStatusName((NTSTATUS)q->reason);
	snprintf(buf, len, "%s", why);
	pthread_mutex_unlock(&q->lock);
	return buf;
}

static void queue_teardown(struct nvmet_queue *q, bool accepted)
{
	struct nvmet_target *t = q->t;
	struct nvmet_ctrl *ctrl = q->ctrl;
	uint16_t cntlid = ctrl ? ctrl->cntlid : 0;
	struct tool_wait w;
	char qn[32], why[64];
	NTSTATUS st;

	queue_end_reason(q, why, sizeof(why));
	if (accepted) {
		tool_wait_init(&w);
		st = q->conn->Dispatch->NdkDisconnect(q->conn, tool_wait_done,
						      &w);
		st = tool_wait_result(&w, st, ACCEPT_MS);
		if (!NT_SUCCESS(st))
			nvmet_debug(t, "qid %u: NdkDisconnect: %s", q->qid,
				    NdkStatusName(st));
		q->qp->Dispatch->NdkFlush(q->qp);
		queue_drain(q);
	}
	/* AERs stay unanswered: the connection that would carry the
	 * answer is gone. The put may free the controller. */
	pthread_mutex_lock(&t->lock);
	if (ctrl) {
		if (!q->qid)
			nvmet_ctrl_kill_locked(ctrl, "admin queue gone");
		nvmet_ctrl_put_locked(ctrl, q);
		q->ctrl = NULL;
	}
	pthread_mutex_unlock(&t->lock);
	if (ctrl)
		nvmet_log(t,
			  "ctrl %u: %s disconnected (%s; %llu commands, %llu "
			  "errors%s)",
			  cntlid, queue_name(q, qn, sizeof(qn)), why,
			  (unsigned long long)q->commands,
			  (unsigned long long)q->errors,
			  q->held ? "; async event requests dropped" : "");
	else if (accepted)
		nvmet_log(t, "%s: queue %u ended before Connect (%s)", q->peer,
			  q->qid, why);
	if (q->conn)
		TOOL_CLOSE(q->conn);
	if (q->qp)
		TOOL_CLOSE(q->qp);
	if (q->cq)
		TOOL_CLOSE(q->cq);
	queue_buf_free(&q->rbuf);
	queue_buf_free(&q->cbuf);
	queue_buf_free(&q->dbuf);
	free(q->slots);
	free(q->pend);
}

static void queue_unlist(struct nvmet_queue *q)
{
	struct nvmet_target *t = q->t;
	struct nvmet_queue **pp;

	pthread_mutex_lock(&t->lock);
	for (pp = &t->queues; *pp; pp = &(*pp)->next) {
		if (*pp == q) {
			*pp = q->next;
			break;
		}
	}
	t->nqueues--;
	pthread_cond_broadcast(&t->cond);
	pthread_mutex_unlock(&t->lock);
}

static void *queue_thread(void *arg)
{
	struct nvmet_queue *q = arg;
	bool accepted = queue_accept(q) == 0;

	if (accepted) {
		atomic_fetch_add(&q->t->cnt.queues, 1);
		queue_serve(q);
	}
	queue_teardown(q, accepted);
	queue_unlist(q);
	pthread_mutex_destroy(&q->lock);
	pthread_cond_destroy(&q->cond);
	free(q);
	return NULL;
}

void nvmet_queue_start(struct nvmet_target *t, struct tool_host *h,
		       NDK_CONNECTOR *c)
{
	struct nvmet_queue *q = calloc(1, sizeof(*q));
	pthread_attr_t attr;
	pthread_t th;

	if (!q) {
		c->Dispatch->NdkReject(c, NULL, 0);
		TOOL_CLOSE(c);
		return;
	}
	q->t = t;
	q->host = h;
	q->conn = c;
	pthread_mutex_init(&q->lock, NULL);
	pthread_cond_init(&q->cond, NULL);
	pthread_mutex_lock(&t->lock);
	q->next = t->queues;
	t->queues = q;
	t->nqueues++;
	pthread_mutex_unlock(&t->lock);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&th, &attr, queue_thread, q)) {
		nvmet_log(t, "cannot start a queue thread");
		queue_unlist(q);
		c->Dispatch->NdkReject(c, NULL, 0);
		TOOL_CLOSE(c);
		free(q);
	}
	pthread_attr_destroy(&attr);
}
