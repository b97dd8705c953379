/* SPDX-License-Identifier: MIT */
/*
 * The data path's shared core (sw/dp_core.h): its state machine, the
 * initiator queue's completions, the socket's interest and the traffic
 * counters.
 */
#include <assert.h>
#include <sys/epoll.h>
#include "core/log.h"
#include "front/adapter.h"
#include "sw/dp_core.h"

static const char *const dp_state_names[SW_DP_STATE_COUNT] = {
	[SW_DP_ATTACHED] = "ATTACHED",
	[SW_DP_ENDED] = "ENDED",
	[SW_DP_DETACHED] = "DETACHED",
};

/* dp_next[from][to]: the legal transitions. Forward only. */
static const bool dp_next[SW_DP_STATE_COUNT][SW_DP_STATE_COUNT] = {
	[SW_DP_ATTACHED] = { [SW_DP_ENDED] = true, [SW_DP_DETACHED] = true },
	[SW_DP_ENDED] = { [SW_DP_DETACHED] = true },
};

const char *sw_dp_state_name(enum sw_dp_state state)
{
	return (unsigned int)state < SW_DP_STATE_COUNT ? dp_state_names[state]
						       : "?";
}

void sw_dp_set_state_locked(struct sw_dp *dp, enum sw_dp_state to)
{
	enum sw_dp_state from = dp->state;

	NDK_ASSERT_LOCKED(&dp->lock);

	if (!dp_next[from][to]) {
		ndk_err("dp %p: illegal transition %s -> %s", (void *)dp,
			sw_dp_state_name(from), sw_dp_state_name(to));
		assert(!"illegal data path transition");
		return;
	}
	ndk_dbg("dp %p: %s -> %s", (void *)dp, sw_dp_state_name(from),
		sw_dp_state_name(to));
	__atomic_store_n(&dp->state, to, __ATOMIC_RELEASE);
}

static NDK_OPERATION_TYPE wqe_type(const struct sw_wqe *w)
{
	switch (w->op) {
	case SW_WQE_SEND:
		return NdkOperationTypeSend;
	case SW_WQE_WRITE:
		return NdkOperationTypeWrite;
	case SW_WQE_READ:
		return NdkOperationTypeRead;
	case SW_WQE_BIND:
		return NdkOperationTypeBind;
	case SW_WQE_FAST_REGISTER:
		return NdkOperationTypeFastRegister;
	default:
		return NdkOperationTypeInvalidate;
	}
}

NDK_HOT void sw_dp_complete_locked(struct sw_dp *dp)
{
	NDK_ASSERT_LOCKED(&dp->lock);
	while (dp->sq.done != dp->sq.next) {
		struct sw_wqe *w = sw_dp_sq_slot(dp, dp->sq.done);

		if (w->state != SW_WQE_DONE)
			break;
		/* SILENT_SUCCESS: no entry on success; failures still one. */
		if (!(w->flags & NDK_OP_FLAG_SILENT_SUCCESS) ||
		    !NT_SUCCESS(w->status)) {
			NDK_RESULT_EX res = {
				.Status = w->status,
				.BytesTransferred = w->length,
				.QPContext = dp->qp.context,
				.RequestContext = w->ctx,
				.Type = wqe_type(w),
			};

			sw_cq_push(dp->qp.icq, &res, false);
		}
		dp->sq.done++;
	}
}

bool sw_dp_term_queue_locked(struct sw_dp *dp, const struct rdmap_term *t)
{
	const struct iwarp_term_cause *c = &t->cause;
	int n;

	NDK_ASSERT_LOCKED(&dp->lock);
	if (dp->tx.terminated || dp->tx.term_len)
		return false;
	n = rdmap_term_build(t, dp->crc, dp->tx.term, sizeof(dp->tx.term));
	if (n > 0)
		dp->tx.term_len = (size_t)n;
	ndk_info("qp %p: sending Terminate %s / %s / %s", (void *)dp->qp.obj,
		 iwarp_term_layer_name(c->layer),
		 iwarp_term_etype_name(c->layer, c->etype),
		 iwarp_term_ecode_name(c->layer, c->etype, c->ecode));
	return true;
}

