/* SPDX-License-Identifier: MIT */
/*
 * The machine-wide registry behind OID_NDK_LOCAL_ENDPOINTS, _CONNECTIONS
 * and _STATISTICS (docs/design.md, OID registry): every process publishes its
 * listeners, shared endpoints and established connections, and every
 * process can list those of all the others. There is no daemon.
 *
 * Files in the runtime directory (NDK_RUNTIME_DIR, default /dev/shm/libndk,
 * shared by every user like /tmp: mode 1777), one directory per user,
 * u<uid> (or u<uid>.<random> if another user took that name first),
 * mode 0755: only its owner adds, changes or removes files in it, every
 * user reads them (docs/design.md, OID registry; docs/security.md):
 *
 *   p.<pid>.<random>  one per publishing process: a header and fixed-size
 *                     slots, mode 0644. The owner holds an exclusive
 *                     flock() on it for its whole life, so a reader tells
 *                     a live owner from a dead one (even after SIGKILL, the
 *                     kernel drops the lock); readers of the same user
 *                     remove the files of dead owners. Each slot is a
 *                     sequence lock: a reader never takes a torn entry.
 *   c.<netns>.<ifindex>  one per interface: the 64-bit counters of
 *                     NDIS_NDK_PERFORMANCE_COUNTERS, incremented atomically
 *                     by every process of the user, so they outlive the
 *                     processes that counted (like an adapter's counters on
 *                     Windows). A reader adds up every user's.
 *
 * A reader takes only regular files of the directory's owner from
 * directories nobody else may write, never through a symlink, copies
 * them (never maps another user's file) and checks every field.
 *
 * Interfaces are named by network namespace and ifindex: every namespace
 * has its own ifindex 1, and /dev/shm is shared between namespaces.
 */
#ifndef NDK_OID_REGISTRY_H
#define NDK_OID_REGISTRY_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <ndk/ndk.h>

/*
 * Layout of a p.* file: a header, then slots whose first 32-bit word is
 * the sequence (odd while the owner writes the slot), the entry's fields
 * in the words after it (host order).
 */
#define NDK_REG_MAGIC	    0x524b444eu /* "NDKR" */
#define NDK_REG_VERSION	    1u
#define NDK_REG_HEADER_SIZE 4096u
#define NDK_REG_SLOT_SIZE   128u
/* Slots a file may have; sparse on tmpfs: only the slots used take room. */
#define NDK_REG_CAPACITY 65536u

struct ndk_reg_header {
	uint32_t magic;
	uint32_t version;
	uint32_t pid; /* the owner's, as in the file's name */
	uint32_t slot_size;
	uint32_t capacity;
	_Atomic uint32_t high_water; /* slots [0, high_water) were used */
};

enum ndk_reg_word {
	NDK_REG_W_SEQ = 0,
	NDK_REG_W_KIND, /* enum ndk_reg_kind */
	NDK_REG_W_IFINDEX,
	NDK_REG_W_PID,
	NDK_REG_W_NETNS_LO,
	NDK_REG_W_NETNS_HI,
	NDK_REG_W_LOCAL, /* 7 words of SOCKADDR_INET */
	NDK_REG_W_REMOTE = NDK_REG_W_LOCAL + 7,
	NDK_REG_W_ADDRESSING = NDK_REG_W_REMOTE + 7, /* ndk_reg_addressing */
	NDK_REG_W_END,
};

/* Layout of a c.* file: a header, then the counters (NDK_CTR below) at
 * NDK_CTR_HEADER_SIZE. */
#define NDK_CTR_MAGIC	    0x434b444eu /* "NDKC" */
#define NDK_CTR_HEADER_SIZE 64u
#define NDK_CTR_FILE_SIZE   4096u

struct ndk_ctr_header {
	uint32_t magic;
	uint32_t version; /* NDK_REG_VERSION */
	uint32_t ifindex;
	uint32_t reserved;
	uint64_t netns;
};

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
 * Files of dead processes are skipped, and removed on the way from the
 * caller's user's directory (any directory for root). An entry with a
 * field out of range is skipped.
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

/* Maps (creating if needed) this user's counters of an interface; NULL
 * if the runtime directory is unusable. */
struct ndk_reg_counters *ndk_reg_counters_open(uint64_t netns,
					       uint32_t ifindex);
void ndk_reg_counters_close(struct ndk_reg_counters *ctrs);
/* ctrs may be NULL (counting unavailable). */
void ndk_reg_count(struct ndk_reg_counters *ctrs, unsigned int index,
		   uint64_t n);
/* Reads all counters, every user's added up; zeros if the interface
 * never counted anything. */
void ndk_reg_counters_read(uint64_t netns, uint32_t ifindex,
			   uint64_t out[NDK_CTR_COUNT]);

#endif /* NDK_OID_REGISTRY_H */
