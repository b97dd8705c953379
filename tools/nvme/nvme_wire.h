/* SPDX-License-Identifier: MIT */
/*
 * NVMe over Fabrics on RDMA, as the wire carries it: the 64-byte command
 * (SQE), the 16-byte completion (CQE), keyed SGL descriptors, the Fabrics
 * commands (Connect, Property Get/Set), and the NVMe RDMA CM private data
 * (Request, Accept, Reject). Pure functions on byte buffers, little-endian
 * as NVMe is; no I/O. Used by ndknvme (host) and ndknvmet (target).
 */
#ifndef NDK_TOOLS_NVME_WIRE_H
#define NDK_TOOLS_NVME_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NVME_SQE_SIZE	       64
#define NVME_CQE_SIZE	       16
#define NVME_CONNECT_DATA_SIZE 1024
#define NVME_IDENTIFY_SIZE     4096
#define NVME_NQN_SIZE	       256
#define NVME_DISCOVERY_NQN     "nqn.2014-08.org.nvmexpress.discovery"

/* Admin opcodes. */
enum nvme_admin_opcode {
	NVME_ADMIN_GET_LOG_PAGE = 0x02,
	NVME_ADMIN_IDENTIFY = 0x06,
	NVME_ADMIN_ABORT = 0x08,
	NVME_ADMIN_SET_FEATURES = 0x09,
	NVME_ADMIN_GET_FEATURES = 0x0a,
	NVME_ADMIN_ASYNC_EVENT = 0x0c,
	NVME_ADMIN_KEEP_ALIVE = 0x18,
	NVME_FABRICS_COMMAND = 0x7f,
};

/* I/O opcodes (NVM command set). */
enum nvme_io_opcode {
	NVME_IO_FLUSH = 0x00,
	NVME_IO_WRITE = 0x01,
	NVME_IO_READ = 0x02,
	NVME_IO_WRITE_ZEROES = 0x08,
	NVME_IO_DSM = 0x09,
};

/* Fabrics command types (SQE byte 4 when the opcode is 0x7f). */
enum nvme_fabrics_type {
	NVME_FCTYPE_PROPERTY_SET = 0x00,
	NVME_FCTYPE_CONNECT = 0x01,
	NVME_FCTYPE_PROPERTY_GET = 0x04,
	NVME_FCTYPE_AUTH_SEND = 0x05,
	NVME_FCTYPE_AUTH_RECEIVE = 0x06,
	NVME_FCTYPE_DISCONNECT = 0x08,
};

/* Controller properties (register offsets) that Fabrics hosts use. */
enum nvme_property {
	NVME_PROP_CAP = 0x00, /* 8 bytes */
	NVME_PROP_VS = 0x08,
	NVME_PROP_CC = 0x14,
	NVME_PROP_CSTS = 0x1c,
};

#define NVME_CC_ENABLE		0x1u
#define NVME_CC_SHN_MASK	(0x3u << 14)
#define NVME_CSTS_READY		0x1u
#define NVME_CSTS_SHST_COMPLETE (0x2u << 2)

/* Identify CNS values. */
enum nvme_identify_cns {
	NVME_CNS_NAMESPACE = 0x00,
	NVME_CNS_CONTROLLER = 0x01,
	NVME_CNS_ACTIVE_NS_LIST = 0x02,
	NVME_CNS_NS_DESC_LIST = 0x03,
};

/* Feature identifiers. */
enum nvme_feature {
	NVME_FEAT_ARBITRATION = 0x01,
	NVME_FEAT_NUM_QUEUES = 0x07,
	NVME_FEAT_ASYNC_EVENT = 0x0b,
	NVME_FEAT_KATO = 0x0f,
};

/*
 * Status field of the CQE (bits 15:1; bit 0 is the phase tag, unused on
 * fabrics): SCT in bits 10:8 of the value, SC in 7:0, DNR bit 14.
 */
