/* SPDX-License-Identifier: MIT */
/*
 * QP data path, receive side: placement of incoming Sends, RDMA Writes and
 * Read Responses, Read Requests queued for the transmitter, and
 * Terminates (RFC 5040, RFC 5041). A pass runs under rx_lock on the
 * engine thread or on a consumer's thread that polls a CQ (docs/design.md,
 * "Consumer-driven receive"); it never transmits itself, it flags
 * dp->rx_wants_tx and dp.c sends after the pass. Incoming data is placed
 * in ascending address order by the provider alone.
 *
 * Every tagged placement and every Read Request is checked against the
 * STag table (invalid STag, PD, access, base and bounds); a failure ends
 * the connection with a Terminate carrying the RFC 5041 / 5040 code, and
 * no byte is written outside the registered range.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include "core/log.h"
#include "engine/engine.h"
#include "front/adapter.h"
#include "iwarp/fpdu.h"
#include "iwarp/mpa.h"
#include "sw/dp_rx.h"
#include "sw/dp_rx_int.h"
#include "sw/rq.h"
#include "sw/adapter.h"
#include "sw/stag.h"
#include "sw/sysio.h"

/*
 * Socket reads land in a buffer of the receiving thread, not of the
 * connection: nothing points into it once sw_dp_rx_bytes() returns (the parser
 * keeps partial headers itself, payload is placed at once), so one large
 * buffer per thread serves every connection (few syscalls per FPDU, and
 * no per-connection memory for it).
 */
static pthread_key_t rx_buf_key;
static pthread_once_t rx_buf_once = PTHREAD_ONCE_INIT;
/* Initial-exec: a pointer read at a fixed offset from the thread
 * pointer on every receive, not a call into the dynamic linker's TLS
 * lookup (and its pages). Eight bytes fit the static TLS that glibc
 * keeps for libraries that are dlopen()ed. */
static __thread uint8_t *rx_buf __attribute__((tls_model("initial-exec")));

static void rx_buf_key_init(void)
{
	pthread_key_create(&rx_buf_key, free);
}

static uint8_t *rx_thread_buf(void)
{
	if (likely(rx_buf))
		return rx_buf;
	pthread_once(&rx_buf_once, rx_buf_key_init);
	rx_buf = malloc(RX_BUF_SIZE);
	/* Freed when the thread exits. */
	if (rx_buf)
		pthread_setspecific(rx_buf_key, rx_buf);
	return rx_buf;
}

/* ------------------------------------------------------------------ */
/* Terminate                                                          */

/*
 * Queues a Terminate for cause about the current FPDU (RFC 5040 5.2) and
 * stops the data path; the caller reports -EPROTO so the connector ends
 * the connection.
 */
static int rx_fail(struct sw_dp *dp, unsigned int layer, unsigned int etype,
		   unsigned int ecode)
{
	struct iwarp_term_cause cause = { .layer = (uint8_t)layer,
					  .etype = (uint8_t)etype,
					  .ecode = (uint8_t)ecode };
	struct rdmap_term t;

	fpdu_rx_term(&dp->rx->parser, &cause, &t);
	ndk_lock(&dp->lock);
	if (sw_dp_term_queue_locked(dp, &t))
		dp->rx_wants_tx = true;
	ndk_unlock(&dp->lock);
	return -EPROTO;
}

/* A failed STag check: the RFC 5041 tagged-buffer code, or RFC 5040's
 * remote protection codes for a Read Request's source. */
static int rx_fail_stag(struct sw_dp *dp, int err, bool read_source)
{
	enum sw_stag_fault f = sw_stag_fault_of(err);

	if (read_source || f == SW_STAG_FAULT_ACCESS)
		return rx_fail(dp, TERM_LAYER_RDMAP, RDMAP_ETYPE_REMOTE_PROT,
			       sw_dp_stag_rdmap_ecode(err));
	return rx_fail(dp, TERM_LAYER_DDP, DDP_ETYPE_TAGGED,
		       f == SW_STAG_FAULT_INVALID_STAG ? DDP_TAGGED_INVALID_STAG
		       : f == SW_STAG_FAULT_BOUNDS     ? DDP_TAGGED_BASE_BOUNDS
		       : f == SW_STAG_FAULT_TO_WRAP
			       ? DDP_TAGGED_TO_WRAP
			       : DDP_TAGGED_STAG_NOT_ASSOC);
}

/* ------------------------------------------------------------------ */
/* Per FPDU                                                           */

/* The current Write FPDU's range (rx->hdr), checked and pinned: at its
 * header, and again if a pass ended since (sw_dp_rx_pass drops the pin),
 * when the MR may be gone, which ends the stream as any STag that names
 * nothing does. */
NDK_HOT int sw_dp_rx_write_ref(struct sw_dp *dp)
{
	struct sw_dp_rx *rx = dp->rx;
	void *addr;
	int ret;

	if (rx->have_ref)
		return 0;
	ret = sw_stag_lookup(dp->stags, rx->hdr.stag, dp->qp.pd_id, rx->hdr.to,
			     rx->parser.payload_len, SW_ACCESS_REMOTE_WRITE,
			     &rx->ref, &addr);
	if (ret)
		return rx_fail_stag(dp, ret, false);
	rx->have_ref = true;
	return 0;
}

/* The Write FPDU h, of payload len, goes where p predicts. */
static bool pred_holds(const struct rx_write_pred *p, const struct ddp_hdr *h,
		       uint32_t len)
{
	return p->valid && h->stag == p->stag && h->to == p->to &&
	       len <= p->max;
}

/* A prediction from a Write FPDU of len bytes into stag, whose CRC
 * held. */
static void pred_set(const struct sw_dp *dp, struct rx_write_pred *p,
		     uint32_t stag, uint64_t to, size_t len)
{
	p->valid = true;
	p->stag = stag;
	p->to = to;
	/* No longer than that FPDU, or than an FPDU of ours: a damaged
	 * length reaches no further than a sound one. */
	p->max = (uint16_t)MAX(len, fpdu_max_payload(dp->mulpdu, true));
}

