// SPDX-License-Identifier: MIT
/*
 * NVMe over Fabrics RDMA wire formats (nvme_wire.h). Byte offsets are those
 * of the NVMe Base and NVMe over Fabrics specifications: SQE byte 0 opcode,
 * 1 flags, 2 command identifier, 4 NSID (Fabrics: command type), 24 data
 * pointer (SGL descriptor, type in byte 39), 40-63 CDW10-15.
 */
#include <string.h>

#include "nvme_wire.h"

#define SQE_DPTR   24
#define SQE_CDW10  40
#define CQE_STATUS 14

void nvme_sqe_encode(uint8_t out[NVME_SQE_SIZE], const struct nvme_sqe *c)
{
	uint8_t *d = out + SQE_DPTR;
	int i;

	memset(out, 0, NVME_SQE_SIZE);
	out[0] = c->opcode;
	out[1] = c->flags;
	nvme_put16(out + 2, c->command_id);
	if (c->opcode == NVME_FABRICS_COMMAND)
		out[4] = c->fctype;
	else
		nvme_put32(out + 4, c->nsid);
	nvme_put64(d, c->sgl_addr);
	if ((c->sgl_type & 0xf0) == NVME_SGL_KEYED_DATA_BLOCK) {
		/* Keyed: 3-byte length, then the 4-byte key. */
		d[8] = (uint8_t)c->sgl_length;
		d[9] = (uint8_t)(c->sgl_length >> 8);
		d[10] = (uint8_t)(c->sgl_length >> 16);
		nvme_put32(d + 11, c->sgl_key);
	} else {
		nvme_put32(d + 8, c->sgl_length);
	}
	d[15] = c->sgl_type;
	for (i = 0; i < 6; i++)
		nvme_put32(out + SQE_CDW10 + 4 * i, c->cdw[i]);
}

void nvme_sqe_decode(const uint8_t in[NVME_SQE_SIZE], struct nvme_sqe *c)
{
	const uint8_t *d = in + SQE_DPTR;
	int i;

	memset(c, 0, sizeof(*c));
	c->opcode = in[0];
	c->flags = in[1];
	c->command_id = nvme_get16(in + 2);
	c->nsid = nvme_get32(in + 4);
	c->fctype = in[4];
	c->sgl_addr = nvme_get64(d);
	c->sgl_type = d[15];
	if ((c->sgl_type & 0xf0) == NVME_SGL_KEYED_DATA_BLOCK) {
		c->sgl_length = d[8] | (d[9] << 8) | ((uint32_t)d[10] << 16);
		c->sgl_key = nvme_get32(d + 11);
	} else {
		c->sgl_length = nvme_get32(d + 8);
	}
	for (i = 0; i < 6; i++)
		c->cdw[i] = nvme_get32(in + SQE_CDW10 + 4 * i);
}

void nvme_cqe_encode(uint8_t out[NVME_CQE_SIZE], const struct nvme_cqe *c)
{
	nvme_put64(out, c->result);
	nvme_put16(out + 8, c->sq_head);
	nvme_put16(out + 10, c->sq_id);
	nvme_put16(out + 12, c->command_id);
	nvme_put16(out + CQE_STATUS, (uint16_t)(c->status << 1));
}

void nvme_cqe_decode(const uint8_t in[NVME_CQE_SIZE], struct nvme_cqe *c)
{
	c->result = nvme_get64(in);
	c->sq_head = nvme_get16(in + 8);
	c->sq_id = nvme_get16(in + 10);
	c->command_id = nvme_get16(in + 12);
	c->status = nvme_get16(in + CQE_STATUS) >> 1;
}

/* Connect: byte 40 recfmt, 42 qid, 44 sqsize, 46 cattr, 48 kato. */
void nvme_connect_cmd(struct nvme_sqe *c, uint16_t command_id, uint16_t qid,
		      uint16_t sqsize, uint32_t kato_ms)
{
	memset(c, 0, sizeof(*c));
	c->opcode = NVME_FABRICS_COMMAND;
	c->fctype = NVME_FCTYPE_CONNECT;
	c->command_id = command_id;
	c->cdw[0] = (uint32_t)qid << 16; /* recfmt 0 */
	c->cdw[1] = sqsize;
	c->cdw[2] = kato_ms;
}

