/* SPDX-License-Identifier: MIT */
/* Work request slots, their completions and the QP key map (verbs/wr.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "core/compiler.h"
#include "core/log.h"
#include "oid/registry.h"
#include "verbs/lam.h"
#include "verbs/mr.h"
#include "verbs/mw.h"
#include "verbs/wr.h"

#define WR_RECV_BIT (1ull << 31)
/* A QP queue's wr_id: the slot's index in the low 20 bits, its
 * generation in the 11 above. */
#define WR_INDEX_MASK (NDK_VWQ_MAX_DEPTH - 1)
#define WR_GEN_SHIFT  20
#define WR_GEN_MASK   0x7ffu
#define SRQ_NONE      UINT32_MAX /* the end of an SRQ's free list */

struct ndk_vqpmap_entry {
	uint32_t key; /* 0: free */
	struct ndk_vwq *sq, *rq; /* a QP's */
	struct ndk_vsrqslots *srq; /* or an SRQ's */
	const void *ibv;
	void *owner;
	uint32_t qpn1; /* a QP's qp_num + 1 */
};

struct ndk_vqpn {
	uint32_t qpn1; /* 0: free */
	uint32_t key;
};

int ndk_vqpmap_init(struct ndk_vqpmap *m)
{
	memset(m, 0, sizeof(*m));
	ndk_rwlock_init(&m->lock, NDK_LOCK_QPMAP);
	m->cap = 64;
	m->e = calloc(m->cap, sizeof(*m->e));
	m->qpn_cap = 64;
	m->qpn = calloc(m->qpn_cap, sizeof(*m->qpn));
	m->next_key = 1;
	return m->e && m->qpn ? 0 : -ENOMEM;
}

void ndk_vqpmap_fini(struct ndk_vqpmap *m)
{
	free(m->e);
	free(m->qpn);
	m->e = NULL;
	m->qpn = NULL;
	ndk_rwlock_destroy(&m->lock);
}

static uint32_t map_hash(uint32_t key, uint32_t cap)
{
	return (key * 2654435761u) & (cap - 1);
}

/*
 * Open addressing deletion for both tables: empties slot i of base (cap
 * elements of esz bytes, key() 0 when free) and moves later elements of
 * its probe run up, so lookups never stop at a hole.
 */
static void oa_delete(void *base, size_t esz, uint32_t cap, uint32_t i,
		      uint32_t (*key)(const void *el))
{
	char *b = base;
	uint32_t j = i, h;

	for (;;) {
		j = (j + 1) & (cap - 1);
		if (!key(b + (size_t)j * esz))
			break;
		h = map_hash(key(b + (size_t)j * esz), cap);
		if ((j > i && (h <= i || h > j)) ||
		    (j < i && (h <= i && h > j))) {
			memcpy(b + (size_t)i * esz, b + (size_t)j * esz, esz);
			i = j;
		}
	}
	memset(b + (size_t)i * esz, 0, esz);
}

static uint32_t entry_key(const void *el)
{
	return ((const struct ndk_vqpmap_entry *)el)->key;
}

static uint32_t qpn_key(const void *el)
{
	return ((const struct ndk_vqpn *)el)->qpn1;
}

/* Write lock held, room for one more. */
static void qpn_put_locked(struct ndk_vqpmap *m, struct ndk_vqpn n)
{
	uint32_t i = map_hash(n.qpn1, m->qpn_cap);

	while (m->qpn[i].qpn1 && m->qpn[i].qpn1 != n.qpn1)
		i = (i + 1) & (m->qpn_cap - 1);
	if (!m->qpn[i].qpn1)
		m->qpn_used++;
	m->qpn[i] = n;
}

static int qpn_grow_locked(struct ndk_vqpmap *m)
{
	struct ndk_vqpn *old = m->qpn;
	uint32_t cap = m->qpn_cap, i;

	m->qpn = calloc(cap * 2, sizeof(*m->qpn));
	if (!m->qpn) {
		m->qpn = old;
		return -ENOMEM;
	}
	m->qpn_cap = cap * 2;
	m->qpn_used = 0;
	for (i = 0; i < cap; i++)
		if (old[i].qpn1)
			qpn_put_locked(m, old[i]);
	free(old);
	return 0;
}

