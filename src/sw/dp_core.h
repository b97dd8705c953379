/* SPDX-License-Identifier: MIT */
/*
 * The data path's shared core: struct sw_dp, its state, the initiator
 * queue's ring and completions, the socket's epoll interest and the
 * traffic counters. Receive (dp_rx.c) and transmit (dp_tx.c) each build
 * on this and never call each other; dp.c, above both, owns the
 * connection's lifecycle and socket (docs/design.md, Sockets).
 *
 * Locking (docs/design.md, Locks): rx_lock is held while a receive pass
 * runs (engine or a polling consumer); lock protects the initiator queue,
 * the ORQ and IRQ, the transmit batch and the state. Posting threads, the
 * engine's receive path and EPOLLOUT all transmit under lock; socket
 * writes are non-blocking, so it is held for short times only. Levels
 * NDK_LOCK_DP_RX and NDK_LOCK_DP (core/lock.h): rx_lock before lock.
 */
#ifndef SW_DP_CORE_H
#define SW_DP_CORE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>
#include <ndk/ndk.h>
#include "core/lock.h"
#include "engine/engine.h"
#include "front/object.h"
#include "iwarp/fpdu.h"
#include "sw/cq.h"
#include "sw/rq.h"
#include "sw/stag.h"

struct ndk_adapter;

enum sw_wqe_op {
	SW_WQE_SEND,
	SW_WQE_WRITE,
	SW_WQE_READ,
	SW_WQE_BIND,
	SW_WQE_FAST_REGISTER,
	SW_WQE_INVALIDATE,
};

enum sw_wqe_state {
	SW_WQE_QUEUED, /* not started */
	SW_WQE_ACTIVE, /* being transmitted */
	SW_WQE_WAIT_RESPONSE, /* Read Request sent, response pending */
	SW_WQE_DONE, /* finished; completes once those before it did */
};

/* One initiator work request (a slot of the SQ ring). */
struct sw_wqe {
	uint8_t op; /* enum sw_wqe_op */
	uint8_t state; /* enum sw_wqe_state */
	bool inline_data; /* payload copied into data[] at post time */
	uint32_t nsge;
	ULONG flags;
	PVOID ctx;
	NTSTATUS status;
	uint32_t length; /* payload bytes */
	uint32_t done_bytes; /* sent (Send, Write) or placed (Read) */
	/* Send, Write: where done_bytes falls in the SGL (the SGE and the
	 * bytes of it already sent), so each FPDU starts there. */
	uint32_t cur_sge, cur_off;
	uint32_t stag; /* remote STag (Write, Read) or invalidate STag */
	uint64_t addr; /* remote address (Write, Read) */
	void *obj; /* Bind: MW; FastRegister/Invalidate: MR or MW header */
	void *obj2; /* Bind: MR */
	uint64_t va, len; /* Bind, FastRegister */
	const NDK_LOGICAL_ADDRESS *pages; /* FastRegister */
	uint32_t npages, fbo;
	NDK_SGE sge[]; /* max_sge SGEs, or inline bytes */
};

/* An inbound Read Request being answered (RFC 5040 4.4, the IRQ). */
struct sw_irqe {
	uint32_t sink_stag;
	uint64_t sink_to;
	uint32_t src_stag;
	uint64_t src_to;
	uint32_t length;
	uint32_t sent;
	uint32_t msn; /* of its Read Request, for a Terminate to quote */
};

/* Receive-side state of the message in progress (dp_rx.c). */
struct sw_dp_rx;

/*
 * RDMA traffic not yet added to the adapter's machine-wide counters
 * (OID_NDK_STATISTICS): they are shared atomics, so they are added per
 * batch, not per FPDU.
 */
struct sw_dp_traffic {
	uint64_t octets;
	uint32_t frames;
};

/* FPDUs and iovecs one transmit batch holds (one sendmsg when the socket
 * takes it all); an FPDU needs at most SW_TX_FPDU_IOV iovecs. */
#define SW_TX_BATCH    64
#define SW_TX_IOV      256
#define SW_TX_FPDU_IOV 20
/* A batch stops growing at this many bytes (one busy QP does not hold
 * the lock for long, and its requests complete as they go). */
#define SW_TX_BATCH_BYTES (256 * 1024)
/* A Send or Write of at most this many bytes, with nothing before it,
 * is copied into one FPDU and written with one send (dp_tx.c). */
#define SW_TX_SMALL 512

/* One FPDU of the transmit batch. */
struct sw_dp_txrec {
	uint32_t len; /* bytes on the wire */
	uint16_t iov_end; /* its iovecs end here */
	bool fin; /* its last byte completes request fin_idx */
	uint32_t fin_idx;
	uint8_t open; /* SW_TX_OPEN_*: the stream's open messages after it */
};

