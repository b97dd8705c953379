/* SPDX-License-Identifier: MIT */
/*
 * The verbs provider's completion queue: an ibv_cq on the adapter's
 * completion channel (docs/verbs.md, Completion queues).
 */
#ifndef NDK_VERBS_CQ_H
#define NDK_VERBS_CQ_H

#include "front/object.h"
#include "verbs/verbs.h"

struct ndk_vcq;

/* The private CQ behind a consumer-visible one; NULL for NULL. */
struct ndk_vcq *to_vcq(NDK_CQ *cq);
struct ibv_cq *ndk_vcq_ibv(struct ndk_vcq *cq);
struct ndk_obj *ndk_vcq_obj(struct ndk_vcq *cq);

struct ndk_cq;
struct ndk_cq_attr;
/* The provider's CQ ops (front/provider.h, front/cq.c). */
ULONG ndk_vcq_poll(struct ndk_cq *cq, NDK_RESULT_EX *out, ULONG max);
void ndk_vcq_arm(struct ndk_cq *cq, ULONG type);
NTSTATUS ndk_vcq_resize(struct ndk_cq *cq, ULONG depth);
/* The provider's create (front/provider.h): front/cq.c checked attr. */
NTSTATUS ndk_verbs_create_cq(struct ndk_adapter *ad,
			     const struct ndk_cq_attr *attr, NDK_CQ **ppNdkCq);

/*
 * The consumer flushed a QP (verbs/qp.c): results of wq, one of the CQ's
 * queues, that waited for it become ready, and a matching arm fires.
 */
struct ndk_vwq;
void ndk_vcq_release_held(struct ndk_vcq *cq, struct ndk_vwq *wq);

/* The consumer flushed and the device left requests of wq outstanding:
 * they complete STATUS_CANCELLED (ndk_vwq_cancel). */
void ndk_vcq_cancel(struct ndk_vcq *cq, struct ndk_vwq *wq);

/* What the device holds into the ready ring (a QP closing: its flushed
 * requests complete before its key leaves the map). */
void ndk_vcq_drain(struct ndk_vcq *cq);

/* The device's IBV_EVENT_CQ_ERR for this CQ (the async event's CQ
 * context): the CQ overran. */
void ndk_vcq_async_error(struct ndk_vcq *cq);

/* The engine's handler of the adapter's completion channel. */
void ndk_verbs_comp_event(struct ndk_io *io, uint32_t events);

#endif /* NDK_VERBS_CQ_H */
