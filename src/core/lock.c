/* SPDX-License-Identifier: MIT */
/*
 * The lock hierarchy's debug checks (core/lock.h): each thread records the
 * locks it holds, and every acquisition is checked against them.
 */
#include <limits.h>
#include <linux/futex.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "core/compiler.h"
#include "core/lock.h"

static const char *const level_names[NDK_LOCK_LEVELS] = {
	[NDK_LOCK_NONE] = "none",
	[NDK_LOCK_CONNECTOR] = "connector",
	[NDK_LOCK_LISTENER] = "listener",
	[NDK_LOCK_QP] = "qp",
	[NDK_LOCK_DP_RX] = "dp.rx",
	[NDK_LOCK_DP] = "dp",
	[NDK_LOCK_RQ] = "rq",
	[NDK_LOCK_SRQ] = "srq",
	[NDK_LOCK_MW] = "mw",
	[NDK_LOCK_MR] = "mr",
	[NDK_LOCK_DOMAIN] = "object domain",
	[NDK_LOCK_CQ] = "cq",
	[NDK_LOCK_VERBS_DEVS] = "verbs adapters",
	[NDK_LOCK_QPMAP] = "verbs qp map",
	[NDK_LOCK_VSRQ] = "verbs srq slots",
	[NDK_LOCK_STAG] = "stag table",
	[NDK_LOCK_LAM] = "lam",
	[NDK_LOCK_ENDPOINT] = "endpoint table",
	[NDK_LOCK_IFADDR] = "ifaddr cache",
	[NDK_LOCK_OID] = "oid registry",
	[NDK_LOCK_ENGINE] = "engine",
	[NDK_LOCK_LEAF] = "leaf",
};

const char *ndk_lock_level_name(enum ndk_lock_level level)
{
	return (unsigned int)level < NDK_LOCK_LEVELS ? level_names[level] : "?";
}

#ifdef NDK_LOCK_DEBUG

/* More than any path of the library nests. */
#define HELD_MAX 16

struct held {
	const void *lock;
	enum ndk_lock_level level;
};

static __thread struct held held[HELD_MAX];
static __thread unsigned int nheld;

void ndk_lock_assert_failed(const void *l, enum ndk_lock_level level,
			    const char *what, const char *file, int line)
{
	unsigned int i;

	fprintf(stderr,
		"libndk: lock %p (%s) %s at %s:%d; this thread holds:", l,
		ndk_lock_level_name(level), what, file, line);
	for (i = 0; i < nheld; i++)
		fprintf(stderr, " %p (%s)", held[i].lock,
			ndk_lock_level_name(held[i].level));
	fprintf(stderr, "%s\n", nheld ? "" : " nothing");
	abort();
}

bool ndk_lock_held_by_me(const void *l)
{
	unsigned int i;

	for (i = 0; i < nheld; i++)
		if (held[i].lock == l)
			return true;
	return false;
}

/* Before blocking on l: every lock held must be of a lower level. */
static void check_order(const void *l, enum ndk_lock_level level)
{
	unsigned int i;

	for (i = 0; i < nheld; i++) {
		if (held[i].lock == l)
			ndk_lock_assert_failed(l, level, "taken twice",
					       __FILE__, __LINE__);
		if (held[i].level >= level) {
			fprintf(stderr,
				"libndk: lock order: taking %s while "
				"holding %s\n",
				ndk_lock_level_name(level),
				ndk_lock_level_name(held[i].level));
			ndk_lock_assert_failed(l, level, "out of order",
					       __FILE__, __LINE__);
		}
	}
}

static void push(const void *l, enum ndk_lock_level level)
{
	if (nheld == HELD_MAX)
		ndk_lock_assert_failed(l, level, "too deep", __FILE__,
				       __LINE__);
	held[nheld].lock = l;
	held[nheld].level = level;
	nheld++;
}

static void pop(const void *l, enum ndk_lock_level level)
{
	unsigned int i;

	for (i = nheld; i-- > 0;) {
		if (held[i].lock != l)
			continue;
		held[i] = held[--nheld];
		return;
	}
	ndk_lock_assert_failed(l, level, "released but not held", __FILE__,
			       __LINE__);
}

void ndk_lock_init(struct ndk_lock *l, enum ndk_lock_level level)
{
	pthread_mutex_init(&l->mutex, NULL);
	l->level = level;
}

void ndk_lock(struct ndk_lock *l)
{
	check_order(l, l->level);
	pthread_mutex_lock(&l->mutex);
	push(l, l->level);
}

bool ndk_trylock(struct ndk_lock *l)
{
	/* Never blocks, so it cannot deadlock: no order check. */
	if (pthread_mutex_trylock(&l->mutex))
		return false;
	push(l, l->level);
	return true;
}

void ndk_unlock(struct ndk_lock *l)
{
	pop(l, l->level);
	pthread_mutex_unlock(&l->mutex);
}

void ndk_lock_destroy(struct ndk_lock *l)
{
	pthread_mutex_destroy(&l->mutex);
}

void ndk_cond_init(struct ndk_cond *c)
{
	pthread_cond_init(&c->cond, NULL);
}

void ndk_cond_destroy(struct ndk_cond *c)
{
	pthread_cond_destroy(&c->cond);
}

void ndk_cond_signal(struct ndk_cond *c)
{
	pthread_cond_signal(&c->cond);
}

void ndk_cond_broadcast(struct ndk_cond *c)
{
	pthread_cond_broadcast(&c->cond);
}

void ndk_cond_wait(struct ndk_cond *c, struct ndk_lock *l)
{
	pop(l, l->level);
	pthread_cond_wait(&c->cond, &l->mutex);
	push(l, l->level);
}

