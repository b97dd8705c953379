/* SPDX-License-Identifier: MIT */
/*
 * The QP data path: initiator queue, transmit and receive over one
 * established connection (RFC 5040 RDMAP, RFC 5041 DDP, RFC 5044 MPA).
 *
 * A QP gets a struct ndk_dp when its connection is established. The
 * connector keeps owning the socket and its epoll registration; it hands
 * readiness to ndk_dp_io() and calls ndk_dp_detach() before it closes the
 * socket.
 *
 * Locking: dp->lock protects the initiator queue, the ORQ and IRQ and the
 * transmit state. Posting threads, the engine's receive path and EPOLLOUT
 * all transmit under it; socket writes are non-blocking, so it is held for
 * short times only. The receive parser state is the engine thread's own.
 * Lock order: connector lock, dp->lock, receive-queue lock, CQ lock.
 */
#ifndef NDK_QP_DP_H
#define NDK_QP_DP_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>
#include <ndk/ndk.h>
#include "engine/engine.h"
#include "iwarp/fpdu.h"
#include "qp/cq.h"

struct ndk_qp;

enum ndk_wqe_op {
	NDK_WQE_SEND,
	NDK_WQE_WRITE,
	NDK_WQE_READ,
	NDK_WQE_BIND,
	NDK_WQE_FAST_REGISTER,
	NDK_WQE_INVALIDATE,
};

enum ndk_wqe_state {
	NDK_WQE_QUEUED, /* not started */
	NDK_WQE_ACTIVE, /* being transmitted */
	NDK_WQE_WAIT_RESPONSE, /* Read Request sent, response pending */
	NDK_WQE_DONE, /* finished; completes once those before it did */
};

/* One initiator work request (a slot of the SQ ring). */
struct ndk_wqe {
	uint8_t op; /* enum ndk_wqe_op */
	uint8_t state; /* enum ndk_wqe_state */
	bool inline_data; /* payload copied into data[] at post time */
	uint32_t nsge;
	ULONG flags;
	PVOID ctx;
	NTSTATUS status;
	uint32_t length; /* payload bytes */
	uint32_t done_bytes; /* sent (Send, Write) or placed (Read) */
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
struct ndk_irqe {
	uint32_t sink_stag;
	uint64_t sink_to;
	uint32_t src_stag;
	uint64_t src_to;
	uint32_t length;
	uint32_t sent;
};

/* Receive-side state of the message in progress. */
struct ndk_dp_rx;

/*
 * RDMA traffic not yet added to the adapter's machine-wide counters
 * (OID_NDK_STATISTICS): they are shared atomics, so they are added per
 * batch, not per FPDU.
 */
struct ndk_dp_traffic {
	uint64_t octets;
	uint32_t frames;
};

/* FPDUs and iovecs one transmit batch holds (one sendmsg when the socket
 * takes it all); an FPDU needs at most NDK_TX_FPDU_IOV iovecs. */
#define NDK_TX_BATCH	16
#define NDK_TX_IOV	64
#define NDK_TX_FPDU_IOV 20
/* A batch stops growing at this many bytes (one busy QP does not hold
 * the lock for long, and its requests complete as they go). */
#define NDK_TX_BATCH_BYTES (256 * 1024)

/* One FPDU of the transmit batch. */
struct ndk_dp_txrec {
	uint32_t len; /* bytes on the wire */
	uint16_t iov_end; /* its iovecs end here */
	bool fin; /* its last byte completes request fin_idx */
	uint32_t fin_idx;
};

struct ndk_dp {
	struct ndk_qp *qp;
	pthread_mutex_t lock;
	bool attached; /* false once the connection is gone */
	int fd;
	struct ndk_engine *engine;
	struct ndk_io *io; /* the connector's registration */
	bool want_out; /* EPOLLOUT is armed */
	bool crc;
	uint32_t mulpdu; /* largest ULPDU per FPDU (RFC 5044 MULPDU) */
	uint32_t ird, ord;

	/* Initiator queue: done <= next <= tail, free-running. */
	unsigned char *sq;
	uint32_t sq_size, sq_depth, sq_stride;
	uint32_t sq_done, sq_next, sq_tail;
	/* Requests before sq_rung may go; later ones were posted with
	 * NDK_OP_FLAG_DEFER and wait for the end of their chain. */
	uint32_t sq_rung;
	uint32_t reads_out; /* Read Requests awaiting responses (ORQ) */
	uint32_t orq_head; /* SQ index of the oldest outstanding Read */

	/* IRQ: inbound Read Requests, answered in order. */
	struct ndk_irqe *irq;
	uint32_t irq_head, irq_tail; /* free-running, at most ird apart */

	/*
	 * Transmit: a batch of FPDUs gathered from their pieces (header and
	 * trailer here, payload straight from registered memory), written
	 * with as few sendmsg calls as the socket takes. tx_rec[] says where
	 * each FPDU ends and which request its last byte completes.
	 */
	uint8_t tx_hdr[NDK_TX_BATCH][FPDU_HDR_MAX];
	uint8_t tx_trl[NDK_TX_BATCH][FPDU_TRAILER_MAX];
	struct iovec tx_iov[NDK_TX_IOV];
	struct ndk_dp_txrec tx_rec[NDK_TX_BATCH];
	int tx_iovcnt; /* iovecs in the batch */
	int tx_iov_pos; /* first iovec not all written */
	uint32_t tx_nrec; /* FPDUs in the batch */
	uint32_t tx_rec_pos; /* first FPDU not all written */
	size_t tx_rec_left; /* its bytes still to write */
	size_t tx_left; /* bytes of the batch still to write */
	uint8_t tx_ctrl[FPDU_HDR_MAX + FPDU_TRAILER_MAX]; /* an extra RTR */
	uint32_t msn_send; /* next MSN for QN 0 (RFC 5041 5.1) */
	uint32_t msn_readreq; /* next MSN for QN 1 */
	uint8_t term[FPDU_HDR_MAX + RDMAP_TERM_BODY_MAX + FPDU_TRAILER_MAX];
	size_t term_len;
	bool terminated; /* no FPDU after a Terminate */
	struct ndk_dp_traffic tx_traffic; /* under lock */
	uint32_t frame_overhead; /* estimated L2-L4 header bytes per FPDU */

