/* SPDX-License-Identifier: MIT */
/* The verbs provider's listener: a listening rdma_cm id. */
#ifndef NDK_VERBS_LISTENER_H
#define NDK_VERBS_LISTENER_H

#include "front/listener.h"
#include "front/object.h"
#include "verbs/cm_event.h"

struct ndk_endpoint;

/* A listening rdma_cm id behind the front end's listener. */
struct ndk_vlistener {
	/* First: the consumer-visible part (front/listener.h); its lock
	 * covers the id too. */
	struct ndk_listener lis;
	struct ndk_vcm_ref ref; /* the id's context */
	struct rdma_cm_id *id;
};

/* The provider's listener ops (front/provider.h, front/listener.c). */
NTSTATUS ndk_verbs_listener_init(struct ndk_listener *l);
NTSTATUS ndk_verbs_listen(struct ndk_listener *l, struct ndk_endpoint *ep);
void ndk_verbs_listener_close(struct ndk_listener *l);

/* The cm channel's entry points for a listener's id (verbs/cm.c). */
struct ndk_obj *ndk_vlis_obj(struct ndk_vcm_ref *ref);
void ndk_vlis_event(struct ndk_vcm_ref *ref, const struct ndk_vcm_event *e);

#endif /* NDK_VERBS_LISTENER_H */
