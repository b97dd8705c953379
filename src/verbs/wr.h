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
 * moves tail; whoever polls the CQ moves head past each completed slot.
 * Completions of one queue come in order, and every request that fails
 * or is flushed completes even when posted unsignaled (verbs requires it;
 * siw and rxe do it), so a completion at slot k also ends every
 * unsignaled slot before k: they all succeeded.
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
};

struct ndk_vwq {
	struct ndk_vslot *slots;
	uint32_t depth;
	uint32_t tail; /* poster only */
	_Atomic uint32_t head; /* slots before it are free */
	/* Unsignaled requests in a row: one in every half queue is
	 * signaled, so the device can reuse their entries. */
	uint32_t unsignaled;
	bool recv; /* a receive queue */
	uint32_t key; /* its QP's, in the adapter's map */
	PVOID qp_context;
	struct ndk_adapter *ad; /* its counters */
};

/* The adapter's map from QP keys to their two queues. */
struct ndk_vqpmap {
	struct ndk_rwlock lock;
	struct ndk_vqpmap_entry *e; /* open addressing, linear probing */
	uint32_t cap, used;
	uint32_t next_key;
};

int ndk_vqpmap_init(struct ndk_vqpmap *m);
void ndk_vqpmap_fini(struct ndk_vqpmap *m);
/* Gives the QP's queues a key (sq->key, rq->key): 0 or -ENOMEM. */
int ndk_vqpmap_add(struct ndk_vqpmap *m, struct ndk_vwq *sq,
		   struct ndk_vwq *rq);
/* Once this returns, no poller looks at the queues any more. */
void ndk_vqpmap_del(struct ndk_vqpmap *m, uint32_t key);

int ndk_vwq_init(struct ndk_vwq *wq, uint32_t depth, bool recv,
		 PVOID qp_context, struct ndk_adapter *ad);
void ndk_vwq_fini(struct ndk_vwq *wq);

/* The next free slot (not yet posted), or NULL if the queue is full. */
struct ndk_vslot *ndk_vwq_slot(struct ndk_vwq *wq);
/* The slot from ndk_vwq_slot was posted. */
void ndk_vwq_commit(struct ndk_vwq *wq);
/* Whether an initiator request with these NDK flags must be signaled. */
bool ndk_vwq_signal(struct ndk_vwq *wq, ULONG flags);
uint64_t ndk_vwq_wr_id(const struct ndk_vwq *wq, const struct ndk_vslot *s);

/*
 * The NDK results of n work completions, into out; returns how many
 * there are. None comes for a SILENT_SUCCESS request that succeeded, or
 * for a completion of a QP that no longer exists. sol[i] (if sol) says
 * whether out[i] satisfies an NDK_CQ_NOTIFY_SOLICITED arm as far as
 * verbs tells (docs/verbs.md, Completion queues).
 */
unsigned int ndk_vwc_results(struct ndk_vqpmap *m, const struct ibv_wc *wc,
			     unsigned int n, NDK_RESULT_EX *out, bool *sol);

#endif /* NDK_VERBS_WR_H */
