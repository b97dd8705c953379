/* SPDX-License-Identifier: MIT */
/*
 * The seam between the NDK front end (src/front: adapter, object model,
 * close rules, endpoint table) and the providers that implement the
 * objects: the software iWARP provider (src/sw, with src/iwarp) and,
 * when rdma-core was found at build time, the verbs provider (src/verbs).
 * Each adapter has one provider, chosen at NdkOpenAdapter
 * (docs/design.md, Front end and provider); the front end reaches it only
 * through its struct ndk_provider_ops.
 */
#ifndef NDK_FRONT_PROVIDER_H
#define NDK_FRONT_PROVIDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <ndk/ndk.h>

struct ndk_adapter;
struct ndk_conn_ops;
struct ndk_cq;
struct ndk_endpoint;
struct ndk_listener;
struct ndk_mr;
struct ndk_obj;

/* NdkCreateCq's arguments, checked (front/cq.c). */
struct ndk_cq_attr {
	ULONG depth; /* 1..MaxCqDepth */
	NDK_FN_CQ_NOTIFICATION_CALLBACK notify; /* never NULL */
	PVOID notify_ctx;
	GROUP_AFFINITY *affinity; /* a hint, may be NULL */
};

/* NdkCreateSrq's arguments, checked (front/srq.c). */
struct ndk_srq_attr {
	ULONG depth; /* 1..MaxSrqDepth */
	ULONG max_sge; /* 1..MaxReceiveRequestSge */
	ULONG threshold; /* 0 (no notification)..depth */
	NDK_FN_SRQ_NOTIFICATION_CALLBACK notify;
	PVOID notify_ctx;
	GROUP_AFFINITY *affinity;
};

/* NdkCreateQp's and NdkCreateQpWithSrq's arguments, checked (front/qp.c):
 * the objects are of their type and on the PD's adapter. */
struct ndk_qp_attr {
	struct ndk_obj *rcq, *icq; /* CQs; may be the same one */
	struct ndk_obj *srq; /* NULL, or the SRQ: then rq_depth, rq_sge 0 */
	PVOID context;
	ULONG rq_depth, iq_depth; /* 1..Max{Receive,Initiator}QueueDepth */
	ULONG rq_sge; /* 1..MaxReceiveRequestSge */
	ULONG iq_sge; /* 0..MaxInitiatorRequestSge */
	ULONG inline_size; /* 0..MaxInlineDataSize */
};

struct ndk_provider_ops {
	/* What NDK_PROVIDER names it, and ndkinfo shows: "software". */
	const char *name;
	/*
	 * NULL if the provider can run in this process, else why not (the
	 * verbs provider: rdma-core could not be loaded); selection skips
	 * it then, and NdkQueryAdapterProvider's Reason says why. Called
	 * before probe. NULL hook: always runs.
	 */
	const char *(*unavailable)(void);
	/*
	 * 0 if the provider can serve the interface, -ENODEV if not (auto
	 * selection then tries the next one), another negative errno if it
	 * could not tell. NULL: serves every interface.
	 */
	int (*probe)(NET_IFINDEX ifindex, const char *ifname);
	/*
	 * The provider's adapter-wide state, set up after the adapter's own
	 * fields (ifindex, ifname, Version in info) and before its engine
	 * starts: fills ad->info (every member but Version), ad->device and
	 * ad->priv. Returns 0 or a negative errno. fini takes a partly set
	 * up adapter too, and runs after the engine stopped.
	 */
	int (*adapter_init)(struct ndk_adapter *ad);
	void (*adapter_fini)(struct ndk_adapter *ad);
	/*
	 * The engine runs: the provider registers its descriptors with it
	 * (they stay registered until the engine stops). 0 or a negative
	 * errno. NULL: nothing to do.
	 */
	int (*adapter_start)(struct ndk_adapter *ad);

