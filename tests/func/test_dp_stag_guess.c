/* SPDX-License-Identifier: MIT */
/*
 * A peer guessing STags (docs/security.md, Memory tokens): P's PD holds
 * the MRs of another connection (A's, alive throughout) and a remote MR
 * of the guesser's own, whose token is all it is given. A raw client
 * (rawpeer_dp.h) connects again and again and each time aims one Write
 * or Read Request at another MR's address with a token near its own
 * (same index other keys, neighbouring indices) or at random, the
 * privileged token 0 and the RTR's STag 1 among them. Every try ends in
 * a Terminate naming an invalid STag and the end of the connection,
 * before a Read Response or the next FPDU (a valid Write to its own MR
 * right behind the guess) is served: one guess per handshake. No byte
 * of the other MRs changes or leaves, and the other connection and the
 * listener still work afterwards, and every try shows in the interface's
 * ConnectionError counter (ndkstat). Prints the guesses per second.
 *
 * NDK_TEST_GUESSES sets the number of tries (default 10000: a few
 * seconds; fewer under the sanitizers, tests/func/CMakeLists.txt).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <net/if.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "rawpeer_dp.h"
#include "testutil.h"

#define VICTIMS	   16
#define VICTIM_LEN 4096
#define VICTIM_AT  (64 << 10) /* in P.buf, every 8 KiB */
#define OWN_AT	   (1 << 20)
#define OWN_LEN	   4096
#define GUESSES	   10000

static struct side V; /* the other connection's server side */
static UINT32 victim_tok[VICTIMS + 1]; /* and P.rtok: all of P.buf */
static UINT32 own_tok;

static uint8_t *victim(unsigned int i)
{
	return P.buf + VICTIM_AT + (size_t)i * 2 * VICTIM_LEN;
}

static bool is_victim_token(UINT32 t)
{
	unsigned int i;

	for (i = 0; i <= VICTIMS; i++)
		if (t == victim_tok[i])
			return true;
	return false;
}

/*
 * Guess i, from the token the peer was given: the first two are the
 * privileged token and the RTR's STag, then in turn the same index with
 * another key, a neighbouring index (up to 64 either side) with the same
 * key, then with any key, and a random token.
 */
static UINT32 guess(unsigned int i, uint32_t *rng)
{
	uint32_t d, near;

	if (i < 2)
		return i;
	d = (1 + tu_xorshift(rng) % 64) << 8;
	near = (tu_xorshift(rng) & 1) ? own_tok + d : own_tok - d;
	switch (i % 4) {
	case 0:
		return own_tok ^ (1 + (i / 4) % 255);
	case 1:
		return near;
	case 2:
		return (near & ~0xffu) | (tu_xorshift(rng) & 0xff);
	default:
		return tu_xorshift(rng);
	}
}

/* An RDMA Write (tagged, L) of len bytes of byte to stag:to. */
static size_t write_ulpdu(uint8_t *u, UINT32 stag, uint64_t to, uint8_t byte,
			  size_t len)
{
	u[0] = 0xc1;
	u[1] = 0x40;
	put_be32(u + 2, stag);
	put_be64(u + 6, to);
	memset(u + 14, byte, len);
	return 14 + len;
}

/* A Read Request (QN 1, MSN 1) for len bytes at stag:to into a sink. */
static size_t read_ulpdu(uint8_t *u, UINT32 stag, uint64_t to, uint32_t len)
{
	ddp_untagged_hdr(u, 0x41, 0x41, 1, 1, 0);
	put_be32(u + 18, 0x11223344);
	put_be64(u + 22, 0x1000);
	put_be32(u + 30, len);
	put_be32(u + 34, stag);
	put_be64(u + 38, to);
	return 46;
}

/* The first FPDU back is the Terminate naming an invalid STag (a Read's
 * at the RDMAP layer, a Write's at the DDP tagged-buffer layer), then
 * the stream ends. */
