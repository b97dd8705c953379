/* SPDX-License-Identifier: MIT */
/*
 * The NDK object model (NDKPI Object Lifetime Requirements; docs/ndk.md,
 * Close rules; docs/design.md, Objects and ownership).
 *
 * Every provider object embeds struct ndk_obj first; its first member is
 * the consumer-visible { Header, Dispatch } pair, so the private object is
 * found from the public pointer with container_of and never via Dispatch
 * (the consumer may overwrite Dispatch).
 *
 * Lifetime: refs counts memory references (the consumer's, antecedent
 * links held by successors, in-flight work). The close state machine,
 * successor counts and busy counts are protected by the adapter's lock.
 *
 * Close rules (NDK "object lifetime requirements"):
 *  - closing an object with live successors, pending requests or running
 *    callbacks returns STATUS_PENDING; the close completes once all of them
 *    are gone, and its CloseCompletion is the object's last callback;
 *  - a successor keeps its antecedents linked until its own close
 *    completion has returned, so an antecedent's close cannot complete
 *    while a successor's close completion is still running.
 */
#ifndef NDK_FRONT_OBJECT_H
#define NDK_FRONT_OBJECT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <ndk/ndk.h>
#include "core/lock.h"
#include "core/list.h"
#include "engine/engine.h"

struct ndk_adapter;
struct ndk_obj;

/*
 * The objects of one adapter: the registry that the close rules and
 * NdkCloseAdapter walk, and the engine that runs their callbacks. The
 * adapter owns one; every object points at its adapter's.
 */
struct ndk_obj_domain {
	struct ndk_lock lock; /* the registry and every object's close state */
	struct ndk_cond cond; /* signalled when live drops */
	struct list_head objects;
	unsigned int live; /* registered objects not yet destroyed */
	bool closing;
	NDK_VERSION version; /* the adapter's negotiated version */
	struct ndk_engine *engine;
};

enum ndk_obj_state {
	NDK_OBJ_OPEN,
	NDK_OBJ_CLOSING, /* close requested, waiting for successors/busy */
	NDK_OBJ_CLOSED, /* close completed; memory lives until refs drop */
	NDK_OBJ_STATE_COUNT
};

struct ndk_obj_ops {
	NDK_OBJECT_TYPE type;
	const char *name;
	/*
	 * Close requested: stop event sources and cancel pending requests.
	 * Called once, without the adapter lock, on the closing thread.
	 * Optional.
	 */
	void (*close_begin)(struct ndk_obj *obj);
	/* Close completed, all links dropped: release resources. Optional. */
	void (*close_end)(struct ndk_obj *obj);
	/* Last reference gone: free the memory. Required. */
	void (*destroy)(struct ndk_obj *obj);
};

union ndk_pub {
	NDK_OBJECT_HEADER Header;
	NDK_ADAPTER adapter;
	NDK_CQ cq;
	NDK_PD pd;
	NDK_MR mr;
	NDK_MW mw;
	NDK_SRQ srq;
	NDK_QP qp;
	NDK_CONNECTOR connector;
	NDK_LISTENER listener;
	NDK_SHARED_ENDPOINT sep;
};

#define NDK_OBJ_MAX_ANTECEDENTS 4

struct ndk_obj {
	union ndk_pub pub; /* consumer-visible; must stay first */
	const struct ndk_obj_ops *ops;
	struct ndk_adapter *adapter;
	struct ndk_obj_domain *domain; /* its adapter's */
	struct list_head entry; /* domain->objects, under domain->lock */
	atomic_uint refs;

	/* Under domain->lock. */
	enum ndk_obj_state state;
	unsigned int successors;
	unsigned int busy; /* running callbacks and pending requests */
	bool finishing; /* close completion posted */
	bool close_internal; /* closed by NdkCloseAdapter: no callback */
	struct ndk_obj *antecedents[NDK_OBJ_MAX_ANTECEDENTS];
	NDK_FN_CLOSE_COMPLETION close_cb;
	PVOID close_ctx;
	struct ndk_work close_work;
};

static inline struct ndk_obj *to_ndk_obj(NDK_OBJECT_HEADER *hdr)
{
	return container_of(hdr, struct ndk_obj, pub.Header);
}

/*
 * Fills the consumer-visible header (negotiated version, type, reserved
 * block zeroed) and Dispatch, takes the consumer's reference and registers
 * the object with its adapter. Returns -ESHUTDOWN if the adapter is closing.
 */
int ndk_obj_init(struct ndk_obj *obj, struct ndk_adapter *ad,
		 struct ndk_obj_domain *domain, const struct ndk_obj_ops *ops,
		 const void *dispatch);
/* Undoes ndk_obj_init for an object that was never handed out. */
void ndk_obj_abandon(struct ndk_obj *obj);

void ndk_obj_get(struct ndk_obj *obj);
/* A reference unless the last one is gone (the object is being
 * destroyed): for a thread that found obj through a pointer its owner
 * clears under a lock the finder also holds (verbs/cm.c). */
