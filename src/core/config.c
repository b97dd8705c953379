/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "core/config.h"
#include "core/log.h"

uint64_t ndk_config_u64(const char *name, uint64_t def, uint64_t min,
			uint64_t max)
{
	const char *v = getenv(name);
	unsigned long long x;
	char *end;

	if (!v || !*v)
		return def;
	errno = 0;
	x = strtoull(v, &end, 0);
	if (errno || *end || x < min || x > max) {
		ndk_warn("%s=%s is not in [%llu, %llu]; using %llu", name, v,
			 (unsigned long long)min, (unsigned long long)max,
			 (unsigned long long)def);
		return def;
	}
	return x;
}

bool ndk_config_bool(const char *name, bool def)
{
	const char *v = getenv(name);

	if (!v || !*v)
		return def;
	if (!strcmp(v, "1") || !strcmp(v, "yes") || !strcmp(v, "true") ||
	    !strcmp(v, "on"))
		return true;
	if (!strcmp(v, "0") || !strcmp(v, "no") || !strcmp(v, "false") ||
	    !strcmp(v, "off"))
		return false;
	ndk_warn("%s=%s is not a boolean; using %d", name, v, def);
	return def;
}

uint64_t ndk_cm_timeout_ms(void)
{
	/* Linux siw waits 10 s for the MPA Reply (MPA_TIMEOUT). */
	return ndk_config_u64("NDK_CM_TIMEOUT_MS", 10000, 1, 3600000);
}