uint16_t nvme_connect_qid(const struct nvme_sqe *c)
{
	return (uint16_t)(c->cdw[0] >> 16);
}

uint16_t nvme_connect_sqsize(const struct nvme_sqe *c)
{
	return (uint16_t)c->cdw[1];
}

uint32_t nvme_connect_kato(const struct nvme_sqe *c)
{
	return c->cdw[2];
}

/* Connect data: 0 HOSTID, 16 CNTLID, 256 SUBNQN, 512 HOSTNQN. */
void nvme_connect_data_encode(uint8_t out[NVME_CONNECT_DATA_SIZE],
			      const struct nvme_connect_data *d)
{
	memset(out, 0, NVME_CONNECT_DATA_SIZE);
	memcpy(out, d->hostid, 16);
	nvme_put16(out + 16, d->cntlid);
	/* The fields stay NUL-terminated: at most 255 bytes of each NQN. */
	memcpy(out + 256, d->subsysnqn,
	       strnlen(d->subsysnqn, NVME_NQN_SIZE - 1));
	memcpy(out + 512, d->hostnqn, strnlen(d->hostnqn, NVME_NQN_SIZE - 1));
}

bool nvme_connect_data_decode(const uint8_t in[NVME_CONNECT_DATA_SIZE],
			      struct nvme_connect_data *d)
{
	memcpy(d->hostid, in, 16);
	d->cntlid = nvme_get16(in + 16);
	if (!memchr(in + 256, 0, NVME_NQN_SIZE) ||
	    !memchr(in + 512, 0, NVME_NQN_SIZE))
		return false;
	memcpy(d->subsysnqn, in + 256, NVME_NQN_SIZE);
	memcpy(d->hostnqn, in + 512, NVME_NQN_SIZE);
	return true;
}

/* Property Get/Set: byte 40 attrib (0: 4 bytes, 1: 8), 44 offset, 48 value. */
void nvme_property_get_cmd(struct nvme_sqe *c, uint16_t command_id,
			   uint32_t offset, unsigned int size)
{
	memset(c, 0, sizeof(*c));
	c->opcode = NVME_FABRICS_COMMAND;
	c->fctype = NVME_FCTYPE_PROPERTY_GET;
	c->command_id = command_id;
	c->cdw[0] = size == 8 ? 1 : 0;
	c->cdw[1] = offset;
}

void nvme_property_set_cmd(struct nvme_sqe *c, uint16_t command_id,
			   uint32_t offset, unsigned int size, uint64_t value)
{
	nvme_property_get_cmd(c, command_id, offset, size);
	c->fctype = NVME_FCTYPE_PROPERTY_SET;
	c->cdw[2] = (uint32_t)value;
	c->cdw[3] = (uint32_t)(value >> 32);
}

unsigned int nvme_property_size(const struct nvme_sqe *c)
{
	return (c->cdw[0] & 0x7) == 1 ? 8 : 4;
}

uint32_t nvme_property_offset(const struct nvme_sqe *c)
{
	return c->cdw[1];
}

uint64_t nvme_property_value(const struct nvme_sqe *c)
{
	return c->cdw[2] | ((uint64_t)c->cdw[3] << 32);
}

void nvme_rdma_cm_req_encode(uint8_t out[NVME_RDMA_CM_REQ_SIZE],
			     const struct nvme_rdma_cm_req *r)
{
	memset(out, 0, NVME_RDMA_CM_REQ_SIZE);
	nvme_put16(out, r->recfmt);
	nvme_put16(out + 2, r->qid);
	nvme_put16(out + 4, r->hrqsize);
	nvme_put16(out + 6, r->hsqsize);
}

