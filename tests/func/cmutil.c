/* SPDX-License-Identifier: MIT */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <stdatomic.h>
#include "cmutil.h"

void cm_req_init(struct cm_req *r)
{
	tool_wait_init(&r->w);
}

VOID cm_req_done(PVOID ctx, NTSTATUS status)
{
	tool_wait_fire(&((struct cm_req *)ctx)->w, status);
}

NTSTATUS cm_req_wait(struct cm_req *r, unsigned int ms)
{
	/* tool_wait_for takes 0 as "forever"; 1 ms is a look. */
	NTSTATUS st = tool_wait_for(&r->w, ms ? ms : 1);
	int calls = tool_wait_count(&r->w);

	assert_true(calls <= 1);
	return calls ? st : -1;
}

NTSTATUS cm_req_result(NTSTATUS inline_status, struct cm_req *r,
		       unsigned int ms)
{
	if (inline_status != STATUS_PENDING)
		return inline_status;
	return cm_req_wait(r, ms);
}

atomic_int cm_cq_notifications;

static VOID on_cq(PVOID ctx, NTSTATUS status)
{
	atomic_fetch_add(&cm_cq_notifications, 1);
}

void cm_host_open(struct cm_host *h, const char *ifname)
{
	NDK_VERSION v = { 2, 0 };
	ULONG size = sizeof(h->info);

	memset(h, 0, sizeof(*h));
	assert_int_equal(NdkOpenAdapter(v, if_nametoindex(ifname), &h->ad),
			 STATUS_SUCCESS);
	assert_int_equal(
		h->ad->Dispatch->NdkQueryAdapterInfo(h->ad, &h->info, &size),
		STATUS_SUCCESS);
	assert_int_equal(
		h->ad->Dispatch->NdkCreatePd(h->ad, NULL, NULL, &h->pd),
		STATUS_SUCCESS);
	assert_int_equal(h->ad->Dispatch->NdkCreateCq(h->ad, 256, on_cq, NULL,
						      NULL, NULL, NULL, &h->cq),
			 STATUS_SUCCESS);
}

void cm_host_close(struct cm_host *h)
{
	/* NdkCloseAdapter closes whatever a test left open. */
	NdkCloseAdapter(h->ad);
	memset(h, 0, sizeof(*h));
}

bool cm_provider_is(struct cm_host *h, const char *name)
{
	NDK_PROVIDER_INFO pi;

	assert_int_equal(NdkQueryAdapterProvider(h->ad, &pi), STATUS_SUCCESS);
	return !strcmp(pi.Provider, name);
}

bool cm_device_is(struct cm_host *h, const char *prefix)
{
	NDK_PROVIDER_INFO pi;

	assert_int_equal(NdkQueryAdapterProvider(h->ad, &pi), STATUS_SUCCESS);
	return !strncmp(pi.Device, prefix, strlen(prefix));
}

void cm_test_provider(NDK_PROVIDER_INFO *pi)
{
	NDK_VERSION v = { 2, 0 };
	NDK_ADAPTER *ad;

	memset(pi, 0, sizeof(*pi));
	if (NdkOpenAdapter(v, if_nametoindex(cm_test_ifname()), &ad) ==
	    STATUS_SUCCESS) {
		NdkQueryAdapterProvider(ad, pi);
		NdkCloseAdapter(ad);
	}
}

void cm_software_only(void)
{
	NDK_PROVIDER_INFO pi;

	cm_test_provider(&pi);
	if (!strcmp(pi.Provider, "software"))
		return;
	printf("skipped: a test of the software provider, and %s gets "
	       "the %s provider\n",
	       cm_test_ifname(), pi.Provider[0] ? pi.Provider : "no");
	exit(77);
}

NDK_QP *cm_qp_sized(struct cm_host *h, ULONG depth, ULONG sge,
		    ULONG inline_size)
{
	NDK_QP *qp;
	NTSTATUS st;

	st = h->pd->Dispatch->NdkCreateQp(h->pd, h->cq, h->cq, NULL, depth,
					  depth, sge, sge, inline_size, NULL,
					  NULL, &qp);
	/* A device may run out of queue memory (docs/verbs.md,
	 * Devices). */
	cm_require(st != STATUS_INSUFFICIENT_RESOURCES ||
			   cm_provider_is(h, "software"),
		   "device memory for more queues");
	assert_int_equal(st, STATUS_SUCCESS);
	return qp;
}

