/* SPDX-License-Identifier: MIT */
/*
 * Which RDMA device serves an interface, and the verbs adapter built on
 * it (docs/verbs.md, Devices).
 *
 * The device of a network interface is what `rdma link` shows: the RDMA
 * netlink interface (NETLINK_RDMA, the nldev client) lists every device
 * and, per port, the index of its net device. That works for every
 * transport on every kernel; the GID table's net device (ibv_query_gid_ex)
 * is empty for iWARP devices on older kernels (6.1's siw among them).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <linux/netlink.h>
#include <rdma/ib_user_ioctl_verbs.h>
#include <rdma/rdma_netlink.h>
#include "core/compiler.h"
#include "core/log.h"
#include "core/netns.h"
#include "verbs/cm.h"
#include "verbs/cq.h"
#include "verbs/lam.h"
#include "verbs/mr.h"
#include "verbs/qp.h"
#include "verbs/srq.h"
#include "verbs/verbs.h"
#include "verbs/wr.h"

/* Linux soft-iWARP's vendor id ("bmt"), and soft-RoCE's. */
#define SIW_VENDOR_ID 0x626d74
#define RXE_VENDOR_ID 0xffffff

#define NL_BUF 32768

/*
 * Every verbs adapter of the process. Adapters on one device share
 * rdma_cm's context and so its asynchronous event queue: whichever
 * engine reads an event finds the QP's adapter here.
 */
static struct list_head verbs_adapters = LIST_HEAD_INIT(verbs_adapters);
static struct ndk_lock verbs_adapters_lock =
	NDK_LOCK_INITIALIZER(NDK_LOCK_VERBS_DEVS);

/* Where an interface's device was found. */
struct dev_port {
	NET_IFINDEX ifindex;
	uint32_t dev_index;
	char name[IBV_SYSFS_NAME_MAX];
	uint32_t port;
	bool found;
};

/* The u32 or string attributes of one nldev reply that we read. */
struct nl_attrs {
	uint32_t dev_index, port_index, ndev_index;
	uint32_t driver_id;
	bool has_dev, has_port, has_ndev, has_driver;
	char name[IBV_SYSFS_NAME_MAX];
};

static void nl_parse(const struct nlmsghdr *h, struct nl_attrs *a)
{
	const char *p = NLMSG_DATA(h);
	int left = (int)h->nlmsg_len - NLMSG_HDRLEN;

	memset(a, 0, sizeof(*a));
	while (left >= (int)sizeof(struct nlattr)) {
		const struct nlattr *na = (const struct nlattr *)p;
		const char *v = p + NLA_HDRLEN;
		int len = na->nla_len;
		uint32_t u;

		if (len < NLA_HDRLEN || len > left)
			break;
		switch (na->nla_type & NLA_TYPE_MASK) {
		case RDMA_NLDEV_ATTR_DEV_INDEX:
		case RDMA_NLDEV_ATTR_PORT_INDEX:
		case RDMA_NLDEV_ATTR_NDEV_INDEX:
			if (len < NLA_HDRLEN + (int)sizeof(u))
				break;
			memcpy(&u, v, sizeof(u));
			if ((na->nla_type & NLA_TYPE_MASK) ==
			    RDMA_NLDEV_ATTR_DEV_INDEX) {
				a->dev_index = u;
				a->has_dev = true;
			} else if ((na->nla_type & NLA_TYPE_MASK) ==
				   RDMA_NLDEV_ATTR_PORT_INDEX) {
				a->port_index = u;
				a->has_port = true;
			} else {
				a->ndev_index = u;
				a->has_ndev = true;
			}
			break;
		case RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID:
			if (len < NLA_HDRLEN + (int)sizeof(u))
				break;
			memcpy(&a->driver_id, v, sizeof(a->driver_id));
			a->has_driver = true;
			break;
		case RDMA_NLDEV_ATTR_DEV_NAME:
			snprintf(a->name, sizeof(a->name), "%.*s",
				 len - NLA_HDRLEN, v);
			break;
		default:
			break;
		}
		p += NLA_ALIGN(len);
		left -= NLA_ALIGN(len);
	}
}

/*
 * One nldev request: a dump (RDMA_NLDEV_CMD_GET for the devices, _PORT_GET
 * for the ports of dev_index), or with chardev, the one answer of
 * _GET_CHARDEV for that kind of character device of dev_index. fn sees
 * every reply. 0 or a negative errno.
 */
