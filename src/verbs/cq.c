/* SPDX-License-Identifier: MIT */
/*
 * Completion queue over an ibv_cq (docs/verbs.md, Completion queues;
 * docs/ndk.md, Completion queues).
 *
 * The consumer polls the device's CQ from NdkGetCqResults(Ex): work
 * completions become NDK results through their slots (verbs/wr.h), which
 * release them in posting order per queue into the CQ's ready ring, and
 * the consumer gets them from there.
 * Notifications come from the adapter's completion channel, which the
 * engine watches, so they run on the engine thread like every other
 * callback.
 *
 * Arms. verbs arms for the next completion only, while an NDK arm is
 * satisfied at once by a matching completion that arrived since the last
 * notification and is still queued. So NdkArmCq asks the device for the
 * next completion first and then polls what the device holds into the
 * ready ring: a result there that is newer than the last notification
 * satisfies the arm at once (a notification posted to the engine);
 * anything later raises the device's event. Two
 * arms merge as NDK says (ANY over SOLICITED over ERRORS): cq->arm is the
 * NDK arm, cq->ibv_arm what the device was asked for since its last
 * event, and an arm is never downgraded. An event that finds no NDK arm
 * outstanding (it was satisfied by the staging) runs no callback.
 *
 * Watch. A failed work completion ends its QP's connection (verbs/qp.c),
 * but verbs shows it only to whoever polls the CQ: IB and RoCE have no
 * Terminate, so a consumer that waits for the disconnect event before
 * polling would wait forever. So a timer polls the device into the
 * ready ring when the consumer has not polled since the last tick
 * (failures end their connections there), every NDK_VERBS_CQ_WATCH_MS,
 * twice as long after each tick that found nothing, up to a hundred
 * times that. The watch never arms the device (an arm for any completion
 * would blur a SOLICITED arm); a result it polls satisfies an arm
 * outstanding like any other, except that a receive it polls while the
 * device is armed for solicited completions does not count as solicited:
 * if it was, the device's event says so.
 *
 * Lock order (core/lock.h): cq->lock, then the engine's lock (posting
 * the notification). The adapter lock (begin_event, release) is never
 * taken under cq->lock.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include "core/log.h"
#include "front/cq.h"
#include "front/provider.h"
#include "verbs/cq.h"
#include "verbs/wr.h"

#define VCQ_POLL 16

/* Ordered so that merging two arms is MAX (docs/ndk.md, Completion
 * queues). */
enum vcq_arm {
	VCQ_ARM_NONE,
	VCQ_ARM_ERRORS,
	VCQ_ARM_SOLICITED,
	VCQ_ARM_ANY,
};

/* A result released to the consumer, in the order it gets them. */
struct vcq_ready {
	NDK_RESULT_EX r;
	bool solicited;
	uint64_t seq;
};

struct ndk_vcq {
	/* First: the front end's part (front/cq.h). */
	struct ndk_cq base;
	struct ibv_cq *cq;
	uint32_t depth;
	/* siw never marks a receive completion solicited, so its CQs are
	 * armed for the next completion instead (docs/verbs.md). */
	bool solicited_as_any;
	NDK_FN_CQ_NOTIFICATION_CALLBACK notify;
	PVOID notify_ctx;

	struct ndk_lock lock; /* everything below */
	enum vcq_arm arm; /* the NDK arm outstanding */
	enum vcq_arm ibv_arm; /* asked of the device since its last event */
	/* Released results not yet taken: as many as the CQ holds, grown if
	 * a queue releases more at once. */
	struct vcq_ready *ready;
	uint32_t ready_cap, ready_head, ready_count;
	uint64_t readied; /* sequence number of the newest ready result */
	uint64_t notified; /* readied at the last notification */
	bool closing;
	/* Overrun (docs/verbs.md, Completion queues): the CQ is dead; the
	 * next arm, or the one outstanding, hears STATUS_BUFFER_OVERFLOW
	 * once. */
	bool error, error_reported, owed_error;
	unsigned int owed; /* notifications posted to the engine */
	struct ndk_work notify_work;
	/* The watch's next poll (a reference on the CQ while set). */
	struct ndk_timer watch;
	bool watch_set;
	bool polled; /* by the consumer since the last tick */
	bool watching; /* the watch polls: receives' solicited unknown */
	unsigned int watch_ms; /* 0: no watch */
	unsigned int watch_period;
};

