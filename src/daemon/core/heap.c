// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The live heap table (see heap.h). A block's key is a mix of its address
 * (48 bits, undone to read the address back); the key's top byte picks its
 * shard and the rest, scaled to the shard's capacity, its home slot. Robin
 * Hood: the blocks of a shard lie in the order of their homes, each at or
 * after its own, so a lookup stops as soon as it meets a block nearer its
 * home than it would be, an insertion moves the rest of its run one slot on
 * (where its lookup ended), and a deletion moves it one slot back (by
 * memmove). A block's home is one multiplication of its key.
 */
#include "daemon/core/heap.h"
#include "daemon/core/pages.h"

#include <stdlib.h>
#include <string.h>

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "heap slots are read little-endian");

#define SHARD_MIN_CAPACITY 16
/* Grow a shard past 9/10 full, by a quarter: 18 / 0.9 .. 18 / 0.72 bytes a block. */
#define LOAD_NUM 9
#define LOAD_DEN 10

#define KEY_BITS 40
#define M48	 ((1ull << 48) - 1)
#define M40	 ((1ull << KEY_BITS) - 1)

/*
 * Addresses are 16-byte aligned and clustered: every bit is mixed into every
 * other (the shape of MurmurHash3's 64-bit finalizer, on 48 bits). Each step
 * can be undone: a shift by half the width xored in undoes itself, and an odd
 * multiplier has an inverse modulo 2^48, so the key is the address.
 */
static inline uint64_t mix48(uint64_t x)
{
	x ^= x >> 24;
	x = x * 0xafd7ed558ccdull & M48;
	x ^= x >> 24;
	x = x * 0xb9fe1a85ec53ull & M48;
	x ^= x >> 24;
	return x;
}

static inline uint64_t unmix48(uint64_t x)
{
	x ^= x >> 24;
	x = x * 0xb2f8129337dbull & M48; /* 0xb9fe1a85ec53's inverse */
	x ^= x >> 24;
	x = x * 0x430c22a54005ull & M48; /* 0xafd7ed558ccd's inverse */
	x ^= x >> 24;
	return x;
}

static inline uint32_t home_of(uint64_t key, uint32_t cap)
{
	return (uint32_t)(((unsigned __int128)(key << (64 - KEY_BITS)) * cap) >> 64);
}

/* ---- slots ---------------------------------------------------------------- */

static inline uint64_t load64(const uint8_t *p)
{
	uint64_t x;

	memcpy(&x, p, sizeof(x));
	return x;
}

static inline uint32_t load32(const uint8_t *p)
{
	uint32_t x;

	memcpy(&x, p, sizeof(x));
	return x;
}

static inline uint64_t slot_key(const struct heap_slot *s)
{
	return load64(s->b) & M40;
}

/* Its stack + 1: 0 for an empty slot. */
static inline uint32_t slot_stack1(const struct heap_slot *s)
{
	return load32(s->b + 14);
}

static inline uint64_t slot_time_us(const struct heap_slot *s)
{
	return load64(s->b + 5) & M48;
}

static inline uint32_t slot_size(const struct heap_slot *s)
{
	return load32(s->b + 11) & HEAP_SLOT_MAX_SIZE;
}

static inline void slot_set_size(struct heap_slot *s, uint64_t size)
{
	memcpy(s->b + 11, &size, 3);
}

static inline uint32_t stack_tgid(const struct heap *h, uint32_t stack)
{
	return stack < h->stacks->count ? stack_get(h->stacks, stack)->tgid : UINT32_MAX;
}

/* How far slot pos (not empty) is from the home of its block. */
static inline uint32_t dist_at(const struct heap_shard *sh, uint32_t pos)
{
	uint32_t home = home_of(slot_key(&sh->slots[pos]), sh->cap);

	return pos >= home ? pos - home : pos + sh->cap - home;
}

/* Does slot pos hold a block away from its home (one that a deletion before it moves back)? */
static inline int displaced(const struct heap_shard *sh, uint32_t pos)
{
	const struct heap_slot *s = &sh->slots[pos];

	return slot_stack1(s) && home_of(slot_key(s), sh->cap) != pos;
}

static inline uint64_t time_us(uint64_t time_ns)
{
	uint64_t t = time_ns / 1000;

	return t > HEAP_MAX_SIZE ? HEAP_MAX_SIZE : t;
}