static int nl_request(int fd, unsigned int cmd, const uint32_t *dev_index,
		      const char *chardev,
		      void (*fn)(const struct nl_attrs *a, void *arg),
		      void *arg)
{
	struct {
		struct nlmsghdr h;
		struct nlattr a;
		uint32_t v;
		struct nlattr sa;
		char s[16];
	} req;
	static _Atomic uint32_t seq_next = 1;
	uint32_t seq = atomic_fetch_add(&seq_next, 1);
	char *buf;
	int ret = 0;

	memset(&req, 0, sizeof(req));
	req.h.nlmsg_len = NLMSG_HDRLEN;
	req.h.nlmsg_type = RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, cmd);
	req.h.nlmsg_flags = NLM_F_REQUEST | (chardev ? NLM_F_ACK : NLM_F_DUMP);
	req.h.nlmsg_seq = seq;
	if (dev_index) {
		req.a.nla_len = NLA_HDRLEN + sizeof(req.v);
		req.a.nla_type = RDMA_NLDEV_ATTR_DEV_INDEX;
		req.v = *dev_index;
		req.h.nlmsg_len += NLA_ALIGN(req.a.nla_len);
	}
	if (dev_index && chardev) {
		snprintf(req.s, sizeof(req.s), "%s", chardev);
		req.sa.nla_len = (uint16_t)(NLA_HDRLEN + strlen(req.s) + 1);
		req.sa.nla_type = RDMA_NLDEV_ATTR_CHARDEV_TYPE;
		req.h.nlmsg_len += NLA_ALIGN(req.sa.nla_len);
	}
	if (send(fd, &req, req.h.nlmsg_len, 0) < 0)
		return -errno;
	buf = malloc(NL_BUF);
	if (!buf)
		return -ENOMEM;
	for (;;) {
		ssize_t n = recv(fd, buf, NL_BUF, 0);
		struct nlmsghdr *h;

		if (n < 0) {
			if (errno == EINTR)
				continue;
			ret = -errno;
			break;
		}
		for (h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)n);
		     h = NLMSG_NEXT(h, n)) {
			struct nl_attrs a;

			if (h->nlmsg_seq != seq)
				continue;
			if (h->nlmsg_type == NLMSG_DONE)
				goto out;
			if (h->nlmsg_type == NLMSG_ERROR) {
				const struct nlmsgerr *e = NLMSG_DATA(h);

				/* A doit request ends with its ack (0). */
				ret = e->error || !chardev ? e->error : 0;
				if (!e->error && !chardev)
					ret = -EPROTO;
				goto out;
			}
			nl_parse(h, &a);
			fn(&a, arg);
		}
	}
out:
	free(buf);
	return ret;
}

struct dev_list {
	uint32_t index[64];
	char name[64][IBV_SYSFS_NAME_MAX];
	unsigned int n;
};

static void collect_device(const struct nl_attrs *a, void *arg)
{
	struct dev_list *l = arg;

	if (!a->has_dev || l->n == ARRAY_SIZE(l->index))
		return;
	l->index[l->n] = a->dev_index;
	memcpy(l->name[l->n], a->name, sizeof(l->name[0]));
	l->n++;
}

static void match_port(const struct nl_attrs *a, void *arg)
{
	struct dev_port *dp = arg;

	if (dp->found || !a->has_port || !a->has_ndev ||
	    a->ndev_index != dp->ifindex)
		return;
	dp->port = a->port_index;
	dp->found = true;
}

static void read_driver(const struct nl_attrs *a, void *arg)
{
	if (a->has_driver)
		*(uint32_t *)arg = a->driver_id;
}

/*
 * Whether this process is in the initial network namespace: that
 * namespace is the first one made, and namespace cookies count from 1
 * (SO_NETNS_COOKIE, Linux 5.14); before, whether it is PID 1's.
 */
static bool initial_netns(void)
{
	uint64_t cookie = ndk_netns_cookie();
	struct stat self, init;

	if (cookie)
		return cookie == 1;
	if (stat("/proc/self/ns/net", &self) || stat("/proc/1/ns/net", &init))
		return true;
	return self.st_ino == init.st_ino && self.st_dev == init.st_dev;
}

