/* SPDX-License-Identifier: MIT */
/*
 * siw_pd: one rdma_cm connection with private data and chosen read
 * limits, for the siw interop test (siw-pd.sh). Built on the host against
 * librdmacm/libibverbs (rdma-core) and run in the interop guest (ndkvm); no
 * rdma-core 44 tool sends private data on iWARP.
 *
 *   siw_pd -c ADDR -p PORT [-n N | -t TEXT] [-r IRD] [-o ORD]
 *   siw_pd -s ADDR -p PORT [-n N | -t TEXT] [-r IRD] [-o ORD] [-x]
 *
 * -c connects with the private data in rdma_connect; -s listens and
 * accepts (or with -x rejects) one request with it. -n N sends N bytes of
 * the pattern byte i = (7 * i + 1) mod 256 (it has a 0x00 at i = 73),
 * -t sends TEXT. -r and -o are responder_resources (IRD) and
 * initiator_depth (ORD). Every event is printed with the private data it
 * carried, in hex, and the depths it reports. After the connection is up
 * the server disconnects first and the client waits for that.
 *
 * Exit status: 0 connected and disconnected (or, with -x, rejected),
 * 3 the client was rejected, 1 anything else.
 */
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netdb.h>
#include <rdma/rdma_cma.h>

#define EXIT_REJECTED 3
#define MAX_PD	      256
#define TIMEOUT_MS    20000

static struct rdma_event_channel *ch;
static uint8_t pd_buf[MAX_PD];
static size_t pd_len;

static void print_pd(const char *what, const void *data, size_t len)
{
	const uint8_t *p = data;
	size_t i;

	printf("siw_pd: %s private data %zu bytes:", what, len);
	for (i = 0; i < len; i++)
		printf(" %02x", p[i]);
	printf("\n");
	fflush(stdout);
}

/* Waits for the next event; NULL on error. */
static struct rdma_cm_event *next_event(void)
{
	struct rdma_cm_event *ev;

	if (rdma_get_cm_event(ch, &ev)) {
		perror("siw_pd: rdma_get_cm_event");
		return NULL;
	}
	printf("siw_pd: event %s, status %d\n", rdma_event_str(ev->event),
	       ev->status);
	fflush(stdout);
	return ev;
}

/* Waits for an event of type want and acks it; -1 for any other. */
static int expect_event(enum rdma_cm_event_type want)
{
	struct rdma_cm_event *ev = next_event();
	int ok;

	if (!ev)
		return -1;
	ok = ev->event == want;
	rdma_ack_cm_event(ev);
	return ok ? 0 : -1;
}

static int make_qp(struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr attr = { 0 };
	struct ibv_pd *pd = ibv_alloc_pd(id->verbs);
	struct ibv_cq *cq =
		pd ? ibv_create_cq(id->verbs, 4, NULL, NULL, 0) : NULL;

	if (!cq) {
		perror("siw_pd: pd/cq");
		return -1;
	}
	attr.send_cq = cq;
	attr.recv_cq = cq;
	attr.qp_type = IBV_QPT_RC;
	attr.cap.max_send_wr = 2;
	attr.cap.max_recv_wr = 2;
	attr.cap.max_send_sge = 1;
	attr.cap.max_recv_sge = 1;
	if (rdma_create_qp(id, pd, &attr)) {
		perror("siw_pd: rdma_create_qp");
		return -1;
	}
	return 0;
}

static void print_depths(const char *what, const struct rdma_conn_param *c)
{
	printf("siw_pd: %s: initiator_depth %u responder_resources %u\n", what,
	       c->initiator_depth, c->responder_resources);
	fflush(stdout);
}

/*
 * The read limits siw settled on, from ESTABLISHED (server) or the reply
 * (client): rdma_cm passes iw_cm's IRD in initiator_depth and its ORD in
 * responder_resources for these events.
 */
static void print_negotiated(const struct rdma_conn_param *c)
{
	printf("siw_pd: negotiated: ird %u ord %u\n", c->initiator_depth,
	       c->responder_resources);
	fflush(stdout);
}

static int run_client(struct addrinfo *ai, uint8_t ird, uint8_t ord)
{
	struct rdma_conn_param cp = { 0 };
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	int ret;

	if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) ||
	    rdma_resolve_addr(id, NULL, ai->ai_addr, TIMEOUT_MS) ||
	    expect_event(RDMA_CM_EVENT_ADDR_RESOLVED) ||
	    rdma_resolve_route(id, TIMEOUT_MS) ||
	    expect_event(RDMA_CM_EVENT_ROUTE_RESOLVED) || make_qp(id)) {
		perror("siw_pd: client setup");
		return 1;
	}
	cp.private_data = pd_len ? pd_buf : NULL;
	cp.private_data_len = (uint8_t)pd_len;
	cp.responder_resources = ird;
	cp.initiator_depth = ord;
	print_pd("sending", pd_buf, pd_len);
	print_depths("connect with", &cp);
	if (rdma_connect(id, &cp)) {
		perror("siw_pd: rdma_connect");
		return 1;
	}
	ev = next_event();
	if (!ev)
		return 1;
	print_pd("received", ev->param.conn.private_data,
		 ev->param.conn.private_data_len);
	print_depths("event reports", &ev->param.conn);
	if (ev->event == RDMA_CM_EVENT_ESTABLISHED)
		print_negotiated(&ev->param.conn);
	if (ev->event == RDMA_CM_EVENT_REJECTED) {
		rdma_ack_cm_event(ev);
		return EXIT_REJECTED;
	}
	ret = ev->event == RDMA_CM_EVENT_ESTABLISHED ? 0 : 1;
	rdma_ack_cm_event(ev);
	if (ret)
		return ret;
	/* The server disconnects first. */
	if (expect_event(RDMA_CM_EVENT_DISCONNECTED))
		return 1;
	rdma_disconnect(id);
	printf("siw_pd: disconnected\n");
	return 0;
}

