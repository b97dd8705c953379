/* SPDX-License-Identifier: MIT */
/* The software provider's part of a PD (front/pd.c owns the object). */
#include <stdatomic.h>
#include "sw/pd.h"
#include "sw/sw.h"

static atomic_uint next_pd_id = 1;

NTSTATUS sw_pd_init(struct ndk_obj *obj)
{
	container_of(obj, struct sw_pd, obj)->id =
		atomic_fetch_add(&next_pd_id, 1);
	return STATUS_SUCCESS;
}
