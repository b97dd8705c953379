/* SPDX-License-Identifier: MIT */
/*
 * The data path's lifecycle (sw/dp.h): attach with the socket handed over,
 * the socket's engine handler, the end of the stream reported once,
 * detach and free; and who receives: the engine, or a consumer that
 * busy-polls one of the QP's CQs (docs/design.md, Consumer-driven
 * receive).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include "core/config.h"
#include "core/log.h"
#include "front/adapter.h"
#include "iwarp/mpa.h"
#include "sw/adapter.h"
#include "sw/dp.h"
#include "sw/dp_rx.h"
#include "sw/dp_tx.h"
#include "sw/tcp_stats.h"

/* ------------------------------------------------------------------ */
/* The socket                                                         */

/*
 * Takes the socket out of the engine's epoll set. On the engine thread
 * this also drops events of the batch being dispatched, so no handler
 * runs for it afterwards. lock held.
 */
static void dp_unregister_locked(struct sw_dp *dp)
{
	NDK_ASSERT_LOCKED(&dp->lock);
	if (!dp->sock.io_registered)
		return;
	/* Even out of the set (ENOENT): an event fetched before it left
	 * may sit in the batch. */
	ndk_engine_del_fd(dp->sock.engine, &dp->sock.io);
	dp->sock.in_epoll = false;
	dp->sock.io_registered = false;
}

static void dp_close_socket_locked(struct sw_dp *dp)
{
	NDK_ASSERT_LOCKED(&dp->lock);
	dp_unregister_locked(dp);
	if (dp->sock.fd >= 0)
		close(dp->sock.fd);
	dp->sock.fd = -1;
}

/* Engine thread: the close that sw_dp_detach queued. */
static void dp_close_work_fn(struct ndk_work *w)
{
	struct sw_dp *dp = container_of(w, struct sw_dp, sock.close_work);
	struct ndk_obj *qp = dp->qp.obj;

	ndk_lock(&dp->lock);
	dp_close_socket_locked(dp);
	ndk_unlock(&dp->lock);
	ndk_obj_put(qp);
}

/*
 * After the end, what is left of the batch before our FIN: the rest of an
 * FPDU and the Terminate, written as the peer makes room. Lock held,
 * engine thread. Once all of it is out, or the socket failed, the FIN
 * goes and the socket leaves the epoll set.
 */
static void dp_drain_locked(struct sw_dp *dp, uint32_t events)
{
	NDK_ASSERT_LOCKED(&dp->lock);
	if (!(events & (EPOLLERR | EPOLLHUP)) && !sw_dp_tx_drain_locked(dp))
		return;
	dp->tx.drain = false;
	shutdown(dp->sock.fd, SHUT_WR);
	dp_unregister_locked(dp);
}

/*
 * The stream is over: no more reads, and the connection manager hears it
 * once. After a Terminate our FIN follows it (RFC 5040 5.2: nothing after
 * a Terminate); if the socket has no room for all of it yet, the engine
 * keeps writing it on EPOLLOUT (dp_drain_locked) until the detach. The
 * socket stays open until the detach: closing it with unread bytes would
 * reset the connection. Engine thread.
 */
static void dp_end(struct sw_dp *dp, int err)
{
	sw_dp_end_fn fn = NULL;
	bool drain = false;

	ndk_lock(&dp->lock);
	if (sw_dp_attached(dp)) {
		/* Only an end of stream: a failed send knows better. */
		if (err == -EPIPE && dp->tx.error)
			err = dp->tx.error;
		if (err == -EPROTO) {
			ndk_info("qp %p: connection terminated",
				 (void *)dp->qp.obj);
			sw_dp_tx_locked(dp);
			drain = dp->tx.left && !dp->tx.error &&
				dp->sock.io_registered;
			if (!drain)
				shutdown(dp->sock.fd, SHUT_WR);
		}
		sw_dp_set_state_locked(dp, SW_DP_ENDED);
		if (drain) {
			dp->tx.drain = true;
			if (sw_dp_epoll_watch_locked(dp, EPOLLOUT))
				dp_drain_locked(dp, EPOLLERR);
		} else {
			dp_unregister_locked(dp);
		}
		fn = dp->sock.end_fn;
	}
	ndk_unlock(&dp->lock);
	if (fn)
		fn(dp->sock.end_ctx, err);
}

/* After a receive pass: send what it queued (a Terminate, Read
 * Responses, Reads that waited for ORQ room). rx_lock held. */
