/* SPDX-License-Identifier: MIT */
/*
 * MPA connection setup frames (RFC 5044 section 7.1) with the enhanced
 * connection establishment of MPA v2 (RFC 6581), plus the FPDU size helpers
 * of RFC 5044 section 4. Pure wire code: no I/O, no allocation.
 *
 * A Request or Reply is a 20-byte header followed by PD_Length bytes of
 * private data. When Rev is 2 and the S flag is set, the first 4 bytes of
 * the private data are the IRD/ORD block, and the consumer's private data
 * follows it; PD_Length counts both.
 *
 *	off 0	16	key "MPA ID Req Frame" / "MPA ID Rep Frame"
 *	off 16	1	flags M C R S res(4)
 *	off 17	1	Rev
 *	off 18	2	PD_Length (big-endian)
 *	off 20		[IRD/ORD block: A B IRD(14) | C D ORD(14)] consumer PD
 *
 * Nothing may follow a Request or Reply on the stream before the peer has
 * answered it (siw drops the connection if extra bytes are queued).
 */
#ifndef NDK_IWARP_MPA_H
#define NDK_IWARP_MPA_H

#include <errno.h> /* the negative errno values the API returns */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MPA_KEY_LEN    16
#define MPA_KEY_REQ    "MPA ID Req Frame"
#define MPA_KEY_REP    "MPA ID Rep Frame"
#define MPA_RR_HDR_LEN 20

/* Flags byte, offset 16 (RFC 5044 7.1; S from RFC 6581). */
#define MPA_FLAG_MARKERS  0x80 /* M: sender wants markers in what it gets */
#define MPA_FLAG_CRC	  0x40 /* C: CRC in both directions if either sets */
#define MPA_FLAG_REJECT	  0x20 /* R: Reply only, the connection is refused */
#define MPA_FLAG_ENHANCED 0x10 /* S: IRD/ORD block present (Rev 2) */
/*
 * Not in the RFCs: the sender takes FPDUs larger than its MSS. Linux siw
 * sends it (its try_gso) and echoes a Request's flags in its Reply; a
 * receiver that does not know it ignores it as a reserved bit.
 */
#define MPA_FLAG_LARGE_FPDU 0x08
#define MPA_FLAG_RESERVED   0x07 /* sent as 0, ignored on receipt */

#define MPA_REV_1 1 /* RFC 5044 */
#define MPA_REV_2 2 /* RFC 6581 */

/* Private data limits. */
#define MPA_RFC_PD_MAX	     512 /* RFC 5044 7.1 */
#define MPA_PRIVATE_DATA_MAX 256 /* what siw and cxgb4 accept */
#define MPA_V2_BLOCK_LEN     4 /* RFC 6581 IRD/ORD block */
/* Consumer private data per frame: MaxCallerData = MaxCalleeData. */
#define NDK_MPA_MAX_CONSUMER_PD (MPA_PRIVATE_DATA_MAX - MPA_V2_BLOCK_LEN)
/* Largest frame the parser can ever accept. */
#define MPA_RR_FRAME_MAX (MPA_RR_HDR_LEN + MPA_RFC_PD_MAX)

/* RFC 6581 IRD/ORD block: two big-endian 16-bit words. */
#define MPA_V2_P2P	  0x8000 /* IRD word, A: peer-to-peer (RTR) mode */
#define MPA_V2_SEND_RTR	  0x4000 /* IRD word, B: zero-length Send RTR */
#define MPA_V2_WRITE_RTR  0x8000 /* ORD word, C: zero-length Write RTR */
#define MPA_V2_READ_RTR	  0x4000 /* ORD word, D: zero-length Read RTR */
#define MPA_V2_VALUE_MASK 0x3fff /* IRD or ORD, 14 bits */
#define MPA_IRD_ORD_MAX	  MPA_V2_VALUE_MASK

/* The header as it sits on the wire; multi-byte fields are big-endian. */
struct mpa_rr_hdr {
	uint8_t key[MPA_KEY_LEN];
	uint8_t flags;
	uint8_t rev;
	uint8_t pd_len[2];
};
_Static_assert(sizeof(struct mpa_rr_hdr) == MPA_RR_HDR_LEN, "MPA header");

struct mpa_v2_block {
	uint8_t ird[2]; /* A B IRD */
	uint8_t ord[2]; /* C D ORD */
};
_Static_assert(sizeof(struct mpa_v2_block) == MPA_V2_BLOCK_LEN, "MPA v2");

enum mpa_rr_type {
	MPA_RR_REQUEST,
	MPA_RR_REPLY,
	MPA_RR_ANY, /* parser only: accept either key */
};

/*
 * RTR message types (RFC 6581), as a bit set: a Request offers
 * any subset, an accepting Reply chooses exactly one.
 */
