/* SPDX-License-Identifier: MIT */
/*
 * NdkCreateSharedEndpoint and its NdkGetLocalAddress (NDK_FN_CREATE_SHARED_ENDPOINT,
 * NDK_FN_GET_LOCAL_ADDRESS):
 * port 0 picks from the ephemeral range, every failure status the page
 * names, and the port is free again once the object is closed.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ndk/ndk.h>

static NDK_ADAPTER *ad;

static int setup(void **state)
{
	NDK_VERSION v = { 2, 0 };

	unsetenv("NDK_EPHEMERAL_PORT_MIN");
	unsetenv("NDK_EPHEMERAL_PORT_MAX");
	return NdkOpenAdapter(v, if_nametoindex("lo"), &ad) != STATUS_SUCCESS;
}

static int teardown(void **state)
{
	NdkCloseAdapter(ad);
	return 0;
}

static struct sockaddr_in lo4(uint16_t port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_port = htons(port) };

	inet_pton(AF_INET, "127.0.0.1", &sin.sin_addr);
	return sin;
}

static NTSTATUS create(struct sockaddr_in *sin, ULONG len,
		       NDK_SHARED_ENDPOINT **sep)
{
	return ad->Dispatch->NdkCreateSharedEndpoint(ad, (PSOCKADDR)sin, len,
						     NULL, NULL, sep);
}

static void close_sep(NDK_SHARED_ENDPOINT *sep)
{
	assert_int_equal(
		sep->Dispatch->NdkCloseSharedEndpoint(&sep->Header, NULL, NULL),
		STATUS_SUCCESS);
}

static void test_port_zero_and_address(void **state)
{
	struct sockaddr_in sin = lo4(0), got;
	NDK_SHARED_ENDPOINT *sep, *again;
	ULONG len = 4;

	assert_int_equal(create(&sin, sizeof(sin), &sep), STATUS_SUCCESS);
	assert_int_equal(sep->Header.ObjectType, NdkObjectTypeSharedEndpoint);
	assert_int_equal(
		sep->Dispatch->NdkGetLocalAddress(sep, (PSOCKADDR)&got, &len),
		STATUS_BUFFER_TOO_SMALL);
	assert_int_equal(len, sizeof(struct sockaddr_in));
	len = sizeof(got);
	assert_int_equal(
		sep->Dispatch->NdkGetLocalAddress(sep, (PSOCKADDR)&got, &len),
		STATUS_SUCCESS);
	assert_int_equal(got.sin_family, AF_INET);
	assert_int_equal(got.sin_addr.s_addr, htonl(INADDR_LOOPBACK));
	assert_true(ntohs(got.sin_port) >= 49152);
	/* The same endpoint twice: address already in use. */
	assert_int_equal(create(&got, sizeof(got), &again),
			 STATUS_SHARING_VIOLATION);
	close_sep(sep);
	/* Closed: the port is free again. */
	assert_int_equal(create(&got, sizeof(got), &again), STATUS_SUCCESS);
	close_sep(again);
}

static void test_bad_addresses(void **state)
{
	struct sockaddr_in sin = lo4(0);
	NDK_SHARED_ENDPOINT *sep;

	inet_pton(AF_INET, "192.0.2.1", &sin.sin_addr);
	assert_int_equal(create(&sin, sizeof(sin), &sep),
			 STATUS_INVALID_ADDRESS);
	sin = lo4(0);
	assert_int_equal(create(&sin, 4, &sep), STATUS_INVALID_PARAMETER);
	sin.sin_family = AF_UNIX;
	assert_int_equal(create(&sin, sizeof(sin), &sep),
			 STATUS_INVALID_PARAMETER);
	sin = lo4(0);
	assert_int_equal(create(&sin, sizeof(sin), NULL),
			 STATUS_INVALID_PARAMETER);
}

static void test_ephemeral_exhausted(void **state)
{
	struct sockaddr_in sin = lo4(0), got;
	NDK_SHARED_ENDPOINT *seps[3], *extra;
	ULONG len = sizeof(got);
	int i, n = 0;

	/* Find a free port to start a 2-port range from. */
	assert_int_equal(create(&sin, sizeof(sin), &extra), STATUS_SUCCESS);
	assert_int_equal(extra->Dispatch->NdkGetLocalAddress(
				 extra, (PSOCKADDR)&got, &len),
			 STATUS_SUCCESS);
	close_sep(extra);
	{
		char lo[8], hi[8];

		snprintf(lo, sizeof(lo), "%u", ntohs(got.sin_port));
		snprintf(hi, sizeof(hi), "%u", ntohs(got.sin_port) + 1);
		setenv("NDK_EPHEMERAL_PORT_MIN", lo, 1);
		setenv("NDK_EPHEMERAL_PORT_MAX", hi, 1);
	}
	for (i = 0; i < 3; i++) {
		NTSTATUS st = create(&sin, sizeof(sin), &seps[n]);

		if (st == STATUS_SUCCESS) {
			n++;
			continue;
		}
		assert_int_equal(st, STATUS_TOO_MANY_ADDRESSES);
	}
	/* At most two ports exist in the range; the third never fits. */
	assert_true(n <= 2);
	assert_int_equal(create(&sin, sizeof(sin), &extra),
			 STATUS_TOO_MANY_ADDRESSES);
	for (i = 0; i < n; i++)
		close_sep(seps[i]);
	unsetenv("NDK_EPHEMERAL_PORT_MIN");
	unsetenv("NDK_EPHEMERAL_PORT_MAX");
}

static void test_ipv6(void **state)
{
	struct sockaddr_in6 sin6 = { .sin6_family = AF_INET6 };
	struct sockaddr_in6 got;
	NDK_SHARED_ENDPOINT *sep;
	ULONG len = sizeof(got);
	NTSTATUS st;

	inet_pton(AF_INET6, "::1", &sin6.sin6_addr);
	st = ad->Dispatch->NdkCreateSharedEndpoint(
		ad, (PSOCKADDR)&sin6, sizeof(sin6), NULL, NULL, &sep);
	if (st == STATUS_INVALID_ADDRESS)
		skip(); /* no ::1 on this machine's lo */
	assert_int_equal(st, STATUS_SUCCESS);
	assert_int_equal(
		sep->Dispatch->NdkGetLocalAddress(sep, (PSOCKADDR)&got, &len),
		STATUS_SUCCESS);
	assert_int_equal(len, sizeof(struct sockaddr_in6));
	assert_int_equal(got.sin6_family, AF_INET6);
	assert_true(ntohs(got.sin6_port) >= 49152);
	close_sep(sep);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_port_zero_and_address),
		cmocka_unit_test(test_bad_addresses),
		cmocka_unit_test(test_ephemeral_exhausted),
		cmocka_unit_test(test_ipv6),
	};

	return cmocka_run_group_tests_name("shared_endpoint", tests, setup,
					   teardown);
}
