/* SPDX-License-Identifier: MIT */
/*
 * The cross-process registry (src/oid/registry.c): a reader never sees a
 * torn entry while another process rewrites its slots, counters from
 * several processes add up, and a killed writer's file disappears. Its
 * files are writable by their owner only; a file cut short under a
 * reader or whose slots never settle costs the reader a bounded amount
 * of work and no crash (between users: test_registry_users.c).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <dirent.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>
#include "oid/registry.h"
#include "testutil.h"

#define TEST_IFINDEX 4242u
#define TEST_NETNS   0x1234567890abcdefull

static char runtime_dir[] = "/tmp/ndk-reg-XXXXXX";

/* Entry k: every field derived from k, so a mix of two is detectable. */
static void make_entry(struct ndk_reg_entry *e, uint32_t k)
{
	memset(e, 0, sizeof(*e));
	e->kind = NDK_REG_CONNECTION;
	e->ifindex = TEST_IFINDEX;
	e->netns = TEST_NETNS;
	e->local.Ipv4.sin_family = AF_INET;
	e->local.Ipv4.sin_port = htons((uint16_t)k);
	e->local.Ipv4.sin_addr.s_addr = k * 2654435761u;
	e->remote.Ipv4.sin_family = AF_INET;
	e->remote.Ipv4.sin_port = htons((uint16_t)~k);
	e->remote.Ipv4.sin_addr.s_addr = ~(k * 2654435761u);
}

struct check {
	unsigned int entries;
	unsigned int torn;
};

static int check_entry(const struct ndk_reg_entry *e, void *arg)
{
	struct check *c = arg;
	struct ndk_reg_entry want;
	uint32_t k = ntohs(e->local.Ipv4.sin_port);

	c->entries++;
	make_entry(&want, k);
	if (e->local.Ipv4.sin_addr.s_addr != want.local.Ipv4.sin_addr.s_addr ||
	    e->remote.Ipv4.sin_port != want.remote.Ipv4.sin_port ||
	    e->remote.Ipv4.sin_addr.s_addr !=
		    want.remote.Ipv4.sin_addr.s_addr ||
	    e->kind != want.kind)
		c->torn++;
	return 0;
}

/* Writer: keeps 64 slots busy, rewriting them with new values forever. */
static void writer(void)
{
	int slot[64];
	struct ndk_reg_entry e;
	uint32_t k = 1;
	unsigned int i;

	for (i = 0; i < 64; i++) {
		make_entry(&e, k++);
		slot[i] = ndk_reg_publish(&e);
	}
	for (i = 0;; i = (i + 1) % 64) {
		ndk_reg_withdraw(slot[i]);
		make_entry(&e, k++ & 0xffff);
		slot[i] = ndk_reg_publish(&e);
	}
}

static void test_no_torn_entries(void **state)
{
	struct check c = { 0 };
	pid_t pid;
	int i, wstatus;

	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		writer();
	tu_sleep_ms(50);
	for (i = 0; i < 3000; i++)
		assert_int_equal(
			ndk_reg_scan(TEST_NETNS, TEST_IFINDEX, check_entry, &c),
			0);
	assert_int_equal(c.torn, 0);
	assert_true(c.entries > 3000);
	/* Another namespace or interface sees none of it. */
	memset(&c, 0, sizeof(c));
	ndk_reg_scan(TEST_NETNS + 1, TEST_IFINDEX, check_entry, &c);
	ndk_reg_scan(TEST_NETNS, TEST_IFINDEX + 1, check_entry, &c);
	assert_int_equal(c.entries, 0);

	/* Killed mid-update or not, its entries vanish with it. */
	kill(pid, SIGKILL);
	assert_int_equal(waitpid(pid, &wstatus, 0), pid);
	memset(&c, 0, sizeof(c));
	assert_int_equal(
		ndk_reg_scan(TEST_NETNS, TEST_IFINDEX, check_entry, &c), 0);
	assert_int_equal(c.entries, 0);
}

/* This user's directory of the registry. */
static const char *user_dir(void)
{
	static char path[512];

	snprintf(path, sizeof(path), "%s/u%u", runtime_dir,
		 (unsigned int)geteuid());
	return path;
}

