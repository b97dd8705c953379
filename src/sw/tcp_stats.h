/* SPDX-License-Identifier: MIT */
/*
 * TCP statistics of a connected socket that the C library's <netinet/tcp.h>
 * does not expose (its struct tcp_info stops before them).
 */
#ifndef SW_TCP_STATS_H
#define SW_TCP_STATS_H

#include <stdint.h>

/*
 * Stores in *bytes how many payload bytes the peer has sent us on fd so
 * far (TCP_INFO tcpi_bytes_received, Linux 4.1 and later). Returns 0, or
 * a negative errno (-EOPNOTSUPP when the kernel does not report it).
 */
int sw_tcp_bytes_received(int fd, uint64_t *bytes);

#endif /* SW_TCP_STATS_H */
