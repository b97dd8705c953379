/* SPDX-License-Identifier: MIT */
/*
 * rdma-core's libibverbs and librdmacm, opened at run time (docs/verbs.md,
 * Building): libndk is not linked with them, so a consumer never loads
 * them unless the verbs provider runs, and a machine without rdma-core
 * runs the same binary with the software provider alone.
 *
 * This file defines every rdma-core function the provider calls, under
 * rdma-core's own name and prototype (the compiler checks each against
 * rdma-core's header), each forwarding to the library's function of the
 * symbol version a link against rdma-core binds. The rest of src/verbs
 * calls rdma-core as usual, and so do the header's inline wrappers
 * (ibv_query_port, ibv_query_gid_ex, ibv_reg_mr); the data path
 * (ibv_post_send, ibv_poll_cq) goes through the device context's
 * operations and needs no symbol at all. The definitions are hidden
 * (-fvisibility=hidden, src/libndk.map): they never interpose on a
 * libibverbs that the consumer loads itself.
 *
 * A function the provider starts calling must be added to RDMA_CORE_FUNCS:
 * libndk.so is linked with --no-undefined, so a missing one fails the
 * build.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/compiler.h"
#include "core/log.h"
#include "verbs/dl.h"
#include "verbs/verbs.h"

#define IBVERBS "libibverbs.so.1"
#define RDMACM	"librdmacm.so.1"

/*
 * X(library, symbol version, return type, name, parameters, arguments);
 * XV for the functions that return nothing. The versions are those
 * rdma-core's libraries export the current prototypes under.
 */
