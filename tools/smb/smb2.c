/* SPDX-License-Identifier: MIT */
/*
 * A minimal SMB2 client (MS-SMB2 dialects 3.0, 3.0.2); see smb2.h. Field
 * offsets below are those of MS-SMB2 section 2.2, from the start of each
 * structure (the 64-byte header first).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/random.h>
#include "smb2.h"
#include "smb2_crypto.h"
#include "smbd.h"
#include "smbd_wire.h"

#define HDR 64

#ifndef MIN
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#endif

enum {
	SMB2_NEGOTIATE = 0,
	SMB2_SESSION_SETUP = 1,
	SMB2_LOGOFF = 2,
	SMB2_TREE_CONNECT = 3,
	SMB2_TREE_DISCONNECT = 4,
	SMB2_CREATE = 5,
	SMB2_CLOSE = 6,
	SMB2_READ = 8,
	SMB2_WRITE = 9,
	SMB2_QUERY_DIRECTORY = 14,
};

#define SMB2_FLAGS_SERVER_TO_REDIR 0x00000001
#define SMB2_FLAGS_ASYNC_COMMAND   0x00000002
#define SMB2_FLAGS_SIGNED	   0x00000008

#define SMB2_NEGOTIATE_SIGNING_ENABLED	0x0001
#define SMB2_NEGOTIATE_SIGNING_REQUIRED 0x0002
#define SMB2_GLOBAL_CAP_LARGE_MTU	0x00000004

#define SMB2_CHANNEL_NONE		0
#define SMB2_CHANNEL_RDMA_V1		1
#define SMB2_CHANNEL_RDMA_V1_INVALIDATE 2

#define STATUS_OK			0x00000000u
#define STATUS_PENDING_			0x00000103u
#define STATUS_NO_MORE_FILES_		0x80000006u
#define STATUS_MORE_PROCESSING_REQUIRED 0xc0000016u
#define STATUS_END_OF_FILE_		0xc0000011u

#define SMB2_SESSION_FLAG_IS_GUEST 0x0001
#define SMB2_SESSION_FLAG_IS_NULL  0x0002

/* NTLMSSP negotiate flags (MS-NLMP 2.2.2.5). */
#define NTLMSSP_NEGOTIATE_UNICODE     0x00000001u
#define NTLMSSP_REQUEST_TARGET	      0x00000004u
#define NTLMSSP_NEGOTIATE_SIGN	      0x00000010u
#define NTLMSSP_NEGOTIATE_NTLM	      0x00000200u
#define NTLMSSP_NEGOTIATE_ALWAYS_SIGN 0x00008000u
#define NTLMSSP_NEGOTIATE_EXTENDED    0x00080000u
#define NTLMSSP_NEGOTIATE_TARGET_INFO 0x00800000u
#define NTLMSSP_NEGOTIATE_128	      0x20000000u
#define NTLMSSP_NEGOTIATE_56	      0x80000000u
#define NTLMSSP_FLAGS                                                 \
	(NTLMSSP_NEGOTIATE_UNICODE | NTLMSSP_REQUEST_TARGET |         \
	 NTLMSSP_NEGOTIATE_SIGN | NTLMSSP_NEGOTIATE_NTLM |            \
	 NTLMSSP_NEGOTIATE_ALWAYS_SIGN | NTLMSSP_NEGOTIATE_EXTENDED | \
	 NTLMSSP_NEGOTIATE_TARGET_INFO | NTLMSSP_NEGOTIATE_128 |      \
	 NTLMSSP_NEGOTIATE_56)
#define MSV_AV_EOL	 0
#define MSV_AV_TIMESTAMP 7

/* Access masks, dispositions, options (MS-SMB2 2.2.13). */
#define FILE_READ_DATA	       0x00000001u
#define FILE_WRITE_DATA	       0x00000002u
#define FILE_LIST_DIRECTORY    0x00000001u
#define FILE_READ_ATTRIBUTES   0x00000080u
#define FILE_WRITE_ATTRIBUTES  0x00000100u
#define SYNCHRONIZE	       0x00100000u
#define READ_CONTROL	       0x00020000u
#define FILE_OPEN	       1u
#define FILE_OVERWRITE_IF      5u
#define FILE_DIRECTORY_FILE    0x00000001u
#define FILE_NON_DIRECTORY     0x00000040u
#define FILE_SHARE_ALL	       0x00000007u
#define FILE_DIRECTORY_INFO    0x01
#define SMB2_CLOSE_POSTQUERY   0x0001
#define SMB2_RESTART_SCANS     0x01
#define FILE_ATTRIBUTE_NORMAL_ 0x00000080u

#define MAX_MSG	       (128u * 1024) /* requests and inline data we build */
#define CREDITS_WANTED 256