/* Lock held: the slot of qpn1, or NULL. */
static struct ndk_vqpn *qpn_find(struct ndk_vqpmap *m, uint32_t qpn1)
{
	uint32_t i;

	for (i = map_hash(qpn1, m->qpn_cap); m->qpn[i].qpn1;
	     i = (i + 1) & (m->qpn_cap - 1))
		if (m->qpn[i].qpn1 == qpn1)
			return &m->qpn[i];
	return NULL;
}

/* Write lock held, room for one more. */
static void map_put_locked(struct ndk_vqpmap *m,
			   const struct ndk_vqpmap_entry *n)
{
	uint32_t i = map_hash(n->key, m->cap);

	while (m->e[i].key)
		i = (i + 1) & (m->cap - 1);
	m->e[i] = *n;
	m->used++;
}

static int map_grow_locked(struct ndk_vqpmap *m)
{
	struct ndk_vqpmap_entry *old = m->e;
	uint32_t cap = m->cap, i;

	m->e = calloc(cap * 2, sizeof(*m->e));
	if (!m->e) {
		m->e = old;
		return -ENOMEM;
	}
	m->cap = cap * 2;
	m->used = 0;
	for (i = 0; i < cap; i++)
		if (old[i].key)
			map_put_locked(m, &old[i]);
	free(old);
	return 0;
}

/* Enters n under a new key: the key, or 0 if out of memory. */
static uint32_t map_add(struct ndk_vqpmap *m, struct ndk_vqpmap_entry n)
{
	uint32_t i;

	ndk_write_lock(&m->lock);
	if (((m->used + 1) * 2 > m->cap && map_grow_locked(m)) ||
	    (n.qpn1 && (m->qpn_used + 1) * 2 > m->qpn_cap &&
	     qpn_grow_locked(m))) {
		ndk_rw_unlock(&m->lock);
		return 0;
	}
	/* Keys are not reused until 2^32 QPs later, and never 0. */
	do {
		n.key = m->next_key++;
		for (i = map_hash(n.key, m->cap); n.key && m->e[i].key;
		     i = (i + 1) & (m->cap - 1))
			if (m->e[i].key == n.key)
				n.key = 0;
	} while (!n.key);
	map_put_locked(m, &n);
	if (n.qpn1)
		qpn_put_locked(
			m, (struct ndk_vqpn){ .qpn1 = n.qpn1, .key = n.key });
	ndk_rw_unlock(&m->lock);
	return n.key;
}

int ndk_vqpmap_add(struct ndk_vqpmap *m, struct ndk_vwq *sq, struct ndk_vwq *rq,
		   const void *ibv, uint32_t qp_num, void *owner)
{
	struct ndk_vqpmap_entry n = { .sq = sq,
				      .rq = rq,
				      .ibv = ibv,
				      .owner = owner,
				      .qpn1 = qp_num + 1 };
	uint32_t key = map_add(m, n);

	if (!key)
		return -ENOMEM;
	sq->key = key;
	rq->key = key;
	return 0;
}

int ndk_vqpmap_add_srq(struct ndk_vqpmap *m, struct ndk_vsrqslots *srq,
		       const void *ibv, void *owner)
{
	struct ndk_vqpmap_entry n = { .srq = srq, .ibv = ibv, .owner = owner };
	uint32_t key = map_add(m, n);

	if (!key)
		return -ENOMEM;
	srq->key = key;
	return 0;
}

/* Lock held: the entry of key, or NULL. */
static struct ndk_vqpmap_entry *map_find(struct ndk_vqpmap *m, uint32_t key)
{
	uint32_t i;

	for (i = map_hash(key, m->cap); m->e[i].key; i = (i + 1) & (m->cap - 1))
		if (m->e[i].key == key)
			return &m->e[i];
	return NULL;
}

