/* SPDX-License-Identifier: MIT */
/*
 * Memory windows (NDK_FN_GET_REMOTE_TOKEN_FROM_MW, NDK_FN_BIND). An MW takes
 * its STag index at create, so NdkGetRemoteTokenFromMw always returns a token
 * of this MW; the token is only valid after a bind, and every bind gives a new
 * key, so tokens handed out for an earlier binding stop working.
 *
 * A window grants remote access only (no local SGE may name it) and dies with
 * the MR registration it was bound to. A successful bind makes the MR an
 * antecedent of the MW (NDKPI Terminology); the link stays until the MW is
 * bound to another MR or closed (invalidation does not drop it), so the MR's
 * close pends until then.
 */
#ifndef SW_MW_H
#define SW_MW_H

#include <pthread.h>
#include <stdatomic.h>
#include "core/lock.h"
#include "front/object.h"

struct sw_mr;
struct sw_stag_table;

struct sw_mw {
	struct ndk_obj obj;
	struct sw_stag_table *stags;
	uint32_t pd_id;
	bool has_stag;
	atomic_uint stag;
	struct ndk_lock lock; /* serialises bind and invalidate */
	struct sw_mr *mr; /* antecedent since the last successful bind */
};

static inline struct sw_mw *to_sw_mw(NDK_MW *mw)
{
	return container_of(mw, struct sw_mw, obj.pub.mw);
}

uint32_t sw_mw_token(struct sw_mw *mw);

/*
 * NdkBind's work: exposes [va, va + len) of mr's current registration
 * with the remote access in flags (NDK_OP_FLAG_ALLOW_REMOTE_READ/WRITE;
 * other flags are the QP's business) and gives the MW a new token. An
 * earlier binding is replaced. Errors:
 *   -EINVAL  bad flags, len > MaxWindowSize, MR closing, other adapter
 *   -EPERM   MR and MW in different PDs
 *   -ENOENT  the MR is not registered / fast-registered right now
 *   -ERANGE  va not in [MR base, MR base + length) or the window overruns
 *   -EOVERFLOW va + len wraps
 *   -EACCES  remote write asked for but the MR lacks local write
 *            (STATUS_ACCESS_VIOLATION, NDK_FN_BIND)
 * On error the previous binding, if any, is left as it was.
 */
int sw_mw_bind(struct sw_mw *mw, struct sw_mr *mr, uint64_t va, uint64_t len,
	       ULONG flags);

/*
 * NdkInvalidate on an MW: revokes the binding and returns once no access
 * through it is in flight. Idempotent.
 */
int sw_mw_invalidate(struct sw_mw *mw);

#endif /* SW_MW_H */
