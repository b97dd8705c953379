/* SPDX-License-Identifier: MIT */
/*
 * Progress engine: work queue (thread, FIFO, once-only queueing, re-posting,
 * concurrent posters), ndk_engine_call(), timers (order, cancel, restart,
 * arming from timer functions, concurrent start/cancel), fd readiness and
 * deletion, and stop (drains work, drops timers, idempotent).
 *
 * Engine-side code never calls cmocka asserts (they longjmp on failure):
 * it records what it saw in atomics and the test thread checks them. Every
 * wait is bounded; ordering checks rely on the engine's own guarantees,
 * never on sleeping "long enough".
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>

#include "engine/engine.h"
#include "testutil.h"

#define WAIT_MS 2000

static bool atomic_true(void *arg)
{
	return atomic_load((atomic_bool *)arg);
}

struct count_goal {
	atomic_int *count;
	int goal;
};

static bool count_reached(void *arg)
{
	struct count_goal *g = arg;

	return atomic_load(g->count) >= g->goal;
}

static bool wait_count(atomic_int *count, int goal)
{
	struct count_goal g = { count, goal };

	return tu_wait_until(count_reached, &g, WAIT_MS);
}

/*
 * Holds the engine thread inside a work function until opened, so the test
 * can queue work, arm timers or make fds ready while nothing is dispatched.
 */
struct gate {
	struct ndk_work work;
	atomic_bool entered;
	atomic_bool open;
};

static void gate_fn(struct ndk_work *w)
{
	struct gate *g = container_of(w, struct gate, work);

	atomic_store(&g->entered, true);
	tu_wait_until(atomic_true, &g->open, 5000);
}

static void gate_close(struct ndk_engine *e, struct gate *g)
{
	ndk_work_init(&g->work, gate_fn);
	atomic_init(&g->entered, false);
	atomic_init(&g->open, false);
	assert_true(ndk_engine_post(e, &g->work));
	assert_true(tu_wait_until(atomic_true, &g->entered, WAIT_MS));
}

static void gate_open(struct gate *g)
{
	atomic_store(&g->open, true);
}

static int setup(void **state)
{
	struct ndk_engine *e = calloc(1, sizeof(*e));

	if (!e || ndk_engine_start(e, "ndk-test-engine-long-name")) {
		free(e);
		return -1;
	}
	*state = e;
	return 0;
}

static int teardown(void **state)
{
	struct ndk_engine *e = *state;

	ndk_engine_stop(e);
	free(e);
	return 0;
}

/*
 * Runs on the engine thread; returns heap_len so tests can check it. Also
 * the round trip that proves everything queued before it has run.
 */
static int heap_len_fn(void *arg)
{
	struct ndk_engine *e = arg;
	unsigned int n;

	ndk_lock(&e->lock);
	n = e->heap_len;
	ndk_unlock(&e->lock);
	return (int)n;
}

/* From any thread, also while the engine is held by a gate. */
static unsigned int heap_len_now(struct ndk_engine *e)
{
	return (unsigned int)heap_len_fn(e);
}

/* ---- work ---- */

struct probe {
	struct ndk_work work;
	struct ndk_engine *e;
	atomic_int runs;
	atomic_bool on_thread;
	pthread_t tid;
};

static void probe_fn(struct ndk_work *w)
{
	struct probe *p = container_of(w, struct probe, work);

	p->tid = pthread_self();
	atomic_store(&p->on_thread, ndk_engine_on_thread(p->e));
	atomic_fetch_add(&p->runs, 1);
}

static void test_post_runs_on_engine_thread(void **state)
{
	struct ndk_engine *e = *state;
	struct probe p = { .e = e };

	assert_false(ndk_engine_on_thread(e));
	ndk_work_init(&p.work, probe_fn);
	assert_true(ndk_engine_post(e, &p.work));
	assert_true(wait_count(&p.runs, 1));
	assert_true(atomic_load(&p.on_thread));
	assert_true(pthread_equal(p.tid, e->thread));
	assert_false(pthread_equal(p.tid, pthread_self()));
	assert_false(p.work.queued);
}

struct seq_item {
	struct ndk_work work;
	int id;
};

static int seq_order[256];
static atomic_int seq_count;

