/* SPDX-License-Identifier: MIT */
/*
 * The adapter's worker thread for rdma_cm calls that block: siw's
 * rdma_destroy_id of an id still connecting waits for its MPA timer, so
 * it must run neither on the engine thread (every event of the adapter
 * would wait) nor on the consumer's (no NDK call waits for the network).
 * Jobs run one at a time, in posting order. rdma_connect, which blocks
 * for as long as siw's TCP connect, has a thread of its own
 * (connector_active.c): the adapter's close must not wait for it.
 */
#ifndef NDK_VERBS_WORKER_H
#define NDK_VERBS_WORKER_H

#include <pthread.h>
#include <stdbool.h>
#include "core/list.h"
#include "core/lock.h"

struct ndk_vjob {
	struct list_head entry;
	void (*fn)(struct ndk_vjob *job);
};

struct ndk_vworker {
	pthread_t thread;
	struct ndk_lock lock; /* jobs and stopping */
	struct ndk_cond cond;
	struct list_head jobs;
	bool stopping, started;
};

int ndk_vworker_start(struct ndk_vworker *w);
/* Runs what is queued, then stops and joins the thread. */
void ndk_vworker_stop(struct ndk_vworker *w);
/* Any thread, any lock held (the worker's is innermost but one). */
void ndk_vworker_post(struct ndk_vworker *w, struct ndk_vjob *job,
		      void (*fn)(struct ndk_vjob *job));

#endif /* NDK_VERBS_WORKER_H */
