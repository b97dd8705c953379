/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <string.h>
#include "front/address.h"
#include "front/adapter.h"
#include "core/status.h"

socklen_t ndk_addr_len(const struct sockaddr *sa)
{
	return sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
					 : sizeof(struct sockaddr_in);
}

int ndk_addr_check(const struct sockaddr *sa, ULONG len)
{
	if (!sa || len < sizeof(sa->sa_family))
		return -EINVAL;
	if (sa->sa_family != AF_INET && sa->sa_family != AF_INET6)
		return -EINVAL;
	return len >= ndk_addr_len(sa) ? 0 : -EINVAL;
}

NTSTATUS ndk_addr_copy_out(const struct sockaddr *sa, PSOCKADDR out, ULONG *len)
{
	socklen_t need = ndk_addr_len(sa);

	if (!len)
		return STATUS_INVALID_PARAMETER;
	if (*len < need || !out) {
		*len = need;
		return STATUS_BUFFER_TOO_SMALL;
	}
	memcpy(out, sa, need);
	*len = need;
	return STATUS_SUCCESS;
}

NTSTATUS ndk_endpoint_local_address(const struct ndk_endpoint *ep,
				    PSOCKADDR pAddress, ULONG *pAddressLength)
{
	socklen_t len;

	if (!ep)
		return STATUS_INVALID_DEVICE_STATE;
	return ndk_addr_copy_out(ndk_endpoint_addr(ep, &len), pAddress,
				 pAddressLength);
}

NTSTATUS ndk_local_endpoint_acquire(struct ndk_adapter *ad,
				    const struct sockaddr *sa, ULONG len,
				    enum ndk_endpoint_kind kind,
				    struct ndk_endpoint **epp)
{
	int ret;

	if (ndk_addr_check(sa, len))
		return STATUS_INVALID_PARAMETER;
	/* The endpoint must be an address of this adapter (NdkListen,
	 * NdkConnect, NdkCreateSharedEndpoint: STATUS_INVALID_ADDRESS). */
	ret = ndk_adapter_has_addr(ad, sa);
	if (ret < 0)
		return ndk_status_from_errno(ret, NDK_SITE_GENERIC);
	if (!ret)
		return STATUS_INVALID_ADDRESS;
	ret = ndk_endpoint_acquire(sa, ndk_addr_len(sa), kind, epp);
	return ndk_status_from_errno(ret, NDK_SITE_BIND);
}
