/* SPDX-License-Identifier: MIT */
/*
 * The STag table (see stag.h for the token format and the locking
 * design) and the registry of live logical-address mappings.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include "core/lock.h"
#include "core/log.h"
#include "front/lam_table.h"
#include "sw/pd.h"
#include "sw/stag.h"

/* Entries come in chunks that never move, so a pinned entry stays put. */
#define CHUNK_SHIFT 10
#define CHUNK_SIZE  (1u << CHUNK_SHIFT)
#define NCHUNKS	    ((SW_STAG_MAX_INDEX + 1) / CHUNK_SIZE)

/*
 * Wire index = a keyed permutation of the table index: a Feistel network
 * on two 12-bit halves whose round functions are tables of random
 * values, drawn per table. Six rounds: a peer that sees some tokens
 * cannot tell the indices of the others (docs/security.md, Memory
 * tokens).
 */
#define HALF_BITS	  (SW_STAG_INDEX_BITS / 2)
#define HALF_MASK	  ((1u << HALF_BITS) - 1)
#define FEISTEL_ROUNDS	  6
#define LOCAL_INDEX_SLOTS 64
/* Keys of an entry's last registrations a new key never repeats. */
#define KEY_HISTORY 4
/* Random bytes fetched at a time for keys (one syscall per ~500 keys). */
#define KEY_POOL 512

enum entry_state {
	ENTRY_FREE,
	ENTRY_INVALID, /* owned by an MR or MW, grants nothing */
	ENTRY_VALID,
};

struct sw_stag_entry {
	/* Everything but users is under the table lock. */
	uint8_t state;
	uint8_t type;
	/* keys[0] is the current key, then the ones before it. */
	uint8_t keys[KEY_HISTORY];
	uint32_t pd_id;
	uint32_t access;
	uint32_t gen; /* bumped at every validation, unlike the 8-bit key */
	uint64_t base_va;
	uint64_t length;
	uintptr_t host;
	const uint64_t *pages;
	uint32_t npages;
	uint32_t fbo;
	/* MW: the MR entry and the registration (gen) it was bound to. */
	struct sw_stag_entry *parent;
	uint32_t parent_gen;
	uint32_t next_free; /* free-list link; 0 ends the list */
	atomic_uint users; /* pins: accesses in flight */
};

struct sw_stag_table {
	/*
	 * First, together: what a lookup reads. A data-path hop runs right
	 * after a system call, which on a CPU without PCIDs (and with page
	 * table isolation) empties the TLB, so each page it touches costs a
	 * page walk (docs/performance.md, "Pages per hop").
	 */
	struct ndk_rwlock lock;
	uint32_t nalloc; /* indices [0, nalloc) exist */
	/*
	 * Tokens of the consumer's SGEs (and the source of a Read Response
	 * we send, an STag its Read Request's lookup, made without this,
	 * already found valid): wire index (high half) and table index. Six
	 * dependent reads of round[] are a good part of a lookup on the data
	 * path. The mapping never changes, so a slot is either right or
	 * names another wire index. An STag a peer guesses is looked up
	 * without it, so its timing tells the peer nothing.
	 */
	_Atomic uint64_t local_index[LOCAL_INDEX_SLOTS];
	/* The entries, CHUNK_SIZE at a time, allocated as the table grows;
	 * the first pointers share the page above. */
	struct sw_stag_entry *chunks[NCHUNKS];

	/*
	 * FIFO free list: a freed index is reused as late as possible, so
	 * together with the key a stale token rarely names a live entry.
	 */
	uint32_t free_head, free_tail;
	uint32_t used;

	/* The adapter's live LAMs (front/lam_table.h): what SGEs with the
	 * privileged token may address. */
	struct ndk_lam_table *lams;

	/* Random bytes for keys, used from the end (table lock exclusive). */
	uint8_t pool[KEY_POOL];
	uint32_t pool_left;
	/* Wire index of table index 0 before the shift that makes it 0. */
	uint32_t wire0;
	uint16_t round[FEISTEL_ROUNDS][1u << HALF_BITS];
};

