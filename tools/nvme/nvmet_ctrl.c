// SPDX-License-Identifier: MIT
/*
 * Controllers of ndknvmet (nvmet.h): Fabrics Connect (which creates an
 * admin queue's controller and attaches I/O queues to it), Property Get
 * and Set (CAP, VS, CC, CSTS), and the admin commands a Linux host sends:
 * Identify, Get Log Page, Set and Get Features, Async Event Request,
 * Keep Alive, Abort. Everything else is Invalid Command Opcode.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "nvmet.h"

#define ERROR_LOG_ENTRY	 64
#define SMART_LOG_SIZE	 512
#define FW_SLOT_LOG_SIZE 512
#define LOG_PAGE_MAX	 4096

static enum nvmet_next reply(struct nvmet_slot *s, uint16_t status)
{
	s->status = status;
	return NVMET_REPLY;
}

/* ------------------------------------------------------------------ */
/* Controller life                                                    */

static struct nvmet_ctrl *ctrl_find_locked(struct nvmet_target *t,
					   uint16_t cntlid)
{
	struct nvmet_ctrl *c;

	for (c = t->ctrls; c; c = c->next)
		if (c->cntlid == cntlid)
			return c;
	return NULL;
}

static struct nvmet_ctrl *ctrl_create_locked(struct nvmet_queue *q,
					     const struct nvme_connect_data *d,
					     uint32_t kato_ms)
{
	struct nvmet_target *t = q->t;
	struct nvmet_ctrl *c = calloc(1, sizeof(*c));
	unsigned int tries;

	if (!c)
		return NULL;
	/* Dynamic controllers: 1 .. 0xffef, never one that is in use. */
	for (tries = 0; tries < 0xffef; tries++) {
		if (t->next_cntlid < 1 || t->next_cntlid > 0xffef)
			t->next_cntlid = 1;
		if (!ctrl_find_locked(t, t->next_cntlid))
			break;
		t->next_cntlid++;
	}
	c->t = t;
	c->cntlid = t->next_cntlid++;
	memcpy(c->hostnqn, d->hostnqn, sizeof(c->hostnqn));
	memcpy(c->hostid, d->hostid, sizeof(c->hostid));
	c->refs = 1;
	c->sq[0] = q;
	c->kato_ms = kato_ms;
	c->nr_ioq = t->max_ioq;
	c->wce = true;
	atomic_store(&c->last_cmd_ns, tool_now_ns());
	c->next = t->ctrls;
	t->ctrls = c;
	atomic_fetch_add(&t->cnt.controllers, 1);
	return c;
}

void nvmet_ctrl_kill_locked(struct nvmet_ctrl *ctrl, const char *why)
{
	unsigned int i;

	if (!ctrl->dead)
		nvmet_log(ctrl->t, "ctrl %u: ending (%s)", ctrl->cntlid, why);
	ctrl->dead = true;
	atomic_store(&ctrl->ready, false);
	for (i = 0; i <= NVMET_MAX_IOQ; i++)
		if (ctrl->sq[i])
			nvmet_queue_kill_locked(ctrl->sq[i], why);
}

void nvmet_ctrl_put_locked(struct nvmet_ctrl *ctrl, struct nvmet_queue *q)
{
	struct nvmet_target *t = ctrl->t;
	struct nvmet_ctrl **pp;

	if (q->qid <= NVMET_MAX_IOQ && ctrl->sq[q->qid] == q)
		ctrl->sq[q->qid] = NULL;
	if (--ctrl->refs)
		return;
	for (pp = &t->ctrls; *pp; pp = &(*pp)->next) {
		if (*pp == ctrl) {
			*pp = ctrl->next;
			break;
		}
	}
	nvmet_log(t, "ctrl %u: freed", ctrl->cntlid);
	free(ctrl);
}

