/* SPDX-License-Identifier: MIT */
/*
 * The TCP state of one connection (verbs/tcp_state.h). First one exact
 * sock_diag query: the kernel looks the connection up by its four
 * addresses as an arriving segment would, and answers with the socket's
 * state, or ENOENT. ENOENT also means that no tcp_diag module answers
 * (a kernel without it, or one that cannot load it), so a "not found" is
 * checked against /proc/net/tcp(6), which every kernel has. A lookup that
 * finds no connection may find the listener on the port instead, which
 * means the same: the connection is gone.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include "core/log.h"
#include "verbs/tcp_state.h"

struct diag_req {
	struct nlmsghdr nh;
	struct inet_diag_req_v2 r;
};

static bool fill_id(struct inet_diag_sockid *id, const struct sockaddr *local,
		    const struct sockaddr *peer)
{
	if (local->sa_family != peer->sa_family)
		return false;
	if (local->sa_family == AF_INET) {
		const struct sockaddr_in *l = (const void *)local;
		const struct sockaddr_in *p = (const void *)peer;

		id->idiag_sport = l->sin_port;
		id->idiag_dport = p->sin_port;
		memcpy(id->idiag_src, &l->sin_addr, sizeof(l->sin_addr));
		memcpy(id->idiag_dst, &p->sin_addr, sizeof(p->sin_addr));
	} else if (local->sa_family == AF_INET6) {
		const struct sockaddr_in6 *l = (const void *)local;
		const struct sockaddr_in6 *p = (const void *)peer;

		id->idiag_sport = l->sin6_port;
		id->idiag_dport = p->sin6_port;
		memcpy(id->idiag_src, &l->sin6_addr, sizeof(l->sin6_addr));
		memcpy(id->idiag_dst, &p->sin6_addr, sizeof(p->sin6_addr));
	} else {
		return false;
	}
	id->idiag_cookie[0] = INET_DIAG_NOCOOKIE;
	id->idiag_cookie[1] = INET_DIAG_NOCOOKIE;
	return true;
}

/* The state the kernel reports, -ENOENT if none, another -errno. */
static int query_state(const struct sockaddr *local,
		       const struct sockaddr *peer)
{
	struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
	struct diag_req req;
	union {
		struct nlmsghdr nh;
		char buf[1024];
	} ans;
	struct nlmsghdr *nh;
	ssize_t n;
	int fd, ret = -EIO;

	memset(&req, 0, sizeof(req));
	if (!fill_id(&req.r.id, local, peer))
		return -EAFNOSUPPORT;
	req.nh.nlmsg_len = sizeof(req);
	req.nh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
	req.nh.nlmsg_flags = NLM_F_REQUEST;
	req.nh.nlmsg_seq = 1;
	req.r.sdiag_family = (__u8)local->sa_family;
	req.r.sdiag_protocol = IPPROTO_TCP;
	req.r.idiag_states = ~0u;
	fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (fd < 0)
		return -errno;
	if (sendto(fd, &req, sizeof(req), 0, (struct sockaddr *)&kernel,
		   sizeof(kernel)) != (ssize_t)sizeof(req)) {
		ret = -errno;
		goto out;
	}
	n = recv(fd, &ans, sizeof(ans), 0);
	if (n < 0) {
		ret = -errno;
		goto out;
	}
	for (nh = &ans.nh; NLMSG_OK(nh, (size_t)n); nh = NLMSG_NEXT(nh, n)) {
		if (nh->nlmsg_type == NLMSG_ERROR) {
			const struct nlmsgerr *e = NLMSG_DATA(nh);

			ret = nh->nlmsg_len >= NLMSG_LENGTH(sizeof(*e)) &&
					      e->error
				      ? e->error
				      : -EIO;
			break;
		}
		if (nh->nlmsg_type == SOCK_DIAG_BY_FAMILY &&
		    nh->nlmsg_len >=
			    NLMSG_LENGTH(sizeof(struct inet_diag_msg))) {
			const struct inet_diag_msg *m = NLMSG_DATA(nh);

			ret = m->idiag_state;
			break;
		}
	}
out:
	close(fd);
	return ret;
}

/* "%08X" words as the kernel prints an address: each 32-bit word of it in
 * host order. */
static bool parse_addr(const char *hex, uint32_t *words, int n)
{
	for (int i = 0; i < n; i++) {
		unsigned int w;

		if (sscanf(hex + 8 * i, "%8x", &w) != 1)
			return false;
		words[i] = w;
	}
	return true;
}