#define NVME_SC_SUCCESS		      0x000
#define NVME_SC_INVALID_OPCODE	      0x001
#define NVME_SC_INVALID_FIELD	      0x002
#define NVME_SC_DATA_XFER_ERROR	      0x004
#define NVME_SC_INTERNAL	      0x006
#define NVME_SC_SGL_INVALID_DATA      0x00f
#define NVME_SC_SGL_INVALID_TYPE      0x011
#define NVME_SC_SGL_INVALID_OFFSET    0x016
#define NVME_SC_LBA_RANGE	      0x080
#define NVME_SC_CAP_EXCEEDED	      0x081
#define NVME_SC_NS_NOT_READY	      0x082
#define NVME_SC_INVALID_NS	      0x00b
#define NVME_SC_FEATURE_NOT_SAVEABLE  0x10d
#define NVME_SC_QID_INVALID	      0x101
#define NVME_SC_QUEUE_SIZE	      0x102
#define NVME_SC_CONNECT_FORMAT	      0x180
#define NVME_SC_CONNECT_CTRL_BUSY     0x181
#define NVME_SC_CONNECT_INVALID_PARAM 0x182
#define NVME_SC_CONNECT_RESTART_DISC  0x183
#define NVME_SC_CONNECT_INVALID_HOST  0x184
#define NVME_SC_DNR		      0x4000

/*
 * SGL descriptor type byte (SQE byte 39): descriptor type in the high
 * nibble, subtype in the low one.
 */
#define NVME_SGL_DATA_BLOCK	    0x00 /* in-capsule data, offset subtype */
#define NVME_SGL_SUBTYPE_OFFSET	    0x01
#define NVME_SGL_KEYED_DATA_BLOCK   0x40
#define NVME_SGL_SUBTYPE_ADDRESS    0x00
#define NVME_SGL_SUBTYPE_INVALIDATE 0x0f
/* SQE flags: PSDT = 01b, SGL for the data pointer. */
#define NVME_CMD_PSDT_SGL 0x40

/* Little-endian loads and stores. */
static inline void nvme_put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static inline void nvme_put32(uint8_t *p, uint32_t v)
{
	nvme_put16(p, (uint16_t)v);
	nvme_put16(p + 2, (uint16_t)(v >> 16));
}

static inline void nvme_put64(uint8_t *p, uint64_t v)
{
	nvme_put32(p, (uint32_t)v);
	nvme_put32(p + 4, (uint32_t)(v >> 32));
}

static inline uint16_t nvme_get16(const uint8_t *p)
{
	return (uint16_t)(p[0] | (p[1] << 8));
}

static inline uint32_t nvme_get32(const uint8_t *p)
{
	return nvme_get16(p) | ((uint32_t)nvme_get16(p + 2) << 16);
}

static inline uint64_t nvme_get64(const uint8_t *p)
{
	return nvme_get32(p) | ((uint64_t)nvme_get32(p + 4) << 32);
}

/* The fields of a command that both sides name; cdw[0..5] are CDW10..15. */
struct nvme_sqe {
	uint8_t opcode;
	uint8_t flags;
	uint16_t command_id;
	uint32_t nsid;
	/* Data pointer as a keyed SGL (or in-capsule data block). */
	uint64_t sgl_addr;
	uint32_t sgl_length;
	uint32_t sgl_key; /* keyed descriptors only */
	uint8_t sgl_type;
	uint32_t cdw[6];
	/* Fabrics: SQE byte 4; Connect/Property fields from bytes 40-63. */
	uint8_t fctype;
};

struct nvme_cqe {
	uint64_t result;
	uint16_t sq_head;
	uint16_t sq_id;
	uint16_t command_id;
	uint16_t status; /* SCT/SC/DNR as above, without the phase bit */
};

void nvme_sqe_encode(uint8_t out[NVME_SQE_SIZE], const struct nvme_sqe *c);
void nvme_sqe_decode(const uint8_t in[NVME_SQE_SIZE], struct nvme_sqe *c);
void nvme_cqe_encode(uint8_t out[NVME_CQE_SIZE], const struct nvme_cqe *c);
void nvme_cqe_decode(const uint8_t in[NVME_CQE_SIZE], struct nvme_cqe *c);

