/* SPDX-License-Identifier: MIT */
/*
 * The fixture of the data-path tests: two hosts on lo (cli and srv), one
 * side on each (A, the active side, on cli; P, the passive side, on srv)
 * with a registered buffer, and a listener L on srv; cmocka setups that
 * open them (and connect A to P), and the helpers that post requests and
 * check their completions.
 *
 * Memory the engine places (Writes, Read Responses) is looked at only
 * after a completion or event that orders it; source ranges are filled
 * before the connection exists (TSan cannot see ordering through sockets).
 */
#ifndef NDK_DP_PAIR_H
#define NDK_DP_PAIR_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "cmutil.h"

#define WAIT_MS	 30000 /* "never" for things that must happen (TSan) */
#define QUIET_MS 100 /* how long "nothing happens" is watched */
#define GUARD	 4096 /* bytes watched on each side of a target range */

struct side {
	NDK_QP *qp;
	NDK_CONNECTOR *conn;
	NDK_MR *mr; /* all of buf, local write and remote read and write */
	uint8_t *buf;
	size_t len;
	UINT32 ltok, rtok;
	atomic_int disc; /* disconnect events */
	atomic_uint disc_reason; /* the last one's reason (Ex callback) */
};

extern struct cm_host srv, cli;
extern struct side A, P;
extern struct tool_listener L;

/* The disconnect event handlers (their context is the struct side; the
 * Ex one keeps the reason), and whether the side saw one. */
VOID on_disc(PVOID ctx);
VOID on_disc_ex(PVOID ctx, ULONG reason);
bool disc_seen(void *arg);

/* Registers [p, p + len) on pd with flags. */
NDK_MR *reg_range(NDK_PD *pd, void *p, size_t len, ULONG flags);
/* A local-write-only MR over [p, p + len) on h's PD: its local token. */
UINT32 local_mr_token(struct cm_host *h, void *p, size_t len);
/* A QP on h's CQ: 256 receives and 256 requests of up to 4 SGEs, 256
 * inline bytes, or less where the adapter's limits are lower (a verbs
 * device: tests that need more skip). */
NDK_QP *big_qp(struct cm_host *h);
/* Connects a->qp (on cli) to p->qp (on srv) through L, IRD/ORD 8. */
void connect_sides(struct side *a, struct side *p);

/* Opens cli and srv, A's and P's buffers of buf_len bytes each, and L;
 * no QP yet. */
void dp_open(size_t buf_len);
/* A big QP on each side, A connected to P. */
void dp_connect(void);
/* Before any adapter exists: CRC on, as the raw peers of the tests
 * expect it, and no RTR nudge (test_cm_rtr covers it) among the FPDUs
 * they expect. */
void dp_set_env(void);

/* cmocka setups: dp_open with 8 MiB, then for dp_setup dp_connect. */
int dp_setup_hosts(void **state);
int dp_setup(void **state);
/* Closes both adapters (and what is left on them) and frees the buffers. */
int dp_teardown(void **state);

/* Polls cq until n results arrived (or WAIT_MS); returns how many. */
ULONG poll_cq(NDK_CQ *cq, NDK_RESULT_EX *res, ULONG n);
/* Nothing (more) arrives on cq for QUIET_MS. */
void assert_cq_quiet(NDK_CQ *cq);

/* A byte pattern from seed. */
void fill(uint8_t *p, size_t len, unsigned int seed);
/* Every byte of [p, p + len) is v; a failure names what. */
void assert_all(const uint8_t *p, size_t len, uint8_t v, const char *what);

NDK_SGE sge(void *p, size_t len, UINT32 tok);
void post_recv(NDK_QP *qp, uintptr_t ctx, void *p, size_t len, UINT32 tok);
void post_send(NDK_QP *qp, uintptr_t ctx, void *p, size_t len, UINT32 tok,
	       ULONG flags);
/* n Reads by A of len bytes each, chunk i from P.buf + i * len into
 * A.buf + i * len, with context i. */
void post_read_chunks(int n, size_t len);
/* A's Writes so far are placed once this returns: a zero-length Send
 * (SILENT_SUCCESS) behind them completed a zero-length receive of P. */
void placed_by_send(void);
/* One result on cq within WAIT_MS, into *res: type, STATUS_SUCCESS. */
void poll_one_ok(NDK_CQ *cq, NDK_RESULT_EX *res, NDK_OPERATION_TYPE type);
void expect_result(const NDK_RESULT_EX *r, uintptr_t ctx,
		   NDK_OPERATION_TYPE type, NTSTATUS status);

/* What a completion must be. */
struct want {
	uintptr_t ctx;
	NDK_OPERATION_TYPE type;
	NTSTATUS status;
};

/* r is the receive ctx, complete with the len bytes at src, at dst. */
void expect_received(const NDK_RESULT_EX *r, uintptr_t ctx, const void *dst,
		     const void *src, size_t len);

/* The next n results on cq (within WAIT_MS) are want[0] to want[n - 1],
 * in order; EXPECT_RESULTS(cq, { ctx, type, status }, ...) lists them. */
void expect_results(NDK_CQ *cq, const struct want *want, ULONG n);
#define EXPECT_RESULTS(cq, ...)                                       \
	expect_results((cq), (const struct want[]){ __VA_ARGS__ },    \
		       sizeof((const struct want[]){ __VA_ARGS__ }) / \
			       sizeof(struct want))

/* One page-aligned range of P's buffer as a LAM (its pages in lam). */
union lam1 {
	NDK_LOGICAL_ADDRESS_MAPPING lam;
	uint8_t raw[64];
};

/* The base of a fast registration over mem: base, or on siw (which
 * places at the host address whatever the iova) mem's address. */
uint64_t fr_base(uint8_t *mem, uint64_t base);
/* NdkBuildLAM of [mem, + len) on srv, into u (FBO 0); free the MDL. */
PMDL lam_of(uint8_t *mem, size_t len, union lam1 *u);
/* A fast-register MR of srv's for up to pages pages, remote access
 * allowed. */
NDK_MR *fr_mr_create(ULONG pages);
/* A fast-register MR of srv's, fast-registered on P.qp over the one
 * page of u at base with remote write (context 1, its completion left
 * to the caller); its remote token in *tok. */
NDK_MR *fast_register_page(union lam1 *u, uint64_t base, UINT32 *tok);

/* NdkDisconnect of a connection the peer already ended: succeeds. */
void disconnect(NDK_CONNECTOR *c);

#endif
