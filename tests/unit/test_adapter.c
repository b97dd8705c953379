/* SPDX-License-Identifier: MIT */
/*
 * Adapter open/close, version negotiation (docs/ndk.md, "Versions"), adapter
 * info, status names, the errno mapping and the MDL helpers.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include "front/adapter.h"
#include "core/status.h"

static NDK_ADAPTER *open_version(USHORT major, USHORT minor, NTSTATUS *st)
{
	NDK_VERSION v = { major, minor };
	NDK_ADAPTER *a = NULL;

	*st = NdkOpenAdapter(v, if_nametoindex("lo"), &a);
	return a;
}

static void test_version_negotiation(void **state)
{
	static const struct {
		USHORT major, minor;
		NTSTATUS status;
		USHORT run_major, run_minor;
	} cases[] = {
		{ 2, 0, STATUS_SUCCESS, 2, 1 },
		{ 2, 1, STATUS_SUCCESS, 2, 1 },
		{ 1, 0, STATUS_SUCCESS, 1, 2 },
		{ 1, 1, STATUS_SUCCESS, 1, 2 },
		{ 1, 2, STATUS_SUCCESS, 1, 2 },
		{ 1, 3, NDIS_STATUS_BAD_VERSION, 0, 0 },
		{ 2, 2, NDIS_STATUS_BAD_VERSION, 0, 0 },
		{ 3, 0, NDIS_STATUS_BAD_VERSION, 0, 0 },
		{ 0, 0, NDIS_STATUS_BAD_VERSION, 0, 0 },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		NDK_ADAPTER_INFO info;
		ULONG size = sizeof(info);
		NTSTATUS st;
		NDK_ADAPTER *a =
			open_version(cases[i].major, cases[i].minor, &st);

		assert_int_equal(st, cases[i].status);
		if (st != STATUS_SUCCESS)
			continue;
		assert_int_equal(a->Header.Version.Major, cases[i].run_major);
		assert_int_equal(a->Header.Version.Minor, cases[i].run_minor);
		assert_int_equal(a->Header.ObjectType, NdkObjectTypeAdapter);
		assert_int_equal(
			a->Dispatch->NdkQueryAdapterInfo(a, &info, &size),
			STATUS_SUCCESS);
		assert_int_equal(info.Version.Major, cases[i].run_major);
		assert_int_equal(info.Version.Minor, cases[i].run_minor);
		NdkCloseAdapter(a);
	}
}

static void test_open_errors(void **state)
{
	NDK_VERSION v = { 2, 0 };
	NDK_ADAPTER *a = NULL;

	assert_int_equal(NdkOpenAdapter(v, 0x7fffff, &a),
			 NDIS_STATUS_ADAPTER_NOT_FOUND);
	assert_int_equal(NdkOpenAdapter(v, 0, &a),
			 NDIS_STATUS_ADAPTER_NOT_FOUND);
	assert_int_equal(NdkOpenAdapter(v, if_nametoindex("lo"), NULL),
			 STATUS_INVALID_PARAMETER);
	assert_null(a);
}

/* A fresh network namespace has only lo, and it is down. */
static void test_interface_down(void **state)
{
	pid_t pid;
	int wstatus;

	if (geteuid() != 0)
		skip();
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		NDK_VERSION v = { 2, 0 };
		NDK_ADAPTER *a = NULL;
		struct ifreq ifr;
		int fd;

		if (unshare(CLONE_NEWNET))
			_exit(77);
		if (NdkOpenAdapter(v, if_nametoindex("lo"), &a) !=
		    NDIS_STATUS_ADAPTER_NOT_READY)
			_exit(1);
		fd = socket(AF_INET, SOCK_DGRAM, 0);
		memset(&ifr, 0, sizeof(ifr));
		strcpy(ifr.ifr_name, "lo");
		ifr.ifr_flags = IFF_UP;
		if (fd < 0 || ioctl(fd, SIOCSIFFLAGS, &ifr))
			_exit(2);
		if (NdkOpenAdapter(v, if_nametoindex("lo"), &a) !=
		    STATUS_SUCCESS)
			_exit(3);
		NdkCloseAdapter(a);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &wstatus, 0), pid);
	assert_true(WIFEXITED(wstatus));
	if (WEXITSTATUS(wstatus) == 77)
		skip();
	assert_int_equal(WEXITSTATUS(wstatus), 0);
}

