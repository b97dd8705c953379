/* SPDX-License-Identifier: MIT */
/*
 * Receive side: reads that place payloads straight into their destination
 * (docs/wire.md, "Direct placement"), checked exactly as the copy path in
 * dp_rx.c checks them; that path is what parses every byte they read.
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include "core/compiler.h"
#include "sw/adapter.h"
#include "sw/dp_rx_int.h"
#include "sw/stag.h"
#include "sw/sysio.h"

/* The destination of one direct read, and the local SGEs it pinned. */
struct rx_direct {
	struct iovec iov[RX_DIRECT_IOV + 1]; /* + the probe behind it */
	unsigned int niov;
	size_t len; /* destination bytes in iov[0, niov) */
	struct sw_stag_ref ref[RX_DIRECT_IOV];
	unsigned int nref;
};

/* Adds the host pieces of [off, off + n) of a looked-up range (addr: its
 * host address when it has no entry, a LAM range). Returns the bytes
 * added, fewer when the iovecs ran out. */
static size_t direct_add_range(struct rx_direct *d,
			       const struct sw_stag_ref *ref, uint8_t *addr,
			       uint64_t off, uint64_t n)
{
	uint64_t pos, contig;

	for (pos = 0; pos < n && d->niov < RX_DIRECT_IOV; pos += contig) {
		void *p = ref->mem ? sw_stag_ref_map(ref, off + pos, &contig)
				   : addr + off + pos;

		if (!ref->mem)
			contig = n - pos;
		contig = MIN(contig, n - pos);
		d->iov[d->niov].iov_base = p;
		d->iov[d->niov].iov_len = (size_t)contig;
		d->niov++;
	}
	d->len += (size_t)pos;
	return (size_t)pos;
}

/* Adds [off, off + len) of an SGE list (a receive's or a Read's), each
 * SGE checked for local write first. False if one fails: the copy path
 * then reports it as it always did. */
static bool direct_add_sgl(struct sw_dp *dp, struct rx_direct *d,
			   const NDK_SGE *sge, uint32_t nsge, uint64_t off,
			   uint64_t len)
{
	uint32_t i;

	for (i = 0; i < nsge && len && d->niov < RX_DIRECT_IOV; i++) {
		uint64_t n;
		void *addr;

		if (off >= sge[i].Length) {
			off -= sge[i].Length;
			continue;
		}
		n = MIN((uint64_t)sge[i].Length - off, len);
		if (sw_stag_sge_lookup(
			    dp->stags, dp->qp.pd_id, sge[i].MemoryRegionToken,
			    (uint64_t)(uintptr_t)sge[i].VirtualAddress + off, n,
			    SW_ACCESS_LOCAL_WRITE, &d->ref[d->nref], &addr))
			return false;
		d->nref++;
		len -= direct_add_range(d, &d->ref[d->nref - 1], addr, 0, n);
		off = 0;
	}
	return d->len != 0;
}

static void direct_put(struct rx_direct *d)
{
	while (d->nref)
		sw_stag_put(&d->ref[--d->nref]);
}

/* Where the rest of the current payload goes, if it is received in
 * place; checked exactly as the copy path checks it. */
static bool direct_target(struct sw_dp *dp, struct rx_direct *d)
{
	struct sw_dp_rx *rx = dp->rx;
	uint64_t off = rx->parser.payload_off;
	uint64_t left = rx->parser.payload_len - off;
	struct sw_wqe *w;
	uint64_t base;

	if (rx->parser.state != FPDU_RX_PAYLOAD ||
	    rx->parser.payload_len < RX_DIRECT_MIN)
		return false;
	switch (rx->target) {
	case RX_WRITE:
		if (rx->holding) {
			d->iov[0].iov_base = rx->hold + off;
			d->iov[0].iov_len = (size_t)left;
			d->niov = 1;
			d->len = (size_t)left;
			return true;
		}
		/* Pinned for the whole payload at the header, or again in
		 * sw_dp_rx_direct after a pass ended. */
		return rx->have_ref && rx->ref.mem &&
		       direct_add_range(d, &rx->ref, NULL, off, left);
	case RX_SEND:
		if (rx->recv_overflow || rx->hdr.mo + off + left > rx->recv_len)
			return false;
		return direct_add_sgl(dp, d, rx->rqe->sge, rx->rqe->nsge,
				      rx->hdr.mo + off, left);
	case RX_READ_RESP:
		ndk_lock(&dp->lock);
		w = sw_dp_rx_orq_head(dp);
		ndk_unlock(&dp->lock);
		if (!w || w->status != STATUS_PENDING)
			return false;
		base = w->nsge ? (uint64_t)(uintptr_t)w->sge[0].VirtualAddress
			       : 0;
		off += rx->hdr.to - base;
		if (off + left > w->length)
			return false;
		return direct_add_sgl(dp, d, w->sge, w->nsge, off, left);
	default:
		return false;
	}
}

NDK_HOT int sw_dp_rx_direct(struct sw_dp *dp, uint8_t *probe, bool *got)
{
	struct sw_dp_rx *rx = dp->rx;
	struct rx_direct d;
	struct msghdr msg = { 0 };
	size_t placed, i;
	ssize_t n;
	int ret = 0;

	d.niov = d.nref = 0;
	d.len = 0;
	/* A pass that ended mid-Write dropped its pin: take it again, as
	 * the copy path would, so the rest still lands in place. */
	if (rx->parser.state == FPDU_RX_PAYLOAD && rx->target == RX_WRITE &&
	    !rx->holding) {
		ret = sw_dp_rx_write_ref(dp);
		if (ret)
			return ret;
	}
	if (!direct_target(dp, &d)) {
		direct_put(&d);
		return 1;
	}
	d.iov[d.niov].iov_base = probe;
	d.iov[d.niov].iov_len = RX_PROBE;
	msg.msg_iov = d.iov;
	msg.msg_iovlen = d.niov + 1;
	n = sw_sys_recvmsg(dp->sock.fd, &msg, MSG_DONTWAIT);
	if (n == 0)
		ret = -EPIPE;
	else if (n < 0)
		ret = n == -EINTR ? -EAGAIN : (int)n;
	if (ret) {
		direct_put(&d);
		return ret;
	}
	*got = true;
	sw_dp_traffic(dp, &dp->rx_traffic, false, (uint64_t)n, 0, false);
	/* The parser sees the placed bytes where they landed (CRC). */
	placed = MIN((size_t)n, d.len);
	for (i = 0; !ret && placed; i++) {
		size_t take = MIN(placed, d.iov[i].iov_len);

		ret = sw_dp_rx_bytes(dp, d.iov[i].iov_base, take, true);
		placed -= take;
	}
	direct_put(&d);
	if (!ret && (size_t)n > d.len)
		ret = sw_dp_rx_bytes(dp, probe, (size_t)n - d.len, false);
	if (!ret && (size_t)n < d.len)
		ret = SW_DP_RX_SHORT;
	return ret;
}
