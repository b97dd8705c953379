/* SPDX-License-Identifier: MIT */
/*
 * Completion queue (NDKPI Completion Handling Requirements; docs/ndk.md,
 * Completion queues).
 *
 * Entries live in a ring of NDK_RESULT_EX under cq->lock: producers run on
 * any thread, concurrently with the consumer, who serialises its own
 * GetCqResults(Ex)/ArmCq calls on one CQ.
 *
 * Arm tracking uses sequence numbers: every pushed entry gets the next
 * value of pushed, so the entries present are (pushed - count, pushed].
 * notified_seq is pushed at the last notification; last_sol_seq is the
 * newest entry that satisfies a SOLICITED arm. "A matching completion
 * arrived since the last notification and is still queued" is then O(1).
 *
 * Notifications: a satisfied arm adds one to owed (or sets owed_error)
 * and posts notify_work, which runs on the adapter's engine thread. That
 * single work item on the single engine thread serialises the callbacks of
 * one CQ; one requested while another runs is queued behind it. Each
 * callback runs between ndk_obj_begin_event and ndk_obj_release, so the
 * close pends while it runs and none starts after the close began.
 *
 * References: a queued notify_work and an armed moderation timer each
 * hold one object reference, so neither can outlive the memory.
 *
 * Lock order (core/lock.h): cq->lock, then the engine's lock (post,
 * timers). The adapter lock (begin_event, release, the last put) is never
 * taken under cq->lock, and no consumer callback runs under either.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "core/lock.h"
#include "front/adapter.h"
#include "core/log.h"
#include "front/cq.h"
#include "front/provider.h"
#include "sw/sw.h"
#include "sw/cq.h"

#define CQ_MAXULONG 0xffffffffu
#define NS_PER_MS   1000000ull

/* Arm levels, ordered so that merging two arms is MAX (docs/ndk.md,
 * Completion queues). */
enum cq_arm {
	CQ_ARM_NONE,
	CQ_ARM_ERRORS, /* CQ errors only */
	CQ_ARM_SOLICITED, /* solicited or error-status completions, errors */
	CQ_ARM_ANY, /* everything */
};

struct sw_cq {
	/* First: the front end's part (front/cq.h). */
	struct ndk_cq base;
	NDK_FN_CQ_NOTIFICATION_CALLBACK notify;
	PVOID notify_ctx;

	struct ndk_lock lock; /* everything below */
	NDK_RESULT_EX *ring;
	uint32_t depth; /* ring slots == CqDepth */
	uint32_t head; /* oldest entry */
	uint32_t count; /* entries queued */
	uint64_t pushed; /* sequence number of the newest entry */
	uint64_t notified_seq; /* pushed at the last notification */
	uint64_t last_sol_seq; /* newest entry matching SOLICITED */

	enum cq_arm arm;
	bool closing; /* close started: no more notifications */
	bool error; /* overran: dead, accepts nothing */
	bool error_reported; /* STATUS_BUFFER_OVERFLOW handed out */
	bool owed_error; /* STATUS_BUFFER_OVERFLOW notification to run */
	unsigned int owed; /* STATUS_SUCCESS notifications to run */
	struct ndk_work notify_work;

	/* Interrupt moderation (NDK_FN_CONTROL_CQ_INTERRUPT_MODERATION);
	 * mod_on false = off. */
	bool mod_on;
	ULONG mod_interval_us; /* CQ_MAXULONG: count only */
	ULONG mod_count; /* CQ_MAXULONG or > depth: interval only */
	bool mod_pending; /* an arm is satisfied but held back */
	uint64_t mod_since_ns; /* when it became satisfied */
	bool mod_timer_set; /* mod_timer armed or firing; holds a ref */
	struct ndk_timer mod_timer;

	struct list_head pollers; /* struct sw_cq_poller */
	unsigned int claimed; /* pollers that took over from the engine */

	/*
	 * The lock-free look of an empty poll: avail mirrors count (stored
	 * under the lock), solo is the only poller when there is exactly
	 * one (set under the lock), solo_busy counts polls running it. A
	 * busy-polling consumer with one QP on the CQ then polls without
	 * the lock and without a QP reference: sw_cq_del_poller waits for
	 * solo_busy to drain before the poller's owner may go.
	 */
	_Atomic uint32_t avail;
	struct sw_cq_poller *_Atomic solo;
	_Atomic uint32_t solo_busy;
};