/*
 * rxe of Linux 6.1 sends and receives in the initial network namespace
 * only (its UDP sockets and its route lookups are there), whatever the
 * namespace of its net device: elsewhere its connections never complete
 * (docs/verbs.md, Devices). Such a device serves no interface here.
 */
static bool device_usable_here(int fd, uint32_t dev_index, const char *name)
{
	uint32_t driver = 0;

	if (initial_netns())
		return true;
	if (nl_request(fd, RDMA_NLDEV_CMD_GET_CHARDEV, &dev_index, "uverbs",
		       read_driver, &driver))
		return true;
	if (driver != RDMA_DRIVER_RXE)
		return true;
	ndk_info("verbs: %s is rxe, which works in the initial network "
		 "namespace only: not used in this one",
		 name);
	return false;
}

/* The first device port whose net device is ifindex: 0 or -ENODEV. */
static int find_device(NET_IFINDEX ifindex, struct dev_port *out)
{
	struct dev_list *l;
	unsigned int i;
	int fd, ret;

	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_RDMA);
	if (fd < 0)
		return -ENODEV; /* no RDMA core in this kernel */
	l = calloc(1, sizeof(*l));
	if (!l) {
		close(fd);
		return -ENOMEM;
	}
	memset(out, 0, sizeof(*out));
	out->ifindex = ifindex;
	ret = nl_request(fd, RDMA_NLDEV_CMD_GET, NULL, NULL, collect_device, l);
	for (i = 0; !ret && i < l->n && !out->found; i++) {
		ret = nl_request(fd, RDMA_NLDEV_CMD_PORT_GET, &l->index[i],
				 NULL, match_port, out);
		if (out->found) {
			out->dev_index = l->index[i];
			memcpy(out->name, l->name[i], sizeof(out->name));
		}
	}
	if (!ret && out->found &&
	    !device_usable_here(fd, out->dev_index, out->name))
		out->found = false;
	free(l);
	close(fd);
	if (ret)
		ndk_dbg("verbs: RDMA netlink query failed: %d", ret);
	return out->found ? 0 : -ENODEV;
}

int ndk_verbs_probe(NET_IFINDEX ifindex, const char *ifname)
{
	struct dev_port dp;
	int ret = find_device(ifindex, &dp);

	if (!ret)
		ndk_dbg("verbs: %s is served by %s port %u", ifname, dp.name,
			dp.port);
	return ret;
}

/*
 * The largest inline size an RC QP of this device takes: devices do not
 * report it (siw takes 80 bytes, rxe more), so a throwaway QP is created
 * with decreasing sizes.
 */
static uint32_t probe_max_inline(struct ndk_vadapter *v)
{
	static const uint32_t sizes[] = { 1024, 512, 256, 128, 80, 64, 32 };
	struct ibv_pd *pd = ibv_alloc_pd(v->ctx);
	struct ibv_cq *cq = pd ? ibv_create_cq(v->ctx, 4, NULL, NULL, 0) : NULL;
	uint32_t best = 0;
	size_t i;

	for (i = 0; cq && i < ARRAY_SIZE(sizes); i++) {
		struct ibv_qp_init_attr a = {
			.send_cq = cq,
			.recv_cq = cq,
			.cap = { .max_send_wr = 1,
				 .max_recv_wr = 1,
				 .max_send_sge = 1,
				 .max_recv_sge = 1,
				 .max_inline_data = sizes[i] },
			.qp_type = IBV_QPT_RC,
		};
		struct ibv_qp *qp = ibv_create_qp(pd, &a);

		if (!qp)
			continue;
		best = a.cap.max_inline_data >= sizes[i]
			       ? sizes[i]
			       : a.cap.max_inline_data;
		ibv_destroy_qp(qp);
		break;
	}
	if (cq)
		ibv_destroy_cq(cq);
	if (pd)
		ibv_dealloc_pd(pd);
	return best;
}

/*
 * siw's queues are mapped into the process at an offset that the kernel
 * picks, the lowest free page offset of the context; siw's library
 * (rdma-core providers/siw) takes the offset 0x90000 for siw's "no key"
 * (SIW_INVAL_UOBJ_KEY, SIW_UOBJ_MAX_KEY + 1 in siw-abi.h) and fails the
 * create. With 4 KiB pages that is page offset 144: the CQ or queue that
 * starts there fails, and so does every later one while the pages below
 * stay in use (27 QPs with their CQs, docs/verbs.md, Devices). So the
 * first adapter on a siw context creates a CQ that covers pages 0 to 144
 * before anything else, and keeps it while the process lives.
 */