bool nvmet_ctrl_keep_alive_expired(struct nvmet_ctrl *ctrl)
{
	struct nvmet_target *t = ctrl->t;
	uint64_t idle_ms, limit_ms;
	bool expired = false;

	pthread_mutex_lock(&t->lock);
	/* KAS is 1 s: allow that much on top of KATO. */
	limit_ms = (uint64_t)ctrl->kato_ms + NVMET_KAS * 100;
	idle_ms = (tool_now_ns() - atomic_load(&ctrl->last_cmd_ns)) / 1000000;
	if (ctrl->kato_ms && !ctrl->dead && idle_ms > limit_ms) {
		nvmet_log(t,
			  "ctrl %u: keep-alive timeout: no command for %llu ms "
			  "(KATO %u ms)",
			  ctrl->cntlid, (unsigned long long)idle_ms,
			  ctrl->kato_ms);
		expired = true;
	}
	pthread_mutex_unlock(&t->lock);
	return expired;
}

/* ------------------------------------------------------------------ */
/* Fabrics commands                                                   */

static enum nvmet_next connect_refuse(struct nvmet_slot *s, bool in_data,
				      uint16_t off)
{
	s->result = nvme_connect_invalid_param(in_data, off);
	return reply(s, NVME_SC_CONNECT_INVALID_PARAM | NVME_SC_DNR);
}

static enum nvmet_next connect_admin_locked(struct nvmet_slot *s,
					    const struct nvme_connect_data *d)
{
	struct nvmet_queue *q = s->q;
	struct nvmet_ctrl *c;

	if (d->cntlid != 0xffff)
		return connect_refuse(s, true, NVME_CONNECT_DATA_CNTLID_OFF);
	c = ctrl_create_locked(q, d, nvme_connect_kato(&s->cmd));
	if (!c)
		return reply(s, NVME_SC_CONNECT_CTRL_BUSY | NVME_SC_DNR);
	q->ctrl = c;
	s->result = c->cntlid;
	nvmet_log(q->t,
		  "ctrl %u: admin queue connected from %s (%u entries), host "
		  "%s, KATO %u ms",
		  c->cntlid, q->peer, q->sqsize + 1, c->hostnqn, c->kato_ms);
	return NVMET_REPLY;
}

static enum nvmet_next connect_io_locked(struct nvmet_slot *s,
					 const struct nvme_connect_data *d)
{
	struct nvmet_queue *q = s->q;
	struct nvmet_ctrl *c = ctrl_find_locked(q->t, d->cntlid);

	if (!c || c->dead)
		return connect_refuse(s, true, NVME_CONNECT_DATA_CNTLID_OFF);
	if (strcmp(c->hostnqn, d->hostnqn))
		return connect_refuse(s, true, NVME_CONNECT_DATA_HOSTNQN_OFF);
	if (q->qid > c->nr_ioq)
		return connect_refuse(s, false, NVME_CONNECT_SQE_QID_OFF);
	if (c->sq[q->qid])
		return reply(s, NVME_SC_CMD_SEQ_ERROR | NVME_SC_DNR);
	c->sq[q->qid] = q;
	c->refs++;
	q->ctrl = c;
	s->result = c->cntlid;
	nvmet_log(q->t, "ctrl %u: I/O queue %u connected from %s (%u entries)",
		  c->cntlid, q->qid, q->peer, q->sqsize + 1);
	return NVMET_REPLY;
}

/* The 1024 bytes of Connect data arrived. */
static enum nvmet_next connect_data(struct nvmet_slot *s)
{
	struct nvmet_queue *q = s->q;
	struct nvmet_target *t = q->t;
	struct nvme_connect_data d;
	enum nvmet_next next;

	if (!nvme_connect_data_decode(s->data, &d))
		return connect_refuse(s, true, NVME_CONNECT_DATA_SUBNQN_OFF);
	if (strcmp(d.subsysnqn, t->subnqn)) {
		nvmet_log(t, "%s: Connect to unknown subsystem %s", q->peer,
			  d.subsysnqn);
		return connect_refuse(s, true, NVME_CONNECT_DATA_SUBNQN_OFF);
	}
	/* CATTR bit 2: the host disabled SQ flow control. */
	q->sqflow_off = (s->cmd.cdw[1] >> 16) & 0x4;
	pthread_mutex_lock(&t->lock);
	if (t->stopping)
		next = reply(s, NVME_SC_CONNECT_CTRL_BUSY);
	else if (!q->qid)
		next = connect_admin_locked(s, &d);
	else
		next = connect_io_locked(s, &d);
	pthread_mutex_unlock(&t->lock);
	return next;
}