static void seq_fn(struct ndk_work *w)
{
	struct seq_item *it = container_of(w, struct seq_item, work);
	int n = atomic_load_explicit(&seq_count, memory_order_relaxed);

	seq_order[n] = it->id;
	atomic_store_explicit(&seq_count, n + 1, memory_order_release);
}

static void test_fifo_order(void **state)
{
	struct ndk_engine *e = *state;
	struct seq_item items[200];
	struct gate g;

	atomic_store(&seq_count, 0);
	/* Half queued behind a closed gate, half while the engine runs. */
	gate_close(e, &g);
	for (int i = 0; i < 200; i++) {
		items[i].id = i;
		ndk_work_init(&items[i].work, seq_fn);
		assert_true(ndk_engine_post(e, &items[i].work));
		if (i == 99)
			gate_open(&g);
	}
	assert_true(wait_count(&seq_count, 200));
	for (int i = 0; i < 200; i++)
		assert_int_equal(seq_order[i], i);
}

static void test_double_post_runs_once(void **state)
{
	struct ndk_engine *e = *state;
	struct probe p = { .e = e };
	struct gate g;

	ndk_work_init(&p.work, probe_fn);
	gate_close(e, &g);
	assert_true(ndk_engine_post(e, &p.work));
	assert_false(ndk_engine_post(e, &p.work));
	assert_false(ndk_engine_post(e, &p.work));
	gate_open(&g);
	assert_true(wait_count(&p.runs, 1));
	/* A round trip: anything still queued would have run by now. */
	assert_int_equal(ndk_engine_call(e, heap_len_fn, e), 0);
	assert_int_equal(atomic_load(&p.runs), 1);

	/* Once run, it can be queued again. */
	assert_true(ndk_engine_post(e, &p.work));
	assert_true(wait_count(&p.runs, 2));
}

struct repost {
	struct ndk_work work;
	struct ndk_engine *e;
	atomic_int runs;
	atomic_int bad; /* re-post refused, or ran off the engine thread */
};

static void repost_fn(struct ndk_work *w)
{
	struct repost *r = container_of(w, struct repost, work);

	if (!ndk_engine_on_thread(r->e))
		atomic_fetch_add(&r->bad, 1);
	if (atomic_fetch_add(&r->runs, 1) + 1 < 100 &&
	    !ndk_engine_post(r->e, &r->work))
		atomic_fetch_add(&r->bad, 1);
}

static void test_work_reposts_itself(void **state)
{
	struct ndk_engine *e = *state;
	struct repost r = { .e = e };
	unsigned long it0 = atomic_load(&e->iterations);

	ndk_work_init(&r.work, repost_fn);
	assert_true(ndk_engine_post(e, &r.work));
	assert_true(wait_count(&r.runs, 100));
	assert_int_equal(ndk_engine_call(e, heap_len_fn, e), 0);
	assert_int_equal(atomic_load(&r.runs), 100);
	assert_int_equal(atomic_load(&r.bad), 0);
	/*
	 * Each re-post waits for the next loop pass (I/O is not starved); the
	 * first run may share a pass that began before it0 was read.
	 */
	assert_true(atomic_load(&e->iterations) - it0 >= 99);
}

/* ---- many posters ---- */

#define POSTERS		 4
#define POSTS_PER_THREAD 10000

struct counted {
	struct ndk_work work;
	int runs; /* engine thread only */
};

static atomic_int total_runs;

static void counted_fn(struct ndk_work *w)
{
	struct counted *c = container_of(w, struct counted, work);

	c->runs++;
	atomic_fetch_add_explicit(&total_runs, 1, memory_order_release);
}

struct poster {
	struct ndk_engine *e;
	struct counted *items;
	int refused;
};

static void *poster_main(void *arg)
{
	struct poster *p = arg;

	for (int i = 0; i < POSTS_PER_THREAD; i++) {
		ndk_work_init(&p->items[i].work, counted_fn);
		if (!ndk_engine_post(p->e, &p->items[i].work))
			p->refused++;
	}
	return NULL;
}

static bool total_done(void *arg)
{
	(void)arg;
	return atomic_load_explicit(&total_runs, memory_order_acquire) >=
	       POSTERS * POSTS_PER_THREAD;
}