NDK_QP *cm_qp(struct cm_host *h)
{
	return cm_qp_sized(h, 16, 1, 0);
}

NDK_CONNECTOR *cm_connector(struct cm_host *h)
{
	NDK_CONNECTOR *c;

	assert_int_equal(
		h->ad->Dispatch->NdkCreateConnector(h->ad, NULL, NULL, &c),
		STATUS_SUCCESS);
	return c;
}

NTSTATUS cm_listen(struct cm_host *h, struct tool_listener *l,
		   const struct sockaddr *addr)
{
	return tool_listen(h->ad, l, addr);
}

void cm_listener_close(struct tool_listener *l)
{
	/* Not waited for: a listener's close may pend on the connectors
	 * its connect events handed out, which a test closes later. */
	NTSTATUS st =
		l->lis->Dispatch->NdkCloseListener(&l->lis->Header, NULL, NULL);

	assert_true(st == STATUS_SUCCESS || st == STATUS_PENDING);
}

NDK_CONNECTOR *cm_next_incoming(struct tool_listener *l, unsigned int ms)
{
	return tool_next_incoming(l, ms ? ms : 1);
}

const char *cm_test_ifname(void)
{
	const char *v = getenv("NDK_TEST_IF");

	return v && *v ? v : "lo";
}

struct sockaddr_in cm_lo4(uint16_t port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_port = htons(port) };
	const char *v = getenv("NDK_TEST_ADDR4");

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (v && *v)
		assert_int_equal(inet_pton(AF_INET, v, &sin.sin_addr), 1);
	return sin;
}

struct sockaddr_in6 cm_lo6(uint16_t port)
{
	struct sockaddr_in6 sin6 = { .sin6_family = AF_INET6,
				     .sin6_port = htons(port) };
	const char *v = getenv("NDK_TEST_ADDR6");

	sin6.sin6_addr = in6addr_loopback;
	if (v && *v)
		assert_int_equal(inet_pton(AF_INET6, v, &sin6.sin6_addr), 1);
	return sin6;
}

NTSTATUS cm_connect(NDK_CONNECTOR *c, NDK_QP *qp, const struct sockaddr *dst,
		    ULONG ird, ULONG ord, const void *pd, ULONG pdlen,
		    struct cm_req *r)
{
	struct sockaddr_storage src;
	ULONG len;

	memset(&src, 0, sizeof(src));
	if (dst->sa_family == AF_INET6) {
		struct sockaddr_in6 s6 = cm_lo6(0);

		memcpy(&src, &s6, sizeof(s6));
		len = sizeof(s6);
	} else {
		struct sockaddr_in s4 = cm_lo4(0);

		memcpy(&src, &s4, sizeof(s4));
		len = sizeof(s4);
	}
	cm_req_init(r);
	return c->Dispatch->NdkConnect(c, qp, (PSOCKADDR)&src, len,
				       (PSOCKADDR)dst, len, ird, ord, (PVOID)pd,
				       pdlen, cm_req_done, r);
}

void cm_accept_and_complete(NDK_CONNECTOR *a, struct cm_req *conn,
			    NDK_CONNECTOR *p, NDK_QP *pqp, unsigned int ms)
{
	struct cm_req acc;

	cm_req_init(&acc);
	assert_int_equal(p->Dispatch->NdkAccept(p, pqp, 1, 1, NULL, 0, NULL,
						NULL, cm_req_done, &acc),
			 STATUS_PENDING);
	assert_int_equal(cm_req_wait(conn, ms), STATUS_SUCCESS);
	assert_int_equal(
		a->Dispatch->NdkCompleteConnect(a, NULL, NULL, NULL, NULL),
		STATUS_SUCCESS);
	assert_int_equal(cm_req_wait(&acc, ms), STATUS_SUCCESS);
}

bool cm_rds_ok(struct cm_host *h, ULONG rds, ULONG len)
{
	if (h->info.RdmaTechnology == NdkiWarp)
		return rds == len;
	return rds >= len;
}

