/* SPDX-License-Identifier: MIT */
/*
 * Work requests of the verbs provider (docs/verbs.md, Completions).
 *
 * Each request posted to a QP's initiator or receive queue has a slot
 * that remembers what NDK needs and verbs does not give back (the
 * RequestContext, the operation type and length, SILENT_SUCCESS). Its
 * wr_id is the QP's key, the queue and the slot's index, never a
 * pointer: siw and rxe leave the completions of a destroyed QP in its
 * CQ, and the key of a destroyed QP is found in no map, so they are
 * dropped instead of read from freed memory.
 *
 * Slots form a ring per queue, as deep as the queue. The poster (one
 * thread at a time per queue, NDKPI Work Request Posting Requirements)
 * moves tail; whoever polls the queue's CQ releases results in posting
 * order and moves head past them. siw completes a Read when its response
 * arrives but a later Send or Write when it is sent, so a queue's work
 * completions can come out of order: a slot keeps its result until every
 * slot before it is released (docs/ndk.md, Work requests: in posting
 * order). Every request that fails or is flushed completes even when
 * posted unsignaled (verbs requires it; siw and rxe do it), so an
 * unsignaled slot before one that completed has succeeded.
 */
#ifndef NDK_VERBS_WR_H
#define NDK_VERBS_WR_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include "core/lock.h"
#include "verbs/verbs.h"

enum {
	VSLOT_SILENT = 1, /* NDK_OP_FLAG_SILENT_SUCCESS */
};

struct ndk_vslot {
	PVOID ctx; /* the consumer's RequestContext */
	uint32_t seq; /* the queue's tail when posted */
	uint32_t len; /* bytes, for initiator requests */
	uint16_t type; /* NDK_OPERATION_TYPE */
	uint8_t flags;
	bool signaled; /* posted to complete */
	bool done; /* its work completion came */
	bool report; /* ... and gives the consumer a result */
	bool solicited;
	/* Bumped each time the slot is taken, and carried in the wr_id:
	 * a work completion for an earlier use of the slot (the device
	 * flushing a request the provider cancelled already) is dropped. */
	uint16_t gen;
	/* A receive with an SGE outside the live registrations
	 * (verbs/keys.h). */
	bool sgl_bad;
	/* Not STATUS_SUCCESS: what the request completes with when its
	 * device request (a marker in its place) succeeds: a bad local SGE
	 * the provider found at post time. */
	NTSTATUS preset;
	/* An invalidated fast registration, deregistered when the slot is
	 * released: in order behind the requests that may still use it. */
	struct ibv_mr *dereg;
	NDK_RESULT_EX res;
};

struct ndk_vwq {
	struct ndk_vslot *slots;
	uint32_t depth;
	/* Moved by the poster only, before the request goes to the device:
	 * a poller on another thread (the engine's CQ watch) may see its
	 * completion as soon as it is posted. */
	_Atomic uint32_t tail;
	_Atomic uint32_t head; /* slots before it are released, free */
	uint32_t done_end; /* seq + 1 of the newest completed slot */
	/* Unsignaled requests in a row: one in every half queue is
	 * signaled, so the device can reuse their entries. */
	uint32_t unsignaled;
	bool recv; /* a receive queue */
	/* The consumer flushed the QP (NdkFlush, NdkDisconnect, close):
	 * flushed requests may complete. Until then the device's own
	 * flush (an iWARP stream that closed) is held back. */
	atomic_bool flush_ok;
	/* The device flushed requests before the consumer did: its QP is
	 * in the error state and takes nothing more (verbs/qp.c). */
	atomic_bool dev_flushed;
	uint32_t key; /* its QP's, in the adapter's map */
	PVOID qp_context;
	struct ndk_adapter *ad; /* its counters */
};

/*
 * A shared receive queue's slots. Its receives complete on the CQs of the
 * QPs that took them, interleaved, so a slot is released alone when its
 * completion comes (a free list), not in posting order; a result's
 * QPContext is found by the completion's qp_num.
 */
struct ndk_vsrqslot {
	PVOID ctx;
	uint32_t next_free;
	bool busy;
	bool sgl_bad; /* as a QP's receive slot's */
};

struct ndk_vsrqslots {
	struct ndk_lock lock; /* NDK_LOCK_VSRQ: everything below */
	struct ndk_vsrqslot *slots;
	uint32_t cap; /* slots: the largest depth so far */
	uint32_t depth; /* the SRQ's */
	uint32_t free; /* first free slot; UINT32_MAX: none */
	uint32_t busy; /* posted and not completed */
	uint32_t key; /* in the adapter's map */
};

/* The adapter's map from QP (and SRQ) keys to their queues. */
struct ndk_vqpmap {
	struct ndk_rwlock lock;
	struct ndk_vqpmap_entry *e; /* open addressing, linear probing */
	uint32_t cap, used;
	uint32_t next_key;
	/* qp_num + 1 to key, for the completions of SRQ receives. */
	struct ndk_vqpn *qpn;
	uint32_t qpn_cap, qpn_used;
	/* A work completion of the owner failed (not flushed): its QP is in
	 * the error state (verbs/qp.c). Called under the map's lock. */
	void (*on_error)(void *owner);
};