static int entropy_getrandom(void *buf, size_t len)
{
	uint8_t *p = buf;
	ssize_t n;

	while (len) {
		n = getrandom(p, len, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n ? -errno : -EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static _Atomic(sw_stag_entropy_fn) stag_entropy = entropy_getrandom;

void sw_stag_set_entropy(sw_stag_entropy_fn fn)
{
	atomic_store(&stag_entropy, fn ? fn : entropy_getrandom);
}

/* No kernel randomness (a sandbox that forbids getrandom) fails what
 * needs it: tokens never fall back to guessable ones. */
static int entropy(void *buf, size_t len)
{
	int err = atomic_load(&stag_entropy)(buf, len);

	if (err)
		ndk_err("stag: no random bytes (%s)", strerror(-err));
	return err;
}

static uint32_t feistel(const struct sw_stag_table *t, uint32_t x)
{
	uint32_t l = x >> HALF_BITS, r = x & HALF_MASK, tmp;
	int i;

	for (i = 0; i < FEISTEL_ROUNDS; i++) {
		tmp = r;
		r = l ^ t->round[i][r];
		l = tmp;
	}
	return l << HALF_BITS | r;
}

static uint32_t feistel_inv(const struct sw_stag_table *t, uint32_t x)
{
	uint32_t l = x >> HALF_BITS, r = x & HALF_MASK, tmp;
	int i;

	for (i = FEISTEL_ROUNDS - 1; i >= 0; i--) {
		tmp = l;
		l = r ^ t->round[i][l];
		r = tmp;
	}
	return l << HALF_BITS | r;
}

/*
 * Table index to wire index and back. XORing the permutation with its
 * value at 0 keeps it a permutation and makes 0 map to 0: the index that
 * is never allocated is the one the privileged token (0) and the RTR's
 * STag 1 carry. The tables never change, so no lock is needed.
 */
static uint32_t index_to_wire(const struct sw_stag_table *t, uint32_t index)
{
	return feistel(t, index) ^ t->wire0;
}

static uint32_t wire_to_index(const struct sw_stag_table *t, uint32_t wire)
{
	return feistel_inv(t, wire ^ t->wire0);
}

static uint32_t stag_of(const struct sw_stag_table *t, uint32_t index,
			uint8_t key)
{
	return sw_stag_make(index_to_wire(t, index), key);
}

/* index_of for a token from the consumer's own SGEs (local_index). */
static NDK_HOT uint32_t local_index_of(struct sw_stag_table *t, uint32_t stag)
{
	uint32_t wire = sw_stag_index(stag), index;
	_Atomic uint64_t *slot = &t->local_index[wire % LOCAL_INDEX_SLOTS];
	uint64_t v = atomic_load_explicit(slot, memory_order_relaxed);

	if ((uint32_t)(v >> 32) == wire)
		return (uint32_t)v;
	index = wire_to_index(t, wire);
	atomic_store_explicit(slot, (uint64_t)wire << 32 | index,
			      memory_order_relaxed);
	return index;
}

/* The table index a token names (0, never allocated, for wire index 0). */
static uint32_t index_of(const struct sw_stag_table *t, uint32_t stag)
{
	return wire_to_index(t, sw_stag_index(stag));
}

static bool key_recent(const struct sw_stag_entry *e, unsigned int v)
{
	unsigned int i;

	for (i = 0; i < KEY_HISTORY; i++)
		if (e->keys[i] == v)
			return true;
	return false;
}

/*
 * Table lock held exclusive: a new key for e, uniformly drawn among the
 * values that are none of its last KEY_HISTORY keys, so a token of one
 * of its last registrations never names the new one.
 */
static int new_key(struct sw_stag_table *t, struct sw_stag_entry *e)
{
	unsigned int v, tries;

	for (tries = 0;; tries++) {
		if (!t->pool_left) {
			if (entropy(t->pool, sizeof(t->pool)))
				return -EAGAIN;
			t->pool_left = sizeof(t->pool);
		}
		v = t->pool[--t->pool_left];
		if (!key_recent(e, v))
			break;
		/* Random bytes fail this nine times in a row once in 2^54;
		 * a source of zeros (sw_stag_set_entropy) always does and
		 * gets the smallest key not recent. */
		if (tries == 8) {
			for (v = 0; key_recent(e, v); v++)
				;
			break;
		}
	}
	for (tries = KEY_HISTORY - 1; tries > 0; tries--)
		e->keys[tries] = e->keys[tries - 1];
	e->keys[0] = (uint8_t)v;
	return 0;
}

enum sw_stag_fault sw_stag_fault_of(int err)
{
	switch (-err) {
	case 0:
		return SW_STAG_FAULT_NONE;
	case ENOENT:
		return SW_STAG_FAULT_INVALID_STAG;
	case ERANGE:
		return SW_STAG_FAULT_BOUNDS;
	case EACCES:
		return SW_STAG_FAULT_ACCESS;
	case EPERM:
		return SW_STAG_FAULT_PD;
	case EOVERFLOW:
		return SW_STAG_FAULT_TO_WRAP;
	case EOPNOTSUPP:
		return SW_STAG_FAULT_NO_INVALIDATE;
	default:
		return SW_STAG_FAULT_OTHER;
	}
}

const char *sw_stag_fault_name(enum sw_stag_fault f)
{
	static const char *const names[] = {
		[SW_STAG_FAULT_NONE] = "none",
		[SW_STAG_FAULT_INVALID_STAG] = "invalid STag",
		[SW_STAG_FAULT_BOUNDS] = "base/bounds violation",
		[SW_STAG_FAULT_ACCESS] = "access rights violation",
		[SW_STAG_FAULT_PD] = "STag not associated with stream",
		[SW_STAG_FAULT_TO_WRAP] = "TO wrap",
		[SW_STAG_FAULT_NO_INVALIDATE] = "STag cannot be invalidated",
		[SW_STAG_FAULT_OTHER] = "other",
	};

	if ((unsigned int)f >= sizeof(names) / sizeof(names[0]))
		return "?";
	return names[f];
}

struct sw_stag_table *sw_stag_table_create(struct ndk_lam_table *lams)
{
	struct sw_stag_table *t = calloc(1, sizeof(*t));
	uint32_t i, j;

	if (!t)
		return NULL;
	if (entropy(t->round, sizeof(t->round))) {
		free(t);
		return NULL;
	}
	ndk_rwlock_init(&t->lock, NDK_LOCK_STAG);
	t->lams = lams;
	for (i = 0; i < FEISTEL_ROUNDS; i++)
		for (j = 0; j <= HALF_MASK; j++)
			t->round[i][j] &= HALF_MASK;
	t->wire0 = feistel(t, 0);
	/* No wire index has all high bits set: every slot starts empty. */
	for (i = 0; i < LOCAL_INDEX_SLOTS; i++)
		atomic_init(&t->local_index[i], UINT64_MAX);
	return t;
}

void sw_stag_table_destroy(struct sw_stag_table *t)
{
	uint32_t i;

	if (!t)
		return;
	if (t->used)
		ndk_warn("stag table destroyed with %u entries in use",
			 t->used);
	for (i = 0; i < NCHUNKS; i++)
		free(t->chunks[i]);
	ndk_rwlock_destroy(&t->lock);
	free(t);
}

/* Table lock held (either mode). NULL for index 0 and unknown indices. */
static struct sw_stag_entry *get_entry(struct sw_stag_table *t, uint32_t index)
{
	if (index == 0 || index >= t->nalloc)
		return NULL;
	return &t->chunks[index >> CHUNK_SHIFT][index & (CHUNK_SIZE - 1)];
}

/* Table lock held exclusive. */
static void free_push(struct sw_stag_table *t, uint32_t index)
{
	struct sw_stag_entry *e = get_entry(t, index);

	e->next_free = 0;
	if (t->free_tail)
		get_entry(t, t->free_tail)->next_free = index;
	else
		t->free_head = index;
	t->free_tail = index;
}

/* Table lock held exclusive: adds a chunk of free entries. */
static int grow(struct sw_stag_table *t)
{
	uint32_t c = t->nalloc >> CHUNK_SHIFT, i;
	struct sw_stag_entry *chunk;

	if (c >= NCHUNKS)
		return -ENOSPC;
	chunk = calloc(CHUNK_SIZE, sizeof(*chunk));
	if (!chunk)
		return -ENOMEM;
	for (i = 0; i < CHUNK_SIZE; i++)
		atomic_init(&chunk[i].users, 0);
	t->chunks[c] = chunk;
	t->nalloc += CHUNK_SIZE;
	/* Index 0 stays reserved: its wire index is 0, the privileged
	 * token's and the RTR's. */
	for (i = c ? 0 : 1; i < CHUNK_SIZE; i++)
		free_push(t, (c << CHUNK_SHIFT) + i);
	return 0;
}

int sw_stag_alloc(struct sw_stag_table *t, enum sw_stag_type type,
		  uint32_t pd_id, uint32_t *stag)
{
	struct sw_stag_entry *e;
	uint32_t index;
	int err = 0;

	ndk_write_lock(&t->lock);
	if (!t->free_head)
		err = grow(t);
	if (err)
		goto out;
	index = t->free_head;
	e = get_entry(t, index);
	t->free_head = e->next_free;
	if (!t->free_head)
		t->free_tail = 0;
	e->state = ENTRY_INVALID;
	e->type = (uint8_t)type;
	e->pd_id = pd_id;
	e->access = 0;
	e->pages = NULL;
	e->parent = NULL;
	t->used++;
	*stag = stag_of(t, index, e->keys[0]);
out:
	ndk_rw_unlock(&t->lock);
	return err;
}

/*
 * Waits until no access holds a pin on e. The entry is not VALID, so no
 * new pin can be taken. Pins are held for one copy, so this is short.
 */
static void drain(struct sw_stag_entry *e)
{
	unsigned int spins = 0;

	while (atomic_load_explicit(&e->users, memory_order_acquire)) {
		if (++spins < 64) {
			sched_yield();
		} else {
			struct timespec ts = { 0, 50 * 1000 };

			nanosleep(&ts, NULL);
		}
	}
}

bool sw_stag_revoke(struct sw_stag_table *t, uint32_t stag)
{
	struct sw_stag_entry *e;
	bool was_valid = false;

	ndk_write_lock(&t->lock);
	e = get_entry(t, index_of(t, stag));
	if (e && e->state == ENTRY_VALID) {
		e->state = ENTRY_INVALID;
		was_valid = true;
	}
	ndk_rw_unlock(&t->lock);
	/* Even if already INVALID: a racing invalidation may still drain. */
	if (e)
		drain(e);
	return was_valid;
}

void sw_stag_free(struct sw_stag_table *t, uint32_t stag)
{
	struct sw_stag_entry *e;
	uint32_t index = index_of(t, stag);

	sw_stag_revoke(t, stag);
	ndk_write_lock(&t->lock);
	e = get_entry(t, index);
	if (e && e->state != ENTRY_FREE) {
		e->state = ENTRY_FREE;
		e->pages = NULL;
		e->parent = NULL;
		t->used--;
		free_push(t, index);
	}
	ndk_rw_unlock(&t->lock);
}

bool sw_stag_is_valid(struct sw_stag_table *t, uint32_t stag)
{
	struct sw_stag_entry *e;
	bool valid;

	ndk_read_lock(&t->lock);
	e = get_entry(t, index_of(t, stag));
	valid = e && e->state == ENTRY_VALID && e->keys[0] == sw_stag_key(stag);
	ndk_rw_unlock(&t->lock);
	return valid;
}

int sw_stag_validate(struct sw_stag_table *t, uint32_t *stag,
		     const struct sw_stag_mem *m)
{
	uint32_t index = index_of(t, *stag);
	struct sw_stag_entry *e;
	int err = 0;

	ndk_read_lock(&t->lock);
	e = get_entry(t, index);
	ndk_rw_unlock(&t->lock);
	if (!e)
		return -ENOENT;
	/*
	 * Pins left by an invalidation that is still draining must be gone
	 * before the mapping fields they read are rewritten.
	 */
	drain(e);

	ndk_write_lock(&t->lock);
	if (e->state == ENTRY_FREE || e->type == SW_STAG_MW) {
		err = -ENOENT;
		goto out;
	}
	if (e->state == ENTRY_VALID) {
		err = -EBUSY;
		goto out;
	}
	err = new_key(t, e);
	if (err)
		goto out;
	e->gen++;
	e->base_va = m->base_va;
	e->length = m->length;
	e->access = m->access;
	e->host = m->host;
	e->pages = m->pages;
	e->npages = m->npages;
	e->fbo = m->fbo;
	e->state = ENTRY_VALID;
	*stag = stag_of(t, index, e->keys[0]);
out:
	ndk_rw_unlock(&t->lock);
	return err;
}

/*
 * [va, va + len) against [base, base + length): TO wrap first, then
 * bounds. A zero-length range may sit one past the end.
 */
static int check_range(uint64_t base, uint64_t length, uint64_t va,
		       uint64_t len)
{
	uint64_t off;

	if (len && va > UINT64_MAX - (len - 1))
		return -EOVERFLOW;
	if (va < base)
		return -ERANGE;
	off = va - base;
	if (off > length || len > length - off)
		return -ERANGE;
	return 0;
}

int sw_stag_bind(struct sw_stag_table *t, uint32_t *mw_stag, uint32_t mr_stag,
		 uint64_t va, uint64_t len, uint32_t access)
{
	struct sw_stag_entry *mw, *mr;
	int err = 0;

	if (access & ~SW_ACCESS_REMOTE)
		return -EINVAL;
	ndk_write_lock(&t->lock);
	mw = get_entry(t, index_of(t, *mw_stag));
	mr = get_entry(t, index_of(t, mr_stag));
	if (!mw || mw->state == ENTRY_FREE || mw->type != SW_STAG_MW) {
		err = -EINVAL;
		goto out;
	}
	if (!mr || mr->state != ENTRY_VALID || mr->type == SW_STAG_MW ||
	    mr->keys[0] != sw_stag_key(mr_stag)) {
		err = -ENOENT;
		goto out;
	}
	if (mr->pd_id != mw->pd_id) {
		err = -EPERM;
		goto out;
	}
	/* NdkBind: VirtualAddress lies in [MR base, MR base + length). */
	if (len && va > UINT64_MAX - (len - 1)) {
		err = -EOVERFLOW;
		goto out;
	}
	if (va < mr->base_va || va - mr->base_va >= mr->length ||
	    len > mr->length - (va - mr->base_va)) {
		err = -ERANGE;
		goto out;
	}
	/* A window may grant remote write only onto locally writable memory. */
	if ((access & SW_ACCESS_REMOTE_WRITE) &&
	    !(mr->access & SW_ACCESS_LOCAL_WRITE)) {
		err = -EACCES;
		goto out;
	}
	/*
	 * Rebinding needs no drain: an access still in flight through the
	 * old binding holds the MR's pin, and its memory stays registered.
	 */
	err = new_key(t, mw);
	if (err)
		goto out;
	mw->gen++;
	mw->base_va = va;
	mw->length = len;
	mw->access = access;
	mw->parent = mr;
	mw->parent_gen = mr->gen;
	mw->state = ENTRY_VALID;
	*mw_stag = sw_stag_make(sw_stag_index(*mw_stag), mw->keys[0]);
out:
	ndk_rw_unlock(&t->lock);
	return err;
}

int sw_stag_invalidate(struct sw_stag_table *t, uint32_t stag, uint32_t pd_id)
{
	struct sw_stag_entry *e;
	int err = 0;

	ndk_write_lock(&t->lock);
	e = get_entry(t, index_of(t, stag));
	if (!e || e->state != ENTRY_VALID || e->keys[0] != sw_stag_key(stag)) {
		err = -ENOENT;
	} else if (e->pd_id != pd_id) {
		err = -EPERM;
	} else if (e->type == SW_STAG_MR) {
		err = -EOPNOTSUPP;
	} else {
		e->state = ENTRY_INVALID;
	}
	ndk_rw_unlock(&t->lock);
	if (!err)
		drain(e);
	return err;
}

/* Host address of va, which lies in [m->base_va, m->base_va + length). */
static uintptr_t entry_host(const struct sw_stag_entry *m, uint64_t va)
{
	uint64_t off = va - m->base_va, pos;

	if (!m->pages)
		return m->host + off;
	pos = m->fbo + off;
	return m->pages[pos / PAGE_SIZE] + pos % PAGE_SIZE;
}

/* A copy made under the table's read lock instead of a pin: out of the
 * range into buf (read) or from buf into it. */
struct stag_copy {
	void *dst;
	const void *src;
	bool to_mem;
};

static NDK_HOT int lookup(struct sw_stag_table *t, uint32_t index,
			  uint32_t stag, uint32_t pd_id, uint64_t va,
			  uint64_t len, uint32_t access,
			  struct sw_stag_ref *ref, void **addr,
			  const struct stag_copy *cp)
{
	struct sw_stag_entry *e, *mem;
	uintptr_t host = 0;
	int err;

	ndk_read_lock(&t->lock);
	e = get_entry(t, index);
	if (!e || e->state != ENTRY_VALID || e->keys[0] != sw_stag_key(stag)) {
		err = -ENOENT;
		goto fail;
	}
	mem = e;
	if (e->type == SW_STAG_MW) {
		/* A window dies with the registration it was bound to. */
		mem = e->parent;
		if (!mem || mem->state != ENTRY_VALID ||
		    mem->gen != e->parent_gen) {
			err = -ENOENT;
			goto fail;
		}
	}
	if (e->pd_id != pd_id) {
		err = -EPERM;
		goto fail;
	}
	if (access & ~e->access) {
		err = -EACCES;
		goto fail;
	}
	err = check_range(e->base_va, e->length, va, len);
	if (err)
		goto fail;
	if (len)
		host = entry_host(mem, va);
	if (cp) {
		/* The lock keeps the range registered while the bytes move. */
		struct sw_stag_ref tmp = { .mem = mem,
					   .va = va,
					   .len = len,
					   .host = mem->pages ? 0 : host };

		err = cp->to_mem ? sw_stag_ref_write(&tmp, 0, cp->src, len)
				 : sw_stag_ref_read(&tmp, 0, cp->dst, len);
		ndk_rw_unlock(&t->lock);
		return err;
	}
	if (ref) {
		atomic_fetch_add_explicit(&mem->users, 1, memory_order_relaxed);
		if (mem != e)
			atomic_fetch_add_explicit(&e->users, 1,
						  memory_order_relaxed);
		ref->mem = mem;
		ref->win = mem != e ? e : NULL;
		ref->va = va;
		ref->len = len;
		ref->host = mem->pages ? 0 : host;
	}
	ndk_rw_unlock(&t->lock);
	if (addr)
		*addr = (void *)host;
	return 0;
fail:
	ndk_rw_unlock(&t->lock);
	return err;
}

NDK_HOT int sw_stag_lookup(struct sw_stag_table *t, uint32_t stag,
			   uint32_t pd_id, uint64_t va, uint64_t len,
			   uint32_t access, struct sw_stag_ref *ref,
			   void **addr)
{
	return lookup(t, index_of(t, stag), stag, pd_id, va, len, access, ref,
		      addr, NULL);
}

NDK_HOT void sw_stag_put(struct sw_stag_ref *ref)
{
	if (!ref)
		return;
	if (ref->win)
		atomic_fetch_sub_explicit(&ref->win->users, 1,
					  memory_order_release);
	if (ref->mem)
		atomic_fetch_sub_explicit(&ref->mem->users, 1,
					  memory_order_release);
	ref->mem = NULL;
	ref->win = NULL;
}

NDK_HOT void *sw_stag_ref_map(const struct sw_stag_ref *ref, uint64_t off,
			      uint64_t *contig)
{
	const struct sw_stag_entry *m = ref->mem;
	uint64_t remain, pos, pg, run;

	if (off >= ref->len) {
		*contig = 0;
		return NULL;
	}
	remain = ref->len - off;
	if (!m || !m->pages) {
		*contig = remain;
		return (void *)(ref->host + off);
	}
	/* Pinned: the page list cannot change under us. */
	pos = m->fbo + (ref->va - m->base_va) + off;
	pg = pos / PAGE_SIZE;
	run = PAGE_SIZE - pos % PAGE_SIZE;
	while (run < remain && pg + 1 < m->npages &&
	       m->pages[pg + 1] == m->pages[pg] + PAGE_SIZE) {
		run += PAGE_SIZE;
		pg++;
	}
	*contig = run < remain ? run : remain;
	return (void *)(m->pages[pos / PAGE_SIZE] + pos % PAGE_SIZE);
}

NDK_HOT void sw_stag_ref_copy_pages(const struct sw_stag_ref *ref, uint64_t off,
				    void *dst, const void *src, size_t n)
{
	uint64_t contig;
	void *p;

	while (n) {
		p = sw_stag_ref_map(ref, off, &contig);
		if (contig > n)
			contig = n;
		if (src) {
			ndk_copy(p, src, contig);
			src = (const char *)src + contig;
		} else {
			ndk_copy(dst, p, contig);
			dst = (char *)dst + contig;
		}
		off += contig;
		n -= contig;
	}
}

/* ------------------------------------------------------------------ */
/* Logical-address mappings                                           */

int sw_stag_lam_lookup(struct sw_stag_table *t, uint64_t la, uint64_t len,
		       void **addr)
{
	int i;

	if (!len) {
		if (addr)
			*addr = NULL;
		return 0;
	}
	if (la > UINT64_MAX - (len - 1))
		return -EOVERFLOW;
	if (!t->lams)
		return -EFAULT;
	ndk_read_lock(&t->lams->lock);
	i = ndk_lam_table_find(t->lams, la, len);
	ndk_rw_unlock(&t->lams->lock);
	if (i < 0)
		return -EFAULT;
	if (addr)
		*addr = (void *)(uintptr_t)la;
	return 0;
}

NDK_HOT int sw_stag_sge_lookup(struct sw_stag_table *t, uint32_t pd_id,
			       uint32_t token, uint64_t va, uint64_t len,
			       uint32_t access, struct sw_stag_ref *ref,
			       void **addr)
{
	int err;

	if (token != SW_PRIVILEGED_TOKEN)
		return lookup(t, local_index_of(t, token), token, pd_id, va,
			      len, access, ref, addr, NULL);
	/* The privileged token never grants remote access
	 * (NDK_FN_GET_PRIVILEGED_MEMORY_REGION_TOKEN). */
	if (access & SW_ACCESS_REMOTE)
		return -EACCES;
	err = sw_stag_lam_lookup(t, va, len, addr);
	if (err)
		return err;
	if (ref) {
		ref->mem = NULL;
		ref->win = NULL;
		ref->va = va;
		ref->len = len;
		ref->host = (uintptr_t)va;
	}
	return 0;
}

static NDK_HOT int sge_copy(struct sw_stag_table *t, uint32_t pd_id,
			    uint32_t token, uint64_t va,
			    const struct stag_copy *cp, size_t len)
{
	uint32_t access =
		cp->to_mem ? SW_ACCESS_LOCAL_WRITE : SW_ACCESS_LOCAL_READ;
	void *addr;
	int err;

	if (token != SW_PRIVILEGED_TOKEN)
		return lookup(t, local_index_of(t, token), token, pd_id, va,
			      len, access, NULL, &addr, cp);
	/* A logical address is host memory: checked, then copied. */
	err = sw_stag_lam_lookup(t, va, len, &addr);
	if (err || !len)
		return err;
	if (cp->to_mem)
		ndk_copy(addr, cp->src, len);
	else
		ndk_copy(cp->dst, addr, len);
	return 0;
}

NDK_HOT int sw_stag_read(struct sw_stag_table *t, uint32_t stag, uint32_t pd_id,
			 uint64_t va, void *dst, size_t len)
{
	const struct stag_copy cp = { .dst = dst };
	void *addr;

	return lookup(t, index_of(t, stag), stag, pd_id, va, len,
		      SW_ACCESS_REMOTE_READ, NULL, &addr, &cp);
}

NDK_HOT int sw_stag_write(struct sw_stag_table *t, uint32_t stag,
			  uint32_t pd_id, uint64_t va, const void *src,
			  size_t len)
{
	const struct stag_copy cp = { .src = src, .to_mem = true };
	void *addr;

	return lookup(t, index_of(t, stag), stag, pd_id, va, len,
		      SW_ACCESS_REMOTE_WRITE, NULL, &addr, &cp);
}

NDK_HOT int sw_stag_sge_read(struct sw_stag_table *t, uint32_t pd_id,
			     uint32_t token, uint64_t va, void *dst, size_t len)
{
	const struct stag_copy cp = { .dst = dst };

	return sge_copy(t, pd_id, token, va, &cp, len);
}

NDK_HOT int sw_stag_sge_write(struct sw_stag_table *t, uint32_t pd_id,
			      uint32_t token, uint64_t va, const void *src,
			      size_t len)
{
	const struct stag_copy cp = { .src = src, .to_mem = true };

	return sge_copy(t, pd_id, token, va, &cp, len);
}
