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
#ifndef MAX
#define MAX(a, b) ((a) > (b) ? (a) : (b))
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

/* Requests and the inline data we build: a 1 MiB WRITE over TCP fits. */
#define MAX_MSG	       ((1u << 20) + 4096)
#define CREDITS_WANTED 256
#define CREDITS_MAX    8192

/* A request in flight, matched to its response by MessageId. */
struct smb2_req {
	bool busy;
	bool pending; /* the server answered STATUS_PENDING */
	uint64_t id;
	uint16_t cmd;
	/* READ and WRITE: this request's RDMA buffer (SMB Direct) and the
	 * caller's. */
	bool rdma;
	uint8_t *io;
	struct smbd_mr *mr;
	uint8_t *buf;
	uint64_t off;
	size_t len;
	uint64_t sent_ns; /* when it went out (latency) */
};

/* The READs or WRITEs of one smb2_read or smb2_write. */
struct smb2_io {
	uint64_t eof; /* a READ came back short here */
};

struct smb2_client {
	struct smb2_transport *t;
	struct smb2_opts o;
	uint16_t dialect;
	uint16_t sec_mode;
	uint32_t caps;
	uint32_t max_read, max_write, max_trans;
	uint64_t msg_id;
	unsigned int credits, credits_wanted;
	uint64_t session_id;
	uint32_t tree_id;
	bool sign, session_up, tree_up;
	uint8_t signing_key[16];
	uint8_t *req; /* MAX_MSG */
	const uint8_t *rsp;
	size_t rsp_len;
	uint32_t status;
	int err;
	bool broken; /* the transport failed: nothing more will come */
	bool keep_first; /* I/O in flight: the first failure is the reason */
	char why[256];
	size_t io_size;
	struct smb2_req ctl; /* the one request of transact() */
	struct smb2_req *reqs; /* READs and WRITEs, queue_depth of them */
	unsigned int depth, inflight;
	struct smb2_io *cur;
	struct smb2_stats stats;
};

