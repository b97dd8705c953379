/* SPDX-License-Identifier: MIT */
#include <arpa/inet.h>
#include <stdbool.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "tool_addr.h"

int tool_parse_addr(const char *text, uint16_t default_port,
		    struct sockaddr_storage *out)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai;
	const char *colon = strrchr(text, ':');
	const char *close = strchr(text, ']');
	char host[256], port[8];
	size_t hlen = strlen(text);

	if (text[0] == '[' && close) {
		hlen = (size_t)(close - text - 1);
		text++;
		colon = close[1] == ':' ? close + 1 : NULL;
	} else if (colon && strchr(text, ':') == colon) {
		hlen = (size_t)(colon - text);
	} else {
		/* No port, or an IPv6 literal without brackets. */
		colon = NULL;
	}
	if (hlen >= sizeof(host))
		return -1;
	memcpy(host, text, hlen);
	host[hlen] = 0;
	snprintf(port, sizeof(port), "%u",
		 colon ? (unsigned int)atoi(colon + 1) : default_port);
	if (getaddrinfo(host, port, &hints, &ai))
		return -1;
	memset(out, 0, sizeof(*out));
	memcpy(out, ai->ai_addr, ai->ai_addrlen);
	freeaddrinfo(ai);
	return 0;
}

ULONG tool_addr_len(const struct sockaddr *sa)
{
	return sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
					 : sizeof(struct sockaddr_in);
}

uint16_t tool_addr_port(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)(const void *)sa)
				     ->sin6_port);
	return ntohs(((const struct sockaddr_in *)(const void *)sa)->sin_port);
}

static void addr_clear_port(struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET6)
		((struct sockaddr_in6 *)ss)->sin6_port = 0;
	else
		((struct sockaddr_in *)ss)->sin_port = 0;
}

int tool_route_source(const struct sockaddr *dst, struct sockaddr_storage *src)
{
	socklen_t len = sizeof(*src);
	int fd = socket(dst->sa_family, SOCK_DGRAM, 0), ret = -1;

	if (fd < 0)
		return -1;
	memset(src, 0, sizeof(*src));
	/* A UDP connect() sends nothing: it only picks the route and the
	 * source address. */
	if (!connect(fd, dst, tool_addr_len(dst)) &&
	    !getsockname(fd, (struct sockaddr *)src, &len))
		ret = 0;
	close(fd);
	addr_clear_port(src);
	return ret;
}

static bool addr_same_host(const struct sockaddr *a, const struct sockaddr *b)
{
	if (a->sa_family != b->sa_family)
		return false;
	if (a->sa_family == AF_INET)
		return ((const struct sockaddr_in *)(const void *)a)
			       ->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)(const void *)b)
			       ->sin_addr.s_addr;
	return a->sa_family == AF_INET6 &&
	       !memcmp(&((const struct sockaddr_in6 *)(const void *)a)
				->sin6_addr,
		       &((const struct sockaddr_in6 *)(const void *)b)
				->sin6_addr,
		       sizeof(struct in6_addr));
}

NET_IFINDEX tool_ifindex_of(const struct sockaddr *addr)
{
	struct ifaddrs *ifs, *i;
	NET_IFINDEX idx = 0;

	if (getifaddrs(&ifs))
		return 0;
	for (i = ifs; i && !idx; i = i->ifa_next)
		if (i->ifa_addr && addr_same_host(i->ifa_addr, addr))
			idx = if_nametoindex(i->ifa_name);
	freeifaddrs(ifs);
	return idx;
}

bool tool_addr_is_any(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET6)
		return IN6_IS_ADDR_UNSPECIFIED(
			&((const struct sockaddr_in6 *)(const void *)sa)
				 ->sin6_addr);
	return sa->sa_family == AF_INET &&
	       ((const struct sockaddr_in *)(const void *)sa)
			       ->sin_addr.s_addr == htonl(INADDR_ANY);
}

void tool_addr_set_port(struct sockaddr_storage *ss, uint16_t port)
{
	if (ss->ss_family == AF_INET6)
		((struct sockaddr_in6 *)ss)->sin6_port = htons(port);
	else
		((struct sockaddr_in *)ss)->sin_port = htons(port);
}

int tool_if_addr(NET_IFINDEX ifindex, int family, struct sockaddr_storage *out)
{
	struct ifaddrs *ifs, *i;
	int ret = -1;

	if (getifaddrs(&ifs))
		return -1;
	for (i = ifs; i && ret; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != family ||
		    if_nametoindex(i->ifa_name) != ifindex)
			continue;
		memset(out, 0, sizeof(*out));
		memcpy(out, i->ifa_addr, tool_addr_len(i->ifa_addr));
		addr_clear_port(out);
		ret = 0;
	}
	freeifaddrs(ifs);
	return ret;
}

int tool_client_local(const struct sockaddr *dst,
		      const struct sockaddr_storage *bind, NET_IFINDEX ifindex,
		      struct sockaddr_storage *src, NET_IFINDEX *adapter)
{
	char text[INET6_ADDRSTRLEN + 8];

	if (bind) {
		*src = *bind;
	} else if (tool_route_source(dst, src)) {
		fprintf(stderr, "%s: no route to %s\n", tool_prog,
			tool_addr_str(dst, text, sizeof(text)));
		return -1;
	}
	if (!ifindex) {
		*adapter = tool_ifindex_of((const struct sockaddr *)src);
		if (*adapter)
			return 0;
		fprintf(stderr, "%s: no interface has address %s\n", tool_prog,
			tool_addr_str((const struct sockaddr *)src, text,
				      sizeof(text)));
		return -1;
	}
	*adapter = ifindex;
	if (!bind && tool_ifindex_of((const struct sockaddr *)src) != ifindex &&
	    tool_if_addr(ifindex, dst->sa_family, src)) {
		fprintf(stderr,
			"%s: interface %u has no address of %s's family\n",
			tool_prog, ifindex,
			tool_addr_str(dst, text, sizeof(text)));
		return -1;
	}
	return 0;
}

const char *tool_addr_str(const struct sockaddr *sa, char *buf, size_t len)
{
	char ip[INET6_ADDRSTRLEN] = "?";

	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const void *)sa;

		inet_ntop(AF_INET6, &s6->sin6_addr, ip, sizeof(ip));
		snprintf(buf, len, "[%s]:%u", ip, ntohs(s6->sin6_port));
	} else {
		const struct sockaddr_in *s4 = (const void *)sa;

		inet_ntop(AF_INET, &s4->sin_addr, ip, sizeof(ip));
		snprintf(buf, len, "%s:%u", ip, ntohs(s4->sin_port));
	}
	return buf;
}