struct sw_cq *to_sw_cq(NDK_CQ *cq)
{
	return cq ? container_of(cq, struct sw_cq, base.obj.pub.cq) : NULL;
}

static struct ndk_engine *cq_engine(struct sw_cq *cq)
{
	return &cq->base.obj.adapter->engine;
}

/* Posts notify_work with a reference for it to drop. Any thread. */
static void cq_kick(struct sw_cq *cq)
{
	ndk_obj_get(&cq->base.obj);
	if (!ndk_engine_post(cq_engine(cq), &cq->notify_work))
		ndk_obj_put(&cq->base.obj); /* already queued: it will run */
}

/* Lock held: does the current arm have a reason to fire now? */
static bool cq_arm_matched_locked(const struct sw_cq *cq)
{
	uint64_t removed = cq->pushed - cq->count;

	NDK_ASSERT_LOCKED(&cq->lock);

	switch (cq->arm) {
	case CQ_ARM_ANY:
		/* The newest entry is present whenever count > 0. */
		return cq->count && cq->pushed > cq->notified_seq;
	case CQ_ARM_SOLICITED:
		return cq->last_sol_seq > cq->notified_seq &&
		       cq->last_sol_seq > removed;
	default:
		return false; /* ERRORS: only CQ errors, handled apart */
	}
}

/*
 * Lock held, arm satisfied: true if moderation holds the notification back
 * (arming the interval timer if needed), false to notify now. The count
 * threshold is on entries queued; the interval runs from when the arm was
 * first satisfied. A timer that cannot be armed means notify now rather
 * than never.
 */
static bool cq_mod_hold_locked(struct sw_cq *cq, uint64_t now)
{
	bool count_on, ival_on;
	uint64_t ival_ns, delay_ns;

	NDK_ASSERT_LOCKED(&cq->lock);

	count_on = cq->mod_count != CQ_MAXULONG && cq->mod_count <= cq->depth;
	ival_on = cq->mod_interval_us != CQ_MAXULONG;
	/* A resize can leave count-only moderation unreachable: drop it. */
	if (!count_on && !ival_on)
		return false;
	if (count_on && cq->count >= cq->mod_count)
		return false;
	if (!ival_on)
		return true;
	/* Engine timers tick in ms; the interval may be rounded down
	 * (NDK_FN_CONTROL_CQ_INTERRUPT_MODERATION). */
	ival_ns = (uint64_t)(cq->mod_interval_us / 1000) * NS_PER_MS;
	if (now - cq->mod_since_ns >= ival_ns)
		return false;
	if (cq->mod_timer_set)
		return true; /* its function re-evaluates */
	delay_ns = cq->mod_since_ns + ival_ns - now;
	ndk_obj_get(&cq->base.obj);
	if (ndk_timer_start(cq_engine(cq), &cq->mod_timer,
			    (delay_ns + NS_PER_MS - 1) / NS_PER_MS)) {
		ndk_obj_put(
			&cq->base.obj); /* not the last: the caller holds one */
		return false;
	}
	cq->mod_timer_set = true;
	return true;
}

/*
 * Lock held: satisfies the arm if it should fire now (consuming it: arms
 * are one-shot). Returns true if notify_work must be posted (after the
 * lock is dropped, with cq_kick).
 */
static NDK_HOT bool cq_eval_locked(struct sw_cq *cq)
{
	uint64_t now;

	NDK_ASSERT_LOCKED(&cq->lock);

	if (cq->closing || cq->arm == CQ_ARM_NONE)
		return false;
	if (cq->error) {
		/* Any arm type, ERRORS included, reports the overrun once. */
		if (cq->error_reported)
			return false;
		cq->error_reported = true;
		cq->owed_error = true;
		cq->arm = CQ_ARM_NONE;
		return true;
	}
	if (!cq_arm_matched_locked(cq)) {
		cq->mod_pending = false;
		return false;
	}
	if (cq->mod_on) {
		now = ndk_now_ns();
		if (!cq->mod_pending) {
			cq->mod_pending = true;
			cq->mod_since_ns = now;
		}
		if (cq_mod_hold_locked(cq, now))
			return false;
	}
	cq->mod_pending = false;
	cq->arm = CQ_ARM_NONE;
	cq->notified_seq = cq->pushed;
	cq->owed++;
	return true;
}