int nvme_rdma_cm_req_decode(const uint8_t *in, size_t len,
			    struct nvme_rdma_cm_req *r)
{
	/* Linux hosts send 32 bytes; the first 8 carry every field. */
	if (!in || len < 8)
		return NVME_RDMA_CM_INVALID_LEN;
	r->recfmt = nvme_get16(in);
	r->qid = nvme_get16(in + 2);
	r->hrqsize = nvme_get16(in + 4);
	r->hsqsize = nvme_get16(in + 6);
	if (r->recfmt != 0)
		return NVME_RDMA_CM_INVALID_RECFMT;
	return 0;
}

void nvme_rdma_cm_rep_encode(uint8_t out[NVME_RDMA_CM_REP_SIZE],
			     uint16_t crqsize)
{
	memset(out, 0, NVME_RDMA_CM_REP_SIZE);
	nvme_put16(out + 2, crqsize);
}

bool nvme_rdma_cm_rep_decode(const uint8_t *in, size_t len, uint16_t *crqsize)
{
	if (!in || len < 4 || nvme_get16(in) != 0)
		return false;
	*crqsize = nvme_get16(in + 2);
	return true;
}

void nvme_rdma_cm_rej_encode(uint8_t out[NVME_RDMA_CM_REJ_SIZE],
			     uint16_t status)
{
	nvme_put16(out, 0);
	nvme_put16(out + 2, status);
}

bool nvme_rdma_cm_rej_decode(const uint8_t *in, size_t len, uint16_t *status)
{
	if (!in || len < NVME_RDMA_CM_REJ_SIZE || nvme_get16(in) != 0)
		return false;
	*status = nvme_get16(in + 2);
	return true;
}

const char *nvme_status_name(uint16_t status)
{
	switch (status & 0x7ff) {
	case NVME_SC_SUCCESS:
		return "success";
	case NVME_SC_INVALID_OPCODE:
		return "invalid command opcode";
	case NVME_SC_INVALID_FIELD:
		return "invalid field in command";
	case NVME_SC_DATA_XFER_ERROR:
		return "data transfer error";
	case NVME_SC_INTERNAL:
		return "internal error";
	case NVME_SC_INVALID_NS:
		return "invalid namespace or format";
	case NVME_SC_SGL_INVALID_DATA:
		return "SGL data block descriptor invalid";
	case NVME_SC_SGL_INVALID_TYPE:
		return "SGL descriptor type invalid";
	case NVME_SC_SGL_INVALID_OFFSET:
		return "SGL offset invalid";
	case NVME_SC_LBA_RANGE:
		return "LBA out of range";
	case NVME_SC_CAP_EXCEEDED:
		return "capacity exceeded";
	case NVME_SC_QID_INVALID:
		return "invalid queue identifier";
	case NVME_SC_QUEUE_SIZE:
		return "invalid queue size";
	case NVME_SC_CONNECT_INVALID_PARAM:
		return "connect invalid parameters";
	case NVME_SC_CONNECT_INVALID_HOST:
		return "connect invalid host";
	default:
		return "other status";
	}
}

uint64_t nvme_cap_value(uint16_t mqes, uint8_t timeout_500ms)
{
	/* MQES 15:0, CQR 16, TO 31:24, CSS 44:37 (bit 37: NVM), MPSMIN 0
	 * (4 KiB pages). */
	return (uint64_t)mqes | (1ull << 16) | ((uint64_t)timeout_500ms << 24) |
	       (1ull << 37);
}

void nvme_put_string(uint8_t *field, size_t size, const char *s)
{
	size_t n = s ? strnlen(s, size) : 0;

	memset(field, ' ', size);
	memcpy(field, s, n);
}