struct ndk_vcq *to_vcq(NDK_CQ *cq)
{
	return cq ? container_of(cq, struct ndk_vcq, base.obj.pub.cq) : NULL;
}

struct ibv_cq *ndk_vcq_ibv(struct ndk_vcq *cq)
{
	return cq->cq;
}

struct ndk_obj *ndk_vcq_obj(struct ndk_vcq *cq)
{
	return &cq->base.obj;
}

/* Runs the consumer's notification (engine thread, no lock held). */
static void vcq_run_notify(struct ndk_vcq *cq, NTSTATUS status)
{
	/* No event callback once the close started (NDKPI Object Lifetime
	 * Requirements). */
	if (!ndk_obj_begin_event(&cq->base.obj))
		return;
	cq->notify(cq->notify_ctx, status);
	ndk_obj_release(&cq->base.obj);
}

/* Lock held: the arm is satisfied; true if the consumer is to hear. */
static bool vcq_fire_locked(struct ndk_vcq *cq)
{
	NDK_ASSERT_LOCKED(&cq->lock);
	if (cq->closing || cq->arm == VCQ_ARM_NONE)
		return false;
	cq->arm = VCQ_ARM_NONE;
	cq->notified = cq->readied;
	return true;
}

/* A notification the arm owes at once, on the engine thread. */
static void vcq_notify_work(struct ndk_work *w)
{
	struct ndk_vcq *cq = container_of(w, struct ndk_vcq, notify_work);
	NTSTATUS status = STATUS_SUCCESS;
	bool run;

	ndk_lock(&cq->lock);
	run = (cq->owed || cq->owed_error) && !cq->closing;
	if (cq->owed_error)
		status = STATUS_BUFFER_OVERFLOW;
	cq->owed = 0;
	cq->owed_error = false;
	ndk_unlock(&cq->lock);
	if (run)
		vcq_run_notify(cq, status);
	ndk_obj_put(&cq->base.obj); /* the posting reference */
}

static bool vcq_poll_locked(struct ndk_vcq *cq);
static bool vcq_ready_match_locked(struct ndk_vcq *cq);

/* Lock held: asks the device for an event on the next completion that
 * satisfies arm, unless it was asked already. */
static void vcq_ibv_arm_locked(struct ndk_vcq *cq, enum vcq_arm arm)
{
	int ret;

	NDK_ASSERT_LOCKED(&cq->lock);
	if (arm < VCQ_ARM_SOLICITED || cq->ibv_arm >= arm)
		return;
	ret = ibv_req_notify_cq(cq->cq, arm == VCQ_ARM_SOLICITED &&
						!cq->solicited_as_any);
	if (ret)
		ndk_warn("verbs: cq %p: ibv_req_notify_cq failed (%d)",
			 (void *)cq, ret);
	else
		cq->ibv_arm = arm;
}

/* Lock held: everything the device holds into the ready ring. */
static void vcq_drain_locked(struct ndk_vcq *cq)
{
	unsigned int n;

	NDK_ASSERT_LOCKED(&cq->lock);
	for (n = 0; n < 64 && vcq_poll_locked(cq); n++)
		;
}

/* Lock held: the watch's next poll, one period from now. */
static void vcq_watch_later_locked(struct ndk_vcq *cq)
{
	NDK_ASSERT_LOCKED(&cq->lock);
	if (!cq->watch_ms || cq->watch_set || cq->closing)
		return;
	ndk_obj_get(&cq->base.obj);
	if (ndk_timer_start(cq->base.obj.domain->engine, &cq->watch,
			    cq->watch_period))
		ndk_obj_put(
			&cq->base.obj); /* not the last: the caller has one */
	else
		cq->watch_set = true;
}