static void test_concurrent_posters(void **state)
{
	struct ndk_engine *e = *state;
	struct counted *items =
		calloc(POSTERS * POSTS_PER_THREAD, sizeof(*items));
	struct poster posters[POSTERS];
	pthread_t th[POSTERS];

	assert_non_null(items);
	atomic_store(&total_runs, 0);
	for (int t = 0; t < POSTERS; t++) {
		posters[t] = (struct poster){
			.e = e,
			.items = items + t * POSTS_PER_THREAD,
		};
		assert_int_equal(
			pthread_create(&th[t], NULL, poster_main, &posters[t]),
			0);
	}
	for (int t = 0; t < POSTERS; t++) {
		assert_int_equal(pthread_join(th[t], NULL), 0);
		assert_int_equal(posters[t].refused, 0);
	}
	assert_true(tu_wait_until(total_done, NULL, 10000));
	assert_int_equal(ndk_engine_call(e, heap_len_fn, e), 0);
	assert_int_equal(atomic_load(&total_runs), POSTERS * POSTS_PER_THREAD);
	for (int i = 0; i < POSTERS * POSTS_PER_THREAD; i++)
		assert_int_equal(items[i].runs, 1);
	free(items);
}

/* ---- ndk_engine_call ---- */

struct call_arg {
	struct ndk_engine *e;
	bool on_thread;
	bool inner_ran;
};

static int inner_fn(void *arg)
{
	struct call_arg *c = arg;

	c->inner_ran = true;
	return ndk_engine_on_thread(c->e) ? 7 : -1;
}

static int outer_fn(void *arg)
{
	struct call_arg *c = arg;
	int r;

	c->on_thread = ndk_engine_on_thread(c->e);
	/* Would deadlock unless run inline on the engine thread. */
	r = ndk_engine_call(c->e, inner_fn, c);
	return c->inner_ran ? r * 6 : -2;
}

static void test_call(void **state)
{
	struct ndk_engine *e = *state;
	struct call_arg c = { .e = e };

	assert_int_equal(ndk_engine_call(e, outer_fn, &c), 42);
	assert_true(c.on_thread);
	assert_true(c.inner_ran);
}

/* Negative errno results pass through unchanged. */
static int neg_fn(void *arg)
{
	(void)arg;
	return -ETIMEDOUT;
}

struct thread_info {
	char name[32];
	bool sigs_blocked;
};

static int thread_info_fn(void *arg)
{
	struct thread_info *ti = arg;
	sigset_t set;

	pthread_getname_np(pthread_self(), ti->name, sizeof(ti->name));
	pthread_sigmask(SIG_BLOCK, NULL, &set);
	ti->sigs_blocked = sigismember(&set, SIGINT) == 1 &&
			   sigismember(&set, SIGTERM) == 1 &&
			   sigismember(&set, SIGUSR1) == 1;
	return 0;
}

static void test_call_result_and_thread_setup(void **state)
{
	struct ndk_engine *e = *state;
	struct thread_info ti = { 0 };
	sigset_t set;

	assert_int_equal(ndk_engine_call(e, neg_fn, NULL), -ETIMEDOUT);
	assert_int_equal(ndk_engine_call(e, thread_info_fn, &ti), 0);
	/* Truncated to the kernel's 15 characters. */
	assert_string_equal(ti.name, "ndk-test-engine");
	assert_true(ti.sigs_blocked);
	/* The caller's own mask is untouched. */
	pthread_sigmask(SIG_BLOCK, NULL, &set);
	assert_int_equal(sigismember(&set, SIGUSR1), 0);
}

/* ---- timers ---- */

#define NTIMERS 64

struct rec_timer {
	struct ndk_timer timer;
	struct ndk_engine *e;
	uint64_t fired_ns;
	int id;
	int next_ms; /* > 0: re-arm itself with this while runs < limit */
	int limit;
	atomic_int runs;
	struct rec_timer *chain; /* armed from this timer's fn */
};

static int fire_order[NTIMERS * 2];
static atomic_int fire_count;
static atomic_int timer_bad;

