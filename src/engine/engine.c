/* SPDX-License-Identifier: MIT */
/*
 * Progress engine (docs/design.md, Threads): one pthread per engine running
 * an epoll loop, woken through an eventfd.
 *
 * Locking: e->lock protects the work list, every work item's queued flag,
 * the timer heap (and every armed timer's deadline_ns and heap_index),
 * stopping and dead. It is never held while a handler, work function or
 * timer function runs, so those may call back into the engine. The eventfd
 * is written with the lock held: the engine thread needs the lock to set
 * dead, and stop closes the eventfd only after that, so a waker never
 * writes to a closed (or reused) descriptor.
 *
 * Each loop pass runs the work posted before the pass (work posted during
 * it waits for the next pass, so a self-posting item cannot starve I/O),
 * then the expired timers, then waits in epoll_wait() until the earliest
 * deadline, or not at all when work is pending, and dispatches the events.
 */
#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>

#include "core/lock.h"
#include "core/log.h"
#include "engine/engine.h"

#define ENGINE_MAX_EVENTS 64
#define ENGINE_HEAP_MIN	  16
#define NS_PER_MS	  1000000ull

/* The engine whose thread this is; NULL on every other thread. */
static _Thread_local const struct ndk_engine *engine_current;

uint64_t ndk_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * A thread-local rather than pthread_equal(e->thread): it is valid before
 * pthread_create() has stored the id, and a stopped engine's stale id can
 * never match a new thread that reuses it.
 */
bool ndk_engine_on_thread(const struct ndk_engine *e)
{
	return engine_current == e;
}

/* Lock held (or the engine not yet shared). */
static void engine_wake_locked(struct ndk_engine *e)
{
	uint64_t one = 1;
	ssize_t r;
	int old;

	NDK_ASSERT_LOCKED(&e->lock);

	/*
	 * write() is a cancellation point, and a consumer's thread gets here
	 * from NdkGetCqResults (a poller taking over receiving arms its
	 * backstop timer) with the engine's lock and a QP's lock held: a
	 * pending pthread_cancel would end the thread here and leave both
	 * held for ever (sw/sysio.h says the same of the socket calls).
	 */
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
	/* EAGAIN means the counter is saturated: already readable. */
	do
		r = write(e->wakefd, &one, sizeof(one));
	while (r < 0 && errno == EINTR);
	pthread_setcancelstate(old, NULL);
}

static void engine_drain_wakefd(struct ndk_engine *e)
{
	uint64_t v;
	ssize_t r;

	do
		r = read(e->wakefd, &v, sizeof(v));
	while (r < 0 && errno == EINTR);
}

/* ---- work queue ---- */

void ndk_work_init(struct ndk_work *w, void (*fn)(struct ndk_work *))
{
	list_init(&w->entry);
	w->fn = fn;
	w->queued = false;
}

void ndk_io_init(struct ndk_io *io, int fd,
		 void (*fn)(struct ndk_io *io, uint32_t events))
{
	io->fd = fd;
	io->fn = fn;
}

/* Returns 0, -EALREADY if w is queued, or -ESHUTDOWN if the thread exited. */
static int engine_queue(struct ndk_engine *e, struct ndk_work *w)
{
	bool was_empty;

	ndk_lock(&e->lock);
	if (e->dead) {
		ndk_unlock(&e->lock);
		return -ESHUTDOWN;
	}
	if (w->queued) {
		ndk_unlock(&e->lock);
		return -EALREADY;
	}
	was_empty = list_empty(&e->work);
	w->queued = true;
	list_add_tail(&w->entry, &e->work);
	/*
	 * A non-empty list already has a wake-up pending, and the engine
	 * thread rechecks the list before it sleeps.
	 */
	if (was_empty && !ndk_engine_on_thread(e))
		engine_wake_locked(e);
	ndk_unlock(&e->lock);
	return 0;
}

bool ndk_engine_post(struct ndk_engine *e, struct ndk_work *w)
{
	return engine_queue(e, w) == 0;
}

/* Engine thread: runs the work queued before this call, in FIFO order. */
static void engine_run_work(struct ndk_engine *e)
{
	struct list_head batch;
	struct ndk_work *w;

	ndk_lock(&e->lock);
	if (list_empty(&e->work)) {
		ndk_unlock(&e->lock);
		return;
	}
	/* Move the whole list to batch; items stay queued until run. */
	batch.next = e->work.next;
	batch.prev = e->work.prev;
	batch.next->prev = &batch;
	batch.prev->next = &batch;
	list_init(&e->work);

	while (!list_empty(&batch)) {
		w = list_first_entry(&batch, struct ndk_work, entry);
		list_del(&w->entry);
		/* Cleared before fn runs so that fn may re-post w. */
		w->queued = false;
		ndk_unlock(&e->lock);
		w->fn(w); /* w may be freed now: do not touch it again */
		ndk_lock(&e->lock);
	}
	ndk_unlock(&e->lock);
}

