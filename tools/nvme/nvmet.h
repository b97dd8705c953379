/* SPDX-License-Identifier: MIT */
/*
 * ndknvmet: an NVMe over Fabrics RDMA target on NDK. One subsystem with
 * one namespace (RAM or a file), any number of controllers, each with an
 * admin queue and up to max_ioq I/O queues; every queue is one NDK
 * connection served by a thread of its own.
 *
 *   ndknvmet.c     the command line, the listener, the counters
 *   nvmet_queue.c  one queue: accept, receives, command slots, RDMA Read
 *                  and Write against the host's keyed SGLs, the replies
 *   nvmet_ctrl.c   controllers, Fabrics and admin commands
 *   nvmet_io.c     the NVM command set, and the namespace's storage
 *
 * Locks: t->lock (controllers, the queue list, controller registers) is
 * taken before q->lock (a queue's wake-up state) and never held across
 * an NDK call that may run a callback of ours inline.
 */
#ifndef NDK_TOOLS_NVMET_H
#define NDK_TOOLS_NVMET_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include "nvme_wire.h"
#include "tool_host.h"

#define NVMET_PORT	  4420
#define NVMET_ADMIN_DEPTH 32 /* the admin queue entries Linux hosts use */
#define NVMET_MAX_IOQ	  64
#define NVMET_KAS	  10 /* keep-alive granularity: 1 s */
#define NVMET_AERL	  3 /* 0's based: four Async Event Requests */
#define NVMET_CAP_TIMEOUT 15 /* CAP.TO: 7.5 s in 500 ms units */
#define NVMET_VERSION	  0x00010300u /* NVMe 1.3 */
#define NVMET_MODEL	  "libndk ndknvmet"
#define NVMET_CM_ORD	  16 /* RDMA Reads in flight per queue */

/* The namespace's storage. */
struct nvmet_ns {
	int fd; /* a file, or -1 for RAM */
	uint8_t *ram;
	uint64_t bytes;
	uint64_t blocks;
	unsigned int lba_shift;
	uint8_t nguid[16];
	uint8_t uuid[16];
	char what[300]; /* "ram 64 MiB" or the file name */
};

int nvmet_ns_open_ram(struct nvmet_ns *ns, uint64_t bytes,
		      unsigned int lba_shift);
int nvmet_ns_open_file(struct nvmet_ns *ns, const char *path,
		       unsigned int lba_shift);
/* NGUID and UUID from the subsystem NQN: stable across runs. */
void nvmet_ns_set_ids(struct nvmet_ns *ns, const char *subnqn);
void nvmet_ns_close(struct nvmet_ns *ns);
/* 0 or a negative errno. */
int nvmet_ns_read(struct nvmet_ns *ns, void *buf, uint64_t off, size_t len);
int nvmet_ns_write(struct nvmet_ns *ns, const void *buf, uint64_t off,
		   size_t len, bool fua);
int nvmet_ns_zero(struct nvmet_ns *ns, uint64_t off, uint64_t len);
int nvmet_ns_flush(struct nvmet_ns *ns);

struct nvmet_counters {
	atomic_ullong commands, errors, bytes_read, bytes_written;
	atomic_ullong read_cmds, write_cmds;
	atomic_ullong controllers, queues, rejected, expired;
};

struct nvmet_ctrl;
struct nvmet_queue;

/* The subsystem, its namespace and its port. */
struct nvmet_target {
	char subnqn[NVME_NQN_SIZE];
	char serial[21];
	const char *firmware;
	struct nvmet_ns ns;
	unsigned int max_ioq; /* I/O queues per controller */
	unsigned int io_qsize; /* I/O queue entries: CAP.MQES + 1 */
	unsigned int mdts; /* Identify MDTS: 4 KiB << mdts per command */
	size_t max_xfer;
	int verbose;

	pthread_mutex_t lock;
	pthread_cond_t cond; /* signalled when a queue ends */
	struct nvmet_ctrl *ctrls;
	struct nvmet_queue *queues; /* every live queue */
	unsigned int nqueues;
	uint16_t next_cntlid;
	bool stopping;

	struct nvmet_counters cnt;
	uint64_t start_ns;
};

/* A controller: created by an admin Connect, found by I/O Connects. */
struct nvmet_ctrl {
	struct nvmet_target *t;
	struct nvmet_ctrl *next;
	uint16_t cntlid;
	char hostnqn[NVME_NQN_SIZE];
	uint8_t hostid[16];
	/* Under t->lock: */
	unsigned int refs; /* queues attached */
	struct nvmet_queue *sq[NVMET_MAX_IOQ + 1]; /* [0]: admin */
	uint32_t cc, csts;
	uint32_t kato_ms;
	uint32_t aec;
	bool wce;
	unsigned int nr_ioq; /* granted by Set Features, Number of Queues */
	bool dead;
	/* Read by the I/O queues without the lock. */
	atomic_bool ready; /* CC.EN and CSTS.RDY, no shutdown */
	atomic_ullong last_cmd_ns;
};

