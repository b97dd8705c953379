/* SPDX-License-Identifier: MIT */
/*
 * NdkQueryOid: OID_NDK_LOCAL_ENDPOINTS, OID_NDK_CONNECTIONS and
 * OID_NDK_STATISTICS of one interface, for every process on the machine
 * (docs/ndk.md, OIDs), from the registry (registry.h).
 *
 * iWARP maps ND ports onto TCP ports (ND port = TCP port here), so its
 * lists set the ...MappedtoTCP... flag and carry two entries per object:
 * the ND address with every other member filled, then the TCP address
 * with the other members left untouched (NDIS_NDK_LOCAL_ENDPOINTS).
 * RoCE and InfiniBand (the verbs provider) list each object once, flag
 * clear. An interface with both (the software provider forced onto a RoCE
 * interface beside verbs consumers) lists pairs; an ND-only object's
 * second entry has all-zero addresses: there is no TCP endpoint to name.
 */
#include <errno.h>
#include <net/if.h>
#include <stdlib.h>
#include <string.h>
#include "core/compiler.h"
#include "oid/registry.h"

struct oid_list {
	struct ndk_reg_entry *v;
	size_t n, cap;
	enum ndk_reg_kind want[2];
	unsigned int nwant;
};

static int oid_collect(const struct ndk_reg_entry *e, void *arg)
{
	struct oid_list *l = arg;
	struct ndk_reg_entry *grown;
	unsigned int i;

	for (i = 0; i < l->nwant; i++)
		if (e->kind == l->want[i])
			break;
	if (i == l->nwant)
		return 0;
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 32;

		grown = realloc(l->v, cap * sizeof(*grown));
		if (!grown)
			return -ENOMEM;
		l->v = grown;
		l->cap = cap;
	}
	l->v[l->n++] = *e;
	return 0;
}

/* Entries ordered for a stable listing: by port, then pid. */
static int oid_entry_cmp(const void *a, const void *b)
{
	const struct ndk_reg_entry *x = a, *y = b;
	uint16_t px = x->local.Ipv4.sin_port, py = y->local.Ipv4.sin_port;

	/* sin_port and sin6_port share their offset. */
	px = (uint16_t)((px >> 8) | (px << 8));
	py = (uint16_t)((py >> 8) | (py << 8));
	if (px != py)
		return px < py ? -1 : 1;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return 0;
}

static NDIS_STATUS oid_gather(uint64_t netns, NET_IFINDEX ifindex,
			      struct oid_list *l)
{
	int ret = ndk_reg_scan(netns, ifindex, oid_collect, l);

	if (ret) {
		free(l->v);
		return ret == -ENOMEM ? NDIS_STATUS_RESOURCES
				      : NDIS_STATUS_FAILURE;
	}
	if (l->n)
		qsort(l->v, l->n, sizeof(*l->v), oid_entry_cmp);
	return NDIS_STATUS_SUCCESS;
}

/* Pairs when any object is TCP-mapped, and when there is none (iWARP,
 * the software provider's technology, is what every interface has). */
static bool oid_tcp_paired(const struct oid_list *l)
{
	size_t i;

	if (!l->n)
		return true;
	for (i = 0; i < l->n; i++)
		if (l->v[i].addressing == NDK_REG_TCP_PAIRED)
			return true;
	return false;
}

/* The TCP half of a pair: the same address for a TCP-mapped object. */
static void oid_tcp_half(SOCKADDR_INET *tcp, const struct ndk_reg_entry *e,
			 const SOCKADDR_INET *addr)
{
	if (e->addressing == NDK_REG_TCP_PAIRED)
		*tcp = *addr; /* ND port = TCP port */
	else
		memset(tcp, 0, sizeof(*tcp));
}

static void oid_header(NDIS_OBJECT_HEADER *h, UCHAR revision, size_t size)
{
	h->Type = NDIS_OBJECT_TYPE_DEFAULT;
	h->Revision = revision;
	h->Size = (USHORT)MIN(size, (size_t)MAXUSHORT);
}

static NDIS_STATUS oid_too_short(size_t need, PULONG BytesNeeded)
{
	if (BytesNeeded)
		*BytesNeeded = need > 0xffffffffu ? 0xffffffffu : (ULONG)need;
	return NDIS_STATUS_BUFFER_TOO_SHORT;
}

