/* SPDX-License-Identifier: MIT */
/*
 * ndkinfo: the NDK adapter of every network interface, like PowerShell's
 * Get-NetAdapterRdma: opens it (NDKPI 2.1), prints which libndk provider
 * serves it and on what device, its NDK_ADAPTER_INFO with the adapter
 * flags by name, and closes it. An interface whose
 * adapter cannot be opened is listed with the reason (a down interface
 * is "not ready"). Public API only.
 *
 *   ndkinfo [-j] [-I IFNAME|IFINDEX]
 *
 * Options and exit status: docs/tools.md.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "toolutil.h"

#define FIELD(x)                                           \
	{                                                  \
#x, offsetof(NDK_ADAPTER_INFO, x),         \
			sizeof(((NDK_ADAPTER_INFO *)0)->x) \
	}

/* Every numeric member of NDK_ADAPTER_INFO, in declaration order. */
static const struct {
	const char *name;
	size_t off, size;
} fields[] = {
	FIELD(MaxRegistrationSize),   FIELD(MaxWindowSize),
	FIELD(FRMRPageCount),	      FIELD(MaxInitiatorRequestSge),
	FIELD(MaxReceiveRequestSge),  FIELD(MaxReadRequestSge),
	FIELD(MaxTransferLength),     FIELD(MaxInlineDataSize),
	FIELD(MaxInboundReadLimit),   FIELD(MaxOutboundReadLimit),
	FIELD(MaxReceiveQueueDepth),  FIELD(MaxInitiatorQueueDepth),
	FIELD(MaxSrqDepth),	      FIELD(MaxCqDepth),
	FIELD(LargeRequestThreshold), FIELD(MaxCallerData),
	FIELD(MaxCalleeData),
};

#define NFIELDS (sizeof(fields) / sizeof(fields[0]))

static const struct {
	ULONG bit;
	const char *name;
} flags[] = {
	{ NDK_ADAPTER_FLAG_IN_ORDER_DMA_SUPPORTED, "IN_ORDER_DMA" },
	{ NDK_ADAPTER_FLAG_RDMA_READ_SINK_NOT_REQUIRED,
	  "RDMA_READ_SINK_NOT_REQUIRED" },
	{ NDK_ADAPTER_FLAG_CQ_INTERRUPT_MODERATION_SUPPORTED,
	  "CQ_INTERRUPT_MODERATION" },
	{ NDK_ADAPTER_FLAG_MULTI_ENGINE_SUPPORTED, "MULTI_ENGINE" },
	{ NDK_ADAPTER_FLAG_RDMA_READ_LOCAL_INVALIDATE_SUPPORTED,
	  "RDMA_READ_LOCAL_INVALIDATE" },
	{ NDK_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED, "CQ_RESIZE" },
	{ NDK_ADAPTER_FLAG_LOOPBACK_CONNECTIONS_SUPPORTED,
	  "LOOPBACK_CONNECTIONS" },
};

#define NFLAGS (sizeof(flags) / sizeof(flags[0]))

/* One interface: its adapter's information, or why it did not open. */
struct adapter {
	NET_IFINDEX ifindex;
	char name[IF_NAMESIZE];
	NTSTATUS status; /* NdkOpenAdapter's, or NdkQueryAdapterInfo's */
	bool opened; /* NdkOpenAdapter succeeded */
	NDK_ADAPTER_INFO info;
	NDK_PROVIDER_INFO provider;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ndkinfo [-j] [-I IFNAME|IFINDEX]\n"
		"The NDK adapter of every interface (like Get-NetAdapterRdma).\n"
		"  -j, --json          JSON\n"
		"  -I, --interface IF  only this interface (name or index)\n"
		"  -h, --help          this help\n"
		"      --version       the version\n"
		"Exit status: 0 success, 1 the adapter of -I could not be opened\n"
		"or an adapter could not be queried, 2 usage (docs/tools.md).\n");
}

static const char *technology_name(NDK_RDMA_TECHNOLOGY t)
{
	switch (t) {
	case NdkUndefined:
		return "Undefined";
	case NdkiWarp:
		return "iWARP";
	case NdkInfiniBand:
		return "InfiniBand";
	case NdkRoCE:
		return "RoCE";
	case NdkRoCEv2:
		return "RoCEv2";
	default:
		return "unknown";
	}
}