	/*
	 * Creates. The front end owns every dispatch slot a consumer calls
	 * to create an object (front/cq.c, pd.c, qp.c, srq.c, mr.c, mw.c):
	 * it checks the arguments against NDK's rules and NDK_ADAPTER_INFO,
	 * so a provider's create is called only with arguments it may
	 * trust, and the two providers cannot disagree on what is refused.
	 * pd is the provider's PD object (struct ndk_obj first). Each
	 * returns an NTSTATUS and, on success, the new object in *out.
	 */
	NTSTATUS(*create_cq)
	(struct ndk_adapter *ad, const struct ndk_cq_attr *attr, NDK_CQ **out);
	/*
	 * A CQ made by create_cq embeds struct ndk_cq (front/cq.h), whose
	 * dispatch table calls these: cq_poll takes up to max results
	 * (max > 0) in order, making progress first if the CQ is empty;
	 * cq_arm gets a valid type; cq_resize a depth within MaxCqDepth on
	 * an adapter that announces resizing; cq_moderation runs only on
	 * one that announces moderation (NULL: none).
	 */
	ULONG (*cq_poll)(struct ndk_cq *cq, NDK_RESULT_EX *out, ULONG max);
	void (*cq_arm)(struct ndk_cq *cq, ULONG type);
	NTSTATUS (*cq_resize)(struct ndk_cq *cq, ULONG depth);
	NTSTATUS(*cq_moderation)
	(struct ndk_cq *cq, ULONG interval, ULONG count);
	NTSTATUS(*create_mr)
	(struct ndk_obj *pd, bool fast_register, NDK_MR **out);
	/*
	 * An MR made by create_mr embeds struct ndk_mr (front/mr.h), whose
	 * dispatch table calls these with mr->lock held (mr_token without)
	 * once the call and the MR's state passed the front end's checks:
	 * register [va, va + len) with the access bits (front/mr.h);
	 * deregister (a fast-register MR's registration too), returning once
	 * no access to the memory is in flight; make a fast-register MR
	 * ready for count pages, dropping its current registration.
	 */
	NTSTATUS(*mr_register)
	(struct ndk_mr *mr, uint64_t va, uint64_t len, unsigned int access);
	void (*mr_deregister)(struct ndk_mr *mr);
	NTSTATUS (*mr_fr_init)(struct ndk_mr *mr, ULONG count);
	UINT32 (*mr_token)(struct ndk_mr *mr, bool remote);
	/* NULL when the adapter announces no windows (MaxWindowSize 0);
	 * the front end refuses NdkCreateMw with STATUS_NOT_SUPPORTED. */
	NTSTATUS (*create_mw)(struct ndk_obj *pd, NDK_MW **out);
	/* NdkGetRemoteTokenFromMw: a window made by create_mw, which gives
	 * it front/pd.h's ndk_mw_dispatch. */
	UINT32 (*mw_token)(struct ndk_obj *mw);
	NTSTATUS(*create_srq)
	(struct ndk_obj *pd, const struct ndk_srq_attr *attr, NDK_SRQ **out);
	NTSTATUS(*create_qp)
	(struct ndk_obj *pd, const struct ndk_qp_attr *attr, NDK_QP **out);

	/*
	 * The PD is the front end's object (front/pd.c) with the
	 * provider's state behind it: pd_size bytes, struct ndk_obj first,
	 * zeroed; pd_init sets up the provider's part (an NTSTATUS),
	 * pd_fini releases it (also after a pd_init that failed half way;
	 * NULL: nothing to release).
	 * privileged_token is NdkGetPrivilegedMemoryRegionToken's answer.
	 */
	size_t pd_size;
	NTSTATUS (*pd_init)(struct ndk_obj *pd);
	void (*pd_fini)(struct ndk_obj *pd);
	UINT32 privileged_token;

	/* The remaining slots of the adapter's dispatch table. */
	NDK_FN_CREATE_SHARED_ENDPOINT create_shared_endpoint;
	NDK_FN_CREATE_CONNECTOR create_connector;
	/* What a connector does on the wire, once its dispatch table
	 * (front/connector.c, ndk_conn_dispatch) checked the call. */
	const struct ndk_conn_ops *conn;
	/*
	 * The listener is front/listener.c's object with the provider's
	 * state behind it: listener_size bytes, struct ndk_listener first,
	 * zeroed. listener_init sets up the provider's part (an NTSTATUS;
	 * listener_fini, if any, runs after a failed one too); listen starts
	 * listening on the endpoint NdkListen reserved (on failure the front
	 * end drops the reservation); listener_close stops taking requests
	 * once the close begins. listen and listener_close run with l->lock
	 * held.
	 */
	size_t listener_size;
	NTSTATUS (*listener_init)(struct ndk_listener *l);
	NTSTATUS (*listen)(struct ndk_listener *l, struct ndk_endpoint *ep);
	void (*listener_close)(struct ndk_listener *l);
	void (*listener_fini)(struct ndk_listener *l);
	/* A LAM was released (front/lam.c): what the provider kept with
	 * its range (priv, not NULL) goes. NULL: nothing is kept. */
	void (*lam_released)(struct ndk_adapter *ad, void *priv);
};

/* The providers linked in (front/provider.c lists them in the order auto
 * selection tries them). */
extern const struct ndk_provider_ops ndk_software_provider;
#ifdef NDK_HAVE_VERBS
extern const struct ndk_provider_ops ndk_verbs_provider;
#endif

/*
 * The provider for an interface, following NDK_PROVIDER: "auto" (or
 * unset) takes the first provider whose probe accepts the interface (the
 * verbs provider when an RDMA device serves it, else the software one);
 * "software" or "verbs" takes that one if it serves the interface.
 * Returns 0, or -ENODEV when the provider named does not exist in this
 * build, cannot run or does not serve the interface, -EINVAL for an
 * unknown name. why (why_size bytes) gets why the provider chosen is not
 * the first one auto selection tries ("" when it is): what
 * NdkQueryAdapterProvider reports as Reason.
 */
#define NDK_PROVIDER_REASON_MAX 128 /* NDK_PROVIDER_INFO's Reason */
int ndk_provider_select(NET_IFINDEX ifindex, const char *ifname,
			const struct ndk_provider_ops **out, char *why,
			size_t why_size);

#endif /* NDK_FRONT_PROVIDER_H */