/* A message of that kind has segments out but not its last (L) one. */
#define SW_TX_OPEN_TAGGED   1u
#define SW_TX_OPEN_UNTAGGED 2u

/*
 * The data path's state. It owns the socket in every state and closes it
 * when it is detached.
 *   ATTACHED  reads and writes FPDUs, watched by the engine;
 *   ENDED     the stream is over (end of stream, reset, or a Terminate
 *             sent or received) and was reported to the connection
 *             manager: no more I/O, the socket stays open until detached
 *             (closing it with unread data would reset the connection);
 *   DETACHED  the connection manager let go: the socket is closed (or its
 *             close is queued on the engine).
 */
enum sw_dp_state {
	SW_DP_ATTACHED,
	SW_DP_ENDED,
	SW_DP_DETACHED,
	SW_DP_STATE_COUNT
};

/* The QP a data path serves: what it reads of it, fixed at attach. */
struct sw_dp_qp {
	struct ndk_obj *obj; /* the QP: references, adapter, pollers */
	struct sw_rq *rq; /* where incoming Sends find their receives */
	struct sw_cq *rcq, *icq;
	PVOID context; /* QPContext of every completion */
	uint32_t pd_id; /* every STag checked is the QP's PD's */
	uint32_t sq_depth; /* InitiatorQueueDepth */
	uint32_t max_sge; /* MaxInitiatorRequestSge */
	uint32_t inline_size; /* InlineDataSize */
};

/* The connection manager's callback: the stream ended with err (-EPIPE
 * end of stream, -ECONNRESET..., -EPROTO a Terminate). Engine thread, no
 * data-path lock held; called once. */
typedef void (*sw_dp_end_fn)(void *ctx, int err);

/* The socket, owned from attach on (docs/design.md, Sockets). */
struct sw_dp_sock {
	int fd;
	struct ndk_engine *engine;
	struct ndk_io io;
	bool io_registered; /* the engine may run io's handler */
	/* The socket is in the epoll set. A polling consumer with nothing to
	 * send takes it out: an entry, even one asking for no events, puts
	 * a wake-up walk on every segment that arrives (docs/design.md). */
	bool in_epoll;
	bool want_out; /* EPOLLOUT is armed */
	sw_dp_end_fn end_fn;
	void *end_ctx;
	struct ndk_work close_work; /* closes the socket on the engine */
	uint64_t nudge_mark; /* peer bytes at attach (RTR nudge) */
	bool nudge_mark_ok;
	uint8_t *handover; /* handshake bytes the connector had not sent */
};

/* The initiator queue: done <= next <= tail, free-running. */
struct sw_dp_sq {
	unsigned char *ring;
	uint32_t size, depth, stride;
	uint32_t done, next, tail;
	/* Requests before rung may go; later ones were posted with
	 * NDK_OP_FLAG_DEFER and wait for the end of their chain. */
	uint32_t rung;
	uint32_t reads_out; /* Read Requests awaiting responses (ORQ) */
	/* 1 while our Read RTR awaits its zero-length Response: it holds
	 * an ORD slot like any Read (RFC 6581 3). */
	uint32_t rtr_read_out;
	uint32_t orq_head; /* SQ index of the oldest outstanding Read */
};

/* The IRQ: inbound Read Requests, answered in order. */
struct sw_dp_irq {
	struct sw_irqe *ring;
	uint32_t head, tail; /* free-running, at most ird apart */
};

/*
 * Transmit: a batch of FPDUs gathered from their pieces (header and
 * trailer here, payload straight from registered memory), written with as
 * few sendmsg calls as the socket takes. rec[] says where each FPDU ends
 * and which request its last byte completes.
 */