static void cq_timer_fn(struct ndk_timer *t)
{
	struct sw_cq *cq = container_of(t, struct sw_cq, mod_timer);
	bool kick;

	ndk_lock(&cq->lock);
	cq->mod_timer_set = false;
	kick = cq_eval_locked(cq);
	ndk_unlock(&cq->lock);
	if (kick)
		cq_kick(cq);
	ndk_obj_put(&cq->base.obj); /* the timer's reference */
}

/* Lock held: stops the moderation timer; true if its reference is ours. */
static bool cq_timer_stop_locked(struct sw_cq *cq)
{
	NDK_ASSERT_LOCKED(&cq->lock);
	if (!cq->mod_timer_set ||
	    !ndk_timer_cancel(cq_engine(cq), &cq->mod_timer))
		return false; /* not armed, or firing: its function cleans up */
	cq->mod_timer_set = false;
	return true;
}

/* Lock held: the slot i entries after the head (i <= depth). A compare,
 * not a division: the depth is the consumer's and seldom a power of
 * two, and a division costs tens of cycles on each completion. */
static uint32_t cq_slot(const struct sw_cq *cq, uint32_t i)
{
	uint32_t s = cq->head + i;

	return s >= cq->depth ? s - cq->depth : s;
}

/* Engine thread: runs one owed notification, re-posts if more are owed. */
static void cq_notify_work(struct ndk_work *w)
{
	struct sw_cq *cq = container_of(w, struct sw_cq, notify_work);
	NTSTATUS status = STATUS_SUCCESS;
	bool run = true, closed = false, more;

	ndk_lock(&cq->lock);
	if (cq->owed_error) {
		cq->owed_error = false;
		status = STATUS_BUFFER_OVERFLOW;
	} else if (cq->owed) {
		cq->owed--;
	} else {
		run = false;
	}
	ndk_unlock(&cq->lock);

	/* No event callback once the close started (NDKPI Object Lifetime
	 * Requirements). */
	if (run && ndk_obj_begin_event(&cq->base.obj)) {
		cq->notify(cq->notify_ctx, status);
		/* Our posting reference keeps cq valid even if the consumer
		 * closed it inside the callback. */
		ndk_obj_release(&cq->base.obj);
	} else if (run) {
		closed = true; /* close_begin may not have run yet */
	}

	ndk_lock(&cq->lock);
	if (closed || cq->closing) {
		cq->owed = 0;
		cq->owed_error = false;
	}
	more = cq->owed || cq->owed_error;
	ndk_unlock(&cq->lock);
	/* One per pass, so a busy CQ cannot starve the engine. */
	if (more)
		cq_kick(cq);
	ndk_obj_put(&cq->base.obj); /* the posting reference */
}

NDK_HOT int sw_cq_push(struct sw_cq *cq, const NDK_RESULT_EX *res,
		       bool solicited)
{
	bool kick;

	if (!cq || !res)
		return -EINVAL;
	ndk_lock(&cq->lock);
	if (cq->error) {
		ndk_unlock(&cq->lock);
		return -EOVERFLOW;
	}
	if (cq->count == cq->depth) {
		/* Overrun: the CQ and its QPs are dead
		 * (NDK_FN_CQ_NOTIFICATION_CALLBACK). */
		cq->error = true;
		kick = cq_eval_locked(cq);
		ndk_unlock(&cq->lock);
		ndk_warn("cq %p overrun (depth %u)", (void *)cq, cq->depth);
		ndk_adapter_count(cq->base.obj.adapter, NDK_CTR(CQError), 1);
		if (kick)
			cq_kick(cq);
		return -EOVERFLOW;
	}
	cq->ring[cq_slot(cq, cq->count)] = *res;
	cq->count++;
	atomic_store_explicit(&cq->avail, cq->count, memory_order_release);
	cq->pushed++;
	/* An error status always satisfies SOLICITED (docs/ndk.md, Completion
	 * queues). */
	if (solicited || !NT_SUCCESS(res->Status))
		cq->last_sol_seq = cq->pushed;
	kick = cq_eval_locked(cq);
	ndk_unlock(&cq->lock);
	if (kick)
		cq_kick(cq);
	return 0;
}