static int count_files(const char *prefix)
{
	struct dirent *d;
	int n = 0;
	DIR *dir = opendir(user_dir());

	assert_non_null(dir);
	while ((d = readdir(dir)))
		if (!strncmp(d->d_name, prefix, strlen(prefix)))
			n++;
	closedir(dir);
	return n;
}

static void test_own_entries_and_reaping(void **state)
{
	struct ndk_reg_entry e;
	struct check c = { 0 };
	int a, b;

	make_entry(&e, 7);
	a = ndk_reg_publish(&e);
	make_entry(&e, 8);
	b = ndk_reg_publish(&e);
	assert_true(a >= 0 && b >= 0 && a != b);
	assert_int_equal(e.pid, (uint32_t)getpid());
	ndk_reg_scan(TEST_NETNS, TEST_IFINDEX, check_entry, &c);
	assert_int_equal(c.entries, 2);
	ndk_reg_withdraw(a);
	memset(&c, 0, sizeof(c));
	ndk_reg_scan(TEST_NETNS, TEST_IFINDEX, check_entry, &c);
	assert_int_equal(c.entries, 1);
	/* A withdrawn slot is reused. */
	make_entry(&e, 9);
	assert_int_equal(ndk_reg_publish(&e), a);
	ndk_reg_withdraw(a);
	ndk_reg_withdraw(b);
	/* The dead writer's file was removed by the scans above; ours
	 * stays while we live. */
	assert_int_equal(count_files("p."), 1);
	assert_int_equal(count_files("t."), 0);
}

/* Maps this process's registry file, to play a writer that died half-way
 * through an update. */
