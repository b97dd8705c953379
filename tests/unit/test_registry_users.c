/* SPDX-License-Identifier: MIT */
/*
 * The registry between users (src/oid/registry.c, docs/security.md,
 * Local users): every file is writable by its owner only; another user
 * lists a process (NdkQueryOid, what ndkstat prints) and reads its
 * counters but can change nothing of it; and what a hostile user leaves
 * in the runtime directory (symlinks, FIFOs, files of another owner,
 * directories others may write, a squatted name, crafted entries) is
 * ignored or checked, never followed, blocked on or written.
 *
 * The users are forked children that setuid() to uids of their own, so
 * the test needs root; without it, it exits 77 (CTest: skipped).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <net/if.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "oid/registry.h"
#include "testutil.h"

#define NETNS	0x5ec0de5ec0de0001ull
#define IFINDEX 5151u
#define U_A	61001u /* publishes and counts */
#define U_B	61002u /* only reads, and tries to write */
#define U_H	61003u /* hostile: plants files */

static char runtime_dir[] = "/tmp/ndk-users-XXXXXX";
static char squat_dir[] = "/tmp/ndk-squat-XXXXXX";
static const char *top = runtime_dir; /* the runtime directory in use */

/* ------------------------------------------------------------------ */
/* Children as other users                                            */

struct child {
	pid_t pid;
	int to, from; /* pipes to and from it */
};