struct smb2_client {
	struct smb2_transport *t;
	struct smb2_opts o;
	uint16_t dialect;
	uint16_t sec_mode;
	uint32_t caps;
	uint32_t max_read, max_write, max_trans;
	uint64_t msg_id;
	unsigned int credits;
	uint64_t session_id;
	uint32_t tree_id;
	bool sign, session_up, tree_up;
	uint8_t signing_key[16];
	uint8_t *req; /* MAX_MSG */
	const uint8_t *rsp;
	size_t rsp_len;
	uint32_t status;
	int err;
	char why[256];
	size_t io_size;
	uint8_t *io; /* page-aligned I/O buffer for the RDMA channel */
	struct smbd_mr *mr;
	struct smb2_stats stats;
};

static int fail(struct smb2_client *c, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(struct smb2_client *c, int err, const char *fmt, ...)
{
	va_list ap;

	/* A failed transport stays the reason for everything after it. */
	if (c->err == SMB2_ERR_TRANSPORT)
		return c->err;
	c->err = err;
	va_start(ap, fmt);
	vsnprintf(c->why, sizeof(c->why), fmt, ap);
	va_end(ap);
	return err;
}

static const char *cmd_name(uint16_t cmd)
{
	static const char *const names[] = {
		"NEGOTIATE",
		"SESSION_SETUP",
		"LOGOFF",
		"TREE_CONNECT",
		"TREE_DISCONNECT",
		"CREATE",
		"CLOSE",
		"FLUSH",
		"READ",
		"WRITE",
		"LOCK",
		"IOCTL",
		"CANCEL",
		"ECHO",
		"QUERY_DIRECTORY",
	};

	return cmd < sizeof(names) / sizeof(names[0]) ? names[cmd] : "?";
}

/* A few NTSTATUS names a user meets; the code otherwise. */
static const char *status_name(uint32_t s)
{
	switch (s) {
	case 0xc000006du:
		return "STATUS_LOGON_FAILURE";
	case 0xc0000022u:
		return "STATUS_ACCESS_DENIED";
	case 0xc0000034u:
		return "STATUS_OBJECT_NAME_NOT_FOUND";
	case 0xc000003au:
		return "STATUS_OBJECT_PATH_NOT_FOUND";
	case 0xc00000ccu:
		return "STATUS_BAD_NETWORK_NAME";
	case 0xc000000du:
		return "STATUS_INVALID_PARAMETER";
	case 0xc0000011u:
		return "STATUS_END_OF_FILE";
	case 0xc00000bau:
		return "STATUS_FILE_IS_A_DIRECTORY";
	case 0xc0000103u:
		return "STATUS_NOT_A_DIRECTORY";
	case 0xc00000bbu:
		return "STATUS_NOT_SUPPORTED";
	case 0xc0000043u:
		return "STATUS_SHARING_VIOLATION";
	case 0xc0000035u:
		return "STATUS_OBJECT_NAME_COLLISION";
	case 0xc000009au:
		return "STATUS_INSUFFICIENT_RESOURCES";
	case 0xc0000203u:
		return "STATUS_USER_SESSION_DELETED";
	default:
		return "NTSTATUS";
	}
}

/* ------------------------------------------------------------------ */
/* Messages                                                           */

static void hdr_init(struct smb2_client *c, uint16_t cmd, uint16_t charge)
{
	uint8_t *h = c->req;

	memset(h, 0, HDR);
	h[0] = 0xfe;
	h[1] = 'S';
	h[2] = 'M';
	h[3] = 'B';
	smbd_put16(h + 4, HDR);
	smbd_put16(h + 6, charge);
	smbd_put16(h + 12, cmd);
	/* Ask for what we are about to spend, and more up to the target. */
	smbd_put16(h + 14,
		   (uint16_t)(c->credits < CREDITS_WANTED
				      ? CREDITS_WANTED - c->credits + charge
				      : charge));
	smbd_put64(h + 24, c->msg_id);
	smbd_put32(h + 32, 0xfeff); /* ProcessId */
	smbd_put32(h + 36, c->tree_id);
	smbd_put64(h + 40, c->session_id);
}

static int check_signature(struct smb2_client *c, const uint8_t *m, size_t len)
{
	uint8_t sig[16];

	smb3_sign(c->signing_key, m, len, sig);
	if (memcmp(sig, m + 48, 16))
		return fail(c, SMB2_ERR_PROTO, "%s response: bad signature",
			    cmd_name(smbd_get16(m + 12)));
	return SMB2_OK;
}

/*
 * Sends the request in c->req (len bytes) and waits for its response,
 * skipping interim STATUS_PENDING answers. Returns SMB2_OK with any
 * status in c->status, or a failure.
 */
static int transact(struct smb2_client *c, size_t len)
{
	uint16_t cmd = smbd_get16(c->req + 12);
	uint16_t charge = smbd_get16(c->req + 6);
	uint64_t id = c->msg_id;
	const uint8_t *m;
	size_t n;
	int err;

	if (c->err == SMB2_ERR_TRANSPORT)
		return c->err;
	if (!charge)
		charge = 1;
	if (c->credits < charge && cmd != SMB2_NEGOTIATE)
		return fail(
			c, SMB2_ERR_PROTO,
			"%s: %u credits, %u needed (the server grants no more)",
			cmd_name(cmd), c->credits, charge);
	if (c->sign && c->session_id && cmd != SMB2_NEGOTIATE) {
		smbd_put32(c->req + 16,
			   smbd_get32(c->req + 16) | SMB2_FLAGS_SIGNED);
		smb3_sign(c->signing_key, c->req, len, c->req + 48);
	}
	c->msg_id += charge;
	c->credits -= MIN(c->credits, charge);
	c->stats.requests++;
	err = c->t->send(c->t->ctx, c->req, len);
	if (err)
		return fail(c, SMB2_ERR_TRANSPORT, "%s: send: %s",
			    cmd_name(cmd), c->t->err_str(c->t->ctx, err));
	for (;;) {
		err = c->t->recv(c->t->ctx, &m, &n, c->o.timeout_ms);
		if (err)
			return fail(c, SMB2_ERR_TRANSPORT, "%s: receive: %s",
				    cmd_name(cmd),
				    c->t->err_str(c->t->ctx, err));
		if (n < HDR || smbd_get32(m) != 0x424d53feu ||
		    smbd_get16(m + 4) != HDR)
			return fail(
				c, SMB2_ERR_PROTO,
				"%s: a %zu-byte response that is no SMB2 message",
				cmd_name(cmd), n);
		if (smbd_get16(m + 12) != cmd || smbd_get64(m + 24) != id ||
		    !(smbd_get32(m + 16) & SMB2_FLAGS_SERVER_TO_REDIR))
			return fail(
				c, SMB2_ERR_PROTO,
				"%s (message %llu): got %s for message %llu",
				cmd_name(cmd), (unsigned long long)id,
				cmd_name(smbd_get16(m + 12)),
				(unsigned long long)smbd_get64(m + 24));
		c->credits += smbd_get16(m + 14);
		c->status = smbd_get32(m + 8);
		if (c->status == STATUS_PENDING_ &&
		    (smbd_get32(m + 16) & SMB2_FLAGS_ASYNC_COMMAND))
			continue;
		break;
	}
	if (c->sign && c->session_up &&
	    (smbd_get32(m + 16) & SMB2_FLAGS_SIGNED)) {
		err = check_signature(c, m, n);
		if (err)
			return err;
	}
	c->rsp = m;
	c->rsp_len = n;
	if (c->o.verbose > 1)
		fprintf(stderr, "smb2: %s -> 0x%08x, %zu bytes, credits %u\n",
			cmd_name(cmd), c->status, n, c->credits);
	return SMB2_OK;
}

/* The body of the response, at least min bytes of it. */
static const uint8_t *body(struct smb2_client *c, size_t min)
{
	if (c->rsp_len < HDR + min) {
		fail(c, SMB2_ERR_PROTO, "%s response of %zu bytes",
		     cmd_name(smbd_get16(c->rsp + 12)), c->rsp_len);
		return NULL;
	}
	return c->rsp + HDR;
}

static int status_fail(struct smb2_client *c, const char *what)
{
	return fail(c, SMB2_ERR_STATUS, "%s: %s (0x%08x)", what,
		    status_name(c->status), c->status);
}

/* ------------------------------------------------------------------ */
/* NEGOTIATE                                                          */

static int negotiate(struct smb2_client *c)
{
	uint8_t *b = c->req + HDR;
	const uint8_t *r;
	int err;

	hdr_init(c, SMB2_NEGOTIATE, 0);
	memset(b, 0, 40);
	smbd_put16(b, 36);
	smbd_put16(b + 2, 2); /* DialectCount */
	smbd_put16(b + 4, SMB2_NEGOTIATE_SIGNING_ENABLED);
	smbd_put32(b + 8, SMB2_GLOBAL_CAP_LARGE_MTU);
	if (getrandom(b + 12, 16, 0) != 16)
		memset(b + 12, 0x5a, 16);
	smbd_put16(b + 36, 0x0300);
	smbd_put16(b + 38, 0x0302);
	err = transact(c, HDR + 40);
	if (err)
		return err;
	if (c->status)
		return status_fail(c, "NEGOTIATE");
	r = body(c, 64);
	if (!r)
		return c->err;
	c->sec_mode = smbd_get16(r + 2);
	c->dialect = smbd_get16(r + 4);
	c->caps = smbd_get32(r + 24);
	c->max_trans = smbd_get32(r + 28);
	c->max_read = smbd_get32(r + 32);
	c->max_write = smbd_get32(r + 36);
	if (c->dialect != 0x0300 && c->dialect != 0x0302)
		return fail(c, SMB2_ERR_PROTO,
			    "NEGOTIATE: the server chose dialect 0x%04x",
			    c->dialect);
	if (c->o.verbose)
		fprintf(stderr,
			"smb2: dialect 0x%04x, security mode 0x%x, capabilities 0x%x, max read %u write %u transact %u\n",
			c->dialect, c->sec_mode, c->caps, c->max_read,
			c->max_write, c->max_trans);
	return SMB2_OK;
}

/* ------------------------------------------------------------------ */
/* SESSION_SETUP with NTLMSSP                                          */

static int session_setup_req(struct smb2_client *c, const uint8_t *blob,
			     size_t len)
{
	uint8_t *b = c->req + HDR;

	hdr_init(c, SMB2_SESSION_SETUP, 1);
	memset(b, 0, 24);
	smbd_put16(b, 25);
	b[3] = SMB2_NEGOTIATE_SIGNING_ENABLED;
	smbd_put16(b + 12, HDR + 24);
	smbd_put16(b + 14, (uint16_t)len);
	memcpy(b + 24, blob, len);
	return transact(c, HDR + 24 + len);
}

static void put_field(uint8_t *msg, size_t at, size_t *off, const void *data,
		      size_t len)
{
	smbd_put16(msg + at, (uint16_t)len);
	smbd_put16(msg + at + 2, (uint16_t)len);
	smbd_put32(msg + at + 4, (uint32_t)*off);
	if (len)
		memcpy(msg + *off, data, len);
	*off += len;
}

static uint64_t filetime_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ((uint64_t)ts.tv_sec + 11644473600ull) * 10000000ull +
	       (uint64_t)ts.tv_nsec / 100;
}