static void slot_get(const struct heap *h, const struct heap_shard *sh, const struct heap_slot *s,
		     struct heap_block *b)
{
	uint64_t shard = (uint64_t)(sh - h->shards);

	b->addr = unmix48(shard << KEY_BITS | slot_key(s));
	b->stack = slot_stack1(s) - 1;
	b->size = slot_size(s);
	b->time_ns = slot_time_us(s) * 1000;
	b->tgid = stack_tgid(h, b->stack);
}

/* The block's fields but its key. */
static void slot_fill(struct heap_slot *s, const struct heap_block *b)
{
	uint64_t t = time_us(b->time_ns);
	uint32_t stack1 = b->stack + 1;

	memcpy(s->b + 5, &t, 6);
	slot_set_size(s, b->size);
	memcpy(s->b + 14, &stack1, 4);
}

/* Can a shard's slot hold it? */
static inline int narrow(uint64_t addr, uint64_t size)
{
	return addr <= M48 && size <= HEAP_SLOT_MAX_SIZE;
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
		pages_free(h->shards[i].slots, (size_t)h->shards[i].cap * sizeof(struct heap_slot));
	if (h->wide.slots)
		pages_free(h->wide.slots, (h->wide.mask + 1) * sizeof(struct heap_wide_slot));
	memset(h, 0, sizeof(*h));
}

/* ---- shards --------------------------------------------------------------- */

/* The slot of (tgid, key) in sh, or -1 and where it would go (*at, *dist:
 * the first slot nearer its home than it would be, or empty). */
static int64_t shard_seek(const struct heap *h, const struct heap_shard *sh, uint32_t tgid,
			  uint64_t key, uint32_t *at, uint32_t *dist)
{
	uint32_t pos, d;

	if (!sh->count) {
		*at = sh->cap ? home_of(key, sh->cap) : 0;
		*dist = 0;
		return -1;
	}
	pos = home_of(key, sh->cap);
	for (d = 0;; d++) {
		const struct heap_slot *s = &sh->slots[pos];
		uint32_t stack1 = slot_stack1(s);

		if (slot_key(s) == key && stack1) {
			if (stack_tgid(h, stack1 - 1) == tgid)
				return pos;
		} else if (!stack1 || dist_at(sh, pos) < d) {
			/* empty, or a block nearer its home than this one
			 * would be: Robin Hood's order says it is not there */
			*at = pos;
			*dist = d;
			return -1;
		}
		if (++pos == sh->cap)
			pos = 0;
	}
}

static inline int64_t shard_find(const struct heap *h, const struct heap_shard *sh, uint32_t tgid,
				 uint64_t key)
{
	uint32_t at, d;

	return shard_seek(h, sh, tgid, key, &at, &d);
}

/* Place a block (its fields) at pos, where shard_seek() said it goes: the
 * blocks from there to the next empty slot move one slot on. */
static void shard_place_at(struct heap_shard *sh, const struct heap_slot *in, uint32_t pos)
{
	struct heap_slot *v = sh->slots;
	uint32_t cap = sh->cap, end;

	for (end = pos; slot_stack1(&v[end]);)
		if (++end == cap)
			end = 0;
	if (end < pos) {
		/* the run wraps around the end of the array */
		memmove(&v[1], &v[0], (size_t)end * sizeof(*v));
		v[0] = v[cap - 1];
		end = cap - 1;
	}
	memmove(&v[pos + 1], &v[pos], (size_t)(end - pos) * sizeof(*v));
	v[pos] = *in;
	sh->count++;
}

/* Place a block known not to be in sh, which has room. */
static void shard_place(struct heap_shard *sh, const struct heap_slot *in)
{
	uint32_t cap = sh->cap, pos = home_of(slot_key(in), cap), d = 0;

	/* past the blocks as far from their homes as it would be, or farther */
	while (slot_stack1(&sh->slots[pos]) && dist_at(sh, pos) >= d) {
		if (++pos == cap)
			pos = 0;
		d++;
	}
	shard_place_at(sh, in, pos);
}

/* Take the block at pos out: the run after it, up to an empty slot or a block
 * at its home, moves one slot back. */