/* A Send's first FPDU: the receive at the head of the RQ (or SRQ) becomes
 * the one being filled. False: none is posted. */
static bool rx_take_receive(struct sw_dp_rx *rx, struct sw_rq *rq)
{
	uint32_t i;

	rx->rqe = sw_rq_take(rq);
	if (!rx->rqe)
		return false;
	rx->recv_len = 0;
	for (i = 0; i < rx->rqe->nsge; i++)
		rx->recv_len += rx->rqe->sge[i].Length;
	rx->recv_bytes = 0;
	rx->recv_overflow = false;
	return true;
}

static NDK_HOT int rx_header(struct sw_dp *dp, const struct fpdu_ev *ev)
{
	struct sw_dp_rx *rx = dp->rx;
	const struct ddp_hdr *h = ev->hdr;
	int ret;

	rx->hdr = *h;
	rx->target = RX_NONE;
	rx->holding = false;
	switch (h->opcode) {
	case RDMAP_SEND:
	case RDMAP_SEND_SE:
	case RDMAP_SEND_INV:
	case RDMAP_SEND_SE_INV:
		/* Messages on QN 0 arrive in MSN order (RFC 5041 5.1). */
		if (h->msn != rx->msn_send)
			return rx_fail(dp, TERM_LAYER_DDP, DDP_ETYPE_UNTAGGED,
				       DDP_UNTAGGED_MSN_RANGE);
		if (rx->send_dropped) {
			/* Its segments still come in order; none is placed. */
			if (h->mo != rx->recv_bytes)
				return rx_fail(dp, TERM_LAYER_DDP,
					       DDP_ETYPE_UNTAGGED,
					       DDP_UNTAGGED_INVALID_MO);
			rx->target = RX_SEND_DROP;
			return 0;
		}
		if (h->mo == 0 && !rx->rqe && !rx_take_receive(rx, dp->qp.rq))
			return rx_fail(dp, TERM_LAYER_DDP, DDP_ETYPE_UNTAGGED,
				       DDP_UNTAGGED_MSN_NO_BUFFER);
		if (!rx->rqe || h->mo != rx->recv_bytes)
			return rx_fail(dp, TERM_LAYER_DDP, DDP_ETYPE_UNTAGGED,
				       DDP_UNTAGGED_INVALID_MO);
		rx->target = RX_SEND;
		return 0;
	case RDMAP_WRITE:
		/*
		 * A zero-length Write places nothing, so its STag is not
		 * looked up (as siw does): RFC 6581 RTRs and RTR nudges
		 * carry an arbitrary one.
		 */
		if (!ev->payload_len) {
			rx->target = RX_DISCARD;
			return 0;
		}
		ret = sw_dp_rx_write_ref(dp);
		if (ret)
			return ret;
		rx->target = RX_WRITE;
		/* A whole FPDU's CRC is already known. */
		rx->first = !rx->in_write;
		rx->in_write = !h->last;
		rx->holding = dp->crc && ev->type != FPDU_EV_WHOLE &&
			      !pred_holds(&rx->next, h, ev->payload_len) &&
			      !(rx->first &&
				pred_holds(&rx->again, h, ev->payload_len));
		if (rx->holding && !rx->hold) {
			rx->hold = malloc(MPA_ULPDU_MAX);
			if (!rx->hold)
				return rx_fail(dp, TERM_LAYER_LLP,
					       LLP_ETYPE_MPA,
					       MPA_ECODE_LOCAL_CATASTROPHIC);
		}
		return 0;
	case RDMAP_READ_RESP: {
		struct sw_wqe *w;
		bool rtr_answer;

		ndk_lock(&dp->lock);
		/* Responses come in request order: the first answers our
		 * Read RTR, with nothing (RFC 6581 3). Its ORD slot is free. */
		rtr_answer = dp->sq.rtr_read_out;
		if (rtr_answer && !ev->payload_len && h->last) {
			dp->sq.rtr_read_out = 0;
			dp->rx_wants_tx = true;
		}
		w = sw_dp_rx_orq_head(dp);
		ndk_unlock(&dp->lock);
		if (rtr_answer) {
			if (ev->payload_len || !h->last)
				return rx_fail(dp, TERM_LAYER_RDMAP,
					       RDMAP_ETYPE_REMOTE_OP,
					       RDMAP_ECODE_UNEXPECTED_OPCODE);
			rx->target = RX_DISCARD;
			return 0;
		}
		/* A response with no Read outstanding, or to the wrong sink,
		 * is an unexpected opcode (RFC 5040). */
		if (!w || (w->nsge && h->stag != w->sge[0].MemoryRegionToken))
			return rx_fail(dp, TERM_LAYER_RDMAP,
				       RDMAP_ETYPE_REMOTE_OP,
				       RDMAP_ECODE_UNEXPECTED_OPCODE);
		rx->target = RX_READ_RESP;
		return 0;
	}
	case RDMAP_READ_REQ:
		/* Not served before its CRC is checked: a corrupted size or
		 * address would send the wrong bytes. */
		rx->target = RX_READ_REQ;
		return 0;
	case RDMAP_TERMINATE:
		rx->target = RX_TERMINATE;
		rx->term_len = 0;
		return 0;
	default:
		return rx_fail(dp, TERM_LAYER_RDMAP, RDMAP_ETYPE_REMOTE_OP,
			       RDMAP_ECODE_UNEXPECTED_OPCODE);
	}
}

/* Up to this many bytes are placed under the STag table's read lock;
 * more are placed through a pin, so a deregistration does not wait. */
#define PLACE_COPY_MAX 4096

/* Copies len bytes to byte off of an SGE list (the receive's or the
 * Read's), checking each local SGE (docs/ndk.md, "Memory tokens"). */
