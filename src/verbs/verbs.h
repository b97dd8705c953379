/* SPDX-License-Identifier: MIT */
/*
 * The verbs provider (docs/verbs.md): NDK objects over rdma-core's
 * libibverbs and librdmacm, for an RDMA device that serves the adapter's
 * interface. What its files share: the adapter's provider state and the
 * one mapping of every verbs and rdma_cm error to an NTSTATUS.
 *
 *   dl.c         libibverbs and librdmacm, opened at run time
 *   device.c     which device serves an interface, the adapter state,
 *                NDK_ADAPTER_INFO from the device's limits
 *   status.c     errno, work completion and rdma_cm event statuses
 *   pd.c, cq.c, mr.c, qp.c      the objects, one file each
 *   lam.c        logical address mappings, the privileged token
 *   wr.c         work request slots, their completions, the QP key map
 *   cm.c         the rdma_cm event channel: events to their objects
 *   worker.c     the thread for rdma_cm calls that block
 *   connector.c, listener.c     connection management over rdma_cm
 *   provider.c   ndk_verbs_provider and the slots not supported
 */
#ifndef NDK_VERBS_VERBS_H
#define NDK_VERBS_VERBS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include "core/lock.h"
#include "front/adapter.h"
#include "front/object.h"
#include "verbs/worker.h"

struct ndk_vqpmap;
struct ndk_lam_table;
struct ndk_vmr;

/* Buckets of an adapter's map of fast-register windows (mr.c). */
#define NDK_VFR_BUCKETS 64

/* What the verbs provider keeps per adapter (ad->priv). */
/*
 * The adapter's rdma_cm event channel, counted: a connect that the
 * connector abandoned while the kernel still blocks in it (siw's TCP
 * connect) keeps its id, and so the channel, after the adapter is gone.
 */
struct ndk_vchan {
	atomic_int refs;
	struct rdma_event_channel *ch;
};

void ndk_vchan_put(struct ndk_vchan *chan);

struct ndk_vadapter {
	struct ndk_adapter *ad;
	/* rdma_cm's device contexts: PDs, CQs and QPs must live on the
	 * context rdma_cm uses for the device, so the adapter takes it from
	 * this list (held until fini) rather than opening its own. */
	struct ibv_context **devs;
	struct ibv_context *ctx;
	uint8_t port;
	char dev_name[IBV_SYSFS_NAME_MAX];
	struct ibv_device_attr dev_attr;
	struct ibv_port_attr port_attr;
	bool iwarp; /* the transport is iWARP (else IB CM: IB or RoCE) */
	bool siw; /* Linux soft-iWARP: its limits (docs/verbs.md) */
	bool rxe; /* Linux soft-RoCE: its quirks (docs/verbs.md) */
	bool mw2; /* type 2 memory windows (MaxWindowSize non-zero) */
	/* A fast registration's remote token is a type 2 window (mw2 and
	 * not iWARP: docs/verbs.md, Fast registration). */
	bool fr_mw;
	uint32_t max_inline; /* found by trying, see device.c */
	ULONG max_reject_data; /* private data of a reject */

	/* The adapter's live logical address mappings (front/lam_table.h),
	 * each with its registrations (verbs/lam.h). */
	struct ndk_lam_table *lams;
	/* Work-request keys to QPs (verbs/wr.h). */
	struct ndk_vqpmap *qps;
	/* With fr_mw: the fast-register MRs that have a window, by the
	 * window's index (rkey >> 8), so that a receive completion that
	 * reports a peer's invalidation marks the MR (verbs/mr.h). */
	struct ndk_lock fr_lock;
	struct ndk_vmr *fr_map[NDK_VFR_BUCKETS];
	/* The memory windows (verbs/mw.h) by their token's index, under
	 * fr_lock too. */
	struct list_head mw_map[NDK_VFR_BUCKETS];
	/* Completion events of every CQ of the adapter, on the engine. */
	struct ibv_comp_channel *comp;
	struct ndk_io comp_io;
	/* rdma_cm events of every connector and listener, on the engine. */
	struct rdma_event_channel *cm;
	struct ndk_vchan *chan; /* cm's count */
	/* An id's context (struct ndk_vcm_ref) against the engine that
	 * reads it for an event (cm.c, ndk_vcm_set_context). */
	struct ndk_lock cm_ref_lock;
	struct ndk_io cm_io;
	/* rdma_destroy_id of ids that may block (verbs/worker.h). */
	struct ndk_vworker worker;
	/* The device context's asynchronous events (QP errors), which every
	 * adapter on the context watches (device.c). */
	struct ndk_io async_io;
	struct list_head entry; /* in the process's list of adapters */
};

struct ndk_vcm_ref;
/*
 * Sets id's context (NULL: its object lets go of it) under cm_ref_lock,
 * which the engine holds while it reads the context and takes a
 * reference on the object (cm.c): once this returns with NULL, no event
 * of id reaches the object (device.c).
 */
void ndk_vcm_set_context(struct ndk_vadapter *v, struct rdma_cm_id *id,
			 struct ndk_vcm_ref *ref);

/* Reads and acts on the device's pending asynchronous events (a QP's
 * error, ...) now, as the engine does when their fd is readable. Engine
 * thread. */
void ndk_vad_async_drain(struct ndk_vadapter *v);

static inline struct ndk_vadapter *to_vad(const struct ndk_adapter *ad)
{
	return ad->priv;
}

/* A protection domain (pd.c): what its MRs and QPs are created on. */
struct ndk_vpd {
	struct ndk_obj obj;
	struct ibv_pd *pd;
};

static inline struct ndk_vpd *to_vpd(NDK_PD *pd)
{
	return container_of(pd, struct ndk_vpd, obj.pub.pd);
}

/* ---- device.c ------------------------------------------------------ */

int ndk_verbs_probe(NET_IFINDEX ifindex, const char *ifname);
int ndk_verbs_adapter_init(struct ndk_adapter *ad);
int ndk_verbs_adapter_start(struct ndk_adapter *ad);
void ndk_verbs_adapter_fini(struct ndk_adapter *ad);

/* ---- status.c: the one mapping of verbs errors (docs/verbs.md) ------ */

/* Where an errno came from, for the verbs calls that set one. */
enum ndk_verbs_site {
	NDK_VERBS_CREATE, /* ibv_create_*, ibv_alloc_pd, ibv_reg_mr */
	NDK_VERBS_POST, /* ibv_post_send, ibv_post_recv */
	NDK_VERBS_CM, /* rdma_bind_addr, rdma_listen, rdma_connect... */
	NDK_VERBS_CM_BIND, /* rdma_bind_addr, rdma_resolve_addr's bind */
};

NTSTATUS ndk_verbs_errno_status(int err, enum ndk_verbs_site site);
/* A failed work completion's NTSTATUS (docs/verbs.md, Completions). */
NTSTATUS ndk_verbs_wc_status(enum ibv_wc_status st);
/*
 * Why a connection attempt or connection ended, from the rdma_cm event
 * that says so and its status: the status of NdkConnect's or NdkAccept's
 * completion, or a disconnect event's reason (docs/verbs.md, Connection
 * management).
 */
NTSTATUS ndk_verbs_cm_status(enum rdma_cm_event_type event, int status,
			     bool iwarp);

#endif /* NDK_VERBS_VERBS_H */
