/* SPDX-License-Identifier: MIT */
/*
 * Shared receive queue over an ibv_srq: NdkCreateSrq, NdkSrqReceive,
 * NdkModifySrq and the threshold notification (docs/verbs.md, Shared
 * receive queues; docs/ndk.md, Shared receive queues).
 *
 * The threshold is the device's SRQ limit: ibv_modify_srq(IBV_SRQ_LIMIT)
 * arms IBV_EVENT_SRQ_LIMIT_REACHED once, as NDK arms its notification
 * once. An arm that finds fewer receives outstanding than the threshold
 * notifies at once instead (verbs would wait for the next receive to be
 * taken). The notification runs on the engine thread.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "core/log.h"
#include "front/provider.h"
#include "verbs/lam.h"
#include "verbs/keys.h"
#include "verbs/srq.h"

/* The consumer's notification (engine thread, no lock held). */
static void vsrq_notify_work(struct ndk_work *w)
{
	struct ndk_vsrq *srq = container_of(w, struct ndk_vsrq, notify_work);

	/* None once the close started (NDKPI Object Lifetime
	 * Requirements); the consumer may close the SRQ inside. */
	if (ndk_obj_begin_event(&srq->obj)) {
		srq->notify(srq->notify_ctx, STATUS_SUCCESS);
		ndk_obj_release(&srq->obj);
	}
	ndk_obj_put(&srq->obj); /* the posting reference */
}

/* The armed notification is due: posted to the engine, once. */
static void vsrq_fire(struct ndk_vsrq *srq)
{
	if (!atomic_exchange(&srq->armed, false) || !srq->notify)
		return;
	ndk_obj_get(&srq->obj);
	if (!ndk_engine_post(srq->obj.domain->engine, &srq->notify_work))
		ndk_obj_put(&srq->obj); /* queued already: it serves both */
}

void ndk_vsrq_async(void *owner, void *arg)
{
	struct ndk_vsrq *srq = owner;

	if (*(enum ibv_event_type *)arg == IBV_EVENT_SRQ_LIMIT_REACHED)
		vsrq_fire(srq);
}

/*
 * Arms the threshold: at the device, or (now) at once if fewer receives
 * are outstanding already. At create only a receive taken can fire it,
 * as for the software provider. 0 or a positive errno.
 */
static int vsrq_arm(struct ndk_vsrq *srq, uint32_t threshold, bool now)
{
	struct ibv_srq_attr a = { .srq_limit = threshold };
	int ret;

	srq->threshold = threshold;
	atomic_store(&srq->armed, true);
	if (now && ndk_vsrqslots_busy(&srq->slots) < threshold) {
		vsrq_fire(srq);
		return 0;
	}
	ret = ibv_modify_srq(srq->srq, &a, IBV_SRQ_LIMIT);
	if (ret)
		atomic_store(&srq->armed, false);
	return ret;
}

static NTSTATUS vsrq_receive(NDK_SRQ *pNdkSrq, PVOID RequestContext,
			     CONST NDK_SGE *pSgl, ULONG nSge)
{
	struct ndk_vsrq *srq = to_vsrq(pNdkSrq);
	struct ibv_sge sge[NDK_VERBS_MAX_SGE];
	struct ibv_recv_wr wr, *bad;
	uint64_t len;
	int index, ret;

	if (!ndk_verbs_sgl(sge, pSgl, nSge, srq->max_sge, &len))
		return STATUS_INVALID_PARAMETER;
	if (ndk_vlam_wanted(sge, nSge)) {
		/* Logical addresses (verbs/lam.h), on the SRQ's PD. */
		NTSTATUS status = ndk_vlam_rewrite(srq->vad->lams, srq->srq->pd,
						   sge, nSge);

		if (status)
			return status;
	}
	index = ndk_vsrqslots_get(
		&srq->slots, RequestContext,
		!ndk_vkeys_check(srq->srq->pd, sge, (int)nSge, true));
	if (index < 0)
		return STATUS_INSUFFICIENT_RESOURCES;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = ndk_vsrqslots_wr_id(&srq->slots, (uint32_t)index);
	wr.sg_list = sge;
	wr.num_sge = (int)nSge;
	if (!nSge && srq->vad->siw) {
		/* As for a QP's receive (verbs/qp.c). */
		memset(&sge[0], 0, sizeof(sge[0]));
		wr.num_sge = 1;
	}
	ret = ibv_post_srq_recv(srq->srq, &wr, &bad);
	if (ret) {
		ndk_vsrqslots_put(&srq->slots, (uint32_t)index);
		return ndk_verbs_errno_status(ret, NDK_VERBS_POST);
	}
	return STATUS_SUCCESS;
}

