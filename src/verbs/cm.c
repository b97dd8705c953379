/* SPDX-License-Identifier: MIT */
/*
 * The adapter's rdma_cm event channel on the engine (verbs/cm_event.h):
 * each event goes to the listener or connector its id belongs to.
 */
#include <errno.h>
#include <string.h>
#include "core/log.h"
#include "verbs/cm.h"
#include "verbs/connector.h"
#include "verbs/listener.h"
#include "verbs/verbs.h"

static struct ndk_obj *ref_obj(struct ndk_vcm_ref *ref)
{
	return ref->kind == NDK_VCM_LISTENER ? ndk_vlis_obj(ref)
					     : ndk_vconn_obj(ref);
}

static void copy_event(const struct rdma_cm_event *ev, struct ndk_vcm_event *e)
{
	const struct rdma_conn_param *p = &ev->param.conn;

	memset(e, 0, sizeof(*e));
	e->type = ev->event;
	e->status = ev->status;
	if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST)
		e->id = ev->id;
	e->responder_resources = p->responder_resources;
	e->initiator_depth = p->initiator_depth;
	/* private_data_len is a uint8_t: it always fits. */
	_Static_assert(NDK_VCM_PD_MAX > UINT8_MAX, "pd holds any length");
	if (p->private_data && p->private_data_len) {
		e->pd_len = p->private_data_len;
		memcpy(e->pd, p->private_data, e->pd_len);
	}
}

void ndk_verbs_cm_event(struct ndk_io *io, uint32_t events)
{
	struct ndk_vadapter *v = container_of(io, struct ndk_vadapter, cm_io);
	unsigned int n;

	for (n = 0; n < 64; n++) {
		struct rdma_cm_event *ev;
		struct ndk_vcm_event e;
		struct ndk_vcm_ref *ref;
		struct ndk_obj *obj = NULL;

		if (rdma_get_cm_event(v->cm, &ev))
			break; /* EAGAIN: the channel is empty */
		copy_event(ev, &e);
		/*
		 * The object, if it still holds the id, is kept by our
		 * reference; one whose last reference is gone is being
		 * destroyed, and once its destroy cleared the context
		 * (ndk_vcm_set_context) may be freed at any time.
		 */
		ndk_lock(&v->cm_ref_lock);
		ref = ev->event == RDMA_CM_EVENT_CONNECT_REQUEST
			      ? ev->listen_id->context
			      : ev->id->context;
		if (ref) {
			obj = ref_obj(ref);
			if (!ndk_obj_tryget(obj))
				ref = NULL;
		}
		ndk_unlock(&v->cm_ref_lock);
		rdma_ack_cm_event(ev);
		if (!ref) {
			/* Its object let go of the id already. */
			ndk_dbg("verbs: %s for an id nobody owns",
				rdma_event_str(e.type));
			if (e.id)
				rdma_destroy_id(e.id);
			continue;
		}
		if (ref->kind == NDK_VCM_LISTENER)
			ndk_vlis_event(ref, &e);
		else
			ndk_vconn_event(ref, &e);
		ndk_obj_put(obj);
	}
}
