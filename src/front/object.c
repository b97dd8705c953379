/* SPDX-License-Identifier: MIT */
/* Object headers, references, antecedent links and the close protocol. */
#include <errno.h>
#include <string.h>
#include "core/log.h"
#include "front/object.h"

static const char *const obj_state_names[NDK_OBJ_STATE_COUNT] = {
	[NDK_OBJ_OPEN] = "OPEN",
	[NDK_OBJ_CLOSING] = "CLOSING",
	[NDK_OBJ_CLOSED] = "CLOSED",
};

const char *ndk_obj_state_name(enum ndk_obj_state state)
{
	if ((unsigned int)state >= NDK_OBJ_STATE_COUNT)
		return "?";
	return obj_state_names[state];
}

/* The one setter for the close state machine; adapter lock held. */
static void obj_set_state(struct ndk_obj *obj, enum ndk_obj_state state,
			  int line)
{
	ndk_dbg("%s %p: %s -> %s (object.c:%d)", obj->ops->name, (void *)obj,
		ndk_obj_state_name(obj->state), ndk_obj_state_name(state),
		line);
	obj->state = state;
}
#define set_state(obj, s) obj_set_state(obj, s, __LINE__)

static void close_work_fn(struct ndk_work *w);

int ndk_obj_init(struct ndk_obj *obj, struct ndk_adapter *ad,
		 struct ndk_obj_domain *dom, const struct ndk_obj_ops *ops,
		 const void *dispatch)
{
	memset(&obj->pub, 0, sizeof(obj->pub));
	obj->pub.Header.Version = dom->version;
	obj->pub.Header.ObjectType = ops->type;
	/* Every public object type is { Header, Dispatch }. */
	obj->pub.adapter.Dispatch = dispatch;
	obj->ops = ops;
	obj->adapter = ad;
	obj->domain = dom;
	atomic_init(&obj->refs, 1);
	obj->state = NDK_OBJ_OPEN;
	obj->successors = 0;
	obj->busy = 0;
	obj->finishing = false;
	obj->close_internal = false;
	memset(obj->antecedents, 0, sizeof(obj->antecedents));
	obj->close_cb = NULL;
	obj->close_ctx = NULL;
	ndk_work_init(&obj->close_work, close_work_fn);
	list_init(&obj->entry);
	if (ops->type == NdkObjectTypeAdapter)
		return 0;

	ndk_lock(&dom->lock);
	if (dom->closing) {
		ndk_unlock(&dom->lock);
		return -ESHUTDOWN;
	}
	list_add_tail(&obj->entry, &dom->objects);
	dom->live++;
	ndk_unlock(&dom->lock);
	return 0;
}

void ndk_obj_abandon(struct ndk_obj *obj)
{
	unsigned int i;

	for (i = 0; i < NDK_OBJ_MAX_ANTECEDENTS; i++)
		if (obj->antecedents[i])
			ndk_obj_unlink(obj, obj->antecedents[i]);
	ndk_obj_put(obj);
}

void ndk_obj_get(struct ndk_obj *obj)
{
	atomic_fetch_add_explicit(&obj->refs, 1, memory_order_relaxed);
}

bool ndk_obj_tryget(struct ndk_obj *obj)
{
	unsigned int n = atomic_load_explicit(&obj->refs, memory_order_relaxed);

	do {
		if (!n)
			return false;
	} while (!atomic_compare_exchange_weak_explicit(&obj->refs, &n, n + 1,
							memory_order_acquire,
							memory_order_relaxed));
	return true;
}

void ndk_obj_put(struct ndk_obj *obj)
{
	if (atomic_fetch_sub_explicit(&obj->refs, 1, memory_order_acq_rel) != 1)
		return;
	if (obj->ops->type != NdkObjectTypeAdapter) {
		/* Unregister last so NdkCloseAdapter waits for destroy. */
		struct ndk_obj_domain *dom = obj->domain;

		ndk_lock(&dom->lock);
		list_del(&obj->entry);
		ndk_unlock(&dom->lock);
		obj->ops->destroy(obj);
		ndk_lock(&dom->lock);
		dom->live--;
		ndk_cond_broadcast(&dom->cond);
		ndk_unlock(&dom->lock);
		return;
	}
	obj->ops->destroy(obj);
}

/* Adapter lock held. */
static bool close_can_finish(const struct ndk_obj *obj)
{
	return obj->state == NDK_OBJ_CLOSING && !obj->finishing &&
	       obj->successors == 0 && obj->busy == 0;
}

/* Adapter lock held: hand a finishable close to the engine thread. */
static void close_kick_locked(struct ndk_obj *obj)
{
	NDK_ASSERT_LOCKED(&obj->domain->lock);
	if (!close_can_finish(obj))
		return;
	obj->finishing = true;
	ndk_engine_post(obj->domain->engine, &obj->close_work);
}