/*
 * Fabrics Connect: recfmt 0, qid, sqsize (0's based), cattr, kato (ms),
 * in cdw[0..2] of struct nvme_sqe as the wire packs them (bytes 40-51).
 */
void nvme_connect_cmd(struct nvme_sqe *c, uint16_t command_id, uint16_t qid,
		      uint16_t sqsize, uint32_t kato_ms);
uint16_t nvme_connect_qid(const struct nvme_sqe *c);
uint16_t nvme_connect_sqsize(const struct nvme_sqe *c);
uint32_t nvme_connect_kato(const struct nvme_sqe *c);

/* The 1024-byte Connect data. */
struct nvme_connect_data {
	uint8_t hostid[16];
	uint16_t cntlid; /* 0xffff: dynamic controller */
	char subsysnqn[NVME_NQN_SIZE];
	char hostnqn[NVME_NQN_SIZE];
};
void nvme_connect_data_encode(uint8_t out[NVME_CONNECT_DATA_SIZE],
			      const struct nvme_connect_data *d);
/* false when an NQN is not NUL-terminated within its field. */
bool nvme_connect_data_decode(const uint8_t in[NVME_CONNECT_DATA_SIZE],
			      struct nvme_connect_data *d);

/* Property Get/Set: size 4 or 8 (attrib), offset, value (Set only). */
void nvme_property_get_cmd(struct nvme_sqe *c, uint16_t command_id,
			   uint32_t offset, unsigned int size);
void nvme_property_set_cmd(struct nvme_sqe *c, uint16_t command_id,
			   uint32_t offset, unsigned int size, uint64_t value);
unsigned int nvme_property_size(const struct nvme_sqe *c);
uint32_t nvme_property_offset(const struct nvme_sqe *c);
uint64_t nvme_property_value(const struct nvme_sqe *c);

/*
 * NVMe RDMA CM private data: the host's Request (32 bytes), the
 * controller's Accept (32) and Reject (4). recfmt is 0.
 */
#define NVME_RDMA_CM_REQ_SIZE 32
#define NVME_RDMA_CM_REP_SIZE 32
#define NVME_RDMA_CM_REJ_SIZE 4

enum nvme_rdma_cm_status {
	NVME_RDMA_CM_INVALID_LEN = 0x01,
	NVME_RDMA_CM_INVALID_RECFMT = 0x02,
	NVME_RDMA_CM_INVALID_QID = 0x03,
	NVME_RDMA_CM_INVALID_HSQSIZE = 0x04,
	NVME_RDMA_CM_INVALID_HRQSIZE = 0x05,
	NVME_RDMA_CM_NO_RSC = 0x06,
	NVME_RDMA_CM_INVALID_IRD = 0x07,
	NVME_RDMA_CM_INVALID_ORD = 0x08,
};

struct nvme_rdma_cm_req {
	uint16_t recfmt;
	uint16_t qid;
	uint16_t hrqsize; /* host receive queue size */
	uint16_t hsqsize; /* host send queue size, 0's based */
};

void nvme_rdma_cm_req_encode(uint8_t out[NVME_RDMA_CM_REQ_SIZE],
			     const struct nvme_rdma_cm_req *r);
/* 0, or the NVME_RDMA_CM_* reason a controller rejects it with. */
int nvme_rdma_cm_req_decode(const uint8_t *in, size_t len,
			    struct nvme_rdma_cm_req *r);
void nvme_rdma_cm_rep_encode(uint8_t out[NVME_RDMA_CM_REP_SIZE],
			     uint16_t crqsize);
/* false when too short or of another record format. */
bool nvme_rdma_cm_rep_decode(const uint8_t *in, size_t len, uint16_t *crqsize);
void nvme_rdma_cm_rej_encode(uint8_t out[NVME_RDMA_CM_REJ_SIZE],
			     uint16_t status);