struct engine_call {
	struct ndk_work work;
	int (*fn)(void *arg);
	void *arg;
	int ret;
	bool done;
	struct ndk_lock lock;
	struct ndk_cond cond;
};

static void engine_call_work(struct ndk_work *w)
{
	struct engine_call *c = container_of(w, struct engine_call, work);
	int ret = c->fn(c->arg);

	/* Signal under the lock: the caller frees c as soon as it sees done. */
	ndk_lock(&c->lock);
	c->ret = ret;
	c->done = true;
	ndk_cond_signal(&c->cond);
	ndk_unlock(&c->lock);
}

int ndk_engine_call(struct ndk_engine *e, int (*fn)(void *arg), void *arg)
{
	struct engine_call c = { .fn = fn, .arg = arg };
	int ret;

	if (ndk_engine_on_thread(e))
		return fn(arg);

	ndk_work_init(&c.work, engine_call_work);
	ndk_lock_init(&c.lock, NDK_LOCK_LEAF);
	ndk_cond_init(&c.cond);
	ret = engine_queue(e, &c.work);
	if (!ret) {
		ndk_lock(&c.lock);
		while (!c.done)
			ndk_cond_wait(&c.cond, &c.lock);
		ret = c.ret;
		ndk_unlock(&c.lock);
	}
	ndk_cond_destroy(&c.cond);
	ndk_lock_destroy(&c.lock);
	return ret;
}

/* ---- timers: 1-based binary min-heap on deadline_ns ---- */

/*
 * heap_index is written under e->lock but ndk_timer_armed() reads it
 * without the engine, so both sides use relaxed atomics.
 */
static void timer_set_index(struct ndk_timer *t, unsigned int i)
{
	__atomic_store_n(&t->heap_index, i, __ATOMIC_RELAXED);
}

void ndk_timer_init(struct ndk_timer *t, void (*fn)(struct ndk_timer *))
{
	t->deadline_ns = 0;
	t->fn = fn;
	timer_set_index(t, 0);
}

bool ndk_timer_armed(const struct ndk_timer *t)
{
	return __atomic_load_n(&t->heap_index, __ATOMIC_RELAXED) != 0;
}

static void heap_put(struct ndk_engine *e, unsigned int i, struct ndk_timer *t)
{
	e->heap[i] = t;
	timer_set_index(t, i);
}

static void heap_sift_up(struct ndk_engine *e, unsigned int i)
{
	struct ndk_timer *t = e->heap[i];

	while (i > 1 && e->heap[i / 2]->deadline_ns > t->deadline_ns) {
		heap_put(e, i, e->heap[i / 2]);
		i /= 2;
	}
	heap_put(e, i, t);
}

static void heap_sift_down(struct ndk_engine *e, unsigned int i)
{
	struct ndk_timer *t = e->heap[i];
	unsigned int c;

	for (;;) {
		c = 2 * i;
		if (c > e->heap_len)
			break;
		if (c + 1 <= e->heap_len &&
		    e->heap[c + 1]->deadline_ns < e->heap[c]->deadline_ns)
			c++;
		if (e->heap[c]->deadline_ns >= t->deadline_ns)
			break;
		heap_put(e, i, e->heap[c]);
		i = c;
	}
	heap_put(e, i, t);
}

/* Restores the heap after the deadline at index i changed either way. */
static void heap_fix(struct ndk_engine *e, unsigned int i)
{
	if (i > 1 && e->heap[i / 2]->deadline_ns > e->heap[i]->deadline_ns)
		heap_sift_up(e, i);
	else
		heap_sift_down(e, i);
}

static void heap_remove(struct ndk_engine *e, struct ndk_timer *t)
{
	unsigned int i = t->heap_index;
	struct ndk_timer *last = e->heap[e->heap_len--];

	assert(i && i <= e->heap_len + 1 && e->heap[i] == t);
	timer_set_index(t, 0);
	if (last != t) {
		heap_put(e, i, last);
		heap_fix(e, i);
	}
}

