/* SPDX-License-Identifier: MIT */
/*
 * Listener over a listening rdma_cm id (docs/verbs.md, Connection
 * management; docs/ndk.md, Accepting).
 *
 * NdkListen reserves the endpoint in the front end's table (the ND port
 * rules are the same for both providers), binds an rdma_cm id to it and
 * listens. Each CONNECT_REQUEST becomes a connector handed to the
 * ConnectEvent on the engine thread; a paused or closing listener
 * rejects it at once, so the initiator's Connect is refused as if nobody
 * listened. The backlog is rdma_cm's (NDK_LISTEN_BACKLOG).
 */
#include <errno.h>
#include <string.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/socket.h>
#include "core/config.h"
#include "core/log.h"
#include "core/status.h"
#include "front/adapter.h"
#include "front/address.h"
#include "front/endpoint.h"
#include "front/listener.h"
#include "verbs/connector.h"
#include "verbs/listener.h"

struct ndk_obj *ndk_vlis_obj(struct ndk_vcm_ref *ref)
{
	return &container_of(ref, struct ndk_vlistener, ref)->lis.obj;
}

/* Lock held. */
static void vlis_destroy_id(struct ndk_vlistener *l)
{
	NDK_ASSERT_LOCKED(&l->lis.lock);
	if (!l->id)
		return;
	ndk_vcm_set_context(to_vad(l->lis.obj.adapter), l->id, NULL);
	rdma_destroy_id(l->id);
	l->id = NULL;
}

/* A request nobody takes: refused, its id gone. */
static void vlis_refuse(struct ndk_vadapter *v, struct rdma_cm_id *id)
{
	ndk_vcm_set_context(v, id, NULL);
	rdma_reject(id, NULL, 0);
	rdma_destroy_id(id);
}

static void vlis_request(struct ndk_vlistener *l, const struct ndk_vcm_event *e)
{
	struct ndk_endpoint *ep = NULL;
	struct ndk_vconn *c = NULL;

	ndk_lock(&l->lis.lock);
	/* A request that came through another device (a wildcard listener
	 * listens on all of them) cannot be accepted on our QPs. */
	if (ndk_listener_open_locked(&l->lis) &&
	    e->id->verbs == to_vad(l->lis.obj.adapter)->ctx) {
		ep = l->lis.ep;
		ndk_endpoint_get(ep);
	}
	ndk_unlock(&l->lis.lock);
	if (ep) {
		c = ndk_vconn_incoming(&l->lis.obj, ep, e);
		ndk_endpoint_put(ep);
	}
	if (!c) {
		vlis_refuse(to_vad(l->lis.obj.adapter), e->id);
		return;
	}
	/* No event once the close started: the request is refused by
	 * closing its connector. */
	if (!ndk_listener_deliver(&l->lis, ndk_vconn_pub(c)))
		ndk_obj_close_internal(to_ndk_obj(&ndk_vconn_pub(c)->Header));
}

void ndk_vlis_event(struct ndk_vcm_ref *ref, const struct ndk_vcm_event *e)
{
	struct ndk_vlistener *l = container_of(ref, struct ndk_vlistener, ref);

	if (e->type == RDMA_CM_EVENT_CONNECT_REQUEST) {
		vlis_request(l, e);
		return;
	}
	/* DEVICE_REMOVAL, ADDR_CHANGE: nothing the listener can act on. */
	ndk_info("verbs: listener %p: %s", (void *)l, rdma_event_str(e->type));
}

/* NdkListen's transport part (front/listener.c reserved ep; l->lock
 * held): a listening rdma_cm id on it. */
NTSTATUS ndk_verbs_listen(struct ndk_listener *lis, struct ndk_endpoint *ep)
{
	struct ndk_vlistener *l = container_of(lis, struct ndk_vlistener, lis);
	struct ndk_adapter *ad = l->lis.obj.adapter;
	const struct sockaddr *sa;
	socklen_t len;
	int fd;

	/*
	 * The table keeps the reservation; its TCP socket goes, since an
	 * iWARP device listens on that port with a kernel socket of its
	 * own, which a bound one of ours would block (docs/verbs.md,
	 * Endpoints).
	 */
	fd = ndk_endpoint_take_fd(ep);
	if (fd >= 0)
		close(fd);
	sa = ndk_endpoint_addr(ep, &len);
	if (rdma_create_id(to_vad(ad)->cm, &l->id, &l->ref, RDMA_PS_TCP))
		return ndk_verbs_errno_status(errno, NDK_VERBS_CM);
	if (rdma_bind_addr(l->id, (struct sockaddr *)sa) ||
	    rdma_listen(l->id, (int)ndk_config_u64("NDK_LISTEN_BACKLOG",
						   SOMAXCONN, 1, 65535))) {
		/* rdma_cm's port space: another process listens there. */
		NTSTATUS status =
			ndk_verbs_errno_status(errno, NDK_VERBS_CM_BIND);

		ndk_info("verbs: listener %p: rdma_bind_addr/listen: %s",
			 (void *)l, strerror(errno));
		vlis_destroy_id(l);
		return status;
	}
	return STATUS_SUCCESS;
}

/* The close began (l->lock held): the id goes now (connections it handed
 * out have their own ids). */
void ndk_verbs_listener_close(struct ndk_listener *lis)
{
	vlis_destroy_id(container_of(lis, struct ndk_vlistener, lis));
}

NTSTATUS ndk_verbs_listener_init(struct ndk_listener *lis)
{
	container_of(lis, struct ndk_vlistener, lis)->ref.kind =
		NDK_VCM_LISTENER;
	return STATUS_SUCCESS;
}