#define RDMA_CORE_FUNCS(X, XV)                                                 \
	X(IBVERBS, "IBVERBS_1.11", int, _ibv_query_gid_ex,                     \
	  (struct ibv_context * ctx, uint32_t port, uint32_t index,            \
	   struct ibv_gid_entry * entry, uint32_t flags, size_t size),         \
	  (ctx, port, index, entry, flags, size))                              \
	XV(IBVERBS, "IBVERBS_1.1", ibv_ack_async_event,                        \
	   (struct ibv_async_event * ev), (ev))                                \
	XV(IBVERBS, "IBVERBS_1.1", ibv_ack_cq_events,                          \
	   (struct ibv_cq * cq, unsigned int n), (cq, n))                      \
	X(IBVERBS, "IBVERBS_1.1", struct ibv_pd *, ibv_alloc_pd,               \
	  (struct ibv_context * ctx), (ctx))                                   \
	X(IBVERBS, "IBVERBS_1.0", struct ibv_comp_channel *,                   \
	  ibv_create_comp_channel, (struct ibv_context * ctx), (ctx))          \
	X(IBVERBS, "IBVERBS_1.1", struct ibv_cq *, ibv_create_cq,              \
	  (struct ibv_context * ctx, int cqe, void *cq_ctx,                    \
	   struct ibv_comp_channel *ch, int vector),                           \
	  (ctx, cqe, cq_ctx, ch, vector))                                      \
	X(IBVERBS, "IBVERBS_1.1", struct ibv_qp *, ibv_create_qp,              \
	  (struct ibv_pd * pd, struct ibv_qp_init_attr * attr), (pd, attr))    \
	X(IBVERBS, "IBVERBS_1.1", struct ibv_srq *, ibv_create_srq,            \
	  (struct ibv_pd * pd, struct ibv_srq_init_attr * attr), (pd, attr))   \
	X(IBVERBS, "IBVERBS_1.1", int, ibv_dealloc_pd, (struct ibv_pd * pd),   \
	  (pd))                                                                \
	X(IBVERBS, "IBVERBS_1.1", int, ibv_dereg_mr, (struct ibv_mr * mr),     \
	  (mr))                                                                \
	X(IBVERBS, "IBVERBS_1.0", int, ibv_destroy_comp_channel,               \
	  (struct ibv_comp_channel * ch), (ch))                                \
	X(IBVERBS, "IBVERBS_1.1", int, ibv_destroy_cq, (struct ibv_cq * cq),   \
	  (cq))                                                                \
	X(IBVERBS, "IBVERBS_1.1", int, ibv_destroy_qp, (struct ibv_qp * qp),   \
	  (qp))                                                                \
	X(IBVERBS, "IBVERBS_1.1", int, ibv_destroy_srq,                        \
	  (struct ibv_srq * srq), (srq))                                       \
	X(IBVERBS, "IBVERBS_1.1", const char *, ibv_event_type_str,            \
	  (enum ibv_event_type type), (type))                                  \
	X(IBVERBS, "IBVERBS_1.1", int, ibv_get_async_event,                    \
	  (struct ibv_context * ctx, struct ibv_async_event * ev), (ctx, ev))  \
	X(IBVERBS, "IBVERBS_1.1", int, ibv_get_cq_event,                       \
	  (struct ibv_comp_channel * ch, struct ibv_cq * *cq, void **cq_ctx),  \
	  (ch, cq, cq_ctx))                                                    \
	X(IBVERBS, "IBVERBS_1.1", const char *, ibv_get_device_name,           \
	  (struct ibv_device * dev), (dev))                                    \
	X(IBVERBS, "IBVERBS_1.1", int, ibv_modify_qp,                          \
	  (struct ibv_qp * qp, struct ibv_qp_attr * attr, int mask),           \
	  (qp, attr, mask))                                                    \
	X(IBVERBS, "IBVERBS_1.1", int, ibv_modify_srq,                         \
	  (struct ibv_srq * srq, struct ibv_srq_attr * attr, int mask),        \
	  (srq, attr, mask))                                                   \
	X(IBVERBS, "IBVERBS_1.1", int, ibv_query_device,                       \
	  (struct ibv_context * ctx, struct ibv_device_attr * attr),           \
	  (ctx, attr))                                                         \
	X(IBVERBS, "IBVERBS_1.1", int, ibv_query_port,                         \
	  (struct ibv_context * ctx, uint8_t port,                             \
	   struct _compat_ibv_port_attr * attr),                               \
	  (ctx, port, attr))                                                   \
	X(IBVERBS, "IBVERBS_1.1", int, ibv_query_qp,                           \
	  (struct ibv_qp * qp, struct ibv_qp_attr * attr, int mask,            \
	   struct ibv_qp_init_attr *init),                                     \
	  (qp, attr, mask, init))                                              \
	X(IBVERBS, "IBVERBS_1.8", struct ibv_mr *, ibv_reg_mr_iova2,           \
	  (struct ibv_pd * pd, void *addr, size_t len, uint64_t iova,          \
	   unsigned int access),                                               \
	  (pd, addr, len, iova, access))                                       \
	X(IBVERBS, "IBVERBS_1.1", int, ibv_resize_cq,                          \
	  (struct ibv_cq * cq, int cqe), (cq, cqe))                            \
	X(RDMACM, "RDMACM_1.0", int, rdma_accept,                              \
	  (struct rdma_cm_id * id, struct rdma_conn_param * param),            \
	  (id, param))                                                         \
	X(RDMACM, "RDMACM_1.0", int, rdma_ack_cm_event,                        \
	  (struct rdma_cm_event * ev), (ev))                                   \
	X(RDMACM, "RDMACM_1.0", int, rdma_bind_addr,                           \
	  (struct rdma_cm_id * id, struct sockaddr * addr), (id, addr))        \
	X(RDMACM, "RDMACM_1.0", int, rdma_connect,                             \
	  (struct rdma_cm_id * id, struct rdma_conn_param * param),            \
	  (id, param))                                                         \
	X(RDMACM, "RDMACM_1.0", struct rdma_event_channel *,                   \
	  rdma_create_event_channel, (void), ())                               \
	X(RDMACM, "RDMACM_1.0", int, rdma_create_id,                           \
	  (struct rdma_event_channel * ch, struct rdma_cm_id * *id, void *ctx, \
	   enum rdma_port_space ps),                                           \
	  (ch, id, ctx, ps))                                                   \
	XV(RDMACM, "RDMACM_1.0", rdma_destroy_event_channel,                   \
	   (struct rdma_event_channel * ch), (ch))                             \
	X(RDMACM, "RDMACM_1.0", int, rdma_destroy_id,                          \
	  (struct rdma_cm_id * id), (id))                                      \
	X(RDMACM, "RDMACM_1.0", int, rdma_disconnect,                          \
	  (struct rdma_cm_id * id), (id))                                      \
	X(RDMACM, "RDMACM_1.2", int, rdma_establish, (struct rdma_cm_id * id), \
	  (id))                                                                \
	X(RDMACM, "RDMACM_1.0", const char *, rdma_event_str,                  \
	  (enum rdma_cm_event_type type), (type))                              \
	XV(RDMACM, "RDMACM_1.0", rdma_free_devices,                            \
	   (struct ibv_context * *list), (list))                               \
	X(RDMACM, "RDMACM_1.0", int, rdma_get_cm_event,                        \
	  (struct rdma_event_channel * ch, struct rdma_cm_event * *ev),        \
	  (ch, ev))                                                            \
	X(RDMACM, "RDMACM_1.0", struct ibv_context **, rdma_get_devices,       \
	  (int *n), (n))                                                       \
	X(RDMACM, "RDMACM_1.2", int, rdma_init_qp_attr,                        \
	  (struct rdma_cm_id * id, struct ibv_qp_attr * attr, int *mask),      \
	  (id, attr, mask))                                                    \
	X(RDMACM, "RDMACM_1.0", int, rdma_listen,                              \
	  (struct rdma_cm_id * id, int backlog), (id, backlog))                \
	X(RDMACM, "RDMACM_1.0", int, rdma_reject,                              \
	  (struct rdma_cm_id * id, const void *data, uint8_t len),             \
	  (id, data, len))                                                     \
	X(RDMACM, "RDMACM_1.0", int, rdma_resolve_addr,                        \
	  (struct rdma_cm_id * id, struct sockaddr * src,                      \
	   struct sockaddr * dst, int timeout_ms),                             \
	  (id, src, dst, timeout_ms))                                          \
	X(RDMACM, "RDMACM_1.0", int, rdma_resolve_route,                       \
	  (struct rdma_cm_id * id, int timeout_ms), (id, timeout_ms))          \
	X(RDMACM, "RDMACM_1.0", int, rdma_set_option,                          \
	  (struct rdma_cm_id * id, int level, int name, void *val,             \
	   size_t len),                                                        \
	  (id, level, name, val, len))