static int session_setup(struct smb2_client *c)
{
	static const uint8_t sig[8] = { 'N', 'T', 'L', 'M', 'S', 'S', 'P', 0 };
	uint8_t neg[40], auth[2048], nt[1024], lm[24], key[16], skey[16];
	uint8_t cchal[8], schal[8], ti[1024], name[512], dom[512], ws[64];
	const char *user = c->o.user ? c->o.user : "";
	const char *pass = c->o.password ? c->o.password : "";
	const char *domain = c->o.domain ? c->o.domain : "";
	const uint8_t *r, *blob;
	uint64_t ts = 0;
	size_t bl, ti_len, ntl, off, nl, dl, wl, i;
	uint32_t flags;
	int err;

	memset(neg, 0, sizeof(neg));
	memcpy(neg, sig, 8);
	smbd_put32(neg + 8, 1);
	smbd_put32(neg + 12, NTLMSSP_FLAGS);
	err = session_setup_req(c, neg, 32);
	if (err)
		return err;
	if (c->status != STATUS_MORE_PROCESSING_REQUIRED)
		return status_fail(c, "SESSION_SETUP (NTLMSSP negotiate)");
	c->session_id = smbd_get64(c->rsp + 40);
	r = body(c, 8);
	if (!r)
		return c->err;
	off = smbd_get16(r + 4);
	bl = smbd_get16(r + 6);
	if (off < HDR + 8 || off + bl > c->rsp_len || bl < 48 ||
	    memcmp(c->rsp + off, sig, 8) || smbd_get32(c->rsp + off + 8) != 2)
		return fail(
			c, SMB2_ERR_PROTO,
			"SESSION_SETUP: no NTLMSSP challenge in the response (%zu bytes at %zu of %zu)",
			bl, off, c->rsp_len);
	blob = c->rsp + off;
	flags = smbd_get32(blob + 20);
	memcpy(schal, blob + 24, 8);
	ti_len = smbd_get16(blob + 40);
	off = smbd_get32(blob + 44);
	if (off + ti_len > bl || ti_len > sizeof(ti))
		return fail(
			c, SMB2_ERR_PROTO,
			"SESSION_SETUP: the challenge's target info lies outside it");
	memcpy(ti, blob + off, ti_len);
	/* The server's time, when it gives one (MS-NLMP 3.1.5.1.2). */
	for (i = 0; i + 4 <= ti_len;) {
		uint16_t id = smbd_get16(ti + i), l = smbd_get16(ti + i + 2);

		if (id == MSV_AV_EOL || i + 4 + l > ti_len)
			break;
		if (id == MSV_AV_TIMESTAMP && l == 8)
			ts = smbd_get64(ti + i + 4);
		i += 4 + (size_t)l;
	}
	if (!ts)
		ts = filetime_now();
	if (getrandom(cchal, 8, 0) != 8)
		return fail(c, SMB2_ERR_LOCAL, "getrandom failed");
	ntlm_ntowfv2(pass, user, domain, key);
	ntl = ntlm_v2_response(key, schal, cchal, ts, ti, ti_len, nt,
			       sizeof(nt), skey);
	if (!ntl)
		return fail(
			c, SMB2_ERR_PROTO,
			"SESSION_SETUP: the challenge's target info is too long");
	ntlm_lmv2_response(key, schal, cchal, lm);
	nl = smb2_utf16(user, name, sizeof(name), 0);
	dl = smb2_utf16(domain, dom, sizeof(dom), 0);
	wl = smb2_utf16("NDKSMB", ws, sizeof(ws), 0);
	memset(auth, 0, 64);
	memcpy(auth, sig, 8);
	smbd_put32(auth + 8, 3);
	off = 64;
	put_field(auth, 12, &off, lm, sizeof(lm));
	put_field(auth, 20, &off, nt, ntl);
	put_field(auth, 28, &off, dom, dl);
	put_field(auth, 36, &off, name, nl);
	put_field(auth, 44, &off, ws, wl);
	put_field(auth, 52, &off, NULL, 0);
	smbd_put32(auth + 60,
		   NTLMSSP_FLAGS & (flags | NTLMSSP_NEGOTIATE_UNICODE));
	err = session_setup_req(c, auth, off);
	if (err)
		return err;
	if (c->status)
		return fail(c, SMB2_ERR_AUTH,
			    "SESSION_SETUP as %s%s%s: %s (0x%08x)", domain,
			    *domain ? "\\" : "", user, status_name(c->status),
			    c->status);
	r = body(c, 8);
	if (!r)
		return c->err;
	/* ExportedSessionKey is the session base key: no key exchange. */
	smb3_signing_key(skey, c->signing_key);
	c->sign = c->o.sign || (c->sec_mode & SMB2_NEGOTIATE_SIGNING_REQUIRED);
	if (smbd_get16(r + 2) &
	    (SMB2_SESSION_FLAG_IS_GUEST | SMB2_SESSION_FLAG_IS_NULL))
		c->sign = false; /* guest and anonymous sessions do not sign */
	/* The final response is signed when the session signs. */
	if (c->sign && (smbd_get32(c->rsp + 16) & SMB2_FLAGS_SIGNED)) {
		err = check_signature(c, c->rsp, c->rsp_len);
		if (err)
			return fail(
				c, SMB2_ERR_AUTH,
				"SESSION_SETUP: the server's signature does not match ours (wrong password?)");
	}
	c->session_up = true;
	if (c->o.verbose)
		fprintf(stderr, "smb2: session 0x%llx as %s, flags 0x%x, %s\n",
			(unsigned long long)c->session_id, user,
			smbd_get16(r + 2), c->sign ? "signed" : "not signed");
	return SMB2_OK;
}