static int run_server(struct addrinfo *ai, uint8_t ird, uint8_t ord, int reject)
{
	struct rdma_conn_param cp = { 0 };
	struct rdma_cm_event *ev;
	struct rdma_cm_id *lid, *id;

	if (rdma_create_id(ch, &lid, NULL, RDMA_PS_TCP) ||
	    rdma_bind_addr(lid, ai->ai_addr) || rdma_listen(lid, 1)) {
		perror("siw_pd: listen");
		return 1;
	}
	printf("siw_pd: listening\n");
	fflush(stdout);
	ev = next_event();
	if (!ev)
		return 1;
	if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
		rdma_ack_cm_event(ev);
		return 1;
	}
	id = ev->id;
	print_pd("received", ev->param.conn.private_data,
		 ev->param.conn.private_data_len);
	print_depths("request reports", &ev->param.conn);
	rdma_ack_cm_event(ev);
	print_pd("sending", pd_buf, pd_len);
	if (reject) {
		if (rdma_reject(id, pd_len ? pd_buf : NULL, (uint8_t)pd_len)) {
			perror("siw_pd: rdma_reject");
			return 1;
		}
		printf("siw_pd: rejected\n");
		return 0;
	}
	if (make_qp(id))
		return 1;
	cp.private_data = pd_len ? pd_buf : NULL;
	cp.private_data_len = (uint8_t)pd_len;
	cp.responder_resources = ird;
	cp.initiator_depth = ord;
	print_depths("accept with", &cp);
	if (rdma_accept(id, &cp)) {
		perror("siw_pd: rdma_accept");
		return 1;
	}
	ev = next_event();
	if (!ev)
		return 1;
	if (ev->event != RDMA_CM_EVENT_ESTABLISHED) {
		rdma_ack_cm_event(ev);
		return 1;
	}
	print_negotiated(&ev->param.conn);
	rdma_ack_cm_event(ev);
	rdma_disconnect(id);
	if (expect_event(RDMA_CM_EVENT_DISCONNECTED))
		return 1;
	printf("siw_pd: disconnected\n");
	return 0;
}

int main(int argc, char **argv)
{
	struct addrinfo hints = { .ai_family = AF_INET,
				  .ai_socktype = SOCK_STREAM };
	struct addrinfo *ai;
	const char *addr = NULL, *port = "7471";
	int op, server = 0, reject = 0, ret;
	unsigned long ird = 1, ord = 1;
	size_t i;

	while ((op = getopt(argc, argv, "c:s:p:n:t:r:o:x")) != -1) {
		switch (op) {
		case 'c':
		case 's':
			server = op == 's';
			addr = optarg;
			break;
		case 'p':
			port = optarg;
			break;
		case 'n':
			pd_len = strtoul(optarg, NULL, 0);
			if (pd_len > MAX_PD)
				pd_len = MAX_PD;
			for (i = 0; i < pd_len; i++)
				pd_buf[i] = (uint8_t)(7 * i + 1);
			break;
		case 't':
			pd_len = strlen(optarg);
			if (pd_len > MAX_PD)
				pd_len = MAX_PD;
			memcpy(pd_buf, optarg, pd_len);
			break;
		case 'r':
			ird = strtoul(optarg, NULL, 0);
			break;
		case 'o':
			ord = strtoul(optarg, NULL, 0);
			break;
		case 'x':
			reject = 1;
			break;
		default:
			addr = NULL;
			optind = argc + 1;
			break;
		}
	}
	if (!addr || optind != argc || ird > 255 || ord > 255) {
		fprintf(stderr,
			"usage: %s -c|-s ADDR [-p PORT] [-n N | -t TEXT] "
			"[-r IRD] [-o ORD] [-x]\n",
			argv[0]);
		return 1;
	}
	if (getaddrinfo(addr, port, &hints, &ai)) {
		fprintf(stderr, "siw_pd: bad address %s:%s\n", addr, port);
		return 1;
	}
	ch = rdma_create_event_channel();
	if (!ch) {
		perror("siw_pd: rdma_create_event_channel");
		return 1;
	}
	ret = server ? run_server(ai, (uint8_t)ird, (uint8_t)ord, reject)
		     : run_client(ai, (uint8_t)ird, (uint8_t)ord);
	printf("siw_pd: exit %d\n", ret);
	return ret;
}
