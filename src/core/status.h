/* SPDX-License-Identifier: MIT */
/*
 * The one place where internal errors (negative errno) become API
 * statuses (NTSTATUS). Wire errors (Terminate codes) live in src/iwarp.
 */
#ifndef NDK_CORE_STATUS_H
#define NDK_CORE_STATUS_H

#include <ndk/ndk.h>

/* The operation an errno came from: the same errno means different things. */
enum ndk_errno_site {
	NDK_SITE_GENERIC,
	NDK_SITE_BIND, /* bind(): EADDRINUSE, EADDRNOTAVAIL */
	NDK_SITE_CONNECT, /* connect() and the TCP handshake */
	/* Why an established stream ended, as a disconnect event's reason:
	 * EPIPE is the peer's FIN (graceful, STATUS_SUCCESS), EPROTO a
	 * Terminate. */
	NDK_SITE_STREAM_END,
};

/* Maps 0 to STATUS_SUCCESS and -errno to the NTSTATUS for that site. */
NTSTATUS ndk_status_from_errno(int neg_errno, enum ndk_errno_site site);

#endif /* NDK_CORE_STATUS_H */
