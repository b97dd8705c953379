/* SPDX-License-Identifier: MIT */
/*
 * The lock hierarchy of libndk, in code: every lock of the library has a
 * level, and a thread takes a lock only if its level is above the level
 * of every lock the thread already holds. This enum is the one statement
 * of the order (docs/design.md, Locks, explains each step).
 *
 * With NDK_LOCK_DEBUG (Debug and sanitizer builds) each thread keeps the
 * locks it holds: taking a lock out of order, releasing one not held, or
 * NDK_ASSERT_LOCKED on a lock the calling thread does not hold aborts with
 * both lock levels named; the locks are pthread mutexes, which the
 * sanitizers understand. Without it a lock is one futex word taken and
 * released inline with one atomic operation each (the data path takes
 * about ten per message; glibc's mutex spends some 60 instructions a
 * pair on owner and type bookkeeping nothing here uses), and a condition
 * is a futex sequence word (ndk_cond).
 */
#ifndef NDK_CORE_LOCK_H
#define NDK_CORE_LOCK_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* Outermost first. */
enum ndk_lock_level {
	NDK_LOCK_NONE,
	NDK_LOCK_CONNECTOR, /* a connector's state machine and handshake */
	NDK_LOCK_LISTENER, /* a listener's state and backlog count */
	NDK_LOCK_QP, /* a QP's state and connector link */
	NDK_LOCK_DP_RX, /* the data path's receive pass */
	NDK_LOCK_DP, /* the data path: SQ, ORQ, IRQ, transmit, state */
	NDK_LOCK_RQ, /* a QP's receive queue */
	NDK_LOCK_SRQ, /* an SRQ's queued receives */
	NDK_LOCK_MW, /* a memory window's binding */
	NDK_LOCK_MR, /* an MR's registration */
	NDK_LOCK_DOMAIN, /* the adapter's objects and their close state */
	NDK_LOCK_CQ, /* a CQ's ring, arm and pollers */
	NDK_LOCK_VERBS_DEVS, /* the verbs adapters of the process, by device */
	NDK_LOCK_QPMAP, /* the verbs provider's work-request keys to QPs */
	NDK_LOCK_VSRQ, /* a verbs SRQ's slots */
	NDK_LOCK_STAG, /* the STag table (read-write) */
	NDK_LOCK_LAM, /* the live LAM ranges (read-write) */
	NDK_LOCK_ENDPOINT, /* the process-wide ND endpoint and tuple tables */
	NDK_LOCK_IFADDR, /* the interface address cache */
	NDK_LOCK_OID, /* this process's OID registry file */
	NDK_LOCK_ENGINE, /* an engine's work list and timer heap */
	NDK_LOCK_LEAF, /* private to one function, nothing taken inside */
	NDK_LOCK_LEVELS
};

const char *ndk_lock_level_name(enum ndk_lock_level level);

#ifdef NDK_LOCK_DEBUG
struct ndk_lock {
	pthread_mutex_t mutex;
	enum ndk_lock_level level;
};

struct ndk_cond {
	pthread_cond_t cond;
};
#else
/* 0 free, 1 taken, 2 taken and someone may sleep on it. */
struct ndk_lock {
	_Atomic uint32_t state;
};

/* Bumped by every signal; a waiter sleeps while it is unchanged. */
struct ndk_cond {
	_Atomic uint32_t seq;
};
#endif

/* A condition waited on with an ndk_lock held; waits may wake early. */
void ndk_cond_init(struct ndk_cond *c);
void ndk_cond_destroy(struct ndk_cond *c);
void ndk_cond_signal(struct ndk_cond *c);
void ndk_cond_broadcast(struct ndk_cond *c);
void ndk_cond_wait(struct ndk_cond *c, struct ndk_lock *l);

#ifdef NDK_LOCK_DEBUG
struct ndk_rwlock {
	pthread_rwlock_t rwlock;
	enum ndk_lock_level level;
};
#else
/*
 * Readers counted in the low bits, beside three flags. A waiting writer
 * holds new readers off, so a stream of lookups cannot starve a
 * registration (no thread takes one rwlock twice: the hierarchy forbids
 * it, so this cannot deadlock a reader).
 */
#define NDK_RW_READERS 0x1fffffffu
#define NDK_RW_WRITER  0x20000000u /* held for writing */
#define NDK_RW_WWAIT   0x40000000u /* a writer waits: readers wait too */
#define NDK_RW_SLEEP   0x80000000u /* someone may sleep on the word */
struct ndk_rwlock {
	_Atomic uint32_t state;
};
#endif

#ifdef NDK_LOCK_DEBUG
#define NDK_LOCK_INITIALIZER(lvl)                                  \
	{                                                          \
		.mutex = PTHREAD_MUTEX_INITIALIZER, .level = (lvl) \
	}