static void dp_rx_done(struct sw_dp *dp)
{
	if (!dp->rx_wants_tx)
		return;
	ndk_lock(&dp->lock);
	dp->rx_wants_tx = false;
	sw_dp_tx_locked(dp);
	ndk_unlock(&dp->lock);
}

/*
 * Up to budget reads, sending what each one queued for the transmitter
 * before the next (a Read Response leaves as soon as its request is
 * parsed). rx_lock held. Returns 0 or a negative errno (the end).
 */
static int dp_receive(struct sw_dp *dp, int budget, bool *got)
{
	int ret;

	do {
		ret = sw_dp_rx_pass(dp, &budget, got);
		dp_rx_done(dp);
	} while (ret == SW_DP_RX_TX && budget > 0);
	return ret < 0 ? ret : 0;
}

/* Engine thread: the socket's readiness. */
static void dp_io_fn(struct ndk_io *io, uint32_t events)
{
	struct sw_dp *dp = container_of(io, struct sw_dp, sock.io);
	bool got = false;
	int ret;

	if (dp->tx.drain) {
		/* Ended: only the rest of the batch is written. Set and
		 * cleared on this (the engine) thread only. */
		ndk_lock(&dp->lock);
		dp_drain_locked(dp, events);
		ndk_unlock(&dp->lock);
		return;
	}
	if (events & EPOLLOUT) {
		ndk_lock(&dp->lock);
		sw_dp_tx_locked(dp);
		ndk_unlock(&dp->lock);
	}
	if (!(events & (EPOLLIN | EPOLLERR | EPOLLHUP)))
		return;
	ndk_lock(&dp->rx_lock);
	/* Bounded per wake-up so one busy connection cannot starve others. */
	ret = dp_receive(dp, 16, &got);
	ndk_unlock(&dp->rx_lock);
	if (ret < 0)
		dp_end(dp, ret);
}

/*
 * Engine thread: an error that a consumer's poll met ends the connection
 * here, where the end is reported. The QP reference taken when the work
 * was posted keeps dp alive.
 */
static void rx_error_work_fn(struct ndk_work *w)
{
	struct sw_dp *dp = container_of(w, struct sw_dp, rx_error_work);
	struct ndk_obj *qp = dp->qp.obj;
	bool attached;

	ndk_lock(&dp->lock);
	attached = sw_dp_attached(dp);
	ndk_unlock(&dp->lock);
	if (attached)
		dp_io_fn(&dp->sock.io, EPOLLIN);
	ndk_obj_put(qp);
}

/*
 * Engine thread: the transmitter queued a Terminate (dp_tx.c, tx_fault);
 * the stream ends as after one the receiver sent. The QP reference taken
 * when the work was posted keeps dp alive.
 */
static void tx_fault_work_fn(struct ndk_work *w)
{
	struct sw_dp *dp = container_of(w, struct sw_dp, tx_fault_work);
	struct ndk_obj *qp = dp->qp.obj;

	dp_end(dp, -EPROTO);
	ndk_obj_put(qp);
}

/* ------------------------------------------------------------------ */
/* Who receives: the engine or a polling consumer                     */

/* Receive passes a consumer must make within a short time before it takes
 * receiving over: it is then busy-polling (a consumer that polls now and
 * then, e.g. between spins on memory, never does). */
#define CLAIM_POLLS	8
#define CLAIM_WINDOW_NS 20000

/* The backstop's first tick comes after BACKSTOP_MIN_MS; each tick that
 * finds the consumer still polling doubles the next, up to
 * BACKSTOP_MAX_MS. A tick wakes the engine thread, which on few cores
 * preempts a polling thread (docs/performance.md, "The backstop backs
 * off"). A consumer that stops polling is taken over within
 * BACKSTOP_MAX_MS. */
#define BACKSTOP_MIN_MS 1
#define BACKSTOP_MAX_MS 8

/* A gated poll waits this long at most: about what an empty read of
 * the socket takes (docs/performance.md, "The receive gate"). */
#define RX_GATE_SPIN_NS 1000

/* The backstop timer runs, or starts now: false if it cannot. Lock
 * held. */
static bool dp_backstop_locked(struct sw_dp *dp)
{
	NDK_ASSERT_LOCKED(&dp->lock);
	if (dp->backstop_armed)
		return true;
	if (ndk_timer_start(dp->sock.engine, &dp->backstop, BACKSTOP_MIN_MS))
		return false;
	dp->backstop_armed = true;
	dp->backstop_ms = BACKSTOP_MIN_MS;
	ndk_obj_get(dp->qp.obj);
	return true;
}

