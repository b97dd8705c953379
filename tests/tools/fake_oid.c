/* SPDX-License-Identifier: MIT */
/*
 * fake_oid: an NdkQueryOid for LD_PRELOAD into ndkstat, answering for lo
 * only, with what libndk itself never produces:
 *   - TCP entries whose address differs from their ND entry (ndkstat
 *     must show them as tcp_local / tcp_foreign);
 *   - TCP entries whose other members are garbage, as the contract
 *     allows (ndkstat must take those members from the ND entry);
 *   - a user-mode owner, IPv6 addresses with and without a scope;
 *   - a connection list that grows from 1 to FAKE_CONNECTIONS between the
 *     size query and the next call;
 *   - 64-bit counters;
 *   - an owner (this process) whose name needs JSON escaping and is not
 *     valid UTF-8.
 * With FAKE_OID_FAIL set in the environment every query of lo fails with
 * STATUS_NOT_IMPLEMENTED. Every other interface is ADAPTER_NOT_FOUND.
 */
#include <arpa/inet.h>
#include <net/if.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>
#include <ndk/ndk.h>

#define FAKE_CONNECTIONS 20
#define GARBAGE		 0xA5

static unsigned int connection_queries;

__attribute__((constructor)) static void fake_init(void)
{
	/* A quote, a backslash, a tab, "é" and a byte that is not UTF-8. */
	prctl(PR_SET_NAME, "q\"b\\s\t\xc3\xa9\xff", 0, 0, 0);
}

static SOCKADDR_INET v4(const char *ip, unsigned int port)
{
	SOCKADDR_INET a;

	memset(&a, 0, sizeof(a));
	a.Ipv4.sin_family = AF_INET;
	a.Ipv4.sin_port = htons((uint16_t)port);
	inet_pton(AF_INET, ip, &a.Ipv4.sin_addr);
	return a;
}

static SOCKADDR_INET v6(const char *ip, unsigned int port, ULONG scope)
{
	SOCKADDR_INET a;

	memset(&a, 0, sizeof(a));
	a.Ipv6.sin6_family = AF_INET6;
	a.Ipv6.sin6_port = htons((uint16_t)port);
	a.Ipv6.sin6_scope_id = scope;
	inet_pton(AF_INET6, ip, &a.Ipv6.sin6_addr);
	return a;
}

static NDIS_STATUS too_short(size_t need, PULONG BytesNeeded)
{
	if (BytesNeeded)
		*BytesNeeded = (ULONG)need;
	return NDIS_STATUS_BUFFER_TOO_SHORT;
}

static NDIS_STATUS endpoints(NDIS_NDK_LOCAL_ENDPOINTS *out, ULONG len,
			     PULONG BytesWritten, PULONG BytesNeeded)
{
	size_t need = NDIS_SIZEOF_NDK_LOCAL_ENDPOINTS_REVISION_1(6);
	NDIS_NDK_LOCAL_ENDPOINT_ENTRY *e;
	ULONG me = (ULONG)getpid();

	if (!out || len < need)
		return too_short(need, BytesNeeded);
	memset(out, GARBAGE, need);
	out->Header.Type = NDIS_OBJECT_TYPE_DEFAULT;
	out->Header.Revision = NDIS_NDK_LOCAL_ENDPOINTS_REVISION_1;
	out->Header.Size = (USHORT)need;
	out->Flags = 0;
	out->Count = 6;
	out->NDLocalEndpointsMappedtoTCPLocalEndpoints = TRUE;
	e = out->LocalEndpoints;
	/* A listener whose TCP entry matches. */
	e[0].Local = v4("127.0.0.1", 1000);
	e[0].UserModeOwner = FALSE;
	e[0].Listener = TRUE;
	e[0].OwnerPid = me;
	e[1].Local = e[0].Local;
	/* A user-mode shared endpoint on another TCP port. */
	e[2].Local = v6("::1", 2000, 0);
	e[2].UserModeOwner = TRUE;
	e[2].Listener = FALSE;
	e[2].OwnerPid = me;
	e[3].Local = v6("::1", 2001, 0);
	/* A link-local listener of a process that does not exist. */
	e[4].Local = v6("fe80::1", 3000, if_nametoindex("lo"));
	e[4].UserModeOwner = FALSE;
	e[4].Listener = TRUE;
	e[4].OwnerPid = 0;
	e[5].Local = e[4].Local;
	if (BytesWritten)
		*BytesWritten = (ULONG)need;
	return NDIS_STATUS_SUCCESS;
}

