/* SPDX-License-Identifier: MIT */
/* Listening on one address or on every one (see tool_server.h). */
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tool_server.h"

static void server_refuse(NDK_CONNECTOR *c)
{
	c->Dispatch->NdkReject(c, NULL, 0);
	c->Dispatch->NdkCloseConnector(&c->Header, NULL, NULL);
}

static void server_event(void *arg, NDK_CONNECTOR *c)
{
	struct tool_server_listener *sl = arg;
	struct tool_server *s = sl->srv;

	if (s->direct) {
		s->direct(s->arg, sl->host, c);
		return;
	}
	pthread_mutex_lock(&s->lock);
	if (s->tail - s->head < TOOL_BACKLOG) {
		s->q[s->tail % TOOL_BACKLOG] =
			(struct tool_server_incoming){ c, sl->host };
		s->tail++;
		pthread_cond_broadcast(&s->cond);
		c = NULL;
	}
	pthread_mutex_unlock(&s->lock);
	if (c)
		server_refuse(c);
}

/* The adapter of ifindex, opened on first use; NULL (and *st says why)
 * if it does not open. */
static struct tool_host *server_host(struct tool_server *s, NET_IFINDEX idx,
				     NTSTATUS *st)
{
	struct tool_host *h, **grown;
	unsigned int i;

	for (i = 0; i < s->nhosts; i++)
		if (s->hosts[i]->ifindex == idx)
			return s->hosts[i];
	*st = STATUS_INSUFFICIENT_RESOURCES;
	h = calloc(1, sizeof(*h));
	grown = realloc(s->hosts, (s->nhosts + 1) * sizeof(*grown));
	if (grown)
		s->hosts = grown;
	if (!h || !grown) {
		free(h);
		return NULL;
	}
	*st = tool_host_try_open(h, idx);
	if (!NT_SUCCESS(*st)) {
		free(h);
		return NULL;
	}
	s->hosts[s->nhosts++] = h;
	return h;
}

/* Listens on addr through h, on the port of the first listener. */
static NTSTATUS server_listen(struct tool_server *s, struct tool_host *h,
			      struct sockaddr_storage *addr)
{
	struct tool_server_listener *sl, **grown;
	NTSTATUS st;

	if (s->nlis)
		tool_addr_set_port(addr,
				   tool_addr_port((struct sockaddr *)&s->addr));
	sl = calloc(1, sizeof(*sl));
	grown = realloc(s->lis, (s->nlis + 1) * sizeof(*grown));
	if (!sl || !grown) {
		free(sl);
		return STATUS_INSUFFICIENT_RESOURCES;
	}
	s->lis = grown;
	sl->srv = s;
	sl->host = h;
	st = tool_listen_direct(h->ad, &sl->l, (struct sockaddr *)addr,
				server_event, sl);
	if (!NT_SUCCESS(st)) {
		tool_listener_close(&sl->l);
		free(sl);
		return st;
	}
	if (!s->nlis)
		tool_addr_set_port(
			&s->addr,
			tool_addr_port((struct sockaddr *)&sl->l.addr));
	s->lis[s->nlis++] = sl;
	return st;
}

/* Every address of the wildcard's family on interfaces that are up. */
static void server_listen_all(struct tool_server *s, NET_IFINDEX only)
{
	struct sockaddr_storage a;
	struct ifaddrs *ifs, *i;
	struct tool_host *h;
	char text[80];
	NET_IFINDEX idx;
	NTSTATUS st;

	if (getifaddrs(&ifs)) {
		fprintf(stderr, "%s: getifaddrs: %s\n", tool_prog,
			strerror(errno));
		return;
	}
	for (i = ifs; i; i = i->ifa_next) {
		if (!i->ifa_addr ||
		    i->ifa_addr->sa_family != s->addr.ss_family ||
		    !(i->ifa_flags & IFF_UP))
			continue;
		idx = if_nametoindex(i->ifa_name);
		if (!idx || (only && idx != only))
			continue;
		h = server_host(s, idx, &st);
		if (!h) {
			fprintf(stderr, "%s: %s: NdkOpenAdapter: %s, skipped\n",
				tool_prog, i->ifa_name, NdkStatusName(st));
			continue;
		}
		memset(&a, 0, sizeof(a));
		memcpy(&a, i->ifa_addr, tool_addr_len(i->ifa_addr));
		tool_addr_set_port(&a,
				   tool_addr_port((struct sockaddr *)&s->addr));
		st = server_listen(s, h, &a);
		if (!NT_SUCCESS(st))
			fprintf(stderr,
				"%s: %s: NdkListen on %s: %s, skipped\n",
				tool_prog, i->ifa_name,
				tool_addr_str((struct sockaddr *)&a, text,
					      sizeof(text)),
				NdkStatusName(st));
	}
	freeifaddrs(ifs);
}