/* A CQ calls a poller's armed() at NdkArmCq while the poller is claimed:
 * while its consumer busy-polls, or its posts hold tails (which the
 * consumer, about to sleep, must not wait for). Lock held. */
static void dp_pollers_claim_locked(struct sw_dp *dp)
{
	bool claimed = dp->rx_consumer || dp->arm_watch;

	sw_cq_poller_claim(dp->qp.rcq, &dp->rpoll, claimed);
	sw_cq_poller_claim(dp->qp.icq, &dp->ipoll, claimed);
}

bool sw_dp_hold_watch_locked(struct sw_dp *dp)
{
	if (!dp_backstop_locked(dp))
		return false;
	if (!dp->arm_watch) {
		dp->arm_watch = true;
		dp_pollers_claim_locked(dp);
	}
	return true;
}

static void dp_claim(struct sw_dp *dp, bool consumer)
{
	ndk_lock(&dp->lock);
	/* Only a consumer that comes back holds a tail (dp_tx.c). */
	if (!consumer)
		sw_dp_tx_release_locked(dp);
	if (!sw_dp_attached(dp) || dp->rx_consumer == consumer) {
		ndk_unlock(&dp->lock);
		return;
	}
	dp->rx_consumer = consumer;
	sw_dp_interest_locked(dp);
	if (consumer && !dp_backstop_locked(dp)) {
		/* No backstop, no takeover. */
		dp->rx_consumer = false;
		sw_dp_interest_locked(dp);
	}
	atomic_store_explicit(&dp->rx_consumer_hint, dp->rx_consumer,
			      memory_order_relaxed);
	dp_pollers_claim_locked(dp);
	ndk_unlock(&dp->lock);
}

/* Engine thread: hands receiving back from a consumer that stopped
 * polling without arming its CQ. */
static void backstop_fn(struct ndk_timer *t)
{
	struct sw_dp *dp = container_of(t, struct sw_dp, backstop);
	struct ndk_obj *qp = dp->qp.obj;
	bool keep = false, give_back = false;

	uint64_t polls = atomic_load_explicit(&dp->polls, memory_order_relaxed);

	/*
	 * Held: a consumer is posting or polling right now, which is what
	 * the tick looks for; the next one looks again. Waiting instead
	 * queued the engine behind a streaming sender that takes the lock
	 * again before the woken engine runs: some thirty futex waits and
	 * wakes a tick (docs/performance.md, "The backstop does not wait").
	 */
	if (!ndk_trylock(&dp->lock)) {
		if (!ndk_timer_start(dp->sock.engine, t, BACKSTOP_MAX_MS))
			return;
		ndk_lock(&dp->lock);
	}
	/* A tail held since the last tick goes now (dp_tx.c). */
	sw_dp_tx_release_locked(dp);
	if (sw_dp_attached(dp)) {
		/* Polled since the last tick: still receiving. */
		bool rx_busy = dp->rx_consumer && polls != dp->polls_seen;
		/* Held a tail since: still streaming. */
		bool tx_busy = dp->tx.holds != dp->tx.holds_seen;

		dp->backstop_ms = MIN(2 * dp->backstop_ms, BACKSTOP_MAX_MS);
		if ((rx_busy || tx_busy) &&
		    !ndk_timer_start(dp->sock.engine, t, dp->backstop_ms))
			keep = true;
		give_back = dp->rx_consumer && !(keep && rx_busy);
		if (dp->arm_watch && !(keep && tx_busy)) {
			dp->arm_watch = false;
			dp_pollers_claim_locked(dp);
		}
	}
	dp->polls_seen = polls;
	dp->tx.holds_seen = dp->tx.holds;
	if (!keep)
		dp->backstop_armed = false;
	ndk_unlock(&dp->lock);
	if (give_back)
		dp_claim(dp, false);
	if (!keep)
		ndk_obj_put(qp);
}

/* A CQ's poller (cq.h), on the consumer's thread; the CQ holds a QP
 * reference while it runs. */