/*
 * Identify Controller: 0 VID, 4 SN, 24 MN, 64 FR, 72 RAB, 76 CMIC, 77 MDTS,
 * 78 CNTLID, 80 VER, 92 OAES, 96 CTRATT, 111 CNTRLTYPE, 256 OACS, 258 ACL,
 * 259 AERL, 260 FRMW, 261 LPA, 262 ELPE, 320 KAS, 512 SQES, 513 CQES,
 * 514 MAXCMD, 516 NN, 520 ONCS, 525 VWC, 536 SGLS, 768 SUBNQN; Fabrics:
 * 1792 IOCCSZ, 1796 IORCSZ, 1800 ICDOFF, 1802 FCATT, 1803 MSDBD.
 */
void nvme_id_ctrl_build(uint8_t out[NVME_IDENTIFY_SIZE],
			const struct nvme_id_ctrl_fields *f)
{
	memset(out, 0, NVME_IDENTIFY_SIZE);
	nvme_put_string(out + 4, 20, f->serial);
	nvme_put_string(out + 24, 40, f->model);
	nvme_put_string(out + 64, 8, f->firmware);
	out[72] = 6; /* RAB: 64 commands per arbitration burst */
	out[76] = f->cmic;
	out[77] = f->mdts;
	nvme_put16(out + 78, f->cntlid);
	nvme_put32(out + 80, f->version);
	nvme_put32(out + 92, f->oaes);
	nvme_put32(out + 96, f->ctratt);
	out[111] = f->cntrltype;
	nvme_put16(out + 256, f->oacs);
	out[258] = f->acl;
	out[259] = f->aerl;
	out[260] = f->frmw;
	out[261] = f->lpa;
	out[262] = f->elpe;
	nvme_put16(out + 320, f->kas);
	out[512] = 0x66; /* SQES: 64-byte entries, required and maximum */
	out[513] = 0x44; /* CQES: 16 bytes */
	nvme_put16(out + 514, f->maxcmd);
	nvme_put32(out + 516, f->nn);
	nvme_put16(out + 520, f->oncs);
	out[525] = f->vwc;
	nvme_put32(out + 536, f->sgls);
	if (f->subnqn)
		memcpy(out + 768, f->subnqn,
		       strnlen(f->subnqn, NVME_NQN_SIZE - 1));
	nvme_put32(out + 1792, f->ioccsz);
	nvme_put32(out + 1796, f->iorcsz);
	out[1803] = f->msdbd;
}

/*
 * Identify Namespace: 0 NSZE, 8 NCAP, 16 NUSE, 25 NLBAF (0's based),
 * 26 FLBAS, 30 NMIC, 104 NGUID, 128 LBAF0 (2 MS, then LBADS in byte 130).
 */
void nvme_id_ns_build(uint8_t out[NVME_IDENTIFY_SIZE],
		      const struct nvme_id_ns_fields *f)
{
	memset(out, 0, NVME_IDENTIFY_SIZE);
	nvme_put64(out, f->blocks);
	nvme_put64(out + 8, f->blocks);
	nvme_put64(out + 16, f->blocks);
	out[30] = f->nmic;
	memcpy(out + 104, f->nguid, 16);
	out[130] = f->lba_shift;
}

/* Each descriptor: NIDT, NIDL, two reserved bytes, then NIDL bytes. */
static uint8_t *ns_desc_put(uint8_t *p, uint8_t type, const uint8_t *id,
			    uint8_t len)
{
	p[0] = type;
	p[1] = len;
	memcpy(p + 4, id, len);
	return p + 4 + len;
}

void nvme_ns_desc_list_build(uint8_t out[NVME_IDENTIFY_SIZE],
			     const uint8_t nguid[16], const uint8_t uuid[16])
{
	static const uint8_t csi_nvm = 0;
	uint8_t *p = out;

	memset(out, 0, NVME_IDENTIFY_SIZE);
	p = ns_desc_put(p, NVME_NIDT_NGUID, nguid, 16);
	p = ns_desc_put(p, NVME_NIDT_UUID, uuid, 16);
	ns_desc_put(p, NVME_NIDT_CSI, &csi_nvm, 1);
}

uint32_t nvme_connect_invalid_param(bool in_data, uint16_t offset)
{
	/* IATTR (bit 16: the Connect data) and IPO (the byte offset). */
	return (in_data ? 1u << 16 : 0) | offset;
}

