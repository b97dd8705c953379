/* SPDX-License-Identifier: MIT */
/*
 * What an rdma_cm event carries to its object (verbs/cm.c reads the
 * adapter's event channel; docs/verbs.md, Connection management). Every rdma_cm id of the adapter (a listener's, a
 * connector's) has a struct ndk_vcm_ref as its context; the engine reads
 * each event, copies what the object needs, acknowledges it at once and
 * hands the copy to the object. Acknowledging before the object runs
 * means rdma_destroy_id never waits for the engine, so an object may
 * destroy its id under its own lock on any thread.
 */
#ifndef NDK_VERBS_CM_EVENT_H
#define NDK_VERBS_CM_EVENT_H

#include <stdint.h>
#include "verbs/verbs.h"

enum ndk_vcm_kind {
	NDK_VCM_CONNECTOR = 1,
	NDK_VCM_LISTENER,
};

/* An id's context: which object it belongs to. */
struct ndk_vcm_ref {
	enum ndk_vcm_kind kind;
};

/* MPA's and the IB CM's private data fit; rdma_cm's length is 8 bits. */
#define NDK_VCM_PD_MAX 256

/* What an rdma_cm event says, copied out before it is acknowledged. */
struct ndk_vcm_event {
	enum rdma_cm_event_type type;
	int status;
	/* CONNECT_REQUEST: the new id, ours from now on. */
	struct rdma_cm_id *id;
	/* param.conn, as rdma_cm reports it for the event's type. */
	uint8_t responder_resources, initiator_depth;
	uint8_t pd[NDK_VCM_PD_MAX];
	uint16_t pd_len;
};

#endif /* NDK_VERBS_CM_EVENT_H */