static NDK_HOT int place_sgl(struct sw_dp *dp, const NDK_SGE *sge,
			     uint32_t nsge, uint64_t off, const uint8_t *data,
			     size_t len)
{
	uint32_t i;

	for (i = 0; i < nsge && len; i++) {
		uint64_t n, va;
		struct sw_stag_ref ref;
		void *addr;
		int ret;

		if (off >= sge[i].Length) {
			off -= sge[i].Length;
			continue;
		}
		n = MIN((uint64_t)sge[i].Length - off, (uint64_t)len);
		va = (uint64_t)(uintptr_t)sge[i].VirtualAddress + off;
		if (n <= PLACE_COPY_MAX) {
			/* Small: copied under the table's lock, no pin. */
			ret = sw_stag_sge_write(dp->stags, dp->qp.pd_id,
						sge[i].MemoryRegionToken, va,
						data, (size_t)n);
		} else {
			ret = sw_stag_sge_lookup(dp->stags, dp->qp.pd_id,
						 sge[i].MemoryRegionToken, va,
						 n, SW_ACCESS_LOCAL_WRITE, &ref,
						 &addr);
			if (!ret) {
				ret = ref.mem ? sw_stag_ref_write(&ref, 0, data,
								  (size_t)n)
					      : (memcpy(addr, data, (size_t)n),
						 0);
				sw_stag_put(&ref);
			}
		}
		if (ret)
			return ret;
		data += n;
		len -= (size_t)n;
		off = 0;
	}
	return len ? -ERANGE : 0;
}

/*
 * The oldest outstanding Read is over with status (its last Response
 * arrived, or the target refused it); the next one, in SQ order, becomes
 * the head. dp->lock held. Returns false if no Read was outstanding.
 */
static bool orq_retire(struct sw_dp *dp, NTSTATUS status)
{
	struct sw_wqe *w = sw_dp_rx_orq_head(dp);

	if (!w || w->state != SW_WQE_WAIT_RESPONSE)
		return false;
	if (w->status == STATUS_PENDING || !NT_SUCCESS(status))
		w->status = status;
	w->state = SW_WQE_DONE;
	dp->sq.reads_out--;
	while (dp->sq.reads_out) {
		dp->sq.orq_head++;
		if (sw_dp_rx_orq_head(dp)->state == SW_WQE_WAIT_RESPONSE)
			break;
	}
	return true;
}

static NDK_HOT int rx_payload(struct sw_dp *dp, const struct fpdu_ev *ev)
{
	struct sw_dp_rx *rx = dp->rx;
	int ret;

	switch (rx->target) {
	case RX_SEND:
		if (rx->recv_overflow)
			return 0;
		if (rx->hdr.mo + ev->offset + ev->len > rx->recv_len) {
			/* Larger than the posted receive (docs/ndk.md, "Work requests"). */
			rx->recv_overflow = true;
			return 0;
		}
		ret = place_sgl(dp, rx->rqe->sge, rx->rqe->nsge,
				rx->hdr.mo + ev->offset, ev->data, ev->len);
		if (ret)
			rx->recv_overflow = true; /* completes with an error */
		return 0;
	case RX_WRITE:
		if (rx->holding) {
			memcpy(rx->hold + ev->offset, ev->data, ev->len);
			return 0;
		}
		ret = sw_dp_rx_write_ref(dp);
		if (ret)
			return ret;
		/* In ascending address order, as the bytes arrive. */
		return sw_stag_ref_write(&rx->ref,
					 rx->hdr.to + ev->offset - rx->ref.va,
					 ev->data, ev->len)
			       ? rx_fail(dp, TERM_LAYER_DDP, DDP_ETYPE_TAGGED,
					 DDP_TAGGED_BASE_BOUNDS)
			       : 0;
	case RX_READ_RESP: {
		struct sw_wqe *w;
		uint64_t base, off;

		ndk_lock(&dp->lock);
		w = sw_dp_rx_orq_head(dp);
		ndk_unlock(&dp->lock);
		if (!w)
			return 0;
		base = w->nsge ? (uint64_t)(uintptr_t)w->sge[0].VirtualAddress
			       : 0;
		off = rx->hdr.to + ev->offset - base;
		if (off + ev->len > w->length)
			return rx_fail(dp, TERM_LAYER_DDP, DDP_ETYPE_TAGGED,
				       DDP_TAGGED_BASE_BOUNDS);
		if (place_sgl(dp, w->sge, w->nsge, off, ev->data, ev->len))
			w->status = STATUS_ACCESS_VIOLATION;
		w->done_bytes += (uint32_t)ev->len;
		return 0;
	}
	case RX_TERMINATE:
		if (rx->term_len + ev->len <= sizeof(rx->term)) {
			memcpy(rx->term + rx->term_len, ev->data, ev->len);
			rx->term_len += ev->len;
		}
		return 0;
	default:
		return 0;
	}
}

/* A payload chunk that rx_direct received in place: only the accounting
 * a copy would have done. */
static int rx_payload_placed(struct sw_dp *dp, const struct fpdu_ev *ev)
{
	struct sw_wqe *w;

	if (dp->rx->target != RX_READ_RESP)
		return 0;
	ndk_lock(&dp->lock);
	w = sw_dp_rx_orq_head(dp);
	ndk_unlock(&dp->lock);
	if (w)
		w->done_bytes += (uint32_t)ev->len;
	return 0;
}

/*
 * A Read Request that passed its checks joins the IRQ, and its response
 * goes out after the receive pass. False: more Reads in flight than our
 * IRD allows (RFC 5040 6.6). dp->lock held.
 */
static bool irq_queue_locked(struct sw_dp *dp, const struct rdmap_read_req *rr,
			     uint32_t msn)
{
	struct sw_irqe *e;

	NDK_ASSERT_LOCKED(&dp->lock);
	if (!dp->ird || dp->irq.tail - dp->irq.head >= dp->ird)
		return false;
	e = &dp->irq.ring[dp->irq.tail % MAX(dp->ird, 1u)];
	e->sink_stag = rr->sink_stag;
	e->sink_to = rr->sink_to;
	e->src_stag = rr->src_stag;
	e->src_to = rr->src_to;
	e->length = rr->size;
	e->sent = 0;
	e->msn = msn;
	dp->irq.tail++;
	dp->rx_wants_tx = true;
	return true;
}

/* A Read Request whose CRC held: checked at the data source, then queued
 * for the TX side to answer (RFC 5040 4.4). */