static void shard_delete(struct heap_shard *sh, uint32_t pos)
{
	struct heap_slot *v = sh->slots;
	uint32_t cap = sh->cap, end = pos;

	/* the blocks after pos that move, as far as the array's end */
	while (end + 1 < cap && displaced(sh, end + 1))
		end++;
	if (end + 1 == cap && displaced(sh, 0)) {
		/* the run goes on at the array's start */
		memmove(&v[pos], &v[pos + 1], (size_t)(end - pos) * sizeof(*v));
		v[cap - 1] = v[0];
		for (pos = end = 0; end + 1 < cap && displaced(sh, end + 1);)
			end++;
	}
	memmove(&v[pos], &v[pos + 1], (size_t)(end - pos) * sizeof(*v));
	memset(&v[end], 0, sizeof(v[end]));
	sh->count--;
}

static int shard_grow(struct heap *h, struct heap_shard *sh)
{
	uint32_t cap =
	    sh->cap < SHARD_MIN_CAPACITY ? SHARD_MIN_CAPACITY : sh->cap + sh->cap / 4 + 1;
	struct heap_shard bigger = {.cap = cap};
	uint32_t start = 0;

	if (cap <= sh->cap)
		return -1; /* 2^32 slots in one shard: a trillion blocks */
	bigger.slots = pages_alloc((size_t)cap * sizeof(*bigger.slots));
	if (!bigger.slots)
		return -1;
	/* in the order of their homes, from an empty slot: each one goes at
	 * the end of what was placed before it */
	while (start < sh->cap && slot_stack1(&sh->slots[start]))
		start++;
	for (uint32_t k = 0; k < sh->cap; k++) {
		const struct heap_slot *s = &sh->slots[(start + k) % sh->cap];

		if (slot_stack1(s))
			shard_place(&bigger, s);
	}
	pages_free(sh->slots, (size_t)sh->cap * sizeof(*sh->slots));
	h->bytes += ((size_t)bigger.cap - sh->cap) * sizeof(struct heap_slot);
	*sh = bigger;
	return 0;
}

/* ---- wide ----------------------------------------------------------------- */

static inline size_t wide_home(const struct heap_wide *w, uint64_t addr)
{
	/* the 64-bit finalizer of MurmurHash3 */
	addr ^= addr >> 33;
	addr *= 0xff51afd7ed558ccdull;
	addr ^= addr >> 33;
	addr *= 0xc4ceb9fe1a85ec53ull;
	addr ^= addr >> 33;
	return (size_t)addr & w->mask;
}

static int64_t wide_find(const struct heap *h, uint32_t tgid, uint64_t addr)
{
	const struct heap_wide *w = &h->wide;

	if (!w->count)
		return -1;
	for (size_t i = wide_home(w, addr); w->slots[i].addr; i = (i + 1) & w->mask)
		if (w->slots[i].addr == addr && stack_tgid(h, w->slots[i].stack) == tgid)
			return (int64_t)i;
	return -1;
}

/* Room for one more block in wide: 0, or -1 out of memory. */
static int wide_reserve(struct heap *h)
{
	struct heap_wide *w = &h->wide, bigger;
	size_t cap = w->slots ? 2 * (w->mask + 1) : 16;

	if (w->slots && (w->count + 1) * 2 <= w->mask + 1)
		return 0;
	bigger.mask = cap - 1;
	bigger.count = w->count;
	bigger.slots = pages_alloc(cap * sizeof(*bigger.slots));
	if (!bigger.slots)
		return -1;
	for (size_t i = 0; w->slots && i <= w->mask; i++) {
		size_t j;

		if (!w->slots[i].addr)
			continue;
		for (j = wide_home(&bigger, w->slots[i].addr); bigger.slots[j].addr;
		     j = (j + 1) & bigger.mask)
			;
		bigger.slots[j] = w->slots[i];
	}
	if (w->slots) {
		pages_free(w->slots, (w->mask + 1) * sizeof(*w->slots));
		h->bytes -= (w->mask + 1) * sizeof(*w->slots);
	}
	h->bytes += cap * sizeof(*bigger.slots);
	*w = bigger;
	return 0;
}

/* Put a block known not to be there; wide_reserve() made room. */
static void wide_put(struct heap *h, const struct heap_block *b)
{
	struct heap_wide *w = &h->wide;
	size_t i;

	for (i = wide_home(w, b->addr); w->slots[i].addr; i = (i + 1) & w->mask)
		;
	w->slots[i] = (struct heap_wide_slot){
	    .addr = b->addr, .size = b->size, .time_us = time_us(b->time_ns), .stack = b->stack};
	w->count++;
}

