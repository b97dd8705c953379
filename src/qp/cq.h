/* SPDX-License-Identifier: MIT */
/*
 * Completion queue. Producers (QPs, on any thread) push NDK_RESULT_EX
 * entries; the consumer drains them with NdkGetCqResults(Ex) and arms
 * notifications with NdkArmCq (reference/ndkpi.md section 9.6).
 */
#ifndef NDK_QP_CQ_H
#define NDK_QP_CQ_H

#include <stdbool.h>
#include "core/object.h"

struct ndk_cq;

struct ndk_cq *to_ndk_cq(NDK_CQ *cq);

/*
 * Queues one completion. solicited marks a receive completion of a Send
 * with SEND_AND_SOLICIT_EVENT (it satisfies an NDK_CQ_NOTIFY_SOLICITED
 * arm; an error status always does). Returns 0, or -EOVERFLOW when the CQ
 * was full: the CQ is then in error, the entry is dropped and the consumer
 * is notified with STATUS_BUFFER_OVERFLOW (ndkpi.md section 5).
 */
int ndk_cq_push(struct ndk_cq *cq, const NDK_RESULT_EX *res, bool solicited);

#endif /* NDK_QP_CQ_H */