enum mpa_rtr {
	MPA_RTR_NONE = 0,
	MPA_RTR_WRITE = 1 << 0, /* C: zero-length RDMA Write (STag 1, TO 0) */
	MPA_RTR_READ = 1 << 1, /* D: zero-length RDMA Read Request */
	MPA_RTR_SEND = 1 << 2, /* B: zero-length Send (needs a receive) */
	MPA_RTR_ALL = MPA_RTR_WRITE | MPA_RTR_READ | MPA_RTR_SEND,
};

/*
 * A Request or Reply, decoded or to be encoded.
 *
 * flags holds MPA_FLAG_* bits. ird, ord, p2p and rtr are the IRD/ORD block
 * and only mean something when mpa_rr_enhanced() is true (Rev 2 and S).
 * pd/pd_len is the consumer's private data, after the block: the parser
 * points pd into the caller's receive buffer.
 */
struct mpa_rr {
	enum mpa_rr_type type;
	uint8_t rev;
	uint8_t flags;
	bool p2p;
	uint8_t rtr; /* enum mpa_rtr bits: offered (Request), chosen (Reply) */
	uint16_t ird;
	uint16_t ord;
	const uint8_t *pd;
	uint16_t pd_len;
};

/*
 * The IRD/ORD block is present only with Rev 2 and S. With Rev 1 the S bit
 * is one of RFC 5044's reserved bits, which a receiver ignores.
 */
static inline bool mpa_rr_enhanced(const struct mpa_rr *rr)
{
	return rr->rev == MPA_REV_2 && (rr->flags & MPA_FLAG_ENHANCED);
}

/* R means something only in a Reply (RFC 5044 7.1). */
static inline bool mpa_rr_rejected(const struct mpa_rr *rr)
{
	return rr->type == MPA_RR_REPLY && (rr->flags & MPA_FLAG_REJECT);
}

/* Encoded size of rr: header, block if enhanced, consumer PD. */
static inline size_t mpa_rr_len(const struct mpa_rr *rr)
{
	return MPA_RR_HDR_LEN + (mpa_rr_enhanced(rr) ? MPA_V2_BLOCK_LEN : 0) +
	       rr->pd_len;
}

/*
 * Builds a Request or Reply into buf and returns its length, or:
 *   -EINVAL	bad type, Rev not 1 or 2, reserved flags, S with Rev 1, R in
 *		a Request, IRD/ORD over 14 bits, unknown RTR bits, pd NULL
 *		with a length
 *   -EMSGSIZE	block plus consumer PD over MPA_PRIVATE_DATA_MAX
 *   -ENOBUFS	size is smaller than mpa_rr_len(rr)
 * Reserved flag bits are always sent as zero.
 */
int mpa_rr_encode(const struct mpa_rr *rr, uint8_t *buf, size_t size);

/*
 * Builds the Reply that refuses a connection (RFC 5044 7.1, R=1): rr's
 * fields with type forced to Reply, R set and M cleared, as siw and cxgb4
 * send it. With Rev 2 and S the IRD/ORD block comes first, then the
 * consumer's reject data. Same returns as mpa_rr_encode().
 */
int mpa_reject_encode(const struct mpa_rr *rr, uint8_t *buf, size_t size);

/*
 * Parses the bytes of a Request or Reply received so far. Call again with
 * the longer buffer as more bytes arrive; no state is kept in between.
 *
 * expect	MPA_RR_REQUEST (responder), MPA_RR_REPLY (initiator) or ANY.
 * pd_cap	the largest PD_Length accepted (block included), e.g.
 *		MPA_PRIVATE_DATA_MAX; values over MPA_RFC_PD_MAX mean that.
 * need		if not NULL, set to the number of bytes the frame is known to
 *		need so far: MPA_RR_HDR_LEN until the header is in, then
 *		the full frame length.
 *
 * Returns the frame length when the whole frame is in buf (rr is then
 * filled in, rr->pd pointing into buf; bytes past the frame are the
 * caller's business), or:
 *   -EAGAIN		more bytes needed, see *need
 *   -EBADMSG		wrong key (e.g. a Request where a Reply was expected)
 *   -EMSGSIZE		PD_Length over MPA_RFC_PD_MAX or over pd_cap
 *   -EPROTONOSUPPORT	Rev is neither 1 nor 2
 *   -EPROTO		Rev 2 with S but PD_Length shorter than the block
 *   -EINVAL		bad arguments
 * Each check runs as soon as the bytes it needs are there, so a bad key is
 * reported at the first wrong byte and an oversized PD_Length before any
 * private data is read. The checks run in byte order: any split of the
 * same stream gives the same result.
 */
int mpa_rr_parse(const uint8_t *buf, size_t len, enum mpa_rr_type expect,
		 size_t pd_cap, struct mpa_rr *rr, size_t *need);

/* A short description of an mpa_rr_parse()/encode() error, for logs. */
const char *mpa_strerror(int err);

/* The RFC 6581 IRD/ORD block on its own. Values over 14 bits are masked. */
void mpa_v2_block_put(uint8_t *p, bool p2p, unsigned int rtr, uint16_t ird,
		      uint16_t ord);
