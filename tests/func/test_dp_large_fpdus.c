/* SPDX-License-Identifier: MIT */
/*
 * Large FPDUs (docs/wire.md, Large FPDUs): the software provider sends
 * FPDUs larger than the MSS only to a peer that said it takes them, with
 * the 0x08 bit of the MPA flags byte in its Request or Reply, and only
 * while NDK_MPA_LARGE_FPDU allows; otherwise every FPDU fits one TCP
 * segment (RFC 5044 MULPDU). The flag goes out in our Request, and in our
 * Reply when the Request had it.
 *
 * Against raw peers (rawpeer_dp.h) whose sockets set an MSS of 1448, CRC
 * on: our side writes 64 KiB and the raw peer reads every FPDU, checks
 * headers, offsets and bytes, and measures the largest.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "rawpeer_dp.h"
#include "testutil.h"

#define MSS	 1448
#define LARGE	 0x08 /* the flag, as Linux siw sends it */
#define LEN	 65536
#define RAW_STAG 0x4242
#define RAW_TO	 0x100000ull
#define TCP_OPTS 40 /* the most TCP options a segment can carry */
#define FPDU_MAX (2 + 0xffff + 3 + 4)

static void set_large(const char *v)
{
	if (v)
		setenv("NDK_MPA_LARGE_FPDU", v, 1);
	else
		unsetenv("NDK_MPA_LARGE_FPDU");
}

static int teardown(void **state)
{
	set_large(NULL);
	return dp_teardown(state);
}

/* Bytes of the FPDU that carries n ULPDU bytes: length, pad, CRC. */
static size_t fpdu_len(size_t n)
{
	return (2 + n + 3) / 4 * 4 + 4;
}

/*
 * Side s writes LEN bytes to RAW_STAG:RAW_TO; the raw peer on fd reads
 * the Write FPDU by FPDU and checks each header and the bytes. Returns the
 * largest FPDU, on the wire, that carried them.
 */
static size_t write_and_read(struct side *s, NDK_CQ *cq, int fd)
{
	static uint8_t u[14 + LEN];
	uint8_t *got = malloc(LEN);
	NDK_SGE sg = sge(s->buf, LEN, s->ltok);
	size_t off = 0, big = 0;
	bool last = false;

	assert_non_null(got);
	fill(s->buf, LEN, 31);
	assert_int_equal(s->qp->Dispatch->NdkWrite(s->qp, (PVOID)5, &sg, 1,
						   RAW_TO, RAW_STAG, 0),
			 STATUS_SUCCESS);
	while (!last) {
		size_t n = raw_read_fpdu(fd, u, sizeof(u), WAIT_MS);

		assert_true(n > 14 && off + n - 14 <= LEN);
		assert_int_equal(u[0] & 0xbf, 0x81); /* tagged, DDP v1 */
		assert_int_equal(u[1], 0x40); /* RDMAP v1, RDMA Write */
		assert_int_equal(get_be32(u + 2), RAW_STAG);
		assert_int_equal(get_be64(u + 6), RAW_TO + off);
		memcpy(got + off, u + 14, n - 14);
		off += n - 14;
		last = u[0] & 0x40;
		if (fpdu_len(n) > big)
			big = fpdu_len(n);
	}
	assert_int_equal(off, LEN);
	assert_memory_equal(got, s->buf, LEN);
	EXPECT_RESULTS(cq, { 5, NdkOperationTypeWrite, STATUS_SUCCESS });
	free(got);
	return big;
}

static void assert_small(size_t big)
{
	/* One segment: the MSS less what options took of it. */
	assert_true(big <= MSS);
	assert_true(big > MSS - TCP_OPTS);
}

static void assert_large(size_t big)
{
	/* Whole segments, as many as an FPDU holds: never over the 16-bit
	 * ULPDU length, and over half of it. */
	assert_true(big <= FPDU_MAX);
	assert_true(big > FPDU_MAX / 2);
}

/* Active side: what our Request says, and what we send once the Reply
 * said flags (0 or LARGE). */
static size_t active(uint8_t reply_flags, bool *asked)
{
	struct mpa_msg req;
	struct dp_raw_opts o = {
		.mss = MSS,
		.flags = reply_flags,
		.got = &req,
	};
	struct dp_raw_server r;
	size_t big;

	dp_raw_server_connect_opts(&r, &o);
	*asked = req.hdr[16] & LARGE;
	assert_int_equal(req.hdr[16] & 0x07, 0); /* still reserved */
	big = write_and_read(&A, cli.cq, r.fd);
	dp_raw_server_close(&r);
	return big;
}

/* Passive side: what our Reply says to a Request with flags (0 or
 * LARGE), and what we send then. */
static size_t passive(uint8_t request_flags, bool *said)
{
	struct mpa_msg rep;
	struct dp_raw_opts o = {
		.mss = MSS,
		.flags = request_flags,
		.got = &rep,
	};
	size_t big;
	int fd;

	P.qp = big_qp(&srv);
	fd = dp_raw_client_accepted_opts(4, &o);
	*said = rep.hdr[16] & LARGE;
	assert_int_equal(rep.hdr[16] & 0x07, 0);
	big = write_and_read(&P, srv.cq, fd);
	close(fd);
	return big;
}

/* Both say it: FPDUs of many segments, each way. */
static void test_both_say_large(void **state)
{
	bool flag;

	(void)state;
	assert_large(active(LARGE, &flag));
	assert_true(flag);
	assert_large(passive(LARGE, &flag));
	assert_true(flag);
}

/* A peer that does not say it (any RNIC that follows the RFC): one
 * segment per FPDU, and our Reply does not say it either. */
static void test_peer_silent(void **state)
{
	bool flag;

	(void)state;
	assert_small(active(0, &flag));
	assert_true(flag);
	assert_small(passive(0, &flag));
	assert_false(flag);
}

/* NDK_MPA_LARGE_FPDU=0: never offered, never used, whatever the peer
 * says. */
static void test_turned_off(void **state)
{
	bool flag;

	(void)state;
	set_large("0");
	assert_small(active(LARGE, &flag));
	assert_false(flag);
	assert_small(passive(LARGE, &flag));
	assert_false(flag);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_both_say_large,
						dp_setup_hosts, teardown),
		cmocka_unit_test_setup_teardown(test_peer_silent,
						dp_setup_hosts, teardown),
		cmocka_unit_test_setup_teardown(test_turned_off, dp_setup_hosts,
						teardown),
	};

	cm_software_only();
	dp_set_env();
	return cmocka_run_group_tests_name("dp_large_fpdus", tests, NULL, NULL);
}