bool ndk_obj_tryget(struct ndk_obj *obj);
void ndk_obj_put(struct ndk_obj *obj);

/*
 * Makes ante an antecedent of succ until succ's close completes (or
 * ndk_obj_unlink). Returns -EINVAL if ante is NULL or not open, -ENOSPC if
 * succ has no free antecedent slot, -EEXIST if already linked.
 */
int ndk_obj_link(struct ndk_obj *succ, struct ndk_obj *ante);
void ndk_obj_unlink(struct ndk_obj *succ, struct ndk_obj *ante);
bool ndk_obj_is_linked(struct ndk_obj *succ, struct ndk_obj *ante);

/* NDK_FN_CLOSE_OBJECT for any object. */
NTSTATUS ndk_obj_close(struct ndk_obj *obj, NDK_FN_CLOSE_COMPLETION cb,
		       PVOID ctx);
/* Close without a completion callback (adapter teardown). */
void ndk_obj_close_internal(struct ndk_obj *obj);
bool ndk_obj_is_open(struct ndk_obj *obj);
const char *ndk_obj_state_name(enum ndk_obj_state state);

/*
 * Busy accounting. ndk_obj_hold marks a pending request or a callback
 * about to run; ndk_obj_release ends it and completes a pending close when
 * it was the last thing the close waited for.
 * ndk_obj_begin_event holds only while the object is OPEN: event callbacks
 * (connect, disconnect, CQ and SRQ notifications) stop once close starts.
 */
void ndk_obj_hold(struct ndk_obj *obj);
void ndk_obj_release(struct ndk_obj *obj);
bool ndk_obj_begin_event(struct ndk_obj *obj);

/* A connector's disconnect event, for every provider: the Ex form when the
 * consumer gave one, and none once the connector's close has begun. */
void ndk_obj_disconnect_event(struct ndk_obj *obj,
			      NDK_FN_DISCONNECT_EVENT_CALLBACK cb,
			      NDK_FN_DISCONNECT_EVENT_CALLBACK_EX cb_ex,
			      PVOID ctx, NTSTATUS reason);

/*
 * A request that returned STATUS_PENDING. Embed one per operation that can
 * pend, so completing it never needs to allocate.
 */
struct ndk_req {
	struct ndk_work work;
	struct ndk_obj *obj;
	NDK_FN_REQUEST_COMPLETION cb;
	PVOID ctx;
	NTSTATUS status;
	atomic_bool pending;
};

/*
 * Marks r pending on obj (holds obj). A request is pended again only after
 * its previous completion has run: its work item is re-initialised here.
 */
void ndk_req_pend(struct ndk_req *r, struct ndk_obj *obj,
		  NDK_FN_REQUEST_COMPLETION cb, PVOID ctx);
/*
 * Completes a pending request exactly once: the callback runs on the engine
 * thread, then the hold is released. Returns false if r was not pending,
 * so racing completers (a reply and a timeout) complete it only once.
 */
bool ndk_req_complete(struct ndk_req *r, NTSTATUS status);
/*
 * Withdraws a request marked pending that then failed inline: no callback
 * will run (only a STATUS_PENDING return obliges one,
 * NDK_FN_REQUEST_COMPLETION).
 */
void ndk_req_withdraw(struct ndk_req *r);

/*
 * The object behind a header a consumer passed where an object of type
 * belongs (a QP's CQs, its SRQ): NULL unless hdr is an object of that
 * type on adapter ad (one that is closing fails later, when it is linked).
 */
struct ndk_obj *ndk_obj_typed(NDK_OBJECT_HEADER *hdr, NDK_OBJECT_TYPE type,
			      struct ndk_adapter *ad);

/* NDK_FN_QUERY_EXTENSION_INTERFACE: no extensions exist. */
NTSTATUS ndk_query_extension(NDK_OBJECT_HEADER *pNdkObject,
			     GUID *ExtensionInterfaceID,
			     NDK_VERSION ExtensionInterfaceVersion,
			     NDK_EXTENSION_INTERFACE *pExtensionInterface);
/* NDK_FN_CLOSE_OBJECT for every object type (type hooks are in ops). */
NTSTATUS ndk_close_object(NDK_OBJECT_HEADER *pNdkObject,
			  NDK_FN_CLOSE_COMPLETION CloseCompletion,
			  PVOID RequestContext);

/*
 * Common tail of every create function: ndk_obj_init (in the domain of
 * antes[0]; n >= 1) plus a link to each antecedent in antes[0..n). On failure the object is released through
 * ops->destroy (which must cope with a partly built object) and the
 * NTSTATUS to return inline is given back.
 */
NTSTATUS ndk_obj_setup(struct ndk_obj *obj, struct ndk_adapter *ad,
		       const struct ndk_obj_ops *ops, const void *dispatch,
		       struct ndk_obj *const antes[], unsigned int n);

#endif /* NDK_FRONT_OBJECT_H */