static void expect_invalid_stag(int fd, bool read, UINT32 tok)
{
	uint8_t t[256];
	uint32_t ctrl;

	assert_true(raw_read_fpdu(fd, t, sizeof(t), WAIT_MS) >= 22);
	if (t[1] != 0x47)
		fail_msg("guess %#x: RDMAP opcode %#x before a Terminate", tok,
			 t[1]);
	ctrl = get_be32(t + 18);
	/* RDMAP remote protection / DDP tagged buffer, invalid STag. */
	if (ctrl >> 28 != (read ? 0u : 1u) || (ctrl >> 24 & 0xf) != 1 ||
	    (ctrl >> 16 & 0xff) != 0)
		fail_msg("guess %#x: Terminate layer %u etype %u code %#x", tok,
			 ctrl >> 28, ctrl >> 24 & 0xf, ctrl >> 16 & 0xff);
	assert_int_equal(raw_wait_event(fd, WAIT_MS), RAW_EOF);
}

/* The interface's ConnectionError counter (what ndkstat shows). */
static ULONG64 connection_errors(void)
{
	NDIS_NDK_STATISTICS_INFO st;
	ULONG got = 0, need = 0;

	assert_int_equal(NdkQueryOid(if_nametoindex(cm_test_ifname()),
				     OID_NDK_STATISTICS, &st, sizeof(st), &got,
				     &need),
			 NDIS_STATUS_SUCCESS);
	return st.CounterSet.ConnectionError;
}

static unsigned int guesses(void)
{
	const char *s = getenv("NDK_TEST_GUESSES");

	return s && atoi(s) > 0 ? (unsigned int)atoi(s) : GUESSES;
}

static void setup_victims(void)
{
	NDK_MR *mr;
	unsigned int i;

	/* The other connection: A on cli, V on srv, in P's PD. */
	memset(&V, 0, sizeof(V));
	A.qp = big_qp(&cli);
	V.qp = big_qp(&srv);
	connect_sides(&A, &V);
	for (i = 0; i < VICTIMS; i++) {
		mr = reg_range(srv.pd, victim(i), VICTIM_LEN,
			       NDK_MR_FLAG_ALLOW_LOCAL_WRITE |
				       NDK_MR_FLAG_ALLOW_REMOTE_READ |
				       NDK_MR_FLAG_ALLOW_REMOTE_WRITE);
		victim_tok[i] = mr->Dispatch->NdkGetRemoteTokenFromMr(mr);
		memset(victim(i), 0xa0 + (int)i, VICTIM_LEN);
	}
	victim_tok[VICTIMS] = P.rtok;
	mr = reg_range(srv.pd, P.buf + OWN_AT, OWN_LEN,
		       NDK_MR_FLAG_ALLOW_LOCAL_WRITE |
			       NDK_MR_FLAG_ALLOW_REMOTE_READ |
			       NDK_MR_FLAG_ALLOW_REMOTE_WRITE);
	own_tok = mr->Dispatch->NdkGetRemoteTokenFromMr(mr);
	memset(P.buf + OWN_AT, 0x33, OWN_LEN);
}

/* The other connection still works: A writes a victim and reads it back
 * through its token. */
static void check_other_connection(void)
{
	NDK_RESULT_EX res;
	NDK_SGE s;

	fill(A.buf, VICTIM_LEN, 5);
	s = sge(A.buf, VICTIM_LEN, A.ltok);
	assert_int_equal(A.qp->Dispatch->NdkWrite(A.qp, (PVOID)1, &s, 1,
						  (uintptr_t)victim(0),
						  victim_tok[0], 0),
			 STATUS_SUCCESS);
	poll_one_ok(cli.cq, &res, NdkOperationTypeWrite);
	s = sge(A.buf + VICTIM_LEN, VICTIM_LEN, A.ltok);
	assert_int_equal(A.qp->Dispatch->NdkRead(A.qp, (PVOID)2, &s, 1,
						 (uintptr_t)victim(0),
						 victim_tok[0], 0),
			 STATUS_SUCCESS);
	poll_one_ok(cli.cq, &res, NdkOperationTypeRead);
	assert_memory_equal(A.buf + VICTIM_LEN, A.buf, VICTIM_LEN);
	assert_int_equal(atomic_load(&A.disc), 0);
	assert_int_equal(atomic_load(&V.disc), 0);
}

