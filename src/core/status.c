/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include "core/compiler.h"
#include "core/status.h"

#define NDK_STATUS_NAMES(X)                 \
	X(STATUS_SUCCESS)                   \
	X(STATUS_TIMEOUT)                   \
	X(STATUS_PENDING)                   \
	X(STATUS_BUFFER_OVERFLOW)           \
	X(STATUS_DEVICE_BUSY)               \
	X(STATUS_UNSUCCESSFUL)              \
	X(STATUS_NOT_IMPLEMENTED)           \
	X(STATUS_ACCESS_VIOLATION)          \
	X(STATUS_INVALID_HANDLE)            \
	X(STATUS_INVALID_PARAMETER)         \
	X(STATUS_INVALID_DEVICE_REQUEST)    \
	X(STATUS_NO_MEMORY)                 \
	X(STATUS_ACCESS_DENIED)             \
	X(STATUS_BUFFER_TOO_SMALL)          \
	X(STATUS_INVALID_PARAMETER_MIX)     \
	X(STATUS_DATA_OVERRUN)              \
	X(STATUS_DATA_ERROR)                \
	X(STATUS_SHARING_VIOLATION)         \
	X(STATUS_INSUFFICIENT_RESOURCES)    \
	X(STATUS_DEVICE_NOT_READY)          \
	X(STATUS_IO_TIMEOUT)                \
	X(STATUS_NOT_SUPPORTED)             \
	X(STATUS_BAD_NETWORK_PATH)          \
	X(STATUS_INTERNAL_ERROR)            \
	X(STATUS_INVALID_USER_BUFFER)       \
	X(STATUS_INVALID_PARAMETER_1)       \
	X(STATUS_INVALID_PARAMETER_2)       \
	X(STATUS_INVALID_PARAMETER_3)       \
	X(STATUS_INVALID_PARAMETER_4)       \
	X(STATUS_INVALID_PARAMETER_5)       \
	X(STATUS_INVALID_PARAMETER_6)       \
	X(STATUS_INVALID_PARAMETER_7)       \
	X(STATUS_INVALID_PARAMETER_8)       \
	X(STATUS_INVALID_PARAMETER_9)       \
	X(STATUS_INVALID_PARAMETER_10)      \
	X(STATUS_INVALID_PARAMETER_11)      \
	X(STATUS_INVALID_PARAMETER_12)      \
	X(STATUS_CANCELLED)                 \
	X(STATUS_LOCAL_DISCONNECT)          \
	X(STATUS_REMOTE_DISCONNECT)         \
	X(STATUS_REMOTE_RESOURCES)          \
	X(STATUS_INVALID_CONNECTION)        \
	X(STATUS_INVALID_ADDRESS)           \
	X(STATUS_INVALID_DEVICE_STATE)      \
	X(STATUS_INVALID_BUFFER_SIZE)       \
	X(STATUS_INVALID_ADDRESS_COMPONENT) \
	X(STATUS_TOO_MANY_ADDRESSES)        \
	X(STATUS_ADDRESS_ALREADY_EXISTS)    \
	X(STATUS_ADDRESS_CLOSED)            \
	X(STATUS_CONNECTION_DISCONNECTED)   \
	X(STATUS_CONNECTION_RESET)          \
	X(STATUS_NOT_FOUND)                 \
	X(STATUS_RETRY)                     \
	X(STATUS_CONNECTION_REFUSED)        \
	X(STATUS_GRACEFUL_DISCONNECT)       \
	X(STATUS_ADDRESS_NOT_ASSOCIATED)    \
	X(STATUS_CONNECTION_INVALID)        \
	X(STATUS_CONNECTION_ACTIVE)         \
	X(STATUS_NETWORK_UNREACHABLE)       \
	X(STATUS_HOST_UNREACHABLE)          \
	X(STATUS_PROTOCOL_UNREACHABLE)      \
	X(STATUS_PORT_UNREACHABLE)          \
	X(STATUS_REQUEST_ABORTED)           \
	X(STATUS_CONNECTION_ABORTED)        \
	X(STATUS_CONNECTION_COUNT_LIMIT)    \
	X(STATUS_DEVICE_REMOVED)            \
	X(STATUS_IMPLEMENTATION_LIMIT)      \
	X(STATUS_NDIS_BAD_VERSION)          \
	X(STATUS_NDIS_ADAPTER_NOT_READY)    \
	X(NDIS_STATUS_BAD_VERSION)          \
	X(NDIS_STATUS_ADAPTER_NOT_FOUND)    \
	X(NDIS_STATUS_ADAPTER_NOT_READY)    \
	X(NDIS_STATUS_INVALID_LENGTH)       \
	X(NDIS_STATUS_BUFFER_TOO_SHORT)     \
	X(NDIS_STATUS_INVALID_OID)

