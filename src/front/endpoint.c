/* SPDX-License-Identifier: MIT */
/*
 * The ND endpoint table (NDKPI Listeners, Connectors, and Endpoints;
 * docs/ndk.md, Endpoints).
 *
 * Every endpoint socket gets SO_REUSEADDR, so the kernel alone lets two
 * bound-but-not-listening sockets share an address: the table is what
 * enforces "one NDK endpoint per IP:port" (STATUS_SHARING_VIOLATION). The
 * kernel still refuses a bind next to a listening socket or next to a
 * socket without SO_REUSEADDR, which catches other users of the port.
 *
 * Address matching (the table's notion of "the same endpoint"):
 * - An IPv4-mapped IPv6 address (::ffff:a.b.c.d) is the IPv4 endpoint
 *   a.b.c.d: it conflicts with AF_INET entries for a.b.c.d. Its socket is
 *   AF_INET6 with IPV6_V6ONLY=0, so the fd's family stays the caller's and
 *   the kernel sees an IPv4 bind.
 * - Other AF_INET6 endpoints get IPV6_V6ONLY=1 and never overlap IPv4 ones.
 * - A wildcard (0.0.0.0 or ::) conflicts with every address of its family
 *   on the same port, and vice versa, as in the kernel's bind rules.
 * - Link-local IPv6 addresses with different non-zero scope ids differ.
 *
 * One mutex protects the table and the 4-tuple registry. The whole
 * check-bind-insert of an acquire runs under it: with SO_REUSEADDR two
 * racing binds of one port would both succeed in the kernel.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>
#include "core/lock.h"
#include "front/endpoint.h"
#include "core/compiler.h"
#include "core/config.h"
#include "core/list.h"
#include "core/log.h"
#include "front/adapter.h"
#include "oid/registry.h"

#define EP_HASH_BITS 8
#define EP_HASH_SIZE (1u << EP_HASH_BITS)

#define EPHEMERAL_MIN_DEFAULT 49152
#define EPHEMERAL_MAX_DEFAULT 65535

/* The normalized address used for matching (mapped IPv4 is AF_INET). */
struct ep_key {
	sa_family_t family;
	uint16_t port; /* host order */
	uint32_t scope; /* IPv6 link-local only, else 0 */
	union {
		struct in_addr v4;
		struct in6_addr v6;
	};
};

struct ndk_endpoint {
	struct list_head node; /* in ep_hash[port bucket] */
	struct ep_key key;
	union {
		struct sockaddr sa;
		struct sockaddr_in in;
		struct sockaddr_in6 in6;
	} addr; /* as the caller gave it, with the actual port */
	socklen_t addrlen;
	enum ndk_endpoint_kind kind;
	atomic_uint refs;
	atomic_int fd; /* -1 once taken */
	int reg_slot; /* OID_NDK_LOCAL_ENDPOINTS entry, or -1 */
};

struct ep_tuple {
	struct list_head node;
	struct ep_key local, remote;
};

static struct ndk_lock ep_lock = NDK_LOCK_INITIALIZER(NDK_LOCK_ENDPOINT);
static struct list_head ep_hash[EP_HASH_SIZE];
static struct list_head tuple_hash[EP_HASH_SIZE];
static bool ep_inited;
/* Next ephemeral candidate offset; random on first use, then rotating. */
static uint32_t ep_next_offset;

/* Called with ep_lock held. */
static void ep_init_locked(void)
{
	unsigned int i;

	NDK_ASSERT_LOCKED(&ep_lock);

	if (ep_inited)
		return;
	for (i = 0; i < EP_HASH_SIZE; i++) {
		list_init(&ep_hash[i]);
		list_init(&tuple_hash[i]);
	}
	if (getrandom(&ep_next_offset, sizeof(ep_next_offset), GRND_NONBLOCK) !=
	    (ssize_t)sizeof(ep_next_offset))
		ep_next_offset = (uint32_t)time(NULL) ^ (uint32_t)getpid();
	ep_inited = true;
}

static unsigned int port_bucket(uint16_t port)
{
	return (port ^ (port >> EP_HASH_BITS)) & (EP_HASH_SIZE - 1);
}

/*
 * Fills key from addr (family, length and, for IPv4-mapped, normalization).
 * *mapped tells whether addr is an IPv4-mapped AF_INET6 address.
 */
static int sockaddr_to_key(const struct sockaddr *addr, socklen_t addrlen,
			   struct ep_key *key, bool *mapped)
{
	memset(key, 0, sizeof(*key));
	if (mapped)
		*mapped = false;
	if (!addr)
		return -EINVAL;
	if (addr->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)addr;

