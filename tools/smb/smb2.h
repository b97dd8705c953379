/* SPDX-License-Identifier: MIT */
/*
 * A minimal SMB2 client (dialects 3.0 and 3.0.2, MS-SMB2) over a message
 * transport: SMB Direct (smbd.h), where large READs and WRITEs go through
 * the RDMA channel, or Direct TCP. NEGOTIATE, SESSION_SETUP with raw
 * NTLMSSP (NTLMv2), AES-CMAC signing, TREE_CONNECT, CREATE, READ, WRITE,
 * QUERY_DIRECTORY, CLOSE, LOGOFF. One request at a time, except READs and
 * WRITEs: up to queue_depth of them in flight, matched to their responses
 * by MessageId, within the credits the server grants.
 */
#ifndef NDK_TOOLS_SMB2_H
#define NDK_TOOLS_SMB2_H

#include "smb_lat.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct smbd_conn;

/* Moves whole SMB2 messages (transport framing is its business). */
struct smb2_transport {
	int (*send)(void *ctx, const void *msg, size_t len);
	/* *msg stays valid until the next send or recv. */
	int (*recv)(void *ctx, const uint8_t **msg, size_t *len,
		    unsigned int ms);
	void *ctx;
	/* SMB Direct: the RDMA channel is there for large I/O. */
	struct smbd_conn *smbd;
	/* What a send or recv error number means. */
	const char *(*err_str)(void *ctx, int err);
};

struct smb2_opts {
	const char *server; /* for the share's UNC path */
	const char *share;
	const char *user; /* NULL: anonymous/guest */
	const char *password;
	const char *domain;
	bool sign; /* sign even when the server does not require it */
	/* Through the RDMA channel from this many bytes (SMB Direct). */
	size_t rdma_threshold;
	/* SMB2_CHANNEL_RDMA_V1_INVALIDATE (the server invalidates), else
	 * SMB2_CHANNEL_RDMA_V1 and a local Invalidate. */
	bool remote_invalidate;
	size_t io_size; /* bytes per READ or WRITE request; 0: 1 MiB */
	/* READs or WRITEs in flight, each with its own buffer; 0: 1. */
	unsigned int queue_depth;
	unsigned int timeout_ms;
	int verbose;
};

#define SMB2_FILE_ATTRIBUTE_DIRECTORY 0x10

struct smb2_file {
	uint8_t id[16];
	uint64_t size;
	uint32_t attributes;
	uint64_t write_time; /* 100 ns since 1601 */
};

/* What moved, for the tools. */
struct smb2_stats {
	unsigned long requests;
	unsigned long rdma_reads, rdma_writes; /* I/Os through the channel */
	unsigned long inline_reads, inline_writes;
	unsigned long remote_invalidations, local_invalidations;
	/* Times a READ or WRITE waited for the server to grant credits. */
	unsigned long credit_waits;
	/* Each READ's and WRITE's time from its send to its response. */
	struct smb_lat read_lat, write_lat;
};

struct smb2_client;

/* Failure codes of the calls below (the server's NTSTATUS is in
 * smb2_status()). */
enum smb2_err {
	SMB2_OK = 0,
	SMB2_ERR_STATUS = -1, /* the server answered with an error */
	SMB2_ERR_TRANSPORT = -2, /* the transport failed */
	SMB2_ERR_PROTO = -3, /* a malformed or unexpected response */
	SMB2_ERR_AUTH = -4, /* authentication failed */
	SMB2_ERR_LOCAL = -5, /* a local failure (memory, arguments) */
};

/* NEGOTIATE, SESSION_SETUP, TREE_CONNECT. */
int smb2_connect(struct smb2_transport *t, const struct smb2_opts *o,
		 struct smb2_client **out, char *why, size_t whylen);
/* TREE_DISCONNECT, LOGOFF (when still up) and free; not the transport. */
void smb2_disconnect(struct smb2_client *c);

#define SMB2_OPEN_READ	    0 /* existing file or directory, read */
#define SMB2_OPEN_WRITE	    1 /* create or truncate a file, write */
#define SMB2_OPEN_DIRECTORY 2 /* existing directory, for listing */
#define SMB2_OPEN_ATTRS	    3 /* existing, attributes only */
int smb2_open(struct smb2_client *c, const char *path, int how,
	      struct smb2_file *f);
/* Fills f->size, attributes and times from the close. */
int smb2_close(struct smb2_client *c, struct smb2_file *f);
/* Reads up to len bytes at off; *got < len only at the end of file.
 * smb2_read and smb2_write keep up to queue_depth requests in flight. */
int smb2_read(struct smb2_client *c, struct smb2_file *f, uint64_t off,
	      void *buf, size_t len, size_t *got);
int smb2_write(struct smb2_client *c, struct smb2_file *f, uint64_t off,
	       const void *buf, size_t len);
/* Calls fn for each entry of an open directory ("." and ".." too). */
int smb2_list(struct smb2_client *c, struct smb2_file *dir,
	      void (*fn)(void *arg, const char *name,
			 const struct smb2_file *attrs),
	      void *arg);

uint32_t smb2_status(const struct smb2_client *c);
const char *smb2_why(const struct smb2_client *c);
const struct smb2_stats *smb2_stats(const struct smb2_client *c);
uint16_t smb2_dialect(const struct smb2_client *c);
bool smb2_signing(const struct smb2_client *c);
/* The largest READ/WRITE per request in use. */
size_t smb2_io_size(const struct smb2_client *c);

#endif