int ndk_vqpmap_init(struct ndk_vqpmap *m);
void ndk_vqpmap_fini(struct ndk_vqpmap *m);
/* Gives the QP's queues a key (sq->key, rq->key): 0 or -ENOMEM. ibv and
 * owner are the device's QP and ours, for its asynchronous events. */
int ndk_vqpmap_add(struct ndk_vqpmap *m, struct ndk_vwq *sq, struct ndk_vwq *rq,
		   const void *ibv, uint32_t qp_num, void *owner);
/* The same for an SRQ (srq->key); ibv is the device's SRQ. */
int ndk_vqpmap_add_srq(struct ndk_vqpmap *m, struct ndk_vsrqslots *srq,
		       const void *ibv, void *owner);
/*
 * Calls fn(owner, arg) for the QP whose device QP is ibv, under the map's
 * lock (the owner cannot go meanwhile); false if it is not in the map.
 */
bool ndk_vqpmap_with_ibv(struct ndk_vqpmap *m, const void *ibv,
			 void (*fn)(void *owner, void *arg), void *arg);
/* Once this returns, no poller looks at the queues any more. */
void ndk_vqpmap_del(struct ndk_vqpmap *m, uint32_t key);

int ndk_vsrqslots_init(struct ndk_vsrqslots *q, uint32_t depth);
void ndk_vsrqslots_fini(struct ndk_vsrqslots *q);
/* A free slot for a receive with RequestContext ctx: its index, or
 * -ENOSPC if depth receives are outstanding. put gives it back (the post
 * failed). */
int ndk_vsrqslots_get(struct ndk_vsrqslots *q, PVOID ctx, bool sgl_bad);
void ndk_vsrqslots_put(struct ndk_vsrqslots *q, uint32_t index);
/* A new depth: -EINVAL below the receives outstanding, -ENOMEM. */
int ndk_vsrqslots_resize(struct ndk_vsrqslots *q, uint32_t depth);
uint32_t ndk_vsrqslots_busy(struct ndk_vsrqslots *q);
uint64_t ndk_vsrqslots_wr_id(const struct ndk_vsrqslots *q, uint32_t index);

int ndk_vwq_init(struct ndk_vwq *wq, uint32_t depth, bool recv,
		 PVOID qp_context, struct ndk_adapter *ad);
void ndk_vwq_fini(struct ndk_vwq *wq);

/* The next free slot (not yet posted), or NULL if the queue is full. */
struct ndk_vslot *ndk_vwq_slot(struct ndk_vwq *wq);
/* The slot from ndk_vwq_slot is about to be posted, signaled or not:
 * called before ibv_post_send/recv, and ndk_vwq_uncommit if that
 * failed. */
void ndk_vwq_commit(struct ndk_vwq *wq, struct ndk_vslot *s, bool signaled);
void ndk_vwq_uncommit(struct ndk_vwq *wq, struct ndk_vslot *s);
/* Whether an initiator request with these NDK flags must be signaled. */
bool ndk_vwq_signal(struct ndk_vwq *wq, ULONG flags);
uint64_t ndk_vwq_wr_id(const struct ndk_vwq *wq, const struct ndk_vslot *s);

/*
 * Takes n work completions of one CQ and hands every NDK result they
 * release to out(), in posting order per queue: none for a
 * SILENT_SUCCESS request that succeeded or for a completion of a QP that
 * no longer exists, several when a late Read lets the requests behind it
 * go. solicited says whether the result satisfies an
 * NDK_CQ_NOTIFY_SOLICITED arm as far as verbs tells (docs/verbs.md,
 * Completion queues). The CQ's lock is held: the queues of one CQ are
 * released by one thread at a time.
 */
/*
 * The consumer flushed: results that the device's own flush left held
 * (flush_ok was false when they were polled) go to out() now, in order.
 * The lock of the queue's CQ is held.
 */
void ndk_vwq_release_held(struct ndk_vwq *wq,
			  void (*out)(void *arg, const NDK_RESULT_EX *r,
				      bool solicited),
			  void *arg);

/*
 * The consumer flushed and the device did not complete some requests
 * (siw never flushes work posted to a QP already in the error state):
 * every signaled request still outstanding completes STATUS_CANCELLED
 * now, and the device's own completions for them, should they come, are
 * dropped (docs/verbs.md, Queue pairs). Unsignaled ones before a
 * cancelled one count as succeeded, as always. The lock of the queue's
 * CQ is held; ndk_vwq_release_held hands the results out.
 */
void ndk_vwq_cancel(struct ndk_vwq *wq);

/* The largest queue a slot index can name in a wr_id. */
#define NDK_VWQ_MAX_DEPTH (1u << 20)

/* NDK SGEs to verbs ones, and their length; false if there are more than
 * max (or NDK_VERBS_MAX_SGE). */
#define NDK_VERBS_MAX_SGE 32
bool ndk_verbs_sgl(struct ibv_sge *out, const NDK_SGE *sgl, ULONG nsge,
		   uint32_t max, uint64_t *len);

void ndk_vwc_results(struct ndk_vqpmap *m, const struct ibv_wc *wc,
		     unsigned int n,
		     void (*out)(void *arg, const NDK_RESULT_EX *r,
				 bool solicited),
		     void *arg);

#endif /* NDK_VERBS_WR_H */
