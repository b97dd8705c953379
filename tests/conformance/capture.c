/* SPDX-License-Identifier: MIT */
#include <arpa/inet.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "capture.h"

int cap_failures;

void cap_failed(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: %s:%d: ", tool_prog, file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	cap_failures++;
}

static VOID cq_ignored(PVOID ctx, NTSTATUS status)
{
}

int cap_host_open(struct cap_host *h)
{
	NET_IFINDEX ifindex = if_nametoindex("lo");

	memset(h, 0, sizeof(*h));
	CHECK(ifindex != 0);
	tool_host_open(&h->t, ifindex);
	CHECK_ST(h->t.ad->Dispatch->NdkCreateCq(h->t.ad, 64, cq_ignored, NULL,
						NULL, NULL, NULL, &h->cq),
		 STATUS_SUCCESS);
	return 0;
}

bool cap_wait_positive(atomic_int *count, unsigned int ms)
{
	uint64_t end = tool_now_ns() / 1000000u + ms;

	while (atomic_load(count) == 0 && tool_now_ns() / 1000000u < end)
		tool_sleep_ms(10);
	return atomic_load(count) > 0;
}

struct sockaddr_in cap_lo4(uint16_t port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_port = htons(port) };

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return sin;
}

int cap_print_local_port(const char *key, NDK_CONNECTOR *c)
{
	struct sockaddr_in sin;
	ULONG len = sizeof(sin);

	CHECK_ST(c->Dispatch->NdkGetLocalAddress(c, (PSOCKADDR)&sin, &len),
		 STATUS_SUCCESS);
	CHECK(sin.sin_family == AF_INET);
	printf("%s %u\n", key, ntohs(sin.sin_port));
	fflush(stdout);
	return 0;
}

int cap_listen(NDK_ADAPTER *ad, uint16_t port, struct tool_listener *l,
	       struct sockaddr_in *bound)
{
	struct sockaddr_in addr = cap_lo4(port);
	char line[64];

	CHECK_ST(tool_listen(ad, l, (struct sockaddr *)&addr), STATUS_SUCCESS);
	memcpy(bound, &l->addr, sizeof(*bound));
	printf("LISTEN %u\n", ntohs(bound->sin_port));
	fflush(stdout);
	/* The capture starts now; go on at the next line or at EOF. */
	CHECK(fgets(line, sizeof(line), stdin) || !ferror(stdin));
	return 0;
}

int cap_main(const char *prog, int argc, char **argv, int (*run)(uint16_t port))
{
	unsigned long port = 0;
	char *end;

	tool_prog = prog;
	if (argc > 2 || (argc == 2 && (port = strtoul(argv[1], &end, 10),
				       *end || port > 65535))) {
		fprintf(stderr, "usage: %s [PORT]\n", argv[0]);
		return 2;
	}
	if (run((uint16_t)port) || cap_failures)
		return 1;
	printf("DONE\n");
	return 0;
}