static void rec_timer_fn(struct ndk_timer *t)
{
	struct rec_timer *r = container_of(t, struct rec_timer, timer);
	int n = atomic_load_explicit(&fire_count, memory_order_relaxed);
	int runs;

	if (!ndk_engine_on_thread(r->e) || ndk_timer_armed(t))
		atomic_fetch_add(&timer_bad, 1);
	r->fired_ns = ndk_now_ns();
	if (r->fired_ns < t->deadline_ns)
		atomic_fetch_add(&timer_bad, 1); /* fired early */
	runs = atomic_fetch_add(&r->runs, 1) + 1;
	if (r->next_ms > 0 && runs < r->limit &&
	    ndk_timer_start(r->e, t, (uint64_t)r->next_ms))
		atomic_fetch_add(&timer_bad, 1);
	if (r->chain && ndk_timer_start(r->e, &r->chain->timer, 5))
		atomic_fetch_add(&timer_bad, 1);
	if (n < NTIMERS * 2)
		fire_order[n] = r->id;
	atomic_store_explicit(&fire_count, n + 1, memory_order_release);
}

static void rec_init(struct rec_timer *r, struct ndk_engine *e, int id)
{
	memset(r, 0, sizeof(*r));
	ndk_timer_init(&r->timer, rec_timer_fn);
	r->e = e;
	r->id = id;
}

static void timers_reset(void)
{
	atomic_store(&fire_count, 0);
	atomic_store(&timer_bad, 0);
}

static void test_timers_fire_in_deadline_order(void **state)
{
	struct ndk_engine *e = *state;
	static struct rec_timer r[NTIMERS];
	uint32_t rng = 12345;
	struct gate g;

	timers_reset();
	/* Arm everything with the engine held, so all are in the heap. */
	gate_close(e, &g);
	for (int i = 0; i < NTIMERS; i++) {
		rec_init(&r[i], e, i);
		rng = rng * 1103515245u + 12345u;
		assert_int_equal(
			ndk_timer_start(e, &r[i].timer, 1 + (rng >> 16) % 40),
			0);
		assert_true(ndk_timer_armed(&r[i].timer));
	}
	assert_int_equal(heap_len_now(e), NTIMERS);
	gate_open(&g);
	assert_true(wait_count(&fire_count, NTIMERS));
	assert_int_equal(atomic_load(&timer_bad), 0);
	for (int i = 1; i < NTIMERS; i++)
		assert_true(r[fire_order[i - 1]].timer.deadline_ns <=
			    r[fire_order[i]].timer.deadline_ns);
	for (int i = 0; i < NTIMERS; i++) {
		assert_int_equal(atomic_load(&r[i].runs), 1);
		assert_false(ndk_timer_armed(&r[i].timer));
	}
	assert_int_equal(ndk_engine_call(e, heap_len_fn, e), 0);
}

static void test_timers_explicit_order(void **state)
{
	struct ndk_engine *e = *state;
	struct rec_timer a, b, c;
	struct gate g;

	timers_reset();
	rec_init(&a, e, 'a');
	rec_init(&b, e, 'b');
	rec_init(&c, e, 'c');
	gate_close(e, &g);
	assert_int_equal(ndk_timer_start(e, &a.timer, 150), 0);
	assert_int_equal(ndk_timer_start(e, &b.timer, 50), 0);
	assert_int_equal(ndk_timer_start(e, &c.timer, 100), 0);
	gate_open(&g);
	assert_true(wait_count(&fire_count, 3));
	assert_int_equal(atomic_load(&timer_bad), 0);
	assert_int_equal(fire_order[0], 'b');
	assert_int_equal(fire_order[1], 'c');
	assert_int_equal(fire_order[2], 'a');
}

/*
 * An idle engine wakes by itself at least once a second, so a timer due
 * later, started from another thread, does not wake it; a sooner one does
 * and fires on time. Both fire, never early.
 */