static bool proc_match(const char *hex, unsigned int port,
		       const struct sockaddr *sa)
{
	uint32_t words[4];

	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)sa;

		return strlen(hex) == 8 && parse_addr(hex, words, 1) &&
		       words[0] == in->sin_addr.s_addr &&
		       port == ntohs(in->sin_port);
	} else {
		const struct sockaddr_in6 *in6 = (const void *)sa;

		return strlen(hex) == 32 && parse_addr(hex, words, 4) &&
		       !memcmp(words, &in6->sin6_addr, sizeof(words)) &&
		       port == ntohs(in6->sin6_port);
	}
}

/* The state /proc/net/tcp(6) lists (ESTABLISHED first if the tuple is
 * there twice), -ENOENT if none, another -errno. */
static int proc_state(const struct sockaddr *local, const struct sockaddr *peer)
{
	FILE *f = fopen(local->sa_family == AF_INET ? "/proc/net/tcp"
						    : "/proc/net/tcp6",
			"re");
	char line[512], l_hex[40], p_hex[40];
	unsigned int l_port, p_port, st;
	int ret = -ENOENT;

	if (!f)
		return -errno;
	while (ret != TCP_ESTABLISHED && fgets(line, sizeof(line), f)) {
		if (sscanf(line, " %*u: %39[0-9A-Fa-f]:%x %39[0-9A-Fa-f]:%x %x",
			   l_hex, &l_port, p_hex, &p_port, &st) != 5)
			continue; /* the heading */
		if (proc_match(l_hex, l_port, local) &&
		    proc_match(p_hex, p_port, peer))
			ret = (int)st;
	}
	fclose(f);
	return ret;
}

/* The pair's state: sock_diag, else /proc; -ENOENT if none, -EAFNOSUPPORT
 * for addresses that cannot form a TCP pair, another -errno. */
static int pair_state(const struct sockaddr *local, const struct sockaddr *peer)
{
	int state;

	if (local->sa_family != peer->sa_family ||
	    (local->sa_family != AF_INET && local->sa_family != AF_INET6))
		return -EAFNOSUPPORT;
	state = query_state(local, peer);
	return state < 0 ? proc_state(local, peer) : state;
}

enum ndk_tcp_peer ndk_tcp_peer_state(const struct sockaddr *local,
				     const struct sockaddr *peer)
{
	int state = pair_state(local, peer);

	if (state == -EAFNOSUPPORT)
		return NDK_TCP_PEER_UNKNOWN;
	if (state == -ENOENT)
		return NDK_TCP_PEER_GONE;
	if (state < 0) {
		ndk_dbg("verbs: TCP state of a connection unknown (%d)", state);
		return NDK_TCP_PEER_UNKNOWN;
	}
	/* Established and not closed by the peer; SYN_RECV and our own
	 * half-closes do not happen before the request is answered. */
	return state == TCP_ESTABLISHED ? NDK_TCP_PEER_THERE
					: NDK_TCP_PEER_GONE;
}

int ndk_tcp_progress(const struct sockaddr *local, const struct sockaddr *peer,
		     struct ndk_tcp_progress *p)
{
	FILE *f;
	char line[512], l_hex[40], p_hex[40];
	unsigned int l_port, p_port, st, txq, rxq, tr, retr, uid, probes;
	unsigned long when;
	int ret = -ENOENT;

	if (local->sa_family != peer->sa_family ||
	    (local->sa_family != AF_INET && local->sa_family != AF_INET6))
		return -EAFNOSUPPORT;
	f = fopen(local->sa_family == AF_INET ? "/proc/net/tcp"
					      : "/proc/net/tcp6",
		  "re");
	if (!f)
		return -errno;
	while (ret && fgets(line, sizeof(line), f)) {
		/* tx_queue is write_seq - snd_una: sent or not, not yet
		 * acknowledged; "timeout" is the unanswered probes. */
		if (sscanf(line,
			   " %*u: %39[0-9A-Fa-f]:%x %39[0-9A-Fa-f]:%x %x "
			   "%x:%x %x:%lx %x %u %u",
			   l_hex, &l_port, p_hex, &p_port, &st, &txq, &rxq, &tr,
			   &when, &retr, &uid, &probes) != 12)
			continue; /* the heading */
		if (st != TCP_ESTABLISHED ||
		    !proc_match(l_hex, l_port, local) ||
		    !proc_match(p_hex, p_port, peer))
			continue;
		p->queued = txq;
		p->retransmits = retr;
		p->probes = probes;
		ret = 0;
	}
	fclose(f);
	return ret;
}

bool ndk_tcp_tuple_taken(const struct sockaddr *local,
			 const struct sockaddr *peer)
{
	int state = pair_state(local, peer);

	/* The exact lookup may answer with a listener on the port: that
	 * one does not hold the pair. */
	return state >= 0 && state != TCP_LISTEN;
}