bool ndk_vqpmap_with_ibv(struct ndk_vqpmap *m, const void *ibv,
			 void (*fn)(void *owner, void *arg), void *arg)
{
	bool found = false;
	uint32_t i;

	/* Asynchronous events are rare: a walk is enough. */
	ndk_read_lock(&m->lock);
	for (i = 0; i < m->cap && !found; i++) {
		if (m->e[i].key && m->e[i].ibv == ibv) {
			fn(m->e[i].owner, arg);
			found = true;
		}
	}
	ndk_rw_unlock(&m->lock);
	return found;
}

void ndk_vqpmap_del(struct ndk_vqpmap *m, uint32_t key)
{
	struct ndk_vqpmap_entry *hole;
	struct ndk_vqpn *n;

	ndk_write_lock(&m->lock);
	hole = key ? map_find(m, key) : NULL;
	if (hole) {
		n = hole->qpn1 ? qpn_find(m, hole->qpn1) : NULL;
		if (n && n->key == key) {
			oa_delete(m->qpn, sizeof(*m->qpn), m->qpn_cap,
				  (uint32_t)(n - m->qpn), qpn_key);
			m->qpn_used--;
		}
		oa_delete(m->e, sizeof(*m->e), m->cap, (uint32_t)(hole - m->e),
			  entry_key);
		m->used--;
	}
	ndk_rw_unlock(&m->lock);
}

int ndk_vsrqslots_init(struct ndk_vsrqslots *q, uint32_t depth)
{
	memset(q, 0, sizeof(*q));
	ndk_lock_init(&q->lock, NDK_LOCK_VSRQ);
	q->free = SRQ_NONE;
	return ndk_vsrqslots_resize(q, depth);
}

void ndk_vsrqslots_fini(struct ndk_vsrqslots *q)
{
	free(q->slots);
	q->slots = NULL;
	ndk_lock_destroy(&q->lock);
}

int ndk_vsrqslots_get(struct ndk_vsrqslots *q, PVOID ctx, bool sgl_bad)
{
	uint32_t i;

	ndk_lock(&q->lock);
	if (q->busy >= q->depth || q->free == SRQ_NONE) {
		ndk_unlock(&q->lock);
		return -ENOSPC;
	}
	i = q->free;
	q->free = q->slots[i].next_free;
	q->slots[i].ctx = ctx;
	q->slots[i].sgl_bad = sgl_bad;
	q->slots[i].busy = true;
	q->busy++;
	ndk_unlock(&q->lock);
	return (int)i;
}

/* Lock held: slot i is free again. */
static void srqslot_free_locked(struct ndk_vsrqslots *q, uint32_t i)
{
	NDK_ASSERT_LOCKED(&q->lock);
	q->slots[i].busy = false;
	q->slots[i].next_free = q->free;
	q->free = i;
	q->busy--;
}

void ndk_vsrqslots_put(struct ndk_vsrqslots *q, uint32_t index)
{
	ndk_lock(&q->lock);
	if (index < q->cap && q->slots[index].busy)
		srqslot_free_locked(q, index);
	ndk_unlock(&q->lock);
}

int ndk_vsrqslots_resize(struct ndk_vsrqslots *q, uint32_t depth)
{
	struct ndk_vsrqslot *n;
	uint32_t i;
	int ret = 0;

	ndk_lock(&q->lock);
	if (depth < q->busy) {
		ret = -EINVAL;
	} else if (depth > q->cap) {
		/* Slots keep their indexes (outstanding wr_ids name them):
		 * the array only grows, the new slots go on the free list. */
		n = realloc(q->slots, (size_t)depth * sizeof(*n));
		if (!n) {
			ret = -ENOMEM;
		} else {
			q->slots = n;
			for (i = depth; i-- > q->cap;) {
				memset(&n[i], 0, sizeof(n[i]));
				n[i].next_free = q->free;
				q->free = i;
			}
			q->cap = depth;
		}
	}
	if (!ret)
		q->depth = depth;
	ndk_unlock(&q->lock);
	return ret;
}

uint32_t ndk_vsrqslots_busy(struct ndk_vsrqslots *q)
{
	uint32_t n;

	ndk_lock(&q->lock);
	n = q->busy;
	ndk_unlock(&q->lock);
	return n;
}

