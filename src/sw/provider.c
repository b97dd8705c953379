/* SPDX-License-Identifier: MIT */
/*
 * The software iWARP provider as the front end sees it
 * (front/provider.h): its queues, memory and data path and its
 * connection management, all in src/sw. It serves every interface.
 */
#include "sw/sw.h"
#include "front/provider.h"
#include "front/shared_endpoint.h"
#include "sw/adapter.h"
#include "sw/connector.h"
#include "sw/listener.h"
#include "sw/pd.h"

const struct ndk_provider_ops ndk_software_provider = {
	.name = "software",
	.adapter_init = sw_adapter_init,
	.adapter_fini = sw_adapter_fini,
	.create_cq = sw_create_cq,
	.cq_poll = sw_cq_poll,
	.cq_arm = sw_cq_arm,
	.cq_resize = sw_cq_resize,
	.cq_moderation = sw_cq_moderation,
	.create_mr = sw_create_mr,
	.mr_register = sw_mr_register,
	.mr_deregister = sw_mr_deregister,
	.mr_fr_init = sw_mr_fr_init,
	.mr_token = sw_mr_get_token,
	.create_mw = sw_create_mw,
	.mw_token = sw_mw_remote_token,
	.create_srq = sw_create_srq,
	.create_qp = sw_create_qp,
	.pd_size = sizeof(struct sw_pd),
	.pd_init = sw_pd_init,
	.privileged_token = SW_PRIVILEGED_TOKEN,
	.create_shared_endpoint = ndk_create_shared_endpoint,
	.create_connector = sw_create_connector,
	.conn = &sw_conn_ops,
	.listener_size = sizeof(struct sw_listener),
	.listener_init = sw_listener_init,
	.listen = sw_listen,
	.listener_close = sw_listener_close,
	.listener_fini = sw_listener_fini,
};
