/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tool_host.h"

const char *tool_prog = "ndk";

void tool_die(const char *what, NTSTATUS status)
{
	fprintf(stderr, "%s: %s: %s (0x%08x)\n", tool_prog, what,
		NdkStatusName(status), (unsigned int)status);
	exit(TOOL_EXIT_FAIL);
}

void tool_check(const char *what, NTSTATUS status)
{
	if (!NT_SUCCESS(status))
		tool_die(what, status);
}

NTSTATUS tool_host_try_open(struct tool_host *h, NET_IFINDEX ifindex)
{
	NDK_VERSION v = { .Major = 2, .Minor = 1 };
	ULONG size = sizeof(h->info);
	NTSTATUS st;

	memset(h, 0, sizeof(*h));
	h->ifindex = ifindex;
	st = NdkOpenAdapter(v, ifindex, &h->ad);
	if (!NT_SUCCESS(st)) {
		h->ad = NULL;
		return st;
	}
	st = h->ad->Dispatch->NdkQueryAdapterInfo(h->ad, &h->info, &size);
	if (NT_SUCCESS(st))
		st = h->ad->Dispatch->NdkCreatePd(h->ad, NULL, NULL, &h->pd);
	if (!NT_SUCCESS(st)) {
		h->pd = NULL;
		tool_host_close(h);
	}
	return st;
}

void tool_host_open(struct tool_host *h, NET_IFINDEX ifindex)
{
	NDK_VERSION v = { .Major = 2, .Minor = 1 };
	ULONG size = sizeof(h->info);

	memset(h, 0, sizeof(*h));
	h->ifindex = ifindex;
	tool_check("NdkOpenAdapter", NdkOpenAdapter(v, ifindex, &h->ad));
	tool_check("NdkQueryAdapterInfo", h->ad->Dispatch->NdkQueryAdapterInfo(
						  h->ad, &h->info, &size));
	tool_check("NdkCreatePd",
		   h->ad->Dispatch->NdkCreatePd(h->ad, NULL, NULL, &h->pd));
}

void tool_host_close(struct tool_host *h)
{
	if (h->pd)
		TOOL_CLOSE(h->pd);
	if (h->ad)
		NdkCloseAdapter(h->ad);
	memset(h, 0, sizeof(*h));
}

/* Every NDK object is a header followed by its dispatch table, and every
 * table starts with the object's close function (NDKPI 2.x layout). */
struct tool_any_object {
	NDK_OBJECT_HEADER Header;
	const NDK_FN_CLOSE_OBJECT *Dispatch;
};

NTSTATUS tool_close(NDK_OBJECT_HEADER *obj)
{
	const struct tool_any_object *any = (const void *)obj;
	struct tool_wait *w = malloc(sizeof(*w));
	NTSTATUS st;

	if (!w) {
		fprintf(stderr, "%s: out of memory\n", tool_prog);
		exit(TOOL_EXIT_FAIL);
	}
	tool_wait_init(w);
	st = any->Dispatch[0](obj, tool_wait_closed, w);
	st = tool_wait_result(w, st, 30000);
	if (!NT_SUCCESS(st)) {
		/* The close may still complete later: w stays allocated for
		 * that callback. */
		fprintf(stderr, "%s: close: %s\n", tool_prog,
			NdkStatusName(st));
		return st;
	}
	free(w);
	return st;
}

