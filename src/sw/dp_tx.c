/* SPDX-License-Identifier: MIT */
/*
 * QP data path, transmit side: the initiator queue and the FPDUs it turns
 * into (RFC 5040 RDMAP over RFC 5041 DDP over RFC 5044 MPA).
 *
 * Every FPDU is gathered from its pieces (header, the payload straight
 * from registered memory, pad and CRC) and written with one non-blocking
 * sendmsg; a partial write is finished on EPOLLOUT. Initiator requests
 * complete in posting order (docs/ndk.md, "Completion rules"): a request that is done waits
 * for those before it.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include "front/adapter.h"
#include "core/config.h"
#include "core/log.h"
#include "iwarp/fpdu.h"
#include "sw/cq.h"
#include "sw/dp_tx.h"
#include "sw/mr.h"
#include "sw/mw.h"
#include "sw/adapter.h"
#include "sw/stag.h"
#include "sw/sysio.h"

/* ------------------------------------------------------------------ */
/* The transmit batch                                                 */

static void batch_reset(struct sw_dp *dp)
{
	dp->tx.iovcnt = 0;
	dp->tx.iov_pos = 0;
	dp->tx.nrec = 0;
	dp->tx.rec_pos = 0;
	dp->tx.rec_left = 0;
	dp->tx.left = 0;
}

/* Room for one more FPDU of up to SW_TX_FPDU_IOV iovecs. */
static bool batch_has_room(const struct sw_dp *dp)
{
	return dp->tx.nrec < SW_TX_BATCH &&
	       dp->tx.iovcnt + SW_TX_FPDU_IOV <= SW_TX_IOV &&
	       dp->tx.left < SW_TX_BATCH_BYTES;
}

/* The FPDU whose iovecs run from first to tx_iovcnt joins the batch. */
static void batch_add(struct sw_dp *dp, int first, bool fin, uint32_t fin_idx)
{
	struct sw_dp_txrec *r = &dp->tx.rec[dp->tx.nrec];
	size_t len = 0;
	int i;

	for (i = first; i < dp->tx.iovcnt; i++)
		len += dp->tx.iov[i].iov_len;
	r->len = (uint32_t)len;
	r->iov_end = (uint16_t)dp->tx.iovcnt;
	r->fin = fin;
	r->fin_idx = fin_idx;
	r->open = dp->tx.open;
	if (dp->tx.rec_pos == dp->tx.nrec)
		dp->tx.rec_left = len;
	dp->tx.nrec++;
	dp->tx.left += len;
}

/* A frame built whole elsewhere (Terminate, RTR, the rest of a small
 * request's FPDU): an FPDU of its own, whose end may complete a request. */
static void batch_add_raw(struct sw_dp *dp, void *buf, size_t len, bool fin,
			  uint32_t fin_idx)
{
	int first = dp->tx.iovcnt++;

	dp->tx.iov[first].iov_base = buf;
	dp->tx.iov[first].iov_len = len;
	batch_add(dp, first, fin, fin_idx);
}

/*
 * A Terminate goes out at the next FPDU boundary and nothing follows it
 * (RFC 5040 5.2): the FPDUs of the batch not yet started are dropped.
 * Their requests did not complete and are flushed with the QP.
 */
static void batch_cut(struct sw_dp *dp)
{
	const struct sw_dp_txrec *r = &dp->tx.rec[dp->tx.rec_pos];

	if (dp->tx.rec_pos + 1 >= dp->tx.nrec)
		return;
	dp->tx.iovcnt = r->iov_end;
	dp->tx.nrec = dp->tx.rec_pos + 1;
	dp->tx.left = dp->tx.rec_left;
	dp->tx.open = r->open;
}

/*
 * n more bytes of the batch were written: the iovecs and FPDUs they
 * finish are consumed, and a request whose last FPDU is all out is done
 * (as siw completes).
 */
static void batch_advance(struct sw_dp *dp, size_t n)
{
	uint32_t frames = 0;
	size_t left = n;

	dp->tx.left -= n;
	while (left) {
		struct iovec *v = &dp->tx.iov[dp->tx.iov_pos];
		size_t take = MIN(left, v->iov_len);

		v->iov_base = (uint8_t *)v->iov_base + take;
		v->iov_len -= take;
		left -= take;
		if (!v->iov_len)
			dp->tx.iov_pos++;
	}
	while (dp->tx.iov_pos < dp->tx.iovcnt &&
	       !dp->tx.iov[dp->tx.iov_pos].iov_len)
		dp->tx.iov_pos++;
	for (left = n; left;) {
		const struct sw_dp_txrec *r = &dp->tx.rec[dp->tx.rec_pos];
		size_t take = MIN(left, dp->tx.rec_left);

		dp->tx.rec_left -= take;
		left -= take;
		if (dp->tx.rec_left)
			break;
		frames += sw_dp_fpdu_frames(dp, r->len);
		if (r->fin) {
			struct sw_wqe *f = sw_dp_sq_slot(dp, r->fin_idx);

			f->state = SW_WQE_DONE;
			f->status = STATUS_SUCCESS;
		}
		if (++dp->tx.rec_pos < dp->tx.nrec)
			dp->tx.rec_left = dp->tx.rec[dp->tx.rec_pos].len;
	}
	sw_dp_traffic(dp, &dp->tx.traffic, true, (uint64_t)n, frames, false);
}

/* ------------------------------------------------------------------ */
/* The tail hold                                                      */

/*
 * TCP sends what a write leaves past its last whole segment as a short
 * segment of its own, and each segment costs both ends the work of one
 * (a 64 KiB Write is 93 bytes over the loopback MSS). While a consumer
 * streams requests (two posts or more since its CQ was last empty), a
 * post writes its batch in whole segments and the rest leads the next
 * post's write. The rest goes at the latest at the next empty poll,
 * NdkArmCq or backstop tick (dp.c), flush or disconnect; a request whose
 * bytes wait has not completed (docs/design.md, "The tail hold").
 */
#define TX_SEG_REFRESH 256 /* held writes between reads of the MSS */

static void tx_set_held(struct sw_dp *dp, bool held)
{
	dp->tx.held = held;
	atomic_store_explicit(&dp->tx_held_hint, held, memory_order_relaxed);
}

/* A post: whether its write may hold a tail. Lock held. */
static bool tx_hold_ok(struct sw_dp *dp)
{
	uint64_t polls;

	if (!dp->tx_hold)
		return false;
	polls = atomic_load_explicit(&dp->polls, memory_order_relaxed);
	if (polls != dp->tx.polls_at_post) {
		dp->tx.polls_at_post = polls;
		dp->tx.streak = 0;
	}
	if (dp->tx.streak < UINT8_MAX)
		dp->tx.streak++;
	return dp->tx.streak >= 2 && sw_dp_hold_watch_locked(dp);
}

/* The segment size a held write rounds to: TCP's MSS grows after the
 * handshake (loopback starts at half the peer's first window). */
