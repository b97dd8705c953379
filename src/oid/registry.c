/* SPDX-License-Identifier: MIT */
/*
 * The machine-wide registry of endpoints, connections and counters (see
 * registry.h for the files). Readers map other processes' files read-only
 * and copy each slot under its sequence lock; writers are the owning
 * process only, serialized by reg_lock.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>
#include "core/lock.h"
#include "core/compiler.h"
#include "core/log.h"
#include "oid/registry.h"

#ifndef SO_NETNS_COOKIE
#define SO_NETNS_COOKIE 71
#endif

#define REG_DIR_DEFAULT "/dev/shm/libndk"

#define REG_MAGIC	0x524b444eu /* "NDKR" */
#define CTR_MAGIC	0x434b444eu /* "NDKC" */
#define REG_VERSION	1u
#define REG_HEADER_SIZE NDK_REG_HEADER_SIZE
#define REG_SLOT_SIZE	NDK_REG_SLOT_SIZE
#define REG_SLOT_WORDS	(REG_SLOT_SIZE / 4u)
/* Sparse on tmpfs: only the slots ever used take memory. */
#define REG_CAPACITY	65536u
#define REG_FILE_SIZE	(REG_HEADER_SIZE + (size_t)REG_CAPACITY * REG_SLOT_SIZE)
#define CTR_HEADER_SIZE 64u
#define CTR_FILE_SIZE	4096u
/* A reader gives up on a slot whose writer seems stuck (it died). */
#define REG_READ_RETRIES 10000

struct reg_header {
	uint32_t magic;
	uint32_t version;
	uint32_t pid;
	uint32_t slot_size;
	uint32_t capacity;
	_Atomic uint32_t high_water; /* slots [0, high_water) were used */
};

/* Word 0 is the sequence: odd while the owner writes the slot. */
struct reg_slot {
	_Atomic uint32_t w[REG_SLOT_WORDS];
};

enum {
	W_SEQ = 0,
	W_KIND,
	W_IFINDEX,
	W_PID,
	W_NETNS_LO,
	W_NETNS_HI,
	W_LOCAL, /* 7 words of SOCKADDR_INET */
	W_REMOTE = W_LOCAL + 7,
	W_ADDRESSING = W_REMOTE + 7,
	W_END,
};
_Static_assert(sizeof(SOCKADDR_INET) == 28, "SOCKADDR_INET is 7 words");
_Static_assert(W_END <= REG_SLOT_WORDS, "entry fits a slot");
_Static_assert(sizeof(struct reg_header) <= REG_HEADER_SIZE, "header");

struct ctr_header {
	uint32_t magic;
	uint32_t version;
	uint32_t ifindex;
	uint32_t reserved;
	uint64_t netns;
};
_Static_assert(sizeof(struct ctr_header) <= CTR_HEADER_SIZE, "ctr header");
_Static_assert(CTR_HEADER_SIZE + NDK_CTR_COUNT * 8 <= CTR_FILE_SIZE,
	       "counters fit");

struct ndk_reg_counters {
	void *map;
	_Atomic uint64_t *ctr;
};

/* This process's file, created on the first publication. */
static struct ndk_lock reg_lock = NDK_LOCK_INITIALIZER(NDK_LOCK_OID);
static int reg_fd = -1;
static void *reg_map;
static pid_t reg_owner;
static char reg_path[4096];
static uint32_t *reg_free; /* stack of withdrawn slots */
static size_t reg_nfree, reg_free_cap;
static bool reg_atfork_done;

static const char *reg_dir(void)
{
	const char *d = getenv("NDK_RUNTIME_DIR");

	return d && *d ? d : REG_DIR_DEFAULT;
}

/* The directory is shared by every user, like /tmp (sticky, 1777). */
static int reg_dir_ensure(void)
{
	const char *d = reg_dir();

	if (mkdir(d, 01777) == 0) {
		chmod(d, 01777); /* mkdir obeys the umask */
		return 0;
	}
	return errno == EEXIST ? 0 : -errno;
}