void ndk_rwlock_init(struct ndk_rwlock *l, enum ndk_lock_level level)
{
	pthread_rwlockattr_t a;

	/* As the futex rwlock: a waiting writer holds new readers off. */
	pthread_rwlockattr_init(&a);
	pthread_rwlockattr_setkind_np(
		&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&l->rwlock, &a);
	pthread_rwlockattr_destroy(&a);
	l->level = level;
}

void ndk_read_lock(struct ndk_rwlock *l)
{
	check_order(l, l->level);
	pthread_rwlock_rdlock(&l->rwlock);
	push(l, l->level);
}

void ndk_write_lock(struct ndk_rwlock *l)
{
	check_order(l, l->level);
	pthread_rwlock_wrlock(&l->rwlock);
	push(l, l->level);
}

void ndk_rw_unlock(struct ndk_rwlock *l)
{
	pop(l, l->level);
	pthread_rwlock_unlock(&l->rwlock);
}

void ndk_rwlock_destroy(struct ndk_rwlock *l)
{
	pthread_rwlock_destroy(&l->rwlock);
}

#endif /* NDK_LOCK_DEBUG */

#ifndef NDK_LOCK_DEBUG

static void futex_wait(_Atomic uint32_t *word, uint32_t val)
{
	/* EAGAIN (it changed) and EINTR: the caller looks again. */
	syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0);
}

static void futex_wake(_Atomic uint32_t *word, int n)
{
	syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
}

/*
 * The lock was taken: mark it contended (2) and sleep until a release
 * finds the mark and wakes one sleeper, which takes it as contended again
 * (there may be others).
 */
void ndk_lock_wait(struct ndk_lock *l)
{
	while (atomic_exchange_explicit(&l->state, 2, memory_order_acquire))
		futex_wait(&l->state, 2);
}

void ndk_lock_wake(struct ndk_lock *l)
{
	futex_wake(&l->state, 1);
}

/*
 * A reader finds a writer holding the lock or waiting for it: it marks
 * the word (SLEEP) and sleeps until the word changes; the release that
 * finds the mark wakes everyone, and each looks again.
 */
void ndk_rw_read_wait(struct ndk_rwlock *l)
{
	uint32_t s = atomic_load_explicit(&l->state, memory_order_relaxed);

	for (;;) {
		if (!(s & (NDK_RW_WRITER | NDK_RW_WWAIT))) {
			if (atomic_compare_exchange_weak_explicit(
				    &l->state, &s, s + 1, memory_order_acquire,
				    memory_order_relaxed))
				return;
			continue;
		}
		if (!(s & NDK_RW_SLEEP) &&
		    !atomic_compare_exchange_weak_explicit(
			    &l->state, &s, s | NDK_RW_SLEEP,
			    memory_order_relaxed, memory_order_relaxed))
			continue;
		futex_wait(&l->state, s | NDK_RW_SLEEP);
		s = atomic_load_explicit(&l->state, memory_order_relaxed);
	}
}

/*
 * A writer finds readers or another writer: it says it waits (WWAIT
 * keeps new readers out) and sleeps. Taking the lock clears WWAIT; a
 * writer still asleep behind it sets it again when it wakes.
 */
void ndk_rw_write_wait(struct ndk_rwlock *l)
{
	uint32_t s = atomic_load_explicit(&l->state, memory_order_relaxed);
	uint32_t want;

	for (;;) {
		if (!(s & (NDK_RW_READERS | NDK_RW_WRITER))) {
			if (atomic_compare_exchange_weak_explicit(
				    &l->state, &s,
				    NDK_RW_WRITER | (s & NDK_RW_SLEEP),
				    memory_order_acquire, memory_order_relaxed))
				return;
			continue;
		}
		want = s | NDK_RW_WWAIT | NDK_RW_SLEEP;
		if (s != want &&
		    !atomic_compare_exchange_weak_explicit(
			    &l->state, &s, want, memory_order_relaxed,
			    memory_order_relaxed))
			continue;
		futex_wait(&l->state, want);
		s = atomic_load_explicit(&l->state, memory_order_relaxed);
	}
}

/* The mark goes first: a sleeper that sets it again after this sleeps
 * on a word that no longer matches, or is woken here. */
void ndk_rw_wake(struct ndk_rwlock *l)
{
	atomic_fetch_and_explicit(&l->state, ~NDK_RW_SLEEP,
				  memory_order_relaxed);
	futex_wake(&l->state, INT_MAX);
}

void ndk_cond_init(struct ndk_cond *c)
{
	atomic_init(&c->seq, 0);
}

void ndk_cond_destroy(struct ndk_cond *c)
{
	(void)c;
}

void ndk_cond_signal(struct ndk_cond *c)
{
	atomic_fetch_add_explicit(&c->seq, 1, memory_order_release);
	futex_wake(&c->seq, 1);
}

void ndk_cond_broadcast(struct ndk_cond *c)
{
	atomic_fetch_add_explicit(&c->seq, 1, memory_order_release);
	futex_wake(&c->seq, INT_MAX);
}

/*
 * The sequence is read with the lock held: a signal after the unlock
 * changes it, and the futex wait then returns at once instead of
 * sleeping through it.
 */
void ndk_cond_wait(struct ndk_cond *c, struct ndk_lock *l)
{
	uint32_t seq = atomic_load_explicit(&c->seq, memory_order_relaxed);

	ndk_unlock(l);
	futex_wait(&c->seq, seq);
	ndk_lock(l);
}

#endif /* !NDK_LOCK_DEBUG */