static void test_timer_wakes_only_when_sooner(void **state)
{
	struct ndk_engine *e = *state;
	struct rec_timer far, near;
	unsigned long it0;
	uint64_t t0;

	timers_reset();
	rec_init(&far, e, 'f');
	rec_init(&near, e, 'n');
	/* Let the engine go to sleep. */
	assert_int_equal(ndk_engine_call(e, heap_len_fn, e), 0);
	tu_sleep_ms(20);
	it0 = atomic_load(&e->iterations);
	t0 = ndk_now_ns();
	/* Started (and restarted) four times: no wake-up for any. */
	for (int i = 0; i < 4; i++) {
		assert_int_equal(ndk_timer_start(e, &far.timer, 1500), 0);
		tu_sleep_ms(10);
	}
	/* At most the once-a-second look. */
	assert_true(atomic_load(&e->iterations) - it0 <= 1);
	assert_int_equal(ndk_timer_start(e, &near.timer, 10), 0);
	assert_true(wait_count(&fire_count, 1));
	assert_int_equal(fire_order[0], 'n');
	/* Woken for it: well before the engine's own next look. */
	assert_true(near.fired_ns - t0 < 500 * 1000000ull);
	assert_true(wait_count(&fire_count, 2));
	assert_int_equal(fire_order[1], 'f');
	assert_true(far.fired_ns - t0 >= 1500 * 1000000ull);
	assert_int_equal(atomic_load(&timer_bad), 0);
}

static void test_timer_cancel(void **state)
{
	struct ndk_engine *e = *state;
	struct rec_timer early, late;
	struct gate g;

	timers_reset();
	rec_init(&early, e, 1);
	rec_init(&late, e, 2);
	assert_false(ndk_timer_cancel(e, &early.timer));
	/* Held, so early cannot fire before it is cancelled. */
	gate_close(e, &g);
	assert_int_equal(ndk_timer_start(e, &early.timer, 20), 0);
	assert_int_equal(ndk_timer_start(e, &late.timer, 40), 0);
	assert_true(ndk_timer_cancel(e, &early.timer));
	assert_false(ndk_timer_armed(&early.timer));
	assert_false(ndk_timer_cancel(e, &early.timer));
	assert_int_equal(heap_len_now(e), 1);
	gate_open(&g);
	/* Timers fire in order: had early survived, it would come first. */
	assert_true(wait_count(&late.runs, 1));
	assert_int_equal(atomic_load(&early.runs), 0);
	assert_int_equal(atomic_load(&fire_count), 1);
	assert_int_equal(atomic_load(&timer_bad), 0);
	assert_int_equal(ndk_engine_call(e, heap_len_fn, e), 0);
}

static void test_timer_restart(void **state)
{
	struct ndk_engine *e = *state;
	struct rec_timer sooner, later, marker;
	struct gate g;

	timers_reset();
	rec_init(&sooner, e, 's');
	rec_init(&later, e, 'l');
	rec_init(&marker, e, 'm');
	gate_close(e, &g);
	/* Moved earlier: from 60 s to 10 ms. */
	assert_int_equal(ndk_timer_start(e, &sooner.timer, 60000), 0);
	assert_int_equal(ndk_timer_start(e, &sooner.timer, 10), 0);
	/* Moved later: from 1 ms to 80 ms, past the 40 ms marker. */
	assert_int_equal(ndk_timer_start(e, &later.timer, 1), 0);
	assert_int_equal(ndk_timer_start(e, &marker.timer, 40), 0);
	assert_int_equal(ndk_timer_start(e, &later.timer, 80), 0);
	/* Restarting an armed timer does not add a second heap entry. */
	assert_int_equal(heap_len_now(e), 3);
	gate_open(&g);
	assert_true(wait_count(&fire_count, 3));
	assert_int_equal(fire_order[0], 's');
	assert_int_equal(fire_order[1], 'm');
	assert_int_equal(fire_order[2], 'l');
	assert_int_equal(atomic_load(&sooner.runs), 1);
	assert_int_equal(atomic_load(&later.runs), 1);
	assert_int_equal(atomic_load(&timer_bad), 0);
}