/* ------------------------------------------------------------------ */
/* TREE_CONNECT                                                        */

static int tree_connect(struct smb2_client *c)
{
	uint8_t *b = c->req + HDR;
	char unc[512];
	size_t n;
	int err;

	snprintf(unc, sizeof(unc), "\\\\%s\\%s", c->o.server, c->o.share);
	hdr_init(c, SMB2_TREE_CONNECT, 1);
	memset(b, 0, 8);
	smbd_put16(b, 9);
	n = smb2_utf16(unc, b + 8, 1024, 0);
	smbd_put16(b + 4, HDR + 8);
	smbd_put16(b + 6, (uint16_t)n);
	err = transact(c, HDR + 8 + n);
	if (err)
		return err;
	if (c->status)
		return fail(c, SMB2_ERR_STATUS, "TREE_CONNECT %s: %s (0x%08x)",
			    unc, status_name(c->status), c->status);
	c->tree_id = smbd_get32(c->rsp + 36);
	c->tree_up = true;
	return SMB2_OK;
}

/* ------------------------------------------------------------------ */
/* Files                                                              */

/* A share-relative path with '\\' separators in UTF-16. */
static size_t path_utf16(const char *path, uint8_t *out, size_t cap)
{
	char p[1024];
	size_t i, j = 0;

	while (*path == '/' || *path == '\\')
		path++;
	for (i = 0; path[i] && j + 1 < sizeof(p); i++)
		p[j++] = path[i] == '/' ? '\\' : path[i];
	while (j && p[j - 1] == '\\')
		j--;
	p[j] = 0;
	return smb2_utf16(p, out, cap, 0);
}

