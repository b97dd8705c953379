/* SPDX-License-Identifier: MIT */
/*
 * SMB Direct client transport (MS-SMBD 3.1) on the public NDK API; see
 * smbd.h. Receives and sends complete on two CQs, so that a complete
 * upper-layer message can wait in its reassembly buffer while sends and
 * registrations keep completing.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "smbd.h"
#include "tool_host.h"

#define SMBD_PAGE	     4096u
#define SMBD_SEND_SLOTS	     16u
#define SMBD_DEFAULT_CREDITS 32u
#define SMBD_DEFAULT_RECV    8192u
#define SMBD_DEFAULT_FRAG    (1u << 20)
#define SMBD_DEFAULT_TIMEOUT 30000u
/* What we ask the server for: the largest message we send is this. */
#define SMBD_PREFERRED_SEND 8192u
struct smbd_mr {
	struct smbd_mr *next; /* the connection's registrations */
	NDK_MR *mr;
	PMDL mdl;
	NDK_LOGICAL_ADDRESS_MAPPING *lam;
	uint8_t *buf;
	size_t len;
	ULONG pages;
	uint32_t token;
	bool valid; /* registered: the server may use token */
	bool peer_invalidated; /* by a Send with Invalidate, not released */
	unsigned int pending; /* FastRegister/Invalidate not completed */
	NTSTATUS wr_status;
};

struct smbd_msg {
	struct smbd_msg *next;
	size_t len;
	uint8_t data[];
};

struct smbd_conn {
	struct smbd_opts o;
	struct tool_host host;
	NDK_CQ *rcq, *scq;
	NDK_QP *qp;
	NDK_CONNECTOR *conn;
	struct tool_buf rbufs, sbufs;
	uint32_t slot; /* bytes per send slot */
	unsigned int send_next, send_out; /* ring position, in flight */
	unsigned int nrecv; /* receives posted */
	/* Credits: ours to send with, and the receives granted to the peer
	 * that it has not used yet. */
	unsigned int send_credits, peer_credits;
	bool negotiated, have_neg_resp;
	/* Reassembly of the message being received, the messages that
	 * wait for their reader (responses to requests in flight arrive
	 * while we wait for a send credit) and the one the caller holds. */
	struct smbd_msg *frag, *ready, **ready_tail, *taken;
	size_t frag_len;
	unsigned int nready;
	bool need_reply; /* the peer asked for a response (keep-alive) */
	struct smbd_mr *mrs;
	/* Woken by CQ notifications and the disconnect event. */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned long gen;
	atomic_bool disconnected;
	atomic_uint cq_errors;
	bool connected, dead;
	int err;
	char why[256];
	struct smbd_info info;
	uint8_t neg[SMBD_NEG_RESP_SIZE];
	ULONG neg_len;
};

static uint64_t now_ms(void)
{
	return tool_now_ns() / 1000000u;
}