void ndk_lock_init(struct ndk_lock *l, enum ndk_lock_level level);
void ndk_lock(struct ndk_lock *l);
bool ndk_trylock(struct ndk_lock *l); /* true if taken */
void ndk_unlock(struct ndk_lock *l);
void ndk_lock_destroy(struct ndk_lock *l);
void ndk_rwlock_init(struct ndk_rwlock *l, enum ndk_lock_level level);
void ndk_read_lock(struct ndk_rwlock *l);
void ndk_write_lock(struct ndk_rwlock *l);
void ndk_rw_unlock(struct ndk_rwlock *l);
void ndk_rwlock_destroy(struct ndk_rwlock *l);
/* True if the calling thread holds l (any mode for a rwlock). */
bool ndk_lock_held_by_me(const void *l);
/* Aborts, naming the lock and its level. */
void ndk_lock_assert_failed(const void *l, enum ndk_lock_level level,
			    const char *what, const char *file, int line);

#define NDK_ASSERT_LOCKED(l)                                              \
	do {                                                              \
		if (!ndk_lock_held_by_me(l))                              \
			ndk_lock_assert_failed(l, (l)->level, "not held", \
					       __FILE__, __LINE__);       \
	} while (0)
#define NDK_ASSERT_UNLOCKED(l)                                        \
	do {                                                          \
		if (ndk_lock_held_by_me(l))                           \
			ndk_lock_assert_failed(l, (l)->level, "held", \
					       __FILE__, __LINE__);   \
	} while (0)

#else /* !NDK_LOCK_DEBUG: futex words */

#define NDK_LOCK_INITIALIZER(lvl) \
	{                         \
		.state = 0        \
	}

/* The contended halves (core/lock.c). */
void ndk_lock_wait(struct ndk_lock *l);
void ndk_lock_wake(struct ndk_lock *l);

static inline void ndk_lock_init(struct ndk_lock *l, enum ndk_lock_level level)
{
	(void)level;
	atomic_init(&l->state, 0);
}

static inline void ndk_lock_destroy(struct ndk_lock *l)
{
	(void)l;
}

static inline void ndk_lock(struct ndk_lock *l)
{
	uint32_t free = 0;

	if (!atomic_compare_exchange_strong_explicit(&l->state, &free, 1,
						     memory_order_acquire,
						     memory_order_relaxed))
		ndk_lock_wait(l);
}

static inline bool ndk_trylock(struct ndk_lock *l)
{
	uint32_t free = 0;

	return atomic_compare_exchange_strong_explicit(&l->state, &free, 1,
						       memory_order_acquire,
						       memory_order_relaxed);
}

static inline void ndk_unlock(struct ndk_lock *l)
{
	if (atomic_exchange_explicit(&l->state, 0, memory_order_release) == 2)
		ndk_lock_wake(l);
}

/* The contended halves (core/lock.c). */
void ndk_rw_read_wait(struct ndk_rwlock *l);
void ndk_rw_write_wait(struct ndk_rwlock *l);
void ndk_rw_wake(struct ndk_rwlock *l);

static inline void ndk_rwlock_init(struct ndk_rwlock *l,
				   enum ndk_lock_level level)
{
	(void)level;
	atomic_init(&l->state, 0);
}

static inline void ndk_rwlock_destroy(struct ndk_rwlock *l)
{
	(void)l;
}

static inline void ndk_read_lock(struct ndk_rwlock *l)
{
	uint32_t s = atomic_load_explicit(&l->state, memory_order_relaxed);

	if ((s & (NDK_RW_WRITER | NDK_RW_WWAIT)) ||
	    !atomic_compare_exchange_weak_explicit(&l->state, &s, s + 1,
						   memory_order_acquire,
						   memory_order_relaxed))
		ndk_rw_read_wait(l);
}

static inline void ndk_write_lock(struct ndk_rwlock *l)
{
	uint32_t free = 0;

	if (!atomic_compare_exchange_strong_explicit(
		    &l->state, &free, NDK_RW_WRITER, memory_order_acquire,
		    memory_order_relaxed))
		ndk_rw_write_wait(l);
}

/*
 * A writer is alone, so the flag says which kind of holder we are. Only
 * the last reader out can have someone to wake: a writer, and readers
 * held off behind it.
 */
static inline void ndk_rw_unlock(struct ndk_rwlock *l)
{
	uint32_t s = atomic_load_explicit(&l->state, memory_order_relaxed);

	if (s & NDK_RW_WRITER)
		s = atomic_exchange_explicit(&l->state, 0,
					     memory_order_release);
	else if (((s = atomic_fetch_sub_explicit(&l->state, 1,
						 memory_order_release)) &
		  NDK_RW_READERS) != 1)
		return;
	if (s & NDK_RW_SLEEP)
		ndk_rw_wake(l);
}

#define NDK_ASSERT_LOCKED(l)   ((void)(l))
#define NDK_ASSERT_UNLOCKED(l) ((void)(l))

#endif /* NDK_LOCK_DEBUG */

#endif /* NDK_CORE_LOCK_H */