bool sw_cq_in_error(struct sw_cq *cq)
{
	bool error;

	ndk_lock(&cq->lock);
	error = cq->error;
	ndk_unlock(&cq->lock);
	return error;
}

static void cq_pollers_armed(struct sw_cq *cq);

/* NdkArmCq, with a type front/cq.c checked. */
void sw_cq_arm(struct ndk_cq *base, ULONG Type)
{
	struct sw_cq *cq = container_of(base, struct sw_cq, base);
	unsigned int claimed;
	enum cq_arm arm;
	bool kick;

	switch (Type) {
	case NDK_CQ_NOTIFY_ERRORS:
		arm = CQ_ARM_ERRORS;
		break;
	case NDK_CQ_NOTIFY_ANY:
		arm = CQ_ARM_ANY;
		break;
	case NDK_CQ_NOTIFY_SOLICITED:
		arm = CQ_ARM_SOLICITED;
		break;
	default:
		return;
	}
	ndk_lock(&cq->lock);
	/* A second arm merges with an unsatisfied first (docs/ndk.md,
	 * Completion queues). */
	if (arm > cq->arm)
		cq->arm = arm;
	/*
	 * Completions that arrived since the last notification satisfy the
	 * arm at once; this also covers the NDSPI race (one landing between
	 * an empty GetCqResults and the re-arm). Notified asynchronously:
	 * the consumer may hold locks around ArmCq.
	 */
	kick = cq_eval_locked(cq);
	claimed = cq->claimed;
	ndk_unlock(&cq->lock);
	if (kick)
		cq_kick(cq);
	/* The consumer will wait for the notification, not poll. */
	if (claimed)
		cq_pollers_armed(cq);
}

/* Lock held: removes the oldest entry into *out. */
static void cq_pop_locked(struct sw_cq *cq, NDK_RESULT_EX *out)
{
	NDK_ASSERT_LOCKED(&cq->lock);
	*out = cq->ring[cq->head];
	cq->head = cq_slot(cq, 1);
	cq->count--;
}

/*
 * Lock held, after a drain: an emptied CQ ends a held moderation window,
 * so the next completion starts a fresh interval.
 */
static void cq_drained_locked(struct sw_cq *cq)
{
	NDK_ASSERT_LOCKED(&cq->lock);
	if (!cq->count)
		cq->mod_pending = false;
}

#define CQ_POLL_MAX 8

/* Lock held, after the pollers changed: solo is the one poller or NULL. */
static void cq_set_solo_locked(struct sw_cq *cq)
{
	struct sw_cq_poller *solo = NULL;

	NDK_ASSERT_LOCKED(&cq->lock);
	if (list_is_singular(&cq->pollers))
		solo = list_entry(cq->pollers.next, struct sw_cq_poller, node);
	atomic_store_explicit(&cq->solo, solo, memory_order_seq_cst);
}

void sw_cq_add_poller(struct sw_cq *cq, struct sw_cq_poller *p)
{
	ndk_lock(&cq->lock);
	if (!p->added)
		list_add_tail(&p->node, &cq->pollers);
	p->added = true;
	cq_set_solo_locked(cq);
	ndk_unlock(&cq->lock);
}

void sw_cq_del_poller(struct sw_cq *cq, struct sw_cq_poller *p)
{
	ndk_lock(&cq->lock);
	if (p->added)
		list_del(&p->node);
	if (p->added && p->claimed)
		cq->claimed--;
	p->added = false;
	p->claimed = false;
	cq_set_solo_locked(cq);
	ndk_unlock(&cq->lock);
	/*
	 * A poll that read solo before it changed may still run p: wait it
	 * out (a poll never waits for this thread, so this ends). Pairs
	 * with the increment before the read in cq_poll_solo.
	 */
	while (atomic_load_explicit(&cq->solo_busy, memory_order_seq_cst))
		sched_yield();
}

/*
 * Lock held, CQ empty: runs up to CQ_POLL_MAX pollers without the lock
 * (they push completions), then takes it again. The first one polled
 * goes to the back, so many connections on one CQ take turns.
 */