static int fail(struct smbd_conn *c, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Records the first failure; later calls keep returning it. */
static int fail(struct smbd_conn *c, int err, const char *fmt, ...)
{
	va_list ap;

	if (c->err)
		return c->err;
	c->err = err;
	va_start(ap, fmt);
	vsnprintf(c->why, sizeof(c->why), fmt, ap);
	va_end(ap);
	if (c->qp && !c->dead) {
		c->dead = true;
		/* Every posted request completes, flushed. */
		c->qp->Dispatch->NdkFlush(c->qp);
	}
	return err;
}

static void wake(struct smbd_conn *c)
{
	pthread_mutex_lock(&c->lock);
	c->gen++;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
}

static VOID on_cq(PVOID ctx, NTSTATUS status)
{
	struct smbd_conn *c = ctx;

	if (status != STATUS_SUCCESS)
		atomic_fetch_add(&c->cq_errors, 1);
	wake(c);
}

static VOID on_disconnect(PVOID ctx, ULONG reason)
{
	struct smbd_conn *c = ctx;

	(void)reason;
	atomic_store(&c->disconnected, true);
	wake(c);
}

/* ------------------------------------------------------------------ */
/* Receives                                                           */

static uint8_t *rbuf_at(struct smbd_conn *c, unsigned int i)
{
	return c->rbufs.mem + (size_t)i * c->o.max_receive_size;
}

static int post_receive(struct smbd_conn *c, uint8_t *buf)
{
	NDK_SGE sge = { .VirtualAddress = buf,
			.Length = c->o.max_receive_size,
			.MemoryRegionToken = c->rbufs.ltok };
	NTSTATUS st;

	if (c->dead)
		return c->err;
	st = c->qp->Dispatch->NdkReceive(c->qp, buf, &sge, 1);
	if (!NT_SUCCESS(st))
		return fail(c, SMBD_ERR_RESOURCE, "NdkReceive: %s",
			    NdkStatusName(st));
	c->nrecv++;
	return SMBD_OK;
}

/* A Send with Invalidate: the token must be one an I/O holds. */
static void note_invalidated(struct smbd_conn *c, uint32_t tok)
{
	struct smbd_mr *mr;

	c->info.remote_invalidations++;
	for (mr = c->mrs; mr; mr = mr->next)
		if (mr->valid && mr->token == tok)
			break;
	if (!mr) {
		fail(c, SMBD_ERR_PROTO,
		     "the server invalidated token 0x%x, which no I/O holds",
		     tok);
		return;
	}
	mr->valid = false;
	mr->peer_invalidated = true;
}

static int on_data(struct smbd_conn *c, const uint8_t *p, ULONG n)
{
	struct smbd_data_hdr h;
	enum smbd_wire_err e = smbd_data_hdr_decode(p, n, &h);

	if (e)
		return fail(c, SMBD_ERR_PROTO,
			    "data transfer message of %u bytes: %s", n,
			    smbd_wire_err_str(e));
	if (!c->peer_credits)
		return fail(c, SMBD_ERR_PROTO,
			    "the server sent without a receive credit");
	c->peer_credits--;
	c->info.received++;
	c->send_credits += h.credits_granted;
	if (h.flags & SMBD_FLAG_RESPONSE_REQUESTED)
		c->need_reply = true;
	if (!h.data_length)
		return SMBD_OK;
	if (!c->frag) {
		uint64_t total = (uint64_t)h.data_length + h.remaining_length;

		if (total > c->o.max_fragmented_size)
			return fail(
				c, SMBD_ERR_TOO_BIG,
				"the server sends a %llu-byte message, more than the %u negotiated",
				(unsigned long long)total,
				c->o.max_fragmented_size);
		c->frag = malloc(sizeof(*c->frag) + (size_t)total);
		if (!c->frag)
			return fail(c, SMBD_ERR_RESOURCE, "out of memory");
		c->frag->next = NULL;
		c->frag->len = (size_t)total;
		c->frag_len = 0;
	} else if (c->frag_len + h.data_length + h.remaining_length !=
		   c->frag->len) {
		return fail(
			c, SMBD_ERR_PROTO,
			"fragment of %u bytes with %u remaining after %zu of a %zu-byte message",
			h.data_length, h.remaining_length, c->frag_len,
			c->frag->len);
	}
	memcpy(c->frag->data + c->frag_len, p + h.data_offset, h.data_length);
	c->frag_len += h.data_length;
	if (!h.remaining_length) {
		/* Complete: it waits for its reader behind the others. */
		*c->ready_tail = c->frag;
		c->ready_tail = &c->frag->next;
		c->nready++;
		c->frag = NULL;
	}
	return SMBD_OK;
}

static int on_receive(struct smbd_conn *c, const NDK_RESULT_EX *res)
{
	uint8_t *buf = res->RequestContext;

	c->nrecv--;
	if (res->Status != STATUS_SUCCESS) {
		if (c->dead)
			return c->err;
		return fail(c, SMBD_ERR_LOST, "receive failed: %s",
			    NdkStatusName(res->Status));
	}
	if (res->Type == NdkOperationTypeReceiveAndInvalidate)
		note_invalidated(c,
				 (uint32_t)res->TypeSpecificCompletionOutput);
	if (!c->negotiated) {
		if (res->BytesTransferred > sizeof(c->neg) || c->have_neg_resp)
			return fail(c, SMBD_ERR_PROTO,
				    "negotiate response of %u bytes",
				    res->BytesTransferred);
		memset(c->neg, 0, sizeof(c->neg));
		memcpy(c->neg, buf, res->BytesTransferred);
		c->neg_len = res->BytesTransferred;
		c->have_neg_resp = true;
	} else if (!c->err) {
		on_data(c, buf, res->BytesTransferred);
	}
	return post_receive(c, buf);
}

/* ------------------------------------------------------------------ */
/* Sends and the memory requests                                      */

static int on_send_cq(struct smbd_conn *c, const NDK_RESULT_EX *res)
{
	struct smbd_mr *mr;

	switch (res->Type) {
	case NdkOperationTypeSend:
		c->send_out--;
		if (res->Status != STATUS_SUCCESS && !c->dead)
			return fail(c, SMBD_ERR_LOST, "send failed: %s",
				    NdkStatusName(res->Status));
		return SMBD_OK;
	case NdkOperationTypeFastRegister:
	case NdkOperationTypeInvalidate:
		mr = res->RequestContext;
		mr->pending--;
		if (res->Status != STATUS_SUCCESS) {
			if (mr->wr_status == STATUS_SUCCESS)
				mr->wr_status = res->Status;
			if (!c->dead)
				return fail(
					c, SMBD_ERR_RESOURCE, "%s failed: %s",
					res->Type == NdkOperationTypeInvalidate
						? "Invalidate"
						: "FastRegister",
					NdkStatusName(res->Status));
		} else if (res->Type == NdkOperationTypeInvalidate) {
			mr->valid = false;
		}
		return SMBD_OK;
	default:
		return fail(c, SMBD_ERR_RESOURCE,
			    "completion of unexpected type 0x%x", res->Type);
	}
}

static unsigned int reap_sends(struct smbd_conn *c)
{
	NDK_RESULT_EX res[16];
	unsigned int total = 0;
	ULONG n, i;

	do {
		n = c->scq->Dispatch->NdkGetCqResultsEx(c->scq, res, 16);
		for (i = 0; i < n; i++)
			on_send_cq(c, &res[i]);
		total += n;
	} while (n);
	return total;
}

/* Receives one at a time; complete messages queue for their reader, so
 * that receiving goes on (and credits keep coming) while the caller
 * waits for a send credit with responses in flight. */
static unsigned int reap_receives(struct smbd_conn *c)
{
	NDK_RESULT_EX res;
	unsigned int total = 0;

	while (!(c->have_neg_resp && !c->negotiated) &&
	       c->rcq->Dispatch->NdkGetCqResultsEx(c->rcq, &res, 1) == 1) {
		on_receive(c, &res);
		total++;
	}
	return total;
}

static int post_send(struct smbd_conn *c, const void *data, size_t len,
		     uint32_t remaining, uint16_t flags);

/* Answers keep-alives and gives the peer back its credits before it
 * runs dry (it cannot send, not even a credit request, without one). */
static int maintain(struct smbd_conn *c)
{
	unsigned int ungranted = c->nrecv - c->peer_credits;

	/* Never from inside a wait for a send slot: no recursion. */
	if (!c->negotiated || c->dead || !c->send_credits ||
	    c->send_out >= SMBD_SEND_SLOTS)
		return c->err;
	if (c->need_reply ||
	    (ungranted &&
	     (c->peer_credits <= 1 || ungranted >= c->o.recv_credits / 2))) {
		if (c->need_reply)
			c->info.keepalives_answered++;
		else
			c->info.credit_only_sent++;
		c->need_reply = false;
		return post_send(c, NULL, 0, 0, 0);
	}
	return SMBD_OK;
}

static int check_state(struct smbd_conn *c)
{
	if (c->err)
		return c->err;
	if (atomic_load(&c->cq_errors))
		return fail(c, SMBD_ERR_RESOURCE,
			    "a completion queue overflowed");
	if (atomic_load(&c->disconnected))
		return fail(c, SMBD_ERR_LOST, "the server disconnected");
	return SMBD_OK;
}

/* Reaps both CQs; sleeps until a notification or the deadline when
 * nothing happened. SMBD_ERR_TIMEOUT after the deadline. */
static int progress(struct smbd_conn *c, uint64_t deadline)
{
	unsigned long gen;
	struct timespec ts;
	uint64_t now;
	int err;

	pthread_mutex_lock(&c->lock);
	gen = c->gen;
	pthread_mutex_unlock(&c->lock);
	if (reap_sends(c) + reap_receives(c)) {
		maintain(c);
		return check_state(c);
	}
	err = check_state(c);
	if (err)
		return err;
	c->rcq->Dispatch->NdkArmCq(c->rcq, NDK_CQ_NOTIFY_ANY);
	c->scq->Dispatch->NdkArmCq(c->scq, NDK_CQ_NOTIFY_ANY);
	/* A completion between the reap and the arm notifies nobody. */
	if (reap_sends(c) + reap_receives(c)) {
		maintain(c);
		return check_state(c);
	}
	now = now_ms();
	if (now >= deadline)
		return SMBD_ERR_TIMEOUT;
	ts = tool_deadline((unsigned int)(deadline - now));
	pthread_mutex_lock(&c->lock);
	while (c->gen == gen && !atomic_load(&c->disconnected))
		if (pthread_cond_timedwait(&c->cond, &c->lock, &ts) ==
		    ETIMEDOUT)
			break;
	pthread_mutex_unlock(&c->lock);
	return check_state(c);
}

static uint64_t deadline_of(struct smbd_conn *c, unsigned int ms)
{
	return now_ms() + (ms ? ms : c->o.timeout_ms);
}

/* One message in the next send slot (waiting for the slot and, for data
 * transfer messages, a credit). data == NULL with len == 0: no payload. */
static int post_send(struct smbd_conn *c, const void *data, size_t len,
		     uint32_t remaining, uint16_t flags)
{
	uint64_t deadline = deadline_of(c, 0);
	struct smbd_data_hdr h = { 0 };
	unsigned int grant;
	NDK_SGE sge;
	uint8_t *slot;
	NTSTATUS st;
	int err;

	if (!c->send_credits)
		c->info.credit_waits++;
	while (c->send_out >= SMBD_SEND_SLOTS || !c->send_credits) {
		err = progress(c, deadline);
		if (err == SMBD_ERR_TIMEOUT)
			return fail(
				c, err,
				c->send_credits
					? "no send completion in %u ms"
					: "no send credit from the server in %u ms",
				c->o.timeout_ms);
		if (err)
			return err;
	}
	slot = c->sbufs.mem +
	       (size_t)(c->send_next++ % SMBD_SEND_SLOTS) * c->slot;
	grant = c->nrecv - c->peer_credits;
	if (grant > 0xffff)
		grant = 0xffff;
	h.credits_requested = (uint16_t)c->o.recv_credits;
	h.credits_granted = (uint16_t)grant;
	/* Our last credit: ask for an answer, which brings new ones even
	 * when the server has nothing else to send. */
	if (c->send_credits == 1)
		flags |= SMBD_FLAG_RESPONSE_REQUESTED;
	h.flags = flags;
	h.remaining_length = remaining;
	h.data_offset = len ? SMBD_DATA_OFFSET : 0;
	h.data_length = (uint32_t)len;
	memset(slot, 0, SMBD_DATA_OFFSET);
	smbd_data_hdr_encode(slot, &h);
	if (len)
		memcpy(slot + SMBD_DATA_OFFSET, data, len);
	sge.VirtualAddress = slot;
	sge.Length = (ULONG)(len ? SMBD_DATA_OFFSET + len : SMBD_DATA_HDR_SIZE);
	sge.MemoryRegionToken = c->sbufs.ltok;
	st = c->qp->Dispatch->NdkSend(c->qp, NULL, &sge, 1, 0);
	if (!NT_SUCCESS(st))
		return fail(c, SMBD_ERR_LOST, "NdkSend: %s", NdkStatusName(st));
	c->send_out++;
	c->send_credits--;
	c->peer_credits += grant;
	c->info.sent++;
	return SMBD_OK;
}

int smbd_send(struct smbd_conn *c, const void *msg, size_t len)
{
	size_t per = c->info.max_send - SMBD_DATA_OFFSET, off = 0, n;
	const uint8_t *p = msg;
	int err;

	if (c->err)
		return c->err;
	if (!len || len > c->info.max_frag_send)
		return SMBD_ERR_TOO_BIG;
	while (off < len) {
		n = MIN(per, len - off);
		err = post_send(c, p + off, n, (uint32_t)(len - off - n), 0);
		if (err)
			return err;
		off += n;
	}
	return SMBD_OK;
}

int smbd_recv(struct smbd_conn *c, const uint8_t **msg, size_t *len,
	      unsigned int ms)
{
	uint64_t deadline = deadline_of(c, ms);
	int err;

	/* The caller is done with the last message. */
	free(c->taken);
	c->taken = NULL;
	while (!c->ready) {
		err = progress(c, deadline);
		if (err == SMBD_ERR_TIMEOUT)
			return fail(c, err,
				    "no message from the server in %u ms",
				    ms ? ms : c->o.timeout_ms);
		if (err)
			return err;
	}
	c->taken = c->ready;
	c->ready = c->taken->next;
	if (!c->ready)
		c->ready_tail = &c->ready;
	c->nready--;
	*msg = c->taken->data;
	*len = c->taken->len;
	/* Its receives are reposted: the credits may go back now. */
	maintain(c);
	return c->err;
}

/* ------------------------------------------------------------------ */
/* The RDMA channel                                                   */

int smbd_mr_create(struct smbd_conn *c, void *buf, size_t len,
		   struct smbd_mr **out)
{
	NDK_ADAPTER *ad = c->host.ad;
	NDK_PD *pd = c->host.pd;
	struct smbd_mr *mr;
	struct tool_wait w;
	ULONG lam_size, fbo = 0;
	NTSTATUS st;

	if ((uintptr_t)buf % SMBD_PAGE || !len || len > c->info.max_read_write)
		return SMBD_ERR_TOO_BIG;
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return SMBD_ERR_RESOURCE;
	mr->buf = buf;
	mr->len = len;
	mr->pages = (ULONG)((len + SMBD_PAGE - 1) / SMBD_PAGE);
	st = pd->Dispatch->NdkCreateMr(pd, TRUE, NULL, NULL, &mr->mr);
	if (!NT_SUCCESS(st)) {
		free(mr);
		return fail(c, SMBD_ERR_RESOURCE, "NdkCreateMr: %s",
			    NdkStatusName(st));
	}
	tool_wait_init(&w);
	st = mr->mr->Dispatch->NdkInitializeFastRegisterMr(
		mr->mr, mr->pages, TRUE, tool_wait_done, &w);
	st = tool_wait_result(&w, st, 0);
	if (NT_SUCCESS(st)) {
		mr->mdl = IoAllocateMdl(buf, (ULONG)len, FALSE, FALSE, NULL);
		lam_size = (ULONG)(sizeof(NDK_LOGICAL_ADDRESS_MAPPING) +
				   mr->pages * sizeof(NDK_LOGICAL_ADDRESS));
		mr->lam = calloc(1, lam_size);
		st = STATUS_INSUFFICIENT_RESOURCES;
		if (mr->mdl && mr->lam) {
			tool_wait_init(&w);
			st = ad->Dispatch->NdkBuildLAM(
				ad, mr->mdl, len, tool_wait_done, &w, mr->lam,
				&lam_size, &fbo);
			st = tool_wait_result(&w, st, 0);
			if (NT_SUCCESS(st) &&
			    (fbo || mr->lam->AdapterPageCount < mr->pages)) {
				ad->Dispatch->NdkReleaseLAM(ad, mr->lam);
				st = STATUS_INVALID_DEVICE_STATE;
			}
		}
	}
	if (!NT_SUCCESS(st)) {
		free(mr->lam);
		mr->lam = NULL;
		smbd_mr_destroy(c, mr);
		return fail(c, SMBD_ERR_RESOURCE, "fast-register MR: %s",
			    NdkStatusName(st));
	}
	mr->next = c->mrs;
	c->mrs = mr;
	*out = mr;
	return SMBD_OK;
}

static int mr_wait(struct smbd_conn *c, struct smbd_mr *mr, const char *what)
{
	uint64_t deadline = deadline_of(c, 0);
	int err;

	while (mr->pending) {
		err = progress(c, deadline);
		if (err == SMBD_ERR_TIMEOUT)
			return fail(c, err, "%s: no completion in %u ms", what,
				    c->o.timeout_ms);
		if (err)
			return err;
	}
	return SMBD_OK;
}

int smbd_mr_register(struct smbd_conn *c, struct smbd_mr *mr, size_t len,
		     bool remote_write, struct smbd_buffer_desc *desc)
{
	ULONG flags = remote_write ? NDK_OP_FLAG_ALLOW_REMOTE_WRITE
				   : NDK_OP_FLAG_ALLOW_REMOTE_READ;
	ULONG pages = (ULONG)((len + SMBD_PAGE - 1) / SMBD_PAGE);
	NTSTATUS st;

	if (c->err)
		return c->err;
	if (!len || len > mr->len)
		return SMBD_ERR_TOO_BIG;
	if (mr->valid)
		return fail(
			c, SMBD_ERR_RESOURCE,
			"register: the previous registration is still valid");
	st = c->qp->Dispatch->NdkFastRegister(c->qp, mr, mr->mr, pages,
					      mr->lam->AdapterPageArray, 0, len,
					      mr->buf, flags);
	if (!NT_SUCCESS(st))
		return fail(c, SMBD_ERR_RESOURCE, "NdkFastRegister: %s",
			    NdkStatusName(st));
	mr->pending++;
	mr->valid = true;
	mr->token = mr->mr->Dispatch->NdkGetRemoteTokenFromMr(mr->mr);
	desc->offset = (uint64_t)(uintptr_t)mr->buf;
	desc->token = mr->token;
	desc->length = (uint32_t)len;
	return mr_wait(c, mr, "FastRegister");
}

int smbd_mr_release(struct smbd_conn *c, struct smbd_mr *mr,
		    bool *invalidated_by_peer)
{
	NTSTATUS st;

	*invalidated_by_peer = mr->peer_invalidated;
	mr->peer_invalidated = false;
	if (!mr->valid)
		return c->err;
	if (c->err)
		return c->err;
	st = c->qp->Dispatch->NdkInvalidate(c->qp, mr, &mr->mr->Header, 0);
	if (!NT_SUCCESS(st))
		return fail(c, SMBD_ERR_RESOURCE, "NdkInvalidate: %s",
			    NdkStatusName(st));
	mr->pending++;
	c->info.local_invalidations++;
	return mr_wait(c, mr, "Invalidate");
}

void smbd_mr_destroy(struct smbd_conn *c, struct smbd_mr *mr)
{
	struct smbd_mr **pp;

	if (!mr)
		return;
	for (pp = &c->mrs; *pp; pp = &(*pp)->next)
		if (*pp == mr) {
			*pp = mr->next;
			break;
		}
	if (mr->lam)
		c->host.ad->Dispatch->NdkReleaseLAM(c->host.ad, mr->lam);
	free(mr->lam);
	if (mr->mdl)
		IoFreeMdl(mr->mdl);
	if (mr->mr)
		TOOL_CLOSE(mr->mr);
	free(mr);
}

/* ------------------------------------------------------------------ */
/* Connection                                                         */

static int negotiate(struct smbd_conn *c)
{
	struct smbd_neg_req req = {
		.min_version = SMBD_VERSION_1,
		.max_version = SMBD_VERSION_1,
		.credits_requested = (uint16_t)c->o.recv_credits,
		.preferred_send_size = SMBD_PREFERRED_SEND,
		.max_receive_size = c->o.max_receive_size,
		.max_fragmented_size = c->o.max_fragmented_size,
	};
	uint64_t deadline = deadline_of(c, 0);
	struct smbd_neg_resp *r = &c->info.peer;
	enum smbd_wire_err e;
	NDK_SGE sge;
	NTSTATUS st;
	int err;

	smbd_neg_req_encode(c->sbufs.mem, &req);
	sge.VirtualAddress = c->sbufs.mem;
	sge.Length = SMBD_NEG_REQ_SIZE;
	sge.MemoryRegionToken = c->sbufs.ltok;
	c->send_next = 1;
	st = c->qp->Dispatch->NdkSend(c->qp, NULL, &sge, 1, 0);
	if (!NT_SUCCESS(st))
		return fail(c, SMBD_ERR_LOST, "NdkSend: %s", NdkStatusName(st));
	c->send_out++;
	while (!c->have_neg_resp) {
		err = progress(c, deadline);
		if (err == SMBD_ERR_TIMEOUT)
			return fail(c, err,
				    "no SMB Direct negotiate response in %u ms",
				    c->o.timeout_ms);
		if (err)
			return err;
	}
	e = smbd_neg_resp_decode(c->neg, c->neg_len, r);
	if (e == SMBD_WIRE_STATUS)
		return fail(c, SMBD_ERR_PROTO,
			    "the server refused SMB Direct: %s (0x%08x)",
			    NdkStatusName((NTSTATUS)r->status), r->status);
	if (e)
		return fail(c, SMBD_ERR_PROTO, "negotiate response: %s",
			    smbd_wire_err_str(e));
	c->negotiated = true;
	/* Each message we send fits the peer's receives; what we ask it to
	 * send fits ours (it caps at our max receive size). */
	c->info.max_send = MIN(SMBD_PREFERRED_SEND, r->max_receive_size);
	c->info.max_frag_send = r->max_fragmented_size;
	c->info.max_read_write = r->max_read_write_size;
	c->send_credits = r->credits_granted;
	if (c->info.max_send <= SMBD_DATA_OFFSET)
		return fail(c, SMBD_ERR_PROTO, "the server receives %u bytes",
			    r->max_receive_size);
	if (c->o.verbose)
		fprintf(stderr,
			"smbd: negotiated 0x%04x: credits %u granted, %u requested; server receives %u, sends %u, fragmented %u, RDMA read/write %u\n",
			r->negotiated_version, r->credits_granted,
			r->credits_requested, r->max_receive_size,
			r->preferred_send_size, r->max_fragmented_size,
			r->max_read_write_size);
	return SMBD_OK;
}

static int connect_cm(struct smbd_conn *c)
{
	struct sockaddr_storage src;
	NDK_ADAPTER *ad = c->host.ad;
	struct tool_wait *w;
	ULONG ird = 0, ord = 0;
	char abuf[80];
	NTSTATUS st;

	if (tool_route_source((const struct sockaddr *)&c->o.dst, &src))
		return fail(c, SMBD_ERR_CONNECT, "no route to %s",
			    tool_addr_str((const struct sockaddr *)&c->o.dst,
					  abuf, sizeof(abuf)));
	st = ad->Dispatch->NdkCreateConnector(ad, NULL, NULL, &c->conn);
	if (!NT_SUCCESS(st))
		return fail(c, SMBD_ERR_RESOURCE, "NdkCreateConnector: %s",
			    NdkStatusName(st));
	w = calloc(1, sizeof(*w));
	if (!w)
		return fail(c, SMBD_ERR_RESOURCE, "out of memory");
	tool_wait_init(w);
	/* No private data (MS-SMBD); IRD for the server's RDMA Reads of
	 * our writes, no ORD: we never read from it. */
	st = c->conn->Dispatch->NdkConnect(
		c->conn, c->qp, (PSOCKADDR)&src,
		tool_addr_len((const struct sockaddr *)&src),
		(PSOCKADDR)&c->o.dst,
		tool_addr_len((const struct sockaddr *)&c->o.dst), c->o.ird, 0,
		NULL, 0, tool_wait_done, w);
	st = tool_wait_result(w, st, c->o.timeout_ms);
	if (st == STATUS_IO_TIMEOUT && !tool_wait_count(w))
		/* The completion may still come: w stays allocated. */
		return fail(c, SMBD_ERR_CONNECT,
			    "connect to %s: no answer in %u ms",
			    tool_addr_str((const struct sockaddr *)&c->o.dst,
					  abuf, sizeof(abuf)),
			    c->o.timeout_ms);
	free(w);
	if (st != STATUS_SUCCESS)
		return fail(c, SMBD_ERR_CONNECT, "connect to %s: %s (0x%08x)",
			    tool_addr_str((const struct sockaddr *)&c->o.dst,
					  abuf, sizeof(abuf)),
			    NdkStatusName(st), (unsigned int)st);
	st = c->conn->Dispatch->NdkGetConnectionData(c->conn, &ird, &ord, NULL,
						     NULL);
	if (NT_SUCCESS(st)) {
		c->info.ird = ird;
		c->info.ord = ord;
	}
	st = c->conn->Dispatch->NdkCompleteConnectEx(c->conn, on_disconnect, c,
						     NULL, NULL);
	if (!NT_SUCCESS(st))
		return fail(c, SMBD_ERR_CONNECT, "NdkCompleteConnectEx: %s",
			    NdkStatusName(st));
	c->connected = true;
	return SMBD_OK;
}

static void set_defaults(struct smbd_opts *o)
{
	if (!o->recv_credits)
		o->recv_credits = SMBD_DEFAULT_CREDITS;
	if (!o->max_receive_size)
		o->max_receive_size = SMBD_DEFAULT_RECV;
	if (!o->max_fragmented_size)
		o->max_fragmented_size = SMBD_DEFAULT_FRAG;
	if (!o->timeout_ms)
		o->timeout_ms = SMBD_DEFAULT_TIMEOUT;
	if (!o->ird)
		o->ird = 16;
}

/* One connection and its negotiation; *early: the server closed it
 * after the connection came up and before its negotiate response. */
static int connect_once(const struct smbd_opts *o, struct smbd_conn **out,
			char *why, size_t whylen, bool *early)
{
	struct sockaddr_storage src;
	struct smbd_conn *c;
	NET_IFINDEX ifindex;
	NDK_PD *pd;
	unsigned int i, sq;
	NTSTATUS st;
	int err;

	*out = NULL;
	c = calloc(1, sizeof(*c));
	if (!c) {
		snprintf(why, whylen, "out of memory");
		return SMBD_ERR_RESOURCE;
	}
	c->o = *o;
	set_defaults(&c->o);
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->cond, NULL);
	c->slot = MAX(SMBD_PREFERRED_SEND, SMBD_NEG_REQ_SIZE);
	if (tool_route_source((const struct sockaddr *)&c->o.dst, &src) ||
	    !(ifindex = tool_ifindex_of((const struct sockaddr *)&src))) {
		snprintf(why, whylen, "no adapter routes to the server");
		free(c);
		return SMBD_ERR_CONNECT;
	}
	tool_host_open(&c->host, ifindex);
	c->o.ird = MIN(c->o.ird, c->host.info.MaxInboundReadLimit);
	pd = c->host.pd;
	c->ready_tail = &c->ready;
	tool_buf_alloc(&c->host, &c->rbufs,
		       (size_t)c->o.recv_credits * c->o.max_receive_size,
		       NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
	tool_buf_alloc(&c->host, &c->sbufs, (size_t)SMBD_SEND_SLOTS * c->slot,
		       NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
	/* Sends, plus a registration and an invalidation per I/O. */
	sq = SMBD_SEND_SLOTS + 8;
	st = c->host.ad->Dispatch->NdkCreateCq(c->host.ad, c->o.recv_credits,
					       on_cq, c, NULL, NULL, NULL,
					       &c->rcq);
	if (NT_SUCCESS(st))
		st = c->host.ad->Dispatch->NdkCreateCq(
			c->host.ad, sq, on_cq, c, NULL, NULL, NULL, &c->scq);
	if (NT_SUCCESS(st))
		st = pd->Dispatch->NdkCreateQp(pd, c->rcq, c->scq, c,
					       c->o.recv_credits, sq, 1, 1, 0,
					       NULL, NULL, &c->qp);
	if (!NT_SUCCESS(st)) {
		err = fail(c, SMBD_ERR_RESOURCE, "CQ/QP: %s",
			   NdkStatusName(st));
		goto out;
	}
	/* Receives before the connection: the negotiate response may come
	 * right behind the accept. */
	for (i = 0; i < c->o.recv_credits; i++) {
		err = post_receive(c, rbuf_at(c, i));
		if (err)
			goto out;
	}
	err = connect_cm(c);
	if (!err)
		err = negotiate(c);
out:
	if (err) {
		*early = err == SMBD_ERR_LOST && c->connected &&
			 !c->have_neg_resp;
		snprintf(why, whylen, "%s", c->why);
		smbd_close(c);
		return err;
	}
	*out = c;
	return SMBD_OK;
}

/*
 * Linux's ksmbd (6.1) can close a new SMB Direct connection before it
 * answers the negotiate request: its connection thread may see the
 * request flagged before it is queued, when the request completes at the
 * same moment as the connection's ESTABLISHED event
 * (tests/interop/README.md, bug 9: "ksmbd closes a new connection before
 * its negotiate response"). A client reconnects after a lost transport, so
 * this one connects once more in that case, and says so.
 */
int smbd_connect(const struct smbd_opts *o, struct smbd_conn **out, char *why,
		 size_t whylen)
{
	bool early = false;
	int err = connect_once(o, out, why, whylen, &early);

	if (err && early) {
		fprintf(stderr,
			"smbd: the server closed the connection before its negotiate response (%s); connecting again\n",
			why);
		err = connect_once(o, out, why, whylen, &early);
	}
	return err;
}

void smbd_close(struct smbd_conn *c)
{
	struct tool_wait *w;
	uint64_t deadline;
	NTSTATUS st;

	if (!c)
		return;
	if (c->conn) {
		if (c->connected && !c->dead &&
		    !atomic_load(&c->disconnected)) {
			w = calloc(1, sizeof(*w));
			if (w) {
				tool_wait_init(w);
				st = c->conn->Dispatch->NdkDisconnect(
					c->conn, tool_wait_done, w);
				st = tool_wait_result(w, st, 10000);
				if (tool_wait_count(w) ||
				    st != STATUS_IO_TIMEOUT)
					free(w);
			}
		}
		TOOL_CLOSE(c->conn);
	}
	if (c->qp) {
		if (!c->dead) {
			c->dead = true;
			c->qp->Dispatch->NdkFlush(c->qp);
		}
		/* Flushed requests complete before the QP can close. */
		deadline = now_ms() + 5000;
		while ((c->send_out || c->nrecv) && now_ms() < deadline) {
			NDK_RESULT_EX res[16];
			ULONG n, i;

			n = c->scq->Dispatch->NdkGetCqResultsEx(c->scq, res,
								16);
			for (i = 0; i < n; i++)
				if (res[i].Type == NdkOperationTypeSend)
					c->send_out--;
			n = c->rcq->Dispatch->NdkGetCqResultsEx(c->rcq, res,
								16);
			c->nrecv -= MIN(n, c->nrecv);
			if (!n)
				tool_sleep_ms(1);
		}
		TOOL_CLOSE(c->qp);
	}
	if (c->rcq)
		TOOL_CLOSE(c->rcq);
	if (c->scq)
		TOOL_CLOSE(c->scq);
	if (c->rbufs.mr)
		tool_buf_free(&c->rbufs);
	if (c->sbufs.mr)
		tool_buf_free(&c->sbufs);
	tool_host_close(&c->host);
	free(c->frag);
	free(c->taken);
	while (c->ready) {
		struct smbd_msg *m = c->ready;

		c->ready = m->next;
		free(m);
	}
	pthread_cond_destroy(&c->cond);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

const struct smbd_info *smbd_info(const struct smbd_conn *c)
{
	return &c->info;
}

const char *smbd_why(const struct smbd_conn *c)
{
	return c->err ? c->why : "no error";
}

const char *smbd_err_str(int err)
{
	switch (err) {
	case SMBD_OK:
		return "ok";
	case SMBD_ERR_CONNECT:
		return "could not connect";
	case SMBD_ERR_PROTO:
		return "protocol error";
	case SMBD_ERR_TIMEOUT:
		return "timed out";
	case SMBD_ERR_LOST:
		return "connection lost";
	case SMBD_ERR_RESOURCE:
		return "local resource failure";
	case SMBD_ERR_TOO_BIG:
		return "message too big";
	}
	return "unknown";
}
