/* SPDX-License-Identifier: MIT */
/*
 * The machine-wide registry behind OID_NDK_LOCAL_ENDPOINTS, _CONNECTIONS
 * and _STATISTICS (docs/design.md, OID registry): every process publishes its
 * listeners, shared endpoints and established connections, and every
 * process can list those of all the others. There is no daemon.
 *
 * Files in the runtime directory (NDK_RUNTIME_DIR, default /dev/shm/libndk):
 *
 *   p.<pid>.<random>  one per publishing process: a header and fixed-size
 *                     slots. The owner holds an exclusive flock() on it for
 *                     its whole life, so a reader tells a live owner from a
 *                     dead one (even after SIGKILL, the kernel drops the
 *                     lock) and removes the files of dead owners. Each slot
 *                     is a sequence lock: a reader never sees a torn entry.
 *   c.<netns>.<ifindex>  one per interface: the 64-bit counters of
 *                     NDIS_NDK_PERFORMANCE_COUNTERS, incremented atomically
 *                     by every process, so they outlive the processes that
 *                     counted (like an adapter's counters on Windows).
 *
 * Interfaces are named by network namespace and ifindex: every namespace
 * has its own ifindex 1, and /dev/shm is shared between namespaces.
 */
#ifndef NDK_OID_REGISTRY_H
#define NDK_OID_REGISTRY_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <ndk/ndk.h>

/* Layout of a p.* file: a header, then slots whose first 32-bit word is
 * the sequence (odd while the owner writes the slot). */
#define NDK_REG_HEADER_SIZE 4096u
#define NDK_REG_SLOT_SIZE   128u

enum ndk_reg_kind {
	NDK_REG_FREE = 0,
	NDK_REG_LISTENER,
	NDK_REG_SHARED_ENDPOINT,
	NDK_REG_CONNECTION,
};

/*
 * How an entry's ND address relates to a TCP endpoint (docs/ndk.md, OIDs;
 * NDIS_NDK_LOCAL_ENDPOINTS): iWARP maps ND ports onto TCP ports, so its
 * entries are listed in pairs; RoCE and InfiniBand ports are rdma_cm's
 * own and are listed once. 0 is the TCP pairing, which is what files
 * written before this field existed meant.
 */
enum ndk_reg_addressing {
	NDK_REG_TCP_PAIRED = 0,
	NDK_REG_ND_ONLY,
};

struct ndk_reg_entry {
	enum ndk_reg_kind kind;
	enum ndk_reg_addressing addressing;
	uint32_t ifindex;
	uint64_t netns;
	uint32_t pid;
	SOCKADDR_INET local;
	SOCKADDR_INET remote; /* connections only */
};

/* An id of the calling thread's network namespace (its cookie, which the
 * kernel never reuses, or its inode number on old kernels); 0 if unknown. */
uint64_t ndk_reg_netns_self(void);

/* Copies a Linux AF_INET/AF_INET6 address into a SOCKADDR_INET. */
void ndk_reg_sockaddr(SOCKADDR_INET *dst, const struct sockaddr *src);

/*
 * Publishes e for this process (e->pid is filled in). Returns a slot id
 * (>= 0) for ndk_reg_withdraw(), or a negative errno: the registry is a
 * best-effort view, so callers carry on without it.
 */
int ndk_reg_publish(struct ndk_reg_entry *e);
void ndk_reg_withdraw(int slot);

/*
 * Calls fn for every live entry of every process with this netns and
 * ifindex. Returns 0, or a negative errno from fn (which stops the scan).
 * Files of dead processes are skipped and removed on the way.
 */
typedef int (*ndk_reg_visit_fn)(const struct ndk_reg_entry *e, void *arg);
int ndk_reg_scan(uint64_t netns, uint32_t ifindex, ndk_reg_visit_fn fn,
		 void *arg);

/* Counter indexes are the field positions in NDIS_NDK_PERFORMANCE_COUNTERS
 * (that page and NDIS_NDK_CAPABILITIES: also their bit in
 * MissingCounterMask). */
#define NDK_CTR(field) \
	((unsigned int)(offsetof(NDIS_NDK_PERFORMANCE_COUNTERS, field) / 8))
#define NDK_CTR_COUNT \
	((unsigned int)(sizeof(NDIS_NDK_PERFORMANCE_COUNTERS) / 8))

struct ndk_reg_counters;

/* Maps (creating if needed) the counters of an interface; NULL if the
 * runtime directory is unusable. */
struct ndk_reg_counters *ndk_reg_counters_open(uint64_t netns,
					       uint32_t ifindex);
void ndk_reg_counters_close(struct ndk_reg_counters *ctrs);
/* ctrs may be NULL (counting unavailable). */
void ndk_reg_count(struct ndk_reg_counters *ctrs, unsigned int index,
		   uint64_t n);
/* Reads all counters; zeros if the interface never counted anything. */
void ndk_reg_counters_read(uint64_t netns, uint32_t ifindex,
			   uint64_t out[NDK_CTR_COUNT]);

#endif /* NDK_OID_REGISTRY_H */