static void file_from(struct smb2_file *f, const uint8_t *times, uint64_t eof,
		      uint32_t attrs)
{
	f->write_time = smbd_get64(times + 16);
	f->size = eof;
	f->attributes = attrs;
}

int smb2_open(struct smb2_client *c, const char *path, int how,
	      struct smb2_file *f)
{
	static const uint32_t access[] = {
		FILE_READ_DATA | FILE_READ_ATTRIBUTES | SYNCHRONIZE,
		FILE_READ_DATA | FILE_WRITE_DATA | FILE_READ_ATTRIBUTES |
			FILE_WRITE_ATTRIBUTES | SYNCHRONIZE,
		FILE_LIST_DIRECTORY | FILE_READ_ATTRIBUTES | SYNCHRONIZE,
		FILE_READ_ATTRIBUTES | READ_CONTROL | SYNCHRONIZE,
	};
	uint8_t *b = c->req + HDR;
	const uint8_t *r;
	size_t n;
	int err;

	if (how < 0 || how > SMB2_OPEN_ATTRS)
		return fail(c, SMB2_ERR_LOCAL, "open: bad mode");
	hdr_init(c, SMB2_CREATE, 1);
	memset(b, 0, 64);
	smbd_put16(b, 57);
	smbd_put32(b + 4, 2); /* ImpersonationLevel: Impersonation */
	smbd_put32(b + 24, access[how]);
	smbd_put32(b + 28, how == SMB2_OPEN_WRITE ? FILE_ATTRIBUTE_NORMAL_ : 0);
	smbd_put32(b + 32, FILE_SHARE_ALL);
	smbd_put32(b + 36,
		   how == SMB2_OPEN_WRITE ? FILE_OVERWRITE_IF : FILE_OPEN);
	smbd_put32(b + 40, how == SMB2_OPEN_WRITE	? FILE_NON_DIRECTORY
			   : how == SMB2_OPEN_DIRECTORY ? FILE_DIRECTORY_FILE
							: 0);
	n = path_utf16(path, b + 56, 2048);
	smbd_put16(b + 44, HDR + 56);
	smbd_put16(b + 46, (uint16_t)n);
	/* The buffer holds at least one byte, even for the share's root. */
	err = transact(c, HDR + 56 + (n ? n : 1));
	if (err)
		return err;
	if (c->status)
		return fail(c, SMB2_ERR_STATUS, "CREATE %s: %s (0x%08x)", path,
			    status_name(c->status), c->status);
	r = body(c, 88);
	if (!r)
		return c->err;
	memset(f, 0, sizeof(*f));
	memcpy(f->id, r + 64, 16);
	file_from(f, r + 8, smbd_get64(r + 48), smbd_get32(r + 56));
	return SMB2_OK;
}

