/* SPDX-License-Identifier: MIT */
/* The adapter's rdma_cm event channel on the engine (verbs/cm_event.h). */
#ifndef NDK_VERBS_CM_H
#define NDK_VERBS_CM_H

#include <stdint.h>
#include "engine/engine.h"

void ndk_verbs_cm_event(struct ndk_io *io, uint32_t events);

struct ndk_vadapter;
struct ndk_vcm_ref;
struct rdma_cm_id;
/*
 * Sets id's context (NULL: its object lets go of it) under the lock the
 * engine holds while it reads the context and takes a reference on the
 * object: once this returns with NULL, no event of id reaches the object.
 */
void ndk_vcm_set_context(struct ndk_vadapter *v, struct rdma_cm_id *id,
			 struct ndk_vcm_ref *ref);

#endif /* NDK_VERBS_CM_H */
