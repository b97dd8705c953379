/* SPDX-License-Identifier: MIT */
/* A consumer built against the installed headers and library only. */
#include <net/if.h>
#include <stdio.h>
#include <ndk/ndk.h>

int main(void)
{
	NDK_VERSION v = { 2, 0 };
	NDK_ADAPTER *ad;
	NTSTATUS st = NdkOpenAdapter(v, if_nametoindex("lo"), &ad);

	printf("NdkOpenAdapter(lo): %s\n", NdkStatusName(st));
	if (st != STATUS_SUCCESS)
		return 1;
	NdkCloseAdapter(ad);
	return 0;
}