static NDK_HOT void dp_poll(struct sw_dp *dp)
{
	struct ndk_obj *qp = dp->qp.obj;
	bool got = false, claim = false;
	uint64_t gate;
	int ret;

	/* The consumer found its CQ empty: held bytes go ("The tail hold",
	 * dp_tx.c). */
	if (atomic_load_explicit(&dp->tx_held_hint, memory_order_relaxed)) {
		ndk_lock(&dp->lock);
		sw_dp_tx_release_locked(dp);
		ndk_unlock(&dp->lock);
	}
	/* The rest of a payload cannot be there yet (dp_rx.c, rx_gate): wait
	 * about as long as the empty read would have taken, outside the
	 * socket's lock, and read only once the gate opened. */
	gate = atomic_load_explicit(&dp->rx_gate_ns, memory_order_relaxed);
	if (gate) {
		uint64_t now = ndk_now_ns(), until;

		if (now < gate) {
			until = MIN(gate, now + RX_GATE_SPIN_NS);
			while (ndk_now_ns() < until)
				ndk_cpu_relax();
			if (until < gate)
				return;
		}
	}
	/* Busy: the engine (or another poller) is receiving right now. */
	if (!ndk_trylock(&dp->rx_lock))
		return;
	/* Open: later polls read no clock until a read sets it again. */
	if (gate)
		atomic_store_explicit(&dp->rx_gate_ns, 0, memory_order_relaxed);
	ret = dp->rx_error ? 0 : dp_receive(dp, 4, &got);
	/* Only rx_lock's holder counts: no locked add. */
	atomic_store_explicit(
		&dp->polls,
		atomic_load_explicit(&dp->polls, memory_order_relaxed) + 1,
		memory_order_relaxed);
	/* Not receiving yet: CLAIM_POLLS passes within CLAIM_WINDOW_NS take
	 * over, timed by the first and the last of them only. Once the
	 * consumer receives, a poll reads no clock. */
	if (ret >= 0 && !atomic_load_explicit(&dp->rx_consumer_hint,
					      memory_order_relaxed)) {
		if (!dp->poll_streak++) {
			dp->streak_start_ns = ndk_now_ns();
		} else if (dp->poll_streak == CLAIM_POLLS) {
			claim = ndk_now_ns() - dp->streak_start_ns <=
				CLAIM_WINDOW_NS;
			dp->poll_streak = 0;
		}
	}
	/* The end of the stream stays readable for the engine to see;
	 * anything else is handed over once. */
	if (ret < 0 && ret != -EPIPE) {
		dp->rx_error = ret;
		ndk_obj_get(qp);
		if (!ndk_engine_post(dp->sock.engine, &dp->rx_error_work))
			ndk_obj_put(qp);
	}
	ndk_unlock(&dp->rx_lock);
	if (ret < 0)
		dp_claim(dp, false);
	else if (claim)
		dp_claim(dp, true);
}

static NDK_HOT void dp_poll_rcq(struct sw_cq_poller *p)
{
	dp_poll(container_of(p, struct sw_dp, rpoll));
}

static NDK_HOT void dp_poll_icq(struct sw_cq_poller *p)
{
	dp_poll(container_of(p, struct sw_dp, ipoll));
}

/* NdkArmCq on one of our CQs: the consumer will sleep. */
static void dp_armed_rcq(struct sw_cq_poller *p)
{
	dp_claim(container_of(p, struct sw_dp, rpoll), false);
}

static void dp_armed_icq(struct sw_cq_poller *p)
{
	dp_claim(container_of(p, struct sw_dp, ipoll), false);
}

/* ------------------------------------------------------------------ */
/* Attach, detach, free                                               */

/* Ethernet (14) + IPv4 (20) or IPv6 (40) + TCP with timestamps (32). */
static uint32_t dp_frame_overhead(int family)
{
	return family == AF_INET6 ? 14 + 40 + 32 : 14 + 20 + 32;
}

static void dp_release(struct sw_dp *dp)
{
	sw_dp_rx_free(dp);
	free(dp->sq.ring);
	free(dp->irq.ring);
	free(dp->sock.handover);
	free(dp);
}

int sw_dp_attach(const struct sw_dp_qp *qp, const struct sw_dp_socket *s,
		 struct sw_dp **out)
{
	struct sw_dp *dp = NULL;
	uint32_t stride, size = 1;
	int mss = 0, ret;
	socklen_t len = sizeof(mss);