static uint32_t tx_seg(struct sw_dp *dp)
{
	int mss;
	socklen_t len = sizeof(mss);

	if (dp->tx.seg && ++dp->tx.seg_age < TX_SEG_REFRESH)
		return dp->tx.seg;
	dp->tx.seg_age = 0;
	if (getsockopt(dp->sock.fd, IPPROTO_TCP, TCP_MAXSEG, &mss, &len) ||
	    mss < 512)
		mss = (int)dp->mss;
	dp->tx.seg = (uint32_t)mss;
	return dp->tx.seg;
}

#ifdef NDK_TEST_HOOKS
/*
 * NDK_TEST_SEND_MAX (builds with test hooks only, never Release): the most
 * bytes one transmit call hands the kernel, as if the socket had room for
 * no more. Every partial-write path then runs on every request.
 */
static size_t tx_send_max(void)
{
	static _Atomic size_t max; /* 0: not read yet */
	size_t m = atomic_load_explicit(&max, memory_order_relaxed);

	if (!m) {
		m = (size_t)ndk_config_u64("NDK_TEST_SEND_MAX", SIZE_MAX, 1,
					   SIZE_MAX);
		atomic_store_explicit(&max, m, memory_order_relaxed);
	}
	return m;
}

/* The first iovecs of msg, cut to max bytes in all, into iov. */
static size_t tx_cut_iov(const struct msghdr *msg, struct iovec *iov,
			 size_t niov, size_t max)
{
	size_t i, n = 0;

	for (i = 0; i < msg->msg_iovlen && i < niov && max; i++) {
		iov[i] = msg->msg_iov[i];
		if (iov[i].iov_len > max)
			iov[i].iov_len = max;
		max -= iov[i].iov_len;
		n++;
	}
	return n;
}

static ssize_t tx_sendmsg(int fd, const struct msghdr *msg, int flags)
{
	struct iovec iov[16];
	struct msghdr cut = *msg;
	size_t max = tx_send_max();

	if (max == SIZE_MAX)
		return sw_sys_sendmsg(fd, msg, flags);
	cut.msg_iov = iov;
	cut.msg_iovlen = tx_cut_iov(msg, iov, ARRAY_SIZE(iov), max);
	return sw_sys_sendmsg(fd, &cut, flags);
}

static ssize_t tx_send(int fd, const void *buf, size_t len, int flags)
{
	return sw_sys_send(fd, buf, MIN(len, tx_send_max()), flags);
}
#else
#define tx_sendmsg sw_sys_sendmsg
#define tx_send	   sw_sys_send
#endif

/*
 * Writes the batch; 0 when all of it is out (or, if hold, all but a tail
 * shorter than a segment: tx.held), -EAGAIN, -errno.
 */