/* The device's event for this CQ (engine thread). */
static void vcq_event(struct ndk_vcq *cq)
{
	enum vcq_arm was;
	bool run = false;

	ndk_lock(&cq->lock);
	was = cq->ibv_arm;
	cq->ibv_arm = VCQ_ARM_NONE;
	if (was == VCQ_ARM_ANY && cq->arm == VCQ_ARM_SOLICITED) {
		/* siw: asked for any completion; a receive or a failure
		 * counts as solicited, a Send's completion does not. */
		vcq_drain_locked(cq);
		if (vcq_ready_match_locked(cq))
			run = vcq_fire_locked(cq);
		if (!run) {
			vcq_ibv_arm_locked(cq, cq->arm);
			vcq_drain_locked(cq);
			if (vcq_ready_match_locked(cq))
				run = vcq_fire_locked(cq);
		}
	} else {
		/* The device tells exactly what the arm asked for. */
		run = vcq_fire_locked(cq);
	}
	ndk_unlock(&cq->lock);
	if (run)
		vcq_run_notify(cq, STATUS_SUCCESS);
}

static void vcq_kick(struct ndk_vcq *cq);

/* The watch's timer: polls the device if the consumer did not. */
static void vcq_watch_fn(struct ndk_timer *t)
{
	struct ndk_vcq *cq = container_of(t, struct ndk_vcq, watch);
	bool kick = false;
	uint64_t before;

	ndk_lock(&cq->lock);
	cq->watch_set = false;
	if (!cq->closing) {
		before = cq->readied;
		if (!cq->polled) {
			cq->watching = cq->ibv_arm == VCQ_ARM_SOLICITED &&
				       !cq->solicited_as_any;
			vcq_drain_locked(cq);
			cq->watching = false;
			if (vcq_ready_match_locked(cq) && vcq_fire_locked(cq)) {
				cq->owed++;
				kick = true;
			}
		}
		if (cq->polled || cq->readied != before)
			cq->watch_period = cq->watch_ms;
		else
			cq->watch_period =
				MIN(cq->watch_period * 2, cq->watch_ms * 100);
		cq->polled = false;
		vcq_watch_later_locked(cq);
	}
	ndk_unlock(&cq->lock);
	if (kick)
		vcq_kick(cq);
	ndk_obj_put(&cq->base.obj); /* the timer's reference */
}

void ndk_verbs_comp_event(struct ndk_io *io, uint32_t events)
{
	struct ndk_vadapter *v = container_of(io, struct ndk_vadapter, comp_io);
	unsigned int n;

	for (n = 0; n < 64; n++) {
		struct ibv_cq *ibcq;
		void *ctx;
		struct ndk_vcq *cq;

		if (ibv_get_cq_event(v->comp, &ibcq, &ctx))
			break; /* EAGAIN: the channel is empty */
		cq = ctx;
		/* A close that destroys the CQ waits for this ack, so the
		 * CQ is there until then (docs/verbs.md, Completion
		 * queues). */
		ndk_obj_get(&cq->base.obj);
		ibv_ack_cq_events(ibcq, 1);
		vcq_event(cq);
		ndk_obj_put(&cq->base.obj);
	}
}

/*
 * Lock held: the CQ overran (more results than its depth, or the
 * device's CQ error). Counted once; an arm outstanding hears it now, a
 * later one at once.
 */
static void vcq_error_locked(struct ndk_vcq *cq)
{
	NDK_ASSERT_LOCKED(&cq->lock);
	if (!cq->error) {
		cq->error = true;
		ndk_warn("verbs: cq %p overrun (depth %u)", (void *)cq,
			 cq->depth);
		ndk_adapter_count(cq->base.obj.adapter, NDK_CTR(CQError), 1);
	}
	if (cq->closing || cq->error_reported || cq->arm == VCQ_ARM_NONE)
		return;
	cq->error_reported = true;
	cq->owed_error = true;
	cq->arm = VCQ_ARM_NONE;
	vcq_kick(cq);
}

void ndk_vcq_drain(struct ndk_vcq *cq)
{
	ndk_lock(&cq->lock);
	if (!cq->closing && cq->cq)
		vcq_drain_locked(cq);
	ndk_unlock(&cq->lock);
}

void ndk_vcq_async_error(struct ndk_vcq *cq)
{
	ndk_lock(&cq->lock);
	/* What the device held before it overran stays the consumer's. */
	if (!cq->error && !cq->closing && cq->cq)
		vcq_drain_locked(cq);
	vcq_error_locked(cq);
	ndk_unlock(&cq->lock);
}

