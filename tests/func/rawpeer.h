/* SPDX-License-Identifier: MIT */
/*
 * A fake iWARP peer on a plain TCP socket: the functional tests write its
 * MPA frames (RFC 5044 7.1, RFC 6581) and FPDUs (RFC 5044 4, RFC 5041,
 * RFC 5040) byte by byte here, independent of the provider's encoder,
 * and read ours back the same way.
 */
#ifndef NDK_RAWPEER_H
#define NDK_RAWPEER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <netinet/in.h>

/* ------------------------------------------------------------------ */
/* MPA Request and Reply frames                                        */

#define MPA_KEY_REQ "MPA ID Req Frame"
#define MPA_KEY_REP "MPA ID Rep Frame"
#define MPA_HDR_LEN 20 /* key, flags, Rev, PD_Length */

/* The flags byte. */
#define MPA_MARKERS 0x80 /* M */
#define MPA_CRC	    0x40 /* C */
#define MPA_REJECT  0x20 /* R */
#define MPA_IRD_ORD 0x10 /* S (RFC 6581): the IRD/ORD block leads the PD */

/* The IRD word of the block: A (peer to peer), B (Send RTR); the ORD
 * word: C (Write RTR), D (Read RTR); the limit in the low 14 bits. */
#define MPA_P2P	       0x8000
#define MPA_SEND_RTR   0x4000
#define MPA_WRITE_RTR  0x8000
#define MPA_READ_RTR   0x4000
#define MPA_LIMIT_MASK 0x3fff

/* Rev 2, S|C, IRD word A + 4, ORD word C|D + 4, then "hi" (26 bytes). */
extern const uint8_t mpa_req_v2[26];
/* Rev 1 (RFC 5044), C, no IRD/ORD block, then "v1" (22 bytes). */
extern const uint8_t mpa_req_v1[22];

/*
 * A Request or Reply into buf: key, flags, Rev, PD_Length (block + pd),
 * the IRD/ORD words if block, then pd_len bytes of pd (of 'x' when pd is
 * NULL). Returns the frame's length.
 */
size_t mpa_frame(uint8_t *buf, const char *key, uint8_t flags, uint8_t rev,
		 bool block, unsigned int ird_word, unsigned int ord_word,
		 const void *pd, size_t pd_len);

/* ------------------------------------------------------------------ */
/* FPDUs and the DDP/RDMAP headers inside them                         */

void put_be16(uint8_t *p, unsigned int v);
void put_be32(uint8_t *p, uint32_t v);
void put_be64(uint8_t *p, uint64_t v);
unsigned int get_be16(const uint8_t *p);
uint32_t get_be32(const uint8_t *p);
uint64_t get_be64(const uint8_t *p);

/* CRC-32C, bit by bit (RFC 3720 B.4). */
uint32_t crc32c(const uint8_t *p, size_t n);

/*
 * An FPDU around ulpdu into b: ULPDU_Length, the ULPDU, pad, CRC
 * (little-endian on the wire), the CRC off by one bit unless good_crc.
 * Returns its length.
 */
size_t fpdu_build(uint8_t *b, const uint8_t *ulpdu, size_t len, bool good_crc);

/* The RTRs (RFC 6581), as ULPDUs. A zero-length RDMA Write, STag 1, TO 0
 * (a 20-byte FPDU). */
extern const uint8_t ulpdu_write_rtr[14];
/* A zero-length Send, QN 0, MSN 1, MO 0 (a 24-byte FPDU). */
extern const uint8_t ulpdu_send_rtr[18];
/* A zero-length RDMA Read Request, QN 1, MSN 1: sink STag 0x11223344,
 * sink TO 0x0102030405060708, size 0, source STag 1, source TO 0 (a
 * 52-byte FPDU). */
extern const uint8_t ulpdu_read_rtr[46];

/* An untagged DDP header (RFC 5041 4.3) into u: the DDP control byte,
 * the RDMAP control byte, RsvdULP 0, QN, MSN, MO. Returns 18. */
size_t ddp_untagged_hdr(uint8_t *u, uint8_t ddp_ctrl, uint8_t rdmap_ctrl,
			uint32_t qn, uint32_t msn, uint32_t mo);

/* A tagged DDP header (RFC 5041 4.2) into u: the DDP control byte, the
 * RDMAP control byte, STag, TO. Returns 14. */
size_t ddp_tagged_hdr(uint8_t *u, uint8_t ddp_ctrl, uint8_t rdmap_ctrl,
		      uint32_t stag, uint64_t to);

/* A Terminate FPDU (RFC 5040 5.2: QN 2, MSN 1, MO 0, L) with only its
 * control word: layer, error type, error code. Returns its length. */
size_t fpdu_terminate(uint8_t *b, unsigned int layer, unsigned int etype,
		      unsigned int ecode);

/* ------------------------------------------------------------------ */
/* What a raw peer sends, as a list of parts (for case tables)        */

enum raw_part_kind {
	RAW_END, /* ends the list */
	RAW_BYTES, /* len bytes at data */
	RAW_FILL, /* len copies of byte */
	RAW_MPA_FRAME, /* an MPA frame, cut to its first cut bytes if cut */
	RAW_FPDU, /* an FPDU around the ULPDU at data (len bytes) */
	RAW_FPDU_BAD_CRC, /* the same with one bit of its CRC flipped */
};

