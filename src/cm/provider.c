/* SPDX-License-Identifier: MIT */
/*
 * The software iWARP provider as the front end sees it
 * (front/provider.h): src/qp's objects and state, this folder's
 * connection management. It serves every interface.
 */
#include "cm/provider.h"
#include "front/provider.h"
#include "front/shared_endpoint.h"
#include "qp/adapter.h"
#include "qp/provider.h"

const struct ndk_provider_ops ndk_software_provider = {
	.name = "software",
	.adapter_init = ndk_sw_adapter_init,
	.adapter_fini = ndk_sw_adapter_fini,
	.create_cq = ndk_create_cq,
	.create_pd = ndk_create_pd,
	.create_shared_endpoint = ndk_create_shared_endpoint,
	.create_connector = ndk_create_connector,
	.create_listener = ndk_create_listener,
	.build_lam = ndk_build_lam,
	.release_lam = ndk_release_lam,
};
