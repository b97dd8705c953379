/* SPDX-License-Identifier: MIT */
/* Socket addresses as the tools take and print them. */
#ifndef NDK_TOOLS_TOOL_ADDR_H
#define NDK_TOOLS_TOOL_ADDR_H

#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>
#include <ndk/ndk.h>

/*
 * "HOST", "HOST:PORT", "[V6]:PORT" or a bare IPv6 literal; HOST is an
 * address or a name. Returns 0, or -1 if it does not resolve.
 */
int tool_parse_addr(const char *text, uint16_t default_port,
		    struct sockaddr_storage *out);
/* The length NDK calls take for sa's family. */
ULONG tool_addr_len(const struct sockaddr *sa);
uint16_t tool_addr_port(const struct sockaddr *sa);
/* The local address the kernel routes to dst from, with port 0. */
int tool_route_source(const struct sockaddr *dst, struct sockaddr_storage *src);
/* The interface that owns addr (its adapter), or 0. */
NET_IFINDEX tool_ifindex_of(const struct sockaddr *addr);
/* "a.b.c.d:port" or "[v6]:port". */
const char *tool_addr_str(const struct sockaddr *sa, char *buf, size_t len);

#endif
