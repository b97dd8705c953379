/* SPDX-License-Identifier: MIT */
/*
 * The kernel's TCP state of one connection, by its addresses (the
 * sock_diag netlink interface, as `ss` asks it). An iWARP device's kernel
 * CM does not report that an initiator left a request not yet answered;
 * the stream its request came on does (docs/verbs.md, Connection
 * management).
 */
#ifndef NDK_VERBS_TCP_STATE_H
#define NDK_VERBS_TCP_STATE_H

#include <stdbool.h>
#include <sys/socket.h>

enum ndk_tcp_peer {
	NDK_TCP_PEER_UNKNOWN, /* the kernel could not be asked */
	NDK_TCP_PEER_THERE, /* the stream is open both ways */
	NDK_TCP_PEER_GONE, /* the peer closed or reset it, or it is gone */
};

/* Whether the peer of the TCP connection local <-> peer is still there. */
enum ndk_tcp_peer ndk_tcp_peer_state(const struct sockaddr *local,
				     const struct sockaddr *peer);

/* What the kernel says of a connection's sending (/proc/net/tcp). */
struct ndk_tcp_progress {
	unsigned int queued; /* bytes written and not acknowledged */
	unsigned int retransmits; /* timeouts since the last progress */
	unsigned int probes; /* window probes unanswered */
};

/* The progress of the TCP connection local <-> peer: 0, or -errno
 * (-ENOENT: no such connection). */
int ndk_tcp_progress(const struct sockaddr *local, const struct sockaddr *peer,
		     struct ndk_tcp_progress *p);

/*
 * Whether the kernel holds a TCP socket of the pair local <-> peer in any
 * state but LISTEN (a TIME_WAIT one too, which makes a connect from
 * local to peer fail with EADDRNOTAVAIL); false if it cannot be asked.
 */
bool ndk_tcp_tuple_taken(const struct sockaddr *local,
			 const struct sockaddr *peer);

#endif /* NDK_VERBS_TCP_STATE_H */