/* The arguments of mpa_frame(). */
struct mpa_spec {
	const char *key;
	uint8_t flags;
	uint8_t rev;
	bool block;
	unsigned int ird_word, ord_word;
	const void *pd;
	size_t pd_len;
};

struct raw_part {
	enum raw_part_kind kind;
	const void *data;
	size_t len;
	uint8_t byte;
	struct mpa_spec mpa;
	size_t cut;
};

/* Parts, one line each. */
/* clang-format off */
#define RAW_TEXT(s)       { .kind = RAW_BYTES, .data = (s), .len = sizeof(s) - 1 }
#define RAW_ARRAY(a)      { .kind = RAW_BYTES, .data = (a), .len = sizeof(a) }
#define RAW_REPEAT(b, n)  { .kind = RAW_FILL, .byte = (b), .len = (n) }
#define RAW_FPDU_OF(a)    { .kind = RAW_FPDU, .data = (a), .len = sizeof(a) }
#define RAW_FPDU_EMPTY    { .kind = RAW_FPDU }
#define RAW_BAD_CRC_OF(a) { .kind = RAW_FPDU_BAD_CRC, .data = (a), .len = sizeof(a) }
/* RAW_MPA(key, flags, rev, block, ird_word, ord_word, pd, pd_len) */
#define RAW_MPA(...)      { .kind = RAW_MPA_FRAME, .mpa = { __VA_ARGS__ } }
/* The first cut bytes of RAW_MPA(...). */
#define RAW_MPA_CUT(cut_, ...) \
	{ .kind = RAW_MPA_FRAME, .cut = (cut_), .mpa = { __VA_ARGS__ } }
/* The P2P Reply a good responder sends: Rev 2, S|C, IRD word A + 4, ORD
 * word C (Write RTR chosen) + 8, then "ok". */
#define RAW_GOOD_REPLY \
	RAW_MPA(MPA_KEY_REP, MPA_IRD_ORD | MPA_CRC, 2, true, MPA_P2P | 4, \
		MPA_WRITE_RTR | 8, "ok", 2)
/* clang-format on */

/* The parts (up to the first RAW_END) one after the other into buf;
 * fails the test beyond max bytes. Returns the length. */
size_t raw_build(uint8_t *buf, size_t max, const struct raw_part *parts);
/* RAW_GOOD_REPLY into buf (64 bytes). */
size_t mpa_good_reply(uint8_t *buf);

/* ------------------------------------------------------------------ */
/* Raw sockets on 127.0.0.1                                           */

/* A TCP connection to to (IPv4), TCP_NODELAY; with SO_RCVBUF rcvbuf set
 * before connecting, unless rcvbuf is 0. */
int raw_connect(const struct sockaddr_storage *to);
int raw_connect_rcvbuf(const struct sockaddr_storage *to, int rcvbuf);
/* The same with TCP_MAXSEG mss unless 0: the MSS both ends then use. */
int raw_connect_mss(const struct sockaddr_storage *to, int rcvbuf, int mss);
/* TCP_MAXSEG mss on fd unless 0; on a listener, before the SYN comes, it
 * is the accepted sockets' MSS. */
void raw_set_mss(int fd, int mss);
/* A listening socket on 127.0.0.1, port picked; addr gets its address.
 * rcvbuf as above, inherited by the accepted sockets. */
int raw_listen(struct sockaddr_in *addr, int rcvbuf);
/* The next connection on lfd within ms, TCP_NODELAY. */
int raw_accept(int lfd, unsigned int ms);

void raw_send(int fd, const void *buf, size_t len);
/* One byte per send, pausing 2 ms after each quarter: the reader meets
 * the frame in pieces (and short enough for the tests' CM timeout). */
void raw_send_bytewise(int fd, const uint8_t *buf, size_t len);
/* Closes with an RST instead of a FIN (SO_LINGER 0). */
void raw_close_rst(int fd);

/*
 * Reads len bytes within ms. Returns len, fewer if the stream ended (EOF
 * or reset) first, or -ETIMEDOUT if it is still open but short.
 */
ssize_t raw_recv(int fd, void *buf, size_t len, unsigned int ms);

/* How the stream goes on within ms. */
enum raw_event { RAW_EOF, RAW_RESET, RAW_DATA, RAW_SILENT };
enum raw_event raw_wait_event(int fd, unsigned int ms);

/* The provider dropped the connection within ms: FIN or RST, and no byte
 * before. A failure names what (when not NULL). */
void raw_assert_dropped(int fd, unsigned int ms, const char *what);

/* One MPA Request or Reply as read: the header, then PD_Length bytes. */
struct mpa_msg {
	uint8_t hdr[MPA_HDR_LEN];
	uint8_t pd[512];
	size_t pd_len;
};

/* Reads one frame with the given key within ms (each read); PD_Length
 * must be at most 256. */
void raw_read_mpa(int fd, struct mpa_msg *m, const char *key, unsigned int ms);

/* Reads one FPDU (CRC on, checked) into u within ms (each read); returns
 * its ULPDU length, at most max. */
size_t raw_read_fpdu(int fd, uint8_t *u, size_t max, unsigned int ms);

/* Reads our Write RTR (RFC 6581) within ms into rtr (20 bytes) and checks
 * it byte by byte, with CRC. */
void raw_expect_write_rtr(int fd, uint8_t *rtr, unsigned int ms);

#endif
