// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Recent allocations per thread (see recent.h). Entries live in a pool
 * (indices, so it may grow) with a free list; each thread links its own,
 * oldest first; an open-addressing index finds them by (generation, address),
 * with backward-shift deletion. An entry knows its home and its slot in the
 * index (kept as the deletions move it), so that evicting it and moving it
 * hash nothing again; the thread of the last call is tried first (events
 * come in runs from one thread).
 */
#include "daemon/core/recent.h"

#include <stdlib.h>
#include <string.h>

struct recent_entry {
	uint64_t addr; /* 0: free */
	uint32_t gen;
	uint32_t tid;
	uint32_t seq;	     /* its count in its thread */
	uint32_t prev, next; /* its thread's FIFO, oldest first (pool index + 1, 0: none) */
	uint32_t hash;	     /* of its key: its home in the index is hash & index_mask */
	uint32_t slot;	     /* where it is in the index */
};

struct recent_thread {
	uint32_t tid;
	uint32_t seq;	     /* allocations counted (modulo 2^32) */
	uint32_t head, tail; /* its entries (pool index + 1, 0: none) */
};

#define THREADS_MIN 64
#define INDEX_MIN   64

void recent_init(struct recent *r, uint32_t threshold)
{
	memset(r, 0, sizeof(*r));
	r->threshold = threshold;
}

void recent_destroy(struct recent *r)
{
	free(r->pool);
	free(r->index);
	free(r->threads);
	memset(r, 0, sizeof(*r));
}

/* ---- threads ------------------------------------------------------------- */

static size_t thread_slot(const struct recent_thread *v, size_t mask, uint32_t tid)
{
	size_t i = (tid * 0x9e3779b97f4a7c15ull) >> 20 & mask;

	while (v[i].tid && v[i].tid != tid)
		i = (i + 1) & mask;
	return i;
}

static struct recent_thread *thread_find(const struct recent *r, uint32_t tid)
{
	size_t i;

	if (!tid || !r->threads)
		return NULL;
	if (r->threads[r->last_thread].tid == tid)
		return &r->threads[r->last_thread];
	i = thread_slot(r->threads, r->threads_mask, tid);
	return r->threads[i].tid ? &r->threads[i] : NULL;
}

/* The thread's record, added if new; NULL when memory runs out (it is then not counted). */
static struct recent_thread *thread_get(struct recent *r, uint32_t tid)
{
	size_t i;

	if (tid && r->threads && r->threads[r->last_thread].tid == tid)
		return &r->threads[r->last_thread];
	if (!r->threads || (r->nthreads + 1) * 4 > (r->threads_mask + 1) * 3) {
		size_t cap = r->threads ? 2 * (r->threads_mask + 1) : THREADS_MIN;
		struct recent_thread *v = calloc(cap, sizeof(*v));

		if (!v)
			return NULL;
		for (size_t k = 0; r->threads && k <= r->threads_mask; k++)
			if (r->threads[k].tid)
				v[thread_slot(v, cap - 1, r->threads[k].tid)] = r->threads[k];
		free(r->threads);
		r->threads = v;
		r->threads_mask = cap - 1;
	}
	i = thread_slot(r->threads, r->threads_mask, tid);
	if (!r->threads[i].tid) {
		memset(&r->threads[i], 0, sizeof(r->threads[i]));
		r->threads[i].tid = tid;
		r->nthreads++;
	}
	r->last_thread = i;
	return &r->threads[i];
}

/* ---- the index ----------------------------------------------------------- */

static uint32_t key_hash(uint32_t gen, uint64_t addr)
{
	uint64_t x = addr ^ (uint64_t)gen << 47 ^ gen;

	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return (uint32_t)x;
}

/* The index slot of (generation, addr) of hash h: its entry's, or the empty one it would take. */
static size_t index_slot(const struct recent *r, uint32_t h, uint32_t gen, uint64_t addr)
{
	size_t i = h & r->index_mask;

	for (;;) {
		uint32_t e = r->index[i];

		if (!e || (r->pool[e - 1].addr == addr && r->pool[e - 1].gen == gen))
			return i;
		i = (i + 1) & r->index_mask;
	}
}