/* In a child, a failed check exits with its line. */
#define CHECK(c)                                                 \
	do {                                                     \
		if (!(c)) {                                      \
			fprintf(stderr, "pid %d: line %d: %s\n", \
				(int)getpid(), __LINE__, #c);    \
			_exit(1);                                \
		}                                                \
	} while (0)

static void become(uid_t uid)
{
	CHECK(setgroups(0, NULL) == 0);
	CHECK(setgid(uid) == 0);
	CHECK(setuid(uid) == 0);
	CHECK(geteuid() == uid);
}

/* Starts fn(arg) in a child as uid; fn's return is the exit status. */
static void child_start(struct child *c, uid_t uid, int (*fn)(struct child *))
{
	int down[2], up[2];

	assert_int_equal(pipe(down), 0);
	assert_int_equal(pipe(up), 0);
	c->pid = fork();
	assert_true(c->pid >= 0);
	if (c->pid == 0) {
		close(down[1]);
		close(up[0]);
		c->to = up[1];
		c->from = down[0];
		become(uid);
		_exit(fn(c));
	}
	close(down[0]);
	close(up[1]);
	c->to = down[1];
	c->from = up[0];
}

static void say(int fd)
{
	char b = 1;

	CHECK(write(fd, &b, 1) == 1);
}

static void hear(int fd)
{
	char b;

	CHECK(read(fd, &b, 1) == 1);
}

/* The child's exit status: 0 if every check passed. */
static int child_end(struct child *c)
{
	int ws;

	close(c->to);
	assert_int_equal(waitpid(c->pid, &ws, 0), c->pid);
	close(c->from);
	return WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
}

/* ------------------------------------------------------------------ */
/* Entries                                                            */

static void make_entry(struct ndk_reg_entry *e, enum ndk_reg_kind kind,
		       uint16_t port)
{
	memset(e, 0, sizeof(*e));
	e->kind = kind;
	e->ifindex = IFINDEX;
	e->netns = NETNS;
	e->local.Ipv4.sin_family = AF_INET;
	e->local.Ipv4.sin_port = htons(port);
	e->local.Ipv4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (kind == NDK_REG_CONNECTION) {
		e->remote.Ipv4.sin_family = AF_INET;
		e->remote.Ipv4.sin_port = htons(port + 1000);
		e->remote.Ipv4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	}
}

struct seen {
	unsigned int n;
	uint32_t pid[16];
	uint16_t port[16];
};

static int collect(const struct ndk_reg_entry *e, void *arg)
{
	struct seen *s = arg;

	if (s->n < 16) {
		s->pid[s->n] = e->pid;
		s->port[s->n] = ntohs(e->local.Ipv4.sin_port);
	}
	s->n++;
	return 0;
}

static struct seen scan(void)
{
	struct seen s = { 0 };

	ndk_reg_scan(NETNS, IFINDEX, collect, &s);
	return s;
}

/* Whether the scan saw port, listed under pid. */
static bool listed(const struct seen *s, uint16_t port, uint32_t pid)
{
	unsigned int i;

	for (i = 0; i < s->n && i < 16; i++)
		if (s->port[i] == port && s->pid[i] == pid)
			return true;
	return false;
}

static uint64_t connects(void)
{
	uint64_t v[NDK_CTR_COUNT];

	ndk_reg_counters_read(NETNS, IFINDEX, v);
	return v[NDK_CTR(Connect)];
}

static void path_of(char *buf, size_t len, uid_t uid, const char *name)
{
	snprintf(buf, len, "%s/u%u%s%s", top, (unsigned int)uid,
		 name ? "/" : "", name ? name : "");
}

/* The name of pid's process file in uid's directory, or "". */
static void proc_file(char *buf, size_t len, uid_t uid, pid_t pid)
{
	char dir[512], prefix[32];
	struct dirent *d;
	DIR *ls;

	buf[0] = 0;
	path_of(dir, sizeof(dir), uid, NULL);
	snprintf(prefix, sizeof(prefix), "p.%d.", (int)pid);
	ls = opendir(dir);
	if (!ls)
		return;
	while ((d = readdir(ls)))
		if (!strncmp(d->d_name, prefix, strlen(prefix)))
			snprintf(buf, len, "%s/%s", dir, d->d_name);
	closedir(ls);
}

/* ------------------------------------------------------------------ */
/* Modes                                                              */

/* No file or directory under dir (but the top) that others may write. */
static void assert_owner_writable_only(const char *dir, bool is_top)
{
	char path[1024];
	struct dirent *d;
	struct stat st;
	DIR *ls;

	assert_int_equal(lstat(dir, &st), 0);
	if (is_top)
		assert_int_equal(st.st_mode & 07777, 01777);
	else
		assert_int_equal(st.st_mode & 022, 0);
	ls = opendir(dir);
	assert_non_null(ls);
	while ((d = readdir(ls))) {
		if (d->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, d->d_name);
		assert_int_equal(lstat(path, &st), 0);
		if (S_ISDIR(st.st_mode)) {
			assert_int_equal(st.st_mode & 07777, 0755);
			assert_owner_writable_only(path, false);
		} else {
			assert_true(S_ISREG(st.st_mode));
			assert_int_equal(st.st_mode & 07777, 0644);
		}
	}
	closedir(ls);
}

static int a_publishes(struct child *c)
{
	struct ndk_reg_counters *ctrs;
	struct ndk_reg_entry e;

	make_entry(&e, NDK_REG_CONNECTION, 2);
	CHECK(ndk_reg_publish(&e) >= 0);
	ctrs = ndk_reg_counters_open(NETNS, IFINDEX);
	CHECK(ctrs);
	ndk_reg_count(ctrs, NDK_CTR(Connect), 5);
	ndk_reg_counters_close(ctrs);
	say(c->to);
	hear(c->from); /* stays alive, and listed, until told */
	return 0;
}

/*
 * Another user's process and root's are listed to B, their counters add
 * up, and B can write none of their files, make none in their
 * directories, remove or rename none.
 */
static int b_reads(struct child *c)
{
	char path[1024], a_file[1024];
	struct seen s;
	uint32_t a_pid, root_pid;
	int fd;

	CHECK(read(c->from, &a_pid, sizeof(a_pid)) == sizeof(a_pid));
	CHECK(read(c->from, &root_pid, sizeof(root_pid)) == sizeof(root_pid));
	s = scan();
	CHECK(listed(&s, 1, root_pid));
	CHECK(listed(&s, 2, a_pid));
	CHECK(connects() == 12);

	path_of(path, sizeof(path), 0, "c.5ec0de5ec0de0001.5151");
	CHECK(open(path, O_RDWR) < 0 && errno == EACCES);
	proc_file(a_file, sizeof(a_file), U_A, (pid_t)a_pid);
	CHECK(a_file[0]);
	CHECK(open(a_file, O_RDWR) < 0 && errno == EACCES);
	CHECK(unlink(a_file) < 0 && errno == EACCES);
	path_of(path, sizeof(path), U_A, "p.1.0000000000000000");
	CHECK(open(path, O_RDWR | O_CREAT, 0644) < 0 && errno == EACCES);
	CHECK(rename(a_file, path) < 0 && errno == EACCES);
	path_of(path, sizeof(path), 0, "x");
	CHECK(open(path, O_RDWR | O_CREAT, 0644) < 0 && errno == EACCES);
	path_of(path, sizeof(path), U_A, NULL);
	CHECK(chmod(path, 0777) < 0 && errno == EPERM);
	/* Still listed after all that. */
	s = scan();
	CHECK(listed(&s, 2, a_pid));
	fd = open(a_file, O_RDONLY);
	CHECK(fd >= 0);
	close(fd);
	return 0;
}

static void test_other_users(void **state)
{
	struct ndk_reg_counters *ctrs;
	struct ndk_reg_entry e;
	struct child a, b;
	uint32_t pid;
	struct seen s;
	int slot;

	(void)state;
	make_entry(&e, NDK_REG_LISTENER, 1);
	slot = ndk_reg_publish(&e);
	assert_true(slot >= 0);
	ctrs = ndk_reg_counters_open(NETNS, IFINDEX);
	assert_non_null(ctrs);
	ndk_reg_count(ctrs, NDK_CTR(Connect), 7);

	child_start(&a, U_A, a_publishes);
	hear(a.from);
	/* Root lists A and counts A's connects. */
	s = scan();
	assert_true(listed(&s, 1, (uint32_t)getpid()));
	assert_true(listed(&s, 2, (uint32_t)a.pid));
	assert_int_equal(connects(), 12);
	assert_owner_writable_only(runtime_dir, true);

	child_start(&b, U_B, b_reads);
	pid = (uint32_t)a.pid;
	assert_int_equal(write(b.to, &pid, sizeof(pid)), sizeof(pid));
	pid = (uint32_t)getpid();
	assert_int_equal(write(b.to, &pid, sizeof(pid)), sizeof(pid));
	assert_int_equal(child_end(&b), 0);

	say(a.to);
	assert_int_equal(child_end(&a), 0);
	/* A is gone: not listed; its counts stay. */
	s = scan();
	assert_false(listed(&s, 2, (uint32_t)a.pid));
	assert_int_equal(connects(), 12);
	ndk_reg_withdraw(slot);
	ndk_reg_counters_close(ctrs);
}

/* ------------------------------------------------------------------ */
/* What ndkstat prints, as another user                               */

static int b_queries(struct child *c)
{
	NDIS_NDK_LOCAL_ENDPOINTS *l;
	ULONG need = 0, got = 0, i;
	uint32_t root_pid;
	bool found = false;

	CHECK(read(c->from, &root_pid, sizeof(root_pid)) == sizeof(root_pid));
	CHECK(NdkQueryOid(if_nametoindex("lo"), OID_NDK_LOCAL_ENDPOINTS, NULL,
			  0, &got, &need) == NDIS_STATUS_BUFFER_TOO_SHORT);
	l = calloc(1, need);
	CHECK(l);
	CHECK(NdkQueryOid(if_nametoindex("lo"), OID_NDK_LOCAL_ENDPOINTS, l,
			  need, &got, &need) == NDIS_STATUS_SUCCESS);
	for (i = 0; i < l->Count; i++)
		found |= l->LocalEndpoints[i].OwnerPid == root_pid;
	CHECK(found);
	free(l);
	return 0;
}

/* NdkQueryOid run by another user (ndkstat's call) lists root's shared
 * endpoint. */
static void test_other_user_queries(void **state)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	NDK_VERSION v = { 2, 0 };
	NDK_SHARED_ENDPOINT *sep;
	NDK_ADAPTER *ad;
	struct child b;
	uint32_t pid = (uint32_t)getpid();

	(void)state;
	/* Forked before the adapter's threads exist. */
	child_start(&b, U_B, b_queries);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(NdkOpenAdapter(v, if_nametoindex("lo"), &ad),
			 STATUS_SUCCESS);
	assert_int_equal(
		ad->Dispatch->NdkCreateSharedEndpoint(
			ad, (PSOCKADDR)&sin, sizeof(sin), NULL, NULL, &sep),
		STATUS_SUCCESS);
	assert_int_equal(write(b.to, &pid, sizeof(pid)), sizeof(pid));
	assert_int_equal(child_end(&b), 0);
	sep->Dispatch->NdkCloseSharedEndpoint(&sep->Header, NULL, NULL);
	NdkCloseAdapter(ad);
}

