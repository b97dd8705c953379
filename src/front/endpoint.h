/* SPDX-License-Identifier: MIT */
/*
 * The ND endpoint table (NDKPI Listeners, Connectors, and Endpoints).
 *
 * An endpoint is a local IP address plus an ND port. iWARP shares the TCP
 * port space, so the ND port is the TCP port (docs/ndk.md, Endpoints) and an
 * endpoint is backed by a bound TCP socket. The provider keeps its own
 * table with the NDK reference counts, because the kernel's socket rules
 * alone do not give NDK semantics: a listener's endpoint stays reserved
 * while connectors accepted through it live, even after the listening
 * socket is gone; a shared endpoint is one address used by many outgoing
 * connections.
 *
 * The table is process-wide (ports are a host-wide name space) and
 * thread-safe.
 */
#ifndef NDK_FRONT_ENDPOINT_H
#define NDK_FRONT_ENDPOINT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

struct ndk_adapter;

enum ndk_endpoint_kind {
	NDK_ENDPOINT_LISTENER, /* NdkListen: +1 listener, +1 per accepted */
	NDK_ENDPOINT_CONNECTOR, /* NdkConnect: one reference, the connector */
	NDK_ENDPOINT_SHARED, /* shared endpoint: +1 object, +1 per connector */
	NDK_ENDPOINT_KIND_COUNT
};

struct ndk_endpoint;

/*
 * Reserves the local endpoint addr (AF_INET or AF_INET6; port 0 = pick a
 * free port from the ephemeral range, NDK_EPHEMERAL_PORT_MIN..MAX, default
 * 49152-65535). Creates a non-blocking, close-on-exec TCP socket bound to
 * it with SO_REUSEADDR (every kind; see below), so that shared-endpoint
 * connectors can bind further sockets to the same address with
 * ndk_endpoint_bind_shared(). The caller must already have checked that
 * addr's IP belongs to the adapter.
 * On success *epp holds one reference and ndk_endpoint_fd() gives the
 * socket (which stays owned by the endpoint unless taken).
 * Errors: -EADDRINUSE (held by this process's table or by the kernel),
 * -EAGAIN (port 0 and no free ephemeral port), -EADDRNOTAVAIL, -EINVAL,
 * -ENOMEM, -EMFILE...
 */
/*
 * Details of the implementation (endpoint.c):
 * - Every kind's socket has SO_REUSEADDR (a listener must restart over
 *   TIME_WAIT connections on its port); the kernel still refuses the bind
 *   next to a listening socket or a socket without SO_REUSEADDR, and the
 *   table refuses a second endpoint on one address of this process.
 * - AF_INET6 sockets have IPV6_V6ONLY=1, except for an IPv4-mapped
 *   address (::ffff:a.b.c.d), which is the IPv4 endpoint a.b.c.d for the
 *   table and is bound on an AF_INET6 socket with IPV6_V6ONLY=0.
 * - A wildcard address (0.0.0.0, ::) conflicts with every address of its
 *   family on the same port.
 * - A listener must still map an EADDRINUSE from listen() (another
 *   process's SO_REUSEADDR socket bound to the port) to
 *   STATUS_SHARING_VIOLATION.
 * - The 4-tuple registry matches exactly (no wildcards); IPv4-mapped
 *   addresses are normalized to IPv4 there too.
 * - The accessors (fd, addr, kind, refs, port) take no lock, so the
 *   ndk_endpoint_for_each() callback may use them.
 */
int ndk_endpoint_acquire(const struct sockaddr *addr, socklen_t addrlen,
			 enum ndk_endpoint_kind kind,
			 struct ndk_endpoint **epp);
void ndk_endpoint_get(struct ndk_endpoint *ep);
/* Drops a reference; at zero the endpoint leaves the table and its
 * socket (if still owned) is closed. */
void ndk_endpoint_put(struct ndk_endpoint *ep);

/*
 * Lists a listener or shared endpoint in OID_NDK_LOCAL_ENDPOINTS for the
 * adapter until its last reference is dropped. Call once the endpoint is
 * in use (a listener once it listens).
 */
void ndk_endpoint_publish(struct ndk_endpoint *ep,
			  const struct ndk_adapter *ad);

/* The endpoint's socket, or -1 once taken. */
int ndk_endpoint_fd(const struct ndk_endpoint *ep);
/* Hands the socket to the caller (e.g. a connector that connects it). */
int ndk_endpoint_take_fd(struct ndk_endpoint *ep);
/* The bound address, with the actual port. */
const struct sockaddr *ndk_endpoint_addr(const struct ndk_endpoint *ep,
					 socklen_t *len);
enum ndk_endpoint_kind ndk_endpoint_kind(const struct ndk_endpoint *ep);
unsigned int ndk_endpoint_refs(const struct ndk_endpoint *ep);
/* The actual port, host byte order. */
uint16_t ndk_endpoint_port(const struct ndk_endpoint *ep);

/*
 * For NDK_ENDPOINT_SHARED: a new non-blocking TCP socket bound (with
 * SO_REUSEADDR) to the shared endpoint's address, for one connector.
 * Returns the fd or a negative errno.
 */
int ndk_endpoint_bind_shared(struct ndk_endpoint *ep);

/*
 * Connection 4-tuples in use by this process: a duplicate local+remote
 * pair is refused with -EEXIST (STATUS_ADDRESS_ALREADY_EXISTS).
 */
int ndk_tuple_register(const struct sockaddr *local,
		       const struct sockaddr *remote);
void ndk_tuple_unregister(const struct sockaddr *local,
			  const struct sockaddr *remote);

/*
 * Visits every endpoint in the table (for the OID publication and tools);
 * fn runs under the table lock and must not call back into the table.
 */
void ndk_endpoint_for_each(void (*fn)(const struct ndk_endpoint *ep, void *arg),
			   void *arg);

#endif /* NDK_FRONT_ENDPOINT_H */