static void cq_progress_locked(struct sw_cq *cq)
{
	struct sw_cq_poller *p[CQ_POLL_MAX];
	struct list_head *pos;
	unsigned int n = 0, i;

	NDK_ASSERT_LOCKED(&cq->lock);

	list_for_each (pos, &cq->pollers) {
		p[n] = list_entry(pos, struct sw_cq_poller, node);
		ndk_obj_get(p[n]->owner);
		if (++n == CQ_POLL_MAX)
			break;
	}
	if (!n)
		return;
	list_del(&p[0]->node);
	list_add_tail(&p[0]->node, &cq->pollers);
	ndk_unlock(&cq->lock);
	for (i = 0; i < n; i++) {
		p[i]->poll(p[i]);
		ndk_obj_put(p[i]->owner);
	}
	ndk_lock(&cq->lock);
}

void sw_cq_poller_claim(struct sw_cq *cq, struct sw_cq_poller *p, bool claimed)
{
	ndk_lock(&cq->lock);
	if (p->added && p->claimed != claimed) {
		p->claimed = claimed;
		cq->claimed += claimed ? 1 : -1;
	}
	ndk_unlock(&cq->lock);
}

/* NdkArmCq: every poller hands back what it took over (cq.h); armed()
 * unclaims, so the passes end. */
static void cq_pollers_armed(struct sw_cq *cq)
{
	struct sw_cq_poller *p[CQ_POLL_MAX];
	struct list_head *pos;
	unsigned int n, i;

	do {
		n = 0;
		ndk_lock(&cq->lock);
		list_for_each (pos, &cq->pollers) {
			struct sw_cq_poller *q =
				list_entry(pos, struct sw_cq_poller, node);

			if (!q->claimed || !q->armed)
				continue;
			p[n++] = q;
			ndk_obj_get(q->owner);
			if (n == CQ_POLL_MAX)
				break;
		}
		ndk_unlock(&cq->lock);
		for (i = 0; i < n; i++) {
			p[i]->armed(p[i]);
			ndk_obj_put(p[i]->owner);
		}
	} while (n == CQ_POLL_MAX);
}

/*
 * An empty CQ with one poller: runs it without the lock. False if there
 * is no solo poller (none, or several: the locked path takes turns).
 */
static bool cq_poll_solo(struct sw_cq *cq)
{
	struct sw_cq_poller *p;

	atomic_fetch_add_explicit(&cq->solo_busy, 1, memory_order_seq_cst);
	p = atomic_load_explicit(&cq->solo, memory_order_seq_cst);
	if (p)
		p->poll(p);
	atomic_fetch_sub_explicit(&cq->solo_busy, 1, memory_order_release);
	return p != NULL;
}

/* NdkGetCqResults(Ex): up to max entries, oldest first (front/cq.c). */
NDK_HOT ULONG sw_cq_poll(struct ndk_cq *base, NDK_RESULT_EX *out, ULONG max)
{
	struct sw_cq *cq = container_of(base, struct sw_cq, base);
	ULONG i;

	/* An empty poll that finds nothing takes no lock. */
	if (!atomic_load_explicit(&cq->avail, memory_order_acquire) &&
	    cq_poll_solo(cq) &&
	    !atomic_load_explicit(&cq->avail, memory_order_acquire))
		return 0;
	ndk_lock(&cq->lock);
	if (!cq->count)
		cq_progress_locked(cq);
	for (i = 0; i < max && cq->count; i++)
		cq_pop_locked(cq, &out[i]);
	atomic_store_explicit(&cq->avail, cq->count, memory_order_release);
	cq_drained_locked(cq);
	ndk_unlock(&cq->lock);
	return i;
}

/* NdkResizeCq, with a depth front/cq.c checked. */
NTSTATUS sw_cq_resize(struct ndk_cq *base, ULONG CqDepth)
{
	struct sw_cq *cq = container_of(base, struct sw_cq, base);
	NDK_RESULT_EX *ring, *old;
	uint32_t i;

	ring = calloc(CqDepth, sizeof(*ring));
	if (!ring)
		return STATUS_INSUFFICIENT_RESOURCES;
	ndk_lock(&cq->lock);
	if (cq->count > CqDepth) {
		/* Never drop queued completions; the consumer drains first. */
		ndk_unlock(&cq->lock);
		free(ring);
		return STATUS_INVALID_PARAMETER;
	}
	for (i = 0; i < cq->count; i++)
		ring[i] = cq->ring[cq_slot(cq, i)];
	old = cq->ring;
	cq->ring = ring;
	cq->head = 0;
	cq->depth = CqDepth;
	ndk_unlock(&cq->lock);
	free(old);
	return STATUS_SUCCESS;
}

