/* SPDX-License-Identifier: MIT */
/*
 * How NdkQueryOid lists objects by their technology's addressing
 * (NDIS_NDK_LOCAL_ENDPOINTS, docs/verbs.md "OIDs"): iWARP objects in ND/TCP
 * pairs with the ...MappedtoTCP... flag set, RoCE and InfiniBand objects
 * once with the flag clear, and an interface that has both in pairs whose
 * TCP half of an ND-only object is an all-zero address. The entries are
 * published straight into a private registry (src/oid/registry.c), so
 * no RDMA device is needed.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "oid/registry.h"
#include "testutil.h"

#define FILL 0xA5

static char runtime_dir[] = "/tmp/ndk-oidaddr-XXXXXX";
static NET_IFINDEX lo_index;

static struct ndk_reg_entry
entry(enum ndk_reg_kind kind, enum ndk_reg_addressing addressing, uint16_t port)
{
	struct ndk_reg_entry e;

	memset(&e, 0, sizeof(e));
	e.kind = kind;
	e.addressing = addressing;
	e.ifindex = lo_index;
	e.netns = ndk_reg_netns_self();
	e.local.Ipv4.sin_family = AF_INET;
	e.local.Ipv4.sin_port = htons(port);
	e.local.Ipv4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (kind == NDK_REG_CONNECTION) {
		e.remote.Ipv4.sin_family = AF_INET;
		e.remote.Ipv4.sin_port = htons((uint16_t)(port + 1000));
		e.remote.Ipv4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	}
	return e;
}

static int publish(enum ndk_reg_kind kind, enum ndk_reg_addressing addressing,
		   uint16_t port)
{
	struct ndk_reg_entry e = entry(kind, addressing, port);
	int slot = ndk_reg_publish(&e);

	assert_true(slot >= 0);
	return slot;
}

static void *query(NDIS_OID oid, ULONG *len)
{
	ULONG written = 0, needed = 0, size;
	unsigned char *buf;

	assert_int_equal(NdkQueryOid(lo_index, oid, NULL, 0, &written, &needed),
			 NDIS_STATUS_BUFFER_TOO_SHORT);
	size = needed;
	buf = malloc(size);
	assert_non_null(buf);
	memset(buf, FILL, size);
	assert_int_equal(
		NdkQueryOid(lo_index, oid, buf, size, &written, &needed),
		NDIS_STATUS_SUCCESS);
	assert_int_equal(written, size);
	*len = written;
	return buf;
}

static bool is_zero(const void *p, size_t len)
{
	const unsigned char *b = p;

	while (len--)
		if (*b++)
			return false;
	return true;
}

/* RoCE only: one entry per object, flag clear. */
static void test_nd_only_lists_once(void **state)
{
	NDIS_NDK_CONNECTIONS *cs;
	NDIS_NDK_LOCAL_ENDPOINTS *le;
	int a, b, l;
	ULONG len;

	(void)state;
	a = publish(NDK_REG_CONNECTION, NDK_REG_ND_ONLY, 7001);
	b = publish(NDK_REG_CONNECTION, NDK_REG_ND_ONLY, 7002);
	l = publish(NDK_REG_LISTENER, NDK_REG_ND_ONLY, 7000);

	cs = query(OID_NDK_CONNECTIONS, &len);
	assert_int_equal(cs->Count, 2);
	assert_int_equal(cs->NDConnectionsMappedtoTCPConnections, FALSE);
	assert_int_equal(len, NDIS_SIZEOF_NDK_CONNECTIONS_REVISION_1(2));
	assert_int_equal(ntohs(cs->Connections[0].Local.Ipv4.sin_port), 7001);
	assert_int_equal(ntohs(cs->Connections[1].Local.Ipv4.sin_port), 7002);
	assert_int_equal(ntohs(cs->Connections[1].Remote.Ipv4.sin_port), 8002);
	free(cs);

	le = query(OID_NDK_LOCAL_ENDPOINTS, &len);
	assert_int_equal(le->Count, 1);
	assert_int_equal(le->NDLocalEndpointsMappedtoTCPLocalEndpoints, FALSE);
	assert_int_equal(le->LocalEndpoints[0].Listener, TRUE);
	assert_int_equal(ntohs(le->LocalEndpoints[0].Local.Ipv4.sin_port),
			 7000);
	free(le);

	ndk_reg_withdraw(a);
	ndk_reg_withdraw(b);
	ndk_reg_withdraw(l);
}

/* iWARP and RoCE on one interface: pairs; the RoCE object's TCP half is a
 * zero address, its other members untouched. */
static void test_mixed_lists_pairs(void **state)
{
	NDIS_NDK_CONNECTIONS *cs;
	NDIS_NDK_CONNECTION_ENTRY *nd, *tcp;
	int a, b;
	ULONG len;

	(void)state;
	a = publish(NDK_REG_CONNECTION, NDK_REG_TCP_PAIRED, 7101);
	b = publish(NDK_REG_CONNECTION, NDK_REG_ND_ONLY, 7102);

	cs = query(OID_NDK_CONNECTIONS, &len);
	assert_int_equal(cs->Count, 4);
	assert_int_equal(cs->NDConnectionsMappedtoTCPConnections, TRUE);
	/* Sorted by port: the iWARP object first, its TCP half the same. */
	nd = &cs->Connections[0];
	tcp = nd + 1;
	assert_int_equal(ntohs(nd->Local.Ipv4.sin_port), 7101);
	assert_memory_equal(&tcp->Local, &nd->Local, sizeof(nd->Local));
	assert_memory_equal(&tcp->Remote, &nd->Remote, sizeof(nd->Remote));
	nd = &cs->Connections[2];
	tcp = nd + 1;
	assert_int_equal(ntohs(nd->Local.Ipv4.sin_port), 7102);
	assert_int_equal(nd->OwnerPid, (ULONG)getpid());
	assert_true(is_zero(&tcp->Local, sizeof(tcp->Local)));
	assert_true(is_zero(&tcp->Remote, sizeof(tcp->Remote)));
	assert_int_equal(*(unsigned char *)&tcp->OwnerPid, FILL);
	free(cs);

	ndk_reg_withdraw(a);
	ndk_reg_withdraw(b);
}

/* Nothing listed: the flag says iWARP, the software provider's. */
static void test_empty_list_says_tcp(void **state)
{
	NDIS_NDK_LOCAL_ENDPOINTS *le;
	ULONG len;

	(void)state;
	le = query(OID_NDK_LOCAL_ENDPOINTS, &len);
	assert_int_equal(le->Count, 0);
	assert_int_equal(le->NDLocalEndpointsMappedtoTCPLocalEndpoints, TRUE);
	free(le);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nd_only_lists_once),
		cmocka_unit_test(test_mixed_lists_pairs),
		cmocka_unit_test(test_empty_list_says_tcp),
	};
	int ret;

	lo_index = if_nametoindex("lo");
	if (!lo_index || tu_private_runtime(runtime_dir))
		return 1;
	ret = cmocka_run_group_tests_name("oid_addressing", tests, NULL, NULL);
	return tu_private_runtime_done(runtime_dir, ret);
}
