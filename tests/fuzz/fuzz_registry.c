/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the registry's readers (src/oid/registry.c) on a
 * crafted file, as another local user could leave one in its directory
 * of the runtime directory (docs/security.md, Local users): a process
 * file or a counters file, then ndk_reg_scan, ndk_reg_counters_read and,
 * when asked, NdkQueryOid's three lists on lo.
 *
 * Input: a control byte, then the file.
 *   bit 0  a counters file c.<netns>.<ifindex>; else a process file
 *          p.<pid>.<random> of this process's pid
 *   bit 1  the rest is the file as it is; else it is a header (24 bytes)
 *          put at offset 0, then what follows put after the header
 *          (4096 bytes for a process file, 64 for counters)
 *   bit 2  the file is locked as a live owner holds it; else it is a
 *          dead process's (a reader removes it)
 *   bit 3  fix what a crafted file cannot know in advance: the magic,
 *          version and pid of the header, and each slot's pid, netns and
 *          ifindex (the counters' netns and ifindex)
 *   bit 4  name the interface lo of this namespace (and query the OIDs);
 *          else a made-up one
 *
 * Invariants: no crash, hang or leak; every entry a scan hands over has a
 * kind, addressing and address families in range, clean addresses, this
 * process's pid and the interface asked for, and there are no more of
 * them than slots in the file; counters are the file's own when it is
 * whole and valid, else zero; the OID lists fit what they say they need.
 */
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <ndk/ndk.h>
#include "oid/registry.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define F_COUNTERS 0x01
#define F_RAW	   0x02
#define F_LIVE	   0x04
#define F_FIX	   0x08
#define F_LO	   0x10

#define HDR_LEN	   24
#define MADE_UP_NS 0x0123456789abcdefull
#define MADE_UP_IF 77u

static char top[] = "/tmp/ndk-fuzz-registry-XXXXXX";
static char dir[128];
static uint64_t self_ns;
static uint32_t lo_index;

static void fail(const char *what)
{
	fprintf(stderr, "fuzz_registry: %s\n", what);
	abort();
}

/* Whatever the last input left, and the directories. */
static void cleanup(void)
{
	char path[256];

	snprintf(path, sizeof(path), "rm -rf '%s'", top);
	if (system(path))
		fprintf(stderr, "fuzz_registry: %s left behind\n", top);
}

static void setup(void)
{
	if (!mkdtemp(top))
		fail("mkdtemp");
	atexit(cleanup);
	setenv("NDK_RUNTIME_DIR", top, 1);
	setenv("NDK_LOG", "error", 0);
	snprintf(dir, sizeof(dir), "%s/u%u", top, (unsigned int)geteuid());
	if (mkdir(dir, 0755))
		fail("mkdir");
	self_ns = ndk_reg_netns_self();
	lo_index = if_nametoindex("lo");
}

/* The words of an address past its family's structure are zero. */
static void check_addr(const SOCKADDR_INET *a)
{
	static const uint8_t zero[sizeof(SOCKADDR_INET)];
	size_t used;

	switch (a->si_family) {
	case AF_UNSPEC:
		used = 0;
		break;
	case AF_INET:
		used = sizeof(a->Ipv4);
		if (memcmp(a->Ipv4.sin_zero, zero, sizeof(a->Ipv4.sin_zero)))
			fail("IPv4 address with stray bytes");
		break;
	case AF_INET6:
		used = sizeof(a->Ipv6);
		break;
	default:
		fail("address family out of range");
		return;
	}
	if (memcmp((const uint8_t *)a + used, zero, sizeof(*a) - used))
		fail("address with stray bytes");
}

struct want {
	uint64_t netns;
	uint32_t ifindex;
	uint32_t n;
};

static int visit(const struct ndk_reg_entry *e, void *arg)
{
	struct want *w = arg;

	if (e->kind != NDK_REG_LISTENER && e->kind != NDK_REG_SHARED_ENDPOINT &&
	    e->kind != NDK_REG_CONNECTION)
		fail("kind out of range");
	if (e->addressing != NDK_REG_TCP_PAIRED &&
	    e->addressing != NDK_REG_ND_ONLY)
		fail("addressing out of range");
	if (e->pid != (uint32_t)getpid())
		fail("an entry under another pid");
	if (e->netns != w->netns || e->ifindex != w->ifindex)
		fail("an entry of another interface");
	check_addr(&e->local);
	check_addr(&e->remote);
	if (e->kind != NDK_REG_CONNECTION && e->remote.si_family != AF_UNSPEC)
		fail("a peer on an endpoint");
	w->n++;
	return 0;
}

/* The three lists through the public API: sizes agree with what the
 * call said it needs. */
static void query_oids(void)
{
	static const NDIS_OID oids[] = { OID_NDK_LOCAL_ENDPOINTS,
					 OID_NDK_CONNECTIONS,
					 OID_NDK_STATISTICS };
	ULONG need, got, room;
	unsigned int i;
	NDIS_STATUS st;
	void *buf;

	for (i = 0; i < sizeof(oids) / sizeof(oids[0]); i++) {
		need = got = 0;
		st = NdkQueryOid(lo_index, oids[i], NULL, 0, &got, &need);
		if (st != NDIS_STATUS_BUFFER_TOO_SHORT || got || !need)
			fail("short query");
		room = need;
		buf = malloc(room);
		if (!buf)
			fail("malloc");
		st = NdkQueryOid(lo_index, oids[i], buf, room, &got, &need);
		/* The list may have shrunk (a dead owner's file removed). */
		if (st == NDIS_STATUS_SUCCESS && (got > room || !got))
			fail("query wrote more than it needed");
		free(buf);
	}
}

static void fix_process_file(uint8_t *f, size_t len, const struct want *w)
{
	struct ndk_reg_header *h = (struct ndk_reg_header *)f;
	uint32_t *s;
	size_t off;

	if (len < sizeof(*h))
		return;
	h->magic = NDK_REG_MAGIC;
	h->version = NDK_REG_VERSION;
	h->pid = (uint32_t)getpid();
	for (off = NDK_REG_HEADER_SIZE; off + NDK_REG_SLOT_SIZE <= len;
	     off += NDK_REG_SLOT_SIZE) {
		s = (uint32_t *)(f + off);
		s[NDK_REG_W_PID] = (uint32_t)getpid();
		s[NDK_REG_W_NETNS_LO] = (uint32_t)w->netns;
		s[NDK_REG_W_NETNS_HI] = (uint32_t)(w->netns >> 32);
		s[NDK_REG_W_IFINDEX] = w->ifindex;
	}
}

static void fix_counters_file(uint8_t *f, size_t len, const struct want *w)
{
	struct ndk_ctr_header *h = (struct ndk_ctr_header *)f;

	if (len < sizeof(*h))
		return;
	h->magic = NDK_CTR_MAGIC;
	h->version = NDK_REG_VERSION;
	h->netns = w->netns;
	h->ifindex = w->ifindex;
}

/* The counters a reader must report for the file f of len bytes. */
static void expected_counters(const uint8_t *f, size_t len,
			      const struct want *w, uint64_t *out)
{
	struct ndk_ctr_header h;

	memset(out, 0, NDK_CTR_COUNT * sizeof(*out));
	if (len < NDK_CTR_FILE_SIZE)
		return;
	memcpy(&h, f, sizeof(h));
	if (h.magic != NDK_CTR_MAGIC || h.version != NDK_REG_VERSION ||
	    h.netns != w->netns || h.ifindex != w->ifindex)
		return;
	memcpy(out, f + NDK_CTR_HEADER_SIZE, NDK_CTR_COUNT * sizeof(*out));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool ready;
	uint64_t got[NDK_CTR_COUNT], want_ctr[NDK_CTR_COUNT];
	struct want w = { .netns = MADE_UP_NS, .ifindex = MADE_UP_IF };
	char path[256];
	uint8_t flags, *f;
	size_t len, hdr_room;
	int fd;

	if (!ready) {
		setup();
		ready = true;
	}
	if (!size)
		return 0;
	flags = data[0];
	data++;
	size--;
	if (flags & F_LO) {
		w.netns = self_ns;
		w.ifindex = lo_index;
	}
	/* The file as it will be on disk. */
	hdr_room =
		flags & F_COUNTERS ? NDK_CTR_HEADER_SIZE : NDK_REG_HEADER_SIZE;
	if (flags & F_RAW || size < HDR_LEN) {
		len = size;
		f = malloc(len ? len : 1);
		if (!f)
			fail("malloc");
		memcpy(f, data, len);
	} else {
		len = hdr_room + size - HDR_LEN;
		f = calloc(1, len);
		if (!f)
			fail("calloc");
		memcpy(f, data, HDR_LEN);
		memcpy(f + hdr_room, data + HDR_LEN, size - HDR_LEN);
	}
	if (flags & F_FIX) {
		if (flags & F_COUNTERS)
			fix_counters_file(f, len, &w);
		else
			fix_process_file(f, len, &w);
	}
	if (flags & F_COUNTERS)
		snprintf(path, sizeof(path), "%s/c.%016llx.%u", dir,
			 (unsigned long long)w.netns, w.ifindex);
	else
		snprintf(path, sizeof(path), "%s/p.%d.0123456789abcdef", dir,
			 (int)getpid());
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || (len && pwrite(fd, f, len, 0) != (ssize_t)len))
		fail("writing the file");
	if ((flags & F_LIVE) && flock(fd, LOCK_EX))
		fail("flock");

	if (ndk_reg_scan(w.netns, w.ifindex, visit, &w))
		fail("scan failed");
	if (!(flags & F_COUNTERS) &&
	    w.n > (len > NDK_REG_HEADER_SIZE
			   ? (len - NDK_REG_HEADER_SIZE) / NDK_REG_SLOT_SIZE
			   : 0))
		fail("more entries than slots");
	ndk_reg_counters_read(w.netns, w.ifindex, got);
	if (flags & F_COUNTERS)
		expected_counters(f, len, &w, want_ctr);
	else
		memset(want_ctr, 0, sizeof(want_ctr));
	if (memcmp(got, want_ctr, sizeof(got)))
		fail("counters differ from the file's");
	if (getenv("FUZZ_REGISTRY_SHOW"))
		fprintf(stderr, "flags %#x: %u entries\n", flags, w.n);
	if (flags & F_LO)
		query_oids();

	close(fd);
	unlink(path);
	free(f);
	return 0;
}
