/* SPDX-License-Identifier: MIT */
/*
 * Entry points that the dispatch tables of one object type point at but
 * that are implemented in another object's file (mostly create functions,
 * which live with the object they create).
 */
#ifndef NDK_CORE_PROVIDER_H
#define NDK_CORE_PROVIDER_H

#include <ndk/ndk.h>

/* Created by the adapter. */
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

#endif /* NDK_CORE_PROVIDER_H */