uint64_t ndk_vsrqslots_wr_id(const struct ndk_vsrqslots *q, uint32_t index)
{
	return (uint64_t)q->key << 32 | WR_RECV_BIT | index;
}

int ndk_vwq_init(struct ndk_vwq *wq, uint32_t depth, bool recv,
		 PVOID qp_context, struct ndk_adapter *ad)
{
	memset(wq, 0, sizeof(*wq));
	wq->slots = calloc(depth ? depth : 1, sizeof(*wq->slots));
	if (!wq->slots)
		return -ENOMEM;
	wq->depth = depth;
	wq->recv = recv;
	wq->qp_context = qp_context;
	wq->ad = ad;
	atomic_init(&wq->head, 0);
	atomic_init(&wq->tail, 0);
	atomic_init(&wq->flush_ok, false);
	atomic_init(&wq->dev_flushed, false);
	return 0;
}

/* The slot leaves the queue: what it was to deregister goes now. */
static void slot_retire(struct ndk_vslot *s)
{
	if (s->dereg && ndk_verbs_dereg(s->dereg))
		ndk_warn("verbs: invalidated MR: ibv_dereg_mr failed (%d)",
			 errno);
	s->dereg = NULL;
}

void ndk_vwq_fini(struct ndk_vwq *wq)
{
	uint32_t head = atomic_load(&wq->head), tail = atomic_load(&wq->tail);

	/* The QP is gone: nothing still uses what its slots hold. */
	for (; wq->slots && head != tail; head++)
		slot_retire(&wq->slots[head % wq->depth]);
	free(wq->slots);
	wq->slots = NULL;
}

struct ndk_vslot *ndk_vwq_slot(struct ndk_vwq *wq)
{
	uint32_t head = atomic_load_explicit(&wq->head, memory_order_acquire);
	uint32_t tail = atomic_load_explicit(&wq->tail, memory_order_relaxed);
	struct ndk_vslot *s;
	uint16_t gen;

	if (tail - head >= wq->depth)
		return NULL;
	s = &wq->slots[tail % wq->depth];
	gen = s->gen;
	memset(s, 0, sizeof(*s));
	s->seq = tail;
	s->gen = (uint16_t)((gen + 1) & WR_GEN_MASK);
	return s;
}

void ndk_vwq_commit(struct ndk_vwq *wq, struct ndk_vslot *s, bool signaled)
{
	s->signaled = signaled;
	/* The slot is complete before a poller can see it. */
	atomic_store_explicit(&wq->tail, s->seq + 1, memory_order_release);
}

void ndk_vwq_uncommit(struct ndk_vwq *wq, struct ndk_vslot *s)
{
	/*
	 * The device refused it, so no completion comes: a poller that saw
	 * the slot found it running and stopped there (it is the last
	 * one), and head is not past it.
	 */
	atomic_store_explicit(&wq->tail, s->seq, memory_order_release);
}

bool ndk_vwq_signal(struct ndk_vwq *wq, ULONG flags)
{
	if (!(flags & NDK_OP_FLAG_SILENT_SUCCESS) ||
	    ++wq->unsignaled > wq->depth / 2) {
		wq->unsignaled = 0;
		return true;
	}
	return false;
}

uint64_t ndk_vwq_wr_id(const struct ndk_vwq *wq, const struct ndk_vslot *s)
{
	return (uint64_t)wq->key << 32 | (wq->recv ? WR_RECV_BIT : 0) |
	       (uint64_t)s->gen << WR_GEN_SHIFT | (uint64_t)(s - wq->slots);
}

bool ndk_verbs_sgl(struct ibv_sge *out, const NDK_SGE *sgl, ULONG nsge,
		   uint32_t max, uint64_t *len)
{
	ULONG i;

	*len = 0;
	if (nsge > max || nsge > NDK_VERBS_MAX_SGE || (nsge && !sgl))
		return false;
	for (i = 0; i < nsge; i++) {
		out[i].addr = (uint64_t)(uintptr_t)sgl[i].VirtualAddress;
		out[i].length = sgl[i].Length;
		out[i].lkey = sgl[i].MemoryRegionToken;
		*len += sgl[i].Length;
	}
	return true;
}