int tool_server_open(struct tool_server *s, const struct sockaddr *addr,
		     NET_IFINDEX ifindex, tool_server_fn *direct, void *arg)
{
	struct sockaddr_storage a;
	char text[80], ifname[IF_NAMESIZE] = "";
	struct tool_host *h;
	NET_IFINDEX idx;
	NTSTATUS st = STATUS_SUCCESS;

	memset(s, 0, sizeof(*s));
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
	s->direct = direct;
	s->arg = arg;
	s->q = calloc(TOOL_BACKLOG, sizeof(*s->q));
	if (!s->q) {
		fprintf(stderr, "%s: out of memory\n", tool_prog);
		return -1;
	}
	memcpy(&s->addr, addr, tool_addr_len(addr));
	if (tool_addr_is_any(addr)) {
		server_listen_all(s, ifindex);
		if (s->nlis)
			return 0;
		if (ifindex && !if_indextoname(ifindex, ifname))
			snprintf(ifname, sizeof(ifname), "%u", ifindex);
		fprintf(stderr, "%s: no address to listen on for %s%s%s\n",
			tool_prog, tool_addr_str(addr, text, sizeof(text)),
			ifindex ? " on interface " : "", ifname);
		tool_server_close(s);
		return -1;
	}
	idx = ifindex ? ifindex : tool_ifindex_of(addr);
	if (!idx) {
		fprintf(stderr, "%s: no interface has address %s\n", tool_prog,
			tool_addr_str(addr, text, sizeof(text)));
		tool_server_close(s);
		return -1;
	}
	h = server_host(s, idx, &st);
	if (!h) {
		fprintf(stderr, "%s: NdkOpenAdapter (interface %u): %s\n",
			tool_prog, idx, NdkStatusName(st));
		tool_server_close(s);
		return -1;
	}
	memcpy(&a, addr, tool_addr_len(addr));
	st = server_listen(s, h, &a);
	if (!NT_SUCCESS(st)) {
		fprintf(stderr, "%s: NdkListen on %s: %s\n", tool_prog,
			tool_addr_str(addr, text, sizeof(text)),
			NdkStatusName(st));
		tool_server_close(s);
		return -1;
	}
	return 0;
}

NDK_CONNECTOR *tool_server_next(struct tool_server *s, unsigned int ms,
				struct tool_host **h)
{
	struct timespec ts = tool_deadline(ms);
	struct tool_server_incoming in = { NULL, NULL };

	pthread_mutex_lock(&s->lock);
	while (s->head == s->tail) {
		if (!ms)
			pthread_cond_wait(&s->cond, &s->lock);
		else if (pthread_cond_timedwait(&s->cond, &s->lock, &ts) ==
			 ETIMEDOUT)
			break;
	}
	if (s->head != s->tail)
		in = s->q[s->head++ % TOOL_BACKLOG];
	pthread_mutex_unlock(&s->lock);
	if (h)
		*h = in.h;
	return in.c;
}

void tool_server_stop(struct tool_server *s)
{
	NDK_CONNECTOR *c;
	unsigned int i;

	for (i = 0; i < s->nlis; i++)
		if (s->lis[i]->l.lis)
			s->lis[i]->l.lis->Dispatch->NdkControlConnectEvents(
				s->lis[i]->l.lis, TRUE);
	if (!s->q)
		return;
	while ((c = tool_server_next(s, 1, NULL))) {
		c->Dispatch->NdkReject(c, NULL, 0);
		TOOL_CLOSE(c);
	}
}

void tool_server_close(struct tool_server *s)
{
	unsigned int i;

	tool_server_stop(s);
	for (i = 0; i < s->nlis; i++) {
		tool_listener_close(&s->lis[i]->l);
		free(s->lis[i]);
	}
	for (i = 0; i < s->nhosts; i++) {
		tool_host_close(s->hosts[i]);
		free(s->hosts[i]);
	}
	free(s->lis);
	free(s->hosts);
	free(s->q);
	s->lis = NULL;
	s->hosts = NULL;
	s->q = NULL;
	s->nlis = s->nhosts = 0;
}

const char *tool_server_str(const struct tool_server *s, char *buf, size_t len)
{
	char a[80];

	tool_addr_str((const struct sockaddr *)&s->addr, a, sizeof(a));
	if (!tool_addr_is_any((const struct sockaddr *)&s->addr))
		snprintf(buf, len, "%s", a);
	else
		snprintf(buf, len, "%s (%u address%s, %u interface%s)", a,
			 s->nlis, s->nlis == 1 ? "" : "es", s->nhosts,
			 s->nhosts == 1 ? "" : "s");
	return buf;
}