	/* Page-aligned: what a small request touches, everything before
	 * tx's batch arrays, is one page (docs/performance.md, "Pages per
	 * hop"). */
	if (posix_memalign((void **)&dp, 4096, sizeof(*dp)))
		return -ENOMEM;
	memset(dp, 0, sizeof(*dp));
	dp->qp = *qp;
	dp->ad = qp->obj->adapter;
	dp->stags = sw_stags(dp->ad);
	dp->max_transfer = dp->ad->info.MaxTransferLength;
	dp->crc = s->crc;
	dp->tx_hold = ndk_config_bool("NDK_TX_HOLD", true);
	dp->rx_gate_ns_max =
		(uint32_t)ndk_config_u64("NDK_RX_GATE_NS", 4000, 0, 1000000);
	stride = (uint32_t)(sizeof(struct sw_wqe) +
			    MAX((size_t)qp->max_sge * sizeof(NDK_SGE),
				(size_t)qp->inline_size));
	stride = (stride + 7) & ~7u;
	while (size < qp->sq_depth)
		size <<= 1;
	dp->sq.ring = calloc(size, stride);
	dp->irq.ring = calloc(MAX(s->ird, 1u), sizeof(*dp->irq.ring));
	if (s->unsent_len)
		dp->sock.handover = malloc(s->unsent_len);
	if (!dp->sq.ring || !dp->irq.ring ||
	    (s->unsent_len && !dp->sock.handover) ||
	    sw_dp_rx_create(dp, s->rtr_received)) {
		dp_release(dp);
		return -ENOMEM;
	}
	ndk_lock_init(&dp->lock, NDK_LOCK_DP);
	ndk_lock_init(&dp->rx_lock, NDK_LOCK_DP_RX);
	dp->state = SW_DP_ATTACHED;
	dp->sock.fd = s->fd;
	dp->sock.engine = s->engine;
	dp->sock.end_fn = s->end_fn;
	dp->sock.end_ctx = s->end_ctx;
	dp->ird = s->ird;
	dp->ord = s->ord;
	dp->sq.size = size;
	dp->sq.depth = qp->sq_depth;
	dp->sq.stride = stride;
	/* FPDUs fit the connection's MSS (RFC 5044 MULPDU), or a whole
	 * number of its segments where the peer takes large FPDUs. */
	if (getsockopt(s->fd, IPPROTO_TCP, TCP_MAXSEG, &mss, &len) || mss < 512)
		mss = 1460;
	dp->mulpdu = (uint32_t)mpa_mulpdu(
		s->large_fpdu ? mpa_large_emss((size_t)mss) : (size_t)mss);
	dp->frame_overhead = dp_frame_overhead(s->family);
	dp->mss = (uint32_t)mss;
	/* MSNs start at 1 on every queue (RFC 5041 5.1); a Send or Read RTR
	 * we sent took the first of its queue. */
	dp->tx.msn_send = s->rtr_sent == MPA_RTR_SEND ? 2 : 1;
	dp->tx.msn_readreq = s->rtr_sent == MPA_RTR_READ ? 2 : 1;
	dp->sq.rtr_read_out = s->rtr_sent == MPA_RTR_READ;
	dp->sock.nudge_mark_ok =
		!sw_tcp_bytes_received(s->fd, &dp->sock.nudge_mark);
	ndk_work_init(&dp->rx_error_work, rx_error_work_fn);
	ndk_work_init(&dp->tx_fault_work, tx_fault_work_fn);
	ndk_work_init(&dp->sock.close_work, dp_close_work_fn);
	ndk_timer_init(&dp->backstop, backstop_fn);
	dp->rpoll.poll = dp_poll_rcq;
	dp->rpoll.armed = dp_armed_rcq;
	dp->rpoll.owner = qp->obj;
	dp->ipoll.poll = dp_poll_icq;
	dp->ipoll.armed = dp_armed_icq;
	dp->ipoll.owner = qp->obj;
	ndk_io_init(&dp->sock.io, s->fd, dp_io_fn);
	/* The handler may run as soon as the socket is in the epoll set: the
	 * registration and its flag are one step under the lock. */
	ndk_lock(&dp->lock);
	ret = ndk_engine_add_fd(dp->sock.engine, &dp->sock.io, EPOLLIN);
	dp->sock.io_registered = !ret;
	dp->sock.in_epoll = !ret;
	ndk_unlock(&dp->lock);
	if (ret) {
		ndk_lock_destroy(&dp->lock);
		ndk_lock_destroy(&dp->rx_lock);
		dp_release(dp);
		return ret;
	}
	sw_cq_add_poller(dp->qp.rcq, &dp->rpoll);
	if (dp->qp.icq != dp->qp.rcq)
		sw_cq_add_poller(dp->qp.icq, &dp->ipoll);
	if (s->unsent_len) {
		memcpy(dp->sock.handover, s->unsent, s->unsent_len);
		ndk_lock(&dp->lock);
		sw_dp_send_raw_locked(dp, dp->sock.handover, s->unsent_len);
		ndk_unlock(&dp->lock);
	}
	*out = dp;
	return 0;
}