static NDIS_STATUS connections(NDIS_NDK_CONNECTIONS *out, ULONG len,
			       PULONG BytesWritten, PULONG BytesNeeded)
{
	/* One connection at the first query, then the list has grown. */
	unsigned int n = connection_queries++ ? FAKE_CONNECTIONS : 1, i;
	size_t need = NDIS_SIZEOF_NDK_CONNECTIONS_REVISION_1(2 * n);
	NDIS_NDK_CONNECTION_ENTRY *e;

	if (!out || len < need)
		return too_short(need, BytesNeeded);
	memset(out, GARBAGE, need);
	out->Header.Type = NDIS_OBJECT_TYPE_DEFAULT;
	out->Header.Revision = NDIS_NDK_CONNECTIONS_REVISION_1;
	out->Header.Size = (USHORT)need;
	out->Flags = 0;
	out->Count = 2 * n;
	out->NDConnectionsMappedtoTCPConnections = TRUE;
	for (i = 0; i < n; i++) {
		e = &out->Connections[2 * i];
		e[0].Local = v4("10.0.0.1", 5000 + i);
		e[0].Remote = v4("10.0.0.2", 6000);
		e[0].UserModeOwner = FALSE;
		e[0].OwnerPid = (ULONG)getpid();
		e[1].Local = e[0].Local;
		/* The first one's TCP peer port differs. */
		e[1].Remote = v4("10.0.0.2", i ? 6000 : 6001);
	}
	if (BytesWritten)
		*BytesWritten = (ULONG)need;
	return NDIS_STATUS_SUCCESS;
}

static NDIS_STATUS statistics(NDIS_NDK_STATISTICS_INFO *out, ULONG len,
			      PULONG BytesWritten, PULONG BytesNeeded)
{
	NDIS_NDK_PERFORMANCE_COUNTERS *c;

	if (!out || len < sizeof(*out))
		return too_short(sizeof(*out), BytesNeeded);
	memset(out, 0, sizeof(*out));
	out->Header.Type = NDIS_OBJECT_TYPE_DEFAULT;
	out->Header.Revision = NDIS_NDK_STATISTICS_INFO_REVISION_1;
	out->Header.Size = sizeof(*out);
	c = &out->CounterSet;
	c->Connect = 12345678901234ULL;
	c->Accept = 2;
	c->ConnectFailure = 3;
	c->ConnectionError = 4;
	c->ActiveConnection = 5;
	c->CQError = 6;
	c->RDMAInOctets = 7;
	c->RDMAOutOctets = 8;
	c->RDMAInFrames = 9;
	c->RDMAOutFrames = 18446744073709551615ULL;
	if (BytesWritten)
		*BytesWritten = sizeof(*out);
	return NDIS_STATUS_SUCCESS;
}

NDIS_STATUS NdkQueryOid(NET_IFINDEX IfIndex, NDIS_OID Oid,
			PVOID InformationBuffer, ULONG InformationBufferLength,
			PULONG BytesWritten, PULONG BytesNeeded)
{
	if (BytesWritten)
		*BytesWritten = 0;
	if (BytesNeeded)
		*BytesNeeded = 0;
	if (!IfIndex || IfIndex != if_nametoindex("lo"))
		return NDIS_STATUS_ADAPTER_NOT_FOUND;
	if (getenv("FAKE_OID_FAIL"))
		return STATUS_NOT_IMPLEMENTED;
	switch (Oid) {
	case OID_NDK_LOCAL_ENDPOINTS:
		return endpoints(InformationBuffer, InformationBufferLength,
				 BytesWritten, BytesNeeded);
	case OID_NDK_CONNECTIONS:
		return connections(InformationBuffer, InformationBufferLength,
				   BytesWritten, BytesNeeded);
	case OID_NDK_STATISTICS:
		return statistics(InformationBuffer, InformationBufferLength,
				  BytesWritten, BytesNeeded);
	default:
		return NDIS_STATUS_NOT_SUPPORTED;
	}
}