static int rx_read_req(struct sw_dp *dp, const struct fpdu_ev *ev)
{
	const struct rdmap_read_req *rr = &ev->read_req;
	struct sw_dp_rx *rx = dp->rx;
	void *addr;
	int ret;

	if (rx->hdr.msn != rx->msn_readreq)
		return rx_fail(dp, TERM_LAYER_DDP, DDP_ETYPE_UNTAGGED,
			       DDP_UNTAGGED_MSN_RANGE);
	rx->msn_readreq++;
	if (rr->size) {
		ret = sw_stag_lookup(dp->stags, rr->src_stag, dp->qp.pd_id,
				     rr->src_to, rr->size,
				     SW_ACCESS_REMOTE_READ, NULL, &addr);
		if (ret)
			return rx_fail_stag(dp, ret, true);
	}
	ndk_lock(&dp->lock);
	if (!irq_queue_locked(dp, rr, rx->hdr.msn)) {
		ndk_unlock(&dp->lock);
		return rx_fail(dp, TERM_LAYER_RDMAP, RDMAP_ETYPE_REMOTE_OP,
			       RDMAP_ECODE_CATASTROPHIC_STREAM);
	}
	ndk_unlock(&dp->lock);
	return 0;
}

static NDK_HOT int rx_end(struct sw_dp *dp, const struct fpdu_ev *ev)
{
	struct sw_dp_rx *rx = dp->rx;
	int err = 0;

	if (ev->last)
		rx->ended++;
	rx->cont = !ev->last;

	if (rx->target == RX_WRITE) {
		if (ev->crc_ok && rx->holding) {
			err = sw_dp_rx_write_ref(dp);
			if (!err &&
			    sw_stag_ref_write(&rx->ref, rx->hdr.to - rx->ref.va,
					      rx->hold, rx->parser.payload_len))
				err = rx_fail(dp, TERM_LAYER_DDP,
					      DDP_ETYPE_TAGGED,
					      DDP_TAGGED_BASE_BOUNDS);
		}
		/* A sound header predicts where the next ones go. */
		if (ev->crc_ok) {
			size_t len = rx->parser.payload_len;

			pred_set(dp, &rx->next, rx->hdr.stag, rx->hdr.to + len,
				 len);
			if (rx->first)
				pred_set(dp, &rx->again, rx->hdr.stag,
					 rx->hdr.to, len);
		}
	}
	if (rx->have_ref) {
		sw_stag_put(&rx->ref);
		rx->have_ref = false;
	}
	if (!ev->crc_ok)
		return rx_fail(dp, TERM_LAYER_LLP, LLP_ETYPE_MPA,
			       MPA_ECODE_CRC);
	if (err)
		return err;
	switch (rx->target) {
	case RX_SEND:
		rx->recv_bytes = rx->hdr.mo + (uint32_t)rx->parser.payload_len;
		if (!ev->last)
			return 0;
		{
			struct sw_rqe *rqe = rx->rqe;
			bool inv = rx->hdr.opcode == RDMAP_SEND_INV ||
				   rx->hdr.opcode == RDMAP_SEND_SE_INV;
			bool se = rx->hdr.opcode == RDMAP_SEND_SE ||
				  rx->hdr.opcode == RDMAP_SEND_SE_INV;
			NTSTATUS st = STATUS_SUCCESS;
			int ret = 0;

			rx->rqe = NULL;
			rx->msn_send++;
			if (rx->recv_overflow)
				st = rx->recv_bytes > rx->recv_len
					     ? STATUS_BUFFER_OVERFLOW
					     : STATUS_ACCESS_VIOLATION;
			if (inv && st == STATUS_SUCCESS)
				ret = sw_stag_invalidate(dp->stags,
							 rx->hdr.inv_stag,
							 dp->qp.pd_id);
			sw_rq_complete(
				dp->qp.rq, rqe, st,
				st == STATUS_SUCCESS ? rx->recv_bytes : 0,
				inv ? NdkOperationTypeReceiveAndInvalidate
				    : NdkOperationTypeReceive,
				inv ? rx->hdr.inv_stag : 0, se);
			if (ret)
				/* The peer invalidated a token it may not. */
				return rx_fail(dp, TERM_LAYER_RDMAP,
					       RDMAP_ETYPE_REMOTE_OP,
					       RDMAP_ECODE_CANT_INVALIDATE);
			if (st != STATUS_SUCCESS)
				return rx_fail(dp, TERM_LAYER_DDP,
					       DDP_ETYPE_UNTAGGED,
					       DDP_UNTAGGED_TOO_LONG);
		}
		return 0;
	case RX_SEND_DROP:
		rx->recv_bytes = rx->hdr.mo + (uint32_t)rx->parser.payload_len;
		if (ev->last) {
			rx->send_dropped = false;
			rx->msn_send++;
		}
		return 0;
	case RX_READ_RESP:
		if (ev->last) {
			struct sw_wqe *w;

			ndk_lock(&dp->lock);
			w = sw_dp_rx_orq_head(dp);
			if (w && w->done_bytes != w->length) {
				/* Shorter than the size requested: the rest
				 * of the sink holds old bytes, which must not
				 * complete as read. */
				ndk_unlock(&dp->lock);
				return rx_fail(dp, TERM_LAYER_RDMAP,
					       RDMAP_ETYPE_REMOTE_OP,
					       RDMAP_ECODE_CATASTROPHIC_STREAM);
			}
			orq_retire(dp, STATUS_SUCCESS);
			/* It completes now; a transmit pass after this one
			 * only if requests wait (Reads for ORQ room). */
			sw_dp_complete_locked(dp);
			if ((int32_t)(dp->sq.rung - dp->sq.next) > 0)
				dp->rx_wants_tx = true;
			ndk_unlock(&dp->lock);
		}
		return 0;
	case RX_READ_REQ:
		return rx_read_req(dp, ev);
	case RX_TERMINATE: {
		struct rdmap_term t;
		int parsed =
			fpdu_term_parse(&rx->hdr, rx->term, rx->term_len, &t);

		if (!parsed)
			ndk_info("qp %p: received Terminate %s / %s / %s",
				 (void *)dp->qp.obj,
				 iwarp_term_layer_name(t.cause.layer),
				 iwarp_term_etype_name(t.cause.layer,
						       t.cause.etype),
				 iwarp_term_ecode_name(t.cause.layer,
						       t.cause.etype,
						       t.cause.ecode));
		ndk_lock(&dp->lock);
		dp->tx.terminated = true; /* no Terminate in answer */
		/*
		 * A Terminate quoting a Read Request (an untagged header on
		 * QN 1) refuses our oldest outstanding Read: the target
		 * answers Reads in order (RFC 5040 5.2). It completes now
		 * with STATUS_REMOTE_RESOURCES, "caused an error at the
		 * remote QP" (NDK_FN_READ); the rest wait for the flush.
		 */
		if (!parsed && t.ddp_hdr && !(t.ddp_hdr[0] & DDP_CTRL_TAGGED) &&
		    get_be32(t.ddp_hdr + 6) == DDP_QN_READ_REQ &&
		    orq_retire(dp, STATUS_REMOTE_RESOURCES))
			sw_dp_complete_locked(dp);
		ndk_unlock(&dp->lock);
		return -EPROTO;
	}
	default:
		return 0;
	}
}