		if (addrlen < sizeof(*in))
			return -EINVAL;
		key->family = AF_INET;
		key->port = ntohs(in->sin_port);
		key->v4 = in->sin_addr;
		return 0;
	}
	if (addr->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 =
			(const struct sockaddr_in6 *)addr;

		if (addrlen < sizeof(*in6))
			return -EINVAL;
		key->port = ntohs(in6->sin6_port);
		if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr)) {
			key->family = AF_INET;
			memcpy(&key->v4, &in6->sin6_addr.s6_addr[12],
			       sizeof(key->v4));
			if (mapped)
				*mapped = true;
			return 0;
		}
		key->family = AF_INET6;
		key->v6 = in6->sin6_addr;
		if (IN6_IS_ADDR_LINKLOCAL(&in6->sin6_addr))
			key->scope = in6->sin6_scope_id;
		return 0;
	}
	return -EINVAL;
}

/* The length of the sockaddr for its family (for APIs without one). */
static socklen_t sockaddr_len(const struct sockaddr *addr)
{
	if (!addr)
		return 0;
	if (addr->sa_family == AF_INET)
		return sizeof(struct sockaddr_in);
	if (addr->sa_family == AF_INET6)
		return sizeof(struct sockaddr_in6);
	return 0;
}

static bool key_is_any(const struct ep_key *k)
{
	if (k->family == AF_INET)
		return k->v4.s_addr == htonl(INADDR_ANY);
	return IN6_IS_ADDR_UNSPECIFIED(&k->v6);
}

static bool key_ip_equal(const struct ep_key *a, const struct ep_key *b)
{
	if (a->family != b->family)
		return false;
	if (a->family == AF_INET)
		return a->v4.s_addr == b->v4.s_addr;
	if (memcmp(&a->v6, &b->v6, sizeof(a->v6)))
		return false;
	return !a->scope || !b->scope || a->scope == b->scope;
}

/* Whether endpoints a and b would use the same local address:port. */
static bool key_conflicts(const struct ep_key *a, const struct ep_key *b)
{
	if (a->family != b->family || a->port != b->port)
		return false;
	return key_ip_equal(a, b) || key_is_any(a) || key_is_any(b);
}

/* Called with ep_lock held. */
static bool ep_in_use_locked(const struct ep_key *key)
{
	struct list_head *pos;

	NDK_ASSERT_LOCKED(&ep_lock);

	list_for_each (pos, &ep_hash[port_bucket(key->port)]) {
		struct ndk_endpoint *ep =
			list_entry(pos, struct ndk_endpoint, node);

		if (key_conflicts(&ep->key, key))
			return true;
	}
	return false;
}

/* A non-blocking, close-on-exec TCP socket with SO_REUSEADDR. */
static int ep_socket(sa_family_t family, bool mapped)
{
	int one = 1, v6only = !mapped;
	int fd, err;

	fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)))
		goto fail;
	if (family == AF_INET6 &&
	    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof(v6only)))
		goto fail;
	return fd;
fail:
	err = -errno;
	close(fd);
	return err;
}

static void set_port(void *addr, uint16_t port)
{
	struct sockaddr *sa = addr;

	if (sa->sa_family == AF_INET)
		((struct sockaddr_in *)addr)->sin_port = htons(port);
	else
		((struct sockaddr_in6 *)addr)->sin6_port = htons(port);
}

static int ep_bind(int fd, struct ndk_endpoint *ep, uint16_t port)
{
	set_port(&ep->addr, port);
	if (bind(fd, &ep->addr.sa, ep->addrlen))
		return -errno;
	return 0;
}

/*
 * The NDK ephemeral range (NDK_FN_CONNECT: port 0 -> 49152-65535), from
 * NDK_EPHEMERAL_PORT_MIN/MAX, read on every call. min > max falls back to
 * the defaults.
 */
static void ephemeral_range(uint16_t *min, uint16_t *max)
{
	uint64_t lo = ndk_config_u64("NDK_EPHEMERAL_PORT_MIN",
				     EPHEMERAL_MIN_DEFAULT, 1, 65535);
	uint64_t hi = ndk_config_u64("NDK_EPHEMERAL_PORT_MAX",
				     EPHEMERAL_MAX_DEFAULT, 1, 65535);

	if (lo > hi) {
		ndk_warn(
			"NDK_EPHEMERAL_PORT_MIN=%llu > NDK_EPHEMERAL_PORT_MAX=%llu; using %u-%u",
			(unsigned long long)lo, (unsigned long long)hi,
			EPHEMERAL_MIN_DEFAULT, EPHEMERAL_MAX_DEFAULT);
		lo = EPHEMERAL_MIN_DEFAULT;
		hi = EPHEMERAL_MAX_DEFAULT;
	}
	*min = (uint16_t)lo;
	*max = (uint16_t)hi;
}

