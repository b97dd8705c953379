/* SPDX-License-Identifier: MIT */
/*
 * The addresses of one network interface, cached for the checks that
 * NdkListen, NdkConnect and NdkCreateSharedEndpoint make on every call
 * (STATUS_INVALID_ADDRESS). Reading them (getifaddrs: a netlink dump)
 * costs about ten system calls; the cache costs one. A NETLINK_ROUTE
 * socket subscribed to address and link changes says when the copy is
 * stale: the kernel queues the notification before the change's own
 * system call returns, so a change that happened before a check is
 * always seen by it.
 */
#ifndef NDK_FRONT_IFADDR_H
#define NDK_FRONT_IFADDR_H

#include <net/if.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>
#include "core/lock.h"

struct ndk_ifaddr {
	sa_family_t family;
	struct in6_addr addr; /* IPv4 in the first 4 bytes */
};

struct ndk_ifaddr_cache {
	struct ndk_lock lock;
	int nl_fd; /* change notifications; -1: no cache, read every time */
	bool valid;
	char ifname[IF_NAMESIZE];
	unsigned int ifindex;
	struct ndk_ifaddr *addrs;
	size_t n;
};

/* Starts watching interface ifname / ifindex. Never fails: without the
 * notification socket every check reads the addresses afresh. */
void ndk_ifaddr_init(struct ndk_ifaddr_cache *c, const char *ifname,
		     unsigned int ifindex);
void ndk_ifaddr_fini(struct ndk_ifaddr_cache *c);

/*
 * 1 if addr (AF_INET or AF_INET6, port ignored) is an address of the
 * interface now, 0 if not, or a negative errno if its addresses could not
 * be read. IPv6 link-local addresses must carry the interface's scope id.
 */
int ndk_ifaddr_has(struct ndk_ifaddr_cache *c, const struct sockaddr *addr);

#endif /* NDK_FRONT_IFADDR_H */