static enum nvmet_next connect_cmd(struct nvmet_slot *s)
{
	struct nvmet_queue *q = s->q;
	const struct nvme_sqe *c = &s->cmd;
	unsigned int sqsize = nvme_connect_sqsize(c);
	uint16_t st;

	if (q->ctrl)
		return reply(s, NVME_SC_CMD_SEQ_ERROR | NVME_SC_DNR);
	if (c->cdw[0] & 0xffff) /* RECFMT */
		return reply(s, NVME_SC_CONNECT_FORMAT | NVME_SC_DNR);
	/* The queue the RDMA CM request named, and at most its depth. */
	if (nvme_connect_qid(c) != q->qid)
		return connect_refuse(s, false, NVME_CONNECT_SQE_QID_OFF);
	if (!sqsize || sqsize > q->depth - 1)
		return connect_refuse(s, false, NVME_CONNECT_SQE_SQSIZE_OFF);
	st = nvmet_check_sgl(s, NVME_CONNECT_DATA_SIZE);
	if (st)
		return reply(s, st);
	q->sqsize = sqsize;
	s->xfer = NVME_CONNECT_DATA_SIZE;
	s->after_fetch = connect_data;
	return NVMET_FETCH;
}

static bool ctrl_enabled(const struct nvmet_ctrl *c)
{
	return (c->cc & NVME_CC_ENABLE) && (c->csts & NVME_CSTS_READY) &&
	       !(c->csts & NVME_CSTS_SHST_MASK);
}

/* CC written: start, reset, shut down (NVMe Base, Controller
 * Configuration; CSTS follows it at once, there is nothing to wait
 * for). */
static void ctrl_set_cc_locked(struct nvmet_ctrl *c, uint32_t cc)
{
	uint32_t old = c->cc;

	c->cc = cc;
	if ((cc & NVME_CC_ENABLE) && !(old & NVME_CC_ENABLE)) {
		if (NVME_CC_IOSQES(cc) != 6 || NVME_CC_IOCQES(cc) != 4 ||
		    NVME_CC_MPS(cc) != 0 || NVME_CC_AMS(cc) != 0 ||
		    NVME_CC_CSS(cc) != 0) {
			nvmet_log(c->t, "ctrl %u: CC 0x%08x: fatal status",
				  c->cntlid, cc);
			c->csts = NVME_CSTS_CFS;
		} else {
			c->csts = NVME_CSTS_READY;
		}
	}
	if (!(cc & NVME_CC_ENABLE) && (old & NVME_CC_ENABLE)) {
		c->csts &= ~(NVME_CSTS_READY | NVME_CSTS_CFS);
		nvmet_log(c->t, "ctrl %u: disabled (CC.EN 0)", c->cntlid);
	}
	if ((cc & NVME_CC_SHN_MASK) && !(old & NVME_CC_SHN_MASK)) {
		c->csts |= NVME_CSTS_SHST_COMPLETE;
		nvmet_log(c->t, "ctrl %u: shutdown (CC.SHN %u)", c->cntlid,
			  (cc & NVME_CC_SHN_MASK) >> 14);
	}
	if (!(cc & NVME_CC_SHN_MASK) && (old & NVME_CC_SHN_MASK))
		c->csts &= ~NVME_CSTS_SHST_MASK;
	atomic_store(&c->ready, ctrl_enabled(c));
}

static enum nvmet_next property_cmd(struct nvmet_slot *s, bool set)
{
	struct nvmet_queue *q = s->q;
	struct nvmet_target *t = q->t;
	struct nvmet_ctrl *c = q->ctrl;
	uint32_t off = nvme_property_offset(&s->cmd);
	unsigned int size = nvme_property_size(&s->cmd);
	uint16_t st = 0;