struct sw_dp_tx {
	int iovcnt; /* iovecs in the batch */
	int iov_pos; /* first iovec not all written */
	uint32_t nrec; /* FPDUs in the batch */
	uint32_t rec_pos; /* first FPDU not all written */
	size_t rec_left; /* its bytes still to write */
	size_t left; /* bytes of the batch still to write */
	uint8_t ctrl[FPDU_HDR_MAX + FPDU_TRAILER_MAX]; /* an extra RTR */
	/* A small request's FPDU, built whole (dp_tx.c, tx_small). */
	uint8_t small[FPDU_HDR_MAX + SW_TX_SMALL + FPDU_TRAILER_MAX];
	uint32_t msn_send; /* next MSN for QN 0 (RFC 5041 5.1) */
	uint32_t msn_readreq; /* next MSN for QN 1 */
	uint8_t term[FPDU_HDR_MAX + RDMAP_TERM_BODY_MAX + FPDU_TRAILER_MAX];
	size_t term_len;
	bool terminated; /* no FPDU after a Terminate */
	/* SW_TX_OPEN_* after the last FPDU built: a stream cut there would
	 * leave those messages without their last segment. */
	uint8_t open;
	/* Ended with the batch (a Terminate) not all written: the engine
	 * writes the rest on EPOLLOUT, then the FIN (dp.c, dp_end). */
	bool drain;
	/* The first sendmsg error. sendmsg consumes the socket's error
	 * (ETIMEDOUT after TCP_USER_TIMEOUT), so the receiver then sees only
	 * the end of the stream: this says why it ended. */
	int error;
	/*
	 * The tail hold (dp_tx.c, "The tail hold"): bytes past the last
	 * whole segment of a streaming consumer's batch wait for its next
	 * post. held_hint (struct sw_dp) mirrors held for the poll.
	 */
	bool held;
	uint8_t streak; /* posts since the consumer's last empty poll */
	uint64_t polls_at_post; /* dp->polls at the last post */
	uint32_t seg; /* the socket's MSS as last read (TCP_MAXSEG) */
	uint32_t seg_age; /* held writes since it was read */
	uint32_t holds, holds_seen; /* tails held; as the backstop saw */
	struct sw_dp_traffic traffic;
	/* The source of the FPDUs being built (dp_tx.c, tx_src): the rest
	 * of one SGE or Read Response, looked up and pinned once per batch
	 * rather than once per FPDU. src_key names it; NULL: none. */
	struct sw_stag_ref src;
	const void *src_key;
	uint32_t src_token;
	/* Last: a batch's arrays, which a small request does not touch. */
	uint8_t hdr[SW_TX_BATCH][FPDU_HDR_MAX];
	uint8_t trl[SW_TX_BATCH][FPDU_TRAILER_MAX];
	struct iovec iov[SW_TX_IOV];
	struct sw_dp_txrec rec[SW_TX_BATCH];
};

struct sw_dp {
	struct sw_dp_qp qp;
	struct ndk_adapter *ad;
	/* The adapter's, copied here: the data path reads them on every
	 * request, and the adapter lies on another page. */
	struct sw_stag_table *stags;
	uint32_t max_transfer; /* MaxTransferLength */
	struct ndk_lock lock;
	enum sw_dp_state state; /* under lock; sw_dp_set_state_locked */
	bool crc;
	bool tx_hold; /* NDK_TX_HOLD: the tail hold may run */
	uint32_t mulpdu; /* largest ULPDU per FPDU (RFC 5044 MULPDU) */
	uint32_t ird, ord;
	uint32_t frame_overhead; /* estimated L2-L4 header bytes per frame */
	uint32_t mss; /* the connection's, when it was established */

	/* Under lock. */
	struct sw_dp_sock sock;
	struct sw_dp_sq sq;
	struct sw_dp_irq irq;

	/* Receive: rx_lock is held while a pass runs, so a QP close on
	 * another thread cannot take the receive being filled. */
	struct ndk_lock rx_lock;
	struct sw_dp_rx *rx;
	struct sw_dp_traffic rx_traffic; /* under rx_lock */
	/* The receive pass queued work for the transmitter (a Terminate, a
	 * Read Response to send, ORQ room): under rx_lock and lock. */
	bool rx_wants_tx;