/* At an FPDU's header: a run of small payloads reads a buffer's worth at
 * a time, a large one a header's worth (rx_pass). */
static void rx_count_payload(struct sw_dp_rx *rx, size_t payload_len)
{
	if (payload_len >= RX_DIRECT_MIN)
		rx->small_run = 0;
	else if (rx->small_run < RX_SMALL_RUN)
		rx->small_run++;
}

/* At an FPDU's end: its frames for the traffic counters. */
static void rx_count_fpdu(struct sw_dp *dp, size_t ulpdu_len)
{
	sw_dp_traffic(dp, &dp->rx_traffic, false, 0,
		      sw_dp_fpdu_frames(dp, mpa_fpdu_len(ulpdu_len)), false);
}

/*
 * A whole FPDU in one event: what its HEADER, PAYLOAD and END would do,
 * in that order, except that a payload whose CRC failed is not placed
 * (END then sends the Terminate), and that a Write known sound is
 * placed straight away instead of held for its CRC.
 */
static NDK_HOT int rx_whole(struct sw_dp *dp, const struct fpdu_ev *ev)
{
	int ret;

	rx_count_payload(dp->rx, ev->payload_len);
	ret = rx_header(dp, ev);
	if (ret)
		return ret;
	if (ev->len && ev->crc_ok) {
		ret = rx_payload(dp, ev);
		if (ret)
			return ret;
	}
	rx_count_fpdu(dp, ev->ulpdu_len);
	return rx_end(dp, ev);
}

/* Whether the whole FPDU at p, of body bytes before its CRC, is sound. */
static bool rx_predict_crc_ok(const struct sw_dp *dp, const uint8_t *p,
			      size_t body)
{
	return !dp->crc ||
	       crc32c_final(crc32c_update(crc32c_init(), p, body)) ==
		       crc32c_get_trailer(p + body);
}

/*
 * Header prediction, as in TCP's fast path: the common small message is a
 * whole Send FPDU, the last of its message, on QN 0, for the next MSN, at
 * offset 0, with a receive posted for it. Such an FPDU is recognised by
 * comparing its header with the one predicted, its CRC checked, and its
 * payload placed and completed here, without the parser's events and the
 * handlers' dispatch, which on a ping-pong of small Sends took a quarter
 * of what a round trip spent over the busy-poll floor
 * (docs/performance.md, "Header prediction"). Anything else is left to
 * the parser, byte for byte, and reaches the verdict it always did: an
 * FPDU this declines before taking a receive is untouched; one it
 * declines after (its payload does not fit, or an SGE fails) keeps that
 * receive in rx->rqe, which rx_header uses as its own. Returns the bytes
 * consumed: the FPDU's, or 0.
 */
static NDK_HOT size_t rx_predict_send(struct sw_dp *dp, const uint8_t *p,
				      size_t n)
{
	struct sw_dp_rx *rx = dp->rx;
	size_t ulpdu, len, body;
	struct sw_rqe *rqe;
	bool se;

	if (rx->rqe || rx->send_dropped ||
	    !fpdu_send_hdr_match(p, rx->msn_send, &se))
		return 0;
	ulpdu = get_be16(p);
	body = mpa_fpdu_len(ulpdu) - MPA_FPDU_CRC_LEN;
	if (ulpdu > rx->parser.max_ulpdu || n < body + MPA_FPDU_CRC_LEN ||
	    !rx_predict_crc_ok(dp, p, body))
		return 0;
	/* As rx_header takes a receive for a message's first FPDU. */
	if (!rx_take_receive(rx, dp->qp.rq))
		return 0;
	rqe = rx->rqe;
	len = ulpdu - DDP_UNTAGGED_HDR_LEN;
	if (len > rx->recv_len ||
	    place_sgl(dp, rqe->sge, rqe->nsge, 0, p + FPDU_SEND_HDR_LEN, len))
		return 0;
	/* What rx_whole's HEADER, PAYLOAD and END would have left. */
	rx->rqe = NULL;
	rx->target = RX_SEND;
	rx->recv_bytes = (uint32_t)len;
	rx->msn_send++;
	rx_count_payload(rx, len);
	rx_count_fpdu(dp, ulpdu);
	sw_rq_complete(dp->qp.rq, rqe, STATUS_SUCCESS, (uint32_t)len,
		       NdkOperationTypeReceive, 0, se);
	return mpa_fpdu_len(ulpdu);
}

/*
 * A whole tagged FPDU with this opcode at p, of 1 to PLACE_COPY_MAX
 * payload bytes, with a sound CRC: its payload length, or 0.
 */