static void wide_get(const struct heap *h, size_t i, struct heap_block *b)
{
	const struct heap_wide_slot *s = &h->wide.slots[i];

	b->addr = s->addr;
	b->size = s->size;
	b->time_ns = s->time_us * 1000;
	b->stack = s->stack;
	b->tgid = stack_tgid(h, s->stack);
}

/* Linear probing's deletion: each later block of the run that may move back
 * to the hole (its home is not between the hole and it) fills it. */
static void wide_delete(struct heap *h, size_t i)
{
	struct heap_wide *w = &h->wide;

	for (size_t j = (i + 1) & w->mask; w->slots[j].addr; j = (j + 1) & w->mask) {
		size_t home = wide_home(w, w->slots[j].addr);

		if (((j - home) & w->mask) >= ((j - i) & w->mask)) {
			w->slots[i] = w->slots[j];
			i = j;
		}
	}
	memset(&w->slots[i], 0, sizeof(w->slots[i]));
	w->count--;
}

/* ---- the heap ------------------------------------------------------------- */

int heap_insert(struct heap *h, const struct heap_block *b, struct heap_block *old)
{
	uint64_t k = mix48(b->addr & M48);
	struct heap_shard *sh = &h->shards[k >> KEY_BITS];
	int replaced = 0;
	uint32_t at = 0, d;
	int64_t pos;

	if (b->size > HEAP_MAX_SIZE || !b->addr)
		return HEAP_FULL;
	if (narrow(b->addr, b->size)) {
		pos = shard_seek(h, sh, b->tgid, k & M40, &at, &d);
		if (pos >= 0) {
			if (old)
				slot_get(h, sh, &sh->slots[pos], old);
			slot_fill(&sh->slots[pos], b);
			return HEAP_REPLACED;
		}
	} else {
		/* room first: nothing changes when there is none */
		if (wide_reserve(h))
			return HEAP_FULL;
		pos = b->addr <= M48 ? shard_find(h, sh, b->tgid, k & M40) : -1;
		if (pos >= 0) {
			/* the address's block was held in a slot: it moves to wide */
			if (old)
				slot_get(h, sh, &sh->slots[pos], old);
			shard_delete(sh, (uint32_t)pos);
			wide_put(h, b);
			return HEAP_REPLACED;
		}
	}
	pos = wide_find(h, b->tgid, b->addr);
	if (pos >= 0) {
		struct heap_wide_slot *s = &h->wide.slots[pos];

		if (old)
			wide_get(h, (size_t)pos, old);
		s->size = b->size;
		s->time_us = time_us(b->time_ns);
		s->stack = b->stack;
		replaced = 1;
	}
	if (replaced)
		return HEAP_REPLACED;
	if (h->max_count && h->count >= h->max_count)
		return HEAP_FULL;
	if (narrow(b->addr, b->size)) {
		struct heap_slot in;

		memcpy(in.b, &k, 5);
		slot_fill(&in, b);
		if ((uint64_t)(sh->count + 1) * LOAD_DEN <= (uint64_t)sh->cap * LOAD_NUM)
			shard_place_at(sh, &in, at); /* where the lookup ended */
		else if (!shard_grow(h, sh))
			shard_place(sh, &in);
		else
			return HEAP_FULL;
	} else {
		wide_put(h, b);
	}
	h->count++;
	return HEAP_INSERTED;
}

int heap_get(const struct heap *h, uint32_t tgid, uint64_t addr, struct heap_block *out)
{
	uint64_t k = mix48(addr & M48);
	const struct heap_shard *sh = &h->shards[k >> KEY_BITS];
	int64_t pos;

	if (!addr)
		return 0;
	if (addr <= M48 && (pos = shard_find(h, sh, tgid, k & M40)) >= 0) {
		if (out)
			slot_get(h, sh, &sh->slots[pos], out);
		return 1;
	}
	if ((pos = wide_find(h, tgid, addr)) >= 0) {
		if (out)
			wide_get(h, (size_t)pos, out);
		return 1;
	}
	return 0;
}

