/* SPDX-License-Identifier: MIT */
/* The adapter's worker thread for blocking rdma_cm calls (worker.h). */
#include <errno.h>
#include "verbs/worker.h"

static void *worker_main(void *arg)
{
	struct ndk_vworker *w = arg;

	ndk_lock(&w->lock);
	for (;;) {
		struct ndk_vjob *job;

		while (list_empty(&w->jobs) && !w->stopping)
			ndk_cond_wait(&w->cond, &w->lock);
		if (list_empty(&w->jobs))
			break;
		job = list_entry(w->jobs.next, struct ndk_vjob, entry);
		list_del(&job->entry);
		ndk_unlock(&w->lock);
		job->fn(job);
		ndk_lock(&w->lock);
	}
	ndk_unlock(&w->lock);
	return NULL;
}

int ndk_vworker_start(struct ndk_vworker *w)
{
	int ret;

	ndk_lock_init(&w->lock, NDK_LOCK_ENGINE);
	ndk_cond_init(&w->cond);
	list_init(&w->jobs);
	w->stopping = false;
	ret = pthread_create(&w->thread, NULL, worker_main, w);
	if (ret)
		return -ret;
	pthread_setname_np(w->thread, "ndk-verbs-cm");
	w->started = true;
	return 0;
}

void ndk_vworker_stop(struct ndk_vworker *w)
{
	if (!w->started)
		return;
	ndk_lock(&w->lock);
	w->stopping = true;
	ndk_cond_signal(&w->cond);
	ndk_unlock(&w->lock);
	pthread_join(w->thread, NULL);
	w->started = false;
	ndk_cond_destroy(&w->cond);
	ndk_lock_destroy(&w->lock);
}

void ndk_vworker_post(struct ndk_vworker *w, struct ndk_vjob *job,
		      void (*fn)(struct ndk_vjob *job))
{
	job->fn = fn;
	ndk_lock(&w->lock);
	list_add_tail(&job->entry, &w->jobs);
	ndk_cond_signal(&w->cond);
	ndk_unlock(&w->lock);
}
