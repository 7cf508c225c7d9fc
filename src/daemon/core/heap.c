// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The live heap table (see heap.h). A block's hash picks its shard (top
 * byte) and its home slot in the shard (the rest, scaled to the shard's
 * capacity). Robin Hood: a block being placed takes the slot of one that is
 * nearer its own home, so probe runs stay short at 9/10 load, a lookup stops
 * as soon as it meets a block nearer home than it would be, and deletion
 * shifts the run back by one.
 */
#include "daemon/core/heap.h"

#include <stdlib.h>
#include <string.h>

#define SHARD_MIN_CAPACITY 16
/* Grow a shard past 9/10 full, by a quarter: 24 / 0.9 .. 24 / 0.72 bytes a block. */
#define LOAD_NUM 9
#define LOAD_DEN 10

static inline uint64_t addr_hash(uint64_t addr)
{
	/* addresses are 16-byte aligned and clustered: mix all bits
	 * (the 64-bit finalizer of MurmurHash3) */
	uint64_t x = addr;

	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	x ^= x >> 33;
	return x;
}

static inline unsigned shard_of(uint64_t hash)
{
	return (unsigned)(hash >> 56);
}

static inline uint32_t home_of(uint64_t hash, uint32_t cap)
{
	return (uint32_t)(((unsigned __int128)(hash << 8) * cap) >> 64);
}

static inline uint32_t slot_tgid(const struct heap *h, const struct heap_slot *s)
{
	return s->stack < h->stacks->count ? stack_get(h->stacks, s->stack)->tgid : UINT32_MAX;
}

/* How far slot pos is from the home of its block. */
static inline uint32_t distance(const struct heap_shard *sh, uint32_t pos, uint64_t addr)
{
	uint32_t home = home_of(addr_hash(addr), sh->cap);

	return pos >= home ? pos - home : pos + sh->cap - home;
}

static void slot_set(struct heap_slot *s, const struct heap_block *b)
{
	uint64_t t = b->time_ns / 1000;

	if (t > HEAP_MAX_SIZE)
		t = HEAP_MAX_SIZE;
	s->addr = b->addr;
	s->stack = b->stack;
	s->size_lo = (uint32_t)b->size;
	s->size_hi = (uint16_t)(b->size >> 32);
	s->time_lo = (uint32_t)t;
	s->time_hi = (uint16_t)(t >> 32);
}

static void slot_get(const struct heap *h, const struct heap_slot *s, struct heap_block *b)
{
	b->addr = s->addr;
	b->stack = s->stack;
	b->size = (uint64_t)s->size_hi << 32 | s->size_lo;
	b->time_ns = ((uint64_t)s->time_hi << 32 | s->time_lo) * 1000;
	b->tgid = slot_tgid(h, s);
}

int heap_init(struct heap *h, size_t max_count, const struct stack_table *stacks)
{
	memset(h, 0, sizeof(*h));
	h->max_count = max_count;
	h->stacks = stacks;
	return 0;
}

void heap_destroy(struct heap *h)
{
	for (unsigned i = 0; i < HEAP_SHARDS; i++)
		free(h->shards[i].slots);
	memset(h, 0, sizeof(*h));
}

/* The slot of (tgid, addr) in sh, or -1. */
static int64_t shard_find(const struct heap *h, const struct heap_shard *sh, uint32_t tgid,
			  uint64_t addr, uint64_t hash)
{
	uint32_t pos, dist = 0;

	if (!sh->cap)
		return -1;
	for (pos = home_of(hash, sh->cap);; dist++) {
		const struct heap_slot *s = &sh->slots[pos];

		if (!s->addr || distance(sh, pos, s->addr) < dist)
			return -1;
		if (s->addr == addr && slot_tgid(h, s) == tgid)
			return pos;
		if (++pos == sh->cap)
			pos = 0;
	}
}

/* Place a block known not to be in sh, which has room. */
static void shard_place(struct heap_shard *sh, struct heap_slot in)
{
	uint32_t pos = home_of(addr_hash(in.addr), sh->cap), dist = 0;

	for (;;) {
		struct heap_slot *s = &sh->slots[pos];
		uint32_t d;

		if (!s->addr) {
			*s = in;
			sh->count++;
			return;
		}
		d = distance(sh, pos, s->addr);
		if (d < dist) {
			struct heap_slot tmp = *s;

			*s = in;
			in = tmp;
			dist = d;
		}
		if (++pos == sh->cap)
			pos = 0;
		dist++;
	}
}

static int shard_grow(struct heap *h, struct heap_shard *sh)
{
	uint32_t cap =
	    sh->cap < SHARD_MIN_CAPACITY ? SHARD_MIN_CAPACITY : sh->cap + sh->cap / 4 + 1;
	struct heap_shard bigger = {.cap = cap};

	if (cap <= sh->cap)
		return -1; /* 2^32 slots in one shard: a trillion blocks */
	bigger.slots = calloc(cap, sizeof(*bigger.slots));
	if (!bigger.slots)
		return -1;
	for (uint32_t i = 0; i < sh->cap; i++)
		if (sh->slots[i].addr)
			shard_place(&bigger, sh->slots[i]);
	free(sh->slots);
	h->bytes += ((size_t)bigger.cap - sh->cap) * sizeof(struct heap_slot);
	*sh = bigger;
	return 0;
}

