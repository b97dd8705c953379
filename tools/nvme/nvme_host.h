/* SPDX-License-Identifier: MIT */
/*
 * An NVMe over Fabrics RDMA host (initiator) on NDK: one controller with
 * an admin queue and N I/O queues, each queue one NDK connection (CQ, QP,
 * connector). Commands are slots of a queue; a slot completes when its
 * Send, its response capsule (CQE) and its memory handling are all done,
 * or, when the controller failed, when the flushed queue has given back
 * every work request. Public NDKPI only.
 *
 * One thread drives everything through nh_poll(): it reaps the CQs, sends
 * Keep Alive every kato/2, times commands out and turns a lost connection
 * into errors for every outstanding command. The provider's callbacks only
 * wake it.
 */
#ifndef NDK_TOOLS_NVME_HOST_H
#define NDK_TOOLS_NVME_HOST_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>
#include <ndk/ndk.h>
#include "nvme_wire.h"
#include "tool_host.h"

#define NH_ADMIN_QUEUE_SIZE 32 /* as Linux: the most nvmet-rdma takes */
#define NH_MAX_QUEUE_SIZE   128 /* NVMe/RDMA's limit, nvmet's MQES + 1 */
#define NH_ADMIN_DATA	    NVME_IDENTIFY_SIZE

/* Host-side outcomes of a command, beside the NVMe status (>= 0). */
enum nh_error {
	NH_ERR_ABORTED = -1, /* the queue was lost before the response came */
	NH_ERR_TIMEOUT = -2, /* no response within the command timeout */
	NH_ERR_TRANSFER = -3, /* a local work request of it failed */
	NH_ERR_SUBMIT = -4, /* it could not be posted */
};

/* How the host exposes command data to the controller. */
enum nh_mem_mode {
	/* A fast-register MR per command, keyed SGL with the Invalidate
	 * subtype: the target answers with Send with Invalidate. */
	NH_MEM_FAST_REGISTER,
	/* One long-lived MR per queue with remote access, keyed SGL with
	 * the plain Address subtype. */
	NH_MEM_GLOBAL,
};

struct nh_queue;

/* Work a command still waits for. */
#define NH_WAIT_SEND (1u << 0)
#define NH_WAIT_CQE  (1u << 1)
#define NH_WAIT_FR   (1u << 2)
#define NH_WAIT_INV  (1u << 3)

struct nh_req {
	struct nh_queue *q;
	unsigned int idx;
	uint16_t cid;
	uint8_t gen; /* bumped per use: a late CQE cannot match a new use */
	bool busy;
	unsigned int wait; /* NH_WAIT_* */
	uint8_t *sqe; /* 64 bytes in the queue's SQE MR */
	uint8_t *data; /* the slot's data buffer */
	size_t len; /* data bytes of this command */
	bool to_ctrl; /* host to controller (a write) */
	bool in_capsule;
	/* Fast-register mode. */
	NDK_MR *fr;
	PMDL mdl;
	NDK_LOGICAL_ADDRESS_MAPPING *lam;
	UINT32 fr_tok;
	bool fr_valid; /* registered: invalidate before the next use */
	bool timed_out;
	bool got_cqe;
	NTSTATUS wr_status; /* the first failed work request's status */
	struct nvme_sqe cmd;
	struct nvme_cqe cqe;
	int status; /* NVMe status, or enum nh_error */
	uint64_t t_submit;
	/* Called once when the command is done, then the slot is free. */
	void (*done)(struct nh_req *r);
	void *arg;
	uint64_t u64; /* for the caller */
	uint32_t u32;
};

struct nh_queue {
	struct nh_ctrl *ctrl;
	uint16_t qid;
	unsigned int size; /* slots = receives = SQ entries */
	size_t slot_bytes;
	NDK_CQ *cq;
	NDK_QP *qp;
	NDK_CONNECTOR *conn;
	struct tool_buf sqes, cqes, data;
	struct nh_req *reqs;
	unsigned int *free_idx, nfree;
	unsigned int busy;
	unsigned int wr_out, rx_out; /* posted, not completed */
	uint16_t crqsize; /* from the target's CM Accept */
	bool connected, dead;
	bool closing; /* our own disconnect: its event is no failure */
	bool drain_warned;
	uint64_t dead_since;
	atomic_bool disconnected; /* set by the disconnect event */
	atomic_ulong disc_reason;
	atomic_uint disc_order; /* 1 for the first queue to go, 2 ... */
	ULONG ird, ord; /* as negotiated */
};

