/* SPDX-License-Identifier: MIT */
/*
 * The software provider (src/sw): NDK objects over iWARP on TCP. This
 * header holds the creates of the adapter's and the PD's dispatch tables
 * for its queues and memory; sw/connector.h and sw/listener.h hold the
 * connection-management ones, and sw/provider.c puts them all together
 * with sw/adapter.h into ndk_software_provider (front/provider.h).
 */
#ifndef SW_SW_H
#define SW_SW_H

#include <stdbool.h>
#include <stdint.h>
#include <ndk/ndk.h>

struct ndk_adapter;
struct ndk_obj;
struct ndk_cq_attr;
struct ndk_qp_attr;
struct ndk_srq_attr;

/* The provider's creates (front/provider.h): the front end checked the
 * arguments. */
NTSTATUS sw_create_cq(struct ndk_adapter *ad, const struct ndk_cq_attr *attr,
		      NDK_CQ **out);
struct ndk_cq;
ULONG sw_cq_poll(struct ndk_cq *cq, NDK_RESULT_EX *out, ULONG max);
void sw_cq_arm(struct ndk_cq *cq, ULONG type);
NTSTATUS sw_cq_resize(struct ndk_cq *cq, ULONG depth);
NTSTATUS sw_cq_moderation(struct ndk_cq *cq, ULONG interval, ULONG count);
NTSTATUS sw_create_mr(struct ndk_obj *pd, bool fast_register, NDK_MR **out);
struct ndk_mr;
NTSTATUS sw_mr_register(struct ndk_mr *mr, uint64_t va, uint64_t len,
			unsigned int access);
void sw_mr_deregister(struct ndk_mr *mr);
NTSTATUS sw_mr_fr_init(struct ndk_mr *mr, ULONG count);
UINT32 sw_mr_get_token(struct ndk_mr *mr, bool remote);
NTSTATUS sw_create_mw(struct ndk_obj *pd, NDK_MW **out);
UINT32 sw_mw_remote_token(struct ndk_obj *mw);
NTSTATUS sw_create_srq(struct ndk_obj *pd, const struct ndk_srq_attr *attr,
		       NDK_SRQ **out);
NTSTATUS sw_create_qp(struct ndk_obj *pd, const struct ndk_qp_attr *attr,
		      NDK_QP **out);
/* The provider's part of a PD (front/pd.c). */
NTSTATUS sw_pd_init(struct ndk_obj *pd);

#endif /* SW_SW_H */
