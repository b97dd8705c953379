/* SPDX-License-Identifier: MIT */
/*
 * The NDK adapter: one Linux network interface, its limits, its progress
 * engine and the registry of every object created on it.
 */
#ifndef NDK_FRONT_ADAPTER_H
#define NDK_FRONT_ADAPTER_H

#include <net/if.h>
#include <pthread.h>
#include "front/ifaddr.h"
#include "front/lam_table.h"
#include "front/object.h"
#include "front/provider.h"
#include "engine/engine.h"
#include "oid/registry.h"

struct ndk_provider_ops;

/* "siw0 port 1": the device of a hardware provider, for ndkinfo. */
#define NDK_ADAPTER_DEVICE_MAX 64

struct ndk_adapter {
	struct ndk_obj obj; /* NDK_ADAPTER; never closed through Dispatch */
	NET_IFINDEX ifindex;
	char ifname[IF_NAMESIZE];
	NDK_ADAPTER_INFO info; /* filled by the provider's adapter_init */

	/* The provider that implements the objects (front/provider.h), its
	 * adapter-wide state and its device ("" for software). */
	const struct ndk_provider_ops *provider;
	void *priv;
	char device[NDK_ADAPTER_DEVICE_MAX];
	/* Why provider is not the first one auto selection tries
	 * (ndk_provider_select), "" when it is. */
	char provider_reason[NDK_PROVIDER_REASON_MAX];
	/* obj's Dispatch: the front end's slots and the provider's creates. */
	NDK_ADAPTER_DISPATCH dispatch;

	/* Every object created on it (object.h); its lock is never held
	 * across a consumer callback. */
	struct ndk_obj_domain objects;

	struct ndk_engine engine;
	struct ndk_ifaddr_cache addrs; /* the interface's addresses */
	struct ndk_lam_table lams; /* live LAMs (front/lam.c) */

	/* Where the adapter lives (registry.h): its network namespace and
	 * the machine-wide counters behind OID_NDK_STATISTICS (NULL if the
	 * runtime directory is unusable). */
	uint64_t netns;
	struct ndk_reg_counters *counters;
};

/* Counts n events of one NDIS_NDK_PERFORMANCE_COUNTERS field, e.g.
 * ndk_adapter_count(ad, NDK_CTR(Connect), 1). */
static inline void ndk_adapter_count(struct ndk_adapter *ad, unsigned int index,
				     uint64_t n)
{
	ndk_reg_count(ad->counters, index, n);
}

/* A registry entry of this adapter (registry.h): its interface, its
 * namespace and how its technology lists endpoints (iWARP's ND ports are
 * TCP ports). The caller fills in the addresses. */
static inline struct ndk_reg_entry
ndk_adapter_reg_entry(const struct ndk_adapter *ad, enum ndk_reg_kind kind)
{
	struct ndk_reg_entry e = {
		.kind = kind,
		.addressing = ad->info.RdmaTechnology == NdkiWarp
				      ? NDK_REG_TCP_PAIRED
				      : NDK_REG_ND_ONLY,
		.ifindex = ad->ifindex,
		.netns = ad->netns,
	};

	return e;
}

static inline struct ndk_adapter *to_ndk_adapter(NDK_ADAPTER *a)
{
	return container_of(a, struct ndk_adapter, obj.pub.adapter);
}

/*
 * 1 if addr (AF_INET or AF_INET6, port ignored) is currently an address of
 * this adapter's interface, 0 if not, or a negative errno if the
 * interface's addresses could not be read (e.g. -EMFILE). IPv6 link-local
 * addresses must carry the interface's scope id.
 */
int ndk_adapter_has_addr(struct ndk_adapter *ad, const struct sockaddr *addr);

/* Version negotiation: 0 and the version to run at, or -EPROTONOSUPPORT. */
/* The adapter's dispatch table for provider p (front/adapter_dispatch.c). */
void ndk_adapter_fill_dispatch(NDK_ADAPTER_DISPATCH *d,
			       const struct ndk_provider_ops *p);

int ndk_negotiate_version(NDK_VERSION requested, NDK_VERSION *result);

#endif /* NDK_FRONT_ADAPTER_H */
