/* SPDX-License-Identifier: MIT */
/*
 * The machine-wide registry of endpoints, connections and counters (see
 * registry.h for the files). A process writes only in its user's
 * directory, serialized by ndk_reg_lock. Readers copy every user's files
 * with pread(), never map them (a mapping of a file its owner can
 * truncate faults), and check every field before use: another user's
 * file is untrusted input (docs/security.md, Local users).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
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
#include "core/netns.h"
#include "oid/registry.h"
#include "oid/registry_int.h"

#define REG_DIR_DEFAULT "/dev/shm/libndk"

#define REG_SLOT_WORDS (NDK_REG_SLOT_SIZE / 4u)
#define REG_FILE_SIZE \
	(NDK_REG_HEADER_SIZE + (size_t)NDK_REG_CAPACITY * NDK_REG_SLOT_SIZE)
/* Slots a reader copies at a time. */
#define REG_BATCH 256u
/* Re-reads a reader spends on the unsettled slots of one file: a writer
 * that died mid-update, or a file made to look like one, costs no more. */
#define REG_RETRY_BUDGET 1024u

_Static_assert(NDK_REG_W_END <= REG_SLOT_WORDS, "entry fits a slot");
_Static_assert(sizeof(struct ndk_reg_header) <= NDK_REG_HEADER_SIZE, "header");
_Static_assert(sizeof(struct ndk_ctr_header) <= NDK_CTR_HEADER_SIZE,
	       "counters header");
_Static_assert(sizeof(SOCKADDR_INET) == 28, "SOCKADDR_INET is 7 words");
_Static_assert(NDK_CTR_HEADER_SIZE + NDK_CTR_COUNT * 8 <= NDK_CTR_FILE_SIZE,
	       "counters fit");

/* Word 0 is the sequence: odd while the owner writes the slot. */
struct reg_slot {
	_Atomic uint32_t w[REG_SLOT_WORDS];
};

/* This process's file, created on the first publication, and its user's
 * directory. */
struct ndk_lock ndk_reg_lock = NDK_LOCK_INITIALIZER(NDK_LOCK_OID);
static int reg_fd = -1;
static void *reg_map;
static pid_t reg_owner;
static int reg_dirfd = -1; /* the directory of the file */
static char reg_name[64];
static int own_dirfd = -1;
static uid_t own_uid;
static char own_top[4096]; /* the runtime directory it is in */
static uint32_t *reg_free; /* stack of withdrawn slots */
static size_t reg_nfree, reg_free_cap;
static bool reg_atfork_done;

const char *ndk_reg_dir(void)
{
	const char *d = getenv("NDK_RUNTIME_DIR");

	return d && *d ? d : REG_DIR_DEFAULT;
}

uint64_t ndk_reg_nonce(void)
{
	uint64_t nonce;

	if (getrandom(&nonce, sizeof(nonce), GRND_NONBLOCK) != sizeof(nonce))
		nonce = (uint64_t)(uintptr_t)&nonce ^ (uint64_t)getpid() << 32;
	return nonce;
}

/* ------------------------------------------------------------------ */
/* Directories                                                        */

/*
 * The runtime directory, shared by every user like /tmp (sticky, 1777),
 * created if create. Never through a symlink. A negative errno if none.
 */