int heap_set_size(struct heap *h, uint32_t tgid, uint64_t addr, uint64_t size)
{
	uint64_t k = mix48(addr & M48);
	struct heap_shard *sh = &h->shards[k >> KEY_BITS];
	struct heap_block b;
	int64_t pos;

	if (!addr || size > HEAP_MAX_SIZE)
		return 0;
	if (addr <= M48 && (pos = shard_find(h, sh, tgid, k & M40)) >= 0) {
		if (size <= HEAP_SLOT_MAX_SIZE) {
			slot_set_size(&sh->slots[pos], size);
			return 1;
		}
		/* too large for its slot now: it moves to wide */
		if (wide_reserve(h))
			return 0;
		slot_get(h, sh, &sh->slots[pos], &b);
		shard_delete(sh, (uint32_t)pos);
		b.size = size;
		wide_put(h, &b);
		return 1;
	}
	if ((pos = wide_find(h, tgid, addr)) >= 0) {
		h->wide.slots[pos].size = size;
		return 1;
	}
	return 0;
}

int heap_remove(struct heap *h, uint32_t tgid, uint64_t addr, struct heap_block *out)
{
	uint64_t k = mix48(addr & M48);
	struct heap_shard *sh = &h->shards[k >> KEY_BITS];
	int64_t pos;

	if (!addr)
		return 0;
	if (addr <= M48 && (pos = shard_find(h, sh, tgid, k & M40)) >= 0) {
		if (out)
			slot_get(h, sh, &sh->slots[pos], out);
		shard_delete(sh, (uint32_t)pos);
	} else if ((pos = wide_find(h, tgid, addr)) >= 0) {
		if (out)
			wide_get(h, (size_t)pos, out);
		wide_delete(h, (size_t)pos);
	} else {
		return 0;
	}
	h->count--;
	return 1;
}

int heap_next(const struct heap *h, uint64_t *pos, struct heap_block *out)
{
	for (;;) {
		unsigned shard = (unsigned)(*pos >> 32);
		uint32_t i = (uint32_t)*pos;
		const struct heap_shard *sh;

		if (shard == HEAP_SHARDS) {
			/* then wide */
			for (; h->wide.slots && i <= h->wide.mask; i++) {
				if (h->wide.slots[i].addr) {
					wide_get(h, i, out);
					*pos = (uint64_t)shard << 32 | (i + 1);
					return 1;
				}
			}
			*pos = (uint64_t)(shard + 1) << 32;
		}
		if (shard >= HEAP_SHARDS)
			return 0;
		sh = &h->shards[shard];
		for (; i < sh->cap; i++) {
			if (slot_stack1(&sh->slots[i])) {
				slot_get(h, sh, &sh->slots[i], out);
				*pos = (uint64_t)shard << 32 | (i + 1);
				return 1;
			}
		}
		*pos = (uint64_t)(shard + 1) << 32;
	}
}

int64_t heap_slot_distance(const struct heap *h, unsigned k, uint32_t i)
{
	const struct heap_shard *sh = &h->shards[k];

	return i < sh->cap && slot_stack1(&sh->slots[i]) ? (int64_t)dist_at(sh, i) : -1;
}

int heap_valid(const struct heap *h)
{
	size_t total = 0;

	for (unsigned k = 0; k < HEAP_SHARDS; k++) {
		const struct heap_shard *sh = &h->shards[k];
		uint32_t n = 0;

		for (uint32_t i = 0; i < sh->cap; i++) {
			uint32_t next = i + 1 == sh->cap ? 0 : i + 1, dn;
			uint32_t stack1 = slot_stack1(&sh->slots[i]);

			if (stack1) {
				n++;
				if (stack1 - 1 >= h->stacks->count)
					return 0;
			}
			if (!slot_stack1(&sh->slots[next]))
				continue;
			/* no gap before a block's slot, and Robin Hood's order: a
			 * block is at most one slot further from home than the one
			 * before it */
			dn = dist_at(sh, next);
			if (!stack1 ? dn != 0 : dn > dist_at(sh, i) + 1)
				return 0;
		}
		if (n != sh->count)
			return 0;
		total += n;
	}
	for (size_t i = 0; h->wide.slots && i <= h->wide.mask; i++) {
		const struct heap_wide_slot *s = &h->wide.slots[i];
		uint64_t k;

		if (!s->addr)
			continue;
		total++;
		/* not also in a shard */
		k = mix48(s->addr & M48);
		if (s->addr <= M48 &&
		    shard_find(h, &h->shards[k >> KEY_BITS], stack_tgid(h, s->stack), k & M40) >= 0)
			return 0;
	}
	return total == h->count;
}