/*
 * What both lists share: the objects of the wanted kinds, whether they go
 * in pairs, and the size their list takes (a header of head bytes, then
 * entries of entry bytes). NDIS_STATUS_SUCCESS leaves l->v for the caller
 * to fill from and free.
 */
struct oid_shape {
	size_t head, entry;
	size_t per; /* entries per object: 2 in TCP pairs */
	size_t need; /* bytes of the whole list */
	bool paired;
};

static NDIS_STATUS oid_list_begin(uint64_t netns, NET_IFINDEX ifindex,
				  struct oid_list *l, struct oid_shape *shape,
				  ULONG len, bool have_buf, PULONG BytesNeeded)
{
	NDIS_STATUS status = oid_gather(netns, ifindex, l);

	if (status)
		return status;
	shape->paired = oid_tcp_paired(l);
	shape->per = shape->paired ? 2 : 1;
	shape->need = shape->head + shape->per * l->n * shape->entry;
	if (!have_buf || len < shape->need) {
		free(l->v);
		return oid_too_short(shape->need, BytesNeeded);
	}
	return NDIS_STATUS_SUCCESS;
}

static NDIS_STATUS oid_list_end(struct oid_list *l,
				const struct oid_shape *shape,
				PULONG BytesWritten)
{
	free(l->v);
	if (BytesWritten)
		*BytesWritten = (ULONG)shape->need;
	return NDIS_STATUS_SUCCESS;
}

static NDIS_STATUS oid_local_endpoints(uint64_t netns, NET_IFINDEX ifindex,
				       PVOID buf, ULONG len,
				       PULONG BytesWritten, PULONG BytesNeeded)
{
	struct oid_list l = {
		.want = { NDK_REG_LISTENER, NDK_REG_SHARED_ENDPOINT },
		.nwant = 2,
	};
	struct oid_shape shape = {
		.head = NDIS_SIZEOF_NDK_LOCAL_ENDPOINTS_REVISION_1(0),
		.entry = sizeof(NDIS_NDK_LOCAL_ENDPOINT_ENTRY),
	};
	NDIS_NDK_LOCAL_ENDPOINTS *out = buf;
	NDIS_STATUS status;
	size_t i;

	status = oid_list_begin(netns, ifindex, &l, &shape, len, buf != NULL,
				BytesNeeded);
	if (status)
		return status;
	oid_header(&out->Header, NDIS_NDK_LOCAL_ENDPOINTS_REVISION_1,
		   shape.need);
	out->Flags = 0;
	out->Count = (ULONG)(shape.per * l.n);
	out->NDLocalEndpointsMappedtoTCPLocalEndpoints = shape.paired;
	for (i = 0; i < l.n; i++) {
		NDIS_NDK_LOCAL_ENDPOINT_ENTRY *nd =
			&out->LocalEndpoints[shape.per * i];

		nd->Local = l.v[i].local;
		/* libndk consumers use NDKPI, the kernel-mode interface. */
		nd->UserModeOwner = FALSE;
		nd->Listener = l.v[i].kind == NDK_REG_LISTENER;
		nd->OwnerPid = l.v[i].pid;
		if (shape.paired)
			oid_tcp_half(&nd[1].Local, &l.v[i], &l.v[i].local);
	}
	return oid_list_end(&l, &shape, BytesWritten);
}

static NDIS_STATUS oid_connections(uint64_t netns, NET_IFINDEX ifindex,
				   PVOID buf, ULONG len, PULONG BytesWritten,
				   PULONG BytesNeeded)
{
	struct oid_list l = { .want = { NDK_REG_CONNECTION }, .nwant = 1 };
	struct oid_shape shape = {
		.head = NDIS_SIZEOF_NDK_CONNECTIONS_REVISION_1(0),
		.entry = sizeof(NDIS_NDK_CONNECTION_ENTRY),
	};
	NDIS_NDK_CONNECTIONS *out = buf;
	NDIS_STATUS status;
	size_t i;

	status = oid_list_begin(netns, ifindex, &l, &shape, len, buf != NULL,
				BytesNeeded);
	if (status)
		return status;
	oid_header(&out->Header, NDIS_NDK_CONNECTIONS_REVISION_1, shape.need);
	out->Flags = 0;
	out->Count = (ULONG)(shape.per * l.n);
	out->NDConnectionsMappedtoTCPConnections = shape.paired;
	for (i = 0; i < l.n; i++) {
		NDIS_NDK_CONNECTION_ENTRY *nd =
			&out->Connections[shape.per * i];

		nd->Local = l.v[i].local;
		nd->Remote = l.v[i].remote;
		nd->UserModeOwner = FALSE;
		nd->OwnerPid = l.v[i].pid;
		if (shape.paired) {
			oid_tcp_half(&nd[1].Local, &l.v[i], &l.v[i].local);
			oid_tcp_half(&nd[1].Remote, &l.v[i], &l.v[i].remote);
		}
	}
	return oid_list_end(&l, &shape, BytesWritten);
}

