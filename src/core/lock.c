/* SPDX-License-Identifier: MIT */
/*
 * The lock hierarchy's debug checks (core/lock.h): each thread records the
 * locks it holds, and every acquisition is checked against them.
 */
#include <stdio.h>
#include <stdlib.h>
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

void ndk_cond_wait(pthread_cond_t *cond, struct ndk_lock *l)
{
	pop(l, l->level);
	pthread_cond_wait(cond, &l->mutex);
	push(l, l->level);
}

void ndk_rwlock_init(struct ndk_rwlock *l, enum ndk_lock_level level)
{
	pthread_rwlock_init(&l->rwlock, NULL);
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

#endif /* NDK_LOCK_DEBUG */