void sw_dp_detach(struct sw_dp *dp)
{
	bool queue = false;

	ndk_lock(&dp->lock);
	if (dp->state == SW_DP_DETACHED) {
		ndk_unlock(&dp->lock);
		return;
	}
	sw_dp_set_state_locked(dp, SW_DP_DETACHED);
	dp->tx.left = 0;
	/*
	 * A handler may be running or about to run for this socket on the
	 * engine (an event already fetched): off the engine, the socket is
	 * closed there, after it. Once unregistered (at the end of the
	 * stream, on the engine) no handler can run any more.
	 */
	if (!dp->sock.io_registered || ndk_engine_on_thread(dp->sock.engine)) {
		dp_close_socket_locked(dp);
	} else {
		sw_dp_epoll_leave_locked(dp);
		queue = true;
	}
	ndk_unlock(&dp->lock);
	sw_cq_del_poller(dp->qp.rcq, &dp->rpoll);
	sw_cq_del_poller(dp->qp.icq, &dp->ipoll);
	if (!queue)
		return;
	ndk_obj_get(dp->qp.obj);
	if (!ndk_engine_post(dp->sock.engine, &dp->sock.close_work)) {
		/* The engine thread is gone: no handler can run. */
		ndk_lock(&dp->lock);
		dp_close_socket_locked(dp);
		ndk_unlock(&dp->lock);
		ndk_obj_put(dp->qp.obj);
	}
}

void sw_dp_free(struct sw_dp *dp)
{
	if (!dp)
		return;
	sw_dp_traffic(dp, &dp->tx.traffic, true, 0, 0, true);
	sw_dp_traffic(dp, &dp->rx_traffic, false, 0, 0, true);
	if (dp->sock.fd >= 0)
		close(dp->sock.fd); /* never detached: no engine to sync with */
	ndk_lock_destroy(&dp->lock);
	ndk_lock_destroy(&dp->rx_lock);
	dp_release(dp);
}

void sw_dp_shutdown(struct sw_dp *dp)
{
	ndk_lock(&dp->lock);
	/* Our FIN comes after the bytes a post held back. */
	sw_dp_tx_release_locked(dp);
	if (dp->state != SW_DP_DETACHED)
		shutdown(dp->sock.fd, SHUT_WR);
	ndk_unlock(&dp->lock);
}

bool sw_dp_nudge(struct sw_dp *dp)
{
	uint64_t rx;
	bool sent = false;

	ndk_lock(&dp->lock);
	if (sw_dp_attached(dp) && dp->sock.nudge_mark_ok &&
	    !sw_tcp_bytes_received(dp->sock.fd, &rx) &&
	    rx != dp->sock.nudge_mark)
		ndk_dbg("qp %p: peer spoke after the RTR, no nudge",
			(void *)dp->qp.obj);
	else
		/* Between FPDUs only; the writer finishes it on EPOLLOUT if
		 * the socket takes only part. */
		sent = sw_dp_send_rtr_locked(dp, MPA_RTR_WRITE);
	ndk_unlock(&dp->lock);
	return sent;
}

/*
 * The receive the data path is filling completes as cancelled, so it and
 * every receive behind it flush: whether the stream ended mid-message
 * (NDK_FN_DISCONNECT_EVENT_CALLBACK) or goes on, where a peer that
 * stopped mid-Send would otherwise hold them for as long as it says
 * nothing (docs/ndk.md, Flush). rx_lock waits for a receive pass in
 * progress; on a live connection the rest of that Send is dropped.
 */
static void dp_release_rx(struct sw_dp *dp)
{
	struct sw_rqe *rqe = NULL;

	ndk_lock(&dp->rx_lock);
	ndk_lock(&dp->lock);
	if (dp->rx)
		rqe = sw_dp_rx_release(dp);
	ndk_unlock(&dp->lock);
	ndk_unlock(&dp->rx_lock);
	if (rqe)
		sw_rq_complete(dp->qp.rq, rqe, STATUS_CANCELLED, 0,
			       NdkOperationTypeReceive, 0, false);
}

void sw_dp_flush(struct sw_dp *dp)
{
	dp_release_rx(dp);
	sw_dp_tx_flush(dp);
}
