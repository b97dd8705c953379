/* SPDX-License-Identifier: MIT */
/* Socket addresses as the tools take and print them. */
#ifndef NDK_TOOLS_TOOL_ADDR_H
#define NDK_TOOLS_TOOL_ADDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>
#include <ndk/ndk.h>

/* The program name in messages; set by main. */
extern const char *tool_prog;

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
/* 0.0.0.0 or ::, the wildcard a server listens on everywhere. */
bool tool_addr_is_any(const struct sockaddr *sa);
void tool_addr_set_port(struct sockaddr_storage *ss, uint16_t port);
/* The first address of family on interface ifindex, with port 0: 0, or
 * -1 if it has none. */
int tool_if_addr(NET_IFINDEX ifindex, int family, struct sockaddr_storage *out);
/*
 * A client's local side (docs/tools.md, Servers): the source address is
 * bind when given (its port kept), else the one the kernel routes to dst
 * from (or, when that is not on ifindex, ifindex's first address of dst's
 * family); the adapter is ifindex's when given, else that of the
 * interface that has the source. 0, or -1 after printing why.
 */
int tool_client_local(const struct sockaddr *dst,
		      const struct sockaddr_storage *bind, NET_IFINDEX ifindex,
		      struct sockaddr_storage *src, NET_IFINDEX *adapter);
/* "a.b.c.d:port" or "[v6]:port". */
const char *tool_addr_str(const struct sockaddr *sa, char *buf, size_t len);

#endif
