/* SPDX-License-Identifier: MIT */
/*
 * Windows x64 layouts of the public structures, as the Microsoft pages
 * NDK_OBJECT_HEADER, NDK_SGE, NDK_RESULT_EX, NDK_ADAPTER_INFO, the
 * NDK_xxx_DISPATCH tables and the NDIS_NDK_* structures give them. The
 * _Static_asserts fail the build; the test repeats the checks at run time
 * so the result is visible in the test report.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <ndk/ndk.h>

#define LAYOUT(type, size) _Static_assert(sizeof(type) == (size), #type)
#define OFFSET(type, field, off) \
	_Static_assert(offsetof(type, field) == (off), #type "." #field)

LAYOUT(ULONG, 4);
LAYOUT(NTSTATUS, 4);
LAYOUT(BOOLEAN, 1);
LAYOUT(SIZE_T, 8);
LAYOUT(ULONG_PTR, 8);
LAYOUT(NDK_VERSION, 4);
LAYOUT(NDK_OBJECT_HEADER, 0x28);
OFFSET(NDK_OBJECT_HEADER, ObjectType, 4);
OFFSET(NDK_OBJECT_HEADER, NdkReserved, 8);
LAYOUT(NDK_ADAPTER, 0x30);
LAYOUT(NDK_CQ, 0x30);
LAYOUT(NDK_PD, 0x30);
LAYOUT(NDK_MR, 0x30);
LAYOUT(NDK_MW, 0x30);
LAYOUT(NDK_SRQ, 0x30);
LAYOUT(NDK_QP, 0x30);
LAYOUT(NDK_CONNECTOR, 0x30);
LAYOUT(NDK_LISTENER, 0x30);
LAYOUT(NDK_SHARED_ENDPOINT, 0x30);
OFFSET(NDK_CONNECTOR, Dispatch, 0x28);
LAYOUT(NDK_SGE, 0x10);
OFFSET(NDK_SGE, Length, 8);
OFFSET(NDK_SGE, MemoryRegionToken, 12);
LAYOUT(NDK_RESULT, 0x18);
OFFSET(NDK_RESULT, QPContext, 0x08);
OFFSET(NDK_RESULT, RequestContext, 0x10);
LAYOUT(NDK_RESULT_EX, 0x28);
OFFSET(NDK_RESULT_EX, Type, 0x18);
OFFSET(NDK_RESULT_EX, ProviderErrorCode, 0x1C);
OFFSET(NDK_RESULT_EX, TypeSpecificCompletionOutput, 0x20);
OFFSET(NDK_LOGICAL_ADDRESS_MAPPING, AdapterPageCount, 0x08);
OFFSET(NDK_LOGICAL_ADDRESS_MAPPING, AdapterPageArray, 0x10);
LAYOUT(NDK_ADAPTER_INFO, 0x68);
OFFSET(NDK_ADAPTER_INFO, MaxRegistrationSize, 0x10);
OFFSET(NDK_ADAPTER_INFO, MaxWindowSize, 0x18);
OFFSET(NDK_ADAPTER_INFO, FRMRPageCount, 0x20);
OFFSET(NDK_ADAPTER_INFO, MaxInboundReadLimit, 0x38);
OFFSET(NDK_ADAPTER_INFO, MaxCqDepth, 0x4C);
OFFSET(NDK_ADAPTER_INFO, MaxCallerData, 0x54);
OFFSET(NDK_ADAPTER_INFO, AdapterFlags, 0x5C);
OFFSET(NDK_ADAPTER_INFO, RdmaTechnology, 0x60);
LAYOUT(GROUP_AFFINITY, 16);
LAYOUT(SOCKADDR_INET, 28);
LAYOUT(NDIS_OBJECT_HEADER, 4);
LAYOUT(NDIS_NDK_LOCAL_ENDPOINT_ENTRY, 36);
OFFSET(NDIS_NDK_LOCAL_ENDPOINT_ENTRY, UserModeOwner, 28);
OFFSET(NDIS_NDK_LOCAL_ENDPOINT_ENTRY, Listener, 29);
OFFSET(NDIS_NDK_LOCAL_ENDPOINT_ENTRY, OwnerPid, 32);
OFFSET(NDIS_NDK_LOCAL_ENDPOINTS, Flags, 4);
OFFSET(NDIS_NDK_LOCAL_ENDPOINTS, Count, 8);
OFFSET(NDIS_NDK_LOCAL_ENDPOINTS, NDLocalEndpointsMappedtoTCPLocalEndpoints, 12);
OFFSET(NDIS_NDK_LOCAL_ENDPOINTS, LocalEndpoints, 16);
LAYOUT(NDIS_NDK_CONNECTION_ENTRY, 64);
OFFSET(NDIS_NDK_CONNECTION_ENTRY, Remote, 28);
OFFSET(NDIS_NDK_CONNECTION_ENTRY, UserModeOwner, 56);
OFFSET(NDIS_NDK_CONNECTION_ENTRY, OwnerPid, 60);
OFFSET(NDIS_NDK_CONNECTIONS, Connections, 16);
LAYOUT(NDIS_NDK_PERFORMANCE_COUNTERS, 30 * 8);
OFFSET(NDIS_NDK_PERFORMANCE_COUNTERS, CQError, 25 * 8);
LAYOUT(NDIS_NDK_STATISTICS_INFO, 248);
OFFSET(NDIS_NDK_STATISTICS_INFO, CounterSet, 8);
LAYOUT(NDIS_NDK_CAPABILITIES, 0x38);
OFFSET(NDIS_NDK_CAPABILITIES, MissingCounterMask, 0x28);
OFFSET(NDIS_NDK_CAPABILITIES, NdkInfo, 0x30);
LAYOUT(MDL, 48);
OFFSET(MDL, StartVa, 32);
OFFSET(MDL, ByteCount, 40);

static void test_sizes(void **state)
{
	assert_int_equal(sizeof(NDK_OBJECT_HEADER), 0x28);
	assert_int_equal(sizeof(NDK_QP), 0x30);
	assert_int_equal(sizeof(NDK_SGE), 0x10);
	assert_int_equal(sizeof(NDK_RESULT), 0x18);
	assert_int_equal(sizeof(NDK_RESULT_EX), 0x28);
	assert_int_equal(sizeof(NDK_ADAPTER_INFO), 0x68);
	assert_int_equal(
		offsetof(NDK_LOGICAL_ADDRESS_MAPPING, AdapterPageArray), 0x10);
	assert_int_equal(sizeof(NDIS_NDK_LOCAL_ENDPOINT_ENTRY), 36);
	assert_int_equal(sizeof(NDIS_NDK_CONNECTION_ENTRY), 64);
	assert_int_equal(NDIS_SIZEOF_NDK_LOCAL_ENDPOINTS_REVISION_1(3),
			 16 + 3 * 36);
	assert_int_equal(NDIS_SIZEOF_NDK_CONNECTIONS_REVISION_1(2),
			 16 + 2 * 64);
}

/* Slot offsets of the dispatch tables (8 bytes per slot, Windows order). */
static void test_dispatch_slots(void **state)
{
	assert_int_equal(sizeof(NDK_ADAPTER_DISPATCH), 9 * 8);
	assert_int_equal(sizeof(NDK_CQ_DISPATCH), 7 * 8);
	assert_int_equal(sizeof(NDK_PD_DISPATCH), 8 * 8);
	assert_int_equal(sizeof(NDK_MR_DISPATCH), 7 * 8);
	assert_int_equal(sizeof(NDK_MW_DISPATCH), 3 * 8);
	assert_int_equal(sizeof(NDK_SRQ_DISPATCH), 4 * 8);
	assert_int_equal(sizeof(NDK_QP_DISPATCH), 11 * 8);
	assert_int_equal(sizeof(NDK_CONNECTOR_DISPATCH), 13 * 8);
	assert_int_equal(sizeof(NDK_LISTENER_DISPATCH), 5 * 8);
	assert_int_equal(sizeof(NDK_SHARED_ENDPOINT_DISPATCH), 3 * 8);
	assert_int_equal(offsetof(NDK_ADAPTER_DISPATCH, NdkBuildLAM), 0x38);
	assert_int_equal(offsetof(NDK_CQ_DISPATCH, NdkGetCqResultsEx), 0x30);
	assert_int_equal(
		offsetof(NDK_PD_DISPATCH, NdkGetPrivilegedMemoryRegionToken),
		0x38);
	assert_int_equal(offsetof(NDK_QP_DISPATCH, NdkSendAndInvalidate), 0x50);
	assert_int_equal(offsetof(NDK_CONNECTOR_DISPATCH, NdkDisconnect), 0x50);
	assert_int_equal(offsetof(NDK_CONNECTOR_DISPATCH, NdkCompleteConnectEx),
			 0x58);
	assert_int_equal(offsetof(NDK_CONNECTOR_DISPATCH, NdkAcceptEx), 0x60);
	assert_int_equal(
		offsetof(NDK_LISTENER_DISPATCH, NdkControlConnectEvents), 0x20);
}