static void index_remove(struct recent *r, size_t hole)
{
	size_t i = hole;

	for (;;) {
		struct recent_entry *e;
		size_t home;

		i = (i + 1) & r->index_mask;
		if (!r->index[i])
			break;
		e = &r->pool[r->index[i] - 1];
		home = e->hash & r->index_mask;
		if (((i - home) & r->index_mask) >= ((i - hole) & r->index_mask)) {
			r->index[hole] = r->index[i];
			e->slot = (uint32_t)hole;
			hole = i;
		}
	}
	r->index[hole] = 0;
}

static int index_reserve(struct recent *r)
{
	size_t cap;
	uint32_t *v;

	if (r->index && (r->count + 1) * 2 <= r->index_mask + 1)
		return 0;
	cap = r->index ? 2 * (r->index_mask + 1) : INDEX_MIN;
	if (cap > UINT32_MAX)
		return -1;
	v = calloc(cap, sizeof(*v));
	if (!v)
		return -1;
	free(r->index);
	r->index = v;
	r->index_mask = cap - 1;
	for (uint32_t k = 0; k < r->npool; k++) {
		struct recent_entry *e = &r->pool[k];

		if (e->addr) {
			e->slot = (uint32_t)index_slot(r, e->hash, e->gen, e->addr);
			r->index[e->slot] = k + 1;
		}
	}
	return 0;
}

/* ---- entries ------------------------------------------------------------- */

/* Unlink entry k (pool index + 1) from its thread and the index, and free it. */
static void entry_drop(struct recent *r, uint32_t k)
{
	struct recent_entry *e = &r->pool[k - 1];
	struct recent_thread *t = thread_find(r, e->tid);

	if (t) {
		if (e->prev)
			r->pool[e->prev - 1].next = e->next;
		else
			t->head = e->next;
		if (e->next)
			r->pool[e->next - 1].prev = e->prev;
		else
			t->tail = e->prev;
	}
	index_remove(r, e->slot);
	r->count--;
	e->addr = 0;
	e->next = r->free_list;
	r->free_list = k;
}

/* Find (generation, addr) of hash h: its entry (pool index + 1) or 0. */
static uint32_t entry_find(const struct recent *r, uint32_t h, uint32_t gen, uint64_t addr)
{
	if (!r->count)
		return 0;
	return r->index[index_slot(r, h, gen, addr)];
}

/* A new entry of hash h linked after 'after' (0: at the head) of thread t; 0 without memory. */
static uint32_t entry_new(struct recent *r, struct recent_thread *t, uint32_t after, uint32_t h,
			  uint32_t gen, uint64_t addr, uint32_t seq)
{
	struct recent_entry *e;
	uint32_t k;

	if (index_reserve(r))
		return 0;
	if (r->free_list) {
		k = r->free_list;
		r->free_list = r->pool[k - 1].next;
	} else {
		if (r->npool == r->pool_cap) {
			uint32_t cap = r->pool_cap ? 2 * r->pool_cap : 64;
			struct recent_entry *v = realloc(r->pool, cap * sizeof(*v));

			if (!v)
				return 0;
			r->pool = v;
			r->pool_cap = cap;
		}
		k = ++r->npool;
	}
	e = &r->pool[k - 1];
	e->addr = addr;
	e->gen = gen;
	e->tid = t->tid;
	e->seq = seq;
	e->hash = h;
	e->prev = after;
	e->next = after ? r->pool[after - 1].next : t->head;
	if (e->next)
		r->pool[e->next - 1].prev = k;
	else
		t->tail = k;
	if (after)
		r->pool[after - 1].next = k;
	else
		t->head = k;
	e->slot = (uint32_t)index_slot(r, h, gen, addr);
	r->index[e->slot] = k;
	r->count++;
	return k;
}

