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
#include "front/object.h"
#include "engine/engine.h"
#include "oid/registry.h"

struct ndk_stag_table;

struct ndk_adapter {
	struct ndk_obj obj; /* NDK_ADAPTER; never closed through Dispatch */
	NET_IFINDEX ifindex;
	char ifname[IF_NAMESIZE];
	NDK_ADAPTER_INFO info;

	/* Every object created on it (object.h); its lock is never held
	 * across a consumer callback. */
	struct ndk_obj_domain objects;

	struct ndk_engine engine;
	struct ndk_stag_table *stags; /* memory tokens, see qp/stag.h */
	struct ndk_ifaddr_cache addrs; /* the interface's addresses */

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

/* Fills info for an adapter running at version. */
void ndk_adapter_default_info(NDK_ADAPTER_INFO *info, NDK_VERSION version);

/* Version negotiation: 0 and the version to run at, or -EPROTONOSUPPORT. */
int ndk_negotiate_version(NDK_VERSION requested, NDK_VERSION *result);

#endif /* NDK_FRONT_ADAPTER_H */
