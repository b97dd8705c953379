/* SPDX-License-Identifier: MIT */
/*
 * Progress engine: one thread running an epoll loop, woken by an eventfd.
 *
 * All socket I/O, timers and consumer callbacks of an adapter run on its
 * engine thread (docs/design.md, Threads). Other threads hand work over with
 * ndk_engine_post(); the engine runs posted work in FIFO order.
 *
 * Threading rules:
 *  - ndk_engine_post(), ndk_timer_start() and ndk_timer_cancel() may be
 *    called from any thread, including the engine thread itself.
 *  - ndk_engine_add_fd(), ndk_engine_mod_fd() and ndk_engine_del_fd() may be
 *    called from any thread; after ndk_engine_del_fd() returns on the engine
 *    thread, the handler is never called again for that registration. Off
 *    the engine thread, callers must post a work item that deletes the fd
 *    when they need that guarantee.
 *  - Handlers, work functions and timer functions run on the engine thread,
 *    one at a time, with no engine lock held: they may post, start timers
 *    and add or delete fds.
 */
#ifndef NDK_ENGINE_ENGINE_H
#define NDK_ENGINE_ENGINE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include "core/lock.h"
#include "core/list.h"

struct ndk_engine;

/* A unit of deferred work. Embed it; it must stay valid until run. */
struct ndk_work {
	struct list_head entry;
	void (*fn)(struct ndk_work *work);
	bool queued; /* owned by the engine, under its lock */
};

/* A registered file descriptor. events are EPOLLIN/EPOLLOUT/... bits. */
struct ndk_io {
	int fd;
	void (*fn)(struct ndk_io *io, uint32_t events);
};

/* A one-shot timer on the engine's monotonic clock. */
struct ndk_timer {
	uint64_t deadline_ns; /* CLOCK_MONOTONIC */
	void (*fn)(struct ndk_timer *timer);
	unsigned int heap_index; /* engine-private; 0 = not armed */
};

struct epoll_event;

struct ndk_engine {
	pthread_t thread;
	int epfd;
	int wakefd; /* eventfd */
	/* Protects the work list, the timer heap, stopping and dead. */
	struct ndk_lock lock;
	struct list_head work;
	struct ndk_timer **heap; /* 1-based binary min-heap */
	unsigned int heap_len, heap_cap;
	/* When the engine, about to sleep, wakes by itself at the latest: a
	 * timer due later needs no wake-up. Under lock. */
	uint64_t wake_by_ns;
	bool stopping;
	bool dead; /* thread left its loop: posted work would never run */
	bool running; /* start succeeded and stop has not finished */
	/*
	 * Engine thread only: the epoll batch being dispatched, so that
	 * ndk_engine_del_fd() can drop events not yet handed out.
	 */
	struct epoll_event *ready;
	int nready;
	_Atomic(unsigned long) iterations; /* loop passes, for tests/stats */
};

/* Creates the epoll fd and eventfd and starts the engine thread. */
int ndk_engine_start(struct ndk_engine *e, const char *name);
/*
 * Runs every work item already posted, stops the thread, joins it and
 * releases the fds. Must not be called on the engine thread. Timers still
 * armed are dropped without running.
 */
void ndk_engine_stop(struct ndk_engine *e);
/* True when called on e's engine thread. */
bool ndk_engine_on_thread(const struct ndk_engine *e);

void ndk_work_init(struct ndk_work *w, void (*fn)(struct ndk_work *));
/* A descriptor's handler, before ndk_engine_add registers it. */
void ndk_io_init(struct ndk_io *io, int fd,
		 void (*fn)(struct ndk_io *io, uint32_t events));
/*
 * Queues w unless it is already queued; returns false if it was (or if the
 * engine thread has already exited, in which case w is not queued).
 */
bool ndk_engine_post(struct ndk_engine *e, struct ndk_work *w);
/*
 * Runs fn(arg) on the engine thread and waits for it to return. Runs it
 * directly when already on the engine thread. Returns fn's result, or
 * -ESHUTDOWN if the engine thread has exited.
 */
int ndk_engine_call(struct ndk_engine *e, int (*fn)(void *arg), void *arg);

int ndk_engine_add_fd(struct ndk_engine *e, struct ndk_io *io, uint32_t events);
int ndk_engine_mod_fd(struct ndk_engine *e, struct ndk_io *io, uint32_t events);
int ndk_engine_del_fd(struct ndk_engine *e, struct ndk_io *io);

void ndk_timer_init(struct ndk_timer *t, void (*fn)(struct ndk_timer *));
/* (Re)arms t to fire after ms milliseconds. Returns 0 or -ENOMEM. */
int ndk_timer_start(struct ndk_engine *e, struct ndk_timer *t, uint64_t ms);
/* Disarms t; returns true if it was armed. Harmless if not armed. */
bool ndk_timer_cancel(struct ndk_engine *e, struct ndk_timer *t);
bool ndk_timer_armed(const struct ndk_timer *t);

uint64_t ndk_now_ns(void);

#endif /* NDK_ENGINE_ENGINE_H */
