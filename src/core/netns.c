/* SPDX-License-Identifier: MIT */
#include <unistd.h>
#include <sys/socket.h>
#include "core/netns.h"

#ifndef SO_NETNS_COOKIE
#define SO_NETNS_COOKIE 71
#endif

uint64_t ndk_netns_cookie(void)
{
	uint64_t cookie = 0;
	socklen_t len = sizeof(cookie);
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return 0;
	if (getsockopt(fd, SOL_SOCKET, SO_NETNS_COOKIE, &cookie, &len) ||
	    len != sizeof(cookie))
		cookie = 0;
	close(fd);
	return cookie;
}