/* ------------------------------------------------------------------ */
/* A hostile user's files                                             */

/* A process file as the registry writes it, with one entry per port of
 * ports (0-terminated), for pid, into fd. */
static void write_proc_file(int fd, uint32_t pid, const uint16_t *ports,
			    uint32_t family)
{
	static uint8_t buf[NDK_REG_HEADER_SIZE + 8 * NDK_REG_SLOT_SIZE];
	struct ndk_reg_header *h = (struct ndk_reg_header *)buf;
	struct ndk_reg_entry e;
	uint32_t n = 0, *w;

	memset(buf, 0, sizeof(buf));
	h->magic = NDK_REG_MAGIC;
	h->version = NDK_REG_VERSION;
	h->pid = pid;
	h->slot_size = NDK_REG_SLOT_SIZE;
	h->capacity = NDK_REG_CAPACITY;
	for (; ports[n]; n++) {
		w = (uint32_t *)(buf + NDK_REG_HEADER_SIZE +
				 n * NDK_REG_SLOT_SIZE);
		make_entry(&e, NDK_REG_LISTENER, ports[n]);
		w[NDK_REG_W_SEQ] = 2;
		w[NDK_REG_W_KIND] = e.kind;
		w[NDK_REG_W_IFINDEX] = e.ifindex;
		w[NDK_REG_W_PID] = pid;
		w[NDK_REG_W_NETNS_LO] = (uint32_t)e.netns;
		w[NDK_REG_W_NETNS_HI] = (uint32_t)(e.netns >> 32);
		e.local.si_family = (ADDRESS_FAMILY)family;
		memcpy(&w[NDK_REG_W_LOCAL], &e.local, sizeof(e.local));
	}
	atomic_store(&h->high_water, n);
	CHECK(pwrite(fd, buf, sizeof(buf), 0) == (ssize_t)sizeof(buf));
}