int smb2_close(struct smb2_client *c, struct smb2_file *f)
{
	uint8_t *b = c->req + HDR;
	const uint8_t *r;
	int err;

	hdr_init(c, SMB2_CLOSE, 1);
	memset(b, 0, 24);
	smbd_put16(b, 24);
	smbd_put16(b + 2, SMB2_CLOSE_POSTQUERY);
	memcpy(b + 8, f->id, 16);
	err = transact(c, HDR + 24);
	if (err)
		return err;
	if (c->status)
		return status_fail(c, "CLOSE");
	r = body(c, 60);
	if (!r)
		return c->err;
	if (smbd_get16(r + 2) & SMB2_CLOSE_POSTQUERY)
		file_from(f, r + 8, smbd_get64(r + 48), smbd_get32(r + 56));
	return SMB2_OK;
}

static uint16_t charge_of(size_t len)
{
	return (uint16_t)(len ? (len + 65535) / 65536 : 1);
}

/* Registers the I/O buffer for one request and writes the descriptor. */
static int rdma_prepare(struct smb2_client *c, size_t len, bool server_writes,
			uint8_t *desc_at)
{
	struct smbd_buffer_desc d;
	int err;

	err = smbd_mr_register(c->t->smbd, c->mr, len, server_writes, &d);
	if (err)
		return fail(c, SMB2_ERR_TRANSPORT, "RDMA registration: %s",
			    smbd_why(c->t->smbd));
	smbd_buffer_desc_encode(desc_at, &d);
	return SMB2_OK;
}

static int rdma_finish(struct smb2_client *c)
{
	bool by_peer;
	int err;

	err = smbd_mr_release(c->t->smbd, c->mr, &by_peer);
	if (err)
		return fail(c, SMB2_ERR_TRANSPORT, "RDMA release: %s",
			    smbd_why(c->t->smbd));
	if (by_peer)
		c->stats.remote_invalidations++;
	else
		c->stats.local_invalidations++;
	if (c->o.remote_invalidate && !by_peer && !c->status)
		return fail(
			c, SMB2_ERR_PROTO,
			"the server did not invalidate the registration of a successful request");
	return SMB2_OK;
}

static bool use_rdma(struct smb2_client *c, size_t len)
{
	return c->mr && len >= c->o.rdma_threshold;
}

static uint32_t channel(struct smb2_client *c)
{
	return c->o.remote_invalidate ? SMB2_CHANNEL_RDMA_V1_INVALIDATE
				      : SMB2_CHANNEL_RDMA_V1;
}