static int heap_grow(struct ndk_engine *e)
{
	unsigned int cap = e->heap_cap ? e->heap_cap * 2 : ENGINE_HEAP_MIN;
	struct ndk_timer **h;

	if (cap < e->heap_cap)
		return -ENOMEM;
	/* +1: slot 0 is unused. */
	h = realloc(e->heap, ((size_t)cap + 1) * sizeof(*h));
	if (!h)
		return -ENOMEM;
	e->heap = h;
	e->heap_cap = cap;
	return 0;
}

int ndk_timer_start(struct ndk_engine *e, struct ndk_timer *t, uint64_t ms)
{
	uint64_t now = ndk_now_ns(), deadline;
	int ret;

	if (ms > (UINT64_MAX - now) / NS_PER_MS)
		deadline = UINT64_MAX;
	else
		deadline = now + ms * NS_PER_MS;

	ndk_lock(&e->lock);
	if (t->heap_index) {
		assert(e->heap[t->heap_index] == t);
		t->deadline_ns = deadline;
		heap_fix(e, t->heap_index);
	} else {
		if (e->heap_len == e->heap_cap) {
			ret = heap_grow(e);
			if (ret) {
				ndk_unlock(&e->lock);
				return ret;
			}
		}
		t->deadline_ns = deadline;
		e->heap_len++;
		heap_put(e, e->heap_len, t);
		heap_sift_up(e, e->heap_len);
	}
	/* A new earliest deadline shortens the engine's current wait, unless
	 * the engine wakes before it anyway (e.g. CM timeouts of seconds). */
	if (t->heap_index == 1 && !ndk_engine_on_thread(e) &&
	    deadline < e->wake_by_ns)
		engine_wake_locked(e);
	ndk_unlock(&e->lock);
	return 0;
}

bool ndk_timer_cancel(struct ndk_engine *e, struct ndk_timer *t)
{
	bool armed;

	ndk_lock(&e->lock);
	armed = t->heap_index != 0;
	if (armed)
		heap_remove(e, t);
	ndk_unlock(&e->lock);
	return armed;
}

/* Engine thread: fires the timers that were due when the pass started. */
static void engine_run_timers(struct ndk_engine *e)
{
	struct ndk_timer *t;
	uint64_t now = ndk_now_ns();
	unsigned int budget;

	ndk_lock(&e->lock);
	/* Bounded, so a timer re-armed with 0 ms waits for the next pass. */
	budget = e->heap_len;
	while (budget-- && e->heap_len && e->heap[1]->deadline_ns <= now) {
		t = e->heap[1];
		heap_remove(e, t);
		ndk_unlock(&e->lock);
		t->fn(t); /* t may be freed now */
		ndk_lock(&e->lock);
	}
	ndk_unlock(&e->lock);
}

/*
 * Lock held: epoll_wait() timeout in ms, rounded up so we never wake
 * early, and at most ENGINE_MAX_SLEEP_MS: an idle engine looks at its
 * timers once a second, so starting a timer due later than that from
 * another thread needs no wake-up. Records when the engine will wake.
 */
#define ENGINE_MAX_SLEEP_MS 1000

static int engine_timeout_locked(struct ndk_engine *e)
{
	uint64_t now = ndk_now_ns(), ms = ENGINE_MAX_SLEEP_MS;

	NDK_ASSERT_LOCKED(&e->lock);

	if (!list_empty(&e->work)) {
		e->wake_by_ns = now;
		return 0;
	}
	if (e->heap_len) {
		uint64_t d = e->heap[1]->deadline_ns;

		if (d <= now) {
			e->wake_by_ns = now;
			return 0;
		}
		ms = MIN(ms, (d - now + NS_PER_MS - 1) / NS_PER_MS);
	}
	e->wake_by_ns = now + ms * NS_PER_MS;
	return (int)ms;
}

/* ---- file descriptors ---- */

static int engine_ctl(struct ndk_engine *e, int op, struct ndk_io *io,
		      uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = io };

	if (epoll_ctl(e->epfd, op, io->fd, &ev))
		return -errno;
	return 0;
}

int ndk_engine_add_fd(struct ndk_engine *e, struct ndk_io *io, uint32_t events)
{
	return engine_ctl(e, EPOLL_CTL_ADD, io, events);
}

int ndk_engine_mod_fd(struct ndk_engine *e, struct ndk_io *io, uint32_t events)
{
	return engine_ctl(e, EPOLL_CTL_MOD, io, events);
}

