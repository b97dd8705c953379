/* SPDX-License-Identifier: MIT */
/*
 * The seam between the NDK front end (src/front: adapter, object model,
 * close rules, endpoint table) and the provider that implements the
 * objects (today the software iWARP provider: src/cm, src/qp, src/iwarp).
 * The front end calls only what is declared here; docs/design.md has the
 * layers.
 */
#ifndef NDK_FRONT_PROVIDER_H
#define NDK_FRONT_PROVIDER_H

#include <ndk/ndk.h>

struct ndk_adapter;

/*
 * The provider's adapter-wide state (the software provider: its STag
 * table), set up after the adapter's own fields and before its engine
 * starts. Returns 0 or a negative errno. fini takes a partly set up
 * adapter too.
 */
int ndk_provider_adapter_init(struct ndk_adapter *ad);
void ndk_provider_adapter_fini(struct ndk_adapter *ad);

/* Entry points of the adapter's and the PD's dispatch tables: each is
 * implemented with the object it creates. */

NDK_FN_CREATE_CQ ndk_create_cq;
NDK_FN_CREATE_PD ndk_create_pd;
NDK_FN_CREATE_SHARED_ENDPOINT ndk_create_shared_endpoint;
NDK_FN_CREATE_CONNECTOR ndk_create_connector;
NDK_FN_CREATE_LISTENER ndk_create_listener;
NDK_FN_BUILD_LAM ndk_build_lam;
NDK_FN_RELEASE_LAM ndk_release_lam;

/* Created by the PD. */
NDK_FN_CREATE_MR ndk_create_mr;
NDK_FN_CREATE_MW ndk_create_mw;
NDK_FN_CREATE_SRQ ndk_create_srq;
NDK_FN_CREATE_QP ndk_create_qp;
NDK_FN_CREATE_QP_WITH_SRQ ndk_create_qp_with_srq;

#endif /* NDK_FRONT_PROVIDER_H */
