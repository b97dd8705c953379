/* SPDX-License-Identifier: MIT */
/*
 * Completion queue. Producers (QPs, on any thread) push NDK_RESULT_EX
 * entries; the consumer drains them with NdkGetCqResults(Ex) and arms
 * notifications with NdkArmCq (NDKPI Completion Handling Requirements).
 *
 * Notifications run on the adapter's engine thread, one at a time per CQ,
 * never inline from NdkArmCq or sw_cq_push, and never once the CQ's close
 * has started. Entries pushed while the close pends (QPs flushing) are
 * still queued but notify nobody.
 */
#ifndef SW_CQ_H
#define SW_CQ_H

#include <stdbool.h>
#include "core/list.h"
#include "front/object.h"

struct sw_cq;

/*
 * Consumer-driven progress. A connection whose completions land on this
 * CQ registers a poller; NdkGetCqResults(Ex) on an empty CQ runs the
 * pollers on the consumer's thread, so a consumer that busy-polls moves
 * its own data without waiting for the engine thread to be scheduled (on
 * a machine with few cores, the engine would compete with the poller).
 * poll() must not block and must not take this CQ's lock; owner is held
 * while it runs.
 */
struct sw_cq_poller {
	struct list_head node; /* in cq->pollers, under cq->lock */
	void (*poll)(struct sw_cq_poller *p);
	/* NdkArmCq: the consumer stops polling and will sleep; whatever
	 * poll() took over goes back to the engine, and bytes its owner
	 * held back are written. May be NULL. */
	void (*armed)(struct sw_cq_poller *p);
	struct ndk_obj *owner;
	bool added;
	bool claimed; /* under the CQ's lock */
};

/* Any thread. A poller is added at most once and removed before its
 * owner goes. */
void sw_cq_add_poller(struct sw_cq *cq, struct sw_cq_poller *p);
void sw_cq_del_poller(struct sw_cq *cq, struct sw_cq_poller *p);
/* The owner took over (or gave back) work that armed() must return. */
void sw_cq_poller_claim(struct sw_cq *cq, struct sw_cq_poller *p, bool claimed);

/* The private CQ behind a consumer-visible one; NULL for NULL. */
struct sw_cq *to_sw_cq(NDK_CQ *cq);

/*
 * Queues one completion. solicited marks a receive completion of a Send with
 * SEND_AND_SOLICIT_EVENT (it satisfies an NDK_CQ_NOTIFY_SOLICITED arm; an error
 * status always does). Returns 0, or -EOVERFLOW when the CQ was full: the CQ is
 * then in error, the entry is dropped and the consumer is notified with
 * STATUS_BUFFER_OVERFLOW (NDK_FN_CQ_NOTIFICATION_CALLBACK). A CQ in error
 * accepts nothing more (-EOVERFLOW). Any thread; never calls back.
 */
int sw_cq_push(struct sw_cq *cq, const NDK_RESULT_EX *res, bool solicited);

/*
 * True once the CQ overran (it is dead: NDK_FN_CQ_NOTIFICATION_CALLBACK). For
 * the adapter statistics (CQError) and QPs that want to stop early.
 */
bool sw_cq_in_error(struct sw_cq *cq);

#endif /* SW_CQ_H */
