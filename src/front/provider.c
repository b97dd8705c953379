/* SPDX-License-Identifier: MIT */
/* Which provider serves an adapter: NDK_PROVIDER and auto selection. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "core/compiler.h"
#include "core/log.h"
#include "front/provider.h"

/* In the order auto selection tries them: hardware first. */
static const struct ndk_provider_ops *const providers[] = {
#ifdef NDK_HAVE_VERBS
	&ndk_verbs_provider,
#endif
	&ndk_software_provider,
};

/* 0 if p serves the interface, else a negative errno (probe's). */
static int provider_probe(const struct ndk_provider_ops *p, NET_IFINDEX ifindex,
			  const char *ifname)
{
	int ret;

	if (!p->probe)
		return 0;
	ret = p->probe(ifindex, ifname);
	if (ret && ret != -ENODEV)
		ndk_info("provider %s cannot tell whether it serves %s: %d",
			 p->name, ifname, ret);
	return ret;
}

int ndk_provider_select(NET_IFINDEX ifindex, const char *ifname,
			const struct ndk_provider_ops **out)
{
	const char *want = getenv("NDK_PROVIDER");
	size_t i;
	int ret;

	if (!want || !*want || !strcmp(want, "auto")) {
		for (i = 0; i < ARRAY_SIZE(providers); i++) {
			if (provider_probe(providers[i], ifindex, ifname))
				continue;
			*out = providers[i];
			return 0;
		}
		return -ENODEV;
	}
	for (i = 0; i < ARRAY_SIZE(providers); i++) {
		if (strcmp(want, providers[i]->name))
			continue;
		ret = provider_probe(providers[i], ifindex, ifname);
		if (ret) {
			ndk_warn("NDK_PROVIDER=%s: no device of it serves %s",
				 want, ifname);
			return -ENODEV;
		}
		*out = providers[i];
		return 0;
	}
	if (!strcmp(want, "verbs") || !strcmp(want, "software")) {
		ndk_warn("NDK_PROVIDER=%s: not in this build of libndk", want);
		return -ENODEV;
	}
	ndk_err("NDK_PROVIDER=%s: unknown (auto, software or verbs)", want);
	return -EINVAL;
}