static NTSTATUS vsrq_modify(NDK_SRQ *pNdkSrq, ULONG SrqDepth,
			    ULONG NotifyThreshold,
			    NDK_FN_REQUEST_COMPLETION RequestCompletion,
			    PVOID RequestContext)
{
	struct ndk_vsrq *srq = to_vsrq(pNdkSrq);
	uint32_t depth = SrqDepth ? SrqDepth : srq->slots.depth;
	uint32_t threshold = NotifyThreshold ? NotifyThreshold : srq->threshold;
	int ret;

	/* The same rules as the software provider's (sw/srq.c). */
	if (SrqDepth > srq->obj.adapter->info.MaxSrqDepth ||
	    threshold > depth || depth < ndk_vsrqslots_busy(&srq->slots))
		return STATUS_INVALID_PARAMETER;
	if (depth > srq->dev_wr) {
		struct ibv_srq_attr a = { .max_wr = depth };

		/* siw cannot resize an SRQ (docs/verbs.md). */
		ret = ibv_modify_srq(srq->srq, &a, IBV_SRQ_MAX_WR);
		if (ret)
			return ndk_verbs_errno_status(ret, NDK_VERBS_CREATE);
		srq->dev_wr = depth;
	}
	ret = ndk_vsrqslots_resize(&srq->slots, depth);
	if (ret)
		return ret == -EINVAL ? STATUS_INVALID_PARAMETER
				      : STATUS_INSUFFICIENT_RESOURCES;
	/* Zero keeps the threshold and the arm state (NdkModifySrq). */
	if (NotifyThreshold) {
		ret = vsrq_arm(srq, NotifyThreshold, true);
		if (ret)
			return ndk_verbs_errno_status(ret, NDK_VERBS_CREATE);
	}
	return STATUS_SUCCESS;
}

static void vsrq_close_begin(struct ndk_obj *obj)
{
	struct ndk_vsrq *srq = container_of(obj, struct ndk_vsrq, obj);

	atomic_store(&srq->armed, false);
}

/*
 * Its QPs are closed (they are its successors). Its key leaves the map
 * first, so completions still in a CQ are dropped, then the device's SRQ
 * goes with the receives no QP took (docs/ndk.md, Shared receive
 * queues).
 */
static void vsrq_close_end(struct ndk_obj *obj)
{
	struct ndk_vsrq *srq = container_of(obj, struct ndk_vsrq, obj);
	int ret;

	if (srq->mapped)
		ndk_vqpmap_del(srq->vad->qps, srq->slots.key);
	srq->mapped = false;
	ret = srq->srq ? ibv_destroy_srq(srq->srq) : 0;
	if (ret)
		ndk_warn("verbs: srq %p: ibv_destroy_srq failed (%d)",
			 (void *)srq, ret);
	srq->srq = NULL;
}

static void vsrq_destroy(struct ndk_obj *obj)
{
	struct ndk_vsrq *srq = container_of(obj, struct ndk_vsrq, obj);

	if (srq->mapped)
		ndk_vqpmap_del(srq->vad->qps, srq->slots.key);
	if (srq->srq)
		ibv_destroy_srq(srq->srq);
	ndk_vsrqslots_fini(&srq->slots);
	free(srq);
}

static const struct ndk_obj_ops vsrq_ops = {
	.type = NdkObjectTypeSrq,
	.name = "srq",
	.close_begin = vsrq_close_begin,
	.close_end = vsrq_close_end,
	.destroy = vsrq_destroy,
};

static const NDK_SRQ_DISPATCH vsrq_dispatch = {
	.NdkCloseSrq = ndk_close_object,
	.NdkQueryExtension = ndk_query_extension,
	.NdkModifySrq = vsrq_modify,
	.NdkSrqReceive = vsrq_receive,
};

NTSTATUS ndk_verbs_create_srq(struct ndk_obj *pd_obj,
			      const struct ndk_srq_attr *attr,
			      NDK_SRQ **ppNdkSrq)
{
	struct ndk_vpd *pd = container_of(pd_obj, struct ndk_vpd, obj);
	struct ndk_adapter *ad = pd->obj.adapter;
	ULONG SrqDepth = attr->depth;
	struct ibv_srq_init_attr ia;
	struct ndk_obj *antes[1];
	struct ndk_vsrq *srq;
	NTSTATUS status;
	int ret;

	srq = calloc(1, sizeof(*srq));
	if (!srq)
		return STATUS_INSUFFICIENT_RESOURCES;
	srq->vad = to_vad(ad);
	srq->max_sge = attr->max_sge;
	srq->notify = attr->notify;
	srq->notify_ctx = attr->notify_ctx;
	atomic_init(&srq->armed, false);
	ndk_work_init(&srq->notify_work, vsrq_notify_work);
	if (ndk_vsrqslots_init(&srq->slots, SrqDepth)) {
		vsrq_destroy(&srq->obj);
		return STATUS_INSUFFICIENT_RESOURCES;
	}
	memset(&ia, 0, sizeof(ia));
	ia.srq_context = srq;
	ia.attr.max_wr = SrqDepth;
	ia.attr.max_sge = attr->max_sge;
	srq->srq = ibv_create_srq(pd->pd, &ia);
	if (!srq->srq) {
		ndk_info("verbs: ibv_create_srq(%u): %s",
			 (unsigned int)SrqDepth, strerror(errno));
		status = ndk_verbs_errno_status(errno, NDK_VERBS_CREATE);
		vsrq_destroy(&srq->obj);
		return status;
	}
	/* The device may hold more than asked (it rounds up). */
	srq->dev_wr = MAX(ia.attr.max_wr, (uint32_t)SrqDepth);
	ret = ndk_vqpmap_add_srq(srq->vad->qps, &srq->slots, srq->srq, srq);
	srq->mapped = !ret;
	if (!ret && attr->threshold)
		ret = vsrq_arm(srq, attr->threshold, false);
	if (ret) {
		status = ndk_verbs_errno_status(ret, NDK_VERBS_CREATE);
		vsrq_destroy(&srq->obj);
		return status;
	}
	antes[0] = &pd->obj;
	status = ndk_obj_setup(&srq->obj, ad, &vsrq_ops, &vsrq_dispatch, antes,
			       1);
	if (status)
		return status; /* vsrq_destroy freed it */
	*ppNdkSrq = &srq->obj.pub.srq;
	return STATUS_SUCCESS;
}