/*
 * Releases the object's resources, then drops every antecedent link and
 * the consumer's reference: an antecedent's close cannot complete while
 * a successor still holds what it gave it (a verbs QP keeps its PD and
 * CQs busy until it is destroyed).
 */
static void close_finish(struct ndk_obj *obj)
{
	unsigned int i;

	if (obj->ops->close_end)
		obj->ops->close_end(obj);
	for (i = 0; i < NDK_OBJ_MAX_ANTECEDENTS; i++)
		if (obj->antecedents[i])
			ndk_obj_unlink(obj, obj->antecedents[i]);
	ndk_obj_put(obj);
}

static void close_work_fn(struct ndk_work *w)
{
	struct ndk_obj *obj = container_of(w, struct ndk_obj, close_work);
	struct ndk_obj_domain *dom = obj->domain;
	NDK_FN_CLOSE_COMPLETION cb = obj->close_cb;

	/* CloseCompletion is the object's last callback. */
	if (cb && !obj->close_internal)
		cb(obj->close_ctx);
	ndk_lock(&dom->lock);
	set_state(obj, NDK_OBJ_CLOSED);
	ndk_unlock(&dom->lock);
	close_finish(obj);
}

int ndk_obj_link(struct ndk_obj *succ, struct ndk_obj *ante)
{
	struct ndk_obj_domain *dom = succ->domain;
	unsigned int i, slot = NDK_OBJ_MAX_ANTECEDENTS;
	int ret = 0;

	if (!ante || ante->domain != dom)
		return -EINVAL;
	ndk_lock(&dom->lock);
	if (ante->state != NDK_OBJ_OPEN) {
		ret = -EINVAL;
		goto out;
	}
	for (i = 0; i < NDK_OBJ_MAX_ANTECEDENTS; i++) {
		if (succ->antecedents[i] == ante) {
			ret = -EEXIST;
			goto out;
		}
		if (!succ->antecedents[i] && slot == NDK_OBJ_MAX_ANTECEDENTS)
			slot = i;
	}
	if (slot == NDK_OBJ_MAX_ANTECEDENTS) {
		ret = -ENOSPC;
		goto out;
	}
	succ->antecedents[slot] = ante;
	ante->successors++;
	ndk_obj_get(ante);
out:
	ndk_unlock(&dom->lock);
	return ret;
}

void ndk_obj_unlink(struct ndk_obj *succ, struct ndk_obj *ante)
{
	struct ndk_obj_domain *dom = succ->domain;
	unsigned int i;
	bool found = false;

	ndk_lock(&dom->lock);
	for (i = 0; i < NDK_OBJ_MAX_ANTECEDENTS; i++) {
		if (succ->antecedents[i] == ante) {
			succ->antecedents[i] = NULL;
			found = true;
			break;
		}
	}
	if (found) {
		ante->successors--;
		close_kick_locked(ante);
	}
	ndk_unlock(&dom->lock);
	if (found)
		ndk_obj_put(ante);
}

bool ndk_obj_is_linked(struct ndk_obj *succ, struct ndk_obj *ante)
{
	struct ndk_obj_domain *dom = succ->domain;
	unsigned int i;
	bool found = false;

	ndk_lock(&dom->lock);
	for (i = 0; i < NDK_OBJ_MAX_ANTECEDENTS; i++)
		if (succ->antecedents[i] == ante)
			found = true;
	ndk_unlock(&dom->lock);
	return found;
}

bool ndk_obj_is_open(struct ndk_obj *obj)
{
	struct ndk_obj_domain *dom = obj->domain;
	bool open;

	ndk_lock(&dom->lock);
	open = obj->state == NDK_OBJ_OPEN;
	ndk_unlock(&dom->lock);
	return open;
}

static NTSTATUS obj_close(struct ndk_obj *obj, NDK_FN_CLOSE_COMPLETION cb,
			  PVOID ctx, bool internal)
{
	struct ndk_obj_domain *dom = obj->domain;
	bool inline_done = false;

	ndk_lock(&dom->lock);
	if (obj->state != NDK_OBJ_OPEN) {
		/* A second close is a consumer bug; the first one stands.
		 * The provider's own closes may race with it: no noise. */
		ndk_unlock(&dom->lock);
		if (!internal)
			ndk_warn("%s %p closed twice", obj->ops->name,
				 (void *)obj);
		return STATUS_INVALID_DEVICE_STATE;
	}
	set_state(obj, NDK_OBJ_CLOSING);
	obj->close_cb = cb;
	obj->close_ctx = ctx;
	obj->close_internal = internal;
	/* Keep the close from finishing while close_begin runs. */
	obj->busy++;
	ndk_unlock(&dom->lock);

	if (obj->ops->close_begin)
		obj->ops->close_begin(obj);

	ndk_lock(&dom->lock);
	obj->busy--;
	if (close_can_finish(obj)) {
		/* Nothing to wait for: close inline, no callback. */
		obj->finishing = true;
		set_state(obj, NDK_OBJ_CLOSED);
		inline_done = true;
	}
	ndk_unlock(&dom->lock);

	if (inline_done) {
		close_finish(obj);
		return STATUS_SUCCESS;
	}
	return STATUS_PENDING;
}