unsigned int sw_dp_stag_rdmap_ecode(int err)
{
	switch (sw_stag_fault_of(err)) {
	case SW_STAG_FAULT_INVALID_STAG:
		return RDMAP_ECODE_INVALID_STAG;
	case SW_STAG_FAULT_BOUNDS:
		return RDMAP_ECODE_BASE_BOUNDS;
	case SW_STAG_FAULT_ACCESS:
		return RDMAP_ECODE_ACCESS;
	case SW_STAG_FAULT_TO_WRAP:
		return RDMAP_ECODE_TO_WRAP;
	default:
		return RDMAP_ECODE_STAG_NOT_ASSOC;
	}
}

void sw_dp_epoll_leave_locked(struct sw_dp *dp)
{
	NDK_ASSERT_LOCKED(&dp->lock);
	if (dp->sock.in_epoll &&
	    !ndk_engine_del_fd(dp->sock.engine, &dp->sock.io))
		dp->sock.in_epoll = false;
}

int sw_dp_epoll_watch_locked(struct sw_dp *dp, uint32_t ev)
{
	int ret = 0;

	NDK_ASSERT_LOCKED(&dp->lock);
	if (dp->sock.in_epoll) {
		ndk_engine_mod_fd(dp->sock.engine, &dp->sock.io, ev);
	} else {
		ret = ndk_engine_add_fd(dp->sock.engine, &dp->sock.io, ev);
		dp->sock.in_epoll = !ret;
	}
	return ret;
}

void sw_dp_interest_locked(struct sw_dp *dp)
{
	uint32_t ev;

	NDK_ASSERT_LOCKED(&dp->lock);
	if (!sw_dp_attached(dp) || !dp->sock.io_registered)
		return;
	ev = (dp->rx_consumer ? 0u : (uint32_t)EPOLLIN) |
	     (dp->sock.want_out ? (uint32_t)EPOLLOUT : 0u);
	if (!ev) {
		/* An event already fetched may still run the handler, which
		 * copes; io_registered stays until the socket closes. */
		sw_dp_epoll_leave_locked(dp);
	} else {
		int ret = sw_dp_epoll_watch_locked(dp, ev);

		/* Out of kernel memory: the next change of interest retries. */
		if (ret)
			ndk_err("data path: cannot watch the socket again: %d",
				ret);
	}
}

NDK_HOT void sw_dp_want_out_locked(struct sw_dp *dp, bool on)
{
	NDK_ASSERT_LOCKED(&dp->lock);
	if (dp->sock.want_out == on || !sw_dp_attached(dp))
		return;
	dp->sock.want_out = on;
	sw_dp_interest_locked(dp);
}

/* A batch is one shared atomic add per 64 FPDUs or 256 KiB at most. */
#define TRAFFIC_BATCH_FRAMES 64
#define TRAFFIC_BATCH_OCTETS (256 * 1024)

NDK_HOT uint32_t sw_dp_fpdu_frames(const struct sw_dp *dp, size_t fpdu_len)
{
	return fpdu_len <= dp->mss
		       ? 1
		       : (uint32_t)((fpdu_len + dp->mss - 1) / dp->mss);
}

NDK_HOT void sw_dp_traffic(struct sw_dp *dp, struct sw_dp_traffic *t, bool out,
			   uint64_t octets, uint32_t frames, bool flush)
{
	t->octets += octets;
	t->frames += frames;
	if (!flush && t->frames < TRAFFIC_BATCH_FRAMES &&
	    t->octets < TRAFFIC_BATCH_OCTETS)
		return;
	if (!t->octets && !t->frames)
		return;
	/* RDMA octets include L2 overhead (docs/ndk.md, OIDs). */
	ndk_adapter_count(dp->ad,
			  out ? NDK_CTR(RDMAOutOctets) : NDK_CTR(RDMAInOctets),
			  t->octets + (uint64_t)t->frames * dp->frame_overhead);
	ndk_adapter_count(dp->ad,
			  out ? NDK_CTR(RDMAOutFrames) : NDK_CTR(RDMAInFrames),
			  t->frames);
	t->octets = 0;
	t->frames = 0;
}