static void test_timer_started_from_timer_fn(void **state)
{
	struct ndk_engine *e = *state;
	struct rec_timer first, second, periodic;

	timers_reset();
	rec_init(&first, e, 1);
	rec_init(&second, e, 2);
	rec_init(&periodic, e, 3);
	first.chain = &second;
	periodic.next_ms = 1;
	periodic.limit = 5;
	assert_int_equal(ndk_timer_start(e, &first.timer, 5), 0);
	assert_int_equal(ndk_timer_start(e, &periodic.timer, 0), 0);
	assert_true(wait_count(&second.runs, 1));
	assert_true(wait_count(&periodic.runs, 5));
	assert_int_equal(ndk_engine_call(e, heap_len_fn, e), 0);
	assert_int_equal(atomic_load(&periodic.runs), 5);
	assert_int_equal(atomic_load(&first.runs), 1);
	assert_int_equal(atomic_load(&timer_bad), 0);
}

/* Timer memory freed by its own fn: the engine must not touch it after. */
static atomic_int freed_fires;

static void free_self_timer_fn(struct ndk_timer *t)
{
	free(t);
	atomic_fetch_add(&freed_fires, 1);
}

static void free_self_work_fn(struct ndk_work *w)
{
	free(w);
	atomic_fetch_add(&freed_fires, 1);
}

static void test_items_freed_by_their_fn(void **state)
{
	struct ndk_engine *e = *state;

	atomic_store(&freed_fires, 0);
	for (int i = 0; i < 8; i++) {
		struct ndk_timer *t = malloc(sizeof(*t));
		struct ndk_work *w = malloc(sizeof(*w));

		assert_non_null(t);
		assert_non_null(w);
		ndk_timer_init(t, free_self_timer_fn);
		assert_int_equal(ndk_timer_start(e, t, (uint64_t)i % 3), 0);
		ndk_work_init(w, free_self_work_fn);
		assert_true(ndk_engine_post(e, w));
	}
	assert_true(wait_count(&freed_fires, 16));
}

/* Two threads arm and cancel their own timers at random. */
struct churn {
	struct ndk_engine *e;
	struct ndk_timer t[16];
	uint32_t rng;
};

/* Reads nothing in t: its owner may be re-arming it right now. */
static void churn_timer_fn(struct ndk_timer *t)
{
	(void)t;
	atomic_fetch_add(&fire_count, 1);
}

static void *churn_main(void *arg)
{
	struct churn *c = arg;

	for (int i = 0; i < 3000; i++) {
		struct ndk_timer *t;

		c->rng = c->rng * 1103515245u + 12345u;
		t = &c->t[(c->rng >> 16) % 16];
		if (c->rng & 0x100)
			ndk_timer_cancel(c->e, t);
		else
			ndk_timer_start(c->e, t, (c->rng >> 24) % 4);
	}
	for (int i = 0; i < 16; i++)
		ndk_timer_cancel(c->e, &c->t[i]);
	return NULL;
}

static void test_concurrent_timer_churn(void **state)
{
	struct ndk_engine *e = *state;
	static struct churn c[2];
	pthread_t th[2];
	int fired;

	timers_reset();
	for (int k = 0; k < 2; k++) {
		c[k].e = e;
		c[k].rng = 77u + (uint32_t)k;
		for (int i = 0; i < 16; i++)
			ndk_timer_init(&c[k].t[i], churn_timer_fn);
		assert_int_equal(
			pthread_create(&th[k], NULL, churn_main, &c[k]), 0);
	}
	for (int k = 0; k < 2; k++)
		assert_int_equal(pthread_join(th[k], NULL), 0);
	assert_int_equal(ndk_engine_call(e, heap_len_fn, e), 0);
	/* All cancelled: a later round trip sees no further firing. */
	fired = atomic_load(&fire_count);
	assert_int_equal(ndk_engine_call(e, heap_len_fn, e), 0);
	assert_int_equal(atomic_load(&fire_count), fired);
	assert_int_equal(atomic_load(&timer_bad), 0);
}

/* ---- file descriptors ---- */

struct pipe_io {
	struct ndk_io io;
	struct ndk_engine *e;
	struct pipe_io *victim; /* deleted by this handler */
	int wfd;
	atomic_int calls;
	atomic_uint last_events;
};

static void pipe_io_fn(struct ndk_io *io, uint32_t events)
{
	struct pipe_io *p = container_of(io, struct pipe_io, io);
	char buf[16];

	/* Drain before counting: a poke seen after the count must wake us. */
	if (events & EPOLLIN)
		while (read(io->fd, buf, sizeof(buf)) > 0)
			;
	if (p->victim)
		ndk_engine_del_fd(p->e, &p->victim->io);
	atomic_store(&p->last_events, events);
	atomic_fetch_add(&p->calls, 1);
}

