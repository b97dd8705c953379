/* SPDX-License-Identifier: MIT */
/*
 * Memory tokens (iWARP STags): the per-adapter table that maps a token to
 * the MR or MW it names, used for local SGE checks and for every tagged
 * placement and Read Request (RFC 5040 section 6.4, RFC 5041 section 8).
 *
 * An STag is a 24-bit index and an 8-bit key (in RDMA verbs the low byte
 * is the consumer-owned key). Here the provider owns both, and neither
 * tells a peer anything about another token (RFC 5040 section 8, RFC
 * 5042 section 5; docs/security.md, Memory tokens):
 *
 *   index  a keyed permutation of the table's index (a Feistel network
 *          whose round functions are random per table), so the tokens of
 *          MRs registered one after another are scattered over the 2^24
 *          indices, differently on every adapter and in every run;
 *   key    random, drawn each time an entry becomes valid (register,
 *          fast-register, bind), and never one of the entry's last four
 *          keys, so a token of an earlier registration of the same MR or
 *          MW no longer matches.
 *
 * A lookup undoes the permutation (a few table reads) and indexes the
 * table: O(1). Table index 0 is never allocated and the permutation maps
 * it to wire index 0, so SW_PRIVILEGED_TOKEN (0) and the RTR's STag 1
 * never name an entry and cannot be used by a peer.
 *
 * Each MR and MW owns one entry (one index) from create to destroy; the
 * entry is FREE, INVALID (owned, no access) or VALID.
 *
 * Concurrency: the table has an rwlock. Lookups take it shared, validate,
 * pin the entry (an atomic per-entry user count) and drop the lock, so a
 * long copy into registered memory does not block other lookups or
 * registrations. Every transition out of VALID (deregister, invalidate,
 * rebind, close) takes the lock exclusive, marks the entry INVALID so no
 * new pin can be taken, then waits for the pins to drain. So once
 * NdkDeregisterMr or a close has returned, no access to the memory is in
 * flight and none will start, and the owning object cannot be destroyed
 * while a pin is held (its destroy frees the entry, which drains first).
 * Rule for the data path: never wait for, invalidate or deregister
 * anything while holding a pin (a thread that holds a pin on the entry it
 * invalidates would wait for itself), and never call consumer callbacks
 * with a pin held.
 */
#ifndef SW_STAG_H
#define SW_STAG_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "core/compiler.h"

struct sw_stag_table;
struct sw_stag_entry;

#define SW_STAG_INDEX_BITS 24
#define SW_STAG_MAX_INDEX  ((1u << SW_STAG_INDEX_BITS) - 1)

static inline uint32_t sw_stag_make(uint32_t index, uint8_t key)
{
	return index << 8 | key;
}

static inline uint32_t sw_stag_index(uint32_t stag)
{
	return stag >> 8;
}

static inline uint8_t sw_stag_key(uint32_t stag)
{
	return (uint8_t)stag;
}

enum sw_stag_type {
	SW_STAG_MR = 1, /* NdkRegisterMr: fixed base, host-contiguous */
	SW_STAG_FRMR, /* NdkFastRegister: page list, consumer base VA */
	SW_STAG_MW, /* NdkBind: a window onto a valid MR or FRMR */
};

/* Access a lookup asks for; an entry grants a set of them. */
#define SW_ACCESS_LOCAL_READ   0x1u
#define SW_ACCESS_LOCAL_WRITE  0x2u
#define SW_ACCESS_REMOTE_READ  0x4u
#define SW_ACCESS_REMOTE_WRITE 0x8u
#define SW_ACCESS_LOCAL	       (SW_ACCESS_LOCAL_READ | SW_ACCESS_LOCAL_WRITE)
#define SW_ACCESS_REMOTE       (SW_ACCESS_REMOTE_READ | SW_ACCESS_REMOTE_WRITE)

/*
 * Why an access was refused. Each class has its own errno so a caller can
 * pick the Terminate code (RFC 5040 RDMAP Remote Protection and RFC 5041
 * DDP tagged-buffer codes; docs/wire.md, Terminate):
 *
 *   INVALID_STAG  -ENOENT      RDMAP 0x00 / DDP 0x00 Invalid STag
 *   BOUNDS        -ERANGE      RDMAP 0x01 / DDP 0x01 Base or bounds violation
 *   ACCESS        -EACCES      RDMAP 0x02 Access rights violation
 *   PD            -EPERM       RDMAP 0x03 / DDP 0x02 STag not associated
 *                              with the stream (the QP's PD)
 *   TO_WRAP       -EOVERFLOW   RDMAP 0x04 / DDP 0x03 Tagged offset wrap
 *   NO_INVALIDATE -EOPNOTSUPP  RDMAP 0x09 STag cannot be invalidated
 */
enum sw_stag_fault {
	SW_STAG_FAULT_NONE = 0,
	SW_STAG_FAULT_INVALID_STAG,
	SW_STAG_FAULT_BOUNDS,
	SW_STAG_FAULT_ACCESS,
	SW_STAG_FAULT_PD,
	SW_STAG_FAULT_TO_WRAP,
	SW_STAG_FAULT_NO_INVALIDATE,
	SW_STAG_FAULT_OTHER, /* any other errno */
};