int ndk_engine_del_fd(struct ndk_engine *e, struct ndk_io *io)
{
	int ret = engine_ctl(e, EPOLL_CTL_DEL, io, 0);

	/*
	 * Events for io may still sit in the batch being dispatched (an
	 * earlier handler is deleting it): drop them, since io may be freed
	 * as soon as we return.
	 */
	if (ndk_engine_on_thread(e)) {
		for (int i = 0; i < e->nready; i++)
			if (e->ready[i].data.ptr == io)
				e->ready[i].data.ptr = NULL;
	}
	return ret;
}

/* ---- thread ---- */

static void engine_dispatch(struct ndk_engine *e, struct epoll_event *ev, int n)
{
	struct ndk_io *io;

	e->ready = ev;
	e->nready = n;
	for (int i = 0; i < n; i++) {
		void *p = ev[i].data.ptr;

		if (!p)
			continue; /* deleted by an earlier handler */
		if (p == &e->wakefd) {
			engine_drain_wakefd(e);
			continue;
		}
		io = p;
		io->fn(io, ev[i].events);
	}
	e->ready = NULL;
	e->nready = 0;
}

static void *engine_main(void *arg)
{
	struct ndk_engine *e = arg;
	struct epoll_event ev[ENGINE_MAX_EVENTS];
	int timeout, n;

	engine_current = e;
	for (;;) {
		atomic_fetch_add_explicit(&e->iterations, 1,
					  memory_order_relaxed);
		engine_run_work(e);
		engine_run_timers(e);

		ndk_lock(&e->lock);
		if (e->stopping && list_empty(&e->work)) {
			/* Checked with the queue under one lock: no post lost. */
			e->dead = true;
			ndk_unlock(&e->lock);
			break;
		}
		timeout = engine_timeout_locked(e);
		ndk_unlock(&e->lock);

		n = epoll_wait(e->epfd, ev, ENGINE_MAX_EVENTS, timeout);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			/* Only a closed or corrupt epfd gets here. */
			ndk_err("engine epoll_wait: %s", strerror(errno));
			abort();
		}
		engine_dispatch(e, ev, n);
	}
	engine_current = NULL;
	return NULL;
}

static void engine_release(struct ndk_engine *e)
{
	if (e->epfd >= 0)
		close(e->epfd);
	if (e->wakefd >= 0)
		close(e->wakefd);
	e->epfd = -1;
	e->wakefd = -1;
	/* Dropped timers read as not armed; their owners may check. */
	for (unsigned int i = 1; i <= e->heap_len; i++)
		timer_set_index(e->heap[i], 0);
	free(e->heap);
	e->heap = NULL;
	e->heap_len = 0;
	e->heap_cap = 0;
	ndk_lock_destroy(&e->lock);
}

int ndk_engine_start(struct ndk_engine *e, const char *name)
{
	struct epoll_event ev = { .events = EPOLLIN };
	sigset_t all, old;
	char tname[16];
	int ret;

	e->epfd = -1;
	e->wakefd = -1;
	list_init(&e->work);
	e->heap = NULL;
	e->heap_len = 0;
	e->heap_cap = 0;
	e->wake_by_ns = 0;
	e->stopping = false;
	e->dead = false;
	e->running = false;
	e->ready = NULL;
	e->nready = 0;
	atomic_init(&e->iterations, 0);
	ndk_lock_init(&e->lock, NDK_LOCK_ENGINE);

	e->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (e->epfd < 0)
		goto fail_errno;
	e->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (e->wakefd < 0)
		goto fail_errno;
	ev.data.ptr = &e->wakefd;
	if (epoll_ctl(e->epfd, EPOLL_CTL_ADD, e->wakefd, &ev))
		goto fail_errno;

	/*
	 * Create the thread with every signal blocked, so it never runs the
	 * consumer's handlers; restore our own mask afterwards.
	 */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = pthread_create(&e->thread, NULL, engine_main, e);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret) {
		ret = -ret;
		goto fail;
	}
	/* Thread names are limited to 15 characters plus the NUL. */
	snprintf(tname, sizeof(tname), "%s", name ? name : "ndk-engine");
	pthread_setname_np(e->thread, tname);
	e->running = true;
	return 0;

fail_errno:
	ret = -errno;
fail:
	engine_release(e);
	return ret;
}

void ndk_engine_stop(struct ndk_engine *e)
{
	/* Not started, start failed, or already stopped. */
	if (!e->running)
		return;
	assert(!ndk_engine_on_thread(e));

	ndk_lock(&e->lock);
	e->stopping = true;
	engine_wake_locked(e);
	ndk_unlock(&e->lock);

	pthread_join(e->thread, NULL);
	engine_release(e);
	e->running = false;
}