	/* Consumer-driven receive (cq.h): a poller on each CQ; an error met
	 * there is handed to the engine, which ends the connection. */
	struct sw_cq_poller rpoll, ipoll;
	int rx_error; /* under rx_lock */
	struct ndk_work rx_error_work;
	/* The transmitter queued a Terminate (dp_tx.c, tx_fault): the
	 * engine ends the connection. */
	struct ndk_work tx_fault_work;
	/*
	 * Who receives. The engine watches EPOLLIN unless a consumer
	 * busy-polls this connection's CQ (rx_consumer): then the engine
	 * thread is not woken per message, which on few cores costs more
	 * than the message. NdkArmCq, an error, or a consumer that stopped
	 * polling (the backstop timer: 1 ms, backing off to 8 ms while the
	 * consumer polls) hand it back. The same timer bounds how long a
	 * post's tail is held (dp_tx.c, "The tail hold").
	 */
	bool rx_consumer; /* under lock */
	/* rx_consumer for the consumer's poll, read without the lock: a
	 * stale value costs one clock read or one claim attempt. */
	_Atomic bool rx_consumer_hint;
	/* tx.held, read by the consumer's poll without the lock. */
	_Atomic bool tx_held_hint;
	/* The pollers stay claimed for the tail hold, so that NdkArmCq
	 * sends what it holds: under lock. */
	bool arm_watch;
	bool backstop_armed; /* under lock; holds a QP reference */
	unsigned int backstop_ms; /* the next tick's delay, under lock */
	struct ndk_timer backstop;
	/* Consumer polls so far (written under rx_lock), and as the
	 * backstop last saw them: an empty poll counts instead of reading
	 * the clock. */
	_Atomic uint64_t polls;
	uint64_t polls_seen; /* under lock */
	unsigned int poll_streak; /* recent consumer passes, under rx_lock */
	uint64_t streak_start_ns; /* under rx_lock */
	/* The receive gate (dp_rx.c, rx_gate): a consumer's poll
	 * reads the socket again only from this time on; 0: open. Set and
	 * cleared under rx_lock, read before it. */
	_Atomic uint64_t rx_gate_ns;
	uint32_t rx_gate_ns_max; /* NDK_RX_GATE_NS; 0: never gated */

	/* Under lock. Last: its batch arrays are most of this structure. */
	struct sw_dp_tx tx;
};

/* The one state setter: checks the transition table (asserts in debug
 * builds, logs both states). lock held. */
void sw_dp_set_state_locked(struct sw_dp *dp, enum sw_dp_state to);

/* A post is to hold a tail: the backstop runs and NdkArmCq will send
 * it. False if it cannot. lock held. */
bool sw_dp_hold_watch_locked(struct sw_dp *dp);
const char *sw_dp_state_name(enum sw_dp_state state);

static inline bool sw_dp_attached(const struct sw_dp *dp)
{
	return dp->state == SW_DP_ATTACHED;
}

/* The same without the lock, for a receive pass (rx_lock held): the
 * state may change right after, as it may after the lock is dropped. */
static inline bool sw_dp_attached_unlocked(const struct sw_dp *dp)
{
	return __atomic_load_n(&dp->state, __ATOMIC_ACQUIRE) == SW_DP_ATTACHED;
}

/* The SQ ring slot of free-running index idx. */
static inline struct sw_wqe *sw_dp_sq_slot(struct sw_dp *dp, uint32_t idx)
{
	return (struct sw_wqe *)(void *)(dp->sq.ring +
					 (size_t)(idx & (dp->sq.size - 1)) *
						 dp->sq.stride);
}

/* Pushes the completions of finished initiator requests, oldest first
 * (per-QP order); lock held. */
void sw_dp_complete_locked(struct sw_dp *dp);

/*
 * Accounts octets and frames sent or received, adding them to the
 * adapter's counters once a batch is full or when flush is set. The
 * caller holds the lock that protects t.
 */
void sw_dp_traffic(struct sw_dp *dp, struct sw_dp_traffic *t, bool out,
		   uint64_t octets, uint32_t frames, bool flush);
/* The TCP segments (frames) an FPDU of fpdu_len bytes takes: one, or one
 * per MSS for a large FPDU (docs/wire.md, Large FPDUs). */
uint32_t sw_dp_fpdu_frames(const struct sw_dp *dp, size_t fpdu_len);

/* Takes the socket out of the epoll set if it is in it (io_registered
 * stays: a handler already fetched may still run). Lock held. */
void sw_dp_epoll_leave_locked(struct sw_dp *dp);

/* Puts the socket in the epoll set for ev (events other than none), or
 * changes what it waits for there. Lock held. 0 or a negative errno. */
int sw_dp_epoll_watch_locked(struct sw_dp *dp, uint32_t ev);

/* Sets the socket's epoll interest from rx_consumer and want_out: no
 * interest takes it out of the set, some puts it back. Lock held,
 * attached only. */
void sw_dp_interest_locked(struct sw_dp *dp);

/* Arms or disarms EPOLLOUT (a partial write waits for room); lock held. */
void sw_dp_want_out_locked(struct sw_dp *dp, bool on);

/*
 * Queues t as the stream's Terminate (RFC 5040 5.2: one, and nothing
 * after it) unless one is queued or sent already. It goes out at the next
 * FPDU boundary. Lock held. Returns whether it was queued.
 */
bool sw_dp_term_queue_locked(struct sw_dp *dp, const struct rdmap_term *t);

/* The RDMAP remote protection code (RFC 5040 4.8) for a failed STag
 * lookup's errno (sw_stag_fault_of). */
unsigned int sw_dp_stag_rdmap_ecode(int err);

#endif /* SW_DP_CORE_H */