/* One READ of at most io_size bytes. */
static int read_one(struct smb2_client *c, struct smb2_file *f, uint64_t off,
		    uint8_t *buf, size_t len, size_t *got)
{
	uint8_t *b = c->req + HDR;
	bool rdma = use_rdma(c, len);
	const uint8_t *r;
	size_t n, doff;
	int err, err2;

	hdr_init(c, SMB2_READ, charge_of(len));
	memset(b, 0, 64);
	smbd_put16(b, 49);
	b[2] = HDR + 16; /* Padding: where the response's data goes */
	smbd_put32(b + 4, (uint32_t)len);
	smbd_put64(b + 8, off);
	memcpy(b + 16, f->id, 16);
	if (rdma) {
		err = rdma_prepare(c, len, true, b + 48);
		if (err)
			return err;
		smbd_put32(b + 36, channel(c));
		smbd_put16(b + 44, HDR + 48);
		smbd_put16(b + 46, SMBD_BUFFER_DESC_SIZE);
	}
	err = transact(c, HDR + 48 + (rdma ? SMBD_BUFFER_DESC_SIZE : 1));
	if (rdma) {
		/* Whatever the answer, the registration goes first. */
		err2 = rdma_finish(c);
		if (!err)
			err = err2;
	}
	if (err)
		return err;
	*got = 0;
	if (c->status == STATUS_END_OF_FILE_)
		return SMB2_OK;
	if (c->status)
		return status_fail(c, "READ");
	r = body(c, 16);
	if (!r)
		return c->err;
	if (rdma) {
		n = smbd_get32(r + 8); /* DataRemaining: what it wrote */
		if (smbd_get32(r + 4) || n > len)
			return fail(
				c, SMB2_ERR_PROTO,
				"READ: %zu bytes through the RDMA channel for %zu asked",
				n, len);
		memcpy(buf, c->io, n);
		c->stats.rdma_reads++;
	} else {
		doff = r[2];
		n = smbd_get32(r + 4);
		if (doff < HDR + 16 || doff + n > c->rsp_len || n > len)
			return fail(
				c, SMB2_ERR_PROTO,
				"READ: %zu bytes at %zu in a %zu-byte response",
				n, doff, c->rsp_len);
		memcpy(buf, c->rsp + doff, n);
		c->stats.inline_reads++;
	}
	*got = n;
	return SMB2_OK;
}

int smb2_read(struct smb2_client *c, struct smb2_file *f, uint64_t off,
	      void *buf, size_t len, size_t *got)
{
	size_t done = 0, n, one;
	int err;

	while (done < len) {
		n = MIN(len - done, c->io_size);
		if (!use_rdma(c, n))
			n = MIN(n, c->max_read);
		err = read_one(c, f, off + done, (uint8_t *)buf + done, n,
			       &one);
		if (err)
			return err;
		done += one;
		if (one < n)
			break;
	}
	*got = done;
	return SMB2_OK;
}

static int write_one(struct smb2_client *c, struct smb2_file *f, uint64_t off,
		     const uint8_t *buf, size_t len)
{
	uint8_t *b = c->req + HDR;
	bool rdma = use_rdma(c, len);
	const uint8_t *r;
	int err, err2;

	hdr_init(c, SMB2_WRITE, charge_of(len));
	memset(b, 0, 48);
	smbd_put16(b, 49);
	smbd_put64(b + 8, off);
	memcpy(b + 16, f->id, 16);
	if (rdma) {
		memcpy(c->io, buf, len);
		err = rdma_prepare(c, len, false, b + 48);
		if (err)
			return err;
		/* Length and DataOffset 0: RemainingBytes says how much. */
		smbd_put32(b + 32, channel(c));
		smbd_put32(b + 36, (uint32_t)len);
		smbd_put16(b + 40, HDR + 48);
		smbd_put16(b + 42, SMBD_BUFFER_DESC_SIZE);
		err = transact(c, HDR + 48 + SMBD_BUFFER_DESC_SIZE);
		err2 = rdma_finish(c);
		if (!err)
			err = err2;
	} else {
		smbd_put16(b + 2, HDR + 48);
		smbd_put32(b + 4, (uint32_t)len);
		memcpy(b + 48, buf, len);
		err = transact(c, HDR + 48 + len);
	}
	if (err)
		return err;
	if (c->status)
		return status_fail(c, "WRITE");
	r = body(c, 16);
	if (!r)
		return c->err;
	if (smbd_get32(r + 4) != len)
		return fail(c, SMB2_ERR_PROTO, "WRITE: %u of %zu bytes written",
			    smbd_get32(r + 4), len);
	if (rdma)
		c->stats.rdma_writes++;
	else
		c->stats.inline_writes++;
	return SMB2_OK;
}

int smb2_write(struct smb2_client *c, struct smb2_file *f, uint64_t off,
	       const void *buf, size_t len)
{
	size_t done = 0, n;
	int err;

	while (done < len) {
		n = MIN(len - done, c->io_size);
		if (!use_rdma(c, n))
			/* Inline data rides in the request. */
			n = MIN(n,
				MIN((size_t)c->max_write, MAX_MSG - HDR - 48));
		if (c->t->smbd && !use_rdma(c, n))
			n = MIN(n, smbd_info(c->t->smbd)->max_frag_send - HDR -
					   48);
		err = write_one(c, f, off + done, (const uint8_t *)buf + done,
				n);
		if (err)
			return err;
		done += n;
	}
	return SMB2_OK;
}

