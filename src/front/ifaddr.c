/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <ifaddrs.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "front/ifaddr.h"

void ndk_ifaddr_init(struct ndk_ifaddr_cache *c, const char *ifname,
		     unsigned int ifindex)
{
	struct sockaddr_nl sa = {
		.nl_family = AF_NETLINK,
		.nl_groups =
			RTMGRP_LINK | RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR,
	};

	memset(c, 0, sizeof(*c));
	ndk_lock_init(&c->lock, NDK_LOCK_IFADDR);
	snprintf(c->ifname, sizeof(c->ifname), "%s", ifname);
	c->ifindex = ifindex;
	c->nl_fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK,
			  NETLINK_ROUTE);
	if (c->nl_fd >= 0 &&
	    bind(c->nl_fd, (struct sockaddr *)&sa, sizeof(sa))) {
		close(c->nl_fd);
		c->nl_fd = -1;
	}
}

void ndk_ifaddr_fini(struct ndk_ifaddr_cache *c)
{
	if (c->nl_fd >= 0)
		close(c->nl_fd);
	free(c->addrs);
	ndk_lock_destroy(&c->lock);
}

/*
 * Empties the notification socket; true if anything changed since the
 * last call (a message, or an overrun that lost some).
 */
static bool ifaddr_changed(struct ndk_ifaddr_cache *c)
{
	char buf[4096];
	bool changed = false;
	ssize_t n;

	for (;;) {
		n = recv(c->nl_fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n > 0) {
			changed = true;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		/* ENOBUFS: notifications were dropped. */
		if (n < 0 && errno != EAGAIN)
			changed = true;
		return changed;
	}
}

/* An address of our interface? IPv4 addresses carry their label
 * ("eth0:1") as the name; device names never contain ':'. */
static bool ifaddr_ours(const struct ndk_ifaddr_cache *c,
			const struct ifaddrs *ifa)
{
	size_t len = strlen(c->ifname);

	return ifa->ifa_addr &&
	       (ifa->ifa_addr->sa_family == AF_INET ||
		ifa->ifa_addr->sa_family == AF_INET6) &&
	       !strncmp(ifa->ifa_name, c->ifname, len) &&
	       (ifa->ifa_name[len] == '\0' || ifa->ifa_name[len] == ':');
}

/* Reads the interface's addresses into the cache. */
static int ifaddr_load(struct ndk_ifaddr_cache *c)
{
	struct ifaddrs *list, *ifa;
	struct ndk_ifaddr *v;
	size_t n = 0;

	if (getifaddrs(&list))
		return errno ? -errno : -ENOMEM;
	for (ifa = list; ifa; ifa = ifa->ifa_next)
		n += ifaddr_ours(c, ifa);
	v = calloc(n ? n : 1, sizeof(*v));
	if (!v) {
		freeifaddrs(list);
		return -ENOMEM;
	}
	n = 0;
	for (ifa = list; ifa; ifa = ifa->ifa_next) {
		if (!ifaddr_ours(c, ifa))
			continue;
		v[n].family = ifa->ifa_addr->sa_family;
		if (v[n].family == AF_INET)
			memcpy(&v[n].addr,
			       &((const struct sockaddr_in *)(const void *)
					 ifa->ifa_addr)
					->sin_addr,
			       sizeof(struct in_addr));
		else
			v[n].addr = ((const struct sockaddr_in6 *)(const void *)
					     ifa->ifa_addr)
					    ->sin6_addr;
		n++;
	}
	freeifaddrs(list);
	free(c->addrs);
	c->addrs = v;
	c->n = n;
	return 0;
}

static bool ifaddr_match(const struct ndk_ifaddr_cache *c,
			 const struct sockaddr *addr)
{
	const struct sockaddr_in *a4 = (const void *)addr;
	const struct sockaddr_in6 *a6 = (const void *)addr;
	size_t i;

	for (i = 0; i < c->n; i++) {
		if (c->addrs[i].family != addr->sa_family)
			continue;
		if (addr->sa_family == AF_INET) {
			if (!memcmp(&c->addrs[i].addr, &a4->sin_addr,
				    sizeof(a4->sin_addr)))
				return true;
			continue;
		}
		if (memcmp(&c->addrs[i].addr, &a6->sin6_addr,
			   sizeof(a6->sin6_addr)))
			continue;
		/* A link-local address names this link only. */
		return !IN6_IS_ADDR_LINKLOCAL(&a6->sin6_addr) ||
		       a6->sin6_scope_id == c->ifindex;
	}
	return false;
}

int ndk_ifaddr_has(struct ndk_ifaddr_cache *c, const struct sockaddr *addr)
{
	int ret = 0;
	bool found;

	if (addr->sa_family != AF_INET && addr->sa_family != AF_INET6)
		return 0;
	ndk_lock(&c->lock);
	/* Drained before the read, so a change during it invalidates it. */
	if (c->nl_fd < 0 || ifaddr_changed(c))
		c->valid = false;
	if (!c->valid) {
		ret = ifaddr_load(c);
		c->valid = !ret && c->nl_fd >= 0;
	}
	found = !ret && ifaddr_match(c, addr);
	ndk_unlock(&c->lock);
	return ret ? ret : found;
}
