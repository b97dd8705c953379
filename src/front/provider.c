/* SPDX-License-Identifier: MIT */
/* Which provider serves an adapter: NDK_PROVIDER and auto selection. */
#include <errno.h>
#include <stdio.h>
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

/* 0 if p serves the interface, else a negative errno (probe's); why
 * gets the reason when it does not. */
static int provider_probe(const struct ndk_provider_ops *p, NET_IFINDEX ifindex,
			  const char *ifname, char *why, size_t why_size)
{
	const char *no = p->unavailable ? p->unavailable() : NULL;
	int ret;

	if (no) {
		snprintf(why, why_size, "%s provider unavailable: %s", p->name,
			 no);
		return -ENODEV;
	}
	if (!p->probe)
		return 0;
	ret = p->probe(ifindex, ifname);
	if (ret == -ENODEV) {
		snprintf(why, why_size, "%s provider: no device serves %s",
			 p->name, ifname);
	} else if (ret) {
		ndk_info("provider %s cannot tell whether it serves %s: %d",
			 p->name, ifname, ret);
		snprintf(why, why_size,
			 "%s provider: cannot tell whether it serves %s (%d)",
			 p->name, ifname, ret);
	}
	return ret;
}

int ndk_provider_select(NET_IFINDEX ifindex, const char *ifname,
			const struct ndk_provider_ops **out, char *why,
			size_t why_size)
{
	const char *want = getenv("NDK_PROVIDER");
	size_t i;
	int ret;

	/* Auto selection tries the verbs provider first: a build without
	 * it says so. */
	snprintf(why, why_size, "%s",
		 strcmp(providers[0]->name, "verbs")
			 ? "verbs provider: not in this build of libndk"
			 : "");
	if (!want || !*want || !strcmp(want, "auto")) {
		for (i = 0; i < ARRAY_SIZE(providers); i++) {
			/* The first reason is the one that matters. */
			char skip[NDK_PROVIDER_REASON_MAX];

			if (provider_probe(providers[i], ifindex, ifname, skip,
					   sizeof(skip))) {
				if (!why[0])
					snprintf(why, why_size, "%s", skip);
				continue;
			}
			*out = providers[i];
			return 0;
		}
		return -ENODEV;
	}
	for (i = 0; i < ARRAY_SIZE(providers); i++) {
		if (strcmp(want, providers[i]->name))
			continue;
		ret = provider_probe(providers[i], ifindex, ifname, why,
				     why_size);
		if (ret) {
			ndk_warn("NDK_PROVIDER=%s: %s", want, why);
			return -ENODEV;
		}
		/* Chosen by name: that is the reason, unless it is the
		 * first one auto selection tries (why stays as set above). */
		if (i)
			snprintf(why, why_size, "NDK_PROVIDER=%s", want);
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
