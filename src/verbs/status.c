/* SPDX-License-Identifier: MIT */
/*
 * The one mapping of the verbs provider's errors to NTSTATUS
 * (docs/verbs.md, Statuses): errnos of verbs and rdma_cm calls, work
 * completion statuses, and the rdma_cm events that end a connection
 * attempt or a connection. Errnos go through core/status.c where they
 * mean what they mean for sockets.
 */
#include <errno.h>
#include "core/status.h"
#include "verbs/verbs.h"

NTSTATUS ndk_verbs_errno_status(int err, enum ndk_verbs_site site)
{
	if (err > 0)
		err = -err;
	switch (site) {
	case NDK_VERBS_POST:
		/* The queue is full (ENOMEM), or the QP is not in a state
		 * that takes requests. A library that failed a system call
		 * returns its -1 (siw's doorbell) and leaves errno: posting
		 * is never a matter of permission (EPERM). */
		if (err == -1 && errno > 0)
			err = -errno;
		if (err == -ENOMEM)
			return STATUS_INSUFFICIENT_RESOURCES;
		if (err == -ENOTCONN || err == -EIO)
			return STATUS_CONNECTION_INVALID;
		return ndk_status_from_errno(err, NDK_SITE_GENERIC);
	case NDK_VERBS_CREATE:
		/* A size the device refuses is an invalid parameter, an
		 * operation it lacks is not supported; anything else is the
		 * device refusing one more object (siw says ENOSPC when its
		 * small queues run out, EEXIST after some hundreds of QPs in
		 * one process; rxe ENOMEM). */
		if (err == -EINVAL)
			return STATUS_INVALID_PARAMETER;
		if (err == -EOPNOTSUPP || err == -ENOSYS)
			return STATUS_NOT_SUPPORTED;
		return STATUS_INSUFFICIENT_RESOURCES;
	case NDK_VERBS_CM_BIND:
		/* rdma_cm's port space: another id holds the address. */
		return ndk_status_from_errno(err, NDK_SITE_BIND);
	case NDK_VERBS_CM:
	default:
		return ndk_status_from_errno(err, NDK_SITE_CONNECT);
	}
}

NTSTATUS ndk_verbs_wc_status(enum ibv_wc_status st)
{
	switch (st) {
	case IBV_WC_SUCCESS:
		return STATUS_SUCCESS;
	case IBV_WC_WR_FLUSH_ERR:
		return STATUS_CANCELLED;
	case IBV_WC_LOC_LEN_ERR:
		/* A Send larger than the receive it landed in. */
		return STATUS_BUFFER_OVERFLOW;
	case IBV_WC_LOC_PROT_ERR:
	case IBV_WC_LOC_ACCESS_ERR:
	case IBV_WC_MW_BIND_ERR:
		/* A local SGE outside registered memory or its access. */
		return STATUS_ACCESS_VIOLATION;
	case IBV_WC_REM_ACCESS_ERR:
	case IBV_WC_REM_INV_REQ_ERR:
	case IBV_WC_REM_OP_ERR:
	case IBV_WC_REM_ABORT_ERR:
	case IBV_WC_INV_EECN_ERR:
	case IBV_WC_INV_EEC_STATE_ERR:
		/* The peer refused the request (docs/ndk.md, Work
		 * requests: a Read beyond the remote buffer). */
		return STATUS_REMOTE_RESOURCES;
	case IBV_WC_RETRY_EXC_ERR:
	case IBV_WC_RNR_RETRY_EXC_ERR:
	case IBV_WC_RESP_TIMEOUT_ERR:
		return STATUS_IO_TIMEOUT;
	case IBV_WC_LOC_QP_OP_ERR:
	case IBV_WC_LOC_EEC_OP_ERR:
		return STATUS_INVALID_DEVICE_REQUEST;
	case IBV_WC_BAD_RESP_ERR:
	case IBV_WC_LOC_RDD_VIOL_ERR:
	case IBV_WC_REM_INV_RD_REQ_ERR:
		return STATUS_DATA_ERROR;
	case IBV_WC_FATAL_ERR:
	case IBV_WC_GENERAL_ERR:
	default:
		return STATUS_UNSUCCESSFUL;
	}
}

NTSTATUS ndk_verbs_cm_status(enum rdma_cm_event_type event, int status,
			     bool iwarp)
{
	switch (event) {
	case RDMA_CM_EVENT_ESTABLISHED:
	case RDMA_CM_EVENT_CONNECT_RESPONSE:
		return STATUS_SUCCESS;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
		/* status is -errno: -ENETUNREACH, -EHOSTUNREACH,
		 * -ETIMEDOUT (no ARP answer), -EADDRNOTAVAIL... */
		return status ? ndk_status_from_errno(status < 0 ? status
								 : -status,
						      NDK_SITE_CONNECT)
			      : STATUS_HOST_UNREACHABLE;
	case RDMA_CM_EVENT_REJECTED:
		/* A reject (IB CM REJ, an MPA reject), no listener (IB:
		 * invalid service id; iWARP: the TCP reset) or a paused
		 * listener: all "refused" (NDK_FN_CONNECT). */
		return STATUS_CONNECTION_REFUSED;
	case RDMA_CM_EVENT_UNREACHABLE:
		/* IB: no reply to a REQ or REP; iWARP: no MPA Reply. */
		return STATUS_IO_TIMEOUT;
	case RDMA_CM_EVENT_CONNECT_ERROR:
		return status ? ndk_status_from_errno(status < 0 ? status
								 : -status,
						      NDK_SITE_CONNECT)
			      : STATUS_CONNECTION_ABORTED;
	case RDMA_CM_EVENT_DISCONNECTED:
		/*
		 * A disconnect event's reason: iWARP reports how the stream
		 * ended (0 for the peer's FIN, -ECONNRESET for a reset), IB
		 * a DREQ (0). As for the software provider, 0 is a graceful
		 * end.
		 */
		if (!status)
			return STATUS_SUCCESS;
		if (iwarp && status == -ECONNRESET)
			return STATUS_CONNECTION_RESET;
		if (status == -ETIMEDOUT)
			return STATUS_IO_TIMEOUT;
		return STATUS_CONNECTION_ABORTED;
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		return STATUS_CONNECTION_ABORTED;
	default:
		return STATUS_UNSUCCESSFUL;
	}
}