/*
 * Port 0: the provider picks from its own range, never the kernel (whose
 * ip_local_port_range is not the NDK one). Candidates start at a rotating
 * offset so a just-freed port (maybe in TIME_WAIT) is reused last; ports in
 * the table are skipped, ports the kernel refuses are tried past.
 * Called with ep_lock held.
 */
static int ep_bind_ephemeral_locked(int fd, struct ndk_endpoint *ep)
{
	uint16_t min, max;
	uint32_t n, i, off;
	int err;

	NDK_ASSERT_LOCKED(&ep_lock);

	ephemeral_range(&min, &max);
	n = (uint32_t)max - min + 1;
	off = ep_next_offset % n;
	for (i = 0; i < n; i++) {
		uint16_t port = (uint16_t)(min + (off + i) % n);

		ep->key.port = port;
		if (ep_in_use_locked(&ep->key))
			continue;
		err = ep_bind(fd, ep, port);
		if (!err) {
			ep_next_offset = off + i + 1;
			return 0;
		}
		/* In use elsewhere, or privileged: try the next port. */
		if (err != -EADDRINUSE && err != -EACCES)
			return err;
	}
	ndk_dbg("endpoint: no free port in %u-%u", min, max);
	return -EAGAIN;
}

int ndk_endpoint_acquire(const struct sockaddr *addr, socklen_t addrlen,
			 enum ndk_endpoint_kind kind, struct ndk_endpoint **epp)
{
	struct ndk_endpoint *ep;
	bool mapped;
	int fd, err;

	if (!epp || (unsigned int)kind >= NDK_ENDPOINT_KIND_COUNT)
		return -EINVAL;
	*epp = NULL;
	ep = calloc(1, sizeof(*ep));
	if (!ep)
		return -ENOMEM;
	err = sockaddr_to_key(addr, addrlen, &ep->key, &mapped);
	if (err)
		goto free_ep;
	ep->addrlen = sockaddr_len(addr);
	memcpy(&ep->addr, addr, ep->addrlen);
	if (addr->sa_family == AF_INET6)
		ep->addr.in6.sin6_flowinfo = 0;
	ep->kind = kind;
	ep->reg_slot = -1;
	atomic_init(&ep->refs, 1);
	list_init(&ep->node);

	ndk_lock(&ep_lock);
	ep_init_locked();
	/* One NDK endpoint per address (docs/ndk.md, Endpoints): the kernel
	 * would allow it. */
	if (ep->key.port && ep_in_use_locked(&ep->key)) {
		err = -EADDRINUSE;
		goto unlock;
	}
	fd = ep_socket(addr->sa_family, mapped);
	if (fd < 0) {
		err = fd;
		goto unlock;
	}
	if (ep->key.port)
		err = ep_bind(fd, ep, ep->key.port);
	else
		err = ep_bind_ephemeral_locked(fd, ep);
	if (err) {
		close(fd);
		goto unlock;
	}
	atomic_init(&ep->fd, fd);
	list_add_tail(&ep->node, &ep_hash[port_bucket(ep->key.port)]);
	ndk_unlock(&ep_lock);
	ndk_dbg("endpoint: %p kind %d port %u fd %d", (void *)ep, kind,
		ep->key.port, fd);
	*epp = ep;
	return 0;

unlock:
	ndk_unlock(&ep_lock);
free_ep:
	free(ep);
	return err;
}

void ndk_endpoint_get(struct ndk_endpoint *ep)
{
	/* The caller holds a reference, so refs > 0 here. */
	atomic_fetch_add_explicit(&ep->refs, 1, memory_order_relaxed);
}

void ndk_endpoint_put(struct ndk_endpoint *ep)
{
	int fd;

	if (!ep)
		return;
	if (atomic_fetch_sub_explicit(&ep->refs, 1, memory_order_acq_rel) != 1)
		return;
	/* Last reference (docs/ndk.md, Endpoints: freed at 0). Close under
	 * the lock so the port is free in the kernel as soon as it leaves the
	 * table. */
	ndk_lock(&ep_lock);
	list_del(&ep->node);
	fd = atomic_exchange(&ep->fd, -1);
	if (fd >= 0)
		close(fd);
	ndk_unlock(&ep_lock);
	/* Listed until the last reference goes (docs/design.md, OID
	 * registry). */
	ndk_reg_withdraw(ep->reg_slot);
	free(ep);
}

void ndk_endpoint_publish(struct ndk_endpoint *ep, const struct ndk_adapter *ad)
{
	struct ndk_reg_entry e;

	if (ep->reg_slot >= 0 || ep->kind == NDK_ENDPOINT_CONNECTOR)
		return;
	e = ndk_adapter_reg_entry(ad, ep->kind == NDK_ENDPOINT_LISTENER
					      ? NDK_REG_LISTENER
					      : NDK_REG_SHARED_ENDPOINT);
	ndk_reg_sockaddr(&e.local, &ep->addr.sa);
	ep->reg_slot = ndk_reg_publish(&e);
}