/* Why an adapter is unusable, in the words of Get-NetAdapterRdma. */
static const char *status_text(const struct adapter *a)
{
	if (a->status == STATUS_SUCCESS)
		return "operational";
	if (a->opened)
		return "query failed";
	switch (a->status) {
	case NDIS_STATUS_ADAPTER_NOT_READY:
	case STATUS_NDIS_ADAPTER_NOT_READY:
		return "not ready";
	case NDIS_STATUS_ADAPTER_NOT_FOUND:
		return "not found";
	case NDIS_STATUS_BAD_VERSION:
	case STATUS_NDIS_BAD_VERSION:
		return "version not supported";
	case STATUS_INSUFFICIENT_RESOURCES:
		return "out of resources";
	default:
		return "failed";
	}
}

static unsigned long long field_value(const NDK_ADAPTER_INFO *i, size_t k)
{
	const char *p = (const char *)i + fields[k].off;
	uint32_t v32;
	uint64_t v64;

	if (fields[k].size == sizeof(v64)) {
		memcpy(&v64, p, sizeof(v64));
		return v64;
	}
	memcpy(&v32, p, sizeof(v32));
	return v32;
}

static void probe(struct adapter *a)
{
	NDK_VERSION v = { NDK_PROVIDER_MAJOR_VERSION,
			  NDK_PROVIDER_MINOR_VERSION };
	NDK_ADAPTER *ad;
	ULONG size = sizeof(a->info);

	memset(&a->info, 0, sizeof(a->info));
	memset(&a->provider, 0, sizeof(a->provider));
	a->opened = false;
	a->status = NdkOpenAdapter(v, a->ifindex, &ad);
	if (!NT_SUCCESS(a->status))
		return;
	a->opened = true;
	a->status = ad->Dispatch->NdkQueryAdapterInfo(ad, &a->info, &size);
	if (a->status == STATUS_SUCCESS)
		a->status = NdkQueryAdapterProvider(ad, &a->provider);
	NdkCloseAdapter(ad);
}

#define LABEL "%-24s: "

static void print_text(const struct adapter *a)
{
	const NDK_ADAPTER_INFO *i = &a->info;
	char name[IF_NAMESIZE * 4];
	ULONG rest;
	size_t k;
	int n;

	text_printable(a->name, name, sizeof(name));
	printf(LABEL "%s\n", "Name", name);
	printf(LABEL "%u\n", "IfIndex", a->ifindex);
	if (a->status != STATUS_SUCCESS) {
		printf(LABEL "%s (%s)\n", "Status", status_text(a),
		       NdkStatusName(a->status));
		return;
	}
	printf(LABEL "%s\n", "Status", status_text(a));
	printf(LABEL "%s\n", "Provider", a->provider.Provider);
	if (a->provider.Device[0]) {
		char dev[sizeof(a->provider.Device) * 4];

		text_printable(a->provider.Device, dev, sizeof(dev));
		printf(LABEL "%s\n", "Device", dev);
	}
	if (a->provider.Reason[0]) {
		char why[sizeof(a->provider.Reason) * 4];

		text_printable(a->provider.Reason, why, sizeof(why));
		printf(LABEL "%s\n", "ProviderReason", why);
	}
	printf(LABEL "%u.%u\n", "NdkVersion", i->Version.Major,
	       i->Version.Minor);
	printf(LABEL "0x%08x\n", "VendorId", i->VendorId);
	printf(LABEL "0x%08x\n", "DeviceId", i->DeviceId);
	printf(LABEL "%s\n", "RdmaTechnology",
	       technology_name(i->RdmaTechnology));
	for (k = 0; k < NFIELDS; k++)
		printf(LABEL "%llu\n", fields[k].name, field_value(i, k));
	printf(LABEL "0x%08x", "AdapterFlags", i->AdapterFlags);
	rest = i->AdapterFlags;
	n = 0;
	for (k = 0; k < NFLAGS; k++) {
		if (!(i->AdapterFlags & flags[k].bit))
			continue;
		printf("%s%s", n++ ? " " : " (", flags[k].name);
		rest &= ~flags[k].bit;
	}
	if (rest)
		printf("%s0x%08x", n++ ? " " : " (", rest);
	printf("%s\n", n ? ")" : "");
}