static void test_guessing_peer(void **state)
{
	const unsigned int n = guesses();
	uint8_t u[64], b[256];
	uint32_t rng = (uint32_t)time(NULL) | 1;
	unsigned int i, tried = 0, k;
	uint64_t t0, ms;
	ULONG64 errors0;
	UINT32 tok;
	size_t len;
	bool read;
	int fd;

	setup_victims();
	print_message("own token %#x, xorshift seed %#x\n", own_tok, rng);
	errors0 = connection_errors();
	t0 = tu_now_ms();
	for (i = 0; i < n; i++) {
		tok = guess(i, &rng);
		if (tok == own_tok)
			continue;
		/* By chance once in about 25000 runs of 10000 guesses (17
		 * MRs among 2^32 tokens); with sequential tokens at once. */
		if (is_victim_token(tok))
			fail_msg("guess %u: %#x is another MR's token", i, tok);
		k = i % (VICTIMS + 1);
		read = i & 1;
		P.qp = big_qp(&srv);
		fd = dp_raw_client_accepted(4, 0);
		len = read ? read_ulpdu(u, tok, (uintptr_t)victim(k % VICTIMS),
					8)
			   : write_ulpdu(u, tok, (uintptr_t)victim(k % VICTIMS),
					 0xee, 8);
		len = fpdu_build(b, u, len, true);
		/* Right behind it, a Write the peer may make: never served. */
		len += fpdu_build(b + len, u,
				  write_ulpdu(u, own_tok,
					      (uintptr_t)(P.buf + OWN_AT), 0xee,
					      8),
				  true);
		raw_send(fd, b, len);
		expect_invalid_stag(fd, read, tok);
		close(fd);
		if (!tu_wait_until(disc_seen, &P, WAIT_MS))
			fail_msg("guess %#x: no disconnect event", tok);
		cm_close_connector(P.conn);
		cm_close_qp(P.qp);
		tried++;
	}
	ms = tu_now_ms() - t0;
	print_message("%u guesses in %llu ms: %.0f per second\n", tried,
		      (unsigned long long)ms, ms ? tried * 1000.0 / ms : 0.0);
	/* Each one shows: a connection ended by an error. */
	print_message("ConnectionError %llu -> %llu\n",
		      (unsigned long long)errors0,
		      (unsigned long long)connection_errors());
	assert_true(connection_errors() - errors0 >= tried);
	assert_true(tried + 1 >= n);
	for (i = 0; i < VICTIMS; i++)
		assert_all(victim(i), VICTIM_LEN, (uint8_t)(0xa0 + i),
			   "another connection's MR");
	assert_all(P.buf + OWN_AT, OWN_LEN, 0x33, "the guesser's own MR");
	check_other_connection();
	/* And the listener still takes a connection that does no wrong. */
	P.qp = big_qp(&srv);
	fd = dp_raw_client_accepted(4, 0);
	close(fd);
	assert_true(tu_wait_until(disc_seen, &P, WAIT_MS));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_guessing_peer,
						dp_setup_hosts, dp_teardown),
	};
	char dir[] = "/tmp/ndk-guess-XXXXXX";
	int ret;

	cm_software_only();
	dp_set_env();
	/* Counters of this test's own (ConnectionError is checked). */
	if (tu_private_runtime(dir))
		return 1;
	ret = cmocka_run_group_tests_name("dp_stag_guess", tests, NULL, NULL);
	return tu_private_runtime_done(dir, ret);
}
