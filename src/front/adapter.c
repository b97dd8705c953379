/* SPDX-License-Identifier: MIT */
/* NdkOpenAdapter / NdkCloseAdapter and the adapter's dispatch table. */
#include <errno.h>
#include <ifaddrs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include "front/adapter.h"
#include "core/log.h"
#include "front/provider.h"

/*
 * Versions provided: the highest minor per major. Higher minors are strict
 * supersets (OPEN_NDK_ADAPTER_HANDLER), so a consumer asking for 1.0 runs
 * at 1.2.
 */
static const NDK_VERSION provided_versions[] = {
	{ 1, 2 },
	{ NDK_PROVIDER_MAJOR_VERSION, NDK_PROVIDER_MINOR_VERSION },
};

int ndk_negotiate_version(NDK_VERSION requested, NDK_VERSION *result)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(provided_versions); i++) {
		if (provided_versions[i].Major != requested.Major)
			continue;
		if (requested.Minor > provided_versions[i].Minor)
			return -EPROTONOSUPPORT;
		*result = provided_versions[i];
		return 0;
	}
	return -EPROTONOSUPPORT;
}

int ndk_adapter_has_addr(struct ndk_adapter *ad, const struct sockaddr *addr)
{
	return ndk_ifaddr_has(&ad->addrs, addr);
}

static void adapter_destroy(struct ndk_obj *obj)
{
	/* The adapter is freed by NdkCloseAdapter, never by a reference. */
}

static const struct ndk_obj_ops adapter_ops = {
	.type = NdkObjectTypeAdapter,
	.name = "adapter",
	.destroy = adapter_destroy,
};

static int interface_state(NET_IFINDEX ifindex, char *name)
{
	struct ifreq ifr;
	int fd, ret = 0;

	if (!if_indextoname(ifindex, name))
		return -ENODEV;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	memset(&ifr, 0, sizeof(ifr));
	memcpy(ifr.ifr_name, name, IF_NAMESIZE);
	if (ioctl(fd, SIOCGIFFLAGS, &ifr) < 0)
		ret = -errno;
	else if (!(ifr.ifr_flags & IFF_UP))
		ret = -ENETDOWN;
	close(fd);
	return ret;
}

/* What NdkOpenAdapter set up, once the engine is stopped or never ran. */
static void adapter_free(struct ndk_adapter *ad)
{
	ndk_reg_counters_close(ad->counters);
	ad->provider->adapter_fini(ad);
	ndk_lam_table_fini(&ad->lams);
	ndk_ifaddr_fini(&ad->addrs);
	ndk_cond_destroy(&ad->objects.cond);
	ndk_lock_destroy(&ad->objects.lock);
	free(ad);
}

NDK_EXPORT NTSTATUS NdkOpenAdapter(NDK_VERSION Version, NET_IFINDEX IfIndex,
				   NDK_ADAPTER **ppNdkAdapter)
{
	const struct ndk_provider_ops *provider;
	char reason[NDK_PROVIDER_REASON_MAX];
	struct ndk_adapter *ad;
	NDK_VERSION run;
	char name[IF_NAMESIZE];
	char thread_name[IF_NAMESIZE + 8];
	int ret;

	ndk_log_init();
	if (!ppNdkAdapter)
		return STATUS_INVALID_PARAMETER;
	if (ndk_negotiate_version(Version, &run))
		return NDIS_STATUS_BAD_VERSION;
	ret = interface_state(IfIndex, name);
	if (ret == -ENODEV || ret == -ENXIO)
		return NDIS_STATUS_ADAPTER_NOT_FOUND;
	if (ret == -ENETDOWN)
		return NDIS_STATUS_ADAPTER_NOT_READY;
	if (ret)
		return STATUS_INSUFFICIENT_RESOURCES;
	/* NDK_PROVIDER=verbs with no RDMA device on the interface is an
	 * adapter that does not exist (docs/configuration.md). */
	if (ndk_provider_select(IfIndex, name, &provider, reason,
				sizeof(reason)))
		return NDIS_STATUS_ADAPTER_NOT_FOUND;

	ad = calloc(1, sizeof(*ad));
	if (!ad)
		return STATUS_INSUFFICIENT_RESOURCES;
	ad->ifindex = IfIndex;
	memcpy(ad->ifname, name, sizeof(ad->ifname));
	ad->provider = provider;
	memcpy(ad->provider_reason, reason, sizeof(reason));
	ad->objects.version = run;
	ad->objects.engine = &ad->engine;
	ad->info.Version = run;
	ndk_adapter_fill_dispatch(&ad->dispatch, provider);
	ndk_lock_init(&ad->objects.lock, NDK_LOCK_DOMAIN);
	ndk_cond_init(&ad->objects.cond);
	list_init(&ad->objects.objects);
	ndk_obj_init(&ad->obj, ad, &ad->objects, &adapter_ops, &ad->dispatch);

	ndk_ifaddr_init(&ad->addrs, name, IfIndex);
	ndk_lam_table_init(&ad->lams);
	ret = provider->adapter_init(ad);
	/* The provider's limits are for this version's structure. */
	ad->info.Version = run;
	if (ret == -ENODEV) {
		/* The device went between the probe and here. */
		adapter_free(ad);
		return NDIS_STATUS_ADAPTER_NOT_FOUND;
	}
	if (ret)
		goto fail;
	/* The interface is named by namespace + ifindex (registry.h). */
	ad->netns = ndk_reg_netns_self();
	ad->counters = ndk_reg_counters_open(ad->netns, IfIndex);
	snprintf(thread_name, sizeof(thread_name), "ndk-%s", name);
	if (ndk_engine_start(&ad->engine, thread_name))
		goto fail;
	if (provider->adapter_start && provider->adapter_start(ad)) {
		ndk_engine_stop(&ad->engine);
		goto fail;
	}
	*ppNdkAdapter = &ad->obj.pub.adapter;
	ndk_info(
		"opened adapter %s (ifindex %u) at NDKPI %u.%u, %s provider%s%s",
		name, (unsigned int)IfIndex, run.Major, run.Minor,
		provider->name, ad->device[0] ? " on " : "", ad->device);
	return STATUS_SUCCESS;
fail:
	adapter_free(ad);
	return STATUS_INSUFFICIENT_RESOURCES;
}

