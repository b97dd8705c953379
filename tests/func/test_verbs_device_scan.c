/* SPDX-License-Identifier: MIT */
/*
 * The verbs provider's device scan (docs/verbs.md, Devices): an adapter
 * uses rdma_cm's context of the device, and rdma_cm lists its devices
 * from a fresh libibverbs scan, which can miss a device for a moment.
 * The test hides the device's character device (/dev/infiniband/uverbsN;
 * libibverbs' scan then leaves the device out while RDMA netlink still
 * lists it): brought back while NdkOpenAdapter scans again, the open
 * succeeds; kept away, it fails with NDIS_STATUS_ADAPTER_NOT_FOUND after
 * the scans, and the next open after the node is back succeeds.
 *
 * Runs where the adapter of the test interface is the verbs provider's,
 * as root (the interop guest, tests/interop/verbs-guest.sh); its cases
 * skip elsewhere.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <dirent.h>
#include <net/if.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cmutil.h"
#include "testutil.h"

#define CDEV_DIR "/dev/infiniband"
/* The provider scans 8 times, 20 ms apart (docs/verbs.md, Devices). */
#define SCANS_MS 140

static char node[300], hidden[300];
/* Why the cases skip here (NULL: they run). */
static const char *skip_why;

static NTSTATUS open_adapter(NDK_ADAPTER **ad)
{
	NDK_VERSION v = { 2, 0 };

	return NdkOpenAdapter(v, if_nametoindex(cm_test_ifname()), ad);
}

/* The uverbs node of the device named dev, from sysfs. */
static bool find_node(const char *dev)
{
	DIR *d = opendir("/sys/class/infiniband_verbs");
	struct dirent *e;
	bool found = false;

	if (!d)
		return false;
	while (!found && (e = readdir(d))) {
		char path[300], name[64] = "";
		FILE *f;

		if (strncmp(e->d_name, "uverbs", 6))
			continue;
		snprintf(path, sizeof(path),
			 "/sys/class/infiniband_verbs/%s/ibdev", e->d_name);
		f = fopen(path, "re");
		if (!f)
			continue;
		if (fgets(name, sizeof(name), f))
			name[strcspn(name, "\n")] = '\0';
		fclose(f);
		if (strcmp(name, dev))
			continue;
		snprintf(node, sizeof(node), CDEV_DIR "/%s", e->d_name);
		snprintf(hidden, sizeof(hidden), CDEV_DIR "/.hidden-%s",
			 e->d_name);
		found = true;
	}
	closedir(d);
	return found;
}

static int setup(void **state)
{
	NDK_PROVIDER_INFO pi;

	(void)state;
	cm_test_provider(&pi);
	if (strcmp(pi.Provider, "verbs")) {
		skip_why = "the test interface's adapter is not the verbs "
			   "provider's";
		return 0;
	}
	/* "rxe0 port 1": the device is the first word. */
	pi.Device[strcspn(pi.Device, " ")] = '\0';
	if (geteuid() != 0 || !find_node(pi.Device))
		skip_why = "the device's character device cannot be moved here";
	return 0;
}

static void hide(void)
{
	if (skip_why) {
		print_message("skipped: %s\n", skip_why);
		skip();
	}
	assert_int_equal(rename(node, hidden), 0);
}

static void unhide(void)
{
	assert_int_equal(rename(hidden, node), 0);
}

static void *unhide_later(void *arg)
{
	(void)arg;
	usleep(50 * 1000);
	if (rename(hidden, node))
		perror("rename");
	return NULL;
}

/* The node comes back while the adapter scans again: the open succeeds,
 * and the adapter works (a PD and a CQ on it). */
static void test_device_back_during_scans(void **state)
{
	NDK_ADAPTER *ad = NULL;
	struct cm_host h;
	pthread_t t;
	NTSTATUS st;

	(void)state;
	hide();
	assert_int_equal(pthread_create(&t, NULL, unhide_later, NULL), 0);
	st = open_adapter(&ad);
	pthread_join(t, NULL);
	assert_int_equal(access(node, F_OK), 0);
	assert_int_equal(st, STATUS_SUCCESS);
	NdkCloseAdapter(ad);

	/* And once more, from a host with everything on it. */
	cm_host_open(&h, cm_test_ifname());
	cm_host_close(&h);
}

/* It stays away: ADAPTER_NOT_FOUND once the scans are over; back, the
 * next open succeeds. */
static void test_device_gone(void **state)
{
	NDK_ADAPTER *ad = NULL;
	uint64_t t0, ms;
	NTSTATUS st;

	(void)state;
	hide();
	t0 = tu_now_ms();
	st = open_adapter(&ad);
	ms = tu_now_ms() - t0;
	unhide();
	assert_int_equal(st, NDIS_STATUS_ADAPTER_NOT_FOUND);
	assert_true(ms >= SCANS_MS);
	assert_int_equal(open_adapter(&ad), STATUS_SUCCESS);
	NdkCloseAdapter(ad);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_device_back_during_scans),
		cmocka_unit_test(test_device_gone),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
