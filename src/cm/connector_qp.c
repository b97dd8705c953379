/* SPDX-License-Identifier: MIT */
/*
 * The connector's side of its QP. Every call into src/qp/ (the QP's
 * connection state, ndk_qp_cm_*, and its data path, ndk_dp_*) is one small
 * function here, so that this seam is the one place to rewire when the
 * data path takes over the established connection's socket. c->lock held
 * throughout (lock order: connector, then QP, then data path).
 */
#include <errno.h>
#include "cm/connector_int.h"
#include "core/log.h"
#include "qp/dp.h"
#include "qp/qp.h"

NTSTATUS conn_bind_qp(struct ndk_connector *c, struct ndk_qp *qp)
{
	int ret = ndk_qp_cm_connecting(qp, c);

	if (ret)
		return ret == -EBUSY ? STATUS_CONNECTION_ACTIVE
				     : STATUS_INVALID_DEVICE_STATE;
	ret = ndk_obj_link(&c->obj, &qp->obj);
	if (ret && ret != -EEXIST) {
		ndk_qp_cm_failed(qp);
		return STATUS_INVALID_PARAMETER;
	}
	c->qp = qp;
	return STATUS_SUCCESS;
}

void conn_unbind_qp(struct ndk_connector *c)
{
	ndk_qp_cm_failed(c->qp);
	ndk_obj_unlink(&c->obj, &c->qp->obj);
	c->qp = NULL;
}

void conn_qp_failed(struct ndk_connector *c)
{
	if (c->qp && ndk_qp_state(c->qp) == NDK_QP_CONNECTING)
		ndk_qp_cm_failed(c->qp);
}

void conn_qp_disconnected(struct ndk_connector *c, bool flush)
{
	if (!c->qp)
		return;
	/* The data path stops using the socket before it goes. */
	ndk_dp_detach(c->qp);
	if (ndk_qp_state(c->qp) == NDK_QP_CONNECTED)
		ndk_qp_cm_disconnected(c->qp, false, flush);
	else if (flush)
		ndk_qp_flush(c->qp);
}

int conn_attach_dp(struct ndk_connector *c)
{
	int ret =
		ndk_dp_attach(c->qp, c->fd, c->local.ss_family, conn_engine(c),
			      &c->io, c->crc, c->eff.ird, c->eff.ord);

	if (ret)
		return ret;
	return ndk_qp_cm_connected(c->qp, c->eff.ird, c->eff.ord);
}

void conn_detach_dp(struct ndk_connector *c)
{
	if (c->qp)
		ndk_dp_detach(c->qp);
}

int conn_dp_io(struct ndk_connector *c, uint32_t events)
{
	return c->qp ? ndk_dp_io(c->qp, events) : -ENOTCONN;
}

bool conn_dp_send_nudge(struct ndk_connector *c)
{
	struct ndk_dp *dp = c->qp ? c->qp->dp : NULL;
	bool sent;

	if (!dp)
		return false;
	pthread_mutex_lock(&dp->lock);
	/* Between FPDUs only; the data path's writer sends it (and finishes
	 * it on EPOLLOUT if the socket takes only part). */
	sent = ndk_dp_send_rtr_locked(dp, MPA_RTR_WRITE);
	pthread_mutex_unlock(&dp->lock);
	return sent;
}
