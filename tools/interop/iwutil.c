/* SPDX-License-Identifier: MIT */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <sys/socket.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "iwutil.h"

int iw_debug;
void iw_dbg(const char *fmt, ...)
{
	va_list ap;

	if (!iw_debug)
		return;
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fflush(stdout);
}

static VOID on_cq(PVOID ctx, NTSTATUS status)
{
	struct iw_conn *cn = ctx;

	(void)status;
	pthread_mutex_lock(&cn->lock);
	cn->gen++;
	pthread_cond_broadcast(&cn->cond);
	pthread_mutex_unlock(&cn->lock);
}

void iw_conn_init(struct tool_host *h, struct iw_conn *cn, ULONG rq_depth,
		  ULONG sq_depth)
{
	memset(cn, 0, sizeof(*cn));
	cn->h = h;
	pthread_mutex_init(&cn->lock, NULL);
	pthread_cond_init(&cn->cond, NULL);
	tool_wait_init(&cn->disc);
	tool_check("NdkCreateCq", h->ad->Dispatch->NdkCreateCq(
					  h->ad, rq_depth + sq_depth, on_cq, cn,
					  NULL, NULL, NULL, &cn->cq));
	tool_check("NdkCreateQp",
		   h->pd->Dispatch->NdkCreateQp(h->pd, cn->cq, cn->cq, cn,
						rq_depth, sq_depth, 1, 1, 0,
						NULL, NULL, &cn->qp));
}

VOID iw_on_disconnect(PVOID ctx, ULONG reason)
{
	struct iw_conn *cn = ctx;

	iw_dbg("disconnect event (ProviderDisconnectReason %u)\n", reason);
	pthread_mutex_lock(&cn->lock);
	cn->disconnected = true;
	cn->gen++;
	pthread_cond_broadcast(&cn->cond);
	pthread_mutex_unlock(&cn->lock);
	tool_wait_fire(&cn->disc, STATUS_SUCCESS);
}

bool iw_conn_disconnected(struct iw_conn *cn)
{
	bool d;

	pthread_mutex_lock(&cn->lock);
	d = cn->disconnected;
	pthread_mutex_unlock(&cn->lock);
	return d;
}

void iw_conn_close(struct iw_conn *cn)
{
	struct tool_wait w;
	NTSTATUS st;

	if (cn->c) {
		tool_wait_init(&w);
		st = cn->c->Dispatch->NdkDisconnect(cn->c, tool_wait_done, &w);
		st = tool_wait_result(&w, st, 30000);
		iw_dbg("NdkDisconnect: %s\n", NdkStatusName(st));
		TOOL_CLOSE(cn->c);
		cn->c = NULL;
	}
	if (cn->qp) {
		TOOL_CLOSE(cn->qp);
		cn->qp = NULL;
	}
	if (cn->cq) {
		TOOL_CLOSE(cn->cq);
		cn->cq = NULL;
	}
}

int iw_cq_next(struct iw_conn *cn, NDK_RESULT_EX *res, unsigned int ms)
{
	struct timespec ts = tool_deadline(ms);
	NDK_CQ *cq = cn->cq;
	unsigned long gen;
	int rc;

	for (;;) {
		if (cq->Dispatch->NdkGetCqResultsEx(cq, res, 1))
			return 1;
		pthread_mutex_lock(&cn->lock);
		gen = cn->gen;
		pthread_mutex_unlock(&cn->lock);
		/* Arm, then look again: a completion queued before the arm
		 * does not notify (NDK arm semantics). */
		cq->Dispatch->NdkArmCq(cq, NDK_CQ_NOTIFY_ANY);
		if (cq->Dispatch->NdkGetCqResultsEx(cq, res, 1))
			return 1;
		rc = 2;
		pthread_mutex_lock(&cn->lock);
		while (cn->gen == gen && !cn->disconnected) {
			if (!ms) {
				pthread_cond_wait(&cn->cond, &cn->lock);
			} else if (pthread_cond_timedwait(&cn->cond, &cn->lock,
							  &ts) == ETIMEDOUT) {
				rc = 0;
				break;
			}
		}
		if (cn->disconnected)
			rc = -1;
		pthread_mutex_unlock(&cn->lock);
		if (rc != 2) {
			/* Last look: the disconnect may trail completions. */
			if (cq->Dispatch->NdkGetCqResultsEx(cq, res, 1))
				return 1;
			return rc;
		}
	}
}

void iw_print_connection_data(const char *who, NDK_CONNECTOR *c)
{
	unsigned char pd[256];
	char hex[3 * sizeof(pd) + 1], txt[sizeof(pd) + 1];
	ULONG len = sizeof(pd), ird = 0, ord = 0, i;
	NTSTATUS st;

	st = c->Dispatch->NdkGetConnectionData(c, &ird, &ord, pd, &len);
	if (!NT_SUCCESS(st)) {
		printf("%s: NdkGetConnectionData: %s\n", who,
		       NdkStatusName(st));
		return;
	}
	for (i = 0; i < len && i < sizeof(pd); i++) {
		sprintf(hex + 3 * i, " %02x", pd[i]);
		txt[i] = pd[i] >= 0x20 && pd[i] < 0x7f ? (char)pd[i] : '.';
	}
	hex[3 * i] = 0;
	txt[i] = 0;
	if (len)
		printf("%s: IRD %u ORD %u, peer private data %u bytes:%s \"%s\"\n",
		       who, ird, ord, len, hex, txt);
	else
		printf("%s: IRD %u ORD %u, peer private data 0 bytes\n", who,
		       ird, ord);
	fflush(stdout);
}

void iw_rtr_delay(unsigned int ms)
{
	struct timespec d = { ms / 1000, (long)(ms % 1000) * 1000000L };

	if (!ms)
		return;
	iw_dbg("waiting %u ms before CompleteConnect\n", ms);
	nanosleep(&d, NULL);
}