/* Maps 0 or a negative errno from this interface to its fault class. */
enum sw_stag_fault sw_stag_fault_of(int err);
const char *sw_stag_fault_name(enum sw_stag_fault f);

/*
 * Where tables take their random bytes: getrandom() by default. fn fills
 * buf and returns 0 or a negative errno; NULL restores getrandom(). A
 * source of zeros makes tokens what they were before they were random
 * (index 1, 2, ... and keys 1, 2, ...): the fuzz targets use it so their
 * corpora can aim at a fixed token. Affects tables created afterwards
 * (and the keys of every table).
 */
typedef int (*sw_stag_entropy_fn)(void *buf, size_t len);
void sw_stag_set_entropy(sw_stag_entropy_fn fn);

struct ndk_lam_table;
/* A table whose privileged-token lookups go to the adapter's live LAMs
 * (lams; NULL: a table that only maps STags, for tests). NULL without
 * memory or random bytes. */
struct sw_stag_table *sw_stag_table_create(struct ndk_lam_table *lams);
/* All entries must be freed and all LAMs released (adapter close). */
void sw_stag_table_destroy(struct sw_stag_table *t);

/*
 * Takes an unused index for an MR or MW of PD pd_id; the entry starts
 * INVALID and *stag is its current token. -ENOSPC when all 2^24-1 indices
 * are in use, -ENOMEM.
 */
int sw_stag_alloc(struct sw_stag_table *t, enum sw_stag_type type,
		  uint32_t pd_id, uint32_t *stag);
/* Revokes (see below) and returns the index to the free list. */
void sw_stag_free(struct sw_stag_table *t, uint32_t stag);

/* What a VALID MR or FRMR entry maps. */
struct sw_stag_mem {
	uint64_t base_va; /* tagged offset of the first byte */
	uint64_t length;
	uint32_t access; /* NDK_ACCESS_* granted */
	/*
	 * Host memory: host is the address of base_va when the range is
	 * contiguous in this process (pages == NULL). Otherwise pages[] are
	 * host addresses of PAGE_SIZE pages and base_va is at byte fbo of
	 * pages[0]. pages must stay unchanged while the entry is VALID.
	 */
	uintptr_t host;
	const uint64_t *pages;
	uint32_t npages;
	uint32_t fbo;
};

/*
 * Owner side (MR code): makes the MR/FRMR entry named by *stag (index; the
 * key is ignored) VALID with a new key and mapping m, and stores the new
 * token in *stag. -EBUSY if it is already VALID, -ENOENT if not allocated,
 * -EAGAIN if no random bytes could be had for the key.
 */
int sw_stag_validate(struct sw_stag_table *t, uint32_t *stag,
		     const struct sw_stag_mem *m);

/*
 * Owner side (MW code): binds the MW entry named by *mw_stag to
 * [va, va + len) of the VALID MR/FRMR entry mr_stag (key must match) with
 * access (NDK_ACCESS_REMOTE_* only), revoking any earlier binding, and
 * stores the new token in *mw_stag. The window dies with the MR's current
 * registration: a later deregister, invalidate or re-registration of the
 * MR makes lookups through the window fail with -ENOENT.
 * Errors: -ENOENT MR token not valid, -EPERM MR and MW in different PDs,
 * -ERANGE window outside the MR, -EACCES remote write asked for on an MR
 * without local write (NDK_FN_BIND), -EINVAL bad access bits, -EAGAIN no
 * random bytes for the key.
 */
int sw_stag_bind(struct sw_stag_table *t, uint32_t *mw_stag, uint32_t mr_stag,
		 uint64_t va, uint64_t len, uint32_t access);

/*
 * Owner side: makes the entry INVALID whatever its key and waits for
 * pins to drain. Returns true if it was VALID.
 */
bool sw_stag_revoke(struct sw_stag_table *t, uint32_t stag);

/* True if stag (index and key) is VALID right now. */
bool sw_stag_is_valid(struct sw_stag_table *t, uint32_t stag);

/*
 * Invalidation by token (Send with Invalidate, RDMAP opcodes 0x4/0x6;
 * also usable for NdkInvalidate): only FRMR and MW entries of PD pd_id
 * can be invalidated. -ENOENT not a valid token, -EPERM other PD,
 * -EOPNOTSUPP a normal MR (NDK removes those with NdkDeregisterMr). Waits
 * for pins: the caller must not hold one.
 */
int sw_stag_invalidate(struct sw_stag_table *t, uint32_t stag, uint32_t pd_id);

/*
 * A validated, pinned access. Translate offsets with sw_stag_ref_map or
 * copy with sw_stag_ref_write/_read, then sw_stag_put. mem is NULL for
 * a privileged-token (LAM) access, which is not pinned.
 */