void cm_assert_private_data(NDK_CONNECTOR *c, const void *pd, ULONG len)
{
	char buf[256];
	ULONG got = sizeof(buf), i;

	assert_int_equal(
		c->Dispatch->NdkGetConnectionData(c, NULL, NULL, buf, &got),
		STATUS_SUCCESS);
	assert_true(got >= len);
	assert_memory_equal(buf, pd, len);
	/* IB and RoCE pad the CM message's area with zeros. */
	for (i = len; i < got; i++)
		assert_int_equal(buf[i], 0);
}

bool cm_private_data_is(NDK_CONNECTOR *c, const void *pd, ULONG len)
{
	char buf[256];
	ULONG got = sizeof(buf), i;

	if (c->Dispatch->NdkGetConnectionData(c, NULL, NULL, buf, &got) ||
	    got < len || memcmp(buf, pd, len))
		return false;
	for (i = len; i < got; i++)
		if (buf[i])
			return false;
	return true;
}

void cm_close_connector(NDK_CONNECTOR *c)
{
	NTSTATUS st = c->Dispatch->NdkCloseConnector(&c->Header, NULL, NULL);

	assert_true(st == STATUS_SUCCESS || st == STATUS_PENDING);
}

void cm_close_qp(NDK_QP *qp)
{
	NTSTATUS st = qp->Dispatch->NdkCloseQp(&qp->Header, NULL, NULL);

	assert_true(st == STATUS_SUCCESS || st == STATUS_PENDING);
}

NDK_CONNECTOR *cm_connect_to_accepting(struct cm_host *cli, NDK_CONNECTOR *c,
				       struct cm_host *srv,
				       struct tool_listener *l, ULONG lim,
				       struct cm_req *r, struct cm_req *acc)
{
	NDK_CONNECTOR *in;

	assert_int_equal(cm_connect(c, cm_qp(cli), (struct sockaddr *)&l->addr,
				    lim, lim, NULL, 0, r),
			 STATUS_PENDING);
	in = cm_next_incoming(l, 5000);
	assert_non_null(in);
	cm_req_init(acc);
	assert_int_equal(in->Dispatch->NdkAccept(in, cm_qp(srv), lim, lim, NULL,
						 0, NULL, NULL, cm_req_done,
						 acc),
			 STATUS_PENDING);
	assert_int_equal(cm_req_wait(r, 5000), STATUS_SUCCESS);
	return in;
}

void cm_hosts_open(struct cm_host *srv, struct cm_host *cli)
{
	cm_host_open(srv, cm_test_ifname());
	cm_host_open(cli, cm_test_ifname());
}

void cm_hosts_close(struct cm_host *srv, struct cm_host *cli)
{
	cm_host_close(cli);
	cm_host_close(srv);
}

/* Prints one file's lines, each with prefix; quiet if it cannot be read
 * (a kernel stack needs root). */
static void dump_file(const char *path, const char *prefix)
{
	char line[256];
	FILE *f = fopen(path, "re");

	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		printf("%s%s", prefix, line);
	fclose(f);
}

/* The first line of a small file, without its newline; "" if none. */
static void read_line(const char *path, char *buf, size_t n)
{
	FILE *f = fopen(path, "re");

	buf[0] = 0;
	if (f && !fgets(buf, (int)n, f))
		buf[0] = 0;
	if (f)
		fclose(f);
	buf[strcspn(buf, "\n")] = 0;
}

void cm_dump_threads(const char *why)
{
	static atomic_bool done;
	char path[320], comm[64], wchan[64];
	struct dirent *d;
	DIR *dir;

	/* Once: the first failure's picture is the one that explains. */
	if (atomic_exchange(&done, true))
		return;
	printf("threads: %s\n", why);
	dir = opendir("/proc/self/task");
	while (dir && (d = readdir(dir))) {
		if (d->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm",
			 d->d_name);
		read_line(path, comm, sizeof(comm));
		snprintf(path, sizeof(path), "/proc/self/task/%s/wchan",
			 d->d_name);
		read_line(path, wchan, sizeof(wchan));
		printf("threads: %s %s in %s\n", d->d_name, comm, wchan);
		snprintf(path, sizeof(path), "/proc/self/task/%s/stack",
			 d->d_name);
		dump_file(path, "threads:   ");
	}
	if (dir)
		closedir(dir);
	dump_file("/proc/net/tcp", "threads: tcp ");
	fflush(stdout);
}
