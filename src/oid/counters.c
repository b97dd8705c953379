/* SPDX-License-Identifier: MIT */
/*
 * The per-interface counters behind OID_NDK_STATISTICS (registry.h for
 * the files): each user adds to its own file of an interface, a reader
 * sums every user's, each field checked as another user's input
 * (docs/security.md, Local users).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "core/compiler.h"
#include "core/lock.h"
#include "core/log.h"
#include "oid/registry.h"
#include "oid/registry_int.h"

/* Re-reads of one counter that keeps changing under a reader. */
#define CTR_RETRIES 4u

struct ndk_reg_counters {
	void *map;
	_Atomic uint64_t *ctr;
};

static void ctr_name(char *buf, size_t len, uint64_t netns, uint32_t ifindex)
{
	snprintf(buf, len, "c.%016" PRIx64 ".%u", netns, ifindex);
}

/* Creates the file fully initialised under a temporary name, then links
 * it in place: a reader never sees a half-made counter file. */
static int ctr_create(int dirfd, const char *name, uint64_t netns,
		      uint32_t ifindex)
{
	struct ndk_ctr_header h = {
		.magic = NDK_CTR_MAGIC,
		.version = NDK_REG_VERSION,
		.ifindex = ifindex,
		.netns = netns,
	};
	char tmp[96];
	int fd, ret = 0;

	snprintf(tmp, sizeof(tmp), "%s.t%016" PRIx64, name, ndk_reg_nonce());
	fd = openat(dirfd, tmp,
		    O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	/* The user's processes count into it; others only read it. */
	if (ftruncate(fd, NDK_CTR_FILE_SIZE) ||
	    pwrite(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h) ||
	    fchmod(fd, 0644) ||
	    (linkat(dirfd, tmp, dirfd, name, 0) && errno != EEXIST))
		ret = -errno;
	close(fd);
	unlinkat(dirfd, tmp, 0);
	return ret;
}

/* This user's counters file of the interface, mapped for counting: only
 * a regular file of ours that nobody else may write. */
static void *ctr_map(int dirfd, const char *name, uint64_t netns,
		     uint32_t ifindex)
{
	const struct ndk_ctr_header *h;
	struct stat st;
	void *map;
	int fd;

	fd = openat(dirfd, name, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & NDK_REG_NOT_OURS) ||
	    st.st_size < (off_t)NDK_CTR_FILE_SIZE) {
		close(fd);
		return NULL;
	}
	map = mmap(NULL, NDK_CTR_FILE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
		   fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return NULL;
	h = map;
	if (h->magic != NDK_CTR_MAGIC || h->version != NDK_REG_VERSION ||
	    h->netns != netns || h->ifindex != ifindex) {
		munmap(map, NDK_CTR_FILE_SIZE);
		return NULL;
	}
	return map;
}

struct ndk_reg_counters *ndk_reg_counters_open(uint64_t netns, uint32_t ifindex)
{
	struct ndk_reg_counters *ctrs;
	void *map = NULL;
	char name[64];
	int dirfd;

	ctr_name(name, sizeof(name), netns, ifindex);
	ndk_lock(&ndk_reg_lock);
	dirfd = ndk_reg_own_dir_locked();
	if (dirfd >= 0) {
		map = ctr_map(dirfd, name, netns, ifindex);
		if (!map && !ctr_create(dirfd, name, netns, ifindex))
			map = ctr_map(dirfd, name, netns, ifindex);
	}
	ndk_unlock(&ndk_reg_lock);
	if (!map) {
		ndk_warn("counters of ifindex %u unavailable in %s", ifindex,
			 ndk_reg_dir());
		return NULL;
	}
	ctrs = calloc(1, sizeof(*ctrs));
	if (!ctrs) {
		munmap(map, NDK_CTR_FILE_SIZE);
		return NULL;
	}
	ctrs->map = map;
	ctrs->ctr = (_Atomic uint64_t *)((char *)map + NDK_CTR_HEADER_SIZE);
	return ctrs;
}

void ndk_reg_counters_close(struct ndk_reg_counters *ctrs)
{
	if (!ctrs)
		return;
	munmap(ctrs->map, NDK_CTR_FILE_SIZE);
	free(ctrs);
}

void ndk_reg_count(struct ndk_reg_counters *ctrs, unsigned int index,
		   uint64_t n)
{
	if (ctrs && index < NDK_CTR_COUNT)
		atomic_fetch_add_explicit(&ctrs->ctr[index], n,
					  memory_order_relaxed);
}

struct ctr_sum {
	char name[64];
	uint64_t netns;
	uint32_t ifindex;
	uint64_t *out;
};

/*
 * One user's counters of the interface, added to the sum. Each counter is
 * taken when two reads agree (a copy may tear a value being added to);
 * one that keeps moving is taken as last read.
 */
static int ctr_add_user(int dirfd, const struct stat *dir, void *arg)
{
	struct ctr_sum *s = arg;
	uint64_t a[NDK_CTR_COUNT], b[NDK_CTR_COUNT], v;
	struct ndk_ctr_header h;
	struct stat st;
	unsigned int i, tries;
	off_t off;
	int fd;

	fd = ndk_reg_user_file_open(dirfd, s->name, dir, &st);
	if (fd < 0)
		return 0;
	if (st.st_size < (off_t)NDK_CTR_FILE_SIZE ||
	    !ndk_reg_pread_all(fd, &h, sizeof(h), 0) ||
	    h.magic != NDK_CTR_MAGIC || h.version != NDK_REG_VERSION ||
	    h.netns != s->netns || h.ifindex != s->ifindex ||
	    !ndk_reg_pread_all(fd, a, sizeof(a), NDK_CTR_HEADER_SIZE) ||
	    !ndk_reg_pread_all(fd, b, sizeof(b), NDK_CTR_HEADER_SIZE))
		goto out;
	for (i = 0; i < NDK_CTR_COUNT; i++) {
		off = (off_t)(NDK_CTR_HEADER_SIZE + i * sizeof(v));
		for (tries = 0; a[i] != b[i] && tries < CTR_RETRIES; tries++) {
			a[i] = b[i];
			if (!ndk_reg_pread_all(fd, &b[i], sizeof(v), off))
				goto out;
		}
		/* Saturating: one user's file cannot wrap the sum. */
		v = s->out[i] + b[i];
		s->out[i] = v < s->out[i] ? UINT64_MAX : v;
	}
out:
	close(fd);
	return 0;
}

void ndk_reg_counters_read(uint64_t netns, uint32_t ifindex,
			   uint64_t out[NDK_CTR_COUNT])
{
	struct ctr_sum s = { .netns = netns, .ifindex = ifindex, .out = out };

	memset(out, 0, NDK_CTR_COUNT * sizeof(out[0]));
	ctr_name(s.name, sizeof(s.name), netns, ifindex);
	ndk_reg_for_each_user_dir(ctr_add_user, &s);
}