void nvme_identify_cmd(struct nvme_sqe *c, uint8_t cns, uint32_t nsid)
{
	memset(c, 0, sizeof(*c));
	c->opcode = NVME_ADMIN_IDENTIFY;
	c->nsid = nsid;
	c->cdw[0] = cns;
}

void nvme_set_features_cmd(struct nvme_sqe *c, uint8_t fid, uint32_t cdw11)
{
	memset(c, 0, sizeof(*c));
	c->opcode = NVME_ADMIN_SET_FEATURES;
	c->cdw[0] = fid;
	c->cdw[1] = cdw11;
}

void nvme_keep_alive_cmd(struct nvme_sqe *c)
{
	memset(c, 0, sizeof(*c));
	c->opcode = NVME_ADMIN_KEEP_ALIVE;
}

void nvme_rw_cmd(struct nvme_sqe *c, bool write, uint32_t nsid, uint64_t slba,
		 uint32_t nblocks)
{
	memset(c, 0, sizeof(*c));
	c->opcode = write ? NVME_IO_WRITE : NVME_IO_READ;
	c->nsid = nsid;
	c->cdw[0] = (uint32_t)slba;
	c->cdw[1] = (uint32_t)(slba >> 32);
	c->cdw[2] = (nblocks - 1) & 0xffff;
}

/* Identify strings are ASCII padded with spaces. */
static void id_string(char *out, const uint8_t *in, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		out[i] = in[i] >= 0x20 && in[i] < 0x7f ? (char)in[i] : '?';
	while (len && out[len - 1] == ' ')
		len--;
	out[len] = 0;
}

/* Identify Controller: 0 VID, 4 SN, 24 MN, 64 FR, 77 MDTS, 78 CNTLID,
 * 80 VER, 320 KAS, 512 SQES, 513 CQES, 514 MAXCMD, 516 NN, 536 SGLS,
 * 768 SUBNQN, 1792 IOCCSZ, 1796 IORCSZ, 1800 ICDOFF, 1803 MSDBD. */
void nvme_id_ctrl_decode(const uint8_t in[NVME_IDENTIFY_SIZE],
			 struct nvme_id_ctrl_info *id)
{
	memset(id, 0, sizeof(*id));
	id->vid = nvme_get16(in);
	id_string(id->sn, in + 4, 20);
	id_string(id->mn, in + 24, 40);
	id_string(id->fr, in + 64, 8);
	id->mdts = in[77];
	id->cntlid = nvme_get16(in + 78);
	id->ver = nvme_get32(in + 80);
	id->kas = nvme_get16(in + 320);
	id->sqes = in[512];
	id->cqes = in[513];
	id->maxcmd = nvme_get16(in + 514);
	id->nn = nvme_get32(in + 516);
	id->sgls = nvme_get32(in + 536);
	memcpy(id->subnqn, in + 768, NVME_NQN_SIZE - 1);
	id->ioccsz = nvme_get32(in + 1792);
	id->iorcsz = nvme_get32(in + 1796);
	id->icdoff = nvme_get16(in + 1800);
	id->msdbd = in[1803];
}

/* Identify Namespace: 0 NSZE, 8 NCAP, 16 NUSE, 25 NLBAF, 26 FLBAS, 128
 * the LBA formats (4 bytes each: MS, LBADS, RP). */
void nvme_id_ns_decode(const uint8_t in[NVME_IDENTIFY_SIZE],
		       struct nvme_id_ns_info *ns)
{
	const uint8_t *lbaf;

	memset(ns, 0, sizeof(*ns));
	ns->nsze = nvme_get64(in);
	ns->ncap = nvme_get64(in + 8);
	ns->nuse = nvme_get64(in + 16);
	ns->nlbaf = in[25];
	ns->flbas = in[26];
	lbaf = in + 128 + 4 * (ns->flbas & 0xf);
	ns->ms = nvme_get16(lbaf);
	ns->lba_shift = lbaf[2];
}