/* ndk_vwc_results' output: one more ready result (lock held). */
static void vcq_ready_push(void *arg, const NDK_RESULT_EX *r, bool solicited)
{
	struct ndk_vcq *cq = arg;
	struct vcq_ready *e;

	NDK_ASSERT_LOCKED(&cq->lock);
	/* The consumer let more results wait than the CQ holds: it is
	 * dead, what it held stays, nothing more comes (docs/ndk.md). */
	if (cq->error)
		return;
	if (cq->ready_count >= cq->depth) {
		vcq_error_locked(cq);
		return;
	}
	/* Polled by the watch while the device watches for solicited
	 * completions: the device's event tells if it was one. */
	if (cq->watching && r->Status == STATUS_SUCCESS)
		solicited = false;
	if (cq->ready_count == cq->ready_cap) {
		uint32_t cap = cq->ready_cap * 2, i;
		struct vcq_ready *n = calloc(cap, sizeof(*n));

		if (!n) {
			ndk_err("verbs: cq %p: no memory for a result: lost",
				(void *)cq);
			return;
		}
		for (i = 0; i < cq->ready_count; i++)
			n[i] = cq->ready[(cq->ready_head + i) % cq->ready_cap];
		free(cq->ready);
		cq->ready = n;
		cq->ready_cap = cap;
		cq->ready_head = 0;
	}
	e = &cq->ready[(cq->ready_head + cq->ready_count) % cq->ready_cap];
	e->r = *r;
	e->solicited = solicited;
	e->seq = ++cq->readied;
	cq->ready_count++;
}

/* Lock held: one poll of the device's CQ into the ready ring; true if
 * the device may hold more. */
static bool vcq_poll_locked(struct ndk_vcq *cq)
{
	struct ibv_wc wc[VCQ_POLL];
	int n;

	NDK_ASSERT_LOCKED(&cq->lock);
	n = ibv_poll_cq(cq->cq, VCQ_POLL, wc);
	if (n <= 0) {
		if (n < 0)
			ndk_warn("verbs: cq %p: ibv_poll_cq failed (%d)",
				 (void *)cq, n);
		return false;
	}
	ndk_vwc_results(to_vad(cq->base.obj.adapter)->qps, wc, (unsigned int)n,
			vcq_ready_push, cq);
	return n == VCQ_POLL;
}

/* Lock held: up to max results, polling the device as needed. */
static ULONG vcq_get_locked(struct ndk_vcq *cq, NDK_RESULT_EX *out, ULONG max)
{
	bool more = true;
	ULONG i = 0;

	NDK_ASSERT_LOCKED(&cq->lock);
	for (;;) {
		while (i < max && cq->ready_count) {
			out[i++] = cq->ready[cq->ready_head].r;
			cq->ready_head = (cq->ready_head + 1) % cq->ready_cap;
			cq->ready_count--;
		}
		/* An overrun CQ produces nothing more (docs/ndk.md). */
		if (i == max || !more || cq->error)
			return i;
		more = vcq_poll_locked(cq);
	}
}

/* NdkGetCqResults(Ex): up to max results, oldest first (front/cq.c). */
ULONG ndk_vcq_poll(struct ndk_cq *base, NDK_RESULT_EX *out, ULONG max)
{
	struct ndk_vcq *cq = container_of(base, struct ndk_vcq, base);
	ULONG n;

	ndk_lock(&cq->lock);
	cq->polled = true;
	n = vcq_get_locked(cq, out, max);
	ndk_unlock(&cq->lock);
	return n;
}

/* Lock held: does a ready result newer than the last notification
 * satisfy the arm? */
static bool vcq_ready_match_locked(struct ndk_vcq *cq)
{
	uint32_t i;

	NDK_ASSERT_LOCKED(&cq->lock);
	for (i = 0; i < cq->ready_count; i++) {
		const struct vcq_ready *e =
			&cq->ready[(cq->ready_head + i) % cq->ready_cap];

		if (e->seq <= cq->notified)
			continue;
		if (cq->arm == VCQ_ARM_ANY ||
		    (cq->arm == VCQ_ARM_SOLICITED && e->solicited))
			return true;
	}
	return false;
}