static const struct {
	NTSTATUS status;
	const char *name;
} status_names[] = {
#define X(s) { s, #s },
	NDK_STATUS_NAMES(X)
#undef X
};

NDK_EXPORT PCSTR NdkStatusName(NTSTATUS Status)
{
	/* Unknown codes are formatted per thread so callers may keep them. */
	static _Thread_local char unknown[16];
	size_t i;

	for (i = 0; i < ARRAY_SIZE(status_names); i++)
		if (status_names[i].status == Status)
			return status_names[i].name;
	snprintf(unknown, sizeof(unknown), "0x%08X", (unsigned int)Status);
	return unknown;
}

NTSTATUS ndk_status_from_errno(int neg_errno, enum ndk_errno_site site)
{
	switch (-neg_errno) {
	case 0:
		return STATUS_SUCCESS;
	case EADDRINUSE:
		/* bind: the local address is taken (NdkConnect/NdkListen). */
		return site == NDK_SITE_BIND ? STATUS_SHARING_VIOLATION
					     : STATUS_ADDRESS_ALREADY_EXISTS;
	case EADDRNOTAVAIL:
		/* connect on a bound socket: that 4-tuple already exists. */
		return site == NDK_SITE_CONNECT ? STATUS_ADDRESS_ALREADY_EXISTS
						: STATUS_INVALID_ADDRESS;
	case EEXIST:
		/* The 4-tuple registry: that connection exists already. */
		return STATUS_ADDRESS_ALREADY_EXISTS;
	case ECONNREFUSED:
		return STATUS_CONNECTION_REFUSED;
	case ENETUNREACH:
	case ENETDOWN:
		return STATUS_NETWORK_UNREACHABLE;
	case EHOSTUNREACH:
	case EHOSTDOWN:
		return STATUS_HOST_UNREACHABLE;
	case ETIMEDOUT:
		return STATUS_IO_TIMEOUT;
	case ECONNRESET:
		return site == NDK_SITE_CONNECT ? STATUS_CONNECTION_REFUSED
						: STATUS_CONNECTION_RESET;
	case EPIPE:
		return site == NDK_SITE_STREAM_END ? STATUS_SUCCESS
						   : STATUS_CONNECTION_ABORTED;
	case ECONNABORTED:
		return STATUS_CONNECTION_ABORTED;
	case ECANCELED:
		return STATUS_CANCELLED;
	case ENOMEM:
	case ENOBUFS:
	case EMFILE:
	case ENFILE:
		return STATUS_INSUFFICIENT_RESOURCES;
	case EAGAIN:
		/* No ephemeral port left (connect on an unbound socket). */
		return site == NDK_SITE_GENERIC ? STATUS_INSUFFICIENT_RESOURCES
						: STATUS_TOO_MANY_ADDRESSES;
	case EINVAL:
	case EAFNOSUPPORT:
		return STATUS_INVALID_PARAMETER;
	case EACCES:
	case EPERM:
		return STATUS_ACCESS_DENIED;
	case EFAULT:
		return STATUS_ACCESS_VIOLATION;
	case EPROTO:
		/* A Terminate ended the stream. */
		return site == NDK_SITE_STREAM_END ? STATUS_CONNECTION_ABORTED
						   : STATUS_DATA_ERROR;
	case EBADMSG:
		return STATUS_DATA_ERROR;
	case ENOTCONN:
		return STATUS_CONNECTION_INVALID;
	case EOPNOTSUPP:
		return STATUS_NOT_SUPPORTED;
	case ENOSYS:
		return STATUS_NOT_IMPLEMENTED;
	case EMSGSIZE:
		return STATUS_INVALID_BUFFER_SIZE;
	default:
		return STATUS_UNSUCCESSFUL;
	}
}