	if (q->qid)
		return reply(s, NVME_SC_INVALID_OPCODE | NVME_SC_DNR);
	if (!c)
		return reply(s, NVME_SC_CMD_SEQ_ERROR | NVME_SC_DNR);
	pthread_mutex_lock(&t->lock);
	if (set) {
		if (off == NVME_PROP_CC && size == 4)
			ctrl_set_cc_locked(
				c, (uint32_t)nvme_property_value(&s->cmd));
		else
			st = NVME_SC_INVALID_FIELD | NVME_SC_DNR;
	} else if (off == NVME_PROP_CAP) {
		s->result = nvme_cap_value((uint16_t)(t->io_qsize - 1),
					   NVMET_CAP_TIMEOUT);
		if (size == 4)
			s->result &= 0xffffffffu;
	} else if (off == NVME_PROP_VS && size == 4) {
		s->result = NVMET_VERSION;
	} else if (off == NVME_PROP_CC && size == 4) {
		s->result = c->cc;
	} else if (off == NVME_PROP_CSTS && size == 4) {
		s->result = c->csts;
	} else {
		st = NVME_SC_INVALID_FIELD | NVME_SC_DNR;
	}
	pthread_mutex_unlock(&t->lock);
	return reply(s, st);
}

enum nvmet_next nvmet_fabrics_cmd(struct nvmet_slot *s)
{
	switch (s->cmd.fctype) {
	case NVME_FCTYPE_CONNECT:
		return connect_cmd(s);
	case NVME_FCTYPE_PROPERTY_GET:
		return property_cmd(s, false);
	case NVME_FCTYPE_PROPERTY_SET:
		return property_cmd(s, true);
	default:
		return reply(s, NVME_SC_INVALID_OPCODE | NVME_SC_DNR);
	}
}

/* ------------------------------------------------------------------ */
/* Identify                                                           */

static void identify_ctrl(struct nvmet_slot *s)
{
	struct nvmet_target *t = s->q->t;
	struct nvme_id_ctrl_fields f = {
		.serial = t->serial,
		.model = NVMET_MODEL,
		.firmware = t->firmware,
		.subnqn = t->subnqn,
		.cntlid = s->q->ctrl->cntlid,
		.version = NVMET_VERSION,
		.mdts = (uint8_t)t->mdts,
		.cmic = 1u << 1, /* several controllers share the namespace */
		.oaes = 1u << 8, /* namespace attribute notices */
		/* 128-bit host identifier; traffic based keep-alive:
		 * any command of the controller restarts the timer. */
		.ctratt = (1u << 0) | (1u << 6),
		.cntrltype = 1, /* I/O controller */
		.acl = 3,
		.aerl = NVMET_AERL,
		.frmw = (1u << 1) | 1u, /* one slot, read-only */
		/* Command effects log; extended Get Log Page (offsets). */
		.lpa = (1u << 1) | (1u << 2),
		.kas = NVMET_KAS,
		.maxcmd = (uint16_t)t->io_qsize,
		.nn = 1,
		.oncs = (1u << 2) | (1u << 3), /* DSM, Write Zeroes */
		.vwc = 1,
		/* SGLs without alignment rules; keyed SGL data blocks. No
		 * in-capsule data (bit 20): the host sends every byte with
		 * a key and we fetch it. */
		.sgls = (1u << 0) | (1u << 2),
		.ioccsz = NVME_SQE_SIZE / 16,
		.iorcsz = NVME_CQE_SIZE / 16,
		.msdbd = 1,
	};

	nvme_id_ctrl_build(s->data, &f);
}

static void identify_ns(struct nvmet_slot *s)
{
	struct nvmet_ns *ns = &s->q->t->ns;
	struct nvme_id_ns_fields f = { .blocks = ns->blocks,
				       .lba_shift = (uint8_t)ns->lba_shift,
				       .nmic = 1 };

	memcpy(f.nguid, ns->nguid, sizeof(f.nguid));
	nvme_id_ns_build(s->data, &f);
}

static enum nvmet_next identify_cmd(struct nvmet_slot *s)
{
	struct nvmet_ns *ns = &s->q->t->ns;
	uint32_t nsid = s->cmd.nsid;
	unsigned int cns = s->cmd.cdw[0] & 0xff;
	unsigned int csi = s->cmd.cdw[1] >> 24;
	uint16_t st = nvmet_check_sgl(s, NVME_IDENTIFY_SIZE);

