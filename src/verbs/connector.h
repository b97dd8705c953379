/* SPDX-License-Identifier: MIT */
/*
 * The verbs provider's connector: NDK connection management over one
 * rdma_cm id (docs/verbs.md, Connection management).
 */
#ifndef NDK_VERBS_CONNECTOR_H
#define NDK_VERBS_CONNECTOR_H

#include "front/endpoint.h"
#include "front/object.h"
#include "verbs/cm_event.h"

struct ndk_vconn;

/* The connection operations (front/connector.h). */
extern const struct ndk_conn_ops ndk_vconn_ops;

NTSTATUS ndk_verbs_create_connector(NDK_ADAPTER *pNdkAdapter,
				    NDK_FN_CREATE_COMPLETION CreateCompletion,
				    PVOID RequestContext,
				    NDK_CONNECTOR **ppNdkConnector);

/*
 * A connection request that a listener hands out: a new connector in
 * REQUESTED, owning e->id, with the listener as its antecedent and a
 * reference on the listener's endpoint. NULL if it could not be made (the
 * id is still the caller's then).
 */
struct ndk_vconn *ndk_vconn_incoming(struct ndk_obj *listener,
				     struct ndk_endpoint *ep,
				     const struct ndk_vcm_event *e);
NDK_CONNECTOR *ndk_vconn_pub(struct ndk_vconn *c);

/* The cm channel's entry points for a connector's id (verbs/cm.c). */
struct ndk_obj *ndk_vconn_obj(struct ndk_vcm_ref *ref);
void ndk_vconn_event(struct ndk_vcm_ref *ref, const struct ndk_vcm_event *e);

#endif /* NDK_VERBS_CONNECTOR_H */