struct sw_stag_ref {
	struct sw_stag_entry *mem; /* entry whose memory is accessed */
	struct sw_stag_entry *win; /* the MW looked up, or NULL */
	uint64_t va;
	uint64_t len;
	uintptr_t host; /* host address of va if contiguous, else 0 */
};

/*
 * The data-path check: token stag used by a QP of PD pd_id for
 * [va, va + len) with access (NDK_ACCESS_*). Checks, in order: the token
 * names a VALID entry with that key (MW: and its MR registration is still
 * the one it was bound to), PD, access rights (a remote access needs the
 * matching remote grant; MWs grant no local access), TO wrap, base/bounds.
 * On success returns 0, *addr = host address of va (NULL when len is 0:
 * nothing may be touched) and, if ref is not NULL, pins the entry: the
 * caller must sw_stag_put(ref). Without ref nothing is pinned and *addr
 * is only an answer, not a licence to touch the memory.
 * A zero-length access still checks the token, PD and access, and va may
 * be one past the end (base <= va <= base + length).
 */
int sw_stag_lookup(struct sw_stag_table *t, uint32_t stag, uint32_t pd_id,
		   uint64_t va, uint64_t len, uint32_t access,
		   struct sw_stag_ref *ref, void **addr);
void sw_stag_put(struct sw_stag_ref *ref);
/*
 * A peer's read of [va, va + len) of stag (a Read Response's source),
 * copied into dst without a pin: checked as sw_stag_lookup checks remote
 * read, then copied while the table's read lock keeps the range
 * registered. For small copies: a deregistration waits.
 */
int sw_stag_read(struct sw_stag_table *t, uint32_t stag, uint32_t pd_id,
		 uint64_t va, void *dst, size_t len);
/* A peer's small Write into [va, va + len) of stag, from src, the same
 * way: checked as sw_stag_lookup checks remote write, copied under the
 * table's read lock. */
int sw_stag_write(struct sw_stag_table *t, uint32_t stag, uint32_t pd_id,
		  uint64_t va, const void *src, size_t len);

/*
 * Host address of byte off (< ref->len) of a looked-up range, and in
 * *contig how many bytes from there are contiguous in this process (never
 * beyond ref->len). A fast-registered page list need not be contiguous.
 */
void *sw_stag_ref_map(const struct sw_stag_ref *ref, uint64_t off,
		      uint64_t *contig);
/* The page walk of the two below, for a range that is not contiguous
 * (in range: they checked): from src into the range, or, with src NULL,
 * out of it into dst. */
void sw_stag_ref_copy_pages(const struct sw_stag_ref *ref, uint64_t off,
			    void *dst, const void *src, size_t n);

/* Copy into / out of [off, off + n) of the range; -ERANGE past its end.
 * Inline: most ranges are contiguous, one copy. */
static inline int sw_stag_ref_write(const struct sw_stag_ref *ref, uint64_t off,
				    const void *src, size_t n)
{
	if (off > ref->len || n > ref->len - off)
		return -ERANGE;
	if (n && ref->host)
		ndk_copy((void *)(ref->host + off), src, n);
	else if (n)
		sw_stag_ref_copy_pages(ref, off, NULL, src, n);
	return 0;
}

static inline int sw_stag_ref_read(const struct sw_stag_ref *ref, uint64_t off,
				   void *dst, size_t n)
{
	if (off > ref->len || n > ref->len - off)
		return -ERANGE;
	if (n && ref->host)
		ndk_copy(dst, (const void *)(ref->host + off), n);
	else if (n)
		sw_stag_ref_copy_pages(ref, off, dst, NULL, n);
	return 0;
}

/*
 * Privileged-token SGE check against the adapter's live LAMs
 * (front/lam_table.h: host VA ranges of whole pages): [la, la + len) must
 * lie inside one live LAM. 0 and *addr = host address (NULL when len is 0); -EFAULT outside
 * every LAM, -EOVERFLOW if the range wraps.
 */
int sw_stag_lam_lookup(struct sw_stag_table *t, uint64_t la, uint64_t len,
		       void **addr);

/*
 * One entry point for a local SGE (NDK_SGE): the privileged token
 * means a logical address from NdkBuildLAM, local access only (-EACCES for
 * remote access); any other token is looked up as above. ref is filled
 * either way and must be put.
 */
int sw_stag_sge_lookup(struct sw_stag_table *t, uint32_t pd_id, uint32_t token,
		       uint64_t va, uint64_t len, uint32_t access,
		       struct sw_stag_ref *ref, void **addr);

/*
 * A local SGE's bytes copied without a pin: checked as sw_stag_sge_lookup
 * checks (local read to read out of [va, va + len) into dst, local write
 * to write src into it), then copied while the table's read lock keeps
 * the range registered. For small copies: a deregistration waits.
 */
int sw_stag_sge_read(struct sw_stag_table *t, uint32_t pd_id, uint32_t token,
		     uint64_t va, void *dst, size_t len);
int sw_stag_sge_write(struct sw_stag_table *t, uint32_t pd_id, uint32_t token,
		      uint64_t va, const void *src, size_t len);

#endif /* SW_STAG_H */
