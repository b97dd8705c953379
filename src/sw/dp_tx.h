/* SPDX-License-Identifier: MIT */
/*
 * The data path's transmit side: the initiator queue's work requests and
 * the FPDUs they become (RFC 5040 RDMAP over RFC 5041 DDP over RFC 5044
 * MPA), Read Responses for the IRQ, Terminates, and the RTR frames.
 */
#ifndef SW_DP_TX_H
#define SW_DP_TX_H

#include <stdbool.h>
#include <stddef.h>
#include <ndk/ndk.h>
#include "iwarp/mpa.h"
#include "sw/dp_core.h"

/*
 * Work-request entry points (QP dispatch slots). The QP checked that it
 * is connected; a data path no longer attached answers
 * STATUS_CONNECTION_INVALID.
 */
NTSTATUS sw_dp_post_send(struct sw_dp *dp, PVOID ctx, const NDK_SGE *sgl,
			 ULONG nsge, ULONG flags, bool invalidate,
			 UINT32 inv_stag);
NTSTATUS sw_dp_post_rdma(struct sw_dp *dp, enum sw_wqe_op op, PVOID ctx,
			 const NDK_SGE *sgl, ULONG nsge, UINT64 addr,
			 UINT32 stag, ULONG flags);
NTSTATUS sw_dp_post_bind(struct sw_dp *dp, PVOID ctx, NDK_MR *mr, NDK_MW *mw,
			 PVOID va, SIZE_T len, ULONG flags);
NTSTATUS sw_dp_post_fast_register(struct sw_dp *dp, PVOID ctx, NDK_MR *mr,
				  ULONG count, const NDK_LOGICAL_ADDRESS *pages,
				  ULONG fbo, SIZE_T len, PVOID base,
				  ULONG flags);
NTSTATUS sw_dp_post_invalidate(struct sw_dp *dp, PVOID ctx,
			       NDK_OBJECT_HEADER *obj, ULONG flags);

/* Sends the requests posted with NDK_OP_FLAG_DEFER so far: an initiator
 * request failed inline, so no request ends their chain (docs/ndk.md,
 * "Deferred processing"). */
void sw_dp_kick(struct sw_dp *dp);

/* Completes every initiator request not finished with STATUS_CANCELLED,
 * in order; an FPDU half written is finished, the rest dropped. */
void sw_dp_tx_flush(struct sw_dp *dp);

/* Transmits whatever can go: a pending Terminate first, then batches of
 * FPDUs, while the socket takes data. lock held. */
void sw_dp_tx_locked(struct sw_dp *dp);

/* Writes the bytes a post held back, if any (dp_tx.c, "The tail hold"):
 * before a FIN or another frame, or when the consumer stops posting. lock
 * held. */
void sw_dp_tx_release_locked(struct sw_dp *dp);

/* After the end: writes what is left of the batch (the rest of an FPDU,
 * the Terminate). True once nothing is left or the socket failed; false
 * while it waits for room. lock held. */
bool sw_dp_tx_drain_locked(struct sw_dp *dp);

/*
 * Writes a frame built elsewhere (an RTR, the rest of a handshake frame)
 * between FPDUs; false if the data path is busy or ending. buf must stay
 * valid until it is out. lock held.
 */
bool sw_dp_send_raw_locked(struct sw_dp *dp, void *buf, size_t len);

/* One more zero-length RDMA Write RTR (RFC 6581 3) of the given type. */
bool sw_dp_send_rtr_locked(struct sw_dp *dp, enum mpa_rtr type);

#endif /* SW_DP_TX_H */