uint64_t ndk_reg_netns_self(void)
{
	uint64_t cookie = 0;
	socklen_t len = sizeof(cookie);
	struct stat st;
	int fd;

	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd >= 0) {
		if (getsockopt(fd, SOL_SOCKET, SO_NETNS_COOKIE, &cookie,
			       &len) ||
		    len != sizeof(cookie))
			cookie = 0;
		close(fd);
	}
	if (cookie)
		return cookie;
	/* Kernels before 5.14: the namespace's inode, tagged apart. */
	if (!stat("/proc/thread-self/ns/net", &st))
		return (1ull << 63) | (uint64_t)st.st_ino;
	return 0;
}

void ndk_reg_sockaddr(SOCKADDR_INET *dst, const struct sockaddr *src)
{
	memset(dst, 0, sizeof(*dst));
	if (!src)
		return;
	if (src->sa_family == AF_INET)
		memcpy(&dst->Ipv4, src, sizeof(dst->Ipv4));
	else if (src->sa_family == AF_INET6)
		memcpy(&dst->Ipv6, src, sizeof(dst->Ipv6));
}

/* ------------------------------------------------------------------ */
/* Slots                                                              */

static struct reg_slot *reg_slot_at(void *map, uint32_t i)
{
	return (struct reg_slot *)((char *)map + REG_HEADER_SIZE +
				   (size_t)i * REG_SLOT_SIZE);
}

static void words_put(struct reg_slot *s, unsigned int w, const void *src,
		      size_t len)
{
	uint32_t tmp[8];
	size_t i;

	memset(tmp, 0, sizeof(tmp));
	memcpy(tmp, src, len);
	for (i = 0; i < (len + 3) / 4; i++)
		atomic_store_explicit(&s->w[w + i], tmp[i],
				      memory_order_release);
}

static void words_get(const uint32_t *words, unsigned int w, void *dst,
		      size_t len)
{
	memcpy(dst, &words[w], len);
}

/* Writer side of the sequence lock (reg_lock held). */
static void reg_slot_write(struct reg_slot *s, const struct ndk_reg_entry *e)
{
	uint32_t seq = atomic_load_explicit(&s->w[W_SEQ], memory_order_relaxed);
	unsigned int i;

	/* Release stores of the data (not a fence, which TSan cannot model)
	 * keep the odd sequence ahead of every data word. */
	atomic_store_explicit(&s->w[W_SEQ], seq + 1, memory_order_relaxed);
	if (!e) {
		for (i = 1; i < REG_SLOT_WORDS; i++)
			atomic_store_explicit(&s->w[i], 0,
					      memory_order_release);
	} else {
		atomic_store_explicit(&s->w[W_KIND], (uint32_t)e->kind,
				      memory_order_release);
		atomic_store_explicit(&s->w[W_IFINDEX], e->ifindex,
				      memory_order_release);
		atomic_store_explicit(&s->w[W_PID], e->pid,
				      memory_order_release);
		atomic_store_explicit(&s->w[W_NETNS_LO], (uint32_t)e->netns,
				      memory_order_release);
		atomic_store_explicit(&s->w[W_NETNS_HI],
				      (uint32_t)(e->netns >> 32),
				      memory_order_release);
		words_put(s, W_LOCAL, &e->local, sizeof(e->local));
		words_put(s, W_REMOTE, &e->remote, sizeof(e->remote));
		atomic_store_explicit(&s->w[W_ADDRESSING],
				      (uint32_t)e->addressing,
				      memory_order_release);
	}
	atomic_store_explicit(&s->w[W_SEQ], seq + 2, memory_order_release);
}

/*
 * Reader side: a consistent copy of the slot, or false if it is free or
 * its writer never finished (a writer killed mid-update).
 */
static bool reg_slot_read(struct reg_slot *s, struct ndk_reg_entry *e)
{
	uint32_t words[REG_SLOT_WORDS];
	uint32_t seq1, seq2;
	unsigned int i, tries;

	for (tries = 0; tries < REG_READ_RETRIES; tries++) {
		seq1 = atomic_load_explicit(&s->w[W_SEQ], memory_order_acquire);
		if (seq1 & 1)
			continue;
		/* Acquire loads keep the second sequence read after them. */
		for (i = 1; i < W_END; i++)
			words[i] = atomic_load_explicit(&s->w[i],
							memory_order_acquire);
		seq2 = atomic_load_explicit(&s->w[W_SEQ], memory_order_relaxed);
		if (seq1 != seq2)
			continue;
		if (words[W_KIND] == NDK_REG_FREE ||
		    words[W_KIND] > NDK_REG_CONNECTION)
			return false;
		e->kind = (enum ndk_reg_kind)words[W_KIND];
		e->ifindex = words[W_IFINDEX];
		e->pid = words[W_PID];
		e->netns = (uint64_t)words[W_NETNS_LO] |
			   ((uint64_t)words[W_NETNS_HI] << 32);
		words_get(words, W_LOCAL, &e->local, sizeof(e->local));
		words_get(words, W_REMOTE, &e->remote, sizeof(e->remote));
		e->addressing = words[W_ADDRESSING] == NDK_REG_ND_ONLY
					? NDK_REG_ND_ONLY
					: NDK_REG_TCP_PAIRED;
		return true;
	}
	return false;
}