static size_t rx_predict_tagged(const struct sw_dp *dp, const uint8_t *p,
				size_t n, unsigned int opcode)
{
	size_t ulpdu, len, body;

	if (!fpdu_tagged_hdr_match(p, opcode))
		return 0;
	ulpdu = get_be16(p);
	len = ulpdu - DDP_TAGGED_HDR_LEN;
	body = mpa_fpdu_len(ulpdu) - MPA_FPDU_CRC_LEN;
	if (!len || len > PLACE_COPY_MAX || ulpdu > dp->rx->parser.max_ulpdu ||
	    n < body + MPA_FPDU_CRC_LEN || !rx_predict_crc_ok(dp, p, body))
		return 0;
	return len;
}

/*
 * A whole RDMA Write FPDU, the only one of its message, of up to
 * PLACE_COPY_MAX bytes: placed through its STag under the table's lock
 * once its CRC held, as rx_header, rx_payload and rx_end place a whole
 * FPDU, and the next Writes predicted from it as rx_end predicts them. A
 * zero-length one (an RTR carries an arbitrary STag) and one whose STag
 * range fails are left to the parser, which discards the first and
 * answers the second with its Terminate.
 */
static NDK_HOT size_t rx_predict_write(struct sw_dp *dp, const uint8_t *p,
				       size_t n)
{
	struct sw_dp_rx *rx = dp->rx;
	uint32_t stag;
	uint64_t to;
	size_t len;

	if (rx->in_write || !(len = rx_predict_tagged(dp, p, n, RDMAP_WRITE)))
		return 0;
	stag = get_be32(p + 4);
	to = get_be64(p + 8);
	if (sw_stag_write(dp->stags, stag, dp->qp.pd_id, to,
			  p + FPDU_TAGGED_HDR_LEN, len))
		return 0;
	rx->target = RX_WRITE;
	rx->holding = false;
	rx->first = true;
	pred_set(dp, &rx->next, stag, to + len, len);
	pred_set(dp, &rx->again, stag, to, len);
	rx_count_payload(rx, len);
	rx_count_fpdu(dp, DDP_TAGGED_HDR_LEN + len);
	return mpa_fpdu_len(DDP_TAGGED_HDR_LEN + len);
}

/*
 * A whole Read Request for the next MSN on QN 1 whose source passes its
 * lookup and that our IRD has room for joins the IRQ, as rx_read_req
 * would have it join after the parser's events; any other is left to
 * them, and gets the Terminate it always did.
 */
static NDK_HOT size_t rx_predict_read_req(struct sw_dp *dp, const uint8_t *p,
					  size_t n)
{
	struct sw_dp_rx *rx = dp->rx;
	struct rdmap_read_req rr;
	void *addr;
	bool queued;

	if (n < FPDU_READ_REQ_LEN + MPA_FPDU_CRC_LEN ||
	    !fpdu_read_req_match(p, rx->msn_readreq) ||
	    !rx_predict_crc_ok(dp, p, FPDU_READ_REQ_LEN))
		return 0;
	rdmap_read_req_get(p + FPDU_SEND_HDR_LEN, &rr);
	if (rr.size &&
	    sw_stag_lookup(dp->stags, rr.src_stag, dp->qp.pd_id, rr.src_to,
			   rr.size, SW_ACCESS_REMOTE_READ, NULL, &addr))
		return 0;
	ndk_lock(&dp->lock);
	queued = irq_queue_locked(dp, &rr, rx->msn_readreq);
	ndk_unlock(&dp->lock);
	if (!queued)
		return 0;
	rx->msn_readreq++;
	rx->target = RX_READ_REQ;
	rx_count_payload(rx, 0);
	rx_count_fpdu(dp, FPDU_READ_REQ_ULPDU);
	return mpa_fpdu_len(FPDU_READ_REQ_ULPDU);
}

/*
 * A whole Read Response of up to PLACE_COPY_MAX bytes that answers the
 * Read at the head of the ORQ in full, at its sink's first byte: placed
 * (a local SGE that fails its lookup makes the Read fail, as in
 * rx_payload) and the Read completed, under one hold of dp->lock where
 * the parser's path takes it at each of three events. Any other response
 * is left to that path.
 */
static NDK_HOT size_t rx_predict_read_resp(struct sw_dp *dp, const uint8_t *p,
					   size_t n)
{
	struct sw_dp_rx *rx = dp->rx;
	struct sw_wqe *w;
	size_t len;

	if (!(len = rx_predict_tagged(dp, p, n, RDMAP_READ_RESP)))
		return 0;
	ndk_lock(&dp->lock);
	w = sw_dp_rx_orq_head(dp);
	if (dp->sq.rtr_read_out || !w || w->state != SW_WQE_WAIT_RESPONSE ||
	    w->status != STATUS_PENDING || w->done_bytes || w->length != len ||
	    !w->nsge || get_be32(p + 4) != w->sge[0].MemoryRegionToken ||
	    get_be64(p + 8) != (uint64_t)(uintptr_t)w->sge[0].VirtualAddress) {
		ndk_unlock(&dp->lock);
		return 0;
	}
	if (place_sgl(dp, w->sge, w->nsge, 0, p + FPDU_TAGGED_HDR_LEN, len))
		w->status = STATUS_ACCESS_VIOLATION;
	w->done_bytes = (uint32_t)len;
	orq_retire(dp, STATUS_SUCCESS);
	sw_dp_complete_locked(dp);
	/* A transmit pass after this one only if requests wait (rx_end). */
	if ((int32_t)(dp->sq.rung - dp->sq.next) > 0)
		dp->rx_wants_tx = true;
	ndk_unlock(&dp->lock);
	rx->target = RX_READ_RESP;
	rx_count_payload(rx, len);
	rx_count_fpdu(dp, DDP_TAGGED_HDR_LEN + len);
	return mpa_fpdu_len(DDP_TAGGED_HDR_LEN + len);
}

/* The predicted FPDUs, at an FPDU's start between messages: the bytes
 * consumed (the FPDU's), or 0. */
