/* SPDX-License-Identifier: MIT */
/*
 * Kept apart from the other files: <linux/tcp.h> has the whole struct
 * tcp_info but clashes with <netinet/tcp.h>, which they include.
 */
#include <errno.h>
#include <stddef.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <linux/tcp.h>
#include "sw/tcp_stats.h"

int sw_tcp_bytes_received(int fd, uint64_t *bytes)
{
	struct tcp_info ti;
	socklen_t len = sizeof(ti);

	if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len))
		return -errno;
	/* An older kernel fills a shorter structure. */
	if (len < offsetof(struct tcp_info, tcpi_bytes_received) +
			  sizeof(ti.tcpi_bytes_received))
		return -EOPNOTSUPP;
	*bytes = ti.tcpi_bytes_received;
	return 0;
}