int heap_insert(struct heap *h, const struct heap_block *b, struct heap_block *old)
{
	uint64_t hash = addr_hash(b->addr);
	struct heap_shard *sh = &h->shards[shard_of(hash)];
	struct heap_slot in;
	int64_t pos;

	if (b->size > HEAP_MAX_SIZE)
		return HEAP_FULL;
	slot_set(&in, b);
	pos = shard_find(h, sh, b->tgid, b->addr, hash);
	if (pos >= 0) {
		if (old)
			slot_get(h, &sh->slots[pos], old);
		sh->slots[pos] = in;
		return HEAP_REPLACED;
	}
	if (h->max_count && h->count >= h->max_count)
		return HEAP_FULL;
	if ((uint64_t)(sh->count + 1) * LOAD_DEN > (uint64_t)sh->cap * LOAD_NUM &&
	    shard_grow(h, sh))
		return HEAP_FULL;
	shard_place(sh, in);
	h->count++;
	return HEAP_INSERTED;
}

int heap_get(const struct heap *h, uint32_t tgid, uint64_t addr, struct heap_block *out)
{
	uint64_t hash = addr_hash(addr);
	const struct heap_shard *sh = &h->shards[shard_of(hash)];
	int64_t pos;

	if (!addr)
		return 0;
	pos = shard_find(h, sh, tgid, addr, hash);
	if (pos < 0)
		return 0;
	if (out)
		slot_get(h, &sh->slots[pos], out);
	return 1;
}

int heap_set_size(struct heap *h, uint32_t tgid, uint64_t addr, uint64_t size)
{
	uint64_t hash = addr_hash(addr);
	struct heap_shard *sh = &h->shards[shard_of(hash)];
	int64_t pos;

	if (!addr || size > HEAP_MAX_SIZE)
		return 0;
	pos = shard_find(h, sh, tgid, addr, hash);
	if (pos < 0)
		return 0;
	sh->slots[pos].size_lo = (uint32_t)size;
	sh->slots[pos].size_hi = (uint16_t)(size >> 32);
	return 1;
}

int heap_remove(struct heap *h, uint32_t tgid, uint64_t addr, struct heap_block *out)
{
	uint64_t hash = addr_hash(addr);
	struct heap_shard *sh = &h->shards[shard_of(hash)];
	int64_t found;
	uint32_t pos, next;

	if (!addr)
		return 0;
	found = shard_find(h, sh, tgid, addr, hash);
	if (found < 0)
		return 0;
	pos = (uint32_t)found;
	if (out)
		slot_get(h, &sh->slots[pos], out);
	/* backward shift: the run after the hole moves back one, up to an
	 * empty slot or a block at its home */
	for (;;) {
		next = pos + 1 == sh->cap ? 0 : pos + 1;
		if (!sh->slots[next].addr || !distance(sh, next, sh->slots[next].addr))
			break;
		sh->slots[pos] = sh->slots[next];
		pos = next;
	}
	memset(&sh->slots[pos], 0, sizeof(sh->slots[pos]));
	sh->count--;
	h->count--;
	return 1;
}

int heap_next(const struct heap *h, uint64_t *pos, struct heap_block *out)
{
	for (;;) {
		unsigned shard = (unsigned)(*pos >> 32);
		uint32_t i = (uint32_t)*pos;
		const struct heap_shard *sh;

		if (shard >= HEAP_SHARDS)
			return 0;
		sh = &h->shards[shard];
		for (; i < sh->cap; i++) {
			if (sh->slots[i].addr) {
				slot_get(h, &sh->slots[i], out);
				*pos = (uint64_t)shard << 32 | (i + 1);
				return 1;
			}
		}
		*pos = (uint64_t)(shard + 1) << 32;
	}
}

int heap_valid(const struct heap *h)
{
	size_t total = 0;

	for (unsigned k = 0; k < HEAP_SHARDS; k++) {
		const struct heap_shard *sh = &h->shards[k];
		uint32_t n = 0;

		for (uint32_t i = 0; i < sh->cap; i++) {
			uint32_t next = i + 1 == sh->cap ? 0 : i + 1, dn;

			if (sh->slots[i].addr) {
				n++;
				if (shard_of(addr_hash(sh->slots[i].addr)) != k)
					return 0;
			}
			if (!sh->slots[next].addr)
				continue;
			/* no gap before a block's slot, and Robin Hood's order: a
			 * block is at most one slot further from home than the one
			 * before it */
			dn = distance(sh, next, sh->slots[next].addr);
			if (!sh->slots[i].addr ? dn != 0
					       : dn > distance(sh, i, sh->slots[i].addr) + 1)
				return 0;
		}
		if (n != sh->count)
			return 0;
		total += n;
	}
	return total == h->count;
}