/* Posts a notification the arm owes (no lock held): asynchronously, as
 * the consumer may hold locks around NdkArmCq or NdkFlush. */
static void vcq_kick(struct ndk_vcq *cq)
{
	ndk_obj_get(&cq->base.obj);
	if (!ndk_engine_post(cq->base.obj.domain->engine, &cq->notify_work))
		ndk_obj_put(&cq->base.obj); /* already queued */
}

/* NdkArmCq, with a type front/cq.c checked. */
void ndk_vcq_arm(struct ndk_cq *base, ULONG Type)
{
	struct ndk_vcq *cq = container_of(base, struct ndk_vcq, base);
	enum vcq_arm arm;
	bool kick = false;

	switch (Type) {
	case NDK_CQ_NOTIFY_ERRORS:
		arm = VCQ_ARM_ERRORS;
		break;
	case NDK_CQ_NOTIFY_ANY:
		arm = VCQ_ARM_ANY;
		break;
	case NDK_CQ_NOTIFY_SOLICITED:
		arm = VCQ_ARM_SOLICITED;
		break;
	default:
		return;
	}
	ndk_lock(&cq->lock);
	if (cq->closing) {
		ndk_unlock(&cq->lock);
		return;
	}
	if (arm > cq->arm)
		cq->arm = arm;
	if (cq->error) {
		/* Any arm, ERRORS included, hears the overrun once. */
		vcq_error_locked(cq);
		ndk_unlock(&cq->lock);
		return;
	}
	/* Errors come as the device's asynchronous CQ event, not as
	 * completions: nothing to ask for (docs/verbs.md). */
	vcq_ibv_arm_locked(cq, cq->arm);
	if (cq->arm >= VCQ_ARM_SOLICITED) {
		/* What the device holds from before the arm. */
		vcq_drain_locked(cq);
		if (vcq_ready_match_locked(cq) && vcq_fire_locked(cq)) {
			cq->owed++;
			kick = true;
		}
	}
	ndk_unlock(&cq->lock);
	if (kick)
		vcq_kick(cq);
}

void ndk_vcq_release_held(struct ndk_vcq *cq, struct ndk_vwq *wq)
{
	bool kick = false;

	ndk_lock(&cq->lock);
	ndk_vwq_release_held(wq, vcq_ready_push, cq);
	if (vcq_ready_match_locked(cq) && vcq_fire_locked(cq)) {
		cq->owed++;
		kick = true;
	}
	ndk_unlock(&cq->lock);
	if (kick)
		vcq_kick(cq);
}

void ndk_vcq_cancel(struct ndk_vcq *cq, struct ndk_vwq *wq)
{
	bool kick = false;

	ndk_lock(&cq->lock);
	if (cq->closing || !cq->cq) {
		ndk_unlock(&cq->lock);
		return;
	}
	/* What the device completed comes first, with its own status. */
	vcq_drain_locked(cq);
	ndk_vwq_cancel(wq);
	ndk_vwq_release_held(wq, vcq_ready_push, cq);
	if (vcq_ready_match_locked(cq) && vcq_fire_locked(cq)) {
		cq->owed++;
		kick = true;
	}
	ndk_unlock(&cq->lock);
	if (kick)
		vcq_kick(cq);
}

/* NdkResizeCq, on a device that announces it (rxe; siw has no resize):
 * a depth front/cq.c checked. */
NTSTATUS ndk_vcq_resize(struct ndk_cq *base, ULONG CqDepth)
{
	struct ndk_vcq *cq = container_of(base, struct ndk_vcq, base);
	int ret;

	ndk_lock(&cq->lock);
	ret = ibv_resize_cq(cq->cq, (int)CqDepth);
	if (!ret)
		cq->depth = CqDepth;
	ndk_unlock(&cq->lock);
	if (ret == EOPNOTSUPP || ret == ENOSYS)
		return STATUS_NOT_SUPPORTED;
	return ret ? ndk_verbs_errno_status(ret, NDK_VERBS_CREATE)
		   : STATUS_SUCCESS;
}