static void test_adapter_info(void **state)
{
	NTSTATUS st;
	NDK_ADAPTER *a = open_version(2, 1, &st);
	NDK_ADAPTER_INFO info;
	ULONG size = 0;
	GUID guid = { 0 };
	NDK_VERSION ev = { 1, 0 };
	NDK_EXTENSION_INTERFACE ext;

	assert_int_equal(st, STATUS_SUCCESS);
	assert_int_equal(a->Dispatch->NdkQueryAdapterInfo(a, &info, &size),
			 STATUS_BUFFER_TOO_SMALL);
	assert_int_equal(size, sizeof(NDK_ADAPTER_INFO));
	size = sizeof(info) - 1;
	assert_int_equal(a->Dispatch->NdkQueryAdapterInfo(a, &info, &size),
			 STATUS_BUFFER_TOO_SMALL);
	assert_int_equal(size, sizeof(NDK_ADAPTER_INFO));
	size = sizeof(info) + 16;
	memset(&info, 0xa5, sizeof(info));
	assert_int_equal(a->Dispatch->NdkQueryAdapterInfo(a, &info, &size),
			 STATUS_SUCCESS);
	assert_int_equal(size, sizeof(NDK_ADAPTER_INFO));
	assert_int_equal(info.MaxInboundReadLimit, 128);
	assert_int_equal(info.MaxOutboundReadLimit, 128);
	assert_int_equal(info.MaxCallerData, 252);
	assert_int_equal(info.MaxCalleeData, 252);
	assert_int_equal(info.RdmaTechnology, NdkiWarp);
	assert_true(info.FRMRPageCount >= 16);
	assert_true(info.MaxCqDepth > 0 && info.MaxSrqDepth > 0);
	/* Only what is really there: no multi-engine claim. */
	assert_int_equal(
		info.AdapterFlags & NDK_ADAPTER_FLAG_MULTI_ENGINE_SUPPORTED, 0);
	assert_int_equal(
		a->Dispatch->NdkQueryExtension(&a->Header, &guid, ev, &ext),
		STATUS_NOT_SUPPORTED);
	NdkCloseAdapter(a);
}

static void test_adapter_addresses(void **state)
{
	NTSTATUS st;
	NDK_ADAPTER *a = open_version(2, 0, &st);
	struct ndk_adapter *ad = to_ndk_adapter(a);
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct sockaddr_in6 sin6 = { .sin6_family = AF_INET6 };

	inet_pton(AF_INET, "127.0.0.1", &sin.sin_addr);
	assert_int_equal(ndk_adapter_has_addr(ad, (struct sockaddr *)&sin), 1);
	inet_pton(AF_INET, "192.0.2.77", &sin.sin_addr);
	assert_int_equal(ndk_adapter_has_addr(ad, (struct sockaddr *)&sin), 0);
	inet_pton(AF_INET6, "::1", &sin6.sin6_addr);
	/* lo may lack ::1 where IPv6 is disabled; it must then say no. */
	(void)ndk_adapter_has_addr(ad, (struct sockaddr *)&sin6);
	inet_pton(AF_INET6, "2001:db8::77", &sin6.sin6_addr);
	assert_int_equal(ndk_adapter_has_addr(ad, (struct sockaddr *)&sin6), 0);
	NdkCloseAdapter(a);
}

/* NDK_PROVIDER picks the provider (docs/configuration.md); an adapter
 * says which one it got. */
static void test_provider_selection(void **state)
{
	const char *saved = getenv("NDK_PROVIDER");
	char *keep = saved ? strdup(saved) : NULL;
	NDK_PROVIDER_INFO pi;
	NDK_ADAPTER *a;
	NTSTATUS st;

	setenv("NDK_PROVIDER", "software", 1);
	a = open_version(2, 1, &st);
	assert_int_equal(st, STATUS_SUCCESS);
	memset(&pi, 0xa5, sizeof(pi));
	assert_int_equal(NdkQueryAdapterProvider(a, &pi), STATUS_SUCCESS);
	assert_string_equal(pi.Provider, "software");
	assert_string_equal(pi.Device, "");
	assert_true(!strcmp(pi.Reason, "NDK_PROVIDER=software") ||
		    !strcmp(pi.Reason,
			    "verbs provider: not in this build of libndk"));
	assert_int_equal(NdkQueryAdapterProvider(a, NULL),
			 STATUS_INVALID_PARAMETER);
	assert_int_equal(NdkQueryAdapterProvider(NULL, &pi),
			 STATUS_INVALID_PARAMETER);
	NdkCloseAdapter(a);

	setenv("NDK_PROVIDER", "no-such-provider", 1);
	a = open_version(2, 1, &st);
	assert_int_equal(st, NDIS_STATUS_ADAPTER_NOT_FOUND);

	/* No RDMA device serves lo here unless one was attached to it. */
	setenv("NDK_PROVIDER", "verbs", 1);
	a = open_version(2, 1, &st);
	if (st == STATUS_SUCCESS) {
		assert_int_equal(NdkQueryAdapterProvider(a, &pi),
				 STATUS_SUCCESS);
		assert_string_equal(pi.Provider, "verbs");
		assert_true(pi.Device[0] != 0);
		assert_string_equal(pi.Reason, "");
		NdkCloseAdapter(a);
	} else {
		assert_int_equal(st, NDIS_STATUS_ADAPTER_NOT_FOUND);
	}

	setenv("NDK_PROVIDER", "auto", 1);
	a = open_version(2, 1, &st);
	assert_int_equal(st, STATUS_SUCCESS);
	assert_int_equal(NdkQueryAdapterProvider(a, &pi), STATUS_SUCCESS);
	assert_true(!strcmp(pi.Provider, "software") ||
		    !strcmp(pi.Provider, "verbs"));
	/* A software adapter says why the verbs provider did not serve
	 * it: not built, not loaded, or no device on lo. */
	if (!strcmp(pi.Provider, "software"))
		assert_non_null(strstr(pi.Reason, "verbs provider"));
	else
		assert_string_equal(pi.Reason, "");
	NdkCloseAdapter(a);

	if (keep)
		setenv("NDK_PROVIDER", keep, 1);
	else
		unsetenv("NDK_PROVIDER");
	free(keep);
}