	if (st)
		return reply(s, st);
	memset(s->data, 0, NVME_IDENTIFY_SIZE);
	switch (cns) {
	case NVME_CNS_NAMESPACE:
		if (nsid != 1)
			return reply(s, NVME_SC_INVALID_NS | NVME_SC_DNR);
		identify_ns(s);
		break;
	case NVME_CNS_CONTROLLER:
		identify_ctrl(s);
		break;
	case NVME_CNS_ACTIVE_NS_LIST:
		if (nsid >= 0xfffffffeu)
			return reply(s, NVME_SC_INVALID_NS | NVME_SC_DNR);
		if (nsid < 1)
			nvme_put32(s->data, 1);
		break;
	case NVME_CNS_NS_DESC_LIST:
		if (nsid != 1)
			return reply(s, NVME_SC_INVALID_NS | NVME_SC_DNR);
		nvme_ns_desc_list_build(s->data, ns->nguid, ns->uuid);
		break;
	case NVME_CNS_CS_NAMESPACE:
		/* NVM command set specific: nothing beyond the defaults. */
		if (csi != 0)
			return reply(s, NVME_SC_INVALID_FIELD | NVME_SC_DNR);
		if (nsid != 1)
			return reply(s, NVME_SC_INVALID_NS | NVME_SC_DNR);
		break;
	case NVME_CNS_CS_CONTROLLER:
		if (csi != 0)
			return reply(s, NVME_SC_INVALID_FIELD | NVME_SC_DNR);
		break;
	default:
		return reply(s, NVME_SC_INVALID_FIELD | NVME_SC_DNR);
	}
	s->xfer = NVME_IDENTIFY_SIZE;
	return NVMET_REPLY;
}

/* ------------------------------------------------------------------ */
/* Get Log Page                                                       */

/* A 128-bit little-endian counter from a 64-bit value. */
static void put128(uint8_t *p, uint64_t v)
{
	nvme_put64(p, v);
	nvme_put64(p + 8, 0);
}

static void smart_log(struct nvmet_target *t, uint8_t *p)
{
	uint64_t rd = atomic_load(&t->cnt.bytes_read);
	uint64_t wr = atomic_load(&t->cnt.bytes_written);
	uint64_t hours = (tool_now_ns() - t->start_ns) / 3600000000000ull;

	nvme_put16(p + 1, 300); /* composite temperature, kelvin */
	p[3] = 100; /* available spare, % */
	p[4] = 10; /* its threshold */
	/* Data units are thousands of 512-byte blocks, rounded up. */
	put128(p + 32, (rd + 511999) / 512000);
	put128(p + 48, (wr + 511999) / 512000);
	put128(p + 64, atomic_load(&t->cnt.read_cmds));
	put128(p + 80, atomic_load(&t->cnt.write_cmds));
	put128(p + 112, 1); /* power cycles */
	put128(p + 128, hours);
}

/* Commands Supported and Effects: CSUPP for each command we execute,
 * LBCC (logical block content change) for those that write. */
static void effects_log(uint8_t *p)
{
	static const uint8_t admin[] = {
		NVME_ADMIN_GET_LOG_PAGE, NVME_ADMIN_IDENTIFY,
		NVME_ADMIN_ABORT,	 NVME_ADMIN_SET_FEATURES,
		NVME_ADMIN_GET_FEATURES, NVME_ADMIN_ASYNC_EVENT,
		NVME_ADMIN_KEEP_ALIVE,
	};
	static const uint8_t io_read[] = { NVME_IO_FLUSH, NVME_IO_READ };
	static const uint8_t io_write[] = { NVME_IO_WRITE, NVME_IO_WRITE_ZEROES,
					    NVME_IO_DSM };
	size_t i;

	for (i = 0; i < sizeof(admin); i++)
		nvme_put32(p + 4 * admin[i], 1);
	for (i = 0; i < sizeof(io_read); i++)
		nvme_put32(p + 1024 + 4 * io_read[i], 1);
	for (i = 0; i < sizeof(io_write); i++)
		nvme_put32(p + 1024 + 4 * io_write[i], 1 | 2);
}

