/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: a hostile peer's bytes into an established QP's data
 * path: the FPDU parser, the STag and receive checks, direct placement of
 * large payloads and the copy path, Terminates.
 *
 * Input: 1 control byte (bit 0: CRC negotiated), then the byte stream the
 * peer sends after the handshake. The QP has 8 receives posted (two SGEs
 * each, 20000 and 30000 bytes) and one MR of 256 KiB open to remote
 * writes and reads. The MR's token is the same in every run (the first MR
 * of a fresh adapter with fixed tokens, fuzzlib.h) and its memory is mapped at FIXED_VA when the
 * address space allows, so a corpus can aim Writes and Reads at it
 * (FUZZ_DP_RX_TOKEN=1 prints both).
 *
 * Invariants: the stream ends in an end-of-stream or a Terminate reported
 * once (never a hang or a crash), nothing is written outside the MR's and
 * the receives' buffers (the guard bytes around them stay intact), and
 * every posted receive completes exactly once when the QP closes.
 */
#include <errno.h>
#include <net/if.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <ndk/ndk.h>
#include "front/adapter.h"
#include "fuzzlib.h"
#include "sw/qp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MEM	 (256 * 1024)
#define GUARD	 4096
#define NRECV	 8
#define RECV_A	 20000
#define RECV_B	 30000
#define RECV_MEM (NRECV * (RECV_A + RECV_B))

static NDK_ADAPTER *ad;
static NDK_PD *pd;
static NDK_CQ *cq;
static uint8_t *mem, *recv_mem; /* each with GUARD bytes on both sides */
static UINT32 rtok, ltok;
static atomic_int ended;

static void fail(const char *what)
{
	fprintf(stderr, "fuzz_dp_rx: %s\n", what);
	abort();
}

static void on_end(void *ctx, int err)
{
	if (atomic_fetch_add(&ended, 1))
		fail("end of stream reported twice");
}

static void cq_notify(PVOID ctx, NTSTATUS status)
{
}

static NDK_MR *reg(void *p, size_t len, ULONG flags)
{
	NDK_MR *mr = fuzz_reg(pd, p, len, flags);

	if (!mr)
		fail("registering an MR");
	return mr;
}

/* Where the MR's first byte goes: in the application range of a plain,
 * an ASan and a TSan process on x86-64. */
#define FIXED_VA 0x7e9000000000ull

static void setup(void)
{
	NDK_VERSION v = { 2, 1 };
	NDK_MR *mr;

	fuzz_fixed_tokens();
	if (NdkOpenAdapter(v, if_nametoindex("lo"), &ad) ||
	    ad->Dispatch->NdkCreatePd(ad, NULL, NULL, &pd) ||
	    ad->Dispatch->NdkCreateCq(ad, 4096, cq_notify, NULL, NULL, NULL,
				      NULL, &cq))
		fail("setup");
	mem = fuzz_map(MEM + 2 * GUARD, FIXED_VA - GUARD);
	recv_mem = fuzz_map(RECV_MEM + 2 * GUARD, 0);
	if (!mem || !recv_mem)
		fail("memory");
	mr = reg(mem + GUARD, MEM,
		 NDK_MR_FLAG_ALLOW_LOCAL_WRITE |
			 NDK_MR_FLAG_ALLOW_REMOTE_WRITE |
			 NDK_MR_FLAG_ALLOW_REMOTE_READ);
	rtok = mr->Dispatch->NdkGetRemoteTokenFromMr(mr);
	mr = reg(recv_mem + GUARD, RECV_MEM, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
	ltok = mr->Dispatch->NdkGetLocalTokenFromMr(mr);
	if (getenv("FUZZ_DP_RX_TOKEN"))
		fprintf(stderr, "remote token 0x%08x at %p\n", rtok,
			(void *)(mem + GUARD));
}

static void check_guards(void)
{
	for (size_t i = 0; i < GUARD; i++)
		if (mem[i] != 0xee || mem[GUARD + MEM + i] != 0xee ||
		    recv_mem[i] != 0xee ||
		    recv_mem[GUARD + RECV_MEM + i] != 0xee)
			fail("a byte landed outside the registered buffers");
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool ready;
	struct sw_dp_socket s = { .family = AF_INET, .ird = 4, .ord = 4 };
	NDK_RESULT r[16];
	NDK_QP *qp;
	struct sw_qp *q;
	int sv[2], done = 0, i;
	size_t off = 1;
	uint64_t deadline;

	if (!size)
		return 0;
	if (!ready) {
		setup();
		ready = true;
	}
	memset(mem, 0xee, GUARD);
	memset(mem + GUARD + MEM, 0xee, GUARD);
	memset(recv_mem, 0xee, GUARD);
	memset(recv_mem + GUARD + RECV_MEM, 0xee, GUARD);
	if (pd->Dispatch->NdkCreateQp(pd, cq, cq, NULL, 64, 16, 2, 2, 0, NULL,
				      NULL, &qp))
		fail("NdkCreateQp");
	for (i = 0; i < NRECV; i++) {
		uint8_t *p = recv_mem + GUARD + (size_t)i * (RECV_A + RECV_B);
		NDK_SGE sge[2] = {
			{ .VirtualAddress = p,
			  .Length = RECV_A,
			  .MemoryRegionToken = ltok },
			{ .VirtualAddress = p + RECV_A,
			  .Length = RECV_B,
			  .MemoryRegionToken = ltok },
		};

		if (qp->Dispatch->NdkReceive(qp, (PVOID)(intptr_t)(i + 1), sge,
					     2))
			fail("NdkReceive");
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv))
		fail("socketpair");
	q = to_sw_qp(qp);
	s.fd = sv[0];
	s.engine = &q->obj.adapter->engine;
	s.crc = data[0] & 1;
	s.end_fn = on_end;
	atomic_store(&ended, 0);
	if (sw_qp_cm_connecting(q, NULL) || sw_qp_cm_established(q, &s))
		fail("attach");
	/* The peer writes what the data path takes, then closes. */
	deadline = now_ms() + 5000;
	while (off < size && !atomic_load(&ended) && now_ms() < deadline) {
		ssize_t n = send(sv[1], data + off, size - off, MSG_NOSIGNAL);

		if (n > 0)
			off += (size_t)n;
		else if (n < 0 && errno != EAGAIN)
			break;
	}
	shutdown(sv[1], SHUT_WR);
	while (!atomic_load(&ended))
		if (now_ms() > deadline + 5000)
			fail("the data path never reported the end of the stream");
	/* Close: every receive completes exactly once. */
	if (sw_qp_cm_disconnected(q, false, true))
		fail("disconnect");
	{
		const NDK_FN_CLOSE_OBJECT *close_fn =
			(const NDK_FN_CLOSE_OBJECT *)qp->Dispatch;

		if ((*close_fn)(&qp->Header, NULL, NULL))
			fail("close");
	}
	for (;;) {
		ULONG n = cq->Dispatch->NdkGetCqResults(cq, r, 16);

		if (!n)
			break;
		done += (int)n;
	}
	if (done != NRECV)
		fail("a receive did not complete exactly once");
	close(sv[1]);
	check_guards();
	return 0;
}
