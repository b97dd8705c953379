/* SPDX-License-Identifier: MIT */
/*
 * The connector's side of its QP. Every call into src/sw/ (the QP's
 * connection state, ndk_qp_cm_*, and its data path, ndk_dp_*) is one small
 * function here. From ESTABLISHED on the data path owns the socket; the
 * connector asks it through these calls and never takes its locks. c->conn.lock
 * held throughout (docs/design.md, Locks).
 */
#include <errno.h>
#include "sw/connector_int.h"
#include "core/log.h"
#include "sw/dp.h"
#include "sw/qp.h"

NTSTATUS conn_bind_qp(struct sw_connector *c, struct sw_qp *qp)
{
	int ret = sw_qp_cm_connecting(qp, c);

	if (ret)
		return ret == -EBUSY ? STATUS_CONNECTION_ACTIVE
				     : STATUS_INVALID_DEVICE_STATE;
	ret = ndk_obj_link(&c->conn.obj, &qp->obj);
	if (ret && ret != -EEXIST) {
		sw_qp_cm_failed(qp);
		return STATUS_INVALID_PARAMETER;
	}
	c->qp = qp;
	return STATUS_SUCCESS;
}

void conn_unbind_qp(struct sw_connector *c)
{
	sw_qp_cm_failed(c->qp);
	ndk_obj_unlink(&c->conn.obj, &c->qp->obj);
	c->qp = NULL;
}

void conn_qp_failed(struct sw_connector *c)
{
	if (c->qp && sw_qp_state(c->qp) == SW_QP_CONNECTING)
		sw_qp_cm_failed(c->qp);
}

void conn_qp_disconnected(struct sw_connector *c, bool flush)
{
	if (!c->qp)
		return;
	/* The data path closes the socket it owns. */
	if (c->qp->dp)
		sw_dp_detach(c->qp->dp);
	if (sw_qp_state(c->qp) == SW_QP_CONNECTED)
		sw_qp_cm_disconnected(c->qp, false, flush);
	else if (flush)
		sw_qp_flush(c->qp);
}

/* The data path's report of the end of the stream (engine thread). The
 * connector is alive: a close off the engine waits for the engine to
 * pass (c->engine_used). */
static void conn_dp_ended(void *ctx, int err)
{
	struct sw_connector *c = ctx;

	ndk_lock(&c->conn.lock);
	conn_stream_ended(c, err);
	ndk_unlock(&c->conn.lock);
}

/*
 * The handshake is over: the socket, its engine registration and any
 * handshake bytes not yet written go to the QP's data path, and the QP is
 * connected. The connector keeps no copy of the socket. On failure the
 * socket is still ours (unregistered).
 */
int conn_attach_dp(struct sw_connector *c)
{
	struct sw_dp_socket s = {
		.fd = c->fd,
		.family = c->conn.local.ss_family,
		.engine = conn_engine(c),
		.crc = c->crc,
		.large_fpdu = c->large_fpdu,
		.ird = c->conn.eff_ird,
		.ord = c->conn.eff_ord,
		.rtr_sent = c->conn.passive ? MPA_RTR_NONE : c->rtr,
		.rtr_received = c->conn.passive ? c->rtr : MPA_RTR_NONE,
		.unsent = c->tx + c->tx_off,
		.unsent_len = c->tx_len - c->tx_off,
		.end_fn = conn_dp_ended,
		.end_ctx = c,
	};
	int ret;

	/* One registration per socket: ours goes before the data path's. A
	 * wake-up of ours already fetched finds c->fd < 0 and does nothing. */
	if (c->io_added) {
		ndk_engine_del_fd(conn_engine(c), &c->io);
		c->io_added = false;
	}
	ret = sw_qp_cm_established(c->qp, &s);
	if (ret)
		return ret;
	c->fd = -1;
	c->tx_len = c->tx_off = 0;
	/* From now on the engine may call conn_dp_ended. */
	c->engine_used = true;
	return 0;
}

bool conn_dp_nudge(struct sw_connector *c)
{
	return c->qp && c->qp->dp && sw_dp_nudge(c->qp->dp);
}

void conn_dp_shutdown(struct sw_connector *c)
{
	if (c->qp && c->qp->dp)
		sw_dp_shutdown(c->qp->dp);
}