/* A file name in dir, held open and locked (a live owner). */
static int planted(const char *dir, const char *name, uint32_t pid,
		   const uint16_t *ports, uint32_t family)
{
	char path[1024];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0644);
	CHECK(fd >= 0);
	CHECK(fchmod(fd, 0644) == 0);
	CHECK(flock(fd, LOCK_EX) == 0);
	write_proc_file(fd, pid, ports, family);
	return fd;
}

/*
 * H plants, in its own directory: a symlink to root's process file, one
 * to /etc/passwd and one to a process file of its own elsewhere, a FIFO, an entry under pid 1 (init, not H's), an
 * entry with address family 99, an entry of its own, a counters file
 * with another interface in its header; and a directory
 * u<uid> that anybody may write, holding an entry of H's own.
 */
static int h_plants(struct child *c)
{
	static const uint16_t own[] = { 30, 0 }, init[] = { 31, 0 },
			      fam[] = { 32, 0 }, open_dir[] = { 33, 0 },
			      linked[] = { 34, 0 };
	char dir[512], path[1024], target[2048], name[64];
	struct ndk_ctr_header ch = { .magic = NDK_CTR_MAGIC,
				     .version = NDK_REG_VERSION,
				     .ifindex = IFINDEX + 1,
				     .netns = NETNS };
	char elsewhere[] = "/tmp/ndk-elsewhere-XXXXXX", linked_path[128];
	uint64_t connect = 1000;
	uint32_t root_pid;
	int fd;

	CHECK(read(c->from, &root_pid, sizeof(root_pid)) == sizeof(root_pid));
	path_of(dir, sizeof(dir), U_H, NULL);
	CHECK(mkdir(dir, 0755) == 0);
	/* H's own live process file outside the registry, linked in. */
	snprintf(name, sizeof(name), "p.%d.0000000000000009", (int)getpid());
	CHECK(mkdtemp(elsewhere));
	planted(elsewhere, name, (uint32_t)getpid(), linked, AF_INET);
	snprintf(linked_path, sizeof(linked_path), "%s/%s", elsewhere, name);
	snprintf(path, sizeof(path), "%s/p.%d.000000000000000a", dir,
		 (int)getpid());
	CHECK(symlink(linked_path, path) == 0);
	proc_file(target, sizeof(target), 0, (pid_t)root_pid);
	CHECK(target[0]);
	snprintf(path, sizeof(path), "%s/p.%u.0000000000000001", dir, root_pid);
	CHECK(symlink(target, path) == 0);
	snprintf(path, sizeof(path), "%s/p.%d.0000000000000002", dir,
		 (int)getpid());
	CHECK(symlink("/etc/passwd", path) == 0);
	snprintf(path, sizeof(path), "%s/p.%d.0000000000000003", dir,
		 (int)getpid());
	CHECK(mkfifo(path, 0644) == 0);
	planted(dir, "p.1.0000000000000004", 1, init, AF_INET);
	snprintf(name, sizeof(name), "p.%d.0000000000000005", (int)getpid());
	planted(dir, name, (uint32_t)getpid(), fam, 99);
	snprintf(name, sizeof(name), "p.%d.0000000000000006", (int)getpid());
	planted(dir, name, (uint32_t)getpid(), own, AF_INET);
	/* Counters: another interface's, and one cut short. */
	snprintf(path, sizeof(path), "%s/c.%016llx.%u", dir,
		 (unsigned long long)NETNS, IFINDEX);
	fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0644);
	CHECK(fd >= 0 && ftruncate(fd, NDK_CTR_FILE_SIZE) == 0);
	CHECK(pwrite(fd, &ch, sizeof(ch), 0) == sizeof(ch));
	CHECK(pwrite(fd, &connect, sizeof(connect),
		     NDK_CTR_HEADER_SIZE + 8 * NDK_CTR(Connect)) ==
	      sizeof(connect));
	close(fd);
	/* A directory open to all: nothing in it counts. */
	snprintf(path, sizeof(path), "%s/u%u", top, U_H + 1);
	CHECK(mkdir(path, 0777) == 0 && chmod(path, 0777) == 0);
	snprintf(name, sizeof(name), "p.%d.0000000000000007", (int)getpid());
	planted(path, name, (uint32_t)getpid(), open_dir, AF_INET);
	say(c->to);
	hear(c->from);
	unlink(linked_path);
	rmdir(elsewhere);
	return 0;
}