static enum nvmet_next get_log_page_cmd(struct nvmet_slot *s)
{
	struct nvmet_target *t = s->q->t;
	const struct nvme_sqe *c = &s->cmd;
	unsigned int lid = c->cdw[0] & 0xff;
	uint32_t numd = (c->cdw[0] >> 16) | ((c->cdw[1] & 0xffff) << 16);
	uint64_t len = ((uint64_t)numd + 1) * 4;
	uint64_t off = c->cdw[2] | ((uint64_t)c->cdw[3] << 32);
	uint8_t page[LOG_PAGE_MAX];
	size_t size;
	uint16_t st;

	if (len > t->max_xfer)
		return reply(s, NVME_SC_INVALID_FIELD | NVME_SC_DNR);
	st = nvmet_check_sgl(s, (uint32_t)len);
	if (st)
		return reply(s, st);
	if (off & 3)
		return reply(s, NVME_SC_INVALID_FIELD | NVME_SC_DNR);
	memset(page, 0, sizeof(page));
	switch (lid) {
	case NVME_LOG_ERROR:
		/* ELPE 0: one entry, empty (error count 0). */
		size = ERROR_LOG_ENTRY;
		break;
	case NVME_LOG_SMART:
		smart_log(t, page);
		size = SMART_LOG_SIZE;
		break;
	case NVME_LOG_FW_SLOT:
		page[0] = 1; /* slot 1 active */
		nvme_put_string(page + 8, 8, t->firmware);
		size = FW_SLOT_LOG_SIZE;
		break;
	case NVME_LOG_CHANGED_NS:
		/* No namespace ever changes. */
		size = LOG_PAGE_MAX;
		break;
	case NVME_LOG_CMD_EFFECTS:
		effects_log(page);
		size = LOG_PAGE_MAX;
		break;
	default:
		return reply(s, NVME_SC_INVALID_FIELD | NVME_SC_DNR);
	}
	/* Past the end of the log the host reads zeros. */
	memset(s->data, 0, (size_t)len);
	if (off < size)
		memcpy(s->data, page + off, (size_t)MIN(len, size - off));
	s->xfer = (uint32_t)len;
	return NVMET_REPLY;
}

/* ------------------------------------------------------------------ */
/* Features                                                           */

static enum nvmet_next set_features_cmd(struct nvmet_slot *s)
{
	struct nvmet_target *t = s->q->t;
	struct nvmet_ctrl *c = s->q->ctrl;
	unsigned int fid = s->cmd.cdw[0] & 0xff;
	uint32_t v = s->cmd.cdw[1];
	uint16_t st = 0;

	if (s->cmd.cdw[0] >> 31) /* SV */
		return reply(s, NVME_SC_FEATURE_NOT_SAVEABLE | NVME_SC_DNR);
	pthread_mutex_lock(&t->lock);
	switch (fid) {
	case NVME_FEAT_NUM_QUEUES: {
		unsigned int nsq = (v & 0xffff) + 1, ncq = (v >> 16) + 1;

		if (nsq > 0xffff || ncq > 0xffff) {
			st = NVME_SC_INVALID_FIELD | NVME_SC_DNR;
			break;
		}
		nsq = MIN(nsq, t->max_ioq);
		ncq = MIN(ncq, t->max_ioq);
		c->nr_ioq = MIN(nsq, ncq);
		s->result = (nsq - 1) | ((uint32_t)(ncq - 1) << 16);
		break;
	}
	case NVME_FEAT_KATO:
		c->kato_ms = v;
		break;
	case NVME_FEAT_ASYNC_EVENT:
		c->aec = v & (1u << 8);
		break;
	case NVME_FEAT_VOLATILE_WC:
		c->wce = v & 1;
		break;
	default:
		st = NVME_SC_INVALID_FIELD | NVME_SC_DNR;
		break;
	}
	pthread_mutex_unlock(&t->lock);
	return reply(s, st);
}

static enum nvmet_next get_features_cmd(struct nvmet_slot *s)
{
	struct nvmet_target *t = s->q->t;
	struct nvmet_ctrl *c = s->q->ctrl;
	unsigned int fid = s->cmd.cdw[0] & 0xff;
	unsigned int sel = (s->cmd.cdw[0] >> 8) & 0x7;
	uint16_t st = 0;