static _Atomic uint32_t *own_slot_seq(int slot, void **map, size_t *len)
{
	char path[1024];
	struct dirent *d;
	DIR *dir = opendir(user_dir());
	char prefix[32];
	int fd = -1;

	assert_non_null(dir);
	snprintf(prefix, sizeof(prefix), "p.%d.", (int)getpid());
	while ((d = readdir(dir)))
		if (!strncmp(d->d_name, prefix, strlen(prefix))) {
			snprintf(path, sizeof(path), "%s/%s", user_dir(),
				 d->d_name);
			fd = open(path, O_RDWR);
		}
	closedir(dir);
	assert_true(fd >= 0);
	*len = NDK_REG_HEADER_SIZE + (size_t)(slot + 1) * NDK_REG_SLOT_SIZE;
	*map = mmap(NULL, *len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	assert_true(*map != MAP_FAILED);
	return (_Atomic uint32_t *)((char *)*map + NDK_REG_HEADER_SIZE +
				    (size_t)slot * NDK_REG_SLOT_SIZE);
}

static void test_half_written_entry_is_skipped(void **state)
{
	struct ndk_reg_entry e;
	struct check c = { 0 };
	_Atomic uint32_t *seq;
	size_t len;
	void *map;
	int slot;

	make_entry(&e, 11);
	slot = ndk_reg_publish(&e);
	assert_true(slot >= 0);
	seq = own_slot_seq(slot, &map, &len);
	/* An odd sequence: a writer that never finished. */
	atomic_fetch_add(seq, 1);
	assert_int_equal(
		ndk_reg_scan(TEST_NETNS, TEST_IFINDEX, check_entry, &c), 0);
	assert_int_equal(c.entries, 0);
	atomic_fetch_add(seq, 1);
	ndk_reg_scan(TEST_NETNS, TEST_IFINDEX, check_entry, &c);
	assert_int_equal(c.entries, 1);
	assert_int_equal(c.torn, 0);
	munmap(map, len);
	ndk_reg_withdraw(slot);
}

static void test_counters_add_up(void **state)
{
	struct ndk_reg_counters *ctrs;
	uint64_t v[NDK_CTR_COUNT];
	pid_t pid[3];
	int i, j, wstatus;

	for (i = 0; i < 3; i++) {
		pid[i] = fork();
		assert_true(pid[i] >= 0);
		if (pid[i] == 0) {
			ctrs = ndk_reg_counters_open(TEST_NETNS, TEST_IFINDEX);
			if (!ctrs)
				_exit(1);
			for (j = 0; j < 100000; j++) {
				ndk_reg_count(ctrs, NDK_CTR(RDMAOutFrames), 1);
				ndk_reg_count(ctrs, NDK_CTR(RDMAOutOctets), 3);
			}
			ndk_reg_count(ctrs, NDK_CTR(Connect), 1);
			ndk_reg_counters_close(ctrs);
			_exit(0);
		}
	}
	for (i = 0; i < 3; i++) {
		assert_int_equal(waitpid(pid[i], &wstatus, 0), pid[i]);
		assert_int_equal(WEXITSTATUS(wstatus), 0);
	}
	ndk_reg_counters_read(TEST_NETNS, TEST_IFINDEX, v);
	assert_int_equal(v[NDK_CTR(RDMAOutFrames)], 300000);
	assert_int_equal(v[NDK_CTR(RDMAOutOctets)], 900000);
	assert_int_equal(v[NDK_CTR(Connect)], 3);
	assert_int_equal(v[NDK_CTR(Accept)], 0);
	/* An interface that never counted reads as zeros. */
	ndk_reg_counters_read(TEST_NETNS, TEST_IFINDEX + 1, v);
	for (i = 0; i < (int)NDK_CTR_COUNT; i++)
		assert_int_equal(v[i], 0);
	/* A NULL set (counting unavailable) is a no-op. */
	ndk_reg_count(NULL, NDK_CTR(Connect), 1);
	assert_int_equal(NDK_CTR(CQError), 25);
	assert_int_equal(NDK_CTR(RDMAOutFrames), 29);
	assert_int_equal(NDK_CTR_COUNT, 30);
}

/* The runtime directory's files and directories: only their owner, this
 * process's user, may write any. */
static void test_owner_writable_only(void **state)
{
	struct ndk_reg_counters *ctrs;
	struct ndk_reg_entry e;
	char path[1024];
	struct dirent *d;
	struct stat st;
	int slot, files = 0;
	DIR *dir;

	make_entry(&e, 21);
	slot = ndk_reg_publish(&e);
	assert_true(slot >= 0);
	ctrs = ndk_reg_counters_open(TEST_NETNS, TEST_IFINDEX);
	assert_non_null(ctrs);
	assert_int_equal(lstat(user_dir(), &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(st.st_uid, geteuid());
	assert_int_equal(st.st_mode & 07777, 0755);
	dir = opendir(user_dir());
	assert_non_null(dir);
	while ((d = readdir(dir))) {
		if (d->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", user_dir(), d->d_name);
		assert_int_equal(lstat(path, &st), 0);
		assert_true(S_ISREG(st.st_mode));
		assert_int_equal(st.st_uid, geteuid());
		assert_int_equal(st.st_mode & 07777, 0644);
		files++;
	}
	closedir(dir);
	assert_int_equal(files, 2); /* p.<pid>.<random>, c.<netns>.<if> */
	ndk_reg_counters_close(ctrs);
	ndk_reg_withdraw(slot);
}

/* A process file made by hand in this user's directory, held locked as
 * its owner would: n slots of entry k.. (odd sequences if stuck), for
 * pid. Returns its descriptor. */
static int craft_file(uint32_t pid, uint32_t n, bool stuck)
{
	const size_t size = NDK_REG_HEADER_SIZE +
			    (size_t)NDK_REG_CAPACITY * NDK_REG_SLOT_SIZE;
	struct ndk_reg_header h = {
		.magic = NDK_REG_MAGIC,
		.version = NDK_REG_VERSION,
		.pid = pid,
		.slot_size = NDK_REG_SLOT_SIZE,
		.capacity = NDK_REG_CAPACITY,
	};
	uint32_t w[NDK_REG_SLOT_SIZE / 4], i;
	struct ndk_reg_entry e;
	char path[1024];
	int fd;

	snprintf(path, sizeof(path), "%s/p.%u.00000000000000%02x", user_dir(),
		 pid, n & 0xff);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(flock(fd, LOCK_EX), 0);
	atomic_init(&h.high_water, n);
	assert_int_equal(ftruncate(fd, (off_t)size), 0);
	assert_int_equal(pwrite(fd, &h, sizeof(h), 0), sizeof(h));
	for (i = 0; i < n; i++) {
		memset(w, 0, sizeof(w));
		make_entry(&e, i + 1);
		w[NDK_REG_W_SEQ] = stuck ? 1 : 2;
		w[NDK_REG_W_KIND] = e.kind;
		w[NDK_REG_W_IFINDEX] = e.ifindex;
		w[NDK_REG_W_PID] = pid;
		w[NDK_REG_W_NETNS_LO] = (uint32_t)e.netns;
		w[NDK_REG_W_NETNS_HI] = (uint32_t)(e.netns >> 32);
		memcpy(&w[NDK_REG_W_LOCAL], &e.local, sizeof(e.local));
		memcpy(&w[NDK_REG_W_REMOTE], &e.remote, sizeof(e.remote));
		assert_int_equal(pwrite(fd, w, sizeof(w),
					NDK_REG_HEADER_SIZE +
						(off_t)i * NDK_REG_SLOT_SIZE),
				 sizeof(w));
	}
	return fd;
}

/*
 * Its owner cuts the file short and makes it whole again, over and over,
 * while this process scans it: a reader that mapped it would fault; this
 * one lists what is there at the time, never a torn entry.
 */
static void test_file_cut_short_under_reader(void **state)
{
	const uint32_t n = 4096;
	struct check c = { 0 };
	int fd, i, wstatus;
	pid_t pid;

	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		fd = craft_file((uint32_t)getpid(), n, false);
		for (;;) {
			if (ftruncate(fd, NDK_REG_HEADER_SIZE + 7 * 128) ||
			    ftruncate(fd, NDK_REG_HEADER_SIZE +
						  (off_t)n * NDK_REG_SLOT_SIZE))
				_exit(1);
		}
	}
	tu_sleep_ms(50);
	for (i = 0; i < 500; i++)
		assert_int_equal(
			ndk_reg_scan(TEST_NETNS, TEST_IFINDEX, check_entry, &c),
			0);
	assert_int_equal(c.torn, 0);
	assert_true(c.entries > 0);
	kill(pid, SIGKILL);
	assert_int_equal(waitpid(pid, &wstatus, 0), pid);
	/* Its owner is dead: the next scan removes it. */
	memset(&c, 0, sizeof(c));
	ndk_reg_scan(TEST_NETNS, TEST_IFINDEX, check_entry, &c);
	assert_int_equal(c.entries, 0);
}

/* Every slot of a full file mid-update forever (or made to look so): the
 * scan gives up on them after a bounded number of re-reads, and lists
 * the rest. */
static void test_stuck_slots_bounded(void **state)
{
	struct ndk_reg_entry e;
	struct check c = { 0 };
	uint64_t t0;
	int fd, slot;

	fd = craft_file((uint32_t)getpid(), NDK_REG_CAPACITY, true);
	/* Its pid is this process's, which has its own file too. */
	make_entry(&e, 5);
	slot = ndk_reg_publish(&e);
	t0 = tu_now_ms();
	assert_int_equal(
		ndk_reg_scan(TEST_NETNS, TEST_IFINDEX, check_entry, &c), 0);
	print_message("scan of 65536 stuck slots: %llu ms\n",
		      (unsigned long long)(tu_now_ms() - t0));
	assert_int_equal(c.entries, 1);
	assert_int_equal(c.torn, 0);
	ndk_reg_withdraw(slot);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_torn_entries),
		cmocka_unit_test(test_own_entries_and_reaping),
		cmocka_unit_test(test_half_written_entry_is_skipped),
		cmocka_unit_test(test_counters_add_up),
		cmocka_unit_test(test_owner_writable_only),
		cmocka_unit_test(test_file_cut_short_under_reader),
		cmocka_unit_test(test_stuck_slots_bounded),
	};
	int ret;

	if (tu_private_runtime(runtime_dir))
		return 1;
	ret = cmocka_run_group_tests_name("registry", tests, NULL, NULL);
	return tu_private_runtime_done(runtime_dir, ret);
}