static void print_json(struct json *j, const struct adapter *a)
{
	const NDK_ADAPTER_INFO *i = &a->info;
	char text[16];
	ULONG rest;
	size_t k;

	json_begin_object(j, NULL);
	json_string(j, "name", a->name);
	json_uint(j, "ifindex", a->ifindex);
	json_string(j, "status", status_text(a));
	json_string(j, "ntstatus", NdkStatusName(a->status));
	if (a->status == STATUS_SUCCESS) {
		snprintf(text, sizeof(text), "%u.%u", i->Version.Major,
			 i->Version.Minor);
		json_string(j, "NdkVersion", text);
		json_string(j, "Provider", a->provider.Provider);
		json_string(j, "Device", a->provider.Device);
		json_string(j, "ProviderReason", a->provider.Reason);
		json_uint(j, "VendorId", i->VendorId);
		json_uint(j, "DeviceId", i->DeviceId);
		json_string(j, "RdmaTechnology",
			    technology_name(i->RdmaTechnology));
		for (k = 0; k < NFIELDS; k++)
			json_uint(j, fields[k].name, field_value(i, k));
		json_uint(j, "AdapterFlags", i->AdapterFlags);
		json_begin_array(j, "AdapterFlagNames");
		rest = i->AdapterFlags;
		for (k = 0; k < NFLAGS; k++) {
			if (!(i->AdapterFlags & flags[k].bit))
				continue;
			json_string(j, NULL, flags[k].name);
			rest &= ~flags[k].bit;
		}
		if (rest) {
			snprintf(text, sizeof(text), "0x%08x", rest);
			json_string(j, NULL, text);
		}
		json_end_array(j);
	}
	json_end_object(j);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "interface", required_argument, NULL, 'I' },
		TOOL_LONG_COMMON,
		{ NULL, 0, NULL, 0 },
	};
	struct if_nameindex *ifs = NULL, one[2] = { { 0 } };
	const struct if_nameindex *list;
	char ifname[IF_NAMESIZE];
	NET_IFINDEX ifindex = 0;
	bool json = false;
	struct adapter a;
	struct json j;
	size_t n;
	int c, rc = TOOL_EXIT_OK;

	tool_prog = "ndkinfo";
	while ((c = getopt_long(argc, argv, "jI:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = true;
			break;
		case 'I':
			ifindex = tool_arg_interface(optarg, ifname);
			break;
		case 'h':
			usage(stdout);
			return TOOL_EXIT_OK;
		case TOOL_OPT_VERSION:
			tool_print_version();
			return TOOL_EXIT_OK;
		default:
			tool_usage_hint();
		}
	}
	if (optind < argc)
		tool_usage_error("unexpected argument '%s'", argv[optind]);
	if (ifindex) {
		one[0].if_index = ifindex;
		one[0].if_name = ifname;
		list = one;
	} else {
		ifs = if_nameindex();
		if (!ifs) {
			fprintf(stderr, "ndkinfo: if_nameindex: %s\n",
				strerror(errno));
			return TOOL_EXIT_FAIL;
		}
		list = ifs;
	}

	if (json) {
		json_init(&j, stdout, false);
		json_begin_object(&j, NULL);
		json_begin_array(&j, "adapters");
	}
	for (n = 0; list[n].if_index; n++) {
		memset(&a, 0, sizeof(a));
		a.ifindex = list[n].if_index;
		snprintf(a.name, sizeof(a.name), "%s", list[n].if_name);
		probe(&a);
		/* One interface asked for and not usable; or a query that
		 * failed on an adapter that opened. */
		if (a.status != STATUS_SUCCESS && (ifindex || a.opened))
			rc = TOOL_EXIT_FAIL;
		if (json) {
			print_json(&j, &a);
			continue;
		}
		if (n)
			printf("\n");
		print_text(&a);
	}
	if (json) {
		json_end_array(&j);
		json_end_object(&j);
		json_finish(&j);
	}
	if (ifs)
		if_freenameindex(ifs);
	if (fflush(stdout) || ferror(stdout))
		return TOOL_EXIT_FAIL;
	return rc;
}