/* Successful data moves, for OID_NDK_STATISTICS (docs/verbs.md, OIDs). */
static void count(struct ndk_adapter *ad, uint16_t type, uint32_t len)
{
	switch (type) {
	case NdkOperationTypeSend:
	case NdkOperationTypeWrite:
		ndk_adapter_count(ad, NDK_CTR(RDMAOutOctets), len);
		ndk_adapter_count(ad, NDK_CTR(RDMAOutFrames), 1);
		break;
	case NdkOperationTypeReceive:
	case NdkOperationTypeReceiveAndInvalidate:
	case NdkOperationTypeRead:
		ndk_adapter_count(ad, NDK_CTR(RDMAInOctets), len);
		ndk_adapter_count(ad, NDK_CTR(RDMAInFrames), 1);
		break;
	default:
		break;
	}
}

/*
 * Whether a receive's Send invalidated a token (SendAndInvalidate). rxe
 * (Linux 6.1) writes the kernel's flag, IB_WC_WITH_INVALIDATE (4), into
 * its user CQ, which is IBV_WC_IP_CSUM_OK for verbs: meaningless for an
 * RC QP's receive, so on rxe it counts too (docs/verbs.md, Devices).
 */
static bool wc_invalidated(const struct ibv_wc *wc, struct ndk_adapter *ad)
{
	return (wc->wc_flags & IBV_WC_WITH_INV) ||
	       ((wc->wc_flags & IBV_WC_IP_CSUM_OK) && ad && ad->priv &&
		to_vad(ad)->rxe);
}

/*
 * A peer invalidated rkey: where fast registrations are windows, the MR
 * whose window it is may be fast-registered again (verbs/mr.h); a memory
 * window with it is free (verbs/mw.h).
 */
static void wc_peer_invalidated(struct ndk_adapter *ad, uint32_t rkey)
{
	struct ndk_vadapter *v;

	if (!ad || !ad->priv)
		return;
	v = to_vad(ad);
	if (v->fr_mw)
		ndk_vmr_peer_invalidated(v, rkey);
	if (v->mw2)
		ndk_vmw_peer_invalidated(v, rkey);
}

/*
 * A receive's status. rxe reports a receive too small for its Send as a
 * local QP operation error, as it does a receive SGE it cannot use (a
 * key that names nothing, a range past its MR: Linux's rxe_resp.c,
 * copy_data failing), and siw a bad receive SGE as a general error. The
 * provider knows which SGEs are good (verbs/keys.h): a failed receive
 * with a bad one is STATUS_ACCESS_VIOLATION, a local QP operation error
 * of a good one STATUS_BUFFER_OVERFLOW, as NDK wants.
 */
static NTSTATUS recv_status(enum ibv_wc_status st, bool sgl_bad)
{
	if (st == IBV_WC_SUCCESS || st == IBV_WC_WR_FLUSH_ERR)
		return ndk_verbs_wc_status(st);
	if (sgl_bad)
		return STATUS_ACCESS_VIOLATION;
	if (st == IBV_WC_LOC_QP_OP_ERR)
		return STATUS_BUFFER_OVERFLOW;
	return ndk_verbs_wc_status(st);
}

/*
 * Map lock held: one completion of an SRQ receive (se is the SRQ's
 * entry) frees its slot and goes to out() at once, with the QPContext of
 * the QP that took it; dropped if that QP is gone.
 */