/* ------------------------------------------------------------------ */
/* This process's file                                                */

static void reg_forget_locked(void)
{
	NDK_ASSERT_LOCKED(&reg_lock);
	if (reg_map)
		munmap(reg_map, REG_FILE_SIZE);
	if (reg_fd >= 0)
		close(reg_fd);
	reg_map = NULL;
	reg_fd = -1;
	reg_nfree = 0;
}

/* A forked child owns nothing of its parent's registry: the parent's
 * entries stay the parent's, and the child makes its own file. */
static void reg_atfork_child(void)
{
	ndk_lock_init(&reg_lock, NDK_LOCK_OID);
	ndk_lock(&reg_lock);
	reg_forget_locked();
	ndk_unlock(&reg_lock);
}

/* The file goes with the process when it exits normally; after a crash
 * the next reader removes it. */
__attribute__((destructor)) static void reg_at_exit(void)
{
	if (reg_map && reg_owner == getpid())
		unlink(reg_path);
}

static int reg_create_locked(void)
{
	char tmp_path[sizeof(reg_path)];
	struct reg_header *h;
	uint64_t nonce;
	void *map;
	int fd, ret;

	NDK_ASSERT_LOCKED(&reg_lock);

	ret = reg_dir_ensure();
	if (ret)
		return ret;
	if (getrandom(&nonce, sizeof(nonce), GRND_NONBLOCK) != sizeof(nonce))
		nonce = (uint64_t)(uintptr_t)&nonce ^ (uint64_t)getpid();
	snprintf(reg_path, sizeof(reg_path), "%s/p.%d.%016" PRIx64, reg_dir(),
		 (int)getpid(), nonce);
	snprintf(tmp_path, sizeof(tmp_path), "%s/t.%d.%016" PRIx64, reg_dir(),
		 (int)getpid(), nonce);

	fd = open(tmp_path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	fchmod(fd, 0644);
	/* Locked before it gets the name readers look for, so a reader
	 * never mistakes a file being born for a dead process's. */
	if (flock(fd, LOCK_EX) || ftruncate(fd, (off_t)REG_FILE_SIZE)) {
		ret = -errno;
		goto fail;
	}
	map = mmap(NULL, REG_FILE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		   0);
	if (map == MAP_FAILED) {
		ret = -errno;
		goto fail;
	}
	h = map;
	h->magic = REG_MAGIC;
	h->version = REG_VERSION;
	h->pid = (uint32_t)getpid();
	h->slot_size = REG_SLOT_SIZE;
	h->capacity = REG_CAPACITY;
	atomic_store_explicit(&h->high_water, 0, memory_order_release);
	if (rename(tmp_path, reg_path)) {
		ret = -errno;
		munmap(map, REG_FILE_SIZE);
		goto fail;
	}
	reg_fd = fd;
	reg_map = map;
	reg_owner = getpid();
	if (!reg_atfork_done) {
		pthread_atfork(NULL, NULL, reg_atfork_child);
		reg_atfork_done = true;
	}
	return 0;
fail:
	close(fd);
	unlink(tmp_path);
	return ret;
}

int ndk_reg_publish(struct ndk_reg_entry *e)
{
	static bool warned;
	struct reg_header *h;
	uint32_t slot;
	int ret = 0;

	ndk_lock(&reg_lock);
	if (!reg_map)
		ret = reg_create_locked();
	/* The file's owner is this process (a forked child makes its own):
	 * no getpid() per entry. */
	e->pid = (uint32_t)(ret ? getpid() : reg_owner);
	if (ret) {
		if (!warned)
			ndk_warn("registry %s unusable (%s): endpoints and "
				 "connections are not listed",
				 reg_dir(), strerror(-ret));
		warned = true;
		goto out;
	}
	h = reg_map;
	if (reg_nfree) {
		slot = reg_free[--reg_nfree];
	} else {
		slot = atomic_load_explicit(&h->high_water,
					    memory_order_relaxed);
		if (slot >= REG_CAPACITY) {
			ret = -ENOSPC;
			goto out;
		}
	}
	reg_slot_write(reg_slot_at(reg_map, slot), e);
	if (slot == atomic_load_explicit(&h->high_water, memory_order_relaxed))
		atomic_store_explicit(&h->high_water, slot + 1,
				      memory_order_release);
	ret = (int)slot;
out:
	ndk_unlock(&reg_lock);
	return ret;
}

void ndk_reg_withdraw(int slot)
{
	uint32_t *grown;

	if (slot < 0)
		return;
	ndk_lock(&reg_lock);
	/* After a fork the slot belongs to the parent's file. */
	if (!reg_map || (uint32_t)slot >= REG_CAPACITY)
		goto out;
	reg_slot_write(reg_slot_at(reg_map, (uint32_t)slot), NULL);
	if (reg_nfree == reg_free_cap) {
		size_t cap = reg_free_cap ? 2 * reg_free_cap : 64;

		grown = realloc(reg_free, cap * sizeof(*grown));
		if (!grown)
			goto out; /* the slot is lost, not the entry */
		reg_free = grown;
		reg_free_cap = cap;
	}
	reg_free[reg_nfree++] = (uint32_t)slot;
out:
	ndk_unlock(&reg_lock);
}

/* ------------------------------------------------------------------ */
/* Readers                                                            */

/*
 * The owner of the file on fd is gone (its lock could be taken): remove
 * the file, unless another reader already does.
 */
static void reg_reap(int dirfd, const char *name, int fd)
{
	if (!flock(fd, LOCK_EX | LOCK_NB))
		unlinkat(dirfd, name, 0);
}

static int reg_scan_file(int dirfd, const char *name, uint64_t netns,
			 uint32_t ifindex, ndk_reg_visit_fn fn, void *arg)
{
	const struct reg_header *h;
	struct ndk_reg_entry e;
	struct stat st;
	uint32_t i, n;
	void *map;
	int fd, ret = 0;

	fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return 0; /* reaped meanwhile */
	if (!flock(fd, LOCK_SH | LOCK_NB)) {
		reg_reap(dirfd, name, fd);
		goto out;
	}
	if (errno != EWOULDBLOCK || fstat(fd, &st) ||
	    (size_t)st.st_size < REG_HEADER_SIZE)
		goto out;
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		goto out;
	h = map;
	if (h->magic == REG_MAGIC && h->version == REG_VERSION &&
	    h->slot_size == REG_SLOT_SIZE) {
		n = atomic_load_explicit(
			&((struct reg_header *)map)->high_water,
			memory_order_acquire);
		n = MIN(n, MIN(h->capacity, (uint32_t)(((size_t)st.st_size -
							REG_HEADER_SIZE) /
						       REG_SLOT_SIZE)));
		for (i = 0; i < n && !ret; i++) {
			if (!reg_slot_read(reg_slot_at(map, i), &e))
				continue;
			if (e.netns != netns || e.ifindex != ifindex)
				continue;
			ret = fn(&e, arg);
		}
	}
	munmap(map, (size_t)st.st_size);
out:
	close(fd);
	return ret;
}

int ndk_reg_scan(uint64_t netns, uint32_t ifindex, ndk_reg_visit_fn fn,
		 void *arg)
{
	struct dirent *d;
	DIR *dir;
	int ret = 0;

	dir = opendir(reg_dir());
	if (!dir)
		return errno == ENOENT ? 0 : -errno;
	while (!ret && (d = readdir(dir))) {
		if (strncmp(d->d_name, "p.", 2))
			continue;
		ret = reg_scan_file(dirfd(dir), d->d_name, netns, ifindex, fn,
				    arg);
	}
	closedir(dir);
	return ret;
}

/* ------------------------------------------------------------------ */
/* Counters                                                           */

static void ctr_path(char *buf, size_t len, const char *dir, uint64_t netns,
		     uint32_t ifindex)
{
	snprintf(buf, len, "%s/c.%016" PRIx64 ".%u", dir, netns, ifindex);
}

/* Creates the file fully initialised under a temporary name, then links
 * it in place: a reader never maps a half-made counter file. */
static int ctr_create(const char *path, uint64_t netns, uint32_t ifindex)
{
	char tmp[4300];
	struct ctr_header h = {
		.magic = CTR_MAGIC,
		.version = REG_VERSION,
		.ifindex = ifindex,
		.netns = netns,
	};
	uint64_t nonce = 0;
	int fd, ret = 0;

	if (getrandom(&nonce, sizeof(nonce), GRND_NONBLOCK) != sizeof(nonce))
		nonce = (uint64_t)getpid();
	snprintf(tmp, sizeof(tmp), "%s.t%016" PRIx64, path, nonce);
	fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
	if (fd < 0)
		return -errno;
	/* Every user's processes count into it. */
	fchmod(fd, 0666);
	if (ftruncate(fd, CTR_FILE_SIZE) ||
	    pwrite(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h) ||
	    (link(tmp, path) && errno != EEXIST))
		ret = -errno;
	close(fd);
	unlink(tmp);
	return ret;
}

static void *ctr_map(const char *path, bool writable, uint64_t netns,
		     uint32_t ifindex)
{
	const struct ctr_header *h;
	struct stat st;
	void *map;
	int fd;

	fd = open(path,
		  (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) || st.st_size < (off_t)CTR_FILE_SIZE) {
		close(fd);
		return NULL;
	}
	map = mmap(NULL, CTR_FILE_SIZE, PROT_READ | (writable ? PROT_WRITE : 0),
		   MAP_SHARED, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return NULL;
	h = map;
	if (h->magic != CTR_MAGIC || h->version != REG_VERSION ||
	    h->netns != netns || h->ifindex != ifindex) {
		munmap(map, CTR_FILE_SIZE);
		return NULL;
	}
	return map;
}

struct ndk_reg_counters *ndk_reg_counters_open(uint64_t netns, uint32_t ifindex)
{
	struct ndk_reg_counters *ctrs;
	char path[4200];
	void *map;

	if (reg_dir_ensure())
		return NULL;
	ctr_path(path, sizeof(path), reg_dir(), netns, ifindex);
	map = ctr_map(path, true, netns, ifindex);
	if (!map && !ctr_create(path, netns, ifindex))
		map = ctr_map(path, true, netns, ifindex);
	if (!map) {
		ndk_warn("counters of ifindex %u unavailable in %s", ifindex,
			 reg_dir());
		return NULL;
	}
	ctrs = calloc(1, sizeof(*ctrs));
	if (!ctrs) {
		munmap(map, CTR_FILE_SIZE);
		return NULL;
	}
	ctrs->map = map;
	ctrs->ctr = (_Atomic uint64_t *)((char *)map + CTR_HEADER_SIZE);
	return ctrs;
}

void ndk_reg_counters_close(struct ndk_reg_counters *ctrs)
{
	if (!ctrs)
		return;
	munmap(ctrs->map, CTR_FILE_SIZE);
	free(ctrs);
}

void ndk_reg_count(struct ndk_reg_counters *ctrs, unsigned int index,
		   uint64_t n)
{
	if (ctrs && index < NDK_CTR_COUNT)
		atomic_fetch_add_explicit(&ctrs->ctr[index], n,
					  memory_order_relaxed);
}

void ndk_reg_counters_read(uint64_t netns, uint32_t ifindex,
			   uint64_t out[NDK_CTR_COUNT])
{
	_Atomic uint64_t *ctr;
	char path[4200];
	unsigned int i;
	void *map;

	memset(out, 0, NDK_CTR_COUNT * sizeof(out[0]));
	ctr_path(path, sizeof(path), reg_dir(), netns, ifindex);
	map = ctr_map(path, false, netns, ifindex);
	if (!map)
		return;
	ctr = (_Atomic uint64_t *)((char *)map + CTR_HEADER_SIZE);
	for (i = 0; i < NDK_CTR_COUNT; i++)
		out[i] = atomic_load_explicit(&ctr[i], memory_order_relaxed);
	munmap(map, CTR_FILE_SIZE);
}