_Static_assert(sizeof(((NDK_PROVIDER_INFO *)0)->Reason) ==
		       NDK_PROVIDER_REASON_MAX,
	       "front/provider.h's reasons fit NDK_PROVIDER_INFO");

NDK_EXPORT NTSTATUS NdkQueryAdapterProvider(NDK_ADAPTER *pNdkAdapter,
					    NDK_PROVIDER_INFO *pInfo)
{
	struct ndk_adapter *ad;

	if (!pNdkAdapter || !pInfo)
		return STATUS_INVALID_PARAMETER;
	ad = to_ndk_adapter(pNdkAdapter);
	memset(pInfo, 0, sizeof(*pInfo));
	snprintf(pInfo->Provider, sizeof(pInfo->Provider), "%s",
		 ad->provider->name);
	snprintf(pInfo->Device, sizeof(pInfo->Device), "%s", ad->device);
	snprintf(pInfo->Reason, sizeof(pInfo->Reason), "%s",
		 ad->provider_reason);
	return STATUS_SUCCESS;
}

NDK_EXPORT VOID NdkCloseAdapter(NDK_ADAPTER *pNdkAdapter)
{
	struct ndk_adapter *ad;
	struct list_head *pos;
	struct ndk_obj *open_obj;

	if (!pNdkAdapter)
		return;
	ad = to_ndk_adapter(pNdkAdapter);

	/*
	 * Close what the consumer left open, one at a time (no allocation on
	 * this path); each close pends until its successors are closed.
	 */
	ndk_lock(&ad->objects.lock);
	ad->objects.closing = true;
	for (;;) {
		open_obj = NULL;
		list_for_each (pos, &ad->objects.objects) {
			struct ndk_obj *obj =
				list_entry(pos, struct ndk_obj, entry);

			if (obj->state == NDK_OBJ_OPEN) {
				open_obj = obj;
				break;
			}
		}
		if (!open_obj)
			break;
		ndk_obj_get(open_obj);
		ndk_unlock(&ad->objects.lock);
		ndk_warn("adapter %s closed with %s %p still open", ad->ifname,
			 open_obj->ops->name, (void *)open_obj);
		ndk_obj_close_internal(open_obj);
		ndk_obj_put(open_obj);
		ndk_lock(&ad->objects.lock);
	}
	ndk_unlock(&ad->objects.lock);

	/* Wait until every object is destroyed: all callbacks returned. */
	ndk_lock(&ad->objects.lock);
	while (ad->objects.live)
		ndk_cond_wait(&ad->objects.cond, &ad->objects.lock);
	ndk_unlock(&ad->objects.lock);

	ndk_engine_stop(&ad->engine);
	adapter_free(ad);
}