static NDK_HOT size_t rx_predict(struct sw_dp *dp, const uint8_t *p, size_t n)
{
	struct sw_dp_rx *rx = dp->rx;
	size_t used;

	if (n < FPDU_SEND_HDR_LEN + MPA_FPDU_CRC_LEN ||
	    rx->parser.state != FPDU_RX_HDR || rx->parser.have || rx->cont)
		return 0;
	switch (p[MPA_FPDU_HDR_LEN + 1] & RDMAP_CTRL_OPCODE) {
	case RDMAP_WRITE:
		used = rx_predict_write(dp, p, n);
		break;
	case RDMAP_READ_REQ:
		used = rx_predict_read_req(dp, p, n);
		break;
	case RDMAP_READ_RESP:
		used = rx_predict_read_resp(dp, p, n);
		break;
	default:
		used = rx_predict_send(dp, p, n);
	}
	if (used) {
		/* The message ended, as at rx_end of its last FPDU. */
		rx->ended++;
		rx->parser.hdr_in = false; /* a Terminate quotes no stale one */
		rx->parser.body_in = false;
		rx->parser.stream_off += used;
	}
	return used;
}

/* ------------------------------------------------------------------ */
/* Socket readiness                                                   */

NDK_HOT int sw_dp_rx_bytes(struct sw_dp *dp, const uint8_t *buf, size_t len,
			   bool placed)
{
	struct fpdu_ev ev;
	size_t off = 0, n;
	int ret;

	/* Predicted small messages first (rx_predict); a payload received
	 * in place is never at an FPDU's start. */
	while (!placed && off < len &&
	       (n = rx_predict(dp, buf + off, len - off)))
		off += n;
	if (off && off == len)
		return 0;
	for (;;) {
		off += fpdu_rx_step(&dp->rx->parser, buf + off, len - off, &ev);
		switch (ev.type) {
		case FPDU_EV_NONE:
			return 0;
		case FPDU_EV_HEADER:
			rx_count_payload(dp->rx, ev.payload_len);
			ret = rx_header(dp, &ev);
			break;
		case FPDU_EV_PAYLOAD:
			ret = placed ? rx_payload_placed(dp, &ev)
				     : rx_payload(dp, &ev);
			break;
		case FPDU_EV_END:
			rx_count_fpdu(dp, dp->rx->parser.ulpdu_len);
			ret = rx_end(dp, &ev);
			break;
		case FPDU_EV_WHOLE:
			/* Only at an FPDU's start, never in a placed payload. */
			assert(!placed);
			ret = rx_whole(dp, &ev);
			break;
		default:
			return rx_fail(dp, ev.cause.layer, ev.cause.etype,
				       ev.cause.ecode);
		}
		if (ret)
			return ret;
		/* Every byte parsed: another step would only say so. */
		if (off == len && dp->rx->parser.state != FPDU_RX_ERROR)
			return 0;
	}
}

/*
 * The receive gate: a direct read found the socket empty in the middle of
 * a large payload, so the receiver is ahead of its sender, whose next
 * bytes come with its next send(). Reading again at once finds nothing
 * again, and each such read takes the socket's lock, which the sender's
 * delivery then waits for. So the consumer's polls leave the socket
 * alone for NDK_RX_GATE_NS (docs/performance.md, "The receive gate").
 * A payload received in place is gated, and so is an FPDU of a large
 * message that the copy path left unfinished while its sender streams
 * (rx_mid_stream); small messages, and every message's first bytes, are
 * read at once. A short read (fewer bytes than asked for) found the
 * socket empty too; it gates as well while the sender streams
 * (rx_note_end), so a wait starts without the empty read that would
 * prove it.
 *
 * A sender that posts back to back writes whole segments and leads its
 * next write with the rest (dp_tx.c, the tail hold), so the rest of a
 * payload comes a whole post of the sender later: tens of microseconds
 * when the sender is slow, a dozen empty reads at NDK_RX_GATE_NS. So the
 * first gate of a wait lasts three quarters of what such waits have
 * lasted lately (at most RX_GATE_WAIT_MAX times NDK_RX_GATE_NS), and
 * each one after it NDK_RX_GATE_NS.
 */
#define RX_GATE_WAIT_MAX 8

static void rx_gate(struct sw_dp *dp)
{
	struct sw_dp_rx *rx = dp->rx;
	uint64_t now, d;

	if (!dp->rx_gate_ns_max)
		return;
	now = ndk_now_ns();
	d = dp->rx_gate_ns_max;
	if (!rx->wait_from_ns) {
		rx->wait_from_ns = now;
		d = MAX(d, MIN((uint64_t)rx->wait_est_ns * 3 / 4,
			       d * RX_GATE_WAIT_MAX));
	}
	atomic_store_explicit(&dp->rx_gate_ns, now + d, memory_order_relaxed);
}

/* Bytes arrived: if after a wait, how long it took. */
static void rx_gate_waited(struct sw_dp *dp)
{
	struct sw_dp_rx *rx = dp->rx;
	uint64_t w;

	if (!rx->wait_from_ns)
		return;
	w = ndk_now_ns() - rx->wait_from_ns;
	w = MIN(w, (uint64_t)dp->rx_gate_ns_max * RX_GATE_WAIT_MAX * 2);
	rx->wait_est_ns = (uint32_t)((rx->wait_est_ns * 3ull + w) / 4);
	rx->wait_from_ns = 0;
}

/*
 * After a read: if it ended a message, whether bytes came behind that end
 * (the parser stopped inside an FPDU, or more than one message ended). A
 * receiver that finished a payload only waits for the next while its
 * sender streams.
 */
static void rx_note_end(struct sw_dp_rx *rx, uint32_t ended)
{
	if (rx->ended == ended)
		return;
	rx->streaming = rx->ended - ended > 1 ||
			rx->parser.state != FPDU_RX_HDR || rx->parser.have;
}

/*
 * The copy path stopped inside an FPDU of a large message from a sender
 * that streams: the rest comes with that sender's next post. A message of
 * one small FPDU is read again at once, as a small message always was,
 * and so is the copy path's part of a Read Response (its trailer, its
 * small last FPDU): its completion frees one of the few Reads the
 * requester may have outstanding (ORD). A direct read of a Read
 * Response's payload is gated like any other (rx_pass).
 */