	/* Receive: rx_lock is held while the engine receives, so a QP close
	 * on another thread cannot take the receive being filled. */
	pthread_mutex_t rx_lock;
	struct ndk_dp_rx *rx;
	struct ndk_dp_traffic rx_traffic; /* under rx_lock */

	/* Consumer-driven receive (cq.h): a poller on each CQ; an error met
	 * there is handed to the engine, which ends the connection. */
	struct ndk_cq_poller rpoll, ipoll;
	int rx_error; /* under rx_lock */
	struct ndk_work rx_error_work;
	/*
	 * Who receives. The engine watches EPOLLIN unless a consumer
	 * busy-polls this connection's CQ (rx_consumer): then the engine
	 * thread is not woken per message, which on few cores costs more
	 * than the message. NdkArmCq, an error, or a consumer that stopped
	 * polling (the backstop timer, every millisecond) hand it back.
	 */
	bool rx_consumer; /* under lock */
	bool backstop_armed; /* under lock; holds a QP reference */
	struct ndk_timer backstop;
	_Atomic uint64_t last_poll_ns;
	unsigned int poll_streak; /* recent consumer passes, under rx_lock */
	uint64_t streak_start_ns; /* under rx_lock */
};

/*
 * Creates the data path of a connected QP; the socket is the connector's.
 * Returns 0 or -ENOMEM.
 */
int ndk_dp_attach(struct ndk_qp *qp, int fd, int family,
		  struct ndk_engine *engine, struct ndk_io *io, bool crc,
		  uint32_t ird, uint32_t ord);
/* The connection is going away: no more socket use. Any thread. */
void ndk_dp_detach(struct ndk_qp *qp);
/* Cancels a receive left half-filled by a connection that ended. */
void ndk_dp_release_rx(struct ndk_qp *qp);
/* Frees the data path (QP destroy). */
void ndk_dp_free(struct ndk_qp *qp);
/*
 * Engine thread, from the connector's handler: socket readiness. Returns
 * 0, or a negative errno when the connection ended: -EPIPE (peer closed),
 * -ECONNRESET..., -EPROTO (a Terminate was sent or received).
 */
int ndk_dp_io(struct ndk_qp *qp, uint32_t events);

/* Work-request entry points (QP dispatch slots), connected QPs only. */
NTSTATUS ndk_dp_post_send(struct ndk_qp *qp, PVOID ctx, const NDK_SGE *sgl,
			  ULONG nsge, ULONG flags, bool invalidate,
			  UINT32 inv_stag);
NTSTATUS ndk_dp_post_rdma(struct ndk_qp *qp, enum ndk_wqe_op op, PVOID ctx,
			  const NDK_SGE *sgl, ULONG nsge, UINT64 addr,
			  UINT32 stag, ULONG flags);
NTSTATUS ndk_dp_post_bind(struct ndk_qp *qp, PVOID ctx, NDK_MR *mr, NDK_MW *mw,
			  PVOID va, SIZE_T len, ULONG flags);
NTSTATUS ndk_dp_post_fast_register(struct ndk_qp *qp, PVOID ctx, NDK_MR *mr,
				   ULONG count,
				   const NDK_LOGICAL_ADDRESS *pages, ULONG fbo,
				   SIZE_T len, PVOID base, ULONG flags);
NTSTATUS ndk_dp_post_invalidate(struct ndk_qp *qp, PVOID ctx,
				NDK_OBJECT_HEADER *obj, ULONG flags);
/* Completes every initiator request with STATUS_CANCELLED, in order. */
void ndk_dp_flush(struct ndk_qp *qp);

/*
 * Accounts octets and whole FPDUs (frames) sent or received, adding them
 * to the adapter's counters once a batch is full or when flush is set.
 * The caller holds the lock that protects t.
 */
void ndk_dp_traffic(struct ndk_dp *dp, struct ndk_dp_traffic *t, bool out,
		    uint64_t octets, uint32_t frames, bool flush);

/* Sets the socket's epoll interest from rx_consumer and want_out; dp->lock
 * held, attached only. */
void ndk_dp_interest_locked(struct ndk_dp *dp);

/* Pushes the completions of finished initiator requests, oldest first
 * (per-QP order); dp->lock held. */
void ndk_dp_complete_locked(struct ndk_dp *dp);

/* Transmit whatever can go; dp->lock held. */
void ndk_dp_tx_locked(struct ndk_dp *dp);

/* Sends the requests posted with NDK_OP_FLAG_DEFER so far: an initiator
 * request failed inline, so no request ends their chain (ndkpi.md 9.5). */
void ndk_dp_kick(struct ndk_qp *qp);

/*
 * Queues one more zero-length RDMA Write RTR (RFC 6581) between FPDUs and
 * sends it; false if the data path is busy, ending or could not build
 * it. dp->lock held.
 */
bool ndk_dp_send_rtr_locked(struct ndk_dp *dp, enum mpa_rtr type);

#endif /* NDK_QP_DP_H */