static void pipe_io_open(struct pipe_io *p, struct ndk_engine *e)
{
	int fds[2];

	memset(p, 0, sizeof(*p));
	assert_int_equal(pipe2(fds, O_NONBLOCK | O_CLOEXEC), 0);
	p->io.fd = fds[0];
	p->io.fn = pipe_io_fn;
	p->wfd = fds[1];
	p->e = e;
}

static void pipe_io_close(struct pipe_io *p)
{
	close(p->io.fd);
	close(p->wfd);
}

static void poke(struct pipe_io *p)
{
	assert_int_equal(write(p->wfd, "x", 1), 1);
}

static int del_fd_fn(void *arg)
{
	struct pipe_io *p = arg;

	return ndk_engine_del_fd(p->e, &p->io);
}

static void test_fd_readiness_and_del(void **state)
{
	struct ndk_engine *e = *state;
	struct pipe_io p;
	int calls;

	pipe_io_open(&p, e);
	assert_int_equal(ndk_engine_add_fd(e, &p.io, EPOLLIN), 0);
	assert_int_equal(ndk_engine_add_fd(e, &p.io, EPOLLIN), -EEXIST);
	poke(&p);
	assert_true(wait_count(&p.calls, 1));
	assert_true(atomic_load(&p.last_events) & EPOLLIN);
	poke(&p);
	assert_true(wait_count(&p.calls, 2));

	/* Deleted on the engine thread: no call after it returns. */
	assert_int_equal(ndk_engine_call(e, del_fd_fn, &p), 0);
	calls = atomic_load(&p.calls);
	poke(&p);
	/*
	 * The pipe is readable before each call's eventfd wake-up, so a
	 * still-registered pipe would be reported in the same epoll_wait.
	 */
	assert_int_equal(ndk_engine_call(e, heap_len_fn, e), 0);
	assert_int_equal(ndk_engine_call(e, heap_len_fn, e), 0);
	assert_int_equal(atomic_load(&p.calls), calls);
	assert_int_equal(ndk_engine_call(e, del_fd_fn, &p), -ENOENT);
	pipe_io_close(&p);
}

static void test_fd_mod(void **state)
{
	struct ndk_engine *e = *state;
	struct pipe_io p, w;

	/* Register the write end with no events, then ask for EPOLLOUT. */
	pipe_io_open(&p, e);
	memset(&w, 0, sizeof(w));
	w.io = (struct ndk_io){ .fd = p.wfd, .fn = pipe_io_fn };
	w.e = e;
	assert_int_equal(ndk_engine_add_fd(e, &w.io, 0), 0);
	assert_int_equal(ndk_engine_call(e, heap_len_fn, e), 0);
	assert_int_equal(atomic_load(&w.calls), 0);
	/* Edge-triggered: a writable pipe would otherwise report every pass. */
	assert_int_equal(ndk_engine_mod_fd(e, &w.io, EPOLLOUT | EPOLLET), 0);
	assert_true(wait_count(&w.calls, 1));
	assert_true(atomic_load(&w.last_events) & EPOLLOUT);
	assert_int_equal(ndk_engine_call(e, del_fd_fn, &w), 0);
	/* The read end was never registered. */
	assert_int_equal(ndk_engine_mod_fd(e, &p.io, EPOLLIN), -ENOENT);
	pipe_io_close(&p);
}

static bool either_called(void *arg)
{
	struct pipe_io **p = arg;

	return atomic_load(&p[0]->calls) + atomic_load(&p[1]->calls) > 0;
}