static void vcq_close_begin(struct ndk_obj *obj)
{
	struct ndk_vcq *cq = container_of(obj, struct ndk_vcq, base.obj);

	bool put = false;

	ndk_lock(&cq->lock);
	cq->closing = true;
	cq->arm = VCQ_ARM_NONE;
	cq->owed = 0;
	if (cq->watch_set &&
	    ndk_timer_cancel(cq->base.obj.domain->engine, &cq->watch)) {
		cq->watch_set = false;
		put = true;
	}
	ndk_unlock(&cq->lock);
	if (put)
		ndk_obj_put(
			&cq->base.obj); /* not the last: the close holds one */
}

/* Its QPs are closed (they are its successors): the CQ can go. */
static void vcq_close_end(struct ndk_obj *obj)
{
	struct ndk_vcq *cq = container_of(obj, struct ndk_vcq, base.obj);
	int ret;

	ret = cq->cq ? ibv_destroy_cq(cq->cq) : 0;
	if (ret)
		ndk_warn("verbs: cq %p: ibv_destroy_cq failed (%d)", (void *)cq,
			 ret);
	cq->cq = NULL;
}

static void vcq_destroy(struct ndk_obj *obj)
{
	struct ndk_vcq *cq = container_of(obj, struct ndk_vcq, base.obj);

	/* Never set up, or its close never ran (a failed create). */
	if (cq->cq)
		ibv_destroy_cq(cq->cq);
	ndk_lock_destroy(&cq->lock);
	free(cq->ready);
	free(cq);
}

static const struct ndk_obj_ops vcq_ops = {
	.type = NdkObjectTypeCq,
	.name = "cq",
	.close_begin = vcq_close_begin,
	.close_end = vcq_close_end,
	.destroy = vcq_destroy,
};

NTSTATUS ndk_verbs_create_cq(struct ndk_adapter *ad,
			     const struct ndk_cq_attr *attr, NDK_CQ **ppNdkCq)
{
	ULONG CqDepth = attr->depth;
	struct ndk_obj *antes[1];
	struct ndk_vcq *cq;
	NTSTATUS status;

	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return STATUS_INSUFFICIENT_RESOURCES;
	ndk_lock_init(&cq->lock, NDK_LOCK_CQ);
	ndk_work_init(&cq->notify_work, vcq_notify_work);
	cq->ready_cap = MAX(CqDepth, 16u);
	cq->ready = calloc(cq->ready_cap, sizeof(*cq->ready));
	if (!cq->ready) {
		vcq_destroy(&cq->base.obj);
		return STATUS_INSUFFICIENT_RESOURCES;
	}
	cq->depth = CqDepth;
	cq->solicited_as_any = to_vad(ad)->siw;
	cq->notify = attr->notify;
	cq->notify_ctx = attr->notify_ctx;
	ndk_cq_init(&cq->base);
	cq->watch_ms = (unsigned int)ndk_config_u64("NDK_VERBS_CQ_WATCH_MS", 10,
						    0, 60000);
	ndk_timer_init(&cq->watch, vcq_watch_fn);
	/* Affinity is a hint: notifications run on the engine thread. */
	cq->cq = ibv_create_cq(to_vad(ad)->ctx, (int)CqDepth, cq,
			       to_vad(ad)->comp, 0);
	if (!cq->cq) {
		ndk_info("verbs: ibv_create_cq(%u): %s", (unsigned int)CqDepth,
			 strerror(errno));
		status = ndk_verbs_errno_status(errno, NDK_VERBS_CREATE);
		vcq_destroy(&cq->base.obj);
		return status;
	}
	antes[0] = &ad->obj;
	status = ndk_obj_setup(&cq->base.obj, ad, &vcq_ops, &ndk_cq_dispatch,
			       antes, 1);
	if (status)
		return status; /* vcq_destroy freed it */
	if (cq->watch_ms) {
		ndk_lock(&cq->lock);
		cq->watch_period = cq->watch_ms;
		vcq_watch_later_locked(cq);
		ndk_unlock(&cq->lock);
	}
	*ppNdkCq = &cq->base.obj.pub.cq;
	return STATUS_SUCCESS;
}