struct nh_opts {
	struct sockaddr_storage dst, src;
	const char *subnqn;
	char hostnqn[NVME_NQN_SIZE];
	uint8_t hostid[16];
	unsigned int nioq; /* I/O queues wanted */
	unsigned int qsize; /* entries per I/O queue */
	unsigned int admin_qsize; /* entries of the admin queue */
	unsigned int kato_ms; /* 0: no keep alive */
	unsigned int ird; /* InboundReadLimit: the target's RDMA Reads */
	unsigned int cmd_timeout_ms;
	unsigned int cm_timeout_ms;
	size_t max_io; /* bytes per command wanted */
	enum nh_mem_mode mem;
	bool in_capsule; /* writes in the command capsule when they fit */
	uint32_t nsid; /* 0: the first active namespace */
	int verbose;
	NET_IFINDEX ifindex; /* the adapter; 0: the one that has src */
};

struct nh_ctrl {
	struct nh_opts o;
	struct tool_host host;
	struct nh_queue admin;
	struct nh_queue *io;
	unsigned int nio;
	enum nh_mem_mode mem; /* in use */
	/* Woken by CQ notifications and disconnect events. */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned long gen;
	atomic_uint cq_errors;
	atomic_uint disc_count;
	/* What the controller said. */
	uint16_t cntlid;
	uint64_t cap;
	uint32_t vs, cc;
	struct nvme_id_ctrl_info id;
	uint32_t nsid;
	struct nvme_id_ns_info ns;
	uint32_t lba_size;
	size_t max_io; /* bytes per command in use */
	size_t in_capsule_max; /* 0: none */
	unsigned int nio_allowed;
	/* Failure: set once, every queue flushed. */
	bool failed;
	char why[160];
	unsigned int outstanding_at_failure;
	/* Keep Alive. */
	uint64_t ka_next; /* ms; 0: keep alive not running */
	bool ka_busy;
	unsigned long ka_sent, ka_errors;
	uint64_t next_check;
	unsigned long stray_cqes;
	unsigned long completed; /* commands finished, all queues */
	/* Commands finished after the failure: with a host error, or with
	 * the response that was already on its way. */
	unsigned long after_fail_errors, after_fail_ok;
};

/* Setup: 0, or 2 after printing why (a setup failure). */
int nh_connect(struct nh_ctrl *c);
/* Tears everything down: graceful (shutdown notification, disconnect)
 * unless the controller failed. */
void nh_disconnect(struct nh_ctrl *c);

/* A free slot of q, or NULL. */
struct nh_req *nh_get(struct nh_queue *q);
/* Prepares a Read or Write of nblocks at slba with the slot's buffer. */
void nh_prep_rw(struct nh_req *r, bool write, uint64_t slba, uint32_t nblocks);
/*
 * Posts r->cmd (data: r->len bytes of r->data, direction r->to_ctrl).
 * r->done is called exactly once, later from nh_poll(), or from here with
 * NH_ERR_SUBMIT when nothing could be posted.
 */
void nh_submit(struct nh_req *r);
/*
 * Reaps completions, runs keep alive, timeouts and failure handling;
 * waits up to wait_ms when nothing happened. Returns the commands
 * completed.
 */
unsigned int nh_poll(struct nh_ctrl *c, unsigned int wait_ms);
/*
 * One command, waited for: data goes in from buf (to_ctrl) or out to
 * buf. Returns the NVMe status or an enum nh_error; the CQE in *cqe.
 */
int nh_exec(struct nh_queue *q, const struct nvme_sqe *cmd, void *buf,
	    size_t len, bool to_ctrl, struct nvme_cqe *cqe);
/* Commands in flight on every queue. */
unsigned int nh_busy(const struct nh_ctrl *c);
/* Polls until no command is in flight (a failed controller's end within
 * the command timeout plus the flush's bound); false if some still are. */
bool nh_drain(struct nh_ctrl *c);

/* Marks the controller failed and flushes every queue. */
void nh_fail(struct nh_ctrl *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* "0x4002 (invalid field in command, DNR)" or "aborted: queue lost". */
const char *nh_status_str(int status, char *buf, size_t len);

#endif