static int top_open(bool create)
{
	const char *d = ndk_reg_dir();
	bool made = create && mkdir(d, 01777) == 0;
	struct stat st;
	int fd;

	fd = open(d, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* mkdir obeys the umask; the mode is set on what was opened, which
	 * is what was made unless it was replaced meanwhile. */
	if (made && !fstat(fd, &st) && st.st_uid == geteuid())
		fchmod(fd, 01777);
	return fd;
}

/* A user's directory: a directory of that owner that nobody else may add
 * files to. */
static bool user_dir_ok(const struct stat *st, uid_t uid)
{
	return S_ISDIR(st->st_mode) && st->st_uid == uid &&
	       !(st->st_mode & NDK_REG_NOT_OURS);
}

/* Opens (making it if need be) top's entry name as uid's directory. */
static int user_dir_open(int top, const char *name, uid_t uid)
{
	struct stat st;
	int fd;

	if (mkdirat(top, name, 0755) && errno != EEXIST)
		return -errno;
	fd = openat(top, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (!fstat(fd, &st) && S_ISDIR(st.st_mode) && st.st_uid == uid &&
	    (st.st_mode & NDK_REG_NOT_OURS))
		fchmod(fd, st.st_mode & 0755);
	if (fstat(fd, &st) || !user_dir_ok(&st, uid)) {
		close(fd);
		return -EPERM;
	}
	return fd;
}

/*
 * The name u<uid> taken by someone else (another user may make it first
 * in a shared directory): any directory of ours named u<uid>.<anything>,
 * or a new one. Readers go by owner, not by name.
 */
static int user_dir_fallback(int top, uid_t uid)
{
	char prefix[32], name[64];
	struct dirent *d;
	DIR *dir;
	int fd = -ENOENT, dup_top = dup(top);

	snprintf(prefix, sizeof(prefix), "u%u.", (unsigned int)uid);
	dir = dup_top >= 0 ? fdopendir(dup_top) : NULL;
	if (!dir && dup_top >= 0)
		close(dup_top);
	while (dir && fd < 0 && (d = readdir(dir))) {
		if (strncmp(d->d_name, prefix, strlen(prefix)))
			continue;
		fd = openat(top, d->d_name,
			    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0) {
			struct stat st;

			if (fstat(fd, &st) || !user_dir_ok(&st, uid)) {
				close(fd);
				fd = -EPERM;
			}
		}
	}
	if (dir)
		closedir(dir);
	if (fd >= 0)
		return fd;
	snprintf(name, sizeof(name), "%s%016" PRIx64, prefix, ndk_reg_nonce());
	return user_dir_open(top, name, uid);
}

/* ndk_reg_lock held: this process's user's directory (its effective uid's:
 * a process that changes it gets the new user's). */
int ndk_reg_own_dir_locked(void)
{
	uid_t uid = geteuid();
	char name[32];
	int top, fd;

	NDK_ASSERT_LOCKED(&ndk_reg_lock);
	if (own_dirfd >= 0 && own_uid == uid && !strcmp(own_top, ndk_reg_dir()))
		return own_dirfd;
	top = top_open(true);
	if (top < 0)
		return top;
	snprintf(name, sizeof(name), "u%u", (unsigned int)uid);
	fd = user_dir_open(top, name, uid);
	if (fd == -EPERM)
		fd = user_dir_fallback(top, uid);
	close(top);
	if (fd < 0)
		return fd;
	if (own_dirfd >= 0)
		close(own_dirfd);
	own_dirfd = fd;
	own_uid = uid;
	snprintf(own_top, sizeof(own_top), "%s", ndk_reg_dir());
	return fd;
}

/*
 * Opens file name of the user directory dirfd (whose stat is dir) for
 * reading: a regular file of the directory's owner, never through a
 * symlink, never blocking on a FIFO. -1 for anything else.
 */
int ndk_reg_user_file_open(int dirfd, const char *name, const struct stat *dir,
			   struct stat *st)
{
	int fd = openat(dirfd, name,
			O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);

	if (fd < 0)
		return -1;
	if (fstat(fd, st) || !S_ISREG(st->st_mode) ||
	    st->st_uid != dir->st_uid) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Called for every user directory; non-zero stops the walk. */
typedef int (*user_dir_fn)(int dirfd, const struct stat *dir, void *arg);

/* Every user's directory in the runtime directory (there may be none):
 * 0, or what fn returned to stop. */
int ndk_reg_for_each_user_dir(ndk_reg_user_dir_fn fn, void *arg)
{
	struct dirent *d;
	struct stat st;
	DIR *dir;
	int top, fd, ret = 0;

	top = top_open(false);
	if (top < 0)
		return top == -ENOENT ? 0 : top;
	dir = fdopendir(top);
	if (!dir) {
		close(top);
		return -ENOMEM;
	}
	while (!ret && (d = readdir(dir))) {
		if (d->d_name[0] != 'u')
			continue;
		fd = openat(top, d->d_name,
			    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK |
				    O_CLOEXEC);
		if (fd < 0)
			continue;
		if (!fstat(fd, &st) && user_dir_ok(&st, st.st_uid))
			ret = fn(fd, &st, arg);
		close(fd);
	}
	closedir(dir);
	return ret;
}

/* ------------------------------------------------------------------ */
/* Addresses and the namespace                                        */

uint64_t ndk_reg_netns_self(void)
{
	uint64_t cookie = ndk_netns_cookie();
	struct stat st;

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

/*
 * An address as read from a file, rebuilt field by field: IPv4, IPv6 or
 * none (all zero), nothing else and no stray bytes. False if the family
 * is none of these.
 */
static bool sockaddr_clean(SOCKADDR_INET *dst, const SOCKADDR_INET *src)
{
	SOCKADDR_INET a;

	memset(&a, 0, sizeof(a));
	switch (src->si_family) {
	case AF_UNSPEC:
		break;
	case AF_INET:
		a.Ipv4.sin_family = AF_INET;
		a.Ipv4.sin_port = src->Ipv4.sin_port;
		a.Ipv4.sin_addr = src->Ipv4.sin_addr;
		break;
	case AF_INET6:
		a.Ipv6.sin6_family = AF_INET6;
		a.Ipv6.sin6_port = src->Ipv6.sin6_port;
		a.Ipv6.sin6_flowinfo = src->Ipv6.sin6_flowinfo;
		a.Ipv6.sin6_addr = src->Ipv6.sin6_addr;
		a.Ipv6.sin6_scope_id = src->Ipv6.sin6_scope_id;
		break;
	default:
		return false;
	}
	*dst = a;
	return true;
}

/* ------------------------------------------------------------------ */
/* Slots                                                              */

static struct reg_slot *reg_slot_at(void *map, uint32_t i)
{
	return (struct reg_slot *)((char *)map + NDK_REG_HEADER_SIZE +
				   (size_t)i * NDK_REG_SLOT_SIZE);
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

/* Writer side of the sequence lock (ndk_reg_lock held). */
static void reg_slot_write(struct reg_slot *s, const struct ndk_reg_entry *e)
{
	uint32_t seq = atomic_load_explicit(&s->w[NDK_REG_W_SEQ],
					    memory_order_relaxed);
	unsigned int i;

	/* Release stores of the data (not a fence, which TSan cannot model)
	 * keep the odd sequence ahead of every data word. */
	atomic_store_explicit(&s->w[NDK_REG_W_SEQ], seq + 1,
			      memory_order_relaxed);
	if (!e) {
		for (i = 1; i < REG_SLOT_WORDS; i++)
			atomic_store_explicit(&s->w[i], 0,
					      memory_order_release);
	} else {
		atomic_store_explicit(&s->w[NDK_REG_W_KIND], (uint32_t)e->kind,
				      memory_order_release);
		atomic_store_explicit(&s->w[NDK_REG_W_IFINDEX], e->ifindex,
				      memory_order_release);
		atomic_store_explicit(&s->w[NDK_REG_W_PID], e->pid,
				      memory_order_release);
		atomic_store_explicit(&s->w[NDK_REG_W_NETNS_LO],
				      (uint32_t)e->netns, memory_order_release);
		atomic_store_explicit(&s->w[NDK_REG_W_NETNS_HI],
				      (uint32_t)(e->netns >> 32),
				      memory_order_release);
		words_put(s, NDK_REG_W_LOCAL, &e->local, sizeof(e->local));
		words_put(s, NDK_REG_W_REMOTE, &e->remote, sizeof(e->remote));
		atomic_store_explicit(&s->w[NDK_REG_W_ADDRESSING],
				      (uint32_t)e->addressing,
				      memory_order_release);
	}
	atomic_store_explicit(&s->w[NDK_REG_W_SEQ], seq + 2,
			      memory_order_release);
}

/*
 * A slot as copied from a file, settled (the same in two copies taken one
 * after the other, sequence even: see reg_scan_file), into e: false if it
 * is free or anything in it is out of range. pid is the file's.
 */
static bool reg_slot_parse(const uint32_t *w, uint32_t pid,
			   struct ndk_reg_entry *e)
{
	SOCKADDR_INET a;

	switch (w[NDK_REG_W_KIND]) {
	case NDK_REG_LISTENER:
	case NDK_REG_SHARED_ENDPOINT:
	case NDK_REG_CONNECTION:
		break;
	default:
		return false;
	}
	if (w[NDK_REG_W_PID] != pid ||
	    w[NDK_REG_W_ADDRESSING] > NDK_REG_ND_ONLY)
		return false;
	e->kind = (enum ndk_reg_kind)w[NDK_REG_W_KIND];
	e->addressing = (enum ndk_reg_addressing)w[NDK_REG_W_ADDRESSING];
	e->ifindex = w[NDK_REG_W_IFINDEX];
	e->pid = pid;
	e->netns = (uint64_t)w[NDK_REG_W_NETNS_LO] |
		   ((uint64_t)w[NDK_REG_W_NETNS_HI] << 32);
	memcpy(&a, &w[NDK_REG_W_LOCAL], sizeof(a));
	if (!sockaddr_clean(&e->local, &a))
		return false;
	memcpy(&a, &w[NDK_REG_W_REMOTE], sizeof(a));
	if (!sockaddr_clean(&e->remote, &a))
		return false;
	/* Only a connection has a peer. */
	if (e->kind != NDK_REG_CONNECTION && e->remote.si_family != AF_UNSPEC)
		return false;
	return true;
}

/* ------------------------------------------------------------------ */
/* This process's file                                                */

static void reg_forget_locked(void)
{
	NDK_ASSERT_LOCKED(&ndk_reg_lock);
	if (reg_map)
		munmap(reg_map, REG_FILE_SIZE);
	if (reg_fd >= 0)
		close(reg_fd);
	if (reg_dirfd >= 0)
		close(reg_dirfd);
	reg_map = NULL;
	reg_fd = -1;
	reg_dirfd = -1;
	reg_nfree = 0;
}

/* A forked child owns nothing of its parent's registry: the parent's
 * entries stay the parent's, and the child makes its own file. */
static void reg_atfork_child(void)
{
	ndk_lock_init(&ndk_reg_lock, NDK_LOCK_OID);
	ndk_lock(&ndk_reg_lock);
	reg_forget_locked();
	ndk_unlock(&ndk_reg_lock);
}

/* The file goes with the process when it exits normally; after a crash
 * the next reader of its user removes it. */
__attribute__((destructor)) static void reg_at_exit(void)
{
	if (reg_map && reg_owner == getpid() && reg_dirfd >= 0)
		unlinkat(reg_dirfd, reg_name, 0);
}

static int reg_create_locked(void)
{
	struct ndk_reg_header *h;
	char tmp_name[sizeof(reg_name)];
	uint64_t nonce = ndk_reg_nonce();
	int dirfd, fd, ret;
	void *map;

	NDK_ASSERT_LOCKED(&ndk_reg_lock);

	dirfd = ndk_reg_own_dir_locked();
	if (dirfd < 0)
		return dirfd;
	dirfd = fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
	if (dirfd < 0)
		return -errno;
	snprintf(reg_name, sizeof(reg_name), "p.%d.%016" PRIx64, (int)getpid(),
		 nonce);
	snprintf(tmp_name, sizeof(tmp_name), "t.%d.%016" PRIx64, (int)getpid(),
		 nonce);

	/* Nobody else may open it before it is locked: a reader's shared
	 * lock taken first would hold up the exclusive one. */
	fd = openat(dirfd, tmp_name,
		    O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		ret = -errno;
		close(dirfd);
		return ret;
	}
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
	h->magic = NDK_REG_MAGIC;
	h->version = NDK_REG_VERSION;
	h->pid = (uint32_t)getpid();
	h->slot_size = NDK_REG_SLOT_SIZE;
	h->capacity = NDK_REG_CAPACITY;
	atomic_store_explicit(&h->high_water, 0, memory_order_release);
	if (fchmod(fd, 0644) || renameat(dirfd, tmp_name, dirfd, reg_name)) {
		ret = -errno;
		munmap(map, REG_FILE_SIZE);
		goto fail;
	}
	reg_fd = fd;
	reg_map = map;
	reg_dirfd = dirfd;
	reg_owner = getpid();
	if (!reg_atfork_done) {
		pthread_atfork(NULL, NULL, reg_atfork_child);
		reg_atfork_done = true;
	}
	return 0;
fail:
	close(fd);
	unlinkat(dirfd, tmp_name, 0);
	close(dirfd);
	return ret;
}

int ndk_reg_publish(struct ndk_reg_entry *e)
{
	static bool warned;
	struct ndk_reg_header *h;
	uint32_t slot;
	int ret = 0;

	ndk_lock(&ndk_reg_lock);
	if (!reg_map)
		ret = reg_create_locked();
	/* The file's owner is this process (a forked child makes its own):
	 * no getpid() per entry. */
	e->pid = (uint32_t)(ret ? getpid() : reg_owner);
	if (ret) {
		if (!warned)
			ndk_warn("registry %s unusable (%s): endpoints and "
				 "connections are not listed",
				 ndk_reg_dir(), strerror(-ret));
		warned = true;
		goto out;
	}
	h = reg_map;
	if (reg_nfree) {
		slot = reg_free[--reg_nfree];
	} else {
		slot = atomic_load_explicit(&h->high_water,
					    memory_order_relaxed);
		if (slot >= NDK_REG_CAPACITY) {
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
	ndk_unlock(&ndk_reg_lock);
	return ret;
}

void ndk_reg_withdraw(int slot)
{
	uint32_t *grown;

	if (slot < 0)
		return;
	ndk_lock(&ndk_reg_lock);
	/* After a fork the slot belongs to the parent's file. */
	if (!reg_map || (uint32_t)slot >= NDK_REG_CAPACITY)
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
	ndk_unlock(&ndk_reg_lock);
}

/* ------------------------------------------------------------------ */
/* Readers                                                            */

/* The pid in a name p.<pid>.<16 hex digits>, or 0 if it is not one. */
static uint32_t reg_name_pid(const char *name)
{
	unsigned long pid;
	char *end;
	size_t i;

	if (strncmp(name, "p.", 2) || name[2] < '1' || name[2] > '9')
		return 0;
	pid = strtoul(name + 2, &end, 10);
	if (*end != '.' || pid > UINT32_MAX)
		return 0;
	for (i = 1; i <= 16; i++)
		if (!end[i] || !strchr("0123456789abcdef", end[i]))
			return 0;
	return end[17] ? 0 : (uint32_t)pid;
}

/*
 * Whether process pid runs as uid (real, effective, saved or filesystem
 * uid): a file's entries are listed under its owner's processes only, so
 * a user cannot put its entries under another's pid. True when there is
 * no /proc to ask.
 */
static bool pid_of_user(uint32_t pid, uid_t uid)
{
	char path[32], buf[2048], *p;
	unsigned long id[4];
	ssize_t n;
	int fd, i;

	snprintf(path, sizeof(path), "/proc/%u/status", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT && access("/proc/self/status", R_OK);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	p = strstr(buf, "\nUid:");
	if (!p || sscanf(p + 5, "%lu %lu %lu %lu", &id[0], &id[1], &id[2],
			 &id[3]) != 4)
		return false;
	for (i = 0; i < 4; i++)
		if (id[i] == (unsigned long)uid)
			return true;
	return false;
}

/* Reads exactly len bytes at off; false if fewer are there. */
bool ndk_reg_pread_all(int fd, void *buf, size_t len, off_t off)
{
	ssize_t n;

	while (len) {
		n = pread(fd, buf, len, off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		buf = (char *)buf + n;
		len -= (size_t)n;
		off += n;
	}
	return true;
}

/* A slot as two copies saw it: the same bytes, sequence even. */
static bool slot_settled(const uint32_t *a, const uint32_t *b)
{
	return !(a[NDK_REG_W_SEQ] & 1) && !memcmp(a, b, NDK_REG_SLOT_SIZE);
}

struct reg_scan {
	uint64_t netns;
	uint32_t ifindex;
	ndk_reg_visit_fn fn;
	void *arg;
	uint32_t *copy[2]; /* REG_BATCH slots each */
};

/*
 * The owner of the file on fd is gone (its lock could be taken): remove
 * the file, unless another reader already does. Only in the reader's own
 * user's directory (or as root): nobody else may.
 */
static void reg_reap(int dirfd, const struct stat *dir, const char *name,
		     int fd)
{
	uid_t uid = geteuid();

	if ((uid == dir->st_uid || uid == 0) && !flock(fd, LOCK_EX | LOCK_NB))
		unlinkat(dirfd, name, 0);
}

/*
 * One process's file. A slot is taken when two copies read one after the
 * other are the same and its sequence is even: a write overlapping the
 * first copy moves the sequence before the second is read, whatever
 * order the kernel copied the words in.
 */
static int reg_scan_file(int dirfd, const struct stat *dir, const char *name,
			 struct reg_scan *s)
{
	uint32_t pid = reg_name_pid(name), budget = REG_RETRY_BUDGET;
	uint32_t i, j, k, n, tries, one[2][REG_SLOT_WORDS];
	struct ndk_reg_header h;
	struct ndk_reg_entry e;
	struct stat st;
	off_t off;
	int fd, ret = 0;

	if (!pid)
		return 0;
	fd = ndk_reg_user_file_open(dirfd, name, dir, &st);
	if (fd < 0)
		return 0; /* reaped meanwhile, or not a registry file */
	if (!flock(fd, LOCK_SH | LOCK_NB)) {
		reg_reap(dirfd, dir, name, fd);
		goto out;
	}
	if (errno != EWOULDBLOCK || st.st_size < (off_t)NDK_REG_HEADER_SIZE ||
	    !ndk_reg_pread_all(fd, &h, sizeof(h), 0))
		goto out;
	n = atomic_load_explicit(&h.high_water, memory_order_relaxed);
	if (h.magic != NDK_REG_MAGIC || h.version != NDK_REG_VERSION ||
	    h.pid != pid || h.slot_size != NDK_REG_SLOT_SIZE ||
	    h.capacity > NDK_REG_CAPACITY || n > h.capacity ||
	    !pid_of_user(pid, dir->st_uid))
		goto out;
	n = MIN(n, (uint32_t)(((uint64_t)st.st_size - NDK_REG_HEADER_SIZE) /
			      NDK_REG_SLOT_SIZE));
	for (i = 0; i < n && !ret; i += k) {
		k = MIN(REG_BATCH, n - i);
		off = (off_t)(NDK_REG_HEADER_SIZE +
			      (size_t)i * NDK_REG_SLOT_SIZE);
		/* Cut short (truncated meanwhile): nothing more to read. */
		if (!ndk_reg_pread_all(fd, s->copy[0], k * NDK_REG_SLOT_SIZE,
				       off) ||
		    !ndk_reg_pread_all(fd, s->copy[1], k * NDK_REG_SLOT_SIZE,
				       off))
			break;
		for (j = 0; j < k && !ret; j++) {
			const uint32_t *a = s->copy[0] + j * REG_SLOT_WORDS;

			if (!slot_settled(a, s->copy[1] + j * REG_SLOT_WORDS)) {
				/* Being written: once more on its own. */
				a = NULL;
				for (tries = 0; !a && tries < 4 && budget;
				     tries++, budget--) {
					off_t so = off +
						   (off_t)j * NDK_REG_SLOT_SIZE;

					sched_yield();
					if (!ndk_reg_pread_all(
						    fd, one[0],
						    NDK_REG_SLOT_SIZE, so) ||
					    !ndk_reg_pread_all(
						    fd, one[1],
						    NDK_REG_SLOT_SIZE, so))
						break;
					if (slot_settled(one[0], one[1]))
						a = one[0];
				}
				if (!a)
					continue;
			}
			if (!reg_slot_parse(a, pid, &e))
				continue;
			if (e.netns != s->netns || e.ifindex != s->ifindex)
				continue;
			ret = s->fn(&e, s->arg);
		}
	}
out:
	close(fd);
	return ret;
}

static int reg_scan_dir(int dirfd, const struct stat *dir, void *arg)
{
	struct dirent *d;
	DIR *ls;
	int fd, ret = 0;

	fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ls = fdopendir(fd);
	if (!ls) {
		close(fd);
		return 0;
	}
	while (!ret && (d = readdir(ls)))
		if (d->d_name[0] == 'p')
			ret = reg_scan_file(dirfd, dir, d->d_name, arg);
	closedir(ls);
	return ret;
}

int ndk_reg_scan(uint64_t netns, uint32_t ifindex, ndk_reg_visit_fn fn,
		 void *arg)
{
	struct reg_scan s = {
		.netns = netns,
		.ifindex = ifindex,
		.fn = fn,
		.arg = arg,
	};
	int ret;

	s.copy[0] = malloc(2 * REG_BATCH * NDK_REG_SLOT_SIZE);
	if (!s.copy[0])
		return -ENOMEM;
	s.copy[1] = s.copy[0] + REG_BATCH * REG_SLOT_WORDS;
	ret = ndk_reg_for_each_user_dir(reg_scan_dir, &s);
	free(s.copy[0]);
	return ret;
}