bool nvme_rdma_cm_rej_decode(const uint8_t *in, size_t len, uint16_t *status);

/* "Invalid Field in Command" and friends, for messages. */
const char *nvme_status_name(uint16_t status);

/*
 * What a controller returns: Identify Controller (CNS 1) and Namespace
 * (CNS 0) data, the Namespace Identification Descriptor list (CNS 3), and
 * the result of a Connect refused for an invalid parameter. Byte offsets
 * are those of the NVMe Base 1.4 and NVMe over Fabrics 1.1 specifications.
 */
#define NVME_SC_CMD_SEQ_ERROR 0x00c
#define NVME_SC_AER_LIMIT     0x105
#define NVME_NSID_ALL	      0xffffffffu

#define NVME_CNS_CS_NAMESPACE  0x05
#define NVME_CNS_CS_CONTROLLER 0x06

/* Log page identifiers. */
enum nvme_log_page {
	NVME_LOG_ERROR = 0x01,
	NVME_LOG_SMART = 0x02,
	NVME_LOG_FW_SLOT = 0x03,
	NVME_LOG_CHANGED_NS = 0x04,
	NVME_LOG_CMD_EFFECTS = 0x05,
};

/* More feature identifiers. */
enum nvme_feature_more {
	NVME_FEAT_POWER_MGMT = 0x02,
	NVME_FEAT_TEMP_THRESH = 0x04,
	NVME_FEAT_ERR_RECOVERY = 0x05,
	NVME_FEAT_VOLATILE_WC = 0x06,
	NVME_FEAT_IRQ_COALESCE = 0x08,
	NVME_FEAT_IRQ_CONFIG = 0x09,
	NVME_FEAT_WRITE_ATOMIC = 0x0a,
	NVME_FEAT_TIMESTAMP = 0x0e,
	NVME_FEAT_HOST_ID = 0x81,
};

/* CC fields beyond EN and SHN, CSTS fields beyond RDY and SHST. */
#define NVME_CC_CSS(cc)	    (((cc) >> 4) & 0x7)
#define NVME_CC_MPS(cc)	    (((cc) >> 7) & 0xf)
#define NVME_CC_AMS(cc)	    (((cc) >> 11) & 0x7)
#define NVME_CC_IOSQES(cc)  (((cc) >> 16) & 0xf)
#define NVME_CC_IOCQES(cc)  (((cc) >> 20) & 0xf)
#define NVME_CSTS_CFS	    0x2u
#define NVME_CSTS_SHST_MASK (0x3u << 2)

/* CAP: MQES (0's based), CQR, TO (500 ms units), the NVM command set. */
uint64_t nvme_cap_value(uint16_t mqes, uint8_t timeout_500ms);

struct nvme_id_ctrl_fields {
	const char *serial; /* at most 20 characters, space padded */
	const char *model; /* 40 */
	const char *firmware; /* 8 */
	const char *subnqn;
	uint16_t cntlid;
	uint32_t version; /* VER: 0x00010300 is 1.3.0 */
	uint8_t mdts; /* log2 of the largest transfer in 4 KiB pages */
	uint8_t cmic;
	uint32_t oaes;
	uint32_t ctratt;
	uint8_t cntrltype; /* 1 I/O, 2 discovery */
	uint16_t oacs;
	uint8_t acl, aerl, frmw, lpa, elpe;
	uint16_t kas; /* 100 ms units */
	uint16_t maxcmd;
	uint32_t nn;
	uint16_t oncs;
	uint8_t vwc;
	uint32_t sgls;
	uint32_t ioccsz, iorcsz; /* 16-byte units */
	uint8_t msdbd;
};
void nvme_id_ctrl_build(uint8_t out[NVME_IDENTIFY_SIZE],
			const struct nvme_id_ctrl_fields *f);