static int oid_count_connection(const struct ndk_reg_entry *e, void *arg)
{
	if (e->kind == NDK_REG_CONNECTION)
		++*(uint64_t *)arg;
	return 0;
}

static NDIS_STATUS oid_statistics(uint64_t netns, NET_IFINDEX ifindex,
				  PVOID buf, ULONG len, PULONG BytesWritten,
				  PULONG BytesNeeded)
{
	const size_t need = NDIS_SIZEOF_NDK_STATISTICS_INFO_REVISION_1;
	NDIS_NDK_STATISTICS_INFO *out = buf;
	uint64_t ctr[NDK_CTR_COUNT];
	uint64_t active = 0;

	if (!buf || len < need)
		return oid_too_short(need, BytesNeeded);
	ndk_reg_counters_read(netns, ifindex, ctr);
	/* Counted from the live connections, so a killed process's
	 * connections stop counting the moment it is gone. */
	if (ndk_reg_scan(netns, ifindex, oid_count_connection, &active))
		return NDIS_STATUS_FAILURE;
	ctr[NDK_CTR(ActiveConnection)] = active;
	memset(out, 0, need);
	oid_header(&out->Header, NDIS_NDK_STATISTICS_INFO_REVISION_1, need);
	out->Flags = 0;
	out->CounterSet.Connect = ctr[NDK_CTR(Connect)];
	out->CounterSet.Accept = ctr[NDK_CTR(Accept)];
	out->CounterSet.ConnectFailure = ctr[NDK_CTR(ConnectFailure)];
	out->CounterSet.ConnectionError = ctr[NDK_CTR(ConnectionError)];
	out->CounterSet.ActiveConnection = active;
	out->CounterSet.CQError = ctr[NDK_CTR(CQError)];
	out->CounterSet.RDMAInOctets = ctr[NDK_CTR(RDMAInOctets)];
	out->CounterSet.RDMAOutOctets = ctr[NDK_CTR(RDMAOutOctets)];
	out->CounterSet.RDMAInFrames = ctr[NDK_CTR(RDMAInFrames)];
	out->CounterSet.RDMAOutFrames = ctr[NDK_CTR(RDMAOutFrames)];
	if (BytesWritten)
		*BytesWritten = (ULONG)need;
	return NDIS_STATUS_SUCCESS;
}

NDK_EXPORT NDIS_STATUS NdkQueryOid(NET_IFINDEX IfIndex, NDIS_OID Oid,
				   PVOID InformationBuffer,
				   ULONG InformationBufferLength,
				   PULONG BytesWritten, PULONG BytesNeeded)
{
	char name[IF_NAMESIZE];
	uint64_t netns;

	if (BytesWritten)
		*BytesWritten = 0;
	if (BytesNeeded)
		*BytesNeeded = 0;
	if (!IfIndex || !if_indextoname(IfIndex, name))
		return NDIS_STATUS_ADAPTER_NOT_FOUND;
	netns = ndk_reg_netns_self();

	switch (Oid) {
	case OID_NDK_LOCAL_ENDPOINTS:
		return oid_local_endpoints(netns, IfIndex, InformationBuffer,
					   InformationBufferLength,
					   BytesWritten, BytesNeeded);
	case OID_NDK_CONNECTIONS:
		return oid_connections(netns, IfIndex, InformationBuffer,
				       InformationBufferLength, BytesWritten,
				       BytesNeeded);
	case OID_NDK_STATISTICS:
		return oid_statistics(netns, IfIndex, InformationBuffer,
				      InformationBufferLength, BytesWritten,
				      BytesNeeded);
	default:
		/* OID_NDK_SET_STATE is a set request, not a query. */
		return NDIS_STATUS_NOT_SUPPORTED;
	}
}
