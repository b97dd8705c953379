/* SPDX-License-Identifier: MIT */
/* The local keys of the process's registrations (verbs/keys.h). */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include "core/lock.h"
#include "verbs/keys.h"

struct vkey {
	const struct ibv_pd *pd; /* NULL: free */
	uint32_t lkey;
	bool write;
	uint64_t start, end;
};

/* Open addressing by (pd, lkey), linear probing; at most half full. */
static struct {
	struct ndk_rwlock lock;
	struct vkey *e;
	uint32_t cap, used;
} keys;
static pthread_once_t keys_once = PTHREAD_ONCE_INIT;

static void keys_init(void)
{
	ndk_rwlock_init(&keys.lock, NDK_LOCK_LEAF);
}

static uint32_t key_hash(const struct ibv_pd *pd, uint32_t lkey, uint32_t cap)
{
	uint64_t h = (uint64_t)(uintptr_t)pd ^ ((uint64_t)lkey << 7);

	return (uint32_t)((h * 0x9e3779b97f4a7c15ull) >> 32) & (cap - 1);
}

/* Lock held: the entry of (pd, lkey), or NULL. */
static struct vkey *key_find(const struct ibv_pd *pd, uint32_t lkey)
{
	uint32_t i;

	if (!keys.cap)
		return NULL;
	for (i = key_hash(pd, lkey, keys.cap); keys.e[i].pd;
	     i = (i + 1) & (keys.cap - 1))
		if (keys.e[i].pd == pd && keys.e[i].lkey == lkey)
			return &keys.e[i];
	return NULL;
}

/* Write lock held, room for one more. */
static void key_put(const struct vkey *k)
{
	uint32_t i = key_hash(k->pd, k->lkey, keys.cap);

	while (keys.e[i].pd)
		i = (i + 1) & (keys.cap - 1);
	keys.e[i] = *k;
	keys.used++;
}

static int key_grow(void)
{
	struct vkey *old = keys.e;
	uint32_t cap = keys.cap, i;

	keys.e = calloc(cap ? cap * 2 : 64, sizeof(*keys.e));
	if (!keys.e) {
		keys.e = old;
		return -ENOMEM;
	}
	keys.cap = cap ? cap * 2 : 64;
	keys.used = 0;
	for (i = 0; i < cap; i++)
		if (old[i].pd)
			key_put(&old[i]);
	free(old);
	return 0;
}

int ndk_vkeys_add(const struct ibv_mr *mr, uint64_t iova, int access)
{
	struct vkey k = {
		.pd = mr->pd,
		.lkey = mr->lkey,
		.write = access & IBV_ACCESS_LOCAL_WRITE,
		.start = iova,
		.end = iova + mr->length,
	};
	struct vkey *old;
	int ret = 0;

	pthread_once(&keys_once, keys_init);
	ndk_write_lock(&keys.lock);
	old = key_find(k.pd, k.lkey);
	if (old)
		*old = k; /* a key the device reused: the newest is true */
	else if ((keys.used + 1) * 2 > keys.cap && key_grow())
		ret = -ENOMEM;
	else
		key_put(&k);
	ndk_rw_unlock(&keys.lock);
	return ret;
}

void ndk_vkeys_del(const struct ibv_mr *mr)
{
	uint32_t i, j, h;
	struct vkey *k;

	pthread_once(&keys_once, keys_init);
	ndk_write_lock(&keys.lock);
	k = key_find(mr->pd, mr->lkey);
	if (k) {
		/* Backward-shift deletion: no lookup stops at a hole. */
		i = (uint32_t)(k - keys.e);
		for (j = (i + 1) & (keys.cap - 1); keys.e[j].pd;
		     j = (j + 1) & (keys.cap - 1)) {
			h = key_hash(keys.e[j].pd, keys.e[j].lkey, keys.cap);
			if ((j > i && (h <= i || h > j)) ||
			    (j < i && h <= i && h > j)) {
				keys.e[i] = keys.e[j];
				i = j;
			}
		}
		memset(&keys.e[i], 0, sizeof(keys.e[i]));
		keys.used--;
	}
	ndk_rw_unlock(&keys.lock);
}

bool ndk_vkeys_check(const struct ibv_pd *pd, const struct ibv_sge *sge, int n,
		     bool write)
{
	bool ok = true;
	int i;

	pthread_once(&keys_once, keys_init);
	ndk_read_lock(&keys.lock);
	for (i = 0; i < n && ok; i++) {
		const struct vkey *k;

		if (!sge[i].length)
			continue;
		k = key_find(pd, sge[i].lkey);
		ok = k && (!write || k->write) && sge[i].addr >= k->start &&
		     sge[i].addr + sge[i].length <= k->end &&
		     sge[i].addr + sge[i].length > sge[i].addr;
	}
	ndk_rw_unlock(&keys.lock);
	return ok;
}

/*
 * The key byte of a type 2 window's rkey is the consumer's to choose at
 * each bind: a random one, never the current one, so a peer that saw
 * the window's last token cannot tell its next (docs/security.md, Memory
 * tokens). Random bytes come a few dozen at a time per thread.
 */
int ndk_vkeys_next_rkey(uint32_t rkey, uint32_t *out)
{
	static _Thread_local uint8_t pool[64];
	static _Thread_local unsigned int left;
	ssize_t n;

	for (;;) {
		if (!left) {
			n = getrandom(pool, sizeof(pool), 0);
			if (n < 0 && errno == EINTR)
				continue;
			if (n != (ssize_t)sizeof(pool))
				return -EAGAIN;
			left = sizeof(pool);
		}
		if (pool[--left] != (uint8_t)rkey)
			break;
	}
	*out = (rkey & ~0xffu) | pool[left];
	return 0;
}
