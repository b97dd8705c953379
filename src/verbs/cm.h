/* SPDX-License-Identifier: MIT */
/* The adapter's rdma_cm event channel on the engine (verbs/cm_event.h). */
#ifndef NDK_VERBS_CM_H
#define NDK_VERBS_CM_H

#include <stdint.h>
#include "engine/engine.h"

void ndk_verbs_cm_event(struct ndk_io *io, uint32_t events);

#endif /* NDK_VERBS_CM_H */