static void test_values(void **state)
{
	assert_int_equal((ULONG)STATUS_CONNECTION_REFUSED, 0xC0000236);
	assert_int_equal((ULONG)STATUS_IO_TIMEOUT, 0xC00000B5);
	assert_int_equal((ULONG)STATUS_INVALID_BUFFER_SIZE, 0xC0000206);
	assert_int_equal((ULONG)NDIS_STATUS_BAD_VERSION, 0xC0010004);
	assert_int_equal((ULONG)NDIS_STATUS_BUFFER_TOO_SHORT, 0xC0010016);
	assert_int_equal(NdkOperationTypeReceiveAndInvalidate, 0x8001);
	assert_int_equal(NDK_MR_FLAG_ALLOW_REMOTE_WRITE, 5);
	assert_int_equal(NDK_OP_FLAG_ALLOW_REMOTE_WRITE, 0x30);
	assert_int_equal(NDK_OP_FLAG_RDMA_READ_LOCAL_INVALIDATE, 0x100);
	assert_int_equal(NDK_OP_FLAG_DEFER, 0x200);
	assert_int_equal(OID_NDK_LOCAL_ENDPOINTS, 0xFC040204);
	assert_int_equal(NdkObjectTypeSrq, 10);
	assert_int_equal(NdkiWarp, 1);
	assert_true(NT_SUCCESS(STATUS_PENDING));
	assert_false(NT_SUCCESS(STATUS_BUFFER_OVERFLOW));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sizes),
		cmocka_unit_test(test_dispatch_slots),
		cmocka_unit_test(test_values),
	};

	return cmocka_run_group_tests_name("layout", tests, NULL, NULL);
}