static int fail(struct smb2_client *c, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(struct smb2_client *c, int err, const char *fmt, ...)
{
	va_list ap;

	if (err == SMB2_ERR_TRANSPORT)
		c->broken = true;
	/* A failed transport stays the reason for everything after it. */
	if (c->err == SMB2_ERR_TRANSPORT || (c->keep_first && c->err))
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
	/* CreditRequest and MessageId: send_req(). */
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

static int io_done(struct smb2_client *c, struct smb2_req *r, int sig_err);

/* The request in flight that a response's MessageId names. */
static struct smb2_req *req_of(struct smb2_client *c, uint64_t id)
{
	unsigned int i;

	if (c->ctl.busy && c->ctl.id == id)
		return &c->ctl;
	for (i = 0; i < c->depth; i++)
		if (c->reqs[i].busy && c->reqs[i].id == id)
			return &c->reqs[i];
	return NULL;
}

/* What we wait for, for messages: the oldest request in flight. */
static const char *waiting_for(struct smb2_client *c)
{
	struct smb2_req *o = c->ctl.busy ? &c->ctl : NULL;
	unsigned int i;

	for (i = 0; i < c->depth; i++)
		if (c->reqs[i].busy && (!o || c->reqs[i].id < o->id))
			o = &c->reqs[i];
	return o ? cmd_name(o->cmd) : "?";
}

/*
 * Receives one response and hands it to its request, whichever of those
 * in flight it is: transact()'s gets c->rsp and c->status, a READ's or
 * WRITE's is finished by io_done(). An interim STATUS_PENDING answer
 * only brings credits. SMB2_OK, or a failure of this response (or of the
 * transport: c->broken).
 */
static int recv_one(struct smb2_client *c)
{
	struct smb2_req *r;
	const uint8_t *m;
	uint32_t status;
	uint64_t id;
	size_t n;
	int err, sig_err = SMB2_OK;

	if (c->broken)
		return SMB2_ERR_TRANSPORT;
	err = c->t->recv(c->t->ctx, &m, &n, c->o.timeout_ms);
	if (err)
		return fail(c, SMB2_ERR_TRANSPORT, "%s: receive: %s",
			    waiting_for(c), c->t->err_str(c->t->ctx, err));
	if (n < HDR || smbd_get32(m) != 0x424d53feu || smbd_get16(m + 4) != HDR)
		return fail(c, SMB2_ERR_PROTO,
			    "%s: a %zu-byte response that is no SMB2 message",
			    waiting_for(c), n);
	id = smbd_get64(m + 24);
	r = req_of(c, id);
	if (!r || smbd_get16(m + 12) != r->cmd ||
	    !(smbd_get32(m + 16) & SMB2_FLAGS_SERVER_TO_REDIR))
		return fail(c, SMB2_ERR_PROTO,
			    "got %s for message %llu, which is not in flight",
			    cmd_name(smbd_get16(m + 12)),
			    (unsigned long long)id);
	c->credits += smbd_get16(m + 14);
	status = smbd_get32(m + 8);
	if (status == STATUS_PENDING_ &&
	    (smbd_get32(m + 16) & SMB2_FLAGS_ASYNC_COMMAND)) {
		r->pending = true;
		return SMB2_OK;
	}
	r->busy = false;
	c->inflight--;
	c->status = status;
	c->rsp = m;
	c->rsp_len = n;
	if (c->sign && c->session_up &&
	    (smbd_get32(m + 16) & SMB2_FLAGS_SIGNED))
		sig_err = check_signature(c, m, n);
	if (c->o.verbose > 1)
		fprintf(stderr,
			"smb2: %s (message %llu) -> 0x%08x, %zu bytes, credits %u, %u in flight\n",
			cmd_name(r->cmd), (unsigned long long)id, status, n,
			c->credits, c->inflight);
	if (r == &c->ctl)
		return sig_err;
	return io_done(c, r, sig_err);
}

/* Never beyond the credits granted: the responses in flight bring more.
 * With none in flight and too few credits, the server grants no more. */
static int wait_credits(struct smb2_client *c, uint16_t cmd, uint16_t charge)
{
	int err;

	if (cmd == SMB2_NEGOTIATE)
		return SMB2_OK;
	if (c->credits < charge && c->inflight)
		c->stats.credit_waits++;
	while (c->credits < charge && c->inflight) {
		err = recv_one(c);
		if (err && c->broken)
			return err;
	}
	if (c->credits < charge)
		return fail(
			c, SMB2_ERR_PROTO,
			"%s: %u credits, %u needed (the server grants no more)",
			cmd_name(cmd), c->credits, charge);
	return SMB2_OK;
}

/* Sends the request in c->req (len bytes) as r, with the next MessageId. */
static int send_req(struct smb2_client *c, size_t len, struct smb2_req *r)
{
	uint16_t cmd = smbd_get16(c->req + 12);
	uint16_t charge = smbd_get16(c->req + 6);
	int err;

	if (c->broken)
		return SMB2_ERR_TRANSPORT;
	if (!charge)
		charge = 1;
	err = wait_credits(c, cmd, charge);
	if (err)
		return err;
	/* Ask for what we are about to spend, and more up to the target. */
	smbd_put16(c->req + 14,
		   (uint16_t)(c->credits < c->credits_wanted
				      ? c->credits_wanted - c->credits + charge
				      : charge));
	smbd_put64(c->req + 24, c->msg_id);
	if (c->sign && c->session_id && cmd != SMB2_NEGOTIATE) {
		smbd_put32(c->req + 16,
			   smbd_get32(c->req + 16) | SMB2_FLAGS_SIGNED);
		smb3_sign(c->signing_key, c->req, len, c->req + 48);
	}
	r->busy = true;
	r->pending = false;
	r->id = c->msg_id;
	r->cmd = cmd;
	c->msg_id += charge;
	c->credits -= MIN(c->credits, charge);
	c->stats.requests++;
	c->inflight++;
	err = c->t->send(c->t->ctx, c->req, len);
	if (err) {
		r->busy = false;
		c->inflight--;
		return fail(c, SMB2_ERR_TRANSPORT, "%s: send: %s",
			    cmd_name(cmd), c->t->err_str(c->t->ctx, err));
	}
	return SMB2_OK;
}

/*
 * Sends the request in c->req (len bytes) and waits for its response,
 * skipping interim STATUS_PENDING answers. Returns SMB2_OK with any
 * status in c->status, or a failure. No READ or WRITE is in flight.
 */
static int transact(struct smb2_client *c, size_t len)
{
	int err;

	if (c->err == SMB2_ERR_TRANSPORT || c->broken)
		return SMB2_ERR_TRANSPORT;
	err = send_req(c, len, &c->ctl);
	if (err)
		return err;
	while (c->ctl.busy) {
		err = recv_one(c);
		if (err && c->ctl.busy) {
			/* A stray response, or no more: the request ends
			 * here (nothing else is in flight). */
			c->ctl.busy = false;
			c->inflight--;
		}
		if (err)
			return err;
	}
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

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
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

/* Registers a request's buffer and writes the descriptor. */
static int rdma_prepare(struct smb2_client *c, struct smb2_req *r, size_t len,
			bool server_writes, uint8_t *desc_at)
{
	struct smbd_buffer_desc d;
	int err;

	err = smbd_mr_register(c->t->smbd, r->mr, len, server_writes, &d);
	if (err)
		return fail(c, SMB2_ERR_TRANSPORT, "RDMA registration: %s",
			    smbd_why(c->t->smbd));
	smbd_buffer_desc_encode(desc_at, &d);
	return SMB2_OK;
}

static int rdma_finish(struct smb2_client *c, struct smb2_req *r)
{
	bool by_peer;
	int err;

	err = smbd_mr_release(c->t->smbd, r->mr, &by_peer);
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
	return c->t->smbd && len >= c->o.rdma_threshold;
}

static uint32_t channel(struct smb2_client *c)
{
	return c->o.remote_invalidate ? SMB2_CHANNEL_RDMA_V1_INVALIDATE
				      : SMB2_CHANNEL_RDMA_V1;
}

static int read_done(struct smb2_client *c, struct smb2_req *r)
{
	const uint8_t *b;
	size_t n, doff;

	if (c->status == STATUS_END_OF_FILE_) {
		n = 0;
	} else if (c->status) {
		return status_fail(c, "READ");
	} else {
		b = body(c, 16);
		if (!b)
			return c->err;
		if (r->rdma) {
			/* DataRemaining: what the server wrote. */
			n = smbd_get32(b + 8);
			if (smbd_get32(b + 4) || n > r->len)
				return fail(
					c, SMB2_ERR_PROTO,
					"READ: %zu bytes through the RDMA channel for %zu asked",
					n, r->len);
			memcpy(r->buf, r->io, n);
			c->stats.rdma_reads++;
		} else {
			doff = b[2];
			n = smbd_get32(b + 4);
			if (doff < HDR + 16 || doff + n > c->rsp_len ||
			    n > r->len)
				return fail(
					c, SMB2_ERR_PROTO,
					"READ: %zu bytes at %zu in a %zu-byte response",
					n, doff, c->rsp_len);
			memcpy(r->buf, c->rsp + doff, n);
			c->stats.inline_reads++;
		}
	}
	/* Short: the file ends here; nothing after it is asked for. */
	if (n < r->len && c->cur && r->off + n < c->cur->eof)
		c->cur->eof = r->off + n;
	return SMB2_OK;
}

static int write_done(struct smb2_client *c, struct smb2_req *r)
{
	const uint8_t *b;

	if (c->status)
		return status_fail(c, "WRITE");
	b = body(c, 16);
	if (!b)
		return c->err;
	if (smbd_get32(b + 4) != r->len)
		return fail(c, SMB2_ERR_PROTO, "WRITE: %u of %zu bytes written",
			    smbd_get32(b + 4), r->len);
	if (r->rdma)
		c->stats.rdma_writes++;
	else
		c->stats.inline_writes++;
	return SMB2_OK;
}

/* A READ's or WRITE's response: the registration goes first, whatever
 * the answer. */
static int io_done(struct smb2_client *c, struct smb2_req *r, int sig_err)
{
	int err = SMB2_OK;

	smb_lat_add(r->cmd == SMB2_READ ? &c->stats.read_lat
					: &c->stats.write_lat,
		    mono_ns() - r->sent_ns);
	if (r->rdma)
		err = rdma_finish(c, r);
	if (sig_err)
		return sig_err;
	if (err)
		return err;
	return r->cmd == SMB2_READ ? read_done(c, r) : write_done(c, r);
}

/* Builds and sends one READ or WRITE of len bytes at off as r. */
static int io_issue(struct smb2_client *c, struct smb2_req *r,
		    struct smb2_file *f, bool write, uint64_t off, uint8_t *buf,
		    size_t len)
{
	uint8_t *b = c->req + HDR;
	uint16_t cmd = write ? SMB2_WRITE : SMB2_READ;
	size_t mlen;
	int err;

	/* Credits first: waiting receives into other requests. */
	err = wait_credits(c, cmd, charge_of(len));
	if (err)
		return err;
	r->rdma = use_rdma(c, len);
	r->buf = buf;
	r->off = off;
	r->len = len;
	hdr_init(c, cmd, charge_of(len));
	memset(b, 0, 64);
	smbd_put16(b, 49);
	if (!write) {
		b[2] = HDR + 16; /* Padding: where the response's data goes */
		smbd_put32(b + 4, (uint32_t)len);
		smbd_put64(b + 8, off);
		memcpy(b + 16, f->id, 16);
		if (r->rdma) {
			err = rdma_prepare(c, r, len, true, b + 48);
			if (err)
				return err;
			smbd_put32(b + 36, channel(c));
			smbd_put16(b + 44, HDR + 48);
			smbd_put16(b + 46, SMBD_BUFFER_DESC_SIZE);
		}
		mlen = HDR + 48 + (r->rdma ? SMBD_BUFFER_DESC_SIZE : 1);
	} else {
		smbd_put64(b + 8, off);
		memcpy(b + 16, f->id, 16);
		if (r->rdma) {
			memcpy(r->io, buf, len);
			err = rdma_prepare(c, r, len, false, b + 48);
			if (err)
				return err;
			/* Length and DataOffset 0: RemainingBytes says how
			 * much. */
			smbd_put32(b + 32, channel(c));
			smbd_put32(b + 36, (uint32_t)len);
			smbd_put16(b + 40, HDR + 48);
			smbd_put16(b + 42, SMBD_BUFFER_DESC_SIZE);
			mlen = HDR + 48 + SMBD_BUFFER_DESC_SIZE;
		} else {
			smbd_put16(b + 2, HDR + 48);
			smbd_put32(b + 4, (uint32_t)len);
			memcpy(b + 48, buf, len);
			mlen = HDR + 48 + len;
		}
	}
	r->sent_ns = mono_ns();
	err = send_req(c, mlen, r);
	if (err && r->rdma) {
		bool by_peer;

		smbd_mr_release(c->t->smbd, r->mr, &by_peer);
	}
	return err;
}

/* Bytes of the next READ or WRITE with left to go. */
static size_t io_chunk(struct smb2_client *c, bool write, size_t left)
{
	size_t n = MIN(left, c->io_size);

	if (use_rdma(c, n))
		return n;
	if (!write)
		return MIN(n, c->max_read);
	/* Inline data rides in the request. */
	n = MIN(n, MIN((size_t)c->max_write, MAX_MSG - HDR - 48));
	if (c->t->smbd)
		n = MIN(n, smbd_info(c->t->smbd)->max_frag_send - HDR - 48);
	return n;
}

/* After a transport failure nothing more comes: the requests in flight
 * end here (their registrations go with the connection). */
static void io_abandon(struct smb2_client *c)
{
	unsigned int i;
	bool by_peer;

	for (i = 0; i < c->depth; i++) {
		struct smb2_req *r = &c->reqs[i];

		if (!r->busy)
			continue;
		if (r->rdma)
			smbd_mr_release(c->t->smbd, r->mr, &by_peer);
		r->busy = false;
		c->inflight--;
	}
}

/*
 * READs or WRITEs of len bytes at off, up to the queue depth in flight,
 * each with its own buffer and registration; responses in any order.
 * After a failure no more are sent and those in flight are waited for
 * (each wait bounded by the timeout), unless the transport failed.
 */
static int io_run(struct smb2_client *c, struct smb2_file *f, bool write,
		  uint64_t off, uint8_t *buf, size_t len, size_t *got)
{
	struct smb2_io io = { .eof = UINT64_MAX };
	struct smb2_req *r;
	size_t pos = 0, n;
	unsigned int i;

	if (c->err == SMB2_ERR_TRANSPORT || c->broken)
		return SMB2_ERR_TRANSPORT;
	c->err = SMB2_OK;
	c->keep_first = true;
	c->cur = &io;
	while (!c->broken) {
		r = NULL;
		if (pos < len && !c->err && off + pos < io.eof)
			for (i = 0; i < c->depth && !r; i++)
				if (!c->reqs[i].busy)
					r = &c->reqs[i];
		if (r) {
			n = io_chunk(c, write, len - pos);
			if (!io_issue(c, r, f, write, off + pos, buf + pos, n))
				pos += n;
			continue;
		}
		if (!c->inflight)
			break;
		recv_one(c);
	}
	if (c->broken)
		io_abandon(c);
	c->keep_first = false;
	c->cur = NULL;
	if (c->err)
		return c->err;
	if (got)
		*got = io.eof < off + len ? (size_t)(io.eof - off) : len;
	return SMB2_OK;
}

int smb2_read(struct smb2_client *c, struct smb2_file *f, uint64_t off,
	      void *buf, size_t len, size_t *got)
{
	*got = 0;
	return io_run(c, f, false, off, buf, len, got);
}

int smb2_write(struct smb2_client *c, struct smb2_file *f, uint64_t off,
	       const void *buf, size_t len)
{
	return io_run(c, f, true, off, (uint8_t *)(uintptr_t)buf, len, NULL);
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
	unsigned int i;
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
	c->credits_wanted = CREDITS_WANTED;
	c->depth = c->o.queue_depth ? c->o.queue_depth : 1;
	c->reqs = calloc(c->depth, sizeof(*c->reqs));
	if (!c->reqs) {
		free(c->req);
		free(c);
		snprintf(why, whylen, "out of memory");
		return SMB2_ERR_LOCAL;
	}
	err = negotiate(c);
	if (!err)
		err = session_setup(c);
	if (!err)
		err = tree_connect(c);
	if (!err) {
		c->io_size = MIN(c->o.io_size, MIN(c->max_read, c->max_write));
		if (t->smbd) {
			c->io_size = MIN(c->io_size,
					 smbd_info(t->smbd)->max_read_write);
			c->io_size &= ~(size_t)4095;
		}
		/* Enough credits for a full queue of the largest I/O. */
		c->credits_wanted =
			MIN(CREDITS_MAX,
			    MAX(CREDITS_WANTED,
				c->depth * charge_of(c->io_size) + 1u));
	}
	/* Each request of the queue has its own buffer and registration. */
	for (i = 0; !err && t->smbd && i < c->depth; i++) {
		struct smb2_req *r = &c->reqs[i];

		r->io = aligned_alloc(4096, c->io_size);
		if (!r->io)
			err = fail(c, SMB2_ERR_LOCAL, "out of memory");
		else if (smbd_mr_create(t->smbd, r->io, c->io_size, &r->mr))
			err = fail(c, SMB2_ERR_TRANSPORT, "RDMA buffer: %s",
				   smbd_why(t->smbd));
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
	unsigned int i;
	uint8_t *b;

	if (!c)
		return;
	if (c->err != SMB2_ERR_TRANSPORT && !c->broken) {
		b = c->req + HDR;
		if (c->tree_up) {
			hdr_init(c, SMB2_TREE_DISCONNECT, 1);
			memset(b, 0, 4);
			smbd_put16(b, 4);
			transact(c, HDR + 4);
		}
		if (c->session_up && !c->broken) {
			hdr_init(c, SMB2_LOGOFF, 1);
			memset(b, 0, 4);
			smbd_put16(b, 4);
			transact(c, HDR + 4);
		}
	}
	for (i = 0; i < c->depth; i++) {
		if (c->reqs[i].mr)
			smbd_mr_destroy(c->t->smbd, c->reqs[i].mr);
		free(c->reqs[i].io);
	}
	free(c->reqs);
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