#define SIW_NO_KEY   0x90000u
#define SIW_CQE_SIZE 32u /* struct siw_cqe */

static struct ibv_cq *siw_plugs[8];
static struct ibv_context *siw_plugged[8];

static void siw_plug(struct ndk_vadapter *v)
{
	int cqe = (int)(SIW_NO_KEY / SIW_CQE_SIZE + 1);
	size_t i, free_i = ARRAY_SIZE(siw_plugs);

	ndk_lock(&verbs_adapters_lock);
	for (i = 0; i < ARRAY_SIZE(siw_plugs); i++) {
		if (siw_plugged[i] == v->ctx)
			goto out;
		if (!siw_plugged[i] && free_i == ARRAY_SIZE(siw_plugs))
			free_i = i;
	}
	if (free_i == ARRAY_SIZE(siw_plugs))
		goto out;
	siw_plugged[free_i] = v->ctx;
	siw_plugs[free_i] = ibv_create_cq(v->ctx, cqe, NULL, NULL, 0);
	if (!siw_plugs[free_i])
		ndk_warn("verbs: %s: the CQ over siw's no-key offset: %s",
			 v->dev_name, strerror(errno));
out:
	ndk_unlock(&verbs_adapters_lock);
}

static NDK_RDMA_TECHNOLOGY technology(struct ndk_vadapter *v)
{
	struct ibv_gid_entry e;
	int i;

	if (v->iwarp)
		return NdkiWarp;
	if (v->port_attr.link_layer != IBV_LINK_LAYER_ETHERNET)
		return NdkInfiniBand;
	for (i = 0; i < v->port_attr.gid_tbl_len && i < 64; i++) {
		if (ibv_query_gid_ex(v->ctx, v->port, (uint32_t)i, &e, 0))
			continue;
		if (e.gid_type == IBV_GID_TYPE_ROCE_V2)
			return NdkRoCEv2;
	}
	return NdkRoCE;
}

static ULONG clamp_ulong(uint64_t v)
{
	return v > 0xffffffffu ? 0xffffffffu : (ULONG)v;
}

/*
 * NDK_ADAPTER_INFO from the device and port attributes (docs/verbs.md,
 * Adapter information).
 */