static void test_hostile_files(void **state)
{
	static const uint16_t ports[] = { 40, 0 };
	char path[1024], root_file[1024], dir[512];
	static uint8_t before[8192], after[8192];
	struct ndk_reg_entry e;
	struct child h;
	uint32_t pid = (uint32_t)getpid();
	struct seen s;
	uint64_t c0;
	int slot, fd, planted_fd;

	(void)state;
	make_entry(&e, NDK_REG_LISTENER, 20);
	slot = ndk_reg_publish(&e);
	assert_true(slot >= 0);
	c0 = connects();
	proc_file(root_file, sizeof(root_file), 0, getpid());
	fd = open(root_file, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, before, sizeof(before), 0), sizeof(before));

	child_start(&h, U_H, h_plants);
	assert_int_equal(write(h.to, &pid, sizeof(pid)), sizeof(pid));
	hear(h.from);
	/* A file of root's own in H's directory, live: not H's, ignored. */
	path_of(dir, sizeof(dir), U_H, NULL);
	snprintf(path, sizeof(path), "p.%d.0000000000000008", (int)getpid());
	planted_fd = planted(dir, path, pid, ports, AF_INET);

	s = scan();
	/* Root's entry once (not again through the symlink), H's own entry
	 * under H's pid, and nothing else. */
	assert_int_equal(s.n, 2);
	assert_true(listed(&s, 20, pid));
	assert_true(listed(&s, 30, (uint32_t)h.pid));
	assert_int_equal(connects(), c0);
	/* Nothing of root's was written through the links. */
	assert_int_equal(pread(fd, after, sizeof(after), 0), sizeof(after));
	assert_memory_equal(before, after, sizeof(before));
	close(fd);

	say(h.to);
	assert_int_equal(child_end(&h), 0);
	close(planted_fd);
	ndk_reg_withdraw(slot);
}