static void srq_complete(struct ndk_vqpmap *m, struct ndk_vqpmap_entry *se,
			 const struct ibv_wc *wc,
			 void (*out)(void *arg, const NDK_RESULT_EX *r,
				     bool solicited),
			 void *arg)
{
	struct ndk_vsrqslots *q = se->srq;
	uint32_t index = (uint32_t)(wc->wr_id & (WR_RECV_BIT - 1));
	bool ok = wc->status == IBV_WC_SUCCESS;
	struct ndk_vqpmap_entry *qe;
	struct ndk_vqpn *n;
	NDK_RESULT_EX r;
	bool sgl_bad;
	PVOID ctx;

	ndk_lock(&q->lock);
	if (index >= q->cap || !q->slots[index].busy) {
		ndk_unlock(&q->lock);
		return;
	}
	ctx = q->slots[index].ctx;
	sgl_bad = q->slots[index].sgl_bad;
	srqslot_free_locked(q, index);
	ndk_unlock(&q->lock);
	n = qpn_find(m, wc->qp_num + 1);
	qe = n ? map_find(m, n->key) : NULL;
	if (!qe || !qe->rq)
		return; /* its QP is gone */
	memset(&r, 0, sizeof(r));
	r.Type = NdkOperationTypeReceive;
	if (ok && wc_invalidated(wc, qe->rq->ad)) {
		r.Type = NdkOperationTypeReceiveAndInvalidate;
		r.TypeSpecificCompletionOutput = wc->invalidated_rkey;
		wc_peer_invalidated(qe->rq->ad, wc->invalidated_rkey);
	}
	if (ok)
		count(qe->rq->ad, (uint16_t)r.Type, wc->byte_len);
	else if (wc->status != IBV_WC_WR_FLUSH_ERR && m->on_error)
		m->on_error(qe->owner);
	r.Status = recv_status(wc->status, sgl_bad);
	r.BytesTransferred = ok ? wc->byte_len : 0;
	r.QPContext = qe->rq->qp_context;
	r.RequestContext = ctx;
	r.ProviderErrorCode = ok ? 0 : (ULONG)wc->status;
	out(arg, &r, true);
}

/* Map lock held: records one completion of a QP's queue (entry e) in its
 * slot; the queue, or NULL for none. */
static struct ndk_vwq *wc_record(struct ndk_vqpmap *m,
				 struct ndk_vqpmap_entry *e,
				 const struct ibv_wc *wc)
{
	bool ok = wc->status == IBV_WC_SUCCESS;
	NDK_RESULT_EX *r;
	struct ndk_vslot *s;
	struct ndk_vwq *wq;
	uint32_t index, len;
	NTSTATUS status;
	uint16_t type;

	wq = wc->wr_id & WR_RECV_BIT ? e->rq : e->sq;
	index = (uint32_t)(wc->wr_id & WR_INDEX_MASK);
	if (index >= wq->depth)
		return NULL;
	s = &wq->slots[index];
	/* Cancelled by the provider already (ndk_vwq_cancel), or an
	 * earlier use of the slot: it completed once. */
	if (s->done || s->gen != ((wc->wr_id >> WR_GEN_SHIFT) & WR_GEN_MASK))
		return NULL;
	r = &s->res;
	type = s->type;
	len = s->len;
	memset(r, 0, sizeof(*r));
	if (wq->recv && ok) {
		len = wc->byte_len;
		if (wc_invalidated(wc, wq->ad)) {
			type = NdkOperationTypeReceiveAndInvalidate;
			r->TypeSpecificCompletionOutput = wc->invalidated_rkey;
			wc_peer_invalidated(wq->ad, wc->invalidated_rkey);
		}
	}
	if (wq->recv)
		status = recv_status(wc->status, s->sgl_bad);
	else if (ok && s->preset)
		status = s->preset; /* its marker went through */
	else
		status = ndk_verbs_wc_status(wc->status);
	if (status == STATUS_SUCCESS)
		count(wq->ad, type, len);
	else if (!ok && wc->status != IBV_WC_WR_FLUSH_ERR && m->on_error)
		m->on_error(e->owner);
	else if (wc->status == IBV_WC_WR_FLUSH_ERR)
		atomic_store(&wq->dev_flushed, true);
	s->done = true;
	if (s->seq + 1 - wq->done_end < 0x80000000u)
		wq->done_end = s->seq + 1;
	/* verbs does not say whether a receive was solicited. */
	s->solicited = status != STATUS_SUCCESS || wq->recv;
	s->report = status != STATUS_SUCCESS || !(s->flags & VSLOT_SILENT);
	r->Status = status;
	r->BytesTransferred = status == STATUS_SUCCESS ? len : 0;
	r->QPContext = wq->qp_context;
	r->RequestContext = s->ctx;
	r->Type = (NDK_OPERATION_TYPE)type;
	r->ProviderErrorCode = ok ? 0 : (ULONG)wc->status;
	return wq;
}