NTSTATUS ndk_obj_close(struct ndk_obj *obj, NDK_FN_CLOSE_COMPLETION cb,
		       PVOID ctx)
{
	return obj_close(obj, cb, ctx, false);
}

void ndk_obj_close_internal(struct ndk_obj *obj)
{
	(void)obj_close(obj, NULL, NULL, true);
}

void ndk_obj_hold(struct ndk_obj *obj)
{
	struct ndk_obj_domain *dom = obj->domain;

	ndk_lock(&dom->lock);
	obj->busy++;
	ndk_unlock(&dom->lock);
}

void ndk_obj_release(struct ndk_obj *obj)
{
	struct ndk_obj_domain *dom = obj->domain;

	ndk_lock(&dom->lock);
	obj->busy--;
	close_kick_locked(obj);
	ndk_unlock(&dom->lock);
}

bool ndk_obj_begin_event(struct ndk_obj *obj)
{
	struct ndk_obj_domain *dom = obj->domain;
	bool ok;

	ndk_lock(&dom->lock);
	ok = obj->state == NDK_OBJ_OPEN;
	if (ok)
		obj->busy++;
	ndk_unlock(&dom->lock);
	return ok;
}

void ndk_obj_disconnect_event(struct ndk_obj *obj,
			      NDK_FN_DISCONNECT_EVENT_CALLBACK cb,
			      NDK_FN_DISCONNECT_EVENT_CALLBACK_EX cb_ex,
			      PVOID ctx, NTSTATUS reason)
{
	if (!ndk_obj_begin_event(obj))
		return;
	if (cb_ex)
		cb_ex(ctx, (ULONG)reason);
	else if (cb)
		cb(ctx);
	ndk_obj_release(obj);
}

static void req_work_fn(struct ndk_work *w)
{
	struct ndk_req *r = container_of(w, struct ndk_req, work);
	struct ndk_obj *obj = r->obj;

	if (r->cb)
		r->cb(r->ctx, r->status);
	ndk_obj_release(obj);
}

void ndk_req_pend(struct ndk_req *r, struct ndk_obj *obj,
		  NDK_FN_REQUEST_COMPLETION cb, PVOID ctx)
{
	ndk_work_init(&r->work, req_work_fn);
	r->obj = obj;
	r->cb = cb;
	r->ctx = ctx;
	r->status = STATUS_PENDING;
	ndk_obj_hold(obj);
	atomic_store(&r->pending, true);
}

bool ndk_req_complete(struct ndk_req *r, NTSTATUS status)
{
	if (!atomic_exchange(&r->pending, false))
		return false;
	r->status = status;
	ndk_engine_post(r->obj->domain->engine, &r->work);
	return true;
}

void ndk_req_withdraw(struct ndk_req *r)
{
	if (atomic_exchange(&r->pending, false))
		ndk_obj_release(r->obj);
}

NTSTATUS ndk_query_extension(NDK_OBJECT_HEADER *pNdkObject,
			     GUID *ExtensionInterfaceID,
			     NDK_VERSION ExtensionInterfaceVersion,
			     NDK_EXTENSION_INTERFACE *pExtensionInterface)
{
	/* No extension interface exists (NDK_FN_QUERY_EXTENSION_INTERFACE). */
	return STATUS_NOT_SUPPORTED;
}

NTSTATUS ndk_close_object(NDK_OBJECT_HEADER *pNdkObject,
			  NDK_FN_CLOSE_COMPLETION CloseCompletion,
			  PVOID RequestContext)
{
	if (!pNdkObject)
		return STATUS_INVALID_PARAMETER;
	return ndk_obj_close(to_ndk_obj(pNdkObject), CloseCompletion,
			     RequestContext);
}

struct ndk_obj *ndk_obj_typed(NDK_OBJECT_HEADER *hdr, NDK_OBJECT_TYPE type,
			      struct ndk_adapter *ad)
{
	struct ndk_obj *obj;

	if (!hdr || hdr->ObjectType != type)
		return NULL;
	obj = to_ndk_obj(hdr);
	if (obj->adapter != ad || obj->ops->type != type)
		return NULL;
	return obj;
}

NTSTATUS ndk_obj_setup(struct ndk_obj *obj, struct ndk_adapter *ad,
		       const struct ndk_obj_ops *ops, const void *dispatch,
		       struct ndk_obj *const antes[], unsigned int n)
{
	unsigned int i;

	if (!n || ndk_obj_init(obj, ad, antes[0]->domain, ops, dispatch)) {
		ops->destroy(obj);
		return STATUS_INVALID_DEVICE_STATE;
	}
	for (i = 0; i < n; i++) {
		if (ndk_obj_link(obj, antes[i])) {
			ndk_obj_abandon(obj);
			return STATUS_INVALID_PARAMETER;
		}
	}
	return STATUS_SUCCESS;
}