void mpa_v2_block_get(const uint8_t *p, bool *p2p, unsigned int *rtr,
		      uint16_t *ird, uint16_t *ord);

/* An IRD/ORD pair: inbound and outbound RDMA Read queue depths. */
struct mpa_read_limits {
	uint32_t ird;
	uint32_t ord;
};

/*
 * Effective IRD/ORD of one end (NDK_FN_CONNECT, NDK_FN_ACCEPT_EX; docs/wire.md,
 * Read-limit negotiation):
 *   IRD = min(own request, own max, peer ORD)
 *   ORD = min(own request, own max, peer IRD)
 * clamped to the 14 bits of the block. The responder runs it on the
 * Request's values and sends the result in its Reply; the initiator runs
 * it on the Reply's values. Because the responder's IRD never exceeds the
 * initiator's ORD and vice versa, both ends end up with the same pair
 * (each side's IRD equals the other's ORD). For the values to put in a
 * Request, pass peer = { MPA_IRD_ORD_MAX, MPA_IRD_ORD_MAX }.
 */
struct mpa_read_limits mpa_negotiate_ird_ord(struct mpa_read_limits own_req,
					     struct mpa_read_limits own_max,
					     struct mpa_read_limits peer);

/*
 * The responder's RTR choice (RFC 6581): exactly one type that
 * the Request offered and we support, preferring a zero-length Write (no
 * ORD slot, no posted receive, what siw picks), then Read, then Send.
 * Returns MPA_RTR_NONE if nothing matches: the connection cannot use P2P.
 */
enum mpa_rtr mpa_rtr_choose(unsigned int offered, unsigned int supported);

/*
 * The initiator's check of an accepting P2P Reply: chosen must be exactly
 * one RTR type, and one that the Request offered. Returns that type, or
 * -ENOPROTOOPT (Terminate LLP/MPA "No matching RTR option").
 */
int mpa_rtr_check_reply(unsigned int offered, unsigned int chosen);

/*
 * FPDU framing (RFC 5044 section 4): ULPDU_Length (2 bytes), the ULPDU,
 * 0-3 zero pad bytes to a 4-byte boundary, CRC32c (4 bytes). ULPDU_Length
 * counts neither itself, the pad, nor the CRC.
 */
#define MPA_FPDU_HDR_LEN  2
#define MPA_FPDU_CRC_LEN  4
#define MPA_ULPDU_MAX	  0xffff
#define MPA_FPDU_OVERHEAD (MPA_FPDU_HDR_LEN + MPA_FPDU_CRC_LEN)

static inline unsigned int mpa_fpdu_pad(size_t ulpdu_len)
{
	return (unsigned int)(-(MPA_FPDU_HDR_LEN + ulpdu_len) & 3);
}

static inline size_t mpa_fpdu_len(size_t ulpdu_len)
{
	return MPA_FPDU_OVERHEAD + ulpdu_len + mpa_fpdu_pad(ulpdu_len);
}

/*
 * Frames a ULPDU that the caller wrote at fpdu + MPA_FPDU_HDR_LEN: writes
 * ULPDU_Length, the zero pad and the CRC trailer, and returns the FPDU
 * length (mpa_fpdu_len(ulpdu_len) bytes must fit in fpdu). The CRC field
 * is always present; with CRC off it is sent as zero (RFC 5044 section 4).
 * -EMSGSIZE if ulpdu_len does not fit the 16-bit length field.
 */
int mpa_fpdu_finish(uint8_t *fpdu, size_t ulpdu_len, bool crc);

/*
 * Checks the CRC trailer of a whole FPDU of fpdu_len bytes (length field
 * through trailer): 0 if it matches, -EBADMSG if not (Terminate LLP/MPA
 * "MPA CRC error"), -EINVAL if fpdu_len is not that of an FPDU.
 */
int mpa_fpdu_check_crc(const uint8_t *fpdu, size_t fpdu_len);

/*
 * Largest ULPDU that keeps an FPDU (without markers) within one segment of
 * the effective MSS: EMSS - (6 + EMSS mod 4), the MULPDU rule of RFC 5044.
 */
static inline size_t mpa_mulpdu(size_t emss)
{
	size_t m;

	if (emss <= MPA_FPDU_OVERHEAD + (emss & 3))
		return 0;
	m = emss - (MPA_FPDU_OVERHEAD + (emss & 3));
	return m > MPA_ULPDU_MAX ? MPA_ULPDU_MAX : m;
}

/*
 * The effective MSS of a connection whose peer takes large FPDUs
 * (MPA_FLAG_LARGE_FPDU): as many whole segments of mss as an FPDU holds,
 * so FPDUs still start on a segment boundary where TCP cuts at the MSS.
 */
static inline size_t mpa_large_emss(size_t mss)
{
	size_t k = mss ? (MPA_ULPDU_MAX + MPA_FPDU_OVERHEAD) / mss : 0;

	return k > 1 ? k * mss : mss;
}

#endif /* NDK_IWARP_MPA_H */