int smb2_list(struct smb2_client *c, struct smb2_file *dir,
	      void (*fn)(void *arg, const char *name,
			 const struct smb2_file *attrs),
	      void *arg)
{
	uint8_t *b = c->req + HDR;
	bool first = true;
	const uint8_t *r, *e;
	size_t off, len, pos, nl, i;
	char name[512];
	struct smb2_file f;
	uint32_t next;
	int err;

	for (;;) {
		hdr_init(c, SMB2_QUERY_DIRECTORY, 1);
		memset(b, 0, 40);
		smbd_put16(b, 33);
		b[2] = FILE_DIRECTORY_INFO;
		b[3] = first ? SMB2_RESTART_SCANS : 0;
		memcpy(b + 8, dir->id, 16);
		smbd_put16(b + 24, HDR + 32);
		smbd_put16(b + 26, 2);
		b[32] = '*';
		b[33] = 0;
		smbd_put32(b + 28, 32768);
		first = false;
		err = transact(c, HDR + 34);
		if (err)
			return err;
		if (c->status == STATUS_NO_MORE_FILES_)
			return SMB2_OK;
		if (c->status)
			return status_fail(c, "QUERY_DIRECTORY");
		r = body(c, 8);
		if (!r)
			return c->err;
		off = smbd_get16(r + 2);
		len = smbd_get32(r + 4);
		if (off + len > c->rsp_len)
			return fail(
				c, SMB2_ERR_PROTO,
				"QUERY_DIRECTORY: entries outside the response");
		for (pos = 0; pos + 64 <= len;) {
			e = c->rsp + off + pos;
			next = smbd_get32(e);
			nl = smbd_get32(e + 60);
			if (64 + nl > len - pos)
				return fail(
					c, SMB2_ERR_PROTO,
					"QUERY_DIRECTORY: a name outside its entry");
			/* UTF-16 to ASCII; others show as '?'. */
			for (i = 0; i < nl / 2 && i + 1 < sizeof(name); i++) {
				uint16_t ch = smbd_get16(e + 64 + 2 * i);

				name[i] = ch < 0x80 ? (char)ch : '?';
			}
			name[i] = 0;
			memset(&f, 0, sizeof(f));
			file_from(&f, e + 8, smbd_get64(e + 40),
				  smbd_get32(e + 56));
			fn(arg, name, &f);
			if (!next)
				break;
			pos += next;
		}
	}
}

/* ------------------------------------------------------------------ */
/* Session                                                            */

int smb2_connect(struct smb2_transport *t, const struct smb2_opts *o,
		 struct smb2_client **out, char *why, size_t whylen)
{
	struct smb2_client *c = calloc(1, sizeof(*c));
	int err;

	*out = NULL;
	if (!c || !(c->req = malloc(MAX_MSG))) {
		free(c);
		snprintf(why, whylen, "out of memory");
		return SMB2_ERR_LOCAL;
	}
	c->t = t;
	c->o = *o;
	if (!c->o.timeout_ms)
		c->o.timeout_ms = 30000;
	if (!c->o.io_size)
		c->o.io_size = 1u << 20;
	c->credits = 1;
	err = negotiate(c);
	if (!err)
		err = session_setup(c);
	if (!err)
		err = tree_connect(c);
	if (!err) {
		c->io_size = MIN(c->o.io_size, MIN(c->max_read, c->max_write));
		if (t->smbd) {
			const struct smbd_info *si = smbd_info(t->smbd);

			c->io_size = MIN(c->io_size, si->max_read_write);
			c->io_size &= ~(size_t)4095;
			c->io = aligned_alloc(4096, c->io_size);
			if (!c->io)
				err = fail(c, SMB2_ERR_LOCAL, "out of memory");
			else if (smbd_mr_create(t->smbd, c->io, c->io_size,
						&c->mr))
				err = fail(c, SMB2_ERR_TRANSPORT,
					   "RDMA buffer: %s",
					   smbd_why(t->smbd));
		}
	}
	if (err) {
		snprintf(why, whylen, "%s", c->why);
		smb2_disconnect(c);
		return err;
	}
	*out = c;
	return SMB2_OK;
}

void smb2_disconnect(struct smb2_client *c)
{
	uint8_t *b;

	if (!c)
		return;
	if (c->err != SMB2_ERR_TRANSPORT) {
		b = c->req + HDR;
		if (c->tree_up) {
			hdr_init(c, SMB2_TREE_DISCONNECT, 1);
			memset(b, 0, 4);
			smbd_put16(b, 4);
			transact(c, HDR + 4);
		}
		if (c->session_up && c->err != SMB2_ERR_TRANSPORT) {
			hdr_init(c, SMB2_LOGOFF, 1);
			memset(b, 0, 4);
			smbd_put16(b, 4);
			transact(c, HDR + 4);
		}
	}
	if (c->mr)
		smbd_mr_destroy(c->t->smbd, c->mr);
	free(c->io);
	free(c->req);
	free(c);
}

uint32_t smb2_status(const struct smb2_client *c)
{
	return c->status;
}

const char *smb2_why(const struct smb2_client *c)
{
	return c->err ? c->why : "no error";
}

const struct smb2_stats *smb2_stats(const struct smb2_client *c)
{
	return &c->stats;
}

uint16_t smb2_dialect(const struct smb2_client *c)
{
	return c->dialect;
}

bool smb2_signing(const struct smb2_client *c)
{
	return c->sign;
}

size_t smb2_io_size(const struct smb2_client *c)
{
	return c->io_size;
}