/* H takes the name of root's directory first: root publishes in one of
 * its own elsewhere, and nothing of root's lands in H's. */
static int h_squats(struct child *c)
{
	char path[512];

	path_of(path, sizeof(path), 0, NULL);
	CHECK(mkdir(path, 0755) == 0);
	say(c->to);
	hear(c->from);
	return 0;
}

static void test_squatted_name(void **state)
{
	char path[512];
	struct ndk_reg_entry e;
	struct child h;
	struct stat st;
	struct seen s;
	int slot, pid;
	DIR *ls;

	(void)state;
	/* A fresh runtime directory, where H comes first. */
	assert_non_null(mkdtemp(squat_dir));
	assert_int_equal(chmod(squat_dir, 01777), 0);
	assert_int_equal(setenv("NDK_RUNTIME_DIR", squat_dir, 1), 0);
	top = squat_dir;

	child_start(&h, U_H, h_squats);
	hear(h.from);
	/* A forked child has no registry file yet: it makes its own. */
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		make_entry(&e, NDK_REG_LISTENER, 50);
		slot = ndk_reg_publish(&e);
		CHECK(slot >= 0);
		s = scan();
		CHECK(s.n == 1 && listed(&s, 50, (uint32_t)getpid()));
		path_of(path, sizeof(path), 0, NULL);
		CHECK(stat(path, &st) == 0 && st.st_uid == U_H);
		ls = opendir(path);
		CHECK(ls);
		CHECK(readdir(ls) && readdir(ls) && !readdir(ls));
		closedir(ls);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &slot, 0), pid);
	assert_int_equal(slot, 0);
	say(h.to);
	assert_int_equal(child_end(&h), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_other_users),
		cmocka_unit_test(test_other_user_queries),
		cmocka_unit_test(test_hostile_files),
		cmocka_unit_test(test_squatted_name),
	};
	int ret;

	if (geteuid() != 0) {
		printf("registry_users: needs root (setuid children); "
		       "skipped\n");
		return 77;
	}
	if (tu_private_runtime(runtime_dir))
		return 1;
	/* Other users make their directories in it: shared, like /tmp. */
	chmod(runtime_dir, 01777);
	ret = cmocka_run_group_tests_name("registry_users", tests, NULL, NULL);
	ret = tu_private_runtime_done(runtime_dir, ret);
	/* test_squatted_name's own. */
	if (strcmp(squat_dir + strlen(squat_dir) - 6, "XXXXXX"))
		ret = tu_private_runtime_done(squat_dir, ret);
	return ret;
}