static void verbs_adapter_info(struct ndk_vadapter *v, NDK_ADAPTER_INFO *info)
{
	const struct ibv_device_attr *d = &v->dev_attr;
	NDK_VERSION version = info->Version;
	bool soft =
		d->vendor_id == SIW_VENDOR_ID || d->vendor_id == RXE_VENDOR_ID;

	memset(info, 0, sizeof(*info));
	info->Version = version;
	info->VendorId = d->vendor_id;
	info->DeviceId = d->vendor_part_id;
	info->MaxRegistrationSize = (SIZE_T)d->max_mr_size;
	/* Type 2 windows, bound on the send queue (docs/verbs.md). */
	info->MaxWindowSize = v->mw2 ? (SIZE_T)d->max_mr_size : 0;
	/* ibv_reg_mr_iova at post time (docs/verbs.md, Fast registration). */
	info->FRMRPageCount = ndk_vmr_fr_max_pages(d->max_mr_size);
	info->MaxInitiatorRequestSge = clamp_ulong(d->max_sge);
	info->MaxReceiveRequestSge = clamp_ulong(d->max_sge);
	info->MaxReadRequestSge =
		clamp_ulong(d->max_sge_rd ? d->max_sge_rd : d->max_sge);
	info->MaxTransferLength = clamp_ulong(v->port_attr.max_msg_sz);
	info->MaxInlineDataSize = v->max_inline;
	/* rdma_cm carries them in 8 bits. */
	info->MaxInboundReadLimit = clamp_ulong(MIN(d->max_qp_rd_atom, 255));
	info->MaxOutboundReadLimit =
		clamp_ulong(MIN(d->max_qp_init_rd_atom, 255));
	/* A slot index has 20 bits in a wr_id (verbs/wr.h). */
	info->MaxReceiveQueueDepth =
		MIN(clamp_ulong(d->max_qp_wr), NDK_VWQ_MAX_DEPTH);
	info->MaxInitiatorQueueDepth =
		MIN(clamp_ulong(d->max_qp_wr), NDK_VWQ_MAX_DEPTH);
	info->MaxSrqDepth = d->max_srq ? clamp_ulong(d->max_srq_wr) : 0;
	info->MaxCqDepth = clamp_ulong(d->max_cqe);
	info->LargeRequestThreshold = 64 * 1024;
	if (v->iwarp) {
		/* MPA's 256 bytes less the 4-byte IRD/ORD block, less one:
		 * siw sends 252 with a wrapped length (docs/interop.md,
		 * Linux siw). */
		info->MaxCallerData = 251;
		info->MaxCalleeData = 251;
		v->max_reject_data = 251;
	} else {
		/* IB CM private data less rdma_cm's header; MaxCalleeData is
		 * what a REJ carries too (a REP would take 196). */
		info->MaxCallerData = 56;
		info->MaxCalleeData = 148;
		v->max_reject_data = 148;
	}
	info->AdapterFlags = NDK_ADAPTER_FLAG_LOOPBACK_CONNECTIONS_SUPPORTED;
	/* Software devices copy in order; hardware need not. */
	if (soft)
		info->AdapterFlags |= NDK_ADAPTER_FLAG_IN_ORDER_DMA_SUPPORTED;
	/* An iWARP Read Response is a tagged write into the sink, which
	 * iWARP hardware checks for remote write; siw does not. */
	if (!v->iwarp || v->siw)
		info->AdapterFlags |=
			NDK_ADAPTER_FLAG_RDMA_READ_SINK_NOT_REQUIRED;
	/* ibv_resize_cq: rxe has it, siw not; other devices are not
	 * assumed to (NdkResizeCq says STATUS_NOT_SUPPORTED there). */
	if (v->rxe)
		info->AdapterFlags |= NDK_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED;
	/* What siw does otherwise, announced (docs/verbs.md, Contract
	 * differences): its MPA negotiation raises the acceptor's IRD, it
	 * never flags a completion solicited, its target does not check
	 * remote read, and a Terminate it receives reaches nobody. */
	if (v->siw)
		info->AdapterFlags |=
			NDK_ADAPTER_FLAG_LIBNDK_ACCEPTOR_IRD_RAISED |
			NDK_ADAPTER_FLAG_LIBNDK_SOLICITED_ANY |
			NDK_ADAPTER_FLAG_LIBNDK_REMOTE_READ_UNCHECKED |
			NDK_ADAPTER_FLAG_LIBNDK_REMOTE_ERROR_UNREPORTED;
	/* The iWARP kernel CM reports the connection established when
	 * the MPA Reply goes out (Connection management). */
	if (v->iwarp)
		info->AdapterFlags |= NDK_ADAPTER_FLAG_LIBNDK_ACCEPT_ON_REPLY;
	info->RdmaTechnology = technology(v);
}

static int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	return 0;
}

static void async_io_fn(struct ndk_io *io, uint32_t events);

/* Milliseconds between rdma_cm's device scans, and how many it gets. */
#define CM_SCAN_WAIT_MS 20
#define CM_SCANS	8

static struct ibv_context *cm_find(struct ibv_context **devs, int n,
				   const char *name)
{
	int i;

	for (i = 0; devs && i < n; i++)
		if (!strcmp(ibv_get_device_name(devs[i]->device), name))
			return devs[i];
	return NULL;
}

/*
 * The device's context is rdma_cm's own: the one its identifiers use, so
 * that their QPs can take this adapter's PDs and CQs. rdma_cm lists its
 * contexts after scanning libibverbs' devices; that scan can miss a
 * device that RDMA netlink has just listed, or fail whole, while another
 * device comes or goes (the rxe of a veth whose namespace ended is
 * unregistered by a kernel worker, later). Such a miss is transient, so
 * the scan is repeated for a while before the device counts as absent.
 */
