/* SPDX-License-Identifier: MIT */
/*
 * A consumer built against the installed headers and library only. Prints
 * libndk's version (ndk/version.h), which provider serves lo and why
 * (NdkQueryAdapterProvider).
 */
#include <net/if.h>
#include <stdio.h>
#include <ndk/ndk.h>

int main(void)
{
	NDK_VERSION v = { 2, 0 };
	NDK_PROVIDER_INFO pi;
	NDK_ADAPTER *ad;
	NTSTATUS st;

	printf("libndk %d.%d.%d (%s)\n", NDK_VERSION_MAJOR, NDK_VERSION_MINOR,
	       NDK_VERSION_PATCH, NDK_VERSION_STRING);
	st = NdkOpenAdapter(v, if_nametoindex("lo"), &ad);
	printf("NdkOpenAdapter(lo): %s\n", NdkStatusName(st));
	if (st != STATUS_SUCCESS)
		return 1;
	st = NdkQueryAdapterProvider(ad, &pi);
	if (st == STATUS_SUCCESS)
		printf("provider: %s\nreason: %s\n", pi.Provider, pi.Reason);
	NdkCloseAdapter(ad);
	return st == STATUS_SUCCESS ? 0 : 1;
}
