/* SPDX-License-Identifier: MIT */
/*
 * Raw iWARP peers (rawpeer.h) of the data-path pair's sides (dp_pair.h):
 * a raw server that A connects to, and a raw client that P accepts, each
 * through the RTR, with CRC; the tests then write and read FPDUs on the
 * raw socket to check our codes on the wire.
 */
#ifndef NDK_RAWPEER_DP_H
#define NDK_RAWPEER_DP_H

#include "dp_pair.h"
#include "rawpeer.h"

struct dp_raw_server {
	int lfd, fd;
};

/*
 * A (a big QP on cli, NdkConnect IRD 8 / ORD 4, no private data) connects
 * to a raw MPA server, which replies P2P, CRC, responder IRD 4 / ORD 8,
 * Write RTR chosen (so our ORD is 4); Connect and NdkCompleteConnect
 * complete and the server reads our RTR. SO_RCVBUF of the server's socket
 * is rcvbuf unless 0.
 */
void dp_raw_server_connect(struct dp_raw_server *r, int rcvbuf);
/* The same with the RTR the server chooses: MPA_WRITE_RTR, or
 * MPA_READ_RTR, whose zero-length Read Request (QN 1, MSN 1) the server
 * reads and answers with a zero-length Read Response. */
void dp_raw_server_connect_rtr(struct dp_raw_server *r, int rcvbuf,
			       unsigned int rtr);
void dp_raw_server_close(struct dp_raw_server *r);

/* What a raw peer may change in its handshake; zeros give the above. */
struct dp_raw_opts {
	int rcvbuf; /* SO_RCVBUF of the raw socket unless 0 */
	int mss; /* TCP_MAXSEG of the raw socket unless 0: both ends' MSS */
	unsigned int rtr; /* MPA_WRITE_RTR (also 0) or MPA_READ_RTR */
	uint8_t flags; /* more flags in the raw side's Request or Reply */
	struct mpa_msg *got; /* unless NULL: our Request or Reply */
};
void dp_raw_server_connect_opts(struct dp_raw_server *r,
				const struct dp_raw_opts *o);

/*
 * A raw client connects to L: a Request with CRC, P2P, IRD 4, ORD ord,
 * both RTRs offered; P.qp (which the caller made) accepts it (IRD/ORD
 * 4, NdkAcceptEx: P.disc_reason gets the disconnect event's reason), the
 * client reads the Reply and sends the Write RTR; NdkAccept completes. SO_RCVBUF of the client's socket is rcvbuf unless 0.
 * Returns the raw socket.
 */
int dp_raw_client_accepted(unsigned int ord, int rcvbuf);
/* The same with one RTR offered and sent: MPA_WRITE_RTR, or MPA_READ_RTR
 * (ulpdu_read_rtr: QN 1, MSN 1), whose zero-length Read Response the
 * client reads. */
int dp_raw_client_accepted_rtr(unsigned int ord, int rcvbuf, unsigned int rtr);
int dp_raw_client_accepted_opts(unsigned int ord, const struct dp_raw_opts *o);

/* Reads one Read Request from A; checks QN 1, its MSN and the sink (STag,
 * address, size) it names. */
void dp_raw_expect_read_request(int fd, uint32_t msn, UINT32 sink_stag,
				const void *sink, uint32_t size);

/* Fails unless the Terminate ULPDU t (tlen bytes, as raw_read_fpdu gives
 * it) carries this layer, error type and code (RFC 5040 7.1). */
void dp_raw_assert_term_cause(const uint8_t *t, size_t tlen, unsigned int layer,
			      unsigned int etype, unsigned int ecode);

#endif
