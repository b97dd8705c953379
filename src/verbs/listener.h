/* SPDX-License-Identifier: MIT */
/* The verbs provider's listener: a listening rdma_cm id. */
#ifndef NDK_VERBS_LISTENER_H
#define NDK_VERBS_LISTENER_H

#include "front/object.h"
#include "verbs/cm_event.h"

struct ndk_adapter;
struct ndk_endpoint;
struct ndk_listener;

/* The provider's listener ops (front/provider.h, front/listener.c). */
NTSTATUS ndk_verbs_create_listener(struct ndk_adapter *ad,
				   NDK_FN_CONNECT_EVENT_CALLBACK ConnectEvent,
				   PVOID ConnectEventContext,
				   NDK_LISTENER **ppNdkListener);
NTSTATUS ndk_verbs_listen(struct ndk_listener *l, struct ndk_endpoint *ep);

/* The cm channel's entry points for a listener's id (verbs/cm.c). */
struct ndk_obj *ndk_vlis_obj(struct ndk_vcm_ref *ref);
void ndk_vlis_event(struct ndk_vcm_ref *ref, const struct ndk_vcm_event *e);

#endif /* NDK_VERBS_LISTENER_H */