/* NdkControlCqInterruptModeration (front/cq.c). */
NTSTATUS sw_cq_moderation(struct ndk_cq *base, ULONG ModerationInterval,
			  ULONG ModerationCount)
{
	struct sw_cq *cq = container_of(base, struct sw_cq, base);
	bool timer_ref, kick;

	ndk_lock(&cq->lock);
	/* Both bounds "unlimited" would never notify
	 * (NDK_FN_CONTROL_CQ_INTERRUPT_MODERATION). */
	if (ModerationInterval == CQ_MAXULONG &&
	    (ModerationCount == CQ_MAXULONG || ModerationCount > cq->depth) &&
	    ModerationCount > 1) {
		ndk_unlock(&cq->lock);
		return STATUS_INVALID_PARAMETER_MIX;
	}
	/* Interval 0 or Count 0/1 turns moderation off; latest call wins. */
	cq->mod_on = ModerationInterval != 0 && ModerationCount > 1;
	cq->mod_interval_us = ModerationInterval;
	cq->mod_count = ModerationCount;
	/* Re-time a held arm under the new settings. */
	timer_ref = cq_timer_stop_locked(cq);
	kick = cq_eval_locked(cq);
	ndk_unlock(&cq->lock);
	if (timer_ref)
		ndk_obj_put(&cq->base.obj);
	if (kick)
		cq_kick(cq);
	return STATUS_SUCCESS;
}

/* Close requested: no notification may start any more, timers stop. */
static void cq_close_begin(struct ndk_obj *obj)
{
	struct sw_cq *cq = container_of(obj, struct sw_cq, base.obj);
	bool timer_ref;

	ndk_lock(&cq->lock);
	cq->closing = true;
	cq->arm = CQ_ARM_NONE;
	cq->owed = 0;
	cq->owed_error = false;
	timer_ref = cq_timer_stop_locked(cq);
	ndk_unlock(&cq->lock);
	if (timer_ref)
		ndk_obj_put(obj); /* the consumer's reference is still held */
}

static void cq_destroy(struct ndk_obj *obj)
{
	struct sw_cq *cq = container_of(obj, struct sw_cq, base.obj);

	free(cq->ring);
	ndk_lock_destroy(&cq->lock);
	free(cq);
}

static const struct ndk_obj_ops cq_ops = {
	.type = NdkObjectTypeCq,
	.name = "cq",
	.close_begin = cq_close_begin,
	.destroy = cq_destroy,
};

NTSTATUS sw_create_cq(struct ndk_adapter *ad, const struct ndk_cq_attr *attr,
		      NDK_CQ **ppNdkCq)
{
	struct ndk_obj *antes[1];
	struct sw_cq *cq;
	NTSTATUS status;

	/* Affinity is only a hint: notifications run on the engine thread. */
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return STATUS_INSUFFICIENT_RESOURCES;
	cq->ring = calloc(attr->depth, sizeof(*cq->ring));
	if (!cq->ring) {
		free(cq);
		return STATUS_INSUFFICIENT_RESOURCES;
	}
	cq->depth = attr->depth;
	cq->notify = attr->notify;
	cq->notify_ctx = attr->notify_ctx;
	cq->arm = CQ_ARM_NONE;
	list_init(&cq->pollers);
	ndk_lock_init(&cq->lock, NDK_LOCK_CQ);
	ndk_cq_init(&cq->base);
	ndk_work_init(&cq->notify_work, cq_notify_work);
	ndk_timer_init(&cq->mod_timer, cq_timer_fn);

	antes[0] = &ad->obj;
	status = ndk_obj_setup(&cq->base.obj, ad, &cq_ops, &ndk_cq_dispatch,
			       antes, 1);
	if (status)
		return status; /* cq_destroy freed it */
	/* Created inline: no CreateCompletion (NDK_FN_CREATE_COMPLETION). */
	*ppNdkCq = &cq->base.obj.pub.cq;
	return STATUS_SUCCESS;
}
