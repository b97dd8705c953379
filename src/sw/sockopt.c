/* SPDX-License-Identifier: MIT */
/*
 * TCP options of connection sockets (sw/sockopt.h). Linux reports a peer
 * that stopped acknowledging (TCP_USER_TIMEOUT) or answering keepalive
 * probes as ETIMEDOUT on the socket; the data path ends the stream with
 * it, and the disconnect event carries STATUS_IO_TIMEOUT.
 */
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include "sw/sockopt.h"
#include "core/compiler.h"
#include "core/config.h"

/* Hardware RDMA NICs give up on a silent peer within seconds; TCP's
 * defaults take about 15 minutes with data outstanding, and never when
 * idle. */
#define PEER_TIMEOUT_DEFAULT_MS 30000
#define KEEPALIVE_PROBES	3

uint64_t sw_peer_timeout_ms(void)
{
	return ndk_config_u64("NDK_PEER_TIMEOUT_MS", PEER_TIMEOUT_DEFAULT_MS, 0,
			      3600000);
}

void sw_sock_set_conn_options(int fd)
{
	static const int one = 1;
	uint64_t t = sw_peer_timeout_ms();
	unsigned int user_ms, idle_s, intvl_s;
	int probes = KEEPALIVE_PROBES;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (!t)
		return;
	user_ms = (unsigned int)t;
	idle_s = (unsigned int)MAX(t / 2 / 1000, 1);
	intvl_s = (unsigned int)MAX(t / (2 * KEEPALIVE_PROBES) / 1000, 1);
	setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_ms,
		   sizeof(user_ms));
	setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle_s, sizeof(idle_s));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl_s, sizeof(intvl_s));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &probes, sizeof(probes));
}