/* What a command handler decided; the slot's status, result, xfer set. */
enum nvmet_next {
	NVMET_REPLY, /* send xfer bytes of data to the host, then the CQE */
	NVMET_FETCH, /* RDMA Read xfer bytes from the host, then after_fetch */
	NVMET_HOLD, /* answer later (an Async Event Request) */
};

enum nvmet_slot_state {
	SLOT_FREE,
	SLOT_FETCH, /* RDMA Read of the host's data outstanding */
	SLOT_REPLY, /* data Write and CQE Send outstanding */
	SLOT_HELD, /* an AER waiting for an event */
};

/* One command in flight, with its data buffer and CQE. */
struct nvmet_slot {
	struct nvmet_queue *q;
	struct nvmet_slot *next_free;
	enum nvmet_slot_state state;
	struct nvme_sqe cmd;
	uint16_t status;
	uint64_t result;
	uint8_t *data; /* t->max_xfer bytes, registered */
	uint32_t xfer;
	unsigned int outstanding; /* posted requests not yet completed */
	enum nvmet_next (*after_fetch)(struct nvmet_slot *s);
	uint8_t *cqe; /* 16 registered bytes */
	/* What the I/O handlers keep between fetch and reply. */
	uint64_t io_off;
	bool io_fua;
};

/* One NVMe queue: one NDK connection. */
struct nvmet_queue {
	struct nvmet_target *t;
	struct tool_host *host; /* the adapter the host connected through */
	struct nvmet_queue *next; /* t->queues */
	NDK_CONNECTOR *conn;
	NDK_QP *qp;
	NDK_CQ *cq;
	struct tool_buf rbuf, dbuf, cbuf; /* receives, data, CQEs */
	uint16_t qid;
	uint16_t hrqsize; /* the host's receives: our CQEs in flight */
	unsigned int depth; /* hsqsize + 1: receives and slots */
	unsigned int sqsize; /* from Connect, 0's based */
	uint16_t sq_head;
	bool sqflow_off;
	struct nvmet_slot *slots, *free;
	unsigned int busy, held;
	uint8_t (*pend)[NVME_SQE_SIZE]; /* commands waiting for a slot */
	unsigned int pend_head, pend_tail;
	unsigned int recvs_posted;
	struct nvmet_ctrl *ctrl; /* after Connect */
	char peer[64];
	uint64_t commands, errors;

	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned long gen; /* bumped by the CQ and disconnect callbacks */
	bool ended; /* the peer disconnected */
	ULONG reason;
	bool kill; /* asked to end: controller gone or target stopping */
	const char *kill_why;
};

/* nvmet_queue.c */
/* Takes an incoming connector: a thread that accepts it and serves. */
void nvmet_queue_start(struct nvmet_target *t, struct tool_host *h,
		       NDK_CONNECTOR *c);
/* Asks a queue to disconnect and end (t->lock held). */
void nvmet_queue_kill_locked(struct nvmet_queue *q, const char *why);
/* Whether the command's data pointer is a keyed SGL of at least len
 * bytes: 0, or the status to answer with. */
uint16_t nvmet_check_sgl(struct nvmet_slot *s, uint32_t len);

/* nvmet_ctrl.c */
enum nvmet_next nvmet_fabrics_cmd(struct nvmet_slot *s);
enum nvmet_next nvmet_admin_cmd(struct nvmet_slot *s);
/* Ends the controller: every queue of it disconnects (t->lock held). */
void nvmet_ctrl_kill_locked(struct nvmet_ctrl *ctrl, const char *why);
/* A queue leaves its controller; the last one frees it (t->lock held). */
void nvmet_ctrl_put_locked(struct nvmet_ctrl *ctrl, struct nvmet_queue *q);
/* The admin queue's periodic check: true when the keep-alive expired. */
bool nvmet_ctrl_keep_alive_expired(struct nvmet_ctrl *ctrl);

/* nvmet_io.c */
enum nvmet_next nvmet_io_cmd(struct nvmet_slot *s);

/* nvmet_log.c: one line on stdout; nvmet_debug only with -v. */
void nvmet_log(struct nvmet_target *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void nvmet_debug(struct nvmet_target *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