void tool_buf_alloc(struct tool_host *h, struct tool_buf *b, size_t len,
		    ULONG mr_flags)
{
	size_t reg = len ? len : 1;
	size_t alloc = (reg + 4095) & ~(size_t)4095;
	struct tool_wait w;
	PMDL mdl;

	memset(b, 0, sizeof(*b));
	b->len = len;
	b->mem = aligned_alloc(4096, alloc);
	mdl = b->mem ? IoAllocateMdl(b->mem, (ULONG)reg, FALSE, FALSE, NULL)
		     : NULL;
	if (!mdl) {
		fprintf(stderr, "%s: out of memory\n", tool_prog);
		exit(TOOL_EXIT_FAIL);
	}
	memset(b->mem, 0, alloc);
	tool_check("NdkCreateMr", h->pd->Dispatch->NdkCreateMr(
					  h->pd, FALSE, NULL, NULL, &b->mr));
	tool_wait_init(&w);
	tool_check("NdkRegisterMr",
		   tool_wait_result(&w,
				    b->mr->Dispatch->NdkRegisterMr(
					    b->mr, mdl, reg, mr_flags,
					    tool_wait_done, &w),
				    30000));
	IoFreeMdl(mdl);
	b->ltok = b->mr->Dispatch->NdkGetLocalTokenFromMr(b->mr);
	b->rtok = b->mr->Dispatch->NdkGetRemoteTokenFromMr(b->mr);
}

void tool_buf_free(struct tool_buf *b)
{
	/* Closing a registered MR deregisters it. */
	if (b->mr)
		TOOL_CLOSE(b->mr);
	free(b->mem);
	memset(b, 0, sizeof(*b));
}

static VOID tool_connect_event(PVOID ctx, NDK_CONNECTOR *c)
{
	struct tool_listener *l = ctx;

	if (l->direct) {
		l->direct(l->direct_arg, c);
		return;
	}
	pthread_mutex_lock(&l->lock);
	if (l->tail - l->head < TOOL_BACKLOG) {
		l->q[l->tail++ % TOOL_BACKLOG] = c;
		pthread_cond_broadcast(&l->cond);
		c = NULL;
	}
	pthread_mutex_unlock(&l->lock);
	if (c) {
		c->Dispatch->NdkReject(c, NULL, 0);
		c->Dispatch->NdkCloseConnector(&c->Header, NULL, NULL);
	}
}

NTSTATUS tool_listen_direct(NDK_ADAPTER *ad, struct tool_listener *l,
			    const struct sockaddr *addr,
			    void (*direct)(void *arg, NDK_CONNECTOR *c),
			    void *arg)
{
	ULONG len = sizeof(l->addr);
	struct tool_wait w;
	NTSTATUS st;

	memset(l, 0, sizeof(*l));
	pthread_mutex_init(&l->lock, NULL);
	pthread_cond_init(&l->cond, NULL);
	l->direct = direct;
	l->direct_arg = arg;
	st = ad->Dispatch->NdkCreateListener(ad, tool_connect_event, l, NULL,
					     NULL, &l->lis);
	if (!NT_SUCCESS(st))
		return st;
	tool_wait_init(&w);
	st = l->lis->Dispatch->NdkListen(l->lis, (PSOCKADDR)addr,
					 tool_addr_len(addr), tool_wait_done,
					 &w);
	st = tool_wait_result(&w, st, 30000);
	if (NT_SUCCESS(st))
		st = l->lis->Dispatch->NdkGetLocalAddress(
			l->lis, (PSOCKADDR)&l->addr, &len);
	return st;
}

NTSTATUS tool_listen(NDK_ADAPTER *ad, struct tool_listener *l,
		     const struct sockaddr *addr)
{
	return tool_listen_direct(ad, l, addr, NULL, NULL);
}

NDK_CONNECTOR *tool_next_incoming(struct tool_listener *l, unsigned int ms)
{
	struct timespec ts = tool_deadline(ms);
	NDK_CONNECTOR *c = NULL;

	pthread_mutex_lock(&l->lock);
	while (l->head == l->tail) {
		if (!ms)
			pthread_cond_wait(&l->cond, &l->lock);
		else if (pthread_cond_timedwait(&l->cond, &l->lock, &ts) ==
			 ETIMEDOUT)
			break;
	}
	if (l->head != l->tail)
		c = l->q[l->head++ % TOOL_BACKLOG];
	pthread_mutex_unlock(&l->lock);
	return c;
}

void tool_listener_close(struct tool_listener *l)
{
	if (l->lis)
		TOOL_CLOSE(l->lis);
	l->lis = NULL;
}