static void test_del_fd_from_handler_in_same_batch(void **state)
{
	struct ndk_engine *e = *state;
	struct pipe_io a, b;
	struct gate g;

	pipe_io_open(&a, e);
	pipe_io_open(&b, e);
	a.victim = &b;
	b.victim = &a;
	assert_int_equal(ndk_engine_add_fd(e, &a.io, EPOLLIN), 0);
	assert_int_equal(ndk_engine_add_fd(e, &b.io, EPOLLIN), 0);
	/* Both become ready while the engine is held: one epoll batch. */
	gate_close(e, &g);
	poke(&a);
	poke(&b);
	gate_open(&g);
	assert_true(tu_wait_until(either_called, (struct pipe_io *[]){ &a, &b },
				  WAIT_MS));
	assert_int_equal(ndk_engine_call(e, heap_len_fn, e), 0);
	assert_int_equal(ndk_engine_call(e, heap_len_fn, e), 0);
	/* Whichever ran first deleted the other, which must not run. */
	assert_int_equal(atomic_load(&a.calls) + atomic_load(&b.calls), 1);
	if (atomic_load(&a.calls))
		assert_int_equal(ndk_engine_call(e, del_fd_fn, &a), 0);
	else
		assert_int_equal(ndk_engine_call(e, del_fd_fn, &b), 0);
	pipe_io_close(&a);
	pipe_io_close(&b);
}

/* ---- stop ---- */

static void test_stop_drains_and_drops_timers(void **state)
{
	struct ndk_engine e;
	struct seq_item items[100];
	struct repost r = { .e = &e };
	struct rec_timer t;
	struct gate g;
	(void)state;

	memset(&e, 0, sizeof(e));
	assert_int_equal(ndk_engine_start(&e, "ndk-stop"), 0);
	atomic_store(&seq_count, 0);
	timers_reset();
	rec_init(&t, &e, 1);
	assert_int_equal(ndk_timer_start(&e, &t.timer, 60000), 0);

	gate_close(&e, &g);
	for (int i = 0; i < 100; i++) {
		items[i].id = i;
		ndk_work_init(&items[i].work, seq_fn);
		assert_true(ndk_engine_post(&e, &items[i].work));
	}
	/* Work posted by the drained work runs as well. */
	ndk_work_init(&r.work, repost_fn);
	assert_true(ndk_engine_post(&e, &r.work));
	gate_open(&g);
	ndk_engine_stop(&e);

	/* Everything posted ran; no wait needed after the join. */
	assert_int_equal(atomic_load(&seq_count), 100);
	for (int i = 0; i < 100; i++)
		assert_int_equal(seq_order[i], i);
	assert_int_equal(atomic_load(&r.runs), 100);
	assert_int_equal(atomic_load(&r.bad), 0);
	/* The armed timer was dropped without running. */
	assert_int_equal(atomic_load(&t.runs), 0);
	assert_false(ndk_timer_armed(&t.timer));
	assert_false(e.running);

	/* A second stop is harmless. */
	ndk_engine_stop(&e);
}

static void test_stop_unstarted_and_restart(void **state)
{
	struct ndk_engine e;
	struct probe p = { .e = &e };
	(void)state;

	/* Never started (zeroed, as after a failed start): a no-op. */
	memset(&e, 0, sizeof(e));
	ndk_engine_stop(&e);

	/* Start, stop, start again on the same memory. */
	assert_int_equal(ndk_engine_start(&e, NULL), 0);
	ndk_engine_stop(&e);
	assert_int_equal(ndk_engine_start(&e, "ndk-again"), 0);
	ndk_work_init(&p.work, probe_fn);
	assert_true(ndk_engine_post(&e, &p.work));
	ndk_engine_stop(&e);
	assert_int_equal(atomic_load(&p.runs), 1);
	ndk_engine_stop(&e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_post_runs_on_engine_thread,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_fifo_order, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_double_post_runs_once,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_work_reposts_itself, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_concurrent_posters, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_call, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_call_result_and_thread_setup, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_timers_fire_in_deadline_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_timers_explicit_order,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_timer_cancel, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			test_timer_wakes_only_when_sooner, setup, teardown),
		cmocka_unit_test_setup_teardown(test_timer_restart, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			test_timer_started_from_timer_fn, setup, teardown),
		cmocka_unit_test_setup_teardown(test_items_freed_by_their_fn,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_concurrent_timer_churn,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_fd_readiness_and_del,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_fd_mod, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_del_fd_from_handler_in_same_batch, setup,
			teardown),
		cmocka_unit_test(test_stop_drains_and_drops_timers),
		cmocka_unit_test(test_stop_unstarted_and_restart),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