static NDK_HOT int batch_write(struct sw_dp *dp, bool hold)
{
	struct msghdr msg = { 0 };
	uint32_t seg = 0;
	ssize_t n;

	/* Only a batch of more than a segment, and one the next post can
	 * add to. */
	hold = hold && batch_has_room(dp) && dp->tx.left > (seg = tx_seg(dp));
	while (dp->tx.left) {
		size_t want = dp->tx.left, acc = 0, keep = 0;
		int end = dp->tx.iovcnt, k = 0;

		if (hold) {
			want -= want % seg;
			if (!want) {
				tx_set_held(dp, true);
				dp->tx.holds++;
				return 0;
			}
			/* The iovec where the whole segments end, cut
			 * there for this call. */
			for (k = dp->tx.iov_pos;
			     acc + dp->tx.iov[k].iov_len < want; k++)
				acc += dp->tx.iov[k].iov_len;
			keep = dp->tx.iov[k].iov_len;
			dp->tx.iov[k].iov_len = want - acc;
			end = k + 1;
		}
		msg.msg_iov = dp->tx.iov + dp->tx.iov_pos;
		msg.msg_iovlen = (size_t)(end - dp->tx.iov_pos);
		n = tx_sendmsg(dp->sock.fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (hold)
			dp->tx.iov[k].iov_len = keep;
		if (n == -EINTR)
			continue;
		if (n < 0)
			return (int)n;
		batch_advance(dp, (size_t)n);
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Building one FPDU                                                  */

/*
 * The FPDU header into its slot and iovec first; its payload iovecs
 * follow (RFC 5044 4: ULPDU_Length counts header and payload).
 */
static void fpdu_header(struct sw_dp *dp, int first, const struct ddp_hdr *h,
			const struct rdmap_read_req *rr, size_t payload_len)
{
	uint8_t *hdr = dp->tx.hdr[dp->tx.nrec];
	int n = fpdu_tx_hdr(hdr, h, payload_len, rr);

	dp->tx.iov[first].iov_base = hdr;
	dp->tx.iov[first].iov_len = n > 0 ? (size_t)n : 0;
}

/*
 * Pad and CRC over the FPDU's iovecs (RFC 5044 4, LE trailer); the FPDU
 * joins the batch.
 */
static NDK_HOT void fpdu_finish(struct sw_dp *dp, int first, bool fin,
				uint32_t fin_idx)
{
	const uint8_t *hdr = dp->tx.hdr[dp->tx.nrec];
	uint8_t *trl = dp->tx.trl[dp->tx.nrec];
	size_t ulpdu = (size_t)hdr[0] << 8 | hdr[1];
	struct fpdu_tx_crc crc;
	int i;

	fpdu_tx_crc_init(&crc, dp->crc);
	for (i = first; i < dp->tx.iovcnt; i++)
		fpdu_tx_crc_add(&crc, dp->tx.iov[i].iov_base,
				dp->tx.iov[i].iov_len);
	dp->tx.iov[dp->tx.iovcnt].iov_base = trl;
	dp->tx.iov[dp->tx.iovcnt].iov_len =
		fpdu_tx_trailer(trl, crc.reg, ulpdu, dp->crc);
	dp->tx.iovcnt++;
	batch_add(dp, first, fin, fin_idx);
}

static void tx_src_put(struct sw_dp *dp)
{
	if (!dp->tx.src_key)
		return;
	sw_stag_put(&dp->tx.src);
	dp->tx.src_key = NULL;
}

/*
 * The pinned source range of key (an SGE or an IRQ entry) for
 * [va, va + n): the one the batch holds if it covers that, else the rest
 * of the source, [va, va + rest), looked up (token, access) and pinned
 * now. NULL and *err if the lookup fails.
 */
static const struct sw_stag_ref *tx_src(struct sw_dp *dp, const void *key,
					uint32_t token, uint32_t access,
					uint64_t va, uint64_t n, uint64_t rest,
					int *err)
{
	const struct sw_stag_ref *r = &dp->tx.src;
	void *addr;

	if (dp->tx.src_key == key && dp->tx.src_token == token && va >= r->va &&
	    va - r->va <= r->len && n <= r->len - (va - r->va))
		return r;
	tx_src_put(dp);
	*err = sw_stag_sge_lookup(dp->stags, dp->qp.pd_id, token, va, rest,
				  access, &dp->tx.src, &addr);
	if (*err)
		return NULL;
	dp->tx.src_key = key;
	dp->tx.src_token = token;
	return r;
}

/*
 * Adds len bytes of the SGE list, from the request's cursor (the byte
 * done_bytes), as iovecs and moves the cursor past them; returns how many
 * bytes fitted (fewer if the iovec array is full), or a negative errno
 * for a bad SGE (docs/ndk.md, "Work requests": the request completes with
 * STATUS_ACCESS_VIOLATION). The rest of an SGE is looked up once per
 * batch (tx_src) and pinned only while the batch is built: a
 * deregistration never waits for a send that stalls (sw/stag.h).
 */
static long fpdu_add_sges(struct sw_dp *dp, int first, struct sw_wqe *w,
			  uint32_t len)
{
	uint32_t i, skip = w->cur_off, added = 0;
	/* One iovec is left for the trailer. */
	const int max_iov = first + SW_TX_FPDU_IOV - 1;

	if (w->inline_data) {
		dp->tx.iov[dp->tx.iovcnt].iov_base =
			(uint8_t *)(void *)w->sge + w->done_bytes;
		dp->tx.iov[dp->tx.iovcnt].iov_len = len;
		dp->tx.iovcnt++;
		return len;
	}
	for (i = w->cur_sge; i < w->nsge && added < len; i++) {
		const NDK_SGE *s = &w->sge[i];
		uint64_t va = (uint64_t)(uintptr_t)s->VirtualAddress + skip;
		const struct sw_stag_ref *ref;
		uint64_t pos, n, off, contig;
		int ret;

		if (skip >= s->Length) {
			/* Zero-length SGEs, and an SGE just finished. */
			skip = 0;
			continue;
		}
		n = MIN((uint64_t)s->Length - skip, (uint64_t)len - added);
		/* The rest of the SGE, for this FPDU and the next. */
		ref = tx_src(dp, s, s->MemoryRegionToken, SW_ACCESS_LOCAL_READ,
			     va, n, s->Length - skip, &ret);
		if (!ref)
			return ret;
		off = va - ref->va;
		for (pos = 0; pos < n && dp->tx.iovcnt < max_iov;
		     pos += contig) {
			void *p = sw_stag_ref_map(ref, off + pos, &contig);

			contig = MIN(contig, n - pos);
			dp->tx.iov[dp->tx.iovcnt].iov_base = p;
			dp->tx.iov[dp->tx.iovcnt].iov_len = contig;
			dp->tx.iovcnt++;
		}
		added += (uint32_t)pos;
		if (skip + pos < s->Length) {
			/* The FPDU (or its iovecs) ends inside this SGE. */
			w->cur_sge = i;
			w->cur_off = skip + (uint32_t)pos;
			return added;
		}
		skip = 0;
		if (dp->tx.iovcnt >= max_iov) {
			i++;
			break;
		}
	}
	w->cur_sge = i;
	w->cur_off = 0;
	return added;
}

/* ------------------------------------------------------------------ */
/* The next FPDU to send                                              */

static void wqe_fail(struct sw_dp *dp, struct sw_wqe *w, NTSTATUS status)
{
	w->status = status;
	w->state = SW_WQE_DONE;
}

/* The next FPDU of a tagged or untagged message: its last or not. */
static void tx_set_open(struct sw_dp *dp, bool tagged, bool last)
{
	uint8_t bit = tagged ? SW_TX_OPEN_TAGGED : SW_TX_OPEN_UNTAGGED;

	dp->tx.open = last ? dp->tx.open & (uint8_t)~bit : dp->tx.open | bit;
}

/*
 * The transmitter cannot finish a message it has started, or a Read
 * Response it owes. Tagged segments carry no message number, so the peer
 * would take the next tagged message's segments for the rest of this one
 * (and a Read would wait for ever): the stream ends instead, with the
 * Terminate t at this FPDU boundary (RFC 5040 5.2), and the engine ends
 * the connection. Lock held.
 */
static void tx_fault(struct sw_dp *dp, const struct rdmap_term *t)
{
	struct ndk_obj *qp = dp->qp.obj;

	if (!sw_dp_attached(dp) || !sw_dp_term_queue_locked(dp, t))
		return;
	ndk_obj_get(qp);
	if (!ndk_engine_post(dp->sock.engine, &dp->tx_fault_work))
		ndk_obj_put(qp);
}

/* A local fault in the middle of a message: RDMAP, local catastrophic
 * (RFC 5040 4.8), nothing quoted. */
static void tx_fault_local(struct sw_dp *dp)
{
	const struct rdmap_term t = {
		.cause = { .layer = TERM_LAYER_RDMAP,
			   .etype = RDMAP_ETYPE_CATASTROPHIC },
	};

	tx_fault(dp, &t);
}

/* The header of a Send's or Write's message (RFC 5040 4). */
static void msg_header(const struct sw_dp *dp, const struct sw_wqe *w,
		       struct ddp_hdr *msg)
{
	if (w->op == SW_WQE_WRITE) {
		msg->tagged = true;
		msg->opcode = RDMAP_WRITE;
		msg->stag = w->stag;
		msg->to = w->addr;
	} else {
		bool se = w->flags & NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT;

		msg->opcode =
			w->stag ? (se ? RDMAP_SEND_SE_INV : RDMAP_SEND_INV)
				: (se ? RDMAP_SEND_SE : RDMAP_SEND);
		msg->inv_stag = w->stag;
		msg->qn = DDP_QN_SEND;
		msg->msn = dp->tx.msn_send;
	}
}

/*
 * Builds the next FPDU of the request at sq_next. Returns true if an FPDU
 * was built, false if this request must wait (ORQ full, read fence).
 */
static bool build_from_sq(struct sw_dp *dp, struct sw_wqe *w)
{
	uint32_t room, n;
	long got;
	int first;
	struct ddp_hdr msg = { .dv = DDP_VERSION, .rv = RDMAP_VERSION }, h;

	if (w->op == SW_WQE_READ) {
		struct rdmap_read_req rr;

		/* At most ORD reads in flight; later ones wait their turn. */
		if (dp->sq.reads_out + dp->sq.rtr_read_out >= MAX(dp->ord, 1u))
			return false;
		h = msg;
		h.opcode = RDMAP_READ_REQ;
		h.qn = DDP_QN_READ_REQ;
		h.msn = dp->tx.msn_readreq++;
		h.last = true;
		/* The sink is our first SGE; the responder echoes STag/TO. */
		rr.sink_stag = w->nsge ? w->sge[0].MemoryRegionToken : 0;
		rr.sink_to =
			w->nsge ? (uint64_t)(uintptr_t)w->sge[0].VirtualAddress
				: 0;
		rr.size = w->length;
		rr.src_stag = w->stag;
		rr.src_to = w->addr;
		first = dp->tx.iovcnt++;
		fpdu_header(dp, first, &h, &rr, 0);
		fpdu_finish(dp, first, false, 0);
		if (!dp->sq.reads_out)
			dp->sq.orq_head = dp->sq.next;
		dp->sq.reads_out++;
		w->state = SW_WQE_WAIT_RESPONSE;
		dp->sq.next++;
		return true;
	}

	/* The message's header; fpdu_seg_at makes each segment's. */
	msg_header(dp, w, &msg);
	/* Full FPDUs, a Write's first too: the receiver holds that one until
	 * its CRC (docs/wire.md, "What waits for the CRC"), and one copy of
	 * it costs less than the read a shorter one adds. */
	room = (uint32_t)fpdu_max_payload(dp->mulpdu, msg.tagged);
	n = MIN(room, w->length - w->done_bytes);
	first = dp->tx.iovcnt++;
	got = fpdu_add_sges(dp, first, w, n);
	if (got < 0) {
		/* A bad local SGE: nothing (more) goes out for it. Found
		 * before the first FPDU, the connection goes on; after it
		 * (the MR went meanwhile), the message cannot end. */
		dp->tx.iovcnt = first;
		wqe_fail(dp, w, STATUS_ACCESS_VIOLATION);
		dp->sq.next++;
		if (w->done_bytes)
			tx_fault_local(dp);
		return false;
	}
	/* As many bytes as the iovecs took: the segment ends there. */
	n = (uint32_t)fpdu_seg_at(&msg, w->length, w->done_bytes, (size_t)got,
				  &h);
	fpdu_header(dp, first, &h, NULL, n);
	tx_set_open(dp, msg.tagged, h.last);
	/* Done once this last FPDU is written (as siw completes). */
	fpdu_finish(dp, first, h.last, dp->sq.next);
	w->done_bytes += n;
	w->state = SW_WQE_ACTIVE;
	if (h.last) {
		if (w->op == SW_WQE_SEND)
			dp->tx.msn_send++;
		dp->sq.next++;
	}
	return true;
}

/*
 * The source of the Read Response owed for e failed its lookup (err): a
 * remote protection Terminate that quotes the Read Request (RFC 5040 4.8,
 * D and R), which tells the requester which of its Reads failed.
 */
static void tx_fault_read_source(struct sw_dp *dp, const struct sw_irqe *e,
				 int err)
{
	const struct ddp_hdr req = { .dv = DDP_VERSION,
				     .rv = RDMAP_VERSION,
				     .last = true,
				     .opcode = RDMAP_READ_REQ,
				     .qn = DDP_QN_READ_REQ,
				     .msn = e->msn };
	const struct rdmap_read_req rr = { .sink_stag = e->sink_stag,
					   .sink_to = e->sink_to,
					   .size = e->length,
					   .src_stag = e->src_stag,
					   .src_to = e->src_to };
	uint8_t hdr[FPDU_HDR_MAX];
	struct rdmap_term t = {
		.cause = { .layer = TERM_LAYER_RDMAP,
			   .etype = RDMAP_ETYPE_REMOTE_PROT,
			   .ecode = (uint8_t)sw_dp_stag_rdmap_ecode(err) },
		.m = true,
		.ddp_seg_len = DDP_UNTAGGED_HDR_LEN + RDMAP_READ_REQ_LEN,
		.ddp_hdr = hdr + MPA_FPDU_HDR_LEN,
		.rdmap_hdr = hdr + MPA_FPDU_HDR_LEN + DDP_UNTAGGED_HDR_LEN,
	};

	if (fpdu_tx_hdr(hdr, &req, 0, &rr) < 0)
		t.ddp_hdr = t.rdmap_hdr = NULL;
	tx_fault(dp, &t);
}

/* A Read Response FPDU for the IRQ head (RFC 5040 4.5). */
static bool build_read_response(struct sw_dp *dp)
{
	struct sw_irqe *e = &dp->irq.ring[dp->irq.head % MAX(dp->ird, 1u)];
	const struct sw_stag_ref *ref;
	const struct ddp_hdr msg = { .dv = DDP_VERSION,
				     .rv = RDMAP_VERSION,
				     .tagged = true,
				     .opcode = RDMAP_READ_RESP,
				     .stag = e->sink_stag,
				     .to = e->sink_to };
	struct ddp_hdr h;
	uint32_t n = MIN((uint32_t)fpdu_max_payload(dp->mulpdu, true),
			 e->length - e->sent);
	uint64_t pos = 0, contig, off, va = e->src_to + e->sent;
	int first = dp->tx.iovcnt++, err;

	if (n) {
		ref = tx_src(dp, e, e->src_stag, SW_ACCESS_REMOTE_READ, va, n,
			     e->length - e->sent, &err);
		/* Checked when the request arrived; if the source was
		 * invalidated since, the response stops there. */
		if (!ref) {
			dp->tx.iovcnt = first;
			tx_fault_read_source(dp, e, err);
			return false;
		}
		off = va - ref->va;
		for (; pos < n && dp->tx.iovcnt < first + SW_TX_FPDU_IOV - 1;
		     pos += contig) {
			dp->tx.iov[dp->tx.iovcnt].iov_base =
				sw_stag_ref_map(ref, off + pos, &contig);
			contig = MIN(contig, n - pos);
			dp->tx.iov[dp->tx.iovcnt].iov_len = contig;
			dp->tx.iovcnt++;
		}
		n = (uint32_t)pos;
	}
	n = (uint32_t)fpdu_seg_at(&msg, e->length, e->sent, n, &h);
	fpdu_header(dp, first, &h, NULL, n);
	tx_set_open(dp, true, h.last);
	fpdu_finish(dp, first, false, 0);
	e->sent += n;
	if (h.last)
		dp->irq.head++;
	return true;
}

/* The request at sq.next is a Write whose first FPDU is built and whose
 * last is not. */
static bool sq_write_in_progress(struct sw_dp *dp)
{
	const struct sw_wqe *w;

	if ((int32_t)(dp->sq.rung - dp->sq.next) <= 0)
		return false;
	w = sw_dp_sq_slot(dp, dp->sq.next);
	return w->op == SW_WQE_WRITE && w->state == SW_WQE_ACTIVE;
}

/*
 * Fills the batch while it has room: Read Responses first (the peer waits
 * for them), then the initiator queue in order. Returns whether it holds
 * an FPDU. Lock held.
 *
 * Tagged messages never interleave: a Write partly sent ends before a
 * Read Response starts, and a Read Response started stays ahead of the
 * next Write. Tagged segments carry no message number, so a receiver
 * takes all between a Write's first segment and its L bit as that
 * Write's (RFC 5041 5.3: messages go out in order; siw terminates on a
 * Read Response inside a Write).
 */
static bool batch_fill(struct sw_dp *dp)
{
	/* Nothing after a Terminate, queued by a fault while filling. */
	while (batch_has_room(dp) && !dp->tx.term_len) {
		struct sw_wqe *w;

		if (dp->irq.head != dp->irq.tail && !sq_write_in_progress(dp)) {
			if (!build_read_response(dp))
				dp->irq.head++; /* source gone: Terminate */
			continue;
		}
		/* Nothing posted, or only deferred requests (docs/ndk.md,
		 * "Deferred processing"). */
		if ((int32_t)(dp->sq.rung - dp->sq.next) <= 0)
			break;
		w = sw_dp_sq_slot(dp, dp->sq.next);
		/* READ_FENCE: wait for every earlier Read. */
		if ((w->flags & NDK_OP_FLAG_READ_FENCE) && dp->sq.reads_out)
			break;
		if (w->state == SW_WQE_DONE) {
			/* Bind, FastRegister, Invalidate: done. */
			dp->sq.next++;
			continue;
		}
		if (!build_from_sq(dp, w) && w->state == SW_WQE_QUEUED)
			break; /* waits for ORQ room */
	}
	/* The batch's bytes are in its iovecs: no pin past here, so that a
	 * deregistration never waits for a send that stalls. */
	tx_src_put(dp);
	return dp->tx.nrec != 0;
}

/* Copies the request's SGEs (checked for local read) to dst. */
static int small_copy(struct sw_dp *dp, const struct sw_wqe *w, uint8_t *dst)
{
	uint32_t i;

	if (w->inline_data) {
		ndk_copy(dst, w->sge, w->length);
		return 0;
	}
	for (i = 0; i < w->nsge; i++) {
		const NDK_SGE *s = &w->sge[i];
		int ret;

		if (!s->Length)
			continue;
		ret = sw_stag_sge_read(
			dp->stags, dp->qp.pd_id, s->MemoryRegionToken,
			(uint64_t)(uintptr_t)s->VirtualAddress, dst, s->Length);
		if (ret)
			return ret;
		dst += s->Length;
	}
	return 0;
}

/*
 * Ends the FPDU whose header and payload are the first len bytes of the
 * small buffer (pad and CRC) and writes it with one send. 1: all went;
 * 0: the socket took part, the rest is a frame of the batch (whose end
 * completes request fin_idx if fin); a negative errno: the connection is
 * failing, and as for batch_write's callers, its end reports it. Lock
 * held.
 */
static NDK_HOT int small_send(struct sw_dp *dp, size_t len, bool fin,
			      uint32_t fin_idx)
{
	uint8_t *b = dp->tx.small;
	uint32_t reg = dp->crc ? crc32c_update(crc32c_init(), b, len) : 0;
	size_t total = len + fpdu_tx_trailer(b + len, reg,
					     len - MPA_FPDU_HDR_LEN, dp->crc);
	ssize_t n;

	do {
		n = tx_send(dp->sock.fd, b, total, MSG_DONTWAIT | MSG_NOSIGNAL);
	} while (n == -EINTR);
	if (n == (ssize_t)total) {
		sw_dp_traffic(dp, &dp->tx.traffic, true, total, 1, false);
		return 1;
	}
	if (n < 0 && n != -EAGAIN) {
		if (!dp->tx.error)
			dp->tx.error = (int)n;
		return (int)n;
	}
	n = MAX(n, 0);
	sw_dp_traffic(dp, &dp->tx.traffic, true, (uint64_t)n, 0, false);
	batch_reset(dp);
	batch_add_raw(dp, b + n, total - (size_t)n, fin, fin_idx);
	return 0;
}

/* Nothing of the connection waits to be written, and no Terminate is
 * due or gone: a small request may go out in one send of its own. */
static bool tx_quiet(const struct sw_dp *dp)
{
	return !dp->tx.left && !dp->tx.term_len && !dp->tx.terminated;
}

/* An inline request's bytes, gathered from the consumer's SGL. */
static void copy_inline(uint8_t *dst, const NDK_SGE *sgl, ULONG nsge)
{
	ULONG i;

	for (i = 0; i < nsge; i++) {
		if (!sgl[i].Length)
			continue;
		ndk_copy(dst, sgl[i].VirtualAddress, sgl[i].Length);
		dst += sgl[i].Length;
	}
}

/*
 * The common small request: a Send or Write of up to SW_TX_SMALL bytes
 * that is the only thing to send. Its bytes are copied behind the header
 * and the FPDU goes out with one CRC pass and one send, without the
 * batch. What the socket does not take is left in the batch as a frame
 * whose end completes the request. Returns true if nothing is left to
 * do; false sends the loop of sw_dp_tx_locked on. Lock held.
 */
static bool tx_small(struct sw_dp *dp)
{
	struct ddp_hdr msg = { .dv = DDP_VERSION, .rv = RDMAP_VERSION }, h;
	uint8_t *b = dp->tx.small;
	struct sw_wqe *w;
	size_t hlen;

	if (!tx_quiet(dp) || dp->irq.head != dp->irq.tail ||
	    dp->sq.rung - dp->sq.next != 1)
		return false;
	w = sw_dp_sq_slot(dp, dp->sq.next);
	if (w->state != SW_WQE_QUEUED ||
	    (w->op != SW_WQE_SEND && w->op != SW_WQE_WRITE) ||
	    w->length > SW_TX_SMALL ||
	    ((w->flags & NDK_OP_FLAG_READ_FENCE) && dp->sq.reads_out))
		return false;
	msg_header(dp, w, &msg);
	if (w->length > fpdu_max_payload(dp->mulpdu, msg.tagged))
		return false;
	fpdu_seg_at(&msg, w->length, 0, w->length, &h);
	hlen = (size_t)fpdu_tx_hdr(b, &h, w->length, NULL);
	if (small_copy(dp, w, b + hlen)) {
		/* A bad local SGE: nothing goes out for it. */
		wqe_fail(dp, w, STATUS_ACCESS_VIOLATION);
		dp->sq.next++;
		return false;
	}
	if (w->op == SW_WQE_SEND)
		dp->tx.msn_send++;
	w->done_bytes = w->length;
	w->state = SW_WQE_ACTIVE;
	dp->sq.next++;
	if (small_send(dp, hlen + w->length, true, dp->sq.next - 1) <= 0)
		return false;
	w->state = SW_WQE_DONE;
	w->status = STATUS_SUCCESS;
	return true;
}

/*
 * The common small Read Response: one owed, of up to SW_TX_SMALL bytes,
 * with nothing else to send. Built whole in the small buffer and written
 * with one send, as tx_small does; a source that fails its lookup is
 * left to the batch, which sends the Terminate. Returns true if the
 * response went (the rest, if the socket took part, is in the batch).
 * Lock held.
 */
static bool tx_small_resp(struct sw_dp *dp)
{
	struct sw_irqe *e;
	uint8_t *b = dp->tx.small;

	if (!tx_quiet(dp) || dp->irq.tail - dp->irq.head != 1 ||
	    sq_write_in_progress(dp))
		return false;
	e = &dp->irq.ring[dp->irq.head % MAX(dp->ird, 1u)];
	if (e->sent || e->length > SW_TX_SMALL ||
	    e->length > fpdu_max_payload(dp->mulpdu, true))
		return false;
	/* One whole FPDU: its header is the predicted one. */
	fpdu_tagged_hdr_put(b, RDMAP_READ_RESP, e->sink_stag, e->sink_to,
			    e->length);
	if (e->length &&
	    sw_stag_read(dp->stags, e->src_stag, dp->qp.pd_id, e->src_to,
			 b + FPDU_TAGGED_HDR_LEN, e->length))
		return false;
	e->sent = e->length;
	dp->irq.head++;
	small_send(dp, FPDU_TAGGED_HDR_LEN + e->length, false, 0);
	return true;
}

/*
 * Transmits while the socket takes data: a pending Terminate first, then
 * batches of FPDUs. hold: a post that may hold its tail ("The tail
 * hold"); anything else writes held bytes too. Lock held.
 */
static NDK_HOT void tx_run(struct sw_dp *dp, bool hold)
{
	bool was_held = dp->tx.held;
	int ret;

	NDK_ASSERT_LOCKED(&dp->lock);

	if (was_held)
		tx_set_held(dp, false);
	if (sw_dp_attached(dp) && tx_small_resp(dp) && !dp->tx.left &&
	    dp->sq.rung == dp->sq.next) {
		sw_dp_want_out_locked(dp, false);
		sw_dp_complete_locked(dp);
		return;
	}
	if (sw_dp_attached(dp) && tx_small(dp)) {
		sw_dp_complete_locked(dp);
		return;
	}

	while (sw_dp_attached(dp)) {
		if (dp->tx.left) {
			/* This post's FPDUs go behind the held bytes, in
			 * the same write. */
			if (was_held && hold && !dp->tx.term_len)
				batch_fill(dp);
			was_held = false;
			if (dp->tx.term_len)
				batch_cut(dp);
			ret = batch_write(dp, hold && !dp->tx.term_len);
			sw_dp_complete_locked(dp);
			if (ret == -EAGAIN) {
				sw_dp_want_out_locked(dp, true);
				break;
			}
			if (ret) {
				/* The connection is failing: RX will see it
				 * end, and dp_end takes the cause from here. */
				if (!dp->tx.error)
					dp->tx.error = ret;
				batch_reset(dp);
				break;
			}
			if (dp->tx.held)
				break;
			continue;
		}
		batch_reset(dp);
		if (dp->tx.terminated)
			break;
		if (dp->tx.term_len) {
			batch_add_raw(dp, dp->tx.term, dp->tx.term_len, false,
				      0);
			dp->tx.term_len = 0;
			dp->tx.terminated = true;
			continue;
		}
		if (!batch_fill(dp))
			break;
	}
	if (!dp->tx.left)
		sw_dp_want_out_locked(dp, false);
	sw_dp_complete_locked(dp);
}

NDK_HOT void sw_dp_tx_locked(struct sw_dp *dp)
{
	tx_run(dp, false);
}

void sw_dp_tx_release_locked(struct sw_dp *dp)
{
	if (dp->tx.held)
		tx_run(dp, false);
}

bool sw_dp_tx_drain_locked(struct sw_dp *dp)
{
	NDK_ASSERT_LOCKED(&dp->lock);
	return !dp->tx.left || batch_write(dp, false) != -EAGAIN;
}

bool sw_dp_send_raw_locked(struct sw_dp *dp, void *buf, size_t len)
{
	NDK_ASSERT_LOCKED(&dp->lock);
	sw_dp_tx_release_locked(dp);
	if (!sw_dp_attached(dp) || dp->tx.terminated || dp->tx.term_len ||
	    dp->tx.left)
		return false;
	batch_reset(dp);
	batch_add_raw(dp, buf, len, false, 0);
	sw_dp_tx_locked(dp);
	return true;
}

bool sw_dp_send_rtr_locked(struct sw_dp *dp, enum mpa_rtr type)
{
	int len =
		ddp_rtr_build(type, dp->crc, dp->tx.ctrl, sizeof(dp->tx.ctrl));

	NDK_ASSERT_LOCKED(&dp->lock);

	return len > 0 && sw_dp_send_raw_locked(dp, dp->tx.ctrl, (size_t)len);
}

/* ------------------------------------------------------------------ */
/* Posting                                                            */

/*
 * A request was queued: it goes out now, or, with NDK_OP_FLAG_DEFER, with
 * the next request posted without it (docs/ndk.md, "Deferred processing": the consumer ends
 * every deferred chain with one), so a burst of posts leaves in one
 * sendmsg. Lock held.
 */
static void sq_posted_locked(struct sw_dp *dp, ULONG flags)
{
	NDK_ASSERT_LOCKED(&dp->lock);
	if (flags & NDK_OP_FLAG_DEFER)
		return;
	dp->sq.rung = dp->sq.tail;
	tx_run(dp, tx_hold_ok(dp));
}

void sw_dp_kick(struct sw_dp *dp)
{
	ndk_lock(&dp->lock);
	sq_posted_locked(dp, 0); /* as if a request without DEFER came */
	ndk_unlock(&dp->lock);
}

/*
 * Checks every local SGE before anything is sent: a bad one must fail the
 * whole request (docs/ndk.md, "Work requests": STATUS_ACCESS_VIOLATION) rather than cut a
 * message short after some of its FPDUs went out. A Send or Write of one
 * non-empty SGE needs no check here: its first FPDU looks the whole SGE
 * up before any byte of it goes out (tx_src), and fails it the same way.
 */
static bool sgl_valid(struct sw_dp *dp, const NDK_SGE *sgl, ULONG nsge,
		      uint32_t access)
{
	struct sw_stag_table *t = dp->stags;
	ULONG i;

	if (access == SW_ACCESS_LOCAL_READ && nsge == 1 && sgl[0].Length)
		return true;

	/* A check, not a pin: the transmitter looks the bytes up again. */
	for (i = 0; i < nsge; i++) {
		void *addr;

		if (sw_stag_sge_lookup(
			    t, dp->qp.pd_id, sgl[i].MemoryRegionToken,
			    (uint64_t)(uintptr_t)sgl[i].VirtualAddress,
			    sgl[i].Length, access, NULL, &addr))
			return false;
	}
	return true;
}

/*
 * With dp->lock held, a free SQ slot, zeroed, with op, flags and context
 * filled in. On failure the lock is released and *status says why.
 */
static NDK_HOT struct sw_wqe *sq_begin_locked(struct sw_dp *dp,
					      enum sw_wqe_op op, PVOID ctx,
					      ULONG flags, NTSTATUS *status)
{
	struct sw_wqe *w;

	if (!sw_dp_attached(dp)) {
		ndk_unlock(&dp->lock);
		*status = STATUS_CONNECTION_INVALID;
		return NULL;
	}
	if (dp->sq.tail - dp->sq.done >= dp->sq.depth) {
		ndk_unlock(&dp->lock);
		*status = STATUS_INSUFFICIENT_RESOURCES;
		return NULL;
	}
	w = sw_dp_sq_slot(dp, dp->sq.tail);
	memset(w, 0, sizeof(*w));
	w->op = (uint8_t)op;
	w->flags = flags;
	w->ctx = ctx;
	return w;
}

/* sq_begin_locked, taking dp->lock first. */
static struct sw_wqe *sq_begin(struct sw_dp *dp, enum sw_wqe_op op, PVOID ctx,
			       ULONG flags, NTSTATUS *status)
{
	ndk_lock(&dp->lock);
	return sq_begin_locked(dp, op, ctx, flags, status);
}

/* A predicted request's SQ slot, the only one in flight, in state. */
static struct sw_wqe *tx_predict_slot(struct sw_dp *dp, enum sw_wqe_op op,
				      PVOID ctx, ULONG flags, uint32_t len,
				      uint32_t stag, uint64_t addr,
				      enum sw_wqe_state state)
{
	uint32_t idx = dp->sq.tail;
	struct sw_wqe *w = sw_dp_sq_slot(dp, idx);

	memset(w, 0, sizeof(*w));
	w->op = (uint8_t)op;
	w->flags = flags;
	w->ctx = ctx;
	w->length = len;
	w->stag = stag;
	w->addr = addr;
	w->state = (uint8_t)state;
	dp->sq.tail = dp->sq.rung = dp->sq.next = idx + 1;
	return w;
}

/*
 * A Read of one SGE (tx_predict's conditions held): its Read Request is
 * one FPDU of known form (fpdu_read_req_put), built and written here; the
 * Read then waits for its response in the ORQ, as build_from_sq leaves
 * it. A sink that fails its lookup is left to the general path.
 */
static NDK_HOT bool tx_predict_read(struct sw_dp *dp, PVOID ctx,
				    const NDK_SGE *sgl, ULONG nsge, ULONG flags,
				    uint32_t len, uint32_t stag, uint64_t addr)
{
	struct rdmap_read_req rr;
	struct sw_wqe *w;
	bool hold;
	void *p;

	if (nsge != 1 || !len || dp->sq.rtr_read_out || !dp->ord ||
	    sw_stag_sge_lookup(dp->stags, dp->qp.pd_id,
			       sgl[0].MemoryRegionToken,
			       (uint64_t)(uintptr_t)sgl[0].VirtualAddress, len,
			       SW_ACCESS_LOCAL_WRITE, NULL, &p))
		return false;
	rr.sink_stag = sgl[0].MemoryRegionToken;
	rr.sink_to = (uint64_t)(uintptr_t)sgl[0].VirtualAddress;
	rr.size = len;
	rr.src_stag = stag;
	rr.src_to = addr;
	fpdu_read_req_put(dp->tx.small, dp->tx.msn_readreq++, &rr);
	dp->sq.orq_head = dp->sq.tail;
	w = tx_predict_slot(dp, SW_WQE_READ, ctx, flags, len, stag, addr,
			    SW_WQE_WAIT_RESPONSE);
	w->nsge = 1;
	w->sge[0] = sgl[0];
	w->status = STATUS_PENDING;
	dp->sq.reads_out = 1;
	hold = tx_hold_ok(dp); /* a post the tail hold counts, as any */
	if (small_send(dp, FPDU_READ_REQ_LEN, false, 0) <= 0)
		tx_run(dp, hold); /* as after tx_small */
	return true;
}

/*
 * Send prediction, the other half of the receiver's (dp_rx.c,
 * rx_predict): a Send or RDMA Write of up to SW_TX_SMALL bytes in one SGE
 * (or a Send's inline bytes), without DEFER or an Invalidate, posted onto
 * an empty SQ with nothing else to send, is one FPDU whose header is
 * known (fpdu_send_hdr_put, fpdu_tagged_hdr_put). It is built in the small
 * buffer and written with one send from here, without the general path
 * (sq_posted_locked, tx_run, tx_small); the SQ slot it takes holds what
 * its completion, and a write the socket takes only part of, need. A
 * source SGE that fails its lookup is left to the general path, which
 * fails the request. Lock held; false: nothing was done.
 */
static NDK_HOT bool tx_predict(struct sw_dp *dp, enum sw_wqe_op op, PVOID ctx,
			       const NDK_SGE *sgl, ULONG nsge, ULONG flags,
			       uint32_t len, uint32_t stag, uint64_t addr)
{
	bool tagged = op == SW_WQE_WRITE;
	size_t hlen = tagged ? FPDU_TAGGED_HDR_LEN : FPDU_SEND_HDR_LEN;
	uint8_t *b = dp->tx.small;
	struct sw_wqe *w;
	uint32_t idx = dp->sq.tail;
	bool hold;

	if ((flags & NDK_OP_FLAG_DEFER) || dp->sq.done != idx ||
	    !sw_dp_attached(dp) || !tx_quiet(dp) || dp->tx.held ||
	    dp->irq.head != dp->irq.tail)
		return false;
	if (op == SW_WQE_READ)
		return tx_predict_read(dp, ctx, sgl, nsge, flags, len, stag,
				       addr);
	if (len > SW_TX_SMALL || len > fpdu_max_payload(dp->mulpdu, tagged))
		return false;
	if (flags & NDK_OP_FLAG_INLINE) {
		copy_inline(b + hlen, sgl, nsge);
	} else if (nsge > 1) {
		return false;
	} else if (len &&
		   sw_stag_sge_read(dp->stags, dp->qp.pd_id,
				    sgl[0].MemoryRegionToken,
				    (uint64_t)(uintptr_t)sgl[0].VirtualAddress,
				    b + hlen, len)) {
		return false;
	}
	if (tagged)
		fpdu_tagged_hdr_put(b, RDMAP_WRITE, stag, addr, len);
	else
		fpdu_send_hdr_put(b, dp->tx.msn_send++, len,
				  flags & NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT);
	w = tx_predict_slot(dp, op, ctx, flags, len, stag, addr, SW_WQE_ACTIVE);
	w->done_bytes = len;
	hold = tx_hold_ok(dp); /* a post the tail hold counts, as any */
	if (small_send(dp, hlen + len, true, idx) > 0) {
		w->state = SW_WQE_DONE;
		w->status = STATUS_SUCCESS;
		sw_dp_complete_locked(dp);
	} else {
		/* The rest is in the batch, or the connection is failing:
		 * as after tx_small. */
		tx_run(dp, hold);
	}
	return true;
}

static uint64_t sgl_length(const NDK_SGE *sgl, ULONG nsge)
{
	uint64_t len = 0;
	ULONG i;

	for (i = 0; i < nsge; i++)
		len += sgl[i].Length;
	return len;
}

NDK_HOT NTSTATUS sw_dp_post_send(struct sw_dp *dp, PVOID ctx,
				 const NDK_SGE *sgl, ULONG nsge, ULONG flags,
				 bool invalidate, UINT32 inv_stag)
{
	bool inl = flags & NDK_OP_FLAG_INLINE;
	uint64_t len = sgl_length(sgl, nsge);
	struct sw_wqe *w;
	NTSTATUS status;

	if ((nsge && !sgl) || (!inl && nsge > dp->qp.max_sge) ||
	    (inl && len > dp->qp.inline_size) || len > dp->max_transfer)
		return STATUS_INVALID_PARAMETER;
	ndk_lock(&dp->lock);
	if (!invalidate && tx_predict(dp, SW_WQE_SEND, ctx, sgl, nsge, flags,
				      (uint32_t)len, 0, 0)) {
		ndk_unlock(&dp->lock);
		return STATUS_SUCCESS;
	}
	w = sq_begin_locked(dp, SW_WQE_SEND, ctx, flags, &status);
	if (!w)
		return status;
	w->length = (uint32_t)len;
	w->stag = invalidate ? inv_stag : 0;
	if (inl) {
		/* Copied now: the buffer is only valid during the call. */
		w->inline_data = true;
		copy_inline((uint8_t *)(void *)w->sge, sgl, nsge);
	} else {
		w->nsge = nsge;
		if (nsge)
			ndk_copy(w->sge, sgl, (size_t)nsge * sizeof(*sgl));
		if (!sgl_valid(dp, sgl, nsge, SW_ACCESS_LOCAL_READ))
			wqe_fail(dp, w, STATUS_ACCESS_VIOLATION);
	}
	dp->sq.tail++;
	sq_posted_locked(dp, flags);
	ndk_unlock(&dp->lock);
	return STATUS_SUCCESS;
}

NDK_HOT NTSTATUS sw_dp_post_rdma(struct sw_dp *dp, enum sw_wqe_op op, PVOID ctx,
				 const NDK_SGE *sgl, ULONG nsge, UINT64 addr,
				 UINT32 stag, ULONG flags)
{
	uint64_t len = sgl_length(sgl, nsge);
	ULONG max_sge = op == SW_WQE_READ ? MIN(dp->qp.max_sge,
						dp->ad->info.MaxReadRequestSge)
					  : dp->qp.max_sge;
	struct sw_wqe *w;
	NTSTATUS status;

	if ((nsge && !sgl) || nsge > max_sge || len > dp->max_transfer)
		return STATUS_INVALID_PARAMETER;
	ndk_lock(&dp->lock);
	if (tx_predict(dp, op, ctx, sgl, nsge, flags & ~NDK_OP_FLAG_INLINE,
		       (uint32_t)len, stag, addr)) {
		ndk_unlock(&dp->lock);
		return STATUS_SUCCESS;
	}
	w = sq_begin_locked(dp, op, ctx, flags, &status);
	if (!w)
		return status;
	w->length = (uint32_t)len;
	w->stag = stag;
	w->addr = addr;
	w->nsge = nsge;
	if (nsge)
		ndk_copy(w->sge, sgl, (size_t)nsge * sizeof(*sgl));
	/* A Read's status is decided when its response is placed. */
	if (op == SW_WQE_READ)
		w->status = STATUS_PENDING;
	if (!sgl_valid(dp, sgl, nsge,
		       op == SW_WQE_READ ? SW_ACCESS_LOCAL_WRITE
					 : SW_ACCESS_LOCAL_READ))
		wqe_fail(dp, w, STATUS_ACCESS_VIOLATION);
	dp->sq.tail++;
	sq_posted_locked(dp, flags);
	ndk_unlock(&dp->lock);
	return STATUS_SUCCESS;
}

/*
 * Bind, FastRegister and Invalidate act on the STag table when posted:
 * the new token must be readable as soon as NdkBind or NdkFastRegister
 * returns (NDK_FN_BIND, NDK_FN_FAST_REGISTER). Their completions still come in order
 * behind earlier requests. An inline failure means no completion.
 */
static NTSTATUS post_local(struct sw_dp *dp, enum sw_wqe_op op, PVOID ctx,
			   ULONG flags, NTSTATUS done_status)
{
	struct sw_wqe *w;
	NTSTATUS status;

	w = sq_begin(dp, op, ctx, flags, &status);
	if (!w)
		return status;
	w->status = done_status;
	w->state = SW_WQE_DONE;
	dp->sq.tail++;
	/* Behind earlier requests still in progress it waits its turn. */
	if (dp->sq.next == dp->sq.tail - 1)
		dp->sq.next++;
	sq_posted_locked(dp, flags);
	ndk_unlock(&dp->lock);
	return STATUS_SUCCESS;
}

static NTSTATUS local_status(int ret)
{
	switch (ret) {
	case 0:
		return STATUS_SUCCESS;
	case -EACCES:
		return STATUS_ACCESS_VIOLATION;
	case -EBUSY:
		return STATUS_INVALID_DEVICE_STATE;
	case -EAGAIN: /* no random bytes for the new key */
		return STATUS_INSUFFICIENT_RESOURCES;
	default:
		return STATUS_INVALID_PARAMETER;
	}
}

NTSTATUS sw_dp_post_bind(struct sw_dp *dp, PVOID ctx, NDK_MR *mr, NDK_MW *mw,
			 PVOID va, SIZE_T len, ULONG flags)
{
	int ret;

	if (!mr || !mw || mr->Header.ObjectType != NdkObjectTypeMr ||
	    mw->Header.ObjectType != NdkObjectTypeMw)
		return STATUS_INVALID_PARAMETER;
	if (to_sw_mw(mw)->pd_id != dp->qp.pd_id)
		return STATUS_ACCESS_VIOLATION;
	ret = sw_mw_bind(to_sw_mw(mw), to_sw_mr(mr), (uint64_t)(uintptr_t)va,
			 len, flags);
	if (ret)
		return local_status(ret);
	return post_local(dp, SW_WQE_BIND, ctx, flags, STATUS_SUCCESS);
}

NTSTATUS sw_dp_post_fast_register(struct sw_dp *dp, PVOID ctx, NDK_MR *mr,
				  ULONG count, const NDK_LOGICAL_ADDRESS *pages,
				  ULONG fbo, SIZE_T len, PVOID base,
				  ULONG flags)
{
	int ret;

	if (!mr || mr->Header.ObjectType != NdkObjectTypeMr ||
	    (count && !pages))
		return STATUS_INVALID_PARAMETER;
	ret = sw_mr_fast_register(to_sw_mr(mr), pages, count, fbo, len,
				  (uint64_t)(uintptr_t)base, flags);
	if (ret)
		return local_status(ret);
	return post_local(dp, SW_WQE_FAST_REGISTER, ctx, flags, STATUS_SUCCESS);
}

NTSTATUS sw_dp_post_invalidate(struct sw_dp *dp, PVOID ctx,
			       NDK_OBJECT_HEADER *obj, ULONG flags)
{
	int ret;

	if (!obj || (obj->ObjectType != NdkObjectTypeMr &&
		     obj->ObjectType != NdkObjectTypeMw))
		return STATUS_INVALID_PARAMETER;
	ret = obj->ObjectType == NdkObjectTypeMw
		      ? sw_mw_invalidate(to_sw_mw((NDK_MW *)obj))
		      : sw_mr_invalidate(to_sw_mr((NDK_MR *)obj));
	/* A malformed request (a normal MR) completes with an error
	 * (docs/ndk.md, "Work requests") rather than failing
	 * inline. */
	return post_local(dp, SW_WQE_INVALIDATE, ctx, flags,
			  ret ? STATUS_INVALID_DEVICE_REQUEST : STATUS_SUCCESS);
}

void sw_dp_tx_flush(struct sw_dp *dp)
{
	uint32_t i;

	ndk_lock(&dp->lock);
	/* Everything not finished is cancelled, each exactly once. */
	for (i = dp->sq.done; i != dp->sq.tail; i++) {
		struct sw_wqe *w = sw_dp_sq_slot(dp, i);

		if (w->state != SW_WQE_DONE) {
			w->state = SW_WQE_DONE;
			w->status = STATUS_CANCELLED;
			w->flags &= ~(ULONG)NDK_OP_FLAG_SILENT_SUCCESS;
		}
	}
	dp->sq.next = dp->sq.tail;
	dp->sq.rung = dp->sq.tail;
	dp->sq.reads_out = 0;
	/* An FPDU half written is finished (the stream must stay whole),
	 * but its request already completed as cancelled; the FPDUs not
	 * started are dropped. */
	if (dp->tx.left)
		batch_cut(dp);
	for (i = dp->tx.rec_pos; i < dp->tx.nrec; i++)
		dp->tx.rec[i].fin = false;
	/* A message cut short cannot be followed by the next one. */
	if (dp->tx.open) {
		tx_fault_local(dp);
		sw_dp_tx_locked(dp);
	}
	sw_dp_tx_release_locked(dp);
	sw_dp_complete_locked(dp);
	ndk_unlock(&dp->lock);
}
