/* SPDX-License-Identifier: MIT */
/*
 * Run-time configuration from the environment. Every variable is listed in
 * docs/configuration.md; values out of range fall back to the default with a warning.
 */
#ifndef NDK_CORE_CONFIG_H
#define NDK_CORE_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

uint64_t ndk_config_u64(const char *name, uint64_t def, uint64_t min,
			uint64_t max);
bool ndk_config_bool(const char *name, bool def);
/* NDK_CM_TIMEOUT_MS: how long a connection step may take
 * (docs/configuration.md), for every provider. */
uint64_t ndk_cm_timeout_ms(void);

#endif /* NDK_CORE_CONFIG_H */
