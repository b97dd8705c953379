/* SPDX-License-Identifier: MIT */
/*
 * The seam between the NDK front end (src/front: adapter, object model,
 * close rules, endpoint table) and the providers that implement the
 * objects: the software iWARP provider (src/qp, src/cm, src/iwarp) and,
 * when rdma-core was found at build time, the verbs provider (src/verbs).
 * Each adapter has one provider, chosen at NdkOpenAdapter
 * (docs/design.md, Front end and provider); the front end reaches it only
 * through its struct ndk_provider_ops.
 */
#ifndef NDK_FRONT_PROVIDER_H
#define NDK_FRONT_PROVIDER_H

#include <ndk/ndk.h>

struct ndk_adapter;

struct ndk_provider_ops {
	/* What NDK_PROVIDER names it, and ndkinfo shows: "software". */
	const char *name;
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

	/* The create slots of the adapter's dispatch table; from there on
	 * each object's own dispatch table leads into the provider. */
	NDK_FN_CREATE_CQ create_cq;
	NDK_FN_CREATE_PD create_pd;
	NDK_FN_CREATE_SHARED_ENDPOINT create_shared_endpoint;
	NDK_FN_CREATE_CONNECTOR create_connector;
	NDK_FN_CREATE_LISTENER create_listener;
	NDK_FN_BUILD_LAM build_lam;
	NDK_FN_RELEASE_LAM release_lam;
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
 * build or does not serve the interface, -EINVAL for an unknown name.
 */
int ndk_provider_select(NET_IFINDEX ifindex, const char *ifname,
			const struct ndk_provider_ops **out);

#endif /* NDK_FRONT_PROVIDER_H */