/* The libraries' functions, typed as rdma-core's header declares them. */
#define FN_MEMBER(lib, ver, ret, name, params, args) __typeof__(name) *name;
#define FNV_MEMBER(lib, ver, name, params, args)     __typeof__(name) *name;
static struct rdma_core {
	RDMA_CORE_FUNCS(FN_MEMBER, FNV_MEMBER)
} rc;

/* Where each is found. */
struct rc_symbol {
	const char *lib, *version, *name;
	size_t offset;
};

#define FN_SYMBOL(lib, ver, ret, name, params, args) \
	{ lib, ver, #name, offsetof(struct rdma_core, name) },
#define FNV_SYMBOL(lib, ver, name, params, args) \
	FN_SYMBOL(lib, ver, void, name, params, args)
static const struct rc_symbol rc_symbols[] = { RDMA_CORE_FUNCS(FN_SYMBOL,
							       FNV_SYMBOL) };

static pthread_once_t rc_once = PTHREAD_ONCE_INIT;
static bool rc_loaded;
/* Why not, when !rc_loaded. */
static char rc_error[NDK_VERBS_UNAVAILABLE_MAX];

/* Opens lib (kept open while the process lives): NULL, with rc_error. */
static void *rc_open(const char *lib)
{
	void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);

	if (!h)
		snprintf(rc_error, sizeof(rc_error), "%s", dlerror());
	return h;
}

static void rc_load(void)
{
	void *ibverbs, *rdmacm, *sym;
	size_t i;

	/* librdmacm needs libibverbs: this order names the missing one. */
	ibverbs = rc_open(IBVERBS);
	rdmacm = ibverbs ? rc_open(RDMACM) : NULL;
	if (!rdmacm)
		goto out;
	for (i = 0; i < ARRAY_SIZE(rc_symbols); i++) {
		const struct rc_symbol *s = &rc_symbols[i];

		sym = dlvsym(strcmp(s->lib, IBVERBS) ? rdmacm : ibverbs,
			     s->name, s->version);
		if (!sym) {
			snprintf(rc_error, sizeof(rc_error), "%s: no %s@%s",
				 s->lib, s->name, s->version);
			goto out;
		}
		/* A function pointer stored as dlvsym gives it (POSIX). */
		memcpy((char *)&rc + s->offset, &sym, sizeof(sym));
	}
	rc_loaded = true;
out:
	if (!rc_loaded)
		ndk_info("verbs provider unavailable: %s", rc_error);
}

const char *ndk_verbs_unavailable(void)
{
	pthread_once(&rc_once, rc_load);
	return rc_loaded ? NULL : rc_error;
}

/*
 * What the provider calls reaches rdma-core only after its probe found
 * rdma-core loaded (ndk_verbs_unavailable); a static libndk's consumer
 * that calls rdma-core itself reaches these definitions too, hence the
 * load here.
 */
static const struct rdma_core *rdma_core(void)
{
	const char *why = ndk_verbs_unavailable();

	if (why) {
		ndk_err("rdma-core called but not loaded: %s", why);
		abort();
	}
	return &rc;
}

#define FN_DEFINE(lib, ver, ret, name, params, args) \
	ret(name) params                             \
	{                                            \
		return (rdma_core()->name)args;      \
	}
#define FNV_DEFINE(lib, ver, name, params, args) \
	void(name) params                        \
	{                                        \
		(rdma_core()->name) args;        \
	}
RDMA_CORE_FUNCS(FN_DEFINE, FNV_DEFINE)