/*
 * Releases what is ready at the head of wq: completed slots, and the
 * unsignaled ones before a completed slot (they succeeded).
 */
static void wq_release(struct ndk_vwq *wq,
		       void (*out)(void *arg, const NDK_RESULT_EX *r,
				   bool solicited),
		       void *arg)
{
	uint32_t head = atomic_load_explicit(&wq->head, memory_order_relaxed);
	uint32_t tail = atomic_load_explicit(&wq->tail, memory_order_acquire);

	while (head != tail) {
		struct ndk_vslot *s = &wq->slots[head % wq->depth];

		uint32_t ahead = wq->done_end - 1 - head;

		if (s->done) {
			/* NDK flushes only when the consumer says so
			 * (docs/ndk.md, Disconnect). */
			if (s->res.Status == STATUS_CANCELLED &&
			    !atomic_load_explicit(&wq->flush_ok,
						  memory_order_acquire))
				break;
			if (s->report)
				out(arg, &s->res, s->solicited);
			slot_retire(s);
		} else if (s->signaled || !ahead || ahead >= 0x80000000u) {
			break; /* still running, or nothing behind it done */
		} else {
			slot_retire(s);
		}
		head++;
	}
	atomic_store_explicit(&wq->head, head, memory_order_release);
}

void ndk_vwq_release_held(struct ndk_vwq *wq,
			  void (*out)(void *arg, const NDK_RESULT_EX *r,
				      bool solicited),
			  void *arg)
{
	wq_release(wq, out, arg);
}

void ndk_vwq_cancel(struct ndk_vwq *wq)
{
	uint32_t head = atomic_load_explicit(&wq->head, memory_order_relaxed);
	uint32_t tail = atomic_load_explicit(&wq->tail, memory_order_acquire);

	for (; head != tail; head++) {
		struct ndk_vslot *s = &wq->slots[head % wq->depth];

		/* An unsignaled request gives no completion when it
		 * succeeds: one the device finished is not cancelled. */
		if (s->done || !s->signaled)
			continue;
		memset(&s->res, 0, sizeof(s->res));
		s->res.Status = STATUS_CANCELLED;
		s->res.QPContext = wq->qp_context;
		s->res.RequestContext = s->ctx;
		s->res.Type = (NDK_OPERATION_TYPE)s->type;
		s->res.ProviderErrorCode = IBV_WC_WR_FLUSH_ERR;
		s->done = true;
		s->report = true;
		s->solicited = true;
		if (s->seq + 1 - wq->done_end < 0x80000000u)
			wq->done_end = s->seq + 1;
	}
}

void ndk_vwc_results(struct ndk_vqpmap *m, const struct ibv_wc *wc,
		     unsigned int n,
		     void (*out)(void *arg, const NDK_RESULT_EX *r,
				 bool solicited),
		     void *arg)
{
	struct ndk_vwq *touched[16];
	unsigned int i, j, nt = 0;

	ndk_read_lock(&m->lock);
	for (i = 0; i < n; i++) {
		struct ndk_vqpmap_entry *e =
			map_find(m, (uint32_t)(wc[i].wr_id >> 32));
		struct ndk_vwq *wq;

		if (!e)
			continue; /* its QP or SRQ is gone */
		if (e->srq) {
			srq_complete(m, e, &wc[i], out, arg);
			continue;
		}
		wq = wc_record(m, e, &wc[i]);
		if (!wq)
			continue;
		for (j = 0; j < nt && touched[j] != wq; j++)
			;
		if (j == nt && nt < ARRAY_SIZE(touched))
			touched[nt++] = wq;
		else if (j == nt)
			wq_release(wq, out, arg);
	}
	for (j = 0; j < nt; j++)
		wq_release(touched[j], out, arg);
	ndk_rw_unlock(&m->lock);
}