	/* SEL 3, supported capabilities: what Set Features may change
	 * (bit 2); nothing is saveable or namespace specific. */
	if (sel == 3) {
		switch (fid) {
		case NVME_FEAT_NUM_QUEUES:
		case NVME_FEAT_KATO:
		case NVME_FEAT_ASYNC_EVENT:
		case NVME_FEAT_VOLATILE_WC:
			s->result = 1u << 2;
			return reply(s, 0);
		default:
			break;
		}
	}
	pthread_mutex_lock(&t->lock);
	switch (fid) {
	case NVME_FEAT_NUM_QUEUES:
		s->result = (c->nr_ioq - 1) | ((uint32_t)(c->nr_ioq - 1) << 16);
		break;
	case NVME_FEAT_KATO:
		s->result = c->kato_ms;
		break;
	case NVME_FEAT_ASYNC_EVENT:
		s->result = c->aec;
		break;
	case NVME_FEAT_VOLATILE_WC:
		s->result = c->wce;
		break;
	case NVME_FEAT_ARBITRATION:
	case NVME_FEAT_POWER_MGMT:
	case NVME_FEAT_TEMP_THRESH:
	case NVME_FEAT_ERR_RECOVERY:
	case NVME_FEAT_IRQ_COALESCE:
	case NVME_FEAT_IRQ_CONFIG:
	case NVME_FEAT_WRITE_ATOMIC:
		/* Mandatory, but nothing here to tune: the defaults. */
		break;
	case NVME_FEAT_HOST_ID:
		/* Only the 128-bit form (EXHID). */
		if (!(s->cmd.cdw[1] & 1)) {
			st = NVME_SC_INVALID_FIELD | NVME_SC_DNR;
			break;
		}
		st = nvmet_check_sgl(s, sizeof(c->hostid));
		if (st)
			break;
		memcpy(s->data, c->hostid, sizeof(c->hostid));
		s->xfer = sizeof(c->hostid);
		break;
	default:
		st = NVME_SC_INVALID_FIELD | NVME_SC_DNR;
		break;
	}
	pthread_mutex_unlock(&t->lock);
	return reply(s, st);
}

/* ------------------------------------------------------------------ */
/* Admin commands                                                     */

enum nvmet_next nvmet_admin_cmd(struct nvmet_slot *s)
{
	struct nvmet_queue *q = s->q;
	struct nvmet_target *t = q->t;
	bool enabled;

	pthread_mutex_lock(&t->lock);
	enabled = (q->ctrl->cc & NVME_CC_ENABLE) &&
		  (q->ctrl->csts & NVME_CSTS_READY);
	pthread_mutex_unlock(&t->lock);
	/* Only Fabrics commands before CC.EN (NVMe over Fabrics, Controller
	 * Initialization). */
	if (!enabled)
		return reply(s, NVME_SC_CMD_SEQ_ERROR | NVME_SC_DNR);
	switch (s->cmd.opcode) {
	case NVME_ADMIN_IDENTIFY:
		return identify_cmd(s);
	case NVME_ADMIN_GET_LOG_PAGE:
		return get_log_page_cmd(s);
	case NVME_ADMIN_SET_FEATURES:
		return set_features_cmd(s);
	case NVME_ADMIN_GET_FEATURES:
		return get_features_cmd(s);
	case NVME_ADMIN_ASYNC_EVENT:
		/* Held until an event, which never comes: namespaces do not
		 * change here. */
		if (q->held > NVMET_AERL)
			return reply(s, NVME_SC_AER_LIMIT | NVME_SC_DNR);
		return NVMET_HOLD;
	case NVME_ADMIN_KEEP_ALIVE:
		/* The command itself restarted the timer. */
		return reply(s, 0);
	case NVME_ADMIN_ABORT:
		/* Dword 0 bit 0: the command was not aborted. */
		s->result = 1;
		return reply(s, 0);
	default:
		return reply(s, NVME_SC_INVALID_OPCODE | NVME_SC_DNR);
	}
}