int ndk_endpoint_fd(const struct ndk_endpoint *ep)
{
	return atomic_load(&((struct ndk_endpoint *)ep)->fd);
}

int ndk_endpoint_take_fd(struct ndk_endpoint *ep)
{
	return atomic_exchange(&ep->fd, -1);
}

const struct sockaddr *ndk_endpoint_addr(const struct ndk_endpoint *ep,
					 socklen_t *len)
{
	if (len)
		*len = ep->addrlen;
	return &ep->addr.sa;
}

enum ndk_endpoint_kind ndk_endpoint_kind(const struct ndk_endpoint *ep)
{
	return ep->kind;
}

unsigned int ndk_endpoint_refs(const struct ndk_endpoint *ep)
{
	return atomic_load(&((struct ndk_endpoint *)ep)->refs);
}

uint16_t ndk_endpoint_port(const struct ndk_endpoint *ep)
{
	return ep->key.port;
}

int ndk_endpoint_bind_shared(struct ndk_endpoint *ep)
{
	bool mapped =
		ep->addr.sa.sa_family == AF_INET6 && ep->key.family == AF_INET;
	int fd;

	if (ep->kind != NDK_ENDPOINT_SHARED)
		return -EINVAL;
	fd = ep_socket(ep->addr.sa.sa_family, mapped);
	if (fd < 0)
		return fd;
	/* ep->addr is immutable after acquire; no lock needed. */
	if (bind(fd, &ep->addr.sa, ep->addrlen)) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

static unsigned int tuple_bucket(const struct ep_key *l, const struct ep_key *r)
{
	return port_bucket((uint16_t)(l->port * 31u + r->port));
}

static bool key_equal(const struct ep_key *a, const struct ep_key *b)
{
	if (a->family != b->family || a->port != b->port ||
	    a->scope != b->scope)
		return false;
	if (a->family == AF_INET)
		return a->v4.s_addr == b->v4.s_addr;
	return !memcmp(&a->v6, &b->v6, sizeof(a->v6));
}

/* Called with ep_lock held. */
static struct ep_tuple *tuple_find_locked(const struct ep_key *l,
					  const struct ep_key *r)
{
	struct list_head *pos;

	NDK_ASSERT_LOCKED(&ep_lock);

	list_for_each (pos, &tuple_hash[tuple_bucket(l, r)]) {
		struct ep_tuple *t = list_entry(pos, struct ep_tuple, node);

		if (key_equal(&t->local, l) && key_equal(&t->remote, r))
			return t;
	}
	return NULL;
}

static int tuple_keys(const struct sockaddr *local,
		      const struct sockaddr *remote, struct ep_key *l,
		      struct ep_key *r)
{
	int err;

	err = sockaddr_to_key(local, sockaddr_len(local), l, NULL);
	if (err)
		return err;
	err = sockaddr_to_key(remote, sockaddr_len(remote), r, NULL);
	if (err)
		return err;
	return l->family == r->family ? 0 : -EINVAL;
}

int ndk_tuple_register(const struct sockaddr *local,
		       const struct sockaddr *remote)
{
	struct ep_tuple *t;
	int err;

	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	err = tuple_keys(local, remote, &t->local, &t->remote);
	if (err) {
		free(t);
		return err;
	}
	ndk_lock(&ep_lock);
	ep_init_locked();
	/* NDK_FN_CONNECT: an identical 4-tuple is ADDRESS_ALREADY_EXISTS. */
	if (tuple_find_locked(&t->local, &t->remote)) {
		ndk_unlock(&ep_lock);
		free(t);
		return -EEXIST;
	}
	list_add_tail(&t->node,
		      &tuple_hash[tuple_bucket(&t->local, &t->remote)]);
	ndk_unlock(&ep_lock);
	return 0;
}

void ndk_tuple_unregister(const struct sockaddr *local,
			  const struct sockaddr *remote)
{
	struct ep_key l, r;
	struct ep_tuple *t;

	if (tuple_keys(local, remote, &l, &r))
		return;
	ndk_lock(&ep_lock);
	ep_init_locked();
	t = tuple_find_locked(&l, &r);
	if (t)
		list_del(&t->node);
	ndk_unlock(&ep_lock);
	free(t);
}

void ndk_endpoint_for_each(void (*fn)(const struct ndk_endpoint *ep, void *arg),
			   void *arg)
{
	struct list_head *pos;
	unsigned int i;

	ndk_lock(&ep_lock);
	ep_init_locked();
	for (i = 0; i < EP_HASH_SIZE; i++)
		list_for_each (pos, &ep_hash[i])
			fn(list_entry(pos, struct ndk_endpoint, node), arg);
	ndk_unlock(&ep_lock);
}
