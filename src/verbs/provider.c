/* SPDX-License-Identifier: MIT */
/*
 * The verbs provider as the front end sees it (front/provider.h): it
 * serves an interface that an RDMA device's port is attached to.
 * Shared endpoints are the front end's; logical address mappings are
 * verbs/lam.c's.
 */
#include "front/provider.h"
#include "front/shared_endpoint.h"
#include "verbs/connector.h"
#include "verbs/cq.h"
#include "verbs/dl.h"
#include "verbs/lam.h"
#include "verbs/listener.h"
#include "verbs/mr.h"
#include "verbs/mw.h"
#include "verbs/qp.h"
#include "verbs/srq.h"
#include "verbs/pd.h"
#include "verbs/verbs.h"

const struct ndk_provider_ops ndk_verbs_provider = {
	.name = "verbs",
	.unavailable = ndk_verbs_unavailable,
	.probe = ndk_verbs_probe,
	.adapter_init = ndk_verbs_adapter_init,
	.adapter_fini = ndk_verbs_adapter_fini,
	.adapter_start = ndk_verbs_adapter_start,
	.create_cq = ndk_verbs_create_cq,
	.cq_poll = ndk_vcq_poll,
	.cq_arm = ndk_vcq_arm,
	.cq_resize = ndk_vcq_resize,
	.create_mr = ndk_verbs_create_mr,
	.mr_register = ndk_verbs_mr_register,
	.mr_deregister = ndk_verbs_mr_deregister,
	.mr_fr_init = ndk_verbs_mr_fr_init,
	.mr_token = ndk_verbs_mr_token,
	.create_mw = ndk_verbs_create_mw,
	.mw_token = ndk_verbs_mw_token,
	.create_srq = ndk_verbs_create_srq,
	.create_qp = ndk_verbs_create_qp,
	.pd_size = sizeof(struct ndk_vpd),
	.pd_init = ndk_verbs_pd_init,
	.pd_fini = ndk_verbs_pd_fini,
	.privileged_token = NDK_VERBS_PRIVILEGED_TOKEN,
	.create_shared_endpoint = ndk_create_shared_endpoint,
	.create_connector = ndk_verbs_create_connector,
	.conn = &ndk_vconn_ops,
	.listener_size = sizeof(struct ndk_vlistener),
	.listener_init = ndk_verbs_listener_init,
	.listen = ndk_verbs_listen,
	.listener_close = ndk_verbs_listener_close,
	.lam_released = ndk_vlam_released,
};