static void test_status_names(void **state)
{
	assert_string_equal(NdkStatusName(STATUS_IO_TIMEOUT),
			    "STATUS_IO_TIMEOUT");
	assert_string_equal(NdkStatusName(STATUS_SUCCESS), "STATUS_SUCCESS");
	assert_string_equal(NdkStatusName(STATUS_CONNECTION_REFUSED),
			    "STATUS_CONNECTION_REFUSED");
	assert_string_equal(NdkStatusName(NDIS_STATUS_BAD_VERSION),
			    "NDIS_STATUS_BAD_VERSION");
	assert_string_equal(NdkStatusName((NTSTATUS)0xC0001234), "0xC0001234");
}

static void test_errno_mapping(void **state)
{
	assert_int_equal(ndk_status_from_errno(0, NDK_SITE_GENERIC),
			 STATUS_SUCCESS);
	assert_int_equal(ndk_status_from_errno(-ECONNREFUSED, NDK_SITE_CONNECT),
			 STATUS_CONNECTION_REFUSED);
	assert_int_equal(ndk_status_from_errno(-ENETUNREACH, NDK_SITE_CONNECT),
			 STATUS_NETWORK_UNREACHABLE);
	assert_int_equal(ndk_status_from_errno(-EHOSTUNREACH, NDK_SITE_CONNECT),
			 STATUS_HOST_UNREACHABLE);
	assert_int_equal(ndk_status_from_errno(-ETIMEDOUT, NDK_SITE_CONNECT),
			 STATUS_IO_TIMEOUT);
	assert_int_equal(ndk_status_from_errno(-EADDRINUSE, NDK_SITE_BIND),
			 STATUS_SHARING_VIOLATION);
	assert_int_equal(ndk_status_from_errno(-EADDRNOTAVAIL, NDK_SITE_BIND),
			 STATUS_INVALID_ADDRESS);
	assert_int_equal(
		ndk_status_from_errno(-EADDRNOTAVAIL, NDK_SITE_CONNECT),
		STATUS_ADDRESS_ALREADY_EXISTS);
	assert_int_equal(ndk_status_from_errno(-ENOMEM, NDK_SITE_GENERIC),
			 STATUS_INSUFFICIENT_RESOURCES);
	assert_int_equal(ndk_status_from_errno(-EMFILE, NDK_SITE_CONNECT),
			 STATUS_INSUFFICIENT_RESOURCES);
	assert_int_equal(ndk_status_from_errno(-ENOBUFS, NDK_SITE_BIND),
			 STATUS_INSUFFICIENT_RESOURCES);
	assert_int_equal(ndk_status_from_errno(-EEXIST, NDK_SITE_CONNECT),
			 STATUS_ADDRESS_ALREADY_EXISTS);
	assert_int_equal(ndk_status_from_errno(-EAGAIN, NDK_SITE_BIND),
			 STATUS_TOO_MANY_ADDRESSES);
}

static void test_mdl(void **state)
{
	char *buf = aligned_alloc(PAGE_SIZE, 3 * PAGE_SIZE);
	PMDL mdl;

	assert_non_null(buf);
	mdl = IoAllocateMdl(buf + 100, 5000, FALSE, FALSE, NULL);
	assert_non_null(mdl);
	assert_ptr_equal(MmGetMdlVirtualAddress(mdl), buf + 100);
	assert_int_equal(MmGetMdlByteCount(mdl), 5000);
	assert_ptr_equal(mdl->StartVa, buf);
	assert_int_equal(mdl->ByteOffset, 100);
	assert_null(mdl->Next);
	MmBuildMdlForNonPagedPool(mdl);
	assert_true(mdl->MdlFlags & MDL_SOURCE_IS_NONPAGED_POOL);
	assert_ptr_equal(mdl->MappedSystemVa, buf + 100);
	IoFreeMdl(mdl);
	assert_null(IoAllocateMdl(NULL, 10, FALSE, FALSE, NULL));
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_version_negotiation),
		cmocka_unit_test(test_open_errors),
		cmocka_unit_test(test_interface_down),
		cmocka_unit_test(test_adapter_info),
		cmocka_unit_test(test_adapter_addresses),
		cmocka_unit_test(test_provider_selection),
		cmocka_unit_test(test_status_names),
		cmocka_unit_test(test_errno_mapping),
		cmocka_unit_test(test_mdl),
	};

	return cmocka_run_group_tests_name("adapter", tests, NULL, NULL);
}
