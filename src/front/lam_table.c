/* SPDX-License-Identifier: MIT */
/* The table of an adapter's live LAMs (front/lam_table.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "core/log.h"
#include "front/lam_table.h"

void ndk_lam_table_init(struct ndk_lam_table *t)
{
	memset(t, 0, sizeof(*t));
	ndk_rwlock_init(&t->lock, NDK_LOCK_LAM);
}

void ndk_lam_table_fini(struct ndk_lam_table *t)
{
	if (t->n)
		ndk_warn("adapter closed with %u LAMs not released",
			 (unsigned int)t->n);
	free(t->r);
	t->r = NULL;
	t->n = t->cap = 0;
	ndk_rwlock_destroy(&t->lock);
}

/* max_end of every range from i on, after a change at i. */
static void fix_max_end(struct ndk_lam_table *t, uint32_t i)
{
	uint64_t m = i ? t->r[i - 1].max_end : 0;

	for (; i < t->n; i++) {
		if (t->r[i].end > m)
			m = t->r[i].end;
		t->r[i].max_end = m;
	}
}

/* The number of ranges whose start is at most va. */
static uint32_t upper_bound(const struct ndk_lam_table *t, uint64_t va)
{
	uint32_t lo = 0, hi = t->n;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (t->r[mid].start <= va)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int ndk_lam_table_insert(struct ndk_lam_table *t, uint64_t start, uint64_t end,
			 uint64_t *cookie)
{
	uint32_t i;

	if (t->n == t->cap) {
		uint32_t cap = t->cap ? 2 * t->cap : 16;
		struct ndk_lam_range *r = realloc(t->r, cap * sizeof(*r));

		if (!r)
			return -ENOMEM;
		t->r = r;
		t->cap = cap;
	}
	i = upper_bound(t, start);
	memmove(&t->r[i + 1], &t->r[i], (t->n - i) * sizeof(*t->r));
	t->n++;
	memset(&t->r[i], 0, sizeof(t->r[i]));
	t->r[i].start = start;
	t->r[i].end = end;
	/* A recognisable, never-zero AdapterContext ("LAM" in the top
	 * bits), so a stale or made-up one is unlikely to match. */
	t->r[i].cookie = (UINT64_C(0x4c414d) << 40) |
			 (++t->next_cookie & UINT64_C(0xffffffffff));
	fix_max_end(t, i);
	*cookie = t->r[i].cookie;
	return 0;
}

int ndk_lam_table_remove(struct ndk_lam_table *t, uint64_t start,
			 uint64_t cookie, void **priv)
{
	uint32_t i = upper_bound(t, start), found = UINT32_MAX;

	/* Ranges of this start lie just before the bound. */
	while (i-- > 0 && t->r[i].start == start) {
		if (t->r[i].cookie == cookie) {
			found = i;
			break;
		}
	}
	for (i = 0; found == UINT32_MAX && i < t->n; i++)
		if (t->r[i].cookie == cookie)
			found = i;
	if (found == UINT32_MAX)
		return -ENOENT;
	*priv = t->r[found].priv;
	memmove(&t->r[found], &t->r[found + 1],
		(t->n - found - 1) * sizeof(*t->r));
	t->n--;
	fix_max_end(t, found);
	return 0;
}

int ndk_lam_table_find(const struct ndk_lam_table *t, uint64_t va, uint64_t len)
{
	uint64_t last;
	uint32_t i;

	if (!len || va > UINT64_MAX - (len - 1))
		return -1;
	last = va + (len - 1);
	/*
	 * Candidates start at or before va; walking back, max_end says when
	 * no range further back reaches the last byte.
	 */
	for (i = upper_bound(t, va); i-- > 0 && t->r[i].max_end > last;)
		if (t->r[i].end > last)
			return (int)i;
	return -1;
}