static bool rx_mid_stream(const struct sw_dp_rx *rx)
{
	const struct fpdu_rx *p = &rx->parser;

	if (!rx->streaming || (p->state == FPDU_RX_HDR && !p->have) ||
	    rx->target == RX_READ_RESP)
		return false;
	return rx->cont ||
	       (p->state != FPDU_RX_HDR && p->payload_len >= RX_DIRECT_MIN);
}

/*
 * Receives and processes what the socket has, up to budget reads; rx_lock
 * held. Returns 0 (drained or budget spent) or a negative errno when the
 * connection ended.
 */
static int rx_pass(struct sw_dp *dp, int *budget, bool *got)
{
	uint8_t *buf = rx_thread_buf();
	uint32_t ended, before;
	int ret;

	if (!buf)
		return 0; /* no memory now: the socket stays readable */
	ended = dp->rx->ended;
	ret = sw_dp_attached_unlocked(dp) ? 0 : 1;
	if (!ret && dp->rx_error)
		ret = dp->rx_error;
	while (!ret && *budget > 0) {
		size_t want = RX_BUF_SIZE;
		ssize_t n;

		(*budget)--;
		before = dp->rx->ended;
		/* Only a payload can be received in place: between FPDUs a
		 * poll goes straight to the copy path's read. */
		ret = dp->rx->parser.state == FPDU_RX_PAYLOAD
			      ? sw_dp_rx_direct(dp, buf, got)
			      : 1;
		if (ret != 1) {
			if (ret != -EAGAIN)
				rx_gate_waited(dp);
			if (!ret)
				rx_note_end(dp->rx, before);
			/* Found empty, or emptied by a short read while the
			 * sender streams: the rest comes with its next post,
			 * and a read now would find nothing. From a sender
			 * that does not, it may be a moment away. */
			if (ret == SW_DP_RX_SHORT)
				ret = dp->rx->streaming ? -EAGAIN : 0;
			if (ret == -EAGAIN) {
				rx_gate(dp);
				ret = 1;
			}
			goto next;
		}
		/* Among large FPDUs: a header's worth, the payload direct;
		 * in a payload not received in place, its rest and the next
		 * header, so that the next payload is not read here. */
		if (dp->rx->small_run < RX_SMALL_RUN)
			want = dp->rx->parser.state != FPDU_RX_PAYLOAD
				       ? RX_PROBE
				       : MIN(RX_BUF_SIZE,
					     fpdu_rx_left(&dp->rx->parser) +
						     RX_PROBE);
		n = sw_sys_recv(dp->sock.fd, buf, want, MSG_DONTWAIT);
		if (n == 0)
			ret = -EPIPE;
		else if (n < 0) {
			ret = n == -EAGAIN || n == -EINTR ? 1 : (int)n;
			if (n == -EAGAIN && rx_mid_stream(dp->rx))
				rx_gate(dp);
		} else {
			*got = true;
			rx_gate_waited(dp);
			sw_dp_traffic(dp, &dp->rx_traffic, false, (uint64_t)n,
				      0, false);
			ret = sw_dp_rx_bytes(dp, buf, (size_t)n, false);
			if (!ret)
				rx_note_end(dp->rx, before);
			/* Fewer bytes than asked: the socket was empty a
			 * moment ago. In the middle of an FPDU from a sender
			 * that streams, the rest comes with its next post, as
			 * for a payload received in place. Otherwise a
			 * message that ended in this pass (a completion, a
			 * Write's last byte) goes to the consumer now, not
			 * after one more recv() that finds nothing; in the
			 * middle of one, the next read is as likely to find
			 * more. */
			if (!ret && (size_t)n < want) {
				if (rx_mid_stream(dp->rx)) {
					rx_gate(dp);
					ret = 1;
				} else if (dp->rx->ended != ended) {
					ret = 1;
				}
			}
		}
next:
		/* A Read Response or a Terminate goes out before the next
		 * read, not after an empty one. */
		if (!ret && dp->rx_wants_tx)
			return SW_DP_RX_TX;
	}
	/* The connection ended: count the rest now. */
	if (ret < 0)
		sw_dp_traffic(dp, &dp->rx_traffic, false, 0, 0, true);
	return ret > 0 ? 0 : ret;
}

NDK_HOT int sw_dp_rx_pass(struct sw_dp *dp, int *budget, bool *got)
{
	int ret = rx_pass(dp, budget, got);

	/* A Write FPDU still coming keeps no pin until its next bytes. */
	if (dp->rx && dp->rx->have_ref) {
		sw_stag_put(&dp->rx->ref);
		dp->rx->have_ref = false;
	}
	return ret;
}

/* ------------------------------------------------------------------ */
/* Setup and teardown                                                 */

int sw_dp_rx_create(struct sw_dp *dp, unsigned int rtr_received)
{
	dp->rx = calloc(1, sizeof(*dp->rx));
	if (!dp->rx)
		return -ENOMEM;
	/* MSNs start at 1 on every queue (RFC 5041 5.1); the peer's Send or
	 * Read RTR, read by the connector, took the first of its queue. */
	dp->rx->msn_send = rtr_received == MPA_RTR_SEND ? 2 : 1;
	dp->rx->msn_readreq = rtr_received == MPA_RTR_READ ? 2 : 1;
	dp->rx->small_run = RX_SMALL_RUN;
	fpdu_rx_init(&dp->rx->parser, dp->crc);
	fpdu_rx_set_whole(&dp->rx->parser, true);
	return 0;
}

void sw_dp_rx_free(struct sw_dp *dp)
{
	if (!dp->rx)
		return;
	if (dp->rx->have_ref)
		sw_stag_put(&dp->rx->ref);
	free(dp->rx->hold);
	free(dp->rx);
	dp->rx = NULL;
}

struct sw_rqe *sw_dp_rx_release(struct sw_dp *dp)
{
	struct sw_dp_rx *rx = dp->rx;
	struct sw_rqe *rqe = rx->rqe;

	rx->rqe = NULL;
	if (rqe && sw_dp_attached(dp)) {
		/* The connection goes on: the rest of this Send still
		 * arrives, and goes nowhere. */
		rx->send_dropped = true;
		if (rx->target == RX_SEND)
			rx->target = RX_SEND_DROP;
	}
	return rqe;
}