static int cm_context(struct ndk_vadapter *v, const char *name)
{
	char listed[128];
	int i, n = 0, scan;

	for (scan = 1;; scan++) {
		v->devs = rdma_get_devices(&n);
		v->ctx = cm_find(v->devs, n, name);
		if (v->ctx)
			return 0;
		if (scan == CM_SCANS)
			break;
		ndk_dbg("verbs: rdma_cm lists %d devices, not %s: scanning again",
			n, name);
		if (v->devs)
			rdma_free_devices(v->devs);
		v->devs = NULL;
		usleep(CM_SCAN_WAIT_MS * 1000);
	}
	listed[0] = '\0';
	for (i = 0; v->devs && i < n; i++) {
		size_t len = strlen(listed);

		snprintf(listed + len, sizeof(listed) - len, " %s",
			 ibv_get_device_name(v->devs[i]->device));
	}
	ndk_warn("verbs: rdma_cm does not know device %s after %d scans "
		 "(it lists %d devices:%s)",
		 name, CM_SCANS, n, listed);
	return -ENODEV;
}

int ndk_verbs_adapter_init(struct ndk_adapter *ad)
{
	struct ndk_vadapter *v;
	struct dev_port dp;
	int i, ret;

	ret = find_device(ad->ifindex, &dp);
	if (ret)
		return ret;
	v = calloc(1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	ad->priv = v;
	v->ad = ad;
	ndk_lock_init(&v->fr_lock, NDK_LOCK_LEAF);
	for (i = 0; i < NDK_VFR_BUCKETS; i++)
		list_init(&v->mw_map[i]);
	ndk_lock_init(&v->cm_ref_lock, NDK_LOCK_LEAF);
	v->port = (uint8_t)dp.port;
	memcpy(v->dev_name, dp.name, sizeof(v->dev_name));
	ret = cm_context(v, dp.name);
	if (ret)
		return ret;
	if (ibv_query_device(v->ctx, &v->dev_attr) ||
	    ibv_query_port(v->ctx, v->port, &v->port_attr))
		return -ENODEV;
	v->iwarp = v->ctx->device->transport_type == IBV_TRANSPORT_IWARP;
	v->siw = v->dev_attr.vendor_id == SIW_VENDOR_ID;
	v->rxe = v->dev_attr.vendor_id == RXE_VENDOR_ID;
	v->mw2 = v->dev_attr.device_cap_flags & (IBV_DEVICE_MEM_WINDOW_TYPE_2A |
						 IBV_DEVICE_MEM_WINDOW_TYPE_2B);
	v->fr_mw = v->mw2 && !v->iwarp;
	if (v->siw)
		siw_plug(v); /* before any other queue of the context */
	v->max_inline = probe_max_inline(v);
	v->qps = calloc(1, sizeof(*v->qps));
	if (!v->qps || ndk_vqpmap_init(v->qps))
		return -ENOMEM;
	v->qps->on_error = ndk_vqp_wc_error;
	v->lams = &ad->lams;

	v->comp = ibv_create_comp_channel(v->ctx);
	v->chan = calloc(1, sizeof(*v->chan));
	if (!v->chan)
		return -ENOMEM;
	atomic_init(&v->chan->refs, 1);
	v->chan->ch = v->cm = rdma_create_event_channel();
	if (!v->comp || !v->cm)
		return -errno ? -errno : -ENOMEM;
	ret = set_nonblock(v->comp->fd);
	if (!ret)
		ret = set_nonblock(v->cm->fd);
	if (ret)
		return ret;
	ndk_io_init(&v->comp_io, v->comp->fd, ndk_verbs_comp_event);
	ndk_io_init(&v->cm_io, v->cm->fd, ndk_verbs_cm_event);
	/* rdma_cm's context: nobody else in the process reads its events. */
	ret = set_nonblock(v->ctx->async_fd);
	if (ret)
		return ret;
	ndk_io_init(&v->async_io, v->ctx->async_fd, async_io_fn);
	ndk_lock(&verbs_adapters_lock);
	list_add_tail(&v->entry, &verbs_adapters);
	ndk_unlock(&verbs_adapters_lock);

	verbs_adapter_info(v, &ad->info);
	snprintf(ad->device, sizeof(ad->device), "%.40s port %u", dp.name,
		 dp.port);
	return 0;
}

/* A QP's or an SRQ's asynchronous event: to its adapter, whichever it
 * is. */
static void async_event(struct ndk_vadapter *v, struct ibv_async_event *ev)
{
	bool srq = ev->event_type == IBV_EVENT_SRQ_LIMIT_REACHED ||
		   ev->event_type == IBV_EVENT_SRQ_ERR;
	const void *ibv = srq ? (const void *)ev->element.srq
			      : (const void *)ev->element.qp;
	struct list_head *pos;
	bool found = false;

	ndk_lock(&verbs_adapters_lock);
	list_for_each (pos, &verbs_adapters) {
		struct ndk_vadapter *o =
			list_entry(pos, struct ndk_vadapter, entry);

		if (o->ctx == v->ctx &&
		    ndk_vqpmap_with_ibv(o->qps, ibv,
					srq ? ndk_vsrq_async : ndk_vqp_async,
					&ev->event_type)) {
			found = true;
			break;
		}
	}
	ndk_unlock(&verbs_adapters_lock);
	if (!found)
		ndk_dbg("verbs: %s for a %s that is not ours",
			ibv_event_type_str(ev->event_type), srq ? "SRQ" : "QP");
}

void ndk_vad_async_drain(struct ndk_vadapter *v)
{
	unsigned int n;

	for (n = 0; n < 64; n++) {
		struct ibv_async_event ev;

		if (ibv_get_async_event(v->ctx, &ev))
			break; /* EAGAIN: none, or another engine took it */
		switch (ev.event_type) {
		case IBV_EVENT_QP_FATAL:
		case IBV_EVENT_QP_REQ_ERR:
		case IBV_EVENT_QP_ACCESS_ERR:
		case IBV_EVENT_COMM_EST:
		case IBV_EVENT_SQ_DRAINED:
		case IBV_EVENT_QP_LAST_WQE_REACHED:
		case IBV_EVENT_SRQ_LIMIT_REACHED:
		case IBV_EVENT_SRQ_ERR:
			async_event(v, &ev);
			break;
		case IBV_EVENT_CQ_ERR:
			/* ibv_destroy_cq waits for this event's ack, so
			 * the CQ is there. */
			ndk_vcq_async_error(ev.element.cq->cq_context);
			break;
		default:
			/* Port and device events: logged only. */
			ndk_info("verbs: %s: %s", v->dev_name,
				 ibv_event_type_str(ev.event_type));
			break;
		}
		ibv_ack_async_event(&ev);
	}
}

static void async_io_fn(struct ndk_io *io, uint32_t events)
{
	ndk_vad_async_drain(container_of(io, struct ndk_vadapter, async_io));
}

int ndk_verbs_adapter_start(struct ndk_adapter *ad)
{
	struct ndk_vadapter *v = to_vad(ad);
	int ret;

	ret = ndk_engine_add_fd(&ad->engine, &v->comp_io, EPOLLIN);
	if (!ret)
		ret = ndk_engine_add_fd(&ad->engine, &v->cm_io, EPOLLIN);
	if (!ret)
		ret = ndk_engine_add_fd(&ad->engine, &v->async_io, EPOLLIN);
	if (!ret)
		ret = ndk_vworker_start(&v->worker);
	return ret;
}

void ndk_vchan_put(struct ndk_vchan *chan)
{
	if (atomic_fetch_sub_explicit(&chan->refs, 1, memory_order_acq_rel) !=
	    1)
		return;
	if (chan->ch)
		rdma_destroy_event_channel(chan->ch);
	free(chan);
}

/* After the engine stopped: every CQ and rdma_cm id is gone, but for
 * those of abandoned connects still in the kernel (struct ndk_vchan). */
void ndk_verbs_adapter_fini(struct ndk_adapter *ad)
{
	struct ndk_vadapter *v = to_vad(ad);

	if (!v)
		return;
	ndk_vworker_stop(&v->worker);
	if (v->entry.next) {
		ndk_lock(&verbs_adapters_lock);
		list_del(&v->entry);
		ndk_unlock(&verbs_adapters_lock);
	}
	if (v->chan)
		ndk_vchan_put(v->chan);
	if (v->comp)
		ibv_destroy_comp_channel(v->comp);
	if (v->devs)
		rdma_free_devices(v->devs);
	if (v->qps && v->qps->e)
		ndk_vqpmap_fini(v->qps);
	free(v->qps);
	ndk_lock_destroy(&v->fr_lock);
	ndk_lock_destroy(&v->cm_ref_lock);
	free(v);
	ad->priv = NULL;
}

void ndk_vcm_set_context(struct ndk_vadapter *v, struct rdma_cm_id *id,
			 struct ndk_vcm_ref *ref)
{
	ndk_lock(&v->cm_ref_lock);
	id->context = ref;
	ndk_unlock(&v->cm_ref_lock);
}