struct nvme_id_ns_fields {
	uint64_t blocks; /* NSZE = NCAP = NUSE */
	uint8_t lba_shift; /* LBADS of the one format: 9 or 12 */
	uint8_t nmic; /* bit 0: may be attached to several controllers */
	uint8_t nguid[16];
};
void nvme_id_ns_build(uint8_t out[NVME_IDENTIFY_SIZE],
		      const struct nvme_id_ns_fields *f);

/* Descriptor types of CNS 3. */
#define NVME_NIDT_EUI64 0x01
#define NVME_NIDT_NGUID 0x02
#define NVME_NIDT_UUID	0x03
#define NVME_NIDT_CSI	0x04

/*
 * CNS 3: an NGUID, a UUID and the command set (CSI 0, NVM) descriptor,
 * then zeros to the end of the 4096 bytes.
 */
void nvme_ns_desc_list_build(uint8_t out[NVME_IDENTIFY_SIZE],
			     const uint8_t nguid[16], const uint8_t uuid[16]);

/*
 * The CQE result of NVME_SC_CONNECT_INVALID_PARAM: which byte was wrong,
 * in the Connect data (in_data) or in the command (SQE offset).
 */
uint32_t nvme_connect_invalid_param(bool in_data, uint16_t offset);
#define NVME_CONNECT_DATA_CNTLID_OFF  16
#define NVME_CONNECT_DATA_SUBNQN_OFF  256
#define NVME_CONNECT_DATA_HOSTNQN_OFF 512
#define NVME_CONNECT_SQE_QID_OFF      42
#define NVME_CONNECT_SQE_SQSIZE_OFF   44

/* A space-padded Identify string field. */
void nvme_put_string(uint8_t *field, size_t size, const char *s);

/*
 * Host-side helpers (ndknvme): the admin and I/O commands a host builds,
 * and the Identify fields it reads. command_id stays 0: the queue that
 * sends the command assigns it.
 */
void nvme_identify_cmd(struct nvme_sqe *c, uint8_t cns, uint32_t nsid);
/* CDW10 = feature id, CDW11 = value (Number of Queues: NCQR << 16 | NSQR,
 * both 0's based). */
void nvme_set_features_cmd(struct nvme_sqe *c, uint8_t fid, uint32_t cdw11);
void nvme_keep_alive_cmd(struct nvme_sqe *c);
/* Read or Write of nblocks (1 or more) from slba: CDW10-11 SLBA, CDW12
 * NLB 0's based. */
void nvme_rw_cmd(struct nvme_sqe *c, bool write, uint32_t nsid, uint64_t slba,
		 uint32_t nblocks);

/* Identify Controller (CNS 1), the fields a host uses; strings trimmed. */
struct nvme_id_ctrl_info {
	uint16_t vid;
	char sn[21];
	char mn[41];
	char fr[9];
	uint8_t mdts; /* 2^mdts minimum pages; 0: no limit */
	uint16_t cntlid;
	uint32_t ver;
	uint16_t kas; /* keep alive granularity, 100 ms units */
	uint8_t sqes, cqes;
	uint16_t maxcmd;
	uint32_t nn;
	uint32_t sgls;
	char subnqn[NVME_NQN_SIZE];
	uint32_t ioccsz; /* command capsule size, 16-byte units */
	uint32_t iorcsz;
	uint16_t icdoff;
	uint8_t msdbd;
};
void nvme_id_ctrl_decode(const uint8_t in[NVME_IDENTIFY_SIZE],
			 struct nvme_id_ctrl_info *id);

/* Identify Namespace (CNS 0): size and the LBA format in use. */
struct nvme_id_ns_info {
	uint64_t nsze, ncap, nuse;
	uint8_t nlbaf, flbas;
	uint8_t lba_shift; /* LBADS of format flbas & 0xf */
	uint16_t ms; /* metadata bytes per block */
};
void nvme_id_ns_decode(const uint8_t in[NVME_IDENTIFY_SIZE],
		       struct nvme_id_ns_info *ns);

#endif