/* Forget thread t's entries N or more allocations old. */
static void evict(struct recent *r, struct recent_thread *t)
{
	while (t->head && t->seq - r->pool[t->head - 1].seq >= r->threshold)
		entry_drop(r, t->head);
}

/* Thread t's oldest entry k is the only one to evict: it becomes the entry of
 * its new block (h, generation, addr), the newest. */
static void entry_reuse(struct recent *r, struct recent_thread *t, uint32_t k, uint32_t h,
			uint32_t gen, uint64_t addr)
{
	struct recent_entry *e = &r->pool[k - 1];

	index_remove(r, e->slot);
	if (e->next) {
		/* from the head of its thread's FIFO to its tail */
		t->head = e->next;
		r->pool[e->next - 1].prev = 0;
		r->pool[t->tail - 1].next = k;
		e->prev = t->tail;
		e->next = 0;
		t->tail = k;
	}
	e->addr = addr;
	e->gen = gen;
	e->seq = t->seq;
	e->hash = h;
	e->slot = (uint32_t)index_slot(r, h, gen, addr);
	r->index[e->slot] = k;
}

void recent_alloc(struct recent *r, uint32_t tid, uint32_t gen, uint64_t addr, int held)
{
	const struct recent_entry *e;
	struct recent_thread *t;
	uint32_t old, h;

	if (!r->threshold)
		return;
	h = key_hash(gen, addr);
	/* a block still known at this address: its free was missed */
	if ((old = entry_find(r, h, gen, addr)))
		entry_drop(r, old);
	if (!tid || !(t = thread_get(r, tid)))
		return;
	t->seq++;
	/* the usual case: one entry, the oldest, goes as this one comes */
	e = t->head ? &r->pool[t->head - 1] : NULL;
	if (e && held && addr && t->seq - e->seq >= r->threshold &&
	    (!e->next || t->seq - r->pool[e->next - 1].seq < r->threshold)) {
		entry_reuse(r, t, t->head, h, gen, addr);
		return;
	}
	evict(r, t);
	if (held && addr)
		entry_new(r, t, t->tail, h, gen, addr, t->seq);
}

int recent_release(struct recent *r, uint32_t gen, uint64_t addr, uint32_t tid)
{
	uint32_t k = entry_find(r, key_hash(gen, addr), gen, addr);
	int temporary;

	if (!k)
		return 0;
	temporary = tid && r->pool[k - 1].tid == tid;
	entry_drop(r, k);
	return temporary;
}

void recent_take(struct recent *r, uint32_t gen, uint64_t addr, struct recent_mark *m)
{
	uint32_t k = entry_find(r, key_hash(gen, addr), gen, addr);

	memset(m, 0, sizeof(*m));
	if (!k)
		return;
	m->valid = 1;
	m->tid = r->pool[k - 1].tid;
	m->seq = r->pool[k - 1].seq;
	entry_drop(r, k);
}

int recent_judge(const struct recent *r, const struct recent_mark *m, uint32_t tid)
{
	const struct recent_thread *t;

	if (!m->valid || !tid || m->tid != tid || !(t = thread_find(r, tid)))
		return 0;
	return t->seq - m->seq < r->threshold;
}

void recent_restore(struct recent *r, uint32_t gen, uint64_t addr, const struct recent_mark *m)
{
	struct recent_thread *t;
	uint32_t after, old, h = key_hash(gen, addr);

	if (!m->valid || !(t = thread_get(r, m->tid)) || t->seq - m->seq >= r->threshold)
		return;
	if ((old = entry_find(r, h, gen, addr)))
		entry_drop(r, old);
	/* back in its place in the FIFO, by count */
	for (after = t->tail; after && t->seq - r->pool[after - 1].seq < t->seq - m->seq;)
		after = r->pool[after - 1].prev;
	entry_new(r, t, after, h, gen, addr, m->seq);
}
