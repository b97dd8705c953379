/* SPDX-License-Identifier: MIT */
/*
 * An SMB Direct (MS-SMBD) client transport on the public NDK API: one
 * connection (no private data), the negotiation, credits both ways, the
 * data transfer messages that carry SMB2 messages (fragmented to the
 * peer's receive size and reassembled up to our fragmented size), the
 * answer to keep-alives, and the RDMA channel: fast-registered memory
 * the server reads or writes by a buffer descriptor, released by the
 * server's Send with Invalidate or by a local Invalidate.
 *
 * One thread drives a connection; every wait is bounded by the
 * connection's timeout. Calls return SMBD_OK or an enum smbd_err, and
 * smbd_why() says what happened in words.
 */
#ifndef NDK_TOOLS_SMBD_H
#define NDK_TOOLS_SMBD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>
#include "smbd_wire.h"

enum smbd_err {
	SMBD_OK = 0,
	SMBD_ERR_CONNECT = -1, /* no connection (refused, unreachable) */
	SMBD_ERR_PROTO = -2, /* the peer broke MS-SMBD */
	SMBD_ERR_TIMEOUT = -3, /* nothing within the timeout */
	SMBD_ERR_LOST = -4, /* the connection went away */
	SMBD_ERR_RESOURCE = -5, /* a local NDK call or allocation failed */
	SMBD_ERR_TOO_BIG = -6, /* a message beyond the negotiated sizes */
};

struct smbd_opts {
	struct sockaddr_storage dst;
	unsigned int recv_credits; /* receives we post and grant; 0: 32 */
	uint32_t max_receive_size; /* bytes per receive; 0: 8192 */
	uint32_t max_fragmented_size; /* reassembled message; 0: 1 MiB */
	unsigned int ird; /* InboundReadLimit (the server's RDMA Reads) */
	unsigned int timeout_ms; /* every wait; 0: 30 s */
	int verbose;
};

/* What the negotiation settled and what moved. */
struct smbd_info {
	struct smbd_neg_resp peer;
	uint32_t max_send; /* bytes per message we send */
	uint32_t max_frag_send; /* bytes of an upper message we may send */
	uint32_t max_read_write; /* bytes per RDMA buffer */
	unsigned long sent, received; /* data transfer messages */
	unsigned long keepalives_answered, credit_only_sent;
	unsigned long credit_waits; /* sends that waited for a credit */
	unsigned long remote_invalidations, local_invalidations;
	unsigned long ird, ord;
};

struct smbd_conn;

/* Connects and negotiates. SMBD_ERR_CONNECT when no connection came up. */
int smbd_connect(const struct smbd_opts *o, struct smbd_conn **out, char *why,
		 size_t whylen);
/* Disconnects (gracefully while the connection is up) and frees. */
void smbd_close(struct smbd_conn *c);

/* Sends one upper-layer message, fragmented as needed; waits (bounded)
 * for send credits and slots, receiving meanwhile. */
int smbd_send(struct smbd_conn *c, const void *msg, size_t len);
/*
 * The next upper-layer message, reassembled, in the order they completed
 * (messages that complete while the caller sends wait for it): *msg
 * stays valid until the next smbd_recv. ms: 0 for the connection's
 * timeout.
 */
int smbd_recv(struct smbd_conn *c, const uint8_t **msg, size_t *len,
	      unsigned int ms);

/*
 * The RDMA channel. A buffer is mapped once (up to max_read_write bytes);
 * each I/O fast-registers it for the server's access and yields the
 * buffer descriptor to put in the SMB2 request; smbd_mr_release after the
 * response makes sure the registration is gone (the server's Send with
 * Invalidate, or a local Invalidate). Any number of buffers may be
 * registered at once; a token the server invalidates must be one of them.
 */
struct smbd_mr;
int smbd_mr_create(struct smbd_conn *c, void *buf, size_t len,
		   struct smbd_mr **out);
/* Registers the first len bytes; remote_write: the server RDMA-Writes
 * (an SMB2 READ), else it RDMA-Reads (an SMB2 WRITE). */
int smbd_mr_register(struct smbd_conn *c, struct smbd_mr *mr, size_t len,
		     bool remote_write, struct smbd_buffer_desc *desc);
/* invalidated_by_peer: set when the server invalidated it. */
int smbd_mr_release(struct smbd_conn *c, struct smbd_mr *mr,
		    bool *invalidated_by_peer);
void smbd_mr_destroy(struct smbd_conn *c, struct smbd_mr *mr);

const struct smbd_info *smbd_info(const struct smbd_conn *c);
const char *smbd_why(const struct smbd_conn *c);
const char *smbd_err_str(int err);

#endif
